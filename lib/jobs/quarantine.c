/*
 * quarantine.c — GPUs out of service (quarantine.h).
 *
 * A mark is looked up by name (quarantine.<UUID>), so a reader costs one
 * openat per GPU, never a scan of the directory; only quarantine_list scans.
 * Everything is opened relative to the state directory with O_NOFOLLOW and
 * O_NONBLOCK, as lease.c does: a planted link or FIFO is not a mark.
 */
#include "jobs/quarantine.h"

#include "device/proc.h"
#include "util/errbuf.h"
#include "gpuctl/gpuctl.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PREFIX "quarantine."
#define RECORD_MAX 2048

static bool name_for(const char *uuid, char *name, size_t len)
{
	/* a UUID is one path component of printable characters */
	if (!uuid || !*uuid || strlen(uuid) >= LEASE_UUID_MAX)
		return false;
	for (const char *p = uuid; *p; p++)
		if (*p == '/' || (unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f)
			return false;
	return snprintf(name, len, PREFIX "%s", uuid) < (int)len;
}

static void copy_field(char *dst, size_t len, json_t *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));
	snprintf(dst, len, "%s", v ? v : "");
	/* another user's words never reach a terminal as control characters */
	for (char *p = dst; *p; p++)
		if ((unsigned char)*p < ' ' || *p == 0x7f)
			*p = '?';
}

/* who marks besides root: the owner of the state directory (root itself for /run/gpuctl) */
static uid_t manager(int dfd)
{
	struct stat st;
	return fstat(dfd, &st) == 0 ? st.st_uid : 0;
}

/* 1 a believed mark (info filled when non-NULL), 0 none, <0 GC_E* */
static int read_mark(int dfd, const char *name, struct quarantine_info *info)
{
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ELOOP || errno == ENXIO || errno == EACCES ? 0 : GC_EIO;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (st.st_mode & (S_IWGRP | S_IWOTH)) ||
	    (st.st_uid != 0 && st.st_uid != manager(dfd))) {
		close(fd);
		return 0;
	}
	if (info) {
		memset(info, 0, sizeof *info);
		char buf[RECORD_MAX];
		ssize_t n = pread(fd, buf, sizeof buf, 0);
		json_t *o = n > 0 ? json_loadb(buf, (size_t)n, 0, NULL) : NULL;
		snprintf(info->uuid, sizeof info->uuid, "%s", name + strlen(PREFIX));
		json_t *g = json_object_get(o, "gpu");
		info->gpu = json_is_integer(g) && json_integer_value(g) >= 0 && json_integer_value(g) < 65536 ?
			(int)json_integer_value(g) : -1;
		copy_field(info->reason, sizeof info->reason, o, "reason");
		copy_field(info->detail, sizeof info->detail, o, "detail");
		json_int_t x = json_integer_value(json_object_get(o, "xid"));
		info->xid = x > 0 ? (uint64_t)x : 0;
		if (!info->reason[0])
			snprintf(info->reason, sizeof info->reason, "admin");
		info->uid = st.st_uid;
		info->since = (int64_t)st.st_mtim.tv_sec;
		proc_user_name(st.st_uid, info->by, sizeof info->by, NULL);
		json_decref(o);
	}
	close(fd);
	return 1;
}

int quarantine_get(struct lease_dir *d, const char *uuid, struct quarantine_info *info)
{
	char name[LEASE_UUID_MAX + 16];
	if (!name_for(uuid, name, sizeof name) || lease_dir_fd(d) < 0)
		return 0; /* no directory (authority mode, nothing made yet): no mark */
	return read_mark(lease_dir_fd(d), name, info);
}

int quarantine_marked(struct lease_dir *d, const char *const *uuids, size_t n, bool *marked)
{
	for (size_t i = 0; i < n; i++) {
		marked[i] = false;
		if (!uuids[i])
			continue;
		int rc = quarantine_get(d, uuids[i], NULL);
		if (rc < 0)
			return rc;
		marked[i] = rc == 1;
	}
	return GC_OK;
}

