/*
 * csv.c — RFC 4180 records from a buffer (see csv.h). One pass, no
 * backtracking: linear in the input, one record's memory at a time.
 */
#include "util/csv.h"

#include "gpuctl/gpuctl.h"
#include "util/errbuf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void csv_init(struct csv *c, const char *data, size_t len, unsigned flags)
{
	memset(c, 0, sizeof *c);
	c->p = data;
	c->end = data + len;
	c->flags = flags;
	c->next_line = 1;
	if (len >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0)
		c->p += 3;
}

void csv_release(struct csv *c)
{
	free(c->buf);
	c->buf = NULL;
	c->cap = 0;
	c->nf = 0;
}

static int put(struct csv *c, size_t *len, char ch)
{
	if (*len + 1 >= c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 256;
		char *nb = realloc(c->buf, ncap);
		if (!nb)
			return -1;
		/* fields already found point into the old buffer: move them */
		for (size_t i = 0; i < c->nf; i++)
			c->f[i] = nb + (c->f[i] - c->buf);
		c->buf = nb;
		c->cap = ncap;
	}
	c->buf[(*len)++] = ch;
	return 0;
}

int csv_next(struct csv *c, char *err, size_t errlen)
{
	for (;;) {
		c->nf = 0;
		c->line = c->next_line;
		if (c->p >= c->end)
			return 0;
		/* blank lines and comments */
		if (*c->p == '\n' || (*c->p == '\r' && c->p + 1 < c->end && c->p[1] == '\n')) {
			c->p += *c->p == '\r' ? 2 : 1;
			c->next_line++;
			continue;
		}
		if ((c->flags & CSV_COMMENTS) && *c->p == '#') {
			const char *nl = memchr(c->p, '\n', (size_t)(c->end - c->p));
			c->p = nl ? nl + 1 : c->end;
			c->next_line++;
			continue;
		}
		break;
	}

	size_t len = 0, start = 0;
	bool quoted = false, after_quote = false;
	if (put(c, &len, '\0') < 0) /* make sure buf exists; field 0 starts at 1 */
		goto nomem;
	start = len;
	for (;;) {
		bool eof = c->p >= c->end;
		char ch = eof ? '\n' : *c->p;
		if (!eof)
			c->p++;
		if (ch == '\0') {
			errbuf_set(err, errlen, "line %zu: a NUL byte (not a text file)", c->next_line);
			return GC_EINVAL;
		}
		if (quoted) {
			if (eof) {
				errbuf_set(err, errlen, "line %zu: a quoted field is never closed", c->line);
				return GC_EINVAL;
			}
			if (ch == '"') {
				if (c->p < c->end && *c->p == '"') {
					c->p++;
				} else {
					quoted = false;
					after_quote = true;
					continue;
				}
			} else if (ch == '\n') {
				c->next_line++;
			}
		} else if (ch == '"' && len == start && !after_quote) {
			quoted = true;
			continue;
		} else if (ch == ',' || ch == '\n' || (ch == '\r' && (c->p >= c->end || *c->p == '\n'))) {
			if (c->nf == CSV_MAX_FIELDS) {
				errbuf_set(err, errlen, "line %zu: more than %d fields", c->line, CSV_MAX_FIELDS);
				return GC_EINVAL;
			}
			if (put(c, &len, '\0') < 0)
				goto nomem;
			c->f[c->nf++] = c->buf + start;
			start = len;
			after_quote = false;
			if (ch == ',')
				continue;
			if (ch == '\r')
				c->p++;
			c->next_line++;
			return 1;
		} else if (after_quote) {
			errbuf_set(err, errlen, "line %zu: text after a closing quote", c->line);
			return GC_EINVAL;
		}
		if (len - start >= CSV_FIELD_MAX) {
			errbuf_set(err, errlen, "line %zu: a field longer than %d bytes", c->line, CSV_FIELD_MAX);
			return GC_EINVAL;
		}
		if (put(c, &len, ch) < 0)
			goto nomem;
	}
nomem:
	errbuf_set(err, errlen, "line %zu: out of memory", c->line);
	return GC_EINVAL;
}

int csv_col(const struct csv *c, const char *name)
{
	for (size_t i = 0; i < c->nf; i++) {
		const char *s = c->f[i];
		while (*s == ' ' || *s == '\t')
			s++;
		size_t n = strlen(s);
		while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
			n--;
		if (n == strlen(name) && strncasecmp(s, name, n) == 0)
			return (int)i;
	}
	return -1;
}

int csv_columns(const struct csv *c, const char *const *names, int n, unsigned long required, int *idx)
{
	int missing = -1;
	for (int i = 0; i < n; i++) {
		idx[i] = csv_col(c, names[i]);
		if (idx[i] < 0 && missing < 0 && i < (int)(8 * sizeof required) && (required >> i & 1))
			missing = i;
	}
	return missing;
}

int csv_num(const char *s, double *out)
{
	while (*s == ' ')
		s++;
	if (!*s)
		return 1;
	char *end;
	double v = strtod(s, &end);
	while (*end == ' ')
		end++;
	if (*end || !isfinite(v) || v < 0)
		return GC_EINVAL;
	*out = v;
	return 0;
}

bool csv_in_list(const char *list, char sep, const char *s)
{
	size_t n = strlen(s);
	while (*list) {
		const char *e = strchr(list, sep);
		size_t k = e ? (size_t)(e - list) : strlen(list);
		if (k == n && strncasecmp(list, s, n) == 0)
			return true;
		list += k;
		if (*list == sep)
			list++;
	}
	return false;
}
