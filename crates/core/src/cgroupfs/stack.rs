//! Building a device's controller stack from cgroupfs knob writes, as the
//! kernel applies them: writes replayed in time order (a write at time 0
//! before the run, later ones scheduled), cgroup v1 and v2 throttle files
//! never mixed, each line checked for its device, and iocost's refusals
//! (`ioc_qos_write`: min above max after the write) reported up front with
//! the write that caused them. The same code builds the simulator's, the
//! real engine's and an embedder's stack.

use super::file::KnobFile;
use crate::iocost::knob::{parse_io_weight, parse_model, parse_qos};
use crate::iocost::{IoCost, IoCostConfig, Reconfig, WeightWrite};
use crate::knob_line::KnobError;
use crate::throttle::knob::{parse_io_max, parse_v1, LimitWrite, Limits, V1File};
use crate::throttle::paced::{Paced, PacedConfig};
use crate::throttle::{Throttle, ThrottleConfig, Variant};
use crate::{CgroupTree, ControllerStack, DevId, GroupId, Instant, Jiffies, PassThrough};
use std::any::Any;
use std::collections::BTreeMap;

/// One write to a knob file (`echo VALUE > /sys/fs/cgroup/CGROUP/FILE`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KnobWrite {
    /// When it happens: 0 = before the run.
    pub at_ns: u64,
    /// The cgroup's path (`/a/b`; `/` for the root's files).
    pub cgroup: String,
    /// The file written (`io.max`, `io.weight`, ...).
    pub knob: KnobFile,
    /// The line as written.
    pub value: String,
    /// Where the write comes from (`file:line`), for errors.
    pub origin: String,
}

/// Why a set of writes cannot build a stack.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CgroupfsError {
    /// Both `io.max` and a v1 `blkio.throttle.*` file were written: one
    /// hierarchy cannot have both.
    #[error(
        "io.max (cgroup v2) and blkio.throttle.* (cgroup v1) cannot be mixed on one hierarchy"
    )]
    MixedV1V2,
    /// The kernel refuses the line when it is written.
    #[error("{origin}: {err}")]
    Refused {
        /// Where the write comes from (`file:line`).
        origin: String,
        /// The kernel's refusal.
        err: KnobError,
    },
    /// iocost refuses the write at its time (the replay found it).
    #[error("{origin}: {err}; the write was `{value}`")]
    RefusedAt {
        /// Where the write comes from (`file:line`).
        origin: String,
        /// The kernel's refusal.
        err: KnobError,
        /// The line written, trimmed.
        value: String,
    },
    /// The line names another device than the stack's.
    #[error("{origin}: {file}: no such device `{got}` (the device is {dev}; set devid in [device] or --device=...,devid=MAJ:MIN)")]
    WrongDevice {
        /// Where the write comes from (`file:line`).
        origin: String,
        /// The knob file written.
        file: &'static str,
        /// The device the line names.
        got: DevId,
        /// The stack's device ([`DeviceInfo::dev`]).
        dev: DevId,
    },
    /// The write's cgroup is not in the tree.
    #[error("{origin}: no cgroup `{cgroup}` in the tree (create it before writing to it)")]
    NoGroup {
        /// Where the write comes from (`file:line`).
        origin: String,
        /// The cgroup path as written.
        cgroup: String,
    },
    /// The file does not exist in that cgroup (`io.cost.*` outside the
    /// root, `io.max` in the root).
    #[error("{origin}: {file} does not exist in cgroup `{cgroup}` ({why})")]
    NoFile {
        /// Where the write comes from (`file:line`).
        origin: String,
        /// The knob file written.
        file: &'static str,
        /// The cgroup path as written.
        cgroup: String,
        /// Where the file exists.
        why: &'static str,
    },
    /// A write into a running stack that no stage implements: its stages
    /// were chosen when it was built ([`ControllerStack::from_writes`]).
    #[error("{origin}: no stage of this stack takes {file} ({why})")]
    NoStage {
        /// Where the write comes from (`file:line`).
        origin: String,
        /// The knob file written.
        file: &'static str,
        /// What the stack would have needed at build time.
        why: &'static str,
    },
}

