//! `/proc/diskstats`: parsing (as sysstat's `read_diskstats_stat_work` does)
//! and writing (as the kernel's `diskstats_show` does).

use crate::error::ParseError;
use std::fmt::Write as _;

/// The counters of one `/proc/diskstats` line, named as sysstat's
/// `struct io_stats` (iostat.h) names them; the kernel's names
/// (Documentation/admin-guide/iostats.rst) are in the field docs.
///
/// The kernel prints the time fields and the in-flight count as 32-bit
/// `%u`; they wrap at 2^32 and are `u32` here, as in sysstat.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct DiskCounters {
    /// Field 1: reads completed.
    pub rd_ios: u64,
    /// Field 2: reads merged.
    pub rd_merges: u64,
    /// Field 3: 512-byte sectors read.
    pub rd_sectors: u64,
    /// Field 4: ms spent reading (sum over requests).
    pub rd_ticks: u32,
    /// Field 5: writes completed.
    pub wr_ios: u64,
    /// Field 6: writes merged.
    pub wr_merges: u64,
    /// Field 7: sectors written.
    pub wr_sectors: u64,
    /// Field 8: ms spent writing.
    pub wr_ticks: u32,
    /// Field 9: IOs currently in flight (not cumulative).
    pub ios_pgr: u32,
    /// Field 10: ms with at least one IO in flight (`io_ticks`).
    pub tot_ticks: u32,
    /// Field 11: weighted ms doing IO (`time_in_queue`).
    pub rq_ticks: u32,
    /// Field 12: discards completed (Linux 4.18+).
    pub dc_ios: u64,
    /// Field 13: discards merged.
    pub dc_merges: u64,
    /// Field 14: sectors discarded.
    pub dc_sectors: u64,
    /// Field 15: ms spent discarding.
    pub dc_ticks: u32,
    /// Field 16: flush requests completed (Linux 5.5+).
    pub fl_ios: u64,
    /// Field 17: ms spent flushing.
    pub fl_ticks: u32,
}

impl DiskCounters {
    /// From the 17 counters in `/proc/diskstats` order (stat fields 1–17),
    /// e.g. a simulated device's `diskstats_fields()`. The 32-bit fields
    /// keep their low 32 bits, as the kernel's `%u` prints them.
    pub fn from_fields(f: [u64; 17]) -> Self {
        let t = |x: u64| x as u32;
        DiskCounters {
            rd_ios: f[0],
            rd_merges: f[1],
            rd_sectors: f[2],
            rd_ticks: t(f[3]),
            wr_ios: f[4],
            wr_merges: f[5],
            wr_sectors: f[6],
            wr_ticks: t(f[7]),
            ios_pgr: t(f[8]),
            tot_ticks: t(f[9]),
            rq_ticks: t(f[10]),
            dc_ios: f[11],
            dc_merges: f[12],
            dc_sectors: f[13],
            dc_ticks: t(f[14]),
            fl_ios: f[15],
            fl_ticks: t(f[16]),
        }
    }

    /// The 17 counters in `/proc/diskstats` order.
    pub fn to_fields(&self) -> [u64; 17] {
        let c = self;
        [
            c.rd_ios,
            c.rd_merges,
            c.rd_sectors,
            c.rd_ticks.into(),
            c.wr_ios,
            c.wr_merges,
            c.wr_sectors,
            c.wr_ticks.into(),
            c.ios_pgr.into(),
            c.tot_ticks.into(),
            c.rq_ticks.into(),
            c.dc_ios,
            c.dc_merges,
            c.dc_sectors,
            c.dc_ticks.into(),
            c.fl_ios,
            c.fl_ticks.into(),
        ]
    }
}

/// One parsed `/proc/diskstats` line.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct DiskStatsLine {
    pub major: u32,
    pub minor: u32,
    /// Device name as the kernel prints it (`sda`, `nvme0n1p2`, `cciss/c0d0`).
    pub name: String,
    pub counters: DiskCounters,
    /// How many counters the line had after `major minor name`: 4 (a
    /// partition on Linux < 2.6.25: reads, read sectors, writes, write
    /// sectors), or 11 and more. sysstat reads the discard fields only from
    /// lines with at least 15 counters and the flush fields from lines with
    /// at least 17; it ignores counters past the 17th, and so does this
    /// parser.
    pub nr_counters: usize,
}

impl DiskStatsLine {
    /// True for the 4-counter partition lines of old kernels; sysstat skips
    /// them in extended (`-x`) reports read from `/proc/diskstats`.
    pub fn is_legacy_partition(&self) -> bool {
        self.nr_counters == 4
    }
}

