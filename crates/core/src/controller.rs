//! The controller contract and the stack that chains controllers.
//!
//! A controller is a sans-IO state machine. The driver (simulator or real
//! engine) calls it with the current time; it never reads a clock, sleeps or
//! allocates per IO on the fast path.
//!
//! ```text
//!   submit ──> [stage 0: blk-throttle] ──> [stage 1: iocost or blk-wbt] ──> device queue
//!                 │ Held (async)              │ Held (blocks submitter)
//!                 └─ on_timer releases ─>     └─ on_timer releases ─>
//! ```
//!
//! (iocost turns blk-wbt off on its device, so one of the two is stage 1.)
//!
//! The stack mirrors Linux's order: blk-throttle sees a bio at submission,
//! rq-qos policies (iocost) see it before a request is allocated. Between
//! the two the block layer splits a bio longer than the device's max IO
//! size (`bio_split_to_limits`): the stack stops such a bio after stage 0
//! ([`StackVerdict::Split`]) and the driver cuts it; each piece enters
//! stage 1 ([`ControllerStack::submit_fragment`]) and the rest goes back
//! to stage 0 flagged [`crate::IoFlags::SPLIT_REST`].

use crate::io::Io;
use crate::time::Instant;

/// What a controller decides about an IO it was just given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub enum Verdict {
    /// Pass the IO on now.
    Dispatch,
    /// The controller keeps the IO; it comes back from [`Controller::on_timer`].
    Held,
}

/// IOs a controller holds for one group at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeldLive {
    /// IOs held now.
    pub ios: u32,
    /// How long the oldest of them has waited, since it entered the block
    /// layer (`Io::submitted_at`), in ns; 0 when none is held.
    pub oldest_wait_ns: u64,
}

impl HeldLive {
    /// Count `io`, held at `now`.
    pub fn add(&mut self, io: &Io, now: Instant) {
        self.ios += 1;
        let waited = now.0.saturating_sub(io.submitted_at.0);
        self.oldest_wait_ns = self.oldest_wait_ns.max(waited);
    }
}

/// iocost's state of one group at one moment (what iocost_monitor.py
/// prints per cgroup). Shares are in parts per million of the device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IocostGroupLive {
    /// On the active list (issued IO in the current or last period).
    pub active: bool,
    /// `hweight_active` of the group (`current_hweight`): its share of the
    /// device by active weights, ppm.
    pub hweight_active_ppm: u32,
    /// `hweight_inuse` of the group (`current_hweight`): its share by
    /// in-use weights (after donation), ppm.
    pub hweight_inuse_ppm: u32,
    /// `abs_vdebt` as device time (µs at 100% vrate).
    pub debt_us: u64,
    /// `cost.usage` as `io.stat` shows it (flushed at the last period's
    /// end; µs of device time at the base vrate of each charge).
    pub usage_us: u64,
    /// Issuer delay in effect (`use_delay`), µs; 0 if none.
    pub delay_us: u64,
    /// Bios waiting on the group's wait queue (`iocg->waitq`).
    pub waiting_ios: u32,
}

/// iocost's device-wide state at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IocostDeviceLive {
    /// Enabled (`io.cost.qos enable=1`).
    pub enabled: bool,
    /// The period timer runs (some group is active).
    pub running: bool,
    /// Base vrate, parts per million of the cost model's device speed
    /// (1_000_000 = 100%; `cost.vrate` in io.stat).
    pub vrate_ppm: u64,
    /// `ioc->busy_level`.
    pub busy_level: i32,
}

/// One group's controller state at one moment, every stage merged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupLive {
    /// IOs blk-throttle (or the paced limiter) holds for the group.
    pub throttled: HeldLive,
    /// The group under iocost, when iocost is a stage.
    pub iocost: Option<IocostGroupLive>,
}

/// The stack's state at one moment, for live monitors: read-only, typed
/// (callers format it). Filled by [`ControllerStack::live`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LiveState {
    /// Device-wide iocost state, when iocost is a stage.
    pub iocost: Option<IocostDeviceLive>,
    /// By group index.
    pub groups: Vec<GroupLive>,
}

/// A controller state that must never occur, or a call that breaks the
/// call protocol (time running backwards, an IO of a group the controller
/// does not know): a bug in blkqos or in the embedder, never a result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{controller}: invariant violated: {what}")]
pub struct Violation {
    /// [`Controller::name`] of the controller that found it.
    pub controller: &'static str,
    /// The first violation, described.
    pub what: String,
}

/// A protocol breach a controller found while it ran: recorded (the first
/// one) and reported by [`Controller::check`]; a debug build panics at
/// once.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Fault(Option<String>);

