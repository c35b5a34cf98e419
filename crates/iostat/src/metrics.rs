//! The numbers of iostat's reports, computed from two samples exactly as
//! sysstat 12.6.1 computes them (same integer widths, same order of
//! floating-point operations, so that `%.2f` prints the same digits).
//!
//! Notation: `prev`/`curr` are sysstat's `ioj`/`ioi`; `itv` is the interval
//! in 1/100 s (`get_interval`); deltas wrap in the counter's own width, as
//! C's unsigned subtraction does.

use crate::diskstats::DiskCounters;
use crate::sample::CpuTimes;

/// Display unit of the throughput columns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Unit {
    /// 512-byte sectors (`POSIXLY_CORRECT` set and neither `-k` nor `-m`).
    Sectors,
    /// kB (the default, `-k`).
    #[default]
    Kilobytes,
    /// MB (`-m`).
    Megabytes,
}

impl Unit {
    /// sysstat's `fctr`: sectors per displayed unit.
    pub fn factor(self) -> u32 {
        match self {
            Unit::Sectors => 1,
            Unit::Kilobytes => 2,
            Unit::Megabytes => 2048,
        }
    }
}

/// sysstat's `S_VALUE(m, n, p)` (common.h): `((double) (n - m)) / p * 100`,
/// a per-second rate from a delta over `itv` hundredths of a second.
pub fn s_value(delta: f64, itv: u64) -> f64 {
    delta / itv as f64 * 100.0
}

/// sysstat's `get_interval` (common.c): `curr - prev`, or 1 if that is 0.
pub fn get_interval(prev: u64, curr: u64) -> u64 {
    match curr.wrapping_sub(prev) {
        0 => 1,
        d => d,
    }
}

fn d64(c: u64, p: u64) -> u64 {
    c.wrapping_sub(p)
}
fn d32(c: u32, p: u32) -> u32 {
    c.wrapping_sub(p)
}

/// The columns of `iostat -x` for one device, in display units (the values
/// printed with `%.2f`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ExtStats {
    pub r_s: f64,
    /// rkB/s (or rMB/s, rsec/s by [`Unit`]).
    pub rkb_s: f64,
    pub rrqm_s: f64,
    pub rrqm_pct: f64,
    pub r_await: f64,
    /// rareq-sz in kB (always kB, whatever the unit).
    pub rareq_sz: f64,
    pub w_s: f64,
    pub wkb_s: f64,
    pub wrqm_s: f64,
    pub wrqm_pct: f64,
    pub w_await: f64,
    pub wareq_sz: f64,
    pub d_s: f64,
    pub dkb_s: f64,
    pub drqm_s: f64,
    pub drqm_pct: f64,
    pub d_await: f64,
    pub dareq_sz: f64,
    pub f_s: f64,
    pub f_await: f64,
    pub aqu_sz: f64,
    pub util: f64,
    // `-s` (short) form.
    /// tps: (reads + writes + discards)/s; flushes are not counted.
    pub tps: f64,
    /// kB/s summed over reads, writes and discards.
    pub kb_s: f64,
    pub rqm_s: f64,
    /// await over reads, writes and discards (`compute_ext_disk_stats`).
    pub await_: f64,
    pub areq_sz: f64,
}

/// `%rrqm`-style merge percentage (iostat.c `write_ext_stat`).
fn merge_pct(dmerges: u64, dios: u64) -> f64 {
    let sum = dmerges.wrapping_add(dios);
    if sum != 0 {
        dmerges as f64 / sum as f64 * 100.0
    } else {
        0.0
    }
}

/// `Δticks / Δios`, 0 without IOs.
fn per_io(dnum: f64, dios: u64) -> f64 {
    if dios != 0 {
        dnum / dios as f64
    } else {
        0.0
    }
}

