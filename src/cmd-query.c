/*
 * cmd-query.c — `gpuctl query`: nvidia-smi's --query-gpu and
 * --query-compute-apps, byte for byte (docs/facts/nvidia-smi-csv.md):
 * ", " between cells, header cells with " [unit]", aliases printed under
 * their primary name, MiB rounded up, watts with two decimals, reasons as
 * 0x + 16 hex digits, [N/A] for what the GPU does not give.
 */
#include "cli.h"
#include "util/units.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum kind {
	K_TIMESTAMP, K_DRIVER, K_COUNT, K_INDEX, K_STR, K_BUSID, K_HEX, K_UINT, K_ULL, K_MIB,
	K_WATTS, K_ENABLED, K_ACTIVE, K_HEX16, K_PSTATE, K_COMPUTE_MODE, K_CC,
	/* compute-apps only */
	K_PID, K_PNAME, K_PMEM,
};

struct field {
	const char *name;      /* primary name: what the header shows */
	const char *alias[2];  /* other accepted spellings */
	const char *unit;      /* header " [unit]" and cell suffix, or NULL */
	enum kind kind;
	int value;             /* gc_value, -1 for none */
	unsigned arg;          /* reason bit, hex width, which uint ... */
};

#define V(x) GC_V_##x
#define RS(nm, bit) {"clocks_event_reasons." nm, {"clocks_throttle_reasons." nm, NULL}, NULL, K_ACTIVE, V(REASONS), bit}

/* which gc_gpu member a K_UINT/K_ULL/K_MIB/K_WATTS/K_HEX field reads (arg) */
enum member {
	M_FAN, M_TEMP, M_UTIL_GPU, M_UTIL_MEM, M_CLK_GR, M_CLK_SM, M_CLK_MEM, M_CLK_VIDEO,
	M_CLK_MAX_GR, M_CLK_MAX_SM, M_CLK_MAX_MEM, M_PCIE_GEN, M_PCIE_GEN_MAX, M_PCIE_WIDTH,
	M_PCIE_WIDTH_MAX, M_MEM_TOTAL, M_MEM_RESERVED, M_MEM_USED, M_MEM_FREE, M_P_DRAW,
	M_P_LIMIT, M_P_ENFORCED, M_P_DEFAULT, M_P_MIN, M_P_MAX, M_ECC_CV, M_ECC_UV, M_ECC_CA,
	M_ECC_UA, M_PERSIST, M_ECC_MODE, M_ECC_PENDING, M_MIG_CUR, M_MIG_PEND, M_PCI_DOMAIN,
	M_PCI_BUS, M_PCI_DEVICE, M_PCI_DEVID, M_PCI_SUBID, M_REASONS, M_REASONS_SUP, M_NAME,
	M_UUID, M_SERIAL, M_VBIOS,
};

