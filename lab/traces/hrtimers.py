#!/usr/bin/env python3
"""How the guest's timer interrupts end null_blk's requests while its
worker dispatches a restarted queue.

    python3 lab/traces/hrtimers.py TRACE...
    python3 lab/traces/hrtimers.py > lab/traces/held.json

TRACE is a kernel trace of c04 with the timer events (`c04.sh` with
QUEUE=1 TIMER=1): `local_timer_entry`/`_exit` (the local APIC timer
interrupt), `hrtimer_start` (each request's timer, armed by
`null_cmd_end_timer` on the CPU that issues it) and
`hrtimer_expire_entry` (a timer's callback, with the clock the
interrupt read: `now=`), beside `block_rq_issue` and
`block_rq_complete`. Per CPU, null_blk's timers pending at each
interrupt's entry are those started and not yet expired. Prints, over the
trace after its first second, for the interrupts that come while the
worker's run goes on (between two of its issues 2 ms or less apart) and
for the others:

* how many: their lateness (entry less the earliest pending expiry),
  median and p90;
* how many of null_blk's timers had expired by the clock the interrupt
  read, and how many it ended (median, and the share that ended fewer
  than had expired);
* how many interrupts come during each of the worker's runs, and how
  many requests each ends;
* per run, the oldest expired timer of null_blk's on the worker's CPU
  that waited through one of its dispatches (the issue's time less the
  earliest pending expiry, at the worker's issues): how long expired
  timers stay pending while the worker dispatches;
* with the scheduler's events too (`c04.sh` SCHED=1 TIMER=1): each of
  null_blk's timers by what its CPU ran when it expired (the worker, a
  fio process, the idle task), how long after its expiry an interrupt
  ended it.

Without arguments it writes, for each kernel's `c04st-KERNEL` trace
(`c04.sh` with QUEUE=1 SCHED=1 TIMER=1), the median, p90 and p99 in ns
of that delay for the timers that expired while their CPU ran the
worker (`held_ns`), and of each interrupt's lateness (its entry less
the earliest pending timer's expiry) for the interrupts whose earliest
pending timer expired while the CPU ran the worker (`irq_late_ns`), as
JSON; the lab gives the simulated null_blk's worker the latter
(`late_busy_worker_p50_ns` ...).
"""
import bisect
import collections
import re
import sys
import lzma

line_re = re.compile(r"^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+\S+\s+([\d.]+): (\w+): (.*)")
hex_re = re.compile(r"hrtimer=(\w+)")
expires_re = re.compile(r"expires=(\d+)")
now_re = re.compile(r"now=(\d+)")
NULL_FN = "null_cmd_timer_expired"


def quantile(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p * len(v)))] if v else float("nan")


def load(path):
    opener = lzma.open if path.endswith(".xz") else open
    evs = []
    for line in opener(path, "rt"):
        m = line_re.match(line)
        if m:
            evs.append((float(m.group(4)), m.group(5), m.group(6), m.group(1), int(m.group(3))))
    start = min(e[0] for e in evs if e[1] == "block_rq_issue") + 1.0
    return evs, start


