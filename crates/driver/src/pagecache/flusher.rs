//! The flushers of the `async` and `root` writeback modes: each one forms
//! its next bio only when it is free to submit it, as `wb_workfn` does.
//!
//! # Design
//!
//! A flusher (one per wb in `async`, cgroup-v2 writeback; one for the
//! device in `root`) is asleep until something wakes it, then writes
//! chunks of its inodes while its work lasts, one bio at a time:
//!
//! * **Waking.** A writer's `balance_dirty_pages` pass wakes its wb's
//!   flusher when it is not already writing and the global dirty pages
//!   (writeback excluded) exceed `bg_thresh`, or the pass was not free
//!   running (`wb_start_background_writeback`, called from the pass loop
//!   since Linux 6.0). The periodic wake-up (`dirty_writeback_interval`)
//!   asks every flusher with dirty inodes for a kupdate pass and a
//!   background check (`wb_check_old_data_flush`,
//!   `wb_check_background_flush`).
//! * **Work.** A kupdate pass writes the inodes dirtied more than
//!   `dirty_expire` ago; background work goes on while
//!   `wb_over_bg_thresh` holds: the global dirty pages, writeback
//!   excluded, over `bg_thresh`; the wb's own dirty pages over its share
//!   of it (`wb_calc_thresh`); or its memory cgroup over its own
//!   background threshold. It is checked between chunks, as `wb_writeback`
//!   checks it between passes over the inodes: a chunk once begun is
//!   written (`writeback_chunk_size` pages of one inode).
//! * **Bios.** A page becomes "under writeback" only when the flusher puts
//!   it in a bio, and the flusher puts the next bio together only once
//!   its last one was submitted: while a bio waits for a tag or in a stage
//!   that blocks its submitter (blk-wbt, iocost), the flusher sleeps and
//!   the pages it has not reached stay dirty, counted by the background
//!   check. A bio is the run of contiguous dirty pages at the inode's
//!   cursor, at most the rest of the chunk and `writeback_io_bytes`: pages
//!   dirtied while the flusher slept join the next bio.
//!
//! The `sync` mode keeps its single flusher (`PageCache::poll`): it already
//! forms one IO at a time and waits while a controller holds it.

use super::{PageCache, WritebackIo, WritebackMode};
use blkqos_core::Instant;

/// One flusher's state.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Flusher {
    /// Woken for background writeback: check `wb_over_bg_thresh` before
    /// the next chunk.
    background: bool,
    /// A kupdate pass is due: write the expired inodes first.
    kupdate: bool,
    /// The chunk being written: (wb, inode, bytes left).
    chunk: Option<(usize, usize, u64)>,
}

impl Flusher {
    /// It has work (`writeback_in_progress`).
    fn busy(&self) -> bool {
        self.background || self.kupdate || self.chunk.is_some()
    }
}

impl PageCache {
    /// The modes whose flushers form bios on demand ([`PageCache::flusher_next`]).
    pub(super) fn lazy_flushers(&self) -> bool {
        self.cfg.mode != WritebackMode::Sync
    }

    /// How many flushers ask for [`PageCache::flusher_next`]: one per wb
    /// (`async`), one for the device (`root`), none (`sync`).
    pub fn flusher_count(&self) -> usize {
        match self.cfg.mode {
            WritebackMode::Async => self.wbs.len(),
            WritebackMode::Root => self.wbs.len().min(1),
            WritebackMode::Sync => 0,
        }
    }

    /// The flusher that writes wb `w`'s inodes.
    fn flusher_of(&self, w: usize) -> usize {
        match self.cfg.mode {
            WritebackMode::Root => 0,
            _ => w,
        }
    }

    /// The wbs flusher `f` writes, first to consider first.
    fn flusher_wbs(&self, f: usize) -> impl Iterator<Item = usize> {
        let n = self.wbs.len();
        let (start, count) = match self.cfg.mode {
            WritebackMode::Root => (self.rr, n),
            _ => (f, 1),
        };
        (0..count).map(move |k| (start + k) % n.max(1))
    }

    /// The driver asks every free flusher now: the wake-ups so far are
    /// seen (a blocked flusher is asked again when its bio moves on).
    pub fn flushers_asked(&mut self) {
        self.flusher_kick = false;
    }

    /// Flusher `f` has work (asking it for a bio may give one).
    #[inline]
    pub fn flusher_busy(&self, f: usize) -> bool {
        self.flushers.get(f).is_some_and(Flusher::busy)
    }

    /// A `balance_dirty_pages` pass of a writer in wb `w` (`freerun`:
    /// below both domains' freerun ceilings) wakes its flusher as the
    /// pass loop does.
    pub(super) fn wake_from_balance(&mut self, w: usize, freerun: bool) {
        if !self.lazy_flushers() {
            return;
        }
        let f = self.flusher_of(w);
        self.grow_flushers();
        if !self.flushers[f].busy() && (self.nr_dirty > self.bg_thresh || !freerun) {
            self.flushers[f].background = true;
            self.flusher_kick = true;
        }
    }