static const struct field gpu_fields[] = {
	{"timestamp", {NULL}, NULL, K_TIMESTAMP, -1, 0},
	{"driver_version", {NULL}, NULL, K_DRIVER, -1, 0},
	{"count", {NULL}, NULL, K_COUNT, -1, 0},
	{"name", {"gpu_name", NULL}, NULL, K_STR, V(NAME), M_NAME},
	{"serial", {"gpu_serial", NULL}, NULL, K_STR, V(SERIAL), M_SERIAL},
	{"uuid", {"gpu_uuid", NULL}, NULL, K_STR, V(UUID), M_UUID},
	{"pci.bus_id", {"gpu_bus_id", NULL}, NULL, K_BUSID, V(PCI), 0},
	{"pci.domain", {NULL}, NULL, K_HEX, V(PCI), M_PCI_DOMAIN},
	{"pci.bus", {NULL}, NULL, K_HEX, V(PCI), M_PCI_BUS},
	{"pci.device", {NULL}, NULL, K_HEX, V(PCI), M_PCI_DEVICE},
	{"pci.device_id", {NULL}, NULL, K_HEX, V(PCI), M_PCI_DEVID},
	{"pci.sub_device_id", {NULL}, NULL, K_HEX, V(PCI), M_PCI_SUBID},
	{"pcie.link.gen.current", {NULL}, NULL, K_UINT, V(PCIE_GEN), M_PCIE_GEN},
	{"pcie.link.gen.max", {NULL}, NULL, K_UINT, V(PCIE_GEN_MAX), M_PCIE_GEN_MAX},
	{"pcie.link.width.current", {NULL}, NULL, K_UINT, V(PCIE_WIDTH), M_PCIE_WIDTH},
	{"pcie.link.width.max", {NULL}, NULL, K_UINT, V(PCIE_WIDTH_MAX), M_PCIE_WIDTH_MAX},
	{"index", {NULL}, NULL, K_INDEX, -1, 0},
	{"persistence_mode", {NULL}, NULL, K_ENABLED, V(PERSISTENCE), M_PERSIST},
	{"vbios_version", {NULL}, NULL, K_STR, V(VBIOS), M_VBIOS},
	{"fan.speed", {NULL}, "%", K_UINT, V(FAN), M_FAN},
	{"pstate", {NULL}, NULL, K_PSTATE, V(PSTATE), 0},
	{"clocks_event_reasons.supported", {"clocks_throttle_reasons.supported", NULL}, NULL,
	 K_HEX16, V(REASONS_SUPPORTED), M_REASONS_SUP},
	{"clocks_event_reasons.active", {"clocks_throttle_reasons.active", NULL}, NULL,
	 K_HEX16, V(REASONS), M_REASONS},
	RS("gpu_idle", GC_REASON_GPU_IDLE),
	RS("applications_clocks_setting", GC_REASON_APP_CLOCKS),
	RS("sw_power_cap", GC_REASON_SW_POWER_CAP),
	RS("hw_slowdown", GC_REASON_HW_SLOWDOWN),
	RS("hw_thermal_slowdown", GC_REASON_HW_THERMAL),
	RS("hw_power_brake_slowdown", GC_REASON_HW_POWER_BRAKE),
	RS("sw_thermal_slowdown", GC_REASON_SW_THERMAL),
	RS("sync_boost", GC_REASON_SYNC_BOOST),
	{"memory.total", {NULL}, "MiB", K_MIB, V(MEM_TOTAL), M_MEM_TOTAL},
	{"memory.reserved", {NULL}, "MiB", K_MIB, V(MEM_RESERVED), M_MEM_RESERVED},
	{"memory.used", {NULL}, "MiB", K_MIB, V(MEM_USED), M_MEM_USED},
	{"memory.free", {NULL}, "MiB", K_MIB, V(MEM_FREE), M_MEM_FREE},
	{"compute_mode", {NULL}, NULL, K_COMPUTE_MODE, V(COMPUTE_MODE), 0},
	{"compute_cap", {NULL}, NULL, K_CC, V(COMPUTE_CAP), 0},
	{"utilization.gpu", {NULL}, "%", K_UINT, V(UTIL_GPU), M_UTIL_GPU},
	{"utilization.memory", {NULL}, "%", K_UINT, V(UTIL_MEM), M_UTIL_MEM},
	{"ecc.mode.current", {NULL}, NULL, K_ENABLED, V(ECC_MODE), M_ECC_MODE},
	{"ecc.mode.pending", {NULL}, NULL, K_ENABLED, V(ECC_PENDING), M_ECC_PENDING},
	{"ecc.errors.corrected.volatile.total", {NULL}, NULL, K_ULL, V(ECC_CORR_VOL), M_ECC_CV},
	{"ecc.errors.corrected.aggregate.total", {NULL}, NULL, K_ULL, V(ECC_CORR_AGG), M_ECC_CA},
	{"ecc.errors.uncorrected.volatile.total", {NULL}, NULL, K_ULL, V(ECC_UNCORR_VOL), M_ECC_UV},
	{"ecc.errors.uncorrected.aggregate.total", {NULL}, NULL, K_ULL, V(ECC_UNCORR_AGG), M_ECC_UA},
	{"temperature.gpu", {NULL}, NULL, K_UINT, V(TEMP), M_TEMP},
	{"power.draw", {NULL}, "W", K_WATTS, V(POWER_DRAW), M_P_DRAW},
	{"power.limit", {"gpu.power.requested_limit", NULL}, "W", K_WATTS, V(POWER_LIMIT), M_P_LIMIT},
	{"enforced.power.limit", {"gpu.power.current_limit", NULL}, "W", K_WATTS, V(POWER_ENFORCED), M_P_ENFORCED},
	{"power.default_limit", {"gpu.power.default_limit", NULL}, "W", K_WATTS, V(POWER_DEFAULT), M_P_DEFAULT},
	{"power.min_limit", {"gpu.power.min_limit", NULL}, "W", K_WATTS, V(POWER_MIN), M_P_MIN},
	{"power.max_limit", {"gpu.power.max_limit", NULL}, "W", K_WATTS, V(POWER_MAX), M_P_MAX},
	{"clocks.current.graphics", {"clocks.gr", NULL}, "MHz", K_UINT, V(CLK_GR), M_CLK_GR},
	{"clocks.current.sm", {"clocks.sm", NULL}, "MHz", K_UINT, V(CLK_SM), M_CLK_SM},
	{"clocks.current.memory", {"clocks.mem", NULL}, "MHz", K_UINT, V(CLK_MEM), M_CLK_MEM},
	{"clocks.current.video", {"clocks.video", NULL}, "MHz", K_UINT, V(CLK_VIDEO), M_CLK_VIDEO},
	{"clocks.max.graphics", {"clocks.max.gr", NULL}, "MHz", K_UINT, V(CLK_MAX_GR), M_CLK_MAX_GR},
	{"clocks.max.sm", {NULL}, "MHz", K_UINT, V(CLK_MAX_SM), M_CLK_MAX_SM},
	{"clocks.max.memory", {"clocks.max.mem", NULL}, "MHz", K_UINT, V(CLK_MAX_MEM), M_CLK_MAX_MEM},
	{"mig.mode.current", {NULL}, NULL, K_ENABLED, V(MIG_CURRENT), M_MIG_CUR},
	{"mig.mode.pending", {NULL}, NULL, K_ENABLED, V(MIG_PENDING), M_MIG_PEND},
};

