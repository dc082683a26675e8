/*
 * explain.c — known failures in a log (see explain.h). The signatures come
 * from the JSON files of data/signatures/; three need code: the PyTorch OOM
 * analysis (which of fragmentation, another process, plain size or a wrong
 * size is the cause, with the numbers), TensorFlow's OOM (the tensor's size
 * from its shape and type, against the allocator's limit) and the Xid table.
 *
 * A signature may be a note instead of a finding: a line it matches leaves
 * its values for a finding a few lines later to take (a multi-line kernel
 * message names the GPU two lines before it says what happened; TensorFlow
 * prints its allocator's limit just before the error).
 */
#include "diagnose/explain.h"
#include "util/errbuf.h"
#include "util/units.h"
#include "device/gpu.h"

#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <hs/hs.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * Vectorscan (or Hyperscan: the same ABI, libhs.so.5), loaded with dlopen
 * the first time signatures are loaded: every other command of gpuctl
 * starts without it and the C++ runtime it needs (0.35 ms a start).
 * Without it, every line is tried against every signature.
 */
#define HS_SONAME "libhs.so.5"
static struct {
	hs_error_t (*valid_platform)(void);
	hs_error_t (*compile_lit_multi)(const char *const *, const unsigned *, const unsigned *, const size_t *,
					unsigned, unsigned, const hs_platform_info_t *, hs_database_t **,
					hs_compile_error_t **);
	hs_error_t (*free_compile_error)(hs_compile_error_t *);
	hs_error_t (*free_database)(hs_database_t *);
	hs_error_t (*alloc_scratch)(const hs_database_t *, hs_scratch_t **);
	hs_error_t (*clone_scratch)(const hs_scratch_t *, hs_scratch_t **);
	hs_error_t (*free_scratch)(hs_scratch_t *);
	hs_error_t (*scan)(const hs_database_t *, const char *, unsigned, unsigned, hs_scratch_t *,
			   match_event_handler, void *);
} hs;
static bool hs_loaded;
static pthread_once_t hs_once = PTHREAD_ONCE_INIT;

static void hs_load(void)
{
	void *h = dlopen(HS_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return;
	static const struct { const char *name; size_t off; } syms[] = {
#define SYM(f) {"hs_" #f, offsetof(__typeof__(hs), f)}
		SYM(valid_platform), SYM(compile_lit_multi), SYM(free_compile_error), SYM(free_database),
		SYM(alloc_scratch), SYM(clone_scratch), SYM(free_scratch), SYM(scan),
#undef SYM
	};
	__typeof__(hs) api;
	for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
		void *f = dlsym(h, syms[i].name);
		if (!f) { /* hs_compile_lit_multi came in 5.2 */
			dlclose(h);
			return;
		}
		memcpy((char *)&api + syms[i].off, &f, sizeof f);
	}
	hs = api;
	hs_loaded = api.valid_platform() == HS_SUCCESS;
}

#define BLOCK (1u << 20)      /* read size */
#define MAX_LINE (64u << 10)  /* the matcher's window: a longer piece is matched in windows */
#define WIN_BACK (MAX_LINE / 2) /* a window starts at most this far before its trigger */
#define WIN_OVERLAP 512       /* longer than any trigger: a cut window's successor starts before its end */
#define MAX_SIGS 256
#define SIG_WORDS (MAX_SIGS / 64) /* a candidate's signatures: one bit each */
#define ID_ESC MAX_SIGS       /* the scanner's id for ESC: a line with escapes is scanned again, cleaned */
#define MAX_CONTEXT 4
#define MAX_MEMO 16
#define SIZE_BUG_RATIO 100.0  /* a request this many times the memory there is: a wrong size */

/* cudaver: CUDA's integer version (11040) as "11.4"; bytes: a byte count kept in MiB */
enum vtype { VT_INT, VT_NUM, VT_STR, VT_LIST, VT_CUDAVER, VT_BYTES, VT_SIZE };

struct sig_value {
	char name[32];
	enum vtype type;
	int groups[4];
	int ngroups;
};

struct sig_context {
	char name[32];
	unsigned lines;           /* how far back a note may be */
};

struct sig {
	char id[48];
	char title[160];
	char trigger[128];
	char also[128];
	char unless[128];         /* a line holding this is not a match */
	size_t tlen;              /* the trigger's length */
	char analyzer[16];
	char cause[600];
	char fix[600];
	bool note;                /* leaves values for later findings, is no finding itself */
	bool has_re;
	regex_t re;
	bool has_match;           /* "match": a POSIX ERE the cleaned line must match too */
	regex_t match;
	size_t nvals;
	struct sig_value vals[EXPLAIN_MAX_VALUES];
	size_t nctx;
	struct sig_context ctx[MAX_CONTEXT];
};

struct xid_entry {
	int code;
	char meaning[200];
	char reset[320];
};

struct explain_db {
	struct sig *sigs;
	size_t n;
	struct xid_entry *xid;
	size_t nxid;
	/*
	 * Every trigger (its signature's index) and ESC (ID_ESC) as literals in
	 * one Vectorscan database: one pass over the input finds the lines that
	 * hold a trigger, and which. NULL where this CPU cannot run it (then
	 * every line is tried against every signature).
	 */
	hs_database_t *hs;
};

/* ---- loading ------------------------------------------------------------ */

static void copy(char *dst, size_t len, json_t *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));
	snprintf(dst, len, "%s", v ? v : "");
}

/* a signature's compiled regexes, freed */
static void sig_regfree(struct sig *s)
{
	if (s->has_re)
		regfree(&s->re);
	if (s->has_match)
		regfree(&s->match);
	s->has_re = s->has_match = false;
}

