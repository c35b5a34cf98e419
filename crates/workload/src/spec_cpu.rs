//! Where a job runs and how its thread is scheduled: `nice`,
//! `cpus_allowed`/`cpumask`, `cpus_allowed_policy`, `numa_cpu_nodes`,
//! `numa_mem_policy` (fio 3.33 `options.c`: `str_cpus_allowed_cb`,
//! `str_cpumask_cb`, `str_numa_cpunodes_cb`, `str_numa_mpol_cb`). The real
//! engine applies them to its thread; the simulator models no CPUs.

/// `cpus_allowed_policy=`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum CpusPolicy {
    /// `shared`: every clone may run on every CPU of the set.
    #[default]
    Shared,
    /// `split`: clone N runs on the set's N-th CPU (modulo its size).
    Split,
}

/// `numa_mem_policy=` modes (`MPOL_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemPolicyMode {
    Default,
    Prefer,
    Bind,
    Interleave,
    Local,
}

impl MemPolicyMode {
    /// fio's name of the mode.
    pub fn fio_name(self) -> &'static str {
        match self {
            MemPolicyMode::Default => "default",
            MemPolicyMode::Prefer => "prefer",
            MemPolicyMode::Bind => "bind",
            MemPolicyMode::Interleave => "interleave",
            MemPolicyMode::Local => "local",
        }
    }
    /// Linux's `MPOL_*` value.
    pub fn mpol(self) -> i32 {
        match self {
            MemPolicyMode::Default => 0,
            MemPolicyMode::Prefer => 1,
            MemPolicyMode::Bind => 2,
            MemPolicyMode::Interleave => 3,
            MemPolicyMode::Local => 4,
        }
    }
}

/// `numa_mem_policy=MODE[:NODES]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemPolicy {
    pub mode: MemPolicyMode,
    /// The nodes (one for `prefer`, none for `default` and `local`).
    pub nodes: Vec<u32>,
}

/// A job's CPU placement and scheduling.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct CpuSpec {
    /// `nice=N` (-20..=19).
    pub nice: Option<i32>,
    /// `cpus_allowed=` / `cpumask=`: the CPUs, sorted, distinct.
    pub cpus_allowed: Option<Vec<u32>>,
    pub cpus_policy: CpusPolicy,
    /// `numa_cpu_nodes=`: the nodes whose CPUs the job may run on.
    pub numa_cpu_nodes: Option<Vec<u32>>,
    pub numa_mem_policy: Option<MemPolicy>,
}

impl CpuSpec {
    /// Was anything asked for?
    pub fn any(&self) -> bool {
        *self != CpuSpec::default()
    }

    /// The CPUs clone `clone` may run on after `cpus_allowed_policy`
    /// (fio `thread_main`: with `split`, clone N keeps only CPU
    /// `N % count` of the set).
    pub fn clone_cpus(&self, clone: u32) -> Option<Vec<u32>> {
        let cpus = self.cpus_allowed.as_ref()?;
        match self.cpus_policy {
            CpusPolicy::Shared => Some(cpus.clone()),
            CpusPolicy::Split if cpus.is_empty() => Some(Vec::new()),
            CpusPolicy::Split => Some(vec![cpus[clone as usize % cpus.len()]]),
        }
    }
}

/// A CPU or node list as fio takes it (`set_cpus_allowed`,
/// `numa_parse_nodestring`): `0-3,6,8-9`; sorted, without duplicates.
pub fn parse_cpu_list(v: &str) -> Result<Vec<u32>, String> {
    let mut out = Vec::new();
    for part in v.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let num = |s: &str| {
            s.trim()
                .parse::<u32>()
                .map_err(|_| format!("invalid CPU or node `{s}` in `{v}`"))
        };
        match part.split_once('-') {
            Some((a, b)) => {
                let (lo, hi) = (num(a)?, num(b)?);
                if lo > hi {
                    return Err(format!("invalid range `{part}` in `{v}`"));
                }
                out.extend(lo..=hi);
            }
            None => out.push(num(part)?),
        }
    }
    if out.is_empty() {
        return Err(format!("no CPU or node in `{v}`"));
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// `cpumask=`: a bit mask of CPUs (decimal or `0x` hex).
pub fn parse_cpu_mask(v: &str) -> Result<Vec<u32>, String> {
    let t = v.trim();
    let mask = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => t.parse::<u64>(),
    }
    .map_err(|_| format!("invalid CPU mask `{v}`"))?;
    let cpus: Vec<u32> = (0..64).filter(|b| mask >> b & 1 == 1).collect();
    if cpus.is_empty() {
        return Err(format!("CPU mask `{v}` names no CPU"));
    }
    Ok(cpus)
}