static const struct field app_fields[] = {
	{"timestamp", {NULL}, NULL, K_TIMESTAMP, -1, 0},
	{"gpu_name", {NULL}, NULL, K_STR, V(NAME), M_NAME},
	{"gpu_bus_id", {NULL}, NULL, K_BUSID, V(PCI), 0},
	{"gpu_serial", {NULL}, NULL, K_STR, V(SERIAL), M_SERIAL},
	{"gpu_uuid", {NULL}, NULL, K_STR, V(UUID), M_UUID},
	{"pid", {NULL}, NULL, K_PID, V(PROCS), 0},
	{"process_name", {"name", NULL}, NULL, K_PNAME, V(PROCS), 0},
	{"used_gpu_memory", {"used_memory", NULL}, "MiB", K_PMEM, V(PROCS), 0},
};

#define NFIELDS(a) (sizeof(a) / sizeof((a)[0]))

static const struct field *find_field(const struct field *tab, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++) {
		if (strcmp(tab[i].name, name) == 0)
			return &tab[i];
		for (int a = 0; a < 2 && tab[i].alias[a]; a++)
			if (strcmp(tab[i].alias[a], name) == 0)
				return &tab[i];
	}
	return NULL;
}

static uint64_t member(const gc_gpu *g, unsigned m)
{
	switch ((enum member)m) {
	case M_FAN: return g->fan;
	case M_TEMP: return g->temp;
	case M_UTIL_GPU: return g->util_gpu;
	case M_UTIL_MEM: return g->util_mem;
	case M_CLK_GR: return g->clk_gr;
	case M_CLK_SM: return g->clk_sm;
	case M_CLK_MEM: return g->clk_mem;
	case M_CLK_VIDEO: return g->clk_video;
	case M_CLK_MAX_GR: return g->clk_max_gr;
	case M_CLK_MAX_SM: return g->clk_max_sm;
	case M_CLK_MAX_MEM: return g->clk_max_mem;
	case M_PCIE_GEN: return g->pcie_gen;
	case M_PCIE_GEN_MAX: return g->pcie_gen_max;
	case M_PCIE_WIDTH: return g->pcie_width;
	case M_PCIE_WIDTH_MAX: return g->pcie_width_max;
	case M_MEM_TOTAL: return g->mem_total;
	case M_MEM_RESERVED: return g->mem_reserved;
	case M_MEM_USED: return g->mem_used;
	case M_MEM_FREE: return g->mem_free;
	case M_P_DRAW: return g->power_draw;
	case M_P_LIMIT: return g->power_limit;
	case M_P_ENFORCED: return g->power_enforced;
	case M_P_DEFAULT: return g->power_default;
	case M_P_MIN: return g->power_min;
	case M_P_MAX: return g->power_max;
	case M_ECC_CV: return g->ecc_corr_vol;
	case M_ECC_UV: return g->ecc_uncorr_vol;
	case M_ECC_CA: return g->ecc_corr_agg;
	case M_ECC_UA: return g->ecc_uncorr_agg;
	case M_PERSIST: return g->persistence;
	case M_ECC_MODE: return g->ecc_mode;
	case M_ECC_PENDING: return g->ecc_pending;
	case M_MIG_CUR: return g->mig_current;
	case M_MIG_PEND: return g->mig_pending;
	case M_PCI_DOMAIN: return g->pci_domain;
	case M_PCI_BUS: return g->pci_bus;
	case M_PCI_DEVICE: return g->pci_device;
	case M_PCI_DEVID: return g->pci_device_id;
	case M_PCI_SUBID: return g->pci_subsystem_id;
	case M_REASONS: return g->reasons;
	case M_REASONS_SUP: return g->reasons_supported;
	default: return 0;
	}
}

