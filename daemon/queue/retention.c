/*
 * retention.c — the queue's housekeeping (queue-int.h): --log-keep removes
 * the logs of jobs that ended longer ago than that and --job-keep their
 * records, looking again every half of it (at most every hour);
 * --log-user-max keeps each user's logs in all under it, removing the logs
 * of that user's ended jobs, the oldest ended first (a running job's log is
 * never removed: --log-max-size bounds it); and after a restart, the jobs an
 * earlier gpuctld left running are adopted when they still run, recorded
 * from their status when they ended meanwhile, queued again when they never
 * started, and lost otherwise.
 */
#include "queue-int.h"

#include "jobs/joblog.h"
#include "util/clock.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* what one pass removed */
struct prune {
	struct queue *q;
	size_t gone;
};

static void prune_log(void *arg, int64_t id)
{
	struct prune *p = arg;
	char log[4300];
	queue_log_path(p->q, id, log, sizeof log);
	if (unlink(log) == 0)
		p->gone++;
	else if (errno != ENOENT)
		queue_log("cannot remove %s: %s", log, strerror(errno));
}

static long long half_or_hour(long long keep)
{
	return keep / 2 < 3600000 ? (keep / 2 > 100 ? keep / 2 : 100) : 3600000;
}

void retention_prune(struct queue *q)
{
	long long keep = q->o.log_keep_ms, jkeep = q->o.job_keep_ms;
	long long every = keep > 0 && jkeep > 0 ? (half_or_hour(keep) < half_or_hour(jkeep) ? half_or_hour(keep)
											     : half_or_hour(jkeep))
				      : half_or_hour(keep > 0 ? keep : jkeep);
	q->ret.prune_at = clock_mono_ms() + every;
	if (keep > 0) {
		int64_t cut = clock_real_ms() - keep;
		struct prune p = {.q = q};
		if (store_ended(q->st, q->ret.pruned_until, cut, prune_log, &p) < 0) {
			queue_log("cannot list the jobs whose logs are due for removal: %s", store_errmsg(q->st));
			return; /* the same window again next time: the removals are repeatable */
		}
		q->ret.pruned_until = cut;
		if (p.gone)
			queue_log("removed %zu job log%s older than --log-keep", p.gone, p.gone == 1 ? "" : "s");
	}
	if (jkeep > 0) {
		/* records go, with the logs they still have (a --job-keep shorter than --log-keep) */
		int64_t cut = clock_real_ms() - jkeep;
		struct prune p = {.q = q};
		if (store_ended(q->st, 0, cut, prune_log, &p) < 0)
			return;
		int gone = store_forget(q->st, cut);
		if (gone < 0)
			queue_log("cannot forget the jobs that ended before --job-keep: %s", store_errmsg(q->st));
		else if (gone)
			queue_log("forgot %d job%s that ended longer ago than --job-keep", gone, gone == 1 ? "" : "s");
	}
}

/* a log in --log-dir, as the look at each user's logs in all sees it */
struct ulog {
	int64_t id;
	uid_t uid;            /* its owner: the job's user (the runner gives it the file) */
	uint64_t size;
	int64_t ended_ms;     /* when its job ended; INT64_MAX: it has not (queued again, running) */
};

static int by_uid(const void *a, const void *b)
{
	const struct ulog *x = a, *y = b;
	return x->uid < y->uid ? -1 : x->uid > y->uid;
}

