/*
 * simhold.c — gpuctl-sim-hold: run a command as if it held memory on a
 * simulated GPU.
 *
 *   gpuctl-sim-hold [--rundir DIR] --gpu N[,N...] --mem SIZE -- CMD [ARGS...]
 *
 * It registers its own pid in the simulator's runtime directory and then
 * execs CMD, which keeps that pid, so the simulated driver reports CMD as a
 * compute process using SIZE bytes on each GPU named, for exactly as long as
 * CMD lives (a dead pid's registration is dropped by the simulator). This is
 * how tests and demos put "busy" GPUs in front of gpuctl without hardware.
 *
 *   gpuctl-sim-hold [--rundir DIR] --gpu N[,N...] --xid XID
 *
 * The second form raises Xid error XID on each GPU named, now, and exits:
 * the simulated driver reports it to every event set registered for Xid
 * errors on that GPU (nvmlEventSetWait_v2), as the real one does.
 *
 * Exit status: CMD's own once exec succeeds (0 for --xid); 2 for bad usage;
 * 1 if the registration cannot be written; 127 if CMD cannot be run.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "sim.h"

#define PROG "gpuctl-sim-hold"
#define MAX_GPUS 64

static void usage(FILE *f)
{
	fprintf(f, "usage: " PROG " [--rundir DIR] --gpu N[,N...] --mem SIZE -- CMD [ARGS...]\n"
		   "       " PROG " [--rundir DIR] --gpu N[,N...] --xid XID\n");
}

/* bytes, or a binary multiple: 512K, 512KiB, 20G, 20GiB, 1T ... */
static bool parse_size(const char *s, unsigned long long *out)
{
	static const struct {
		const char *suffix;
		unsigned int shift;
	} units[] = {
		{ "", 0 },    { "B", 0 },    { "K", 10 },   { "KiB", 10 }, { "M", 20 },
		{ "MiB", 20 }, { "G", 30 },  { "GiB", 30 }, { "T", 40 },   { "TiB", 40 },
	};
	unsigned long long v;
	char *end;

	if (!isdigit((unsigned char)s[0]))
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return false;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].suffix) != 0)
			continue;
		if (v > ((unsigned long long)INT64_MAX >> units[i].shift))
			return false;
		*out = v << units[i].shift;
		return true;
	}
	return false;
}

/* "0" or "0,1,3" */
static int parse_gpus(const char *s, unsigned int *gpus)
{
	int n = 0;

	for (;;) {
		unsigned long v;
		char *end;

		if (!isdigit((unsigned char)*s) || n == MAX_GPUS)
			return -1;
		errno = 0;
		v = strtoul(s, &end, 10);
		if (errno || v > 4095)
			return -1;
		gpus[n++] = (unsigned int)v;
		if (*end == '\0')
			return n;
		if (*end != ',')
			return -1;
		s = end + 1;
	}
}

/* The node file may name the runtime directory; the library honours it, so must we. */
static char *node_rundir(const char *node_path)
{
	json_t *root, *v;
	char *r = NULL;

	if (!node_path || !node_path[0])
		return NULL;
	root = json_load_file(node_path, 0, NULL);
	v = json_object_get(root, "rundir");
	if (json_is_string(v))
		r = strdup(json_string_value(v));
	json_decref(root);
	return r;
}

static int mkdir_p(char *path, mode_t mode)
{
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0777) < 0 && errno != EEXIST) {
			*p = '/';
			return -1;
		}
		*p = '/';
	}
	if (mkdir(path, mode) < 0 && errno != EEXIST)
		return -1;
	return 0;
}

