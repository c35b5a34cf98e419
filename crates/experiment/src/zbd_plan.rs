//! `zonemode=zbd` and `ioengine=libzbc` on the simulator: the zoned device
//! such jobs run on, and fio's zone set-up for each clone (fio 3.33
//! `zbd.c`: `parse_zone_info`, `zbd_set_max_open_zones`,
//! `zbd_zone_align_file_sizes`, `zbd_verify_bs`, `zbd_setup_files`).
//!
//! Without a chosen device (`--device`, a scenario's `[device]`) the run's
//! device becomes a zoned null_blk whose zone size is the jobs' `zonesize`
//! (null_blk's 256 MiB without one); a chosen device must be zoned (fio
//! would emulate zones on a regular file or a disk without zones;
//! blkqos runs zbd on a zoned device only).

use anyhow::{bail, Result};
use blkqos_sim::DeviceSpec;
use blkqos_workload::spec_zone::ZoneMode;
use blkqos_workload::zbd::{ZbdInfo, ZbdShared, ZbdZone};
use blkqos_workload::{Ddir, IoEngine, JobSpec};

const MIB: u64 = 1 << 20;

/// The job needs zones: `zonemode=zbd` or `ioengine=libzbc`.
fn wants_zones(s: &JobSpec) -> bool {
    s.zones.mode == ZoneMode::Zbd || s.ioengine == IoEngine::Libzbc
}

fn what(s: &JobSpec) -> &'static str {
    if s.zones.mode == ZoneMode::Zbd {
        "zonemode=zbd"
    } else {
        "ioengine=libzbc"
    }
}

/// `file:line` of a job's section.
fn at(s: &JobSpec) -> String {
    if s.origin.line == 0 {
        s.origin.file.clone()
    } else {
        format!("{}:{}", s.origin.file, s.origin.line)
    }
}

/// The simulated device of a run whose `jobs` need zones (see the module
/// doc); `given`: the device was chosen. Nothing changes for other runs.
pub fn settle_device<'a>(
    device: &mut DeviceSpec,
    given: bool,
    jobs: impl Iterator<Item = &'a mut JobSpec>,
) -> Result<()> {
    let mut zoned: Vec<&mut JobSpec> = jobs.filter(|j| wants_zones(j)).collect();
    let Some(first) = zoned.first() else {
        return Ok(());
    };
    if given {
        if device.zoned_params().is_none() {
            bail!(
                "{}: job `{}`: {} needs a zoned device, and the simulated device `{}` has no zones: \
                 give --device=null,zoned=1,zone_size=MiB (fio would emulate zones on a disk \
                 without them; blkqos runs zoned jobs on a zoned null_blk only), or leave \
                 --device out for a zoned null_blk",
                at(first),
                first.name,
                what(first),
                device.name
            );
        }
        return Ok(());
    }
    let mut sizes: Vec<u64> = zoned
        .iter()
        .map(|j| j.zones.size_bytes)
        .filter(|&b| b > 0)
        .collect();
    sizes.dedup();
    let zone_mib = match sizes.as_slice() {
        [] => 256,
        [b] if b % MIB == 0 && (b / MIB).is_power_of_two() => b / MIB,
        [b] => bail!(
            "{}: job `{}`: zonesize={b}: the simulated zoned null_blk's zones are a power of \
             two MiB: give such a zonesize, or --device=null,zoned=1,zone_size=MiB",
            at(first),
            first.name
        ),
        _ => bail!(
            "{}: job `{}`: the zoned jobs give different zonesize values, and a run has one \
             device: give them one zonesize",
            at(first),
            first.name
        ),
    };
    let mib = zone_mib.to_string();
    let size = device.capacity.to_string();
    *device = DeviceSpec::new(
        "null",
        [
            ("zoned", "1"),
            ("zone_size", mib.as_str()),
            ("size", size.as_str()),
        ],
    )?;
    let first = &mut zoned[0];
    let note = format!(
        "{}: the simulated device is a zoned null_blk (--device=null,zoned=1,zone_size={zone_mib},size={size})",
        what(first)
    );
    first.notes.push(note);
    Ok(())
}

/// The run's shared zones, made when its first zbd clone is set up.
#[derive(Default)]
pub struct ZbdRun {
    shared: Option<ZbdShared>,
}

