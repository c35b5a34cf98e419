//! The linear cost model (`io.cost.model`) and the automatic parameter
//! classes ("autop") with their default QoS and coefficients.
//!
//! A 4 KiB IO that is sequential costs exactly `1/seqiops` s of device time,
//! a random one `1/randiops` s; every 4 KiB page adds `1/(bps/4096)` s.
//! Worked example (SSD_DFL read: rbps=488636629, rrandiops=8518):
//! `page = ceil(2^37 / ceil(488636629/4096)) = 1,152,074`,
//! `randio = ceil(2^37/8518) − page = 14,983,047`, so a 4 KiB random read
//! costs 16,135,121 vtime = 117.40 µs (→ 8518 IOs/s at 100% vrate) and a
//! 1 MiB sequential read `14,235,181 + 256 × 1,152,074 = 309,166,125` = 2.249 ms.

use super::vtime::{period_us_for, VRATE_MAX_PPM, VRATE_MIN_PPM, VTIME_PER_SEC};
use crate::io::{Io, IoOp};
use crate::math::div_round_up;

/// log2 of the size unit: 4 KiB pages (`IOC_PAGE_SHIFT`).
pub const IOC_PAGE_SHIFT: u32 = 12;
/// `IOC_PAGE_SIZE`: 4096 bytes, the size unit of the page cost.
pub const IOC_PAGE_SIZE: u64 = 1 << IOC_PAGE_SHIFT;
/// Sectors → pages.
pub const IOC_SECT_TO_PAGE_SHIFT: u32 = IOC_PAGE_SHIFT - 9;
/// Farther than 16 MiB from the cursor is random (`LCOEF_RANDIO_PAGES`).
pub const LCOEF_RANDIO_PAGES: u64 = 4096;

/// Index of an `io.cost.qos` parameter in [`Params::qos`]. `QOS_RPPM`: read
/// latency percentile (`rpct`), ppm.
pub const QOS_RPPM: usize = 0;
/// `QOS_RLAT`: read latency target, µs.
pub const QOS_RLAT: usize = 1;
/// `QOS_WPPM`: write latency percentile (`wpct`), ppm.
pub const QOS_WPPM: usize = 2;
/// `QOS_WLAT`: write latency target, µs.
pub const QOS_WLAT: usize = 3;
/// `QOS_MIN`: lower bound of the base vrate, ppm of 100%.
pub const QOS_MIN: usize = 4;
/// `QOS_MAX`: upper bound of the base vrate, ppm of 100%.
pub const QOS_MAX: usize = 5;
/// `NR_QOS_PARAMS`: number of `io.cost.qos` parameters.
pub const NR_QOS_PARAMS: usize = 6;

/// Index of an `io.cost.model` input in [`Params::i_lcoefs`].
/// `I_LCOEF_RBPS`: read bytes/s (`rbps`).
pub const I_LCOEF_RBPS: usize = 0;
/// `I_LCOEF_RSEQIOPS`: sequential 4 KiB read IOs/s (`rseqiops`).
pub const I_LCOEF_RSEQIOPS: usize = 1;
/// `I_LCOEF_RRANDIOPS`: random 4 KiB read IOs/s (`rrandiops`).
pub const I_LCOEF_RRANDIOPS: usize = 2;
/// `I_LCOEF_WBPS`: write bytes/s (`wbps`).
pub const I_LCOEF_WBPS: usize = 3;
/// `I_LCOEF_WSEQIOPS`: sequential 4 KiB write IOs/s (`wseqiops`).
pub const I_LCOEF_WSEQIOPS: usize = 4;
/// `I_LCOEF_WRANDIOPS`: random 4 KiB write IOs/s (`wrandiops`).
pub const I_LCOEF_WRANDIOPS: usize = 5;
/// `NR_I_LCOEFS`: number of `io.cost.model` inputs.
pub const NR_I_LCOEFS: usize = 6;

/// Index of a derived coefficient in [`Params::lcoefs`]. `LCOEF_RPAGE`:
/// vtime per 4 KiB page read.
pub const LCOEF_RPAGE: usize = 0;
/// `LCOEF_RSEQIO`: vtime of a sequential read IO, beyond its pages.
pub const LCOEF_RSEQIO: usize = 1;
/// `LCOEF_RRANDIO`: vtime of a random read IO, beyond its pages.
pub const LCOEF_RRANDIO: usize = 2;
/// `LCOEF_WPAGE`: vtime per 4 KiB page written.
pub const LCOEF_WPAGE: usize = 3;
/// `LCOEF_WSEQIO`: vtime of a sequential write IO, beyond its pages.
pub const LCOEF_WSEQIO: usize = 4;
/// `LCOEF_WRANDIO`: vtime of a random write IO, beyond its pages.
pub const LCOEF_WRANDIO: usize = 5;

