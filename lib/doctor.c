/*
 * doctor.c — the checks behind `gpuctl doctor` (see doctor.h). One function
 * per concern; each appends one check with a plain verdict, what was found
 * (with the numbers) and the concrete fix.
 */
#include "doctor.h"
#include "explain.h"
#include "visible.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *dr_status_name(enum dr_status s)
{
	switch (s) {
	case DR_OK: return "ok";
	case DR_WARN: return "warn";
	case DR_FAIL: return "fail";
	case DR_SKIP: return "skip";
	}
	return "?";
}

static struct dr_check *add(struct dr_report *r, const char *id, enum dr_status st)
{
	struct dr_check *p = realloc(r->checks, (r->n + 1) * sizeof *p);
	if (!p)
		return NULL;
	r->checks = p;
	struct dr_check *c = &r->checks[r->n++];
	memset(c, 0, sizeof *c);
	snprintf(c->id, sizeof c->id, "%s", id);
	c->status = st;
	return c;
}

static void say(char *dst, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *dst, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(dst, len, fmt, ap);
	va_end(ap);
}

#define FOUND(c, ...) say((c)->found, sizeof (c)->found, __VA_ARGS__)
#define FIX(c, ...) say((c)->fix, sizeof (c)->fix, __VA_ARGS__)

/* "0,3" of the GPUs whose flag is set */
static void gpu_list(const bool *set, size_t n, char *buf, size_t len)
{
	size_t off = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < n && off + 8 < len; i++)
		if (set[i])
			off += (size_t)snprintf(buf + off, len - off, "%s%zu", off ? "," : "", i);
}

static void check_driver(const gc_snapshot *s, const struct dr_env *e, struct dr_report *r)
{
	struct dr_check *c;
	if (e->open_rc != GC_OK) {
		if (!(c = add(r, "driver", DR_FAIL)))
			return;
		FOUND(c, "%s", e->open_msg && *e->open_msg ? e->open_msg : gc_strerror(e->open_rc));
		switch (e->open_rc) {
		case GC_EMISMATCH:
			FIX(c, "the driver was upgraded without a reboot: reboot, or stop everything using the "
			       "GPUs and reload the nvidia kernel modules");
			break;
		case GC_ENODRIVER:
			FIX(c, "load the driver: sudo modprobe nvidia (check dmesg for why it did not load)");
			break;
		case GC_ENOLIB:
			FIX(c, "install the NVIDIA driver (its user library is libnvidia-ml.so.1); in a container, "
			       "start it with --gpus all");
			break;
		default:
			FIX(c, "check dmesg and the permissions of /dev/nvidia*");
		}
		return;
	}
	if (!(c = add(r, "driver", s->ngpus ? DR_OK : DR_WARN)))
		return;
	char cuda[16] = "unknown";
	if (s->cuda_version > 0)
		snprintf(cuda, sizeof cuda, "%d.%d", s->cuda_version / 1000, (s->cuda_version % 1000) / 10);
	FOUND(c, "NVIDIA driver %s, supports CUDA up to %s, %zu GPU%s", s->driver_version[0] ? s->driver_version : "?",
	      cuda, s->ngpus, s->ngpus == 1 ? "" : "s");
	if (!s->ngpus)
		FIX(c, "the driver sees no GPU: check the card is seated and enabled, and dmesg");
}

