//! `DeviceSpec`: a device model chosen by name with `key=value` parameters,
//! as written on the command line (`--device=null,mbps=4,devid=253:1`) or in
//! a scenario's `[device]` table. Unknown keys and bad values are errors that
//! name the key and the value.

use super::{Cloud, DeviceModel, Fes, FesDir, Hdd, NullBlk, Ssd};
use blkqos_core::DevId;
use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelKind {
    Null,
    Ssd,
    Cloud,
    Hdd,
    Fes,
}

impl ModelKind {
    /// The model named `model` (`null_blk`, `nullb` and `nvme` are
    /// aliases).
    fn from_name(model: &str) -> Result<ModelKind, SpecError> {
        Ok(match model.trim() {
            "null" | "null_blk" | "nullb" => ModelKind::Null,
            "ssd" | "nvme" => ModelKind::Ssd,
            "cloud" => ModelKind::Cloud,
            "hdd" => ModelKind::Hdd,
            "fes" => ModelKind::Fes,
            other => return Err(SpecError::UnknownModel(other.to_string())),
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            ModelKind::Null => "null",
            ModelKind::Ssd => "ssd",
            ModelKind::Cloud => "cloud",
            ModelKind::Hdd => "hdd",
            ModelKind::Fes => "fes",
        }
    }
    /// The model's default max IO size in 512-byte sectors (see
    /// [`super::NULL_MAX_SECTORS`] and its siblings for the reasons).
    pub fn default_max_sectors(self) -> u32 {
        match self {
            ModelKind::Null => super::NULL_MAX_SECTORS,
            ModelKind::Ssd => super::SSD_MAX_SECTORS,
            ModelKind::Cloud => super::CLOUD_MAX_SECTORS,
            ModelKind::Hdd => super::HDD_MAX_SECTORS,
            ModelKind::Fes => super::SSD_MAX_SECTORS,
        }
    }
    /// Parameter keys with their defaults (as strings) for each model.
    pub fn params(self) -> &'static [(&'static str, &'static str, &'static str)] {
        match self {
            ModelKind::Null => &[
                (
                    "completion_ns",
                    "2000",
                    "time from request start to completion",
                ),
                ("hw_queues", "1", "hardware queues (submit_queues)"),
                (
                    "queue_depth",
                    "64",
                    "tags per hardware queue (hw_queue_depth)",
                ),
                (
                    "mbps",
                    "0",
                    "bandwidth cap in MiB/s as null_blk applies it (0 = none)",
                ),
                (
                    "cpus",
                    "1",
                    "CPUs the submitters run on (with mbps): a stopped queue stages requests in per-CPU blk-mq software queues and the tick serves them in blk-mq's order, not arrival order; processes move between CPUs when they wake",
                ),
                (
                    "copy_bytes_per_s",
                    "0",
                    "memory_backed=1: the host copies each request's data at this rate, one request after another, before its completion (0 = no copy)",
                ),
                (
                    "restart_p50_ns",
                    "0",
                    "with mbps: the host dispatches a restarted queue this long after the tick at the median (the worker's wake-up; 0 = at the tick)",
                ),
                (
                    "restart_p90_ns",
                    "0",
                    "that delay's 90th percentile",
                ),
                (
                    "restart_p99_ns",
                    "0",
                    "that delay's 99th percentile (the largest drawn; below one 20 ms tick)",
                ),
                (
                    "dispatch_p50_ns",
                    "0",
                    "with mbps: the host's CPU time per request when it dispatches a restarted queue, one request after another, at the median (0 with irq_p99_ns 0 = all at once)",
                ),
                (
                    "dispatch_p90_ns",
                    "0",
                    "that time's 90th percentile",
                ),
                (
                    "dispatch_p99_ns",
                    "0",
                    "that time's 99th percentile (the largest drawn)",
                ),
                (
                    "irq_p50_ns",
                    "0",
                    "with mbps: the same CPU's time per completion (the timer interrupt that ends each request it dispatched, run before its next dispatch), at the median",
                ),
                (
                    "irq_p90_ns",
                    "0",
                    "that time's 90th percentile",
                ),
                (
                    "irq_p99_ns",
                    "0",
                    "that time's 99th percentile (the largest drawn)",
                ),
                (
                    "irq_late_busy_p50_ns",
                    "0",
                    "with the worker's costs: its CPU's timer interrupt comes this late at the median when the clock event is programmed while the worker dispatches (0 = the usual lateness)",
                ),
                (
                    "irq_late_busy_p90_ns",
                    "0",
                    "that lateness's 90th percentile",
                ),
                (
                    "irq_late_busy_p99_ns",
                    "0",
                    "that lateness's 99th percentile (the largest drawn)",
                ),
                (
                    "late_p50_ns",
                    "0",
                    "the host completes each request late by a log-normal delay with this median (an emulated guest's timer lateness; 0 = on time)",
                ),
                (
                    "late_p99_ns",
                    "0",
                    "that delay's 99th percentile (at least late_p50_ns)",
                ),
                (
                    "late_busy_p50_ns",
                    "0",
                    "a request issued directly whose submitter still runs on its CPU when the request's timer expires (the interrupt lands on a busy CPU) is late by a log-normal delay with this median instead (0 = as the others); with late_idle_p50_ns, the lateness is drawn at the expiry",
                ),
                (
                    "late_busy_p99_ns",
                    "0",
                    "that delay's 99th percentile (at least late_busy_p50_ns)",
                ),
                (
                    "late_idle_p50_ns",
                    "0",
                    "a request issued directly whose submitter does not run when its timer expires (it sleeps, waiting) is late by a log-normal delay with this median instead (0 = as the others)",
                ),
                (
                    "late_idle_p99_ns",
                    "0",
                    "that delay's 99th percentile (at least late_idle_p50_ns)",
                ),
                (
                    "late_sleep_p50_ns",
                    "0",
                    "a request submitted right after its task slept (fio thinktime) is late by a log-normal delay with this median instead (an idle emulated guest; 0 = as the others)",
                ),
                (
                    "late_sleep_p99_ns",
                    "0",
                    "that delay's 99th percentile (at least late_sleep_p50_ns)",
                ),
                (
                    "zoned",
                    "0",
                    "1: null_blk's zoned mode (writes at each sequential zone's write pointer)",
                ),
                ("zone_size", "256", "zoned: zone size in MiB, a power of two"),
                (
                    "zone_capacity",
                    "0",
                    "zoned: writable MiB of a zone (0 = zone_size)",
                ),
                (
                    "zone_nr_conv",
                    "0",
                    "zoned: conventional zones at the start",
                ),
                (
                    "zone_max_open",
                    "0",
                    "zoned: open zones at most (0 = no limit)",
                ),
                (
                    "zone_max_active",
                    "0",
                    "zoned: open and closed zones at most (0 = no limit)",
                ),
            ],
            ModelKind::Ssd => &[
                ("channels", "8", "parallel flash units"),
                ("read_ns", "80000", "read base latency"),
                ("write_ns", "20000", "write base latency"),
                ("read_mbps", "400", "read transfer rate per channel, MB/s"),
                ("write_mbps", "200", "write transfer rate per channel, MB/s"),
                (
                    "read_bps",
                    "0",
                    "read transfer rate per channel in bytes/s; overrides read_mbps when set \
                     (a fitted device's exact rate, see `blkqos calibrate`)",
                ),
                (
                    "write_bps",
                    "0",
                    "write transfer rate per channel in bytes/s; overrides write_mbps when set",
                ),
                (
                    "read_delay_ns",
                    "0",
                    "read latency outside the channels (completion path): adds to latency, not to occupancy",
                ),
                ("write_delay_ns", "0", "the same for writes"),
                (
                    "read_tail_ns",
                    "0",
                    "mean of an exponentially distributed read latency outside the channels \
                     (completion-path scheduling noise; seeded)",
                ),
                ("write_tail_ns", "0", "the same for writes"),
                (
                    "jitter_pct",
                    "10",
                    "deterministic latency jitter, % of base",
                ),
                ("nr_requests", "1023", "request slots"),
            ],
            ModelKind::Cloud => &[
                ("iops", "3500", "provisioned IOPS"),
                ("mbps", "170", "provisioned throughput, MB/s (10^6 bytes)"),
                (
                    "io_unit",
                    "262144",
                    "bytes metered as one IO (Azure: 256 KiB)",
                ),
                (
                    "base_us",
                    "2000",
                    "latency once admitted (plus the IO's size at mbps)",
                ),
                (
                    "grant_ms",
                    "0",
                    "interval of the ticks that release IO waiting for credit (0 = smooth)",
                ),
                (
                    "grant_jitter_pct",
                    "0",
                    "each tick interval is grant_ms × (1 ± this %), seeded",
                ),
                ("burst_ms", "0", "bucket depth in ms of rate"),
                ("nr_requests", "1024", "request slots"),
            ],
            ModelKind::Fes => &[
                (
                    "read_ns_q1",
                    "80000",
                    "4 KiB read service time with 1 request in the device",
                ),
                (
                    "read_ns_q2",
                    "45000",
                    "... with 2 (the time between completions at depth 2)",
                ),
                ("read_ns_q4", "22000", "... with 4"),
                ("read_ns_q8", "12000", "... with 8"),
                ("read_ns_q16", "6000", "... with 16"),
                ("read_ns_q32", "3800", "... with 32"),
                ("read_ns_q64", "2500", "... with 64 (and more)"),
                (
                    "read_ps_per_byte_q1",
                    "2500",
                    "read time per byte beyond 4 KiB at depth 1, picoseconds",
                ),
                ("read_ps_per_byte_q16", "1100", "... at depth 16"),
                ("read_ps_per_byte_q64", "400", "... at depth 64"),
                (
                    "read_shared_ns",
                    "0",
                    "time of each read on the resource the requests share (with read_max_bps), ns",
                ),
                (
                    "read_max_bps",
                    "0",
                    "highest read bandwidth, bytes/s: the shared resource's rate (0: none)",
                ),
                (
                    "read_shared_queue",
                    "0",
                    "0: the shared resource is a floor (a request takes the longer of its own time and its time there); 1: a second station the requests queue at",
                ),
                (
                    "write_ns_q1",
                    "20000",
                    "4 KiB write service time with 1 request in the device",
                ),
                (
                    "write_ns_q2",
                    "11000",
                    "... with 2 (the time between completions at depth 2)",
                ),
                ("write_ns_q4", "6000", "... with 4"),
                ("write_ns_q8", "3500", "... with 8"),
                ("write_ns_q16", "2000", "... with 16"),
                ("write_ns_q32", "1500", "... with 32"),
                ("write_ns_q64", "1200", "... with 64 (and more)"),
                (
                    "write_ps_per_byte_q1",
                    "5000",
                    "write time per byte beyond 4 KiB at depth 1, picoseconds",
                ),
                ("write_ps_per_byte_q16", "2200", "... at depth 16"),
                ("write_ps_per_byte_q64", "800", "... at depth 64"),
                (
                    "write_shared_ns",
                    "0",
                    "time of each write on the resource the requests share (with write_max_bps), ns",
                ),
                (
                    "write_max_bps",
                    "0",
                    "highest write bandwidth, bytes/s: the shared resource's rate (0: none)",
                ),
                (
                    "write_shared_queue",
                    "0",
                    "0: the shared resource is a floor (a request takes the longer of its own time and its time there); 1: a second station the requests queue at",
                ),
                (
                    "spread_pct",
                    "0",
                    "share of each service time that is exponentially distributed (seeded), %",
                ),
                (
                    "spread_run",
                    "1",
                    "requests in a row that share one draw of that share (slowness that lasts)",
                ),
                (
                    "shared_spread_pct",
                    "0",
                    "share of each request's time on the shared resource that is exponential, with draws of its own, %",
                ),
                (
                    "shared_spread_run",
                    "0",
                    "requests in a row that share one draw of it (0: the resource's time is not told apart and takes spread_pct)",
                ),
                ("nr_requests", "1023", "request slots"),
            ],
            ModelKind::Hdd => &[
                ("rpm", "7200", "spindle speed"),
                ("seek_min_us", "500", "track-to-track seek"),
                ("seek_max_us", "15000", "full-stroke seek"),
                ("mbps", "180", "media transfer rate, MB/s"),
                ("nr_requests", "64", "request slots"),
            ],
        }
    }
}

