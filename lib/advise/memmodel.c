/*
 * memmodel.c — GPU memory per workload (see memmodel.h for what and the
 * sources; docs/advise.md for the derivations and their limits).
 */
#include "advise/memmodel.h"
#include "util/errbuf.h"
#include "gpuctl/gpuctl.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const prec_names[] = {"fp32", "bf16", "fp16", "fp8", "int8", "int4"};
static const char *const task_names[] = {"infer", "train-full", "lora", "qlora", "embed"};
static const char *const optim_names[] = {"adamw", "adam8bit", "sgd"};
static const char *const rc_names[] = {"none", "selective", "full"};

#define NAMES(a) (sizeof(a) / sizeof((a)[0]))

static int lookup(const char *const *names, size_t n, const char *s)
{
	if (!s)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (strcasecmp(names[i], s) == 0)
			return (int)i;
	return -1;
}

double memmodel_prec_bytes(int prec)
{
	static const double b[] = {4, 2, 2, 1, 1, 0.5};
	return prec >= 0 && prec < (int)NAMES(b) ? b[prec] : 0;
}

const char *memmodel_prec_name(int p) { return p >= 0 && p < (int)NAMES(prec_names) ? prec_names[p] : "?"; }
int memmodel_prec_parse(const char *s) { return lookup(prec_names, NAMES(prec_names), s); }
const char *memmodel_task_name(int t) { return t >= 0 && t < (int)NAMES(task_names) ? task_names[t] : "?"; }
const char *memmodel_optim_name(int o) { return o >= 0 && o < (int)NAMES(optim_names) ? optim_names[o] : "?"; }
int memmodel_optim_parse(const char *s) { return lookup(optim_names, NAMES(optim_names), s); }
const char *memmodel_recompute_name(int r) { return r >= 0 && r < (int)NAMES(rc_names) ? rc_names[r] : "?"; }
int memmodel_recompute_parse(const char *s) { return lookup(rc_names, NAMES(rc_names), s); }

int memmodel_task_parse(const char *s)
{
	if (s && strcasecmp(s, "train") == 0)
		return MEMMODEL_TRAIN;
	return lookup(task_names, NAMES(task_names), s);
}

int memmodel_targets_parse(const char *s)
{
	static const struct {
		const char *name;
		int bits;
	} t[] = {
		{"all", MEMMODEL_LT_ALL}, {"attn", MEMMODEL_LT_Q | MEMMODEL_LT_K | MEMMODEL_LT_V | MEMMODEL_LT_O},
		{"qkvo", MEMMODEL_LT_Q | MEMMODEL_LT_K | MEMMODEL_LT_V | MEMMODEL_LT_O}, {"mlp", MEMMODEL_LT_GATE | MEMMODEL_LT_UP | MEMMODEL_LT_DOWN},
		{"q", MEMMODEL_LT_Q}, {"k", MEMMODEL_LT_K}, {"v", MEMMODEL_LT_V}, {"o", MEMMODEL_LT_O},
		{"gate", MEMMODEL_LT_GATE}, {"up", MEMMODEL_LT_UP}, {"down", MEMMODEL_LT_DOWN},
	};
	if (!s || !*s)
		return -1;
	int bits = 0;
	while (*s) {
		size_t n = strcspn(s, ",");
		int found = -1;
		for (size_t i = 0; i < NAMES(t); i++)
			if (strlen(t[i].name) == n && strncasecmp(t[i].name, s, n) == 0)
				found = t[i].bits;
		if (found < 0)
			return -1;
		bits |= found;
		s += n;
		if (*s == ',' && *++s == '\0')
			return -1;
	}
	return bits;
}

