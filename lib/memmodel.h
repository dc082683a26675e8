/*
 * memmodel.h — how much GPU memory a workload needs, and why: weights,
 * gradients, optimizer states, activations, KV cache and runtime overhead,
 * per GPU, for inference, full training (with ZeRO 1-3 / FSDP, tensor
 * parallelism, activation recomputation, CPU offload), LoRA, QLoRA and
 * embedding jobs. Standalone: no gc_ctx, no NVML. Sizes are bytes (double:
 * the formulas are products of large counts).
 *
 * The formulas and their sources are in docs/advise.md:
 *  - ZeRO (Rajbhandari et al. 2020, sec. 5): per-device model states of
 *    mixed-precision Adam are (2 + 2 + K)·Ψ with K = 12, divided by N_d for
 *    each partitioned part (optimizer: stage 1, + gradients: 2, + params: 3).
 *  - Activations (Korthikanti et al. 2022, "Reducing Activation
 *    Recomputation in Large Transformer Models", sec. 4): per layer
 *    s·b·h·(34 + 5·a·s/h) bytes; /t with tensor + sequence parallelism;
 *    34·s·b·h/t with selective recomputation; 2·s·b·h/t with full.
 *  - KV cache: 2·layers·kv_heads·head_dim·seq·batch·bytes.
 *  - QLoRA (Dettmers et al. 2023): NF4 weights with double quantization,
 *    4 + 8/64 + 32/(64·256) = 4.127 bits per parameter.
 */
#ifndef GPUCTL_LIB_MEMMODEL_H
#define GPUCTL_LIB_MEMMODEL_H

#include <stdbool.h>
#include <stddef.h>

enum mm_task { MM_INFER, MM_TRAIN, MM_LORA, MM_QLORA, MM_EMBED };
enum mm_prec { MM_FP32, MM_BF16, MM_FP16, MM_FP8, MM_INT8, MM_INT4 };
enum mm_optim { MM_ADAMW, MM_ADAM8BIT, MM_SGD };
enum mm_recompute { MM_RC_NONE, MM_RC_SELECTIVE, MM_RC_FULL };
enum mm_kind { MM_DECODER, MM_ENCODER, MM_CNN };

/* LoRA target matrices (bits of mm_job.lora_targets) */
enum { MM_LT_Q = 1, MM_LT_K = 2, MM_LT_V = 4, MM_LT_O = 8, MM_LT_GATE = 16, MM_LT_UP = 32, MM_LT_DOWN = 64,
       MM_LT_ALL = 127 };

typedef struct mm_model {
	char name[64];
	char aliases[128];      /* other names, ';'-separated (presets) */
	int kind;               /* enum mm_kind */
	double params;          /* all parameters */
	double active_params;   /* used per token (mixture of experts); = params when dense */
	unsigned layers, hidden, heads, kv_heads, vocab, ffn; /* 0: unknown (then only --params) */
	unsigned experts;       /* mixture of experts: experts per layer (0 or 1: dense) */
	unsigned experts_active;/* experts each token goes through */
	bool tied;              /* input embedding shared with the output layer */
	bool gated;             /* gated MLP (SwiGLU: gate, up, down) rather than two matrices */
	unsigned seq;           /* default sequence length (ViT: patches + 1) */
	double act_per_sample;  /* CNN: activation bytes per sample in training (16-bit) */
	double flops_per_sample;/* CNN: forward FLOPs per sample */
	bool default_shape;     /* a preset whose shape stands in for --params without an architecture */
} mm_model;

typedef struct mm_job {
	int task;               /* enum mm_task */
	int prec;               /* weights (infer/embed) or compute precision (train) */
	int kv_prec;            /* KV cache precision (infer) */
	int optim;              /* enum mm_optim */
	int zero;               /* 0 (plain data parallel) ... 3 (= FSDP full sharding) */
	bool offload;           /* optimizer states (stage >= 2: and gradients) in CPU memory */
	int recompute;          /* enum mm_recompute */
	unsigned dp;            /* data-parallel GPUs the ZeRO states are sharded over (>= 1) */
	unsigned tp;            /* tensor-parallel size (>= 1) */
	unsigned seq;           /* tokens per sequence (0: the model's default) */
	unsigned batch;         /* sequences per GPU (training: micro-batch) */
	unsigned lora_rank;
	unsigned lora_targets;  /* MM_LT_* bits */
} mm_job;

typedef struct mm_mem {
	double weights, grads, optimizer, activations, kv, overhead; /* bytes per GPU */
	double total;
	double cpu;             /* bytes of host memory for offloaded states */
	double trainable;       /* trainable parameters */
	bool partial;           /* architecture unknown: activations and KV cache not counted */
} mm_mem;

/* fixed runtime overhead per GPU: CUDA context, library workspaces, NCCL buffers */
#define MM_OVERHEAD_BYTES (1.0 * 1024 * 1024 * 1024)

/* bytes per value of a precision (int4: 0.5) */
double mm_prec_bytes(int prec);
const char *mm_prec_name(int prec);
int mm_prec_parse(const char *s); /* -1 if unknown */
const char *mm_task_name(int task);
int mm_task_parse(const char *s);
const char *mm_optim_name(int optim);
int mm_optim_parse(const char *s);
const char *mm_recompute_name(int rc);
int mm_recompute_parse(const char *s);
/* "q,v", "all", "qkvo" ... into MM_LT_* bits; -1 on an unknown name */
int mm_targets_parse(const char *s);

/*
 * A parameter count as people write it: "7B", "6.7b", "350M", "1.5T",
 * "125000000" (K/M/B/T decimal). Returns 0 and *out, or -1 with a reason.
 */
int mm_parse_count(const char *s, double *out, char *err, size_t errlen);

/* parameters implied by the architecture (decoder/encoder), 0 if unknown */
double mm_arch_params(const mm_model *m);

/* activation bytes of one transformer layer (Korthikanti et al.) */
double mm_layer_activations(double s, double b, double h, double a, unsigned t, int recompute);

/* KV-cache bytes per token of one sequence at `prec` (0 when the architecture is unknown) */
double mm_kv_per_token(const mm_model *m, int prec);

/* LoRA adapter parameters for rank r on the targets (0 when the architecture is unknown) */
double mm_lora_params(const mm_model *m, unsigned r, unsigned targets);

/*
 * Memory per GPU of job j on model m. Returns 0, or -1 with a reason (an
 * impossible combination: LoRA without an architecture, a precision the
 * task cannot use) in err.
 */
int mm_estimate(const mm_model *m, const mm_job *j, mm_mem *out, char *err, size_t errlen);

#endif
