/*
 * test-spot.c — lib/spot*.c without a network: cloud names, detection from
 * a fake /sys/class/dmi/id, the date formats, and each cloud's documents —
 * what becomes an event, and that malformed ones (bad JSON, missing fields,
 * garbage dates, unknown actions) are refused rather than turned into a
 * preemption.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "device/gpu.h"
#include "spot/spot.h"
#include "tmpdir.h"

/* ---- names ---- */

static void test_names(void **state)
{
	(void)state;
	enum spot_cloud c;
	bool autod;
	static const struct { const char *s; enum spot_cloud c; } ok[] = {
		{"aws", SPOT_AWS}, {"gcp", SPOT_GCP}, {"azure", SPOT_AZURE}, {"none", SPOT_NONE},
	};
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		autod = true;
		assert_int_equal(spot_parse_cloud(ok[i].s, &c, &autod), GC_OK);
		assert_int_equal(c, ok[i].c);
		assert_false(autod);
		assert_string_equal(spot_cloud_name(c), ok[i].s);
	}
	assert_int_equal(spot_parse_cloud("auto", &c, &autod), GC_OK);
	assert_true(autod);
	assert_int_equal(c, SPOT_NONE);
	static const char *const bad[] = {"", "AWS", "gce", "aws ", "google", "azur", NULL};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(spot_parse_cloud(bad[i], &c, &autod), GC_EINVAL);
	assert_string_equal(spot_kind_name(SPOT_PREEMPT), "preempt");
	assert_string_equal(spot_kind_name(SPOT_WARNING), "warning");
	assert_string_equal(spot_kind_name(SPOT_ERROR), "error");
}

/* ---- detection ---- */

static char dmi[64];

static int mkdmi(void **state)
{
	(void)state;
	return tmpdir_make(dmi, sizeof dmi, "dmi");
}

static int rmdmi(void **state)
{
	(void)state;
	return tmpdir_remove(dmi);
}

static void put(const char *name, const char *content)
{
	char path[128];
	snprintf(path, sizeof path, "%s/%s", dmi, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(content, f);
	fclose(f);
}

static void clear(void)
{
	static const char *const names[] = {"sys_vendor", "product_name", "bios_vendor", "bios_version",
					    "chassis_asset_tag"};
	char path[128];
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		snprintf(path, sizeof path, "%s/%s", dmi, names[i]);
		unlink(path);
	}
}

static void test_detect(void **state)
{
	(void)state;
	clear();
	assert_int_equal(spot_detect(dmi), SPOT_NONE);
	assert_int_equal(spot_detect("/nonexistent/dmi"), SPOT_NONE);

	put("sys_vendor", "Amazon EC2\n");
	put("product_name", "p4d.24xlarge\n");
	assert_int_equal(spot_detect(dmi), SPOT_AWS);
	clear();
	put("sys_vendor", "Xen\n"); /* the older Xen instances */
	put("bios_version", "4.11.amazon\n");
	assert_int_equal(spot_detect(dmi), SPOT_AWS);
	clear();
	put("sys_vendor", "Google\n");
	put("product_name", "Google Compute Engine\n");
	put("bios_vendor", "Google\n");
	assert_int_equal(spot_detect(dmi), SPOT_GCP);
	clear();
	put("product_name", "Google Compute Engine");  /* no newline */
	assert_int_equal(spot_detect(dmi), SPOT_GCP);
	clear();
	put("sys_vendor", "Microsoft Corporation\n");
	put("product_name", "Virtual Machine\n");
	put("chassis_asset_tag", "7783-7084-3265-9085-8269-3286-77\n");
	assert_int_equal(spot_detect(dmi), SPOT_AZURE);
	/* Hyper-V on premises: Microsoft, but not Azure's asset tag */
	put("chassis_asset_tag", "None\n");
	assert_int_equal(spot_detect(dmi), SPOT_NONE);
	clear();
	put("sys_vendor", "QEMU\n");
	put("product_name", "Standard PC (Q35 + ICH9, 2009)\n");
	assert_int_equal(spot_detect(dmi), SPOT_NONE);
	/* near misses are not a cloud */
	put("sys_vendor", "Amazon EC2 Compatible\n");
	assert_int_equal(spot_detect(dmi), SPOT_NONE);
	put("sys_vendor", "Googlex\n");
	assert_int_equal(spot_detect(dmi), SPOT_NONE);
	/* a huge file is read within bounds (its first bytes only) */
	char *big = malloc(100001);
	assert_non_null(big);
	memset(big, 'A', 100000);
	big[100000] = '\0';
	put("sys_vendor", big);
	free(big);
	assert_int_equal(spot_detect(dmi), SPOT_NONE);
	/* trailing blanks do not matter */
	put("sys_vendor", "Amazon EC2  \r\n");
	assert_int_equal(spot_detect(dmi), SPOT_AWS);
	clear();
}

