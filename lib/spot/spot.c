/*
 * spot.c — what the three clouds' watchers share (see spot.h): naming and
 * detecting the cloud, the watcher thread and its event queue, bounded HTTP
 * through one curl multi handle, backoff, and the date formats the clouds
 * use.
 *
 * Every request of the watcher thread goes through the multi handle, so
 * that spot_watch_stop() can interrupt whatever it is doing — a GCP long
 * poll that would otherwise hold for a minute, a backoff sleep — with
 * spot_curl.multi_wakeup(). Events cross to the caller through a mutex-guarded
 * ring and an eventfd the caller can poll().
 *
 * libcurl itself is loaded with dlopen the first time a watcher starts (see
 * struct spot_curl): the commands that watch no cloud start without it.
 */
#define SPOT_INTERNAL
#include "util/clock.h"
#include "spot/spot.h"
#include "util/errbuf.h"
#include "device/gpu.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#define QUEUE_CAP 64
#define ERROR_AFTER 3          /* failed rounds in a row before one SPOT_ERROR */
#define BACKOFF_MIN_MS 500
#define BACKOFF_MAX_MS 5000
#define URL_MAX 512
#define DMI_MAX 256

struct spot_watcher {
	const struct spot_ops *ops;
	struct spot_opts opts;
	char base[URL_MAX];
	void *state;
	CURLM *multi;
	int efd;
	atomic_bool stop;
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;          /* guards the queue */
	struct spot_event queue[QUEUE_CAP];
	size_t qhead, qlen;
	char lasterr[200];             /* watcher thread only */
};

/* ---- names, parsing, detection ---- */

const char *spot_cloud_name(enum spot_cloud c)
{
	switch (c) {
	case SPOT_AWS: return "aws";
	case SPOT_GCP: return "gcp";
	case SPOT_AZURE: return "azure";
	case SPOT_NONE: break;
	}
	return "none";
}

const char *spot_kind_name(enum spot_kind k)
{
	switch (k) {
	case SPOT_PREEMPT: return "preempt";
	case SPOT_WARNING: return "warning";
	case SPOT_ERROR: break;
	}
	return "error";
}

int spot_parse_cloud(const char *s, enum spot_cloud *out, bool *autodetect)
{
	static const struct { const char *name; enum spot_cloud c; } names[] = {
		{"aws", SPOT_AWS}, {"gcp", SPOT_GCP}, {"azure", SPOT_AZURE}, {"none", SPOT_NONE},
	};
	if (!s)
		return GC_EINVAL;
	if (strcmp(s, "auto") == 0) {
		*out = SPOT_NONE;
		*autodetect = true;
		return GC_OK;
	}
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strcmp(s, names[i].name) == 0) {
			*out = names[i].c;
			*autodetect = false;
			return GC_OK;
		}
	return GC_EINVAL;
}

/* One DMI string, trailing whitespace removed; "" when unreadable. */
static void read_dmi(const char *dir, const char *name, char *buf, size_t len)
{
	buf[0] = '\0';
	char path[512];
	if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path)
		return;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return;
	ssize_t n;
	do
		n = read(fd, buf, len - 1);
	while (n < 0 && errno == EINTR);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	size_t l = strlen(buf);
	while (l && (buf[l - 1] == ' ' || buf[l - 1] == '\t' || buf[l - 1] == '\r'))
		buf[--l] = '\0';
}

enum spot_cloud spot_detect(const char *dmi_dir)
{
	const char *dir = dmi_dir ? dmi_dir : "/sys/class/dmi/id";
	char sys_vendor[DMI_MAX], product[DMI_MAX], bios_vendor[DMI_MAX], bios_version[DMI_MAX], tag[DMI_MAX];
	read_dmi(dir, "sys_vendor", sys_vendor, sizeof sys_vendor);
	read_dmi(dir, "product_name", product, sizeof product);
	read_dmi(dir, "bios_vendor", bios_vendor, sizeof bios_vendor);
	read_dmi(dir, "bios_version", bios_version, sizeof bios_version);
	read_dmi(dir, "chassis_asset_tag", tag, sizeof tag);
	/* Nitro instances say "Amazon EC2"; the older Xen ones only in bios_version ("4.11.amazon") */
	if (strcmp(sys_vendor, "Amazon EC2") == 0 || strcmp(bios_vendor, "Amazon EC2") == 0 ||
	    strcasestr(bios_version, "amazon"))
		return SPOT_AWS;
	if (strcmp(sys_vendor, "Google") == 0 || strcmp(product, "Google Compute Engine") == 0 ||
	    strcmp(bios_vendor, "Google") == 0)
		return SPOT_GCP;
	/* "Microsoft Corporation" alone is any Hyper-V guest; the asset tag is Azure's own */
	if (strcmp(tag, "7783-7084-3265-9085-8269-3286-77") == 0)
		return SPOT_AZURE;
	return SPOT_NONE;
}

