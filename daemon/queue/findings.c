/*
 * findings.c — a failed queued job explained from the tail of its log
 * (issue 24): the findings kept with the job (show, --json), counted by
 * class (/metrics) and carried by its job.failed event. The log is the
 * job's user's file: opened without following a link or blocking, read
 * only when it is a regular file, at most its last DIAG_TAIL bytes.
 */
#include "queue-int.h"

#include "diagnose/explain.h"
#include "util/datadir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DIAG_TAIL (1u << 20)
#define DIAG_FINDINGS 3

/* the signatures, loaded once, at the first failure; NULL when they cannot be (said once) */
static struct explain_db *db_of(struct queue *q)
{
	if (q->diag.db || q->diag.db_failed)
		return q->diag.db;
	char dir[4200], err[512];
	if (datadir_signatures(dir, sizeof dir, err, sizeof err) != GC_OK ||
	    explain_db_load(&q->diag.db, dir, err, sizeof err) != GC_OK) {
		queue_log("failed jobs are not explained: %s", err);
		q->diag.db_failed = true;
		q->diag.db = NULL;
	}
	return q->diag.db;
}

/* the last DIAG_TAIL bytes of job id's log into *buf (free()); its length, 0 when none */
static size_t log_tail(const struct queue *q, int64_t id, char **buf)
{
	*buf = NULL;
	char path[4300];
	queue_log_path(q, id, path, sizeof path);
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	struct stat st;
	size_t got = 0;
	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
		size_t want = st.st_size > (off_t)DIAG_TAIL ? DIAG_TAIL : (size_t)st.st_size;
		off_t from = st.st_size - (off_t)want;
		*buf = malloc(want + 1);
		while (*buf && got < want) {
			ssize_t r = pread(fd, *buf + got, want - got, from + (off_t)got);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				break;
			got += (size_t)r;
		}
	}
	if (fd >= 0)
		close(fd);
	if (!got) {
		free(*buf);
		*buf = NULL;
	}
	return got;
}

#define MARK "gpuctld: job "
#define MARK_END " queued again"

void findings_mark(const struct queue *q, int64_t id, uid_t uid, const char *why)
{
	char path[4300];
	queue_log_path(q, id, path, sizeof path);
	int fd = open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	struct stat st;
	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == uid) {
		char line[600];
		int n = snprintf(line, sizeof line, "\n" MARK "%lld" MARK_END ": %s\n", (long long)id, why);
		if (n > 0)
			(void)!write(fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
	}
	if (fd >= 0)
		close(fd);
}

/* where the last start's output begins in text: after the last "queued again" mark, else 0 */
static size_t last_start(const char *text, size_t len, int64_t id)
{
	char mark[96];
	int ml = snprintf(mark, sizeof mark, "\n" MARK "%lld" MARK_END, (long long)id);
	size_t from = 0;
	for (const char *p = text; ml > 0 && (p = memmem(p, len - (size_t)(p - text), mark, (size_t)ml)); p++)
		from = (size_t)(p - text) + (size_t)ml;
	return from;
}

json_t *findings_of_job(struct queue *q, int64_t id, char *cls, size_t clslen)
{
	snprintf(cls, clslen, "unknown");
	struct explain_db *db = db_of(q);
	char *text = NULL;
	size_t len = db ? log_tail(q, id, &text) : 0;
	/* a job queued again appends to its log: only this start's output is its failure */
	size_t from = len ? last_start(text, len, id) : 0;
	struct explain_result r = {0};
	json_t *a = NULL;
	if (len > from && explain_scan_buf(db, text + from, len - from, &r) == GC_OK && r.n) {
		explain_class(&r.findings[r.root], cls, clslen);
		a = explain_summary_json(&r, DIAG_FINDINGS); /* the root cause first */
	}
	explain_result_free(&r);
	free(text);
	return a;
}

void findings_free(struct queue *q)
{
	explain_db_free(q->diag.db);
	q->diag.db = NULL;
}
