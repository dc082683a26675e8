/*
 * test-units.c — lib/util/units.c as a table: what --min-free-mem and --max-util
 * accept (with the exact byte count or percentage) and what they refuse
 * (with a fragment of the reason a user would read).
 */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "gpuctl/gpuctl.h"
#include "util/clock.h"
#include "util/units.h"

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)
#define TiB (UINT64_C(1) << 40)

struct size_row {
	const char *in;
	uint64_t bytes;       /* when err is NULL */
	const char *err;      /* NULL: accepted; else a fragment of the message */
};

static const struct size_row size_rows[] = {
	/* one-letter and IEC units are binary, as nvidia-smi's MiB */
	{"20G", 20 * GiB, NULL},
	{"20GiB", 20 * GiB, NULL},
	{"20000M", 20000 * MiB, NULL},
	{"20000MiB", 20000 * MiB, NULL},
	{"512K", 512 * KiB, NULL},
	{"1KiB", KiB, NULL},
	{"2T", 2 * TiB, NULL},
	{"2TiB", 2 * TiB, NULL},
	/* SI units are decimal */
	{"1KB", 1000, NULL},
	{"20MB", 20000000, NULL},
	{"20GB", UINT64_C(20000000000), NULL},
	{"3TB", UINT64_C(3000000000000), NULL},
	{"4096B", 4096, NULL},
	{"0G", 0, NULL},
	{"0B", 0, NULL},
	/* any case */
	{"20g", 20 * GiB, NULL},
	{"20gib", 20 * GiB, NULL},
	{"20GIB", 20 * GiB, NULL},
	{"20gb", UINT64_C(20000000000), NULL},
	{"7b", 7, NULL},
	/* decimals, rounded down to whole bytes, exactly */
	{"1.5G", GiB + GiB / 2, NULL},
	{"1.5GB", 1500000000, NULL},
	{".5K", 512, NULL},
	{"2.K", 2048, NULL},
	{"0.1K", 102, NULL},            /* 102.4 */
	{"0.001KB", 1, NULL},
	{"0.0009KB", 0, NULL},          /* 0.9 bytes */
	{"1.9B", 1, NULL},
	{"0.3T", UINT64_C(329853488332), NULL}, /* 0.3 * 2^40 = 329853488332.8 */
	{"1.00000000000000000000000000001KB", 1000, NULL},
	{"0.99999999999999999999999999999KB", 999, NULL},
	/* a space between number and unit is fine */
	{"20 G", 20 * GiB, NULL},
	{"80 GiB", 80 * GiB, NULL},
	/* the largest sizes */
	{"18446744073709551615B", UINT64_MAX, NULL},
	{"16777215.99999999T", UINT64_C(18446744073709540620), NULL},
	{"18446744073.709551615GB", UINT64_MAX, NULL},

	/* refused */
	{"20000", 0, "a size needs a unit, e.g. 20000M or 20G"},
	{"1.5", 0, "a size needs a unit"},
	{"20 ", 0, "a size needs a unit"},
	{"", 0, "empty size"},
	{"-1G", 0, "cannot be negative"},
	{"-0G", 0, "cannot be negative"},
	{"+1G", 0, "is not a size"},
	{"G", 0, "is not a size"},
	{".G", 0, "is not a size"},
	{"nan", 0, "'nan' is not a size"},
	{"inf", 0, "is not a size"},
	{"NaNG", 0, "is not a size"},
	{" 20G", 0, "is not a size"},
	{"20X", 0, "unknown unit 'X' (use M, G, MiB, GiB, MB, GB ...)"},
	{"20P", 0, "unknown unit 'P'"},
	{"20Gi", 0, "unknown unit 'Gi'"},
	{"20GiBs", 0, "unknown unit 'GiBs'"},
	{"20G ", 0, "unknown unit 'G '"},
	{"20G5", 0, "unknown unit 'G5'"},
	{"1e3G", 0, "unknown unit 'e3G'"},
	{"0x10G", 0, "unknown unit 'x10G'"},
	{"1,5G", 0, "unknown unit ',5G'"},
	{"1.5.2G", 0, "is not a size"},
	{"18446744073709551616B", 0, "too large"},
	{"16777216T", 0, "too large"},
	{"18446744073.709551616GB", 0, "too large"},
	{"99999999999999999999999999G", 0, "too large"},
	{"1000000000000000000000000000000000000000000000000000000000000000000G", 0, "too long"},
};

static void test_size_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof size_rows / sizeof size_rows[0]; i++) {
		const struct size_row *w = &size_rows[i];
		uint64_t got = 0xdeadbeef;
		char err[160] = "";
		int rc = units_parse_size(w->in, &got, err, sizeof err);
		if (!w->err) {
			if (rc != 0 || got != w->bytes)
				fail_msg("'%s': rc %d bytes %llu (%s); want %llu", w->in, rc,
					 (unsigned long long)got, err, (unsigned long long)w->bytes);
		} else {
			if (rc != GC_EINVAL || !strstr(err, w->err))
				fail_msg("'%s': rc %d err '%s'; want GC_EINVAL and '%s'", w->in, rc, err, w->err);
			if (got != 0xdeadbeef)
				fail_msg("'%s': refused but wrote %llu", w->in, (unsigned long long)got);
		}
	}
}

