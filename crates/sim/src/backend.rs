//! The simulator as a driver backend.

use crate::device::{DeviceModel, Released, HELD};
use crate::queue::EventQueue;
use blkqos_core::{Instant, Io, IoId};
use blkqos_driver::{Backend, Completion};
use std::cmp::Ordering;

/// Event queue + virtual clock + one device model.
pub struct SimBackend {
    now: Instant,
    device: Box<dyn DeviceModel>,
    /// Pending completions, earliest (time, sequence) first.
    events: EventQueue<Event>,
    seq: u64,
    events_processed: u64,
    /// The queue's max IO size in bytes (`max_sectors_kb`).
    max_io_bytes: u64,
    /// `queue/max_segments`.
    max_segments: u32,
    /// Requests the device holds ([`HELD`]) or whose lateness waits for
    /// their expiry ([`SimBackend::by_cpu`]), and when it releases some.
    held: usize,
    release_at: Option<Instant>,
    /// [`Backend::wait`] takes [`SimBackend::wait_slow`]: the
    /// device holds requests (`release_at`) or draws lateness at expiries
    /// (`by_cpu`).
    slow_wait: bool,
    released: Vec<Released>,
    /// Requests the device held and has released, not completed yet: when
    /// it started each (reported as [`Completion::dispatched`]).
    dispatched_at: Vec<(IoId, Instant)>,
    /// The device draws a served request's lateness at its expiry, by
    /// what the submitter's CPU runs then ([`DeviceModel::lateness_by_cpu`]):
    /// the expiries not reached yet.
    by_cpu: Option<Box<ByCpu>>,
}

/// [`SimBackend::by_cpu`]'s state.
struct ByCpu {
    /// Requests served at once, at their timer's expiry (no lateness yet).
    expiries: EventQueue<Expiry>,
}

/// A request's timer expiry: [`Event`] with what the lateness depends on.
#[derive(Clone, Copy, Debug)]
struct Expiry {
    event: Event,
    submitter: u32,
    flags: blkqos_core::IoFlags,
}

impl PartialEq for Expiry {
    fn eq(&self, o: &Self) -> bool {
        self.event == o.event
    }
}
impl Eq for Expiry {}
impl PartialOrd for Expiry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Expiry {
    fn cmp(&self, o: &Self) -> Ordering {
        self.event.cmp(&o.event)
    }
}

/// When the device started request `id`, if it held it (taken out of
/// `dispatched_at`).
#[cold]
fn take_dispatched(dispatched_at: &mut Vec<(IoId, Instant)>, id: IoId) -> Option<Instant> {
    let i = dispatched_at.iter().position(|d| d.0 == id)?;
    Some(dispatched_at.swap_remove(i).1)
}

/// A pending completion, ordered by (completion time, sequence number): ties
/// in time resolve in submission order.
#[derive(Clone, Copy, Debug)]
struct Event {
    at: Instant,
    seq: u64,
    id: IoId,
    bytes: u64,
    error: i32,
}

impl Event {
    /// (time, sequence) as one integer: a single wide comparison.
    #[inline]
    fn key(&self) -> u128 {
        (u128::from(self.at.as_ns()) << 64) | u128::from(self.seq)
    }
}

