/*
 * cmd-quarantine.c — `gpuctl quarantine`: the GPUs out of service
 * (lib/jobs/quarantine.h), listed; an administrator takes one out (add) or
 * puts it back (clear). gpuctld quarantines GPUs that report hardware faults
 * (docs/policy.md).
 */
#include "cli.h"
#include "jobs/lease.h"
#include "jobs/quarantine.h"

#include <getopt.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void usage(FILE *f)
{
	fprintf(f, "usage: gpuctl quarantine [list] [--json]\n"
		   "       gpuctl quarantine add GPU [--reason TEXT]\n"
		   "       gpuctl quarantine clear GPU|all\n"
		   "\n"
		   "GPUs out of service: pick, run and gpuctld's queue give them to nobody.\n"
		   "gpuctld quarantines a GPU that reports an Xid, new uncorrectable ECC errors,\n"
		   "rows waiting to be remapped, or that fell off the bus (docs/policy.md).\n"
		   "GPU is an index, a UUID or a PCI bus id, or a list of them (0,3).\n"
		   "add and clear are root's (the owner's of the state directory).\n"
		   "\n"
		   "  --json         list as JSON (schema gpuctl.quarantine/1)\n"
		   "  --reason TEXT  with add: why, shown to everyone whose request it stops\n");
}

/* NVML index of a UUID in snap, else the index the mark recorded, else -1 */
static int index_of(const gc_snapshot *s, const struct quarantine_info *q)
{
	for (size_t i = 0; s && i < s->ngpus; i++)
		if (s->gpus[i].st[GC_V_UUID] == GC_ST_OK && strcmp(s->gpus[i].uuid, q->uuid) == 0)
			return (int)i;
	return q->gpu;
}

static int list(struct lease_dir *d, const gc_snapshot *snap, bool json)
{
	struct quarantine_info *v = NULL;
	size_t n = 0;
	if (d && quarantine_list(d, &v, &n) != GC_OK) {
		cli_err("cannot read the quarantine marks in '%s'", lease_dir_path(d));
		return EXIT_FAIL;
	}
	if (json) {
		json_t *root = json_pack("{s:s, s:o}", "schema", "gpuctl.quarantine/1", "state_dir",
					 d ? json_string(lease_dir_path(d)) : json_null());
		json_t *a = json_array();
		for (size_t i = 0; root && a && i < n; i++) {
			char since[32];
			time_t t = (time_t)v[i].since;
			struct tm tm;
			gmtime_r(&t, &tm);
			strftime(since, sizeof since, "%Y-%m-%dT%H:%M:%SZ", &tm);
			int idx = index_of(snap, &v[i]);
			json_t *o = json_pack("{s:o, s:s, s:s, s:o, s:s, s:s, s:s}", "gpu",
					      idx >= 0 ? json_integer(idx) : json_null(), "uuid", v[i].uuid, "reason",
					      v[i].reason, "xid", v[i].xid ? json_integer((json_int_t)v[i].xid) : json_null(),
					      "detail", v[i].detail, "since", since, "by", v[i].by);
			json_array_append_new(a, o);
		}
		json_object_set_new(root, "quarantined", a);
		int rc = cli_put_json(root);
		json_decref(root);
		free(v);
		return rc;
	}
	if (!n)
		printf("no GPU is quarantined\n");
	else
		printf("%-4s %-7s %-16s %-10s %s\n", "GPU", "REASON", "SINCE", "BY", "DETAIL");
	for (size_t i = 0; i < n; i++) {
		char since[32], gpu[16];
		time_t t = (time_t)v[i].since;
		struct tm tm;
		localtime_r(&t, &tm);
		strftime(since, sizeof since, "%Y-%m-%d %H:%M", &tm);
		int idx = index_of(snap, &v[i]);
		snprintf(gpu, sizeof gpu, idx >= 0 ? "%d" : "?", idx);
		printf("%-4s %-7s %-16s %-10s %s%s%s\n", gpu, v[i].reason, since, v[i].by, v[i].detail,
		       idx < 0 ? "  " : "", idx < 0 ? v[i].uuid : "");
	}
	free(v);
	return EXIT_OK;
}

