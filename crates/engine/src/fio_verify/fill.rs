//! What a verified write holds (fio 3.33 verify.c `fill_pattern_headers`,
//! `fill_verify_pattern`, `populate_hdr`, `__fill_hdr`; lib/rand.c
//! `__fill_random_buf`): the payload (random bytes from the IO's seed, or
//! `verify_pattern` repeated), then a header with its checksum at every
//! verify interval.

use super::{sum, Format, VerifyType, HDR_BYTES, HDR_MAGIC};

/// fio hash.h `GOLDEN_RATIO_64` (`__hash_u64`).
const GOLDEN_RATIO_64: u64 = 0x61c8_8646_80b5_83eb;
/// fio `CONFIG_SEED_BUCKETS` (configure's default).
const SEED_BUCKETS: usize = 4;

/// Per write: what fio puts in the header besides the format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteMeta {
    /// `io_u->rand_seed`: the seed of the random payload.
    pub rand_seed: u64,
    /// `io_u->start_time`: seconds ...
    pub time_sec: u32,
    /// ... and nanoseconds.
    pub time_nsec: u32,
    /// `td->thread_number` (1-based).
    pub thread: u16,
    /// `io_u->numberio`: writes the job submitted before this one.
    pub numberio: u16,
}

/// fio lib/rand.c `__fill_random_buf`: `SEED_BUCKETS` interleaved
/// multiplicative sequences from `seed * prime`, the tail from the first.
pub fn random_payload(buf: &mut [u8], seed: u64) {
    const PRIME: [u64; SEED_BUCKETS] = [1, 2, 3, 5];
    let mut s: [u64; SEED_BUCKETS] = std::array::from_fn(|p| seed.wrapping_mul(PRIME[p]));
    let whole = buf.len() / 8 / SEED_BUCKETS * SEED_BUCKETS * 8;
    for group in buf[..whole].chunks_exact_mut(8 * SEED_BUCKETS) {
        for (w, sp) in group.chunks_exact_mut(8).zip(s.iter_mut()) {
            w.copy_from_slice(&sp.to_ne_bytes());
            *sp = sp.wrapping_mul(GOLDEN_RATIO_64);
        }
    }
    // __fill_random_buf_small on the rest, from the first bucket
    let mut seed = s[0];
    let mut rest = buf[whole..].chunks_exact_mut(8);
    for w in &mut rest {
        w.copy_from_slice(&seed.to_ne_bytes());
        seed = seed.wrapping_mul(GOLDEN_RATIO_64);
    }
    let tail = rest.into_remainder();
    let n = tail.len();
    tail.copy_from_slice(&seed.to_ne_bytes()[..n]);
}

/// fio lib/pattern.c `cpy_pattern`: `pattern` repeated from the first byte.
pub fn repeat_pattern(buf: &mut [u8], pattern: &[u8]) {
    for chunk in buf.chunks_mut(pattern.len().max(1)) {
        chunk.copy_from_slice(&pattern[..chunk.len()]);
    }
}

/// The 40 bytes of `struct verify_header` (verify.h), its crc32c last.
pub fn header_bytes(vtype: VerifyType, len: u32, offset: u64, meta: &WriteMeta) -> [u8; HDR_BYTES] {
    let mut h = [0u8; HDR_BYTES];
    h[0..2].copy_from_slice(&HDR_MAGIC.to_le_bytes());
    h[2..4].copy_from_slice(&(vtype as u16).to_le_bytes());
    h[4..8].copy_from_slice(&len.to_le_bytes());
    h[8..16].copy_from_slice(&meta.rand_seed.to_le_bytes());
    h[16..24].copy_from_slice(&offset.to_le_bytes());
    h[24..28].copy_from_slice(&meta.time_sec.to_le_bytes());
    h[28..32].copy_from_slice(&meta.time_nsec.to_le_bytes());
    h[32..34].copy_from_slice(&meta.thread.to_le_bytes());
    h[34..36].copy_from_slice(&meta.numberio.to_le_bytes());
    let crc = sum::fio_crc32c(&h[..36]);
    h[36..40].copy_from_slice(&crc.to_le_bytes());
    h
}

/// Fill `buf`, a write of `buf.len()` bytes at `io_offset`, as fio does
/// (`populate_verify_io_u`).
pub fn fill_io(fmt: &Format, buf: &mut [u8], io_offset: u64, meta: &WriteMeta) {
    if fmt.vtype == VerifyType::Null {
        return;
    }
    match &fmt.pattern {
        Some(p) => repeat_pattern(buf, p),
        None => random_payload(buf, meta.rand_seed),
    }
    let inc = fmt.hdr_inc(buf.len());
    let hsize = fmt.hdr_size();
    if hsize == 0 {
        return;
    }
    for (k, block) in buf.chunks_mut(inc).enumerate() {
        if block.len() <= hsize {
            // fio populate_hdr: "Blocksize too small" (refused before the run)
            continue;
        }
        let offset = io_offset + (k * inc) as u64;
        let h = header_bytes(fmt.vtype, inc as u32, offset, meta);
        block[..HDR_BYTES].copy_from_slice(&h);
        let field = sum::compute(fmt.vtype, &block[hsize..]);
        block[HDR_BYTES..hsize].copy_from_slice(&field);
        if fmt.offset > 0 {
            swap_header(block, fmt.offset, hsize);
        }
    }
}

/// fio `memswp(p, p + verify_offset, header size)`: the header moves to
/// `verify_offset` inside the block and what was there to the front.
pub fn swap_header(block: &mut [u8], at: usize, hsize: usize) {
    if at + hsize > block.len() || at < hsize {
        return;
    }
    let (front, back) = block.split_at_mut(at);
    front[..hsize].swap_with_slice(&mut back[..hsize]);
}
