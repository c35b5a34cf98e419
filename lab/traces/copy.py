#!/usr/bin/env python3
"""How long the guest's memory-backed null_blk takes per request, from
issue to completion, for the full-size writes of the writeback traces.

    python3 lab/traces/copy.py > lab/traces/copy.json

With `memory_backed=1`, `null_queue_rq` copies a write's data into the
device's pages (`null_handle_memory_backed` -> `copy_to_nullb`) in the
task that issues it, then arms the completion timer
(`completion_nsec`, 20 us in the lab). So a request's `block_rq_issue`
to `block_rq_complete` is the copy, the 20 us and the guest's timer
lateness. This takes every write of 255 sectors (127.5 KiB, a split at
`max_sectors_kb`) in the w01 and w02 traces, pairs its issue and
completion by sector, and prints per kernel the median of those times in
ns (`d2c_p50_ns`), the request size and the counts. The lab subtracts
the completion time and the host's median completion lateness (h02) and
gives the simulated null_blk the rate that leaves
(`copy_bytes_per_s`); the page cache's own copy keeps h04's rate.
"""
import json
import lzma
import os
import re

here = os.path.dirname(os.path.abspath(__file__))

TRACES = {
    "6.1.0-50-amd64": ["w02-6.1"],
    "6.12.117+deb13-amd64": ["w01-6.12", "w02-6.12"],
    "7.2.13+deb14-amd64": ["w01-7.2", "w02-7.2"],
}
SECTORS = 255

event_re = re.compile(
    r"^\s*\S+\s+\[\d+\]\s+\S+\s+([\d.]+): block_rq_(issue|complete): \S+ (\w+) "
    r"(?:\d+ )?\(\) (\d+) \+ (\d+)")


def d2c(trace):
    """Issue-to-completion times (ns) of the trace's full-size writes."""
    issued, out = {}, []
    for line in lzma.open(os.path.join(here, trace, "trace.txt.xz"), "rt"):
        m = event_re.match(line)
        if not m:
            continue
        ts, kind, rwbs, sector, nr = m.groups()
        t = round(float(ts) * 1e9)
        if kind == "issue":
            issued[sector] = (t, int(nr), rwbs)
        elif sector in issued:
            t0, n, op = issued.pop(sector)
            if op.startswith("W") and n == SECTORS:
                out.append(t - t0)
    return out


def main():
    out = {}
    for kernel, traces in TRACES.items():
        times, used = [], {}
        for t in traces:
            if not os.path.exists(os.path.join(here, t, "trace.txt.xz")):
                continue
            v = d2c(t)
            times += v
            used[t] = len(v)
        if not times:
            continue
        times.sort()
        out[kernel] = {
            "traces": used,
            "bytes": SECTORS * 512,
            "d2c_p50_ns": times[len(times) // 2],
        }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
