/*
 * sampler.c — gpuctld's sampling thread (see sampler.h).
 *
 * Everything a request needs is made here, once per sample: the Prometheus
 * text and the GPU JSON are rendered into a frame that requests reference
 * and copy, so a scrape costs a memcpy however many scrapes come in, and
 * never waits on the driver. A frame is rendered only while someone reads
 * them: when none was asked for in RENDER_KEEP_MS, samples go on (the
 * history, leases, health, enforcement) but are not rendered, and the
 * next request has the sampling thread render the newest sample at once
 * (it waits for that render, or for a sample under way to end).
 */
#include "util/clock.h"
#include "sampler.h"
#include "metrics.h"
#include "enforce.h"
#include "health.h"
#include "notify.h"
#include "reclaim.h"
#include "device/snapjson.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/errbuf.h"
#include "device/gpu.h"
#include "jobs/lease.h"
#include "jobs/select.h"

#define RENDER_KEEP_MS 30000 /* frames are rendered each sample this long after a request (default) */
#define RENDER_WAIT_MS 5000  /* the most a request waits for a render it asked for */

/* what the dashboard charts, per GPU per sample; -1 / UINT64_MAX: unknown */
struct point {
	int16_t util, temp;
	int32_t power_mw;
	uint64_t mem_used;
};

/* what the history says of a GPU: the last UUID and size sampled */
struct history_gpu {
	char uuid[96];
	uint64_t mem_total;
};

struct sampler {
	struct sampler_opts o;
	char hostname[256];
	gc_ctx *ctx;
	gc_snapshot snap;
	size_t ngpus;
	struct lease_dir *leases;          /* NULL until a state directory exists */
	struct lease_info *held;           /* [ngpus], this sample's holders */
	const struct lease_info **holder;  /* [ngpus]: &held[i] or NULL */
	struct lease_info *was;            /* [ngpus], the last sample's holders, */
	bool *had;                         /* [ngpus] where it had one: a lease released is gpu.freed */
	struct quarantine_info *marks;     /* [ngpus], this sample's quarantine marks (uuid "": none) */
	uint64_t *last_xid;                /* [ngpus], the last Xid since start (0: none) */
	struct metrics_errors errors;
	uint64_t samples, failures, seq;
	double last_duration;
	int64_t t0;                        /* clock_mono_ms() at the newest sample's start */
	uint64_t recorded;                 /* seq of the newest sample in the history (under lock) */

	pthread_t thread;
	pthread_mutex_t lock;              /* cur, the history, stop */
	pthread_cond_t wake;
	bool stop, running;
	struct frame *cur;
	pthread_cond_t rendered;           /* cur is the newest sample's again */
	int64_t asked_ms;                  /* clock_mono_ms() of the last request for a frame */
	bool stale;                        /* cur is older than the newest sample (not rendered) */
	bool render_now;                   /* a request waits for the newest sample's frame */

	size_t cap, head, count;           /* the history ring: cap samples */
	int64_t *times;                    /* [cap] wall ms */
	struct point *pts;                 /* [cap * ngpus] */
	struct history_gpu *gpu;           /* [ngpus]: the UUID and size the history names */
	gc_snapshot view;                  /* the last good sample, for sampler_snapshot (snap is
					      the sampler thread's alone) */
};

