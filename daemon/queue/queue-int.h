/*
 * queue-int.h — the parts of gpuctld's job queue (queue.h), each with its
 * own state, and what they call of each other. Only the files of
 * daemon/queue/ include it (store.c, the SQLite store, and dispatch.c,
 * the dispatch policy, have headers of their own):
 *   clients.c      the client server: the listening socket, connections,
 *                  who may connect (SO_PEERCRED), a request line in and
 *                  its answer out without blocking
 *   requests.c     the protocol: submit, list, show, cancel, usage as JSON
 *   runner-link.c  the job runner (gpuctld-runner) and the socket to it
 *   round.c        the dispatch round: the GPUs free now, the jobs that
 *                  ended, the jobs that start, in one transaction
 *   view.c         what /metrics and /api/v1/jobs show, rendered by the
 *                  queue's thread and read by the HTTP threads
 *   retention.c    removing old logs and records, and recovering the jobs
 *                  an earlier gpuctld left running
 *   usage.c        GPU time: every lease seen in the lease directory,
 *                  recorded when it ends; gpuctl usage; fair share's
 *                  decayed usage per user
 *   queue.c        the thread and its poll loop, start and stop
 */
#ifndef GPUCTL_DAEMON_QUEUE_INT_H
#define GPUCTL_DAEMON_QUEUE_INT_H

#include "queue.h"

#include "device/gpu.h"
#include "device/proc.h"
#include "jobs/authority.h"
#include "jobs/lease.h"
#include "jobs/select.h"
#include "jobs/spawnreq.h"
#include "store.h"

#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define MAX_GPUS 64
#define MAX_CLIENTS 256
#define CLIENTS_PER_USER 32         /* connections one user (not root, not the admin group) may hold */
#define CLIENTS_ADMIN_ONLY 16       /* the last slots: root and the admin group always get in */
#define MAX_REQUEST (1u << 20)      /* a request line, environment included */
#define CLIENT_TIMEOUT_MS 10000
#define MAX_RUNNING 256
#define MAX_AFTER 64                /* jobs one --after may name */
#define LIST_PAGE 256               /* jobs in one answer to list (rows read: at most this many) */
#define LIST_PAGE_BYTES (256u << 10) /* and about this much of their command lines */
#define RENDER_MS 200               /* /metrics and /api/v1/jobs lag the queue by at most this */
#define VIEW_JOBS 1000              /* /api/v1/jobs lists the first this many live jobs (and their total) */
#define RUNNER_TIMEOUT_MS 5000      /* the runner answers a request within this, or is replaced */
#define HEAD_FIRST 64               /* queued jobs dispatch reads first; more only while GPUs are left */

/* ---- clients.c ---- */

struct client {
	int fd;
	uid_t uid;
	gid_t gid;
	pid_t pid;               /* SO_PEERCRED's, when it connected */
	bool taken;              /* handed to grants.c (a lease request): not closed with the client */
	char *buf;
	size_t len;
	long long deadline;
	bool too_big;            /* over MAX_REQUEST: the rest is read and dropped, then refused */
	char *out;               /* the answer being written, as the client reads it; NULL: reading */
	size_t outlen, outoff;
	char *raw;               /* bytes the answer line announces ("rows_bytes") and is followed by */
	size_t rawlen;
};

struct clients {
	int lfd;                     /* the listening socket; -1: none */
	struct client cl[MAX_CLIENTS];
	size_t ncl;
	gid_t admin_gid;             /* (gid_t)-1: none */
	/* the answer to one request line (requests.c) */
	json_t *(*answer)(void *arg, struct client *c, const char *line);
	void *arg;
};

/* root, or a member of the admin group */
bool clients_is_admin(const struct clients *cs, uid_t uid, gid_t gid);
void clients_accept(struct clients *cs);
/* client i's socket is ready: read its request (answering once a line is in) or write its answer */
void clients_ready(struct clients *cs, size_t i);
/* drop the clients past their deadline (too slow to send a request or to read the answer) */
void clients_expire(struct clients *cs, long long now);
void clients_close(struct clients *cs);

/* ---- requests.c ---- */

/* {"ok": false, "error": ...} */
json_t *requests_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* the answer to a request line from c (struct queue *q as arg) */
json_t *requests_answer(void *q, struct client *c, const char *line);

