"""A fake TensorFlow for gpuctl.tensorflow's tests (TensorFlow is not in Debian).

It records the calls gpuctl makes and behaves as TF 2 does where gpuctl
depends on it: the GPUs listed follow CUDA_VISIBLE_DEVICES; once the
runtime is initialised (list_logical_devices, or any op), set_visible_devices
and set_memory_growth raise the RuntimeError TF raises. ``_hide_init``
makes the runtime invisible to gpuctl's own check, so TF's error is what
gpuctl sees.
"""
import os

calls = []
_initialized = False
_hide_init = False


class PhysicalDevice:
    def __init__(self, name, device_type):
        self.name, self.device_type = name, device_type

    def __repr__(self):
        return "PhysicalDevice(name=%r, device_type=%r)" % (self.name, self.device_type)


def _gpus():
    v = os.environ.get("CUDA_VISIBLE_DEVICES")
    n = 2 if v is None else len([x for x in v.split(",") if x])
    return [PhysicalDevice("/physical_device:GPU:%d" % i, "GPU") for i in range(n)]


class _Experimental:
    @staticmethod
    def set_memory_growth(device, enable):
        calls.append(("set_memory_growth", device.name, enable))
        if _initialized:
            raise RuntimeError("Physical devices cannot be modified after being initialized")


class _Config:
    experimental = _Experimental()

    @staticmethod
    def list_physical_devices(device_type=None):
        calls.append(("list_physical_devices", device_type))
        return _gpus() if device_type == "GPU" else []

    @staticmethod
    def set_visible_devices(devices, device_type=None):
        calls.append(("set_visible_devices", len(devices), device_type))
        if _initialized:
            raise RuntimeError("Visible devices cannot be modified after being initialized")

    @staticmethod
    def list_logical_devices(device_type=None):
        global _initialized
        _initialized = True
        from .python.eager import context
        if not _hide_init:
            context.context()._context_handle = object()
        return _gpus()


config = _Config()
