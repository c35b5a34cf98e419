//! blk-throttle: `io.max` absolute bps/IOPS limits, as Linux implements them.
//!
//! # 1. Problem
//! A group must not exceed `rbps/wbps` bytes/s or `riops/wiops` IOs/s on a
//! device, and the limit must bound its whole subtree.
//!
//! # 2. Model
//! Time is cut into *slices* of `HZ/10` jiffies (or `HZ/50` on SSDs in
//! THROTTLING_LOW builds 2017–6.9 and every build 6.10 – 6.18, except 6.12.63+
//! where the 2025 fix was backported; see `variant::SliceRule`). Within a slice that has run `e` jiffies, a group may
//! have dispatched the budget of `roundup(e, slice)` jiffies: `bps · t / HZ`
//! bytes and `iops · t / HZ` IOs — budgets are granted per whole rounded-up
//! slice, which is where "temporary bursts are allowed" comes from.
//! Worked example (tg_within_iops_limit): HZ=1000, slice=100, iops=1000 →
//! 100 IOs per slice; IO #101 arriving 5 jiffies in waits 97 jiffies with the
//! pre-2018 rule, 95 (the rest of the slice) after it.
//! Points in time (`jiffies`, a slice's start and end, a dispatch time, a
//! timer's expiry) are [`Jiffies`]; a slice length, an elapsed time and a
//! wait are counts of jiffies (`u64`).
//!
//! # 3. Control
//! An IO that fits the budget at its own group and every ancestor passes
//! (charged at each level). Otherwise it is queued at the first level that
//! refuses it, FIFO per group with round-robin between the group's own IO and
//! each child's ("qnodes"). Each service queue keeps its pending children
//! ordered by dispatch time and a timer that fires at the earliest one
//! (never more than 8 slices ahead); a fired timer moves up to 6 reads and 2
//! writes per child visit and 32 per round one level up, until the device
//! level releases them.
//!
//! # 4. Split bios
//! A bio longer than the device's max IO size is split by the driver after
//! it passed here whole (`bio_split_to_limits` runs after `blk_throtl_bio`).
//! The rest comes back flagged `IoFlags::SPLIT_REST` (`BIO_BPS_THROTTLED`):
//! its bytes are never charged again; its IO per [`SplitCharge`]: bypass
//! (≤ 5.14), counted into `io_split` without waiting (5.15 – 5.17), or
//! checked and charged like a bio against IOPS limits only (5.18+; with
//! split queues it goes straight to the iops queue, so it no longer waits
//! behind bios that still owe bytes — v6.16's fix). Worked example: with
//! 128 KiB requests, `riops=100` admits 12.5 1 MiB bios/s on mainline,
//! 100 on legacy.
//!
//! # 5. Invariants (checked by `invariants()` in tests)
//! * counts of queued IOs match the queues; a group with queued IO is pending
//!   in its parent and has a finite dispatch time;
//! * FIFO per group and direction.
//!
//! # 6. Divergences from Linux
//! * One device per controller instance; the kernel's per-CPU and locking
//!   details are absent; the dispatch work runs at timer time (the kernel
//!   runs it on a workqueue microseconds later).
//! * The pending timer runs where the kernel's timer wheel runs it: a tick
//!   after its expiry, coarser for far timers (`calc_index()`,
//!   [`crate::time::timer_wheel_expiry`]); one already due runs at the
//!   next tick.
//! * Only `max_sectors` splits bios (no segment or chunk limits), and the
//!   driver does the splitting; this controller only sees the rests.
//! * A zero wait under the 2018 rule busy-loops in the kernel until the next
//!   jiffy; here the dispatcher re-arms for the next jiffy.
//! * Carryover is kept folded into `bytes_disp`/`io_disp` for every kernel
//!   (6.15+). 6.1 – 6.14 keep it in `carryover_*` fields that a limit write
//!   with `clear=false` does not reset; that stale carry (and 6.1's unsigned
//!   wrap) is not modelled: a 6.1 stall it likely caused in the lab
//!   (docs/fidelity.md, t08) does not happen here.
//! * A removed group's queued bios are flushed as mainline's
//!   `throtl_pd_offline` → `tg_flush_bios` does (they skip the group's own
//!   limits and leave when its parent's timer next fires), in every
//!   variant: kernels before that flush kept them under the group's limits.
//! * The run starts at a jiffy phase and `jiffies` value the caller gives
//!   (`tick_phase_ns`, `jiffies_at_start`; the simulator draws them from
//!   the seed).
//!
//! # 7. Source map (our function ↔ `block/blk-throttle.c`)
//! | here | kernel |
//! |---|---|
//! | [`Throttle::submit`] | `__blk_throtl_bio` |
//! | `within_limit` | `tg_within_limit` (mainline), `tg_may_dispatch` (legacy) |
//! | `dispatch_time` | `tg_dispatch_time`, `tg_dispatch_bps_time`, `tg_dispatch_iops_time` |
//! | `add_bio_tg` / `qn_add` / `pop` | `throtl_add_bio_tg` / `throtl_qnode_add_bio` / `throtl_pop_queued` |
//! | `update_disptime` | `tg_update_disptime` |
//! | `schedule_next_dispatch` | `throtl_schedule_next_dispatch`, `throtl_schedule_pending_timer` |
//! | `pending_timer` | `throtl_pending_timer_fn`, `blk_throtl_dispatch_work_fn` |
//! | `select_dispatch` / `dispatch_tg` / `dispatch_one` | `throtl_select_dispatch` / `throtl_dispatch_tg` / `tg_dispatch_one_bio` |
//! | [`Throttle::set_limits`] | `tg_set_limit`, `tg_conf_updated` |
//! | `slice::DirBudget` | `throtl_*_slice`, `tg_within_{bps,iops}_limit` |
//! | `charge_split` | `blk_throtl_charge_bio_split` (5.15 – 5.17) |
//! | `charge_bps` / `charge_leave` | `throtl_charge_bps_bio` / `throtl_charge_iops_bio`, `throtl_charge_bio` |
//! | [`Throttle::add_group`] | `throtl_pd_alloc`, `throtl_pd_init`, `throtl_pd_online` (`tg_update_has_rules`) |
//! | [`Throttle::remove_group`] | `throtl_pd_offline` → `tg_flush_bios` (`THROTL_TG_CANCELING`) |
//! | `note`, `note_slice` ([`trace::ThrotlNote`]) | `throtl_log` (only while tracing): new slice (with credit), extend slice, trim slice, `dispatch nr_queued=`, `bios disp=`, `schedule timer. delay=`, `bio.` (a bio it queues) |

