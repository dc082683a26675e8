/*
 * enforce.c — gpuctld's lease enforcement (enforce.h).
 *
 * A violation is (pid, its start time, GPU): seen in a sample, logged and
 * counted once, kept while the samples show it, forgotten when they stop.
 */
#include "enforce.h"
#include "notify.h"
#include "tell.h"
#include "util/grow.h"

#include "device/proc.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct seen {
	pid_t pid;
	unsigned long long start;  /* /proc/PID/stat's start time: the process, not just its pid */
	unsigned gpu;
	uid_t uid;
	int64_t since_ms;
	bool termed, killed, present;
};

struct tally {
	char user[33];
	uint64_t n;
};

struct enforce {
	struct enforce_opts o;
	struct seen *v;
	size_t n, cap;
	struct tally *t;
	size_t nt;
};

int enforce_parse_mode(const char *arg, enum enforce_mode *out, char *err, size_t errlen)
{
	if (strcmp(arg, "off") == 0)
		*out = ENFORCE_OFF;
	else if (strcmp(arg, "warn") == 0)
		*out = ENFORCE_WARN;
	else if (strcmp(arg, "kill") == 0)
		*out = ENFORCE_KILL;
	else {
		snprintf(err, errlen, "invalid --enforce '%s' (expected off, warn or kill)", arg);
		return -1;
	}
	return 0;
}

struct enforce *enforce_new(const struct enforce_opts *o)
{
	struct enforce *e = calloc(1, sizeof *e);
	if (e)
		e->o = *o;
	return e;
}

void enforce_free(struct enforce *e)
{
	if (!e)
		return;
	free(e->v);
	free(e->t);
	free(e);
}

bool enforce_count(const struct enforce *e, size_t i, const char **user, uint64_t *count)
{
	if (!e || i >= e->nt)
		return false;
	*user = e->t[i].user;
	*count = e->t[i].n;
	return true;
}

static void tally(struct enforce *e, const char *user)
{
	for (size_t i = 0; i < e->nt; i++)
		if (strcmp(e->t[i].user, user) == 0) {
			e->t[i].n++;
			return;
		}
	if (e->nt >= 4096)
		return; /* as many users as a machine has: more cannot be */
	struct tally *p = realloc(e->t, (e->nt + 1) * sizeof *p);
	if (!p)
		return;
	e->t = p;
	snprintf(e->t[e->nt].user, sizeof e->t[e->nt].user, "%s", user);
	e->t[e->nt++].n = 1;
}

static struct seen *find(struct enforce *e, pid_t pid, unsigned long long start, unsigned gpu)
{
	for (size_t i = 0; i < e->n; i++)
		if (e->v[i].pid == pid && e->v[i].start == start && e->v[i].gpu == gpu)
			return &e->v[i];
	return NULL;
}

