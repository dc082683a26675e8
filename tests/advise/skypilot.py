#!/usr/bin/env python3
"""gpuctl advise --emit skypilot and gpuctl launch --sky (issue 23): the task YAML parses, uses only
keys and shapes SkyPilot's schema allows, lists the ranked plans in order,
and its setup and run lines run under bash with a fake gpuctl on PATH, the
command's arguments arriving byte for byte; launch --sky hands that task to
`sky jobs launch` (a fake sky on PATH: its arguments, the file it got) or
prints the exact command with --dry-run; the accelerator names table
covers the shipped catalogs; bad input is refused with exit 2.

The allowed keys are those of skypilot-org/skypilot sky/utils/schemas.py at
commit 00052dfe0d132c5ad6aa9a175572b0695f747c80 (get_task_schema,
_get_single_resources_schema, get_resources_schema, get_storage_schema);
the accelerator names those of skypilot-org/skypilot-catalog
catalogs/v8/common/accelerators.csv at d4d53f0e1e9df6bcab64b96fe032ebbe43a4f0ce.

Usage: skypilot.py GPUCTL SRCDIR. Needs PyYAML (python3-yaml): this Python's,
else /usr/bin/python3's, installed with apt-get when root; else exit 77.
"""
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import harness  # noqa: E402
from harness import check  # noqa: E402

TASK_KEYS = {"name", "workdir", "event_callback", "num_nodes", "resources", "file_mounts", "service", "pool",
             "setup", "run", "envs", "secrets", "managed_secrets", "inputs", "outputs", "file_mounts_mapping",
             "config", "volumes", "volume_mounts", "api_server_access", "_metadata"}
SINGLE_RESOURCES_KEYS = {"cloud", "region", "zone", "infra", "cpus", "memory", "accelerators", "instance_type",
                         "use_spot", "job_recovery", "volumes", "disk_size", "ephemeral_storage", "disk_tier",
                         "network_tier", "local_disk", "max_hourly_cost", "ports", "labels", "accelerator_args",
                         "_no_missing_accel_warnings", "image_id", "autostop", "priority", "priority_class"}
RESOURCES_KEYS = SINGLE_RESOURCES_KEYS | {"any_of", "ordered"}
JOB_RECOVERY_KEYS = {"strategy", "max_restarts_on_errors", "recover_on_exit_codes"}
STORAGE_KEYS = {"name", "source", "store", "persistent", "mode", "mount_options", "type", "config"}
STRATEGIES = {"FAILOVER", "EAGER_NEXT_REGION"}
MODES = {"MOUNT", "COPY", "MOUNT_CACHED"}
ALL_CLOUDS = {"aws", "azure", "gcp", "ibm", "lambda", "scp", "oci", "kubernetes", "runpod", "vast", "vsphere", "cudo",
              "fluidstack", "paperspace", "primeintellect", "do", "nebius", "ssh", "slurm", "hyperbolic", "seeweb",
              "shadeform", "yotta"}
# catalogs/v8/common/accelerators.csv at d4d53f0e (the RTX names at 001ca549): the NVIDIA and AMD names of GPUs
# gpus.csv knows
SKY_ACCELERATORS = {"A10", "A100", "A100-80GB", "A100-80GB-SXM", "A10G", "B200", "H100", "H100-MEGA", "H100-NVL",
                    "H100-NVLINK", "H100-SXM", "H200", "H200-SXM", "L4", "L40", "L40S", "T4", "V100", "V100-32GB",
                    "MI300X", "RTX3090", "RTX4090", "RTX5090", "RTXA5000", "RTXA6000", "A6000", "RTX6000-Ada",
                    "RTX6000Ada"}


def yaml_loader():
    """A function parsing YAML text, from this Python or Debian's."""
    try:
        import yaml
        return yaml.safe_load
    except ImportError:
        pass
    probe = "import yaml"
    if not os.path.exists("/usr/bin/python3") or \
            subprocess.run(["/usr/bin/python3", "-c", probe], capture_output=True).returncode != 0:
        if os.geteuid() != 0 or not shutil.which("apt-get"):
            print("SKIP: PyYAML is missing and we are not root to install python3-yaml")
            sys.exit(77)
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        r = subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", "python3-yaml"],
                           env=env, capture_output=True)
        if r.returncode != 0:
            subprocess.run(["apt-get", "update", "-qq"], env=env, capture_output=True)
            r = subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", "python3-yaml"],
                               env=env, capture_output=True)
        if r.returncode != 0 or subprocess.run(["/usr/bin/python3", "-c", probe]).returncode != 0:
            print("SKIP: apt-get install python3-yaml failed")
            sys.exit(77)

    def load(text):
        p = subprocess.run(["/usr/bin/python3", "-c", "import json, sys, yaml; "
                            "print(json.dumps(yaml.safe_load(sys.stdin.read())))"],
                           input=text, capture_output=True, text=True)
        if p.returncode != 0:
            raise ValueError(p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "yaml failed")
        return json.loads(p.stdout)
    return load


