//! One fio process of an experiment: its jobs, its cgroup and where its
//! reports go.

use blkqos_fio::parse::{JobSet, OutputFormat};
use std::path::PathBuf;

/// One fio process.
#[derive(Clone, Debug)]
pub struct Invocation {
    pub jobs: JobSet,
    /// cgroup the process runs in (`echo $$ > cgroup.procs`); a job's own
    /// `cgroup=` option wins.
    pub cgroup: Option<String>,
    pub output: Option<PathBuf>,
    pub formats: Vec<OutputFormat>,
}
