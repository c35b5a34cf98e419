#!/usr/bin/env python3
"""Real-engine benchmarks of docs/BENCHMARKS.md ("Real engine").

    cargo build --release -p blkqos
    python3 docs/bench_real_engine.py [--blkqos target/release/blkqos]
        [--dir DIR] [--seconds 3] [--rounds 3] [--only file,ram,null,accounting]

* file: 4 KiB randread QD32 direct=1 io_uring, one job file, on a scratch
  file in DIR (default: the temp dir): blkqos with no controller, blkqos
  with io.max + iocost configured but not binding, and fio; alternating,
  ROUNDS times. IOPS, and CPU per IO from getrusage(RUSAGE_CHILDREN)
  (user + system time of the child, its kernel io_uring workers included).
* ram: the same job on a RAM-backed block device (zram0 sized to 1 GiB
  if it is unused, else a loop device over a 1 GiB file in /dev/shm; needs
  root): no disk or host throttle sets the pace, so the ratio compares the
  programs. blkqos with no controller, with io.max + iocost not binding,
  and fio, alternating ROUNDS times; ratio of medians and median of the
  per-round ratios.
* null: the engine's ceiling on /dev/zero (buffered, QD32) with the full
  controller stack (io.max + iocost, not binding): IOPS per core =
  IOPS / (CPU seconds / wall seconds), io_uring and threads; fio for scale.
* accounting: /dev/zero, full stack, --iostats=precise vs --iostats=off,
  alternating in one session (--acct-rounds pairs); ratio of the medians
  and median of the per-pair ratios.

CPU per IO has the program's fixed start-up CPU (a 10 ms run of the same
command, median of 3) subtracted for the file runs.

Only the standard library; prints one line per run, then a summary.
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time


def devid(path):
    st = os.stat(path)
    return f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"


def run(cmd):
    """Run cmd; return (fio JSON, wall s, child CPU s)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{p.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return json.loads(p.stdout[p.stdout.index("{"):]), wall, cpu


def summary(name, rows):
    iops = [r[0] for r in rows]
    cpu_ns = [r[1] for r in rows]
    per_core = [r[2] for r in rows]
    print(
        f"  {name:<34} IOPS median {statistics.median(iops):>10.0f} "
        f"(range {min(iops):.0f}-{max(iops):.0f}), "
        f"CPU/IO {statistics.median(cpu_ns):6.0f} ns ({min(cpu_ns):.0f}-{max(cpu_ns):.0f}), "
        f"IOPS/core {statistics.median(per_core):>10.0f}"
    )
    return statistics.median(iops), statistics.median(cpu_ns)


STARTUP = {}


def startup_cpu(label, cmd):
    """Median CPU of a 10 ms run of cmd: the fixed cost (process start,
    parsing, setup) subtracted from the per-IO CPU of the real runs."""
    if label not in STARTUP:
        STARTUP[label] = statistics.median(run(cmd)[2] for _ in range(3))
    return STARTUP[label]


def measure(label, cmd, results, seconds, startup=0.0):
    doc, wall, cpu = run(cmd)
    cpu = max(cpu - startup, 0.0)
    j = doc["jobs"][0]["read"]
    ios, runtime_ms = j["total_ios"], j["runtime"]
    iops = ios * 1000.0 / max(runtime_ms, 1)
    cpu_ns = cpu * 1e9 / max(ios, 1)
    busy = cpu / max(wall, 1e-9)
    per_core = iops / max(busy, 1e-9)
    print(
        f"{label:<36} {iops:>10.0f} IOPS  {cpu:5.2f} s CPU in {wall:4.1f} s "
        f"({busy:4.2f} cores)  {cpu_ns:6.0f} ns CPU/IO  {per_core:>10.0f} IOPS/core",
        flush=True,
    )
    results.setdefault(label, []).append((iops, cpu_ns, per_core))


def ram_device(tmpdir):
    """A RAM-backed block device of 1 GiB and a cleanup function: zram0
    when it exists and is unused (sized here), else a loop device over a
    sparse file in /dev/shm."""
    z = "/sys/block/zram0/disksize"
    if os.path.exists(z):
        with open(z) as fh:
            size = int(fh.read().strip() or 0)
        if size == 0:
            with open(z, "w") as fh:
                fh.write("1G")
            size = 1 << 30
        if size >= 1 << 30:
            return "/dev/zram0", lambda: None
    backing = tempfile.NamedTemporaryFile(dir="/dev/shm", delete=False)
    backing.truncate(1 << 30)
    backing.close()
    lo = subprocess.run(["losetup", "--find", "--show", backing.name], check=True,
                        stdout=subprocess.PIPE, text=True).stdout.strip()

    def cleanup():
        subprocess.run(["losetup", "-d", lo])
        os.unlink(backing.name)
    return lo, cleanup


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--blkqos", default="target/release/blkqos")
    ap.add_argument("--dir", default=None)
    ap.add_argument("--seconds", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--acct-rounds", type=int, default=8)
    ap.add_argument("--only", default="file,ram,null,accounting")
    a = ap.parse_args()
    parts = a.only.split(",")
    tmp = tempfile.TemporaryDirectory(dir=a.dir)
    t = str(a.seconds)
    print(f"load average at start: {os.getloadavg()}")

    def stack(dev, extra_model=100_000_000):
        m = extra_model
        return [
            "--cgroup=bench",
            f"--io-max={dev} riops={m} rbps={m * 4096}",
            "--io-weight=100",
            f"--io-cost-qos={dev} enable=1",
            f"--io-cost-model={dev} ctrl=user model=linear rbps={m * 4096} rseqiops={m} "
            f"rrandiops={m} wbps={m * 4096} wseqiops={m} wrandiops={m}",
        ]

    if "file" in parts:
        f = os.path.join(tmp.name, "bench.dat")
        jf = os.path.join(tmp.name, "randread.fio")
        jf10 = os.path.join(tmp.name, "randread-10ms.fio")
        for path, runtime in ((jf, t), (jf10, "10ms")):
            with open(path, "w") as fh:
                fh.write(
                    f"[randread]\nfilename={f}\nsize=1g\nrw=randread\nbs=4k\niodepth=32\n"
                    f"direct=1\nioengine=io_uring\nnorandommap\nruntime={runtime}\ntime_based\n"
                )
        # blkqos lays the file out; fio reuses it
        subprocess.run([a.blkqos, "run", jf, "--backend=io_uring", "--runtime=1ms",
                        "--output-format=json"],
                       stdout=subprocess.DEVNULL, check=True)
        dev = devid(f)
        bq = [a.blkqos, "run", jf, "--backend=io_uring", "--output-format=json"]
        fio = ["fio", jf, "--output-format=json"]
        s_bq = startup_cpu("blkqos", [a.blkqos, "run", jf10, "--backend=io_uring",
                                      "--output-format=json"])
        s_fio = startup_cpu("fio", ["fio", jf10, "--output-format=json"])
        print(f"startup CPU (subtracted below): blkqos {s_bq * 1e3:.0f} ms, fio {s_fio * 1e3:.0f} ms")
        res = {}
        for _ in range(a.rounds):
            measure("file blkqos io_uring, no controller", bq, res, t, s_bq)
            measure("file blkqos io_uring, io.max+iocost", bq + stack(dev), res, t, s_bq)
            measure("file fio 3.33 io_uring", fio, res, t, s_fio)
        print("file summary:")
        s = {k: summary(k, v) for k, v in res.items()}
        fio = s["file fio 3.33 io_uring"]
        for k in ("file blkqos io_uring, no controller", "file blkqos io_uring, io.max+iocost"):
            print(f"  {k}: IOPS {s[k][0] / fio[0]:.2f}x fio, CPU/IO {s[k][1] / fio[1]:.2f}x fio")

    if "ram" in parts:
        rdev, cleanup = ram_device(tmp.name)
        try:
            jf = os.path.join(tmp.name, "ram.fio")
            with open(jf, "w") as fh:
                fh.write(
                    f"[randread]\nfilename={rdev}\nsize=1g\nrw=randread\nbs=4k\niodepth=32\n"
                    f"direct=1\nioengine=io_uring\nnorandommap\nruntime={t}\ntime_based\n"
                )
            st = os.stat(rdev)
            dev = f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"
            bq = [a.blkqos, "run", jf, "--backend=io_uring", "--output-format=json"]
            res = {}
            for _ in range(a.rounds):
                measure("ram blkqos io_uring, no controller", bq, res, t)
                measure("ram blkqos io_uring, io.max+iocost", bq + stack(dev), res, t)
                measure("ram fio 3.33 io_uring", ["fio", jf, "--output-format=json"], res, t)
            print(f"ram summary ({rdev}):")
            s = {k: summary(k, v) for k, v in res.items()}
            fio_rows = res["ram fio 3.33 io_uring"]
            for k in ("ram blkqos io_uring, no controller", "ram blkqos io_uring, io.max+iocost"):
                per_round = sorted(b[0] / f_[0] for b, f_ in zip(res[k], fio_rows))
                print(f"  {k}: IOPS {s[k][0] / s['ram fio 3.33 io_uring'][0]:.2f}x fio "
                      f"(per round: median {statistics.median(per_round):.2f}, "
                      f"{per_round[0]:.2f}-{per_round[-1]:.2f}), "
                      f"CPU/IO {s[k][1] / s['ram fio 3.33 io_uring'][1]:.2f}x fio")
        finally:
            cleanup()

    null_job = ["--name=null", "--filename=/dev/zero", "--rw=randread", "--bs=4k",
                "--ioengine=io_uring", "--iodepth=32", "--norandommap", "--size=1g",
                f"--runtime={t}", "--time_based", "--output-format=json"]
    zdev = devid("/dev/zero")
    if "null" in parts:
        res = {}
        for _ in range(a.rounds):
            measure("/dev/zero blkqos io_uring, no controller",
                    [a.blkqos, "run", *null_job, "--backend=io_uring"], res, t)
            for be in ("io_uring", "threads"):
                measure(f"/dev/zero blkqos {be}, full stack",
                        [a.blkqos, "run", *null_job, f"--backend={be}"] + stack(zdev), res, t)
            measure("/dev/zero fio 3.33 io_uring", ["fio", *null_job], res, t)
        print("null summary:")
        for k, v in res.items():
            summary(k, v)

    if "accounting" in parts:
        res = {}
        for _ in range(a.acct_rounds):
            for mode in ("precise", "off"):
                measure(f"/dev/zero full stack, iostats={mode}",
                        [a.blkqos, "run", *null_job, "--backend=io_uring", f"--iostats={mode}"]
                        + stack(zdev), res, t)
        print("accounting summary:")
        p = summary("/dev/zero full stack, iostats=precise", res["/dev/zero full stack, iostats=precise"])
        o = summary("/dev/zero full stack, iostats=off", res["/dev/zero full stack, iostats=off"])
        print(f"  precise/off: IOPS {p[0] / o[0]:.3f}, CPU/IO {p[1] / o[1]:.3f} (ratio of medians)")
        pairs = list(zip(res["/dev/zero full stack, iostats=precise"],
                         res["/dev/zero full stack, iostats=off"]))
        ri = sorted(a_[0] / b_[0] for a_, b_ in pairs)
        rc = sorted(a_[1] / b_[1] for a_, b_ in pairs)
        print(f"  precise/off per adjacent pair: IOPS median {statistics.median(ri):.3f} "
              f"({ri[0]:.3f}-{ri[-1]:.3f}), CPU/IO median {statistics.median(rc):.3f} "
              f"({rc[0]:.3f}-{rc[-1]:.3f})")
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
