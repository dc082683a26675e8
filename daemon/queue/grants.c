/*
 * grants.c — authority mode (queue-int.h, lib/jobs/authority.h): gpuctld
 * alone grants GPUs and launch ports, in one line with the queued jobs.
 *
 * A request is a connection (known by SO_PEERCRED, never by what it says).
 * While it waits it is a waiter: dispatch (round.c, dispatch.c) orders it
 * with the queued jobs by priority, fair share and arrival, and starts it
 * when its turn and its GPUs come; a waiter that closes its connection has
 * left the line, and nothing else ever takes its place away. Granted, the
 * connection is the grant: the client passes it to the job, and the grant
 * ends when the last process holding it closes it (EOF: SIGKILL included),
 * or when gpuctld revokes it (reclaim, enforcement), which closes our end
 * and stops the processes that hold the other: found through the kernel
 * (/proc/PID/fd, the socket's inode as sock_diag names the peer), the pids
 * the holder reported, and NVML's processes on its GPUs, each of the
 * grant's user only.
 *
 * A grant is stored in the round's transaction before its holder hears of
 * it; an ended one becomes its usage rows, and leaves the store, in the
 * next round's: one commit for everything a round moves. After a restart
 * the stored grants are kept while a process of their user still holds the
 * old connection's other end (its inode, read from /proc each second), and
 * recorded once, when the last one is gone: never twice.
 */
#include "queue-int.h"

#include "dispatch.h"
#include "util/clock.h"
#include "util/grow.h"
#include "device/gputable.h"
#include "device/proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define IDLE_UTIL 5

/* ---- the kernel's word on who holds a connection ---- */

/* the inode of the socket at the other end of ours (sock_diag), 0 when it cannot be told */
static uint64_t peer_ino(int fd)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return 0;
	int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (nl < 0)
		return 0;
	struct {
		struct nlmsghdr h;
		struct unix_diag_req r;
	} req = {.h = {.nlmsg_len = sizeof req, .nlmsg_type = SOCK_DIAG_BY_FAMILY, .nlmsg_flags = NLM_F_REQUEST},
		 .r = {.sdiag_family = AF_UNIX, .udiag_states = ~0u, .udiag_ino = (uint32_t)st.st_ino,
		       .udiag_show = UDIAG_SHOW_PEER, .udiag_cookie = {~0u, ~0u}}};
	uint64_t peer = 0;
	char buf[8192];
	struct timeval tv = {.tv_sec = 1};
	setsockopt(nl, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	if (send(nl, &req, sizeof req, 0) == (ssize_t)sizeof req) {
		ssize_t n = recv(nl, buf, sizeof buf, 0);
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; n > 0 && NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY)
				break;
			struct unix_diag_msg *m = NLMSG_DATA(h);
			size_t alen = h->nlmsg_len - NLMSG_LENGTH(sizeof *m);
			for (struct rtattr *a = (struct rtattr *)(m + 1); RTA_OK(a, alen); a = RTA_NEXT(a, alen))
				if (a->rta_type == UNIX_DIAG_PEER)
					peer = *(uint32_t *)RTA_DATA(a);
		}
	}
	close(nl);
	return peer;
}

/*
 * For each process of a user in uids[n] (whose grants have inodes inos[n]):
 * fn(arg, k, pid) when it holds socket inos[k]. One walk of /proc.
 */
static void holders_scan(const uint64_t *inos, const uid_t *uids, size_t n, void (*fn)(void *, size_t, pid_t), void *arg)
{
	DIR *pd = opendir("/proc");
	if (!pd)
		return;
	struct dirent *e;
	while ((e = readdir(pd))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0)
			continue;
		char path[64];
		snprintf(path, sizeof path, "/proc/%ld", pid);
		struct stat st;
		if (stat(path, &st) < 0)
			continue;
		bool any = false;
		for (size_t k = 0; k < n && !any; k++)
			any = uids[k] == st.st_uid && inos[k];
		if (!any)
			continue;
		snprintf(path, sizeof path, "/proc/%ld/fd", pid);
		DIR *fd = opendir(path);
		if (!fd)
			continue;
		struct dirent *f;
		while ((f = readdir(fd))) {
			char lp[384], target[64];
			snprintf(lp, sizeof lp, "/proc/%ld/fd/%s", pid, f->d_name);
			ssize_t l = readlink(lp, target, sizeof target - 1);
			unsigned long long ino;
			if (l <= 0)
				continue;
			target[l] = '\0';
			if (sscanf(target, "socket:[%llu]", &ino) != 1)
				continue;
			for (size_t k = 0; k < n; k++)
				if (inos[k] == ino && uids[k] == st.st_uid)
					fn(arg, k, (pid_t)pid);
		}
		closedir(fd);
	}
	closedir(pd);
}

/* sig to pid, when it is uid's (checked through a pidfd: a reused pid is never hit) */
static void signal_as(pid_t pid, uid_t uid, int sig)
{
	unsigned long long start = 0;
	if (pid > 1 && proc_stat(pid, NULL, NULL, &start) == 0)
		(void)proc_signal(pid, start, uid, sig);
}

/* ---- the table ---- */

static void publish(struct queue *q)
{
	struct grants *gs = &q->grants;
	size_t n = 0;
	for (size_t i = 0; i < gs->n; i++)
		if (!gs->g[i].ended)
			n += gs->g[i].n;
	struct lease_entry *e = calloc(n ? n : 1, sizeof *e);
	struct lease_waiter *w = calloc(gs->nw ? gs->nw : 1, sizeof *w);
	if (!e || !w) {
		free(e);
		free(w);
		return; /* the last list stands */
	}
	size_t k = 0;
	for (size_t i = 0; i < gs->n; i++)
		for (size_t u = 0; u < gs->g[i].n && !gs->g[i].ended; u++) {
			snprintf(e[k].uuid, sizeof e[k].uuid, "%s", gs->g[i].uuid[u]);
			e[k++].info = gs->g[i].info;
		}
	for (size_t i = 0; i < gs->nw; i++) {
		w[i].ticket = gs->w[i].seq;
		w[i].info = gs->w[i].info;
	}
	pthread_mutex_lock(&gs->lock);
	free(gs->pub);
	free(gs->wpub);
	gs->pub = e;
	gs->npub = k;
	gs->wpub = w;
	gs->nwpub = gs->nw;
	pthread_mutex_unlock(&gs->lock);
}

