/*
 * advise.h — the planner behind gpuctl advise: for every priced instance
 * in a catalog, the fastest parallelism plan whose memory fits, its time
 * from the performance model and its cost; ranked cheapest first.
 *
 * Performance model (docs/advise.md has the sources):
 *  - training: FLOPs = k·N_active·tokens with k = 6 (forward 2 + backward
 *    4), 8 with full recomputation, ×1.03 with selective; LoRA/QLoRA k = 4
 *    (no weight gradients for the frozen base; 6 with full recomputation);
 *    CNNs 3 × forward FLOPs per sample. Time = FLOPs / (GPUs · dense peak ·
 *    MFU).
 *  - inference: prefill is compute-bound (2·N per prompt token at MFU);
 *    each decode step reads the weights and the KV cache of the batch
 *    (memory-bound at MBU) or computes 2·N per sequence, whichever is slower.
 *  - embed: 2·N per token at MFU.
 *  - communication (training): what the runs behind the default MFUs (NVLink
 *    nodes, GPU networks between them) did not have: the gradient reduction
 *    (ZeRO-3: the parameter gathers too) and tensor parallelism's all-reduces
 *    over PCIe inside a node, and the gradients over an instance's plain
 *    network between nodes (data/fabrics.csv), overlapped with the backward
 *    pass where frameworks overlap them; micro-batches of --batch accumulated
 *    to --global-batch tokens a step (advise_comm_hours).
 * ZeRO-3 is planned across instances only for types with a GPU-to-GPU
 * network between them (data/fabrics.csv); other types get it inside one
 * instance only.
 */
#ifndef GPUCTL_LIB_ADVISE_H
#define GPUCTL_LIB_ADVISE_H

#include "advise/catalog.h"
#include "advise/memmodel.h"
#include "advise/specs.h"

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

/* defaults when --mfu is not given; assumptions documented in docs/advise.md */
#define ADVISE_MFU_TRAIN 0.40
#define ADVISE_MFU_LORA 0.30
#define ADVISE_MFU_QLORA 0.20
#define ADVISE_MFU_PREFILL 0.50
#define ADVISE_MBU_DECODE 0.70
#define ADVISE_MFU_EMBED 0.40
#define ADVISE_MFU_CNN 0.30

/*
 * Host memory an offload plan needs per node: the offloaded states of the
 * node's GPUs times this factor, DeepSpeed's additional_buffer_factor in
 * estimate_zero2/zero3_model_states_mem_needs (pinned staging buffers, the
 * fp32 copies in flight). A plan fits when that is at most the instance's
 * MemoryGiB; a catalog row without MemoryGiB gets no offload plan.
 */
#define ADVISE_HOST_BUFFER 1.5

/* NCCL's bus bandwidth against a link's nominal one per direction (nccl-tests on NVLink and InfiniBand
 * reach 75-85 %) */
#define ADVISE_LINK_EFF 0.8
/* tokens per optimizer step when --global-batch is not given (2^20: GPT-3's 1M-token batches and up) */
#define ADVISE_GLOBAL_BATCH 1048576.0
/* a GPU link at most this fast (bytes/s, both directions: PCIe Gen5 x16) is PCIe, not NVLink */
#define ADVISE_PCIE_LINK 128e9
/* a node whose network data/fabrics.csv does not give: assumed (and said) */
#define ADVISE_NET_DEFAULT_GBPS 10.0

/* the communication of one training plan (advise_comm): seconds per step and the steps */
typedef struct advise_comm {
	double steps;           /* optimizer steps */
	double accum;           /* micro-batches of --batch sequences per rank in a step (to the global batch) */
	double compute_s;       /* compute per step */
	double dp_s;            /* gradient (ZeRO-3: and parameter) traffic per step, intra + inter node */
	double dp_inter_s;      /* ... of which between nodes */
	double tp_s;            /* tensor parallelism's all-reduces per step */
	double exposed_s;       /* what is not hidden behind compute: dp beyond the overlap, and tp */
} advise_comm;

typedef struct advise_req {
	memmodel_model model;
	memmodel_job job;             /* task, precisions, optimizer, seq, batch, LoRA; dp/tp/zero filled per plan */
	double tokens;          /* work: training tokens, generated tokens, embedded tokens; CNN: samples */
	unsigned output_len;    /* infer: tokens generated per request */
	double mfu;             /* 0: the task's default */
	bool spot;              /* rank by spot price (rows without one are left out) */
	const char *clouds;     /* comma-separated, NULL: all */
	const char *regions;    /* comma-separated, NULL: all */
	unsigned max_gpus;      /* across nodes */
	double budget;          /* $ for the whole job; 0: no limit */
	double deadline_h;      /* hours; 0: no limit */
	double headroom;        /* fraction of each GPU's memory left free (fragmentation, spikes) */
	int zero;               /* -1: choose; 0-3 fixed */
	int recompute;          /* -1: choose */
	unsigned tp;            /* 0: choose */
	int offload;            /* -1: only when nothing else fits; 0 never; 1 always */
	const spec_fabric *fabrics; /* borrowed: instance types with a GPU network between instances */
	size_t nfabrics;
	double global_batch;    /* tokens per optimizer step (CNN: samples); 0: ADVISE_GLOBAL_BATCH */
} advise_req;

