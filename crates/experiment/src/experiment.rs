//! An experiment: a device, knob writes and fio invocations, built from a
//! scenario file or from a command line, then run on a backend.

use crate::accounting::AccountingOptions;
use crate::failure::Failure;
use crate::streams::{ControllerTrace, SharedStreams, Streams};
use anyhow::{bail, Result};
use blkqos_core::cgroupfs::{ControllerOptions, DeviceInfo, KnobFile};
use blkqos_core::ControllerStack;
use blkqos_core::{CgroupTree, GroupId};
use blkqos_driver::run::JobSetup;
use blkqos_driver::{HostModel, RunOptions, RunResult};
use blkqos_engine::StopOnSignal;
use blkqos_fio::parse::OutputFormat;
use blkqos_sim::{DeviceSpec, SimBackend};
use blkqos_workload::spec::RwMode;
use blkqos_workload::{JobSpec, SizeSpec};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

pub use crate::invocation::Invocation;
pub use blkqos_core::cgroupfs::KnobWrite;

#[derive(Clone, Debug)]
pub struct Experiment {
    pub device: DeviceSpec,
    pub controllers: ControllerOptions,
    pub seed: u64,
    /// The device spec sets its own jitter seed (else the run's seed is used).
    pub device_seed_explicit: bool,
    /// The simulated device was chosen (`--device`, a scenario's
    /// `[device]`), not left to the default.
    pub device_given: bool,
    pub host: HostModel,
    pub writes: Vec<KnobWrite>,
    pub invocations: Vec<Invocation>,
    /// Write every group's io.stat here after the run.
    pub io_stat_out: Option<PathBuf>,
    pub accounting: AccountingOptions,
    pub pagecache: crate::pagecache::PageCacheOptions,
    /// Run on the real engine instead of the simulator.
    pub real: Option<RealOptions>,
    /// Write the controllers' per-period traces (iocost) here; `.jsonl` = JSON lines.
    pub trace_out: Option<PathBuf>,
    /// `--ktrace`: the kernel's tracepoints (iocost, block) as the
    /// kernel's trace buffer prints them ([`crate::ktrace`]).
    pub ktrace_out: Option<PathBuf>,
    /// `--parse-only`: check everything, run nothing.
    pub parse_only: bool,
    /// Check the controllers' invariants after every driver pass.
    pub check_invariants: bool,
    /// `--showcmd`: print fio's command-line form of the job files, run nothing.
    pub showcmd: Option<String>,
    /// Outputs written during the run ([`Experiment::open_streams`]).
    pub streams: Option<SharedStreams>,
    /// `--live` / `--live-json`: per-interval rows per cgroup as the run goes.
    pub live: crate::live::LiveOptions,
    /// `--status-interval=T` (ms): the reports of the run so far every T
    /// (the `status` module).
    pub status_every_ms: Option<u64>,
    /// Built from a scenario file (not fio options alone): a run whose
    /// reports all go to files prints what it ran ([`crate::run_summary`]).
    pub from_scenario: bool,
}

pub(crate) fn env_lookup(k: &str) -> Option<String> {
    std::env::var(k).ok()
}

impl Experiment {
    /// The simulated device, as `--device=SPEC` sets it; `seed_explicit`:
    /// the spec names its own `seed=` (otherwise the run's seed picks it).
    pub fn set_device(&mut self, device: DeviceSpec, seed_explicit: bool) {
        self.device = device;
        self.device_seed_explicit = seed_explicit;
        self.device_given = true;
    }

    /// `--io-max`, `--io-weight`, `--io-cost-qos`, `--io-cost-model`: a
    /// knob line for the job's cgroup (the root's for `io.cost.*`).
    pub(crate) fn knob_flag(&mut self, flag: &str, value: &str) -> Result<()> {
        let file = flag.replacen("io-", "io.", 1).replace("cost-", "cost.");
        let knob = KnobFile::from_name(&file)
            .ok_or_else(|| anyhow::anyhow!("--{flag}: not a knob file"))?;
        let cgroup = if knob.root_only() {
            "/".to_string()
        } else {
            let jobs: Vec<JobSpec> = self
                .invocations
                .iter()
                .flat_map(|i| i.jobs.jobs.iter().cloned())
                .collect();
            job_cgroup(&jobs)?
        };
        self.writes.push(KnobWrite {
            at_ns: 0,
            cgroup,
            knob,
            value: value.to_string(),
            origin: format!("--{flag}"),
        });
        Ok(())
    }
}

