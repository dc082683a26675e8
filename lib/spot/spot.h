/*
 * spot.h — spot/preemptible VM notices: which cloud we run on, and a
 * watcher thread that turns each cloud's metadata service into one stream
 * of events.
 *
 * Clouds warn a spot VM before reclaiming it (AWS two minutes, GCP and
 * Azure about thirty seconds). The supervisor poll()s spot_watch_fd() next
 * to its child and, on a SPOT_PREEMPT, sends the job SIGTERM so it can
 * checkpoint. Each cloud lives in its own file (spot-aws.c, spot-gcp.c,
 * spot-azure.c) behind the small spot_ops table below; spot.c holds what
 * they share: the thread, the event queue, bounded HTTP through libcurl,
 * and backoff when the metadata service is unreachable.
 *
 * Nothing here prints or exits. A watcher that cannot reach its metadata
 * service keeps trying; it reports that once as a SPOT_ERROR, which is
 * information only, never a reason to stop a job. A malformed answer never
 * becomes a SPOT_PREEMPT.
 */
#ifndef GPUCTL_LIB_SPOT_H
#define GPUCTL_LIB_SPOT_H

/* the AWS and Azure poll interval: a notice lands at a random phase of it, so
 * it reaches the job about half of it late on average (bench/spot.sh) */
#define SPOT_POLL_MS 400

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum spot_cloud { SPOT_NONE, SPOT_AWS, SPOT_GCP, SPOT_AZURE };

enum spot_kind {
	SPOT_PREEMPT,  /* the VM will be reclaimed (terminated, stopped, hibernated) */
	SPOT_WARNING,  /* AWS rebalance recommendation; GCP/Azure maintenance that is not a termination */
	SPOT_ERROR,    /* the metadata service failed repeatedly: informational only */
};

struct spot_event {
	enum spot_kind kind;
	enum spot_cloud cloud;
	int64_t notice_ms;     /* when the watcher saw it: CLOCK_REALTIME, ms since the epoch */
	int64_t deadline_ms;   /* when the VM goes away, if the cloud says; else 0 */
	char action[32];       /* the cloud's word: "terminate", "preempted", "Preempt", ... */
	char detail[256];      /* more, for humans (SPOT_ERROR: what failed) */
	char id[128];          /* Azure EventId (what spot_watch_ack approves); else "" */
};

/* Every field may be 0/NULL for its default. Borrowed for the call to spot_watch_start only. */
struct spot_opts {
	const char *base_url;  /* NULL: $GPUCTL_METADATA_URL, else the cloud's own address */
	int poll_ms;           /* AWS and Azure poll interval (default SPOT_POLL_MS) */
	int long_poll_s;       /* GCP wait_for_change timeout_sec (default 60) */
	int http_timeout_ms;   /* per request (default 2000; a GCP long poll gets long_poll_s + 5 s) */
	size_t max_body;       /* bytes; a longer answer is an error (default 64 KiB) */
};

struct spot_watcher;

/* "aws", "gcp", "azure", "none" */
const char *spot_cloud_name(enum spot_cloud c);
/* "preempt", "warning", "error" */
const char *spot_kind_name(enum spot_kind k);

/*
 * Parse aws|gcp|azure|none|auto (borrowed `s`). "auto" sets *autodetect
 * (and *out = SPOT_NONE); the others clear it. GC_EINVAL for anything else.
 */
int spot_parse_cloud(const char *s, enum spot_cloud *out, bool *autodetect);

/*
 * Which cloud this machine runs on, from the DMI strings the firmware sets
 * (sys_vendor, product_name, bios_vendor, bios_version, chassis_asset_tag in
 * `dmi_dir`, borrowed; NULL: /sys/class/dmi/id). SPOT_NONE when none matches
 * or nothing can be read. Reads are bounded; needs no privileges.
 */
enum spot_cloud spot_detect(const char *dmi_dir);

/*
 * Start watching cloud `c` (not SPOT_NONE) in a new thread. `o` may be NULL.
 * 0 with *out set, or a negative GC_E* with err set. Free with spot_watch_stop.
 */