/* Digits only, exactly `n` of them, into *v. */
static int digits(const char *s, int n, int *v)
{
	int x = 0;
	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		x = x * 10 + (s[i] - '0');
	}
	*v = x;
	return 0;
}

static int days_in_month(int y, int m)
{
	static const int d[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
		return 29;
	return d[m - 1];
}

static int to_ms(int y, int mo, int d, int h, int mi, int s, int64_t *ms)
{
	if (y < 1970 || y > 9999 || mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 ||
	    mi > 59 || s > 60)
		return GC_EINVAL;
	struct tm tm = {.tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d, .tm_hour = h, .tm_min = mi,
			.tm_sec = s};
	time_t t = timegm(&tm);
	if (t == (time_t)-1)
		return GC_EINVAL;
	*ms = (int64_t)t * 1000;
	return GC_OK;
}

int spot_parse_iso8601(const char *s, int64_t *ms)
{
	int y, mo, d, h, mi, sec;
	if (!s || strnlen(s, 64) < 20 || digits(s, 4, &y) || s[4] != '-' || digits(s + 5, 2, &mo) ||
	    s[7] != '-' || digits(s + 8, 2, &d) || (s[10] != 'T' && s[10] != 't') ||
	    digits(s + 11, 2, &h) || s[13] != ':' || digits(s + 14, 2, &mi) || s[16] != ':' ||
	    digits(s + 17, 2, &sec))
		return GC_EINVAL;
	const char *p = s + 19;
	int frac_ms = 0;
	if (*p == '.') {
		p++;
		int nd = 0;
		for (; *p >= '0' && *p <= '9'; p++, nd++)
			if (nd < 3)
				frac_ms = frac_ms * 10 + (*p - '0');
		if (nd == 0 || nd > 9)
			return GC_EINVAL;
		for (; nd < 3; nd++)
			frac_ms *= 10;
	}
	if (!((p[0] == 'Z' || p[0] == 'z') && p[1] == '\0') && strcmp(p, "+00:00") != 0)
		return GC_EINVAL;
	int64_t v;
	if (to_ms(y, mo, d, h, mi, sec, &v))
		return GC_EINVAL;
	*ms = v + frac_ms;
	return GC_OK;
}

int spot_parse_rfc1123(const char *s, int64_t *ms)
{
	static const char wdays[] = "SunMonTueWedThuFriSat";
	static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
	/* "Mon, 19 Sep 2016 18:29:47 GMT": fixed width, 29 bytes */
	if (!s || strnlen(s, 64) != 29 || s[3] != ',' || s[4] != ' ' || s[7] != ' ' || s[11] != ' ' ||
	    s[16] != ' ' || s[19] != ':' || s[22] != ':' || s[25] != ' ' || strcmp(s + 26, "GMT") != 0)
		return GC_EINVAL;
	int wday = -1, mon = -1;
	for (int i = 0; i < 7; i++)
		if (strncmp(s, wdays + 3 * i, 3) == 0)
			wday = i;
	for (int i = 0; i < 12; i++)
		if (strncmp(s + 8, months + 3 * i, 3) == 0)
			mon = i + 1;
	int d, y, h, mi, sec;
	if (wday < 0 || mon < 0 || digits(s + 5, 2, &d) || digits(s + 12, 4, &y) || digits(s + 17, 2, &h) ||
	    digits(s + 20, 2, &mi) || digits(s + 23, 2, &sec))
		return GC_EINVAL;
	int64_t v;
	if (to_ms(y, mon, d, h, mi, sec, &v))
		return GC_EINVAL;
	/* a weekday that does not match the date means the date is not what it seems */
	time_t t = (time_t)(v / 1000);
	struct tm tm;
	if (!gmtime_r(&t, &tm) || tm.tm_wday != wday)
		return GC_EINVAL;
	*ms = v;
	return GC_OK;
}

/* ---- clocks, queue, errors ---- */

const struct spot_opts *spot_opts_of(const struct spot_watcher *w)
{
	return &w->opts;
}

const char *spot_base_url(const struct spot_watcher *w)
{
	return w->base;
}

void spot_emit(struct spot_watcher *w, const struct spot_event *ev)
{
	struct spot_event e = *ev;
	if (!e.notice_ms)
		e.notice_ms = clock_real_ms();
	if (e.cloud == SPOT_NONE)
		e.cloud = w->ops->cloud;
	pthread_mutex_lock(&w->lock);
	if (w->qlen == QUEUE_CAP) {
		/* nobody reads: keep the newest (events are deduplicated, so this takes a stuck reader) */
		w->qhead = (w->qhead + 1) % QUEUE_CAP;
		w->qlen--;
	}
	w->queue[(w->qhead + w->qlen) % QUEUE_CAP] = e;
	w->qlen++;
	uint64_t one = 1;
	ssize_t n = write(w->efd, &one, sizeof one);
	(void)n; /* only EAGAIN at 2^64-1, and the fd is readable then anyway */
	pthread_mutex_unlock(&w->lock);
}

int spot_fail(struct spot_watcher *w, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(w->lasterr, sizeof w->lasterr, fmt, ap);
	va_end(ap);
	return GC_EIO;
}

int spot_watch_fd(const struct spot_watcher *w)
{
	return w->efd;
}

int spot_watch_next(struct spot_watcher *w, struct spot_event *ev)
{
	int got = 0;
	pthread_mutex_lock(&w->lock);
	if (w->qlen) {
		*ev = w->queue[w->qhead];
		w->qhead = (w->qhead + 1) % QUEUE_CAP;
		w->qlen--;
		got = 1;
	}
	if (!w->qlen) {
		uint64_t v;
		ssize_t n = read(w->efd, &v, sizeof v);
		(void)n; /* EAGAIN: already drained */
	}
	pthread_mutex_unlock(&w->lock);
	return got;
}

/* ---- HTTP ---- */

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct spot_req *r = arg;
	size_t n = size * nmemb;
	if (n > r->max_body - r->len) {
		r->oversize = true;
		return 0; /* aborts the transfer: CURLE_WRITE_ERROR */
	}
	if (r->len + n + 1 > r->cap) {
		size_t cap = r->cap ? r->cap : 1024;
		while (cap < r->len + n + 1)
			cap *= 2;
		char *b = realloc(r->body, cap);
		if (!b)
			return 0;
		r->body = b;
		r->cap = cap;
	}
	memcpy(r->body + r->len, data, n);
	r->len += n;
	r->body[r->len] = '\0';
	return n;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *arg)
{
	struct spot_req *r = arg;
	size_t n = size * nmemb;
	if (n > 5 && strncasecmp(data, "ETag:", 5) == 0) {
		const char *v = data + 5;
		size_t l = n - 5;
		while (l && (*v == ' ' || *v == '\t')) {
			v++;
			l--;
		}
		while (l && (v[l - 1] == '\r' || v[l - 1] == '\n' || v[l - 1] == ' '))
			l--;
		if (l < sizeof r->etag) {
			memcpy(r->etag, v, l);
			r->etag[l] = '\0';
		} else {
			r->etag[0] = '\0'; /* too long to be real: no etag */
		}
	}
	return n;
}