/// Which io.max implementation runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThrottleChoice {
    /// blk-throttle as a kernel generation implements it ([`Variant`]).
    Kernel(Variant),
    /// blkqos's `paced` limiter ([`Paced`]) with its burst tolerances.
    Paced(PacedConfig),
}

/// Controller selection, from `[controllers]` or flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ControllerOptions {
    /// `jiffies` when the run starts (blk-throttle's absolute slice rounding);
    /// drawn from the run's seed unless `jiffies_at_start` is set.
    pub jiffies_at_start: u64,
    /// `jiffies_at_start` was given explicitly.
    pub jiffies_explicit: bool,
    /// Where in its jiffy the run starts (ns, below one jiffy); the
    /// experiment draws it from the run's seed unless `tick_phase_ns` is set.
    pub tick_phase_ns: u64,
    /// `tick_phase_ns` was given explicitly.
    pub tick_phase_explicit: bool,
    /// The io.max implementation (default: blk-throttle, `mainline` variant).
    pub throttle: ThrottleChoice,
    /// The iocost generation to model.
    pub iocost: crate::iocost::Variant,
    /// iocost's base vrate when the run starts (vtime per µs), if not the
    /// kernel's initial 100%: the state left by earlier runs.
    pub iocost_vrate: Option<u64>,
    /// The kernel's `CONFIG_HZ` (100, 250, 300 or 1000; default 1000): the
    /// jiffy length of blk-throttle's slices and iocost's timers.
    pub hz: u64,
    /// `/sys/module/blk_cgroup/parameters/blkcg_debug_stats`: iocost's
    /// io.stat keys add `cost.wait`, `cost.indebt`, `cost.indelay`.
    pub debug_stats: bool,
    /// Build blk-wbt (when iocost is not on the device): the run issues
    /// buffered writeback, the IO blk-wbt throttles.
    pub wbt: bool,
    /// `queue/wbt_lat_usec`; `None`: the kernel's default for the device
    /// ([`crate::wbt::default_min_lat_ns`]); 0 turns blk-wbt off.
    pub wbt_lat_usec: Option<u64>,
    /// Which dirty-throttle sleeps blk-wbt counts (a kernel generation's).
    pub wbt_recent_wait: crate::wbt::RecentWait,
    /// How late the host runs iocost's period timer past its tick
    /// (`iocost_timer_late_ns`, [`crate::time::lateness`]); the experiment
    /// seeds its draws from the run's seed.
    pub iocost_timer_late: Option<crate::time::TimerLateness>,
}

impl Default for ControllerOptions {
    fn default() -> Self {
        ControllerOptions {
            jiffies_at_start: 0,
            jiffies_explicit: false,
            tick_phase_ns: 0,
            tick_phase_explicit: false,
            throttle: ThrottleChoice::Kernel(crate::throttle::variant::MAINLINE),
            iocost: crate::iocost::Variant::default(),
            iocost_vrate: None,
            hz: 1000,
            debug_stats: false,
            wbt: false,
            wbt_lat_usec: None,
            wbt_recent_wait: crate::wbt::RecentWait::AnyTask,
            iocost_timer_late: None,
        }
    }
}

/// Kernel HZ values (`CONFIG_HZ_*`).
pub const VALID_HZ: [u64; 4] = [100, 250, 300, 1000];

