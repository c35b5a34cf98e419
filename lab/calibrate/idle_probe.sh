#!/bin/bash
# Whose spread is the depth-1 spread? fio's random 4 KiB reads at depth 1
# and lab/calibrate/heldout.fio on a loop device over RAM, with the CPUs'
# idle states as they are and with idle polling (/dev/cpu_dma_latency
# held at 0), in turn, REPEAT times. Writes
# lab/calibrate/idle/loop-ram-KERNEL-TIME.txt (a VM's wake-ups depend on
# how busy its host is, so each probe is kept). As root, on an idle
# machine.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
REPEAT=${REPEAT:-3}
out=$here/idle/loop-ram-$(uname -r)-$(date -u +%Y%m%dT%H%MZ).txt
mkdir -p "$(dirname "$out")"
backing=/dev/shm/blkqos-idle-probe.img
dd if=/dev/zero of="$backing" bs=16M count=32 status=none
dev=$(losetup --find --show "$backing")
trap 'losetup -d "$dev"; rm -f "$backing"' EXIT
d=/sys/devices/system/cpu
# fio's JSON on stdin: one line per direction that ran
summary() {
    python3 -c '
import json, sys
j = json.load(sys.stdin)["jobs"][0]
for d in ("read", "write"):
    x = j[d]
    if x["total_ios"] == 0:
        continue
    p = x["lat_ns"]["percentile"]
    print(sys.argv[1], sys.argv[2], sys.argv[3], d, round(x["iops"]),
          round(p["50.000000"] / 1e3, 1), round(p["99.000000"] / 1e3, 1),
          round(p["99.000000"] / p["50.000000"], 2))
' "$@"
}
{
    echo "# $(date -u +%Y-%m-%dT%H:%MZ) lab/calibrate/idle_probe.sh REPEAT=$REPEAT"
    echo "# kernel $(uname -r), $(fio --version), $(nproc) cpus, load before: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "# cpuidle driver $(cat $d/cpuidle/current_driver 2>/dev/null || echo none):" \
        $(for s in $d/cpu0/cpuidle/state*; do [ -e "$s/name" ] && echo "$(cat "$s/name")($(cat "$s/latency")us)"; done)
    echo "# $dev over $backing; poll = /dev/cpu_dma_latency held at 0 (in force without: $(od -An -td4 /dev/cpu_dma_latency | tr -d ' ') us)"
    echo "# run idle job dir iops lat_p50_us lat_p99_us p99/p50"
    for r in $(seq 1 "$REPEAT"); do
        for idle in default poll; do
            if [ $idle = poll ]; then
                exec 9>/dev/cpu_dma_latency
                printf '\x00\x00\x00\x00' >&9
            fi
            fio --name=d1 --filename="$dev" --rw=randread --bs=4k --iodepth=1 \
                --ioengine=io_uring --direct=1 --norandommap --randrepeat=0 \
                --lat_percentiles=1 --runtime=4 --time_based --output-format=json |
                summary "$r" $idle randread-4k-d1
            fio "$here/heldout.fio" --filename="$dev" --output-format=json |
                summary "$r" $idle heldout
            if [ $idle = poll ]; then
                exec 9>&-
            fi
        done
    done
} > "$out"
cat "$out"
