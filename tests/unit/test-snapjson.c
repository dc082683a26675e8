/*
 * test-snapjson.c — lib/device/snapjson.c: the JSON schema of a snapshot
 * (docs/json.md). Unsupported values are null, never 0; errors are named;
 * the selection filters GPUs and the topology matrix alike.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/gpu.h"

static json_t *snapshot_json(const char *node, const bool *which)
{
	char path[PATH_MAX];
	const char *src = getenv("GPUCTL_SRCDIR");
	snprintf(path, sizeof path, "%s/tests/cli/nodes/%s", src ? src : ".", node);
	gc_ctx *ctx = NULL;
	gc_open_opts o = {.sim_node = path};
	assert_int_equal(gc_ctx_open(&ctx, &o), GC_OK);
	gc_snapshot s = {0};
	assert_int_equal(gc_ctx_sample(ctx, &s, GC_ALL_VALUES, which, true), GC_OK);
	char *text = gc_snapshot_json(&s, which, "host1", true);
	assert_non_null(text);
	json_error_t err;
	json_t *root = json_loads(text, 0, &err);
	if (!root)
		fail_msg("invalid JSON: %s", err.text);
	free(text);
	gpu_snapshot_release(&s);
	gc_ctx_free(ctx);
	return root;
}

static void test_schema_and_values(void **state)
{
	(void)state;
	json_t *root = snapshot_json("full-2x.json", NULL);
	assert_string_equal(json_string_value(json_object_get(root, "schema")), "gpuctl.snapshot/1");
	assert_string_equal(json_string_value(json_object_get(root, "hostname")), "host1");
	json_t *drv = json_object_get(root, "driver");
	assert_string_equal(json_string_value(json_object_get(drv, "cuda_version")), "12.4");
	json_t *gpus = json_object_get(root, "gpus");
	assert_int_equal(json_array_size(gpus), 2);
	json_t *g0 = json_array_get(gpus, 0);
	json_t *mem = json_object_get(g0, "memory");
	assert_int_equal(json_integer_value(json_object_get(mem, "reserved")), 501481472);
	assert_true(json_is_null(json_object_get(g0, "fan_speed")));
	json_t *r = json_object_get(g0, "clock_event_reasons");
	assert_string_equal(json_string_value(json_object_get(r, "active")), "0x0000000000000044");
	assert_true(json_is_true(json_object_get(r, "throttled")));
	assert_int_equal(json_array_size(json_object_get(r, "reasons")), 2);
	json_t *procs = json_object_get(g0, "processes");
	assert_int_equal(json_array_size(procs), 3);
	json_t *p1 = json_array_get(procs, 1);
	assert_true(json_is_null(json_object_get(p1, "used_memory")));
	assert_false(json_is_true(json_object_get(p1, "visible")));
	assert_string_equal(json_string_value(json_object_get(p1, "type")), "compute+graphics");
	/* GPU 1: everything unsupported is null, not 0 */
	json_t *g1 = json_array_get(gpus, 1);
	assert_true(json_is_null(json_object_get(g1, "temperature")));
	assert_true(json_is_null(json_object_get(json_object_get(g1, "power"), "draw_mw")));
	assert_true(json_is_null(json_object_get(g1, "processes")));
	assert_int_equal(json_object_size(json_object_get(g1, "errors")), 0);
	json_t *topo = json_object_get(root, "topology");
	assert_string_equal(json_string_value(json_array_get(json_array_get(topo, 0), 1)), "SYS");
	json_decref(root);
}

static void test_errors_named(void **state)
{
	(void)state;
	json_t *root = snapshot_json("errors.json", NULL);
	json_t *g0 = json_array_get(json_object_get(root, "gpus"), 0);
	json_t *errors = json_object_get(g0, "errors");
	assert_string_equal(json_string_value(json_object_get(errors, "processes")),
			    "Insufficient Permissions");
	assert_string_equal(json_string_value(json_object_get(errors, "power.draw_mw")), "Unknown Error");
	assert_true(json_is_null(json_object_get(json_object_get(g0, "power"), "draw_mw")));
	json_decref(root);
}

static void test_selection(void **state)
{
	(void)state;
	bool which[2] = {false, true};
	json_t *root = snapshot_json("full-2x.json", which);
	json_t *gpus = json_object_get(root, "gpus");
	assert_int_equal(json_array_size(gpus), 1);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(gpus, 0), "index")), 1);
	json_t *topo = json_object_get(root, "topology");
	assert_int_equal(json_array_size(topo), 1);
	assert_string_equal(json_string_value(json_array_get(json_array_get(topo, 0), 0)), "X");
	json_decref(root);
}

static void test_mig(void **state)
{
	(void)state;
	json_t *root = snapshot_json("mig.json", NULL);
	json_t *gpus = json_object_get(root, "gpus");
	json_t *g0 = json_array_get(gpus, 0), *g1 = json_array_get(gpus, 1);
	assert_true(json_is_true(json_object_get(g0, "mig_mode")));
	json_t *devs = json_object_get(g0, "mig_devices");
	assert_int_equal(json_array_size(devs), 3);
	json_t *d = json_array_get(devs, 1);
	assert_int_equal(json_integer_value(json_object_get(d, "index")), 1);
	assert_string_equal(json_string_value(json_object_get(d, "uuid")), "MIG-ae9a37c7-4e38-5a4c-8229-7f07dc126721");
	assert_string_equal(json_string_value(json_object_get(d, "profile")), "1g.10gb");
	json_t *mem = json_object_get(d, "memory");
	assert_int_equal(json_integer_value(json_object_get(mem, "total")), 10200547328LL);
	assert_int_equal(json_integer_value(json_object_get(mem, "used")), 14680064);
	assert_int_equal(json_integer_value(json_object_get(mem, "free")), 10200547328LL - 14680064);
	assert_int_equal(json_integer_value(json_object_get(d, "gpu_instance_id")), 9);
	assert_int_equal(json_integer_value(json_object_get(d, "compute_instance_id")), 0);
	/* MIG off: false and no devices */
	assert_true(json_is_false(json_object_get(g1, "mig_mode")));
	assert_int_equal(json_array_size(json_object_get(g1, "mig_devices")), 0);
	assert_true(json_is_array(json_object_get(g1, "mig_devices")));
	json_decref(root);

	/* a GPU whose driver does not report MIG: null, never a made-up false or [] */
	root = snapshot_json("r410.json", NULL);
	g0 = json_array_get(json_object_get(root, "gpus"), 0);
	assert_true(json_is_null(json_object_get(g0, "mig_mode")));
	assert_non_null(json_object_get(g0, "mig_devices"));
	assert_true(json_is_null(json_object_get(g0, "mig_devices")));
	json_decref(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_schema_and_values),
		cmocka_unit_test(test_errors_named),
		cmocka_unit_test(test_selection),
		cmocka_unit_test(test_mig),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
