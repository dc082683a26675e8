/*
 * advise-request.c — `gpuctl advise` as the library runs it (advise.h):
 * the options, the one table of them (advise_options), the model resolved
 * from the presets or an architecture, the task's defaults, the GPU table,
 * the fabrics and the price catalogs loaded, the plans ranked; and the
 * result as the JSON `gpuctl advise --json` prints (schema gpuctl.advise/1),
 * which gc_advise_json hands to programs on libgpuctl. Never prints: the
 * CLI (src/cmd-advise.c) renders the text.
 */
#include "advise/advise.h"
#include "advise/here.h"

#include "util/datadir.h"
#include "util/errbuf.h"
#include "gpuctl/gpuctl.h"
#include "util/units.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

const struct advise_optdesc advise_options[] = {
	{"model", "NAME", "a preset of models.csv (--model list lists them; an unknown name suggests close ones)"},
	{"params", "N", "a parameter count (7B, 350M, 1.5T); alone, the usual decoder shape for that size"},
	{"layers", "L", "with --params, the architecture instead of the usual shape: layers"},
	{"hidden", "H", "hidden size"},
	{"heads", "A", "attention heads"},
	{"kv-heads", "K", "key/value heads (default: --heads)"},
	{"vocab", "V", "vocabulary size"},
	{"ffn", "F", "feed-forward size"},
	{"head-dim", "D", "attention head size (default: hidden / heads; Gemma's and Mistral-Nemo's differ)"},
	{"mlp", "M", "the MLP: gated (SwiGLU: gate, up, down; the default) or plain (two matrices: GPT-2, MPT, BERT)"},
	{"config", "FILE", "a Hugging Face config.json, read offline: the architecture (layers, sizes, heads, "
			   "experts, MLP, context); --params gives the count, else it is computed"},
	{"task", "TASK", "infer (default), train-full, lora, qlora or embed"},
	{"precision", "P", "fp32, bf16 (default), fp16, fp8, int8 or int4"},
	{"kv-precision", "P", "the KV cache's (default: --precision)"},
	{"optimizer", "O", "adamw (default), adam8bit, sgd or paged-adamw"},
	{"zero", "auto|0-3", "the ZeRO stage (default: advise chooses)"},
	{"fsdp", NULL, "FSDP: ZeRO stage 3"},
	{"offload", NULL, "offload optimizer states to CPU memory"},
	{"offload-params", NULL, "ZeRO-3/FSDP parameter offload too (FSDP's CPUOffload, DeepSpeed's offload_param): "
				 "implies --fsdp and --offload"},
	{"pure", NULL, "train-full purely in --precision (torchtune, LitGPT's bf16-true): weights, gradients and "
		       "optimizer states in 16 bits, no fp32 master copy"},
	{"no-offload", NULL, "never offload"},
	{"recompute", "R", "activation recomputation: auto (default), none, selective or full"},
	{"tp", "auto|N", "tensor-parallel degree (default: advise chooses)"},
	{"seq", "N", "tokens per sequence (default: the preset's, else 4096)"},
	{"batch", "N", "sequences per GPU (training micro-batch, default 1; inference, concurrent, default 16)"},
	{"lora-rank", "R", "LoRA rank (default 16)"},
	{"lora-targets", "LIST", "all (default), attn, mlp, or q,k,v,o,gate,up,down"},
	{"tokens", "N", "the work: training, generated or embedded tokens; images for CNNs (defaults per task)"},
	{"output-len", "N", "generated tokens per request (default 256)"},
	{"global-batch", "N", "training tokens per optimizer step (images for CNNs; default 1M): micro-batches of "
			      "--batch accumulate to it, and gradients are reduced once a step"},
	{"mfu", "F", "model FLOPs utilisation, 0.01 to 1 (defaults per task in docs/advise.md)"},
	{"headroom", "PCT", "memory each GPU keeps free (default 10%)"},
	{"spot", NULL, "rank by spot prices; instances without one are left out"},
	{"clouds", "LIST", "only these clouds: aws,gcp,azure"},
	{"regions", "LIST", "only these regions (us-east-1,...)"},
	{"max-gpus", "N", "at most N GPUs in all (default 64)"},
	{"budget", "USD", "leave out plans that cost more"},
	{"deadline", "DUR", "leave out plans that take longer (90m, 12h, 3d)"},
	{"catalog", "FILE", "a price catalog instead of the shipped snapshot (repeatable)"},
	{"top", "N", "rows shown (default 10)"},
	{"catalog-dir", "DIR", "SkyPilot's catalogs, read when there (default ~/.sky/catalogs/v8)"},
	{"framework", "F", "whose memory behaviour: auto (default), hf, megatron or vllm"},
	{"loss", "L", "the training loss: auto (default), full, chunked or classifier"},
	{"gpu", "NAME[:COUNT]", "your own GPUs, no catalog: does it fit on COUNT (default 1) of NAME on one node "
				 "(gpuctl gpus lists the names), with what plan, how long"},
	{"host-memory", "GIB", "with --gpu: the node's host memory, for CPU offload plans (default: unknown, none)"},
	{"here", NULL, "this machine too: free now, its wait in gpuctld's queue, or what it lacks"},
	{"here-price", "USD", "with --here: this machine's $ per GPU-hour"},
	{NULL, NULL, NULL},
};
const size_t advise_noptions = sizeof advise_options / sizeof advise_options[0] - 1;

static const char *const task_help = "infer, train-full, lora, qlora or embed";

void advise_input_init(struct advise_input *in)
{
	memset(in, 0, sizeof *in);
	in->top = 10;
	in->here_price = -1;
	advise_req *r = &in->req;
	r->job = (memmodel_job){.task = MEMMODEL_INFER, .prec = -1, .kv_prec = -1, .optim = MEMMODEL_ADAMW, .dp = 1,
				.tp = 1, .lora_rank = 16, .lora_targets = MEMMODEL_LT_ALL};
	r->max_gpus = 64;
	r->headroom = 0.10;
	r->zero = -1;
	r->recompute = -1;
	r->offload = -1;
	r->output_len = 256;
}

static int parse_uint(const char *opt, const char *arg, unsigned *out, char *err, size_t errlen)
{
	long v;
	int rc = units_parse_count(opt, arg, &v, err, errlen);
	if (rc)
		return rc;
	if (v > 10000000) {
		errbuf_set(err, errlen, "invalid %s value '%s' (at most 10000000)", opt, arg);
		return GC_EINVAL;
	}
	*out = (unsigned)v;
	return GC_OK;
}

static int parse_real(const char *opt, const char *arg, double lo, double hi, double *out, char *err, size_t errlen)
{
	char *end;
	double v = strtod(arg, &end);
	if (end == arg || *end || !(v >= lo && v <= hi)) {
		errbuf_set(err, errlen, "invalid %s '%s' (expected a number from %g to %g)", opt, arg, lo, hi);
		return GC_EINVAL;
	}
	*out = v;
	return GC_OK;
}

