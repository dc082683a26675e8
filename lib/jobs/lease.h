/*
 * lease.h — per-GPU leases on this host, and the queue of those waiting.
 *
 * A lease is a lock on a claim file per GPU in a state directory shared by
 * every user of the machine; each user locks and writes only files it made
 * itself, so no user can hold, break or forge another's (lease.c says how).
 * The kernel drops the lock when the last process holding the file dies —
 * even by SIGKILL — so a crashed job never leaves a GPU taken. Waiters take
 * tickets and are served first come, first served; a waiter that dies leaves
 * the queue the same way. Release is seen by waiters through inotify within
 * milliseconds. Policy (which GPUs) lives in select.c; this file only knows
 * UUIDs.
 */
#ifndef GPUCTL_LIB_LEASE_H
#define GPUCTL_LIB_LEASE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define LEASE_UUID_MAX 96

/* Who holds a lease (or waits in the queue), as recorded for display. */
struct lease_info {
	pid_t pid;          /* the job's process (group leader) */
	pid_t supervisor;   /* the gpuctl process that took the lease */
	uid_t uid;          /* read back: the claim's owner, whatever the record says */
	char user[33];
	int64_t since;      /* seconds since the epoch */
	char name[64];      /* --name, or "" */
	char command[256];  /* the command line, truncated */
	char request[128];  /* queue tickets: what is asked for ("2 GPUs") */
	unsigned want;      /* queue tickets: how many GPUs, for the waiters behind (≥ 1) */
	/* set by readers (lease_peek, lease_list), not stored: the job and its supervisor have
	 * exited but the lease is still held, by a process the job left behind */
	bool orphan;
	pid_t live;         /* with orphan: a process that holds it now; 0 when none can be seen */
	uint64_t grant;     /* authority mode: gpuctld's number for the grant (authority.h); 0 otherwise */
};

struct lease_dir;
struct lease;
struct lease_ticket;

/* Fill a lease_info for this process: uid, since, name (NULL: none), command line
 * (argv, NULL-terminated, or NULL), request (NULL: none); user stays "": a record's
 * reader names its file's owner, gpuctld the connection's. */
void lease_info_self(struct lease_info *i, const char *name, char *const *argv, const char *request);

/*
 * Open the state directory: `path`, else $GPUCTL_STATE_DIR, else /run/gpuctl
 * (created mode 1777 when /run is writable), else $XDG_RUNTIME_DIR/gpuctl
 * (mode 0700). Without `create`, a directory that does not exist yet is
 * GC_ENOTFOUND (nothing is leased) and nothing is created — for readers.
 * Refuses a directory writable by others without the sticky bit or owned by
 * another non-root user. 0, or a negative GC_E* with err set.
 */
int lease_dir_open(struct lease_dir **out, const char *path, bool create, char *err, size_t errlen);
void lease_dir_close(struct lease_dir *d);
const char *lease_dir_path(const struct lease_dir *d);
/* its descriptor (quarantine.c opens marks relative to it); owned by d */
int lease_dir_fd(const struct lease_dir *d);
/* A GPU's UUID as leases name it: letters, digits and '-', at most LEASE_UUID_MAX - 1 of them (NULL: no) */
bool lease_uuid_valid(const char *u);
/* 16 random hex digits: a name in the state directory nobody can guess and make first */
void lease_random_hex(char out[17]);

/* Is the GPU leased? 1 held (info filled if non-NULL), 0 free, <0 GC_E*. */
int lease_peek(struct lease_dir *d, const char *uuid, struct lease_info *info);
/*
 * Which of uuids[n] (NULL entries skipped) are leased: held[i], in one look
 * at the directory (lease_peek looks once per GPU). 0, or <0 GC_E*.
 */
int lease_held(struct lease_dir *d, const char *const *uuids, size_t n, bool *held);

/*
 * Is the GPU leased by an ancestor of this process (the shell of a `gpuctl pick
 * --lease`, an outer `gpuctl run`)? 1 when it is held, its record names our uid
 * and, as its job or its holder, an ancestor of ours, and that process or its
 * holder (of our uid) has the lease file open: a record alone proves nothing.
 * 0 when free or held by someone else (info filled when held and non-NULL),
 * <0 GC_E*. A job inside its own lease uses those GPUs without leasing them.
 */
