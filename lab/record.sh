#!/usr/bin/env bash
# Re-record the differential matrix on real kernels.
#
#   lab/record.sh                       # every kernel in lab/kernels, 5 runs each
#   REPS=2 KERNELS="7.2.13+deb14-amd64" JOBS='^t0[16]' lab/record.sh
#   RUNS="3 4" lab/record.sh            # only runs 3 and 4 (added to what is there)
#   KEEP_TRACES=1 ...                   # keep each job's whole kernel trace (ktrace.txt.xz)
#
# Needs a kernel lab: a `klab` command (KLAB=path) that boots Debian's kernel
# KVER under QEMU and runs a bash script inside it as root, with this
# machine's root file system visible read-only at the same paths and a
# results directory mounted read-write at /mnt (see lab/README.md). Each
# (kernel, run) is a few fresh boots (BOOTS) running the jobs of
# lab/matrix.toml in order; runs alternate between kernels so that a change in the host's load
# spreads over all of them. Results go to lab/fixtures/KVER/runN/JOB/.
# Record on an otherwise idle machine: the guest is emulated, and CPU
# contention shows up as latency.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
KLAB=${KLAB:-klab}
REPS=${REPS:-5}
RUNS=${RUNS:-$(seq 1 "$REPS")}
KERNELS=${KERNELS:-$(grep -v '^#' "$here/kernels" | awk '{print $1}')}
JOBS=${JOBS:-}
REAL_ON=${REAL_ON:-$(grep -v '^#' "$here/kernels" | awk '/ real/{print $1}')}
BLKQOS=${BLKQOS:-$root/target/release/blkqos}
export KLAB_TIMEOUT=${KLAB_TIMEOUT:-1800}

[ -x "$BLKQOS" ] || (cd "$root" && cargo build --release -q -p blkqos)
# Jobs that share a boot (regexes over job names). On kernels marked
# `iocost-alone` in lab/kernels each iocost job boots alone: 6.1 locked up
# when a device that had iocost enabled went away and the next one enabled it.
ALONE=$(grep -v '^#' "$here/kernels" | awk '/iocost-alone/{print $1}')
for rep in $RUNS; do
  for kver in $KERNELS; do
   case " $ALONE " in
     *" $kver "*) boots=${BOOTS:-'^t ^c01 ^c02 ^c03 ^c04 ^c05 ^c06 ^c07 ^c08 ^c09 ^c10 ^[ah] ^w'} ;;
     *) boots=${BOOTS:-'^t ^c0 ^c1 ^[ah] ^w'} ;;
   esac
   for boot in $boots; do
    # the boot's jobs, narrowed by JOBS when given
    n=$(python3 -c 'import re,sys,tomllib; m=tomllib.load(open(sys.argv[1],"rb")); print(sum(1 for j in m["job"] if re.search(sys.argv[2], j["name"]) and re.search(sys.argv[3], j["name"])))' "$here/matrix.toml" "$boot" "${JOBS:-.}")
    [ "$n" -gt 0 ] || continue
    # the boot's vCPUs: a job's `smp = N` (every job of a boot agrees), else klab's default
    smp=$(python3 -c 'import re,sys,tomllib; m=tomllib.load(open(sys.argv[1],"rb")); s={j.get("smp") for j in m["job"] if re.search(sys.argv[2], j["name"]) and re.search(sys.argv[3], j["name"])}; assert len(s) == 1, f"jobs of boot {sys.argv[2]} differ in smp: {s}"; v=s.pop(); print(v if v else "")' "$here/matrix.toml" "$boot" "${JOBS:-.}")
    work=$(mktemp -d /tmp/blkqos-lab.XXXXXX)
    # the guest runs a copy: rebuilding blkqos during a recording cannot change it
    cp "$BLKQOS" "$work/blkqos"
    real=""
    case " $REAL_ON " in *" $kver "*) real="--blkqos /mnt/blkqos" ;; esac
    cat > "$work/guest.sh" <<EOF
set -e
python3 "$here/guest_run.py" --matrix "$here/matrix.toml" --out /mnt/out --jobs '$boot' --also '${JOBS:-.}' --blkqos-apply /mnt/blkqos $real
EOF
    echo "== $kver run $rep: $boot"
    # a failed boot keeps what it recorded; the console shows why
    KLAB_SMP=${smp:-${KLAB_SMP:-2}} "$KLAB" run "$kver" "$work/guest.sh" "$work" || echo "== $kver run $rep: exit $? (see $work/.klab-console)"
    # each job's kernel trace, reduced to the numbers lab compare --traces
    # puts beside blkqos's (the whole trace is kept with KEEP_TRACES=1)
    for t in "$work"/out/*/ktrace.txt; do
      [ -f "$t" ] || continue
      "$BLKQOS" lab reduce-trace "$t" > "$(dirname "$t")/trace.json" || rm -f "$(dirname "$t")/trace.json"
      if [ -n "${KEEP_TRACES:-}" ]; then xz -9 "$t"; else rm -f "$t"; fi
    done
    dest=$here/fixtures/$kver/run$rep
    mkdir -p "$dest"
    cp -r "$work/out/." "$dest/"
    [ -f "$work/.klab-rc" ] && [ "$(cat "$work/.klab-rc")" = 0 ] && rm -rf "$work"
   done
  done
done
