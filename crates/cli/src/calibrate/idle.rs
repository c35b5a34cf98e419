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

use crate::failure::Failure;
use anyhow::anyhow;
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

    /// How the measurement's report names it (after the runner).
    pub fn describe(self) -> &'static str {
        match self {
            CpuIdle::AsIs => "",
            CpuIdle::Poll => ", idle CPUs polling (/dev/cpu_dma_latency held at 0 us)",
        }
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
