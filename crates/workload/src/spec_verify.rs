//! The typed forms of fio's data verification options (`verify` and its
//! family) and of the options that decide what write buffers hold
//! (`buffer_pattern`, `zero_buffers`, `refill_buffers`,
//! `scramble_buffers`, `buffer_compress_*`, `dedupe_*`).
//! [`crate::spec::JobSpec`] holds them as `verify` and `buffers`.

/// `verify=` (fio `enum verify_type`, `verify.h`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum VerifyKind {
    /// `0`: no verification.
    #[default]
    None,
    Md5,
    Crc64,
    Crc32,
    /// `crc32c` and `crc32c-intel` (the same checksum in fio).
    Crc32c,
    Crc16,
    Crc7,
    Sha1,
    Sha256,
    Sha512,
    Sha3_224,
    Sha3_256,
    Sha3_384,
    Sha3_512,
    Xxhash,
    /// `meta`: the header only (`VERIFY_HDR_ONLY`).
    Meta,
    /// `pattern`: `verify_pattern` without a header (`VERIFY_PATTERN_NO_HDR`).
    Pattern,
    /// `verify_pattern` given without `verify=`: the pattern after a
    /// header (`VERIFY_PATTERN`, options.c `str_verify_pattern_cb`).
    PatternHdr,
    /// `null`: pretend to verify.
    Null,
}

impl VerifyKind {
    /// fio's names (`options.c`, the `verify` posval table), the value
    /// `crc32c-intel` being an alias of `crc32c`.
    pub const NAMES: &'static [(&'static str, VerifyKind)] = &[
        ("0", VerifyKind::None),
        ("md5", VerifyKind::Md5),
        ("crc64", VerifyKind::Crc64),
        ("crc32", VerifyKind::Crc32),
        ("crc32c-intel", VerifyKind::Crc32c),
        ("crc32c", VerifyKind::Crc32c),
        ("crc16", VerifyKind::Crc16),
        ("crc7", VerifyKind::Crc7),
        ("sha1", VerifyKind::Sha1),
        ("sha256", VerifyKind::Sha256),
        ("sha512", VerifyKind::Sha512),
        ("sha3-224", VerifyKind::Sha3_224),
        ("sha3-256", VerifyKind::Sha3_256),
        ("sha3-384", VerifyKind::Sha3_384),
        ("sha3-512", VerifyKind::Sha3_512),
        ("xxhash", VerifyKind::Xxhash),
        ("meta", VerifyKind::Meta),
        ("pattern", VerifyKind::Pattern),
        ("null", VerifyKind::Null),
    ];

    /// The kind a `verify=` value names.
    pub fn from_name(v: &str) -> Option<VerifyKind> {
        Self::NAMES.iter().find(|(n, _)| *n == v).map(|(_, k)| *k)
    }
}

/// `verify` and the options under it (fio `thread_options`: `verify`,
/// `do_verify`, `verify_backlog`, `verify_batch`, ...).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifySpec {
    pub kind: VerifyKind,
    /// `verify=` was given (fio `fio_option_is_set`): then
    /// `verify_pattern` does not change the kind.
    pub kind_set: bool,
    /// `do_verify` (default 1): run the read-back phase after the writes.
    pub do_verify: bool,
    /// `verify_only`: do not write; read back and check what the job
    /// would have written.
    pub only: bool,
    /// `verify_backlog=N`: verify the written blocks every N writes
    /// during the write phase (0 = only after it).
    pub backlog: u64,
    /// `verify_backlog_batch=N`: blocks verified each time (0 = `backlog`).
    pub backlog_batch: u64,
    /// `verify_fatal`: the first failed check stops the job.
    pub fatal: bool,
    /// `verify_dump`: on a failed check, write the received and expected
    /// blocks to files.
    pub dump: bool,
    /// `verify_async=N`: checks run on N threads.
    pub async_threads: u32,
    /// `verify_pattern=`: the bytes, repeated, the blocks are filled with.
    pub pattern: Option<Vec<u8>>,
    /// `verify_interval=N` bytes (0 = the block size).
    pub interval: u64,
    /// `verify_offset=N`: where in each block the header goes.
    pub offset: u64,
}

impl Default for VerifySpec {
    fn default() -> Self {
        VerifySpec {
            kind: VerifyKind::None,
            kind_set: false,
            do_verify: true,
            only: false,
            backlog: 0,
            backlog_batch: 0,
            fatal: false,
            dump: false,
            async_threads: 0,
            pattern: None,
            interval: 0,
            offset: 0,
        }
    }
}

