#!/usr/bin/env python3
"""Replay blkqos scenarios on a real kernel (run inside the lab guest, as root).

For each job of lab/matrix.toml: create a null_blk over configfs with the
scenario's [device] parameters, make the cgroups, apply the [[write]]
knob lines (timed ones on a timer), start one fio per [[fio]] in its
cgroup, sample /proc/diskstats and every cgroup's io.stat once a second,
and keep fio's JSON reports. Jobs marked `apply = true` have their
settings written by `blkqos apply` (--blkqos-apply PATH), its output kept
in meta.json. With --blkqos, jobs marked `real = true` are
run a second time by blkqos's real engine on the same null_blk (no kernel
knobs written: blkqos enforces them in userspace).

    python3 lab/guest_run.py --matrix lab/matrix.toml --out /mnt/rep1 [--jobs RE] [--blkqos PATH]

Output per job: OUT/JOB/{meta.json, samples.jsonl, fio<N>.json, io.stat,
diskstats.{start,end}, ktrace.txt} and, for the real engine, OUT/JOB/real/.
ktrace.txt is the kernel's trace buffer over the job (tracefs): the
iocost tracepoints, block_rq_insert/issue/complete, and for a job that
writes io.max blk-throttle's own messages (the blk tracer, notes only);
record.sh reduces it to trace.json on the host (`blkqos lab reduce-trace`).
"""

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import threading
import time
import tomllib

NULLB_ROOT = "/sys/kernel/config/nullb"
# the device of the job running now: configfs item and /sys/block name
NULLB = None
DEV = "nullb1"
# configfs items are named nullb1, nullb2, ... (one per job and boot): 6.1
# names the disk after the item, and mounting a file system from a disk
# named after a job failed
ITEMS = 0
CG = "/sys/fs/cgroup"
FSDIR = "/tmp/labfs"


def wr(path, value):
    with open(path, "w") as f:
        f.write(str(value))


def rd(path):
    with open(path) as f:
        return f.read()


def parse_size(s):
    if isinstance(s, int):
        return s
    m = re.fullmatch(r"(\d+)([kmgt]?)", str(s).strip().lower())
    if not m:
        raise SystemExit(f"lab: size `{s}`: expected N[kmgt]")
    return int(m.group(1)) * 1024 ** " kmgt".index(m.group(2) or " ")


def parse_time_ns(s):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(ns|us|ms|s)?", str(s).strip())
    if not m:
        raise SystemExit(f"lab: time `{s}`: expected N[ns|us|ms|s]")
    mult = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9, None: 1e9}[m.group(2)]
    return int(float(m.group(1)) * mult)


def knob_path(file):
    for prefix in ("/sys/fs/cgroup/unified", "/sys/fs/cgroup"):
        if file.startswith(prefix):
            return CG + file[len(prefix):]
    return CG + file


