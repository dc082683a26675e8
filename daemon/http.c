/*
 * http.c — gpuctld's HTTP server on libmicrohttpd (see http.h).
 *
 * Bounds: a connection limit; a per-connection memory pool (libmicrohttpd
 * answers 431/414 when headers or the URL do not fit in it); GET and HEAD
 * only (405); no request body (413); at most MAX_ARGS query arguments (414).
 * Every response is a copy of bytes the sampler has already rendered.
 *
 * Connections are accepted here, not by libmicrohttpd, so that two more
 * bounds hold. A deadline: each request, from the connection's start (or the
 * end of the previous request on it) to the end of its answer, gets --timeout
 * in all; libmicrohttpd's own timeout only counts silence, so a client that
 * trickles a header byte every few seconds kept its slot for ever. And a
 * share: one client — a local user, known by the uid that owns its end of a
 * loopback connection (/proc/net/tcp), else a remote address — holds at most
 * --max-per-client connections, so neither one local user nor one address can
 * take every slot from a Prometheus server or a browser.
 */
#include "util/clock.h"
#include "http.h"
#include "metrics.h"
#include "route.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "util/errbuf.h"

#define POOL_BYTES (16 * 1024)   /* request line + headers must fit (431 otherwise) */
#define MAX_ARGS 64              /* query arguments in one request (414 beyond) */
#define REAP_MS 250              /* how often deadlines are looked at */

/* the dashboard page, embedded at build time (daemon/embed.py) */
extern const char gpuctld_dashboard_html[];
extern const size_t gpuctld_dashboard_html_len;

/* a connection we accepted and handed to libmicrohttpd */
struct conn {
	int fd;
	long long start_ms;      /* monotonic: its start, or the end of its last request */
	bool reaped;             /* shut down for its deadline; libmicrohttpd closes it */
	char client[48];         /* "uid N" or an address */
};

struct http {
	struct http_opts o;
	char url[128];
	struct MHD_Daemon *d;
	struct sampler *s;
	struct queue *q;
	int fd;                  /* the listening socket, ours */
	int stop;                /* eventfd: the acceptor leaves */
	pthread_t acceptor;
	bool started;
	unsigned max_connections, per_client;
	long long timeout_ms;
	struct sockaddr_storage self;
	pthread_mutex_t mu;      /* conns */
	struct conn *conns;
	size_t nconns;
	unsigned long refused;   /* over a client's share, since start */
};

/* index of fd's entry, or -1; with mu held */
static ssize_t conn_find(struct http *h, int fd)
{
	for (size_t i = 0; i < h->nconns; i++)
		if (h->conns[i].fd == fd)
			return (ssize_t)i;
	return -1;
}

static int conn_fd(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	return ci ? ci->connect_fd : -1;
}

/* a request on c is over: its connection's next deadline counts from now */
static void conn_rearm(struct http *h, struct MHD_Connection *c)
{
	int fd = conn_fd(c);
	pthread_mutex_lock(&h->mu);
	ssize_t i = conn_find(h, fd);
	if (i >= 0)
		h->conns[i].start_ms = clock_mono_ms();
	pthread_mutex_unlock(&h->mu);
}

