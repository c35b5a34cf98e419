//! The kernel's own statistics of the disk under a real target, gathered
//! the way fio 3.33 gathers its `disk_util` (`diskutil.c`):
//!
//! * the device: a block device's own number (`st_rdev`), or the device of
//!   the filesystem holding a file (`st_dev`), both from `lstat` as fio's
//!   `get_device_numbers` takes them (a character device or a FIFO has
//!   none; so has a symlink's own filesystem, devtmpfs, as in fio);
//! * its sysfs directory (fio walks `/sys/block` for the `dev` file that
//!   holds `MAJ:MIN`; `/sys/dev/block/MAJ:MIN` links to the same
//!   directory); a partition (its parent has `queue/`) is replaced by its
//!   disk, as `__init_per_file_disk_util` does, and the name printed is
//!   the directory's (`loop0`, `vda`, `dm-0`);
//! * a stacked device's components (`slaves/`, dm and md) are watched too,
//!   each as a device of its own, listed after the device that holds them
//!   (`find_add_disk_slaves`), and summed into its `aggr_*`;
//! * `stat` is read when the watch starts and when it ends
//!   (`get_io_ticks`: the first 11 fields of `/sys/block/DEV/stat`); the
//!   report is the difference, with `util = 100 * io_ticks / msec` over the
//!   wall time between the two reads (`update_io_tick_disk`,
//!   `print_disk_util`).
//!
//! A filesystem without a block device (tmpfs, overlay's upper layer on
//! one) gives an empty watch, and fio prints no "Disk stats" for it either.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// Deepest chain of stacked devices followed (dm on md on dm ...).
const MAX_STACK_DEPTH: usize = 8;

/// The first 11 fields of a block device's `stat` file (fio's
/// `struct disk_util_stats`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DiskStat {
    /// Completed IOs (reads, writes): `stat` fields 1 and 5.
    pub ios: [u64; 2],
    /// Merged IOs (reads, writes): `stat` fields 2 and 6.
    pub merges: [u64; 2],
    /// 512-byte sectors transferred (read, written): `stat` fields 3 and 7.
    pub sectors: [u64; 2],
    /// ms spent on reads / writes.
    pub ticks: [u64; 2],
    /// ms with IO in flight (`io_ticks`).
    pub io_ticks: u64,
    /// `time_in_queue` (ms).
    pub time_in_queue: u64,
}

impl DiskStat {
    /// Parse a `stat` line: fio's `sscanf` needs all of the first 11 fields.
    pub fn parse(line: &str) -> Option<DiskStat> {
        let f: Vec<u64> = line
            .split_whitespace()
            .take(11)
            .map(str::parse)
            .collect::<Result<_, _>>()
            .ok()?;
        if f.len() < 11 {
            return None;
        }
        Some(DiskStat {
            ios: [f[0], f[4]],
            merges: [f[1], f[5]],
            sectors: [f[2], f[6]],
            ticks: [f[3], f[7]],
            // f[8] is the number in flight: not a counter
            io_ticks: f[9],
            time_in_queue: f[10],
        })
    }

    fn read(dir: &Path) -> Option<DiskStat> {
        let text = std::fs::read_to_string(dir.join("stat")).ok()?;
        DiskStat::parse(text.lines().next()?)
    }

    /// `self - earlier`, field by field (a counter that went back, as
    /// after a device reset, gives 0).
    pub fn since(&self, earlier: &DiskStat) -> DiskStat {
        let d = |a: u64, b: u64| a.saturating_sub(b);
        let d2 = |a: [u64; 2], b: [u64; 2]| [d(a[0], b[0]), d(a[1], b[1])];
        DiskStat {
            ios: d2(self.ios, earlier.ios),
            merges: d2(self.merges, earlier.merges),
            sectors: d2(self.sectors, earlier.sectors),
            ticks: d2(self.ticks, earlier.ticks),
            io_ticks: d(self.io_ticks, earlier.io_ticks),
            time_in_queue: d(self.time_in_queue, earlier.time_in_queue),
        }
    }
}