int memmodel_parse_count(const char *s, double *out, char *err, size_t errlen)
{
	if (!s || !*s) {
		errbuf_set(err, errlen, "empty count: use a number such as 7B, 350M or 125000000");
		return GC_EINVAL;
	}
	if (strlen(s) > 32) {
		errbuf_set(err, errlen, "'%.32s...' is too long for a count", s);
		return GC_EINVAL;
	}
	const char *p = s;
	double v = 0, scale = 1;
	bool digits = false, dot = false;
	for (; *p; p++) {
		if (isdigit((unsigned char)*p)) {
			digits = true;
			if (dot) {
				scale /= 10;
				v += (*p - '0') * scale;
			} else {
				v = v * 10 + (*p - '0');
			}
		} else if (*p == '.' && !dot) {
			dot = true;
		} else {
			break;
		}
	}
	if (!digits) {
		errbuf_set(err, errlen, "'%s' is not a count: use a positive number such as 7B, 350M or 125000000",
			   s);
		return GC_EINVAL;
	}
	double mult = 1;
	if (*p) {
		switch (toupper((unsigned char)*p)) {
		case 'K': mult = 1e3; break;
		case 'M': mult = 1e6; break;
		case 'B': /* fall through: billions, as model cards write them */
		case 'G': mult = 1e9; break;
		case 'T': mult = 1e12; break;
		default:
			errbuf_set(err, errlen, "'%s': unknown suffix '%c' (use K, M, B or T: 7B, 350M, 1.5T)", s, *p);
			return GC_EINVAL;
		}
		if (p[1]) {
			errbuf_set(err, errlen, "'%s': unexpected text after the suffix (use 7B, 350M, 1.5T)", s);
			return GC_EINVAL;
		}
	}
	v *= mult;
	if (v < 1 || !isfinite(v) || v > 1e15) {
		errbuf_set(err, errlen, "'%s' is out of range (1 to 1000T)", s);
		return GC_EINVAL;
	}
	*out = v;
	return 0;
}

static bool arch_known(const memmodel_model *m)
{
	return m->layers && m->hidden && m->heads && m->ffn;
}

static unsigned kv_heads(const memmodel_model *m)
{
	return m->kv_heads ? m->kv_heads : m->heads;
}

/* parameters of one expert's (or the dense) feed-forward block */
static double mlp_params(const memmodel_model *m)
{
	return (m->gated ? 3.0 : 2.0) * m->hidden * m->ffn;
}

double memmodel_arch_params(const memmodel_model *m)
{
	if (!arch_known(m) || m->kind == MEMMODEL_CNN)
		return 0;
	double h = m->hidden, hd = h / m->heads, kv = kv_heads(m) * hd;
	double attn = h * h * 2 + 2 * h * kv;
	unsigned e = m->experts > 1 ? m->experts : 1;
	double mlp = mlp_params(m) * e + (e > 1 ? h * e : 0);
	double norms = m->kind == MEMMODEL_DECODER ? 2 * h : 4 * h;
	double embed = (double)m->vocab * h * (m->tied ? 1 : 2);
	return m->layers * (attn + mlp + norms) + embed + h;
}

double memmodel_layer_activations(double s, double b, double h, double a, unsigned t, int recompute)
{
	if (t < 1)
		t = 1;
	switch (recompute) {
	case MEMMODEL_RC_FULL: return 2 * s * b * h / t;
	case MEMMODEL_RC_SELECTIVE: return 34 * s * b * h / t;
	default: return s * b * h * (34 + 5 * a * s / h) / t;
	}
}

double memmodel_kv_per_token(const memmodel_model *m, int prec)
{
	if (!arch_known(m) || m->kind != MEMMODEL_DECODER)
		return 0;
	double hd = (double)m->hidden / m->heads;
	return 2.0 * m->layers * kv_heads(m) * hd * memmodel_prec_bytes(prec);
}

double memmodel_lora_params(const memmodel_model *m, unsigned r, unsigned targets)
{
	if (!arch_known(m) || m->kind == MEMMODEL_CNN)
		return 0;
	double h = m->hidden, kv = kv_heads(m) * (h / m->heads), f = m->ffn;
	double attn = 0, mlp = 0;
	/* a rank-r adapter on a d_in x d_out matrix has r·(d_in + d_out) parameters */
	if (targets & MEMMODEL_LT_Q) attn += r * (h + h);
	if (targets & MEMMODEL_LT_K) attn += r * (h + kv);
	if (targets & MEMMODEL_LT_V) attn += r * (h + kv);
	if (targets & MEMMODEL_LT_O) attn += r * (h + h);
	/* plain MLPs have only "up" and "down" */
	if ((targets & MEMMODEL_LT_GATE) && m->gated)
		mlp += r * (h + f);
	if (targets & MEMMODEL_LT_UP)
		mlp += r * (h + f);
	if (targets & MEMMODEL_LT_DOWN)
		mlp += r * (f + h);
	/* mixture of experts: adapters on every expert's MLP matrices */
	double per = attn + mlp * (m->experts > 1 ? m->experts : 1);
	return per * m->layers;
}

