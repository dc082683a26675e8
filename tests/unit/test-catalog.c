/*
 * test-catalog.c — lib/advise/catalog.c and lib/util/csv.c: SkyPilot-style catalogs in
 * any column order, empty prices, quoted fields, CRLF, comments, the
 * shipped snapshot, and malformed input refused with the line named.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advise/catalog.h"
#include "device/gpu.h"
#include "util/csv.h"

static int load(catalog *c, const char *text, char *err, size_t errlen)
{
	return catalog_load_buf(c, text, strlen(text), "test.csv", "aws", err, errlen);
}

static void test_skypilot_order(void **state)
{
	(void)state;
	catalog c = {0};
	char err[256];
	/* SkyPilot's GCP column order, a CPU-only row, a fractional GPU, an empty spot price */
	const char *t = "InstanceType,vCPUs,MemoryGiB,AcceleratorName,AcceleratorCount,GpuInfo,Region,"
			"AvailabilityZone,Price,SpotPrice\n"
			"n2-standard-8,8.0,32.0,,,,us-central1,us-central1-a,0.38,0.09\n"
			"g2-standard-4,4.0,16.0,L4,1,,us-central1,us-central1-a,0.70683,0.28184\n"
			"g6f.large,2.0,8.0,L4,0.125,,us-east-1,,0.2,\n"
			"a3-highgpu-8g,208.0,1872.0,H100,8.0,,us-central1,,43.06615,\n";
	assert_int_equal(load(&c, t, err, sizeof err), 0);
	assert_int_equal(c.n, 2);
	assert_int_equal(c.skipped, 2);
	assert_string_equal(c.rows[0].instance, "g2-standard-4");
	assert_string_equal(c.rows[0].acc, "L4");
	assert_int_equal(c.rows[0].count, 1);
	assert_true(c.rows[0].price == 0.70683 && c.rows[0].spot == 0.28184);
	assert_string_equal(c.rows[0].cloud, "aws"); /* no Cloud column: the caller's */
	assert_int_equal(c.rows[1].count, 8);
	assert_true(c.rows[1].spot < 0); /* empty: unknown, not 0 */
	catalog_free(&c);
}

/* SkyPilot's v8 AWS layout: a GpuInfo dict in quotes, an Arch column, one row per zone: one row per region */
static void test_zones_merge(void **state)
{
	(void)state;
	catalog c = {0};
	char err[256];
	const char *t = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region,"
			"AvailabilityZone,Arch\n"
			"g6.2xlarge,L4,1.0,8.0,32.0,\"{'Gpus': [{'Name': 'L4', 'Count': 1}], 'TotalGpuMemoryInMiB': 22888}\","
			"0.9776,0.5772,us-east-1,use1-az1,x86_64\n"
			"p5.48xlarge,H100,8.0,192.0,2048.0,,55.04,18.1,us-east-1,use1-az1,x86_64\n"
			"g6.2xlarge,L4,1.0,8.0,32.0,,0.9776,0.4101,us-east-1,use1-az4,x86_64\n"
			"g6.2xlarge,L4,1.0,8.0,32.0,,0.9776,,us-east-1,use1-az6,x86_64\n"
			"g6.2xlarge,L4,1.0,8.0,32.0,,1.0123,0.3999,us-west-2,usw2-az1,x86_64\n"
			"p5.48xlarge,H100,8.0,192.0,2048.0,,55.04,14.2,us-east-1,use1-az2,x86_64\n";
	assert_int_equal(load(&c, t, err, sizeof err), 0);
	assert_int_equal(c.n, 3); /* g6 us-east-1, p5 us-east-1, g6 us-west-2, in first-zone order */
	assert_string_equal(c.rows[0].instance, "g6.2xlarge");
	assert_string_equal(c.rows[0].region, "us-east-1");
	assert_true(c.rows[0].price == 0.9776 && c.rows[0].spot == 0.4101);
	assert_string_equal(c.rows[0].zone, "use1-az4");
	assert_string_equal(c.rows[1].instance, "p5.48xlarge");
	assert_true(c.rows[1].spot == 14.2);
	assert_string_equal(c.rows[1].zone, "use1-az2");
	assert_string_equal(c.rows[2].region, "us-west-2");
	assert_true(c.rows[2].spot == 0.3999);
	catalog_free(&c);
}

static void test_quotes_crlf_comments(void **state)
{
	(void)state;
	catalog c = {0};
	char err[256];
	const char *t = "\xEF\xBB\xBF# snapshot: 2026-11-22\r\n"
			"# a comment\r\n"
			"Cloud,Region,Price,SpotPrice,AcceleratorCount,AcceleratorName,InstanceType\r\n"
			"gcp,\"us-east4\",\"9.8\",,\"2\",\"H100\",\"odd, \"\"quoted\"\" name\"\r\n"
			"\r\n"
			"azure,eastus,1.204,0.143517,1,T4,Standard_NC16as_T4_v3\r\n";
	assert_int_equal(load(&c, t, err, sizeof err), 0);
	assert_string_equal(c.date, "2026-11-22");
	assert_int_equal(c.n, 2);
	assert_string_equal(c.rows[0].instance, "odd, \"quoted\" name");
	assert_string_equal(c.rows[0].cloud, "gcp");
	assert_string_equal(c.rows[0].region, "us-east4");
	assert_string_equal(c.rows[1].cloud, "azure");
	assert_true(c.rows[1].spot == 0.143517);
	catalog_free(&c);
}

