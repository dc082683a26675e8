/*
 * clients.c — the queue's client server (queue-int.h): the Unix socket's
 * connections, each known by SO_PEERCRED (never by what it claims), with
 * a cap per user and the last slots for root and the admin group; one
 * request line read (at most MAX_REQUEST bytes) and its answer written as
 * the client reads it, never blocking the queue's thread: a client that
 * does not read holds only its own connection, until its deadline.
 */
#include "queue-int.h"

#include "util/clock.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

bool clients_is_admin(const struct clients *cs, uid_t uid, gid_t gid)
{
	if (uid == 0)
		return true;
	if (cs->admin_gid == (gid_t)-1)
		return false;
	if (gid == cs->admin_gid)
		return true;
	struct passwd pw, *res = NULL;
	char buf[4096];
	if (getpwuid_r(uid, &pw, buf, sizeof buf, &res) != 0 || !res)
		return false;
	gid_t groups[256];
	int n = 256;
	if (getgrouplist(pw.pw_name, pw.pw_gid, groups, &n) < 0)
		return false;
	for (int i = 0; i < n; i++)
		if (groups[i] == cs->admin_gid)
			return true;
	return false;
}

static void serve(struct clients *cs, size_t i);

static void drop(struct clients *cs, size_t i)
{
	if (cs->cl[i].fd >= 0)
		close(cs->cl[i].fd);
	free(cs->cl[i].buf);
	free(cs->cl[i].out);
	free(cs->cl[i].raw);
	cs->cl[i] = cs->cl[--cs->ncl];
}

void clients_accept(struct clients *cs)
{
	int fd = accept4(cs->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	struct ucred cr;
	socklen_t len = sizeof cr;
	if (cs->ncl == MAX_CLIENTS || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0) {
		close(fd);
		return;
	}
	/* one user holding connections open (and opening them again when dropped) must not
	 * keep everyone else out: a cap per uid, and the last slots for root and the admins */
	size_t mine = 0;
	for (size_t i = 0; i < cs->ncl; i++)
		mine += cs->cl[i].uid == cr.uid;
	if ((mine >= CLIENTS_PER_USER || cs->ncl >= MAX_CLIENTS - CLIENTS_ADMIN_ONLY) && !clients_is_admin(cs, cr.uid, cr.gid)) {
		close(fd);
		return;
	}
	cs->cl[cs->ncl++] = (struct client){.fd = fd, .uid = cr.uid, .gid = cr.gid, .pid = cr.pid,
					  .deadline = clock_mono_ms() + CLIENT_TIMEOUT_MS};
	/* a client sends as soon as it is connected: its request is often here already, and then
	 * answered without another turn of the loop (a lease's hand-over, gpuctl run's start) */
	serve(cs, cs->ncl - 1);
}

/* send what the client's socket takes now of its answer; drop it once all is sent */
static void write_answer(struct clients *cs, size_t i)
{
	struct client *c = &cs->cl[i];
	while (c->outoff < c->outlen) {
		ssize_t w = send(c->fd, c->out + c->outoff, c->outlen - c->outoff, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0 && (errno == EAGAIN || errno == EINTR))
			return; /* the rest when it reads */
		if (w <= 0)
			break;
		c->outoff += (size_t)w;
	}
	drop(cs, i);
}

/* read what the client sent; answer once a whole line is in */
static void serve(struct clients *cs, size_t i)
{
	struct client *c = &cs->cl[i];
	char tmp[65536];
	ssize_t n = read(c->fd, tmp, sizeof tmp);
	if (n <= 0) {
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		drop(cs, i); /* gone before finishing its request */
		return;
	}
	json_t *ans = NULL;
	if (c->too_big || c->len + (size_t)n > MAX_REQUEST) {
		/*
		 * Answer only once the client has sent it all: closing with its data
		 * unread would reset the connection before it reads why. Nothing is
		 * kept meanwhile, and the request deadline still holds.
		 */
		free(c->buf);
		c->buf = NULL;
		c->len = 0;
		c->too_big = true;
		if (!memchr(tmp, '\n', (size_t)n))
			return;
		ans = requests_fail("request larger than %u bytes (a huge environment?)", MAX_REQUEST);
	} else {
		char *b = realloc(c->buf, c->len + (size_t)n + 1);
		if (!b) {
			drop(cs, i);
			return;
		}
		c->buf = b;
		memcpy(c->buf + c->len, tmp, (size_t)n);
		c->len += (size_t)n;
		c->buf[c->len] = '\0';
		char *nl = memchr(c->buf, '\n', c->len);
		if (!nl)
			return;
		*nl = '\0';
		if (strlen(c->buf) != (size_t)(nl - c->buf))
			ans = requests_fail("a NUL byte in the request");
		else
			ans = cs->answer(cs->arg, c, c->buf);
		if (c->taken) {
			/* a lease request: the connection is grants.c's now, and so is its descriptor */
			json_decref(ans);
			free(c->buf);
			c->fd = -1;
			c->buf = NULL;
			cs->cl[i] = cs->cl[--cs->ncl];
			return;
		}
	}
	char *out = ans ? json_dumps(ans, JSON_COMPACT) : NULL;
	json_decref(ans);
	size_t len = out ? strlen(out) : 0;
	/* the line, then the bytes it announces (gpuctl queue's rows: text, not a JSON string to escape
	 * here and take apart there) */
	char *line = out ? realloc(out, len + 2 + c->rawlen) : NULL;
	if (!line) {
		free(out);
		drop(cs, i);
		return;
	}
	line[len++] = '\n';
	if (c->rawlen)
		memcpy(line + len, c->raw, c->rawlen);
	len += c->rawlen;
	line[len] = '\0';
	free(c->raw);
	c->raw = NULL;
	c->rawlen = 0;
	/*
	 * Written as the client reads it, never blocking the queue's thread: a
	 * client that does not read its answer holds only its own connection,
	 * until the deadline drops it.
	 */
	free(c->buf);
	c->buf = NULL;
	c->out = line;
	c->outlen = len;
	c->outoff = 0;
	c->deadline = clock_mono_ms() + CLIENT_TIMEOUT_MS;
	write_answer(cs, i);
}

void clients_ready(struct clients *cs, size_t i)
{
	if (cs->cl[i].out)
		write_answer(cs, i);
	else
		serve(cs, i);
}

void clients_expire(struct clients *cs, long long now)
{
	for (size_t i = cs->ncl; i-- > 0;)
		if (now > cs->cl[i].deadline)
			drop(cs, i);
}

void clients_close(struct clients *cs)
{
	while (cs->ncl)
		drop(cs, 0);
}
