/*
 * outtail.c — a job's output passed on, its tail kept (outtail.h).
 */
#include "jobs/outtail.h"
#include "gpuctl/gpuctl.h"
#include "jobs/joblog.h"
#include "util/clock.h"
#include "util/errbuf.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <termios.h>
#include <unistd.h>

enum kind { K_NONE, K_FILE, K_TTY, K_PIPE };

#define CHUNK ((size_t)1 << 20) /* at most this much moved per splice: the job's pipe is as large */
/*
 * A pipe that gave less than this at a wake-up is not read again for
 * HOLD_MS: a job writing 8 KiB at a time would wake the relay for each
 * write; 2 ms later they come together (a pipe holds 1 MiB, so the job does
 * not wait). A terminal is read at once.
 */
#define GATHER ((size_t)64 << 10)
#define HOLD_MS 2

struct chan {
	enum kind kind;
	int ours;            /* where it goes: our fd 1 or 2 */
	int out;             /* ours reopened without blocking (a file description of our own), else ours */
	bool own_out;        /* out is ours to close */
	size_t pend;         /* bytes taken from the job not yet passed on: tee'd (splice) or in pbuf */
	char *pbuf;          /* read-and-write: what ours has not taken yet */
	size_t poff;
	int child;           /* the job's end: the pty's slave or the pipe's write end; -1 */
	int src;             /* ours to read: the pty's master or the pipe's read end; -1 */
	int tail[2];         /* K_PIPE: the pipe holding the tail (read, write) */
	size_t tail_cap;
	bool splice_out;     /* K_PIPE: splice on to ours works (else read and write) */
	char *ring;          /* K_TTY, and K_PIPE without splice: the last keep bytes */
	size_t ring_len, ring_at;
	bool open;           /* src not yet at end of file */
	off_t start;         /* K_FILE: its size when the job started (what was there before is not the job's) */
	int64_t hold_until;  /* K_PIPE: not read again before (monotonic ms): small writes gathered */
	int64_t fast_until;  /* K_PIPE: a fast writer filled the pipe while held: no holding before */
	size_t pipe_sz;      /* K_PIPE: the job's pipe's size (holding only when it is CHUNK) */
};

struct outtail {
	size_t keep;
	struct chan c[2];    /* [0]: stdout, [1]: stderr; c[1].kind K_NONE when it shares c[0] */
	bool shared;         /* fds 1 and 2 are one open file: c[0] serves both */
	int devnull;
	struct winsize ws;
	bool ws_known;
	int logfd;           /* outtail_open_log: the log the output reaches, open for reading (borrowed); -1 */
	int (*sync)(void *arg);
	void *sync_arg;
	uint64_t log_from;   /* the log's whole output (the bytes cut included) when the job started */
};

static void ring_add(struct chan *c, size_t keep, const char *b, size_t n)
{
	if (!c->ring)
		return;
	if (n >= keep) {
		memcpy(c->ring, b + n - keep, keep);
		c->ring_len = keep;
		c->ring_at = 0;
		return;
	}
	size_t first = keep - c->ring_at < n ? keep - c->ring_at : n;
	memcpy(c->ring + c->ring_at, b, first);
	memcpy(c->ring, b + first, n - first);
	c->ring_at = (c->ring_at + n) % keep;
	c->ring_len = c->ring_len + n > keep ? keep : c->ring_len + n;
}

/*
 * Ours, opened anew for us alone so that it can be written without blocking
 * (O_NONBLOCK on ours itself would change it for everyone sharing it): a
 * reader that stops (a paused pager, ^S) then holds the job up, as it would
 * have, but never the supervisor, which must still hear signals and notices.
 */
static bool reopen_out(struct chan *c)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/self/fd/%d", c->ours);
	int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return false; /* a socket, another user's terminal: ours could block us, so nothing is put in between */
	c->out = fd;
	c->own_out = true;
	/* a pipe as large as the job's: a relay through a 64 KiB pipe wakes up sixteen times as often */
	struct stat st;
	if (fstat(c->out, &st) == 0 && S_ISFIFO(st.st_mode) && fcntl(c->out, F_GETPIPE_SZ) < (int)CHUNK)
		(void)fcntl(c->out, F_SETPIPE_SZ, (int)CHUNK);
	return true;
}

