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
static const char *const optim_names[] = {"adamw", "adam8bit", "sgd", "paged-adamw"};
static const char *const fw_names[] = {"auto", "hf", "megatron", "vllm"};
static const char *const loss_names[] = {"auto", "full", "chunked", "classifier"};
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
const char *memmodel_framework_name(int f) { return f >= 0 && f < (int)NAMES(fw_names) ? fw_names[f] : "?"; }
int memmodel_framework_parse(const char *s) { return lookup(fw_names, NAMES(fw_names), s); }
const char *memmodel_loss_name(int l) { return l >= 0 && l < (int)NAMES(loss_names) ? loss_names[l] : "?"; }
int memmodel_loss_parse(const char *s) { return lookup(loss_names, NAMES(loss_names), s); }

int memmodel_framework_of(const memmodel_model *m, const memmodel_job *j)
{
	(void)m;
	if (j->framework != MEMMODEL_FW_AUTO)
		return j->framework;
	return j->task == MEMMODEL_INFER ? MEMMODEL_FW_VLLM : MEMMODEL_FW_HF;
}

int memmodel_loss_of(const memmodel_model *m, const memmodel_job *j)
{
	if (j->loss != MEMMODEL_LOSS_AUTO)
		return j->loss;
	/* an encoder is fine-tuned with a small head (classification, tagging); a decoder predicts tokens */
	return m->kind == MEMMODEL_ENCODER ? MEMMODEL_LOSS_CLASSIFIER : MEMMODEL_LOSS_FULL;
}

bool memmodel_trains(int task)
{
	return task == MEMMODEL_TRAIN || task == MEMMODEL_LORA || task == MEMMODEL_QLORA;
}

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

/* an attention head's size: the model's own, else hidden / heads */
static double head_dim(const memmodel_model *m)
{
	return m->head_dim ? m->head_dim : (double)m->hidden / m->heads;
}

/* parameters of one expert's (or the dense) feed-forward block */
static double mlp_params(const memmodel_model *m)
{
	return (m->gated ? 3.0 : 2.0) * m->hidden * m->ffn;
}

/* the input embedding and the output layer (one matrix when tied) */
static double embed_params(const memmodel_model *m)
{
	return (double)m->vocab * m->hidden * (m->tied ? 1 : 2);
}

double memmodel_arch_params(const memmodel_model *m)
{
	if (!arch_known(m) || m->kind == MEMMODEL_CNN)
		return 0;
	/* q and o are hidden x heads·head_dim, k and v hidden x kv_heads·head_dim */
	double h = m->hidden, hd = head_dim(m), q = m->heads * hd, kv = kv_heads(m) * hd;
	double attn = 2 * h * q + 2 * h * kv;
	unsigned e = m->experts > 1 ? m->experts : 1;
	double mlp = mlp_params(m) * e + (e > 1 ? h * e : 0);
	double norms = m->kind == MEMMODEL_DECODER ? 2 * h : 4 * h;
	double embed = embed_params(m);
	return m->layers * (attn + mlp + norms) + embed + h;
}

/*
 * Korthikanti et al.'s per-layer count with values of f·2 bytes: their 34
 * is 32·s·b·h bytes of 16-bit values (2 bytes each) and 2·s·b·h of 1-byte
 * dropout masks, their 5·a·s²·b is 4 bytes of 16-bit scores and softmax
 * output and 1 of mask; fp32 training (f = 2) doubles the values, not the
 * masks: 66 and 9.
 */
static double layer_activations(double s, double b, double h, double a, unsigned t, int recompute, double f,
				bool amp)
{
	if (t < 1)
		t = 1;
	/* autocast runs layer_norm and softmax in fp32: their saved outputs (2 of 4 s·b·h, and the
	   2 of the scores) take 4 bytes, and so does the residual stream a checkpoint keeps */
	double x = amp ? 4 : 0, y = amp ? 2 : 0;
	switch (recompute) {
	case MEMMODEL_RC_FULL: return 2 * f * s * b * h * (amp ? 2 : 1) / t;
	case MEMMODEL_RC_SELECTIVE: return (32 * f + 2 + x) * s * b * h / t;
	default: return s * b * h * (32 * f + 2 + x + (4 * f + 1 + y) * a * s / h) / t;
	}
}

