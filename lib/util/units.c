/*
 * units.c — parse sizes ("20G", "1.5TiB", "20000MB") and percentages
 * ("30", "30%"), counts, durations and intervals from the command line;
 * see units.h for the grammar.
 *
 * No strtod for sizes: it accepts "nan", "inf", hex and exponents, depends on the
 * locale's decimal point, and a double cannot hold every 64-bit byte count.
 * Digits are read by hand and a decimal fraction is multiplied out exactly.
 */
#include "util/units.h"

#include "util/errbuf.h"
#include "gpuctl/gpuctl.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static bool is_digit(char c)
{
	return c >= '0' && c <= '9'; /* not isdigit(): no locale surprises */
}

static const struct {
	const char *name;
	uint64_t mult;
} unit_table[] = {
	{"B", 1},
	{"K", UINT64_C(1) << 10}, {"KiB", UINT64_C(1) << 10}, {"KB", UINT64_C(1000)},
	{"M", UINT64_C(1) << 20}, {"MiB", UINT64_C(1) << 20}, {"MB", UINT64_C(1000000)},
	{"G", UINT64_C(1) << 30}, {"GiB", UINT64_C(1) << 30}, {"GB", UINT64_C(1000000000)},
	{"T", UINT64_C(1) << 40}, {"TiB", UINT64_C(1) << 40}, {"TB", UINT64_C(1000000000000)},
};

/*
 * floor(mult * 0.<digits>) for the n fraction digits, exactly: multiply the
 * decimal fraction by mult digit by digit from the right; what carries out
 * of the first digit is the whole part. (digit * mult + carry < 10 * 2^40.)
 */
static uint64_t fraction_times(const char *digits, size_t n, uint64_t mult)
{
	uint64_t carry = 0;
	while (n-- > 0)
		carry = ((uint64_t)(digits[n] - '0') * mult + carry) / 10;
	return carry;
}

int units_parse_size(const char *s, uint64_t *bytes, char *err, size_t errlen)
{
	if (!s || !*s) {
		errbuf_set(err, errlen, "empty size (use a number and a unit, e.g. 20G)");
		return GC_EINVAL;
	}
	if (strnlen(s, UNITS_MAX_INPUT + 1) > UNITS_MAX_INPUT) {
		errbuf_set(err, errlen, "size too long (more than %d characters)", UNITS_MAX_INPUT);
		return GC_EINVAL;
	}
	if (*s == '-') {
		errbuf_set(err, errlen, "a size cannot be negative ('%s')", s);
		return GC_EINVAL;
	}
	const char *p = s;
	uint64_t whole = 0;
	bool overflow = false;
	size_t ndigits = 0;
	for (; is_digit(*p); p++, ndigits++) {
		unsigned d = (unsigned)(*p - '0');
		if (whole > (UINT64_MAX - d) / 10)
			overflow = true;
		else
			whole = whole * 10 + d;
	}
	const char *frac = p;
	size_t nfrac = 0;
	if (*p == '.') {
		frac = ++p;
		for (; is_digit(*p); p++)
			nfrac++;
	}
	if (ndigits + nfrac == 0) {
		errbuf_set(err, errlen, "'%s' is not a size (use a number and a unit, e.g. 20G)", s);
		return GC_EINVAL;
	}
	while (*p == ' ' || *p == '\t')
		p++;
	if (!*p) {
		errbuf_set(err, errlen, "a size needs a unit, e.g. 20000M or 20G");
		return GC_EINVAL;
	}
	uint64_t mult = 0;
	for (size_t i = 0; i < sizeof unit_table / sizeof unit_table[0]; i++) {
		if (strcasecmp(p, unit_table[i].name) == 0) {
			mult = unit_table[i].mult;
			break;
		}
	}
	if (!mult) {
		if (is_digit(*p) || *p == '.')
			errbuf_set(err, errlen, "'%s' is not a size (use a number and a unit, e.g. 20G)", s);
		else
			errbuf_set(err, errlen, "unknown unit '%s' (use M, G, MiB, GiB, MB, GB ...)", p);
		return GC_EINVAL;
	}
	uint64_t part = fraction_times(frac, nfrac, mult);
	if (overflow || whole > UINT64_MAX / mult || whole * mult > UINT64_MAX - part) {
		errbuf_set(err, errlen, "size '%s' is too large (more than 2^64-1 bytes)", s);
		return GC_EINVAL;
	}
	*bytes = whole * mult + part;
	return 0;
}

int units_parse_percent(const char *s, int *pct, char *err, size_t errlen)
{
	if (!s || !*s) {
		errbuf_set(err, errlen, "empty percentage (use 0 to 100)");
		return GC_EINVAL;
	}
	if (strnlen(s, UNITS_MAX_INPUT + 1) > UNITS_MAX_INPUT) {
		errbuf_set(err, errlen, "percentage too long (more than %d characters)", UNITS_MAX_INPUT);
		return GC_EINVAL;
	}
	if (*s == '-') {
		errbuf_set(err, errlen, "a percentage cannot be negative ('%s')", s);
		return GC_EINVAL;
	}
	const char *p = s;
	unsigned v = 0;
	for (; is_digit(*p); p++)
		if (v <= 100)
			v = v * 10 + (unsigned)(*p - '0'); /* stops growing past 100: no overflow */
	if (p == s || (*p == '%' ? p[1] != '\0' : *p != '\0')) {
		errbuf_set(err, errlen, "'%s' is not a percentage (a whole number from 0 to 100)", s);
		return GC_EINVAL;
	}
	if (v > 100) {
		errbuf_set(err, errlen, "percentage '%s' is more than 100", s);
		return GC_EINVAL;
	}
	*pct = (int)v;
	return 0;
}

