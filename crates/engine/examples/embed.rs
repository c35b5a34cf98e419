//! Embedding blkqos's controllers in an application, without the fio layer:
//! the application makes its own reads, blkqos's cgroupfs layer builds the
//! controller stack from knob lines, the stack decides when each read may
//! go, and the engine runs it through io_uring.
//!
//! Three workers read 4 KiB blocks of one file, 16 at a time each:
//! `/batch` is capped by `io.max` (`riops=300`); `/interactive` and
//! `/background` share the rest by `io.weight` (400 and 100) under iocost,
//! whose cost model here says the device does 20,000 random 4 KiB reads a
//! second (vrate pinned at 100%: `min=100 max=100`). After a few seconds the
//! example prints each worker's IOPS and its `io.stat` counters: about 300,
//! 16,000 and 4,000.
//!
//! ```text
//! cargo run --release -p blkqos-engine --example embed -- [FILE] [SECONDS]
//! ```
//!
//! FILE (default `blkqos-embed.dat` in the temp dir) is created and laid
//! out (64 MiB) if it does not exist; an existing file is only read.
//!
//! The call protocol it follows (crates/core `controller.rs`): time never
//! goes back; every IO passes `ControllerStack::submit` once; what a stage
//! holds comes back from `on_timer` at (or after) `next_deadline`; the
//! device start and the completion are reported with `on_start` and
//! `on_complete`.

use blkqos_core::cgroupfs::{ControllerOptions, DeviceInfo, KnobFile, KnobWrite};
use blkqos_core::controller::StackVerdict;
use blkqos_core::{
    CgroupTree, ControllerStack, DevId, Duration, GroupId, Instant, Io, IoId, IoOp, Submitter,
};
use blkqos_driver::{Backend, Completion};
use blkqos_engine::{open_backend, EngineOptions};
use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

/// IOs each worker keeps in flight (or held by the controllers).
const DEPTH: usize = 16;
const BLOCK: u64 = 4096;
const FILE_BYTES: u64 = 64 << 20;

struct Worker {
    name: &'static str,
    group: GroupId,
    outstanding: usize,
    done: u64,
    rng: u64,
}