/*
 * Writes to ours with SIGPIPE held back (a reader that went away must not
 * kill the supervisor); the signal that came of it is taken, not left
 * pending.
 */
static void sigpipe_hold(sigset_t *old)
{
	/* and SIGTTOU: the job holds the terminal's foreground; under stty tostop our write would stop us */
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGPIPE);
	sigaddset(&s, SIGTTOU);
	pthread_sigmask(SIG_BLOCK, &s, old);
}

static void sigpipe_release(const sigset_t *old, bool raised)
{
	if (raised && !sigismember(old, SIGPIPE)) {
		sigset_t s;
		sigemptyset(&s);
		sigaddset(&s, SIGPIPE);
		struct timespec zero = {0, 0};
		while (sigtimedwait(&s, NULL, &zero) > 0)
			;
	}
	if (!sigismember(old, SIGTTOU)) {
		/* a SIGTTOU the write raised while blocked: taken, not left to stop us later */
		sigset_t s;
		sigemptyset(&s);
		sigaddset(&s, SIGTTOU);
		struct timespec zero = {0, 0};
		while (sigtimedwait(&s, NULL, &zero) > 0)
			;
	}
	pthread_sigmask(SIG_SETMASK, old, NULL);
}

/*
 * Ours has no reader any more: the job's end of the channel loses its reader
 * too, so that its next write gets SIGPIPE (or EPIPE), as it would have.
 */
static void reader_gone(struct chan *c)
{
	if (c->src >= 0)
		close(c->src);
	c->src = -1;
	c->open = false;
	c->pend = 0;
}

/* pbuf to out, as much as it takes now */
static void flush_buf(struct chan *c)
{
	while (c->pend) {
		sigset_t old;
		sigpipe_hold(&old);
		ssize_t w = write(c->out, c->pbuf + c->poff, c->pend);
		int e = errno;
		sigpipe_release(&old, w < 0 && e == EPIPE);
		if (w < 0 && e == EINTR)
			continue;
		if (w < 0 && e == EAGAIN)
			return;
		if (w <= 0) {
			reader_gone(c);
			break;
		}
		c->poff += (size_t)w;
		c->pend -= (size_t)w;
	}
	c->poff = 0;
}

static int setup_tty(struct outtail *t, struct chan *c, char *err, size_t errlen)
{
	if (!reopen_out(c))
		return GC_OK; /* left as it is (K_NONE) */
	int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0) {
		errbuf_set(err, errlen, "cannot open a pseudo-terminal for the job's output: %s", strerror(errno));
		if (m >= 0)
			close(m);
		return GC_EIO;
	}
	char name[128];
	int s = ptsname_r(m, name, sizeof name) == 0 ? open(name, O_RDWR | O_NOCTTY | O_CLOEXEC) : -1;
	if (s < 0) {
		errbuf_set(err, errlen, "cannot open the job's pseudo-terminal: %s", strerror(errno));
		close(m);
		return GC_EIO;
	}
	/* the job sees our terminal's settings; the bytes come to us as written (ours adds its own \r) */
	struct termios tio;
	if (tcgetattr(c->ours, &tio) == 0) {
		tio.c_oflag &= ~(tcflag_t)OPOST;
		(void)tcsetattr(s, TCSANOW, &tio);
	}
	if (ioctl(c->ours, TIOCGWINSZ, &t->ws) == 0) {
		t->ws_known = true;
		(void)ioctl(s, TIOCSWINSZ, &t->ws);
	}
	c->ring = malloc(t->keep);
	if (!c->ring) {
		close(m);
		close(s);
		errbuf_set(err, errlen, "out of memory");
		return GC_ENOMEM;
	}
	c->kind = K_TTY;
	c->src = m;
	c->child = s;
	(void)fcntl(m, F_SETFL, fcntl(m, F_GETFL) | O_NONBLOCK);
	return GC_OK;
}

