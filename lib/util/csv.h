/*
 * csv.h — a small RFC 4180 CSV reader over a buffer in memory, for the data
 * files gpuctl reads by header name (price catalogs, data/gpus.csv,
 * data/models.csv). Standalone: no gc_ctx, no NVML.
 *
 * Fields may be quoted ("a, b", "say ""hi"""), records end in LF or CRLF,
 * a UTF-8 byte-order mark before the header is skipped, and with
 * CSV_COMMENTS a line starting with '#' is skipped. A quoted field may span
 * lines. Fields longer than CSV_FIELD_MAX or records with more than
 * CSV_MAX_FIELDS fields are refused, so a hostile file cannot make the
 * reader allocate without bound: memory stays O(one record).
 */
#ifndef GPUCTL_LIB_CSV_H
#define GPUCTL_LIB_CSV_H

#include <stdbool.h>
#include <stddef.h>

#define CSV_FIELD_MAX 4096
#define CSV_MAX_FIELDS 256

enum { CSV_COMMENTS = 1 };

struct csv {
	const char *p, *end;   /* borrowed: the rest of the buffer */
	unsigned flags;
	size_t line;           /* line where the current record started (1-based) */
	size_t next_line;
	size_t nf;             /* fields in the current record */
	char *f[CSV_MAX_FIELDS]; /* NUL-terminated, point into buf */
	char *buf;             /* owned */
	size_t cap;
};

/* `data` (len bytes) is borrowed and must outlive the reader. */
void csv_init(struct csv *c, const char *data, size_t len, unsigned flags);
void csv_release(struct csv *c);

/*
 * Read the next record into c->f[0..nf). Returns 1 for a record, 0 at the
 * end, GC_EINVAL on malformed input (unterminated quote, text after a closing
 * quote, a NUL byte, a field or record too large) with a reason naming the
 * line in err. Blank lines are skipped.
 */
int csv_next(struct csv *c, char *err, size_t errlen);

/* index of the column named `name` in the current record (case-insensitive,
 * surrounding blanks ignored), or -1 */
int csv_col(const struct csv *c, const char *name);

/*
 * Find columns names[0..n) in the current record (the header) into idx[],
 * -1 for an absent one. Returns the index of the first absent name whose
 * bit is set in `required` (bit i: names[i]), or -1 when all are there.
 */
int csv_columns(const struct csv *c, const char *const *names, int n, unsigned long required, int *idx);

/* a number field: 0 and *out, 1 when empty (blank), GC_EINVAL when not a finite number >= 0 */
int csv_num(const char *s, double *out);

/* whether `s` is one entry of `list` (entries separated by `sep`, case-insensitive) */
bool csv_in_list(const char *list, char sep, const char *s);

#endif
