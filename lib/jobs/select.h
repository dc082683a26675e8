/*
 * select.h — which GPUs are free, and which are best, for a request
 * ("2 GPUs with 20 GiB free, at most 10% busy, A100s, not GPU 3").
 *
 * Policy only: it reads a gc_snapshot and what the caller knows about leases
 * and CUDA_VISIBLE_DEVICES, and never prints, allocates for the caller or
 * touches NVML. Output code turns the select_why codes into words.
 *
 * Indices: exclude[], allowed[], leased[] and why[] are indexed by the GPU's
 * position in s->gpus, which is its NVML index (snapshots hold every GPU);
 * select_pick writes NVML indices (gc_gpu.index).
 */
#ifndef GPUCTL_LIB_SELECT_H
#define GPUCTL_LIB_SELECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "device/gpu.h"

struct select_request {
	unsigned n;               /* GPUs wanted, >= 1 */
	uint64_t min_free_mem;    /* bytes; 0 = any */
	int max_util;             /* percent; -1 = any */
	const char *model;        /* borrowed; fnmatch(3) glob on the GPU name, case-insensitive;
				     without * ? [ it matches as a substring ("A100" matches
				     "NVIDIA A100 80GB PCIe"); NULL or "" = any */
	const bool *exclude;      /* borrowed; [ngpus] or NULL */
	const bool *allowed;      /* borrowed; [ngpus] (from CUDA_VISIBLE_DEVICES) or NULL = all */
	const bool *quarantined;  /* borrowed; [ngpus] (quarantine.h) or NULL = none */
	bool shared;              /* processes of other users do not make a GPU busy */
	uid_t uid;                /* the requesting user */
};

/*
 * Why a GPU is not eligible now. A GPU gets the first reason that applies,
 * checked in this order: not visible, excluded, lost, quarantined, model,
 * MIG, leased, memory, utilization, other user (a lost GPU says so even when
 * its name is unknown).
 */
enum select_why {
	SELECT_OK,
	SELECT_NOT_VISIBLE,   /* not in CUDA_VISIBLE_DEVICES (allowed[]) */
	SELECT_EXCLUDED,      /* exclude[] */
	SELECT_MODEL,         /* its name does not match r->model */
	SELECT_LEASED,        /* leased[] */
	SELECT_LOST,          /* g->lost, or a value with GC_ST_GPU_LOST / GC_ST_RESET_REQUIRED */
	SELECT_MEMORY,        /* less free memory than asked, or free memory unknown */
	SELECT_UTIL,          /* busier than asked, or utilization unknown */
	SELECT_OTHER_USER,    /* a compute process of another user, or one whose owner
				 cannot be seen (another PID namespace), or an unknown
				 process list; never when r->shared */
	SELECT_MIG,           /* in MIG mode: CUDA cannot use it by index (select_gpu_mig) */
	SELECT_QUARANTINED,   /* quarantined[]: out of service until an administrator clears it */
};

/* Is this GPU lost: a call returned GPU_IS_LOST in the sample, or a value says it is lost or
 * needs a reset? (select_why's SELECT_LOST, and doctor's health.lost) */
bool select_gpu_lost(const gc_gpu *g);

/*
 * Is this GPU in MIG mode, so that CUDA sees only its MIG devices (by MIG
 * UUID) and never the GPU by index? Needs GC_V_MIG_CURRENT sampled; an
 * unknown mode (a GPU or driver without MIG) is not MIG mode. gpuctld's
 * queue asks the same.
 */
bool select_gpu_mig(const gc_gpu *g);

/* --model's rule: a glob (* ? [) matched case-insensitively, else a case-insensitive
 * substring; NULL or "" matches every GPU, a NULL name none. */
bool select_model_matches(const char *model, const char *gpu_name);

/*
 * "0,3": the indices set in set[n], comma-separated, written into buf (len
 * bytes; "" when none is set). An index that would not fit whole is left
 * out, with those after it.
 */