impl PartialEq for Event {
    fn eq(&self, o: &Self) -> bool {
        self.key() == o.key()
    }
}
impl Eq for Event {}
impl PartialOrd for Event {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Event {
    #[inline]
    fn cmp(&self, o: &Self) -> Ordering {
        self.key().cmp(&o.key())
    }
}

impl SimBackend {
    /// A backend for `device`, with its default max IO size.
    pub fn new(device: Box<dyn DeviceModel>) -> Self {
        let max_io_bytes = u64::from(device.default_max_sectors()) << 9;
        let by_cpu = device.lateness_by_cpu().then(|| {
            Box::new(ByCpu {
                expiries: EventQueue::with_capacity(64),
            })
        });
        SimBackend {
            now: Instant::ZERO,
            device,
            events: EventQueue::with_capacity(1024),
            seq: 0,
            events_processed: 0,
            max_io_bytes,
            max_segments: 128,
            held: 0,
            release_at: None,
            slow_wait: by_cpu.is_some(),
            released: Vec::new(),
            dispatched_at: Vec::new(),
            by_cpu,
        }
    }
    /// Set the max IO size (`queue/max_sectors_kb` × 2) in sectors.
    pub fn with_max_sectors(mut self, sectors: u32) -> Self {
        self.max_io_bytes = u64::from(sectors.max(1)) << 9;
        self
    }
    /// Set `queue/max_segments` (merges stop there).
    pub fn with_max_segments(mut self, n: u32) -> Self {
        self.max_segments = n.max(1);
        self
    }
    pub fn device(&self) -> &dyn DeviceModel {
        self.device.as_ref()
    }
    /// Number of completion events processed so far.
    pub fn events_processed(&self) -> u64 {
        self.events_processed
    }
}

/// The time a wait wakes at: the next event or the deadline, whichever
/// comes first; None when there is neither.
#[inline(always)]
fn wake_target(next: Option<Instant>, deadline: Option<Instant>) -> Option<Instant> {
    match (next, deadline) {
        (Some(n), Some(d)) => Some(n.min(d)),
        (n, d) => n.or(d),
    }
}

impl SimBackend {
    /// [`Backend::wait`] while the device holds requests or draws
    /// lateness at expiries: its next release and the next expiry are
    /// more events to wake for.
    #[cold]
    #[inline(never)]
    fn wait_slow(
        &mut self,
        deadline: Option<Instant>,
        out: &mut Vec<Completion>,
        running: &dyn Fn(u32) -> bool,
    ) {
        let mut next = self.events.peek().map(|e| e.at);
        if let Some(r) = self.release_at {
            next = Some(next.map_or(r, |n| n.min(r)));
        }
        if let Some(x) = self.by_cpu.as_ref().and_then(|b| b.expiries.peek()) {
            next = Some(next.map_or(x.event.at, |n| n.min(x.event.at)));
        }
        let Some(target) = wake_target(next, deadline) else {
            return;
        };
        self.now = self.now.max(target);
        let now = self.now;
        if self.release_at.is_some_and(|r| r <= now) {
            self.release(now);
        }
        self.expire(now, running);
        self.complete_until(now, out);
    }

    /// The device's next release, and whether waits take the slow path.
    fn set_release_at(&mut self) {
        self.release_at = self.device.next_release();
        self.slow_wait = self.release_at.is_some() || self.by_cpu.is_some();
    }

    /// `io`'s timer expires `at`: its lateness waits for then.
    #[cold]
    #[inline(never)]
    fn expiry(&mut self, io: &Io, at: Instant, error: i32) {
        let Some(b) = self.by_cpu.as_mut() else {
            return;
        };
        self.seq += 1;
        self.held += 1;
        b.expiries.push(Expiry {
            event: Event {
                at,
                seq: self.seq,
                id: io.id,
                bytes: if error == 0 { io.len } else { 0 },
                error,
            },
            submitter: io.submitter.0,
            flags: io.flags,
        });
    }

    /// The expiries due by `now` get their lateness, drawn by what each
    /// submitter's CPU runs, and become completion events.
    fn expire(&mut self, now: Instant, running: &dyn Fn(u32) -> bool) {
        let Some(b) = self.by_cpu.as_mut() else {
            return;
        };
        let (device, events, held) = (&mut self.device, &mut self.events, &mut self.held);
        b.expiries.pop_each(
            |x| x.event.at <= now,
            |x| {
                *held -= 1;
                let late = device.late_at_expiry(x.flags, running(x.submitter));
                events.push(Event {
                    at: x.event.at + blkqos_core::Duration(late),
                    ..x.event
                });
            },
        );
    }