/*
 * The grant table as the library's lease functions see it in this process
 * (lease_serve): served from before the queue starts (an empty table until
 * it does), so that no thread of gpuctld ever asks gpuctld over its socket.
 */
static pthread_mutex_t served_lock = PTHREAD_MUTEX_INITIALIZER;
static struct grants *served;

static struct grants *served_take(void)
{
	pthread_mutex_lock(&served_lock);
	if (!served)
		pthread_mutex_unlock(&served_lock);
	return served;
}

/* a copy of the published table pub[n] (elements of size bytes) into *out: n of them, or none before the queue starts */
static int src_copy(const void *(*pick)(const struct grants *, size_t *), size_t size, void **out, size_t *n)
{
	struct grants *gs = served_take();
	size_t k = 0;
	const void *pub = NULL;
	if (gs) {
		pthread_mutex_lock(&gs->lock);
		pub = pick(gs, &k);
	}
	*out = calloc(k ? k : 1, size);
	if (*out && k)
		memcpy(*out, pub, k * size);
	*n = *out ? k : 0;
	if (gs) {
		pthread_mutex_unlock(&gs->lock);
		pthread_mutex_unlock(&served_lock);
	}
	return *out ? GC_OK : GC_ENOMEM;
}

static const void *pick_grants(const struct grants *gs, size_t *n)
{
	*n = gs->npub;
	return gs->pub;
}

static const void *pick_waiters(const struct grants *gs, size_t *n)
{
	*n = gs->nwpub;
	return gs->wpub;
}

static int src_list(void *arg, struct lease_entry **out, size_t *n)
{
	(void)arg;
	return src_copy(pick_grants, sizeof **out, (void **)out, n);
}

static int src_waiters(void *arg, struct lease_waiter **out, size_t *n)
{
	(void)arg;
	return src_copy(pick_waiters, sizeof **out, (void **)out, n);
}

/* from the sampler's thread (reclaim, enforcement): done by the queue's */
static int src_revoke(void *arg, uint64_t grant, const char *why)
{
	(void)arg;
	struct grants *gs = served_take();
	if (!gs)
		return GC_ENOTFOUND;
	pthread_mutex_lock(&gs->lock);
	bool known = false;
	for (size_t i = 0; i < gs->npub && !known; i++)
		known = gs->pub[i].info.grant == grant;
	if (known && gs->nrevoke < sizeof gs->revoke / sizeof gs->revoke[0])
		gs->revoke[gs->nrevoke++] = grant;
	pthread_mutex_unlock(&gs->lock);
	if (known) {
		queue_log("grant %llu revoked: %s", (unsigned long long)grant, why ? why : "");
		uint64_t one = 1;
		(void)!write(gs->wakefd, &one, sizeof one);
	}
	pthread_mutex_unlock(&served_lock);
	return known ? GC_OK : GC_ENOTFOUND;
}

static const struct lease_source the_source = {.list = src_list, .waiters = src_waiters, .revoke = src_revoke};


void grants_init(struct queue *q)
{
	struct grants *gs = &q->grants;
	pthread_mutex_init(&gs->lock, NULL);
	gs->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	gs->next_id = gs->next_seq = 1;
	gs->on = true;
	publish(q);
	/* from now on every lease directory of this process is the grant table */
	pthread_mutex_lock(&served_lock);
	served = gs;
	pthread_mutex_unlock(&served_lock);
	lease_serve(&the_source);
}

static void pidfds_close(struct grant *g)
{
	for (size_t i = 0; i < g->npidfd; i++)
		close(g->pidfd[i]);
	g->npidfd = 0;
}

static void grant_free(struct grant *g)
{
	pidfds_close(g);
	if (g->fd >= 0)
		close(g->fd);
	free(g->uuid);
	free(g->idle_ms);
}

static void waiter_drop(struct queue *q, size_t i)
{
	struct grants *gs = &q->grants;
	if (gs->w[i].fd >= 0)
		close(gs->w[i].fd);
	free(gs->w[i].uuid);
	gs->w[i] = gs->w[--gs->nw];
	q->round.dirty = true; /* one fewer ahead: others may go */
}

void grants_free(struct queue *q)
{
	struct grants *gs = &q->grants;
	if (!gs->on)
		return;
	pthread_mutex_lock(&served_lock);
	served = NULL;
	pthread_mutex_unlock(&served_lock);
	while (gs->nw)
		waiter_drop(q, 0);
	for (size_t i = 0; i < gs->n; i++)
		grant_free(&gs->g[i]);
	free(gs->g);
	free(gs->pub);
	free(gs->wpub);
	if (gs->wakefd >= 0)
		close(gs->wakefd);
	pthread_mutex_destroy(&gs->lock);
	gs->on = false;
}

static struct grant *grant_add(struct queue *q)
{
	struct grants *gs = &q->grants;
	struct grant *v = grow(gs->g, &gs->cap, gs->n, sizeof *v, 16);
	if (!v)
		return NULL;
	gs->g = v;
	struct grant *g = &gs->g[gs->n++];
	memset(g, 0, sizeof *g);
	g->fd = -1;
	return g;
}

