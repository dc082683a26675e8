/*
 * pidlock.h — "only one of us serves this": an exclusive flock on a file
 * that names its holder's pid. The kernel drops the lock when the holder
 * dies, even by SIGKILL, so there is no stale-pid check to race; the pid in
 * the file is only for the message that names who holds it.
 */
#ifndef GPUCTL_LIB_PIDLOCK_H
#define GPUCTL_LIB_PIDLOCK_H

#include <stddef.h>
#include <sys/types.h>

/*
 * Takes the lock on `path` (borrowed), creating the file 0644 if needed, and
 * writes this process's pid into it. Returns the locked descriptor
 * (close-on-exec; the caller closes it to let go), or:
 *   -EWOULDBLOCK  another process holds it; *holder is its pid, 0 if unknown
 *   -errno        the file cannot be opened or locked; a message in err
 * A file that is not a regular file, or (when `owner` is not (uid_t)-1) is
 * owned by another uid, was put there by someone else: it is removed and
 * made anew, once; if it cannot be removed, -EPERM.
 */
int pidlock_take(const char *path, uid_t owner, pid_t *holder, char *err, size_t errlen);

#endif
