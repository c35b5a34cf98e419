# Shared by the lab/calibrate scripts (sourced, not run): the CPUs' idle
# handling, the loop devices the proofs use, and fio's JSON as one line per
# direction.

# IDLE (default or poll) -> $suffix for output names; exits 2 otherwise.
idle_mode() {
    IDLE=${IDLE:-default}
    case $IDLE in
    default) suffix= ;;
    poll) suffix=-idle-poll ;;
    *) echo "IDLE=$IDLE: use default or poll" >&2; exit 2 ;;
    esac
}

# Hold a 0 us PM QoS request (/dev/cpu_dma_latency, as tuned's
# latency-performance profile and cyclictest do) on fd 9 until
# idle_release or the script's end: idle CPUs poll instead of entering an
# idle state (in a VM, a halted vCPU is woken through the hypervisor).
idle_hold() {
    exec 9>/dev/cpu_dma_latency
    printf '\x00\x00\x00\x00' >&9
}

idle_release() {
    exec 9>&-
}

# One line: the cpuidle driver, its states with their exit latencies, and
# the PM QoS latency in force now.
idle_state() {
    local d=/sys/devices/system/cpu
    echo "cpuidle driver $(cat $d/cpuidle/current_driver 2>/dev/null || echo none), states:" \
        $(for s in $d/cpu0/cpuidle/state*; do [ -e "$s/name" ] && echo "$(cat "$s/name")($(cat "$s/latency")us)"; done) \
        "; /dev/cpu_dma_latency in force: $(od -An -td4 /dev/cpu_dma_latency 2>/dev/null | tr -d ' ') us"
}

# loop_setup KIND NAME: a 512 MiB loop device into $dev over $backing,
# removed when the script exits. KIND loop-ram: a file in /dev/shm,
# written (reads of a tmpfs hole return the zero page without copying,
# 2-3x faster than written blocks). KIND loop-disk: a written file on the
# root disk behind a direct-IO loop device, read twice first (the VM's
# disk is a file on its host, and blocks the host has cached read several
# times faster than first reads).
loop_setup() {
    local kind=$1 name=$2
    case $kind in
    loop-ram)
        backing=/dev/shm/blkqos-$name.img
        dd if=/dev/zero of="$backing" bs=16M count=32 status=none
        dev=$(losetup --find --show "$backing")
        ;;
    loop-disk)
        backing=/var/tmp/blkqos-$name.img
        dd if=/dev/zero of="$backing" bs=16M count=32 oflag=direct status=none
        dev=$(losetup --find --show --direct-io=on "$backing")
        dd if="$dev" of=/dev/null bs=1M iflag=direct status=none
        dd if="$dev" of=/dev/null bs=1M iflag=direct status=none
        ;;
    *) echo "$kind: use loop-ram or loop-disk" >&2; exit 2 ;;
    esac
    # shellcheck disable=SC2064 # expand now: the names are fixed
    trap "losetup -d '$dev'; rm -f '$backing'" EXIT
}

# probe_start DIR KIND: the start of a probe script: $out is
# lab/calibrate/DIR/KIND-KERNEL-TIME[-idle-poll].txt (each run kept: a VM's
# devices change with its host's load), the idle request held if
# IDLE=poll, and a KIND loop device in $dev. Needs $here.
probe_start() {
    local dir=$1 kind=$2
    idle_mode
    out=$here/$dir/$kind-$(uname -r)-$(date -u +%Y%m%dT%H%MZ)$suffix.txt
    mkdir -p "$(dirname "$out")"
    if [ "$IDLE" = poll ]; then
        idle_hold
    fi
    loop_setup "$kind" "$dir"
}

# fio's JSON on stdin, the leading fields as arguments: one line per
# direction that ran: FIELDS... dir iops lat_p50_us lat_p99_us
fio_summary() {
    python3 -c '
import json, sys
j = json.load(sys.stdin)["jobs"][0]
for d in ("read", "write"):
    x = j[d]
    if x["total_ios"] == 0:
        continue
    p = x["lat_ns"]["percentile"]
    print(*sys.argv[1:], d, round(x["iops"]), round(p["50.000000"] / 1e3, 1),
          round(p["99.000000"] / 1e3, 1))
' "$@"
}