int spot_req_init(struct spot_req *r, size_t max_body)
{
	memset(r, 0, sizeof *r);
	r->max_body = max_body;
	r->easy = spot_curl.easy_init();
	return r->easy ? GC_OK : GC_ENOMEM;
}

void spot_req_free(struct spot_watcher *w, struct spot_req *r)
{
	if (r->active && w)
		spot_curl.multi_remove_handle(w->multi, r->easy);
	if (r->easy)
		spot_curl.easy_cleanup(r->easy);
	spot_curl.slist_free_all(r->hdrs);
	free(r->body);
	memset(r, 0, sizeof *r);
}

static int configure(struct spot_req *r, const char *method, const char *url, const char *const *hdrs,
		     const char *body, long timeout_ms)
{
	CURL *e = r->easy;
	spot_curl.easy_reset(e); /* options only: connections and the DNS cache stay */
	spot_curl.slist_free_all(r->hdrs);
	r->hdrs = NULL;
	for (size_t i = 0; hdrs && hdrs[i]; i++) {
		struct curl_slist *l = spot_curl.slist_append(r->hdrs, hdrs[i]);
		if (!l)
			return GC_ENOMEM;
		r->hdrs = l;
	}
	r->len = 0;
	if (r->body)
		r->body[0] = '\0';
	r->oversize = false;
	r->etag[0] = '\0';
	r->errbuf[0] = '\0';
	r->status = 0;
	r->cc = CURLE_OK;
	r->done = false;
	bool ok = spot_curl.easy_setopt(e, CURLOPT_URL, url) == CURLE_OK &&
		  spot_curl.easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https") == CURLE_OK &&
		  spot_curl.easy_setopt(e, CURLOPT_NOSIGNAL, 1L) == CURLE_OK &&
		  spot_curl.easy_setopt(e, CURLOPT_NOPROXY, "*") == CURLE_OK &&
		  spot_curl.easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms) == CURLE_OK &&
		  spot_curl.easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms) == CURLE_OK &&
		  spot_curl.easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)r->max_body) == CURLE_OK &&
		  spot_curl.easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body) == CURLE_OK &&
		  spot_curl.easy_setopt(e, CURLOPT_WRITEDATA, r) == CURLE_OK &&
		  spot_curl.easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header) == CURLE_OK &&
		  spot_curl.easy_setopt(e, CURLOPT_HEADERDATA, r) == CURLE_OK &&
		  spot_curl.easy_setopt(e, CURLOPT_ERRORBUFFER, r->errbuf) == CURLE_OK &&
		  spot_curl.easy_setopt(e, CURLOPT_PRIVATE, r) == CURLE_OK &&
		  spot_curl.easy_setopt(e, CURLOPT_HTTPHEADER, r->hdrs) == CURLE_OK;
	if (ok && strcmp(method, "GET") != 0)
		ok = spot_curl.easy_setopt(e, CURLOPT_COPYPOSTFIELDS, body ? body : "") == CURLE_OK &&
		     spot_curl.easy_setopt(e, CURLOPT_CUSTOMREQUEST, method) == CURLE_OK;
	return ok ? GC_OK : GC_EINVAL;
}

