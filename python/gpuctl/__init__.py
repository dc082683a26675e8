"""gpuctl: see, pick and lease GPUs, and checkpoint through preemption, from Python.

The same library as the ``gpuctl`` command (libgpuctl, through ctypes), so
the command, the queue and Python never give one GPU to two jobs::

    import gpuctl

    for d in gpuctl.devices():                 # what `gpuctl ls --json` shows
        print(d.index, d.name, d.memory_free, [p.user for p in d.processes])

    r = gpuctl.run(["python", "train.py"], n=2, wait=True,  # as `gpuctl run` runs it,
                   retry_on="oom-fragmentation,nccl-timeout")   # retries included
    print(r["exit_code"], [a["gpus"] for a in r["attempts"]])

    with gpuctl.lease(n=2, min_free_mem="20G", wait=True, timeout="10m") as gpus:
        # CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER=PCI_BUS_ID are set: start CUDA now
        import torch
        model = torch.nn.Linear(8, 8).cuda()

    ckpt = gpuctl.Checkpointer("ckpt", keep=3)  # commits that survive a kill
    state = ckpt.load_latest()                  # never a torn checkpoint
    ...
    ckpt.save(state, step=step)
    if ckpt.should_stop:                        # SIGTERM, a spot notice, the supervisor
        ...

Without a GPU, open a simulated node: ``gpuctl.open(sim="node.json")``, or
set $GPUCTL_SIM as for the command. Failures raise gpuctl.GpuctlError's
subclasses (NoDriver, Busy, Timeout, BadRequest, ...) with the library's
message. Framework helpers: gpuctl.torch, gpuctl.tensorflow (each imports
its framework only when called). See docs/python.md.
"""

import builtins as _builtins
import os as _os
from typing import Any, Dict, List, Optional, Union

from . import _core, _lib
from ._core import (Context, Device, Duration, Lease, Process, Size, Snapshot, default_context, parse_duration,
                    parse_size)
from .errors import (BadRequest, Busy, Cancelled, CudaAlreadyInitialized, FileError, GpuctlError, GpuLost,
                     NoDriver, NotFound, NvmlError, PermissionDenied, Timeout)

__all__ = [
    "open", "devices", "snapshot", "select", "lease", "run", "explain", "advise", "Checkpointer",
    "Context", "Device", "Process", "Snapshot", "Lease", "parse_size", "parse_duration",
    "GpuctlError", "NoDriver", "PermissionDenied", "GpuLost", "BadRequest", "NotFound", "NvmlError",
    "FileError", "Busy", "Timeout", "Cancelled", "CudaAlreadyInitialized",
]


def open(sim: Optional[str] = None, library: Optional[str] = None) -> Context:  # noqa: A001 (gpuctl.open)
    """Open the GPUs: the NVIDIA driver, or the simulated node in file ``sim``.

    ``library``: an NVML library to load instead of libnvidia-ml.so.1. A
    process serves one node, as NVML does: a second, different simulated
    node while one is open raises BadRequest."""
    return Context(sim=sim, library=library)


def snapshot() -> Snapshot:
    """One sample of every GPU (the default context's)."""
    return default_context().snapshot()


def devices() -> List[Device]:
    """Every GPU, sampled now: the values of `gpuctl ls --json` (None where NVML has none)."""
    return default_context().devices()


def select(n: int = 1, *, min_free_mem: Size = None, max_util: Optional[int] = None, model: Optional[str] = None,
           shared: bool = False, state_dir: Optional[str] = None) -> List[Device]:
    """The n best GPUs free now, as `gpuctl pick` ranks them (not leased: see lease).

    ``min_free_mem``: bytes, or "20G" (binary units, as gpuctl's options);
    ``max_util``: percent busy at most; ``model``: a glob or substring of the
    name ("H100*", "A100"); ``shared``: other users' processes do not make a
    GPU busy. Raises Busy when fewer fit now, BadRequest for a bad request."""
    return default_context().select(n, min_free_mem=min_free_mem, max_util=max_util, model=model, shared=shared,
                                    state_dir=state_dir)


