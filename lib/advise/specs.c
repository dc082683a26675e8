/*
 * specs.c — loads data/gpus.csv, data/models.csv and data/fabrics.csv (see
 * specs.h). Bad rows are errors naming the file, line and column: these
 * tables feed numbers people spend money on, so a typo must not turn into a
 * silent 0.
 */
#include "advise/specs.h"
#include "util/csv.h"
#include "util/errbuf.h"
#include "util/slurp.h"
#include "device/gpu.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <fnmatch.h>
#include <string.h>
#include <strings.h>

#define SPECS_MAX_FILE (4u << 20)

static void copy(char *dst, size_t len, const char *src)
{
	snprintf(dst, len, "%s", src ? src : "");
}

/* a non-negative number, or empty (= 0 when allowed) */
static int num(const char *s, bool empty_ok, double *out)
{
	int rc = csv_num(s, out);
	if (rc == 1)
		*out = 0;
	return rc < 0 || (rc == 1 && !empty_ok) ? -1 : 0;
}

static const char *field(const struct csv *c, int col)
{
	return col >= 0 && (size_t)col < c->nf ? c->f[col] : "";
}

/* a table being read: its reader, and the rows read so far (cnt of size bytes each) */
struct table {
	const char *path;
	char *data;
	struct csv c;
	void *rows;
	size_t cnt, size;
	char *err;
	size_t errlen;
};

/*
 * Read `path` and its header row into t (rows of `size` bytes), and the
 * header's columns cols[0..n) into idx (bits of `required`: columns that must
 * be there). 0, or a GC_E* code with the reason in err (nothing left to
 * release).
 */
static int table_open(struct table *t, const char *path, size_t size, const char *const *cols, int n,
		      unsigned long required, int *idx, char *err, size_t errlen)
{
	size_t len;
	char why[256];
	*t = (struct table){.path = path, .size = size, .err = err, .errlen = errlen};
	int rc = slurp(path, SPECS_MAX_FILE, &t->data, &len, err, errlen);
	if (rc)
		return rc;
	csv_init(&t->c, t->data, len, CSV_COMMENTS);
	rc = csv_next(&t->c, why, sizeof why);
	int miss = rc > 0 ? csv_columns(&t->c, cols, n, required, idx) : -1;
	if (rc > 0 && miss < 0)
		return 0;
	if (rc <= 0)
		errbuf_set(err, errlen, "%s: %s", path, rc < 0 ? why : "empty file");
	else
		errbuf_set(err, errlen, "%s: no column '%s' in the header", path, cols[miss]);
	csv_release(&t->c);
	free(t->data);
	t->data = NULL;
	return GC_EINVAL;
}

/*
 * The next row, read into t->c: a zeroed row at rows[cnt] for the caller to
 * fill (and count, cnt++, once it is good). NULL at the end of the file (*rc
 * 0), or with *rc a GC_E* code and the reason in err (a bad line, no memory).
 */
static void *table_row(struct table *t, int *rc)
{
	char why[256];
	int got = csv_next(&t->c, why, sizeof why);
	*rc = 0;
	if (got < 0) {
		errbuf_set(t->err, t->errlen, "%s: %s", t->path, why);
		*rc = GC_EINVAL;
	}
	if (got != 1)
		return NULL;
	char *p = realloc(t->rows, (t->cnt + 1) * t->size);
	if (!p) {
		errbuf_set(t->err, t->errlen, "out of memory");
		*rc = GC_ENOMEM;
		return NULL;
	}
	t->rows = p;
	memset(p + t->cnt * t->size, 0, t->size);
	return p + t->cnt * t->size;
}

/* the end of a load: the reader released; the rows (their count in *n) when rc is 0, else NULL (the rows freed) */
static void *table_close(struct table *t, int rc, size_t *n)
{
	csv_release(&t->c);
	free(t->data);
	if (rc) {
		free(t->rows);
		return NULL;
	}
	*n = t->cnt;
	return t->rows;
}

