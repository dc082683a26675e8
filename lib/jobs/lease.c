/*
 * lease.c — per-GPU leases and the FIFO of waiters (see lease.h).
 *
 * The state directory is shared by every user of the machine (mode 1777, like
 * /tmp) or private. On a shared machine any other user may be hostile, so no
 * file in it is one that every user must open, lock or write: each user
 * creates, locks and writes only its own files, and reads the others' without
 * locking them. (A shared file anyone can lock is a file anyone can hold
 * forever; one anyone can create first is one its creator can chmod 600.)
 *
 *   gpu-<UUID>.<16 hex>  a claim: one GPU, one acquisition
 *   port-<N>.<16 hex>    a claim on a TCP port, a launch's rendezvous (port.c)
 *   ticket.<16 hex>      a waiter in the queue
 *   .new-<16 hex>        either, being made
 *
 * A claim or ticket is made mode 0600 under a temporary name, write-locked
 * with an open-file-description lock (fcntl F_OFD_SETLK), given its record,
 * made readable (0644), and only then renamed in: a visible one was locked
 * before anyone could see it. It is live while that lock is held, and the
 * kernel drops the lock when the last process holding the file dies, even by
 * SIGKILL — no daemon needed. Readers test the lock with F_OFD_GETLK, which
 * takes nothing: the read lock another user can take on a file it may only
 * read neither counts as a claim nor stops one. A visible file that is not
 * locked is dead for good; its owner (or root) removes it when it sees it.
 *
 * Who holds a claim is the file's owner, the kernel's word; the record (JSON:
 * pid, name, command) is the holder's word about itself, for display only,
 * and a pid in it that is not the owner's process is not shown.
 *
 * Two acquirers of one GPU each make their claim, then look for the other's:
 * a live claim as old as ours or older (by ctime, which the kernel sets and
 * nobody can set back) means ours goes. At most one keeps the GPU; on a tie
 * both go and try again. The one that keeps the GPU marks its claim at once
 * (mode 0744, u+x: only the file's owner can change it, and nobody can stop
 * that): a marked claim holds its GPU whatever its ctime says later (a
 * holder's record rewritten at its job's start moves its ctime past a
 * newcomer's), so the newcomer goes. (Not a second lock: anyone may read the
 * file, so anyone could take a read lock that stops it.)
 *
 * Waiters are served in the order of their tickets (ctime, then the number in
 * the record, then the inode). A waiter waits only for the tickets that were
 * live when it joined, so a ticket made long ago and locked later cannot jump
 * in front of it; and a ticket ahead that lets the GPUs it could take sit free
 * for LEASE_IDLE_MS loses its place (with every other ticket of its user's
 * ahead, unless that user is ours: one user's jobs keep their order), so a
 * planted ticket stalls the queue for that long at most, or for
 * LEASE_ACTIVE_MAX_MS while its process is at work (runnable: on a loaded
 * machine a woken waiter may wait seconds for a CPU); one that
 * is that old already and finds GPUs for it free when a waiter joins is passed
 * at once when its process sleeps (a release wakes every waiter, so a head
 * asleep with GPUs free has let them be), after LEASE_JOIN_GRACE_MS when it
 * is at work (it may be taking them). The one that becomes first while a
 * waiter waits is given the whole LEASE_IDLE_MS whatever its age: it is woken
 * by the same release as the waiter.
 *
 * Everything is opened relative to the directory with O_NOFOLLOW (a planted
 * symbolic link is refused) and O_NONBLOCK (a planted FIFO cannot hang an open).
 */
#include "util/clock.h"
#include "jobs/authority.h"
#include "jobs/lease.h"
#include "util/errbuf.h"
#include "device/proc.h"
#include "device/gpu.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NAME_MAX_LEN (LEASE_UUID_MAX + 24)
#define RECORD_MAX 4096
#define STALE_NEW_S 60   /* a .new- file this old was left by a crash between open and rename */
#define HELD_MODE 0744   /* a claim that has won its GPU (see the top); a claim being made is 0644 */

struct lease_dir {
	int dfd;    /* the state directory */
	int ino;    /* inotify, -1 until a waiter needs it */
	bool quiet; /* ... and its watch narrowed to nothing a lease does (lease_unwatch) */
	bool polled; /* no inotify to be had (the user's instances or watches all taken): look every POLL_MS */
	uid_t uid;  /* ours (effective) */
	char path[PATH_MAX];
	/* authority mode (authority.h): leases are gpuctld's grants, asked for at sock; the
	 * directory keeps only the quarantine marks. Inside gpuctld, src is its grant table. */
	bool auth;
	char sock[PATH_MAX];
	const struct lease_source *src;
	/* the records read before, by file: a claim's record is read again only when its file
	 * changed (gpuctld lists the directory every second, its sampler and its usage both) */
	struct cached_record *cache;
	size_t ncache, next_slot;
	bool nocache; /* a lease's own copy (struct lease): it keeps none */
	struct pid_memo *memo; /* during a listing (lease_list): its processes, asked after once */
};

/* the order of claims and tickets: all three from the kernel but num, which only breaks ties */
struct key {
	int64_t ctime_ns;
	uint64_t num;
	ino_t ino;
};

struct claim {
	int fd;
	char name[NAME_MAX_LEN];
};

struct lease {
	int afd;                /* authority mode: the grant's connection to gpuctld (n is 0); -1 otherwise */
	struct lease_dir *d;    /* &own: a lease may outlive the handle it was taken through */
	struct lease_dir own;   /* its directory (a descriptor of its own), for the release */
	struct lease_info me;
	size_t n;
	size_t reclen;  /* the longest record written: later ones are padded to it */
	struct claim c[];
};

/* a ticket that was live, and older than ours, when we joined */
struct ahead {
	char name[32];
	dev_t dev;
	ino_t ino;
	uid_t uid;
	unsigned want;
	pid_t pid;              /* the waiting process its record names (0: none of its owner's) */
	struct key key;
	long long idle_since;   /* monotonic ms: since when it could have taken GPUs and did not */
	bool seen;              /* it has been looked at as the first in line */
};

struct lease_ticket {
	struct lease_dir *d;
	int fd;
	uint64_t num;           /* the record's: only breaks ties within one clock tick */
	int64_t ctime_ns;       /* when it appeared: its place in line */
	char name[32];
	struct ahead *ahead;
	size_t nahead;
	bool looked;            /* lease_queue_is_head has been called */
};

/* what probe() found */
struct seen {
	bool live;
	bool held;               /* a claim that won: HELD_MODE */
	uid_t uid;
	dev_t dev;
	ino_t ino;
	struct key key;
	struct lease_info info;  /* with want_record */
};

/* A shared directory must not let others replace our files. */
static int check_dir(int fd, const char *path, char *err, size_t errlen)
{
	struct stat st;
	if (fstat(fd, &st) < 0) {
		errbuf_set(err, errlen, "cannot use state directory '%s': %s", path, strerror(errno));
		return GC_EIO;
	}
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		errbuf_set(err, errlen, "refusing state directory '%s': owned by uid %u, not by root or you",
			path, (unsigned)st.st_uid);
		return GC_EINVAL;
	}
	if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX)) {
		errbuf_set(err, errlen, "refusing state directory '%s': writable by others without the "
			"sticky bit (chmod 1777 '%s')", path, path);
		return GC_EINVAL;
	}
	return GC_OK;
}

