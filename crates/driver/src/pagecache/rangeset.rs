//! A set of page numbers stored as maximal runs `[start, end)`: the
//! page cache's record of pages written back and clean since. Sequential
//! writeback, the common case, keeps it at a handful of runs however much
//! was written, where a set of single pages would grow with the file.

use std::collections::BTreeMap;

#[derive(Debug, Default, Clone)]
pub struct PageRanges {
    /// start → end (exclusive); runs never touch or overlap.
    runs: BTreeMap<u64, u64>,
}

impl PageRanges {
    /// The run holding `p`, if any.
    fn run_of(&self, p: u64) -> Option<(u64, u64)> {
        let (&s, &e) = self.runs.range(..=p).next_back()?;
        (p < e).then_some((s, e))
    }

    pub fn contains(&self, p: u64) -> bool {
        self.run_of(p).is_some()
    }

    /// Add `p`; false if it was there.
    pub fn insert(&mut self, p: u64) -> bool {
        if self.contains(p) {
            return false;
        }
        let mut start = p;
        let mut end = p + 1;
        // join the run ending at p and the run starting at p + 1
        if let Some((&s, &e)) = self.runs.range(..p).next_back() {
            if e == p {
                start = s;
                self.runs.remove(&s);
            }
        }
        if let Some(e) = self.runs.remove(&(p + 1)) {
            end = e;
        }
        self.runs.insert(start, end);
        true
    }

    /// Remove `p`; false if it was not there.
    pub fn remove(&mut self, p: u64) -> bool {
        let Some((s, e)) = self.run_of(p) else {
            return false;
        };
        self.runs.remove(&s);
        if s < p {
            self.runs.insert(s, p);
        }
        if p + 1 < e {
            self.runs.insert(p + 1, e);
        }
        true
    }

    /// Number of runs (memory use).
    #[cfg(test)]
    pub fn runs(&self) -> usize {
        self.runs.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    #[test]
    fn sequential_pages_are_one_run() {
        let mut r = PageRanges::default();
        for p in 0..100_000 {
            assert!(r.insert(p));
        }
        assert_eq!(r.runs(), 1);
        assert!(r.remove(500));
        assert_eq!(r.runs(), 2);
        assert!(!r.contains(500) && r.contains(499) && r.contains(501));
        assert!(r.insert(500));
        assert_eq!(r.runs(), 1);
    }

    proptest! {
        /// Same answers as a set of single pages.
        #[test]
        fn behaves_like_a_set(ops in proptest::collection::vec((any::<bool>(), 0u64..64), 0..400)) {
            let mut r = PageRanges::default();
            let mut s = BTreeSet::new();
            for (ins, p) in ops {
                if ins {
                    prop_assert_eq!(r.insert(p), s.insert(p));
                } else {
                    prop_assert_eq!(r.remove(p), s.remove(&p));
                }
                for q in 0..64 {
                    prop_assert_eq!(r.contains(q), s.contains(&q));
                }
            }
            // runs are maximal: no two touch
            let runs: Vec<_> = r.runs.iter().map(|(&a, &b)| (a, b)).collect();
            for w in runs.windows(2) {
                prop_assert!(w[0].1 < w[1].0);
            }
        }
    }
}
