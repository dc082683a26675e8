"""gpuctl's exceptions: one per kind of failure of the library (GC_E* codes).

Every exception carries the library's one-line message and its code::

    try:
        with gpuctl.lease(n=2, wait=False):
            ...
    except gpuctl.Busy as e:
        print("not now:", e)        # "GPU 0 is leased by alice (pid 41, ...)"
"""

from typing import Dict, Optional, Type

from . import _lib


class GpuctlError(Exception):
    """Any failure of libgpuctl. ``code`` is the library's GC_E* number."""

    code = 0

    def __init__(self, message: str, code: Optional[int] = None):
        super().__init__(message)
        if code is not None:
            self.code = code


class NoDriver(GpuctlError):
    """No usable NVIDIA driver: the library is missing, the kernel module is not
    loaded, or the two versions differ. Try a simulated node: gpuctl.open(sim="node.json")."""


class PermissionDenied(GpuctlError, PermissionError):
    """The driver or a file refused this user."""


class GpuLost(GpuctlError):
    """A GPU fell off the bus or needs a reset."""


class BadRequest(GpuctlError, ValueError):
    """A request or argument that can never be met ("20" without a unit, more GPUs
    than the machine has, a malformed simulated node file)."""


class NotFound(GpuctlError, LookupError):
    """No such GPU, checkpoint or data file."""


class NvmlError(GpuctlError):
    """Another failure of NVML."""


class FileError(GpuctlError, OSError):
    """A file could not be read or written."""


class Busy(GpuctlError):
    """Not now: the GPUs asked for are leased or used by others (the message says by
    whom). Wait in line with ``lease(wait=True)``."""


class Timeout(Busy, TimeoutError):
    """Waited as long as asked, and the GPUs are still not free."""


class Cancelled(GpuctlError):
    """The wait was interrupted (a signal, KeyboardInterrupt)."""


class CudaAlreadyInitialized(GpuctlError, RuntimeError):
    """CUDA (or TensorFlow's GPU runtime) was initialised in this process before
    the GPUs were chosen: CUDA_VISIBLE_DEVICES set now would be ignored."""


_BY_CODE: Dict[int, Type[GpuctlError]] = {
    _lib.ENOLIB: NoDriver, _lib.ENODRIVER: NoDriver, _lib.EMISMATCH: NoDriver,
    _lib.ENOPERM: PermissionDenied, _lib.EGPULOST: GpuLost, _lib.EINVAL: BadRequest,
    _lib.ESIM: BadRequest, _lib.ENOTFOUND: NotFound, _lib.ENVML: NvmlError, _lib.EIO: FileError,
    _lib.EBUSY: Busy, _lib.ENOTNOW: Busy, _lib.ETIMEDOUT: Timeout, _lib.ECANCELED: Cancelled,
}


def error(code: int, message: str = "") -> BaseException:
    """The exception for a GC_E* code, with the library's message (or its description)."""
    if not message:
        s = _lib.strerror(code)
        message = s.decode() if s else "error %d" % code
    if code == _lib.ENOMEM:
        return MemoryError(message)
    return _BY_CODE.get(code, GpuctlError)(message, code)


def check(code: int, err: Optional[bytes] = None) -> None:
    """Raise for a negative code, with the message the library wrote into err."""
    if code < 0:
        raise error(code, err.decode("utf-8", "replace") if err else "")
