//! A plan in the formats the tools that apply IO settings read.
//!
//! * **systemd hwdb** (systemd ≥ 254, `iocost apply` run by
//!   `90-iocost.rules`): a record matching the device model
//!   (`block:*:name:MODEL:fwrev:*:`, the rule looks up
//!   `block::name:$ID_MODEL:fwrev:$ID_REVISION:`) with
//!   `IOCOST_SOLUTIONS=NAME`, `IOCOST_MODEL_NAME=rbps=… …` and
//!   `IOCOST_QOS_NAME=rpct=… …`, the name upper-cased with `-` as `_`, the
//!   values formatted as resctl-bench's `format_hwdb` writes them; systemd
//!   writes `MAJ:MIN enable=1 ctrl=user QOS` and `MAJ:MIN model=linear
//!   ctrl=user MODEL`.
//! * **iocost.conf** (`/etc/udev/iocost.conf`): `[IOCost]`,
//!   `TargetSolution=NAME`.
//! * **systemd units**: a drop-in per cgroup for the slice of that path
//!   (`/a/b` is `a-b.slice`) with `IOWeight=`, `IODeviceWeight=`,
//!   `IO{Read,Write}{Bandwidth,IOPS}Max=` (bytes and IOs per second; the
//!   weights 1–10000).
//! * **goresctrl blockio classes** (containerd's and CRI-O's
//!   `blockio_config_file`): a class per cgroup with `Weight` (10–1000)
//!   and `Throttle{Read,Write}{Bps,IOPS}` for the device.

use super::plan::Plan;
use anyhow::{bail, Result};
use blkqos_core::cgroupfs::KnobFile;
use std::fmt::Write as _;

/// The `key=value` fields of a knob line after its device.
fn fields(value: &str) -> Vec<(&str, &str)> {
    value
        .split_whitespace()
        .skip(1)
        .filter_map(|kv| kv.split_once('='))
        .collect()
}

/// The time-0 line of `knob` in the root cgroup.
fn root_line(plan: &Plan, knob: KnobFile) -> Option<&str> {
    plan.steps
        .iter()
        .rev()
        .find(|s| s.cgroup == "/" && s.knob == knob)
        .map(|s| s.value.as_str())
}

/// `IOCOST_*` property suffix of a solution name.
pub fn property_name(solution: &str) -> String {
    solution.to_uppercase().replace('-', "_")
}

/// The `IOCOST_MODEL_*` and `IOCOST_QOS_*` values of one plan: the six
/// model fields and the six QoS fields, as resctl-bench formats them.
fn hwdb_values(plan: &Plan) -> Result<(String, String)> {
    let (Some(m), Some(q)) = (
        root_line(plan, KnobFile::IoCostModel),
        root_line(plan, KnobFile::IoCostQos),
    ) else {
        bail!("the settings have no io.cost.model and io.cost.qos lines: nothing for systemd's iocost to apply");
    };
    let mf = fields(m);
    let mut model_text = Vec::new();
    for k in blkqos_core::iocost::knob::LCOEF_KEYS {
        let Some((_, v)) = mf.iter().find(|f| f.0 == k) else {
            bail!("io.cost.model `{m}` has no {k}: systemd's iocost needs all six");
        };
        model_text.push(format!("{k}={v}"));
    }
    let qf = fields(q);
    let mut qos_text = Vec::new();
    for k in ["rpct", "rlat", "wpct", "wlat", "min", "max"] {
        let Some((_, v)) = qf.iter().find(|f| f.0 == k) else {
            bail!("io.cost.qos `{q}` has no {k}: a hwdb solution carries all six");
        };
        let v = if k.ends_with("lat") {
            v.to_string()
        } else {
            let x: f64 = v
                .parse()
                .map_err(|_| anyhow::anyhow!("io.cost.qos {k}={v}: not a number"))?;
            format!("{x:.2}")
        };
        qos_text.push(format!("{k}={v}"));
    }
    Ok((model_text.join(" "), qos_text.join(" ")))
}