impl ControllerOptions {
    /// Set one option by name (`throttle`, `hz`, `paced_burst_ios`,
    /// `paced_burst_bytes`); the error says what is accepted.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        match key {
            "throttle" => {
                self.throttle = if value == "paced" {
                    ThrottleChoice::Paced(match self.throttle {
                        ThrottleChoice::Paced(p) => p,
                        _ => PacedConfig::default(),
                    })
                } else {
                    ThrottleChoice::Kernel(Variant::by_name(value).ok_or_else(|| {
                        let names: Vec<&str> = crate::throttle::variant::NAMES.iter().map(|n| n.0).collect();
                        format!("throttle `{value}`: use paced or one of {}", names.join(", "))
                    })?)
                }
            }
            "iocost" => {
                self.iocost = crate::iocost::Variant::by_name(value).ok_or_else(|| {
                    let names: Vec<&str> =
                        crate::iocost::variant::NAMES.iter().map(|n| n.0).collect();
                    format!("iocost `{value}`: use one of {}", names.join(", "))
                })?
            }
            "iocost_vrate" => self.iocost_vrate = Some(parse_vrate_pct(value)?),
            "blkcg_debug_stats" | "blkcg-debug-stats" => {
                self.debug_stats = match value {
                    "1" | "Y" | "y" | "true" => true,
                    "0" | "N" | "n" | "false" => false,
                    _ => return Err(format!("blkcg_debug_stats `{value}`: expected 0 or 1")),
                }
            }
            "jiffies_at_start" => {
                self.jiffies_at_start = value
                    .parse()
                    .map_err(|_| format!("jiffies_at_start `{value}`: expected an unsigned integer"))?;
                self.jiffies_explicit = true;
            }
            "tick_phase_ns" => {
                // below the longest jiffy (HZ=100); taken modulo the run's own
                let ns: u64 = value
                    .parse()
                    .ok()
                    .filter(|&n| n < 10_000_000)
                    .ok_or_else(|| format!("tick_phase_ns `{value}`: expected nanoseconds into a jiffy, 0 to 9999999"))?;
                self.tick_phase_ns = ns;
                self.tick_phase_explicit = true;
            }
            "hz" => {
                let hz: u64 = value.parse().map_err(|_| format!("hz `{value}`: expected 100, 250, 300 or 1000"))?;
                if !VALID_HZ.contains(&hz) {
                    return Err(format!("hz `{value}`: expected 100, 250, 300 or 1000"));
                }
                self.hz = hz;
            }
            "paced_burst_ios" | "paced_burst_bytes" => {
                let n: u64 = value
                    .parse()
                    .map_err(|_| format!("{key} `{value}`: expected an unsigned integer"))?;
                let mut p = match self.throttle {
                    ThrottleChoice::Paced(p) => p,
                    _ => PacedConfig::default(),
                };
                if key == "paced_burst_ios" {
                    p.burst_ios = n;
                } else {
                    p.burst_bytes = n;
                }
                self.throttle = ThrottleChoice::Paced(p);
            }
            "iocost_timer_late_ns" => self.set_iocost_timer_late(value)?,
            "wbt_lat_usec" => {
                self.wbt_lat_usec = Some(value.parse().map_err(|_| {
                    format!("wbt_lat_usec `{value}`: expected microseconds (0 turns blk-wbt off)")
                })?);
            }
            _ => return Err(format!("unknown controller option `{key}`: use throttle, iocost, iocost_vrate, blkcg_debug_stats, hz, tick_phase_ns, jiffies_at_start, paced_burst_ios, paced_burst_bytes, wbt_lat_usec, iocost_timer_late_ns")),
        }
        Ok(())
    }
}

impl ControllerOptions {
    /// `iocost_timer_late_ns`: seven quantiles, or fourteen (after a run on
    /// time, then after a late one); the seed is kept.
    fn set_iocost_timer_late(&mut self, value: &str) -> Result<(), String> {
        let seed = self.iocost_timer_late.map_or(0, |l| l.seed);
        let l = crate::time::TimerLateness::parse(value)
            .map_err(|e| format!("iocost_timer_late_ns {e}"))?;
        self.iocost_timer_late = Some(crate::time::TimerLateness { seed, ..l });
        Ok(())
    }
}

