/*
 * tell.h — a line on a user's terminal, as write(1) puts one there: gpuctld
 * tells the people a policy concerns (the offender of a violation and the
 * holder of the lease) on the terminal their process runs on.
 *
 * The terminal is the process's controlling one (/proc/PID/stat's tty_nr), a
 * pseudo-terminal or a virtual console, and is written only when, on the file
 * opened, it is a character device with that number, owned by uid (so nobody
 * can lead gpuctld to write on someone else's terminal) and open to messages
 * (the group write bit that `mesg n` clears). It is opened without becoming
 * gpuctld's controlling terminal and without blocking; one write, whatever
 * it takes of the line; a terminal that does not take it is skipped.
 */
#ifndef GPUCTL_DAEMON_TELL_H
#define GPUCTL_DAEMON_TELL_H

#include <stdbool.h>
#include <sys/types.h>

/*
 * Write "gpuctld: LINE" (LINE already free of control characters) on pid's
 * terminal when it has one that is uid's and open to messages. true when
 * written; procfs NULL: /proc.
 */
bool tell_user(const char *procfs, pid_t pid, uid_t uid, const char *line);

#endif