/// Keys every model accepts.
const COMMON: &[(&str, &str, &str)] = &[
    ("devid", "253:0", "MAJ:MIN the knob lines and diskstats use"),
    ("name", "", "device name in reports"),
    (
        "size",
        "256g",
        "capacity (k/m/g/t suffixes, powers of 1024)",
    ),
    ("seed", "1", "seed for the model's jitter"),
    (
        "max_sectors_kb",
        "",
        "largest request in KiB (queue/max_sectors_kb); longer reads and writes \
         are split: null 127 (255 sectors), ssd 128, cloud 1280, hdd 1280",
    ),
    (
        "max_segments",
        "128",
        "most segments in a request (queue/max_segments); a bio merges into a \
         request only within it, one segment per 4 KiB page of each bio",
    ),
];

/// Bounds of `max_sectors_kb`: the kernel refuses less than a page (4 KiB);
/// the upper bound keeps the sector count in 32 bits with room to spare.
const MAX_SECTORS_KB: std::ops::RangeInclusive<u64> = 4..=1 << 20;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    #[error("unknown device model `{0}`: use null, ssd, cloud, hdd or fes")]
    UnknownModel(String),
    #[error("device {model}: unknown parameter `{key}` (known: {known})")]
    UnknownKey {
        model: &'static str,
        key: String,
        known: String,
    },
    #[error("device {model}: parameter `{key}`: invalid value `{value}`: {why}")]
    BadValue {
        model: &'static str,
        key: String,
        value: String,
        why: &'static str,
    },
    #[error("device parameter `{0}` is not of the form key=value")]
    NotKeyValue(String),
}