/* Open one candidate directory, creating it with `mode` when missing (and `create`). */
static int open_dir(const char *path, mode_t mode, bool create, char *err, size_t errlen)
{
	if (!create && access(path, F_OK) < 0 && errno == ENOENT) {
		errbuf_set(err, errlen, "state directory '%s' does not exist yet", path);
		errno = ENOENT;
		return -1;
	}
	if (mkdir(path, 0700) == 0) {
		if (chmod(path, mode) < 0) {
			errbuf_set(err, errlen, "cannot set the mode of state directory '%s': %s", path,
				strerror(errno));
			return -1;
		}
	} else if (errno != EEXIST) {
		errbuf_set(err, errlen, "cannot create state directory '%s': %s (set GPUCTL_STATE_DIR to a "
			"writable directory)", path, strerror(errno));
		return -1;
	}
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		errbuf_set(err, errlen, "cannot open state directory '%s': %s", path, strerror(errno));
		return -1;
	}
	if (create && access(path, W_OK | X_OK) < 0) {
		errbuf_set(err, errlen, "cannot use state directory '%s': %s (set GPUCTL_STATE_DIR to a "
			"writable directory)", path, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

int lease_dir_open(struct lease_dir **out, const char *path, bool create, char *err, size_t errlen)
{
	*out = NULL;
	struct lease_dir *d = calloc(1, sizeof *d);
	if (!d)
		return GC_ENOMEM;
	d->dfd = d->ino = -1;
	d->uid = geteuid();
	if ((d->src = lease_served()) == NULL) {
		int a = authority_find(d->sock, sizeof d->sock, err, errlen);
		if (a < 0) {
			free(d);
			return a;
		}
		d->auth = a == 1;
	}
	const char *env = getenv("GPUCTL_STATE_DIR");
	int fd = -1;
	if (!path && env && *env)
		path = env;
	if (path) {
		fd = open_dir(path, 0700, create, err, errlen);
		snprintf(d->path, sizeof d->path, "%s", path);
	} else if (access("/run/gpuctl", W_OK | X_OK) == 0 ||
		   (access("/run/gpuctl", F_OK) < 0 && access("/run", W_OK | X_OK) == 0)) {
		/* shared by every user of the machine, like /tmp */
		fd = open_dir("/run/gpuctl", 01777, create, err, errlen);
		snprintf(d->path, sizeof d->path, "/run/gpuctl");
	} else {
		const char *xdg = getenv("XDG_RUNTIME_DIR");
		if (!xdg || !*xdg) {
			errbuf_set(err, errlen, "no state directory for leases: /run/gpuctl is not writable and "
				"XDG_RUNTIME_DIR is not set (set GPUCTL_STATE_DIR)");
			free(d);
			return GC_EIO;
		}
		snprintf(d->path, sizeof d->path, "%s/gpuctl", xdg);
		fd = open_dir(d->path, 0700, create, err, errlen);
	}
	if (fd < 0 && d->auth && !create && errno == ENOENT) {
		/* authority mode: the leases are gpuctld's; the directory only has quarantine marks */
		*out = d;
		return GC_OK;
	}
	if (fd < 0) {
		int e = errno;
		free(d);
		return !create && e == ENOENT ? GC_ENOTFOUND : GC_EIO;
	}
	d->dfd = fd;
	int rc = check_dir(fd, d->path, err, errlen);
	if (rc != GC_OK) {
		lease_dir_close(d);
		return rc;
	}
	*out = d;
	return GC_OK;
}

void lease_dir_close(struct lease_dir *d)
{
	if (!d)
		return;
	if (d->dfd >= 0)
		close(d->dfd);
	if (d->ino >= 0)
		close(d->ino);
	free(d->cache);
	free(d);
}

const char *lease_dir_path(const struct lease_dir *d)
{
	return d->path;
}

int lease_dir_fd(const struct lease_dir *d)
{
	return d->dfd;
}

bool lease_uuid_valid(const char *u)
{
	size_t n = 0;
	if (!u)
		return false;
	for (; u[n]; n++)
		if (!((u[n] >= 'a' && u[n] <= 'z') || (u[n] >= 'A' && u[n] <= 'Z') ||
		      (u[n] >= '0' && u[n] <= '9') || u[n] == '-'))
			return false;
	return n > 0 && n < LEASE_UUID_MAX;
}

static bool hex16(const char *s)
{
	size_t n = 0;
	for (; s[n]; n++)
		if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
			return false;
	return n == 16;
}

void lease_random_hex(char out[17])
{
	uint64_t v = 0;
	if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v) {
		struct timespec t;
		clock_gettime(CLOCK_REALTIME, &t);
		v = ((uint64_t)t.tv_nsec << 20) ^ (uint64_t)getpid() ^ ((uint64_t)t.tv_sec << 40);
	}
	snprintf(out, 17, "%016" PRIx64, v);
}

/*
 * What a claim's name is for: "<prefix><ID>.<16 hex>" → id (len ≥ LEASE_UUID_MAX); the
 * GPU of "gpu-<UUID>.<16 hex>". false for anything else (an old gpu-<UUID> lease file of
 * an earlier version among them).
 */
static bool claim_of(const char *name, const char *prefix, char *id, size_t len)
{
	size_t p = strlen(prefix);
	if (strncmp(name, prefix, p) != 0)
		return false;
	const char *dot = strrchr(name, '.');
	if (!dot || dot < name + p || !hex16(dot + 1) || (size_t)(dot - name - p) >= len)
		return false;
	memcpy(id, name + p, (size_t)(dot - name - p));
	id[dot - name - p] = '\0';
	return lease_uuid_valid(id);
}

static bool claim_uuid(const char *name, char *uuid, size_t len)
{
	return claim_of(name, "gpu-", uuid, len);
}

static bool ticket_name(const char *name)
{
	return strncmp(name, "ticket.", 7) == 0 && hex16(name + 7);
}

static int key_cmp(const struct key *a, const struct key *b)
{
	if (a->ctime_ns != b->ctime_ns)
		return a->ctime_ns < b->ctime_ns ? -1 : 1;
	if (a->num != b->num)
		return a->num < b->num ? -1 : 1;
	return a->ino < b->ino ? -1 : a->ino > b->ino;
}

static int64_t ctime_ns(const struct stat *st)
{
	return (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
}

/* authority mode: the same functions as requests to gpuctld (at the end of this file) */
static int auth_list(struct lease_dir *d, struct lease_entry **out, size_t *n, struct lease_waiter **wout, size_t *wn);
static int auth_try(struct lease_dir *d, const char *kind, const char *const *uuids, size_t n, int port,
		    const struct lease_info *me, struct lease **out, size_t *busy, char *err, size_t errlen);

/* ---- records ------------------------------------------------------------ */

/*
 * JSON holds UTF-8 only, and a command line may hold any bytes (or be cut
 * inside a character when it is truncated): drop a cut character at the
 * end, and when the rest is still not UTF-8, show its other bytes as '?'.
 */
static void text_for_json(char *s)
{
	size_t n = strlen(s), k = n;
	while (k > 0 && k + 4 > n && ((unsigned char)s[k - 1] & 0xc0) == 0x80)
		k--;
	if (k > 0 && (unsigned char)s[k - 1] >= 0xc0) {
		unsigned char lead = (unsigned char)s[k - 1];
		size_t want = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;
		if (n - (k - 1) < want)
			s[k - 1] = '\0';
	}
	json_t *t = json_string(s);
	if (t) {
		json_decref(t);
		return;
	}
	for (char *p = s; *p; p++)
		if ((unsigned char)*p >= 0x80)
			*p = '?';
}

/* The record as JSON (caller frees with free), NULL when out of memory. */
static char *record_json(const struct lease_info *in, uint64_t ticket)
{
	struct lease_info copy = *in, *i = &copy;
	text_for_json(copy.user); /* for people who read the file: readers take the file's owner */
	text_for_json(copy.name);
	text_for_json(copy.command);
	text_for_json(copy.request);
	json_t *o = json_pack("{s:I, s:I, s:I, s:s, s:I, s:s, s:s, s:s, s:I}", "pid", (json_int_t)i->pid,
			      "supervisor", (json_int_t)i->supervisor, "uid", (json_int_t)i->uid,
			      "user", i->user, "since", (json_int_t)i->since, "name", i->name,
			      "command", i->command, "request", i->request, "want", (json_int_t)i->want);
	if (!o)
		return NULL;
	if (ticket)
		json_object_set_new(o, "ticket", json_integer((json_int_t)ticket));
	char *s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}

static void copy_field(char *dst, size_t len, json_t *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));
	snprintf(dst, len, "%s", v ? v : "");
}

/*
 * The record of an open claim or ticket, as far as it can be believed: who is the
 * file's owner, since is its ctime, and a pid that is not the owner's is dropped.
 * A record being rewritten (lease_set_pid) may be read torn: read again.
 */
static void read_record(int fd, const struct stat *st, struct lease_info *i, uint64_t *ticket)
{
	memset(i, 0, sizeof *i);
	if (ticket)
		*ticket = 0;
	char buf[RECORD_MAX];
	json_t *o = NULL;
	for (int tries = 0; !o && tries < 3; tries++) {
		ssize_t n = pread(fd, buf, sizeof buf, 0);
		if (n <= 0)
			break;
		o = json_loadb(buf, (size_t)n, 0, NULL);
	}
	if (o) {
		i->pid = (pid_t)json_integer_value(json_object_get(o, "pid"));
		i->supervisor = (pid_t)json_integer_value(json_object_get(o, "supervisor"));
		copy_field(i->name, sizeof i->name, o, "name");
		copy_field(i->command, sizeof i->command, o, "command");
		copy_field(i->request, sizeof i->request, o, "request");
		json_int_t w = json_integer_value(json_object_get(o, "want"));
		i->want = w > 0 && w < 65536 ? (unsigned)w : 1;
		if (ticket)
			*ticket = (uint64_t)json_integer_value(json_object_get(o, "ticket"));
		json_decref(o);
	} else {
		i->want = 1;
	}
	i->uid = st->st_uid;
	i->since = (int64_t)st->st_ctim.tv_sec;
	proc_user_name(i->uid, i->user, sizeof i->user, NULL);
}

