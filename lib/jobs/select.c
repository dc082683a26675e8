/*
 * select.c — which GPUs are free, and which are best, for a request (see
 * select.h). This is the policy behind "gpuctl run -n 2": it must never put
 * a job on a GPU someone else is using, and should hand multi-GPU jobs GPUs
 * that talk to each other over the shortest path.
 *
 * Eligibility. Every unknown value counts against the GPU when the request
 * depends on it (free memory unknown fails --min-free-mem, utilization
 * unknown fails --max-util, an unknown process list makes the GPU busy
 * unless shared): being wrong means two jobs on one GPU. Processes whose
 * /proc entry we cannot see (another PID namespace, a container) make the
 * GPU busy too, since we cannot tell whose they are. Only compute processes
 * count: a graphics-only process (Xorg, a desktop shell, usually root's) would
 * otherwise make a workstation's display GPU unusable for ever, and GPU 0 is
 * already ranked last for that reason.
 *
 * Ranking, as nvitop's selector: most free memory first, then least
 * utilized, then GPU 0 last (often the display or default device every
 * careless job lands on), then lower index.
 *
 * Topology (n > 1, s->topo present). The score of a set is its worst
 * pairwise level (GC_TOPO_UNKNOWN counts as worse than SYS); topology comes
 * first, rank second: a PIX pair beats a SYS pair with more free memory.
 * Two greedy passes over the eligible GPUs in rank order, each GPU a seed:
 *  1. grow a set by always adding the GPU that keeps its worst level
 *     lowest (best ranked among equals): the lowest such level is the
 *     target L;
 *  2. grow a set by adding the best-ranked GPUs whose links to every member
 *     are within L.
 * Tie rule: among sets within L the lowest sum of ranks wins (rank 0 = the
 * best GPU), and among equal sums the set grown from the better-ranked seed.
 * O(E^2 * n) for E eligible GPUs (256 GPUs, n = 8: well under a
 * millisecond). When the levels nest (switch within bridge within NUMA node
 * within machine, as nvidia-smi topo -m reports real machines) this finds
 * the best worst level exactly, and the best ranks at that level.
 */
#include "jobs/select.h"

#include "util/errbuf.h"

#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define LEVEL_WORST 1000 /* GC_TOPO_UNKNOWN and anything negative: worse than SYS */

const char *select_why_text(enum select_why w)
{
	switch (w) {
	case SELECT_OK: return "free";
	case SELECT_NOT_VISIBLE: return "not in CUDA_VISIBLE_DEVICES";
	case SELECT_EXCLUDED: return "excluded";
	case SELECT_MODEL: return "another model";
	case SELECT_LEASED: return "leased";
	case SELECT_LOST: return "lost";
	case SELECT_QUARANTINED: return "quarantined";
	case SELECT_MEMORY: return "not enough free memory";
	case SELECT_UTIL: return "too busy";
	case SELECT_OTHER_USER: return "in use by another user";
	case SELECT_MIG: return "in MIG mode (CUDA sees only its MIG devices, by MIG UUID)";
	}
	return "unknown";
}

/* bytes as GiB with at most one decimal, rounded up or down to a tenth */
static void fmt_gib(char *buf, size_t len, uint64_t bytes, bool up)
{
	const uint64_t mask = (UINT64_C(1) << 30) - 1;
	uint64_t rem10 = (bytes & mask) * 10;
	uint64_t tenths = (bytes >> 30) * 10 + (rem10 >> 30);
	if (up && (rem10 & mask))
		tenths++;
	if (tenths % 10)
		snprintf(buf, len, "%llu.%llu GiB", (unsigned long long)(tenths / 10),
			 (unsigned long long)(tenths % 10));
	else
		snprintf(buf, len, "%llu GiB", (unsigned long long)(tenths / 10));
}

