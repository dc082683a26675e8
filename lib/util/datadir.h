/*
 * datadir.h — where gpuctl's data files are (GPU and model tables, cloud
 * catalogs, failure signatures): $GPUCTL_DATA_DIR when it is set (then the
 * only place looked in), else the installed package data directory, else
 * the source tree's data/ (a build tree). Shared by the tools and by
 * programs on the shared libgpuctl, which has no binary of its own to
 * look next to.
 */
#ifndef GPUCTL_LIB_DATADIR_H
#define GPUCTL_LIB_DATADIR_H

#include <stddef.h>

/*
 * The path of data file `name` ("gpus.csv", "catalog/aws.csv") in buf.
 * GC_OK, or GC_ENOTFOUND with a one-line message naming where it looked.
 */
int datadir_file(const char *name, char *buf, size_t len, char *err, size_t errlen);

/* The failure signatures' directory (explain), likewise. */
int datadir_signatures(char *buf, size_t len, char *err, size_t errlen);

/* The directory of this program (/proc/self/exe's) into buf: 0, or -1 when it cannot be told. Where
 * a build tree keeps what the program loads beside it (the simulator, gpuctl-tui.so). */
int datadir_exe_dir(char *buf, size_t len);

#endif
