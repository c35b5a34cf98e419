//! `blkqos calibrate --from FILE`: an io.cost.model someone already has
//! (a resctl-bench result, or a systemd hwdb record such as the
//! iocost-benchmarks project publishes), and a simulated device with its
//! rates, measuring nothing.
//!
//! # The device
//!
//! iocost's linear model is six rates: sequential bytes/s (`rbps`,
//! `wbps`) and 4 KiB sequential and random IOs/s. The `ssd` model serves a
//! request on one of `channels` units for `base + len / rate`, so at
//! saturation it does `channels / (base + 4096 / rate)` 4 KiB IOs/s and
//! `channels × rate` bytes/s on large IOs. Per direction:
//!
//! * a 4 KiB request takes `channels / rrandiops`: `base + 4096 / rate`;
//! * a large sequential IO reaches the device in 128 KiB requests (the ssd
//!   model's `max_sectors_kb`, as the block layer splits the large reads
//!   the model's byte rate is measured with), each taking
//!   `channels × 128 KiB / rbps`: `base + 128 KiB / rate`;
//! * so `rate = (128 KiB − 4 KiB) / (channels × (128 KiB / rbps −
//!   1 / rrandiops))` per channel (`read_bps`) and `base = channels /
//!   rrandiops − 4096 / rate` (`read_ns`); the same for writes. Where that
//!   base would be negative (4 KiB random IOs as fast as the byte rate: a
//!   bandwidth-bound device such as null_blk under `mbps`) the base is 0
//!   and the rate the large requests' (the check shows the 4 KiB rate it
//!   gives). A model whose 128 KiB request is no slower than a random
//!   4 KiB one is refused;
//! * no jitter (`jitter_pct=0`), so the rates hold exactly.
//!
//! The model carries no latency or parallelism: `channels` (`--channels`,
//! default 8, the ssd model's own default) sets both the depth the device
//! saturates at and its depth-1 latency, `channels / rrandiops`.
//! `rseqiops` has no counterpart (the ssd model reads sequentially as
//! fast as randomly). The check replays a saturated 4 KiB random read and
//! a 1 MiB read (and writes) on the device and prints its rates beside the
//! model's.

use anyhow::{anyhow, bail, Context, Result};
use serde_json::Value;
use std::path::Path;

/// The six rates of an io.cost.model, and where they came from.
#[derive(Clone, Debug, PartialEq)]
pub struct CostModel {
    pub rbps: u64,
    pub rseqiops: u64,
    pub rrandiops: u64,
    pub wbps: u64,
    pub wseqiops: u64,
    pub wrandiops: u64,
    /// `FILE: resctl-bench iocost-params` or `FILE: hwdb MODEL, solution naive`.
    pub source: String,
}

use blkqos_core::iocost::knob::LCOEF_KEYS as KEYS;

impl CostModel {
    fn from_fields(get: impl Fn(&str) -> Option<u64>, source: String) -> Result<Self> {
        let mut v = [0u64; 6];
        for (i, k) in KEYS.iter().enumerate() {
            v[i] = get(k).ok_or_else(|| anyhow!("{source}: the model has no {k}"))?;
            if v[i] == 0 {
                bail!("{source}: {k}=0");
            }
        }
        Ok(CostModel {
            rbps: v[0],
            rseqiops: v[1],
            rrandiops: v[2],
            wbps: v[3],
            wseqiops: v[4],
            wrandiops: v[5],
            source,
        })
    }

    /// The io.cost.model line for `devid`.
    pub fn line(&self, devid: &str) -> String {
        format!(
            "{devid} ctrl=user model=linear rbps={} rseqiops={} rrandiops={} wbps={} wseqiops={} wrandiops={}",
            self.rbps, self.rseqiops, self.rrandiops, self.wbps, self.wseqiops, self.wrandiops
        )
    }

    /// The `ssd` device with the model's saturated rates (module header).
    pub fn device(&self, channels: u32) -> Result<String> {
        let c = channels.max(1) as f64;
        let r = SSD_REQUEST_BYTES as f64;
        let dir = |bps: u64, randiops: u64, name: &str| -> Result<(u64, u64)> {
            // base + 4096/rate = c/randiops; base + R/rate = c·R/bps
            let per_4k = c / randiops as f64;
            let per_req = c * r / bps as f64;
            if per_req <= per_4k {
                bail!(
                    "{}: a {}-byte {name} request at {bps} bytes/s is no slower than a random 4 KiB one at {randiops}/s: not a linear device the ssd model can be",
                    self.source,
                    SSD_REQUEST_BYTES
                );
            }
            let rate = (r - 4096.0) / (per_req - per_4k);
            let base_ns = (per_4k - 4096.0 / rate) * 1e9;
            if base_ns < 0.0 {
                // 4 KiB random IOs as fast as the byte rate or faster: a
                // bandwidth-bound device (null_blk under `mbps`), no
                // per-request time; the check shows the 4 KiB rate it gives
                return Ok((0, (r / per_req).round() as u64));
            }
            Ok((base_ns.round() as u64, rate.round() as u64))
        };
        let (read_ns, read_bps) = dir(self.rbps, self.rrandiops, "read")?;
        let (write_ns, write_bps) = dir(self.wbps, self.wrandiops, "write")?;
        Ok(format!(
            "ssd,channels={channels},jitter_pct=0,read_ns={read_ns},read_bps={read_bps},write_ns={write_ns},write_bps={write_bps}"
        ))
    }
}

