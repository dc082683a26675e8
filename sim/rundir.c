/*
 * rundir.c — process registrations in the simulator's runtime directory.
 *
 * A real driver knows which processes hold GPU memory; the simulator learns
 * it from small files `<pid>-<gpu>.json` that gpuctl-sim-hold (or a test)
 * drops into a directory. That lets tests start real processes that "use"
 * a simulated GPU, and lets a registration die with its process: a file
 * whose pid no longer exists is deleted the next time anyone looks.
 * Everything read here comes from outside, so it is bounded: at most
 * SIM_REG_MAX_ENTRIES directory entries, files of at most SIM_REG_MAX_BYTES.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "sim.h"

int sim_rundir_resolve(const char *node_path, const char *node_rundir, char *buf, size_t len,
		       bool *is_default)
{
	const char *env = getenv("GPUCTL_SIM_RUNDIR");
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	int w;

	*is_default = false;
	if (env && env[0]) {
		w = snprintf(buf, len, "%s", env);
	} else if (node_rundir && node_rundir[0]) {
		const char *slash = node_path ? strrchr(node_path, '/') : NULL;

		if (node_rundir[0] == '/' || !slash)
			w = snprintf(buf, len, "%s", node_rundir);
		else
			w = snprintf(buf, len, "%.*s/%s", (int)(slash - node_path), node_path,
				     node_rundir);
	} else if (xdg && xdg[0] == '/') {
		*is_default = true;
		w = snprintf(buf, len, "%s/gpuctl-sim", xdg);
	} else {
		*is_default = true;
		w = snprintf(buf, len, "/tmp/gpuctl-sim-%u", (unsigned int)getuid());
	}
	return (w < 0 || (size_t)w >= len) ? -1 : 0;
}

/* "<pid>-<gpu>.json" with decimal numbers; anything else is not ours. */
static bool parse_name(const char *name, long *pid, unsigned long *gpu)
{
	char *end;

	if (name[0] < '1' || name[0] > '9')
		return false;
	errno = 0;
	*pid = strtol(name, &end, 10);
	if (errno || *end != '-' || *pid <= 0 || *pid > INT_MAX)
		return false;
	name = end + 1;
	if (name[0] < '0' || name[0] > '9')
		return false;
	*gpu = strtoul(name, &end, 10);
	if (errno || strcmp(end, ".json") != 0 || *gpu > UINT_MAX)
		return false;
	return true;
}

/* Read one registration; returns 0 and fills *p, or -1 if malformed (*fst: the file's stat, once opened). */
static int read_reg(int dfd, const char *name, long pid, unsigned long gpu, struct sim_proc *p,
		    struct stat *fst)
{
	char buf[SIM_REG_MAX_BYTES + 1];
	struct stat st;
	json_t *root, *jp, *jg, *jm;
	ssize_t got;
	size_t n = 0;
	int fd, rc = -1;

	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > SIM_REG_MAX_BYTES) {
		close(fd);
		return -1;
	}
	*fst = st;
	while (n < sizeof(buf) && (got = read(fd, buf + n, sizeof(buf) - n)) > 0)
		n += (size_t)got;
	close(fd);
	if (n == 0 || n > SIM_REG_MAX_BYTES)
		return -1;
	root = json_loadb(buf, n, 0, NULL);
	if (!root)
		return -1;
	jp = json_object_get(root, "pid");
	jg = json_object_get(root, "gpu");
	jm = json_object_get(root, "used_memory");
	if (json_is_integer(jp) && json_integer_value(jp) == pid && json_is_integer(jg) &&
	    json_integer_value(jg) == (json_int_t)gpu && json_is_integer(jm) &&
	    json_integer_value(jm) >= 0) {
		p->pid = (unsigned int)pid;
		p->used_memory = (unsigned long long)json_integer_value(jm);
		p->type = SIM_PROC_COMPUTE;
		p->gpu_instance_id = 0xFFFFFFFFu;
		p->compute_instance_id = 0xFFFFFFFFu;
		p->sm_util = p->mem_util = -1; /* it holds memory; it runs no kernels */
		p->user = p->command = NULL;
		rc = 0;
	}
	json_decref(root);
	return rc;
}