/// The group the one-off knob flags apply to: the jobs' `cgroup=`.
fn job_cgroup(jobs: &[JobSpec]) -> Result<String> {
    let mut groups: Vec<&str> = jobs.iter().filter_map(|j| j.cgroup.as_deref()).collect();
    groups.dedup();
    match groups.as_slice() {
        [one] if jobs.iter().all(|j| j.cgroup.is_some()) => {
            CgroupTree::normalize(one)
                .map_err(|e| anyhow::anyhow!("--io-max/--io-weight: the job's cgroup `{one}`: {e}"))
        }
        [] => bail!("--io-max/--io-weight need the job's group: add --cgroup=NAME to the job"),
        _ => bail!("--io-max/--io-weight apply to one group, but the jobs run in several: use a scenario file"),
    }
}

pub fn parse_formats(s: &str) -> Result<Vec<OutputFormat>, String> {
    s.split(',')
        .map(|f| match f.trim() {
            "normal" => Ok(OutputFormat::Normal),
            "json" => Ok(OutputFormat::Json),
            "json+" => Ok(OutputFormat::JsonPlus),
            "terse" => Ok(OutputFormat::Terse),
            o => Err(format!(
                "output_format `{o}`: use normal, json, json+ or terse"
            )),
        })
        .collect()
}

/// `file:line` of a job's section (`<command line>` for options).
fn origin(spec: &JobSpec) -> String {
    if spec.origin.line == 0 {
        spec.origin.file.clone()
    } else {
        format!("{}:{}", spec.origin.file, spec.origin.line)
    }
}

/// Where each job clone lives on the device: a file gets its own extent, a
/// device path covers the device.
struct Layout {
    next_free: u64,
    files: Vec<(String, u64, u64)>,
    /// A filename that names the whole target (the real engine's path).
    whole: Option<String>,
    /// The real engine's several files: devices get extents of their own
    /// as files do, and a file or device without `size=` has the size it
    /// has there (fio reads it: `get_file_size`), from this list.
    existing: Option<Vec<(String, u64)>>,
}

impl Layout {
    /// Bytes from `start` to the end of the file laid out around it, or
    /// of the device (fio `real_file_size - file_offset`).
    fn tail(&self, start: u64, dev: &DeviceSpec) -> u64 {
        self.files
            .iter()
            .find(|(_, s, l)| (*s..s + l).contains(&start))
            .map_or(dev.capacity, |(_, s, l)| s + l)
            .saturating_sub(start)
    }

