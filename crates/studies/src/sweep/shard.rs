//! Splitting a sweep over machines and joining the parts.
//!
//! `--shard=I/N` runs the points whose number is I-1 modulo N (round
//! robin: neighbouring points cost about the same, so the shards finish
//! together) and writes a shard file: the sweep's definition and those
//! points' results. `--merge` checks that the files are the N shards of one
//! sweep (same id, every shard once, every point once) and reports the
//! whole sweep from them exactly as a single run would: the report is a
//! function of the definition and the points' results, and a point's
//! result does not depend on where it ran.

use super::run::{PointResult, SweepDef};
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The shard file's format tag.
pub const FORMAT: &str = "blkqos-sweep-shard/1";

/// What `--shard` writes and `--merge` reads.
#[derive(Debug, Serialize, Deserialize)]
pub struct ShardFile {
    pub format: String,
    /// `[I, N]`, 1-based.
    pub shard: [u64; 2],
    pub sweep: SweepDef,
    pub results: Vec<PointResult>,
}

/// Parse `I/N` (1 <= I <= N).
pub fn parse_shard(v: &str) -> Result<(u64, u64), String> {
    let bad = |why: &str| format!("--shard={v}: {why}");
    let (i, n) = v
        .split_once('/')
        .ok_or_else(|| bad("expected I/N, e.g. --shard=2/8 (shard 2 of 8)"))?;
    let (i, n): (u64, u64) = match (i.trim().parse(), n.trim().parse()) {
        (Ok(i), Ok(n)) => (i, n),
        _ => return Err(bad("I and N must be whole numbers")),
    };
    if n == 0 {
        return Err(bad("N must be at least 1"));
    }
    if i == 0 || i > n {
        return Err(bad(&format!(
            "I must be 1..{n} (shards are numbered from 1; a 0-based index such as JOB_COMPLETION_INDEX needs +1)"
        )));
    }
    Ok((i, n))
}

/// The points of shard `i` of `n` (1-based) in a sweep of `total`.
pub fn shard_indices(total: u64, i: u64, n: u64) -> Vec<u64> {
    (i - 1..total).step_by(n as usize).collect()
}

