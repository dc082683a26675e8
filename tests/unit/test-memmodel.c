/*
 * test-memmodel.c — lib/advise/memmodel.c and lib/advise/specs.c against published figures:
 * the ZeRO paper's per-device model states (Ψ = 7.5 B, N_d = 64 → 120 /
 * 31.4 / 16.6 / 1.9 GB), EleutherAI's 16–18 bytes per parameter for
 * mixed-precision Adam, Llama-2-7B's fp16 KV cache of 0.5 MiB per token,
 * Korthikanti et al.'s per-layer activation bytes, QLoRA's 4.127 bits per
 * parameter, every preset's architecture against its stated size, and the
 * shape assumed for a bare parameter count.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "gpuctl/gpuctl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advise/memmodel.h"
#include "advise/specs.h"

/*
 * The papers' recipes: for training Megatron/DeepSpeed mixed precision (16-bit
 * weights and gradients, the fp32 master copy in the optimizer: ZeRO's 2 + 2 + 12),
 * for inference vLLM's single copy of the KV cache.
 */
static memmodel_job job(int task)
{
	memmodel_job j = {.task = task, .prec = MEMMODEL_BF16, .kv_prec = MEMMODEL_BF16, .optim = MEMMODEL_ADAMW, .dp = 1, .tp = 1,
		    .seq = 2048, .batch = 1, .lora_rank = 16, .lora_targets = MEMMODEL_LT_ALL,
		    .framework = task == MEMMODEL_INFER ? MEMMODEL_FW_VLLM : MEMMODEL_FW_MEGATRON};
	return j;
}

/* model states (weights + gradients + optimizer) per device, in GB (10^9) */
static double states_gb(const memmodel_model *m, int zero, unsigned dp)
{
	memmodel_job j = job(MEMMODEL_TRAIN);
	j.zero = zero;
	j.dp = dp;
	memmodel_mem o;
	char err[256];
	assert_int_equal(memmodel_estimate(m, &j, &o, err, sizeof err), 0);
	return (o.weights + o.grads + o.optimizer) / 1e9;
}

static void test_zero_paper(void **state)
{
	(void)state;
	/* ZeRO (Rajbhandari et al. 2020), Figure 1: Ψ = 7.5 B, N_d = 64, K = 12 */
	memmodel_model m = {.name = "zero", .kind = MEMMODEL_DECODER, .params = 7.5e9, .active_params = 7.5e9};
	char buf[32];
	snprintf(buf, sizeof buf, "%.1f", states_gb(&m, 0, 64));
	assert_string_equal(buf, "120.0");
	snprintf(buf, sizeof buf, "%.1f", states_gb(&m, 1, 64));
	assert_string_equal(buf, "31.4");
	snprintf(buf, sizeof buf, "%.1f", states_gb(&m, 2, 64));
	assert_string_equal(buf, "16.6");
	snprintf(buf, sizeof buf, "%.1f", states_gb(&m, 3, 64));
	assert_string_equal(buf, "1.9");
	/* with only a parameter count the activations are not counted, and say so */
	memmodel_job j = job(MEMMODEL_TRAIN);
	memmodel_mem o;
	assert_int_equal(memmodel_estimate(&m, &j, &o, NULL, 0), 0);
	assert_true(o.partial);
	assert_true(o.activations == 0);
}

