/*
 * cmd-advise.c — `gpuctl advise`: the cheapest GPU setups that will run a
 * workload, with the memory breakdown that decides it, estimated time and
 * cost on-demand and spot; and `gpuctl gpus`, the GPU table it uses.
 * Exit 0 with at least one feasible setup, 1 when none fits (the output
 * says what the smallest feasible setup needs), 2 for bad input.
 */
#include "advise/advise.h"
#include "advise/catalog.h"
#include "cli.h"
#include "opttab.h"
#include "advise/here.h"
#include "advise/memmodel.h"
#include "advise/sky.h"
#include "advise/specs.h"
#include "util/shquote.h"
#include "util/units.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <spawn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define GB 1e9

static void fmt_gb(char *buf, size_t len, double bytes)
{
	snprintf(buf, len, bytes >= 10 * GB ? "%.0f GB" : "%.1f GB", bytes / GB);
}

/* a count as people write it: 1B, 100M, 115M, 1.5T */
static void fmt_count(char *buf, size_t len, double v)
{
	static const struct {
		double unit;
		const char *suffix;
	} u[] = {{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "K"}};
	for (size_t i = 0; i < sizeof u / sizeof u[0]; i++) {
		/* 999.96M prints as 1B, not as 1e+03M */
		if (v >= u[i].unit * 0.9995) {
			snprintf(buf, len, "%.3g%s", v / u[i].unit, u[i].suffix);
			return;
		}
	}
	snprintf(buf, len, "%.3g", v);
}

/*
 * The work the time and cost are for, as the header states it: "1B training
 * tokens", "10M generated tokens, 256 per request after a 3840-token prompt".
 * given: whether --tokens set it (else it is the task's default).
 */
static void work_text(const advise_req *r, bool given, char *buf, size_t len)
{
	char n[32];
	fmt_count(n, sizeof n, r->tokens);
	const memmodel_job *j = &r->job;
	const char *how = given ? "--tokens" : "default; --tokens sets it";
	if (r->model.kind == MEMMODEL_CNN) {
		snprintf(buf, len, "%s images (%s%s)", n, given ? "" : "90 ImageNet-1k epochs, ", how);
	} else if (j->task == MEMMODEL_INFER) {
		unsigned out = r->output_len ? r->output_len : 1;
		unsigned seq = j->seq ? j->seq : r->model.seq;
		if (seq > out)
			snprintf(buf, len, "%s generated tokens, %u per request after a %u-token prompt (%s)", n, out,
				 seq - out, how);
		else
			snprintf(buf, len, "%s generated tokens, %u per request (%s)", n, out, how);
	} else {
		snprintf(buf, len, "%s %s tokens (%s)", n, j->task == MEMMODEL_EMBED ? "embedded" : "training", how);
	}
}

static void plan_text(const advise_plan *p, bool train, char *buf, size_t len)
{
	if (!train)
		snprintf(buf, len, "tp%u x%u", p->tp, p->dp);
	else
		snprintf(buf, len, "tp%u dp%u zero%d%s%s", p->tp, p->dp, p->zero,
			 p->recompute == MEMMODEL_RC_FULL ? " ckpt" : p->recompute == MEMMODEL_RC_SELECTIVE ? " sel" : "",
			 p->offload ? " offload" : "");
}

static void breakdown(const char *title, const memmodel_mem *m, unsigned gpus)
{
	char w[32], g[32], o[32], a[32], k[32], v[32], t[32];
	fmt_gb(w, sizeof w, m->weights);
	fmt_gb(g, sizeof g, m->grads);
	fmt_gb(o, sizeof o, m->optimizer);
	fmt_gb(a, sizeof a, m->activations);
	fmt_gb(k, sizeof k, m->kv);
	fmt_gb(v, sizeof v, m->overhead);
	fmt_gb(t, sizeof t, m->total);
	printf("%s%s\n  weights %s, gradients %s, optimizer %s, activations %s, KV cache %s, overhead %s = %s%s\n",
	       title, gpus > 1 ? " (per GPU)" : "", w, g, o, a, k, v, t,
	       m->partial ? " (at least: activations and KV cache need the architecture)" : "");
	if (m->cpu > 0) {
		fmt_gb(t, sizeof t, m->cpu);
		printf("  plus %s of CPU memory for offloaded states\n", t);
	}
}

/*
 * `gpuctl launch --sky`: the task YAML written to `task_file` (else to a new
 * private directory under $TMPDIR, removed afterwards), then `sky jobs launch
 * -y [-d] -n NAME FILE`, whose exit status it returns; --dry-run prints the
 * task and the command and runs nothing.
 */