impl Fault {
    /// Record `what` (the first fault is kept); panics in debug builds.
    #[track_caller]
    pub fn raise(&mut self, what: impl FnOnce() -> String) {
        if self.0.is_none() {
            let w = what();
            debug_assert!(false, "controller protocol violated: {w}");
            self.0 = Some(w);
        }
    }
    /// The recorded fault as a violation of `controller`.
    pub fn check(&self, controller: &'static str) -> Result<(), Violation> {
        match &self.0 {
            Some(w) => Err(Violation {
                controller,
                what: w.clone(),
            }),
            None => Ok(()),
        }
    }
}

/// The latest time a controller was called at. Time never runs backwards
/// for a controller: a call that goes back is a protocol fault, recorded
/// in the controller's [`Fault`], and the clock holds. One guard for every
/// stage (blk-throttle, `paced`, iocost).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Clock {
    last: Instant,
}

impl Clock {
    /// See `now`: the controller's time from here on (`now`, or the later
    /// time already seen).
    #[inline]
    pub fn see(&mut self, now: Instant, fault: &mut Fault) -> Instant {
        if now < self.last {
            let last = self.last;
            fault.raise(|| format!("time ran backwards: {} ns after {} ns", now.0, last.0));
        }
        self.last = self.last.max(now);
        self.last
    }

    /// The latest time seen.
    #[inline]
    pub fn last(&self) -> Instant {
        self.last
    }
}

/// A record of a controller's trace: typed (downcast it to the
/// controller's record type, e.g. [`crate::iocost::PeriodTrace`], through
/// `&dyn Any`), and formatted on request.
pub trait TraceRecord: std::any::Any + std::fmt::Debug + Send {
    /// Append the record for device `dev` in `format`; each line ends with
    /// a newline (a record may print nothing in a format, as a kernel
    /// tracepoint that does not fire).
    fn format(&self, dev: &str, format: TraceFormat, out: &mut String);
}

/// Append the columns a kernel trace line starts with (task-pid, CPU,
/// flags, seconds: `          blkqos-0       [000] .....     1.012345:`)
/// for an event at `at`; the simulator has no tasks or CPUs, so they are
/// blkqos's own. Every [`TraceFormat::Ftrace`] line and `--ktrace`'s
/// request lines begin with it.
pub fn ftrace_prefix(at: Instant, out: &mut String) {
    ftrace_prefix_task(at, "blkqos", 0, out);
}

/// [`ftrace_prefix`] with the task column `task-pid` of the caller's
/// choice (`--ktrace`'s `block_getrq` names the request's group there).
pub fn ftrace_prefix_task(at: Instant, task: &str, pid: u32, out: &mut String) {
    use std::fmt::Write as _;
    let ns = at.as_ns();
    let _ = write!(
        out,
        "{:>16}-{:<7} [000] ..... {:>5}.{:06}:",
        task,
        pid,
        ns / 1_000_000_000,
        ns % 1_000_000_000 / 1000
    );
}

/// The forms a controller trace is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceFormat {
    /// Text as iocost_monitor.py prints it.
    Monitor,
    /// One JSON object per line.
    Json,
    /// The kernel's own tracepoints as `/sys/kernel/tracing/trace` prints
    /// them (`iocost_ioc_vrate_adj: [dev] vrate=...`), fired when the
    /// kernel fires them, and blk-throttle's blk tracer messages on the
    /// device with this number.
    Ftrace(crate::io::DevId),
}

/// One key a controller adds to a group's `io.stat` line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IostatKey {
    /// The key as the kernel prints it (`cost.usage`).
    pub name: &'static str,
    /// Its value.
    pub value: IostatValue,
}

/// An `io.stat` value, typed so a reader never parses the line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IostatValue {
    /// A count (µs, IOs, bytes), printed as an integer.
    Count(u64),
    /// A percentage in hundredths, printed with two decimals
    /// (`cost.vrate=127.50` is `Hundredths(12750)`).
    Hundredths(u64),
}

impl std::fmt::Display for IostatKey {
    /// `name=value` as the kernel prints it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.value {
            IostatValue::Count(v) => write!(f, "{}={v}", self.name),
            IostatValue::Hundredths(v) => write!(f, "{}={}.{:02}", self.name, v / 100, v % 100),
        }
    }
}

