#!/bin/bash
# Record the devices `blkqos calibrate` is proven on, as fixtures under
# lab/calibrate/fixtures/NAME/: calibrate.json (every round's measurements,
# `blkqos calibrate --output-format=json`), heldout.N.json (fio's JSON of
# lab/calibrate/heldout.fio on the same device, REPEAT runs), and
# recipe.txt (how, where, which kernel). The test
# crates/cli/tests/it/tier_calibrate/calibrate.rs fits each again and predicts the held-out
# job. Record on an otherwise idle machine, as root.
#
#   lab/calibrate/record.sh loop-ram            # loop device over a file in /dev/shm
#   lab/calibrate/record.sh loop-disk           # loop device (direct IO) over a file on the root disk
#   KLAB=path/to/klab lab/calibrate/record.sh nullb KVER   # null_blk inside kernel KVER under QEMU
#
# fio runs the calibration jobs too (`blkqos calibrate --runner=fio`): the
# held-out reference is fio's, and a model fitted to one program predicts
# that program. RUNNER=blkqos measures with blkqos's own engine instead,
# into lab/calibrate/worked-example/ (the README's worked example, which
# calibrates as a user would by default).
#
# IDLE=poll holds /dev/cpu_dma_latency at 0 while the loop devices are
# recorded (the PM QoS request tuned's latency-performance profile and
# cyclictest make): idle CPUs poll instead of entering an idle state, so
# a sleeping fio or loop worker wakes without the CPU's idle exit
# (in a VM, a halted vCPU's wake-up through the hypervisor). The fixture
# directory gets the suffix -idle-poll.
#
# TAG is appended to the fixture directory: a second recording
# of the same device at another hour (TAG=-2) keeps the first.
#
# Environment: ROUNDS (3), SECS (2), REPEAT (3), RUNNER (fio), IDLE
# (default or poll), TAG (none), COMPLETION_NSEC (50000), MBPS (100) for
# null_blk.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lab/calibrate/lib.sh
. "$here/lib.sh"
repo=$(cd "$here/../.." && pwd)
blkqos=${BLKQOS:-$repo/target/release/blkqos}
ROUNDS=${ROUNDS:-3} SECS=${SECS:-2} REPEAT=${REPEAT:-3} RUNNER=${RUNNER:-fio}
case $RUNNER in
fio) fixtures=$here/fixtures ;;
blkqos) fixtures=$here/worked-example ;;
*) echo "RUNNER=$RUNNER: use fio or blkqos" >&2; exit 2 ;;
esac
COMPLETION_NSEC=${COMPLETION_NSEC:-50000} MBPS=${MBPS:-100} TAG=${TAG:-}
idle_mode

# calibrate DEV and run the held-out job on it into $out
measure() {
    local dev=$1 out=$2
    "$blkqos" calibrate "$dev" --runner="$RUNNER" --write --allow-destructive --rounds="$ROUNDS" \
        --time="$SECS" --no-check --output-format=json > "$out/calibrate.json"
    for i in $(seq 1 "$REPEAT"); do
        fio "$here/heldout.fio" --filename="$dev" --output-format=json \
            --output="$out/heldout.$i.json"
    done
}

recipe() {
    local out=$1; shift
    {
        echo "recorded $(date -u +%Y-%m-%dT%H:%MZ) by lab/calibrate/record.sh $*"
        echo "kernel: $(cat "$out/kernel.txt" 2>/dev/null || uname -r)"
        echo "fio: $(fio --version)"
        echo "blkqos: $("$blkqos" --version)"
        echo "ROUNDS=$ROUNDS SECS=$SECS REPEAT=$REPEAT RUNNER=$RUNNER IDLE=$IDLE TAG=$TAG"
        echo "cpu idle: $(idle_state)"
        echo "cpus: $(nproc); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
    } > "$out/recipe.txt"
}

case ${1:-} in
loop-ram | loop-disk)
    kind=$1
    out=$fixtures/$kind-$(uname -r)$suffix$TAG
    mkdir -p "$out"
    # held for the script's life (fd 9)
    [ "$IDLE" = poll ] && idle_hold
    loop_setup "$kind" calibrate
    echo "$kind: $dev over $backing (direct IO: $(cat /sys/block/"${dev#/dev/}"/loop/dio))" >&2
    recipe "$out" "$@"
    echo "backing: $backing ($(findmnt -no FSTYPE,SOURCE -T "$backing" | head -1 | tr -s ' ')), loop dio=$(cat /sys/block/"${dev#/dev/}"/loop/dio)" >> "$out/recipe.txt"
    measure "$dev" "$out"
    ;;
nullb)
    kver=${2:?nullb needs a kernel version (klab list)}
    [ "$IDLE" = default ] || { echo "IDLE=$IDLE: only for the loop devices (the guest's CPUs are QEMU's)" >&2; exit 2; }
    klab=${KLAB:?set KLAB to the klab script}
    out=$fixtures/nullb-c$((COMPLETION_NSEC / 1000))us-${MBPS}mbps-$kver$TAG
    mkdir -p "$out"
    BLKQOS=$blkqos HERE=$here COMPLETION_NSEC=$COMPLETION_NSEC MBPS=$MBPS ROUNDS=$ROUNDS \
        SECS=$SECS REPEAT=$REPEAT RUNNER=$RUNNER \
        KLAB_PASS="BLKQOS HERE COMPLETION_NSEC MBPS ROUNDS SECS REPEAT RUNNER" \
        "$klab" run "$kver" "$here/guest_nullb.sh" "$out"
    rm -f "$out"/.klab-* "$out/scheduler.txt"
    recipe "$out" "$@"
    echo "null_blk: queue_mode=2 irqmode=2 completion_nsec=$COMPLETION_NSEC mbps=$MBPS hw_queue_depth=64 size=1024 MiB, in a QEMU (TCG) guest with 2 vCPUs" >> "$out/recipe.txt"
    ;;
*)
    echo "usage: $0 loop-ram | loop-disk | nullb KVER" >&2
    exit 2
    ;;
esac
echo "recorded $out" >&2