/*
 * What one listing learnt of the processes its records name: a job holds a claim per GPU,
 * each naming the same two processes, asked after once per listing (NULL: not kept).
 */
#define PID_MEMO_MAX 8
struct pid_memo {
	size_t n, next;
	struct {
		pid_t pid;
		uid_t owner;  /* (uid_t)-1: gone */
		int alive;    /* -1: not asked yet */
	} e[PID_MEMO_MAX];
};

static bool alive(pid_t pid);

static size_t memo_slot(struct pid_memo *m, pid_t pid)
{
	for (size_t k = 0; k < m->n; k++)
		if (m->e[k].pid == pid)
			return k;
	size_t k = m->n < PID_MEMO_MAX ? m->n++ : m->next++ % PID_MEMO_MAX;
	m->e[k].pid = pid;
	m->e[k].owner = proc_owner(pid);
	m->e[k].alive = -1;
	return k;
}

static uid_t memo_owner(struct pid_memo *m, pid_t pid)
{
	return m ? m->e[memo_slot(m, pid)].owner : proc_owner(pid);
}

static bool memo_alive(struct pid_memo *m, pid_t pid)
{
	if (!m || pid <= 0)
		return alive(pid);
	size_t k = memo_slot(m, pid);
	if (m->e[k].alive < 0)
		m->e[k].alive = alive(pid);
	return m->e[k].alive;
}

/* a live process of someone else's is not the owner's job (a gone one names nobody): asked
 * at each look, as pids are reused */
static void believe_pids(struct lease_info *i, uid_t owner, struct pid_memo *m)
{
	uid_t o;
	if (i->pid > 0 && (o = memo_owner(m, i->pid)) != owner && o != (uid_t)-1)
		i->pid = 0;
	if (i->supervisor > 0 && (o = memo_owner(m, i->supervisor)) != owner && o != (uid_t)-1)
		i->supervisor = 0;
}

/*
 * A record as read from a file that has not changed since: (dev, ino, ctime, mtime, size,
 * owner) the same. Only records whose file was last written over a second before they were
 * read are kept, so that a rewrite within the file system's clock tick (lease_set_pid soon
 * after the claim) cannot leave the times as they were.
 */
struct cached_record {
	dev_t dev;
	ino_t ino;
	int64_t ctime_ns, mtime_ns;
	off_t size;
	uid_t uid;
	uint64_t ticket;
	struct lease_info info; /* as read_record made it: before believe_pids */
};

#define RECORD_CACHE_MAX 256 /* records kept: a full cache reuses its slots in turn */
#define RECORD_SETTLED_NS INT64_C(1000000000)

static bool same_file(const struct cached_record *c, const struct stat *st)
{
	return c->ino == st->st_ino && c->dev == st->st_dev && c->ctime_ns == ctime_ns(st) &&
	       c->mtime_ns == (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec &&
	       c->size == st->st_size && c->uid == st->st_uid;
}

/* the record of the open file fd (stat st): from the cache when it has not changed */
static void load_record(struct lease_dir *d, int fd, const struct stat *st, struct lease_info *i, uint64_t *ticket)
{
	for (size_t k = 0; k < d->ncache; k++)
		if (same_file(&d->cache[k], st)) {
			*i = d->cache[k].info;
			if (ticket)
				*ticket = d->cache[k].ticket;
			believe_pids(i, st->st_uid, d->memo);
			return;
		}
	uint64_t num = 0;
	read_record(fd, st, i, &num);
	if (ticket)
		*ticket = num;
	struct timespec now;
	int64_t mtime = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	if (clock_gettime(CLOCK_REALTIME, &now) == 0 &&
	    (int64_t)now.tv_sec * 1000000000 + now.tv_nsec - mtime > RECORD_SETTLED_NS && !d->nocache &&
	    (d->cache || (d->cache = calloc(RECORD_CACHE_MAX, sizeof *d->cache)))) {
		size_t k = d->ncache < RECORD_CACHE_MAX ? d->ncache++ : d->next_slot++ % RECORD_CACHE_MAX;
		d->cache[k] = (struct cached_record){.dev = st->st_dev, .ino = st->st_ino, .ctime_ns = ctime_ns(st),
						     .mtime_ns = mtime, .size = st->st_size, .uid = st->st_uid,
						     .ticket = num, .info = *i};
	}
	believe_pids(i, st->st_uid, d->memo);
}

/*
 * Look at one visible claim or ticket: 1 live (s filled, the record too with
 * want_record), 0 dead or not believable (another user's file that others may
 * write to, or not a plain file). A dead one of ours, or any with root, is
 * removed: nobody will lock it again.
 */
static int probe(struct lease_dir *d, const char *name, bool want_record, struct seen *s)
{
	int fd = openat(d->dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return 0;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		close(fd);
		return 0;
	}
	struct flock fl = {.l_type = F_RDLCK, .l_whence = SEEK_SET};
	bool live = fcntl(fd, F_OFD_GETLK, &fl) == 0 && fl.l_type == F_WRLCK;
	bool held = (st.st_mode & 0777) == HELD_MODE;
	if (!live) {
		if (st.st_uid == d->uid || d->uid == 0)
			(void)unlinkat(d->dfd, name, 0);
		close(fd);
		return 0;
	}
	if (s) {
		s->live = true;
		s->held = held;
		s->uid = st.st_uid;
		s->dev = st.st_dev;
		s->ino = st.st_ino;
		s->key = (struct key){ctime_ns(&st), 0, st.st_ino};
		if (want_record)
			load_record(d, fd, &st, &s->info, &s->key.num);
	}
	close(fd);
	return 1;
}

/* A .new- file of ours left by a crash between making and renaming it. */
static void reap_new(struct lease_dir *d, const char *name)
{
	struct stat st;
	if (fstatat(d->dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_uid == d->uid && S_ISREG(st.st_mode) &&
	    st.st_ctim.tv_sec + STALE_NEW_S < time(NULL))
		(void)unlinkat(d->dfd, name, 0);
}

/* Visit every entry of the directory: fn returns non-zero to stop (that is returned). */
static int scan(struct lease_dir *d, int (*fn)(struct lease_dir *, const char *, void *), void *arg)
{
	int fd = dup(d->dfd);
	if (fd < 0)
		return GC_EIO;
	DIR *dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return GC_EIO;
	}
	rewinddir(dir);
	int rc = 0;
	for (struct dirent *e; !rc && (e = readdir(dir));) {
		if (strncmp(e->d_name, ".new-", 5) == 0)
			reap_new(d, e->d_name);
		else if (e->d_name[0] != '.')
			rc = fn(d, e->d_name, arg);
	}
	closedir(dir);
	return rc;
}

/*
 * Make the locked file `final` holding `rec` (see the top): 0 with *out its
 * descriptor and *st its stat, or -1 with errno.
 */
static int make_locked(struct lease_dir *d, const char *final, const char *rec, int *out, struct stat *st)
{
	char hex[17], tmp[32];
	lease_random_hex(hex);
	snprintf(tmp, sizeof tmp, ".new-%s", hex);
	int fd = openat(d->dfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	size_t len = strlen(rec);
	if (fcntl(fd, F_OFD_SETLK, &fl) < 0 || pwrite(fd, rec, len, 0) != (ssize_t)len || fchmod(fd, 0644) < 0 ||
	    renameat2(d->dfd, tmp, d->dfd, final, RENAME_NOREPLACE) < 0 || fstat(fd, st) < 0) {
		int e = errno;
		(void)unlinkat(d->dfd, tmp, 0);
		close(fd);
		errno = e;
		return -1;
	}
	*out = fd;
	return 0;
}

/* a zombie has ended: it holds no file, whoever has yet to reap it */
static bool alive(pid_t pid)
{
	if (pid <= 0 || (kill(pid, 0) < 0 && errno != EPERM))
		return false;
	char st = 0;
	if (proc_stat(pid, &st, NULL, NULL) < 0)
		return true; /* no /proc to ask: kill() said it exists */
	return st != 'Z' && st != 'X';
}

/* a process other than us that has the file (dev, ino) open, 0 if none can be seen (the
 * fds of other users' processes are readable by root only); a bounded scan of /proc */
static pid_t opener_of(dev_t dev, ino_t ino)
{
	DIR *proc = opendir("/proc");
	if (!proc)
		return 0;
	pid_t found = 0, self = getpid();
	int seen = 0;
	for (struct dirent *e; !found && seen < 65536 && (e = readdir(proc)); seen++) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0 || pid == self)
			continue;
		char path[48];
		snprintf(path, sizeof path, "/proc/%ld/fd", pid);
		DIR *fds = opendir(path);
		if (!fds)
			continue;
		struct stat st;
		for (struct dirent *f; !found && (f = readdir(fds));)
			if (f->d_name[0] != '.' && fstatat(dirfd(fds), f->d_name, &st, 0) == 0 && st.st_dev == dev &&
			    st.st_ino == ino)
				found = (pid_t)pid;
		closedir(fds);
	}
	closedir(proc);
	return found;
}