/// `numa_mem_policy=` (`str_numa_mpol_cb`).
pub fn parse_mem_policy(v: &str) -> Result<MemPolicy, String> {
    let (mode, nodes) = match v.split_once(':') {
        Some((m, n)) => (m.trim(), Some(n.trim())),
        None => (v.trim(), None),
    };
    let mode = match mode {
        "default" => MemPolicyMode::Default,
        "prefer" => MemPolicyMode::Prefer,
        "bind" => MemPolicyMode::Bind,
        "interleave" => MemPolicyMode::Interleave,
        "local" => MemPolicyMode::Local,
        m => {
            return Err(format!(
                "invalid memory policy `{m}` (valid: default, prefer, bind, interleave, local)"
            ))
        }
    };
    let nodes = match (mode, nodes) {
        (MemPolicyMode::Default | MemPolicyMode::Local, None) => Vec::new(),
        (MemPolicyMode::Default | MemPolicyMode::Local, Some(_)) => {
            return Err(format!(
                "numa_mem_policy={}: this mode takes no node list",
                mode.fio_name()
            ))
        }
        (_, None) => {
            return Err(format!(
                "numa_mem_policy={} needs a node list (`{}:NODES`)",
                mode.fio_name(),
                mode.fio_name()
            ))
        }
        (MemPolicyMode::Prefer, Some(n)) => {
            let n = parse_cpu_list(n)?;
            if n.len() != 1 {
                return Err("numa_mem_policy=prefer takes one node".into());
            }
            n
        }
        (_, Some(n)) => parse_cpu_list(n)?,
    };
    Ok(MemPolicy { mode, nodes })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_masks_and_policies() {
        assert_eq!(parse_cpu_list("0-2,5,1").unwrap(), vec![0, 1, 2, 5]);
        assert!(parse_cpu_list("3-1").is_err());
        assert!(parse_cpu_list("x").is_err());
        assert_eq!(parse_cpu_mask("0x5").unwrap(), vec![0, 2]);
        assert_eq!(parse_cpu_mask("6").unwrap(), vec![1, 2]);
        assert!(parse_cpu_mask("0").is_err());
        let p = parse_mem_policy("interleave:0-1").unwrap();
        assert_eq!((p.mode, p.nodes), (MemPolicyMode::Interleave, vec![0, 1]));
        assert_eq!(parse_mem_policy("local").unwrap().mode.mpol(), 4);
        assert!(parse_mem_policy("bind").is_err());
        assert!(parse_mem_policy("prefer:0-1").is_err());
        assert!(parse_mem_policy("fast:0").is_err());
    }

    #[test]
    fn split_gives_each_clone_one_cpu() {
        let s = CpuSpec {
            cpus_allowed: Some(vec![2, 3]),
            cpus_policy: CpusPolicy::Split,
            ..CpuSpec::default()
        };
        assert_eq!(s.clone_cpus(0), Some(vec![2]));
        assert_eq!(s.clone_cpus(1), Some(vec![3]));
        assert_eq!(s.clone_cpus(2), Some(vec![2]));
        let shared = CpuSpec {
            cpus_policy: CpusPolicy::Shared,
            ..s
        };
        assert_eq!(shared.clone_cpus(1), Some(vec![2, 3]));
    }
}