    fn region(&mut self, spec: &JobSpec, dev: &DeviceSpec) -> Result<(u64, u64)> {
        if spec.ioengine.is_host_task() {
            // cpuio and exec have no file (fio: FIO_NOIO | FIO_DISKLESSIO)
            return Ok((0, 0));
        }
        let cap = dev.capacity;
        let name = spec
            .filename
            .clone()
            .unwrap_or_else(|| format!("{}.0.0", spec.name));
        let is_device = name.starts_with("/dev/")
            || name == dev.name
            || self.whole.as_deref() == Some(name.as_str());
        let size = match spec.size {
            Some(SizeSpec::Bytes(b)) => Some(b),
            Some(SizeSpec::Percent(p)) => Some(cap / 100 * u64::from(p)),
            None => None,
        };
        let offset = match spec.offset {
            SizeSpec::Bytes(b) => b,
            SizeSpec::Percent(p) => cap / 100 * u64::from(p),
        };
        let there = || {
            self.existing
                .as_ref()
                .and_then(|e| e.iter().find(|(n, _)| *n == name).map(|&(_, b)| b))
        };
        if is_device && self.existing.is_some() {
            return self.device_extent(spec, &name, (offset, size), there(), dev);
        }
        if is_device {
            // fio: "you need to specify valid offset=" (setup_files)
            if offset >= cap {
                bail!(
                    "job `{}` ({}): offset={offset} is at or past the end of `{name}` ({cap} bytes)",
                    spec.name,
                    origin(spec)
                );
            }
            // fio clamps the IO size to the end of a device (a 2m job on a
            // 1 MiB device reads 1 MiB and exits 0)
            let len = size.unwrap_or(cap - offset).min(cap - offset);
            return Ok((offset, len));
        }
        // fio fill_device without size: write until the file system is
        // full (fio `fixup_options`: size = -1); here, the rest of the
        // simulated device
        let fill = || {
            spec.fill_device
                .then(|| cap.saturating_sub(self.next_free + offset))
                .filter(|&b| b > 0)
        };
        // a file an earlier job laid out has its size (fio reads it)
        let laid_out = || {
            self.files
                .iter()
                .find(|(n, _, _)| *n == name)
                .map(|(_, _, len)| len.saturating_sub(offset))
                .filter(|&b| b > 0)
        };
        let existing = || there().map(|b| b.saturating_sub(offset)).filter(|&b| b > 0);
        let Some(size) = size.or_else(laid_out).or_else(existing).or_else(fill) else {
            bail!(
                "job `{}`: file `{name}` needs a size= (a simulated file has no existing size)",
                spec.name
            );
        };
        self.place(spec, &name, offset, size, dev)
    }

    /// A device among the real engine's several files: an extent of its
    /// own, of `size` (else the device's size past `offset`, which fio
    /// clamps the IO to); `/dev/null` and `/dev/zero` have none and need
    /// a size, as in fio.
    fn device_extent(
        &mut self,
        spec: &JobSpec,
        name: &str,
        (offset, size): (u64, Option<u64>),
        there: Option<u64>,
        dev: &DeviceSpec,
    ) -> Result<(u64, u64)> {
        let len = match (size, there) {
            (Some(s), Some(cap)) if cap > 0 => s.min(cap.saturating_sub(offset)),
            (Some(s), _) => s,
            (None, Some(cap)) if cap > offset => cap - offset,
            _ => bail!(
                "job `{}` ({}): `{name}` has no size of its own: give size=",
                spec.name,
                origin(spec)
            ),
        };
        if len == 0 {
            bail!(
                "job `{}` ({}): offset={offset} is at or past the end of `{name}`",
                spec.name,
                origin(spec)
            );
        }
        self.place(spec, name, offset, len, dev)
    }

    /// Clone `clone`'s region with `offset_increment` (fio
    /// `get_start_offset`: the offset plus the increment times the clone's
    /// number); a file is laid out to cover the last clone's region.
    fn clone_region(&mut self, spec: &JobSpec, clone: u32, dev: &DeviceSpec) -> Result<(u64, u64)> {
        let SizeSpec::Bytes(base) = spec.offset else {
            bail!(
                "job `{}` ({}): offset as a percentage with offset_increment is not supported: give offset in bytes",
                spec.name,
                origin(spec)
            );
        };
        let at = |n: u32| -> Result<JobSpec> {
            let off = u64::from(n)
                .checked_mul(spec.offset_increment)
                .and_then(|i| i.checked_add(base))
                .ok_or_else(|| {
                    anyhow::anyhow!("job `{}`: offset_increment overflows", spec.name)
                })?;
            Ok(JobSpec {
                offset: SizeSpec::Bytes(off),
                ..spec.clone()
            })
        };
        if clone == 0 {
            // the file covers every clone's region (fio extends it per clone)
            self.region(&at(spec.numjobs.max(1) - 1)?, dev)?;
        }
        self.region(&at(clone)?, dev)
    }

