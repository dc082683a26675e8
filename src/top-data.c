/*
 * top-data.c — the model of `gpuctl top` (top.h): a sample of the GPUs,
 * their processes with /proc's view of them, the leases and the waiters,
 * and the process table's rows.
 */
#include "top.h"

#include "cli.h"
#include "device/proc.h"
#include "jobs/quarantine.h"
#include "jobs/gpuctld-ask.h"
#include "util/clock.h"
#include "util/grow.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define TOP_MASK (GC_BIT(GC_V_NAME) | GC_BIT(GC_V_UUID) | GC_BIT(GC_V_MEM_TOTAL) | GC_BIT(GC_V_MEM_USED) | \
	GC_BIT(GC_V_UTIL_GPU) | GC_BIT(GC_V_UTIL_MEM) | GC_BIT(GC_V_TEMP) | GC_BIT(GC_V_POWER_DRAW) | \
	GC_BIT(GC_V_POWER_LIMIT) | GC_BIT(GC_V_CLK_SM) | GC_BIT(GC_V_CLK_MEM) | GC_BIT(GC_V_REASONS) | \
	GC_BIT(GC_V_MIG_CURRENT) | GC_BIT(GC_V_FAN) | GC_BIT(GC_V_PROCS) | GC_BIT(GC_V_GPROCS) | \
	GC_BIT(GC_V_PROC_UTIL))

int top_data_init(struct top_data *d, gc_ctx *ctx, const char *state_dir)
{
	memset(d, 0, sizeof *d);
	d->ctx = ctx;
	d->state_dir = state_dir;
	d->ngpus = gc_ctx_count(ctx);
	d->snap = gc_snapshot_new();
	d->hist = calloc(d->ngpus ? d->ngpus : 1, sizeof *d->hist);
	d->holder = calloc(d->ngpus ? d->ngpus : 1, sizeof *d->holder);
	if (!d->snap || !d->hist || !d->holder) {
		top_data_free(d);
		return GC_ENOMEM;
	}
	return GC_OK;
}

void top_data_free(struct top_data *d)
{
	gc_snapshot_free(d->snap);
	free(d->hist);
	free(d->holder);
	free(d->leases);
	free(d->waiters);
	free(d->procs);
	free(d->jobs);
	free(d->seen);
	free(d->seen_next);
	memset(d, 0, sizeof *d);
}

static void push(struct top_gpu *h, float util, float mem)
{
	if (h->nhist == TOP_HIST) {
		memmove(h->util, h->util + 1, (TOP_HIST - 1) * sizeof *h->util);
		memmove(h->mem, h->mem + 1, (TOP_HIST - 1) * sizeof *h->mem);
		h->nhist--;
	}
	h->util[h->nhist] = util;
	h->mem[h->nhist++] = mem;
}

/* utime + stime, ppid and resident bytes of pid from /proc: 0, or -1 when it cannot be read */
static int proc_cpu(uint32_t pid, unsigned long long *ticks, pid_t *ppid, uint64_t *rss)
{
	struct proc_statf f;
	if (pid > INT32_MAX || proc_stat_read(NULL, (pid_t)pid, &f) < 0)
		return -1;
	*ticks = f.utime + f.stime;
	*ppid = f.ppid;
	long page = sysconf(_SC_PAGESIZE);
	*rss = f.rss > 0 && page > 0 ? (uint64_t)f.rss * (uint64_t)page : 0;
	return 0;
}

static unsigned long long seen_ticks(const struct top_data *d, uint32_t pid, bool *found)
{
	for (size_t i = 0; i < d->nseen; i++)
		if (d->seen[i].pid == pid) {
			*found = true;
			return d->seen[i].ticks;
		}
	*found = false;
	return 0;
}

