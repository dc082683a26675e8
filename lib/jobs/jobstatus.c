/*
 * jobstatus.c — queued jobs' exit records in one file per user (see
 * jobstatus.h).
 */
#include "jobs/jobstatus.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static off_t slot(int64_t id)
{
	return (off_t)((uint64_t)id % JOBSTATUS_SLOTS) * JOBSTATUS_REC;
}

static int put(int fd, int64_t id, const char *rec)
{
	ssize_t n;
	do
		n = pwrite(fd, rec, JOBSTATUS_REC, slot(id));
	while (n < 0 && errno == EINTR);
	if (n == (ssize_t)JOBSTATUS_REC)
		return 0;
	if (n >= 0)
		errno = ENOSPC; /* a short write: the disk is full */
	return -1;
}

int jobstatus_write(int fd, int64_t id, bool ran, int status, int end, unsigned retries)
{
	char rec[JOBSTATUS_REC + 16] = {0};
	int n = snprintf(rec, sizeof rec, "%lld %d %d %d %u\n", (long long)id, ran ? 1 : 0, status,
			 end < 0 || end > 99 ? -1 : end, retries);
	if (n < 0 || n >= (int)JOBSTATUS_REC) {
		/* an id too long for the retries beside it: the record without them */
		memset(rec, 0, sizeof rec);
		snprintf(rec, JOBSTATUS_REC, "%lld %d %d %d\n", (long long)id, ran ? 1 : 0, status,
			 end < 0 || end > 99 ? -1 : end);
	}
	return put(fd, id, rec);
}

int jobstatus_clear(int fd, int64_t id)
{
	static const char zero[JOBSTATUS_REC];
	return put(fd, id, zero);
}

int jobstatus_read(int fd, int64_t id, bool *ran, int *status, int *end, unsigned *retries)
{
	char rec[JOBSTATUS_REC + 1];
	ssize_t n;
	do
		n = pread(fd, rec, JOBSTATUS_REC, slot(id));
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -1;
	rec[n] = '\0';
	long long rid;
	int r, s, e = -1;
	unsigned rt = 0;
	rec[strcspn(rec, "\n")] = '\0';
	int got = sscanf(rec, "%lld %d %d %d %u", &rid, &r, &s, &e, &rt);
	if (got < 3 || rid != (long long)id || s < 0 || s > 255)
		return 0;
	*ran = r != 0;
	*status = s;
	if (end)
		*end = got >= 4 && e >= 0 && e <= 99 ? e : -1;
	if (retries)
		*retries = got == 5 && rt <= 100000 ? rt : 0;
	return 1;
}
