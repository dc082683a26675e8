#!/usr/bin/env python3
"""The Python package (python/gpuctl, issue 19) on a simulated node, against
the gpuctl command it must agree with: devices() has the values of `gpuctl
ls --json`; select() picks what `gpuctl pick` picks; lease() holds the
leases `gpuctl run` respects (and the reverse), sets and restores
CUDA_VISIBLE_DEVICES, waits in line, times out, stops on
KeyboardInterrupt, refuses when CUDA is already initialised; bad input is
a BadRequest naming it (also integers past what the library's fields hold,
and text that is not UTF-8); a missing libgpuctl, or a library without
libgpuctl's functions, is one ImportError; dir() and help() show the lazy
Checkpointer; the
Checkpointer agrees with `gpuctl ckpt`, stops on SIGTERM and on a spot
notice from the mock metadata server; explain() and advise() return what
--json prints; gpuctl.tensorflow against a fake TensorFlow.

Usage: test_gpuctl.py GPUCTL SRCDIR  (LD_LIBRARY_PATH names the build's lib/,
PYTHONPATH the source's python/, GPUCTL_SIM_LIBDIR the simulator: meson sets them)
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

GPUCTL = os.path.realpath(sys.argv.pop(1))
SRC = os.path.realpath(sys.argv.pop(1))
NODE = os.path.join(SRC, "examples", "nodes", "l4-2x.json")  # GPU 0 free, GPU 1 used by frank
NODE8 = os.path.join(SRC, "tests", "cli", "nodes", "idle-8x.json")  # 8 idle GPUs: a fresh lease gets GPU 0
STATE = tempfile.mkdtemp(prefix="gpuctl-py-")
os.environ["GPUCTL_STATE_DIR"] = STATE
os.environ.pop("CUDA_VISIBLE_DEVICES", None)
os.environ.pop("GPUCTL_GPUS", None)
# a HOME of its own: the user's ~/.sky/catalogs would change what advise() says (issue 32)
os.environ["HOME"] = os.path.join(STATE, "home")
os.environ.pop("XDG_CONFIG_HOME", None)

import gpuctl  # noqa: E402

CTX = gpuctl.open(sim=NODE)


def cli(*args, check=True, **kw):
    r = subprocess.run([GPUCTL, "--sim", NODE] + list(args), capture_output=True, text=True, timeout=60, **kw)
    if check and r.returncode != 0:
        raise AssertionError("gpuctl %s: exit %d: %s" % (" ".join(args), r.returncode, r.stderr))
    return r


def cli8(*args):
    """gpuctl on the 8-GPU node, its children with GPUCTL_SIM naming it too"""
    r = subprocess.run([GPUCTL, "--sim", NODE8] + list(args), capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, GPUCTL_SIM=NODE8))
    if r.returncode != 0:
        raise AssertionError("gpuctl %s: exit %d: %s" % (" ".join(args), r.returncode, r.stderr))
    return r


def cli_outsider(*args):
    """gpuctl run by a process that is no descendant of this one (setsid -f: its parent exits),
    with no CUDA_VISIBLE_DEVICES: a lease of ours is someone else's to it"""
    d = tempfile.mkdtemp(dir=STATE)
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER")}
    cmd = "exec >'%s/out' 2>'%s/err'; '%s' --sim '%s' %s; echo $? >'%s/rc.tmp'; mv '%s/rc.tmp' '%s/rc'" % (
        d, d, GPUCTL, NODE, " ".join("'%s'" % a for a in args), d, d, d)
    subprocess.run(["setsid", "-f", "sh", "-c", cmd], env=env, check=True, timeout=60)
    deadline = time.monotonic() + 60
    while not os.path.exists(d + "/rc"):
        if time.monotonic() > deadline:
            raise AssertionError("gpuctl %s did not end" % " ".join(args))
        time.sleep(0.05)
    with open(d + "/rc") as f, open(d + "/out") as o, open(d + "/err") as e:
        return int(f.read()), o.read(), e.read()


class Holder:
    """`gpuctl run --gpus G -- sleep` holding a GPU, ready once its lease exists."""

    def __init__(self, gpu="0", name="holder"):
        self.p = subprocess.Popen([GPUCTL, "--sim", NODE, "run", "--gpus", gpu, "--name", name, "--", "sh", "-c",
                                   "echo up; exec sleep 60"], stdout=subprocess.PIPE, text=True)
        assert self.p.stdout.readline().strip() == "up"

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
        self.p.wait(10)


def drop_volatile(g):
    """a GPU's JSON without what the simulator changes from one sample to the next"""
    g = json.loads(json.dumps(g))
    for k in ("temperature", "energy_mj", "utilization", "power", "clocks", "clock_event_reasons", "fan_speed",
              "pstate"):
        g.pop(k, None)
    return g


