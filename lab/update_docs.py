#!/usr/bin/env python3
"""Refresh the generated tables of docs/fidelity.md from the recorded runs.

    python3 lab/update_docs.py [path/to/blkqos]

Replaces the blocks between `<!-- BEGIN lab-X -->` and `<!-- END lab-X -->`
with what `blkqos lab compare` prints now: the host each kernel's
calibration jobs measured, the per-job summary (seeds 1-5), the real
engine against the kernel, and the kernel traces' numbers beside blkqos's
(seeds 1-2).
"""
import os
import re
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)
blkqos = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "target/release/blkqos")
doc = os.path.join(root, "docs/fidelity.md")


def compare(*args):
    p = subprocess.run([blkqos, "lab", "compare", f"--lab={here}", *args],
                       capture_output=True, text=True, check=True)
    return p.stdout, p.stderr


def replace(text, name, body):
    pat = re.compile(rf"(<!-- BEGIN lab-{name} -->\n).*?(<!-- END lab-{name} -->)", re.S)
    if not pat.search(text):
        sys.exit(f"update_docs: no lab-{name} block in {doc}")
    return pat.sub(lambda m: m.group(1) + body + m.group(2), text)


summary, err = compare("--summary", "--markdown", "--seeds=5")
hosts = [l[len("lab: "):] for l in err.splitlines() if "host measured" in l]
host = "".join(f"* {h}\n" for h in hosts)
engine, _ = compare("--real-engine", "--summary", "--markdown")
traces, _ = compare("--traces", "--summary", "--markdown", "--seeds=2")
text = open(doc).read()
text = replace(text, "host", host)
text = replace(text, "summary", summary)
text = replace(text, "engine", engine)
text = replace(text, "traces", traces)
open(doc, "w").write(text)
print(f"update_docs: {doc} refreshed")
