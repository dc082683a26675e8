/*
 * nodecache.c — the simulator's parsed-node cache.
 *
 * Parsing a node file with jansson is most of what opening the simulated
 * node costs (about 0.35 ms of a 17 kB, 8-GPU file on a 2-core VM: every
 * `gpuctl run` in cooperative mode paid it), where a real driver's nvmlInit
 * reads no JSON at all. So the first load of a node file also writes its
 * parsed form, flattened into one block (pointers stored as offsets), to
 * a private cache directory; a later load of the same file reads that block
 * back and turns the offsets into pointers again, checking every one against
 * the block's bounds.
 *
 * A cached form is used only when it names the very file (device, inode,
 * size, mtime and ctime, in ns) and the very simulator library (inode, size,
 * mtime) and was written with this layout. It is written only for a file
 * whose ctime is at least a second old: a file changed again within the
 * clock's granularity of its last change would keep its timestamps, and the
 * change would go unseen. Where it goes: cache_dir(). A cache file is
 * trusted only when this user owns it. Every failure here only means the
 * file is parsed as before.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sim.h"

#define CACHE_MAGIC "gsimnod"
#define CACHE_VERSION 2
#define CACHE_MAX_BYTES (256L * 1024 * 1024)
#define ALIGN 16

/* what a block was made from: compared whole (no padding) at every load */
struct cache_id {
	char generation[16];
	uint64_t lib_ino, lib_size, lib_mtime_ns;    /* this simulator library's file */
	uint64_t dev, ino, size, mtime_ns, ctime_ns; /* the node file's */
};
_Static_assert(sizeof(struct cache_id) == 16 + 8 * 8, "struct cache_id has padding");

struct cache_hdr {
	char magic[8];
	uint32_t version;
	uint32_t sizes[6]; /* the structs' sizes: a layout changed by a rebuild */
	struct cache_id id;
	uint64_t len;         /* of the whole block, this header included */
	uint64_t node;        /* offset of the struct sim_node */
	uint64_t rundir;      /* offset of the file's own "rundir" string; 0: none */
};

static void layout(uint32_t sizes[6])
{
	sizes[0] = sizeof(struct sim_node);
	sizes[1] = sizeof(struct nvmlDevice_st);
	sizes[2] = sizeof(struct sim_proc);
	sizes[3] = sizeof(struct sim_mig);
	sizes[4] = sizeof(struct sim_fault);
	sizes[5] = sizeof(struct cache_hdr);
}

