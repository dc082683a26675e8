/*
 * gpuctl.h — the public C API of libgpuctl.
 *
 * A gc_ctx is an open connection to the GPU management library (the real
 * NVML or the simulated node); gc_ctx_sample() fills a gc_snapshot with one
 * sample of every GPU. Each value in a gc_gpu has a status: GC_ST_OK means
 * the value is valid; anything else says why it is not (not supported, no
 * permission, GPU lost, ...), so output code can print [N/A] or null instead
 * of a made-up zero. No NVML type appears here.
 *
 * The library never prints and never exits: errors are negative GC_E* codes
 * with a message in the context (gc_ctx_errmsg).
 */
#ifndef GPUCTL_GPUCTL_H
#define GPUCTL_GPUCTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Error codes: 0 on success, a negative GC_E* on failure. None is -1, so a
 * bare -1 that slips out of some function can never pass for one (it used to
 * read as GC_ENOLIB: "no driver", exit 3). tests/docs/check-errors.py holds
 * the public functions to that.
 */
enum gc_error {
	GC_OK = 0,
	GC_ENOLIB = -2,      /* the NVML library cannot be loaded */
	GC_ENODRIVER = -3,   /* library loaded, kernel driver not loaded */
	GC_EMISMATCH = -4,   /* kernel module and user library versions differ */
	GC_ENOPERM = -5,     /* insufficient permissions */
	GC_EGPULOST = -6,    /* a GPU fell off the bus / needs reset */
	GC_ENOMEM = -7,      /* out of memory */
	GC_EINVAL = -8,      /* invalid argument */
	GC_ENOTFOUND = -9,   /* no such GPU / entry */
	GC_ESIM = -10,       /* the simulated node description is invalid */
	GC_ENVML = -11,      /* any other NVML failure */
	GC_EIO = -12,        /* a file could not be read or written */
	GC_EBUSY = -13,      /* held by someone else (a lease): not now */
	GC_ETIMEDOUT = -14,  /* waited as long as asked */
	GC_ENOTNOW = -15,    /* too few GPUs fit the request now: not now, try again or wait */
	GC_ECANCELED = -16,  /* the caller asked to stop (a signal) while it waited */
};

/* Return a static English description of a GC_E* code. */
const char *gc_strerror(int err);

/*
 * Sizes and durations as gpuctl's options take them, for bindings that
 * must read them the same way: a size always has a unit ("20G" = 20 GiB,
 * "1.5TB", "512MiB": docs/gpuctl.1's --min-free-mem), a duration is
 * seconds or a number with s, m, h or d ("90", "30s", "10m"). GC_OK with
 * the value; GC_EINVAL with the reason in err (errlen bytes, may be NULL).
 */
int gc_parse_size(const char *s, uint64_t *bytes, char *err, size_t errlen);
int gc_parse_duration(const char *s, int64_t *ms, char *err, size_t errlen);

/*
 * Status of one value in a snapshot. GC_ST_OK = valid; the others map the
 * NVML return code that prevented it (nvidia-smi prints a bracketed token
 * for each).
 */
enum gc_status {
	GC_ST_OK = 0,
	GC_ST_UNSET,          /* not requested in this sample */
	GC_ST_NOT_SUPPORTED,  /* this GPU/driver does not provide it */
	GC_ST_NO_PERMISSION,
	GC_ST_GPU_LOST,
	GC_ST_RESET_REQUIRED,
	GC_ST_UNKNOWN_ERROR,
};

