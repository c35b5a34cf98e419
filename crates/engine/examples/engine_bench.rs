//! Engine throughput through the whole driver loop: one 4 KiB random-read
//! job (norandommap) at a given iodepth for a few seconds, on each backend.
//!
//! ```text
//! cargo run --release -p blkqos-engine --example engine_bench -- \
//!     PATH [SECONDS=5] [IODEPTH=32] [direct=0|1] [backends=io_uring,threads]
//! ```
//! Compare with fio on the same file:
//! `fio --name=b --filename=PATH --rw=randread --bs=4k --iodepth=32
//!  --ioengine=io_uring --direct=0 --norandommap --time_based --runtime=5`

use blkqos_core::{ControllerStack, Duration, GroupId};
use blkqos_driver::run::JobSetup;
use blkqos_driver::RunOptions;
use blkqos_engine::{host_model, open_backend, BackendKind, EngineOptions, StopOnSignal};
use blkqos_workload::{IoEngine, JobSpec, RwMode};
use std::path::PathBuf;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first().map(PathBuf::from) else {
        eprintln!("usage: engine_bench PATH [SECONDS] [IODEPTH] [direct=0|1] [backends]");
        std::process::exit(2);
    };
    let secs: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(5);
    let depth: u32 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(32);
    let direct = args.get(3).is_some_and(|s| s == "1");
    let kinds: Vec<BackendKind> = args
        .get(4)
        .map(|s| s.split(',').filter_map(BackendKind::parse).collect())
        .unwrap_or_else(|| vec![BackendKind::IoUring, BackendKind::Threads]);
    let size = std::fs::metadata(&path)
        .map(|m| m.len())
        .unwrap_or(0)
        .max(64 << 20);
    let stop = StopOnSignal::install().expect("signal handlers");
    for kind in kinds {
        let mut b = match open_backend(
            &path,
            EngineOptions {
                kind,
                direct,
                depth,
                max_io: 4096,
                size_needed: size,
                ..EngineOptions::default()
            },
        ) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("{kind}: {e}");
                continue;
            }
        };
        let mut spec = JobSpec::new("bench");
        spec.rw = RwMode::RandRead;
        spec.ioengine = IoEngine::IoUring;
        spec.iodepth = depth;
        spec.direct = direct;
        spec.norandommap = true;
        spec.time_based = true;
        spec.runtime = Some(Duration::from_secs(secs));
        let setup = JobSetup {
            spec,
            clone: 0,
            group: GroupId::ROOT,
            region_start: 0,
            region_len: size,
            seed: 1,
            files: Vec::new(),
        };
        let mut stack = ControllerStack::pass_through();
        let cpu0 = cpu_s();
        let r = blkqos_driver::run(
            &mut b,
            &mut stack,
            vec![setup],
            &RunOptions {
                host: host_model(),
                stop: Some(stop.flag()),
                ..RunOptions::default()
            },
        )
        .expect("run");
        let cpu = cpu_s() - cpu0;
        let d = &r.jobs[0].stats.dirs.read;
        let st = b.stats();
        println!(
            "{kind:>8} direct={} QD{depth}: {:.0} IOPS ({} IOs / {} ms), {:.2} IOs per batch, {:.2} IOs per submit call, process CPU {:.2} s{}",
            u8::from(direct),
            d.total_ios as f64 * 1000.0 / d.runtime_ms.max(1) as f64,
            d.total_ios,
            d.runtime_ms,
            st.completed as f64 / st.batches.max(1) as f64,
            st.submitted as f64 / st.submit_calls.max(1) as f64,
            cpu,
            if r.interrupted { " (interrupted)" } else { "" }
        );
    }
}

/// User + system CPU seconds of this process (/proc/self/stat, clock ticks).
fn cpu_s() -> f64 {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = s.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let t = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
    // fields 14 and 15 (utime, stime) are 11 and 12 after the comm field
    (t(11) + t(12)) / 100.0
}
