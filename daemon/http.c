/*
 * http.c — gpuctld's HTTP server on libmicrohttpd (see http.h).
 *
 * Bounds: a connection limit; a per-connection memory pool (libmicrohttpd
 * answers 431/414 when headers or the URL do not fit in it); an inactivity
 * timeout for slow clients; GET and HEAD only (405); no request body (413).
 * Every response is a copy of bytes the sampler has already rendered.
 */
#include "http.h"
#include "metrics.h"
#include "route.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "errbuf.h"

#define POOL_BYTES (16 * 1024)   /* request line + headers must fit (431 otherwise) */

/* the dashboard page, embedded at build time (daemon/embed.py) */
extern const char gpuctld_dashboard_html[];
extern const size_t gpuctld_dashboard_html_len;

struct http {
	struct MHD_Daemon *d;
	struct sampler *s;
	struct queue *q;
	int fd;
};

/* per-request state: the first call only allocates it */
struct req {
	bool body;                   /* the client sent a body */
};

static enum MHD_Result send_text(struct MHD_Connection *c, unsigned status, const char *type, char *buf,
				 size_t len, enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, buf, mode);
	if (!r) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(buf);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	if (strncmp(type, "text/html", 9) == 0)
		MHD_add_response_header(r, "Content-Security-Policy",
					"default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
					"img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'");
	enum MHD_Result ok = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ok;
}

static enum MHD_Result error(struct MHD_Connection *c, unsigned status, const char *msg)
{
	return send_text(c, status, "text/plain; charset=utf-8", (char *)msg, strlen(msg), MHD_RESPMEM_PERSISTENT);
}

/* the frame's text, then the lines only known now (the sample's age) */
static enum MHD_Result metrics(struct http *h, struct MHD_Connection *c)
{
	struct frame *f = sampler_frame(h->s);
	if (!f)
		return error(c, MHD_HTTP_SERVICE_UNAVAILABLE, "no sample yet\n");
	char *buf = malloc(f->metrics_len + 512 + 65536);
	if (!buf) {
		frame_unref(f);
		return error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	}
	memcpy(buf, f->metrics, f->metrics_len);
	size_t n = f->metrics_len;
	n += metrics_age(buf + n, 512, (sampler_now_ms() - f->mono_ms) / 1000.0);
	if (h->q)
		n += queue_metrics(h->q, buf + n, 65536);
	frame_unref(f);
	return send_text(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", buf, n, MHD_RESPMEM_MUST_FREE);
}

/* the frame's JSON ends with the "sample" object: close it with its age */
static enum MHD_Result gpus(struct http *h, struct MHD_Connection *c)
{
	struct frame *f = sampler_frame(h->s);
	if (!f)
		return error(c, MHD_HTTP_SERVICE_UNAVAILABLE, "no sample yet\n");
	char *buf = malloc(f->gpus_len + 64);
	size_t n = f->gpus_len;
	if (!buf || n < 2 || strcmp(f->gpus + n - 2, "}}") != 0) {
		free(buf);
		frame_unref(f);
		return error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot render the sample\n");
	}
	memcpy(buf, f->gpus, n - 2);
	n -= 2;
	n += (size_t)snprintf(buf + n, 64, ",\"age_ms\":%lld}}\n", (long long)(sampler_now_ms() - f->mono_ms));
	frame_unref(f);
	return send_text(c, MHD_HTTP_OK, "application/json", buf, n, MHD_RESPMEM_MUST_FREE);
}

static enum MHD_Result history(struct http *h, struct MHD_Connection *c)
{
	int64_t secs;
	const char *arg = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "seconds");
	if (route_seconds(arg, &secs) < 0)
		return error(c, MHD_HTTP_BAD_REQUEST,
			     "invalid seconds (expected a whole number of seconds from 1 to 2592000)\n");
	size_t len = 0;
	char *buf = sampler_history_json(h->s, secs, &len);
	if (!buf)
		return error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	return send_text(c, MHD_HTTP_OK, "application/json", buf, len, MHD_RESPMEM_MUST_FREE);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
			      const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	(void)version;
	(void)upload;
	struct http *h = cls;
	struct req *q = *con_cls;
	if (!q) {
		/* first call: headers only. Refuse now what would come with a body, before it is read */
		if (!(q = calloc(1, sizeof *q)))
			return MHD_NO;
		*con_cls = q;
		if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
			return error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n");
		const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
		if ((cl && strcmp(cl, "0") != 0) ||
		    MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING))
			return error(c, MHD_HTTP_CONTENT_TOO_LARGE, "no request body is accepted\n");
		return MHD_YES;
	}
	if (*upload_size) {
		q->body = true;
		*upload_size = 0; /* discarded */
		return MHD_YES;
	}
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n");
	if (q->body)
		return error(c, MHD_HTTP_CONTENT_TOO_LARGE, "no request body is accepted\n");
	switch (route_path(url)) {
	case ROUTE_DASHBOARD:
		return send_text(c, MHD_HTTP_OK, "text/html; charset=utf-8", (char *)gpuctld_dashboard_html,
				 gpuctld_dashboard_html_len, MHD_RESPMEM_PERSISTENT);
	case ROUTE_METRICS: return metrics(h, c);
	case ROUTE_GPUS: return gpus(h, c);
	case ROUTE_HISTORY: return history(h, c);
	case ROUTE_JOBS: {
		size_t len = 0;
		char *buf = h->q ? queue_jobs_json(h->q, &len) : strdup("{\"schema\":\"gpuctl.jobs/1\",\"queue\":false,\"jobs\":[]}");
		if (!buf)
			return error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
		if (!h->q)
			len = strlen(buf);
		return send_text(c, MHD_HTTP_OK, "application/json", buf, len, MHD_RESPMEM_MUST_FREE);
	}
	case ROUTE_NONE: break;
	}
	return error(c, MHD_HTTP_NOT_FOUND, "not found: try /, /metrics, /api/v1/gpus, /api/v1/history or /api/v1/jobs\n");
}

