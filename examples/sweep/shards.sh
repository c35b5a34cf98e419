#!/bin/sh
# The example sweep split in N shards and merged, on one machine: what a
# Kubernetes Indexed Job or a Slurm array does across machines
# (docs/SWEEP.md). The merged report is the one `blkqos sweep` prints for
# the whole sweep, byte for byte; the script checks it.
#
#   examples/sweep/shards.sh [N] [OUTDIR]
#
# N: number of shards (default 3). OUTDIR: where the shard files go
# (default: a temporary directory, removed at the end). BLKQOS=path/to/blkqos
# overrides the binary (default: target/release/blkqos of this checkout,
# built if missing).
set -eu

n=${1:-3}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
if [ -z "${BLKQOS:-}" ]; then
    BLKQOS="$root/target/release/blkqos"
    [ -x "$BLKQOS" ] || (cd "$root" && cargo build --release -q -p blkqos)
fi
if [ -n "${2:-}" ]; then
    out=$2
    mkdir -p "$out"
else
    out=$(mktemp -d)
    trap 'rm -rf "$out"' EXIT
fi

# the sweep: every shard and the single run must be given the same definition
sweep() {
    "$BLKQOS" sweep "$here/iocost-two-groups.toml" \
        --vary 'io.cost.qos:rlat=250..20000:log:8' \
        --vary '/cgB/io.weight=100,400' \
        --objective 'max total_bw_mbps subject to /cgB.clat_p99_ms<=5' "$@"
}

i=1
while [ "$i" -le "$n" ]; do
    # one shard per machine in a real deployment; one thread each here
    sweep --shard="$i/$n" --jobs=1 --out="$out/shard-$i.json" &
    i=$((i + 1))
done
wait

"$BLKQOS" sweep --merge "$out"/shard-*.json --out="$out/merged.txt"
cat "$out/merged.txt"
sweep --out="$out/single.txt" 2>/dev/null
cmp "$out/merged.txt" "$out/single.txt"
echo "shards.sh: the $n merged shards print the single run's report, byte for byte" >&2
