#!/usr/bin/env python3
"""How long after null_blk's bandwidth tick the guest dispatches the
restarted queue: per 20 ms tick, the first request a kworker issues after
the tick (`block_rq_issue`), in traces of a saturated 10 MiB/s null_blk.

    python3 lab/traces/restart.py > lab/traces/restart.json

The tick grid's phase is the most common offset (0.05 ms bins) of the
bursts' first issues modulo 20 ms. Prints the median, p90 and p99 of the
delay in ns, pooled over the two-vCPU traces (c05-6.12-smp2, c06-6.12)
and for the one-vCPU trace (c05-6.12-smp1); the lab gives the simulated
null_blk these (`restart_p50_ns`, `restart_p90_ns`, `restart_p99_ns`).
"""
import bisect
import collections
import json
import lzma
import os
import re

here = os.path.dirname(os.path.abspath(__file__))
issue_re = re.compile(r'^\s*(\S+)\s+\[\d+\]\s+\S+\s+([\d.]+): block_rq_issue:')
TICK_MS = 20.0


def delays(trace):
    ts = []
    for line in lzma.open(os.path.join(here, trace, "trace.txt.xz"), "rt"):
        m = issue_re.match(line)
        if m and m.group(1).startswith("kworker"):
            ts.append(float(m.group(2)) * 1000)
    first = [ts[0]] + [ts[i] for i in range(1, len(ts)) if ts[i] - ts[i - 1] > 1.0]
    bins = collections.Counter(int((t % TICK_MS) / 0.05) for t in first)
    phase = bins.most_common(1)[0][0] * 0.05 - 0.05
    out = []
    k = int((ts[0] - phase) // TICK_MS) + 1
    while phase + TICK_MS * k < ts[-1]:
        tick = phase + TICK_MS * k
        i = bisect.bisect_left(ts, tick)
        if i < len(ts) and ts[i] < tick + TICK_MS:
            out.append(max(0.0, ts[i] - tick - 0.05))
        k += 1
    return out


def quantiles(d):
    d = sorted(d)
    q = lambda p: d[min(len(d) - 1, int(p * len(d)))]
    return {f"p{p}": round(q(p / 100) * 1e6) for p in (50, 90, 99)} | {"ticks": len(d)}


two = delays("c05-6.12-smp2") + delays("c06-6.12")
one = delays("c05-6.12-smp1")
print(json.dumps({"kernel": "6.12.117+deb13-amd64", "vcpus": {"2": quantiles(two), "1": quantiles(one)}}, indent=1))
