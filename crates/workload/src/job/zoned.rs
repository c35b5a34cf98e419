//! A clone's side of `zonemode=zbd`: its range in the shared zone state
//! ([`crate::zbd`]), the IOs it holds zones with, and the device zone
//! resets it must issue before it goes on (fio issues them synchronously,
//! `zbd_reset_zone` → `BLKRESETZONE`).

use super::{Ddir, JobIo};
use crate::spec::{JobSpec, PerDir};
use crate::spec_zone::ZoneMode;
use crate::zbd::{Adjust, ZbdFile, ZbdShared};
use std::collections::VecDeque;

#[derive(Debug)]
pub(super) struct ZbdJob {
    shared: ZbdShared,
    file: ZbdFile,
    started: bool,
    /// IOs accepted into zones and not reaped yet: (ddir, offset, len).
    queued: Vec<(Ddir, u64, u64)>,
    /// Zone resets (start, length) to issue on the device before going on.
    pub resets: VecDeque<(u64, u64)>,
    /// The IO that waits for those resets.
    pub after: Option<JobIo>,
}

impl ZbdJob {
    /// `None` unless the job runs in zbd mode on a device the run set up.
    pub(super) fn new(spec: &JobSpec, extents: &[(u64, u64)]) -> Option<Self> {
        let z = &spec.zones;
        if z.mode != ZoneMode::Zbd {
            return None;
        }
        let shared = z.zbd.clone()?;
        let &[(start, len)] = extents else {
            return None;
        };
        let file = ZbdFile {
            td: 0,
            file_offset: start,
            io_size: len,
            min_bs: PerDir::from_fn(|d| spec.min_bs(d)),
            random: spec.rw.is_random(),
            rw: spec.rw.has_read() && spec.rw.has_write(),
            job_max_open_zones: z.job_max_open_zones,
            reset_threshold: z.reset_threshold,
            reset_frequency: z.reset_frequency,
            read_beyond_wp: z.read_beyond_wp,
            verify: spec.verify.logs_writes(),
        };
        Some(ZbdJob {
            shared,
            file,
            started: false,
            queued: Vec::new(),
            resets: VecDeque::new(),
            after: None,
        })
    }

    /// The clone's number among every clone of the run (fio's `td`).
    pub(super) fn set_td(&mut self, td: u32) {
        self.file.td = td;
    }

    /// fio `zbd_file_reset` before the clone's first IO; the zone resets
    /// it counts.
    pub(super) fn start(&mut self, writes: bool) -> u64 {
        if self.started {
            return 0;
        }
        self.started = true;
        let r = self.shared.lock().file_reset(&self.file, writes);
        let n = r.len() as u64;
        self.resets.extend(r);
        n
    }

    /// fio `zbd_adjust_ddir`.
    pub(super) fn adjust_ddir(&self, ddir: Ddir) -> Ddir {
        self.shared.lock().adjust_ddir(&self.file, ddir)
    }

    /// fio `zbd_adjust_block`, and on acceptance `zbd_queue_io` (and for a
    /// trim `zbd_do_io_u_trim`). With the answer, the zone resets fio
    /// counts for it.
    pub(super) fn adjust(&mut self, ddir: Ddir, offset: u64, len: u64, own: u32) -> (Adjust, u64) {
        let mut info = self.shared.lock();
        let a = info.adjust_block(&self.file, ddir, offset, len, own);
        let Adjust::Accept { offset, len, reset } = a else {
            return (a, 0);
        };
        let mut counted = u64::from(reset.is_some());
        if let Some(r) = reset {
            self.resets.push_back(r);
        }
        if ddir == Ddir::Trim {
            // a trim resets its zone instead (an offset off the zone's
            // start fails on the device with EINVAL, as fio's does)
            if let Ok((_, true)) = info.trim(&self.file, offset) {
                counted += 1;
            }
        }
        info.queue_io(&self.file, ddir, offset, len);
        self.queued.push((ddir, offset, len));
        (a, counted)
    }

    /// An IO of the clone completed (fio `zbd_put_io`); IOs that never
    /// went through [`ZbdJob::adjust`] (verify's read-back) are ignored.
    pub(super) fn reaped(&mut self, io: &JobIo, error: i32) {
        let key = (io.ddir, io.offset, io.len);
        if let Some(p) = self.queued.iter().position(|q| *q == key) {
            self.queued.swap_remove(p);
            self.shared
                .lock()
                .put_io(&self.file, io.ddir, io.offset, io.len, error);
        }
    }
}