/* v is what a *_parse gave for arg: refused, naming what is accepted, when negative */
static int choose(const char *opt, const char *arg, int v, const char *accepted, char *err, size_t errlen)
{
	if (v >= 0)
		return GC_OK;
	errbuf_set(err, errlen, "invalid %s '%s' (accepted: %s)", opt, arg, accepted);
	return GC_EINVAL;
}

int advise_option(struct advise_input *in, const char *name, const char *arg, char *err, size_t errlen)
{
	advise_req *r = &in->req;
	char opt[40];
	snprintf(opt, sizeof opt, "--%s", name);
	const struct advise_optdesc *o = NULL;
	for (size_t i = 0; i < advise_noptions && !o; i++)
		if (strcmp(advise_options[i].name, name) == 0)
			o = &advise_options[i];
	if (!o) {
		errbuf_set(err, errlen, "unknown advise option '--%.64s'", name);
		return GC_ENOTFOUND;
	}
	if ((o->arg != NULL) != (arg != NULL)) {
		errbuf_set(err, errlen, arg ? "advise option %s takes no value" : "advise option %s needs a value", opt);
		return GC_EINVAL;
	}
	int rc = GC_OK;
	if (!strcmp(name, "model"))
		in->model = arg;
	else if (!strcmp(name, "params"))
		in->params = arg;
	else if (!strcmp(name, "layers"))
		rc = parse_uint(opt, arg, &in->layers, err, errlen);
	else if (!strcmp(name, "hidden"))
		rc = parse_uint(opt, arg, &in->hidden, err, errlen);
	else if (!strcmp(name, "heads"))
		rc = parse_uint(opt, arg, &in->heads, err, errlen);
	else if (!strcmp(name, "kv-heads"))
		rc = parse_uint(opt, arg, &in->kv_heads, err, errlen);
	else if (!strcmp(name, "vocab"))
		rc = parse_uint(opt, arg, &in->vocab, err, errlen);
	else if (!strcmp(name, "ffn"))
		rc = parse_uint(opt, arg, &in->ffn, err, errlen);
	else if (!strcmp(name, "head-dim"))
		rc = parse_uint(opt, arg, &in->head_dim, err, errlen);
	else if (!strcmp(name, "mlp")) {
		if (strcmp(arg, "gated") && strcmp(arg, "plain")) {
			errbuf_set(err, errlen, "invalid --mlp '%.64s' (accepted: gated, plain)", arg);
			rc = GC_EINVAL;
		} else {
			in->mlp = strcmp(arg, "plain") == 0 ? 2 : 1;
		}
	} else if (!strcmp(name, "config"))
		in->config = arg;
	else if (!strcmp(name, "task"))
		rc = choose(opt, arg, r->job.task = memmodel_task_parse(arg), task_help, err, errlen);
	else if (!strcmp(name, "precision"))
		rc = choose(opt, arg, r->job.prec = memmodel_prec_parse(arg), "fp32, bf16, fp16, fp8, int8, int4", err,
			    errlen);
	else if (!strcmp(name, "kv-precision")) {
		r->job.kv_prec = memmodel_prec_parse(arg);
		rc = choose(opt, arg, r->job.kv_prec == MEMMODEL_INT4 ? -1 : r->job.kv_prec, "fp32, bf16, fp16, fp8, int8",
			    err, errlen);
	} else if (!strcmp(name, "optimizer"))
		rc = choose(opt, arg, r->job.optim = memmodel_optim_parse(arg), "adamw, adam8bit, sgd, paged-adamw", err,
			    errlen);
	else if (!strcmp(name, "framework"))
		rc = choose(opt, arg, r->job.framework = memmodel_framework_parse(arg), "auto, hf, megatron, vllm", err,
			    errlen);
	else if (!strcmp(name, "loss"))
		rc = choose(opt, arg, r->job.loss = memmodel_loss_parse(arg), "auto, full, chunked, classifier", err,
			    errlen);
	else if (!strcmp(name, "zero")) {
		if (strcmp(arg, "auto") == 0)
			r->zero = -1;
		else
			rc = choose(opt, arg, r->zero = strlen(arg) == 1 && arg[0] >= '0' && arg[0] <= '3' ? arg[0] - '0' : -1,
				    "auto, 0, 1, 2, 3", err, errlen);
	} else if (!strcmp(name, "fsdp"))
		r->zero = 3;
	else if (!strcmp(name, "offload"))
		r->offload = 1;
	else if (!strcmp(name, "offload-params")) {
		r->job.offload_params = true;
		r->offload = 1;
	}
	else if (!strcmp(name, "pure"))
		r->job.pure = true;
	else if (!strcmp(name, "no-offload"))
		r->offload = 0;
	else if (!strcmp(name, "recompute")) {
		if (strcmp(arg, "auto") == 0)
			r->recompute = -1;
		else
			rc = choose(opt, arg, r->recompute = memmodel_recompute_parse(arg), "auto, none, selective, full", err,
				    errlen);
	} else if (!strcmp(name, "tp")) {
		if (strcmp(arg, "auto") == 0) {
			r->tp = 0;
		} else if ((rc = parse_uint(opt, arg, &r->tp, err, errlen)) == GC_OK && (r->tp & (r->tp - 1))) {
			errbuf_set(err, errlen, "invalid --tp '%s' (accepted: auto or a power of two)", arg);
			rc = GC_EINVAL;
		}
	} else if (!strcmp(name, "seq"))
		rc = parse_uint(opt, arg, &r->job.seq, err, errlen);
	else if (!strcmp(name, "batch"))
		rc = parse_uint(opt, arg, &r->job.batch, err, errlen);
	else if (!strcmp(name, "lora-rank"))
		rc = parse_uint(opt, arg, &r->job.lora_rank, err, errlen);
	else if (!strcmp(name, "lora-targets")) {
		int t = memmodel_targets_parse(arg);
		rc = choose(opt, arg, t, "all, attn, mlp, or a list of q,k,v,o,gate,up,down", err, errlen);
		r->job.lora_targets = (unsigned)t;
	} else if (!strcmp(name, "tokens"))
		in->tokens = arg;
	else if (!strcmp(name, "global-batch"))
		in->global_batch = arg;
	else if (!strcmp(name, "output-len"))
		rc = parse_uint(opt, arg, &r->output_len, err, errlen);
	else if (!strcmp(name, "mfu"))
		rc = parse_real(opt, arg, 0.01, 1, &r->mfu, err, errlen);
	else if (!strcmp(name, "headroom")) {
		int pct = 0;
		if (units_parse_percent(arg, &pct, NULL, 0) < 0 || pct > 90) {
			errbuf_set(err, errlen, "invalid --headroom '%s' (expected a percentage from 0 to 90, such as 10%%)",
				   arg);
			rc = GC_EINVAL;
		}
		r->headroom = pct / 100.0;
	} else if (!strcmp(name, "spot"))
		r->spot = true;
	else if (!strcmp(name, "clouds"))
		r->clouds = arg;
	else if (!strcmp(name, "regions"))
		r->regions = arg;
	else if (!strcmp(name, "max-gpus"))
		rc = parse_uint(opt, arg, &r->max_gpus, err, errlen);
	else if (!strcmp(name, "budget"))
		rc = parse_real(opt, arg, 0.01, 1e12, &r->budget, err, errlen);
	else if (!strcmp(name, "deadline")) {
		long long ms;
		if ((rc = units_parse_duration(opt, arg, &ms, err, errlen)) == GC_OK)
			r->deadline_h = ms / 3600e3;
	} else if (!strcmp(name, "catalog-dir")) {
		in->catalog_dir = arg;
	} else if (!strcmp(name, "catalog")) {
		if (in->ncat == sizeof in->catalogs / sizeof in->catalogs[0]) {
			errbuf_set(err, errlen, "too many --catalog files (at most 16)");
			rc = GC_EINVAL;
		} else {
			in->catalogs[in->ncat++] = arg;
		}
	} else if (!strcmp(name, "top"))
		rc = units_parse_count(opt, arg, &in->top, err, errlen);
	else if (!strcmp(name, "gpu")) {
		const char *colon = strchr(arg, ':');
		size_t nl = colon ? (size_t)(colon - arg) : strlen(arg);
		char *end = NULL;
		errno = 0;
		unsigned long k = colon ? strtoul(colon + 1, &end, 10) : 1;
		if (!nl || nl > 31 || (colon && (!isdigit((unsigned char)colon[1]) || *end || errno || k < 1 || k > 4096))) {
			errbuf_set(err, errlen, "invalid --gpu '%.64s' (expected NAME[:COUNT], a GPU of gpuctl gpus and 1 to "
						"4096 of them on one node, such as rtx4090 or a100-80gb:8)", arg);
			rc = GC_EINVAL;
		} else {
			snprintf(in->gpu, sizeof in->gpu, "%.*s", (int)nl, arg);
			in->gpu_count = (unsigned)k;
		}
	} else if (!strcmp(name, "host-memory")) {
		char *end;
		errno = 0;
		double v = strtod(arg, &end);
		if (end == arg || *end || errno || !(v > 0) || v > 1e6) {
			errbuf_set(err, errlen, "invalid --host-memory '%.64s' (expected GiB of host memory, e.g. 512)", arg);
			rc = GC_EINVAL;
		} else {
			in->host_gib = v;
		}
	} else if (!strcmp(name, "here"))
		in->here = true;
	else if (!strcmp(name, "here-price")) {
		char *end;
		errno = 0;
		double v = strtod(arg, &end);
		if (end == arg || *end || errno || !(v >= 0) || v > 1e6) {
			errbuf_set(err, errlen, "invalid --here-price '%.64s' (expected dollars per GPU-hour, e.g. 1.80)", arg);
			rc = GC_EINVAL;
		} else {
			in->here = true;
			in->here_price = v;
		}
	}
	return rc;
}

