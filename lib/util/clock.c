/*
 * clock.c — monotonic and wall-clock milliseconds (see clock.h).
 */
#include "util/clock.h"

#include <time.h>

static int64_t ms_of(clockid_t id)
{
	struct timespec t;
	clock_gettime(id, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

int64_t clock_mono_ms(void)
{
	return ms_of(CLOCK_MONOTONIC);
}

int64_t clock_real_ms(void)
{
	return ms_of(CLOCK_REALTIME);
}
