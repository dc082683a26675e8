/*
 * tell.c — a line on a user's terminal (tell.h).
 */
#include "tell.h"
#include "device/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* pid's controlling terminal as /proc/PID/stat's tty_nr; 0 when none or unreadable */
static unsigned long tty_of(const char *procfs, pid_t pid)
{
	struct proc_statf f;
	if (proc_stat_read(procfs, pid, &f) < 0 || f.tty_nr <= 0)
		return 0;
	return (unsigned long)f.tty_nr;
}

bool tell_user(const char *procfs, pid_t pid, uid_t uid, const char *line)
{
	unsigned long nr = tty_of(procfs, pid);
	if (!nr)
		return false;
	unsigned maj = (unsigned)((nr >> 8) & 0xfff), min = (unsigned)((nr & 0xff) | ((nr >> 12) & 0xfff00));
	char path[64];
	if (maj >= 136 && maj <= 143)
		snprintf(path, sizeof path, "/dev/pts/%u", (maj - 136) * 256 + min);
	else if (maj == 4 && min >= 1 && min < 64)
		snprintf(path, sizeof path, "/dev/tty%u", min);
	else
		return false; /* a serial line, or something else: not a user's terminal to write on */
	int fd = open(path, O_WRONLY | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return false;
	struct stat st;
	bool ok = fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(maj, min) && st.st_uid == uid &&
		  (st.st_mode & S_IWGRP);
	if (ok) {
		char msg[600];
		int len = snprintf(msg, sizeof msg, "\r\ngpuctld: %s\r\n", line);
		if (len < 0 || (size_t)len >= sizeof msg)
			len = (int)sizeof msg - 1;
		ssize_t w;
		do
			w = write(fd, msg, (size_t)len);
		while (w < 0 && errno == EINTR);
		ok = w > 0;
	}
	close(fd);
	return ok;
}