/// The ssd model's largest request (`max_sectors_kb` 128): the size a large
/// sequential IO reaches the device in, the one the model's byte rate was
/// measured through.
const SSD_REQUEST_BYTES: u64 = 128 * 1024;

/// The model in `path`: a resctl-bench result (JSON: the `iocost-params`
/// job's `record.model`, else an `iocost-tune` result's `base_model`) or a
/// hwdb record (`IOCOST_MODEL_<SOLUTION>=`; `solution`, else `naive`, else
/// the first listed).
pub fn load(path: &Path, solution: Option<&str>) -> Result<CostModel> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    if bytes.starts_with(&[0x1f, 0x8b]) {
        bail!("{}: gzip-compressed: `gunzip` it first", path.display());
    }
    let text = String::from_utf8(bytes).map_err(|_| {
        anyhow!(
            "{}: not text (a resctl-bench JSON result or a hwdb file)",
            path.display()
        )
    })?;
    let name = path.display().to_string();
    if text.trim_start().starts_with(['[', '{']) {
        let doc: Value = serde_json::from_str(&text)
            .map_err(|e| anyhow!("{name}:{}: not JSON: {e}", e.line()))?;
        return from_resctl(&doc, &name);
    }
    from_hwdb(&text, &name, solution)
}

/// resctl-bench's result: an array of jobs `{spec: {kind}, record, result}`.
fn from_resctl(doc: &Value, name: &str) -> Result<CostModel> {
    let jobs: Vec<&Value> = match doc {
        Value::Array(a) => a.iter().collect(),
        v => vec![v],
    };
    let kind = |j: &Value| j["spec"]["kind"].as_str().unwrap_or("").to_string();
    let num = |m: &Value, k: &str| {
        m[k].as_u64()
            .or_else(|| m[k].as_f64().map(|f| f.round() as u64))
    };
    for (want, at) in [
        ("iocost-params", "/record/model"),
        ("iocost-tune", "/result/base_model"),
    ] {
        if let Some(j) = jobs.iter().find(|j| kind(j) == want) {
            if let Some(m) = j.pointer(at) {
                return CostModel::from_fields(
                    |k| num(m, k),
                    format!("{name}: resctl-bench {want}"),
                );
            }
        }
    }
    bail!("{name}: no iocost-params or iocost-tune job with a model (a resctl-bench result of `resctl-bench run iocost-params`, or iocost-tune's)")
}

/// A hwdb file: the first record with `IOCOST_MODEL_*` properties.
fn from_hwdb(text: &str, name: &str, solution: Option<&str>) -> Result<CostModel> {
    let mut matchline = None;
    let mut props: Vec<(usize, &str, &str)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let l = line.split('#').next().unwrap_or("");
        if l.trim().is_empty() {
            if !props.is_empty() {
                break;
            }
            continue;
        }
        if !l.starts_with(' ') {
            if props.is_empty() {
                matchline = Some(l.trim());
            }
            continue;
        }
        if let Some((k, v)) = l.trim().split_once('=') {
            props.push((i + 1, k, v));
        }
    }
    let record = matchline.unwrap_or("?");
    let solutions: Vec<&str> = props
        .iter()
        .find(|p| p.1 == "IOCOST_SOLUTIONS")
        .map(|p| p.2.split_whitespace().collect())
        .unwrap_or_default();
    let pick = match solution {
        Some(s) => s.to_string(),
        None if solutions.contains(&"naive") => "naive".into(),
        None => solutions.first().map(|s| s.to_string()).ok_or_else(|| {
            anyhow!("{name}: no IOCOST_SOLUTIONS in a record (a systemd iocost hwdb file)")
        })?,
    };
    let key = format!("IOCOST_MODEL_{}", crate::apply::hwdb_property(&pick));
    let (line, _, value) = props.iter().find(|p| p.1 == key).ok_or_else(|| {
        anyhow!(
            "{name}: record `{record}` has no {key} (it lists {})",
            solutions.join(", ")
        )
    })?;
    let fields: Vec<(&str, &str)> = value
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .collect();
    let get = |k: &str| {
        fields
            .iter()
            .find(|f| f.0 == k)
            .and_then(|f| f.1.parse().ok())
    };
    let mut m = CostModel::from_fields(get, format!("{name}:{line}"))?;
    m.source = format!("{name}:{line}: hwdb `{record}`, solution {pick}");
    Ok(m)
}

/// One check job: `(what, fio options, the model's rate, unit)`.
const CHECKS: [(&str, &str, &str); 4] = [
    ("4 KiB random reads", "--rw=randread --bs=4k", "IOPS"),
    ("1 MiB reads", "--rw=read --bs=1m", "B/s"),
    ("4 KiB random writes", "--rw=randwrite --bs=4k", "IOPS"),
    ("1 MiB writes", "--rw=write --bs=1m", "B/s"),
];