int spot_req_start(struct spot_watcher *w, struct spot_req *r, const char *method, const char *url,
		   const char *const *hdrs, const char *body, long timeout_ms)
{
	if (r->active) {
		spot_curl.multi_remove_handle(w->multi, r->easy);
		r->active = false;
	}
	int rc = configure(r, method, url, hdrs, body, timeout_ms);
	if (rc)
		return spot_fail(w, "cannot set up the request for %s", url);
	if (spot_curl.multi_add_handle(w->multi, r->easy) != CURLM_OK)
		return spot_fail(w, "cannot start the request for %s", url);
	r->active = true;
	return GC_OK;
}

static void finish(struct spot_req *r, CURLcode cc)
{
	r->cc = cc;
	if (cc == CURLE_OK)
		spot_curl.easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->status);
	r->active = false;
	r->done = true;
}

int spot_wait(struct spot_watcher *w, int timeout_ms)
{
	int64_t end = clock_mono_ms() + timeout_ms;
	for (;;) {
		if (atomic_load(&w->stop))
			return GC_ETIMEDOUT;
		int running = 0, left, got = 0;
		spot_curl.multi_perform(w->multi, &running);
		CURLMsg *m;
		while ((m = spot_curl.multi_info_read(w->multi, &left))) {
			if (m->msg != CURLMSG_DONE)
				continue;
			struct spot_req *r = NULL;
			CURL *e = m->easy_handle;
			CURLcode cc = m->data.result;
			spot_curl.easy_getinfo(e, CURLINFO_PRIVATE, (char **)&r);
			spot_curl.multi_remove_handle(w->multi, e); /* m is invalid from here */
			if (r) {
				finish(r, cc);
				got = 1;
			}
		}
		if (got)
			return GC_OK;
		int64_t rest = end - clock_mono_ms();
		if (rest <= 0)
			return GC_OK;
		spot_curl.multi_poll(w->multi, NULL, 0, rest > 1000 ? 1000 : (int)rest, NULL);
	}
}

static int describe(struct spot_watcher *w, const struct spot_req *r, const char *url)
{
	if (r->oversize)
		return spot_fail(w, "%s: answer longer than %zu bytes", url, r->max_body);
	return spot_fail(w, "%s: %s", url, r->errbuf[0] ? r->errbuf : spot_curl.easy_strerror(r->cc));
}

int spot_req_do(struct spot_watcher *w, struct spot_req *r, const char *method, const char *url,
		const char *const *hdrs, const char *body, long timeout_ms)
{
	int rc = spot_req_start(w, r, method, url, hdrs, body, timeout_ms);
	if (rc)
		return rc;
	while (!r->done)
		if (spot_wait(w, 1000) != GC_OK) {
			spot_curl.multi_remove_handle(w->multi, r->easy);
			r->active = false;
			return spot_fail(w, "stopped");
		}
	if (r->cc != CURLE_OK || r->oversize)
		return describe(w, r, url);
	return GC_OK;
}

