#!/bin/bash
# What a request's size costs at depth 16 on a loop device over RAM: fio's
# random reads of 4, 8, 16 and 32 KiB at iodepth=16, in turn, REPEAT times
# (the machine's speed drifts from minute to minute; interleaving keeps the
# sizes comparable). Writes lab/calibrate/size-at-depth/loop-ram-KERNEL.txt.
# As root, on an idle machine. IDLE=poll holds /dev/cpu_dma_latency at 0
# (as lab/calibrate/record.sh does).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
REPEAT=${REPEAT:-3} IDLE=${IDLE:-default}
case $IDLE in
default) suffix= ;;
poll) suffix=-idle-poll ;;
*) echo "IDLE=$IDLE: use default or poll" >&2; exit 2 ;;
esac
out=$here/size-at-depth/loop-ram-$(uname -r)$suffix.txt
mkdir -p "$(dirname "$out")"
if [ "$IDLE" = poll ]; then
    exec 9>/dev/cpu_dma_latency
    printf '\x00\x00\x00\x00' >&9
fi
backing=/dev/shm/blkqos-size-at-depth.img
dd if=/dev/zero of="$backing" bs=16M count=32 status=none
dev=$(losetup --find --show "$backing")
trap 'losetup -d "$dev"; rm -f "$backing"' EXIT
{
    echo "# $(date -u +%Y-%m-%dT%H:%MZ) lab/calibrate/size_at_depth.sh IDLE=$IDLE REPEAT=$REPEAT"
    echo "# kernel $(uname -r), $(fio --version), $(nproc) cpus, load before: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "# /dev/cpu_dma_latency in force: $(od -An -td4 /dev/cpu_dma_latency | tr -d ' ') us"
    echo "# fio --rw=randread --iodepth=16 --ioengine=io_uring --direct=1 --runtime=4 on $dev over $backing"
    echo "# run bs iops lat_p50_us lat_p99_us"
    for r in $(seq 1 "$REPEAT"); do
        for bs in 4k 8k 16k 32k; do
            fio --name=size --filename="$dev" --rw=randread --bs=$bs --iodepth=16 \
                --ioengine=io_uring --direct=1 --norandommap --randrepeat=0 \
                --lat_percentiles=1 --runtime=4 --time_based --output-format=json |
                python3 -c '
import json, sys
j = json.load(sys.stdin)["jobs"][0]["read"]
p = j["lat_ns"]["percentile"]
print(sys.argv[1], sys.argv[2], round(j["iops"]), round(p["50.000000"] / 1e3, 1), round(p["99.000000"] / 1e3, 1))
' "$r" "$bs"
        done
    done
} > "$out"
cat "$out"