def advise(gpuctl, args, env=None):
    return subprocess.run([gpuctl, "advise", *args], capture_output=True, text=True, timeout=60, env=env)


def check_schema(doc, where):
    check("%s: top-level keys %s not all in SkyPilot's task "
          "schema" % (where, sorted(doc) if isinstance(doc, dict) else doc),
          isinstance(doc, dict) and set(doc) <= TASK_KEYS)
    res = doc.get("resources", {})
    check("%s: resources keys %s" % (where, sorted(res)), set(res) <= RESOURCES_KEYS)
    check("%s: both any_of and ordered" % where, not ("any_of" in res and "ordered" in res))
    check("%s: use_spot %r is not a boolean" % (where, res.get("use_spot")), isinstance(res.get("use_spot"), bool))
    check("%s: disk_size %r is not an integer" % (where, res.get("disk_size")), isinstance(res.get("disk_size"), int))
    jr = res.get("job_recovery", {})
    check("%s: job_recovery %r" % (where, jr),
          set(jr) <= JOB_RECOVERY_KEYS and jr.get("strategy") in STRATEGIES and
          isinstance(jr.get("max_restarts_on_errors"), int) and jr["max_restarts_on_errors"] >= 0)
    items = res.get("ordered", res.get("any_of", []))
    check("%s: no resources list" % where, isinstance(items, list) and items)
    for it in items:
        check("%s: item keys %s" % (where, sorted(it)), set(it) <= SINGLE_RESOURCES_KEYS)
        acc = it.get("accelerators")
        m = re.fullmatch(r"([^:]+):(\d+)", acc) if isinstance(acc, str) else None
        check("%s: accelerators %r not NAME:COUNT with SkyPilot's name" % (where, acc),
              m and m.group(1) in SKY_ACCELERATORS)
        infra = it.get("infra", "")
        check("%s: infra %r not cloud/region of a SkyPilot cloud" % (where, infra),
              isinstance(infra, str) and re.fullmatch(r"[^/]+/[^/]+", infra) and infra.split("/")[0] in ALL_CLOUDS)
        check("%s: instance_type %r" % (where, it.get("instance_type")), isinstance(it.get("instance_type"), str))
    for dst, st in doc.get("file_mounts", {}).items():
        check("%s: file_mounts %r: %r" % (where, dst, st),
              dst.startswith("/") and isinstance(st, dict) and set(st) <= STORAGE_KEYS and st.get("mode") in MODES)
    check("%s: setup/run not strings" % where, isinstance(doc.get("setup"), str) and isinstance(doc.get("run"), str))
    check("%s: name %r" % (where, doc.get("name")), isinstance(doc.get("name"), str))


def run_bash(script, path_dir, tmp, extra_env=None):
    env = {"PATH": path_dir + ":/usr/bin:/bin", "HOME": tmp, "SKYPILOT_NUM_GPUS_PER_NODE": "8",
           "ARGV_OUT": os.path.join(tmp, "argv")}
    env.update(extra_env or {})
    return subprocess.run(["bash", "-c", script], env=env, capture_output=True, timeout=30)


