//! What `blkqos calibrate` measures: the jobs of the kernel's
//! `tools/cgroup/iocost_coef_gen.py` (sequential bandwidth with one large IO
//! in flight, sequential and random 4 KiB IOPS at depth 64), plus what the
//! simulated device's fit needs: the queue-depth-1 latency at three sizes
//! (latency against IO size: base latency and transfer rate), random 4 KiB
//! throughput at depths 2, 4, 8, 16 and 32 (with the script's 1 and 64,
//! every power of two: throughput against queue depth), random 32 KiB at
//! depth 16 (what a byte costs with requests in flight, below the
//! saturated bandwidth) and random 128 KiB at depth 64 (the saturated
//! cost of a byte of random IO).

/// One measurement job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Job {
    /// What it measures, as the output names it (`rbps`, `rlat_4k`...).
    pub name: String,
    /// fio's `rw=`.
    pub rw: &'static str,
    pub bs_bytes: u64,
    pub iodepth: u32,
    pub write: bool,
}

/// iocost_coef_gen.py's default depth of the IOPS jobs.
pub const COEF_DEPTH: u32 = 64;
/// iocost_coef_gen.py's default sequential block (`--seqio-block-mb=128`).
pub const COEF_SEQ_BS: u64 = 128 << 20;
/// Sizes of the queue-depth-1 latency jobs: 4 KiB to the 128 KiB that
/// most devices take as one request (`max_sectors_kb`).
pub const LAT_SIZES: [u64; 3] = [4 << 10, 32 << 10, 128 << 10];
/// Depths of the random 4 KiB jobs between depth 1 (`rlat_4k`) and
/// [`COEF_DEPTH`] (`rrandiops`): with those, every power of two.
pub const SWEEP_DEPTHS: [u32; 5] = [2, 4, 8, 16, 32];
/// Block and depth of the job that measures the cost of a byte with
/// requests in flight (`rdepth_16_32k`): deep enough that the device
/// overlaps requests, small enough to stay below its bandwidth.
pub const MID_BS: u64 = 32 << 10;
pub const MID_DEPTH: u32 = 16;
/// Block of the saturated random bandwidth job (`rrandbps`).
pub const RAND_BPS_BS: u64 = 128 << 10;

/// The sequential block for a target of `size` bytes: the script's 128 MiB,
/// or the largest power of two that leaves four blocks on a smaller target.
pub fn seq_bs(size: u64) -> u64 {
    let mut bs = COEF_SEQ_BS;
    while bs > (1 << 20) && bs.saturating_mul(4) > size {
        bs /= 2;
    }
    bs
}

/// The jobs of one round, reads first; writes only when asked.
pub fn round(size: u64, writes: bool) -> Vec<Job> {
    let mut jobs = Vec::new();
    let dirs: &[bool] = if writes { &[false, true] } else { &[false] };
    for &write in dirs {
        let d = if write { 'w' } else { 'r' };
        let (seq, rand) = if write {
            ("write", "randwrite")
        } else {
            ("read", "randread")
        };
        jobs.push(Job {
            name: format!("{d}bps"),
            rw: seq,
            bs_bytes: seq_bs(size),
            iodepth: 1,
            write,
        });
        jobs.push(Job {
            name: format!("{d}seqiops"),
            rw: seq,
            bs_bytes: 4096,
            iodepth: COEF_DEPTH,
            write,
        });
        jobs.push(Job {
            name: format!("{d}randiops"),
            rw: rand,
            bs_bytes: 4096,
            iodepth: COEF_DEPTH,
            write,
        });
        for depth in SWEEP_DEPTHS {
            jobs.push(Job {
                name: format!("{d}depth_{depth}"),
                rw: rand,
                bs_bytes: 4096,
                iodepth: depth,
                write,
            });
        }
        jobs.push(Job {
            name: format!("{d}depth_{MID_DEPTH}_{}k", MID_BS >> 10),
            rw: rand,
            bs_bytes: MID_BS,
            iodepth: MID_DEPTH,
            write,
        });
        jobs.push(Job {
            name: format!("{d}randbps"),
            rw: rand,
            bs_bytes: RAND_BPS_BS,
            iodepth: COEF_DEPTH,
            write,
        });
        for bs in LAT_SIZES {
            jobs.push(Job {
                name: format!("{d}lat_{}k", bs >> 10),
                rw: rand,
                bs_bytes: bs,
                iodepth: 1,
                write,
            });
        }
    }
    jobs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seq_block_shrinks_on_small_targets() {
        assert_eq!(seq_bs(16 << 30), 128 << 20);
        assert_eq!(seq_bs(512 << 20), 128 << 20);
        assert_eq!(seq_bs(256 << 20), 64 << 20);
        assert_eq!(seq_bs(1 << 20), 1 << 20);
    }

    #[test]
    fn a_round_without_writes_reads_only() {
        let r = round(1 << 30, false);
        assert_eq!(r.len(), 13);
        assert!(r.iter().all(|j| !j.write && !j.rw.contains("write")));
        let w = round(1 << 30, true);
        assert_eq!(w.len(), 26);
        assert_eq!(w.iter().filter(|j| j.write).count(), 13);
        let names: Vec<&str> = r.iter().map(|j| j.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "rbps",
                "rseqiops",
                "rrandiops",
                "rdepth_2",
                "rdepth_4",
                "rdepth_8",
                "rdepth_16",
                "rdepth_32",
                "rdepth_16_32k",
                "rrandbps",
                "rlat_4k",
                "rlat_32k",
                "rlat_128k"
            ]
        );
    }
}