/// The contract every IO controller implements.
///
/// A controller is `'static` (`Any`): the cgroupfs layer finds the
/// kernel's controllers among a stack's stages by type to write knob
/// lines into them ([`ControllerStack::write`]).
///
/// Call protocol: `now` never decreases from one call to the next; every IO
/// passed in belongs to an online group: one of the tree the controller
/// was built for, or added since by [`Controller::on_group_added`], and not
/// removed by [`Controller::on_group_removed`]. A controller that sees
/// either breach records a [`Fault`] ([`Controller::check`] returns it;
/// debug builds panic). The driver calls [`Controller::check`] after its
/// passes (every pass with `--check-invariants`). Embedders add and remove
/// groups through [`ControllerStack::add_group`] and
/// [`ControllerStack::remove_group`], which keep the tree and every stage
/// in step.
pub trait Controller: std::any::Any {
    /// Short name for traces and errors (`"throttle"`, `"iocost"`).
    fn name(&self) -> &'static str;

    /// An IO reaches this controller at `now`. A controller changes
    /// nothing of `io` but [`Io::cost_vtime`] (iocost's charge); a held IO
    /// is kept by value and handed back by [`Controller::on_timer`] with
    /// that charge set.
    fn on_submit(&mut self, io: &mut Io, now: Instant) -> Verdict;

    /// Release the held IOs whose time has come, in the order they must be
    /// passed on. Called at (or after) [`Controller::next_deadline`], and
    /// after completions.
    fn on_timer(&mut self, now: Instant, released: &mut Vec<Io>);

    /// Bio `bio` (past every earlier stage) joins request `rq` (its extent
    /// before the merge) instead of entering this stage on its own: the
    /// block layer's plug merge (`bio_attempt_back_merge` /
    /// `bio_attempt_front_merge` → `rq_qos_merge`). The bio completes with
    /// `rq`. Returns how long the submitting task must sleep on its way
    /// back to userspace, if the merge put its group in issuer delay
    /// (`blkcg_schedule_throttle`). A controller may add the bio's charge
    /// to `rq`'s [`Io::cost_vtime`] and change nothing else.
    fn on_merge(
        &mut self,
        _bio: &Io,
        _rq: &mut Io,
        _now: Instant,
    ) -> Option<crate::time::Duration> {
        None
    }

    /// The device started serving `io` (it got a request slot/tag).
    /// `alloc_at` is when it began waiting for a slot.
    fn on_start(&mut self, _io: &Io, _alloc_at: Instant, _now: Instant) {}

    /// `io` completed at `now`. `alloc_at`/`started_at` as in [`Controller::on_start`].
    fn on_complete(&mut self, io: &Io, alloc_at: Instant, started_at: Instant, now: Instant);

    /// The earliest time at which [`Controller::on_timer`] has work, if any.
    fn next_deadline(&self) -> Option<Instant>;

    /// Does a held IO block the task that submitted it (iocost's wait happens
    /// inside `io_submit`, so it counts as fio `slat`) rather than being
    /// queued asynchronously (blk-throttle: the submit returns, the wait is
    /// part of `clat`)?
    fn hold_blocks_submitter(&self) -> bool {
        false
    }

    /// Number of IOs currently held.
    fn held(&self) -> usize;

    /// Append the keys this controller adds to `group`'s `io.stat` line
    /// (`ioc_pd_stat`: iocost's `cost.vrate`, `cost.usage`, ...), in the
    /// kernel's order.
    fn iostat_keys(&self, _group: crate::GroupId, _out: &mut Vec<IostatKey>) {}

    /// Move the trace records gathered since the last call into `out`.
    fn drain_trace(&mut self, _out: &mut Vec<Box<dyn TraceRecord>>) {}

    /// Record per-period traces (on by default). A run that writes no
    /// trace turns them off: the records cost memory and timer time.
    fn set_trace(&mut self, _on: bool) {}

    /// Trace records not kept because the trace was not drained in time
    /// (it holds a bounded number between drains).
    fn trace_dropped(&self) -> u64 {
        0
    }

    /// Add this stage's current state to `into` (whose `groups` has one
    /// entry per group of the tree): a read-only view for live monitors.
    fn live(&self, _now: Instant, _into: &mut LiveState) {}

    /// Does this controller never hold, time or observe anything (every
    /// method a no-op, every IO dispatched)? The stack then skips it on
    /// the per-IO path. Must not change over the controller's lifetime.
    fn is_pass_through(&self) -> bool {
        false
    }

    /// Check the controller's structural invariants (counts that must
    /// agree, queues that must be armed) and report any protocol fault
    /// recorded since it was built. Cheap: the driver may call it after
    /// every pass.
    fn check(&self) -> Result<(), Violation> {
        Ok(())
    }

    /// Group `group` was created under `parent` (at `path`) at `now`: the
    /// kernel's `pd_alloc` + `pd_init` + `pd_online` for the new blkg.
    /// Groups arrive in id order, each one past the highest the
    /// controller knows (anything else is a protocol fault).
    fn on_group_added(
        &mut self,
        group: crate::GroupId,
        parent: crate::GroupId,
        path: &str,
        now: Instant,
    );

