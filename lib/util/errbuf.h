/*
 * errbuf.h — the one way lib/ files write a message for the user into a
 * caller's error buffer (DESIGN.md: errors are GC_E* codes plus a message;
 * the library never prints). NULL or empty buffers are ignored.
 */
#ifndef GPUCTL_LIB_ERRBUF_H
#define GPUCTL_LIB_ERRBUF_H

#include <stddef.h>

void errbuf_set(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The same, one line through a caller's log callback (as the supervisor's and job_run's take); NULL: none. */
void errbuf_log(void (*log)(void *arg, const char *line), void *arg, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
