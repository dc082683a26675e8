#!/usr/bin/env python3
"""contrib/bash-completion/gpuctl in a real bash, as bash-completion calls it
(COMP_WORDS, COMP_CWORD, then COMPREPLY): the verbs of gpuctl's command table
(read here from src/main.c, not from --help), a verb's options from its own
--help (every verb offers some), gpuctld's, files after --sim, and no option
after "--" (the command's own words).
Usage: completion.py GPUCTL GPUCTLD SRCDIR"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import harness  # noqa: E402
from harness import check, errors  # noqa: E402

GPUCTL, GPUCTLD, SRC = (os.path.abspath(a) for a in sys.argv[1:4])
SCRIPT = os.path.join(SRC, "contrib", "bash-completion", "gpuctl")
harness.verbose = True  # "ok   NAME" or "FAIL NAME" as each check is made


def complete(*words):
    """what completing the last of words offers; words[0] is the program"""
    line = " ".join(words)
    script = (f'source "$1"; COMP_WORDS=("${{@:3}}"); COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 )); '
              f'COMP_LINE="$2"; COMP_POINT=${{#COMP_LINE}}; _gpuctl; printf "%s\\n" "${{COMPREPLY[@]}}"')
    r = subprocess.run(["bash", "--norc", "--noprofile", "-c", script, "bash", SCRIPT, line, *words],
                       capture_output=True, text=True, timeout=60, cwd=os.path.join(SRC, "tests", "cli"))
    if r.returncode != 0:
        errors.append(f"bash failed on {words}: {r.stderr}")
    return [w for w in r.stdout.split("\n") if w]


table = re.findall(r'^\s*\{"([a-z-]+)", cmd_', open(os.path.join(SRC, "src", "main.c")).read(), re.M)
# a build without gpuctl top (-Dtui) leaves it out of the table (#if GPUCTL_HAVE_TUI)
if os.environ.get("GPUCTL_TEST_TUI") == "0":
    table.remove("top")
verbs = complete(GPUCTL, "")
check("gpuctl <TAB>: every verb of the command table, none other", sorted(verbs) == sorted(table) and table,
      (verbs, table))
check("gpuctl q<TAB>: the verbs that start so", sorted(complete(GPUCTL, "q")) ==
      sorted(v for v in table if v.startswith("q")), complete(GPUCTL, "q"))
check("gpuctl --s<TAB>: the global --sim", complete(GPUCTL, "--s") == ["--sim"], complete(GPUCTL, "--s"))
check("gpuctl ls --j<TAB>: --json", complete(GPUCTL, "ls", "--j") == ["--json"], complete(GPUCTL, "ls", "--j"))
check("gpuctl --sim FILE ls --no-h<TAB>: --no-header, the verb found past the global option",
      complete(GPUCTL, "--sim", "nodes/idle-8x.json", "ls", "--no-h") == ["--no-header"],
      complete(GPUCTL, "--sim", "nodes/idle-8x.json", "ls", "--no-h"))
check("gpuctl --sim n<TAB>: files", "nodes" in " ".join(complete(GPUCTL, "--sim", "n")),
      complete(GPUCTL, "--sim", "n"))
empty = [v for v in table if not complete(GPUCTL, v, "--") and
         "--" in subprocess.run([GPUCTL, v, "--help"], capture_output=True, text=True, timeout=60).stdout]
check("gpuctl VERB --<TAB>: every verb with options offers them", not empty, empty)
run = complete(GPUCTL, "run", "--")
check("gpuctl run --<TAB>: run's options, from its --help", "--retry-on" in run and "--wait" in run, run)
check("gpuctl run -- python --j<TAB>: the command's words are its own (no gpuctl option)",
      "--json" not in complete(GPUCTL, "run", "--", "python", "--j"), complete(GPUCTL, "run", "--", "python", "--j"))
d = complete(GPUCTLD, "--queue-")
check("gpuctld --queue-<TAB>: its queue options", "--queue-db" in d and "--queue-socket" in d, d)
# every option a verb's completion offers is one the verb accepts: --help and getopt agree
bad = []
for v in ("ls", "query", "pick", "queue", "usage", "explain", "advise"):
    for o in complete(GPUCTL, v, "--"):
        r = subprocess.run([GPUCTL, v, o + "=x" if o in ("--help",) else o, "--help"], capture_output=True,
                           text=True, timeout=60, env=dict(os.environ, GPUCTL_SIM=""))
        if "unknown option" in r.stderr:
            bad.append(f"{v} {o}")
check("what completion offers, each verb accepts (no 'unknown option')", not bad, bad)
harness.finish()
