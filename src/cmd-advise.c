/*
 * cmd-advise.c — `gpuctl advise`: the cheapest GPU setups that will run a
 * workload, with the memory breakdown that decides it, estimated time and
 * cost on-demand and spot; and `gpuctl gpus`, the GPU table it uses.
 * Exit 0 with at least one feasible setup, 1 when none fits (the output
 * says what the smallest feasible setup needs), 2 for bad input.
 */
#include "advise.h"
#include "catalog.h"
#include "cli.h"
#include "memmodel.h"
#include "specs.h"
#include "units.h"

#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define GB 1e9

static int load_fabrics(spec_fabric **f, size_t *n)
{
	char path[4096], err[512];
	if (cli_data_file("fabrics.csv", path, sizeof path))
		return EXIT_FAILURE;
	if (specs_load_fabrics(path, f, n, err, sizeof err)) {
		cli_err("%s", err);
		return EXIT_FAILURE;
	}
	return 0;
}

static int load_gpus(spec_gpu **g, size_t *n)
{
	char path[4096], err[512];
	if (cli_data_file("gpus.csv", path, sizeof path))
		return EXIT_FAILURE;
	if (specs_load_gpus(path, g, n, err, sizeof err)) {
		cli_err("%s", err);
		return EXIT_FAILURE;
	}
	return 0;
}

static void fmt_gb(char *buf, size_t len, double bytes)
{
	snprintf(buf, len, bytes >= 10 * GB ? "%.0f GB" : "%.1f GB", bytes / GB);
}

static void fmt_hours(char *buf, size_t len, double h)
{
	if (h < 1.0 / 60)
		snprintf(buf, len, "%.0f s", h * 3600);
	else if (h < 1)
		snprintf(buf, len, "%.0f min", h * 60);
	else if (h < 48)
		snprintf(buf, len, "%.1f h", h);
	else
		snprintf(buf, len, "%.1f days", h / 24);
}

