/*
 * clock.h — milliseconds, the two ways gpuctl needs them: on the monotonic
 * clock (timeouts, deadlines, durations: never goes back) and on the wall
 * clock (times shown to people and stored). One definition for the seven
 * copies there were.
 */
#ifndef GPUCTL_LIB_CLOCK_H
#define GPUCTL_LIB_CLOCK_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC, in ms */
int64_t clock_mono_ms(void);
/* CLOCK_REALTIME, in ms since the epoch */
int64_t clock_real_ms(void);
/*
 * gmtime_r without the time zone: the calendar fields of t (seconds since
 * the epoch) in UTC, tm_isdst 0. glibc's gmtime_r loads the local time zone
 * the first time it is called (tzset: /etc/localtime, seven system calls),
 * which a UTC timestamp never needs: ls --json paid it on every run.
 */
void clock_utc_tm(int64_t t, struct tm *tm);

#endif