/// A validated device description.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceSpec {
    pub kind: ModelKind,
    pub devid: DevId,
    pub name: String,
    pub capacity: u64,
    pub seed: u64,
    /// Max IO size in 512-byte sectors (`max_sectors_kb` × 2).
    pub max_sectors: u32,
    /// `queue/max_segments`: merges stop there (BLK_MAX_SEGMENTS = 128).
    pub max_segments: u32,
    params: BTreeMap<&'static str, u64>,
}

/// A size like `512m`, `4k` or `1048576` (binary units).
pub fn parse_size(v: &str) -> Option<u64> {
    let v = v.trim().to_ascii_lowercase();
    let (num, mult) = match v.char_indices().find(|(_, c)| c.is_ascii_alphabetic()) {
        Some((i, _)) => {
            let m = match &v[i..] {
                "k" | "kb" | "kib" => 1u64 << 10,
                "m" | "mb" | "mib" => 1 << 20,
                "g" | "gb" | "gib" => 1 << 30,
                "t" | "tb" | "tib" => 1 << 40,
                _ => return None,
            };
            (&v[..i], m)
        }
        None => (&v[..], 1),
    };
    num.parse::<u64>().ok()?.checked_mul(mult)
}

impl DeviceSpec {
    /// Build from a model name and `(key, value)` pairs.
    pub fn new<'a>(
        model: &str,
        kv: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Self, SpecError> {
        let kind = ModelKind::from_name(model)?;
        let mut spec = DeviceSpec::defaults(kind);
        for (k, v) in kv {
            spec.set(k, v)?;
        }
        spec.validate()?;
        Ok(spec)
    }