/// Compute the extended columns. Mirrors sysstat 12.6.1 `write_ext_stat`
/// (iostat.c) and `compute_ext_disk_stats` (rd_stats.c), for one device
/// (not a group: `%util` is divided by 1).
pub fn ext_stats(prev: &DiskCounters, curr: &DiskCounters, itv: u64, unit: Unit) -> ExtStats {
    let (i, j) = (curr, prev);
    let fctr = f64::from(unit.factor());
    let sv = |d: u64| s_value(d as f64, itv);

    let d_rd_ios = d64(i.rd_ios, j.rd_ios);
    let d_wr_ios = d64(i.wr_ios, j.wr_ios);
    let d_dc_ios = d64(i.dc_ios, j.dc_ios);
    let d_fl_ios = d64(i.fl_ios, j.fl_ios);

    // compute_ext_disk_stats: flushes are not part of nr_ios.
    let nr_i = i.rd_ios.wrapping_add(i.wr_ios).wrapping_add(i.dc_ios);
    let nr_j = j.rd_ios.wrapping_add(j.wr_ios).wrapping_add(j.dc_ios);
    let d_nr = d64(nr_i, nr_j);
    let util = sv(u64::from(d32(i.tot_ticks, j.tot_ticks)));
    // The three tick deltas are `unsigned int` and summed as such.
    let ticks_sum = d32(i.rd_ticks, j.rd_ticks)
        .wrapping_add(d32(i.wr_ticks, j.wr_ticks))
        .wrapping_add(d32(i.dc_ticks, j.dc_ticks));
    let await_ = per_io(f64::from(ticks_sum), d_nr);
    let sect_sum = d64(i.rd_sectors, j.rd_sectors)
        .wrapping_add(d64(i.wr_sectors, j.wr_sectors))
        .wrapping_add(d64(i.dc_sectors, j.dc_sectors));
    let arqsz = per_io(sect_sum as f64, d_nr);

    let rsectors = sv(d64(i.rd_sectors, j.rd_sectors));
    let wsectors = sv(d64(i.wr_sectors, j.wr_sectors));
    let dsectors = sv(d64(i.dc_sectors, j.dc_sectors));
    let merges_i = i
        .rd_merges
        .wrapping_add(i.wr_merges)
        .wrapping_add(i.dc_merges);
    let merges_j = j
        .rd_merges
        .wrapping_add(j.wr_merges)
        .wrapping_add(j.dc_merges);

    ExtStats {
        r_s: sv(d_rd_ios),
        rkb_s: rsectors / fctr,
        rrqm_s: sv(d64(i.rd_merges, j.rd_merges)),
        rrqm_pct: merge_pct(d64(i.rd_merges, j.rd_merges), d_rd_ios),
        r_await: per_io(f64::from(d32(i.rd_ticks, j.rd_ticks)), d_rd_ios),
        rareq_sz: per_io(d64(i.rd_sectors, j.rd_sectors) as f64, d_rd_ios) / 2.0,
        w_s: sv(d_wr_ios),
        wkb_s: wsectors / fctr,
        wrqm_s: sv(d64(i.wr_merges, j.wr_merges)),
        wrqm_pct: merge_pct(d64(i.wr_merges, j.wr_merges), d_wr_ios),
        w_await: per_io(f64::from(d32(i.wr_ticks, j.wr_ticks)), d_wr_ios),
        wareq_sz: per_io(d64(i.wr_sectors, j.wr_sectors) as f64, d_wr_ios) / 2.0,
        d_s: sv(d_dc_ios),
        dkb_s: dsectors / fctr,
        drqm_s: sv(d64(i.dc_merges, j.dc_merges)),
        drqm_pct: merge_pct(d64(i.dc_merges, j.dc_merges), d_dc_ios),
        d_await: per_io(f64::from(d32(i.dc_ticks, j.dc_ticks)), d_dc_ios),
        dareq_sz: per_io(d64(i.dc_sectors, j.dc_sectors) as f64, d_dc_ios) / 2.0,
        f_s: sv(d_fl_ios),
        f_await: per_io(f64::from(d32(i.fl_ticks, j.fl_ticks)), d_fl_ios),
        aqu_sz: sv(u64::from(d32(i.rq_ticks, j.rq_ticks))) / 1000.0,
        util: util / 10.0 / 1.0,
        tps: sv(d_nr),
        kb_s: (rsectors + wsectors + dsectors) / fctr,
        rqm_s: sv(d64(merges_i, merges_j)),
        await_,
        areq_sz: arqsz / 2.0,
    }
}

/// The columns of the basic (non `-x`) report for one device.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BasicStats {
    pub tps: f64,
    /// kB_read/s (or MB, Blk by [`Unit`]).
    pub read_s: f64,
    pub wrtn_s: f64,
    pub dscd_s: f64,
    /// kB_read over the interval (integer division, as sysstat).
    pub read: u64,
    pub wrtn: u64,
    pub dscd: u64,
}

/// Sector delta with sysstat's fix-up for a 32-bit counter that wrapped
/// (`write_basic_stat`).
fn sect_delta(c: u64, p: u64) -> u64 {
    let d = c.wrapping_sub(p);
    if c < p && p <= 0xffff_ffff {
        d & 0xffff_ffff
    } else {
        d
    }
}