/* a data file that will not load is the installation's fault, not the request's */
static int data_rc(int rc)
{
	return rc == GC_EINVAL ? GC_EIO : rc;
}

int advise_load_models(memmodel_model **out, size_t *n, char *err, size_t errlen)
{
	char path[PATH_MAX];
	int rc = datadir_file("models.csv", path, sizeof path, err, errlen);
	if (rc == GC_OK)
		rc = specs_load_models(path, out, n, err, errlen);
	return data_rc(rc);
}

int advise_load_gpus(spec_gpu **out, size_t *n, char *err, size_t errlen)
{
	char path[PATH_MAX];
	int rc = datadir_file("gpus.csv", path, sizeof path, err, errlen);
	if (rc == GC_OK)
		rc = specs_load_gpus(path, out, n, err, errlen);
	return data_rc(rc);
}

int advise_load_sky(spec_sky **out, size_t *n, char *err, size_t errlen)
{
	char path[PATH_MAX];
	int rc = datadir_file("sky-accelerators.csv", path, sizeof path, err, errlen);
	if (rc == GC_OK)
		rc = specs_load_sky(path, out, n, err, errlen);
	return data_rc(rc);
}

/*
 * Every entry of a --clouds / --regions list must name a cloud or region of
 * the catalog: a typo would otherwise read as "nothing fits". GC_EINVAL
 * naming the entry and (some of) the catalog's values.
 */
static int check_filter(const char *opt, const char *list, const catalog *cat, bool region, char *err, size_t errlen)
{
	if (!list)
		return GC_OK;
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
			errbuf_set(err, errlen, "invalid %s entry '%.*s' (the catalog has %s%s)", opt, (int)k, p,
				   have[0] ? have : "none", shown == 12 ? ", ..." : "");
			return GC_EINVAL;
		}
		p += k;
		if (*p == ',')
			p++;
	}
	return GC_OK;
}

/* the model: a preset (--model), or --params with an architecture or the nearest preset's shape */
/* an unsigned field of a config.json under any of its names (GPT-2's n_embd, Llama's hidden_size); 0 absent */
static unsigned cfg_uint(json_t *o, const char *const *names)
{
	for (; *names; names++) {
		json_t *v = json_object_get(o, *names);
		if (json_is_integer(v) && json_integer_value(v) > 0 && json_integer_value(v) < 100000000)
			return (unsigned)json_integer_value(v);
	}
	return 0;
}

/*
 * --config FILE: a Hugging Face config.json's architecture into m (its
 * text_config for a multimodal one). The MLP is plain for the families
 * that have two matrices (GPT-2, GPT-NeoX, GPT-J, OPT, BLOOM, Falcon, MPT,
 * Phi-1/2, BERT-like), gated otherwise. GC_OK, or GC_EINVAL with why.
 */