static int load_sig(struct explain_db *db, json_t *o, const char *file, char *err, size_t errlen)
{
	if (db->n == MAX_SIGS) {
		errbuf_set(err, errlen, "%s: more than %d signatures", file, MAX_SIGS);
		return GC_EINVAL;
	}
	static const char *const known[] = {"id", "title", "trigger", "also", "unless", "analyzer", "cause", "fix",
					    "note", "context", "regex", "match", "values", "source"};
	const char *key;
	json_t *any;
	json_object_foreach(o, key, any) {
		size_t k = 0;
		while (k < sizeof known / sizeof known[0] && strcmp(key, known[k]))
			k++;
		if (k == sizeof known / sizeof known[0]) {
			const char *id = json_string_value(json_object_get(o, "id"));
			errbuf_set(err, errlen, "%s: %s: unknown key '%s' (a signature has id, title, trigger, also, "
				   "unless, analyzer, cause, fix, note, context, regex, match, values, source)", file,
				   id ? id : "?", key);
			return GC_EINVAL;
		}
	}
	struct sig *s = &db->sigs[db->n];
	memset(s, 0, sizeof *s);
	copy(s->id, sizeof s->id, o, "id");
	copy(s->title, sizeof s->title, o, "title");
	copy(s->trigger, sizeof s->trigger, o, "trigger");
	copy(s->also, sizeof s->also, o, "also");
	copy(s->unless, sizeof s->unless, o, "unless");
	copy(s->analyzer, sizeof s->analyzer, o, "analyzer");
	copy(s->cause, sizeof s->cause, o, "cause");
	copy(s->fix, sizeof s->fix, o, "fix");
	s->note = json_is_true(json_object_get(o, "note"));
	if (!s->id[0] || !s->trigger[0] || (!s->title[0] && !s->note)) {
		errbuf_set(err, errlen, "%s: a signature needs id, title and trigger", file);
		return GC_EINVAL;
	}
	if (s->analyzer[0] && strcmp(s->analyzer, "oom") && strcmp(s->analyzer, "xid") &&
	    strcmp(s->analyzer, "tf-oom")) {
		errbuf_set(err, errlen, "%s: %s: unknown analyzer '%s'", file, s->id, s->analyzer);
		return GC_EINVAL;
	}
	s->tlen = strlen(s->trigger);
	const char *cname;
	json_t *cv;
	json_object_foreach(json_object_get(o, "context"), cname, cv) {
		if (s->nctx == MAX_CONTEXT || !json_is_integer(cv) || json_integer_value(cv) < 0) {
			errbuf_set(err, errlen, "%s: %s: context needs at most %d names, each with a line count",
				   file, s->id, MAX_CONTEXT);
			return GC_EINVAL;
		}
		snprintf(s->ctx[s->nctx].name, sizeof s->ctx[0].name, "%s", cname);
		s->ctx[s->nctx++].lines = (unsigned)json_integer_value(cv);
	}
	const char *mre = json_string_value(json_object_get(o, "match"));
	if (mre) {
		int rc = regcomp(&s->match, mre, REG_EXTENDED | REG_NOSUB);
		if (rc) {
			char why[200];
			regerror(rc, &s->match, why, sizeof why);
			errbuf_set(err, errlen, "%s: %s: bad match: %s", file, s->id, why);
			return GC_EINVAL;
		}
		s->has_match = true;
	}
	const char *re = json_string_value(json_object_get(o, "regex"));
	if (re) {
		int rc = regcomp(&s->re, re, REG_EXTENDED);
		if (rc) {
			char why[200];
			regerror(rc, &s->re, why, sizeof why);
			errbuf_set(err, errlen, "%s: %s: bad regex: %s", file, s->id, why);
			sig_regfree(s);
			return GC_EINVAL;
		}
		s->has_re = true;
	}
	json_t *vals = json_object_get(o, "values");
	const char *name;
	json_t *spec;
	json_object_foreach(vals, name, spec) {
		if (s->nvals == EXPLAIN_MAX_VALUES)
			break;
		struct sig_value *v = &s->vals[s->nvals];
		snprintf(v->name, sizeof v->name, "%s", name);
		json_t *g = json_array_get(spec, 0);
		const char *t = json_string_value(json_array_get(spec, 1));
		v->type = !t ? VT_STR : !strcmp(t, "int") ? VT_INT : !strcmp(t, "num") ? VT_NUM
			: !strcmp(t, "list") ? VT_LIST : !strcmp(t, "cudaver") ? VT_CUDAVER
			: !strcmp(t, "bytes") ? VT_BYTES : !strcmp(t, "size") ? VT_SIZE : VT_STR;
		if (json_is_array(g)) {
			for (size_t k = 0; k < json_array_size(g) && k < 4; k++)
				v->groups[v->ngroups++] = (int)json_integer_value(json_array_get(g, k));
		} else {
			v->groups[v->ngroups++] = (int)json_integer_value(g);
		}
		for (int k = 0; k < v->ngroups; k++)
			if (!s->has_re || v->groups[k] < 1 || (size_t)v->groups[k] > s->re.re_nsub) {
				errbuf_set(err, errlen, "%s: %s: value '%s' names a group the regex lacks", file,
					   s->id, name);
				sig_regfree(s);
				return GC_EINVAL;
			}
		s->nvals++;
	}
	if (s->note && !s->nvals) {
		errbuf_set(err, errlen, "%s: %s: a note needs a regex with values", file, s->id);
		sig_regfree(s);
		return GC_EINVAL;
	}
	db->n++;
	return GC_OK;
}

static const struct xid_entry *xid_entry(const struct explain_db *db, int code)
{
	for (size_t i = 0; db && i < db->nxid; i++)
		if (db->xid[i].code == code)
			return &db->xid[i];
	return NULL;
}

static int load_file(struct explain_db *db, const char *path, char *err, size_t errlen)
{
	json_error_t je;
	json_t *root = json_load_file(path, 0, &je);
	if (!root) {
		errbuf_set(err, errlen, "%s: line %d: %s", path, je.line, je.text);
		return GC_EINVAL;
	}
	int rc = GC_OK;
	json_t *sigs = json_object_get(root, "signatures");
	for (size_t i = 0; rc == GC_OK && i < json_array_size(sigs); i++)
		rc = load_sig(db, json_array_get(sigs, i), path, err, errlen);
	json_t *xid = json_object_get(root, "xid");
	const char *code;
	json_t *e;
	json_object_foreach(xid, code, e) {
		if (rc != GC_OK)
			break;
		struct xid_entry *p = realloc(db->xid, (db->nxid + 1) * sizeof *p);
		if (!p) {
			rc = GC_ENOMEM;
			break;
		}
		db->xid = p;
		/* {"meaning", "reset", ...}: what it means and whether the GPU needs a reset */
		const char *meaning = json_string_value(json_object_get(e, "meaning"));
		const char *reset = json_string_value(json_object_get(e, "reset"));
		char *end;
		long c = strtol(code, &end, 10);
		if (!meaning || !reset || !*code || *end || c < 0 || c > INT_MAX) {
			errbuf_set(err, errlen, "%s: Xid '%.16s': a row is {\"meaning\": TEXT, \"reset\": TEXT, ...} under "
				   "its code", path, code);
			rc = GC_EINVAL;
			break;
		}
		struct xid_entry *x = &db->xid[db->nxid++];
		x->code = (int)c;
		snprintf(x->meaning, sizeof x->meaning, "%s", meaning);
		snprintf(x->reset, sizeof x->reset, "%s", reset);
	}
	json_decref(root);
	return rc;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int json_file(const struct dirent *e)
{
	size_t n = strlen(e->d_name);
	return e->d_name[0] != '.' && n > 5 && strcmp(e->d_name + n - 5, ".json") == 0;
}

/* the scanner's database of every trigger and ESC; GC_OK (db->hs NULL where the CPU cannot run it), or GC_E* */
static int hs_build(struct explain_db *db, char *err, size_t errlen)
{
	pthread_once(&hs_once, hs_load);
	if (!hs_loaded)
		return GC_OK; /* the slow path: every line tried */
	const char *lit[MAX_SIGS + 1];
	size_t len[MAX_SIGS + 1];
	unsigned flags[MAX_SIGS + 1], ids[MAX_SIGS + 1];
	for (size_t i = 0; i < db->n; i++) {
		lit[i] = db->sigs[i].trigger;
		len[i] = db->sigs[i].tlen;
		flags[i] = 0;
		ids[i] = (unsigned)i;
	}
	lit[db->n] = "\x1b";
	len[db->n] = 1;
	flags[db->n] = 0;
	ids[db->n] = ID_ESC;
	hs_compile_error_t *ce = NULL;
	if (hs.compile_lit_multi(lit, flags, ids, len, (unsigned)db->n + 1, HS_MODE_BLOCK, NULL, &db->hs, &ce) !=
	    HS_SUCCESS) {
		errbuf_set(err, errlen, "cannot compile the signatures' triggers: %s", ce && ce->message ? ce->message : "?");
		if (ce)
			hs.free_compile_error(ce);
		db->hs = NULL;
		return GC_EINVAL;
	}
	return GC_OK;
}

int explain_db_load(struct explain_db **out, const char *dir, char *err, size_t errlen)
{
	*out = NULL;
	struct explain_db *db = calloc(1, sizeof *db);
	if (!db || !(db->sigs = calloc(MAX_SIGS, sizeof *db->sigs))) {
		free(db);
		return GC_ENOMEM;
	}
	struct dirent **list;
	int n = scandir(dir, &list, json_file, by_name);
	if (n < 0) {
		errbuf_set(err, errlen, "cannot read the signatures in '%s': %s", dir, strerror(errno));
		explain_db_free(db);
		return GC_EIO;
	}
	int rc = GC_OK;
	for (int i = 0; i < n; i++) {
		char path[4200];
		snprintf(path, sizeof path, "%s/%s", dir, list[i]->d_name);
		if (rc == GC_OK)
			rc = load_file(db, path, err, errlen);
		free(list[i]);
	}
	free(list);
	if (rc == GC_OK && db->n == 0) {
		errbuf_set(err, errlen, "no signatures in '%s'", dir);
		rc = GC_ENOTFOUND;
	}
	if (rc != GC_OK) {
		explain_db_free(db);
		return rc;
	}
	if ((rc = hs_build(db, err, errlen)) != GC_OK) {
		explain_db_free(db);
		return rc;
	}
	*out = db;
	return GC_OK;
}

void explain_db_free(struct explain_db *db)
{
	if (!db)
		return;
	for (size_t i = 0; i < db->n; i++)
		sig_regfree(&db->sigs[i]);
	free(db->sigs);
	free(db->xid);
	if (db->hs)
		hs.free_database(db->hs);
	free(db);
}

bool explain_db_fast(const struct explain_db *db)
{
	return db && db->hs;
}

size_t explain_db_count(const struct explain_db *db)
{
	return db->n;
}

const char *explain_xid_meaning(const struct explain_db *db, int code)
{
	const struct xid_entry *x = xid_entry(db, code);
	return x && x->meaning[0] ? x->meaning : NULL;
}

/* ---- lines -------------------------------------------------------------- */

size_t explain_clean_line(const char *s, size_t len, char *out)
{
	size_t o = 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == 0x1b && i + 1 < len) {
			if (s[i + 1] == '[') { /* CSI: ESC [ params final(0x40-0x7e) */
				i += 2;
				while (i < len && !((unsigned char)s[i] >= 0x40 && (unsigned char)s[i] <= 0x7e))
					i++;
				continue;
			}
			if (s[i + 1] == ']') { /* OSC: ESC ] ... BEL or ESC \ */
				i += 2;
				while (i < len && s[i] != 0x07 && !(s[i] == 0x1b && i + 1 < len && s[i + 1] == '\\'))
					i++;
				if (i < len && s[i] == 0x1b)
					i++;
				continue;
			}
			if (strchr("()*+", s[i + 1]) && i + 2 < len) {
				i += 2; /* a character set designation: ESC ( B */
				continue;
			}
			i++; /* a two-byte escape */
			continue;
		}
		if (c == '\r' || c == 0)
			continue;
		out[o++] = (char)c;
	}
	out[o] = '\0';
	return o;
}

