#!/usr/bin/env python3
"""How late null_blk's completions come, by what the completing CPU was
doing: the host-* traces (h01, h02, h03 and t08 on each kernel, and a01
on 6.12 and 7.2, recorded on an idle machine with `KEEP_TRACES=1 RUNS=99
JOBS='^(h01|h02|h03|t08)' lab/record.sh`, and `JOBS='^a01'`).

    python3 lab/traces/cpustate.py > lab/traces/cpustate.json

null_blk in timer mode (`irqmode=2`) arms each request's hrtimer on the
CPU that issues it (`null_cmd_end_timer`), so `block_rq_complete` runs on
that CPU, in hard-irq context, interrupting whatever ran there. A trace
line names that task: the request's own submitter still running
(`busy`: fio went on to its next submit or reap), `<idle>` (`idle`: the
CPU had nothing to run) or another task (`other`). Per kernel and job:
each group's count and d2c (`block_rq_issue` to `block_rq_complete`)
median, p90 and p99 in us; fio's IOPS (reads and writes) in this traced
run beside the mean of the untraced fixture runs 1-5; for t08, the second with the most
requests (its unlimited one: io.max back to max at 4 s) with its
requests, the share of it with a request on the device, and the kernel's
`io_ticks` over the run beside the same counter replayed from the
trace's events under the two generations of `update_io_ticks` (6.10's
`inflight`, and `sampling-v2` before it), over 16 phases of the 4 ms
jiffy (HZ=250) against the trace clock; and, from the untraced fixture
runs 1-5 of t08, the guest sampler's one-second diskstats sample with the
most reads (`samples.jsonl`): its reads, their mean time from request to
completion (the read ms over the reads) and its `io_ticks`.
"""
import glob
import json
import lzma
import os
import re

here = os.path.dirname(os.path.abspath(__file__))
fixtures = os.path.join(here, "..", "fixtures")

KERNELS = {
    "6.1": "6.1.0-50-amd64",
    "6.12": "6.12.117+deb13-amd64",
    "7.2": "7.2.13+deb14-amd64",
}
JOBS = {
    "h01": "h01-qd1-thinktime",
    "h02": "h02-qd1-roundtrip",
    "h03": "h03-qd32-pipelined",
    "t08": "t08-runtime-change",
    "a01": "a01-seed004-util",
}
JIFFY_S = 0.004

event_re = re.compile(
    r"^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+\S+\s+([\d.]+): block_rq_(issue|complete): "
    r"\S+ \S+ .*?(\d+) \+ \d+")


def quantile(v, p):
    return v[min(len(v) - 1, int(p * len(v)))]


def requests(path):
    """(issue s, complete s, issuing task, completing task) per request."""
    issued, out = {}, []
    for line in lzma.open(path, "rt"):
        m = event_re.match(line)
        if not m:
            continue
        task, _pid, _cpu, ts, kind, sector = m.groups()
        if kind == "issue":
            issued[sector] = (float(ts), task)
        elif sector in issued:
            t0, who = issued.pop(sector)
            out.append((t0, float(ts), who, task))
    return out


def by_state(reqs):
    groups = {"busy": [], "idle": [], "other": []}
    for t0, t1, who, task in reqs:
        state = "idle" if task == "<idle>" else ("busy" if task == who else "other")
        groups[state].append((t1 - t0) * 1e6)
    out = {}
    for state, v in groups.items():
        if v:
            v.sort()
            out[state] = {"n": len(v), "d2c_p50_us": round(quantile(v, 0.5)),
                          "d2c_p90_us": round(quantile(v, 0.9)),
                          "d2c_p99_us": round(quantile(v, 0.99))}
    return out


def replayed_io_ticks_ms(reqs, mode):
    """`io_ticks` from the requests' issue and completion times, (min, max)
    over 16 jiffy phases."""
    events = sorted([(t0, False) for t0, _, _, _ in reqs] + [(t1, True) for _, t1, _, _ in reqs])
    out = []
    for i in range(16):
        phase = i * JIFFY_S / 16
        stamp, ticks, inflight = None, 0, 0
        for t, end in events:
            j = int((t + phase) / JIFFY_S)
            if stamp is None:
                stamp = j - 1
            if j > stamp:
                if mode == "sampling-v2":
                    ticks += j - stamp if end else 1
                elif end or inflight > 0:
                    ticks += j - stamp
                stamp = j
            inflight += -1 if end else 1
        out.append(ticks * 4)
    return [min(out), max(out)]


def io_ticks_ms(d):
    start = open(os.path.join(d, "diskstats.start")).read().split()
    end = open(os.path.join(d, "diskstats.end")).read().split()
    return int(end[12]) - int(start[12])


def busiest_second(reqs):
    first = min(t0 for t0, _, _, _ in reqs)
    count = {}
    for t0, _, _, _ in reqs:
        count[int(t0 - first)] = count.get(int(t0 - first), 0) + 1
    s = max(count, key=count.get)
    inside = sorted((t0, t1) for t0, t1, _, _ in reqs if s <= t0 - first < s + 1)
    busy, cur = 0.0, None
    for a, b in inside:
        if cur is None or a > cur[1]:
            busy += cur[1] - cur[0] if cur else 0.0
            cur = [a, b]
        else:
            cur[1] = max(cur[1], b)
    busy += cur[1] - cur[0]
    return {"second": s, "requests": len(inside), "on_device_pct": round(busy * 100, 1)}


def untraced_iops(kver, job):
    v = []
    for run in range(1, 6):
        p = os.path.join(fixtures, kver, f"run{run}", job, "fio0.json")
        if os.path.exists(p):
            j = json.load(open(p))["jobs"][0]
            v.append(j["read"]["iops"] + j["write"]["iops"])
    return round(sum(v) / len(v)) if v else None


def untraced_t08_samples(kver):
    out = []
    for run in range(1, 6):
        p = os.path.join(fixtures, kver, f"run{run}", JOBS["t08"], "samples.jsonl")
        if not os.path.exists(p):
            continue
        rows = [[int(x) for x in json.loads(line)["diskstats"].split()[3:]] for line in open(p)]
        i = max(range(1, len(rows)), key=lambda i: rows[i][0] - rows[i - 1][0])
        reads = rows[i][0] - rows[i - 1][0]
        out.append({"run": run, "reads": reads,
                    "request_us_mean": round((rows[i][3] - rows[i - 1][3]) * 1000 / reads, 1),
                    "io_ticks_ms": rows[i][9] - rows[i - 1][9]})
    return out


def main():
    out = {}
    for short, kver in KERNELS.items():
        per_job = {}
        for tag, job in JOBS.items():
            d = os.path.join(here, f"host-{short}", tag)
            if not os.path.exists(os.path.join(d, "ktrace.txt.xz")):
                continue
            reqs = requests(os.path.join(d, "ktrace.txt.xz"))
            fio = json.load(open(os.path.join(d, "fio0.json")))
            job0 = fio["jobs"][0]
            r = {"iops_traced": round(job0["read"]["iops"] + job0["write"]["iops"]),
                 "iops_untraced_runs_1_5": untraced_iops(kver, job),
                 "completions": by_state(reqs)}
            if tag == "t08":
                r["busiest_second"] = busiest_second(reqs)
                r["io_ticks_ms"] = io_ticks_ms(d)
                r["io_ticks_ms_replayed"] = {m: replayed_io_ticks_ms(reqs, m)
                                             for m in ("inflight", "sampling-v2")}
            per_job[tag] = r
        per_job["t08_untraced_busiest_samples"] = untraced_t08_samples(kver)
        out[kver] = per_job
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
