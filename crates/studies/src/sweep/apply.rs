//! The scenario a sweep starts from, and the experiment of one point: the
//! scenario with the knob values of that point written in.
//!
//! A knob changes the scenario's setting *at the start of the run*: the
//! last write to that file at time 0 (no `at`, or `at = "0s"`) gets the
//! value (a field is merged into its line, replacing the field or adding
//! it at the end; io.weight and v1 files get `MAJ:MIN VALUE`), or, when
//! the scenario has no such write, a write at time 0 is added after the
//! scenario's own. Writes the scenario makes later in the run (`at = "5s"`)
//! stay as they are: they are the run's events.

use super::spec::{Knob, Target};
use anyhow::{bail, Context, Result};
use blkqos_core::cgroupfs::KnobFile;
use blkqos_experiment::experiment::{Experiment, KnobWrite};
use blkqos_experiment::scenario::scalar_to_string;
use blkqos_sim::DeviceSpec;
use std::path::Path;

/// The scenario, parsed once, ready to be varied.
pub struct Base {
    /// The experiment with its outputs off and every histogram kept.
    pub exp: Experiment,
    /// The `[device]` table as written (model, then `key = value`), to
    /// rebuild the device with a parameter changed.
    device_model: String,
    device_kv: Vec<(String, String)>,
    /// The scenario text and the job files it names, in order: what the
    /// results depend on besides the command line (the sweep id).
    pub inputs: Vec<String>,
}

impl Base {
    /// Load `path` with `--seed`/`--kernel` applied.
    pub fn load(path: &Path, seed: Option<u64>, kernel: Option<&str>) -> Result<Base> {
        let mut exp = blkqos_experiment::scenario_build::experiment(path)?;
        if exp.real.is_some() {
            bail!(
                "{}: the scenario runs on the real engine ([device] path/backend): a sweep runs on the simulator",
                path.display()
            );
        }
        if let Some(s) = seed {
            exp.seed = s;
            exp.host.seed = s;
        }
        if let Some(k) = kernel {
            let (p, low) = blkqos_experiment::kernel::KernelProfile::parse(k)
                .map_err(|m| anyhow::anyhow!("--{m}"))?;
            p.apply_build(&mut exp.controllers, &mut exp.accounting, low);
            p.apply_pagecache(&mut exp.pagecache.cfg);
        }
        quiet(&mut exp);
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let table: toml::Table = text
            .parse()
            .with_context(|| format!("{}: not TOML", path.display()))?;
        let (device_model, device_kv) = device_table(&table);
        let mut inputs = vec![text];
        for f in table
            .get("fio")
            .and_then(toml::Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(jf) = f.get("job_file").and_then(toml::Value::as_str) {
                let p = path.parent().unwrap_or(Path::new(".")).join(jf);
                inputs.push(std::fs::read_to_string(&p).unwrap_or_default());
            }
        }
        Ok(Base {
            exp,
            device_model,
            device_kv,
            inputs,
        })
    }

    /// The experiment of one point (`values[k]` for `knobs[k]`) and the
    /// settings to apply on a real machine, one line each.
    pub fn point(&self, knobs: &[Knob], values: &[&str]) -> Result<(Experiment, Vec<String>)> {
        let mut exp = self.exp.clone();
        let mut device_kv = self.device_kv.clone();
        let mut device_changed = false;
        for (knob, value) in knobs.iter().zip(values) {
            let origin = format!("--vary {}={value}", knob.name);
            match &knob.target {
                Target::Field {
                    cgroup,
                    knob: f,
                    field,
                } => {
                    let devid = exp.device.devid.to_string();
                    // `vrate` is min and max at once
                    let fields: &[&str] = if *f == KnobFile::IoCostQos && field == "vrate" {
                        &["min", "max"]
                    } else {
                        &[field.as_str()]
                    };
                    set_field(
                        &mut exp.writes,
                        cgroup,
                        *f,
                        |line| {
                            let mut l = line.map_or_else(|| devid.clone(), str::to_string);
                            for fld in fields {
                                l = merge_field(&l, fld, value);
                            }
                            l
                        },
                        &origin,
                    );
                }
                Target::Line { cgroup, knob: f } => {
                    let line = format!("{} {value}", exp.device.devid);
                    set_field(&mut exp.writes, cgroup, *f, |_| line.clone(), &origin);
                }
                Target::Device { key } => {
                    // a device seed of its own is kept apart from the run's
                    exp.device_seed_explicit |= key == "seed";
                    device_kv.retain(|(k, _)| k != key);
                    device_kv.push((key.clone(), value.to_string()));
                    device_changed = true;
                }
                Target::Controller { key } => exp
                    .controllers
                    .set(key, value)
                    .map_err(|m| anyhow::anyhow!("{origin}: [controllers] {m}"))?,
            }
        }
        if device_changed {
            let kv = device_kv.iter().map(|(k, v)| (k.as_str(), v.as_str()));
            exp.device = DeviceSpec::new(&self.device_model, kv)
                .map_err(|e| anyhow::anyhow!("[device] {e}"))?;
        }
        let lines = settings(&exp, knobs, values);
        Ok((exp, lines))
    }
}