static int setup_pipe(struct outtail *t, struct chan *c, char *err, size_t errlen)
{
	if (!reopen_out(c))
		return GC_OK; /* left as it is (K_NONE) */
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		errbuf_set(err, errlen, "cannot make a pipe for the job's output: %s", strerror(errno));
		return GC_EIO;
	}
	(void)fcntl(p[0], F_SETPIPE_SZ, 1 << 20); /* fewer wake-ups; as large as an unprivileged pipe gets */
	int psz = fcntl(p[0], F_GETPIPE_SZ);
	c->pipe_sz = psz > 0 ? (size_t)psz : 0;
	c->kind = K_PIPE;
	c->src = p[0];
	c->child = p[1];
	(void)fcntl(p[0], F_SETFL, O_NONBLOCK);
	/* the tail's pipe: as large as keep, or as large as we may make it */
	if (pipe2(c->tail, O_CLOEXEC | O_NONBLOCK) == 0) {
		int got = fcntl(c->tail[1], F_SETPIPE_SZ, (int)t->keep);
		if (got < 0)
			got = fcntl(c->tail[1], F_GETPIPE_SZ);
		c->tail_cap = got > 0 ? (size_t)got : 0;
	} else {
		c->tail[0] = c->tail[1] = -1;
	}
	/* splice needs ours to take it (a pipe, a file, a socket; not a terminal): tried on the first chunk */
	c->splice_out = c->tail[0] >= 0 && c->tail_cap > 0 && t->devnull >= 0;
	return GC_OK;
}

static bool same_file(int a, int b)
{
	struct stat x, y;
	if (fstat(a, &x) < 0 || fstat(b, &y) < 0 || x.st_dev != y.st_dev || x.st_ino != y.st_ino)
		return false;
	/* one open file (2>&1), not two opens of it: the offsets move together */
	int fa = fcntl(a, F_GETFL), fb = fcntl(b, F_GETFL);
	return fa == fb;
}

/* a keeper whose channels are our fds 1 and 2, left as they are (K_NONE) until set up; NULL with err */
static struct outtail *keeper(size_t keep, char *err, size_t errlen)
{
	struct outtail *t = calloc(1, sizeof *t);
	if (!t) {
		errbuf_set(err, errlen, "out of memory");
		return NULL;
	}
	t->keep = keep ? keep : OUTTAIL_KEEP;
	t->logfd = t->devnull = -1;
	for (int i = 0; i < 2; i++)
		t->c[i] = (struct chan){.ours = i + 1, .out = i + 1, .child = -1, .src = -1, .tail = {-1, -1}};
	return t;
}

int outtail_open(struct outtail **out, size_t keep, bool from_null, char *err, size_t errlen)
{
	*out = NULL;
	struct outtail *t = keeper(keep, err, errlen);
	if (!t)
		return GC_ENOMEM;
	t->devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	t->shared = same_file(1, 2);
	for (int i = 0; i < (t->shared ? 1 : 2); i++) {
		struct chan *c = &t->c[i];
		struct stat st;
		if (fstat(c->ours, &st) < 0)
			continue; /* not open: nothing to pass on */
		int rc = GC_OK;
		if (S_ISREG(st.st_mode)) {
			c->kind = K_FILE;
			c->start = st.st_size;
		}
		else if (isatty(c->ours))
			rc = setup_tty(t, c, err, errlen);
		else if (S_ISCHR(st.st_mode) && major(st.st_rdev) == 1 && minor(st.st_rdev) == 3 && !from_null)
			continue; /* /dev/null */
		else
			rc = setup_pipe(t, c, err, errlen);
		if (rc != GC_OK) {
			outtail_close(t);
			return rc;
		}
		c->open = c->src >= 0;
	}
	*out = t;
	return GC_OK;
}

int outtail_open_log(struct outtail **out, size_t keep, int fd, int (*sync)(void *arg), void *arg, char *err,
		     size_t errlen)
{
	*out = NULL;
	struct outtail *t = keeper(keep, err, errlen); /* both left as they are: the job writes where we would */
	if (!t)
		return GC_ENOMEM;
	t->shared = true;
	t->logfd = fd;
	t->sync = sync;
	t->sync_arg = arg;
	t->log_from = joblog_whole(fd);
	*out = t;
	return GC_OK;
}