/* Values a sample can collect; each is requested by its bit (GC_BIT(v)). */
enum gc_value {
	GC_V_NAME, GC_V_UUID, GC_V_SERIAL, GC_V_VBIOS, GC_V_PCI,
	GC_V_MEM_TOTAL, GC_V_MEM_RESERVED, GC_V_MEM_USED, GC_V_MEM_FREE,
	GC_V_UTIL_GPU, GC_V_UTIL_MEM,
	GC_V_TEMP, GC_V_FAN,
	GC_V_POWER_DRAW, GC_V_POWER_LIMIT, GC_V_POWER_ENFORCED,
	GC_V_POWER_DEFAULT, GC_V_POWER_MIN, GC_V_POWER_MAX,
	GC_V_CLK_GR, GC_V_CLK_SM, GC_V_CLK_MEM, GC_V_CLK_VIDEO,
	GC_V_CLK_MAX_GR, GC_V_CLK_MAX_SM, GC_V_CLK_MAX_MEM,
	GC_V_REASONS, GC_V_REASONS_SUPPORTED,
	GC_V_ECC_MODE, GC_V_ECC_PENDING,
	GC_V_ECC_CORR_VOL, GC_V_ECC_UNCORR_VOL, GC_V_ECC_CORR_AGG, GC_V_ECC_UNCORR_AGG,
	GC_V_PERSISTENCE, GC_V_COMPUTE_MODE, GC_V_PSTATE,
	GC_V_MIG_CURRENT, GC_V_MIG_PENDING,
	GC_V_MIG_DEVICES, /* the MIG devices of a GPU in MIG mode (gc_gpu.mig); also samples MIG mode */
	GC_V_PCIE_GEN, GC_V_PCIE_GEN_MAX, GC_V_PCIE_WIDTH, GC_V_PCIE_WIDTH_MAX,
	GC_V_ENERGY, GC_V_COMPUTE_CAP,
	GC_V_RETIRED_PENDING, /* pages pending retirement (Kepler to Turing) */
	GC_V_REMAPPED_ROWS,   /* the four remap_* values (Ampere and newer) */
	GC_V_PROCS,   /* compute processes */
	GC_V_GPROCS,  /* graphics processes */
	GC_V_PROC_UTIL, /* each process's SM and memory utilization (gc_proc.sm_util, .mem_util)
			   since the previous sample of this context (nvidia-smi pmon's sm and mem) */
	GC_V__COUNT
};
_Static_assert(GC_V__COUNT <= 64, "value mask fits 64 bits");
#define GC_BIT(v) (UINT64_C(1) << (v))
#define GC_ALL_VALUES ((GC_V__COUNT == 64) ? ~UINT64_C(0) : (GC_BIT(GC_V__COUNT) - 1))

/* Clock event ("throttle") reason bits, as NVML numbers them. */
#define GC_REASON_GPU_IDLE 0x1ULL
#define GC_REASON_APP_CLOCKS 0x2ULL
#define GC_REASON_SW_POWER_CAP 0x4ULL
#define GC_REASON_HW_SLOWDOWN 0x8ULL
#define GC_REASON_SYNC_BOOST 0x10ULL
#define GC_REASON_SW_THERMAL 0x20ULL
#define GC_REASON_HW_THERMAL 0x40ULL
#define GC_REASON_HW_POWER_BRAKE 0x80ULL
#define GC_REASON_DISPLAY_CLOCK 0x100ULL
/* the reasons that mean "this GPU is being slowed down", as gpustat/nvitop flag them */
#define GC_REASONS_THROTTLING (GC_REASON_SW_POWER_CAP | GC_REASON_HW_SLOWDOWN | \
	GC_REASON_SW_THERMAL | GC_REASON_HW_THERMAL | GC_REASON_HW_POWER_BRAKE)

/* Name of one reason bit ("sw_power_cap"), or NULL for an unknown bit. */
const char *gc_reason_name(uint64_t bit);

enum gc_proc_type { GC_PROC_COMPUTE = 1, GC_PROC_GRAPHICS = 2 };

/*
 * One process using a GPU (gc_proc_get). Fields are only ever added at the
 * end: a program built against an older header passes its smaller size.
 */