    /// The file `name` of `size` bytes (IO from `offset` in it): where an
    /// earlier job laid it out, else at the next free extent.
    fn place(
        &mut self,
        spec: &JobSpec,
        name: &str,
        offset: u64,
        size: u64,
        dev: &DeviceSpec,
    ) -> Result<(u64, u64)> {
        let cap = dev.capacity;
        if let Some((_, start, len)) = self.files.iter().find(|(n, _, _)| n == name) {
            if offset >= *len {
                bail!(
                    "job `{}` ({}): offset={offset} is at or past the end of file `{name}` ({len} bytes, laid out by an earlier job)",
                    spec.name,
                    origin(spec)
                );
            }
            return Ok((start + offset, size.min(len - offset)));
        }
        let start = self.next_free;
        let extent = offset + size;
        if start + extent > cap {
            bail!(
                "job `{}`: file `{name}` ({extent} bytes) does not fit on device {} ({cap} bytes)",
                spec.name,
                dev.name
            );
        }
        self.next_free = (start + extent).next_multiple_of(1 << 20);
        self.files.push((name.to_string(), start, extent));
        Ok((start + offset, size))
    }

    /// Clone `clone`'s files when the job has several (`nrfiles`,
    /// `filename=a:b`, `directory`, `filesize`; fio `setup_files`): each
    /// laid out on the device like a file of its own.
    fn files(&mut self, spec: &JobSpec, clone: u32, dev: &DeviceSpec) -> Result<Vec<(u64, u64)>> {
        let paths = spec
            .files
            .paths(spec.filename.as_deref(), &spec.name, clone);
        if let Some(p) = paths
            .iter()
            .find(|p| p.starts_with("/dev/") || **p == dev.name)
        {
            bail!(
                "job `{}` ({}): `{p}` is a device among several files: blkqos runs one device, so a job's several files must be files",
                spec.name,
                origin(spec)
            );
        }
        let sizes = crate::files::file_sizes(spec, paths.len(), clone, dev.capacity)?;
        let offset = match spec.offset {
            SizeSpec::Bytes(b) => b,
            SizeSpec::Percent(p) => sizes.first().copied().unwrap_or(0) / 100 * u64::from(p),
        };
        paths
            .iter()
            .zip(sizes)
            .map(|(name, size)| {
                let (start, len) = self.place(spec, name, 0, size, dev)?;
                let off = offset.min(len.saturating_sub(1));
                Ok((start + off, len - off))
            })
            .collect()
    }
}

/// The run: which invocation each job clone belongs to.
pub struct Ran {
    pub result: RunResult,
    /// For each job result, the index of its invocation.
    pub invocation_of: Vec<usize>,
    pub tree: CgroupTree,
    /// `io.stat` counters per group (own IO only), indexed by group id.
    pub iostat: Vec<blkqos_core::controller::IoStat>,
    /// Controller keys of each group's io.stat line (iocost's cost.*),
    /// indexed by group id.
    pub iostat_keys: Vec<Vec<blkqos_core::IostatKey>>,
    /// Controllers' per-period trace (text, or JSON lines for `.jsonl`).
    pub trace: String,
    /// Periods the trace had no room for (after its first
    /// `TRACE_CAPACITY`).
    pub trace_dropped: u64,
    /// What job offsets are offsets of (the real target's path, or the
    /// simulated device), for messages.
    pub target: String,
    /// A real run over several files: each file's path, start and length
    /// in the run's address space (messages name the file of an offset);
    /// empty otherwise.
    pub files: Vec<(String, u64, u64)>,
    /// Acknowledged pages the real engine's write-back buffer could not
    /// put on the target.
    pub lost_pages: u64,
    /// The device as reports name it.
    pub dev_name: String,
    pub devid: blkqos_core::DevId,
    /// A real run: the kernel's statistics of the disk under the target
    /// (fio's `disk_util`; empty when it has none); blkqos's own
    /// accounting is then reported apart. None: simulated, where blkqos's
    /// accounting is the device's.
    pub kernel_disks: Option<Vec<blkqos_fio::report::DiskUtil>>,
}

impl Experiment {
    /// Run on the simulator.
    /// The cgroup tree and the job clones of the run, laid out on a device
    /// of `capacity` bytes named `dev_name`.
    pub fn plan(&self, layout_dev: &DeviceSpec, whole: Option<&str>) -> Result<Plan> {
        self.plan_in(
            layout_dev,
            Layout {
                next_free: 0,
                files: Vec::new(),
                whole: whole.map(str::to_string),
                existing: None,
            },
        )
    }