class See(unittest.TestCase):
    def test_devices_are_ls_json(self):
        ls = json.loads(cli("ls", "--json").stdout)
        devs = CTX.devices()
        self.assertEqual(len(devs), len(ls["gpus"]))
        for d, g in zip(devs, ls["gpus"]):
            self.assertEqual(sorted(d.data), sorted(g))
            self.assertEqual(drop_volatile(d.data), drop_volatile(g))
            self.assertEqual(d.memory_total, g["memory"]["total"])
            self.assertEqual(d.uuid, g["uuid"])
        # NVML has no fan on an L4: None, never 0
        self.assertIsNone(devs[0].data["fan_speed"])
        self.assertEqual([p.user for p in devs[1].processes], ["frank", "frank"])
        self.assertEqual(devs[1].processes[0].command, "python train_resnet.py --epochs 90")
        self.assertIsNone(devs[1].processes[1].used_memory)
        self.assertEqual([p.sm_util for p in devs[1].processes], [95, 0])

    def test_snapshot_is_one_sample(self):
        s = CTX.snapshot()
        self.assertEqual(len(s), 2)
        self.assertEqual(s.data["schema"], "gpuctl.snapshot/1")
        self.assertEqual(s.driver["version"], json.loads(cli("ls", "--json").stdout)["driver"]["version"])
        self.assertEqual([d.index for d in s], [0, 1])

    def test_module_functions_use_gpuctl_sim(self):
        r = subprocess.run([sys.executable, "-c", "import gpuctl; print([d.name for d in gpuctl.devices()])"],
                           env=dict(os.environ, GPUCTL_SIM=NODE), capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), "['NVIDIA L4', 'NVIDIA L4']")

    def test_another_node_in_this_process_is_refused(self):
        with self.assertRaises(gpuctl.BadRequest) as e:
            gpuctl.open(sim=os.path.join(SRC, "examples", "nodes", "t4-1x.json"))
        self.assertIn("node", str(e.exception))

    def test_no_driver_is_noDriver(self):
        code = ("import gpuctl\ntry:\n    gpuctl.open(library='/nonexistent/libnvidia-ml.so.1')\n"
                "except gpuctl.NoDriver as e:\n    print('NoDriver', e)\n")
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.startswith("NoDriver "), r.stdout)
        self.assertIn("gpuctl.open(sim=", r.stdout)

    def test_missing_library_is_one_import_error(self):
        r = subprocess.run([sys.executable, "-c", "import gpuctl"], capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, GPUCTL_LIBRARY="/nonexistent/libgpuctl.so.0"))
        self.assertNotEqual(r.returncode, 0)
        last = r.stderr.strip().splitlines()[-1]
        self.assertTrue(last.startswith("ImportError: gpuctl: cannot load"), last)
        self.assertIn("install gpuctl", last)
        self.assertNotIn("ctypes", r.stderr.split("ImportError")[0].splitlines()[-1])

    def test_another_library_is_one_import_error(self):
        # GPUCTL_LIBRARY naming a library that loads but is no libgpuctl (or an older one): which
        # file, which function it lacks, and what to do; not ctypes' AttributeError
        r = subprocess.run([sys.executable, "-c", "import gpuctl"], capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, GPUCTL_LIBRARY="libc.so.6"))
        self.assertNotEqual(r.returncode, 0)
        last = r.stderr.strip().splitlines()[-1]
        self.assertTrue(last.startswith("ImportError: gpuctl: libc.so.6 has no gc_strerror()"), last)
        self.assertIn("not the libgpuctl this package needs", last)
        self.assertIn("older libgpuctl", last)
        self.assertIn("GPUCTL_LIBRARY", last)
        self.assertNotIn("AttributeError", r.stderr)

    def test_dir_and_help_show_the_lazy_names(self):
        code = ("import sys, pydoc, gpuctl\n"
                "print('Checkpointer' in dir(gpuctl), 'lease' in dir(gpuctl), 'ckpt' in sys.modules.get('gpuctl.ckpt', 'no'))\n"
                "text = pydoc.render_doc(gpuctl, renderer=pydoc.plaintext)\n"
                "print('class Checkpointer' in text, 'should_stop' in text)\n")
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        # dir() lists it before anything imported gpuctl.ckpt; help() then documents the class
        self.assertEqual(r.stdout.split(), ["True", "True", "False", "True", "True"], r.stdout)