/* pid is this process or one of its ancestors: a shell that exec'd its last command is both */
static bool is_ancestor(pid_t pid)
{
	return proc_is_ancestor(pid, getpid());
}

/* does process pid, of our uid, have the file (dev, ino) open? */
static bool holds_open(pid_t pid, dev_t dev, ino_t ino)
{
	if (pid <= 0)
		return false;
	char path[48];
	snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
	struct stat st;
	if (stat(path, &st) < 0 || st.st_uid != getuid())
		return false;
	DIR *dir = opendir(path);
	if (!dir)
		return false;
	bool found = false;
	int dfd = dirfd(dir);
	for (struct dirent *e; !found && (e = readdir(dir));)
		found = e->d_name[0] != '.' && fstatat(dfd, e->d_name, &st, 0) == 0 && st.st_dev == dev &&
			st.st_ino == ino;
	closedir(dir);
	return found;
}

/* ---- leases ------------------------------------------------------------- */

/* the oldest live claim of one GPU (or, with `mine`, of ours that an ancestor holds) */
struct find {
	const char *uuid;
	bool want_record;
	int found;
	char name[NAME_MAX_LEN];
	struct seen s;
};

static int find_claim(struct lease_dir *d, const char *name, void *arg)
{
	struct find *f = arg;
	char uuid[LEASE_UUID_MAX];
	if (!claim_uuid(name, uuid, sizeof uuid) || strcmp(uuid, f->uuid) != 0)
		return 0;
	struct seen s;
	if (probe(d, name, f->want_record, &s) != 1)
		return 0;
	if (!f->found || key_cmp(&s.key, &f->s.key) < 0) {
		f->s = s;
		snprintf(f->name, sizeof f->name, "%s", name);
	}
	f->found = 1;
	return 0;
}

/* the record names a job and a supervisor that are both gone, yet the lock is held: by an
 * orphan of the job. Name it when it can be seen. */
static void note_orphan(struct lease_info *info, dev_t dev, ino_t ino, struct pid_memo *m)
{
	info->orphan = false;
	info->live = 0;
	if (info->pid <= 0 || memo_alive(m, info->pid) || memo_alive(m, info->supervisor))
		return;
	info->orphan = true;
	info->live = opener_of(dev, ino);
}

int lease_peek(struct lease_dir *d, const char *uuid, struct lease_info *info)
{
	if (d->auth || d->src) {
		struct lease_entry *e = NULL;
		size_t n = 0;
		int rc = auth_list(d, &e, &n, NULL, NULL);
		if (rc < 0)
			return rc;
		int found = 0;
		for (size_t i = 0; i < n && !found; i++)
			if (strcmp(e[i].uuid, uuid) == 0) {
				found = 1;
				if (info)
					*info = e[i].info;
			}
		free(e);
		return found;
	}
	if (!lease_uuid_valid(uuid))
		return GC_EINVAL;
	struct find f = {.uuid = uuid, .want_record = info != NULL};
	int rc = scan(d, find_claim, &f);
	if (rc < 0)
		return rc;
	if (f.found && info) {
		*info = f.s.info;
		note_orphan(info, f.s.dev, f.s.ino, NULL);
	}
	return f.found;
}

/* a live claim of the GPU held for us by an ancestor (see lease_ours) */
struct ours {
	const char *uuid;
	int found;          /* 1: ours; otherwise info is the first live claim seen */
	bool any;
	struct lease_info info;
	dev_t dev;
	ino_t ino;
};

static int find_ours(struct lease_dir *d, const char *name, void *arg)
{
	struct ours *o = arg;
	char uuid[LEASE_UUID_MAX];
	if (!claim_uuid(name, uuid, sizeof uuid) || strcmp(uuid, o->uuid) != 0)
		return 0;
	struct seen s;
	if (probe(d, name, true, &s) != 1)
		return 0;
	if (!o->any)
		o->info = s.info;
	o->any = true;
	const struct lease_info *i = &s.info;
	/* the record is the holder's word: believe it only where the kernel agrees */
	if (s.uid != getuid() || !(is_ancestor(i->pid) || is_ancestor(i->supervisor)))
		return 0;
	if (!holds_open(i->pid, s.dev, s.ino) && !holds_open(i->supervisor, s.dev, s.ino))
		return 0;
	o->info = s.info;
	o->dev = s.dev;
	o->ino = s.ino;
	o->found = 1;
	return 1;
}

int lease_ours(struct lease_dir *d, const char *uuid, struct lease_info *info)
{
	if (d->src)
		return 0; /* gpuctld itself holds no lease */
	if (d->auth) {
		json_t *ans = NULL;
		char err[256];
		int rc = authority_call(d->sock, json_pack("{s:s, s:s}", "op", "ours", "uuid", uuid), &ans, err, sizeof err);
		if (rc == GC_OK && (rc = authority_answer_rc(ans, err, sizeof err)) == GC_OK) {
			rc = json_is_true(json_object_get(ans, "ours"));
			json_t *h = json_object_get(ans, "holder");
			if (info && h)
				authority_info_read(h, info);
		}
		json_decref(ans);
		return rc;
	}
	if (!lease_uuid_valid(uuid))
		return GC_EINVAL;
	struct ours o = {.uuid = uuid};
	int rc = scan(d, find_ours, &o);
	if (rc < 0)
		return rc;
	if (info && o.any)
		*info = o.info;
	return o.found;
}

int lease_drop_ours(struct lease_dir *d, const char *uuid)
{
	if (d->src)
		return 0;
	if (d->auth) {
		json_t *ans = NULL;
		char err[256];
		int rc = authority_call(d->sock, json_pack("{s:s, s:s}", "op", "drop", "uuid", uuid), &ans, err, sizeof err);
		if (rc == GC_OK && (rc = authority_answer_rc(ans, err, sizeof err)) == GC_OK)
			rc = json_is_true(json_object_get(ans, "dropped"));
		json_decref(ans);
		return rc;
	}
	if (!lease_uuid_valid(uuid))
		return GC_EINVAL;
	struct ours o = {.uuid = uuid};
	int rc = scan(d, find_ours, &o);
	if (rc < 0)
		return rc;
	if (!o.found)
		return 0;
	/* only a holder that is not one of our ancestors (pick --lease's): an outer gpuctl run
	 * lets its GPUs go when its job ends, not before */
	if (is_ancestor(o.info.supervisor) || !holds_open(o.info.supervisor, o.dev, o.ino))
		return GC_EBUSY;
	if (kill(o.info.supervisor, SIGTERM) < 0)
		return errno == ESRCH ? 1 : GC_EIO;
	/* its death drops the lock: wait for that, up to 2 s */
	for (int i = 0; i < 200; i++) {
		if (lease_peek(d, uuid, NULL) != 1)
			return 1;
		nanosleep(&(struct timespec){.tv_nsec = 10000000}, NULL);
	}
	return GC_ETIMEDOUT;
}

/* Let go of claims: closing drops the lock (unless the job's processes still hold the
 * file, an orphan); a claim nobody holds any more is removed. */
static void drop_claims(struct lease_dir *d, struct claim *c, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (c[i].fd < 0)
			continue;
		close(c[i].fd);
		c[i].fd = -1;
		(void)probe(d, c[i].name, false, NULL);
	}
}

/* the other claims on our GPUs, after ours are made */
struct rivals {
	struct lease *l;
	const char *prefix;
	const char *const *uuids;
	struct stat *mine;      /* [n] */
	size_t busy;
	bool found, tie;
};

static int find_rival(struct lease_dir *d, const char *name, void *arg)
{
	struct rivals *r = arg;
	char uuid[LEASE_UUID_MAX];
	if (!claim_of(name, r->prefix, uuid, sizeof uuid))
		return 0;
	for (size_t i = 0; i < r->l->n; i++) {
		if (strcmp(uuid, r->uuids[i]) != 0 || strcmp(name, r->l->c[i].name) == 0)
			continue;
		struct seen s;
		if (probe(d, name, false, &s) != 1)
			return 0;
		/* one that has won keeps the GPU; else the older one does; as old: neither does */
		int64_t ours = ctime_ns(&r->mine[i]);
		if (s.held || s.key.ctime_ns <= ours) {
			r->busy = i;
			r->found = true;
			r->tie = !s.held && s.key.ctime_ns == ours;
			return 1;
		}
		return 0;
	}
	return 0;
}

