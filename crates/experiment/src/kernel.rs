//! Kernel profiles: `--kernel=6.1`, `--kernel=6.12`, `--kernel=7.2` pick
//! every controller behaviour and accounting rule of that release as
//! distributions build it (Debian: `CONFIG_HZ=250`, no
//! `CONFIG_BLK_DEV_THROTTLING_LOW`). Build settings that differ are
//! options: `--kernel=6.1,hz=1000,throttling_low=y`.
//!
//! Each profile is checked against that kernel in the lab
//! (`blkqos lab compare`, docs/fidelity.md).

use crate::accounting::AccountingOptions;
use blkqos_core::cgroupfs::{ControllerOptions, VALID_HZ};
use blkqos_driver::pagecache::dirty::WbThreshFloor;

/// One kernel release's behaviour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelProfile {
    /// `MAJOR.MINOR`.
    pub name: &'static str,
    /// blk-throttle variant of a build without THROTTLING_LOW.
    pub throttle: &'static str,
    /// blk-throttle variant of a build with THROTTLING_LOW (the 20 ms
    /// slice on non-rotational devices), where the option exists.
    pub throttle_low: Option<&'static str>,
    /// iocost variant.
    pub iocost: &'static str,
    /// io_ticks generation (`--iostats`).
    pub iostats: &'static str,
    /// `CONFIG_HZ`.
    pub hz: u64,
    /// Buffered writes dirty whole large folios, so a task calls into
    /// `balance_dirty_pages` once per folio (ext4's regular files from
    /// Linux 6.16, "ext4: enable large folio for regular file"; the
    /// simulated files are taken as ext4's).
    pub large_folios: bool,
    /// `balance_dirty_pages` reads memory cgroups' page counts as the
    /// periodic 2 s statistics flush left them (Linux 6.8 on: "mm:
    /// memcg: use ratelimited stats flush in mem_cgroup_wb_stats"); 6.1
    /// flushes them at the read.
    pub memcg_stats_ratelimited: bool,
    /// Reading a cgroup's `io.stat` flushes every controller's statistics
    /// of that cgroup, the memory controller's included
    /// (`blkcg_print_stat` → `cgroup_rstat_flush(blkcg->css.cgroup)`);
    /// from Linux 6.16 each controller has its own rstat tree ("cgroup: use
    /// separate rstat trees for each subsystem") and `io.stat` flushes the
    /// io controller's alone.
    pub io_stat_flushes_memcg: bool,
    /// Where a wb's share of a dirty threshold is floored while its
    /// writeout fraction is small: `__wb_calc_thresh` from Linux 6.14
    /// ("mm/page-writeback: raise wb_thresh to prevent write blocking
    /// with strictlimit"), `wb_position_ratio` alone before.
    pub wb_thresh_floor: WbThreshFloor,
}

/// The releases blkqos has profiles for (and the lab records).
pub const PROFILES: &[KernelProfile] = &[
    KernelProfile {
        name: "6.1",
        throttle: "linux-6.1",
        throttle_low: Some("linux-6.1-low"),
        iocost: "reset",
        iostats: "inflight",
        hz: 250,
        large_folios: false,
        memcg_stats_ratelimited: false,
        io_stat_flushes_memcg: true,
        wb_thresh_floor: WbThreshFloor::PositionRatio,
    },
    KernelProfile {
        name: "6.12",
        throttle: "linux-6.12",
        throttle_low: None,
        iocost: "reset",
        iostats: "inflight",
        hz: 250,
        large_folios: false,
        memcg_stats_ratelimited: true,
        io_stat_flushes_memcg: true,
        wb_thresh_floor: WbThreshFloor::PositionRatio,
    },
    KernelProfile {
        name: "7.2",
        throttle: "linux-7.2",
        throttle_low: None,
        iocost: "hold",
        iostats: "inflight",
        hz: 250,
        large_folios: true,
        memcg_stats_ratelimited: true,
        io_stat_flushes_memcg: false,
        wb_thresh_floor: WbThreshFloor::CalcThresh,
    },
];

impl KernelProfile {
    /// A profile by `MAJOR.MINOR`, or by a release string such as
    /// `6.12.117+deb13-amd64` / `6.1.0-50-amd64`.
    pub fn for_release(release: &str) -> Option<KernelProfile> {
        let mut parts = release.split(|c: char| !c.is_ascii_digit());
        let major = parts.next()?;
        let minor = parts.next()?;
        let mm = format!("{major}.{minor}");
        PROFILES.iter().find(|p| p.name == mm).copied()
    }