/// Mirrors sysstat 12.6.1 `write_basic_stat` / `write_plain_basic_stat`.
pub fn basic_stats(prev: &DiskCounters, curr: &DiskCounters, itv: u64, unit: Unit) -> BasicStats {
    let (i, j) = (curr, prev);
    let fctr = unit.factor();
    let f = f64::from(fctr);
    let nr_i = i.rd_ios.wrapping_add(i.wr_ios).wrapping_add(i.dc_ios);
    let nr_j = j.rd_ios.wrapping_add(j.wr_ios).wrapping_add(j.dc_ios);
    BasicStats {
        tps: s_value(d64(nr_i, nr_j) as f64, itv),
        read_s: s_value(d64(i.rd_sectors, j.rd_sectors) as f64, itv) / f,
        wrtn_s: s_value(d64(i.wr_sectors, j.wr_sectors) as f64, itv) / f,
        dscd_s: s_value(d64(i.dc_sectors, j.dc_sectors) as f64, itv) / f,
        read: sect_delta(i.rd_sectors, j.rd_sectors) / u64::from(fctr),
        wrtn: sect_delta(i.wr_sectors, j.wr_sectors) / u64::from(fctr),
        dscd: sect_delta(i.dc_sectors, j.dc_sectors) / u64::from(fctr),
    }
}

/// Short (`-s`) basic form: the written column is writes + discards, the
/// total is `(wr_sec + dc_sec) / fctr`.
pub fn basic_short_totals(prev: &DiskCounters, curr: &DiskCounters, unit: Unit) -> (u64, u64) {
    let fctr = u64::from(unit.factor());
    let rd = sect_delta(curr.rd_sectors, prev.rd_sectors);
    let wd = sect_delta(curr.wr_sectors, prev.wr_sectors)
        .wrapping_add(sect_delta(curr.dc_sectors, prev.dc_sectors));
    (rd / fctr, wd / fctr)
}

/// The `avg-cpu` percentages.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CpuPct {
    pub user: f64,
    pub nice: f64,
    pub system: f64,
    pub iowait: f64,
    pub steal: f64,
    pub idle: f64,
}

/// sysstat's `ll_sp_value` (common.c): 0 if the counter went backwards.
fn ll_sp_value(prev: u64, curr: u64, itv: u64) -> f64 {
    if curr < prev {
        0.0
    } else {
        s_value((curr - prev) as f64, itv)
    }
}

