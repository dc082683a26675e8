/*
 * cmd-ls.c — `gpuctl ls`: the compact view, one line per GPU (as gpustat
 * prints it) with its processes under it and throttling called out, or the
 * whole snapshot as JSON (docs/json.md). --loop repeats it; --watch redraws
 * it in place on a terminal.
 */
#include "cli.h"
#include "device/snapjson.h"
#include "jobs/lease.h"
#include "jobs/quarantine.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LS_MASK (GC_BIT(GC_V_NAME) | GC_BIT(GC_V_UUID) | GC_BIT(GC_V_PCI) | \
	GC_BIT(GC_V_MEM_TOTAL) | GC_BIT(GC_V_MEM_USED) | GC_BIT(GC_V_UTIL_GPU) | \
	GC_BIT(GC_V_TEMP) | GC_BIT(GC_V_POWER_DRAW) | GC_BIT(GC_V_POWER_ENFORCED) | \
	GC_BIT(GC_V_REASONS) | GC_BIT(GC_V_PROCS) | GC_BIT(GC_V_GPROCS) | GC_BIT(GC_V_MIG_DEVICES))

struct ls {
	gc_ctx *ctx;
	gc_snapshot snap;
	bool *which;
	bool json, watch, header, color, looping;
	bool lost_reported;
	char host[256];
	struct lease_dir *leases; /* NULL when there is no usable state directory */
	const char *sim;          /* the simulated node's file, borrowed; NULL on a real driver */
};

/* ANSI colours, as gpustat uses them */
#define C_RESET "\033[0m"
#define C_BOLD "\033[1m"
#define C_RED "\033[31m"
#define C_GREEN "\033[32m"
#define C_YELLOW "\033[33m"
#define C_BLUE "\033[34m"
#define C_MAGENTA "\033[35m"
#define C_CYAN "\033[36m"
#define C_GREY "\033[90m"

static const char *col(const struct ls *l, const char *c)
{
	return l->color ? c : "";
}

/* end of a line: in watch mode also clear what an earlier, longer frame left */
static const char *eol(const struct ls *l)
{
	return l->watch ? "\033[K\n" : "\n";
}

/* what a cell shows when its value is missing: N/A, or ERR! (nvidia-smi's word) for a failure */
static const char *missing(uint8_t st)
{
	return st == GC_ST_NOT_SUPPORTED || st == GC_ST_UNSET ? "N/A" : "ERR!";
}

static int digits(unsigned long long v)
{
	int d = 1;
	while (v >= 10) {
		v /= 10;
		d++;
	}
	return d;
}

static void print_header(struct ls *l)
{
	char when[64];
	time_t t = (time_t)(l->snap.time_ms / 1000);
	struct tm tm;
	localtime_r(&t, &tm);
	strftime(when, sizeof when, "%a %b %e %H:%M:%S %Y", &tm);
	char cuda[32] = "N/A";
	gc_cuda_version_str(l->snap.cuda_version, cuda, sizeof cuda);
	printf("%s%s%s  %s  driver %s  CUDA %s", col(l, C_BOLD), l->host, col(l, C_RESET), when,
	       l->snap.driver_version[0] ? l->snap.driver_version : "N/A", cuda);
	if (l->sim) {
		/* never mistaken for a real machine: say where the GPUs come from */
		const char *base = strrchr(l->sim, '/');
		char safe[256];
		printf("  %s(simulated: %s)%s", col(l, C_YELLOW), cli_safe(safe, sizeof safe, base ? base + 1 : l->sim),
		       col(l, C_RESET));
	}
	printf("%s", eol(l));
}

/* a GPU in MIG mode: the MIG devices CUDA sees instead of it, as nvidia-smi -L lists them */
static void print_mig(const struct ls *l, const gc_gpu *g)
{
	if (g->st[GC_V_MIG_CURRENT] != GC_ST_OK || !g->mig_current || g->lost)
		return;
	if (g->st[GC_V_MIG_DEVICES] != GC_ST_OK) {
		printf("    %sMIG devices: [%s]%s%s", col(l, C_GREY), gc_status_token(g->st[GC_V_MIG_DEVICES]),
		       col(l, C_RESET), eol(l));
		return;
	}
	if (g->nmig == 0)
		printf("    %sMIG mode, no MIG devices: CUDA sees nothing on this GPU%s%s", col(l, C_GREY),
		       col(l, C_RESET), eol(l));
	for (size_t k = 0; k < g->nmig; k++) {
		const gc_mig *m = &g->mig[k];
		printf("    MIG %-11s Device %2zu: (UUID: %s)", m->st_profile == GC_ST_OK ? m->profile : "[N/A]", k,
		       m->st_uuid == GC_ST_OK ? m->uuid : gc_status_token(m->st_uuid));
		if (m->st_mem == GC_ST_OK)
			printf(" | %s%llu / %llu MiB%s", col(l, C_YELLOW), cli_mib(m->mem_used), cli_mib(m->mem_total),
			       col(l, C_RESET));
		printf("%s", eol(l));
	}
}