static void check_visible(const gc_snapshot *s, const struct dr_env *e, struct dr_report *r)
{
	const char *cvd = e->cuda_visible_devices;
	const char *uuids[4096];
	size_t n = s ? (s->ngpus < 4096 ? s->ngpus : 4096) : 0;
	for (size_t i = 0; i < n; i++)
		uuids[i] = s->gpus[i].st[GC_V_UUID] == GC_ST_OK ? s->gpus[i].uuid : NULL;
	struct visible v;
	visible_parse(cvd, uuids, n, &v);
	struct dr_check *c = add(r, "env.cuda_visible_devices", DR_OK);
	if (!c)
		return;
	if (!cvd) {
		FOUND(c, "unset: CUDA sees all %zu GPUs", n);
	} else if (!*cvd) {
		c->status = DR_WARN;
		FOUND(c, "set but empty: CUDA sees no GPU at all");
		FIX(c, "unset it (all GPUs) or name the GPUs; gpuctl run sets it for each job");
	} else if (v.n == 0) {
		c->status = DR_FAIL;
		FOUND(c, "CUDA_VISIBLE_DEVICES='%s' leaves no GPU visible: entry %zu: %s", cvd, v.stop_at + 1,
		      visible_stop_reason(v.stop));
		FIX(c, "use indices 0-%zu or GPU UUIDs (gpuctl ls), each once, one form per list", n ? n - 1 : 0);
	} else if (v.stop != VISIBLE_STOP_NONE) {
		c->status = DR_WARN;
		FOUND(c, "CUDA_VISIBLE_DEVICES='%s': CUDA stops at entry %zu (%s) and sees only the %zu before it",
		      cvd, v.stop_at + 1, visible_stop_reason(v.stop), v.n);
		FIX(c, "remove or fix entry %zu", v.stop_at + 1);
	} else {
		FOUND(c, "CUDA_VISIBLE_DEVICES='%s': %zu GPU%s visible", cvd, v.n, v.n == 1 ? "" : "s");
	}
	/* indices mean "fastest first" unless CUDA_DEVICE_ORDER=PCI_BUS_ID: that differs from nvidia-smi's
	 * numbering only when the GPUs differ (CUDA breaks ties by PCI bus id) */
	bool mixed = false;
	for (size_t i = 1; i < n; i++)
		if (s->gpus[i].st[GC_V_NAME] == GC_ST_OK && strcmp(s->gpus[i].name, s->gpus[0].name) != 0)
			mixed = true;
	bool pci = e->cuda_device_order && strcmp(e->cuda_device_order, "PCI_BUS_ID") == 0;
	if (!(c = add(r, "env.cuda_device_order", DR_OK)))
		return;
	if (!pci && mixed && (v.form == VISIBLE_INDEX || v.form == VISIBLE_ALL)) {
		c->status = DR_WARN;
		FOUND(c, "CUDA_DEVICE_ORDER is %s and the GPUs are not all the same model: CUDA numbers them "
			 "fastest first, nvidia-smi and gpuctl by PCI bus, so cuda:0 may not be GPU 0",
		      e->cuda_device_order ? e->cuda_device_order : "unset");
		FIX(c, "export CUDA_DEVICE_ORDER=PCI_BUS_ID (gpuctl run does it for its jobs)");
	} else {
		FOUND(c, "%s", pci ? "PCI_BUS_ID: CUDA numbers GPUs as nvidia-smi does"
				   : mixed ? "GPUs named by UUID: the order does not matter"
					   : "all GPUs are the same model: CUDA's order is nvidia-smi's");
	}
}

static void check_env(const struct dr_env *e, struct dr_report *r)
{
	struct dr_check *c = add(r, "env.pytorch_alloc_conf", DR_OK);
	if (!c)
		return;
	if (!e->alloc_conf) {
		c->status = DR_WARN;
		FOUND(c, "PYTORCH_CUDA_ALLOC_CONF is unset: fragmentation can make PyTorch run out of memory with "
			 "memory to spare");
		FIX(c, "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True");
	} else {
		FOUND(c, "PYTORCH_CUDA_ALLOC_CONF=%s", e->alloc_conf);
	}
	if (!(c = add(r, "env.nccl", DR_OK)))
		return;
	const char *off = e->torch_nccl_async && strcmp(e->torch_nccl_async, "0") == 0 ? "TORCH_NCCL_ASYNC_ERROR_HANDLING"
			  : e->nccl_async && strcmp(e->nccl_async, "0") == 0 ? "NCCL_ASYNC_ERROR_HANDLING" : NULL;
	if (off) {
		c->status = DR_WARN;
		FOUND(c, "%s=0: when one rank dies the others wait for the NCCL timeout (30 minutes by default)", off);
		FIX(c, "export %s=1 and use a short init_process_group timeout; gpuctl run --hang-timeout stops a "
		       "hung job", off);
	} else {
		FOUND(c, "NCCL async error handling is not disabled");
	}
	if (!(c = add(r, "env.shm", DR_OK)))
		return;
	if (!e->in_container) {
		c->status = DR_SKIP;
		FOUND(c, "not in a container: /dev/shm is the host's");
	} else if (e->shm_bytes < 0) {
		c->status = DR_SKIP;
		FOUND(c, "cannot read the size of /dev/shm");
	} else if (e->shm_bytes < (int64_t)1 << 30) {
		c->status = DR_WARN;
		FOUND(c, "/dev/shm in this container is %lld MiB: NCCL and DataLoader workers die of bus errors",
		      (long long)(e->shm_bytes >> 20));
		FIX(c, "start the container with --shm-size=16g or --ipc=host");
	} else {
		FOUND(c, "/dev/shm in this container is %lld MiB", (long long)(e->shm_bytes >> 20));
	}
}

