#!/usr/bin/env python3
"""Reduce hostload-run.sh's runs to hostload.json.

    python3 lab/traces/hostload/hostload.py > lab/traces/hostload/hostload.json

For each host condition (hogsN: N busy loops on the lab's 2-core host)
and each guest condition (alone, spin1: a busy loop on the guest's other
vCPU, spin01: busy loops on both), the lateness of the guest's timer
interrupt at QD1: each request's block_rq_complete less its
block_rq_issue less null_blk's completion_nsec (20 us), in us, at the
median, p90, p99, p99.9 and max; the requests completed; fio's clat p99.
For each host condition, what QEMU's threads waited in the host's run
queues over the boot (schedstat): the two vCPU threads (the two busiest)
and the main loop thread, as ms waited per s on the CPU.
"""
import json
import lzma
import os
import re

here = os.path.dirname(os.path.abspath(__file__))
COMPLETION_NS = 20_000
GUEST = ["alone", "spin1", "spin01"]
event_re = re.compile(
    r"^\s*\S+\s+\[\d+\]\s+\S+\s+([\d.]+): block_rq_(issue|complete): \S+ \S+ .*?(\d+) \+ \d+")


def quantile(xs, p):
    """The nearest-rank quantile (the value at rank ceil(p * n))."""
    xs = sorted(xs)
    k = max(0, min(len(xs) - 1, -int(-p * len(xs) // 1) - 1))
    return xs[k]


def lateness_us(path):
    issued, late = {}, []
    for line in lzma.open(path, "rt"):
        m = event_re.match(line)
        if not m:
            continue
        t, kind, sector = round(float(m.group(1)) * 1e9), m.group(2), m.group(3)
        if kind == "issue":
            issued[sector] = t
        elif sector in issued:
            late.append((t - issued.pop(sector) - COMPLETION_NS) / 1e3)
    return late


def qemu_waits(path):
    """ms waited in a run queue per s on the CPU: vCPU threads, main thread."""
    first, last = {}, {}
    for line in open(path):
        f = line.split()
        if len(f) < 5:
            continue
        tid, run_ns, wait_ns = f[1], int(f[2]), int(f[3])
        first.setdefault(tid, (run_ns, wait_ns))
        last[tid] = (run_ns, wait_ns)
    d = {t: (last[t][0] - first[t][0], last[t][1] - first[t][1]) for t in last}
    main = min(d, key=int)
    vcpus = sorted((t for t in d if t != main), key=lambda t: -d[t][0])[:2]
    per = lambda ts: round(1e3 * sum(d[t][1] for t in ts) / max(1, sum(d[t][0] for t in ts)), 1)
    return {
        "vcpu_cpu_s": round(sum(d[t][0] for t in vcpus) / 1e9, 2),
        "vcpu_wait_ms_per_cpu_s": per(vcpus),
        "main_wait_ms_per_cpu_s": per([main]),
    }


def main():
    out = {}
    for hogs in sorted(d for d in os.listdir(here) if d.startswith("hogs")):
        base = os.path.join(here, hogs)
        cond = {"kernel": open(os.path.join(base, "kernel.txt")).read().strip()}
        cond.update(qemu_waits(os.path.join(base, "qemu-schedstat.txt")))
        for g in GUEST:
            late = lateness_us(os.path.join(base, f"trace-{g}.txt.xz"))
            fio = json.load(open(os.path.join(base, f"fio-{g}.json")))["jobs"][0]["read"]
            cond[g] = {
                "requests": len(late),
                "late_us": {p: round(quantile(late, q)) for p, q in
                            (("p50", .5), ("p90", .9), ("p99", .99), ("p99.9", .999))},
                "late_us_max": round(max(late)),
                "fio_clat_p99_us": round(fio["clat_ns"]["percentile"]["99.000000"] / 1e3),
            }
        out[hogs] = cond
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