int specs_load_gpus(const char *path, spec_gpu **out, size_t *n, char *err, size_t errlen)
{
	*out = NULL;
	*n = 0;
	static const char *const cols[] = {"name", "accelerator_names", "memory_gb", "mem_bw_gbs", "fp32_tflops",
					   "bf16_tflops", "fp16_tflops", "fp8_tflops", "int8_tops", "interconnect",
					   "interconnect_gbs", "source", "notes"};
	enum { NCOL = sizeof cols / sizeof cols[0] };
	int idx[NCOL];
	struct table t;
	/* name, accelerator_names, memory_gb and mem_bw_gbs are required */
	int rc = table_open(&t, path, sizeof **out, cols, NCOL, 0xful, idx, err, errlen);
	if (rc)
		return rc;
	spec_gpu *x;
	while ((x = table_row(&t, &rc))) {
		copy(x->name, sizeof x->name, field(&t.c, idx[0]));
		copy(x->acc, sizeof x->acc, field(&t.c, idx[1]));
		copy(x->interconnect, sizeof x->interconnect, field(&t.c, idx[9]));
		copy(x->source, sizeof x->source, field(&t.c, idx[11]));
		copy(x->notes, sizeof x->notes, field(&t.c, idx[12]));
		double v[NCOL] = {0};
		for (int i = 2; i < NCOL; i++) {
			if (i == 9 || i >= 11)
				continue;
			if (num(field(&t.c, idx[i]), i != 2 && i != 3, &v[i]) < 0) {
				errbuf_set(err, errlen, "%s: line %zu: %s '%s' is not a non-negative number", path, t.c.line,
					   cols[i], field(&t.c, idx[i]));
				rc = GC_EINVAL;
				goto out;
			}
		}
		if (!x->name[0] || v[2] <= 0 || v[3] <= 0) {
			errbuf_set(err, errlen, "%s: line %zu: a GPU needs a name, memory_gb and mem_bw_gbs", path, t.c.line);
			rc = GC_EINVAL;
			goto out;
		}
		x->mem = v[2] * 1e9;
		x->bw = v[3] * 1e9;
		x->peak[MEMMODEL_FP32] = v[4] * 1e12;
		x->peak[MEMMODEL_BF16] = v[5] * 1e12;
		x->peak[MEMMODEL_FP16] = v[6] * 1e12;
		x->peak[MEMMODEL_FP8] = v[7] * 1e12;
		x->peak[MEMMODEL_INT8] = v[8] * 1e12;
		x->peak[MEMMODEL_INT4] = 0; /* not in the table: int4 weights are computed in 16 bits */
		x->link = v[10] * 1e9;
		t.cnt++;
	}
out:
	*out = table_close(&t, rc, n);
	return rc;
}

