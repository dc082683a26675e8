/*
 * explain-origin.c — where a log line came from, read off its start
 * (explain.h): the rank that printed it and the time it carries.
 *
 * A multi-rank log is the ranks' outputs interleaved, each line tagged by
 * whatever gathered it, often several taggers deep: Kubernetes or journald
 * first (a time, a stream, a host and a program), then the launcher (pdsh's
 * or DeepSpeed's "host: ", srun -l's "N: ", OpenMPI's "[1,N]<stderr>:",
 * torchrun's "[defaultN]:" or torch's own "[rankN]:"), then the program's
 * logger (glog's and c10's "E0424 01:17:25.03", Python logging's
 * "2024-04-24 01:17:25,031", the kernel's "[74785.660366]"). The tags are
 * read in any order until something else comes; text after them that names
 * a rank ("[Rank 3]", "[PG 0 (default_pg) Rank 3]": NCCL's and torch's
 * watchdogs) counts when no tag did.
 *
 * Times of different kinds do not compare (a kernel's seconds since boot,
 * glog's month and day without a year): each kind is its own clock.
 */
#include "diagnose/explain.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static bool digits(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isdigit((unsigned char)p[i]))
			return false;
	return true;
}

static int num(const char *p, size_t n)
{
	int v = 0;
	for (size_t i = 0; i < n; i++)
		v = v * 10 + (p[i] - '0');
	return v;
}

/* "HH:MM:SS" and an optional ".fraction" or ",fraction" at p: seconds into the day, *end after it; -1 */
static double clock_at(const char *p, const char **end)
{
	if (!digits(p, 2) || p[2] != ':' || !digits(p + 3, 2) || p[5] != ':' || !digits(p + 6, 2))
		return -1;
	int h = num(p, 2), m = num(p + 3, 2), s = num(p + 6, 2);
	if (h > 23 || m > 59 || s > 60)
		return -1;
	double t = h * 3600 + m * 60 + s;
	p += 8;
	if ((*p == '.' || *p == ',') && isdigit((unsigned char)p[1])) {
		double scale = 0.1;
		for (p++; isdigit((unsigned char)*p); p++, scale /= 10)
			t += (*p - '0') * scale;
	}
	*end = p;
	return t;
}

