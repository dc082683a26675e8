/*
 * spot-aws.c — EC2 spot interruption notices through IMDSv2 (see spot.h).
 *
 * IMDSv2 wants a session token: PUT /latest/api/token once, then send it
 * with every GET; a 401 means it expired (or the instance metadata service
 * restarted), so we fetch a new one and retry once. spot/instance-action
 * (404 until AWS decides to reclaim the instance, then the action and its
 * time, two minutes ahead) is polled every poll_ms: its two minutes are the
 * job's, so every 100 ms of polling costs one. events/recommendations/
 * rebalance (an early hint that the instance is at elevated risk, minutes
 * to hours ahead) is asked at most every REBALANCE_MS: one GET in five at
 * the default 400 ms, which keeps the watcher's idle CPU and its share of
 * IMDS's per-instance request throttle low. Each distinct notice is
 * reported once.
 */
#define SPOT_INTERNAL
#include "util/clock.h"
#include "spot/spot.h"
#include "device/gpu.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#define TOKEN_TTL_S 21600
#define TOKEN_REFRESH_MS ((int64_t)(TOKEN_TTL_S - 600) * 1000)
#define REBALANCE_MS 2000

struct aws {
	struct spot_req req;
	char token[256];
	int64_t token_at;         /* monotonic ms; 0: no token */
	char last_action[96];     /* action and time of the last instance-action reported */
	char last_rebalance[256]; /* detail (it holds the noticeTime) of the last rebalance reported */
	int64_t rebalance_at;     /* monotonic ms of the last rebalance GET; 0: none yet */
};

static json_t *load(const char *body, size_t len)
{
	json_error_t jerr;
	return json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
}

int spot_aws_parse_action(const char *body, size_t len, struct spot_event *ev)
{
	json_t *root = load(body, len);
	const char *action = NULL, *t = NULL;
	int64_t ms;
	int rc = GC_EINVAL;
	if (!root || json_unpack(root, "{s:s, s:s}", "action", &action, "time", &t) != 0 ||
	    (strcmp(action, "terminate") != 0 && strcmp(action, "stop") != 0 &&
	     strcmp(action, "hibernate") != 0) ||
	    spot_parse_iso8601(t, &ms) != GC_OK)
		goto out;
	memset(ev, 0, sizeof *ev);
	ev->kind = SPOT_PREEMPT;
	ev->cloud = SPOT_AWS;
	ev->deadline_ms = ms;
	snprintf(ev->action, sizeof ev->action, "%s", action);
	snprintf(ev->detail, sizeof ev->detail, "spot instance-action %s at %s", action, t);
	rc = GC_OK;
out:
	json_decref(root);
	return rc;
}

int spot_aws_parse_rebalance(const char *body, size_t len, struct spot_event *ev)
{
	json_t *root = load(body, len);
	const char *t = NULL;
	int64_t ms;
	int rc = GC_EINVAL;
	if (!root || json_unpack(root, "{s:s}", "noticeTime", &t) != 0 || spot_parse_iso8601(t, &ms) != GC_OK)
		goto out;
	memset(ev, 0, sizeof *ev);
	ev->kind = SPOT_WARNING;
	ev->cloud = SPOT_AWS;
	snprintf(ev->action, sizeof ev->action, "rebalance");
	snprintf(ev->detail, sizeof ev->detail, "rebalance recommendation, noticeTime %s", t);
	rc = GC_OK;
out:
	json_decref(root);
	return rc;
}

static int aws_init(struct spot_watcher *w, void *st)
{
	struct aws *a = st;
	return spot_req_init(&a->req, spot_opts_of(w)->max_body);
}

static void aws_fini(struct spot_watcher *w, void *st)
{
	struct aws *a = st;
	spot_req_free(w, &a->req);
}

