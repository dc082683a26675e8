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

/* two rows' place: cloud, instance, region, accelerators; 0 when the same */
static int place_cmp(const cat_row *x, const cat_row *y)
{
	int k = strcmp(x->cloud, y->cloud);
	if (!k)
		k = strcmp(x->instance, y->instance);
	if (!k)
		k = strcmp(x->region, y->region);
	if (!k)
		k = strcmp(x->acc, y->acc);
	if (!k)
		k = x->count < y->count ? -1 : x->count > y->count;
	return k;
}

/* indices of rows sorted by place, ties in file order */
static int by_place(const void *a, const void *b, void *rows)
{
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	int k = place_cmp((const cat_row *)rows + i, (const cat_row *)rows + j);
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
			if (place_cmp(x, m))
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

/* a new row at the end of c, NULL when out of memory */
static cat_row *add_row(catalog *c)
{
	if (c->n == c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 256;
		cat_row *nr = realloc(c->rows, ncap * sizeof *nr);
		if (!nr)
			return NULL;
		c->rows = nr;
		c->cap = ncap;
	}
	return memset(&c->rows[c->n++], 0, sizeof(cat_row));
}

/*
 * The rows of data into c, zones apart; rows without whole accelerators are
 * skipped, or, with hosts, those with an InstanceType go there (a CPU
 * machine, count 0). GPU rows without an InstanceType are kept as they are.
 */
static int parse(catalog *c, catalog *hosts, const char *data, size_t len, const char *name, const char *cloud,
		 char *err, size_t errlen)
{
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
		catalog *into = c;
		if (!*F(C_ACC) || number(F(C_COUNT), &cnt) < 0 || cnt < 1 || cnt != floor(cnt) || cnt > 1024) {
			if (!hosts || !*F(C_TYPE) || *F(C_ACC)) {
				c->skipped++;
				continue;
			}
			into = hosts; /* a machine a GPU may attach to */
			cnt = 0;
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
		cat_row *x = add_row(into);
		if (!x) {
			errbuf_set(err, errlen, "%s: out of memory", name);
			csv_release(&r);
			return GC_ENOMEM;
		}
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
	return 0;
}

int catalog_load_buf(catalog *c, const char *data, size_t len, const char *name, const char *cloud, char *err,
		     size_t errlen)
{
	size_t first = c->n;
	int rc = parse(c, NULL, data, len, name, cloud, err, errlen);
	if (rc == 0)
		merge_zones(c, first);
	return rc;
}

/*
 * the rule for acc x count: its own; none when the accelerator has rules but
 * not for that count (it cannot be launched so); else DEFAULT's for the count
 */
static const cat_host_rule *rule_for(const cat_host_rule *rules, size_t n, const char *acc, unsigned count)
{
	const cat_host_rule *dflt = NULL;
	bool named = false;
	for (size_t i = 0; i < n; i++) {
		if (strcasecmp(rules[i].acc, acc) == 0) {
			if (rules[i].count == count)
				return &rules[i];
			named = true;
		} else if (!dflt && strcmp(rules[i].acc, "DEFAULT") == 0 && rules[i].count == count) {
			dflt = &rules[i];
		}
	}
	return named ? NULL : dflt;
}

static bool host_allowed(const cat_host_rule *r, const cat_row *h)
{
	if (strcmp(r->hosts, "n1") == 0) {
		bool fam = strncmp(h->instance, "n1-standard-", 12) == 0 || strncmp(h->instance, "n1-highmem-", 11) == 0 ||
			   strncmp(h->instance, "n1-highcpu-", 11) == 0;
		return fam && h->vcpus >= r->min_vcpus && h->mem_gib >= 4.0 * r->min_vcpus;
	}
	size_t l = strlen(h->instance);
	for (const char *p = r->hosts; *p;) {
		size_t k = strcspn(p, ";");
		if (k == l && strncmp(p, h->instance, k) == 0)
			return true;
		p += k + (p[k] == ';');
	}
	return false;
}

int catalog_load_gcp_buf(catalog *c, const char *data, size_t len, const char *name, const cat_host_rule *rules,
			 size_t nrules, char *err, size_t errlen)
{
	size_t first = c->n;
	catalog hosts = {0};
	int rc = parse(c, &hosts, data, len, name, "gcp", err, errlen);
	if (rc) {
		catalog_free(&hosts);
		return rc;
	}
	size_t out = first;
	for (size_t i = first; i < c->n; i++) {
		cat_row g = c->rows[i];
		if (g.instance[0]) {
			c->rows[out++] = g; /* already a machine with its GPUs */
			continue;
		}
		const cat_host_rule *r = rule_for(rules, nrules, g.acc, g.count);
		const cat_row *best = NULL;
		for (size_t k = 0; r && k < hosts.n; k++) {
			const cat_row *h = &hosts.rows[k];
			if (h->price < 0 || strcmp(h->region, g.region) || strcmp(h->zone, g.zone) || !host_allowed(r, h))
				continue;
			if (!best || h->price < best->price)
				best = h;
		}
		if (!best || g.price < 0) {
			c->skipped++;
			continue;
		}
		snprintf(g.instance, sizeof g.instance, "%s", best->instance);
		g.vcpus = best->vcpus;
		g.mem_gib = best->mem_gib;
		g.price += best->price;
		g.spot = g.spot >= 0 && best->spot >= 0 ? g.spot + best->spot : -1;
		c->rows[out++] = g;
	}
	c->n = out;
	catalog_free(&hosts);
	merge_zones(c, first);
	return 0;
}

int catalog_load_gcp(catalog *c, const char *path, const cat_host_rule *rules, size_t nrules, char *err,
		     size_t errlen)
{
	char *data;
	size_t len;
	int rc = slurp(path, CATALOG_MAX_FILE, &data, &len, err, errlen);
	if (rc)
		return rc;
	rc = catalog_load_gcp_buf(c, data, len, path, rules, nrules, err, errlen);
	free(data);
	return rc;
}

int catalog_load_host_rules(const char *path, cat_host_rule **out, size_t *n, char *err, size_t errlen)
{
	*out = NULL;
	*n = 0;
	char *data;
	size_t len;
	int rc = slurp(path, 1u << 20, &data, &len, err, errlen);
	if (rc)
		return rc;
	enum { R_ACC, R_COUNT, R_HOSTS, R_VCPU, NR };
	static const char *const cols[NR] = {"accelerator", "count", "hosts", "min_vcpus"};
	char why[256];
	struct csv r;
	csv_init(&r, data, len, CSV_COMMENTS);
	int idx[NR];
	cat_host_rule *v = NULL;
	size_t cnt = 0;
	rc = csv_next(&r, why, sizeof why);
	int miss = rc == 1 ? csv_columns(&r, cols, NR, (1ul << NR) - 1, idx) : 0;
	if (rc != 1 || miss >= 0) {
		errbuf_set(err, errlen, "%s: %s", path, rc < 0 ? why : rc == 0 ? "empty (no header)" : "a column is missing "
			   "(needed: accelerator, count, hosts, min_vcpus)");
		rc = GC_EINVAL;
		goto out;
	}
	while ((rc = csv_next(&r, why, sizeof why)) == 1) {
		double c1, v1;
		for (int i = 0; i < NR; i++)
			if ((size_t)idx[i] >= r.nf) {
				errbuf_set(err, errlen, "%s: line %zu: a row needs accelerator, count, hosts, min_vcpus", path,
					   r.line);
				rc = GC_EINVAL;
				goto out;
			}
		const char *acc = r.f[idx[R_ACC]], *hosts = r.f[idx[R_HOSTS]];
		bool n1 = strcmp(hosts, "n1") == 0;
		if (!*acc || strlen(acc) >= sizeof v->acc || !*hosts ||
		    strlen(hosts) >= sizeof v->hosts || csv_num(r.f[idx[R_COUNT]], &c1) != 0 || c1 < 1 || c1 > 1024 ||
		    c1 != floor(c1) || (n1 ? csv_num(r.f[idx[R_VCPU]], &v1) != 0 || v1 < 1 || v1 > 4096 : false)) {
			errbuf_set(err, errlen, "%s: line %zu: expected an accelerator, a whole count, hosts, and with n1 "
						"a whole min_vcpus", path, r.line);
			rc = GC_EINVAL;
			goto out;
		}
		cat_host_rule *nv = realloc(v, (cnt + 1) * sizeof *v);
		if (!nv) {
			errbuf_set(err, errlen, "%s: out of memory", path);
			rc = GC_ENOMEM;
			goto out;
		}
		v = nv;
		memset(&v[cnt], 0, sizeof v[cnt]);
		copy(v[cnt].acc, sizeof v[cnt].acc, acc);
		copy(v[cnt].hosts, sizeof v[cnt].hosts, hosts);
		v[cnt].count = (unsigned)c1;
		v[cnt].min_vcpus = n1 ? (unsigned)v1 : 0;
		cnt++;
	}
	if (rc < 0) {
		errbuf_set(err, errlen, "%s: %s", path, why);
		rc = GC_EINVAL;
	}
out:
	csv_release(&r);
	free(data);
	if (rc) {
		free(v);
		return rc;
	}
	*out = v;
	*n = cnt;
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