/* ---- findings ----------------------------------------------------------- */

/* The finding of signature s (and key) for line `line`, made on first sight;
 * text is the cleaned line and at where its trigger starts in it (a long line
 * is shown from a little before the trigger). A line counts once however
 * many of its pieces or windows match. */
static struct explain_finding *finding(struct explain_result *r, const struct sig *s, const char *key, uint64_t line,
				  const char *text, size_t at, bool *fresh)
{
	for (size_t i = 0; i < r->n; i++)
		if (strcmp(r->findings[i].id, s->id) == 0 && strcmp(r->findings[i].key, key) == 0) {
			struct explain_finding *f = &r->findings[i];
			if (f->last_line != line) {
				f->count++;
				f->last_line = line;
			}
			*fresh = false;
			return f;
		}
	struct explain_finding *p = realloc(r->findings, (r->n + 1) * sizeof *p);
	if (!p)
		return NULL;
	r->findings = p;
	struct explain_finding *f = &r->findings[r->n++];
	memset(f, 0, sizeof *f);
	snprintf(f->id, sizeof f->id, "%s", s->id);
	snprintf(f->title, sizeof f->title, "%s", s->title);
	snprintf(f->key, sizeof f->key, "%s", key);
	size_t tl = strlen(text);
	if (tl < sizeof f->line || at < 80) {
		snprintf(f->line, sizeof f->line, "%.*s", (int)sizeof f->line - 1, text);
	} else {
		size_t from = at - 80;
		while (from < at && ((unsigned char)text[from] & 0xc0) == 0x80)
			from++; /* not inside a UTF-8 character */
		snprintf(f->line, sizeof f->line, "...%.*s", (int)sizeof f->line - 4, text + from);
	}
	snprintf(f->cause, sizeof f->cause, "%s", s->cause);
	snprintf(f->fix, sizeof f->fix, "%s", s->fix);
	f->count = 1;
	f->rank = -1;
	f->first_line = line;
	f->last_line = line;
	*fresh = true;
	return f;
}

static void put_num(struct explain_finding *f, const char *name, double v)
{
	if (f->nvalues == EXPLAIN_MAX_VALUES)
		return;
	struct explain_value *x = &f->values[f->nvalues++];
	snprintf(x->name, sizeof x->name, "%s", name);
	x->is_num = true;
	x->num = v;
}

static void put_str(struct explain_finding *f, const char *name, const char *v)
{
	if (f->nvalues == EXPLAIN_MAX_VALUES)
		return;
	struct explain_value *x = &f->values[f->nvalues++];
	snprintf(x->name, sizeof x->name, "%s", name);
	x->is_num = false;
	snprintf(x->str, sizeof x->str, "%.*s", (int)sizeof x->str - 1, v);
}

static const struct explain_value *value_of(const struct explain_finding *f, const char *name)
{
	for (size_t i = 0; i < f->nvalues; i++)
		if (strcmp(f->values[i].name, name) == 0)
			return &f->values[i];
	return NULL;
}

/* a numeric value of f, or -1 */
static double num_of(const struct explain_finding *f, const char *name)
{
	const struct explain_value *v = value_of(f, name);
	return v && v->is_num ? v->num : -1;
}

/* "2.00 GiB" at p → MiB; -1 when not a size */
static double size_mib(const char *p, const char **end)
{
	char *e;
	double v = strtod(p, &e);
	if (e == p || !isfinite(v) || v < 0)
		return -1;
	while (*e == ' ')
		e++;
	/* GB, MB and KB as the frameworks that print them mean them (Paddle's 1.000000GB is 2^30 bytes) */
	double mul = !strncmp(e, "GiB", 3) || !strncmp(e, "GB", 2) ? 1024 : !strncmp(e, "MiB", 3) || !strncmp(e, "MB", 2) ? 1
		: !strncmp(e, "KiB", 3) || !strncmp(e, "KB", 2) ? 1.0 / 1024 : !strncmp(e, "TiB", 3) ? 1048576
		: !strncmp(e, "bytes", 5) ? 1.0 / 1048576 : -1;
	if (mul < 0)
		return -1;
	if (end)
		*end = e + (e[1] == 'i' ? 3 : e[0] == 'b' ? 5 : 2);
	return v * mul;
}

/* the size right after `key` in s, or -1 */
static double size_after(const char *s, const char *key)
{
	const char *p = strstr(s, key);
	return p ? size_mib(p + strlen(key), NULL) : -1;
}

/* the size right before `key` (" is free", "already allocated") in s, or -1 */
static double size_before(const char *s, const char *key)
{
	const char *p = strstr(s, key);
	if (!p)
		return -1;
	/* back over the unit and the number: "1.19 GiB is free" */
	const char *q = p;
	while (q > s && q[-1] == ' ')
		q--;
	while (q > s && q[-1] != ' ')
		q--; /* the unit */
	while (q > s && q[-1] == ' ')
		q--;
	while (q > s && ((q[-1] >= '0' && q[-1] <= '9') || q[-1] == '.'))
		q--;
	return size_mib(q, NULL);
}

