/*
 * doctor.c — the checks behind `gpuctl doctor` (see doctor.h). One function
 * per concern; each appends one check with a plain verdict, what was found
 * (with the numbers) and the concrete fix.
 */
#include "diagnose/doctor.h"
#include "diagnose/explain.h"
#include "jobs/select.h"
#include "jobs/torchenv.h"
#include "jobs/visible.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *doctor_status_name(enum doctor_status s)
{
	switch (s) {
	case DOCTOR_OK: return "ok";
	case DOCTOR_WARN: return "warn";
	case DOCTOR_FAIL: return "fail";
	case DOCTOR_SKIP: return "skip";
	}
	return "?";
}

static struct doctor_check *add(struct doctor_report *r, const char *id, enum doctor_status st)
{
	struct doctor_check *p = realloc(r->checks, (r->n + 1) * sizeof *p);
	if (!p)
		return NULL;
	r->checks = p;
	struct doctor_check *c = &r->checks[r->n++];
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

static void check_driver(const gc_snapshot *s, const struct doctor_env *e, struct doctor_report *r)
{
	struct doctor_check *c;
	if (e->open_rc != GC_OK) {
		if (!(c = add(r, "driver", DOCTOR_FAIL)))
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
	if (!(c = add(r, "driver", s->ngpus ? DOCTOR_OK : DOCTOR_WARN)))
		return;
	char cuda[16] = "unknown";
	gc_cuda_version_str(s->cuda_version, cuda, sizeof cuda);
	FOUND(c, "NVIDIA driver %s, supports CUDA up to %s, %zu GPU%s", s->driver_version[0] ? s->driver_version : "?",
	      cuda, s->ngpus, s->ngpus == 1 ? "" : "s");
	if (!s->ngpus)
		FIX(c, "the driver sees no GPU: check the card is seated and enabled, and dmesg");
}

/* append to a check's text what was already written */
static void more(char *dst, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void more(char *dst, size_t len, const char *fmt, ...)
{
	size_t off = strlen(dst);
	if (off + 1 >= len)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(dst + off, len - off, fmt, ap);
	va_end(ap);
}

#define MORE(c, ...) more((c)->found, sizeof (c)->found, __VA_ARGS__)

/* why value v of g cannot be read, in nvidia-smi's words ("GPU is lost") */
static const char *unread_why(const gc_gpu *g, unsigned v)
{
	return g->lost && g->st[v] != GC_ST_OK ? gc_status_token(GC_ST_GPU_LOST) : gc_status_token(g->st[v]);
}

static void check_visible(const gc_snapshot *s, const struct doctor_env *e, struct doctor_report *r)
{
	const char *cvd = e->cuda_visible_devices;
	const char *uuids[4096];
	size_t n = s ? (s->ngpus < 4096 ? s->ngpus : 4096) : 0;
	/* the first GPU whose UUID (or name) cannot be read: a list may name it */
	size_t no_uuid = n, no_name = n;
	for (size_t i = 0; i < n; i++) {
		uuids[i] = s->gpus[i].st[GC_V_UUID] == GC_ST_OK ? s->gpus[i].uuid : NULL;
		if (!uuids[i] && no_uuid == n)
			no_uuid = i;
		if (s->gpus[i].st[GC_V_NAME] != GC_ST_OK && no_name == n)
			no_name = i;
	}
	struct visible v;
	visible_parse(cvd, uuids, n, &v);
	struct doctor_check *c = add(r, "env.cuda_visible_devices", DOCTOR_OK);
	if (!c)
		return;
	if (cvd && !*cvd) {
		c->status = DOCTOR_WARN;
		FOUND(c, "set but empty: CUDA sees no GPU at all");
		FIX(c, "unset it (all GPUs) or name the GPUs; gpuctl run sets it for each job");
	} else if (!s) {
		/* nothing to count or match the list against */
		c->status = DOCTOR_SKIP;
		if (!cvd)
			FOUND(c, "unset: CUDA sees every GPU the driver shows; without a driver there are none to count");
		else
			FOUND(c, "CUDA_VISIBLE_DEVICES='%s' cannot be checked without a driver: no GPUs to match it against",
			      cvd);
	} else if (!cvd) {
		if (n == 1)
			FOUND(c, "unset: CUDA sees the only GPU");
		else
			FOUND(c, "unset: CUDA sees all %zu GPUs", n);
	} else if ((v.stop == VISIBLE_STOP_NOMATCH || v.stop == VISIBLE_STOP_AMBIGUOUS) && no_uuid < n) {
		c->status = DOCTOR_SKIP;
		FOUND(c, "CUDA_VISIBLE_DEVICES='%s': entry %zu %s, but the UUID of GPU %zu is not known (%s): "
			 "cannot tell which GPUs CUDA sees",
		      cvd, v.stop_at + 1,
		      v.stop == VISIBLE_STOP_NOMATCH ? "matches no GPU's UUID" : "matches more than one GPU's UUID",
		      no_uuid, unread_why(&s->gpus[no_uuid], GC_V_UUID));
	} else if (v.n == 0) {
		c->status = DOCTOR_FAIL;
		FOUND(c, "CUDA_VISIBLE_DEVICES='%s' leaves no GPU visible: entry %zu: %s", cvd, v.stop_at + 1,
		      visible_stop_reason(v.stop));
		FIX(c, "use indices 0-%zu or GPU UUIDs (gpuctl ls), each once, one form per list", n ? n - 1 : 0);
	} else if (v.stop != VISIBLE_STOP_NONE) {
		c->status = DOCTOR_WARN;
		FOUND(c, "CUDA_VISIBLE_DEVICES='%s': CUDA stops at entry %zu (%s) and sees only the %zu before it",
		      cvd, v.stop_at + 1, visible_stop_reason(v.stop), v.n);
		FIX(c, "remove or fix entry %zu", v.stop_at + 1);
	} else {
		FOUND(c, "CUDA_VISIBLE_DEVICES='%s': %zu GPU%s visible", cvd, v.n, v.n == 1 ? "" : "s");
	}
	/*
	 * indices mean "fastest first" unless CUDA_DEVICE_ORDER=PCI_BUS_ID: that differs from nvidia-smi's
	 * numbering only when the GPUs differ (CUDA breaks ties by PCI bus id). Models are compared only
	 * where they are known; one that is not known leaves the question open.
	 */
	bool mixed = false;
	const char *first = NULL;
	for (size_t i = 0; i < n; i++) {
		if (s->gpus[i].st[GC_V_NAME] != GC_ST_OK)
			continue;
		if (!first)
			first = s->gpus[i].name;
		else if (strcmp(s->gpus[i].name, first) != 0)
			mixed = true;
	}
	bool pci = e->cuda_device_order && strcmp(e->cuda_device_order, "PCI_BUS_ID") == 0;
	if (!(c = add(r, "env.cuda_device_order", DOCTOR_OK)))
		return;
	if (pci) {
		FOUND(c, "PCI_BUS_ID: CUDA numbers GPUs as nvidia-smi does");
	} else if (!s) {
		c->status = DOCTOR_SKIP;
		FOUND(c, "CUDA_DEVICE_ORDER is %s; without a driver the GPUs' models are not known, so whether CUDA's "
			 "order is nvidia-smi's cannot be told", e->cuda_device_order ? e->cuda_device_order : "unset");
	} else if (v.form == VISIBLE_UUID || v.form == VISIBLE_MIG) {
		FOUND(c, "GPUs named by UUID: the order does not matter");
	} else if (v.form == VISIBLE_NONE) {
		FOUND(c, "CUDA_VISIBLE_DEVICES names no GPU by index: CUDA's numbering does not matter");
	} else if (mixed) {
		c->status = DOCTOR_WARN;
		FOUND(c, "CUDA_DEVICE_ORDER is %s and the GPUs are not all the same model: CUDA numbers them "
			 "fastest first, nvidia-smi and gpuctl by PCI bus, so cuda:0 may not be GPU 0",
		      e->cuda_device_order ? e->cuda_device_order : "unset");
		FIX(c, "export CUDA_DEVICE_ORDER=PCI_BUS_ID (gpuctl run does it for its jobs)");
	} else if (no_name < n) {
		c->status = DOCTOR_SKIP;
		FOUND(c, "GPU %zu's model is not known (%s): cannot tell whether all GPUs are the same model, so "
			 "whether CUDA's order is nvidia-smi's", no_name, unread_why(&s->gpus[no_name], GC_V_NAME));
	} else {
		FOUND(c, "all GPUs are the same model: CUDA's order is nvidia-smi's");
	}
}

static int probe_line(const char *out, const char *fw, char f[4][64], char *msg, size_t ml);

/* the launcher's PyTorch, when its probe read it */
static bool launcher_torch(const struct doctor_env *e, struct torchenv *t)
{
	return e->launcher && e->launcher_python && e->launcher_rc == 0 && torchenv_parse(e->launcher_out, t) == 0;
}

/*
 * PYTORCH_CUDA_ALLOC_CONF against the PyTorch that would read it: python3's (or --python's) and the
 * launcher's. expandable_segments helps from 2.1 and breaks anything older.
 */
static void check_alloc_conf(const struct doctor_env *e, struct doctor_report *r)
{
	struct doctor_check *c = add(r, "env.pytorch_alloc_conf", DOCTOR_OK);
	if (!c)
		return;
	const char *py = e->python ? e->python : "python3";
	char f[4][64] = {{0}}, msg[8], old[300] = "", who[200];
	bool old_cuda = false, new_known = false;
	struct torchenv t;
	if (e->python_rc == 0 && probe_line(e->python_out, "torch", f, msg, sizeof msg) == 1) {
		memset(&t, 0, sizeof t);
		if (!torchenv_version(f[0], &t.major, &t.minor))
			t.major = t.minor = -1;
		if (torchenv_before_expandable(&t)) {
			snprintf(old, sizeof old, "PyTorch %s (%s)", f[0], py);
			old_cuda = strcmp(f[1], "-") != 0;
		}
		new_known |= torchenv_has_expandable(&t);
	}
	if (launcher_torch(e, &t)) {
		snprintf(who, sizeof who, "%s's %s", e->launcher_is_torchrun ? "torchrun" : "gpuctl launch",
			 e->launcher_python);
		if (torchenv_before_expandable(&t) && !old[0])
			snprintf(old, sizeof old, "PyTorch %s (%s)", t.version, who);
		new_known |= torchenv_has_expandable(&t);
	}
	if (e->alloc_conf && torchenv_conf_expandable(e->alloc_conf) && old[0]) {
		/* the CPU build never reaches the CUDA allocator; the launcher's build is not known */
		c->status = old_cuda ? DOCTOR_FAIL : DOCTOR_WARN;
		FOUND(c, "PYTORCH_CUDA_ALLOC_CONF=%s, but %s is older than 2.1 and does not know expandable_segments: "
			 "%s fails at the first CUDA allocation with 'RuntimeError: Unrecognized CachingAllocator "
			 "option: expandable_segments'", e->alloc_conf, old, old_cuda ? "it" : "a CUDA build of it");
		FIX(c, "unset PYTORCH_CUDA_ALLOC_CONF (or take expandable_segments out of it), or upgrade PyTorch to "
		       "2.1 or newer; gpuctl launch sets it only for PyTorch 2.1 and newer");
	} else if (e->alloc_conf) {
		FOUND(c, "PYTORCH_CUDA_ALLOC_CONF=%s", e->alloc_conf);
	} else if (old[0] && !new_known) {
		FOUND(c, "PYTORCH_CUDA_ALLOC_CONF is unset: right for %s, which does not know expandable_segments "
			 "(PyTorch 2.1 and newer do)", old);
	} else {
		c->status = DOCTOR_WARN;
		FOUND(c, "PYTORCH_CUDA_ALLOC_CONF is unset: fragmentation can make PyTorch run out of memory with "
			 "memory to spare");
		if (old[0])
			FIX(c, "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True for PyTorch 2.1 and newer only: "
			       "%s fails on it", old);
		else
			FIX(c, "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (PyTorch 2.1 and newer; older "
			       "versions fail on it)");
	}
}

static void check_env(const struct doctor_env *e, struct doctor_report *r)
{
	struct doctor_check *c;
	check_alloc_conf(e, r);
	if (!(c = add(r, "env.nccl", DOCTOR_OK)))
		return;
	const char *off = e->torch_nccl_async && strcmp(e->torch_nccl_async, "0") == 0 ? "TORCH_NCCL_ASYNC_ERROR_HANDLING"
			  : e->nccl_async && strcmp(e->nccl_async, "0") == 0 ? "NCCL_ASYNC_ERROR_HANDLING" : NULL;
	if (off) {
		c->status = DOCTOR_WARN;
		FOUND(c, "%s=0: when one rank dies the others wait for the NCCL timeout (30 minutes by default)", off);
		FIX(c, "export %s=1 and use a short init_process_group timeout; gpuctl run --hang-timeout stops a "
		       "hung job", off);
	} else {
		FOUND(c, "NCCL async error handling is not disabled");
	}
	if (!(c = add(r, "env.shm", DOCTOR_OK)))
		return;
	if (!e->in_container) {
		c->status = DOCTOR_SKIP;
		FOUND(c, "not in a container: /dev/shm is the host's");
	} else if (e->shm_bytes < 0) {
		c->status = DOCTOR_SKIP;
		FOUND(c, "cannot read the size of /dev/shm");
	} else if (e->shm_bytes < (int64_t)1 << 30) {
		c->status = DOCTOR_WARN;
		FOUND(c, "/dev/shm in this container is %lld MiB: NCCL and DataLoader workers die of bus errors",
		      (long long)(e->shm_bytes >> 20));
		FIX(c, "start the container with --shm-size=16g or --ipc=host");
	} else {
		FOUND(c, "/dev/shm in this container is %lld MiB", (long long)(e->shm_bytes >> 20));
	}
}

/*
 * Which GPUs a per-GPU check can look at. A GPU whose values (mask) all read
 * can be checked (ok[i]); one where a value is not supported has nothing to
 * check; one where a value could not be read (lost, no permission, ...) is
 * not checked, and says so: a check never passes on a value it did not get.
 */
struct gpu_scope {
	bool *ok, *unread;
	size_t nok, nunread;
	const char *why;      /* why the first unread GPU could not be read */
};

enum { READ_OK, READ_UNSUPPORTED, READ_ERROR };

static int read_state(const gc_gpu *g, uint64_t mask)
{
	int st = READ_OK;
	for (unsigned v = 0; v < GC_V__COUNT; v++) {
		if (!(mask & GC_BIT(v)) || g->st[v] == GC_ST_OK)
			continue;
		if (g->st[v] != GC_ST_NOT_SUPPORTED)
			return READ_ERROR;
		st = READ_UNSUPPORTED;
	}
	return st;
}

/* the first value of mask that g could not read, for unread_why */
static unsigned first_unread(const gc_gpu *g, uint64_t mask)
{
	for (unsigned v = 0; v < GC_V__COUNT; v++)
		if ((mask & GC_BIT(v)) && g->st[v] != GC_ST_OK && g->st[v] != GC_ST_NOT_SUPPORTED)
			return v;
	return 0;
}

/* one GPU: either of two value sets (a check that takes what the GPU has), or just the first (mask2 0) */
static void scope_add(struct gpu_scope *sc, const gc_gpu *g, size_t i, uint64_t mask, uint64_t mask2)
{
	int a = read_state(g, mask), b = mask2 ? read_state(g, mask2) : READ_UNSUPPORTED;
	sc->ok[i] = a == READ_OK || b == READ_OK;
	sc->unread[i] = !sc->ok[i] && (a == READ_ERROR || b == READ_ERROR);
	sc->nok += sc->ok[i];
	if (sc->unread[i] && !sc->nunread++)
		sc->why = unread_why(g, first_unread(g, a == READ_ERROR ? mask : mask2));
}

static void scope_reset(struct gpu_scope *sc, size_t n)
{
	memset(sc->ok, 0, (n ? n : 1) * sizeof *sc->ok);
	memset(sc->unread, 0, (n ? n : 1) * sizeof *sc->unread);
	sc->nok = sc->nunread = 0;
	sc->why = "";
}

/* the scope of a check where the GPUs have one value set */
static void scope_of(struct gpu_scope *sc, const gc_snapshot *s, uint64_t mask)
{
	scope_reset(sc, s->ngpus);
	for (size_t i = 0; i < s->ngpus; i++)
		scope_add(sc, &s->gpus[i], i, mask, 0);
}

/*
 * A check's verdict once its findings are written (status WARN or FAIL) or
 * none were: unread GPUs are named after the finding; with no finding the
 * check is ok only when every GPU that has the values was read, and skipped
 * when a GPU could not be read or none has them.
 */
static void scope_verdict(struct doctor_check *c, const struct gpu_scope *sc, size_t n, const char *good,
			  const char *unreported)
{
	char list[512];
	select_index_list(sc->unread, n, list, sizeof list);
	if (c->status == DOCTOR_WARN || c->status == DOCTOR_FAIL) {
		if (sc->nunread)
			MORE(c, "; GPU %s not checked (%s)", list, sc->why);
	} else if (sc->nunread) {
		c->status = DOCTOR_SKIP;
		FOUND(c, "GPU %s not checked (%s)", list, sc->why);
		if (sc->nok)
			MORE(c, "; the others: %s", good);
	} else if (!sc->nok) {
		c->status = DOCTOR_SKIP;
		FOUND(c, "%s", unreported);
	} else {
		c->status = DOCTOR_OK;
		FOUND(c, "%s", good);
	}
}

static void check_lost(const gc_snapshot *s, struct doctor_report *r)
{
	size_t n = s->ngpus;
	bool *lost = calloc(n ? n : 1, sizeof *lost), *reset = calloc(n ? n : 1, sizeof *reset);
	struct doctor_check *c;
	if (!lost || !reset)
		goto out;
	size_t nlost = 0, nreset = 0, one = 0;
	for (size_t i = 0; i < n; i++) {
		const gc_gpu *g = &s->gpus[i];
		if (!select_gpu_lost(g))
			continue;
		one = i;
		bool gone = g->lost;
		for (unsigned v = 0; v < GC_V__COUNT; v++)
			gone |= g->st[v] == GC_ST_GPU_LOST;
		if (gone)
			lost[i] = true, nlost++;
		else
			reset[i] = true, nreset++;
	}
	if (!(c = add(r, "health.lost", nlost + nreset ? DOCTOR_FAIL : DOCTOR_OK)))
		goto out;
	if (!nlost && !nreset) {
		FOUND(c, "no GPU is lost");
		goto out;
	}
	char list[512], all[512], idx[32];
	if (nlost) {
		select_index_list(lost, n, list, sizeof list);
		FOUND(c, "GPU %s %s lost: NVML answers GPU_IS_LOST (the GPU has fallen off the bus, Xid 79 in the "
			 "kernel log)", list, nlost == 1 ? "is" : "are");
	}
	if (nreset) {
		select_index_list(reset, n, list, sizeof list);
		MORE(c, "%sGPU %s need%s a reset: NVML answers RESET_REQUIRED", nlost ? "; " : "", list,
		     nreset == 1 ? "s" : "");
	}
	for (size_t i = 0; i < n; i++)
		lost[i] |= reset[i];
	select_index_list(lost, n, all, sizeof all);
	if (nlost + nreset == 1)
		snprintf(idx, sizeof idx, "%zu", one);
	else
		snprintf(idx, sizeof idx, "N");
	FIX(c, "keep jobs off it (gpuctl picks no lost GPU; --exclude %s for other tools); read the kernel log "
	       "for Xid 79 (dmesg | gpuctl explain); when nothing uses it, reset it (sudo nvidia-smi -r -i %s%s) "
	       "or reboot the node; if it falls off again, check its power, cooling, seating and PCIe riser",
	    all, idx, nlost + nreset == 1 ? "" : ", one GPU at a time");
out:
	free(lost);
	free(reset);
}

static void check_health(const gc_snapshot *s, struct doctor_report *r)
{
	size_t n = s->ngpus;
	bool *flag = calloc(n ? n : 1, sizeof *flag);
	struct gpu_scope sc = {calloc(n ? n : 1, sizeof *sc.ok), calloc(n ? n : 1, sizeof *sc.unread), 0, 0, ""};
	bool *failed = calloc(n ? n : 1, sizeof *failed);
	if (!flag || !sc.ok || !sc.unread || !failed)
		goto out;
	char list[512];
	struct doctor_check *c;
	bool any;

	check_lost(s, r);

	/* persistence mode */
	scope_of(&sc, s, GC_BIT(GC_V_PERSISTENCE));
	any = false;
	for (size_t i = 0; i < n; i++) {
		flag[i] = sc.ok[i] && !s->gpus[i].persistence;
		any |= flag[i];
	}
	select_index_list(flag, n, list, sizeof list);
	if ((c = add(r, "health.persistence", any ? DOCTOR_WARN : DOCTOR_OK))) {
		if (any) {
			FOUND(c, "persistence mode is off on GPU %s: each new CUDA process waits for the driver to "
				 "initialise the GPU, and settings such as power limits reset", list);
			FIX(c, "sudo nvidia-smi -pm 1, or run nvidia-persistenced");
		}
		scope_verdict(c, &sc, n, "persistence mode is on", "persistence mode is not reported");
	}

	/* uncorrectable ECC errors */
	uint64_t worst = 0;
	scope_of(&sc, s, GC_BIT(GC_V_ECC_UNCORR_VOL));
	any = false;
	for (size_t i = 0; i < n; i++) {
		const gc_gpu *g = &s->gpus[i];
		flag[i] = sc.ok[i] && g->ecc_uncorr_vol > 0;
		if (flag[i] && g->ecc_uncorr_vol > worst)
			worst = g->ecc_uncorr_vol;
		any |= flag[i];
	}
	select_index_list(flag, n, list, sizeof list);
	if ((c = add(r, "health.ecc", any ? DOCTOR_FAIL : DOCTOR_OK))) {
		if (any) {
			FOUND(c, "uncorrectable ECC errors since the driver loaded on GPU %s (up to %llu)", list,
			      (unsigned long long)worst);
			FIX(c, "drain those GPUs (gpuctl run --exclude %s), reset them (nvidia-smi -r -i N); if the "
			       "errors come back, the GPU needs service",
			    list);
		}
		scope_verdict(c, &sc, n, "no uncorrectable ECC errors", "ECC is not reported");
	}

	/*
	 * memory repairs waiting for a reset: remapped rows (Ampere and newer),
	 * retired pages (Kepler to Turing); a failed remapping cannot be repaired.
	 * A GPU is checked when it reports either.
	 */
	bool any_failed = false;
	unsigned rows = 0;
	any = false;
	scope_reset(&sc, n);
	for (size_t i = 0; i < n; i++) {
		const gc_gpu *g = &s->gpus[i];
		scope_add(&sc, g, i, GC_BIT(GC_V_REMAPPED_ROWS), GC_BIT(GC_V_RETIRED_PENDING));
		bool remap = g->st[GC_V_REMAPPED_ROWS] == GC_ST_OK;
		bool retired = g->st[GC_V_RETIRED_PENDING] == GC_ST_OK;
		failed[i] = remap && g->remap_failure;
		flag[i] = !failed[i] && ((remap && g->remap_pending) || (retired && g->retired_pending));
		if (failed[i])
			rows += g->remap_uncorr;
		any_failed |= failed[i];
		any |= flag[i];
	}
	if ((c = add(r, "health.remapped_rows", any_failed ? DOCTOR_FAIL : any ? DOCTOR_WARN : DOCTOR_OK))) {
		if (any_failed) {
			select_index_list(failed, n, list, sizeof list);
			FOUND(c, "a memory row remapping has failed on GPU %s (%u rows remapped for uncorrectable "
				 "errors): its memory can no longer be repaired", list, rows);
			FIX(c, "drain the GPU (gpuctl run --exclude %s) and have it serviced", list);
		} else if (any) {
			select_index_list(flag, n, list, sizeof list);
			FOUND(c, "GPU %s %s memory repairs pending (remapped rows or retired pages): they take effect "
				 "at the next GPU reset",
			      list, strchr(list, ',') ? "have" : "has");
			FIX(c, "when nothing runs on it, reset the GPU (sudo nvidia-smi -r -i N) or reboot");
		}
		scope_verdict(c, &sc, n, "no remapped rows or retired pages pending",
			      "row remapping and page retirement are not reported");
	}

	/* throttling now */
	scope_of(&sc, s, GC_BIT(GC_V_REASONS));
	any = false;
	bool thermal = false;
	for (size_t i = 0; i < n; i++) {
		const gc_gpu *g = &s->gpus[i];
		flag[i] = sc.ok[i] && (g->reasons & GC_REASONS_THROTTLING);
		thermal |= flag[i] && (g->reasons & (GC_REASON_HW_THERMAL | GC_REASON_SW_THERMAL |
						     GC_REASON_HW_SLOWDOWN | GC_REASON_HW_POWER_BRAKE));
		any |= flag[i];
	}
	select_index_list(flag, n, list, sizeof list);
	if ((c = add(r, "health.throttling", any ? DOCTOR_WARN : DOCTOR_OK))) {
		if (any) {
			FOUND(c, "GPU %s %s slowed down right now (%s)", list, strchr(list, ',') ? "are" : "is",
			      thermal ? "thermal or hardware slowdown" : "software power cap");
			FIX(c, thermal ? "check cooling and airflow (gpuctl ls shows temperatures; nvidia-smi -q -d "
					 "PERFORMANCE the reasons)"
				       : "a power cap at full load is normal; if the power limit was lowered, raise it "
					 "(nvidia-smi -pl)");
		}
		scope_verdict(c, &sc, n, "no GPU is throttled", "throttle reasons are not reported");
	}

	/* PCIe link below its best while busy */
	scope_of(&sc, s, GC_BIT(GC_V_PCIE_GEN) | GC_BIT(GC_V_PCIE_GEN_MAX) | GC_BIT(GC_V_PCIE_WIDTH) |
				 GC_BIT(GC_V_PCIE_WIDTH_MAX) | GC_BIT(GC_V_UTIL_GPU));
	any = false;
	char detail[200] = "";
	for (size_t i = 0; i < n; i++) {
		const gc_gpu *g = &s->gpus[i];
		flag[i] = sc.ok[i] && g->util_gpu > 0 &&
			  (g->pcie_gen < g->pcie_gen_max || g->pcie_width < g->pcie_width_max);
		if (flag[i] && !any)
			snprintf(detail, sizeof detail, "GPU %zu at gen %u x%u of gen %u x%u", i, g->pcie_gen,
				 g->pcie_width, g->pcie_gen_max, g->pcie_width_max);
		any |= flag[i];
	}
	select_index_list(flag, n, list, sizeof list);
	if ((c = add(r, "health.pcie", any ? DOCTOR_WARN : DOCTOR_OK))) {
		if (any) {
			FOUND(c, "PCIe link below its best while busy on GPU %s (%s)", list, detail);
			FIX(c, "check the slot (a x16 card in a x8 slot), riser cables and BIOS PCIe settings");
		}
		scope_verdict(c, &sc, n, "busy GPUs run at their best PCIe link",
			      "the PCIe link or the utilization is not reported");
	}

	/* memory in use with no process: a leaked context, or a process of another container */
	scope_of(&sc, s, GC_BIT(GC_V_MEM_USED) | GC_BIT(GC_V_PROCS) | GC_BIT(GC_V_GPROCS));
	any = false;
	uint64_t leaked = 0;
	for (size_t i = 0; i < n; i++) {
		const gc_gpu *g = &s->gpus[i];
		flag[i] = sc.ok[i] && g->nprocs == 0 && g->mem_used >= (UINT64_C(1) << 30);
		if (flag[i] && g->mem_used > leaked)
			leaked = g->mem_used;
		any |= flag[i];
	}
	select_index_list(flag, n, list, sizeof list);
	if ((c = add(r, "health.leaked_memory", any ? DOCTOR_WARN : DOCTOR_OK))) {
		if (any) {
			FOUND(c, "GPU %s hold%s memory (up to %llu MiB) with no process attached", list,
			      strchr(list, ',') ? "" : "s", (unsigned long long)(leaked >> 20));
			FIX(c, "a process outside this PID namespace (another container) or a leaked context: look "
			       "with nvidia-smi on the host; a reset (nvidia-smi -r) frees it when nothing uses the GPU");
		}
		scope_verdict(c, &sc, n, "no GPU holds memory without a process",
			      "the memory used or the process list is not reported");
	}
out:
	free(flag);
	free(sc.ok);
	free(sc.unread);
	free(failed);
}

static void check_xid(const struct doctor_env *e, struct doctor_report *r)
{
	struct doctor_check *c;
	if (!e->kernel_log) {
		if ((c = add(r, "health.xid", DOCTOR_SKIP)))
			FOUND(c, "the kernel log is not readable (run as root to check for Xid errors)");
		return;
	}
	struct explain_db *db = NULL;
	char err[512];
	if (!e->signatures_dir || explain_db_load(&db, e->signatures_dir, err, sizeof err) != GC_OK) {
		if ((c = add(r, "health.xid", DOCTOR_SKIP)))
			FOUND(c, "the Xid table is not available");
		return;
	}
	struct explain_result res;
	explain_scan_buf(db, e->kernel_log, e->kernel_log_len, &res);
	char list[400] = "";
	size_t off = 0;
	bool reset = false, any = false;
	for (size_t i = 0; i < res.n; i++) {
		const struct explain_finding *f = &res.findings[i];
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
	if ((c = add(r, "health.xid", !any ? DOCTOR_OK : reset ? DOCTOR_FAIL : DOCTOR_WARN))) {
		if (any) {
			FOUND(c, "the kernel log has %s", list);
			FIX(c, "gpuctl explain on the kernel log (dmesg | gpuctl explain) says what each means%s",
			    reset ? "; at least one needs a GPU reset" : "");
		} else {
			FOUND(c, "no Xid errors in the kernel log");
		}
	}
	explain_result_free(&res);
	explain_db_free(db);
}

/* ---- the CUDA stack: toolkit, PyTorch, TensorFlow against the driver ---- */

const char DOCTOR_PY_PROBE[] =
	"import sys\n"
	"try:\n"
	"    import torch\n"
	"    a = torch.cuda.is_available()\n"
	"    print('torch', torch.__version__, torch.version.cuda or '-', int(a), torch.cuda.device_count() if a else 0)\n"
	"except ImportError:\n"
	"    print('torch -')\n"
	"except Exception as e:\n"
	"    print('torch-error', str(e).replace('\\n', ' ')[:200])\n"
	"try:\n"
	"    import tensorflow as tf\n"
	"    b = tf.sysconfig.get_build_info()\n"
	"    print('tensorflow', tf.__version__, b.get('cuda_version') or '-', 1, len(tf.config.list_physical_devices('GPU')))\n"
	"except ImportError:\n"
	"    print('tensorflow -')\n"
	"except Exception as e:\n"
	"    print('tensorflow-error', str(e).replace('\\n', ' ')[:200])\n";

/* "12.4" / "12.4.131" -> 12, 4. false when not a version */
static bool cuda_ver(const char *v, int *maj, int *min)
{
	char *end;
	if (!v || *v < '0' || *v > '9')
		return false;
	long a = strtol(v, &end, 10);
	if (*end != '.' || end[1] < '0' || end[1] > '9')
		return false;
	long b = strtol(end + 1, &end, 10);
	if (a > 99 || b > 99)
		return false;
	*maj = (int)a;
	*min = (int)b;
	return true;
}

/* compare driver versions "535.54.03" field by field; <0, 0, >0 */
static int drv_cmp(const char *a, const char *b)
{
	for (int i = 0; i < 4; i++) {
		char *ea, *eb;
		long x = strtol(a, &ea, 10), y = strtol(b, &eb, 10);
		if (x != y)
			return x < y ? -1 : 1;
		a = *ea == '.' ? ea + 1 : ea;
		b = *eb == '.' ? eb + 1 : eb;
	}
	return 0;
}

/* the table's minimum driver for "maj.min" (or "maj.x"); false when not listed */
static bool compat_min(const char *csv, int maj, int min, bool minor_compat, char *out, size_t len)
{
	char key[16];
	if (minor_compat)
		snprintf(key, sizeof key, "%d.x,", maj);
	else
		snprintf(key, sizeof key, "%d.%d,", maj, min);
	size_t kl = strlen(key);
	for (const char *l = csv; l && *l;) {
		const char *nl = strchr(l, '\n');
		size_t ll = nl ? (size_t)(nl - l) : strlen(l);
		if (ll > kl && strncmp(l, key, kl) == 0 && ll - kl < len) {
			memcpy(out, l + kl, ll - kl);
			out[ll - kl] = '\0';
			out[strcspn(out, " \t\r,")] = '\0';
			return out[0] != '\0';
		}
		l = nl ? nl + 1 : NULL;
	}
	return false;
}

enum { NEED_OK, NEED_MINOR, NEED_NEWER, NEED_UNKNOWN };

/*
 * Can this driver run code built for CUDA maj.min? NEED_OK (it supports that
 * release), NEED_MINOR (only through minor-version compatibility), NEED_NEWER,
 * or NEED_UNKNOWN (no driver, or one that reports no CUDA version for a release the
 * table does not list: why says so). why: a sentence with the numbers; fix: the
 * driver that would do.
 */
static int cuda_need(const gc_snapshot *s, const struct doctor_env *e, int maj, int min, char *why, size_t wl,
		     char *fix, size_t fl)
{
	why[0] = fix[0] = '\0';
	if (!s || e->open_rc != GC_OK || !s->driver_version[0])
		return NEED_UNKNOWN;
	int dmaj = s->cuda_version / 1000, dmin = (s->cuda_version % 1000) / 10;
	char need[32] = "", mc[32] = "";
	bool listed = e->compat_csv && compat_min(e->compat_csv, maj, min, false, need, sizeof need);
	if (s->cuda_version > 0 && (dmaj > maj || (dmaj == maj && dmin >= min)))
		return NEED_OK;
	if (listed && drv_cmp(s->driver_version, need) >= 0)
		return NEED_OK;
	if (s->cuda_version <= 0 && !listed) {
		/* neither the driver nor the table says: no verdict */
		snprintf(why, wl, "driver %s does not report the CUDA version it supports, and cuda-compat.csv does "
				  "not list CUDA %d.%d", s->driver_version, maj, min);
		return NEED_UNKNOWN;
	}
	char older[48] = "an older CUDA";
	if (s->cuda_version > 0)
		snprintf(older, sizeof older, "CUDA %d.%d or older", dmaj, dmin);
	char drv[128];
	if (s->cuda_version > 0)
		snprintf(drv, sizeof drv, "%s (CUDA up to %d.%d)", s->driver_version, dmaj, dmin);
	else
		snprintf(drv, sizeof drv, "%s", s->driver_version);
	if (listed)
		snprintf(fix, fl, "upgrade the NVIDIA driver to %s or newer (CUDA %d.%d's minimum), or use a build "
				  "for %s", need, maj, min, older);
	else
		snprintf(fix, fl, "upgrade the NVIDIA driver to one that supports CUDA %d.%d (not in cuda-compat.csv), "
				  "or use a build for %s", maj, min, older);
	if (e->compat_csv && maj >= 11 && compat_min(e->compat_csv, maj, 0, true, mc, sizeof mc) &&
	    drv_cmp(s->driver_version, mc) >= 0) {
		snprintf(why, wl, "CUDA %d.%d is newer than driver %s supports: it runs only through minor-version compatibility "
				  "(driver >= %s), without PTX JIT of newer code", maj, min, drv, mc);
		return NEED_MINOR;
	}
	snprintf(why, wl, "CUDA %d.%d needs a newer driver than %s", maj, min, drv);
	return NEED_NEWER;
}

/* "release 12.4" in nvcc's banner */
static bool nvcc_release(const char *out, char *ver, size_t len)
{
	const char *p = out ? strstr(out, "release ") : NULL;
	if (!p)
		return false;
	p += 8;
	size_t n = strspn(p, "0123456789.");
	if (!n || n >= len)
		return false;
	memcpy(ver, p, n);
	ver[n] = '\0';
	return true;
}

static void check_toolkit(const gc_snapshot *s, const struct doctor_env *e, struct doctor_report *r)
{
	struct doctor_check *c;
	char ver[32] = "", src[300] = "";
	if (e->nvcc_out && nvcc_release(e->nvcc_out, ver, sizeof ver)) {
		snprintf(src, sizeof src, "nvcc --version");
	} else if (e->cuda_json) {
		json_t *root = json_loads(e->cuda_json, 0, NULL);
		const char *v = json_string_value(json_object_get(json_object_get(root, "cuda"), "version"));
		if (v && strlen(v) < sizeof ver)
			snprintf(ver, sizeof ver, "%s", v);
		json_decref(root);
		snprintf(src, sizeof src, "%s", e->cuda_json_path ? e->cuda_json_path : "version.json");
	}
	int maj, min;
	if (!ver[0]) {
		if ((c = add(r, "cuda.toolkit", DOCTOR_SKIP))) {
			if (e->nvcc_out || e->cuda_json)
				FOUND(c, "the CUDA toolkit's version could not be read from %s", e->nvcc_out ? "nvcc --version" : src);
			else
				FOUND(c, "no CUDA toolkit (no nvcc on PATH, no version.json in $CUDA_HOME or "
					 "/usr/local/cuda): PyTorch and TensorFlow wheels bring their own runtime");
		}
		return;
	}
	if (!cuda_ver(ver, &maj, &min)) {
		if ((c = add(r, "cuda.toolkit", DOCTOR_WARN)))
			FOUND(c, "%s reports CUDA '%s', which is not a version", src, ver);
		return;
	}
	char why[480], fix[480];
	int v = cuda_need(s, e, maj, min, why, sizeof why, fix, sizeof fix);
	if (!(c = add(r, "cuda.toolkit", v == NEED_OK ? DOCTOR_OK : v == NEED_UNKNOWN ? DOCTOR_SKIP : DOCTOR_WARN)))
		return;
	if (v == NEED_UNKNOWN && why[0])
		FOUND(c, "CUDA toolkit %s (%s): %s", ver, src, why);
	else if (v == NEED_OK || v == NEED_UNKNOWN)
		FOUND(c, "CUDA toolkit %s (%s)%s", ver, src, v == NEED_UNKNOWN ? "; no driver to check it against" : "");
	else
		FOUND(c, "CUDA toolkit %s (%s): %s", ver, src, why);
	if (v != NEED_OK && v != NEED_UNKNOWN)
		FIX(c, "%s; programs nvcc builds may fail with 'CUDA driver version is insufficient'", fix);
}

/* the probe's line for this framework, split in fields; 0 not installed, 1 found, -1 error (msg), -2 no line */
static int probe_line(const char *out, const char *fw, char f[4][64], char *msg, size_t ml)
{
	size_t fl = strlen(fw);
	for (const char *l = out; l && *l;) {
		const char *nl = strchr(l, '\n');
		size_t ll = nl ? (size_t)(nl - l) : strlen(l);
		if (ll > fl + 7 && strncmp(l, fw, fl) == 0 && strncmp(l + fl, "-error ", 7) == 0) {
			snprintf(msg, ml, "%.*s", (int)(ll - fl - 7), l + fl + 7);
			return -1;
		}
		if (ll > fl && strncmp(l, fw, fl) == 0 && l[fl] == ' ') {
			char line[400];
			snprintf(line, sizeof line, "%.*s", (int)(ll - fl - 1), l + fl + 1);
			if (strcmp(line, "-") == 0)
				return 0;
			char *save = NULL, *t = strtok_r(line, " \t\r", &save);
			int k = 0;
			for (; t && k < 4; t = strtok_r(NULL, " \t\r", &save))
				snprintf(f[k++], 64, "%s", t);
			return k == 4 ? 1 : -2;
		}
		l = nl ? nl + 1 : NULL;
	}
	return -2;
}

static void check_framework(const gc_snapshot *s, const struct doctor_env *e, struct doctor_report *r, const char *fw,
			    const char *id, const char *name)
{
	struct doctor_check *c;
	const char *py = e->python ? e->python : "python3";
	if (e->python_rc == DOCTOR_PY_MISSING) {
		if ((c = add(r, id, DOCTOR_SKIP)))
			FOUND(c, "no Python interpreter '%s' (use --python PATH for a virtual environment's)", py);
		return;
	}
	if (e->python_rc == DOCTOR_PY_TIMEOUT) {
		if ((c = add(r, id, DOCTOR_WARN))) {
			FOUND(c, "%s did not answer within the time limit while importing %s", py, name);
			FIX(c, "run %s -c 'import %s' by hand: a hung import is often a stuck GPU or a network filesystem",
			    py, fw);
		}
		return;
	}
	char f[4][64] = {{0}}, msg[256] = "";
	int k = probe_line(e->python_out, fw, f, msg, sizeof msg);
	if (k == 0) {
		if ((c = add(r, id, DOCTOR_SKIP)))
			FOUND(c, "%s is not installed for %s", name, py);
		return;
	}
	if (k == -1 || k == -2) {
		if ((c = add(r, id, DOCTOR_WARN))) {
			if (k == -1)
				FOUND(c, "importing %s with %s failed: %s", name, py, msg);
			else
				FOUND(c, "%s exited %d without saying whether %s is installed", py, e->python_rc, name);
			FIX(c, "run %s -c 'import %s' to see the whole error", py, fw);
		}
		return;
	}
	/* f: version, cuda build, available (torch; 1 for tensorflow), GPUs it sees */
	const char *ver = f[0], *cuda = f[1];
	bool avail = strcmp(f[2], "1") == 0;
	long seen = strtol(f[3], NULL, 10);
	int maj, min;
	bool gpu_driver = s && e->open_rc == GC_OK && s->ngpus > 0;
	if (strcmp(cuda, "-") == 0 || !cuda_ver(cuda, &maj, &min)) {
		if ((c = add(r, id, gpu_driver ? DOCTOR_WARN : DOCTOR_OK))) {
			FOUND(c, "%s %s is a CPU-only build", name, ver);
			if (gpu_driver)
				FIX(c, "install a CUDA build of %s (for PyTorch: pip install torch --index-url "
				       "https://download.pytorch.org/whl/cu%d%d)", name, s->cuda_version / 1000,
				    (s->cuda_version % 1000) / 10);
		}
		return;
	}
	char why[480], fix[480];
	int v = cuda_need(s, e, maj, min, why, sizeof why, fix, sizeof fix);
	enum doctor_status st = DOCTOR_OK;
	if (v == NEED_NEWER || (v == NEED_MINOR && !avail))
		st = DOCTOR_FAIL;
	else if (v == NEED_MINOR)
		st = DOCTOR_WARN;
	else if (gpu_driver && (!avail || seen == 0))
		st = v == NEED_UNKNOWN ? DOCTOR_WARN : DOCTOR_FAIL; /* the driver may be the reason: not known */
	if (!(c = add(r, id, st)))
		return;
	char sees[80];
	if (avail && seen > 0)
		snprintf(sees, sizeof sees, "sees %ld GPU%s", seen, seen == 1 ? "" : "s");
	else
		snprintf(sees, sizeof sees, "%s", strcmp(fw, "torch") == 0 ? "torch.cuda.is_available() is False"
									   : "sees no GPU");
	if (v == NEED_MINOR || v == NEED_NEWER) {
		FOUND(c, "%s %s built for CUDA %s, %s: %s", name, ver, cuda, sees, why);
		FIX(c, "%s", fix);
	} else if (st == DOCTOR_WARN) {
		FOUND(c, "%s %s built for CUDA %s, %s; %s", name, ver, cuda, sees, why);
		FIX(c, "check that the driver supports CUDA %s (nvidia-smi shows the CUDA version it supports), and "
		       "CUDA_VISIBLE_DEVICES and the permissions of /dev/nvidia*", cuda);
	} else {
		FOUND(c, "%s %s built for CUDA %s, %s", name, ver, cuda, sees);
		if (st == DOCTOR_FAIL)
			FIX(c, "the driver supports this build, so check CUDA_VISIBLE_DEVICES (env.cuda_visible_devices) "
			       "and the permissions of /dev/nvidia*; in a container start it with --gpus all");
	}
}

/* what gpuctl launch would run, and whether that torchrun starts at all */
static void check_launcher(const struct doctor_env *e, struct doctor_report *r)
{
	struct doctor_check *c = add(r, "launch.torchrun", DOCTOR_SKIP);
	struct torchenv t;
	if (!c)
		return;
	if (!e->launcher) {
		FOUND(c, "neither torchrun nor python3 nor python is on PATH: gpuctl launch has nothing to run");
		return;
	}
	if (!e->launcher_python) {
		FOUND(c, "the first line of %s names no Python: which PyTorch it runs cannot be told", e->launcher);
		return;
	}
	if (e->launcher_rc != 0 || !launcher_torch(e, &t)) {
		c->status = DOCTOR_WARN;
		if (e->launcher_rc == DOCTOR_PY_MISSING)
			FOUND(c, "%s runs %s, which cannot be started", e->launcher, e->launcher_python);
		else if (e->launcher_rc == DOCTOR_PY_TIMEOUT)
			FOUND(c, "%s runs %s, which did not answer within the time limit", e->launcher,
			      e->launcher_python);
		else
			FOUND(c, "%s runs %s, which exited %d without saying which PyTorch it has", e->launcher,
			      e->launcher_python, e->launcher_rc);
		FIX(c, "run %s -c 'import torch' to see what is wrong", e->launcher_python);
		return;
	}
	if (!t.version[0]) {
		if (e->launcher_is_torchrun) {
			c->status = DOCTOR_WARN;
			FOUND(c, "%s runs %s, which has no PyTorch: torchrun fails at start", e->launcher,
			      e->launcher_python);
			FIX(c, "install PyTorch for %s, or put the environment whose torchrun you mean first on PATH",
			    e->launcher_python);
		} else {
			FOUND(c, "PyTorch is not installed for %s: gpuctl launch would run %s", e->launcher_python,
			      e->launcher);
		}
		return;
	}
	if (torchenv_std_bug(&t)) {
		c->status = DOCTOR_WARN;
		FOUND(c, "%s runs PyTorch %s on Python %d.%d (%s): it dies at start with "
			 "\"AttributeError: 'NoneType' object has no attribute 'get'\": Python 3.11's IntFlag no longer "
			 "lists its zero member, so the default --redirects 0 --tee 0 parse to None; gpuctl launch "
			 "works around it", e->launcher, t.version, t.py_major, t.py_minor, e->launcher_python);
		FIX(c, "upgrade PyTorch to 2.0 or newer (or use it with Python 3.10); running torchrun by hand, add "
		       "--redirects 1 --tee 1");
		return;
	}
	c->status = DOCTOR_OK;
	FOUND(c, "gpuctl launch runs %s: PyTorch %s on Python %d.%d (%s)", e->launcher, t.version, t.py_major,
	      t.py_minor, e->launcher_python);
}

/* GPUs in MIG mode: CUDA cannot use them by index, so jobs that pass an index fail there */
static void check_mig(const gc_snapshot *s, struct doctor_report *r)
{
	size_t n = s->ngpus;
	bool *flag = calloc(n ? n : 1, sizeof *flag);
	if (!flag)
		return;
	bool any = false, known = false;
	for (size_t i = 0; i < n; i++) {
		known |= s->gpus[i].st[GC_V_MIG_CURRENT] == GC_ST_OK;
		flag[i] = select_gpu_mig(&s->gpus[i]);
		any |= flag[i];
	}
	char list[512];
	select_index_list(flag, n, list, sizeof list);
	struct doctor_check *c;
	if ((c = add(r, "health.mig", !known ? DOCTOR_SKIP : any ? DOCTOR_WARN : DOCTOR_OK))) {
		if (any) {
			bool many = strchr(list, ',') != NULL;
			FOUND(c, "GPU %s %s MIG mode enabled: CUDA sees only %s MIG devices, by MIG UUID (gpuctl pick, "
				 "run and the queue never hand %s out)", list, many ? "have" : "has", many ? "their" : "its",
			      many ? "them" : "it");
			FIX(c, "run on a MIG device with CUDA_VISIBLE_DEVICES=MIG-... (gpuctl ls lists them); to use the "
			       "whole GPU, disable MIG mode (sudo nvidia-smi -i N -mig 0, then reset the GPU)");
		} else {
			FOUND(c, known ? "no GPU is in MIG mode" : "MIG mode is not reported");
		}
	}
	free(flag);
}

/* who decides who holds a GPU here (docs/security.md) */
static void check_lease_mode(const struct doctor_env *env, struct doctor_report *r)
{
	struct doctor_check *c = add(r, "leases.mode", env->lease_mode < 0 ? DOCTOR_FAIL : DOCTOR_OK);
	if (!c)
		return;
	const char *dir = env->lease_dir ? env->lease_dir : "/run/gpuctld";
	if (env->lease_mode > 0) {
		snprintf(c->found, sizeof c->found, "authority mode: gpuctld grants every lease (%s)", dir);
	} else if (env->lease_mode == 0) {
		snprintf(c->found, sizeof c->found, "cooperative mode: leases are claim files, which keep jobs apart by "
			 "accident, not against a hostile user");
		snprintf(c->fix, sizeof c->fix, "on a machine several people share, run gpuctld --authority as root "
			 "(contrib/gpuctld.service does; docs/security.md)");
	} else {
		snprintf(c->found, sizeof c->found, "%s", env->lease_mode_msg ? env->lease_mode_msg : "authority mode refused");
		snprintf(c->fix, sizeof c->fix, "remove %s, or let root's gpuctld --authority make it", dir);
	}
}

int doctor_run(const gc_snapshot *snap, const struct doctor_env *env, struct doctor_report *r)
{
	memset(r, 0, sizeof *r);
	check_driver(snap, env, r);
	check_visible(env->open_rc == GC_OK ? snap : NULL, env, r);
	check_env(env, r);
	if (snap && env->open_rc == GC_OK) {
		check_health(snap, r);
		check_mig(snap, r);
	}
	check_xid(env, r);
	check_lease_mode(env, r);
	check_toolkit(snap, env, r);
	check_framework(snap, env, r, "torch", "python.torch", "PyTorch");
	check_framework(snap, env, r, "tensorflow", "python.tensorflow", "TensorFlow");
	check_launcher(env, r);
	return r->checks ? GC_OK : GC_ENOMEM;
}

void doctor_report_free(struct doctor_report *r)
{
	free(r->checks);
	memset(r, 0, sizeof *r);
}
