#!/bin/sh
# Seed 001's loop: cgA (1 MiB, QD128) against cgB at 4k, 32k and 256k, one
# simulated 10 s run each, back to back on one device (each starts at the
# vrate the previous one ended at), then the seed's table.
#
#   examples/seed-001-iocost/run.sh [azure|gcp] [reset|hold|hold-v2] [OUTDIR]
#
# A scenario has one cgB block size, so each is a copy of azure.toml or
# gcp.toml with cgB's --bs and output name changed. Reports go to
# OUTDIR/<bs>/ (default: a temporary directory, removed at the end).
# BLKQOS=path/to/blkqos overrides the binary (default: target/release/blkqos
# of this checkout, built if missing).
set -eu

profile=${1:-azure}
variant=${2:-reset}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
src="$here/$profile.toml"
[ -f "$src" ] || { echo "run.sh: no profile $src (use azure or gcp)" >&2; exit 2; }

if [ -z "${BLKQOS:-}" ]; then
    BLKQOS="$root/target/release/blkqos"
    [ -x "$BLKQOS" ] || (cd "$root" && cargo build --release -q -p blkqos)
fi

if [ -n "${3:-}" ]; then
    out=$3
    mkdir -p "$out"
else
    out=$(mktemp -d)
    trap 'rm -rf "$out"' EXIT
fi

reports=""
vrate=""
for bs in 4k 32k 256k; do
    mkdir -p "$out/$bs"
    sed -e "s/--bs=4k /--bs=$bs /" -e "s/cgB_4k\.json/cgB_$bs.json/" "$src" >"$out/$bs/scenario.toml"
    # the device's vrate carries over from the previous run (the kernel
    # keeps it across runs and io.cost.* writes); the first starts at 100%
    [ -z "$vrate" ] || printf '\n[controllers]\niocost_vrate = %s\n' "$vrate" >>"$out/$bs/scenario.toml"
    (cd "$out/$bs" && "$BLKQOS" run scenario.toml --iocost="$variant" --io-stat=io.stat >/dev/null)
    vrate=$(sed -n 's/.*cost\.vrate=\([0-9.]*\).*/\1/p' "$out/$bs/io.stat" | head -1)
    echo "cgB $bs: vrate at the end ${vrate:-?}%" >&2
    reports="$reports $out/$bs/cgA_1m.json $out/$bs/cgB_$bs.json"
done

echo "$profile, iocost=$variant:"
echo
# shellcheck disable=SC2086
"$BLKQOS" summary $reports