int quarantine_list(struct lease_dir *d, struct quarantine_info **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	if (lease_dir_fd(d) < 0)
		return GC_OK; /* no directory: no mark */
	int fd = dup(lease_dir_fd(d));
	DIR *dir = fd < 0 ? NULL : fdopendir(fd);
	if (!dir) {
		if (fd >= 0)
			close(fd);
		return GC_EIO;
	}
	rewinddir(dir);
	struct quarantine_info *v = NULL;
	size_t cnt = 0;
	int rc = GC_OK;
	for (struct dirent *e; (e = readdir(dir));) {
		if (strncmp(e->d_name, PREFIX, strlen(PREFIX)) != 0)
			continue;
		struct quarantine_info q;
		if (read_mark(lease_dir_fd(d), e->d_name, &q) != 1)
			continue;
		struct quarantine_info *p = realloc(v, (cnt + 1) * sizeof *v);
		if (!p) {
			rc = GC_ENOMEM;
			break;
		}
		v = p;
		v[cnt++] = q;
	}
	closedir(dir);
	if (rc != GC_OK) {
		free(v);
		return rc;
	}
	*out = v;
	*n = cnt;
	return GC_OK;
}

bool quarantine_may_manage(struct lease_dir *d, char *err, size_t errlen)
{
	if (geteuid() == 0 || manager(lease_dir_fd(d)) == geteuid())
		return true;
	errbuf_set(err, errlen, "only root can quarantine GPUs or clear a quarantine in '%s' (it is shared by "
		   "every user)", lease_dir_path(d));
	return false;
}

/* another user's file (or directory, or FIFO) under the mark's name: moved aside, so it cannot
 * keep root from marking (only root can, in a sticky directory) */
static void move_aside(int dfd, const char *name)
{
	struct stat st;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || (S_ISREG(st.st_mode) && st.st_uid == geteuid()))
		return;
	char hex[17], aside[32];
	lease_random_hex(hex);
	snprintf(aside, sizeof aside, ".squat-%s", hex);
	(void)renameat(dfd, name, dfd, aside);
}

int quarantine_set(struct lease_dir *d, const struct quarantine_info *info, char *err, size_t errlen)
{
	char name[LEASE_UUID_MAX + 16];
	if (!name_for(info->uuid, name, sizeof name)) {
		errbuf_set(err, errlen, "cannot quarantine a GPU without a UUID");
		return GC_EINVAL;
	}
	if (!quarantine_may_manage(d, err, errlen))
		return GC_ENOPERM;
	json_t *o = json_pack("{s:s, s:s, s:s}", "uuid", info->uuid, "reason", info->reason[0] ? info->reason : "admin",
			      "detail", info->detail);
	if (o && info->gpu >= 0)
		json_object_set_new(o, "gpu", json_integer(info->gpu));
	if (o && info->xid)
		json_object_set_new(o, "xid", json_integer((json_int_t)info->xid));
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (!text) {
		errbuf_set(err, errlen, "out of memory");
		return GC_ENOMEM;
	}
	int dfd = lease_dir_fd(d);
	char hex[17], tmp[32];
	lease_random_hex(hex);
	snprintf(tmp, sizeof tmp, ".new-%s", hex);
	int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	size_t len = strlen(text);
	int rc = GC_OK;
	if (fd < 0 || write(fd, text, len) != (ssize_t)len || fchmod(fd, 0644) < 0) {
		errbuf_set(err, errlen, "cannot write a quarantine mark in '%s': %s", lease_dir_path(d), strerror(errno));
		rc = GC_EIO;
	}
	free(text);
	if (fd >= 0)
		close(fd);
	if (rc == GC_OK) {
		move_aside(dfd, name);
		if (renameat(dfd, tmp, dfd, name) < 0) {
			errbuf_set(err, errlen, "cannot quarantine %s in '%s': %s", info->uuid, lease_dir_path(d),
				   strerror(errno));
			rc = GC_EIO;
		}
	}
	if (rc != GC_OK && fd >= 0)
		(void)unlinkat(dfd, tmp, 0);
	return rc;
}

int quarantine_clear(struct lease_dir *d, const char *uuid, char *err, size_t errlen)
{
	char name[LEASE_UUID_MAX + 16];
	if (!name_for(uuid, name, sizeof name))
		return 0;
	if (!quarantine_may_manage(d, err, errlen))
		return GC_ENOPERM;
	int dfd = lease_dir_fd(d);
	int rc = read_mark(dfd, name, NULL);
	if (rc != 1)
		return rc;
	if (unlinkat(dfd, name, 0) < 0 && errno != ENOENT) {
		errbuf_set(err, errlen, "cannot clear the quarantine of %s in '%s': %s", uuid, lease_dir_path(d),
			   strerror(errno));
		return GC_EIO;
	}
	return 1;
}
