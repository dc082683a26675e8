/*
 * explain-json.c — an explain result as the JSON `gpuctl explain --json`
 * prints (schema gpuctl.explain/1, docs/explain.md), and the public
 * gc_explain_fd / gc_explain_text that hand it to programs on libgpuctl.
 */
#include "util/datadir.h"
#include "util/errbuf.h"
#include "util/units.h"
#include "diagnose/explain.h"
#include "gpuctl/gpuctl.h"

#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

bool explain_whole(double x)
{
	return isfinite(x) && fabs(x) < 9007199254740992.0 && x == trunc(x);
}

/* rounded to two decimals (MiB to the hundredth, as PyTorch prints them); whole ones as integers */
static json_t *json_num(double v)
{
	double x = units_round(v, 100);
	if (!isfinite(x))
		return json_null();
	return explain_whole(x) ? json_integer((json_int_t)x) : json_real(x);
}

char *explain_result_json(const char *source, const struct explain_result *r)
{
	json_t *root = json_pack("{s:s, s:s, s:I, s:I, s:b}", "schema", "gpuctl.explain/1", "source", source,
				 "lines", (json_int_t)r->lines, "bytes", (json_int_t)r->bytes, "binary", r->binary);
	json_t *a = json_array();
	if (!root || !a) {
		json_decref(root);
		json_decref(a);
		return NULL;
	}
	for (size_t i = 0; i < r->n; i++) {
		const struct explain_finding *f = &r->findings[i];
		json_t *vals = json_object();
		for (size_t k = 0; k < f->nvalues; k++) {
			const struct explain_value *v = &f->values[k];
			json_object_set_new(vals, v->name,
					    v->is_num ? json_num(v->num) : json_stringn_nocheck(v->str, strlen(v->str)));
		}
		json_t *o = json_pack("{s:s, s:s, s:I, s:I, s:s%, s:O, s:s, s:s}", "id", f->id, "title", f->title,
				      "count", (json_int_t)f->count, "first_line", (json_int_t)f->first_line,
				      "line", f->line, strlen(f->line), "values", vals, "cause", f->cause, "fix", f->fix);
		if (!o) {
			/* a line that is not UTF-8: keep the finding, replace the line */
			o = json_pack("{s:s, s:s, s:I, s:I, s:s, s:O, s:s, s:s}", "id", f->id, "title", f->title,
				      "count", (json_int_t)f->count, "first_line", (json_int_t)f->first_line, "line",
				      "(not UTF-8)", "values", vals, "cause", f->cause, "fix", f->fix);
		}
		json_decref(vals);
		if (o)
			json_object_set_new(o, "root", json_boolean(i == r->root));
		if (o && f->rank >= 0)
			json_object_set_new(o, "rank", json_integer(f->rank));
		json_t *ranks = json_array();
		for (int k = 0; o && ranks && k < 256; k++)
			if (f->ranks[k / 64] >> (k % 64) & 1)
				json_array_append_new(ranks, json_integer(k));
		if (o && ranks && json_array_size(ranks))
			json_object_set_new(o, "ranks", ranks);
		else
			json_decref(ranks);
		json_array_append_new(a, o);
	}
	json_object_set_new(root, "findings", a);
	/* 15 digits: a number rounded to 0.01 prints as such, not as 98.560000000000002 */
	char *s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
	json_decref(root);
	return s;
}

/* load the signatures, scan (fd, or text[len] when fd < 0), render */
static int explain(int fd, const char *text, size_t len, const char *source, char **json, char *err, size_t errlen)
{
	if (!json || (fd < 0 && !text && len) || !source) {
		errbuf_set(err, errlen, "gc_explain: no input or no place for the result");
		return GC_EINVAL;
	}
	*json = NULL;
	char dir[PATH_MAX];
	int rc = datadir_signatures(dir, sizeof dir, err, errlen);
	struct explain_db *db = NULL;
	if (rc == GC_OK)
		rc = explain_db_load(&db, dir, err, errlen);
	if (rc != GC_OK)
		return rc;
	struct explain_result r;
	if (fd >= 0)
		rc = explain_scan_fd(db, fd, &r, err, errlen);
	else if ((rc = explain_scan_buf(db, text ? text : "", len, &r)) != GC_OK)
		errbuf_set(err, errlen, "%s", gc_strerror(rc));
	if (rc == GC_OK) {
		if (!(*json = explain_result_json(source, &r))) {
			errbuf_set(err, errlen, "out of memory");
			rc = GC_ENOMEM;
		}
		explain_result_free(&r);
	}
	explain_db_free(db);
	return rc;
}

int gc_explain_fd(int fd, const char *source, char **json, char *err, size_t errlen)
{
	if (fd < 0) {
		errbuf_set(err, errlen, "gc_explain_fd: invalid file descriptor %d", fd);
		return GC_EINVAL;
	}
	return explain(fd, NULL, 0, source ? source : "stdin", json, err, errlen);
}

int gc_explain_text(const char *text, size_t len, const char *source, char **json, char *err, size_t errlen)
{
	return explain(-1, text, len, source ? source : "text", json, err, errlen);
}
