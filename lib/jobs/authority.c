/*
 * authority.c — the client's side of authority mode (see authority.h): is
 * it in force, the connection to a root gpuctld, one JSON line each way.
 */
#include "jobs/authority.h"

#include "util/clock.h"
#include "util/errbuf.h"
#include "device/gpu.h"
#include "device/gputable.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#define ANSWER_MAX (4u << 20)

static const struct lease_source *served;
static void (*on_wait)(void *, const char *);
static void *on_wait_arg;

void authority_on_wait(void (*fn)(void *arg, const char *sock), void *arg)
{
	on_wait = fn;
	on_wait_arg = arg;
}

void lease_serve(const struct lease_source *src)
{
	served = src;
}

const struct lease_source *lease_served(void)
{
	return served;
}

const char *authority_dir(void)
{
	const char *e = getenv("GPUCTL_AUTHORITY_DIR");
	return e && *e ? e : AUTHORITY_DIR;
}

/* root's, and writable by root alone */
static bool roots_alone(const struct stat *st)
{
	return st->st_uid == 0 && !(st->st_mode & (S_IWGRP | S_IWOTH));
}

int authority_find(char *sock, size_t socklen, char *err, size_t errlen)
{
	const char *dir = authority_dir();
	char marker[4096];
	if (snprintf(marker, sizeof marker, "%s/%s", dir, AUTHORITY_MARKER) >= (int)sizeof marker ||
	    snprintf(sock, socklen, "%s/%s", dir, AUTHORITY_SOCKET) >= (int)socklen) {
		errbuf_set(err, errlen, "authority directory '%.200s' has too long a path", dir);
		return GC_EINVAL;
	}
	struct stat ms, ds;
	if (lstat(marker, &ms) < 0)
		return 0; /* no marker: cooperative mode */
	if (lstat(dir, &ds) < 0 || !S_ISDIR(ds.st_mode) || !roots_alone(&ds) || !S_ISREG(ms.st_mode) ||
	    !roots_alone(&ms)) {
		errbuf_set(err, errlen, "refusing authority directory '%.200s': it and its marker must be root's and "
			   "writable by root alone (an administrator's gpuctld --authority makes them)", dir);
		return GC_EINVAL;
	}
	return 1;
}

int authority_dial(const char *sock, int timeout_ms, uid_t *peer, int *why, char *err, size_t errlen)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	*peer = (uid_t)-1;
	*why = 0;
	if (strlen(sock) >= sizeof a.sun_path) {
		errbuf_set(err, errlen, "gpuctld's socket path '%.200s' is too long", sock);
		return GC_EINVAL;
	}
	strcpy(a.sun_path, sock);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		errbuf_set(err, errlen, "cannot make a socket: %s", strerror(errno));
		return GC_EIO;
	}
	if (timeout_ms > 0) {
		struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
		(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	}
	if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
		*why = errno;
		close(fd);
		errbuf_set(err, errlen, "cannot connect to gpuctld at '%.200s': %s", sock, strerror(*why));
		return GC_EIO;
	}
	struct ucred cr;
	socklen_t len = sizeof cr;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0 && len == sizeof cr)
		*peer = cr.uid;
	return fd;
}

int authority_connect(const char *sock, long long timeout_ms, const volatile int *stop, char *err, size_t errlen)
{
	long long deadline = clock_mono_ms() + (timeout_ms < 0 ? AUTHORITY_CONNECT_MS : timeout_ms);
	bool said = false;
	for (;;) {
		uid_t peer;
		int last;
		int fd = authority_dial(sock, 0, &peer, &last, err, errlen);
		if (fd >= 0 && peer != 0) {
			close(fd);
			errbuf_set(err, errlen, "refusing gpuctld's socket '%.200s': the process behind it is not root's",
				   sock);
			return GC_EINVAL;
		}
		/* a descriptor; or no socket to be had (err says why); or down or restarting (no socket yet,
		 * or nobody listening): wait for it */
		if (fd >= 0 || (last != ENOENT && last != ECONNREFUSED && last != EAGAIN && last != EINTR))
			return fd;
		if (stop && *stop) {
			errbuf_set(err, errlen, "stopped while waiting for gpuctld");
			return GC_ECANCELED;
		}
		if (clock_mono_ms() >= deadline) {
			errbuf_set(err, errlen, "gpuctld is not answering at '%.200s' (authority mode: GPUs are leased only "
				   "through it; ask the administrator to start it)", sock);
			return GC_ETIMEDOUT;
		}
		if (!said && on_wait)
			on_wait(on_wait_arg, sock);
		said = true;
		poll(NULL, 0, 100);
	}
}

