//! `random_generator=lfsr`: fio's Galois linear feedback shift register
//! over a file's blocks (`lib/lfsr.c`), which visits every block number
//! below the count exactly once per pass, in an order fixed by the seed.
//!
//! fio: lib/lfsr.c `lfsr_init()`, `lfsr_next()`, `lfsr_reset()`; the
//! tap positions are those of its table (maximal-length taps per width).

/// Tap positions (1-based bits) of a maximal-length LFSR of each width
/// 3..=63, as fio's `lfsr_taps` lists them.
const TAPS: [&[u8]; 64] = [
    &[],
    &[],
    &[],
    &[3, 2],
    &[4, 3],
    &[5, 3],
    &[6, 5],
    &[7, 6],
    &[8, 6, 5, 4],
    &[9, 5],
    &[10, 7],
    &[11, 9],
    &[12, 6, 4, 1],
    &[13, 4, 3, 1],
    &[14, 5, 3, 1],
    &[15, 14],
    &[16, 15, 13, 4],
    &[17, 14],
    &[18, 11],
    &[19, 6, 2, 1],
    &[20, 17],
    &[21, 19],
    &[22, 21],
    &[23, 18],
    &[24, 23, 22, 17],
    &[25, 22],
    &[26, 6, 2, 1],
    &[27, 5, 2, 1],
    &[28, 25],
    &[29, 27],
    &[30, 6, 4, 1],
    &[31, 28],
    &[32, 31, 29, 1],
    &[33, 20],
    &[34, 27, 2, 1],
    &[35, 33],
    &[36, 25],
    &[37, 5, 4, 3, 2, 1],
    &[38, 6, 5, 1],
    &[39, 35],
    &[40, 38, 21, 19],
    &[41, 38],
    &[42, 41, 20, 19],
    &[43, 42, 38, 37],
    &[44, 43, 18, 17],
    &[45, 44, 42, 41],
    &[46, 45, 26, 25],
    &[47, 42],
    &[48, 47, 21, 20],
    &[49, 40],
    &[50, 49, 24, 23],
    &[51, 50, 36, 35],
    &[52, 49],
    &[53, 52, 38, 37],
    &[54, 53, 18, 17],
    &[55, 31],
    &[56, 55, 35, 34],
    &[57, 50],
    &[58, 39],
    &[59, 58, 38, 37],
    &[60, 59],
    &[61, 60, 46, 45],
    &[62, 61, 6, 5],
    &[63, 62],
];

/// fio's multiplier of the per-purpose seeds (`setup_random_seeds`).
const SEED_MUL: u64 = 0x9e37_0001;
/// fio's index of the block-offset seed (`FIO_RAND_BLOCK_OFF`).
const BLOCK_OFF_SEED: u64 = 6;

/// The block-offset seed of job `thread_number` (1-based, every clone of
/// the run counted) for a repeatable run. fio `td_fill_rand_seeds_internal`:
/// with `randrepeat=1` as given it is `FIO_RANDSEED` × thread number,
/// whether or not a `randseed` is given (fio seeds before its
/// `fixup_options` turns `randrepeat` off for a `randseed`); with
/// `randrepeat=0` and a `randseed` it goes through `setup_random_seeds`'
/// multiplier chain from the `randseed`.
pub(super) fn block_offset_seed(rand_seed: u64, randrepeat_given: bool, thread_number: u64) -> u64 {
    if randrepeat_given {
        return crate::spec::FIO_RANDSEED.wrapping_mul(thread_number);
    }
    let mut seed = rand_seed;
    for _ in 0..4 + BLOCK_OFF_SEED {
        seed = seed.wrapping_mul(SEED_MUL);
    }
    seed.wrapping_mul(thread_number)
        .wrapping_add(BLOCK_OFF_SEED)
}

