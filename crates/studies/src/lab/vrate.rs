//! iocost's base vrate, second by second, recovered the same way from a
//! real kernel's `io.stat` samples and from a simulated run's.
//!
//! The kernel charges a group's `cost.usage` as the absolute cost of its
//! IO divided by the base vrate of the moment: `iocg_flush_stat_leaf()`
//! adds `vusage_delta / vtime_base_rate` to `usage_us`. The absolute cost
//! of an IO is the linear model's (`calc_vtime_cost_builtin()` with the
//! coefficients of `calc_lcoefs()`): per bio after splitting at
//! `max_sectors_kb`, a per-IO cost (the random or sequential one) plus one
//! per 4 KiB page (`bio_sectors >> 3`, at least 1). So over one second,
//! 100 × (model cost of the bytes the groups did) / (their `cost.usage`
//! growth) is the base vrate in percent, weighted by the cost charged in
//! that second. The same arithmetic on blkqos's own per-second counters
//! gives the figure to compare, so what the recovery cannot see (IO
//! counted at submission but charged after a wait) is the same on both
//! sides.
//!
//! Only jobs whose every fio process does random IO of one block size are
//! measured: a sequential stream's cost depends on which bios follow each
//! other, which per-second counters do not show.

use super::metrics::{Kind, RunMetrics};
use serde_json::Value;

/// The linear cost model of one direction, in µs at 100% vrate.
#[derive(Clone, Copy, Debug, PartialEq)]
struct DirCost {
    randio_us: f64,
    page_us: f64,
}

/// `calc_lcoefs()`: the page cost from the bandwidth, the IO cost from the
/// IOPS less one page's cost (0 when the page cost is larger).
fn dir_cost(bps: f64, randiops: f64) -> DirCost {
    let page_us = if bps > 0.0 {
        1e6 / (bps / 4096.0).ceil()
    } else {
        0.0
    };
    let io_us = if randiops > 0.0 { 1e6 / randiops } else { 0.0 };
    DirCost {
        randio_us: if io_us > page_us {
            io_us - page_us
        } else {
            0.0
        },
        page_us,
    }
}

/// What one job's vrate recovery needs: the device's cost model and each
/// group's block size.
#[derive(Clone, Debug, PartialEq)]
pub struct Probe {
    read: DirCost,
    write: DirCost,
    /// (cgroup, bytes per IO).
    groups: Vec<(String, u64)>,
    /// The shortest fio `--runtime` in seconds: seconds 2 to this − 1 of
    /// contention are compared (the first and last are partial, at a
    /// phase the recording's once-a-second sampling does not fix).
    runtime_s: u32,
}

/// `key=value` of a knob line.
fn knob(line: &str, key: &str) -> Option<f64> {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
        .and_then(|v| v.parse().ok())
}

/// `--key=value` of fio arguments.
fn fio_arg<'a>(args: &'a str, key: &str) -> Option<&'a str> {
    args.split_whitespace()
        .find_map(|w| w.strip_prefix("--")?.strip_prefix(key)?.strip_prefix('='))
}

/// A fio size (`4k`, `1m`, `65536`) in bytes.
fn fio_size(v: &str) -> Option<u64> {
    let v = v.to_ascii_lowercase();
    let (num, mult) = match v.chars().last()? {
        'k' => (&v[..v.len() - 1], 1u64 << 10),
        'm' => (&v[..v.len() - 1], 1 << 20),
        'g' => (&v[..v.len() - 1], 1 << 30),
        _ => (&v[..], 1),
    };
    num.parse::<u64>().ok().map(|n| n * mult)
}

impl Probe {
    /// From a lab scenario: its `io.cost.model` write (linear), `io.cost.qos`
    /// enabled, and every `[[fio]]` a random workload with one `--bs`.
    /// None for any other job.
    pub fn of_scenario(v: &toml::Value) -> Option<Probe> {
        let writes = v.get("write")?.as_array()?;
        let value_of = |file: &str| {
            writes.iter().find_map(|w| {
                (w.get("file")?.as_str()? == file)
                    .then(|| w.get("value")?.as_str())
                    .flatten()
            })
        };
        let model = value_of("/sys/fs/cgroup/io.cost.model")?;
        let qos = value_of("/sys/fs/cgroup/io.cost.qos")?;
        if knob(qos, "enable") != Some(1.0) || !model.contains("model=linear") {
            return None;
        }
        let read = dir_cost(knob(model, "rbps")?, knob(model, "rrandiops")?);
        let write = dir_cost(knob(model, "wbps")?, knob(model, "wrandiops")?);
        let mut groups: Vec<(String, u64)> = Vec::new();
        let mut runtime_s = u32::MAX;
        for f in v.get("fio")?.as_array()? {
            let args = f.get("args")?.as_str()?;
            runtime_s = runtime_s.min(fio_arg(args, "runtime")?.parse().ok()?);
            let cg = f.get("cgroup").and_then(|c| c.as_str()).unwrap_or("/");
            if !fio_arg(args, "rw")?.starts_with("rand") {
                return None;
            }
            let bs = fio_size(fio_arg(args, "bs")?)?;
            match groups.iter().find(|(g, _)| g == cg) {
                Some(&(_, b)) if b != bs => return None,
                Some(_) => {}
                None => groups.push((cg.to_string(), bs)),
            }
        }
        (groups.len() >= 2).then_some(Probe {
            read,
            write,
            groups,
            runtime_s,
        })
    }