void outtail_child_fds(const struct outtail *t, int *fd1, int *fd2)
{
	*fd1 = t->c[0].child;
	*fd2 = t->shared ? t->c[0].child : t->c[1].child;
}

size_t outtail_pollfds(const struct outtail *t, struct pollfd *p, size_t max)
{
	size_t n = 0;
	int64_t now = clock_mono_ms();
	for (int i = 0; i < 2 && n < max; i++) {
		const struct chan *c = &t->c[i];
		if (c->pend)
			p[n++] = (struct pollfd){.fd = c->out, .events = POLLOUT};
		else if (c->open && c->hold_until <= now)
			p[n++] = (struct pollfd){.fd = c->src, .events = POLLIN};
	}
	return n;
}

int outtail_timeout_ms(const struct outtail *t)
{
	int64_t now = clock_mono_ms(), next = -1;
	for (int i = 0; i < 2; i++) {
		const struct chan *c = &t->c[i];
		if (c->open && !c->pend && c->hold_until > now && (next < 0 || c->hold_until < next))
			next = c->hold_until;
	}
	return next < 0 ? -1 : (int)(next - now);
}

/* K_PIPE with splice: the tee'd bytes still in the job's pipe on to out; false: out does not take splice */
static bool splice_pending(struct chan *c)
{
	while (c->pend) {
		sigset_t old;
		sigpipe_hold(&old);
		ssize_t s = splice(c->src, NULL, c->out, NULL, c->pend, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		int e = errno;
		sigpipe_release(&old, s < 0 && e == EPIPE);
		if (s < 0 && e == EINTR)
			continue;
		if (s < 0 && e == EAGAIN)
			return true; /* out is full: polled for room */
		if (s < 0 && (e == EINVAL || e == ENOSYS))
			return false;
		if (s <= 0) {
			reader_gone(c);
			break;
		}
		c->pend -= (size_t)s;
	}
	return true;
}

/*
 * K_PIPE with splice: room in the tail's pipe (its oldest pages dropped, not
 * copied), the job's next bytes tee'd into it, then spliced on to out.
 * 0: nothing more now; 1: moved some; -1: out does not take splice.
 */
static int splice_some(struct outtail *t, struct chan *c)
{
	int avail = 0, queued = 0;
	if (ioctl(c->src, FIONREAD, &avail) < 0 || avail <= 0)
		return 0; /* empty (we hold a writer's end: no end of file while the run lasts) */
	size_t a = (size_t)avail < CHUNK ? (size_t)avail : CHUNK;
	if (a > c->tail_cap)
		a = c->tail_cap;
	if (ioctl(c->tail[0], FIONREAD, &queued) == 0 && queued > 0 && (size_t)queued + a > c->tail_cap)
		(void)splice(c->tail[0], NULL, t->devnull, NULL, (size_t)queued + a - c->tail_cap, SPLICE_F_NONBLOCK);
	ssize_t n = tee(c->src, c->tail[1], a, SPLICE_F_NONBLOCK);
	for (int k = 0; k < 8 && n < 0 && errno == EAGAIN; k++) {
		/* the tail's pipe is out of slots (a slot per tee'd buffer, not bytes): its oldest quarter
		   goes, not all of it, so the tail keeps what it can */
		if (ioctl(c->tail[0], FIONREAD, &queued) < 0 || queued <= 0)
			break;
		size_t drop = (size_t)queued / 4 > 4096 ? (size_t)queued / 4 : 4096;
		(void)splice(c->tail[0], NULL, t->devnull, NULL, drop, SPLICE_F_NONBLOCK);
		n = tee(c->src, c->tail[1], a, SPLICE_F_NONBLOCK);
	}
	if (n < 0)
		return errno == EAGAIN ? 0 : -1;
	if (n == 0) {
		c->open = false; /* end of file: every writer has closed it */
		return 0;
	}
	c->pend = (size_t)n;
	if (!splice_pending(c)) {
		/* out does not take splice: these bytes stay tee'd in the tail; read and write them on */
		c->splice_out = false;
		return -1;
	}
	return 1;
}

/* read what is there and write it on (what out does not take now waits in pbuf), into the ring */
static void copy_some(struct outtail *t, struct chan *c)
{
	if (!c->ring && !(c->ring = malloc(t->keep)))
		return;
	if (!c->pbuf && !(c->pbuf = malloc(1 << 16)))
		return;
	for (int round = 0; round < 16 && !c->pend; round++) {
		ssize_t n = read(c->src, c->pbuf, 1 << 16);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			/* end of file; a pty's master says EIO once no slave is open */
			c->open = false;
			return;
		}
		ring_add(c, t->keep, c->pbuf, (size_t)n);
		c->pend = (size_t)n;
		c->poff = 0;
		flush_buf(c);
	}
}