pub mod knob;
pub mod paced;
pub mod slice;
pub mod trace;
pub mod variant;

use crate::cgroup::{CgroupTree, GroupId};
use crate::controller::{Clock, Controller, Verdict};
use crate::io::{Io, IoFlags, IoOp};
use crate::time::{Instant, Jiffies};
use knob::{Limits, BPS_MAX, IOPS_MAX};
use slice::{DirBudget, SliceUpdate};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
pub use variant::{SplitCharge, Variant};

/// Bios per group visit (`THROTL_GRP_QUANTUM`): 6 reads, 2 writes.
const GRP_QUANTUM: u32 = 8;
/// Bios per dispatch round (`THROTL_QUANTUM`).
const QUANTUM: u32 = 32;

/// Configuration of one blk-throttle instance (one device).
#[derive(Clone, Copy, Debug)]
pub struct ThrottleConfig {
    /// The blk-throttle generation to model (IOPS wait, slice, trim rules).
    pub variant: Variant,
    /// The kernel's `CONFIG_HZ`: jiffies per second.
    pub hz: u64,
    /// The device is rotational (`!blk_queue_nonrot`): selects the slice
    /// length under [`variant::SliceRule::SsdHz50`].
    pub rotational: bool,
    /// cgroup v1: flat hierarchy (every group hangs off the device).
    pub flat: bool,
    /// Value of `jiffies` when the run starts. A real machine's jiffies are
    /// arbitrary (boot time, `INITIAL_JIFFIES`), and slice ends are rounded
    /// to absolute multiples of the slice, so the phase matters.
    pub jiffies_at_start: Jiffies,
    /// Where in its jiffy the run starts, in ns (`0 .. 1e9/hz`): the
    /// jiffy boundaries fall at `k · tick − tick_phase_ns` of run time.
    /// A real run starts at an arbitrary point of a jiffy; the simulator
    /// draws it from the run's seed.
    pub tick_phase_ns: u64,
}

/// A queued bio.
#[derive(Clone, Copy, Debug)]
struct Qio {
    io: Io,
    /// `BIO_TG_BPS_THROTTLED`: bytes charged at the current level.
    tg_bps_charged: bool,
    /// `BIO_BPS_THROTTLED`: passed the whole hierarchy.
    bps_throttled: bool,
}

#[derive(Clone, Debug, Default)]
struct Qnode {
    bps: VecDeque<Qio>,
    iops: VecDeque<Qio>,
    listed: bool,
}

#[derive(Clone, Debug, Default)]
struct ServiceQueue {
    /// Round-robin list of qnodes with bios, per direction.
    queued: [VecDeque<usize>; 2],
    nr_queued_bps: [u32; 2],
    nr_queued_iops: [u32; 2],
    /// Pending children: (disptime_jiffy, insertion seq, group).
    pending: BTreeSet<(Jiffies, u64, usize)>,
    /// Armed timer: jiffy at which it fires.
    timer_jiffy: Option<Jiffies>,
}

#[derive(Clone, Debug, Default)]
struct Tg {
    limits: Limits,
    has_rules_bps: [bool; 2],
    has_rules_iops: [bool; 2],
    budget: [DirBudget; 2],
    disptime_jiffy: Jiffies,
    /// Key in the parent's pending set when pending.
    pending_key: Option<(Jiffies, u64)>,
    was_empty: bool,
    iops_was_empty: bool,
    /// `THROTL_TG_CANCELING`: the group was removed; its queued bios
    /// leave without waiting for its limits (`tg_flush_bios`).
    canceling: bool,
}

/// blk-throttle for one device.
pub struct Throttle {
    /// The latest `now` seen and the first protocol breach (time
    /// backwards, unknown group).
    clock: Clock,
    fault: crate::controller::Fault,
    cfg: ThrottleConfig,
    /// Slice length (`td->throtl_slice`), a count of jiffies.
    slice_jiffies: u64,
    /// Index of the device-level service queue (after all groups).
    td: usize,
    parent_sq: Vec<usize>,
    tgs: Vec<Tg>,
    sqs: Vec<ServiceQueue>,
    qnodes: Vec<Qnode>,
    seq: u64,
    held: usize,
    /// Limit changes scheduled for later, (time, sequence, group) to the
    /// limits; each is removed when applied.
    scheduled: BTreeMap<(Instant, u64, usize), Limits>,
    /// Sequence of the next scheduled change (equal times keep their order).
    scheduled_seq: u64,
    /// Bios released to the device, waiting for `on_timer` to hand them out.
    out: Vec<Io>,
    /// Armed service-queue timers: (jiffy, deepest sq first on ties).
    timers: BTreeSet<(Jiffies, std::cmp::Reverse<usize>)>,
    /// `throtl_log` messages since the last drain, while tracing is on.
    notes: Vec<trace::ThrotlNote>,
    trace_on: bool,
    notes_dropped: u64,
}

