/*
 * notify.c — gpuctld's notifications (notify.h): a bounded queue of events
 * and one worker thread that delivers them, in order.
 */
#include "notify.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/clock.h"

#define QUEUE_MAX 1024   /* events waiting; past that the oldest goes */
#define RETRY_MS 1000    /* a failed POST is tried once more this much later */

extern char **environ;

struct item {
	char *body;      /* the JSON document */
	char *text;      /* Slack's text */
	char event[40];
};

struct notify {
	struct notify_opts o;
	char *webhook, *command, *hostname;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct item q[QUEUE_MAX];
	size_t head, count;
	bool stop;
	pthread_t thread;
	struct notify_stats st;
};

int notify_parse_format(const char *arg, bool *slack, char *err, size_t errlen)
{
	if (strcmp(arg, "json") == 0)
		*slack = false;
	else if (strcmp(arg, "slack") == 0)
		*slack = true;
	else {
		snprintf(err, errlen, "invalid --webhook-format '%s' (expected json or slack)", arg);
		return -1;
	}
	return 0;
}

int notify_check_url(const char *arg, char *err, size_t errlen)
{
	bool ok = (strncmp(arg, "http://", 7) == 0 && arg[7]) || (strncmp(arg, "https://", 8) == 0 && arg[8]);
	for (const char *p = arg; ok && *p; p++)
		ok = (unsigned char)*p > ' ' && *p != 0x7f;
	if (!ok) {
		snprintf(err, errlen, "invalid --webhook '%s' (expected an http:// or https:// URL)", arg);
		return -1;
	}
	return 0;
}

static void item_free(struct item *it)
{
	free(it->body);
	free(it->text);
	memset(it, 0, sizeof *it);
}

static size_t discard(char *p, size_t size, size_t n, void *arg)
{
	(void)p;
	(void)arg;
	return size * n;
}

/* libcurl's progress callback: non-zero aborts the transfer, so gpuctld stops without waiting
 * out a receiver that hangs */
static int stopping(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	(void)dt;
	(void)dn;
	(void)ut;
	(void)un;
	struct notify *n = arg;
	pthread_mutex_lock(&n->lock);
	bool stop = n->stop;
	pthread_mutex_unlock(&n->lock);
	return stop;
}

/* one POST: true on a 2xx answer */
static bool post(struct notify *n, const char *body)
{
	CURL *e = curl_easy_init();
	if (!e)
		return false;
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
	long code = 0;
	bool ok = h && curl_easy_setopt(e, CURLOPT_URL, n->webhook) == CURLE_OK &&
		  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https") == CURLE_OK &&
		  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L) == CURLE_OK &&
		  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)n->o.timeout_ms) == CURLE_OK &&
		  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)n->o.timeout_ms) == CURLE_OK &&
		  curl_easy_setopt(e, CURLOPT_HTTPHEADER, h) == CURLE_OK &&
		  curl_easy_setopt(e, CURLOPT_POSTFIELDS, body) == CURLE_OK &&
		  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard) == CURLE_OK &&
		  curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, stopping) == CURLE_OK &&
		  curl_easy_setopt(e, CURLOPT_XFERINFODATA, n) == CURLE_OK &&
		  curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L) == CURLE_OK &&
		  curl_easy_perform(e) == CURLE_OK && curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code) == CURLE_OK &&
		  code >= 200 && code < 300;
	curl_slist_free_all(h);
	curl_easy_cleanup(e);
	return ok;
}

/* the command, the event on its stdin and in GPUCTL_EVENT, killed after the timeout: true on exit 0 */
static bool run_command(struct notify *n, const struct item *it)
{
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) < 0)
		return false;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[0], 0);
	char ev[80];
	snprintf(ev, sizeof ev, "GPUCTL_EVENT=%s", it->event);
	size_t ne = 0;
	while (environ && environ[ne])
		ne++;
	char **env = calloc(ne + 2, sizeof *env);
	pid_t pid = -1;
	int rc = ENOMEM;
	if (env) {
		size_t k = 0;
		for (size_t i = 0; i < ne; i++)
			if (strncmp(environ[i], "GPUCTL_EVENT=", 13) != 0)
				env[k++] = environ[i];
		env[k++] = ev;
		char *argv[] = {n->command, NULL};
		rc = posix_spawn(&pid, n->command, &fa, NULL, argv, env);
	}
	posix_spawn_file_actions_destroy(&fa);
	free(env);
	close(fds[0]);
	if (rc != 0) {
		close(fds[1]);
		fprintf(stderr, "gpuctld: notify: cannot run '%s': %s\n", n->command, strerror(rc));
		return false;
	}
	/* a command that does not read its stdin gets EPIPE, not SIGPIPE: gpuctld ignores it */
	size_t len = strlen(it->body);
	(void)!write(fds[1], it->body, len);
	(void)!write(fds[1], "\n", 1);
	close(fds[1]);
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	long long end = clock_mono_ms() + n->o.timeout_ms;
	int status = 0;
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		long long left = end - clock_mono_ms();
		if (left <= 0) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			fprintf(stderr, "gpuctld: notify: '%s' still ran after %lld ms: killed\n", n->command, n->o.timeout_ms);
			status = -1;
			break;
		}
		struct pollfd p = {.fd = pfd, .events = POLLIN};
		if (pfd < 0 || poll(&p, 1, (int)(left < 100 ? left : 100)) < 0)
			usleep(10000);
	}
	if (pfd >= 0)
		close(pfd);
	return status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static void deliver(struct notify *n, struct item *it)
{
	bool ok = true;
	if (n->webhook) {
		char *slack = NULL;
		if (n->o.slack) {
			json_t *o = json_pack("{s:s}", "text", it->text);
			slack = o ? json_dumps(o, JSON_COMPACT) : NULL;
			json_decref(o);
		}
		const char *body = slack ? slack : it->body;
		bool sent = post(n, body);
		if (!sent) {
			/* once more, a little later, unless gpuctld is stopping */
			pthread_mutex_lock(&n->lock);
			struct timespec t;
			clock_gettime(CLOCK_MONOTONIC, &t);
			t.tv_sec += RETRY_MS / 1000;
			while (!n->stop && pthread_cond_timedwait(&n->wake, &n->lock, &t) != ETIMEDOUT)
				;
			bool stop = n->stop;
			pthread_mutex_unlock(&n->lock);
			if (!stop)
				sent = post(n, body);
		}
		if (!sent)
			fprintf(stderr, "gpuctld: notify: %s was not taken by %s (tried twice)\n", it->event, n->webhook);
		ok = sent;
		free(slack);
	}
	if (n->command)
		ok = run_command(n, it) && ok;
	pthread_mutex_lock(&n->lock);
	if (ok)
		n->st.sent++;
	else
		n->st.failed++;
	pthread_mutex_unlock(&n->lock);
}