/* the holder let go, or gpuctld ended it: its usage goes into the next round */
static void grant_end(struct queue *q, struct grant *g)
{
	if (g->ended)
		return;
	g->ended = true;
	g->ended_ms = clock_real_ms();
	pidfds_close(g);
	if (g->fd >= 0)
		close(g->fd);
	g->fd = -1;
	q->round.dirty = true;
}

/* stop every process of the grant's user that holds it: by the kernel's word, its reported pids, NVML's */
static void kill_holder(void *arg, size_t k, pid_t pid)
{
	(void)k;
	signal_as(pid, *(uid_t *)arg, SIGKILL);
}

static void stop_holders(struct queue *q, struct grant *g)
{
	uid_t uid = g->uid;
	if (g->ino)
		holders_scan(&g->ino, &uid, 1, kill_holder, &uid);
	/* the pids it reported: its holder, and (only when the kernel could not name the holders)
	 * its job; never a pick --lease's shell, which holds nothing and lives on */
	signal_as(g->info.supervisor, uid, SIGKILL);
	if (!g->ino && strncmp(g->info.command, "(shell of gpuctl pick --lease)", 30) != 0)
		signal_as(g->info.pid, uid, SIGKILL);
	gc_snapshot snap = {0};
	if (sampler_snapshot(q->s, &snap) == GC_OK) {
		for (size_t i = 0; i < snap.ngpus; i++)
			for (size_t u = 0; u < g->n; u++)
				if (snap.gpus[i].st[GC_V_UUID] == GC_ST_OK && strcmp(snap.gpus[i].uuid, g->uuid[u]) == 0)
					for (size_t p = 0; p < snap.gpus[i].nprocs; p++)
						if (snap.gpus[i].procs[p].visible && snap.gpus[i].procs[p].uid == uid)
							signal_as((pid_t)snap.gpus[i].procs[p].pid, uid, SIGKILL);
		gpu_snapshot_release(&snap);
	}
}

/* ---- requests ---- */

