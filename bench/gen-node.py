#!/usr/bin/env python3
"""gen-node.py — print a simulated node with N GPUs (docs/sim.md format).

    python3 bench/gen-node.py 256 > node.json

For benchmarks that need more GPUs than any example node (e.g. 256). The
output is deterministic: the same N always gives the same bytes. GPUs are
H100-like; every third GPU runs a process, every fifth is power-capped, the
rest are idle. Topology: two NUMA nodes, a host bridge per 4 GPUs, a PCIe
switch per pair.
"""
import hashlib
import json
import sys


def uuid_for(i):
    h = hashlib.sha256(b"gpuctl-bench-gpu-%d" % i).hexdigest()[:32]
    return "GPU-%s-%s-%s-%s-%s" % (h[:8], h[8:12], h[12:16], h[16:20], h[20:])


def gpu(i, n):
    busy = i % 3 == 1
    capped = i % 5 == 4
    idle = not busy and not capped
    total = 85520809984
    procs = []
    if busy:
        procs.append({"pid": 5000000 + i, "used_memory": (8 + i % 64) << 30, "type": "compute"})
    half = max(1, (n + 1) // 2)
    return {
        "name": "NVIDIA H100 80GB HBM3",
        "uuid": uuid_for(i),
        "serial": "17%011d" % (i * 7919),
        "vbios_version": "96.00.74.00.01",
        "pci": {"domain": i // 128, "bus": 0x10 + i % 128, "device": 0,
                "device_id": "0x233010DE", "subsystem_id": "0x16C110DE"},
        "memory": {"total": total, "reserved": 501481472, "used": 0 if idle else 536870912},
        "utilization": {"gpu": 0 if idle else 40 + i % 60, "memory": 0 if idle else 10 + i % 50},
        "temperature": 30 + i % 40,
        "fan": None,
        "power": {"draw_mw": 70000 if idle else (699000 if capped else 300000 + 1000 * (i % 300)),
                  "limit_mw": 700000, "enforced_limit_mw": 700000, "default_limit_mw": 700000,
                  "min_limit_mw": 200000, "max_limit_mw": 700000},
        "clocks": {"graphics": 345 if idle else 1755 if capped else 1980,
                   "sm": 345 if idle else 1755 if capped else 1980,
                   "memory": 2619, "video": 765 if idle else 1635,
                   "max_graphics": 1980, "max_sm": 1980, "max_memory": 2619, "max_video": 1965},
        "throttle_reasons": 1 if idle else (4 if capped else 0),
        "supported_throttle_reasons": 511,
        "ecc": {"current": True, "pending": True, "corrected_volatile": 0,
                "uncorrected_volatile": 0, "corrected_aggregate": 0, "uncorrected_aggregate": 0},
        "persistence_mode": True, "compute_mode": 0, "pstate": 0,
        "mig": {"current": False, "pending": False},
        "pcie": {"gen": 5, "max_gen": 5, "width": 16, "max_width": 16},
        "energy_mj": 1000000000 + 12345678 * i,
        "compute_capability": [9, 0],
        "topology": {"numa_node": i // half, "host_bridge": i // 4, "pcie_root": i // 2,
                     "pcie_switch": i // 2},
        "processes": procs,
    }


def main(argv):
    if len(argv) != 2 or not argv[1].isdigit() or not 0 <= int(argv[1]) <= 4096:
        sys.stderr.write("usage: gen-node.py N   (0 <= N <= 4096)\n")
        return 2
    n = int(argv[1])
    node = {
        "name": "bench-%dx" % n,
        "driver": {"version": "550.54.14", "nvml_version": "12.550.54.14",
                   "cuda_version": 12040, "generation": "modern"},
        "gpus": [gpu(i, n) for i in range(n)],
    }
    json.dump(node, sys.stdout, indent=1, sort_keys=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
