/*
 * sky.c — SkyPilot task YAML from advise's plans (see sky.h, docs/cloud.md).
 *
 * Every string is written as a YAML double-quoted scalar, which is what a
 * JSON string is (jansson, ASCII only: \uXXXX escapes): no value can break
 * the document or smuggle a key, whatever the command line holds.
 */
#include "advise/sky.h"
#include "util/errbuf.h"
#include "util/shquote.h"
#include "gpuctl/gpuctl.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* SkyPilot's clouds (sky/skylet/constants.py ALL_CLOUDS) that advise's catalogs can name */
static const char *const sky_clouds[] = {"aws",    "azure", "gcp",        "ibm",        "lambda",  "scp",
					 "oci",    "runpod", "vast",      "vsphere",    "cudo",    "fluidstack",
					 "paperspace", "primeintellect", "do", "nebius", "hyperbolic", "seeweb",
					 "shadeform", "yotta"};

/* the bucket schemes SkyPilot mounts (sky/data/storage.py StoreType prefixes) */
static const char *const bucket_schemes[] = {"s3://", "gs://", "r2://", "https://", "cos://", "oci://"};

const char *sky_accelerator(const spec_sky *t, size_t n, const char *row_acc, const char *gpu)
{
	for (size_t i = 0; row_acc && i < n; i++)
		if (strcasecmp(t[i].name, row_acc) == 0)
			return t[i].name;
	for (size_t i = 0; gpu && i < n; i++)
		if (strcasecmp(t[i].gpu, gpu) == 0)
			return t[i].name;
	return NULL;
}

/* s as a YAML double-quoted scalar (a JSON string); NULL when s is not UTF-8 or memory ran out */
static char *quoted(const char *s)
{
	json_t *j = json_string(s);
	char *q = j ? json_dumps(j, JSON_ENCODE_ANY | JSON_ENSURE_ASCII) : NULL;
	json_decref(j);
	return q;
}

/*
 * The run line: the command under gpuctl run (or launch) with the spot and
 * checkpoint options; on several nodes, gpuctl launch --sky-step on each
 * (torchrun meeting at the head; SkyPilot relaunches all nodes after a
 * preemption, so no local restart). Each word of the command and the
 * directory as one shell word (shquote). NULL when memory ran out.
 */
/* the word's last path component */
static const char *base(const char *s)
{
	const char *b = strrchr(s, '/');
	return b ? b + 1 : s;
}

/* "python", "python3", "python3.11" */
static bool is_python(const char *s)
{
	const char *b = base(s);
	return strncmp(b, "python", 6) == 0 && strspn(b + 6, "0123456789.") == strlen(b + 6);
}

/*
 * How a single node's plan runs its command. A training plan of several GPUs
 * pays for all of them, so it runs one process per GPU: `python SCRIPT ...`
 * becomes torchrun's SCRIPT under gpuctl launch; a command that starts its own
 * processes (torchrun, accelerate, deepspeed) runs under gpuctl run with every
 * GPU visible; anything else under gpuctl run, said in a comment. --launch
 * asks for gpuctl launch whatever the command.
 */
enum how { HOW_RUN, HOW_LAUNCH, HOW_LAUNCH_SCRIPT, HOW_RUN_OWN_LAUNCHER };

static enum how how_to_run(const struct advise_result *res, const struct advise_sky_opts *o, bool several)
{
	int task = res->req.job.task;
	bool train = memmodel_trains(task);
	if (o->launch)
		return HOW_LAUNCH;
	if (!train || !several || o->ncmd == 0)
		return HOW_RUN;
	const char *c0 = base(o->cmd[0]);
	if (!strcmp(c0, "torchrun") || !strcmp(c0, "accelerate") || !strcmp(c0, "deepspeed"))
		return HOW_RUN_OWN_LAUNCHER;
	if (is_python(o->cmd[0]) && o->ncmd > 1 && o->cmd[1][0] != '-')
		return HOW_LAUNCH_SCRIPT;
	return HOW_RUN;
}

static char *run_line(const struct advise_result *res, const struct advise_sky_opts *o, const char *dir, bool multi,
		      enum how how)
{
	char *b = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&b, &n);
	if (!f)
		return NULL;
	bool launch = how == HOW_LAUNCH || how == HOW_LAUNCH_SCRIPT;
	fputs(multi ? "gpuctl launch --sky-step" : launch ? "gpuctl launch" : "gpuctl run", f);
	fputs(" -n \"$SKYPILOT_NUM_GPUS_PER_NODE\"", f);
	fputs(multi ? (res->req.spot ? " --spot" : "") : res->req.spot ? " --spot --restart on-preempt" : " --restart on-failure",
	      f);
	fputs(" --checkpoint-dir ", f);
	if (o->ckpt_dir)
		shquote(f, dir);
	else
		fputs(o->bucket ? "/gpuctl-ckpt" : "\"$HOME/gpuctl-ckpt\"", f);
	fputs(" --", f);
	for (size_t i = how == HOW_LAUNCH_SCRIPT && !multi ? 1 : 0; i < o->ncmd; i++) {
		fputc(' ', f);
		shquote(f, o->cmd[i]);
	}
	if (fclose(f) != 0) {
		free(b);
		return NULL;
	}
	return b;
}