static int by_end(const void *a, const void *b)
{
	const struct ulog *x = a, *y = b;
	if (x->ended_ms != y->ended_ms)
		return x->ended_ms < y->ended_ms ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* "ID.log" (digits only): its id, else -1 */
static int64_t log_id(const char *name)
{
	int64_t id = 0;
	size_t i = 0;
	for (; name[i] >= '0' && name[i] <= '9'; i++) {
		if (i >= 18)
			return -1;
		id = id * 10 + (name[i] - '0');
	}
	return i > 0 && strcmp(name + i, ".log") == 0 ? id : -1;
}

void retention_users_soon(struct queue *q)
{
	if (!q->o.log_user_max)
		return;
	long long at = q->ret.users_last ? q->ret.users_last + RETENTION_USERS_MIN_MS : clock_mono_ms();
	if (!q->ret.users_at || at < q->ret.users_at)
		q->ret.users_at = at;
}

/* user u's logs (v[n], by end), over the limit by their total: the oldest ended go until under it */
static void trim_user(struct queue *q, int dfd, struct ulog *v, size_t n, uint64_t total)
{
	qsort(v, n, sizeof *v, by_end);
	size_t gone = 0;
	uint64_t freed = 0;
	char name[32];
	for (size_t i = 0; i < n && total > q->o.log_user_max && v[i].ended_ms != INT64_MAX; i++) {
		snprintf(name, sizeof name, "%lld.log", (long long)v[i].id);
		if (unlinkat(dfd, name, 0) < 0) {
			if (errno != ENOENT)
				queue_log("cannot remove %s/%s: %s", q->o.log_dir, name, strerror(errno));
			continue;
		}
		total -= v[i].size < total ? v[i].size : total;
		freed += v[i].size;
		gone++;
	}
	if (!gone)
		return;
	char user[64], buf[1024], lim[32];
	struct passwd pw, *res = NULL;
	if (getpwuid_r(v[0].uid, &pw, buf, sizeof buf, &res) == 0 && res)
		snprintf(user, sizeof user, "%s", pw.pw_name);
	else
		snprintf(user, sizeof user, "uid %u", (unsigned)v[0].uid);
	joblog_size_text(q->o.log_user_max, lim, sizeof lim);
	queue_log("removed %zu log%s of %s's ended jobs (%llu bytes, the oldest first): their logs were over "
		  "--log-user-max %s", gone, gone == 1 ? "" : "s", user, (unsigned long long)freed, lim);
}

void retention_users(struct queue *q)
{
	long long now = clock_mono_ms();
	q->ret.users_last = now;
	q->ret.users_at = q->o.log_user_max ? now + RETENTION_USERS_MS : 0;
	if (!q->o.log_user_max)
		return;
	int dfd = open(q->o.log_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (!d) {
		queue_log("cannot read the job log directory '%s': %s", q->o.log_dir, strerror(errno));
		if (dfd >= 0)
			close(dfd);
		return;
	}
	struct ulog *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		int64_t id = log_id(e->d_name);
		struct stat st;
		if (id < 0 || fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (n == cap) {
			struct ulog *g = realloc(v, (cap = cap ? cap * 2 : 256) * sizeof *v);
			if (!g)
				break; /* the rest next time */
			v = g;
		}
		/* a log whose job is gone from the queue (an older database's) ended at its last write */
		v[n++] = (struct ulog){.id = id, .uid = st.st_uid, .size = (uint64_t)st.st_size,
				      .ended_ms = (int64_t)st.st_mtime * 1000};
	}
	if (n)
		qsort(v, n, sizeof *v, by_uid); /* v is NULL when there is no log */
	for (size_t i = 0, j; i < n; i = j) {
		uint64_t total = 0;
		for (j = i; j < n && v[j].uid == v[i].uid; j++)
			total += v[j].size;
		if (total <= q->o.log_user_max)
			continue;
		bool ok = true;
		for (size_t k = i; k < j && ok; k++) {
			int64_t end;
			int r = store_end_of(q->st, v[k].id, &end);
			if (r < 0) {
				queue_log("cannot look up job %lld for --log-user-max: %s", (long long)v[k].id, store_errmsg(q->st));
				ok = false; /* nothing removed on a guess: next time */
			} else if (r == 0) {
				v[k].ended_ms = INT64_MAX; /* queued again or running: its log stays */
			} else if (r == 1) {
				v[k].ended_ms = end;
			}
		}
		if (ok)
			trim_user(q, dfd, v + i, j - i, total);
	}
	free(v);
	closedir(d);
}

/* after a restart: the jobs that were running when the daemon went away */
void retention_recover(struct queue *q)
{
	/* a page at a time: the queued jobs' command lines need not all be in memory at once */
	for (int64_t from = 0;;) {
		struct store_job *v;
		size_t n;
		if (store_list(q->st, false, false, 0, -1, from, 256, 0, &v, &n) < 0)
			return;
		if (n == 0) {
			store_list_free(v, n);
			return;
		}
		from = v[n - 1].id;
		for (size_t i = 0; i < n; i++) {
			if (v[i].state != STORE_RUNNING)
				continue;
			uint64_t ps = v[i].pid > 0 ? queue_proc_start(v[i].pid) : 0;
			bool alive = ps != 0 && ps == v[i].pid_start;
			if (alive) {
				round_adopt(q, &v[i]);
			} else {
				bool ran;
				int code;
				int st = round_read_status(q, v[i].uid, v[i].id, &ran, &code, NULL, NULL);
				if ((st && !ran) || (!st && v[i].pid == 0)) {
					/* it never ran: forked too late, or not at all */
					store_requeue(q->st, v[i].id, "gpuctld stopped before it could start");
					queue_log("job %lld never started before gpuctld stopped: queued again", (long long)v[i].id);
				} else if (st) {
					/* it ended while gpuctld was away and left its status */
					store_finish(q->st, v[i].id, code == 0 ? STORE_DONE : STORE_FAILED, code,
						     code ? "exit status left while gpuctld was away" : "", clock_real_ms());
				} else {
					round_lost(q, v[i].id, "while gpuctld was away");
				}
			}
		}
		store_list_free(v, n);
	}
}
