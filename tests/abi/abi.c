/*
 * abi.c — a program outside the tree, built only with
 * `pkg-config --cflags --libs gpuctl` against an installed libgpuctl
 * (tests/abi/check.py builds and runs it): opens a simulated node,
 * samples it, picks a GPU, leases it and releases it; commits, finds and
 * prunes checkpoints; explains a log; watches for a spot notice (the mock
 * metadata server has one posted) — through the public API alone.
 * And advises on a LoRA job, writing the JSON to ADVISE_OUT.
 * Usage: abi NODE STATE_DIR CKPT_DIR METADATA_URL ADVISE_OUT. Prints what
 * it saw; exit 0 when every step did what the API says.
 */
#include <gpuctl/gpuctl.h>

#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fail(const char *what, int rc)
{
	fprintf(stderr, "abi: %s: %s (%d)\n", what, gc_strerror(rc), rc);
	return 1;
}

/* write DIR/NAME with some bytes */
static int put(const char *dir, const char *name)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	int ok = fd >= 0 && write(fd, "weights", 7) == 7;
	if (fd >= 0)
		close(fd);
	return ok ? 0 : fail("cannot write a checkpoint file", GC_EIO);
}

/* two checkpoints committed, the newest found, the older pruned; an uncommitted one never counts */
static int ckpt(const char *dir)
{
	char err[512] = "", latest[4096], *json = NULL;
	int rc;
	if (put(dir, "step-1.pt") || put(dir, "step-2.pt") || put(dir, "step-3.pt"))
		return 1;
	if ((rc = gc_ckpt_latest(dir, latest, sizeof latest, err, sizeof err)) != GC_ENOTFOUND)
		return fail("gc_ckpt_latest before any commit", rc);
	if ((rc = gc_ckpt_commit(dir, "step-1.pt", err, sizeof err)) != GC_OK ||
	    (rc = gc_ckpt_commit(dir, "step-2.pt", err, sizeof err)) != GC_OK) {
		fprintf(stderr, "abi: commit: %s\n", err);
		return 1;
	}
	if ((rc = gc_ckpt_latest(dir, latest, sizeof latest, err, sizeof err)) != GC_OK)
		return fail("gc_ckpt_latest", rc);
	printf("ckpt latest %s\n", strrchr(latest, '/') + 1);
	if ((rc = gc_ckpt_list_json(dir, &json, err, sizeof err)) != GC_OK)
		return fail("gc_ckpt_list_json", rc);
	printf("ckpt list %s\n", strstr(json, "\"step-3.pt\"") && strstr(json, "\"complete\": false") ? "has the uncommitted one"
														  : json);
	free(json);
	size_t removed = 0;
	if ((rc = gc_ckpt_prune(dir, 1, &removed, err, sizeof err)) != GC_OK)
		return fail("gc_ckpt_prune", rc);
	printf("ckpt pruned %zu\n", removed);
	if (gc_ckpt_prune(dir, 0, NULL, err, sizeof err) != GC_EINVAL || gc_ckpt_commit(NULL, "x", err, sizeof err) != GC_EINVAL)
		return fail("bad checkpoint arguments were accepted", GC_EINVAL);
	return 0;
}

/* a PyTorch OOM line is named */
static int explain(void)
{
	static const char log[] = "step 10\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
				  "GPU 0 has a total capacity of 22.05 GiB of which 1.10 GiB is free.\n";
	char err[512] = "", *json = NULL;
	int rc = gc_explain_text(log, sizeof log - 1, "train.log", &json, err, sizeof err);
	if (rc != GC_OK) {
		fprintf(stderr, "abi: explain: %s\n", err);
		return 1;
	}
	const char *id = strstr(json, "\"id\": \"");
	printf("explain %.*s\n", id ? (int)strcspn(id + 7, "\"") : 4, id ? id + 7 : "none");
	free(json);
	return 0;
}

/* the notice the mock metadata server holds arrives as a GC_SPOT_PREEMPT */
static int spot(const char *url)
{
	char err[512] = "";
	gc_spot *w = NULL;
	int rc = gc_spot_start(&w, GC_CLOUD_AWS, url, err, sizeof err);
	if (rc != GC_OK) {
		fprintf(stderr, "abi: spot: %s\n", err);
		return 1;
	}
	gc_spot_event ev;
	int got = 0;
	for (int i = 0; i < 200 && got == 0; i++) {
		struct pollfd p = {.fd = gc_spot_fd(w), .events = POLLIN};
		if (poll(&p, 1, 100) > 0)
			got = gc_spot_next(w, &ev, sizeof ev);
		if (got == 1 && ev.kind == GC_SPOT_ERROR) {
			fprintf(stderr, "abi: spot error: %s\n", ev.detail);
			got = 0;
		}
	}
	gc_spot_stop(w);
	if (got != 1)
		return fail("no spot notice within 20 s", GC_ETIMEDOUT);
	printf("spot %s %s %s\n", ev.kind == GC_SPOT_PREEMPT ? "preempt" : "other", gc_cloud_name(ev.cloud), ev.action);
	return 0;
}