/* ---- runner-link.c ---- */

struct runner_link {
	const char *runner;          /* the program: `gpuctld-runner 3` */
	uint64_t log_max;            /* every request's log cap (--log-max-size; spawnreq.h) */
	int nullfd;                  /* its stdin (borrowed) */
	pid_t rpid;                  /* 0: none */
	int rfd;                     /* its socket, non-blocking; -1: none */
	char *rbuf;                  /* records read from it and not yet handled */
	size_t rlen, rcap;
	uint64_t gen;                /* which runner this is: one more each time one starts */
	/* called when the runner is stopped: its children are to be adopted */
	void (*on_down)(void *arg);
	void *arg;
};

void runner_link_init(struct runner_link *l, const char *runner, int nullfd, void (*on_down)(void *), void *arg);
/* read what the runner sent: 0, or -1 when it is gone */
int runner_link_read(struct runner_link *l);
/* stop it (its children run on) and call on_down; why (NULL: say nothing) goes to the log */
void runner_link_down(struct runner_link *l, const char *why);
/*
 * A request for a child sent and not yet answered. The runner answers in
 * order, so a round sends all its starts (runner_link_submit) before it
 * takes the first answer (runner_link_collect, in the same order): the
 * runner forks one child while gpuctld builds the next request.
 */
struct runner_pending {
	char *buf;                   /* the encoded request, kept to send again */
	size_t len;
	int go[2];                   /* the child's go pipe: it gets go[0]; go[1] is gpuctld's */
	uint64_t gen;                /* the runner it was sent to (runner_link.gen); 0: not sent */
};
/* send a request for a child for r (its stdin /dev/null, fd 3 a new go pipe) without waiting for the
 * answer: 0 (sent, or to be sent by runner_link_collect), or -1 with why (nothing to collect) */
int runner_link_submit(struct runner_link *l, const struct spawnreq *r, struct runner_pending *p, char *why,
		       size_t len);
/* the child's pid once the runner has forked it, with p->go[1] open for the go byte; or -1 with why (p->go[1]
 * closed). A runner that fails is replaced, and the request sent again once. Frees what p holds */
pid_t runner_link_collect(struct runner_link *l, struct runner_pending *p, char *why, size_t len);
/* the next EXITED record read: 1 with its pid and wait status, 0 when none is left (the rest is dropped) */
int runner_link_next_exit(struct runner_link *l, pid_t *pid, int *status);
void runner_link_free(struct runner_link *l);

/* ---- round.c ---- */

struct running {
	int64_t id;
	uid_t uid;
	pid_t pid;
	int pidfd;
	bool gpus[MAX_GPUS];
	bool cancelled;
	bool child;              /* the runner's child: its end comes as an EXITED record (else adopted) */
};

/* a job whose process ended, to record in the round's transaction */
struct fin {
	int64_t id;
	uid_t uid;               /* whose status file has its record */
	int code;                /* from the runner's EXITED record; -1: unknown (adopted) */
	bool cancelled;
};

/* a job forked in this round, waiting for the commit to go */
struct go {
	int64_t id;
	pid_t pid;
	int fd;
	int64_t submitted_ms;
};

/* a start of this round asked of the runner, its answer not yet taken */
struct launching {
	struct runner_pending req;
	int64_t id;
	uid_t uid;
	int64_t submitted_ms;
	bool g[MAX_GPUS];
	char gpus[256];
};

struct round {
	struct lease_dir *leases;    /* opened at the first round */
	struct running run[MAX_RUNNING];
	size_t nrun;
	struct fin fin[MAX_RUNNING];
	size_t nfin;
	struct go go[MAX_GPUS];
	size_t ngo;
	bool dirty;                  /* a GPU may have freed or a job arrived: settle this round */
	bool deps_dirty;             /* a job failed or was cancelled: look at the jobs waiting --after */
	/* the states of jobs named by --after, as read in this look at the queue (memo_round): a
	 * head of 200 jobs each --after the same 64 costs 64 reads, not 12 800 */
	struct { int64_t id; uint32_t round; int8_t state; } memo[4096];
	uint32_t memo_round;
};

/* the GPUs as the dispatch round sees them: the sampler's last sample, and which are free
 * now (no lease, no job starting) */