/* gpuctl-MODEL-TASK in lower case, other characters as '-' */
static void default_name(const struct advise_result *res, char *out, size_t len)
{
	snprintf(out, len, "gpuctl-%s-%s", res->req.model.name, memmodel_task_name(res->req.job.task));
	for (char *p = out; *p; p++)
		*p = isalnum((unsigned char)*p) ? (char)tolower((unsigned char)*p) : '-';
}

static bool known(const char *const *v, size_t n, const char *s, bool prefix)
{
	for (size_t i = 0; i < n; i++)
		if (prefix ? strncasecmp(s, v[i], strlen(v[i])) == 0 && s[strlen(v[i])] : strcasecmp(s, v[i]) == 0)
			return true;
	return false;
}

#define NITEMS(a) (sizeof(a) / sizeof((a)[0]))

int advise_emit_skypilot(const struct advise_result *res, const spec_sky *t, size_t nt,
			 const struct advise_sky_opts *o, FILE *f, char *tname, size_t namelen, char *err, size_t errlen)
{
	if (!o->cmd || o->ncmd == 0) {
		errbuf_set(err, errlen, "--emit skypilot needs the job's command after '--' (gpuctl advise ... "
					"--emit skypilot -- python train.py)");
		return GC_EINVAL;
	}
	if (o->bucket && !known(bucket_schemes, NITEMS(bucket_schemes), o->bucket, true)) {
		errbuf_set(err, errlen, "invalid --checkpoint-bucket '%.200s' (expected a bucket URL: s3://, gs://, "
					"r2://, https:// (Azure blob), cos:// or oci://)", o->bucket);
		return GC_EINVAL;
	}
	if (o->ckpt_dir && o->ckpt_dir[0] != '/') {
		errbuf_set(err, errlen, "invalid --checkpoint-dir '%.200s' (expected an absolute path on the VM, such "
					"as /gpuctl-ckpt)", o->ckpt_dir);
		return GC_EINVAL;
	}
	size_t show = res->np < res->top ? res->np : res->top;
	if (show == 0) {
		errbuf_set(err, errlen, "no plan fits: nothing to hand to SkyPilot");
		return GC_EINVAL;
	}
	/* num_nodes is the task's: the plans of the cheapest one's node count */
	unsigned nodes = res->plans[0].nodes;
	size_t other = 0;
	for (size_t i = 0; i < show; i++) {
		const advise_plan *p = &res->plans[i];
		if (p->nodes != nodes) {
			other++;
			continue;
		}
		if (!known(sky_clouds, NITEMS(sky_clouds), p->row->cloud, false)) {
			errbuf_set(err, errlen, "plan %zu is on cloud '%s', which SkyPilot does not know: name the catalog "
						"file after its cloud (aws.csv, gcp.csv) or give it a Cloud column", i + 1,
				   p->row->cloud);
			return GC_EINVAL;
		}
		if (!sky_accelerator(t, nt, p->row->acc, p->gpu->name)) {
			errbuf_set(err, errlen, "plan %zu: SkyPilot has no accelerator name for %s (data/sky-accelerators.csv)",
				   i + 1, p->gpu->name);
			return GC_EINVAL;
		}
	}
	char name[96];
	if (o->name)
		snprintf(name, sizeof name, "%s", o->name);
	else
		default_name(res, name, sizeof name);
	if (tname && namelen)
		snprintf(tname, namelen, "%s", name);
	const char *dir = o->ckpt_dir ? o->ckpt_dir : o->bucket ? "/gpuctl-ckpt" : NULL;
	bool several = false;
	for (size_t i = 0; i < show; i++)
		several |= res->plans[i].nodes == nodes && res->plans[i].row->count > 1;
	enum how how = how_to_run(res, o, several);
	char *run = run_line(res, o, dir, nodes > 1, how);
	char install_fail[] = "echo 'gpuctl is not installed on this VM: gpuctl advise --setup COMMAND gives the line "
			      "that installs it (docs/cloud.md)' >&2; exit 1";
	char *setup = NULL;
	bool ok = run && asprintf(&setup, "command -v gpuctl >/dev/null 2>&1 || { %s; }",
				  o->install ? o->install : install_fail) >= 0;
	if (!ok)
		setup = NULL;
	char *qname = ok ? quoted(name) : NULL, *qrun = ok ? quoted(run) : NULL, *qsetup = ok ? quoted(setup) : NULL;
	char *qbucket = o->bucket && ok ? quoted(o->bucket) : NULL, *qdir = dir && ok ? quoted(dir) : NULL;
	int rc = GC_OK;
	if (!ok) {
		errbuf_set(err, errlen, "out of memory");
		rc = GC_ENOMEM;
		goto out;
	}
	if (!qname || !qrun || !qsetup || (o->bucket && (!qbucket || !qdir))) {
		errbuf_set(err, errlen, "--emit skypilot: the command, --name, --setup and the bucket must be UTF-8 text");
		rc = GC_EINVAL;
		goto out;
	}
	fprintf(f, "# SkyPilot task written by gpuctl advise (prices of %s): %s, %s; %zu plan%s, %s.\n",
		res->cat.date[0] ? res->cat.date : "an undated catalog", res->req.model.name,
		memmodel_task_name(res->req.job.task), show - other, show - other == 1 ? "" : "s",
		o->any ? "any of them (SkyPilot's optimizer picks)" : "cheapest first");
	fprintf(f, "# Run it as a managed job: sky jobs launch FILE. A preempted job is relaunched in the next region\n"
		   "# (EAGER_NEXT_REGION); gpuctl on the VM stops it on the cloud's notice and resumes it from\n"
		   "# the newest complete checkpoint in the checkpoint directory.\n");
	if (other)
		fprintf(f, "# Left out: %zu plan%s on another number of nodes (num_nodes is the task's).\n", other,
			other == 1 ? "" : "s");
	if (nodes > 1)
		fprintf(f, "# %u nodes: each runs gpuctl launch --sky-step, torchrun meeting at the first node's\n"
			   "# address (SKYPILOT_NODE_IPS) on port 29500; the command is torchrun's script.\n", nodes);
	if (!o->bucket)
		fprintf(f, "# No --checkpoint-bucket: checkpoints stay on the VM's disk and are lost with it.\n");
	int task = res->req.job.task;
	bool train = memmodel_trains(task);
	if (nodes == 1 && how == HOW_LAUNCH_SCRIPT)
		fprintf(f, "# Plans of several GPUs, paid for together: the script runs under torchrun (gpuctl launch),\n"
			   "# one process per GPU.\n");
	else if (nodes == 1 && how == HOW_RUN_OWN_LAUNCHER)
		fprintf(f, "# Plans of several GPUs: %s starts one process per GPU itself; gpuctl run gives it them all\n"
			   "# (CUDA_VISIBLE_DEVICES; SKYPILOT_NUM_GPUS_PER_NODE for its --nproc_per_node).\n", base(o->cmd[0]));
	else if (several && train && nodes == 1 && how == HOW_RUN)
		fprintf(f, "# Plans of several GPUs: the command gets them all (CUDA_VISIBLE_DEVICES), and a program\n"
			   "# that uses one GPU leaves the rest idle; --launch runs it under torchrun, one process per GPU.\n");
	fprintf(f, "name: %s\n", qname);
	if (nodes > 1)
		fprintf(f, "num_nodes: %u\n", nodes);
	fprintf(f, "resources:\n  use_spot: %s\n  disk_size: %u\n  job_recovery:\n"
		   "    strategy: \"EAGER_NEXT_REGION\"\n    max_restarts_on_errors: %u\n  %s:\n",
		res->req.spot ? "true" : "false", o->disk_gb, o->max_restarts, o->any ? "any_of" : "ordered");
	for (size_t i = 0; i < show; i++) {
		const advise_plan *p = &res->plans[i];
		if (p->nodes != nodes)
			continue;
		char infra[64], acc[64];
		snprintf(infra, sizeof infra, "%s/%s", p->row->cloud, p->row->region);
		for (char *c = infra; *c && *c != '/'; c++)
			*c = (char)tolower((unsigned char)*c);
		snprintf(acc, sizeof acc, "%s:%u", sky_accelerator(t, nt, p->row->acc, p->gpu->name), p->row->count);
		char *qi = quoted(infra), *qt = quoted(p->row->instance), *qa = quoted(acc);
		if (qi && qt && qa)
			fprintf(f, "    - infra: %s\n      instance_type: %s\n      accelerators: %s\n", qi, qt, qa);
		else
			rc = GC_EINVAL;
		free(qi);
		free(qt);
		free(qa);
		if (rc) {
			errbuf_set(err, errlen, "plan %zu: a catalog field is not UTF-8 text", i + 1);
			goto out;
		}
	}
	if (o->bucket)
		fprintf(f, "file_mounts:\n  %s:\n    source: %s\n    mode: \"MOUNT\"\n", qdir, qbucket);
	fprintf(f, "setup: %s\nrun: %s\n", qsetup, qrun);
	if (fflush(f) != 0 || ferror(f)) {
		errbuf_set(err, errlen, "cannot write the task: %s", strerror(errno));
		rc = GC_EIO;
	}
out:
	free(run);
	free(setup);
	free(qname);
	free(qrun);
	free(qsetup);
	free(qbucket);
	free(qdir);
	return rc;
}