static void print_view(struct ls *l)
{
	const gc_snapshot *s = &l->snap;
	int wname = 4, wmem = 1, wpow = 1, wuser = 4;
	for (size_t i = 0; i < s->ngpus; i++) {
		const gc_gpu *g = &s->gpus[i];
		if (!l->which[i])
			continue;
		if (g->st[GC_V_NAME] == GC_ST_OK && (int)strlen(g->name) > wname)
			wname = (int)strlen(g->name);
		if (g->st[GC_V_MEM_TOTAL] == GC_ST_OK && digits(cli_mib(g->mem_total)) > wmem)
			wmem = digits(cli_mib(g->mem_total));
		if (g->st[GC_V_POWER_ENFORCED] == GC_ST_OK && digits(g->power_enforced / 1000) > wpow)
			wpow = digits(g->power_enforced / 1000);
		for (size_t p = 0; p < g->nprocs; p++)
			if ((g->procs[p].visible || g->procs[p].simulated) && (int)strlen(g->procs[p].user) > wuser)
				wuser = (int)strlen(g->procs[p].user);
	}
	if (l->header)
		print_header(l);
	for (size_t i = 0; i < s->ngpus; i++) {
		const gc_gpu *g = &s->gpus[i];
		if (!l->which[i])
			continue;
		printf("%s[%u]%s %s%-*s%s |", col(l, C_CYAN), g->index, col(l, C_RESET), col(l, C_BLUE),
		       wname, g->st[GC_V_NAME] == GC_ST_OK ? g->name : "[N/A]", col(l, C_RESET));
		if (g->lost && g->st[GC_V_TEMP] == GC_ST_GPU_LOST) {
			printf(" %s%sGPU is lost%s (fell off the bus or needs a reset)%s", col(l, C_BOLD),
			       col(l, C_RED), col(l, C_RESET), eol(l));
			continue;
		}
		/* temperature */
		if (g->st[GC_V_TEMP] == GC_ST_OK)
			printf(" %s%3u°C%s,", col(l, g->temp >= 80 ? C_RED : C_YELLOW), g->temp, col(l, C_RESET));
		else
			printf(" %4s°C,", missing(g->st[GC_V_TEMP]));
		/* utilization */
		if (g->st[GC_V_UTIL_GPU] == GC_ST_OK)
			printf(" %s%3u %%%s |", col(l, C_GREEN), g->util_gpu, col(l, C_RESET));
		else
			printf(" %3s %% |", missing(g->st[GC_V_UTIL_GPU]));
		/* memory */
		if (g->st[GC_V_MEM_USED] == GC_ST_OK && g->st[GC_V_MEM_TOTAL] == GC_ST_OK)
			printf(" %s%*llu%s / %s%*llu%s MiB |", col(l, C_YELLOW), wmem, cli_mib(g->mem_used),
			       col(l, C_RESET), col(l, C_YELLOW), wmem, cli_mib(g->mem_total), col(l, C_RESET));
		else
			printf(" %*s / %*s MiB |", wmem, missing(g->st[GC_V_MEM_USED]), wmem,
			       missing(g->st[GC_V_MEM_TOTAL]));
		/* power, in whole watts like nvidia-smi's summary */
		char draw[16], cap[16];
		if (g->st[GC_V_POWER_DRAW] == GC_ST_OK)
			snprintf(draw, sizeof draw, "%u", (g->power_draw + 500) / 1000);
		else
			snprintf(draw, sizeof draw, "%s", missing(g->st[GC_V_POWER_DRAW]));
		if (g->st[GC_V_POWER_ENFORCED] == GC_ST_OK)
			snprintf(cap, sizeof cap, "%u", (g->power_enforced + 500) / 1000);
		else
			snprintf(cap, sizeof cap, "%s", missing(g->st[GC_V_POWER_ENFORCED]));
		printf(" %s%*s%s / %s%*s%s W", col(l, C_MAGENTA), wpow < 3 ? 3 : wpow, draw, col(l, C_RESET),
		       col(l, C_MAGENTA), wpow < 3 ? 3 : wpow, cap, col(l, C_RESET));
		/* throttling: only the reasons that mean "slowed down" */
		if (g->st[GC_V_REASONS] == GC_ST_OK && (g->reasons & GC_REASONS_THROTTLING)) {
			printf(" | %s%sTHROTTLED:", col(l, C_BOLD), col(l, C_RED));
			const char *sep = " ";
			for (int b = 0; b < 64; b++) {
				uint64_t bit = UINT64_C(1) << b;
				if ((g->reasons & bit & GC_REASONS_THROTTLING) && gc_reason_name(bit)) {
					printf("%s%s", sep, gc_reason_name(bit));
					sep = ",";
				}
			}
			printf("%s", col(l, C_RESET));
		}
		if (g->st[GC_V_MIG_CURRENT] == GC_ST_OK && g->mig_current)
			printf(" | %sMIG%s", col(l, C_BOLD), col(l, C_RESET));
		if (g->lost)
			printf(" | %s%sGPU is lost%s", col(l, C_BOLD), col(l, C_RED), col(l, C_RESET));
		struct quarantine_info q;
		if (l->leases && g->st[GC_V_UUID] == GC_ST_OK && quarantine_get(l->leases, g->uuid, &q) == 1) {
			char xid[32] = "";
			if (q.xid)
				snprintf(xid, sizeof xid, " %llu", (unsigned long long)q.xid);
			printf(" | %s%sQUARANTINED%s (%s%s)", col(l, C_BOLD), col(l, C_RED), col(l, C_RESET), q.reason, xid);
		}
		struct lease_info holder;
		if (l->leases && g->st[GC_V_UUID] == GC_ST_OK && lease_peek(l->leases, g->uuid, &holder) == 1) {
			lease_info_sanitize(&holder);
			printf(" | %sleased by %s", col(l, C_CYAN), holder.user[0] ? holder.user : "?");
			if (holder.name[0])
				printf(" (%s)", holder.name);
			printf("%s", col(l, C_RESET));
		}
		printf("%s", eol(l));
		print_mig(l, g);
		if (g->st[GC_V_PROCS] != GC_ST_OK && !g->lost)
			printf("    %sprocesses: [%s]%s%s", col(l, C_GREY),
			       gc_status_token(g->st[GC_V_PROCS]), col(l, C_RESET), eol(l));
		for (size_t p = 0; p < g->nprocs; p++) {
			const gc_proc *pr = &g->procs[p];
			char mem[32];
			if (pr->mem_known)
				snprintf(mem, sizeof mem, "%llu MiB", cli_mib(pr->used_memory));
			else
				snprintf(mem, sizeof mem, "N/A");
			const char *type = pr->type == GC_PROC_GRAPHICS ? " (graphics)" : "";
			if (pr->visible)
				printf("    %s%-*s%s %7u %s%10s%s  %s%s%s", col(l, C_GREY), wuser, pr->user,
				       col(l, C_RESET), pr->pid, col(l, C_YELLOW), mem, col(l, C_RESET),
				       pr->command, type, eol(l));
			else if (pr->simulated)
				printf("    %s%-*s%s %7u %s%10s%s  %s%s%s", col(l, C_GREY), wuser, pr->user,
				       col(l, C_RESET), pr->pid, col(l, C_YELLOW), mem, col(l, C_RESET),
				       pr->command, type, eol(l));
			else
				printf("    %-*s %7u %s%10s%s  %s(not visible in this PID namespace)%s%s%s",
				       wuser, "?", pr->pid, col(l, C_YELLOW), mem, col(l, C_RESET),
				       col(l, C_GREY), col(l, C_RESET), type, eol(l));
		}
	}
}