static void analyze_oom(struct explain_finding *f, const char *s)
{
	double req = size_after(s, "Tried to allocate ");
	int gpu = -1;
	const char *g = strstr(s, "GPU ");
	if (g)
		gpu = atoi(g + 4);
	double total, freem, alloc = -1, unalloc = -1, reserved = -1, others = 0;
	/* PyTorch >= 2.1 ("capacty": 2.1 itself printed it so) */
	const char *cap_key = strstr(s, "total capacity of ") ? "total capacity of "
			      : strstr(s, "total capacty of ") ? "total capacty of " : NULL;
	if (cap_key) {
		total = size_after(s, cap_key);
		const char *of = strstr(s, " of which ");
		freem = of ? size_mib(of + 10, NULL) : -1;
		alloc = size_after(s, "Of the allocated memory ");
		unalloc = size_before(s, "is reserved by PyTorch but unallocated");
		/* processes on this GPU: "Process N has X memory in use." (several when shared) */
		double mem[64];
		int np = 0;
		bool self_named = strstr(s, "this process has") != NULL;
		for (const char *p = s; (p = strstr(p, "Process ")) && np < 64; p += 8) {
			const char *h = strstr(p, " has ");
			if (!h || h - p > 24)
				continue;
			double v = size_mib(h + 5, NULL);
			if (v >= 0)
				mem[np++] = v;
		}
		if (self_named || np <= 1) {
			for (int i = 0; self_named && i < np; i++)
				others += mem[i];
		} else {
			/* this process is the one whose use is closest to what PyTorch holds */
			double mine = (alloc > 0 ? alloc : 0) + (unalloc > 0 ? unalloc : 0);
			int best = 0;
			for (int i = 1; i < np; i++)
				if (fabs(mem[i] - mine) < fabs(mem[best] - mine))
					best = i;
			for (int i = 0; i < np; i++)
				if (i != best)
					others += mem[i];
		}
	} else { /* PyTorch <= 2.0 */
		total = size_before(s, "total capacity");
		alloc = size_before(s, "already allocated");
		freem = size_before(s, "free;");
		if (freem < 0)
			freem = size_before(s, "free)");
		reserved = size_before(s, "reserved in total by PyTorch");
		if (reserved >= 0 && alloc >= 0)
			unalloc = reserved - alloc;
	}
	if (req >= 0)
		put_num(f, "requested_mib", req);
	if (gpu >= 0)
		put_num(f, "gpu", gpu);
	if (total >= 0)
		put_num(f, "total_mib", total);
	if (freem >= 0)
		put_num(f, "free_mib", freem);
	if (alloc >= 0)
		put_num(f, "allocated_mib", alloc);
	if (reserved >= 0)
		put_num(f, "reserved_mib", reserved);
	if (unalloc >= 0)
		put_num(f, "reserved_unallocated_mib", unalloc);
	/*
	 * Without a "Process N has" line (PyTorch before 2.1, or a message cut short), what the
	 * GPU holds beyond its free memory and PyTorch's own reserve is the other processes' (and
	 * this process's CUDA context with its libraries, up to about a GiB): taken as theirs when
	 * it is over 2 GiB and a tenth of the GPU.
	 */
	double mine = reserved >= 0 ? reserved : alloc >= 0 ? alloc + (unalloc > 0 ? unalloc : 0) : -1;
	bool named = cap_key && (strstr(s, "this process has") || strstr(s, "Process "));
	bool inferred = false;
	if (!named && total > 0 && freem >= 0 && mine >= 0 && total - freem - mine > fmax(2048, total / 10)) {
		inferred = true;
		others = total - freem - mine;
		put_str(f, "other_processes", "inferred");
	}
	put_num(f, "other_processes_mib", others);
	/* numbers no GPU can show: a message of another GPU, cut or mangled; said, and no verdict built on them */
	char impossible[160] = "";
	if (total > 0 && alloc > total * 1.01)
		snprintf(impossible, sizeof impossible, "%.0f MiB allocated on a GPU of %.0f MiB", alloc, total);
	else if (total > 0 && mine > total * 1.01)
		snprintf(impossible, sizeof impossible, "%.0f MiB reserved on a GPU of %.0f MiB", mine, total);
	else if (total > 0 && freem > total * 1.01)
		snprintf(impossible, sizeof impossible, "%.0f MiB free on a GPU of %.0f MiB", freem, total);
	if (impossible[0])
		put_str(f, "numbers", "impossible");
	/* torch.cuda.set_per_process_memory_fraction: "... in use. 18.00 GiB allowed; Of the allocated memory" */
	double allowed = size_before(s, "allowed;");
	if (allowed >= 0)
		put_num(f, "allowed_mib", allowed);
	/*
	 * The GPU had room: its free memory (measured when PyTorch wrote the message, after it had
	 * emptied its cache and tried again) holds the allocator's block for the request (2 MiB
	 * below 1 MiB, 20 MiB below 10 MiB, else the request rounded up to 2 MiB) with headroom.
	 */
	double block = req < 1 ? 2 : req < 10 ? 20 : ceil(req / 2) * 2;
	bool had_room = req >= 0 && freem >= 0 && freem >= block + fmax(64, total > 0 ? total / 100 : 0);
	const char *verdict;
	if (req >= 0 && total > 0 && req >= SIZE_BUG_RATIO * total) {
		verdict = "size-bug";
		snprintf(f->cause, sizeof f->cause,
			 "the request is %.0f times all the memory GPU %d has (%.0f MiB of %.0f MiB): no batch "
			 "size makes that fit; a tensor's size is wrong (a wrong shape, or a size that "
			 "overflowed)",
			 req / total, gpu, req, total);
		snprintf(f->fix, sizeof f->fix,
			 "print the shapes going into the operation in the traceback's last frames and find the "
			 "dimension that is far too large (a flatten before pooling, a product of dimensions, a "
			 "negative size read as unsigned); the batch size is not the problem");
	} else if (allowed >= 0 && mine >= 0 && req >= 0 && mine + req > allowed) {
		verdict = "too-big";
		snprintf(f->cause, sizeof f->cause,
			 "this process may use only %.0f MiB of GPU %d (torch.cuda.set_per_process_memory_fraction) and "
			 "holds %.0f MiB: %.0f MiB more does not fit, though the GPU has %.0f MiB free",
			 allowed, gpu, mine, req, freem > 0 ? freem : 0);
		snprintf(f->fix, sizeof f->fix,
			 "raise the fraction given to torch.cuda.set_per_process_memory_fraction (or remove the call), or "
			 "need less: a smaller batch, gradient checkpointing, bf16");
	} else if (had_room) {
		verdict = "transient";
		snprintf(f->cause, sizeof f->cause,
			 "GPU %d had %.0f MiB free when PyTorch reported the failure, more than the %.0f MiB it asked "
			 "for: the memory was taken at the moment of the allocation and given back before the report, "
			 "by another process on the GPU (a second job, another rank or a data loader put on the same "
			 "GPU) or by a limit on this process (an MPS or MIG slice)",
			 gpu, freem, req);
		snprintf(f->fix, sizeof f->fix,
			 "give the job a GPU of its own (gpuctl run leases one; gpuctl ls shows who else is on it), "
			 "check that each rank uses its own device (torch.cuda.set_device(LOCAL_RANK)); "
			 "--retry-on oom-transient runs it again on other GPUs");
	} else if (req >= 0 && others >= req && !(inferred && unalloc >= req)) {
		verdict = "other-process";
		snprintf(f->cause, sizeof f->cause,
			 "other processes use %.0f MiB of GPU %d%s, more than the %.0f MiB that was requested",
			 others, gpu, inferred ? " (what it holds beyond its free memory and PyTorch's own reserve)" : "",
			 req);
		snprintf(f->fix, sizeof f->fix,
			 "run on a GPU nobody else uses (gpuctl run picks a free one and leases it; gpuctl ls "
			 "shows who is on this one), or stop the other process");
	} else if (req >= 0 && unalloc >= req) {
		verdict = "fragmentation";
		snprintf(f->cause, sizeof f->cause,
			 "fragmentation: PyTorch holds %.0f MiB reserved but unallocated, more than the %.0f "
			 "MiB requested, but not in one piece",
			 unalloc, req);
		snprintf(f->fix, sizeof f->fix,
			 "set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (older PyTorch: "
			 "max_split_size_mb:128), so the reserved memory can be reused for larger blocks");
	} else {
		verdict = "too-big";
		/* only the figures the message gave: an unknown one is left out, never printed as -1 */
		char req_s[48] = "an allocation failed", free_s[48] = "", total_s[48] = "", unalloc_s[96] = "";
		if (req >= 0)
			snprintf(req_s, sizeof req_s, "%.0f MiB requested", req);
		if (freem >= 0)
			snprintf(free_s, sizeof free_s, " with %.0f MiB free", freem);
		if (total > 0)
			snprintf(total_s, sizeof total_s, " of %.0f MiB", total);
		if (unalloc >= 0)
			snprintf(unalloc_s, sizeof unalloc_s, " (%.0f MiB reserved but unallocated is not enough to help)",
				 unalloc);
		snprintf(f->cause, sizeof f->cause, "the job needs more memory than the GPU has: %s%s%s%s", req_s,
			 free_s, total_s, unalloc_s);
		snprintf(f->fix, sizeof f->fix,
			 "reduce the batch size (gradient accumulation keeps the effective batch), enable "
			 "gradient checkpointing, train in bf16, or shard the model across GPUs (FSDP/ZeRO)");
	}
	if (impossible[0]) {
		char c[sizeof f->cause];
		snprintf(c, sizeof c, "the message's numbers cannot all be true (%s): they may be another GPU's, or "
			 "the message was cut or mangled; read with care: %.300s", impossible, f->cause);
		snprintf(f->cause, sizeof f->cause, "%s", c);
	}
	put_str(f, "verdict", verdict);
}