static void test_size_edges(void **state)
{
	(void)state;
	uint64_t b;
	char err[8];
	/* NULL input, NULL or tiny error buffer: no crash, message truncated */
	assert_int_equal(units_parse_size(NULL, &b, NULL, 0), GC_EINVAL);
	assert_int_equal(units_parse_size("20", &b, err, sizeof err), GC_EINVAL);
	assert_int_equal(strlen(err), sizeof err - 1);
	assert_int_equal(units_parse_size("20G", &b, NULL, 0), 0);
	assert_true(b == 20 * GiB);
}

struct pct_row {
	const char *in;
	int pct;
	const char *err;
};

static const struct pct_row pct_rows[] = {
	{"0", 0, NULL},
	{"30", 30, NULL},
	{"30%", 30, NULL},
	{"100", 100, NULL},
	{"100%", 100, NULL},
	{"007", 7, NULL},
	{"", 0, "empty percentage"},
	{"%", 0, "is not a percentage"},
	{"101", 0, "more than 100"},
	{"99999999999999999999", 0, "more than 100"},
	{"-1", 0, "cannot be negative"},
	{"50.5", 0, "is not a percentage (a whole number from 0 to 100)"},
	{"50%%", 0, "is not a percentage"},
	{"50 %", 0, "is not a percentage"},
	{"abc", 0, "is not a percentage"},
	{" 5", 0, "is not a percentage"},
	{"0x10", 0, "is not a percentage"},
};

static void test_percent_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof pct_rows / sizeof pct_rows[0]; i++) {
		const struct pct_row *w = &pct_rows[i];
		int got = -42;
		char err[160] = "";
		int rc = units_parse_percent(w->in, &got, err, sizeof err);
		if (!w->err) {
			if (rc != 0 || got != w->pct)
				fail_msg("'%s': rc %d pct %d (%s); want %d", w->in, rc, got, err, w->pct);
		} else if (rc != GC_EINVAL || !strstr(err, w->err) || got != -42) {
			fail_msg("'%s': rc %d pct %d err '%s'; want GC_EINVAL and '%s'", w->in, rc, got, err, w->err);
		}
	}
	assert_int_equal(units_parse_percent(NULL, &(int){0}, NULL, 0), GC_EINVAL);
}

/* counts, durations and intervals: the value, or GC_EINVAL with the option named */
static void test_count_duration_interval(void **state)
{
	(void)state;
	char err[200];
	long n = -42;
	assert_int_equal(units_parse_count("--keep", "3", &n, err, sizeof err), GC_OK);
	assert_int_equal(n, 3);
	static const char *const bad_counts[] = {"0", "-1", "", "3x", "1.5", "99999999999999999999999"};
	for (size_t i = 0; i < sizeof bad_counts / sizeof *bad_counts; i++) {
		n = -42;
		assert_int_equal(units_parse_count("--keep", bad_counts[i], &n, err, sizeof err), GC_EINVAL);
		assert_int_equal(n, -42);
		assert_non_null(strstr(err, "invalid --keep value"));
	}
	long long ms = -42;
	static const struct {
		const char *in;
		long long ms;
	} durations[] = {{"90", 90000}, {"30s", 30000}, {"5m", 300000}, {"2h", 7200000}, {"1d", 86400000}, {"0.5", 500}};
	for (size_t i = 0; i < sizeof durations / sizeof *durations; i++) {
		assert_int_equal(units_parse_duration("--timeout", durations[i].in, &ms, err, sizeof err), GC_OK);
		assert_int_equal(ms, durations[i].ms);
	}
	static const char *const bad_durations[] = {"", "0", "-5m", "5x", "5mm", "nan", "inf", "1e20"};
	for (size_t i = 0; i < sizeof bad_durations / sizeof *bad_durations; i++) {
		ms = -42;
		assert_int_equal(units_parse_duration("--timeout", bad_durations[i], &ms, err, sizeof err), GC_EINVAL);
		assert_int_equal(ms, -42);
		assert_non_null(strstr(err, "invalid --timeout"));
	}
	double s = -42;
	assert_int_equal(units_parse_interval("-l", "0.5", &s, err, sizeof err), GC_OK);
	assert_true(s == 0.5);
	static const char *const bad_intervals[] = {"", "0", "-1", "86401", "nan", "1s"};
	for (size_t i = 0; i < sizeof bad_intervals / sizeof *bad_intervals; i++) {
		s = -42;
		assert_int_equal(units_parse_interval("-l", bad_intervals[i], &s, err, sizeof err), GC_EINVAL);
		assert_true(s == -42);
		assert_non_null(strstr(err, "invalid -l value"));
	}
}