static void test_eleuther_bytes_per_param(void **state)
{
	(void)state;
	/* EleutherAI, Transformer Math 101: mixed-precision AdamW needs 16-18 bytes per parameter
	   (2 weights + 2 or 4 gradients + 12 optimizer: fp32 copy, momentum, variance) */
	memmodel_model m = {.name = "x", .kind = MEMMODEL_DECODER, .params = 1e9, .active_params = 1e9};
	double b = states_gb(&m, 0, 1);
	assert_true(b >= 16 && b <= 18);
	assert_true(fabs(b - 16) < 1e-9);
	/* plain fp32 Adam: 4 + 4 + 8 */
	memmodel_job j = job(MEMMODEL_TRAIN);
	j.prec = MEMMODEL_FP32;
	memmodel_mem o;
	assert_int_equal(memmodel_estimate(&m, &j, &o, NULL, 0), 0);
	assert_true(fabs((o.weights + o.grads + o.optimizer) / 1e9 - 16) < 1e-9);
	/* 8-bit Adam: 2 + 2 + (4 + 2); SGD with momentum: 2 + 2 + (4 + 4) */
	j.prec = MEMMODEL_BF16;
	j.optim = MEMMODEL_ADAM8BIT;
	assert_int_equal(memmodel_estimate(&m, &j, &o, NULL, 0), 0);
	assert_true(fabs(o.optimizer / 1e9 - 6) < 1e-9);
	j.optim = MEMMODEL_SGD;
	assert_int_equal(memmodel_estimate(&m, &j, &o, NULL, 0), 0);
	assert_true(fabs(o.optimizer / 1e9 - 8) < 1e-9);
	/* CPU offload moves the optimizer (and, from stage 2, the gradients) to the host */
	j.optim = MEMMODEL_ADAMW;
	j.offload = true;
	j.zero = 2;
	j.dp = 2;
	assert_int_equal(memmodel_estimate(&m, &j, &o, NULL, 0), 0);
	assert_true(o.optimizer == 0 && o.grads == 0);
	assert_true(fabs(o.cpu / 1e9 - 7) < 1e-9); /* (12 + 2) / 2 */
	/* int8 full training is refused with the way out */
	char err[256];
	j = job(MEMMODEL_TRAIN);
	j.prec = MEMMODEL_INT8;
	assert_int_equal(memmodel_estimate(&m, &j, &o, err, sizeof err), GC_EINVAL);
	assert_non_null(strstr(err, "qlora"));
}

static memmodel_model llama2_7b(void)
{
	memmodel_model m = {.name = "Llama-2-7B", .kind = MEMMODEL_DECODER, .gated = true, .params = 6.74e9,
		      .active_params = 6.74e9, .layers = 32, .hidden = 4096, .heads = 32, .kv_heads = 32,
		      .vocab = 32000, .ffn = 11008, .seq = 4096};
	return m;
}

static void test_kv_cache(void **state)
{
	(void)state;
	memmodel_model m = llama2_7b();
	/* 2 (K and V) x 32 layers x 32 heads x 128 x 2 bytes = 0.5 MiB per token */
	assert_true(memmodel_kv_per_token(&m, MEMMODEL_FP16) == 512.0 * 1024);
	assert_true(memmodel_kv_per_token(&m, MEMMODEL_FP8) == 256.0 * 1024);
	memmodel_job j = job(MEMMODEL_INFER);
	j.seq = 4096;
	j.batch = 8;
	j.prec = MEMMODEL_FP16;
	j.kv_prec = MEMMODEL_FP16;
	memmodel_mem o;
	assert_int_equal(memmodel_estimate(&m, &j, &o, NULL, 0), 0);
	assert_true(o.kv == 512.0 * 1024 * 4096 * 8);
	assert_true(o.weights == 6.74e9 * 2);
	/* tensor parallelism splits the weights and the KV heads */
	j.tp = 4;
	memmodel_mem o4;
	assert_int_equal(memmodel_estimate(&m, &j, &o4, NULL, 0), 0);
	assert_true(o4.kv == o.kv / 4 && o4.weights == o.weights / 4);
	/* GQA with fewer KV heads than GPUs: each GPU keeps one head */
	memmodel_model g = m;
	g.kv_heads = 2;
	j.tp = 8;
	assert_int_equal(memmodel_estimate(&g, &j, &o4, NULL, 0), 0);
	assert_true(fabs(o4.kv - memmodel_kv_per_token(&g, MEMMODEL_FP16) * 4096 * 8 / 2) < 1);
	/* int4 weights carry a 16-bit scale and zero point per 128; the embedding and the output
	   layer stay in 16 bits (GPTQ, AWQ, bitsandbytes quantize the decoder's linear layers) */
	j = job(MEMMODEL_INFER);
	j.prec = MEMMODEL_INT4;
	assert_int_equal(memmodel_estimate(&m, &j, &o, NULL, 0), 0);
	double embed = 2 * 32000.0 * 4096;
	assert_true(fabs(o.weights - ((6.74e9 - embed) * (0.5 + 4.0 / 128) + embed * 2)) < 1);
}

