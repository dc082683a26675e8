/*
 * cmd-doctor.c — `gpuctl doctor [--json] [--python PATH]`: check the driver, the CUDA stack, the
 * environment jobs inherit and each GPU's health, one line per check (ok,
 * warn, fail, skip) with what was found and what to do. Exit 0 when no
 * check failed (warnings allowed), 1 when one did, 2 for a bad command line
 * (a --python that cannot be run included).
 *
 * Inputs that depend on the machine can be set for tests:
 * GPUCTL_DOCTOR_CONTAINER (0/1), GPUCTL_DOCTOR_SHM (the path whose size is
 * /dev/shm's), GPUCTL_DOCTOR_KERNEL_LOG (a file read instead of /dev/kmsg),
 * GPUCTL_DOCTOR_PY_TIMEOUT_MS (each Python probe's limit, 30000 by default).
 * The CUDA stack is found the way a user's shell would: nvcc on PATH (else
 * $CUDA_HOME/bin, /usr/local/cuda/bin), version.json in $CUDA_HOME (else
 * /usr/local/cuda), python3 on PATH or --python PATH, run with a time limit;
 * the launcher gpuctl launch would run and its Python (src/torchprobe.h).
 */
#include "util/slurp.h"
#include "capture.h"
#include "cli.h"
#include "jobs/authority.h"
#include "diagnose/doctor.h"
#include "torchprobe.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define KLOG_MAX (4u << 20)
#define PY_TIMEOUT_MS 30000
#define NVCC_TIMEOUT_MS 10000

_Static_assert((int)CAPTURE_NOT_RUN == (int)DOCTOR_PY_MISSING && (int)CAPTURE_TIMEOUT == (int)DOCTOR_PY_TIMEOUT,
	       "doctor reads capture_run's codes as its own");


/* a whole small file (lib/util/slurp.c: a file over 1 MiB is refused, never cut short), or NULL */
static char *small_file(const char *path)
{
	char *buf = NULL, err[300];
	size_t len;
	return slurp(path, 1u << 20, &buf, &len, err, sizeof err) == 0 ? buf : NULL;
}

static bool in_container(void)
{
	const char *o = getenv("GPUCTL_DOCTOR_CONTAINER");
	if (o && *o)
		return strcmp(o, "0") != 0;
	if (access("/.dockerenv", F_OK) == 0 || access("/run/.containerenv", F_OK) == 0)
		return true;
	FILE *f = fopen("/proc/1/cgroup", "re");
	char line[512];
	bool yes = false;
	while (f && fgets(line, sizeof line, f))
		if (strstr(line, "docker") || strstr(line, "kubepods") || strstr(line, "containerd") ||
		    strstr(line, "lxc"))
			yes = true;
	if (f)
		fclose(f);
	return yes;
}

/* The kernel's messages: a test file, or /dev/kmsg read without blocking (one record per read). */
static char *kernel_log(size_t *len)
{
	const char *path = getenv("GPUCTL_DOCTOR_KERNEL_LOG");
	bool kmsg = !path || !*path;
	int fd = open(kmsg ? "/dev/kmsg" : path, O_RDONLY | O_CLOEXEC | (kmsg ? O_NONBLOCK : 0));
	if (fd < 0)
		return NULL;
	char *buf = malloc(KLOG_MAX + 1);
	size_t n = 0;
	while (buf && n + 8192 < KLOG_MAX) {
		ssize_t r = read(fd, buf + n, kmsg ? 8192 : KLOG_MAX - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EPIPE)
			continue; /* records were overwritten while we read: go on */
		if (r <= 0)
			break;
		n += (size_t)r;
		if (kmsg && buf[n - 1] != '\n')
			buf[n++] = '\n';
	}
	close(fd);
	if (!buf)
		return NULL;
	buf[n] = '\0';
	*len = n;
	return buf;
}

