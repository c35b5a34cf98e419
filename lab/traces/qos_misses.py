#!/usr/bin/env python3
"""How iocost's QoS misses spread over its periods in c04, and which
requests meet QoS in a period that mostly misses.

    python3 lab/traces/qos_misses.py [TRACE]

TRACE defaults to lab/traces/c04q-6.12/trace.txt.xz (c04.sh with
QUEUE=1: block_getrq and block_rq_insert too); a blkqos `--ktrace` of the
same job (`blkqos lab compare --traces --job=c04 --kernel=6.12
--keep-traces=DIR`) reads the same way. A request's time on the queue
is its block_rq_complete less its block_getrq (iocost's `on_q_ns`, from
`alloc_time_ns`); it misses the read QoS when that is over
`rlat` (5 ms) plus its size cost (about 0.2 ms here: 5.2 ms, as
`ioc_rqos_done` judges it). A request issued at once has no
block_rq_insert and is issued within 0.1 ms of its block_getrq (a direct
issue into the tick's budget, `blk_mq_try_issue_directly`). Periods are
the spans between `iocost_ioc_vrate_adj` events; those with 5 or more
completions are counted by the share of their completions that missed.
"""
import bisect
import collections
import lzma
import os
import re
import sys

here = os.path.dirname(os.path.abspath(__file__))
MISS_MS = 5.2
event_re = re.compile(
    r"^\s*\S+\s+\[\d+\]\s+\S+\s+([\d.]+): (block_getrq|block_rq_insert|block_rq_issue|"
    r"block_rq_complete|iocost_ioc_vrate_adj): (.*)")
sector_re = re.compile(r"(\d+) \+ \d+")


def load(path):
    """The completed requests (times of their events) and the periods' ends."""
    opener = lzma.open if path.endswith(".xz") else open
    pending, reqs, periods = {}, [], []
    for line in opener(path, "rt"):
        m = event_re.match(line)
        if not m:
            continue
        t, kind, rest = float(m.group(1)), m.group(2), m.group(3)
        if kind == "iocost_ioc_vrate_adj":
            periods.append(t)
            continue
        s = sector_re.search(rest)
        if not s:
            continue
        key = s.group(1)
        if kind == "block_getrq":
            pending[key] = {"getrq": t}
        elif key in pending:
            pending[key][kind] = t
            if kind == "block_rq_complete":
                reqs.append(pending.pop(key))
    return reqs, periods


def at_once(r):
    return "block_rq_insert" not in r and r.get("block_rq_issue", 1e18) - r["getrq"] < 1e-4


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "c04q-6.12", "trace.txt.xz")
    reqs, periods = load(path)
    on_q = lambda r: (r["block_rq_complete"] - r["getrq"]) * 1e3
    by_period = collections.defaultdict(list)
    for r in reqs:
        by_period[bisect.bisect_left(periods, r["block_rq_complete"])].append(r)
    bins = [0] * 6  # 0-20%, 20-40, 40-60, 60-80, 80-<100, 100% missed
    mostly = collections.Counter()
    for rs in by_period.values():
        if len(rs) < 5:
            continue
        missed = sum(on_q(r) > MISS_MS for r in rs) / len(rs)
        bins[5 if missed == 1 else min(4, int(missed * 5))] += 1
        if 0.8 <= missed < 1:
            for r in rs:
                if on_q(r) <= MISS_MS:
                    mostly["met, issued at once" if at_once(r) else "met, waited"] += 1
    n = len(reqs)
    direct = sum(at_once(r) for r in reqs)
    print(f"requests {n}: issued at once {direct} ({100 * direct / n:.1f}%), "
          f"missed {100 * sum(on_q(r) > MISS_MS for r in reqs) / n:.1f}%")
    print("periods by the share of completions missed, 0-20% 20-40 40-60 60-80 80-99 100%:", bins)
    print("in periods 80-99% missed, the requests that met:", dict(mostly))


if __name__ == "__main__":
    main()