static json_t *refuse(const char *code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static json_t *refuse(const char *code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return json_pack("{s:b, s:s, s:s}", "ok", 0, "error", msg, "code", code);
}

json_t *grants_take(struct queue *q, struct client *c, json_t *req)
{
	struct grants *gs = &q->grants;
	const char *kind = json_string_value(json_object_get(req, "kind"));
	bool port = kind && strcmp(kind, "port") == 0;
	if (!kind || (!port && strcmp(kind, "gpu") != 0))
		return refuse("invalid", "lease: kind must be gpu or port");
	json_t *gpus = json_object_get(req, "gpus");
	json_int_t n = json_integer_value(json_object_get(req, "n"));
	json_int_t pn = json_integer_value(json_object_get(req, "port"));
	if (port && (pn <= 0 || pn > 65535))
		return refuse("invalid", "lease: port must be 1 to 65535");
	if (!port && (n < 0 || n > MAX_GPUS || json_array_size(gpus) > MAX_GPUS))
		return refuse("invalid", "lease: n must be 0 to %d", MAX_GPUS);
	for (size_t i = 0; i < json_array_size(gpus); i++)
		if (!lease_uuid_valid(json_string_value(json_array_get(gpus, i))))
			return refuse("invalid", "lease: invalid GPU UUID");
	/* a request no grant could ever meet is refused, not kept waiting for ever */
	size_t ngpu = sampler_ngpus(q->s), among = json_is_array(gpus) ? json_array_size(gpus) : ngpu;
	size_t most = among < ngpu ? among : ngpu;
	if (!port && n > 0 && (size_t)n > most)
		return refuse("invalid", "%lld GPU%s requested but only %zu %s", (long long)n, n > 1 ? "s" : "", most,
			      json_is_array(gpus) ? "of the GPUs named exist on this machine" : "exist on this machine");
	bool root = c->uid == 0;
	size_t mine = 0, ports = 0;
	for (size_t i = 0; i < gs->nw; i++)
		mine += gs->w[i].uid == c->uid;
	for (size_t i = 0; i < gs->n; i++)
		ports += gs->g[i].port && !gs->g[i].ended && gs->g[i].uid == c->uid;
	if (gs->nw == MAX_WAITERS || (!root && mine >= WAITERS_PER_USER))
		return refuse("busy", "too many requests of yours are in gpuctld's line (at most %d)", WAITERS_PER_USER);
	if (port && !root && ports >= PORTS_PER_USER)
		return refuse("busy", "you hold %zu launch ports already (at most %d a user)", ports, PORTS_PER_USER);
	/* a port another grant holds is refused at once: a flood of them costs no round */
	for (size_t i = 0; port && i < gs->n; i++)
		if (gs->g[i].port == pn && !gs->g[i].ended)
			return json_pack("{s:b, s:s, s:s, s:i}", "ok", 0, "error", "that port is another launch's", "code",
					 "busy", "busy", 0);
	if (gs->n >= MAX_GRANTS)
		return refuse("busy", "gpuctld holds %d grants already", MAX_GRANTS);
	struct waiter *w = &gs->w[gs->nw];
	memset(w, 0, sizeof *w);
	w->fd = c->fd;
	w->uid = c->uid;
	w->gid = c->gid;
	w->peer = c->pid;
	w->seq = gs->next_seq++;
	w->arrival_ms = clock_real_ms();
	w->port = port ? (int)pn : 0;
	w->n = (unsigned)n;
	w->exact = json_is_true(json_object_get(req, "exact"));
	w->wait = json_is_true(json_object_get(req, "wait"));
	w->table = !port && json_is_true(json_object_get(req, "table"));
	authority_info_read(json_object_get(req, "me"), &w->info);
	w->info.uid = c->uid;
	if (clock_mono_ms() - gs->users_ms > 60000) { /* a renamed user is named anew within a minute */
		gs->users.n = 0;
		gs->users_ms = clock_mono_ms();
	}
	proc_user_name(c->uid, w->info.user, sizeof w->info.user, &gs->users);
	w->info.since = clock_real_ms() / 1000;
	w->info.grant = 0;
	w->info.orphan = false;
	w->info.live = 0;
	/* pids that are not the caller's own processes are not its to name */
	if (proc_owner(w->info.pid) != c->uid)
		w->info.pid = c->pid;
	if (proc_owner(w->info.supervisor) != c->uid)
		w->info.supervisor = c->pid;
	w->info.want = port ? 1 : w->n ? w->n : 1;
	size_t nu = json_array_size(gpus);
	if (nu && !(w->uuid = calloc(nu, sizeof *w->uuid)))
		return refuse("busy", "out of memory");
	for (size_t i = 0; i < nu; i++)
		snprintf(w->uuid[w->nuuid++], LEASE_UUID_MAX, "%s", json_string_value(json_array_get(gpus, i)));
	if (!port && !w->exact && !json_is_array(gpus)) {
		free(w->uuid);
		w->uuid = NULL;
		w->nuuid = 0;
	}
	if (w->exact)
		w->n = (unsigned)w->nuuid;
	json_int_t mf = json_integer_value(json_object_get(req, "min_free_mem"));
	json_int_t mu = json_integer_value(json_object_get(req, "max_util"));
	const char *model = json_string_value(json_object_get(req, "model"));
	snprintf(w->model, sizeof w->model, "%s", model ? model : "");
	w->sel = (struct select_request){.n = w->n ? w->n : 1, .min_free_mem = mf > 0 ? (uint64_t)mf : 0,
					 .max_util = json_object_get(req, "max_util") && mu >= 0 && mu <= 100 ? (int)mu : -1,
					 .shared = json_is_true(json_object_get(req, "shared")), .uid = c->uid};
	/* the runner's gpuctl run asking for the GPUs its queued job was placed on */
	for (size_t r = 0; w->exact && r < q->round.nrun; r++)
		if (q->round.run[r].pid == c->pid && q->round.run[r].uid == c->uid)
			w->job = q->round.run[r].id;
	if (!port && w->n == 0 && w->exact) {
		free(w->uuid);
		return refuse("invalid", "lease: no GPU named");
	}
	gs->nw++;
	c->taken = true;
	q->round.dirty = true;
	publish(q);
	return NULL;
}

static json_t *grant_json(const struct grant *g, const char *uuid)
{
	struct lease_info i = g->info;
	json_t *o = authority_info_json(&i);
	if (uuid)
		json_object_set_new(o, "uuid", json_string(uuid));
	if (g->port)
		json_object_set_new(o, "port", json_integer(g->port));
	if (g->job)
		json_object_set_new(o, "job", json_integer(g->job));
	return o;
}

json_t *grants_list_json(struct queue *q)
{
	struct grants *gs = &q->grants;
	json_t *a = json_array(), *w = json_array(), *p = json_array();
	for (size_t i = 0; i < gs->n; i++) {
		const struct grant *g = &gs->g[i];
		if (g->ended)
			continue;
		if (g->port)
			json_array_append_new(p, grant_json(g, NULL));
		for (size_t u = 0; u < g->n; u++)
			json_array_append_new(a, grant_json(g, g->uuid[u]));
	}
	/* the line in arrival order (dispatch decides who goes; docs/queue.md) */
	for (size_t i = 0; i < gs->nw; i++) {
		json_t *o = authority_info_json(&gs->w[i].info);
		json_object_set_new(o, "ticket", json_integer((json_int_t)gs->w[i].seq));
		json_array_append_new(w, o);
	}
	return json_pack("{s:b, s:o, s:o, s:o}", "ok", 1, "grants", a, "waiters", w, "ports", p);
}

json_t *grants_ours_json(struct queue *q, const struct client *c, const char *uuid, bool drop)
{
	struct grants *gs = &q->grants;
	if (!uuid)
		return refuse("invalid", "%s: no uuid", drop ? "drop" : "ours");
	struct grant *g = NULL;
	for (size_t i = 0; i < gs->n && !g; i++)
		for (size_t u = 0; u < gs->g[i].n && !g; u++)
			if (!gs->g[i].ended && strcmp(gs->g[i].uuid[u], uuid) == 0)
				g = &gs->g[i];
	bool ours = g && g->uid == c->uid &&
		    (proc_is_ancestor(g->info.pid, c->pid) || proc_is_ancestor(g->info.supervisor, c->pid));
	if (!drop)
		return g ? json_pack("{s:b, s:b, s:o}", "ok", 1, "ours", ours, "holder", grant_json(g, uuid))
			 : json_pack("{s:b, s:b}", "ok", 1, "ours", 0);
	if (!ours)
		return json_pack("{s:b, s:b}", "ok", 1, "dropped", 0);
	if (proc_is_ancestor(g->info.supervisor, c->pid))
		return refuse("busy", "the lease is held by an outer gpuctl run of yours: it ends with that job");
	signal_as(g->info.supervisor, g->uid, SIGTERM); /* the holder of a shell's lease: the shell lives on */
	grant_end(q, g);
	publish(q);
	return json_pack("{s:b, s:b}", "ok", 1, "dropped", 1);
}

/* ---- the poll loop ---- */

size_t grants_poll(struct queue *q, struct pollfd *p, size_t max)
{
	struct grants *gs = &q->grants;
	size_t k = 0;
	if (!gs->on)
		return 0;
	if (k < max)
		p[k++] = (struct pollfd){.fd = gs->wakefd, .events = POLLIN};
	for (size_t i = 0; i < gs->n && k < max; i++)
		if (gs->g[i].fd >= 0)
			p[k++] = (struct pollfd){.fd = gs->g[i].fd, .events = POLLIN};
	for (size_t i = 0; i < gs->nw && k < max; i++)
		if (gs->w[i].fd >= 0 && !gs->w[i].started)
			p[k++] = (struct pollfd){.fd = gs->w[i].fd, .events = POLLIN};
	for (size_t i = 0; i < gs->n; i++)
		for (size_t x = 0; x < gs->g[i].npidfd && k < max; x++)
			p[k++] = (struct pollfd){.fd = gs->g[i].pidfd[x], .events = POLLIN};
	return k;
}

/* a line from a holder: its job's pid, when it is the holder's own */
static void holder_line(struct grant *g, const char *line)
{
	json_t *o = json_loads(line, 0, NULL);
	const char *op = json_string_value(json_object_get(o, "op"));
	if (op && strcmp(op, "pid") == 0) {
		pid_t pid = (pid_t)json_integer_value(json_object_get(o, "pid"));
		pid_t sup = (pid_t)json_integer_value(json_object_get(o, "supervisor"));
		if (pid > 0 && proc_owner(pid) == g->uid)
			g->info.pid = pid;
		if (sup > 0 && proc_owner(sup) == g->uid)
			g->info.supervisor = sup;
	}
	json_decref(o);
}

static void grant_readable(struct queue *q, struct grant *g)
{
	char buf[4096];
	ssize_t n = recv(g->fd, buf, sizeof buf, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		grant_end(q, g); /* the last holder let go */
		return;
	}
	for (ssize_t i = 0; i < n; i++) {
		if (buf[i] == '\n') {
			g->buf[g->len] = '\0';
			holder_line(g, g->buf);
			g->len = 0;
		} else if (g->len + 1 < sizeof g->buf) {
			g->buf[g->len++] = buf[i];
		}
	}
}

void grants_ready(struct queue *q, const struct pollfd *p, size_t np)
{
	struct grants *gs = &q->grants;
	bool changed = false;
	for (size_t k = 0; k < np; k++) {
		if (!p[k].revents || p[k].fd == gs->wakefd)
			continue;
		for (size_t i = 0; i < gs->n; i++)
			for (size_t x = 0; x < gs->g[i].npidfd; x++)
				if (gs->g[i].pidfd[x] == p[k].fd)
					gs->rescan = true; /* a holder of a grant kept across a restart ended */
		for (size_t i = 0; i < gs->n; i++)
			if (gs->g[i].fd == p[k].fd) {
				grant_readable(q, &gs->g[i]);
				changed |= gs->g[i].ended;
				break;
			}
		for (size_t i = 0; i < gs->nw; i++)
			if (gs->w[i].fd == p[k].fd) {
				char buf[512];
				ssize_t n = recv(gs->w[i].fd, buf, sizeof buf, MSG_DONTWAIT);
				if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
					waiter_drop(q, i); /* it left the line: nothing else takes its place away */
					changed = true;
				}
				break;
			}
	}
	if (changed)
		publish(q);
}

