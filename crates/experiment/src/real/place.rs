//! The real engine's thread placement from the jobs' `prio`/`prioclass`,
//! `nice`, `cpus_allowed`/`cpumask` (with `cpus_allowed_policy`),
//! `numa_cpu_nodes` and `numa_mem_policy`. fio sets them on each job's
//! thread (`thread_main`); the real engine drives every job from one
//! thread, so the jobs must agree on them, and a job that wants them
//! different from another is refused with what to do instead. Each IO
//! still carries its own job's priority (and its cmdprio one) in the SQE.

use anyhow::{bail, Result};
use blkqos_engine::placement::{node_cpus, ThreadPlacement};
use blkqos_workload::spec_cpu::CpusPolicy;
use blkqos_workload::JobSpec;

/// One job clone's wishes, `None` where it has none.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Wish {
    nice: Option<i32>,
    cpus: Option<Vec<u32>>,
    mem: Option<(i32, Vec<u32>)>,
}

fn job_at(j: &JobSpec) -> String {
    format!("job `{}` ({}:{})", j.name, j.origin.file, j.origin.line)
}

/// The CPUs clone `clone` of `j` may run on: `numa_cpu_nodes`' CPUs
/// (fio `numa_run_on_node_mask`), else `cpus_allowed` after the policy.
fn clone_cpus(j: &JobSpec, clone: u32) -> Result<Option<Vec<u32>>> {
    if let Some(nodes) = &j.cpu.numa_cpu_nodes {
        let mut cpus = Vec::new();
        for &n in nodes {
            match node_cpus(n) {
                Ok(c) => cpus.extend(c),
                Err(e) => bail!(
                    "{}: numa_cpu_nodes: node {n}: {e} (this machine has no such NUMA node; \
                     `ls /sys/devices/system/node` lists the nodes)",
                    job_at(j)
                ),
            }
        }
        cpus.sort_unstable();
        cpus.dedup();
        return Ok(Some(cpus));
    }
    Ok(j.cpu.clone_cpus(clone))
}

fn wish(j: &JobSpec, clone: u32) -> Result<Wish> {
    Ok(Wish {
        nice: j.cpu.nice,
        cpus: clone_cpus(j, clone)?,
        mem: j
            .cpu
            .numa_mem_policy
            .as_ref()
            .map(|p| (p.mode.mpol(), p.nodes.clone())),
    })
}

fn describe(w: &Wish) -> String {
    let mut parts = Vec::new();
    if let Some(n) = w.nice {
        parts.push(format!("nice={n}"));
    }
    if let Some(c) = &w.cpus {
        let list: Vec<String> = c.iter().map(u32::to_string).collect();
        parts.push(format!("CPUs {}", list.join(",")));
    }
    if let Some((m, nodes)) = &w.mem {
        parts.push(format!("memory policy {m} on nodes {nodes:?}"));
    }
    if parts.is_empty() {
        "none of them".into()
    } else {
        parts.join(", ")
    }
}

/// The placement of the engine's thread for `jobs`, or why the real
/// engine cannot give each job its own.
pub(crate) fn plan(jobs: &[&JobSpec]) -> Result<ThreadPlacement> {
    let mut first: Option<(Wish, &JobSpec, u32)> = None;
    for j in jobs {
        for clone in 0..j.numjobs.max(1) {
            let w = wish(j, clone)?;
            match &first {
                None => first = Some((w, j, clone)),
                Some((f, fj, fc)) if *f != w => {
                    let split = j.cpu.cpus_policy == CpusPolicy::Split;
                    bail!(
                        "{} clone {clone} asks for {} but {} clone {fc} for {}: the real engine \
                         drives every job from one thread, so the jobs' nice, cpus_allowed/\
                         cpumask{} and numa options must agree; give every job the same \
                         values, or run the jobs in separate blkqos runs",
                        job_at(j),
                        describe(&w),
                        job_at(fj),
                        describe(f),
                        if split {
                            " (cpus_allowed_policy=split gives each clone its own CPU)"
                        } else {
                            ""
                        }
                    );
                }
                Some(_) => {}
            }
        }
    }
    let Some((w, _, _)) = first else {
        return Ok(ThreadPlacement::default());
    };
    // the thread's own IO priority when every job asks for the same one
    // (each IO carries its job's in the SQE whatever the thread's is)
    let prios: Vec<u16> = jobs.iter().map(|j| j.prio.ioprio).collect();
    let ioprio = match prios.first() {
        Some(&p) if p != 0 && prios.iter().all(|&q| q == p) => Some(p),
        _ => None,
    };
    Ok(ThreadPlacement {
        ioprio,
        nice: w.nice,
        cpus: w.cpus,
        mem_policy: w.mem,
    })
}