/// One device's numbers over the watch (fio's `disk_util` after its last
/// `update_io_ticks`).
#[derive(Clone, Debug, PartialEq)]
pub struct DiskDelta {
    /// The sysfs directory's name (`loop0`, `vda`, `dm-0`).
    pub name: String,
    /// The `stat` counters' change over the watch ([`DiskStat::since`]).
    pub stat: DiskStat,
    /// Wall time of the watch, ms.
    pub msec: u64,
    /// Indices (in the list [`DiskWatch::finish`] returns) of the devices
    /// this one is stacked on.
    pub slaves: Vec<usize>,
}

impl DiskDelta {
    /// Percent of the watch with IO in flight (`print_disk_util`: not
    /// capped here).
    pub fn util(&self) -> f64 {
        if self.msec == 0 {
            0.0
        } else {
            100.0 * self.stat.io_ticks as f64 / self.msec as f64
        }
    }
}

struct Watched {
    name: String,
    dir: PathBuf,
    start: DiskStat,
    slaves: Vec<usize>,
}

/// The devices under a target and their `stat` at the start of the run.
pub struct DiskWatch {
    disks: Vec<Watched>,
    started: std::time::Instant,
}

impl DiskWatch {
    /// Start watching the disk under `target` (and its components).
    /// Empty when it has none.
    pub fn start(target: &Path) -> DiskWatch {
        Self::start_in(Path::new("/sys"), target)
    }

    /// [`DiskWatch::start`] with sysfs mounted at `sys` (tests).
    pub fn start_in(sys: &Path, target: &Path) -> DiskWatch {
        let mut w = DiskWatch {
            disks: Vec::new(),
            started: std::time::Instant::now(),
        };
        if let Some(dir) = device_numbers(target).and_then(|(maj, min)| sysfs_dir(sys, maj, min)) {
            w.add(&dir, 0);
        }
        w.started = std::time::Instant::now();
        w
    }

    /// Start watching the disks under every one of `targets` (a run's
    /// several files): fio's `init_disk_util` per file, each disk listed
    /// once, in the order the files first reach it.
    pub fn start_all(targets: &[PathBuf]) -> DiskWatch {
        Self::start_all_in(Path::new("/sys"), targets)
    }

    /// [`DiskWatch::start_all`] with sysfs mounted at `sys` (tests).
    pub fn start_all_in(sys: &Path, targets: &[PathBuf]) -> DiskWatch {
        let mut w = DiskWatch {
            disks: Vec::new(),
            started: std::time::Instant::now(),
        };
        for t in targets {
            if let Some(dir) = device_numbers(t).and_then(|(maj, min)| sysfs_dir(sys, maj, min)) {
                w.add(&dir, 0);
            }
        }
        w.started = std::time::Instant::now();
        w
    }

    /// No disk under the target.
    pub fn is_empty(&self) -> bool {
        self.disks.is_empty()
    }

    /// fio's `disk_util_add`: a device already listed (by name) is not
    /// added twice; its index either way. None: its `stat` is unreadable.
    fn add(&mut self, dir: &Path, depth: usize) -> Option<usize> {
        let dir = disk_of_partition(dir)?;
        let name = dir.file_name()?.to_string_lossy().into_owned();
        if let Some(i) = self.disks.iter().position(|d| d.name == name) {
            return Some(i);
        }
        let start = DiskStat::read(&dir)?;
        let i = self.disks.len();
        self.disks.push(Watched {
            name,
            dir: dir.clone(),
            start,
            slaves: Vec::new(),
        });
        if depth < MAX_STACK_DEPTH {
            self.add_slaves(i, &dir, depth);
        }
        Some(i)
    }