    /// Group `group` was removed (`rmdir`: the kernel's `pd_offline`, and
    /// `pd_free` once its last IO is done) at `now`. It submits nothing
    /// more (a submit is a protocol fault); what the controller holds or
    /// has in flight for it finishes as the kernel lets it finish.
    fn on_group_removed(&mut self, group: crate::GroupId, now: Instant);

    /// Submitters of `group` blocked in this controller now (tasks in the
    /// cgroup: it cannot be removed while there are any). Only controllers
    /// whose holds block the submitter
    /// ([`Controller::hold_blocks_submitter`]) have any.
    fn blocked_submitters(&self, _group: crate::GroupId) -> u32 {
        0
    }
    /// A task of `group` went to sleep in `balance_dirty_pages` at `now`
    /// (the kernel's `wb->dirty_sleep` / `bdi->last_bdp_sleep`).
    fn on_dirty_sleep(&mut self, _group: crate::GroupId, _now: Instant) {}
}

/// The controller that never holds anything: the whole pipeline runs with it
/// before any real controller is configured.
#[derive(Debug, Default, Clone)]
pub struct PassThrough;

impl Controller for PassThrough {
    fn name(&self) -> &'static str {
        "none"
    }
    fn on_submit(&mut self, _io: &mut Io, _now: Instant) -> Verdict {
        Verdict::Dispatch
    }
    fn on_timer(&mut self, _now: Instant, _released: &mut Vec<Io>) {}
    fn on_complete(&mut self, _io: &Io, _a: Instant, _s: Instant, _now: Instant) {}
    fn next_deadline(&self) -> Option<Instant> {
        None
    }
    fn held(&self) -> usize {
        0
    }
    fn is_pass_through(&self) -> bool {
        true
    }
    fn on_group_added(
        &mut self,
        _g: crate::GroupId,
        _p: crate::GroupId,
        _path: &str,
        _now: Instant,
    ) {
    }
    fn on_group_removed(&mut self, _g: crate::GroupId, _now: Instant) {}
}

/// Outcome of submitting an IO to the whole stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub enum StackVerdict {
    /// Passed every stage: send it to the device queue now.
    Ready,
    /// Queued in a stage that does not block the submitter.
    Queued,
    /// Waiting in a stage that blocks the submitter until released.
    Blocked,
    /// Cleared stage 0 but must be cut to the device's max IO size first
    /// ([`Io::needs_split`]): the caller splits it.
    Split,
}

/// `io.stat` counters of one group (`blkg_iostat`): bytes and IOs per
/// read / write / discard.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoStat {
    /// Bytes by kind: `[read, write, discard]` (flushes count as writes),
    /// io.stat's `rbytes` / `wbytes` / `dbytes`.
    pub bytes: [u64; 3],
    /// IOs by kind: `[read, write, discard]` (flushes count as writes),
    /// io.stat's `rios` / `wios` / `dios`.
    pub ios: [u64; 3],
}

impl IoStat {
    /// `blk_cgroup_bio_start`: bytes once per original bio
    /// (`BIO_CGROUP_ACCT`), one IO each time a bio or a split remainder
    /// clears blk-throttle.
    fn count(&mut self, io: &Io) {
        let k = match io.op {
            crate::io::IoOp::Read => 0,
            crate::io::IoOp::Write | crate::io::IoOp::Flush => 1,
            crate::io::IoOp::Discard => 2,
        };
        if !io.flags.contains(crate::io::IoFlags::SPLIT_REST) {
            self.bytes[k] += io.len;
        }
        self.ios[k] += 1;
    }
    /// Add `o`'s counters to these (to roll a child up into its parent).
    pub fn add(&mut self, o: &IoStat) {
        for k in 0..3 {
            self.bytes[k] += o.bytes[k];
            self.ios[k] += o.ios[k];
        }
    }
}

#[inline]
fn count_iostat(iostat: &mut Vec<IoStat>, io: &Io) {
    let g = io.group.idx();
    if iostat.len() <= g {
        iostat.resize(g + 1, IoStat::default());
    }
    iostat[g].count(io);
}