int spot_watch_start(struct spot_watcher **out, enum spot_cloud c, const struct spot_opts *o,
		     char *err, size_t errlen);
/* Readable (POLLIN) while events are queued; owned by the watcher. */
int spot_watch_fd(const struct spot_watcher *w);
/* Take the oldest queued event: 1 with *ev filled, 0 when none. Never blocks. */
int spot_watch_next(struct spot_watcher *w, struct spot_event *ev);
/*
 * Tell the cloud we are ready: Azure approves the event now (StartRequests
 * for ev->id) instead of at its NotBefore, which reclaims the VM sooner.
 * The other clouds have nothing to approve: 0. Blocks for at most one HTTP
 * timeout; 0 or a negative GC_E* with err set.
 */
int spot_watch_ack(struct spot_watcher *w, const struct spot_event *ev, char *err, size_t errlen);
/* Stop the thread (interrupting any request in flight at once), join it, free everything. NULL is a no-op. */
void spot_watch_stop(struct spot_watcher *w);

/*
 * Pure parsers, shared by the cloud files and exposed for the unit tests.
 * Each returns 0, or GC_EINVAL for input that does not match exactly
 * (garbage, out of range, trailing bytes). Bodies are borrowed, `len`
 * bytes, not necessarily NUL-terminated.
 */
/* "2026-11-22T07:30:00Z" (optional .fraction; Z or +00:00) → ms since the epoch */
int spot_parse_iso8601(const char *s, int64_t *ms);
/* "Mon, 19 Sep 2016 18:29:47 GMT" (RFC 1123, English names) → ms since the epoch */
int spot_parse_rfc1123(const char *s, int64_t *ms);
/* AWS spot/instance-action: {"action": "terminate"|"stop"|"hibernate", "time": ISO 8601} → a PREEMPT */
int spot_aws_parse_action(const char *body, size_t len, struct spot_event *ev);
/* AWS events/recommendations/rebalance: {"noticeTime": ISO 8601} → a WARNING */
int spot_aws_parse_rebalance(const char *body, size_t len, struct spot_event *ev);
/*
 * Azure scheduled events document → up to `max` events in evs[] (*n of
 * them): Preempt/Terminate as PREEMPT, Reboot/Redeploy/Freeze as WARNING;
 * other types and events with a bad field are skipped. GC_EINVAL when the
 * document itself is malformed (then *n = 0).
 */
int spot_azure_parse(const char *body, size_t len, struct spot_event *evs, size_t max, size_t *n);
/*
 * GCP values. preempted: "TRUE" → 1, "FALSE" → 0. maintenance-event:
 * "NONE" → 0 with *kind untouched, TERMINATE_ON_HOST_MAINTENANCE → 1 with
 * SPOT_PREEMPT (a GPU VM cannot live-migrate), MIGRATE_ON_HOST_MAINTENANCE
 * → 1 with SPOT_WARNING. Anything else GC_EINVAL.
 */
int spot_gcp_parse_preempted(const char *body, size_t len);
int spot_gcp_parse_maintenance(const char *body, size_t len, enum spot_kind *kind);

/* ---- internal to lib/spot*.c: the per-cloud interface ---- */
#ifdef SPOT_INTERNAL
#include <curl/curl.h>

/*
 * libcurl, loaded with dlopen by the first spot_watch_start: it and the ~35
 * libraries it pulls in cost every gpuctl start-up ~2 ms when linked, and
 * only a spot watcher needs them. Filled before any watcher exists; the
 * cloud files call through it.
 */
struct spot_curl {
	CURLcode (*global_init)(long flags);
	CURL *(*easy_init)(void);
	void (*easy_cleanup)(CURL *e);
	void (*easy_reset)(CURL *e);
	CURLcode (*easy_setopt)(CURL *e, CURLoption o, ...);
	CURLcode (*easy_getinfo)(CURL *e, CURLINFO i, ...);
	CURLcode (*easy_perform)(CURL *e);
	const char *(*easy_strerror)(CURLcode c);
	struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
	void (*slist_free_all)(struct curl_slist *l);
	CURLM *(*multi_init)(void);
	CURLMcode (*multi_cleanup)(CURLM *m);
	CURLMcode (*multi_add_handle)(CURLM *m, CURL *e);
	CURLMcode (*multi_remove_handle)(CURLM *m, CURL *e);
	CURLMcode (*multi_perform)(CURLM *m, int *running);
	CURLMsg *(*multi_info_read)(CURLM *m, int *left);
	CURLMcode (*multi_poll)(CURLM *m, struct curl_waitfd extra[], unsigned n, int timeout_ms, int *ret);
	CURLMcode (*multi_wakeup)(CURLM *m);
};
extern struct spot_curl spot_curl;