/// `iocost_vrate`: a percentage with up to two decimals, as `io.stat`
/// prints `cost.vrate` ("127.50"), in 1..10000 → vtime per µs.
fn parse_vrate_pct(value: &str) -> Result<u64, String> {
    let bad = || {
        format!("iocost_vrate `{value}`: expected a percentage 1..10000 with up to two decimals, e.g. 127.50")
    };
    let (int, frac) = value.trim().split_once('.').unwrap_or((value.trim(), ""));
    if int.is_empty()
        || frac.len() > 2
        || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())
    {
        return Err(bad());
    }
    let hundredths = int
        .parse::<u64>()
        .map_err(|_| bad())?
        .checked_mul(100)
        .ok_or_else(bad)?
        + format!("{frac:0<2}").parse::<u64>().map_err(|_| bad())?;
    if !(100..=1_000_000).contains(&hundredths) {
        return Err(bad());
    }
    Ok(crate::iocost::vtime::VTIME_PER_USEC * hundredths / 10_000)
}

/// The device a stack is built for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The device's `MAJ:MIN`; every knob line must name it.
    pub dev: DevId,
    /// Rotational (HDD): blk-throttle's longer slice, iocost's defaults.
    pub rotational: bool,
    /// Request slots (`nr_requests`): iocost's queue depth.
    pub nr_requests: u32,
}

impl ControllerStack {
    /// The stack for one device with the knob `writes` applied (at time 0)
    /// or scheduled (later): blk-throttle (or `paced`, by `opts`) when an
    /// io.max or blkio.throttle file was written, iocost below it when
    /// io.weight or io.cost.* was; a pass-through stage otherwise.
    pub fn from_writes(
        opts: &ControllerOptions,
        tree: &CgroupTree,
        device: DeviceInfo,
        writes: &[KnobWrite],
    ) -> Result<ControllerStack, CgroupfsError> {
        let mut writes: Vec<&KnobWrite> = writes.iter().collect();
        writes.sort_by_key(|w| w.at_ns);
        let v1 = writes
            .iter()
            .any(|w| matches!(w.knob, KnobFile::V1Throttle { .. }));
        let v2 = writes.iter().any(|w| w.knob == KnobFile::IoMax);
        if v1 && v2 {
            return Err(CgroupfsError::MixedV1V2);
        }
        let Replayed {
            changes,
            cost_writes,
        } = replay_writes(&writes, tree, device.dev)?;
        let mut stack = ControllerStack::new();
        if changes.is_empty() {
            stack.push(Box::new(PassThrough));
        } else {
            push_throttle(&mut stack, opts, tree, device, v1, changes);
        }
        let before = stack.stages().count();
        push_iocost(&mut stack, opts, tree, device, cost_writes)?;
        // ioc_qos_write → wbt_disable_default: no blk-wbt beside iocost
        if stack.stages().count() == before {
            push_wbt(&mut stack, opts, device);
        }
        Ok(stack)
    }
}

/// Add blk-wbt below the other stages when the run asks for it
/// ([`ControllerOptions::wbt`]) and its latency target is not 0.
fn push_wbt(stack: &mut ControllerStack, opts: &ControllerOptions, device: DeviceInfo) {
    let min_lat_ns = opts.wbt_lat_usec.map_or_else(
        || crate::wbt::default_min_lat_ns(device.rotational),
        |us| us.saturating_mul(1000),
    );
    if !opts.wbt || min_lat_ns == 0 {
        return;
    }
    stack.push(Box::new(crate::wbt::Wbt::new(crate::wbt::WbtConfig {
        min_lat_ns,
        queue_depth: device.nr_requests,
        write_cache: false,
        recent_wait: opts.wbt_recent_wait,
        hz: opts.hz,
        tick_phase_ns: opts.tick_phase_ns,
    })));
}

/// The knob writes of [`ControllerStack::from_writes`], replayed.
struct Replayed<'w> {
    /// `(at_ns, group, limits after the write)` per limit-file write.
    changes: Vec<(u64, GroupId, Limits)>,
    /// The io.weight / io.cost.* writes, parsed.
    cost_writes: Vec<(u64, Reconfig, &'w KnobWrite)>,
}