/// Controllers chained in order; an IO released by stage `k` enters stage `k+1`.
///
/// The stack also keeps each group's `io.stat` counters, counted where the
/// kernel counts them (`blk_cgroup_bio_start`): when an IO clears the first
/// stage (blk-throttle), before any rq-qos wait.
///
/// When every stage is pass-through (or there is none), the per-IO calls
/// skip the stages: no virtual calls on the simulator's hot path.
pub struct ControllerStack {
    stages: Vec<Box<dyn Controller>>,
    scratch: Vec<Io>,
    iostat: Vec<IoStat>,
    /// Every stage is pass-through ([`Controller::is_pass_through`]).
    passive: bool,
    /// The device's max IO size in bytes (`max_sectors_kb`): longer IOs
    /// stop after stage 0 to be split. `u64::MAX`: never.
    max_io_bytes: u64,
}

impl Default for ControllerStack {
    fn default() -> Self {
        ControllerStack {
            stages: Vec::new(),
            scratch: Vec::new(),
            iostat: Vec::new(),
            passive: true,
            max_io_bytes: u64::MAX,
        }
    }
}

impl ControllerStack {
    /// An empty stack: no stage, every IO is `Ready` at once.
    pub fn new() -> Self {
        Self::default()
    }
    /// A stack with only the pass-through controller.
    pub fn pass_through() -> Self {
        let mut s = Self::new();
        s.push(Box::new(PassThrough));
        s
    }
    /// A task of `group` slept in `balance_dirty_pages` at `now`: every
    /// stage that watches dirty throttling hears of it (blk-wbt's
    /// `wb_recent_wait`).
    pub fn note_dirty_sleep(&mut self, group: crate::GroupId, now: Instant) {
        for s in &mut self.stages {
            s.on_dirty_sleep(group, now);
        }
    }
    /// Append controller `c` as the next stage (stage 0 is blk-throttle's
    /// place, later stages are rq-qos policies).
    pub fn push(&mut self, c: Box<dyn Controller>) {
        self.passive &= c.is_pass_through();
        self.stages.push(c);
    }
    /// No stage ever holds or times an IO: [`ControllerStack::submit`]
    /// always says `Ready` and there are no deadlines.
    pub fn is_pass_through(&self) -> bool {
        self.passive
    }
    /// The stages in order, stage 0 first.
    pub fn stages(&self) -> impl Iterator<Item = &dyn Controller> {
        self.stages.iter().map(|b| b.as_ref())
    }
    /// The stages in order, mutably.
    pub fn stages_mut(&mut self) -> impl Iterator<Item = &mut (dyn Controller + 'static)> {
        self.stages.iter_mut().map(|b| b.as_mut())
    }
    /// Stage `i` by index, mutably (to write knobs into a running
    /// controller); `None` past the last stage.
    pub fn stage_mut(&mut self, i: usize) -> Option<&mut (dyn Controller + 'static)> {
        self.stages.get_mut(i).map(|b| b.as_mut())
    }
    /// The device's max IO size in bytes: longer reads and writes are
    /// split after stage 0. `u64::MAX` (the default): never.
    pub fn set_max_io_bytes(&mut self, bytes: u64) {
        self.max_io_bytes = bytes.max(1);
    }
    /// The device's max IO size in bytes ([`ControllerStack::set_max_io_bytes`]);
    /// `u64::MAX` if IOs are never split.
    pub fn max_io_bytes(&self) -> u64 {
        self.max_io_bytes
    }

    /// `io` cleared stage 0: count it in `io.stat`; does it stop here to
    /// be split?
    #[inline(always)]
    fn cleared_stage0(&mut self, io: &Io) -> bool {
        count_iostat(&mut self.iostat, io);
        io.needs_split(self.max_io_bytes)
    }

    /// Run stages `first..` (`first ≥ 1`: stage 0 is behind the IO).
    fn submit_from(&mut self, first: usize, io: &mut Io, now: Instant) -> StackVerdict {
        for (k, st) in self.stages.iter_mut().enumerate().skip(first) {
            if st.on_submit(io, now) == Verdict::Held {
                return if st.hold_blocks_submitter() {
                    StackVerdict::Blocked
                } else {
                    StackVerdict::Queued
                };
            }
            if k == 0 {
                count_iostat(&mut self.iostat, io);
                if io.needs_split(self.max_io_bytes) {
                    return StackVerdict::Split;
                }
            }
        }
        StackVerdict::Ready
    }

    /// `io.stat` counters of a group, its own IO only (roll up descendants
    /// with [`crate::CgroupTree`] to print what the kernel prints).
    pub fn iostat(&self, g: crate::GroupId) -> IoStat {
        self.iostat.get(g.idx()).copied().unwrap_or_default()
    }

    /// Submit a new IO (or the rest of a split one) at `now`.
    #[inline(always)]
    pub fn submit(&mut self, io: &mut Io, now: Instant) -> StackVerdict {
        if self.passive {
            return if self.cleared_stage0(io) {
                StackVerdict::Split
            } else {
                StackVerdict::Ready
            };
        }
        self.submit_from(0, io, now)
    }