static void pump_one(struct outtail *t, struct chan *c)
{
	if (c->kind == K_PIPE && c->splice_out) {
		if (c->pend && !splice_pending(c))
			c->splice_out = false;
		int avail = 0;
		int64_t now = clock_mono_ms();
		bool got = ioctl(c->src, FIONREAD, &avail) == 0;
		if (got && (size_t)avail >= CHUNK / 2)
			c->fast_until = now + 1000;
		bool small = got && (size_t)avail < GATHER && now >= c->fast_until && c->pipe_sz >= CHUNK;
		for (int round = 0; round < 16 && c->splice_out && !c->pend && c->open; round++)
			if (splice_some(t, c) <= 0)
				break;
		if (small)
			c->hold_until = now + HOLD_MS;
		if (c->splice_out)
			return;
		/* fallen back: what splice had taken is still in the job's pipe, and tee'd: read it on */
		c->pend = 0;
	}
	if (c->pend)
		flush_buf(c);
	if (!c->pend)
		copy_some(t, c);
}

bool outtail_pump(struct outtail *t, const struct pollfd *p, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		if (!(p[k].revents & (POLLIN | POLLOUT | POLLHUP | POLLERR)))
			continue;
		for (int i = 0; i < 2; i++)
			if ((t->c[i].open || t->c[i].pend) && (t->c[i].src == p[k].fd || t->c[i].out == p[k].fd))
				pump_one(t, &t->c[i]);
	}
	return t->c[0].open || t->c[1].open || t->c[0].pend || t->c[1].pend;
}

void outtail_drain(struct outtail *t)
{
	for (int i = 0; i < 2; i++) {
		struct chan *c = &t->c[i];
		/* what is queued now; a descendant still writing is not waited for, nor a reader that stopped */
		for (int round = 0; (c->open || c->pend) && round < 256; round++) {
			int q = 0;
			struct pollfd p = {.fd = c->pend ? c->out : c->src, .events = c->pend ? POLLOUT : POLLIN};
			if (c->pend || c->kind == K_TTY) {
				/* a pty's last bytes may still be on their way to the master: poll, not FIONREAD */
				if (poll(&p, 1, c->pend ? 100 : 20) <= 0)
					break;
			} else if (ioctl(c->src, FIONREAD, &q) < 0 || q <= 0) {
				break;
			}
			pump_one(t, c);
		}
	}
}

bool outtail_has_tty(const struct outtail *t)
{
	return t->c[0].kind == K_TTY || t->c[1].kind == K_TTY;
}

void outtail_winsize(struct outtail *t)
{
	for (int i = 0; i < 2; i++) {
		struct chan *c = &t->c[i];
		struct winsize ws;
		if (c->kind != K_TTY || ioctl(c->ours, TIOCGWINSZ, &ws) < 0)
			continue;
		if (!t->ws_known || memcmp(&ws, &t->ws, sizeof ws) != 0) {
			t->ws = ws;
			t->ws_known = true;
			(void)ioctl(c->child, TIOCSWINSZ, &ws);
		}
	}
}