def lease(n: int = 1, *, wait: bool = False, timeout: Duration = None, min_free_mem: Size = None,
          max_util: Optional[int] = None, model: Optional[str] = None, shared: bool = False,
          name: Optional[str] = None, state_dir: Optional[str] = None, set_env: bool = True) -> Lease:
    """Lease n GPUs for this process, with the flock leases `gpuctl run` uses.

    Use it as a context manager: ``with gpuctl.lease(n=2) as gpus:``. While it
    is held no gpuctl of any user (run, pick, the queue, another Python)
    gives these GPUs to anyone else; it ends on exit from the block, on
    release(), or when the process dies. With ``set_env`` (the default)
    CUDA_VISIBLE_DEVICES (the GPUs' UUIDs) and CUDA_DEVICE_ORDER=PCI_BUS_ID
    are set for this process and put back on release; if CUDA is already
    initialised here (torch.cuda.is_initialized(), TensorFlow's runtime),
    that would do nothing, so CudaAlreadyInitialized is raised instead,
    before any GPU is taken or waited for (unless CUDA may already see
    exactly the GPUs it would get: a `gpuctl run` job's own).

    ``wait``: wait in line, first come first served with every gpuctl on the
    machine, for at most ``timeout`` (seconds or "10m"; None: no limit);
    without it, Busy is raised at once when the GPUs are not free. Inside a
    `gpuctl run` job (or a shell after `gpuctl pick --lease`), the job's own
    GPUs are returned and nothing new is leased. The filters are select()'s.
    """
    return default_context().lease(n, wait=wait, timeout=timeout, min_free_mem=min_free_mem, max_util=max_util,
                                   model=model, shared=shared, name=name, state_dir=state_dir, set_env=set_env)


def _names_a_file(log: str) -> bool:
    """a str explain() takes as a path: an existing file, or one line with no blank that looks like
    a path ("logs/run.log", "train.out"); log text has blanks"""
    if "\n" in log or len(log) >= 4096 or "\0" in log:
        return False
    if _os.path.isfile(log):
        return True
    return not any(c.isspace() for c in log) and (
        _os.sep in log or log.lower().endswith((".log", ".txt", ".out", ".err")))


def explain(log: Union[str, bytes, "_os.PathLike[str]"], *, source: Optional[str] = None) -> Dict[str, Any]:
    """The known failures in a run's log, as `gpuctl explain --json` gives them.

    ``log``: the text (str or bytes), or a path: an os.PathLike, or a str
    naming an existing file or, on one line with no blank, shaped like a path
    ("logs/run.log"). A path that cannot be read is a FileError (also an
    OSError), as `gpuctl explain PATH` refuses it, never "no findings"."""
    import ctypes
    import json
    if source is not None and (not isinstance(source, str) or "\0" in source):
        raise BadRequest("invalid source %r: a string (the name the findings give the log)" % (source,))
    src = _core._utf8(source, "source") if source is not None else None
    if isinstance(log, _os.PathLike) or (isinstance(log, str) and _names_a_file(log)):
        path = _os.fspath(log)
        if not isinstance(path, (str, bytes)) or not path:
            raise BadRequest("invalid log %r: give its text (str or bytes) or a path" % (log,))
        shown = _os.fsdecode(path)
        if _os.path.isdir(path):  # as `gpuctl explain DIR`
            raise FileError("cannot explain %r: it is a directory (give a log file, or its text)" % shown, _lib.EIO)
        try:
            with _builtins.open(path, "rb") as f:
                data = f.read()
        except (OSError, ValueError) as e:  # as `gpuctl explain PATH`: "cannot open 'PATH': No such file ..."
            why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
            raise FileError("cannot open %r: %s" % (shown, why), _lib.EIO) from None
        if src is None:
            src = _os.fsencode(path)  # the file's name, in its own bytes
    elif isinstance(log, (str, bytes)):
        try:  # log text: the bytes it was read from (os.fsdecode's and errors="surrogateescape"'s)
            data = log if isinstance(log, bytes) else log.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:  # a lone surrogate that stands for no byte: shown as U+FFFD
            data = log.encode("utf-8", "replace")
    else:
        raise BadRequest("invalid log %r: give its text (str or bytes) or a path" % (type(log).__name__,))
    out = ctypes.c_void_p()
    err = ctypes.create_string_buffer(_lib.ERRBUF)
    rc = _lib.explain_text(data, len(data), src, ctypes.byref(out), err, len(err))
    from .errors import check
    check(rc, err.value)
    return json.loads(_lib.take_string(out.value))


def _option_words(what: str, options: Any, kw: Dict[str, Any]) -> List[bytes]:
    """"--name" / "--name=value" words from option strings and keywords (True: a flag; underscores: dashes)"""
    args = []
    for o in options:
        if isinstance(o, bool) or not isinstance(o, (str, int, float)):
            raise BadRequest("invalid %s option %r: a string, as the command line has it ('--model')" % (what, o))
        args.append(str(o))
    for k, v in kw.items():
        opt = "--" + k.replace("_", "-")
        if v is True:
            args.append(opt)
        elif v is False or v is None:
            continue
        elif not isinstance(v, (str, int, float)):
            raise BadRequest("invalid %s %s=%r: a string or a number" % (what, k, v))
        else:
            args.append("%s=%s" % (opt, v))
    enc = []
    for a in args:
        try:
            b = a.encode("utf-8")
        except UnicodeEncodeError as e:
            raise BadRequest("invalid %s option %r: not valid text (%s); give a UTF-8 string"
                             % (what, a, e.reason)) from None
        if b"\0" in b:
            raise BadRequest("invalid %s option %r: a NUL character" % (what, a))
        enc.append(b)
    return enc