static void analyze_xid(const struct explain_db *db, struct explain_result *r, const struct sig *s, const char *line,
			uint64_t lineno)
{
	/* a GPU's Xid, not an NVSwitch's SXid: "Xid" must start a word */
	const char *p = line;
	while ((p = strstr(p, "Xid (PCI:")) && p > line && isalnum((unsigned char)p[-1]))
		p++;
	if (!p)
		return;
	const char *q = strchr(p, ')');
	if (!q || q - p > 40 || q[1] != ':')
		return;
	char pci[32];
	size_t pl = (size_t)(q - (p + 9));
	if (pl >= sizeof pci)
		return;
	memcpy(pci, p + 9, pl);
	pci[pl] = '\0';
	char *e;
	long code = strtol(q + 2, &e, 10);
	if (e == q + 2 || code < 0 || code > 100000)
		return;
	char key[48];
	snprintf(key, sizeof key, "%ld@%s", code, pci); /* one finding per code and GPU */
	bool fresh;
	struct explain_finding *f = finding(r, s, key, lineno, line, (size_t)(p - line), &fresh);
	if (!f || !fresh)
		return;
	put_num(f, "code", (double)code);
	put_str(f, "pci", pci);
	const struct xid_entry *x = code >= 0 && code <= INT_MAX ? xid_entry(db, (int)code) : NULL;
	snprintf(f->title, sizeof f->title, "the NVIDIA driver reported Xid %ld on GPU %s", code, pci);
	if (x) {
		/* the word (yes, no, depends, unknown); the text after it is in the fix */
		char word[16];
		snprintf(word, sizeof word, "%.*s", (int)strcspn(x->reset, ":,; "), x->reset);
		put_str(f, "reset", word);
		snprintf(f->cause, sizeof f->cause, "%s", x->meaning);
		snprintf(f->fix, sizeof f->fix, "reset needed: %s", x->reset);
	} else {
		snprintf(f->cause, sizeof f->cause, "Xid %ld is not in NVIDIA's Xid catalog as gpuctl has it (newer than "
			 "this gpuctl, or not an Xid)", code);
		snprintf(f->fix, sizeof f->fix, "look it up in NVIDIA's Xid catalog (docs.nvidia.com/deploy/xid-errors)");
	}
}

/* TensorFlow's element sizes, by the type names its OOM message uses */
static double tf_type_size(const char *t, size_t n)
{
	static const struct { const char *name; double size; } types[] = {
		{"float", 4}, {"float32", 4}, {"half", 2}, {"float16", 2}, {"bfloat16", 2}, {"double", 8},
		{"float64", 8}, {"int8", 1}, {"uint8", 1}, {"bool", 1}, {"qint8", 1}, {"quint8", 1},
		{"int16", 2}, {"uint16", 2}, {"int32", 4}, {"uint32", 4}, {"qint32", 4}, {"int64", 8},
		{"uint64", 8}, {"complex64", 8}, {"complex128", 16},
	};
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
		if (strlen(types[i].name) == n && strncmp(types[i].name, t, n) == 0)
			return types[i].size;
	return -1;
}

#define WORD_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_"

/* the run of `set` characters right after `key` in s, into out (len bytes); left as it was when
 * there is none or it does not fit */
static void word_after(const char *s, const char *key, const char *set, char *out, size_t len)
{
	const char *k = strstr(s, key);
	if (!k)
		return;
	k += strlen(key);
	size_t n = strspn(k, set);
	if (n && n < len) {
		memcpy(out, k, n);
		out[n] = '\0';
	}
}

/* "OOM when allocating tensor with shape[16,112,112,147] and type float on
 * /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc" at s;
 * the allocator's limit and use, when TensorFlow printed them just before,
 * are already among f's values (limit_mib, in_use_mib) */
static void analyze_tf_oom(struct explain_finding *f, const char *s)
{
	char shape[96] = "", type[24] = "", device[32] = "", alloc[32] = "";
	double elems = -1;
	const char *p = strstr(s, "shape[");
	if (p) {
		p += 6;
		const char *q = strchr(p, ']');
		if (q && (size_t)(q - p) < sizeof shape) {
			memcpy(shape, p, (size_t)(q - p));
			shape[q - p] = '\0';
			elems = 1;
			for (const char *d = shape; *d;) {
				char *e;
				double v = strtod(d, &e);
				if (e == d || v < 0) {
					elems = -1;
					break;
				}
				elems *= v;
				d = *e == ',' ? e + 1 : e;
				if (*e && *e != ',') {
					elems = -1;
					break;
				}
			}
			p = q + 1;
		}
	}
	double req = -1;
	const char *t = p ? strstr(p, " type ") : NULL;
	if (t && t - p < 8) {
		t += 6;
		size_t n = strspn(t, "abcdefghijklmnopqrstuvwxyz0123456789_");
		if (n && n < sizeof type) {
			memcpy(type, t, n);
			type[n] = '\0';
			double size = tf_type_size(t, n);
			if (size > 0 && elems >= 0)
				req = elems * size / 1048576;
		}
	}
	word_after(s, "device:", WORD_CHARS ":", device, sizeof device);
	word_after(s, "by allocator ", WORD_CHARS, alloc, sizeof alloc);
	if (shape[0])
		put_str(f, "shape", shape);
	if (type[0])
		put_str(f, "dtype", type);
	if (device[0])
		put_str(f, "device", device);
	if (alloc[0])
		put_str(f, "allocator", alloc);
	if (req >= 0)
		put_num(f, "requested_mib", req);
	double limit = num_of(f, "limit_mib"), inuse = num_of(f, "in_use_mib");
	const char *verdict;
	char held[160] = "";
	if (limit > 0 && inuse >= 0)
		snprintf(held, sizeof held, " with %.0f MiB in use of the allocator's %.0f MiB", inuse, limit);
	else if (limit > 0)
		snprintf(held, sizeof held, " (the allocator's limit is %.0f MiB)", limit);
	if (strncmp(device, "CPU", 3) == 0) {
		verdict = "host-memory";
		snprintf(f->cause, sizeof f->cause,
			 "the tensor [%s] was to go to host memory (device %s): the machine's RAM ran out, not a "
			 "GPU's",
			 shape, device);
		snprintf(f->fix, sizeof f->fix,
			 "hold less in host memory (smaller batches, a streamed tf.data pipeline instead of "
			 "arrays in memory), and check that TensorFlow uses the GPU at all "
			 "(tf.config.list_physical_devices('GPU'))");
	} else if (req >= 0 && limit > 0 && req >= SIZE_BUG_RATIO * limit) {
		verdict = "size-bug";
		snprintf(f->cause, sizeof f->cause,
			 "the tensor [%s] of %s needs %.0f MiB, %.0f times all the memory TensorFlow has on %s "
			 "(%.0f MiB): no batch size makes that fit; a shape is wrong",
			 shape, type, req, req / limit, device[0] ? device : "the GPU", limit);
		snprintf(f->fix, sizeof f->fix,
			 "print the shapes around the failing op (the [[node ...]] line names it) and find the "
			 "dimension that is far too large (a flatten before pooling, a product of dimensions); "
			 "the batch size is not the problem");
	} else {
		verdict = "too-big";
		char need[64] = "";
		if (req >= 0)
			snprintf(need, sizeof need, " (%.0f MiB)", req);
		snprintf(f->cause, sizeof f->cause, "the tensor [%s]%s did not fit on %s%s", shape, need,
			 device[0] ? device : "the GPU", held);
		snprintf(f->fix, sizeof f->fix,
			 "reduce the batch size (or the input size), use mixed precision "
			 "(tf.keras.mixed_precision.set_global_policy('mixed_float16')), and run where no other "
			 "process holds the GPU (gpuctl ls shows who is on it; gpuctl run picks a free one)");
	}
	put_str(f, "verdict", verdict);
}

