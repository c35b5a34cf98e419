//! One run, several engines: each job clone's IO goes to its own engine's
//! backend, as fio runs each job with its own engine in its own thread
//! (fio 3.33 backend.c `thread_main`: `td->io_ops` is the job's). A run
//! that mixes `ioengine=falloc` or `e4defrag` jobs with `libaio` or `sync`
//! jobs on the same file (fio's examples falloc.fio, e4defrag.fio) drives
//! a [`FileCallBackend`](crate::fileops::FileCallBackend) for the file
//! calls and a [`RealBackend`](crate::RealBackend) per way of opening the
//! block jobs' file (`direct=1` and buffered jobs each open it their way,
//! as each fio job opens its own descriptor).
//!
//! The driver sees one backend, so its controllers, report and disk
//! accounting stay one run. The run's offsets are on a ledger of regions,
//! one per file (the run's plan); a part that takes one file's IO gets the
//! offset in that file (the IO's offset less the file's region start).
//! [`RoutedBackend::wait`] reaps every part that has IO in flight; when
//! none has a completion yet it sleeps on the only busy part, or, with
//! several busy, polls them in short slices. Every part counts time from
//! the same epoch ([`crate::RealBackend::set_epoch`]), so completion times
//! and the driver's deadlines are on one clock.

use blkqos_core::{Instant, Io, IoId, IoOp};
use blkqos_driver::{Backend, Completion};

/// The longest sleep on one busy part while another is busy too.
const POLL_SLICE_NS: u64 = 200_000;

/// One engine's backend and the ledger offset its file starts at.
pub struct Part {
    /// The backend.
    pub backend: Box<dyn Backend>,
    /// Subtracted from each IO's offset (0: the part takes ledger
    /// offsets, as the file-call backend does).
    pub base: u64,
}

/// A backend that routes each IO by its submitter (the job clone) to that
/// clone's engine backend.
pub struct RoutedBackend {
    epoch: std::time::Instant,
    parts: Vec<Part>,
    /// The part of each job clone, by [`blkqos_core::Submitter`] index.
    route: Vec<usize>,
    capacity: u64,
    /// Completions decided here (an IO no part takes): EINVAL.
    refused: Vec<(IoId, Instant)>,
}

impl RoutedBackend {
    /// Job clone `i` runs on `parts[route[i]]`; `capacity`: the ledger's
    /// size. `epoch` is the parts' own (each set to count time from it).
    pub fn new(
        epoch: std::time::Instant,
        parts: Vec<Part>,
        route: Vec<usize>,
        capacity: u64,
    ) -> Self {
        RoutedBackend {
            epoch,
            parts,
            route,
            capacity,
            refused: Vec::new(),
        }
    }

    fn part_of(&self, io: &Io) -> Option<usize> {
        let p = *self.route.get(io.submitter.0 as usize)?;
        // a flush names no range
        (io.op == IoOp::Flush || io.offset >= self.parts.get(p)?.base).then_some(p)
    }

    fn busy(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.parts.len()).filter(|&i| self.parts[i].backend.in_flight() > 0)
    }
}

