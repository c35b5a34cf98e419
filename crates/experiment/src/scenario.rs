//! Scenario files: one TOML file that describes an experiment the way an
//! operator would run it — a device, the cgroup knob writes exactly as
//! echoed into cgroupfs, and the fio invocations with the cgroup each runs
//! in.
//!
//! ```toml
//! seed = 1
//! cgroups = ["/cg1"]       # mkdir; groups written to below exist too
//! [device]                 # a simulated device: model + parameters
//! model = "null"
//! devid = "253:1"
//! mbps = 4
//!
//! [[write]]                # echo "VALUE" > FILE
//! file = "/sys/fs/cgroup/unified/cg1/io.max"
//! value = "253:1 riops=100 rbps=max"
//!
//! [[fio]]                  # one fio process
//! cgroup = "/cg1"
//! job_file = "r2.job"      # or job = """...""" or args = "--name=..."
//! output = "out.json"
//! output_format = "json"
//! ```

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toml::Spanned;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    /// Free text for the reader; not used by the run.
    #[allow(dead_code)]
    pub description: Option<String>,
    pub seed: Option<u64>,
    /// Cgroups to create (`mkdir`), besides those a [[write]] targets.
    #[serde(default)]
    pub cgroups: Vec<Spanned<String>>,
    pub device: Option<BTreeMap<String, Spanned<toml::Value>>>,
    pub host: Option<HostTable>,
    pub controllers: Option<BTreeMap<String, Spanned<toml::Value>>>,
    pub accounting: Option<BTreeMap<String, Spanned<toml::Value>>>,
    pub pagecache: Option<BTreeMap<String, Spanned<toml::Value>>>,
    #[serde(default)]
    pub write: Vec<WriteTable>,
    #[serde(default)]
    pub fio: Vec<FioTable>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostTable {
    pub submit_ns: Option<u64>,
    pub wake_jitter_ns: Option<u64>,
    pub timer_dispatch_ns: Option<u64>,
    pub timer_dispatch_jitter_ns: Option<u64>,
    pub writeback_piece_ns: Option<u64>,
    /// CPUs that run the jobs' processes (`HostModel::cpus`).
    pub cpus: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteTable {
    pub file: Spanned<String>,
    pub value: Spanned<String>,
    /// When to apply it ("0s", "5s", "1500ms"); default before the run.
    pub at: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FioTable {
    pub cgroup: Option<Spanned<String>>,
    pub job_file: Option<Spanned<String>>,
    pub job: Option<Spanned<String>>,
    pub args: Option<Spanned<String>>,
    pub output: Option<String>,
    pub output_format: Option<String>,
}

/// A scenario error with its location.
#[derive(Debug, thiserror::Error)]
#[error("{file}:{line}: {msg}")]
pub struct ScenarioError {
    pub file: String,
    pub line: usize,
    pub msg: String,
}

/// The source text of a scenario with line lookup.
pub struct Source {
    pub path: PathBuf,
    pub text: String,
}

impl Source {
    pub fn load(path: &Path) -> Result<Self, ScenarioError> {
        let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
            file: path.display().to_string(),
            line: 0,
            msg: format!("cannot read scenario: {e}"),
        })?;
        Ok(Source {
            path: path.to_path_buf(),
            text,
        })
    }
    /// 1-based line of a byte offset.
    pub fn line_of(&self, offset: usize) -> usize {
        self.text[..offset.min(self.text.len())]
            .matches('\n')
            .count()
            + 1
    }
    /// Byte offset of the `n`-th (0-based) `[[name]]` table header, if the
    /// text has that many (an empty table has no key to anchor errors on).
    pub fn table_header(&self, name: &str, n: usize) -> Option<usize> {
        let header = format!("[[{name}]]");
        let mut at = 0;
        let mut seen = 0;
        for line in self.text.split_inclusive('\n') {
            let t = line.trim_start();
            if t.starts_with(&header) {
                if seen == n {
                    return Some(at + (line.len() - t.len()));
                }
                seen += 1;
            }
            at += line.len();
        }
        None
    }
    pub fn err(&self, offset: usize, msg: impl Into<String>) -> ScenarioError {
        ScenarioError {
            file: self.path.display().to_string(),
            line: self.line_of(offset),
            msg: msg.into(),
        }
    }
    pub fn parse(&self) -> Result<ScenarioFile, ScenarioError> {
        toml::from_str(&self.text).map_err(|e| {
            let line = e.span().map(|s| self.line_of(s.start)).unwrap_or(0);
            ScenarioError {
                file: self.path.display().to_string(),
                line,
                msg: e.message().to_string(),
            }
        })
    }
    /// Resolve a path written in the scenario relative to its directory.
    pub fn resolve(&self, p: &str) -> PathBuf {
        let pb = PathBuf::from(p);
        if pb.is_absolute() {
            pb
        } else {
            self.path.parent().unwrap_or(Path::new(".")).join(pb)
        }
    }
    /// Line where the content of a (possibly multi-line) string literal starts.
    pub fn content_first_line(&self, span: std::ops::Range<usize>) -> usize {
        let lit = &self.text[span.start.min(self.text.len())..span.end.min(self.text.len())];
        let line = self.line_of(span.start);
        if lit.starts_with("\"\"\"") || lit.starts_with("'''") {
            // TOML trims a newline right after the opening delimiter
            if lit[3..].starts_with('\n') || lit[3..].starts_with("\r\n") {
                return line + 1;
            }
        }
        line
    }
}

/// Render a TOML scalar as the string a `key=value` parameter takes.
pub fn scalar_to_string(v: &toml::Value) -> Option<String> {
    match v {
        toml::Value::String(s) => Some(s.clone()),
        toml::Value::Integer(i) => Some(i.to_string()),
        toml::Value::Float(f) => Some(f.to_string()),
        toml::Value::Boolean(b) => Some(if *b { "1" } else { "0" }.to_string()),
        _ => None,
    }
}

/// Parse "5s", "1500ms", "250us", "0" (seconds) into nanoseconds.
pub fn parse_at(s: &str) -> Option<u64> {
    let s = s.trim();
    let idx = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(idx);
    let n: u64 = num.parse().ok()?;
    let mult = match unit.trim() {
        "" | "s" => 1_000_000_000,
        "ms" => 1_000_000,
        "us" => 1_000,
        "ns" => 1,
        "m" => 60_000_000_000,
        _ => return None,
    };
    n.checked_mul(mult)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_parsing() {
        assert_eq!(parse_at("5s"), Some(5_000_000_000));
        assert_eq!(parse_at("1500ms"), Some(1_500_000_000));
        assert_eq!(parse_at("0"), Some(0));
        assert_eq!(parse_at("5 sec"), None);
        assert_eq!(parse_at("x"), None);
    }
}