static int read_config(const char *path, memmodel_model *m, char *err, size_t errlen)
{
	struct stat st;
	if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (16 << 20)) {
		errbuf_set(err, errlen, "invalid --config '%.200s': %s (expected a Hugging Face config.json)", path,
			   stat(path, &st) != 0 ? strerror(errno) : !S_ISREG(st.st_mode) ? "not a regular file"
											: "larger than 16 MiB");
		return GC_EINVAL;
	}
	json_error_t je;
	json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (!root || !json_is_object(root)) {
		errbuf_set(err, errlen, "invalid --config '%.200s': %s (expected a Hugging Face config.json)", path,
			   root ? "not a JSON object" : je.text);
		json_decref(root);
		return GC_EINVAL;
	}
	json_t *o = json_is_object(json_object_get(root, "text_config")) ? json_object_get(root, "text_config") : root;
	static const char *const n_layers[] = {"num_hidden_layers", "n_layer", "n_layers", "num_layers", NULL};
	static const char *const n_hidden[] = {"hidden_size", "n_embd", "d_model", NULL};
	static const char *const n_heads[] = {"num_attention_heads", "n_head", "n_heads", NULL};
	static const char *const n_kv[] = {"num_key_value_heads", "num_kv_heads", "multi_query_group_num", NULL};
	static const char *const n_vocab[] = {"vocab_size", "padded_vocab_size", NULL};
	static const char *const n_ffn[] = {"intermediate_size", "n_inner", "ffn_hidden_size", "ffn_dim", NULL};
	static const char *const n_seq[] = {"max_position_embeddings", "n_positions", "max_seq_len", "seq_length", NULL};
	static const char *const n_experts[] = {"num_local_experts", "num_experts", "n_routed_experts", NULL};
	static const char *const n_active[] = {"num_experts_per_tok", "moe_topk", NULL};
	static const char *const n_head_dim[] = {"head_dim", NULL};
	m->layers = cfg_uint(o, n_layers);
	m->hidden = cfg_uint(o, n_hidden);
	m->heads = cfg_uint(o, n_heads);
	m->kv_heads = cfg_uint(o, n_kv);
	m->vocab = cfg_uint(o, n_vocab);
	m->ffn = cfg_uint(o, n_ffn);
	m->seq = cfg_uint(o, n_seq);
	m->experts = cfg_uint(o, n_experts);
	m->experts_active = m->experts > 1 ? cfg_uint(o, n_active) : 0;
	if (json_is_true(json_object_get(o, "multi_query")))
		m->kv_heads = 1; /* Falcon-7B's one KV head */
	unsigned head_dim = cfg_uint(o, n_head_dim);
	const char *type = json_string_value(json_object_get(o, "model_type"));
	static const char *const plain[] = {"gpt2", "gpt_neox", "gptj", "opt", "bloom", "falcon", "mpt", "phi", "bert",
					    "roberta", "gpt_bigcode", "starcoder2", NULL};
	m->gated = true;
	for (size_t i = 0; type && plain[i]; i++)
		if (strcmp(type, plain[i]) == 0)
			m->gated = false;
	if (!m->ffn && m->hidden) {
		double ratio = json_number_value(json_object_get(o, "expansion_ratio")); /* MPT */
		m->ffn = (unsigned)(m->hidden * (ratio > 0 ? ratio : 4));
	}
	m->tied = json_is_true(json_object_get(o, "tie_word_embeddings")) ||
		  (!json_object_get(o, "tie_word_embeddings") && !m->gated); /* GPT-2's default */
	const char *why = !m->layers ? "num_hidden_layers" : !m->hidden ? "hidden_size" : !m->heads ? "num_attention_heads"
			  : !m->vocab ? "vocab_size" : NULL;
	if (why) {
		errbuf_set(err, errlen, "invalid --config '%.200s': it has no %s (expected a Hugging Face config.json of a "
					"transformer)", path, why);
		json_decref(root);
		return GC_EINVAL;
	}
	if (!head_dim && m->hidden % m->heads) {
		errbuf_set(err, errlen, "invalid --config '%.200s': hidden_size %u is not a multiple of num_attention_heads "
					"%u, and it gives no head_dim", path, m->hidden, m->heads);
		json_decref(root);
		return GC_EINVAL;
	}
	m->head_dim = head_dim && head_dim != m->hidden / m->heads ? head_dim : 0;
	if (m->kv_heads && m->heads % m->kv_heads) {
		errbuf_set(err, errlen, "invalid --config '%.200s': num_key_value_heads %u does not divide "
					"num_attention_heads %u", path, m->kv_heads, m->heads);
		json_decref(root);
		return GC_EINVAL;
	}
	const char *name = json_string_value(json_object_get(root, "_name_or_path"));
	const char *base = strrchr(path, '/');
	snprintf(m->name, sizeof m->name, "%s", name && *name ? name : base ? base + 1 : path);
	m->kind = MEMMODEL_DECODER;
	json_decref(root);
	return GC_OK;
}

static int resolve_model(const struct advise_input *in, struct advise_result *res, char *err, size_t errlen)
{
	advise_req *r = &res->req;
	memmodel_model *presets = NULL;
	size_t npresets = 0;
	int rc;
	if (in->model) {
		if ((rc = advise_load_models(&presets, &npresets, err, errlen)) != GC_OK)
			return rc;
		const memmodel_model *m = specs_model_find(presets, npresets, in->model);
		if (!m) {
			const char *sug[3];
			size_t k = specs_model_suggest(presets, npresets, in->model, sug, 3);
			char list[256] = "";
			for (size_t i = 0; i < k; i++)
				snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", sug[i]);
			if (k)
				errbuf_set(err, errlen, "unknown model '%s' (did you mean %s? gpuctl advise --model list shows all)",
					   in->model, list);
			else
				errbuf_set(err, errlen,
					   "unknown model '%s' (gpuctl advise --model list shows the presets; or give --params)",
					   in->model);
			free(presets);
			return GC_EINVAL;
		}
		r->model = *m;
		free(presets);
		presets = NULL;
	} else if (in->config) {
		if ((rc = read_config(in->config, &r->model, err, errlen)) != GC_OK)
			return rc;
		if (!r->model.seq || r->model.seq > 1048576)
			r->model.seq = 4096;
	} else {
		r->model.kind = MEMMODEL_DECODER;
		r->model.gated = true;
		snprintf(r->model.name, sizeof r->model.name, "%s-parameter model", in->params);
	}
	if (in->mlp)
		r->model.gated = in->mlp == 1;
	if (in->params) {
		char why[200];
		if (memmodel_parse_count(in->params, &r->model.params, why, sizeof why)) {
			errbuf_set(err, errlen, "invalid --params: %s", why);
			return GC_EINVAL;
		}
		r->model.active_params = r->model.params;
	}
	if (in->layers || in->hidden || in->heads || in->kv_heads || in->vocab || in->ffn || in->head_dim) {
		if (in->head_dim) r->model.head_dim = in->head_dim;
		if (in->layers) r->model.layers = in->layers;
		if (in->hidden) r->model.hidden = in->hidden;
		if (in->heads) r->model.heads = in->heads;
		if (in->kv_heads) r->model.kv_heads = in->kv_heads;
		if (in->vocab) r->model.vocab = in->vocab;
		if (in->ffn) r->model.ffn = in->ffn;
		if (!r->model.layers || !r->model.hidden || !r->model.heads) {
			errbuf_set(err, errlen, "advise: an architecture needs --layers, --hidden and --heads together");
			return GC_EINVAL;
		}
		if ((!r->model.head_dim && r->model.hidden % r->model.heads) ||
		    (r->model.kv_heads && r->model.heads % r->model.kv_heads)) {
			errbuf_set(err, errlen, "advise: --hidden %u must be a multiple of --heads %u, and --heads of --kv-heads",
				   r->model.hidden, r->model.heads);
			return GC_EINVAL;
		}
		if (!r->model.ffn)
			r->model.ffn = r->model.hidden * 4;
		if (!in->params && !in->model)
			r->model.params = r->model.active_params = memmodel_arch_params(&r->model);
	}
	/* --config without --params: the count its architecture implies; a mixture of experts uses its
	   active experts' share per token */
	if (in->config && !in->params) {
		r->model.params = memmodel_arch_params(&r->model);
		memmodel_model act = r->model;
		if (act.experts > 1 && act.experts_active)
			act.experts = act.experts_active;
		r->model.active_params = memmodel_arch_params(&act);
	}
	/*
	 * --params alone: activations, the KV cache and LoRA adapters need a
	 * shape, so assume the usual decoder shape for that size (the nearest
	 * default_shape preset) and say so; the parameter count stays the user's
	 */
	if (!in->model && !r->model.layers) {
		if ((rc = advise_load_models(&presets, &npresets, err, errlen)) != GC_OK)
			return rc;
		const memmodel_model *sh = specs_model_shape_for(presets, npresets, r->model.params);
		if (sh) {
			res->shape = *sh;
			r->model.layers = sh->layers;
			r->model.hidden = sh->hidden;
			r->model.heads = sh->heads;
			r->model.kv_heads = sh->kv_heads;
			r->model.vocab = sh->vocab;
			r->model.ffn = sh->ffn;
			r->model.tied = sh->tied;
			r->model.gated = sh->gated;
		}
		free(presets);
	}
	return GC_OK;
}

