/*
 * joblog.h — a queued job's log kept under a size cap (gpuctld
 * --log-max-size, docs/queue.md "Logs").
 *
 * One writer appends the job's output (the runner's log writer: the job's
 * stdout and stderr are a pipe to it, so the cap holds while the job runs,
 * however fast it writes). Before an append would take the file over the
 * cap, the oldest output is cut: the file then starts with one line,
 *
 *   [gpuctl: N bytes of output cut here: log over LIMIT]
 *
 * N counting all the output cut so far, followed by the newest output (about
 * half the cap, from the start of a line where one is near). The file never
 * grows past the cap by the writer's appends; what another process appends
 * by the file's path is cut at the writer's next look (joblog_check).
 *
 * Readers follow the output by its offset in the whole output (cut bytes
 * included): joblog_read maps it onto the file through the first line, under
 * a shared flock; the writer cuts under an exclusive one, so a reader never
 * sees a cut half made. A reader that holds its lock for more than
 * JOBLOG_LOCK_MS does not hold the cut back.
 */
#ifndef GPUCTL_LIB_JOBLOG_H
#define GPUCTL_LIB_JOBLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JOBLOG_MIN (64u << 10)   /* the smallest cap: an append is at most a quarter of it */
#define JOBLOG_MARK_MAX 160      /* the first line, when it is the marker, is at most this long */
#define JOBLOG_LOCK_MS 200       /* how long a cut waits for readers */

struct joblog {
	int fd;                  /* borrowed: the log, open for reading and writing */
	uint64_t max;            /* the cap in bytes; 0: none */
	uint64_t cut;            /* output cut so far: the marker's N (0: nothing cut) */
	size_t mlen;             /* the marker line's length at the file's start (0: none) */
	char limit[32];          /* the cap as the marker says it ("1 GiB") */
};

/*
 * Take fd's file over as it is, for appending (a job queued again goes on in
 * its log; its marker, if any, is read): O_APPEND is cleared on fd, the
 * writer appends at the file's end itself. max >= JOBLOG_MIN, or 0 for no
 * cap. GC_OK, or GC_EIO with errno set.
 */
int joblog_open(struct joblog *l, int fd, uint64_t max);

/* The largest append joblog_write takes at once (a quarter of the cap, at most 64 KiB). */
size_t joblog_chunk(const struct joblog *l);

/*
 * Append n bytes (n <= joblog_chunk), cutting first when they would take the
 * file over the cap. GC_OK, or GC_EIO with errno set (ENOSPC: a full disk).
 */
int joblog_write(struct joblog *l, const char *buf, size_t n);

/* Cut now if the file is over the cap (something appended by its path). GC_OK, or GC_EIO with errno. */
int joblog_check(struct joblog *l);

/*
 * The marker at the start of text (len bytes): true with *cut (N), *mlen (the
 * line's length, newline included) and the LIMIT text in limit (limlen bytes);
 * false when text does not start with one.
 */
bool joblog_parse_mark(const char *text, size_t len, uint64_t *cut, size_t *mlen, char *limit, size_t limlen);

/* All the output the log on fd has taken so far, the bytes cut included (its size where nothing was cut). */
uint64_t joblog_whole(int fd);

/* The marker line for n bytes cut over limit (text), newline included, into buf: its length. */
size_t joblog_mark(char *buf, size_t len, uint64_t n, const char *limit);

/* A cap as the marker says it: "1 GiB", "1536 MiB", "100000 bytes". */
void joblog_size_text(uint64_t bytes, char *buf, size_t len);

/* Where a reader is: an offset in the whole output (cut bytes included), and whether it stopped mid-line. */
struct joblog_pos {
	uint64_t at;
	bool mid_line;
};

/*
 * A reader's step: what the log holds of the output from p->at on, through
 * emit(arg, bytes, n) in pieces, p moved past it. Output cut since p->at is
 * said by a marker line of its own (the bytes this reader missed; on a line
 * of its own) and skipped. Returns the bytes of output given (0 at the end
 * for now), or -1 with errno. Start with a zeroed p.
 */
long long joblog_read(int fd, struct joblog_pos *p, void (*emit)(void *arg, const char *b, size_t n), void *arg);

#endif
