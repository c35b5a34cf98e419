//! Groups created and removed while iocost runs (`mkdir`/`rmdir` of a
//! cgroup): the kernel's `ioc_pd_alloc` + `ioc_pd_init` for a new blkg,
//! and `ioc_pd_free` for a removed one once its last bio is done (the
//! bios in flight pin the blkg; a task waiting in the group's wait queue
//! is a task in the cgroup, which `rmdir` refuses).

use super::group::CostGroup;
use super::IoCost;
use crate::cgroup::GroupId;
use crate::time::Instant;

/// Where a group is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Life {
    /// Submits IO.
    Online,
    /// Removed, with IO still in flight: it completes under the group.
    Draining,
    /// Removed and done: off the active list, weights given back.
    Freed,
}

impl IoCost {
    /// linux block/blk-iocost.c: ioc_pd_init() for a group created at
    /// `at` under `parent`: its vtime starts at the device's vnow, its
    /// weight is the default until `io.weight` says otherwise.
    pub(super) fn add_group(&mut self, g: GroupId, parent: GroupId, path: &str, at: Instant) {
        let ns = self.clock(at);
        let n = self.groups.len();
        let p = parent.idx();
        if g.idx() != n || p >= n || self.life[p] != Life::Online {
            self.fault.raise(|| {
                format!("group {g} added under {parent}, but the controller has {n} groups (the parent must be online)")
            });
            return;
        }
        let mut ancestors = self.groups[p].ancestors.clone();
        ancestors.push(n);
        let level = ancestors.len() - 1;
        let now = self.snapshot(ns);
        self.groups
            .push(CostGroup::new(level, ancestors, now.vnow, self.cur_period));
        self.paths.push(path.to_string());
        self.life.push(Life::Online);
        self.weight_updated(n, &now);
    }

    /// The group was removed at `at`: no IO of it is accepted from now on;
    /// it is freed at once, or when its last IO in flight completes.
    pub(super) fn remove_group(&mut self, g: GroupId, at: Instant) {
        let ns = self.clock(at);
        let gi = g.idx();
        let n = self.groups.len();
        if gi == 0 || gi >= n || self.life[gi] != Life::Online || !self.groups[gi].waitq.is_empty()
        {
            self.fault.raise(|| {
                format!("group {g} removed, but it is the root, not online among the {n} groups, or has submitters waiting")
            });
            return;
        }
        self.life[gi] = Life::Draining;
        self.free_if_done(gi, ns);
    }

    /// linux block/blk-iocost.c: ioc_pd_free() — once a removed group has
    /// nothing in flight: off the active list with its weights propagated
    /// as 0, its wait-queue timer cancelled.
    pub(super) fn free_if_done(&mut self, g: usize, ns: u64) {
        if self.life[g] != Life::Draining || self.groups[g].inflight_cost != 0 {
            return;
        }
        self.life[g] = Life::Freed;
        if self.groups[g].on_active_list {
            let now = self.snapshot(ns);
            self.propagate_weights(g, 0, 0, false, &now);
            self.groups[g].on_active_list = false;
            self.active_list.retain(|&x| x != g);
        }
        self.waitq_timers.set(g, None);
    }

    /// May `g` submit IO?
    pub(super) fn is_online(&self, g: usize) -> bool {
        self.life.get(g) == Some(&Life::Online)
    }

    /// Submitters of `g` asleep in its wait queue.
    pub(super) fn waiters_of(&self, g: GroupId) -> u32 {
        self.groups
            .get(g.idx())
            .map_or(0, |grp| grp.waitq.len() as u32)
    }
}
