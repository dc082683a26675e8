/*
 * torchenv.c — the launcher's Python and PyTorch (see torchenv.h).
 *
 * The version facts, from PyTorch's and CPython's own trackers:
 *  - Python 3.11 stopped listing a Flag's zero member and its multi-bit
 *    aliases when the class is iterated (cpython issues 98976, 99304);
 *    torch.distributed.elastic's Std.from_str looked values up that way
 *    until the Python 3.11 work for PyTorch 2.0 (pytorch issue 92319).
 *  - expandable_segments came with PyTorch 2.1's caching allocator; 1.13
 *    and 2.0 refuse the unknown key when CUDA first allocates.
 */
#include "jobs/torchenv.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char TORCHENV_PROBE[] =
	"import sys\n"
	"v = '-'\n"
	"try:\n"
	"    import importlib.util, os, re\n"
	"    s = importlib.util.find_spec('torch')\n"
	"    if s is not None and s.origin:\n"
	"        try:\n"
	"            with open(os.path.join(os.path.dirname(s.origin), 'version.py')) as f:\n"
	"                m = re.search(r'''^__version__(?:\\s*:\\s*str)?\\s*=\\s*['\"]([^'\"\\s]+)['\"]''', f.read(), re.M)\n"
	"            if m:\n"
	"                v = m.group(1)\n"
	"        except OSError:\n"
	"            pass\n"
	"        if v == '-':\n"
	"            from importlib import metadata\n"
	"            v = metadata.version('torch')\n"
	"except Exception:\n"
	"    pass\n"
	"print('gpuctl-torch', sys.version_info[0], sys.version_info[1], v)\n";

bool torchenv_version(const char *v, int *major, int *minor)
{
	char *end;
	if (!v || !isdigit((unsigned char)v[0]))
		return false;
	long a = strtol(v, &end, 10);
	if (*end != '.' || !isdigit((unsigned char)end[1]))
		return false;
	long b = strtol(end + 1, &end, 10);
	if (a > 999 || b > 999)
		return false;
	*major = (int)a;
	*minor = (int)b;
	return true;
}

int torchenv_parse(const char *out, struct torchenv *t)
{
	memset(t, 0, sizeof *t);
	t->major = t->minor = -1;
	static const char key[] = "gpuctl-torch ";
	/* the last such line: a sitecustomize may print before it */
	const char *line = NULL;
	for (const char *p = out; p && (p = strstr(p, key)); p += sizeof key - 1)
		if (p == out || p[-1] == '\n')
			line = p;
	if (!line)
		return -1;
	int pa, pb, n = 0;
	char ver[64];
	if (sscanf(line + sizeof key - 1, "%d %d %63s%n", &pa, &pb, ver, &n) != 3 || pa < 2 || pa > 99 || pb < 0 ||
	    pb > 999)
		return -1;
	t->py_major = pa;
	t->py_minor = pb;
	if (strcmp(ver, "-") != 0) {
		snprintf(t->version, sizeof t->version, "%s", ver);
		if (!torchenv_version(ver, &t->major, &t->minor))
			t->major = t->minor = -1;
	}
	return 0;
}

/* copy [s, s+n) into dst (len bytes); false when it does not fit or is empty */
static bool copy_word(char *dst, size_t len, const char *s, size_t n)
{
	if (n == 0 || n >= len)
		return false;
	memcpy(dst, s, n);
	dst[n] = '\0';
	return true;
}

static const char *base_of(const char *path)
{
	const char *b = strrchr(path, '/');
	return b ? b + 1 : path;
}

static bool pythonish(const char *path)
{
	const char *b = base_of(path);
	return strncmp(b, "python", 6) == 0 || strncmp(b, "pypy", 4) == 0;
}

/* the next blank-separated word of [*p, end) */
static bool next_word(const char **p, const char *end, const char **w, size_t *n)
{
	while (*p < end && (**p == ' ' || **p == '\t'))
		(*p)++;
	*w = *p;
	while (*p < end && **p != ' ' && **p != '\t')
		(*p)++;
	*n = (size_t)(*p - *w);
	return *n > 0;
}