static void leases(struct top_data *d)
{
	for (size_t i = 0; i < d->ngpus; i++)
		d->holder[i].held = d->holder[i].quarantined = false;
	free(d->waiters);
	d->waiters = NULL;
	d->nwaiters = 0;
	struct lease_dir *dir = NULL;
	char err[256];
	int rc = lease_dir_open(&dir, d->state_dir, false, err, sizeof err);
	if (rc == GC_ENOTFOUND)
		return; /* nothing was ever leased here */
	if (rc != GC_OK) {
		snprintf(d->err, sizeof d->err, "leases: %.200s", err);
		return;
	}
	for (size_t i = 0; i < d->ngpus; i++) {
		const char *uuid = NULL;
		struct quarantine_info q;
		if (gc_value_str(d->snap, i, GC_V_UUID, &uuid) == GC_ST_OK && quarantine_get(dir, uuid, &q) == 1) {
			d->holder[i].quarantined = true;
			snprintf(d->holder[i].qreason, sizeof d->holder[i].qreason, "%s", q.reason);
			d->holder[i].qxid = q.xid;
		}
	}
	struct lease_entry *e = NULL;
	size_t n = 0;
	if (lease_list(dir, &e, &n) == GC_OK) {
		for (size_t k = 0; k < n; k++) {
			for (size_t i = 0; i < d->ngpus; i++) {
				const char *uuid = NULL;
				if (gc_value_str(d->snap, i, GC_V_UUID, &uuid) == GC_ST_OK && strcmp(uuid, e[k].uuid) == 0) {
					d->holder[i].held = true;
					d->holder[i].info = e[k].info;
					lease_info_sanitize(&d->holder[i].info);
				}
			}
		}
		free(e);
	}
	if (lease_queue_list(dir, &d->waiters, &d->nwaiters) == GC_OK) {
		for (size_t k = 0; k < d->nwaiters; k++)
			lease_info_sanitize(&d->waiters[k].info);
	} else {
		d->waiters = NULL;
		d->nwaiters = 0;
	}
	lease_dir_close(dir);
}

bool top_lease_same(const struct lease_info *a, const struct lease_info *b)
{
	return a->pid == b->pid && a->supervisor == b->supervisor && a->uid == b->uid && a->since == b->since;
}

/* the GPUs held, one top_lease for each lease (a gpuctl run of two GPUs holds both under one record) */
static int group_leases(struct top_data *d)
{
	free(d->leases);
	d->leases = NULL;
	d->nleases = 0;
	size_t nheld = 0;
	for (size_t i = 0; i < d->ngpus; i++)
		nheld += d->holder[i].held;
	if (!nheld)
		return GC_OK;
	if (!(d->leases = calloc(nheld, sizeof *d->leases)))
		return GC_ENOMEM;
	for (size_t i = 0; i < d->ngpus; i++) {
		struct top_holder *h = &d->holder[i];
		if (!h->held)
			continue;
		size_t k = 0;
		while (k < d->nleases && !top_lease_same(&d->leases[k].info, &h->info))
			k++;
		struct top_lease *l = &d->leases[k];
		if (k == d->nleases) {
			d->nleases++;
			l->info = h->info;
		}
		h->lease = k;
		l->ngpus++;
		char one[24];
		size_t o = strlen(l->gpus), m = (size_t)snprintf(one, sizeof one, "%s%zu", o ? "," : "", i);
		if (o >= 4 && strcmp(l->gpus + o - 4, ",...") == 0)
			continue; /* already cut */
		if (o + m + 4 < sizeof l->gpus)
			memcpy(l->gpus + o, one, m + 1);
		else
			snprintf(l->gpus + o, sizeof l->gpus - o, ",...");
	}
	return GC_OK;
}

