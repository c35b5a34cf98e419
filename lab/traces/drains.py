#!/usr/bin/env python3
"""What happens around a restarted queue's drain in a trace of a
saturated, bandwidth-limited null_blk: the kernel's or blkqos's.

    python3 lab/traces/drains.py TRACE...

TRACE is a kernel trace (`trace.txt` or `.xz`) with `block_getrq` and
`block_rq_issue` (and `block_rq_complete`), as `c04.sh` records with
QUEUE=1, or a blkqos `--ktrace` of the same job (`blkqos lab compare
--traces --job=c04 --kernel=6.12 --keep-traces=DIR`). A read is issued at
once when its `block_rq_issue` comes within 0.1 ms of its `block_getrq`;
the others waited in staging and were issued by the worker that
dispatches a restarted queue. A drain is a run of those issues with
gaps under 2 ms. Over the trace after its first second, prints:

* the drains: how many, the reads and the time each takes (median), the
  worker's time per read, and the completions that came on the worker's
  CPU while it dispatched (its timer interrupts between its dispatches);
* the reads that got their tag during a drain, and how each went out;
* each staged read's time from its tag to the start of the first drain
  after it, in 2 ms bins (`>=20`: it came during a drain);
* after a drain's first completion, how long until the next tag (the
  processes' reaction), median and p10/p90;
* with the scheduler's events (`c04.sh` SCHED=1; kernel traces only):
  what each fio process was doing when a drain started (S asleep in
  io_getevents, D blocked in iocost or a tag wait, running), and its CPU
  time per read.
"""
import bisect
import collections
import lzma
import re
import sys

line_re = re.compile(r"^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+\S+\s+([\d.]+): (\w+): (.*)")
sector_re = re.compile(r"(\d+) \+ \d+|\(\) (\d+)")
switch_re = re.compile(r"prev_pid=(\d+) .*prev_state=(\S+) ==> next_comm=.* next_pid=(\d+)")

AT_ONCE_S = 0.0001
DRAIN_GAP_S = 0.002


def quantile(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p * len(v)))] if v else float("nan")


def events(path):
    opener = lzma.open if path.endswith(".xz") else open
    for line in opener(path, "rt"):
        m = line_re.match(line)
        if m:
            yield (float(m.group(4)), m.group(5), m.group(6), m.group(1),
                   int(m.group(2)), int(m.group(3)))


