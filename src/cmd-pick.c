/*
 * cmd-pick.c — `gpuctl pick`: choose free GPUs and print a
 * CUDA_VISIBLE_DEVICES value (or shell exports). With --lease the GPUs stay
 * leased for the calling shell: a small detached holder keeps the locks
 * until that shell exits, so `eval "$(gpuctl pick --lease --format env)"`
 * reserves GPUs for an interactive session.
 */
#include "request.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The holder: lives until `shell` exits, then the kernel drops its locks. */
static void hold_for(pid_t shell)
{
	int null = open("/dev/null", O_RDWR);
	if (null >= 0) {
		/* $(gpuctl pick --lease) must see end-of-file at once */
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
		dup2(null, STDERR_FILENO);
		if (null > STDERR_FILENO)
			close(null);
	}
	setsid();
	signal(SIGHUP, SIG_IGN);
#ifdef SYS_pidfd_open
	int pfd = (int)syscall(SYS_pidfd_open, shell, 0);
	if (pfd >= 0) {
		struct pollfd p = {.fd = pfd, .events = POLLIN};
		while (poll(&p, 1, -1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
#endif
	while (kill(shell, 0) == 0 || errno == EPERM)
		sleep(1);
	_exit(0);
}

/* pick --release: every GPU this shell leased with pick --lease, let go now */
static int release_own(void)
{
	struct lease_dir *d = NULL;
	char err[512];
	int rc = lease_dir_open(&d, NULL, false, err, sizeof err);
	if (rc == GC_ENOTFOUND) {
		cli_err("no GPU is leased by this shell (nothing is leased on this machine)");
		return EXIT_FAIL;
	}
	if (rc != GC_OK) {
		cli_err("%s", err);
		return EXIT_FAIL;
	}
	struct lease_entry *held = NULL;
	size_t n = 0, released = 0, kept = 0;
	if (lease_list(d, &held, &n) != GC_OK) {
		cli_err("cannot read the leases in '%s'", lease_dir_path(d));
		lease_dir_close(d);
		return EXIT_FAIL;
	}
	rc = EXIT_OK;
	/* which are ours first: one holder may keep several, and its death frees them all */
	bool *ours = calloc(n ? n : 1, sizeof *ours);
	if (!ours) {
		free(held);
		lease_dir_close(d);
		cli_err("out of memory");
		return EXIT_FAIL;
	}
	for (size_t i = 0; i < n; i++)
		ours[i] = lease_ours(d, held[i].uuid, NULL) == 1;
	for (size_t i = 0; i < n; i++) {
		if (!ours[i])
			continue;
		int dr = lease_drop_ours(d, held[i].uuid);
		if (dr >= 0)
			released++;
		else if (dr == GC_EBUSY)
			kept++;
		else if (dr < 0) {
			cli_err("cannot release %s: %s", held[i].uuid, gc_strerror(dr));
			rc = EXIT_FAIL;
		}
	}
	free(ours);
	free(held);
	lease_dir_close(d);
	if (rc == EXIT_OK && !released) {
		if (kept)
			cli_err("the GPUs this runs on are leased by an outer gpuctl run: they are let go when its job ends");
		else
			cli_err("no GPU is leased by this shell (gpuctl pick --lease leases for the shell it runs in)");
		return EXIT_FAIL;
	}
	if (rc == EXIT_OK)
		fprintf(stderr, "gpuctl: released %zu GPU%s; unset CUDA_VISIBLE_DEVICES before picking again\n", released,
			released == 1 ? "" : "s");
	return rc;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: gpuctl pick [-n N | --gpus LIST] [filters] [--ids index|uuid] [--format value|env] [--lease]\n"
		"\n"
		"Choose free GPUs and print the CUDA_VISIBLE_DEVICES value for them.\n"
		"  -n N, --gpus, --min-free-mem, --max-util, --model, --exclude, --shared, --ids\n"
		"                         as for gpuctl run\n"
		"      --format=value     print the value alone (default)\n"
		"      --format=env       print export lines for a shell (with CUDA_DEVICE_ORDER=PCI_BUS_ID)\n"
		"      --lease            keep the GPUs leased until the calling shell exits\n"
		"      --release          let go now of the GPUs this shell leased with --lease\n"
		"      --name=NAME        the lease's job name (with --lease)\n");
}

int cmd_pick(const struct cli_global *g, int argc, char **argv)
{
	static const struct option opts[] = {
		JOB_GPU_OPTIONS,
		{"format", required_argument, NULL, 'f'},
		{"lease", no_argument, NULL, 'L'},
		{"release", no_argument, NULL, 'R'},
		{"name", required_argument, NULL, 'N'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct job_request r;
	job_request_init(&r);
	bool env = false, lease = false, release = false;
	const char *name = NULL;
	int c, rc;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":n:h", opts, NULL)) != -1) {
		if ((rc = request_option(&r, c, optarg)) >= 0) {
			if (rc)
				return rc;
			continue;
		}
		switch (c) {
		case 'f':
			if (strcmp(optarg, "env") == 0)
				env = true;
			else if (strcmp(optarg, "value") == 0)
				env = false;
			else {
				cli_err("invalid --format '%s' (expected value or env)", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'L': lease = true; break;
		case 'R': release = true; break;
		case 'N': name = optarg; break;
		case 'h': usage(stdout); return EXIT_OK;
		default:
			return cli_bad_option("pick", c, argv);
		}
	}
	if (optind < argc)
		return cli_extra_arg("pick", argv[optind]);
	if (release) {
		if (lease || r.jg.choice_given || r.jg.n_given || name || env) {
			cli_err("--release takes no other option");
			return EXIT_USAGE;
		}
		return release_own();
	}
	if ((rc = request_prepare(&r, g)))
		goto out;
	struct lease_dir *d = NULL;
	char err[512];
	if (lease && lease_dir_open(&d, NULL, true, err, sizeof err) != GC_OK) {
		cli_err("%s", err);
		rc = EXIT_FAIL;
		goto out;
	}
	/* without --lease nothing is taken, but GPUs leased or quarantined are still not free: the
	 * state directory is read when it exists */
	if (!lease) {
		int orc = lease_dir_open(&d, NULL, false, err, sizeof err);
		if (orc != GC_OK && orc != GC_ENOTFOUND) {
			cli_err("%s", err);
			rc = EXIT_FAIL;
			goto out;
		}
		r.peek_only = true;
	}
	unsigned *chosen = calloc(r.jg.sel.n ? r.jg.sel.n : 1, sizeof *chosen);
	if (!chosen) {
		cli_err("out of memory");
		rc = EXIT_FAIL;
		goto out_dir;
	}
	char desc[300], why[2048] = "";
	job_request_describe(&r, desc, sizeof desc);
	struct lease_info me;
	char *shell_argv[] = {(char *)"(shell of gpuctl pick --lease)", NULL};
	lease_info_self(&me, name, shell_argv, desc);
	struct lease *l = NULL;
	int tr = request_try(&r, d, &me, &l, chosen, why, sizeof why);
	if (tr == GC_EBUSY) {
		cli_err("%s not available now: %s", desc, why);
		rc = EXIT_FAIL;
		goto out_free;
	}
	if (tr != GC_OK) {
		rc = cli_exit_code(tr) == EXIT_OK ? EXIT_FAIL : cli_exit_code(tr);
		goto out_free;
	}
	char value[8192];
	if (job_request_render(&r, chosen, value, sizeof value) < 0) {
		cli_err("cannot render CUDA_VISIBLE_DEVICES for %u GPUs", r.jg.sel.n);
		rc = EXIT_FAIL;
		goto out_free;
	}
	/* inside the shell's own lease nothing new was leased: no holder to keep */
	if (l && r.nown < r.jg.sel.n) {
		pid_t shell = getppid();
		fflush(NULL);
		pid_t holder = fork();
		if (holder < 0) {
			cli_err("cannot keep the lease: %s", strerror(errno));
			rc = EXIT_FAIL;
			goto out_free;
		}
		if (holder == 0)
			hold_for(shell);
		/* the holder shares the locks now; ours can go */
		lease_set_pid(l, shell, holder);
	}
	if (env)
		printf("export CUDA_VISIBLE_DEVICES=%s; export CUDA_DEVICE_ORDER=PCI_BUS_ID\n", value);
	else
		printf("%s\n", value);
	rc = EXIT_OK;
out_free:
	lease_release(l);
	free(chosen);
out_dir:
	lease_dir_close(d);
out:
	job_request_release(&r);
	return rc;
}
