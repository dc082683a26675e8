#!/usr/bin/env python3
"""gpuctl advise reads SkyPilot's own catalogs (issue 23): CLOUD/vms.csv under
--catalog-dir, else ~/.sky/catalogs/v8, in preference to the shipped
snapshot, cloud by cloud, and says which it used and how old it is. The test
writes v7 and v8 files in SkyPilot's layout (a GpuInfo cell holding a quoted
dict with commas, v8's Arch column, one row per availability zone): they load
by header name, zones fold into one row per region (the lowest on-demand
price, the cheapest spot zone named), a missing column is a one-line error,
an old file gets a warning, and SkyPilot's GCP file (GPUs priced apart from
their machines) has each GPU priced with the host SkyPilot would give it.

Usage: catalogs.py GPUCTL
"""
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import harness  # noqa: E402
from harness import check  # noqa: E402


V8_AWS = """InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region,AvailabilityZone,Arch
m7i.large,,,2.0,8.0,,0.1008,0.0401,us-east-1,use1-az1,x86_64
g6.2xlarge,L4,1.0,8.0,32.0,"{'Gpus': [{'Name': 'L4', 'Manufacturer': 'NVIDIA', 'Count': 1, 'MemoryInfo': {'SizeInMiB': 22888}}], 'TotalGpuMemoryInMiB': 22888}",0.9776,0.5772,us-east-1,use1-az1,x86_64
g6.2xlarge,L4,1.0,8.0,32.0,"{'Gpus': [{'Name': 'L4', 'Manufacturer': 'NVIDIA', 'Count': 1, 'MemoryInfo': {'SizeInMiB': 22888}}], 'TotalGpuMemoryInMiB': 22888}",0.9776,0.3102,us-east-1,use1-az4,x86_64
g6.2xlarge,L4,1.0,8.0,32.0,,0.9776,,us-east-1,use1-az6,x86_64
g6.2xlarge,L4,1.0,8.0,32.0,,0.9977,0.2999,us-west-2,usw2-az2,x86_64
"""
V7_AWS = """InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region,AvailabilityZone
g6.4xlarge,L4,1.0,16.0,64.0,"{'Gpus': [{'Name': 'L4', 'Count': 1}]}",1.3232,0.61,us-east-1,use1-az1
g6.4xlarge,L4,1.0,16.0,64.0,"{'Gpus': [{'Name': 'L4', 'Count': 1}]}",1.3232,0.52,us-east-1,use1-az2
"""
# SkyPilot's GCP layout: GPUs on rows of their own (no InstanceType), machines apart, one row per zone
V8_GCP = """InstanceType,vCPUs,MemoryGiB,AcceleratorName,AcceleratorCount,GpuInfo,Region,AvailabilityZone,Price,SpotPrice
g2-standard-4,4.0,16.0,,,,us-central1,us-central1-a,0.3,0.1
g2-standard-8,8.0,32.0,,,,us-central1,us-central1-a,0.45,0.15
g2-standard-4,4.0,16.0,,,,us-central1,us-central1-b,0.3,0.12
,,,L4,1,L4,us-central1,us-central1-a,0.56,0.2
,,,L4,1,L4,us-central1,us-central1-b,0.56,0.15
n1-standard-4,4.0,15.0,,,,us-central1,us-central1-a,0.19,0.04
n1-highmem-4,4.0,26.0,,,,us-central1,us-central1-a,0.236,0.05
n1-standard-8,8.0,30.0,,,,us-central1,us-central1-a,0.38,0.08
,,,T4,1,T4,us-central1,us-central1-a,0.35,0.14
,,,A100,1,A100,us-central1,us-central1-c,2.93,1.1
"""


def advise(gpuctl, args, home):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUCTL_") or k == "GPUCTL_AUTHORITY_DIR"}
    env["HOME"] = home
    return subprocess.run([gpuctl, "advise", "--model", "llama-2-7b", "--precision", "int4", "--batch", "1",
                           *args], capture_output=True, text=True, timeout=60, env=env)


def write(path, text, age_days=0):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    if age_days:
        t = time.time() - age_days * 86400
        os.utime(path, (t, t))


