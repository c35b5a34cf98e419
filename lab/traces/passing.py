#!/usr/bin/env python3
"""Which of an io.max group's IOs passed blk-throttle and which waited.

    python3 lab/traces/passing.py > lab/traces/passing.json

In t10-7.2 (lab/matrix/t10-many-groups.toml as lab/record.sh runs it,
KEEP_TRACES=1), a read that passes the throttle is issued by its fio
process itself (block_rq_issue in fio's context: `fio-PID`); a read the
throttle held is issued by the dispatch work (a kworker). A group's fio
process is the one whose own queued bios (`throtl [R] bio. ... iops=N`)
carry the group's riops limit. Prints, per riops group: its reads (fio's
total_ios), those its process issued itself, their share, and fio's
completion-latency p40, p50 and p60 (ms): the median falls between the
reads that passed and those that waited when about half passed.
"""
import json
import lzma
import os
import re

here = os.path.dirname(os.path.abspath(__file__))
TRACE = "t10-7.2"
# the riops limits of lab/matrix/t10-many-groups.toml's read groups, by
# fio process (fioN.json is the matrix's N-th [[fio]])
RIOPS = {0: 20, 1: 40, 2: 80, 7: 10}

issue_re = re.compile(r"^\s*(\S+)-(\d+)\s+\[\d+\].*: block_rq_issue: ")
queued_re = re.compile(r"^\s*fio-(\d+)\s+\[\d+\].*throtl \[R\] bio\. .* iops=(\d+) ")


def main():
    base = os.path.join(here, TRACE)
    by_pid, pid_of_iops = {}, {}
    for line in lzma.open(os.path.join(base, "ktrace.txt.xz"), "rt"):
        m = issue_re.match(line)
        if m:
            by_pid[(m.group(1), m.group(2))] = by_pid.get((m.group(1), m.group(2)), 0) + 1
            continue
        m = queued_re.match(line)
        if m:
            pid_of_iops.setdefault(int(m.group(2)), m.group(1))
    out = {}
    for n, iops in sorted(RIOPS.items()):
        job = json.load(open(os.path.join(base, f"fio{n}.json")))["jobs"][0]
        reads = job["read"]["total_ios"]
        own = by_pid.get(("fio", pid_of_iops[iops]), 0)
        pct = job["read"]["clat_ns"]["percentile"]
        out[job["jobname"]] = {
            "riops": iops,
            "reads": reads,
            "issued_by_fio": own,
            "issued_by_fio_pct": round(100 * own / reads, 1),
            "clat_ms": {p: round(pct[f"{p}.000000"] / 1e6, 2) for p in ("40", "50", "60")},
        }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
