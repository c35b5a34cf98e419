//! `blkqos sweep`'s command line.

use anyhow::{bail, Result};
use std::path::PathBuf;

/// A sweep's options, checked.
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

/// `blkqos sweep`'s options as the command line gives them: checked by
/// [`SweepCli::check`] into [`SweepArgs`].
#[derive(clap::Args, Debug, Default)]
pub struct SweepCli {
    /// The scenario to sweep (.toml); with --merge, the shard files
    #[arg(value_name = "SCENARIO|SHARD.json")]
    files: Vec<PathBuf>,
    /// A knob and its values, e.g. 'io.cost.qos:rlat=1000..20000:log:8' (repeatable)
    #[arg(long, value_name = "TARGET=VALUES")]
    vary: Vec<String>,
    /// 'max|min METRIC [subject to METRIC<=N [and ...]]'
    #[arg(long, value_name = "TEXT")]
    objective: Option<String>,
    /// More metrics in the table (comma-separated, repeatable)
    #[arg(long, value_name = "METRIC,...")]
    show: Vec<String>,
    /// The report as JSON, with every metric of every point
    #[arg(long)]
    json: bool,
    /// Run shard I of N (points I-1, I-1+N, ...) and write a shard file
    #[arg(long, value_name = "I/N", value_parser = super::shard::parse_shard)]
    shard: Option<(u64, u64)>,
    /// Threads (default: all cores)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1024))]
    jobs: Option<u64>,
    /// Write the report to FILE instead of stdout
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// The scenario's seed for every point
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// A kernel profile (--kernel=6.1, 6.12, 7.2)
    #[arg(long, value_name = "VER")]
    kernel: Option<String>,
    /// Join shard files into the report of the whole sweep
    #[arg(long)]
    merge: bool,
    /// Check everything and list the points without running them
    #[arg(long = "dry-run")]
    dry_run: bool,
}

impl SweepCli {
    /// The sweep these options ask for, or why they ask for none.
    pub fn check(self) -> Result<SweepArgs> {
        let show = self
            .show
            .iter()
            .flat_map(|v| v.split(','))
            .map(|m| m.trim().to_string())
            .filter(|m| !m.is_empty())
            .collect();
        let mut a = SweepArgs {
            scenario: None,
            vary: self.vary,
            objective: self.objective,
            show,
            json: self.json,
            shard: self.shard,
            jobs: self.jobs.map(|n| n as usize),
            out: self.out,
            seed: self.seed,
            kernel: self.kernel,
            merge: None,
            dry_run: self.dry_run,
        };
        if self.merge {
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
            a.merge = Some(self.files);
            return Ok(a);
        }
        a.scenario = Some(scenario_file(&self.files)?);
        if a.vary.is_empty() {
            bail!("nothing to vary: add --vary TARGET=VALUES, e.g. --vary 'io.cost.qos:rlat=1000..20000:log:8'");
        }
        Ok(a)
    }
}

/// The one scenario file a sweep runs.
fn scenario_file(files: &[PathBuf]) -> Result<PathBuf> {
    match files {
        [one] if one.extension().is_some_and(|e| e == "toml") => Ok(one.clone()),
        [] => bail!("give a scenario (.toml) to sweep, or --merge and shard files"),
        [one] => bail!("`{}`: a sweep runs a scenario file (.toml)", one.display()),
        [_, extra, ..] => bail!("`{}`: one scenario per sweep", extra.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(clap::Parser)]
    struct Cmd {
        #[command(flatten)]
        sweep: SweepCli,
    }

    fn parse(a: &[&str]) -> Result<SweepArgs> {
        use clap::Parser;
        let argv = std::iter::once("sweep").chain(a.iter().copied());
        Cmd::try_parse_from(argv)?.sweep.check()
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
            (&["s.toml", "--bogus"][..], "unexpected argument '--bogus'"),
            (&["s.toml", "--vary"][..], "a value is required for '--vary"),
            (&["s.toml", "--vary=x=1", "--jobs=0"][..], "'0' for '--jobs"),
            (&["s.toml", "--vary=x=1", "--shard=3/2"][..], "--shard=3/2"),
            (
                &["s.toml", "--json=1"][..],
                "unexpected value '1' for '--json'",
            ),
            (&["--merge", "a.json", "--vary=x=1"][..], "only --json"),
            (&["--merge", "a.json", "--seed=2"][..], "only --json"),
            (&["--merge", "a.json", "--show=util_pct"][..], "only --json"),
        ] {
            let e = parse(a).expect_err(&a.join(" ")).to_string();
            assert!(e.contains(needle), "{a:?}: {e}");
        }
    }
}