impl VerifySpec {
    /// fio's `verify_interval` after init.c `fixup_options`: at most the
    /// smallest write (or read) block, a divisor of the write block sizes
    /// (their gcd otherwise); the given value or the smallest write block
    /// when the write blocks vary. 0: one header per IO (fio
    /// `get_hdr_inc`).
    pub fn effective_interval(&self, bs_write: (u64, u64), bs_read_min: u64, reads: bool) -> u64 {
        let (min_w, max_w) = bs_write;
        let mut iv = self.interval;
        if max_w != min_w && iv == 0 {
            iv = min_w;
        }
        if iv > min_w {
            iv = min_w;
        } else if reads && iv > bs_read_min {
            iv = bs_read_min;
        }
        if iv == 0 || min_w % iv != 0 || max_w % iv != 0 {
            iv = gcd(min_w, max_w);
        }
        iv
    }

    /// Is verification on (`verify` other than `0`)?
    pub fn enabled(&self) -> bool {
        self.kind != VerifyKind::None
    }
    /// Are writes logged for a read-back (fio logs a write when `do_verify`
    /// and `verify != 0`: backend.c `do_io`, `log_io_piece`)?
    pub fn logs_writes(&self) -> bool {
        self.enabled() && self.do_verify
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// `dedupe_mode=` (fio `enum dedupe_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum DedupeMode {
    /// `repeat`: a deduplicated buffer repeats an earlier one.
    #[default]
    Repeat,
    /// `working_set`: a deduplicated buffer is one of a working set.
    WorkingSet,
}

/// What write buffers hold (fio `thread_options`: `buffer_pattern`,
/// `zero_buffers`, `refill_buffers`, `scramble_buffers`,
/// `compress_percentage`, `compress_chunk`, `dedupe_*`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BufferSpec {
    /// `buffer_pattern=`: the bytes, repeated, every buffer holds.
    pub pattern: Option<Vec<u8>>,
    pub zero: bool,
    pub refill: bool,
    /// `scramble_buffers` (fio default 1).
    pub scramble: bool,
    /// `buffer_compress_percentage` (0 = not set).
    pub compress_percentage: u32,
    /// `buffer_compress_chunk` bytes (fio default 512).
    pub compress_chunk: u32,
    pub dedupe_percentage: u32,
    pub dedupe_mode: DedupeMode,
    /// `dedupe_working_set_percentage` (fio default 5).
    pub dedupe_working_set_percentage: u32,
    pub dedupe_global: bool,
}

impl Default for BufferSpec {
    fn default() -> Self {
        BufferSpec {
            pattern: None,
            zero: false,
            refill: false,
            scramble: true,
            compress_percentage: 0,
            compress_chunk: 512,
            dedupe_percentage: 0,
            dedupe_mode: DedupeMode::Repeat,
            dedupe_working_set_percentage: 5,
            dedupe_global: false,
        }
    }
}

impl BufferSpec {
    /// Does any option ask for buffer contents other than the default?
    pub fn is_default(&self) -> bool {
        *self == BufferSpec::default()
    }
}

/// Does the job ask for anything about data that only a backend with data
/// can honour (verification, buffer contents, filling the target)?
pub fn asks_for_data(verify: &VerifySpec, buffers: &BufferSpec, fill_device: bool) -> bool {
    verify.enabled() || verify.only || !buffers.is_default() || fill_device
}

/// Where a job was given an option about data (what buffers hold, or
/// verification): the real engine refuses these by file, line, option and
/// value (see `docs/fio-options.md`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataOption {
    /// Job file path, or `<command line>`.
    pub file: String,
    /// 1-based line (0 on the command line).
    pub line: usize,
    /// The option as written.
    pub option: String,
    /// The value as written (`None`: a bare flag).
    pub value: Option<String>,
}

impl std::fmt::Display for DataOption {
    /// `FILE:LINE: option `opt`: value `v`` (as parse errors start).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.file)?;
        if self.line > 0 {
            write!(f, ":{}", self.line)?;
        }
        write!(f, ": option `{}`", self.option)?;
        if let Some(v) = &self.value {
            write!(f, ": value `{v}`")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_as_fio_fixes_it_up() {
        let v = |interval| VerifySpec {
            interval,
            ..VerifySpec::default()
        };
        // default: the block size (gcd of equal sizes)
        assert_eq!(v(0).effective_interval((4096, 4096), 4096, false), 4096);
        assert_eq!(v(512).effective_interval((65536, 65536), 65536, true), 512);
        // larger than a write: the smallest write
        assert_eq!(v(8192).effective_interval((4096, 4096), 4096, false), 4096);
        // varying writes: the smallest, if it divides the largest
        assert_eq!(v(0).effective_interval((4096, 16384), 4096, false), 4096);
        assert_eq!(v(0).effective_interval((4096, 6144), 4096, false), 2048);
        // not a divisor: the gcd of the write sizes
        assert_eq!(v(1536).effective_interval((4096, 4096), 4096, false), 4096);
    }
}