static void test_activations(void **state)
{
	(void)state;
	/* Korthikanti et al. 2022, eq. 1: s·b·h·(34 + 5·a·s/h); GPT-3 175B: s 2048, h 12288, a 96
	   (5·a·s/h = 80) */
	double s = 2048, h = 12288, a = 96;
	assert_true(memmodel_layer_activations(s, 1, h, a, 1, MEMMODEL_RC_NONE) == 2048.0 * 12288 * (34 + 80));
	assert_true(memmodel_layer_activations(s, 1, h, a, 1, MEMMODEL_RC_NONE) == 2868903936.0);
	/* tensor + sequence parallel t = 8 divides it; selective keeps 34·s·b·h/t; full 2·s·b·h/t */
	assert_true(memmodel_layer_activations(s, 1, h, a, 8, MEMMODEL_RC_NONE) == 2868903936.0 / 8);
	assert_true(memmodel_layer_activations(s, 1, h, a, 8, MEMMODEL_RC_SELECTIVE) == 34 * s * h / 8);
	assert_true(memmodel_layer_activations(s, 1, h, a, 8, MEMMODEL_RC_FULL) == 2 * s * h / 8);
	/* a whole model: layers x per-layer + the output layer's 4·s·b·h + Megatron's loss: its fp32
	   softmax (4 bytes per token and vocabulary entry) and the bf16 logits it came from (2) */
	memmodel_model m = llama2_7b();
	memmodel_job j = job(MEMMODEL_TRAIN);
	j.seq = 4096;
	memmodel_mem o;
	assert_int_equal(memmodel_estimate(&m, &j, &o, NULL, 0), 0);
	double layers = 32 * 4096.0 * 4096 * (34 + 5.0 * 32 * 4096 / 4096);
	double want = layers + 4 * 4096.0 * 4096 + 6 * 4096.0 * 32000;
	assert_true(fabs(o.activations - want) < 1);
	assert_true(o.overhead == MEMMODEL_OVERHEAD_BYTES);
	assert_true(fabs(o.total - (o.weights + o.grads + o.optimizer + o.activations + o.overhead)) < 1);
}

/* pure 16-bit training: 2 + 2 + 4 bytes a parameter for AdamW (states in bf16), no master copy */
static void test_pure_bf16(void **state)
{
	(void)state;
	memmodel_model m = llama2_7b();
	memmodel_job j = job(MEMMODEL_TRAIN);
	j.framework = MEMMODEL_FW_HF;
	j.pure = true;
	memmodel_mem o;
	assert_int_equal(memmodel_estimate(&m, &j, &o, NULL, 0), 0);
	assert_true(fabs(o.weights - 2 * 6.74e9) < 1 && fabs(o.grads - 2 * 6.74e9) < 1 &&
		    fabs(o.optimizer - 4 * 6.74e9) < 1);
	/* mixed precision under the Trainer (autocast) for comparison: 6 + 4 + 8 */
	j.pure = false;
	assert_int_equal(memmodel_estimate(&m, &j, &o, NULL, 0), 0);
	assert_true(fabs(o.weights - 6 * 6.74e9) < 1 && fabs(o.optimizer - 8 * 6.74e9) < 1);
}

/* FSDP/ZeRO-3 parameter offload: the shard in CPU memory, two layers (or an embedding and a layer) on the GPU */
static void test_offload_params(void **state)
{
	(void)state;
	memmodel_model m = llama2_7b();
	memmodel_job j = job(MEMMODEL_TRAIN);
	j.zero = 3;
	j.dp = 8;
	memmodel_mem on, off;
	assert_int_equal(memmodel_estimate(&m, &j, &on, NULL, 0), 0);
	j.offload_params = true;
	assert_int_equal(memmodel_estimate(&m, &j, &off, NULL, 0), 0);
	double whole = on.weights * 8, embed = 32000.0 * 4096 * 2, layer = (whole - 2 * embed) / 32;
	double want = 2 * layer > embed + layer ? 2 * layer : embed + layer;
	assert_true(fabs(off.weights - want) < 1);
	assert_true(fabs(off.cpu - (on.cpu + on.weights)) < 1);
	assert_true(off.weights < on.weights);
	/* only under ZeRO-3: a stage that keeps whole weights is left as it is */
	j.zero = 2;
	assert_int_equal(memmodel_estimate(&m, &j, &off, NULL, 0), 0);
	j.offload_params = false;
	assert_int_equal(memmodel_estimate(&m, &j, &on, NULL, 0), 0);
	assert_true(off.weights == on.weights);
}

