"""Contexts, devices, picking and leasing GPUs: gpuctl's see / pick / lease in Python."""

import ctypes
import os
import socket
import sys
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union

from . import _lib
from .errors import CudaAlreadyInitialized, check, error

Size = Union[int, str, None]
Duration = Union[int, float, str, None]

MAX_GPUS = 4096  # the most GPUs one request may ask for: the command's -n takes 1 to 4096
MAX_MODEL = 95   # NVML's names are at most 96 bytes with their NUL: the command's --model takes 1 to 95 bytes


def _utf8(v: str, what: str) -> bytes:
    """a str for the library, as UTF-8, or a BadRequest naming the argument"""
    try:
        return v.encode("utf-8")
    except UnicodeEncodeError as e:
        raise error(_lib.EINVAL, "invalid %s %r: not valid text (%s at position %d); give a UTF-8 string"
                    % (what, v, e.reason, e.start)) from None


def parse_size(v: Size, what: str = "size") -> int:
    """Bytes from an int (bytes) or a string as gpuctl's options take it ("20G" = 20 GiB, "512MiB")."""
    if v is None:
        return 0
    if isinstance(v, bool) or not isinstance(v, (int, str)):
        raise error(_lib.EINVAL, "invalid %s %r: give bytes (int) or a string with a unit such as '20G'" % (what, v))
    if isinstance(v, int):
        if v < 0:
            raise error(_lib.EINVAL, "invalid %s %d: must not be negative" % (what, v))
        if v >= 2 ** 64:
            raise error(_lib.EINVAL, "invalid %s %d: too large (more than 2^64-1 bytes)" % (what, v))
        return v
    b = _utf8(v, what)
    if b"\0" in b:
        raise error(_lib.EINVAL, "invalid %s %r: a NUL character" % (what, v))
    out = ctypes.c_uint64()
    err = ctypes.create_string_buffer(_lib.ERRBUF)
    rc = _lib.parse_size(b, ctypes.byref(out), err, len(err))
    if rc < 0:
        raise error(rc, "invalid %s %r: %s" % (what, v, err.value.decode("utf-8", "replace")))
    return out.value


def parse_duration(v: Duration, what: str = "timeout") -> int:
    """Milliseconds from seconds (int or float) or a string as gpuctl takes it ("90", "30s", "10m"); None: -1."""
    if v is None:
        return -1
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise error(_lib.EINVAL, "invalid %s %r: give seconds or a string such as '10m'" % (what, v))
    if isinstance(v, (int, float)):
        # as the library's durations: under 10^15 ms (and from 0 here: 0 is one look, no wait)
        if v != v or v < 0 or v >= 10 ** 12:
            raise error(_lib.EINVAL, "invalid %s %r: seconds from 0 to less than 10^12" % (what, v))
        return int(v * 1000)
    b = _utf8(v, what)
    if b"\0" in b:
        raise error(_lib.EINVAL, "invalid %s %r: a NUL character" % (what, v))
    out = ctypes.c_int64()
    err = ctypes.create_string_buffer(_lib.ERRBUF)
    rc = _lib.parse_duration(b, ctypes.byref(out), err, len(err))
    if rc < 0:
        raise error(rc, "%s: %s" % (what, err.value.decode("utf-8", "replace")))
    return out.value


def _text(v: Any, what: str) -> Optional[bytes]:
    """a str argument (None: none) as bytes for the library, or a BadRequest naming it"""
    if v is None:
        return None
    if not isinstance(v, str) or "\0" in v:
        raise error(_lib.EINVAL, "invalid %s %r: a string" % (what, v))
    return _utf8(v, what)


def _path(v: Any, what: str) -> Optional[bytes]:
    """a path argument (str or os.PathLike; None: none) as bytes, or a BadRequest naming it"""
    if v is None:
        return None
    if not isinstance(v, (str, bytes, os.PathLike)):
        raise error(_lib.EINVAL, "invalid %s %r: a path (str or os.PathLike)" % (what, v))
    try:
        b = os.fsencode(v)  # the file name's bytes, also a name that is not UTF-8 (os.fsdecode's)
    except (UnicodeEncodeError, TypeError):
        raise error(_lib.EINVAL, "invalid %s %r: not a file name this system can encode" % (what, v)) from None
    if not b or b"\0" in b:
        raise error(_lib.EINVAL, "invalid %s %r: an empty path, or one with a NUL byte" % (what, v))
    return b