double memmodel_layer_activations(double s, double b, double h, double a, unsigned t, int recompute)
{
	return layer_activations(s, b, h, a, t, recompute, 1, false);
}

double memmodel_kv_per_token(const memmodel_model *m, int prec)
{
	if (!arch_known(m) || m->kind != MEMMODEL_DECODER)
		return 0;
	return 2.0 * m->layers * kv_heads(m) * head_dim(m) * memmodel_prec_bytes(prec);
}

double memmodel_lora_params(const memmodel_model *m, unsigned r, unsigned targets)
{
	if (!arch_known(m) || m->kind == MEMMODEL_CNN)
		return 0;
	double h = m->hidden, q = m->heads * head_dim(m), kv = kv_heads(m) * head_dim(m), f = m->ffn;
	double attn = 0, mlp = 0;
	/* a rank-r adapter on a d_in x d_out matrix has r·(d_in + d_out) parameters */
	if (targets & MEMMODEL_LT_Q) attn += r * (h + q);
	if (targets & MEMMODEL_LT_K) attn += r * (h + kv);
	if (targets & MEMMODEL_LT_V) attn += r * (h + kv);
	if (targets & MEMMODEL_LT_O) attn += r * (q + h);
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
	default: return (mixed ? 4 : 0) + 8;          /* Adam(W), paged or not: m and v in fp32 */
	}
}

/*
 * Bytes per token and vocabulary entry that the loss holds at its peak (the
 * backward of log_softmax), per framework; sources in docs/advise.md:
 *  - hf: cross_entropy in fp32 (transformers upcasts the logits, or autocast
 *    runs it in fp32): log_softmax saves its fp32 output (4), nll_loss's
 *    backward hands it a dense fp32 gradient (4), and log_softmax's backward
 *    makes another (4): 12.
 *  - megatron: the vocab-parallel cross entropy makes one fp32 copy and reuses
 *    it in place for the softmax and then the gradient (4), while the 16-bit
 *    logits it was made from are alive (2 in mixed precision).
 *  - chunked (Liger's fused linear cross entropy, Apple's cut cross entropy):
 *    the logits never exist whole; classifier: no vocabulary-sized output.
 */
static double loss_bytes(const memmodel_model *m, const memmodel_job *j)
{
	int loss = memmodel_loss_of(m, j);
	if (loss == MEMMODEL_LOSS_CHUNKED || loss == MEMMODEL_LOSS_CLASSIFIER || !m->vocab)
		return 0;
	if (memmodel_framework_of(m, j) == MEMMODEL_FW_MEGATRON)
		return j->prec == MEMMODEL_FP32 ? 4 : 6;
	return 12;
}

/*
 * Hugging Face's Trainer (or any plain PyTorch loop) with --fp16/--bf16 on a
 * model in fp32, without DeepSpeed or FSDP: torch.autocast mixed precision
 * (full training only: LoRA bases are loaded in 16 bits).
 */
static bool amp(const memmodel_model *m, const memmodel_job *j)
{
	return j->task == MEMMODEL_TRAIN && j->prec != MEMMODEL_FP32 && j->zero == 0 && !j->pure &&
	       memmodel_framework_of(m, j) == MEMMODEL_FW_HF;
}

