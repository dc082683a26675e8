/*
 * ckpt.c — checkpoint directory protocol (see ckpt.h and docs/checkpoints.md).
 *
 * The usual recipe (torch.save to a path, then `ln -sf` it to latest) has two
 * holes: `ln -sf` unlinks before it links, so a kill in between leaves no
 * latest at all; and a save killed half-way leaves a file that looks like a
 * checkpoint. Here:
 *   1. the job writes DIR/NAME (a file, or a directory of files);
 *   2. commit fsyncs it, then writes DIR/.gpuctl/NAME.done (temp file,
 *      fsync, rename, fsync of the directory): from this point it counts;
 *   3. commit makes a new symlink and renames it over DIR/latest (atomic:
 *      latest is the old or the new checkpoint, never absent), then fsyncs DIR.
 * A kill before 2 leaves an uncommitted entry that nothing uses; between 2
 * and 3 latest still names the previous complete checkpoint, and
 * ckpt_latest() (which reads the markers) already returns the new one.
 */
#include "jobs/ckpt.h"
#include "util/errbuf.h"
#include "device/gpu.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MARK_DIR ".gpuctl"
#define MAX_DEPTH 32
#define TRASH_PREFIX ".gpuctl-pruned."

/* a name that can be a checkpoint: one path component, not ours, not hidden */
static bool ckpt_name_ok(const char *n)
{
	return n[0] && n[0] != '.' && strchr(n, '/') == NULL && strcmp(n, "latest") != 0 &&
	       strlen(n) < sizeof ((struct ckpt_entry *)0)->name - 8;
}

static int open_dir(const char *dir, char *err, size_t errlen)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		errbuf_set(err, errlen, "cannot open checkpoint directory '%s': %s", dir, strerror(errno));
	return fd;
}

/* a directory stream over a duplicate of fd (fd stays the caller's); NULL with errno set */
static DIR *dir_stream(int fd)
{
	int dup_fd = dup(fd);
	if (dup_fd < 0)
		return NULL;
	DIR *d = fdopendir(dup_fd);
	if (!d) {
		int e = errno;
		close(dup_fd);
		errno = e;
	}
	return d;
}

/* fsync an entry; directories recursively (the files a save wrote, then the directory) */
static int sync_tree(int dfd, const char *name, int depth)
{
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct stat st;
	int rc = fstat(fd, &st);
	if (rc == 0 && S_ISDIR(st.st_mode) && depth < MAX_DEPTH) {
		DIR *d = dir_stream(fd);
		if (!d) {
			rc = -1;
		} else {
			struct dirent *e;
			while (rc == 0 && (e = readdir(d))) {
				if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
					continue;
				struct stat es;
				if (fstatat(fd, e->d_name, &es, AT_SYMLINK_NOFOLLOW) < 0 || S_ISLNK(es.st_mode))
					continue;
				if (S_ISREG(es.st_mode) || S_ISDIR(es.st_mode))
					rc = sync_tree(fd, e->d_name, depth + 1);
			}
			closedir(d);
		}
	}
	if (rc == 0 && fsync(fd) < 0 && errno != EINVAL)
		rc = -1;
	close(fd);
	return rc;
}

/* the pid in a commit's temporary name: ".latest.PID" (latest) or ".NAME.done.PID"; 0 if not one */
static long temp_pid(const char *n, bool latest)
{
	const char *dot = strrchr(n, '.');
	if (n[0] != '.' || !dot || !dot[1] || strspn(dot + 1, "0123456789") != strlen(dot + 1) || strlen(dot + 1) > 9)
		return 0;
	size_t stem = (size_t)(dot - n);
	bool shape = latest ? stem == 7 && memcmp(n, ".latest", 7) == 0
			    : stem > 6 && memcmp(dot - 5, ".done", 5) == 0;
	return shape ? strtol(dot + 1, NULL, 10) : 0;
}

/*
 * The temporary files of a commit that was killed mid-way: removed once their
 * pid is gone. A live committer's are left alone, and so is any other name.
 */