class Pick(unittest.TestCase):
    def test_select_is_pick(self):
        picked = cli("pick", "-n", "1").stdout.strip()
        self.assertEqual([str(d.index) for d in CTX.select(1)], [picked])
        # with --shared, frank's GPU 1 counts too
        self.assertEqual(len(CTX.select(2, shared=True)), 2)
        with self.assertRaises(gpuctl.Busy):
            CTX.select(2)
        self.assertEqual(CTX.select(1, model="*L4")[0].index, 0)
        with self.assertRaises(gpuctl.Busy):
            CTX.select(1, model="H100*")
        with self.assertRaises(gpuctl.Busy):
            CTX.select(1, min_free_mem="30G")

    def test_a_quarantined_gpu_is_given_to_nobody(self):
        # root's mark (or, in a state directory of our own, ours): select and lease leave GPU 0 out
        cli("quarantine", "add", "0", "--reason", "test")
        try:
            with self.assertRaises(gpuctl.Busy):
                CTX.select(1)
            with self.assertRaises(gpuctl.Busy):
                CTX.lease(1)
        finally:
            cli("quarantine", "clear", "0")
        self.assertEqual([d.index for d in CTX.select(1)], [0])

    def test_several_gpus_best_connected_as_pick(self):
        h100 = os.path.join(SRC, "examples", "nodes", "h100-8x-sxm.json")
        want = subprocess.run([GPUCTL, "--sim", h100, "pick", "-n", "2", "--min-free-mem", "40G"],
                              capture_output=True, text=True, timeout=60).stdout.strip()
        # and the simulator is found next to the build's libgpuctl, with no GPUCTL_SIM_LIBDIR
        env = {k: v for k, v in os.environ.items() if k != "GPUCTL_SIM_LIBDIR"}
        r = subprocess.run([sys.executable, "-c", "import gpuctl; print(','.join(str(d.index) for d in "
                            "gpuctl.select(2, min_free_mem='40G')))"], env=dict(env, GPUCTL_SIM=h100),
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), want)
        self.assertEqual(want, "0,1")  # the best connected pair: without the topology, 1 and 6

    def test_bad_requests_name_the_input(self):
        cases = [
            (dict(n=0), "invalid n 0"),
            (dict(n="2"), "invalid n '2'"),
            (dict(n=1, max_util=101), "invalid max_util 101"),
            (dict(n=1, min_free_mem="20"), "a size needs a unit"),
            (dict(n=1, min_free_mem=-1), "invalid min_free_mem -1"),
        ]
        for kw, msg in cases:
            with self.assertRaises(gpuctl.BadRequest, msg=str(kw)) as e:
                CTX.select(**kw)
            self.assertIn(msg, str(e.exception))
        for kw, msg in ((dict(model=5), "invalid model 5"), (dict(name=b"x"), "invalid name b'x'"),
                        (dict(state_dir=7), "invalid state_dir 7")):
            with self.assertRaises(gpuctl.BadRequest, msg=str(kw)) as e:
                CTX.lease(1, **kw)
            self.assertIn(msg, str(e.exception))
        for kw in (dict(sim=3), dict(sim=""), dict(library=["x"])):
            with self.assertRaises(gpuctl.BadRequest, msg=str(kw)):
                gpuctl.open(**kw)
        with self.assertRaises(gpuctl.BadRequest) as e:
            CTX.lease(1, wait=True, timeout="soon")
        self.assertIn("timeout: invalid duration 'soon'", str(e.exception))
        # more GPUs than the node has: never, not "busy"
        with self.assertRaises(gpuctl.BadRequest) as e:
            CTX.lease(3, wait=True, timeout=1)
        self.assertIn("3", str(e.exception))

    def test_integers_past_the_librarys_fields_are_refused(self):
        # n is an unsigned int, min_free_mem a uint64_t, a timeout int64_t ms in the library: a value past
        # them must be refused, not wrapped (2**32+1 GPUs read as 1, 2**64+1 bytes as 1)
        for n in (2 ** 32 + 1, 2 ** 40, 10 ** 30, 4097):
            try:
                with self.assertRaises(gpuctl.BadRequest, msg=str(n)):
                    g = CTX.lease(n, set_env=False)
                    g.release()  # (before the fix: a lease of n mod 2**32 GPUs)
            finally:
                self.assertEqual(cli_outsider("run", "-n", "1", "--", "true")[0], 0)  # nothing left leased
            # (checked before anything is allocated for n GPUs: n = 2**32+1 once asked for 16 GiB here)
            with self.assertRaises(gpuctl.BadRequest, msg=str(n)) as e:
                CTX.select(n)
            self.assertIn("invalid n %d: a whole number of GPUs, from 1 to 4096" % n, str(e.exception))
        # the command's -n takes the same range
        self.assertIn("at most 4096", cli("pick", "-n", "4097", check=False).stderr)
        with self.assertRaises(gpuctl.Busy):
            CTX.select(4096)  # the most a request may ask for: too many for this node, now
        for v in (2 ** 64, 2 ** 64 + 1, 2 ** 70):
            with self.assertRaises(gpuctl.BadRequest, msg=str(v)) as e:
                CTX.select(1, min_free_mem=v)
            self.assertIn("invalid min_free_mem %d: too large (more than 2^64-1 bytes)" % v, str(e.exception))
            with self.assertRaises(gpuctl.BadRequest):
                gpuctl.parse_size(v)
        with self.assertRaises(gpuctl.Busy):
            CTX.select(1, min_free_mem=2 ** 64 - 1)  # the largest: taken as it is, so no GPU has that free
        self.assertEqual(gpuctl.parse_size(2 ** 64 - 1), 2 ** 64 - 1)
        for t in (10 ** 12, 10 ** 30, 1e300):
            with self.assertRaises(gpuctl.BadRequest, msg=str(t)):
                CTX.lease(1, wait=True, timeout=t)
        # a model the command would refuse: empty (not "any"), or longer than any GPU name
        for m in ("", "x" * 96):
            with self.assertRaises(gpuctl.BadRequest, msg=repr(m)) as e:
                CTX.select(1, model=m)
            self.assertIn("1 to 95 bytes", str(e.exception))
            self.assertEqual(cli("pick", "--model", m, check=False).returncode, 2)

    def test_text_that_is_not_utf8_is_a_bad_request(self):
        # a lone surrogate (what os.fsdecode and errors="surrogateescape" make of bytes that are not
        # UTF-8) cannot go to the library as text: BadRequest naming the argument, not UnicodeEncodeError
        for f, what in ((lambda: gpuctl.parse_size("2\udcffG"), "invalid size"),
                        (lambda: gpuctl.parse_duration("1\udcffm"), "invalid timeout"),
                        (lambda: CTX.select(1, min_free_mem="\ud800"), "invalid min_free_mem"),
                        (lambda: CTX.select(1, model="L4\udcff"), "invalid model"),
                        (lambda: CTX.lease(1, name="job\ud800"), "invalid name"),
                        (lambda: CTX.lease(1, wait=True, timeout="\udcff"), "invalid timeout"),
                        (lambda: gpuctl.advise(model="\udcff", task="lora"), "invalid advise option"),
                        (lambda: gpuctl.advise("--model", b"llama-3-8b"), "invalid advise option"),
                        (lambda: gpuctl.advise(model="llama-3-8b\0x", task="lora"), "NUL"),
                        (lambda: gpuctl.explain("text", source="\ud800"), "invalid source"),
                        (lambda: gpuctl.open(sim="\ud800"), "invalid sim")):
            with self.assertRaises(gpuctl.BadRequest, msg=what) as e:
                f()
            self.assertIn(what, str(e.exception))