const char *select_why_format(enum select_why w, const struct select_request *r, char *buf, size_t len)
{
	if (!buf || len == 0)
		return "";
	char gib[32];
	if (w == SELECT_MEMORY && r && r->min_free_mem > 0) {
		fmt_gib(gib, sizeof gib, r->min_free_mem, true);
		snprintf(buf, len, "less than %s free", gib);
	} else if (w == SELECT_UTIL && r && r->max_util >= 0) {
		snprintf(buf, len, "utilization above %d%%", r->max_util);
	} else {
		snprintf(buf, len, "%s", select_why_text(w));
	}
	return buf;
}

/* ---- one GPU ---- */

bool select_gpu_lost(const gc_gpu *g)
{
	if (g->lost)
		return true;
	for (size_t v = 0; v < GC_V__COUNT; v++)
		if (g->st[v] == GC_ST_GPU_LOST || g->st[v] == GC_ST_RESET_REQUIRED)
			return true;
	return false;
}

void select_index_list(const bool *set, size_t n, char *buf, size_t len)
{
	size_t off = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		if (!set[i])
			continue;
		int w = snprintf(buf + off, len - off, "%s%zu", off ? "," : "", i);
		if (w < 0 || (size_t)w >= len - off) {
			buf[off] = '\0'; /* no part of a number */
			return;
		}
		off += (size_t)w;
	}
}

bool select_model_matches(const char *model, const char *gpu_name)
{
	if (!model || !*model)
		return true;
	if (!gpu_name)
		return false;
	if (strpbrk(model, "*?["))
		return fnmatch(model, gpu_name, FNM_CASEFOLD) == 0;
	return strcasestr(gpu_name, model) != NULL;
}

static bool model_matches(const char *model, const gc_gpu *g)
{
	if (!model || !*model)
		return true;
	if (g->st[GC_V_NAME] != GC_ST_OK)
		return false;
	char name[sizeof g->name + 1];
	snprintf(name, sizeof name, "%.*s", (int)sizeof g->name, g->name); /* bounded copy */
	return select_model_matches(model, name);
}

bool select_gpu_mig(const gc_gpu *g)
{
	return g && g->st[GC_V_MIG_CURRENT] == GC_ST_OK && g->mig_current;
}

static bool mem_total_fits(const gc_gpu *g, uint64_t want)
{
	return want == 0 || g->st[GC_V_MEM_TOTAL] != GC_ST_OK || g->mem_total >= want;
}

static bool busy_with_others(const gc_gpu *g, const struct select_request *r)
{
	if (r->shared)
		return false;
	if (g->st[GC_V_PROCS] != GC_ST_OK)
		return true; /* cannot tell who is on it */
	for (size_t p = 0; p < g->nprocs; p++) {
		const gc_proc *pr = &g->procs[p];
		if (!(pr->type & GC_PROC_COMPUTE))
			continue;
		if (!pr->visible || pr->uid != r->uid)
			return true;
	}
	return false;
}

static enum select_why why_of(const gc_snapshot *s, size_t i, const struct select_request *r,
			      const bool *leased)
{
	const gc_gpu *g = &s->gpus[i];
	if (r->allowed && !r->allowed[i])
		return SELECT_NOT_VISIBLE;
	if (r->exclude && r->exclude[i])
		return SELECT_EXCLUDED;
	if (select_gpu_lost(g))
		return SELECT_LOST;
	if (r->quarantined && r->quarantined[i])
		return SELECT_QUARANTINED;
	if (!model_matches(r->model, g))
		return SELECT_MODEL;
	if (select_gpu_mig(g))
		return SELECT_MIG;
	if (leased && leased[i])
		return SELECT_LEASED;
	if (r->min_free_mem > 0 &&
	    (g->st[GC_V_MEM_FREE] != GC_ST_OK || g->mem_free < r->min_free_mem))
		return SELECT_MEMORY;
	if (r->max_util >= 0 &&
	    (g->st[GC_V_UTIL_GPU] != GC_ST_OK || g->util_gpu > (unsigned)r->max_util))
		return SELECT_UTIL;
	if (busy_with_others(g, r))
		return SELECT_OTHER_USER;
	return SELECT_OK;
}