impl Throttle {
    /// A controller for the groups of `tree` on one device.
    pub fn new(cfg: ThrottleConfig, tree: &CgroupTree) -> Self {
        let n = tree.len();
        let td = n;
        let parent_sq = tree
            .ids()
            .map(|g| {
                if cfg.flat || g == GroupId::ROOT {
                    td
                } else {
                    tree.parent(g).map_or(td, |p| p.idx())
                }
            })
            .collect();
        Throttle {
            clock: Clock::default(),
            fault: Default::default(),
            slice_jiffies: cfg.variant.slice_jiffies(cfg.hz, cfg.rotational),
            cfg,
            td,
            parent_sq,
            tgs: vec![Tg::default(); n],
            sqs: vec![ServiceQueue::default(); n + 1],
            qnodes: vec![Qnode::default(); n * 4],
            seq: 0,
            held: 0,
            scheduled: BTreeMap::new(),
            scheduled_seq: 0,
            out: Vec::new(),
            timers: BTreeSet::new(),
            notes: Vec::new(),
            trace_on: false,
            notes_dropped: 0,
        }
    }

    /// A `throtl_log` message (made only while tracing is on).
    #[cold]
    fn note(&mut self, text: impl FnOnce() -> String) {
        if self.notes.len() >= trace::NOTES_CAPACITY {
            self.notes_dropped += 1;
            return;
        }
        let at = self.clock.last();
        self.notes.push(trace::ThrotlNote { at, text: text() });
    }

    /// The configuration this controller was built with.
    pub fn config(&self) -> &ThrottleConfig {
        &self.cfg
    }
    /// Slice length (`td->throtl_slice`), a count of jiffies.
    #[must_use]
    pub fn slice_jiffies(&self) -> u64 {
        self.slice_jiffies
    }
    /// The current limits of group `g` (`tg->bps` / `tg->iops`).
    pub fn limits(&self, g: GroupId) -> Limits {
        self.tgs[g.idx()].limits
    }

    /// The kernel's `jiffies` at `now`: the run starts at
    /// `cfg.jiffies_at_start`, which matters because slice ends are rounded
    /// to absolute multiples of the slice (`roundup(jiffy_end, slice)`);
    /// the ticks since the run's epoch (`now` plus the phase) are added.
    fn jiffies(&self, now: Instant) -> Jiffies {
        let ticks = Instant(now.as_ns() + self.cfg.tick_phase_ns).to_jiffies(self.cfg.hz);
        self.cfg.jiffies_at_start + ticks.since(Jiffies::ZERO)
    }
    fn self_qn(g: usize, d: usize) -> usize {
        g * 4 + d * 2
    }
    fn parent_qn(g: usize, d: usize) -> usize {
        g * 4 + d * 2 + 1
    }
    fn owner(&self, sq: usize) -> Option<usize> {
        (sq != self.td).then_some(sq)
    }

    /// Recompute `has_rules_*` for every group (parents come first in the
    /// tree's order, so one pass suffices).
    fn update_has_rules(&mut self) {
        for g in 0..self.tgs.len() {
            let p = self.parent_sq[g];
            for d in 0..2 {
                let (pb, pi) = if p == self.td {
                    (false, false)
                } else {
                    (self.tgs[p].has_rules_bps[d], self.tgs[p].has_rules_iops[d])
                };
                let l = self.tgs[g].limits;
                self.tgs[g].has_rules_bps[d] = pb || l.bps[d] != BPS_MAX;
                self.tgs[g].has_rules_iops[d] = pi || l.iops[d] < IOPS_MAX;
            }
        }
    }

    /// Set a group's limits at `now` (`tg_set_limit` → `tg_conf_updated`).
    /// The root group of cgroup v2 cannot be limited: the caller rejects it.
    pub fn set_limits(&mut self, g: GroupId, limits: Limits, now: Instant) {
        let j = self.jiffies(now);
        let gi = g.idx();
        for d in 0..2 {
            if self.cfg.variant.carryover {
                let queued = self.queued(gi, d) > 0;
                let old = self.tgs[gi].limits;
                self.tgs[gi].budget[d].carryover(old.bps[d], old.iops[d], queued, j, self.cfg.hz);
            }
        }
        self.tgs[gi].limits = limits;
        self.update_has_rules();
        let clear = !self.cfg.variant.carryover;
        for d in 0..2 {
            self.tgs[gi].budget[d].start_new_slice(j, self.slice_jiffies, clear);
            if self.trace_on {
                self.note_slice(gi, d, "new slice", j);
            }
        }
        if self.tgs[gi].pending_key.is_some() {
            self.update_disptime(gi, j);
            let p = self.parent_sq[gi];
            self.schedule_next_dispatch(p, true, j);
        }
    }

    /// Group `g` was created under `parent` at `now` (`throtl_pd_alloc` +
    /// `throtl_pd_init` + `throtl_pd_online`): no limits, and the rules of
    /// its ancestors (`tg_update_has_rules`), so a new group cannot escape
    /// them.
    pub fn add_group(&mut self, g: GroupId, parent: GroupId, now: Instant) {
        self.see(now);
        let n = self.tgs.len();
        if g.idx() != n || parent.idx() >= n {
            self.fault.raise(|| {
                format!("group {g} added under {parent}, but the controller has {n} groups")
            });
            return;
        }
        // the device-level service queue keeps the index after the groups
        let (old_td, td) = (self.td, n + 1);
        self.sqs.insert(n, ServiceQueue::default());
        for p in &mut self.parent_sq {
            if *p == old_td {
                *p = td;
            }
        }
        self.timers = std::mem::take(&mut self.timers)
            .into_iter()
            .map(|(j, std::cmp::Reverse(s))| {
                (j, std::cmp::Reverse(if s == old_td { td } else { s }))
            })
            .collect();
        self.td = td;
        self.tgs.push(Tg::default());
        self.qnodes
            .extend(std::iter::repeat_with(Qnode::default).take(4));
        self.parent_sq
            .push(if self.cfg.flat { td } else { parent.idx() });
        self.update_has_rules();
    }

