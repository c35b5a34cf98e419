//! A set of page numbers: the page cache's record of pages written back
//! and clean since. Pages are grouped in chunks of 4,096 (16 MiB of data):
//! a chunk with some pages is a bitmap, a chunk with all of them is one
//! flag. Sequential writeback, the common case, keeps one small entry per
//! 16 MiB however much was written; random writeback costs 512 bytes per
//! chunk touched and a hash lookup and a bit per page, where a tree of
//! runs (the earlier form) paid several tree operations per page once
//! random writes had cut it into single pages.

use std::collections::hash_map::Entry;
use std::collections::HashMap;

/// Pages per chunk (64 words of 64 bits).
const CHUNK_PAGES: u64 = 4096;
const WORDS: usize = (CHUNK_PAGES / 64) as usize;

#[derive(Debug, Clone)]
enum Chunk {
    /// Every page of the chunk is in the set.
    Full,
    /// Some are: `count` bits set in `bits`.
    Some { count: u32, bits: Box<[u64; WORDS]> },
}

#[derive(Debug, Default, Clone)]
pub struct PageSet {
    /// Chunk index (page / [`CHUNK_PAGES`]) → its pages; chunks with no
    /// page are absent.
    chunks: HashMap<u64, Chunk, foldhash::fast::FixedState>,
}

/// Chunk index, word and bit of page `p`.
fn place(p: u64) -> (u64, usize, u64) {
    let i = (p % CHUNK_PAGES) as usize;
    (p / CHUNK_PAGES, i / 64, 1u64 << (i % 64))
}

impl PageSet {
    #[cfg(test)]
    pub fn contains(&self, p: u64) -> bool {
        let (c, w, b) = place(p);
        match self.chunks.get(&c) {
            None => false,
            Some(Chunk::Full) => true,
            Some(Chunk::Some { bits, .. }) => bits[w] & b != 0,
        }
    }

    /// Add `p`; false if it was there.
    pub fn insert(&mut self, p: u64) -> bool {
        let (c, w, b) = place(p);
        match self.chunks.entry(c) {
            Entry::Vacant(v) => {
                let mut bits = Box::new([0u64; WORDS]);
                bits[w] = b;
                v.insert(Chunk::Some { count: 1, bits });
                true
            }
            Entry::Occupied(mut o) => {
                let Chunk::Some { count, bits } = o.get_mut() else {
                    return false;
                };
                if bits[w] & b != 0 {
                    return false;
                }
                bits[w] |= b;
                *count += 1;
                if u64::from(*count) == CHUNK_PAGES {
                    o.insert(Chunk::Full);
                }
                true
            }
        }
    }

    /// Remove `p`; false if it was not there.
    pub fn remove(&mut self, p: u64) -> bool {
        let (c, w, b) = place(p);
        let Entry::Occupied(mut o) = self.chunks.entry(c) else {
            return false;
        };
        if let Chunk::Full = o.get() {
            o.insert(Chunk::Some {
                count: CHUNK_PAGES as u32,
                bits: Box::new([u64::MAX; WORDS]),
            });
        }
        let Chunk::Some { count, bits } = o.get_mut() else {
            unreachable!("a full chunk was made a bitmap above");
        };
        if bits[w] & b == 0 {
            return false;
        }
        bits[w] &= !b;
        *count -= 1;
        if *count == 0 {
            o.remove();
        }
        true
    }

    /// Bytes of chunk storage held (memory use).
    #[cfg(test)]
    pub fn bitmap_bytes(&self) -> usize {
        self.chunks
            .values()
            .map(|c| match c {
                Chunk::Full => 0,
                Chunk::Some { .. } => WORDS * 8,
            })
            .sum()
    }

    /// Number of chunks with a page in the set.
    #[cfg(test)]
    pub fn chunks(&self) -> usize {
        self.chunks.len()
    }
}

/// An ordered set of page numbers (an inode's dirty pages): a bitmap per
/// chunk of 4,096 pages, chunks in order, so the next dirty page at or
/// after a cursor (`write_cache_pages` from `writeback_index`) is a tree
/// step and a bit scan, and adding or removing a page is a bit.
#[derive(Debug, Default, Clone)]
pub struct SortedPageSet {
    chunks: std::collections::BTreeMap<u64, Box<[u64; WORDS]>>,
    len: u64,
}

impl SortedPageSet {
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn contains(&self, p: u64) -> bool {
        let (c, w, b) = place(p);
        self.chunks.get(&c).is_some_and(|bits| bits[w] & b != 0)
    }

    /// Add `p`; false if it was there.
    pub fn insert(&mut self, p: u64) -> bool {
        let (c, w, b) = place(p);
        let bits = self.chunks.entry(c).or_insert_with(|| Box::new([0; WORDS]));
        if bits[w] & b != 0 {
            return false;
        }
        bits[w] |= b;
        self.len += 1;
        true
    }

