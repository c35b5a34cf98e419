#!/bin/bash
# Do reads and writes slow each other down? fio's random reads, random
# writes and a 70/30 mix of the two (the held-out job's mix), at depth 16,
# of 4 and 16 KiB, on a loop device, in turn, REPEAT times. The calibration
# measures each direction alone, and the `fes` model serves a mix at each
# direction's own time per request; the mix's time between completions
# against 0.7 of the reads' plus 0.3 of the writes' tells whether that
# holds. Writes lab/calibrate/mix-at-depth/KIND-KERNEL-TIME.txt. As root,
# on an idle machine; IDLE=poll holds /dev/cpu_dma_latency at 0.
#
#   lab/calibrate/mix_at_depth.sh loop-ram | loop-disk
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lab/calibrate/lib.sh
. "$here/lib.sh"
kind=${1:?usage: $0 loop-ram | loop-disk}
REPEAT=${REPEAT:-3}
probe_start mix-at-depth "$kind"
{
    echo "# $(date -u +%Y-%m-%dT%H:%MZ) lab/calibrate/mix_at_depth.sh $kind IDLE=$IDLE REPEAT=$REPEAT"
    echo "# kernel $(uname -r), $(fio --version), $(nproc) cpus, load before: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "# $(idle_state)"
    echo "# fio --iodepth=16 --ioengine=io_uring --direct=1 --runtime=4 on $dev over $backing"
    echo "# run bs rw dir iops lat_p50_us lat_p99_us"
    for r in $(seq 1 "$REPEAT"); do
        for bs in 4k 16k; do
            for rw in randread randwrite randrw; do
                fio --name=mix --filename="$dev" --rw=$rw --rwmixread=70 --bs=$bs \
                    --iodepth=16 --ioengine=io_uring --direct=1 --norandommap \
                    --randrepeat=0 --lat_percentiles=1 --runtime=4 --time_based \
                    --output-format=json | fio_summary "$r" $bs $rw
            done
        done
    done
} > "$out"
cat "$out"
# the mix against its directions alone: time between completions, us
python3 - "$out" <<'PY'
import sys, collections
runs = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    if line.startswith("#"):
        continue
    r, bs, rw, d, iops = line.split()[:5]
    runs[(r, bs)][(rw, d)] = float(iops)
for (r, bs), m in sorted(runs.items()):
    alone = 0.7 / m[("randread", "read")] + 0.3 / m[("randwrite", "write")]
    mixed = 1 / (m[("randrw", "read")] + m[("randrw", "write")])
    print(f"# run {r} {bs}: mix {mixed * 1e6:.2f} us between completions, "
          f"directions alone {alone * 1e6:.2f} us: {100 * (mixed / alone - 1):+.1f}%")
PY