/* a head size other than hidden / heads (Gemma 2 9B: 16 heads of 256 on a hidden size of 3584) */
static void test_head_dim(void **state)
{
	(void)state;
	memmodel_model m = {.name = "gemma-2-9b", .kind = MEMMODEL_DECODER, .layers = 42, .hidden = 3584, .heads = 16,
			    .kv_heads = 8, .head_dim = 256, .vocab = 256000, .ffn = 14336, .tied = true, .gated = true};
	double attn = 2.0 * 3584 * 16 * 256 + 2.0 * 3584 * 8 * 256, mlp = 3.0 * 3584 * 14336;
	double want = 42 * (attn + mlp + 2 * 3584) + 256000.0 * 3584 + 3584;
	assert_true(fabs(memmodel_arch_params(&m) - want) < 1);
	assert_true(fabs(want / 9.24e9 - 1) < 0.015); /* the model card's 9.24B */
	assert_true(memmodel_kv_per_token(&m, MEMMODEL_BF16) == 2.0 * 42 * 8 * 256 * 2);
	/* LoRA on q and o: r x (3584 + 4096) each, per layer */
	assert_true(memmodel_lora_params(&m, 8, MEMMODEL_LT_Q | MEMMODEL_LT_O) == 42.0 * 2 * 8 * (3584 + 4096));
	/* without head_dim, hidden / heads */
	m.head_dim = 0;
	assert_true(memmodel_kv_per_token(&m, MEMMODEL_BF16) == 2.0 * 42 * 8 * 224 * 2);
}

static void test_lora_qlora(void **state)
{
	(void)state;
	memmodel_model m = llama2_7b();
	/* rank 16 on q and v: 32 layers x 2 x 16 x (4096 + 4096) = 8.39 M (the figure PEFT prints) */
	assert_true(memmodel_lora_params(&m, 16, MEMMODEL_LT_Q | MEMMODEL_LT_V) == 32.0 * 2 * 16 * 8192);
	memmodel_job j = job(MEMMODEL_QLORA);
	memmodel_mem o;
	assert_int_equal(memmodel_estimate(&m, &j, &o, NULL, 0), 0);
	/* QLoRA: 4 + 8/64 + 32/(64·256) = 4.127 bits per quantized parameter; embeddings in 16 bits */
	double embed = 32000.0 * 4096 * 2, pa = memmodel_lora_params(&m, 16, MEMMODEL_LT_ALL);
	double base = (6.74e9 - embed) * 4.127 / 8 + embed * 2;
	/* the QLoRA recipe (qlora.py --bf16) keeps its adapters and their gradients in bf16, AdamW's
	   m and v in fp32 (no master copy) */
	assert_true(fabs(o.weights - (base + 2 * pa)) / base < 1e-3);
	assert_true(o.trainable == pa);
	assert_true(o.grads == 2 * pa);
	assert_true(o.optimizer == 8 * pa);
	/* paged AdamW: the states live in unified memory, paged to the host under pressure */
	j.optim = MEMMODEL_PAGED_ADAMW;
	memmodel_mem paged;
	assert_int_equal(memmodel_estimate(&m, &j, &paged, NULL, 0), 0);
	assert_true(paged.optimizer == 0 && paged.cpu == 8 * pa && fabs(paged.total - (o.total - 8 * pa)) < 1);
	/* ZeRO-3 / FSDP shard the 4-bit base across the data-parallel ranks too (FSDP-QLoRA, issue 37) */
	j.optim = MEMMODEL_ADAMW;
	j.zero = 3;
	j.dp = 4;
	memmodel_mem z3;
	assert_int_equal(memmodel_estimate(&m, &j, &z3, NULL, 0), 0);
	assert_true(fabs(z3.weights - (base / 4 + 2 * pa)) / base < 1e-3);
	/* plain LoRA: PEFT's fp32 adapters, gradients, master-free AdamW */
	j = job(MEMMODEL_LORA);
	assert_int_equal(memmodel_estimate(&m, &j, &o, NULL, 0), 0);
	assert_true(fabs(o.weights - (6.74e9 * 2 + 4 * pa)) < 1 && o.grads == 4 * pa && o.optimizer == 8 * pa);
	/* QLoRA needs the architecture */
	memmodel_model p = {.name = "p", .kind = MEMMODEL_DECODER, .params = 7e9, .active_params = 7e9};
	char err[256];
	assert_int_equal(memmodel_estimate(&p, &j, &o, err, sizeof err), GC_EINVAL);
	assert_non_null(strstr(err, "architecture"));
}

