#!/bin/bash
# Between two depths of the calibration's sweep: fio's random 4 KiB reads
# at iodepth 8, 10, 12, 14 and 16 on a loop device, in turn, REPEAT times.
# The `fes` model interpolates the time between completions linearly in
# log2(depth) between 8 and 16.
#
# Two engines, because fio's io_uring rounds its ring up to a power of two
# (fio_ioring_init) and then keeps up to that many IOs in flight whatever
# iodepth_low says: io_uring at iodepth=10, 12 or 14 runs 10-16, 12-16,
# 14-16 in flight (its "IO depths" line and Little's law on its own
# numbers say so). libaio keeps the depth written, so the libaio rows are
# the device at exact depths (with libaio's per-IO cost, not io_uring's:
# compare libaio rows with libaio rows). The io_uring rows at 8 and 16 tie
# them to the calibration, and `12/16` is io_uring at iodepth=12 as the
# held-out job runs (refills to 16, reaps down to 12). Each row also has
# the mean IOs in flight by Little's law (IOPS x mean latency).
# Writes lab/calibrate/depth-between/KIND-KERNEL-TIME.txt. As root, on an
# idle machine; IDLE=poll holds /dev/cpu_dma_latency at 0.
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
    echo "# fio --rw=randread --bs=4k --direct=1 --runtime=4 on $dev over $backing"
    echo "# engine depth: libaio at exact depths; io_uring at 8 and 16, and 12/16 (iodepth=12: 12-16 in flight)"
    echo "# run engine depth iops lat_mean_us lat_p50_us lat_p99_us in_flight"
    for r in $(seq 1 "$REPEAT"); do
        for run in libaio:8 libaio:10 libaio:12 libaio:14 libaio:16 io_uring:8 io_uring:16 io_uring:12/16; do
            engine=${run%%:*} depth=${run#*:}
            fio --name=between --filename="$dev" --rw=randread --bs=4k \
                --iodepth="${depth%%/*}" --ioengine="$engine" --direct=1 \
                --norandommap --randrepeat=0 --lat_percentiles=1 \
                --runtime=4 --time_based --output-format=json |
                jq -r --arg r "$r" --arg e "$engine" --arg d "$depth" '.jobs[0].read |
                    [$r, $e, $d, (.iops | round),
                     (.lat_ns.mean / 1000 * 10 | round / 10),
                     (.lat_ns.percentile["50.000000"] / 1000 * 10 | round / 10),
                     (.lat_ns.percentile["99.000000"] / 1000 * 10 | round / 10),
                     (.iops * .lat_ns.mean / 1e9 * 10 | round / 10)] | join(" ")'
        done
    done
} > "$out"
cat "$out"
