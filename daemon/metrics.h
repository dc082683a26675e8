/*
 * metrics.h — one sample as Prometheus text (exposition format 0.0.4), with
 * dcgm-exporter's metric and label names so existing dashboards work, and
 * what dcgm-exporter does not have under gpuctl_: clock event ("throttle")
 * reasons, lease holders, processes, free GPUs, the sampler's health.
 * Pure: renders what it is given, never calls NVML (docs/metrics.md).
 */
#ifndef GPUCTL_DAEMON_METRICS_H
#define GPUCTL_DAEMON_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "device/gpu.h"
#include "jobs/lease.h"
#include "jobs/quarantine.h"

/* NVML errors seen by the sampler, by function and status, since start */
struct metrics_errors {
	uint64_t count[GC_V__COUNT][GC_ST_UNKNOWN_ERROR + 1];  /* by value and status */
};

struct metrics_input {
	const gc_snapshot *snap;
	const char *hostname;
	const struct lease_info *const *leases;  /* [ngpus]: the holder, or NULL when free */
	const struct metrics_errors *errors;
	uint64_t samples, failures;             /* samples taken, samples that failed outright */
	double last_duration;                   /* seconds the last sample took */
	bool snake_labels;                      /* model_name, not dcgm-exporter's modelName */
	const struct quarantine_info *marks;    /* [ngpus] (uuid "": none), or NULL: no health checks */
	const uint64_t *last_xid;               /* [ngpus], 0 none; NULL with marks */
	uint64_t quarantines;                   /* made by gpuctld since it started */
	const struct enforce *enforce;          /* violations by user, or NULL */
	bool reclaiming;                        /* --reclaim-after: reclaimed is meant */
	uint64_t reclaimed;                     /* leases let go after idle reclaim */
	bool notifying;                         /* --webhook or --notify-command: notified is meant */
	uint64_t notified[3];                   /* events sent, failed, dropped */
};

/* The text, NUL-terminated (caller frees), its length in *len; NULL when out of memory. */
char *metrics_render(const struct metrics_input *in, size_t *len);

/* Add this sample's errors (statuses other than OK, unset, not supported) to e. */
void metrics_count_errors(struct metrics_errors *e, const gc_snapshot *snap);

/* The scrape-time lines: the sample's age. Writes at most len bytes; returns the length. */
size_t metrics_age(char *buf, size_t len, double age_seconds);
#endif
