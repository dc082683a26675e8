/*
 * cmd-doctor.c — `gpuctl doctor [--json]`: check the driver, the
 * environment jobs inherit and each GPU's health, one line per check (ok,
 * warn, fail, skip) with what was found and what to do. Exit 0 when no
 * check failed (warnings allowed), 1 when one did, 2 for a bad command line.
 *
 * Inputs that depend on the machine can be set for tests:
 * GPUCTL_DOCTOR_CONTAINER (0/1), GPUCTL_DOCTOR_SHM (the path whose size is
 * /dev/shm's), GPUCTL_DOCTOR_KERNEL_LOG (a file read instead of /dev/kmsg).
 */
#include "cli.h"
#include "doctor.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define KLOG_MAX (4u << 20)

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

int cmd_doctor(const struct cli_global *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	bool json = false;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 'h':
			printf("usage: gpuctl doctor [--json]\n\n"
			       "Check the NVIDIA driver, the environment jobs inherit and each GPU's health.\n"
			       "Exit 0 when nothing failed (warnings allowed), 1 when a check failed.\n");
			return EXIT_OK;
		default:
			cli_err("unknown option '%s' for doctor (try 'gpuctl doctor --help')", argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		cli_err("unexpected argument '%s' for doctor", argv[optind]);
		return EXIT_USAGE;
	}
	/* no driver is a finding here, not the end */
	gc_ctx *ctx = NULL;
	gc_snapshot snap = {0};
	gc_open_opts o = {.sim_node = g->sim};
	struct dr_env e = {0};
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

	struct dr_report r;
	int rc = EXIT_OK;
	if (dr_run(e.open_rc == GC_OK ? &snap : NULL, &e, &r) != GC_OK) {
		cli_err("out of memory");
		rc = EXIT_FAIL;
		goto out;
	}
	size_t count[4] = {0};
	for (size_t i = 0; i < r.n; i++)
		count[r.checks[i].status]++;
	if (json) {
		json_t *a = json_array();
		for (size_t i = 0; i < r.n; i++)
			json_array_append_new(a, json_pack("{s:s, s:s, s:s, s:s}", "id", r.checks[i].id, "status",
							   dr_status_name(r.checks[i].status), "found",
							   r.checks[i].found, "fix", r.checks[i].fix));
		json_t *root = json_pack("{s:s, s:{s:I, s:I, s:I, s:I}, s:o}", "schema", "gpuctl.doctor/1", "summary",
					 "ok", (json_int_t)count[DR_OK], "warn", (json_int_t)count[DR_WARN], "fail",
					 (json_int_t)count[DR_FAIL], "skip", (json_int_t)count[DR_SKIP], "checks", a);
		char *s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		json_decref(root);
		if (s)
			puts(s);
		free(s);
	} else {
		for (size_t i = 0; i < r.n; i++) {
			const struct dr_check *k = &r.checks[i];
			printf("%-5s %-26s %s\n", dr_status_name(k->status), k->id, k->found);
			if (k->fix[0] && (k->status == DR_WARN || k->status == DR_FAIL))
				printf("      %-26s fix: %s\n", "", k->fix);
		}
		printf("\ndoctor: %zu checks: %zu ok, %zu warning%s, %zu failure%s, %zu skipped\n", r.n, count[DR_OK],
		       count[DR_WARN], count[DR_WARN] == 1 ? "" : "s", count[DR_FAIL], count[DR_FAIL] == 1 ? "" : "s",
		       count[DR_SKIP]);
	}
	if (count[DR_FAIL])
		rc = EXIT_FAIL;
	dr_report_free(&r);
out:
	free(klog);
	gc_snapshot_release(&snap);
	gc_ctx_free(ctx);
	return rc;
}