/// Parse one `/proc/diskstats` line. `line_no` (1-based) goes into errors.
/// Returns `Ok(None)` for a blank line.
///
/// Mirrors the `sscanf` in sysstat's `read_diskstats_stat_work` (iostat.c),
/// except that where sysstat silently ignores a line it cannot use, this
/// reports an error: fewer than 3 fields, a count of counters other than 4
/// or ≥ 11, or a field that is not a decimal number. Like `sscanf("%u")`,
/// the 32-bit fields keep the low 32 bits of larger numbers.
pub fn parse_diskstats_line(
    line: &str,
    line_no: usize,
) -> Result<Option<DiskStatsLine>, ParseError> {
    let tokens: Vec<&str> = line.split_ascii_whitespace().collect();
    if tokens.is_empty() {
        return Ok(None);
    }
    let err = |msg: String| ParseError::new(line_no, msg);
    if tokens.len() < 3 {
        return Err(err(format!(
            "expected `major minor name` and counters, found {:?}",
            line.trim()
        )));
    }
    let major = parse_u32_strict(tokens[0]).map_err(|m| err(format!("major number: {m}")))?;
    let minor = parse_u32_strict(tokens[1]).map_err(|m| err(format!("minor number: {m}")))?;
    let name = tokens[2].to_string();
    let nr = tokens.len() - 3;
    if nr != 4 && nr < 11 {
        return Err(err(format!(
            "device {name}: expected 4, 11, 15 or 17 counters after `major minor name`, found {nr}"
        )));
    }
    let mut v = [0u64; 17];
    for (i, tok) in tokens[3..].iter().take(17).enumerate() {
        v[i] = parse_u64(tok).map_err(|m| err(format!("device {name}: counter {}: {m}", i + 1)))?;
    }
    let c = if nr == 4 {
        // "Partition without extended statistics" (iostat.c).
        DiskCounters {
            rd_ios: v[0],
            rd_sectors: v[1],
            wr_ios: v[2],
            wr_sectors: v[3],
            ..Default::default()
        }
    } else {
        // Groups the line does not have stay 0 (sysstat: discards from 15
        // counters on, flushes from 17). `from_fields` keeps the low 32 bits
        // of the time fields, as sysstat's `%u` / `(unsigned int)` does.
        let keep = if nr >= 17 {
            17
        } else if nr >= 15 {
            15
        } else {
            11
        };
        v[keep..].fill(0);
        DiskCounters::from_fields(v)
    };
    Ok(Some(DiskStatsLine {
        major,
        minor,
        name,
        counters: c,
        nr_counters: nr,
    }))
}

/// Parse a whole `/proc/diskstats` text. Blank lines are skipped.
pub fn parse_diskstats(text: &str) -> Result<Vec<DiskStatsLine>, ParseError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if let Some(l) = parse_diskstats_line(line, i + 1)? {
            out.push(l);
        }
    }
    Ok(out)
}

/// Render one `/proc/diskstats` line with all 17 counters, in the kernel's
/// format (`diskstats_show` in block/genhd.c:
/// `"%4d %7d %pg %lu %lu %lu %u %lu %lu %lu %u %u %u %u %lu %lu %lu %u %lu %u\n"`),
/// newline included.
pub fn format_diskstats_line(major: u32, minor: u32, name: &str, c: &DiskCounters) -> String {
    let mut s = String::with_capacity(128);
    let _ = writeln!(
        s,
        "{major:4} {minor:7} {name} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {}",
        c.rd_ios,
        c.rd_merges,
        c.rd_sectors,
        c.rd_ticks,
        c.wr_ios,
        c.wr_merges,
        c.wr_sectors,
        c.wr_ticks,
        c.ios_pgr,
        c.tot_ticks,
        c.rq_ticks,
        c.dc_ios,
        c.dc_merges,
        c.dc_sectors,
        c.dc_ticks,
        c.fl_ios,
        c.fl_ticks
    );
    s
}

/// Render a whole `/proc/diskstats` file (17 counters per line).
pub fn format_diskstats(lines: &[DiskStatsLine]) -> String {
    lines
        .iter()
        .map(|l| format_diskstats_line(l.major, l.minor, &l.name, &l.counters))
        .collect()
}

pub(crate) fn parse_u64(tok: &str) -> Result<u64, String> {
    if tok.is_empty() || !tok.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{tok:?} is not a decimal number"));
    }
    tok.parse::<u64>()
        .map_err(|_| format!("{tok} does not fit in 64 bits"))
}