int authority_send(int fd, json_t *req, char *err, size_t errlen)
{
	char *s = req ? json_dumps(req, JSON_COMPACT) : NULL;
	json_decref(req);
	if (!s) {
		errbuf_set(err, errlen, "out of memory");
		return GC_ENOMEM;
	}
	return authority_send_text(fd, s, err, errlen);
}

int authority_send_text(int fd, char *s, char *err, size_t errlen)
{
	size_t len = strlen(s);
	s[len] = '\n'; /* json_dumps's NUL: the line's end; sent without it */
	size_t off = 0;
	while (off < len + 1) {
		ssize_t w = send(fd, s + off, len + 1 - off, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			errbuf_set(err, errlen, "gpuctld went away: %s", strerror(errno));
			free(s);
			return GC_EIO;
		}
		off += (size_t)w;
	}
	free(s);
	return GC_OK;
}

int authority_recv(int fd, long long timeout_ms, const volatile int *stop, json_t **ans, char *err, size_t errlen)
{
	return authority_recv_at_most(fd, timeout_ms, false, ANSWER_MAX, stop, ans, err, errlen);
}

int authority_recv_at_most(int fd, long long timeout_ms, bool each, size_t max, const volatile int *stop, json_t **ans,
			   char *err, size_t errlen)
{
	*ans = NULL;
	char *buf = NULL;
	size_t len = 0, cap = 0;
	long long deadline = timeout_ms < 0 ? -1 : clock_mono_ms() + timeout_ms;
	int rc = GC_EIO;
	for (;;) {
		if (stop && *stop) {
			errbuf_set(err, errlen, "stopped");
			rc = GC_ECANCELED;
			break;
		}
		long long left = deadline < 0 ? 250 : deadline - clock_mono_ms();
		if (left <= 0) {
			errbuf_set(err, errlen, "gpuctld did not answer in time");
			rc = GC_ETIMEDOUT;
			break;
		}
		/* a slice at a time, so that a stop flag set by a signal handler is seen */
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int r = poll(&p, 1, left < 250 ? (int)left : 250);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			continue;
		/* up to the line's end, no further: what follows belongs to later answers (peek, then take) */
		char chunk[4096];
		ssize_t n = recv(fd, chunk, sizeof chunk, MSG_PEEK);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0) {
			errbuf_set(err, errlen, "gpuctld closed the connection (stopped or restarting)");
			break;
		}
		char *nl = memchr(chunk, '\n', (size_t)n);
		size_t take = nl ? (size_t)(nl - chunk) + 1 : (size_t)n;
		if (len + take > max) {
			errbuf_set(err, errlen, "gpuctld's answer is too long");
			break;
		}
		if (len + take > cap) {
			size_t ncap = cap ? cap : 4096;
			while (ncap < len + take)
				ncap *= 2;
			char *b = realloc(buf, ncap);
			if (!b) {
				errbuf_set(err, errlen, "out of memory");
				rc = GC_ENOMEM;
				break;
			}
			buf = b;
			cap = ncap;
		}
		n = recv(fd, buf + len, take, 0);
		if (n != (ssize_t)take) {
			errbuf_set(err, errlen, "gpuctld's answer was cut short");
			break;
		}
		len += take;
		if (each && deadline >= 0)
			deadline = clock_mono_ms() + timeout_ms;
		if (nl) {
			json_error_t je;
			*ans = json_loadb(buf, len - 1, 0, &je);
			if (!*ans)
				errbuf_set(err, errlen, "gpuctld's answer is not JSON: %s", je.text);
			rc = *ans ? GC_OK : GC_EIO;
			break;
		}
	}
	free(buf);
	return rc;
}

int authority_call(const char *sock, json_t *req, json_t **ans, char *err, size_t errlen)
{
	*ans = NULL;
	int fd = authority_connect(sock, -1, NULL, err, errlen);
	if (fd < 0) {
		json_decref(req);
		return fd;
	}
	int rc = authority_send(fd, req, err, errlen);
	if (rc == GC_OK)
		rc = authority_recv(fd, AUTHORITY_CONNECT_MS, NULL, ans, err, errlen);
	close(fd);
	return rc;
}