/* gpuctld's jobs that have not ended, when it runs (its socket is there and answers) */
static void queue(struct top_data *d)
{
	free(d->jobs);
	d->jobs = NULL;
	d->njobs = 0;
	struct stat st;
	d->queue_up = false;
	if (stat(gpuctld_socket_path(), &st) != 0 || !S_ISSOCK(st.st_mode))
		return;
	char err[1400];
	int reached;
	json_t *req = json_pack("{s:s, s:b}", "op", "list", "all", 0);
	json_t *ans = req ? gpuctld_ask(req, 300, &reached, err, sizeof err) : NULL;
	json_decref(req);
	if (!ans)
		return;
	json_t *jobs = json_object_get(ans, "jobs");
	size_t n = json_array_size(jobs), i;
	d->jobs = n ? calloc(n, sizeof *d->jobs) : NULL;
	d->queue_up = true;
	json_t *j;
	json_array_foreach(jobs, i, j) {
		if (!d->jobs)
			break;
		struct top_job *t = &d->jobs[d->njobs++];
		t->id = (long long)json_integer_value(json_object_get(j, "id"));
		t->gpus = (long long)json_integer_value(json_object_get(j, "gpus_requested"));
		cli_safe(t->user, sizeof t->user, json_string_value(json_object_get(j, "user")));
		cli_safe(t->state, sizeof t->state, json_string_value(json_object_get(j, "state")));
		cli_safe(t->name, sizeof t->name, json_string_value(json_object_get(j, "name")));
		const char *pending = json_string_value(json_object_get(j, "pending"));
		if (pending) {
			cli_safe(t->where, sizeof t->where, pending);
		} else {
			size_t o = 0, k;
			json_t *g;
			json_array_foreach(json_object_get(j, "gpus"), k, g) {
				if (o < sizeof t->where)
					o += (size_t)snprintf(t->where + o, sizeof t->where - o, "%s%lld", k ? "," : "",
							      (long long)json_integer_value(g));
			}
		}
	}
	json_decref(ans);
}

static int add_proc(struct top_data *d, struct top_proc *p)
{
	struct top_proc *v = grow(d->procs, &d->proc_cap, d->nprocs, sizeof *v, 32);
	if (!v)
		return GC_ENOMEM;
	d->procs = v;
	d->procs[d->nprocs++] = *p;
	return GC_OK;
}

static int remember(struct top_data *d, uint32_t pid, unsigned long long ticks, size_t *n)
{
	if (*n == d->seen_cap) {
		size_t cap = d->seen_cap ? d->seen_cap * 2 : 32;
		struct top_cpu_seen *a = realloc(d->seen, cap * sizeof *a), *b;
		if (!a)
			return GC_ENOMEM;
		d->seen = a;
		if (!(b = realloc(d->seen_next, cap * sizeof *b)))
			return GC_ENOMEM;
		d->seen_next = b;
		d->seen_cap = cap;
	}
	d->seen_next[(*n)++] = (struct top_cpu_seen){pid, ticks};
	return GC_OK;
}

