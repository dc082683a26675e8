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

enum memmodel_task { MEMMODEL_INFER, MEMMODEL_TRAIN, MEMMODEL_LORA, MEMMODEL_QLORA, MEMMODEL_EMBED };
enum memmodel_prec { MEMMODEL_FP32, MEMMODEL_BF16, MEMMODEL_FP16, MEMMODEL_FP8, MEMMODEL_INT8, MEMMODEL_INT4 };
/* paged: bitsandbytes' paged AdamW, 32-bit states in CUDA unified memory (paged to the host under pressure) */
enum memmodel_optim { MEMMODEL_ADAMW, MEMMODEL_ADAM8BIT, MEMMODEL_SGD, MEMMODEL_PAGED_ADAMW };
/*
 * Whose memory behaviour is modelled (docs/advise.md, "Frameworks"): AUTO is
 * vLLM for inference, Hugging Face (transformers, PEFT, Trainer) for training
 * and embedding. They differ in what the loss keeps (hf: fp32 log-probabilities
 * and two gradients of the whole vocabulary; megatron: one fp32 softmax,
 * reused in place) and in the KV cache during generation (hf: the grown
 * cache is a new copy while the old one is alive; vllm: paged, one copy).
 */
enum memmodel_framework { MEMMODEL_FW_AUTO, MEMMODEL_FW_HF, MEMMODEL_FW_MEGATRON, MEMMODEL_FW_VLLM };
/* the training loss: AUTO is full for decoders, classifier for encoders */
enum memmodel_loss { MEMMODEL_LOSS_AUTO, MEMMODEL_LOSS_FULL, MEMMODEL_LOSS_CHUNKED, MEMMODEL_LOSS_CLASSIFIER };
enum memmodel_recompute { MEMMODEL_RC_NONE, MEMMODEL_RC_SELECTIVE, MEMMODEL_RC_FULL };
enum memmodel_kind { MEMMODEL_DECODER, MEMMODEL_ENCODER, MEMMODEL_CNN };

/* LoRA target matrices (bits of memmodel_job.lora_targets) */
enum { MEMMODEL_LT_Q = 1, MEMMODEL_LT_K = 2, MEMMODEL_LT_V = 4, MEMMODEL_LT_O = 8, MEMMODEL_LT_GATE = 16, MEMMODEL_LT_UP = 32, MEMMODEL_LT_DOWN = 64,
       MEMMODEL_LT_ALL = 127 };

typedef struct memmodel_model {
	char name[64];
	char aliases[128];      /* other names, ';'-separated (presets) */
	int kind;               /* enum memmodel_kind */
	double params;          /* all parameters */
	double active_params;   /* used per token (mixture of experts); = params when dense */
	unsigned layers, hidden, heads, kv_heads, vocab, ffn; /* 0: unknown (then only --params) */
	unsigned head_dim;      /* attention head size; 0: hidden / heads (Gemma's and Mistral-Nemo's differ) */
	unsigned experts;       /* mixture of experts: experts per layer (0 or 1: dense) */
	unsigned experts_active;/* experts each token goes through */
	bool tied;              /* input embedding shared with the output layer */
	bool gated;             /* gated MLP (SwiGLU: gate, up, down) rather than two matrices */
	unsigned seq;           /* default sequence length (ViT: patches + 1) */
	double act_per_sample;  /* CNN: activation bytes per sample in training (16-bit) */
	double flops_per_sample;/* CNN: forward FLOPs per sample */
	bool default_shape;     /* a preset whose shape stands in for --params without an architecture */
} memmodel_model;

