/*
 * lease.c — per-GPU leases and the FIFO of waiters (see lease.h).
 *
 * Layout of the state directory (shared, mode 1777 like /tmp, or private):
 *   gpu-<UUID>   one per GPU ever leased: flock(LOCK_EX) = leased; the
 *                content is the holder's record (JSON), for display only
 *   .mutex       flock'ed around every try and peek, so that a reader's
 *                probing LOCK_SH can never make an acquirer's LOCK_EX|LOCK_NB
 *                fail, and a multi-GPU acquisition is atomic
 *   seq          the last ticket number handed out
 *   queue/<n>.<pid>  one ticket per waiter, flock'ed by it for its life and
 *                made visible (renamed in) only once locked and numbered
 *
 * Files are never unlinked once a lock may be taken on them (unlink + flock
 * races are a classic); a free GPU's file simply keeps its last record.
 * Every path is opened relative to the directory with O_NOFOLLOW, so a
 * symlink planted in a shared directory is refused, not followed.
 */
#include "lease.h"
#include "errbuf.h"
#include "proc.h"
#include "gpuctl/gpuctl.h"

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
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct lease_dir {
	int dfd;    /* the state directory */
	int mutex;  /* .mutex */
	bool locked;            /* mutex_lock took it (mutex_unlock lets it go) */
	long long skip_until;   /* monotonic ms: until then the mutex is not waited for */
	int ino;    /* inotify, -1 until a waiter needs it */
	char path[PATH_MAX];
};

struct lease {
	struct lease_dir *d;
	struct lease_info me;
	size_t n;
	int fds[];
};

