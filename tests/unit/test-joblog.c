/*
 * test-joblog.c — lib/jobs/joblog.c, a queued job's log under a cap: the
 * marker line reads back what it says (and junk is no marker); 1 MiB of
 * numbered lines written under a 64 KiB cap never take the file over it, end
 * as the marker and the newest output from a line's start, the marker's N
 * counting exactly the bytes gone; a reader that starts at 0 gets the file
 * as it is, one that follows gets every byte once and a line for what was cut
 * before it got there (on a line of its own, also when the follower had
 * stopped mid-line); a log taken over again (a job queued again) goes on
 * counting; what is appended by the file's path is cut at the next look.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "device/gpu.h"
#include "jobs/joblog.h"
#include "tmpdir.h"

#define CAP (64u << 10)

static void test_mark(void **state)
{
	(void)state;
	char t[32], buf[JOBLOG_MARK_MAX], limit[32];
	joblog_size_text(1u << 30, t, sizeof t);
	assert_string_equal(t, "1 GiB");
	joblog_size_text(3u << 19, t, sizeof t);
	assert_string_equal(t, "1536 KiB");
	joblog_size_text(100000, t, sizeof t);
	assert_string_equal(t, "100000 bytes");
	size_t n = joblog_mark(buf, sizeof buf, 4194304, "1 MiB");
	assert_string_equal(buf, "[gpuctl: 4194304 bytes of output cut here: log over 1 MiB]\n");
	uint64_t cut;
	size_t mlen;
	assert_true(joblog_parse_mark(buf, n, &cut, &mlen, limit, sizeof limit));
	assert_true(cut == 4194304);
	assert_int_equal(mlen, n);
	assert_string_equal(limit, "1 MiB");
	static const char *const junk[] = {
		"[gpuctl: x bytes of output cut here: log over 1 MiB]\n",
		"[gpuctl: 12 bytes of output cut here: log over 1 MiB]",   /* no newline */
		"[gpuctl: 12 bytes of output cut here: log over ]\n",
		"[gpuctl: 99999999999999999999999 bytes of output cut here: log over 1 MiB]\n",
		"gpuctl: 12 bytes of output cut here: log over 1 MiB]\n",
		"",
	};
	for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++)
		assert_false(joblog_parse_mark(junk[i], strlen(junk[i]), &cut, &mlen, limit, sizeof limit));
}

/* the output: numbered lines, byte i of it computable */
static size_t line_of(char *buf, size_t len, unsigned i)
{
	return (size_t)snprintf(buf, len, "line %06u of the job's output\n", i);
}

struct sink {
	char *b;
	size_t n, cap;
};

static void collect(void *arg, const char *b, size_t n)
{
	struct sink *s = arg;
	if (s->n + n > s->cap) {
		s->cap = (s->n + n) * 2;
		s->b = realloc(s->b, s->cap);
	}
	memcpy(s->b + s->n, b, n);
	s->n += n;
}

