/*
 * metrics.c — a sample as Prometheus text (see metrics.h).
 *
 * Each family is written once, HELP and TYPE first, then one line per GPU
 * that has the value: a value the GPU does not report is absent, never 0,
 * and a family no GPU reports is left out whole.
 */
#include "metrics.h"
#include "enforce.h"

#include "jobs/select.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1024.0 * 1024.0)

/*
 * a label value: \, " and newline escaped as the format asks. Prometheus
 * rejects a whole scrape over one label that is not UTF-8 (a lease name cut
 * inside a character, a user's odd bytes): such bytes become '?'.
 */
static void esc(FILE *f, const char *s)
{
	json_t *t = json_string(s);
	bool utf8 = t != NULL;
	json_decref(t);
	for (; *s; s++) {
		if (!utf8 && (unsigned char)*s >= 0x80) {
			fputc('?', f);
			continue;
		}
		if (*s == '\\' || *s == '"')
			fputc('\\', f), fputc(*s, f);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

/* dcgm-exporter's labels for one GPU */
static void labels(FILE *f, const struct metrics_input *in, const gc_gpu *g)
{
	fprintf(f, "gpu=\"%u\",UUID=\"", g->index);
	if (g->st[GC_V_UUID] == GC_ST_OK)
		esc(f, g->uuid);
	fputs("\",pci_bus_id=\"", f);
	if (g->st[GC_V_PCI] == GC_ST_OK)
		esc(f, g->bus_id);
	fprintf(f, "\",device=\"nvidia%u\",%s=\"", g->index, in->snake_labels ? "model_name" : "modelName");
	if (g->st[GC_V_NAME] == GC_ST_OK)
		esc(f, g->name);
	/* dcgm-exporter releases say Hostname, its newest code hostname: both, so either matches */
	fputs("\",Hostname=\"", f);
	esc(f, in->hostname ? in->hostname : "");
	fputs("\",hostname=\"", f);
	esc(f, in->hostname ? in->hostname : "");
	fputs("\",DCGM_FI_DRIVER_VERSION=\"", f);
	esc(f, in->snap->driver_version);
	fputc('"', f);
}

/* the per-GPU values, by id */
enum {
	M_SM_CLOCK, M_MEM_CLOCK, M_TEMP, M_POWER, M_ENERGY, M_UTIL, M_COPY_UTIL, M_FB_FREE, M_FB_USED,
	M_FB_RESERVED, M_FB_TOTAL, M_POWER_LIMIT, M_ECC_SBE_VOL, M_ECC_DBE_VOL, M_ECC_SBE_AGG, M_ECC_DBE_AGG,
	M_REMAP_CORR, M_REMAP_UNCORR, M_REMAP_FAIL, M_PCIE_GEN, M_PCIE_WIDTH,
	M_PROCS, M_LOST, M_THROTTLED, M_LEASED, M_XID, M_QUARANTINED,
};

struct family {
	int id;
	const char *name, *type, *help;
};

/*
 * dcgm-exporter declares the energy, ECC and remapped-row totals counters;
 * they are gauges here because Prometheus lints a counter whose name lacks
 * _total, and these names must stay as they are. rate() and increase() work
 * on them all the same.
 */
static const struct family families[] = {
	{M_SM_CLOCK, "DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."},
	{M_MEM_CLOCK, "DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)."},
	{M_TEMP, "DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."},
	{M_POWER, "DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."},
	{M_ENERGY, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "gauge", "Total energy consumption since boot (in mJ)."},
	{M_UTIL, "DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."},
	{M_COPY_UTIL, "DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."},
	{M_FB_FREE, "DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."},
	{M_FB_USED, "DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."},
	{M_FB_RESERVED, "DCGM_FI_DEV_FB_RESERVED", "gauge", "Framebuffer memory reserved (in MiB)."},
	{M_FB_TOTAL, "DCGM_FI_DEV_FB_TOTAL", "gauge", "Framebuffer memory total (in MiB)."},
	{M_POWER_LIMIT, "DCGM_FI_DEV_POWER_MGMT_LIMIT", "gauge", "Power management limit (in W)."},
	{M_ECC_SBE_VOL, "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "gauge", "Total number of single-bit volatile ECC errors."},
	{M_ECC_DBE_VOL, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "gauge", "Total number of double-bit volatile ECC errors."},
	{M_ECC_SBE_AGG, "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", "gauge", "Total number of single-bit persistent ECC errors."},
	{M_ECC_DBE_AGG, "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", "gauge", "Total number of double-bit persistent ECC errors."},
	{M_REMAP_CORR, "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "gauge",
	 "Number of remapped rows for correctable errors"},
	{M_REMAP_UNCORR, "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "gauge",
	 "Number of remapped rows for uncorrectable errors"},
	{M_REMAP_FAIL, "DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed"},
	{M_PCIE_GEN, "DCGM_FI_DEV_PCIE_LINK_GEN", "gauge", "PCIe current link generation."},
	{M_PCIE_WIDTH, "DCGM_FI_DEV_PCIE_LINK_WIDTH", "gauge", "PCIe current link width."},
	{M_PROCS, "gpuctl_gpu_processes", "gauge", "Processes using the GPU (compute and graphics)."},
	{M_LOST, "gpuctl_gpu_lost", "gauge", "1 when the GPU fell off the bus or needs a reset in the last sample."},
	{M_THROTTLED, "gpuctl_gpu_throttled", "gauge",
	 "1 when a clock event reason that slows the GPU down (power cap, thermal, slowdown, power brake) is active."},
	{M_LEASED, "gpuctl_gpu_leased", "gauge", "1 when a gpuctl lease holds the GPU."},
	{M_XID, "DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."},
	{M_QUARANTINED, "gpuctl_gpu_quarantined", "gauge",
	 "1 while the GPU is quarantined (gpuctl quarantine): pick, run and the queue give it to nobody."},
};

/* the value of family id for GPU g, when it has one */
static bool value(const struct metrics_input *in, size_t i, int id, double *v)
{
	const gc_gpu *g = &in->snap->gpus[i];
#define OK(x) (g->st[x] == GC_ST_OK)
	switch (id) {
	case M_SM_CLOCK: *v = g->clk_sm; return OK(GC_V_CLK_SM);
	case M_MEM_CLOCK: *v = g->clk_mem; return OK(GC_V_CLK_MEM);
	case M_TEMP: *v = g->temp; return OK(GC_V_TEMP);
	case M_POWER: *v = g->power_draw / 1000.0; return OK(GC_V_POWER_DRAW);
	case M_ENERGY: *v = (double)g->energy_mj; return OK(GC_V_ENERGY);
	case M_UTIL: *v = g->util_gpu; return OK(GC_V_UTIL_GPU);
	case M_COPY_UTIL: *v = g->util_mem; return OK(GC_V_UTIL_MEM);
	case M_FB_FREE: *v = (double)(g->mem_free / (1024 * 1024)); return OK(GC_V_MEM_FREE);
	case M_FB_USED: *v = (double)(g->mem_used / (1024 * 1024)); return OK(GC_V_MEM_USED);
	case M_FB_RESERVED: *v = (double)(g->mem_reserved / (1024 * 1024)); return OK(GC_V_MEM_RESERVED);
	case M_FB_TOTAL: *v = (double)(g->mem_total / (1024 * 1024)); return OK(GC_V_MEM_TOTAL);
	case M_POWER_LIMIT: *v = g->power_enforced / 1000.0; return OK(GC_V_POWER_ENFORCED);
	case M_ECC_SBE_VOL: *v = (double)g->ecc_corr_vol; return OK(GC_V_ECC_CORR_VOL);
	case M_ECC_DBE_VOL: *v = (double)g->ecc_uncorr_vol; return OK(GC_V_ECC_UNCORR_VOL);
	case M_ECC_SBE_AGG: *v = (double)g->ecc_corr_agg; return OK(GC_V_ECC_CORR_AGG);
	case M_ECC_DBE_AGG: *v = (double)g->ecc_uncorr_agg; return OK(GC_V_ECC_UNCORR_AGG);
	case M_REMAP_CORR: *v = g->remap_corr; return OK(GC_V_REMAPPED_ROWS);
	case M_REMAP_UNCORR: *v = g->remap_uncorr; return OK(GC_V_REMAPPED_ROWS);
	case M_REMAP_FAIL: *v = g->remap_failure; return OK(GC_V_REMAPPED_ROWS);
	case M_PCIE_GEN: *v = g->pcie_gen; return OK(GC_V_PCIE_GEN);
	case M_PCIE_WIDTH: *v = g->pcie_width; return OK(GC_V_PCIE_WIDTH);
	case M_PROCS: *v = (double)g->nprocs; return OK(GC_V_PROCS) || OK(GC_V_GPROCS);
	case M_LOST: *v = g->lost; return true;
	case M_THROTTLED: *v = (g->reasons & GC_REASONS_THROTTLING) != 0; return OK(GC_V_REASONS);
	case M_LEASED: *v = in->leases && in->leases[i]; return in->leases != NULL;
	case M_XID: *v = in->last_xid ? (double)in->last_xid[i] : 0; return in->last_xid != NULL;
	case M_QUARANTINED: *v = in->marks && in->marks[i].uuid[0]; return in->marks != NULL;
	}
#undef OK
	return false;
}

static void family_head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void number(FILE *f, double v)
{
	/* integers as integers: energy in mJ exceeds what %g prints exactly */
	if (v == (double)(int64_t)v && v < 9e15 && v > -9e15)
		fprintf(f, "%lld\n", (long long)v);
	else
		fprintf(f, "%.3f\n", v);
}

static void per_gpu(FILE *f, const struct metrics_input *in, char *const *lab)
{
	for (size_t k = 0; k < sizeof families / sizeof families[0]; k++) {
		bool head = false;
		for (size_t i = 0; i < in->snap->ngpus; i++) {
			double v;
			if (!value(in, i, families[k].id, &v))
				continue;
			if (!head)
				family_head(f, families[k].name, families[k].type, families[k].help);
			head = true;
			fprintf(f, "%s{%s} ", families[k].name, lab[i]);
			number(f, v);
		}
	}
}

/* one series per reason the GPU supports: 1 active, 0 not */
static void reasons(FILE *f, const struct metrics_input *in, char *const *lab)
{
	bool head = false;
	for (size_t i = 0; i < in->snap->ngpus; i++) {
		const gc_gpu *g = &in->snap->gpus[i];
		if (g->st[GC_V_REASONS] != GC_ST_OK)
			continue;
		uint64_t sup = g->st[GC_V_REASONS_SUPPORTED] == GC_ST_OK ? g->reasons_supported : ~UINT64_C(0);
		for (int b = 0; b < 64; b++) {
			uint64_t bit = UINT64_C(1) << b;
			const char *name = gc_reason_name(bit);
			if (!name || !(sup & bit))
				continue;
			if (!head)
				family_head(f, "gpuctl_clocks_event_reason", "gauge",
					    "1 while this clock event (throttle) reason is active, 0 while it is not; "
					    "only reasons the GPU supports.");
			head = true;
			fprintf(f, "gpuctl_clocks_event_reason{%s,reason=\"%s\"} %d\n", lab[i], name,
				(g->reasons & bit) != 0);
		}
	}
}

static void leases(FILE *f, const struct metrics_input *in, char *const *lab)
{
	bool head = false;
	for (size_t i = 0; in->leases && i < in->snap->ngpus; i++) {
		const struct lease_info *l = in->leases[i];
		if (!l)
			continue;
		if (!head)
			family_head(f, "gpuctl_lease_info", "gauge",
				    "1 for each leased GPU, with the holder's user and job name (gpuctl run --name).");
		head = true;
		fprintf(f, "gpuctl_lease_info{%s,user=\"", lab[i]);
		esc(f, l->user);
		fputs("\",job=\"", f);
		esc(f, l->name);
		fprintf(f, "\",pid=\"%d\"} 1\n", (int)l->pid);
	}
}

/*
 * GPUs free now, by gpuctl pick's rule (select_eligible): no lease, not
 * lost, not in MIG mode, and no compute process of anyone (the uid of no
 * user), the processes known
 */
static size_t free_gpus(const struct metrics_input *in)
{
	size_t n = in->snap->ngpus;
	bool *leased = calloc(n ? n : 1, sizeof *leased);
	if (!leased)
		return 0;
	for (size_t i = 0; in->leases && i < n; i++)
		leased[i] = in->leases[i] != NULL;
	bool *marked = calloc(n ? n : 1, sizeof *marked);
	if (!marked) {
		free(leased);
		return 0;
	}
	for (size_t i = 0; in->marks && i < n; i++)
		marked[i] = in->marks[i].uuid[0] != '\0';
	struct select_request r = {.n = 1, .max_util = -1, .uid = (uid_t)-1, .quarantined = marked};
	size_t free_n = select_eligible(in->snap, &r, leased, NULL);
	free(leased);
	free(marked);
	return free_n;
}

static void node(FILE *f, const struct metrics_input *in)
{
	size_t free_n = free_gpus(in);
	family_head(f, "gpuctl_gpus", "gauge", "GPUs on this node.");
	fprintf(f, "gpuctl_gpus{Hostname=\"");
	esc(f, in->hostname ? in->hostname : "");
	fprintf(f, "\"} %zu\n", in->snap->ngpus);
	family_head(f, "gpuctl_gpus_free", "gauge",
		    "GPUs gpuctl pick could hand out now: no gpuctl lease, no compute process, not lost, not quarantined, "
		    "not in MIG mode.");
	fprintf(f, "gpuctl_gpus_free{Hostname=\"");
	esc(f, in->hostname ? in->hostname : "");
	fprintf(f, "\"} %zu\n", free_n);
	if (in->marks) {
		family_head(f, "gpuctl_quarantines_total", "counter",
			    "GPUs gpuctld has quarantined since it started (Xid, ECC, row remap, lost).");
		fprintf(f, "gpuctl_quarantines_total %llu\n", (unsigned long long)in->quarantines);
	}
	const char *user;
	uint64_t count;
	for (size_t i = 0; enforce_count(in->enforce, i, &user, &count); i++) {
		if (i == 0)
			family_head(f, "gpuctl_policy_violations_total", "counter",
				    "Compute processes seen on a GPU another user leased (or, with --enforce-unleased, "
				    "that nobody leased), by the process's user, since gpuctld started.");
		fputs("gpuctl_policy_violations_total{user=\"", f);
		esc(f, user);
		fprintf(f, "\"} %llu\n", (unsigned long long)count);
	}
	if (in->reclaiming) {
		family_head(f, "gpuctl_leases_reclaimed_total", "counter",
			    "Leases let go after idle reclaim (--reclaim-after) since gpuctld started.");
		fprintf(f, "gpuctl_leases_reclaimed_total %llu\n", (unsigned long long)in->reclaimed);
	}
	if (in->notifying) {
		family_head(f, "gpuctl_notifications_total", "counter",
			    "Events given to --webhook and --notify-command since gpuctld started: sent, failed (after "
			    "the retry), dropped (the queue of 1024 was full).");
		static const char *const result[] = {"sent", "failed", "dropped"};
		for (int i = 0; i < 3; i++)
			fprintf(f, "gpuctl_notifications_total{result=\"%s\"} %llu\n", result[i],
				(unsigned long long)in->notified[i]);
	}
	family_head(f, "gpuctl_sampler_samples_total", "counter", "Samples taken since gpuctld started.");
	fprintf(f, "gpuctl_sampler_samples_total %llu\n", (unsigned long long)in->samples);
	family_head(f, "gpuctl_sampler_failures_total", "counter",
		    "Samples that failed as a whole (the driver could not be asked at all).");
	fprintf(f, "gpuctl_sampler_failures_total %llu\n", (unsigned long long)in->failures);
	family_head(f, "gpuctl_sampler_last_duration_seconds", "gauge", "How long the last sample took.");
	fprintf(f, "gpuctl_sampler_last_duration_seconds %.6f\n", in->last_duration);
	bool head = false;
	for (unsigned v = 0; in->errors && v < GC_V__COUNT; v++) {
		for (int st = GC_ST_NO_PERMISSION; st <= GC_ST_UNKNOWN_ERROR; st++) {
			uint64_t n = in->errors->count[v][st];
			if (!n || !gc_value_source(v))
				continue;
			if (!head)
				family_head(f, "gpuctl_nvml_errors_total", "counter",
					    "NVML calls that failed (not counting 'not supported'), by function and error.");
			head = true;
			fprintf(f, "gpuctl_nvml_errors_total{function=\"%s\",value=\"%s\",error=\"%s\"} %llu\n",
				gc_value_source(v), gc_value_name(v), gc_status_token(st), (unsigned long long)n);
		}
	}
}

/* each GPU's labels, escaped once: every series of the GPU repeats them */
static char **label_strings(const struct metrics_input *in)
{
	size_t n = in->snap->ngpus;
	char **lab = calloc(n ? n : 1, sizeof *lab);
	for (size_t i = 0; lab && i < n; i++) {
		size_t len;
		FILE *f = open_memstream(&lab[i], &len);
		if (f) {
			labels(f, in, &in->snap->gpus[i]);
			if (fclose(f) == 0)
				continue;
		}
		for (size_t k = 0; k <= i; k++)
			free(lab[k]);
		free(lab);
		return NULL;
	}
	return lab;
}

char *metrics_render(const struct metrics_input *in, size_t *len)
{
	char *buf = NULL;
	size_t n = 0;
	char **lab = label_strings(in);
	FILE *f = lab ? open_memstream(&buf, &n) : NULL;
	if (f) {
		per_gpu(f, in, lab);
		reasons(f, in, lab);
		leases(f, in, lab);
		node(f, in);
	}
	for (size_t i = 0; lab && i < in->snap->ngpus; i++)
		free(lab[i]);
	free(lab);
	if (!f || fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	*len = n;
	return buf;
}

void metrics_count_errors(struct metrics_errors *e, const gc_snapshot *snap)
{
	for (size_t i = 0; i < snap->ngpus; i++)
		for (unsigned v = 0; v < GC_V__COUNT; v++) {
			int st = snap->gpus[i].st[v];
			if (st >= GC_ST_NO_PERMISSION && st <= GC_ST_UNKNOWN_ERROR)
				e->count[v][st]++;
		}
}

size_t metrics_age(char *buf, size_t len, double age)
{
	int n = snprintf(buf, len,
			 "# HELP gpuctl_sampler_last_sample_age_seconds Seconds since the sample these metrics come from.\n"
			 "# TYPE gpuctl_sampler_last_sample_age_seconds gauge\n"
			 "gpuctl_sampler_last_sample_age_seconds %.3f\n", age);
	return n < 0 ? 0 : (size_t)n < len ? (size_t)n : len - 1;
}