    /// Every key at its default for `kind`.
    fn defaults(kind: ModelKind) -> DeviceSpec {
        let mut params: BTreeMap<&'static str, u64> = BTreeMap::new();
        for (k, d, _) in kind.params() {
            params.insert(k, d.parse().expect("defaults are numbers"));
        }
        DeviceSpec {
            kind,
            devid: DevId::new(253, 0),
            name: match kind {
                ModelKind::Null => "nullb0",
                ModelKind::Ssd => "nvme0n1",
                ModelKind::Cloud => "sda",
                ModelKind::Hdd => "sdb",
                ModelKind::Fes => "vdb",
            }
            .to_string(),
            capacity: 256 << 30,
            seed: 1,
            max_sectors: kind.default_max_sectors(),
            max_segments: 128,
            params,
        }
    }

    /// Set key `k` to `v` as the `--device` string and a scenario's
    /// `[device]` table do.
    pub fn set_param(&mut self, k: &str, v: &str) -> Result<(), SpecError> {
        self.set(k, v)
    }

    /// Set key `k` to `v`: a common key or one of the model's parameters.
    fn set(&mut self, k: &str, v: &str) -> Result<(), SpecError> {
        let model = self.kind.name();
        let bad = |why| SpecError::BadValue {
            model,
            key: k.to_string(),
            value: v.to_string(),
            why,
        };
        match k {
            "devid" => self.devid = v.parse().map_err(|_| bad("expected MAJ:MIN, e.g. 253:1"))?,
            "name" => {
                if v.is_empty() || v.contains(char::is_whitespace) || v.contains('/') {
                    return Err(bad("a device name has no blanks or slashes"));
                }
                self.name = v.to_string();
            }
            "size" => {
                self.capacity = parse_size(v)
                    .filter(|&s| s >= 4096)
                    .ok_or_else(|| bad("expected a size of at least 4k, e.g. 4g"))?
            }
            "seed" => self.seed = v.parse().map_err(|_| bad("expected an unsigned integer"))?,
            "max_sectors_kb" => {
                let kb = v
                    .parse::<u64>()
                    .ok()
                    .filter(|kb| MAX_SECTORS_KB.contains(kb))
                    .ok_or_else(|| bad("expected KiB from 4 to 1048576, e.g. 128"))?;
                self.max_sectors = (kb * 2) as u32;
            }
            "max_segments" => {
                self.max_segments = v
                    .parse::<u32>()
                    .ok()
                    .filter(|n| (1..=65535).contains(n))
                    .ok_or_else(|| bad("expected a count from 1 to 65535, e.g. 128"))?
            }
            _ => self.set_model_param(k, v)?,
        }
        Ok(())
    }

