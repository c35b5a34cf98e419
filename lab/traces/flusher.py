#!/usr/bin/env python3
"""How long a writeback flusher takes per request of a bio it submits: in
the w02 traces (two buffered writers, ext4 on a memory-backed null_blk,
`max_sectors_kb` 127), the gap between one flusher kworker's consecutive
`block_getrq` events when it did not wait in between.

    python3 lab/traces/flusher.py > lab/traces/flusher.json

A flusher's 8 MiB bio is cut into 127 KiB requests one after another; each
passes blk-wbt and takes a tag, or the kworker sleeps. Gaps under 1 ms are
the kworker's own CPU time per request (splitting, rq-qos, tag, plug);
longer ones are sleeps (blk-wbt's wait queue, a tag). Prints, per kernel,
the median of the short gaps in ns and how many there were; the lab gives
the simulated flushers that cost (`writeback_piece_ns`), so two flushers'
requests interleave as the two kworkers' do on the guest's two vCPUs.
"""
import json
import lzma
import os
import re

here = os.path.dirname(os.path.abspath(__file__))
getrq_re = re.compile(r'^\s*(\S+)\s+\[\d+\]\s+\S+\s+([\d.]+): block_getrq:')
SLEEP_US = 1000.0

TRACES = {
    "6.1.0-50-amd64": "w02-6.1",
    "6.12.117+deb13-amd64": "w02-6.12",
    "7.2.13+deb14-amd64": "w02-7.2",
}


def short_gaps(trace):
    last = {}
    gaps = []
    for line in lzma.open(os.path.join(here, trace, "trace.txt.xz"), "rt"):
        m = getrq_re.match(line)
        if not m or not m.group(1).startswith("kworker/u"):
            continue
        task, t = m.group(1), float(m.group(2)) * 1e6
        if task in last and t - last[task] < SLEEP_US:
            gaps.append(t - last[task])
        last[task] = t
    return sorted(gaps)


def main():
    out = {}
    for kernel, trace in TRACES.items():
        gaps = short_gaps(trace)
        out[kernel] = {
            "trace": trace,
            "piece_ns": round(gaps[len(gaps) // 2] * 1000),
            "gaps": len(gaps),
        }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