/* One HTTP exchange, driven by the watcher's curl multi handle. */
struct spot_req {
	CURL *easy;              /* owned; reused between requests (keeps the connection) */
	struct curl_slist *hdrs; /* owned; set by spot_req_start from its arguments */
	bool active;             /* in the multi */
	bool done;               /* finished since spot_req_start; fields below valid */
	CURLcode cc;             /* CURLE_OK when an HTTP answer came */
	long status;
	char *body;              /* NUL-terminated, len bytes (owned; kept between requests) */
	size_t len, cap;
	bool oversize;           /* the answer passed max_body: aborted */
	char etag[128];          /* the ETag response header, "" when none */
	char errbuf[CURL_ERROR_SIZE];
	size_t max_body;
};

struct spot_ops {
	enum spot_cloud cloud;
	const char *default_url;
	size_t state_size;        /* zeroed memory handed to every call below */
	bool self_paced;          /* step() waits itself (long poll); else spot.c sleeps poll_ms between steps */
	int (*init)(struct spot_watcher *w, void *st);
	/*
	 * One round: ask the metadata service, spot_emit() what is new. 0 ok,
	 * 1 nothing finished yet (self-paced only), negative when it failed
	 * (after spot_fail() said why): spot.c counts failures and backs off.
	 */
	int (*step)(struct spot_watcher *w, void *st);
	void (*fini)(struct spot_watcher *w, void *st);
	/* NULL: nothing to approve */
	int (*ack)(struct spot_watcher *w, const struct spot_event *ev, char *err, size_t errlen);
};

extern const struct spot_ops spot_aws_ops, spot_gcp_ops, spot_azure_ops;

/* the watcher's settings, with defaults applied */
const struct spot_opts *spot_opts_of(const struct spot_watcher *w);
/* base URL without a trailing slash */
const char *spot_base_url(const struct spot_watcher *w);

/* Queue an event (notice_ms and cloud are filled in when 0). */
void spot_emit(struct spot_watcher *w, const struct spot_event *ev);
/* Record why this round failed (for the SPOT_ERROR event); returns GC_EIO. */
int spot_fail(struct spot_watcher *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

int spot_req_init(struct spot_req *r, size_t max_body);
void spot_req_free(struct spot_watcher *w, struct spot_req *r);
/*
 * Start a request (method "GET", "PUT" or "POST"; body for PUT/POST may be
 * NULL; hdrs: NULL-terminated "Name: value" strings) in the watcher's multi.
 */
int spot_req_start(struct spot_watcher *w, struct spot_req *r, const char *method, const char *url,
		   const char *const *hdrs, const char *body, long timeout_ms);
/*
 * Drive every active request for up to timeout_ms, returning early when one
 * finishes or the watcher is stopped. With no request active, this is an
 * interruptible sleep. 0, or GC_ETIMEDOUT when stopping.
 */
int spot_wait(struct spot_watcher *w, int timeout_ms);
/* Start and wait for one request: 0 when an HTTP answer came (any status), else GC_EIO (spot_fail'ed). */
int spot_req_do(struct spot_watcher *w, struct spot_req *r, const char *method, const char *url,
		const char *const *hdrs, const char *body, long timeout_ms);
/* One request outside the watcher thread (spot_watch_ack): blocking, bounded. 0 or GC_EIO. */
int spot_req_blocking(const struct spot_watcher *w, struct spot_req *r, const char *method, const char *url,
		      const char *const *hdrs, const char *body, char *err, size_t errlen);
/* the body as text, or "" */
const char *spot_req_body(const struct spot_req *r);
#endif

#endif
