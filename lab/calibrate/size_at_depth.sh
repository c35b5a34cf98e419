#!/bin/bash
# What a request's size costs at depth 16 on a loop device over RAM: fio's
# random reads of 4, 8, 16 and 32 KiB at iodepth=16, in turn, REPEAT times
# (the machine's speed drifts from minute to minute; interleaving keeps the
# sizes comparable). Writes lab/calibrate/size-at-depth/loop-ram-KERNEL-TIME.txt.
# As root, on an idle machine. IDLE=poll holds /dev/cpu_dma_latency at 0
# (as lab/calibrate/record.sh does).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lab/calibrate/lib.sh
. "$here/lib.sh"
REPEAT=${REPEAT:-3}
probe_start size-at-depth loop-ram
{
    echo "# $(date -u +%Y-%m-%dT%H:%MZ) lab/calibrate/size_at_depth.sh IDLE=$IDLE REPEAT=$REPEAT"
    echo "# kernel $(uname -r), $(fio --version), $(nproc) cpus, load before: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "# $(idle_state)"
    echo "# fio --rw=randread --iodepth=16 --ioengine=io_uring --direct=1 --runtime=4 on $dev over $backing"
    echo "# run bs dir iops lat_p50_us lat_p99_us"
    for r in $(seq 1 "$REPEAT"); do
        for bs in 4k 8k 16k 32k; do
            fio --name=size --filename="$dev" --rw=randread --bs=$bs --iodepth=16 \
                --ioengine=io_uring --direct=1 --norandommap --randrepeat=0 \
                --lat_percentiles=1 --runtime=4 --time_based --output-format=json |
                fio_summary "$r" "$bs"
        done
    done
} > "$out"
cat "$out"