int specs_load_models(const char *path, memmodel_model **out, size_t *n, char *err, size_t errlen)
{
	*out = NULL;
	*n = 0;
	static const char *const cols[] = {"name", "aliases", "kind", "mlp", "params", "active_params", "layers",
					   "hidden", "heads", "kv_heads", "vocab", "ffn", "experts", "experts_active",
					   "tied", "seq", "act_bytes_per_sample", "flops_per_sample", "default_shape",
					   "head_dim"};
	enum { NCOL = sizeof cols / sizeof cols[0] };
	int idx[NCOL];
	char why[256];
	struct table t;
	/* name, kind and params are required */
	int rc = table_open(&t, path, sizeof **out, cols, NCOL, 1ul << 0 | 1ul << 2 | 1ul << 4, idx, err, errlen);
	if (rc)
		return rc;
	memmodel_model *x;
	while ((x = table_row(&t, &rc))) {
		copy(x->name, sizeof x->name, field(&t.c, idx[0]));
		copy(x->aliases, sizeof x->aliases, field(&t.c, idx[1]));
		const char *kind = field(&t.c, idx[2]);
		x->kind = strcasecmp(kind, "decoder") == 0 ? MEMMODEL_DECODER
			  : strcasecmp(kind, "encoder") == 0 ? MEMMODEL_ENCODER
			  : strcasecmp(kind, "cnn") == 0 ? MEMMODEL_CNN : -1;
		if (!x->name[0] || x->kind < 0) {
			errbuf_set(err, errlen, "%s: line %zu: a model needs a name and a kind (decoder, encoder, cnn)",
				   path, t.c.line);
			rc = GC_EINVAL;
			goto out;
		}
		x->gated = strcasecmp(field(&t.c, idx[3]), "plain") != 0 && x->kind == MEMMODEL_DECODER;
		x->tied = strcasecmp(field(&t.c, idx[14]), "yes") == 0;
		x->default_shape = strcasecmp(field(&t.c, idx[18]), "yes") == 0 && x->kind == MEMMODEL_DECODER;
		if (memmodel_parse_count(field(&t.c, idx[4]), &x->params, why, sizeof why) < 0 ||
		    (*field(&t.c, idx[5]) && memmodel_parse_count(field(&t.c, idx[5]), &x->active_params, why, sizeof why) < 0)) {
			errbuf_set(err, errlen, "%s: line %zu: %s", path, t.c.line, why);
			rc = GC_EINVAL;
			goto out;
		}
		if (!x->active_params)
			x->active_params = x->params;
		unsigned *u[] = {&x->layers, &x->hidden, &x->heads, &x->kv_heads, &x->vocab, &x->ffn,
				 &x->experts, &x->experts_active};
		for (int i = 0; i < 8; i++) {
			double v;
			if (num(field(&t.c, idx[6 + i]), true, &v) < 0 || v > 1e7 || v != floor(v)) {
				errbuf_set(err, errlen, "%s: line %zu: %s '%s' is not a whole number", path, t.c.line,
					   cols[6 + i], field(&t.c, idx[6 + i]));
				rc = GC_EINVAL;
				goto out;
			}
			*u[i] = (unsigned)v;
		}
		double v;
		if (num(field(&t.c, idx[15]), true, &v) < 0 || v > 1e7 ||
		    num(field(&t.c, idx[16]), true, &x->act_per_sample) < 0 ||
		    num(field(&t.c, idx[17]), true, &x->flops_per_sample) < 0) {
			errbuf_set(err, errlen, "%s: line %zu: bad seq, act_bytes_per_sample or flops_per_sample", path,
				   t.c.line);
			rc = GC_EINVAL;
			goto out;
		}
		x->seq = (unsigned)v;
		if (num(field(&t.c, idx[19]), true, &v) < 0 || v > 65536 || v != floor(v)) {
			errbuf_set(err, errlen, "%s: line %zu: head_dim '%s' is not a whole number", path, t.c.line,
				   field(&t.c, idx[19]));
			rc = GC_EINVAL;
			goto out;
		}
		x->head_dim = (unsigned)v;
		if (x->heads && !x->head_dim && x->hidden % x->heads) {
			errbuf_set(err, errlen, "%s: line %zu: hidden %u is not a multiple of heads %u", path, t.c.line,
				   x->hidden, x->heads);
			rc = GC_EINVAL;
			goto out;
		}
		t.cnt++;
	}
out:
	*out = table_close(&t, rc, n);
	return rc;
}

