//! The job loop's `zonemode=zbd` steps: an IO through fio's
//! `zbd_adjust_block` (moved to a write pointer, waiting for IO or a zone
//! lock, or ending the job's IO), and the zone resets it issues first.

use super::{After, Job, JobAction, JobIo, Phase};
use crate::zbd::Adjust;
use blkqos_core::Instant;

impl Job {
    /// Before the clone's first IO: fio `zbd_file_reset` (with verify, the
    /// range's zones are reset first).
    pub(super) fn zoned_start(&mut self, now: Instant) -> Option<JobAction> {
        let writes = self.spec.rw.has_write();
        let z = self.zbd.as_mut()?;
        let n = z.start(writes);
        if n == 0 {
            return None;
        }
        self.count_zone_resets(n);
        self.phase = Phase::ZoneReset { sent: false };
        Some(self.next_action(now))
    }

    fn count_zone_resets(&mut self, n: u64) {
        if !self.in_ramp() {
            self.stats.nr_zone_resets += n;
        }
    }

    /// `io` through fio's `zbd_adjust_block`.
    pub(super) fn issue_zoned(&mut self, io: JobIo, now: Instant) -> JobAction {
        let own = self.in_flight;
        let Some(z) = self.zbd.as_mut() else {
            return self.commit(io);
        };
        let (a, resets) = z.adjust(io.ddir, io.offset, io.len, own);
        self.count_zone_resets(resets);
        match a {
            Adjust::Accept { offset, len, reset } => {
                let io = JobIo { offset, len, ..io };
                // fio get_io_u: last_pos follows the adjusted IO
                self.files.set_seq_pos(io.ddir, offset + len);
                if reset.is_some() {
                    if let Some(z) = self.zbd.as_mut() {
                        z.after = Some(io);
                    }
                    self.phase = Phase::ZoneReset { sent: false };
                    return self.next_action(now);
                }
                self.commit(io)
            }
            Adjust::Quiesce => {
                self.phase = Phase::Quiesce {
                    until: now,
                    after: After::Retry,
                };
                self.next_action(now)
            }
            Adjust::Busy => {
                self.phase = Phase::Top;
                JobAction::WaitZone
            }
            Adjust::Eof => {
                // fio fill_io_u fails: the job's IO is done
                self.io_limit = self.issued_bytes_total;
                self.phase = Phase::Drain;
                self.next_action(now)
            }
            Adjust::Fail(errno) => {
                self.fail(errno, io.ddir, now);
                self.next_action(now)
            }
        }
    }

    /// [`Phase::ZoneReset`]: the next reset to send, or (all done) the IO
    /// that waited for them.
    pub(super) fn zone_reset_step(&mut self, sent: bool, _now: Instant) -> Option<JobAction> {
        let z = self.zbd.as_mut()?;
        if let Some(&(offset, len)) = z.resets.front() {
            if sent {
                return Some(JobAction::WaitCompletion);
            }
            self.phase = Phase::ZoneReset { sent: true };
            return Some(JobAction::ZoneReset { offset, len });
        }
        self.phase = Phase::Top;
        let io = z.after.take()?;
        Some(self.commit(io))
    }

    /// The zone reset sent by [`JobAction::ZoneReset`] returned at `now`
    /// with `errno` (0: done). A failed reset ends the job's IO with the
    /// error (fio `zbd_reset_wp`: "resetting wp failed").
    pub fn zone_reset_done(&mut self, now: Instant, errno: i32) {
        let Some(z) = self.zbd.as_mut() else {
            return;
        };
        z.resets.pop_front();
        if errno == 0 {
            if self.phase == (Phase::ZoneReset { sent: true }) {
                self.phase = Phase::ZoneReset { sent: false };
            }
            return;
        }
        z.resets.clear();
        if let Some(io) = z.after.take() {
            z.reaped(&io, errno);
        }
        self.fail(errno, 1, now);
    }
}