static int ls_tick(void *arg, long n)
{
	struct ls *l = arg;
	uint64_t mask = l->json ? GC_ALL_VALUES : LS_MASK;
	int rc = gc_ctx_sample(l->ctx, &l->snap, mask, l->which, l->json);
	if (rc != GC_OK) {
		cli_err("cannot sample GPUs: %s", gc_ctx_errmsg(l->ctx));
		return cli_exit_code(rc) == EXIT_OK ? EXIT_FAIL : cli_exit_code(rc);
	}
	/* in watch mode the view itself says so; a line on stderr would tear the screen */
	int result = cli_check_lost(&l->snap, l->which, &l->lost_reported, l->watch);
	if (l->json) {
		/* repeating: one document per line (JSON Lines) */
		if (snapjson_write(stdout, &l->snap, l->which, l->host, !l->looping) < 0) {
			cli_err(ferror(stdout) ? "cannot write the JSON to standard output: %s" : "out of memory",
				strerror(errno));
			return EXIT_FAIL;
		}
		fputc('\n', stdout);
	} else {
		if (l->watch)
			fputs("\033[H", stdout);
		else if (n > 0)
			fputc('\n', stdout);
		print_view(l);
		if (l->watch)
			fputs("\033[J", stdout);
	}
	fflush(stdout);
	return result;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: gpuctl ls [options]\n"
		"\n"
		"One line per GPU with its processes under it; throttling is called out.\n"
		"  -i, --id=ID[,ID...]    GPUs by index, UUID or PCI bus id\n"
		"      --json             print the full snapshot as JSON (docs/json.md)\n"
		"  -l, --loop=SEC         repeat every SEC seconds\n"
		"  -w, --watch[=SEC]      redraw in place on a terminal (default every 1 s)\n"
		"  -c, --count=N          stop after N samples (with --loop or --watch)\n"
		"      --color=WHEN       auto (default: on a terminal), always or never (also --colour)\n"
		"      --no-header        omit the host/driver line\n");
}