    /// The plan of the real engine's several files on the ledger device
    /// `layout_dev`: every file and device the jobs name at an extent of
    /// its own; `existing`: the sizes of those already there.
    pub fn plan_files(
        &self,
        layout_dev: &DeviceSpec,
        existing: Vec<(String, u64)>,
    ) -> Result<Plan> {
        self.plan_in(
            layout_dev,
            Layout {
                next_free: 0,
                files: Vec::new(),
                whole: None,
                existing: Some(existing),
            },
        )
    }

    fn plan_in(&self, layout_dev: &DeviceSpec, mut layout: Layout) -> Result<Plan> {
        let mut tree = self.cgroup_tree()?;
        let mut setups = Vec::new();
        let mut invocation_of = Vec::new();
        let mut zbd = crate::zbd_plan::ZbdRun::default();
        for (i, inv) in self.invocations.iter().enumerate() {
            for spec in &inv.jobs.jobs {
                let cg = spec.cgroup.as_deref().or(inv.cgroup.as_deref());
                let group = match cg {
                    Some(p) => tree.ensure(p).map_err(|e| {
                        anyhow::anyhow!("job `{}` ({}): cgroup=`{p}`: {e}", spec.name, origin(spec))
                    })?,
                    None => GroupId::ROOT,
                };
                let multi = spec.files.is_multi(spec.filename.as_deref());
                let (start, len) = if multi || spec.offset_increment > 0 {
                    (0, 0)
                } else {
                    layout.region(spec, layout_dev)?
                };
                let mut job_spec = crate::files::with_io_size(spec);
                job_spec.control.invocation = i as u32;
                if !multi {
                    // strided zones wrap at the end of the file or device
                    job_spec.zones.file_tail_bytes = layout.tail(start, layout_dev);
                }
                for clone in 0..spec.numjobs.max(1) {
                    let files = if multi {
                        layout.files(spec, clone, layout_dev)?
                    } else {
                        Vec::new()
                    };
                    let (start, len) = match files.first() {
                        Some(&f) => f,
                        None if spec.offset_increment > 0 => {
                            layout.clone_region(spec, clone, layout_dev)?
                        }
                        None => (start, len),
                    };
                    let (start, len) = zbd.setup(&mut job_spec, start, len, layout_dev)?;
                    setups.push(JobSetup {
                        spec: job_spec.clone(),
                        clone,
                        group,
                        region_start: start,
                        region_len: len,
                        seed: self.seed ^ (setups.len() as u64).wrapping_mul(0x9E37_79B9),
                        files,
                    });
                    invocation_of.push(i);
                }
            }
        }
        Ok(Plan {
            tree,
            setups,
            invocation_of,
            extents: layout.files.iter().map(|&(_, s, l)| (s, l)).collect(),
            names: layout.files.into_iter().map(|(n, _, _)| n).collect(),
        })
    }

    /// The run's cgroups: those knobs are written to, then the jobs' (in
    /// the order [`Experiment::plan`] meets them, so ids agree).
    pub fn cgroup_tree(&self) -> Result<CgroupTree> {
        let mut tree = CgroupTree::new();
        for w in &self.writes {
            tree.ensure(&w.cgroup)
                .map_err(|e| anyhow::anyhow!("{}: {e}", w.origin))?;
        }
        for inv in &self.invocations {
            for spec in &inv.jobs.jobs {
                if let Some(p) = spec.cgroup.as_deref().or(inv.cgroup.as_deref()) {
                    tree.ensure(p).map_err(|e| {
                        anyhow::anyhow!("job `{}` ({}): cgroup=`{p}`: {e}", spec.name, origin(spec))
                    })?;
                }
            }
        }
        Ok(tree)
    }

