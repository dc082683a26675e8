/*
 * spot-azure.c — Azure Scheduled Events (see spot.h).
 *
 * The instance metadata service lists what Azure is about to do to the VM
 * in one JSON document, polled every poll_ms. A Spot VM being evicted gets a
 * Preempt event (at least 30 s ahead; NotBefore says when), a deletion a
 * Terminate; Reboot, Redeploy and Freeze are maintenance the VM survives.
 * Each EventId is reported once. spot_watch_ack() approves an event
 * (StartRequests), which lets Azure go ahead before NotBefore — useful once
 * the job has checkpointed, so the caller decides.
 */
#define SPOT_INTERNAL
#include "spot/spot.h"
#include "device/gpu.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define API "/metadata/scheduledevents?api-version=2020-07-01"
#define SEEN_MAX 64
#define DOC_EVENTS_MAX 32

struct azure {
	struct spot_req req;
	char seen[SEEN_MAX][128];  /* EventIds already reported (a ring) */
	size_t nseen, seen_next;
};

static int one_event(json_t *e, struct spot_event *ev)
{
	const char *id = NULL, *type = NULL, *not_before = "", *status = "", *rtype = "";
	json_t *resources = NULL;
	if (json_unpack(e, "{s:s, s:s, s?s, s?s, s?s, s?o}", "EventId", &id, "EventType", &type,
			"NotBefore", &not_before, "EventStatus", &status, "ResourceType", &rtype,
			"Resources", &resources) != 0)
		return GC_EINVAL;
	size_t idlen = strlen(id);
	if (idlen == 0 || idlen >= sizeof ev->id || (resources && !json_is_array(resources)))
		return GC_EINVAL;
	memset(ev, 0, sizeof *ev);
	ev->cloud = SPOT_AZURE;
	if (strcmp(type, "Preempt") == 0 || strcmp(type, "Terminate") == 0)
		ev->kind = SPOT_PREEMPT;
	else if (strcmp(type, "Reboot") == 0 || strcmp(type, "Redeploy") == 0 || strcmp(type, "Freeze") == 0)
		ev->kind = SPOT_WARNING;
	else
		return GC_EINVAL;
	/* NotBefore is empty once the event has started; otherwise it must be a date */
	if (*not_before && spot_parse_rfc1123(not_before, &ev->deadline_ms) != GC_OK)
		return GC_EINVAL;
	memcpy(ev->id, id, idlen + 1);
	snprintf(ev->action, sizeof ev->action, "%s", type);
	char res[128] = "";
	size_t i;
	json_t *r;
	json_array_foreach(resources, i, r) {
		if (!json_is_string(r))
			continue;
		size_t l = strlen(res);
		snprintf(res + l, sizeof res - l, "%s%s", l ? "," : "", json_string_value(r));
	}
	snprintf(ev->detail, sizeof ev->detail, "%s %.40s status=%.20s resources=%s", type, rtype, status, res);
	return GC_OK;
}

int spot_azure_parse(const char *body, size_t len, struct spot_event *evs, size_t max, size_t *n)
{
	*n = 0;
	json_error_t jerr;
	json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
	json_t *events = NULL;
	json_int_t inc;
	int rc = GC_EINVAL;
	if (!root || json_unpack(root, "{s:I, s:o}", "DocumentIncarnation", &inc, "Events", &events) != 0 ||
	    !json_is_array(events) || inc < 0)
		goto out;
	size_t i;
	json_t *e;
	json_array_foreach(events, i, e) {
		if (*n >= max)
			break;
		if (json_is_object(e) && one_event(e, &evs[*n]) == GC_OK)
			(*n)++;
	}
	rc = GC_OK;
out:
	json_decref(root);
	return rc;
}

static int azure_init(struct spot_watcher *w, void *st)
{
	struct azure *a = st;
	return spot_req_init(&a->req, spot_opts_of(w)->max_body);
}

static void azure_fini(struct spot_watcher *w, void *st)
{
	struct azure *a = st;
	spot_req_free(w, &a->req);
}

static bool seen(struct azure *a, const char *id)
{
	for (size_t i = 0; i < a->nseen; i++)
		if (strcmp(a->seen[i], id) == 0)
			return true;
	return false;
}

static int azure_step(struct spot_watcher *w, void *st)
{
	struct azure *a = st;
	char url[700];
	snprintf(url, sizeof url, "%s" API, spot_base_url(w));
	static const char *const hdrs[] = {"Metadata: true", NULL};
	int rc = spot_req_do(w, &a->req, "GET", url, hdrs, NULL, spot_opts_of(w)->http_timeout_ms);
	if (rc)
		return rc;
	if (a->req.status != 200)
		return spot_fail(w, "%s: HTTP %ld", url, a->req.status);
	struct spot_event evs[DOC_EVENTS_MAX];
	size_t n;
	if (spot_azure_parse(spot_req_body(&a->req), a->req.len, evs, DOC_EVENTS_MAX, &n) != GC_OK)
		return spot_fail(w, "%s: malformed answer ignored", url);
	for (size_t i = 0; i < n; i++) {
		if (seen(a, evs[i].id))
			continue;
		memcpy(a->seen[a->seen_next], evs[i].id, sizeof a->seen[0]);
		a->seen_next = (a->seen_next + 1) % SEEN_MAX;
		if (a->nseen < SEEN_MAX)
			a->nseen++;
		spot_emit(w, &evs[i]);
	}
	return GC_OK;
}

static int azure_ack(struct spot_watcher *w, const struct spot_event *ev, char *err, size_t errlen)
{
	if (!ev->id[0]) {
		snprintf(err, errlen, "no EventId to approve");
		return GC_EINVAL;
	}
	char url[700];
	snprintf(url, sizeof url, "%s" API, spot_base_url(w));
	json_t *doc = json_pack("{s:[{s:s}]}", "StartRequests", "EventId", ev->id);
	char *body = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	json_decref(doc);
	if (!body)
		return GC_ENOMEM;
	static const char *const hdrs[] = {"Metadata: true", "Content-Type: application/json", NULL};
	struct spot_req r;
	int rc = spot_req_init(&r, spot_opts_of(w)->max_body);
	if (rc == GC_OK)
		rc = spot_req_blocking(w, &r, "POST", url, hdrs, body, err, errlen);
	if (rc == GC_OK && r.status != 200) {
		snprintf(err, errlen, "%s: approving event '%s': HTTP %ld", url, ev->id, r.status);
		rc = GC_EIO;
	}
	spot_req_free(NULL, &r);
	free(body);
	return rc;
}

const struct spot_ops spot_azure_ops = {
	.cloud = SPOT_AZURE,
	.default_url = "http://169.254.169.254",
	.state_size = sizeof(struct azure),
	.self_paced = false,
	.init = azure_init,
	.step = azure_step,
	.fini = azure_fini,
	.ack = azure_ack,
};