int cmd_ls(const struct cli_global *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{"id", required_argument, NULL, 'i'},
		{"json", no_argument, NULL, 'j'},
		{"loop", required_argument, NULL, 'l'},
		{"watch", optional_argument, NULL, 'w'},
		{"count", required_argument, NULL, 'c'},
		{"color", required_argument, NULL, 'C'},
		{"colour", required_argument, NULL, 'C'},
		{"no-header", no_argument, NULL, 'N'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct ls l;
	memset(&l, 0, sizeof l);
	l.header = true;
	const char *id = NULL;
	enum cli_color color = COLOR_AUTO;
	double interval = 0;
	long count = 0;
	int c, rc;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":i:l:wc:h", opts, NULL)) != -1) {
		switch (c) {
		case 'i': id = optarg; break;
		case 'j': l.json = true; break;
		case 'l':
			if ((rc = cli_parse_interval("--loop", optarg, &interval)))
				return rc;
			break;
		case 'w':
			l.watch = true;
			/* getopt wants --watch=SEC; also take "--watch SEC" when SEC is a number */
			if (!optarg && optind < argc && argv[optind][0] >= '0' && argv[optind][0] <= '9')
				optarg = argv[optind++];
			if (optarg && (rc = cli_parse_interval("--watch", optarg, &interval)))
				return rc;
			break;
		case 'c':
			if ((rc = cli_parse_count("--count", optarg, &count)))
				return rc;
			break;
		case 'C':
			if ((rc = cli_parse_color(optarg, &color)))
				return rc;
			break;
		case 'N': l.header = false; break;
		case 'h': usage(stdout); return EXIT_OK;
		default:
			return cli_bad_option("ls", c, argv);
		}
	}
	if (optind < argc)
		return cli_extra_arg("ls", argv[optind]);
	if (l.watch && l.json) {
		cli_err("--watch redraws the text view; use --json with --loop instead");
		return EXIT_USAGE;
	}
	if (l.watch && interval <= 0)
		interval = 1.0;
	if (count && interval <= 0) {
		cli_err("--count needs --loop or --watch (it counts the samples of a loop)");
		return EXIT_USAGE;
	}
	/* redrawing in place only makes sense on a terminal; elsewhere it is a loop */
	if (l.watch && !isatty(STDOUT_FILENO))
		l.watch = false;
	l.looping = interval > 0;
	l.color = !l.json && cli_use_color(color, stdout);
	if (gethostname(l.host, sizeof l.host - 1) != 0)
		snprintf(l.host, sizeof l.host, "localhost");

	if ((rc = cli_open(g, &l.ctx)))
		return rc;
	l.sim = g->sim;
	if (gc_ctx_count(l.ctx) == 0 && !l.json) {
		printf("No devices were found\n"); /* nvidia-smi's words, and its exit code */
		rc = EXIT_NODEVICE;
		goto out;
	}
	if ((rc = cli_select_gpus(l.ctx, id, &l.snap, &l.which)))
		goto out;
	if (!l.json) {
		/* lease holders beside each GPU; without a state directory there are none to show */
		char err[512];
		if (lease_dir_open(&l.leases, NULL, false, err, sizeof err) != GC_OK)
			l.leases = NULL;
	}
	if (l.watch)
		fputs("\033[?25l\033[2J", stdout); /* hide the cursor, clear once */
	rc = cli_loop(interval, count, ls_tick, &l);
	if (l.watch)
		fputs("\033[?25h", stdout);
	if (rc == EXIT_OK && gc_ctx_count(l.ctx) == 0)
		rc = EXIT_NODEVICE; /* --json printed the empty list */
out:
	lease_dir_close(l.leases);
	free(l.which);
	gpu_snapshot_release(&l.snap);
	gc_ctx_free(l.ctx);
	return rc;
}