def run(cmd: List[str], n: int = 1, *options: str, ctx: Optional[Context] = None, **kw: Any) -> Dict[str, Any]:
    """Run cmd (a list of words, no shell) as `gpuctl run` runs it: the same job core.

    Leases n GPUs, runs the command with CUDA_VISIBLE_DEVICES set, explains a
    failure and retries it as --retry-on says, releases. Options as
    `gpuctl run` takes them, or as keywords::

        gpuctl.run(["python", "train.py"], 2, wait="10m", retry_on="nccl-timeout", max_restarts=2)
        gpuctl.run(["python", "train.py"], 1, "--model=A100", "--bigger", retry_on="oom-too-big")

    The command's output is this process's; what gpuctl run would say on
    stderr (a retry, a failure's findings) goes to sys.stderr. Returns
    {"exit_code", "ran", "retries", "class", "attempts": [{"gpus", "ran",
    "exit_code", "class", "retry"}]} whatever the command's status; raises
    Busy when the GPUs are not free now (without wait), Timeout, BadRequest
    for an option gpuctl run would refuse."""
    import ctypes
    import json
    import sys
    if isinstance(cmd, (str, bytes)) or not cmd or not all(isinstance(w, str) for w in cmd):
        raise BadRequest("invalid cmd %r: a list of words (strings), the command and its arguments" % (cmd,))
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise BadRequest("invalid n %r: a whole number of GPUs, at least 1" % (n,))
    words = [b"--n=%d" % n] + _option_words("run", options, kw)
    enc = []
    for w in cmd:
        b = _core._utf8(w, "command word")
        if b"\0" in b:
            raise BadRequest("invalid command word %r: a NUL character" % (w,))
        enc.append(b)
    opts = (ctypes.c_char_p * (len(words) + 1))(*words, None)
    argv = (ctypes.c_char_p * (len(enc) + 1))(*enc, None)

    def say(_arg: Any, text: bytes) -> None:
        sys.stderr.write(text.decode("utf-8", "replace"))
        sys.stderr.flush()

    say_fn = _lib.SayFn(say)
    c = ctx if ctx is not None else default_context()
    out = ctypes.c_void_p()
    err = ctypes.create_string_buffer(_lib.ERRBUF)
    sys.stdout.flush()
    sys.stderr.flush()
    rc = _lib.run_json(c._handle(), opts, argv, say_fn, None, ctypes.byref(out), err, len(err))
    from .errors import check
    check(rc, err.value)
    return json.loads(_lib.take_string(out.value))


def advise(*options: str, ctx: Optional[Context] = None, **kw: Any) -> Dict[str, Any]:
    """The cheapest setups that fit a workload, as `gpuctl advise --json` gives them.

    Options as the command takes them, or as keywords::

        gpuctl.advise("--model", "llama-3-8b", "--task", "lora")
        gpuctl.advise(model="llama-3-8b", task="lora", spot=True, tokens="1B")
        gpuctl.advise(model="llama-3-8b", here=True, here_price="1.80")["here"]

    A keyword True is a flag (``spot=True`` is --spot); underscores become
    dashes. ``here`` adds this machine (ctx's GPUs, else the module's
    context) under "here", as ``gpuctl advise --here --json`` does. Raises
    BadRequest for an option the command would refuse."""
    import ctypes
    import json
    enc = _option_words("advise", options, kw)
    argv = (ctypes.c_char_p * (len(enc) + 1))(*enc, None)
    out = ctypes.c_void_p()
    err = ctypes.create_string_buffer(_lib.ERRBUF)
    here = any(w == b"--here" or w.startswith(b"--here-price") for w in enc)
    if here:
        c = ctx if ctx is not None else default_context()
        rc = _lib.advise_here_json(c._handle(), argv, ctypes.byref(out), err, len(err))
    else:
        rc = _lib.advise_json(argv, ctypes.byref(out), err, len(err))
    from .errors import check
    check(rc, err.value)
    return json.loads(_lib.take_string(out.value))


_LAZY = ("Checkpointer", "torch", "tensorflow")


def __dir__() -> List[str]:
    # what __getattr__ loads on first use too, so that dir(gpuctl) and help(gpuctl) show it
    return sorted(set(globals()) | set(_LAZY))


def __getattr__(name: str) -> Any:
    # the checkpointer and the framework helpers load on first use: `import gpuctl` stays small
    if name == "Checkpointer":
        from .ckpt import Checkpointer
        return Checkpointer
    if name in ("torch", "tensorflow"):
        import importlib
        return importlib.import_module("." + name, __name__)
    raise AttributeError("module 'gpuctl' has no attribute %r" % name)