int specs_load_fabrics(const char *path, spec_fabric **out, size_t *n, char *err, size_t errlen)
{
	*out = NULL;
	*n = 0;
	static const char *const cols[] = {"cloud", "instance", "fabric", "gbps", "source", "gpu_network"};
	enum { NCOL = sizeof cols / sizeof cols[0] };
	int idx[NCOL];
	struct table t;
	/* instance and fabric are required */
	int rc = table_open(&t, path, sizeof **out, cols, NCOL, 1ul << 1 | 1ul << 2, idx, err, errlen);
	if (rc)
		return rc;
	spec_fabric *x;
	while ((x = table_row(&t, &rc))) {
		copy(x->cloud, sizeof x->cloud, field(&t.c, idx[0]));
		copy(x->instance, sizeof x->instance, field(&t.c, idx[1]));
		copy(x->fabric, sizeof x->fabric, field(&t.c, idx[2]));
		/* gpu_network: yes (the default, as the file had it before the column) or no */
		const char *gn = field(&t.c, idx[5]);
		x->plain = *gn && strcasecmp(gn, "no") == 0;
		if (*gn && strcasecmp(gn, "yes") && strcasecmp(gn, "no")) {
			errbuf_set(err, errlen, "%s: line %zu: gpu_network '%s' (expected yes or no)", path, t.c.line, gn);
			rc = GC_EINVAL;
			goto out;
		}
		if (!x->instance[0] || !x->fabric[0] || num(field(&t.c, idx[3]), true, &x->gbps) < 0) {
			errbuf_set(err, errlen, "%s: line %zu: a row needs an instance, a fabric and gbps as a "
						"non-negative number or empty (gbps '%s')", path, t.c.line, field(&t.c, idx[3]));
			rc = GC_EINVAL;
			goto out;
		}
		t.cnt++;
	}
out:
	*out = table_close(&t, rc, n);
	return rc;
}

const spec_fabric *specs_fabric_for(const spec_fabric *f, size_t n, const char *instance)
{
	for (size_t i = 0; i < n; i++)
		if (strcasecmp(f[i].instance, instance) == 0)
			return &f[i];
	return NULL;
}

const memmodel_model *specs_model_shape_for(const memmodel_model *m, size_t n, double params)
{
	const memmodel_model *best = NULL;
	double dist = INFINITY;
	for (size_t i = 0; i < n && params > 0; i++) {
		if (!m[i].default_shape || m[i].params <= 0)
			continue;
		/* a ratio, not a difference: 1.2B is nearer 1B than 3B (the larger of r and 1/r orders
		 * as |log r| does, without libm) */
		double r = params / m[i].params, d = r >= 1 ? r : 1 / r;
		if (d < dist) {
			dist = d;
			best = &m[i];
		}
	}
	return best;
}

/* letters and digits only, in lower case: "RTX-4090", "rtx 4090" and "rtx4090" are one name */
static void alnum(char *dst, size_t len, const char *s)
{
	size_t o = 0;
	for (; *s && o + 1 < len; s++)
		if (isalnum((unsigned char)*s))
			dst[o++] = (char)tolower((unsigned char)*s);
	dst[o] = '\0';
}

const spec_gpu *specs_gpu_named(const spec_gpu *g, size_t n, const char *name)
{
	char want[64], have[64];
	alnum(want, sizeof want, name);
	if (!want[0])
		return NULL;
	for (size_t i = 0; i < n; i++) {
		alnum(have, sizeof have, g[i].name);
		if (strcmp(want, have) == 0)
			return &g[i];
		for (const char *p = g[i].acc; *p;) {
			size_t k = strcspn(p, ";");
			char one[64];
			snprintf(one, sizeof one, "%.*s", (int)(k < 63 ? k : 63), p);
			alnum(have, sizeof have, one);
			if (strcmp(want, have) == 0)
				return &g[i];
			p += k + (p[k] == ';');
		}
	}
	return NULL;
}

const spec_gpu *specs_gpu_for(const spec_gpu *g, size_t n, const char *acc)
{
	for (size_t i = 0; i < n; i++)
		if (strcasecmp(g[i].name, acc) == 0 || csv_in_list(g[i].acc, ';', acc))
			return &g[i];
	return NULL;
}

/* normalised for matching: lower case, '_' and ' ' as '-' */
static void norm(char *dst, size_t len, const char *s)
{
	size_t i = 0;
	for (; s[i] && i + 1 < len; i++)
		dst[i] = s[i] == '_' || s[i] == ' ' ? '-' : (char)tolower((unsigned char)s[i]);
	dst[i] = '\0';
}

