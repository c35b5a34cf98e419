#!/bin/sh
# Seed 003's two columns: the disk's write rate each second with the async
# writeback throttling (io-throttle's kiothrottled; Linux cgroup writeback)
# and with throttling in the flusher's own context (--writeback=sync), then
# each writer's rate as dd reported it.
#
#   examples/seed-003-writeback/run.sh [OUTDIR]
#
# BLKQOS=path/to/blkqos overrides the binary (default: target/release/blkqos
# of this checkout, built if missing).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
if [ -z "${BLKQOS:-}" ]; then
    BLKQOS="$root/target/release/blkqos"
    [ -x "$BLKQOS" ] || (cd "$root" && cargo build --release -q -p blkqos)
fi
if [ -n "${1:-}" ]; then
    out=$1
    mkdir -p "$out"
else
    out=$(mktemp -d)
    trap 'rm -rf "$out"' EXIT
fi

for mode in async sync; do
    mkdir -p "$out/$mode"
    cp "$here/scenario.toml" "$out/$mode/"
    (cd "$out/$mode" && "$BLKQOS" run scenario.toml --writeback="$mode" >/dev/null)
done

echo "disk write rate per second (MB/s), both writers active:"
echo "  async    sync"
# the per-second lines of both reports, while both writers run (60 s)
paste "$out/async/writeback.txt" "$out/sync/writeback.txt" |
    awk -F'\t' '$1 ~ /^ *[0-9]/ { split($1, a, " "); split($2, b, " ");
        if (a[1] <= 60) printf "%7s %7s\n", a[2], b[2] }'
for mode in async sync; do
    echo
    echo "$mode: the writers (fio's WRITE line; runtime includes end_fsync):"
    grep -h "WRITE:" "$out/$mode/dd-a.txt" "$out/$mode/dd-b.txt"
done
