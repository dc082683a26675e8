/*
 * spawnreq.c — gpuctld's job-runner requests as bytes (see spawnreq.h).
 *
 * Payload: eleven uint32 in host byte order (uid, gid, ngroups, nopts,
 * argc, envc, the slot's low and high halves, the log's cap's low and high
 * halves, the retries spent), ngroups uint32 group ids,
 * then NUL-terminated strings: the working directory, the log, placed,
 * name, the status file, nopts options, argc arguments, envc environment
 * entries, and nothing after the last one. Both ends run on one host from one build, so host
 * byte order is fine; the magic in the header catches a stray peer.
 */
#include "jobs/spawnreq.h"

#include "device/gpu.h"

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define FIXED (11 * sizeof(uint32_t))

static void put32(char **p, uint32_t v)
{
	memcpy(*p, &v, sizeof v);
	*p += sizeof v;
}

static uint32_t get32(const char **p)
{
	uint32_t v;
	memcpy(&v, *p, sizeof v);
	*p += sizeof v;
	return v;
}

static size_t strings_size(char *const *v, size_t n)
{
	size_t sz = 0;
	for (size_t i = 0; i < n; i++)
		sz += strlen(v[i]) + 1;
	return sz;
}

static void put_str(char **p, const char *s)
{
	size_t n = strlen(s) + 1;
	memcpy(*p, s, n);
	*p += n;
}

int spawnreq_encode(const struct spawnreq *r, char **out, size_t *len)
{
	*out = NULL;
	*len = 0;
	if (r->argc == 0 || r->ngroups > SPAWNREQ_MAX_GROUPS || !r->placed || !r->name || !r->status)
		return GC_EINVAL;
	size_t payload = FIXED + r->ngroups * sizeof(uint32_t) + strlen(r->cwd) + 1 + strlen(r->log) + 1 +
			 strlen(r->placed) + 1 + strlen(r->name) + 1 + strlen(r->status) + 1 +
			 strings_size(r->opts, r->nopts) + strings_size(r->argv, r->argc) + strings_size(r->env, r->envc);
	if (payload > SPAWNREQ_MAX)
		return GC_EINVAL;
	char *buf = malloc(sizeof(struct spawnreq_hdr) + payload), *p = buf;
	if (!buf)
		return GC_ENOMEM;
	struct spawnreq_hdr h = {.magic = SPAWNREQ_MAGIC, .len = (uint32_t)payload};
	memcpy(p, &h, sizeof h);
	p += sizeof h;
	put32(&p, (uint32_t)r->uid);
	put32(&p, (uint32_t)r->gid);
	put32(&p, (uint32_t)r->ngroups);
	put32(&p, (uint32_t)r->nopts);
	put32(&p, (uint32_t)r->argc);
	put32(&p, (uint32_t)r->envc);
	put32(&p, (uint32_t)r->slot);
	put32(&p, (uint32_t)(r->slot >> 32));
	put32(&p, (uint32_t)r->log_max);
	put32(&p, (uint32_t)(r->log_max >> 32));
	put32(&p, r->retries);
	for (size_t i = 0; i < r->ngroups; i++)
		put32(&p, (uint32_t)r->groups[i]);
	put_str(&p, r->cwd);
	put_str(&p, r->log);
	put_str(&p, r->placed);
	put_str(&p, r->name);
	put_str(&p, r->status);
	for (size_t i = 0; i < r->nopts; i++)
		put_str(&p, r->opts[i]);
	for (size_t i = 0; i < r->argc; i++)
		put_str(&p, r->argv[i]);
	for (size_t i = 0; i < r->envc; i++)
		put_str(&p, r->env[i]);
	*out = buf;
	*len = (size_t)(p - buf);
	return 0;
}

/* n strings from *p (before end) into v[0..n-1], v[n] = NULL */
static int get_strs(char **p, const char *end, char **v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char *nul = memchr(*p, '\0', (size_t)(end - *p));
		if (!nul)
			return GC_EINVAL;
		v[i] = *p;
		*p = nul + 1;
	}
	v[n] = NULL;
	return 0;
}

int spawnreq_decode(char *payload, size_t len, struct spawnreq *r)
{
	memset(r, 0, sizeof *r);
	if (len < FIXED || len > SPAWNREQ_MAX)
		return GC_EINVAL;
	const char *q = payload, *end = payload + len;
	uint32_t uid = get32(&q), gid = get32(&q), ngroups = get32(&q), nopts = get32(&q), argc = get32(&q),
		 envc = get32(&q), slot_lo = get32(&q), slot_hi = get32(&q), max_lo = get32(&q), max_hi = get32(&q),
		 retries = get32(&q);
	/* every string takes at least its NUL (the five single ones too): counts beyond the size are lies */
	if (ngroups > SPAWNREQ_MAX_GROUPS || argc == 0 || (size_t)ngroups * sizeof(uint32_t) > (size_t)(end - q) ||
	    (size_t)nopts + argc + envc + 5 > (size_t)(end - q) - (size_t)ngroups * sizeof(uint32_t))
		return GC_EINVAL;
	r->uid = (uid_t)uid;
	r->gid = (gid_t)gid;
	r->ngroups = ngroups;
	r->slot = (uint64_t)slot_hi << 32 | slot_lo;
	r->log_max = (uint64_t)max_hi << 32 | max_lo;
	r->retries = retries;
	r->nopts = nopts;
	r->argc = argc;
	r->envc = envc;
	r->groups = malloc((ngroups ? ngroups : 1) * sizeof *r->groups);
	r->opts = malloc(((size_t)nopts + 1) * sizeof *r->opts);
	r->argv = malloc(((size_t)argc + 1) * sizeof *r->argv);
	r->env = malloc(((size_t)envc + 1) * sizeof *r->env);
	if (!r->groups || !r->opts || !r->argv || !r->env) {
		spawnreq_release(r);
		return GC_ENOMEM;
	}
	for (size_t i = 0; i < ngroups; i++)
		r->groups[i] = (gid_t)get32(&q);
	char *p = payload + (q - payload), *one[5][2];
	for (size_t k = 0; k < 5; k++)
		if (get_strs(&p, end, one[k], 1) < 0) {
			spawnreq_release(r);
			return GC_EINVAL;
		}
	if (get_strs(&p, end, r->opts, nopts) < 0 || get_strs(&p, end, r->argv, argc) < 0 ||
	    get_strs(&p, end, r->env, envc) < 0 || p != end) {
		spawnreq_release(r);
		return GC_EINVAL;
	}
	r->cwd = one[0][0];
	r->log = one[1][0];
	r->placed = one[2][0];
	r->name = one[3][0];
	r->status = one[4][0];
	return 0;
}

void spawnreq_release(struct spawnreq *r)
{
	free(r->groups);
	free(r->opts);
	free(r->argv);
	free(r->env);
	memset(r, 0, sizeof *r);
}

size_t spawnreq_fds(struct msghdr *m, int *fds, size_t max)
{
	size_t nf = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(c) + i * sizeof fd, sizeof fd);
			if (nf < max)
				fds[nf++] = fd;
			else
				close(fd);
		}
	}
	return nf;
}

int spawnreq_put_fds(struct msghdr *m, void *buf, size_t len, const int *fds, size_t n)
{
	if (len < CMSG_SPACE(n * sizeof(int)))
		return -1;
	memset(buf, 0, len);
	m->msg_control = buf;
	m->msg_controllen = CMSG_SPACE(n * sizeof(int));
	struct cmsghdr *c = CMSG_FIRSTHDR(m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(n * sizeof(int));
	memcpy(CMSG_DATA(c), fds, n * sizeof(int));
	return 0;
}