    /// Group `g` was removed at `now` (`throtl_pd_offline` →
    /// `tg_flush_bios`): its queued bios leave without waiting for its own
    /// limits — its ancestors' still apply — the next time its parent's
    /// timer fires, and it submits nothing more.
    pub fn remove_group(&mut self, g: GroupId, now: Instant) {
        self.see(now);
        let gi = g.idx();
        if gi == 0 || gi >= self.tgs.len() || self.tgs[gi].canceling {
            let n = self.tgs.len();
            self.fault.raise(|| {
                format!("group {g} removed, but it is the root, removed already or not among the {n} groups")
            });
            return;
        }
        self.tgs[gi].canceling = true;
        if self.tgs[gi].pending_key.is_none() {
            return;
        }
        let j = self.jiffies(now);
        self.update_disptime(gi, j);
        // the kernel arms the group's own queue's timer (a no-op for a
        // leaf): its bios go when the parent's timer fires
        let expires = (j + 1).min(j + 8 * self.slice_jiffies);
        self.arm_timer(gi, expires, j);
    }

    /// A limit file written to group `g` at `now` (`tg_set_limit`): the
    /// limits it names change. `false`, changing nothing, when the file
    /// is not of this hierarchy (`io.max` on cgroup v1, a v1 file on v2)
    /// or the group is not among the controller's.
    pub fn write_limits(
        &mut self,
        g: GroupId,
        w: &crate::throttle::knob::LimitWrite,
        now: Instant,
    ) -> bool {
        let Some(mut l) = self
            .tgs
            .get(g.idx())
            .map(|x| x.limits)
            .filter(|_| w.is_v1() == self.cfg.flat)
        else {
            return false;
        };
        w.apply(&mut l);
        self.see(now);
        self.set_limits(g, l, now);
        true
    }

    /// Schedule a limit change at a later time (a runtime `io.max` write).
    pub fn schedule_limits(&mut self, at: Instant, g: GroupId, limits: Limits) {
        let k = self.scheduled_seq;
        self.scheduled_seq += 1;
        self.scheduled.insert((at, k, g.idx()), limits);
    }

    fn queued(&self, g: usize, d: usize) -> u32 {
        self.sqs[g].nr_queued_bps[d] + self.sqs[g].nr_queued_iops[d]
    }

    fn peek_mut(&mut self, sq: usize, d: usize) -> Option<&mut Qio> {
        let qn = *self.sqs[sq].queued[d].front()?;
        let q = &mut self.qnodes[qn];
        if !q.iops.is_empty() {
            q.iops.front_mut()
        } else {
            q.bps.front_mut()
        }
    }

    fn pop(&mut self, sq: usize, d: usize) -> Option<Qio> {
        let qn = self.sqs[sq].queued[d].pop_front()?;
        let q = &mut self.qnodes[qn];
        let bio = if let Some(b) = q.iops.pop_front() {
            self.sqs[sq].nr_queued_iops[d] -= 1;
            b
        } else {
            let b = q.bps.pop_front().expect("listed qnode has bios");
            self.sqs[sq].nr_queued_bps[d] -= 1;
            b
        };
        if q.iops.is_empty() && q.bps.is_empty() {
            q.listed = false;
        } else {
            self.sqs[sq].queued[d].push_back(qn);
        }
        Some(bio)
    }

    /// `throtl_qnode_add_bio`.
    fn qn_add(&mut self, bio: Qio, qn: usize, sq: usize) {
        let d = bio.io.dir().idx();
        let to_iops = self.cfg.variant.split_queues && (bio.tg_bps_charged || bio.bps_throttled);
        let q = &mut self.qnodes[qn];
        if to_iops {
            q.iops.push_back(bio);
            self.sqs[sq].nr_queued_iops[d] += 1;
        } else {
            q.bps.push_back(bio);
            self.sqs[sq].nr_queued_bps[d] += 1;
        }
        if !q.listed {
            q.listed = true;
            self.sqs[sq].queued[d].push_back(qn);
        }
    }

    /// `throtl_enqueue_tg`: make `g` pending in its parent with its current
    /// dispatch time.
    fn enqueue_tg(&mut self, g: usize) {
        if self.tgs[g].pending_key.is_some() {
            return;
        }
        self.seq += 1;
        let key = (self.tgs[g].disptime_jiffy, self.seq);
        self.tgs[g].pending_key = Some(key);
        let p = self.parent_sq[g];
        self.sqs[p].pending.insert((key.0, key.1, g));
    }

    fn dequeue_tg(&mut self, g: usize) {
        if let Some((t, s)) = self.tgs[g].pending_key.take() {
            let p = self.parent_sq[g];
            self.sqs[p].pending.remove(&(t, s, g));
        }
    }

    /// `throtl_add_bio_tg`.
    fn add_bio_tg(&mut self, bio: Qio, qn: Option<usize>, g: usize) {
        let d = bio.io.dir().idx();
        let qn = qn.unwrap_or(Self::self_qn(g, d));
        if self.queued(g, d) == 0 {
            self.tgs[g].was_empty = true;
        }
        self.qn_add(bio, qn, g);
        // a split remainder (already bps-charged) that became the head of
        // the group's queue in this direction changes its dispatch time
        if self.cfg.variant.split_queues
            && bio.bps_throttled
            && self.sqs[g].queued[d].front() == Some(&qn)
            && self.qnodes[qn].iops.len() == 1
        {
            self.tgs[g].iops_was_empty = true;
        }
        self.enqueue_tg(g);
    }

    /// `tg_dispatch_bps_time`.
    fn bps_time(&mut self, g: usize, bio: &Qio, j: Jiffies) -> u64 {
        let d = bio.io.dir().idx();
        let bps = self.tgs[g].limits.bps[d];
        if bps == BPS_MAX || self.tgs[g].canceling || bio.bps_throttled || bio.tg_bps_charged {
            return 0;
        }
        let queued = self.queued(g, d) > 0;
        let (slice, hz) = (self.slice_jiffies, self.cfg.hz);
        let update = self.tgs[g].budget[d].update_slice(j, slice, queued);
        self.note_update(g, d, update, j);
        let b = &mut self.tgs[g].budget[d];
        let wait = b.bps_wait(bps, charge_size(&bio.io), j, slice, hz);
        if b.extend_slice(j + wait, slice) && self.trace_on {
            self.note_slice(g, d, "extend slice", j);
        }
        wait
    }