/* what each framework keeps, against the mechanisms docs/advise.md gives their sources for */
static void test_frameworks(void **state)
{
	(void)state;
	memmodel_model m = llama2_7b();
	double s = 4096, h = 4096, v = 32000;
	memmodel_job j = job(MEMMODEL_TRAIN);
	j.seq = 4096;
	j.recompute = MEMMODEL_RC_SELECTIVE;
	memmodel_mem meg, hf;
	assert_int_equal(memmodel_estimate(&m, &j, &meg, NULL, 0), 0);
	/* Hugging Face: fp32 cross entropy keeps 12 bytes per token and vocabulary entry (log-probs
	   and two gradients) where Megatron keeps 6 */
	j.framework = MEMMODEL_FW_HF;
	j.zero = 1; /* DeepSpeed under the Trainer: ZeRO's accounting, no autocast */
	assert_int_equal(memmodel_estimate(&m, &j, &hf, NULL, 0), 0);
	assert_true(fabs(hf.activations - meg.activations - 6 * s * v) < 1);
	assert_true(hf.weights + hf.grads + hf.optimizer == meg.weights + meg.grads + meg.optimizer);
	/* autocast (plain DDP or one GPU): fp32 weights + their 16-bit copies + fp32 gradients + AdamW:
	   18 bytes per parameter, and norms (4 of the 34 per layer) in fp32 */
	j.zero = 0;
	memmodel_mem amp;
	assert_int_equal(memmodel_estimate(&m, &j, &amp, NULL, 0), 0);
	assert_true(fabs((amp.weights + amp.grads + amp.optimizer) - 18 * 6.74e9) < 1);
	assert_true(fabs(amp.activations - hf.activations - 32 * 4 * s * h) < 1);
	/* a chunked or fused loss never holds the whole logits; a classifier has none */
	j.loss = MEMMODEL_LOSS_CHUNKED;
	memmodel_mem ch;
	assert_int_equal(memmodel_estimate(&m, &j, &ch, NULL, 0), 0);
	assert_true(fabs(amp.activations - ch.activations - 12 * s * v) < 1);
	j.loss = MEMMODEL_LOSS_CLASSIFIER;
	memmodel_mem cl;
	assert_int_equal(memmodel_estimate(&m, &j, &cl, NULL, 0), 0);
	assert_true(cl.activations == ch.activations);
	/* an encoder's default loss is a classifier's; a decoder's the whole vocabulary */
	j.loss = MEMMODEL_LOSS_AUTO;
	assert_int_equal(memmodel_loss_of(&m, &j), MEMMODEL_LOSS_FULL);
	memmodel_model enc = m;
	enc.kind = MEMMODEL_ENCODER;
	assert_int_equal(memmodel_loss_of(&enc, &j), MEMMODEL_LOSS_CLASSIFIER);
	/* fp32 training: 66·s·b·h per layer (values doubled, 1-byte masks not); eager attention
	   9·a·s²·b */
	j = job(MEMMODEL_TRAIN);
	j.seq = 4096;
	j.prec = MEMMODEL_FP32;
	memmodel_mem f32;
	assert_int_equal(memmodel_estimate(&m, &j, &f32, NULL, 0), 0);
	double want = 32 * s * h * (66 + 9.0 * 32 * s / h) + 4 * s * h + 4 * s * v;
	assert_true(fabs(f32.activations - want) < 1);
	/* full recomputation keeps each layer's input and, in the backward, one layer's activations */
	j = job(MEMMODEL_TRAIN);
	j.seq = 4096;
	j.recompute = MEMMODEL_RC_FULL;
	memmodel_mem full;
	assert_int_equal(memmodel_estimate(&m, &j, &full, NULL, 0), 0);
	assert_true(fabs(full.activations - (32 * 2 * s * h + 34 * s * h + 4 * s * h + 6 * s * v)) < 1);
	/* inference: hf generate holds two caches at its last step and every prompt position's logits;
	   vLLM one cache */
	j = job(MEMMODEL_INFER);
	j.seq = 8192;
	j.output_len = 8191;
	memmodel_mem vl, gen;
	assert_int_equal(memmodel_estimate(&m, &j, &vl, NULL, 0), 0);
	j.framework = MEMMODEL_FW_HF;
	assert_int_equal(memmodel_estimate(&m, &j, &gen, NULL, 0), 0);
	double per = memmodel_kv_per_token(&m, MEMMODEL_BF16);
	assert_true(vl.kv == per * 8192 && gen.kv == per * (8192 + 8191));
	j.output_len = 1; /* encode only: no decode step, one cache; the 8191-token prompt's logits */
	assert_int_equal(memmodel_estimate(&m, &j, &gen, NULL, 0), 0);
	assert_true(gen.kv == per * 8192 && gen.activations > 2 * 8191 * v);
	/* the frameworks that do not do a task say so */
	char err[256];
	j.framework = MEMMODEL_FW_MEGATRON;
	assert_int_equal(memmodel_estimate(&m, &j, &gen, err, sizeof err), GC_EINVAL);
	assert_non_null(strstr(err, "training only"));
	j = job(MEMMODEL_LORA);
	j.framework = MEMMODEL_FW_VLLM;
	assert_int_equal(memmodel_estimate(&m, &j, &gen, err, sizeof err), GC_EINVAL);
	assert_non_null(strstr(err, "--task infer"));
	assert_int_equal(memmodel_framework_parse("HF"), MEMMODEL_FW_HF);
	assert_int_equal(memmodel_framework_parse("deepspeed"), -1);
	assert_int_equal(memmodel_loss_parse("chunked"), MEMMODEL_LOSS_CHUNKED);
}