int lease_ours(struct lease_dir *d, const char *uuid, struct lease_info *info);
/*
 * Let go of such a lease early: its holder (`gpuctl pick --lease`'s, never an ancestor
 * of ours) is stopped with SIGTERM, and its death drops the lock. 1 released, 0 not
 * ours, GC_EBUSY held by an ancestor (an outer `gpuctl run` keeps its GPUs until its
 * job ends), GC_ETIMEDOUT the holder did not go within 2 s, other GC_E*.
 */
int lease_drop_ours(struct lease_dir *d, const char *uuid);

/*
 * Take every GPU of uuids[n] now, or none: 0 with *out set; GC_EBUSY with
 * *busy = the index (into uuids) of a GPU someone holds; other GC_E* on
 * error (message in err). `me` is recorded in each lease file.
 */
int lease_try(struct lease_dir *d, const char *const *uuids, size_t n, const struct lease_info *me,
	      struct lease **out, size_t *busy, char *err, size_t errlen);
/*
 * Claim TCP port `port` for a rendezvous the way a GPU is leased (lib/jobs/port.c):
 * 0 with *out (lease_release gives it back), GC_EBUSY when another claim holds
 * it, other GC_E* with err set.
 */
int lease_port_try(struct lease_dir *d, int port, const struct lease_info *me, struct lease **out, char *err,
		   size_t errlen);
/* Record the job's pid once it is started (and the holding process, when not 0). */
void lease_set_pid(struct lease *l, pid_t pid, pid_t supervisor);
/* Let the lock files pass to a child across exec, so the job holds them too. */
int lease_inherit(struct lease *l);
/* Release (clear the record, unlock, close) and free. NULL is fine. */
void lease_release(struct lease *l);

/* Join the queue: a ticket numbered after every earlier one. */
int lease_queue_join(struct lease_dir *d, const struct lease_info *me, struct lease_ticket **out,
		     char *err, size_t errlen);
/*
 * A ticket ahead of ours that lets the GPUs it could take sit free this long
 * loses its place: a waiter that never takes its turn (a planted ticket) holds
 * the queue up for no longer (and a waiter that comes later not at all, or
 * for LEASE_JOIN_GRACE_MS while its process keeps busy).
 */
#define LEASE_IDLE_MS 2000
/*
 * One in line that long already, with GPUs for it free when a waiter joins,
 * is passed at once when its process sleeps, after this when it is at work
 * (how long it has had them free, nobody can tell; it may be taking them).
 */
#define LEASE_JOIN_GRACE_MS 500
/*
 * One whose process is at work (a thread runnable or in the kernel) when its
 * LEASE_IDLE_MS is up keeps its place until this long: on a loaded machine a
 * waiter woken by a release may wait seconds for a CPU, and passing it would
 * break the order of the line. A ticket that spins without taking its turn
 * holds the queue up this long at most (gpuctld's authority mode, for
 * machines with hostile users, has no ticket files).
 */
#define LEASE_ACTIVE_MAX_MS 30000

/*
 * 1 when t is at the head of the queue: no ticket that was live when t joined
 * (and older) still is, 0 when one is, <0 on error. uuids[n] are the GPUs of
 * the machine (NULL entries skipped): a ticket ahead for which as many of them
 * as it wants have been free for LEASE_IDLE_MS is passed over. uuids NULL:
 * strictly first come, first served.
 */
int lease_queue_is_head(struct lease_dir *d, struct lease_ticket *t, const char *const *uuids, size_t n);
/* Leave the queue and free the ticket. NULL is fine. */
void lease_queue_leave(struct lease_ticket *t);
/*
 * Leave the queue now (the next waiter may go), but keep the ticket's file
 * open until lease_queue_leave: closing a deleted file costs ~1 ms on ext4,
 * better spent after the job has started.
 */
void lease_queue_withdraw(struct lease_ticket *t);
/* Stop being woken by releases (the job runs): the watch is narrowed, and closed with d. */
void lease_unwatch(struct lease_dir *d);
/*
 * A ticket's place in line: when it appeared in the directory (its ctime, in
 * ns, as the kernel keeps it: on file systems whose clock ticks every few ms,
 * waiters that join in one tick share a number and are served in either
 * order).
 */