typedef struct gc_proc {
	uint32_t pid;
	unsigned type;            /* GC_PROC_* bits */
	bool mem_known;           /* false: NVML reported "not available" */
	uint64_t used_memory;     /* bytes */
	bool visible;             /* /proc/<pid> exists in this PID namespace */
	uid_t uid;                /* valid when visible */
	char user[33];            /* user name, or the uid in decimal */
	char command[256];        /* cmdline, arguments joined by spaces (truncated) */
	char argv0[256];          /* first cmdline word: nvidia-smi's process_name */
	bool simulated;           /* a simulated node's process, not visible: user, command and
				     argv0 are the node file's ("user", "command"), for display */
	int sm_util;              /* % of the time a kernel of this process ran on the GPU since the
				     previous sample (GC_V_PROC_UTIL); -1: not known */
	int mem_util;             /* % of the time its memory was read or written; -1: not known */
} gc_proc;

/* A GPU of a snapshot, and the snapshot: opaque outside the library (read
 * them with the accessors below), so that a new value changes no layout a
 * program was built against. */
typedef struct gc_gpu gc_gpu;
typedef struct gc_snapshot gc_snapshot;

/* Pairwise topology levels, as nvidia-smi topo -m names them. */
enum gc_topo {
	GC_TOPO_UNKNOWN = -1,
	GC_TOPO_SELF = 0,       /* X    */
	GC_TOPO_PIX = 10,       /* single PCIe switch */
	GC_TOPO_PXB = 20,       /* multiple PCIe switches */
	GC_TOPO_PHB = 30,       /* PCIe host bridge */
	GC_TOPO_NODE = 40,      /* host bridges in one NUMA node */
	GC_TOPO_SYS = 50,       /* across NUMA nodes */
};
const char *gc_topo_name(int level); /* "PIX", ..., "X"; "N/A" when unknown */

typedef struct gc_ctx gc_ctx;

/*
 * How to open: fields are only ever added at the end, and read as far as
 * size says (0 counts as the fields below, so `{.sim_node = path}` stays
 * valid).
 */
typedef struct gc_open_opts {
	size_t size;           /* sizeof(gc_open_opts), or 0 */
	const char *library;   /* borrowed; NULL: $GPUCTL_NVML_LIBRARY, else libnvidia-ml.so.1 */
	const char *sim_node;  /* borrowed; non-NULL: load the simulator with this node file
				  (handed to it directly: no environment variable is set). Like
				  NVML, which serves one machine, the simulator serves one node
				  per process: another node while a context is open is GC_ESIM */
} gc_open_opts;

/*
 * Open the management library and enumerate GPUs. On failure *out is still
 * set (so gc_ctx_errmsg works) unless memory ran out; free it with
 * gc_ctx_free in every case.
 */
int gc_ctx_open(gc_ctx **out, const gc_open_opts *opts);
void gc_ctx_free(gc_ctx *ctx);
const char *gc_ctx_errmsg(const gc_ctx *ctx);
/* which library file was loaded (or last tried) */
const char *gc_ctx_library(const gc_ctx *ctx);
/* number of GPUs found at open */
size_t gc_ctx_count(const gc_ctx *ctx);
/* which process-list entry point is in use ("nvmlDeviceGetComputeRunningProcesses_v3", ...) */
const char *gc_ctx_proc_api(const gc_ctx *ctx);

/*
 * Take one sample of the GPUs selected in `which` (indices; NULL = all) of the
 * values in `mask` (GC_BIT()s). `topo` asks for the pairwise topology matrix.
 * The snapshot is reused between calls: its memory is kept and overwritten.
 * Returns 0, or a negative GC_E* when no sample could be taken at all; a
 * failure of one value of one GPU is recorded in its status instead.
 */
int gc_ctx_sample(gc_ctx *ctx, gc_snapshot *snap, uint64_t mask,
		  const bool *which, bool topo);

/* A new empty snapshot for gc_ctx_sample (NULL when out of memory), and its end. */
gc_snapshot *gc_snapshot_new(void);
void gc_snapshot_free(gc_snapshot *snap);

/* The snapshot's GPUs (every GPU of the node: position i is NVML index i). */
size_t gc_snapshot_count(const gc_snapshot *snap);
/* Its driver version ("550.54.14"; "" when unknown), its CUDA driver version
 * (12040 for 12.4; 0 when unknown), and the wall-clock ms of the sample. */