    /// Set the model's parameter `k` to `v` (`io_unit` takes a size); an
    /// unknown key's error lists the known ones.
    fn set_model_param(&mut self, k: &str, v: &str) -> Result<(), SpecError> {
        let kind = self.kind;
        let Some((key, _, _)) = kind.params().iter().find(|(n, _, _)| *n == k) else {
            let known: Vec<&str> = COMMON
                .iter()
                .chain(kind.params().iter())
                .map(|(n, _, _)| *n)
                .collect();
            return Err(SpecError::UnknownKey {
                model: kind.name(),
                key: k.to_string(),
                known: known.join(", "),
            });
        };
        let n = if k == "io_unit" {
            parse_size(v)
        } else {
            v.parse::<u64>().ok()
        }
        .ok_or_else(|| SpecError::BadValue {
            model: kind.name(),
            key: k.to_string(),
            value: v.to_string(),
            why: "expected an unsigned integer",
        })?;
        self.params.insert(key, n);
        Ok(())
    }

    /// Parse `model[,key=value...]`.
    pub fn parse(s: &str) -> Result<Self, SpecError> {
        let mut parts = s.split(',');
        let model = parts.next().unwrap_or_default();
        let mut kv = Vec::new();
        for p in parts {
            let p = p.trim();
            if p.is_empty() {
                continue;
            }
            let (k, v) = p
                .split_once('=')
                .ok_or_else(|| SpecError::NotKeyValue(p.to_string()))?;
            kv.push((k.trim(), v.trim()));
        }
        Self::new(model, kv)
    }

    /// `zoned=1` on a `null` device: its zone parameters.
    pub fn zoned_params(&self) -> Option<super::ZonedParams> {
        (self.kind == ModelKind::Null && self.get("zoned") == 1).then(|| super::ZonedParams {
            zone_size_mib: self.get("zone_size"),
            zone_capacity_mib: self.get("zone_capacity"),
            zone_nr_conv: self.get("zone_nr_conv"),
            zone_max_open: self.get("zone_max_open"),
            zone_max_active: self.get("zone_max_active"),
        })
    }

    /// Check the parameters together: the zones, the counts that must be
    /// positive, then the models' bounds; the first bad one is the error.
    fn validate(&self) -> Result<(), SpecError> {
        if self.kind == ModelKind::Null {
            self.validate_zoned()?;
        }
        self.validate_positive()?;
        self.validate_bounds()
    }

    /// A `null` device's laws given by their median, p90 and p99: each
    /// quantile at least the one before.
    fn validate_null_quantiles(&self) -> Result<(), SpecError> {
        let bad = |key: &str, why| SpecError::BadValue {
            model: self.kind.name(),
            key: key.into(),
            value: self.get(key).to_string(),
            why,
        };
        for (p50, p90, p99, why90, why99) in [
            (
                "restart_p50_ns",
                "restart_p90_ns",
                "restart_p99_ns",
                "must be at least restart_p50_ns",
                "must be at least restart_p90_ns",
            ),
            (
                "dispatch_p50_ns",
                "dispatch_p90_ns",
                "dispatch_p99_ns",
                "must be at least dispatch_p50_ns",
                "must be at least dispatch_p90_ns",
            ),
            (
                "irq_p50_ns",
                "irq_p90_ns",
                "irq_p99_ns",
                "must be at least irq_p50_ns",
                "must be at least irq_p90_ns",
            ),
            (
                "irq_late_busy_p50_ns",
                "irq_late_busy_p90_ns",
                "irq_late_busy_p99_ns",
                "must be at least irq_late_busy_p50_ns",
                "must be at least irq_late_busy_p90_ns",
            ),
        ] {
            if self.get(p90) < self.get(p50) {
                return Err(bad(p90, why90));
            }
            if self.get(p99) < self.get(p90) {
                return Err(bad(p99, why99));
            }
        }
        Ok(())
    }