/// Outputs off (a sweep writes only its table), every latency histogram
/// on (percentiles of clat and lat are what it compares).
fn quiet(exp: &mut Experiment) {
    exp.io_stat_out = None;
    exp.trace_out = None;
    exp.streams = None;
    exp.pagecache.report = None;
    let a = &mut exp.accounting;
    a.every_ns = None;
    a.diskstats_dir = None;
    a.iostat_args = None;
    a.lat_hist = None;
    a.request_trace = None;
    for inv in &mut exp.invocations {
        inv.output = None;
        for j in &mut inv.jobs.jobs {
            j.clat_percentiles = true;
            j.lat_percentiles = true;
        }
    }
}

/// The `[device]` table as (model, other keys), values as strings.
fn device_table(table: &toml::Table) -> (String, Vec<(String, String)>) {
    let mut model = "null".to_string();
    let mut kv = Vec::new();
    if let Some(dev) = table.get("device").and_then(toml::Value::as_table) {
        for (k, v) in dev {
            let s = scalar_to_string(v).unwrap_or_default();
            if k == "model" {
                model = s;
            } else {
                kv.push((k.clone(), s));
            }
        }
    }
    (model, kv)
}

/// Give the last time-0 write of `knob` in `cgroup` the value `make`
/// returns from its current one, or add a time-0 write after the others.
fn set_field(
    writes: &mut Vec<KnobWrite>,
    cgroup: &str,
    knob: KnobFile,
    make: impl Fn(Option<&str>) -> String,
    origin: &str,
) {
    let at0 = writes
        .iter()
        .rposition(|w| w.at_ns == 0 && w.cgroup == cgroup && w.knob == knob);
    match at0 {
        Some(i) => {
            let w = &mut writes[i];
            w.value = make(Some(&w.value));
            w.origin = format!("{} ({origin})", w.origin);
        }
        None => writes.push(KnobWrite {
            at_ns: 0,
            cgroup: cgroup.to_string(),
            knob,
            value: make(None),
            origin: origin.to_string(),
        }),
    }
}

/// `line` with `field=value`: the first `field=` token replaced (later
/// ones dropped, as the kernel would let the last win), or appended.
pub fn merge_field(line: &str, field: &str, value: &str) -> String {
    let key = format!("{field}=");
    let mut out: Vec<String> = Vec::new();
    let mut done = false;
    for tok in line.split_whitespace() {
        if tok.starts_with(&key) {
            if !done {
                out.push(format!("{key}{value}"));
                done = true;
            }
        } else {
            out.push(tok.to_string());
        }
    }
    if !done {
        out.push(format!("{key}{value}"));
    }
    out.join(" ")
}

/// What to set on a real machine for this point: each knob file a knob
/// touched, as `echo "LINE" > /sys/fs/cgroup/...` with the file's line at
/// the start of the run; device and controller knobs as the scenario keys.
fn settings(exp: &Experiment, knobs: &[Knob], values: &[&str]) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for (knob, value) in knobs.iter().zip(values) {
        let line = match &knob.target {
            Target::Field { cgroup, knob, .. } | Target::Line { cgroup, knob } => {
                let Some(w) = exp
                    .writes
                    .iter()
                    .rev()
                    .find(|w| w.at_ns == 0 && w.cgroup == *cgroup && w.knob == *knob)
                else {
                    continue;
                };
                let dir = if cgroup == "/" { "" } else { cgroup.as_str() };
                format!(
                    "echo \"{}\" > /sys/fs/cgroup{dir}/{}",
                    w.value.trim(),
                    knob.name()
                )
            }
            Target::Device { key } => format!("[device] {key} = {value}"),
            Target::Controller { key } => format!("[controllers] {key} = \"{value}\""),
        };
        if !lines.contains(&line) {
            lines.push(line);
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_merge_into_the_line() {
        let l = "259:0 enable=1 ctrl=user rpct=95 rlat=2000 min=50 max=200";
        assert_eq!(
            merge_field(l, "rlat", "750"),
            "259:0 enable=1 ctrl=user rpct=95 rlat=750 min=50 max=200"
        );
        assert_eq!(
            merge_field("259:0 enable=1", "min", "25"),
            "259:0 enable=1 min=25"
        );
        assert_eq!(
            merge_field("8:0 riops=5 riops=7 wbps=1", "riops", "9"),
            "8:0 riops=9 wbps=1"
        );
    }
}
