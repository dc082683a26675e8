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

/* One sample, rendered; immutable once published. */
struct frame {
	int refs;                /* atomic */
	uint64_t seq;
	int64_t time_ms;         /* wall clock of the sample */
	int64_t mono_ms;         /* monotonic clock of the sample, for its age */
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
};

struct sampler;

/*
 * Open the driver, take and publish the first sample, start the thread.
 * 0, or a negative GC_E* with a message in err.
 */
int sampler_start(struct sampler **out, const struct sampler_opts *o, char *err, size_t errlen);
void sampler_stop(struct sampler *s);
size_t sampler_ngpus(const struct sampler *s);

/* The newest frame, referenced: give it back with frame_unref. */
struct frame *sampler_frame(struct sampler *s);
void frame_unref(struct frame *f);

/* What the queue needs of each GPU, as of the last sample ("" / UINT64_MAX: unknown). */
struct sampler_gpu {
	char uuid[96];
	char name[96];
	uint64_t mem_free;
	uint64_t mem_total;
	/* owners of its compute processes: a job may not share a GPU with another user's
	 * (gpuctl run would refuse it); `others` when an owner is unknown or there are many */
	uid_t owners[8];
	unsigned nowners;
	bool others;
	bool mig;     /* in MIG mode (select_gpu_mig): never handed out by index */
};
/* Copy them into out[max]; returns the number of GPUs copied. */
size_t sampler_gpus(struct sampler *s, struct sampler_gpu *out, size_t max);

/* Monotonic milliseconds (the clock of frame.mono_ms). */
int64_t sampler_now_ms(void);

/*
 * The history of the last `seconds` (<= 0: all) as gpuctl.history/1 JSON
 * (docs/daemon.md); caller frees. NULL when out of memory.
 */
char *sampler_history_json(struct sampler *s, int64_t seconds, size_t *len);
#endif