static void fmt_money(char *buf, size_t len, double v)
{
	if (v < 0)
		snprintf(buf, len, "-");
	else if (v < 10)
		snprintf(buf, len, "$%.2f", v);
	else
		snprintf(buf, len, "$%.0f", v);
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
 * Every entry of a --clouds / --regions list must name a cloud or region of
 * the catalog: a typo would otherwise read as "nothing fits". 0, or
 * EXIT_USAGE after naming the entry and (some of) the catalog's values.
 */
static int check_filter(const char *opt, const char *list, const catalog *cat, bool region)
{
	if (!list)
		return 0;
	for (const char *p = list; *p;) {
		size_t k = strcspn(p, ",");
		bool found = false;
		for (size_t i = 0; i < cat->n && !found; i++) {
			const char *v = region ? cat->rows[i].region : cat->rows[i].cloud;
			found = strlen(v) == k && strncasecmp(v, p, k) == 0;
		}
		if (!found) {
			/* the first distinct values, to show what would be accepted */
			const char *seen[12];
			size_t shown = 0;
			char have[256] = "";
			for (size_t i = 0; i < cat->n && shown < 12; i++) {
				const char *v = region ? cat->rows[i].region : cat->rows[i].cloud;
				bool dup = false;
				for (size_t j = 0; j < shown && !dup; j++)
					dup = strcmp(seen[j], v) == 0;
				if (dup || strlen(have) + strlen(v) + 3 >= sizeof have)
					continue;
				snprintf(have + strlen(have), sizeof have - strlen(have), "%s%s", shown ? ", " : "", v);
				seen[shown++] = v;
			}
			cli_err("invalid %s entry '%.*s' (the catalog has %s%s)", opt, (int)k, p, have[0] ? have : "none",
				shown == 12 ? ", ..." : "");
			return EXIT_USAGE;
		}
		p += k;
		if (*p == ',')
			p++;
	}
	return 0;
}

static const char *const task_help = "infer, train-full, lora, qlora or embed";

static int usage_advise(FILE *f)
{
	fprintf(f, "usage: gpuctl advise (--model NAME | --params N [--layers L --hidden H --heads A\n"
		   "                      [--kv-heads K] [--vocab V] [--ffn F]]) [--task TASK] [options]\n"
		   "  --task %s (default infer)\n"
		   "  --precision fp32|bf16|fp16|fp8|int8|int4   --kv-precision P\n"
		   "  --optimizer adamw|adam8bit|sgd   --zero auto|0-3   --fsdp   --offload   --no-offload\n"
		   "  --recompute auto|none|selective|full   --tp auto|N\n"
		   "  --seq N   --batch N   --lora-rank R   --lora-targets all|attn|mlp|q,k,v,o,gate,up,down\n"
		   "  --tokens N (work: training/generated/embedded tokens; images for CNNs)   --output-len N\n"
		   "  --mfu F   --headroom PCT   --spot   --clouds aws,gcp,azure   --regions R,...\n"
		   "  --max-gpus N   --budget USD   --deadline DURATION   --catalog FILE (repeatable)\n"
		   "  --top N   --json\n",
		task_help);
	return f == stdout ? EXIT_OK : EXIT_USAGE;
}

struct opts {
	const char *model, *params;
	unsigned layers, hidden, heads, kv_heads, vocab, ffn;
	const char *catalogs[16];
	size_t ncat;
	bool json;
	long top;
};

static int parse_uint(const char *opt, const char *arg, unsigned *out)
{
	long v;
	int rc = cli_parse_count(opt, arg, &v);
	if (rc)
		return rc;
	if (v > 10000000) {
		cli_err("invalid %s value '%s' (at most 10000000)", opt, arg);
		return EXIT_USAGE;
	}
	*out = (unsigned)v;
	return 0;
}

static int parse_real(const char *opt, const char *arg, double lo, double hi, double *out)
{
	char *end;
	double v = strtod(arg, &end);
	if (end == arg || *end || !(v >= lo && v <= hi)) {
		cli_err("invalid %s '%s' (expected a number from %g to %g)", opt, arg, lo, hi);
		return EXIT_USAGE;
	}
	*out = v;
	return 0;
}

static int choose(const char *opt, const char *arg, int v, const char *accepted)
{
	if (v < 0) {
		cli_err("invalid %s '%s' (accepted: %s)", opt, arg, accepted);
		return EXIT_USAGE;
	}
	return 0;
}

static json_t *mem_json(const memmodel_mem *m)
{
	return json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:b}", "weights", m->weights, "gradients",
			 m->grads, "optimizer", m->optimizer, "activations", m->activations, "kv_cache", m->kv,
			 "overhead", m->overhead, "total", m->total, "cpu_offload", m->cpu, "partial", m->partial);
}

static json_t *money(double v)
{
	return v < 0 ? json_null() : json_real(round(v * 10000) / 10000);
}

