/*
 * capture.h — run a helper program (nvcc, python, sbatch, scontrol) and
 * take what it prints, with a deadline: no shell, PATH searched, bounded
 * output, its whole process group killed when it runs too long.
 */
#ifndef GPUCTL_CAPTURE_H
#define GPUCTL_CAPTURE_H
#include <stdbool.h>

#define CAPTURE_OUT_MAX (64u << 10)
enum { CAPTURE_NOT_RUN = -1, CAPTURE_TIMEOUT = -2 };

/*
 * Run argv (borrowed; PATH searched) with input (borrowed; NULL: /dev/null)
 * on its stdin, and its stdout — with its stderr too when with_stderr, else
 * stderr goes to /dev/null — up to CAPTURE_OUT_MAX bytes in *out (caller
 * frees with free; NUL-terminated; NULL when not run). Returns its exit
 * status (128+N for signal N), CAPTURE_NOT_RUN when it could not be started
 * (an errno in *why), CAPTURE_TIMEOUT past timeout_ms (its process group
 * is then killed).
 */
int capture_run(char *const argv[], const char *input, bool with_stderr, int timeout_ms, char **out, int *why);
#endif