    /// Absolute cost in µs of `bytes` done as IOs of `bs` bytes, each split
    /// into bios of at most `max_sectors` (`bio_split_rw`).
    fn cost_us(d: DirCost, bytes: f64, bs: u64, max_sectors: u64) -> f64 {
        let sectors = bs.div_ceil(512).max(1);
        let full = sectors / max_sectors;
        let rest = sectors % max_sectors;
        let bios = full + u64::from(rest > 0);
        let pages =
            full * (max_sectors >> 3).max(1) + if rest > 0 { (rest >> 3).max(1) } else { 0 };
        let per_io = bios as f64 * d.randio_us + pages as f64 * d.page_us;
        bytes / bs as f64 * per_io
    }

    /// Base vrate in percent for each second all the groups did IO, from
    /// per-second deltas per group, in `groups` order: (read bytes, write
    /// bytes, `cost.usage` µs).
    fn series(&self, seconds: &[Vec<(f64, f64, f64)>], max_sectors: u64) -> Vec<f64> {
        let mut out = Vec::new();
        for s in seconds {
            if s.len() != self.groups.len() || s.iter().any(|&(r, w, _)| r + w <= 0.0) {
                continue;
            }
            let usage: f64 = s.iter().map(|t| t.2).sum();
            if usage <= 0.0 {
                continue;
            }
            let cost: f64 = s
                .iter()
                .zip(&self.groups)
                .map(|(&(r, w, _), (_, bs))| {
                    Self::cost_us(self.read, r, *bs, max_sectors)
                        + Self::cost_us(self.write, w, *bs, max_sectors)
                })
                .sum();
            out.push(100.0 * cost / usage);
        }
        out
    }

    /// Seconds 2 to `runtime_s − 1` of contention as `vrate.sNN`.
    fn insert(&self, series: Vec<f64>, out: &mut RunMetrics) {
        for (i, v) in series.into_iter().enumerate() {
            let k = i as u32 + 1;
            if k >= 2 && k < self.runtime_s {
                out.insert(format!("vrate.s{k:02}"), (Kind::Vrate, v));
            }
        }
    }

    /// From the lab's `samples.jsonl` (each group's io.stat line once a
    /// second, cumulative).
    pub fn measure_samples(&self, text: &str, max_sectors: u64, out: &mut RunMetrics) {
        let rows: Vec<Vec<(f64, f64, f64)>> = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .map(|s| {
                self.groups
                    .iter()
                    .map(|(g, _)| {
                        let line = s["io_stat"][g.as_str()].as_str().unwrap_or("");
                        (
                            knob(line, "rbytes").unwrap_or(0.0),
                            knob(line, "wbytes").unwrap_or(0.0),
                            knob(line, "cost.usage").unwrap_or(0.0),
                        )
                    })
                    .collect()
            })
            .collect();
        let deltas: Vec<Vec<(f64, f64, f64)>> = rows
            .windows(2)
            .map(|w| {
                w[0].iter()
                    .zip(&w[1])
                    .map(|(a, b)| (b.0 - a.0, b.1 - a.1, b.2 - a.2))
                    .collect()
            })
            .collect();
        self.insert(self.series(&deltas, max_sectors), out);
    }

    /// From blkqos's live JSON lines (per-interval bytes, cumulative
    /// `usage_us`), one line a second.
    pub fn measure_live(&self, lines: &[Value], max_sectors: u64, out: &mut RunMetrics) {
        let mut last_usage = vec![0.0; self.groups.len()];
        let mut deltas = Vec::new();
        for l in lines {
            let rows = l["cgroups"].as_array().map(Vec::as_slice).unwrap_or(&[]);
            let mut sec = Vec::new();
            for (i, (g, _)) in self.groups.iter().enumerate() {
                let Some(r) = rows.iter().find(|r| r["cgroup"].as_str() == Some(g)) else {
                    sec.push((0.0, 0.0, 0.0));
                    continue;
                };
                let usage = r["iocost"]["usage_us"].as_f64().unwrap_or(last_usage[i]);
                let du = usage - last_usage[i];
                last_usage[i] = usage;
                sec.push((
                    r["bytes"][0].as_f64().unwrap_or(0.0),
                    r["bytes"][1].as_f64().unwrap_or(0.0),
                    du,
                ));
            }
            deltas.push(sec);
        }
        self.insert(self.series(&deltas, max_sectors), out);
    }
}

