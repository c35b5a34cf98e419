//! Checking what a read brought back (fio 3.33 verify.c `verify_io_u`,
//! `verify_header`, `verify_io_u_<checksum>`, `verify_io_u_pattern`,
//! `log_verify_failure`, `dump_buf`): the same checks in the same order,
//! with fio's own lines for each failure.

use super::fill::{fill_io, swap_header, WriteMeta};
use super::{sum, Format, VerifyType, HDR_BYTES, HDR_MAGIC};

/// What the reader knows about a read it checks.
#[derive(Clone, Debug)]
pub struct ReadCheck<'a> {
    /// The file's name as fio prints it (`f->file_name`).
    pub file_name: &'a str,
    /// The read's offset (`io_u->verify_offset`).
    pub offset: u64,
    /// fio's `io_u->flags` when the check runs (8: `IO_U_F_IN_CUR_DEPTH`,
    /// plus 0x80 `IO_U_F_VER_LIST` for a read-back from the verify log).
    pub flags: u32,
    /// The seed the write used (`io_u->rand_seed` from the verify log);
    /// None: taken from each header (fio does so for jobs that do not
    /// both read and write, or with `verify_backlog`).
    pub rand_seed: Option<u64>,
    /// The write's `numberio`, when fio checks it (a writing job of one
    /// block size, not time based, not `verify_only`).
    pub numberio: Option<u16>,
    /// `verify_fatal`: stop at the first bad block of the read.
    pub fatal: bool,
    /// `verify_dump`: write the bad block (and what it should hold) to
    /// files in `dump_dir`.
    pub dump_dir: Option<&'a std::path::Path>,
}

/// The outcome of a check that found something: fio's lines (the
/// dumps' included) and whether the read fails (EILSEQ).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Failure {
    /// fio's lines, each ending in a newline.
    pub lines: String,
    /// The read's error is EILSEQ. fio's `verify_io_u` keeps only the
    /// result of the last interval it checks: without `verify_fatal`, a
    /// bad data interval followed by a good one is reported and not an
    /// error (a bad header always is).
    pub eilseq: bool,
}

/// fio `verify_io_u` on `buf` (the read's data): `Ok`, or the lines fio
/// writes to stderr and whether the read fails.
pub fn check_io(fmt: &Format, buf: &[u8], rc: &ReadCheck<'_>) -> Result<(), Failure> {
    if fmt.vtype == VerifyType::Null {
        return Ok(());
    }
    let inc = fmt.hdr_inc(buf.len());
    let mut fail = Failure::default();
    for (k, chunk) in buf.chunks(inc).enumerate() {
        if fail.eilseq && rc.fatal {
            break;
        }
        let iv = Interval::new(fmt, chunk, k, inc, buf.len());
        let hdr = Header::parse(&iv.block);
        if fmt.vtype != VerifyType::PatternNoHdr {
            if let Err(why) = check_header(&hdr, &iv.block, k, inc, rc) {
                log_header_failure(rc, &iv, &why, &mut fail);
                fail.eilseq = true;
                return Err(fail);
            }
        }
        let bad = check_data(fmt, &iv, &hdr);
        fail.eilseq = bad.is_some();
        if let Some(b) = bad {
            log_verify_failure(fmt, rc, &iv, &hdr, &b, &mut fail);
            if hdr.verify_type != fmt.vtype as u16 {
                fail.lines += &format!(
                    "fio: verify type mismatch ({} media, {} given)\n",
                    hdr.verify_type, fmt.vtype as u16
                );
            }
        }
    }
    if fail.lines.is_empty() {
        Ok(())
    } else {
        Err(fail)
    }
}

/// One verify interval of a read (a header and the data it covers).
struct Interval {
    /// Its index in the read.
    k: usize,
    /// Its size (fio `hdr_inc`).
    inc: usize,
    /// The read's length.
    read_len: usize,
    /// Its bytes, the header moved back to the start (`verify_offset`).
    block: Vec<u8>,
}

impl Interval {
    /// Interval `k` of `inc` bytes, `chunk`, of a read of `read_len` bytes.
    fn new(fmt: &Format, chunk: &[u8], k: usize, inc: usize, read_len: usize) -> Interval {
        let mut block = chunk.to_vec();
        let conf_size = fmt.hdr_size();
        if fmt.offset > 0 && conf_size > 0 {
            swap_header(&mut block, fmt.offset, conf_size);
        }
        Interval {
            k,
            inc,
            read_len,
            block,
        }
    }
}

