"""The ctypes binding of libgpuctl's public C API (include/gpuctl/gpuctl.h).

Only declarations live here: every rule (which GPUs fit, leases, the
checkpoint protocol, spot notices, explain, advise) is the library's.
The library is found the way the dynamic loader finds it (so
LD_LIBRARY_PATH and an installed libgpuctl.so.0 both work), or at the
path in $GPUCTL_LIBRARY.
"""

import ctypes
import os
from ctypes import (POINTER, Structure, c_bool, c_char, c_char_p, c_int, c_int64, c_size_t, c_uint, c_uint64,
                    c_void_p)

SONAME = "libgpuctl.so.0"


def _load() -> ctypes.CDLL:
    path = os.environ.get("GPUCTL_LIBRARY") or SONAME
    try:
        return ctypes.CDLL(path)
    except OSError as e:
        where = ("$GPUCTL_LIBRARY names %r" % path) if path != SONAME else SONAME
        raise ImportError(
            "gpuctl: cannot load %s (%s); install gpuctl's library (meson install, or the "
            "gpuctl package), or point LD_LIBRARY_PATH at a build's lib/ directory or "
            "GPUCTL_LIBRARY at libgpuctl.so.0" % (where, e)) from None


lib = _load()


def _where() -> str:
    """the file the library was loaded from: $GPUCTL_LIBRARY's path, or where the loader found libgpuctl.so.0"""
    if lib._name != SONAME:
        return lib._name
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split(None, 5)[-1].strip()
                if os.path.basename(path).startswith(SONAME):
                    return "%s (%s, as the dynamic loader found it)" % (SONAME, path)
    except OSError:
        pass
    return SONAME
_libc = ctypes.CDLL(None)
_libc.free.argtypes = [c_void_p]
_libc.free.restype = None

# enum gc_error
OK = 0
ENOLIB, ENODRIVER, EMISMATCH, ENOPERM, EGPULOST, ENOMEM, EINVAL, ENOTFOUND = -2, -3, -4, -5, -6, -7, -8, -9
ESIM, ENVML, EIO, EBUSY, ETIMEDOUT, ENOTNOW, ECANCELED = -10, -11, -12, -13, -14, -15, -16


class Request(Structure):
    """gc_request: fields only ever added at the end; size says how many."""
    _fields_ = [
        ("size", c_size_t),
        ("n", c_uint),
        ("min_free_mem", c_uint64),
        ("max_util", c_int),
        ("model", c_char_p),
        ("shared", c_bool),
        ("name", c_char_p),
    ]


class OpenOpts(Structure):
    _fields_ = [("size", c_size_t), ("library", c_char_p), ("sim_node", c_char_p)]


class SpotEvent(Structure):
    _fields_ = [
        ("kind", c_int),
        ("cloud", c_int),
        ("notice_ms", c_int64),
        ("deadline_ms", c_int64),
        ("action", c_char * 32),
        ("detail", c_char * 256),
        ("id", c_char * 128),
    ]


def _fn(name, restype, *argtypes):
    try:
        f = getattr(lib, name)
    except AttributeError:
        # another library (GPUCTL_LIBRARY naming the wrong file), or a libgpuctl older than this package
        raise ImportError(
            "gpuctl: %s has no %s(): it is not the libgpuctl this package needs (another library, or an older "
            "libgpuctl); point GPUCTL_LIBRARY at the libgpuctl.so.0 of the same gpuctl as this package, or "
            "install them together" % (_where(), name)) from None
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


ERRBUF = 2048
strerror = _fn("gc_strerror", c_char_p, c_int)
parse_size = _fn("gc_parse_size", c_int, c_char_p, POINTER(c_uint64), c_char_p, c_size_t)
parse_duration = _fn("gc_parse_duration", c_int, c_char_p, POINTER(c_int64), c_char_p, c_size_t)

