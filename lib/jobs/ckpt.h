/*
 * ckpt.h — a checkpoint directory that survives being killed at any moment.
 *
 * A job writes each checkpoint as an entry (file or directory) of DIR, then
 * commits it. Only committed entries count: `latest` never names a
 * checkpoint that was cut off half-way, and DIR/latest (a symlink, for
 * humans and training scripts) is replaced atomically, never missing once it
 * exists. Standalone: POSIX and jansson only.
 */
#ifndef GPUCTL_LIB_CKPT_H
#define GPUCTL_LIB_CKPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ckpt_entry {
	char name[256];       /* entry of DIR */
	int64_t committed_ns; /* CLOCK_REALTIME of the commit; 0 when not committed */
	bool complete;        /* committed, and the entry still exists */
	bool is_dir;
};

/*
 * Mark PATH (an entry directly inside DIR, file or directory; a bare name is
 * taken inside DIR) complete:
 * fsync it, write its marker durably, then repoint DIR/latest to it. 0, or a
 * negative GC_E* with a one-line message in err.
 */
int ckpt_commit(const char *dir, const char *path, char *err, size_t errlen);

/* The newest complete checkpoint as "DIR/NAME" in out; GC_ENOTFOUND when none. */
int ckpt_latest(const char *dir, char *out, size_t outlen, char *err, size_t errlen);

/* Every entry of DIR, newest commit first, then uncommitted ones by name. Caller frees *out. */
int ckpt_list(const char *dir, struct ckpt_entry **out, size_t *n, char *err, size_t errlen);

/* The entries as `gpuctl ckpt list --json` prints them (commit times in UTC); free(), NULL when out of memory. */
char *ckpt_entries_json(const struct ckpt_entry *v, size_t n);

/*
 * Delete complete checkpoints beyond the `keep` newest (keep >= 1: the newest
 * is never deleted), with their markers. Uncommitted entries are left alone
 * (one may be in the middle of being written). Never follows a symlink, never
 * leaves DIR. *removed counts deleted checkpoints.
 */
int ckpt_prune(const char *dir, unsigned keep, size_t *removed, char *err, size_t errlen);

#endif
