#!/usr/bin/env python3
"""The guest's CPU time per request when the kblockd worker dispatches a
queue that null_blk's bandwidth tick restarted, and per completion in the
timer interrupt that ends each request (null_blk `irqmode=2`).

    python3 lab/traces/serial.py > lab/traces/serial.json

In every trace here of a saturated bandwidth-limited null_blk
(`block_rq_issue` and `block_rq_complete` on), a restarted queue is
dispatched by one kworker on one CPU: `blk_mq_run_work_fn` ->
`blk_mq_dispatch_rq_list` -> `null_queue_rq` one request after another.
Each `null_queue_rq` arms an hrtimer `completion_nsec` ahead
(`null_cmd_end_timer`), and the timer's hard interrupt ends the request
(`null_cmd_timer_expired` -> `blk_mq_end_request`) on the same CPU,
preempting the worker. So the trace shows runs of issues by the worker
interleaved with runs of completions in hard-irq context (`d.h`).

The cost of one dispatch is the gap between two consecutive events of a
run of issues: the same kworker on the same CPU with nothing traced on
that CPU between them. The cost of one completion is the gap between two
consecutive hard-irq completions on one CPU. Prints, per kernel, the
median, p90 and p99 of each (`dispatch_ns`, `complete_ns`), pooled over
that kernel's traces, with the counts; the lab gives the simulated
null_blk these (`dispatch_p50_ns` ..., `irq_p50_ns` ...). The trace
clock's resolution is 1 us.
"""
import json
import lzma
import os
import re

here = os.path.dirname(os.path.abspath(__file__))

TRACES = {
    "6.1.0-50-amd64": ["c04-6.1", "c06-6.1", "c06-6.1-inuse"],
    "6.12.117+deb13-amd64": ["c04-6.12", "c05-6.12-smp2", "c05-6.12-smp1",
                             "c06-6.12", "c07-6.12", "c08-6.12"],
    "7.2.13+deb14-amd64": ["c04-7.2", "c06-7.2"],
}

event_re = re.compile(
    r"^\s*(\S+)-(\d+)\s+\[(\d+)\]\s+(\S+)\s+([\d.]+): block_rq_(issue|complete):")


def gaps(trace):
    """(dispatch gaps, completion gaps) in ns over one trace."""
    last = {}  # CPU -> (kind, task, pid, hardirq, time in ns)
    dispatch, complete = [], []
    for line in lzma.open(os.path.join(here, trace, "trace.txt.xz"), "rt"):
        m = event_re.match(line)
        if not m:
            continue
        task, pid, cpu, flags, ts, kind = m.groups()
        t = round(float(ts) * 1e9)
        hardirq = len(flags) > 2 and flags[2] in "hH"
        ev = (kind, task, pid, hardirq, t)
        prev = last.get(cpu)
        last[cpu] = ev
        if prev is None:
            continue
        if kind == "issue" and prev[0] == "issue" and task.startswith("kworker") \
                and prev[2] == pid and not hardirq and not prev[3]:
            dispatch.append(t - prev[4])
        elif kind == "complete" and prev[0] == "complete" and hardirq and prev[3]:
            complete.append(t - prev[4])
    return dispatch, complete


PROBS = [0.5, 0.9, 0.99]


def quantile(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p * len(v)))]


def main():
    out = {}
    for kernel, traces in TRACES.items():
        dispatch, complete, used = [], [], {}
        for t in traces:
            if not os.path.exists(os.path.join(here, t, "trace.txt.xz")):
                continue
            d, c = gaps(t)
            dispatch += d
            complete += c
            used[t] = {"dispatch_gaps": len(d), "complete_gaps": len(c)}
        if not dispatch or not complete:
            continue
        out[kernel] = {
            "traces": used,
            "dispatch_ns": [quantile(dispatch, p) for p in PROBS],
            "complete_ns": [quantile(complete, p) for p in PROBS],
        }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