struct seen_holders {
	struct grants *gs;
	bool *held;
};

/* a process holds grant k's other end: watch it (its end is the grant's, when it is the last) */
static void detached_held(void *arg, size_t k, pid_t pid)
{
	struct seen_holders *sh = arg;
	struct grant *g = &sh->gs->g[k];
	sh->held[k] = true;
	if (g->npidfd < sizeof g->pidfd / sizeof g->pidfd[0]) {
		int fd = (int)syscall(SYS_pidfd_open, pid, 0);
		if (fd >= 0)
			g->pidfd[g->npidfd++] = fd;
	}
}

/* grants kept across a restart: ended once no process of their user holds the other end */
static void look_for_holders(struct queue *q)
{
	struct grants *gs = &q->grants;
	size_t n = 0;
	uint64_t *inos = calloc(gs->n ? gs->n : 1, sizeof *inos);
	uid_t *uids = calloc(gs->n ? gs->n : 1, sizeof *uids);
	bool *held = calloc(gs->n ? gs->n : 1, sizeof *held);
	if (!inos || !uids || !held)
		goto out;
	for (size_t i = 0; i < gs->n; i++) {
		inos[i] = gs->g[i].fd < 0 && !gs->g[i].ended ? gs->g[i].ino : 0;
		uids[i] = gs->g[i].uid;
		n += gs->g[i].fd < 0 && !gs->g[i].ended;
	}
	gs->detached = n > 0;
	gs->rescan = false;
	if (!n)
		goto out;
	for (size_t i = 0; i < gs->n; i++)
		pidfds_close(&gs->g[i]);
	struct seen_holders sh = {gs, held};
	holders_scan(inos, uids, gs->n, detached_held, &sh);
	bool changed = false;
	for (size_t i = 0; i < gs->n; i++)
		if (gs->g[i].fd < 0 && !gs->g[i].ended && !held[i]) {
			queue_log("grant %llu of %s: no process holds it any more", (unsigned long long)gs->g[i].id,
				  gs->g[i].info.user);
			grant_end(q, &gs->g[i]);
			changed = true;
		}
	if (changed)
		publish(q);
out:
	free(inos);
	free(uids);
	free(held);
}

/* idle time of the granted GPUs since the last look, by the sampler's last sample */
static void count_idle(struct queue *q, long long elapsed)
{
	struct grants *gs = &q->grants;
	gc_snapshot snap = {0};
	if (!gs->n || sampler_snapshot(q->s, &snap) != GC_OK)
		return;
	for (size_t i = 0; i < gs->n; i++)
		for (size_t u = 0; u < gs->g[i].n && !gs->g[i].ended; u++)
			for (size_t k = 0; k < snap.ngpus; k++) {
				const gc_gpu *g = &snap.gpus[k];
				if (g->st[GC_V_UUID] == GC_ST_OK && strcmp(g->uuid, gs->g[i].uuid[u]) == 0 &&
				    g->st[GC_V_UTIL_GPU] == GC_ST_OK && g->util_gpu <= IDLE_UTIL &&
				    g->st[GC_V_UTIL_MEM] == GC_ST_OK && g->util_mem <= IDLE_UTIL)
					gs->g[i].idle_ms[u] += elapsed;
			}
	gpu_snapshot_release(&snap);
}

