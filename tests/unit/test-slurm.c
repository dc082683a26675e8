/*
 * test-slurm.c — lib/diagnose/slurm.c: which gres.conf texts make Slurm set
 * CUDA_VISIBLE_DEVICES, and the verdicts of gpuctl slurm doctor for what
 * the Slurm client printed on a working, a broken and a GPU-less cluster.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "diagnose/slurm.h"

static void test_gres(void **state)
{
	(void)state;
	static const struct { const char *text; int want; } rows[] = {
		{"Name=gpu File=/dev/nvidia[0-3]\n", 1},
		{"NodeName=n[1-4] Name=gpu Type=a100 File=/dev/nvidia[0-7]\n", 1},
		{"name=GPU file=/dev/nvidia0\n", 1},                  /* keys and the name in any case */
		{"AutoDetect=nvml\nName=gpu Count=8\n", 1},
		{"Name=gpu AutoDetect=nvml Count=8\n", 1},
		{"AutoDetect=off\nName=gpu Count=8\n", 0},
		{"Name=gpu Count=4\n", 0},
		{"# Name=gpu File=/dev/nvidia0\nName=gpu Count=4\n", 0}, /* a comment does not count */
		{"Name=gpu Count=4 # File=/dev/nvidia0\n", 0},
		{"Name=mps Count=100\n", -1},
		{"", -1},
		{"Name=gpu Count=2\nName=gpu File=/dev/nvidia[2-3]", 1}, /* no final newline */
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		char line[128];
		int got = slurm_gres_sets_devices(rows[i].text, line, sizeof line);
		if (got != rows[i].want)
			fail_msg("'%s': %d, want %d", rows[i].text, got, rows[i].want);
	}
	char line[128];
	slurm_gres_sets_devices("  Name=gpu Count=4  # four\n", line, sizeof line);
	assert_string_equal(line, "Name=gpu Count=4  ");
}

static const struct doctor_check *find(const struct doctor_report *r, const char *id)
{
	for (size_t i = 0; i < r->n; i++)
		if (strcmp(r->checks[i].id, id) == 0)
			return &r->checks[i];
	fail_msg("no check %s", id);
	return NULL;
}

static void test_working_cluster(void **state)
{
	(void)state;
	struct slurm_env e = {
		.version = "slurm 22.05.8\n", .version_rc = 0, .missing = "",
		.ping_rc = 0, .ping_out = "Slurmctld(primary) at vm is UP\n",
		.sinfo_rc = 0, .sinfo_out = "gpu*|gpu:4|1|up\ncpu|(null)|3|up\nbig|gpu:a100:8(S:0-1)|2|down\n",
		.gres_path = "/etc/slurm/gres.conf", .gres_conf = "Name=gpu File=/dev/nvidia[0-3]\n",
	};
	struct doctor_report r = {0};
	assert_int_equal(slurm_run(&e, &r), 0);
	assert_int_equal(find(&r, "slurm.client")->status, DOCTOR_OK);
	assert_string_equal(find(&r, "slurm.client")->found, "slurm 22.05.8 (sinfo, sbatch, srun, scontrol)");
	assert_int_equal(find(&r, "slurm.controller")->status, DOCTOR_OK);
	const struct doctor_check *p = find(&r, "slurm.gpu_partitions");
	assert_int_equal(p->status, DOCTOR_OK);
	assert_string_equal(p->found, "gpu* (1 node, gpu:4); big (2 nodes, gpu:a100:8(S:0-1), down)");
	assert_int_equal(find(&r, "slurm.gres_conf")->status, DOCTOR_OK);
	doctor_report_free(&r);
}

static void test_broken_cluster(void **state)
{
	(void)state;
	struct slurm_env e = {
		.version = NULL, .version_rc = -1, .missing = "sinfo, sbatch, srun, scontrol",
		.ping_rc = -1, .sinfo_rc = -1, .gres_path = "/etc/slurm/gres.conf", .gres_conf = NULL,
	};
	struct doctor_report r = {0};
	assert_int_equal(slurm_run(&e, &r), 0);
	assert_int_equal(find(&r, "slurm.client")->status, DOCTOR_FAIL);
	assert_non_null(strstr(find(&r, "slurm.client")->found, "not found on PATH: sinfo, sbatch"));
	assert_int_equal(find(&r, "slurm.controller")->status, DOCTOR_SKIP);
	assert_int_equal(find(&r, "slurm.gpu_partitions")->status, DOCTOR_SKIP);
	assert_int_equal(find(&r, "slurm.gres_conf")->status, DOCTOR_WARN);
	doctor_report_free(&r);
	/* the client is there but the controller is down and no node has GPUs */
	struct slurm_env d = {
		.version = "slurm 22.05.8\n", .version_rc = 0, .missing = "",
		.ping_rc = 1, .ping_out = "Slurmctld(primary) at vm is DOWN\n",
		.sinfo_rc = 0, .sinfo_out = "debug*|(null)|2|up\n",
		.gres_path = "/etc/slurm/gres.conf", .gres_conf = "Name=gpu Count=4\n",
	};
	memset(&r, 0, sizeof r);
	assert_int_equal(slurm_run(&d, &r), 0);
	assert_int_equal(find(&r, "slurm.controller")->status, DOCTOR_FAIL);
	assert_string_equal(find(&r, "slurm.controller")->found, "Slurmctld(primary) at vm is DOWN");
	assert_int_equal(find(&r, "slurm.gpu_partitions")->status, DOCTOR_WARN);
	assert_string_equal(find(&r, "slurm.gpu_partitions")->found, "none of 1 partition offers GRES gpu");
	const struct doctor_check *g = find(&r, "slurm.gres_conf");
	assert_int_equal(g->status, DOCTOR_WARN);
	assert_non_null(strstr(g->found, "has no File="));
	doctor_report_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gres),
		cmocka_unit_test(test_working_cluster),
		cmocka_unit_test(test_broken_cluster),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
