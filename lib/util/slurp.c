/*
 * slurp.c — bounded whole-file reads (see slurp.h).
 */
#include "util/slurp.h"
#include "util/errbuf.h"
#include "device/gpu.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int slurp(const char *path, size_t max, char **out, size_t *len, char *err, size_t errlen)
{
	*out = NULL;
	*len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		errbuf_set(err, errlen, "cannot open '%s': %s", path, strerror(e));
		errno = e;
		return errno == ENOENT ? GC_ENOTFOUND : GC_EIO;
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		errbuf_set(err, errlen, "cannot read '%s': %s", path, strerror(errno));
		close(fd);
		return GC_EIO;
	}
	if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode)) { /* a character device: /dev/null, as an empty file */
		errbuf_set(err, errlen, "'%s' is %s", path,
			   S_ISDIR(st.st_mode) ? "a directory, not a file" : "not a regular file");
		close(fd);
		return GC_EINVAL;
	}
	if ((unsigned long long)st.st_size > max) {
		errbuf_set(err, errlen, "'%s' is larger than %zu %s", path, max % (1u << 20) ? max >> 10 : max >> 20,
			   max % (1u << 20) ? "KiB" : "MiB");
		close(fd);
		return GC_EINVAL;
	}
	size_t cap = (size_t)st.st_size + 1, n = 0;
	char *buf = malloc(cap);
	if (!buf) {
		close(fd);
		errbuf_set(err, errlen, "out of memory reading '%s'", path);
		return GC_ENOMEM;
	}
	for (;;) {
		if (n + 1 == cap) {
			/* the file grew while we read it: allow up to max */
			if (cap > max) {
				free(buf);
				close(fd);
				errbuf_set(err, errlen, "'%s' is larger than %zu %s", path,
					   max % (1u << 20) ? max >> 10 : max >> 20, max % (1u << 20) ? "KiB" : "MiB");
				return GC_EINVAL;
			}
			char *nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				close(fd);
				errbuf_set(err, errlen, "out of memory reading '%s'", path);
				return GC_ENOMEM;
			}
			buf = nb;
			cap *= 2;
		}
		ssize_t r = read(fd, buf + n, cap - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			errbuf_set(err, errlen, "cannot read '%s': %s", path, strerror(errno));
			free(buf);
			close(fd);
			return GC_EIO;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}