    /// A `null` device's `zoned` flag and, when set, its zone geometry.
    fn validate_zoned(&self) -> Result<(), SpecError> {
        let bad = |key: &str, why| SpecError::BadValue {
            model: self.kind.name(),
            key: key.into(),
            value: self.get(key).to_string(),
            why,
        };
        if self.get("zoned") > 1 {
            return Err(bad("zoned", "must be 0 or 1"));
        }
        if self.get("late_p50_ns") > 0 && self.get("late_p99_ns") < self.get("late_p50_ns") {
            return Err(bad("late_p99_ns", "must be at least late_p50_ns"));
        }
        for (p50, p99, why) in [
            (
                "late_sleep_p50_ns",
                "late_sleep_p99_ns",
                "must be at least late_sleep_p50_ns",
            ),
            (
                "late_busy_p50_ns",
                "late_busy_p99_ns",
                "must be at least late_busy_p50_ns",
            ),
            (
                "late_idle_p50_ns",
                "late_idle_p99_ns",
                "must be at least late_idle_p50_ns",
            ),
        ] {
            if self.get(p50) > 0 && self.get(p99) < self.get(p50) {
                return Err(bad(p99, why));
            }
        }
        self.validate_null_quantiles()?;
        if let Some(p) = self.zoned_params() {
            p.check(self.capacity).map_err(|why| {
                let key = if why.starts_with("zone_capacity") {
                    "zone_capacity"
                } else {
                    "zone_size"
                };
                bad(key, why)
            })?;
        }
        Ok(())
    }

    /// The model's counts and rates that must be greater than 0.
    fn validate_positive(&self) -> Result<(), SpecError> {
        let must_be_positive: &[&str] = match self.kind {
            ModelKind::Null => &["hw_queues", "queue_depth", "cpus"],
            ModelKind::Ssd => &["channels", "read_mbps", "write_mbps", "nr_requests"],
            ModelKind::Cloud => &["iops", "mbps", "io_unit", "nr_requests"],
            ModelKind::Hdd => &["rpm", "mbps", "nr_requests"],
            ModelKind::Fes => &[
                "read_ns_q1",
                "read_ns_q2",
                "read_ns_q4",
                "read_ns_q8",
                "read_ns_q16",
                "read_ns_q32",
                "read_ns_q64",
                "write_ns_q1",
                "write_ns_q2",
                "write_ns_q4",
                "write_ns_q8",
                "write_ns_q16",
                "write_ns_q32",
                "write_ns_q64",
                "nr_requests",
            ],
        };
        for k in must_be_positive {
            if self.get(k) == 0 {
                return Err(SpecError::BadValue {
                    model: self.kind.name(),
                    key: k.to_string(),
                    value: "0".into(),
                    why: "must be greater than 0",
                });
            }
        }
        Ok(())
    }

    /// The models' other bounds: hdd seeks in order, cloud jitter and fes
    /// spreads as percentages, fes flags 0 or 1, a fes spread run ≥ 1.
    fn validate_bounds(&self) -> Result<(), SpecError> {
        let bad = |key: &str, value: String, why| SpecError::BadValue {
            model: self.kind.name(),
            key: key.into(),
            value,
            why,
        };
        if self.kind == ModelKind::Hdd && self.get("seek_min_us") > self.get("seek_max_us") {
            return Err(bad(
                "seek_min_us",
                self.get("seek_min_us").to_string(),
                "must not exceed seek_max_us (a full-stroke seek is the longest)",
            ));
        }
        if self.kind == ModelKind::Cloud && self.get("grant_jitter_pct") > 100 {
            return Err(bad(
                "grant_jitter_pct",
                self.get("grant_jitter_pct").to_string(),
                "must be at most 100",
            ));
        }
        if self.kind == ModelKind::Fes && self.get("spread_run") == 0 {
            return Err(bad(
                "spread_run",
                "0".into(),
                "a number of requests: at least 1",
            ));
        }
        for key in ["read_shared_queue", "write_shared_queue"] {
            if self.kind == ModelKind::Fes && self.get(key) > 1 {
                return Err(bad(
                    key,
                    self.get(key).to_string(),
                    "0 (a floor) or 1 (a queue)",
                ));
            }
        }
        for key in ["spread_pct", "shared_spread_pct"] {
            if self.kind == ModelKind::Fes && self.get(key) > 100 {
                let why = "a share of the service time: at most 100";
                return Err(bad(key, self.get(key).to_string(), why));
            }
        }
        Ok(())
    }

    /// A numeric parameter (defaults applied).
    pub fn get(&self, key: &str) -> u64 {
        self.params.get(key).copied().unwrap_or(0)
    }

    /// The max IO size in bytes.
    pub fn max_io_bytes(&self) -> u64 {
        u64::from(self.max_sectors) << 9
    }

