/*
 * datadir.c — see datadir.h.
 */
#include "config.h"
#include "util/datadir.h"

#include "util/errbuf.h"
#include "gpuctl/gpuctl.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* the data directories in the order they are tried; [0] may be NULL */
static void data_dirs(const char *dirs[3])
{
	const char *env = getenv("GPUCTL_DATA_DIR");
	dirs[0] = env && *env ? env : NULL;
	dirs[1] = GPUCTL_DATADIR;
	dirs[2] = GPUCTL_SRC_DATADIR;
}

/* name under the first directory that has it (a directory when dir); -1 when none does */
static int find(const char *name, bool dir, const char *dirs[3], char *buf, size_t len)
{
	for (size_t i = 0; i < 3; i++) {
		struct stat st;
		if (!dirs[i])
			continue;
		int w = snprintf(buf, len, "%s/%s", dirs[i], name);
		if (w >= 0 && (size_t)w < len && stat(buf, &st) == 0 && (!dir || S_ISDIR(st.st_mode)))
			return 0;
		if (i == 0)
			break; /* $GPUCTL_DATA_DIR is the only place looked in when set */
	}
	return -1;
}

int datadir_file(const char *name, char *buf, size_t len, char *err, size_t errlen)
{
	const char *dirs[3];
	data_dirs(dirs);
	if (find(name, false, dirs, buf, len) == 0)
		return GC_OK;
	errbuf_set(err, errlen, "data file %s not found (looked in %s; set GPUCTL_DATA_DIR)", name,
		   dirs[0] ? dirs[0] : dirs[1]);
	return GC_ENOTFOUND;
}

int datadir_signatures(char *buf, size_t len, char *err, size_t errlen)
{
	const char *dirs[3];
	data_dirs(dirs);
	if (find("signatures", true, dirs, buf, len) == 0)
		return GC_OK;
	if (dirs[0])
		errbuf_set(err, errlen, "GPUCTL_DATA_DIR='%s' has no signatures/ directory", dirs[0]);
	else
		errbuf_set(err, errlen, "failure signatures not found (looked in %s/signatures; set GPUCTL_DATA_DIR)",
			   GPUCTL_DATADIR);
	return GC_ENOTFOUND;
}

int datadir_exe_dir(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	char *slash = strrchr(buf, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	return 0;
}