    /// The run's job clones in the driver's order ([`Experiment::plan`]),
    /// each with its fio job number: 1-based within its invocation, clones
    /// counted (fio's `thread_number`).
    fn job_numbers(&self) -> impl Iterator<Item = (&JobSpec, usize)> {
        self.invocations.iter().flat_map(|inv| {
            inv.jobs
                .jobs
                .iter()
                .flat_map(|spec| std::iter::repeat_n(spec, spec.numjobs.max(1) as usize))
                .enumerate()
                .map(|(i, spec)| (spec, i + 1))
        })
    }

    /// Open the outputs written while the run goes: the request trace and,
    /// on the simulator, the controllers' trace (the real engine's device
    /// name is known only once its target is open: its trace is written
    /// after the run). A file that cannot be opened fails the run.
    pub fn open_streams(&mut self) -> Result<(), Failure> {
        self.open_stream_files().map_err(Failure::run)
    }

    fn open_stream_files(&mut self) -> Result<()> {
        let mut s = Streams::default();
        if let Some(p) = &self.accounting.request_trace {
            let trace = crate::request_trace::RequestTrace::create(p, self.cgroup_tree()?)?;
            s.requests = Some(trace);
        }
        if let (Some(p), None) = (&self.trace_out, &self.real) {
            s.controllers = Some(ControllerTrace::create(p, &self.device.name)?);
        }
        if let Some(p) = &self.ktrace_out {
            let dev = if self.real.is_some() {
                "target"
            } else {
                &self.device.name
            };
            s.ktrace = Some(crate::ktrace::KernelTrace::create(
                p,
                dev,
                self.device.devid,
            )?);
        }
        if self.live.is_on() {
            let tree = self.cgroup_tree()?;
            let paths = tree.ids().map(|g| tree.path(g).to_string()).collect();
            // the real engine's device is named once its target is open
            let dev = if self.real.is_some() {
                "target"
            } else {
                &self.device.name
            };
            let mut opts = self.live.clone();
            if opts.report.is_some() && self.real.is_none() {
                // the simulator writes its trace as the run goes: complete
                // by the time the live view finishes (Streams::finish)
                opts.report_trace = self
                    .trace_out
                    .clone()
                    .filter(|p| p.extension().is_some_and(|e| e == "jsonl"));
            }
            s.live = Some(crate::live::LiveView::create(&opts, dev, paths)?);
        }
        let logs = crate::job_logs::JobLogs::create(self.job_numbers())?;
        if !logs.is_empty() {
            s.job_logs = Some(logs);
        }
        if self.status_every_ms.is_some() {
            let invocation_of = self
                .invocations
                .iter()
                .enumerate()
                .flat_map(|(i, inv)| {
                    let clones: usize = inv
                        .jobs
                        .jobs
                        .iter()
                        .map(|j| j.numjobs.max(1) as usize)
                        .sum();
                    std::iter::repeat_n(i, clones)
                })
                .collect();
            s.status = Some(crate::status::StatusReports::create(
                &self.invocations,
                invocation_of,
                &self.device.name,
            )?);
        }
        self.streams = (!s.is_empty()).then(|| Arc::new(std::sync::Mutex::new(s)));
        Ok(())
    }

    /// Driver options for this experiment with a given host model.
    /// The driver's options; `signals` sets its stop and abandon flags.
    pub fn run_options(&self, host: HostModel, signals: Option<&StopOnSignal>) -> RunOptions {
        RunOptions {
            host,
            stop: signals.map(StopOnSignal::flag),
            abandon: signals.map(StopOnSignal::abandon_flag),
            // the simulator's waits take no wall time
            poll_every: None,
            ticks_mode: self.accounting.mode,
            hz: self.accounting.hz,
            tick_phase_ns: self.tick_phase_ns(),
            diskstats_every: if self.accounting.wants_snapshots() {
                Some(blkqos_core::Duration(
                    self.accounting.every_ns.unwrap_or(1_000_000_000),
                ))
            } else {
                None
            },
            // the request trace streams to its file (open_streams)
            trace_requests: false,
            check_invariants: self.check_invariants,
            sink: self.streams.clone().map(|s| s as blkqos_driver::SharedSink),
            lat_hist: self.accounting.lat_hist.is_some(),
            // the real engine's buffered IO goes through the kernel's cache
            pagecache: None,
            status_every: self.status_every_ms.map(blkqos_core::Duration::from_ms),
        }
    }

