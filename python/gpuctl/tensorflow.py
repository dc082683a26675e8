"""TensorFlow helpers: lease GPUs and make them TF's, in the order TF needs.

TensorFlow is imported only when a function here is called. TensorFlow is
not packaged for Debian: these helpers are tested against a fake
``tensorflow`` module that records the calls and raises what TF raises once
its runtime is initialised (tests/python/fake/tensorflow).
"""

from typing import Any, List, Optional

from . import _core
from .errors import CudaAlreadyInitialized

_held: Optional[_core.Lease] = None


def use_gpus(n: int = 1, *, memory_growth: bool = True, lease: bool = True, wait: bool = False,
             timeout: _core.Duration = None, min_free_mem: _core.Size = None, max_util: Optional[int] = None,
             model: Optional[str] = None) -> List[Any]:
    """Lease n GPUs (or reuse the job's) and give them to TensorFlow; returns TF's GPU devices.

    The familiar ``tf.config.set_visible_devices(...)`` and
    ``set_memory_growth(gpu, True)`` are done on the leased GPUs, before
    TensorFlow's runtime starts (it refuses both afterwards: that is raised
    as CudaAlreadyInitialized, with what to do, instead of TF's words).
    """
    global _held
    try:
        import tensorflow as tf  # type: ignore
    except ImportError as e:
        raise ImportError("gpuctl.tensorflow needs TensorFlow (pip install tensorflow): %s" % e) from None
    if lease and _held is None:
        _held = _core.default_context().lease(n, wait=wait, timeout=timeout, min_free_mem=min_free_mem,
                                              max_util=max_util, model=model)
    gpus = tf.config.list_physical_devices("GPU")
    try:
        tf.config.set_visible_devices(gpus, "GPU")
        if memory_growth:
            for g in gpus:
                tf.config.experimental.set_memory_growth(g, True)
    except RuntimeError as e:
        raise CudaAlreadyInitialized(
            "TensorFlow's runtime is already initialised (%s): the GPUs and memory growth can only be set "
            "before the first op or tf.config.list_logical_devices(); call gpuctl.tensorflow.use_gpus() first"
            % e) from None
    return gpus


def release() -> None:
    """Give back the GPUs use_gpus leased (the process's exit does too)."""
    global _held
    if _held is not None:
        _held.release()
        _held = None
