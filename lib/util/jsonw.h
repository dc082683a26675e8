/*
 * jsonw.h — a streaming JSON writer: lays out objects, arrays, numbers,
 * booleans and null straight into a growing buffer, with jansson's
 * JSON_INDENT(2) layout or compact. Strings from outside are encoded by
 * jansson itself (escaping, UTF-8 checks); only strings gpuctl makes from
 * a fixed alphabet (hex, "P2", reason names) are written as they are.
 * Exists because building a jansson tree for a 256-GPU snapshot and
 * dumping it cost more than all the NVML calls together (bench/query.sh).
 * Standalone: needs only jansson.
 */
#ifndef GPUCTL_LIB_JSONW_H
#define GPUCTL_LIB_JSONW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define JSONW_MAX_DEPTH 32

struct jw {
	FILE *out;       /* jsonw_init_file: the buffer is written here as it fills */
	char *buf;       /* owned; NUL-terminated by jsonw_finish */
	size_t len, cap;
	int depth;
	bool pretty;
	bool oom;        /* an allocation failed: the output is unusable */
	bool empty[JSONW_MAX_DEPTH];  /* no member written yet at this depth */
	bool inline_[JSONW_MAX_DEPTH]; /* this array stays on one line */
};

void jsonw_init(struct jw *w, bool pretty);
/* Take the buffer (caller frees), or NULL when out of memory. */
char *jsonw_finish(struct jw *w);
/*
 * Stream to out instead: the buffer (64 KiB) is written whenever it fills,
 * so a big document never sits whole in memory (bench/query.sh: ls --json
 * at 256 GPUs is 1 MB). jsonw_finish_file writes the rest and frees the
 * buffer: 0, or -1 when out of memory, unbalanced or a write failed (then
 * part of the document may have been written).
 */
void jsonw_init_file(struct jw *w, bool pretty, FILE *out);
int jsonw_finish_file(struct jw *w);

/* `key` is a literal member name inside an object, NULL inside an array. */
void jsonw_object(struct jw *w, const char *key);
void jsonw_array(struct jw *w, const char *key);
void jsonw_array_inline(struct jw *w, const char *key);
void jsonw_end(struct jw *w, char close);  /* '}' or ']' */
void jsonw_int(struct jw *w, const char *key, long long v);
void jsonw_uint(struct jw *w, const char *key, uint64_t v);
/* v / 1000 with three decimals: milliwatts as watts */
void jsonw_milli(struct jw *w, const char *key, long long v);
void jsonw_bool(struct jw *w, const char *key, bool v);
void jsonw_null(struct jw *w, const char *key);
/* a string from outside: encoded by jansson; invalid UTF-8 bytes become '?' */
void jsonw_string(struct jw *w, const char *key, const char *s);
/* a string known to need no escaping (ASCII letters, digits, ".:_-+/ ") */
void jsonw_plain(struct jw *w, const char *key, const char *s);

#endif