/* the plans for a LoRA fine-tune of a preset, as `gpuctl advise --json` gives them; a bad option is refused */
static int advise(const char *out)
{
	static const char *const opts[] = {"--model", "Llama-2-7B", "--task", "lora", "--tokens=100M", "--spot", NULL};
	static const char *const bad[] = {"--model", "Llama-2-7B", "--task", "dance", NULL};
	char err[512] = "", *json = NULL;
	if (gc_advise_json(bad, &json, err, sizeof err) != GC_EINVAL || !strstr(err, "--task 'dance'"))
		return fail("gc_advise_json took --task dance", GC_EINVAL);
	int rc = gc_advise_json(opts, &json, err, sizeof err);
	if (rc != GC_OK) {
		fprintf(stderr, "abi: advise: %s\n", err);
		return 1;
	}
	FILE *f = fopen(out, "w");
	if (!f || fputs(json, f) < 0 || fclose(f) != 0)
		return fail("cannot write the advise JSON", GC_EIO);
	printf("advise %s\n", strstr(json, "\"schema\": \"gpuctl.advise/1\"") ? "gpuctl.advise/1" : "?");
	free(json);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 6) {
		fprintf(stderr, "usage: abi NODE STATE_DIR CKPT_DIR METADATA_URL ADVISE_OUT\n");
		return 2;
	}
	gc_ctx *ctx = NULL;
	gc_open_opts o = {.sim_node = argv[1], .size = sizeof o};
	int rc = gc_ctx_open(&ctx, &o);
	if (rc != GC_OK) {
		fprintf(stderr, "abi: open: %s\n", gc_ctx_errmsg(ctx));
		gc_ctx_free(ctx);
		return 1;
	}
	if (getenv("GPUCTL_SIM_NODE"))
		return fail("gc_ctx_open set GPUCTL_SIM_NODE", GC_EINVAL);
	gc_snapshot *s = gc_snapshot_new();
	if (!s)
		return fail("gc_snapshot_new", GC_ENOMEM);
	if ((rc = gc_ctx_sample(ctx, s, GC_ALL_VALUES, NULL, true)) != GC_OK)
		return fail("sample", rc);
	size_t n = gc_snapshot_count(s);
	printf("gpus %zu driver %s cuda %d\n", n, gc_snapshot_driver(s), gc_snapshot_cuda(s));
	for (size_t i = 0; i < n; i++) {
		const char *name = "?", *uuid = "?";
		uint64_t total = 0, used = 0, procs = 0;
		if (gc_value_str(s, i, GC_V_NAME, &name) != GC_ST_OK || gc_value_str(s, i, GC_V_UUID, &uuid) != GC_ST_OK ||
		    gc_value_u64(s, i, GC_V_MEM_TOTAL, &total) != GC_ST_OK ||
		    gc_value_u64(s, i, GC_V_MEM_USED, &used) != GC_ST_OK ||
		    gc_value_u64(s, i, GC_V_PROCS, &procs) != GC_ST_OK)
			return fail("a value of a sampled GPU", GC_EINVAL);
		printf("gpu %zu %s %s total %llu used %llu procs %llu/%zu\n", i, name, uuid,
		       (unsigned long long)total, (unsigned long long)used, (unsigned long long)procs,
		       gc_proc_count(s, i));
		for (size_t p = 0; p < gc_proc_count(s, i); p++) {
			gc_proc pr;
			if ((rc = gc_proc_get(s, i, p, &pr, sizeof pr)) != GC_OK)
				return fail("gc_proc_get", rc);
			printf("  pid %u mem %llu\n", (unsigned)pr.pid, (unsigned long long)pr.used_memory);
		}
	}
	/* a string value read as a number, and a GPU out of range, are refused */
	uint64_t x;
	const char *str;
	if (gc_value_u64(s, 0, GC_V_NAME, &x) != GC_EINVAL || gc_value_str(s, n, GC_V_NAME, &str) != GC_EINVAL)
		return fail("bad accessor arguments were accepted", GC_EINVAL);

	gc_request r = {.size = sizeof r, .n = 1, .max_util = -1, .name = "abi"};
	unsigned pick;
	if ((rc = gc_pick(s, &r, argv[2], &pick)) != GC_OK)
		return fail("pick", rc);
	printf("pick %u\n", pick);
	char err[512] = "", cvd[256];
	gc_lease *l = NULL;
	if ((rc = gc_lease_take(s, &r, argv[2], &l, err, sizeof err)) != GC_OK) {
		fprintf(stderr, "abi: lease: %s\n", err);
		return 1;
	}
	if ((rc = gc_lease_visible(l, cvd, sizeof cvd)) != GC_OK)
		return fail("visible", rc);
	printf("leased %zu gpu %u visible %s\n", gc_lease_count(l), gc_lease_gpu(l, 0), cvd);
	/* the leased GPU is passed over: a second pick takes another, or none fits */
	unsigned again;
	rc = gc_pick(s, &r, argv[2], &again);
	if (rc == GC_OK)
		printf("pick while leased %u\n", again);
	else if (rc == GC_ENOTNOW)
		printf("pick while leased none\n");
	else
		return fail("pick while leased", rc);
	if (rc == GC_OK && again == gc_lease_gpu(l, 0))
		return fail("a leased GPU was picked again", GC_EBUSY);
	/* asking for more GPUs than exist is "not now" for a pick, never a crash */
	gc_request big = {.size = sizeof big, .n = (unsigned)n + 1, .max_util = -1};
	unsigned *many = calloc(n + 1, sizeof *many);
	if (!many || (rc = gc_pick(s, &big, argv[2], many)) != GC_ENOTNOW)
		return fail("a pick of more GPUs than the node has", rc);
	free(many);
	gc_lease_release(l);
	if ((rc = gc_pick(s, &r, argv[2], &again)) != GC_OK || again != pick)
		return fail("the released GPU was not picked again", rc);
	printf("released; pick %u\n", again);
	gc_snapshot_free(s);
	gc_ctx_free(ctx);
	return ckpt(argv[3]) || explain() || spot(argv[4]) || advise(argv[5]);
}
