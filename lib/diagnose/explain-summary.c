/*
 * explain-summary.c — the few findings a failed job's end shows (explain.h):
 * as lines after its output (gpuctl run, launch, gpuctld's runner, Python's
 * gpuctl.run) and as the JSON the queue keeps with a failed job (show,
 * --json, its job.failed event). One list of what a summary holds, so the
 * two never tell a failure differently.
 */
#include "diagnose/explain.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

double explain_need_mib(const struct explain_finding *f)
{
	double need = 0;
	for (size_t k = 0; k < f->nvalues; k++) {
		const struct explain_value *v = &f->values[k];
		if (v->is_num && (strcmp(v->name, "allocated_mib") == 0 || strcmp(v->name, "requested_mib") == 0))
			need += v->num;
	}
	return need;
}

void explain_ranks_text(const struct explain_finding *f, char *buf, size_t len)
{
	size_t o = 0;
	buf[0] = '\0';
	for (int k = 0; k < 256 && o < len; k++) {
		if (!(f->ranks[k / 64] >> (k % 64) & 1))
			continue;
		int e = k;
		while (e + 1 < 256 && (f->ranks[(e + 1) / 64] >> ((e + 1) % 64) & 1))
			e++;
		int n = e == k ? snprintf(buf + o, len - o, "%s%d", o ? "," : "", k)
			       : snprintf(buf + o, len - o, "%s%d-%d", o ? "," : "", k, e);
		o += n > 0 ? (size_t)n : 0;
		k = e;
	}
	if (f->ranks_over && o < len)
		snprintf(buf + o, len - o, "%s", o ? ",more" : "above 255");
}

void explain_ranks_said(const struct explain_finding *f, char *buf, size_t len)
{
	char list[128];
	explain_ranks_text(f, list, sizeof list);
	if (!list[0])
		snprintf(buf, len, "%s", "");
	else if (strpbrk(list, ",-") || f->ranks_over)
		snprintf(buf, len, " (ranks %s; first rank %d)", list, f->rank);
	else
		snprintf(buf, len, " (rank %s)", list);
}

/* the finding shown n-th: the root cause first, then the rest in order of appearance */
static size_t nth(const struct explain_result *r, size_t n)
{
	return n == 0 ? r->root : n <= r->root ? n - 1 : n;
}

char *explain_summary_text(const struct explain_result *r, const char *how, size_t max)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *t = open_memstream(&buf, &len);
	if (!t)
		return NULL;
	fprintf(t, "\ngpuctl: the job failed (%s); its last output shows %zu known failure%s (gpuctl explain):\n", how,
		r->n, r->n == 1 ? "" : "s");
	for (size_t n = 0; n < r->n && n < max; n++) {
		const struct explain_finding *f = &r->findings[nth(r, n)];
		char fc[64];
		char rk[160];
		explain_ranks_said(f, rk, sizeof rk);
		fprintf(t, "  [%s] %s%s\n    %.*s%s\n", explain_class(f, fc, sizeof fc), f->title, rk, 200, f->line,
			strlen(f->line) > 200 ? "..." : "");
		for (size_t k = 0; k < f->nvalues; k++) {
			char b[160];
			explain_value_text(&f->values[k], b, sizeof b);
			fprintf(t, "%s %s%s", k ? "," : "    numbers:", b, k + 1 == f->nvalues ? "\n" : "");
		}
		fprintf(t, "    cause: %s\n    fix: %s\n", f->cause, f->fix);
	}
	if (r->n > max)
		fprintf(t, "  (%zu more: gpuctl explain on the log shows them)\n", r->n - max);
	bool bad = ferror(t);
	if (fclose(t) != 0 || bad) {
		free(buf);
		return NULL;
	}
	return buf;
}

struct json_t *explain_summary_json(const struct explain_result *r, size_t max)
{
	json_t *a = json_array();
	for (size_t n = 0; a && n < r->n && n < max; n++) {
		const struct explain_finding *f = &r->findings[nth(r, n)];
		char c[64];
		json_t *nums = json_object();
		for (size_t k = 0; nums && k < f->nvalues; k++) {
			const struct explain_value *v = &f->values[k];
			json_object_set_new(nums, v->name, v->is_num ? json_real(v->num) : json_string(v->str));
		}
		json_array_append_new(a, json_pack("{s:s, s:s, s:s, s:o, s:s, s:s}", "class", explain_class(f, c, sizeof c),
						   "id", f->id, "title", f->title, "numbers", nums ? nums : json_object(),
						   "cause", f->cause, "fix", f->fix));
	}
	return a;
}