/* A private default directory must really be ours: not a symlink, not someone else's. */
static int check_private(const char *dir)
{
	struct stat st;

	if (lstat(dir, &st) < 0)
		return -1;
	if (!S_ISDIR(st.st_mode) || st.st_uid != getuid()) {
		errno = EPERM;
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *rundir_opt = NULL, *gpu_opt = NULL, *mem_opt = NULL, *xid_opt = NULL;
	unsigned long long xid = 0;
	unsigned int gpus[MAX_GPUS];
	unsigned long long mem = 0;
	char dir[PATH_MAX];
	bool is_default = false;
	int ngpus, i, saved;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char **slot = NULL;
		const char *name = NULL;

		if (strcmp(a, "--") == 0) {
			i++;
			break;
		}
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			usage(stdout);
			return 0;
		}
		if (strncmp(a, "--rundir", 8) == 0) {
			slot = &rundir_opt;
			name = "--rundir";
		} else if (strncmp(a, "--gpu", 5) == 0) {
			slot = &gpu_opt;
			name = "--gpu";
		} else if (strncmp(a, "--mem", 5) == 0) {
			slot = &mem_opt;
			name = "--mem";
		} else if (strncmp(a, "--xid", 5) == 0) {
			slot = &xid_opt;
			name = "--xid";
		}
		if (slot && a[strlen(name)] == '=') {
			*slot = a + strlen(name) + 1;
		} else if (slot && a[strlen(name)] == '\0') {
			if (i + 1 >= argc) {
				fprintf(stderr, PROG ": %s needs a value\n", name);
				return 2;
			}
			*slot = argv[++i];
		} else {
			fprintf(stderr, PROG ": unknown option '%s'\n", a);
			usage(stderr);
			return 2;
		}
	}
	if (!gpu_opt || (xid_opt ? mem_opt || i < argc : !mem_opt || i >= argc)) {
		usage(stderr);
		return 2;
	}
	if (xid_opt) {
		char *end;
		errno = 0;
		xid = strtoull(xid_opt, &end, 10);
		if (!isdigit((unsigned char)xid_opt[0]) || *end || errno || xid == 0 || xid > 1000000) {
			fprintf(stderr, PROG ": invalid --xid '%s' (expected an Xid number such as 79)\n", xid_opt);
			return 2;
		}
	}
	ngpus = parse_gpus(gpu_opt, gpus);
	if (ngpus < 0) {
		fprintf(stderr, PROG ": invalid --gpu '%s' (expected a GPU index such as 0, or 0,1)\n",
			gpu_opt);
		return 2;
	}
	if (mem_opt && !parse_size(mem_opt, &mem)) {
		fprintf(stderr, PROG ": invalid --mem '%s' (expected a size such as 512MiB or 20G)\n",
			mem_opt);
		return 2;
	}

	if (rundir_opt) {
		if (snprintf(dir, sizeof(dir), "%s", rundir_opt) >= (int)sizeof(dir)) {
			fprintf(stderr, PROG ": --rundir is too long\n");
			return 2;
		}
	} else {
		const char *node = getenv("GPUCTL_SIM_NODE");
		char *nr = node_rundir(node);
		int rc = sim_rundir_resolve(node, nr, dir, sizeof(dir), &is_default);

		free(nr);
		if (rc < 0) {
			fprintf(stderr, PROG ": runtime directory path is too long\n");
			return 1;
		}
	}
	if (mkdir_p(dir, is_default ? 0700 : 0777) < 0 || (is_default && check_private(dir) < 0)) {
		fprintf(stderr, PROG ": cannot use runtime directory '%s': %s\n", dir,
			strerror(errno));
		return 1;
	}
	if (xid_opt) {
		for (int g = 0; g < ngpus; g++) {
			if (sim_rundir_xid(dir, gpus[g], xid) < 0) {
				fprintf(stderr, PROG ": cannot record Xid %llu in '%s': %s\n", xid, dir, strerror(errno));
				return 1;
			}
		}
		return 0;
	}
	for (int g = 0; g < ngpus; g++) {
		if (sim_rundir_register(dir, (long)getpid(), gpus[g], mem) < 0) {
			fprintf(stderr, PROG ": cannot write registration in '%s': %s\n", dir,
				strerror(errno));
			return 1;
		}
	}

	execvp(argv[i], argv + i);
	saved = errno;
	for (int g = 0; g < ngpus; g++) {
		char path[PATH_MAX + 64];

		snprintf(path, sizeof(path), "%s/%ld-%u.json", dir, (long)getpid(), gpus[g]);
		unlink(path);
	}
	fprintf(stderr, PROG ": cannot run '%s': %s\n", argv[i], strerror(saved));
	return 127;
}