typedef struct memmodel_job {
	int task;               /* enum memmodel_task */
	int prec;               /* weights (infer/embed) or compute precision (train) */
	int kv_prec;            /* KV cache precision (infer) */
	int optim;              /* enum memmodel_optim */
	int zero;               /* 0 (plain data parallel) ... 3 (= FSDP full sharding) */
	bool offload;           /* optimizer states (stage >= 2: and gradients) in CPU memory */
	bool offload_params;    /* ZeRO-3/FSDP parameter offload: the weights live in CPU memory, a layer or two
				   gathered to the GPU at a time (FSDP's CPUOffload, DeepSpeed's offload_param) */
	bool pure;              /* full training purely in the 16-bit precision: weights, gradients and the
				   optimizer's states, no fp32 master copy (torchtune, LitGPT's bf16-true) */
	int recompute;          /* enum memmodel_recompute */
	unsigned dp;            /* data-parallel GPUs the ZeRO states are sharded over (>= 1) */
	unsigned tp;            /* tensor-parallel size (>= 1) */
	unsigned seq;           /* tokens per sequence (0: the model's default) */
	unsigned batch;         /* sequences per GPU (training: micro-batch) */
	unsigned lora_rank;
	unsigned lora_targets;  /* MEMMODEL_LT_* bits */
	unsigned output_len;    /* infer: tokens generated per request (the rest of seq is the prompt) */
	int framework;          /* enum memmodel_framework */
	int loss;               /* enum memmodel_loss */
} memmodel_job;

typedef struct memmodel_mem {
	double weights, grads, optimizer, activations, kv, overhead; /* bytes per GPU */
	double total;
	double cpu;             /* bytes of host memory for offloaded states */
	double trainable;       /* trainable parameters */
	bool partial;           /* architecture unknown: activations and KV cache not counted */
} memmodel_mem;

/* fixed runtime overhead per GPU: CUDA context, library workspaces, NCCL buffers */
#define MEMMODEL_OVERHEAD_BYTES (1.0 * 1024 * 1024 * 1024)

/* bytes per value of a precision (int4: 0.5) */
double memmodel_prec_bytes(int prec);
const char *memmodel_prec_name(int prec);
int memmodel_prec_parse(const char *s); /* -1 if unknown */
const char *memmodel_task_name(int task);
/* whether the task trains (train-full, LoRA, QLoRA): gradients, optimizer states, a backward pass */
bool memmodel_trains(int task);
int memmodel_task_parse(const char *s);
const char *memmodel_optim_name(int optim);
int memmodel_optim_parse(const char *s);
const char *memmodel_recompute_name(int rc);
int memmodel_recompute_parse(const char *s);
const char *memmodel_framework_name(int fw);
int memmodel_framework_parse(const char *s); /* hf, megatron, vllm, auto; -1 if unknown */
const char *memmodel_loss_name(int loss);
int memmodel_loss_parse(const char *s);      /* full, chunked, classifier, auto; -1 if unknown */
/* what AUTO stands for in job j on model m */
int memmodel_framework_of(const memmodel_model *m, const memmodel_job *j);
int memmodel_loss_of(const memmodel_model *m, const memmodel_job *j);
/* "q,v", "all", "qkvo" ... into MEMMODEL_LT_* bits; -1 on an unknown name */
int memmodel_targets_parse(const char *s);

/*
 * A parameter count as people write it: "7B", "6.7b", "350M", "1.5T",
 * "125000000" (K/M/B/T decimal). Returns 0 and *out, or GC_EINVAL with a reason.
 */
int memmodel_parse_count(const char *s, double *out, char *err, size_t errlen);

/* parameters implied by the architecture (decoder/encoder), 0 if unknown */
double memmodel_arch_params(const memmodel_model *m);

/* activation bytes of one transformer layer (Korthikanti et al.) */
double memmodel_layer_activations(double s, double b, double h, double a, unsigned t, int recompute);

/* KV-cache bytes per token of one sequence at `prec` (0 when the architecture is unknown) */
double memmodel_kv_per_token(const memmodel_model *m, int prec);

/* LoRA adapter parameters for rank r on the targets (0 when the architecture is unknown) */
double memmodel_lora_params(const memmodel_model *m, unsigned r, unsigned targets);

/*
 * Memory per GPU of job j on model m. Returns 0, or GC_EINVAL with a reason (an
 * impossible combination: LoRA without an architecture, a precision the
 * task cannot use) in err.
 */
int memmodel_estimate(const memmodel_model *m, const memmodel_job *j, memmodel_mem *out, char *err, size_t errlen);

#endif