/// `max_sectors_kb` in 512-byte sectors from a lab run's `meta.json`.
pub fn max_sectors_of_meta(meta: &Value) -> Option<u64> {
    let kb: u64 = meta["queue"]["max_sectors_kb"].as_str()?.parse().ok()?;
    Some(kb * 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c06() -> toml::Value {
        toml::from_str(
            r#"
[[write]]
file = "/sys/fs/cgroup/io.cost.model"
value = "254:0 ctrl=user model=linear rbps=173471131 rseqiops=3566 rrandiops=3566 wbps=173333269 wseqiops=3566 wrandiops=3566"
[[write]]
file = "/sys/fs/cgroup/io.cost.qos"
value = "254:0 enable=1 ctrl=user rpct=90.00 rlat=3500 wpct=90 wlat=3500 min=80 max=10000"
[[fio]]
cgroup = "/cgA"
args = "--name=cgA --rw=randrw --bs=1m --iodepth=128 --runtime=10"
[[fio]]
cgroup = "/cgB"
args = "--name=cgB --rw=randrw --bs=4k --iodepth=1 --runtime=4"
"#,
        )
        .unwrap()
    }

    #[test]
    fn a_split_1m_io_costs_what_the_kernel_charges() {
        let p = Probe::of_scenario(&c06()).unwrap();
        // 1 MiB at max_sectors_kb=127: 8 bios of 254 sectors (31 pages)
        // and one of 16 (2 pages): 9 × 256.8 µs + 250 × 23.6 µs
        let c = Probe::cost_us(p.read, 1048576.0, 1 << 20, 254);
        let want = 9.0 * (1e6 / 3566.0 - 1e6 / 42352.0) + 250.0 * (1e6 / 42352.0);
        assert!((c - want).abs() < 1e-6, "{c} vs {want}");
        assert!((c - 8214.0).abs() < 2.0, "{c}");
        // a 4 KiB IO: one bio, one page: the model's 1/riops
        let c4 = Probe::cost_us(p.read, 4096.0, 4096, 254);
        assert!((c4 - 1e6 / 3566.0).abs() < 1e-6);
    }

    #[test]
    fn recovers_the_vrate_of_a_known_second() {
        let p = Probe::of_scenario(&c06()).unwrap();
        // cgA: 20 × 1 MiB reads, cgB: 100 × 4 KiB writes, charged at 125%
        let cost = 20.0 * Probe::cost_us(p.read, 1048576.0, 1 << 20, 254)
            + 100.0 * Probe::cost_us(p.write, 4096.0, 4096, 254);
        let usage = cost * 100.0 / 125.0;
        let sec = vec![
            (20.0 * 1048576.0, 0.0, usage * 0.9),
            (0.0, 409600.0, usage * 0.1),
        ];
        // an idle group's second is not one of contention
        let idle = vec![(1.0, 0.0, 1.0), (0.0, 0.0, 0.0)];
        let s = p.series(&[sec.clone(), idle, sec.clone(), sec], 254);
        assert_eq!(s.len(), 3);
        assert!(s.iter().all(|v| (v - 125.0).abs() < 1e-9), "{s:?}");
    }

    #[test]
    fn only_random_single_size_iocost_jobs() {
        let mut v = c06();
        assert!(Probe::of_scenario(&v).is_some());
        let text = toml::to_string(&v)
            .unwrap()
            .replace("--rw=randrw --bs=1m", "--rw=write --bs=1m");
        assert!(Probe::of_scenario(&toml::from_str(&text).unwrap()).is_none());
        let qos = v["write"][1]["value"]
            .as_str()
            .unwrap()
            .replace("enable=1", "enable=0");
        v["write"].as_array_mut().unwrap()[1]["value"] = toml::Value::String(qos);
        assert!(Probe::of_scenario(&v).is_none());
    }

    #[test]
    fn reads_the_lab_samples() {
        let p = Probe::of_scenario(&c06()).unwrap();
        let line = |t: u32, a: (u64, u64, u64), b: (u64, u64, u64)| {
            format!(
                r#"{{"t": {t}, "io_stat": {{"/cgA": "254:0 rbytes={} wbytes={} rios=1 cost.usage={}", "/cgB": "254:0 rbytes={} wbytes={} cost.usage={}"}}}}"#,
                a.0, a.1, a.2, b.0, b.1, b.2
            )
        };
        let text = [
            line(1, (0, 0, 0), (0, 0, 0)),
            line(2, (1 << 20, 0, 4000), (4096, 0, 100)),
            line(3, (2 << 20, 0, 12214), (8192, 0, 380)),
            line(4, (3 << 20, 0, 20428), (12288, 0, 660)),
            line(5, (4 << 20, 0, 30000), (16384, 0, 900)),
        ]
        .join("\n");
        let mut m = RunMetrics::new();
        p.measure_samples(&text, 254, &mut m);
        // the runtime is 4 s: seconds 2 and 3 of contention, at 100%
        assert_eq!(m.keys().collect::<Vec<_>>(), ["vrate.s02", "vrate.s03"]);
        assert!((m["vrate.s02"].1 - 100.0).abs() < 0.1, "{:?}", m);
        assert_eq!(m["vrate.s03"].0, Kind::Vrate);
    }
}
