/*
 * jsonw.c — streaming JSON writer (see jsonw.h). The layout matches
 * jansson's JSON_INDENT(2) output: "key": value, one member per line, empty
 * containers as {} and [].
 */
#include "util/jsonw.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void jsonw_init(struct jw *w, bool pretty)
{
	memset(w, 0, sizeof *w);
	w->pretty = pretty;
	w->empty[0] = true;
}

#define JSONW_STREAM_BUF (64 * 1024)

void jsonw_init_file(struct jw *w, bool pretty, FILE *out)
{
	jsonw_init(w, pretty);
	w->out = out;
}

/* streaming: write what the buffer holds and empty it */
static void flush(struct jw *w)
{
	if (w->len && fwrite(w->buf, 1, w->len, w->out) != w->len)
		w->oom = true;
	w->len = 0;
}

/* the slow half of put(): flush or grow the buffer, then append */
static void put_grow(struct jw *w, const char *s, size_t n)
{
	if (w->oom)
		return;
	if (w->out && w->len) {
		flush(w);
		if (w->cap - w->len > n) {
			memcpy(w->buf, s, n);
			w->len = n;
			return;
		}
	}
	size_t cap = w->cap ? w->cap : w->out ? JSONW_STREAM_BUF : 4096;
	while (cap < w->len + n + 1)
		cap *= 2;
	char *p = realloc(w->buf, cap);
	if (!p) {
		w->oom = true;
		return;
	}
	w->buf = p;
	w->cap = cap;
	memcpy(w->buf + w->len, s, n);
	w->len += n;
}

/* Append n bytes. The buffer keeps one byte spare for jsonw_finish's NUL;
 * after an allocation failure cap stays short and put_grow drops the rest. */
static inline void put(struct jw *w, const char *s, size_t n)
{
	if (w->cap - w->len > n) {
		memcpy(w->buf + w->len, s, n);
		w->len += n;
	} else {
		put_grow(w, s, n);
	}
}

#define PUTS(w, lit) put((w), (lit), sizeof(lit) - 1)

/* a newline and the indent of `depth` levels, in one put */
static void newline(struct jw *w, int depth)
{
	static const char nl[] = "\n" /* then 2 × JSONW_MAX_DEPTH spaces */
		"                                                                ";
	_Static_assert(sizeof nl - 2 >= 2 * JSONW_MAX_DEPTH, "indent table too short");
	put(w, nl, 1 + (size_t)depth * 2);
}

/* separator and key before a value at the current depth */
static void member(struct jw *w, const char *key)
{
	int d = w->depth;
	if (!w->empty[d])
		PUTS(w, ",");
	if (w->inline_[d]) {
		if (!w->empty[d])
			PUTS(w, " ");
	} else if (w->pretty && d > 0) {
		newline(w, d);
	}
	w->empty[d] = false;
	if (key) {
		PUTS(w, "\"");
		put(w, key, strlen(key));
		if (w->pretty)
			PUTS(w, "\": ");
		else
			PUTS(w, "\":");
	}
}

static void open_(struct jw *w, const char *key, char c, bool inl)
{
	member(w, key);
	put(w, &c, 1);
	if (w->depth + 1 >= JSONW_MAX_DEPTH) {
		w->oom = true; /* deeper than any schema of ours: a programming error */
		return;
	}
	w->depth++;
	w->empty[w->depth] = true;
	w->inline_[w->depth] = inl;
}

void jsonw_object(struct jw *w, const char *key) { open_(w, key, '{', false); }
void jsonw_array(struct jw *w, const char *key) { open_(w, key, '[', false); }
void jsonw_array_inline(struct jw *w, const char *key) { open_(w, key, '[', true); }

void jsonw_end(struct jw *w, char close)
{
	if (w->depth <= 0) {
		w->oom = true;
		return;
	}
	bool was_empty = w->empty[w->depth], inl = w->inline_[w->depth];
	w->depth--;
	if (!was_empty && !inl && w->pretty)
		newline(w, w->depth);
	put(w, &close, 1);
}

void jsonw_int(struct jw *w, const char *key, long long v)
{
	char b[32];
	int n = snprintf(b, sizeof b, "%lld", v);
	member(w, key);
	put(w, b, (size_t)n);
}

void jsonw_milli(struct jw *w, const char *key, long long v)
{
	char b[40];
	long long a = v < 0 ? -v : v;
	int n = snprintf(b, sizeof b, "%s%lld.%03lld", v < 0 ? "-" : "", a / 1000, a % 1000);
	member(w, key);
	put(w, b, (size_t)n);
}

void jsonw_uint(struct jw *w, const char *key, uint64_t v)
{
	char b[32], *p = b + sizeof b;
	do {
		*--p = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	member(w, key);
	put(w, p, (size_t)(b + sizeof b - p));
}

void jsonw_bool(struct jw *w, const char *key, bool v)
{
	member(w, key);
	if (v)
		PUTS(w, "true");
	else
		PUTS(w, "false");
}

void jsonw_null(struct jw *w, const char *key)
{
	member(w, key);
	PUTS(w, "null");
}

void jsonw_plain(struct jw *w, const char *key, const char *s)
{
	member(w, key);
	PUTS(w, "\"");
	put(w, s, strlen(s));
	PUTS(w, "\"");
}

void jsonw_string(struct jw *w, const char *key, const char *s)
{
	/* Printable ASCII without '"' or '\\' is its own JSON encoding (jansson
	 * escapes '/' only when asked): written as it is; anything else, jansson. */
	size_t n = 0;
	for (unsigned char c; (c = (unsigned char)s[n]) != '\0'; n++)
		if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\')
			break;
	if (s[n] == '\0') {
		member(w, key);
		PUTS(w, "\"");
		put(w, s, n);
		PUTS(w, "\"");
		return;
	}
	n += strlen(s + n);
	json_t *js = json_stringn(s, n);
	if (!js) {
		/* not valid UTF-8: keep the ASCII, mark the rest */
		char *copy = malloc(n + 1);
		if (!copy) {
			w->oom = true;
			return;
		}
		for (size_t i = 0; i <= n; i++)
			copy[i] = (unsigned char)s[i] >= 0x80 ? '?' : s[i];
		js = json_stringn(copy, n);
		free(copy);
		if (!js) {
			w->oom = true;
			return;
		}
	}
	char small[512];
	size_t need = json_dumpb(js, small, sizeof small, JSON_ENCODE_ANY);
	member(w, key);
	if (need <= sizeof small) {
		put(w, small, need);
	} else {
		char *big = malloc(need);
		if (big && json_dumpb(js, big, need, JSON_ENCODE_ANY) == need)
			put(w, big, need);
		else
			w->oom = true;
		free(big);
	}
	json_decref(js);
}

char *jsonw_finish(struct jw *w)
{
	if (w->oom || w->depth != 0) {
		free(w->buf);
		w->buf = NULL;
		return NULL;
	}
	if (!w->buf) { /* nothing written */
		w->buf = malloc(1);
		if (!w->buf)
			return NULL;
	}
	w->buf[w->len] = '\0';
	char *out = w->buf;
	w->buf = NULL;
	return out;
}

int jsonw_finish_file(struct jw *w)
{
	if (!w->oom && w->depth == 0)
		flush(w);
	bool ok = !w->oom && w->depth == 0;
	free(w->buf);
	w->buf = NULL;
	return ok ? 0 : -1;
}
