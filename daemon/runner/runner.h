/*
 * runner.h — gpuctld-runner, gpuctld's job runner: one long-lived process
 * that gpuctld starts (the program beside it, else in gpuctl's libexec
 * directory) and talks to over a socket (lib/jobs/spawnreq.h). For each
 * request it forks a child that becomes the job's user and runs the job
 * in-process (job.c: the library's job_exec, as `gpuctl run` does),
 * without an exec and without a command line: the per-job cost of starting
 * a program (exec, dynamic linking) is paid once. It links the library
 * only.
 */
#ifndef GPUCTL_RUNNER_H
#define GPUCTL_RUNNER_H

/*
 * Serve gpuctld on the socket fd `arg` names ("3"): HELLO, then a SPAWNED
 * record for each request and an EXITED record for each child that ends,
 * until gpuctld closes its end. Each child runs job_fn(request) with the
 * request's environment and exits with what it returns. Returns the exit
 * code: 2 for a bad fd, 0 at end of file, 1 when the socket fails or a
 * request is malformed. argv is the process's own (main's): each child
 * writes its title over it, for ps.
 */
struct spawnreq;
int runner_serve(char **argv, const char *arg, int (*job_fn)(const struct spawnreq *r));

/*
 * In a runner's child whose job has ended: stdio flushed, and, when its log
 * has a writer (a capped log, logwriter.h), what the job wrote put into the
 * log before anyone is told the job ended. 0, or -1 when the writer could
 * not write it all (a full disk; it said so on gpuctld's log). Done once;
 * at exit when not before.
 */
int runner_log_drained(void);

/*
 * The same handshake, at any time (a failure to explain): 0, or -1 when
 * some output could not be written.
 */
int runner_log_sync(void);

/*
 * In a runner's child whose log has a writer: the log open for reading, at
 * RUNNER_LOG_FD (close-on-exec), from which a failure's tail is read back
 * (outtail_open_log); else -1.
 */
#define RUNNER_LOG_FD 5
int runner_log_fd(void);

/* "gpuctld-runner: MESSAGE" on stderr (gpuctld's, or in a child the job's log) */
void runner_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