    /// Every completion event due by `now`, in order.
    #[inline(always)]
    fn complete_until(&mut self, now: Instant, out: &mut Vec<Completion>) {
        let (processed, dispatched_at) = (&mut self.events_processed, &mut self.dispatched_at);
        self.events.pop_each(
            |e| e.at <= now,
            |e| {
                *processed += 1;
                let dispatched = if dispatched_at.is_empty() {
                    None
                } else {
                    take_dispatched(dispatched_at, e.id)
                };
                out.push(Completion {
                    id: e.id,
                    error: e.error,
                    bytes: e.bytes,
                    at: e.at,
                    issued: None,
                    dispatched,
                });
            },
        );
    }

    /// The device held the request it was given: wait for its release.
    #[cold]
    fn hold(&mut self) {
        self.held += 1;
        self.set_release_at();
    }

    /// The device's release due at `now`: its requests become completion
    /// events.
    #[cold]
    #[inline(never)]
    fn release(&mut self, now: Instant) {
        let mut released = std::mem::take(&mut self.released);
        self.device.release(now, &mut released);
        for r in released.drain(..) {
            self.held -= 1;
            self.dispatched_at.push((r.id, r.dispatched.max(now)));
            self.seq += 1;
            self.events.push(Event {
                at: r.at.max(now),
                seq: self.seq,
                id: r.id,
                bytes: r.bytes,
                error: r.error,
            });
        }
        self.released = released;
        self.set_release_at();
    }
}

impl Backend for SimBackend {
    #[inline]
    fn now(&self) -> Instant {
        self.now
    }
    fn nr_requests(&self) -> u32 {
        self.device.nr_requests()
    }
    fn capacity_bytes(&self) -> u64 {
        self.device.capacity_bytes()
    }
    fn max_io_bytes(&self) -> u64 {
        self.max_io_bytes
    }
    fn max_segments(&self) -> u32 {
        self.max_segments
    }
    #[inline]
    fn plug_merges(&self) -> bool {
        true
    }
    fn submit(&mut self, io: &Io, now: Instant) {
        let (at, error) = self.device.service(io, now);
        if at == HELD {
            self.hold();
            return;
        }
        if self.by_cpu.is_some() {
            return self.expiry(io, at.max(now), error);
        }
        let bytes = if error == 0 { io.len } else { 0 };
        self.seq += 1;
        self.events.push(Event {
            at: at.max(now),
            seq: self.seq,
            id: io.id,
            bytes,
            error,
        });
    }
    fn wait(&mut self, deadline: Option<Instant>, out: &mut Vec<Completion>) {
        self.wait_running(deadline, out, &|_| false);
    }
    #[inline(always)]
    fn wait_running(
        &mut self,
        deadline: Option<Instant>,
        out: &mut Vec<Completion>,
        running: &dyn Fn(u32) -> bool,
    ) {
        if self.slow_wait {
            return self.wait_slow(deadline, out, running);
        }
        let next = self.events.peek().map(|e| e.at);
        let Some(target) = wake_target(next, deadline) else {
            return;
        };
        self.now = self.now.max(target);
        let now = self.now;
        if next.is_none_or(|n| n > now) {
            // woken by the deadline: nothing completes
            return;
        }
        self.complete_until(now, out);
    }
    #[inline]
    fn in_flight(&self) -> usize {
        self.events.len() + self.held
    }
    fn take_submit_ns(&mut self) -> u64 {
        self.device.take_submitter_ns()
    }
    fn cpu_busy_until(&self) -> Option<Instant> {
        self.device.cpu_busy_until()
    }
}

#[cfg(test)]
mod tests {
    //! The simulator's results are part of its contract: these fingerprints
    //! were recorded before the hot-path optimisations (event heap, driver
    //! loop, statistics, random map) and must not change unless a model or
    //! fio semantics change on purpose.
    use super::*;
    use crate::device::DeviceSpec;
    use blkqos_core::{ControllerStack, Duration, GroupId};
    use blkqos_driver::run::JobSetup;
    use blkqos_driver::RunOptions;
    use blkqos_workload::{IoEngine, JobSpec, PerDir, RwMode};