int units_parse_count(const char *opt, const char *arg, long *out, char *err, size_t errlen)
{
	char *end;
	errno = 0;
	long v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < 1) {
		errbuf_set(err, errlen, "invalid %s value '%s' (expected a positive whole number)", opt, arg);
		return GC_EINVAL;
	}
	*out = v;
	return GC_OK;
}

int units_parse_duration(const char *opt, const char *arg, long long *ms, char *err, size_t errlen)
{
	char *end;
	errno = 0;
	double v = strtod(arg, &end);
	double unit = 1000;
	if (end != arg && *end && !end[1]) {
		switch (*end) {
		case 's': unit = 1000; end++; break;
		case 'm': unit = 60e3; end++; break;
		case 'h': unit = 3600e3; end++; break;
		case 'd': unit = 86400e3; end++; break;
		}
	}
	if (errno || end == arg || *end || !(v > 0 && v * unit < 1e15)) { /* also refuses NaN */
		errbuf_set(err, errlen, "invalid %s '%s' (expected a duration such as 90, 30s, 5m or 2h)", opt, arg);
		return GC_EINVAL;
	}
	*ms = (long long)(v * unit);
	return GC_OK;
}

int units_parse_interval(const char *opt, const char *arg, double *out, char *err, size_t errlen)
{
	char *end;
	errno = 0;
	double v = strtod(arg, &end);
	if (errno || end == arg || *end || !(v > 0 && v <= 86400)) { /* also refuses NaN */
		errbuf_set(err, errlen,
			   "invalid %s value '%s' (expected seconds, more than 0 and at most 86400, e.g. 1 or 0.5)", opt,
			   arg);
		return GC_EINVAL;
	}
	*out = v;
	return GC_OK;
}

int gc_parse_size(const char *s, uint64_t *bytes, char *err, size_t errlen)
{
	if (!s || !bytes) {
		errbuf_set(err, errlen, "gc_parse_size: no input or no output");
		return GC_EINVAL;
	}
	return units_parse_size(s, bytes, err, errlen);
}

int gc_parse_duration(const char *s, int64_t *ms, char *err, size_t errlen)
{
	if (!s || !ms) {
		errbuf_set(err, errlen, "gc_parse_duration: no input or no output");
		return GC_EINVAL;
	}
	long long v;
	int rc = units_parse_duration("duration", s, &v, err, errlen);
	if (rc == GC_OK)
		*ms = (int64_t)v;
	return rc;
}

int units_parse_signal(const char *opt, const char *arg, int *sig, char *err, size_t errlen)
{
	static const struct {
		const char *name;
		int sig;
	} names[] = {{"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"HUP", SIGHUP}, {"INT", SIGINT}, {"TERM", SIGTERM},
		     {"QUIT", SIGQUIT}, {"WINCH", SIGWINCH}, {"CONT", SIGCONT}};
	const char *p = strncasecmp(arg, "SIG", 3) == 0 ? arg + 3 : arg;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strcasecmp(p, names[i].name) == 0) {
			*sig = names[i].sig;
			return 0;
		}
	char *end;
	long v = strtol(arg, &end, 10);
	if (end != arg && !*end && v >= 1 && v < NSIG && v != SIGKILL && v != SIGSTOP) {
		*sig = (int)v;
		return 0;
	}
	errbuf_set(err, errlen, "invalid %s '%s' (expected a signal name such as USR1, or its number)", opt, arg);
	return GC_EINVAL;
}

double units_round(double v, double scale)
{
	double t = v * scale;
	/* beyond 2^52 every double is whole already (and NaN and the infinities stay as they are) */
	if (!(t < 4503599627370496.0 && t > -4503599627370496.0))
		return t / scale;
	double i = (double)(long long)t, f = t - i; /* t's whole part (toward zero) and its exact rest */
	if (f >= 0.5)
		i += 1;
	else if (f <= -0.5)
		i -= 1;
	return __builtin_copysign(i, t) / scale; /* -0.4 rounds to -0, as round() has it */
}

char *units_dec(uint64_t v, char *end)
{
	do {
		*--end = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return end;
}

int units_milli_2dp(uint64_t milli, char *buf, size_t len)
{
	/* A tie (the third decimal a 5) is decided by the double's binary value, as printf
	 * sees it; so is a value too large for the argument below. */
	if (milli % 10 == 5 || milli >= UINT64_C(1000000000000000) || len < 24)
		return snprintf(buf, len, "%.2f", (double)milli / 1000.0);
	/* Otherwise the exact value milli/1000 is at least 0.001 from a rounding boundary
	 * (x.xx5), and the double printf sees is within value * 2^-52 < 0.0003 of it: the
	 * nearest hundredth of the exact value is what printf prints. */
	uint64_t h = milli / 10 + (milli % 10 > 5);
	char tmp[24], *e = tmp + sizeof tmp, *d = e;
	*--d = (char)('0' + h % 10);
	*--d = (char)('0' + h / 10 % 10);
	*--d = '.';
	d = units_dec(h / 100, d);
	int n = (int)(e - d);
	memcpy(buf, d, (size_t)n);
	buf[n] = '\0';
	return n;
}
