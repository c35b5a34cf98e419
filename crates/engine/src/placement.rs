//! Where and how the engine's thread runs, as fio's `thread_main` sets up
//! a job's thread: its IO priority (`ioprio_set`), CPU nice level
//! (`setpriority`), CPUs (`sched_setaffinity`, `numa_run_on_node_mask`
//! for `numa_cpu_nodes`) and NUMA memory policy (`set_mempolicy`). The
//! thread-pool backend's workers and io_uring's kernel workers, started
//! after, inherit the CPUs, nice level and memory policy.

use std::io;

/// What to apply to the calling thread.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadPlacement {
    /// `class << 13 | level`, if the jobs set one (`prio`/`prioclass`).
    pub ioprio: Option<u16>,
    /// The CPU nice level (`nice`).
    pub nice: Option<i32>,
    /// The CPUs the thread may run on (`cpus_allowed`, `numa_cpu_nodes`).
    pub cpus: Option<Vec<u32>>,
    /// `(MPOL_* mode, nodes)`.
    pub mem_policy: Option<(i32, Vec<u32>)>,
}

/// A call that failed, named as fio names it.
#[derive(Debug, thiserror::Error)]
#[error("{call}: {error}")]
pub struct PlacementError {
    /// The system call, with what it was asked.
    pub call: String,
    /// What the kernel said.
    #[source]
    pub error: io::Error,
}

fn fail(call: impl Into<String>) -> impl FnOnce(io::Error) -> PlacementError {
    let call = call.into();
    move |error| PlacementError { call, error }
}

/// Apply `p` to the calling thread.
pub fn apply(p: &ThreadPlacement) -> Result<(), PlacementError> {
    if let Some(v) = p.ioprio {
        crate::sys::set_thread_ioprio(v).map_err(fail("ioprio_set"))?;
    }
    if let Some(n) = p.nice {
        set_nice(n).map_err(fail(format!("setpriority (nice={n})")))?;
    }
    if let Some(cpus) = &p.cpus {
        set_affinity(cpus).map_err(fail("sched_setaffinity"))?;
    }
    if let Some((mode, nodes)) = &p.mem_policy {
        set_mempolicy(*mode, nodes).map_err(fail("set_mempolicy"))?;
    }
    Ok(())
}

/// `setpriority(PRIO_PROCESS, 0, n)`: on Linux, the calling thread's nice
/// level (fio's `nice(o->nice)` in `thread_main`).
fn set_nice(n: i32) -> io::Result<()> {
    // SAFETY: plain integer arguments.
    let r = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, n) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `sched_setaffinity(0, cpus)`.
fn set_affinity(cpus: &[u32]) -> io::Result<()> {
    // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET stays within it
    // (CPUs past CPU_SETSIZE are refused first).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            if c as usize >= libc::CPU_SETSIZE as usize {
                return Err(io::Error::from_raw_os_error(libc::EINVAL));
            }
            libc::CPU_SET(c as usize, &mut set);
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// A thread's CPUs (`sched_getaffinity`; 0: the calling thread).
pub fn thread_cpus(tid: i32) -> io::Result<Vec<u32>> {
    // SAFETY: `set` is a live, correctly sized cpu_set_t.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &mut set) < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok((0..libc::CPU_SETSIZE as u32)
            .filter(|&c| libc::CPU_ISSET(c as usize, &set))
            .collect())
    }
}

/// A thread's IO priority (`ioprio_get`; 0: the calling thread).
pub fn thread_ioprio(tid: i32) -> io::Result<u16> {
    crate::sys::thread_ioprio(tid)
}

/// `set_mempolicy(mode, nodemask, maxnode)`.
fn set_mempolicy(mode: i32, nodes: &[u32]) -> io::Result<()> {
    let bits = 64usize;
    let words = nodes
        .iter()
        .map(|&n| n as usize / bits + 1)
        .max()
        .unwrap_or(1);
    let mut mask = vec![0u64; words];
    for &n in nodes {
        mask[n as usize / bits] |= 1 << (n as usize % bits);
    }
    let maxnode = (words * bits + 1) as libc::c_ulong;
    let ptr = if nodes.is_empty() {
        std::ptr::null()
    } else {
        mask.as_ptr()
    };
    // SAFETY: `mask` outlives the call and holds `maxnode - 1` bits.
    let r = unsafe {
        libc::syscall(
            libc::SYS_set_mempolicy,
            libc::c_long::from(mode),
            ptr,
            maxnode,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The CPUs of NUMA node `node` (`/sys/devices/system/node/nodeN/cpulist`,
/// what libnuma's `numa_node_to_cpus` reads).
pub fn node_cpus(node: u32) -> io::Result<Vec<u32>> {
    let path = format!("/sys/devices/system/node/node{node}/cpulist");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| io::Error::new(e.kind(), format!("{path}: {e}")))?;
    let mut out = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let num = |s: &str| {
            s.trim()
                .parse::<u32>()
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, format!("{path}: `{s}`")))
        };
        match part.split_once('-') {
            Some((a, b)) => out.extend(num(a)?..=num(b)?),
            None => out.push(num(part)?),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each case on a thread of its own: what it sets stays there.
    fn on_thread<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        std::thread::spawn(f).join().unwrap()
    }

    #[test]
    fn ioprio_and_affinity_read_back() {
        let (prio, cpus) = on_thread(|| {
            let first = thread_cpus(0).unwrap()[0];
            apply(&ThreadPlacement {
                ioprio: Some(0x4005),
                cpus: Some(vec![first]),
                ..ThreadPlacement::default()
            })
            .unwrap();
            (thread_ioprio(0).unwrap(), (thread_cpus(0).unwrap(), first))
        });
        assert_eq!(prio, 0x4005);
        assert_eq!(cpus.0, vec![cpus.1]);
    }

    #[test]
    fn node_zero_has_cpus_and_a_bad_cpu_fails() {
        if let Ok(cpus) = node_cpus(0) {
            assert!(!cpus.is_empty());
        }
        let e = on_thread(|| {
            apply(&ThreadPlacement {
                cpus: Some(vec![4000]),
                ..ThreadPlacement::default()
            })
            .unwrap_err()
            .to_string()
        });
        assert!(e.starts_with("sched_setaffinity: "), "{e}");
    }
}
