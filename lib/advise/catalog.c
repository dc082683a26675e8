/*
 * catalog.c — price catalogs by header name (see catalog.h). Linear in the
 * file; the columns are found once from the header.
 */
#include "advise/catalog.h"
#include "util/csv.h"
#include "util/errbuf.h"
#include "util/slurp.h"
#include "device/gpu.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CATALOG_MAX_FILE (256u << 20)

void catalog_free(catalog *c)
{
	free(c->rows);
	memset(c, 0, sizeof *c);
}

static void copy(char *dst, size_t len, const char *src)
{
	snprintf(dst, len, "%s", src);
}

/* a price or a size: empty → -1 (unknown) */
static int number(const char *s, double *out)
{
	int rc = csv_num(s, out);
	if (rc == 1)
		*out = -1;
	return rc < 0 ? -1 : 0;
}

/* the date in a "# snapshot: ..." comment before the header, if any */
static void snapshot_date(catalog *c, const char *data, size_t len)
{
	const char *p = data, *end = data + len;
	if (len >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0)
		p += 3;
	while (p < end && *p == '#') {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((nl ? nl : end) - p);
		static const char key[] = "# snapshot:";
		if (n > sizeof key - 1 && strncasecmp(p, key, sizeof key - 1) == 0) {
			const char *v = p + sizeof key - 1, *vend = nl ? nl : end;
			while (v < vend && *v == ' ') /* within len: the buffer need not end in a NUL */
				v++;
			size_t vn = (size_t)(vend - v);
			while (vn && (v[vn - 1] == '\r' || v[vn - 1] == ' '))
				vn--;
			snprintf(c->date, sizeof c->date, "%.*s", (int)vn, v);
		}
		p = nl ? nl + 1 : end;
	}
}

/* indices of rows sorted by place (cloud, instance, region, accelerators), ties in file order */
static int by_place(const void *a, const void *b, void *rows)
{
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	const cat_row *x = (const cat_row *)rows + i, *y = (const cat_row *)rows + j;
	int k = strcmp(x->cloud, y->cloud);
	if (!k)
		k = strcmp(x->instance, y->instance);
	if (!k)
		k = strcmp(x->region, y->region);
	if (!k)
		k = strcmp(x->acc, y->acc);
	if (!k)
		k = x->count < y->count ? -1 : x->count > y->count;
	return k ? k : i < j ? -1 : i > j;
}

/* the lower of two prices where < 0 is unknown */
static double lower(double a, double b)
{
	return a < 0 ? b : b < 0 ? a : a < b ? a : b;
}

/*
 * One row per instance type and region: SkyPilot's catalogs have one per
 * availability zone. The on-demand price is the region's lowest, the spot
 * price its cheapest zone's, and `zone` names that zone; the row stays
 * where its first zone was. Without memory for the index, rows stay as they are.
 */
static void merge_zones(catalog *c, size_t from)
{
	size_t n = c->n - from;
	size_t *ix = n > 1 ? malloc(n * sizeof *ix) : NULL;
	if (!ix)
		return;
	cat_row *v = c->rows + from;
	for (size_t i = 0; i < n; i++)
		ix[i] = i;
	qsort_r(ix, n, sizeof *ix, by_place, v);
	bool *gone = calloc(n, sizeof *gone);
	for (size_t a = 0; gone && a < n;) {
		size_t b = a + 1;
		cat_row *m = &v[ix[a]];
		for (; b < n; b++) {
			const cat_row *x = &v[ix[b]];
			if (strcmp(x->cloud, m->cloud) || strcmp(x->instance, m->instance) || strcmp(x->region, m->region) ||
			    strcmp(x->acc, m->acc) || x->count != m->count)
				break;
			m->price = lower(m->price, x->price);
			if (x->spot >= 0 && (m->spot < 0 || x->spot < m->spot)) {
				m->spot = x->spot;
				memmove(m->zone, x->zone, sizeof m->zone);
			}
			m->mem_gib = x->mem_gib > m->mem_gib ? x->mem_gib : m->mem_gib;
			m->vcpus = x->vcpus > m->vcpus ? x->vcpus : m->vcpus;
			gone[ix[b]] = true;
		}
		a = b;
	}
	size_t out = 0;
	for (size_t i = 0; gone && i < n; i++)
		if (!gone[i])
			v[out++] = v[i];
	if (gone)
		c->n = from + out;
	free(gone);
	free(ix);
}