    /// Where in its jiffy the simulated run starts (ns): the explicit
    /// `tick_phase_ns`, else drawn from the seed (a real run starts at an
    /// arbitrary point of a jiffy). One phase for every jiffy user
    /// (blk-throttle, iocost's period timer, io_ticks), each taking it
    /// modulo its own tick.
    pub fn tick_phase_ns(&self) -> u64 {
        if self.controllers.tick_phase_explicit {
            return self.controllers.tick_phase_ns;
        }
        // splitmix64 of the seed (well spread for consecutive seeds), below
        // one second: each jiffy user puts its boundaries at multiples of
        // its own tick of (run time + phase)
        splitmix64(self.seed) % 1_000_000_000
    }

    /// `jiffies` when the simulated run starts: the explicit
    /// `jiffies_at_start`, else drawn from the seed (a real machine's
    /// jiffies depend on its uptime; blk-throttle rounds slice ends to
    /// absolute multiples of the slice).
    pub fn jiffies_at_start(&self) -> u64 {
        if self.controllers.jiffies_explicit {
            return self.controllers.jiffies_at_start;
        }
        splitmix64(self.seed ^ 0x6A09_E667_F3BC_C908) % (3600 * self.controllers.hz)
    }

    /// `--parse-only`: what a run checks before it starts (job layout on
    /// the device, the knob writes replayed on the controllers), nothing
    /// run; what it refuses is bad input.
    pub fn check(&self) -> Result<(), Failure> {
        self.check_plan().map_err(Failure::input)
    }

    fn check_plan(&self) -> Result<()> {
        let plan = self.plan(&self.device, None)?;
        let model = self.device.build();
        ControllerStack::from_writes(
            &self.controllers,
            &plan.tree,
            DeviceInfo {
                dev: self.device.devid,
                rotational: model.rotational(),
                nr_requests: model.nr_requests(),
            },
            &self.writes,
        )?;
        Ok(())
    }

    /// Run on the simulator, stopped (and its drain given up) by `signals`.
    pub fn run_sim(&self, signals: Option<&StopOnSignal>) -> Result<Ran, Failure> {
        self.run_sim_with(
            signals.map(StopOnSignal::flag),
            signals.map(StopOnSignal::abandon_flag),
        )
    }

    /// The controllers' options for a simulated run of `setups`: the
    /// run's jiffy phase and start, the timer lateness's seed, and blk-wbt
    /// when a job writes through the page cache or trims.
    fn sim_controllers(&self, setups: &[JobSetup]) -> ControllerOptions {
        let mut controllers = self.controllers;
        controllers.tick_phase_ns = self.tick_phase_ns() % (1_000_000_000 / controllers.hz);
        controllers.jiffies_at_start = self.jiffies_at_start();
        if let Some(l) = &mut controllers.iocost_timer_late {
            l.seed = splitmix64(self.seed ^ 0x3C6E_F372_FE94_F82B);
        }
        // blk-wbt throttles buffered writeback and discards: built when a
        // job writes through the page cache or trims (it passes the rest)
        controllers.wbt = setups.iter().any(|s| {
            let rw = s.spec.rw;
            (rw.has_write() && !s.spec.direct && !self.pagecache.disabled)
                || matches!(rw, RwMode::Trim | RwMode::RandTrim)
        });
        controllers
    }

    /// Run on the simulator with explicit stop and abandon flags
    /// ([`RunOptions::stop`], [`RunOptions::abandon`]): a plan it refuses
    /// is bad input, a run that failed a run failure.
    pub fn run_sim_with(
        &self,
        stop: Option<Arc<AtomicBool>>,
        abandon: Option<Arc<AtomicBool>>,
    ) -> Result<Ran, Failure> {
        self.simulate(stop, abandon).map_err(Failure::of_run)
    }