static void check_health(const gc_snapshot *s, struct dr_report *r)
{
	size_t n = s->ngpus;
	bool *flag = calloc(n ? n : 1, sizeof *flag);
	if (!flag)
		return;
	char list[512];
	struct dr_check *c;

	/* persistence mode */
	bool any = false, known = false;
	for (size_t i = 0; i < n; i++) {
		flag[i] = s->gpus[i].st[GC_V_PERSISTENCE] == GC_ST_OK && !s->gpus[i].persistence;
		known |= s->gpus[i].st[GC_V_PERSISTENCE] == GC_ST_OK;
		any |= flag[i];
	}
	gpu_list(flag, n, list, sizeof list);
	if ((c = add(r, "health.persistence", !known ? DR_SKIP : any ? DR_WARN : DR_OK))) {
		if (any) {
			FOUND(c, "persistence mode is off on GPU %s: each new CUDA process waits for the driver to "
				 "initialise the GPU, and settings such as power limits reset", list);
			FIX(c, "sudo nvidia-smi -pm 1, or run nvidia-persistenced");
		} else {
			FOUND(c, known ? "persistence mode is on" : "persistence mode is not reported");
		}
	}

	/* uncorrectable ECC errors */
	uint64_t worst = 0;
	any = false;
	known = false;
	for (size_t i = 0; i < n; i++) {
		const gc_gpu *g = &s->gpus[i];
		known |= g->st[GC_V_ECC_UNCORR_VOL] == GC_ST_OK;
		flag[i] = g->st[GC_V_ECC_UNCORR_VOL] == GC_ST_OK && g->ecc_uncorr_vol > 0;
		if (flag[i] && g->ecc_uncorr_vol > worst)
			worst = g->ecc_uncorr_vol;
		any |= flag[i];
	}
	gpu_list(flag, n, list, sizeof list);
	if ((c = add(r, "health.ecc", !known ? DR_SKIP : any ? DR_FAIL : DR_OK))) {
		if (any) {
			FOUND(c, "uncorrectable ECC errors since the driver loaded on GPU %s (up to %llu)", list,
			      (unsigned long long)worst);
			FIX(c, "drain those GPUs (gpuctl run --exclude %s), reset them (nvidia-smi -r -i N); if the "
			       "errors come back, the GPU needs service",
			    list);
		} else {
			FOUND(c, known ? "no uncorrectable ECC errors" : "ECC is not reported");
		}
	}

	/* throttling now */
	any = false;
	bool thermal = false;
	for (size_t i = 0; i < n; i++) {
		const gc_gpu *g = &s->gpus[i];
		flag[i] = g->st[GC_V_REASONS] == GC_ST_OK && (g->reasons & GC_REASONS_THROTTLING);
		thermal |= flag[i] && (g->reasons & (GC_REASON_HW_THERMAL | GC_REASON_SW_THERMAL |
						     GC_REASON_HW_SLOWDOWN | GC_REASON_HW_POWER_BRAKE));
		any |= flag[i];
	}
	gpu_list(flag, n, list, sizeof list);
	if ((c = add(r, "health.throttling", any ? DR_WARN : DR_OK))) {
		if (any) {
			FOUND(c, "GPU %s %s slowed down right now (%s)", list, strchr(list, ',') ? "are" : "is",
			      thermal ? "thermal or hardware slowdown" : "software power cap");
			FIX(c, thermal ? "check cooling and airflow (gpuctl ls shows temperatures; nvidia-smi -q -d "
					 "PERFORMANCE the reasons)"
				       : "a power cap at full load is normal; if the power limit was lowered, raise it "
					 "(nvidia-smi -pl)");
		} else {
			FOUND(c, "no GPU is throttled");
		}
	}

	/* PCIe link below its best while busy */
	any = false;
	char detail[200] = "";
	for (size_t i = 0; i < n; i++) {
		const gc_gpu *g = &s->gpus[i];
		bool ok = g->st[GC_V_PCIE_GEN] == GC_ST_OK && g->st[GC_V_PCIE_GEN_MAX] == GC_ST_OK &&
			  g->st[GC_V_PCIE_WIDTH] == GC_ST_OK && g->st[GC_V_PCIE_WIDTH_MAX] == GC_ST_OK &&
			  g->st[GC_V_UTIL_GPU] == GC_ST_OK;
		flag[i] = ok && g->util_gpu > 0 &&
			  (g->pcie_gen < g->pcie_gen_max || g->pcie_width < g->pcie_width_max);
		if (flag[i] && !any)
			snprintf(detail, sizeof detail, "GPU %zu at gen %u x%u of gen %u x%u", i, g->pcie_gen,
				 g->pcie_width, g->pcie_gen_max, g->pcie_width_max);
		any |= flag[i];
	}
	gpu_list(flag, n, list, sizeof list);
	if ((c = add(r, "health.pcie", any ? DR_WARN : DR_OK))) {
		if (any) {
			FOUND(c, "PCIe link below its best while busy on GPU %s (%s)", list, detail);
			FIX(c, "check the slot (a x16 card in a x8 slot), riser cables and BIOS PCIe settings");
		} else {
			FOUND(c, "busy GPUs run at their best PCIe link");
		}
	}

	/* memory in use with no process: a leaked context, or a process of another container */
	any = false;
	uint64_t leaked = 0;
	for (size_t i = 0; i < n; i++) {
		const gc_gpu *g = &s->gpus[i];
		flag[i] = g->st[GC_V_MEM_USED] == GC_ST_OK && g->st[GC_V_PROCS] == GC_ST_OK &&
			  g->st[GC_V_GPROCS] == GC_ST_OK && g->nprocs == 0 && g->mem_used >= (UINT64_C(1) << 30);
		if (flag[i] && g->mem_used > leaked)
			leaked = g->mem_used;
		any |= flag[i];
	}
	gpu_list(flag, n, list, sizeof list);
	if ((c = add(r, "health.leaked_memory", any ? DR_WARN : DR_OK))) {
		if (any) {
			FOUND(c, "GPU %s hold%s memory (up to %llu MiB) with no process attached", list,
			      strchr(list, ',') ? "" : "s", (unsigned long long)(leaked >> 20));
			FIX(c, "a process outside this PID namespace (another container) or a leaked context: look "
			       "with nvidia-smi on the host; a reset (nvidia-smi -r) frees it when nothing uses the GPU");
		} else {
			FOUND(c, "no GPU holds memory without a process");
		}
	}
	free(flag);
}