/* transformer activations of a training step, per GPU */
static double train_activations(const memmodel_model *m, const memmodel_job *j, unsigned seq)
{
	if (m->kind != MEMMODEL_CNN && !arch_known(m))
		return 0;
	if (m->kind == MEMMODEL_CNN)
		return m->act_per_sample * j->batch * (j->recompute == MEMMODEL_RC_FULL ? 0.5 : 1);
	double s = seq, b = j->batch, h = m->hidden;
	/* values in the compute precision: fp32 training keeps 4-byte activations */
	double f = j->prec == MEMMODEL_FP32 ? 2 : 1;
	bool a = amp(m, j);
	double act = m->layers * layer_activations(s, b, h, m->heads, j->tp, j->recompute, f, a);
	/* full recomputation: the backward recomputes one layer at a time and holds what it saves */
	if (j->recompute == MEMMODEL_RC_FULL)
		act += layer_activations(s, b, h, m->heads, j->tp, MEMMODEL_RC_SELECTIVE, f, a);
	/* the final norm and the output layer's input (Korthikanti et al.: 4·s·b·h/t), and the loss */
	act += 4 * s * b * h / j->tp + loss_bytes(m, j) * s * b * m->vocab / j->tp;
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
	int fw = memmodel_framework_of(m, j);
	if (fw == MEMMODEL_FW_VLLM && j->task != MEMMODEL_INFER) {
		errbuf_set(err, errlen, "vLLM serves models: --framework vllm is for --task infer (training: hf or "
					"megatron)");
		return GC_EINVAL;
	}
	if (fw == MEMMODEL_FW_MEGATRON && j->task != MEMMODEL_TRAIN && j->task != MEMMODEL_LORA &&
	    j->task != MEMMODEL_QLORA) {
		errbuf_set(err, errlen, "--framework megatron is modelled for training only (inference: hf or vllm)");
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
			/* only the linear layers are quantized: the embedding is a lookup table, not a Linear,
			   and GPTQ, AWQ, bitsandbytes (llm_int8_skip_modules) and vLLM's fp8 leave lm_head
			   in 16 bits. int4 adds an fp16 scale and zero point per 128 weights (GPTQ/AWQ layout). */
			double embed = embed_params(m), linear = psi - embed;
			o->weights = (linear * (memmodel_prec_bytes(j->prec) + (j->prec == MEMMODEL_INT4 ? 4.0 / 128 : 0)) +
				      embed * 2) / t;
		} else {
			o->weights = psi * memmodel_prec_bytes(j->prec) / t;
		}
		if (j->task == MEMMODEL_INFER && m->kind == MEMMODEL_DECODER && arch) {
			/* KV heads are split across tensor-parallel GPUs, replicated when fewer than t */
			double share = (double)kv_heads(m) / t < 1 ? 1.0 / kv_heads(m) : 1.0 / t;
			double per = memmodel_kv_per_token(m, j->kv_prec) * j->batch * share;
			unsigned out = j->output_len < seq ? j->output_len : seq, prompt = seq - out;
			if (memmodel_framework_of(m, j) == MEMMODEL_FW_HF) {
				/* generate's tuple cache: each decode step concatenates a new cache for every
				   layer while the loop still holds the old one, so the last step holds
				   seq - 1 and seq tokens; the prefill computes the logits of every prompt
				   position (16-bit, before transformers 4.45's num_logits_to_keep) and
				   runs the whole prompt at once */
				o->kv = per * (seq + (out > 1 ? seq - 1 : 0));
				double logit_bytes = j->prec == MEMMODEL_FP32 ? 4 : 2;
				o->activations = forward_activations(m, (double)prompt * j->batch, j->tp) +
						 logit_bytes * prompt * j->batch * m->vocab / t;
			} else {
				/* vLLM: paged cache, one copy; prefill in chunks of at most 8192 tokens
				   (chunked prefill); fp32 logits of each sequence's last position */
				o->kv = per * seq;
				double tokens = (double)seq * j->batch;
				o->activations = forward_activations(m, tokens < 8192 ? tokens : 8192, j->tp) +
						 4.0 * j->batch * m->vocab / t;
			}
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
		if (mixed && j->pure) {
			/* no master copy, and the optimizer's states in the weights' 16-bit type (PyTorch's
			   AdamW keeps m and v as the parameter's dtype): 4 bytes for AdamW, 2 for 8-bit Adam
			   and SGD's momentum */
			k = j->optim == MEMMODEL_ADAM8BIT ? 2 : j->optim == MEMMODEL_SGD ? 2 : 4;
		}
		if (amp(m, j)) {
			/* torch.autocast: fp32 weights and gradients, the optimizer's states only, and
			   the 16-bit copy of every weight cached for the step */
			w = 4 + 2;
			g = 4;
			k = optim_bytes(j->optim, false);
		}
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
		double embed = embed_params(m);
		if (j->task == MEMMODEL_QLORA) {
			/* NF4 linear layers with double-quantized constants; embeddings and the output layer
			   stay in 16 bits, as bitsandbytes leaves them */
			double linear = psi - embed;
			/* ZeRO-3 and FSDP shard the frozen 4-bit base too (bitsandbytes' quant_storage,
			   FSDP-QLoRA; DeepSpeed ZeRO-3 QLoRA) */
			o->weights = (linear * (4.0 + 8.0 / 64 + 32.0 / (64 * 256)) / 8 + embed * 2) / t /
				     (j->zero >= 3 ? dp : 1);
		} else {
			if (j->prec == MEMMODEL_INT4) {
				errbuf_set(err, errlen, "LoRA on an int4 base is QLoRA: use --task qlora");
				return GC_EINVAL;
			}
			o->weights = psi * memmodel_prec_bytes(j->prec) / t / (j->zero >= 3 ? dp : 1);
		}
		double pa = memmodel_lora_params(m, j->lora_rank, j->lora_targets);
		o->trainable = pa;
		/* PEFT makes LoRA adapters in fp32 (weights, gradients, optimizer states); the QLoRA
		   recipe (qlora.py with --bf16) casts them to the 16-bit compute type, and its
		   32-bit optimizer keeps m and v in fp32 with no master copy */
		double ab = j->task == MEMMODEL_QLORA && j->prec != MEMMODEL_FP32 ? 2 : 4;
		o->weights += ab * pa / t;
		o->grads = ab * pa / t;
		o->optimizer = optim_bytes(j->optim, false) * pa / t / (j->zero >= 1 ? dp : 1);
		o->activations = train_activations(m, j, seq);
		break;
	}
	default:
		errbuf_set(err, errlen, "unknown task");
		return GC_EINVAL;
	}
	if (j->offload_params && j->zero >= 3 && m->layers &&
	    memmodel_trains(j->task)) {
		/* the shard in CPU memory; on the GPU the layer being computed and the one prefetched,
		   gathered whole (their TP share), or an embedding matrix (16-bit: QLoRA keeps them
		   unquantized) and a layer */
		double shard = o->weights, whole = shard * dp;
		double bytes = j->prec == MEMMODEL_FP32 && j->task == MEMMODEL_TRAIN ? 4 : 2;
		double one_embed = (double)m->vocab * m->hidden * bytes / t;
		double embeds = one_embed * (m->tied ? 1 : 2);
		double layer = (whole > embeds ? whole - embeds : whole) / m->layers;
		o->cpu += shard;
		o->weights = 2 * layer > one_embed + layer ? 2 * layer : one_embed + layer;
	}
	if (j->optim == MEMMODEL_PAGED_ADAMW && (j->task == MEMMODEL_TRAIN || j->task == MEMMODEL_LORA ||
						  j->task == MEMMODEL_QLORA)) {
		/* paged to the host when the GPU runs short: they do not raise the peak */
		o->cpu += o->optimizer;
		o->optimizer = 0;
	}
	o->total = o->weights + o->grads + o->optimizer + o->activations + o->kv + o->overhead;
	return 0;
}