/// Mirrors `write_plain_cpu_stat` (iostat.c); system includes hard and
/// soft interrupt time.
pub fn cpu_pct(prev: &CpuTimes, curr: &CpuTimes) -> CpuPct {
    let itv = get_interval(prev.total(), curr.total());
    let sys = |c: &CpuTimes| c.sys.wrapping_add(c.softirq).wrapping_add(c.hardirq);
    CpuPct {
        user: ll_sp_value(prev.user, curr.user, itv),
        nice: ll_sp_value(prev.nice, curr.nice, itv),
        system: ll_sp_value(sys(prev), sys(curr), itv),
        iowait: ll_sp_value(prev.iowait, curr.iowait, itv),
        steal: ll_sp_value(prev.steal, curr.steal, itv),
        idle: ll_sp_value(prev.idle, curr.idle, itv),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    /// Hand computation: over 2.00 s (itv = 200), 100 reads of 8 sectors
    /// with 10 merges taking 300 ms in all; 50 writes of 16 sectors with 50
    /// merges and 1000 ms; 4 discards of 2048 sectors, 2 merges, 40 ms;
    /// 10 flushes, 5 ms; io_ticks 500 ms; time_in_queue 1345 ms.
    #[test]
    fn ext_columns_by_hand() {
        let prev = DiskCounters {
            rd_ios: 1000,
            rd_merges: 7,
            rd_sectors: 5000,
            rd_ticks: 10,
            wr_ios: 1,
            tot_ticks: 100,
            rq_ticks: 5,
            ..Default::default()
        };
        let curr = DiskCounters {
            rd_ios: 1100,
            rd_merges: 17,
            rd_sectors: 5800,
            rd_ticks: 310,
            wr_ios: 51,
            wr_merges: 50,
            wr_sectors: 800,
            wr_ticks: 1000,
            dc_ios: 4,
            dc_merges: 2,
            dc_sectors: 8192,
            dc_ticks: 40,
            fl_ios: 10,
            fl_ticks: 5,
            tot_ticks: 600,
            rq_ticks: 1350,
            ..Default::default()
        };
        let x = ext_stats(&prev, &curr, 200, Unit::Kilobytes);
        assert!(close(x.r_s, 50.0));
        assert!(close(x.rkb_s, 800.0 / 2.0 / 2.0)); // 800 sectors in 2 s = 200 kB/s
        assert!(close(x.rrqm_s, 5.0));
        assert!(close(x.rrqm_pct, 10.0 / 110.0 * 100.0));
        assert!(close(x.r_await, 3.0));
        assert!(close(x.rareq_sz, 4.0)); // 8 sectors = 4 kB
        assert!(close(x.w_s, 25.0));
        assert!(close(x.wkb_s, 200.0));
        assert!(close(x.wrqm_pct, 50.0));
        assert!(close(x.w_await, 20.0));
        assert!(close(x.wareq_sz, 8.0));
        assert!(close(x.d_s, 2.0));
        assert!(close(x.dkb_s, 2048.0));
        assert!(close(x.drqm_pct, 2.0 / 6.0 * 100.0));
        assert!(close(x.d_await, 10.0));
        assert!(close(x.dareq_sz, 1024.0));
        assert!(close(x.f_s, 5.0));
        assert!(close(x.f_await, 0.5));
        assert!(close(x.aqu_sz, 1345.0 / 2000.0));
        assert!(close(x.util, 25.0)); // 500 ms busy of 2000 ms
        assert!(close(x.tps, 77.0)); // (100 + 50 + 4) / 2, flushes excluded
        assert!(close(x.kb_s, (800.0 + 800.0 + 8192.0) / 2.0 / 2.0));
        assert!(close(x.rqm_s, 31.0));
        assert!(close(x.await_, 1340.0 / 154.0));
        assert!(close(x.areq_sz, 9792.0 / 154.0 / 2.0));
        let m = ext_stats(&prev, &curr, 200, Unit::Megabytes);
        assert!(close(m.rkb_s, 200.0 / 1024.0));
        assert!(close(m.rareq_sz, 4.0), "request size is always kB");
        let s = ext_stats(&prev, &curr, 200, Unit::Sectors);
        assert!(close(s.rkb_s, 400.0));
    }

    #[test]
    fn no_ios_means_zero_not_nan() {
        let c = DiskCounters::default();
        let x = ext_stats(&c, &c, 100, Unit::Kilobytes);
        assert_eq!(x, ExtStats::default());
    }

    #[test]
    fn thirty_two_bit_fields_wrap() {
        let prev = DiskCounters {
            rd_ios: 1,
            rd_ticks: u32::MAX - 9,
            tot_ticks: u32::MAX,
            ..Default::default()
        };
        let curr = DiskCounters {
            rd_ios: 3,
            rd_ticks: 10,
            tot_ticks: 999,
            ..Default::default()
        };
        let x = ext_stats(&prev, &curr, 100, Unit::Kilobytes);
        assert!(close(x.r_await, 10.0)); // 20 ms over 2 reads
        assert!(close(x.util, 100.0)); // 1000 ms busy in 1 s
    }

    #[test]
    fn first_report_is_since_boot() {
        // Since boot: prev = 0, itv = uptime (sda of sysstat's root1,
        // uptime 7192.55 s): r/s = 49601 / 7192.55 = 6.896...
        let curr = DiskCounters {
            rd_ios: 49601,
            rd_sectors: 3195498,
            tot_ticks: 32862,
            ..Default::default()
        };
        let x = ext_stats(
            &DiskCounters::default(),
            &curr,
            get_interval(0, 719255),
            Unit::Kilobytes,
        );
        assert_eq!(format!("{:.2}", x.r_s), "6.90");
        assert_eq!(format!("{:.2}", x.rkb_s), "222.14");
        assert_eq!(format!("{:.2}", x.util), "0.46");
    }

    #[test]
    fn basic_columns_and_wrap_fixup() {
        let prev = DiskCounters {
            rd_sectors: 0xffff_fff0,
            ..Default::default()
        };
        let curr = DiskCounters {
            rd_ios: 10,
            wr_ios: 5,
            fl_ios: 100,
            rd_sectors: 0x10,
            wr_sectors: 4096,
            ..Default::default()
        };
        let b = basic_stats(&prev, &curr, 100, Unit::Kilobytes);
        assert!(close(b.tps, 15.0));
        assert_eq!(
            b.read,
            0x20 / 2,
            "32-bit wrap of a sector counter is undone"
        );
        assert_eq!(b.wrtn, 2048);
        assert_eq!(
            basic_short_totals(&prev, &curr, Unit::Sectors),
            (0x20, 4096)
        );
    }

    #[test]
    fn cpu_percentages() {
        let prev = CpuTimes::default();
        let curr = CpuTimes {
            user: 10,
            nice: 20,
            sys: 5,
            hardirq: 3,
            softirq: 2,
            idle: 50,
            iowait: 10,
            ..Default::default()
        };
        let p = cpu_pct(&prev, &curr);
        assert!(close(p.user, 10.0) && close(p.nice, 20.0) && close(p.system, 10.0));
        assert!(close(p.iowait, 10.0) && close(p.idle, 50.0) && close(p.steal, 0.0));
        // A counter going backwards gives 0, not a huge number.
        let back = CpuTimes { idle: 40, ..curr };
        assert_eq!(cpu_pct(&curr, &back).idle, 0.0);
    }
}