/* per-request state, made when the request line is in (uri_log) */
struct req {
	bool started;                /* the handler has seen the headers */
	bool body;                   /* the client sent a body */
	bool refused;                /* answered 414 before libmicrohttpd parsed the arguments */
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
	n += metrics_age(buf + n, 512, (clock_mono_ms() - f->mono_ms) / 1000.0);
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
	n += (size_t)snprintf(buf + n, 64, ",\"age_ms\":%lld}}\n", (long long)(clock_mono_ms() - f->mono_ms));
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
	if (!q || q->refused)
		return MHD_NO;
	if (!q->started) {
		/* first call: headers only. Refuse now what would come with a body, before it is read */
		q->started = true;
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
	(void)t;
	free(*con_cls);
	*con_cls = NULL;
	conn_rearm(cls, c);
}

/*
 * The request line is in, its query not yet parsed: libmicrohttpd keeps each
 * argument in the connection's memory pool, and one with a few hundred of them
 * ran out of it and closed the connection without a word (after 10 s). Count
 * them here first, and answer 414 straight away past MAX_ARGS.
 */
static void *uri_log(void *cls, const char *uri, struct MHD_Connection *c)
{
	(void)cls;
	struct req *q = calloc(1, sizeof *q);
	const char *query = strchr(uri, '?');
	size_t args = 0;
	for (const char *p = query; p && *p && args <= MAX_ARGS; p++)
		args += *p == '?' || *p == '&' || *p == ';';
	if (args > MAX_ARGS) {
		static const char msg[] = "HTTP/1.1 414 URI Too Long\r\nContent-Type: text/plain; charset=utf-8\r\n"
					  "Content-Length: 38\r\nConnection: close\r\n\r\n"
					  "too many query arguments (at most 64)\n";
		int fd = conn_fd(c);
		if (fd >= 0) {
			(void)send(fd, msg, sizeof msg - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
			(void)shutdown(fd, SHUT_RDWR);
		}
		if (q)
			q->refused = true;
	}
	return q;
}

/* libmicrohttpd is about to close a connection: forget it (before its fd can be reused) */
static void notify(void *cls, struct MHD_Connection *c, void **socket_context, enum MHD_ConnectionNotificationCode t)
{
	(void)socket_context;
	if (t != MHD_CONNECTION_NOTIFY_CLOSED)
		return;
	struct http *h = cls;
	int fd = conn_fd(c);
	pthread_mutex_lock(&h->mu);
	ssize_t i = conn_find(h, fd);
	if (i >= 0)
		h->conns[i] = h->conns[--h->nconns];
	pthread_mutex_unlock(&h->mu);
}

/*
 * The uid that owns the client's end of a loopback TCP connection, from
 * /proc/net/tcp or tcp6 (the line whose local address is the peer and whose
 * remote address is us). -1 when not found.
 */
static long loopback_uid(const struct sockaddr_storage *peer, const struct sockaddr_storage *self)
{
	char want_local[64], want_rem[64];
	const char *table;
	if (peer->ss_family == AF_INET) {
		const struct sockaddr_in *p = (const void *)peer, *m = (const void *)self;
		snprintf(want_local, sizeof want_local, "%08X:%04X", p->sin_addr.s_addr, ntohs(p->sin_port));
		snprintf(want_rem, sizeof want_rem, "%08X:%04X", m->sin_addr.s_addr, ntohs(m->sin_port));
		table = "/proc/net/tcp";
	} else {
		const struct sockaddr_in6 *p = (const void *)peer, *m = (const void *)self;
		const uint32_t *a = (const void *)&p->sin6_addr, *b = (const void *)&m->sin6_addr;
		snprintf(want_local, sizeof want_local, "%08X%08X%08X%08X:%04X", a[0], a[1], a[2], a[3],
			 ntohs(p->sin6_port));
		snprintf(want_rem, sizeof want_rem, "%08X%08X%08X%08X:%04X", b[0], b[1], b[2], b[3],
			 ntohs(m->sin6_port));
		table = "/proc/net/tcp6";
	}
	FILE *f = fopen(table, "re");
	if (!f)
		return -1;
	char line[512], local[64], rem[64];
	long uid = -1, u;
	int lines = 0;
	while (uid < 0 && lines++ < 1000000 && fgets(line, sizeof line, f))
		if (sscanf(line, "%*s %63s %63s %*s %*s %*s %*s %ld", local, rem, &u) == 3 &&
		    strcmp(local, want_local) == 0 && strcmp(rem, want_rem) == 0)
			uid = u;
	fclose(f);
	return uid;
}

static bool is_loopback(const struct sockaddr_storage *a)
{
	if (a->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)a)->sin_addr.s_addr) >> 24) == 127;
	if (a->ss_family != AF_INET6)
		return false;
	const struct in6_addr *x = &((const struct sockaddr_in6 *)a)->sin6_addr;
	return IN6_IS_ADDR_LOOPBACK(x) || (IN6_IS_ADDR_V4MAPPED(x) && x->s6_addr[12] == 127);
}

/* who a connection is from, for its share: a local user, or an address */
static void client_of(struct http *h, const struct sockaddr_storage *peer, char *out, size_t len)
{
	long uid = is_loopback(peer) ? loopback_uid(peer, &h->self) : -1;
	if (uid >= 0) {
		snprintf(out, len, "uid %ld", uid);
		return;
	}
	char host[INET6_ADDRSTRLEN] = "?";
	if (peer->ss_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)peer)->sin_addr, host, sizeof host);
	else if (peer->ss_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)peer)->sin6_addr, host, sizeof host);
	snprintf(out, len, "%s", host);
}

/* over the deadline: shut down (libmicrohttpd sees the end and closes it); with mu held */
static void reap(struct http *h, long long now)
{
	for (size_t i = 0; i < h->nconns; i++) {
		struct conn *k = &h->conns[i];
		if (!k->reaped && now - k->start_ms > h->timeout_ms) {
			(void)shutdown(k->fd, SHUT_RDWR);
			k->reaped = true;
		}
	}
}

