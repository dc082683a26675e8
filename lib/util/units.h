/*
 * units.h — sizes, percentages, counts and durations as people type them on
 * the command line (--min-free-mem 20G, --max-util 30%, --keep 3,
 * --timeout 10m). Standalone: no NVML, no gc_ctx. Each parser returns 0,
 * or GC_EINVAL with a one-line reason in err (errlen bytes, may be NULL);
 * the count, duration and interval reasons name the option (opt).
 *
 * Sizes always carry a unit, because a bare "20000" could mean bytes (NVML),
 * MiB (nvidia-smi) or GB (a cloud's price sheet), and guessing wrong by a
 * factor of a million silently selects the wrong GPUs. The one-letter units
 * are binary, as nvidia-smi's "MiB" is: 20G = 20GiB = 20 * 2^30 bytes.
 */
#ifndef GPUCTL_LIB_UNITS_H
#define GPUCTL_LIB_UNITS_H

#include <stddef.h>
#include <stdint.h>

/* longest input accepted; anything longer is refused as too long */
#define UNITS_MAX_INPUT 64

/*
 * Parse a size: a number (digits, optionally with one decimal point: "1.5",
 * ".5") directly followed by a unit (spaces between them are allowed):
 *   B                          bytes
 *   K, M, G, T, KiB ... TiB    binary: 1024, 1024^2, ...
 *   KB, MB, GB, TB             decimal: 1000, 1000^2, ...
 * Units are case-insensitive. Decimals are rounded down to whole bytes,
 * exactly (no floating point). `s` is borrowed; err (errlen bytes, may be
 * NULL) receives a one-line reason on failure.
 * Returns 0 and sets *bytes, or GC_EINVAL (bare number, negative, empty, too large
 * for 64 bits, not a number, unknown unit or trailing junk).
 */
int units_parse_size(const char *s, uint64_t *bytes, char *err, size_t errlen);

/*
 * Parse a percentage: an integer 0..100 with an optional trailing '%'.
 * Returns 0 and sets *pct, or GC_EINVAL with a reason in err (may be NULL).
 */
int units_parse_percent(const char *s, int *pct, char *err, size_t errlen);

/* A signal as people write it: USR1, SIGUSR1, usr1 or its number (not KILL or STOP). 0, or GC_EINVAL
 * with a message naming opt. */
int units_parse_signal(const char *opt, const char *arg, int *sig, char *err, size_t errlen);

/* A whole number >= 1 ("3"). */
int units_parse_count(const char *opt, const char *arg, long *out, char *err, size_t errlen);
/* A duration: seconds, or a number with s, m, h or d ("90", "30s", "5m", "2h"), as milliseconds. */
int units_parse_duration(const char *opt, const char *arg, long long *ms, char *err, size_t errlen);
/* An interval in seconds, more than 0 and at most 86400 ("0.5"). */
int units_parse_interval(const char *opt, const char *arg, double *out, char *err, size_t errlen);

/*
 * round(v * scale) / scale, exactly as round(3) would (halves away from zero), without
 * libm: the two callers of round() were gpuctl's only reason to load it at every start.
 */
double units_round(double v, double scale);
/*
 * milli / 1000 with two decimals, byte for byte what printf("%.2f", milli /
 * 1000.0) writes (nvidia-smi's watts), into buf (at least 24 bytes); its
 * length. Without printf except on an exact tie (the third decimal a 5),
 * where the double's binary value decides the rounding and printf is asked.
 */
int units_milli_2dp(uint64_t milli, char *buf, size_t len);
/* v in decimal, written backwards so as to end just before end (at least 20 bytes before it
 * are free); where it starts. No NUL: the caller knows the end. */
char *units_dec(uint64_t v, char *end);

#endif