static void test_cap(void **state)
{
	(void)state;
	char dir[64], path[128];
	assert_int_equal(tmpdir_make(dir, sizeof dir, "joblog"), 0);
	snprintf(path, sizeof path, "%s/1.log", dir);
	int fd = open(path, O_RDWR | O_CREAT | O_APPEND, 0600);
	assert_true(fd >= 0);
	struct joblog l;
	assert_int_equal(joblog_open(&l, fd, CAP), GC_OK);
	assert_true(joblog_chunk(&l) <= CAP / 4);
	/* everything written, kept aside; a follower reads along */
	size_t total = 0, cap = 2u << 20;
	char *all = malloc(cap), line[64];
	struct sink follow = {0};
	struct joblog_pos fpos = {0};
	int rfd = open(path, O_RDONLY);
	assert_true(rfd >= 0);
	for (unsigned i = 0; total < (1u << 20); i++) {
		size_t n = line_of(line, sizeof line, i);
		memcpy(all + total, line, n);
		total += n;
		assert_int_equal(joblog_write(&l, line, n), GC_OK);
		struct stat st;
		assert_int_equal(fstat(fd, &st), 0);
		assert_true((uint64_t)st.st_size <= CAP);
		if (i % 97 == 0)
			assert_true(joblog_read(rfd, &fpos, collect, &follow) >= 0);
	}
	assert_true(joblog_read(rfd, &fpos, collect, &follow) >= 0);
	assert_true(fpos.at == total);
	assert_true(joblog_whole(rfd) == total); /* all the output, the cut bytes included */
	/* the file: the marker, then the newest output from a line's start */
	struct sink whole = {0};
	struct joblog_pos pos = {0};
	assert_true(joblog_read(rfd, &pos, collect, &whole) > 0);
	char *file = malloc(CAP + 1);
	ssize_t fl = pread(fd, file, CAP + 1, 0);
	assert_true(fl > 0 && fl <= (ssize_t)CAP);
	assert_int_equal(whole.n, (size_t)fl);
	assert_memory_equal(whole.b, file, (size_t)fl);
	uint64_t cut;
	size_t mlen;
	char limit[32];
	assert_true(joblog_parse_mark(file, (size_t)fl, &cut, &mlen, limit, sizeof limit));
	assert_string_equal(limit, "64 KiB");
	size_t kept = (size_t)fl - mlen;
	assert_true(cut + kept == total);
	assert_true(kept >= CAP / 2 - 4096);
	assert_memory_equal(file + mlen, all + total - kept, kept);
	assert_memory_equal(file + mlen, "line ", 5);
	/* the follower: every byte once, in order, with a line where it missed some */
	size_t at = 0, seen = 0;
	for (size_t k = 0; k < follow.n;) {
		uint64_t miss;
		size_t ml;
		if (joblog_parse_mark(follow.b + k, follow.n - k, &miss, &ml, limit, sizeof limit) &&
		    (k == 0 || follow.b[k - 1] == '\n')) {
			at += (size_t)miss;
			k += ml;
			continue;
		}
		const char *nl = memchr(follow.b + k, '\n', follow.n - k);
		size_t n = nl ? (size_t)(nl - (follow.b + k)) + 1 : follow.n - k;
		assert_memory_equal(follow.b + k, all + at, n);
		at += n;
		seen += n;
		k += n;
	}
	assert_int_equal(at, total);
	assert_true(seen > kept);
	/* taken over again (a job queued again): the count goes on */
	struct joblog again;
	assert_int_equal(joblog_open(&again, fd, CAP), GC_OK);
	assert_true(again.cut == cut && again.mlen == mlen);
	for (unsigned i = 0; i < 3000; i++) {
		size_t n = line_of(line, sizeof line, 900000 + i);
		assert_int_equal(joblog_write(&again, line, n), GC_OK);
		total += n;
	}
	fl = pread(fd, file, CAP + 1, 0);
	assert_true(fl > 0 && fl <= (ssize_t)CAP);
	assert_true(joblog_parse_mark(file, (size_t)fl, &cut, &mlen, limit, sizeof limit));
	assert_true(cut + ((size_t)fl - mlen) == total);
	/* appended by the path, past the cap: cut at the next look */
	int other = open(path, O_WRONLY | O_APPEND);
	char big[CAP];
	memset(big, 'x', sizeof big);
	big[sizeof big - 1] = '\n';
	assert_int_equal(write(other, big, sizeof big), (ssize_t)sizeof big);
	close(other);
	assert_int_equal(joblog_check(&again), GC_OK);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	assert_true((uint64_t)st.st_size <= CAP);
	close(rfd);
	close(fd);
	free(all);
	free(file);
	free(follow.b);
	free(whole.b);
	assert_int_equal(tmpdir_remove(dir), 0);
}

/* a follower that stopped mid-line and then missed output: the marker is on a line of its own */
static void test_mid_line(void **state)
{
	(void)state;
	char dir[64], path[128], line[64];
	assert_int_equal(tmpdir_make(dir, sizeof dir, "joblog"), 0);
	snprintf(path, sizeof path, "%s/2.log", dir);
	int fd = open(path, O_RDWR | O_CREAT | O_APPEND, 0600), rfd = open(path, O_RDONLY);
	assert_true(fd >= 0 && rfd >= 0);
	struct joblog l;
	assert_int_equal(joblog_open(&l, fd, CAP), GC_OK);
	assert_int_equal(joblog_write(&l, "half a li", 9), GC_OK);
	struct sink got = {0};
	struct joblog_pos p = {0};
	assert_true(joblog_read(rfd, &p, collect, &got) == 9 && p.mid_line);
	assert_int_equal(joblog_write(&l, "ne\n", 3), GC_OK);
	for (unsigned i = 0; i < 10000; i++) {
		size_t n = line_of(line, sizeof line, i);
		assert_int_equal(joblog_write(&l, line, n), GC_OK);
	}
	assert_true(joblog_read(rfd, &p, collect, &got) > 0);
	assert_false(p.mid_line);
	assert_memory_equal(got.b, "half a li\n[gpuctl: ", 19);
	close(rfd);
	close(fd);
	free(got.b);
	assert_int_equal(tmpdir_remove(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mark),
		cmocka_unit_test(test_cap),
		cmocka_unit_test(test_mid_line),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
