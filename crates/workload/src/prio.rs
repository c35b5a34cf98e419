//! IO priorities: the job's own (`prio`, `prioclass`) and the per-IO
//! priorities of the io_uring and libaio engines' `cmdprio_*` options, as
//! fio 3.33 picks them (`engines/cmdprio.c`: `fio_cmdprio_init`,
//! `fio_cmdprio_set_ioprio`), and the table of distinct priorities a job's
//! completion latencies are kept by (fio's `ts->clat_prio[ddir]`, index 0
//! being the job's own priority).

use crate::ddir::{Ddir, PerDir};
use crate::rng::Stream;

/// `IOPRIO_CLASS_SHIFT`.
pub const IOPRIO_CLASS_SHIFT: u16 = 13;
/// `IOPRIO_CLASS_RT`.
pub const IOPRIO_CLASS_RT: u16 = 1;
/// `IOPRIO_CLASS_BE`.
pub const IOPRIO_CLASS_BE: u16 = 2;
/// `IOPRIO_MAX_PRIO_CLASS`.
pub const IOPRIO_MAX_CLASS: u16 = 3;
/// `IOPRIO_MAX_PRIO`: levels 0 to 7.
pub const IOPRIO_MAX_LEVEL: u16 = 7;
/// fio's `BSSPLIT_MAX`: most `cmdprio_bssplit` entries per direction.
pub const CMDPRIO_BSSPLIT_MAX: usize = 64;

/// `ioprio_value(class, level)`.
pub const fn ioprio_value(class: u16, level: u16) -> u16 {
    (class << IOPRIO_CLASS_SHIFT) | level
}

/// `ioprio_class(value)`.
pub const fn ioprio_class(v: u16) -> u16 {
    v >> IOPRIO_CLASS_SHIFT
}

/// `ioprio(value)`: the level.
pub const fn ioprio_level(v: u16) -> u16 {
    v & ((1 << IOPRIO_CLASS_SHIFT) - 1)
}

/// One `cmdprio_bssplit` block size: the shares of its IOs that get each
/// priority (fio `struct cmdprio_bsprio`); the rest keep the job's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BsPrio {
    pub bs: u64,
    /// `(percent, ioprio)` in the order given; their sum is at most 100.
    pub prios: Vec<(u32, u16)>,
}

impl BsPrio {
    /// `tot_perc`.
    pub fn total_percent(&self) -> u32 {
        self.prios.iter().map(|p| p.0).sum()
    }
}

/// How a direction's IOs get a priority of their own (fio's
/// `CMDPRIO_MODE_*`).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum CmdPrio {
    /// Every IO has the job's priority.
    #[default]
    None,
    /// `cmdprio_percentage=P`: P% of the IOs get `ioprio`.
    Percentage { percent: u32, ioprio: u16 },
    /// `cmdprio_bssplit=`: by block size, sorted by `bs`.
    BsSplit(Vec<BsPrio>),
}

/// A job's IO priorities (`prio`, `prioclass`, `cmdprio*`, `log_prio`).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct PrioSpec {
    /// fio `td->ioprio`: the job's own priority, 0 when neither `prio`
    /// nor `prioclass` was given (the IOs then carry none).
    pub ioprio: u16,
    /// Read and write (trim IOs keep the job's priority, as in fio); a
    /// direction's is [`PrioSpec::cmdprio_of`].
    pub cmdprio: [CmdPrio; 2],
    /// `log_prio=1`: the latency logs' last column is the IO's priority
    /// (`0x%04x`) instead of 1 for the real-time class and 0 otherwise.
    pub log_prio: bool,
}

impl PrioSpec {
    /// Is any IO of the job given a priority other than the job's?
    pub fn has_cmdprio(&self) -> bool {
        self.cmdprio.iter().any(|c| *c != CmdPrio::None)
    }

    /// The cmdprio of direction `ddir`: fio keeps one for reads and one
    /// for writes (`CMDPRIO_RWDIR_CNT`); a trim has none.
    pub fn cmdprio_of(&self, ddir: Ddir) -> Option<&CmdPrio> {
        match ddir {
            Ddir::Read => Some(&self.cmdprio[0]),
            Ddir::Write => Some(&self.cmdprio[1]),
            Ddir::Trim => None,
        }
    }