/// Each check job run on `device` for 1 simulated second at a depth that
/// saturates it (4 × channels): `(what, the model's rate, the device's, unit)`.
pub fn check(
    m: &CostModel,
    device: &str,
    channels: u32,
) -> Result<Vec<(String, f64, f64, &'static str)>> {
    let want = [
        m.rrandiops as f64,
        m.rbps as f64,
        m.wrandiops as f64,
        m.wbps as f64,
    ];
    let mut out = Vec::new();
    for ((what, opts, unit), want) in CHECKS.iter().zip(want) {
        let mut args: Vec<String> = vec![
            format!("--device={device}"),
            "--name=check".into(),
            "--ioengine=libaio".into(),
            "--direct=1".into(),
            format!("--iodepth={}", 4 * channels.max(1)),
            "--runtime=1".into(),
            "--time_based".into(),
            "--size=1g".into(),
            "--norandommap".into(),
        ];
        args.extend(opts.split_whitespace().map(str::to_string));
        let exp = blkqos_experiment::flags::experiment_from_args(&args)?;
        let ran = exp.run_sim(None)?;
        let j = ran
            .result
            .jobs
            .first()
            .ok_or_else(|| anyhow!("check `{what}`: no result"))?;
        let d = j
            .stats
            .dirs
            .values()
            .find(|d| d.total_ios > 0)
            .ok_or_else(|| anyhow!("check `{what}`: no IO"))?;
        let secs = d.runtime_ms.max(1) as f64 / 1000.0;
        let got = if *unit == "IOPS" {
            d.total_ios as f64 / secs
        } else {
            d.io_bytes as f64 / secs
        };
        out.push((what.to_string(), want, got, *unit));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HWDB: &str = "# 12 points\nblock:*:name:HFS256GD9TNG-62A0A:fwrev:*:\n  IOCOST_SOLUTIONS=isolation naive\n  IOCOST_MODEL_ISOLATION=rbps=545719746 rseqiops=26143 rrandiops=31892 wbps=96164733 wseqiops=6154 wrandiops=8059\n  IOCOST_QOS_ISOLATION=rpct=0.00 rlat=8807 wpct=0.00 wlat=59023 min=100.00 max=100.00\n  IOCOST_MODEL_NAIVE=rbps=1091439492 rseqiops=52286 rrandiops=63784 wbps=192329466 wseqiops=12309 wrandiops=16119\n  IOCOST_QOS_NAIVE=rpct=99.00 rlat=8807 wpct=99.00 wlat=59023 min=75.00 max=100.00\n";

    #[test]
    fn a_hwdb_record_gives_its_naive_model_or_the_one_asked_for() {
        let m = from_hwdb(HWDB, "x.hwdb", None).unwrap();
        assert_eq!(
            (m.rbps, m.rrandiops, m.wrandiops),
            (1091439492, 63784, 16119)
        );
        assert!(m.source.contains("solution naive"), "{}", m.source);
        let m = from_hwdb(HWDB, "x.hwdb", Some("isolation")).unwrap();
        assert_eq!(m.rbps, 545719746);
        let e = from_hwdb(HWDB, "x.hwdb", Some("bandwidth")).unwrap_err();
        assert!(
            format!("{e}").contains("has no IOCOST_MODEL_BANDWIDTH (it lists isolation, naive)"),
            "{e}"
        );
    }

    #[test]
    fn a_resctl_bench_result_gives_iocost_params_model() {
        let doc: Value = serde_json::from_str(
            r#"[{"spec":{"kind":"iocost-params"},"record":{"devnr":"8:0","model":{"rbps":1000000000,"rseqiops":50000,"rrandiops":60000,"wbps":500000000,"wseqiops":20000,"wrandiops":25000},"qos":{}},"result":true}]"#,
        )
        .unwrap();
        let m = from_resctl(&doc, "r.json").unwrap();
        assert_eq!((m.rbps, m.wrandiops), (1_000_000_000, 25_000));
        assert!(from_resctl(&serde_json::json!([]), "r.json").is_err());
    }

    #[test]
    fn the_device_has_the_models_saturated_rates() {
        let m = from_hwdb(HWDB, "x.hwdb", None).unwrap();
        let d = m.device(8).unwrap();
        // both equations of the module header, read and write
        assert_eq!(
            d,
            "ssd,channels=8,jitter_pct=0,read_ns=98478,read_bps=152011676,write_ns=336448,write_bps=25622372"
        );
        // a random rate the byte rate cannot carry at 4 KiB: bandwidth-bound,
        // no per-request time
        let mut fast = m.clone();
        fast.rrandiops = 300_000;
        assert!(
            fast.device(8)
                .unwrap()
                .contains(",read_ns=0,read_bps=136429937,"),
            "{}",
            fast.device(8).unwrap()
        );
        // a large request no slower than a random 4 KiB one is refused
        let mut bad = m.clone();
        bad.rbps = 131_072 * 63_784 * 2;
        assert!(bad.device(8).is_err());
    }
}