def setup_nullb(dev, fs, item):
    """A fresh null_blk with the scenario's parameters; returns MAJ:MIN.

    Each job gets a new configfs item, powered off after the job and never
    removed: on 6.1 removing an item crashes (badblocks_exit after the
    device is gone), and powering one on again with other parameters
    crashes too (the bandwidth timer of an earlier mbps)."""
    global NULLB, DEV, ITEMS
    ITEMS += 1
    NULLB = f"{NULLB_ROOT}/nullb{ITEMS}"
    before = set(os.listdir("/sys/block"))
    os.mkdir(NULLB)
    wr(f"{NULLB}/size", parse_size(dev.get("size", "4g")) // (1 << 20))
    wr(f"{NULLB}/queue_mode", 2)
    # timer completions: the device's latency is completion_nsec, not the
    # guest CPU's softirq speed (blkqos's null model: completion_ns)
    wr(f"{NULLB}/irqmode", 2)
    wr(f"{NULLB}/completion_nsec", dev.get("completion_ns", 2000))
    wr(f"{NULLB}/hw_queue_depth", dev.get("queue_depth", 64))
    wr(f"{NULLB}/submit_queues", dev.get("hw_queues", 1))
    wr(f"{NULLB}/mbps", dev.get("mbps", 0))
    wr(f"{NULLB}/memory_backed", 1 if fs else 0)
    wr(f"{NULLB}/power", 1)
    new = []
    for _ in range(100):
        new = sorted(set(os.listdir("/sys/block")) - before)
        if new and os.path.exists(f"/sys/block/{new[0]}/dev"):
            break
        time.sleep(0.05)
    DEV = new[0]
    if "max_sectors_kb" in dev:
        wr(f"/sys/block/{DEV}/queue/max_sectors_kb", dev["max_sectors_kb"])
    return rd(f"/sys/block/{DEV}/dev").strip()


def teardown_nullb():
    if NULLB and os.path.isdir(NULLB) and rd(f"{NULLB}/power").strip() != "0":
        wr(f"{NULLB}/power", 0)


TRACING = "/sys/kernel/tracing"
TRACE_EVENTS = ["iocost/iocost_ioc_vrate_adj", "iocost/iocost_iocg_activate",
                "iocost/iocost_iocg_idle", "iocost/iocost_inuse_shortage",
                "iocost/iocost_inuse_transfer", "iocost/iocost_inuse_adjust",
                "iocost/iocost_iocg_forgive_debt", "block/block_rq_insert",
                "block/block_rq_issue", "block/block_rq_complete",
                "writeback/balance_dirty_pages", "writeback/bdi_dirty_ratelimit"]


def trace_start(throttle):
    """Empty the trace buffer and turn the job's events on; with
    `throttle`, blk-throttle's messages too (the blk tracer on the device,
    its action mask cut to notes: throtl_log writes notes, and the bio
    events it would add are in the block tracepoints already)."""
    if not os.path.isdir(TRACING):
        return False
    wr(f"{TRACING}/tracing_on", "0")
    wr(f"{TRACING}/trace", "")
    wr(f"{TRACING}/buffer_size_kb", "65536")
    for e in TRACE_EVENTS:
        if os.path.exists(f"{TRACING}/events/{e}/enable"):
            wr(f"{TRACING}/events/{e}/enable", "1")
    if throttle and os.path.exists(f"/sys/block/{DEV}/trace/enable"):
        wr(f"{TRACING}/current_tracer", "blk")
        wr(f"/sys/block/{DEV}/trace/act_mask", "notify")
        wr(f"/sys/block/{DEV}/trace/enable", "1")
    wr(f"{TRACING}/tracing_on", "1")
    return True


def trace_stop(out):
    """Stop recording and keep the job's trace. The events, the blk tracer
    and the device's blktrace stay on for the rest of the boot: turning a
    tracepoint on or off patches kernel text, and 6.12 oopsed on an int3
    in __schedule under the emulator when that happened between jobs
    (tracing_on alone patches nothing)."""
    wr(f"{TRACING}/tracing_on", "0")
    with open(f"{TRACING}/trace") as src, open(f"{out}/ktrace.txt", "w") as dst:
        for line in src:
            dst.write(line)
    wr(f"{TRACING}/trace", "")


def cgroups_of(sc):
    names = set(sc.get("cgroups", []))
    for w in sc.get("write", []):
        p = knob_path(w["file"])[len(CG):]
        names.add(os.path.dirname(p) or "/")
    for f in sc.get("fio", []):
        names.add(f.get("cgroup", "/"))
    out = set()
    for n in names:
        parts = [p for p in n.split("/") if p]
        for i in range(1, len(parts) + 1):
            out.add("/" + "/".join(parts[:i]))
    return sorted(out, key=lambda s: (s.count("/"), s))


def make_cgroups(groups, controllers):
    for g in groups:
        parent = os.path.dirname(g)
        for c in controllers:
            wr(f"{CG}{parent if parent != '/' else ''}/cgroup.subtree_control", f"+{c}")
        os.makedirs(CG + g, exist_ok=True)


def remove_cgroups(groups):
    for g in sorted(groups, key=lambda s: -s.count("/")):
        for _ in range(50):
            try:
                os.rmdir(CG + g)
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.1)


