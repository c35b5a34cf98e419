//! The simulator as a driver backend.

use crate::device::DeviceModel;
use blkqos_core::{Instant, Io};
use blkqos_driver::{Backend, Completion};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Event queue + virtual clock + one device model.
pub struct SimBackend {
    now: Instant,
    device: Box<dyn DeviceModel>,
    /// (completion time, sequence, completion)
    events: BinaryHeap<Reverse<(Instant, u64, CompletionKey)>>,
    seq: u64,
    events_processed: u64,
}

/// Completion payload ordered only by (time, seq) in practice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct CompletionKey {
    id: u64,
    error: i32,
    bytes: u64,
}

impl SimBackend {
    pub fn new(device: Box<dyn DeviceModel>) -> Self {
        SimBackend {
            now: Instant::ZERO,
            device,
            events: BinaryHeap::with_capacity(1024),
            seq: 0,
            events_processed: 0,
        }
    }
    pub fn device(&self) -> &dyn DeviceModel {
        self.device.as_ref()
    }
    /// Number of completion events processed so far.
    pub fn events_processed(&self) -> u64 {
        self.events_processed
    }
}

impl Backend for SimBackend {
    fn now(&self) -> Instant {
        self.now
    }
    fn nr_requests(&self) -> u32 {
        self.device.nr_requests()
    }
    fn capacity_bytes(&self) -> u64 {
        self.device.capacity_bytes()
    }
    fn submit(&mut self, io: &Io, now: Instant) {
        let (at, error) = self.device.service(io, now);
        let bytes = if error == 0 { io.len } else { 0 };
        self.seq += 1;
        self.events.push(Reverse((
            at.max(now),
            self.seq,
            CompletionKey {
                id: io.id.0,
                error,
                bytes,
            },
        )));
    }
    fn wait(&mut self, deadline: Option<Instant>, out: &mut Vec<Completion>) {
        let next = self.events.peek().map(|Reverse((t, _, _))| *t);
        let target = match (next, deadline) {
            (Some(n), Some(d)) => n.min(d),
            (Some(n), None) => n,
            (None, Some(d)) => d,
            (None, None) => return,
        };
        self.now = self.now.max(target);
        while let Some(Reverse((t, _, _))) = self.events.peek() {
            if *t > self.now {
                break;
            }
            let Reverse((t, _, c)) = self.events.pop().expect("peeked");
            self.events_processed += 1;
            out.push(Completion {
                id: blkqos_core::IoId(c.id),
                error: c.error,
                bytes: c.bytes,
                at: t,
            });
        }
    }
    fn in_flight(&self) -> usize {
        self.events.len()
    }
}
