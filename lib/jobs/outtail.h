/*
 * outtail.h — the last lines a job wrote, kept while its output goes where
 * it would have gone, so that a failed job can be explained when it ends
 * (docs/explain.md, "When a job fails").
 *
 * For each of our stdout and stderr, by what it is:
 *  - a regular file: the job writes it directly; its tail is read back from
 *    the file when asked (nothing in the way, nothing copied);
 *  - a terminal: the job gets a pseudo-terminal (a terminal still: isatty,
 *    colours and progress bars as before, the window size passed on) whose
 *    output is copied to ours and into a ring of the last `keep` bytes;
 *  - a pipe, a socket or anything else: the job gets a pipe; what it writes
 *    is spliced on to ours without a copy, and tee(2)'d into a pipe of
 *    `keep` bytes that holds the tail (its oldest pages dropped, without a
 *    copy, as new ones come);
 *  - /dev/null: left alone, nothing kept; or, when a retry depends on the
 *    explanation (from_null), a pipe as above, spliced on to /dev/null;
 *  - a descriptor that is not open: left alone, nothing kept;
 *  - a pipe to a log the caller names (outtail_open_log): left alone, the
 *    tail read back from that log.
 * stdout and stderr on the same open file share one channel, so their order
 * is kept. The job's stdin, controlling terminal and process group are not
 * touched.
 */
#ifndef GPUCTL_LIB_OUTTAIL_H
#define GPUCTL_LIB_OUTTAIL_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>

#define OUTTAIL_KEEP (1u << 20)  /* bytes of each stream's tail kept */

struct outtail;

/* Set up for our fds 1 and 2: GC_OK with *out, or a GC_E* with err (nothing changed then). */
int outtail_open(struct outtail **out, size_t keep, bool from_null, char *err, size_t errlen);
/*
 * Our fds 1 and 2 go on, through the job's own hands, into the log open for
 * reading on fd (a queued job's capped log: a pipe to its writer): the job
 * gets them as they are, nothing is copied or kept on the way, and the tail
 * is read back from the log (lib/jobs/joblog.h: through its cuts) once
 * sync(arg), when not NULL, has seen all that was written reach it. fd is
 * borrowed. GC_OK with *out; GC_ENOMEM with err.
 */
int outtail_open_log(struct outtail **out, size_t keep, int fd, int (*sync)(void *arg), void *arg, char *err,
		     size_t errlen);
/* What the job's fd 1 and fd 2 must be (dup2'd in the child), each -1 when ours is left as it is. */
void outtail_child_fds(const struct outtail *t, int *fd1, int *fd2);
/* The descriptors to poll for the job's output, into p[0..max): how many. */
size_t outtail_pollfds(const struct outtail *t, struct pollfd *p, size_t max);
/* How long the poll may wait for a channel held back (small writes gathered): ms, -1 none. */
int outtail_timeout_ms(const struct outtail *t);
/* After poll: move what the job wrote on (and into the tail); true while a channel is open. */
bool outtail_pump(struct outtail *t, const struct pollfd *p, size_t n);
/* Once the job has ended: what is left in the channels, without waiting for its descendants. */
void outtail_drain(struct outtail *t);
/*
 * The tail: stderr's then stdout's (one when they share), at most `keep`
 * bytes of each, in *buf (free()); its length. 0 and NULL when nothing.
 */
size_t outtail_text(struct outtail *t, char **buf);
/* Whether a channel copies through a pseudo-terminal (the window size is then passed on). */
bool outtail_has_tty(const struct outtail *t);
/* Pass our terminal's window size on to the job's, when it changed. */
void outtail_winsize(struct outtail *t);
void outtail_close(struct outtail *t);

#endif