/* The values of s's regex in line, into out[max]; how many */
static size_t regex_values(const struct sig *s, const char *line, struct explain_value *out, size_t max)
{
	regmatch_t m[16];
	size_t n = 0;
	if (!s->has_re || regexec(&s->re, line, 16, m, 0) != 0)
		return 0;
	for (size_t i = 0; i < s->nvals && n < max; i++) {
		const struct sig_value *v = &s->vals[i];
		char buf[96] = "";
		size_t off = 0;
		for (int k = 0; k < v->ngroups; k++) {
			regmatch_t g = m[v->groups[k]];
			if (g.rm_so < 0)
				continue;
			size_t gl = (size_t)(g.rm_eo - g.rm_so);
			if (off + gl + 2 > sizeof buf)
				break;
			if (off)
				buf[off++] = ',';
			memcpy(buf + off, line + g.rm_so, gl);
			off += gl;
			buf[off] = '\0';
		}
		if (!buf[0])
			continue;
		struct explain_value *x = &out[n++];
		memset(x, 0, sizeof *x);
		snprintf(x->name, sizeof x->name, "%s", v->name);
		double num = strtod(buf, NULL);
		switch (v->type) {
		case VT_INT:
		case VT_NUM:
			x->is_num = true;
			x->num = num;
			break;
		case VT_BYTES:
			x->is_num = true;
			x->num = num / 1048576;
			break;
		case VT_SIZE: {
			/* "1.21GiB", "33762398024 bytes", "8,589,934,592 bytes", Paddle's "1.000000GB" */
			char plain[96];
			size_t k = 0;
			for (const char *p = buf; *p && k + 1 < sizeof plain; p++)
				if (*p != ',')
					plain[k++] = *p;
			plain[k] = '\0';
			double mib = size_mib(plain, NULL);
			if (mib < 0) {
				n--;
				break;
			}
			x->is_num = true;
			x->num = mib;
			break;
		}
		case VT_CUDAVER: {
			long cv = (long)num;
			if (num < 1000 || num > 1e6) {
				n--;
				break;
			}
			snprintf(x->str, sizeof x->str, "%ld.%ld", cv / 1000, cv % 1000 / 10);
			break;
		}
		default:
			snprintf(x->str, sizeof x->str, "%s", buf);
		}
	}
	return n;
}

/* ---- scanning ----------------------------------------------------------- */

struct memo {
	struct explain_value v;
	uint64_t line;
};

struct cand {
	size_t start, end;   /* a window of the region */
	uint64_t sigs[SIG_WORDS]; /* the signatures whose trigger is in it: bit i for signature i */
	bool esc;            /* it holds ESC: its signatures are known once it is cleaned */
};

struct scan {
	const struct explain_db *db;
	struct explain_result *r;
	uint64_t line;        /* lines before pos */
	size_t pos;           /* where in the region the lines are counted up to */
	struct cand cand;     /* the candidate being gathered: hits come in order, a piece's together */
	bool pending;
	struct memo memo[MAX_MEMO];  /* values notes left, newest per name */
	size_t nmemo;
	uint64_t root_cause_line;     /* the line of torchrun's "Root Cause (first observed failure)"; 0 none */
	char *clean;          /* the line being matched, cleaned (MAX_LINE + 1; made at first use) */
	hs_scratch_t *hs;     /* the scanner's scratch; NULL: every line is tried */
	hs_scratch_t *hs_line; /* another, for a cleaned line while a region is scanned */
	/* while a region is scanned */
	const char *data;
	size_t len;
};

static void memo_put(struct scan *sc, const struct explain_value *v, uint64_t line)
{
	size_t i = 0;
	while (i < sc->nmemo && strcmp(sc->memo[i].v.name, v->name) != 0)
		i++;
	if (i == MAX_MEMO) { /* full: the oldest goes */
		i = 0;
		for (size_t k = 1; k < MAX_MEMO; k++)
			if (sc->memo[k].line < sc->memo[i].line)
				i = k;
	} else if (i == sc->nmemo) {
		sc->nmemo++;
	}
	sc->memo[i].v = *v;
	sc->memo[i].line = line;
}

/* the values s takes from notes of at most its context's lines before */
static void take_context(const struct scan *sc, const struct sig *s, struct explain_finding *f, uint64_t line)
{
	for (size_t c = 0; c < s->nctx; c++)
		for (size_t i = 0; i < sc->nmemo; i++) {
			const struct memo *m = &sc->memo[i];
			if (strcmp(m->v.name, s->ctx[c].name) || m->line > line || line - m->line > s->ctx[c].lines ||
			    value_of(f, m->v.name) || f->nvalues == EXPLAIN_MAX_VALUES)
				continue;
			f->values[f->nvalues++] = m->v;
		}
}

/* whether f has any of the values of s's regex */
static bool has_values_of(const struct explain_finding *f, const struct sig *s)
{
	for (size_t i = 0; i < s->nvals; i++)
		if (value_of(f, s->vals[i].name))
			return true;
	return false;
}

static bool matches(const struct sig *s, const char *text, const char **at)
{
	*at = strstr(text, s->trigger);
	return *at && (!s->also[0] || strstr(text, s->also)) && (!s->unless[0] || !strstr(text, s->unless)) &&
	       (!s->has_match || regexec(&s->match, text, 0, NULL, 0) == 0);
}

/* "{name}" in a finding's cause or fix becomes the value of that name
 * ("unknown" when the line did not carry it) */
static void fill_in(const struct explain_finding *f, char *text, size_t size)
{
	if (!strchr(text, '{'))
		return;
	char out[sizeof f->cause];
	size_t o = 0;
	for (const char *p = text; *p && o + 1 < sizeof out;) {
		const char *e = *p == '{' ? strchr(p, '}') : NULL;
		char name[32];
		if (!e || (size_t)(e - p - 1) >= sizeof name) {
			out[o++] = *p++;
			continue;
		}
		memcpy(name, p + 1, (size_t)(e - p - 1));
		name[e - p - 1] = '\0';
		const struct explain_value *v = value_of(f, name);
		char val[sizeof v->str];
		if (!v)
			snprintf(val, sizeof val, "unknown");
		else if (v->is_num)
			snprintf(val, sizeof val, "%.15g", v->num);
		else
			snprintf(val, sizeof val, "%s", v->str);
		int n = snprintf(out + o, sizeof out - o, "%s", val);
		o += n > 0 ? (size_t)n : 0;
		if (o >= sizeof out)
			o = sizeof out - 1;
		p = e + 1;
	}
	out[o] = '\0';
	snprintf(text, size, "%s", out);
}

/* a trigger found in a cleaned line: its signature's bit */
static int set_sig(unsigned id, unsigned long long from, unsigned long long to, unsigned flags, void *ctx)
{
	(void)from, (void)to, (void)flags;
	uint64_t *sigs = ctx;
	if (id < MAX_SIGS)
		sigs[id / 64] |= UINT64_C(1) << (id % 64);
	return 0;
}

/* what follows from another rank's failure, by its signature: a collective's timeout */
static bool consequence_id(const char *id)
{
	return strcmp(id, "nccl-watchdog-timeout") == 0 || strcmp(id, "nccl-timeout") == 0;
}

static void add_rank(struct explain_finding *f, int rank)
{
	if (rank >= 256)
		f->ranks_over = true;
	else if (rank >= 0)
		f->ranks[rank / 64] |= UINT64_C(1) << (rank % 64);
}

/*
 * torchrun's summary of a failed run names the rank that failed first:
 * "Root Cause (first observed failure):", then, a few lines on, "rank : 3
 * (local_rank: 3)". The first such block's rank is kept.
 */
static void torchrun_root(struct scan *sc, const struct sig *s, const struct explain_value *v, size_t nv,
			  uint64_t lineno)
{
	if (strcmp(s->id, "torchrun-root-cause") == 0) {
		sc->root_cause_line = lineno;
		return;
	}
	if (strcmp(s->id, "torchrun-failed-rank") != 0 || !sc->root_cause_line || lineno - sc->root_cause_line > 8 ||
	    sc->r->torchrun_rank >= 0)
		return;
	for (size_t k = 0; k < nv; k++)
		if (v[k].is_num && strcmp(v[k].name, "failed_rank") == 0 && v[k].num >= 0 && v[k].num < INT_MAX)
			sc->r->torchrun_rank = (int)v[k].num;
}

