/*
 * clock.h — milliseconds, the two ways gpuctl needs them: on the monotonic
 * clock (timeouts, deadlines, durations: never goes back) and on the wall
 * clock (times shown to people and stored). One definition for the seven
 * copies there were.
 */
#ifndef GPUCTL_LIB_CLOCK_H
#define GPUCTL_LIB_CLOCK_H

#include <stdint.h>

/* CLOCK_MONOTONIC, in ms */
int64_t clock_mono_ms(void);
/* CLOCK_REALTIME, in ms since the epoch */
int64_t clock_real_ms(void);

#endif
