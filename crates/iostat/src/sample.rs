//! One sample of the kernel files iostat reads: `/proc/diskstats`,
//! `/proc/uptime` and (for the `avg-cpu` report) `/proc/stat`.

use crate::diskstats::{parse_diskstats, parse_u64, DiskStatsLine};
use crate::error::{Error, ParseError};
use std::path::Path;

/// The `cpu ` line of `/proc/stat`, in jiffies (sysstat's `struct stats_cpu`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTimes {
    pub user: u64,
    pub nice: u64,
    pub sys: u64,
    pub idle: u64,
    pub iowait: u64,
    pub hardirq: u64,
    pub softirq: u64,
    pub steal: u64,
    pub guest: u64,
    pub guest_nice: u64,
}

impl CpuTimes {
    /// All jiffies of the interval, as iostat's `rw_io_stat_loop` sums them
    /// (guest time is already inside user and nice).
    pub fn total(&self) -> u64 {
        self.user
            .wrapping_add(self.nice)
            .wrapping_add(self.sys)
            .wrapping_add(self.idle)
            .wrapping_add(self.iowait)
            .wrapping_add(self.hardirq)
            .wrapping_add(self.steal)
            .wrapping_add(self.softirq)
    }
}

/// What iostat uses from `/proc/stat`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcStat {
    pub cpu: CpuTimes,
    /// Highest `cpuN` + 1 (sysstat's `get_proc_cpu_nr`), 0 if no `cpuN` line.
    pub nr_cpus: u32,
}

/// One sample: what iostat reads at one instant.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sample {
    /// Uptime in 1/100 s (`read_uptime`: seconds·100 + hundredths).
    pub uptime_cs: u64,
    /// The `/proc/diskstats` lines, in file order.
    pub disks: Vec<DiskStatsLine>,
    /// The `cpu` times of `/proc/stat`, if it was read (needed only for the
    /// `avg-cpu` report).
    pub cpu: Option<CpuTimes>,
    /// The names in `/sys/block` (whole devices, `/` spelled `!`), if known.
    /// When `None`, whole devices and partitions are told apart by name: a
    /// partition is `<disk><N>`, or `<disk>p<N>` when `<disk>` ends in a
    /// digit (the kernel's `disk_name` rule), of a disk in the same sample.
    pub whole_devices: Option<Vec<String>>,
    /// Wall-clock time of the read, Unix seconds (UTC); only `-t`
    /// timestamps show it.
    pub time: i64,
}

impl Sample {
    /// A sample with only disk counters and uptime.
    pub fn new(uptime_cs: u64, disks: Vec<DiskStatsLine>) -> Self {
        Sample {
            uptime_cs,
            disks,
            cpu: None,
            whole_devices: None,
            time: 0,
        }
    }

    /// Is `name` (a `/proc/diskstats` name) a whole device, i.e. listed in
    /// `/sys/block`?
    pub fn is_whole_device(&self, name: &str) -> bool {
        match &self.whole_devices {
            Some(w) => {
                let sys = sysfs_name(name);
                w.contains(&sys)
            }
            None => {
                self.disks.iter().any(|d| d.name == name)
                    && partition_parent(name, |p| self.disks.iter().any(|d| d.name == p)).is_none()
            }
        }
    }

    /// The partitions of whole device `disk`, in file order.
    pub fn partitions_of<'a>(
        &'a self,
        disk: &'a str,
    ) -> impl Iterator<Item = &'a DiskStatsLine> + 'a {
        self.disks.iter().filter(move |d| {
            d.name != disk
                && !self.is_whole_device(&d.name)
                && partition_parent(&d.name, |p| p == disk).is_some()
        })
    }

    /// The line for device `name`.
    pub fn find(&self, name: &str) -> Option<&DiskStatsLine> {
        self.disks.iter().find(|d| d.name == name)
    }
}