/// The automatic parameter classes, in the kernel's order (`AUTOP_*`; the
/// order matters: SSD_DFL ↔ SSD_FAST switch by ±1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AutopClass {
    /// `AUTOP_HDD`: rotational devices.
    Hdd = 1,
    /// `AUTOP_SSD_QD1`: non-rotational devices with a queue depth of 1.
    SsdQd1 = 2,
    /// `AUTOP_SSD_DFL`: other non-rotational devices (the default).
    SsdDfl = 3,
    /// `AUTOP_SSD_FAST`: fast SSDs; entered from SSD_DFL when the base vrate
    /// stays at or above 500% for 10 s, left when it stays at or below 10%.
    SsdFast = 4,
}

impl AutopClass {
    /// Every class, in the kernel's order.
    pub const ALL: [AutopClass; 4] = [
        AutopClass::Hdd,
        AutopClass::SsdQd1,
        AutopClass::SsdDfl,
        AutopClass::SsdFast,
    ];
    /// The name iocost_monitor.py prints (`params=`).
    pub const fn name(self) -> &'static str {
        match self {
            AutopClass::Hdd => "hdd",
            AutopClass::SsdQd1 => "ssd_qd1",
            AutopClass::SsdDfl => "ssd_dfl",
            AutopClass::SsdFast => "ssd_fast",
        }
    }
    pub(super) const fn up(self) -> AutopClass {
        match self {
            AutopClass::SsdDfl | AutopClass::SsdFast => AutopClass::SsdFast,
            c => c,
        }
    }
    pub(super) const fn down(self) -> AutopClass {
        match self {
            AutopClass::SsdFast | AutopClass::SsdDfl => AutopClass::SsdDfl,
            c => c,
        }
    }
}

/// One row of the kernel's `autop[]` table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AutopParams {
    /// Default `io.cost.qos` values, indexed by `QOS_*` (ppm, µs, ppm of
    /// vrate), as [`Params::qos`].
    pub qos: [u32; NR_QOS_PARAMS],
    /// Default `io.cost.model` inputs, indexed by `I_LCOEF_*` (bytes/s and
    /// IOs/s), as [`Params::i_lcoefs`].
    pub i_lcoefs: [u64; NR_I_LCOEFS],
    /// Switch up (to SSD_FAST) when base vrate ≥ this % for 10 s (0 = never).
    pub too_fast_vrate_pct: u32,
    /// Switch down (to SSD_DFL) when base vrate ≤ this % for 10 s (0 = never).
    pub too_slow_vrate_pct: u32,
}

const fn qos_lat(lat: u32) -> [u32; NR_QOS_PARAMS] {
    [0, lat, 0, lat, VRATE_MIN_PPM, VRATE_MAX_PPM]
}

/// linux block/blk-iocost.c: `autop[]`.
pub const AUTOP: [AutopParams; 4] = [
    AutopParams {
        qos: qos_lat(250_000),
        i_lcoefs: [174_019_176, 41_708, 370, 178_075_866, 42_705, 378],
        too_fast_vrate_pct: 0,
        too_slow_vrate_pct: 0,
    },
    AutopParams {
        qos: qos_lat(25_000),
        i_lcoefs: [245_855_193, 61_575, 6_946, 141_365_009, 33_716, 26_796],
        too_fast_vrate_pct: 0,
        too_slow_vrate_pct: 0,
    },
    AutopParams {
        qos: qos_lat(25_000),
        i_lcoefs: [488_636_629, 8_932, 8_518, 427_891_549, 28_755, 21_940],
        too_fast_vrate_pct: 500,
        too_slow_vrate_pct: 0,
    },
    AutopParams {
        qos: qos_lat(5_000),
        i_lcoefs: [
            3_102_524_156,
            724_816,
            778_122,
            1_742_780_862,
            425_702,
            443_193,
        ],
        too_fast_vrate_pct: 0,
        too_slow_vrate_pct: 10,
    },
];

/// The table row of a class.
pub fn autop(class: AutopClass) -> &'static AutopParams {
    &AUTOP[class as usize - 1]
}