static int sky_launch(const char *yaml, const char *name, const char *task_file, bool dry_run, bool follow)
{
	char dir[PATH_MAX] = "", path[PATH_MAX + 16];
	if (task_file) {
		snprintf(path, sizeof path, "%s", task_file);
	} else if (dry_run) {
		snprintf(path, sizeof path, "$TMPDIR/gpuctl-sky-XXXXXX/task.yaml");
	} else {
		const char *tmp = getenv("TMPDIR");
		snprintf(dir, sizeof dir, "%s/gpuctl-sky-XXXXXX", tmp && *tmp ? tmp : "/tmp");
		if (!mkdtemp(dir)) {
			cli_err("cannot make a directory for the task in %s: %s", tmp && *tmp ? tmp : "/tmp", strerror(errno));
			return EXIT_FAIL;
		}
		snprintf(path, sizeof path, "%s/task.yaml", dir);
	}
	char *const cmd[] = {"sky", "jobs", "launch", "-y", follow ? "-n" : "-d", follow ? (char *)name : "-n",
			     follow ? path : (char *)name, follow ? NULL : path, NULL};
	if (dry_run) {
		fputs(yaml, stdout);
		printf("# gpuctl launch --sky runs:\n");
		for (int i = 0; cmd[i]; i++) {
			if (i)
				putchar(' ');
			shquote(stdout, cmd[i]);
		}
		putchar('\n');
		return fflush(stdout) == 0 ? EXIT_OK : EXIT_FAIL;
	}
	/* the task file whole or not at all: a temporary beside it, renamed over it */
	char tmp[PATH_MAX + 48];
	snprintf(tmp, sizeof tmp, "%s.%d.tmp", path, (int)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	size_t len = strlen(yaml), off = 0;
	while (fd >= 0 && off < len) {
		ssize_t w = write(fd, yaml + off, len - off);
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	int rc = EXIT_OK;
	if (fd < 0 || off < len || fsync(fd) != 0 || close(fd) != 0 || rename(tmp, path) != 0) {
		cli_err("cannot write the task to %s: %s", fd < 0 ? tmp : path, strerror(errno));
		if (fd >= 0)
			unlink(tmp);
		rc = EXIT_FAIL;
	}
	pid_t pid = -1;
	int err = rc == EXIT_OK ? posix_spawnp(&pid, "sky", NULL, NULL, cmd, environ) : 0;
	if (rc == EXIT_OK && err) {
		cli_err("cannot run sky: %s (is SkyPilot installed? pip install 'skypilot[aws,gcp,azure]')", strerror(err));
		rc = EXIT_FAIL;
	} else if (rc == EXIT_OK) {
		int st = 0;
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		if (rc)
			cli_err("sky jobs launch failed (status %d); the task: %s", rc, dir[0] ? "removed" : path);
	}
	if (dir[0]) {
		unlink(path);
		rmdir(dir);
	}
	return rc;
}

static int advise_cli(const struct cli_global *g, int argc, char **argv, bool sky);

int cmd_advise(const struct cli_global *g, int argc, char **argv)
{
	return advise_cli(g, argc, argv, false);
}

int cmd_advise_sky(const struct cli_global *g, int argc, char **argv)
{
	return advise_cli(g, argc, argv, true);
}

/* what advise's options set (the library's and the CLI's own) */
struct advise_cli {
	struct advise_input in;
	struct advise_sky_opts so;
	bool json, emit, sky, dry_run, follow;
	const char *task_file;
};

#define AT(f) OPT_AT(struct advise_cli, f)

/* one of the library's options (advise_options) */
static int lib_option(const struct opt *o, const char *arg, void *cli)
{
	char err[1024];
	if (advise_option(&((struct advise_cli *)cli)->in, o->name, arg, err, sizeof err) != GC_OK) {
		cli_err("%s", err);
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

static int set_emit(const struct opt *o, const char *arg, void *cli)
{
	if (((struct advise_cli *)cli)->sky) {
		cli_err("gpuctl launch --sky writes the SkyPilot task itself: --emit is advise's");
		return EXIT_USAGE;
	}
	if (strcmp(arg, "skypilot") != 0) {
		cli_err("invalid --emit '%s' (accepted: skypilot)", arg);
		return EXIT_USAGE;
	}
	((struct advise_cli *)cli)->emit = true;
	return EXIT_OK;
}

/* the YAML's name: a line of text SkyPilot shows; a longer one was cut short unsaid */
static int set_name(const struct opt *o, const char *arg, void *cli)
{
	size_t l = strlen(arg);
	bool ok = l > 0 && l <= 95;
	for (size_t i = 0; ok && i < l; i++)
		ok = (unsigned char)arg[i] >= 0x20 && arg[i] != 0x7f;
	if (!ok) {
		cli_err("invalid --name (expected 1 to 95 characters, no control characters; %zu given)", l);
		return EXIT_USAGE;
	}
	((struct advise_cli *)cli)->so.name = arg;
	return EXIT_OK;
}

/* --emit skypilot's own options: any of them without --emit is refused */
static const struct opt emit_options[] = {
	{OPT_SECTION, .help = "\nA SkyPilot task instead of the table (docs/cloud.md), the job after \"--\":"},
	{OPT_CALLBACK, "emit", "skypilot", "write the plans shown as a SkyPilot task YAML for sky jobs launch",
	 .cb = set_emit, .flags = OPT_VALUE},
	{OPT_FLAG, "any", .help = "resources.any_of: SkyPilot picks among the plans (default: ordered, cheapest first)",
	 AT(so.any)},
	{OPT_FLAG, "launch", .help = "gpuctl launch (torchrun, one process per GPU) whatever the command", AT(so.launch)},
	{OPT_STRING, "checkpoint-bucket", "URL", "mount the bucket at --checkpoint-dir and keep the checkpoints there",
	 AT(so.bucket)},
	{OPT_STRING, "checkpoint-dir", "DIR", "the checkpoints' directory on the VM (default /gpuctl-ckpt)",
	 AT(so.ckpt_dir)},
	{OPT_STRING, "setup", "CMD", "the line that installs gpuctl on a VM without it", AT(so.install)},
	{OPT_CALLBACK, "name", "NAME", "the task's name (1 to 95 characters; default gpuctl-MODEL-TASK)",
	 .cb = set_name, .flags = OPT_VALUE},
	{OPT_COUNT, "max-restarts", "N", "job_recovery.max_restarts_on_errors (default 3)", AT(so.max_restarts),
	 .min = 0, .max = 1000},
	{OPT_COUNT, "disk-size", "GB", "resources.disk_size (default 256)", AT(so.disk_gb), .min = 1, .max = 65536,
	 .accepted = "expected GB, a whole number from 1 to 65536"},
	{OPT_END},
};

/* gpuctl launch --sky's own */
static const struct opt sky_options[] = {
	{OPT_FLAG, "sky", .help = "advise's plans handed to SkyPilot", AT(sky)},
	{OPT_FLAG, "dry-run", .help = "print the task and the command, run nothing", AT(dry_run)},
	{OPT_STRING, "task-file", "FILE", "write the task there (default: a private temporary file)", AT(task_file)},
	{OPT_FLAG, "follow", .help = "stream the job's logs until it ends (default: detach)", AT(follow)},
	{OPT_END},
};

static const struct opt tail_options[] = {
	{OPT_SECTION, .help = ""},
	{OPT_FLAG, "json", .help = "the plans as JSON (schema gpuctl.advise/1, docs/advise.md)", AT(json)},
	{OPT_CALLER, "help", .help = "print this help", .val = 'h', .shortopt = 'h'},
	{OPT_END},
};

/* advise's table (launch --sky's, with sky): the library's options, then --emit's, the CLI's own */
static struct opt *advise_table(bool sky, size_t *emit_from, size_t *emit_to)
{
	size_t n = 0, ne = opt_count(emit_options), ns = opt_count(sky_options), nt = opt_count(tail_options);
	struct opt *t = calloc(ns + advise_noptions + ne + nt + 2, sizeof *t);
	if (!t)
		return NULL;
	for (size_t i = 0; sky && i < ns; i++)
		t[n++] = sky_options[i];
	if (sky)
		t[n++] = (struct opt){OPT_SECTION, .help = "\nadvise's options:"};
	for (size_t i = 0; i < advise_noptions; i++)
		t[n++] = (struct opt){OPT_CALLBACK, advise_options[i].name, advise_options[i].arg, advise_options[i].help,
				      .cb = lib_option, .flags = advise_options[i].arg ? OPT_VALUE : 0};
	*emit_from = n;
	for (size_t i = 0; i < ne; i++) {
		t[n] = emit_options[i];
		if (sky && t[n].type == OPT_SECTION)
			t[n].help = "\nThe task (as advise --emit skypilot writes it, with these):";
		if (sky && t[n].type == OPT_CALLBACK && t[n].cb == set_emit)
			t[n].flags |= OPT_HIDDEN; /* taken, to say it is advise's */
		n++;
	}
	*emit_to = n;
	for (size_t i = 0; i < nt; i++) {
		t[n] = tail_options[i];
		if (sky && t[n].type == OPT_FLAG)
			t[n].flags |= OPT_HIDDEN; /* taken, to say that launch --sky runs the task: --json is advise's */
		n++;
	}
	return t;
}

static void advise_help(const struct opt *t, bool sky)
{
	if (sky)
		printf("usage: gpuctl launch --sky (--model NAME | --params N) [advise options] [--dry-run]\n"
		       "                    [--task-file FILE] [--follow] -- CMD [ARGS...]\n\n"
		       "Write the plans gpuctl advise finds as a SkyPilot task (as advise --emit skypilot\n"
		       "does, with its options) and run sky jobs launch on it.\n\n");
	else
		printf("usage: gpuctl advise (--model NAME | --params N [--layers L --hidden H --heads A\n"
		       "                      [--kv-heads K] [--vocab V] [--ffn F]]) [--task TASK] [options] [--json]\n"
		       "       gpuctl advise ... --emit skypilot [task options] -- CMD [ARGS...]\n\n"
		       "The cheapest GPU setups that run a workload, with the memory breakdown that decides\n"
		       "it, estimated time and cost on-demand and spot (docs/advise.md).\n\n");
	opt_help(stdout, t);
}

/* the command line into cli: EXIT_OK, -1 after --help, else an exit code after one error line */
static int advise_parse(int argc, char **argv, bool sky, struct advise_cli *cli, bool *emit_opt)
{
	*cli = (struct advise_cli){.so = {.max_restarts = 3, .disk_gb = 256}};
	advise_input_init(&cli->in);
	size_t emit_from, emit_to;
	struct opt *t = advise_table(sky, &emit_from, &emit_to);
	struct optparse op;
	if (!t || optparse_init(&op, t, NULL, NULL, false) != GC_OK) {
		free(t);
		cli_err("out of memory");
		return EXIT_FAIL;
	}
	cli->sky = cli->emit = sky;
	*emit_opt = false;
	const struct opt *o;
	const char *arg;
	int c, rc = EXIT_OK;
	optind = 1;
	while (rc == EXIT_OK && (c = optparse_next(&op, argc, argv, &o, &arg)) != -1) {
		if (c == 'h') {
			advise_help(t, sky);
			rc = -1;
		} else if (!o) {
			rc = cli_bad_option("advise", c, argv);
		} else {
			rc = opt_apply(o, arg, cli);
			*emit_opt |= o >= t + emit_from && o < t + emit_to && o->cb != set_emit;
		}
	}
	optparse_free(&op);
	free(t);
	return rc;
}

/* the SkyPilot task (advise --emit skypilot on stdout; launch --sky: handed to sky) */
static int advise_emit(struct advise_result *res, const struct advise_cli *cli, bool sky)
{
	spec_sky *skyt = NULL;
	size_t nsky = 0;
	char *yaml = NULL, err[1024];
	size_t ylen = 0;
	FILE *out = sky ? open_memstream(&yaml, &ylen) : stdout;
	int erc = out ? advise_load_sky(&skyt, &nsky, err, sizeof err) : GC_ENOMEM;
	if (!out)
		snprintf(err, sizeof err, "out of memory");
	char name[96] = "";
	if (erc == GC_OK)
		erc = advise_emit_skypilot(res, skyt, nsky, &cli->so, out, name, sizeof name, err, sizeof err);
	if (sky && out && fclose(out) != 0 && erc == GC_OK) {
		snprintf(err, sizeof err, "out of memory");
		erc = GC_ENOMEM;
	}
	free(skyt);
	if (erc != GC_OK) {
		free(yaml);
		cli_err("%s", err);
		return erc == GC_EINVAL ? (res->np ? EXIT_USAGE : EXIT_FAIL) : EXIT_FAILURE;
	}
	int lrc = sky ? sky_launch(yaml, name, cli->task_file, cli->dry_run, cli->follow) : EXIT_OK;
	free(yaml);
	return lrc;
}

/* the lines above the table: the workload's memory on one GPU, what is assumed, the work, the prices */
static void print_header(const struct advise_result *res)
{
	const advise_req r = res->req;
	const memmodel_job *j = &r.job;
	const memmodel_model shape = res->shape;
	const memmodel_mem single = res->single;
	bool train = memmodel_trains(j->task);
	char title[256];
	snprintf(title, sizeof title, "%s, %s in %s, seq %u, batch %u", r.model.name, memmodel_task_name(j->task),
		 memmodel_prec_name(j->prec), j->seq ? j->seq : r.model.seq, j->batch);
	if (r.model.kind == MEMMODEL_CNN)
		snprintf(title, sizeof title, "%s, %s in %s, batch %u", r.model.name, memmodel_task_name(j->task),
			 memmodel_prec_name(j->prec), j->batch);
	breakdown(title, &single, 1);
	if (shape.name[0]) {
		char n[32];
		fmt_count(n, sizeof n, r.model.params);
		printf("  shape assumed: %s's, the preset nearest %s parameters (%u layers, hidden %u, %u heads, %u KV "
		       "heads, FFN %u, vocabulary %u); --layers --hidden --heads give another\n", shape.name, n,
		       shape.layers, shape.hidden, shape.heads, shape.kv_heads ? shape.kv_heads : shape.heads,
		       shape.ffn, shape.vocab);
		double ratio = r.model.params / shape.params;
		if (ratio > 1.5 || ratio < 1 / 1.5) {
			fmt_count(n, sizeof n, shape.params);
			printf("  (%s has %s: far from that size, its activations and KV cache are a rough guess; give "
			       "the architecture)\n", shape.name, n);
		}
	}
	if (single.partial)
		printf("  warning: without the architecture, activations and the KV cache are not counted: the plans "
		       "below may not fit (add --layers --hidden --heads, or --model)\n");
	else if (train && r.model.kind != MEMMODEL_CNN)
		printf("  (on one GPU, no sharding)\n");
	char why[600];
	advise_assumptions(res, why, sizeof why);
	printf("assumes: %s\n", why);
	char work[160];
	work_text(&r, res->tokens_given, work, sizeof work);
	const char *how = !train ? "roofline"
			  : r.model.kind == MEMMODEL_CNN ? "training FLOPs"
			  : j->task == MEMMODEL_TRAIN ? "training FLOPs, 6·N per token (8·N with full recomputation: ckpt)"
						      : "training FLOPs, 4·N per token (6·N with full recomputation: ckpt)";
	printf("work: %s; time: %s at MFU %.2f (docs/advise.md)\n", work, how,
	       r.mfu > 0 ? r.mfu : advise_default_mfu(&r));
	/* the ranked price comes first: $/HOUR and its TOTAL always describe the same price */
	char prices[2048];
	advise_prices_text(res, prices, sizeof prices);
	if (res->own)
		printf("prices: none (--gpu: your own GPUs)\n");
	else
		printf("prices: %s; ranked by %s\n", prices,
		       r.spot ? "SPOT TOTAL, the job at spot prices (instances without one left out)"
			      : "TOTAL, the job at on-demand prices");
	for (size_t i = 0; i < res->nsrc; i++)
		if (res->src[i].live && res->src[i].age_h > ADVISE_CATALOG_OLD_H)
			printf("warning: SkyPilot's %s catalog is %.0f days old: its prices may be stale (SkyPilot "
			       "fetches a new one when it runs, e.g. sky check)\n", res->src[i].cloud,
			       res->src[i].age_h / 24);
	printf("\n");
}

/* --gpu: whether it fits on your GPUs, with the plan, its memory and time; else what it would take */
static void print_own(const struct advise_result *res)
{
	const advise_req r = res->req;
	bool train = memmodel_trains(r.job.task);
	printf("on your %ux %s (%.0f GB each, one node): %s\n", res->own_count, res->own->name, res->own->mem / GB,
	       res->np ? "fits" : "does not fit");
	if (res->np) {
		const advise_plan *p = &res->plans[0];
		char planb[64], memb[32], tb[32], work[160];
		plan_text(p, train, planb, sizeof planb);
		fmt_gb(memb, sizeof memb, p->mem.total);
		advise_fmt_hours(tb, sizeof tb, p->hours);
		work_text(&r, res->tokens_given, work, sizeof work);
		printf("  plan %s on %u GPU%s: %s of %.0f GB per GPU; %s for %s\n", planb, p->gpus, p->gpus == 1 ? "" : "s",
		       memb, p->gpu->mem / GB, tb, work);
		if (p->offload) {
			char h[32];
			fmt_gb(h, sizeof h, p->host_need);
			printf("  with CPU offload: %s of host memory\n", h);
		}
		printf("\n");
		breakdown("its memory", &p->mem, p->gpus);
		return;
	}
	const advise_need need = res->need;
	if (!need.gpu) {
		printf("  no number of %s holds it, even 4096 at a time: one GPU's share of the activations and the loss "
		       "does not fit (a shorter --seq, a smaller --batch, --loss chunked for a fused cross entropy, or a "
		       "GPU with more memory)\n", res->own->name);
		return;
	}
	char t[32], hn[96] = "";
	fmt_gb(t, sizeof t, need.mem.total);
	if (need.offload) {
		char h[32];
		fmt_gb(h, sizeof h, need.host_need);
		snprintf(hn, sizeof hn, " and %s of host memory (CPU offload)", h);
	}
	printf("  it takes %u x %s with tp%u, ZeRO stage %d, recompute %s: %s per GPU%s\n", need.gpus, need.gpu->name,
	       need.tp, need.zero, memmodel_recompute_name(need.recompute), t, hn);
	if (need.gpus <= res->own_count && need.offload && res->plans == NULL)
		printf("  (with CPU offload: --host-memory GIB tells advise how much the node has)\n");
	printf("  (gpuctl advise without --gpu ranks the clouds' setups that hold it)\n");
}

/* a training plan's time: compute, and the communication it does not hide (advise_comm) */
static void print_comm(const advise_plan *p)
{
	const advise_comm *c = &p->comm;
	if (c->steps <= 0)
		return;
	if (c->dp_s <= 0 && c->tp_s <= 0) {
		if (p->gpus > 1)
			printf("  time: compute only; the %s between its GPUs go over %s%s, whose cost the default MFU holds "
			       "(docs/advise.md)\n", p->tp > 1 ? "activations and gradients" : "gradients",
			       p->gpu->interconnect, p->nodes > 1 && p->fabric ? " and the GPU network between nodes" : "");
		return;
	}
	char ch[32], xh[32], net[200] = "", tpb[64] = "";
	advise_fmt_hours(ch, sizeof ch, p->compute_h);
	advise_fmt_hours(xh, sizeof xh, p->comm_h);
	if (p->nodes > 1 && c->dp_inter_s > 0)
		snprintf(net, sizeof net, " (%.1f s of it between the %u nodes over %.0f Gbps%s)", c->dp_inter_s, p->nodes,
			 p->net_gbps, p->net_assumed ? ", assumed: data/fabrics.csv does not give their network" : "");
	if (c->tp_s > 0)
		snprintf(tpb, sizeof tpb, ", tensor parallelism %.1f s", c->tp_s);
	printf("  time: %s of compute + %s of communication not hidden behind it; a step (%.0f of them, %.0f "
	       "micro-batch%s each): compute %.1f s, gradients%s %.1f s%s%s; %.1f s not hidden\n", ch, xh, c->steps,
	       c->accum, c->accum == 1 ? "" : "es", c->compute_s, p->zero == 3 ? " and parameters" : "", c->dp_s, net,
	       tpb, c->exposed_s);
	if (p->nodes > 1 && !p->fabric)
		printf("  (no GPU network between the %u nodes, data/fabrics.csv: ZeRO-3 across them is not proposed)\n",
		       p->nodes);
}

/* the plans, cheapest first, and the cheapest one's memory */
static void print_plans(const struct advise_result *res)
{
	const advise_req r = res->req;
	const advise_plan *plans = res->plans;
	const size_t np = res->np, show = np < res->top ? np : res->top;
	bool train = memmodel_trains(r.job.task);
	printf("%-6s %-26s %-14s %-14s %-28s %-15s %9s %11s %10s %15s\n", "CLOUD", "INSTANCE", "REGION",
	       "GPUS", "PLAN", "MEM/GPU", "TIME", r.spot ? "SPOT $/HOUR" : "$/HOUR",
	       r.spot ? "SPOT TOTAL" : "TOTAL", r.spot ? "ON-DEMAND TOTAL" : "SPOT TOTAL");
	for (size_t i = 0; i < show; i++) {
		const advise_plan *p = &plans[i];
		char gpusb[48], planb[64], memb[32], use[360], tb[32], ph[32], tot[32], other[32];
		if (p->nodes > 1)
			snprintf(gpusb, sizeof gpusb, "%ux(%ux %s)", p->nodes, p->row->count, p->gpu->name);
		else
			snprintf(gpusb, sizeof gpusb, "%ux %s", p->row->count, p->gpu->name);
		plan_text(p, train, planb, sizeof planb);
		fmt_gb(memb, sizeof memb, p->mem.total);
		snprintf(use, sizeof use, "%s/%.0f", memb, p->gpu->mem / GB);
		advise_fmt_hours(tb, sizeof tb, p->hours);
		advise_fmt_money(ph, sizeof ph, r.spot ? p->spot_h : p->price_h);
		advise_fmt_money(tot, sizeof tot, r.spot ? p->spot_cost : p->cost);
		advise_fmt_money(other, sizeof other, r.spot ? p->cost : p->spot_cost);
		printf("%-6s %-26s %-14s %-14s %-28s %-15s %9s %11s %10s %15s\n", p->row->cloud,
		       p->row->instance, p->row->region, gpusb, planb, use, tb, ph, tot, other);
	}
	if (np > show)
		printf("(%zu more; --top N shows more)\n", np - show);
	printf("\n");
	breakdown("cheapest plan's memory", &plans[0].mem, plans[0].gpus);
	if (plans[0].offload) {
		char hn[32], hm[32];
		fmt_gb(hn, sizeof hn, plans[0].host_need);
		fmt_gb(hm, sizeof hm, plans[0].row->mem_gib * 1024 * 1024 * 1024);
		printf("  host memory for them: %s per node (x%.1f for buffers, as DeepSpeed estimates), of the "
		       "instance's %s (%.0f GiB)\n", hn, ADVISE_HOST_BUFFER, hm, plans[0].row->mem_gib);
	}
	print_comm(&plans[0]);
}

/* nothing fits: what the smallest feasible setup would need */
static void print_none(const struct advise_result *res)
{
	const advise_req r = res->req;
	const advise_need need = res->need;
	printf("no setup in the catalog fits%s%s%s.\n", r.budget > 0 ? " the budget" : "",
	       r.deadline_h > 0 ? (r.budget > 0 ? " and the deadline" : " the deadline") : "",
	       r.max_gpus < 4096 ? " within --max-gpus" : "");
	if (need.gpu) {
		char t[32];
		fmt_gb(t, sizeof t, need.mem.total);
		char hn[64] = "";
		if (need.offload) {
			char h[32];
			fmt_gb(h, sizeof h, need.host_need);
			snprintf(hn, sizeof hn, ", %s of host memory per node", h);
		}
		printf("smallest feasible: %u x %s (%.0f GB each) with tp%u, ZeRO stage %d, recompute %s%s: "
		       "%s per GPU%s\n", need.gpus, need.gpu->name, need.gpu->mem / GB, need.tp, need.zero,
		       memmodel_recompute_name(need.recompute), need.offload ? ", CPU offload" : "", t, hn);
		if (need.gpus > 8 && need.zero == 3)
			printf("(ZeRO-3 across nodes: needs a GPU network between them, as data/fabrics.csv "
			       "lists)\n");
		if (need.gpus > r.max_gpus)
			printf("that is more than --max-gpus %u\n", r.max_gpus);
	} else {
		printf("no GPU in the table fits it even 4096 at a time\n");
	}
}

/* the catalog rows left out for a reason worth naming */
static void print_skipped(const advise_skipped skipped)
{
	if (skipped.unknown_gpus)
		printf("(%zu catalog rows name GPUs not in gpus.csv and were left out)\n", skipped.unknown_gpus);
	if (skipped.no_host_mem)
		printf("(%zu catalog row%s fit%s only with CPU offload but give%s no host memory (MemoryGiB) to check "
		       "it against: left out)\n", skipped.no_host_mem, skipped.no_host_mem > 1 ? "s" : "",
		       skipped.no_host_mem > 1 ? "" : "s", skipped.no_host_mem > 1 ? "" : "s");
	if (skipped.no_fabric)
		printf("(%zu catalog row%s fit%s only with ZeRO-3 across instances, which %s no GPU network "
		       "between them (data/fabrics.csv): left out)\n", skipped.no_fabric,
		       skipped.no_fabric > 1 ? "s" : "", skipped.no_fabric > 1 ? "" : "s",
		       skipped.no_fabric > 1 ? "have" : "has");
	if (skipped.host_too_small)
		printf("(%zu catalog row%s fit%s only with CPU offload, and the offloaded states exceed %s host "
		       "memory: left out)\n", skipped.host_too_small, skipped.host_too_small > 1 ? "s" : "",
		       skipped.host_too_small > 1 ? "" : "s", skipped.host_too_small > 1 ? "their" : "its");
}

static int advise_cli(const struct cli_global *g, int argc, char **argv, bool sky)
{
	struct advise_cli cli;
	bool emit_opt;
	int prc = advise_parse(argc, argv, sky, &cli, &emit_opt);
	if (prc)
		return prc < 0 ? EXIT_OK : prc;
	struct advise_input in = cli.in;
	bool json = cli.json, emit = cli.emit;
	char err[1024];
	if (sky && json) {
		cli_err("gpuctl launch --sky runs the task; gpuctl advise --json shows the plans");
		return EXIT_USAGE;
	}
	if (emit_opt && !emit) {
		cli_err("--any, --launch, --checkpoint-bucket, --checkpoint-dir, --setup, --name, --max-restarts and "
			"--disk-size go with --emit skypilot");
		return EXIT_USAGE;
	}
	if (emit && json) {
		cli_err("--emit skypilot and --json are two outputs: give one");
		return EXIT_USAGE;
	}
	if (emit && in.here) {
		cli_err(sky ? "gpuctl launch --sky rents: --here and --here-price are gpuctl advise's"
			    : "--here adds this machine to advise's table or --json; --emit skypilot writes rentals only");
		return EXIT_USAGE;
	}
	if (optind < argc && (!emit || strcmp(argv[optind - 1], "--") != 0))
		return cli_extra_arg("advise", argv[optind]);
	if (emit) {
		cli.so.cmd = argv + optind;
		cli.so.ncmd = (size_t)(argc - optind);
	}
	if (in.model && strcmp(in.model, "list") == 0) {
		memmodel_model *presets = NULL;
		size_t npresets = 0;
		if (advise_load_models(&presets, &npresets, err, sizeof err) != GC_OK) {
			cli_err("%s", err);
			return EXIT_FAILURE;
		}
		for (size_t i = 0; i < npresets; i++)
			printf("%-16s %8.3gB params%s\n", presets[i].name, presets[i].params / 1e9,
			       presets[i].kind == MEMMODEL_CNN ? " (CNN)" : presets[i].kind == MEMMODEL_ENCODER ? " (encoder)" : "");
		free(presets);
		return EXIT_OK;
	}
	struct advise_result res;
	int rc = advise_run(&in, &res, err, sizeof err);
	if (rc != GC_OK) {
		cli_err("%s", err);
		advise_result_free(&res);
		return rc == GC_EINVAL ? EXIT_USAGE : EXIT_FAILURE;
	}
	if (emit) {
		int erc = advise_emit(&res, &cli, sky);
		advise_result_free(&res);
		return erc;
	}
	json_t *hj = NULL;
	bool here_fits = false;
	if (in.here) {
		/* this machine: its GPUs (a driver or a node that cannot be opened is an answer too) */
		gc_ctx *ctx = NULL;
		gc_open_opts o = {.size = sizeof o, .sim_node = g->sim};
		int orc = gc_ctx_open(&ctx, &o);
		char unseen[600];
		const char *msg = orc == GC_OK ? NULL : gc_ctx_errmsg(ctx);
		snprintf(unseen, sizeof unseen, "%s", msg && *msg ? msg : gc_strerror(orc));
		rc = here_answer(&res, orc == GC_OK ? ctx : NULL, unseen, in.here_price, &hj, &here_fits, err, sizeof err);
		gc_ctx_free(ctx);
		if (rc != GC_OK) {
			cli_err("%s", err);
			json_decref(hj);
			advise_result_free(&res);
			return cli_exit_code(rc);
		}
	}
	if (json) {
		char *out = advise_result_json(&res, hj);
		if (!out) {
			json_decref(hj);
			cli_err("out of memory");
			advise_result_free(&res);
			return EXIT_FAIL;
		}
		puts(out);
		free(out);
	} else {
		print_header(&res);
		if (res.own)
			print_own(&res);
		else if (res.np)
			print_plans(&res);
		else
			print_none(&res);
		if (!res.own)
			print_skipped(res.skipped);
		if (hj)
			printf("%s\n", json_string_value(json_object_get(hj, "text")));
	}
	json_decref(hj);
	rc = res.np || here_fits ? EXIT_OK : EXIT_FAILURE;
	advise_result_free(&res);
	return rc;
}

int cmd_gpus(const struct cli_global *g, int argc, char **argv)
{
	(void)g;
	static const struct option lo[] = {{"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'},
					   {NULL, 0, NULL, 0}};
	bool json = false;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'h': printf("usage: gpuctl gpus [--json]\n"); return EXIT_OK;
		case 'j': json = true; break;
		default: return cli_bad_option("gpus", c, argv);
		}
	}
	if (optind < argc)
		return cli_extra_arg("gpus", argv[optind]);
	spec_gpu *t = NULL;
	size_t n = 0;
	char err[1024];
	if (advise_load_gpus(&t, &n, err, sizeof err) != GC_OK) {
		cli_err("%s", err);
		return EXIT_FAILURE;
	}
	if (json) {
		json_t *a = json_array();
		for (size_t i = 0; i < n; i++) {
			json_t *o = json_pack("{s:s, s:s, s:f, s:f, s:s, s:f, s:s, s:s}", "name", t[i].name,
					      "catalog_names", t[i].acc, "memory_gb", t[i].mem / GB, "bandwidth_gbs",
					      t[i].bw / GB, "interconnect", t[i].interconnect, "interconnect_gbs",
					      t[i].link / GB, "source", t[i].source, "notes", t[i].notes);
			static const char *const keys[] = {"fp32_tflops", "bf16_tflops", "fp16_tflops", "fp8_tflops",
							   "int8_tops"};
			for (int k = 0; k < 5; k++)
				json_object_set_new(o, keys[k], t[i].peak[k] > 0 ? json_real(t[i].peak[k] / 1e12) : json_null());
			json_array_append_new(a, o);
		}
		char *s = json_dumps(a, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
		json_decref(a);
		if (s)
			puts(s);
		free(s);
	} else {
		printf("%-15s %7s %8s %8s %8s %8s %8s %s\n", "GPU", "MEMORY", "BW GB/s", "BF16", "FP16", "FP8",
		       "INT8", "INTERCONNECT");
		for (size_t i = 0; i < n; i++) {
			char v[5][16];
			for (int k = 1; k < 5; k++) {
				if (t[i].peak[k] > 0)
					snprintf(v[k], sizeof v[k], "%.0f", t[i].peak[k] / 1e12);
				else
					snprintf(v[k], sizeof v[k], "-");
			}
			char ic[400];
			snprintf(ic, sizeof ic, "%s %.0f GB/s", t[i].interconnect, t[i].link / GB);
			printf("%-15s %4.0f GB %8.0f %8s %8s %8s %8s %s\n", t[i].name, t[i].mem / GB, t[i].bw / GB, v[1],
			       v[2], v[3], v[4], ic);
		}
		printf("dense tensor-core peaks in TFLOPS (INT8: TOPS); sources per row in gpus.csv "
		       "(gpuctl gpus --json)\n");
	}
	free(t);
	return EXIT_OK;
}
