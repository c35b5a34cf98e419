//! A run's loop put together: the job slots, the loop's state, what the
//! jobs ask of it (exit rules, steady state, data checks, flows, batches,
//! the page cache), and the schedule of periodic work.

use super::{
    exit, medium, plug, split, start, steady, JobSetup, JobSlot, Loop, Periodic, RunOptions,
    SlotState, SINK_EVERY,
};
use crate::account::DiskStats;
use crate::backend::Backend;
use crate::blk::RequestQueue;
use crate::lathist::LatHists;
use crate::pagecache::{PageCache, PageCacheConfig};
use crate::slab::Slab;
use blkqos_core::{ControllerStack, Instant};
use std::sync::PoisonError;

impl<'a, B: Backend> Loop<'a, B> {
    /// The loop over `setups` on `backend` through `stack`, every job
    /// slot made at `t0` and nothing configured yet ([`Loop::configure`]).
    #[inline(never)]
    pub(super) fn new(
        backend: &'a mut B,
        stack: &'a mut ControllerStack,
        setups: Vec<JobSetup>,
        opts: &'a RunOptions,
        t0: Instant,
    ) -> Self {
        let nr = backend.nr_requests();
        // every IO is charged to its job's group: size the histograms now
        let nr_groups = setups.iter().map(|s| s.group.idx() + 1).max().unwrap_or(1);
        let max_io = backend.max_io_bytes();
        stack.set_max_io_bytes(max_io);
        let jobs: Vec<JobSlot> = setups
            .into_iter()
            .enumerate()
            .scan(0, |wall, (j, s)| {
                // fio run_threads stops starting jobs at a stonewall: every
                // later job waits for the jobs before the last stonewall
                if s.spec.stonewall && s.clone == 0 {
                    *wall = j;
                }
                Some(start::slot(j, s, t0, *wall))
            })
            .collect();
        Loop {
            backend,
            stack,
            jobs,
            flights: Slab::with_capacity(1024),
            rq: RequestQueue::new(nr),
            disk: DiskStats::new(opts.ticks_mode, if opts.hz == 0 { 1000 } else { opts.hz })
                .with_tick_phase(opts.tick_phase_ns),
            host: opts.host,
            ready: Vec::new(),
            unblocked: Vec::new(),
            comps: Vec::new(),
            deferred: std::collections::VecDeque::new(),
            rng: opts.host.seed | 1,
            sinks: super::sinks::Sinks {
                trace: opts.trace_requests.then(Vec::new),
                sink: opts
                    .sink
                    .as_ref()
                    .map(|m| m.lock().unwrap_or_else(PoisonError::into_inner)),
                requests: false,
                lat: opts.lat_hist.then(|| LatHists::new(nr_groups)),
                job_logs: false,
            },
            cache: super::buffered::Cache::default(),
            max_io,
            splits: split::Splits::default(),
            resumed: Vec::new(),
            plug: plug::Plugging::default(),
            abandoned: false,
            flows: super::flow::Flows::default(),
            exits: exit::Exits::default(),
            medium: None,
            cpus: None,
        }
    }

    /// What the jobs ask of the loop: exit rules, fio logs, steady state,
    /// data checks against the medium, flows, submit batches and the page
    /// cache; the sink is told the run started at `t0`. True when a job
    /// has a steady-state rule.
    #[inline(never)]
    pub(super) fn configure(&mut self, opts: &RunOptions, t0: Instant) -> bool {
        exit::link_waits(&mut self.jobs);
        self.exits = exit::Exits::of(&self.jobs);
        self.sinks.job_logs = self.jobs.iter().any(|s| s.job.spec().logs.any());
        let steady = steady::setup(&mut self.jobs);
        self.cpus = super::cpus::Cpus::new(opts.host.cpus, self.jobs.len());
        if medium::Medium::needed(self.jobs.iter().map(|s| s.job.spec())) {
            let contents = (0..self.jobs.len())
                .map(|j| medium::Contents::of(self.jobs[j].job.spec(), j as u32))
                .collect();
            self.medium = Some((medium::Medium::new(), contents));
        }
        for j in 0..self.jobs.len() {
            if self.jobs[j].state != SlotState::Pending {
                self.join_flow(j);
            }
        }
        self.plug.max_segments = self.backend.max_segments();
        self.sinks.requests = self.sinks.sink.as_ref().is_some_and(|s| s.wants_requests());
        if let Some(s) = &mut self.sinks.sink {
            s.started(t0);
        }
        self.plug.merges = self.backend.plug_merges();
        for s in &mut self.jobs {
            let n = s.job.submit_batch();
            // a buffered job through the page cache completes into it; the
            // null engine's IO never reaches a plug
            // an offloaded IO is submitted alone by its worker
            let through_pagecache = s.buffered && opts.pagecache.is_some();
            if n > 1 && !through_pagecache && !s.null && !s.offload {
                s.batch = Some(plug::Batch::new(n));
            }
        }
        self.plug.batched = self.jobs.iter().any(|s| s.batch.is_some());
        self.cache.pc = opts.pagecache.clone().map(|cfg| {
            // the dirty throttle counts the same jiffies as the accounting
            let cfg = PageCacheConfig {
                hz: if opts.hz == 0 { 1000 } else { opts.hz },
                tick_phase_ns: opts.tick_phase_ns,
                trace: opts.sink.is_some(),
                ..cfg
            };
            PageCache::new(cfg, t0, self.jobs.len())
        });
        steady
    }
}

impl Periodic {
    /// The schedule from `t0`: the sink's ticks, diskstats snapshots and
    /// status reports as `opts` asks, steady-state checks when `steady`.
    #[inline(never)]
    pub(super) fn new(opts: &RunOptions, t0: Instant, steady: bool) -> Self {
        let status_every = opts.status_every.filter(|d| d.as_ns() > 0);
        Periodic {
            snapshots: Vec::new(),
            snapshots_dropped: 0,
            next_sink: t0 + SINK_EVERY,
            next_snap: opts
                .diskstats_every
                .filter(|d| d.as_ns() > 0)
                .map(|d| t0 + d),
            snap_every: opts.diskstats_every,
            next_status: status_every.map(|d| t0 + d),
            status_every,
            // fio's helper thread checks steady state once a second from
            // its start
            next_steady: steady.then(|| t0 + steady::CHECK_EVERY),
            t0,
        }
    }

    /// Some snapshot, status report or steady-state check is scheduled.
    pub(super) fn any(&self) -> bool {
        self.next_snap.is_some() || self.next_status.is_some() || self.next_steady.is_some()
    }
}
