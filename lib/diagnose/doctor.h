/*
 * doctor.h — checks of the whole GPU stack on this machine: the driver, the
 * environment jobs inherit, and the health of each GPU. Policy only: each
 * check says ok / warn / fail / skip, what it found and what to do; src/
 * prints them. Everything read from outside the NVML snapshot comes in
 * through struct doctor_env, so tests can set it.
 */
#ifndef GPUCTL_LIB_DOCTOR_H
#define GPUCTL_LIB_DOCTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "device/gpu.h"

enum doctor_status { DOCTOR_OK, DOCTOR_WARN, DOCTOR_FAIL, DOCTOR_SKIP };

struct doctor_check {
	char id[32];       /* stable: "driver", "env.cuda_visible_devices", "health.ecc", ... */
	enum doctor_status status;
	char found[480];
	char fix[480];
};

struct doctor_env {
	int open_rc;                 /* gc_ctx_open's result */
	const char *open_msg;        /* its message when it failed */
	const char *cuda_visible_devices, *cuda_device_order, *alloc_conf;
	const char *nccl_async, *torch_nccl_async;  /* (TORCH_)NCCL_ASYNC_ERROR_HANDLING */
	bool in_container;
	int lease_mode;              /* authority_find's: 1 authority, 0 cooperative, <0 refused (lease_mode_msg) */
	const char *lease_dir;       /* the authority directory looked at */
	const char *lease_mode_msg;
	int64_t shm_bytes;           /* size of /dev/shm, -1 unknown */
	const char *kernel_log;      /* kernel messages already read (may be NULL: not readable) */
	size_t kernel_log_len;
	const char *signatures_dir;  /* for Xid lines (explain's data) */
	/* the CUDA stack; NULL where not found */
	const char *compat_csv;      /* data/cuda-compat.csv's text */
	const char *nvcc_out;        /* `nvcc --version`'s output */
	const char *cuda_json_path, *cuda_json;  /* a toolkit's version.json and its text */
	const char *python;          /* the interpreter asked */
	int python_rc;               /* DOCTOR_PY_*, or the probe's exit status (0: ran) */
	const char *python_out;      /* the probe's output (DOCTOR_PY_PROBE's lines) */
	/* what `gpuctl launch` would run (src/torchprobe.h) */
	const char *launcher;        /* "/usr/bin/torchrun", "python3 -m torch.distributed.run"; NULL: none on PATH */
	bool launcher_is_torchrun;
	const char *launcher_python; /* its Python; NULL when torchrun's #! line names none */
	int launcher_rc;             /* TORCHENV_PROBE run with it: as python_rc */
	const char *launcher_out;    /* its output */
};

/* python_rc when the probe did not run to the end */
enum { DOCTOR_PY_MISSING = -1, DOCTOR_PY_TIMEOUT = -2 };

/* The probe run as `python -c DOCTOR_PY_PROBE`; prints "torch VERSION CUDA AVAILABLE COUNT"
 * (or "torch -" when not installed, "torch-error MESSAGE") and the same for tensorflow. */
extern const char DOCTOR_PY_PROBE[];

struct doctor_report {
	struct doctor_check *checks;     /* owned */
	size_t n;
};

const char *doctor_status_name(enum doctor_status s);
/* Run every check. snap may be NULL (no driver). 0, or GC_ENOMEM. */
int doctor_run(const gc_snapshot *snap, const struct doctor_env *env, struct doctor_report *r);
void doctor_report_free(struct doctor_report *r);

#endif
