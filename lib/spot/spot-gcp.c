/*
 * spot-gcp.c — Compute Engine preemption and maintenance notices through
 * the metadata server's long polls (see spot.h).
 *
 * Two values are watched at once, each by its own request in the
 * watcher's curl multi handle: instance/preempted (FALSE, then TRUE about
 * thirty seconds before a spot VM is stopped) and instance/maintenance-event
 * (NONE, or what the host is about to do; a GPU VM cannot live-migrate, so
 * TERMINATE_ON_HOST_MAINTENANCE is as final as a preemption). The first
 * request of each learns the current value and its ETag without waiting;
 * every later one passes last_etag with wait_for_change, so the server
 * answers as soon as the value changes and no change between two requests
 * is missed. A failed request (503, connection refused, garbage) is retried
 * with its own backoff while the other keeps waiting.
 */
#define SPOT_INTERNAL
#include "util/clock.h"
#include "spot/spot.h"
#include "device/gpu.h"

#include <stdio.h>
#include <string.h>

#define PREEMPT_NOTICE_MS 30000   /* GCP stops a preempted VM about 30 s after telling it */

enum { W_PREEMPTED, W_MAINTENANCE, W_COUNT };

struct gwatch {
	const char *path;
	struct spot_req req;
	char etag[128];      /* "" until learned */
	int fails;
	int64_t next_at;     /* monotonic ms: do not start before */
	char last[40];       /* the last value seen */
};

struct gcp {
	struct gwatch w[W_COUNT];
};

/* The value without surrounding whitespace, when it is short enough to be one. */
static int value_of(const char *body, size_t len, char *out, size_t outlen)
{
	while (len && (*body == ' ' || *body == '\n' || *body == '\r' || *body == '\t')) {
		body++;
		len--;
	}
	while (len && (body[len - 1] == ' ' || body[len - 1] == '\n' || body[len - 1] == '\r' ||
		       body[len - 1] == '\t'))
		len--;
	if (len == 0 || len >= outlen || memchr(body, '\0', len))
		return GC_EINVAL;
	memcpy(out, body, len);
	out[len] = '\0';
	return GC_OK;
}

int spot_gcp_parse_preempted(const char *body, size_t len)
{
	char v[16];
	if (value_of(body, len, v, sizeof v))
		return GC_EINVAL;
	if (strcmp(v, "TRUE") == 0)
		return 1;
	if (strcmp(v, "FALSE") == 0)
		return 0;
	return GC_EINVAL;
}

int spot_gcp_parse_maintenance(const char *body, size_t len, enum spot_kind *kind)
{
	char v[40];
	if (value_of(body, len, v, sizeof v))
		return GC_EINVAL;
	if (strcmp(v, "NONE") == 0)
		return 0;
	if (strcmp(v, "TERMINATE_ON_HOST_MAINTENANCE") == 0) {
		*kind = SPOT_PREEMPT;
		return 1;
	}
	if (strcmp(v, "MIGRATE_ON_HOST_MAINTENANCE") == 0) {
		*kind = SPOT_WARNING;
		return 1;
	}
	return GC_EINVAL;
}

static int gcp_init(struct spot_watcher *w, void *st)
{
	struct gcp *g = st;
	g->w[W_PREEMPTED].path = "preempted";
	g->w[W_MAINTENANCE].path = "maintenance-event";
	for (int i = 0; i < W_COUNT; i++) {
		int rc = spot_req_init(&g->w[i].req, spot_opts_of(w)->max_body);
		if (rc)
			return rc;
	}
	return GC_OK;
}

static void gcp_fini(struct spot_watcher *w, void *st)
{
	struct gcp *g = st;
	for (int i = 0; i < W_COUNT; i++)
		spot_req_free(w, &g->w[i].req);
}

static int backoff(int fails)
{
	int ms = 500;
	for (int i = 1; i < fails && ms < 5000; i++)
		ms *= 2;
	return ms < 5000 ? ms : 5000;
}

/* An ETag goes back into the URL: only what a real one holds. */
static bool etag_ok(const char *e)
{
	if (!*e)
		return false;
	for (; *e; e++)
		if (!((*e >= '0' && *e <= '9') || (*e >= 'a' && *e <= 'z') || (*e >= 'A' && *e <= 'Z') ||
		      *e == '-' || *e == '_'))
			return false;
	return true;
}

