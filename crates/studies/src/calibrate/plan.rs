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

/// What a calibration job measures in its direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Measure {
    /// Sequential bandwidth, one large IO in flight (`rbps`).
    Bps,
    /// Sequential 4 KiB IOPS at [`COEF_DEPTH`] (`rseqiops`).
    SeqIops,
    /// Random 4 KiB IOPS at [`COEF_DEPTH`] (`rrandiops`).
    RandIops,
    /// Random 4 KiB IOs at this depth (`rdepth_8`).
    Depth(u32),
    /// Random IOs of `bs` bytes at `depth` (`rdepth_16_32k`).
    DepthSized { depth: u32, bs: u64 },
    /// Random [`RAND_BPS_BS`] IOs at [`COEF_DEPTH`] (`rrandbps`).
    RandBps,
    /// Random IOs of this many bytes at depth 1 (`rlat_4k`).
    Lat(u64),
}

/// A calibration job's direction and what it measures: a round's key,
/// written as the output names it (`rbps`, `rlat_4k`, `wdepth_16_32k`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    pub write: bool,
    pub what: Measure,
}

impl Key {
    pub const fn new(write: bool, what: Measure) -> Key {
        Key { write, what }
    }
}

impl std::fmt::Display for Key {
    /// The name, padded as the format asks (`{:<11}`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let d = if self.write { 'w' } else { 'r' };
        let name = match self.what {
            Measure::Bps => format!("{d}bps"),
            Measure::SeqIops => format!("{d}seqiops"),
            Measure::RandIops => format!("{d}randiops"),
            Measure::Depth(q) => format!("{d}depth_{q}"),
            Measure::DepthSized { depth, bs } => format!("{d}depth_{depth}_{}k", bs >> 10),
            Measure::RandBps => format!("{d}randbps"),
            Measure::Lat(bs) => format!("{d}lat_{}k", bs >> 10),
        };
        f.pad(&name)
    }
}

impl std::str::FromStr for Key {
    type Err = String;

    /// A name as [`Key`]'s `Display` writes it.
    fn from_str(s: &str) -> Result<Key, String> {
        let bad =
            || format!("`{s}`: not a calibration job's name (rbps, rlat_4k, wdepth_16_32k...)");
        let write = match s.as_bytes().first() {
            Some(b'r') => false,
            Some(b'w') => true,
            _ => return Err(bad()),
        };
        let kib =
            |v: &str| -> Option<u64> { v.strip_suffix('k')?.parse::<u64>().ok().map(|k| k << 10) };
        let what = match &s[1..] {
            "bps" => Measure::Bps,
            "seqiops" => Measure::SeqIops,
            "randiops" => Measure::RandIops,
            "randbps" => Measure::RandBps,
            rest => match (rest.strip_prefix("lat_"), rest.strip_prefix("depth_")) {
                (Some(bs), _) => Measure::Lat(kib(bs).ok_or_else(bad)?),
                (_, Some(d)) => match d.split_once('_') {
                    Some((q, bs)) => Measure::DepthSized {
                        depth: q.parse().map_err(|_| bad())?,
                        bs: kib(bs).ok_or_else(bad)?,
                    },
                    None => Measure::Depth(d.parse().map_err(|_| bad())?),
                },
                _ => return Err(bad()),
            },
        };
        Ok(Key { write, what })
    }
}

/// Keys sort as their names do (the order of the recorded files).
impl Ord for Key {
    fn cmp(&self, other: &Key) -> std::cmp::Ordering {
        self.to_string().cmp(&other.to_string())
    }
}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Key) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl serde::Serialize for Key {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Key {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// One measurement job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Job {
    /// What it measures, in which direction (`rbps`, `rlat_4k`...).
    pub key: Key,
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
/// The job of [`MID_BS`] at [`MID_DEPTH`] (`rdepth_16_32k`).
pub const MID: Measure = Measure::DepthSized {
    depth: MID_DEPTH,
    bs: MID_BS,
};
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
        let (seq, rand) = if write {
            ("write", "randwrite")
        } else {
            ("read", "randread")
        };
        jobs.push(Job {
            key: Key::new(write, Measure::Bps),
            rw: seq,
            bs_bytes: seq_bs(size),
            iodepth: 1,
            write,
        });
        jobs.push(Job {
            key: Key::new(write, Measure::SeqIops),
            rw: seq,
            bs_bytes: 4096,
            iodepth: COEF_DEPTH,
            write,
        });
        jobs.push(Job {
            key: Key::new(write, Measure::RandIops),
            rw: rand,
            bs_bytes: 4096,
            iodepth: COEF_DEPTH,
            write,
        });
        for depth in SWEEP_DEPTHS {
            jobs.push(Job {
                key: Key::new(write, Measure::Depth(depth)),
                rw: rand,
                bs_bytes: 4096,
                iodepth: depth,
                write,
            });
        }
        jobs.push(Job {
            key: Key::new(write, MID),
            rw: rand,
            bs_bytes: MID_BS,
            iodepth: MID_DEPTH,
            write,
        });
        jobs.push(Job {
            key: Key::new(write, Measure::RandBps),
            rw: rand,
            bs_bytes: RAND_BPS_BS,
            iodepth: COEF_DEPTH,
            write,
        });
        for bs in LAT_SIZES {
            jobs.push(Job {
                key: Key::new(write, Measure::Lat(bs)),
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
        let names: Vec<String> = r.iter().map(|j| j.key.to_string()).collect();
        for j in &w {
            assert_eq!(j.key.to_string().parse::<Key>(), Ok(j.key), "{}", j.key);
        }
        assert!("rfoo".parse::<Key>().is_err() && "xbps".parse::<Key>().is_err());
        // the report's columns pad the name
        assert_eq!(
            format!("{:<8}|", Key::new(false, Measure::Bps)),
            "rbps    |"
        );
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