def diskstats_line():
    for line in rd("/proc/diskstats").splitlines():
        f = line.split()
        if f[2] == DEV:
            return line.strip()
    return ""


def io_stats(groups):
    out = {}
    for g in groups:
        try:
            out[g] = rd(f"{CG}{g}/io.stat").strip()
        except OSError:
            pass
    return out


class Sampler(threading.Thread):
    """diskstats + io.stat once a second, on a fixed grid from t0."""

    def __init__(self, path, groups, t0):
        super().__init__(daemon=True)
        self.f = open(path, "w")
        self.groups = groups
        self.t0 = t0
        self.stop = threading.Event()

    def sample(self):
        t = time.monotonic() - self.t0
        rec = {"t": round(t, 6), "diskstats": diskstats_line(), "io_stat": io_stats(self.groups)}
        self.f.write(json.dumps(rec) + "\n")

    def run(self):
        k = 1
        while not self.stop.wait(max(0.0, self.t0 + k - time.monotonic())):
            self.sample()
            k += 1

    def finish(self):
        self.stop.set()
        self.join()
        self.sample()
        self.f.close()


def fio_argv(f, scenario_dir, out_json, workdir):
    if "args" in f:
        argv = [a.replace("/dev/nullb1", f"/dev/{DEV}")
                for a in shlex.split(f["args"]) if not a.startswith("--output")]
    else:
        if "job_file" in f:
            text = rd(os.path.join(scenario_dir, f["job_file"]))
        else:
            text = f["job"]
        text = text.replace("/dev/nullb1", f"/dev/{DEV}")
        jf = out_json[:-5] + ".fio"
        wr(jf, text)
        argv = [jf]
    return ["fio", *argv, "--output-format=json", f"--output={out_json}"]


