#!/usr/bin/env python3
"""The sizes of the writeback bios blk-throttle queued in w01, per kernel.

    python3 lab/traces/throtl_bios.py > lab/traces/throtl_bios.json

blk-throttle logs every bio it queues (`throtl [W] bio. ... sz=BYTES
bps=LIMIT ...`, blk tracer notes, `__blk_throtl_bio`). In w01 both
groups are over their `wbps` limit for the whole run, so nearly every
writeback bio of the flushers is queued and logged. This counts them per
kernel in three classes (under 1 MiB, 1 to 4 MiB, 4 MiB and more) from
the traces in `w01-throtl-KERNEL/` (one `lab/record.sh` run each,
`KEEP_TRACES=1 RUNS=99 JOBS='^w01'`). Since Linux 6.14 `__wb_calc_thresh`
floors a wb's share of `bg_thresh` at an eighth of the room under it, so
a flusher waits for more dirty pages before it forms a bio.
"""
import json
import lzma
import os
import re

here = os.path.dirname(os.path.abspath(__file__))
KERNELS = {
    "6.1.0-50-amd64": "w01-throtl-6.1",
    "6.12.117+deb13-amd64": "w01-throtl-6.12",
    "7.2.13+deb14-amd64": "w01-throtl-7.2",
}
bio_re = re.compile(r"throtl \[W\] bio\. .*\bsz=(\d+) bps=(\d+)")
MIB = 1 << 20


def sizes(trace):
    out = []
    for line in lzma.open(os.path.join(here, trace, "ktrace.txt.xz"), "rt"):
        m = bio_re.search(line)
        if m:
            out.append(int(m.group(1)))
    return out


def main():
    out = {}
    for kernel, trace in KERNELS.items():
        if not os.path.exists(os.path.join(here, trace, "ktrace.txt.xz")):
            continue
        v = sizes(trace)
        out[kernel] = {
            "trace": trace,
            "queued_bios": len(v),
            "under_1m": sum(1 for s in v if s < MIB),
            "1m_to_4m": sum(1 for s in v if MIB <= s < 4 * MIB),
            "4m_and_more": sum(1 for s in v if s >= 4 * MIB),
            "mib_queued": round(sum(v) / MIB, 1),
        }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