#[derive(Clone, Debug)]
pub(super) struct Lfsr {
    /// The largest value returned (the block count − 1).
    max_val: u64,
    xormask: u64,
    /// The register's top bit.
    cached_bit: u64,
    last_val: u64,
    /// Values returned in this pass.
    num_vals: u64,
    /// fio's spin bookkeeping with spin 0: the first step after
    /// `lfsr_init` is a double one (`prepare_spin` leaves the cycle at 1),
    /// a reset does not repeat it.
    cycle_length: u64,
}

impl Lfsr {
    /// fio `lfsr_init(blocks, seed, spin = 0)`; `None` when fio fails it
    /// (over 2^63 blocks, or a seed that is the register's forbidden
    /// all-ones state).
    pub(super) fn new(blocks: u64, seed: u64) -> Option<Lfsr> {
        let width = (3..64).find(|&i| (1u64 << i) > blocks)?;
        let taps = TAPS[width];
        let xormask = taps.iter().fold(0u64, |m, &t| m | 1u64 << (t - 1));
        let mut l = Lfsr {
            max_val: blocks.checked_sub(1)?,
            xormask,
            cached_bit: 1u64 << (taps[0] - 1),
            last_val: 0,
            num_vals: 0,
            cycle_length: 1,
        };
        l.reset(seed).then_some(l)
    }

    fn mask(&self) -> u64 {
        (self.cached_bit << 1) - 1
    }

    /// fio `lfsr_reset`: a new pass from `seed`; false for the all-ones
    /// state.
    pub(super) fn reset(&mut self, seed: u64) -> bool {
        self.num_vals = 0;
        self.last_val = seed & self.mask();
        self.last_val != self.mask()
    }

    /// One register step (fio `__LFSR_NEXT`).
    fn step(&mut self) {
        let v = self.last_val;
        let feedback = (v & 1).wrapping_sub(1) & self.xormask;
        self.last_val = ((v >> 1) | self.cached_bit) ^ feedback;
    }

    /// fio `lfsr_next`: the next block number, `None` when the pass has
    /// returned every one.
    pub(super) fn next(&mut self) -> Option<u64> {
        if self.num_vals > self.max_val {
            return None;
        }
        self.num_vals += 1;
        loop {
            if self.cycle_length > 0 {
                self.cycle_length -= 1;
                if self.cycle_length == 0 {
                    self.step();
                }
            }
            self.step();
            if self.last_val <= self.max_val {
                return Some(self.last_val);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_block_once_per_pass() {
        for blocks in [1u64, 2, 7, 8, 9, 100, 4096, 5000] {
            let mut l = Lfsr::new(blocks, 12345).expect("valid");
            for pass in 0..2 {
                let mut seen = vec![false; blocks as usize];
                for _ in 0..blocks {
                    let b = l.next().expect("a block left") as usize;
                    assert!(!seen[b], "block {b} twice in pass {pass} of {blocks}");
                    seen[b] = true;
                }
                assert_eq!(l.next(), None);
                assert!(l.reset(12345));
            }
        }
    }

    /// fio 3.33 `--ioengine=null --rw=randread --bs=4k --size=64k
    /// --random_generator=lfsr --write_iolog`, two jobs: the blocks of
    /// each job's log.
    #[test]
    fn the_order_of_fio_3_33() {
        let fio_job1 = [15, 11, 9, 14, 3, 8, 0, 4, 6, 7, 10, 1, 12, 2, 5, 13];
        let fio_job2 = [14, 3, 8, 0, 4, 6, 7, 10, 1, 12, 2, 5, 13, 15, 11, 9];
        for (tn, want) in [(1, fio_job1), (2, fio_job2)] {
            let seed = block_offset_seed(crate::spec::FIO_RANDSEED, true, tn);
            let mut l = Lfsr::new(16, seed).expect("valid");
            let got: Vec<u64> = (0..16).map(|_| l.next().expect("left")).collect();
            assert_eq!(got, want, "thread {tn}");
        }
    }

    #[test]
    fn the_all_ones_seed_is_refused_as_fio_does() {
        // 100 blocks: a 7-bit register, all ones = 127
        assert!(Lfsr::new(100, 127).is_none());
        assert!(Lfsr::new(100, 126).is_some());
    }
}
