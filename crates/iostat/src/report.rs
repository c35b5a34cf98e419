//! The report loop: sysstat 12.6.1 `rw_io_stat_loop` and `write_stats`
//! (iostat.c), fed with [`Sample`]s instead of reading `/proc` itself.

use crate::devlist::DevList;
use crate::diskstats::DiskCounters;
use crate::error::Error;
use crate::format;
use crate::metrics::{basic_short_totals, basic_stats, cpu_pct, ext_stats, get_interval};
use crate::options::Options;
use crate::sample::{CpuTimes, Sample};
use crate::time::CivilTime;
use std::io::Write;

/// What the banner line shows (`print_gal_header`, common.c):
/// `Linux 6.1.0 (host) \t06/01/20 \t_x86_64_\t(8 CPU)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Banner {
    pub sysname: String,
    pub release: String,
    pub nodename: String,
    pub machine: String,
    pub nr_cpus: u32,
    /// Unix seconds; printed as a UTC date.
    pub time: i64,
}

/// How a [`run`] ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunSummary {
    /// Samples taken from the iterator.
    pub samples_used: usize,
    /// Reports printed (the skipped `-y` one not counted).
    pub reports: u64,
    /// The samples ended before `count` reports were printed (sysstat's
    /// SIGINT path: the output is closed properly).
    pub ran_out: bool,
}

/// The loop's state between samples: sysstat's globals.
struct State<'a> {
    o: &'a Options,
    list: DevList,
    uptime_cs: [u64; 2],
    cpu: [CpuTimes; 2],
    has_cpu: bool,
}

/// Print the banner and the reports for `samples`, the way
/// `iostat [options] [interval [count]]` prints them, to `out`.
///
/// Successive samples are successive reads of `/proc`; the first report is
/// "since boot" (previous counters and uptime are zero). The number of
/// reports is `opts.count` (with `-y` one more sample is read); it stops
/// early, closing the output like sysstat on SIGINT, when the samples end.
/// Each report is written and flushed as soon as its sample arrives, so a
/// live sampler may sleep inside the iterator.
pub fn run<W: Write>(
    opts: &Options,
    banner: &Banner,
    samples: &mut dyn Iterator<Item = Result<Sample, Error>>,
    out: &mut W,
) -> Result<RunSummary, Error> {
    let mut summary = RunSummary::default();
    let mut st = State::new(opts);
    let mut buf = String::new();
    write_banner(&mut buf, opts, banner);
    out.write_all(buf.as_bytes())?;
    out.flush()?;

    let mut sample = match samples.next() {
        Some(s) => s?,
        None => return Err(Error::Usage("no sample to report on".into())),
    };
    summary.samples_used = 1;
    let mut curr = 1;
    let mut skip = opts.omit_since_boot && opts.interval > 0;
    // count < 0: forever (until the samples end).
    let mut count: i64 = opts
        .count
        .map_or(-1, |c| i64::try_from(c).unwrap_or(i64::MAX));
    loop {
        buf.clear();
        st.read(&sample, curr);
        st.write_stats(&mut buf, curr, sample.time, skip);
        if !skip {
            summary.reports += 1;
            if count > 0 {
                count -= 1;
            }
        }
        let mut pending_err = None;
        if count != 0 {
            curr ^= 1;
            // Written before waiting for the next sample (sysstat's
            // unbuffered stdout).
            out.write_all(buf.as_bytes())?;
            out.flush()?;
            buf.clear();
            match next_sample(samples, &mut summary) {
                Ok(None) => count = 0,
                Err(e) => {
                    count = 0;
                    pending_err = Some(e);
                }
                Ok(Some(s)) => {
                    sample = s;
                    if opts.json && !skip {
                        buf.push(',');
                    }
                }
            }
            skip = false;
        }
        buf.push('\n');
        if let Some(e) = pending_err {
            out.write_all(buf.as_bytes())?;
            out.flush()?;
            return Err(e);
        }
        if count == 0 {
            break;
        }
        out.write_all(buf.as_bytes())?;
    }
    if opts.json {
        buf.push_str("\t\t\t]\n\t\t}\n\t]\n}}\n");
    }
    out.write_all(buf.as_bytes())?;
    out.flush()?;
    Ok(summary)
}

