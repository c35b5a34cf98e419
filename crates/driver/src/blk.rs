//! The device request queue: `nr_requests` slots (tags). An IO that clears
//! the controller stack allocates a request; if none is free it waits in
//! FIFO order. The wait (`start - alloc`) is iocost's `rq_wait` signal, and
//! as in Linux it is *not* part of diskstats' per-IO time, which starts when
//! the request starts.
//!
//! Who waits: the kernel's `blk_mq_get_tag` (block/blk-mq-tag.c) sleeps in
//! the task that allocates the request (`sbitmap_prepare_to_wait`,
//! `io_schedule`), so a job's submit call waits here with its IO and a job
//! has at most one IO in this queue; IOs a kernel worker issues
//! (writeback, blk-throttle's dispatch work, iocost's waitqueue release,
//! the sqthread_poll thread's) queue up without blocking a job. The driver
//! loop (`run.rs`) decides who blocks; this queue only keeps the order.

use blkqos_core::{Instant, Io, IoId};
use std::collections::VecDeque;

/// The request queue of one device: `nr_requests` request slots, and the
/// IOs waiting for one in FIFO order with the time each started waiting.
#[derive(Debug)]
pub struct RequestQueue {
    nr_requests: u32,
    busy: u32,
    waiting: VecDeque<(IoId, Instant)>,
}

impl RequestQueue {
    /// A queue with `nr_requests` slots (`/sys/block/X/queue/nr_requests`;
    /// 0 is taken as 1), all free.
    pub fn new(nr_requests: u32) -> Self {
        RequestQueue {
            nr_requests: nr_requests.max(1),
            busy: 0,
            waiting: VecDeque::new(),
        }
    }
    /// An IO asks for a request at `now`. `true`: it starts now.
    #[inline]
    pub fn alloc(&mut self, io: &Io, now: Instant) -> bool {
        if self.busy < self.nr_requests && self.waiting.is_empty() {
            self.busy += 1;
            true
        } else {
            self.waiting.push_back((io.id, now));
            false
        }
    }
    /// A request completed: its slot goes to the oldest waiter, returned
    /// with the time it started waiting.
    #[inline]
    pub fn free(&mut self) -> Option<(IoId, Instant)> {
        self.busy -= 1;
        let next = self.waiting.pop_front()?;
        self.busy += 1;
        Some(next)
    }
    /// Requests that can be allocated now without waiting: the free slots,
    /// or none while IOs wait (they come first).
    #[inline]
    pub fn free_slots(&self) -> u32 {
        if self.waiting.is_empty() {
            self.nr_requests.saturating_sub(self.busy)
        } else {
            0
        }
    }
    /// IOs waiting for a free request slot.
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }
    /// Request slots in use (IOs started and not yet freed).
    pub fn busy(&self) -> u32 {
        self.busy
    }
}
