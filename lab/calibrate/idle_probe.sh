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
# shellcheck source=lab/calibrate/lib.sh
. "$here/lib.sh"
REPEAT=${REPEAT:-3}
out=$here/idle/loop-ram-$(uname -r)-$(date -u +%Y%m%dT%H%MZ).txt
mkdir -p "$(dirname "$out")"
loop_setup loop-ram idle-probe
{
    echo "# $(date -u +%Y-%m-%dT%H:%MZ) lab/calibrate/idle_probe.sh REPEAT=$REPEAT"
    echo "# kernel $(uname -r), $(fio --version), $(nproc) cpus, load before: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "# $(idle_state)"
    echo "# $dev over $backing; poll = /dev/cpu_dma_latency held at 0"
    echo "# run idle job dir iops lat_p50_us lat_p99_us"
    for r in $(seq 1 "$REPEAT"); do
        for idle in default poll; do
            if [ $idle = poll ]; then
                idle_hold
            fi
            fio --name=d1 --filename="$dev" --rw=randread --bs=4k --iodepth=1 \
                --ioengine=io_uring --direct=1 --norandommap --randrepeat=0 \
                --lat_percentiles=1 --runtime=4 --time_based --output-format=json |
                fio_summary "$r" $idle randread-4k-d1
            fio "$here/heldout.fio" --filename="$dev" --output-format=json |
                fio_summary "$r" $idle heldout
            if [ $idle = poll ]; then
                idle_release
            fi
        done
    done
} > "$out"
cat "$out"