    /// A request null_blk's stopped queue held reports when the worker
    /// started it (`Completion::dispatched`, the kernel's `block_rq_issue`);
    /// one the device took at once reports nothing (it started when
    /// submitted).
    #[test]
    fn held_requests_report_when_the_device_started_them() {
        let dev = DeviceSpec::parse("null,mbps=4,completion_ns=2000,cpus=2,size=1g")
            .expect("valid device");
        let mut b = SimBackend::new(dev.build());
        let io = |id: u64| Io {
            ioprio: 0,
            id: blkqos_core::IoId(id),
            submitter: blkqos_core::Submitter(0),
            group: GroupId::ROOT,
            op: blkqos_core::IoOp::Read,
            flags: blkqos_core::IoFlags::default(),
            offset: id * 4096,
            len: 4096,
            submitted_at: Instant::ZERO,
            cost_vtime: 0,
        };
        // 4 MB/s: a 20 ms tick's budget is 20 requests of 4 KiB
        for id in 0..40 {
            b.submit(&io(id), Instant(1_000));
        }
        let mut done = Vec::new();
        while done.len() < 40 {
            b.wait(Some(Instant(1_000_000_000)), &mut done);
        }
        let held: Vec<&Completion> = done.iter().filter(|c| c.dispatched.is_some()).collect();
        assert!(!held.is_empty() && held.len() < 40, "{} held", held.len());
        for c in &done {
            match c.dispatched {
                // started after it was submitted, before it completed
                Some(d) => assert!(d > Instant(1_000) && d < c.at, "{c:?}"),
                None => assert!(c.at < Instant(1_000_000), "{c:?}"),
            }
        }
    }

    /// One libaio reader on a null_blk whose interrupts come 5 µs late on
    /// a CPU its submitter runs on and 300 µs late on one it left idle
    /// (`late_busy_*`, `late_idle_*`): the device's busy time per request
    /// in ns and its share of the run.
    fn by_cpu_run(iodepth: u32, submit_ns: u64) -> (f64, f64) {
        let dev = DeviceSpec::parse(
            "null,completion_ns=20000,size=1g,late_busy_p50_ns=5000,late_busy_p99_ns=5000,\
             late_idle_p50_ns=300000,late_idle_p99_ns=300000",
        )
        .expect("valid device");
        let mut backend = SimBackend::new(dev.build());
        let mut stack = ControllerStack::pass_through();
        let mut spec = JobSpec::new("r");
        spec.rw = RwMode::RandRead;
        spec.ioengine = IoEngine::Libaio;
        spec.iodepth = iodepth;
        spec.time_based = true;
        spec.runtime = Some(Duration::from_ms(200));
        let setups = vec![JobSetup {
            spec,
            clone: 0,
            group: GroupId::ROOT,
            region_start: 0,
            region_len: dev.capacity,
            seed: 7,
            files: Vec::new(),
        }];
        let mut opts = RunOptions::default();
        opts.host.submit_ns = submit_ns;
        let r = blkqos_driver::run(&mut backend, &mut stack, setups, &opts).expect("run");
        let reads = r.disk.diskstats_fields()[0];
        assert!(reads > 100, "{reads} reads");
        (
            r.disk.busy_ns as f64 / reads as f64,
            r.disk.busy_ns as f64 / 200e6,
        )
    }

    /// null_blk's timer interrupt lands on the CPU that issued the request
    /// (`null_cmd_end_timer` arms it there): a submitter still busy in its
    /// next submit call takes it late by the busy law, one asleep in
    /// `io_getevents` (QD1) by the idle law. At QD4 with a 50 µs submit
    /// call the next call starts as the request does, so each completes
    /// 25 µs after it started and the device is busy half the time; at QD1
    /// the submitter waits, and each takes 320 µs.
    #[test]
    fn a_completion_is_late_by_what_its_submitters_cpu_runs() {
        let (qd1, _) = by_cpu_run(1, 50_000);
        assert!((qd1 - 320_000.0).abs() < 1_000.0, "QD1: {qd1} ns a request");
        let (qd4, busy) = by_cpu_run(4, 50_000);
        assert!((qd4 - 25_000.0).abs() < 1_000.0, "QD4: {qd4} ns a request");
        assert!((0.45..0.55).contains(&busy), "device busy {busy}");
    }