    /// The distinct priorities direction `ddir`'s completion latencies
    /// are kept by, index 0 the job's own (`fio_cmdprio_gen_perc`,
    /// `fio_cmdprio_parse_and_gen_bssplit`: `init_cmdprio_values` and
    /// `assign_clat_prio_index`); empty when the direction has no cmdprio.
    pub fn clat_prios(&self, ddir: Ddir) -> Vec<u16> {
        let mut values = vec![self.ioprio];
        let mut add = |p: u16| {
            if !values.contains(&p) {
                values.push(p);
            }
        };
        match self.cmdprio_of(ddir) {
            Some(CmdPrio::Percentage { ioprio, .. }) => add(*ioprio),
            Some(CmdPrio::BsSplit(split)) => {
                for e in split {
                    for &(_, p) in &e.prios {
                        add(p);
                    }
                }
            }
            _ => return Vec::new(),
        }
        values
    }
}

/// A job's priority picker: the spec with each priority's index in its
/// direction's [`PrioSpec::clat_prios`] resolved once.
#[derive(Clone, Debug)]
pub struct PrioPicker {
    /// Some direction has a cmdprio (else every IO keeps the job's).
    any: bool,
    spec: PrioSpec,
    table: PerDir<Vec<u16>>,
    rng: Stream,
}

impl PrioPicker {
    /// `fio_cmdprio_init`: `None` when no direction has cmdprio.
    pub fn new(spec: &PrioSpec, rng: Stream) -> Self {
        PrioPicker {
            any: spec.has_cmdprio(),
            table: PerDir::from_fn(|d| spec.clat_prios(d)),
            spec: spec.clone(),
            rng,
        }
    }

    /// The priority of an IO of `ddir` and `len` bytes and its index in
    /// the direction's latency table (`fio_cmdprio_set_ioprio`: a draw in
    /// 0..=99 below the percentage picks a cmdprio priority; with
    /// `cmdprio_bssplit` the entries of the IO's block size share that
    /// range in their order).
    #[inline]
    pub fn pick(&mut self, ddir: Ddir, len: u64) -> (u16, u8) {
        if !self.any {
            // no cmdprio: every IO keeps the job's priority, no draw
            return (self.spec.ioprio, 0);
        }
        self.pick_cmdprio(ddir, len)
    }