struct gpus_now {
	gc_snapshot snap;      /* a copy, this round's own */
	gc_snapshot view;      /* snap, cut to MAX_GPUS GPUs (shares its memory) */
	size_t n;
	bool is_free[MAX_GPUS];
	bool quarantined[MAX_GPUS];  /* out of service (quarantine.h): never free, never eligible */
	size_t nquarantined;
};

struct queue;
/* the sampler's last sample, no GPU free yet (what submit's check needs) */
void round_gpus_sample(struct queue *q, struct gpus_now *g);
/* ... and which GPUs are free now: a look at each one's lease */
void round_gpus_now(struct queue *q, struct gpus_now *g);
void round_gpus_release(struct gpus_now *g);
/* job j's GPU request (rq: its request JSON) as select.c takes it */
void round_job_request(const struct store_job *j, const json_t *rq, struct select_request *r, bool excl[MAX_GPUS]);
/* the GPUs request r may use now, whether or not free: e[now->n] */
void round_job_eligible(const struct gpus_now *now, const struct select_request *r, bool *e);
/* are the jobs j runs --after done? *failed: one never will be */
bool round_deps_state(struct queue *q, const struct store_job *j, bool *failed);
/* a new look at the queue: forget the states read before */
void round_memo_forget(struct queue *q);
/* what job id left in its status record: 1 with *ran, *code and *end (-1 unknown), 0 when nothing was written */
int round_read_status(const struct queue *q, uid_t uid, int64_t id, bool *ran, int *code, int *end, unsigned *retries);
/* a running job whose gpuctl run is gone without a status: queued again (--requeue) or lost */
void round_lost(struct queue *q, int64_t id, const char *when);
/* a job still running after a restart, not our child: its end is seen through its pidfd */
void round_adopt(struct queue *q, const struct store_job *j);
/* SIGTERM to running job id, recorded as cancelled: false when it is not ours */
bool round_cancel(struct queue *q, int64_t id);
/* run[i]'s pidfd is readable (or it has none): has it ended? */
void round_collect_end(struct queue *q, size_t i);
/* the runner's EXITED records: the jobs they name have ended */
void round_runner_exits(struct queue *q);
/* the runner is gone: its children are adopted (their ends come through their pidfds) */
void round_runner_down(void *q);
/* one round: record the ends and start what dispatch chooses in one transaction, then let them go */
void round_settle(struct queue *q);
void round_free(struct round *rd);

/* ---- view.c ---- */

struct view {
	pthread_mutex_t lock;        /* the HTTP threads read what the queue's thread renders */
	char *mtext;                 /* counts, rendered at each dispatch */
	char *jtext;                 /* /api/v1/jobs */
	int64_t oldest_ms;           /* submission time of the oldest queued job; 0: none */
	uint64_t started_total;
	double wait_total;           /* seconds queued, over every job started */
	struct {
		char cls[48];
		uint64_t n;
	} fail[64];                  /* failed jobs by class (the first 63 classes; the rest as "other") */
	size_t nfail;
	long long render_at;         /* monotonic ms when a render is due; 0: up to date */
	long long rendered;          /* monotonic ms of the last render */
};

void view_init(struct view *v);
/* one more failed job of class cls */
void view_failed(struct view *v, const char *cls);
void view_free(struct view *v);
/* render from the live jobs of st now */
void view_render(struct view *v, struct store *st);
/* something changed: render soon, but not more often than every RENDER_MS */
void view_render_later(struct view *v);
/* n jobs started, having waited wait_s seconds in all */
void view_started(struct view *v, uint64_t n, double wait_s);

/* ---- retention.c ---- */

struct retention {
	long long prune_at;          /* monotonic ms of the next look for logs to remove; 0: never */
	int64_t pruned_until;        /* logs of jobs that ended up to then are gone */
	long long users_at;          /* monotonic ms of the next look at each user's logs in all; 0: never */
	long long users_last;        /* monotonic ms of the last one */
};

#define RETENTION_USERS_MS 60000     /* each user's logs in all are looked at this often, */
#define RETENTION_USERS_MIN_MS 1000  /* and when jobs end, at most this often */