const memmodel_model *specs_model_find(const memmodel_model *m, size_t n, const char *name)
{
	char want[64], have[64];
	norm(want, sizeof want, name);
	for (size_t i = 0; i < n; i++) {
		norm(have, sizeof have, m[i].name);
		if (strcmp(want, have) == 0 || csv_in_list(m[i].aliases, ';', name))
			return &m[i];
	}
	return NULL;
}

static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 63 || lb > 63)
		return 64;
	size_t d[64][64];
	for (size_t i = 0; i <= la; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= la; i++)
		for (size_t j = 1; j <= lb; j++) {
			size_t sub = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			size_t del = d[i - 1][j] + 1, ins = d[i][j - 1] + 1;
			d[i][j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
		}
	return d[la][lb];
}

size_t specs_model_suggest(const memmodel_model *m, size_t n, const char *name, const char **out, size_t max)
{
	char want[64], have[64];
	norm(want, sizeof want, name);
	size_t got = 0;
	size_t score[16];
	if (max > 16)
		max = 16;
	for (size_t i = 0; i < n; i++) {
		norm(have, sizeof have, m[i].name);
		size_t d = edit_distance(want, have);
		/* a shared family prefix ("llama-3") counts as close */
		size_t pre = 0;
		while (want[pre] && want[pre] == have[pre])
			pre++;
		if (pre >= 5 && pre >= strlen(want) / 2)
			d = d < 2 ? d : 2;
		if (d > 3 + strlen(want) / 4)
			continue;
		/* equal distances: the longer shared prefix first ("llama-3-7b" → Llama-3-8B before Llama-2-7B) */
		d = d * 64 + (pre < 63 ? 63 - pre : 0);
		size_t k = got < max ? got++ : max;
		if (k == max && score[max - 1] <= d)
			continue;
		if (k == max)
			k = max - 1;
		while (k > 0 && score[k - 1] > d) {
			score[k] = score[k - 1];
			out[k] = out[k - 1];
			k--;
		}
		score[k] = d;
		out[k] = m[i].name;
	}
	return got;
}

/* a two-column table (key_col, gpu) of names and the gpus.csv rows they stand for */
static int load_pairs(const char *path, const char *key_col, const char *what, spec_sky **out, size_t *n, char *err,
		      size_t errlen)
{
	*out = NULL;
	*n = 0;
	const char *const cols[] = {key_col, "gpu"};
	int idx[2];
	struct table t;
	int rc = table_open(&t, path, sizeof **out, cols, 2, 3ul, idx, err, errlen);
	if (rc)
		return rc;
	spec_sky *x;
	while ((x = table_row(&t, &rc))) {
		copy(x->name, sizeof x->name, field(&t.c, idx[0]));
		copy(x->gpu, sizeof x->gpu, field(&t.c, idx[1]));
		if (!x->name[0] || !x->gpu[0]) {
			errbuf_set(err, errlen, "%s: line %zu: a row needs %s and a GPU", path, t.c.line, what);
			rc = GC_EINVAL;
			break;
		}
		t.cnt++;
	}
	*out = table_close(&t, rc, n);
	return rc;
}

int specs_load_sky(const char *path, spec_sky **out, size_t *n, char *err, size_t errlen)
{
	return load_pairs(path, "skypilot", "a SkyPilot name", out, n, err, errlen);
}

int specs_load_nvml(const char *path, spec_sky **out, size_t *n, char *err, size_t errlen)
{
	return load_pairs(path, "nvml", "a driver's name pattern", out, n, err, errlen);
}

const spec_gpu *specs_gpu_for_nvml(const spec_sky *t, size_t nt, const spec_gpu *g, size_t ng, const char *name)
{
	for (size_t i = 0; name && i < nt; i++) {
		if (fnmatch(t[i].name, name, FNM_CASEFOLD) != 0)
			continue;
		for (size_t k = 0; k < ng; k++)
			if (strcasecmp(g[k].name, t[i].gpu) == 0)
				return &g[k];
		return NULL; /* the table names a GPU gpus.csv lacks: not planned */
	}
	return NULL;
}