    /// `tg_dispatch_iops_time`.
    fn iops_time(&mut self, g: usize, d: usize, j: Jiffies) -> u64 {
        let iops = self.tgs[g].limits.iops[d];
        if iops >= IOPS_MAX || self.tgs[g].canceling {
            return 0;
        }
        let queued = self.queued(g, d) > 0;
        let (slice, hz, rule) = (self.slice_jiffies, self.cfg.hz, self.cfg.variant.iops_wait);
        let update = self.tgs[g].budget[d].update_slice(j, slice, queued);
        self.note_update(g, d, update, j);
        let b = &mut self.tgs[g].budget[d];
        let wait = b.iops_wait(iops, rule, j, slice, hz).unwrap_or(0);
        if b.extend_slice(j + wait, slice) && self.trace_on {
            self.note_slice(g, d, "extend slice", j);
        }
        wait
    }

    /// `throtl_charge_bps_bio`: bytes once per level, never for a split
    /// remainder (its bytes went with the whole bio).
    fn charge_bps(&mut self, g: usize, bio: &mut Qio) {
        if bio.bps_throttled || bio.tg_bps_charged {
            return;
        }
        let d = bio.io.dir().idx();
        self.tgs[g].budget[d].bytes_disp += charge_size(&bio.io) as i64;
        bio.tg_bps_charged = true;
    }

    /// `blk_throtl_charge_bio_split` (5.15 – 5.17): one IO more at every
    /// level with a limit, taken into `io_disp` at the next dispatch check.
    fn charge_split(&mut self, mut g: usize, d: usize) {
        while g != self.td {
            let t = &mut self.tgs[g];
            if !(t.has_rules_bps[d] || t.has_rules_iops[d]) {
                break;
            }
            t.budget[d].io_split += 1;
            g = self.parent_sq[g];
        }
    }

    /// `tg_dispatch_time` (mainline) or `tg_may_dispatch` (one queue):
    /// 0 if the head bio may leave `g` now, else the wait in jiffies.
    /// `Some(0)` vs `None` distinguishes the 2018 zero-wait refusal.
    fn dispatch_time(&mut self, g: usize, bio: &mut Qio, j: Jiffies) -> Result<(), u64> {
        let d = bio.io.dir().idx();
        if self.cfg.variant.split_queues {
            let w = self.bps_time(g, bio, j);
            if w != 0 {
                return Err(w);
            }
            self.charge_bps(g, bio);
            match self.iops_time(g, d, j) {
                0 => Ok(()),
                w => Err(w),
            }
        } else {
            self.may_dispatch(g, bio, j)
        }
    }

    /// Legacy `tg_may_dispatch`: bytes and IO checked together (a split
    /// remainder's bytes are not checked again: `BIO_BPS_THROTTLED`).
    fn may_dispatch(&mut self, g: usize, bio: &Qio, j: Jiffies) -> Result<(), u64> {
        let d = bio.io.dir().idx();
        let l = self.tgs[g].limits;
        if l.bps[d] == BPS_MAX && l.iops[d] >= IOPS_MAX || self.tgs[g].canceling {
            return Ok(());
        }
        let queued = self.queued(g, d) > 0;
        let (slice, hz, rule) = (self.slice_jiffies, self.cfg.hz, self.cfg.variant.iops_wait);
        let update = self.tgs[g].budget[d].update_slice(j, slice, queued);
        self.note_update(g, d, update, j);
        let b = &mut self.tgs[g].budget[d];
        if l.iops[d] < IOPS_MAX {
            b.io_disp += std::mem::take(&mut b.io_split);
        }
        let bw = if bio.bps_throttled {
            0
        } else {
            b.bps_wait(l.bps[d], charge_size(&bio.io), j, slice, hz)
        };
        let iw = b.iops_wait(l.iops[d], rule, j, slice, hz);
        if bw == 0 && iw.is_none() {
            return Ok(());
        }
        let max_wait = bw.max(iw.unwrap_or(0));
        if b.extend_slice(j + max_wait, slice) && self.trace_on {
            self.note_slice(g, d, "extend slice", j);
        }
        Err(max_wait)
    }

    /// `tg_within_limit` (split queues) or the legacy FIFO + may-dispatch.
    fn within_limit(&mut self, g: usize, bio: &mut Qio, j: Jiffies) -> bool {
        let d = bio.io.dir().idx();
        if !self.cfg.variant.split_queues {
            return self.queued(g, d) == 0 && self.may_dispatch(g, bio, j).is_ok();
        }
        if bio.bps_throttled {
            return self.sqs[g].nr_queued_iops[d] == 0 && self.iops_time(g, d, j) == 0;
        }
        if self.queued(g, d) > 0 {
            if self.sqs[g].nr_queued_bps[d] == 0 && self.bps_time(g, bio, j) == 0 {
                self.charge_bps(g, bio);
            }
            return false;
        }
        self.dispatch_time(g, bio, j).is_ok()
    }

    /// Charge one IO (and, with one queue, its bytes unless it is a split
    /// remainder) as the bio leaves `g` (`throtl_charge_bio` /
    /// `throtl_charge_iops_bio`).
    fn charge_leave(&mut self, g: usize, bio: &mut Qio) {
        let d = bio.io.dir().idx();
        if self.cfg.variant.split_queues {
            self.tgs[g].budget[d].io_disp += 1;
            bio.tg_bps_charged = false;
        } else {
            if !bio.bps_throttled {
                self.tgs[g].budget[d].bytes_disp += charge_size(&bio.io) as i64;
            }
            self.tgs[g].budget[d].io_disp += 1;
        }
    }

