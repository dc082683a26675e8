/*
 * view.c — what the queue shows over HTTP (queue-int.h): the Prometheus
 * counts and /api/v1/jobs, rendered by the queue's thread from kept counts
 * and the first VIEW_JOBS live jobs at most every RENDER_MS, and read by the HTTP threads under the
 * view's lock. Never a command line or an environment: the pages are not
 * authenticated.
 */
#include "queue-int.h"

#include "util/clock.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void view_init(struct view *v)
{
	memset(v, 0, sizeof *v);
	pthread_mutex_init(&v->lock, NULL);
}

void view_free(struct view *v)
{
	free(v->mtext);
	free(v->jtext);
	pthread_mutex_destroy(&v->lock);
}

void view_started(struct view *v, uint64_t n, double wait_s)
{
	pthread_mutex_lock(&v->lock);
	v->started_total += n;
	v->wait_total += wait_s;
	pthread_mutex_unlock(&v->lock);
}

void view_failed(struct view *v, const char *cls)
{
	pthread_mutex_lock(&v->lock);
	size_t i = 0;
	while (i < v->nfail && strcmp(v->fail[i].cls, cls) != 0)
		i++;
	if (i == v->nfail && v->nfail >= sizeof v->fail / sizeof v->fail[0] - 1)
		cls = "other";
	for (i = 0; i < v->nfail && strcmp(v->fail[i].cls, cls) != 0; i++)
		;
	if (i == v->nfail) {
		snprintf(v->fail[i].cls, sizeof v->fail[i].cls, "%s", cls);
		v->fail[i].n = 0;
		v->nfail++;
	}
	v->fail[i].n++;
	pthread_mutex_unlock(&v->lock);
}

/* a label value must be UTF-8 without quotes or backslashes: keep the usual user-name bytes */
static void label_safe(char *dst, const char *src, size_t len)
{
	for (size_t c = 0; c < len; c++) {
		char ch = src[c];
		dst[c] = !ch || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
			 ch == '-' || ch == '_' || ch == '.' ? ch : '_';
		if (!ch)
			break;
	}
}

/*
 * The counts for /metrics and the first VIEW_JOBS live jobs for /api/v1/jobs:
 * kept counts, the running jobs (one per GPU at most) and one page from the
 * live index, so that a render costs the same at a hundred pending jobs as at
 * a hundred thousand (issue 35).
 */
void view_render(struct view *w, struct store *st)
{
	int64_t queued, running, oldest;
	char *buf = NULL;
	size_t len = 0;
	struct store_job *v = NULL, *r = NULL;
	size_t n = 0, nr = 0;
	w->rendered = clock_mono_ms();
	w->render_at = 0;
	if (store_counts(st, &queued, &running, &oldest) < 0 || store_brief(st, STORE_RUN, VIEW_JOBS, &r, &nr) < 0)
		return;
	if (store_brief(st, STORE_LIVE, VIEW_JOBS, &v, &n) < 0) {
		store_list_free(r, nr);
		return;
	}
	FILE *f = open_memstream(&buf, &len);
	if (!f) {
		store_list_free(v, n);
		store_list_free(r, nr);
		return;
	}
	fprintf(f, "# HELP gpuctl_queue_jobs Jobs in gpuctld's queue, by state.\n# TYPE gpuctl_queue_jobs gauge\n"
		   "gpuctl_queue_jobs{state=\"queued\"} %lld\ngpuctl_queue_jobs{state=\"running\"} %lld\n",
		(long long)queued, (long long)running);
	fprintf(f, "# HELP gpuctl_queue_running_jobs Running queued jobs, by user.\n"
		   "# TYPE gpuctl_queue_running_jobs gauge\n");
	for (size_t i = 0; i < nr; i++) {
		bool seen = false;
		size_t cnt = 0;
		for (size_t k = 0; k < nr; k++) {
			if (strcmp(r[k].user, r[i].user) == 0) {
				seen |= k < i;
				cnt++;
			}
		}
		if (seen)
			continue;
		char user[sizeof r[i].user];
		label_safe(user, r[i].user, sizeof user);
		fprintf(f, "gpuctl_queue_running_jobs{user=\"%s\"} %zu\n", user, cnt);
	}
	store_list_free(r, nr);
	if (fclose(f) != 0) {
		free(buf);
		store_list_free(v, n);
		return;
	}
	json_t *a = json_array();
	for (size_t i = 0; a && i < n; i++) {
		if (v[i].state != STORE_QUEUED && v[i].state != STORE_RUNNING)
			continue;
		json_array_append_new(a, json_pack("{s:I, s:s, s:s, s:s, s:i, s:s, s:I, s:I}", "id",
						   (json_int_t)v[i].id, "user", v[i].user, "name", v[i].name,
						   "state", store_state_name(v[i].state), "gpus_requested",
						   (int)v[i].ngpus, "gpus", v[i].state == STORE_RUNNING ? v[i].gpus : "",
						   "submitted_ms", (json_int_t)v[i].submitted_ms, "started_ms",
						   (json_int_t)v[i].started_ms));
	}
	/* the first page; "total" says how many there are in all */
	json_t *doc = a ? json_pack("{s:s, s:b, s:I, s:b, s:o}", "schema", "gpuctl.jobs/1", "queue", 1, "total",
				    (json_int_t)(queued + running), "truncated", (int)(queued + running > (int64_t)n),
				    "jobs", a)
			: NULL;
	char *jt = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	json_decref(doc);
	pthread_mutex_lock(&w->lock);
	free(w->mtext);
	w->mtext = buf;
	if (jt) {
		free(w->jtext);
		w->jtext = jt;
	}
	w->oldest_ms = oldest;
	pthread_mutex_unlock(&w->lock);
	store_list_free(v, n);
}