/// The disk that partition `name` belongs to, if `name` is spelled like a
/// partition of a device for which `exists` is true: `sda1` → `sda`,
/// `nvme0n1p2` → `nvme0n1`, `mmcblk0p1` → `mmcblk0`.
pub fn partition_parent(name: &str, exists: impl Fn(&str) -> bool) -> Option<&str> {
    let base = name.trim_end_matches(|c: char| c.is_ascii_digit());
    if base.len() == name.len() || base.is_empty() {
        return None;
    }
    if !base.ends_with(|c: char| c.is_ascii_digit()) && exists(base) {
        return Some(base);
    }
    let disk = base.strip_suffix('p')?;
    if disk.ends_with(|c: char| c.is_ascii_digit()) && exists(disk) {
        return Some(disk);
    }
    None
}

/// `cciss/c0d0` → `cciss!c0d0`, as sysfs spells names.
pub(crate) fn sysfs_name(name: &str) -> String {
    name.replace('/', "!")
}

/// Parse `/proc/uptime` as sysstat's `read_uptime` does (`sscanf("%lu.%lu")`
/// on the first field): `"7192.55 ..."` → 719255 (1/100 s).
pub fn parse_uptime(text: &str) -> Result<u64, ParseError> {
    let first = text.split_ascii_whitespace().next().unwrap_or("");
    let bad = || {
        ParseError::new(
            1,
            format!("expected uptime `SECONDS.HUNDREDTHS`, found {first:?}"),
        )
    };
    let (sec, cent) = first.split_once('.').ok_or_else(bad)?;
    let sec = parse_u64(sec).map_err(|_| bad())?;
    let cent = parse_u64(cent).map_err(|_| bad())?;
    sec.checked_mul(100)
        .and_then(|s| s.checked_add(cent))
        .ok_or_else(bad)
}

/// Parse the `cpu ` line (and count the `cpuN` lines) of `/proc/stat`, as
/// sysstat's `read_stat_cpu` and `get_proc_cpu_nr` do. Missing trailing
/// fields (old kernels) are 0; at least user, nice, system and idle are
/// required.
pub fn parse_stat(text: &str) -> Result<ProcStat, ParseError> {
    let mut cpu = None;
    let mut nr_cpus = 0u32;
    for (i, line) in text.lines().enumerate() {
        if let Some(rest) = line.strip_prefix("cpu ") {
            let mut v = [0u64; 10];
            let toks: Vec<&str> = rest.split_ascii_whitespace().collect();
            if toks.len() < 4 {
                return Err(ParseError::new(
                    i + 1,
                    "the `cpu` line has fewer than 4 fields",
                ));
            }
            for (k, t) in toks.iter().take(10).enumerate() {
                v[k] = parse_u64(t)
                    .map_err(|m| ParseError::new(i + 1, format!("cpu field {}: {m}", k + 1)))?;
            }
            cpu = Some(CpuTimes {
                user: v[0],
                nice: v[1],
                sys: v[2],
                idle: v[3],
                iowait: v[4],
                hardirq: v[5],
                softirq: v[6],
                steal: v[7],
                guest: v[8],
                guest_nice: v[9],
            });
        } else if let Some(rest) = line.strip_prefix("cpu") {
            let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
            if let Ok(n) = digits.parse::<u32>() {
                nr_cpus = nr_cpus.max(n.saturating_add(1));
            }
        }
    }
    let cpu = cpu.ok_or_else(|| ParseError::new(1, "no `cpu ` line"))?;
    Ok(ProcStat { cpu, nr_cpus })
}