    fn trim(&mut self, g: usize, d: usize, j: Jiffies) {
        let l = self.tgs[g].limits;
        let (slice, hz, rule) = (self.slice_jiffies, self.cfg.hz, self.cfg.variant.trim);
        if self.tgs[g].budget[d].trim(l.bps[d], l.iops[d], rule, j, slice, hz) && self.trace_on {
            self.note_slice(g, d, "trim slice", j);
        }
    }

    /// The message of what `tg_update_slice` did (while tracing).
    #[inline]
    fn note_update(&mut self, g: usize, d: usize, update: SliceUpdate, j: Jiffies) {
        if !self.trace_on {
            return;
        }
        match update {
            SliceUpdate::New => self.note_slice(g, d, "new slice", j),
            SliceUpdate::Extended => self.note_slice(g, d, "extend slice", j),
            SliceUpdate::Kept => {}
        }
    }

    /// `throtl_log(sq, "[%c] WHAT start=%lu end=%lu jiffies=%lu")`.
    fn note_slice(&mut self, g: usize, d: usize, what: &str, j: Jiffies) {
        let b = &self.tgs[g].budget[d];
        let (start, end) = (b.slice_start_jiffy, b.slice_end_jiffy);
        let rw = if d == 0 { 'R' } else { 'W' };
        self.note(|| format!("[{rw}] {what} start={start} end={end} jiffies={j}"));
    }

    /// `throtl_pending_timer_fn`'s message at each dispatch round of
    /// service queue `sq`: the bios queued there (a group's own queue
    /// holds what its children dispatched up; the device's queue is
    /// drained to the device at once).
    #[cold]
    fn note_round(&mut self, sq: usize) {
        let (r, w) = self
            .owner(sq)
            .map_or((0, 0), |g| (self.queued(g, 0), self.queued(g, 1)));
        self.note(|| format!("dispatch nr_queued={} read={r} write={w}", r + w));
    }

    /// `__blk_throtl_bio`'s message for a bio it queues at group `g`:
    /// `throtl_log(sq, "[%c] bio. bdisp=%llu sz=%u bps=%llu iodisp=%u
    /// iops=%u queued=%d/%d")`, the queue's counts before it joins.
    #[cold]
    fn note_queued(&mut self, g: usize, d: usize, len: u64) {
        let b = &self.tgs[g].budget[d];
        let l = &self.tgs[g].limits;
        let (bdisp, iodisp, bps, iops) = (b.bytes_disp, b.io_disp, l.bps[d], l.iops[d]);
        let (r, w) = (self.queued(g, 0), self.queued(g, 1));
        let rw = if d == 0 { 'R' } else { 'W' };
        self.note(|| {
            format!("[{rw}] bio. bdisp={bdisp} sz={len} bps={bps} iodisp={iodisp} iops={iops} queued={r}/{w}")
        });
    }

    /// `tg_update_disptime`.
    fn update_disptime(&mut self, g: usize, j: Jiffies) {
        if self.tgs[g].canceling {
            // the kernel skips the waits and adds its initial -1: the
            // group is due since the jiffy before (floored at jiffy 0,
            // where it is due all the same)
            self.dequeue_tg(g);
            self.tgs[g].disptime_jiffy = j.saturating_sub(1);
            self.enqueue_tg(g);
            self.tgs[g].was_empty = false;
            self.tgs[g].iops_was_empty = false;
            return;
        }
        let mut min_wait = u64::MAX;
        for d in 0..2 {
            if let Some(mut head) = self.peek_mut(g, d).copied() {
                let w = match self.dispatch_time(g, &mut head, j) {
                    Ok(()) => 0,
                    Err(w) => w,
                };
                if let Some(h) = self.peek_mut(g, d) {
                    h.tg_bps_charged = head.tg_bps_charged;
                }
                min_wait = min_wait.min(w);
            }
        }
        // `disptime = jiffies + min_wait`; `min_wait` keeps its initial -1
        // (u64::MAX) only if neither direction has a head bio, where the
        // kernel's sum wraps to `jiffies - 1` and this one saturates (not
        // reached: a group is updated with bios queued)
        let disptime_jiffy = j.saturating_add(min_wait);
        self.dequeue_tg(g);
        self.tgs[g].disptime_jiffy = disptime_jiffy;
        self.enqueue_tg(g);
        self.tgs[g].was_empty = false;
        self.tgs[g].iops_was_empty = false;
    }

    /// `mod_timer` on a service queue's pending timer at jiffy `j`: the
    /// timer wheel runs it a tick after `expires` (further out, at its
    /// level's granularity: [`crate::time::timer_wheel_expiry`]).
    fn arm_timer(&mut self, sq: usize, expires: Jiffies, j: Jiffies) {
        let runs = crate::time::timer_wheel_expiry(expires, j);
        if let Some(old) = self.sqs[sq].timer_jiffy.replace(runs) {
            self.timers.remove(&(old, std::cmp::Reverse(sq)));
        }
        self.timers.insert((runs, std::cmp::Reverse(sq)));
    }

    /// `throtl_schedule_next_dispatch`: `true` if nothing more is due now.
    fn schedule_next_dispatch(&mut self, sq: usize, force: bool, j: Jiffies) -> bool {
        let Some(&(first, _, _)) = self.sqs[sq].pending.first() else {
            return true;
        };
        if force || first > j {
            let expires = first.min(j + 8 * self.slice_jiffies).max(j + 1);
            self.arm_timer(sq, expires, j);
            if self.trace_on {
                // throtl_schedule_pending_timer
                self.note(|| format!("schedule timer. delay={} jiffies={j}", expires.since(j)));
            }
            return true;
        }
        false
    }