/* Claim every one of ids[n] (each "<prefix><id>.<16 hex>"), or none: see lease_try. */
static int claim_try(struct lease_dir *d, const char *prefix, const char *const *uuids, size_t n,
		     const struct lease_info *me, struct lease **out, size_t *busy, char *err, size_t errlen)
{
	*out = NULL;
	for (size_t i = 0; i < n; i++) {
		if (!lease_uuid_valid(uuids[i])) {
			errbuf_set(err, errlen, "invalid GPU UUID '%.100s'", uuids[i]);
			return GC_EINVAL;
		}
	}
	struct lease *l = calloc(1, sizeof *l + n * sizeof l->c[0]);
	struct stat *st = calloc(n ? n : 1, sizeof *st);
	char *rec = record_json(me, 0);
	if (!l || !st || !rec) {
		free(l);
		free(st);
		free(rec);
		return GC_ENOMEM;
	}
	l->afd = -1;
	l->own = *d;
	l->own.ino = -1;
	l->own.cache = NULL; /* d's */
	l->own.ncache = 0;
	l->own.nocache = true;
	l->own.dfd = fcntl(d->dfd, F_DUPFD_CLOEXEC, 0);
	l->d = &l->own;
	l->n = n;
	l->me = *me;
	l->reclen = strlen(rec);
	if (l->own.dfd < 0) {
		errbuf_set(err, errlen, "cannot use state directory '%s': %s", d->path, strerror(errno));
		free(l);
		free(st);
		free(rec);
		return GC_EIO;
	}
	for (size_t i = 0; i < n; i++)
		l->c[i].fd = -1;
	int rc = GC_OK;
	for (size_t i = 0; i < n && rc == GC_OK; i++) {
		char hex[17];
		lease_random_hex(hex);
		snprintf(l->c[i].name, sizeof l->c[i].name, "%s%s.%s", prefix, uuids[i], hex);
		if (make_locked(d, l->c[i].name, rec, &l->c[i].fd, &st[i]) < 0) {
			errbuf_set(err, errlen, "cannot make a lease in '%s': %s", d->path, strerror(errno));
			rc = GC_EIO;
		}
	}
	if (rc == GC_OK) {
		struct rivals r = {.l = l, .prefix = prefix, .uuids = uuids, .mine = st};
		if (scan(d, find_rival, &r) < 0) {
			errbuf_set(err, errlen, "cannot read state directory '%s': %s", d->path, strerror(errno));
			rc = GC_EIO;
		} else if (r.found) {
			*busy = r.busy;
			rc = GC_EBUSY;
			if (r.tie) {
				/* the other made its claim in the same clock tick: go, and come back at
				 * another moment than it will */
				uint32_t us = 0;
				(void)getrandom(&us, sizeof us, 0);
				nanosleep(&(struct timespec){.tv_nsec = (long)(1000 + us % 4000) * 1000}, NULL);
			}
		}
	}
	/* won: say so on every claim, before anything can rewrite them */
	for (size_t i = 0; i < n && rc == GC_OK; i++) {
		if (fchmod(l->c[i].fd, HELD_MODE) < 0) {
			errbuf_set(err, errlen, "cannot mark a lease in '%s': %s", d->path, strerror(errno));
			rc = GC_EIO;
		}
	}
	free(st);
	free(rec);
	if (rc != GC_OK) {
		drop_claims(d, l->c, n);
		close(l->own.dfd);
		free(l);
		return rc;
	}
	*out = l;
	return GC_OK;
}

int lease_try(struct lease_dir *d, const char *const *uuids, size_t n, const struct lease_info *me,
	      struct lease **out, size_t *busy, char *err, size_t errlen)
{
	if (d->auth)
		return auth_try(d, "gpu", uuids, n, 0, me, out, busy, err, errlen);
	return claim_try(d, "gpu-", uuids, n, me, out, busy, err, errlen);
}

int lease_port_try(struct lease_dir *d, int port, const struct lease_info *me, struct lease **out, char *err,
		   size_t errlen)
{
	if (port <= 0 || port > 65535) {
		errbuf_set(err, errlen, "invalid port %d", port);
		return GC_EINVAL;
	}
	char id[8];
	snprintf(id, sizeof id, "%d", port);
	const char *ids[1] = {id};
	size_t busy;
	if (d->auth)
		return auth_try(d, "port", NULL, 0, port, me, out, &busy, err, errlen);
	return claim_try(d, "port-", ids, 1, me, out, &busy, err, errlen);
}

void lease_set_pid(struct lease *l, pid_t pid, pid_t supervisor)
{
	l->me.pid = pid;
	if (supervisor)
		l->me.supervisor = supervisor;
	if (l->afd >= 0) {
		/* gpuctld checks that they are the caller's own processes; no answer */
		char err[128];
		(void)authority_send(l->afd, json_pack("{s:s, s:i, s:i}", "op", "pid", "pid", (int)pid, "supervisor",
						      (int)l->me.supervisor), err, sizeof err);
		return;
	}
	char *rec = record_json(&l->me, 0);
	if (!rec)
		return;
	/* overwrite in place, padded with blanks to the longest so far: never a cut-short
	 * file, and a reader that catches a torn record reads it again */
	size_t len = strlen(rec);
	size_t full = len > l->reclen ? len : l->reclen;
	char *buf = malloc(full);
	if (buf) {
		memcpy(buf, rec, len);
		memset(buf + len, ' ', full - len);
		for (size_t i = 0; i < l->n; i++)
			(void)pwrite(l->c[i].fd, buf, full, 0);
		l->reclen = full;
		free(buf);
	}
	free(rec);
}

int lease_inherit(struct lease *l)
{
	if (l->afd >= 0 && fcntl(l->afd, F_SETFD, 0) < 0)
		return GC_EIO;
	for (size_t i = 0; i < l->n; i++)
		if (fcntl(l->c[i].fd, F_SETFD, 0) < 0)
			return GC_EIO;
	return GC_OK;
}

void lease_release(struct lease *l)
{
	if (!l)
		return;
	if (l->afd >= 0)
		close(l->afd); /* the grant ends once no other process (the job's) holds it */
	drop_claims(l->d, l->c, l->n);
	if (l->own.dfd >= 0)
		close(l->own.dfd);
	free(l);
}

#define WATCH_MASK (IN_CLOSE_WRITE | IN_DELETE | IN_MOVED_FROM)

/*
 * inotify refused for want of what a user has only so much of (fs.inotify.max_user_instances,
 * 128 by default, all of that user's processes together; max_user_watches; memory): the
 * waiter looks every POLL_MS instead of failing. One user's many waiters cost that user a
 * little CPU, never another user anything: the limits are per user.
 */
#define POLL_MS 100
static bool out_of_watches(int e)
{
	return e == EMFILE || e == ENFILE || e == ENOSPC || e == ENOMEM;
}

static int watch(struct lease_dir *d)
{
	if (d->ino >= 0 && d->quiet) {
		d->quiet = false; /* waiting again (a retry): woken by releases again */
		return inotify_add_watch(d->ino, d->path, WATCH_MASK) < 0 ? -1 : 0;
	}
	if (d->ino >= 0 || d->polled)
		return 0;
	d->ino = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (d->ino < 0) {
		d->polled = out_of_watches(errno);
		return d->polled ? 0 : -1;
	}
	/* a lease file's last close (release, death) and a ticket leaving */
	if (inotify_add_watch(d->ino, d->path, WATCH_MASK) < 0) {
		int e = errno;
		close(d->ino);
		d->ino = -1;
		d->polled = out_of_watches(e);
		errno = e;
		return d->polled ? 0 : -1;
	}
	return 0;
}

/* ---- the queue ---------------------------------------------------------- */

struct snap {
	struct lease_ticket *t;
	struct key mine;
	int rc;
};

static int note_ahead(struct lease_dir *d, const char *name, void *arg)
{
	struct snap *sn = arg;
	struct seen s;
	if (!ticket_name(name) || strcmp(name, sn->t->name) == 0 || probe(d, name, true, &s) != 1 ||
	    key_cmp(&s.key, &sn->mine) >= 0)
		return 0;
	struct lease_ticket *t = sn->t;
	struct ahead *p = realloc(t->ahead, (t->nahead + 1) * sizeof *p);
	if (!p) {
		sn->rc = GC_ENOMEM;
		return 1;
	}
	t->ahead = p;
	struct ahead *a = &p[t->nahead++];
	memset(a, 0, sizeof *a);
	snprintf(a->name, sizeof a->name, "%s", name);
	a->dev = s.dev;
	a->ino = s.ino;
	a->uid = s.uid;
	a->want = s.info.want;
	a->pid = s.info.pid;
	a->key = s.key;
	return 0;
}