/// 64-bit FNV-1a: a stable hash (the same on every machine and build).
fn fnv1a(h: &mut u64, bytes: &[u8]) {
    for &b in bytes {
        *h ^= u64::from(b);
        *h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
}

/// The sweep's id: the inputs (scenario text, its job files) and the
/// definition without its id and scenario path (shards may see the
/// scenario under different paths).
pub fn sweep_id(def: &SweepDef, inputs: &[String]) -> String {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for text in inputs {
        fnv1a(&mut h, &(text.len() as u64).to_le_bytes());
        fnv1a(&mut h, text.as_bytes());
    }
    let mut d = def.clone();
    d.id = String::new();
    d.scenario = String::new();
    let json = serde_json::to_string(&d).expect("a definition serialises");
    fnv1a(&mut h, json.as_bytes());
    format!("{h:016x}")
}

/// Read the shard files and return the whole sweep: its definition (shard
/// 1's) and every point's result in order.
pub fn merge(files: &[PathBuf]) -> Result<(SweepDef, Vec<PointResult>)> {
    if files.is_empty() {
        bail!("--merge: give the shard files (blkqos sweep ... --shard=I/N --out=FILE)");
    }
    let mut shards: Vec<(PathBuf, ShardFile)> = Vec::new();
    for f in files {
        shards.push((f.clone(), read_shard(f)?));
    }
    let (first_path, first) = &shards[0];
    let n = first.shard[1];
    for (p, s) in &shards[1..] {
        if s.sweep.id != first.sweep.id {
            bail!(
                "--merge: {} is from another sweep (id {}) than {} (id {}): shards must come from the same scenario, --vary, --objective, --show, --seed, --kernel and blkqos version",
                p.display(),
                s.sweep.id,
                first_path.display(),
                first.sweep.id
            );
        }
        if s.shard[1] != n {
            bail!(
                "--merge: {} is shard {}/{}, but {} is shard {}/{n}: the sweep was split two ways",
                p.display(),
                s.shard[0],
                s.shard[1],
                first_path.display(),
                first.shard[0]
            );
        }
    }
    check_complete(&shards, n)?;
    shards.sort_by_key(|(_, s)| s.shard[0]);
    let def = shards[0].1.sweep.clone();
    let mut results: Vec<PointResult> = shards.into_iter().flat_map(|(_, s)| s.results).collect();
    results.sort_by_key(|r| r.index);
    Ok((def, results))
}

fn read_shard(f: &Path) -> Result<ShardFile> {
    let text = std::fs::read_to_string(f)
        .with_context(|| format!("--merge: cannot read {}", f.display()))?;
    let s: ShardFile = serde_json::from_str(&text).with_context(|| {
        format!(
            "--merge: {} is not a sweep shard file ({FORMAT}, written by --shard=I/N)",
            f.display()
        )
    })?;
    if s.format != FORMAT {
        bail!(
            "--merge: {}: format `{}`, expected `{FORMAT}` (written by another blkqos version?)",
            f.display(),
            s.format
        );
    }
    Ok(s)
}

/// Every shard once, and each shard holding exactly its points.
fn check_complete(shards: &[(PathBuf, ShardFile)], n: u64) -> Result<()> {
    let mut seen: Vec<Option<&Path>> = vec![None; n as usize];
    for (p, s) in shards {
        let i = s.shard[0];
        if i == 0 || i > n {
            bail!("--merge: {}: shard {i}/{n} is out of range", p.display());
        }
        if let Some(other) = seen[(i - 1) as usize] {
            bail!(
                "--merge: shard {i}/{n} is given twice: {} and {}",
                other.display(),
                p.display()
            );
        }
        seen[(i - 1) as usize] = Some(p);
        let want = shard_indices(s.sweep.points, i, n);
        let got: Vec<u64> = s.results.iter().map(|r| r.index).collect();
        let len_ok = s
            .results
            .iter()
            .all(|r| r.values.len() == s.sweep.metrics.len());
        if got != want || !len_ok {
            bail!(
                "--merge: {}: shard {i}/{n} should hold points {} ({} of them), it holds {} (an edited or truncated file?)",
                p.display(),
                list(&want),
                want.len(),
                got.len()
            );
        }
    }
    let missing: Vec<String> = seen
        .iter()
        .enumerate()
        .filter(|(_, s)| s.is_none())
        .map(|(i, _)| format!("{}/{n}", i + 1))
        .collect();
    if !missing.is_empty() {
        bail!(
            "--merge: missing shard{} {}: every shard of the sweep is needed",
            if missing.len() > 1 { "s" } else { "" },
            missing.join(", ")
        );
    }
    Ok(())
}

/// `0, 3, 6, ...` (the first few).
fn list(v: &[u64]) -> String {
    let mut s: Vec<String> = v.iter().take(4).map(u64::to_string).collect();
    if v.len() > 4 {
        s.push("...".into());
    }
    s.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_partition_the_points() {
        for total in [0u64, 1, 7, 10] {
            for n in 1..5 {
                let mut all: Vec<u64> = (1..=n).flat_map(|i| shard_indices(total, i, n)).collect();
                all.sort();
                assert_eq!(all, (0..total).collect::<Vec<_>>(), "{total} {n}");
            }
        }
        assert_eq!(shard_indices(10, 2, 3), vec![1, 4, 7]);
    }

    #[test]
    fn shard_argument() {
        assert_eq!(parse_shard("2/3"), Ok((2, 3)));
        for (s, needle) in [
            ("0/3", "1..3"),
            ("4/3", "1..3"),
            ("1/0", "at least 1"),
            ("a/3", "whole numbers"),
            ("3", "expected I/N"),
        ] {
            let e = parse_shard(s).expect_err(s);
            assert!(
                e.starts_with(&format!("--shard={s}:")) && e.contains(needle),
                "{e}"
            );
        }
    }

    #[test]
    fn fnv_reference_values() {
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        fnv1a(&mut h, b"a");
        assert_eq!(h, 0xaf63_dc4c_8601_ec8c);
    }
}