/* units_round is round(v * scale) / scale, halves away from zero, NaN and the infinities kept */
static void test_round_as_libm(void **state)
{
	(void)state;
	static const double scales[] = {1, 10, 100, 10000};
	static const double vs[] = {0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 0.49999999999999994, 0.125, 0.005, -0.005,
				    1.005, 2.675, 12.345, -12.345, 1e15, -1e15, 4503599627370497.0, 1e300, 123456.78915};
	for (size_t k = 0; k < sizeof scales / sizeof scales[0]; k++)
		for (size_t i = 0; i < sizeof vs / sizeof vs[0]; i++) {
			double want = round(vs[i] * scales[k]) / scales[k], got = units_round(vs[i], scales[k]);
			if (memcmp(&want, &got, sizeof want) != 0)
				fail_msg("units_round(%.17g, %g) = %.17g, round gives %.17g", vs[i], scales[k], got, want);
		}
	for (int i = -100000; i <= 100000; i++) { /* every hundredth and its halves */
		double v = i / 2000.0;
		assert_true(units_round(v, 100) == round(v * 100) / 100);
	}
	assert_true(isnan(units_round(NAN, 100)));
	assert_true(isinf(units_round(INFINITY, 100)) && units_round(-INFINITY, 10) < 0);
}

/* clock_utc_tm gives gmtime_r's fields: around the epoch, leap days (1900, 2000, 2100),
 * the ends of years, negative times, and a spread of a million seconds apart up to 2400 */
static void test_utc_tm_as_gmtime(void **state)
{
	(void)state;
	int64_t edges[] = {0, -1, 1, 86399, 86400, -86400, -86401, 951782400 /* 2000-02-29 */,
			   951868799, 4107456000LL /* 2100-02-28 */, 4107542400LL, -2203891200LL /* 1900-02-28 */,
			   -2203804801LL, 1795960136, 253402300799LL /* 9999-12-31 23:59:59 */, -62135596800LL};
	size_t n = 0;
	for (int64_t t = -2300000000LL; t < 13600000000LL; t += 999983) /* a prime step: every hour and weekday */
		n++;
	for (size_t i = 0; i < sizeof edges / sizeof *edges + n; i++) {
		int64_t t = i < sizeof edges / sizeof *edges ? edges[i]
							     : -2300000000LL + (int64_t)(i - sizeof edges / sizeof *edges) * 999983;
		struct tm want, got;
		time_t tt = (time_t)t;
		assert_non_null(gmtime_r(&tt, &want));
		clock_utc_tm(t, &got);
		if (got.tm_year != want.tm_year || got.tm_mon != want.tm_mon || got.tm_mday != want.tm_mday ||
		    got.tm_hour != want.tm_hour || got.tm_min != want.tm_min || got.tm_sec != want.tm_sec ||
		    got.tm_wday != want.tm_wday || got.tm_yday != want.tm_yday || got.tm_isdst != 0)
			fail_msg("t=%lld: got %d-%d-%d %d:%d:%d wday %d yday %d, gmtime_r %d-%d-%d %d:%d:%d wday %d yday %d",
				 (long long)t, got.tm_year, got.tm_mon, got.tm_mday, got.tm_hour, got.tm_min, got.tm_sec,
				 got.tm_wday, got.tm_yday, want.tm_year, want.tm_mon, want.tm_mday, want.tm_hour,
				 want.tm_min, want.tm_sec, want.tm_wday, want.tm_yday);
	}
}

/* units_milli_2dp writes what printf("%.2f", milli / 1000.0) writes: every value to 2 000 000 mW
 * (2 kW: any GPU's power), a spread up to 1e15, ties, and the edges of the fast path to 2^64 - 1 */
static void test_milli_2dp_as_printf(void **state)
{
	(void)state;
	char want[64], got[64];
	uint64_t edges[] = {0, 4, 5, 6, 9, 10, 995, 994, 996, 999995, 1000000000000000ULL - 1,
			    1000000000000000ULL, 1000000000000005ULL, 9007199254740993ULL, UINT64_MAX};
	for (uint64_t i = 0; i < 2000000 + sizeof edges / sizeof *edges + 4000; i++) {
		uint64_t m = i < 2000000 ? i
			   : i < 2000000 + sizeof edges / sizeof *edges ? edges[i - 2000000]
									: (i - 2000000) * UINT64_C(249999999989); /* to 1e15 */
		snprintf(want, sizeof want, "%.2f", (double)m / 1000.0);
		int n = units_milli_2dp(m, got, sizeof got);
		if (strcmp(want, got) != 0 || n != (int)strlen(want))
			fail_msg("%llu mW: printf says %s, units_milli_2dp %s (%d)", (unsigned long long)m, want, got, n);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_size_table),
		cmocka_unit_test(test_size_edges),
		cmocka_unit_test(test_percent_table),
		cmocka_unit_test(test_count_duration_interval),
		cmocka_unit_test(test_round_as_libm),
		cmocka_unit_test(test_utc_tm_as_gmtime),
		cmocka_unit_test(test_milli_2dp_as_printf),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