void grants_tick(struct queue *q)
{
	struct grants *gs = &q->grants;
	if (!gs->on)
		return;
	uint64_t v;
	while (read(gs->wakefd, &v, sizeof v) > 0)
		;
	uint64_t ids[64];
	pthread_mutex_lock(&gs->lock);
	size_t nr = gs->nrevoke;
	memcpy(ids, gs->revoke, nr * sizeof *ids);
	gs->nrevoke = 0;
	pthread_mutex_unlock(&gs->lock);
	for (size_t r = 0; r < nr; r++)
		for (size_t i = 0; i < gs->n; i++)
			if (gs->g[i].id == ids[r] && !gs->g[i].ended) {
				/* ours alone to end: our end closed, then the processes that held the other */
				struct grant *g = &gs->g[i];
				int fd = g->fd;
				g->fd = -1;
				stop_holders(q, g);
				if (fd >= 0)
					close(fd);
				grant_end(q, g);
			}
	if (nr)
		publish(q);
	long long now = clock_mono_ms();
	if (now - gs->looked_ms >= 1000) {
		if (gs->looked_ms)
			count_idle(q, now - gs->looked_ms);
		gs->looked_ms = now;
		if (gs->detached)
			look_for_holders(q);
		/* what keeps a request waiting may change with no grant ending (another user's process
		 * leaves a GPU, a sample shows memory freed): the line is looked at again each second */
		for (size_t i = 0; i < gs->nw && !q->round.dirty; i++)
			q->round.dirty = !gs->w[i].started && !gs->w[i].port && !gs->w[i].job;
	}
	if (gs->rescan)
		look_for_holders(q);
}

void grants_held(struct queue *q, const char *const *uuids, size_t n, bool *held)
{
	struct grants *gs = &q->grants;
	for (size_t i = 0; i < n; i++)
		held[i] = false;
	for (size_t k = 0; k < gs->n; k++)
		for (size_t u = 0; u < gs->g[k].n && !gs->g[k].ended; u++)
			for (size_t i = 0; i < n; i++)
				held[i] |= uuids[i] && strcmp(uuids[i], gs->g[k].uuid[u]) == 0;
}

/* ---- the round ---- */

static const char *uuid_at(const struct gpus_now *now, size_t i)
{
	const gc_gpu *g = &now->view.gpus[i];
	return g->st[GC_V_UUID] == GC_ST_OK && g->uuid[0] ? g->uuid : NULL;
}

void grants_own(struct queue *q, const struct gpus_now *now, uid_t uid, bool *own)
{
	struct grants *gs = &q->grants;
	for (size_t i = 0; i < now->n; i++) {
		own[i] = false;
		const char *u = uuid_at(now, i);
		for (size_t k = 0; u && k < gs->n && !own[i]; k++)
			for (size_t x = 0; x < gs->g[k].n && !gs->g[k].ended && !own[i]; x++)
				own[i] = gs->g[k].uid == uid && strcmp(gs->g[k].uuid[x], u) == 0;
	}
}

/* make waiter w a grant of gpus (indices of now) or of its port */
static struct grant *grant_from(struct queue *q, struct waiter *w, const unsigned *gpus, unsigned n,
				const struct gpus_now *now)
{
	struct grants *gs = &q->grants;
	struct grant *g = grant_add(q);
	if (!g)
		return NULL;
	g->uuid = calloc(n ? n : 1, sizeof *g->uuid);
	g->idle_ms = calloc(n ? n : 1, sizeof *g->idle_ms);
	if (!g->uuid || !g->idle_ms) {
		grant_free(g);
		gs->n--;
		return NULL;
	}
	for (unsigned k = 0; k < n; k++)
		snprintf(g->uuid[g->n++], LEASE_UUID_MAX, "%s", now ? uuid_at(now, gpus[k]) : w->uuid[k]);
	g->id = gs->next_id++;
	g->fd = w->fd;
	w->fd = -1;
	g->uid = w->uid;
	g->gid = w->gid;
	g->port = w->port;
	g->job = w->job;
	g->table = w->table;
	g->since_ms = clock_real_ms();
	g->info = w->info;
	g->info.since = g->since_ms / 1000;
	g->info.grant = g->id;
	g->ino = peer_ino(g->fd);
	w->started = true;
	return g;
}

/* the requests that need no line: a port, a started job's GPUs; granted (or refused) at once */
static void grant_direct(struct queue *q, const struct gpus_now *now)
{
	struct grants *gs = &q->grants;
	for (size_t i = 0; i < gs->nw; i++) {
		struct waiter *w = &gs->w[i];
		if (w->started || (!w->port && !w->job))
			continue;
		if (w->port) {
			bool taken = false;
			size_t mine = 0;
			for (size_t k = 0; k < gs->n && !taken; k++) {
				taken = gs->g[k].port == w->port && !gs->g[k].ended;
				mine += gs->g[k].port && !gs->g[k].ended && gs->g[k].uid == w->uid;
			}
			/* the cap again: requests that arrived together are granted here together */
			if (!taken && (w->uid == 0 || mine < PORTS_PER_USER))
				grant_from(q, w, NULL, 0, NULL);
			continue;
		}
		/* exactly the GPUs its job was placed on, and no other */
		bool ok = true;
		for (size_t r = 0; r < q->round.nrun; r++)
			if (q->round.run[r].id == w->job)
				for (size_t k = 0; k < w->nuuid && ok; k++) {
					bool found = false;
					for (size_t g = 0; g < now->n && !found; g++)
						found = q->round.run[r].gpus[g] && uuid_at(now, g) &&
							strcmp(uuid_at(now, g), w->uuid[k]) == 0;
					ok = found;
				}
		bool held[MAX_GPUS];
		const char *uu[MAX_GPUS];
		for (size_t k = 0; k < w->nuuid && k < MAX_GPUS; k++)
			uu[k] = w->uuid[k];
		grants_held(q, uu, w->nuuid < MAX_GPUS ? w->nuuid : MAX_GPUS, held);
		for (size_t k = 0; k < w->nuuid && k < MAX_GPUS; k++)
			ok = ok && !held[k];
		if (ok)
			grant_from(q, w, NULL, (unsigned)w->nuuid, NULL);
	}
}

