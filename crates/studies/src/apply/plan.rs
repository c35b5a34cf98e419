//! What `blkqos apply` writes: a scenario's writes at time 0 (with a
//! sweep point's knob values merged in, as the sweep ran them), moved to
//! the target device and cgroupfs mount.

use anyhow::{anyhow, bail, Context, Result};
use blkqos_core::cgroupfs::KnobFile;
use blkqos_core::DevId;
use blkqos_experiment::experiment::KnobWrite;
use std::path::{Path, PathBuf};

/// One write to make: `echo value > path`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// The cgroup (`/`, `/cgA`).
    pub cgroup: String,
    pub knob: KnobFile,
    /// The file under the target mount.
    pub path: PathBuf,
    /// The line, on the target device.
    pub value: String,
    /// Where it came from (`scenario.toml:41`, `--vary io.cost.qos:max=92`).
    pub origin: String,
}

/// The writes of one apply, and what was left out and why.
#[derive(Debug)]
pub struct Plan {
    pub dev: DevId,
    pub root: PathBuf,
    pub steps: Vec<Step>,
    /// Lines saying what is not applied (later writes, simulator knobs).
    pub notes: Vec<String>,
}

/// The plan for `writes` (the scenario's, on its device `scenario_dev`),
/// moved to `dev` under `root`.
pub fn plan(writes: &[KnobWrite], scenario_dev: DevId, dev: DevId, root: &Path) -> Result<Plan> {
    let mut steps = Vec::new();
    let mut notes = Vec::new();
    for w in writes {
        if w.at_ns > 0 {
            notes.push(format!(
                "{}: a write {} ms into the run ({} of {}) is a run event, not a setting: not applied",
                w.origin,
                w.at_ns / 1_000_000,
                w.knob.name(),
                w.cgroup
            ));
            continue;
        }
        let value = on_device(&w.value, w.knob, scenario_dev, dev)
            .with_context(|| format!("{}: {} of {}", w.origin, w.knob.name(), w.cgroup))?;
        let rel = w.cgroup.trim_start_matches('/');
        let dir = if rel.is_empty() {
            root.to_path_buf()
        } else {
            root.join(rel)
        };
        steps.push(Step {
            cgroup: w.cgroup.clone(),
            knob: w.knob,
            path: dir.join(w.knob.name()),
            value,
            origin: w.origin.clone(),
        });
    }
    if steps.is_empty() {
        bail!("the scenario writes no cgroup file at the start of its run: nothing to apply");
    }
    Ok(Plan {
        dev,
        root: root.to_path_buf(),
        steps,
        notes,
    })
}

/// `value` with the scenario's device number replaced by `dev`. Every
/// line but a bare `io.weight` value (`100`, `default 100`) starts with
/// the device; a line for another device is refused (the scenario has one).
fn on_device(value: &str, knob: KnobFile, scenario_dev: DevId, dev: DevId) -> Result<String> {
    let value = value.trim();
    let (first, rest) = value.split_once(' ').unwrap_or((value, ""));
    if knob == KnobFile::IoWeight && (first == "default" || first.parse::<u32>().is_ok()) {
        return Ok(value.to_string());
    }
    let line_dev: DevId = first
        .parse()
        .map_err(|_| anyhow!("`{value}` does not start with a MAJ:MIN device"))?;
    if line_dev != scenario_dev {
        bail!("`{value}` is for device {line_dev}, not the scenario's {scenario_dev}");
    }
    Ok(format!("{dev} {}", rest.trim()).trim_end().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(cgroup: &str, knob: KnobFile, value: &str, at_ns: u64) -> KnobWrite {
        KnobWrite {
            at_ns,
            cgroup: cgroup.into(),
            knob,
            value: value.into(),
            origin: "s.toml:1".into(),
        }
    }

    #[test]
    fn writes_move_to_the_target_device_and_mount() {
        let from = DevId::new(254, 0);
        let to = DevId::new(8, 16);
        let p = plan(
            &[
                w("/", KnobFile::IoCostQos, "254:0 enable=1 max=92", 0),
                w("/cgA", KnobFile::IoWeight, "default 300", 0),
                w("/cgB", KnobFile::IoWeight, "254:0 50", 0),
                w("/cgB", KnobFile::IoMax, "254:0 riops=100", 5_000_000_000),
            ],
            from,
            to,
            Path::new("/mnt/cg"),
        )
        .unwrap();
        let got: Vec<(String, String)> = p
            .steps
            .iter()
            .map(|s| (s.path.display().to_string(), s.value.clone()))
            .collect();
        assert_eq!(
            got,
            [
                (
                    "/mnt/cg/io.cost.qos".to_string(),
                    "8:16 enable=1 max=92".to_string()
                ),
                ("/mnt/cg/cgA/io.weight".into(), "default 300".into()),
                ("/mnt/cg/cgB/io.weight".into(), "8:16 50".into()),
            ]
        );
        assert_eq!(p.notes.len(), 1);
        assert!(
            p.notes[0].contains("5000 ms into the run"),
            "{}",
            p.notes[0]
        );
    }

    #[test]
    fn a_line_for_another_device_is_refused() {
        let e = plan(
            &[w("/a", KnobFile::IoMax, "8:0 riops=10", 0)],
            DevId::new(254, 0),
            DevId::new(8, 16),
            Path::new("/sys/fs/cgroup"),
        )
        .unwrap_err();
        assert!(
            format!("{e:#}").contains("for device 8:0, not the scenario's 254:0"),
            "{e:#}"
        );
    }
}