/// A hwdb record for `model` with each `(solution name, plan)`'s
/// io.cost.model and io.cost.qos, the solutions listed in that order.
pub fn hwdb(solutions: &[(String, &Plan)], model: &str) -> Result<String> {
    if model.is_empty() || model.contains(['#', '\n', ':']) {
        bail!("--model `{model}`: the device's ID_MODEL (udevadm info -q property -n /dev/X), without `#`, `:` or newlines");
    }
    let mut names = Vec::new();
    let mut props = String::new();
    for (solution, plan) in solutions {
        if solution.is_empty()
            || !solution
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            bail!("solution `{solution}`: letters, digits, `-` and `_` only");
        }
        let (m, q) = hwdb_values(plan)?;
        let name = property_name(solution);
        let _ = writeln!(props, " IOCOST_MODEL_{name}={m}");
        let _ = writeln!(props, " IOCOST_QOS_{name}={q}");
        names.push(solution.as_str());
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# blkqos: io.cost settings for {model} ({})",
        names.join(", ")
    );
    let _ = writeln!(out, "block:*:name:{model}:fwrev:*:");
    let _ = writeln!(out, " IOCOST_SOLUTIONS={}", names.join(" "));
    out += &props;
    Ok(out)
}

/// `/etc/udev/iocost.conf` choosing `solution`.
pub fn iocost_conf(solution: &str) -> String {
    format!("[IOCost]\nTargetSolution={solution}\n")
}

/// The slice unit of a cgroup path: `/a/b` is `a-b.slice` (`-` inside a
/// name is escaped as systemd escapes it, `\x2d`).
pub fn slice_name(cgroup: &str) -> String {
    let parts: Vec<String> = cgroup
        .trim_matches('/')
        .split('/')
        .map(|p| p.replace('-', "\\x2d"))
        .collect();
    format!("{}.slice", parts.join("-"))
}

/// The per-cgroup settings (io.weight, io.max) of the plan: `(cgroup,
/// default weight, device weight, io.max fields)`.
type GroupSettings<'a> = (
    String,
    Option<&'a str>,
    Option<&'a str>,
    Vec<(&'a str, &'a str)>,
);

fn groups(plan: &Plan) -> Vec<GroupSettings<'_>> {
    let mut out: Vec<GroupSettings> = Vec::new();
    for s in plan.steps.iter().filter(|s| s.cgroup != "/") {
        let i = match out.iter().position(|g| g.0 == s.cgroup) {
            Some(i) => i,
            None => {
                out.push((s.cgroup.clone(), None, None, Vec::new()));
                out.len() - 1
            }
        };
        let mut words = s.value.split_whitespace();
        let first = words.next().unwrap_or("");
        match s.knob {
            KnobFile::IoWeight if first == "default" => out[i].1 = words.next(),
            KnobFile::IoWeight if first.parse::<u32>().is_ok() => out[i].1 = Some(first),
            KnobFile::IoWeight => out[i].2 = words.next(),
            KnobFile::IoMax => out[i].3.extend(fields(&s.value)),
            _ => {}
        }
    }
    out
}

/// A weight within `lo..=hi`, or an error naming the consumer.
fn weight_in(w: &str, lo: u32, hi: u32, who: &str, cgroup: &str) -> Result<u32> {
    match w.parse::<u32>() {
        Ok(n) if (lo..=hi).contains(&n) => Ok(n),
        _ => bail!("{cgroup}: weight {w} is outside {who}'s {lo}..{hi}"),
    }
}

/// systemd drop-ins, `(path, text)`, for the plan's cgroups on `dev_path`.
pub fn systemd_units(plan: &Plan, dev_path: &str) -> Result<Vec<(String, String)>> {
    let mut files = Vec::new();
    for (cg, default_w, dev_w, max) in groups(plan) {
        let mut t = String::from("[Slice]\n");
        if let Some(w) = default_w {
            let _ = writeln!(t, "IOWeight={}", weight_in(w, 1, 10000, "systemd", &cg)?);
        }
        if let Some(w) = dev_w {
            let w = weight_in(w, 1, 10000, "systemd", &cg)?;
            let _ = writeln!(t, "IODeviceWeight={dev_path} {w}");
        }
        for (k, key) in [
            ("rbps", "IOReadBandwidthMax"),
            ("wbps", "IOWriteBandwidthMax"),
            ("riops", "IOReadIOPSMax"),
            ("wiops", "IOWriteIOPSMax"),
        ] {
            if let Some((_, v)) = max.iter().find(|f| f.0 == k) {
                let v = if *v == "max" { "infinity" } else { v };
                let _ = writeln!(t, "{key}={dev_path} {v}");
            }
        }
        let path = format!(
            "/etc/systemd/system/{}.d/50-blkqos-io.conf",
            slice_name(&cg)
        );
        files.push((path, t));
    }
    Ok(files)
}

