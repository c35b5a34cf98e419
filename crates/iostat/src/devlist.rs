//! sysstat's device list (`struct io_device` and `add_list_device`,
//! `read_sysfs_dlist_stat`, `read_diskstats_stat_work` in iostat.c): which
//! devices exist, in which order they print, and the two sample slots.

use crate::diskstats::DiskCounters;
use crate::sample::{sysfs_name, Sample};

/// A device named on the command line, in sysstat's list order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceArg {
    /// The name as sysfs spells it (`/dev/` stripped, `/` → `!`).
    pub key: String,
    /// Named with `-p`: show the device and its partitions.
    pub with_partitions: bool,
}

/// iostat.h `T_PART`, `T_DEV`, `T_PART_DEV`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DevType {
    Part,
    Dev,
    PartDev,
}

#[derive(Clone, Debug)]
pub(crate) struct Device {
    /// Name as sysfs spells it (`!` for `/`); the list is ordered by it.
    pub key: String,
    /// Named with `-p` before its type was known.
    wants_partitions: bool,
    /// Whole device or partition; decided at the first sample for devices
    /// named on the command line (sysstat looks at `/sys/block` then).
    tp: Option<DevType>,
    pub exist: bool,
    pub stats: [DiskCounters; 2],
}

impl Device {
    /// The name to print (`get_device_name`: `!` back to `/`).
    pub fn display_name(&self) -> String {
        self.key.replace('!', "/")
    }
}

#[derive(Clone, Debug, Default)]
pub(crate) struct DevList {
    pub devs: Vec<Device>,
}

impl DevList {
    /// `add_list_device`: find `key` or insert it, in `strcmp` order when
    /// `sorted` (sysstat sorts unless `-p ALL` or groups are in use), else
    /// at the end. `whole` is the device's type if known. Marks it existing.
    pub fn add(&mut self, key: &str, part_dev: bool, sorted: bool, whole: Option<bool>) -> usize {
        let mut at = self.devs.len();
        for (i, d) in self.devs.iter_mut().enumerate() {
            match d.key.as_str().cmp(key) {
                std::cmp::Ordering::Equal => {
                    if part_dev {
                        match d.tp {
                            Some(DevType::Dev) => d.tp = Some(DevType::PartDev),
                            None => d.wants_partitions = true,
                            _ => {}
                        }
                    }
                    d.exist = true;
                    return i;
                }
                std::cmp::Ordering::Greater if sorted => {
                    at = i;
                    break;
                }
                _ => {}
            }
        }
        let tp = whole.map(|w| match (w, part_dev) {
            (true, true) => DevType::PartDev,
            (true, false) => DevType::Dev,
            (false, _) => DevType::Part,
        });
        self.devs.insert(
            at,
            Device {
                key: key.to_string(),
                wants_partitions: part_dev,
                tp,
                exist: true,
                stats: [DiskCounters::default(); 2],
            },
        );
        at
    }

    pub fn from_args(args: &[DeviceArg]) -> Self {
        DevList {
            devs: args
                .iter()
                .map(|a| Device {
                    key: a.key.clone(),
                    wants_partitions: a.with_partitions,
                    tp: None,
                    exist: true,
                    stats: [DiskCounters::default(); 2],
                })
                .collect(),
        }
    }

    pub fn into_args(self) -> Vec<DeviceArg> {
        self.devs
            .into_iter()
            .map(|d| DeviceArg {
                key: d.key,
                with_partitions: d.wants_partitions,
            })
            .collect()
    }

    /// `set_devices_nonexistent`.
    pub fn set_nonexistent(&mut self) {
        for d in &mut self.devs {
            d.exist = false;
        }
    }

    /// `read_diskstats_stat_work` (`-p ALL`): every line of the sample, in
    /// file order. Extended reports skip old 4-counter partition lines.
    pub fn read_everything(&mut self, s: &Sample, curr: usize, extended: bool) {
        for l in &s.disks {
            if extended && l.is_legacy_partition() {
                continue;
            }
            let k = self.add(
                &sysfs_name(&l.name),
                false,
                false,
                Some(s.is_whole_device(&l.name)),
            );
            self.devs[k].stats[curr] = l.counters;
        }
    }

    /// `read_sysfs_dlist_stat`: the listed devices (with the partitions of
    /// those named by `-p`), then all whole devices if `all_devices`.
    pub fn read_listed(&mut self, s: &Sample, curr: usize, all_devices: bool) {
        let mut i = 0;
        while i < self.devs.len() {
            let d = &mut self.devs[i];
            i += 1;
            if d.exist {
                continue;
            }
            let name = d.display_name();
            let tp =
                *d.tp
                    .get_or_insert_with(|| match (s.is_whole_device(&name), d.wants_partitions) {
                        (true, true) => DevType::PartDev,
                        (true, false) => DevType::Dev,
                        (false, _) => DevType::Part,
                    });
            if let Some(l) = s.find(&name) {
                if tp == DevType::Part || s.is_whole_device(&name) {
                    d.stats[curr] = l.counters;
                    d.exist = true;
                }
            }
            if tp == DevType::PartDev {
                // read_sysfs_device_part_stat: partitions sort after their
                // disk, so they land after position i-1 and are skipped as
                // already existing.
                let parts: Vec<_> = s
                    .partitions_of(&name)
                    .map(|p| (sysfs_name(&p.name), p.counters))
                    .collect();
                for (key, c) in parts {
                    let k = self.add(&key, false, true, Some(false));
                    self.devs[k].stats[curr] = c;
                }
            }
        }
        if all_devices {
            for l in s.disks.iter().filter(|l| s.is_whole_device(&l.name)) {
                let k = self.add(&sysfs_name(&l.name), false, true, Some(true));
                self.devs[k].stats[curr] = l.counters;
            }
        }
    }
}