    /// fio's `find_add_disk_slaves`: every entry of `DIR/slaves` (links to
    /// the components' directories), in directory order.
    fn add_slaves(&mut self, master: usize, dir: &Path, depth: usize) {
        let Ok(entries) = std::fs::read_dir(dir.join("slaves")) else {
            return;
        };
        for e in entries.flatten() {
            let Ok(slave_dir) = std::fs::canonicalize(e.path()) else {
                continue;
            };
            if let Some(s) = self.add(&slave_dir, depth + 1) {
                if s != master && !self.disks[master].slaves.contains(&s) {
                    self.disks[master].slaves.push(s);
                }
            }
        }
    }

    /// Read every device's `stat` again: what each did since the start.
    /// A device whose `stat` cannot be read now reports zeros.
    pub fn finish(&self) -> Vec<DiskDelta> {
        let msec = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.disks
            .iter()
            .map(|d| DiskDelta {
                name: d.name.clone(),
                stat: DiskStat::read(&d.dir)
                    .map(|now| now.since(&d.start))
                    .unwrap_or_default(),
                msec,
                slaves: d.slaves.clone(),
            })
            .collect()
    }
}

/// fio's `get_device_numbers`: `MAJ:MIN` of a block device (`st_rdev`),
/// or of the filesystem holding anything else (`st_dev`) but a character
/// device or a FIFO; a path that does not exist counts as its directory's.
fn device_numbers(target: &Path) -> Option<(u32, u32)> {
    let dev = match std::fs::symlink_metadata(target) {
        Ok(m) if m.file_type().is_block_device() => m.rdev(),
        Ok(m) if m.file_type().is_char_device() || m.file_type().is_fifo() => return None,
        Ok(m) => m.dev(),
        Err(_) => {
            let parent = target.parent().filter(|p| !p.as_os_str().is_empty());
            std::fs::metadata(parent.unwrap_or(Path::new(".")))
                .ok()?
                .dev()
        }
    };
    // glibc's gnu_dev_major / gnu_dev_minor
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    Some((major as u32, minor as u32))
}

/// The sysfs directory of block device `maj:min`, if the kernel has one.
fn sysfs_dir(sys: &Path, maj: u32, min: u32) -> Option<PathBuf> {
    std::fs::canonicalize(sys.join(format!("dev/block/{maj}:{min}"))).ok()
}

