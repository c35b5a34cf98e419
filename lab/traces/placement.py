#!/usr/bin/env python3
"""How the guest's scheduler places fio's processes on its vCPUs, from the
`block_getrq` events of traces with two fio processes on two vCPUs
(a request is allocated on the CPU its submitter runs on).

    python3 lab/traces/placement.py lab/traces/c05-6.12-smp2/trace.txt.xz lab/traces/c06-6.12/trace.txt.xz

Prints, pooled over the traces: the share of time the two processes share a
CPU, how often a process changes CPU between two requests less than 1 ms
apart (one submission burst) and, at a wake (1 ms or more since its previous
request), how often it moves when the other process was last seen on its
CPU and when it was not. crates/sim/src/device/placement.rs uses the last
two as P_MOVE_SHARED and P_MOVE_ALONE.
"""
import bisect
import collections
import lzma
import re
import sys

WAKE_GAP_S = 0.001
line_re = re.compile(r'^\s*(\S+)-(\d+)\s+\[(\d+)\]\s+\S+\s+([\d.]+): block_getrq: ')

moves = collections.Counter()  # (kind) -> [moved, total]
tot = collections.defaultdict(lambda: [0, 0])
same_ms = [0, 0]
for path in sys.argv[1:]:
    seen = collections.defaultdict(list)
    for line in lzma.open(path, 'rt'):
        m = line_re.match(line)
        if m and m.group(1) == 'fio':
            seen[m.group(2)].append((float(m.group(4)), int(m.group(3))))
    pids = list(seen)
    if len(pids) != 2:
        sys.exit(f"{path}: {len(pids)} fio processes, want 2")
    times = {p: [t for t, _ in seen[p]] for p in pids}

    def cpu_at(p, t):
        i = bisect.bisect_right(times[p], t) - 1
        return seen[p][i][1] if i >= 0 else None

    for p in pids:
        other = pids[1] if p == pids[0] else pids[0]
        ev = seen[p]
        for (t0, c0), (t1, c1) in zip(ev, ev[1:]):
            if t1 - t0 < WAKE_GAP_S:
                kind = 'burst'
            else:
                oc = cpu_at(other, t1)
                if oc is None:
                    continue
                kind = 'wake, shared' if oc == c0 else 'wake, alone'
            tot[kind][0] += c1 != c0
            tot[kind][1] += 1
    t, end = max(v[0][0] for v in seen.values()), min(v[-1][0] for v in seen.values())
    while t < end:
        same_ms[0] += cpu_at(pids[0], t) == cpu_at(pids[1], t)
        same_ms[1] += 1
        t += 0.001
print(f"processes share a CPU {100 * same_ms[0] / same_ms[1]:.1f}% of the time")
for kind in ('burst', 'wake, shared', 'wake, alone'):
    m, n = tot[kind]
    print(f"{kind:13} moved {m:5} of {n:6}: {m / n:.3f}")