static void test_parse(void **state)
{
	(void)state;
	double v;
	char err[256];
	assert_int_equal(memmodel_parse_count("7B", &v, err, sizeof err), 0);
	assert_true(v == 7e9);
	assert_int_equal(memmodel_parse_count("350m", &v, err, sizeof err), 0);
	assert_true(v == 350e6);
	assert_int_equal(memmodel_parse_count("1.5T", &v, err, sizeof err), 0);
	assert_true(v == 1.5e12);
	assert_int_equal(memmodel_parse_count("125000000", &v, err, sizeof err), 0);
	assert_true(v == 125e6);
	assert_int_equal(memmodel_parse_count("-3", &v, err, sizeof err), GC_EINVAL);
	assert_non_null(strstr(err, "'-3'"));
	assert_int_equal(memmodel_parse_count("7Q", &v, err, sizeof err), GC_EINVAL);
	assert_non_null(strstr(err, "unknown suffix 'Q'"));
	assert_int_equal(memmodel_parse_count("7BB", &v, err, sizeof err), GC_EINVAL);
	assert_int_equal(memmodel_parse_count("", &v, err, sizeof err), GC_EINVAL);
	assert_int_equal(memmodel_parse_count("0", &v, err, sizeof err), GC_EINVAL);
	assert_int_equal(memmodel_targets_parse("q,v"), MEMMODEL_LT_Q | MEMMODEL_LT_V);
	assert_int_equal(memmodel_targets_parse("all"), MEMMODEL_LT_ALL);
	assert_int_equal(memmodel_targets_parse("q,x"), -1);
	assert_int_equal(memmodel_targets_parse("q,"), -1);
	assert_int_equal(memmodel_task_parse("train"), MEMMODEL_TRAIN);
	assert_int_equal(memmodel_prec_parse("INT4"), MEMMODEL_INT4);
	assert_int_equal(memmodel_prec_parse("fp6"), -1);
}

