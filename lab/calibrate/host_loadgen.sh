#!/bin/bash
# On this machine: the same 4 KiB random reads run by fio and by blkqos's
# real engine on a loop device over RAM, in turn, REPEAT times, at depth 1
# and 16: what each program's own CPU time and wake-ups do to the numbers
# (docs/calibrate.md, "Who runs the jobs"). Writes
# lab/calibrate/loadgen/loop-ram-KERNEL-TIME.txt (a VM's wake-ups depend
# on its host's load, so each run is kept). As root, on an idle machine;
# BLKQOS is the binary (default target/release/blkqos). IDLE=poll holds
# /dev/cpu_dma_latency at 0 (as lab/calibrate/record.sh does).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lab/calibrate/lib.sh
. "$here/lib.sh"
repo=$(cd "$here/../.." && pwd)
blkqos=${BLKQOS:-$repo/target/release/blkqos}
REPEAT=${REPEAT:-3}
probe_start loadgen loop-ram
common="--name=p --filename=$dev --rw=randread --bs=4k --ioengine=io_uring --direct=1 --norandommap --randrepeat=0 --lat_percentiles=1 --runtime=4 --time_based --output-format=json"
# fio's JSON on stdin: one line
summary() {
    python3 -c '
import json, sys
j = json.load(sys.stdin)["jobs"][0]
x = j["read"]
p = x["lat_ns"]["percentile"]
print(*sys.argv[1:], round(x["iops"]), round(p["50.000000"] / 1e3, 1),
      round(p["99.000000"] / 1e3, 1), j["ctx"], round(j["usr_cpu"] + j["sys_cpu"], 1))
' "$@"
}
{
    echo "# $(date -u +%Y-%m-%dT%H:%MZ) lab/calibrate/host_loadgen.sh REPEAT=$REPEAT IDLE=$IDLE"
    echo "# kernel $(uname -r), $(fio --version), $("$blkqos" --version), $(nproc) cpus, load before: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "# $dev over $backing; $(idle_state)"
    echo "# run runner depth iops lat_p50_us lat_p99_us ctx_switches cpu_pct"
    for r in $(seq 1 "$REPEAT"); do
        for depth in 1 16; do
            # shellcheck disable=SC2086 # $common is a list of options
            fio $common --iodepth=$depth | summary "$r" fio "$depth"
            # shellcheck disable=SC2086
            "$blkqos" run $common --iodepth=$depth --backend=io_uring --allow-destructive |
                summary "$r" blkqos "$depth"
        done
    done
} > "$out"
cat "$out"