struct lease_ticket {
	struct lease_dir *d;
	int fd;
	uint64_t num;
	char name[64];
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
	if (access(path, W_OK | X_OK) < 0) {
		errbuf_set(err, errlen, "cannot use state directory '%s': %s (set GPUCTL_STATE_DIR to a "
			"writable directory)", path, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* A file every user of the directory can open for writing: 0666 despite umask. */
static int open_shared(int dfd, const char *name, int flags)
{
	int fd = openat(dfd, name, flags | O_NOFOLLOW | O_CLOEXEC, 0666);
	if (fd < 0)
		return -1;
	struct stat st;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
	    (st.st_mode & 0777) != 0666)
		(void)fchmod(fd, 0666);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		errno = EINVAL;
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
	d->dfd = d->mutex = d->ino = -1;
	const char *env = getenv("GPUCTL_STATE_DIR");
	int fd = -1;
	mode_t mode = 0700;
	if (!path && env && *env)
		path = env;
	if (path) {
		fd = open_dir(path, 0700, create, err, errlen);
		snprintf(d->path, sizeof d->path, "%s", path);
	} else if (access("/run/gpuctl", W_OK | X_OK) == 0 ||
		   (access("/run/gpuctl", F_OK) < 0 && access("/run", W_OK | X_OK) == 0)) {
		/* shared by every user of the machine, like /tmp */
		mode = 01777;
		fd = open_dir("/run/gpuctl", mode, create, err, errlen);
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
	if (fd < 0) {
		int e = errno;
		free(d);
		return !create && e == ENOENT ? GC_ENOTFOUND : GC_EIO;
	}
	d->dfd = fd;
	int rc = check_dir(fd, d->path, err, errlen);
	if (rc != GC_OK)
		goto fail;
	/*
	 * The waiters' tickets live in the state directory itself, beside the lease
	 * files: a subdirectory would belong to whichever user made it first, and that
	 * user could then lock everyone else out of the queue.
	 */
	d->mutex = open_shared(fd, ".mutex", create ? O_RDWR | O_CREAT : O_RDWR);
	if (d->mutex < 0)
		d->mutex = openat(fd, ".mutex", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (d->mutex < 0) {
		/* a reader may find the directory before any writer has set it up: nothing is leased */
		rc = !create && errno == ENOENT ? GC_ENOTFOUND : GC_EIO;
		errbuf_set(err, errlen, "cannot open '%s/.mutex': %s", d->path, strerror(errno));
		goto fail;
	}
	*out = d;
	return GC_OK;
fail:
	lease_dir_close(d);
	return rc;
}

void lease_dir_close(struct lease_dir *d)
{
	if (!d)
		return;
	if (d->dfd >= 0)
		close(d->dfd);
	if (d->mutex >= 0)
		close(d->mutex);
	if (d->ino >= 0)
		close(d->ino);
	free(d);
}

const char *lease_dir_path(const struct lease_dir *d)
{
	return d->path;
}

#define MUTEX_WAIT_MS 100   /* the longest anyone holds .mutex when all is well is microseconds */
#define MUTEX_SKIP_MS 5000

static long long mono_now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/*
 * .mutex keeps a record from being read half written and ticket numbers in the
 * order tickets appear. Every user can lock it, so one user holding it must not
 * stall everyone (and a blocked flock would not even let SIGINT through): it is
 * waited for at most MUTEX_WAIT_MS, then done without, best effort, and not
 * waited for again for MUTEX_SKIP_MS. Each lease is still its own file's flock.
 */
static void mutex_lock(struct lease_dir *d)
{
	d->locked = false;
	long long start = mono_now_ms();
	if (start < d->skip_until)
		return;
	for (;;) {
		if (flock(d->mutex, LOCK_EX | LOCK_NB) == 0) {
			d->locked = true;
			return;
		}
		if (errno != EWOULDBLOCK && errno != EINTR)
			return;
		long long now = mono_now_ms();
		if (now - start >= MUTEX_WAIT_MS) {
			d->skip_until = now + MUTEX_SKIP_MS;
			return;
		}
		nanosleep(&(struct timespec){.tv_nsec = 200000}, NULL);
	}
}

static void mutex_unlock(struct lease_dir *d)
{
	if (d->locked)
		flock(d->mutex, LOCK_UN);
	d->locked = false;
}

static bool valid_uuid(const char *u)
{
	size_t n = 0;
	for (; u[n]; n++)
		if (!((u[n] >= 'a' && u[n] <= 'z') || (u[n] >= 'A' && u[n] <= 'Z') ||
		      (u[n] >= '0' && u[n] <= '9') || u[n] == '-'))
			return false;
	return n > 0 && n < LEASE_UUID_MAX;
}

static void file_name(char *buf, size_t len, const char *uuid)
{
	snprintf(buf, len, "gpu-%s", uuid);
}

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

static int write_record(int fd, const struct lease_info *in, uint64_t ticket)
{
	struct lease_info copy = *in, *i = &copy;
	text_for_json(copy.user);
	text_for_json(copy.name);
	text_for_json(copy.command);
	text_for_json(copy.request);
	json_t *o = json_pack("{s:I, s:I, s:I, s:s, s:I, s:s, s:s, s:s}", "pid", (json_int_t)i->pid,
			      "supervisor", (json_int_t)i->supervisor, "uid", (json_int_t)i->uid,
			      "user", i->user, "since", (json_int_t)i->since, "name", i->name,
			      "command", i->command, "request", i->request);
	if (!o)
		return -1;
	if (ticket)
		json_object_set_new(o, "ticket", json_integer((json_int_t)ticket));
	char *s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (!s)
		return -1;
	size_t n = strlen(s);
	/* write, then cut to length: truncating to 0 first costs ~1 ms on ext4 */
	int rc = (pwrite(fd, s, n, 0) == (ssize_t)n && ftruncate(fd, (off_t)n) == 0) ? 0 : -1;
	free(s);
	return rc;
}

static void copy_field(char *dst, size_t len, json_t *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));
	snprintf(dst, len, "%s", v ? v : "");
}

static void read_record(int fd, struct lease_info *i, uint64_t *ticket)
{
	char buf[4096];
	memset(i, 0, sizeof *i);
	ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
	if (n <= 0)
		return;
	json_t *o = json_loadb(buf, (size_t)n, 0, NULL);
	if (!o)
		return;
	i->pid = (pid_t)json_integer_value(json_object_get(o, "pid"));
	i->supervisor = (pid_t)json_integer_value(json_object_get(o, "supervisor"));
	i->uid = (uid_t)json_integer_value(json_object_get(o, "uid"));
	i->since = json_integer_value(json_object_get(o, "since"));
	copy_field(i->user, sizeof i->user, o, "user");
	copy_field(i->name, sizeof i->name, o, "name");
	copy_field(i->command, sizeof i->command, o, "command");
	copy_field(i->request, sizeof i->request, o, "request");
	if (ticket)
		*ticket = (uint64_t)json_integer_value(json_object_get(o, "ticket"));
	json_decref(o);
}

/* ---- leases ------------------------------------------------------------- */

/* 1 held (record read), 0 free, <0 error; called with the mutex held */
static int peek_locked(struct lease_dir *d, const char *name, struct lease_info *info)
{
	int fd = openat(d->dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : GC_EIO;
	int rc;
	if (flock(fd, LOCK_SH | LOCK_NB) == 0) {
		flock(fd, LOCK_UN);
		rc = 0;
	} else if (errno == EWOULDBLOCK) {
		if (info)
			read_record(fd, info, NULL);
		rc = 1;
	} else {
		rc = GC_EIO;
	}
	close(fd);
	return rc;
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

/* the record names a job and a supervisor that are both gone, yet the lock is held: by an
 * orphan of the job. Name it when it can be seen. Outside the mutex: /proc is slow. */
static void note_orphan(struct lease_dir *d, const char *name, struct lease_info *info)
{
	info->orphan = false;
	info->live = 0;
	if (info->pid <= 0 || alive(info->pid) || alive(info->supervisor))
		return;
	info->orphan = true;
	struct stat st;
	if (fstatat(d->dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
		info->live = opener_of(st.st_dev, st.st_ino);
}

int lease_peek(struct lease_dir *d, const char *uuid, struct lease_info *info)
{
	if (!valid_uuid(uuid))
		return GC_EINVAL;
	char name[LEASE_UUID_MAX + 8];
	file_name(name, sizeof name, uuid);
	mutex_lock(d);
	int rc = peek_locked(d, name, info);
	mutex_unlock(d);
	if (rc == 1 && info)
		note_orphan(d, name, info);
	return rc;
}

/* the parent of pid; 0 if gone */
static pid_t parent_of(pid_t pid)
{
	pid_t pp = 0;
	return proc_stat(pid, NULL, &pp, NULL) == 0 ? pp : 0;
}

/* pid is this process or one of its ancestors: a shell that exec'd its last command is both */
static bool is_ancestor(pid_t pid)
{
	if (pid <= 1)
		return false;
	if (pid == getpid())
		return true;
	pid_t p = getppid();
	for (int depth = 0; p > 1 && depth < 256; depth++, p = parent_of(p))
		if (p == pid)
			return true;
	return false;
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

int lease_ours(struct lease_dir *d, const char *uuid, struct lease_info *info)
{
	if (!valid_uuid(uuid))
		return GC_EINVAL;
	char name[LEASE_UUID_MAX + 8];
	file_name(name, sizeof name, uuid);
	struct lease_info me;
	mutex_lock(d);
	int rc = peek_locked(d, name, &me);
	struct stat st;
	bool have = rc == 1 && fstatat(d->dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
	mutex_unlock(d);
	if (rc != 1)
		return rc;
	if (info)
		*info = me;
	/* the record is the holder's word: believe it only where the kernel agrees */
	if (!have || me.uid != getuid() || !(is_ancestor(me.pid) || is_ancestor(me.supervisor)))
		return 0;
	return holds_open(me.pid, st.st_dev, st.st_ino) || holds_open(me.supervisor, st.st_dev, st.st_ino);
}

int lease_drop_ours(struct lease_dir *d, const char *uuid)
{
	struct lease_info info;
	int rc = lease_ours(d, uuid, &info);
	if (rc != 1)
		return rc;
	/* only a holder that is not one of our ancestors (pick --lease's): an outer gpuctl run
	 * lets its GPUs go when its job ends, not before */
	char name[LEASE_UUID_MAX + 8];
	file_name(name, sizeof name, uuid);
	struct stat st;
	if (is_ancestor(info.supervisor) || fstatat(d->dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !holds_open(info.supervisor, st.st_dev, st.st_ino))
		return GC_EBUSY;
	if (kill(info.supervisor, SIGTERM) < 0)
		return errno == ESRCH ? 1 : GC_EIO;
	/* its death drops the lock: wait for that, up to 2 s */
	for (int i = 0; i < 200; i++) {
		if (lease_peek(d, uuid, NULL) != 1)
			return 1;
		nanosleep(&(struct timespec){.tv_nsec = 10000000}, NULL);
	}
	return GC_ETIMEDOUT;
}

static void close_all(int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

int lease_try(struct lease_dir *d, const char *const *uuids, size_t n, const struct lease_info *me,
	      struct lease **out, size_t *busy, char *err, size_t errlen)
{
	*out = NULL;
	for (size_t i = 0; i < n; i++) {
		if (!valid_uuid(uuids[i])) {
			errbuf_set(err, errlen, "invalid GPU UUID '%.100s'", uuids[i]);
			return GC_EINVAL;
		}
	}
	struct lease *l = calloc(1, sizeof *l + n * sizeof l->fds[0]);
	size_t *order = malloc((n ? n : 1) * sizeof *order);
	if (!l || !order) {
		free(l);
		free(order);
		return GC_ENOMEM;
	}
	l->d = d;
	l->n = n;
	l->me = *me;
	for (size_t i = 0; i < n; i++)
		l->fds[i] = -1;
	/* one global order (by UUID) so that two acquirers can never deadlock */
	for (size_t i = 0; i < n; i++)
		order[i] = i;
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && strcmp(uuids[order[j - 1]], uuids[order[j]]) > 0; j--) {
			size_t t = order[j];
			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	int rc = GC_OK;
	mutex_lock(d);
	for (size_t k = 0; k < n; k++) {
		size_t i = order[k];
		char name[LEASE_UUID_MAX + 8];
		file_name(name, sizeof name, uuids[i]);
		int fd = open_shared(d->dfd, name, O_RDWR | O_CREAT);
		if (fd < 0) {
			errbuf_set(err, errlen, "cannot open lease file '%s/%s': %s", d->path, name,
				errno == ELOOP ? "it is a symbolic link" : strerror(errno));
			rc = GC_EIO;
			break;
		}
		l->fds[i] = fd;
		if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
			if (errno == EWOULDBLOCK) {
				*busy = i;
				rc = GC_EBUSY;
			} else {
				errbuf_set(err, errlen, "cannot lock '%s/%s': %s", d->path, name, strerror(errno));
				rc = GC_EIO;
			}
			break;
		}
	}
	if (rc == GC_OK) {
		for (size_t i = 0; i < n; i++) {
			if (write_record(l->fds[i], me, 0) < 0) {
				errbuf_set(err, errlen, "cannot write lease file in '%s': %s", d->path,
					strerror(errno));
				rc = GC_EIO;
				break;
			}
		}
	}
	mutex_unlock(d);
	free(order);
	if (rc != GC_OK) {
		close_all(l->fds, n); /* closing drops every lock taken so far */
		free(l);
		return rc;
	}
	*out = l;
	return GC_OK;
}

void lease_set_pid(struct lease *l, pid_t pid, pid_t supervisor)
{
	l->me.pid = pid;
	if (supervisor)
		l->me.supervisor = supervisor;
	mutex_lock(l->d); /* readers never see half a record */
	for (size_t i = 0; i < l->n; i++)
		(void)write_record(l->fds[i], &l->me, 0);
	mutex_unlock(l->d);
}

int lease_inherit(struct lease *l)
{
	for (size_t i = 0; i < l->n; i++)
		if (fcntl(l->fds[i], F_SETFD, 0) < 0)
			return GC_EIO;
	return GC_OK;
}

void lease_release(struct lease *l)
{
	if (!l)
		return;
	/* the record stays: a free file is told apart by its lock, not its content */
	close_all(l->fds, l->n);
	free(l);
}

/* ---- the queue ---------------------------------------------------------- */

static int watch(struct lease_dir *d)
{
	if (d->ino >= 0)
		return 0;
	d->ino = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (d->ino < 0)
		return -1;
	/* a lease file's last close (release, death) and a ticket leaving */
	if (inotify_add_watch(d->ino, d->path, IN_CLOSE_WRITE | IN_DELETE | IN_MOVED_FROM) < 0) {
		close(d->ino);
		d->ino = -1;
		return -1;
	}
	return 0;
}

static uint64_t next_number(struct lease_dir *d)
{
	int fd = open_shared(d->dfd, "seq", O_RDWR | O_CREAT);
	if (fd < 0)
		return 0;
	char buf[32] = "";
	ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
	buf[n > 0 ? n : 0] = '\0';
	uint64_t v = strtoull(buf, NULL, 10) + 1;
	int w = snprintf(buf, sizeof buf, "%" PRIu64 "\n", v);
	if (pwrite(fd, buf, (size_t)w, 0) != w || ftruncate(fd, w) < 0)
		v = 0;
	close(fd);
	return v;
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
	char tmp[64];
	snprintf(tmp, sizeof tmp, ".new-%d-%ld", (int)getpid(), (long)ts.tv_nsec);
	int rc = GC_OK;
	/* numbering and appearing under one lock: a lower number is always visible first */
	mutex_lock(d);
	t->num = next_number(d);
	t->fd = openat(d->dfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (t->num == 0 || t->fd < 0 || flock(t->fd, LOCK_EX | LOCK_NB) < 0 ||
	    write_record(t->fd, me, t->num) < 0) {
		errbuf_set(err, errlen, "cannot join the queue in '%s': %s", d->path, strerror(errno));
		rc = GC_EIO;
	} else {
		snprintf(t->name, sizeof t->name, "%020" PRIu64 ".%d", t->num, (int)getpid());
		if (renameat(d->dfd, tmp, d->dfd, t->name) < 0) {
			errbuf_set(err, errlen, "cannot join the queue in '%s': %s", d->path,
				strerror(errno));
			rc = GC_EIO;
		}
	}
	if (rc != GC_OK)
		(void)unlinkat(d->dfd, tmp, 0);
	mutex_unlock(d);
	if (rc != GC_OK) {
		if (t->fd >= 0)
			close(t->fd);
		free(t);
		return rc;
	}
	*out = t;
	return GC_OK;
}

uint64_t lease_ticket_number(const struct lease_ticket *t)
{
	return t->num;
}

/* Visit every ticket: fn returns non-zero to stop. */
static int each_ticket(struct lease_dir *d, int (*fn)(struct lease_dir *, const char *, uint64_t, void *),
		       void *arg)
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
	struct dirent *e;
	while (!rc && (e = readdir(dir))) {
		if (e->d_name[0] == '.')
			continue;
		char *end;
		uint64_t num = strtoull(e->d_name, &end, 10);
		if (*end != '.')
			continue;
		rc = fn(d, e->d_name, num, arg);
	}
	closedir(dir);
	return rc;
}

/* 1 live (record read if info), 0 stale or gone */
static int ticket_live(struct lease_dir *d, const char *name, struct lease_info *info, bool reap)
{
	int fd = openat(d->dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0;
	int live = flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
	if (live && info)
		read_record(fd, info, NULL);
	if (!live && reap)
		(void)unlinkat(d->dfd, name, 0); /* its waiter died; fails harmlessly if not ours to remove */
	close(fd);
	return live;
}

static int older_live(struct lease_dir *d, const char *name, uint64_t num, void *arg)
{
	const struct lease_ticket *t = arg;
	return num < t->num && ticket_live(d, name, NULL, true);
}

int lease_queue_is_head(struct lease_dir *d, const struct lease_ticket *t)
{
	int rc = each_ticket(d, older_live, (void *)t);
	return rc < 0 ? rc : !rc;
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
	close(t->fd);
	free(t);
}

void lease_unwatch(struct lease_dir *d)
{
	if (d && d->ino >= 0) {
		close(d->ino);
		d->ino = -1;
	}
}

int lease_wait(struct lease_dir *d, int timeout_ms)
{
	if (watch(d) < 0)
		return GC_EIO;
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
	return watch(d) < 0 ? GC_EIO : d->ino;
}

void lease_watch_drain(struct lease_dir *d)
{
	char buf[4096];
	while (d->ino >= 0 && read(d->ino, buf, sizeof buf) > 0)
		;
}

/* ---- listings ----------------------------------------------------------- */

int lease_list(struct lease_dir *d, struct lease_entry **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	int fd = dup(d->dfd);
	DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
	if (!dir) {
		if (fd >= 0)
			close(fd);
		return GC_EIO;
	}
	rewinddir(dir);
	size_t cap = 0;
	int rc = GC_OK;
	struct dirent *e;
	while ((e = readdir(dir))) {
		if (strncmp(e->d_name, "gpu-", 4) != 0 || !valid_uuid(e->d_name + 4))
			continue;
		struct lease_info info;
		mutex_lock(d);
		int held = peek_locked(d, e->d_name, &info);
		mutex_unlock(d);
		if (held != 1)
			continue;
		note_orphan(d, e->d_name, &info);
		if (*n == cap) {
			cap = cap ? cap * 2 : 8;
			struct lease_entry *p = realloc(*out, cap * sizeof *p);
			if (!p) {
				rc = GC_ENOMEM;
				break;
			}
			*out = p;
		}
		snprintf((*out)[*n].uuid, sizeof (*out)[*n].uuid, "%s", e->d_name + 4);
		(*out)[*n].info = info;
		(*n)++;
	}
	closedir(dir);
	return rc;
}

struct qlist {
	struct lease_waiter *v;
	size_t n, cap;
	int rc;
};

static int collect(struct lease_dir *d, const char *name, uint64_t num, void *arg)
{
	struct qlist *q = arg;
	struct lease_info info;
	if (!ticket_live(d, name, &info, false))
		return 0;
	if (q->n == q->cap) {
		size_t cap = q->cap ? q->cap * 2 : 8;
		struct lease_waiter *p = realloc(q->v, cap * sizeof *p);
		if (!p) {
			q->rc = GC_ENOMEM;
			return 1;
		}
		q->v = p;
		q->cap = cap;
	}
	q->v[q->n].ticket = num;
	q->v[q->n].info = info;
	q->n++;
	return 0;
}

static int by_ticket(const void *a, const void *b)
{
	uint64_t x = ((const struct lease_waiter *)a)->ticket, y = ((const struct lease_waiter *)b)->ticket;
	return x < y ? -1 : x > y;
}

int lease_queue_list(struct lease_dir *d, struct lease_waiter **out, size_t *n)
{
	struct qlist q = {NULL, 0, 0, GC_OK};
	int rc = each_ticket(d, collect, &q);
	if (rc < 0 || q.rc != GC_OK) {
		free(q.v);
		*out = NULL;
		*n = 0;
		return rc < 0 ? rc : q.rc;
	}
	if (q.n > 1)
		qsort(q.v, q.n, sizeof *q.v, by_ticket);
	*out = q.v;
	*n = q.n;
	return GC_OK;
}