/// `__init_per_file_disk_util`: a directory whose parent has `queue/` is
/// a partition; its disk is the parent (which must have `queue/` too).
fn disk_of_partition(dir: &Path) -> Option<PathBuf> {
    match dir.parent() {
        Some(p) if p.join("queue").exists() => Some(p.to_path_buf()),
        _ => Some(dir.to_path_buf()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_first_eleven_fields() {
        let s = DiskStat::parse(
            "   16384        3   131072     4521        7        1       64       12        0     3970     4533        0        0        0        0\n",
        )
        .expect("11+ fields");
        assert_eq!(s.ios, [16384, 7]);
        assert_eq!(s.merges, [3, 1]);
        assert_eq!(s.sectors, [131072, 64]);
        assert_eq!(s.ticks, [4521, 12]);
        assert_eq!(s.io_ticks, 3970);
        assert_eq!(s.time_in_queue, 4533);
        assert!(DiskStat::parse("1 2 3 4 5 6 7 8 9 10").is_none());
        assert!(DiskStat::parse("1 2 3 x 5 6 7 8 9 10 11").is_none());
    }

    #[test]
    fn differences_never_go_negative() {
        let a = DiskStat::parse("10 0 80 5 4 0 32 2 0 7 7").expect("line");
        let b = DiskStat::parse("15 1 120 9 4 0 32 2 0 12 11").expect("line");
        let d = b.since(&a);
        assert_eq!(d.ios, [5, 0]);
        assert_eq!(d.io_ticks, 5);
        assert_eq!(a.since(&b).ios, [0, 0]);
        let dd = DiskDelta {
            name: "x".into(),
            stat: d,
            msec: 10,
            slaves: vec![],
        };
        assert!((dd.util() - 50.0).abs() < 1e-9);
    }

    #[test]
    fn no_disk_under_a_character_device_or_proc() {
        assert!(DiskWatch::start(Path::new("/dev/null")).is_empty());
        assert!(DiskWatch::start(Path::new("/proc/self/status")).is_empty());
    }

    /// A sysfs look-alike: `dm-0` stacked on `loop0` and on partition
    /// `vda1` of `vda`; `dev/block/MAJ:MIN` of `target`'s filesystem
    /// links to `dm-0`.
    fn fake_sysfs(root: &Path, target: &Path) {
        use std::os::unix::fs::symlink;
        let blk = root.join("devices/virtual/block");
        let vda = root.join("devices/pci0/virtio1/block/vda");
        for d in [
            blk.join("dm-0/slaves"),
            blk.join("loop0/queue"),
            vda.join("queue"),
            vda.join("vda1"),
            root.join("dev/block"),
        ] {
            std::fs::create_dir_all(d).expect("mkdir");
        }
        let stat = |dir: &Path, line: &str| std::fs::write(dir.join("stat"), line).expect("stat");
        stat(&blk.join("dm-0"), "100 0 800 50 10 0 80 5 0 40 55\n");
        stat(&blk.join("loop0"), "60 1 480 30 6 0 48 3 0 20 33\n");
        stat(&vda, "1000 9 8000 500 100 2 800 50 0 400 550\n");
        stat(&vda.join("vda1"), "7 0 56 1 0 0 0 0 0 1 1\n");
        symlink("../../loop0", blk.join("dm-0/slaves/loop0")).expect("link");
        symlink(
            "../../../../pci0/virtio1/block/vda/vda1",
            blk.join("dm-0/slaves/vda1"),
        )
        .expect("link");
        let (maj, min) = device_numbers(target).expect("a file has a device");
        symlink(
            "../../devices/virtual/block/dm-0",
            root.join(format!("dev/block/{maj}:{min}")),
        )
        .expect("link");
    }

    #[test]
    fn a_stacked_device_then_its_components_partitions_as_their_disk() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let target = tmp.path().join("target.dat");
        std::fs::write(&target, b"x").expect("target");
        let sys = tmp.path().join("sys");
        fake_sysfs(&sys, &target);
        let w = DiskWatch::start_in(&sys, &target);
        let loop0 = sys.join("devices/virtual/block/loop0/stat");
        std::fs::write(loop0, "75 1 600 41 6 0 48 3 0 29 44\n").expect("stat");
        let got = w.finish();
        let names: Vec<&str> = got.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["dm-0", "loop0", "vda"]);
        assert_eq!(got[0].slaves, [1, 2]);
        assert_eq!(got[1].stat.ios, [15, 0]);
        assert_eq!(got[1].stat.ticks, [11, 0]);
        assert_eq!(got[1].stat.io_ticks, 9);
        assert_eq!(got[2].stat, DiskStat::default());
    }

    #[test]
    fn several_files_on_one_file_system_list_its_disks_once() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let files: Vec<PathBuf> = ["a", "b", "c"].iter().map(|n| tmp.path().join(n)).collect();
        for f in &files[..2] {
            std::fs::write(f, b"x").expect("file");
        }
        let sys = tmp.path().join("sys");
        fake_sysfs(&sys, &files[0]);
        // `c` does not exist yet: its directory's device, the same one;
        // /dev/null has none
        let mut targets = files.clone();
        targets.push(PathBuf::from("/dev/null"));
        let w = DiskWatch::start_all_in(&sys, &targets);
        let got = w.finish();
        let names: Vec<&str> = got.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["dm-0", "loop0", "vda"]);
        assert!(
            DiskWatch::start_all(&[PathBuf::from("/dev/null"), PathBuf::from("/dev/zero")])
                .is_empty()
        );
    }

    #[test]
    fn the_root_filesystem_disk_if_it_has_one() {
        // whatever holds `/`: a disk (listed with a name) or none (a
        // container's overlay); never a partition's name when it is one
        let w = DiskWatch::start(Path::new("/"));
        for d in w.finish() {
            assert!(!d.name.is_empty());
            assert!(Path::new("/sys/block").join(&d.name).exists(), "{}", d.name);
        }
    }
}