/* the task's defaults for what was not given, and the work (--tokens) */
static int defaults(const struct advise_input *in, advise_req *r, char *err, size_t errlen)
{
	memmodel_job *j = &r->job;
	if (j->prec < 0)
		j->prec = j->task == MEMMODEL_TRAIN && r->model.kind == MEMMODEL_CNN ? MEMMODEL_FP16 : MEMMODEL_BF16;
	if (j->kv_prec < 0)
		j->kv_prec = j->prec == MEMMODEL_FP32 ? MEMMODEL_FP32 : MEMMODEL_BF16;
	if (!j->batch)
		j->batch = j->task == MEMMODEL_INFER ? 16 : j->task == MEMMODEL_EMBED ? 64 : r->model.kind == MEMMODEL_CNN ? 256 : 1;
	if (!j->seq && r->model.kind != MEMMODEL_CNN && !r->model.seq)
		j->seq = 4096;
	j->output_len = j->task == MEMMODEL_INFER ? r->output_len : 0;
	double tok_default = j->task == MEMMODEL_TRAIN ? 1e9 : j->task == MEMMODEL_LORA || j->task == MEMMODEL_QLORA ? 100e6
			     : j->task == MEMMODEL_EMBED ? 1e9 : 10e6;
	if (r->model.kind == MEMMODEL_CNN)
		tok_default = 90 * 1281167.0; /* 90 ImageNet epochs */
	r->tokens = tok_default;
	char why[200];
	if (in->tokens && memmodel_parse_count(in->tokens, &r->tokens, why, sizeof why)) {
		errbuf_set(err, errlen, "invalid --tokens: %s", why);
		return GC_EINVAL;
	}
	if (in->global_batch) {
		bool bad = memmodel_parse_count(in->global_batch, &r->global_batch, why, sizeof why) != 0;
		if (bad || r->global_batch < 1) {
			errbuf_set(err, errlen, "invalid --global-batch '%.64s': %s", in->global_batch,
				   bad ? why : "expected at least 1 (tokens per step: 4096, 512K, 4M)");
			return GC_EINVAL;
		}
	}
	return GC_OK;
}

/* the GPU table, the fabrics, and the catalogs (--catalog, else the bundled aws, gcp and azure) */
/*
 * --gpu NAME[:COUNT]: the GPUs you have, one node of them, as the only row
 * of the catalog (no price: the plans cost nothing, and are ranked by time).
 */
static int own_gpus(const struct advise_input *in, struct advise_result *res, char *err, size_t errlen)
{
	const spec_gpu *g = specs_gpu_named(res->gpus, res->ngpus, in->gpu);
	if (!g) {
		char names[1200] = "";
		for (size_t i = 0; i < res->ngpus && strlen(names) + 40 < sizeof names; i++)
			snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", res->gpus[i].name);
		errbuf_set(err, errlen, "invalid --gpu '%.31s': not a GPU of gpuctl's table (gpuctl gpus): %s", in->gpu,
			   names);
		return GC_EINVAL;
	}
	char csv[256], host[32] = "";
	if (in->host_gib > 0)
		snprintf(host, sizeof host, "%.6g", in->host_gib);
	int n = snprintf(csv, sizeof csv, "InstanceType,AcceleratorName,AcceleratorCount,MemoryGiB,Price,Region\n"
					   "your GPUs,%s,%u,%s,0,-\n", g->name, in->gpu_count, host);
	int rc = catalog_load_buf(&res->cat, csv, (size_t)n, "--gpu", "yours", err, errlen);
	if (rc != GC_OK)
		return rc;
	res->own = g;
	res->own_count = in->gpu_count;
	return GC_OK;
}

