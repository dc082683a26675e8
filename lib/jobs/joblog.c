/*
 * joblog.c — a queued job's log under a size cap (see joblog.h).
 */
#include "jobs/joblog.h"

#include "gpuctl/gpuctl.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define COPY ((size_t)64 << 10)   /* bytes moved per read and write in a cut */
#define LINE_LOOK 4096            /* how far a cut looks for a line's start */

static const char MARK_HEAD[] = "[gpuctl: ";
static const char MARK_MID[] = " bytes of output cut here: log over ";

void joblog_size_text(uint64_t bytes, char *buf, size_t len)
{
	static const struct { const char *unit; unsigned shift; } u[] = {
		{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10},
	};
	for (size_t i = 0; i < sizeof u / sizeof u[0]; i++)
		if (bytes && bytes % ((uint64_t)1 << u[i].shift) == 0) {
			snprintf(buf, len, "%" PRIu64 " %s", bytes >> u[i].shift, u[i].unit);
			return;
		}
	snprintf(buf, len, "%" PRIu64 " bytes", bytes);
}

size_t joblog_mark(char *buf, size_t len, uint64_t n, const char *limit)
{
	int w = snprintf(buf, len, "%s%" PRIu64 "%s%s]\n", MARK_HEAD, n, MARK_MID, limit);
	return w < 0 ? 0 : (size_t)w < len ? (size_t)w : len - 1;
}

bool joblog_parse_mark(const char *text, size_t len, uint64_t *cut, size_t *mlen, char *limit, size_t limlen)
{
	size_t hl = sizeof MARK_HEAD - 1, ml = sizeof MARK_MID - 1;
	if (len > JOBLOG_MARK_MAX)
		len = JOBLOG_MARK_MAX;
	if (len < hl || memcmp(text, MARK_HEAD, hl) != 0)
		return false;
	size_t i = hl;
	uint64_t n = 0;
	if (i >= len || text[i] < '0' || text[i] > '9')
		return false;
	for (; i < len && text[i] >= '0' && text[i] <= '9'; i++) {
		if (n > (UINT64_MAX - 9) / 10)
			return false;
		n = n * 10 + (uint64_t)(text[i] - '0');
	}
	if (len - i < ml || memcmp(text + i, MARK_MID, ml) != 0)
		return false;
	i += ml;
	const char *nl = memchr(text + i, '\n', len - i);
	if (!nl || nl - (text + i) < 2 || nl[-1] != ']')
		return false; /* a LIMIT, at least one byte of it, then "]" */
	size_t ll = (size_t)(nl - 1 - (text + i));
	if (limit && limlen) {
		size_t c = ll < limlen - 1 ? ll : limlen - 1;
		memcpy(limit, text + i, c);
		limit[c] = '\0';
	}
	*cut = n;
	*mlen = (size_t)(nl - text) + 1;
	return true;
}

/* the first line of fd's file, when it is a marker: *cut, *mlen (0 and 0 when not), the limit */
static int read_mark(int fd, uint64_t *cut, size_t *mlen, char *limit, size_t limlen)
{
	char head[JOBLOG_MARK_MAX];
	ssize_t n;
	do
		n = pread(fd, head, sizeof head, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -1;
	if (!joblog_parse_mark(head, (size_t)n, cut, mlen, limit, limlen)) {
		*cut = 0;
		*mlen = 0;
		if (limit && limlen)
			limit[0] = '\0';
	}
	return 0;
}

uint64_t joblog_whole(int fd)
{
	struct stat st;
	uint64_t cut;
	size_t mlen;
	if (fstat(fd, &st) < 0)
		return 0;
	if (read_mark(fd, &cut, &mlen, NULL, 0) < 0 || (uint64_t)st.st_size < mlen)
		return (uint64_t)st.st_size;
	return cut + (uint64_t)st.st_size - mlen;
}

int joblog_open(struct joblog *l, int fd, uint64_t max)
{
	*l = (struct joblog){.fd = fd, .max = max};
	joblog_size_text(max, l->limit, sizeof l->limit);
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_APPEND) < 0)
		return GC_EIO;
	/* pwrite on an O_APPEND file appends wherever it is told to write: the cut needs it gone */
	if (read_mark(fd, &l->cut, &l->mlen, NULL, 0) < 0)
		return GC_EIO;
	return GC_OK;
}

size_t joblog_chunk(const struct joblog *l)
{
	size_t c = (size_t)64 << 10;
	return l->max && l->max / 4 < c ? (size_t)(l->max / 4) : c;
}

static int write_all(int fd, const char *b, size_t n, off_t at)
{
	while (n) {
		ssize_t w = pwrite(fd, b, n, at);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (w == 0)
				errno = EIO;
			return -1;
		}
		b += w;
		n -= (size_t)w;
		at += w;
	}
	return 0;
}