static void test_presets(void **state)
{
	(void)state;
	char path[4096], err[512];
	const char *src = getenv("GPUCTL_SRCDIR");
	snprintf(path, sizeof path, "%s/data/models.csv", src ? src : ".");
	memmodel_model *m = NULL;
	size_t n = 0;
	if (specs_load_models(path, &m, &n, err, sizeof err) != 0)
		fail_msg("%s", err);
	assert_true(n >= 12);
	for (size_t i = 0; i < n; i++) {
		if (m[i].kind == MEMMODEL_CNN)
			continue;
		double arch = memmodel_arch_params(&m[i]);
		/* the architecture implies the stated size: a wrong column shows here */
		if (fabs(arch - m[i].params) / m[i].params > 0.015)
			fail_msg("%s: architecture gives %.4g parameters, the table says %.4g", m[i].name, arch,
				 m[i].params);
	}
	/* --params alone: the nearest default_shape preset, by the ratio of parameter counts */
	static const struct {
		double params;
		const char *shape;
	} want[] = {{1e9, "Llama-3.2-1B"},   {3e9, "Llama-3.2-3B"},  {7e9, "Llama-2-7B"},
		    {8e9, "Llama-3-8B"},     {13e9, "Llama-2-13B"},  {34e9, "CodeLlama-34B"},
		    {69e9, "Llama-2-70B"},   {70e9, "Llama-3-70B"},  {405e9, "Llama-3.1-405B"},
		    {350e6, "Llama-3.2-1B"}, {2e9, "Llama-3.2-3B"},  {20e9, "Llama-2-13B"}};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		const memmodel_model *s = specs_model_shape_for(m, n, want[i].params);
		assert_non_null(s);
		if (strcmp(s->name, want[i].shape) != 0)
			fail_msg("%.3g parameters: shape %s, expected %s", want[i].params, s->name, want[i].shape);
		assert_true(s->kind == MEMMODEL_DECODER && s->default_shape && s->experts <= 1);
	}
	/* Mistral-7B is not a default shape, even where it is nearer (7.24B against 7.2B) */
	assert_string_equal(specs_model_shape_for(m, n, 7.2e9)->name, "Llama-2-7B");
	assert_null(specs_model_shape_for(m, n, 0));
	const memmodel_model *x = specs_model_find(m, n, "mixtral");
	assert_non_null(x);
	assert_string_equal(x->name, "Mixtral-8x7B");
	assert_true(fabs(x->active_params - 12.9e9) < 1);
	assert_non_null(specs_model_find(m, n, "llama_3_8b"));
	assert_null(specs_model_find(m, n, "llama-4-8b"));
	const char *sug[3];
	size_t k = specs_model_suggest(m, n, "llama-3-7b", sug, 3);
	assert_true(k >= 1);
	assert_non_null(strstr(sug[0], "Llama-3"));
	free(m);

	snprintf(path, sizeof path, "%s/data/gpus.csv", src ? src : ".");
	spec_gpu *g = NULL;
	if (specs_load_gpus(path, &g, &n, err, sizeof err) != 0)
		fail_msg("%s", err);
	const spec_gpu *h = specs_gpu_for(g, n, "H100-MEGA");
	assert_non_null(h);
	assert_string_equal(h->name, "H100");
	assert_true(h->mem == 80e9 && h->peak[MEMMODEL_BF16] == 989.5e12);
	assert_true(specs_gpu_for(g, n, "T4")->peak[MEMMODEL_BF16] == 0); /* Turing has no bf16 */
	assert_null(specs_gpu_for(g, n, "Gaudi2"));
	free(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_zero_paper),
		cmocka_unit_test(test_eleuther_bytes_per_param),
		cmocka_unit_test(test_kv_cache),
		cmocka_unit_test(test_activations),
		cmocka_unit_test(test_head_dim),
		cmocka_unit_test(test_pure_bf16),
		cmocka_unit_test(test_offload_params),
		cmocka_unit_test(test_lora_qlora),
		cmocka_unit_test(test_frameworks),
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_presets),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