int torchenv_script_python(const char *head, size_t len, char *py, size_t pylen, char *opt, size_t optlen)
{
	if (!pylen || !optlen)
		return -1;
	py[0] = opt[0] = '\0';
	if (len < 3 || head[0] != '#' || head[1] != '!')
		return -1;
	const char *nl = memchr(head, '\n', len);
	const char *end = nl ? nl : head + len;
	while (end > head + 2 && (end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t'))
		end--;
	const char *p = head + 2, *w;
	size_t n;
	char interp[512];
	if (!next_word(&p, end, &w, &n) || !copy_word(interp, sizeof interp, w, n))
		return -1;
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	const char *rest = p; /* the kernel passes the rest of the line as one argument */
	const char *b = base_of(interp);
	if (strcmp(b, "env") == 0) {
		/* env [-S] [-i] [NAME=VALUE]... python3 [option] */
		bool split = false;
		while (next_word(&p, end, &w, &n)) {
			if (n >= 2 && w[0] == '-' && !split) {
				split |= memchr(w, 'S', n) != NULL;
				continue;
			}
			if (memchr(w, '=', n))
				continue;
			if (!copy_word(py, pylen, w, n) || !pythonish(py))
				return py[0] = '\0', -1;
			/* only env -S splits what follows into arguments; without it there is nothing after */
			if (split && next_word(&p, end, &w, &n) && w[0] == '-' && !copy_word(opt, optlen, w, n))
				return py[0] = '\0', -1;
			return 0;
		}
		return -1;
	}
	if ((strcmp(b, "sh") == 0 || strcmp(b, "bash") == 0) && nl) {
		/* pip's trampoline: '''exec' "/very/long/path/bin/python" "$0" "$@" */
		static const char tramp[] = "'''exec' ";
		const char *l2 = nl + 1, *e2 = memchr(l2, '\n', len - (size_t)(l2 - head));
		if (!e2)
			e2 = head + len;
		if ((size_t)(e2 - l2) <= sizeof tramp - 1 || memcmp(l2, tramp, sizeof tramp - 1) != 0)
			return -1;
		const char *s = l2 + sizeof tramp - 1, *q;
		if (*s == '"' || *s == '\'') {
			q = memchr(s + 1, *s, (size_t)(e2 - s - 1));
			if (!q)
				return -1;
			s++;
		} else {
			for (q = s; q < e2 && *q != ' '; q++)
				;
		}
		if (!copy_word(py, pylen, s, (size_t)(q - s)) || !pythonish(py))
			return py[0] = '\0', -1;
		return 0;
	}
	if (!pythonish(interp) || !copy_word(py, pylen, interp, strlen(interp)))
		return py[0] = '\0', -1;
	if (rest < end && *rest == '-' && !copy_word(opt, optlen, rest, (size_t)(end - rest)))
		return py[0] = '\0', -1;
	return 0;
}

bool torchenv_std_bug(const struct torchenv *t)
{
	bool py311 = t->py_major > 3 || (t->py_major == 3 && t->py_minor >= 11);
	return py311 && t->major >= 0 && t->major < 2;
}

bool torchenv_has_expandable(const struct torchenv *t)
{
	return t->major > 2 || (t->major == 2 && t->minor >= 1);
}

bool torchenv_before_expandable(const struct torchenv *t)
{
	return t->major >= 0 && !torchenv_has_expandable(t);
}

bool torchenv_conf_expandable(const char *conf)
{
	static const char key[] = "expandable_segments";
	for (const char *p = conf; p && *p;) {
		while (*p == ' ' || *p == ',')
			p++;
		size_t n = strcspn(p, ":,");
		size_t k = n;
		while (k && p[k - 1] == ' ')
			k--;
		if (k == sizeof key - 1 && memcmp(p, key, k) == 0)
			return true;
		p += n;
		p += strcspn(p, ",");
	}
	return false;
}