/// The sample after a report, counted in `summary`; `None`, with
/// `summary.ran_out` set, when the samples ended.
fn next_sample(
    samples: &mut dyn Iterator<Item = Result<Sample, Error>>,
    summary: &mut RunSummary,
) -> Result<Option<Sample>, Error> {
    match samples.next() {
        None => {
            summary.ran_out = true;
            Ok(None)
        }
        Some(Err(e)) => Err(e),
        Some(Ok(s)) => {
            summary.samples_used += 1;
            Ok(Some(s))
        }
    }
}

/// [`run`] into a string, for tests and the simulator.
pub fn render(opts: &Options, banner: &Banner, samples: &[Sample]) -> Result<String, Error> {
    let mut out = Vec::new();
    let mut it = samples.iter().cloned().map(Ok);
    run(opts, banner, &mut it, &mut out)?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// The banner (`print_gal_header`) and the blank line after it (plain), or
/// the JSON preamble.
fn write_banner(out: &mut String, o: &Options, b: &Banner) {
    let date = CivilTime::from_unix(b.time).date(o.iso);
    if o.json {
        out.push_str("{\"sysstat\": {\n\t\"hosts\": [\n\t\t{\n");
        for line in [
            format!("\"nodename\": \"{}\",", b.nodename),
            format!("\"sysname\": \"{}\",", b.sysname),
            format!("\"release\": \"{}\",", b.release),
            format!("\"machine\": \"{}\",", b.machine),
            format!("\"number-of-cpus\": {},", b.nr_cpus),
            format!("\"date\": \"{date}\","),
            "\"statistics\": [".to_string(),
        ] {
            out.push_str("\t\t\t");
            out.push_str(&line);
            out.push('\n');
        }
    } else {
        out.push_str(&format!(
            "{} {} ({}) \t{date} \t_{}_\t({} CPU)\n\n",
            b.sysname, b.release, b.nodename, b.machine, b.nr_cpus
        ));
    }
}

impl<'a> State<'a> {
    /// The state before the first sample: every counter zero.
    fn new(o: &'a Options) -> State<'a> {
        State {
            o,
            list: DevList::from_args(&o.devices),
            uptime_cs: [0; 2],
            cpu: [CpuTimes::default(); 2],
            has_cpu: false,
        }
    }

    /// The read phase of one loop iteration.
    fn read(&mut self, s: &Sample, curr: usize) {
        self.list.set_nonexistent();
        self.uptime_cs[curr] = s.uptime_cs;
        self.has_cpu = s.cpu.is_some();
        self.cpu[curr] = s.cpu.unwrap_or_default();
        if self.o.everything {
            self.list.read_everything(s, curr, self.o.extended);
        } else {
            self.list.read_listed(s, curr, self.o.all_devices);
        }
    }

    /// `write_stats`. The `avg-cpu` block needs `/proc/stat` in the sample
    /// and is left out without it.
    fn write_stats(&self, out: &mut String, curr: usize, time: i64, skip: bool) {
        let o = self.o;
        let prev = curr ^ 1;
        if o.json && !skip {
            format::tabs(out, 4);
            out.push_str("{\n");
        }
        if o.timestamp && !skip {
            write_timestamp(out, o, time);
        }
        if o.cpu && !skip && self.has_cpu {
            self.write_cpu(out, curr);
        }
        let itv = get_interval(self.uptime_cs[prev], self.uptime_cs[curr]);
        if o.disk {
            self.write_disks(out, curr, itv, skip);
        }
        if !skip {
            if o.json {
                format::tabs(out, 4);
                out.push('}');
            } else {
                out.push('\n');
            }
        }
    }

    /// `write_cpu_stat`: the `avg-cpu` block over the interval ending at
    /// sample `curr`.
    fn write_cpu(&self, out: &mut String, curr: usize) {
        let o = self.o;
        let pct = cpu_pct(&self.cpu[curr ^ 1], &self.cpu[curr]);
        if o.json {
            format::json_cpu(out, &pct);
            if o.disk {
                out.push(',');
            }
            out.push('\n');
        } else {
            format::plain_cpu(out, o, &pct);
        }
    }

    /// The device block: its header, then one line per device shown, over
    /// the interval `itv` ending at sample `curr` (with `skip`, only the
    /// removed-and-inserted check runs, as in sysstat).
    fn write_disks(&self, out: &mut String, curr: usize, itv: u64, skip: bool) {
        let o = self.o;
        if !skip {
            if o.json {
                format::tabs(out, 5);
                out.push_str("\"disk\": [\n");
            } else {
                format::plain_header(out, o);
            }
        }
        let zero = DiskCounters::default();
        let mut next = false;
        for d in self.list.devs.iter().filter(|d| d.exist) {
            let ioi = &d.stats[curr];
            let Some(ioj) = previous_counters(o, ioi, &d.stats[curr ^ 1], &zero) else {
                continue;
            };
            if skip {
                continue;
            }
            if o.json && next {
                out.push_str(",\n");
            }
            next = true;
            write_device(out, o, &d.display_name(), ioj, ioi, itv);
        }
        if o.json && !skip {
            out.push('\n');
            format::tabs(out, 5);
            out.push_str("]\n");
        }
    }
}

/// The timestamp line of `-t` (a JSON field with `-o JSON`).
fn write_timestamp(out: &mut String, o: &Options, time: i64) {
    let ts = CivilTime::from_unix(time).timestamp(o.iso);
    if o.json {
        format::tabs(out, 5);
        out.push_str(&format!("\"timestamp\": \"{ts}\",\n"));
    } else {
        out.push_str(&ts);
        out.push('\n');
    }
}

/// The counters a device's current ones `ioi` are diffed against: its
/// previous ones `ioj`, or `zero` when it was removed and inserted again;
/// `None` when it is left out (no IO at all, or none in the interval with
/// `-z`).
fn previous_counters<'c>(
    o: &Options,
    ioi: &DiskCounters,
    ioj: &'c DiskCounters,
    zero: &'c DiskCounters,
) -> Option<&'c DiskCounters> {
    // Flushes count as IO here.
    if !o.unfiltered && ioi.rd_ios == 0 && ioi.wr_ios == 0 && ioi.dc_ios == 0 && ioi.fl_ios == 0 {
        return None;
    }
    if o.zero_omit
        && ioi.rd_ios == ioj.rd_ios
        && ioi.wr_ios == ioj.wr_ios
        && ioi.dc_ios == ioj.dc_ios
        && ioi.fl_ios == ioj.fl_ios
    {
        return None;
    }
    // "Try to detect if device has been removed then inserted again".
    let sum = |c: &DiskCounters| {
        c.rd_ios
            .wrapping_add(c.wr_ios)
            .wrapping_add(c.dc_ios)
            .wrapping_add(c.fl_ios)
    };
    if sum(ioi) < sum(ioj)
        && (ioj.rd_sectors == 0 || ioi.rd_sectors < ioj.rd_sectors)
        && (ioj.wr_sectors == 0 || ioi.wr_sectors < ioj.wr_sectors)
        && (ioj.dc_sectors == 0 || ioi.dc_sectors < ioj.dc_sectors)
    {
        return Some(zero);
    }
    Some(ioj)
}

/// One device's line (`write_basic_stat` / `write_ext_stat`), from `ioj`
/// to `ioi` over `itv`.
fn write_device(
    out: &mut String,
    o: &Options,
    name: &str,
    ioj: &DiskCounters,
    ioi: &DiskCounters,
    itv: u64,
) {
    if o.extended {
        let x = ext_stats(ioj, ioi, itv, o.unit);
        if o.json {
            format::json_ext(out, o, name, &x);
        } else {
            format::plain_ext(out, o, name, &x);
        }
    } else {
        let b = basic_stats(ioj, ioi, itv, o.unit);
        if o.json {
            format::json_basic(out, o, name, &b);
        } else {
            format::plain_basic(out, o, name, &b, basic_short_totals(ioj, ioi, o.unit));
        }
    }
}