int lease_queue_join(struct lease_dir *d, const struct lease_info *me, struct lease_ticket **out,
		     char *err, size_t errlen)
{
	*out = NULL;
	struct lease_ticket *t = calloc(1, sizeof *t);
	if (!t)
		return GC_ENOMEM;
	t->d = d;
	t->fd = -1;
	/* watch before the first look, so no release between look and wait is missed */
	if (watch(d) < 0) {
		errbuf_set(err, errlen, "cannot watch '%s' for released GPUs: %s", d->path, strerror(errno));
		free(t);
		return GC_EIO;
	}
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	t->num = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	char hex[17];
	lease_random_hex(hex);
	snprintf(t->name, sizeof t->name, "ticket.%s", hex);
	char *rec = record_json(me, t->num);
	struct stat st;
	if (!rec || make_locked(d, t->name, rec, &t->fd, &st) < 0) {
		errbuf_set(err, errlen, "cannot join the queue in '%s': %s", d->path,
			   rec ? strerror(errno) : "out of memory");
		free(rec);
		free(t);
		return GC_EIO;
	}
	free(rec);
	t->ctime_ns = ctime_ns(&st);
	/* those in line before us, as of now: we wait for them and for nobody else */
	struct snap sn = {t, {ctime_ns(&st), t->num, st.st_ino}, GC_OK};
	int rc = scan(d, note_ahead, &sn);
	if (rc < 0 || sn.rc != GC_OK) {
		errbuf_set(err, errlen, "cannot read the queue in '%s'", d->path);
		lease_queue_leave(t);
		return rc < 0 ? rc : sn.rc;
	}
	*out = t;
	return GC_OK;
}

uint64_t lease_ticket_number(const struct lease_ticket *t)
{
	return (uint64_t)t->ctime_ns;
}

/* how many of uuids[n] (NULLs skipped) no live claim holds; *total the others */
struct freecount {
	const char *const *uuids;
	size_t n;
	bool *held;
};

static int note_held(struct lease_dir *d, const char *name, void *arg)
{
	struct freecount *f = arg;
	char uuid[LEASE_UUID_MAX];
	if (!claim_uuid(name, uuid, sizeof uuid))
		return 0;
	for (size_t i = 0; i < f->n; i++)
		if (f->uuids[i] && !f->held[i] && strcmp(f->uuids[i], uuid) == 0 && probe(d, name, false, NULL) == 1)
			f->held[i] = true;
	return 0;
}

int lease_held(struct lease_dir *d, const char *const *uuids, size_t n, bool *held)
{
	for (size_t i = 0; i < n; i++)
		held[i] = false;
	if (d->auth || d->src) {
		struct lease_entry *e = NULL;
		size_t ne = 0;
		int rc = auth_list(d, &e, &ne, NULL, NULL);
		for (size_t k = 0; rc == GC_OK && k < ne; k++)
			for (size_t i = 0; i < n; i++)
				held[i] |= uuids[i] && strcmp(uuids[i], e[k].uuid) == 0;
		free(e);
		return rc;
	}
	struct freecount f = {uuids, n, held};
	return scan(d, note_held, &f);
}

static void drop_ahead(struct lease_ticket *t, size_t i)
{
	t->ahead[i] = t->ahead[--t->nahead];
}

/*
 * Is the process at work: one of its threads running or runnable (R), or in an
 * uninterruptible wait (D)? 1 yes, 0 all asleep or stopped (or gone), -1 cannot
 * tell (its /proc hidden from us).
 */
static int process_active(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	DIR *dir = opendir(path);
	if (!dir)
		return errno == ENOENT ? 0 : -1;
	int active = 0;
	for (struct dirent *e; active != 1 && (e = readdir(dir));) {
		/* a thread's /proc/TID/stat says its own state; one that has just ended says nothing */
		char state = 0;
		long tid = strtol(e->d_name, NULL, 10);
		if (tid > 0 && proc_stat((pid_t)tid, &state, NULL, NULL) == 0 && (state == 'R' || state == 'D'))
			active = 1;
	}
	closedir(dir);
	return active;
}

int lease_queue_is_head(struct lease_dir *d, struct lease_ticket *t, const char *const *uuids, size_t n)
{
	bool joining = !t->looked;
	t->looked = true;
	/* who of those ahead is still in line (the same file, still locked) */
	for (size_t i = 0; i < t->nahead;) {
		struct seen s;
		if (probe(d, t->ahead[i].name, false, &s) == 1 && s.dev == t->ahead[i].dev && s.ino == t->ahead[i].ino)
			i++;
		else
			drop_ahead(t, i);
	}
	if (!t->nahead || !uuids)
		return !t->nahead;
	/* the first of them: does it let GPUs it could take sit free? */
	size_t total = 0, nfree = 0;
	bool *held = calloc(n ? n : 1, sizeof *held);
	if (!held)
		return GC_ENOMEM;
	int rc = lease_held(d, uuids, n, held);
	for (size_t i = 0; i < n; i++) {
		total += uuids[i] != NULL;
		nfree += uuids[i] && !held[i];
	}
	free(held);
	if (rc < 0)
		return rc;
	long long now = clock_mono_ms();
	for (;;) {
		size_t first = 0;
		for (size_t i = 1; i < t->nahead; i++)
			if (key_cmp(&t->ahead[i].key, &t->ahead[first].key) < 0)
				first = i;
		struct ahead *a = &t->ahead[first];
		bool fresh = !a->seen;
		a->seen = true;
		if (a->want > nfree && a->want <= total) {
			a->idle_since = 0;
			return 0;
		}
		/* in line for LEASE_IDLE_MS already, with GPUs for it free as we join: how long it has been
		 * first, and they free, we cannot know. A release wakes the waiters (runnable at once):
		 * one whose process sleeps now has let the GPUs be, and is passed at once; one that is
		 * running may be taking them, and gets LEASE_JOIN_GRACE_MS. One that has just become
		 * first (the one before it left while we looked) gets the whole LEASE_IDLE_MS, however
		 * old: it was woken with us. */
		if (!a->idle_since) {
			struct timespec rt;
			clock_gettime(CLOCK_REALTIME, &rt);
			int64_t age_ms = ((int64_t)rt.tv_sec * 1000000000 + rt.tv_nsec - a->key.ctime_ns) / 1000000;
			if (!joining || !fresh || age_ms < LEASE_IDLE_MS)
				a->idle_since = now;
			else if (a->pid <= 0 || process_active(a->pid) == 0)
				a->idle_since = now - LEASE_IDLE_MS; /* asleep with GPUs free: it has let them be */
			else
				a->idle_since = now - (LEASE_IDLE_MS - LEASE_JOIN_GRACE_MS);
		}
		if (now - a->idle_since < LEASE_IDLE_MS)
			return 0;
		/* at work still (runnable, perhaps not yet given a CPU): its place is kept a while longer */
		if (now - a->idle_since < LEASE_ACTIVE_MAX_MS && a->pid > 0 && process_active(a->pid) == 1)
			return 0;
		/*
		 * It passed up its turn: it loses its place, and so does the rest of its user's tickets
		 * (a user who plants tickets stalls the line once, not once per ticket); but our own user's
		 * other tickets keep theirs: one user's jobs stay in the order they came.
		 */
		uid_t who = a->uid;
		if (who == d->uid)
			drop_ahead(t, first);
		for (size_t i = 0; who != d->uid && i < t->nahead;)
			if (t->ahead[i].uid == who)
				drop_ahead(t, i);
			else
				i++;
		if (!t->nahead)
			return 1;
	}
}

void lease_queue_withdraw(struct lease_ticket *t)
{
	if (t && t->name[0]) {
		(void)unlinkat(t->d->dfd, t->name, 0);
		t->name[0] = '\0';
	}
}

void lease_queue_leave(struct lease_ticket *t)
{
	if (!t)
		return;
	lease_queue_withdraw(t);
	if (t->fd >= 0)
		close(t->fd);
	free(t->ahead);
	free(t);
}

void lease_unwatch(struct lease_dir *d)
{
	/*
	 * Narrowed, not removed: tearing an inotify watch down while the job starts delayed the
	 * job's first file-system calls by 5-20 ms one time in five (bench/lease.sh's cooperative
	 * hand-over: p90 17 ms; narrowed, 2.2 ms). The instance goes with lease_dir_close, after
	 * the job; meanwhile nothing a lease does queues an event on it.
	 */
	if (d && d->ino >= 0 && !d->quiet && inotify_add_watch(d->ino, d->path, IN_DELETE_SELF) >= 0)
		d->quiet = true;
}