static int start(struct spot_watcher *w, struct gwatch *gw)
{
	const struct spot_opts *o = spot_opts_of(w);
	char url[900];
	long timeout = o->http_timeout_ms;
	if (gw->etag[0]) {
		snprintf(url, sizeof url,
			 "%s/computeMetadata/v1/instance/%s?wait_for_change=true&last_etag=%s&timeout_sec=%d",
			 spot_base_url(w), gw->path, gw->etag, o->long_poll_s);
		timeout = (long)o->long_poll_s * 1000 + 5000;
	} else {
		snprintf(url, sizeof url, "%s/computeMetadata/v1/instance/%s", spot_base_url(w), gw->path);
	}
	static const char *const hdrs[] = {"Metadata-Flavor: Google", NULL};
	return spot_req_start(w, &gw->req, "GET", url, hdrs, NULL, timeout);
}

static void report(struct spot_watcher *w, int which, const char *value, enum spot_kind kind)
{
	struct spot_event ev = {.kind = kind, .cloud = SPOT_GCP};
	ev.notice_ms = clock_real_ms();
	if (which == W_PREEMPTED) {
		ev.deadline_ms = ev.notice_ms + PREEMPT_NOTICE_MS;
		snprintf(ev.action, sizeof ev.action, "preempted");
		snprintf(ev.detail, sizeof ev.detail, "instance/preempted is TRUE");
	} else {
		snprintf(ev.action, sizeof ev.action, "%.31s", value);
		snprintf(ev.detail, sizeof ev.detail, "instance/maintenance-event is %s", value);
	}
	spot_emit(w, &ev);
}

/* A finished request: 0 when it brought a value, else a failure. */
static int finished(struct spot_watcher *w, int which, struct gwatch *gw)
{
	struct spot_req *r = &gw->req;
	const char *what = gw->path;
	if (r->cc != CURLE_OK || r->oversize)
		return spot_fail(w, "instance/%s: %s", what, r->oversize ? "answer too long" :
				 r->errbuf[0] ? r->errbuf : spot_curl.easy_strerror(r->cc));
	if (r->status != 200)
		return spot_fail(w, "instance/%s: HTTP %ld", what, r->status);
	char value[40];
	enum spot_kind kind = SPOT_WARNING;
	int v = value_of(spot_req_body(r), r->len, value, sizeof value);
	if (v == GC_OK)
		v = which == W_PREEMPTED ? spot_gcp_parse_preempted(r->body, r->len)
					 : spot_gcp_parse_maintenance(r->body, r->len, &kind);
	if (v < 0) {
		gw->etag[0] = '\0'; /* start over from the current value */
		return spot_fail(w, "instance/%s: malformed answer ignored", what);
	}
	if (v == 1 && strcmp(value, gw->last) != 0)
		report(w, which, value, which == W_PREEMPTED ? SPOT_PREEMPT : kind);
	snprintf(gw->last, sizeof gw->last, "%s", value);
	if (!etag_ok(r->etag)) {
		/* without an ETag every request would answer at once: treat it as a failure (backoff) */
		gw->etag[0] = '\0';
		return spot_fail(w, "instance/%s: no usable ETag", what);
	}
	memcpy(gw->etag, r->etag, sizeof gw->etag);
	return GC_OK;
}

static int gcp_step(struct spot_watcher *w, void *st)
{
	struct gcp *g = st;
	int64_t now = clock_mono_ms();
	int failed = 0;
	for (int i = 0; i < W_COUNT; i++) {
		struct gwatch *gw = &g->w[i];
		if (gw->req.active || gw->req.done || now < gw->next_at)
			continue;
		if (start(w, gw) != GC_OK) {
			gw->fails++;
			gw->next_at = now + backoff(gw->fails);
			failed = 1;
		}
	}
	/* wait for an answer, or until the first backoff ends */
	int64_t wait = 1000;
	for (int i = 0; i < W_COUNT; i++)
		if (!g->w[i].req.active && !g->w[i].req.done && g->w[i].next_at - now < wait)
			wait = g->w[i].next_at - now;
	if (wait < 0)
		wait = 0;
	if (spot_wait(w, (int)wait) != GC_OK)
		return 1; /* stopping */
	int got = 0;
	now = clock_mono_ms();
	for (int i = 0; i < W_COUNT; i++) {
		struct gwatch *gw = &g->w[i];
		if (!gw->req.done)
			continue;
		gw->req.done = false;
		if (finished(w, i, gw) == GC_OK) {
			gw->fails = 0;
			gw->next_at = now;
			got = 1;
		} else {
			gw->fails++;
			gw->next_at = now + backoff(gw->fails);
			failed = 1;
		}
	}
	return failed ? GC_EIO : got ? 0 : 1;
}

const struct spot_ops spot_gcp_ops = {
	.cloud = SPOT_GCP,
	.default_url = "http://metadata.google.internal",
	.state_size = sizeof(struct gcp),
	.self_paced = true,
	.init = gcp_init,
	.step = gcp_step,
	.fini = gcp_fini,
	.ack = NULL,
};