int spot_req_blocking(const struct spot_watcher *w, struct spot_req *r, const char *method, const char *url,
		      const char *const *hdrs, const char *body, char *err, size_t errlen)
{
	if (configure(r, method, url, hdrs, body, w->opts.http_timeout_ms)) {
		errbuf_set(err, errlen, "cannot set up the request for %s", url);
		return GC_EINVAL;
	}
	finish(r, spot_curl.easy_perform(r->easy));
	if (r->cc != CURLE_OK || r->oversize) {
		errbuf_set(err, errlen, "%s: %s", url, r->oversize ? "answer too long" :
			r->errbuf[0] ? r->errbuf : spot_curl.easy_strerror(r->cc));
		return GC_EIO;
	}
	return GC_OK;
}

const char *spot_req_body(const struct spot_req *r)
{
	return r->body ? r->body : "";
}

/* ---- the thread ---- */

static int backoff_ms(int fails)
{
	int ms = BACKOFF_MIN_MS;
	for (int i = 1; i < fails && ms < BACKOFF_MAX_MS; i++)
		ms *= 2;
	return ms < BACKOFF_MAX_MS ? ms : BACKOFF_MAX_MS;
}

static void *watch_main(void *arg)
{
	struct spot_watcher *w = arg;
	int fails = 0;
	bool reported = false;
	while (!atomic_load(&w->stop)) {
		/* a fixed rate: the next round starts poll_ms after this one started, not after it ended */
		int64_t started = clock_mono_ms();
		int rc = w->ops->step(w, w->state);
		if (atomic_load(&w->stop))
			break;
		if (rc < 0) {
			fails++;
			if (fails >= ERROR_AFTER && !reported) {
				struct spot_event ev = {.kind = SPOT_ERROR};
				snprintf(ev.action, sizeof ev.action, "unreachable");
				snprintf(ev.detail, sizeof ev.detail, "%s", w->lasterr);
				spot_emit(w, &ev);
				reported = true;
			}
			if (!w->ops->self_paced)
				spot_wait(w, backoff_ms(fails));
		} else if (rc == 0) {
			fails = 0;
			reported = false;
			if (!w->ops->self_paced) {
				int64_t left = started + w->opts.poll_ms - clock_mono_ms();
				spot_wait(w, left > 0 ? (int)left : 0);
			}
		}
	}
	return NULL;
}

struct spot_curl spot_curl;

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static char curl_init_err[320]; /* "" once libcurl is loaded and initialised */

#define CURL_SONAME "libcurl.so.4"

static void curl_init(void)
{
	void *h = dlopen(CURL_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *why = dlerror();
		snprintf(curl_init_err, sizeof curl_init_err, "cannot load %s (%s): install libcurl4",
			 CURL_SONAME, why ? why : "not found");
		return;
	}
	static const struct { const char *name; size_t off; } syms[] = {
#define SYM(f) {"curl_" #f, offsetof(struct spot_curl, f)}
		SYM(global_init), SYM(easy_init), SYM(easy_cleanup), SYM(easy_reset), SYM(easy_setopt),
		SYM(easy_getinfo), SYM(easy_perform), SYM(easy_strerror), SYM(slist_append),
		SYM(slist_free_all), SYM(multi_init), SYM(multi_cleanup), SYM(multi_add_handle),
		SYM(multi_remove_handle), SYM(multi_perform), SYM(multi_info_read), SYM(multi_poll),
		SYM(multi_wakeup),
#undef SYM
	};
	struct spot_curl c;
	for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
		void *f = dlsym(h, syms[i].name);
		if (!f) {
			/* curl_multi_poll and curl_multi_wakeup need libcurl 7.68 or later */
			snprintf(curl_init_err, sizeof curl_init_err, "%s has no %s: libcurl 7.68 or later is needed",
				 CURL_SONAME, syms[i].name);
			dlclose(h);
			return;
		}
		memcpy((char *)&c + syms[i].off, &f, sizeof f);
	}
	CURLcode rc = c.global_init(CURL_GLOBAL_DEFAULT);
	if (rc != CURLE_OK) {
		snprintf(curl_init_err, sizeof curl_init_err, "cannot initialise libcurl: %s", c.easy_strerror(rc));
		return;
	}
	spot_curl = c;
}