    /// Parse `VERSION[,hz=N][,throttling_low=y|n]`.
    pub fn parse(spec: &str) -> Result<(KernelProfile, bool), String> {
        let mut it = spec.split(',');
        let ver = it.next().unwrap_or("");
        let mut p = Self::for_release(ver).ok_or_else(|| {
            let names: Vec<&str> = PROFILES.iter().map(|p| p.name).collect();
            format!(
                "kernel `{ver}`: blkqos has profiles for {}",
                names.join(", ")
            )
        })?;
        let mut low = false;
        for kv in it {
            let (k, v) = kv.split_once('=').ok_or_else(|| {
                format!("kernel option `{kv}`: expected key=value (hz=250, throttling_low=y)")
            })?;
            match k {
                "hz" => {
                    p.hz = v
                        .parse()
                        .ok()
                        .filter(|h| VALID_HZ.contains(h))
                        .ok_or_else(|| {
                            format!("kernel option hz `{v}`: expected 100, 250, 300 or 1000")
                        })?
                }
                "throttling_low" => {
                    low = match v {
                        "y" | "1" => true,
                        "n" | "0" => false,
                        _ => {
                            return Err(format!(
                                "kernel option throttling_low `{v}`: expected y or n"
                            ))
                        }
                    };
                    if low && p.throttle_low.is_none() {
                        return Err(format!(
                            "kernel option throttling_low: {} has no CONFIG_BLK_DEV_THROTTLING_LOW (removed in 6.10)",
                            p.name
                        ));
                    }
                }
                _ => return Err(format!("kernel option `{k}`: use hz or throttling_low")),
            }
        }
        Ok((p, low))
    }

    /// One jiffy in ns.
    pub fn jiffy_ns(&self) -> f64 {
        1e9 / self.hz as f64
    }

    /// Set the controllers and the accounting to this kernel.
    pub fn apply(&self, c: &mut ControllerOptions, a: &mut AccountingOptions) {
        self.apply_build(c, a, false)
    }

    /// The page cache's behaviour of this release.
    pub fn apply_pagecache(&self, p: &mut blkqos_driver::pagecache::PageCacheConfig) {
        p.large_folios = self.large_folios;
        p.memcg_stats_ratelimited = self.memcg_stats_ratelimited;
        p.io_stat_flushes_memcg = self.io_stat_flushes_memcg;
        p.wb_thresh_floor = self.wb_thresh_floor;
    }

    /// As [`apply`](Self::apply), for a build with or without THROTTLING_LOW.
    pub fn apply_build(&self, c: &mut ControllerOptions, a: &mut AccountingOptions, low: bool) {
        let throttle = if low {
            self.throttle_low.unwrap_or(self.throttle)
        } else {
            self.throttle
        };
        c.set("throttle", throttle)
            .expect("profiles name known variants");
        c.set("iocost", self.iocost)
            .expect("profiles name known variants");
        c.hz = self.hz;
        a.set("iostats", self.iostats)
            .expect("profiles name known modes");
        a.hz = self.hz;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_map_to_profiles() {
        assert_eq!(
            KernelProfile::for_release("6.1.0-50-amd64").unwrap().name,
            "6.1"
        );
        assert_eq!(
            KernelProfile::for_release("6.12.117+deb13-amd64")
                .unwrap()
                .name,
            "6.12"
        );
        assert_eq!(
            KernelProfile::for_release("7.2.13+deb14-amd64")
                .unwrap()
                .name,
            "7.2"
        );
        assert!(KernelProfile::for_release("5.4").is_none());
    }

    #[test]
    fn every_profile_applies() {
        for p in PROFILES {
            for low in [false, true] {
                let mut c = ControllerOptions::default();
                let mut a = AccountingOptions::default();
                p.apply_build(&mut c, &mut a, low);
                assert_eq!(c.hz, p.hz);
            }
        }
    }

    #[test]
    fn options_parse_and_refuse() {
        let (p, low) = KernelProfile::parse("6.1,hz=1000,throttling_low=y").unwrap();
        assert_eq!((p.hz, low), (1000, true));
        assert!(KernelProfile::parse("6.12,throttling_low=y")
            .unwrap_err()
            .contains("6.10"));
        assert!(KernelProfile::parse("6.1,hz=123").is_err());
        assert!(KernelProfile::parse("4.9").is_err());
    }
}