static const char *string_member(const gc_gpu *g, unsigned m)
{
	switch ((enum member)m) {
	case M_NAME: return g->name;
	case M_UUID: return g->uuid;
	case M_SERIAL: return g->serial;
	case M_VBIOS: return g->vbios;
	default: return "";
	}
}

/* hex digits nvidia-smi prints for the pci.* fields */
static int hex_width(unsigned m)
{
	switch ((enum member)m) {
	case M_PCI_DOMAIN: return 4;
	case M_PCI_BUS: case M_PCI_DEVICE: return 2;
	default: return 8;
	}
}

struct query {
	const struct field *f[256];
	size_t nf;
	bool gpu;          /* --query-gpu (else --query-compute-apps) */
	bool header, units;
	const char *id;
	bool *which;
	uint64_t mask;
	gc_ctx *ctx;
	gc_snapshot snap;
	char *line;
	size_t line_cap;
	bool lost_reported;
	int rc;
};

/* the slow half of put(): grow the line, then append */
static void put_grow(struct query *q, size_t *len, const char *s, size_t n)
{
	size_t cap = q->line_cap ? q->line_cap : 256;
	while (cap < *len + n)
		cap *= 2;
	char *p = realloc(q->line, cap);
	if (!p)
		return; /* out of memory: the line is cut, the caller's fwrite still works */
	q->line = p;
	q->line_cap = cap;
	memcpy(q->line + *len, s, n);
	*len += n;
}

/* append n bytes to the line being built (written with fwrite: no NUL kept) */
static inline void put(struct query *q, size_t *len, const char *s, size_t n)
{
	if (q->line_cap && q->line_cap - *len >= n) { /* (no line yet: cap 0, line NULL) */
		memcpy(q->line + *len, s, n);
		*len += n;
	} else {
		put_grow(q, len, s, n);
	}
}

static void puts_(struct query *q, size_t *len, const char *s)
{
	put(q, len, s, strlen(s));
}

/* v in decimal, with " unit" when unit is set: the common cell, without printf */
static void put_uint(struct query *q, size_t *len, unsigned long long v, const char *unit)
{
	char b[24], *e = b + sizeof b, *d = units_dec(v, e);
	put(q, len, d, (size_t)(e - d));
	if (unit) {
		put(q, len, " ", 1);
		puts_(q, len, unit);
	}
}

static void timestamp(const gc_snapshot *s, char *buf, size_t len)
{
	time_t t = (time_t)(s->time_ms / 1000);
	struct tm tm;
	localtime_r(&t, &tm);
	size_t w = strftime(buf, len, "%Y/%m/%d %H:%M:%S", &tm);
	snprintf(buf + w, len - w, ".%03d", (int)(s->time_ms % 1000));
}

