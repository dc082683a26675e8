/*
 * tmpdir.h — scratch directories for the unit tests: made under /tmp with a
 * tag in the name, removed with everything they hold.
 */
#ifndef GPUCTL_TESTS_TMPDIR_H
#define GPUCTL_TESTS_TMPDIR_H

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

/* "/tmp/gpuctl-TAG-XXXXXX" made in buf; 0, or -1 */
static inline int tmpdir_make(char *buf, size_t len, const char *tag)
{
	snprintf(buf, len, "/tmp/gpuctl-%s-XXXXXX", tag);
	return mkdtemp(buf) ? 0 : -1;
}

/* rm -rf DIR; system()'s status (0 when it went) */
static inline int tmpdir_remove(const char *dir)
{
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd);
}

/* write text as DIR/NAME (made or truncated); 0, or -1 */
static inline int tmpdir_write(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	int bad = fputs(text, f) < 0;
	return fclose(f) == 0 && !bad ? 0 : -1;
}

#endif
