/*
 * gpuctld-ask.c — one request to gpuctld's queue socket and its answer
 * (gpuctld-ask.h).
 */
#include "gpuctld-ask.h"

#include "device/proc.h"
#include "jobs/authority.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#define ANSWER_MAX (16u << 20)

const char *gpuctld_socket_path(void)
{
	const char *p = getenv("GPUCTL_QUEUE_SOCKET");
	if (p && *p)
		return p;
	/* authority mode: gpuctld's one socket is in its directory of root's */
	static char auth[4200];
	char err[256];
	if (!auth[0] && authority_find(auth, sizeof auth, err, sizeof err) != 1)
		auth[0] = '\0';
	return auth[0] ? auth : "/run/gpuctl/gpuctld.sock";
}

json_t *gpuctld_ask(json_t *req, int timeout_ms, int *reached, char *err, size_t errlen)
{
	const char *path = gpuctld_socket_path();
	*reached = 0;
	char *text = json_dumps(req, JSON_COMPACT);
	if (!text) {
		snprintf(err, errlen, "cannot encode the request (an argument or variable that is not UTF-8?)");
		return NULL;
	}
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (strlen(path) >= sizeof a.sun_path || fd < 0) {
		snprintf(err, errlen, "invalid queue socket '%.200s'", path);
		free(text);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	strcpy(a.sun_path, path);
	if (timeout_ms > 0) {
		struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
		(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	}
	if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
		snprintf(err, errlen, "cannot reach gpuctld at '%.200s': %s (is gpuctld running with its queue? "
			 "GPUCTL_QUEUE_SOCKET names another socket)", path, strerror(errno));
		free(text);
		close(fd);
		return NULL;
	}
	/* a job carries its environment: tell it to gpuctld (root's), or to one of our own, never
	 * to a socket another user put where gpuctld's goes, in a directory everyone may write */
	struct ucred peer;
	socklen_t plen = sizeof peer;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &plen) < 0 || (peer.uid != 0 && peer.uid != getuid())) {
		snprintf(err, errlen, "refusing the queue socket '%.200s': it is served by uid %d, not by root or you "
			 "(another user's program, not gpuctld?)", path, plen == sizeof peer ? (int)peer.uid : -1);
		free(text);
		close(fd);
		return NULL;
	}
	*reached = 1;
	size_t len = strlen(text), off = 0;
	bool ok = true;
	while (ok && off < len) {
		ssize_t w = send(fd, text + off, len - off, MSG_NOSIGNAL);
		ok = w > 0;
		off += w > 0 ? (size_t)w : 0;
	}
	ok = ok && send(fd, "\n", 1, MSG_NOSIGNAL) == 1;
	free(text);
	char *buf = NULL;
	size_t n = 0;
	while (ok) {
		char tmp[65536];
		ssize_t r = read(fd, tmp, sizeof tmp);
		if (r <= 0)
			break;
		char *b = n + (size_t)r <= ANSWER_MAX ? realloc(buf, n + (size_t)r + 1) : NULL;
		if (!b) {
			ok = false;
			break;
		}
		buf = b;
		memcpy(buf + n, tmp, (size_t)r);
		n += (size_t)r;
		buf[n] = '\0';
	}
	close(fd);
	json_t *ans = ok && buf ? json_loads(buf, JSON_DISABLE_EOF_CHECK, NULL) : NULL;
	free(buf);
	if (!ans) {
		snprintf(err, errlen, "gpuctld at '%.200s' gave no answer (it may have stopped)", path);
		return NULL;
	}
	if (!json_is_true(json_object_get(ans, "ok"))) {
		const char *e = json_string_value(json_object_get(ans, "error"));
		char safe[1024];
		if (e)
			proc_sanitize(safe, sizeof safe, e, strlen(e));
		snprintf(err, errlen, "%s", e ? safe : "gpuctld refused the request");
		json_decref(ans);
		return NULL;
	}
	return ans;
}