    /// The simulator for this device: the model and its queue limits.
    pub fn backend(&self) -> crate::SimBackend {
        crate::SimBackend::new(self.build())
            .with_max_sectors(self.max_sectors)
            .with_max_segments(self.max_segments)
    }

    /// Instantiate the model (its queue limits are the backend's: see
    /// [`DeviceSpec::backend`]).
    pub fn build(&self) -> Box<dyn DeviceModel> {
        let g = |k| self.get(k);
        match self.kind {
            ModelKind::Null => self.build_null(),
            ModelKind::Ssd => Box::new(self.build_ssd()),
            ModelKind::Cloud => Box::new(Cloud::new(
                g("iops"),
                g("mbps") * 1_000_000,
                g("io_unit"),
                g("base_us") * 1000,
                g("grant_ms"),
                g("grant_jitter_pct"),
                g("burst_ms"),
                g("nr_requests") as u32,
                self.capacity,
                self.seed,
            )),
            ModelKind::Hdd => Box::new(Hdd::new(
                g("rpm") as u32,
                g("seek_min_us") * 1000,
                g("seek_max_us") * 1000,
                g("mbps") * 1_000_000,
                g("nr_requests") as u32,
                self.capacity,
                self.seed,
            )),
            ModelKind::Fes => Box::new(self.build_fes()),
        }
    }

    /// The `null` model, zoned when `zoned=1`.
    fn build_null(&self) -> Box<dyn DeviceModel> {
        let g = |k| self.get(k);
        let d = NullBlk::new(
            g("completion_ns"),
            g("hw_queues") as u32,
            g("queue_depth") as u32,
            (g("mbps") > 0).then(|| g("mbps") as u32),
            self.capacity,
            self.seed,
        )
        .with_cpus(g("cpus") as u32, self.seed)
        .with_lateness(g("late_p50_ns"), g("late_p99_ns"), self.seed)
        .with_lateness_after_sleep(g("late_sleep_p50_ns"), g("late_sleep_p99_ns"), self.seed)
        .with_lateness_by_cpu(
            (g("late_busy_p50_ns"), g("late_busy_p99_ns")),
            (g("late_idle_p50_ns"), g("late_idle_p99_ns")),
            self.seed,
        )
        .with_copy_rate(g("copy_bytes_per_s"))
        .with_restart_delay(
            g("restart_p50_ns"),
            g("restart_p90_ns"),
            g("restart_p99_ns"),
            self.seed,
        )
        .with_worker_cpu(
            [
                g("dispatch_p50_ns"),
                g("dispatch_p90_ns"),
                g("dispatch_p99_ns"),
            ],
            [g("irq_p50_ns"), g("irq_p90_ns"), g("irq_p99_ns")],
            self.seed,
        )
        .with_worker_irq_late(
            [
                g("irq_late_busy_p50_ns"),
                g("irq_late_busy_p90_ns"),
                g("irq_late_busy_p99_ns"),
            ],
            self.seed,
        );
        Box::new(match self.zoned_params() {
            Some(p) => d.with_zones(super::Zones::new(p, self.capacity)),
            None => d,
        })
    }

    /// The `ssd` model: `*_bps` win over `*_mbps` when set.
    fn build_ssd(&self) -> Ssd {
        let g = |k| self.get(k);
        let mut d = Ssd::new(
            g("channels") as u32,
            g("read_ns"),
            g("write_ns"),
            match g("read_bps") {
                0 => g("read_mbps") * 1_000_000,
                bps => bps,
            },
            match g("write_bps") {
                0 => g("write_mbps") * 1_000_000,
                bps => bps,
            },
            g("nr_requests") as u32,
            self.capacity,
            g("jitter_pct") as u32,
            self.seed,
        );
        d.delay_ns = [g("read_delay_ns"), g("write_delay_ns")];
        d.tail_ns = [g("read_tail_ns"), g("write_tail_ns")];
        d
    }

    /// The `fes` model: each direction's `{read,write}_*` keys.
    fn build_fes(&self) -> Fes {
        let g = |k| self.get(k);
        let dir = |d: &str| FesDir {
            ns_4k: super::FES_DEPTHS.map(|q| self.get(&format!("{d}_ns_q{q}"))),
            ps_per_byte: [1, 16, 64].map(|q| self.get(&format!("{d}_ps_per_byte_q{q}"))),
            shared_ns: self.get(&format!("{d}_shared_ns")),
            max_bps: self.get(&format!("{d}_max_bps")),
            shared_queue: self.get(&format!("{d}_shared_queue")) == 1,
        };
        Fes::new(
            dir("read"),
            dir("write"),
            g("spread_pct") as u32,
            g("spread_run") as u32,
            g("nr_requests") as u32,
            self.capacity,
            self.seed,
        )
        .with_shared_spread(g("shared_spread_pct") as u32, g("shared_spread_run") as u32)
    }