/* optimizer bytes per trainable parameter: mixed precision keeps an fp32 master copy */
static double optim_bytes(int optim, bool mixed)
{
	switch (optim) {
	case MEMMODEL_ADAM8BIT: return (mixed ? 4 : 0) + 2; /* 8-bit first and second moments */
	case MEMMODEL_SGD: return (mixed ? 4 : 0) + 4;      /* momentum */
	default: return (mixed ? 4 : 0) + 8;          /* Adam(W): m and v in fp32 */
	}
}

/* transformer activations of a training step, per GPU */
static double train_activations(const memmodel_model *m, const memmodel_job *j, unsigned seq)
{
	if (m->kind != MEMMODEL_CNN && !arch_known(m))
		return 0;
	if (m->kind == MEMMODEL_CNN)
		return m->act_per_sample * j->batch * (j->recompute == MEMMODEL_RC_FULL ? 0.5 : 1);
	double s = seq, b = j->batch, h = m->hidden;
	double act = m->layers * memmodel_layer_activations(s, b, h, m->heads, j->tp, j->recompute);
	/* output layer norm, projection and cross entropy (fp32 logits): 4·s·b·h/t·(1 + v/h) */
	if (m->vocab)
		act += 4 * s * b * h / j->tp * (1 + (double)m->vocab / h);
	return act;
}

/* transient activations of a forward pass (inference keeps no activations between layers) */
static double forward_activations(const memmodel_model *m, double tokens, unsigned tp)
{
	double per_token = (2.0 * m->ffn * (m->experts_active > 1 ? m->experts_active : 1) + 4.0 * m->hidden) * 2;
	return tokens * per_token / tp;
}

