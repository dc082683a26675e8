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
 */
#ifndef GPUCTL_LOGWRITER_H
#define GPUCTL_LOGWRITER_H

#include <stdint.h>
#include <sys/types.h>

#define LOGWRITER_DRAIN_MS 5000  /* how long the job's end waits for its output to reach the log */

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
 * The job has ended (stdio flushed): ask the writer over ctl to put what is
 * in the pipe now into the log, and wait for it at most LOGWRITER_DRAIN_MS,
 * so that whoever reads the log once the job is known to have ended (gpuctld's
 * diagnosis, gpuctl logs) finds all of it. Its descendants may write on.
 * 0 (also when it took longer than that), or -1 when the writer could not
 * write some of the output.
 */
int logwriter_drained(int ctl);

#endif