    fn simulate(
        &self,
        stop: Option<Arc<AtomicBool>>,
        abandon: Option<Arc<AtomicBool>>,
    ) -> Result<Ran> {
        let Plan {
            tree,
            setups,
            invocation_of,
            ..
        } = self.plan(&self.device, None)?;
        let mut dev = self.device.clone();
        if !self.device_seed_explicit {
            dev.seed = self.seed;
        }
        let model = dev.build();
        let mut stack = ControllerStack::from_writes(
            &self.sim_controllers(&setups),
            &tree,
            DeviceInfo {
                dev: self.device.devid,
                rotational: model.rotational(),
                nr_requests: model.nr_requests(),
            },
            &self.writes,
        )?;
        // traces only when written (they grow with groups × periods)
        stack.set_trace(self.trace_out.is_some() || self.ktrace_out.is_some());
        let mut backend = SimBackend::new(model).with_max_sectors(dev.max_sectors);
        let mut opts = self.run_options(
            HostModel {
                seed: self.seed,
                ..self.host
            },
            None,
        );
        opts.stop = stop;
        opts.abandon = abandon;
        opts.pagecache = self.pagecache.config();
        if let Some(pc) = opts.pagecache.as_mut() {
            // the periodic memcg statistics flush keeps its own period since
            // boot: where the run starts in it is drawn from the seed
            pc.memcg_flush_phase_ns = splitmix64(self.seed ^ 0xBB67_AE85_84CA_A73B) % 2_000_000_000;
            // and a monitor's io.stat reads theirs
            if pc.io_stat_read_every_ns > 0 {
                pc.io_stat_read_phase_ns =
                    splitmix64(self.seed ^ 0x3C6E_F372_FE94_F82B) % pc.io_stat_read_every_ns;
            }
            pc.memory_max = self
                .pagecache
                .memory_max
                .iter()
                .filter_map(|(path, bytes)| tree.get(path).map(|g| (g, *bytes)))
                .collect();
        }
        let result = blkqos_driver::run(&mut backend, &mut stack, setups, &opts)?;
        let iostat = tree.ids().map(|g| stack.iostat(g)).collect();
        let iostat_keys = tree.ids().map(|g| stack.iostat_keys(g)).collect();
        let (trace, trace_dropped) =
            trace_for(&mut stack, &self.device.name, self.trace_out.as_deref());
        Ok(Ran {
            result,
            invocation_of,
            tree,
            iostat,
            iostat_keys,
            trace,
            trace_dropped,
            target: format!("simulated device {}", self.device.name),
            files: Vec::new(),
            lost_pages: 0,
            dev_name: self.device.name.clone(),
            devid: self.device.devid,
            kernel_disks: None,
        })
    }
}

/// splitmix64: a well-spread value for consecutive seeds.
fn splitmix64(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The stack's per-period trace in the form `out` asks for: JSON lines
/// for a `.jsonl` file, text otherwise; empty when no trace is wanted. With
/// it, the periods the trace had no room for (the caller warns).
pub fn trace_for(
    stack: &mut blkqos_core::ControllerStack,
    dev: &str,
    out: Option<&std::path::Path>,
) -> (String, u64) {
    let mut s = String::new();
    let Some(p) = out else {
        return (s, 0);
    };
    let format = if p.extension().is_some_and(|e| e == "jsonl") {
        blkqos_core::controller::TraceFormat::Json
    } else {
        blkqos_core::controller::TraceFormat::Monitor
    };
    stack.drain_trace_formatted(dev, format, &mut s);
    (s, stack.trace_dropped())
}

/// Groups and job clones of a run.
pub struct Plan {
    pub tree: CgroupTree,
    pub setups: Vec<JobSetup>,
    pub invocation_of: Vec<usize>,
    /// Every file laid out on the device as (start, length): the
    /// file-call engines map an IO's offset back to its file.
    pub extents: Vec<(u64, u64)>,
    /// The path of each file of `extents`, in its order.
    pub names: Vec<String>,
}

/// Which real backend and with which consents.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct RealOptions {
    pub kind: blkqos_engine::BackendKind,
    /// The target; default: the jobs' common `filename`.
    pub path: Option<PathBuf>,
    pub allow_destructive: bool,
    pub overwrite: bool,
    /// The status line (`--eta=`).
    pub eta: crate::progress::Eta,
}
