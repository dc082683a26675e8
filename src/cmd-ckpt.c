/*
 * cmd-ckpt.c — `gpuctl ckpt`: the checkpoint directory protocol for shell
 * scripts and training code (docs/checkpoints.md): commit a finished
 * checkpoint, find the newest complete one, prune old ones, list them.
 */
#include "cli.h"
#include "jobs/ckpt.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void usage(FILE *f)
{
	fprintf(f,
		"usage: gpuctl ckpt commit DIR PATH     mark PATH (an entry of DIR) complete, point DIR/latest at it\n"
		"       gpuctl ckpt latest DIR          print the newest complete checkpoint (exit 1 if none)\n"
		"       gpuctl ckpt prune DIR --keep N  delete complete checkpoints beyond the N newest\n"
		"       gpuctl ckpt list DIR [--json]   every entry, complete or not, newest first\n"
		"\nSee docs/checkpoints.md for the protocol and a PyTorch example.\n");
}

static int fail(int rc, const char *err)
{
	cli_err("%s", err);
	return rc == GC_EINVAL || rc == GC_ENOTFOUND ? EXIT_USAGE : EXIT_FAIL;
}

/* when a checkpoint was committed, in local time */
static void commit_time(int64_t ns, char *buf, size_t len)
{
	time_t t = (time_t)(ns / 1000000000);
	struct tm tm;
	localtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm);
}

static int list(const char *dir, bool json)
{
	struct ckpt_entry *v;
	size_t n;
	char err[512];
	int rc = ckpt_list(dir, &v, &n, err, sizeof err);
	if (rc != GC_OK)
		return fail(rc, err);
	if (json) {
		char *s = ckpt_entries_json(v, n);
		if (!s) {
			free(v);
			cli_err("out of memory");
			return EXIT_FAIL;
		}
		puts(s);
		free(s);
	} else {
		for (size_t i = 0; i < n; i++) {
			char when[40] = "-";
			if (v[i].complete)
				commit_time(v[i].committed_ns, when, sizeof when);
			printf("%-10s %-19s %s%s\n", v[i].complete ? "complete" : "incomplete", when, v[i].name,
			       v[i].is_dir ? "/" : "");
		}
	}
	free(v);
	return EXIT_OK;
}

int cmd_ckpt(const struct cli_global *g, int argc, char **argv)
{
	(void)g;
	if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_USAGE : EXIT_OK;
	}
	const char *sub = argv[1];
	char err[512], out[8192];
	int rc;
	if (strcmp(sub, "commit") == 0) {
		/* the job calling us gets SIGTERM with its whole process group on a
		 * preemption notice: finish the commit (milliseconds) rather than die in it */
		signal(SIGTERM, SIG_IGN);
		if (argc != 4) {
			cli_err("usage: gpuctl ckpt commit DIR PATH");
			return EXIT_USAGE;
		}
		if ((rc = ckpt_commit(argv[2], argv[3], err, sizeof err)) != GC_OK)
			return fail(rc, err);
		return EXIT_OK;
	}
	if (strcmp(sub, "latest") == 0) {
		if (argc != 3) {
			cli_err("usage: gpuctl ckpt latest DIR");
			return EXIT_USAGE;
		}
		rc = ckpt_latest(argv[2], out, sizeof out, err, sizeof err);
		if (rc == GC_ENOTFOUND) {
			/* not an error of the command line: scripts test for it */
			cli_err("%s", err);
			return EXIT_FAIL;
		}
		if (rc != GC_OK)
			return fail(rc, err);
		puts(out);
		return EXIT_OK;
	}
	if (strcmp(sub, "prune") == 0) {
		if (argc != 5 || (strcmp(argv[3], "--keep") != 0 && strcmp(argv[3], "-k") != 0)) {
			cli_err("usage: gpuctl ckpt prune DIR --keep N");
			return EXIT_USAGE;
		}
		long keep;
		if ((rc = cli_parse_count("--keep", argv[4], &keep)))
			return rc;
		size_t removed = 0;
		if ((rc = ckpt_prune(argv[2], keep > 1000000 ? 1000000 : (unsigned)keep, &removed, err,
				     sizeof err)) != GC_OK)
			return fail(rc, err);
		printf("removed %zu checkpoint%s\n", removed, removed == 1 ? "" : "s");
		return EXIT_OK;
	}
	if (strcmp(sub, "list") == 0) {
		bool json = argc == 4 && strcmp(argv[3], "--json") == 0;
		if (argc != 3 && !json) {
			cli_err("usage: gpuctl ckpt list DIR [--json]");
			return EXIT_USAGE;
		}
		return list(argv[2], json);
	}
	cli_err("unknown ckpt command '%s' (expected commit, latest, prune or list)", sub);
	return EXIT_USAGE;
}