/* something changed: render soon, but not more often than every RENDER_MS */
void view_render_later(struct view *w)
{
	if (!w->render_at) {
		long long now = clock_mono_ms(), next = w->rendered + RENDER_MS;
		w->render_at = next > now ? next : now;
	}
}

char *queue_jobs_json(struct queue *q, size_t *len)
{
	struct view *w = &q->view;
	pthread_mutex_lock(&w->lock);
	char *out = strdup(w->jtext ? w->jtext : "{\"schema\":\"gpuctl.jobs/1\",\"queue\":true,\"jobs\":[]}");
	pthread_mutex_unlock(&w->lock);
	if (out)
		*len = strlen(out);
	return out;
}

size_t queue_metrics(struct queue *q, char *buf, size_t len)
{
	struct view *w = &q->view;
	pthread_mutex_lock(&w->lock);
	double oldest = w->oldest_ms ? (clock_real_ms() - w->oldest_ms) / 1000.0 : 0;
	int n = snprintf(buf, len,
			 "%s# HELP gpuctl_queue_oldest_wait_seconds How long the longest-waiting queued job has "
			 "waited (0: none waits).\n# TYPE gpuctl_queue_oldest_wait_seconds gauge\n"
			 "gpuctl_queue_oldest_wait_seconds %.3f\n"
			 "# HELP gpuctl_queue_started_total Queued jobs started since gpuctld started.\n"
			 "# TYPE gpuctl_queue_started_total counter\ngpuctl_queue_started_total %llu\n"
			 "# HELP gpuctl_queue_wait_seconds_total Seconds those jobs waited in the queue, summed "
			 "(divide by gpuctl_queue_started_total for the mean).\n"
			 "# TYPE gpuctl_queue_wait_seconds_total counter\ngpuctl_queue_wait_seconds_total %.3f\n",
			 w->mtext ? w->mtext : "", oldest < 0 ? 0 : oldest, (unsigned long long)w->started_total,
			 w->wait_total);
	if (n >= 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, "# HELP gpuctl_job_failures_total Queued jobs that failed, by the "
			      "class gpuctl explain gives their log (unknown: nothing recognised).\n"
			      "# TYPE gpuctl_job_failures_total counter\n");
	for (size_t i = 0; n >= 0 && (size_t)n < len && i < w->nfail; i++)
		n += snprintf(buf + n, len - (size_t)n, "gpuctl_job_failures_total{class=\"%s\"} %llu\n", w->fail[i].cls,
			      (unsigned long long)w->fail[i].n);
	pthread_mutex_unlock(&w->lock);
	return n < 0 ? 0 : (size_t)n < len ? (size_t)n : len - 1;
}
