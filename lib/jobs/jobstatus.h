/*
 * jobstatus.h — how a queued job ended, as its gpuctl run leaves it for
 * gpuctld (which may have been restarted meanwhile). One file per user,
 * shared by all that user's jobs (gpuctld creates it, owned by the user),
 * holds one fixed-size record per job at slot ID % JOBSTATUS_SLOTS:
 * "ID RAN STATUS END RETRIES\n", NUL-padded; END is how the supervisor saw
 * it end (enum supervise_end's value; -1, or absent in an older record:
 * unknown), RETRIES the --retry-on retries spent in all (absent in an older
 * record, or beside an id too long for it: 0). A record is written with one pwrite and
 * read with one pread, so no job costs a file of its own; a slot that is
 * empty or names another job says nothing about this one.
 */
#ifndef GPUCTL_LIB_JOBSTATUS_H
#define GPUCTL_LIB_JOBSTATUS_H

#include <stdbool.h>
#include <stdint.h>

#define JOBSTATUS_REC 32u
#define JOBSTATUS_SLOTS (1u << 20)  /* the file stays under 32 MiB */

/* Record job id's end in the file open on fd: 0, or -1 with errno. */
int jobstatus_write(int fd, int64_t id, bool ran, int status, int end, unsigned retries);
/* Empty job id's slot (before it starts, again): 0, or -1 with errno. */
int jobstatus_clear(int fd, int64_t id);
/*
 * Job id's record from fd: 1 with *ran, *status (0-255), and *end (-1
 * unknown) and *retries when not NULL, 0 when its slot holds nothing for it, -1 with errno when
 * the file cannot be read.
 */
int jobstatus_read(int fd, int64_t id, bool *ran, int *status, int *end, unsigned *retries);

#endif