def clock_offset(evs):
    """The trace clock less the timers' clock (ns), from the `now` each
    interrupt read: their median."""
    offs = sorted(t * 1e9 - int(now_re.search(rest).group(1))
                  for t, kind, rest, _, _ in evs if kind == "hrtimer_expire_entry")
    return offs[len(offs) // 2]


def task_timeline(evs):
    """Per CPU, the tasks `sched_switch` put on it, in time order, and the
    times alone (for bisecting)."""
    timeline = collections.defaultdict(list)
    for t, kind, rest, _, cpu in evs:
        if kind == "sched_switch":
            timeline[cpu].append((t, re.search(r"next_comm=(\S+)", rest).group(1)))
    keys = {cpu: [x[0] for x in tl] for cpu, tl in timeline.items()}
    return timeline, keys


def analyse(path):
    evs, start = load(path)
    # the worker's runs per CPU: its issues 2 ms or less apart
    issues = collections.defaultdict(list)
    for t, kind, rest, comm, cpu in evs:
        if kind == "block_rq_issue" and comm.startswith("kworker"):
            issues[cpu].append(t)
    runs = {}
    for cpu, ts in issues.items():
        r, a, b = [], None, None
        for t in ts:
            if b is None or t - b > 0.002:
                if a is not None:
                    r.append((a, b))
                a = t
            b = t
        if a is not None:
            r.append((a, b))
        runs[cpu] = r

    def in_run(cpu, t):
        r = runs.get(cpu, [])
        i = bisect.bisect_right([x[0] for x in r], t) - 1
        return i >= 0 and r[i][0] <= t <= r[i][1]

    pending = collections.defaultdict(dict)  # cpu -> hrtimer -> expiry (ns of the timer clock)
    # the trace clock against the timers' clock: the latest `now` read
    offset = {}
    oldest = collections.defaultdict(float)  # (cpu, run) -> ns
    stats = {True: collections.defaultdict(list), False: collections.defaultdict(list)}
    cur = {}  # cpu -> the interrupt in progress
    per_run = collections.Counter()
    for t, kind, rest, comm, cpu in evs:
        if kind == "hrtimer_start" and NULL_FN in rest:
            pending[cpu][hex_re.search(rest).group(1)] = int(expires_re.search(rest).group(1))
        elif kind == "local_timer_entry":
            cur[cpu] = {"t": t, "now": None, "ended": 0, "expired": None}
        elif kind == "block_rq_issue" and comm.startswith("kworker") and cpu in offset:
            exp = [e for e in pending[cpu].values()]
            if exp and t > start:
                age = t * 1e9 - offset[cpu] - min(exp)
                r = runs[cpu]
                key = (cpu, bisect.bisect_right([x[0] for x in r], t) - 1)
                oldest[key] = max(oldest[key], age)
        elif kind == "hrtimer_expire_entry" and cpu in cur:
            now = int(now_re.search(rest).group(1))
            offset[cpu] = t * 1e9 - now
            irq = cur[cpu]
            if irq["now"] is None:
                irq["now"] = now
                exp = sorted(pending[cpu].values())
                irq["expired"] = sum(1 for e in exp if e <= now)
                irq["late_ns"] = now - exp[0] if exp and exp[0] <= now else None
            if NULL_FN in rest:
                irq["ended"] += 1
                pending[cpu].pop(hex_re.search(rest).group(1), None)
        elif kind == "local_timer_exit" and cpu in cur:
            irq = cur.pop(cpu)
            if irq["t"] < start or not irq["expired"]:
                continue
            busy = in_run(cpu, irq["t"])
            s = stats[busy]
            s["late"].append(irq["late_ns"] or 0)
            s["expired"].append(irq["expired"])
            s["ended"].append(irq["ended"])
            if busy:
                r = runs[cpu]
                per_run[(cpu, bisect.bisect_right([x[0] for x in r], irq["t"]) - 1)] += 1
                stats[busy]["ended_hist"].append(irq["ended"])
    print(path)
    for busy, s in stats.items():
        n = len(s["ended"])
        if not n:
            continue
        fewer = sum(1 for e, x in zip(s["ended"], s["expired"]) if e < x)
        print("  interrupts %s the worker's runs: %d; lateness median %.0f us, p90 %.0f; "
              "expired at entry median %d, ended median %d, fewer ended than expired in %d%%" % (
                  "during" if busy else "outside", n,
                  quantile(s["late"], 0.5) / 1e3, quantile(s["late"], 0.9) / 1e3,
                  quantile(s["expired"], 0.5), quantile(s["ended"], 0.5), round(100 * fewer / n)))
    nruns = sum(1 for r in runs.values() for a, b in r if a > start and b > a)
    hist = collections.Counter(min(v, 6) for v in per_run.values())
    hist[0] = nruns - len(per_run)
    print("  worker's runs %d; interrupts during a run: %s (6: 6 or more)" % (
        nruns, ", ".join("%d: %d" % kv for kv in sorted(hist.items()))))
    ended = collections.Counter(min(v, 6) for v in stats[True]["ended_hist"])
    print("  requests each of those interrupts ended: %s" % (
        ", ".join("%d: %d" % kv for kv in sorted(ended.items()))))
    ages = [v for v in oldest.values() if v > 0]
    print("  oldest expired timer waiting through a worker's dispatch, per run: median %.0f us, "
          "p90 %.0f (%d runs)" % (quantile(ages, 0.5) / 1e3, quantile(ages, 0.9) / 1e3, len(ages)))
    if any(e[1] == "sched_switch" for e in evs):
        by_task(evs, start)


def irq_under_worker(evs, start):
    """Per interrupt: its entry less the earliest pending null_blk timer's
    expiry, for the interrupts whose earliest pending timer expired while
    the CPU ran the worker (needs sched_switch)."""
    off = clock_offset(evs)
    timeline, keys = task_timeline(evs)
    pending = collections.defaultdict(dict)
    out = []
    for t, kind, rest, _, cpu in evs:
        if kind == "hrtimer_start" and NULL_FN in rest:
            pending[cpu][hex_re.search(rest).group(1)] = (int(expires_re.search(rest).group(1)) + off) / 1e9
        elif kind == "local_timer_entry" and t > start:
            expired = [e for e in pending[cpu].values() if e <= t]
            if expired:
                e0 = min(expired)
                i = bisect.bisect_right(keys.get(cpu, []), e0) - 1
                if i >= 0 and timeline[cpu][i][1].startswith("kworker"):
                    out.append(t - e0)
        elif kind == "hrtimer_expire_entry" and NULL_FN in rest:
            pending[cpu].pop(hex_re.search(rest).group(1), None)
    return out


def by_task(evs, start, show=True):
    """Each null_blk timer's delay from its expiry to the interrupt that
    ended it, by the task its CPU ran at the expiry (needs sched_switch)."""
    off = clock_offset(evs)
    timeline, keys = task_timeline(evs)

    def task(cpu, t):
        i = bisect.bisect_right(keys.get(cpu, []), t) - 1
        name = timeline[cpu][i][1] if i >= 0 else "?"
        for prefix, what in (("kworker", "the worker"), ("fio", "fio"), ("swapper", "idle")):
            if name.startswith(prefix):
                return what
        return "other"

    started, out = {}, collections.defaultdict(list)
    for t, kind, rest, _, cpu in evs:
        if kind == "hrtimer_start" and NULL_FN in rest:
            started[hex_re.search(rest).group(1)] = (int(expires_re.search(rest).group(1)), cpu)
        elif kind == "hrtimer_expire_entry" and NULL_FN in rest:
            s = started.pop(hex_re.search(rest).group(1), None)
            if s is None:
                continue
            at = (s[0] + off) / 1e9
            if at >= start:
                out[task(s[1], at)].append(t - at)
    if not show:
        return out
    for what, v in sorted(out.items(), key=lambda kv: -len(kv[1])):
        print("  timers expiring while their CPU ran %s: %d, ended after %.0f us at the median, "
              "p90 %.0f, p99 %.0f" % (what, len(v), 1e6 * quantile(v, 0.5),
                                      1e6 * quantile(v, 0.9), 1e6 * quantile(v, 0.99)))


TRACES = {
    "6.1.0-50-amd64": "c04st-6.1",
    "6.12.117+deb13-amd64": "c04st-6.12",
    "7.2.13+deb14-amd64": "c04st-7.2",
}


def write_json():
    import json
    import os
    here = os.path.dirname(os.path.abspath(__file__))
    out = {}
    for kernel, trace in TRACES.items():
        path = os.path.join(here, trace, "trace.txt.xz")
        if not os.path.exists(path):
            continue
        evs, start = load(path)
        v = by_task(evs, start, show=False).get("the worker", [])
        irq = irq_under_worker(evs, start)
        if len(v) < 100 or len(irq) < 100:
            continue
        out[kernel] = {
            "trace": trace,
            "timers": len(v),
            "held_ns": [round(quantile(v, p) * 1e9) for p in (0.5, 0.9, 0.99)],
            "interrupts": len(irq),
            "irq_late_ns": [round(quantile(irq, p) * 1e9) for p in (0.5, 0.9, 0.99)],
        }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    if len(sys.argv) > 1:
        for p in sys.argv[1:]:
            analyse(p)
    else:
        write_json()