    /// The periodic wake-up: every flusher with a dirty inode runs a
    /// kupdate pass (once inodes can have expired) and a background check.
    pub(super) fn wake_periodic(&mut self, now: Instant) {
        self.grow_flushers();
        let expiry_possible = now.0 >= self.t0.0 + self.cfg.dirty_expire.as_ns();
        for w in 0..self.wbs.len() {
            if self.wbs[w].b_dirty.is_empty() {
                continue;
            }
            let f = self.flusher_of(w);
            self.flushers[f].background = true;
            self.flushers[f].kupdate |= expiry_possible;
            self.flusher_kick = true;
        }
    }

    fn grow_flushers(&mut self) {
        let n = self.wbs.len().max(1);
        if self.flushers.len() < n {
            self.flushers.resize(n, Flusher::default());
        }
    }

    /// Flusher `f` is free to submit (its last bio was submitted): the next
    /// bio it writes at `now`, or None when its work is done (it sleeps
    /// until woken).
    pub fn flusher_next(&mut self, f: usize, now: Instant) -> Option<WritebackIo> {
        let mut fl = *self.flushers.get(f)?;
        if !fl.busy() {
            return None;
        }
        self.poll_j = self.jiffies(now);
        let io = self.next_bio(f, &mut fl, now);
        self.flushers[f] = fl;
        io
    }

    fn next_bio(&mut self, f: usize, fl: &mut Flusher, now: Instant) -> Option<WritebackIo> {
        loop {
            if let Some((w, inode, left)) = fl.chunk {
                if left > 0 && !self.inodes[inode].dirty.is_empty() {
                    let mut out = Vec::with_capacity(1);
                    self.write_some(inode, left, &mut out);
                    let io = out.pop()?;
                    fl.chunk = Some((w, inode, left.saturating_sub(io.len)));
                    self.bandwidth_after_writepages(w);
                    return Some(io);
                }
                fl.chunk = None;
                self.end_chunk(w, inode);
            }
            if fl.kupdate {
                match self.expired_inode(f, now) {
                    Some((w, inode)) => {
                        fl.chunk = Some((w, inode, self.chunk_bytes(w)));
                        continue;
                    }
                    None => fl.kupdate = false,
                }
            }
            if fl.background {
                match self.background_inode(f) {
                    Some((w, inode)) => {
                        fl.chunk = Some((w, inode, self.chunk_bytes(w)));
                        continue;
                    }
                    None => fl.background = false,
                }
            }
            return None;
        }
    }

    /// `do_writepages`: a wb that submitted writeback updates its bandwidth
    /// estimate when the last update is older than the interval.
    fn bandwidth_after_writepages(&mut self, w: usize) {
        let wb = &mut self.wbs[w];
        if std::mem::take(&mut wb.flushed)
            && super::dirty::bandwidth_due(&wb.st, self.poll_j, self.hz)
        {
            super::dirty::update_bandwidth(
                &mut wb.st,
                &mut self.global,
                None,
                self.poll_j,
                self.hz,
            );
        }
    }

    /// The first inode of flusher `f`'s wbs dirtied more than
    /// `dirty_expire` before `now`.
    fn expired_inode(&self, f: usize, now: Instant) -> Option<(usize, usize)> {
        let expired_before = Instant(now.0.checked_sub(self.cfg.dirty_expire.as_ns())?);
        self.flusher_wbs(f).find_map(|w| {
            let &inode = self.wbs.get(w)?.b_dirty.front()?;
            self.inodes[inode]
                .dirtied_when
                .is_some_and(|d| d <= expired_before)
                .then_some((w, inode))
        })
    }

    /// The next inode of flusher `f`'s wbs for background writeback: the
    /// first wb over its background threshold that has a dirty inode.
    fn background_inode(&mut self, f: usize) -> Option<(usize, usize)> {
        let wbs: Vec<usize> = self.flusher_wbs(f).collect();
        for w in wbs {
            let Some(&inode) = self.wbs.get(w).and_then(|wb| wb.b_dirty.front()) else {
                continue;
            };
            if self.wb_over_bg(w) {
                return Some((w, inode));
            }
        }
        None
    }

    /// `wb_over_bg_thresh`: the global dirty pages (writeback excluded)
    /// over `bg_thresh`, the wb's dirty pages over its share of it, or
    /// its memory cgroup over its own.
    fn wb_over_bg(&mut self, w: usize) -> bool {
        if self.nr_dirty > self.bg_thresh {
            return true;
        }
        let share = super::dirty::wb_share(
            &mut self.wbs[w].st,
            &mut self.global,
            false,
            (self.bg_thresh, self.nr_dirty, self.cfg.wb_thresh_floor),
            self.poll_j,
            self.hz,
        );
        self.wbs[w].dirty_pages > share || self.memcg_over_bg(w)
    }
}