    /// Remove `p`; false if it was not there.
    pub fn remove(&mut self, p: u64) -> bool {
        let (c, w, b) = place(p);
        let Some(bits) = self.chunks.get_mut(&c) else {
            return false;
        };
        if bits[w] & b == 0 {
            return false;
        }
        bits[w] &= !b;
        self.len -= 1;
        if bits.iter().all(|&x| x == 0) {
            self.chunks.remove(&c);
        }
        true
    }

    /// The smallest page in the set at or after `from`.
    pub fn first_from(&self, from: u64) -> Option<u64> {
        let (c0, w0, b0) = place(from);
        for (&c, bits) in self.chunks.range(c0..) {
            let (start_word, mut mask) = if c == c0 {
                (w0, !(b0 - 1))
            } else {
                (0, u64::MAX)
            };
            for (w, &word) in bits.iter().enumerate().skip(start_word) {
                let x = word & mask;
                if x != 0 {
                    return Some(c * CHUNK_PAGES + (w as u64) * 64 + u64::from(x.trailing_zeros()));
                }
                mask = u64::MAX;
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    #[test]
    fn sequential_pages_are_full_chunks() {
        let mut r = PageSet::default();
        for p in 0..(CHUNK_PAGES * 25) {
            assert!(r.insert(p));
        }
        assert_eq!((r.chunks(), r.bitmap_bytes()), (25, 0));
        assert!(r.remove(500));
        assert_eq!(r.bitmap_bytes(), 512);
        assert!(!r.contains(500) && r.contains(499) && r.contains(501));
        assert!(!r.remove(500));
        assert!(r.insert(500));
        assert!(!r.insert(500));
        assert_eq!((r.chunks(), r.bitmap_bytes()), (25, 0));
        // emptied chunks go away
        for p in 0..CHUNK_PAGES {
            assert!(r.remove(p));
        }
        assert_eq!(r.chunks(), 24);
    }

    proptest! {
        /// Same answers as a set of single pages, across chunk edges.
        #[test]
        fn behaves_like_a_set(ops in proptest::collection::vec(
            (any::<bool>(), prop_oneof![0u64..64, 4060u64..4140, 8180u64..8200]), 0..600)
        ) {
            let mut r = PageSet::default();
            let mut s = BTreeSet::new();
            for (ins, p) in ops {
                if ins {
                    prop_assert_eq!(r.insert(p), s.insert(p));
                } else {
                    prop_assert_eq!(r.remove(p), s.remove(&p));
                }
            }
            for q in (0..64).chain(4060..4140).chain(8180..8200) {
                prop_assert_eq!(r.contains(q), s.contains(&q));
            }
        }
    }

    proptest! {
        /// The ordered set answers as a `BTreeSet` does, and finds the
        /// next page at or after any point.
        #[test]
        fn sorted_behaves_like_a_btreeset(ops in proptest::collection::vec(
            (any::<bool>(), prop_oneof![0u64..70, 4090u64..4200, 20_000u64..20_010]), 0..600),
            probes in proptest::collection::vec(0u64..21_000, 0..50)
        ) {
            let mut r = SortedPageSet::default();
            let mut s = BTreeSet::new();
            for (ins, p) in ops {
                if ins {
                    prop_assert_eq!(r.insert(p), s.insert(p));
                } else {
                    prop_assert_eq!(r.remove(p), s.remove(&p));
                }
                prop_assert_eq!(r.len(), s.len() as u64);
            }
            for q in probes.into_iter().chain([0, 63, 64, 4095, 4096, 8191, 8192]) {
                prop_assert_eq!(r.contains(q), s.contains(&q));
                prop_assert_eq!(r.first_from(q), s.range(q..).next().copied(), "from {}", q);
            }
            prop_assert_eq!(r.is_empty(), s.is_empty());
            prop_assert_eq!(r.chunks.len(), s.iter().map(|p| p / CHUNK_PAGES).collect::<BTreeSet<_>>().len());
        }
    }

    /// A chunk filled page by page in any order becomes one flag.
    #[test]
    fn a_chunk_filled_out_of_order_is_full() {
        let mut r = PageSet::default();
        let mut p = 7u64;
        for _ in 0..CHUNK_PAGES {
            p = (p + 2_741) % CHUNK_PAGES; // 2741 is coprime with 4096
            assert!(r.insert(CHUNK_PAGES * 3 + p));
        }
        assert_eq!((r.chunks(), r.bitmap_bytes()), (1, 0));
        assert!(r.contains(CHUNK_PAGES * 3) && !r.contains(CHUNK_PAGES * 4));
    }
}