static int load_data(const struct advise_input *in, struct advise_result *res, char *err, size_t errlen)
{
	char path[PATH_MAX];
	int rc = advise_load_gpus(&res->gpus, &res->ngpus, err, errlen);
	if (rc == GC_OK && (rc = datadir_file("fabrics.csv", path, sizeof path, err, errlen)) == GC_OK)
		rc = specs_load_fabrics(path, &res->fabrics, &res->req.nfabrics, err, errlen);
	if (rc != GC_OK)
		return data_rc(rc);
	res->req.fabrics = res->fabrics;
	if (in->gpu[0])
		return own_gpus(in, res, err, errlen);
	if (in->ncat == 0) {
		/* SkyPilot's own catalogs where it keeps them, else the shipped snapshot, cloud by cloud */
		static const char *const clouds[] = {"aws", "gcp", "azure"};
		char dir[PATH_MAX] = "";
		const char *home = getenv("HOME");
		struct stat st;
		if (in->catalog_dir) {
			if (stat(in->catalog_dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
				errbuf_set(err, errlen, "invalid --catalog-dir '%.200s': %s (expected SkyPilot's catalog "
							"directory, such as ~/.sky/catalogs/v8, holding CLOUD/vms.csv)", in->catalog_dir,
					   stat(in->catalog_dir, &st) != 0 ? strerror(errno) : "not a directory");
				return GC_EINVAL;
			}
			snprintf(dir, sizeof dir, "%s", in->catalog_dir);
		} else if (home && home[0] == '/') {
			snprintf(dir, sizeof dir, "%s/.sky/catalogs/v8", home);
		}
		for (int i = 0; i < 3; i++) {
			struct advise_catsrc *cs = &res->src[res->nsrc++];
			snprintf(cs->cloud, sizeof cs->cloud, "%s", clouds[i]);
			char live[PATH_MAX + 32];
			snprintf(live, sizeof live, "%s/%s/vms.csv", dir, clouds[i]);
			bool there = dir[0] && stat(live, &st) == 0 && S_ISREG(st.st_mode);
			if (there) {
				char why[400];
				/* SkyPilot's GCP file prices the GPUs on rows of their own, apart from the machines
				   they attach to: each is priced with its host, as SkyPilot does */
				cat_host_rule *rules = NULL;
				size_t nrules = 0;
				bool gcp = strcmp(clouds[i], "gcp") == 0;
				if (gcp && ((rc = datadir_file("sky-gcp-hosts.csv", path, sizeof path, err, errlen)) != GC_OK ||
					    (rc = catalog_load_host_rules(path, &rules, &nrules, err, errlen)) != GC_OK))
					return data_rc(rc);
				rc = gcp ? catalog_load_gcp(&res->cat, live, rules, nrules, why, sizeof why)
					 : catalog_load(&res->cat, live, clouds[i], why, sizeof why);
				free(rules);
				if (rc != GC_OK) {
					errbuf_set(err, errlen, "SkyPilot's catalog: %s", why);
					return GC_EINVAL;
				}
				cs->live = true;
				snprintf(cs->path, sizeof cs->path, "%s", live);
				double age = difftime(time(NULL), st.st_mtime) / 3600;
				cs->age_h = age > 0 ? age : 0;
				continue;
			}
			char name[64];
			snprintf(name, sizeof name, "catalog/%s.csv", clouds[i]);
			if ((rc = datadir_file(name, path, sizeof path, err, errlen)) != GC_OK ||
			    (rc = catalog_load(&res->cat, path, clouds[i], err, errlen)) != GC_OK)
				return data_rc(rc);
			snprintf(cs->path, sizeof cs->path, "%s", path);
		}
		return GC_OK;
	}
	for (size_t i = 0; i < in->ncat; i++) {
		/* the cloud from the file name (aws.csv, gcp-vms.csv ...) unless a Cloud column says */
		const char *base = strrchr(in->catalogs[i], '/');
		base = base ? base + 1 : in->catalogs[i];
		char cloud[16], why[400];
		size_t k = strcspn(base, ".-_");
		snprintf(cloud, sizeof cloud, "%.*s", (int)(k < 15 ? k : 15), base);
		if (catalog_load(&res->cat, in->catalogs[i], cloud, why, sizeof why) != GC_OK) {
			errbuf_set(err, errlen, "invalid --catalog: %s", why);
			return GC_EINVAL;
		}
	}
	return GC_OK;
}

int advise_run(const struct advise_input *in, struct advise_result *res, char *err, size_t errlen)
{
	memset(res, 0, sizeof *res);
	res->req = in->req;
	advise_req *r = &res->req;
	if (!in->model && !in->params && !in->config) {
		errbuf_set(err, errlen, "advise: give the model: --model NAME (gpuctl advise --model list shows the "
					"presets), --config config.json or --params N such as 7B");
		return GC_EINVAL;
	}
	if (in->model && in->config) {
		errbuf_set(err, errlen, "advise: --model and --config are two models: give one");
		return GC_EINVAL;
	}
	int rc;
	if ((rc = resolve_model(in, res, err, errlen)) != GC_OK || (rc = defaults(in, r, err, errlen)) != GC_OK ||
	    (rc = load_data(in, res, err, errlen)) != GC_OK ||
	    (rc = check_filter("--clouds", r->clouds, &res->cat, false, err, errlen)) != GC_OK ||
	    (rc = check_filter("--regions", r->regions, &res->cat, true, err, errlen)) != GC_OK)
		return rc;
	if (in->host_gib > 0 && !in->gpu[0]) {
		errbuf_set(err, errlen, "advise: --host-memory goes with --gpu (a catalog gives each instance's own)");
		return GC_EINVAL;
	}
	if (in->gpu[0] && (in->ncat || in->catalog_dir || r->clouds || r->regions || r->spot || r->budget > 0 ||
			   in->here)) {
		errbuf_set(err, errlen, "advise: --gpu asks about your own GPUs: --catalog, --catalog-dir, --clouds, --regions, "
					"--spot, --budget and --here are about renting (give one or the other)");
		return GC_EINVAL;
	}
	if (r->job.offload_params) {
		if (r->zero >= 0 && r->zero != 3) {
			errbuf_set(err, errlen, "advise: --offload-params offloads ZeRO-3's (FSDP's) parameter shards: not with "
						"--zero %d", r->zero);
			return GC_EINVAL;
		}
		r->zero = 3;
	}
	if (r->job.pure && (r->job.task != MEMMODEL_TRAIN || r->job.prec == MEMMODEL_FP32 || r->job.prec == MEMMODEL_INT8 ||
			    r->job.prec == MEMMODEL_INT4)) {
		errbuf_set(err, errlen, "advise: --pure is full training (--task train-full) in bf16, fp16 or fp8 without an "
					"fp32 master copy");
		return GC_EINVAL;
	}
	bool peft = r->job.task == MEMMODEL_LORA || r->job.task == MEMMODEL_QLORA;
	if (peft && r->tp > 1 && memmodel_framework_of(&r->model, &r->job) == MEMMODEL_FW_HF) {
		errbuf_set(err, errlen, "advise: --tp %u: PEFT's LoRA and QLoRA under Hugging Face's Trainer have no tensor "
					"parallelism; add --framework megatron, or leave --tp out (data parallel, ZeRO/FSDP)", r->tp);
		return GC_EINVAL;
	}
	char why[400];
	if (res->own)
		r->max_gpus = res->own_count; /* that one node: what does not fit on it does not fit */
	if (advise_rank(r, res->own ? res->own : res->gpus, res->own ? 1 : res->ngpus, &res->cat, &res->plans, &res->np,
			&res->need, &res->skipped, why, sizeof why)) {
		errbuf_set(err, errlen, "advise: %s", why);
		return GC_EINVAL;
	}
	memmodel_job one = r->job;
	one.dp = one.tp = 1;
	one.zero = 0;
	/* what FlashAttention-style attention recomputation keeps: the s² scores are not stored */
	one.recompute = r->recompute >= 0 ? r->recompute : MEMMODEL_RC_SELECTIVE;
	memmodel_estimate(&r->model, &one, &res->single, NULL, 0);
	res->top = (size_t)in->top;
	res->tokens_given = in->tokens != NULL;
	return GC_OK;
}

void advise_prices_text(const struct advise_result *res, char *buf, size_t len)
{
	const char *date = res->cat.date[0] ? res->cat.date : "unknown";
	size_t n = 0, live = 0;
	for (size_t i = 0; i < res->nsrc; i++)
		live += res->src[i].live;
	if (len)
		buf[0] = '\0';
	if (!live) {
		snprintf(buf, len, "snapshot of %s", date);
		return;
	}
	for (size_t i = 0; i < res->nsrc; i++) {
		const struct advise_catsrc *cs = &res->src[i];
		if (!cs->live)
			continue;
		int w = cs->age_h < 1 ? snprintf(buf + n, len > n ? len - n : 0, "%s%s: SkyPilot's catalog %s, under an "
						"hour old", n ? "; " : "", cs->cloud, cs->path)
			: cs->age_h < 48 ? snprintf(buf + n, len > n ? len - n : 0, "%s%s: SkyPilot's catalog %s, %.0f h old",
						 n ? "; " : "", cs->cloud, cs->path, cs->age_h)
				       : snprintf(buf + n, len > n ? len - n : 0, "%s%s: SkyPilot's catalog %s, %.0f days old",
						 n ? "; " : "", cs->cloud, cs->path, cs->age_h / 24);
		if (w > 0)
			n += (size_t)w;
	}
	if (live < res->nsrc) {
		int w = snprintf(buf + n, len > n ? len - n : 0, "; ");
		n += w > 0 ? (size_t)w : 0;
		bool first = true;
		for (size_t i = 0; i < res->nsrc; i++) {
			if (res->src[i].live)
				continue;
			w = snprintf(buf + n, len > n ? len - n : 0, "%s%s", first ? "" : ", ", res->src[i].cloud);
			n += w > 0 ? (size_t)w : 0;
			first = false;
		}
		snprintf(buf + n, len > n ? len - n : 0, ": snapshot of %s", date);
	}
}

void advise_assumptions(const struct advise_result *res, char *buf, size_t len)
{
	const advise_req *r = &res->req;
	const memmodel_job *j = &r->job;
	const memmodel_model *m = &r->model;
	int fw = memmodel_framework_of(m, j), loss = memmodel_loss_of(m, j);
	bool train = memmodel_trains(j->task);
	size_t n = 0;
#define ADD(...)                                                                                                       \
	do {                                                                                                           \
		int w_ = snprintf(buf + n, len > n ? len - n : 0, __VA_ARGS__);                                       \
		if (w_ > 0)                                                                                            \
			n += (size_t)w_;                                                                               \
	} while (0)
	if (len)
		buf[0] = '\0';
	if (m->kind == MEMMODEL_CNN) {
		ADD("framework: PyTorch; activations per image from data/models.csv");
	} else if (train) {
		ADD("framework: %s", fw == MEMMODEL_FW_MEGATRON ? "megatron" : "hf (transformers, PEFT, Trainer)");
		if (loss == MEMMODEL_LOSS_CLASSIFIER || !m->vocab)
			ADD(", a classifier head (no vocabulary-sized logits; --loss full for a language-model head)");
		else if (loss == MEMMODEL_LOSS_CHUNKED)
			ADD(", chunked/fused cross entropy (the logits never whole)");
		else if (fw == MEMMODEL_FW_MEGATRON)
			ADD(", its fp32 softmax reused in place (%d bytes per token per vocabulary entry)",
			    j->prec == MEMMODEL_FP32 ? 4 : 6);
		else
			ADD(", cross entropy in fp32 (12 bytes per token per vocabulary entry; --loss chunked for a fused one)");
		if (j->task == MEMMODEL_QLORA)
			ADD("; QLoRA as published: 16-bit adapters, NF4 base");
		if (j->optim == MEMMODEL_PAGED_ADAMW)
			ADD("; paged optimizer states counted in host memory");
		ADD("; attention: %s", r->recompute == MEMMODEL_RC_NONE ? "scores stored (eager)" : "FlashAttention");
		if (j->prec == MEMMODEL_FP32)
			ADD("; fp32 activations");
	} else if (j->task == MEMMODEL_INFER) {
		if (fw == MEMMODEL_FW_HF)
			ADD("framework: hf generate (the KV cache copied as it grows: two at the last step; every prompt "
			    "position's logits)");
		else
			ADD("framework: vllm (paged KV cache, one copy; prefill in 8192-token chunks); it takes "
			    "gpu_memory_utilization (0.9) of each GPU, as --headroom 10%% leaves free");
	} else {
		ADD("framework: hf (one forward pass, no cache)");
	}
	ADD("; overhead %.1f GB per GPU (CUDA context, kernels, workspaces)", MEMMODEL_OVERHEAD_BYTES / 1e9);
#undef ADD
}

void advise_result_free(struct advise_result *res)
{
	free(res->plans);
	catalog_free(&res->cat);
	free(res->fabrics);
	free(res->gpus);
	memset(res, 0, sizeof *res);
}

static json_t *mem_json(const memmodel_mem *m)
{
	return json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:b}", "weights", m->weights, "gradients",
			 m->grads, "optimizer", m->optimizer, "activations", m->activations, "kv_cache", m->kv,
			 "overhead", m->overhead, "total", m->total, "cpu_offload", m->cpu, "partial", m->partial);
}