/// `calc_lcoefs`: `(page, seqio, randio)` in vtime from bytes/s and 4 KiB
/// IOPS. `page = ceil(2^37 / ceil(bps/4096))`; `seqio`/`randio` are the
/// per-IO remainder `max(ceil(2^37/iops) − page, 0)`. Zero inputs give 0.
pub fn calc_lcoefs(bps: u64, seqiops: u64, randiops: u64) -> (u64, u64, u64) {
    let mut page = 0;
    if bps != 0 {
        let bps_pages = div_round_up(bps, IOC_PAGE_SIZE);
        page = if bps_pages != 0 {
            div_round_up(VTIME_PER_SEC, bps_pages)
        } else {
            1
        };
    }
    let per_io = |iops: u64| {
        if iops == 0 {
            return 0;
        }
        let v = div_round_up(VTIME_PER_SEC, iops);
        v.saturating_sub(page)
    };
    (page, per_io(seqiops), per_io(randiops))
}

/// The device parameters in effect (`struct ioc_params`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// `io.cost.qos` values: rpct/wpct and min/max in ppm, rlat/wlat in µs.
    pub qos: [u32; NR_QOS_PARAMS],
    /// `io.cost.model` inputs.
    pub i_lcoefs: [u64; NR_I_LCOEFS],
    /// Derived coefficients (vtime): rpage, rseqio, rrandio, wpage, wseqio, wrandio.
    pub lcoefs: [u64; 6],
}

impl Params {
    /// The parameters of autop class `class`: its QoS and model rows of
    /// `autop[]`, with the derived coefficients (`ioc_refresh_params` without
    /// user overrides).
    pub fn from_autop(class: AutopClass) -> Self {
        let a = autop(class);
        let mut p = Params {
            qos: a.qos,
            i_lcoefs: a.i_lcoefs,
            lcoefs: [0; 6],
        };
        p.refresh_lcoefs();
        p
    }

    /// `ioc_refresh_lcoefs`.
    pub fn refresh_lcoefs(&mut self) {
        let u = &self.i_lcoefs;
        let (rp, rs, rr) = calc_lcoefs(u[I_LCOEF_RBPS], u[I_LCOEF_RSEQIOPS], u[I_LCOEF_RRANDIOPS]);
        let (wp, ws, wr) = calc_lcoefs(u[I_LCOEF_WBPS], u[I_LCOEF_WSEQIOPS], u[I_LCOEF_WRANDIOPS]);
        self.lcoefs = [rp, rs, rr, wp, ws, wr];
    }

    /// The period these QoS parameters give (µs).
    pub fn period_us(&self) -> u64 {
        let q = &self.qos;
        period_us_for(q[QOS_RPPM], q[QOS_RLAT], q[QOS_WPPM], q[QOS_WLAT])
    }

    /// `calc_vtime_cost_builtin`: the absolute cost of a bio issued by a
    /// group whose cursor (end sector of its last charged bio) is `cursor`
    /// (0 = none yet). Only reads and writes with data cost anything.
    pub fn vtime_cost(&self, io: &Io, cursor: u64, is_merge: bool) -> u64 {
        if io.len == 0 {
            return 0;
        }
        let base = match io.op {
            IoOp::Read => LCOEF_RPAGE,
            IoOp::Write => LCOEF_WPAGE,
            IoOp::Discard | IoOp::Flush => return 0,
        };
        let (coef_page, coef_seqio, coef_randio) = (
            self.lcoefs[base],
            self.lcoefs[base + 1],
            self.lcoefs[base + 2],
        );
        let pages = (io.sectors() >> IOC_SECT_TO_PAGE_SHIFT).max(1);
        let seek_pages = if cursor != 0 {
            io.sector().abs_diff(cursor) >> IOC_SECT_TO_PAGE_SHIFT
        } else {
            0
        };
        let mut cost: u64 = 0;
        if !is_merge {
            cost = if seek_pages > LCOEF_RANDIO_PAGES {
                coef_randio
            } else {
                coef_seqio
            };
        }
        cost.wrapping_add(pages.wrapping_mul(coef_page))
    }

    /// `calc_size_vtime_cost_builtin`: the size-only part (no per-IO base,
    /// no minimum of one page), used to discount transfer time from the
    /// completion latency.
    pub fn size_vtime_cost(&self, io: &Io) -> u64 {
        // blk_rq_stats_sectors() is an unsigned int, so is `pages`
        let pages = ((io.sectors() >> IOC_SECT_TO_PAGE_SHIFT) as u32) as u64;
        match io.op {
            IoOp::Read => pages.wrapping_mul(self.lcoefs[LCOEF_RPAGE]),
            IoOp::Write => pages.wrapping_mul(self.lcoefs[LCOEF_WPAGE]),
            IoOp::Discard | IoOp::Flush => 0,
        }
    }
}