int cmd_advise(const struct cli_global *g, int argc, char **argv)
{
	(void)g;
	enum { O_MODEL = 256, O_PARAMS, O_LAYERS, O_HIDDEN, O_HEADS, O_KVH, O_VOCAB, O_FFN, O_TASK, O_PREC, O_KVP,
	       O_OPT, O_ZERO, O_FSDP, O_OFF, O_NOOFF, O_RC, O_TP, O_SEQ, O_BATCH, O_RANK, O_TARGETS, O_TOKENS,
	       O_OUTLEN, O_MFU, O_HEAD, O_SPOT, O_CLOUDS, O_REGIONS, O_MAXG, O_BUDGET, O_DEADLINE, O_CATALOG,
	       O_TOP, O_JSON };
	static const struct option lo[] = {
		{"model", required_argument, NULL, O_MODEL}, {"params", required_argument, NULL, O_PARAMS},
		{"layers", required_argument, NULL, O_LAYERS}, {"hidden", required_argument, NULL, O_HIDDEN},
		{"heads", required_argument, NULL, O_HEADS}, {"kv-heads", required_argument, NULL, O_KVH},
		{"vocab", required_argument, NULL, O_VOCAB}, {"ffn", required_argument, NULL, O_FFN},
		{"task", required_argument, NULL, O_TASK}, {"precision", required_argument, NULL, O_PREC},
		{"kv-precision", required_argument, NULL, O_KVP}, {"optimizer", required_argument, NULL, O_OPT},
		{"zero", required_argument, NULL, O_ZERO}, {"fsdp", no_argument, NULL, O_FSDP},
		{"offload", no_argument, NULL, O_OFF}, {"no-offload", no_argument, NULL, O_NOOFF},
		{"recompute", required_argument, NULL, O_RC}, {"tp", required_argument, NULL, O_TP},
		{"seq", required_argument, NULL, O_SEQ}, {"batch", required_argument, NULL, O_BATCH},
		{"lora-rank", required_argument, NULL, O_RANK}, {"lora-targets", required_argument, NULL, O_TARGETS},
		{"tokens", required_argument, NULL, O_TOKENS}, {"output-len", required_argument, NULL, O_OUTLEN},
		{"mfu", required_argument, NULL, O_MFU}, {"headroom", required_argument, NULL, O_HEAD},
		{"spot", no_argument, NULL, O_SPOT}, {"clouds", required_argument, NULL, O_CLOUDS},
		{"regions", required_argument, NULL, O_REGIONS}, {"max-gpus", required_argument, NULL, O_MAXG},
		{"budget", required_argument, NULL, O_BUDGET}, {"deadline", required_argument, NULL, O_DEADLINE},
		{"catalog", required_argument, NULL, O_CATALOG}, {"top", required_argument, NULL, O_TOP},
		{"json", no_argument, NULL, O_JSON}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
	};
	struct opts o = {.top = 10};
	advise_req r;
	memset(&r, 0, sizeof r);
	r.job = (memmodel_job){.task = MEMMODEL_INFER, .prec = -1, .kv_prec = -1, .optim = MEMMODEL_ADAMW, .dp = 1, .tp = 1,
			 .lora_rank = 16, .lora_targets = MEMMODEL_LT_ALL};
	r.max_gpus = 64;
	r.headroom = 0.10;
	r.zero = -1;
	r.recompute = -1;
	r.offload = -1;
	r.output_len = 256;
	const char *tokens = NULL;
	int c, rc = 0;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'h': return usage_advise(stdout);
		case O_MODEL: o.model = optarg; break;
		case O_PARAMS: o.params = optarg; break;
		case O_LAYERS: rc = parse_uint("--layers", optarg, &o.layers); break;
		case O_HIDDEN: rc = parse_uint("--hidden", optarg, &o.hidden); break;
		case O_HEADS: rc = parse_uint("--heads", optarg, &o.heads); break;
		case O_KVH: rc = parse_uint("--kv-heads", optarg, &o.kv_heads); break;
		case O_VOCAB: rc = parse_uint("--vocab", optarg, &o.vocab); break;
		case O_FFN: rc = parse_uint("--ffn", optarg, &o.ffn); break;
		case O_TASK: rc = choose("--task", optarg, r.job.task = memmodel_task_parse(optarg), task_help); break;
		case O_PREC:
			rc = choose("--precision", optarg, r.job.prec = memmodel_prec_parse(optarg),
				    "fp32, bf16, fp16, fp8, int8, int4");
			break;
		case O_KVP:
			rc = choose("--kv-precision", optarg, r.job.kv_prec = memmodel_prec_parse(optarg),
				    "fp32, bf16, fp16, fp8, int8");
			if (!rc && r.job.kv_prec == MEMMODEL_INT4)
				rc = choose("--kv-precision", optarg, -1, "fp32, bf16, fp16, fp8, int8");
			break;
		case O_OPT:
			rc = choose("--optimizer", optarg, r.job.optim = memmodel_optim_parse(optarg), "adamw, adam8bit, sgd");
			break;
		case O_ZERO:
			if (strcmp(optarg, "auto") == 0)
				r.zero = -1;
			else
				rc = choose("--zero", optarg,
					    r.zero = strlen(optarg) == 1 && optarg[0] >= '0' && optarg[0] <= '3'
							     ? optarg[0] - '0' : -1,
					    "auto, 0, 1, 2, 3");
			break;
		case O_FSDP: r.zero = 3; break;
		case O_OFF: r.offload = 1; break;
		case O_NOOFF: r.offload = 0; break;
		case O_RC:
			if (strcmp(optarg, "auto") == 0)
				r.recompute = -1;
			else
				rc = choose("--recompute", optarg, r.recompute = memmodel_recompute_parse(optarg),
					    "auto, none, selective, full");
			break;
		case O_TP:
			if (strcmp(optarg, "auto") == 0) {
				r.tp = 0;
			} else {
				rc = parse_uint("--tp", optarg, &r.tp);
				if (!rc && (r.tp & (r.tp - 1))) {
					cli_err("invalid --tp '%s' (accepted: auto or a power of two)", optarg);
					rc = EXIT_USAGE;
				}
			}
			break;
		case O_SEQ: rc = parse_uint("--seq", optarg, &r.job.seq); break;
		case O_BATCH: rc = parse_uint("--batch", optarg, &r.job.batch); break;
		case O_RANK: rc = parse_uint("--lora-rank", optarg, &r.job.lora_rank); break;
		case O_TARGETS: {
			int t = memmodel_targets_parse(optarg);
			rc = choose("--lora-targets", optarg, t, "all, attn, mlp, or a list of q,k,v,o,gate,up,down");
			r.job.lora_targets = (unsigned)t;
			break;
		}
		case O_TOKENS: tokens = optarg; break;
		case O_OUTLEN: rc = parse_uint("--output-len", optarg, &r.output_len); break;
		case O_MFU: rc = parse_real("--mfu", optarg, 0.01, 1, &r.mfu); break;
		case O_HEAD: {
			int pct = 0;
			if (units_parse_percent(optarg, &pct, NULL, 0) < 0 || pct > 90) {
				cli_err("invalid --headroom '%s' (expected a percentage from 0 to 90, such as 10%%)", optarg);
				rc = EXIT_USAGE;
			}
			r.headroom = pct / 100.0;
			break;
		}
		case O_SPOT: r.spot = true; break;
		case O_CLOUDS: r.clouds = optarg; break;
		case O_REGIONS: r.regions = optarg; break;
		case O_MAXG: rc = parse_uint("--max-gpus", optarg, &r.max_gpus); break;
		case O_BUDGET: rc = parse_real("--budget", optarg, 0.01, 1e12, &r.budget); break;
		case O_DEADLINE: {
			long long ms;
			rc = cli_parse_duration("--deadline", optarg, &ms);
			r.deadline_h = ms / 3600e3;
			break;
		}
		case O_CATALOG:
			if (o.ncat == sizeof o.catalogs / sizeof o.catalogs[0]) {
				cli_err("too many --catalog files (at most 16)");
				rc = EXIT_USAGE;
			} else {
				o.catalogs[o.ncat++] = optarg;
			}
			break;
		case O_TOP: rc = cli_parse_count("--top", optarg, &o.top); break;
		case O_JSON: o.json = true; break;
		default: return cli_bad_option("advise", c, argv);
		}
		if (rc)
			return rc;
	}
	if (optind < argc)
		return cli_extra_arg("advise", argv[optind]);
	if (!o.model && !o.params) {
		cli_err("advise: give the model: --model NAME (gpuctl advise --model list shows the presets) or "
			"--params N such as 7B");
		return EXIT_USAGE;
	}

	/* the model */
	char path[4096], err[512];
	memmodel_model *presets = NULL;
	size_t npresets = 0;
	if (o.model) {
		if (cli_data_file("models.csv", path, sizeof path))
			return EXIT_FAILURE;
		if (specs_load_models(path, &presets, &npresets, err, sizeof err)) {
			cli_err("%s", err);
			return EXIT_FAILURE;
		}
		if (strcmp(o.model, "list") == 0) {
			for (size_t i = 0; i < npresets; i++)
				printf("%-16s %8.3gB params%s\n", presets[i].name, presets[i].params / 1e9,
				       presets[i].kind == MEMMODEL_CNN ? " (CNN)" : presets[i].kind == MEMMODEL_ENCODER ? " (encoder)" : "");
			free(presets);
			return EXIT_OK;
		}
		const memmodel_model *m = specs_model_find(presets, npresets, o.model);
		if (!m) {
			const char *sug[3];
			size_t k = specs_model_suggest(presets, npresets, o.model, sug, 3);
			char list[256] = "";
			for (size_t i = 0; i < k; i++)
				snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", sug[i]);
			if (k)
				cli_err("unknown model '%s' (did you mean %s? gpuctl advise --model list shows all)", o.model,
					list);
			else
				cli_err("unknown model '%s' (gpuctl advise --model list shows the presets; or give --params)",
					o.model);
			free(presets);
			return EXIT_USAGE;
		}
		r.model = *m;
		free(presets);
	} else {
		r.model.kind = MEMMODEL_DECODER;
		r.model.gated = true;
		snprintf(r.model.name, sizeof r.model.name, "%s-parameter model", o.params);
	}
	if (o.params) {
		if (memmodel_parse_count(o.params, &r.model.params, err, sizeof err)) {
			cli_err("invalid --params: %s", err);
			return EXIT_USAGE;
		}
		r.model.active_params = r.model.params;
	}
	if (o.layers || o.hidden || o.heads || o.kv_heads || o.vocab || o.ffn) {
		if (o.layers) r.model.layers = o.layers;
		if (o.hidden) r.model.hidden = o.hidden;
		if (o.heads) r.model.heads = o.heads;
		if (o.kv_heads) r.model.kv_heads = o.kv_heads;
		if (o.vocab) r.model.vocab = o.vocab;
		if (o.ffn) r.model.ffn = o.ffn;
		if (!r.model.layers || !r.model.hidden || !r.model.heads) {
			cli_err("advise: an architecture needs --layers, --hidden and --heads together");
			return EXIT_USAGE;
		}
		if (r.model.hidden % r.model.heads || (r.model.kv_heads && r.model.heads % r.model.kv_heads)) {
			cli_err("advise: --hidden %u must be a multiple of --heads %u, and --heads of --kv-heads",
				r.model.hidden, r.model.heads);
			return EXIT_USAGE;
		}
		if (!r.model.ffn)
			r.model.ffn = r.model.hidden * 4;
		if (!o.params && !o.model)
			r.model.params = r.model.active_params = memmodel_arch_params(&r.model);
	}
	/*
	 * --params alone: activations, the KV cache and LoRA adapters need a
	 * shape, so assume the usual decoder shape for that size (the nearest
	 * default_shape preset) and say so; the parameter count stays the user's
	 */
	memmodel_model shape = {.name = ""};
	if (!o.model && !r.model.layers) {
		if (cli_data_file("models.csv", path, sizeof path))
			return EXIT_FAILURE;
		if (specs_load_models(path, &presets, &npresets, err, sizeof err)) {
			cli_err("%s", err);
			return EXIT_FAILURE;
		}
		const memmodel_model *sh = specs_model_shape_for(presets, npresets, r.model.params);
		if (sh) {
			shape = *sh;
			r.model.layers = sh->layers;
			r.model.hidden = sh->hidden;
			r.model.heads = sh->heads;
			r.model.kv_heads = sh->kv_heads;
			r.model.vocab = sh->vocab;
			r.model.ffn = sh->ffn;
			r.model.tied = sh->tied;
			r.model.gated = sh->gated;
		}
		free(presets);
		presets = NULL;
	}

	/* defaults by task */
	memmodel_job *j = &r.job;
	if (j->prec < 0)
		j->prec = j->task == MEMMODEL_TRAIN && r.model.kind == MEMMODEL_CNN ? MEMMODEL_FP16 : MEMMODEL_BF16;
	if (j->kv_prec < 0)
		j->kv_prec = j->prec == MEMMODEL_FP32 ? MEMMODEL_FP32 : MEMMODEL_BF16;
	if (!j->batch)
		j->batch = j->task == MEMMODEL_INFER ? 16 : j->task == MEMMODEL_EMBED ? 64 : r.model.kind == MEMMODEL_CNN ? 256 : 1;
	if (!j->seq && r.model.kind != MEMMODEL_CNN && !r.model.seq)
		j->seq = 4096;
	double tok_default = j->task == MEMMODEL_TRAIN ? 1e9 : j->task == MEMMODEL_LORA || j->task == MEMMODEL_QLORA ? 100e6
			     : j->task == MEMMODEL_EMBED ? 1e9 : 10e6;
	if (r.model.kind == MEMMODEL_CNN)
		tok_default = 90 * 1281167.0; /* 90 ImageNet epochs */
	r.tokens = tok_default;
	if (tokens && memmodel_parse_count(tokens, &r.tokens, err, sizeof err)) {
		cli_err("invalid --tokens: %s", err);
		return EXIT_USAGE;
	}

	spec_gpu *gpus = NULL;
	size_t ngpus = 0;
	if ((rc = load_gpus(&gpus, &ngpus)))
		return rc;
	spec_fabric *fabrics = NULL;
	if ((rc = load_fabrics(&fabrics, &r.nfabrics))) {
		free(gpus);
		return rc;
	}
	r.fabrics = fabrics;
	catalog cat = {0};
	if (o.ncat == 0) {
		static const char *const clouds[] = {"aws", "gcp", "azure"};
		for (int i = 0; i < 3; i++) {
			char name[64];
			snprintf(name, sizeof name, "catalog/%s.csv", clouds[i]);
			if (cli_data_file(name, path, sizeof path) ||
			    catalog_load(&cat, path, clouds[i], err, sizeof err)) {
				if (o.ncat == 0 && err[0])
					cli_err("%s", err);
				rc = EXIT_FAILURE;
				goto out;
			}
		}
	} else {
		for (size_t i = 0; i < o.ncat; i++) {
			/* the cloud from the file name (aws.csv, gcp-vms.csv ...) unless a Cloud column says */
			const char *base = strrchr(o.catalogs[i], '/');
			base = base ? base + 1 : o.catalogs[i];
			char cloud[16];
			size_t k = strcspn(base, ".-_");
			snprintf(cloud, sizeof cloud, "%.*s", (int)(k < 15 ? k : 15), base);
			if (catalog_load(&cat, o.catalogs[i], cloud, err, sizeof err)) {
				cli_err("invalid --catalog: %s", err);
				rc = EXIT_USAGE;
				goto out;
			}
		}
	}

	if ((rc = check_filter("--clouds", r.clouds, &cat, false)) || (rc = check_filter("--regions", r.regions, &cat, true)))
		goto out;
	advise_plan *plans = NULL;
	size_t np = 0;
	advise_need need;
	advise_skipped skipped;
	if (advise_rank(&r, gpus, ngpus, &cat, &plans, &np, &need, &skipped, err, sizeof err)) {
		cli_err("advise: %s", err);
		rc = EXIT_USAGE;
		goto out;
	}
	bool train = j->task == MEMMODEL_TRAIN || j->task == MEMMODEL_LORA || j->task == MEMMODEL_QLORA;
	memmodel_job one = *j;
	one.dp = one.tp = 1;
	one.zero = 0;
	/* what FlashAttention-style attention recomputation keeps: the s² scores are not stored */
	one.recompute = r.recompute >= 0 ? r.recompute : MEMMODEL_RC_SELECTIVE;
	memmodel_mem single;
	memmodel_estimate(&r.model, &one, &single, NULL, 0);
	size_t show = np < (size_t)o.top ? np : (size_t)o.top;
	const char *date = cat.date[0] ? cat.date : "unknown";

	if (o.json) {
		json_t *a = json_array();
		for (size_t i = 0; i < show; i++) {
			const advise_plan *p = &plans[i];
			json_array_append_new(a, json_pack(
				"{s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:s, s:b, s:s, s:o, s:f, s:f, s:o, s:o, s:o, s:o}",
				"cloud", p->row->cloud, "instance", p->row->instance, "region", p->row->region, "gpu",
				p->gpu->name, "gpus_per_node", (int)p->row->count, "nodes", (int)p->nodes, "gpus",
				(int)p->gpus, "tp", (int)p->tp, "dp", (int)p->dp, "zero", p->zero, "recompute",
				memmodel_recompute_name(p->recompute), "offload", p->offload, "compute_precision",
				memmodel_prec_name(p->compute_prec), "memory_per_gpu", mem_json(&p->mem), "usable_per_gpu",
				p->usable, "hours", p->hours, "price_per_hour", money(p->price_h), "spot_price_per_hour",
				money(p->spot_h), "cost", money(p->cost), "spot_cost", money(p->spot_cost)));
			json_t *pj = json_array_get(a, json_array_size(a) - 1);
			json_object_set_new(pj, "host_memory_needed", json_real(p->host_need));
			json_object_set_new(pj, "fabric", p->fabric ? json_string(p->fabric->fabric) : json_null());
			json_object_set_new(pj, "host_memory",
					    p->row->mem_gib > 0 ? json_real(p->row->mem_gib * 1024.0 * 1024 * 1024) : json_null());
		}
		json_t *root = json_pack("{s:s, s:s, s:s, s:f, s:f, s:s, s:s, s:f, s:o, s:o, s:I}", "schema",
					 "gpuctl.advise/1", "model", r.model.name, "task", memmodel_task_name(j->task), "params",
					 r.model.params, "tokens", r.tokens, "precision", memmodel_prec_name(j->prec),
					 "prices_date", date, "mfu", r.mfu > 0 ? r.mfu : advise_default_mfu(&r),
					 "single_gpu_memory", mem_json(&single), "plans", a, "feasible", (json_int_t)np);
		json_object_set_new(root, "assumed_shape", shape.name[0] ? json_string(shape.name) : json_null());
		/* which plan field the order follows, and what "tokens" counts */
		json_object_set_new(root, "ranked_by", json_string(r.spot ? "spot_cost" : "cost"));
		json_object_set_new(root, "work_unit",
				    json_string(r.model.kind == MEMMODEL_CNN ? "images"
						: j->task == MEMMODEL_INFER ? "generated tokens"
						: j->task == MEMMODEL_EMBED ? "embedded tokens" : "training tokens"));
		json_object_set_new(root, "left_out",
				    json_pack("{s:I, s:I, s:I, s:I}", "unknown_gpus", (json_int_t)skipped.unknown_gpus,
					      "no_host_memory", (json_int_t)skipped.no_host_mem, "host_memory_too_small",
					      (json_int_t)skipped.host_too_small, "no_fabric", (json_int_t)skipped.no_fabric));
		if (!np && need.gpu)
			json_object_set_new(root, "smallest_feasible",
					    json_pack("{s:s, s:i, s:i, s:i, s:s, s:b, s:o, s:f}", "gpu", need.gpu->name, "gpus",
						      (int)need.gpus, "tp", (int)need.tp, "zero", need.zero, "recompute",
						      memmodel_recompute_name(need.recompute), "offload", need.offload,
						      "memory_per_gpu", mem_json(&need.mem), "host_memory_needed",
						      need.host_need));
		char *s = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
		json_decref(root);
		if (s)
			puts(s);
		free(s);
	} else {
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
			printf("  (on one GPU, no sharding; activations with attention recomputed, as FlashAttention does)\n");
		char work[160];
		work_text(&r, tokens != NULL, work, sizeof work);
		printf("work: %s; time: %s at MFU %.2f (docs/advise.md)\n", work,
		       train ? "training FLOPs" : "roofline", r.mfu > 0 ? r.mfu : advise_default_mfu(&r));
		/* the ranked price comes first: $/HOUR and its TOTAL always describe the same price */
		printf("prices: snapshot of %s; ranked by %s\n\n", date,
		       r.spot ? "SPOT TOTAL, the job at spot prices (instances without one left out)"
			      : "TOTAL, the job at on-demand prices");
		if (np) {
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
				fmt_hours(tb, sizeof tb, p->hours);
				fmt_money(ph, sizeof ph, r.spot ? p->spot_h : p->price_h);
				fmt_money(tot, sizeof tot, r.spot ? p->spot_cost : p->cost);
				fmt_money(other, sizeof other, r.spot ? p->cost : p->spot_cost);
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
			const advise_plan *cp = &plans[0];
			if (cp->nodes > 1 && cp->fabric && cp->fabric->gbps > 0)
				printf("  %u nodes over %s (%.0f Gbps per node): no network model, multi-node efficiency is "
				       "assumed equal to one node's\n", cp->nodes, cp->fabric->fabric, cp->fabric->gbps);
			else if (cp->nodes > 1 && cp->fabric)
				printf("  %u nodes over %s: no network model, multi-node efficiency is assumed equal to one "
				       "node's\n", cp->nodes, cp->fabric->fabric);
			else if (cp->nodes > 1)
				printf("  %u nodes with no GPU network between them (data/fabrics.csv): ZeRO-3 across them is "
				       "not proposed; no network model, multi-node efficiency is assumed equal to one node's\n",
				       cp->nodes);
		} else {
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
	rc = np ? EXIT_OK : EXIT_FAILURE;
	free(plans);
out:
	catalog_free(&cat);
	free(fabrics);
	free(gpus);
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
	int rc = load_gpus(&t, &n);
	if (rc)
		return rc;
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
