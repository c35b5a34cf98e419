#!/usr/bin/env python3
"""How late the guest's timer interrupt ends null_blk's requests while the
guest is loaded: one number per interrupt, not per request.

    python3 lab/traces/irq.py > lab/traces/irq.json

null_blk in timer mode (`irqmode=2`) arms one hrtimer per request,
`completion_nsec` after `null_queue_rq` (`null_cmd_end_timer`), on the CPU
that issues it. The CPU's clock event is programmed for its earliest timer
(`hrtimer_reprogram`); when the interrupt comes, `hrtimer_interrupt` runs
every timer expired by then, and those that expire while it runs, one
completion after another in hard-irq context, then programs the clock
event for the next timer. In the emulated guest the interrupt comes late,
and later when the guest is busy than at QD1 (`h02-qd1-roundtrip`).

An interrupt is a run of consecutive hard-irq `block_rq_complete` events
on one CPU with nothing else traced on that CPU between them. Its
lateness is its first completion's time less the earliest expiry among
the requests pending on that CPU then: each request's last
`block_rq_issue` on that CPU plus `completion_nsec` (20 us in every job
here), for the requests not yet completed. (A request null_blk refuses
over its bandwidth budget is traced at each `blk_mq_start_request` and
issued again later: only its last issue arms its timer.) Prints, per
kernel, the median, p90 and p99 of the lateness (`late_ns`), pooled over
that kernel's traces of saturated bandwidth-limited null_blk jobs, with
the counts; the lab gives the simulated null_blk's worker CPU these
(`irq_late_p50_ns` ...). The trace clock's resolution is 1 us.
"""
import heapq
import json
import lzma
import os
import re

from serial import PROBS, quantile  # the quantiles serial.json uses

here = os.path.dirname(os.path.abspath(__file__))

TRACES = {
    "6.1.0-50-amd64": ["c04-6.1", "c06-6.1", "c06-6.1-inuse",
                       "c09-6.1/run1", "c09-6.1/run2", "c09-6.1/run3"],
    "6.12.117+deb13-amd64": ["c04-6.12", "c05-6.12-smp2", "c05-6.12-smp1",
                             "c06-6.12", "c07-6.12", "c08-6.12",
                             "c09-6.12/run1", "c09-6.12/run2", "c09-6.12/run3"],
    "7.2.13+deb14-amd64": ["c04-7.2", "c06-7.2",
                           "c09-7.2/run1", "c09-7.2/run2", "c09-7.2/run3"],
}

COMPLETION_NS = 20_000

event_re = re.compile(
    r"^\s*(\S+)-(\d+)\s+\[(\d+)\]\s+(\S+)\s+([\d.]+): block_rq_(issue|complete): "
    r"\S+ \S+ .*?(\d+) \+ \d+")


def events(trace):
    """(time ns, cpu, kind, hardirq, sector) in time order."""
    out = []
    for line in lzma.open(os.path.join(here, trace, "trace.txt.xz"), "rt"):
        m = event_re.match(line)
        if m:
            _, _, cpu, flags, ts, kind, sector = m.groups()
            hardirq = len(flags) > 2 and flags[2] in "hH"
            out.append((round(float(ts) * 1e9), cpu, kind, hardirq, sector))
    out.sort(key=lambda e: e[0])
    return out


def lateness(trace):
    """Each interrupt's lateness in ns over one trace."""
    ev = events(trace)
    # a request null_blk refused is issued again later: only the issue
    # followed by the sector's completion armed a timer
    armed, last = set(), {}
    for i, (_, _, kind, _, sector) in enumerate(ev):
        if kind == "issue":
            last[sector] = i
        elif sector in last:
            armed.add(last.pop(sector))
    pending = {}  # cpu -> heap of (expiry, issue's index)
    armed_for = {}  # sector -> the index of the issue whose timer runs
    done = set()  # issues completed, their timers still in a heap
    out = []
    prev = {}  # cpu -> (kind, hardirq) of the last event on it
    for i, (t, cpu, kind, hardirq, sector) in enumerate(ev):
        if kind == "issue":
            if i in armed:
                armed_for[sector] = i
                heapq.heappush(pending.setdefault(cpu, []), (t + COMPLETION_NS, i))
        else:
            run_continues = prev.get(cpu) == ("complete", True) and hardirq
            if hardirq and not run_continues:
                heap = pending.get(cpu, [])
                # drop the timers that already ended
                while heap and heap[0][1] in done:
                    done.discard(heapq.heappop(heap)[1])
                if heap and heap[0][0] <= t:
                    out.append(t - heap[0][0])
            if sector in armed_for:
                done.add(armed_for.pop(sector))
        prev[cpu] = (kind, hardirq)
    return out




def main():
    out = {}
    for kernel, traces in TRACES.items():
        late, used = [], {}
        for t in traces:
            if not os.path.exists(os.path.join(here, t, "trace.txt.xz")):
                continue
            v = lateness(t)
            late += v
            used[t] = {"interrupts": len(v)}
        if late:
            out[kernel] = {
                "traces": used,
                "late_ns": [quantile(late, p) for p in PROBS],
            }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