void frame_unref(struct frame *f)
{
	if (f && __atomic_sub_fetch(&f->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		free(f->metrics);
		free(f->gpus);
		free(f);
	}
}

struct frame *sampler_frame(struct sampler *s)
{
	pthread_mutex_lock(&s->lock);
	s->asked_ms = clock_mono_ms();
	if (s->stale && s->running && !s->stop) {
		/* nobody asked for a while: the newest sample is not rendered yet */
		s->render_now = true;
		pthread_cond_signal(&s->wake);
		struct timespec until;
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += RENDER_WAIT_MS / 1000;
		while (s->render_now && !s->stop && pthread_cond_timedwait(&s->rendered, &s->lock, &until) != ETIMEDOUT)
			;
	}
	struct frame *f = s->cur;
	if (f)
		__atomic_add_fetch(&f->refs, 1, __ATOMIC_ACQ_REL);
	pthread_mutex_unlock(&s->lock);
	return f;
}

uint64_t sampler_seq(struct sampler *s)
{
	pthread_mutex_lock(&s->lock);
	uint64_t seq = s->recorded;
	pthread_mutex_unlock(&s->lock);
	return seq;
}

int sampler_snapshot(struct sampler *s, gc_snapshot *out)
{
	pthread_mutex_lock(&s->lock);
	int rc = gpu_snapshot_copy(out, &s->view);
	pthread_mutex_unlock(&s->lock);
	return rc;
}

size_t sampler_ngpus(const struct sampler *s)
{
	return s->ngpus;
}

/* this sample's lease holders, by GPU */
static void read_leases(struct sampler *s)
{
	for (size_t i = 0; i < s->ngpus; i++)
		s->holder[i] = NULL;
	if (!s->leases) {
		char err[256];
		if (lease_dir_open(&s->leases, NULL, false, err, sizeof err) != GC_OK)
			s->leases = NULL; /* nothing leased yet, or no state directory: look again next time */
		if (!s->leases)
			return;
	}
	struct lease_entry *e = NULL;
	size_t n = 0;
	if (lease_list(s->leases, &e, &n) != GC_OK)
		n = 0;
	for (size_t k = 0; k < n; k++)
		for (size_t i = 0; i < s->ngpus; i++) {
			const gc_gpu *g = &s->snap.gpus[i];
			if (g->st[GC_V_UUID] == GC_ST_OK && strcmp(g->uuid, e[k].uuid) == 0) {
				s->held[i] = e[k].info;
				s->holder[i] = &s->held[i];
			}
		}
	free(e);
}

/* leases released since the last sample: gpu.freed events */
static void note_freed(struct sampler *s)
{
	for (size_t i = 0; i < s->ngpus; i++) {
		const gc_gpu *g = &s->snap.gpus[i];
		if (s->had[i] && !s->holder[i] && s->o.notify) {
			struct lease_info l = s->was[i];
			lease_info_sanitize(&l);
			char text[200];
			snprintf(text, sizeof text, "GPU %zu is free: %s's lease%s%s ended", i, l.user, l.name[0] ? " " : "",
				 l.name);
			notify_event(s->o.notify, "gpu.freed", text,
				     json_pack("{s:{s:I, s:s}, s:s, s:s}", "gpu", "index", (json_int_t)i, "uuid",
					       g->st[GC_V_UUID] == GC_ST_OK ? g->uuid : "", "holder", l.user, "job", l.name));
		}
		s->had[i] = s->holder[i] != NULL;
		if (s->holder[i])
			s->was[i] = *s->holder[i];
	}
}

static void iso_time(int64_t ms, char *buf, size_t len)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	size_t n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, len - n, ".%03dZ", (int)(ms % 1000));
}

/* the GPU's quarantine mark (null: none) and last Xid since gpuctld started (null: none) */
static void json_health(struct jw *w, struct sampler *s, const gc_gpu *g)
{
	const struct quarantine_info *q = s->o.health && g->index < s->ngpus ? &s->marks[g->index] : NULL;
	if (q && q->uuid[0]) {
		char since[40];
		iso_time(q->since * 1000, since, sizeof since);
		jsonw_object(w, "quarantine");
		jsonw_string(w, "reason", q->reason);
		if (q->xid)
			jsonw_uint(w, "xid", q->xid);
		jsonw_string(w, "detail", q->detail);
		jsonw_plain(w, "since", since);
		jsonw_string(w, "by", q->by);
		jsonw_end(w, '}');
	} else {
		jsonw_null(w, "quarantine");
	}
	if (s->o.health && g->index < s->ngpus && s->last_xid[g->index])
		jsonw_uint(w, "last_xid", s->last_xid[g->index]);
	else
		jsonw_null(w, "last_xid");
}