/* days since 1970-01-01 of a civil date (Howard Hinnant's days_from_civil) */
static long days_from_civil(int y, int m, int d)
{
	y -= m <= 2;
	long era = (y >= 0 ? y : y - 399) / 400;
	long yoe = y - era * 400;
	long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static int month_of(const char *p)
{
	static const char names[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
	for (int i = 0; i < 12; i++)
		if (strncmp(p, names + 3 * i, 3) == 0)
			return i + 1;
	return 0;
}

/* a time at p, of some kind: *kind and the seconds, *end after it (and a closing ']'); false when none */
static bool time_at(const char *p, enum explain_time_kind *kind, double *ts, const char **end)
{
	bool br = *p == '[';
	const char *q = p + br, *e;
	double t;
	/* ISO 8601 and Python logging: 2024-04-24T01:17:25.031Z, 2024-04-24 01:17:25,031 */
	if (digits(q, 4) && q[4] == '-' && digits(q + 5, 2) && q[7] == '-' && digits(q + 8, 2) &&
	    (q[10] == 'T' || q[10] == ' ' || q[10] == '_') && (t = clock_at(q + 11, &e)) >= 0) {
		int y = num(q, 4), mo = num(q + 5, 2), d = num(q + 8, 2);
		if (mo < 1 || mo > 12 || d < 1 || d > 31)
			return false;
		t += (double)days_from_civil(y, mo, d) * 86400;
		if (*e == 'Z') {
			e++;
		} else if ((*e == '+' || *e == '-') && digits(e + 1, 2)) {
			int off = num(e + 1, 2) * 60;
			const char *x = e + 3 + (e[3] == ':');
			if (digits(x, 2)) {
				off += num(x, 2);
				x += 2;
			}
			t -= (*e == '+' ? 1 : -1) * off * 60.0;
			e = x;
		}
		*kind = EXPLAIN_TIME_CIVIL;
		goto done;
	}
	/* glog and c10: E0424 01:17:25.031978 (the month without its zero: E424) */
	if (strchr("EWIF", *q) && *q && isdigit((unsigned char)q[1])) {
		size_t n = strspn(q + 1, "0123456789");
		if ((n == 3 || n == 4) && q[1 + n] == ' ' && (t = clock_at(q + 2 + n, &e)) >= 0) {
			int mo = num(q + 1, n - 2), d = num(q + n - 1, 2);
			if (mo < 1 || mo > 12 || d < 1 || d > 31)
				return false;
			t += ((mo - 1) * 31 + d - 1) * 86400.0;
			*kind = EXPLAIN_TIME_GLOG;
			goto done;
		}
	}
	/* syslog and journald: May  1 01:17:25; dmesg -T: [Wed May  1 01:17:25 2024] */
	const char *s = q;
	if (br && isupper((unsigned char)s[0]) && isalpha((unsigned char)s[1]) && isalpha((unsigned char)s[2]) && s[3] == ' ')
		s += 4;
	int mo = month_of(s);
	if (mo && s[3] == ' ') {
		const char *d = s + 4 + (s[4] == ' ');
		size_t n = strspn(d, "0123456789");
		if ((n == 1 || n == 2) && d[n] == ' ' && (t = clock_at(d + n + 1, &e)) >= 0) {
			int day = num(d, n);
			if (*e == ' ' && digits(e + 1, 4)) {
				t += (double)days_from_civil(num(e + 1, 4), mo, day) * 86400;
				e += 5;
				*kind = EXPLAIN_TIME_CIVIL;
			} else {
				t += ((mo - 1) * 31 + day - 1) * 86400.0;
				*kind = EXPLAIN_TIME_SYSLOG;
			}
			goto done;
		}
	}
	/* the kernel's seconds since boot: [74785.660366] */
	if (br) {
		const char *x = q + strspn(q, " ");
		size_t n = strspn(x, "0123456789");
		if (n && x[n] == '.' && isdigit((unsigned char)x[n + 1])) {
			t = strtod(x, (char **)&e);
			if (*e == ']') {
				*kind = EXPLAIN_TIME_BOOT;
				goto done;
			}
		}
	}
	return false;
done:
	if (br && *kind == EXPLAIN_TIME_GLOG) {
		/* c10's "[E424 01:17:25.031978332 ProcessGroupNCCL.cpp:1515]": the bracket holds the source too */
		const char *c = memchr(e, ']', strnlen(e, 160));
		if (!c)
			return false;
		e = c + 1;
	} else if (br && *e == ']') {
		e++;
	} else if (br) {
		return false; /* "[2024-04-24 01:17:25 something]": not a tag of its own */
	}
	if (*e == ':')
		e++;
	*ts = t;
	*end = e;
	return true;
}

/* a rank tag at p: [rank3]: [default3]: [1,3]<stderr>: 3: ; the rank, *end after it; -1 */
static int rank_at(const char *p, const char **end)
{
	const char *q = p;
	if (*q == '[') {
		q++;
		if (strncmp(q, "rank", 4) == 0)
			q += 4;
		else if (strncmp(q, "default", 7) == 0)
			q += 7;
		else if (isdigit((unsigned char)*q) && q[strspn(q, "0123456789")] == ',')
			q += strspn(q, "0123456789") + 1; /* OpenMPI's [JOB,RANK] */
		else
			return -1;
		size_t n = strspn(q, "0123456789");
		if (!n || n > 7 || q[n] != ']')
			return -1;
		int r = num(q, n);
		q += n + 1;
		if (*q == '<') {
			const char *c = strchr(q, '>');
			if (!c || c - q > 8)
				return -1;
			q = c + 1;
		}
		if (*q == ':')
			q++;
		*end = q;
		return r;
	}
	/* srun -l: "3: " */
	size_t n = strspn(q, "0123456789");
	if (n && n <= 6 && q[n] == ':' && q[n + 1] == ' ') {
		*end = q + n + 2;
		return num(q, n);
	}
	return -1;
}

/* a rank named in the text: "[Rank 3]", "[PG 0 (default_pg) Rank 3]"; -1 */
static int rank_named(const char *line)
{
	for (const char *p = line; (p = strstr(p, "Rank ")); p += 5) {
		size_t n = strspn(p + 5, "0123456789");
		if (n && n <= 7 && p[5 + n] == ']' && (p == line || p[-1] == '[' || p[-1] == ' '))
			return num(p + 5, n);
	}
	return -1;
}

void explain_origin(const char *line, struct explain_origin *o)
{
	o->rank = -1;
	o->time_kind = EXPLAIN_TIME_NONE;
	o->time = 0;
	const char *p = line;
	bool host_skipped = false;
	for (int step = 0; step < 8; step++) {
		p += strspn(p, " \t");
		const char *e;
		enum explain_time_kind kind;
		int r;
		double t;
		if (time_at(p, &kind, &t, &e)) {
			if (o->time_kind == EXPLAIN_TIME_NONE) {
				o->time_kind = kind;
				o->time = t;
			}
			p = e;
			continue;
		}
		if ((r = rank_at(p, &e)) >= 0) {
			if (o->rank < 0)
				o->rank = r;
			p = e;
			continue;
		}
		/* Kubernetes' (CRI) stream and tag after its time: "stderr F " */
		if ((strncmp(p, "stdout ", 7) == 0 || strncmp(p, "stderr ", 7) == 0) && (p[7] == 'F' || p[7] == 'P') &&
		    p[8] == ' ') {
			p += 9;
			continue;
		}
		/* a host and a program after a syslog time ("gpu-node-1 python[4242]: ", "node kernel: "),
		 * or pdsh's and DeepSpeed's host ("worker-0: "): once, and only at a word that ends in ':' */
		if (!host_skipped) {
			size_t n = strcspn(p, " :[");
			if (n && p[n] == ':' && p[n + 1] == ' ') {
				host_skipped = true;
				p += n + 2;
				continue;
			}
			if (n && p[n] == ' ' && o->time_kind == EXPLAIN_TIME_SYSLOG) {
				const char *prog = p + n + 1;
				size_t k = strcspn(prog, " :");
				if (k && prog[k] == ':' && prog[k + 1] == ' ') {
					host_skipped = true;
					p = prog + k + 2;
					continue;
				}
			}
		}
		break;
	}
	if (o->rank < 0)
		o->rank = rank_named(p);
}