static void cell(struct query *q, size_t *len, const struct field *f, const gc_gpu *g,
		 const gc_proc *p)
{
	char buf[320];
	const char *unit = q->units ? f->unit : NULL;
	if (f->value >= 0 && g->st[f->value] != GC_ST_OK) {
		snprintf(buf, sizeof buf, "[%s]", gc_status_token(g->st[f->value]));
		puts_(q, len, buf);
		return;
	}
	buf[0] = '\0';
	switch (f->kind) {
	case K_TIMESTAMP: timestamp(&q->snap, buf, sizeof buf); break;
	case K_DRIVER:
		snprintf(buf, sizeof buf, "%s", q->snap.driver_version[0] ? q->snap.driver_version : "[N/A]");
		break;
	case K_COUNT: snprintf(buf, sizeof buf, "%zu", q->snap.ngpus); break;
	case K_INDEX: put_uint(q, len, g->index, NULL); return;
	case K_STR: puts_(q, len, string_member(g, f->arg)); return;
	case K_BUSID: puts_(q, len, g->bus_id); return;
	case K_HEX:
		snprintf(buf, sizeof buf, "0x%0*llX", hex_width(f->arg), (unsigned long long)member(g, f->arg));
		break;
	case K_HEX16: snprintf(buf, sizeof buf, "0x%016llX", (unsigned long long)member(g, f->arg)); break;
	case K_UINT: case K_ULL: put_uint(q, len, (unsigned long long)member(g, f->arg), unit); return;
	case K_MIB: put_uint(q, len, cli_mib(member(g, f->arg)), unit ? "MiB" : NULL); return;
	case K_WATTS:
		put(q, len, buf, (size_t)units_milli_2dp(member(g, f->arg), buf, sizeof buf));
		if (unit)
			put(q, len, " W", 2);
		return;
	case K_ENABLED: puts_(q, len, member(g, f->arg) ? "Enabled" : "Disabled"); return;
	case K_ACTIVE: puts_(q, len, (g->reasons & f->arg) ? "Active" : "Not Active"); return;
	case K_PSTATE: snprintf(buf, sizeof buf, "P%u", g->pstate); break;
	case K_COMPUTE_MODE: puts_(q, len, gc_compute_mode_name(g->compute_mode)); return;
	case K_CC: snprintf(buf, sizeof buf, "%d.%d", g->cc_major, g->cc_minor); break;
	case K_PID: put_uint(q, len, p->pid, NULL); return;
	/* another PID namespace's process: "[Not Found]", as nvidia-smi prints it (R15 of the CSV rules) */
	case K_PNAME:
		puts_(q, len, !p->visible && !p->simulated ? "[Not Found]" : p->argv0[0] ? p->argv0 : "[N/A]");
		return;
	case K_PMEM:
		if (p->mem_known)
			put_uint(q, len, cli_mib(p->used_memory), unit ? "MiB" : NULL);
		else
			puts_(q, len, "[N/A]");
		return;
	}
	puts_(q, len, buf);
}

static void emit_row(struct query *q, const gc_gpu *g, const gc_proc *p)
{
	size_t len = 0;
	for (size_t i = 0; i < q->nf; i++) {
		if (i)
			put(q, &len, ", ", 2);
		cell(q, &len, q->f[i], g, p);
	}
	put(q, &len, "\n", 1);
	fwrite(q->line, 1, len, stdout);
}