typedef struct advise_plan {
	const cat_row *row;     /* borrowed from the catalog */
	double compute_h;       /* hours of compute alone; hours = compute_h + comm_h */
	double comm_h;          /* hours of communication not hidden behind compute */
	double net_gbps;        /* the network between its nodes (one node: 0) */
	bool net_assumed;       /* ... ADVISE_NET_DEFAULT_GBPS: data/fabrics.csv does not give it */
	advise_comm comm;
	const spec_gpu *gpu;    /* borrowed from the GPU table */
	const spec_fabric *fabric; /* borrowed from req->fabrics; NULL: none known between instances */
	unsigned nodes, gpus, tp, dp;
	int zero, recompute;
	bool offload;
	int compute_prec;       /* the precision the time was computed at (fp16 where bf16 is missing) */
	memmodel_mem mem;             /* per GPU */
	double usable;          /* bytes per GPU after headroom */
	double host_need;       /* offload: host bytes per node (ADVISE_HOST_BUFFER included); else 0 */
	double hours;
	double price_h, spot_h; /* whole plan ($/hour); < 0 unknown */
	double cost, spot_cost; /* whole job; < 0 unknown */
	double rank_cost;       /* what it is ranked by */
} advise_plan;

/* what the smallest feasible setup needs, when nothing in the catalog fits */
typedef struct advise_need {
	const spec_gpu *gpu;    /* the GPU model needing the fewest GPUs, NULL if none fits at 4096 */
	unsigned gpus;
	memmodel_mem mem;
	int zero, recompute;
	unsigned tp;
	bool offload;
	double host_need;       /* offload: host bytes per node of min(gpus, 8) GPUs; else 0 */
} advise_need;

/* catalog rows advise_rank left out for a reason the output should name */
typedef struct advise_skipped {
	size_t unknown_gpus;    /* the accelerator is not in the GPU table */
	size_t no_host_mem;     /* only CPU offload fits, and the row gives no MemoryGiB */
	size_t host_too_small;  /* only CPU offload fits, and the offloaded states exceed MemoryGiB */
	size_t no_fabric;       /* only ZeRO-3 across instances fits, and they have no GPU network */
} advise_skipped;

/*
 * Rank the catalog's instances for req. *out (freed with free()) holds the
 * feasible plans, cheapest first; *n their count (0 when nothing fits, then
 * *need says what would). *skipped counts the rows left out for reasons
 * other than "does not fit". Returns 0, or GC_EINVAL (GC_ENOMEM) with a reason in err.
 */
int advise_rank(const advise_req *req, const spec_gpu *gpus, size_t ngpus, const catalog *cat, advise_plan **out,
	     size_t *n, advise_need *need, advise_skipped *skipped, char *err, size_t errlen);

/* the task's default MFU */
double advise_default_mfu(const advise_req *req);

/*
 * The communication of a training plan on `gpus` GPUs of g, `per_node` to a
 * node (nodes joined by net_bps bytes/s each), tp, zero, with m its memory and
 * compute_h its compute hours: *c, and the hours it adds (0 for inference).
 */
double advise_comm_hours(const advise_req *req, const spec_gpu *g, unsigned gpus, unsigned per_node, unsigned tp,
			 int zero, int recompute, const memmodel_mem *m, double compute_h, double net_bps, bool gpu_net,
			 advise_comm *c);

/* hours for the job on `gpus` GPUs of type g with tensor-parallel size tp */
double advise_hours(const advise_req *req, const spec_gpu *g, unsigned gpus, unsigned tp, int recompute,
		 const memmodel_mem *mem, int *compute_prec);

/* ---- `gpuctl advise` as the library runs it (advise-request.c) ---- */

