//! The random map (fio's axmap, used unless `norandommap`): every block is
//! used once per pass.
//!
//! A bit per block plus summary levels (a bit per *full* word of the level
//! below), so finding the next free block is O(levels), not O(blocks). For a
//! large device the block level is megabytes and each IO touches a random
//! word of it: [`BlockMap::prefetch`] lets the job ask for that word one IO
//! ahead, which hides the cache miss.

#[derive(Clone, Debug)]
pub(super) struct BlockMap {
    /// levels[0]: one bit per block (1 = used); levels[k+1]: one bit per
    /// full word of levels[k].
    levels: Vec<Vec<u64>>,
    /// Number of valid bits at each level.
    level_bits: Vec<u64>,
    nblocks: u64,
    used: u64,
}

impl BlockMap {
    pub(super) fn new(nblocks: u64) -> Self {
        let mut levels = Vec::new();
        let mut level_bits = Vec::new();
        let mut n = nblocks.max(1);
        loop {
            let words = n.div_ceil(64);
            levels.push(vec![0u64; words as usize]);
            level_bits.push(n);
            if words == 1 {
                break;
            }
            n = words;
        }
        BlockMap {
            levels,
            level_bits,
            nblocks,
            used: 0,
        }
    }

    /// Number of blocks the map covers.
    pub(super) fn nblocks(&self) -> u64 {
        self.nblocks
    }

    /// First free bit at `level` with index ≥ `from` (no wrap), if any.
    pub(super) fn find_free(&self, level: usize, from: u64) -> Option<u64> {
        let nbits = self.level_bits[level];
        if from >= nbits {
            return None;
        }
        let words = &self.levels[level];
        let w = (from / 64) as usize;
        let free = !words[w] & (!0u64 << (from % 64));
        if free != 0 {
            let bit = w as u64 * 64 + u64::from(free.trailing_zeros());
            return (bit < nbits).then_some(bit);
        }
        // the rest of this word is used: ask the level above for the next
        // word that is not full
        let next_word = if level + 1 < self.levels.len() {
            self.find_free(level + 1, w as u64 + 1)?
        } else {
            return None;
        };
        let free = !words[next_word as usize];
        let bit = next_word * 64 + u64::from(free.trailing_zeros());
        (bit < nbits).then_some(bit)
    }

    fn set(&mut self, mut bit: u64) {
        for level in &mut self.levels {
            let word = &mut level[(bit / 64) as usize];
            *word |= 1 << (bit % 64);
            if *word != !0 {
                break;
            }
            bit /= 64;
        }
    }

    /// Take `b` if free, else the next free block after it (wrapping); a new
    /// pass starts when every block was used.
    pub(super) fn take_near(&mut self, b: u64) -> u64 {
        if self.used >= self.nblocks {
            for l in &mut self.levels {
                l.fill(0);
            }
            self.used = 0;
        }
        let blk = self
            .find_free(0, b)
            .or_else(|| self.find_free(0, 0))
            .unwrap_or(b);
        self.set(blk);
        self.used += 1;
        blk
    }

    /// After [`BlockMap::take_near`] gave `blk`: the blocks after it that
    /// an IO of `nr` blocks covers are marked used too, up to the first
    /// one already used or the map's end (fio `mark_random_map` with
    /// `axmap_set_nr`, which sets only a contiguous run). The run's
    /// length, `blk` included: an IO longer than it is cut to it.
    pub(super) fn take_run(&mut self, blk: u64, nr: u64) -> u64 {
        let mut run = 1;
        while run < nr {
            let bit = blk + run;
            if bit >= self.nblocks || self.levels[0][(bit / 64) as usize] & (1 << (bit % 64)) != 0 {
                break;
            }
            self.set(bit);
            self.used += 1;
            run += 1;
        }
        run
    }

    /// Hint that [`BlockMap::take_near`] will soon look at block `b`: start
    /// loading its bitmap word into the cache. No effect on results.
    #[inline]
    pub(super) fn prefetch(&self, b: u64) {
        if let Some(word) = self.levels[0].get((b / 64) as usize) {
            prefetch_read(word);
        }
    }
}

/// Ask the CPU to start loading `*p` into the cache without waiting for it.
///
/// `unsafe` only because `_mm_prefetch` is a target-feature intrinsic (SSE,
/// always present on x86_64); a prefetch is a hint that never faults and
/// does not read or write memory as far as the program is concerned, so any
/// address is sound. Stable Rust has no safe prefetch; without one, the
/// random-map workload spends about a third of its time on this miss.
#[inline]
#[allow(unsafe_code)]
fn prefetch_read(p: &u64) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE is part of the x86_64 baseline; prefetching a valid
    // reference's address has no observable effect besides timing.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(p).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
