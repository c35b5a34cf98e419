//! The job loop's `zonemode=zbd` steps: an IO through fio's
//! `zbd_adjust_block` (moved to a write pointer, waiting for IO or a zone
//! lock, or ending the job's IO), and the zone resets it issues first.

use super::{After, Ddir, Job, JobAction, JobIo, Phase};
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
        self.fail(errno, Ddir::Write, now);
    }
}

#[cfg(test)]
mod tests {
    use super::super::Reaped;
    use super::*;
    use crate::spec::{JobSpec, PerDir, RwMode};
    use crate::spec_zone::ZoneMode;
    use crate::zbd::{ZbdInfo, ZbdShared, ZbdZone};
    use blkqos_core::Duration;

    const ZS: u64 = 1 << 20;

    /// Two sequential zones; a job writing them twice over, 256 KiB at a
    /// time; every IO completes 10 µs after it is issued, every reset at
    /// once. The device's side: what was issued, in order.
    fn run(shared: &ZbdShared, rw: RwMode, io_size: u64) -> Vec<JobAction> {
        let mut s = JobSpec::new("z");
        s.rw = rw;
        s.bs = PerDir::all(256 << 10);
        s.io_size = Some(io_size);
        s.zones.mode = ZoneMode::Zbd;
        s.zones.zbd = Some(shared.clone());
        let mut job = Job::new(s, 0, 0, 2 * ZS, 1, Instant::ZERO);
        let mut now = Instant::ZERO;
        let mut seen = Vec::new();
        for _ in 0..1000 {
            let a = job.next_action(now);
            seen.push(a);
            match a {
                JobAction::Issue(io) => {
                    job.submitted(now);
                    now += Duration::from_us(10);
                    let r = Reaped {
                        io,
                        issue_time: now,
                        error: 0,
                        bytes_done: io.len,
                    };
                    job.reap(&[r], now);
                }
                JobAction::ZoneReset { .. } => job.zone_reset_done(now, 0),
                JobAction::Done => break,
                JobAction::WaitCompletion => {}
                other => panic!("{other:?}"),
            }
        }
        seen
    }

    #[test]
    fn writes_follow_the_write_pointer_and_full_zones_are_reset() {
        let zones = vec![ZbdZone::empty(0, ZS), ZbdZone::empty(ZS, ZS)];
        let shared = ZbdShared::new(ZbdInfo::from_report(ZS, zones, 2 * ZS));
        let seen = run(&shared, RwMode::Write, 4 * ZS);
        let issued: Vec<u64> = seen
            .iter()
            .filter_map(|a| match a {
                JobAction::Issue(io) => Some(io.offset / (256 << 10)),
                _ => None,
            })
            .collect();
        // 16 writes: 0..8 fill both zones, then each zone is reset before
        // it is written again from its start
        assert_eq!(issued, [0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7]);
        let resets: Vec<(usize, u64)> = seen
            .iter()
            .enumerate()
            .filter_map(|(i, a)| match a {
                JobAction::ZoneReset { offset, len } => {
                    assert_eq!(*len, ZS);
                    Some((i, *offset))
                }
                _ => None,
            })
            .collect();
        assert_eq!(resets.iter().map(|r| r.1).collect::<Vec<_>>(), [0, ZS]);
        // each reset comes before the zone's next write
        for (i, off) in resets {
            assert!(matches!(seen[i + 1], JobAction::Issue(io) if io.offset == off));
        }
        // reads: only what is below the write pointers (zone 0 written,
        // zone 1 empty: the sequential read ends after zone 0)
        let zones = vec![ZbdZone::empty(0, ZS), ZbdZone::empty(ZS, ZS)];
        let shared = ZbdShared::new(ZbdInfo::from_report(ZS, zones, 2 * ZS));
        run(&shared, RwMode::Write, ZS);
        let seen = run(&shared, RwMode::Read, 2 * ZS);
        let read: u64 = seen
            .iter()
            .filter_map(|a| match a {
                JobAction::Issue(io) => Some(io.len),
                _ => None,
            })
            .sum();
        assert_eq!(read, ZS, "zone 0's data, then the IO ends");
    }
}
