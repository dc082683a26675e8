/*
 * proc.c — user and command of a process, read from /proc.
 *
 * NVML gives only a pid. gpuctl shows who owns it (the owner of
 * /proc/<pid>) and what it runs (/proc/<pid>/cmdline). Everything read is
 * bounded and control characters are replaced, because a command line is
 * chosen by whoever started the process and ends up on someone's terminal.
 * A pid that does not exist here is usually a process of another PID
 * namespace (a container): it is reported as not visible, never dropped.
 */
#include "device/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* the length of the valid UTF-8 sequence at s (n bytes left), 0 if it is not one */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t len = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 && s[0] < 0xe0 ? 2 : 0;
	if (!len || len > n)
		return 0;
	for (size_t i = 1; i < len; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	/* overlong forms, surrogates and code points past U+10FFFF */
	if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0) || (s[0] == 0xf0 && s[1] < 0x90) ||
	    (s[0] == 0xf4 && s[1] >= 0x90))
		return 0;
	return len;
}

void proc_sanitize(char *dst, size_t dstlen, const char *src, size_t srclen)
{
	size_t o = 0;
	if (dstlen == 0)
		return;
	const unsigned char *s = (const unsigned char *)src;
	for (size_t i = 0; i < srclen && s[i] && o + 1 < dstlen;) {
		unsigned char c = s[i];
		if (c >= 0x20 && c != 0x7f && c < 0x80) {
			dst[o++] = (char)c;
			i++;
			continue;
		}
		size_t len = c >= 0x80 ? utf8_len(s + i, srclen - i) : 0;
		/* C1 controls (U+0080-U+009F: CSI is U+009B) act like ESC on some terminals */
		if (len == 2 && c == 0xc2 && s[i + 1] < 0xa0) {
			dst[o++] = '?';
			i += 2;
			continue;
		}
		if (len && o + len < dstlen) {
			memcpy(dst + o, s + i, len);
			o += len;
			i += len;
		} else if (len) {
			break; /* a character that does not fit whole is left out */
		} else {
			dst[o++] = '?';
			i++;
		}
	}
	dst[o] = '\0';
}

int proc_stat_read(const char *procfs, pid_t pid, struct proc_statf *f)
{
	char path[4200], buf[1024];
	if (pid <= 0 || snprintf(path, sizeof path, "%s/%d/stat", procfs ? procfs : "/proc", (int)pid) >= (int)sizeof path)
		return -1;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* after the command, which may hold ')' and spaces itself */
	char *p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2] || p[3] != ' ')
		return -1;
	memset(f, 0, sizeof *f);
	f->state = p[2];
	p += 3;
	long long v[25]; /* fields 4 .. 24, by their proc(5) numbers */
	for (int k = 4; k <= 24; k++) {
		char *end; /* (a field out of range saturates: none gpuctl reads can be) */
		v[k] = strtoll(p, &end, 10);
		if (end == p || (*end != ' ' && *end != '\n' && *end != '\0'))
			return -1;
		p = end;
	}
	f->ppid = (pid_t)v[4];
	f->pgrp = (pid_t)v[5];
	f->session = (pid_t)v[6];
	f->tty_nr = (int)v[7];
	f->utime = (unsigned long long)v[14];
	f->stime = (unsigned long long)v[15];
	f->cutime = v[16];
	f->cstime = v[17];
	f->starttime = (unsigned long long)v[22];
	f->rss = v[24];
	return 0;
}

int proc_stat(pid_t pid, char *state, pid_t *ppid, unsigned long long *start)
{
	struct proc_statf f;
	if (proc_stat_read(NULL, pid, &f) < 0)
		return -1;
	if (state)
		*state = f.state;
	if (ppid)
		*ppid = f.ppid;
	if (start)
		*start = f.starttime;
	return 0;
}

uid_t proc_owner(pid_t pid)
{
	char path[32];
	struct stat st;
	snprintf(path, sizeof path, "/proc/%d", (int)pid);
	return pid > 0 && stat(path, &st) == 0 ? st.st_uid : (uid_t)-1;
}

bool proc_is_ancestor(pid_t anc, pid_t pid)
{
	for (int depth = 0; anc > 1 && pid > 1 && depth < 256; depth++) {
		if (pid == anc)
			return true;
		pid_t pp = 0;
		if (proc_stat(pid, NULL, &pp, NULL) < 0)
			return false;
		pid = pp;
	}
	return false;
}

int proc_signal(pid_t pid, unsigned long long start, uid_t uid, int sig)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0)
		return -1;
	unsigned long long now_start = 0;
	int rc = -1;
	if (proc_stat(pid, NULL, NULL, &now_start) == 0 && now_start == start && proc_owner(pid) == uid)
		rc = (int)syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0) == 0 ? 0 : -1;
	close(fd);
	return rc;
}

void proc_user_name(uid_t uid, char *out, size_t outlen, struct uid_cache *cache)
{
	if (cache) {
		for (size_t i = 0; i < cache->n; i++) {
			if (cache->e[i].uid == uid) {
				snprintf(out, outlen, "%s", cache->e[i].name);
				return;
			}
		}
	}
	struct passwd pw, *res = NULL;
	char buf[2048];
	if (getpwuid_r(uid, &pw, buf, sizeof buf, &res) == 0 && res && res->pw_name)
		proc_sanitize(out, outlen, res->pw_name, strlen(res->pw_name));
	else
		snprintf(out, outlen, "%u", (unsigned)uid);
	if (cache) {
		size_t slot = cache->n < sizeof cache->e / sizeof cache->e[0] ? cache->n++ : uid % cache->n;
		cache->e[slot].uid = uid;
		snprintf(cache->e[slot].name, sizeof cache->e[slot].name, "%s", out);
	}
}

static ssize_t read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t got = 0;
	while (got < len) {
		ssize_t r = read(fd, buf + got, len - got);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	return (ssize_t)got;
}

void proc_describe(gc_proc *p, const char *procfs, struct uid_cache *cache)
{
	char path[256];
	struct stat st;
	p->visible = false;
	p->user[0] = p->command[0] = p->argv0[0] = '\0';
	snprintf(path, sizeof path, "%s/%u", procfs, (unsigned)p->pid);
	if (p->pid == 0 || stat(path, &st) < 0)
		return;
	p->visible = true;
	p->uid = st.st_uid;
	proc_user_name(st.st_uid, p->user, sizeof p->user, cache);

	char raw[4096];
	snprintf(path, sizeof path, "%s/%u/cmdline", procfs, (unsigned)p->pid);
	ssize_t n = read_small(path, raw, sizeof raw);
	if (n > 0) {
		size_t first = strnlen(raw, (size_t)n);
		proc_sanitize(p->argv0, sizeof p->argv0, raw, first);
		while (n > 0 && raw[n - 1] == '\0')
			n--;
		for (ssize_t i = 0; i < n; i++)
			if (raw[i] == '\0')
				raw[i] = ' ';
		proc_sanitize(p->command, sizeof p->command, raw, (size_t)n);
		return;
	}
	/* kernel threads and zombies have an empty cmdline: show [comm] */
	snprintf(path, sizeof path, "%s/%u/comm", procfs, (unsigned)p->pid);
	n = read_small(path, raw, sizeof raw - 1);
	if (n > 0) {
		while (n > 0 && raw[n - 1] == '\n')
			n--;
		char comm[64];
		proc_sanitize(comm, sizeof comm, raw, (size_t)n);
		snprintf(p->command, sizeof p->command, "[%s]", comm);
		snprintf(p->argv0, sizeof p->argv0, "%s", comm);
	}
}