int top_data_sample(struct top_data *d)
{
	d->err[0] = '\0';
	int rc = gc_ctx_sample(d->ctx, d->snap, TOP_MASK, NULL, false);
	if (rc != GC_OK) {
		snprintf(d->err, sizeof d->err, "%s", gc_ctx_errmsg(d->ctx));
		return rc;
	}
	int64_t now = clock_mono_ms();
	double dt = d->last_ms ? (double)(now - d->last_ms) / 1000.0 : 0;
	d->last_ms = now;
	long hz = sysconf(_SC_CLK_TCK);
	for (size_t i = 0; i < d->ngpus; i++) {
		uint64_t u = 0, used = 0, total = 0;
		bool uok = gc_value_u64(d->snap, i, GC_V_UTIL_GPU, &u) == GC_ST_OK;
		bool mok = gc_value_u64(d->snap, i, GC_V_MEM_USED, &used) == GC_ST_OK &&
			   gc_value_u64(d->snap, i, GC_V_MEM_TOTAL, &total) == GC_ST_OK && total;
		push(&d->hist[i], uok ? (float)u : -1.0f, mok ? (float)((double)used * 100.0 / (double)total) : -1.0f);
	}
	leases(d);
	if (group_leases(d) != GC_OK)
		return GC_ENOMEM;
	queue(d);
	bool any_lease = d->nwaiters > 0;
	for (size_t i = 0; i < d->ngpus; i++)
		any_lease = any_lease || d->holder[i].held;
	d->nprocs = 0;
	size_t nseen = 0;
	for (size_t i = 0; i < d->ngpus; i++) {
		size_t np = gc_proc_count(d->snap, i);
		for (size_t k = 0; k < np; k++) {
			gc_proc g;
			if (gc_proc_get(d->snap, i, k, &g, sizeof g) != GC_OK)
				continue;
			struct top_proc p = {.gpu = (unsigned)i, .pid = g.pid, .visible = g.visible, .uid = g.uid,
					     .mem_known = g.mem_known, .gpu_mem = g.used_memory, .sm_util = g.sm_util,
					     .cpu = -1};
			cli_safe(p.user, sizeof p.user, g.user);
			cli_safe(p.command, sizeof p.command, g.command);
			unsigned long long ticks;
			if (g.visible && proc_cpu(g.pid, &ticks, &p.ppid, &p.rss) == 0) {
				bool found;
				unsigned long long before = seen_ticks(d, g.pid, &found);
				if (found && dt > 0 && ticks >= before && hz > 0)
					p.cpu = (double)(ticks - before) / (double)hz / dt * 100.0;
				if (remember(d, g.pid, ticks, &nseen) != GC_OK)
					return GC_ENOMEM;
			}
			/* someone who holds no lease on a GPU that others share through leases; a process
			 * of another PID namespace (a container) has no user to compare, but on a GPU
			 * nobody leases it bypasses the leases all the same */
			if (any_lease && (g.visible || g.simulated))
				p.unleased = !d->holder[i].held || (g.visible && d->holder[i].info.uid != g.uid) ||
					     (!g.visible && strcmp(d->holder[i].info.user, p.user) != 0);
			else if (any_lease)
				p.unleased = !d->holder[i].held;
			/* the job of the GPU's lease, when it is the holder's */
			if (d->holder[i].held && !p.unleased)
				p.job = d->holder[i].lease + 1;
			if (add_proc(d, &p) != GC_OK)
				return GC_ENOMEM;
		}
	}
	struct top_cpu_seen *t = d->seen;
	d->seen = d->seen_next;
	d->seen_next = t;
	d->nseen = nseen;
	return GC_OK;
}

static const char *const col_names[TOP__NCOL] = {"PID", "USER", "GPU", "GPU-MEM", "SM%", "CPU%", "RSS", "COMMAND"};

const char *top_col_name(enum top_col c)
{
	return c < TOP__NCOL ? col_names[c] : "?";
}

int top_col_parse(const char *s)
{
	for (int c = 0; c < TOP__NCOL; c++)
		if (strcasecmp(s, col_names[c]) == 0)
			return c;
	return -1;
}

/* qsort has no argument: the view of the sort in progress */
static const struct top_view *cur_view;
static const struct top_data *cur_data;

static int cmp_num(double a, double b)
{
	return a < b ? -1 : a > b;
}

/* ascending order of column c */
static int cmp_col(const struct top_proc *a, const struct top_proc *b, enum top_col c)
{
	switch (c) {
	case TOP_PID: return cmp_num(a->pid, b->pid);
	case TOP_USER: return strcmp(a->user, b->user);
	case TOP_GPU: return cmp_num(a->gpu, b->gpu);
	case TOP_GMEM: return cmp_num(a->mem_known ? (double)a->gpu_mem : -1, b->mem_known ? (double)b->gpu_mem : -1);
	case TOP_SM: return cmp_num(a->sm_util, b->sm_util);
	case TOP_CPU: return cmp_num(a->cpu, b->cpu);
	case TOP_RSS: return cmp_num((double)a->rss, (double)b->rss);
	case TOP_CMD: return strcmp(a->command, b->command);
	default: return 0;
	}
}

static bool text_col(enum top_col c)
{
	return c == TOP_USER || c == TOP_CMD || c == TOP_PID || c == TOP_GPU;
}

static int by_view(const void *x, const void *y)
{
	const struct top_proc *a = &cur_data->procs[*(const size_t *)x], *b = &cur_data->procs[*(const size_t *)y];
	int r = cmp_col(a, b, cur_view->sort);
	/* numbers largest first, names and ids in order, unless reversed */
	if (!text_col(cur_view->sort))
		r = -r;
	if (cur_view->reverse)
		r = -r;
	if (r == 0)
		r = cmp_num(a->gpu, b->gpu) ?: cmp_num(a->pid, b->pid);
	return r;
}

