/*
 * price.h — what a GPU-hour of this machine costs, for gpuctl usage
 * (--gpu-hour-price auto|aws|gcp|azure, docs/policy.md): the cloud (auto:
 * by DMI, as the spot watcher tells it) is asked for the instance's type
 * through its metadata service ($GPUCTL_METADATA_URL overrides where, as for
 * the spot watcher), and gpuctl advise's price snapshot (data/catalog) gives
 * the type's on-demand price, the lowest over the regions it lists, over its
 * GPUs.
 */
#ifndef GPUCTL_DAEMON_PRICE_H
#define GPUCTL_DAEMON_PRICE_H

#include <stddef.h>

/* "auto", "aws", "gcp" or "azure": 1 (a cloud's price is meant); else 0 */
int price_is_cloud(const char *arg);

/*
 * Find it: 0 with *per_gpu_hour and a line for people in desc ("aws
 * p4d.24xlarge: $21.96/h for 8 GPUs, catalog of 2026-11-22"), or -1 with why
 * in err (not a cloud, no answer, a type the catalog lacks).
 */
int price_find(const char *arg, double *per_gpu_hour, char *desc, size_t desclen, char *err, size_t errlen);
#endif