/* what `gpuctl advise` is told: the request, and what it is resolved from */
struct advise_input {
	advise_req req;             /* the options that set it directly; the rest is filled by advise_run */
	const char *model, *params, *tokens, *global_batch;  /* borrowed, as given */
	unsigned layers, hidden, heads, kv_heads, vocab, ffn, head_dim;
	int mlp;                    /* --mlp: 0 the model's, 1 gated, 2 plain */
	const char *config;         /* --config: a Hugging Face config.json (borrowed path) */
	const char *catalogs[16];   /* --catalog files, borrowed */
	size_t ncat;
	const char *catalog_dir;    /* --catalog-dir: SkyPilot's catalogs (CLOUD/vms.csv); NULL: ~/.sky/catalogs/v8 */
	long top;                   /* plans shown (10) */
	char gpu[32];               /* --gpu NAME: your own GPUs instead of the catalogs; "" none */
	unsigned gpu_count;         /* --gpu's COUNT, on one node */
	double host_gib;            /* --host-memory: that node's, GiB; 0 unknown */
	bool here;                  /* --here: this machine beside the rentals (here.h, here_answer) */
	double here_price;          /* --here-price: its $ per GPU-hour; < 0: none */
};

/* what it answers */
/* where one cloud's prices came from */
struct advise_catsrc {
	char cloud[16];
	bool live;                  /* SkyPilot's local catalog, not the shipped snapshot */
	char path[PATH_MAX + 32];
	double age_h;               /* live: hours since the file was written */
};

/* a live catalog older than this gets a warning (SkyPilot refetches its own every 7 hours when it runs) */
#define ADVISE_CATALOG_OLD_H (7 * 24.0)

struct advise_result {
	advise_req req;             /* the request with the model resolved and the task's defaults */
	memmodel_model shape;       /* the preset whose shape --params alone assumed; name "" when none */
	memmodel_mem single;        /* the workload on one GPU, unsharded */
	bool tokens_given;          /* --tokens set the work (else it is the task's default) */
	size_t top;
	catalog cat;
	spec_gpu *gpus;
	size_t ngpus;
	spec_fabric *fabrics;
	advise_plan *plans;         /* cheapest first */
	size_t np;
	advise_need need;           /* when np is 0 */
	advise_skipped skipped;
	struct advise_catsrc src[3]; /* without --catalog: aws, gcp, azure, each live or the snapshot */
	size_t nsrc;
	const spec_gpu *own;        /* --gpu: the GPU named (in gpus), its count in own_count; NULL: the catalogs */
	unsigned own_count;
};

/* The options of `gpuctl advise` but --help, --json and --emit's: the one table of them, which the
 * CLI's --help, completion and the docs test read through it (NULL-terminated) */
struct advise_optdesc {
	const char *name; /* the long option, without dashes */
	const char *arg;  /* its value's name in --help ("N"); NULL: a flag */
	const char *help; /* what it does, its default */
};
extern const struct advise_optdesc advise_options[];
extern const size_t advise_noptions;

/* The defaults (no model yet; infer; 10 plans). */
void advise_input_init(struct advise_input *in);
/*
 * One option by its long name ("model") and value (NULL for a flag). GC_OK;
 * GC_EINVAL with the reason in err; GC_ENOTFOUND for a name that is none.
 */
int advise_option(struct advise_input *in, const char *name, const char *arg, char *err, size_t errlen);
/*
 * Resolve the model, apply the task's defaults, load the GPU table, the
 * fabrics and the catalogs, rank. GC_OK (also when nothing fits: np 0);
 * GC_EINVAL for a request that cannot be (the reason in err); GC_ENOTFOUND
 * or GC_EIO when a data file is missing or broken. Free *res with
 * advise_result_free in every case.
 */
int advise_run(const struct advise_input *in, struct advise_result *res, char *err, size_t errlen);
void advise_result_free(struct advise_result *res);
/* Where the prices came from, one line ("snapshot of 2026-11-22", or live catalogs and their age). */
void advise_prices_text(const struct advise_result *res, char *buf, size_t len);
/* What the memory figures assume (framework, loss, attention, overhead), one line for the output. */
void advise_assumptions(const struct advise_result *res, char *buf, size_t len);
/*
 * The result as `gpuctl advise --json` prints it (schema gpuctl.advise/1), with
 * here (here_answer's object, borrowed; NULL: none) as its "here"; free(), NULL
 * when out of memory.
 */
char *advise_result_json(const struct advise_result *res, const json_t *here);
/* advise's own formats: "41 min", "3.1 h", "2.5 days"; "$8.28", "$123", "-" unknown (< 0) */
void advise_fmt_hours(char *buf, size_t len, double h);
void advise_fmt_money(char *buf, size_t len, double v);
/* The model presets (data/models.csv): GC_OK, or a GC_E* with err set; free(*out). */
int advise_load_models(memmodel_model **out, size_t *n, char *err, size_t errlen);
/* The GPU table (data/gpus.csv), likewise. */
int advise_load_gpus(spec_gpu **out, size_t *n, char *err, size_t errlen);
/* SkyPilot's accelerator names (data/sky-accelerators.csv), likewise. */
int advise_load_sky(spec_sky **out, size_t *n, char *err, size_t errlen);

#endif