    /// Help text listing every model's parameters and defaults.
    pub fn help() -> String {
        let mut s = String::from("common keys:\n");
        for (k, d, h) in COMMON {
            s += &format!(
                "  {k:<14} {h} (default {})\n",
                if d.is_empty() { "per model" } else { d }
            );
        }
        for kind in [
            ModelKind::Null,
            ModelKind::Ssd,
            ModelKind::Cloud,
            ModelKind::Hdd,
            ModelKind::Fes,
        ] {
            s += &format!("{}:\n", kind.name());
            for (k, d, h) in kind.params() {
                s += &format!("  {k:<14} {h} (default {d})\n");
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_null_with_mbps() {
        let d = DeviceSpec::parse("null,mbps=4,devid=253:1,name=nullb1").unwrap();
        assert_eq!(d.kind, ModelKind::Null);
        assert_eq!(d.get("mbps"), 4);
        assert_eq!(d.devid, DevId::new(253, 1));
        assert_eq!(d.name, "nullb1");
        assert_eq!(d.build().nr_requests(), 64);
    }

    #[test]
    fn errors_name_key_and_value() {
        let e = DeviceSpec::parse("ssd,chanels=4").unwrap_err().to_string();
        assert!(e.contains("`chanels`"), "{e}");
        let e = DeviceSpec::parse("ssd,channels=x").unwrap_err().to_string();
        assert!(e.contains("`channels`") && e.contains("`x`"), "{e}");
        let e = DeviceSpec::parse("ssd,channels=0").unwrap_err().to_string();
        assert!(e.contains("greater than 0"), "{e}");
        assert!(DeviceSpec::parse("floppy").is_err());
        assert!(DeviceSpec::parse("null,devid=8").is_err());
        assert!(DeviceSpec::parse("null,mbps").is_err());
        let e = DeviceSpec::parse("cloud,grant_jitter_pct=101")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`grant_jitter_pct`") && e.contains("at most 100"),
            "{e}"
        );
        let e = DeviceSpec::parse("fes,spread_pct=150")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`spread_pct`") && e.contains("`150`") && e.contains("at most 100"),
            "{e}"
        );
        let e = DeviceSpec::parse("fes,shared_spread_pct=101")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`shared_spread_pct`") && e.contains("`101`") && e.contains("at most 100"),
            "{e}"
        );
        let e = DeviceSpec::parse("fes,write_shared_queue=2")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`write_shared_queue`") && e.contains("`2`") && e.contains("a queue"),
            "{e}"
        );
        let e = DeviceSpec::parse("fes,spread_run=0")
            .unwrap_err()
            .to_string();
        assert!(e.contains("`spread_run`") && e.contains("`0`"), "{e}");
        let e = DeviceSpec::parse("fes,read_ns_q8=0")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`read_ns_q8`") && e.contains("greater than 0"),
            "{e}"
        );
        assert_eq!(
            DeviceSpec::parse("cloud,io_unit=256k")
                .unwrap()
                .get("io_unit"),
            262144
        );
        for bad in ["0", "3", "1048577", "-4", "128k", "x", ""] {
            let e = DeviceSpec::parse(&format!("ssd,max_sectors_kb={bad}"))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("`max_sectors_kb`") && e.contains(&format!("`{bad}`")),
                "{e}"
            );
        }
    }

    #[test]
    fn max_sectors_defaults_and_key() {
        use blkqos_driver::Backend;
        let bytes = |s: &str| DeviceSpec::parse(s).unwrap().backend().max_io_bytes();
        assert_eq!(bytes("null"), 255 * 512);
        assert_eq!(bytes("ssd"), 128 << 10);
        assert_eq!(bytes("cloud"), 1280 << 10);
        assert_eq!(bytes("hdd"), 1280 << 10);
        assert_eq!(bytes("hdd,max_sectors_kb=4"), 4096);
        // the model alone carries the default
        let m = DeviceSpec::parse("null,max_sectors_kb=8").unwrap().build();
        assert_eq!(crate::SimBackend::new(m).max_io_bytes(), 255 * 512);
        let d = DeviceSpec::parse("null,max_sectors_kb=128").unwrap();
        assert_eq!(d.max_io_bytes(), 128 << 10);
        assert!(DeviceSpec::help().contains("max_sectors_kb"));
    }
}