    /// [`PrioPicker::pick`] for a job with a cmdprio.
    #[inline(never)]
    fn pick_cmdprio(&mut self, ddir: Ddir, len: u64) -> (u16, u8) {
        let own = (self.spec.ioprio, 0);
        let Some(mode) = self.spec.cmdprio_of(ddir) else {
            return own;
        };
        let chosen = match mode {
            CmdPrio::None => return own,
            CmdPrio::Percentage { percent, ioprio } => {
                if *percent == 0 || self.rng.below(100) as u32 >= *percent {
                    return own;
                }
                *ioprio
            }
            CmdPrio::BsSplit(split) => {
                let Some(e) = split.iter().find(|e| e.bs == len) else {
                    return own;
                };
                let total = e.total_percent();
                if total == 0 {
                    return own;
                }
                let draw = self.rng.below(100) as u32;
                if draw >= total {
                    return own;
                }
                let mut upto = 0;
                let mut chosen = own.0;
                for &(perc, p) in &e.prios {
                    upto += perc;
                    if draw < upto {
                        chosen = p;
                        break;
                    }
                }
                chosen
            }
        };
        let index = self.table[ddir]
            .iter()
            .position(|&p| p == chosen)
            .unwrap_or(0);
        (chosen, index as u8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn picker(spec: PrioSpec) -> PrioPicker {
        PrioPicker::new(&spec, Stream::new(7, 0, 8))
    }

    #[test]
    fn values_as_fio_encodes_them() {
        assert_eq!(ioprio_value(2, 5), 0x4005);
        assert_eq!(ioprio_value(3, 0), 0x6000);
        assert_eq!(ioprio_class(0x2003), 1);
        assert_eq!(ioprio_level(0x2003), 3);
    }

    #[test]
    fn percentage_holds_over_many_ios() {
        let spec = PrioSpec {
            ioprio: ioprio_value(3, 0),
            cmdprio: [
                CmdPrio::Percentage {
                    percent: 20,
                    ioprio: ioprio_value(1, 0),
                },
                CmdPrio::Percentage {
                    percent: 70,
                    ioprio: ioprio_value(1, 4),
                },
            ],
            log_prio: false,
        };
        assert_eq!(spec.clat_prios(Ddir::Read), vec![0x6000, 0x2000]);
        let mut p = picker(spec);
        let n = 100_000;
        let mut high = PerDir::all(0u32);
        for i in 0..n {
            let d = [Ddir::Read, Ddir::Write][i % 2];
            let (v, idx) = p.pick(d, 4096);
            if idx == 1 {
                high[d] += 1;
                assert_eq!(v, if d == Ddir::Read { 0x2000 } else { 0x2004 });
            } else {
                assert_eq!(v, 0x6000);
            }
        }
        let share = |h: u32| f64::from(h) / f64::from(n as u32 / 2);
        assert!((share(high.read) - 0.20).abs() < 0.01, "{high:?}");
        assert!((share(high.write) - 0.70).abs() < 0.01, "{high:?}");
        // trims keep the job's priority
        assert_eq!(p.pick(Ddir::Trim, 4096), (0x6000, 0));
    }

    #[test]
    fn bssplit_maps_block_sizes_to_their_shares() {
        // cmdprio_bssplit=64k/25/1/1:64k/75/3/2:1024k/0 with prio=7, prioclass=2
        let spec = PrioSpec {
            ioprio: ioprio_value(2, 7),
            cmdprio: [
                CmdPrio::BsSplit(vec![BsPrio {
                    bs: 65536,
                    prios: vec![(25, ioprio_value(1, 1)), (75, ioprio_value(3, 2))],
                }]),
                CmdPrio::None,
            ],
            log_prio: true,
        };
        assert_eq!(spec.clat_prios(Ddir::Read), vec![0x4007, 0x2001, 0x6002]);
        assert!(spec.clat_prios(Ddir::Write).is_empty());
        let mut p = picker(spec);
        let mut counts = [0u32; 3];
        for _ in 0..40_000 {
            let (v, idx) = p.pick(Ddir::Read, 65536);
            counts[usize::from(idx)] += 1;
            assert_eq!(v, [0x4007, 0x2001, 0x6002][usize::from(idx)]);
            // 1 MiB reads have no share: the job's priority
            assert_eq!(p.pick(Ddir::Read, 1 << 20), (0x4007, 0));
        }
        assert_eq!(counts[0], 0, "64k shares add to 100");
        let share = f64::from(counts[1]) / 40_000.0;
        assert!((share - 0.25).abs() < 0.01, "{counts:?}");
        assert_eq!(p.pick(Ddir::Write, 65536), (0x4007, 0));
    }

    #[test]
    fn a_shared_priority_is_one_table_entry() {
        // all of the job's IOs at BE/0, as fio 3.33 runs cmdprio-hints
        let spec = PrioSpec {
            ioprio: 0,
            cmdprio: [
                CmdPrio::BsSplit(vec![
                    BsPrio {
                        bs: 1 << 20,
                        prios: vec![(10, 0x4000), (30, 0x4000), (60, 0x4000)],
                    },
                    BsPrio {
                        bs: 2 << 20,
                        prios: vec![(10, 0x4000), (90, 0x4000)],
                    },
                ]),
                CmdPrio::None,
            ],
            log_prio: false,
        };
        assert_eq!(spec.clat_prios(Ddir::Read), vec![0, 0x4000]);
        let mut p = picker(spec);
        for _ in 0..1000 {
            assert_eq!(p.pick(Ddir::Read, 1 << 20), (0x4000, 1));
            assert_eq!(p.pick(Ddir::Read, 2 << 20), (0x4000, 1));
        }
    }
}