int cmd_quarantine(const struct cli_global *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},
		{"reason", required_argument, NULL, 'r'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	bool json = false;
	const char *reason = NULL;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 'r': reason = optarg; break;
		case 'h': usage(stdout); return EXIT_OK;
		default: return cli_bad_option("quarantine", c, argv);
		}
	}
	const char *verb = optind < argc ? argv[optind++] : "list";
	const char *spec = optind < argc ? argv[optind++] : NULL;
	bool is_list = strcmp(verb, "list") == 0, is_add = strcmp(verb, "add") == 0, is_clear = strcmp(verb, "clear") == 0;
	if (!is_list && !is_add && !is_clear) {
		cli_err("invalid quarantine action '%s' (expected list, add or clear)", verb);
		return EXIT_USAGE;
	}
	if (is_list && spec)
		return cli_extra_arg("quarantine list", spec);
	if (optind < argc)
		return cli_extra_arg("quarantine", argv[optind]);
	if (!is_list && !spec) {
		cli_err("quarantine %s needs a GPU (an index, a UUID or a bus id%s)", verb, is_clear ? ", or all" : "");
		return EXIT_USAGE;
	}
	if (reason && !is_add) {
		cli_err("--reason goes with quarantine add only");
		return EXIT_USAGE;
	}
	if (json && !is_list) {
		cli_err("--json goes with quarantine list only");
		return EXIT_USAGE;
	}
	if (reason) {
		size_t rl = strlen(reason);
		bool ctl = false;
		for (const char *p = reason; *p; p++)
			ctl |= (unsigned char)*p < ' ' || *p == 0x7f;
		if (!rl || rl >= sizeof ((struct quarantine_info *)0)->detail || ctl) {
			cli_err("invalid --reason (expected one line of text, 1 to %zu characters)",
				sizeof ((struct quarantine_info *)0)->detail - 1);
			return EXIT_USAGE;
		}
	}
	char err[600];
	struct lease_dir *d = NULL;
	int orc = lease_dir_open(&d, NULL, is_add, err, sizeof err);
	if (orc != GC_OK && !(orc == GC_ENOTFOUND && !is_add)) {
		cli_err("%s", err);
		return EXIT_FAIL;
	}
	/* GPU indices come from the driver; a list works without it */
	gc_ctx *ctx = NULL;
	gc_snapshot snap = {0};
	gc_open_opts o = {.sim_node = g->sim};
	int crc = gc_ctx_open(&ctx, &o);
	bool have_snap = crc == GC_OK &&
			 gc_ctx_sample(ctx, &snap, GC_BIT(GC_V_UUID) | GC_BIT(GC_V_PCI), NULL, false) == GC_OK;
	int rc = EXIT_OK;
	bool *which = NULL;
	if (is_list) {
		rc = list(d, have_snap ? &snap : NULL, json);
		goto out;
	}
	if (!have_snap) {
		cli_err("cannot read the GPUs: %s", ctx ? gc_ctx_errmsg(ctx) : gc_strerror(crc));
		rc = cli_exit_code(crc) == EXIT_OK ? EXIT_FAIL : cli_exit_code(crc);
		goto out;
	}
	which = calloc(snap.ngpus ? snap.ngpus : 1, sizeof *which);
	if (!which) {
		cli_err("out of memory");
		rc = EXIT_FAIL;
		goto out;
	}
	bool all = is_clear && strcmp(spec, "all") == 0;
	if (all)
		for (size_t i = 0; i < snap.ngpus; i++)
			which[i] = true;
	else if ((rc = cli_select("GPU", spec, &snap, which)))
		goto out;
	if (!d) {
		/* no state directory yet: nothing was ever quarantined */
		if (!all) {
			cli_err("GPU %s is not quarantined", spec);
			rc = EXIT_FAIL;
		}
		goto out;
	}
	if (!quarantine_may_manage(d, err, sizeof err)) {
		cli_err("%s", err);
		rc = EXIT_FAIL;
		goto out;
	}
	for (size_t i = 0; i < snap.ngpus; i++) {
		if (!which[i])
			continue;
		const gc_gpu *gg = &snap.gpus[i];
		if (gg->st[GC_V_UUID] != GC_ST_OK) {
			cli_err("GPU %zu has no UUID to mark it by: %s", i, gc_status_token(gg->st[GC_V_UUID]));
			rc = EXIT_FAIL;
			continue;
		}
		if (is_add) {
			struct quarantine_info q = {.gpu = (int)i};
			snprintf(q.uuid, sizeof q.uuid, "%s", gg->uuid);
			snprintf(q.reason, sizeof q.reason, "admin");
			snprintf(q.detail, sizeof q.detail, "%s", reason ? reason : "taken out of service by an administrator");
			if (quarantine_set(d, &q, err, sizeof err) != GC_OK) {
				cli_err("%s", err);
				rc = EXIT_FAIL;
			} else {
				printf("GPU %zu quarantined\n", i);
			}
			continue;
		}
		int cr = quarantine_clear(d, gg->uuid, err, sizeof err);
		if (cr < 0) {
			cli_err("%s", err);
			rc = EXIT_FAIL;
		} else if (cr == 1) {
			printf("GPU %zu back in service\n", i);
		} else if (!all) {
			cli_err("GPU %zu is not quarantined", i);
			rc = EXIT_FAIL;
		}
	}
out:
	free(which);
	gpu_snapshot_release(&snap);
	gc_ctx_free(ctx);
	lease_dir_close(d);
	return rc;
}