ctx_open = _fn("gc_ctx_open", c_int, POINTER(c_void_p), POINTER(OpenOpts))
ctx_free = _fn("gc_ctx_free", None, c_void_p)
ctx_errmsg = _fn("gc_ctx_errmsg", c_char_p, c_void_p)
ctx_count = _fn("gc_ctx_count", c_size_t, c_void_p)
ctx_sample = _fn("gc_ctx_sample", c_int, c_void_p, c_void_p, c_uint64, c_void_p, c_bool)
snapshot_new = _fn("gc_snapshot_new", c_void_p)
snapshot_free = _fn("gc_snapshot_free", None, c_void_p)
snapshot_count = _fn("gc_snapshot_count", c_size_t, c_void_p)
snapshot_json = _fn("gc_snapshot_json", c_void_p, c_void_p, c_void_p, c_char_p, c_bool)

pick = _fn("gc_pick", c_int, c_void_p, POINTER(Request), c_char_p, POINTER(c_uint))
lease_wait = _fn("gc_lease_wait", c_int, c_void_p, POINTER(Request), c_char_p, c_int64, POINTER(c_int),
                 POINTER(c_void_p), c_char_p, c_size_t)
lease_count = _fn("gc_lease_count", c_size_t, c_void_p)
lease_gpu = _fn("gc_lease_gpu", c_uint, c_void_p, c_size_t)
lease_visible = _fn("gc_lease_visible", c_int, c_void_p, c_char_p, c_size_t)
lease_release = _fn("gc_lease_release", None, c_void_p)

ckpt_commit = _fn("gc_ckpt_commit", c_int, c_char_p, c_char_p, c_char_p, c_size_t)
ckpt_latest = _fn("gc_ckpt_latest", c_int, c_char_p, c_char_p, c_size_t, c_char_p, c_size_t)
ckpt_prune = _fn("gc_ckpt_prune", c_int, c_char_p, c_uint, POINTER(c_size_t), c_char_p, c_size_t)
ckpt_list_json = _fn("gc_ckpt_list_json", c_int, c_char_p, POINTER(c_void_p), c_char_p, c_size_t)

spot_detect = _fn("gc_spot_detect", c_int)
cloud_name = _fn("gc_cloud_name", c_char_p, c_int)
spot_start = _fn("gc_spot_start", c_int, POINTER(c_void_p), c_int, c_char_p, c_char_p, c_size_t)
spot_fd = _fn("gc_spot_fd", c_int, c_void_p)
spot_next = _fn("gc_spot_next", c_int, c_void_p, POINTER(SpotEvent), c_size_t)
spot_ack = _fn("gc_spot_ack", c_int, c_void_p, POINTER(SpotEvent), c_size_t, c_char_p, c_size_t)
spot_stop = _fn("gc_spot_stop", None, c_void_p)

explain_text = _fn("gc_explain_text", c_int, c_char_p, c_size_t, c_char_p, POINTER(c_void_p), c_char_p, c_size_t)
advise_json = _fn("gc_advise_json", c_int, POINTER(c_char_p), POINTER(c_void_p), c_char_p, c_size_t)
advise_here_json = _fn("gc_advise_here_json", c_int, c_void_p, POINTER(c_char_p), POINTER(c_void_p), c_char_p,
                       c_size_t)
SayFn = ctypes.CFUNCTYPE(None, c_void_p, c_char_p)
run_json = _fn("gc_run_json", c_int, c_void_p, POINTER(c_char_p), POINTER(c_char_p), SayFn, c_void_p,
               POINTER(c_void_p), c_char_p, c_size_t)

value_name = _fn("gc_value_name", c_char_p, c_uint)


def _all_values() -> int:
    """GC_ALL_VALUES of the loaded library: a bit for each value it names."""
    n = 0
    while n < 64 and value_name(n) is not None:
        n += 1
    return (1 << n) - 1


ALL_VALUES = _all_values()


def take_string(p: int) -> str:
    """A malloc'd C string the caller owns: its text, then free()."""
    try:
        return ctypes.string_at(p).decode("utf-8", "replace")
    finally:
        _libc.free(p)
