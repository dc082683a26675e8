/*
 * slurp.h — read a whole (bounded) file into memory, with the errors a user
 * can act on: missing, unreadable, a directory, too large. For the data
 * files lib/ reads (catalogs, GPU and model tables) and gpuctld's configuration.
 */
#ifndef GPUCTL_LIB_SLURP_H
#define GPUCTL_LIB_SLURP_H

#include <stddef.h>

/*
 * Read `path` (at most `max` bytes; a regular file, or a character device
 * such as /dev/null) into a NUL-terminated buffer the caller frees with
 * free(). Returns 0, or a negative GC_E* code with a one-line reason naming
 * the path in err (GC_ENOTFOUND: it does not exist).
 */
int slurp(const char *path, size_t max, char **out, size_t *len, char *err, size_t errlen);

#endif
