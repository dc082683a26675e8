#!/usr/bin/env python3
"""Embed a file in the binary as a C array: embed.py INPUT OUTPUT.c SYMBOL.
Defines `const char SYMBOL[]` (NUL-terminated) and `const size_t SYMBOL_len`."""
import sys

src, out, sym = sys.argv[1], sys.argv[2], sys.argv[3]
data = open(src, "rb").read()
with open(out, "w") as f:
    f.write(f"/* generated from {src.split('/')[-1]} by daemon/embed.py: do not edit */\n")
    f.write("#include <stddef.h>\n")
    f.write(f"extern const char {sym}[];\nextern const size_t {sym}_len;\n")
    f.write(f"const char {sym}[] = {{\n")
    for i in range(0, len(data), 16):
        f.write("\t" + "".join(f"{b},"for b in data[i:i + 16]) + "\n")
    f.write("\t0\n};\n")
    f.write(f"const size_t {sym}_len = {len(data)};\n")