static json_t *money(double v)
{
	return v < 0 ? json_null() : json_real(units_round(v, 10000));
}

char *advise_result_json(const struct advise_result *res, const json_t *here)
{
	const advise_req *r = &res->req;
	const memmodel_job *j = &r->job;
	size_t show = res->np < res->top ? res->np : res->top;
	json_t *a = json_array();
	for (size_t i = 0; a && i < show; i++) {
		const advise_plan *p = &res->plans[i];
		json_t *pj = json_pack(
			"{s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:s, s:b, s:s, s:o, s:f, s:f, s:o, s:o, s:o, s:o}",
			"cloud", p->row->cloud, "instance", p->row->instance, "region", p->row->region, "gpu", p->gpu->name,
			"gpus_per_node", (int)p->row->count, "nodes", (int)p->nodes, "gpus", (int)p->gpus, "tp", (int)p->tp,
			"dp", (int)p->dp, "zero", p->zero, "recompute", memmodel_recompute_name(p->recompute), "offload",
			p->offload, "compute_precision", memmodel_prec_name(p->compute_prec), "memory_per_gpu",
			mem_json(&p->mem), "usable_per_gpu", p->usable, "hours", p->hours, "price_per_hour",
			money(p->price_h), "spot_price_per_hour", money(p->spot_h), "cost", money(p->cost), "spot_cost",
			money(p->spot_cost));
		if (!pj)
			continue;
		json_object_set_new(pj, "host_memory_needed", json_real(p->host_need));
		/* hours = compute_hours + communication_hours (what the compute does not hide) */
		json_object_set_new(pj, "compute_hours", json_real(p->compute_h));
		json_object_set_new(pj, "communication_hours", json_real(p->comm_h));
		json_object_set_new(pj, "network_gbps", p->nodes > 1 ? json_real(p->net_gbps) : json_null());
		json_object_set_new(pj, "network_assumed", json_boolean(p->net_assumed));
		json_object_set_new(pj, "communication",
				    p->comm.steps > 0 ? json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "steps", p->comm.steps,
								   "micro_batches", p->comm.accum,
								   "compute_s", p->comm.compute_s, "data_parallel_s",
								   p->comm.dp_s, "between_nodes_s", p->comm.dp_inter_s,
								   "tensor_parallel_s", p->comm.tp_s, "exposed_s",
								   p->comm.exposed_s)
						      : json_null());
		json_object_set_new(pj, "spot_zone", p->row->zone[0] && p->row->spot >= 0 ? json_string(p->row->zone)
											     : json_null());
		json_object_set_new(pj, "fabric", p->fabric ? json_string(p->fabric->fabric) : json_null());
		json_object_set_new(pj, "host_memory",
				    p->row->mem_gib > 0 ? json_real(p->row->mem_gib * 1024.0 * 1024 * 1024) : json_null());
		json_array_append_new(a, pj);
	}
	json_t *root = json_pack("{s:s, s:s, s:s, s:f, s:f, s:s, s:s, s:f, s:o, s:o, s:I}", "schema", "gpuctl.advise/1",
				 "model", r->model.name, "task", memmodel_task_name(j->task), "params", r->model.params,
				 "tokens", r->tokens, "precision", memmodel_prec_name(j->prec), "prices_date",
				 res->cat.date[0] ? res->cat.date : "unknown", "mfu",
				 r->mfu > 0 ? r->mfu : advise_default_mfu(r), "single_gpu_memory", mem_json(&res->single),
				 "plans", a, "feasible", (json_int_t)res->np);
	if (!root)
		return NULL;
	json_object_set_new(root, "assumed_shape", res->shape.name[0] ? json_string(res->shape.name) : json_null());
	char why[600];
	advise_assumptions(res, why, sizeof why);
	json_object_set_new(root, "assumptions",
			    json_pack("{s:s, s:o, s:s}", "framework",
				      memmodel_framework_name(memmodel_framework_of(&r->model, j)), "loss",
				      memmodel_trains(j->task)
					      ? json_string(memmodel_loss_name(memmodel_loss_of(&r->model, j)))
					      : json_null(),
				      "text", why));
	json_t *cats = json_array();
	for (size_t i = 0; cats && i < res->nsrc; i++) {
		const struct advise_catsrc *cs = &res->src[i];
		json_array_append_new(cats, json_pack("{s:s, s:s, s:s, s:o}", "cloud", cs->cloud, "source",
						      cs->live ? "skypilot" : "snapshot", "path", cs->path, "age_hours",
						      cs->live ? json_real(units_round(cs->age_h, 10)) : json_null()));
	}
	json_object_set_new(root, "catalogs", cats ? cats : json_null());
	/* --gpu: your own GPUs, the one row; "fits": whether a plan on them holds the workload */
	json_object_set_new(root, "own_gpus", res->own ? json_pack("{s:s, s:i, s:f, s:b}", "gpu", res->own->name, "count",
								    (int)res->own_count, "memory_each", res->own->mem,
								    "fits", res->np > 0)
						       : json_null());
	/* which plan field the order follows, and what "tokens" counts */
	json_object_set_new(root, "ranked_by", json_string(r->spot ? "spot_cost" : "cost"));
	json_object_set_new(root, "work_unit",
			    json_string(r->model.kind == MEMMODEL_CNN ? "images"
					: j->task == MEMMODEL_INFER ? "generated tokens"
					: j->task == MEMMODEL_EMBED ? "embedded tokens" : "training tokens"));
	const advise_skipped *sk = &res->skipped;
	json_object_set_new(root, "left_out",
			    json_pack("{s:I, s:I, s:I, s:I}", "unknown_gpus", (json_int_t)sk->unknown_gpus,
				      "no_host_memory", (json_int_t)sk->no_host_mem, "host_memory_too_small",
				      (json_int_t)sk->host_too_small, "no_fabric", (json_int_t)sk->no_fabric));
	const advise_need *need = &res->need;
	if (!res->np && need->gpu)
		json_object_set_new(root, "smallest_feasible",
				    json_pack("{s:s, s:i, s:i, s:i, s:s, s:b, s:o, s:f}", "gpu", need->gpu->name, "gpus",
					      (int)need->gpus, "tp", (int)need->tp, "zero", need->zero, "recompute",
					      memmodel_recompute_name(need->recompute), "offload", need->offload,
					      "memory_per_gpu", mem_json(&need->mem), "host_memory_needed", need->host_need));
	if (here)
		json_object_set(root, "here", (json_t *)here); /* jansson counts references, not constness */
	char *s = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
	json_decref(root);
	return s;
}

