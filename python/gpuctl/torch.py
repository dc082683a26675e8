"""PyTorch helpers: the familiar setup_device(), done right.

PyTorch is imported only when a function here is called; gpuctl does not
depend on it.
"""

import os
from typing import Any, Callable, Optional

from . import _core
from .errors import BadRequest, CudaAlreadyInitialized, GpuctlError, NoDriver

_held: Optional[_core.Lease] = None


class NoCuda(GpuctlError, RuntimeError):
    """PyTorch cannot use CUDA here (a CPU-only build, or no driver)."""


def _import_torch() -> Any:
    try:
        import torch  # type: ignore
    except ImportError as e:
        raise ImportError("gpuctl.torch needs PyTorch (pip install torch, or Debian's python3-torch): %s" % e) from None
    return torch


def setup_device(gpu: int = 0, *, n: int = 1, lease: bool = True, wait: bool = False, timeout: _core.Duration = None,
                 min_free_mem: _core.Size = None, max_util: Optional[int] = None, model: Optional[str] = None,
                 cpu_fallback: bool = False, log: Optional[Callable[[str], None]] = print) -> Any:
    """Lease GPUs (or reuse the job's), make ``cuda:gpu`` this process's device, return it.

    - Outside a gpuctl job, n GPUs are leased for this process (gpuctl.lease,
      with its filters, wait and timeout) before CUDA starts, so
      CUDA_VISIBLE_DEVICES takes effect; the lease lasts until the process
      exits. Inside `gpuctl run` / `gpuctl launch` the job's GPUs are used.
      ``lease=False``: use whatever CUDA_VISIBLE_DEVICES says.
    - ``gpu`` is an ordinal among the GPUs CUDA sees. CUDA numbers the
      visible GPUs from 0, whatever their nvidia-smi index: a wrong ordinal
      is a BadRequest that says so.
    - Without CUDA (a CPU-only PyTorch, no driver), NoCuda is raised, or,
      with ``cpu_fallback=True``, the CPU is returned and that is logged.
    - ``log``: where the one-line summary goes (name, memory); None: nowhere.
    """
    global _held
    torch = _import_torch()
    say = log or (lambda s: None)
    in_job = bool(os.environ.get("GPUCTL_GPUS")) and "CUDA_VISIBLE_DEVICES" in os.environ
    if lease and _held is None and not in_job:
        if torch.cuda.is_initialized():
            raise CudaAlreadyInitialized(
                "CUDA is already initialised in this process (torch.cuda.is_initialized()): GPUs leased now "
                "could not be made visible; call gpuctl.torch.setup_device() before any other torch.cuda call")
        try:
            _held = _core.default_context().lease(n, wait=wait, timeout=timeout, min_free_mem=min_free_mem,
                                                  max_util=max_util, model=model)
        except NoDriver as e:
            if not cpu_fallback:
                raise
            say("gpuctl: no GPU (%s); using the CPU, as cpu_fallback=True asks" % e)
            return torch.device("cpu")
    if not torch.cuda.is_available():
        why = ("PyTorch %s is a CPU-only build (torch.version.cuda is None)" % torch.__version__
               if getattr(torch.version, "cuda", None) is None else
               "PyTorch %s (CUDA %s) finds no usable GPU" % (torch.__version__, torch.version.cuda))
        if cpu_fallback:
            say("gpuctl: %s; using the CPU, as cpu_fallback=True asks" % why)
            return torch.device("cpu")
        raise NoCuda("%s; install a CUDA build of PyTorch, or pass cpu_fallback=True to run on the CPU" % why)
    count = torch.cuda.device_count()
    if isinstance(gpu, bool) or not isinstance(gpu, int) or not 0 <= gpu < count:
        vis = os.environ.get("CUDA_VISIBLE_DEVICES")
        raise BadRequest(
            "GPU ordinal %r is out of range: CUDA sees %d device%s (cuda:0%s)%s. CUDA numbers the visible GPUs "
            "from 0, whatever their index in nvidia-smi or gpuctl ls" % (
                gpu, count, "" if count == 1 else "s", "" if count <= 1 else "..cuda:%d" % (count - 1),
                " with CUDA_VISIBLE_DEVICES=%s" % vis if vis is not None else ""))
    torch.cuda.set_device(gpu)
    p = torch.cuda.get_device_properties(gpu)
    say("gpuctl: using cuda:%d, %s, %.1f GiB" % (gpu, p.name, p.total_memory / 2 ** 30))
    return torch.device("cuda", gpu)


def release() -> None:
    """Give back the GPUs setup_device leased (the process's exit does too)."""
    global _held
    if _held is not None:
        _held.release()
        _held = None