/* an exclusive lock on the file, waiting for readers at most JOBLOG_LOCK_MS: true when held */
static bool lock_ex(int fd)
{
	for (int waited = 0;; waited += 5) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return true;
		if (errno != EWOULDBLOCK && errno != EINTR)
			return false;
		if (waited >= JOBLOG_LOCK_MS)
			return false; /* a reader that holds on: cut all the same */
		nanosleep(&(struct timespec){.tv_nsec = 5000000}, NULL);
	}
}

/*
 * Keep the newest output of the file (size bytes now) so that `incoming` more
 * bytes still fit under the cap: the marker first (its N grown by what goes),
 * then that output moved up behind it.
 */
static int cut(struct joblog *l, uint64_t size, size_t incoming)
{
	uint64_t keep = l->max / 2;
	if (keep + JOBLOG_MARK_MAX + incoming > l->max)
		keep = l->max - JOBLOG_MARK_MAX - incoming;
	if (size <= l->mlen || size - l->mlen <= keep)
		return GC_OK; /* nothing to cut: the marker alone is there */
	uint64_t src = size - keep;
	char buf[COPY];
	/* from a line's start when one begins near: a log read by people and by gpuctl explain */
	ssize_t got = pread(l->fd, buf, LINE_LOOK < size - src ? LINE_LOOK : (size_t)(size - src), (off_t)src);
	char *nl = got > 0 ? memchr(buf, '\n', (size_t)got) : NULL;
	if (nl && src + (uint64_t)(nl - buf) + 1 < size)
		src += (uint64_t)(nl - buf) + 1;
	uint64_t n = l->cut + (src - l->mlen);
	char mark[JOBLOG_MARK_MAX];
	size_t mlen = joblog_mark(mark, sizeof mark, n, l->limit);
	bool locked = lock_ex(l->fd);
	int rc = GC_OK;
	off_t r = (off_t)src, w = (off_t)mlen;
	for (;;) {
		/* what was appended by the file's path meanwhile comes along */
		struct stat st;
		if (fstat(l->fd, &st) < 0) {
			rc = GC_EIO;
			break;
		}
		if (r >= st.st_size)
			break;
		ssize_t k = pread(l->fd, buf, COPY, r);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0 || write_all(l->fd, buf, (size_t)k, w) < 0) {
			if (k == 0)
				break;
			rc = GC_EIO;
			break;
		}
		r += k;
		w += k;
	}
	if (rc == GC_OK && (write_all(l->fd, mark, mlen, 0) < 0 || ftruncate(l->fd, w) < 0))
		rc = GC_EIO;
	int e = errno;
	if (locked)
		(void)flock(l->fd, LOCK_UN);
	errno = e;
	if (rc == GC_OK) {
		l->cut = n;
		l->mlen = mlen;
	}
	return rc;
}

int joblog_write(struct joblog *l, const char *buf, size_t n)
{
	struct stat st;
	if (fstat(l->fd, &st) < 0)
		return GC_EIO;
	uint64_t size = (uint64_t)st.st_size;
	if (l->max && size + n > l->max) {
		if (cut(l, size, n) != GC_OK || fstat(l->fd, &st) < 0)
			return GC_EIO;
		size = (uint64_t)st.st_size;
	}
	return write_all(l->fd, buf, n, (off_t)size) < 0 ? GC_EIO : GC_OK;
}

int joblog_check(struct joblog *l)
{
	struct stat st;
	if (!l->max)
		return GC_OK;
	if (fstat(l->fd, &st) < 0)
		return GC_EIO;
	return (uint64_t)st.st_size > l->max ? cut(l, (uint64_t)st.st_size, 0) : GC_OK;
}

long long joblog_read(int fd, struct joblog_pos *p, void (*emit)(void *arg, const char *b, size_t n), void *arg)
{
	char buf[COPY], limit[32], mark[JOBLOG_MARK_MAX + 1];
	uint64_t *pos = &p->at;
	long long total = 0;
	for (;;) {
		while (flock(fd, LOCK_SH) < 0 && errno == EINTR)
			;
		uint64_t n = 0;
		size_t mlen = 0, ml = 0;
		ssize_t k = -1;
		if (read_mark(fd, &n, &mlen, limit, sizeof limit) == 0) {
			if (*pos < n) {
				/* cut before this reader got to it: said on a line of its own, then the output that is left */
				size_t nl = p->mid_line ? 1 : 0;
				mark[0] = '\n';
				ml = nl + joblog_mark(mark + nl, sizeof mark - nl, n - *pos, limit);
				*pos = n;
				p->mid_line = false;
			}
			do
				k = pread(fd, buf, sizeof buf, (off_t)(mlen + (*pos - n)));
			while (k < 0 && errno == EINTR);
		}
		int e = errno;
		(void)flock(fd, LOCK_UN);
		if (ml)
			emit(arg, mark, ml);
		if (k < 0) {
			errno = e;
			return -1;
		}
		if (k == 0)
			return total;
		emit(arg, buf, (size_t)k);
		p->mid_line = buf[k - 1] != '\n';
		*pos += (uint64_t)k;
		total += k;
	}
}