/* ---- dates ---- */

struct date_row {
	const char *in;
	int64_t ms;   /* -1: refused */
};

static void test_iso8601(void **state)
{
	(void)state;
	static const struct date_row rows[] = {
		{"2026-11-22T07:30:00Z", INT64_C(1795332600000)},
		{"2026-11-22T07:30:00.250Z", INT64_C(1795332600250)},
		{"2026-11-22T07:30:00.5Z", INT64_C(1795332600500)},
		{"2026-11-22T07:30:00.123456789Z", INT64_C(1795332600123)},
		{"2026-11-22T07:30:00+00:00", INT64_C(1795332600000)},
		{"2024-02-29T00:00:00Z", INT64_C(1709164800000)},
		{"1970-01-01T00:00:00Z", 0},
		{"", -1},
		{"2026-11-22", -1},
		{"2026-11-22T07:30:00", -1},            /* no zone */
		{"2026-11-22T07:30:00+01:00", -1},      /* AWS sends UTC */
		{"2026-11-22 07:30:00Z", -1},
		{"2026-11-22T07:30:00Zjunk", -1},
		{"2026-13-22T07:30:00Z", -1},
		{"2026-02-29T07:30:00Z", -1},           /* not a leap year */
		{"2026-11-31T07:30:00Z", -1},
		{"2026-11-22T24:00:00Z", -1},
		{"2026-11-22T07:60:00Z", -1},
		{"2026-11-22T07:30:00.Z", -1},
		{"2026-11-22T07:30:00.1234567890Z", -1},
		{"+026-11-22T07:30:00Z", -1},
		{"1969-12-31T23:59:59Z", -1},
		{"2O26-11-22T07:30:00Z", -1},
		{"null", -1},
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		int64_t ms = -2;
		int rc = spot_parse_iso8601(rows[i].in, &ms);
		if (rows[i].ms < 0) {
			if (rc != GC_EINVAL)
				fail_msg("'%s' was accepted as %lld", rows[i].in, (long long)ms);
		} else {
			if (rc != GC_OK || ms != rows[i].ms)
				fail_msg("'%s': rc %d, %lld, expected %lld", rows[i].in, rc, (long long)ms,
					 (long long)rows[i].ms);
		}
	}
	int64_t ms;
	assert_int_equal(spot_parse_iso8601(NULL, &ms), GC_EINVAL);
}