impl ZbdRun {
    /// fio's zone set-up for a clone of `spec` whose range is `(start,
    /// len)` on `dev`: the checks against the device's zones, the shared
    /// zone state in `spec`, and the range aligned to zones (fio's notes
    /// on stderr).
    pub fn setup(
        &mut self,
        spec: &mut JobSpec,
        start: u64,
        len: u64,
        dev: &DeviceSpec,
    ) -> Result<(u64, u64)> {
        if spec.zones.mode != ZoneMode::Zbd {
            return Ok((start, len));
        }
        let name = spec.filename.clone().unwrap_or_default();
        if !(name.starts_with("/dev/") || name == dev.name) {
            bail!(
                "{}: job `{}`: zonemode=zbd on file `{name}`: fio emulates zones inside a regular \
                 file; blkqos runs zbd on the zoned device only: give filename=/dev/... (the \
                 simulated device)",
                at(spec),
                spec.name
            );
        }
        let Some(p) = dev.zoned_params() else {
            bail!(
                "{}: job `{}`: zonemode=zbd needs a zoned device (--device=null,zoned=1,...)",
                at(spec),
                spec.name
            );
        };
        let zone_size = p.zone_size_mib * MIB;
        self.check(spec, &name, zone_size)?;
        let shared = match &self.shared {
            Some(s) => s.clone(),
            None => {
                let s = ZbdShared::new(report(dev, p, zone_size));
                let device_max = if p.zone_max_active > 0 && p.zone_max_open > p.zone_max_active {
                    p.zone_max_active
                } else {
                    p.zone_max_open
                };
                s.lock()
                    .set_max_open_zones(
                        spec.zones.max_open_zones,
                        device_max as u32,
                        spec.zones.ignore_zone_limits,
                    )
                    .map_err(|e| anyhow::anyhow!("{}: job `{}`: {e}", at(spec), spec.name))?;
                self.shared = Some(s.clone());
                s
            }
        };
        let info = shared.lock();
        let z = &spec.zones;
        if z.max_open_zones > 0 && info.max_open_zones != z.max_open_zones {
            bail!(
                "{}: job `{}`: Different 'max_open_zones' values",
                at(spec),
                spec.name
            );
        }
        if z.job_max_open_zones > 0 && info.max_open_zones == 0 {
            bail!(
                "{}: job `{}`: 'job_max_open_zones' cannot be used without a global open zones limit",
                at(spec),
                spec.name
            );
        }
        let reads_only = !spec.rw.has_write() && !spec.rw.has_trim();
        let (off, size, notes) = info
            .align_range(start, len, reads_only, &name)
            .map_err(|e| anyhow::anyhow!("{}: job `{}`: {e}", at(spec), spec.name))?;
        drop(info);
        // fio's log_info, per clone
        for n in notes {
            log::info!("blkqos: note: job `{}`: {n}", spec.name);
        }
        spec.zones.zbd = Some(shared);
        Ok((off, size))
    }

    /// fio's checks of the job against the device's zone size
    /// (`parse_zone_info`, `zbd_verify_bs`).
    fn check(&self, spec: &JobSpec, name: &str, zone_size: u64) -> Result<()> {
        let z = &spec.zones;
        if z.size_bytes > 0 && z.size_bytes != zone_size {
            bail!(
                "{}: job `{}`: {name} job parameter zonesize {} does not match disk zone size {zone_size}.",
                at(spec),
                spec.name,
                z.size_bytes
            );
        }
        if spec.rw.has_trim() && spec.bs.get(Ddir::Trim) != zone_size {
            bail!(
                "{}: job `{}`: {name}: trim block size {} is not the zone size {zone_size}",
                at(spec),
                spec.name,
                spec.bs.get(Ddir::Trim)
            );
        }
        if spec.verify.logs_writes() {
            if let Some(d) = Ddir::ALL
                .into_iter()
                .find(|&d| !zone_size.is_multiple_of(spec.bs.get(d).max(1)))
            {
                bail!(
                    "{}: job `{}`: {name}: block size {} is not a divisor of the zone size {zone_size}",
                    at(spec),
                    spec.name,
                    spec.bs.get(d)
                );
            }
        }
        Ok(())
    }
}

/// The device's zone report (fio `parse_zone_info` on a fresh device).
fn report(dev: &DeviceSpec, p: blkqos_sim::device::ZonedParams, zone_size: u64) -> ZbdInfo {
    let zones = blkqos_sim::device::Zones::new(p, dev.capacity);
    let list = zones
        .zones
        .iter()
        .map(|z| {
            if z.cond == blkqos_sim::device::ZoneCond::NotWp {
                ZbdZone::conventional(z.start, z.capacity)
            } else {
                ZbdZone::empty(z.start, z.capacity)
            }
        })
        .collect();
    ZbdInfo::from_report(zone_size, list, dev.capacity)
}