def run_kernel(job, sc, scenario_dir, out, fs, apply_with=""):
    dev = sc.get("device", {})
    sdevid = dev.get("devid", "253:0")
    devid = setup_nullb(dev, fs, job)
    controllers = ["io"]
    pc = sc.get("pagecache", {})
    saved_vm = {}
    workdir = out
    if fs:
        # inode tables zeroed now: with the default lazy init, the mounted
        # file system's ext4lazyinit thread zeroes them in the background
        # during the job (root cgroup writes, 4-9% of w02's device time)
        subprocess.run(["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0",
                        f"/dev/{DEV}"], check=True)
        os.makedirs(FSDIR, exist_ok=True)
        subprocess.run(["mount", f"/dev/{DEV}", FSDIR], check=True)
        workdir = FSDIR
        controllers.append("memory")
        wr(f"{CG}/cgroup.subtree_control", "+memory")
        # writing *_bytes zeroes *_ratio: restore the ratios afterwards
        for key in ("dirty_ratio", "dirty_background_ratio", "dirty_bytes",
                    "dirty_background_bytes"):
            saved_vm[key] = rd(f"/proc/sys/vm/{key}").strip()
        for key in ("dirty_bytes", "dirty_background_bytes"):
            if key in pc:
                wr(f"/proc/sys/vm/{key}", parse_size(pc[key]))
    groups = cgroups_of(sc)
    make_cgroups([g for g in groups if g != "/"], controllers)
    meta = {
        "job": job,
        "kernel": os.uname().release,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "devid": devid,
        "device": DEV,
        "nullb": {k: rd(f"{NULLB}/{k}").strip() for k in
                  ("size", "mbps", "irqmode", "completion_nsec", "hw_queue_depth",
                   "submit_queues", "memory_backed")},
        "queue": {k: rd(f"/sys/block/{DEV}/queue/{k}").strip() for k in
                  ("max_sectors_kb", "nr_requests", "rotational", "scheduler")},
        "vm": {k: rd(f"/proc/sys/vm/{k}").strip() for k in
               ("dirty_bytes", "dirty_ratio", "dirty_background_bytes",
                "dirty_background_ratio", "dirty_expire_centisecs",
                "dirty_writeback_centisecs")},
        "meminfo": {l.split(":")[0]: l.split(":")[1].strip() for l in rd("/proc/meminfo").splitlines()
                    if l.split(":")[0] in ("MemTotal", "MemFree", "MemAvailable")},
        "writes": [],
        "nproc": os.cpu_count(),
    }
    timers = []
    t0 = None

    def apply(w):
        value = w["value"].replace(sdevid, devid)
        path = knob_path(w["file"])
        try:
            wr(path, value)
            meta["writes"].append({"t": round(time.monotonic() - (t0 or time.monotonic()), 6),
                                   "file": path, "value": value})
        except OSError as e:
            meta["writes"].append({"file": path, "value": value, "error": str(e)})

    if apply_with:
        # `blkqos apply` writes the time-0 settings (its checks, read-back
        # and rollback are what this job proves in a real kernel)
        p = subprocess.run([apply_with, "apply", os.path.join(scenario_dir, job + ".toml"),
                            f"--device={devid}"], capture_output=True, text=True)
        meta["apply"] = {"exit": p.returncode, "stdout": p.stdout, "stderr": p.stderr}
    else:
        for w in sc.get("write", []):
            if parse_time_ns(w.get("at", "0")) == 0:
                apply(w)
    meta["knobs"] = {g: {k: rd(f"{CG}{g}/{k}").strip()
                         for k in ("io.max", "io.weight") if os.path.exists(f"{CG}{g}/{k}")}
                     for g in groups if g != "/"}
    for k in ("io.cost.model", "io.cost.qos"):
        meta["knobs"].setdefault("/", {})[k] = rd(f"{CG}/{k}").strip()
    wr(f"{out}/diskstats.start", diskstats_line() + "\n")
    throttle = any("io.max" in w.get("file", "") for w in sc.get("write", []))
    traced = trace_start(throttle)
    t0 = time.monotonic()
    sampler = Sampler(f"{out}/samples.jsonl", groups, t0)
    sampler.start()
    procs = []
    for i, f in enumerate(sc.get("fio", [])):
        argv = fio_argv(f, scenario_dir, f"{out}/fio{i}.json", workdir)
        cg = f.get("cgroup", "/")
        sh = f"echo $$ > {CG}{cg if cg != '/' else ''}/cgroup.procs; exec {shlex.join(argv)}"
        procs.append(subprocess.Popen(["sh", "-c", sh], cwd=workdir,
                                      stdout=subprocess.DEVNULL, stderr=open(f"{out}/fio{i}.err", "w")))
    # timed writes count from the first IO, as a simulated run's time does
    # (fio's own start-up takes a second or two in the emulated guest)
    timed = [w for w in sc.get("write", []) if parse_time_ns(w.get("at", "0"))]
    if timed:
        def ios():
            f = diskstats_line().split()
            return int(f[3]) + int(f[7]) if len(f) > 7 else 0
        base = ios()
        while ios() == base and any(p.poll() is None for p in procs):
            time.sleep(0.0005)
        io_start = time.monotonic()
        meta["io_start_s"] = round(io_start - t0, 6)
        for w in timed:
            at = parse_time_ns(w["at"])
            t = threading.Timer(max(0.0, at / 1e9 - (time.monotonic() - io_start)), apply, [w])
            t.start()
            timers.append(t)
    meta["fio_exit"] = [p.wait() for p in procs]
    meta["elapsed_s"] = round(time.monotonic() - t0, 3)
    if traced:
        trace_stop(out)
    for t in timers:
        t.cancel()
    sampler.finish()
    wr(f"{out}/diskstats.end", diskstats_line() + "\n")
    wr(f"{out}/io.stat", "".join(f"{g} {s}\n" for g, s in io_stats(groups).items()))
    wr(f"{out}/meta.json", json.dumps(meta, indent=1) + "\n")
    if fs:
        # dirty pages of removed files are dropped, not written back under
        # the limits at umount
        for name in os.listdir(FSDIR):
            p = os.path.join(FSDIR, name)
            if os.path.isfile(p):
                os.remove(p)
        subprocess.run(["umount", FSDIR])
        for key, v in saved_vm.items():
            if v != "0":
                wr(f"/proc/sys/vm/{key}", v)
    remove_cgroups([g for g in groups if g != "/"])
    teardown_nullb()