int authority_gpu_ctx(gc_ctx **ctx, const gc_open_opts *o)
{
	char sock[4096], err[512];
	*ctx = NULL;
	if (authority_find(sock, sizeof sock, err, sizeof err) != 1)
		return 0;
	/* one try: a gpuctld that is down is waited for by the lease request itself */
	int fd = authority_connect(sock, 0, NULL, err, sizeof err);
	if (fd < 0)
		return 0;
	json_t *ans = NULL;
	int rc = 0;
	if (authority_send(fd, json_pack("{s:s}", "op", "gpus"), err, sizeof err) == GC_OK &&
	    authority_recv(fd, AUTHORITY_TABLE_MS, NULL, &ans, err, sizeof err) == GC_OK &&
	    authority_answer_rc(ans, err, sizeof err) == GC_OK) {
		int orc = gpu_ctx_open_json(ctx, ans, AUTHORITY_TABLE_FRESH_MS, o, err, sizeof err);
		rc = orc == GC_ENOMEM ? -1 : orc == GC_OK && gc_ctx_count(*ctx) ? 1 : 0;
	}
	close(fd);
	json_decref(ans);
	if (rc != 1) {
		gc_ctx_free(*ctx);
		*ctx = NULL;
	}
	return rc;
}

int authority_answer_rc(const json_t *ans, char *err, size_t errlen)
{
	if (json_is_true(json_object_get(ans, "ok")))
		return GC_OK;
	const char *e = json_string_value(json_object_get(ans, "error"));
	const char *code = json_string_value(json_object_get(ans, "code"));
	errbuf_set(err, errlen, "%s", e ? e : "gpuctld refused the request");
	if (code && strcmp(code, "busy") == 0)
		return GC_EBUSY;
	if (code && strcmp(code, "invalid") == 0)
		return GC_EINVAL;
	if (code && strcmp(code, "notfound") == 0)
		return GC_ENOTFOUND;
	return GC_EIO;
}

json_t *authority_info_json(const struct lease_info *i)
{
	json_t *o = json_object();
	if (!o)
		return NULL;
	json_object_set_new(o, "pid", json_integer(i->pid));
	json_object_set_new(o, "supervisor", json_integer(i->supervisor));
	json_object_set_new(o, "uid", json_integer((json_int_t)i->uid));
	json_object_set_new(o, "since", json_integer(i->since));
	json_object_set_new(o, "want", json_integer(i->want));
	json_object_set_new(o, "grant", json_integer((json_int_t)i->grant));
	json_object_set_new(o, "orphan", json_boolean(i->orphan));
	json_object_set_new(o, "live", json_integer(i->live));
	const char *keys[] = {"user", "name", "command", "request"};
	const char *vals[] = {i->user, i->name, i->command, i->request};
	for (size_t k = 0; k < 4; k++) {
		json_t *s = json_string(vals[k]);
		if (!s) { /* not UTF-8: shown as '?' by the reader anyway */
			char tmp[256];
			snprintf(tmp, sizeof tmp, "%s", vals[k]);
			for (char *p = tmp; *p; p++)
				if ((unsigned char)*p >= 0x80)
					*p = '?';
			s = json_string(tmp);
		}
		json_object_set_new(o, keys[k], s);
	}
	return o;
}

static void copy_str(char *dst, size_t len, const json_t *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));
	snprintf(dst, len, "%s", v ? v : "");
}

void authority_info_read(const json_t *o, struct lease_info *i)
{
	memset(i, 0, sizeof *i);
	i->pid = (pid_t)json_integer_value(json_object_get(o, "pid"));
	i->supervisor = (pid_t)json_integer_value(json_object_get(o, "supervisor"));
	i->uid = (uid_t)json_integer_value(json_object_get(o, "uid"));
	i->since = json_integer_value(json_object_get(o, "since"));
	json_int_t w = json_integer_value(json_object_get(o, "want"));
	i->want = w > 0 && w < 65536 ? (unsigned)w : 1;
	i->grant = (uint64_t)json_integer_value(json_object_get(o, "grant"));
	i->orphan = json_is_true(json_object_get(o, "orphan"));
	i->live = (pid_t)json_integer_value(json_object_get(o, "live"));
	copy_str(i->user, sizeof i->user, o, "user");
	copy_str(i->name, sizeof i->name, o, "name");
	copy_str(i->command, sizeof i->command, o, "command");
	copy_str(i->request, sizeof i->request, o, "request");
}
