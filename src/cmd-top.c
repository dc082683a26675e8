/*
 * cmd-top.c — `gpuctl top`: an interactive monitor of the GPUs, their
 * processes and who holds them (ncurses, through the module gpuctl-tui.so:
 * tui.h). The data is top-data.c's; this
 * file lays it out for the terminal's size (two lines per GPU with history,
 * or one when they would not fit), reads keys, and sends signals on request.
 * The terminal is restored on every way out: q, SIGINT/SIGTERM/SIGHUP, and
 * a crash.
 */
#include "cli.h"
#include "device/proc.h"
#include "config.h"
#include "top.h"
#include "tui.h"
#include "util/clock.h"
#include "util/datadir.h"
#include "sigstop.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <langinfo.h>
#include <limits.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { PAIR_OK = 1, PAIR_WARN, PAIR_BAD, PAIR_DIM, PAIR_HEAD };

struct top {
	struct top_data d;
	struct top_view v;
	bool color, utf8, readonly, help;
	double delay;
	size_t *rows, nrows, rows_cap;
	size_t sel, first;          /* selected row, first row shown */
	uint32_t sel_pid;           /* the selected process, kept across samples */
	enum top_row_kind sel_kind; /* or a job's row (the tree): */
	struct lease_info sel_lease; /* with TOP_ROW_JOB, its lease */
	char msg[512];              /* one line for the footer; "" none */
	char host[64];
	char conf[4096];            /* ~/.config/gpuctl/top.conf, "" when no home */
	/* the signal dialog: 0 none, 1 choosing a signal, 2 confirming it */
	int dialog;
	int dialog_sig;
	uint32_t dialog_pid;
	unsigned long long dialog_start; /* when it started (proc_stat), read as the dialog opened */
	uid_t dialog_uid;                /* and whose it was then */
	/* the filter prompt */
	bool editing;
	char edit[64];
};

static const struct tui_ops *tui;  /* the loaded gpuctl-tui.so's */
static volatile sig_atomic_t tui_on; /* its screen is up */

/* a crash (of the NVML layer or ours): put the terminal back, then die of it as before */
static void on_crash(int sig)
{
	if (tui_on)
		tui->close();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void catch_signals(void)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
	sigstop_catch(sigs, sizeof sigs / sizeof sigs[0]);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_crash;
	sa.sa_flags = SA_RESETHAND;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	sigaction(SIGFPE, &sa, NULL);
	sigaction(SIGILL, &sa, NULL);
	sigaction(SIGABRT, &sa, NULL);
}

/* ---- the remembered view (~/.config/gpuctl/top.conf) -------------------- */

static void conf_path(struct top *t)
{
	const char *x = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
	if (x && *x == '/')
		snprintf(t->conf, sizeof t->conf, "%s/gpuctl/top.conf", x);
	else if (home && *home == '/')
		snprintf(t->conf, sizeof t->conf, "%s/.config/gpuctl/top.conf", home);
	else
		t->conf[0] = '\0';
}

static void conf_load(struct top *t)
{
	FILE *f = t->conf[0] ? fopen(t->conf, "re") : NULL;
	if (!f)
		return;
	top_conf_read(&t->v, f);
	fclose(f);
}

/* mkdir -p of the directories above path (mode 0700 for what is made) */
static void make_parents(char *path)
{
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		(void)mkdir(path, 0700);
		*p = '/';
	}
}

static void conf_save(struct top *t)
{
	if (!t->conf[0])
		return;
	char tmp[sizeof t->conf + 32];
	snprintf(tmp, sizeof tmp, "%s.%ld", t->conf, (long)getpid());
	make_parents(tmp);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		if (fd >= 0)
			close(fd);
		snprintf(t->msg, sizeof t->msg, "cannot save the view in %.300s: %s", t->conf, strerror(errno));
		return;
	}
	top_conf_write(&t->v, f);
	if (fclose(f) != 0 || rename(tmp, t->conf) != 0) {
		snprintf(t->msg, sizeof t->msg, "cannot save the view in %.300s: %s", t->conf, strerror(errno));
		unlink(tmp);
	}
}

/* ---- drawing ----------------------------------------------------------- */

