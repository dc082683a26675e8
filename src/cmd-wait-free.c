/*
 * cmd-wait-free.c — `gpuctl wait --free N`: block until N GPUs that fit the
 * filters are free (not leased, not used by another user's process, within
 * the load and memory asked), then print them. Woken at once by a release
 * (inotify on the lease directory, as a `gpuctl run --wait` is); the GPUs'
 * load and processes are looked at again every second. Nothing is leased:
 * for a script that wants to know, or a notification.
 */
#include "request.h"
#include "util/clock.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void usage(FILE *f)
{
	fprintf(f, "usage: gpuctl wait --free N [filters] [--timeout DUR]\n\n"
		   "Wait until N GPUs that fit are free now (not leased, no other user's process, within\n"
		   "--max-util and --min-free-mem), then print their indices (\"0,3\") and exit 0.\n"
		   "Nothing is leased: gpuctl run --wait takes them.\n"
		   "      --free=N           how many GPUs\n"
		   "  --min-free-mem, --max-util, --model, --exclude, --shared\n"
		   "                         as for gpuctl run\n"
		   "      --timeout=DUR      give up after DUR (90, 30s, 5m, 2h): exit 1, saying why\n");
}

int cmd_wait_free(const struct cli_global *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{"free", required_argument, NULL, 'n'},
		JOB_GPU_OPTIONS,
		{"timeout", required_argument, NULL, 't'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct job_request r;
	job_request_init(&r);
	r.jg.n_name = "--free"; /* its count, in the messages */
	long long timeout_ms = -1;
	bool n_given = false;
	int c, rc = EXIT_OK;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		if (c == 'g' || c == 'I') { /* exact GPUs and the id form are run's, not a count's */
			cli_err("gpuctl wait --free takes a count and filters, not --gpus or --ids");
			rc = EXIT_USAGE;
			goto out;
		}
		if (c == 'n')
			n_given = true;
		if ((rc = request_option(&r, c, optarg)) >= 0) {
			if (rc)
				goto out;
			continue;
		}
		rc = EXIT_OK;
		switch (c) {
		case 't':
			if ((rc = cli_parse_duration("--timeout", optarg, &timeout_ms)))
				goto out;
			break;
		case 'h': usage(stdout); goto out;
		default: rc = cli_bad_option("wait", c, argv); goto out;
		}
	}
	if (optind < argc) {
		rc = cli_extra_arg("wait --free", argv[optind]);
		goto out;
	}
	if (!n_given) {
		cli_err("gpuctl wait --free needs a count (--free N)");
		rc = EXIT_USAGE;
		goto out;
	}
	if ((rc = request_prepare(&r, g)))
		goto out;
	struct lease_dir *d = NULL;
	char err[512];
	int dr = lease_dir_open(&d, NULL, false, err, sizeof err);
	if (dr != GC_OK && dr != GC_ENOTFOUND) {
		cli_err("%s", err);
		rc = EXIT_FAIL;
		goto out;
	}
	cli_catch_stop();
	r.peek_only = true;
	unsigned *chosen = calloc(r.ngpus + r.jg.sel.n + 1, sizeof *chosen);
	char why[2048] = "", desc[300];
	int64_t deadline = timeout_ms < 0 ? -1 : clock_mono_ms() + timeout_ms;
	rc = EXIT_FAIL;
	while (chosen && !cli_stop_signal()) {
		int tr = request_try(&r, d, NULL, NULL, chosen, why, sizeof why);
		if (tr == GC_OK) {
			for (unsigned k = 0; k < r.jg.sel.n; k++)
				printf("%s%u", k ? "," : "", chosen[k]);
			putchar('\n');
			rc = fflush(stdout) == 0 ? EXIT_OK : EXIT_FAIL;
			break;
		}
		if (tr != GC_EBUSY) {
			rc = request_exit_code(tr);
			break;
		}
		int64_t left = deadline < 0 ? 1000 : deadline - clock_mono_ms();
		if (deadline >= 0 && left <= 0) {
			job_request_describe(&r, desc, sizeof desc);
			cli_err("gave up waiting for %s to be free after the --timeout: %s", desc, why);
			break;
		}
		/* woken at once by a release; the load and processes change by themselves: a second at most */
		int slice = left < 1000 ? (int)left : 1000;
		if (d)
			(void)lease_wait(d, slice);
		else
			nanosleep(&(struct timespec){.tv_sec = slice / 1000, .tv_nsec = (long)(slice % 1000) * 1000000L}, NULL);
		if (!cli_stop_signal() && (tr = request_resample(&r))) {
			rc = tr;
			break;
		}
	}
	if (!chosen)
		cli_err("out of memory");
	if (cli_stop_signal())
		rc = 128 + cli_stop_signal();
	free(chosen);
	lease_dir_close(d);
out:
	job_request_release(&r);
	return rc;
}
