/*
 * cmd-leases.c — `gpuctl leases`: who holds which GPU, and who waits in
 * line for one (first come, first served), as text or JSON.
 */
#include "request.h"
#include "jobs/authority.h"

#include <getopt.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void iso_time(int64_t t, char *buf, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;
	gmtime_r(&tt, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void short_time(int64_t t, char *buf, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;
	localtime_r(&tt, &tm);
	strftime(buf, len, time(NULL) - tt < 86400 ? "%H:%M:%S" : "%Y-%m-%d", &tm);
}

static json_t *info_json(const struct lease_info *i)
{
	char since[32];
	iso_time(i->since, since, sizeof since);
	json_t *o = json_pack("{s:s, s:I, s:I, s:I, s:s, s:s, s:s}", "user", i->user, "uid", (json_int_t)i->uid,
			      "pid", (json_int_t)i->pid, "supervisor", (json_int_t)i->supervisor, "since", since,
			      "name", i->name, "command", i->command);
	/* the job and its supervisor are gone; an orphan of the job holds the lease */
	if (o && i->orphan) {
		json_object_set_new(o, "orphan", json_true());
		json_object_set_new(o, "holder_pid", i->live > 0 ? json_integer(i->live) : json_null());
	}
	return o;
}

/* NVML index of a UUID, or -1 */
static int index_of(const gc_snapshot *s, const char *uuid)
{
	for (size_t i = 0; s && i < s->ngpus; i++)
		if (s->gpus[i].st[GC_V_UUID] == GC_ST_OK && strcmp(s->gpus[i].uuid, uuid) == 0)
			return (int)i;
	return -1;
}

static int by_index(const void *a, const void *b, void *snap)
{
	int x = index_of(snap, ((const struct lease_entry *)a)->uuid);
	int y = index_of(snap, ((const struct lease_entry *)b)->uuid);
	if (x != y)
		return x < 0 ? 1 : y < 0 ? -1 : x - y;
	return strcmp(((const struct lease_entry *)a)->uuid, ((const struct lease_entry *)b)->uuid);
}

int cmd_leases(const struct cli_global *g, int argc, char **argv)
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
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 'h':
			printf("usage: gpuctl leases [--json]\n\n"
			       "GPUs leased by gpuctl run/pick, and the queue of those waiting (first come,\n"
			       "first served).\n");
			return EXIT_OK;
		default:
			return cli_bad_option("leases", c, argv);
		}
	}
	if (optind < argc)
		return cli_extra_arg("leases", argv[optind]);
	char err[512];
	struct lease_dir *d = NULL;
	int orc = lease_dir_open(&d, NULL, false, err, sizeof err);
	if (orc != GC_OK && orc != GC_ENOTFOUND) {
		cli_err("%s", err);
		return EXIT_FAIL;
	}
	/* GPU indices come from NVML when it is there; leases are listed either way */
	gc_ctx *ctx = NULL;
	gc_snapshot snap = {0};
	gc_open_opts o = {.sim_node = g->sim};
	bool have_snap = gc_ctx_open(&ctx, &o) == GC_OK &&
			 gc_ctx_sample(ctx, &snap, GC_BIT(GC_V_UUID), NULL, false) == GC_OK;
	struct lease_entry *held = NULL;
	struct lease_waiter *waiting = NULL;
	size_t nh = 0, nw = 0;
	int rc = EXIT_OK;
	/* a state directory that does not exist yet holds no lease */
	if (d && (lease_list(d, &held, &nh) != GC_OK || lease_queue_list(d, &waiting, &nw) != GC_OK)) {
		cli_err("cannot read the leases in '%s'", lease_dir_path(d));
		rc = EXIT_FAIL;
		goto out;
	}
	if (nh > 1)
		qsort_r(held, nh, sizeof *held, by_index, have_snap ? &snap : NULL);
	if (json) {
		json_t *root = json_pack("{s:s, s:o, s:s}", "schema", "gpuctl.leases/1", "state_dir",
					 d ? json_string(lease_dir_path(d)) : json_null(), "mode",
					 lease_dir_authority(d) ? "authority" : "cooperative");
		json_t *a = json_array();
		for (size_t i = 0; i < nh; i++) {
			json_t *o2 = info_json(&held[i].info);
			int idx = index_of(have_snap ? &snap : NULL, held[i].uuid);
			json_object_set_new(o2, "gpu", idx >= 0 ? json_integer(idx) : json_null());
			json_object_set_new(o2, "uuid", json_string(held[i].uuid));
			json_array_append_new(a, o2);
		}
		json_object_set_new(root, "leases", a);
		json_t *q = json_array();
		for (size_t i = 0; i < nw; i++) {
			json_t *o2 = info_json(&waiting[i].info);
			json_object_set_new(o2, "position", json_integer((json_int_t)i + 1));
			json_object_set_new(o2, "ticket", json_integer((json_int_t)waiting[i].ticket));
			json_object_set_new(o2, "request", json_string(waiting[i].info.request));
			json_array_append_new(q, o2);
		}
		json_object_set_new(root, "queue", q);
		rc = cli_put_json(root);
		json_decref(root);
		goto out;
	}
	if (nh == 0)
		printf("no GPU is leased\n");
	else
		printf("%-4s %-10s %8s  %-8s  %-12s %s\n", "GPU", "USER", "PID", "SINCE", "JOB", "COMMAND");
	for (size_t i = 0; i < nh; i++) {
		struct lease_info safe = held[i].info, *in = &safe;
		lease_info_sanitize(in);
		char since[32], gpu[16];
		short_time(in->since, since, sizeof since);
		int idx = index_of(have_snap ? &snap : NULL, held[i].uuid);
		if (idx >= 0)
			snprintf(gpu, sizeof gpu, "%d", idx);
		else
			snprintf(gpu, sizeof gpu, "?");
		char orphan[64] = "";
		if (in->orphan)
			snprintf(orphan, sizeof orphan, "(orphan of pid %d) ", (int)in->pid);
		printf("%-4s %-10s %8d  %-8s  %-12s %s%s%s%s\n", gpu, in->user, (int)(in->orphan ? in->live : in->pid),
		       since, in->name[0] ? in->name : "-", orphan, in->command, idx < 0 ? "  " : "",
		       idx < 0 ? held[i].uuid : "");
	}
	if (nw) {
		printf("\nwaiting, first come first served:\n");
		printf("%-4s %-10s %8s  %-8s  %-12s %s\n", "#", "USER", "PID", "SINCE", "WANTS", "COMMAND");
		for (size_t i = 0; i < nw; i++) {
			struct lease_info safe = waiting[i].info, *in = &safe;
			lease_info_sanitize(in);
			char since[32];
			short_time(in->since, since, sizeof since);
			printf("%-4zu %-10s %8d  %-8s  %-12s %s\n", i + 1, in->user, (int)in->pid, since,
			       in->request, in->command);
		}
	}
	/* which mode is in force (docs/security.md) */
	if (lease_dir_authority(d))
		printf("\nauthority mode: gpuctld grants every lease (%s)\n", authority_dir());
	else
		printf("\ncooperative mode: claim files in %s, which prevent accidents, not a hostile user "
		       "(docs/security.md)\n", d ? lease_dir_path(d) : "the state directory");
out:
	free(held);
	free(waiting);
	gpu_snapshot_release(&snap);
	gc_ctx_free(ctx);
	lease_dir_close(d);
	return rc;
}