    /// Stage 0 only (blk-throttle): `Ready` means the IO cleared it and
    /// must go on with [`ControllerStack::merge`] or
    /// [`ControllerStack::submit_rq_qos`]; `Queued`/`Blocked` as
    /// [`ControllerStack::submit`]; `Split` as there.
    pub fn submit_stage0(&mut self, io: &mut Io, now: Instant) -> StackVerdict {
        if self.passive || self.stages.is_empty() {
            return if self.cleared_stage0(io) {
                StackVerdict::Split
            } else {
                StackVerdict::Ready
            };
        }
        let st = &mut self.stages[0];
        if st.on_submit(io, now) == Verdict::Held {
            return if st.hold_blocks_submitter() {
                StackVerdict::Blocked
            } else {
                StackVerdict::Queued
            };
        }
        if self.cleared_stage0(io) {
            StackVerdict::Split
        } else {
            StackVerdict::Ready
        }
    }

    /// An IO that cleared stage 0 ([`ControllerStack::submit_stage0`])
    /// and merged into no request goes through the rq-qos stages.
    pub fn submit_rq_qos(&mut self, io: &mut Io, now: Instant) -> StackVerdict {
        if self.passive {
            return StackVerdict::Ready;
        }
        self.submit_from(1, io, now)
    }

    /// Bio `bio`, past stage 0, merges into request `rq` (its extent
    /// before the merge): every later stage sees the merge instead of the
    /// bio ([`Controller::on_merge`]). Returns the longest issuer delay a
    /// stage imposes on the submitting task.
    pub fn merge(&mut self, bio: &Io, rq: &mut Io, now: Instant) -> Option<crate::time::Duration> {
        if self.passive {
            return None;
        }
        self.stages
            .iter_mut()
            .skip(1)
            .filter_map(|st| st.on_merge(bio, rq, now))
            .max()
    }

    /// A piece cut from the front of a bio that cleared stage 0 (after
    /// [`StackVerdict::Split`]) enters stage 1 at `now`: never `Split`.
    pub fn submit_fragment(&mut self, frag: &mut Io, now: Instant) -> StackVerdict {
        if self.passive {
            return StackVerdict::Ready;
        }
        self.submit_from(1, frag, now)
    }