/* --log-keep, --job-keep: remove what is due, and say when to look again (ret.prune_at) */
void retention_prune(struct queue *q);
/* --log-user-max: each user's logs in all; the oldest of ended jobs removed while over (ret.users_at) */
void retention_users(struct queue *q);
/* jobs may have ended: look at the users' logs soon (at most every RETENTION_USERS_MIN_MS) */
void retention_users_soon(struct queue *q);
/* after a restart: the jobs that were running when the daemon went away */
void retention_recover(struct queue *q);

/* ---- queue.c ---- */

/* GPU time: the leases held now (usage.c) */
struct usage_open;
struct usage {
	struct usage_open *v;
	size_t n, cap;
	int64_t checked_ms;          /* monotonic: the last look that added idle time */
	int64_t scanned_ms;          /* monotonic: the last look at the lease directory */
	int64_t due_ms;              /* monotonic: a change to look at by then; 0 none */
	bool started;
	struct usage_share *share;   /* fair share: each user's decayed GPU time, */
	size_t nshare;
	int64_t share_at_ms;         /* as of this (monotonic) */
	bool share_dirty;            /* a lease has ended since: compute again */
};
struct usage_share {
	uid_t uid;
	double gpu_s;
};
/* Fair share: uid's GPU-seconds, each weighted 2^-(age / --fair-share-half-life) (0 when off). */
double usage_share(struct queue *q, uid_t uid);
/* After the lease directory changed (or once a second): leases seen start, leases gone are recorded. */
void usage_observe(struct queue *q, bool changed);
/* gpuctld stops: the leases held now are recorded as ending now. */
void usage_stop(struct queue *q);
/* gpuctl usage: GPU-hours since since_ms by "user", "gpu" or "day"; cost at price a GPU-hour (0: none). */
json_t *usage_report(struct queue *q, int64_t since_ms, const char *by, double price);

/* ---- grants.c: authority mode (lib/jobs/authority.h, docs/security.md) ---- */

#define MAX_WAITERS 2048
#define WAITERS_PER_USER 256        /* requests one user (not root) may have in line at once */
#define PORTS_PER_USER 8            /* launch rendezvous ports one user (not root) may hold */
#define MAX_GRANTS 1024

struct grant {
	uint64_t id;
	int fd;                      /* the holder's connection; -1: none (kept across a restart: held by
					the processes that still have its other end, ino) */
	uid_t uid;
	gid_t gid;
	struct lease_info info;      /* uid, user, since and grant are ours; pid, name, command the holder's word */
	char (*uuid)[LEASE_UUID_MAX];
	int64_t *idle_ms;            /* per GPU: the time it sat idle (usage) */
	size_t n;
	int port;                    /* a rendezvous port: n is 0 */
	int64_t job;                 /* a queued job's (its runner asked): 0 none */
	int64_t since_ms;
	uint64_t ino;                /* the holder's end of the connection */
	int pidfd[8];                /* without a connection: pidfds of processes seen holding ino */
	size_t npidfd;
	char buf[512];               /* what the holder sends (its pids), up to a line */
	size_t len;
	bool stored;                 /* in the store (its row goes with its usage) */
	bool told;                   /* its holder has been told (after the commit that stored it) */
	bool ended;                  /* released or revoked: its usage goes into the next round */
	int64_t ended_ms;
	bool table;                  /* its answer carries the GPU table (gputable.h), as asked */
};

struct waiter {
	int fd;
	uid_t uid;
	gid_t gid;
	pid_t peer;
	uint64_t seq;                /* its place, among waiters, by arrival */
	int64_t arrival_ms;          /* its place in the one line with queued jobs */
	struct lease_info info;
	char (*uuid)[LEASE_UUID_MAX];  /* the GPUs it may use (NULL: any), nuuid of them */
	size_t nuuid;
	unsigned n;                  /* 0: every free one (a power of two) */
	bool exact, wait, told;
	int port;                    /* a port request: no line */
	int64_t job;                 /* its runner's request for a started job's GPUs: no line */
	struct select_request sel;   /* the filters (sel.model points to model) */
	char model[128];
	bool started;                /* granted in this round: answered after the commit */
	bool table;                  /* the answer carries the GPU table (gputable.h): the client has none */
};

