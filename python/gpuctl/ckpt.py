"""Checkpoints that survive preemption: gpuctl.Checkpointer.

Each save is written under a temporary name, renamed into place, then
committed with libgpuctl's checkpoint protocol (the one `gpuctl ckpt commit`
uses: fsync, a durable marker, then ``latest`` repointed atomically), so a
kill at any moment leaves either the new checkpoint complete or the
previous one as the latest, and load_latest() never sees a torn file.
`gpuctl ckpt latest DIR` and `gpuctl run --restart on-preempt
--checkpoint-dir DIR` see the same checkpoints.
"""

import ctypes
import errno
import os
import pickle
import re
import shutil
import signal
import threading
from typing import Any, Callable, Dict, Iterable, List, Optional

from . import _lib
from .errors import BadRequest, FileError, check, error

Writer = Callable[[str], None]
_CLOUDS = {"aws": 1, "gcp": 2, "azure": 3}  # enum gc_cloud
_NAME_PART = r"[A-Za-z0-9_.+-]*"  # what a prefix and a suffix may hold: names any file system takes
MAX_KEEP = 1000000  # as `gpuctl ckpt prune --keep`: more keeps everything anyway
MAX_STEP = 2 ** 63 - 1


def _torch() -> Any:
    try:
        import torch  # type: ignore
        return torch
    except ImportError:
        return None