static void test_rfc1123(void **state)
{
	(void)state;
	static const struct date_row rows[] = {
		{"Mon, 19 Sep 2016 18:29:47 GMT", INT64_C(1474309787000)},
		{"Thu, 29 Feb 2024 00:00:00 GMT", INT64_C(1709164800000)},
		{"Tue, 19 Sep 2016 18:29:47 GMT", -1},   /* wrong weekday */
		{"Mon, 19 Sep 2016 18:29:47 UTC", -1},
		{"Mon, 19 Sep 2016 18:29:47", -1},
		{"Mon, 19 Sep 2016 18:29:47 GMTX", -1},
		{"Mon, 9 Sep 2016 18:29:47 GMT", -1},
		{"Mon, 19 Sept 2016 18:29:47 GMT", -1},
		{"Mon, 19 sep 2016 18:29:47 GMT", -1},
		{"Mon, 31 Sep 2016 18:29:47 GMT", -1},
		{"Mon, 19 Sep 2016 25:29:47 GMT", -1},
		{"Mon 19 Sep 2016 18:29:47 GMT ", -1},
		{"2016-09-19T18:29:47Z", -1},
		{"", -1},
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		int64_t ms = -2;
		int rc = spot_parse_rfc1123(rows[i].in, &ms);
		if (rows[i].ms < 0) {
			if (rc != GC_EINVAL)
				fail_msg("'%s' was accepted as %lld", rows[i].in, (long long)ms);
		} else {
			if (rc != GC_OK || ms != rows[i].ms)
				fail_msg("'%s': rc %d, %lld", rows[i].in, rc, (long long)ms);
		}
	}
}

/* ---- AWS ---- */

static int aws_action(const char *body, struct spot_event *ev)
{
	return spot_aws_parse_action(body, strlen(body), ev);
}

