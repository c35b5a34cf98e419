//! What the simulated medium holds, for the sg engine's VERIFY commands
//! that compare data (`sg_write_mode=verify_bytchk_01|11`): a fingerprint
//! of every 512-byte logical block written in the run, from the writing
//! job's buffer contents (fio fills them with `buffer_pattern` repeated
//! from the start of the buffer, or zeros), and SCSI's answer to a
//! compare: a block that differs fails the command with CHECK CONDITION,
//! sense key MISCOMPARE, which fio's sg engine turns into EIO
//! (`fio_sgio_ioctl_doio`: `SG_INFO_CHECK`).
//!
//! Kept only when a job of the run compares data. Blocks never written
//! read as zeros (a fresh simulated medium), and so do trimmed ones. Each command acts on the
//! medium when it completes (SBC-4: WRITE SAME with NDOB writes zeros;
//! WRITE SAME repeats the one block sent; VERIFY with BYTCHK 01 compares
//! the range with the data sent, with BYTCHK 11 each block of the range
//! with the one block sent; BYTCHK 00 checks the medium only).

use blkqos_workload::spec_engine::SgWriteMode;
use blkqos_workload::{Ddir, IoEngine, JobIo, JobSpec};
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};

/// The logical block size of the simulated device.
pub(super) const LBA_BYTES: u64 = 512;

/// fio's EIO for a command that ended in CHECK CONDITION.
const EIO: i32 = 5;

/// What a job's write buffers hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Contents {
    /// `buffer_pattern` (or zeros): the bytes, repeated from the buffer's
    /// start.
    Pattern(Vec<u8>),
    /// fio's random fill: different from anything else on the medium
    /// (the job, and a serial number per IO).
    Random(u32),
}

impl Contents {
    /// The job's buffer contents as fio fills them (`fill_io_buffer`):
    /// compression or dedupe settings make random-looking data, then the
    /// pattern, then zeros, else random.
    pub(super) fn of(spec: &JobSpec, job: u32) -> Self {
        let b = &spec.buffers;
        if b.compress_percentage != 0 || b.dedupe_percentage != 0 {
            Contents::Random(job)
        } else if let Some(p) = b.pattern.as_ref().filter(|p| !p.is_empty()) {
            Contents::Pattern(p.clone())
        } else if b.zero {
            Contents::Pattern(vec![0])
        } else {
            Contents::Random(job)
        }
    }
}

fn fingerprint_bytes(bytes: impl Iterator<Item = u8>) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for b in bytes {
        b.hash(&mut h);
    }
    h.finish()
}

/// The medium: block number to the fingerprint of its 512 bytes.
#[derive(Debug)]
pub(super) struct Medium {
    blocks: BTreeMap<u64, u64>,
    zero: u64,
    serial: u64,
}

impl Medium {
    pub(super) fn new() -> Self {
        Medium {
            blocks: BTreeMap::new(),
            zero: fingerprint_bytes(std::iter::repeat_n(0u8, LBA_BYTES as usize)),
            serial: 0,
        }
    }