/// Replay `writes` (sorted by time) to know each group's limits after each
/// limit write, parsing and checking every line; the first refusal stops.
fn replay_writes<'w>(
    writes: &[&'w KnobWrite],
    tree: &CgroupTree,
    dev: DevId,
) -> Result<Replayed<'w>, CgroupfsError> {
    let refused = |w: &KnobWrite| {
        let origin = w.origin.clone();
        move |err| CgroupfsError::Refused { origin, err }
    };
    let mut cost_writes: Vec<(u64, Reconfig, &KnobWrite)> = Vec::new();
    let mut current: BTreeMap<GroupId, Limits> = BTreeMap::new();
    let mut changes: Vec<(u64, GroupId, Limits)> = Vec::new();
    for &w in writes {
        match w.knob {
            KnobFile::IoMax => {
                let p = parse_io_max(&w.value).map_err(refused(w))?;
                check_dev(w, p.dev, dev)?;
                let g = group_of(tree, w)?;
                let l = current.entry(g).or_default();
                p.apply(l);
                changes.push((w.at_ns, g, *l));
            }
            KnobFile::V1Throttle { write, iops } => {
                let (d, v) = parse_v1(V1File { write, iops }, &w.value).map_err(refused(w))?;
                check_dev(w, d, dev)?;
                let g = group_of(tree, w)?;
                let l = current.entry(g).or_default();
                LimitWrite::V1 {
                    write,
                    iops,
                    value: v,
                }
                .apply(l);
                changes.push((w.at_ns, g, *l));
            }
            KnobFile::IoWeight | KnobFile::IoCostModel | KnobFile::IoCostQos => {
                cost_writes.push(parse_cost_write(w, dev, tree)?);
            }
        }
    }
    Ok(Replayed {
        changes,
        cost_writes,
    })
}

/// Add blk-throttle (or `paced`, by `opts`) with the replayed limit
/// `changes`: those at time 0 set before the run, later ones scheduled.
fn push_throttle(
    stack: &mut ControllerStack,
    opts: &ControllerOptions,
    tree: &CgroupTree,
    device: DeviceInfo,
    v1: bool,
    changes: Vec<(u64, GroupId, Limits)>,
) {
    match opts.throttle {
        ThrottleChoice::Kernel(variant) => {
            let mut t = Throttle::new(
                ThrottleConfig {
                    variant,
                    hz: opts.hz,
                    rotational: device.rotational,
                    flat: v1,
                    jiffies_at_start: Jiffies(opts.jiffies_at_start),
                    tick_phase_ns: opts.tick_phase_ns,
                },
                tree,
            );
            for (at, g, l) in changes {
                if at == 0 {
                    t.set_limits(g, l, Instant::ZERO);
                } else {
                    t.schedule_limits(Instant(at), g, l);
                }
            }
            stack.push(Box::new(t));
        }
        ThrottleChoice::Paced(cfg) => {
            let mut p = Paced::new(cfg, tree, v1);
            for (at, g, l) in changes {
                if at == 0 {
                    p.set_limits(g, l, Instant::ZERO);
                } else {
                    p.schedule_limits(Instant(at), g, l);
                }
            }
            stack.push(Box::new(p));
        }
    }
}