class Process:
    """A process using a GPU, as `gpuctl ls --json` lists it."""

    __slots__ = ("pid", "user", "command", "used_memory", "type", "sm_util", "data")

    def __init__(self, d: Dict[str, Any]):
        self.data = d
        self.pid: int = d.get("pid")
        self.user: Optional[str] = d.get("user")
        self.command: Optional[str] = d.get("command")
        self.used_memory: Optional[int] = d.get("used_memory")
        self.type: Optional[str] = d.get("type")
        self.sm_util: Optional[int] = d.get("sm_util")  # % of the time its kernels ran; None: unknown

    def __repr__(self) -> str:
        return "Process(pid=%r, user=%r, command=%r, used_memory=%r)" % (
            self.pid, self.user, self.command, self.used_memory)


class Device:
    """One GPU of a sample, with every value `gpuctl ls --json` has (docs/json.md).

    A value NVML does not give for this GPU is None, never 0. The common ones
    are attributes (``memory_free``, ``utilization``, ...); every other is in
    ``data`` (the JSON object) and by key: ``dev["power"]["draw_mw"]``.
    """

    __slots__ = ("data", "index", "name", "uuid", "bus_id", "processes")

    def __init__(self, d: Dict[str, Any]):
        self.data = d
        self.index: int = d["index"]
        self.name: Optional[str] = d.get("name")
        self.uuid: Optional[str] = d.get("uuid")
        self.bus_id: Optional[str] = (d.get("pci") or {}).get("bus_id")
        self.processes: List[Process] = [Process(p) for p in d.get("processes") or []]

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def _get(self, *path: str) -> Any:
        v: Any = self.data
        for k in path:
            if not isinstance(v, dict):
                return None
            v = v.get(k)
        return v

    @property
    def memory_total(self) -> Optional[int]:
        """bytes"""
        return self._get("memory", "total")

    @property
    def memory_used(self) -> Optional[int]:
        """bytes"""
        return self._get("memory", "used")

    @property
    def memory_free(self) -> Optional[int]:
        """bytes"""
        return self._get("memory", "free")

    @property
    def utilization(self) -> Optional[int]:
        """percent of time a kernel ran (nvidia-smi's utilization.gpu)"""
        return self._get("utilization", "gpu")

    @property
    def temperature(self) -> Optional[int]:
        """degrees C"""
        return self._get("temperature")

    @property
    def power_draw_w(self) -> Optional[float]:
        mw = self._get("power", "draw_mw")
        return None if mw is None else mw / 1000.0

    @property
    def throttled(self) -> Optional[bool]:
        """slowed down by power or heat (not for being idle)"""
        return self._get("clock_event_reasons", "throttled")

    @property
    def lost(self) -> bool:
        return bool(self.data.get("lost"))

    def __repr__(self) -> str:
        return "Device(index=%r, name=%r, uuid=%r)" % (self.index, self.name, self.uuid)


class Snapshot:
    """One consistent sample of every GPU: ``devices``, ``driver``, ``timestamp``, ``data`` (the JSON)."""

    def __init__(self, data: Dict[str, Any]):
        self.data = data
        self.devices: List[Device] = [Device(g) for g in data.get("gpus") or []]
        self.driver: Dict[str, Any] = data.get("driver") or {}
        self.timestamp: str = data.get("timestamp", "")

    def __iter__(self) -> Iterator[Device]:
        return iter(self.devices)

    def __len__(self) -> int:
        return len(self.devices)

    def __getitem__(self, i: int) -> Device:
        return self.devices[i]