static bool matches(const struct top_proc *p, const char *f)
{
	if (!*f)
		return true;
	return strcasestr(p->user, f) || strcasestr(p->command, f);
}

/* the group of a process in the tree: its lease's index in d->leases, d->nleases for none */
static size_t group_of(const struct top_data *d, const struct top_proc *p)
{
	return p->job > 0 && p->job <= d->nleases ? p->job - 1 : d->nleases;
}

static bool job_matches(const struct top_lease *l, const char *f)
{
	return strcasestr(l->info.user, f) || strcasestr(l->info.name, f) || strcasestr(l->info.command, f);
}

/* the first of the n rows of group g that is process pid */
static bool listed(const struct top_data *d, const size_t *rows, size_t n, size_t g, pid_t pid, size_t *at)
{
	for (size_t i = 0; i < n; i++)
		if ((pid_t)d->procs[rows[i]].pid == pid && group_of(d, &d->procs[rows[i]]) == g) {
			*at = i;
			return true;
		}
	return false;
}

/*
 * The processes of group g among the n sorted rows, appended to out[k...]: a
 * process whose parent is listed in the group goes right after it (and its
 * other children), one level deeper; the others, at depth 1, keep the sorted
 * order. Returns the new k.
 */
static size_t nest(struct top_data *d, const size_t *rows, size_t n, size_t g, bool *placed, size_t *out, size_t k)
{
	for (size_t r = 0; r < n; r++) {
		size_t at;
		const struct top_proc *p = &d->procs[rows[r]];
		if (placed[r] || group_of(d, p) != g)
			continue;
		if (p->ppid > 0 && listed(d, rows, n, g, p->ppid, &at) && at != r)
			continue; /* not a root */
		/* the root, then its descendants depth first */
		size_t stack[64], depth[64];
		size_t sp = 0;
		stack[sp] = r;
		depth[sp++] = 1;
		while (sp) {
			sp--;
			size_t cur = stack[sp], dep = depth[sp];
			if (placed[cur])
				continue;
			placed[cur] = true;
			d->procs[rows[cur]].depth = (int)dep;
			out[k++] = rows[cur];
			for (size_t c = n; c-- > 0;)
				if (!placed[c] && d->procs[rows[c]].ppid == (pid_t)d->procs[rows[cur]].pid &&
				    group_of(d, &d->procs[rows[c]]) == g && sp < 64) {
					stack[sp] = c;
					depth[sp++] = dep + 1;
				}
		}
	}
	for (size_t r = 0; r < n; r++) /* in a cycle or too deep: at the group's end, as they are */
		if (!placed[r] && group_of(d, &d->procs[rows[r]]) == g) {
			placed[r] = true;
			d->procs[rows[r]].depth = 1;
			out[k++] = rows[r];
		}
	return k;
}

size_t top_rows_max(const struct top_data *d)
{
	return d->nprocs + d->nleases + 1;
}

enum top_row_kind top_row_kind(const struct top_data *d, size_t row)
{
	return row < d->nprocs ? TOP_ROW_PROC : row < d->nprocs + d->nleases ? TOP_ROW_JOB : TOP_ROW_NOLEASE;
}