const char *gc_snapshot_driver(const gc_snapshot *snap);
int gc_snapshot_cuda(const gc_snapshot *snap);
int64_t gc_snapshot_time_ms(const gc_snapshot *snap);

/*
 * One value of GPU `gpu`: its status (GC_ST_OK, or why it is not valid;
 * GC_ST_UNSET when it was not sampled). A negative GC_EINVAL for a GPU or
 * value out of range.
 */
int gc_value_status(const gc_snapshot *snap, size_t gpu, unsigned value);
/*
 * A number: memory in bytes, power in mW, clocks in MHz, percentages,
 * degrees C, reason bits, energy in mJ, booleans as 0/1, the compute
 * capability as major*10+minor, GC_V_PCI as the bus number, GC_V_PROCS and
 * GC_V_GPROCS and GC_V_MIG_DEVICES as a count, GC_V_PROC_UTIL as the highest
 * sm_util of the GPU's processes, GC_V_REMAPPED_ROWS as the
 * rows remapped for uncorrectable errors. Returns the value's status:
 * GC_ST_OK with *out set, another GC_ST_* (*out untouched), or GC_EINVAL
 * for a string value (name, UUID, serial, VBIOS) or one out of range.
 */
int gc_value_u64(const gc_snapshot *snap, size_t gpu, unsigned value, uint64_t *out);
/*
 * A string (GC_V_NAME, GC_V_UUID, GC_V_SERIAL, GC_V_VBIOS, GC_V_PCI as the
 * bus id "00000000:18:00.0"), borrowed from the snapshot until its next
 * sample. Returns the status as gc_value_u64 does; GC_EINVAL for a number.
 */
int gc_value_str(const gc_snapshot *snap, size_t gpu, unsigned value, const char **out);
/*
 * The processes of GPU gpu sampled (GC_V_PROCS and GC_V_GPROCS; one using
 * the GPU both ways is listed once, with both type bits), and process i of
 * them copied into *out, whose size the caller gives (sizeof(gc_proc) of
 * its header). GC_OK, or GC_EINVAL for an index out of range.
 */
size_t gc_proc_count(const gc_snapshot *snap, size_t gpu);
int gc_proc_get(const gc_snapshot *snap, size_t gpu, size_t i, gc_proc *out, size_t size);

/*
 * A request for GPUs, as `gpuctl pick` and `gpuctl run` take it. Set size
 * to sizeof(gc_request): fields are only ever added at the end, and the
 * library reads only those the caller's size covers (the rest count as 0).
 */
typedef struct gc_request {
	size_t size;              /* sizeof(gc_request) */
	unsigned n;               /* GPUs wanted, >= 1 */
	uint64_t min_free_mem;    /* bytes free at least; 0 = any */
	int max_util;             /* percent busy at most; -1 = any (0 means idle) */
	const char *model;        /* glob or substring of the GPU name ("A100"); NULL = any */
	bool shared;              /* other users' processes do not make a GPU busy */
	const char *name;         /* the lease's name in `gpuctl leases`; NULL = none */
} gc_request;

/*
 * Choose r->n GPUs that are free now in snap (not leased by anyone in the
 * state directory, which state_dir names: NULL for $GPUCTL_STATE_DIR, else
 * /run/gpuctl, as gpuctl does), best first as `gpuctl pick` ranks them.
 * out[r->n] receives NVML indices in ascending order. GC_OK; GC_ENOTNOW
 * when fewer fit now; GC_EINVAL for a bad request; another GC_E*.
 */
int gc_pick(const gc_snapshot *snap, const gc_request *r, const char *state_dir, unsigned *out);