def _request(n: int, min_free_mem: Size, max_util: Optional[int], model: Optional[str], shared: bool,
             name: Optional[str]) -> _lib.Request:
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_GPUS:
        raise error(_lib.EINVAL, "invalid n %r: a whole number of GPUs, from 1 to %d" % (n, MAX_GPUS))
    if max_util is None:
        mu = -1
    elif isinstance(max_util, bool) or not isinstance(max_util, int) or not 0 <= max_util <= 100:
        raise error(_lib.EINVAL, "invalid max_util %r: a percentage from 0 to 100, or None for any" % (max_util,))
    else:
        mu = max_util
    r = _lib.Request()
    r.size = ctypes.sizeof(_lib.Request)
    r.n = n
    r.min_free_mem = parse_size(min_free_mem, "min_free_mem")
    r.max_util = mu
    m = _text(model, "model")
    if m is not None and not 1 <= len(m) <= MAX_MODEL:
        raise error(_lib.EINVAL, "invalid model %r: a GPU name or glob of 1 to %d bytes, e.g. 'A100' or '*H100*'"
                    % (model, MAX_MODEL))
    r.model = m
    r.shared = bool(shared)
    r.name = _text(name, "name") or None
    return r


def _cuda_initialized() -> Optional[str]:
    """What has already set up CUDA in this process ("torch", "tensorflow"), or None.

    Only frameworks already imported are looked at; none is imported here."""
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            if torch.cuda.is_initialized():
                return "torch (torch.cuda.is_initialized() is True)"
        except Exception:  # a torch without CUDA support says no
            pass
    if "tensorflow" in sys.modules:
        try:
            from tensorflow.python.eager import context as tf_context  # type: ignore
            if tf_context.context()._context_handle is not None:
                return "tensorflow (its runtime has listed the GPUs)"
        except Exception:
            pass
    return None


class Context:
    """An open connection to the GPUs: the NVIDIA driver, or a simulated node.

    ``gpuctl.open()`` opens one; the module's functions use a default one
    (the driver, or the node file in $GPUCTL_SIM, as the gpuctl command does).
    """

    def __init__(self, sim: Optional[str] = None, library: Optional[str] = None):
        self._ctx = ctypes.c_void_p()
        self._snap = None
        o = _lib.OpenOpts()
        o.size = ctypes.sizeof(o)
        o.library = _path(library, "library")
        o.sim_node = _path(sim, "sim")
        self.sim = sim
        rc = _lib.ctx_open(ctypes.byref(self._ctx), ctypes.byref(o))
        if rc < 0:
            msg = _lib.ctx_errmsg(self._ctx) if self._ctx else None
            _lib.ctx_free(self._ctx)
            self._ctx = ctypes.c_void_p()
            text = msg.decode("utf-8", "replace") if msg else ""
            if rc in (_lib.ENOLIB, _lib.ENODRIVER) and not sim:
                text += "; to try gpuctl without a GPU, open a simulated node: gpuctl.open(sim='node.json')"
            raise error(rc, text)
        self._snap = _lib.snapshot_new()
        if not self._snap:
            self.close()
            raise MemoryError("gpuctl: out of memory")

    def close(self) -> None:
        """Close the connection (also done when the context is collected)."""
        if self._snap:
            _lib.snapshot_free(self._snap)
            self._snap = None
        if self._ctx:
            _lib.ctx_free(self._ctx)
            self._ctx = ctypes.c_void_p()

    def __enter__(self) -> "Context":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def _handle(self) -> ctypes.c_void_p:
        if not self._ctx:
            raise error(_lib.EINVAL, "this gpuctl context is closed")
        return self._ctx

    def _sample(self, topo: bool = False) -> None:
        ctx = self._handle()
        rc = _lib.ctx_sample(ctx, self._snap, _lib.ALL_VALUES, None, topo)
        if rc < 0:
            msg = _lib.ctx_errmsg(ctx)
            raise error(rc, msg.decode("utf-8", "replace") if msg else "")

    def count(self) -> int:
        """How many GPUs the node has."""
        return int(_lib.ctx_count(self._handle()))

    def snapshot(self, _topo: bool = False) -> Snapshot:
        """One sample of every GPU, with every value and process."""
        import json
        self._sample(_topo)
        p = _lib.snapshot_json(self._snap, None, socket.gethostname().encode(), False)
        if not p:
            raise MemoryError("gpuctl: out of memory")
        return Snapshot(json.loads(_lib.take_string(p)))

    def devices(self) -> List[Device]:
        """Every GPU, sampled now (the values of `gpuctl ls --json`)."""
        return self.snapshot().devices

    def select(self, n: int = 1, *, min_free_mem: Size = None, max_util: Optional[int] = None,
               model: Optional[str] = None, shared: bool = False,
               state_dir: Optional[str] = None) -> List[Device]:
        """The n best GPUs free now, as `gpuctl pick` chooses them, without leasing them.

        Raises Busy when fewer than n fit now."""
        r = _request(n, min_free_mem, max_util, model, shared, None)
        snap = self.snapshot(_topo=n > 1)  # several GPUs: the best connected, as gpuctl pick
        out = (ctypes.c_uint * n)()
        rc = _lib.pick(self._snap, ctypes.byref(r), _path(state_dir, "state_dir"), out)
        if rc == _lib.ENOTNOW:
            raise error(rc, "fewer than %d GPU%s fit the request now" % (n, "" if n == 1 else "s"))
        check(rc)
        return [snap.devices[i] for i in out]

    def lease(self, n: int = 1, *, wait: bool = False, timeout: Duration = None, min_free_mem: Size = None,
              max_util: Optional[int] = None, model: Optional[str] = None, shared: bool = False,
              name: Optional[str] = None, state_dir: Optional[str] = None, set_env: bool = True) -> "Lease":
        """Lease n GPUs for this process, as `gpuctl run` does (see gpuctl.lease)."""
        return Lease(self, n, wait=wait, timeout=timeout, min_free_mem=min_free_mem, max_util=max_util,
                     model=model, shared=shared, name=name, state_dir=state_dir, set_env=set_env)