static int query_tick(void *arg, long n)
{
	struct query *q = arg;
	int rc = gc_ctx_sample(q->ctx, &q->snap, q->mask, q->which, false);
	if (rc != GC_OK) {
		cli_err("cannot sample GPUs: %s", gc_ctx_errmsg(q->ctx));
		return cli_exit_code(rc) == EXIT_OK ? EXIT_FAIL : cli_exit_code(rc);
	}
	if (n == 0 && q->header) {
		size_t len = 0;
		for (size_t i = 0; i < q->nf; i++) {
			if (i)
				put(q, &len, ", ", 2);
			puts_(q, &len, q->f[i]->name);
			if (q->f[i]->unit) {
				put(q, &len, " [", 2);
				puts_(q, &len, q->f[i]->unit);
				put(q, &len, "]", 1);
			}
		}
		put(q, &len, "\n", 1);
		fwrite(q->line, 1, len, stdout);
	}
	int result = cli_check_lost(&q->snap, q->which, &q->lost_reported, false);
	for (size_t i = 0; i < q->snap.ngpus; i++) {
		const gc_gpu *g = &q->snap.gpus[i];
		if (!q->which[i])
			continue;
		if (q->gpu) {
			emit_row(q, g, NULL);
			continue;
		}
		for (size_t p = 0; p < g->nprocs; p++)
			if (g->procs[p].type & GC_PROC_COMPUTE)
				emit_row(q, g, &g->procs[p]);
	}
	fflush(stdout);
	return result;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: gpuctl query --query-gpu=FIELDS --format=csv[,noheader][,nounits] [options]\n"
		"       gpuctl query --query-compute-apps=FIELDS --format=csv[,noheader][,nounits] [options]\n"
		"\n"
		"nvidia-smi compatible CSV output.\n"
		"  --query-gpu=FIELDS           GPU fields, nvidia-smi names (see --help-query-gpu)\n"
		"  --query-compute-apps=FIELDS  process fields: timestamp, gpu_name, gpu_bus_id,\n"
		"                               gpu_serial, gpu_uuid, pid, process_name, used_gpu_memory\n"
		"  --format=csv[,noheader][,nounits]\n"
		"  -i, --id=ID[,ID...]          GPUs by index, UUID or PCI bus id\n"
		"  -l, --loop=SEC               repeat every SEC seconds (header printed once)\n"
		"      --loop-ms=MS             repeat every MS milliseconds\n"
		"  -c, --count=N                stop after N samples (with --loop)\n"
		"      --help-query-gpu         list the supported --query-gpu fields\n");
}

static void list_fields(void)
{
	for (size_t i = 0; i < NFIELDS(gpu_fields); i++) {
		const struct field *f = &gpu_fields[i];
		printf("\"%s\"", f->name);
		for (int a = 0; a < 2 && f->alias[a]; a++)
			printf(" or \"%s\"", f->alias[a]);
		putchar('\n');
	}
}

static int parse_format(const char *arg, struct query *q)
{
	bool csv = false;
	char buf[128];
	if (strlen(arg) >= sizeof buf)
		goto bad;
	snprintf(buf, sizeof buf, "%s", arg);
	char *save = NULL;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		while (*t == ' ')
			t++;
		if (strcmp(t, "csv") == 0)
			csv = true;
		else if (strcmp(t, "noheader") == 0)
			q->header = false;
		else if (strcmp(t, "nounits") == 0)
			q->units = false;
		else
			goto bad;
	}
	if (csv)
		return EXIT_OK;
bad:
	cli_err("invalid --format '%s' (expected csv[,noheader][,nounits])", arg);
	return EXIT_USAGE;
}

static int parse_fields(const char *arg, struct query *q)
{
	const struct field *tab = q->gpu ? gpu_fields : app_fields;
	size_t ntab = q->gpu ? NFIELDS(gpu_fields) : NFIELDS(app_fields);
	char *copy = strdup(arg);
	if (!copy) {
		cli_err("out of memory");
		return EXIT_FAIL;
	}
	int rc = EXIT_OK;
	char *p = copy;
	for (;;) {
		char *comma = strchr(p, ',');
		if (comma)
			*comma = '\0';
		char *t = p;
		while (*t == ' ')
			t++;
		size_t tl = strlen(t);
		while (tl && t[tl - 1] == ' ')
			t[--tl] = '\0';
		const struct field *f = find_field(tab, ntab, t);
		if (!f) {
			/* nvidia-smi's own words, so scripts that grep for them keep working */
			fflush(stdout);
			fprintf(stderr, "Field \"%s\" is not a valid field to query.\n", t);
			rc = EXIT_USAGE;
			break;
		}
		if (q->nf == sizeof q->f / sizeof q->f[0]) {
			cli_err("too many fields in the query (at most %zu)", sizeof q->f / sizeof q->f[0]);
			rc = EXIT_USAGE;
			break;
		}
		q->f[q->nf++] = f;
		if (f->value >= 0)
			q->mask |= GC_BIT(f->value);
		if (!comma)
			break;
		p = comma + 1;
	}
	free(copy);
	return rc;
}

