/*
 * test-launch.c — lib/jobs/launch.c and lib/util/shquote.c: placeholder expansion as
 * a table, torchrun's command line, the defaults, and the batch script:
 * every #SBATCH value it refuses, and arguments that come back byte for
 * byte when bash reads the script (checked by running bash on the srun line).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jobs/launch.h"
#include "util/shquote.h"

struct expand_row {
	const char *in, *out;   /* out NULL: refused */
};

static const struct expand_row rows[] = {
	{"{gpus}", "8"},
	{"{nodes}", "2"},
	{"{world_size}", "16"},
	{"--bs={32*gpus}", "--bs=256"},
	{"{gpus*32}", "256"},
	{"{ 2 * nodes * gpus }", "32"},
	{"{gpus}{gpus}", "88"},
	{"{epoch}", "{epoch}"},                    /* the script's own template */
	{"ckpt-{epoch:03d}.pt", "ckpt-{epoch:03d}.pt"},
	{"{0}", "{0}"},                            /* no name: a Python format field */
	{"{32}", "{32}"},
	{"{\"lr\": 1}", "{\"lr\": 1}"},
	{"{gpus", "{gpus"},
	{"gpus}", "gpus}"},
	{"{}", "{}"},
	{"{*gpus}", "{*gpus}"},
	{"{gpus*}", "{gpus*}"},
	{"{gpus**2}", "{gpus**2}"},
	{"{gpus+1}", "{gpus+1}"},
	{"{GPUS}", "{GPUS}"},
	{"{{gpus}}", "{8}"},                        /* the inner group is a placeholder */
	{"{2*epochs}", "{2*epochs}"},
	{"{99999999999*99999999999*gpus}", NULL},  /* overflows 64 bits */
	{"", ""},
};

static void test_expand(void **state)
{
	(void)state;
	struct launch_vars v = {.gpus = 8, .nodes = 2, .world_size = 16};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		char *out = NULL, err[256] = "";
		int rc = launch_expand(rows[i].in, &v, &out, err, sizeof err);
		if (!rows[i].out) {
			if (rc != -1 || !strstr(err, "too large"))
				fail_msg("'%s' accepted", rows[i].in);
			continue;
		}
		if (rc != 0 || strcmp(out, rows[i].out) != 0)
			fail_msg("'%s' -> '%s', want '%s'", rows[i].in, out ? out : "(null)", rows[i].out);
		free(out);
	}
}

static void test_torchrun_argv(void **state)
{
	(void)state;
	char *const launcher[] = {"python3", "-m", "torch.distributed.run", NULL};
	char *const cmd[] = {"train.py", "", "a b", NULL};
	struct launch_torchrun t = {.nnodes = 2, .nproc_per_node = 4, .node_rank = 1,
				    .endpoint = "n1:12345", .rdzv_id = "77"};
	char **v = launch_torchrun_argv(launcher, &t, cmd);
	const char *want[] = {"python3", "-m", "torch.distributed.run", "--nnodes=2", "--nproc_per_node=4",
			      "--node_rank=1", "--rdzv_backend=c10d", "--rdzv_endpoint=n1:12345",
			      "--rdzv_id=77", "train.py", "", "a b", NULL};
	for (size_t i = 0; want[i]; i++)
		assert_string_equal(v[i], want[i]);
	assert_null(v[12]);
	launch_argv_free(v);
	/* one node: no --node_rank */
	t.nnodes = 1;
	v = launch_torchrun_argv(launcher, &t, cmd);
	assert_string_equal(v[5], "--rdzv_backend=c10d");
	launch_argv_free(v);
	/* torch < 2.0 on Python >= 3.11: --redirects/--tee that parse there, before the script */
	t.std_workaround = true;
	v = launch_torchrun_argv(launcher, &t, cmd);
	assert_string_equal(v[8], "--redirects=1");
	assert_string_equal(v[9], "--tee=1");
	assert_string_equal(v[10], "train.py");
	assert_null(v[13]);
	launch_argv_free(v);
}

static bool has_default(const struct launch_default *d, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(d[i].name, name) == 0)
			return true;
	return false;
}

static void test_defaults(void **state)
{
	(void)state;
	struct launch_default d[8];
	size_t n = launch_defaults(4, 18, NULL, d, 8);
	assert_int_equal(n, 4);
	assert_string_equal(d[3].name, "OMP_NUM_THREADS");
	assert_string_equal(d[3].value, "4");
	n = launch_defaults(8, 2, NULL, d, 8);
	assert_string_equal(d[3].value, "1"); /* never 0 */
	assert_string_equal(d[0].name, "TORCH_NCCL_ASYNC_ERROR_HANDLING");
	assert_int_equal(launch_defaults(8, 2, NULL, d, 2), 2);
	/* expandable_segments only for a PyTorch known to be 2.1 or newer */
	static const struct { const char *probe; bool want; } torch_rows[] = {
		{"gpuctl-torch 3 11 2.1.0+cu121\n", true}, {"gpuctl-torch 3 12 2.4.1\n", true},
		{"gpuctl-torch 3 11 2.0.1+cu118\n", false}, {"gpuctl-torch 3 10 1.13.1+cu117\n", false},
		{"gpuctl-torch 3 11 -\n", false},
	};
	for (size_t i = 0; i < sizeof torch_rows / sizeof torch_rows[0]; i++) {
		struct torchenv t;
		assert_int_equal(torchenv_parse(torch_rows[i].probe, &t), 0);
		n = launch_defaults(2, 8, &t, d, 8);
		if (has_default(d, n, "PYTORCH_CUDA_ALLOC_CONF") != torch_rows[i].want)
			fail_msg("%s: PYTORCH_CUDA_ALLOC_CONF %s", torch_rows[i].probe, torch_rows[i].want ? "missing" : "set");
		if (torch_rows[i].want)
			assert_string_equal(d[n - 1].value, "expandable_segments:True");
	}
	assert_false(has_default(d, launch_defaults(2, 8, NULL, d, 8), "PYTORCH_CUDA_ALLOC_CONF"));
}

