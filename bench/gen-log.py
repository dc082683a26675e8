#!/usr/bin/env python3
"""Write a training log of MEGABYTES MB of realistic noise (tqdm bars, INFO
lines, NCCL INFO lines, harmless lines that mention CUDA) to stdout, with the
lines of INSERT (a file; optional) placed at the start, the middle and the
end. Deterministic. Usage: gen-log.py MEGABYTES [INSERT]"""
import random
import sys

TEMPLATES = [
    "Epoch {e}: {p}%|{bar}| {i}/10000 [00:{s:02d}<00:{t:02d}, {r:.2f}it/s, loss={l:.4f}]",
    "INFO 2026-11-22 07:{m:02d}:{s:02d} trainer.py:{ln}] step {i} loss {l:.4f} lr 3.0e-4 grad_norm {g:.3f}",
    "[rank{k}]:I1122 07:{m:02d}:{s:02d} ProcessGroupNCCL.cpp:{ln}] NCCL INFO comm 0x{h:x} rank {k} nranks 8 cudaDev {k} busId {h:x} - Init COMPLETE",
    "INFO CUDA available: True, device count: 8, cudnn enabled: True, memory reserved {t} MiB",
    "WARNING dataloader worker {k} slow batch: {t} ms",
]


def main():
    mb = float(sys.argv[1])
    insert = open(sys.argv[2], "rb").read().splitlines(keepends=True) if len(sys.argv) > 2 else []
    rnd = random.Random(42)
    out = sys.stdout.buffer
    target = int(mb * 1024 * 1024)
    size = 0
    marks = {0, target // 2, target - 4096}
    for line in insert:
        out.write(line)
    while size < target:
        t = rnd.choice(TEMPLATES).format(
            e=rnd.randint(1, 9), p=rnd.randint(0, 99), bar="#" * rnd.randint(1, 20), i=rnd.randint(1, 9999),
            s=rnd.randint(0, 59), t=rnd.randint(0, 999), r=rnd.random() * 10, l=rnd.random(),
            m=rnd.randint(0, 59), ln=rnd.randint(1, 999), k=rnd.randint(0, 7), h=rnd.randint(0, 2 ** 32),
            g=rnd.random()).encode() + b"\n"
        out.write(t)
        before, size = size, size + len(t)
        for mk in list(marks):
            if before <= mk < size and mk:
                marks.discard(mk)
                for line in insert:
                    out.write(line)


if __name__ == "__main__":
    main()