size_t top_rows(struct top_data *d, const struct top_view *v, size_t *rows)
{
	size_t n = 0;
	const char *f = v->filter;
	for (size_t i = 0; i < d->nprocs; i++) {
		const struct top_proc *p = &d->procs[i];
		size_t g = group_of(d, p);
		if (matches(p, f) || (v->tree && g < d->nleases && job_matches(&d->leases[g], f)))
			rows[n++] = i;
	}
	cur_view = v;
	cur_data = d;
	qsort(rows, n, sizeof *rows, by_view);
	for (size_t i = 0; i < n; i++)
		d->procs[rows[i]].depth = 0;
	if (!v->tree)
		return n;
	/* the tree: a row for each job, its processes under it */
	size_t ng = d->nleases + 1, *out = malloc((n + ng) * sizeof *out), *rank = malloc(ng * sizeof *rank);
	size_t *order = malloc(ng * sizeof *order);
	bool *placed = calloc(n + 1, sizeof *placed);
	if (!out || !rank || !order || !placed) {
		free(out);
		free(rank);
		free(order);
		free(placed);
		return n; /* sorted, without the tree */
	}
	/* a job comes where its first process does in the sort */
	for (size_t g = 0; g < ng; g++)
		rank[g] = SIZE_MAX;
	for (size_t r = n; r-- > 0;)
		rank[group_of(d, &d->procs[rows[r]])] = r;
	size_t no = 0;
	for (size_t g = 0; g < d->nleases; g++) {
		if (rank[g] == SIZE_MAX && *f && !job_matches(&d->leases[g], f))
			continue;
		/* after those it comes after: first by rank, then (none listed) by start, then first GPU */
		size_t at = no;
		while (at > 0) {
			size_t h = order[at - 1];
			if (rank[h] < rank[g] || (rank[h] == rank[g] && d->leases[h].info.since <= d->leases[g].info.since))
				break;
			order[at] = h;
			at--;
		}
		order[at] = g;
		no++;
	}
	if (rank[d->nleases] != SIZE_MAX)
		order[no++] = d->nleases;
	size_t k = 0;
	for (size_t o = 0; o < no; o++) {
		out[k++] = d->nprocs + order[o];
		k = nest(d, rows, n, order[o], placed, out, k);
	}
	memcpy(rows, out, k * sizeof *rows);
	free(out);
	free(rank);
	free(order);
	free(placed);
	return k;
}

void top_conf_read(struct top_view *v, FILE *f)
{
	char line[256];
	while (fgets(line, sizeof line, f)) {
		line[strcspn(line, "\r\n")] = '\0';
		char *eq = strchr(line, '=');
		if (!eq)
			continue;
		*eq = '\0';
		const char *k = line, *val = eq + 1;
		int c;
		if (strcmp(k, "sort") == 0 && (c = top_col_parse(val)) >= 0)
			v->sort = (enum top_col)c;
		else if (strcmp(k, "reverse") == 0)
			v->reverse = strcmp(val, "1") == 0;
		else if (strcmp(k, "tree") == 0)
			v->tree = strcmp(val, "1") == 0;
	}
}

void top_conf_write(const struct top_view *v, FILE *f)
{
	fprintf(f, "# gpuctl top: the process table's view, saved when it changes\nsort=%s\nreverse=%d\ntree=%d\n",
		top_col_name(v->sort), v->reverse, v->tree);
}

size_t top_spark(const float *v, size_t n, size_t w, float *out)
{
	if (w == 0 || n == 0)
		return 0;
	size_t per = (n + w - 1) / w, cells = (n + per - 1) / per;
	for (size_t j = 0; j < cells; j++) {
		size_t hi = n - j * per, lo = hi > per ? hi - per : 0;
		float m = -1.0f;
		for (size_t i = lo; i < hi; i++)
			if (v[i] > m)
				m = v[i];
		out[cells - 1 - j] = m;
	}
	return cells;
}

void top_short_name(const char *name, char *buf, size_t len, size_t max)
{
	static const char *const drop[] = {"NVIDIA ", "Tesla ", "GeForce ", "Quadro ", NULL};
	const char *s = name ? name : "";
	for (bool again = true; again;) {
		again = false;
		for (size_t i = 0; drop[i]; i++)
			if (strncmp(s, drop[i], strlen(drop[i])) == 0) {
				s += strlen(drop[i]);
				again = true;
			}
	}
	if (max >= len)
		max = len - 1;
	size_t n = strlen(s);
	if (n > max) {
		/* the model first: "H100 80GB HBM3" -> "H100 80GB" -> "H100" */
		n = max;
		while (n > 0 && s[n] != ' ' && s[n] != '\0')
			n--;
		if (n == 0)
			n = max;
	}
	memcpy(buf, s, n);
	buf[n] = '\0';
	while (n > 0 && isspace((unsigned char)buf[n - 1]))
		buf[--n] = '\0';
}
