/*
 * advise-here.h — `gpuctl advise --here`: this machine beside the rentals.
 * Its GPUs (the snapshot), the fewest of them that hold the workload
 * (lib/advise/here.h), whether that many are free for the caller now (as
 * gpuctl pick would find them), else the expected wait in gpuctld's queue
 * (its "load" answer), and the on-premises price when given.
 */
#ifndef GPUCTL_ADVISE_HERE_H
#define GPUCTL_ADVISE_HERE_H

#include "cli.h"
#include "advise/advise.h"

#include <jansson.h>

/* advise's own formats (cmd-advise.c): "41 min", "3.1 h", "2.5 days"; "$8.28", "$123", "-" unknown */
void advise_fmt_hours(char *buf, size_t len, double h);
void advise_fmt_money(char *buf, size_t len, double v);

/*
 * The answer for res on this machine at price $/GPU-hour (< 0: none): a JSON
 * object (kind, text, ...) in *out, and whether the workload fits here.
 * EXIT_OK, or an exit code for what could not be done (out of memory).
 */
int advise_here(const struct cli_global *g, const struct advise_result *res, double price, json_t **out, bool *fits);

#endif
