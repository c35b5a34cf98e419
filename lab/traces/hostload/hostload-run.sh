#!/bin/bash
# How late the guest's timer interrupt comes as the lab's host gets busy.
#
#   KLAB=../shared/tools/klab/klab lab/traces/hostload/hostload-run.sh [KVER]
#
# Boots the kernel three times, with 0, 1 and 2 busy loops on the host
# (this machine, 2 cores, running QEMU's vCPU threads), and runs
# hostload.sh in each boot (hogsN/). While the guest runs, the QEMU
# threads' scheduler statistics (/proc/PID/task/TID/schedstat: ns on the
# CPU, ns waiting in a run queue, time slices) are sampled every 0.5 s
# into hogsN/qemu-schedstat.txt. hostload.py reduces it all to
# hostload.json. Run it on an otherwise idle machine.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
KLAB=${KLAB:-klab}
KVER=${1:-6.12.117+deb13-amd64}
sample() { # out: the QEMU threads' schedstat every 0.5 s while QEMU runs
  local p=""
  while [ -z "$p" ]; do p=$(pgrep -x qemu-system-x86 | head -1 || true); sleep 0.05; done
  while kill -0 "$p" 2>/dev/null; do
    local t; t=$(date +%s.%N)
    for s in /proc/$p/task/*; do
      echo "$t $(basename "$s") $(cat "$s/schedstat" 2>/dev/null)"
    done
    sleep 0.5
  done > "$1"
}
for hogs in 0 1 2; do
  out="$here/hogs$hogs"; rm -rf "$out"; mkdir -p "$out"
  pids=()
  for ((i = 0; i < hogs; i++)); do
    taskset -c "$i" sh -c 'while :; do :; done' & pids+=($!)
  done
  sample "$out/qemu-schedstat.txt" & sampler=$!
  "$KLAB" run "$KVER" "$here/hostload.sh" "$out" | tail -1
  wait "$sampler" || true
  for p in "${pids[@]}"; do kill "$p"; done
  rm -f "$out"/.klab-*
  echo "$KVER" > "$out/kernel.txt"
done
python3 "$here/hostload.py" > "$here/hostload.json"