def main():
    gpuctl, src = sys.argv[1], sys.argv[2]
    load = yaml_loader()
    tmp = tempfile.mkdtemp(prefix="gpuctl-sky-")
    # SkyPilot's catalogs in the user's ~/.sky would change what advise ranks: a HOME of its own (issue 32)
    os.environ["HOME"] = os.path.join(tmp, "home")
    os.makedirs(os.environ["HOME"])
    try:
        # the ranked plans, in the order --json ranks them
        base = ["--model", "llama-3-8b", "--task", "qlora", "--spot", "--top", "6"]
        weird = ["python", "train.py", "--lr", "3e-4", "it's", "$(touch pwned)", "a\nb", "\"q\" \\ `x`", "é"]
        p = advise(gpuctl, base + ["--emit", "skypilot", "--checkpoint-bucket", "s3://b/run 1", "--", *weird])
        check("emit: exit %d: %s" % (p.returncode, p.stderr), p.returncode == 0)
        doc = load(p.stdout)
        emit_spot_text = p.stdout
        check_schema(doc, "spot, ordered")
        j = json.loads(advise(gpuctl, base + ["--json"]).stdout)
        want = [("%s/%s" % (q["cloud"], q["region"]), q["instance"], q["gpus_per_node"]) for q in j["plans"]
                if q["nodes"] == 1]
        got = [(it["infra"], it["instance_type"], int(it["accelerators"].split(":")[1]))
               for it in doc["resources"]["ordered"]]
        check("ordered plans %s, --json ranks %s" % (got, want), got == want)
        check("--spot: use_spot not true", doc["resources"]["use_spot"] is True)
        check("file_mounts %r" % doc.get("file_mounts"),
              doc["file_mounts"] == {"/gpuctl-ckpt": {"source": "s3://b/run 1", "mode": "MOUNT"}})
        # the run line under bash with a fake gpuctl: every argument arrives byte for byte
        fake = os.path.join(tmp, "bin")
        os.mkdir(fake)
        with open(os.path.join(fake, "gpuctl"), "w") as f:
            f.write("#!/usr/bin/env python3\nimport os, sys\n"
                    "open(os.environ['ARGV_OUT'], 'wb').write(b'\\0'.join(os.fsencode(a) for a in sys.argv[1:]))\n")
        os.chmod(os.path.join(fake, "gpuctl"), 0o755)
        r = run_bash(doc["run"], fake, tmp)
        check("run line: exit %d: %s" % (r.returncode, r.stderr), r.returncode == 0)
        with open(os.path.join(tmp, "argv"), "rb") as f:
            argv = f.read().split(b"\0")
        # plans of several GPUs, paid for together: `python SCRIPT` runs as torchrun's SCRIPT, one process a GPU
        expect = [b"launch", b"-n", b"8", b"--spot", b"--restart", b"on-preempt", b"--checkpoint-dir", b"/gpuctl-ckpt",
                  b"--"] + [a.encode() for a in weird[1:]]
        check("run line gave gpuctl %r, expected %r" % (argv, expect), argv == expect)
        check("a command substitution in an argument ran", not os.path.exists(os.path.join(tmp, "pwned")))
        # setup: nothing to do when gpuctl is there; the --setup line when it is not; a clear failure otherwise
        r = run_bash(doc["setup"], fake, tmp)
        check("setup with gpuctl on PATH: exit %d" % r.returncode, r.returncode == 0)
        r = run_bash(doc["setup"], os.path.join(tmp, "nothing"), tmp)
        check("setup without gpuctl: %d %r" % (r.returncode, r.stderr),
              r.returncode == 1 and b"not installed" in r.stderr)
        p = advise(gpuctl, base + ["--emit", "skypilot", "--setup", "touch \"$HOME/installed\"", "--launch",
                                   "--checkpoint-dir", "/data/ck", "--name", "my run", "--max-restarts", "0",
                                   "--disk-size", "512", "--any", "--", "train.py"])
        doc2 = load(p.stdout)
        emit2_text = p.stdout
        check_schema(doc2, "any_of, launch")
        check("options not in the YAML: %r" % doc2,
              "any_of" in doc2["resources"] and doc2["name"] == "my run" and doc2["resources"]["disk_size"] == 512
              and doc2["resources"]["job_recovery"]["max_restarts_on_errors"] == 0)
        r = run_bash(doc2["setup"], os.path.join(tmp, "nothing"), tmp)
        check("--setup line did not run", r.returncode == 0 and os.path.exists(os.path.join(tmp, "installed")))
        r = run_bash(doc2["run"], fake, tmp)
        with open(os.path.join(tmp, "argv"), "rb") as f:
            argv = f.read().split(b"\0")
        check("--launch run line gave %r" % argv,
              argv == [b"launch", b"-n", b"8", b"--spot", b"--restart", b"on-preempt", b"--checkpoint-dir",
                       b"/data/ck", b"--", b"train.py"])
        # on-demand, no bucket: use_spot false, restart on failure, the checkpoints on the VM's disk (said)
        p = advise(gpuctl, ["--model", "llama-2-7b", "--top", "3", "--emit", "skypilot", "--", "serve"])
        doc3 = load(p.stdout)
        check_schema(doc3, "on-demand")
        check("on-demand task: %r" % doc3,
              doc3["resources"]["use_spot"] is False and "file_mounts" not in doc3 and
              "lost with it" in p.stdout)
        # training plans of several GPUs: python's script under torchrun (said); a launcher of its own under
        # gpuctl run (said); any other command under gpuctl run, with a note that it gets them all
        check("the several-GPU note on inference", "--launch runs it under torchrun" not in p.stdout)
        several = any(int(it["accelerators"].split(":")[1]) > 1 for it in doc["resources"]["ordered"])
        check("no torchrun note for %s" % [it["accelerators"] for it in doc["resources"]["ordered"]],
              several and "the script runs under torchrun (gpuctl launch)" in emit_spot_text)
        check("the several-GPU note with --launch", "--launch runs it under torchrun" not in emit2_text)
        for cmd, word, note in ((["./train.sh", "--epochs", "3"], b"run", "--launch runs it under torchrun"),
                                (["torchrun", "--nproc_per_node", "8", "t.py"], b"run",
                                 "torchrun starts one process per GPU itself"),
                                (["/usr/bin/python3.11", "t.py"], b"launch", "the script runs under torchrun")):
            q = advise(gpuctl, base + ["--emit", "skypilot", "--", *cmd])
            r = run_bash(load(q.stdout)["run"], fake, tmp)
            with open(os.path.join(tmp, "argv"), "rb") as f:
                got = f.read().split(b"\0")
            tail = [a.encode() for a in (cmd[1:] if word == b"launch" else cmd)]
            check("%s: run line %r, note %r" % (cmd, got, note),
                  got[0] == word and got[got.index(b"--") + 1:] == tail and note in q.stdout)
        r = run_bash(doc3["run"], fake, tmp)
        with open(os.path.join(tmp, "argv"), "rb") as f:
            argv = f.read().split(b"\0")
        check("on-demand run gave %r" % argv,
              argv == [b"run", b"-n", b"8", b"--restart", b"on-failure", b"--checkpoint-dir",
                       os.path.join(tmp, "gpuctl-ckpt").encode(), b"--", b"serve"])
        # GCP's a3-megagpu-8g asks for H100-MEGA, as SkyPilot names it
        p = advise(gpuctl, ["--model", "llama-2-7b", "--clouds", "gcp", "--top", "40", "--emit", "skypilot", "--",
                            "x"])
        accs = [it["accelerators"] for it in load(p.stdout)["resources"]["ordered"]]
        check("no H100-MEGA:8 among %s" % accs, "H100-MEGA:8" in accs)
        # several nodes: num_nodes, the plans of that node count only, gpuctl launch --sky-step on each
        mn = ["--model", "llama-2-70b", "--task", "train-full", "--top", "10"]
        j = json.loads(advise(gpuctl, mn + ["--json"]).stdout)
        k = j["plans"][0]["nodes"]
        p = advise(gpuctl, mn + ["--emit", "skypilot", "--checkpoint-bucket", "gs://b/c", "--", "train.py", "--bf16"])
        doc4 = load(p.stdout)
        check_schema(doc4, "multi-node")
        want = [("%s/%s" % (q["cloud"], q["region"]), q["instance"]) for q in j["plans"] if q["nodes"] == k]
        got = [(it["infra"], it["instance_type"]) for it in doc4["resources"]["ordered"]]
        check("multi-node: num_nodes %r (cheapest %d), plans %s, expected %s" % (doc4.get("num_nodes"), k, got, want),
              k > 1 and doc4.get("num_nodes") == k and got == want)
        left = sum(1 for q in j["plans"] if q["nodes"] != k)
        check("left-out plans not counted (%d)" % left,
              ("Left out: %d plan" % left) in p.stdout if left else "Left out" not in p.stdout)
        r = run_bash(doc4["run"], fake, tmp)
        with open(os.path.join(tmp, "argv"), "rb") as f:
            argv = f.read().split(b"\0")
        check("multi-node run line gave %r" % argv,
              argv == [b"launch", b"--sky-step", b"-n", b"8", b"--checkpoint-dir", b"/gpuctl-ckpt", b"--",
                       b"train.py", b"--bf16"])
        # --sky-step on a node: SkyPilot's environment becomes torchrun's rendezvous
        node = os.path.join(src, "tests", "cli", "nodes", "idle-8x.json")
        env = {k2: v for k2, v in os.environ.items() if not k2.startswith(("GPUCTL_", "SKYPILOT_"))
               or k2 == "GPUCTL_SIM_LIBDIR"}
        env.update({"GPUCTL_STATE_DIR": os.path.join(tmp, "st"), "GPUCTL_SIM_RUNDIR": os.path.join(tmp, "rd")})
        sky_env = dict(env, SKYPILOT_NUM_NODES="3", SKYPILOT_NODE_RANK="2",
                       SKYPILOT_NODE_IPS="10.1.2.3\n10.1.2.4\n10.1.2.5\n", SKYPILOT_TASK_ID="sky-t/1 x")
        p = subprocess.run([gpuctl, "--sim", node, "launch", "--sky-step", "--dry-run", "-n", "8", "--", "train.py"],
                           capture_output=True, text=True, timeout=60, env=sky_env)
        tr = [l for l in p.stdout.splitlines() if "--nnodes" in l]
        check("--sky-step: exit %d, %r" % (p.returncode, tr or p.stderr),
              p.returncode == 0 and tr and all(x in tr[0].split() for x in
              ["--nnodes=3", "--nproc_per_node=8", "--node_rank=2", "--rdzv_endpoint=10.1.2.3:29500",
               "--rdzv_id=sky-t-1-x", "train.py"]))
        for drop, needle in [("SKYPILOT_NUM_NODES", "SKYPILOT_NUM_NODES is not set"),
                             ("SKYPILOT_NODE_IPS", "head node's address")]:
            e2 = dict(sky_env)
            del e2[drop]
            p = subprocess.run([gpuctl, "--sim", node, "launch", "--sky-step", "--dry-run", "-n", "8", "--", "t.py"],
                               capture_output=True, text=True, timeout=60, env=e2)
            check("--sky-step without %s: %d %r" % (drop, p.returncode, p.stderr),
                  p.returncode == 2 and needle in p.stderr)
        # the accelerator table: every catalog name, every GPU
        with open(os.path.join(src, "data", "sky-accelerators.csv")) as f:
            table = list(csv.DictReader(line for line in f if not line.startswith("#")))
        names = {r["skypilot"] for r in table}
        check("names SkyPilot does not have: %s" % sorted(names - SKY_ACCELERATORS), names <= SKY_ACCELERATORS)
        with open(os.path.join(src, "data", "gpus.csv")) as f:
            gpus = {r["name"] for r in csv.DictReader(line for line in f if not line.startswith("#"))}
        check("table GPUs not in gpus.csv: %s" % sorted({r["gpu"] for r in table} - gpus),
              {r["gpu"] for r in table} <= gpus)
        check("GPUs without a SkyPilot name: %s" % sorted(gpus - {r["gpu"] for r in table}),
              gpus <= {r["gpu"] for r in table})
        for cat in sorted(os.listdir(os.path.join(src, "data", "catalog"))):
            with open(os.path.join(src, "data", "catalog", cat)) as f:
                accs = {r["AcceleratorName"] for r in csv.DictReader(line for line in f if not line.startswith("#"))}
            check("%s: accelerator names not in data/sky-accelerators.csv: %s" % (cat, sorted(accs - names)),
                  accs <= names)
        # gpuctl launch --sky: the same task, handed to sky jobs launch (a fake sky on PATH)
        emit = advise(gpuctl, base + ["--emit", "skypilot", "--name", "j1", "--", "python", "t.py"]).stdout
        tf = os.path.join(tmp, "task file.yaml")
        p = subprocess.run([gpuctl, "launch", "--sky", *base, "--name", "j1", "--dry-run", "--task-file", tf, "--",
                            "python", "t.py"], capture_output=True, text=True, timeout=60)
        check("launch --sky --dry-run: exit %d, %r" % (p.returncode, p.stdout[-200:]),
              p.returncode == 0 and p.stdout == emit + "# gpuctl launch --sky runs:\n"
              "sky jobs launch -y -d -n j1 '%s'\n" % tf and not os.path.exists(tf))
        with open(os.path.join(fake, "sky"), "w") as f:
            f.write("#!/usr/bin/env python3\nimport os, sys\n"
                    "open(os.environ['ARGV_OUT'], 'wb').write(b'\\0'.join(os.fsencode(a) for a in sys.argv[1:]))\n"
                    "open(os.environ['ARGV_OUT'] + '.yaml', 'w').write(open(sys.argv[-1]).read())\n"
                    "sys.exit(int(os.environ.get('SKY_EXIT', '0')))\n")
        os.chmod(os.path.join(fake, "sky"), 0o755)
        tmpdir = os.path.join(tmp, "t")
        os.mkdir(tmpdir)
        env = dict(os.environ, PATH=fake + ":" + os.environ["PATH"], ARGV_OUT=os.path.join(tmp, "argv"),
                   TMPDIR=tmpdir)
        for extra, want, sky_exit in [([], [b"jobs", b"launch", b"-y", b"-d", b"-n", b"j1"], "0"),
                                      (["--follow"], [b"jobs", b"launch", b"-y", b"-n", b"j1"], "3")]:
            p = subprocess.run([gpuctl, "launch", "--sky", *base, "--name", "j1", *extra, "--", "python", "t.py"],
                               capture_output=True, text=True, timeout=60, env=dict(env, SKY_EXIT=sky_exit))
            with open(os.path.join(tmp, "argv"), "rb") as f:
                argv = f.read().split(b"\0")
            with open(os.path.join(tmp, "argv.yaml")) as f:
                sent = f.read()
            check("launch --sky %s: exit %d, sky got %r" % (extra, p.returncode, argv),
                  p.returncode == int(sky_exit) and argv[:-1] == want and sent == emit)
            check("launch --sky left %s in TMPDIR" % os.listdir(tmpdir), os.listdir(tmpdir) == [])
            check("sky's failure: %r" % p.stderr, sky_exit == "0" or "sky jobs launch failed (status 3)" in p.stderr)
        p = subprocess.run([gpuctl, "launch", "--sky", *base, "--task-file", tf, "--", "x"], capture_output=True,
                           text=True, timeout=60, env=env)
        check("--task-file: exit %d, file %s" % (p.returncode, os.path.exists(tf)),
              p.returncode == 0 and os.path.exists(tf))
        p = subprocess.run([gpuctl, "launch", "--sky", *base, "--", "x"], capture_output=True, text=True,
                           timeout=60, env=dict(env, PATH="/usr/bin:/bin"))
        check("without sky: exit %d, %r" % (p.returncode, p.stderr),
              p.returncode == 1 and "cannot run sky" in p.stderr)
        for args, needle in [(["--emit", "skypilot"], "--emit is advise's"), (["--json"], "runs the task")]:
            p = subprocess.run([gpuctl, "launch", "--sky", *base, *args, "--", "x"], capture_output=True, text=True,
                               timeout=60, env=env)
            check("launch --sky %s: exit %d %r" % (args, p.returncode, p.stderr),
                  p.returncode == 2 and needle in p.stderr)
        # bad input: exit 2 and one line naming it
        cat = os.path.join(tmp, "catalog.csv")
        with open(cat, "w") as f:
            f.write("InstanceType,AcceleratorName,AcceleratorCount,Price,Region\np5.48xlarge,H100,8,55,us-east-1\n")
        for args, needle in [
                (["--emit", "skypilot"], "needs the job's command"),
                (["--emit", "yaml", "--", "x"], "invalid --emit 'yaml'"),
                (["--any"], "go with --emit skypilot"),
                (["--emit", "skypilot", "--json", "--", "x"], "two outputs"),
                (["--emit", "skypilot", "--checkpoint-bucket", "/tmp/x", "--", "x"], "invalid --checkpoint-bucket"),
                (["--emit", "skypilot", "--checkpoint-dir", "rel", "--", "x"], "invalid --checkpoint-dir"),
                (["--emit", "skypilot", "--max-restarts", "-1", "--", "x"], "invalid --max-restarts"),
                (["--emit", "skypilot", "--disk-size", "0", "--", "x"], "invalid --disk-size"),
                (["--emit", "skypilot", "--name", "n" * 96, "--", "x"], "invalid --name (expected 1 to 95"),
                (["--emit", "skypilot", "--name", "a\x1b[2Jb", "--", "x"], "no control characters"),
                (["--emit", "skypilot", "x"], "x"),
                (["--catalog", cat, "--emit", "skypilot", "--", "x"], "SkyPilot does not know")]:
            p = advise(gpuctl, ["--model", "llama-2-7b"] + args)
            check("%s: exit %d, stderr %r, stdout %d bytes" % (args, p.returncode, p.stderr, len(p.stdout)),
                  p.returncode == 2 and needle in p.stderr and p.stderr.count("\n") == 1 and not p.stdout)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    harness.finish("ok")


if __name__ == "__main__":
    main()