static void test_bad(void **state)
{
	(void)state;
	catalog c = {0};
	char err[256];
	assert_int_equal(load(&c, "InstanceType,AcceleratorName,AcceleratorCount,Region\nx,T4,1,us\n", err,
			      sizeof err), GC_EINVAL);
	assert_non_null(strstr(err, "no 'Price' column"));
	assert_int_equal(load(&c, "", err, sizeof err), GC_EINVAL);
	assert_non_null(strstr(err, "empty"));
	assert_int_equal(load(&c, "InstanceType,AcceleratorName,AcceleratorCount,Price,Region\nx,T4,1,cheap,us\n",
			      err, sizeof err), GC_EINVAL);
	assert_non_null(strstr(err, "line 2"));
	assert_int_equal(load(&c, "InstanceType,AcceleratorName,AcceleratorCount,Price,Region\n\"x,T4,1,1,us\n",
			      err, sizeof err), GC_EINVAL);
	assert_non_null(strstr(err, "never closed"));
	assert_int_equal(load(&c, "InstanceType,AcceleratorName,AcceleratorCount,Price,Region\n\"x\"y,T4,1,1,us\n",
			      err, sizeof err), GC_EINVAL);
	assert_non_null(strstr(err, "after a closing quote"));
	const char bin[] = "InstanceType,AcceleratorName,AcceleratorCount,Price,Region\nx\0y,T4,1,1,us\n";
	assert_int_equal(catalog_load_buf(&c, bin, sizeof bin - 1, "bin", NULL, err, sizeof err), GC_EINVAL);
	assert_non_null(strstr(err, "NUL"));
	assert_int_equal(catalog_load(&c, "/nonexistent/catalog.csv", "aws", err, sizeof err), GC_ENOTFOUND);
	assert_non_null(strstr(err, "/nonexistent/catalog.csv"));
	assert_int_equal(catalog_load(&c, "/tmp", "aws", err, sizeof err), GC_EINVAL);
	assert_non_null(strstr(err, "directory"));
	catalog_free(&c);
}

/* "# snapshot:" and spaces to the end of the buffer, with no NUL after it: nothing read past len
 * (ASan's heap-buffer-overflow in snapshot_date before the fix; issue 17, low) */
static void test_snapshot_no_nul(void **state)
{
	(void)state;
	static const char text[] = "# snapshot:   ";
	size_t n = sizeof text - 1;
	char *t = malloc(n);
	assert_non_null(t);
	memcpy(t, text, n);
	catalog c = {0};
	char err[256];
	assert_true(catalog_load_buf(&c, t, n, "cut.csv", "aws", err, sizeof err) < 0);
	assert_string_equal(c.date, "");
	catalog_free(&c);
	free(t);
}

static void test_big_field(void **state)
{
	(void)state;
	size_t n = CSV_FIELD_MAX + 100;
	char *t = malloc(n + 64);
	assert_non_null(t);
	strcpy(t, "a,b\n");
	memset(t + 4, 'x', n);
	strcpy(t + 4 + n, ",y\n");
	struct csv r;
	char err[256];
	csv_init(&r, t, strlen(t), 0);
	assert_int_equal(csv_next(&r, err, sizeof err), 1);
	assert_int_equal(csv_next(&r, err, sizeof err), GC_EINVAL);
	assert_non_null(strstr(err, "longer than"));
	csv_release(&r);
	free(t);
}

static void test_shipped(void **state)
{
	(void)state;
	const char *src = getenv("GPUCTL_SRCDIR");
	static const char *const clouds[] = {"aws", "gcp", "azure"};
	for (int i = 0; i < 3; i++) {
		catalog c = {0};
		char path[4096], err[512];
		snprintf(path, sizeof path, "%s/data/catalog/%s.csv", src ? src : ".", clouds[i]);
		if (catalog_load(&c, path, clouds[i], err, sizeof err))
			fail_msg("%s", err);
		assert_true(c.n >= 30);
		assert_string_equal(c.date, "2026-11-22");
		for (size_t k = 0; k < c.n; k++)
			assert_true(c.rows[k].price > 0 || c.rows[k].spot > 0);
		catalog_free(&c);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_skypilot_order),
		cmocka_unit_test(test_zones_merge),
		cmocka_unit_test(test_quotes_crlf_comments),
		cmocka_unit_test(test_bad),
		cmocka_unit_test(test_big_field),
		cmocka_unit_test(test_snapshot_no_nul),
		cmocka_unit_test(test_shipped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