static void done(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode t)
{
	(void)cls;
	(void)c;
	(void)t;
	free(*con_cls);
	*con_cls = NULL;
}

/*
 * libmicrohttpd's own unescaping, except that a %00 does not cut the string
 * short: "/metrics%00.html" would otherwise be served as "/metrics". Such a
 * path or value becomes one byte that matches nothing (404, or 400 for a
 * parameter).
 */
static size_t unescape(void *cls, struct MHD_Connection *c, char *s)
{
	(void)cls;
	(void)c;
	size_t n = MHD_http_unescape(s);
	if (strlen(s) != n) {
		s[0] = '\x7f';
		s[1] = '\0';
		return 1;
	}
	return n;
}

int http_start(struct http **out, struct sampler *s, const struct http_opts *o, char *url, size_t urllen,
	       bool *usage, char *err, size_t errlen)
{
	*out = NULL;
	*usage = false;
	struct sockaddr_storage ss;
	socklen_t len;
	bool loopback;
	if (route_listen(o->listen, &ss, &len, &loopback, err, errlen) < 0) {
		*usage = true;
		return -1;
	}
	if (!loopback && !o->allow_remote) {
		errbuf_set(err, errlen, "--listen '%s' is not a loopback address: anyone who can reach it sees "
			   "every GPU, process and user; add --allow-remote to serve it anyway", o->listen);
		*usage = true;
		return -1;
	}
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
	    bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 128) < 0) {
		errbuf_set(err, errlen, "cannot listen on %s: %s", o->listen, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	len = sizeof ss;
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;
	if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0) {
		if (ss.ss_family == AF_INET) {
			struct sockaddr_in *a = (struct sockaddr_in *)&ss;
			inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
			port = ntohs(a->sin_port);
			snprintf(url, urllen, "http://%s:%u/", host, port);
		} else {
			struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
			inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
			port = ntohs(a->sin6_port);
			snprintf(url, urllen, "http://[%s]:%u/", host, port);
		}
	}
	struct http *h = calloc(1, sizeof *h);
	if (!h) {
		close(fd);
		errbuf_set(err, errlen, "out of memory");
		return -1;
	}
	h->s = s;
	h->q = o->queue;
	h->fd = fd;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_TURBO |
			 (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0);
	h->d = MHD_start_daemon(flags, 0, NULL, NULL, handle, h,
				MHD_OPTION_LISTEN_SOCKET, fd,
				MHD_OPTION_THREAD_POOL_SIZE, o->threads ? o->threads : 1,
				MHD_OPTION_CONNECTION_LIMIT, o->max_connections,
				MHD_OPTION_CONNECTION_TIMEOUT, o->timeout_s,
				MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)POOL_BYTES,
				MHD_OPTION_NOTIFY_COMPLETED, done, h,
				MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL,
				MHD_OPTION_END);
	if (!h->d) {
		/* libmicrohttpd has closed the listening socket on its way out */
		errbuf_set(err, errlen, "cannot start the HTTP server on %s (libmicrohttpd refused its options)", url);
		free(h);
		return -1;
	}
	*out = h;
	return 0;
}

void http_stop(struct http *h)
{
	if (!h)
		return;
	MHD_stop_daemon(h->d); /* closes the listen socket too */
	free(h);
}