uint64_t lease_ticket_number(const struct lease_ticket *t);

/*
 * Wait until a lease or ticket may have changed (a holder or waiter went
 * away) or timeout_ms passes (-1: no limit). 1 woken, 0 timeout, <0 error.
 * EINTR returns 1 so callers can look at their signal flags.
 */
int lease_wait(struct lease_dir *d, int timeout_ms);

/*
 * The inotify descriptor lease_wait polls, for a caller with its own poll
 * loop: readable when a lease or ticket may have changed; drain it with
 * lease_watch_drain. <0 on error; -1 also in authority mode and when the
 * user has no inotify instance or watch left (fs.inotify.max_user_instances,
 * max_user_watches): then lease_wait looks every 100 ms instead, and a
 * caller with its own loop should look on its own timer.
 */
int lease_watch_fd(struct lease_dir *d);
void lease_watch_drain(struct lease_dir *d);

/* Is authority mode in force for d (gpuctld grants every lease: authority.h)? */
bool lease_dir_authority(const struct lease_dir *d);

/*
 * Authority mode: ask gpuctld for a.n GPUs of a.allowed (UUIDs; NULL: any), chosen
 * by its line (docs/queue.md) and its last sample with these filters: now, or
 * with a.wait in line for at most a.timeout_ms (-1: no limit). 0 with *out and
 * got[] (the UUIDs granted, *ngot of them; got holds a.n, or every GPU for n_auto);
 * GC_EBUSY (not now) or GC_ETIMEDOUT with why; GC_ECANCELED when *stop was set.
 */
struct lease_ask {
	unsigned n;                  /* 0: every GPU free now (a power of two, at least 1) */
	const char *const *allowed;  /* borrowed UUIDs the request may use; NULL: any */
	size_t nallowed;
	bool exact;                  /* every one of allowed, or nothing */
	uint64_t min_free_mem;
	int max_util;                /* -1: any */
	const char *model;
	bool shared;
	bool wait;
	long long timeout_ms;
	bool want_table;             /* the answer (granted or busy) brings gpuctld's GPU table ... */
	json_t *table;               /* ... here (gputable.h; the caller's to json_decref), or NULL */
};
int lease_ask(struct lease_dir *d, struct lease_ask *a, const struct lease_info *me, const volatile int *stop,
	      struct lease **out, char (*got)[LEASE_UUID_MAX], size_t maxgot, size_t *ngot, char *why, size_t whylen);
/* gpuctld only: end grant `grant` now (reclaim, enforcement). 0, GC_ENOTFOUND, GC_EINVAL when d is no authority's */
int lease_revoke(struct lease_dir *d, uint64_t grant, const char *why);

/* Everything held now: uuids[] (caller frees with free) and infos. */
struct lease_entry {
	char uuid[LEASE_UUID_MAX];
	struct lease_info info;
	int64_t claimed_ns;        /* its claim file's ctime, ns since the epoch: when it was made or its
				      record last rewritten (at its job's start, not after); 0 unknown */
};
int lease_list(struct lease_dir *d, struct lease_entry **out, size_t *n);

/* Live waiters, oldest first. */
struct lease_waiter {
	uint64_t ticket;           /* as lease_ticket_number */
	struct lease_info info;
};
int lease_queue_list(struct lease_dir *d, struct lease_waiter **out, size_t *n);

/* Replace the control characters and bytes that are not UTF-8 in what another user wrote
 * (user, name, command, request) by '?', as everything gpuctl shows of another process. */
void lease_info_sanitize(struct lease_info *i);
/*
 * Whether the holder seen before (supervisor, uid, since) is lease i's: the same supervisor of the same
 * user. Not the same since: that is the claim file's ctime, which the record's rewrite at its job's
 * start (lease_set_pid) moves, and so can its owner by touching the file; only a record without a
 * supervisor of its user's (dropped by the reader) is told apart by it.
 */
bool lease_same_holder(pid_t supervisor, uid_t uid, int64_t since, const struct lease_info *i);
/* Who holds a lease, for messages: "alice (pid 4121, since 10:02, job 'train')", sanitized. */
void lease_holder_text(const struct lease_info *i, char *buf, size_t len);

#endif