/* append the last keep bytes of channel c to *buf */
static void tail_of(struct outtail *t, struct chan *c, char **buf, size_t *len)
{
	size_t want = t->keep;
	char *b = realloc(*buf, *len + want + 1);
	if (!b)
		return;
	*buf = b;
	char *dst = b + *len;
	size_t got = 0;
	if (c->kind == K_FILE) {
		/* read back from the file itself (ours may be open for writing only) */
		char path[64];
		snprintf(path, sizeof path, "/proc/self/fd/%d", c->ours);
		int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
		struct stat st;
		if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
			off_t from = st.st_size > (off_t)want ? st.st_size - (off_t)want : 0;
			if (from < c->start)
				from = c->start < st.st_size ? c->start : st.st_size;
			while (got < want) {
				ssize_t r = pread(fd, dst + got, want - got, from + (off_t)got);
				if (r <= 0)
					break;
				got += (size_t)r;
			}
		}
		if (fd >= 0)
			close(fd);
	} else if (c->kind == K_PIPE && c->tail[0] >= 0) {
		/* the tail's pipe holds the last tail_cap bytes at most: read them out */
		while (got < want) {
			ssize_t r = read(c->tail[0], dst + got, want - got);
			if (r <= 0)
				break;
			got += (size_t)r;
		}
		/* what went through read-and-write after a splice fallback is in the ring */
		if (c->ring_len) {
			/* what came after a splice fallback is newer: the ring's newest bytes last, the oldest of
			   the pipe's dropped for them */
			size_t room = c->ring_len < want ? c->ring_len : want;
			if (got + room > want) {
				size_t cut = got + room - want;
				memmove(dst, dst + cut, got - cut);
				got -= cut;
			}
			size_t start = (c->ring_at + t->keep - room) % t->keep;
			for (size_t k = 0; k < room; k++)
				dst[got + k] = c->ring[(start + k) % t->keep];
			got += room;
		}
	} else if (c->ring && c->ring_len) {
		size_t start = (c->ring_at + t->keep - c->ring_len) % t->keep;
		for (size_t k = 0; k < c->ring_len; k++)
			dst[k] = c->ring[(start + k) % t->keep];
		got = c->ring_len;
	}
	*len += got;
}

/* what a log's reader gives, its last `keep` bytes kept */
struct grab {
	char *buf;
	size_t len, keep;
};

static void grab(void *arg, const char *b, size_t n)
{
	struct grab *g = arg;
	if (n >= g->keep) {
		memcpy(g->buf, b + n - g->keep, g->keep);
		g->len = g->keep;
		return;
	}
	if (g->len + n > g->keep) {
		size_t drop = g->len + n - g->keep;
		memmove(g->buf, g->buf + drop, g->len - drop);
		g->len -= drop;
	}
	memcpy(g->buf + g->len, b, n);
	g->len += n;
}

/* outtail_open_log's: the log's newest output since the job started, once sync says it is all there */
static void tail_of_log(struct outtail *t, char **buf, size_t *len)
{
	if (t->sync)
		(void)t->sync(t->sync_arg);
	struct grab g = {.buf = malloc(t->keep + 1), .keep = t->keep};
	if (!g.buf)
		return;
	uint64_t end = joblog_whole(t->logfd);
	struct joblog_pos p = {.at = end > t->keep ? end - t->keep : 0};
	if (p.at < t->log_from)
		p.at = t->log_from; /* what was there before (a job queued again) is not this start's */
	/* up to where it was: descendants that write on do not keep this reading */
	while (p.at < end && joblog_read(t->logfd, &p, grab, &g) > 0)
		;
	*buf = g.buf;
	*len = g.len;
}

size_t outtail_text(struct outtail *t, char **buf)
{
	*buf = NULL;
	size_t len = 0;
	if (t->logfd >= 0)
		tail_of_log(t, buf, &len);
	else if (!t->shared)
		tail_of(t, &t->c[1], buf, &len);
	tail_of(t, &t->c[0], buf, &len);
	if (*buf && len == 0) {
		free(*buf);
		*buf = NULL;
	}
	if (*buf)
		(*buf)[len] = '\0';
	return len;
}

void outtail_close(struct outtail *t)
{
	if (!t)
		return;
	for (int i = 0; i < 2; i++) {
		struct chan *c = &t->c[i];
		int fds[] = {c->child, c->src, c->tail[0], c->tail[1], c->own_out ? c->out : -1};
		for (size_t k = 0; k < sizeof fds / sizeof fds[0]; k++)
			if (fds[k] >= 0)
				close(fds[k]);
		free(c->ring);
		free(c->pbuf);
	}
	if (t->devnull >= 0)
		close(t->devnull);
	free(t);
}