_ENV = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER")


class Lease(Sequence[int]):
    """GPUs held by this process: their NVML indices (``list(lease)``), ``uuids``,
    ``visible`` (the CUDA_VISIBLE_DEVICES value). A context manager: released,
    and the environment put back, on exit."""

    def __init__(self, ctx: Context, n: int, *, wait: bool, timeout: Duration, min_free_mem: Size,
                 max_util: Optional[int], model: Optional[str], shared: bool, name: Optional[str],
                 state_dir: Optional[str], set_env: bool):
        self._ctx = ctx
        self._lease = ctypes.c_void_p()
        self._saved: Optional[Dict[str, Optional[str]]] = None
        r = _request(n, min_free_mem, max_util, model, shared, name or _default_name())
        timeout_ms = parse_duration(timeout) if wait else 0
        if wait and timeout_ms == 0:
            timeout_ms = 1  # "wait 0 s": one look, then a Timeout, not a Busy
        state = _path(state_dir, "state_dir")
        err = ctypes.create_string_buffer(_lib.ERRBUF)
        who = _cuda_initialized() if set_env else None
        if who and not _may_be_seen(n):
            # no lease could be made visible now: refuse before taking GPUs, and before waiting in line for them
            raise _too_late(who)
        rc = self._wait(ctx, r, state, timeout_ms, err) if timeout_ms != 0 else _lib.lease_wait(
            ctx._handle(), ctypes.byref(r), state, 0, None, ctypes.byref(self._lease), err, len(err))
        check(rc, err.value)
        n_got = int(_lib.lease_count(self._lease))
        self.indices: List[int] = [int(_lib.lease_gpu(self._lease, i)) for i in range(n_got)]
        buf = ctypes.create_string_buffer(64 * n_got + 64)
        rc = _lib.lease_visible(self._lease, buf, len(buf))
        if rc < 0:
            self.release()
            check(rc)
        self.visible: str = buf.value.decode()
        self.uuids: List[str] = self.visible.split(",") if self.visible else []
        if who:
            # too late to choose what CUDA sees; fine only when it already sees exactly these
            # (a job's own GPUs, as gpuctl run set them)
            if (os.environ.get("GPUCTL_GPUS") == ",".join(map(str, self.indices))
                    or os.environ.get("CUDA_VISIBLE_DEVICES") == self.visible):
                return
            self.release()
            raise _too_late(who)
        if set_env:
            self._saved = {k: os.environ.get(k) for k in _ENV}
            os.environ["CUDA_VISIBLE_DEVICES"] = self.visible
            os.environ["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"

    def _wait(self, ctx: Context, r: _lib.Request, state: Optional[bytes], timeout_ms: int,
              err: ctypes.Array) -> int:
        """Wait in line in a thread, so that KeyboardInterrupt (and any signal Python
        handles) stops the wait: the library sees the stop flag within a second."""
        import threading
        stop = ctypes.c_int(0)
        res = []
        done = threading.Event()
        handle = ctx._handle()

        def work() -> None:
            try:
                res.append(_lib.lease_wait(handle, ctypes.byref(r), state, timeout_ms, ctypes.byref(stop),
                                           ctypes.byref(self._lease), err, len(err)))
            finally:
                done.set()

        threading.Thread(target=work, name="gpuctl-lease-wait", daemon=True).start()
        # Event.wait, not Thread.join: a join that KeyboardInterrupt cuts short can leave the
        # thread marked as stopped while it still runs (CPython's Thread._tstate_lock)
        try:
            while not done.wait(0.2):
                pass
        except BaseException:
            stop.value = 1
            while not done.is_set():  # the library sees the flag within a second
                try:
                    done.wait()
                except BaseException:
                    pass
            if res and res[0] == _lib.OK:
                _lib.lease_release(self._lease)
                self._lease = ctypes.c_void_p()
            raise
        return res[0]

    def release(self) -> None:
        """Give the GPUs back and put CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER back as they were."""
        if self._saved is not None:
            for k, v in self._saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            self._saved = None
        if self._lease:
            _lib.lease_release(self._lease)
            self._lease = ctypes.c_void_p()

    def __enter__(self) -> "Lease":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()

    def __del__(self) -> None:
        try:
            if self._lease:
                _lib.lease_release(self._lease)
        except Exception:
            pass

    def __getitem__(self, i):  # type: ignore[override]
        return self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)

    def __repr__(self) -> str:
        return "Lease(indices=%r, visible=%r)" % (self.indices, self.visible)