fn read_text(path: &Path) -> Result<String, Error> {
    std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Read a sample from a directory laid out like `/proc`: `diskstats` and
/// `uptime` are required, `stat` is optional (without it there is no
/// `avg-cpu` report). Returns the sample and the CPU count of `stat`.
pub fn read_proc_dir(dir: &Path) -> Result<(Sample, Option<u32>), Error> {
    let ds = dir.join("diskstats");
    let disks = parse_diskstats(&read_text(&ds)?).map_err(|e| Error::parse(&ds, e))?;
    let up = dir.join("uptime");
    let uptime_cs = parse_uptime(&read_text(&up)?).map_err(|e| Error::parse(&up, e))?;
    let st = dir.join("stat");
    let stat = match std::fs::read_to_string(&st) {
        Ok(text) => Some(parse_stat(&text).map_err(|e| Error::parse(&st, e))?),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(source) => return Err(Error::Io { path: st, source }),
    };
    let sample = Sample {
        uptime_cs,
        disks,
        cpu: stat.map(|s| s.cpu),
        whole_devices: None,
        time: 0,
    };
    Ok((sample, stat.map(|s| s.nr_cpus)))
}

/// The entries of a `/sys/block`-like directory (whole devices), sorted.
pub fn read_sys_block(dir: &Path) -> Result<Vec<String>, Error> {
    let io = |source| Error::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut names = Vec::new();
    for e in std::fs::read_dir(dir).map_err(io)? {
        names.push(e.map_err(io)?.file_name().to_string_lossy().into_owned());
    }
    names.sort();
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diskstats::parse_diskstats;

    #[test]
    fn uptime_is_read_like_sysstat() {
        assert_eq!(parse_uptime("7192.55 29212.05\n").unwrap(), 719255);
        assert_eq!(parse_uptime("0.07 0.00").unwrap(), 7);
        // sscanf("%lu.%lu") quirk: one digit is taken as hundredths.
        assert_eq!(parse_uptime("10.5 1.0").unwrap(), 1005);
        assert!(parse_uptime("").is_err());
        assert!(parse_uptime("12 3").is_err());
        assert!(parse_uptime("a.b").is_err());
    }

    #[test]
    fn stat_cpu_line_and_count() {
        let s =
            parse_stat("cpu  1 2 3 4 5 6 7 8 9 10\ncpu0 1 1 1 1\ncpu3 1 1 1 1\nintr 5\n").unwrap();
        assert_eq!(s.cpu.user, 1);
        assert_eq!(s.cpu.guest_nice, 10);
        assert_eq!(s.cpu.total(), 1 + 2 + 3 + 4 + 5 + 6 + 7 + 8);
        assert_eq!(s.nr_cpus, 4);
        let s = parse_stat("cpu 1 2 3 4\n").unwrap();
        assert_eq!((s.cpu.idle, s.cpu.iowait, s.nr_cpus), (4, 0, 0));
        assert_eq!(parse_stat("cpu 1 2 3\n").unwrap_err().line, 1);
        assert!(parse_stat("intr 1\n").is_err());
        assert_eq!(parse_stat("x\ncpu 1 2 x 4\n").unwrap_err().line, 2);
    }

    #[test]
    fn whole_devices_and_partitions_by_name() {
        let z = " 0 0 0 0 0 0 0 0 0 0 0";
        let text: String = [
            "sda",
            "sda1",
            "sda12",
            "sdaa",
            "nvme0n1",
            "nvme0n1p1",
            "mmcblk0",
            "mmcblk0p2",
            "mmcblk0boot0",
            "dm-1",
            "dm-10",
            "sr0",
            "loop0p1",
        ]
        .iter()
        .map(|n| format!("1 0 {n}{z}\n"))
        .collect();
        let s = Sample::new(1, parse_diskstats(&text).unwrap());
        let whole: Vec<&str> = s
            .disks
            .iter()
            .filter(|d| s.is_whole_device(&d.name))
            .map(|d| d.name.as_str())
            .collect();
        assert_eq!(
            whole,
            [
                "sda",
                "sdaa",
                "nvme0n1",
                "mmcblk0",
                "mmcblk0boot0",
                "dm-1",
                "dm-10",
                "sr0",
                "loop0p1"
            ]
        );
        let parts: Vec<&str> = s.partitions_of("sda").map(|d| d.name.as_str()).collect();
        assert_eq!(parts, ["sda1", "sda12"]);
        assert_eq!(s.partitions_of("nvme0n1").count(), 1);
        assert_eq!(s.partitions_of("dm-1").count(), 0);
        assert!(!s.is_whole_device("nosuch"));
        // With /sys/block known, it decides.
        let mut s2 = s.clone();
        s2.whole_devices = Some(vec!["sda".into(), "sda1".into()]);
        assert!(s2.is_whole_device("sda1"));
        assert!(!s2.is_whole_device("sdaa"));
    }
}