struct grants {
	bool on;                     /* --authority */
	struct grant *g;
	size_t n, cap;
	struct waiter w[MAX_WAITERS];
	size_t nw;
	uint64_t next_id, next_seq;
	int wakefd;                  /* eventfd: another thread asked for a revocation */
	pthread_mutex_t lock;        /* pub and revoke, which the sampler's thread uses */
	struct lease_entry *pub;     /* the GPU grants, as the sampler and list read them */
	size_t npub;
	struct lease_waiter *wpub;
	size_t nwpub;
	uint64_t revoke[64];
	size_t nrevoke;
	bool detached;               /* some grant has no connection: look for its holders every second */
	bool rescan;                 /* ... and at once: a holder seen last time has ended */
	long long looked_ms;
	struct uid_cache users;      /* the names of the users who asked, kept a minute (users_ms) */
	long long users_ms;
};

struct client;
void grants_init(struct queue *q);
void grants_free(struct queue *q);
/* after a restart: the grants the store kept, each still held or ended now */
void grants_recover(struct queue *q);
/* a lease request: the connection becomes a waiter (NULL: taken), or the refusal to send */
json_t *grants_take(struct queue *q, struct client *c, json_t *req);
json_t *grants_list_json(struct queue *q);
json_t *grants_ours_json(struct queue *q, const struct client *c, const char *uuid, bool drop);
/* its descriptors into p (at most max): how many */
size_t grants_poll(struct queue *q, struct pollfd *p, size_t max);
/* p as grants_poll filled it, after poll */
void grants_ready(struct queue *q, const struct pollfd *p, size_t np);
/* once a loop: revocations asked for, holders of grants without a connection, idle time */
void grants_tick(struct queue *q);
/* which GPUs (uuids[n], NULLs skipped) are granted */
void grants_held(struct queue *q, const char *const *uuids, size_t n, bool *held);
/* the round: the requests in line as dispatch jobs; their eligible/own arrays live in *mem (free it) */
struct dispatch_job;
struct gpus_now;
size_t grants_line(struct queue *q, const struct gpus_now *now, struct dispatch_job *out, size_t max, bool **mem);
/* the GPUs uid holds, of now (own[now->n]) */
void grants_own(struct queue *q, const struct gpus_now *now, uid_t uid, bool *own);
/* dispatch chose waiter -id (dispatch ids of waiters are negative) to start on gpus */
void grants_start(struct queue *q, int64_t id, const unsigned *gpus, unsigned n, const struct gpus_now *now);
/* in the round's transaction: new grants stored, ended ones recorded as usage and removed */
void grants_flush(struct queue *q);
/* after the commit (ok) or its failure: answer those granted, refuse what did not start and will not wait */
void grants_committed(struct queue *q, bool ok);

struct queue {
	struct queue_opts o;
	struct sampler *s;
	struct store *st;
	int stopfd;
	int dblock, socklock;        /* pidlocks beside the database and the socket; -1: not held */
	int nullfd;                  /* /dev/null, the jobs' stdin */
	struct clients clients;
	struct runner_link runner;
	struct round round;
	struct view view;
	struct retention ret;
	struct usage usage;
	struct grants grants;
	struct {
		struct explain_db *db;   /* failure signatures, loaded at the first failure */
		bool db_failed;          /* they could not be: not tried again */
	} diag;
	pthread_t thread;
	bool started;
};

void queue_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* field 22 of /proc/PID/stat, to tell a process from a later one with its pid; 0 when none */
uint64_t queue_proc_start(pid_t pid);
/* the files in --log-dir: a job's output, and how one user's jobs ended (lib/jobs/jobstatus.h) */
void queue_log_path(const struct queue *q, int64_t id, char *buf, size_t len);
bool queue_log_made(const struct queue *q, int64_t id);
void queue_status_path(const struct queue *q, uid_t uid, char *buf, size_t len);

/*
 * findings.c: failed job id explained from its log's tail: a JSON array of
 * findings ({class, id, title, numbers, cause, fix}, at most 3), NULL when
 * nothing is recognised; the first one's class in cls ("unknown" then).
 */
json_t *findings_of_job(struct queue *q, int64_t id, char *cls, size_t clslen);
/* A line in job id's log (uid's regular file) saying it was queued again and why: the next start's
 * diagnosis reads only what comes after it. */
void findings_mark(const struct queue *q, int64_t id, uid_t uid, const char *why);
void findings_free(struct queue *q);

#endif