impl ControllerStack {
    /// Write knob line `w` into the running stack at `now`, as
    /// `echo LINE > FILE` on a live system: parsed and checked as
    /// [`ControllerStack::from_writes`] checks it (the device must be
    /// `dev`, the cgroup online in `tree`), then applied at once by the
    /// stage that implements the file. `w.at_ns` is not read. The stages
    /// are those the stack was built with: a file none of them implements
    /// is refused with [`CgroupfsError::NoStage`] (build with an `io.max`
    /// line of `max` values to have blk-throttle, with an `io.cost.qos`
    /// line to have iocost).
    pub fn write(
        &mut self,
        tree: &CgroupTree,
        dev: DevId,
        w: &KnobWrite,
        now: Instant,
    ) -> Result<(), CgroupfsError> {
        let root = CgroupTree::normalize(&w.cgroup).is_ok_and(|p| p == "/");
        let misplaced = if w.knob.root_only() && !root {
            Some("it exists only in the root cgroup")
        } else if w.knob.non_root() && root {
            Some("the root cgroup cannot be limited")
        } else {
            None
        };
        if let Some(why) = misplaced {
            return Err(CgroupfsError::NoFile {
                origin: w.origin.clone(),
                file: w.knob.name(),
                cgroup: w.cgroup.clone(),
                why,
            });
        }
        let refused = |err| CgroupfsError::Refused {
            origin: w.origin.clone(),
            err,
        };
        let mut stages = self.stages_mut().map(|s| s as &mut dyn Any);
        let applied = match w.knob {
            KnobFile::IoMax => {
                let p = parse_io_max(&w.value).map_err(refused)?;
                check_dev(w, p.dev, dev)?;
                write_limits(&mut stages, group_of(tree, w)?, LimitWrite::IoMax(p), now)
            }
            KnobFile::V1Throttle { write, iops } => {
                let (d, value) = parse_v1(V1File { write, iops }, &w.value).map_err(refused)?;
                check_dev(w, d, dev)?;
                let lw = LimitWrite::V1 { write, iops, value };
                write_limits(&mut stages, group_of(tree, w)?, lw, now)
            }
            KnobFile::IoWeight | KnobFile::IoCostModel | KnobFile::IoCostQos => {
                let r = parse_cost_write(w, dev, tree)?.1;
                match stages.find_map(|st| st.downcast_mut::<IoCost>()) {
                    Some(c) => {
                        return c.write_at(now, r).map_err(|err| CgroupfsError::RefusedAt {
                            origin: w.origin.clone(),
                            err,
                            value: w.value.trim().to_string(),
                        })
                    }
                    None => false,
                }
            }
        };
        if applied {
            return Ok(());
        }
        let why = match w.knob {
            KnobFile::IoMax => {
                "it was built without io.max writes, or for cgroup v1 (blkio.throttle.*)"
            }
            KnobFile::V1Throttle { .. } => {
                "it was built without blkio.throttle.* writes, or for cgroup v2 (io.max)"
            }
            _ => "it was built without io.weight or io.cost.* writes: iocost is not a stage",
        };
        Err(CgroupfsError::NoStage {
            origin: w.origin.clone(),
            file: w.knob.name(),
            why,
        })
    }
}

/// A limit file into the stack's blk-throttle or paced stage; `false`
/// when none takes it.
fn write_limits<'s>(
    stages: &mut impl Iterator<Item = &'s mut dyn Any>,
    g: GroupId,
    lw: LimitWrite,
    now: Instant,
) -> bool {
    stages.any(|st| {
        if let Some(t) = st.downcast_mut::<Throttle>() {
            t.write_limits(g, &lw, now)
        } else if let Some(t) = st.downcast_mut::<Paced>() {
            t.write_limits(g, &lw, now)
        } else {
            false
        }
    })
}

fn group_of(tree: &CgroupTree, w: &KnobWrite) -> Result<GroupId, CgroupfsError> {
    tree.get(&w.cgroup).ok_or_else(|| CgroupfsError::NoGroup {
        origin: w.origin.clone(),
        cgroup: w.cgroup.clone(),
    })
}

/// Parse an io.weight / io.cost.* write into an iocost reconfiguration.
fn parse_cost_write<'w>(
    w: &'w KnobWrite,
    dev: DevId,
    tree: &CgroupTree,
) -> Result<(u64, Reconfig, &'w KnobWrite), CgroupfsError> {
    let e = |err| CgroupfsError::Refused {
        origin: w.origin.clone(),
        err,
    };
    let r = match w.knob {
        KnobFile::IoCostQos => {
            let q = parse_qos(&w.value).map_err(e)?;
            check_dev(w, q.dev, dev)?;
            Reconfig::Qos(q)
        }
        KnobFile::IoCostModel => {
            let m = parse_model(&w.value).map_err(e)?;
            check_dev(w, m.dev, dev)?;
            Reconfig::Model(m)
        }
        _ => {
            let ww = parse_io_weight(&w.value).map_err(e)?;
            match ww {
                WeightWrite::Device(d, _) | WeightWrite::DeviceDefault(d) => check_dev(w, d, dev)?,
                WeightWrite::Default(_) => {}
            }
            Reconfig::Weight(group_of(tree, w)?, ww)
        }
    };
    Ok((w.at_ns, r, w))
}

