/*
 * spawnreq.h — what gpuctld and its job runner (gpuctld-runner) say
 * to each other over a Unix stream socket. gpuctld sends one request per
 * job: a header, then a payload holding the user (uid, gid, groups), the
 * working directory, the job's log (which the runner's child creates, as
 * root, for the user), the job itself (the GPUs dispatch chose, its name,
 * where its exit status goes, its supervisor options and its command) and
 * the environment; the
 * job's stdin and go pipe travel with the header as SCM_RIGHTS. The
 * runner answers with fixed-size records: HELLO once, SPAWNED for each
 * request (in order), EXITED whenever one of its children ends.
 *
 * Only the byte layout lives here (both ends are built from the same
 * tree); sockets, forks and credentials are the callers'.
 */
#ifndef GPUCTL_LIB_SPAWNREQ_H
#define GPUCTL_LIB_SPAWNREQ_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SPAWNREQ_MAGIC 0x67707235u     /* "gpr5": bumped when the layout changes */
#define SPAWNREQ_MAX (4u << 20)        /* a payload, environment included */
#define SPAWNREQ_MAX_GROUPS 65536u     /* NGROUPS_MAX on Linux */
#define SPAWNREQ_NFDS 2                /* stdin, the go pipe (SPAWNREQ_GO_FD in the job) */
#define SPAWNREQ_GO_FD 3               /* where the runner's child puts the go pipe */

struct spawnreq_hdr {
	uint32_t magic;
	uint32_t len;                   /* payload bytes that follow */
};

/* A job to start. Decoded requests point into the payload they came from. */
struct spawnreq {
	uid_t uid;
	gid_t gid;
	size_t ngroups;
	gid_t *groups;                  /* ngroups supplementary groups */
	const char *cwd;
	const char *log;                /* stdout and stderr: created if missing, owned by uid */
	uint64_t log_max;               /* the log's cap (lib/jobs/joblog.h), bytes; 0: none */
	/* the job, as gpuctl run takes it, in the runner's child (daemon/runner/job.c) */
	const char *placed;             /* the GPUs, "INDEX=UUID,…": chosen and checked by gpuctld */
	const char *name;               /* its lease's name ("job-ID[-NAME]") */
	const char *status;             /* the user's status file: the exit status goes there */
	uint64_t slot;                  /* ... as job `slot`'s record (jobstatus.h), >= 1 */
	uint32_t retries;               /* --retry-on retries spent by its earlier starts */
	size_t nopts;
	char **opts;                    /* nopts supervisor options ("--NAME[=VALUE]", as queued), NULL-terminated */
	size_t argc;
	char **argv;                    /* the command: argc strings, NULL-terminated */
	size_t envc;
	char **env;                     /* envc "NAME=value" strings, NULL-terminated */
};

enum spawnrec_kind {
	SPAWNREC_HELLO = 1,             /* value: SPAWNREQ_MAGIC (the runner speaks this layout) */
	SPAWNREC_SPAWNED = 2,           /* pid, or pid 0 and value an errno: the fork failed */
	SPAWNREC_EXITED = 3,            /* pid ended; value: its wait status */
};

struct spawnrec {
	int32_t kind;
	int32_t pid;
	int32_t value;
	int32_t pad;
};

/*
 * Encode r into a header and payload in one buffer (*out, caller frees with
 * free(); *len bytes). 0, or a negative GC_E* code (GC_EINVAL: too large or
 * argc 0; GC_ENOMEM).
 */
int spawnreq_encode(const struct spawnreq *r, char **out, size_t *len);

/*
 * Decode a payload of len bytes (not the header) into *r, whose strings
 * point into payload; r->groups, r->argv and r->env are allocated (release
 * with spawnreq_release). 0, or GC_EINVAL for a payload that is cut short,
 * has counts that do not fit its size, or strings without their NUL;
 * GC_ENOMEM.
 */
int spawnreq_decode(char *payload, size_t len, struct spawnreq *r);
void spawnreq_release(struct spawnreq *r);

/*
 * The file descriptors a received message carried (SCM_RIGHTS), the first
 * max of them into fds; any more are closed. How many were taken.
 */
struct msghdr;
size_t spawnreq_fds(struct msghdr *m, int *fds, size_t max);

/*
 * The other way: m's control data carry fds[0..n) (SCM_RIGHTS), written in
 * buf (len bytes: at least CMSG_SPACE(n * sizeof(int)), aligned for a
 * struct cmsghdr). 0, or -1 when buf is too small.
 */
int spawnreq_put_fds(struct msghdr *m, void *buf, size_t len, const int *fds, size_t n);

#endif
