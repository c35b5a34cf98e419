//! `blkqos sweep`'s command line.

use anyhow::{bail, Result};
use std::path::PathBuf;

/// The parsed command line.
#[derive(Debug, Default)]
pub struct SweepArgs {
    pub scenario: Option<PathBuf>,
    pub vary: Vec<String>,
    pub objective: Option<String>,
    pub show: Vec<String>,
    pub json: bool,
    pub shard: Option<(u64, u64)>,
    pub jobs: Option<usize>,
    pub out: Option<PathBuf>,
    pub seed: Option<u64>,
    pub kernel: Option<String>,
    /// `--merge`: these shard files instead of a scenario.
    pub merge: Option<Vec<PathBuf>>,
    pub dry_run: bool,
}

/// Options that take a value (`--opt=V` or `--opt V`).
const WITH_VALUE: &[&str] = &[
    "--vary",
    "--objective",
    "--show",
    "--shard",
    "--jobs",
    "--out",
    "--seed",
    "--kernel",
];

impl SweepArgs {
    pub fn parse(args: &[String]) -> Result<Self> {
        let mut a = SweepArgs::default();
        let mut files: Vec<PathBuf> = Vec::new();
        let mut merge = false;
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            if !arg.starts_with("--") {
                files.push(PathBuf::from(arg));
                continue;
            }
            let (key, inline) = match arg.split_once('=') {
                Some((k, v)) => (k, Some(v.to_string())),
                None => (arg.as_str(), None),
            };
            if !WITH_VALUE.contains(&key) {
                if inline.is_some() {
                    bail!("`{arg}`: {key} takes no value");
                }
                match key {
                    "--json" => a.json = true,
                    "--merge" => merge = true,
                    "--dry-run" => a.dry_run = true,
                    _ => bail!(
                        "`{arg}`: unknown option (see `blkqos sweep --help`: --vary, --objective, --show, --json, --shard, --jobs, --out, --seed, --kernel, --merge, --dry-run)"
                    ),
                }
                continue;
            }
            let value = match inline {
                Some(v) => v,
                None => it
                    .next()
                    .cloned()
                    .ok_or_else(|| anyhow::anyhow!("{key} needs a value"))?,
            };
            a.set(key, value)?;
        }
        if merge {
            let defining = a.shard.is_some()
                || !a.vary.is_empty()
                || a.objective.is_some()
                || !a.show.is_empty()
                || a.jobs.is_some()
                || a.seed.is_some()
                || a.kernel.is_some()
                || a.dry_run;
            if defining {
                bail!("--merge joins shard files: it takes only --json, --out and the files (the sweep is defined by the shards)");
            }
            a.merge = Some(files);
            return Ok(a);
        }
        match files.as_slice() {
            [one] if one.extension().is_some_and(|e| e == "toml") => a.scenario = Some(one.clone()),
            [] => bail!("give a scenario (.toml) to sweep, or --merge and shard files"),
            [one] => bail!("`{}`: a sweep runs a scenario file (.toml)", one.display()),
            [_, extra, ..] => bail!("`{}`: one scenario per sweep", extra.display()),
        }
        if a.vary.is_empty() {
            bail!("nothing to vary: add --vary TARGET=VALUES, e.g. --vary 'io.cost.qos:rlat=1000..20000:log:8'");
        }
        Ok(a)
    }

    fn set(&mut self, key: &str, value: String) -> Result<()> {
        let whole = |v: &str| -> Result<u64> {
            v.parse()
                .map_err(|_| anyhow::anyhow!("{key}={v}: expected a whole number"))
        };
        match key {
            "--vary" => self.vary.push(value),
            "--objective" => self.objective = Some(value),
            "--show" => self.show.extend(
                value
                    .split(',')
                    .map(|m| m.trim().to_string())
                    .filter(|m| !m.is_empty()),
            ),
            "--shard" => {
                self.shard = Some(super::shard::parse_shard(&value).map_err(anyhow::Error::msg)?)
            }
            "--jobs" => {
                let n = whole(&value)?;
                if !(1..=1024).contains(&n) {
                    bail!("--jobs={value}: expected 1..1024 threads");
                }
                self.jobs = Some(n as usize);
            }
            "--out" => self.out = Some(PathBuf::from(value)),
            "--seed" => self.seed = Some(whole(&value)?),
            "--kernel" => self.kernel = Some(value),
            _ => unreachable!("WITH_VALUE lists the keys"),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(a: &[&str]) -> Result<SweepArgs> {
        SweepArgs::parse(&a.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn both_value_forms() {
        let a = parse(&[
            "s.toml",
            "--vary",
            "io.cost.qos:rlat=1..3:3",
            "--vary=/cgB/io.weight=100,200",
            "--json",
            "--shard=2/3",
            "--jobs",
            "2",
            "--show=util_pct, vrate_pct",
        ])
        .unwrap();
        assert_eq!(a.vary.len(), 2);
        assert_eq!(a.shard, Some((2, 3)));
        assert_eq!(a.jobs, Some(2));
        assert_eq!(a.show, ["util_pct", "vrate_pct"]);
        let m = parse(&["--merge", "a.json", "b.json", "--json"]).unwrap();
        assert_eq!(m.merge.map(|f| f.len()), Some(2));
    }

    #[test]
    fn refusals() {
        for (a, needle) in [
            (&["s.toml"][..], "nothing to vary"),
            (&["--vary=x=1"][..], "give a scenario"),
            (&["s.fio", "--vary=x=1"][..], "(.toml)"),
            (&["s.toml", "--bogus"][..], "unknown option"),
            (&["s.toml", "--vary"][..], "needs a value"),
            (&["s.toml", "--vary=x=1", "--jobs=0"][..], "--jobs=0"),
            (&["s.toml", "--json=1"][..], "takes no value"),
            (&["--merge", "a.json", "--vary=x=1"][..], "only --json"),
            (&["--merge", "a.json", "--seed=2"][..], "only --json"),
            (&["--merge", "a.json", "--show=util_pct"][..], "only --json"),
        ] {
            let e = parse(a).expect_err(&a.join(" ")).to_string();
            assert!(e.contains(needle), "{a:?}: {e}");
        }
    }
}