static void one(struct enforce *e, const gc_gpu *g, const gc_proc *p, const struct lease_info *h, int64_t now)
{
	if (!(p->type & GC_PROC_COMPUTE) || p->simulated)
		return;
	if (p->visible && h && p->uid == h->uid)
		return; /* the holder's own */
	unsigned long long start = 0;
	if (p->visible && proc_stat((pid_t)p->pid, NULL, NULL, &start) < 0)
		return; /* gone since the sample */
	struct seen *s = find(e, (pid_t)p->pid, start, g->index);
	char holder[64], who[33], cmd[96];
	if (h)
		snprintf(holder, sizeof holder, "leased by %s", h->user);
	else
		snprintf(holder, sizeof holder, "not leased");
	snprintf(who, sizeof who, "%s", p->visible ? p->user : "unknown");
	proc_sanitize(cmd, sizeof cmd, p->command, strlen(p->command));
	bool may_kill = e->o.mode == ENFORCE_KILL && p->visible && (p->uid != 0 || e->o.root);
	if (!s) {
		struct seen *nv = grow(e->v, &e->cap, e->n, sizeof *nv, 16);
		if (!nv)
			return;
		e->v = nv;
		s = &e->v[e->n++];
		*s = (struct seen){.pid = (pid_t)p->pid, .start = start, .gpu = g->index, .uid = p->uid, .since_ms = now};
		tally(e, who);
		const char *what = !p->visible ? "reported only: its user cannot be seen (another PID namespace)"
				   : !may_kill && e->o.mode == ENFORCE_KILL ? "reported only: root's (--enforce-root)"
				   : may_kill ? "SIGTERM" : "warned";
		fprintf(stderr, "gpuctld: policy: GPU %u is %s; pid %u of %s (%s) uses it: %s\n", g->index, holder,
			p->pid, who, cmd[0] ? cmd : "?", what);
		char text[400];
		snprintf(text, sizeof text, "GPU %u is %s; pid %u of %s (%s) uses it: %s", g->index, holder, p->pid, who,
			 cmd[0] ? cmd : "?", what);
		/* the people it concerns, on their terminals (tell.h): the offender and the holder */
		json_t *told = json_array();
		if (p->visible) {
			char line[400];
			snprintf(line, sizeof line, "your process %u (%s) uses GPU %u, which is %s: %s", p->pid,
				 cmd[0] ? cmd : "?", g->index, holder,
				 may_kill ? "it gets SIGTERM now; lease GPUs with gpuctl run"
					  : "lease GPUs with gpuctl run or gpuctl pick --lease");
			if (tell_user(NULL, (pid_t)p->pid, p->uid, line))
				json_array_append_new(told, json_string(who));
		}
		if (h) {
			char line[400], name[64];
			proc_sanitize(name, sizeof name, h->name, strlen(h->name));
			snprintf(line, sizeof line, "pid %u of %s (%s) uses GPU %u, which you lease%s%s: %s", p->pid, who,
				 cmd[0] ? cmd : "?", g->index, name[0] ? " for " : "", name, what);
			if (tell_user(NULL, h->pid, h->uid, line) || (h->supervisor && tell_user(NULL, h->supervisor, h->uid, line)))
				json_array_append_new(told, json_string(h->user));
		}
		json_t *o = json_pack("{s:{s:I, s:s}, s:o, s:{s:I, s:s, s:s}, s:s, s:o}", "gpu", "index", (json_int_t)g->index,
				      "uuid", g->uuid, "holder", h ? json_string(h->user) : json_null(), "process", "pid",
				      (json_int_t)p->pid, "user", who, "command", cmd, "action",
				      may_kill ? "SIGTERM" : p->visible && e->o.mode == ENFORCE_WARN ? "warned" : "reported",
				      "told", told ? told : json_array());
		notify_event(e->o.notify, "policy.violation", text, o);
		if (may_kill && proc_signal(s->pid, start, s->uid, SIGTERM) == 0)
			s->termed = true;
	} else if (may_kill && s->termed && !s->killed && now - s->since_ms >= e->o.grace_ms) {
		if (proc_signal(s->pid, start, s->uid, SIGKILL) == 0) {
			fprintf(stderr, "gpuctld: policy: pid %u of %s on GPU %u: SIGKILL, %lld s after SIGTERM\n", p->pid,
				who, g->index, (long long)((now - s->since_ms) / 1000));
			s->killed = true;
		}
	}
	s->present = true;
}

void enforce_sample(struct enforce *e, const gc_snapshot *snap, const struct lease_info *const *holder,
		    int64_t now_ms)
{
	if (!e || e->o.mode == ENFORCE_OFF)
		return;
	for (size_t i = 0; i < e->n; i++)
		e->v[i].present = false;
	for (size_t i = 0; i < snap->ngpus; i++) {
		const gc_gpu *g = &snap->gpus[i];
		const struct lease_info *h = holder ? holder[i] : NULL;
		if (!h && !e->o.unleased)
			continue;
		for (size_t k = 0; k < g->nprocs; k++)
			one(e, g, &g->procs[k], h, now_ms);
	}
	/* what the samples no longer show has ended: forgotten */
	size_t w = 0;
	for (size_t i = 0; i < e->n; i++)
		if (e->v[i].present)
			e->v[w++] = e->v[i];
	e->n = w;
}
