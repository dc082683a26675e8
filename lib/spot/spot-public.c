/*
 * spot-public.c — the spot watcher of spot.h as the public gc_spot_* API:
 * the same watcher thread `gpuctl run --spot` polls, for a program (or the
 * Python package) that wants to checkpoint on a notice itself. gc_spot is
 * the watcher; gc_spot_event is spot_event, copied as far as the caller's
 * size says.
 */
#include "util/errbuf.h"
#include "gpuctl/gpuctl.h"
#include "spot/spot.h"

#include <stddef.h>
#include <string.h>

_Static_assert(GC_CLOUD_NONE == (int)SPOT_NONE && GC_CLOUD_AWS == (int)SPOT_AWS && GC_CLOUD_GCP == (int)SPOT_GCP &&
		       GC_CLOUD_AZURE == (int)SPOT_AZURE,
	       "public cloud numbers are spot.h's");
_Static_assert(GC_SPOT_PREEMPT == (int)SPOT_PREEMPT && GC_SPOT_WARNING == (int)SPOT_WARNING &&
		       GC_SPOT_ERROR == (int)SPOT_ERROR,
	       "public event kinds are spot.h's");

int gc_spot_detect(void)
{
	return (int)spot_detect(NULL);
}

const char *gc_cloud_name(int cloud)
{
	return cloud >= GC_CLOUD_NONE && cloud <= GC_CLOUD_AZURE ? spot_cloud_name((enum spot_cloud)cloud) : NULL;
}

int gc_spot_start(gc_spot **out, int cloud, const char *base_url, char *err, size_t errlen)
{
	if (!out || cloud < GC_CLOUD_AWS || cloud > GC_CLOUD_AZURE) {
		errbuf_set(err, errlen, "gc_spot_start: %s", !out ? "no place for the watcher"
								    : "cloud must be GC_CLOUD_AWS, GC_CLOUD_GCP or GC_CLOUD_AZURE");
		return GC_EINVAL;
	}
	struct spot_opts o = {.base_url = base_url};
	struct spot_watcher *w = NULL;
	int rc = spot_watch_start(&w, (enum spot_cloud)cloud, &o, err, errlen);
	*out = (gc_spot *)w;
	return rc;
}

int gc_spot_fd(const gc_spot *w)
{
	return w ? spot_watch_fd((const struct spot_watcher *)w) : GC_EINVAL;
}

/* the public event from spot.h's, as far as size goes */
static void to_public(const struct spot_event *e, gc_spot_event *out, size_t size)
{
	gc_spot_event p = {.kind = (int)e->kind, .cloud = (int)e->cloud, .notice_ms = e->notice_ms,
			   .deadline_ms = e->deadline_ms};
	memcpy(p.action, e->action, sizeof p.action);
	memcpy(p.detail, e->detail, sizeof p.detail);
	memcpy(p.id, e->id, sizeof p.id);
	memcpy(out, &p, size < sizeof p ? size : sizeof p);
}

int gc_spot_next(gc_spot *w, gc_spot_event *ev, size_t size)
{
	if (!w || !ev || size < offsetof(gc_spot_event, notice_ms))
		return GC_EINVAL;
	struct spot_event e;
	if (!spot_watch_next((struct spot_watcher *)w, &e))
		return 0;
	to_public(&e, ev, size);
	return 1;
}

int gc_spot_ack(gc_spot *w, const gc_spot_event *ev, size_t size, char *err, size_t errlen)
{
	if (!w || !ev || size < sizeof *ev) {
		errbuf_set(err, errlen, "gc_spot_ack: no watcher or event (or an event of an older, smaller layout)");
		return GC_EINVAL;
	}
	struct spot_event e = {.kind = (enum spot_kind)ev->kind, .cloud = (enum spot_cloud)ev->cloud,
			       .notice_ms = ev->notice_ms, .deadline_ms = ev->deadline_ms};
	memcpy(e.action, ev->action, sizeof e.action);
	memcpy(e.detail, ev->detail, sizeof e.detail);
	memcpy(e.id, ev->id, sizeof e.id);
	e.action[sizeof e.action - 1] = e.detail[sizeof e.detail - 1] = e.id[sizeof e.id - 1] = '\0';
	return spot_watch_ack((struct spot_watcher *)w, &e, err, errlen);
}

void gc_spot_stop(gc_spot *w)
{
	spot_watch_stop((struct spot_watcher *)w);
}
