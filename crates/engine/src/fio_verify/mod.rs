//! fio's data verification format (fio 3.33 verify.c, verify.h): what a
//! verified write holds — a `struct verify_header` (magic 0xacca, type,
//! length, seed, offset, time, thread, numberio, crc32c of the header) and
//! a checksum of the rest at every `verify_interval` — and the checks of a
//! read against it, with fio's own failure lines. Blocks written here
//! verify under fio and fio's verify under blkqos.
//!
//! * [`fill`]: the payload (fio's random buffer from the IO's seed, or
//!   `verify_pattern`) and the headers.
//! * [`check`]: fio's `verify_io_u`.
//! * [`sum`]: the checksum fields, from the checksum crates.
//! * [`JobVerify`] / [`JobState`]: one job's format and what the engine
//!   remembers of its writes (seed and numberio per block, as fio's verify
//!   log does).

pub mod check;
pub mod fill;
pub mod sum;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::path::PathBuf;

/// fio `FIO_HDR_MAGIC`.
pub const HDR_MAGIC: u16 = 0xacca;
/// `sizeof(struct verify_header)`.
pub const HDR_BYTES: usize = 40;

/// fio `enum verify_type` (verify.h), the values in the header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u16)]
#[allow(missing_docs)]
pub enum VerifyType {
    HdrOnly = 1,
    Md5 = 2,
    Crc64 = 3,
    Crc32 = 4,
    Crc32c = 5,
    Crc32cIntel = 6,
    Crc16 = 7,
    Crc7 = 8,
    Sha256 = 9,
    Sha512 = 10,
    Sha3_224 = 11,
    Sha3_256 = 12,
    Sha3_384 = 13,
    Sha3_512 = 14,
    Xxhash = 15,
    Sha1 = 16,
    Pattern = 17,
    PatternNoHdr = 18,
    Null = 19,
}

impl VerifyType {
    const ALL: [VerifyType; 19] = [
        VerifyType::HdrOnly,
        VerifyType::Md5,
        VerifyType::Crc64,
        VerifyType::Crc32,
        VerifyType::Crc32c,
        VerifyType::Crc32cIntel,
        VerifyType::Crc16,
        VerifyType::Crc7,
        VerifyType::Sha256,
        VerifyType::Sha512,
        VerifyType::Sha3_224,
        VerifyType::Sha3_256,
        VerifyType::Sha3_384,
        VerifyType::Sha3_512,
        VerifyType::Xxhash,
        VerifyType::Sha1,
        VerifyType::Pattern,
        VerifyType::PatternNoHdr,
        VerifyType::Null,
    ];
    /// The type a header names.
    pub fn from_u16(v: u16) -> Option<VerifyType> {
        Self::ALL.iter().copied().find(|t| *t as u16 == v)
    }
}

/// A job's verify format: what it writes and checks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Format {
    /// `verify=`.
    pub vtype: VerifyType,
    /// `verify_interval` bytes after fio's fixup (init.c
    /// `fixup_options`); 0: the IO's length.
    pub interval: usize,
    /// `verify_offset`: where the header sits in each interval (0: first).
    pub offset: usize,
    /// `verify_pattern`'s bytes.
    pub pattern: Option<Vec<u8>>,
}

impl Format {
    /// fio `hdr_size`: the header and its checksum field (none for
    /// `pattern` without a header).
    pub fn hdr_size(&self) -> usize {
        match self.vtype {
            VerifyType::PatternNoHdr | VerifyType::Null => 0,
            t => HDR_BYTES + sum::field_len(t),
        }
    }
    /// fio `get_hdr_inc`: a header every interval, or one per IO.
    pub fn hdr_inc(&self, buflen: usize) -> usize {
        if self.interval > 0 && self.interval <= buflen {
            self.interval
        } else {
            buflen.max(1)
        }
    }
}

/// One job's verification on the real engine (by the driver's job index,
/// [`blkqos_core::Submitter`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobVerify {
    /// What the job writes and checks.
    pub format: Format,
    /// fio `td->thread_number` (1-based, in job order).
    pub thread: u16,
    /// The file's name as fio prints it.
    pub file_name: String,
    /// Every read is checked (fio: a job that does not both read and
    /// write); otherwise only the verify log's read-backs.
    pub check_all_reads: bool,
    /// The seed is checked against the write's (fio: a job that reads
    /// and writes, without `verify_backlog`); else taken from the header.
    pub check_seed: bool,
    /// The numberio is checked (fio: a writing job of one block size,
    /// not time based, not `verify_only`).
    pub check_numberio: bool,
    /// `verify_fatal`.
    pub fatal: bool,
    /// `verify_dump`: where the dumps go (fio: the current directory).
    pub dump_dir: Option<PathBuf>,
}

/// What the engine remembers of a job's writes (fio's `io_piece`s carry
/// the seed and numberio of each logged write; `td->verify_state`).
#[derive(Debug, Default)]
pub struct JobState {
    /// Writes submitted (fio `td->io_issues[DDIR_WRITE]`).
    pub writes: u64,
    /// The next seed's generator state.
    seed_state: u64,
    /// Offset of a written IO → (seed, numberio).
    pub written: HashMap<u64, (u64, u16)>,
}

impl JobState {
    /// A state whose seeds start from `thread`.
    pub fn new(thread: u16) -> Self {
        JobState {
            seed_state: 0x9e37_79b9_7f4a_7c15 ^ u64::from(thread),
            ..JobState::default()
        }
    }
    /// The next write's seed (splitmix64; fio draws it from
    /// `td->verify_state`: only its equality is ever checked).
    pub fn next_seed(&mut self) -> u64 {
        self.seed_state = self.seed_state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.seed_state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}