/// Add iocost below the throttle when any of its knobs was written.
fn push_iocost(
    stack: &mut ControllerStack,
    opts: &ControllerOptions,
    tree: &CgroupTree,
    device: DeviceInfo,
    writes: Vec<(u64, Reconfig, &KnobWrite)>,
) -> Result<(), CgroupfsError> {
    if writes.is_empty() {
        return Ok(());
    }
    let cfg = IoCostConfig {
        hz: opts.hz,
        tick_phase_ns: opts.tick_phase_ns,
        rotational: device.rotational,
        queue_depth: device.nr_requests,
        variant: opts.iocost,
        timer_late: opts.iocost_timer_late,
    };
    let mut c = IoCost::new(cfg, tree);
    // the kernel refuses a write when it happens (`ioc_qos_write`: min >
    // max after the write); replay every write in time order on a scratch
    // controller so a later refusal is reported now, with its origin
    let mut scratch = IoCost::new(cfg, tree);
    let mut in_order: Vec<&(u64, Reconfig, &KnobWrite)> = writes.iter().collect();
    in_order.sort_by_key(|(at, _, _)| *at);
    for (_, r, w) in in_order {
        let refused = |err| CgroupfsError::RefusedAt {
            origin: w.origin.clone(),
            err,
            value: w.value.trim().to_string(),
        };
        match r {
            Reconfig::Qos(q) => scratch.apply_qos(q).map_err(refused)?,
            Reconfig::Model(m) => scratch.apply_model(m),
            Reconfig::Weight(g, ww) => scratch.set_weight(*g, *ww).map_err(refused)?,
        }
    }
    for (at, r, _) in writes {
        if at == 0 {
            // validated by the replay above: the same writes in the same order
            let _ = match r {
                Reconfig::Qos(q) => c.apply_qos(&q),
                Reconfig::Model(m) => {
                    c.apply_model(&m);
                    Ok(())
                }
                Reconfig::Weight(g, w) => c.set_weight(g, w),
            };
        } else {
            c.schedule(Instant(at), r);
        }
    }
    if let Some(v) = opts.iocost_vrate {
        c.set_vrate(v);
    }
    c.set_debug_stats(opts.debug_stats);
    stack.push(Box::new(c));
    Ok(())
}

fn check_dev(w: &KnobWrite, got: DevId, dev: DevId) -> Result<(), CgroupfsError> {
    if got != dev {
        return Err(CgroupfsError::WrongDevice {
            origin: w.origin.clone(),
            file: w.knob.name(),
            got,
            dev,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iocost::vtime::VTIME_PER_USEC;

    #[test]
    fn iocost_vrate_takes_a_percentage() {
        let mut o = ControllerOptions::default();
        assert_eq!(o.iocost_vrate, None);
        o.set("iocost_vrate", "127.50").unwrap();
        assert_eq!(o.iocost_vrate, Some(VTIME_PER_USEC * 12_750 / 10_000));
        o.set("iocost_vrate", "127.5").unwrap();
        assert_eq!(o.iocost_vrate, Some(VTIME_PER_USEC * 12_750 / 10_000));
        o.set("iocost_vrate", "100").unwrap();
        assert_eq!(o.iocost_vrate, Some(VTIME_PER_USEC));
        for bad in ["", "0.99", "10000.01", "12.345", "1e2", "-5", "x", ".5"] {
            let e = o.set("iocost_vrate", bad).unwrap_err();
            assert!(
                e.contains("iocost_vrate") && e.contains("1..10000"),
                "{bad}: {e}"
            );
        }
    }
}