static void check_xid(const struct dr_env *e, struct dr_report *r)
{
	struct dr_check *c;
	if (!e->kernel_log) {
		if ((c = add(r, "health.xid", DR_SKIP)))
			FOUND(c, "the kernel log is not readable (run as root to check for Xid errors)");
		return;
	}
	struct ex_db *db = NULL;
	char err[512];
	if (!e->signatures_dir || ex_db_load(&db, e->signatures_dir, err, sizeof err) != GC_OK) {
		if ((c = add(r, "health.xid", DR_SKIP)))
			FOUND(c, "the Xid table is not available");
		return;
	}
	struct ex_result res;
	ex_scan_buf(db, e->kernel_log, e->kernel_log_len, &res);
	char list[400] = "";
	size_t off = 0;
	bool reset = false, any = false;
	for (size_t i = 0; i < res.n; i++) {
		const struct ex_finding *f = &res.findings[i];
		if (strcmp(f->id, "xid") != 0)
			continue;
		any = true;
		for (size_t k = 0; k < f->nvalues; k++)
			if (strcmp(f->values[k].name, "reset") == 0 && strncmp(f->values[k].str, "yes", 3) == 0)
				reset = true;
		if (off + 40 < sizeof list)
			off += (size_t)snprintf(list + off, sizeof list - off, "%sXid %s x%u", off ? ", " : "", f->key,
						f->count);
	}
	if ((c = add(r, "health.xid", !any ? DR_OK : reset ? DR_FAIL : DR_WARN))) {
		if (any) {
			FOUND(c, "the kernel log has %s", list);
			FIX(c, "gpuctl explain on the kernel log (dmesg | gpuctl explain) says what each means%s",
			    reset ? "; at least one needs a GPU reset" : "");
		} else {
			FOUND(c, "no Xid errors in the kernel log");
		}
	}
	ex_result_free(&res);
	ex_db_free(db);
}

int dr_run(const gc_snapshot *snap, const struct dr_env *env, struct dr_report *r)
{
	memset(r, 0, sizeof *r);
	check_driver(snap, env, r);
	check_visible(env->open_rc == GC_OK ? snap : NULL, env, r);
	check_env(env, r);
	if (snap && env->open_rc == GC_OK)
		check_health(snap, r);
	check_xid(env, r);
	return r->checks ? GC_OK : GC_ENOMEM;
}

void dr_report_free(struct dr_report *r)
{
	free(r->checks);
	memset(r, 0, sizeof *r);
}