static void json_lease(struct jw *w, const gc_gpu *g, void *arg)
{
	struct sampler *s = arg;
	json_health(w, s, g);
	const struct lease_info *l = g->index < s->ngpus ? s->holder[g->index] : NULL;
	if (!l) {
		jsonw_null(w, "lease");
		return;
	}
	char since[40];
	/* the record is the holder's to write: keep a silly value from overflowing */
	int64_t secs = l->since < 0 ? 0 : l->since > INT64_C(253402300799) ? INT64_C(253402300799) : l->since;
	iso_time(secs * 1000, since, sizeof since);
	jsonw_object(w, "lease");
	jsonw_string(w, "user", l->user);
	jsonw_uint(w, "uid", l->uid);
	jsonw_int(w, "pid", l->pid);
	if (l->name[0])
		jsonw_string(w, "name", l->name);
	else
		jsonw_null(w, "name");
	jsonw_plain(w, "since", since);
	jsonw_string(w, "command", l->command);
	jsonw_end(w, '}');
}

/* "sample" comes last: requests add its age_ms at the end (see http.c) */
static void json_sample(struct jw *w, void *arg)
{
	struct sampler *s = arg;
	char t[40];
	iso_time(s->snap.time_ms, t, sizeof t);
	jsonw_object(w, "sample");
	jsonw_uint(w, "seq", s->seq);
	jsonw_int(w, "interval_ms", s->o.interval_ms);
	jsonw_int(w, "time_ms", s->snap.time_ms);
	jsonw_plain(w, "time", t);
	jsonw_end(w, '}');
}

/* the history gets this sample */
static void record(struct sampler *s)
{
	size_t at = (s->head + s->count) % s->cap;
	if (s->count == s->cap)
		s->head = (s->head + 1) % s->cap;
	else
		s->count++;
	s->times[at] = s->snap.time_ms;
	s->recorded = s->seq;
	for (size_t i = 0; i < s->ngpus; i++) {
		const gc_gpu *g = &s->snap.gpus[i];
		struct point *p = &s->pts[at * s->ngpus + i];
		p->util = g->st[GC_V_UTIL_GPU] == GC_ST_OK ? (int16_t)g->util_gpu : -1;
		p->temp = g->st[GC_V_TEMP] == GC_ST_OK ? (int16_t)g->temp : -1;
		p->power_mw = g->st[GC_V_POWER_DRAW] == GC_ST_OK ? (int32_t)g->power_draw : -1;
		p->mem_used = g->st[GC_V_MEM_USED] == GC_ST_OK ? g->mem_used : UINT64_MAX;
		struct history_gpu *o = &s->gpu[i];
		if (g->st[GC_V_MEM_TOTAL] == GC_ST_OK)
			o->mem_total = g->mem_total;
		if (g->st[GC_V_UUID] == GC_ST_OK)
			snprintf(o->uuid, sizeof o->uuid, "%s", g->uuid);
	}
	/* the queue's view: out of memory keeps the last one */
	gc_snapshot copy = {0};
	if (gpu_snapshot_copy(&copy, &s->snap) == GC_OK) {
		gpu_snapshot_release(&s->view);
		s->view = copy;
	}
}