void select_index_list(const bool *set, size_t n, char *buf, size_t len);

/* Short static words for a reason: "leased", "not enough free memory", ... */
const char *select_why_text(enum select_why w);

/*
 * The same with the request's numbers where it has them ("less than 20 GiB
 * free", "more than 30% utilized"), written into buf (len bytes). Returns buf.
 */
const char *select_why_format(enum select_why w, const struct select_request *r, char *buf, size_t len);

/*
 * Can this request EVER be met on this machine, ignoring leases, load,
 * processes and lost GPUs? Counts the GPUs that are allowed, not excluded,
 * match the model and whose TOTAL memory is at least r->min_free_mem (a GPU
 * whose total is unknown counts) and that are not in MIG mode (which only an
 * administrator changes). Returns 0, or GC_EINVAL (GC_ENOMEM) with a one-line message
 * in err (errlen bytes; lowercase, no trailing period), checked in order:
 *   "3 GPUs requested but only 2 exist on this machine (0-1)"
 *   "3 GPUs requested but only 2 are visible through CUDA_VISIBLE_DEVICES (0,3)"
 *   "no GPU on this machine matches --model 'A100' (it has: NVIDIA H100 80GB HBM3)"
 *   "2 GPUs with at least 100 GiB requested but the largest GPU here has 79.6 GiB"
 *   "3 GPUs requested but only 1 matches the filters (index 2)"
 * the last with "; GPU 0 is in MIG mode (CUDA sees only its MIG devices, by
 * MIG UUID)" added when MIG mode is what keeps GPUs out.
 * GPU lists collapse runs ("0-3,6"); sizes are GiB with at most one decimal
 * (the request rounded up, the largest GPU rounded down, so they never look
 * equal).
 */
int select_possible(const gc_snapshot *s, const struct select_request *r, char *err, size_t errlen);

/*
 * Could GPU i ever meet the request, ignoring leases, load, processes and
 * lost GPUs (the rule select_possible counts by, and gpuctld's "NeverFits")?
 * SELECT_OK, or the first of SELECT_NOT_VISIBLE, SELECT_EXCLUDED,
 * SELECT_MODEL, SELECT_MEMORY (its total is too small), SELECT_MIG.
 */
enum select_why select_could(const gc_snapshot *s, size_t i, const struct select_request *r);

/*
 * Per-GPU eligibility now. leased[ngpus] (borrowed, or NULL) marks GPUs
 * leased by anyone; why[ngpus] (or NULL) receives each GPU's reason.
 * Returns the number of eligible GPUs.
 */
size_t select_eligible(const gc_snapshot *s, const struct select_request *r, const bool *leased,
		       enum select_why *why);

/*
 * Choose r->n GPUs among the eligible: best ranked (most free memory, then
 * least utilized, then GPU 0 last, then lower index) and, for n > 1 with a
 * topology matrix, the set whose worst pairwise link is best. out[r->n]
 * receives NVML indices sorted ascending (CUDA's PCI order).
 * Returns 0; GC_ENOTNOW when fewer than r->n GPUs are eligible; GC_EINVAL
 * when r->n is 0; GC_ENOMEM when memory runs out.
 */
int select_pick(const gc_snapshot *s, const struct select_request *r, const bool *leased, unsigned *out);

/*
 * The GPUs a list names, as --gpus, --exclude and -i take it ("0,2",
 * "GPU-8ab3…", "18:00.0", mixed; for opt, the option named in the
 * message): which[s->ngpus] set for each. GC_OK; GC_EINVAL with a one-line
 * message naming the id and what would be accepted (an index in range, a
 * full UUID or an unambiguous prefix of at least 8 hex digits, a PCI bus
 * id); GC_ENOMEM.
 */
int select_parse_ids(const char *opt, const char *spec, const gc_snapshot *s, bool *which, char *err, size_t errlen);

#endif