int catalog_load_buf(catalog *c, const char *data, size_t len, const char *name, const char *cloud, char *err,
		     size_t errlen)
{
	size_t first = c->n;
	enum { C_TYPE, C_ACC, C_COUNT, C_PRICE, C_REGION, C_SPOT, C_VCPU, C_MEM, C_ZONE, C_CLOUD, NC };
	static const char *const cols[NC] = {"InstanceType", "AcceleratorName", "AcceleratorCount", "Price",
					     "Region", "SpotPrice", "vCPUs", "MemoryGiB", "AvailabilityZone", "Cloud"};
	char why[256];
	snapshot_date(c, data, len);
	struct csv r;
	csv_init(&r, data, len, CSV_COMMENTS);
	int rc = csv_next(&r, why, sizeof why);
	if (rc <= 0) {
		errbuf_set(err, errlen, "%s: %s", name, rc < 0 ? why : "empty catalog (no header)");
		csv_release(&r);
		return GC_EINVAL;
	}
	int idx[NC];
	/* the columns up to Region are required */
	int miss = csv_columns(&r, cols, NC, (1ul << (C_REGION + 1)) - 1, idx);
	if (miss >= 0) {
		errbuf_set(err, errlen, "%s: the header has no '%s' column (needed: InstanceType, "
					"AcceleratorName, AcceleratorCount, Price, Region)", name, cols[miss]);
		csv_release(&r);
		return GC_EINVAL;
	}
#define F(i) (idx[i] >= 0 && (size_t)idx[i] < r.nf ? r.f[idx[i]] : "")
	while ((rc = csv_next(&r, why, sizeof why)) == 1) {
		double cnt;
		if (!*F(C_ACC) || number(F(C_COUNT), &cnt) < 0 || cnt < 1 || cnt != floor(cnt) || cnt > 1024) {
			c->skipped++;
			continue;
		}
		double price, spot = -1, vcpu = -1, mem = -1;
		if (number(F(C_PRICE), &price) < 0 || number(F(C_SPOT), &spot) < 0) {
			errbuf_set(err, errlen, "%s: line %zu: price '%s' / spot price '%s' is not a number", name, r.line,
				   F(C_PRICE), F(C_SPOT));
			csv_release(&r);
			return GC_EINVAL;
		}
		if (number(F(C_VCPU), &vcpu) < 0 || number(F(C_MEM), &mem) < 0) {
			errbuf_set(err, errlen, "%s: line %zu: vCPUs '%s' / MemoryGiB '%s' is not a number", name, r.line,
				   F(C_VCPU), F(C_MEM));
			csv_release(&r);
			return GC_EINVAL;
		}
		if (c->n == c->cap) {
			size_t ncap = c->cap ? c->cap * 2 : 256;
			cat_row *nr = realloc(c->rows, ncap * sizeof *nr);
			if (!nr) {
				errbuf_set(err, errlen, "%s: out of memory", name);
				csv_release(&r);
				return GC_ENOMEM;
			}
			c->rows = nr;
			c->cap = ncap;
		}
		cat_row *x = &c->rows[c->n++];
		copy(x->cloud, sizeof x->cloud, idx[C_CLOUD] >= 0 && *F(C_CLOUD) ? F(C_CLOUD) : cloud ? cloud : "");
		copy(x->instance, sizeof x->instance, F(C_TYPE));
		copy(x->acc, sizeof x->acc, F(C_ACC));
		x->count = (unsigned)cnt;
		x->vcpus = vcpu < 0 ? 0 : vcpu;
		x->mem_gib = mem < 0 ? 0 : mem;
		x->price = price;
		x->spot = spot;
		copy(x->region, sizeof x->region, F(C_REGION));
		copy(x->zone, sizeof x->zone, F(C_ZONE));
	}
#undef F
	csv_release(&r);
	if (rc < 0) {
		errbuf_set(err, errlen, "%s: %s", name, why);
		return GC_EINVAL;
	}
	merge_zones(c, first);
	return 0;
}

int catalog_load(catalog *c, const char *path, const char *cloud, char *err, size_t errlen)
{
	char *data;
	size_t len;
	int rc = slurp(path, CATALOG_MAX_FILE, &data, &len, err, errlen);
	if (rc)
		return rc;
	rc = catalog_load_buf(c, data, len, path, cloud, err, errlen);
	free(data);
	return rc;
}