size_t grants_line(struct queue *q, const struct gpus_now *now, struct dispatch_job *out, size_t max, bool **mem)
{
	struct grants *gs = &q->grants;
	*mem = NULL;
	if (!gs->on)
		return 0;
	grant_direct(q, now);
	size_t k = 0;
	bool *m = calloc((gs->nw ? gs->nw : 1) * 2 * MAX_GPUS, sizeof *m);
	if (!m)
		return 0;
	*mem = m;
	for (size_t i = 0; i < gs->nw && k < max; i++) {
		struct waiter *w = &gs->w[i];
		if (w->started || w->port || w->job)
			continue;
		bool *e = &m[i * 2 * MAX_GPUS], *own = e + MAX_GPUS;
		bool allowed[MAX_GPUS];
		for (size_t g = 0; g < now->n; g++) {
			allowed[g] = !w->uuid;
			for (size_t x = 0; w->uuid && x < w->nuuid && !allowed[g]; x++)
				allowed[g] = uuid_at(now, g) && strcmp(uuid_at(now, g), w->uuid[x]) == 0;
		}
		struct select_request r = w->sel;
		r.model = w->model[0] ? w->model : NULL;
		r.allowed = allowed;
		enum select_why why[MAX_GPUS];
		r.quarantined = now->quarantined;
		select_eligible(&now->view, &r, NULL, why);
		unsigned free_now = 0;
		for (size_t g = 0; g < now->n; g++) {
			e[g] = why[g] == SELECT_OK && uuid_at(now, g);
			free_now += e[g] && now->is_free[g];
		}
		grants_own(q, now, w->uid, own);
		unsigned want = w->n;
		if (!want) {
			/* every free one, as a power of two (at least one, waited for) */
			want = 1;
			while (want * 2 <= free_now)
				want *= 2;
		}
		out[k++] = (struct dispatch_job){.id = -(int64_t)w->seq, .priority = 0, .share = usage_share(q, w->uid),
						 .arrival = w->arrival_ms, .ngpus = want, .eligible = e, .own = own,
						 .nowait = !w->wait};
	}
	return k;
}

void grants_start(struct queue *q, int64_t id, const unsigned *gpus, unsigned n, const struct gpus_now *now)
{
	struct grants *gs = &q->grants;
	for (size_t i = 0; i < gs->nw; i++)
		if (-(int64_t)gs->w[i].seq == id && !gs->w[i].started) {
			grant_from(q, &gs->w[i], gpus, n, now);
			return;
		}
}

void grants_flush(struct queue *q)
{
	struct grants *gs = &q->grants;
	if (!gs->on)
		return;
	gc_snapshot snap = {0};
	bool have = false;
	for (size_t i = 0; i < gs->n; i++) {
		struct grant *g = &gs->g[i];
		if (!g->stored && !g->ended) {
			char *uu = calloc(g->n ? g->n : 1, LEASE_UUID_MAX + 1);
			json_t *info = authority_info_json(&g->info);
			char *it = info ? json_dumps(info, JSON_COMPACT) : NULL;
			json_decref(info);
			for (size_t u = 0; uu && u < g->n; u++)
				sprintf(uu + strlen(uu), "%s%s", u ? "," : "", g->uuid[u]);
			struct grant_row row = {.id = g->id, .uid = g->uid, .gid = g->gid, .gpus = uu ? uu : "",
						.port = g->port, .since_ms = g->since_ms, .job = g->job, .ino = g->ino,
						.info = it ? it : "{}"};
			if (store_grant_add(q->st, &row) == 0)
				g->stored = true;
			else
				queue_log("grant %llu could not be stored: %s", (unsigned long long)g->id, store_errmsg(q->st));
			free(uu);
			free(it);
		} else if (g->ended && g->stored) {
			if (!have)
				have = sampler_snapshot(q->s, &snap) == GC_OK;
			for (size_t u = 0; u < g->n; u++) {
				struct usage_row r = {.uid = g->uid, .gpu_index = -1, .start_ms = g->since_ms,
						      .end_ms = g->ended_ms > g->since_ms ? g->ended_ms : g->since_ms,
						      .idle_ms = g->idle_ms[u]};
				struct lease_info safe = g->info;
				lease_info_sanitize(&safe);
				snprintf(r.user, sizeof r.user, "%s", safe.user);
				snprintf(r.name, sizeof r.name, "%s", safe.name);
				snprintf(r.gpu, sizeof r.gpu, "%s", g->uuid[u]);
				for (size_t k = 0; have && k < snap.ngpus; k++)
					if (snap.gpus[k].st[GC_V_UUID] == GC_ST_OK && strcmp(snap.gpus[k].uuid, g->uuid[u]) == 0)
						r.gpu_index = (int)k;
				if (store_usage_add(q->st, &r) < 0)
					queue_log("the GPU time of %s could not be recorded: %s", r.user, store_errmsg(q->st));
			}
			if (store_grant_del(q->st, g->id) < 0)
				queue_log("grant %llu could not be removed: %s", (unsigned long long)g->id, store_errmsg(q->st));
			q->usage.share_dirty = true;
			g->stored = false; /* recorded: it goes after the commit */
		}
	}
	gpu_snapshot_release(&snap);
}