int cli_print_checks(const struct doctor_report *r, bool json, const char *schema, const char *title)
{
	size_t count[4] = {0};
	for (size_t i = 0; i < r->n; i++)
		count[r->checks[i].status]++;
	if (json) {
		json_t *a = json_array();
		for (size_t i = 0; i < r->n; i++)
			json_array_append_new(a, json_pack("{s:s, s:s, s:s, s:s}", "id", r->checks[i].id, "status",
							   doctor_status_name(r->checks[i].status), "found",
							   r->checks[i].found, "fix", r->checks[i].fix));
		json_t *root = json_pack("{s:s, s:{s:I, s:I, s:I, s:I}, s:o}", "schema", schema, "summary",
					 "ok", (json_int_t)count[DOCTOR_OK], "warn", (json_int_t)count[DOCTOR_WARN], "fail",
					 (json_int_t)count[DOCTOR_FAIL], "skip", (json_int_t)count[DOCTOR_SKIP], "checks", a);
		char *s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		json_decref(root);
		if (s)
			puts(s);
		free(s);
	} else {
		for (size_t i = 0; i < r->n; i++) {
			const struct doctor_check *k = &r->checks[i];
			printf("%-5s %-26s %s\n", doctor_status_name(k->status), k->id, k->found);
			if (k->fix[0] && (k->status == DOCTOR_WARN || k->status == DOCTOR_FAIL))
				printf("      %-26s fix: %s\n", "", k->fix);
		}
		printf("\n%s: %zu checks: %zu ok, %zu warning%s, %zu failure%s, %zu skipped\n", title, r->n,
		       count[DOCTOR_OK], count[DOCTOR_WARN], count[DOCTOR_WARN] == 1 ? "" : "s", count[DOCTOR_FAIL],
		       count[DOCTOR_FAIL] == 1 ? "" : "s", count[DOCTOR_SKIP]);
	}
	if (fflush(stdout) != 0)
		return EXIT_FAIL;
	return count[DOCTOR_FAIL] ? EXIT_FAIL : EXIT_OK;
}