int gc_advise_json(const char *const *options, char **json, char *err, size_t errlen)
{
	return gc_advise_here_json(NULL, options, json, err, errlen);
}

int gc_advise_here_json(gc_ctx *ctx, const char *const *options, char **json, char *err, size_t errlen)
{
	if (!options || !json) {
		errbuf_set(err, errlen, "gc_advise_json: %s", !options ? "no options (give at least --model or --params)"
									: "no place for the result");
		return GC_EINVAL;
	}
	*json = NULL;
	struct advise_input in;
	advise_input_init(&in);
	int rc = GC_OK;
	for (size_t i = 0; options[i] && rc == GC_OK; i++) {
		const char *o = options[i];
		if (strncmp(o, "--", 2) != 0 || !o[2]) {
			errbuf_set(err, errlen, "gc_advise_json: '%.64s' is not an option (--model NAME, --task TASK, ...)", o);
			return GC_EINVAL;
		}
		char name[40];
		const char *eq = strchr(o, '=');
		size_t k = eq ? (size_t)(eq - o - 2) : strlen(o + 2);
		snprintf(name, sizeof name, "%.*s", (int)(k < sizeof name - 1 ? k : sizeof name - 1), o + 2);
		const char *value = eq ? eq + 1 : NULL;
		/* "--name value", as a command line has it: the next string is the value when the option takes one */
		for (size_t t = 0; !eq && t < advise_noptions; t++)
			if (strcmp(advise_options[t].name, name) == 0 && advise_options[t].arg) {
				if (!options[i + 1]) {
					errbuf_set(err, errlen, "advise option --%s needs a value", name);
					return GC_EINVAL;
				}
				value = options[++i];
			}
		rc = advise_option(&in, name, value, err, errlen);
		if (rc == GC_ENOTFOUND)
			rc = GC_EINVAL;
	}
	if (rc != GC_OK)
		return rc;
	if (in.model && strcmp(in.model, "list") == 0) {
		errbuf_set(err, errlen, "gc_advise_json: --model list is a listing, not a request");
		return GC_EINVAL;
	}
	if (in.here && !ctx) {
		errbuf_set(err, errlen, "gc_advise_json: --here needs this machine's GPUs: call gc_advise_here_json with a "
			   "context");
		return GC_EINVAL;
	}
	struct advise_result res;
	json_t *here = NULL;
	bool fits;
	if ((rc = advise_run(&in, &res, err, errlen)) == GC_OK && in.here)
		rc = here_answer(&res, ctx, NULL, in.here_price, &here, &fits, err, errlen);
	if (rc == GC_OK && !(*json = advise_result_json(&res, here))) {
		errbuf_set(err, errlen, "out of memory");
		rc = GC_ENOMEM;
	}
	json_decref(here);
	advise_result_free(&res);
	return rc;
}