int lease_wait(struct lease_dir *d, int timeout_ms)
{
	if (d->auth || d->src) {
		/* gpuctld's grants change out of sight: look again after a short while */
		poll(NULL, 0, timeout_ms >= 0 && timeout_ms < 200 ? timeout_ms : 200);
		return 1;
	}
	if (watch(d) < 0)
		return GC_EIO;
	if (d->ino < 0) { /* polled: nothing tells us, look again soon */
		int r = poll(NULL, 0, timeout_ms >= 0 && timeout_ms < POLL_MS ? timeout_ms : POLL_MS);
		return r < 0 && errno != EINTR ? GC_EIO : 1;
	}
	struct pollfd p = {.fd = d->ino, .events = POLLIN};
	int r = poll(&p, 1, timeout_ms);
	if (r < 0)
		return errno == EINTR ? 1 : GC_EIO;
	if (r == 0)
		return 0;
	char buf[4096];
	while (read(d->ino, buf, sizeof buf) > 0)
		; /* drain: one wake-up is enough, the caller looks again */
	return 1;
}

int lease_watch_fd(struct lease_dir *d)
{
	if (d->auth || d->src)
		return -1; /* gpuctld's grant table says itself when it changes */
	return watch(d) < 0 ? GC_EIO : d->ino; /* -1 when polled: the caller looks on its own timer */
}

void lease_watch_drain(struct lease_dir *d)
{
	char buf[4096];
	while (d->ino >= 0 && read(d->ino, buf, sizeof buf) > 0)
		;
}

/* ---- listings ----------------------------------------------------------- */

struct item {
	struct key key;
	char uuid[LEASE_UUID_MAX];      /* claims */
	uint64_t ticket;                /* tickets */
	struct lease_info info;
};

struct items {
	struct item *v;
	size_t n, cap;
	bool tickets;
	int rc;
	struct pid_memo memo;
};

static int collect(struct lease_dir *d, const char *name, void *arg)
{
	struct items *it = arg;
	char uuid[LEASE_UUID_MAX] = "";
	struct seen s;
	if (!(it->tickets ? ticket_name(name) : claim_uuid(name, uuid, sizeof uuid)) ||
	    probe(d, name, true, &s) != 1)
		return 0;
	if (it->n == it->cap) {
		size_t cap = it->cap ? it->cap * 2 : 8;
		struct item *p = realloc(it->v, cap * sizeof *p);
		if (!p) {
			it->rc = GC_ENOMEM;
			return 1;
		}
		it->v = p;
		it->cap = cap;
	}
	struct item *e = &it->v[it->n++];
	e->key = s.key;
	snprintf(e->uuid, sizeof e->uuid, "%s", uuid);
	e->ticket = (uint64_t)s.key.ctime_ns;
	e->info = s.info;
	if (!it->tickets)
		note_orphan(&e->info, s.dev, s.ino, &it->memo);
	return 0;
}

/* by GPU, then oldest first */
static int by_uuid_key(const void *a, const void *b)
{
	const struct item *x = a, *y = b;
	int c = strcmp(x->uuid, y->uuid);
	return c ? c : key_cmp(&x->key, &y->key);
}

int lease_list(struct lease_dir *d, struct lease_entry **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	if (d->auth || d->src)
		return auth_list(d, out, n, NULL, NULL);
	struct items it = {.rc = GC_OK};
	d->memo = &it.memo;
	int rc = scan(d, collect, &it);
	d->memo = NULL;
	if (rc < 0 || it.rc != GC_OK) {
		free(it.v);
		return rc < 0 ? rc : it.rc;
	}
	if (it.n > 1)
		qsort(it.v, it.n, sizeof *it.v, by_uuid_key);
	struct lease_entry *v = calloc(it.n ? it.n : 1, sizeof *v);
	if (!v) {
		free(it.v);
		return GC_ENOMEM;
	}
	size_t k = 0;
	for (size_t i = 0; i < it.n; i++) {
		/* one holder per GPU: the oldest claim (a second one is a race about to end) */
		if (i && strcmp(it.v[i].uuid, it.v[i - 1].uuid) == 0)
			continue;
		snprintf(v[k].uuid, sizeof v[k].uuid, "%s", it.v[i].uuid);
		v[k].claimed_ns = it.v[i].key.ctime_ns;
		v[k++].info = it.v[i].info;
	}
	free(it.v);
	*out = v;
	*n = k;
	return GC_OK;
}

static int by_key(const void *a, const void *b)
{
	return key_cmp(&((const struct item *)a)->key, &((const struct item *)b)->key);
}

int lease_queue_list(struct lease_dir *d, struct lease_waiter **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	if (d->auth || d->src)
		return auth_list(d, NULL, NULL, out, n);
	struct items it = {.tickets = true, .rc = GC_OK};
	int rc = scan(d, collect, &it);
	if (rc < 0 || it.rc != GC_OK) {
		free(it.v);
		return rc < 0 ? rc : it.rc;
	}
	/* oldest first, in the order the waiters themselves go by */
	if (it.n > 1)
		qsort(it.v, it.n, sizeof *it.v, by_key);
	struct lease_waiter *v = calloc(it.n ? it.n : 1, sizeof *v);
	if (!v) {
		free(it.v);
		return GC_ENOMEM;
	}
	for (size_t i = 0; i < it.n; i++) {
		v[i].ticket = it.v[i].ticket;
		v[i].info = it.v[i].info;
	}
	free(it.v);
	*out = v;
	*n = it.n;
	return GC_OK;
}