/* the script in *buf (caller frees); launch_slurm_script's result */
static int script_of(const struct launch_slurm *s, char **buf)
{
	size_t len = 0;
	*buf = NULL;
	FILE *f = open_memstream(buf, &len);
	int rc = launch_slurm_script(f, s);
	fclose(f);
	return rc;
}

static void test_sbatch_values(void **state)
{
	(void)state;
	static const char *const bad[] = {"", "a b", "a\nb", "a'b", "a\"b", "a#b", "a\\b", "a\tb", "\x7f"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(launch_sbatch_value_ok(bad[i]), 0);
	char longv[202];
	memset(longv, 'a', 201);
	longv[201] = '\0';
	assert_int_equal(launch_sbatch_value_ok(longv), 0);
	static const char *const good[] = {"gpu", "1-00:00:00", "/home/a/slurm-%j.out", "proj_42", "a100,h100"};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
		assert_int_equal(launch_sbatch_value_ok(good[i]), 1);
	char *const cmd[] = {"t.py", NULL};
	struct launch_slurm s = {.nodes = 2, .gpus_per_node = 4, .job_name = "t", .output = "o",
				 .partition = "a b", .gpuctl = "/usr/bin/gpuctl", .cmd = cmd, .signal_secs = 120};
	char *script;
	assert_int_equal(script_of(&s, &script), -1);
	free(script);
}

/* bash reads the step's arguments back exactly: run the srun line with srun = printf */
static void test_script_quoting(void **state)
{
	(void)state;
	char *const cmd[] = {"train.py", "a b", "'", "\"", "$HOME", "`id`", "$(id)", "\\", "x\ny", "",
			     "*", "~", "!", "#", ";", "{gpus}", "\xff", NULL};
	char *const opts[] = {"--checkpoint-dir=/c d/$x", NULL};
	struct launch_slurm s = {.nodes = 2, .gpus_per_node = 4, .job_name = "t", .output = "/o/%j",
				 .gpuctl = "/opt/my gpuctl/gpuctl", .step_opts = opts, .cmd = cmd,
				 .signal_secs = 120, .max_requeues = 3};
	char *script;
	assert_int_equal(script_of(&s, &script), 0);
	char *line = strstr(script, "\nsrun ");
	assert_non_null(line);
	line++;
	char *end = strstr(line, " &\n");
	assert_non_null(end);
	*end = '\0';
	/* every word on its own NUL-terminated record */
	char path[] = "/tmp/gpuctl-test-launch-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	fprintf(f, "srun() { printf '%%s\\0' \"$@\"; }\nhead_node=h; port=1\n%s\n", line);
	fclose(f);
	char cmdline[256];
	snprintf(cmdline, sizeof cmdline, "bash %s", path);
	FILE *p = popen(cmdline, "r");
	char out[4096];
	size_t n = fread(out, 1, sizeof out, p);
	pclose(p);
	unlink(path);
	const char *want[] = {"--ntasks-per-node=1", "--kill-on-bad-exit=1", "/opt/my gpuctl/gpuctl", "launch",
			      "--slurm-step", "--rdzv-endpoint=h:1", "--checkpoint-dir=/c d/$x", "--", NULL};
	size_t off = 0, k = 0;
	for (; want[k]; k++) {
		assert_true(off < n);
		assert_string_equal(out + off, want[k]);
		off += strlen(out + off) + 1;
	}
	for (size_t i = 0; cmd[i]; i++) {
		assert_true(off < n);
		assert_string_equal(out + off, cmd[i]);
		off += strlen(out + off) + 1;
	}
	assert_int_equal(off, n);
	assert_non_null(strstr(script, "#SBATCH --requeue\n"));
	assert_non_null(strstr(script, "#SBATCH --signal=B:TERM@120\n"));
	assert_non_null(strstr(script, "export GPUCTL_MAX_REQUEUES=3\n"));
	free(script);
}

static void test_shquote(void **state)
{
	(void)state;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	shquote(f, "plain-1.0/x=y:z,@%+");
	fputc('|', f);
	shquote(f, "");
	fputc('|', f);
	shquote(f, "it's");
	fclose(f);
	assert_string_equal(buf, "plain-1.0/x=y:z,@%+|''|'it'\\''s'");
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_expand),
		cmocka_unit_test(test_torchrun_argv),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_sbatch_values),
		cmocka_unit_test(test_script_quoting),
		cmocka_unit_test(test_shquote),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
