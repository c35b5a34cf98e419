//! The copies of the memory-mapped engines ([`crate::mapped`]): plain,
//! non-temporal (libpmem's `PMEM_F_MEM_NONTEMPORAL`), and with the CPU
//! cache lines written back (`pmem_memcpy_persist`, device DAX); and
//! fio's buffer scrambling before a write (io_u.c
//! `small_content_scramble`).

/// A CPU cache line.
pub const CACHE_LINE: usize = 64;

/// Copy `src` into `dst` with non-temporal stores (x86-64 `movntdq`,
/// what libpmem's `PMEM_F_MEM_NONTEMPORAL` asks): the data goes to memory
/// without filling the cache. The stores are weakly ordered: [`drain`]
/// orders them. Unaligned ends are copied plainly. Elsewhere a plain
/// copy.
pub fn copy_nontemporal(dst: &mut [u8], src: &[u8]) {
    let n = dst.len().min(src.len());
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
        let head = dst.as_ptr().align_offset(16).min(n);
        dst[..head].copy_from_slice(&src[..head]);
        let body = (n - head) / 16 * 16;
        let mut i = head;
        while i < head + body {
            // SAFETY: `i + 16 <= n` for both slices; `dst[i..]` is 16-byte
            // aligned (from `head` in steps of 16), as movntdq needs; SSE2
            // is part of x86-64.
            unsafe {
                let v = _mm_loadu_si128(src.as_ptr().add(i).cast::<__m128i>());
                _mm_stream_si128(dst.as_mut_ptr().add(i).cast::<__m128i>(), v);
            }
            i += 16;
        }
        dst[i..n].copy_from_slice(&src[i..n]);
    }
    #[cfg(not(target_arch = "x86_64"))]
    dst[..n].copy_from_slice(&src[..n]);
}

/// Write back the CPU cache lines holding `mem` (x86-64 `clflush`, what
/// libpmem's `pmem_flush` does on a CPU without `clwb`); [`drain`] then
/// waits for them. Elsewhere nothing (no portable instruction).
pub fn flush_cache(mem: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    {
        let start = mem.as_ptr() as usize & !(CACHE_LINE - 1);
        let end = mem.as_ptr() as usize + mem.len();
        let mut line = start;
        while line < end {
            // SAFETY: `line` lies within a cache line that `mem` touches,
            // so the address is mapped; clflush only writes the line back.
            unsafe { core::arch::x86_64::_mm_clflush(line as *const u8) };
            line += CACHE_LINE;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = mem;
}

/// Wait until the stores and cache flushes before it are done (libpmem
/// `pmem_drain`: x86-64 `sfence`).
pub fn drain() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: sfence has no operands and SSE is part of x86-64.
    unsafe {
        core::arch::x86_64::_mm_sfence()
    };
    #[cfg(not(target_arch = "x86_64"))]
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
}

/// fio's scrambling of a write buffer (io_u.c `small_content_scramble`):
/// in every 512-byte block, the block's offset in the file at the start
/// of cache line `(nsec ^ offset) & 7`, and the IO's start time (seconds,
/// nanoseconds) in the last 16 bytes of the block's first cache line,
/// native-endian 64-bit words as fio stores them.
pub fn scramble(buf: &mut [u8], offset: u64, (sec, nsec): (u64, u64)) {
    let line = ((nsec ^ offset) & 7) as usize * CACHE_LINE;
    let mut block_offset = offset;
    for block in buf.chunks_exact_mut(512) {
        block[line..line + 8].copy_from_slice(&block_offset.to_ne_bytes());
        block[48..56].copy_from_slice(&sec.to_ne_bytes());
        block[56..64].copy_from_slice(&nsec.to_ne_bytes());
        block_offset += 512;
    }
}

/// fio's random buffer contents (`fill_random_buf`): bytes from a
/// generator seeded with `seed` (xorshift64 here; fio's own generator's
/// bytes are not reproduced).
pub fn fill_random(buf: &mut [u8], seed: u64) {
    let mut x = seed | 1;
    for chunk in buf.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        chunk.copy_from_slice(&x.to_ne_bytes()[..chunk.len()]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nontemporal_copy_copies_every_byte_at_any_alignment() {
        let src: Vec<u8> = (0..1000u32).map(|i| (i * 7 + 3) as u8).collect();
        for skew in 0..20 {
            let mut dst = vec![0u8; 1100];
            copy_nontemporal(&mut dst[skew..skew + 1000 - skew], &src[..1000 - skew]);
            drain();
            assert_eq!(&dst[skew..1000], &src[..1000 - skew], "skew {skew}");
            assert!(dst[1000..].iter().all(|&b| b == 0));
        }
    }

    #[test]
    fn cache_flush_leaves_the_data() {
        let mut v = vec![5u8; 300];
        v[7] = 9;
        flush_cache(&v[3..290]);
        drain();
        assert_eq!(v[7], 9);
        assert_eq!(v[289], 5);
    }

    #[test]
    fn scramble_stamps_offset_and_time_per_512_byte_block() {
        let mut b = vec![0xAAu8; 1024 + 100];
        let (off, t) = (1 << 20, (17, 0x1_0003));
        scramble(&mut b, off, t);
        // line (nsec ^ offset) & 7 = 3
        let word = |p: usize| u64::from_ne_bytes(b[p..p + 8].try_into().unwrap());
        assert_eq!(word(3 * 64), off);
        assert_eq!(word(512 + 3 * 64), off + 512);
        assert_eq!((word(48), word(56)), (17, 0x1_0003));
        assert_eq!((word(512 + 48), word(512 + 56)), (17, 0x1_0003));
        // the tail shorter than a block is left as it was
        assert!(b[1024..].iter().all(|&x| x == 0xAA));
        assert_eq!(b[0], 0xAA);
    }

    #[test]
    fn random_fill_depends_on_the_seed() {
        let (mut a, mut b) = (vec![0u8; 4099], vec![0u8; 4099]);
        fill_random(&mut a, 1);
        fill_random(&mut b, 2);
        assert_ne!(a, b);
        assert!(a.iter().filter(|&&x| x == 0).count() < 100);
    }
}
