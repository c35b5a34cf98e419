//! `blkqos calibrate --cpu-idle=poll`: a CPU latency request of 0 µs held
//! for the whole measurement, so that idle CPUs poll instead of entering
//! an idle state. A thread that sleeps waiting for an IO (the runner, a
//! loop device's worker) then wakes without the CPU's idle exit: on bare
//! metal a C-state's exit latency, in a VM a halted vCPU's wake-up through
//! the hypervisor, which depends on how busy the host is. The request is
//! the kernel's PM QoS interface: a process writes a 32-bit latency in µs
//! to `/dev/cpu_dma_latency` and the request lasts while the file stays
//! open (the kernel's cpu_latency_qos_open/_write/_release); cyclictest
//! and tuned's latency-performance profile make the same one.

use anyhow::anyhow;
use blkqos_experiment::failure::Failure;
use std::io::Write;

/// The PM QoS file of the CPU latency request.
pub const CPU_DMA_LATENCY: &str = "/dev/cpu_dma_latency";

/// What `--cpu-idle=` asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuIdle {
    /// The CPUs' idle states as they are.
    AsIs,
    /// A 0 µs latency request: idle CPUs poll.
    Poll,
}

impl CpuIdle {
    /// `as-is` or `poll`; anything else is bad input (exit 2).
    pub fn parse(s: &str) -> Result<CpuIdle, Failure> {
        match s {
            "as-is" => Ok(CpuIdle::AsIs),
            "poll" => Ok(CpuIdle::Poll),
            _ => Err(Failure {
                code: 2,
                err: anyhow!("calibrate: --cpu-idle={s}: use as-is or poll"),
            }),
        }
    }

    /// How the measurement's report names it (after the runner). As they
    /// are, the CPUs' idle handling is named as this machine has it: the
    /// cpuidle driver (sysfs) and the CPU latency request in force, so a
    /// recorded calibration says whether wake-ups from idle states are in
    /// its times.
    pub fn describe(self) -> String {
        match self {
            CpuIdle::AsIs => as_found(
                std::fs::read_to_string(CPUIDLE_DRIVER).ok().as_deref(),
                latency_in_force_us(),
            ),
            CpuIdle::Poll => ", idle CPUs polling (/dev/cpu_dma_latency held at 0 us)".into(),
        }
    }
}

/// The cpuidle driver in use.
pub const CPUIDLE_DRIVER: &str = "/sys/devices/system/cpu/cpuidle/current_driver";

/// What `/dev/cpu_dma_latency` reads with no request held: the kernel's
/// PM_QOS_CPU_LATENCY_DEFAULT_VALUE (2000 s, include/linux/pm_qos.h).
pub const PM_QOS_NO_REQUEST_US: i32 = 2_000_000_000;

/// The CPU latency request in force, µs (the smallest one held; reading
/// needs root).
pub fn latency_in_force_us() -> Option<i32> {
    let b = std::fs::read(CPU_DMA_LATENCY).ok()?;
    Some(i32::from_ne_bytes(b.get(..4)?.try_into().ok()?))
}

/// The CPUs' idle handling from the cpuidle driver's name (None: no
/// cpuidle) and the latency request in force (None: unreadable).
pub fn as_found(driver: Option<&str>, latency_us: Option<i32>) -> String {
    let driver = driver
        .map(str::trim)
        .filter(|d| !d.is_empty() && *d != "none");
    match (driver, latency_us) {
        (None, _) => String::new(),
        (Some(_), Some(0)) => ", idle CPUs polling (a 0 us latency request in force)".into(),
        (Some(d), Some(PM_QOS_NO_REQUEST_US)) => {
            format!(", CPUs' idle states on (cpuidle {d}, no latency request)")
        }
        (Some(d), Some(us)) => {
            format!(", CPUs' idle states on (cpuidle {d}, latency request {us} us)")
        }
        (Some(d), None) => format!(", CPUs' idle states on (cpuidle {d})"),
    }
}

#[cfg(test)]
mod tests {
    use super::as_found;

    #[test]
    fn idle_handling_as_found_is_named() {
        assert_eq!(as_found(None, Some(0)), "");
        assert_eq!(as_found(Some("none\n"), Some(2_000_000_000)), "");
        assert_eq!(
            as_found(Some("haltpoll\n"), Some(2_000_000_000)),
            ", CPUs' idle states on (cpuidle haltpoll, no latency request)"
        );
        assert_eq!(
            as_found(Some("haltpoll"), Some(20)),
            ", CPUs' idle states on (cpuidle haltpoll, latency request 20 us)"
        );
        assert_eq!(
            as_found(Some("intel_idle"), None),
            ", CPUs' idle states on (cpuidle intel_idle)"
        );
        assert_eq!(
            as_found(Some("acpi_idle"), Some(0)),
            ", idle CPUs polling (a 0 us latency request in force)"
        );
    }
}

/// A held request: dropping it (closing the file) ends it.
#[derive(Debug)]
pub struct Hold {
    _file: Option<std::fs::File>,
}

/// Make the request `idle` asks for (nothing for `as-is`). A request that
/// cannot be made is bad input (exit 2), before anything is measured.
pub fn hold(idle: CpuIdle) -> Result<Hold, Failure> {
    if idle == CpuIdle::AsIs {
        return Ok(Hold { _file: None });
    }
    let refused = |e: std::io::Error| Failure {
        code: 2,
        err: anyhow!(
            "calibrate --cpu-idle=poll: cannot hold a latency request on {CPU_DMA_LATENCY}: {e} \
             (it needs root and a kernel with PM QoS)"
        ),
    };
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(CPU_DMA_LATENCY)
        .map_err(refused)?;
    f.write_all(&0i32.to_ne_bytes()).map_err(refused)?;
    Ok(Hold { _file: Some(f) })
}
