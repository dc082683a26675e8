/*
 * sampler.h — gpuctld's sampling thread: one NVML context kept open (its
 * handles reused), a sample every interval, each sample rendered once into
 * a frame (Prometheus text and the /api/v1/gpus JSON) that requests then
 * only copy, and a bounded history of the values the dashboard charts.
 * Requests never call NVML.
 */
#ifndef GPUCTL_DAEMON_SAMPLER_H
#define GPUCTL_DAEMON_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "device/gpu.h"

/* One sample, rendered; immutable once published. */
struct frame {
	int refs;                /* atomic */
	uint64_t seq;
	int64_t time_ms;         /* wall clock of the sample */
	int64_t mono_ms;         /* clock_mono_ms() of the sample, for its age */
	char *metrics;           /* Prometheus text */
	size_t metrics_len;
	char *gpus;              /* /api/v1/gpus without the "sample" member's age */
	size_t gpus_len;
};

struct sampler_opts {
	const char *sim;         /* borrowed: a simulated node file, or NULL for the driver */
	int interval_ms;
	int64_t history_ms;
	const char *hostname;    /* borrowed */
	bool snake_labels;       /* --labels snake */
	struct health *health;   /* borrowed: quarantine checks after each sample, or NULL */
	struct enforce *enforce; /* borrowed: lease enforcement after each sample, or NULL */
	struct notify *notify;   /* borrowed: gpu.freed events (a lease released), or NULL */
	struct reclaim *reclaim; /* borrowed: idle reclaim after each sample, or NULL */
	int render_keep_ms;      /* frames are rendered each sample this long after a request
				    (0: 30 s); after that, at the next request */
};

struct sampler;

/*
 * Open the driver, take and publish the first sample, start the thread.
 * 0, or a negative GC_E* with a message in err.
 */
int sampler_start(struct sampler **out, const struct sampler_opts *o, char *err, size_t errlen);
void sampler_stop(struct sampler *s);
size_t sampler_ngpus(const struct sampler *s);

/* The newest sample's frame, referenced: give it back with frame_unref. */
struct frame *sampler_frame(struct sampler *s);
/* the newest sample's number (a frame's seq) */
uint64_t sampler_seq(struct sampler *s);
void frame_unref(struct frame *f);

/*
 * The last good sample, deep-copied into out (released first; the caller
 * releases it with gpu_snapshot_release): the queue decides with the
 * library's select.c on it, as gpuctl run does. GC_OK, or GC_ENOMEM.
 */
int sampler_snapshot(struct sampler *s, gc_snapshot *out);

/*
 * The history of the last `seconds` (<= 0: all) as gpuctl.history/1 JSON
 * (docs/daemon.md); caller frees. NULL when out of memory.
 */
char *sampler_history_json(struct sampler *s, int64_t seconds, size_t *len);
#endif