static void put(int y, int x, int w, attr_t a, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void put(int y, int x, int w, attr_t a, const char *fmt, ...)
{
	if (w <= 0 || y < 0 || y >= tui->lines() || x >= tui->cols())
		return;
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (x + w > tui->cols())
		w = tui->cols() - x;
	tui->put(y, x, buf, w, a);
}

static attr_t pair(const struct top *t, int p, attr_t mono)
{
	return t->color ? COLOR_PAIR(p) : mono;
}

/* a bar of width w for pct (0..100), "[|||||     ]" */
static void bar(const struct top *t, int y, int x, int w, double pct, bool known)
{
	if (w < 3)
		return;
	int inner = w - 2, fill = known ? (int)(pct * inner / 100.0 + 0.5) : 0;
	if (fill > inner)
		fill = inner;
	put(y, x, 1, A_NORMAL, "[");
	attr_t a = pct >= 90 ? pair(t, PAIR_BAD, A_BOLD) : pct >= 60 ? pair(t, PAIR_WARN, A_NORMAL) : pair(t, PAIR_OK, A_NORMAL);
	for (int i = 0; i < inner; i++)
		put(y, x + 1 + i, 1, i < fill ? a : A_NORMAL, "%s", i < fill ? "|" : " ");
	put(y, x + w - 1, 1, A_NORMAL, "]");
}

static void sparkline(const struct top *t, int y, int x, int w, const float *v, size_t n)
{
	static const char *const utf[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
	static const char ascii[] = " .:-=+*#";
	float cell[64];
	if (w <= 0)
		return;
	if (w > (int)(sizeof cell / sizeof cell[0]))
		w = (int)(sizeof cell / sizeof cell[0]);
	/* all the history kept, each cell the peak of its stretch of it */
	size_t cells = top_spark(v, n, (size_t)w, cell);
	int col = x + (w - (int)cells);
	for (size_t i = 0; i < cells; i++, col++) {
		if (cell[i] < 0) {
			put(y, col, 1, A_NORMAL, "?");
			continue;
		}
		int k = (int)(cell[i] * 7.0f / 100.0f + 0.5f);
		k = k < 0 ? 0 : k > 7 ? 7 : k;
		if (t->utf8) {
			/* one cell, several bytes: addnstr's count is in bytes */
			tui->put(y, col, utf[k], -1, pair(t, PAIR_OK, A_NORMAL));
		} else {
			put(y, col, 1, A_NORMAL, "%c", ascii[k]);
		}
	}
}

static bool u64(const struct top *t, size_t g, unsigned v, uint64_t *x)
{
	return gc_value_u64(t->d.snap, g, v, x) == GC_ST_OK;
}

static void fmt_gib(char *buf, size_t len, uint64_t b)
{
	snprintf(buf, len, "%.1f", (double)b / (1024.0 * 1024 * 1024));
}

/* a lease's start, "10:02" ("?" unknown) */
static void since_text(const struct lease_info *in, char *since, size_t len)
{
	snprintf(since, len, "?");
	time_t s = (time_t)in->since;
	struct tm tm;
	if (s > 0 && localtime_r(&s, &tm))
		strftime(since, len, "%H:%M", &tm);
}

/* "alice job 'train' since 10:02", or "" */
static void holder_text(const struct top_holder *h, char *buf, size_t len)
{
	if (!h->held) {
		buf[0] = '\0';
		return;
	}
	char since[16];
	since_text(&h->info, since, sizeof since);
	if (h->info.name[0])
		snprintf(buf, len, "%s '%s' since %s", h->info.user, h->info.name, since);
	else
		snprintf(buf, len, "%s since %s", h->info.user, since);
}

/* a process on GPU g of a user who holds no lease on it, while others use leases */
static bool gpu_unleased(const struct top *t, size_t g)
{
	for (size_t i = 0; i < t->d.nprocs; i++)
		if (t->d.procs[i].gpu == g && t->d.procs[i].unleased)
			return true;
	return false;
}

/* one GPU: its line (and, in the full mode, a second one with history and holder); returns lines used */
static int draw_gpu(struct top *t, size_t g, int y, bool full)
{
	const char *name = NULL;
	char sn[32], mem[48], tail[160] = "", holder[200];
	int st_name = gc_value_str(t->d.snap, g, GC_V_NAME, &name);
	top_short_name(st_name == GC_ST_OK ? name : "?", sn, sizeof sn, full ? 16 : 9);
	int w = tui->cols();
	int lost = gc_value_status(t->d.snap, g, GC_V_NAME) == GC_ST_GPU_LOST ||
		   gc_value_status(t->d.snap, g, GC_V_UTIL_GPU) == GC_ST_GPU_LOST;
	put(y, 0, 3, A_BOLD, "%2zu", g);
	put(y, 3, full ? 17 : 10, A_NORMAL, " %s", sn);
	int x = full ? 20 : 13;
	if (lost) {
		put(y, x, w - x, pair(t, PAIR_BAD, A_REVERSE) | A_BOLD, " GPU LOST: fell off the bus or needs a reset ");
		return 1;
	}
	uint64_t util = 0, used = 0, total = 0, temp = 0, pw = 0, plim = 0, sm = 0, mclk = 0, reasons = 0, mig = 0;
	bool uk = u64(t, g, GC_V_UTIL_GPU, &util);
	bool mk = u64(t, g, GC_V_MEM_USED, &used) && u64(t, g, GC_V_MEM_TOTAL, &total) && total;
	char a[16], b[16];
	fmt_gib(a, sizeof a, used);
	fmt_gib(b, sizeof b, total);
	snprintf(mem, sizeof mem, mk ? "%s/%sG" : "N/A", a, b);
	int bw = full ? (w - x - 77) / 2 : 0; /* room left for the throttle reasons */
	if (bw > 30)
		bw = 30;
	if (full && bw >= 6) {
		bar(t, y, x, bw, (double)util, uk);
		x += bw;
	}
	put(y, x, 5, A_NORMAL, uk ? "%4llu%%" : " N/A", (unsigned long long)util);
	x += 6;
	if (full && bw >= 6) {
		bar(t, y, x, bw, mk ? (double)used * 100.0 / (double)total : 0, mk);
		x += bw;
	}
	put(y, x, 14, A_NORMAL, "%13s", mem);
	x += 14;
	if (u64(t, g, GC_V_TEMP, &temp))
		put(y, x, 5, temp >= 85 ? pair(t, PAIR_BAD, A_BOLD) : A_NORMAL, "%3lluC", (unsigned long long)temp);
	else
		put(y, x, 5, A_NORMAL, "  N/A");
	x += 5;
	if (u64(t, g, GC_V_POWER_DRAW, &pw)) {
		if (full && u64(t, g, GC_V_POWER_LIMIT, &plim))
			put(y, x, 11, A_NORMAL, " %4llu/%lluW", (unsigned long long)(pw / 1000), (unsigned long long)(plim / 1000));
		else
			put(y, x, 6, A_NORMAL, " %4lluW", (unsigned long long)(pw / 1000));
	} else {
		put(y, x, 6, A_NORMAL, "  N/A");
	}
	x += full ? 11 : 6;
	if (full) {
		/* the SM clock, then the memory's: "1980/2619MHz" */
		char sc[16] = "?", mc[16] = "?";
		bool sk = u64(t, g, GC_V_CLK_SM, &sm), mck = u64(t, g, GC_V_CLK_MEM, &mclk);
		if (sk)
			snprintf(sc, sizeof sc, "%llu", (unsigned long long)sm);
		if (mck)
			snprintf(mc, sizeof mc, "%llu", (unsigned long long)mclk);
		if (sk || mck)
			put(y, x, 14, A_NORMAL, " %4s/%sMHz", sc, mc);
		else
			put(y, x, 14, A_NORMAL, "  N/A");
		x += 14;
	}
	if (u64(t, g, GC_V_REASONS, &reasons) && (reasons & GC_REASONS_THROTTLING)) {
		size_t o = 0;
		for (uint64_t bit = 1; bit && o < sizeof tail - 1; bit <<= 1)
			if ((reasons & bit & GC_REASONS_THROTTLING) && gc_reason_name(bit))
				o += (size_t)snprintf(tail + o, sizeof tail - o, "%s%s", o ? "," : "", gc_reason_name(bit));
		put(y, x, w - x, pair(t, PAIR_BAD, A_BOLD), full ? " THROTTLED: %s" : " THR", tail);
		x += full ? 13 + (int)strlen(tail) : 4;
	}
	if (u64(t, g, GC_V_MIG_CURRENT, &mig) && mig) {
		put(y, x, 4, A_BOLD, " MIG");
		x += 4;
	}
	const struct top_holder *th = &t->d.holder[g];
	if (th->quarantined) {
		char q[64];
		if (!full)
			snprintf(q, sizeof q, " QUAR");
		else if (th->qxid)
			snprintf(q, sizeof q, " QUARANTINED: %s %llu", th->qreason, (unsigned long long)th->qxid);
		else
			snprintf(q, sizeof q, " QUARANTINED: %s", th->qreason);
		put(y, x, w - x, pair(t, PAIR_BAD, A_BOLD), "%s", q);
		x += (int)strlen(q);
	}
	if (gpu_unleased(t, g))
		put(y, w - 2, 2, pair(t, PAIR_WARN, A_BOLD), " U");
	holder_text(&t->d.holder[g], holder, sizeof holder);
	if (!full) {
		if (holder[0] && x + 4 < w)
			put(y, x + 1, w - x - 3, pair(t, PAIR_HEAD, A_NORMAL), "%s", holder);
		return 1;
	}
	/* the second line: history, and who holds it */
	const struct top_gpu *h = &t->d.hist[g];
	int sw = (w - 60) / 2; /* room left for the holder */
	if (sw > 40)
		sw = 40;
	if (sw >= 8) {
		put(y + 1, 4, 5, pair(t, PAIR_DIM, A_NORMAL), "util");
		sparkline(t, y + 1, 9, sw, h->util, h->nhist);
		put(y + 1, 10 + sw, 4, pair(t, PAIR_DIM, A_NORMAL), "mem");
		sparkline(t, y + 1, 14 + sw, sw, h->mem, h->nhist);
	}
	int hx = sw >= 8 ? 15 + 2 * sw : 4;
	if (holder[0])
		put(y + 1, hx, w - hx, pair(t, PAIR_HEAD, A_NORMAL), "leased: %s", holder);
	else
		put(y + 1, hx, w - hx, pair(t, PAIR_DIM, A_NORMAL), "not leased");
	return 2;
}

static void fmt_bytes(char *buf, size_t len, uint64_t b, bool known)
{
	if (!known)
		snprintf(buf, len, "N/A");
	else if (b >= (1ULL << 30))
		snprintf(buf, len, "%.1fG", (double)b / (1ULL << 30));
	else
		snprintf(buf, len, "%lluM", (unsigned long long)(b >> 20));
}

/* a job's row in the tree: its holder, its name (or command), its GPUs, since when; or "(no lease)" */
static void draw_job(struct top *t, int y, size_t r, enum top_row_kind kind)
{
	char line[1024];
	if (kind == TOP_ROW_JOB) {
		const struct top_lease *l = &t->d.leases[t->rows[r] - t->d.nprocs];
		char since[16];
		since_text(&l->info, since, sizeof since);
		snprintf(line, sizeof line, "%8s %-9.9s %3s %8s %4s %6s %7s job '%s' on GPU%s %s since %s%s", "",
			 l->info.user[0] ? l->info.user : "?", "", "", "", "", "",
			 l->info.name[0] ? l->info.name : l->info.command, l->ngpus > 1 ? "s" : "", l->gpus, since,
			 l->info.orphan ? " (its job has exited; a process it left holds the lease)" : "");
	} else {
		snprintf(line, sizeof line, "%8s %-9.9s %3s %8s %4s %6s %7s (no lease): of no job that holds their GPU", "",
			 "", "", "", "", "", "");
	}
	attr_t a = (r == t->sel ? A_REVERSE : A_NORMAL) | A_BOLD;
	if (kind == TOP_ROW_NOLEASE)
		a |= pair(t, PAIR_DIM, A_NORMAL);
	else
		a |= pair(t, PAIR_HEAD, A_NORMAL);
	if (r == t->sel)
		tui->fill(y, 0, tui->cols(), A_REVERSE);
	put(y, 0, tui->cols(), a, "%s", line);
}

static void draw_procs(struct top *t, int y, int last)
{
	const int w = tui->cols();
	char head[256];
	int o = 0;
	/* as the rows below: "%8u %-9.9s %3u %8s %4s %6s %7s %s" */
	static const int widths[TOP__NCOL] = {8, 9, 4, 9, 5, 7, 8, 0};
	for (int c = 0; c < TOP__NCOL; c++) {
		const char *mark = (enum top_col)c == t->v.sort ? (t->v.reverse ? "^" : "v") : "";
		char label[24];
		snprintf(label, sizeof label, "%s%s", top_col_name((enum top_col)c), mark);
		if (c == TOP_CMD)
			o += snprintf(head + o, sizeof head - o, " %s", label);
		else if (c == TOP_USER)
			o += snprintf(head + o, sizeof head - o, " %-*s", widths[c], label);
		else
			o += snprintf(head + o, sizeof head - o, "%*s", widths[c], label);
		if (o >= (int)sizeof head)
			break;
	}
	tui->fill(y, 0, w, A_REVERSE);
	tui->put(y, 0, head, w, A_REVERSE);
	y++;
	int room = last - y;
	if (room < 1)
		return;
	if (t->sel >= t->nrows)
		t->sel = t->nrows ? t->nrows - 1 : 0;
	if (t->sel < t->first)
		t->first = t->sel;
	if (t->sel >= t->first + (size_t)room)
		t->first = t->sel - (size_t)room + 1;
	if (t->first > t->nrows)
		t->first = 0;
	for (size_t r = t->first; r < t->nrows && y < last; r++, y++) {
		enum top_row_kind kind = top_row_kind(&t->d, t->rows[r]);
		if (kind != TOP_ROW_PROC) {
			draw_job(t, y, r, kind);
			continue;
		}
		const struct top_proc *p = &t->d.procs[t->rows[r]];
		char gm[16], rss[16], cpu[16], sm[16], line[512];
		fmt_bytes(gm, sizeof gm, p->gpu_mem, p->mem_known);
		fmt_bytes(rss, sizeof rss, p->rss, p->rss > 0);
		if (p->cpu >= 0)
			snprintf(cpu, sizeof cpu, "%.0f", p->cpu);
		else
			snprintf(cpu, sizeof cpu, "-");
		if (p->sm_util >= 0)
			snprintf(sm, sizeof sm, "%d", p->sm_util);
		else
			snprintf(sm, sizeof sm, "N/A");
		const char *user = p->user[0] ? p->user : "?";
		const char *cmd = p->command[0] ? p->command : (p->visible ? "?" : "(not in this PID namespace)");
		/* in the tree: under its job's row at depth 1, two columns further for each parent */
		snprintf(line, sizeof line, "%8u %-9.9s %3u %8s %4s %6s %7s %*s%s%s", p->pid, user, p->gpu, gm, sm, cpu,
			 rss, p->depth > 1 ? (p->depth - 1) * 2 : 0, "", p->depth ? "`- " : "", cmd);
		attr_t a = r == t->sel ? A_REVERSE : A_NORMAL;
		if (r == t->sel)
			tui->fill(y, 0, w, A_REVERSE);
		put(y, 0, w - (p->unleased ? 2 : 0), a, "%s", line);
		if (p->unleased)
			put(y, w - 2, 2, pair(t, PAIR_WARN, A_BOLD) | (r == t->sel ? A_REVERSE : 0), " U");
	}
	if (t->nrows == 0)
		put(y, 2, w - 2, pair(t, PAIR_DIM, A_NORMAL), t->v.filter[0] ? "no process matches '%s'"
										: "no processes on the GPUs%s",
		    t->v.filter[0] ? t->v.filter : "");
}

#define PANEL_ROWS 3 /* waiters and queued jobs shown, each */

/* what the bottom panel shows: which of its two lists, and how many rows of each */
struct bottom {
	bool waiters, queue;        /* their heading lines */
	size_t nw, nj;              /* rows under them */
};

/*
 * The bottom panel (waiters in line, then gpuctld's jobs) in at most `room`
 * lines: up to PANEL_ROWS rows each, fewer (the longer list first, then the
 * headings, the queue's first) when the room is short. Returns the lines taken.
 */
static int bottom_fit(const struct top *t, int room, struct bottom *b)
{
	b->waiters = t->d.nwaiters > 0;
	b->queue = t->d.queue_up;
	b->nw = b->waiters ? (t->d.nwaiters < PANEL_ROWS ? t->d.nwaiters : PANEL_ROWS) : 0;
	b->nj = b->queue ? (t->d.njobs < PANEL_ROWS ? t->d.njobs : PANEL_ROWS) : 0;
	for (;;) {
		int need = (b->waiters ? 1 + (int)b->nw : 0) + (b->queue ? 1 + (int)b->nj : 0);
		if (need <= room)
			return need;
		if (b->nw || b->nj) {
			if (b->nw > b->nj)
				b->nw--;
			else
				b->nj--;
		} else if (b->queue) {
			b->queue = false;
		} else {
			b->waiters = false;
		}
	}
}

static void draw_bottom(struct top *t, int y, const struct bottom *b)
{
	if (b->waiters) {
		put(y++, 0, tui->cols(), A_BOLD, "waiting for GPUs, first come first served: %zu", t->d.nwaiters);
		for (size_t i = 0; i < b->nw; i++, y++) {
			const struct lease_info *in = &t->d.waiters[i].info;
			put(y, 2, tui->cols() - 2, A_NORMAL, "#%zu %s wants %s: %s", i + 1, in->user,
			    in->request[0] ? in->request : "?", in->name[0] ? in->name : in->command);
		}
	}
	if (b->queue) {
		size_t run = 0;
		for (size_t i = 0; i < t->d.njobs; i++)
			run += strcmp(t->d.jobs[i].state, "running") == 0;
		put(y++, 0, tui->cols(), A_BOLD, "gpuctld queue: %zu running, %zu waiting", run, t->d.njobs - run);
		for (size_t i = 0; i < b->nj; i++, y++) {
			const struct top_job *j = &t->d.jobs[i];
			char name[80] = "";
			if (j->name[0])
				snprintf(name, sizeof name, " '%s'", j->name);
			put(y, 2, tui->cols() - 2, A_NORMAL, "job %lld%s %s %s, %lld GPU%s%s%s", j->id, name, j->user, j->state,
			    j->gpus, j->gpus == 1 ? "" : "s", j->where[0] ? ": " : "", j->where);
		}
	}
}

static const char *const help_lines[] = {
	"gpuctl top - keys",
	"",
	"  q, F10        quit",
	"  h, ?          this help (any key closes it)",
	"  Up/Down, PgUp/PgDn, Home/End   select a row",
	"  < >           sort by the column to the left / right",
	"  r             reverse the order",
	"  t             tree: a row per job (lease): holder, name, GPUs, since when;",
	"                its processes under it, children under their parents; last,",
	"                (no lease): on GPUs nobody leases, or not the holder's user's.",
	"                Jobs in the order of their first process; a filter keeps the",
	"                job's row of a process that matches",
	"  /             filter by user or command text (Enter keeps it, Esc clears it)",
	"  k             send a signal to the selected process (TERM, INT or KILL; asks",
	"                first); a job's row is not a process: nothing is sent",
	"",
	"A 'U' at the end of a process row (and of its GPU's): its user holds no lease",
	"on that GPU while others use leases on this machine (someone bypassing gpuctl run).",
	"The sort is remembered in ~/.config/gpuctl/top.conf.",
	NULL,
};

static void draw(struct top *t)
{
	tui->blank();
	if (t->help) {
		for (int i = 0; help_lines[i] && i < tui->lines(); i++)
			put(i, 1, tui->cols() - 1, i == 0 ? A_BOLD : A_NORMAL, "%s", help_lines[i]);
		tui->show();
		return;
	}
	char drv[32] = "", cuda[16] = "?", clock[16];
	snprintf(drv, sizeof drv, "%s", gc_snapshot_driver(t->d.snap));
	gc_cuda_version_str(gc_snapshot_cuda(t->d.snap), cuda, sizeof cuda);
	time_t now = time(NULL);
	struct tm tm;
	localtime_r(&now, &tm);
	strftime(clock, sizeof clock, "%H:%M:%S", &tm);
	put(0, 0, tui->cols(), A_BOLD, "gpuctl top  %s  driver %s  CUDA %s  %s%s%s", t->host, drv[0] ? drv : "?", cuda, clock,
	    t->readonly ? "  [read-only]" : "", t->v.filter[0] ? "  [filter]" : "");
	int footer = tui->lines() - 1;
	/* full mode when every GPU gets two lines and the process table still gets 4 */
	bool full = 1 + 2 * (int)t->d.ngpus + 1 + 4 + 1 <= tui->lines() && tui->cols() >= 100;
	int y = 1;
	for (size_t g = 0; g < t->d.ngpus && y < footer; g++)
		y += draw_gpu(t, g, y, full);
	/* the process table keeps its header and one row under the GPUs; the bottom panel gets
	 * what is left below that, up to what it needs */
	int procs_min = y + 2 < footer ? y + 2 : footer;
	struct bottom b;
	int procs_end = footer - bottom_fit(t, footer - procs_min, &b);
	if (y < procs_end)
		draw_procs(t, y, procs_end);
	draw_bottom(t, procs_end, &b);
	/* the footer: a prompt, a message, or the keys */
	if (t->editing)
		put(footer, 0, tui->cols(), A_BOLD, "filter: %s_", t->edit);
	else if (t->dialog == 1)
		put(footer, 0, tui->cols(), A_BOLD, "signal to pid %u: [t] SIGTERM  [i] SIGINT  [9] SIGKILL  (Esc: cancel)",
		    t->dialog_pid);
	else if (t->dialog == 2)
		put(footer, 0, tui->cols(), pair(t, PAIR_BAD, A_BOLD), "send SIG%s to pid %u? [y/N]", sigabbrev_np(t->dialog_sig),
		    t->dialog_pid);
	else if (t->msg[0])
		put(footer, 0, tui->cols(), A_BOLD, "%s", t->msg);
	else
		put(footer, 0, tui->cols(), pair(t, PAIR_DIM, A_NORMAL), "q quit  h help  <> sort  r reverse  / filter  t tree%s",
		    t->readonly ? "" : "  k signal");
	tui->show();
}

/* ---- keys -------------------------------------------------------------- */

/* the selection is on row r: the same process, the same lease's job, or "(no lease)" */
static bool selected(const struct top *t, size_t r)
{
	size_t row = t->rows[r];
	enum top_row_kind kind = top_row_kind(&t->d, row);
	if (kind != t->sel_kind)
		return false;
	if (kind == TOP_ROW_PROC)
		return t->d.procs[row].pid == t->sel_pid;
	if (kind == TOP_ROW_JOB)
		return top_lease_same(&t->d.leases[row - t->d.nprocs].info, &t->sel_lease);
	return true;
}

static void rebuild(struct top *t)
{
	size_t need = top_rows_max(&t->d);
	if (need > t->rows_cap) {
		size_t *r = realloc(t->rows, need * sizeof *r);
		if (!r) {
			t->nrows = 0; /* the rows would not fit */
			return;
		}
		t->rows = r;
		t->rows_cap = need;
	}
	t->nrows = top_rows(&t->d, &t->v, t->rows);
	/* keep the selection on the same process or job */
	for (size_t r = 0; r < t->nrows; r++)
		if (selected(t, r)) {
			t->sel = r;
			return;
		}
	if (t->sel >= t->nrows)
		t->sel = t->nrows ? t->nrows - 1 : 0;
}

static void select_row(struct top *t, long to)
{
	if (t->nrows == 0)
		return;
	if (to < 0)
		to = 0;
	if ((size_t)to >= t->nrows)
		to = (long)t->nrows - 1;
	t->sel = (size_t)to;
	size_t row = t->rows[t->sel];
	t->sel_kind = top_row_kind(&t->d, row);
	if (t->sel_kind == TOP_ROW_PROC)
		t->sel_pid = t->d.procs[row].pid;
	else if (t->sel_kind == TOP_ROW_JOB)
		t->sel_lease = t->d.leases[row - t->d.nprocs].info;
}

static void ask_signal(struct top *t)
{
	if (t->readonly) {
		snprintf(t->msg, sizeof t->msg, "read-only (--readonly): no signals are sent");
		return;
	}
	if (t->nrows == 0) {
		snprintf(t->msg, sizeof t->msg, "no process selected");
		return;
	}
	size_t row = t->rows[t->sel];
	enum top_row_kind kind = top_row_kind(&t->d, row);
	if (kind == TOP_ROW_JOB) {
		const struct top_lease *l = &t->d.leases[row - t->d.nprocs];
		snprintf(t->msg, sizeof t->msg, "job '%.80s' is a row for its processes: k signals one process; select one under it",
			 l->info.name[0] ? l->info.name : l->info.command);
		return;
	}
	if (kind == TOP_ROW_NOLEASE) {
		snprintf(t->msg, sizeof t->msg, "(no lease) is a row for the processes under it: select one to signal it");
		return;
	}
	const struct top_proc *p = &t->d.procs[row];
	if (!p->visible) {
		snprintf(t->msg, sizeof t->msg, "pid %u is not in this PID namespace: it cannot be signalled from here", p->pid);
		return;
	}
	if (geteuid() != 0 && p->uid != geteuid()) {
		snprintf(t->msg, sizeof t->msg, "pid %u is %s's: only your own processes can be signalled (or as root)",
			 p->pid, p->user);
		return;
	}
	/* the process is the one that had this pid when the dialog opened: its start time and
	 * owner go with the signal (proc_signal), so a pid reused meanwhile is never hit */
	if (proc_stat((pid_t)p->pid, NULL, NULL, &t->dialog_start) != 0) {
		snprintf(t->msg, sizeof t->msg, "pid %u has ended: nothing to signal", p->pid);
		return;
	}
	t->dialog = 1;
	t->dialog_pid = p->pid;
	t->dialog_uid = p->uid;
}

static void send_signal(struct top *t)
{
	const char *sig = sigabbrev_np(t->dialog_sig);
	unsigned long long start = 0;
	errno = 0;
	if (proc_signal((pid_t)t->dialog_pid, t->dialog_start, t->dialog_uid, t->dialog_sig) == 0) {
		snprintf(t->msg, sizeof t->msg, "sent SIG%s to pid %u", sig, t->dialog_pid);
	} else {
		int e = errno;
		if (e && proc_stat((pid_t)t->dialog_pid, NULL, NULL, &start) == 0 && start == t->dialog_start)
			snprintf(t->msg, sizeof t->msg, "cannot send SIG%s to pid %u: %s", sig, t->dialog_pid, strerror(e));
		else
			snprintf(t->msg, sizeof t->msg, "pid %u has ended (or is another process now): nothing sent",
				 t->dialog_pid);
	}
	t->dialog = 0;
}

/* one key: false to quit */
static bool key(struct top *t, int c)
{
	if (t->help) {
		t->help = false;
		return c != 'q';
	}
	if (t->editing) {
		size_t n = strlen(t->edit);
		if (c == '\n' || c == KEY_ENTER || c == '\r') {
			snprintf(t->v.filter, sizeof t->v.filter, "%s", t->edit);
			t->editing = false;
		} else if (c == 27) {
			t->v.filter[0] = t->edit[0] = '\0';
			t->editing = false;
		} else if ((c == KEY_BACKSPACE || c == 127 || c == 8) && n) {
			t->edit[n - 1] = '\0';
		} else if (c >= 32 && c < 127 && n + 1 < sizeof t->edit) {
			t->edit[n] = (char)c;
			t->edit[n + 1] = '\0';
		}
		snprintf(t->v.filter, sizeof t->v.filter, "%s", t->edit); /* as typed */
		rebuild(t);
		return true;
	}
	if (t->dialog == 1) {
		t->dialog = c == 't' || c == 'T' ? (t->dialog_sig = SIGTERM, 2)
			  : c == 'i' || c == 'I' ? (t->dialog_sig = SIGINT, 2)
			  : c == '9' || c == 'K' ? (t->dialog_sig = SIGKILL, 2) : 0;
		return true;
	}
	if (t->dialog == 2) {
		if (c == 'y' || c == 'Y')
			send_signal(t);
		else
			snprintf(t->msg, sizeof t->msg, "nothing sent");
		t->dialog = 0;
		return true;
	}
	t->msg[0] = '\0';
	switch (c) {
	case 'q': case 'Q': case KEY_F(10): return false;
	case 'h': case '?': case KEY_F(1): t->help = true; break;
	case KEY_UP: select_row(t, (long)t->sel - 1); break;
	case KEY_DOWN: select_row(t, (long)t->sel + 1); break;
	case KEY_PPAGE: select_row(t, (long)t->sel - 10); break;
	case KEY_NPAGE: select_row(t, (long)t->sel + 10); break;
	case KEY_HOME: select_row(t, 0); break;
	case KEY_END: select_row(t, (long)t->nrows - 1); break;
	case '<': case ',':
		t->v.sort = t->v.sort == 0 ? TOP__NCOL - 1 : t->v.sort - 1;
		rebuild(t);
		conf_save(t);
		break;
	case '>': case '.':
		t->v.sort = (t->v.sort + 1) % TOP__NCOL;
		rebuild(t);
		conf_save(t);
		break;
	case 'r': t->v.reverse = !t->v.reverse; rebuild(t); conf_save(t); break;
	case 't': t->v.tree = !t->v.tree; rebuild(t); conf_save(t); break;
	case '/':
		t->editing = true;
		snprintf(t->edit, sizeof t->edit, "%s", t->v.filter);
		break;
	case 'k': case KEY_DC: ask_signal(t); break;
	default: break;
	}
	return true;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: gpuctl top [-d SECONDS] [--readonly] [--color=WHEN]\n\n"
		   "An interactive monitor: every GPU (load, memory, temperature, power, clocks,\n"
		   "throttling, MIG, history), their processes (GPU memory, SM%%, host CPU and\n"
		   "memory, command), who holds each GPU's lease and who waits in line.\n"
		   "  -d, --delay=SECONDS    refresh interval (default 1; 0.1 to 86400)\n"
		   "      --readonly         send no signals\n"
		   "      --color=WHEN       auto (default: on; NO_COLOR turns it off), always or never\n"
		   "                         (also --colour)\n"
		   "  -h, --help             this help; in top, h shows the keys\n");
}

/* -d: seconds written in decimal (no sign, exponent or hex), 0.1 to 86400 */
static int parse_delay(const char *arg, double *out)
{
	size_t n = strlen(arg);
	char *end = NULL;
	double v = -1;
	if (n && strspn(arg, "0123456789.") == n) {
		errno = 0;
		v = strtod(arg, &end);
		if (errno || end == arg || *end)
			v = -1;
	}
	if (!(v >= 0.1 && v <= 86400)) {
		cli_err("invalid --delay '%s': expected seconds, 0.1 to 86400 (e.g. 1 or 0.5)", arg);
		return EXIT_USAGE;
	}
	*out = v;
	return EXIT_OK;
}

/*
 * gpuctl-tui.so: beside this program (the build tree), else where it is
 * installed. Said and NULL when neither loads.
 */
static const struct tui_ops *tui_load(void)
{
	char exe[PATH_MAX], path[PATH_MAX + 32];
	const char *dirs[2] = {datadir_exe_dir(exe, sizeof exe) == 0 ? exe : NULL, GPUCTL_PKGLIBDIR};
	char why[512] = "";
	for (size_t i = 0; i < 2; i++) {
		if (!dirs[i])
			continue;
		snprintf(path, sizeof path, "%s/%s", dirs[i], GPUCTL_TUI_MODULE);
		if (access(path, R_OK) != 0)
			continue;
		void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		tui_entry_fn entry = h ? (tui_entry_fn)dlsym(h, GPUCTL_TUI_ENTRY) : NULL;
		const struct tui_ops *ops = entry ? entry() : NULL;
		if (ops && ops->abi == GPUCTL_TUI_ABI)
			return ops;
		snprintf(why, sizeof why, "%s", h && !ops ? "not gpuctl's module" : ops ? "another gpuctl's module" : dlerror());
		if (h)
			dlclose(h);
		break;
	}
	cli_err("cannot load the terminal interface %s from %s%s%s: %s", GPUCTL_TUI_MODULE, dirs[0] ? dirs[0] : "",
		dirs[0] ? " or " : "", GPUCTL_PKGLIBDIR, why[0] ? why : "not found");
	return NULL;
}

int cmd_top(const struct cli_global *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{"delay", required_argument, NULL, 'd'},
		{"readonly", no_argument, NULL, 'R'},
		{"color", required_argument, NULL, 'C'},
		{"colour", required_argument, NULL, 'C'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct top t;
	memset(&t, 0, sizeof t);
	t.delay = 1.0;
	t.v.sort = TOP_GMEM;
	enum cli_color color = COLOR_AUTO;
	int c, rc;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":d:h", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			if ((rc = parse_delay(optarg, &t.delay)))
				return rc;
			break;
		case 'R': t.readonly = true; break;
		case 'C':
			if ((rc = cli_parse_color(optarg, &color)))
				return rc;
			break;
		case 'h': usage(stdout); return EXIT_OK;
		default: return cli_bad_option("top", c, argv);
		}
	}
	if (optind < argc)
		return cli_extra_arg("top", argv[optind]);
	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		cli_err("top needs a terminal (standard input and output); for a stream of samples use gpuctl ls --loop 1");
		return EXIT_USAGE;
	}
	gc_ctx *ctx = NULL;
	if ((rc = cli_open(g, &ctx)))
		return rc;
	if (top_data_init(&t.d, ctx, NULL) != GC_OK) {
		cli_err("out of memory");
		gc_ctx_free(ctx);
		return EXIT_FAIL;
	}
	if (gethostname(t.host, sizeof t.host - 1) != 0)
		snprintf(t.host, sizeof t.host, "localhost");
	char safe[64];
	snprintf(t.host, sizeof t.host, "%s", cli_safe(safe, sizeof safe, t.host));
	conf_path(&t);
	conf_load(&t);
	int first = top_data_sample(&t.d);
	if (first != GC_OK) {
		cli_err("%s", t.d.err);
		top_data_free(&t.d);
		gc_ctx_free(ctx);
		return cli_exit_code(first);
	}
	setlocale(LC_ALL, "");
	const char *cs = nl_langinfo(CODESET);
	t.utf8 = cs && strcmp(cs, "UTF-8") == 0;
	if (!(tui = tui_load())) {
		top_data_free(&t.d);
		gc_ctx_free(ctx);
		return EXIT_FAIL;
	}
	catch_signals();
	if (!tui->open()) {
		cli_err("cannot set up the terminal (TERM=%s)", getenv("TERM") ? getenv("TERM") : "");
		top_data_free(&t.d);
		gc_ctx_free(ctx);
		return EXIT_FAIL;
	}
	tui_on = 1;
	const char *nc = getenv("NO_COLOR");
	t.color = color != COLOR_NEVER && (color == COLOR_ALWAYS || !nc || !*nc) && tui->colors();
	if (t.color) {
		tui->pair(PAIR_OK, COLOR_GREEN, -1);
		tui->pair(PAIR_WARN, COLOR_YELLOW, -1);
		tui->pair(PAIR_BAD, COLOR_RED, -1);
		tui->pair(PAIR_DIM, COLOR_CYAN, -1);
		tui->pair(PAIR_HEAD, COLOR_MAGENTA, -1);
	}
	rebuild(&t);
	if (t.nrows)
		select_row(&t, 0);
	int64_t next = clock_mono_ms() + (int64_t)(t.delay * 1000);
	bool go = true, hung_up = false;
	while (go && !sigstop_last) {
		draw(&t);
		int64_t left = next - clock_mono_ms();
		int k = tui->key(left > 0 ? (int)left : 0);
		if (k == KEY_RESIZE) {
			tui->repaint();
		} else if (k != ERR) {
			go = key(&t, k);
		} else {
			/* a terminal that is gone (the ssh session or tmux ended, its master closed) gives ERR at
			   once: leave, rather than redraw for nobody in a busy loop */
			struct pollfd pf = {.fd = STDIN_FILENO, .events = POLLIN};
			if (poll(&pf, 1, 0) == 1 && (pf.revents & (POLLHUP | POLLERR | POLLNVAL))) {
				hung_up = true;
				break;
			}
		}
		if (clock_mono_ms() >= next) {
			if (top_data_sample(&t.d) != GC_OK && !t.msg[0])
				snprintf(t.msg, sizeof t.msg, "cannot sample: %.400s", t.d.err);
			rebuild(&t);
			next = clock_mono_ms() + (int64_t)(t.delay * 1000);
		}
	}
	tui_on = 0;
	tui->close();
	top_data_free(&t.d);
	free(t.rows);
	gc_ctx_free(ctx);
	return sigstop_last ? 128 + sigstop_last : hung_up ? 128 + SIGHUP : EXIT_OK;
}