static uint64_t ns_of(struct timespec t)
{
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* this library's own file, so that a rebuilt simulator never reads an old block */
static int lib_identity(uint64_t *ino, uint64_t *size, uint64_t *mtime_ns)
{
	static int done; /* 1: known, -1: unknown */
	static uint64_t k_ino, k_size, k_mtime;
	if (!done) {
		Dl_info info;
		struct stat st;
		done = -1;
		if (dladdr((void *)lib_identity, &info) && info.dli_fname && stat(info.dli_fname, &st) == 0) {
			k_ino = (uint64_t)st.st_ino;
			k_size = (uint64_t)st.st_size;
			k_mtime = ns_of(st.st_mtim);
			done = 1;
		}
	}
	*ino = k_ino;
	*size = k_size;
	*mtime_ns = k_mtime;
	return done > 0 ? 0 : -1;
}

/* what a block says of its format: checked by sim_node_unflatten */
static void fill_format(struct cache_hdr *h)
{
	memcpy(h->magic, CACHE_MAGIC, sizeof h->magic);
	h->version = CACHE_VERSION;
	layout(h->sizes);
}

/* which node file and which simulator library a block is made from: checked by sim_node_cache_get;
 * -1 when this library cannot be named (then no block is used or kept) */
static int fill_identity(struct cache_id *id, const struct stat *st)
{
	memset(id, 0, sizeof *id);
	snprintf(id->generation, sizeof id->generation, "%s", sim_generation);
	int rc = lib_identity(&id->lib_ino, &id->lib_size, &id->lib_mtime_ns);
	id->dev = (uint64_t)st->st_dev;
	id->ino = (uint64_t)st->st_ino;
	id->size = (uint64_t)st->st_size;
	id->mtime_ns = ns_of(st->st_mtim);
	id->ctime_ns = ns_of(st->st_ctim);
	return rc;
}

/* ---- flattening ------------------------------------------------------------ */

struct flat {
	char *base;
	size_t len, cap;
	int fail;
};

/* append n bytes (NULL: zeros) at the next ALIGN boundary; their offset, or 0 on failure */
static uint64_t put(struct flat *f, const void *p, size_t n)
{
	size_t at = (f->len + ALIGN - 1) & ~(size_t)(ALIGN - 1);
	if (f->fail || n > CACHE_MAX_BYTES || at + n > CACHE_MAX_BYTES) {
		f->fail = 1;
		return 0;
	}
	if (at + n > f->cap) {
		size_t cap = f->cap ? f->cap : 16384;
		while (cap < at + n)
			cap *= 2;
		char *b = realloc(f->base, cap);
		if (!b) {
			f->fail = 1;
			return 0;
		}
		f->base = b;
		f->cap = cap;
	}
	memset(f->base + f->len, 0, at - f->len);
	if (p)
		memcpy(f->base + at, p, n);
	else
		memset(f->base + at, 0, n);
	f->len = at + n;
	return at;
}

static uint64_t put_str(struct flat *f, const char *s)
{
	return s ? put(f, s, strlen(s) + 1) : 0;
}

#define AT(f, type, off) ((type *)((f)->base + (off)))
/* a pointer field holding an offset into the block */
#define OFF(v) ((void *)(uintptr_t)(v))

/* copy faults->v (and one zeroed entry after it) with their names; the array's offset */
static uint64_t put_faults(struct flat *f, const struct sim_faults *src)
{
	if (!src->v)
		return 0;
	uint64_t at = put(f, NULL, (src->n + 1) * sizeof(struct sim_fault));
	for (size_t i = 0; i < src->n && !f->fail; i++) {
		uint64_t fn = put_str(f, src->v[i].fn);
		struct sim_fault *d = AT(f, struct sim_fault, at) + i;
		*d = src->v[i];
		d->fn = OFF(fn);
	}
	return at;
}

static void put_gpu(struct flat *f, uint64_t gat, const struct nvmlDevice_st *g)
{
	uint64_t name = put_str(f, g->name), uuid = put_str(f, g->uuid), serial = put_str(f, g->serial),
		 vbios = put_str(f, g->vbios), procs = 0, migs = 0, faults = put_faults(f, &g->faults);
	if (g->procs) {
		procs = put(f, NULL, (g->nprocs + 1) * sizeof(struct sim_proc));
		for (size_t k = 0; k < g->nprocs && !f->fail; k++) {
			uint64_t user = put_str(f, g->procs[k].user), command = put_str(f, g->procs[k].command);
			struct sim_proc *d = AT(f, struct sim_proc, procs) + k;
			*d = g->procs[k];
			d->user = OFF(user);
			d->command = OFF(command);
		}
	}
	if (g->migs) {
		migs = put(f, NULL, ((size_t)g->nmig + 1) * sizeof(struct sim_mig));
		for (unsigned int k = 0; k < g->nmig && !f->fail; k++) {
			uint64_t uuid_ = put_str(f, g->migs[k].uuid), profile = put_str(f, g->migs[k].profile),
				 mname = put_str(f, g->migs[k].name);
			struct sim_mig *d = AT(f, struct sim_mig, migs) + k;
			*d = g->migs[k];
			d->parent = OFF(gat);
			d->uuid = OFF(uuid_);
			d->profile = OFF(profile);
			d->name = OFF(mname);
		}
	}
	if (f->fail)
		return;
	struct nvmlDevice_st *d = AT(f, struct nvmlDevice_st, gat);
	*d = *g;
	d->name = OFF(name);
	d->uuid = OFF(uuid);
	d->serial = OFF(serial);
	d->vbios = OFF(vbios);
	d->procs = OFF(procs);
	d->migs = OFF(migs);
	d->faults.v = OFF(faults);
}

void *sim_node_flatten(const struct sim_node *n, const char *rundir_field, size_t *len)
{
	struct flat f = {0};
	uint64_t hdr = put(&f, NULL, sizeof(struct cache_hdr));
	uint64_t node = put(&f, NULL, sizeof *n);
	uint64_t gpus = put(&f, NULL, ((size_t)n->ngpus + 1) * sizeof(struct nvmlDevice_st));
	for (unsigned int i = 0; i < n->ngpus && !f.fail; i++)
		put_gpu(&f, gpus + i * sizeof(struct nvmlDevice_st), &n->gpus[i]);
	uint64_t dv = put_str(&f, n->driver_version), nv = put_str(&f, n->nvml_version),
		 faults = put_faults(&f, &n->faults), rundir = put_str(&f, rundir_field);
	if (f.fail) {
		free(f.base);
		return NULL;
	}
	struct sim_node *d = AT(&f, struct sim_node, node);
	*d = *n;
	d->driver_version = OFF(dv);
	d->nvml_version = OFF(nv);
	d->rundir = NULL; /* resolved again at every load: it depends on the environment */
	d->blob = NULL;
	d->gpus = OFF(gpus);
	d->faults.v = OFF(faults);
	struct cache_hdr *h = AT(&f, struct cache_hdr, hdr);
	fill_format(h);
	h->len = f.len;
	h->node = node;
	h->rundir = rundir;
	*len = f.len;
	return f.base;
}

/* ---- the way back: offsets to pointers, each checked ------------------------- */

struct blk {
	char *base;
	size_t len;
};

/* an array of n elements of size sz at offset v: its address, or NULL (bad: *ok = 0) */
static void *arr(const struct blk *b, const void *v, size_t n, size_t sz, int *ok)
{
	uint64_t off = (uint64_t)(uintptr_t)v;
	if (off == 0)
		return NULL;
	if (off % ALIGN || off >= b->len || n >= (b->len - off) / sz) { /* n + 1 entries are written */
		*ok = 0;
		return NULL;
	}
	return b->base + off;
}

/* a NUL-terminated string at offset v: its address, or NULL (bad: *ok = 0) */
static char *str(const struct blk *b, const void *v, int *ok)
{
	uint64_t off = (uint64_t)(uintptr_t)v;
	if (off == 0)
		return NULL;
	if (off >= b->len || !memchr(b->base + off, '\0', b->len - off)) {
		*ok = 0;
		return NULL;
	}
	return b->base + off;
}

static void fix_faults(const struct blk *b, struct sim_faults *f, int *ok)
{
	f->v = arr(b, f->v, f->n, sizeof *f->v, ok);
	if (!f->v)
		f->n = 0;
	for (size_t i = 0; i < f->n && *ok; i++) {
		f->v[i].fn = str(b, f->v[i].fn, ok);
		f->v[i].calls = 0;
		if (!f->v[i].fn)
			*ok = 0;
	}
}

static void fix_gpu(const struct blk *b, struct nvmlDevice_st *g, int *ok)
{
	g->name = str(b, g->name, ok);
	g->uuid = str(b, g->uuid, ok);
	g->serial = str(b, g->serial, ok);
	g->vbios = str(b, g->vbios, ok);
	g->procs = arr(b, g->procs, g->nprocs, sizeof *g->procs, ok);
	if (!g->procs)
		g->nprocs = 0;
	for (size_t k = 0; k < g->nprocs && *ok; k++) {
		g->procs[k].user = str(b, g->procs[k].user, ok);
		g->procs[k].command = str(b, g->procs[k].command, ok);
	}
	g->migs = arr(b, g->migs, g->nmig, sizeof *g->migs, ok);
	if (!g->migs)
		g->nmig = 0;
	for (unsigned int k = 0; k < g->nmig && *ok; k++) {
		struct sim_mig *m = &g->migs[k];
		m->parent = g; /* every MIG device was its own GPU's */
		m->uuid = str(b, m->uuid, ok);
		m->profile = str(b, m->profile, ok);
		m->name = str(b, m->name, ok);
	}
	fix_faults(b, &g->faults, ok);
	g->lost = false;
}

struct sim_node *sim_node_unflatten(void *block, size_t len, const char **rundir_field)
{
	struct blk b = {block, len};
	const struct cache_hdr *h = block;
	uint32_t sizes[6];
	layout(sizes);
	if (len < sizeof *h || memcmp(h->magic, CACHE_MAGIC, sizeof h->magic) != 0 ||
	    h->version != CACHE_VERSION || memcmp(h->sizes, sizes, sizeof sizes) != 0 || h->len != len)
		return NULL;
	int ok = 1;
	struct sim_node *n = arr(&b, (void *)(uintptr_t)h->node, 0, sizeof *n, &ok);
	*rundir_field = str(&b, (void *)(uintptr_t)h->rundir, &ok);
	if (!n || !ok || n->ngpus > 4096)
		return NULL;
	n->driver_version = str(&b, n->driver_version, &ok);
	n->nvml_version = str(&b, n->nvml_version, &ok);
	n->rundir = NULL;
	fix_faults(&b, &n->faults, &ok);
	n->gpus = arr(&b, n->gpus, n->ngpus, sizeof *n->gpus, &ok);
	if (!n->gpus)
		n->ngpus = 0;
	for (unsigned int i = 0; i < n->ngpus && ok; i++)
		fix_gpu(&b, &n->gpus[i], &ok);
	if (!ok)
		return NULL;
	n->blob = block;
	return n;
}

/* ---- the cache directory ------------------------------------------------------ */

/*
 * An open fd on the cache directory, or -1 for none: $GPUCTL_SIM_CACHE ("off":
 * none), made 0700 if missing; else where processes register, as resolved
 * without the node file's own "rundir" (not known before the parse):
 * $GPUCTL_SIM_RUNDIR, else the private default, either used only if it
 * exists (made by whoever registers a process there, never here). The
 * directory may be shared: a cache file counts only when this user owns it.
 */
static int cache_dir(void)
{
	const char *env = getenv("GPUCTL_SIM_CACHE");
	char path[4096];
	bool make = false;
	if (env && (!env[0] || strcmp(env, "off") == 0))
		return -1;
	if (env) {
		if (snprintf(path, sizeof path, "%s", env) >= (int)sizeof path)
			return -1;
		make = true;
	} else {
		bool is_default;
		if (sim_rundir_resolve(NULL, NULL, path, sizeof path, &is_default) < 0)
			return -1;
	}
	if (make && mkdir(path, 0700) < 0 && errno != EEXIST)
		return -1;
	return open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

static void entry_name(char *buf, size_t len, const struct stat *st)
{
	snprintf(buf, len, ".node-%s-%llx-%llx", sim_generation, (unsigned long long)st->st_dev,
		 (unsigned long long)st->st_ino);
}

struct sim_node *sim_node_cache_get(const struct stat *st, const char **rundir_field)
{
	int dfd = cache_dir();
	if (dfd < 0)
		return NULL;
	char name[96];
	entry_name(name, sizeof name, st);
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	close(dfd);
	if (fd < 0)
		return NULL;
	struct stat cs;
	void *block = NULL;
	size_t len = 0;
	if (fstat(fd, &cs) == 0 && S_ISREG(cs.st_mode) && cs.st_uid == geteuid() &&
	    cs.st_size >= (off_t)sizeof(struct cache_hdr) && cs.st_size <= CACHE_MAX_BYTES) {
		len = (size_t)cs.st_size;
		block = malloc(len); /* malloc's alignment is ALIGN's */
		if (block && pread(fd, block, len, 0) != (ssize_t)len) {
			free(block);
			block = NULL;
		}
	}
	close(fd);
	if (!block)
		return NULL;
	struct cache_id want;
	struct sim_node *n = NULL;
	if (fill_identity(&want, st) == 0 && memcmp(&want, &((const struct cache_hdr *)block)->id, sizeof want) == 0)
		n = sim_node_unflatten(block, len, rundir_field);
	if (!n)
		free(block);
	return n;
}

void sim_node_cache_put(const struct stat *st, const struct sim_node *n, const char *rundir_field)
{
	struct timespec now;
	struct cache_id id;
	clock_gettime(CLOCK_REALTIME, &now);
	if (ns_of(st->st_ctim) + 1000000000u > ns_of(now) || fill_identity(&id, st) < 0)
		return; /* changed within the last second, or no library to name */
	size_t len;
	char *block = sim_node_flatten(n, rundir_field, &len);
	if (!block)
		return;
	((struct cache_hdr *)block)->id = id;
	int dfd = cache_dir();
	if (dfd >= 0) {
		char name[96], tmp[128];
		entry_name(name, sizeof name, st);
		snprintf(tmp, sizeof tmp, ".new-%ld-%lx-%s", (long)getpid(), (unsigned long)now.tv_nsec, name);
		int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0) {
			int good = write(fd, block, len) == (ssize_t)len;
			if (close(fd) < 0)
				good = 0;
			if (!good || renameat(dfd, tmp, dfd, name) < 0)
				unlinkat(dfd, tmp, 0);
		}
		close(dfd);
	}
	free(block);
}
