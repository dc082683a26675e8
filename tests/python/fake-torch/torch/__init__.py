"""A fake PyTorch with CUDA, for what Debian's CPU-only torch cannot show:
gpuctl.torch.setup_device on a machine where CUDA works. CUDA's view follows
CUDA_VISIBLE_DEVICES as read when it starts (is_available, device_count),
and each GPU is 'NVIDIA L4', 22.5 GiB. Calls are recorded in `calls`.
"""
import os

__version__ = "2.3.0+fake"
calls = []


class version:
    cuda = "12.1"


class _Props:
    name = "NVIDIA L4"
    total_memory = int(22.5 * 2 ** 30)


class cuda:
    _seen = None  # CUDA_VISIBLE_DEVICES when CUDA started

    @staticmethod
    def _start():
        if cuda._seen is None:
            cuda._seen = os.environ.get("CUDA_VISIBLE_DEVICES", "0,1")
            calls.append(("cuda init", cuda._seen))

    @staticmethod
    def is_initialized():
        return cuda._seen is not None

    @staticmethod
    def is_available():
        cuda._start()
        return True

    @staticmethod
    def device_count():
        cuda._start()
        return len([x for x in cuda._seen.split(",") if x])

    @staticmethod
    def set_device(i):
        calls.append(("set_device", i))

    @staticmethod
    def get_device_properties(i):
        return _Props()


def device(kind, index=None):
    return "%s:%d" % (kind, index) if index is not None else kind
