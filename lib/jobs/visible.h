/*
 * visible.h — CUDA_VISIBLE_DEVICES, parsed and rendered by CUDA's own rules.
 * Standalone: knows nothing of NVML or gc_ctx; the caller passes the
 * machine's GPU UUIDs in NVML (PCI bus) order, which is CUDA's order under
 * CUDA_DEVICE_ORDER=PCI_BUS_ID — the order gpuctl always hands its jobs.
 */
#ifndef GPUCTL_LIB_VISIBLE_H
#define GPUCTL_LIB_VISIBLE_H

#include <stdbool.h>
#include <stddef.h>

#define VISIBLE_MAX 256

enum visible_form {
	VISIBLE_ALL,    /* unset: every GPU, in order */
	VISIBLE_NONE,   /* set, but no entry is usable: no GPU */
	VISIBLE_INDEX,  /* "2,0" */
	VISIBLE_UUID,   /* "GPU-8932f937,GPU-..." (full or unique prefixes) */
	VISIBLE_MIG,    /* "MIG-GPU-<uuid>/<gi>/<ci>" or "MIG-<uuid>" */
};

/* why parsing stopped at entry number `n` (the first unusable one) */
enum visible_stop {
	VISIBLE_STOP_NONE,       /* the whole list was used */
	VISIBLE_STOP_SYNTAX,     /* neither an index, a GPU UUID nor a MIG id */
	VISIBLE_STOP_RANGE,      /* an index that is negative or has no GPU */
	VISIBLE_STOP_NOMATCH,    /* a UUID that matches no GPU */
	VISIBLE_STOP_AMBIGUOUS,  /* a UUID prefix that matches several GPUs */
	VISIBLE_STOP_MIXED,      /* another form than the first entry's */
	VISIBLE_STOP_DUPLICATE,  /* a device listed twice: the whole list is invalid */
	VISIBLE_STOP_TOO_MANY,   /* more than VISIBLE_MAX entries */
};

struct visible_entry {
	int gpu;        /* NVML index of the GPU (the parent GPU for MIG); -1 unknown */
	char id[128];   /* the entry as written (truncated) */
};

struct visible {
	enum visible_form form;
	size_t n;                  /* devices CUDA will see, in CUDA's order */
	struct visible_entry e[VISIBLE_MAX];
	enum visible_stop stop;
	size_t stop_at;            /* position (0-based) of the entry that stopped parsing */
};

/*
 * Parse `value` (NULL when the variable is unset) against the machine's GPUs
 * (uuids[ngpus], NVML order; borrowed). Never fails: an unusable list gives
 * form VISIBLE_NONE or a shorter list, and says why in stop/stop_at.
 */
void visible_parse(const char *value, const char *const *uuids, size_t ngpus, struct visible *out);

/* A one-line English reason for a stop code ("index out of range", ...). */
const char *visible_stop_reason(enum visible_stop s);

/* Is GPU `gpu` (NVML index) visible? (VISIBLE_ALL: every GPU) */
bool visible_has(const struct visible *v, int gpu);

/*
 * Render the GPUs gpus[n] (NVML indices) as a CUDA_VISIBLE_DEVICES value in
 * `form` (VISIBLE_INDEX or VISIBLE_UUID; full UUIDs). n == 0 renders "",
 * which CUDA reads as "no GPU". Returns 0, or GC_EINVAL when the form cannot be
 * rendered or buf (len bytes) is too small.
 */
int visible_render(enum visible_form form, const char *const *uuids, size_t ngpus,
		   const unsigned *gpus, size_t n, char *buf, size_t len);

/*
 * The form a child's value takes: UUIDs when asked for or when the parent
 * value used them, else indices.
 */
enum visible_form visible_child_form(const struct visible *parent, bool want_uuid);

#endif