def _rank() -> int:
    """This process's rank: torch.distributed's once it is initialised, else $RANK (torchrun), else 0."""
    import sys
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            if torch.distributed.is_available() and torch.distributed.is_initialized():
                return int(torch.distributed.get_rank())
        except Exception:
            pass
    try:
        return int(os.environ.get("RANK", "0"))
    except ValueError:
        return 0


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Checkpointer:
    """A checkpoint directory that survives being killed, and the signal to stop.

    ``ckpt = gpuctl.Checkpointer("ckpt", keep=3)``; then, in the loop::

        state = ckpt.load_latest()              # None at the first start
        ...
        if step % 100 == 0 or ckpt.should_stop:
            ckpt.save({"model": model.state_dict(), "step": step}, step=step)
        if ckpt.should_stop:
            break

    ``dir``: the directory (made if missing; str, bytes or os.PathLike, also a
    name that is not UTF-8); None: $GPUCTL_CHECKPOINT_DIR,
    which `gpuctl run --checkpoint-dir` sets. ``keep``: complete checkpoints
    kept (the newest ``keep``; older ones are pruned after each save).
    ``save``/``load``: the serializer, ``save(state, path)`` and
    ``load(path)``; default torch.save/torch.load when torch can be
    imported, else pickle. ``suffix``: of the entries' names
    (``ckpt-000001000.pt``). ``spot``: watch the cloud's metadata for a
    spot notice in this process: "auto" (the cloud this machine runs on, if
    any), "aws", "gcp", "azure", or None. ``signals``: the signals that ask
    the job to stop (SIGTERM: what `gpuctl run`'s supervisor and Slurm send
    before they kill); handlers are installed only from the main thread.

    Under torchrun, only rank 0 writes and commits; every rank must read
    ``should_stop`` at the same point (it is one all_reduce once
    torch.distributed is initialised), so all ranks stop together.
    """

    def __init__(self, dir: Optional[str] = None, keep: int = 3, *, prefix: str = "ckpt",
                 suffix: Optional[str] = None, save: Optional[Callable[[Any, str], None]] = None,
                 load: Optional[Callable[[str], Any]] = None, spot: Optional[str] = "auto",
                 signals: Iterable[int] = (signal.SIGTERM,)):
        if dir is None:
            dir = os.environ.get("GPUCTL_CHECKPOINT_DIR") or None
            if dir is None:
                raise BadRequest("no checkpoint directory: pass one (Checkpointer('ckpt')), or run under "
                                 "`gpuctl run --checkpoint-dir DIR`, which sets GPUCTL_CHECKPOINT_DIR")
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
            raise BadRequest("invalid keep %r: the number of complete checkpoints to keep, at least 1" % (keep,))
        if (not isinstance(prefix, str) or not re.fullmatch(r"[A-Za-z0-9_]" + _NAME_PART, prefix)
                or len(prefix) > 100):
            raise BadRequest("invalid prefix %r: 1 to 100 letters, digits, '_', '.', '+', '-', starting with a "
                             "letter, a digit or '_'" % (prefix,))
        if suffix is not None and (not isinstance(suffix, str) or not re.fullmatch(_NAME_PART, suffix)
                                   or len(suffix) > 100):
            raise BadRequest("invalid suffix %r: up to 100 letters, digits, '_', '.', '+', '-' ('.pt')" % (suffix,))
        if not isinstance(dir, (str, bytes, os.PathLike)):
            raise BadRequest("invalid dir %r: a directory path (str, bytes or os.PathLike)" % (dir,))
        try:
            # the directory's name as the library gets it: its own bytes, also when they are not UTF-8
            self._bdir = os.fsencode(dir)
        except (UnicodeEncodeError, TypeError):
            raise BadRequest("invalid dir %r: not a file name this system can encode" % (dir,)) from None
        if not self._bdir or b"\0" in self._bdir:
            raise BadRequest("invalid dir %r: an empty path, or one with a NUL byte" % (dir,))
        try:
            sigs = list(signals) if not isinstance(signals, (str, bytes)) else [signals]
        except TypeError:
            sigs = [signals]
        for s in sigs:
            if (isinstance(s, bool) or not isinstance(s, int) or s not in signal.valid_signals()
                    or s in (signal.SIGKILL, signal.SIGSTOP)):
                raise BadRequest("invalid signal %r in signals: a signal number that can be caught, such as "
                                 "signal.SIGTERM" % (s,))
        self.dir = os.fsdecode(self._bdir)
        self.keep = keep
        self.prefix = prefix
        torch = _torch() if save is None or load is None else None
        self._save = save or (torch.save if torch else _pickle_save)
        self._load = load or (torch.load if torch else _pickle_load)
        self.suffix = suffix if suffix is not None else (".pt" if self._save is getattr(torch, "save", None)
                                                         else ".pkl")
        self.rank = _rank()
        self._spot = ctypes.c_void_p()
        self._old: Dict[int, Any] = {}
        self._stop = False
        self._why: Optional[str] = None
        self.notice: Optional[Dict[str, Any]] = None
        self._event = _lib.SpotEvent()
        if spot and (not isinstance(spot, str) or (spot != "auto" and spot not in _CLOUDS)):
            raise BadRequest("invalid spot %r: 'auto', 'aws', 'gcp', 'azure' or None" % (spot,))
        try:
            os.makedirs(self._bdir, exist_ok=True)
        except OSError as e:
            raise FileError("cannot make the checkpoint directory %r: %s" % (self.dir, e.strerror or e),
                            _lib.EIO) from None
        if self.rank == 0:
            self._clean()
        if spot:
            self._start_spot(spot)
        if threading.current_thread() is threading.main_thread():
            for s in sigs:
                self._old[s] = signal.signal(s, self._on_signal)

    # ---- stopping ----------------------------------------------------------

    def _on_signal(self, sig: int, frame: Any) -> None:
        self._stop = True
        if self._why is None:
            self._why = signal.Signals(sig).name

    def _start_spot(self, spot: str) -> None:
        if spot == "auto":
            cloud = _lib.spot_detect()
            if cloud == 0:
                return  # not on a cloud we know: nothing to watch
        else:
            cloud = _CLOUDS[spot]
        if os.environ.get("LOCAL_RANK", "0") != "0":
            return  # one watcher per machine: the others learn it through should_stop
        err = ctypes.create_string_buffer(_lib.ERRBUF)
        check(_lib.spot_start(ctypes.byref(self._spot), cloud, None, err, len(err)), err.value)

    def _poll_spot(self) -> None:
        if not self._spot:
            return
        ev = _lib.SpotEvent()
        while _lib.spot_next(self._spot, ctypes.byref(ev), ctypes.sizeof(ev)) == 1:
            if ev.kind == 0:  # GC_SPOT_PREEMPT: warnings and errors do not stop the job
                ctypes.memmove(ctypes.byref(self._event), ctypes.byref(ev), ctypes.sizeof(ev))
                self.notice = {
                    "cloud": (_lib.cloud_name(ev.cloud) or b"?").decode(),
                    "action": ev.action.decode("utf-8", "replace"),
                    "deadline_ms": ev.deadline_ms or None,
                    "detail": ev.detail.decode("utf-8", "replace"),
                }
                self._stop = True
                if self._why is None:
                    self._why = "spot notice (%s %s)" % (self.notice["cloud"], self.notice["action"])

    @property
    def stop_requested(self) -> bool:
        """This process was asked to stop (a signal, a spot notice); no collective."""
        self._poll_spot()
        return self._stop

    @property
    def why(self) -> Optional[str]:
        """What asked this process to stop ("SIGTERM", "spot notice (aws terminate)"), or None."""
        return self._why

    @property
    def should_stop(self) -> bool:
        """True once the job should checkpoint and exit: SIGTERM (the supervisor, Slurm),
        a spot notice, on any rank. A collective once torch.distributed is initialised:
        every rank reads it at the same point, and all see the same answer."""
        local = self.stop_requested
        import sys
        torch = sys.modules.get("torch")
        if torch is not None:
            try:
                dist = torch.distributed
                if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
                    dev = "cuda" if dist.get_backend() == "nccl" else "cpu"
                    t = torch.tensor([1 if local else 0], dtype=torch.int32, device=dev)
                    dist.all_reduce(t, op=dist.ReduceOp.MAX)
                    if t.item() and not self._stop:
                        self._stop = True
                        self._why = self._why or "another rank was asked to stop"
                    return bool(t.item())
            except (AttributeError, RuntimeError):
                pass
        return local

    def ack(self) -> None:
        """Tell the cloud the job is ready to go (Azure approves its event now; the others need nothing)."""
        if self._spot and self.notice is not None:
            err = ctypes.create_string_buffer(_lib.ERRBUF)
            check(_lib.spot_ack(self._spot, ctypes.byref(self._event), ctypes.sizeof(self._event), err, len(err)),
                  err.value)

    # ---- saving and loading ------------------------------------------------

    def _name(self, step: int) -> str:
        if isinstance(step, bool) or not isinstance(step, int) or not 0 <= step <= MAX_STEP:
            raise BadRequest("invalid step %r: a whole number from 0 to 2^63-1" % (step,))
        return "%s-%09d%s" % (self.prefix, step, self.suffix)

    def _clean(self) -> None:
        """What killed writers left: their temporary files (the writer's pid is gone),
        entries renamed into place but never committed, older than the newest complete one
        (a writer goes on from the newest, so none will ever commit them), and complete
        ones beyond ``keep`` (a writer killed between a commit and its prune)."""
        pat = re.compile(r"\.%s-\d+.*\.tmp-(\d+)$" % re.escape(self.prefix))
        try:
            names = os.listdir(self.dir)
        except OSError:
            return
        for n in names:
            m = pat.match(n)
            if m and not _pid_alive(int(m.group(1))):
                _remove(os.path.join(self.dir, n))
        latest = self.latest()
        step = re.compile(r"%s-(\d+)%s$" % (re.escape(self.prefix), re.escape(self.suffix)))
        m = step.match(os.path.basename(latest)) if latest else None
        if not m:
            return
        for e in self.list():
            o = step.match(e.get("name", ""))
            if o and not e.get("complete") and int(o.group(1)) < int(m.group(1)):
                _remove(os.path.join(self.dir, e["name"]))
        # and complete ones beyond keep: writers killed between a commit and its prune leave them
        err = ctypes.create_string_buffer(_lib.ERRBUF)
        _lib.ckpt_prune(self._bdir, min(self.keep, MAX_KEEP), None, err, len(err))  # a failure shows at save()

    def save(self, state: Any = None, step: int = 0, *, writer: Optional[Writer] = None) -> Optional[str]:
        """Write and commit the checkpoint of ``step``; returns its path (None on ranks other than 0).

        ``state`` is written with the serializer; or ``writer(path)`` writes the
        file or directory at path itself (a framework's own format). Once this
        returns, the checkpoint is durable and the latest; older ones beyond
        ``keep`` are pruned."""
        name = self._name(step)
        if self.rank != 0:
            return None
        final = os.path.join(self.dir, name)
        tmp = os.path.join(self.dir, ".%s.tmp-%d" % (name, os.getpid()))
        bfinal = os.fsencode(final)  # before anything is written: nothing after the rename can fail on a name
        _remove(tmp)
        try:
            if writer is not None:
                writer(tmp)
            else:
                self._save(state, tmp)
            if not os.path.lexists(tmp):
                raise error(_lib.EIO, "the checkpoint writer wrote nothing at %s" % tmp)
            if os.path.isdir(final) and not os.path.islink(final):
                shutil.rmtree(final)  # the same step again: a marker without its entry does not count
            os.replace(tmp, final)
        except BaseException:
            _remove(tmp)
            raise
        err = ctypes.create_string_buffer(_lib.ERRBUF)
        check(_lib.ckpt_commit(self._bdir, bfinal, err, len(err)), err.value)
        check(_lib.ckpt_prune(self._bdir, min(self.keep, MAX_KEEP), None, err, len(err)), err.value)
        return final

    def latest(self) -> Optional[str]:
        """The newest complete checkpoint's path, or None."""
        out = ctypes.create_string_buffer(8192)
        err = ctypes.create_string_buffer(_lib.ERRBUF)
        rc = _lib.ckpt_latest(self._bdir, out, len(out), err, len(err))
        if rc == _lib.ENOTFOUND:
            return None
        check(rc, err.value)
        return os.fsdecode(out.value)

    def load_latest(self, **load_kw: Any) -> Any:
        """The newest complete checkpoint, read with the loader (``load_kw`` go to it:
        ``map_location="cpu"`` for torch.load); None when there is none yet."""
        path = self.latest()
        if path is None:
            return None
        return self._load(path, **load_kw)

    def list(self) -> List[Dict[str, Any]]:
        """Every entry of the directory, complete or not, as `gpuctl ckpt list --json` shows them."""
        import json
        out = ctypes.c_void_p()
        err = ctypes.create_string_buffer(_lib.ERRBUF)
        check(_lib.ckpt_list_json(self._bdir, ctypes.byref(out), err, len(err)), err.value)
        v = json.loads(_lib.take_string(out.value))
        return v.get("entries", v) if isinstance(v, dict) else v

    # ---- the end -----------------------------------------------------------

    def close(self) -> None:
        """Stop the spot watcher and put the signal handlers back."""
        if self._spot:
            _lib.spot_stop(self._spot)
            self._spot = ctypes.c_void_p()
        if threading.current_thread() is threading.main_thread():
            for s, h in self._old.items():
                signal.signal(s, h)
        self._old = {}

    def __enter__(self) -> "Checkpointer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            if self._spot:
                _lib.spot_stop(self._spot)
                self._spot = ctypes.c_void_p()
        except Exception:
            pass


def _pickle_save(state: Any, path: str) -> None:
    with open(path, "wb") as f:
        pickle.dump(state, f, protocol=pickle.HIGHEST_PROTOCOL)


def _pickle_load(path: str) -> Any:
    with open(path, "rb") as f:
        return pickle.load(f)


def _remove(path: str) -> None:
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
    except OSError as e:
        if e.errno != errno.ENOENT:
            raise