/* the signatures list[n] tried on one piece of a line (clean, NUL-terminated), as match_line says */
static void match_piece(struct scan *sc, const uint16_t *list, size_t n, const char *clean, uint64_t lineno,
			const struct explain_origin *o)
{
	const struct explain_db *db = sc->db;
	struct explain_result *r = sc->r;
	const char *at;
	/* notes first, so a finding on the same line can take what they leave */
	for (size_t i = 0; i < n; i++) {
		const struct sig *s = &db->sigs[list[i]];
		if (!s->note || !matches(s, clean, &at))
			continue;
		struct explain_value v[EXPLAIN_MAX_VALUES];
		size_t nv = regex_values(s, clean, v, EXPLAIN_MAX_VALUES);
		for (size_t k = 0; k < nv; k++)
			memo_put(sc, &v[k], lineno);
		torchrun_root(sc, s, v, nv, lineno);
	}
	for (size_t i = 0; i < n; i++) {
		const struct sig *s = &db->sigs[list[i]];
		if (s->note || !matches(s, clean, &at))
			continue;
		/* a line is one finding: the first signature, in file order, that matches it (the
		 * specific ones come before the families' general rows) */
		if (strcmp(s->analyzer, "xid") == 0) {
			analyze_xid(db, r, s, clean, lineno);
			break;
		}
		bool fresh;
		/* an out of memory is one finding per GPU it names ("GPU 3"): seven ranks' OOMs are seven */
		char key[32] = "";
		const char *g = strcmp(s->analyzer, "oom") == 0 ? strstr(at, "GPU ") : NULL;
		if (g && isdigit((unsigned char)g[4]))
			snprintf(key, sizeof key, "gpu%.8s", g + 4);
		key[3 + strspn(key + 3, "0123456789")] = '\0'; /* "gpu" and its number's digits ("" stays "") */
		struct explain_finding *f = finding(r, s, key, lineno, clean, (size_t)(at - clean), &fresh);
		if (!f)
			break;
		/* the ranks it came from, and the first of them: by the lines' times where they compare */
		add_rank(f, o->rank);
		if (fresh || (o->time_kind != EXPLAIN_TIME_NONE && o->time_kind == f->time_kind && o->time < f->time)) {
			f->rank = o->rank;
			f->time_kind = o->time_kind;
			f->time = o->time;
		}
		if (!fresh) {
			/* another wording of the failure, later on, may carry the numbers the
			 * first line lacked (the kernel's line after nvidia-smi's) */
			if (s->has_re && !s->analyzer[0] && !has_values_of(f, s))
				f->nvalues += regex_values(s, clean, f->values + f->nvalues, EXPLAIN_MAX_VALUES - f->nvalues);
			break;
		}
		if (s->has_re)
			f->nvalues += regex_values(s, clean, f->values + f->nvalues, EXPLAIN_MAX_VALUES - f->nvalues);
		take_context(sc, s, f, lineno);
		if (strcmp(s->analyzer, "oom") == 0)
			analyze_oom(f, at);
		else if (strcmp(s->analyzer, "tf-oom") == 0)
			analyze_tf_oom(f, at);
		fill_in(f, f->cause, sizeof f->cause);
		fill_in(f, f->fix, sizeof f->fix);
		break;
	}
}

static void match_line(struct scan *sc, const struct cand *c, const char *raw, uint64_t lineno)
{
	const struct explain_db *db = sc->db;
	size_t len = c->end - c->start;
	if (len > MAX_LINE)
		len = MAX_LINE;
	/* on the heap, not a static TLS buffer: 64 KiB of .tbss is zeroed, page by
	 * page, at the start of every process and thread that links this file */
	if (!sc->clean && !(sc->clean = malloc(MAX_LINE + 1)))
		return; /* out of memory: this line goes unmatched */
	char *clean = sc->clean;
	size_t clen = explain_clean_line(raw, len, clean);
	/* the signatures to try, in file order: those whose trigger the scanner
	 * found; in a line with escapes, those it finds once they are gone;
	 * without the scanner, all */
	uint64_t sigs[SIG_WORDS];
	memcpy(sigs, c->sigs, sizeof sigs);
	if (!sc->hs)
		memset(sigs, 0xff, sizeof sigs);
	else if (c->esc && hs.scan(db->hs, clean, (unsigned)clen, 0, sc->hs_line, set_sig, sigs) != HS_SUCCESS)
		memset(sigs, 0xff, sizeof sigs);
	uint16_t list[MAX_SIGS];
	size_t n = 0;
	for (size_t w = 0; w < SIG_WORDS; w++)
		for (uint64_t b = sigs[w]; b; b &= b - 1) {
			size_t i = w * 64 + (size_t)__builtin_ctzll(b);
			if (i < db->n)
				list[n++] = (uint16_t)i;
		}
	/* where the line came from (its rank and time), read off its start */
	struct explain_origin o;
	explain_origin(clean, &o);
	/*
	 * A JSON log's record can hold a whole traceback in one line, its newlines
	 * escaped ("\n"): each piece between them is matched as a line of its own
	 * (the line's number and origin are the record's), so a second failure in
	 * the record is not lost behind the first.
	 */
	for (char *piece = clean;;) {
		char *nl = strstr(piece, "\\n");
		if (nl)
			*nl = '\0';
		match_piece(sc, list, n, piece, lineno, &o);
		if (!nl)
			break;
		*nl = '\\';
		piece = nl + 2;
	}
}

static size_t count_nl(const char *p, size_t n)
{
	size_t c = 0;
	const char *end = p + n;
	while (p < end && (p = memchr(p, '\n', (size_t)(end - p)))) {
		c++;
		p++;
	}
	return c;
}

/* the pending candidate matched, its line counted from the lines before it */
static void flush(struct scan *sc)
{
	if (!sc->pending)
		return;
	sc->pending = false;
	sc->line += count_nl(sc->data + sc->pos, sc->cand.start - sc->pos);
	sc->pos = sc->cand.start;
	match_line(sc, &sc->cand, sc->data + sc->cand.start, sc->line + 1);
}

/*
 * A candidate [start, end) with signature id (or ESC): the same piece as the
 * pending one joins it, another (hits come in order, so pieces do too) has
 * the pending one matched first.
 */
static void add_cand(struct scan *sc, size_t start, size_t end, unsigned id)
{
	struct cand *c = &sc->cand;
	/*
	 * Hits come in the order of their ends: in a line longer than WIN_BACK,
	 * a long trigger that holds a shorter one (which ends first) starts its
	 * window a little earlier. It joins the pending window, which holds it;
	 * and nothing starts before the lines counted so far.
	 */
	if (sc->pending && start < c->start)
		start = c->start;
	if (start < sc->pos)
		start = sc->pos;
	if (!sc->pending || c->start != start) {
		flush(sc);
		memset(c, 0, sizeof *c);
		c->start = start;
		c->end = end;
		sc->pending = true;
	}
	if (end > c->end)
		c->end = end;
	if (id == ID_ESC)
		c->esc = true;
	else
		c->sigs[id / 64] |= UINT64_C(1) << (id % 64);
}

/*
 * A trigger (or ESC) at data[hit, hit + n): the piece of line around it,
 * from the '\n' or '\r' before it to the one after, becomes a candidate; in
 * a line longer than MAX_LINE, a window of MAX_LINE that holds it.
 */
static void take_hit(struct scan *sc, size_t hit, size_t n, unsigned id)
{
	/* an escape inside the pending window only marks it (to be cleaned and scanned again): a long
	 * coloured line would otherwise look for its start again at every escape in it */
	if (id == ID_ESC && sc->pending && hit >= sc->cand.start && hit + n <= sc->cand.end) {
		sc->cand.esc = true;
		return;
	}
	const char *data = sc->data;
	size_t len = sc->len;
	size_t floor = hit > WIN_BACK ? hit - WIN_BACK : 0, s = floor;
	const char *q = memrchr(data + floor, '\n', hit - floor);
	if (q)
		s = (size_t)(q - data) + 1;
	if ((q = memrchr(data + s, '\r', hit - s)))
		s = (size_t)(q - data) + 1;
	size_t limit = len - s > MAX_LINE ? s + MAX_LINE : len;
	size_t from = hit + n < limit ? hit + n : limit, e = limit;
	if ((q = memchr(data + from, '\n', limit - from)))
		e = (size_t)(q - data);
	if ((q = memchr(data + from, '\r', e - from)))
		e = (size_t)(q - data);
	add_cand(sc, s, e, id);
}

static int on_hit(unsigned id, unsigned long long from, unsigned long long to, unsigned flags, void *ctx)
{
	(void)from, (void)flags;
	struct scan *sc = ctx;
	size_t n = id == ID_ESC ? 1 : sc->db->sigs[id].tlen;
	take_hit(sc, (size_t)to - n, n, id);
	return 0;
}