/* The newest sample rendered into the frame requests get. Called with the lock not held. */
static void render(struct sampler *s)
{
	struct frame *f = calloc(1, sizeof *f);
	if (!f)
		return;
	f->refs = 1;
	f->seq = s->seq;
	f->time_ms = s->snap.time_ms;
	f->mono_ms = s->t0;
	struct metrics_input in = {
		.snap = &s->snap, .hostname = s->hostname, .leases = s->holder, .errors = &s->errors,
		.samples = s->samples, .failures = s->failures, .last_duration = s->last_duration,
		.snake_labels = s->o.snake_labels,
		.marks = s->o.health ? s->marks : NULL, .last_xid = s->o.health ? s->last_xid : NULL,
		.quarantines = health_quarantines(s->o.health), .enforce = s->o.enforce,
		.reclaiming = s->o.reclaim != NULL, .reclaimed = reclaim_count(s->o.reclaim),
	};
	struct notify_stats ns;
	notify_stats(s->o.notify, &ns);
	in.notifying = s->o.notify != NULL;
	in.notified[0] = ns.sent;
	in.notified[1] = ns.failed;
	in.notified[2] = ns.dropped;
	struct snapjson_extra x = {.gpu = json_lease, .top = json_sample, .arg = s};
	f->metrics = metrics_render(&in, &f->metrics_len);
	f->gpus = snapjson_render(&s->snap, NULL, s->hostname, false, &x);
	if (!f->metrics || !f->gpus) {
		fprintf(stderr, "gpuctld: out of memory rendering a sample\n");
		frame_unref(f);
		f = NULL; /* the last frame stays; a request waiting for this one gets it */
	} else {
		f->gpus_len = strlen(f->gpus);
	}
	pthread_mutex_lock(&s->lock);
	struct frame *old = f ? s->cur : NULL;
	if (f) {
		s->cur = f;
		s->stale = false;
	}
	s->render_now = false;
	pthread_cond_broadcast(&s->rendered);
	pthread_mutex_unlock(&s->lock);
	frame_unref(old);
}

/* One sample: take it, and render and publish it while frames are asked for. Called with the lock not held. */
static void sample_once(struct sampler *s)
{
	s->t0 = clock_mono_ms();
	struct timespec c0, c1;
	clock_gettime(CLOCK_MONOTONIC, &c0);
	int rc = gc_ctx_sample(s->ctx, &s->snap, GC_ALL_VALUES, NULL, false);
	clock_gettime(CLOCK_MONOTONIC, &c1);
	s->samples++;
	s->last_duration = (double)(c1.tv_sec - c0.tv_sec) + (c1.tv_nsec - c0.tv_nsec) / 1e9;
	if (rc != GC_OK) {
		s->failures++;
		fprintf(stderr, "gpuctld: sample failed: %s\n", gc_ctx_errmsg(s->ctx));
		return; /* the last good frame stays; its age tells scrapers */
	}
	s->seq++;
	metrics_count_errors(&s->errors, &s->snap);
	read_leases(s);
	note_freed(s);
	if (s->o.health)
		health_sample(s->o.health, &s->snap, s->marks, s->last_xid);
	enforce_sample(s->o.enforce, &s->snap, s->holder, clock_mono_ms());
	reclaim_sample(s->o.reclaim, &s->snap, s->holder, clock_mono_ms());
	pthread_mutex_lock(&s->lock);
	record(s);
	s->stale = true;
	bool wanted = !s->cur || s->render_now ||
		      clock_mono_ms() - s->asked_ms < (s->o.render_keep_ms > 0 ? s->o.render_keep_ms : RENDER_KEEP_MS);
	pthread_mutex_unlock(&s->lock);
	if (wanted)
		render(s);
}