def _may_be_seen(n: int) -> bool:
    """Whether CUDA, already initialised, could already see exactly the n GPUs a lease would give:
    inside a job (`gpuctl run` set GPUCTL_GPUS and CUDA_VISIBLE_DEVICES) that has n GPUs, or with
    CUDA_VISIBLE_DEVICES naming n GPUs. Anything else is refused before a GPU is taken or waited for."""
    def count(var: str) -> int:
        v = os.environ.get(var)
        return len(v.split(",")) if v else 0
    return count("GPUCTL_GPUS") == n or count("CUDA_VISIBLE_DEVICES") == n


def _too_late(who: str) -> CudaAlreadyInitialized:
    return CudaAlreadyInitialized(
        "CUDA is already initialised in this process by %s: CUDA_VISIBLE_DEVICES set now would "
        "be ignored, and this process would use the wrong GPU; call gpuctl.lease() before "
        "anything touches CUDA, or run the script under `gpuctl run`" % who)


def _default_name() -> str:
    argv0 = sys.argv[0] if sys.argv and sys.argv[0] else "python"
    # a script whose file name is not UTF-8 (os.fsdecode's surrogates): its bytes, shown as UTF-8 can
    return "python " + os.fsencode(os.path.basename(argv0)).decode("utf-8", "replace")


_default: Optional[Context] = None


def default_context() -> Context:
    """The module's context: the simulated node in $GPUCTL_SIM if set, else the driver."""
    global _default
    if _default is None:
        _default = Context(sim=os.environ.get("GPUCTL_SIM") or None)
    return _default