static void test_aws(void **state)
{
	(void)state;
	struct spot_event ev;
	assert_int_equal(aws_action("{\"action\": \"terminate\", \"time\": \"2026-11-22T07:30:00Z\"}", &ev), GC_OK);
	assert_int_equal(ev.kind, SPOT_PREEMPT);
	assert_int_equal(ev.cloud, SPOT_AWS);
	assert_string_equal(ev.action, "terminate");
	assert_int_equal(ev.deadline_ms, INT64_C(1795332600000));
	assert_int_equal(aws_action("{\"action\":\"stop\",\"time\":\"2026-11-22T07:30:00Z\"}", &ev), GC_OK);
	assert_string_equal(ev.action, "stop");
	assert_int_equal(aws_action("{\"time\":\"2026-11-22T07:30:00Z\",\"action\":\"hibernate\",\"x\":1}", &ev),
			 GC_OK);
	assert_string_equal(ev.action, "hibernate");
	static const char *const bad[] = {
		"",
		"{",
		"{\"action\": \"terminate\", \"time\": ",
		"[]",
		"null",
		"\"terminate\"",
		"{\"action\": \"terminate\"}",
		"{\"time\": \"2026-11-22T07:30:00Z\"}",
		"{\"action\": \"reboot\", \"time\": \"2026-11-22T07:30:00Z\"}",
		"{\"action\": \"TERMINATE\", \"time\": \"2026-11-22T07:30:00Z\"}",
		"{\"action\": 1, \"time\": \"2026-11-22T07:30:00Z\"}",
		"{\"action\": \"terminate\", \"time\": 1795332600}",
		"{\"action\": \"terminate\", \"time\": \"soon\"}",
		"{\"action\": \"terminate\", \"time\": \"2026-11-22T07:30:00Z\"} trailing",
		"{\"action\": \"terminate\", \"action\": \"stop\", \"time\": \"2026-11-22T07:30:00Z\"}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		if (aws_action(bad[i], &ev) != GC_EINVAL)
			fail_msg("accepted: %s", bad[i]);
	/* the body need not be NUL-terminated: only len bytes count */
	const char *cut = "{\"action\": \"terminate\", \"time\": \"2026-11-22T07:30:00Z\"}GARBAGE";
	assert_int_equal(spot_aws_parse_action(cut, strlen(cut) - 7, &ev), GC_OK);

	const char *rb = "{\"noticeTime\": \"2026-11-22T07:10:00Z\"}";
	assert_int_equal(spot_aws_parse_rebalance(rb, strlen(rb), &ev), GC_OK);
	assert_int_equal(ev.kind, SPOT_WARNING);
	assert_string_equal(ev.action, "rebalance");
	assert_int_equal(ev.deadline_ms, 0);
	assert_non_null(strstr(ev.detail, "2026-11-22T07:10:00Z"));
	static const char *const badrb[] = {"{}", "{\"noticeTime\": \"\"}", "{\"noticeTime\": 5}", "x"};
	for (size_t i = 0; i < sizeof badrb / sizeof badrb[0]; i++)
		assert_int_equal(spot_aws_parse_rebalance(badrb[i], strlen(badrb[i]), &ev), GC_EINVAL);
}

/* ---- Azure ---- */

static void test_azure(void **state)
{
	(void)state;
	const char *doc =
		"{\"DocumentIncarnation\": 5, \"Events\": ["
		"{\"EventId\": \"A1\", \"EventType\": \"Preempt\", \"ResourceType\": \"VirtualMachine\","
		" \"Resources\": [\"vm0\"], \"EventStatus\": \"Scheduled\", \"NotBefore\": \"Mon, 19 Sep 2016 18:29:47 GMT\"},"
		"{\"EventId\": \"B2\", \"EventType\": \"Reboot\", \"ResourceType\": \"VirtualMachine\","
		" \"Resources\": [\"vm0\", \"vm1\"], \"EventStatus\": \"Started\", \"NotBefore\": \"\"},"
		"{\"EventId\": \"C3\", \"EventType\": \"Dance\", \"NotBefore\": \"\"},"
		"{\"EventId\": \"D4\", \"EventType\": \"Preempt\", \"NotBefore\": \"tomorrow\"},"
		"{\"EventType\": \"Preempt\", \"NotBefore\": \"\"},"
		"{\"EventId\": \"\", \"EventType\": \"Preempt\"},"
		"{\"EventId\": 7, \"EventType\": \"Preempt\"},"
		"\"not an object\","
		"{\"EventId\": \"E5\", \"EventType\": \"Terminate\"},"
		"{\"EventId\": \"F6\", \"EventType\": \"Freeze\", \"NotBefore\": \"Thu, 29 Feb 2024 00:00:00 GMT\"},"
		"{\"EventId\": \"G7\", \"EventType\": \"Redeploy\", \"Resources\": \"vm0\"}"
		"]}";
	struct spot_event evs[8];
	size_t n = 99;
	assert_int_equal(spot_azure_parse(doc, strlen(doc), evs, 8, &n), GC_OK);
	assert_int_equal(n, 4);
	assert_string_equal(evs[0].id, "A1");
	assert_int_equal(evs[0].kind, SPOT_PREEMPT);
	assert_int_equal(evs[0].cloud, SPOT_AZURE);
	assert_string_equal(evs[0].action, "Preempt");
	assert_int_equal(evs[0].deadline_ms, INT64_C(1474309787000));
	assert_non_null(strstr(evs[0].detail, "vm0"));
	assert_string_equal(evs[1].id, "B2");
	assert_int_equal(evs[1].kind, SPOT_WARNING);
	assert_int_equal(evs[1].deadline_ms, 0);
	assert_string_equal(evs[2].id, "E5");
	assert_int_equal(evs[2].kind, SPOT_PREEMPT);
	assert_string_equal(evs[3].id, "F6");
	assert_int_equal(evs[3].kind, SPOT_WARNING);
	/* at most max */
	assert_int_equal(spot_azure_parse(doc, strlen(doc), evs, 1, &n), GC_OK);
	assert_int_equal(n, 1);

	const char *empty = "{\"DocumentIncarnation\": 0, \"Events\": []}";
	assert_int_equal(spot_azure_parse(empty, strlen(empty), evs, 8, &n), GC_OK);
	assert_int_equal(n, 0);
	static const char *const bad[] = {
		"", "{", "[]", "null",
		"{\"Events\": []}",
		"{\"DocumentIncarnation\": 1}",
		"{\"DocumentIncarnation\": \"1\", \"Events\": []}",
		"{\"DocumentIncarnation\": -1, \"Events\": []}",
		"{\"DocumentIncarnation\": 1, \"Events\": {}}",
		"{\"DocumentIncarnation\": 7, \"Events\": [{\"EventId\": ",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		n = 99;
		if (spot_azure_parse(bad[i], strlen(bad[i]), evs, 8, &n) != GC_EINVAL || n != 0)
			fail_msg("accepted: %s", bad[i]);
	}
	/* an EventId too long to be real is skipped, not truncated */
	char longdoc[512];
	char id[200];
	memset(id, 'x', sizeof id - 1);
	id[sizeof id - 1] = '\0';
	snprintf(longdoc, sizeof longdoc,
		 "{\"DocumentIncarnation\": 1, \"Events\": [{\"EventId\": \"%s\", \"EventType\": \"Preempt\"}]}", id);
	assert_int_equal(spot_azure_parse(longdoc, strlen(longdoc), evs, 8, &n), GC_OK);
	assert_int_equal(n, 0);
}

/* ---- GCP ---- */

static void test_gcp(void **state)
{
	(void)state;
	assert_int_equal(spot_gcp_parse_preempted("TRUE", 4), 1);
	assert_int_equal(spot_gcp_parse_preempted("FALSE", 5), 0);
	assert_int_equal(spot_gcp_parse_preempted("TRUE\n", 5), 1);
	assert_int_equal(spot_gcp_parse_preempted("TRUEX", 4), 1); /* only len bytes */
	static const char *const bad[] = {"", "true", "MAYBE", "TRUE FALSE", "1", "\n"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(spot_gcp_parse_preempted(bad[i], strlen(bad[i])), GC_EINVAL);
	assert_int_equal(spot_gcp_parse_preempted("TR\0UE", 5), GC_EINVAL);

	enum spot_kind k = SPOT_ERROR;
	assert_int_equal(spot_gcp_parse_maintenance("NONE", 4, &k), 0);
	assert_int_equal(k, SPOT_ERROR);
	const char *t = "TERMINATE_ON_HOST_MAINTENANCE";
	assert_int_equal(spot_gcp_parse_maintenance(t, strlen(t), &k), 1);
	assert_int_equal(k, SPOT_PREEMPT);
	const char *m = "MIGRATE_ON_HOST_MAINTENANCE";
	assert_int_equal(spot_gcp_parse_maintenance(m, strlen(m), &k), 1);
	assert_int_equal(k, SPOT_WARNING);
	assert_int_equal(spot_gcp_parse_maintenance("REBOOT", 6, &k), GC_EINVAL);
	assert_int_equal(spot_gcp_parse_maintenance("", 0, &k), GC_EINVAL);
	char big[200];
	memset(big, 'N', sizeof big);
	assert_int_equal(spot_gcp_parse_maintenance(big, sizeof big, &k), GC_EINVAL);
}

/* ---- starting a watcher: argument checks only (no request is made) ---- */

static void test_start_refused(void **state)
{
	(void)state;
	struct spot_watcher *w = (struct spot_watcher *)&w;
	char err[256] = "";
	assert_int_equal(spot_watch_start(&w, SPOT_NONE, NULL, err, sizeof err), GC_EINVAL);
	assert_null(w);
	struct spot_opts o = {.base_url = "ftp://169.254.169.254"};
	assert_int_equal(spot_watch_start(&w, SPOT_AWS, &o, err, sizeof err), GC_EINVAL);
	assert_null(w);
	assert_non_null(strstr(err, "ftp://"));
	o.base_url = "169.254.169.254";
	assert_int_equal(spot_watch_start(&w, SPOT_GCP, &o, err, sizeof err), GC_EINVAL);
	spot_watch_stop(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test_setup_teardown(test_detect, mkdmi, rmdmi),
		cmocka_unit_test(test_iso8601),
		cmocka_unit_test(test_rfc1123),
		cmocka_unit_test(test_aws),
		cmocka_unit_test(test_azure),
		cmocka_unit_test(test_gcp),
		cmocka_unit_test(test_start_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