static void answer(int fd, json_t *a)
{
	char *s = a ? json_dumps(a, JSON_COMPACT) : NULL;
	json_decref(a);
	if (!s)
		return;
	size_t len = strlen(s);
	s[len] = '\n';
	/* a few hundred bytes (a GPU table: up to 60 kB) into an empty socket buffer (over 200 kB): never
	 * blocks; a client that does not read loses its answer, not our time */
	(void)!send(fd, s, len + 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	free(s);
}

/* the GPU table into answer a, for a client that asked instead of opening NVML (one sample a round) */
static void add_table(struct queue *q, json_t *a, gc_snapshot *snap, bool *have)
{
	if (!*have && sampler_snapshot(q->s, snap) != GC_OK)
		return;
	*have = true;
	/* what one answer can carry without blocking (answer()); a larger node's client opens NVML */
	json_t *t = snap->ngpus <= GPU_TABLE_ANSWER_MAX ? gpu_table_json(snap) : NULL;
	if (t)
		json_object_set_new(a, "table", t);
}

void grants_committed(struct queue *q, bool ok)
{
	struct grants *gs = &q->grants;
	if (!gs->on)
		return;
	gc_snapshot snap = {0};
	bool have = false;
	for (size_t i = 0; i < gs->n;) {
		struct grant *g = &gs->g[i];
		if (ok && g->ended && !g->stored) {
			grant_free(g); /* its usage is on disk (or it never was granted) */
			gs->g[i] = gs->g[--gs->n];
			continue;
		}
		if (!ok && g->ended && g->told)
			g->stored = true; /* its usage is recorded again next round */
		if (!ok && !g->told && !g->ended)
			grant_end(q, g); /* not durable, so not granted: the holder sees its connection close */
		if (ok && !g->told && !g->ended) {
			/* on disk: now its holder may hear of it */
			json_t *a = json_pack("{s:b, s:s, s:I}", "ok", 1, "state", "granted", "grant", (json_int_t)g->id);
			json_t *u = json_array();
			for (size_t k = 0; k < g->n; k++)
				json_array_append_new(u, json_string(g->uuid[k]));
			json_object_set_new(a, "gpus", u);
			if (g->port)
				json_object_set_new(a, "port", json_integer(g->port));
			if (g->table)
				add_table(q, a, &snap, &have);
			answer(g->fd, a);
		}
		g->told = true;
		i++;
	}
	/* those that would not wait and did not start are refused; the rest are told once why they wait */
	for (size_t i = 0; i < gs->nw;) {
		struct waiter *w = &gs->w[i];
		if (w->started) {
			free(w->uuid);
			gs->w[i] = gs->w[--gs->nw]; /* its connection is its grant's now */
			continue;
		}
		if (!w->wait) {
			char msg[200];
			if (w->port)
				snprintf(msg, sizeof msg, "port %d is another launch's (or you hold %d ports already)", w->port,
					 PORTS_PER_USER);
			else
				snprintf(msg, sizeof msg, "not now: earlier requests in gpuctld's line, other leases or the "
					 "filters keep %s", w->n == 1 ? "it" : "them");
			json_t *a = json_pack("{s:b, s:s, s:s, s:i}", "ok", 0, "error", msg, "code", "busy", "busy", 0);
			if (w->table)
				add_table(q, a, &snap, &have);
			answer(w->fd, a);
			waiter_drop(q, i);
			continue;
		}
		if (!w->told) {
			answer(w->fd, json_pack("{s:b, s:s, s:s}", "ok", 1, "state", "waiting", "why",
						"waiting in gpuctld's line (docs/queue.md)"));
			w->told = true;
		}
		i++;
	}
	publish(q);
	gpu_snapshot_release(&snap);
}

static void recovered(void *arg, const struct grant_row *r)
{
	struct queue *q = arg;
	struct grants *gs = &q->grants;
	if (r->id >= gs->next_id)
		gs->next_id = r->id + 1;
	struct grant *g = grant_add(q);
	if (!g)
		return;
	size_t n = 0;
	for (const char *p = r->gpus; *p; p++)
		n += *p == ',';
	n += r->gpus[0] != '\0';
	g->uuid = calloc(n ? n : 1, sizeof *g->uuid);
	g->idle_ms = calloc(n ? n : 1, sizeof *g->idle_ms);
	if (!g->uuid || !g->idle_ms) {
		grant_free(g);
		gs->n--;
		return;
	}
	for (const char *p = r->gpus; *p && g->n < n;) {
		size_t l = strcspn(p, ",");
		snprintf(g->uuid[g->n++], LEASE_UUID_MAX, "%.*s", (int)(l < LEASE_UUID_MAX ? l : LEASE_UUID_MAX - 1), p);
		p += l + (p[l] == ',');
	}
	json_t *info = json_loads(r->info, 0, NULL);
	authority_info_read(info, &g->info);
	json_decref(info);
	g->id = r->id;
	g->uid = r->uid;
	g->gid = r->gid;
	g->port = r->port;
	g->job = r->job;
	g->since_ms = r->since_ms;
	g->ino = r->ino;
	g->info.grant = g->id;
	g->stored = g->told = true;
	gs->detached = true;
}

void grants_recover(struct queue *q)
{
	struct grants *gs = &q->grants;
	if (!gs->on)
		return;
	if (store_grant_all(q->st, recovered, q) < 0)
		queue_log("cannot read the grants an earlier gpuctld kept: %s", store_errmsg(q->st));
	size_t kept = gs->n;
	look_for_holders(q);
	size_t live = 0;
	for (size_t i = 0; i < gs->n; i++)
		live += !gs->g[i].ended;
	if (kept)
		queue_log("%zu grant%s kept from before the restart, %zu still held", kept, kept == 1 ? "" : "s", live);
	publish(q);
}