static void remove_stale_temps(int fd, bool latest)
{
	int dup_fd = dup(fd);
	DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
	if (!d) {
		if (dup_fd >= 0)
			close(dup_fd);
		return;
	}
	rewinddir(d);
	for (struct dirent *e; (e = readdir(d));) {
		long pid = temp_pid(e->d_name, latest);
		if (pid > 0 && kill((pid_t)pid, 0) < 0 && errno == ESRCH)
			(void)unlinkat(fd, e->d_name, 0);
	}
	closedir(d);
}

static int write_marker(int mfd, const char *name, int64_t ns, bool is_dir)
{
	char tmp[300], final[300];
	snprintf(tmp, sizeof tmp, ".%s.done.%d", name, (int)getpid());
	snprintf(final, sizeof final, "%s.done", name);
	json_t *o = json_pack("{s:s, s:I, s:s}", "name", name, "committed_ns", (json_int_t)ns, "kind",
			      is_dir ? "directory" : "file");
	char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (!s)
		return -1;
	int fd = openat(mfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	size_t n = strlen(s);
	int rc = fd >= 0 && write(fd, s, n) == (ssize_t)n && fsync(fd) == 0 ? 0 : -1;
	free(s);
	if (fd >= 0)
		close(fd);
	if (rc == 0)
		rc = renameat(mfd, tmp, mfd, final);
	if (rc < 0)
		(void)unlinkat(mfd, tmp, 0);
	return rc == 0 ? fsync(mfd) : -1;
}

int ckpt_commit(const char *dir, const char *path, char *err, size_t errlen)
{
	int dfd = open_dir(dir, err, errlen);
	if (dfd < 0)
		return GC_EIO;
	int rc = GC_OK;
	/* PATH must be an entry of DIR itself: same directory, one component */
	char *copy = strdup(path);
	if (!copy) {
		close(dfd);
		return GC_ENOMEM;
	}
	size_t len = strlen(copy);
	while (len > 1 && copy[len - 1] == '/')
		copy[--len] = '\0';
	char *slash = strrchr(copy, '/');
	const char *name = slash ? slash + 1 : copy;
	struct stat ds, ps, es;
	if (slash) {
		*slash = '\0';
		if (stat(slash == copy ? "/" : copy, &ps) < 0 || fstat(dfd, &ds) < 0 ||
		    ps.st_dev != ds.st_dev || ps.st_ino != ds.st_ino) {
			errbuf_set(err, errlen, "checkpoint '%s' is not directly inside '%s'", path, dir);
			rc = GC_EINVAL;
			goto out;
		}
	} else if (fstat(dfd, &ds) < 0) {
		errbuf_set(err, errlen, "cannot read '%s': %s", dir, strerror(errno));
		rc = GC_EIO;
		goto out;
	}
	if (!ckpt_name_ok(name)) {
		errbuf_set(err, errlen, "'%s' cannot be a checkpoint name (a name other than 'latest', not starting with '.', one path component)",
			name);
		rc = GC_EINVAL;
		goto out;
	}
	if (fstatat(dfd, name, &es, AT_SYMLINK_NOFOLLOW) < 0) {
		errbuf_set(err, errlen, "checkpoint '%s' does not exist: %s", path, strerror(errno));
		rc = GC_ENOTFOUND;
		goto out;
	}
	if (!S_ISREG(es.st_mode) && !S_ISDIR(es.st_mode)) {
		errbuf_set(err, errlen, "checkpoint '%s' is neither a file nor a directory", path);
		rc = GC_EINVAL;
		goto out;
	}
	/* latest must be ours to replace: absent or a symlink */
	struct stat ls;
	if (fstatat(dfd, "latest", &ls, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISLNK(ls.st_mode)) {
		errbuf_set(err, errlen, "'%s/latest' exists and is not a symlink; move it away first", dir);
		rc = GC_EINVAL;
		goto out;
	}
	if (sync_tree(dfd, name, 0) < 0) {
		errbuf_set(err, errlen, "cannot sync checkpoint '%s' to disk: %s", path, strerror(errno));
		rc = GC_EIO;
		goto out;
	}
	if (mkdirat(dfd, MARK_DIR, 0755) < 0 && errno != EEXIST) {
		errbuf_set(err, errlen, "cannot create '%s/%s': %s", dir, MARK_DIR, strerror(errno));
		rc = GC_EIO;
		goto out;
	}
	int mfd = openat(dfd, MARK_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (mfd >= 0)
		remove_stale_temps(mfd, false);
	remove_stale_temps(dfd, true);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	int64_t ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
	if (mfd < 0 || write_marker(mfd, name, ns, S_ISDIR(es.st_mode)) < 0) {
		errbuf_set(err, errlen, "cannot record checkpoint '%s' as complete in '%s/%s': %s", path, dir,
			MARK_DIR, strerror(errno));
		if (mfd >= 0)
			close(mfd);
		rc = GC_EIO;
		goto out;
	}
	close(mfd);
	/* repoint latest: a new symlink renamed over the old one */
	char tmp[64];
	snprintf(tmp, sizeof tmp, ".latest.%d", (int)getpid());
	(void)unlinkat(dfd, tmp, 0);
	if (symlinkat(name, dfd, tmp) < 0 || renameat(dfd, tmp, dfd, "latest") < 0 || fsync(dfd) < 0) {
		errbuf_set(err, errlen, "checkpoint '%s' is complete but '%s/latest' could not be updated: %s",
			path, dir, strerror(errno));
		(void)unlinkat(dfd, tmp, 0);
		rc = GC_EIO;
	}
out:
	free(copy);
	close(dfd);
	return rc;
}

static int by_newest(const void *a, const void *b)
{
	const struct ckpt_entry *x = a, *y = b;
	if (x->complete != y->complete)
		return x->complete ? -1 : 1;
	if (x->committed_ns != y->committed_ns)
		return x->committed_ns > y->committed_ns ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int64_t read_marker(int mfd, const char *name)
{
	char file[300];
	snprintf(file, sizeof file, "%s.done", name);
	int fd = openat(mfd, file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0;
	char buf[1024];
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	json_t *o = json_loadb(buf, (size_t)n, 0, NULL);
	int64_t ns = 0;
	if (o && json_is_string(json_object_get(o, "name")) &&
	    strcmp(json_string_value(json_object_get(o, "name")), name) == 0)
		ns = json_integer_value(json_object_get(o, "committed_ns"));
	json_decref(o);
	return ns > 0 ? ns : 0;
}

int ckpt_list(const char *dir, struct ckpt_entry **out, size_t *n, char *err, size_t errlen)
{
	*out = NULL;
	*n = 0;
	int dfd = open_dir(dir, err, errlen);
	if (dfd < 0)
		return GC_EIO;
	int mfd = openat(dfd, MARK_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = dir_stream(dfd);
	if (!d) {
		errbuf_set(err, errlen, "cannot list '%s': %s", dir, strerror(errno));
		if (mfd >= 0)
			close(mfd);
		close(dfd);
		return GC_EIO;
	}
	size_t cap = 0;
	int rc = GC_OK;
	struct dirent *e;
	while ((e = readdir(d))) {
		struct stat st;
		if (!ckpt_name_ok(e->d_name) || fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)))
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			struct ckpt_entry *p = realloc(*out, cap * sizeof *p);
			if (!p) {
				rc = GC_ENOMEM;
				break;
			}
			*out = p;
		}
		struct ckpt_entry *c = &(*out)[(*n)++];
		memset(c, 0, sizeof *c);
		snprintf(c->name, sizeof c->name, "%s", e->d_name);
		c->is_dir = S_ISDIR(st.st_mode);
		c->committed_ns = mfd >= 0 ? read_marker(mfd, e->d_name) : 0;
		c->complete = c->committed_ns > 0;
	}
	closedir(d);
	if (mfd >= 0)
		close(mfd);
	close(dfd);
	if (rc != GC_OK) {
		free(*out);
		*out = NULL;
		*n = 0;
		return rc;
	}
	if (*n > 1)
		qsort(*out, *n, sizeof **out, by_newest);
	return GC_OK;
}

int ckpt_latest(const char *dir, char *out, size_t outlen, char *err, size_t errlen)
{
	struct ckpt_entry *v;
	size_t n;
	int rc = ckpt_list(dir, &v, &n, err, errlen);
	if (rc != GC_OK)
		return rc;
	if (n == 0 || !v[0].complete) {
		errbuf_set(err, errlen, "no complete checkpoint in '%s'", dir);
		free(v);
		return GC_ENOTFOUND;
	}
	int w = snprintf(out, outlen, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", v[0].name);
	free(v);
	if (w < 0 || (size_t)w >= outlen) {
		errbuf_set(err, errlen, "checkpoint path too long");
		return GC_EINVAL;
	}
	return GC_OK;
}

/* Delete an entry of dfd without following symlinks or leaving the tree. */
static int remove_tree(int dfd, const char *name, int depth)
{
	struct stat st;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(dfd, name, 0);
	if (depth >= MAX_DEPTH) {
		errno = ELOOP;
		return -1;
	}
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct stat fs;
	/* same device and inode as what we looked at: not swapped for a symlink in between */
	if (fstat(fd, &fs) < 0 || fs.st_dev != st.st_dev || fs.st_ino != st.st_ino) {
		close(fd);
		errno = EAGAIN;
		return -1;
	}
	DIR *d = dir_stream(fd);
	int rc = 0;
	if (!d) {
		rc = -1;
	} else {
		struct dirent *e;
		while (rc == 0 && (e = readdir(d)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
				rc = remove_tree(fd, e->d_name, depth + 1);
		closedir(d);
	}
	close(fd);
	return rc == 0 ? unlinkat(dfd, name, AT_REMOVEDIR) : -1;
}

/*
 * What a prune killed half-way left: TRASH_PREFIX NAME.PID entries (only
 * prune makes them; they are out of every listing) and NAME's marker when no
 * NAME came back since. Removed by the next prune.
 */
static void sweep_trash(int dfd, int mfd)
{
	DIR *d = dir_stream(dfd);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t pl = strlen(TRASH_PREFIX);
		const char *dot = strrchr(e->d_name, '.');
		if (strncmp(e->d_name, TRASH_PREFIX, pl) != 0 || !dot || dot == e->d_name + pl)
			continue;
		char name[256], mark[300];
		snprintf(name, sizeof name, "%.*s", (int)(dot - e->d_name - pl), e->d_name + pl);
		snprintf(mark, sizeof mark, "%s.done", name);
		struct stat st;
		/* (a NAME written and committed again in between would lose its marker: a window of
		 * microseconds after a killed prune, and it then only counts as uncommitted) */
		if (mfd >= 0 && fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
			unlinkat(mfd, mark, 0);
		remove_tree(dfd, e->d_name, 0);
	}
	closedir(d);
}

int ckpt_prune(const char *dir, unsigned keep, size_t *removed, char *err, size_t errlen)
{
	*removed = 0;
	if (keep < 1) {
		errbuf_set(err, errlen, "--keep must be at least 1: the newest complete checkpoint is never deleted");
		return GC_EINVAL;
	}
	struct ckpt_entry *v;
	size_t n;
	int rc = ckpt_list(dir, &v, &n, err, errlen);
	if (rc != GC_OK)
		return rc;
	int dfd = open_dir(dir, err, errlen);
	if (dfd < 0) {
		free(v);
		return GC_EIO;
	}
	int mfd = openat(dfd, MARK_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	/* whatever latest names stays too, even if clocks disagree about "newest" */
	char target[256] = "";
	ssize_t tl = readlinkat(dfd, "latest", target, sizeof target - 1);
	target[tl > 0 ? tl : 0] = '\0';
	sweep_trash(dfd, mfd);
	unsigned kept = 0;
	for (size_t i = 0; i < n && rc == GC_OK; i++) {
		if (!v[i].complete)
			continue; /* maybe being written right now */
		if (kept < keep || strcmp(v[i].name, target) == 0) {
			kept++;
			continue;
		}
		/*
		 * Out of the listing first (a rename: a half-deleted checkpoint must
		 * never count as complete, nor stay behind as an uncommitted entry
		 * when we are killed), then its marker, then the files.
		 */
		char trash[300], mark[300];
		snprintf(trash, sizeof trash, "%s%s.%d", TRASH_PREFIX, v[i].name, (int)getpid());
		snprintf(mark, sizeof mark, "%s.done", v[i].name);
		if (renameat(dfd, v[i].name, dfd, trash) < 0 || fsync(dfd) < 0 ||
		    (mfd >= 0 && unlinkat(mfd, mark, 0) < 0 && errno != ENOENT) || (mfd >= 0 && fsync(mfd) < 0) ||
		    remove_tree(dfd, trash, 0) < 0) {
			errbuf_set(err, errlen, "cannot delete checkpoint '%s/%s': %s", dir, v[i].name, strerror(errno));
			rc = GC_EIO;
			break;
		}
		(*removed)++;
	}
	if (mfd >= 0)
		close(mfd);
	close(dfd);
	free(v);
	return rc;
}

/* ---- `gpuctl ckpt list --json`, and the public gc_ckpt_* ---- */

char *ckpt_entries_json(const struct ckpt_entry *v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < n; i++) {
		char when[40] = "";
		if (v[i].complete) {
			time_t t = (time_t)(v[i].committed_ns / 1000000000);
			struct tm tm;
			gmtime_r(&t, &tm);
			strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
		}
		json_array_append_new(a, json_pack("{s:s, s:s, s:b, s:o}", "name", v[i].name, "kind",
						  v[i].is_dir ? "directory" : "file", "complete", v[i].complete,
						  "committed", v[i].complete ? json_string(when) : json_null()));
	}
	char *s = a ? json_dumps(a, JSON_INDENT(2)) : NULL;
	json_decref(a);
	return s;
}

/* a NULL or empty directory, or a NULL result pointer: GC_EINVAL with the message */
static int bad_args(const char *fn, const char *dir, const void *out, char *err, size_t errlen)
{
	if (dir && *dir && out)
		return GC_OK;
	errbuf_set(err, errlen, "%s: %s", fn, !dir || !*dir ? "no checkpoint directory given" : "no place for the result");
	return GC_EINVAL;
}

int gc_ckpt_commit(const char *dir, const char *path, char *err, size_t errlen)
{
	int rc = bad_args("gc_ckpt_commit", dir, path, err, errlen);
	if (rc == GC_OK && !*path) {
		errbuf_set(err, errlen, "gc_ckpt_commit: no checkpoint given (a file or directory in '%s')", dir);
		rc = GC_EINVAL;
	}
	return rc != GC_OK ? rc : ckpt_commit(dir, path, err, errlen);
}

int gc_ckpt_latest(const char *dir, char *out, size_t outlen, char *err, size_t errlen)
{
	int rc = bad_args("gc_ckpt_latest", dir, out, err, errlen);
	return rc != GC_OK ? rc : ckpt_latest(dir, out, outlen, err, errlen);
}

int gc_ckpt_prune(const char *dir, unsigned keep, size_t *removed, char *err, size_t errlen)
{
	size_t n = 0;
	int rc = bad_args("gc_ckpt_prune", dir, &n, err, errlen);
	if (rc == GC_OK)
		rc = ckpt_prune(dir, keep, &n, err, errlen);
	if (removed)
		*removed = n;
	return rc;
}

int gc_ckpt_list_json(const char *dir, char **json, char *err, size_t errlen)
{
	int rc = bad_args("gc_ckpt_list_json", dir, json, err, errlen);
	if (rc != GC_OK)
		return rc;
	*json = NULL;
	struct ckpt_entry *v;
	size_t n;
	if ((rc = ckpt_list(dir, &v, &n, err, errlen)) != GC_OK)
		return rc;
	*json = ckpt_entries_json(v, n);
	free(v);
	if (!*json) {
		errbuf_set(err, errlen, "out of memory");
		return GC_ENOMEM;
	}
	return GC_OK;
}
