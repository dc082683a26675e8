/*
 * clock.c — monotonic and wall-clock milliseconds (see clock.h).
 */
#include "util/clock.h"

#include <string.h>
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

/* days since 1970-01-01 of the civil date y-m-d (proleptic Gregorian; H. Hinnant's
 * days_from_civil) */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

void clock_utc_tm(int64_t t, struct tm *tm)
{
	int64_t days = t / 86400, rem = t % 86400;
	if (rem < 0) {
		rem += 86400;
		days--;
	}
	memset(tm, 0, sizeof *tm);
	tm->tm_hour = (int)(rem / 3600);
	tm->tm_min = (int)(rem / 60 % 60);
	tm->tm_sec = (int)(rem % 60);
	tm->tm_wday = (int)((days % 7 + 11) % 7); /* 1970-01-01 was a Thursday */
	/* civil_from_days, the inverse of the above */
	int64_t z = days + 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153;
	int64_t d = doy - (153 * mp + 2) / 5 + 1, m = mp < 10 ? mp + 3 : mp - 9;
	int64_t y = yoe + era * 400 + (m <= 2);
	tm->tm_year = (int)(y - 1900);
	tm->tm_mon = (int)(m - 1);
	tm->tm_mday = (int)d;
	tm->tm_yday = (int)(days - days_from_civil(y, 1, 1));
}