/// The ring flags of the jobs' io_uring options: `(sqpoll with its CPU,
/// iopoll)` (fio `sqthread_poll`, `sqthread_poll_cpu`, `hipri`). Every job
/// shares the engine's one ring, so they must agree.
pub(crate) fn ring_flags(jobs: &[&JobSpec]) -> Result<(Option<Option<u32>>, bool)> {
    let flags = |j: &JobSpec| {
        let e = &j.engine;
        (e.sqthread_poll.then_some(e.sqthread_poll_cpu), e.hipri)
    };
    let Some(first) = jobs.first() else {
        return Ok((None, false));
    };
    if let Some(j) = jobs.iter().find(|j| flags(j) != flags(first)) {
        bail!(
            "{} and {} differ in sqthread_poll/sqthread_poll_cpu/hipri: the real engine \
             submits every job's IO through one io_uring ring, whose flags are set once; \
             give every job the same values, or run the jobs in separate blkqos runs",
            job_at(j),
            job_at(first)
        );
    }
    Ok(flags(first))
}

/// Plan and apply the placement to the calling (engine) thread, before
/// the backend starts its workers.
pub(crate) fn apply(jobs: &[&JobSpec]) -> Result<()> {
    let p = plan(jobs)?;
    if p == ThreadPlacement::default() {
        return Ok(());
    }
    if let Err(e) = blkqos_engine::placement::apply(&p) {
        bail!("the real engine could not place its thread as the jobs ask: {e}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use blkqos_workload::spec_cpu::CpuSpec;

    fn job(name: &str, cpu: CpuSpec, numjobs: u32) -> JobSpec {
        let mut j = JobSpec::new(name);
        j.cpu = cpu;
        j.numjobs = numjobs;
        j
    }

    #[test]
    fn jobs_must_agree_and_split_needs_one_cpu() {
        let a = job(
            "a",
            CpuSpec {
                nice: Some(5),
                cpus_allowed: Some(vec![0]),
                ..CpuSpec::default()
            },
            2,
        );
        let p = plan(&[&a, &a.clone()]).unwrap();
        assert_eq!((p.nice, p.cpus), (Some(5), Some(vec![0])));
        let b = job("b", CpuSpec::default(), 1);
        let e = plan(&[&a, &b]).unwrap_err().to_string();
        assert!(e.contains("job `b`") && e.contains("must agree"), "{e}");
        let split = job(
            "s",
            CpuSpec {
                cpus_allowed: Some(vec![0, 1]),
                cpus_policy: CpusPolicy::Split,
                ..CpuSpec::default()
            },
            2,
        );
        let e = plan(&[&split]).unwrap_err().to_string();
        assert!(e.contains("split"), "{e}");
        let one = job(
            "s",
            CpuSpec {
                cpus_policy: CpusPolicy::Split,
                ..split.cpu.clone()
            },
            1,
        );
        assert_eq!(plan(&[&one]).unwrap().cpus, Some(vec![0]));
    }

    #[test]
    fn the_thread_takes_a_shared_job_priority() {
        let mut a = JobSpec::new("a");
        a.prio.ioprio = 0x6000;
        let mut b = a.clone();
        assert_eq!(plan(&[&a, &b]).unwrap().ioprio, Some(0x6000));
        b.prio.ioprio = 0x4000;
        assert_eq!(plan(&[&a, &b]).unwrap().ioprio, None);
    }
}