    /// Does a job of the run need the medium? (A VERIFY that compares.)
    pub(super) fn needed<'a>(mut specs: impl Iterator<Item = &'a JobSpec>) -> bool {
        specs.any(|s| s.ioengine == IoEngine::Sg && s.engine.sg_write_mode.compares_data())
    }

    /// The fingerprint of the `k`-th block of a buffer holding `c` (for
    /// random contents, one per IO: `serial`).
    fn buffer_block(&self, c: &Contents, k: u64, serial: u64) -> u64 {
        match c {
            Contents::Pattern(p) => {
                let start = k * LBA_BYTES;
                let n = p.len() as u64;
                fingerprint_bytes((0..LBA_BYTES).map(|i| p[((start + i) % n) as usize]))
            }
            Contents::Random(job) => {
                fingerprint_bytes(job.to_le_bytes().into_iter().chain(serial.to_le_bytes()))
                    ^ (k.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
            }
        }
    }

    fn at(&self, lba: u64) -> u64 {
        self.blocks.get(&lba).copied().unwrap_or(self.zero)
    }

    /// A job's IO `io` completed without error: what it does to the
    /// medium; the errno the command ends with (EIO for a miscompare).
    pub(super) fn complete(&mut self, spec: &JobSpec, c: &Contents, io: &JobIo) -> i32 {
        if io.ddir == Ddir::Trim {
            // unmapped blocks read as zeros, as blocks never written
            let zero = self.zero;
            self.fill(io.offset / LBA_BYTES, io.len / LBA_BYTES, |_| zero);
            return 0;
        }
        if io.ddir != Ddir::Write {
            return 0;
        }
        self.serial += 1;
        let serial = self.serial;
        let lba = io.offset / LBA_BYTES;
        let n = io.len / LBA_BYTES;
        let mode = if spec.ioengine == IoEngine::Sg {
            spec.engine.sg_write_mode
        } else {
            SgWriteMode::Write
        };
        match mode {
            SgWriteMode::VerifyBytchk00 => 0,
            SgWriteMode::VerifyBytchk01 => {
                let same = (0..n).all(|k| self.at(lba + k) == self.buffer_block(c, k, serial));
                if same {
                    0
                } else {
                    EIO
                }
            }
            SgWriteMode::VerifyBytchk11 => {
                let sent = self.buffer_block(c, 0, serial);
                if (0..n).all(|k| self.at(lba + k) == sent) {
                    0
                } else {
                    EIO
                }
            }
            SgWriteMode::WriteSame => {
                let one = self.buffer_block(c, 0, serial);
                self.fill(lba, n, |_| one);
                0
            }
            SgWriteMode::WriteSameNdob => {
                let zero = self.zero;
                self.fill(lba, n, |_| zero);
                0
            }
            SgWriteMode::Write | SgWriteMode::WriteAndVerify | SgWriteMode::WriteStream => {
                let fps: Vec<u64> = (0..n).map(|k| self.buffer_block(c, k, serial)).collect();
                self.fill(lba, n, |k| fps[k as usize]);
                0
            }
        }
    }

    fn fill(&mut self, lba: u64, n: u64, f: impl Fn(u64) -> u64) {
        for k in 0..n {
            let v = f(k);
            if v == self.zero {
                self.blocks.remove(&(lba + k));
            } else {
                self.blocks.insert(lba + k, v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use blkqos_core::Instant;

    fn sg(mode: SgWriteMode, pattern: u8) -> (JobSpec, Contents) {
        let mut s = JobSpec::new("v");
        s.ioengine = IoEngine::Sg;
        s.engine.sg_write_mode = mode;
        s.buffers.pattern = Some(vec![pattern]);
        let c = Contents::of(&s, 0);
        (s, c)
    }

    fn io(offset: u64, len: u64) -> JobIo {
        JobIo {
            ddir: Ddir::Write,
            offset,
            len,
            start_time: Instant::ZERO,
            verify_list: false,
            after_sleep: false,
            ioprio: 0,
            prio_index: 0,
        }
    }

    #[test]
    fn verify_01_compares_the_range_with_what_was_written() {
        let mut m = Medium::new();
        let (w, wc) = sg(SgWriteMode::Write, 1);
        for b in 0..20 {
            assert_eq!(m.complete(&w, &wc, &io(b * 512, 512)), 0);
        }
        let (v, vc) = sg(SgWriteMode::VerifyBytchk01, 1);
        assert_eq!(m.complete(&v, &vc, &io(0, 5120)), 0);
        assert_eq!(m.complete(&v, &vc, &io(19 * 512, 512)), 0);
        // the 21st block was never written: zeros, not 0x01
        assert_eq!(m.complete(&v, &vc, &io(20 * 512, 512)), EIO);
    }

    #[test]
    fn verify_11_sends_one_block_for_the_range() {
        let mut m = Medium::new();
        let (w, wc) = sg(SgWriteMode::Write, 1);
        m.complete(&w, &wc, &io(0, 20 * 512));
        let (v, vc) = sg(SgWriteMode::VerifyBytchk11, 1);
        assert_eq!(m.complete(&v, &vc, &io(0, 10240)), 0);
        assert_eq!(m.complete(&v, &vc, &io(0, 10752)), EIO);
    }

    #[test]
    fn write_same_ndob_writes_zeros() {
        let mut m = Medium::new();
        let (w, wc) = sg(SgWriteMode::Write, 1);
        m.complete(&w, &wc, &io(0, 20 * 512));
        let (n, nc) = sg(SgWriteMode::WriteSameNdob, 1);
        m.complete(&n, &nc, &io(0, 19 * 512));
        let (v, vc) = sg(SgWriteMode::VerifyBytchk01, 0);
        assert_eq!(m.complete(&v, &vc, &io(0, 19 * 512)), 0);
        assert_eq!(m.complete(&v, &vc, &io(0, 20 * 512)), EIO);
    }

    #[test]
    fn a_pattern_longer_than_a_block_runs_on_across_blocks() {
        let mut m = Medium::new();
        let mut w = JobSpec::new("w");
        w.buffers.pattern = Some((0..=255u8).chain(0..=254).collect());
        let wc = Contents::of(&w, 0);
        m.complete(&w, &wc, &io(0, 1024));
        let (mut v, _) = sg(SgWriteMode::VerifyBytchk01, 0);
        v.buffers = w.buffers.clone();
        let vc = Contents::of(&v, 1);
        assert_eq!(m.complete(&v, &vc, &io(0, 1024)), 0);
        // the second block alone is compared with the buffer's first
        assert_eq!(m.complete(&v, &vc, &io(512, 512)), EIO);
        // write same repeats the first block over the range
        let (mut s, _) = sg(SgWriteMode::WriteSame, 0);
        s.buffers = w.buffers.clone();
        let sc = Contents::of(&s, 2);
        m.complete(&s, &sc, &io(0, 1024));
        assert_eq!(m.complete(&v, &vc, &io(512, 512)), 0);
    }

    #[test]
    fn random_buffers_match_nothing() {
        let mut m = Medium::new();
        let w = JobSpec::new("w");
        let wc = Contents::of(&w, 0);
        m.complete(&w, &wc, &io(0, 512));
        let (v, vc) = sg(SgWriteMode::VerifyBytchk01, 0);
        assert_eq!(m.complete(&v, &vc, &io(0, 512)), EIO);
    }
}