/* --loop-ms MS: milliseconds, as nvidia-smi's -lms; into seconds */
static int parse_loop_ms(const char *arg, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(arg, &end);
	if (errno || end == arg || *end || !(v > 0 && v <= 86400000)) {
		cli_err("invalid --loop-ms value '%s' (expected milliseconds, more than 0 and at most 86400000, e.g. 500)",
			arg);
		return EXIT_USAGE;
	}
	*out = v / 1000.0;
	return EXIT_OK;
}

int cmd_query(const struct cli_global *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{"query-gpu", required_argument, NULL, 'G'},
		{"query-compute-apps", required_argument, NULL, 'A'},
		{"format", required_argument, NULL, 'f'},
		{"id", required_argument, NULL, 'i'},
		{"loop", required_argument, NULL, 'l'},
		{"loop-ms", required_argument, NULL, 'm'},
		{"count", required_argument, NULL, 'c'},
		{"help-query-gpu", no_argument, NULL, 'H'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct query q;
	memset(&q, 0, sizeof q);
	q.header = q.units = true;
	const char *gpu_arg = NULL, *app_arg = NULL, *fmt = NULL;
	double interval = 0;
	long count = 0;
	int c, rc;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":i:l:c:h", opts, NULL)) != -1) {
		switch (c) {
		case 'G': gpu_arg = optarg; break;
		case 'A': app_arg = optarg; break;
		case 'f': fmt = optarg; break;
		case 'i': q.id = optarg; break;
		case 'l':
		case 'm':
			if (interval > 0) {
				cli_err("give only one of --loop and --loop-ms");
				return EXIT_USAGE;
			}
			if (c == 'l' && (rc = cli_parse_interval("--loop", optarg, &interval)))
				return rc;
			if (c == 'm' && (rc = parse_loop_ms(optarg, &interval)))
				return rc;
			break;
		case 'c':
			if ((rc = cli_parse_count("--count", optarg, &count)))
				return rc;
			break;
		case 'H': list_fields(); return EXIT_OK;
		case 'h': usage(stdout); return EXIT_OK;
		default:
			return cli_bad_option("query", c, argv);
		}
	}
	if (optind < argc)
		return cli_extra_arg("query", argv[optind]);
	if (count && interval <= 0) {
		cli_err("--count needs --loop or --loop-ms (it counts the samples of a loop)");
		return EXIT_USAGE;
	}
	if (!!gpu_arg == !!app_arg) {
		cli_err(gpu_arg ? "give only one of --query-gpu and --query-compute-apps"
				: "query needs --query-gpu=FIELDS or --query-compute-apps=FIELDS "
				  "(try 'gpuctl query --help')");
		return EXIT_USAGE;
	}
	if (!fmt) {
		cli_err("query needs --format=csv[,noheader][,nounits]");
		return EXIT_USAGE;
	}
	q.gpu = gpu_arg != NULL;
	if ((rc = parse_format(fmt, &q)) || (rc = parse_fields(q.gpu ? gpu_arg : app_arg, &q)))
		return rc;
	if (!q.gpu) /* rows come from the process list */
		q.mask |= GC_BIT(GC_V_PROCS);

	if ((rc = cli_open(g, &q.ctx)))
		return rc;
	if (gc_ctx_count(q.ctx) == 0) {
		printf("No devices were found\n"); /* as nvidia-smi prints it, with its exit code 6 */
		rc = EXIT_NODEVICE;
		goto out;
	}
	if ((rc = cli_select_gpus(q.ctx, q.id, &q.snap, &q.which)))
		goto out;
	rc = cli_loop(interval, count, query_tick, &q);
out:
	free(q.which);
	free(q.line);
	gpu_snapshot_release(&q.snap);
	gc_ctx_free(q.ctx);
	return rc;
}