/*
 * Pick and lease: the GPUs are held for this process until
 * gc_lease_release (or its exit, even by SIGKILL); every gpuctl of every
 * user on the machine then passes them over. Another process leasing one
 * of them between the choice and the lease makes it choose again. GC_OK
 * with *out set; GC_ENOTNOW when too few GPUs fit now; another GC_E* with
 * a message in err (errlen bytes) for anything else.
 */
typedef struct gc_lease gc_lease;
int gc_lease_take(const gc_snapshot *snap, const gc_request *r, const char *state_dir, gc_lease **out,
		  char *err, size_t errlen);
/*
 * Take GPUs as `gpuctl run --wait` does: sample ctx (borrowed: it stays the
 * caller's), choose r->n GPUs among those this process may see
 * (CUDA_VISIBLE_DEVICES) that fit, and lease them. Inside a lease this
 * process runs in (a `gpuctl run` job, a shell after `gpuctl pick
 * --lease`), only that lease's GPUs are chosen and none is leased again:
 * the job's own GPUs. When too few fit now and timeout_ms is not 0, wait
 * in line with every gpuctl of every user on the machine (first come,
 * first served) for at most timeout_ms (-1: no limit), woken at once by a
 * release, or until *stop (NULL: none; set it from a signal handler or
 * another thread) is non-zero. GC_OK with *out; GC_ENOTNOW (timeout_ms 0),
 * GC_ETIMEDOUT or GC_ECANCELED with the reason in err ("GPU 0 is leased by
 * alice (pid 41, since 10:02, job 'train')"); GC_EINVAL for a request this
 * machine can never meet, said in err; another GC_E*.
 */
int gc_lease_wait(gc_ctx *ctx, const gc_request *r, const char *state_dir, int64_t timeout_ms,
		  const volatile int *stop, gc_lease **out, char *err, size_t errlen);
/* how many GPUs, and the NVML index of the i-th (ascending) */
size_t gc_lease_count(const gc_lease *l);
unsigned gc_lease_gpu(const gc_lease *l, size_t i);
/* the leased GPUs as a CUDA_VISIBLE_DEVICES value (UUIDs, which CUDA numbers the same
 * whatever its device order) in buf (len bytes). GC_OK, or GC_EINVAL when it does not fit. */
int gc_lease_visible(const gc_lease *l, char *buf, size_t len);
/* Give the GPUs back; NULL is ignored. */
void gc_lease_release(gc_lease *l);

/*
 * Run a command as `gpuctl run` does, the same job core (lib/jobs/exec.h):
 * lease GPUs on ctx's node (borrowed), run argv (NULL-terminated, no shell)
 * under the supervisor with CUDA_VISIBLE_DEVICES set, explain a failure,
 * retry it by --retry-on's rule, release. options: gpuctl run's options
 * as "--NAME" or "--NAME=VALUE" ("--n=2", "--min-free-mem=20G",
 * "--wait=10m", "--retry-on=nccl-timeout", "--max-restarts=2", ...),
 * NULL-terminated; NULL: none. say(say_arg, text), when not NULL, gets what
 * gpuctl run writes on stderr (whole lines: "gpuctl: retrying ...\n", a
 * failure's findings); the command's own output is this process's. GC_OK
 * with *json (free()): {"exit_code", "ran", "retries", "class", "attempts":
 * [{"gpus": [...], "ran", "exit_code", "class", "retry"}]}, whatever the
 * command's status; GC_ENOTNOW (too few GPUs fit now, and no --wait) or
 * GC_ETIMEDOUT with the reason in err; GC_EINVAL (a bad option, said in
 * err); another GC_E* with err.
 */
typedef void (*gc_say_fn)(void *arg, const char *text);
int gc_run_json(gc_ctx *ctx, const char *const *options, const char *const *argv, gc_say_fn say, void *say_arg,
		char **json, char *err, size_t errlen);

/*
 * Path of the simulator library for a driver generation ("modern", "r535",
 * "legacy", "r410"): $GPUCTL_SIM_LIBDIR, else next to the running binary in a
 * build tree, else the installed package library directory.
 */
int gc_sim_library(const char *generation, char *buf, size_t len);

