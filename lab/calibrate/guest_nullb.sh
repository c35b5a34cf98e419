#!/bin/bash
# Inside a real kernel (the lab VM): calibrate a null_blk and run the
# held-out job on it. Environment: BLKQOS (the binary), HERE (this
# directory), COMPLETION_NSEC, MBPS, ROUNDS, SECS, REPEAT, RUNNER (who runs
# the calibration jobs: fio or blkqos).
set -euo pipefail
d=/sys/kernel/config/nullb/nullb1
mkdir $d
echo 1024 > $d/size                 # MiB
echo 2 > $d/queue_mode              # blk-mq
echo 2 > $d/irqmode                 # timer: completion_nsec after start
echo "$COMPLETION_NSEC" > $d/completion_nsec
echo "$MBPS" > $d/mbps
echo 64 > $d/hw_queue_depth
echo 1 > $d/power
uname -r > /mnt/kernel.txt
"$BLKQOS" calibrate /dev/nullb1 --runner="$RUNNER" --write --allow-destructive --rounds="$ROUNDS" \
    --time="$SECS" --no-check --output-format=json > /mnt/calibrate.json
for i in $(seq 1 "$REPEAT"); do
    fio "$HERE/heldout.fio" --filename=/dev/nullb1 --output-format=json \
        --output=/mnt/heldout.$i.json
done