def analyse(path):
    evs = [e for e in events(path)]
    start = min(e[0] for e in evs if e[1] in ("block_getrq", "block_bio_queue")) + 1.0
    tag, staged_issue, staged, at_once = {}, [], [], 0
    completions, tags = [], []
    cpu_of_issue, completed_on = [], {}
    for t, kind, rest, comm, pid, cpu in evs:
        if kind not in ("block_getrq", "block_rq_issue", "block_rq_complete"):
            continue
        s = sector_re.search(rest)
        if not s:
            continue
        key = s.group(1) or s.group(2)
        if kind == "block_getrq":
            tag[key] = t
            if t > start:
                tags.append(t)
        elif kind == "block_rq_issue":
            g = tag.pop(key, None)
            if t <= start:
                continue
            if g is not None and t - g < AT_ONCE_S:
                at_once += 1
            else:
                staged_issue.append(t)
                cpu_of_issue.append(cpu)
                if g is not None:
                    staged.append((g, t))
        elif t > start:
            completions.append(t)
            completed_on.setdefault(cpu, []).append(t)
    drains, first, last, n, cpu0 = [], None, None, 0, None
    for t, cpu in zip(staged_issue, cpu_of_issue):
        if last is None or t - last > DRAIN_GAP_S:
            if first is not None:
                drains.append((first, last, n, cpu0))
            first, n, cpu0 = t, 0, cpu
        last, n = t, n + 1
    if first is not None:
        drains.append((first, last, n, cpu0))
    starts = [d[0] for d in drains]

    def in_drain(t):
        i = bisect.bisect_right(starts, t) - 1
        return i >= 0 and drains[i][0] <= t <= drains[i][1]

    print(path)
    big = [d for d in drains if d[2] >= 10]
    print("  drains %d; of 10 reads or more: %d, %d reads and %.2f ms each (median), "
          "%.1f us per read" % (
              len(drains), len(big), quantile([d[2] for d in big], 0.5),
              1e3 * quantile([d[1] - d[0] for d in big], 0.5),
              1e6 * quantile([(d[1] - d[0]) / (d[2] - 1) for d in big], 0.5)))
    inside = []
    for a, b, _, cpu in big:
        on = completed_on.get(cpu, [])
        inside.append(bisect.bisect_left(on, b) - bisect.bisect_right(on, a))
    print("  completions on the worker's CPU during those drains: median %d, p90 %d, "
          "none in %d%%" % (quantile(inside, 0.5), quantile(inside, 0.9),
                            round(100 * sum(1 for x in inside if x == 0) / max(len(inside), 1))))
    print("  reads issued at once: %d of %d (%.1f%%)" % (
        at_once, at_once + len(staged_issue), 100 * at_once / (at_once + len(staged_issue))))
    during = sum(1 for t in tags if in_drain(t))
    print("  tags during drains: %d (%.2f per drain)" % (during, during / max(len(drains), 1)))
    bins = collections.Counter()
    for g, t in staged:
        i = bisect.bisect_right(starts, g)
        if i < len(starts):
            bins[min(int((starts[i] - g) * 1e3 // 2) * 2, 20)] += 1
    print("  staged reads by ms from tag to the next drain:",
          ", ".join("%s%d: %d" % (">=" if k == 20 else "", k, bins[k]) for k in sorted(bins)))
    react = []
    for a, b, _, _ in drains:
        i = bisect.bisect_left(completions, a)
        if i < len(completions):
            j = bisect.bisect_left(tags, completions[i])
            if j < len(tags):
                react.append(tags[j] - completions[i])
    print("  next tag after a drain's first completion: median %.0f us (p10 %.0f, p90 %.0f)" % (
        1e6 * quantile(react, 0.5), 1e6 * quantile(react, 0.1), 1e6 * quantile(react, 0.9)))
    sched(evs, drains, start)


def sched(evs, drains, start):
    """The fio processes' states at drain starts and CPU time per read."""
    if not any(e[1] == "sched_switch" for e in evs):
        return
    fios = {e[4] for e in evs if e[1] == "block_bio_queue"}
    state = {p: "?" for p in fios}
    pending = {p: 0 for p in fios}
    at_start = collections.Counter()
    run_s = collections.Counter()
    on_cpu = {}
    reads = collections.Counter()
    di = 0
    end = max(e[0] for e in evs if e[1] == "block_rq_complete")
    for t, kind, rest, comm, pid, cpu in evs:
        while di < len(drains) and drains[di][0] <= t:
            for p in fios:
                at_start[state[p]] += 1
            di += 1
        if kind == "block_bio_queue" and pid in fios:
            pending[pid] += 1
        elif kind == "block_getrq" and pid in fios:
            pending[pid] = max(0, pending[pid] - 1)
            if t > start:
                reads[pid] += 1
        elif kind == "sched_switch":
            m = switch_re.search(rest)
            prev, st, nxt = int(m.group(1)), m.group(2), int(m.group(3))
            if prev in fios:
                if prev in on_cpu and t > start:
                    run_s[prev] += t - max(on_cpu.pop(prev), start)
                if st.startswith("R"):
                    state[prev] = "preempted"
                elif st[0] in "SD" and pending[prev] == 0:
                    state[prev] = "asleep for a completion"
                else:
                    state[prev] = "blocked before its tag"
            if nxt in fios:
                state[nxt] = "running"
                on_cpu[nxt] = t
    print("  fio's processes at drain starts:", dict(at_start))
    for p in sorted(fios):
        print("  fio %d: %.0f us of CPU per read (%d reads, %.0f ms a second)" % (
            p, 1e6 * run_s[p] / max(reads[p], 1), reads[p], 1e3 * run_s[p] / (end - start)))


if __name__ == "__main__":
    for path in sys.argv[1:]:
        analyse(path)