static void *run(void *arg)
{
	struct sampler *s = arg;
	struct timespec next;
	clock_gettime(CLOCK_MONOTONIC, &next);
	pthread_mutex_lock(&s->lock);
	while (!s->stop) {
		/* a fixed rate, not a fixed pause: slow samples do not drift the clock */
		next.tv_sec += s->o.interval_ms / 1000;
		next.tv_nsec += (long)(s->o.interval_ms % 1000) * 1000000;
		if (next.tv_nsec >= 1000000000) {
			next.tv_sec++;
			next.tv_nsec -= 1000000000;
		}
		while (!s->stop) {
			if (s->render_now && s->stale) {
				pthread_mutex_unlock(&s->lock);
				render(s);
				pthread_mutex_lock(&s->lock);
				continue;
			}
			if (pthread_cond_timedwait(&s->wake, &s->lock, &next) == ETIMEDOUT)
				break;
		}
		if (s->stop)
			break;
		pthread_mutex_unlock(&s->lock);
		sample_once(s);
		pthread_mutex_lock(&s->lock);
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > next.tv_sec + 5)
			next = now; /* suspended or far behind: do not catch up in a burst */
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

int sampler_start(struct sampler **out, const struct sampler_opts *o, char *err, size_t errlen)
{
	*out = NULL;
	struct sampler *s = calloc(1, sizeof *s);
	if (!s)
		return GC_ENOMEM;
	s->o = *o;
	snprintf(s->hostname, sizeof s->hostname, "%s", o->hostname ? o->hostname : "");
	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->wake, &ca);
	pthread_cond_init(&s->rendered, &ca);
	pthread_condattr_destroy(&ca);
	gc_open_opts oo = {.library = NULL, .sim_node = o->sim};
	int rc = gc_ctx_open(&s->ctx, &oo);
	if (rc != GC_OK) {
		const char *m = s->ctx ? gc_ctx_errmsg(s->ctx) : NULL;
		errbuf_set(err, errlen, "%s", m && *m ? m : gc_strerror(rc));
		sampler_stop(s);
		return rc;
	}
	s->ngpus = gc_ctx_count(s->ctx);
	int64_t cap = o->history_ms / (o->interval_ms > 0 ? o->interval_ms : 1000);
	s->cap = cap < 2 ? 2 : (size_t)cap;
	size_t n = s->ngpus ? s->ngpus : 1;
	s->held = calloc(n, sizeof *s->held);
	s->holder = calloc(n, sizeof *s->holder);
	s->was = calloc(n, sizeof *s->was);
	s->had = calloc(n, sizeof *s->had);
	s->marks = calloc(n, sizeof *s->marks);
	s->last_xid = calloc(n, sizeof *s->last_xid);
	s->times = calloc(s->cap, sizeof *s->times);
	s->pts = calloc(s->cap * n, sizeof *s->pts);
	s->gpu = calloc(n, sizeof *s->gpu);
	if (!s->held || !s->holder || !s->was || !s->had || !s->marks || !s->last_xid || !s->times || !s->pts || !s->gpu) {
		errbuf_set(err, errlen, "out of memory for %zu samples of history", s->cap);
		sampler_stop(s);
		return GC_ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		s->gpu[i].mem_total = UINT64_MAX;
	sample_once(s);
	if (!s->cur) {
		errbuf_set(err, errlen, "the first sample failed: %s", gc_ctx_errmsg(s->ctx));
		sampler_stop(s);
		return GC_EIO;
	}
	if ((errno = pthread_create(&s->thread, NULL, run, s)) != 0) {
		errbuf_set(err, errlen, "cannot start the sampling thread: %s", strerror(errno));
		sampler_stop(s);
		return GC_EIO;
	}
	s->running = true;
	*out = s;
	return GC_OK;
}

void sampler_stop(struct sampler *s)
{
	if (!s)
		return;
	if (s->running) {
		pthread_mutex_lock(&s->lock);
		s->stop = true;
		pthread_cond_signal(&s->wake);
		pthread_cond_broadcast(&s->rendered);
		pthread_mutex_unlock(&s->lock);
		pthread_join(s->thread, NULL);
	}
	frame_unref(s->cur);
	gpu_snapshot_release(&s->snap);
	gpu_snapshot_release(&s->view);
	gc_ctx_free(s->ctx);
	lease_dir_close(s->leases);
	free(s->held);
	free(s->holder);
	free(s->marks);
	free(s->last_xid);
	free(s->was);
	free(s->had);
	free(s->times);
	free(s->pts);
	free(s->gpu);
	pthread_cond_destroy(&s->wake);
	pthread_cond_destroy(&s->rendered);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

/*
 * Copy what is asked for under the lock, render it after: a long history
 * (100 000 samples x 8 GPUs is 22 MB of JSON) must not hold up the sampler
 * or the scrapes that wait on the lock for their frame.
 */
char *sampler_history_json(struct sampler *s, int64_t seconds, size_t *len)
{
	size_t ngpus = s->ngpus, n = 0;
	int64_t *times = NULL;
	struct point *pts = NULL;
	char (*uuid)[96] = calloc(ngpus ? ngpus : 1, sizeof *uuid);
	uint64_t *mem_total = calloc(ngpus ? ngpus : 1, sizeof *mem_total);
	pthread_mutex_lock(&s->lock);
	size_t first = 0;
	if (seconds > 0 && s->count) {
		int64_t newest = s->times[(s->head + s->count - 1) % s->cap];
		while (first < s->count && s->times[(s->head + first) % s->cap] < newest - seconds * 1000)
			first++;
	}
	n = s->count - first;
	times = malloc((n ? n : 1) * sizeof *times);
	pts = malloc((n ? n : 1) * (ngpus ? ngpus : 1) * sizeof *pts);
	if (times && pts && uuid && mem_total) {
		for (size_t k = 0; k < n; k++) {
			size_t at = (s->head + first + k) % s->cap;
			times[k] = s->times[at];
			memcpy(&pts[k * ngpus], &s->pts[at * ngpus], ngpus * sizeof *pts);
		}
		for (size_t i = 0; i < ngpus; i++) {
			memcpy(uuid[i], s->gpu[i].uuid, sizeof uuid[i]);
			mem_total[i] = s->gpu[i].mem_total;
		}
	}
	pthread_mutex_unlock(&s->lock);
	char *out = NULL;
	if (times && pts && uuid && mem_total) {
		struct jw w;
		jsonw_init(&w, false);
		jsonw_object(&w, NULL);
		jsonw_plain(&w, "schema", "gpuctl.history/1");
		jsonw_int(&w, "interval_ms", s->o.interval_ms);
		jsonw_int(&w, "history_ms", (long long)s->o.history_ms);
		jsonw_array_inline(&w, "time");
		for (size_t k = 0; k < n; k++)
			jsonw_int(&w, NULL, times[k]);
		jsonw_end(&w, ']');
		jsonw_array(&w, "gpus");
		for (size_t i = 0; i < ngpus; i++) {
			jsonw_object(&w, NULL);
			jsonw_uint(&w, "index", i);
			if (uuid[i][0])
				jsonw_string(&w, "uuid", uuid[i]);
			else
				jsonw_null(&w, "uuid");
			if (mem_total[i] != UINT64_MAX)
				jsonw_uint(&w, "mem_total", mem_total[i]);
			else
				jsonw_null(&w, "mem_total");
			static const char *const keys[] = {"util", "mem_used", "temp", "power_w"};
			for (int c = 0; c < 4; c++) {
				jsonw_array_inline(&w, keys[c]);
				for (size_t k = 0; k < n; k++) {
					const struct point *p = &pts[k * ngpus + i];
					switch (c) {
					case 0: p->util < 0 ? jsonw_null(&w, NULL) : jsonw_int(&w, NULL, p->util); break;
					case 1:
						if (p->mem_used == UINT64_MAX)
							jsonw_null(&w, NULL);
						else
							jsonw_uint(&w, NULL, p->mem_used);
						break;
					case 2: p->temp < 0 ? jsonw_null(&w, NULL) : jsonw_int(&w, NULL, p->temp); break;
					case 3:
						if (p->power_mw < 0)
							jsonw_null(&w, NULL);
						else
							jsonw_milli(&w, NULL, p->power_mw);
						break;
					}
				}
				jsonw_end(&w, ']');
			}
			jsonw_end(&w, '}');
		}
		jsonw_end(&w, ']');
		jsonw_end(&w, '}');
		out = jsonw_finish(&w);
		if (out)
			*len = strlen(out);
	}
	free(times);
	free(pts);
	free(uuid);
	free(mem_total);
	return out;
}
