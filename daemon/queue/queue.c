/*
 * queue.c — gpuctld's job queue server (see queue.h): its thread and its
 * poll loop, start and stop. The parts, each with its own state, are
 * described in queue-int.h: the client server (clients.c, requests.c), the
 * job runner's link (runner-link.c), the dispatch round (round.c), the
 * view for /metrics and /api/v1/jobs (view.c), and log retention and
 * recovery (retention.c).
 *
 * One thread, one poll loop: the listening socket, the clients, a pidfd
 * per adopted job, the runner's socket and the lease directory's inotify
 * descriptor. Anything that can free or take a GPU runs a round in the
 * same turn of the loop; there is no timer.
 */
#include "queue-int.h"

#include "util/clock.h"
#include "util/errbuf.h"
#include "util/pidlock.h"
#include "device/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

void queue_log(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("gpuctld: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/*
 * field 22 of /proc/PID/stat: when the process started, to tell it from a
 * later one with its pid; 0 when there is none, or only its zombie (a
 * killed runner whose new parent has not reaped it yet is not running)
 */
uint64_t queue_proc_start(pid_t pid)
{
	char st = 0;
	unsigned long long v = 0;
	return proc_stat(pid, &st, NULL, &v) == 0 && st != 'Z' && st != 'X' ? v : 0;
}

/* the files in --log-dir: a job's output, and how one user's jobs ended (lib/jobs/jobstatus.h) */
void queue_log_path(const struct queue *q, int64_t id, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%lld.log", q->o.log_dir, (long long)id);
}

/* is job id's log there, a file? (the runner's child creates it) */
bool queue_log_made(const struct queue *q, int64_t id)
{
	char log[4300];
	queue_log_path(q, id, log, sizeof log);
	struct stat st;
	return lstat(log, &st) == 0 && S_ISREG(st.st_mode);
}

void queue_status_path(const struct queue *q, uid_t uid, char *buf, size_t len)
{
	snprintf(buf, len, "%s/user-%u.status", q->o.log_dir, (unsigned)uid);
}

/* poll's timeout: wait ms, or less to be back by monotonic ms `at` (0: no such time) */
static int sooner(int wait, long long at)
{
	if (!at)
		return wait;
	long long d = at - clock_mono_ms();
	return d < 0 ? 0 : d < wait ? (int)d : wait;
}

static void *loop(void *arg)
{
	struct queue *q = arg;
	grants_recover(q);
	retention_recover(q);
	if (q->o.log_keep_ms > 0 || q->o.job_keep_ms > 0)
		q->ret.prune_at = clock_mono_ms(); /* at once, then every half --log-keep or --job-keep */
	retention_users_soon(q); /* at once, then when jobs end and every minute */
	q->round.dirty = q->round.deps_dirty = true;
	round_settle(q);
	if (q->view.render_at)
		view_render(&q->view, q->st);
	for (;;) {
		struct pollfd p[4 + MAX_CLIENTS + MAX_RUNNING + 1 + MAX_GRANTS + MAX_WAITERS];
		size_t np = 0;
		p[np++] = (struct pollfd){.fd = q->stopfd, .events = POLLIN};
		p[np++] = (struct pollfd){.fd = q->clients.lfd, .events = POLLIN};
		int wfd = q->round.leases ? lease_watch_fd(q->round.leases) : -1;
		p[np++] = (struct pollfd){.fd = wfd, .events = POLLIN};
		p[np++] = (struct pollfd){.fd = q->runner.rfd, .events = POLLIN};
		for (size_t i = 0; i < q->clients.ncl; i++)
			p[np++] = (struct pollfd){.fd = q->clients.cl[i].fd, .events = q->clients.cl[i].out ? POLLOUT : POLLIN};
		/* the runner's children end through its records; adopted jobs through their pidfds */
		for (size_t i = 0; i < q->round.nrun; i++)
			p[np++] = (struct pollfd){.fd = q->round.run[i].child ? -1 : q->round.run[i].pidfd, .events = POLLIN};
		size_t gbase = np;
		np += grants_poll(q, p + np, sizeof p / sizeof p[0] - np);
		if (poll(p, np, sooner(sooner(sooner(sooner(1000, q->view.render_at), q->ret.prune_at), q->usage.due_ms),
				       q->ret.users_at)) < 0 &&
		    errno != EINTR)
			break;
		if (p[0].revents)
			break;
		size_t ncl = q->clients.ncl; /* the clients in p[]: an accepted one is served as it comes */
		if (p[1].revents & POLLIN)
			clients_accept(&q->clients);
		bool changed = wfd >= 0 && (p[2].revents & POLLIN);
		if (changed) {
			lease_watch_drain(q->round.leases);
			q->round.dirty = true;
		}
		if (!q->grants.on)
			usage_observe(q, changed); /* authority mode: grants.c records usage itself */
		grants_ready(q, p + gbase, np - gbase);
		grants_tick(q);
		/* clients and jobs, from the end so removal does not skip one */
		size_t base = 4;
		for (size_t i = ncl; i-- > 0;)
			if (p[base + i].revents)
				clients_ready(&q->clients, i);
		base += ncl;
		clients_expire(&q->clients, clock_mono_ms());
		for (size_t i = q->round.nrun; i-- > 0;)
			if (p[base + i].revents || (!q->round.run[i].child && q->round.run[i].pidfd < 0))
				round_collect_end(q, i);
		/* after the loop above: ends reorder run[], which p[] follows */
		if (q->runner.rfd >= 0 && p[3].revents && runner_link_read(&q->runner) < 0)
			runner_link_down(&q->runner, "it went away; its jobs are adopted");
		round_runner_exits(q);
		if (q->round.nfin)
			retention_users_soon(q); /* jobs ended: their logs may now go */
		if (q->round.dirty || q->round.nfin)
			round_settle(q);
		if (q->view.render_at && clock_mono_ms() >= q->view.render_at)
			view_render(&q->view, q->st);
		if (q->ret.prune_at && clock_mono_ms() >= q->ret.prune_at)
			retention_prune(q);
		if (q->ret.users_at && clock_mono_ms() >= q->ret.users_at)
			retention_users(q);
	}
	if (!q->grants.on)
		usage_stop(q); /* a grant is recorded once, when it ends, whatever restarts come between */
	return NULL;
}

/* the pidlock PATH.lock into *fd; when another gpuctld holds it, "WHAT 'PATH' is served by pid N" */
static int take_lock(int *fd, const char *path, const char *what, char *err, size_t errlen)
{
	char lock[PATH_MAX];
	if (snprintf(lock, sizeof lock, "%s.lock", path) >= (int)sizeof lock) {
		errbuf_set(err, errlen, "the path '%s' is too long", path);
		return -1;
	}
	pid_t holder;
	*fd = pidlock_take(lock, geteuid(), &holder, err, errlen);
	if (*fd == -EWOULDBLOCK) {
		if (holder > 0)
			errbuf_set(err, errlen, "%s '%s' is served by pid %ld", what, path, (long)holder);
		else
			errbuf_set(err, errlen, "%s '%s' is served by another gpuctld (it holds '%s')", what, path, lock);
	}
	return *fd < 0 ? -1 : 0;
}

int queue_open(struct queue **out, const struct queue_opts *o, char *err, size_t errlen)
{
	*out = NULL;
	struct queue *q = calloc(1, sizeof *q);
	if (!q) {
		errbuf_set(err, errlen, "out of memory");
		return -1;
	}
	q->o = *o;
	q->clients.lfd = q->stopfd = q->dblock = q->socklock = -1;
	q->clients.admin_gid = o->admin_gid;
	q->clients.answer = requests_answer;
	q->clients.arg = q;
	view_init(&q->view);
	runner_link_init(&q->runner, q->o.runner, -1, round_runner_down, q);
	q->runner.log_max = o->log_max;
	/* /dev/null for the jobs' stdin; fds 0-2 taken first if the daemon was started without them */
	while ((q->nullfd = open("/dev/null", O_RDWR)) >= 0 && q->nullfd < 3)
		;
	if (q->nullfd >= 0)
		fcntl(q->nullfd, F_SETFD, FD_CLOEXEC);
	q->runner.nullfd = q->nullfd;
	struct stat st;
	if (mkdir(o->log_dir, 0711) < 0 && errno != EEXIST) {
		errbuf_set(err, errlen, "cannot create the job log directory '%s': %s", o->log_dir, strerror(errno));
		goto fail;
	}
	if (stat(o->log_dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		errbuf_set(err, errlen, "invalid --log-dir '%s': not a directory", o->log_dir);
		goto fail;
	}
	const char *why = stat(o->runner, &st) < 0 || access(o->runner, X_OK) < 0 ? strerror(errno)
			  : !S_ISREG(st.st_mode)				      ? "not a regular file"
										      : NULL;
	if (why) {
		errbuf_set(err, errlen, "cannot run the job runner '%s': %s (gpuctl is not installed whole)", o->runner,
			   why);
		goto fail;
	}
	if (stat(o->db, &st) == 0 && !S_ISREG(st.st_mode)) {
		errbuf_set(err, errlen, "invalid --queue-db '%s': not a regular file", o->db);
		goto fail;
	}
	/* one gpuctld per database and per socket: the second refuses, naming the first */
	if (take_lock(&q->dblock, o->db, "the queue at", err, errlen) < 0 ||
	    take_lock(&q->socklock, o->socket, "the queue socket", err, errlen) < 0)
		goto fail;
	if (store_open(&q->st, o->db, err, errlen) < 0)
		goto fail;
	if (o->authority_dir)
		grants_init(q);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	if (strlen(o->socket) >= sizeof a.sun_path) {
		errbuf_set(err, errlen, "socket path '%s' is too long", o->socket);
		goto fail;
	}
	strcpy(a.sun_path, o->socket);
	q->clients.lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	(void)unlink(o->socket); /* a stale socket of an earlier gpuctld */
	if (q->clients.lfd < 0 || bind(q->clients.lfd, (struct sockaddr *)&a, sizeof a) < 0 || chmod(o->socket, 0666) < 0 ||
	    listen(q->clients.lfd, 64) < 0) {
		errbuf_set(err, errlen, "cannot listen on '%s': %s", o->socket, strerror(errno));
		goto fail;
	}
	*out = q;
	return 0;
fail:
	queue_stop(q);
	return -1;
}

int queue_run(struct queue *q, struct sampler *s, struct notify *nt, char *err, size_t errlen)
{
	q->s = s;
	q->o.notify = nt;
	q->stopfd = eventfd(0, EFD_CLOEXEC);
	if (q->stopfd < 0 || (errno = pthread_create(&q->thread, NULL, loop, q)) != 0) {
		errbuf_set(err, errlen, "cannot start the queue thread: %s", strerror(errno));
		return -1;
	}
	q->started = true;
	if (q->o.authority_dir) {
		/* serving: now clients may know that leases are ours to grant. The marker stays when we
		 * stop, so that they wait for us instead of falling back to claim files */
		char marker[PATH_MAX];
		snprintf(marker, sizeof marker, "%s/%s", q->o.authority_dir, AUTHORITY_MARKER);
		int mfd = open(marker, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (mfd < 0 || fchmod(mfd, 0644) < 0 || dprintf(mfd, "gpuctld %ld\n", (long)getpid()) < 0) {
			errbuf_set(err, errlen, "cannot write the authority marker '%s': %s", marker, strerror(errno));
			if (mfd >= 0)
				close(mfd);
			return -1;
		}
		close(mfd);
	}
	return 0;
}

void queue_stop(struct queue *q)
{
	if (!q)
		return;
	if (q->started) {
		uint64_t one = 1;
		(void)!write(q->stopfd, &one, sizeof one);
		pthread_join(q->thread, NULL);
	}
	clients_close(&q->clients);
	grants_free(q); /* the grants stay in the store: the next gpuctld keeps those still held */
	runner_link_free(&q->runner); /* the jobs it started run on */
	round_free(&q->round);
	if (q->clients.lfd >= 0) {
		close(q->clients.lfd);
		unlink(q->o.socket); /* ours: socklock is held until here */
	}
	if (q->socklock >= 0)
		close(q->socklock);
	if (q->dblock >= 0)
		close(q->dblock);
	if (q->stopfd >= 0)
		close(q->stopfd);
	if (q->nullfd >= 0)
		close(q->nullfd);
	store_close(q->st);
	view_free(&q->view);
	findings_free(q);
	free(q);
}