static int by_pid(const void *a, const void *b)
{
	const struct sim_proc *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

/*
 * The registrations of the last scan, every GPU's, so that the many calls of
 * one sample (memory and processes of each GPU) read the directory once, as a
 * driver answers from memory. The scan is used again while neither the
 * directory nor any file it listed has changed (its mtime, and each file's
 * inode, mtime and size), and only when those changes are older than
 * RACY_NS before the scan began: a change within the file system's coarse
 * clock tick of the scan could carry the same mtime. Liveness is checked on
 * every call: a registration dies with its process.
 */
#define RACY_NS 20000000LL

struct reg {
	char name[40];
	unsigned int gpu;
	ino_t ino;
	off_t size;
	struct timespec mtim;
	bool ok; /* well formed: p is it */
	struct sim_proc p;
};

static struct {
	pthread_mutex_t lock;
	bool valid;
	char dir[PATH_MAX];
	dev_t dev;
	ino_t ino;
	struct timespec mtim;
	long long began; /* CLOCK_REALTIME ns at the start of the scan */
	struct reg *v;
	size_t n, cap;
} cache = { .lock = PTHREAD_MUTEX_INITIALIZER };

static long long ts_ns(struct timespec t)
{
	return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static bool same_time(struct timespec a, struct timespec b)
{
	return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

/* the cached scan of dir still holds (cache.lock held) */
static bool cache_holds(const char *dir)
{
	struct stat st;
	char path[PATH_MAX];

	if (!cache.valid || strcmp(cache.dir, dir) != 0 || stat(dir, &st) < 0 || st.st_dev != cache.dev ||
	    st.st_ino != cache.ino || !same_time(st.st_mtim, cache.mtim) ||
	    ts_ns(st.st_mtim) >= cache.began - RACY_NS)
		return false;
	for (size_t i = 0; i < cache.n; i++) {
		const struct reg *r = &cache.v[i];
		if (snprintf(path, sizeof(path), "%s/%s", dir, r->name) >= (int)sizeof(path) ||
		    lstat(path, &st) < 0 || st.st_ino != r->ino || st.st_size != r->size ||
		    !same_time(st.st_mtim, r->mtim) || ts_ns(st.st_mtim) >= cache.began - RACY_NS)
			return false;
	}
	return true;
}

/* scan dir into the cache (cache.lock held); -1 when out of memory */
static int cache_fill(const char *dir)
{
	struct timespec now;
	struct stat st;
	struct dirent *de;
	size_t seen = 0;
	bool removed = false; /* a dead process's registration: the directory changed, scan again next time */
	DIR *d;

	cache.valid = false;
	cache.n = 0;
	if (strlen(dir) >= sizeof(cache.dir))
		return 0;
	clock_gettime(CLOCK_REALTIME, &now);
	d = opendir(dir);
	if (!d || fstat(dirfd(d), &st) < 0) {
		if (d)
			closedir(d);
		return 0; /* no directory: no registrations, and nothing to keep */
	}
	snprintf(cache.dir, sizeof(cache.dir), "%s", dir);
	cache.dev = st.st_dev;
	cache.ino = st.st_ino;
	cache.mtim = st.st_mtim;
	cache.began = ts_ns(now);
	while (seen < SIM_REG_MAX_ENTRIES && (de = readdir(d)) != NULL) {
		unsigned long g;
		long pid;

		seen++;
		if (!parse_name(de->d_name, &pid, &g) || strlen(de->d_name) >= sizeof(cache.v->name))
			continue;
		if (kill((pid_t)pid, 0) < 0 && errno == ESRCH) {
			/* its process is gone: so is its claim on the GPU */
			unlinkat(dirfd(d), de->d_name, 0);
			removed = true;
			continue;
		}
		if (cache.n == cache.cap) {
			size_t ncap = cache.cap ? cache.cap * 2 : 16;
			struct reg *v = realloc(cache.v, ncap * sizeof(*v));

			if (!v) {
				closedir(d);
				cache.n = 0;
				return -1;
			}
			cache.v = v;
			cache.cap = ncap;
		}
		struct reg *r = &cache.v[cache.n];
		memset(r, 0, sizeof(*r));
		memcpy(r->name, de->d_name, strlen(de->d_name)); /* shorter than name: checked above */
		r->gpu = (unsigned int)g;
		r->ok = read_reg(dirfd(d), de->d_name, pid, g, &r->p, &st) == 0;
		if (!r->ok && fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue; /* gone already */
		r->ino = st.st_ino;
		r->size = st.st_size;
		r->mtim = st.st_mtim;
		cache.n++;
	}
	closedir(d);
	cache.valid = !removed;
	return 0;
}

void sim_rundir_forget(void)
{
	pthread_mutex_lock(&cache.lock);
	free(cache.v);
	cache.v = NULL;
	cache.n = cache.cap = 0;
	cache.valid = false;
	pthread_mutex_unlock(&cache.lock);
}

int sim_rundir_scan(const char *dir, unsigned int gpu, struct sim_proc **procs, size_t *n,
		    size_t *cap)
{
	size_t first = *n;
	int rc = 0;

	pthread_mutex_lock(&cache.lock);
	if (!cache_holds(dir))
		rc = cache_fill(dir);
	for (size_t i = 0; rc == 0 && i < cache.n; i++) {
		const struct reg *r = &cache.v[i];

		if (r->gpu != gpu || !r->ok)
			continue;
		if (kill((pid_t)r->p.pid, 0) < 0 && errno == ESRCH) {
			char path[PATH_MAX];
			if (snprintf(path, sizeof(path), "%s/%s", dir, r->name) < (int)sizeof(path))
				unlink(path);
			cache.valid = false;
			continue;
		}
		if (*n == *cap) {
			size_t ncap = *cap ? *cap * 2 : 16;
			struct sim_proc *v = realloc(*procs, ncap * sizeof(*v));

			if (!v) {
				rc = -1;
				break;
			}
			*procs = v;
			*cap = ncap;
		}
		(*procs)[(*n)++] = r->p;
	}
	pthread_mutex_unlock(&cache.lock);
	/* readdir order is arbitrary; callers see a stable order */
	qsort(*procs + first, *n - first, sizeof(**procs), by_pid);
	return rc;
}

int sim_rundir_register(const char *dir, long pid, unsigned int gpu, unsigned long long used)
{
	char tmp[PATH_MAX], final[PATH_MAX], body[160];
	int fd, len, saved;
	size_t off = 0;

	len = snprintf(body, sizeof(body), "{\"pid\": %ld, \"gpu\": %u, \"used_memory\": %llu}\n",
		       pid, gpu, used);
	if (snprintf(tmp, sizeof(tmp), "%s/.reg-%ld-%u.XXXXXX", dir, pid, gpu) >= (int)sizeof(tmp) ||
	    snprintf(final, sizeof(final), "%s/%ld-%u.json", dir, pid, gpu) >= (int)sizeof(final)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fchmod(fd, 0644) < 0)
		goto fail;
	while (off < (size_t)len) {
		ssize_t w = write(fd, body + off, (size_t)len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			goto fail;
		off += (size_t)w;
	}
	if (close(fd) < 0) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	if (rename(tmp, final) < 0)
		goto fail;
	return 0;
fail:
	saved = errno;
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	errno = saved;
	return -1;
}

/*
 * An Xid event: the empty file xid-<gpu>-<ns>-<xid> in dir (ns: CLOCK_REALTIME
 * when it happened), made by gpuctl-sim-hold --xid. An event set reports each
 * one made after it was created, once.
 */
int sim_rundir_xid(const char *dir, unsigned int gpu, unsigned long long xid)
{
	char path[PATH_MAX];
	struct timespec now;
	int fd;

	clock_gettime(CLOCK_REALTIME, &now);
	if (snprintf(path, sizeof(path), "%s/xid-%u-%lld-%llu", dir, gpu,
		     (long long)now.tv_sec * 1000000000LL + now.tv_nsec, xid) >= (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	return close(fd);
}

int sim_rundir_next_xid(const char *dir, const bool *gpus, unsigned int ngpus, long long after_ns,
			unsigned int *gpu, long long *ns, unsigned long long *xid)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t seen = 0;
	int found = 0;

	if (!d)
		return 0;
	while (seen < SIM_REG_MAX_ENTRIES && (de = readdir(d)) != NULL) {
		unsigned int g;
		long long t;
		unsigned long long x;
		int end = 0;

		seen++;
		if (sscanf(de->d_name, "xid-%u-%lld-%llu%n", &g, &t, &x, &end) != 3 || de->d_name[end] != '\0' ||
		    g >= ngpus || !gpus[g] || t <= after_ns)
			continue;
		if (!found || t < *ns) {
			found = 1;
			*gpu = g;
			*ns = t;
			*xid = x;
		}
	}
	closedir(d);
	return found;
}
