#!/usr/bin/env python3
"""The error codes' contract (DESIGN.md, convention 2; issue 18, item 4):
  - every GC_E* in include/gpuctl/gpuctl.h is negative, distinct, and not -1,
    so a bare -1 can never pass for one;
  - no public function (gc_*, defined in lib/) returns a bare -1;
  - gc_strerror names every code;
  - no code in lib/ sets the environment, prints, exits or installs a signal
    handler (DESIGN.md, "The library as a product").
Usage: check-errors.py SRCDIR
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import harness  # noqa: E402
from harness import errors  # noqa: E402

SRC = sys.argv[1]
header = open(os.path.join(SRC, "include", "gpuctl", "gpuctl.h")).read()
enum = re.search(r"enum gc_error \{(.*?)\};", header, re.S)
codes = dict((m.group(1), int(m.group(2))) for m in re.finditer(r"\b(GC_E[A-Z]+)\s*=\s*(-?\d+)", enum.group(1)))
if len(codes) < 10:
    errors.append(f"found only {len(codes)} GC_E* codes in gpuctl.h")
for name, v in codes.items():
    if v >= 0 or v == -1:
        errors.append(f"{name} = {v}: a code must be negative and not -1")
if len(set(codes.values())) != len(codes):
    errors.append(f"two GC_E* codes share a value: {codes}")
names = open(os.path.join(SRC, "lib", "device", "names.c")).read()
for name in codes:
    if f"case {name}:" not in names:
        errors.append(f"gc_strerror does not name {name}")

# the body of each gc_* function defined in lib/*/*.c
checked = 0
sources = sorted(os.path.relpath(os.path.join(d, f), os.path.join(SRC, "lib"))
                 for d, _, fs in os.walk(os.path.join(SRC, "lib")) for f in fs if f.endswith((".c", ".h")))
for f in (f for f in sources if f.endswith(".c")):
    text = open(os.path.join(SRC, "lib", f)).read()
    for m in re.finditer(r"^[a-z][\w \*]*?\b(gc_\w+)\([^;{]*\)\s*\{", text, re.M):
        depth, i = 1, m.end()
        while depth and i < len(text):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        body = text[m.end():i]
        checked += 1
        if re.search(r"\breturn\s+-1\s*;", body):
            errors.append(f"lib/{f}: {m.group(1)}() returns a bare -1; return a GC_E* code")
if checked < 10:
    errors.append(f"found only {checked} public functions in lib/: the pattern is broken")
# what a library never does behind its caller's back (comments aside)
forbidden = re.compile(r"\b(setenv|unsetenv|putenv|printf|puts|exit|sigaction|signal)\s*\(|\bfprintf\s*\(\s*std(out|err)")
for f in sources:
    text = re.sub(r"/\*.*?\*/", "", open(os.path.join(SRC, "lib", f)).read(), flags=re.S)
    for lineno, line in enumerate(text.splitlines(), 1):
        m = forbidden.search(line)
        if m:
            errors.append(f"lib/{f}: {m.group(0)} — the library never sets the environment, prints, exits "
                          "or installs a signal handler")
print(f"{len(codes)} error codes, {checked} public functions checked")
harness.finish()