    /// `tg_dispatch_one_bio`.
    fn dispatch_one(&mut self, g: usize, d: usize, j: Jiffies) {
        let Some(mut bio) = self.pop(g, d) else {
            return;
        };
        self.charge_leave(g, &mut bio);
        let p = self.parent_sq[g];
        if p != self.td {
            self.add_bio_tg(bio, Some(Self::parent_qn(g, d)), p);
            if self.tgs[p].budget[d].slice_used(j) {
                let start = self.tgs[g].budget[d].slice_start_jiffy;
                self.tgs[p].budget[d].start_new_slice_with_credit(j, self.slice_jiffies, start);
                if self.trace_on {
                    self.note_slice(p, d, "new slice with credit", j);
                }
            }
        } else {
            bio.bps_throttled = true;
            self.qn_add(bio, Self::parent_qn(g, d), self.td);
        }
        self.trim(g, d, j);
    }

    /// `throtl_dispatch_tg`: up to 6 reads then 2 writes.
    fn dispatch_tg(&mut self, g: usize, j: Jiffies) -> u32 {
        let max_reads = GRP_QUANTUM * 3 / 4;
        let max_writes = GRP_QUANTUM - max_reads;
        let mut n = 0;
        for (d, max) in [(0usize, max_reads), (1, max_writes)] {
            let mut k = 0;
            while let Some(mut head) = self.peek_mut(g, d).copied() {
                let ok = self.dispatch_time(g, &mut head, j).is_ok();
                if let Some(h) = self.peek_mut(g, d) {
                    h.tg_bps_charged = head.tg_bps_charged;
                }
                if !ok {
                    break;
                }
                self.dispatch_one(g, d, j);
                k += 1;
                if k >= max {
                    break;
                }
            }
            n += k;
        }
        n
    }

    /// `throtl_select_dispatch`.
    fn select_dispatch(&mut self, sq: usize, j: Jiffies) -> u32 {
        let mut nr = 0;
        while let Some(&(t, _, g)) = self.sqs[sq].pending.first() {
            if j < t {
                break;
            }
            self.dequeue_tg(g);
            let n = self.dispatch_tg(g, j);
            nr += n;
            if self.queued(g, 0) > 0 || self.queued(g, 1) > 0 {
                self.update_disptime(g, j);
                if n == 0 && self.tgs[g].disptime_jiffy <= j {
                    // zero wait yet nothing may go (the 2018 rule at an exact
                    // slice multiple): the kernel spins here until the next
                    // jiffy; stop and let the caller re-arm for it
                    break;
                }
            }
            if nr >= QUANTUM {
                break;
            }
        }
        nr
    }

    /// `throtl_pending_timer_fn` for service queue `sq`.
    fn pending_timer(&mut self, mut sq: usize, j: Jiffies) {
        loop {
            let mut dispatched = false;
            loop {
                if self.trace_on {
                    self.note_round(sq);
                }
                let n = self.select_dispatch(sq, j);
                dispatched |= n > 0;
                if n > 0 && self.trace_on {
                    self.note(|| format!("bios disp={n}"));
                }
                if self.schedule_next_dispatch(sq, false, j) {
                    break;
                }
                if n == 0 {
                    // the kernel spins until the next jiffy here
                    self.arm_timer(sq, j + 1, j);
                    break;
                }
            }
            if !dispatched {
                return;
            }
            match self.owner(sq) {
                Some(g) => {
                    if self.tgs[g].was_empty || self.tgs[g].iops_was_empty {
                        self.update_disptime(g, j);
                        let p = self.parent_sq[g];
                        if !self.schedule_next_dispatch(p, false, j) {
                            sq = p;
                            continue;
                        }
                    }
                    return;
                }
                None => {
                    self.dispatch_work();
                    return;
                }
            }
        }
    }

    /// `blk_throtl_dispatch_work_fn`: all reads, then all writes.
    fn dispatch_work(&mut self) {
        for d in 0..2 {
            while let Some(bio) = self.pop(self.td, d) {
                self.held -= 1;
                self.out.push(bio.io);
            }
        }
    }

    /// `blk_throtl_bio` / `__blk_throtl_bio`: [`Verdict::Dispatch`] if
    /// the IO may go on now, [`Verdict::Held`] if blk-throttle queued it.
    pub fn submit(&mut self, io: &Io, now: Instant) -> Verdict {
        let mut g = io.group.idx();
        let d = io.dir().idx();
        self.see(now);
        if g >= self.tgs.len() || self.tgs[g].canceling {
            let n = self.tgs.len();
            self.fault.raise(|| {
                format!(
                    "IO {:?} of group {g}, which is not among the {n} online groups",
                    io.id
                )
            });
            return Verdict::Dispatch;
        }
        let rest = io.flags.contains(IoFlags::SPLIT_REST);
        if rest {
            match self.cfg.variant.split {
                SplitCharge::Bypass => return Verdict::Dispatch,
                SplitCharge::CountOnly => {
                    self.charge_split(g, d);
                    return Verdict::Dispatch;
                }
                SplitCharge::PerFragment => {}
            }
        }
        // blk_should_throtl: IOPS rules always apply, bps rules only to
        // bytes not charged yet
        let t = &self.tgs[g];
        if !(t.has_rules_iops[d] || (t.has_rules_bps[d] && !rest)) {
            return Verdict::Dispatch;
        }
        let j = self.jiffies(now);
        let mut bio = Qio {
            io: *io,
            tg_bps_charged: false,
            bps_throttled: rest,
        };
        let mut qn = None;
        loop {
            let l = &self.tgs[g].limits;
            if l.bps[d] == BPS_MAX && l.iops[d] >= IOPS_MAX && self.queued(g, d) == 0 {
                // no limit at this level and nothing queued: the kernel's
                // checks all pass and its charges are never read (a later
                // limit change computes carryover from the old, unlimited
                // limits), so skip straight to the parent
            } else if self.within_limit(g, &mut bio, j) {
                self.charge_leave(g, &mut bio);
                self.trim(g, d, j);
            } else if io.flags.contains(IoFlags::ISSUE_AS_ROOT) {
                // tg_dispatch_in_debt: over the limit but issued anyway
                if self.cfg.variant.split_queues {
                    self.charge_bps(g, &mut bio);
                }
                self.charge_leave(g, &mut bio);
            } else {
                break;
            }
            qn = Some(Self::parent_qn(g, d));
            let p = self.parent_sq[g];
            if p == self.td {
                return Verdict::Dispatch;
            }
            g = p;
        }
        self.held += 1;
        if self.trace_on {
            self.note_queued(g, d, io.len);
        }
        self.add_bio_tg(bio, qn, g);
        if self.tgs[g].was_empty || self.tgs[g].iops_was_empty {
            self.update_disptime(g, j);
            let p = self.parent_sq[g];
            self.schedule_next_dispatch(p, true, j);
        }
        Verdict::Held
    }