int cmd_doctor(const struct cli_global *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},
		{"python", required_argument, NULL, 'p'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	bool json = false;
	const char *python = NULL;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 'p':
			if (!*optarg) {
				cli_err("--python needs the path of a Python interpreter, e.g. --python .venv/bin/python");
				return EXIT_USAGE;
			}
			python = optarg;
			break;
		case 'h':
			printf("usage: gpuctl doctor [--json] [--python PATH]\n\n"
			       "Check the NVIDIA driver, the CUDA toolkit, PyTorch and TensorFlow (with the Python\n"
			       "at PATH, python3 by default), the environment jobs inherit and each GPU's health.\n"
			       "Exit 0 when nothing failed (warnings allowed), 1 when a check failed.\n");
			return EXIT_OK;
		default:
			return cli_bad_option("doctor", c, argv);
		}
	}
	if (optind < argc)
		return cli_extra_arg("doctor", argv[optind]);
	/* no driver is a finding here, not the end */
	gc_ctx *ctx = NULL;
	gc_snapshot snap = {0};
	gc_open_opts o = {.sim_node = g->sim};
	struct doctor_env e = {0};
	e.open_rc = gc_ctx_open(&ctx, &o);
	e.open_msg = gc_ctx_errmsg(ctx);
	if (e.open_rc == GC_OK) {
		int rc = gc_ctx_sample(ctx, &snap, GC_ALL_VALUES, NULL, false);
		if (rc != GC_OK) {
			e.open_rc = rc;
			e.open_msg = gc_ctx_errmsg(ctx);
		}
	}
	e.cuda_visible_devices = getenv("CUDA_VISIBLE_DEVICES");
	e.cuda_device_order = getenv("CUDA_DEVICE_ORDER");
	e.alloc_conf = getenv("PYTORCH_CUDA_ALLOC_CONF");
	e.nccl_async = getenv("NCCL_ASYNC_ERROR_HANDLING");
	e.torch_nccl_async = getenv("TORCH_NCCL_ASYNC_ERROR_HANDLING");
	e.in_container = in_container();
	const char *shm = getenv("GPUCTL_DOCTOR_SHM");
	struct statvfs sv;
	e.shm_bytes = statvfs(shm && *shm ? shm : "/dev/shm", &sv) == 0 ? (int64_t)sv.f_blocks * (int64_t)sv.f_frsize : -1;
	size_t klen = 0;
	char *klog = kernel_log(&klen);
	e.kernel_log = klog;
	e.kernel_log_len = klen;
	char sigdir[4200];
	e.signatures_dir = cli_signatures_dir(sigdir, sizeof sigdir, true) == 0 ? sigdir : NULL;

	/* the CUDA stack */
	char path[4300];
	char *compat = NULL, *nvcc = NULL, *cjson = NULL, *pyout = NULL;
	if (e.signatures_dir) {
		snprintf(path, sizeof path, "%s/../cuda-compat.csv", e.signatures_dir);
		compat = small_file(path);
	}
	e.compat_csv = compat;
	const char *cuda_home = getenv("CUDA_HOME");
	if (!cuda_home || !*cuda_home)
		cuda_home = NULL;
	char *nv[] = {"nvcc", "--version", NULL};
	int why;
	if (capture_run(nv, NULL, false, NVCC_TIMEOUT_MS, &nvcc, &why) != 0) {
		free(nvcc);
		nvcc = NULL;
		snprintf(path, sizeof path, "%s/bin/nvcc", cuda_home ? cuda_home : "/usr/local/cuda");
		nv[0] = path;
		if (capture_run(nv, NULL, false, NVCC_TIMEOUT_MS, &nvcc, &why) != 0) {
			free(nvcc);
			nvcc = NULL;
		}
	}
	e.nvcc_out = nvcc;
	char jpath[4300];
	snprintf(jpath, sizeof jpath, "%s/version.json", cuda_home ? cuda_home : "/usr/local/cuda");
	cjson = small_file(jpath);
	e.cuda_json = cjson;
	e.cuda_json_path = jpath;
	e.python = python ? python : "python3";
	char *pa[] = {(char *)e.python, "-c", (char *)DOCTOR_PY_PROBE, NULL};
	const char *pto = getenv("GPUCTL_DOCTOR_PY_TIMEOUT_MS");
	long pt = pto && *pto ? strtol(pto, NULL, 10) : 0;
	e.python_rc = capture_run(pa, NULL, false, pt > 0 && pt < 600000 ? (int)pt : PY_TIMEOUT_MS, &pyout, &why);
	e.python_out = pyout;

	/* what gpuctl launch would run, found as it finds it */
	struct torchprobe tp;
	char launcher[PATH_MAX + 32];
	char *const *lw = torchprobe_auto(false);
	memset(&tp, 0, sizeof tp);
	if (lw) {
		torchprobe_run(lw, pt > 0 && pt < 600000 ? (int)pt : PY_TIMEOUT_MS, &tp);
		e.launcher_is_torchrun = lw == torchprobe_torchrun;
		if (e.launcher_is_torchrun)
			snprintf(launcher, sizeof launcher, "%s", tp.launcher);
		else
			snprintf(launcher, sizeof launcher, "%s -m torch.distributed.run", tp.launcher);
		e.launcher = launcher;
		e.launcher_python = tp.python[0] ? tp.python : NULL;
		e.launcher_rc = tp.rc;
		e.launcher_out = tp.out;
	}

	char asock[4200], amsg[512] = "";
	e.lease_mode = authority_find(asock, sizeof asock, amsg, sizeof amsg);
	e.lease_dir = authority_dir();
	e.lease_mode_msg = amsg;

	struct doctor_report r;
	int rc = EXIT_OK;
	/* python3 missing is a finding; an interpreter the user named that cannot run is bad input */
	if (python && e.python_rc == DOCTOR_PY_MISSING) {
		cli_err("--python '%s' cannot be run (%s): give the path of a Python interpreter, e.g. "
			"--python .venv/bin/python", python, strerror(why));
		rc = EXIT_USAGE;
		goto out;
	}
	if (doctor_run(e.open_rc == GC_OK ? &snap : NULL, &e, &r) != GC_OK) {
		cli_err("out of memory");
		rc = EXIT_FAIL;
		goto out;
	}
	rc = cli_print_checks(&r, json, "gpuctl.doctor/1", "doctor");
	doctor_report_free(&r);
out:
	free(klog);
	free(compat);
	free(nvcc);
	free(cjson);
	free(pyout);
	torchprobe_release(&tp);
	gpu_snapshot_release(&snap);
	gc_ctx_free(ctx);
	return rc;
}
