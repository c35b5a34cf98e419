#!/usr/bin/env python3
"""How late the guest runs iocost's period timer past the tick it is due
on: in every trace here with iocost's tracepoints, each
`iocost_ioc_vrate_adj` event (written at the end of `ioc_timer_fn()`)
against the tick the timer wheel should have run it on.

    python3 lab/traces/timer.py > lab/traces/timer.json

`ioc_start_period()` arms the timer at `jiffies + usecs_to_jiffies(period)`
and the timer wheel runs it from the softirq of the tick after that: a
whole number of ticks (HZ=250 on the lab's Debian kernels: 4 ms) after the
jiffy the previous period started in (3 ticks at c06's 7 ms period, 4 at
c04's 10 ms; the mode of the event gaps in ticks). The tick grid is
anchored on ktime: since Linux 5.x the tick is aligned to a multiple of
`TICK_NSEC` of `CLOCK_MONOTONIC` (`tick_init_jiffy_update()`), and iocost's
own events carry ktime (`now=`, µs), so their offset from the trace clock
places each event on the grid. Lateness = event time − due tick. Periods
the trace gating hides (no event) and negative outliers (an event whose
`now` was read long before it was written) are left out.

Late runs come in runs: a period timer a tick or more late is followed by
another such run far more often than an on-time one is. So the lateness
is kept twice, after a run on time (less than a tick late) and after one
a tick or more late. Prints, per kernel, the p1, p10, p50, p75, p90, p95
and p99 in ns over all that kernel's traces of all runs (`late_ns`), of
the runs after an on-time one (`after_on_time_ns`) and after a late one
(`after_late_ns`), how often a late run follows each, the traces used and
the counts; the lab gives the simulated iocost the two conditional ones
(`iocost_timer_late_ns`).
"""
import json
import lzma
import math
import os
import re
import statistics

here = os.path.dirname(os.path.abspath(__file__))
TICK_US = 4000.0
PROBS = [0.01, 0.10, 0.50, 0.75, 0.90, 0.95, 0.99]

TRACES = {
    "6.1.0-50-amd64": ["c04-6.1", "c06-6.1", "c06-6.1-inuse"],
    "6.12.117+deb13-amd64": ["c04-6.12", "c06-6.12", "c07-6.12", "c08-6.12"],
    "7.2.13+deb14-amd64": ["c04-7.2", "c06-7.2"],
}

now_re = re.compile(r"([\d.]+): iocost_\w+: \[[^\]]*\] now=(\d+)")
adj_re = re.compile(r"([\d.]+): iocost_ioc_vrate_adj:")


def lateness_us(trace):
    offsets = []
    adj = []
    for line in lzma.open(os.path.join(here, trace, "trace.txt.xz"), "rt"):
        m = now_re.search(line)
        if m:
            offsets.append(int(m.group(2)) - float(m.group(1)) * 1e6)
    for line in open(os.path.join(here, trace, "iocost_ioc_vrate_adj.txt")):
        m = adj_re.search(line)
        if m:
            adj.append(float(m.group(1)) * 1e6)
    off = statistics.median(offsets)
    ts = [t + off for t in adj]
    # ticks from one period start to the next run: the mode of the gaps
    gaps = [round((b - a) / TICK_US) for a, b in zip(ts, ts[1:])]
    ticks = statistics.mode(gaps)
    late = []
    for a, b in zip(ts, ts[1:]):
        due = (math.floor(a / TICK_US) + ticks) * TICK_US
        lat = b - due
        # a hidden period or an outlier: None
        late.append(lat if 0 <= lat < 5 * TICK_US else None)
    return late, ticks


def quantiles_ns(v):
    v = sorted(v)
    return [round(v[min(len(v) - 1, int(p * len(v)))] * 1000) for p in PROBS]


def main():
    out = {}
    for kernel, traces in TRACES.items():
        late, after_on_time, after_late = [], [], []
        used = {}
        for t in traces:
            seq, ticks = lateness_us(t)
            late += [x for x in seq if x is not None]
            for a, b in zip(seq, seq[1:]):
                if a is not None and b is not None:
                    (after_late if a >= TICK_US else after_on_time).append(b)
            used[t] = {"ticks": ticks, "events": sum(x is not None for x in seq)}
        share = lambda v: round(sum(x >= TICK_US for x in v) / len(v), 3)
        out[kernel] = {
            "traces": used,
            "late_ns": quantiles_ns(late),
            "after_on_time_ns": quantiles_ns(after_on_time),
            "after_late_ns": quantiles_ns(after_late),
            "late_after_on_time": share(after_on_time),
            "late_after_late": share(after_late),
            "events": len(late),
        }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