static int get_token(struct spot_watcher *w, struct aws *a)
{
	char url[640];
	snprintf(url, sizeof url, "%s/latest/api/token", spot_base_url(w));
	static const char *const hdrs[] = {"X-aws-ec2-metadata-token-ttl-seconds: 21600", NULL};
	a->token_at = 0;
	int rc = spot_req_do(w, &a->req, "PUT", url, hdrs, NULL, spot_opts_of(w)->http_timeout_ms);
	if (rc)
		return rc;
	if (a->req.status != 200)
		return spot_fail(w, "%s: HTTP %ld", url, a->req.status);
	/* a token goes back into a header: printable, no spaces, bounded */
	const char *b = spot_req_body(&a->req);
	size_t l = a->req.len;
	while (l && (b[l - 1] == '\n' || b[l - 1] == '\r'))
		l--;
	if (l == 0 || l >= sizeof a->token)
		return spot_fail(w, "%s: unusable token", url);
	for (size_t i = 0; i < l; i++)
		if (b[i] <= ' ' || b[i] > '~')
			return spot_fail(w, "%s: unusable token", url);
	memcpy(a->token, b, l);
	a->token[l] = '\0';
	a->token_at = clock_mono_ms();
	if (a->token_at == 0)
		a->token_at = 1;
	return GC_OK;
}

/* GET one path with the token: 0 with the answer in a->req, or a failure */
static int get(struct spot_watcher *w, struct aws *a, const char *path, char *url, size_t urllen)
{
	snprintf(url, urllen, "%s%s", spot_base_url(w), path);
	for (int attempt = 0;; attempt++) {
		if (!a->token_at || clock_mono_ms() - a->token_at > TOKEN_REFRESH_MS) {
			int rc = get_token(w, a);
			if (rc)
				return rc;
		}
		char hdr[300];
		snprintf(hdr, sizeof hdr, "X-aws-ec2-metadata-token: %s", a->token);
		const char *const hdrs[] = {hdr, NULL};
		int rc = spot_req_do(w, &a->req, "GET", url, hdrs, NULL, spot_opts_of(w)->http_timeout_ms);
		if (rc)
			return rc;
		if (a->req.status != 401 || attempt == 1)
			return GC_OK;
		a->token_at = 0; /* expired: a new one, then once more */
	}
}

static int aws_step(struct spot_watcher *w, void *st)
{
	struct aws *a = st;
	char url[640];
	struct spot_event ev;
	int rc = get(w, a, "/latest/meta-data/spot/instance-action", url, sizeof url);
	if (rc)
		return rc;
	if (a->req.status == 200) {
		if (spot_aws_parse_action(spot_req_body(&a->req), a->req.len, &ev) != GC_OK)
			return spot_fail(w, "%s: malformed answer ignored", url);
		char key[sizeof a->last_action];
		snprintf(key, sizeof key, "%s %lld", ev.action, (long long)ev.deadline_ms);
		if (strcmp(key, a->last_action) != 0) {
			memcpy(a->last_action, key, sizeof key);
			spot_emit(w, &ev);
		}
	} else if (a->req.status != 404) {
		return spot_fail(w, "%s: HTTP %ld", url, a->req.status);
	}
	int64_t now = clock_mono_ms();
	if (a->rebalance_at && now - a->rebalance_at < REBALANCE_MS)
		return GC_OK;
	a->rebalance_at = now ? now : 1;
	rc = get(w, a, "/latest/meta-data/events/recommendations/rebalance", url, sizeof url);
	if (rc)
		return rc;
	if (a->req.status == 200) {
		if (spot_aws_parse_rebalance(spot_req_body(&a->req), a->req.len, &ev) != GC_OK)
			return spot_fail(w, "%s: malformed answer ignored", url);
		if (strcmp(ev.detail, a->last_rebalance) != 0) {
			memcpy(a->last_rebalance, ev.detail, sizeof a->last_rebalance);
			spot_emit(w, &ev);
		}
	} else if (a->req.status != 404) {
		return spot_fail(w, "%s: HTTP %ld", url, a->req.status);
	}
	return GC_OK;
}

const struct spot_ops spot_aws_ops = {
	.cloud = SPOT_AWS,
	.default_url = "http://169.254.169.254",
	.state_size = sizeof(struct aws),
	.self_paced = false,
	.init = aws_init,
	.step = aws_step,
	.fini = aws_fini,
	.ack = NULL,
};
