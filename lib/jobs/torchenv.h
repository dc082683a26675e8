/*
 * torchenv.h — the Python and the PyTorch a job's launcher runs, and what
 * gpuctl knows of their versions: the quirks `gpuctl launch` works around
 * and `gpuctl doctor` names. Pure functions: the caller finds the launcher,
 * reads its first line and runs TORCHENV_PROBE with its Python; nothing
 * here runs, reads a file or the environment.
 *
 * Why not import torch to ask: that takes seconds and may touch the GPUs,
 * on every launch. The probe asks Python where `import torch` would find
 * the package and reads its version from torch/version.py (else the
 * package's metadata), which costs one interpreter start.
 */
#ifndef GPUCTL_LIB_TORCHENV_H
#define GPUCTL_LIB_TORCHENV_H
#include <stdbool.h>
#include <stddef.h>

struct torchenv {
	int py_major, py_minor;   /* the interpreter's version; 0 0 when unknown */
	char version[64];         /* torch.__version__ as installed ("1.13.0a0", "2.4.0+cu121"); "" not found */
	int major, minor;         /* of version; -1 -1 when not found or not a version */
};

/*
 * Python code for `PYTHON -c TORCHENV_PROBE`: prints one line
 * "gpuctl-torch PYMAJOR PYMINOR VERSION", VERSION "-" when torch is not
 * found, without importing torch.
 */
extern const char TORCHENV_PROBE[];

/* Read the probe's output (borrowed; NULL allowed) into *t. 0, or -1 when it has no such line (*t unknown). */
int torchenv_parse(const char *out, struct torchenv *t);

/*
 * The Python interpreter that runs a script (torchrun), from the script's
 * first bytes head[len]: "#!/usr/bin/python3.11" gives "/usr/bin/python3.11";
 * "#!/usr/bin/env python3" gives "python3" (to look up on PATH, as env
 * does); the trampoline pip writes when the interpreter's path is too long
 * for a #! line ("#!/bin/sh" then "'''exec' '/path/python' "$0" "$@"")
 * gives that path. One option on the #! line ("-s", "-E"), which changes
 * where Python looks for packages, goes into opt ("" when none). 0, or -1
 * when the script is not started by a Python interpreter gpuctl can name
 * (or a name does not fit pylen/optlen).
 */
int torchenv_script_python(const char *head, size_t len, char *py, size_t pylen, char *opt, size_t optlen);

/*
 * Does this torchrun die at start with its default --redirects 0 --tee 0?
 * PyTorch before 2.0 looks the value up by iterating its Std IntFlag, and
 * from Python 3.11 iterating an IntFlag skips the zero member (and the
 * combined ALL = 3): "0" and "3" parse to None, and torchrun fails with
 * "AttributeError: 'NoneType' object has no attribute 'get'" in
 * torch/distributed/elastic/multiprocessing/api.py (to_map). PyTorch 2.0
 * builds the member from the value instead. 1 (stdout) and 2 (stderr) parse.
 * False when either version is unknown.
 */
bool torchenv_std_bug(const struct torchenv *t);

/*
 * Does this PyTorch know expandable_segments in PYTORCH_CUDA_ALLOC_CONF?
 * From 2.1; older ones fail at the first CUDA allocation with
 * "RuntimeError: Unrecognized CachingAllocator option: expandable_segments".
 * False when the version is unknown.
 */
bool torchenv_has_expandable(const struct torchenv *t);

/* Is t's torch known to be older than 2.1 (and so not to know expandable_segments)? */
bool torchenv_before_expandable(const struct torchenv *t);

/* Does a PYTORCH_CUDA_ALLOC_CONF value (NULL allowed) set expandable_segments (to anything)? */
bool torchenv_conf_expandable(const char *conf);

/* "1.13.0a0" → 1, 13; false when v does not start with MAJOR.MINOR */
bool torchenv_version(const char *v, int *major, int *minor);
#endif