static void *acceptor(void *arg)
{
	struct http *h = arg;
	static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\n"
				   "Content-Length: 34\r\nConnection: close\r\n\r\ntoo many connections from you now\n";
	for (;;) {
		pthread_mutex_lock(&h->mu);
		reap(h, clock_mono_ms());
		bool room = h->nconns < h->max_connections; /* else the next waits in the backlog */
		bool deadlines = false; /* connections to reap when their time is up: look every REAP_MS */
		for (size_t i = 0; i < h->nconns && !deadlines; i++)
			deadlines = !h->conns[i].reaped;
		pthread_mutex_unlock(&h->mu);
		struct pollfd p[2] = {{.fd = h->stop, .events = POLLIN}, {.fd = room ? h->fd : -1, .events = POLLIN}};
		if (poll(p, 2, deadlines || !room ? REAP_MS : -1) < 0 && errno != EINTR)
			break;
		if (p[0].revents)
			break;
		if (!(p[1].revents & POLLIN))
			continue;
		struct sockaddr_storage peer;
		socklen_t plen = sizeof peer;
		int fd = accept4(h->fd, (struct sockaddr *)&peer, &plen, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		struct conn k = {.fd = fd, .start_ms = clock_mono_ms()};
		client_of(h, &peer, k.client, sizeof k.client);
		pthread_mutex_lock(&h->mu);
		unsigned mine = 0;
		for (size_t i = 0; i < h->nconns; i++)
			mine += strcmp(h->conns[i].client, k.client) == 0;
		struct conn *grown = mine < h->per_client ? realloc(h->conns, (h->nconns + 1) * sizeof *grown) : NULL;
		if (grown) {
			h->conns = grown;
			h->conns[h->nconns++] = k;
		} else {
			h->refused++;
		}
		pthread_mutex_unlock(&h->mu);
		if (!grown) {
			/* its share is taken: say so, never wait on it */
			(void)fcntl(fd, F_SETFL, O_NONBLOCK);
			(void)send(fd, busy, sizeof busy - 1, MSG_NOSIGNAL);
			close(fd);
			continue;
		}
		if (MHD_add_connection(h->d, fd, (struct sockaddr *)&peer, plen) != MHD_YES) {
			/* libmicrohttpd has closed it: forget it unless its close was already noticed */
			pthread_mutex_lock(&h->mu);
			ssize_t i = conn_find(h, fd);
			if (i >= 0 && h->conns[i].start_ms == k.start_ms && !strcmp(h->conns[i].client, k.client))
				h->conns[i] = h->conns[--h->nconns];
			pthread_mutex_unlock(&h->mu);
		}
	}
	return NULL;
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

int http_check_listen(const struct http_opts *o, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t len;
	bool loopback;
	if (route_listen(o->listen, &ss, &len, &loopback, err, errlen) < 0)
		return -1;
	if (!loopback && !o->allow_remote) {
		errbuf_set(err, errlen, "--listen '%s' is not a loopback address: anyone who can reach it sees "
			   "every GPU, process and user; add --allow-remote to serve it anyway", o->listen);
		return -1;
	}
	return 0;
}

int http_open(struct http **out, const struct http_opts *o, char *url, size_t urllen, bool *usage, char *err,
	      size_t errlen)
{
	*out = NULL;
	*usage = false;
	if (http_check_listen(o, err, errlen) < 0) {
		*usage = true;
		return -1;
	}
	struct sockaddr_storage ss;
	socklen_t len;
	bool loopback;
	(void)route_listen(o->listen, &ss, &len, &loopback, err, errlen);
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
	h->o = *o;
	h->fd = fd;
	h->stop = -1;
	h->self = ss;
	snprintf(h->url, sizeof h->url, "%s", url);
	h->max_connections = o->max_connections;
	h->per_client = o->per_client ? o->per_client : o->max_connections;
	h->timeout_ms = (long long)o->timeout_s * 1000;
	pthread_mutex_init(&h->mu, NULL);
	*out = h;
	return 0;
}

int http_serve(struct http *h, struct sampler *s, struct queue *q, char *err, size_t errlen)
{
	h->s = s;
	h->q = q;
	h->stop = eventfd(0, EFD_CLOEXEC);
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_TURBO | MHD_USE_ITC |
			 MHD_USE_NO_LISTEN_SOCKET | (h->self.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0);
	h->d = h->stop < 0 ? NULL
			   : MHD_start_daemon(flags, 0, NULL, NULL, handle, h,
					      MHD_OPTION_THREAD_POOL_SIZE, h->o.threads ? h->o.threads : 1,
					      MHD_OPTION_CONNECTION_LIMIT, h->o.max_connections,
					      MHD_OPTION_CONNECTION_TIMEOUT, h->o.timeout_s,
					      MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)POOL_BYTES,
					      MHD_OPTION_NOTIFY_COMPLETED, done, h,
					      MHD_OPTION_NOTIFY_CONNECTION, notify, h,
					      MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL,
					      MHD_OPTION_URI_LOG_CALLBACK, uri_log, NULL,
					      MHD_OPTION_END);
	if (!h->d || pthread_create(&h->acceptor, NULL, acceptor, h) != 0) {
		errbuf_set(err, errlen, "cannot start the HTTP server on %s (libmicrohttpd refused its options)",
			   h->url);
		return -1;
	}
	h->started = true;
	return 0;
}

void http_stop(struct http *h)
{
	if (!h)
		return;
	if (h->started) {
		uint64_t one = 1;
		(void)write(h->stop, &one, sizeof one);
		pthread_join(h->acceptor, NULL);
	}
	if (h->d)
		MHD_stop_daemon(h->d); /* closes the connections it has */
	close(h->fd);
	if (h->stop >= 0)
		close(h->stop);
	pthread_mutex_destroy(&h->mu);
	free(h->conns);
	free(h);
}