fn parse_u32_strict(tok: &str) -> Result<u32, String> {
    let v = parse_u64(tok)?;
    u32::try_from(v).map_err(|_| format!("{tok} does not fit in 32 bits"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kernel_line_with_17_counters() {
        let l = parse_diskstats_line(
            " 259       0 nvme0n1 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17",
            1,
        )
        .unwrap()
        .unwrap();
        assert_eq!((l.major, l.minor, l.name.as_str()), (259, 0, "nvme0n1"));
        let c = l.counters;
        assert_eq!(
            (c.rd_ios, c.rd_merges, c.rd_sectors, c.rd_ticks),
            (1, 2, 3, 4)
        );
        assert_eq!(
            (c.wr_ios, c.wr_merges, c.wr_sectors, c.wr_ticks),
            (5, 6, 7, 8)
        );
        assert_eq!((c.ios_pgr, c.tot_ticks, c.rq_ticks), (9, 10, 11));
        assert_eq!(
            (c.dc_ios, c.dc_merges, c.dc_sectors, c.dc_ticks),
            (12, 13, 14, 15)
        );
        assert_eq!((c.fl_ios, c.fl_ticks), (16, 17));
        assert_eq!(l.nr_counters, 17);
    }

    #[test]
    fn short_forms_leave_later_groups_zero() {
        // 14 counters (seen in sysstat's fixture): discard fields ignored.
        let l = parse_diskstats_line(
            "65 32 sds 386 416 8554 100 727 820 8746 3902 0 762 7902 7 7 7",
            1,
        )
        .unwrap()
        .unwrap();
        assert_eq!(l.nr_counters, 14);
        assert_eq!(l.counters.rq_ticks, 7902);
        assert_eq!(
            (
                l.counters.dc_ios,
                l.counters.dc_merges,
                l.counters.dc_sectors
            ),
            (0, 0, 0)
        );
        // 15 counters: discards, no flushes.
        let l = parse_diskstats_line("8 0 sda 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15", 1)
            .unwrap()
            .unwrap();
        assert_eq!(
            (l.counters.dc_ios, l.counters.dc_ticks, l.counters.fl_ios),
            (12, 15, 0)
        );
        // Old partition format.
        let l = parse_diskstats_line("3 1 hda1 10 20 30 40", 1)
            .unwrap()
            .unwrap();
        assert!(l.is_legacy_partition());
        let c = l.counters;
        assert_eq!(
            (c.rd_ios, c.rd_sectors, c.wr_ios, c.wr_sectors, c.rd_merges),
            (10, 20, 30, 40, 0)
        );
    }

    #[test]
    fn time_fields_wrap_like_sscanf_u() {
        let l = parse_diskstats_line("8 0 sda 1 0 0 4294967297 0 0 0 0 0 0 0", 1)
            .unwrap()
            .unwrap();
        assert_eq!(l.counters.rd_ticks, 1);
    }

    #[test]
    fn malformed_lines_name_the_line() {
        let e =
            parse_diskstats("8 0 sda 1 2 3 4 5 6 7 8 9 10 11\n8 1 sda1 1 2 x 4 5 6 7 8 9 10 11\n")
                .unwrap_err();
        assert_eq!(e.line, 2);
        assert!(
            e.msg.contains("sda1") && e.msg.contains("counter 3"),
            "{}",
            e.msg
        );
        let e = parse_diskstats("\n8 0 sda 1 2 3 4 5\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.msg.contains("found 5"), "{}", e.msg);
        assert!(parse_diskstats("8 0").is_err());
        assert!(parse_diskstats("-8 0 sda 1 2 3 4").is_err());
        assert!(parse_diskstats("8 0 sda 1 2 3 99999999999999999999").is_err());
    }

    #[test]
    fn fields_order_round_trips() {
        let f: [u64; 17] = std::array::from_fn(|i| i as u64 + 1);
        let c = DiskCounters::from_fields(f);
        assert_eq!(
            (c.rd_ticks, c.ios_pgr, c.dc_ios, c.fl_ticks),
            (4, 9, 12, 17)
        );
        assert_eq!(c.to_fields(), f);
        let big = DiskCounters::from_fields([u64::from(u32::MAX) + 2; 17]);
        assert_eq!((big.rd_ios, big.rd_ticks), (u64::from(u32::MAX) + 2, 1));
    }

    #[test]
    fn format_matches_kernel_layout() {
        let c = DiskCounters {
            rd_ios: 49601,
            rd_merges: 2822,
            rd_sectors: 3195498,
            rd_ticks: 623970,
            wr_ios: 12180,
            wr_merges: 9784,
            wr_sectors: 821088,
            wr_ticks: 117109,
            tot_ticks: 32862,
            rq_ticks: 714408,
            ..Default::default()
        };
        assert_eq!(
            format_diskstats_line(8, 0, "sda", &c),
            "   8       0 sda 49601 2822 3195498 623970 12180 9784 821088 117109 0 32862 714408 0 0 0 0 0 0\n"
        );
        assert_eq!(
            format_diskstats_line(259, 65536, "nvme0n1", &DiskCounters::default()),
            " 259   65536 nvme0n1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
        );
    }
}