    /// Run timers due at `now` and collect released IOs.
    pub fn run_timers(&mut self, now: Instant, released: &mut Vec<Io>) {
        while let Some((&(at, _, g), _)) = self.scheduled.first_key_value() {
            if at > now {
                break;
            }
            let Some((_, l)) = self.scheduled.pop_first() else {
                break;
            };
            self.set_limits(GroupId(g as u32), l, now);
        }
        let j = self.jiffies(now);
        // fire due timers, deepest service queues first for equal times
        while let Some(&(t, std::cmp::Reverse(s))) = self.timers.first() {
            if t > j {
                break;
            }
            self.timers.pop_first();
            self.sqs[s].timer_jiffy = None;
            self.pending_timer(s, j);
        }
        released.append(&mut self.out);
    }

    /// Earliest armed timer or scheduled limit change.
    pub fn deadline(&self) -> Option<Instant> {
        let t = self.timers.first().map(|&(j, _)| {
            // the inverse of `jiffies()`: timers are armed at or after the
            // current jiffy, never before the run's first
            let ticks = Jiffies(j.since(self.cfg.jiffies_at_start));
            Instant(
                Instant::from_jiffies(ticks, self.cfg.hz)
                    .as_ns()
                    .saturating_sub(self.cfg.tick_phase_ns),
            )
        });
        let s = self.scheduled.first_key_value().map(|x| x.0 .0);
        match (t, s) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Time must not run backwards (a fault otherwise: [`Clock`]).
    #[inline]
    fn see(&mut self, now: Instant) {
        self.clock.see(now, &mut self.fault);
    }

    /// Check the structural invariants; returns a description of the first
    /// violation.
    pub fn invariants(&self) -> Result<(), String> {
        let mut total = 0usize;
        for (s, sq) in self.sqs.iter().enumerate() {
            for d in 0..2 {
                let mut nb = 0;
                let mut ni = 0;
                for &qn in &sq.queued[d] {
                    let q = &self.qnodes[qn];
                    if !q.listed || (q.bps.is_empty() && q.iops.is_empty()) {
                        return Err(format!("sq {s} dir {d}: listed qnode {qn} is empty"));
                    }
                    nb += q.bps.len() as u32;
                    ni += q.iops.len() as u32;
                }
                if nb != sq.nr_queued_bps[d] || ni != sq.nr_queued_iops[d] {
                    return Err(format!(
                        "sq {s} dir {d}: counts {}/{} vs queues {nb}/{ni}",
                        sq.nr_queued_bps[d], sq.nr_queued_iops[d]
                    ));
                }
                total += (nb + ni) as usize;
            }
            if s != self.td
                && (sq.nr_queued_bps.iter().sum::<u32>() + sq.nr_queued_iops.iter().sum::<u32>())
                    > 0
                && self.tgs[s].pending_key.is_none()
            {
                return Err(format!("group {s} has queued bios but is not pending"));
            }
        }
        if total != self.held {
            return Err(format!("held {} but {total} queued", self.held));
        }
        Ok(())
    }
}

/// Bytes a bio is charged (`throtl_bio_data_size`): discards count 512.
fn charge_size(io: &Io) -> u64 {
    if io.op == IoOp::Discard {
        512
    } else {
        io.len
    }
}

impl Controller for Throttle {
    fn name(&self) -> &'static str {
        "throttle"
    }
    fn on_submit(&mut self, io: &mut Io, now: Instant) -> Verdict {
        self.submit(io, now)
    }
    fn on_timer(&mut self, now: Instant, released: &mut Vec<Io>) {
        self.see(now);
        self.run_timers(now, released);
    }
    fn on_complete(&mut self, _io: &Io, _a: Instant, _s: Instant, now: Instant) {
        self.see(now);
    }
    fn set_trace(&mut self, on: bool) {
        self.trace_on = on;
        if !on {
            self.notes.clear();
        }
    }
    fn drain_trace(&mut self, out: &mut Vec<Box<dyn crate::controller::TraceRecord>>) {
        out.extend(
            self.notes
                .drain(..)
                .map(|n| Box::new(n) as Box<dyn crate::controller::TraceRecord>),
        );
    }
    fn trace_dropped(&self) -> u64 {
        self.notes_dropped
    }
    fn next_deadline(&self) -> Option<Instant> {
        self.deadline()
    }
    fn held(&self) -> usize {
        self.held
    }
    fn on_group_added(&mut self, g: GroupId, parent: GroupId, _path: &str, now: Instant) {
        self.add_group(g, parent, now);
    }
    fn on_group_removed(&mut self, g: GroupId, now: Instant) {
        self.remove_group(g, now);
    }
    fn check(&self) -> Result<(), crate::controller::Violation> {
        self.invariants()
            .map_err(|what| crate::controller::Violation {
                controller: "throttle",
                what,
            })?;
        self.fault.check("throttle")
    }
    /// Queued bios per group, wherever in the hierarchy they wait (a bio
    /// climbs to its parent's service queue once its group passed it;
    /// `throtl_qnode` keeps its owner, as `tg_stat` counts by owner).
    fn live(&self, now: Instant, into: &mut crate::controller::LiveState) {
        for q in &self.qnodes {
            for bio in q.bps.iter().chain(&q.iops) {
                if let Some(g) = into.groups.get_mut(bio.io.group.idx()) {
                    g.throttled.add(&bio.io, now);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_split;
