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

/* Read one registration; returns 0 and fills *p, or -1 if malformed. */
static int read_reg(int dfd, const char *name, long pid, unsigned long gpu, struct sim_proc *p)
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

int sim_rundir_scan(const char *dir, unsigned int gpu, struct sim_proc **procs, size_t *n,
		    size_t *cap)
{
	size_t first = *n, seen = 0;
	struct dirent *de;
	DIR *d;
	int rc = 0;

	d = opendir(dir);
	if (!d)
		return 0;
	while (seen < SIM_REG_MAX_ENTRIES && (de = readdir(d)) != NULL) {
		struct sim_proc p;
		unsigned long g;
		long pid;

		seen++;
		if (!parse_name(de->d_name, &pid, &g) || g != gpu)
			continue;
		if (kill((pid_t)pid, 0) < 0 && errno == ESRCH) {
			/* its process is gone: so is its claim on the GPU */
			unlinkat(dirfd(d), de->d_name, 0);
			continue;
		}
		if (read_reg(dirfd(d), de->d_name, pid, g, &p) < 0)
			continue;
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
		(*procs)[(*n)++] = p;
	}
	closedir(d);
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
