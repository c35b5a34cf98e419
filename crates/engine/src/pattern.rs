//! The data pattern blkqos writes (file layout, and every write when
//! `verify` is on) and checks on reads when `verify` is on.
//!
//! The byte at absolute offset `p` of the target is byte `p % 8` (little
//! endian) of `mix(p / 8)`, where `mix` is splitmix64's finaliser of the word
//! index xor a fixed seed. So the content is a pure function of the offset:
//! any IO at any offset and length (aligned or not) can be filled or checked
//! on its own, a block that landed at the wrong offset or a stale block is
//! caught, and nothing per file has to be remembered.

/// Seed of the pattern (changing it changes every byte blkqos writes).
const SEED: u64 = 0x626c_6b71_6f73_7631; // "blkqosv1"

#[inline]
fn mix(w: u64) -> u64 {
    let mut z = w ^ SEED;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The pattern byte at absolute offset `p`.
#[inline]
pub fn byte_at(p: u64) -> u8 {
    (mix(p / 8) >> (8 * (p % 8))) as u8
}

/// Fill `buf` with the pattern of the target range starting at `offset`.
pub fn fill(buf: &mut [u8], offset: u64) {
    let mut i = 0usize;
    // unaligned head, byte by byte
    while i < buf.len() && (offset + i as u64) & 7 != 0 {
        buf[i] = byte_at(offset + i as u64);
        i += 1;
    }
    // whole words
    let words = (buf.len() - i) / 8;
    let w0 = (offset + i as u64) / 8;
    for (w, chunk) in (w0..).zip(buf[i..i + words * 8].chunks_exact_mut(8)) {
        chunk.copy_from_slice(&mix(w).to_le_bytes());
    }
    i += words * 8;
    // tail
    while i < buf.len() {
        buf[i] = byte_at(offset + i as u64);
        i += 1;
    }
}

/// Fill `buf` with `bytes` repeated from its first byte (fio
/// lib/pattern.c `cpy_pattern`: what `buffer_pattern` puts in every write).
pub fn repeat(buf: &mut [u8], bytes: &[u8]) {
    if bytes.is_empty() {
        return;
    }
    for chunk in buf.chunks_mut(bytes.len()) {
        chunk.copy_from_slice(&bytes[..chunk.len()]);
    }
}

/// Check `buf` against the pattern at `offset`: `None` if it matches, else
/// the absolute offset of the first wrong byte.
pub fn check(buf: &[u8], offset: u64) -> Option<u64> {
    let mut i = 0usize;
    while i < buf.len() && (offset + i as u64) & 7 != 0 {
        if buf[i] != byte_at(offset + i as u64) {
            return Some(offset + i as u64);
        }
        i += 1;
    }
    let words = (buf.len() - i) / 8;
    let w0 = (offset + i as u64) / 8;
    for (w, chunk) in (w0..).zip(buf[i..i + words * 8].chunks_exact(8)) {
        let want = mix(w).to_le_bytes();
        if chunk != want {
            let k = chunk
                .iter()
                .zip(want)
                .position(|(a, b)| *a != b)
                .unwrap_or(0);
            return Some(w * 8 + k as u64);
        }
    }
    i += words * 8;
    while i < buf.len() {
        if buf[i] != byte_at(offset + i as u64) {
            return Some(offset + i as u64);
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_matches_byte_at_for_any_alignment() {
        let mut buf = [0u8; 100];
        for off in [0u64, 1, 7, 8, 13, 4096, 4099] {
            for len in [0usize, 1, 5, 8, 9, 63, 100] {
                fill(&mut buf[..len], off);
                for (i, b) in buf[..len].iter().enumerate() {
                    assert_eq!(*b, byte_at(off + i as u64), "off {off} len {len} i {i}");
                }
                assert_eq!(check(&buf[..len], off), None);
            }
        }
    }

    #[test]
    fn check_finds_first_wrong_byte() {
        let mut buf = vec![0u8; 4096];
        fill(&mut buf, 8192);
        buf[1000] ^= 1;
        buf[2000] ^= 1;
        assert_eq!(check(&buf, 8192), Some(8192 + 1000));
        // same data, wrong place: caught at once
        fill(&mut buf, 8192);
        assert_eq!(check(&buf, 4096), Some(4096));
        assert_eq!(check(&buf[3..], 8195), None);
        assert!(check(&buf[3..], 8196).is_some());
    }

    #[test]
    fn zeros_are_not_the_pattern() {
        assert!(check(&[0u8; 512], 0).is_some());
    }
}