static int set_base(struct spot_watcher *w, const char *url, char *err, size_t errlen)
{
	size_t l = strnlen(url, URL_MAX);
	if (l >= URL_MAX || (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0)) {
		errbuf_set(err, errlen, "invalid metadata address '%.64s' (expected http://HOST[:PORT])", url);
		return GC_EINVAL;
	}
	memcpy(w->base, url, l + 1);
	while (l > 8 && w->base[l - 1] == '/')
		w->base[--l] = '\0';
	return GC_OK;
}

static const struct spot_ops *ops_of(enum spot_cloud c)
{
	switch (c) {
	case SPOT_AWS: return &spot_aws_ops;
	case SPOT_GCP: return &spot_gcp_ops;
	case SPOT_AZURE: return &spot_azure_ops;
	case SPOT_NONE: break;
	}
	return NULL;
}

static void watcher_free(struct spot_watcher *w)
{
	if (w->state && w->ops->fini)
		w->ops->fini(w, w->state);
	free(w->state);
	if (w->multi)
		spot_curl.multi_cleanup(w->multi);
	if (w->efd >= 0)
		close(w->efd);
	pthread_mutex_destroy(&w->lock);
	free(w);
}

int spot_watch_start(struct spot_watcher **out, enum spot_cloud c, const struct spot_opts *o,
		     char *err, size_t errlen)
{
	*out = NULL;
	if (err && errlen)
		err[0] = '\0';
	const struct spot_ops *ops = ops_of(c);
	if (!ops) {
		errbuf_set(err, errlen, "no cloud to watch");
		return GC_EINVAL;
	}
	pthread_once(&curl_once, curl_init);
	if (curl_init_err[0]) {
		errbuf_set(err, errlen, "%s", curl_init_err);
		return GC_EIO;
	}
	struct spot_watcher *w = calloc(1, sizeof *w);
	if (!w)
		return GC_ENOMEM;
	w->ops = ops;
	w->efd = -1;
	atomic_init(&w->stop, false);
	pthread_mutex_init(&w->lock, NULL);
	if (o)
		w->opts = *o;
	w->opts.base_url = NULL; /* borrowed: w->base holds the copy */
	if (w->opts.poll_ms <= 0)
		w->opts.poll_ms = SPOT_POLL_MS;
	if (w->opts.long_poll_s <= 0)
		w->opts.long_poll_s = 60;
	if (w->opts.http_timeout_ms <= 0)
		w->opts.http_timeout_ms = 2000;
	if (w->opts.max_body == 0)
		w->opts.max_body = 64 * 1024;
	const char *url = o && o->base_url ? o->base_url : getenv("GPUCTL_METADATA_URL");
	if (!url || !*url)
		url = ops->default_url;
	int rc = set_base(w, url, err, errlen);
	if (rc)
		goto fail;
	rc = GC_ENOMEM;
	w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w->efd < 0) {
		errbuf_set(err, errlen, "cannot create an eventfd: %s", strerror(errno));
		rc = GC_EIO;
		goto fail;
	}
	w->multi = spot_curl.multi_init();
	w->state = calloc(1, ops->state_size ? ops->state_size : 1);
	if (!w->multi || !w->state)
		goto fail;
	if (ops->init && (rc = ops->init(w, w->state)) != GC_OK) {
		errbuf_set(err, errlen, "cannot set up the %s watcher: %s", spot_cloud_name(c), gc_strerror(rc));
		goto fail;
	}
	/* the thread takes no process signals: they belong to the caller (signalfd, handlers) */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int prc = pthread_create(&w->thread, NULL, watch_main, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (prc) {
		errbuf_set(err, errlen, "cannot start the watcher thread: %s", strerror(prc));
		rc = GC_EIO;
		goto fail;
	}
	w->started = true;
	*out = w;
	return GC_OK;
fail:
	if (rc == GC_ENOMEM && err && errlen && !*err)
		errbuf_set(err, errlen, "out of memory");
	watcher_free(w);
	return rc;
}

int spot_watch_ack(struct spot_watcher *w, const struct spot_event *ev, char *err, size_t errlen)
{
	if (!w->ops->ack || ev->kind == SPOT_ERROR)
		return GC_OK;
	return w->ops->ack(w, ev, err, errlen);
}

void spot_watch_stop(struct spot_watcher *w)
{
	if (!w)
		return;
	atomic_store(&w->stop, true);
	if (w->started) {
		spot_curl.multi_wakeup(w->multi);
		pthread_join(w->thread, NULL);
	}
	watcher_free(w);
}
