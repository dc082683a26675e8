/*
 * gpuctld-ask.c — one request to gpuctld's queue socket and its answer
 * (gpuctld-ask.h), over authority.c's socket parts (connect, one line each
 * way) with the queue's own rule of whom to trust and its own messages.
 */
#include "gpuctld-ask.h"

#include "device/proc.h"
#include "jobs/authority.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
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

/* exactly n bytes from fd into buf, each wait bounded by timeout_ms (<= 0: none): 0, or -1 */
static int recv_exact(int fd, char *buf, size_t n, int timeout_ms)
{
	for (size_t got = 0; got < n;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int r = poll(&p, 1, timeout_ms > 0 ? timeout_ms : -1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		ssize_t k = recv(fd, buf + got, n - got, 0);
		if (k < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (k <= 0)
			return -1;
		got += (size_t)k;
	}
	return 0;
}

json_t *gpuctld_ask(json_t *req, int timeout_ms, int *reached, char *err, size_t errlen)
{
	return gpuctld_ask_rows(req, timeout_ms, reached, NULL, NULL, err, errlen);
}

json_t *gpuctld_ask_rows(json_t *req, int timeout_ms, int *reached, char **rows, size_t *rowslen, char *err,
			 size_t errlen)
{
	if (rows) {
		*rows = NULL;
		*rowslen = 0;
	}
	const char *path = gpuctld_socket_path();
	*reached = 0;
	char *text = json_dumps(req, JSON_COMPACT);
	if (!text) {
		snprintf(err, errlen, "cannot encode the request (an argument or variable that is not UTF-8?)");
		return NULL;
	}
	uid_t peer;
	int why;
	int fd = authority_dial(path, timeout_ms, &peer, &why, err, errlen);
	if (fd < 0) {
		if (why)
			snprintf(err, errlen, "cannot reach gpuctld at '%.200s': %s (is gpuctld running with its queue? "
				 "GPUCTL_QUEUE_SOCKET names another socket)", path, strerror(why));
		else
			snprintf(err, errlen, "invalid queue socket '%.200s'", path);
		free(text);
		return NULL;
	}
	/* a job carries its environment: tell it to gpuctld (root's), or to one of our own, never
	 * to a socket another user put where gpuctld's goes, in a directory everyone may write */
	if (peer != 0 && peer != getuid()) {
		snprintf(err, errlen, "refusing the queue socket '%.200s': it is served by uid %d, not by root or you "
			 "(another user's program, not gpuctld?)", path, (int)peer);
		free(text);
		close(fd);
		return NULL;
	}
	*reached = 1;
	/* timeout_ms bounds each send and read (of an answer up to ANSWER_MAX), not the whole answer */
	json_t *ans = NULL;
	if (authority_send_text(fd, text, err, errlen) == GC_OK)
		(void)authority_recv_at_most(fd, timeout_ms > 0 ? timeout_ms : -1, true, ANSWER_MAX, NULL, &ans, err,
					     errlen);
	/* the bytes the line says follow it (gpuctl queue's rows), when the caller takes them */
	json_t *rb = json_object_get(ans, "rows_bytes");
	if (rows && rb) {
		json_int_t n = json_integer_value(rb);
		bool sane = json_is_integer(rb) && n >= 0 && n <= (json_int_t)ANSWER_MAX;
		char *buf = sane ? malloc((size_t)n + 1) : NULL;
		if (!buf || recv_exact(fd, buf, (size_t)n, timeout_ms) < 0) {
			if (!sane)
				snprintf(err, errlen, "gpuctld at '%.200s' gave a bad answer (rows_bytes is not a size up to "
					 "%u bytes)", path, ANSWER_MAX);
			else
				snprintf(err, errlen, buf ? "gpuctld at '%.200s' cut its answer short (it may have stopped)"
							  : "out of memory reading gpuctld's answer at '%.200s'", path);
			free(buf);
			json_decref(ans);
			close(fd);
			return NULL;
		}
		buf[n] = '\0';
		*rows = buf;
		*rowslen = (size_t)n;
	}
	close(fd);
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
		if (rows) {
			free(*rows);
			*rows = NULL;
			*rowslen = 0;
		}
		return NULL;
	}
	return ans;
}