    /// Run every stage's timer work at `now`. IOs that clear the whole stack
    /// are appended to `ready` (in release order), and so are IOs released
    /// by stage 0 that must be split first ([`Io::needs_split`] with
    /// [`ControllerStack::max_io_bytes`]). `unblocked` receives IOs
    /// that leave a submitter-blocking stage (their submitter may continue),
    /// whether they are ready or went on to queue in a later stage.
    pub fn on_timer(&mut self, now: Instant, ready: &mut Vec<Io>, unblocked: &mut Vec<Io>) {
        if self.passive {
            return;
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        for k in 0..self.stages.len() {
            scratch.clear();
            self.stages[k].on_timer(now, &mut scratch);
            if scratch.is_empty() {
                continue;
            }
            let blocking = self.stages[k].hold_blocks_submitter();
            for mut io in scratch.drain(..) {
                if k == 0 && self.cleared_stage0(&io) {
                    ready.push(io);
                    continue;
                }
                let v = self.submit_from(k + 1, &mut io, now);
                if blocking {
                    unblocked.push(io);
                }
                match v {
                    StackVerdict::Ready => ready.push(io),
                    StackVerdict::Queued | StackVerdict::Blocked | StackVerdict::Split => {}
                }
            }
        }
        self.scratch = scratch;
    }

    /// The device started serving `io` at `now` (it got a request slot);
    /// `alloc_at` is when it began waiting for one. Forwarded to every stage
    /// ([`Controller::on_start`]).
    #[inline]
    pub fn on_start(&mut self, io: &Io, alloc_at: Instant, now: Instant) {
        if self.passive {
            return;
        }
        for st in &mut self.stages {
            st.on_start(io, alloc_at, now);
        }
    }

    /// `io` completed at `now`: forwarded to every stage
    /// ([`Controller::on_complete`]); `alloc_at` and `started_at` as in
    /// [`ControllerStack::on_start`].
    #[inline]
    pub fn on_complete(&mut self, io: &Io, alloc_at: Instant, started_at: Instant, now: Instant) {
        if self.passive {
            return;
        }
        for st in &mut self.stages {
            st.on_complete(io, alloc_at, started_at, now);
        }
    }

    /// The earliest deadline of any stage ([`Controller::next_deadline`]):
    /// call [`ControllerStack::on_timer`] then. `None` if no stage has timer
    /// work.
    #[inline]
    pub fn next_deadline(&self) -> Option<Instant> {
        if self.passive {
            return None;
        }
        self.stages.iter().filter_map(|s| s.next_deadline()).min()
    }

    /// IOs held by all stages together, now.
    pub fn held(&self) -> usize {
        self.stages.iter().map(|s| s.held()).sum()
    }

    /// Every stage's [`Controller::check`]: the first violation.
    pub fn check(&self) -> Result<(), Violation> {
        self.stages.iter().try_for_each(|s| s.check())
    }

    /// Every stage's `io.stat` keys for a group.
    pub fn iostat_keys(&self, g: crate::GroupId) -> Vec<IostatKey> {
        let mut out = Vec::new();
        for st in &self.stages {
            st.iostat_keys(g, &mut out);
        }
        out
    }

    /// Record traces in every stage, or in none.
    pub fn set_trace(&mut self, on: bool) {
        for s in &mut self.stages {
            s.set_trace(on);
        }
    }

    /// Every stage's trace records since the last call, typed.
    pub fn drain_trace(&mut self, out: &mut Vec<Box<dyn TraceRecord>>) {
        for s in &mut self.stages {
            s.drain_trace(out);
        }
    }

    /// Every stage's trace records since the last call, formatted for the
    /// device named `dev` in `format`.
    pub fn drain_trace_formatted(&mut self, dev: &str, format: TraceFormat, out: &mut String) {
        let mut recs = Vec::new();
        self.drain_trace(&mut recs);
        for r in &recs {
            r.format(dev, format, out);
        }
    }

    /// Every stage's state at `now` for `nr_groups` groups (replaces
    /// `into`'s contents, reusing its memory).
    pub fn live(&self, now: Instant, nr_groups: usize, into: &mut LiveState) {
        into.iocost = None;
        into.groups.clear();
        into.groups.resize(nr_groups, GroupLive::default());
        for s in &self.stages {
            s.live(now, into);
        }
    }

    /// Create the group at `path` (and any missing ancestor, as `mkdir -p`
    /// does) in `tree` and in every stage at `now`; returns its id. A
    /// path that exists already is returned as it is.
    pub fn add_group(
        &mut self,
        tree: &mut crate::CgroupTree,
        path: &str,
        now: Instant,
    ) -> Result<crate::GroupId, crate::cgroup::BadCgroupPath> {
        let before = tree.len();
        let g = tree.ensure(path)?;
        for id in before..tree.len() {
            let id = crate::GroupId(id as u32);
            let parent = tree.parent(id).unwrap_or(crate::GroupId::ROOT);
            for st in &mut self.stages {
                st.on_group_added(id, parent, tree.path(id), now);
            }
        }
        Ok(g)
    }

    /// Remove `group` from `tree` and from every stage at `now` (`rmdir`).
    /// Refused, with nothing changed, for the root, a group removed
    /// already, one with child groups, or one with submitters blocked in a
    /// stage (tasks still in the cgroup). IOs it has queued or in flight
    /// finish ([`Controller::on_group_removed`]); its `io.stat` counters
    /// stay readable.
    pub fn remove_group(
        &mut self,
        tree: &mut crate::CgroupTree,
        group: crate::GroupId,
        now: Instant,
    ) -> Result<(), crate::RemoveGroupError> {
        if tree.is_online(group) && group != crate::GroupId::ROOT && tree.children(group).is_empty()
        {
            for st in &self.stages {
                let tasks = st.blocked_submitters(group);
                if tasks > 0 {
                    return Err(crate::RemoveGroupError::Busy {
                        path: tree.path(group).to_string(),
                        tasks,
                        controller: st.name(),
                    });
                }
            }
        }
        tree.remove(group)?;
        for st in &mut self.stages {
            st.on_group_removed(group, now);
        }
        Ok(())
    }

    /// Every stage's trace records not kept ([`Controller::trace_dropped`]).
    pub fn trace_dropped(&self) -> u64 {
        self.stages.iter().map(|s| s.trace_dropped()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{GroupId, IoFlags, IoId, IoOp};

    /// Holds every IO until 10 ns after it arrived.
    struct Delay10(Vec<(Instant, Io)>, bool);
    impl Controller for Delay10 {
        fn name(&self) -> &'static str {
            "delay10"
        }
        fn on_submit(&mut self, io: &mut Io, now: Instant) -> Verdict {
            self.0.push((Instant(now.0 + 10), *io));
            Verdict::Held
        }
        fn on_timer(&mut self, now: Instant, out: &mut Vec<Io>) {
            while let Some(&(t, io)) = self.0.first() {
                if t > now {
                    break;
                }
                out.push(io);
                self.0.remove(0);
            }
        }
        fn on_complete(&mut self, _: &Io, _: Instant, _: Instant, _: Instant) {}
        fn next_deadline(&self) -> Option<Instant> {
            self.0.first().map(|x| x.0)
        }
        fn hold_blocks_submitter(&self) -> bool {
            self.1
        }
        fn held(&self) -> usize {
            self.0.len()
        }
        fn on_group_added(&mut self, _g: GroupId, _p: GroupId, _path: &str, _now: Instant) {}
        fn on_group_removed(&mut self, _g: GroupId, _now: Instant) {}
    }

    fn io(n: u64) -> Io {
        Io {
            ioprio: 0,
            id: IoId(n),
            submitter: crate::Submitter(0),
            group: GroupId::ROOT,
            op: IoOp::Read,
            flags: IoFlags::default(),
            offset: 0,
            len: 4096,
            submitted_at: Instant(0),
            cost_vtime: 0,
        }
    }

    #[test]
    fn pass_through_is_ready() {
        let mut s = ControllerStack::pass_through();
        assert!(s.is_pass_through());
        assert_eq!(s.submit(&mut io(1), Instant(0)), StackVerdict::Ready);
        assert_eq!(s.next_deadline(), None);
        assert_eq!(s.iostat(GroupId::ROOT).ios, [1, 0, 0]);
        // an empty stack counts io.stat too
        let mut e = ControllerStack::new();
        assert_eq!(e.submit(&mut io(2), Instant(0)), StackVerdict::Ready);
        assert_eq!(e.iostat(GroupId::ROOT).ios, [1, 0, 0]);
        e.push(Box::new(Delay10(vec![], false)));
        assert!(!e.is_pass_through());
    }

    #[test]
    fn long_ios_stop_after_stage_0_to_be_split() {
        let big = |n| Io {
            len: 1 << 20,
            ..io(n)
        };
        let rest = |n| Io {
            len: 4096,
            flags: IoFlags::SPLIT_REST,
            ..io(n)
        };
        // pass-through: split at once; bytes once, one IO per clear
        let mut s = ControllerStack::pass_through();
        s.set_max_io_bytes(128 << 10);
        assert_eq!(s.submit(&mut big(1), Instant(0)), StackVerdict::Split);
        assert_eq!(s.submit(&mut rest(1), Instant(0)), StackVerdict::Split);
        assert_eq!(s.submit(&mut io(2), Instant(0)), StackVerdict::Ready);
        assert_eq!(
            s.submit_fragment(&mut io(3), Instant(0)),
            StackVerdict::Ready
        );
        let st = s.iostat(GroupId::ROOT);
        assert_eq!((st.bytes[0], st.ios[0]), ((1 << 20) + 4096, 3));

        // stage 0 holds, then releases into `ready` (not into stage 1)
        let mut s = ControllerStack::new();
        s.push(Box::new(Delay10(vec![], false)));
        s.push(Box::new(Delay10(vec![], true)));
        s.set_max_io_bytes(128 << 10);
        assert_eq!(s.submit(&mut big(1), Instant(0)), StackVerdict::Queued);
        let (mut ready, mut unb) = (vec![], vec![]);
        s.on_timer(Instant(10), &mut ready, &mut unb);
        assert_eq!(ready.len(), 1, "released by stage 0 to be split");
        assert_eq!(s.held(), 0, "stage 1 did not see it");
        // a piece enters stage 1 (which blocks the submitter)
        assert_eq!(
            s.submit_fragment(&mut io(5), Instant(10)),
            StackVerdict::Blocked
        );
        assert_eq!(s.iostat(GroupId::ROOT).ios[0], 1);
    }

    #[test]
    fn two_stages_chain_in_order() {
        let mut s = ControllerStack::new();
        s.push(Box::new(Delay10(vec![], false)));
        s.push(Box::new(Delay10(vec![], true)));
        assert_eq!(s.submit(&mut io(1), Instant(0)), StackVerdict::Queued);
        assert_eq!(s.next_deadline(), Some(Instant(10)));
        let (mut ready, mut unb) = (vec![], vec![]);
        s.on_timer(Instant(10), &mut ready, &mut unb);
        assert!(ready.is_empty() && unb.is_empty());
        assert_eq!(s.next_deadline(), Some(Instant(20)));
        s.on_timer(Instant(20), &mut ready, &mut unb);
        assert_eq!(ready.len(), 1);
        assert_eq!(unb.len(), 1);
        assert_eq!(s.held(), 0);
    }
}
