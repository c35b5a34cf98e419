#!/bin/bash
# Between two depths of the calibration's sweep: fio's random 4 KiB reads
# at iodepth 8, 10, 12, 14 and 16 on a loop device, in turn, REPEAT times,
# and at iodepth=12 written as the held-out job's depth is (fio's io_uring
# rounds its ring up to 16 and keeps iodepth_low at 12: it refills to 16
# and reaps down to 12). The `fes` model interpolates the time between
# completions linearly in log2(depth) between 8 and 16. Writes
# lab/calibrate/depth-between/KIND-KERNEL-TIME.txt. As root, on an idle
# machine; IDLE=poll holds /dev/cpu_dma_latency at 0.
#
#   lab/calibrate/depth_between.sh loop-ram | loop-disk
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lab/calibrate/lib.sh
. "$here/lib.sh"
kind=${1:?usage: $0 loop-ram | loop-disk}
REPEAT=${REPEAT:-3}
probe_start depth-between "$kind"
{
    echo "# $(date -u +%Y-%m-%dT%H:%MZ) lab/calibrate/depth_between.sh $kind IDLE=$IDLE REPEAT=$REPEAT"
    echo "# kernel $(uname -r), $(fio --version), $(nproc) cpus, load before: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "# $(idle_state)"
    echo "# fio --rw=randread --bs=4k --ioengine=io_uring --direct=1 --runtime=4 on $dev over $backing"
    echo "# depth 12/16: --iodepth=12 as written (ring of 16, iodepth_low 12); d12: --iodepth=12 --iodepth_low=12"
    echo "# run depth dir iops lat_p50_us lat_p99_us"
    for r in $(seq 1 "$REPEAT"); do
        for depth in 8 10 12 14 16 12/16; do
            if [ "$depth" = 12/16 ]; then
                opts="--iodepth=12"
            else
                # a ring larger than the depth: iodepth_low pinned to it
                opts="--iodepth=$depth --iodepth_low=$depth"
            fi
            # shellcheck disable=SC2086 # $opts is a list of options
            fio --name=between --filename="$dev" --rw=randread --bs=4k $opts \
                --ioengine=io_uring --direct=1 --norandommap --randrepeat=0 \
                --lat_percentiles=1 --runtime=4 --time_based --output-format=json |
                fio_summary "$r" "$depth"
        done
    done
} > "$out"
cat "$out"