def main():
    gpuctl = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        home = os.path.join(tmp, "home")
        os.mkdir(home)
        # --catalog-dir with a v8 AWS file: its rows replace the snapshot's AWS rows, zones folded
        d8 = os.path.join(tmp, "v8")
        write(os.path.join(d8, "aws", "vms.csv"), V8_AWS)
        p = advise(gpuctl, ["--catalog-dir", d8, "--clouds", "aws", "--top", "9", "--json"], home)
        check("v8: exit %d %s" % (p.returncode, p.stderr), p.returncode == 0)
        doc = json.loads(p.stdout or "{}")
        plans = [(q["instance"], q["region"], q["price_per_hour"], q["spot_price_per_hour"], q["spot_zone"])
                 for q in doc.get("plans", [])]
        check("v8 plans (one per region, cheapest spot zone): %s" % plans,
              sorted(plans) == [("g6.2xlarge", "us-east-1", 0.9776, 0.3102, "use1-az4"),
                                ("g6.2xlarge", "us-west-2", 0.9977, 0.2999, "usw2-az2")])
        srcs = {c["cloud"]: c for c in doc.get("catalogs", [])}
        check("catalogs in JSON: %s" % srcs,
              srcs.get("aws", {}).get("source") == "skypilot" and srcs["aws"]["path"].endswith("aws/vms.csv") and
              srcs["aws"]["age_hours"] is not None and srcs["aws"]["age_hours"] < 1 and
              srcs.get("gcp", {}).get("source") == "snapshot")
        p = advise(gpuctl, ["--catalog-dir", d8, "--top", "2"], home)
        line = [l for l in p.stdout.splitlines() if l.startswith("prices:")]
        check("the prices line does not say which catalog: %s" % line,
              line and ("aws: SkyPilot's catalog %s/aws/vms.csv, under an hour old; gcp, azure: snapshot of" % d8)
              in line[0])
        # ~/.sky/catalogs/v8 by default; a v7 file (no Arch) loads by header name; an old one is warned about
        write(os.path.join(home, ".sky", "catalogs", "v8", "aws", "vms.csv"), V7_AWS, age_days=10)
        p = advise(gpuctl, ["--clouds", "aws", "--top", "3"], home)
        check("~/.sky v7 catalog not used in place of the snapshot: %s" % p.stdout,
              p.returncode == 0 and "g6.4xlarge" in p.stdout and "p5.48xlarge" not in p.stdout)
        check("no age warning: %s" % p.stdout, "warning: SkyPilot's aws catalog is 10 days old" in p.stdout)
        check("the prices line without the age: %s" % p.stdout,
              "aws: SkyPilot's catalog %s/.sky/catalogs/v8/aws/vms.csv, 10 days old" % home in p.stdout)
        p = advise(gpuctl, ["--clouds", "aws", "--top", "1", "--json", "--spot"], home)
        q = json.loads(p.stdout)["plans"][0]
        check("v7 spot: %s" % q, q["spot_price_per_hour"] == 0.52 and q["spot_zone"] == "use1-az2")
        # SkyPilot's GCP file: each GPU priced with its host in its zone, as SkyPilot does
        # (data/sky-gcp-hosts.csv): L4 on the cheapest G2 machine, T4 on the cheapest n1 with
        # 4 vCPUs and 16 GiB (not n1-standard-4's 15), an A100 with no A2 machine in its zone left out
        write(os.path.join(d8, "gcp", "vms.csv"), V8_GCP)
        p = advise(gpuctl, ["--catalog-dir", d8, "--clouds", "gcp", "--top", "20", "--json", "--spot"], home)
        plans = {q["instance"]: q for q in json.loads(p.stdout)["plans"]}
        l4, t4 = plans.get("g2-standard-4"), plans.get("n1-highmem-4")
        check("GCP plans: %s" % sorted(plans), set(plans) == {"g2-standard-4", "n1-highmem-4"})
        check("L4 on g2-standard-4: %s" % l4,
              l4 and abs(l4["price_per_hour"] - 0.86) < 1e-9 and abs(l4["spot_price_per_hour"] - 0.27) < 1e-9 and
              l4["spot_zone"] == "us-central1-b")
        check("T4 on n1-highmem-4: %s" % t4,
              t4 and abs(t4["price_per_hour"] - 0.586) < 1e-9 and abs(t4["spot_price_per_hour"] - 0.19) < 1e-9)
        p = advise(gpuctl, ["--catalog-dir", d8, "--top", "1"], home)
        check("GCP's live catalog not said: %s" % p.stdout, "gcp: SkyPilot's catalog %s/gcp/vms.csv" % d8 in p.stdout)
        # errors: a missing column, a directory that is not there
        bad = os.path.join(tmp, "bad")
        write(os.path.join(bad, "azure", "vms.csv"), V8_AWS.replace("Region,", "Place,", 1))
        p = advise(gpuctl, ["--catalog-dir", bad], home)
        check("missing column: %d %r" % (p.returncode, p.stderr),
              p.returncode == 2 and "the header has no 'Region' column" in p.stderr and
              p.stderr.count("\n") == 1 and not p.stdout)
        p = advise(gpuctl, ["--catalog-dir", os.path.join(tmp, "nowhere")], home)
        check("missing dir: %d %r" % (p.returncode, p.stderr),
              p.returncode == 2 and "invalid --catalog-dir" in p.stderr and p.stderr.count("\n") == 1)
        # --catalog FILE still wins over both
        p = advise(gpuctl, ["--catalog", os.path.join(d8, "aws", "vms.csv"), "--top", "1", "--json"], home)
        check("--catalog: catalogs %s" % p.stdout[-200:], json.loads(p.stdout).get("catalogs") == [])
    harness.finish("ok")


if __name__ == "__main__":
    main()