class LeaseTests(unittest.TestCase):
    def setUp(self):
        self.env = {k: os.environ.get(k) for k in ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER")}

    def tearDown(self):
        for k, v in self.env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        sys.modules.pop("torch", None)

    def test_lease_sets_and_restores_the_environment(self):
        os.environ["CUDA_DEVICE_ORDER"] = "FASTEST_FIRST"
        with CTX.lease(1, name="py-env") as g:
            self.assertEqual(list(g), [0])
            self.assertEqual(g.uuids, [CTX.devices()[0].uuid])
            self.assertEqual(os.environ["CUDA_VISIBLE_DEVICES"], g.visible)
            self.assertEqual(os.environ["CUDA_DEVICE_ORDER"], "PCI_BUS_ID")
            # the command sees the lease: who holds it, and it will not give it away
            leases = cli("leases").stdout
            self.assertIn("py-env", leases)
            rc, _, stderr = cli_outsider("run", "-n", "1", "--", "true")
            self.assertEqual(rc, 1, stderr)
            self.assertIn("GPU 0 is leased by", stderr)
            self.assertIn("job 'py-env'", stderr)
            # our own children run inside it, as under `gpuctl run`
            r = cli("run", "-n", "1", "--", "sh", "-c", "echo $CUDA_VISIBLE_DEVICES")
            self.assertEqual(r.stdout.strip(), g.visible)
        self.assertNotIn("CUDA_VISIBLE_DEVICES", os.environ)
        self.assertEqual(os.environ["CUDA_DEVICE_ORDER"], "FASTEST_FIRST")
        self.assertEqual(cli_outsider("run", "-n", "1", "--", "true")[0], 0)  # free again

    def test_a_cli_lease_is_respected(self):
        h = Holder()
        try:
            with self.assertRaises(gpuctl.Busy) as e:
                CTX.lease(1)
            self.assertIn("GPU 0 is leased by", str(e.exception))
            self.assertIn("job 'holder'", str(e.exception))
            t0 = time.monotonic()
            with self.assertRaises(gpuctl.Timeout):
                CTX.lease(1, wait=True, timeout=0.3)
            self.assertLess(time.monotonic() - t0, 5)
            threading.Timer(0.5, h.stop).start()
            with CTX.lease(1, wait=True, timeout=30) as g:
                self.assertEqual(list(g), [0])
        finally:
            h.stop()

    def test_keyboard_interrupt_stops_the_wait(self):
        h = Holder()
        try:
            threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
            t0 = time.monotonic()
            with self.assertRaises(KeyboardInterrupt):
                CTX.lease(1, wait=True)
            self.assertLess(time.monotonic() - t0, 5)
            # out of line: the queue is empty
            self.assertNotIn("waiting", cli("leases").stdout.lower().replace("waiting for", ""))
        finally:
            h.stop()
        with CTX.lease(1) as g:
            self.assertEqual(list(g), [0])

    def test_cuda_already_initialised_is_refused(self):
        class Cuda:
            @staticmethod
            def is_initialized():
                return True

        class FakeTorch:
            cuda = Cuda()

        sys.modules["torch"] = FakeTorch()
        with self.assertRaises(gpuctl.CudaAlreadyInitialized) as e:
            CTX.lease(1)
        self.assertIn("torch.cuda.is_initialized()", str(e.exception))
        del sys.modules["torch"]
        with CTX.lease(1):  # nothing was left leased
            pass
        # inside a job whose GPUs CUDA already sees, the job's own GPUs are fine
        code = ("import sys, types, os, gpuctl\n"
                "sys.modules['torch'] = types.SimpleNamespace(cuda=types.SimpleNamespace(is_initialized=lambda: True))\n"
                "with gpuctl.lease(1) as g:\n    print(list(g), os.environ['CUDA_VISIBLE_DEVICES'])\n")
        r = cli8("run", "--gpus", "5", "--", sys.executable, "-c", code)
        self.assertEqual(r.stdout.strip(), "[5] 5", r.stderr)

    def test_cuda_already_initialised_is_refused_before_waiting(self):
        # GPU 0 leased by the command, GPU 1 used by frank: a wait would last its whole timeout.
        # With CUDA initialised no lease could be made visible: refused at once, never in line.
        class Cuda:
            @staticmethod
            def is_initialized():
                return True

        h = Holder()
        try:
            sys.modules["torch"] = type("FakeTorch", (), {"cuda": Cuda()})()
            t0 = time.monotonic()
            with self.assertRaises(gpuctl.CudaAlreadyInitialized) as e:
                CTX.lease(1, wait=True, timeout=4)
            self.assertLess(time.monotonic() - t0, 2, "it waited in line before refusing")
            self.assertIn("torch.cuda.is_initialized()", str(e.exception))
            del sys.modules["torch"]
        finally:
            sys.modules.pop("torch", None)
            h.stop()

    def test_inside_a_job_lease_returns_the_jobs_gpus(self):
        # the job has GPU 5 of 8 idle ones: a fresh lease would get GPU 0
        code = ("import gpuctl, os\nwith gpuctl.lease(1) as g:\n"
                "    print(list(g), os.environ['CUDA_VISIBLE_DEVICES'] == g.visible, g.visible)\n")
        r = cli8("run", "--gpus", "5", "--", sys.executable, "-c", code)
        gpus, same, visible = r.stdout.split()
        self.assertEqual((gpus, same), ("[5]", "True"), r.stderr)
        uuid5 = json.loads(cli8("ls", "--json").stdout)["gpus"][5]["uuid"]
        self.assertEqual(visible, uuid5)


class TorchWithCuda(unittest.TestCase):
    """gpuctl.torch.setup_device against tests/python/fake-torch (a PyTorch whose CUDA works,
    which Debian's CPU build cannot show; the CPU-only case is tests/python/ckpt_crash.py's)"""

    def run_fake(self, code, **env):
        e = dict(os.environ, GPUCTL_SIM=NODE, **env)
        e["PYTHONPATH"] = os.path.join(SRC, "tests", "python", "fake-torch") + os.pathsep + os.environ["PYTHONPATH"]
        r = subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def test_leases_before_cuda_starts(self):
        out = self.run_fake("import torch, gpuctl.torch as gt\n"
                            "print(gt.setup_device(0))\nprint(torch.calls)\n"
                            "print(gt._held.visible)\n")
        using, dev, calls, visible = out.strip().splitlines()
        self.assertEqual(using, "gpuctl: using cuda:0, NVIDIA L4, 22.5 GiB")
        self.assertEqual(dev, "cuda:0")
        # CUDA started after the lease, seeing only the leased GPU
        self.assertEqual(eval(calls), [("cuda init", visible), ("set_device", 0)])

    def test_ordinal_past_what_cuda_sees(self):
        out = self.run_fake("import gpuctl, gpuctl.torch as gt\n"
                            "try:\n    gt.setup_device(1, log=None)\nexcept gpuctl.BadRequest as e:\n"
                            "    print(e)\n")
        self.assertIn("GPU ordinal 1 is out of range: CUDA sees 1 device (cuda:0) with CUDA_VISIBLE_DEVICES=GPU-", out)
        self.assertIn("CUDA numbers the visible GPUs from 0", out)

    def test_cuda_already_started(self):
        out = self.run_fake("import torch, gpuctl, gpuctl.torch as gt\ntorch.cuda.device_count()\n"
                            "try:\n    gt.setup_device(0)\nexcept gpuctl.CudaAlreadyInitialized as e:\n"
                            "    print(e)\n")
        self.assertIn("CUDA is already initialised in this process", out)
        self.assertIn("before any other torch.cuda call", out)

    def test_inside_a_job_uses_its_gpus(self):
        code = ("import os, torch, gpuctl.torch as gt\nprint(gt.setup_device(0, log=None), gt._held, "
                "os.environ['CUDA_VISIBLE_DEVICES'])\n")
        e = dict(os.environ, GPUCTL_SIM=NODE)
        e["PYTHONPATH"] = os.path.join(SRC, "tests", "python", "fake-torch") + os.pathsep + os.environ["PYTHONPATH"]
        r = cli("run", "--gpus", "0", "--", sys.executable, "-c", code, env=e)
        self.assertEqual(r.stdout.strip(), "cuda:0 None 0", r.stderr)


class Checkpoints(unittest.TestCase):
    def test_save_load_prune_agree_with_gpuctl_ckpt(self):
        d = tempfile.mkdtemp(dir=STATE)
        with gpuctl.Checkpointer(d, keep=2, spot=None, save=_save, load=_load) as c:
            self.assertIsNone(c.load_latest())
            self.assertIsNone(c.latest())
            for step in range(4):
                c.save({"step": step}, step=step)
            self.assertEqual(c.load_latest(), {"step": 3})
            self.assertEqual(cli("ckpt", "latest", d).stdout.strip(), c.latest())
            self.assertEqual(sorted(e["name"] for e in c.list()), ["ckpt-000000002.pkl", "ckpt-000000003.pkl"])
            # a writer that fails leaves nothing, and the latest stays
            with self.assertRaises(ZeroDivisionError):
                c.save(None, step=9, writer=lambda p: 1 / 0)
            self.assertEqual(c.load_latest(), {"step": 3})
            self.assertFalse([n for n in os.listdir(d) if ".tmp-" in n])
            # a directory written by a framework
            def tree(p):
                os.makedirs(p)
                with open(os.path.join(p, "weights"), "w") as f:
                    f.write("w")
            path = c.save(step=10, writer=tree)
            self.assertTrue(os.path.isdir(path))
            self.assertEqual(cli("ckpt", "latest", d).stdout.strip(), path)

    def test_bad_arguments(self):
        d = tempfile.mkdtemp(dir=STATE)
        with open(os.path.join(d, "file"), "w"):
            pass
        for kw in (dict(keep=0), dict(keep="3"), dict(prefix="../x"), dict(spot="mars"), dict(dir=5),
                   dict(prefix=5), dict(prefix=None), dict(suffix="/x"), dict(suffix=7), dict(spot=5),
                   dict(signals=[99]), dict(signals=[signal.SIGKILL]), dict(signals=["TERM"]), dict(signals=15.0),
                   dict(dir="ck\0x"), dict(dir="")):
            with self.assertRaises(gpuctl.BadRequest, msg=str(kw)):
                gpuctl.Checkpointer(**dict(dict(dir=d, spot=None), **kw))
        self.assertEqual(signal.getsignal(signal.SIGTERM), signal.SIG_DFL)  # nothing installed by a refusal
        with self.assertRaises(gpuctl.FileError) as e:
            gpuctl.Checkpointer(os.path.join(d, "file", "ck"), spot=None)  # under a file: cannot be made
        self.assertIn("cannot make the checkpoint directory", str(e.exception))
        with gpuctl.Checkpointer(d, spot=None, save=_save, load=_load) as c:
            for step in (-1, 1.5, True, 2 ** 63, 10 ** 300):
                with self.assertRaises(gpuctl.BadRequest):
                    c.save({}, step=step)
            self.assertTrue(c.save({}, step=2 ** 63 - 1).endswith("ckpt-%d.pkl" % (2 ** 63 - 1)))
        env = dict(os.environ)
        env.pop("GPUCTL_CHECKPOINT_DIR", None)
        r = subprocess.run([sys.executable, "-c", "import gpuctl; gpuctl.Checkpointer()"], env=env,
                           capture_output=True, text=True, timeout=60)
        self.assertIn("GPUCTL_CHECKPOINT_DIR", r.stderr.strip().splitlines()[-1])

    def test_keep_past_an_unsigned_int_keeps_all(self):
        # keep goes to the library as an unsigned int: 2**32+1 must not be read as 1 (and prune all but one)
        d = tempfile.mkdtemp(dir=STATE)
        with gpuctl.Checkpointer(d, keep=2 ** 32 + 1, spot=None, save=_save, load=_load) as c:
            for step in range(3):
                c.save({"step": step}, step=step)
            self.assertEqual(sorted(e["name"] for e in c.list() if e["complete"]),
                             ["ckpt-%09d.pkl" % i for i in range(3)])

    def test_a_dir_whose_name_is_not_utf8(self):
        # b'ck\xff' as Python has it (os.fsdecode: a surrogate): committed under those bytes, as the command
        # sees them, and nothing half-written; a name that stands for no bytes is refused before anything
        base = tempfile.mkdtemp(dir=STATE)
        d = os.fsdecode(os.fsencode(base) + b"/ck\xff")
        with gpuctl.Checkpointer(d, keep=2, spot=None, save=_save, load=_load) as c:
            for step in range(3):
                path = c.save({"step": step}, step=step)
                self.assertEqual(path, os.path.join(d, "ckpt-%09d.pkl" % step))
                self.assertEqual(c.latest(), path)
            self.assertEqual(c.load_latest(), {"step": 2})
            self.assertEqual([(e["name"], e["complete"]) for e in c.list()],
                             [("ckpt-000000002.pkl", True), ("ckpt-000000001.pkl", True)])
            r = subprocess.run([GPUCTL, "ckpt", "latest", os.fsencode(d)], capture_output=True, timeout=60)
            self.assertEqual(r.stdout.strip(), os.fsencode(path), r.stderr)
        self.assertEqual(sorted(os.listdir(os.fsencode(d))), [b".gpuctl", b"ckpt-000000001.pkl",
                                                              b"ckpt-000000002.pkl", b"latest"])
        with gpuctl.Checkpointer(os.fsencode(d), spot=None, save=_save, load=_load) as c:  # bytes too
            self.assertEqual(c.load_latest(), {"step": 2})
        with self.assertRaises(gpuctl.BadRequest) as e:
            gpuctl.Checkpointer(os.path.join(base, "ck\ud800"), spot=None)
        self.assertIn("invalid dir", str(e.exception))
        self.assertEqual(sorted(os.listdir(base)), [os.path.basename(d)])

    def test_sigterm_sets_should_stop(self):
        d = tempfile.mkdtemp(dir=STATE)
        with gpuctl.Checkpointer(d, spot=None) as c:
            self.assertFalse(c.should_stop)
            os.kill(os.getpid(), signal.SIGTERM)
            self.assertTrue(c.should_stop)
            self.assertEqual(c.why, "SIGTERM")
        self.assertEqual(signal.getsignal(signal.SIGTERM), signal.SIG_DFL)

    def test_spot_notice_sets_should_stop(self):
        mock = subprocess.Popen([sys.executable, os.path.join(SRC, "tests", "mock", "metadata.py"), "0"],
                                stdout=subprocess.PIPE, text=True)
        try:
            port = int(mock.stdout.readline().split()[-1])
            url = "http://127.0.0.1:%d" % port
            os.environ["GPUCTL_METADATA_URL"] = url
            d = tempfile.mkdtemp(dir=STATE)
            with gpuctl.Checkpointer(d, spot="aws") as c:
                self.assertFalse(c.should_stop)
                import urllib.request
                urllib.request.urlopen(urllib.request.Request(url + "/_ctl/preempt?cloud=aws&in=120",
                                                              method="POST"), timeout=10).read()
                deadline = time.monotonic() + 20
                while not c.should_stop and time.monotonic() < deadline:
                    time.sleep(0.1)
                self.assertTrue(c.should_stop)
                self.assertIn("spot notice (aws", c.why)
                self.assertEqual(c.notice["cloud"], "aws")
                c.ack()  # AWS has nothing to approve
        finally:
            os.environ.pop("GPUCTL_METADATA_URL", None)
            mock.terminate()
            mock.wait(10)


def _save(state, path):
    import pickle
    with open(path, "wb") as f:
        pickle.dump(state, f)


def _load(path):
    import pickle
    with open(path, "rb") as f:
        return pickle.load(f)


class Library(unittest.TestCase):
    def test_explain_is_explain_json(self):
        log = os.path.join(SRC, "tests", "cli", "nodes", "oom-no-free.log")
        want = json.loads(subprocess.run([GPUCTL, "explain", "--json", log], capture_output=True, text=True,
                                         timeout=60).stdout)
        got = gpuctl.explain(log)
        self.assertEqual(got, want)
        with open(log) as f:
            text = f.read()
        self.assertEqual(gpuctl.explain(text)["findings"], want["findings"])
        with self.assertRaises(gpuctl.BadRequest):
            gpuctl.explain(42)

    def test_explain_a_path_that_cannot_be_read(self):
        # as `gpuctl explain PATH`: "cannot open 'PATH': No such file or directory", an error, never
        # "no findings" from reading the path as if it were the log
        missing = os.path.join(STATE, "no-such-dir", "train.log")
        want = cli("explain", missing, check=False)
        self.assertEqual(want.returncode, 2)
        self.assertIn("cannot open '%s': No such file or directory" % missing, want.stderr)
        import pathlib
        for log in (pathlib.Path(missing), missing, "typo/path", "run.log"):
            with self.assertRaises(gpuctl.FileError, msg=repr(log)) as e:
                gpuctl.explain(log)
            self.assertIn("cannot open '%s': No such file or directory" % os.fspath(log), str(e.exception))
            self.assertIsInstance(e.exception, OSError)
        with self.assertRaises(gpuctl.FileError) as e:
            gpuctl.explain(pathlib.Path(STATE))
        self.assertIn("it is a directory", str(e.exception))
        self.assertIn("it is a directory", cli("explain", STATE, check=False).stderr)
        # text is still text: one line with blanks, or a word that is no path
        self.assertEqual(gpuctl.explain("Killed")["findings"], gpuctl.explain(b"Killed")["findings"])
        self.assertIsInstance(gpuctl.explain("RuntimeError: see /tmp/x for more")["findings"], list)
        self.assertIsInstance(gpuctl.explain("bad \ud800 text")["findings"], list)

    def test_advise_is_advise_json(self):
        want = json.loads(subprocess.run([GPUCTL, "advise", "--json", "--model", "llama-3-8b", "--task", "lora"],
                                         capture_output=True, text=True, timeout=60).stdout)
        self.assertEqual(gpuctl.advise("--model", "llama-3-8b", "--task", "lora"), want)
        self.assertEqual(gpuctl.advise(model="llama-3-8b", task="lora"), want)
        with self.assertRaises(gpuctl.BadRequest) as e:
            gpuctl.advise(model="llama-3-8b", task="knit")
        self.assertIn("knit", str(e.exception))
        # your own GPUs, no catalog (issue 37): the same answer as the command's, fits or not
        for gpu, fits in (("h100:8", True), ("a100-80gb:2", False)):
            cli_own = json.loads(subprocess.run([GPUCTL, "advise", "--json", "--model", "llama-3-70b", "--task",
                                                 "train-full" if not fits else "lora", "--gpu", gpu],
                                                capture_output=True, text=True, timeout=60).stdout)
            py_own = gpuctl.advise(model="llama-3-70b", task="train-full" if not fits else "lora", gpu=gpu)
            self.assertEqual(py_own, cli_own)
            self.assertEqual(py_own["own_gpus"]["fits"], fits)
            self.assertEqual(py_own["own_gpus"]["count"], int(gpu.split(":")[1]))
            self.assertEqual(len(py_own["plans"]), 1 if fits else 0)
        with self.assertRaises(gpuctl.BadRequest) as e:
            gpuctl.advise(model="llama-3-8b", gpu="rtx9999")
        self.assertIn("rtx9999", str(e.exception))

    def test_advise_here_is_advise_here_json(self):
        """--here on a context: the library's answer for this machine, the one gpuctl advise --here --json gives
        (l4-2x: GPU 0 free; no gpuctld to ask)"""
        env = dict(os.environ, GPUCTL_QUEUE_SOCKET=os.path.join(STATE, "no-gpuctld.sock"))
        os.environ["GPUCTL_QUEUE_SOCKET"] = env["GPUCTL_QUEUE_SOCKET"]
        kinds = []
        try:
            for args in (("--model", "llama-3-8b", "--task", "lora"), ("--model", "llama-3-70b", "--task", "train-full")):
                cli_here = json.loads(subprocess.run([GPUCTL, "--sim", NODE, "advise", "--json", "--here",
                                                      "--here-price", "1.5", *args], env=env, capture_output=True,
                                                     text=True, timeout=60).stdout)["here"]
                py_here = gpuctl.advise(*args, here=True, here_price="1.5", ctx=gpuctl.Context(sim=NODE))["here"]
                self.assertEqual(py_here, cli_here)
                kinds.append(py_here["kind"])
            self.assertEqual(kinds[1:], ["no-fit"])  # (the first: free-now or busy, as this file's leases stand)
        finally:
            del os.environ["GPUCTL_QUEUE_SOCKET"]
        self.assertNotIn("here", gpuctl.advise(model="llama-3-8b", task="lora"))
        # the library without a context refuses --here, in one line
        import ctypes
        from gpuctl import _lib
        argv = (ctypes.c_char_p * 3)(b"--model=llama-3-8b", b"--here", None)
        out, err = ctypes.c_void_p(), ctypes.create_string_buffer(_lib.ERRBUF)
        self.assertNotEqual(_lib.advise_json(argv, ctypes.byref(out), err, len(err)), 0)
        self.assertIn(b"--here needs this machine's GPUs", err.value)
        with self.assertRaises(gpuctl.BadRequest) as e:
            gpuctl.advise(model="llama-3-8b", here_price="cheap", ctx=gpuctl.Context(sim=NODE))
        self.assertIn("invalid --here-price 'cheap'", str(e.exception))


class TensorFlow(unittest.TestCase):
    """gpuctl.tensorflow against tests/python/fake/tensorflow (TF is not in Debian)."""

    def run_fake(self, code):
        env = dict(os.environ, GPUCTL_SIM=NODE,
                   PYTHONPATH=os.path.join(SRC, "tests", "python", "fake") + os.pathsep + os.environ["PYTHONPATH"])
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def test_use_gpus_in_order(self):
        out = self.run_fake(
            "import os, gpuctl.tensorflow as gt, tensorflow as tf\n"
            "gpus = gt.use_gpus(1)\n"
            "print(os.environ['CUDA_VISIBLE_DEVICES'] == gt._held.visible, len(gpus))\n"
            "print(tf.calls)\n")
        first, calls = out.strip().splitlines()
        self.assertEqual(first, "True 1")
        self.assertEqual(eval(calls), [("list_physical_devices", "GPU"), ("set_visible_devices", 1, "GPU"),
                                       ("set_memory_growth", "/physical_device:GPU:0", True)])

    def test_after_runtime_init_is_clear(self):
        out = self.run_fake(
            "import gpuctl, gpuctl.tensorflow as gt, tensorflow as tf\n"
            "tf.config.list_logical_devices('GPU')\n"
            "try:\n    gt.use_gpus(1)\nexcept gpuctl.CudaAlreadyInitialized as e:\n    print('refused:', e)\n")
        self.assertIn("refused:", out)
        self.assertIn("tensorflow", out)

    def test_tf_error_becomes_clear(self):
        out = self.run_fake(
            "import gpuctl, gpuctl.tensorflow as gt, tensorflow as tf\n"
            "tf._hide_init = True\n"
            "tf.config.list_logical_devices('GPU')\n"
            "try:\n    gt.use_gpus(1)\nexcept gpuctl.CudaAlreadyInitialized as e:\n    print('refused:', e)\n")
        self.assertIn("refused: TensorFlow's runtime is already initialised", out)
        self.assertIn("cannot be modified after being initialized", out)


if __name__ == "__main__":
    try:
        unittest.main(verbosity=2)
    finally:
        import shutil
        shutil.rmtree(STATE, ignore_errors=True)