/* without the scanner: every line is a candidate for every signature (a long one in windows) */
static void every_line(struct scan *sc, size_t at)
{
	while (at < sc->len) {
		const char *q = memchr(sc->data + at, '\n', sc->len - at);
		size_t e = q ? (size_t)(q - sc->data) : sc->len;
		for (size_t w = at;; w += MAX_LINE - WIN_OVERLAP) {
			add_cand(sc, w, e - w > MAX_LINE ? w + MAX_LINE : e, ID_ESC);
			if (e - w <= MAX_LINE)
				break;
		}
		at = e + 1;
	}
}

/* Process data[0..len): complete lines, or (the fd scan, for a line longer
 * than its buffer) the start of one. One pass of the scanner finds every
 * trigger; each hit brings the piece of line around it, matched as soon as
 * the next hit is in another piece. A line longer than MAX_LINE is matched
 * in windows around its hits. */
static void region(struct scan *sc, const char *data, size_t len)
{
	if (!sc->r->binary && memchr(data, '\0', len))
		sc->r->binary = true;
	sc->data = data;
	sc->len = len;
	sc->pos = 0;
	sc->pending = false;
	if (!sc->hs) {
		every_line(sc, 0);
	} else if (len && hs.scan(sc->db->hs, data, (unsigned)len, 0, sc->hs, on_hit, sc) != HS_SUCCESS) {
		/* the scanner failed: the rest the slow way, from the line of the last candidate on */
		size_t at = sc->pending ? sc->cand.start : 0;
		while (at > 0 && data[at - 1] != '\n')
			at--;
		flush(sc);
		every_line(sc, at);
	}
	flush(sc);
	sc->line += count_nl(data + sc->pos, len - sc->pos);
}

/* the scanner's scratches for a scan of db (none without the scanner); false when memory runs out */
static bool scan_start(struct scan *sc, const struct explain_db *db, struct explain_result *r)
{
	memset(sc, 0, sizeof *sc);
	sc->db = db;
	sc->r = r;
	r->torchrun_rank = -1;
	return !db || !db->hs ||
	       (hs.alloc_scratch(db->hs, &sc->hs) == HS_SUCCESS && hs.clone_scratch(sc->hs, &sc->hs_line) == HS_SUCCESS);
}

static void scan_end(struct scan *sc)
{
	free(sc->clean);
	if (sc->hs)
		hs.free_scratch(sc->hs);
	if (sc->hs_line)
		hs.free_scratch(sc->hs_line);
}

/* a finding that another rank's failure brings about: a collective's timeout, a peer that went away */
static bool consequence(const struct explain_finding *f)
{
	if (consequence_id(f->id))
		return true;
	return strstr(f->id, "nccl") && (strstr(f->line, "remote") || strstr(f->line, "Remote"));
}

/* an Xid whose table entry needs a reset, or may (NVLink's, by the status it carries): the GPU's own fault */
static bool hardware_xid(const struct explain_db *db, const struct explain_finding *f)
{
	if (strcmp(f->id, "xid") != 0)
		return false;
	const struct explain_value *v = value_of(f, "code");
	const struct xid_entry *x = v && v->is_num && v->num >= 0 && v->num <= INT_MAX ? xid_entry(db, (int)v->num) : NULL;
	return x && (strncmp(x->reset, "yes", 3) == 0 || strncmp(x->reset, "depends", 7) == 0);
}

static void pick_root(const struct explain_db *db, struct explain_result *r)
{
	r->root = 0;
	for (size_t i = 0; i < r->n; i++)
		if (hardware_xid(db, &r->findings[i])) {
			r->root = i;
			return;
		}
	size_t first = r->n;
	for (size_t i = 0; i < r->n && first == r->n; i++)
		if (!consequence(&r->findings[i]))
			first = i;
	if (first == r->n)
		return;
	r->root = first;
	/* torchrun's word for which rank failed first */
	for (size_t i = first; r->torchrun_rank >= 0 && i < r->n; i++)
		if (!consequence(&r->findings[i]) && r->findings[i].rank == r->torchrun_rank) {
			r->root = i;
			return;
		}
	/* else the earliest by the lines' own times, where they compare with the first's */
	const struct explain_finding *f0 = &r->findings[first];
	for (size_t i = first + 1; f0->time_kind != EXPLAIN_TIME_NONE && i < r->n; i++) {
		const struct explain_finding *f = &r->findings[i];
		if (!consequence(f) && f->time_kind == f0->time_kind && f->time < r->findings[r->root].time)
			r->root = i;
	}
}

static int scan_buf(const struct explain_db *db, const char *buf, size_t len, struct explain_result *r, bool fast)
{
	memset(r, 0, sizeof *r);
	struct scan sc;
	if (!scan_start(&sc, fast ? db : NULL, r)) {
		scan_end(&sc);
		return GC_ENOMEM;
	}
	sc.db = db;
	region(&sc, buf, len);
	r->lines = sc.line + (len && buf[len - 1] != '\n');
	r->bytes = len;
	pick_root(db, r);
	scan_end(&sc);
	return GC_OK;
}

int explain_scan_buf(const struct explain_db *db, const char *buf, size_t len, struct explain_result *r)
{
	return scan_buf(db, buf, len, r, true);
}

int explain_scan_buf_slow(const struct explain_db *db, const char *buf, size_t len, struct explain_result *r)
{
	return scan_buf(db, buf, len, r, false);
}

int explain_scan_fd(const struct explain_db *db, int fd, struct explain_result *r, char *err, size_t errlen)
{
	memset(r, 0, sizeof *r);
	char *buf = malloc(BLOCK + MAX_LINE);
	struct scan sc;
	if (!scan_start(&sc, db, r) || !buf) {
		scan_end(&sc);
		free(buf);
		return GC_ENOMEM;
	}
	size_t have = 0, kept = 0; /* kept: bytes at the front already scanned, kept for context */
	int rc = GC_OK;
	for (;;) {
		ssize_t n = read(fd, buf + have, BLOCK + MAX_LINE - have);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			errbuf_set(err, errlen, "read error: %s", strerror(errno));
			rc = GC_EIO;
			break;
		}
		r->bytes += (uint64_t)n;
		have += (size_t)n;
		if (n == 0) {
			if (have > kept)
				region(&sc, buf, have);
			if (have && buf[have - 1] != '\n')
				sc.line++;
			break;
		}
		if (have < BLOCK && n > 0)
			continue; /* fill the block first */
		/* complete lines go now; a partial last line waits for the next read */
		char *last = memrchr(buf, '\n', have);
		size_t done;
		kept = 0;
		if (last) {
			done = (size_t)(last - buf) + 1;
		} else if ((last = memrchr(buf, '\r', have)) && last >= buf + have / 2) {
			done = (size_t)(last - buf) + 1; /* a piece of a longer line: tqdm's */
		} else {
			/* no end in 1 MiB: scan it, and scan its tail again with what follows,
			 * so a match across the cut is found whole (no '\n' in it to count twice) */
			done = have;
			kept = WIN_BACK;
		}
		region(&sc, buf, done);
		memmove(buf, buf + done - kept, have - done + kept);
		have = have - done + kept;
	}
	r->lines = sc.line;
	pick_root(db, r);
	scan_end(&sc);
	free(buf);
	return rc;
}

void explain_result_free(struct explain_result *r)
{
	free(r->findings);
	memset(r, 0, sizeof *r);
}

const char *explain_class(const struct explain_finding *f, char *buf, size_t len)
{
	const char *verdict = NULL;
	for (size_t i = 0; i < f->nvalues; i++)
		if (!f->values[i].is_num && strcmp(f->values[i].name, "verdict") == 0)
			verdict = f->values[i].str;
	if (verdict && strstr(f->id, "oom"))
		snprintf(buf, len, "oom-%s", verdict);
	else if (strcmp(f->id, "nccl-watchdog-timeout") == 0)
		snprintf(buf, len, "nccl-timeout");
	else if (strcmp(f->id, "gpu-fallen-off-bus") == 0)
		snprintf(buf, len, "gpu-lost");
	else
		snprintf(buf, len, "%s", f->id);
	return buf;
}

void explain_value_text(const struct explain_value *v, char *buf, size_t len)
{
	double x = units_round(v->num, 100);
	if (!v->is_num)
		snprintf(buf, len, "%s=%s", v->name, v->str);
	else if (explain_whole(x))
		snprintf(buf, len, "%s=%lld", v->name, (long long)x);
	else
		snprintf(buf, len, "%s=%.2f", v->name, v->num);
}
