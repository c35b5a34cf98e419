//! Writing a [`Plan`] to a live cgroupfs: check everything first, then
//! write each file and read it back; on the first failure put back what
//! was written (last first) and remove the cgroups created.

use super::plan::{Plan, Step};
use super::readback::{mismatch, restore_line};
use anyhow::{bail, Result};
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// What the checks found to do before writing.
#[derive(Debug, Default)]
pub struct Checked {
    /// Cgroups to create (parents first), with `--create`.
    pub create: Vec<PathBuf>,
}

/// Check `plan` against the hierarchy: the device exists under `sysfs`,
/// each cgroup exists (or `create`), `io` is enabled in its parent's
/// `cgroup.subtree_control`, and each file is there. Every problem is
/// listed, none written.
pub fn check(plan: &Plan, sysfs: &Path, create: bool, log: &mut Vec<String>) -> Result<Checked> {
    let mut problems = Vec::new();
    let dev_dir = sysfs.join("dev/block").join(plan.dev.to_string());
    if dev_dir.exists() {
        log.push(format!(
            "check: device {} ({}) exists",
            plan.dev,
            dev_dir.display()
        ));
    } else {
        problems.push(format!(
            "device {}: no {} (is it the right MAJ:MIN? `lsblk -o NAME,MAJ:MIN`)",
            plan.dev,
            dev_dir.display()
        ));
    }
    if !plan.root.join("cgroup.controllers").exists() {
        problems.push(format!(
            "{}: not a cgroup v2 hierarchy (no cgroup.controllers)",
            plan.root.display()
        ));
    }
    let mut out = Checked::default();
    let mut seen: Vec<&Path> = Vec::new();
    for s in &plan.steps {
        let dir = s.path.parent().expect("a file in a cgroup");
        if seen.contains(&dir) {
            continue;
        }
        seen.push(dir);
        if dir != plan.root {
            check_cgroup(plan, dir, create, &mut out, &mut problems, log);
        }
    }
    for s in &plan.steps {
        let dir = s.path.parent().expect("a file in a cgroup");
        let will_create = out.create.iter().any(|c| c == dir);
        if dir.is_dir() && !will_create && !s.path.exists() {
            problems.push(format!(
                "{}: no such file ({} is not enabled there, or this kernel lacks it)",
                s.path.display(),
                s.knob.name()
            ));
        }
    }
    if !problems.is_empty() {
        bail!("nothing written:\n  {}", problems.join("\n  "));
    }
    Ok(out)
}

/// Check one cgroup directory: it exists (or will be created) and its
/// parent enables `io` for its children.
fn check_cgroup(
    plan: &Plan,
    dir: &Path,
    create: bool,
    out: &mut Checked,
    problems: &mut Vec<String>,
    log: &mut Vec<String>,
) {
    // parents first: /a before /a/b
    let mut missing = Vec::new();
    let mut d = dir;
    while d != plan.root && !d.is_dir() {
        missing.push(d.to_path_buf());
        d = d.parent().unwrap_or(&plan.root);
    }
    if !missing.is_empty() && !create {
        problems.push(format!(
            "{}: no such cgroup (create it, or give --create)",
            dir.display()
        ));
        return;
    }
    for m in missing.into_iter().rev() {
        if !out.create.contains(&m) {
            out.create.push(m);
        }
    }
    let parent = dir.parent().unwrap_or(&plan.root);
    let control = parent.join("cgroup.subtree_control");
    match std::fs::read_to_string(&control) {
        Ok(c) if c.split_whitespace().any(|w| w == "io") => {
            log.push(format!("check: io is enabled in {}", control.display()));
        }
        Ok(c) => problems.push(format!(
            "{}: `io` is not enabled for {}'s children (it reads `{}`; `echo +io > {}`)",
            control.display(),
            parent.display(),
            c.trim(),
            control.display()
        )),
        // a parent that will be created has io enabled by its own parent
        // only once made; the kernel then refuses the write and apply
        // rolls back
        Err(_) if out.create.iter().any(|c| c == parent) => {}
        Err(e) => problems.push(format!("{}: {e}", control.display())),
    }
}

/// Apply `plan` (checked): returns the log; on failure the error says
/// what failed and what was put back.
pub fn apply(plan: &Plan, checked: &Checked, log: &mut Vec<String>) -> Result<()> {
    let mut created: Vec<&Path> = Vec::new();
    let mut done: Vec<(&Step, String)> = Vec::new();
    let result = (|| -> Result<()> {
        for dir in &checked.create {
            std::fs::create_dir(dir)
                .map_err(|e| anyhow::anyhow!("mkdir {}: {e}", dir.display()))?;
            log.push(format!("created {}", dir.display()));
            created.push(dir);
        }
        for s in &plan.steps {
            let before = std::fs::read_to_string(&s.path)
                .map_err(|e| anyhow::anyhow!("read {}: {e}", s.path.display()))?;
            write_line(&s.path, &s.value)
                .map_err(|e| anyhow::anyhow!("{}: writing `{}`: {e}", s.path.display(), s.value))?;
            done.push((s, before));
            let after = std::fs::read_to_string(&s.path)
                .map_err(|e| anyhow::anyhow!("read back {}: {e}", s.path.display()))?;
            if let Some(why) = mismatch(s.knob, &s.value, &after, plan.dev) {
                bail!(
                    "{}: wrote `{}` but it reads back otherwise: {why}",
                    s.path.display(),
                    s.value
                );
            }
            log.push(format!(
                "wrote {} <- {} (read back: ok)",
                s.path.display(),
                s.value
            ));
        }
        Ok(())
    })();
    let Err(err) = result else {
        return Ok(());
    };
    let mut undo = Vec::new();
    for (s, before) in done.iter().rev() {
        let line = restore_line(s.knob, &s.value, before, plan.dev);
        match write_line(&s.path, &line) {
            Ok(()) => undo.push(format!("put back {} <- {line}", s.path.display())),
            Err(e) => undo.push(format!(
                "could not put back {} <- {line}: {e}",
                s.path.display()
            )),
        }
    }
    for dir in created.iter().rev() {
        match std::fs::remove_dir(dir) {
            Ok(()) => undo.push(format!("removed {}", dir.display())),
            Err(e) => undo.push(format!("could not remove {}: {e}", dir.display())),
        }
    }
    log.extend(undo.iter().cloned());
    bail!(
        "{err:#}\nrolled back:\n  {}",
        if undo.is_empty() {
            "nothing had been written".to_string()
        } else {
            undo.join("\n  ")
        }
    )
}

/// `echo line > path`: one write of the line and a newline, as the shell
/// does (cgroupfs takes a write whole).
fn write_line(path: &Path, line: &str) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)?;
    f.write_all(format!("{line}\n").as_bytes())
}