    /// Every count, time and statistic bit of a run, as one line.
    fn fingerprint(dev: &str, specs: Vec<JobSpec>) -> String {
        let dev = DeviceSpec::parse(dev).expect("valid device");
        let mut backend = SimBackend::new(dev.build());
        let mut stack = ControllerStack::pass_through();
        let setups = specs
            .into_iter()
            .enumerate()
            .map(|(i, spec)| JobSetup {
                spec,
                clone: i as u32,
                group: GroupId::ROOT,
                region_start: 0,
                region_len: dev.capacity,
                seed: 7 + i as u64,
                files: Vec::new(),
            })
            .collect();
        let r = blkqos_driver::run(&mut backend, &mut stack, setups, &RunOptions::default())
            .expect("run");
        let mut out = format!(
            "end={} disk={:?}",
            r.ended_at.as_ns(),
            r.disk.diskstats_fields()
        );
        out += &format!(
            " busy={} integral={}",
            r.disk.busy_ns, r.disk.inflight_integral_ns
        );
        for j in &r.jobs {
            for d in j.stats.dirs.values() {
                for s in [&d.slat, &d.clat, &d.lat, &d.bw, &d.iops] {
                    out += &format!(
                        " {}/{}/{}/{:x}/{:x}",
                        s.n,
                        s.min,
                        s.max,
                        s.mean.to_bits(),
                        s.m2.to_bits()
                    );
                }
                let p: Vec<u64> = d
                    .clat_hist
                    .percentiles(&[50.0, 99.0, 99.99])
                    .iter()
                    .map(|x| x.1)
                    .collect();
                out += &format!(" b={} p={p:?}", d.io_bytes);
            }
            out += &format!(
                " depth={:?} cb={:?}",
                j.stats.depth_level, j.stats.complete_batches
            );
        }
        out
    }

    fn qd32(norandommap: bool) -> JobSpec {
        let mut s = JobSpec::new("qd32");
        s.rw = RwMode::RandRead;
        s.ioengine = IoEngine::IoUring;
        s.iodepth = 32;
        s.time_based = true;
        s.runtime = Some(Duration::from_ms(30));
        s.norandommap = norandommap;
        s
    }

    fn mixed(i: u32) -> JobSpec {
        let mut s = JobSpec::new(format!("mix{i}"));
        s.rw = RwMode::RandRw;
        s.rwmixread = 70;
        s.ioengine = IoEngine::Libaio;
        s.iodepth = 8;
        s.bsrange = Some(PerDir {
            read: (4096, 65536),
            write: (4096, 65536),
            trim: (4096, 65536),
        });
        s.thinktime = Duration::from_us(20);
        s.thinktime_blocks = 16;
        s.time_based = true;
        s.runtime = Some(Duration::from_ms(40));
        s
    }

    /// FNV-1a: a short stand-in for a long fingerprint.
    fn fnv1a(s: &str) -> u64 {
        s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        })
    }

    /// Re-recorded when the mixed and hdd cases' block sizes, read/write
    /// mix and random offsets started to come from fio's own generators,
    /// and when the end of a job started to reap its last IOs in one
    /// getevents call (fio's `io_u_queued_complete(td, cur_depth)`).
    #[test]
    fn results_are_unchanged() {
        let cases = [
            (
                fingerprint(
                    "ssd,channels=64,read_ns=25000,jitter_pct=10,size=64g",
                    vec![qd32(true)],
                ),
                0xc870_4e0c_5de7_8c52,
            ),
            (
                fingerprint("ssd,channels=16,size=8g", vec![qd32(false)]),
                0x6b1d_aafd_cb7f_df9c,
            ),
            (
                fingerprint("ssd,size=4g", vec![mixed(0), mixed(1), mixed(2)]),
                0x589f_c03b_88c0_828f,
            ),
            (
                fingerprint("hdd,size=100g", vec![qd32(false)]),
                0x640b_028e_4cbd_41f6,
            ),
        ];
        for (got, want) in cases {
            assert_eq!(fnv1a(&got), want, "results changed: {got}");
        }
    }
}