int memmodel_estimate(const memmodel_model *m, const memmodel_job *j, memmodel_mem *o, char *err, size_t errlen)
{
	memset(o, 0, sizeof *o);
	if (m->params <= 0) {
		errbuf_set(err, errlen, "the model's parameter count is unknown");
		return GC_EINVAL;
	}
	if (j->dp < 1 || j->tp < 1 || j->batch < 1) {
		errbuf_set(err, errlen, "GPU counts and the batch must be at least 1");
		return GC_EINVAL;
	}
	unsigned seq = j->seq ? j->seq : m->seq;
	bool arch = arch_known(m);
	double t = j->tp, dp = j->dp;
	double psi = m->params;
	o->overhead = MEMMODEL_OVERHEAD_BYTES;

	if (m->kind == MEMMODEL_CNN && j->task != MEMMODEL_TRAIN) {
		errbuf_set(err, errlen, "%s: only training (--task train-full) is modelled for convolutional "
					"networks", m->name);
		return GC_EINVAL;
	}
	if (m->kind != MEMMODEL_CNN && !arch && (j->task == MEMMODEL_LORA || j->task == MEMMODEL_QLORA)) {
		errbuf_set(err, errlen, "%s needs the model's architecture (--layers, --hidden, --heads, --ffn) or "
					"a preset (--model)", memmodel_task_name(j->task));
		return GC_EINVAL;
	}
	/* with only a parameter count, model states are exact; activations and KV are not counted */
	o->partial = m->kind != MEMMODEL_CNN && !arch;
	if (m->kind != MEMMODEL_CNN && arch && !seq) {
		errbuf_set(err, errlen, "the sequence length is unknown: give --seq");
		return GC_EINVAL;
	}

	switch (j->task) {
	case MEMMODEL_INFER:
	case MEMMODEL_EMBED: {
		if (j->prec == MEMMODEL_INT4 || j->prec == MEMMODEL_INT8 || j->prec == MEMMODEL_FP8) {
			/* per-group scales: an fp16 scale and zero point per 128 weights (GPTQ/AWQ layout) */
			o->weights = psi * (memmodel_prec_bytes(j->prec) + (j->prec == MEMMODEL_INT4 ? 4.0 / 128 : 0)) / t;
		} else {
			o->weights = psi * memmodel_prec_bytes(j->prec) / t;
		}
		if (j->task == MEMMODEL_INFER && m->kind == MEMMODEL_DECODER && arch) {
			/* KV heads are split across tensor-parallel GPUs, replicated when fewer than t */
			double share = (double)kv_heads(m) / t < 1 ? 1.0 / kv_heads(m) : 1.0 / t;
			o->kv = memmodel_kv_per_token(m, j->kv_prec) * seq * j->batch * share;
			/* prefill in chunks of at most 8192 tokens (vLLM-style chunked prefill) */
			double tokens = (double)seq * j->batch;
			o->activations = forward_activations(m, tokens < 8192 ? tokens : 8192, j->tp) +
					 4.0 * j->batch * m->vocab / t;
		} else if (arch) {
			o->activations = forward_activations(m, (double)seq * j->batch, j->tp);
		}
		break;
	}
	case MEMMODEL_TRAIN: {
		if (j->prec == MEMMODEL_INT8 || j->prec == MEMMODEL_INT4) {
			errbuf_set(err, errlen, "full training in %s is not possible: train in bf16 or fp16, or quantize "
						"the base model with --task qlora", memmodel_prec_name(j->prec));
			return GC_EINVAL;
		}
		bool mixed = j->prec != MEMMODEL_FP32;
		/* fp8 training (Transformer Engine) keeps bf16 weights: modelled as bf16 */
		double w = mixed ? 2 : 4, g = mixed ? 2 : 4, k = optim_bytes(j->optim, mixed);
		double per = psi / t;
		o->trainable = psi;
		o->weights = w * per / (j->zero >= 3 ? dp : 1);
		o->grads = g * per / (j->zero >= 2 ? dp : 1);
		o->optimizer = k * per / (j->zero >= 1 ? dp : 1);
		if (j->offload) {
			o->cpu += o->optimizer;
			o->optimizer = 0;
			if (j->zero >= 2) {
				o->cpu += o->grads;
				o->grads = 0;
			}
		}
		o->activations = train_activations(m, j, seq);
		break;
	}
	case MEMMODEL_LORA:
	case MEMMODEL_QLORA: {
		if (m->kind == MEMMODEL_CNN) {
			errbuf_set(err, errlen, "LoRA is modelled for transformers only");
			return GC_EINVAL;
		}
		if (!j->lora_rank || !j->lora_targets) {
			errbuf_set(err, errlen, "LoRA needs a rank and target matrices");
			return GC_EINVAL;
		}
		double embed = (double)m->vocab * m->hidden * (m->tied ? 1 : 2);
		if (j->task == MEMMODEL_QLORA) {
			/* NF4 linear layers with double-quantized constants; embeddings and the output layer
			   stay in 16 bits, as bitsandbytes leaves them */
			double linear = psi - embed;
			o->weights = (linear * (4.0 + 8.0 / 64 + 32.0 / (64 * 256)) / 8 + embed * 2) / t;
		} else {
			if (j->prec == MEMMODEL_INT4) {
				errbuf_set(err, errlen, "LoRA on an int4 base is QLoRA: use --task qlora");
				return GC_EINVAL;
			}
			o->weights = psi * memmodel_prec_bytes(j->prec) / t / (j->zero >= 3 ? dp : 1);
		}
		double pa = memmodel_lora_params(m, j->lora_rank, j->lora_targets);
		o->trainable = pa;
		/* adapters train in fp32: weights, gradients and optimizer states */
		o->weights += 4 * pa / t;
		o->grads = 4 * pa / t;
		o->optimizer = optim_bytes(j->optim, false) * pa / t / (j->zero >= 1 ? dp : 1);
		o->activations = train_activations(m, j, seq);
		break;
	}
	default:
		errbuf_set(err, errlen, "unknown task");
		return GC_EINVAL;
	}
	o->total = o->weights + o->grads + o->optimizer + o->activations + o->kv + o->overhead;
	return 0;
}