impl Worker {
    /// The next block to read (xorshift; any offset in the file).
    fn next_offset(&mut self) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        (self.rng % (FILE_BYTES / BLOCK)) * BLOCK
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("blkqos-embed.dat"));
    let secs: u64 = match args.next() {
        Some(s) => s
            .parse()
            .map_err(|_| format!("SECONDS `{s}`: expected a number"))?,
        None => 3,
    };

    let mut backend = open_backend(
        &path,
        EngineOptions {
            direct: false,
            depth: 2 * DEPTH as u32,
            max_io: BLOCK,
            size_needed: FILE_BYTES,
            reads: true,
            ..EngineOptions::default()
        },
    )?;
    // knob lines name the device holding the file, as on a real machine
    let st_dev = std::fs::metadata(&path)?.dev();
    let dev = DevId::new(
        (((st_dev >> 8) & 0xfff) | ((st_dev >> 32) & !0xfff)) as u32,
        ((st_dev & 0xff) | ((st_dev >> 12) & !0xff)) as u32,
    );

    let mut tree = CgroupTree::new();
    let batch = tree.ensure("/batch")?;
    let interactive = tree.ensure("/interactive")?;
    let background = tree.ensure("/background")?;
    // `echo LINE > /sys/fs/cgroup/CGROUP/FILE`, as a script would write them
    let knob = |cgroup: &str, knob, value: String| KnobWrite {
        at_ns: 0,
        cgroup: cgroup.into(),
        knob,
        value,
        origin: format!("embed.rs: {cgroup}"),
    };
    let writes = [
        knob("/batch", KnobFile::IoMax, format!("{dev} riops=300")),
        knob(
            "/",
            KnobFile::IoCostModel,
            format!("{dev} ctrl=user model=linear rbps=2000000000 rseqiops=20000 rrandiops=20000 wbps=2000000000 wseqiops=20000 wrandiops=20000"),
        ),
        knob("/", KnobFile::IoCostQos, format!("{dev} enable=1 ctrl=user min=100 max=100")),
        knob("/interactive", KnobFile::IoWeight, "400".into()),
        knob("/background", KnobFile::IoWeight, "100".into()),
    ];
    let mut stack = ControllerStack::from_writes(
        &ControllerOptions::default(),
        &tree,
        DeviceInfo {
            dev,
            rotational: false,
            nr_requests: backend.nr_requests(),
        },
        &writes,
    )?;

    let worker = |name, group, rng| Worker {
        name,
        group,
        outstanding: 0,
        done: 0,
        rng,
    };
    let mut workers = [
        worker("/batch", batch, 1),
        worker("/interactive", interactive, 2),
        worker("/background", background, 3),
    ];
    let mut in_flight: HashMap<IoId, (usize, Io, Instant)> = HashMap::new();
    let mut next_id = 0u64;
    let t0 = backend.now();
    let end = t0 + Duration::from_secs(secs);
    let (mut ready, mut unblocked, mut done) = (Vec::new(), Vec::new(), Vec::<Completion>::new());

    loop {
        let now = backend.now();
        // each worker tops its queue up while the run lasts
        for (w, worker) in workers.iter_mut().enumerate() {
            while now < end && worker.outstanding < DEPTH {
                next_id += 1;
                let mut io = Io {
                    ioprio: 0,
                    id: IoId(next_id),
                    submitter: Submitter(w as u32),
                    group: worker.group,
                    op: IoOp::Read,
                    flags: Default::default(),
                    offset: worker.next_offset(),
                    len: BLOCK,
                    submitted_at: now,
                    cost_vtime: 0,
                };
                worker.outstanding += 1;
                match stack.submit(&mut io, now) {
                    StackVerdict::Ready => ready.push(io),
                    // held by io.max: comes back from on_timer
                    StackVerdict::Queued | StackVerdict::Blocked => {}
                    StackVerdict::Split => unreachable!("4 KiB never needs a split"),
                }
            }
        }
        // what the controllers release now
        stack.on_timer(now, &mut ready, &mut unblocked);
        unblocked.clear();
        for io in ready.drain(..) {
            stack.on_start(&io, now, now);
            backend.submit(&io, now);
            in_flight.insert(io.id, (io.submitter.0 as usize, io, now));
        }
        if now >= end && in_flight.is_empty() && stack.held() == 0 {
            break;
        }
        // sleep until a completion or the controllers' next deadline
        let deadline = stack.next_deadline().filter(|_| stack.held() > 0);
        backend.wait(deadline.or(Some(now + Duration::from_ms(50))), &mut done);
        for c in done.drain(..) {
            let Some((w, io, started)) = in_flight.remove(&c.id) else {
                continue;
            };
            if c.error != 0 {
                return Err(format!(
                    "{}: read at {} failed: errno {}",
                    workers[w].name, io.offset, c.error
                )
                .into());
            }
            stack.on_complete(&io, started, started, c.at);
            workers[w].outstanding -= 1;
            if c.at <= end {
                workers[w].done += 1;
            }
        }
    }
    stack.check()?;

    let secs_f = secs as f64;
    println!(
        "{} for {secs} s, 4 KiB random reads, {DEPTH} per worker:",
        path.display()
    );
    for w in &workers {
        let s = stack.iostat(w.group);
        println!(
            "  {:<13} {:>8.0} IOPS   io.stat: rbytes={} rios={}",
            w.name,
            w.done as f64 / secs_f,
            s.bytes[0],
            s.ios[0]
        );
    }
    println!("  (/batch: `{dev} riops=300`; /interactive and /background: io.weight 400 and 100 of 20,000 IOPS)");
    Ok(())
}