enum select_why select_could(const gc_snapshot *s, size_t i, const struct select_request *r)
{
	const gc_gpu *g = &s->gpus[i];
	if (r->allowed && !r->allowed[i])
		return SELECT_NOT_VISIBLE;
	if (r->exclude && r->exclude[i])
		return SELECT_EXCLUDED;
	if (!model_matches(r->model, g))
		return SELECT_MODEL;
	if (!mem_total_fits(g, r->min_free_mem))
		return SELECT_MEMORY;
	if (select_gpu_mig(g))
		return SELECT_MIG; /* would do, but not by index */
	return SELECT_OK;
}

size_t select_eligible(const gc_snapshot *s, const struct select_request *r, const bool *leased,
		       enum select_why *why)
{
	size_t n = 0;
	for (size_t i = 0; s && r && i < s->ngpus; i++) {
		enum select_why w = why_of(s, i, r, leased);
		if (why)
			why[i] = w;
		if (w == SELECT_OK)
			n++;
	}
	return n;
}

/* ---- messages ---- */

struct sb {
	char *buf;
	size_t len, cap;
};

static void sb_printf(struct sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(struct sb *b, const char *fmt, ...)
{
	if (!b->buf || b->cap == 0 || b->len + 1 >= b->cap)
		return;
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(b->buf + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	if (k > 0)
		b->len += (size_t)k < b->cap - b->len ? (size_t)k : b->cap - b->len - 1;
}

/* the GPUs with pick[i] (or all when pick is NULL), runs collapsed: "0-3,6" */
static void sb_list(struct sb *b, const bool *pick, size_t n)
{
	bool first = true;
	for (size_t i = 0; i < n;) {
		if (pick && !pick[i]) {
			i++;
			continue;
		}
		size_t j = i;
		while (j + 1 < n && (!pick || pick[j + 1]))
			j++;
		if (j > i)
			sb_printf(b, "%s%zu-%zu", first ? "" : ",", i, j);
		else
			sb_printf(b, "%s%zu", first ? "" : ",", i);
		first = false;
		i = j + 1;
	}
}

static const char *plural(size_t n)
{
	return n == 1 ? "" : "s";
}

int select_possible(const gc_snapshot *s, const struct select_request *r, char *err, size_t errlen)
{
	struct sb b = {err, 0, err ? errlen : 0};
	if (err && errlen)
		err[0] = '\0';
	if (!s || !r || r->n == 0) {
		sb_printf(&b, "at least 1 GPU must be requested");
		return GC_EINVAL;
	}
	const size_t ng = s->ngpus;
	const unsigned n = r->n;

	if (n > ng) {
		if (ng == 0) {
			sb_printf(&b, "%u GPU%s requested but this machine has no GPU", n, plural(n));
		} else {
			sb_printf(&b, "%u GPU%s requested but only %zu exist%s on this machine (", n,
				  plural(n), ng, ng == 1 ? "s" : "");
			sb_list(&b, NULL, ng);
			sb_printf(&b, ")");
		}
		return GC_EINVAL;
	}

	if (r->allowed) {
		size_t vis = 0;
		for (size_t i = 0; i < ng; i++)
			vis += r->allowed[i];
		if (vis < ng && n > vis) {
			if (vis == 0) {
				sb_printf(&b, "%u GPU%s requested but none is visible through CUDA_VISIBLE_DEVICES",
					  n, plural(n));
			} else {
				sb_printf(&b, "%u GPU%s requested but only %zu %s visible through CUDA_VISIBLE_DEVICES (",
					  n, plural(n), vis, vis == 1 ? "is" : "are");
				sb_list(&b, r->allowed, ng);
				sb_printf(&b, ")");
			}
			return GC_EINVAL;
		}
	}

	if (r->model && *r->model) {
		size_t match = 0;
		for (size_t i = 0; i < ng; i++)
			match += model_matches(r->model, &s->gpus[i]);
		if (match == 0) {
			sb_printf(&b, "no GPU on this machine matches --model '%.64s'", r->model);
			size_t named = 0;
			for (size_t i = 0; i < ng; i++) {
				const gc_gpu *g = &s->gpus[i];
				if (g->st[GC_V_NAME] != GC_ST_OK)
					continue;
				bool seen = false;
				for (size_t k = 0; k < i && !seen; k++)
					seen = s->gpus[k].st[GC_V_NAME] == GC_ST_OK &&
					       strncmp(s->gpus[k].name, g->name, sizeof g->name) == 0;
				if (seen)
					continue;
				sb_printf(&b, "%s%.*s", named++ ? ", " : " (it has: ", (int)sizeof g->name, g->name);
			}
			if (named)
				sb_printf(&b, ")");
			return GC_EINVAL;
		}
	}

	if (r->min_free_mem > 0) {
		size_t fits = 0;
		uint64_t largest = 0;
		for (size_t i = 0; i < ng; i++) {
			const gc_gpu *g = &s->gpus[i];
			fits += mem_total_fits(g, r->min_free_mem);
			if (g->st[GC_V_MEM_TOTAL] == GC_ST_OK && g->mem_total > largest)
				largest = g->mem_total;
		}
		if (fits == 0) {
			char want[32], have[32];
			fmt_gib(want, sizeof want, r->min_free_mem, true);
			fmt_gib(have, sizeof have, largest, false);
			sb_printf(&b, "%u GPU%s with at least %s requested but the largest GPU here has %s",
				  n, plural(n), want, have);
			return GC_EINVAL;
		}
	}

	bool *ok = calloc(ng, sizeof *ok);
	if (!ok) {
		sb_printf(&b, "out of memory");
		return GC_ENOMEM;
	}
	bool *mig = calloc(ng, sizeof *mig);
	if (!mig) {
		free(ok);
		sb_printf(&b, "out of memory");
		return GC_ENOMEM;
	}
	size_t count = 0, nmig = 0;
	for (size_t i = 0; i < ng; i++) {
		enum select_why w = select_could(s, i, r);
		ok[i] = w == SELECT_OK;
		mig[i] = w == SELECT_MIG;
		count += ok[i];
		nmig += mig[i];
	}
	if (count < n) {
		if (count == 0) {
			sb_printf(&b, "%u GPU%s requested but no GPU matches the filters", n, plural(n));
		} else {
			sb_printf(&b, "%u GPU%s requested but only %zu match%s the filters (%s ", n,
				  plural(n), count, count == 1 ? "es" : "", count == 1 ? "index" : "indices");
			sb_list(&b, ok, ng);
			sb_printf(&b, ")");
		}
		if (nmig) {
			sb_printf(&b, "; GPU%s ", plural(nmig));
			sb_list(&b, mig, ng);
			sb_printf(&b, " %s in MIG mode (CUDA sees only %s MIG devices, by MIG UUID)",
				  nmig == 1 ? "is" : "are", nmig == 1 ? "its" : "their");
		}
		free(ok);
		free(mig);
		return GC_EINVAL;
	}
	free(ok);
	free(mig);
	return 0;
}

/* ---- choosing ---- */

struct cand {
	size_t pos;          /* position in s->gpus */
	unsigned index;      /* NVML index */
	bool free_known, util_known;
	uint64_t mem_free;
	unsigned util;
};

static int cand_rank_cmp(const void *pa, const void *pb)
{
	const struct cand *a = pa, *b = pb;
	if (a->free_known != b->free_known)
		return a->free_known ? -1 : 1;
	if (a->free_known && a->mem_free != b->mem_free)
		return a->mem_free > b->mem_free ? -1 : 1;
	if (a->util_known != b->util_known)
		return a->util_known ? -1 : 1;
	if (a->util_known && a->util != b->util)
		return a->util < b->util ? -1 : 1;
	if ((a->index == 0) != (b->index == 0))
		return a->index == 0 ? 1 : -1;
	return (a->index > b->index) - (a->index < b->index);
}

static int unsigned_cmp(const void *pa, const void *pb)
{
	unsigned a = *(const unsigned *)pa, b = *(const unsigned *)pb;
	return (a > b) - (a < b);
}

static int level(const gc_snapshot *s, size_t a, size_t b)
{
	int lv = s->topo[a * s->ngpus + b];
	return lv < 0 ? LEVEL_WORST : lv;
}

/* worst level from each candidate to the set so far: start the set at `seed` */
static void set_start(const gc_snapshot *s, const struct cand *c, size_t e, size_t seed, int *w, bool *in)
{
	memset(in, 0, e * sizeof *in);
	for (size_t j = 0; j < e; j++)
		w[j] = level(s, c[seed].pos, c[j].pos);
	in[seed] = true;
}

static void set_add(const gc_snapshot *s, const struct cand *c, size_t e, size_t pick, int *w, bool *in)
{
	in[pick] = true;
	for (size_t j = 0; j < e; j++) {
		int lv = level(s, c[pick].pos, c[j].pos);
		if (!in[j] && lv > w[j])
			w[j] = lv;
	}
}

/*
 * Phase 1: grow from `seed`, each time adding the candidate that keeps the
 * set's worst level lowest (the best ranked among equals). Returns that worst
 * level, or a value above `bound` as soon as it cannot beat it.
 */
static int grow_tightest(const gc_snapshot *s, const struct cand *c, size_t e, size_t seed, unsigned n,
			 int bound, int *w, bool *in, size_t *set)
{
	set_start(s, c, e, seed, w, in);
	set[0] = seed;
	int cur = 0;
	for (unsigned k = 1; k < n; k++) {
		size_t pick = e;
		for (size_t j = 0; j < e; j++)
			if (!in[j] && (pick == e || w[j] < w[pick]))
				pick = j;
		if (w[pick] > cur)
			cur = w[pick];
		if (cur > bound)
			return cur;
		set[k] = pick;
		set_add(s, c, e, pick, w, in);
	}
	return cur;
}

/*
 * Phase 2: grow from `seed` taking the best-ranked candidates whose level
 * to every member is within `limit`. Returns the sum of ranks, or SIZE_MAX
 * when the set cannot be completed or cannot beat `bound`.
 */
static size_t grow_best_ranked(const gc_snapshot *s, const struct cand *c, size_t e, size_t seed,
			       unsigned n, int limit, size_t bound, int *w, bool *in, size_t *set)
{
	set_start(s, c, e, seed, w, in);
	set[0] = seed;
	size_t sum = seed;
	for (unsigned k = 1; k < n; k++) {
		size_t pick = 0;
		while (pick < e && (in[pick] || w[pick] > limit))
			pick++; /* rank order: the first that fits is the best */
		sum += pick;
		if (pick == e || sum >= bound)
			return SIZE_MAX;
		set[k] = pick;
		set_add(s, c, e, pick, w, in);
	}
	return sum;
}

/* GPU i of s as a candidate to rank */
static struct cand cand_of(const gc_snapshot *s, size_t i)
{
	const gc_gpu *g = &s->gpus[i];
	return (struct cand){
		.pos = i,
		.index = g->index,
		.free_known = g->st[GC_V_MEM_FREE] == GC_ST_OK,
		.util_known = g->st[GC_V_UTIL_GPU] == GC_ST_OK,
		.mem_free = g->mem_free,
		.util = g->util_gpu,
	};
}

int select_pick(const gc_snapshot *s, const struct select_request *r, const bool *leased, unsigned *out)
{
	if (!s || !r || !out || r->n == 0)
		return GC_EINVAL;
	const unsigned n = r->n;
	const size_t ng = s->ngpus;
	if (select_eligible(s, r, leased, NULL) < n)
		return GC_ENOTNOW;

	struct cand *c = malloc(ng * sizeof *c);
	int *w = malloc(ng * sizeof *w);
	bool *in = malloc(ng * sizeof *in);
	size_t *set = malloc((size_t)n * sizeof *set);
	size_t *best = malloc((size_t)n * sizeof *best);
	int rc = GC_ENOMEM;
	if (!c || !w || !in || !set || !best)
		goto out;

	size_t e = 0;
	for (size_t i = 0; i < ng; i++) {
		if (why_of(s, i, r, leased) != SELECT_OK)
			continue;
		c[e++] = cand_of(s, i);
	}
	qsort(c, e, sizeof *c, cand_rank_cmp);

	for (unsigned k = 0; k < n; k++)
		best[k] = k; /* no topology: the first n by rank */
	if (s->topo && n == 1 && e > 2) {
		/*
		 * One GPU: not one of the closest free pair when another will do, so that
		 * the next 2-GPU job still finds it whole (the best-ranked such GPU)
		 */
		int tight = LEVEL_WORST + 1;
		for (size_t a = 0; a < e; a++)
			for (size_t b2 = a + 1; b2 < e; b2++)
				if (level(s, c[a].pos, c[b2].pos) < tight)
					tight = level(s, c[a].pos, c[b2].pos);
		for (size_t a = 0; a < e && tight <= LEVEL_WORST; a++) {
			bool in_tight = false;
			for (size_t b2 = 0; b2 < e && !in_tight; b2++)
				in_tight = b2 != a && level(s, c[a].pos, c[b2].pos) == tight;
			if (!in_tight) {
				best[0] = a;
				break;
			}
		}
	}
	if (s->topo && n > 1) {
		/* the lowest worst level any set reaches (phase 1 keeps its set as a fallback) */
		int limit = LEVEL_WORST + 1;
		for (size_t seed = 0; seed < e && limit > GC_TOPO_SELF; seed++) {
			int worst = grow_tightest(s, c, e, seed, n, limit - 1, w, in, set);
			if (worst < limit) {
				limit = worst;
				memcpy(best, set, (size_t)n * sizeof *set);
			}
		}
		/* the best-ranked set within that level; ties: the better-ranked seed */
		size_t best_sum = SIZE_MAX;
		for (size_t seed = 0; seed < e; seed++) {
			size_t sum = grow_best_ranked(s, c, e, seed, n, limit, best_sum, w, in, set);
			if (sum < best_sum) {
				best_sum = sum;
				memcpy(best, set, (size_t)n * sizeof *set);
			}
		}
	}
	for (unsigned k = 0; k < n; k++)
		out[k] = c[best[k]].index;
	qsort(out, n, sizeof *out, unsigned_cmp);
	rc = 0;
out:
	free(c);
	free(w);
	free(in);
	free(set);
	free(best);
	return rc;
}

/* ---- GPU ids: indices, UUIDs (or a prefix of 8 hex digits and more), PCI bus ids ---- */

static int parse_busid(const char *s, unsigned long long *key)
{
	unsigned long dom = 0, bus = 0, dev = 0, fn = 0;
	char *end;
	const char *p = s;
	unsigned long parts[3];
	int np = 0;
	while (np < 3) {
		if (!isxdigit((unsigned char)*p))
			return -1;
		errno = 0;
		parts[np++] = strtoul(p, &end, 16);
		if (errno || end - p > 8)
			return -1;
		p = end;
		if (*p != ':')
			break;
		p++;
	}
	if (np < 2)
		return -1;
	if (*p == '.') {
		p++;
		if (!isxdigit((unsigned char)*p))
			return -1;
		fn = strtoul(p, &end, 16);
		p = end;
	}
	if (*p)
		return -1;
	if (np == 3) {
		dom = parts[0];
		bus = parts[1];
		dev = parts[2];
	} else {
		bus = parts[0];
		dev = parts[1];
	}
	if (bus > 0xff || dev > 0x1f || fn > 7 || dom > 0xffffffffUL)
		return -1;
	*key = ((unsigned long long)dom << 16) | (bus << 8) | (dev << 3) | fn;
	return 0;
}

static int match_one(const char *tok, const gc_snapshot *snap, size_t *idx)
{
	size_t n = snap->ngpus;
	/* a plain decimal number is an index */
	const char *p = tok;
	while (isdigit((unsigned char)*p))
		p++;
	if (*tok && !*p) {
		errno = 0;
		char *end;
		unsigned long v = strtoul(tok, &end, 10);
		if (errno || v >= n)
			return -1;
		*idx = v;
		return 0;
	}
	if (strncasecmp(tok, "GPU-", 4) == 0) {
		/* full UUID, or an unambiguous prefix of at least 8 hex digits */
		size_t len = strlen(tok), found = n;
		bool prefix_of_one = false;
		for (size_t i = 0; i < n; i++) {
			const gc_gpu *g = &snap->gpus[i];
			if (g->st[GC_V_UUID] != GC_ST_OK)
				continue;
			if (strcasecmp(g->uuid, tok) == 0) {
				*idx = i;
				return 0;
			}
			if (len >= 12 && strncasecmp(g->uuid, tok, len) == 0) {
				if (found != n)
					return -2; /* ambiguous */
				found = i;
			}
			prefix_of_one |= len < 12 && strncasecmp(g->uuid, tok, len) == 0;
		}
		if (found == n)
			return prefix_of_one ? -3 : -1;
		*idx = found;
		return 0;
	}
	unsigned long long key, gk;
	if (parse_busid(tok, &key) == 0) {
		for (size_t i = 0; i < n; i++) {
			const gc_gpu *g = &snap->gpus[i];
			if (g->st[GC_V_PCI] == GC_ST_OK && parse_busid(g->bus_id, &gk) == 0 && gk == key) {
				*idx = i;
				return 0;
			}
		}
	}
	return -1;
}

int select_parse_ids(const char *opt, const char *spec, const gc_snapshot *snap, bool *which, char *err, size_t errlen)
{
	size_t n = snap->ngpus;
	for (size_t i = 0; i < n; i++)
		which[i] = false;
	char range[32];
	if (n)
		snprintf(range, sizeof range, n == 1 ? "0" : "0-%zu", n - 1);
	else
		snprintf(range, sizeof range, "none");
	if (!*spec) {
		errbuf_set(err, errlen, "empty GPU id for %s (expected an index %s, a GPU UUID or a PCI bus id)", opt, range);
		return GC_EINVAL;
	}
	char *copy = strdup(spec);
	if (!copy) {
		errbuf_set(err, errlen, "out of memory");
		return GC_ENOMEM;
	}
	int rc = GC_OK;
	char *save = NULL;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		size_t idx = 0;
		while (*tok == ' ')
			tok++;
		int m = match_one(tok, snap, &idx);
		if (m == -2) {
			errbuf_set(err, errlen, "GPU id '%s' for %s matches more than one GPU; give the full UUID", tok, opt);
			rc = GC_EINVAL;
			break;
		}
		if (m == -3) {
			errbuf_set(err, errlen, "GPU id '%s' for %s is too short a UUID prefix: give 'GPU-' and at least 8 hex digits",
				tok, opt);
			rc = GC_EINVAL;
			break;
		}
		if (m < 0) {
			errbuf_set(err, errlen, "invalid GPU id '%s' for %s: no GPU on this machine has that index (%s), "
				"UUID or PCI bus id", tok, opt, range);
			rc = GC_EINVAL;
			break;
		}
		which[idx] = true;
	}
	free(copy);
	return rc;
}
