//! A completion from the backend: accounting, the controllers, the
//! request queue, then the IO's owner (a job's ring, the page cache, a
//! split bio's parent).

use super::*;

impl<B: Backend> Loop<'_, B> {
    /// The backend completed `c` (by reference: a copy of it would be
    /// read back across the backend's smaller stores into it).
    #[inline(always)]
    pub(super) fn complete(&mut self, c: &Completion) {
        let Some(&f) = self.flights.remove(c.id) else {
            return;
        };
        let now = c.at;
        let passthrough = f.io.flags.contains(IoFlags::PASSTHROUGH);
        if !passthrough {
            self.disk.done(f.io.op, c.bytes, f.started_at, now);
        }

        if self.sinks.trace.is_some() || self.sinks.requests {
            self.trace_request(&f, c.dispatched, now);
        }
        if let Some(h) = &mut self.sinks.lat {
            // device: the diskstats interval; group: from submit_bio
            h.record(
                f.io.op,
                f.io.group,
                (now - f.started_at).as_ns(),
                (now - f.io.submitted_at).as_ns(),
            );
        }
        if !passthrough {
            self.stack.on_complete(&f.io, f.alloc_at, f.started_at, now);
        }
        if let Some((next, _alloc)) = self.rq.free() {
            self.start(next, now);
        }
        if !self.plug.merged.is_empty() {
            if let Some((_, bios)) = self.plug.merged.remove(&c.id) {
                self.complete_merged(f, bios, *c);
                return;
            }
        }
        if f.io.flags.contains(IoFlags::FRAGMENT) {
            // a piece: its bio completes with its last piece
            if let Some((parent, whole)) = self.piece_done(c.id, c) {
                self.finish_flight(parent, &whole);
            }
        } else {
            self.finish_flight(f, c);
        }
    }

    /// The request of `f` completed at `now`: to the trace and the sink.
    #[cold]
    #[inline(never)]
    pub(super) fn trace_request(&mut self, f: &Flight, dispatched: Option<Instant>, now: Instant) {
        let r = RequestRecord {
            group: f.io.group,
            op: f.io.op,
            submitted_at: f.io.submitted_at,
            started_at: f.started_at,
            dispatched_at: dispatched.map_or(f.started_at, |d| d.max(f.started_at)),
            completed_at: now,
            bytes: f.io.len,
            offset: f.io.offset,
        };
        if let Some(t) = &mut self.sinks.trace {
            t.push(r);
        }
        if let (true, Some(s)) = (self.sinks.requests, &mut self.sinks.sink) {
            s.request(&r);
        }
    }

    /// A job IO, writeback or flush completed as a whole (`c` sums its
    /// pieces when it was split).
    #[inline(always)]
    pub(super) fn finish_flight(&mut self, f: Flight, c: &Completion) {
        if self.plug.batched && f.kind == FlightKind::Job {
            self.finish_batched_flight(f, *c);
            return;
        }
        self.finish_flight_now(f, c);
    }

    /// [`Loop::finish_flight`] for a job that submits in batches: an IO
    /// whose submit call has not returned waits for it.
    #[cold]
    #[inline(never)]
    pub(super) fn finish_batched_flight(&mut self, f: Flight, c: Completion) {
        if let Some((f, c)) = self.hold_early(f, c) {
            self.finish_flight_now(f, &c);
        }
    }

    #[inline(always)]
    pub(super) fn finish_flight_now(&mut self, f: Flight, c: &Completion) {
        if f.kind != FlightKind::Job || self.cache.pc.is_some() {
            self.complete_other(&f, *c);
            if f.kind != FlightKind::Job {
                return;
            }
        }
        let mut error = c.error;
        if let (0, Some((m, contents))) = (error, &mut self.medium) {
            let j = f.job as usize;
            error = m.complete(self.jobs[j].job.spec(), &contents[j], &f.jio);
        }
        // built in place in the ring (a copy through the stack would be
        // read back across its smaller stores)
        let reaped = || Reaped {
            io: f.jio,
            issue_time: issue_time(&f, c),
            error,
            bytes_done: if error == 0 { c.bytes } else { 0 },
        };
        let slot = &mut self.jobs[f.job as usize];
        if slot.offload {
            slot.deliver_offloaded(reaped(), c.at);
        } else {
            slot.ring.push(reaped());
        }
    }
}
