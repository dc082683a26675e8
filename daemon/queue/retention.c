/*
 * retention.c — the queue's housekeeping (queue-int.h): --log-keep removes
 * the logs of jobs that ended longer ago than that and --job-keep their
 * records, looking again every half of it (at most every hour); and after
 * a restart, the jobs an earlier gpuctld left running are adopted when
 * they still run, recorded from their status when they ended meanwhile,
 * queued again when they never started, and lost otherwise.
 */
#include "queue-int.h"

#include "util/clock.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
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

/* after a restart: the jobs that were running when the daemon went away */
void retention_recover(struct queue *q)
{
	/* a page at a time: the queued jobs' command lines need not all be in memory at once */
	for (int64_t from = 0;;) {
		struct job *v;
		size_t n;
		if (store_list(q->st, false, false, 0, from, 256, 0, &v, &n) < 0)
			return;
		if (n == 0) {
			store_list_free(v, n);
			return;
		}
		from = v[n - 1].id;
		for (size_t i = 0; i < n; i++) {
			if (v[i].state != JOB_RUNNING)
				continue;
			uint64_t ps = v[i].pid > 0 ? queue_proc_start(v[i].pid) : 0;
			bool alive = ps != 0 && ps == v[i].pid_start;
			if (alive) {
				round_adopt(q, &v[i]);
			} else {
				bool ran;
				int code;
				int st = round_read_status(q, v[i].uid, v[i].id, &ran, &code, NULL);
				if ((st && !ran) || (!st && v[i].pid == 0)) {
					/* it never ran: forked too late, or not at all */
					store_requeue(q->st, v[i].id, "gpuctld stopped before it could start");
					queue_log("job %lld never started before gpuctld stopped: queued again", (long long)v[i].id);
				} else if (st) {
					/* it ended while gpuctld was away and left its status */
					store_finish(q->st, v[i].id, code == 0 ? JOB_DONE : JOB_FAILED, code,
						     code ? "exit status left while gpuctld was away" : "", clock_real_ms());
				} else {
					round_lost(q, v[i].id, "while gpuctld was away");
				}
			}
		}
		store_list_free(v, n);
	}
}