def run_real(job, scenario_path, sc, out, blkqos):
    """The same scenario on blkqos's real engine, over the same null_blk."""
    dev = sc.get("device", {})
    sdevid = dev.get("devid", "253:0")
    devid = setup_nullb(dev, False, job + "-real")
    text = rd(scenario_path).replace(sdevid, devid)
    text = text.replace("/dev/nullb1", f"/dev/{DEV}")
    text = text.replace("[device]\n", f'[device]\npath = "/dev/{DEV}"\nbackend = "io_uring"\n', 1)
    n = 0

    def fio_out(m):
        nonlocal n
        s = f'[[fio]]\noutput = "fio{n}.json"\noutput_format = "json"\n'
        n += 1
        return s

    text = re.sub(r"^\[\[fio\]\]\n", fio_out, text, flags=re.M)
    wr(f"{out}/scenario.toml", text)
    wr(f"{out}/diskstats.start", diskstats_line() + "\n")
    t0 = time.monotonic()
    p = subprocess.run([blkqos, "run", f"{out}/scenario.toml", "--eta=never",
                        f"--io-stat={out}/io.stat"],
                       cwd=out, stdout=open(f"{out}/blkqos.out", "w"), stderr=subprocess.STDOUT)
    wr(f"{out}/diskstats.end", diskstats_line() + "\n")
    meta = {"job": job, "kernel": os.uname().release, "engine": "blkqos --backend=real (io_uring)",
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "devid": devid,
            "exit": p.returncode, "elapsed_s": round(time.monotonic() - t0, 3)}
    wr(f"{out}/meta.json", json.dumps(meta, indent=1) + "\n")
    teardown_nullb()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--matrix", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--jobs", default="")
    ap.add_argument("--also", default="")
    ap.add_argument("--blkqos", default="")
    # the blkqos that writes the settings of jobs marked `apply = true`
    ap.add_argument("--blkqos-apply", default="")
    a = ap.parse_args()
    with open(a.matrix, "rb") as f:
        matrix = tomllib.load(f)
    mdir = os.path.join(os.path.dirname(os.path.abspath(a.matrix)), "matrix")
    for job in matrix["job"]:
        name = job["name"]
        if (a.jobs and not re.search(a.jobs, name)) or (a.also and not re.search(a.also, name)):
            continue
        path = os.path.join(mdir, name + ".toml")
        with open(path, "rb") as f:
            sc = tomllib.load(f)
        out = os.path.join(a.out, name)
        os.makedirs(out, exist_ok=True)
        t = time.monotonic()
        try:
            apply_with = a.blkqos_apply if job.get("apply") else ""
            run_kernel(name, sc, mdir, out, job.get("fs") == "ext4", apply_with)
        except Exception as e:  # keep going: one broken job must not lose the others
            print(f"lab: {name}: {e}", file=sys.stderr)
            teardown_nullb()
        print(f"lab: {name} kernel {time.monotonic() - t:.1f}s", flush=True)
        if a.blkqos and job.get("real"):
            rout = os.path.join(out, "real")
            os.makedirs(rout, exist_ok=True)
            t = time.monotonic()
            try:
                run_real(name, path, sc, rout, a.blkqos)
            except Exception as e:
                print(f"lab: {name} real: {e}", file=sys.stderr)
                teardown_nullb()
            print(f"lab: {name} real {time.monotonic() - t:.1f}s", flush=True)


if __name__ == "__main__":
    main()
