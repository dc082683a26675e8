/*
 * notify.h — gpuctld's notifications (docs/policy.md): each event (a job
 * started or ended, a GPU quarantined or freed, a policy violation) is
 * POSTed as JSON to a webhook (libcurl, with a timeout and one retry;
 * --webhook-format slack posts {"text": ...}) and/or given to a command on
 * its stdin. notify_event only queues it: a worker thread delivers, so a
 * receiver that is down or hangs never holds up the sampler or the queue;
 * when the queue is full the oldest event is dropped (and counted).
 */
#ifndef GPUCTL_DAEMON_NOTIFY_H
#define GPUCTL_DAEMON_NOTIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

struct notify_opts {
	const char *webhook;        /* borrowed: the URL, or NULL */
	bool slack;                 /* --webhook-format slack */
	long long timeout_ms;       /* per attempt, and for the command */
	const char *command;        /* borrowed: run with the event on stdin, or NULL */
	const char *hostname;       /* borrowed */
};

/* --webhook-format's value: json or slack. 0, or -1 with a message in err. */
int notify_parse_format(const char *arg, bool *slack, char *err, size_t errlen);
/* --webhook's value: an http:// or https:// URL. 0, or -1 with a message in err. */
int notify_check_url(const char *arg, char *err, size_t errlen);

struct notify;

/*
 * Start the worker (none when there is neither a webhook nor a command: then
 * every call below is a no-op). 0, or -1 with a message in err.
 */
int notify_start(struct notify **out, const struct notify_opts *o, char *err, size_t errlen);
void notify_stop(struct notify *n);

/*
 * Queue an event: `event` its name ("job.ended"), `text` one line for people
 * (Slack's text), `fields` its members (stolen; NULL for none). Never blocks
 * on delivery; n NULL is fine.
 */
void notify_event(struct notify *n, const char *event, const char *text, json_t *fields);

struct notify_stats {
	uint64_t sent, failed, dropped;
};
void notify_stats(struct notify *n, struct notify_stats *out);
#endif