/// `verify_header`'s failure line (with the interval's place) and its
/// `hdr_fail` dump.
fn log_header_failure(rc: &ReadCheck<'_>, iv: &Interval, why: &str, fail: &mut Failure) {
    let (k, inc) = (iv.k, iv.inc);
    let at = rc.offset + (k * inc) as u64;
    fail.lines += &format!(
        "{why} at file {} offset {at}, length {inc} (requested block: offset={}, \
         length={})\n",
        rc.file_name, rc.offset, iv.read_len
    );
    dump(rc, &iv.block, at, "hdr_fail", fail);
}

/// The data check of the configured type (fio `verify_io_u_<type>`): the
/// pattern, or the checksum of the type on the media.
fn check_data(fmt: &Format, iv: &Interval, hdr: &Header) -> Option<Bad> {
    let media = VerifyType::from_u16(hdr.verify_type);
    match fmt.vtype {
        VerifyType::HdrOnly if fmt.pattern.is_none() => None,
        VerifyType::HdrOnly | VerifyType::Pattern | VerifyType::PatternNoHdr => {
            check_pattern(fmt, &iv.block, iv.k, iv.inc)
        }
        t => check_sum(t, media.unwrap_or(t), &iv.block, hdr.len as usize),
    }
}

/// fio `log_verify_failure`: the failure line and the checksums, then
/// `dump_verify_buffers` with `verify_dump`.
fn log_verify_failure(
    fmt: &Format,
    rc: &ReadCheck<'_>,
    iv: &Interval,
    hdr: &Header,
    b: &Bad,
    fail: &mut Failure,
) {
    // fio prints `hdr->len` even without a header (the data's
    // bytes 4..8 then)
    let hdr_len = hdr.len as usize;
    let at = rc.offset + (iv.k * hdr_len) as u64;
    fail.lines += &b.pre;
    fail.lines += &format!(
        "{:.8}: verify failed at file {} offset {at}, length {hdr_len} (requested \
         block: offset={}, length={}, flags={:x})\n",
        b.name, rc.file_name, rc.offset, iv.read_len, rc.flags
    );
    if let Some((good, got)) = &b.sums {
        fail.lines += &format!("       Expected CRC: {}\n", hex(good));
        fail.lines += &format!("       Received CRC: {}\n", hex(got));
    }
    if rc.dump_dir.is_some() {
        dump_verify_buffers(fmt, rc, iv, hdr, at, fail);
    }
}

/// fio `dump_verify_buffers`: the interval as received, and as the write
/// described by its header would have filled it.
fn dump_verify_buffers(
    fmt: &Format,
    rc: &ReadCheck<'_>,
    iv: &Interval,
    hdr: &Header,
    at: u64,
    fail: &mut Failure,
) {
    dump(rc, &iv.block, at, "received", fail);
    let seed = if fmt.pattern.is_none() {
        hdr.rand_seed
    } else {
        0
    };
    let mut want = vec![0u8; iv.read_len];
    let meta = WriteMeta {
        rand_seed: seed,
        time_sec: hdr.time_sec,
        time_nsec: hdr.time_nsec,
        thread: hdr.thread,
        numberio: hdr.numberio,
    };
    fill_io(fmt, &mut want, rc.offset, &meta);
    let s = iv.k * iv.inc;
    let mut exp = want[s..(s + iv.inc).min(want.len())].to_vec();
    let conf_size = fmt.hdr_size();
    if fmt.offset > 0 && conf_size > 0 {
        swap_header(&mut exp, fmt.offset, conf_size);
    }
    dump(rc, &exp, at, "expected", fail);
}

/// The fields of `struct verify_header` as read.
#[derive(Clone, Copy, Debug, Default)]
struct Header {
    magic: u16,
    verify_type: u16,
    len: u32,
    rand_seed: u64,
    offset: u64,
    time_sec: u32,
    time_nsec: u32,
    thread: u16,
    numberio: u16,
    crc32: u32,
}

impl Header {
    fn parse(b: &[u8]) -> Header {
        if b.len() < HDR_BYTES {
            return Header::default();
        }
        let u16_at = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4"));
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8"));
        Header {
            magic: u16_at(0),
            verify_type: u16_at(2),
            len: u32_at(4),
            rand_seed: u64_at(8),
            offset: u64_at(16),
            time_sec: u32_at(24),
            time_nsec: u32_at(28),
            thread: u16_at(32),
            numberio: u16_at(34),
            crc32: u32_at(36),
        }
    }
}