/*
 * Render a snapshot as the documented JSON schema (docs/json.md), GPUs
 * selected by `which` (NULL = all), indented (pretty) or on one line.
 * Returns a string the caller frees with free(), or NULL when out of memory.
 */
char *gc_snapshot_json(const gc_snapshot *snap, const bool *which, const char *hostname, bool pretty);

/* nvidia-smi's name of a compute mode ("Default", "Exclusive_Process", ...) */
const char *gc_compute_mode_name(unsigned mode);

/* "12.4" in buf for NVML's CUDA driver version 12040; false, buf untouched, when v <= 0 (unknown) */
bool gc_cuda_version_str(int v, char *buf, size_t len);

/*
 * Xid errors, the driver's reports of GPU faults (NVML's critical error
 * events). gc_xid_watch starts listening on every GPU of ctx: GC_OK;
 * GC_ENOTFOUND when the driver has no event API or no GPU reports Xid
 * errors as events; another GC_E*; the message in gc_ctx_errmsg. Then
 * gc_xid_next waits at most timeout_ms (0: only looks) for the next one:
 * 1 with *gpu (NVML index) and *xid (999: one the driver could not name),
 * 0 when none came, a GC_E*. The watch ends with gc_ctx_free.
 */
int gc_xid_watch(gc_ctx *ctx);
int gc_xid_next(gc_ctx *ctx, int timeout_ms, unsigned *gpu, uint64_t *xid);

/* A value's name as the JSON "errors" object spells it ("power.draw_mw"), or NULL. */
const char *gc_value_name(unsigned v);

/* The NVML function a value comes from ("nvmlDeviceGetPowerUsage"; the
 * unversioned name), for error counts; NULL for an unknown value. */
const char *gc_value_source(unsigned v);

/* nvidia-smi's words for a non-OK status: "N/A", "GPU is lost", ... */
const char *gc_status_token(int st);

/* ---- Checkpoints that survive being killed (docs/checkpoints.md, `gpuctl ckpt`) ---- */

/*
 * Mark path (an entry of dir, file or directory; a bare name is taken inside
 * dir) complete: fsync it, record the commit durably, then repoint
 * dir/latest at it. Only committed entries count, so a checkpoint cut off
 * half-way is never the latest. GC_OK, or a GC_E* with a one-line message
 * in err (errlen bytes).
 */
int gc_ckpt_commit(const char *dir, const char *path, char *err, size_t errlen);
/* The newest complete checkpoint of dir as "DIR/NAME" in out (outlen bytes); GC_ENOTFOUND when none. */
int gc_ckpt_latest(const char *dir, char *out, size_t outlen, char *err, size_t errlen);
/* Delete the complete checkpoints beyond the keep (>= 1) newest; *removed (NULL: not asked) counts them.
 * Uncommitted entries are left alone: one may be being written. */
int gc_ckpt_prune(const char *dir, unsigned keep, size_t *removed, char *err, size_t errlen);
/* Every entry of dir as `gpuctl ckpt list --json` prints it, in *json (the caller frees it with free()). */
int gc_ckpt_list_json(const char *dir, char **json, char *err, size_t errlen);

/* ---- Spot notices (docs/spot.md): the watcher `gpuctl run --spot` polls ---- */

enum gc_cloud { GC_CLOUD_NONE, GC_CLOUD_AWS, GC_CLOUD_GCP, GC_CLOUD_AZURE };
enum gc_spot_kind {
	GC_SPOT_PREEMPT,  /* the VM will be reclaimed: checkpoint and stop */
	GC_SPOT_WARNING,  /* AWS rebalance recommendation; GCP/Azure maintenance that is no termination */
	GC_SPOT_ERROR,    /* the metadata service failed repeatedly: information only */
};

