/*
 * abi.c — a program outside the tree, built only with
 * `pkg-config --cflags --libs gpuctl` against an installed libgpuctl
 * (tests/abi/check.py builds and runs it): opens a simulated node,
 * samples it, picks a GPU, leases it and releases it, through the public
 * API alone. Usage: abi NODE STATE_DIR. Prints what it saw; exit 0 when
 * every step did what the API says.
 */
#include <gpuctl/gpuctl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what, int rc)
{
	fprintf(stderr, "abi: %s: %s (%d)\n", what, gc_strerror(rc), rc);
	return 1;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: abi NODE STATE_DIR\n");
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
	return 0;
}
