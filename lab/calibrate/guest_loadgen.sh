#!/bin/bash
# Inside a real kernel (the lab VM): the same jobs run by fio and by
# blkqos's real engine on two null_blk devices, one with the 100 MiB/s
# throttle of the calibration fixture and one without, to measure what
# each program's own CPU time per IO does to the numbers (docs/calibrate.md,
# "Who runs the jobs"). Environment: BLKQOS (the binary). Writes
# fio-DEV-RW-BS-DEPTH.json and bq-DEV-RW-BS-DEPTH.json (fio's JSON format).
set -uo pipefail
mk() { # name mbps
    local d=/sys/kernel/config/nullb/$1
    mkdir "$d"
    echo 1024 > "$d/size"; echo 2 > "$d/queue_mode"; echo 2 > "$d/irqmode"
    echo 50000 > "$d/completion_nsec"; echo "$2" > "$d/mbps"
    echo 64 > "$d/hw_queue_depth"; echo 1 > "$d/power"
}
mk nullb1 100
mk nullb2 0
common="--ioengine=io_uring --direct=1 --norandommap --randrepeat=0 --lat_percentiles=1 --runtime=4 --time_based --output-format=json"
for dev in nullb1 nullb2; do
    for spec in "randread 4k 16" "randread 16k 12" "randread 4k 12" "randrw 16k 12"; do
        set -- $spec
        fio --name=p --filename=/dev/$dev --rw=$1 --bs=$2 --iodepth=$3 $common \
            --output=/mnt/fio-$dev-$1-$2-$3.json
        "$BLKQOS" run --name=p --filename=/dev/$dev --rw=$1 --bs=$2 --iodepth=$3 $common \
            --backend=io_uring --allow-destructive --output=/mnt/bq-$dev-$1-$2-$3.json
    done
done