/* One notice. Fields are only ever added at the end: gc_spot_next copies as far as the caller's size. */
typedef struct gc_spot_event {
	int kind;             /* GC_SPOT_* */
	int cloud;            /* GC_CLOUD_* */
	int64_t notice_ms;    /* when the watcher saw it (ms since the epoch) */
	int64_t deadline_ms;  /* when the VM goes away, if the cloud says; else 0 */
	char action[32];      /* the cloud's word: "terminate", "preempted", "Preempt", ... */
	char detail[256];     /* more, for people (GC_SPOT_ERROR: what failed) */
	char id[128];         /* Azure's EventId (what gc_spot_ack approves); else "" */
} gc_spot_event;

/* Which cloud this machine runs on, from its DMI strings; GC_CLOUD_NONE when none or unreadable. */
int gc_spot_detect(void);
/* "none", "aws", "gcp", "azure"; NULL for a number that is none of them */
const char *gc_cloud_name(int cloud);

typedef struct gc_spot gc_spot;
/*
 * Watch cloud (GC_CLOUD_AWS, _GCP or _AZURE) for notices in a new thread;
 * base_url NULL: $GPUCTL_METADATA_URL, else the cloud's metadata address.
 * An unreachable metadata service is retried, never an error here. GC_OK
 * with *out set; free it with gc_spot_stop.
 */
int gc_spot_start(gc_spot **out, int cloud, const char *base_url, char *err, size_t errlen);
/* A descriptor that polls readable (POLLIN) while notices are queued; owned by the watcher. */
int gc_spot_fd(const gc_spot *w);
/* Take the oldest queued notice into *ev (size: sizeof(gc_spot_event)): 1, 0 when none (never blocks). */
int gc_spot_next(gc_spot *w, gc_spot_event *ev, size_t size);
/* Tell the cloud we are ready (Azure approves the event now); the others have nothing to approve: GC_OK. */
int gc_spot_ack(gc_spot *w, const gc_spot_event *ev, size_t size, char *err, size_t errlen);
/* Stop the thread and free the watcher; NULL is ignored. */
void gc_spot_stop(gc_spot *w);

/* ---- Explain a failed run's log (docs/explain.md, `gpuctl explain`) ---- */

/*
 * The known failures in a log, as `gpuctl explain --json` prints them
 * (schema gpuctl.explain/1): read from fd to its end (gc_explain_fd;
 * source NULL names it "stdin"), or from the len bytes at text
 * (gc_explain_text; "text"). *json is freed by the caller with free().
 * GC_OK (also when nothing is found: "findings" is empty); GC_ENOTFOUND
 * when the failure signatures are not installed; GC_EIO when fd cannot be
 * read; the message in err.
 */
int gc_explain_fd(int fd, const char *source, char **json, char *err, size_t errlen);
int gc_explain_text(const char *text, size_t len, const char *source, char **json, char *err, size_t errlen);

/* ---- Advise: the cheapest setups that fit a workload (docs/advise.md, `gpuctl advise`) ---- */

/*
 * The plans for a workload as `gpuctl advise --json` prints them (schema
 * gpuctl.advise/1): options are the options of `gpuctl advise`, as its
 * command line takes them ("--model", "llama-3-8b", "--task", "lora",
 * "--spot", or "--tokens=1B"; no --json or --help), NULL-terminated.
 * *json is freed by the caller with free(). GC_OK, also when nothing fits
 * ("feasible" is 0 and "smallest_feasible" says what would); GC_EINVAL for
 * a bad option or an impossible request (err names it); GC_ENOTFOUND or
 * GC_EIO when the GPU table or the price catalogs are missing or broken.
 */
int gc_advise_json(const char *const *options, char **json, char *err, size_t errlen);
/*
 * The same, with "--here" and "--here-price USD" answered on ctx's GPUs (this
 * machine beside the rentals, as `gpuctl advise --here --json` adds it under
 * "here": free now for the caller, the wait gpuctld's queue implies, or what
 * the machine lacks). ctx may be NULL when options ask nothing of this
 * machine; gc_advise_json refuses --here (GC_EINVAL).
 */
int gc_advise_here_json(gc_ctx *ctx, const char *const *options, char **json, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