/// fio `verify_header`: the first wrong field, as fio words it.
fn check_header(
    h: &Header,
    block: &[u8],
    k: usize,
    inc: usize,
    rc: &ReadCheck<'_>,
) -> Result<(), String> {
    if h.magic != HDR_MAGIC {
        return Err(format!(
            "verify: bad magic header {:x}, wanted {:x}",
            h.magic, HDR_MAGIC
        ));
    }
    if h.len as usize != inc {
        return Err(format!("verify: bad header length {}, wanted {inc}", h.len));
    }
    let seed = rc.rand_seed.unwrap_or(h.rand_seed);
    if h.rand_seed != seed {
        return Err(format!(
            "verify: bad header rand_seed {}, wanted {seed}",
            h.rand_seed
        ));
    }
    if h.offset != rc.offset + (k * inc) as u64 {
        return Err(format!(
            "verify: bad header offset {}, wanted {}",
            h.offset, rc.offset
        ));
    }
    if let Some(n) = rc.numberio.filter(|&n| n != h.numberio) {
        return Err(format!(
            "verify: bad header numberio {}, wanted {n}",
            h.numberio
        ));
    }
    let crc = sum::fio_crc32c(&block[..36]);
    if crc != h.crc32 {
        return Err(format!(
            "verify: bad header crc {:x}, calculated {crc:x}",
            h.crc32
        ));
    }
    Ok(())
}

/// One failed data check.
struct Bad {
    name: &'static str,
    /// Lines before the failure line (the pattern's byte report).
    pre: String,
    /// Expected and received checksum fields (fio `good_crc`, `bad_crc`).
    sums: Option<(Vec<u8>, Vec<u8>)>,
}

/// fio `verify_io_u_<checksum>`: the data after the header (its size from
/// the type on the media) against the stored field.
fn check_sum(conf: VerifyType, media: VerifyType, block: &[u8], hdr_len: usize) -> Option<Bad> {
    let hsize = HDR_BYTES + sum::field_len(media);
    let end = hdr_len.min(block.len());
    let data = block.get(hsize..end).unwrap_or(&[]);
    let flen = sum::field_len(conf);
    let stored = block.get(HDR_BYTES..HDR_BYTES + flen)?.to_vec();
    let got = sum::compute(conf, data);
    (got != stored).then(|| Bad {
        name: sum::name(conf),
        pre: String::new(),
        sums: Some((stored, got)),
    })
}

/// fio `verify_io_u_pattern`: every byte after the header against
/// `verify_pattern`, continued from where the block sits in the IO.
fn check_pattern(fmt: &Format, block: &[u8], k: usize, inc: usize) -> Option<Bad> {
    let pattern = fmt.pattern.as_deref()?;
    let hsize = fmt.hdr_size();
    let mut m = (inc * k + hsize) % pattern.len();
    for (i, &b) in block.iter().enumerate().skip(hsize) {
        if b != pattern[m] {
            let bits = (b ^ pattern[m]).count_ones();
            return Some(Bad {
                name: "pattern",
                pre: format!(
                    "fio: got pattern '{b:02x}', wanted '{:02x}'. Bad bits {bits}\n\
                     fio: bad pattern block offset {}\n",
                    pattern[m],
                    i - hsize
                ),
                sums: None,
            });
        }
        m = (m + 1) % pattern.len();
    }
    None
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// fio `dump_buf`: `<file's base name>.<offset>.<kind>` in the dump
/// directory, and the line saying so.
fn dump(rc: &ReadCheck<'_>, data: &[u8], at: u64, kind: &str, fail: &mut Failure) {
    let Some(dir) = rc.dump_dir else { return };
    let base = std::path::Path::new(rc.file_name).file_name().map_or_else(
        || rc.file_name.to_string(),
        |b| b.to_string_lossy().into_owned(),
    );
    let name = format!("{base}.{at}.{kind}");
    match std::fs::write(dir.join(&name), data) {
        Ok(()) => fail.lines += &format!("       {kind} data dumped as {name}\n"),
        Err(e) => fail.lines += &format!("open verify buf file: {e}\n"),
    }
}
