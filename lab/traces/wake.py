#!/usr/bin/env python3
"""How late a fio process asleep waiting for its IO runs after the IO
completes, when null_blk's worker dispatched it (a restarted queue).

    python3 lab/traces/wake.py > lab/traces/wake.json

The traces are c04 with the scheduler's events (`c04.sh` with QUEUE=1
SCHED=1: `block_bio_queue`, `block_getrq`, `block_rq_insert`,
`block_rq_issue`, `block_rq_complete`, `sched_wakeup`, `sched_switch`),
one run per kernel in `c04s-KERNEL/`. The fio processes are the tasks
that queue bios. A process that switches out asleep (S, or D as 7.2's
`io_getevents` sleeps) with none of its bios between `block_bio_queue`
and `block_getrq` (inside iocost's throttle or a tag wait) sleeps in
`io_getevents`, waiting for a completion. The first completion of one
of its own requests after that (the request's owner is the task of its
`block_getrq`) is what wakes it; the process runs at its next
`sched_switch` in. The delay between the two is the wake-up's, split by
who issued the request: the kworker that dispatches a restarted queue
(its timer interrupt, and so the completion and the wake-up, run on the
worker's CPU) or the process itself (issued at once, completed on its
own CPU). Prints per kernel the median, p90 and p99 in ns of each, with
the counts and the worker's split by whether the process ran on the
worker's CPU (`null` under 100 wake-ups); the lab gives the simulated
null_blk the worker's (`wake_p50_ns` ...). The trace clock's resolution
is 1 us.
"""
import json
import lzma
import os
import re

here = os.path.dirname(os.path.abspath(__file__))

TRACES = {
    "6.1.0-50-amd64": "c04s-6.1",
    "6.12.117+deb13-amd64": "c04s-6.12",
    "7.2.13+deb14-amd64": "c04s-7.2",
}

line_re = re.compile(r"^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+\S+\s+([\d.]+): (\w+): (.*)")
sector_re = re.compile(r"(\d+) \+ \d+|\(\) (\d+)")
switch_re = re.compile(r"prev_pid=(\d+) .*prev_state=(\S+) ==> next_comm=.* next_pid=(\d+)")


def events(path):
    for line in lzma.open(path, "rt"):
        m = line_re.match(line)
        if m:
            yield (float(m.group(4)), m.group(5), m.group(6), m.group(1),
                   int(m.group(2)), int(m.group(3)))


def delays(path):
    """(by whom the waking request was issued, same CPU as the wake-up or
    not) -> the delays in ns, over the run after its first second."""
    evs = list(events(path))
    fios = {e[4] for e in evs if e[1] == "block_bio_queue"}
    t0 = min(e[0] for e in evs if e[1] == "block_bio_queue") + 1.0
    owner, by_worker, asleep = {}, {}, {}
    throttled = {pid: 0 for pid in fios}
    out = {}
    for t, kind, rest, comm, pid, cpu in evs:
        if kind == "block_bio_queue" and pid in throttled:
            throttled[pid] += 1
        if kind == "block_getrq" and pid in throttled:
            throttled[pid] = max(0, throttled[pid] - 1)
        if kind in ("block_getrq", "block_rq_issue", "block_rq_complete"):
            s = sector_re.search(rest)
            if not s:
                continue
            key = s.group(1) or s.group(2)
            if kind == "block_getrq":
                owner[key] = pid
            elif kind == "block_rq_issue":
                by_worker[key] = comm.startswith("kworker")
            else:
                who, worker = owner.pop(key, None), by_worker.pop(key, None)
                if who in asleep and asleep[who] is None:
                    asleep[who] = (t, "worker" if worker else "itself", cpu)
        elif kind == "sched_switch":
            m = switch_re.search(rest)
            prev, state, nxt = int(m.group(1)), m.group(2), int(m.group(3))
            if prev in fios and state[0] in "SD" and throttled[prev] == 0:
                asleep[prev] = None
            if nxt in fios and nxt in asleep:
                woken = asleep.pop(nxt)
                if woken is not None and t > t0:
                    at, who, ccpu = woken
                    where = "same_cpu" if ccpu == cpu else "other_cpu"
                    out.setdefault((who, where), []).append(round((t - at) * 1e9))
    return out


PROBS = [0.5, 0.9, 0.99]
# fewer wake-ups than this make no law (7.2's c04 sleeps in iocost's
# throttle, not waiting for completions)
MIN_WAKES = 100


def quantile(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p * len(v)))]


def main():
    out = {}
    for kernel, trace in TRACES.items():
        path = os.path.join(here, trace, "trace.txt.xz")
        if not os.path.exists(path):
            continue
        d = delays(path)

        def law(*keys):
            v = [x for k in keys for x in d.get(k, [])]
            return {"wakes": len(v),
                    "ns": [quantile(v, p) for p in PROBS] if len(v) >= MIN_WAKES else None}

        out[kernel] = {
            "trace": trace,
            "worker": law(("worker", "same_cpu"), ("worker", "other_cpu")),
            "worker_same_cpu": law(("worker", "same_cpu")),
            "worker_other_cpu": law(("worker", "other_cpu")),
            "itself": law(("itself", "same_cpu"), ("itself", "other_cpu")),
        }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