void lease_info_self(struct lease_info *i, const char *name, char *const *argv, const char *request)
{
	memset(i, 0, sizeof *i);
	i->pid = i->supervisor = getpid();
	i->uid = getuid();
	i->since = time(NULL); /* user: "", a look-up of 0.07 ms that no reader needs (read_record
				* names the file's owner; gpuctld the connection's) */
	snprintf(i->name, sizeof i->name, "%s", name ? name : "");
	size_t off = 0;
	for (size_t k = 0; argv && argv[k] && off + 1 < sizeof i->command; k++)
		off += (size_t)snprintf(i->command + off, sizeof i->command - off, "%s%s", k ? " " : "", argv[k]);
	for (char *p = i->command; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	snprintf(i->request, sizeof i->request, "%s", request ? request : "");
}

/* ---- what a lease record says, for people ---- */

bool lease_same_holder(pid_t supervisor, uid_t uid, int64_t since, const struct lease_info *i)
{
	return supervisor == i->supervisor && uid == i->uid && (i->supervisor > 0 || since == i->since);
}

void lease_info_sanitize(struct lease_info *i)
{
	char *fields[] = {i->user, i->name, i->command, i->request};
	size_t lens[] = {sizeof i->user, sizeof i->name, sizeof i->command, sizeof i->request};
	for (size_t f = 0; f < 4; f++) {
		char tmp[512];
		size_t n = strnlen(fields[f], lens[f] < sizeof tmp ? lens[f] : sizeof tmp - 1);
		memcpy(tmp, fields[f], n);
		proc_sanitize(fields[f], lens[f], tmp, n);
	}
}

void lease_holder_text(const struct lease_info *raw, char *buf, size_t len)
{
	struct lease_info safe = *raw, *i = &safe;
	lease_info_sanitize(i);
	char when[32] = "?";
	time_t t = (time_t)i->since;
	struct tm tm;
	if (i->since > 0 && localtime_r(&t, &tm))
		strftime(when, sizeof when, time(NULL) - t < 86400 ? "%H:%M" : "%Y-%m-%d %H:%M", &tm);
	int w;
	if (i->orphan && i->live > 0)
		w = snprintf(buf, len, "%s (pid %d, an orphan of pid %d, which has exited; since %s", i->user[0] ? i->user : "?",
			     (int)i->live, (int)i->pid, when);
	else if (i->orphan)
		w = snprintf(buf, len, "%s (an orphan of pid %d, which has exited; since %s", i->user[0] ? i->user : "?",
			     (int)i->pid, when);
	else if (i->pid > 0)
		w = snprintf(buf, len, "%s (pid %d, since %s", i->user[0] ? i->user : "?", (int)i->pid, when);
	else /* its record named no process of its owner's */
		w = snprintf(buf, len, "%s (since %s", i->user[0] ? i->user : "?", when);
	if (w > 0 && (size_t)w < len && i->name[0])
		w += snprintf(buf + w, len - (size_t)w, ", job '%s'", i->name);
	if (w > 0 && (size_t)w < len)
		snprintf(buf + w, len - (size_t)w, ")");
}


/* ---- authority mode (authority.h) ----------------------------------------- */

bool lease_dir_authority(const struct lease_dir *d)
{
	return d && (d->auth || d->src);
}

/* gpuctld's grants on GPUs and its line, as lease_list and lease_queue_list give them (either may be NULL) */
static int auth_list(struct lease_dir *d, struct lease_entry **out, size_t *n, struct lease_waiter **wout, size_t *wn)
{
	if (d->src) {
		int rc = GC_OK;
		if (out && (rc = d->src->list(d->src->arg, out, n)) != GC_OK)
			return rc;
		if (wout && (rc = d->src->waiters(d->src->arg, wout, wn)) != GC_OK) {
			if (out) {
				free(*out);
				*out = NULL;
				*n = 0;
			}
		}
		return rc;
	}
	json_t *ans = NULL;
	char err[256];
	int rc = authority_call(d->sock, json_pack("{s:s}", "op", "leases"), &ans, err, sizeof err);
	if (rc == GC_OK)
		rc = authority_answer_rc(ans, err, sizeof err);
	json_t *g = json_object_get(ans, "grants"), *w = json_object_get(ans, "waiters");
	size_t ng = json_array_size(g), nw = json_array_size(w);
	struct lease_entry *e = out && rc == GC_OK ? calloc(ng ? ng : 1, sizeof *e) : NULL;
	struct lease_waiter *v = wout && rc == GC_OK ? calloc(nw ? nw : 1, sizeof *v) : NULL;
	if (rc == GC_OK && ((out && !e) || (wout && !v)))
		rc = GC_ENOMEM;
	if (rc != GC_OK) {
		free(e);
		free(v);
		json_decref(ans);
		return rc;
	}
	if (out) {
		for (size_t i = 0; i < ng; i++) {
			json_t *o = json_array_get(g, i);
			const char *u = json_string_value(json_object_get(o, "uuid"));
			snprintf(e[i].uuid, sizeof e[i].uuid, "%s", u ? u : "");
			authority_info_read(o, &e[i].info);
		}
		*out = e;
		*n = ng;
	}
	if (wout) {
		for (size_t i = 0; i < nw; i++) {
			json_t *o = json_array_get(w, i);
			v[i].ticket = (uint64_t)json_integer_value(json_object_get(o, "ticket"));
			authority_info_read(o, &v[i].info);
		}
		*wout = v;
		*wn = nw;
	}
	json_decref(ans);
	return GC_OK;
}

/* a lease that is a connection to gpuctld */
static struct lease *auth_lease(const struct lease_info *me, int fd)
{
	struct lease *l = calloc(1, sizeof *l);
	if (!l)
		return NULL;
	l->afd = fd;
	l->own.dfd = l->own.ino = -1;
	l->own.nocache = true;
	l->d = &l->own;
	l->me = *me;
	return l;
}

static json_t *auth_me(const struct lease_info *me)
{
	json_t *o = authority_info_json(me);
	/* who we are is SO_PEERCRED's word, not ours */
	json_object_del(o, "uid");
	json_object_del(o, "user");
	json_object_del(o, "grant");
	json_object_del(o, "orphan");
	json_object_del(o, "live");
	return o;
}

/*
 * Ask on a new connection; the connection is the grant when it is granted. A
 * gpuctld that goes away before it answers (a restart) is asked again once it is
 * back, within the time left: a waiter's place is then its new arrival.
 */
static int auth_request(struct lease_dir *d, json_t *req, long long timeout_ms, const volatile int *stop,
			const struct lease_info *me, struct lease **out, json_t **granted, char *err, size_t errlen)
{
	*out = NULL;
	*granted = NULL;
	long long deadline = timeout_ms < 0 ? -1 : clock_mono_ms() + timeout_ms;
	int rc, fd = -1;
	for (int attempt = 0;; attempt++) {
		long long left = deadline < 0 ? -1 : deadline - clock_mono_ms();
		if (deadline >= 0 && left < 0)
			left = 0;
		fd = authority_connect(d->sock, left, stop, err, errlen);
		if (fd < 0) {
			rc = fd;
			break;
		}
		rc = authority_send(fd, json_incref(req), err, errlen);
		bool answered = false;
		while (rc == GC_OK) {
			json_t *ans = NULL;
			left = deadline < 0 ? -1 : deadline - clock_mono_ms();
			rc = authority_recv(fd, deadline >= 0 && left < 0 ? 0 : left, stop, &ans, err, errlen);
			if (rc != GC_OK)
				break;
			answered = true;
			if ((rc = authority_answer_rc(ans, err, errlen)) != GC_OK) {
				json_t *busy = json_object_get(ans, "busy");
				if (json_is_integer(busy))
					*granted = json_incref(ans);
				json_decref(ans);
				break;
			}
			const char *state = json_string_value(json_object_get(ans, "state"));
			if (state && strcmp(state, "granted") == 0) {
				*granted = ans;
				if (!(*out = auth_lease(me, fd)))
					rc = GC_ENOMEM;
				else
					(*out)->me.grant = (uint64_t)json_integer_value(json_object_get(ans, "grant"));
				break;
			}
			/* waiting in line: why, for a timeout's message */
			const char *w = json_string_value(json_object_get(ans, "why"));
			if (w)
				errbuf_set(err, errlen, "%s", w);
			json_decref(ans);
		}
		/* gpuctld closed the connection before granting: it is stopping or restarting */
		bool gone = rc == GC_EIO && !*out && (!answered || *granted == NULL) && attempt < 100;
		if (!gone || (stop && *stop))
			break;
		close(fd);
		fd = -1;
		poll(NULL, 0, 50); /* not a tight loop: a connection over its user's cap is closed at once too */
	}
	json_decref(req);
	if (rc == GC_ETIMEDOUT && !err[0])
		errbuf_set(err, errlen, "waiting in gpuctld's line");
	if (rc != GC_OK) {
		if (fd >= 0)
			close(fd);
		if (*out) {
			free(*out);
			*out = NULL;
		}
		if (rc != GC_EBUSY) {
			json_decref(*granted);
			*granted = NULL;
		}
	}
	return rc;
}

static int auth_try(struct lease_dir *d, const char *kind, const char *const *uuids, size_t n, int port,
		    const struct lease_info *me, struct lease **out, size_t *busy, char *err, size_t errlen)
{
	*out = NULL;
	if (n == 0 && !port) {
		/* nothing to lease (every GPU is an ancestor's): a lease that holds none */
		return (*out = auth_lease(me, -1)) ? GC_OK : GC_ENOMEM;
	}
	json_t *req = json_pack("{s:s, s:s, s:o}", "op", "lease", "kind", kind, "me", auth_me(me));
	if (port)
		json_object_set_new(req, "port", json_integer(port));
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(uuids[i]));
	json_object_set_new(req, "gpus", a);
	json_object_set_new(req, "n", json_integer((json_int_t)n));
	json_object_set_new(req, "exact", json_true());
	json_t *got = NULL;
	int rc = auth_request(d, req, AUTHORITY_CONNECT_MS, NULL, me, out, &got, err, errlen);
	if (rc == GC_EBUSY) {
		json_int_t b = json_integer_value(json_object_get(got, "busy"));
		*busy = b >= 0 && (size_t)b < n ? (size_t)b : 0;
	}
	json_decref(got);
	return rc;
}

int lease_ask(struct lease_dir *d, struct lease_ask *a, const struct lease_info *me, const volatile int *stop,
	      struct lease **out, char (*got)[LEASE_UUID_MAX], size_t maxgot, size_t *ngot, char *why, size_t whylen)
{
	*out = NULL;
	*ngot = 0;
	a->table = NULL;
	if (!d->auth) {
		errbuf_set(why, whylen, "not in authority mode");
		return GC_EINVAL;
	}
	json_t *req = json_pack("{s:s, s:s, s:o, s:i, s:b, s:b, s:I, s:i, s:b}", "op", "lease", "kind", "gpu", "me",
				auth_me(me), "n", (int)a->n, "exact", a->exact, "wait", a->wait, "min_free_mem",
				(json_int_t)a->min_free_mem, "max_util", a->max_util, "shared", a->shared);
	if (a->model)
		json_object_set_new(req, "model", json_string(a->model));
	if (a->want_table)
		json_object_set_new(req, "table", json_true());
	if (a->allowed) {
		json_t *al = json_array();
		for (size_t i = 0; i < a->nallowed; i++)
			if (a->allowed[i])
				json_array_append_new(al, json_string(a->allowed[i]));
		json_object_set_new(req, "gpus", al);
	}
	json_t *ans = NULL;
	int rc = auth_request(d, req, a->wait ? a->timeout_ms : AUTHORITY_CONNECT_MS, stop, me, out, &ans, why, whylen);
	if (a->want_table && json_is_object(json_object_get(ans, "table")))
		a->table = json_incref(json_object_get(ans, "table"));
	if (rc == GC_OK) {
		json_t *g = json_object_get(ans, "gpus");
		for (size_t i = 0; i < json_array_size(g) && i < maxgot; i++) {
			const char *u = json_string_value(json_array_get(g, i));
			snprintf(got[(*ngot)++], LEASE_UUID_MAX, "%s", u ? u : "");
		}
	}
	json_decref(ans);
	return rc;
}

int lease_revoke(struct lease_dir *d, uint64_t grant, const char *why)
{
	if (!d || !d->src || !d->src->revoke)
		return GC_EINVAL;
	return d->src->revoke(d->src->arg, grant, why);
}