/// A goresctrl blockio configuration: a class per cgroup (named after its
/// path) on `dev_path`.
pub fn goresctrl(plan: &Plan, dev_path: &str) -> Result<String> {
    let mut t = String::from("Classes:\n");
    for (cg, default_w, dev_w, max) in groups(plan) {
        let class = cg.trim_matches('/').replace('/', "-");
        let _ = writeln!(t, "  {class}:");
        if let Some(w) = default_w {
            let _ = writeln!(
                t,
                "    - Weight: {}",
                weight_in(w, 10, 1000, "goresctrl", &cg)?
            );
        }
        let mut dev = Vec::new();
        if let Some(w) = dev_w {
            dev.push(format!(
                "Weight: {}",
                weight_in(w, 10, 1000, "goresctrl", &cg)?
            ));
        }
        for (k, key) in [
            ("rbps", "ThrottleReadBps"),
            ("wbps", "ThrottleWriteBps"),
            ("riops", "ThrottleReadIOPS"),
            ("wiops", "ThrottleWriteIOPS"),
        ] {
            if let Some((_, v)) = max.iter().find(|f| f.0 == k && f.1 != "max") {
                dev.push(format!("{key}: {v}"));
            }
        }
        if !dev.is_empty() {
            let _ = writeln!(t, "    - Devices:\n        - {dev_path}");
            for d in dev {
                let _ = writeln!(t, "      {d}");
            }
        }
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::plan::Step;
    use blkqos_core::DevId;
    use std::path::PathBuf;

    fn plan(lines: &[(&str, KnobFile, &str)]) -> Plan {
        Plan {
            dev: DevId::new(8, 16),
            root: PathBuf::from("/sys/fs/cgroup"),
            steps: lines
                .iter()
                .map(|(cg, knob, value)| Step {
                    cgroup: cg.to_string(),
                    knob: *knob,
                    path: PathBuf::new(),
                    value: value.to_string(),
                    origin: String::new(),
                })
                .collect(),
            notes: Vec::new(),
        }
    }

    #[test]
    fn names_and_slices_as_systemd_spells_them() {
        assert_eq!(property_name("isolated-bandwidth"), "ISOLATED_BANDWIDTH");
        assert_eq!(slice_name("/a/b"), "a-b.slice");
        assert_eq!(slice_name("/my-app"), "my\\x2dapp.slice");
    }

    #[test]
    fn units_and_classes_carry_each_groups_settings_in_range() {
        let p = plan(&[
            ("/cgA", KnobFile::IoWeight, "default 300"),
            (
                "/cgB",
                KnobFile::IoMax,
                "8:16 rbps=1048576 riops=200 wbps=max",
            ),
            ("/cgB", KnobFile::IoWeight, "8:16 50"),
        ]);
        let units = systemd_units(&p, "/dev/sdb").unwrap();
        assert_eq!(
            units[0].0,
            "/etc/systemd/system/cgA.slice.d/50-blkqos-io.conf"
        );
        assert_eq!(units[0].1, "[Slice]\nIOWeight=300\n");
        assert_eq!(
            units[1].1,
            "[Slice]\nIODeviceWeight=/dev/sdb 50\nIOReadBandwidthMax=/dev/sdb 1048576\nIOWriteBandwidthMax=/dev/sdb infinity\nIOReadIOPSMax=/dev/sdb 200\n"
        );
        let g = goresctrl(&p, "/dev/sdb").unwrap();
        assert_eq!(
            g,
            "Classes:\n  cgA:\n    - Weight: 300\n  cgB:\n    - Devices:\n        - /dev/sdb\n      Weight: 50\n      ThrottleReadBps: 1048576\n      ThrottleReadIOPS: 200\n"
        );
        // goresctrl takes weights 10..1000 only
        let big = plan(&[("/a", KnobFile::IoWeight, "default 5000")]);
        let e = goresctrl(&big, "/dev/sdb").unwrap_err();
        assert!(
            format!("{e}").contains("outside goresctrl's 10..1000"),
            "{e}"
        );
        assert!(systemd_units(&big, "/dev/sdb").is_ok());
    }
}
