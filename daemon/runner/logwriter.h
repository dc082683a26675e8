/*
 * logwriter.h — the writer between a queued job and its log, when gpuctld
 * caps job logs (--log-max-size, lib/jobs/joblog.h). The runner's child
 * forks it before it becomes the job's user: the job's stdout and stderr
 * become a pipe to it, and it appends what comes through to the log,
 * cutting the oldest output before the log would go over the cap, so a job
 * that writes gigabytes a second never fills the disk first. It stays root,
 * in a session of its own, deaf to the signals a job's processes get, and
 * ends when the last of them has closed the pipe. When the log cannot be
 * written (a full disk), gpuctld's log says why, the rest of the output is
 * read and dropped (the job is never held up or sent SIGPIPE), and the job's
 * end learns of it (logwriter_drained): a job that had succeeded is failed,
 * as its own writes to the file would have failed it.
 *
 * The runner keeps one writer per user (logwriter_user_start), forked from
 * it (root, like the runner) when that user's first capped job starts; the
 * runner's child hands it the job's pipe, log and handshake
 * (logwriter_join) instead of forking a writer per job, which cost a fourth
 * of a short job's start (bench/queue.sh). A user's writer reads each of its
 * jobs' pipes in turn, so one job's flood holds the others' output back no
 * longer than one read; another user's jobs have writers of their own. Where
 * there is none (the runner's table is full, the writer is gone or has
 * stopped taking jobs), the child forks a writer for its job alone
 * (logwriter_start). The two behave the same to the job and to readers.
 */
#ifndef GPUCTL_LOGWRITER_H
#define GPUCTL_LOGWRITER_H

#include <stdint.h>
#include <sys/types.h>

#define LOGWRITER_DRAIN_MS 5000  /* how long the job's end waits for its output to reach the log */
#define LOGWRITER_IDLE_MS 10000  /* a user's writer with no log to write this long stops taking jobs and ends */

/*
 * Fork the writer for log (open for reading and writing; the writer keeps
 * it, the caller may close its copy) with the cap max (>= JOBLOG_MIN), path
 * being the log's name for messages; the pipe is given to the job's user
 * uid:gid (its supervisor reopens its stdout by /proc/self/fd, outtail.h); retitle(arg), when not NULL, is called in
 * the writer to say what ps shows for it. *out gets the pipe's write end (the
 * job's stdout and stderr), *ctl the caller's end of the handshake
 * (logwriter_drained); both close-on-exec and above fd 9. The fds in
 * close_in_writer[nclose] are closed in the writer. 0, or -1 with errno.
 */
int logwriter_start(int log, uint64_t max, const char *path, uid_t uid, gid_t gid, void (*retitle)(void *arg),
		    void *arg, const int *close_in_writer, int nclose, int *out, int *ctl);

/*
 * Fork a user's writer (see above); retitle(arg), when not NULL, says what ps
 * shows for it. It keeps the caller's stdin, stdout and stderr (where it
 * says why a log could not be written) and closes every other fd it
 * inherited. *sock gets the end that logwriter_join sends on (close-on-exec).
 * Its pid, or -1 with errno. It ends idle_ms (the runner's: LOGWRITER_IDLE_MS) after its last log
 * when none comes, or once the socket's every other end is closed and its
 * last log is done.
 */
int logwriter_user_start(int idle_ms, void (*retitle)(void *arg), void *arg, int *sock);

/*
 * Hand a capped log to the user's writer on sock, as logwriter_start would
 * fork one for it: the same arguments, *out and *ctl, and the same
 * handshake. 0, or -1 with errno (EPIPE: that writer takes no more jobs;
 * fall back to logwriter_start).
 */
int logwriter_join(int sock, int log, uint64_t max, const char *path, uid_t uid, gid_t gid, int *out, int *ctl);

/*
 * The job has ended, or failed and is to be explained (stdio flushed): ask
 * the writer over ctl to put what is in the pipe now into the log, and wait
 * for it at most LOGWRITER_DRAIN_MS, so that whoever reads the log then
 * (the explanation, gpuctld's diagnosis, gpuctl logs) finds all of it. Its
 * descendants may write on; it may be asked again. 0 (also when it took
 * longer than that), or -1 when the writer could not write some of the
 * output (then every later answer says so too).
 */
int logwriter_drained(int ctl);

#endif