static void *worker(void *arg)
{
	struct notify *n = arg;
	pthread_mutex_lock(&n->lock);
	for (;;) {
		while (!n->stop && !n->count)
			pthread_cond_wait(&n->wake, &n->lock);
		if (n->stop)
			break;
		struct item it = n->q[n->head];
		memset(&n->q[n->head], 0, sizeof n->q[n->head]);
		n->head = (n->head + 1) % QUEUE_MAX;
		n->count--;
		pthread_mutex_unlock(&n->lock);
		deliver(n, &it);
		item_free(&it);
		pthread_mutex_lock(&n->lock);
	}
	pthread_mutex_unlock(&n->lock);
	return NULL;
}

int notify_start(struct notify **out, const struct notify_opts *o, char *err, size_t errlen)
{
	*out = NULL;
	if (!o->webhook && !o->command)
		return 0;
	struct notify *n = calloc(1, sizeof *n);
	if (!n) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	n->o = *o;
	n->webhook = o->webhook ? strdup(o->webhook) : NULL;
	n->command = o->command ? strdup(o->command) : NULL;
	n->hostname = strdup(o->hostname ? o->hostname : "");
	pthread_mutex_init(&n->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&n->wake, &ca);
	pthread_condattr_destroy(&ca);
	if (n->webhook && curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		snprintf(err, errlen, "cannot start libcurl for --webhook");
		notify_stop(n);
		return -1;
	}
	if ((errno = pthread_create(&n->thread, NULL, worker, n)) != 0) {
		snprintf(err, errlen, "cannot start the notification thread: %s", strerror(errno));
		n->thread = 0;
		notify_stop(n);
		return -1;
	}
	*out = n;
	return 0;
}

void notify_stop(struct notify *n)
{
	if (!n)
		return;
	pthread_mutex_lock(&n->lock);
	n->stop = true;
	pthread_cond_broadcast(&n->wake);
	pthread_mutex_unlock(&n->lock);
	if (n->thread)
		pthread_join(n->thread, NULL);
	for (size_t i = 0; i < QUEUE_MAX; i++)
		item_free(&n->q[i]);
	if (n->webhook)
		curl_global_cleanup();
	pthread_cond_destroy(&n->wake);
	pthread_mutex_destroy(&n->lock);
	free(n->webhook);
	free(n->command);
	free(n->hostname);
	free(n);
}

void notify_event(struct notify *n, const char *event, const char *text, json_t *fields)
{
	if (!n) {
		json_decref(fields);
		return;
	}
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	struct tm tm;
	gmtime_r(&t.tv_sec, &tm);
	char when[40];
	size_t w = strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(when + w, sizeof when - w, ".%03dZ", (int)(t.tv_nsec / 1000000));
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s}", "schema", "gpuctl.event/1", "event", event, "time", when,
			      "host", n->hostname, "text", text);
	if (o && fields)
		json_object_update(o, fields);
	json_decref(fields);
	struct item it = {0};
	it.body = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	it.text = strdup(text);
	snprintf(it.event, sizeof it.event, "%s", event);
	json_decref(o);
	if (!it.body || !it.text) {
		item_free(&it);
		return;
	}
	pthread_mutex_lock(&n->lock);
	if (n->count == QUEUE_MAX) {
		/* the receiver is far behind: the oldest event goes, not this one */
		item_free(&n->q[n->head]);
		n->head = (n->head + 1) % QUEUE_MAX;
		n->count--;
		n->st.dropped++;
	}
	n->q[(n->head + n->count) % QUEUE_MAX] = it;
	n->count++;
	pthread_cond_signal(&n->wake);
	pthread_mutex_unlock(&n->lock);
}

void notify_stats(struct notify *n, struct notify_stats *out)
{
	memset(out, 0, sizeof *out);
	if (!n)
		return;
	pthread_mutex_lock(&n->lock);
	*out = n->st;
	pthread_mutex_unlock(&n->lock);
}