impl Backend for RoutedBackend {
    fn now(&self) -> Instant {
        Instant(u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }
    fn nr_requests(&self) -> u32 {
        self.parts
            .iter()
            .map(|p| p.backend.nr_requests())
            .fold(0u32, u32::saturating_add)
            .max(1)
    }
    fn capacity_bytes(&self) -> u64 {
        self.capacity
    }
    fn max_io_bytes(&self) -> u64 {
        self.parts
            .iter()
            .map(|p| p.backend.max_io_bytes())
            .min()
            .unwrap_or(u64::MAX)
    }
    fn max_segments(&self) -> u32 {
        self.parts
            .iter()
            .map(|p| p.backend.max_segments())
            .min()
            .unwrap_or(u32::MAX)
    }
    fn submit(&mut self, io: &Io, now: Instant) {
        match self.part_of(io) {
            Some(p) => {
                let part = &mut self.parts[p];
                let mut routed = *io;
                routed.offset = routed.offset.saturating_sub(part.base);
                part.backend.submit(&routed, now);
            }
            None => self.refused.push((io.id, now)),
        }
    }
    fn wait(&mut self, deadline: Option<Instant>, out: &mut Vec<Completion>) {
        let start = out.len();
        for (id, at) in self.refused.drain(..) {
            out.push(Completion {
                id,
                error: 22, // EINVAL
                bytes: 0,
                at,
                issued: Some(at),
                dispatched: None,
            });
        }
        // what is done already, without sleeping (this also hands queued
        // IO to the kernel)
        let busy: Vec<usize> = self.busy().collect();
        let now = self.now();
        for &p in &busy {
            self.parts[p].backend.wait(Some(now), out);
        }
        if out.len() > start {
            return;
        }
        match (busy.as_slice(), deadline) {
            ([], None) => {}
            ([], Some(d)) => {
                let now = self.now();
                if d > now {
                    std::thread::sleep(std::time::Duration::from_nanos((d - now).0));
                }
            }
            ([one], d) => self.parts[*one].backend.wait(d, out),
            (several, d) => {
                // poll the busy parts in turn until one completes
                'poll: loop {
                    for &p in several {
                        let now = self.now();
                        if d.is_some_and(|d| now >= d) {
                            break 'poll;
                        }
                        let slice = Instant(now.0 + POLL_SLICE_NS);
                        let until = d.map_or(slice, |d| d.min(slice));
                        self.parts[p].backend.wait(Some(until), out);
                        if out.len() > start {
                            break 'poll;
                        }
                    }
                }
            }
        }
    }
    fn in_flight(&self) -> usize {
        self.refused.len()
            + self
                .parts
                .iter()
                .map(|p| p.backend.in_flight())
                .sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use blkqos_core::Submitter;

    /// Completes each IO at once, remembering the offsets it saw.
    struct Echo {
        epoch: std::time::Instant,
        seen: std::rc::Rc<std::cell::RefCell<Vec<u64>>>,
        done: Vec<Completion>,
    }

    impl Backend for Echo {
        fn now(&self) -> Instant {
            Instant(self.epoch.elapsed().as_nanos() as u64)
        }
        fn nr_requests(&self) -> u32 {
            4
        }
        fn capacity_bytes(&self) -> u64 {
            1 << 20
        }
        fn submit(&mut self, io: &Io, now: Instant) {
            self.seen.borrow_mut().push(io.offset);
            self.done.push(Completion {
                id: io.id,
                error: 0,
                bytes: io.len,
                at: now,
                issued: None,
                dispatched: None,
            });
        }
        fn wait(&mut self, _deadline: Option<Instant>, out: &mut Vec<Completion>) {
            out.append(&mut self.done);
        }
        fn in_flight(&self) -> usize {
            self.done.len()
        }
    }

    fn io(id: u64, submitter: u32, offset: u64) -> Io {
        Io {
            id: IoId(id),
            submitter: Submitter(submitter),
            group: blkqos_core::GroupId::ROOT,
            op: IoOp::Write,
            flags: blkqos_core::IoFlags::default(),
            offset,
            len: 4096,
            submitted_at: Instant::ZERO,
            cost_vtime: 0,
            ioprio: 0,
        }
    }

    #[test]
    fn routes_by_submitter_and_rebases_offsets() {
        let epoch = std::time::Instant::now();
        let seen: Vec<_> = (0..2)
            .map(|_| std::rc::Rc::new(std::cell::RefCell::new(Vec::new())))
            .collect();
        let parts = seen
            .iter()
            .zip([0, 1 << 20])
            .map(|(s, base)| Part {
                backend: Box::new(Echo {
                    epoch,
                    seen: s.clone(),
                    done: Vec::new(),
                }),
                base,
            })
            .collect();
        let mut b = RoutedBackend::new(epoch, parts, vec![1, 0, 1], 2 << 20);
        assert_eq!(b.nr_requests(), 8);
        b.submit(&io(1, 0, (1 << 20) + 4096), Instant::ZERO);
        b.submit(&io(2, 1, 8192), Instant::ZERO);
        // clone 2's part starts at 1 MiB: an IO below it belongs to no file
        b.submit(&io(3, 2, 0), Instant::ZERO);
        // a clone the run does not know
        b.submit(&io(4, 9, 0), Instant::ZERO);
        assert_eq!(b.in_flight(), 4);
        let mut out = Vec::new();
        b.wait(None, &mut out);
        assert_eq!(*seen[1].borrow(), vec![4096]);
        assert_eq!(*seen[0].borrow(), vec![8192]);
        let err: Vec<_> = out.iter().map(|c| (c.id.0, c.error)).collect();
        assert!(err.contains(&(1, 0)) && err.contains(&(2, 0)), "{err:?}");
        assert!(err.contains(&(3, 22)) && err.contains(&(4, 22)), "{err:?}");
        assert_eq!(b.in_flight(), 0);
    }

    #[test]
    fn sleeps_to_the_deadline_with_nothing_in_flight() {
        let epoch = std::time::Instant::now();
        let mut b = RoutedBackend::new(epoch, Vec::new(), Vec::new(), 0);
        let d = Instant(b.now().0 + 5_000_000);
        b.wait(Some(d), &mut Vec::new());
        assert!(b.now() >= d);
    }
}
