//! The groups' wait-queue timers (`iocg->waitq_timer`, one hrtimer per
//! group), ordered so the next one to fire is found without visiting every
//! group: an indexed 4-ary min-heap on `(expiry ns, group)`.
//!
//! The kernel's hrtimer base keeps armed timers in a red-black tree; what
//! matters here is only the order in which due timers run, which is by
//! expiry and then by group index (see "Timers fire at their exact expiry"
//! in the module header). Arming, re-arming and cancelling a timer are
//! O(log groups); the earliest timer is O(1).

/// Not in the heap.
const NONE: usize = usize::MAX;
/// Children per node: half the depth of a binary heap, and a node's
/// children are adjacent (one or two cache lines).
const ARITY: usize = 4;

/// `(expiry, group)` as one integer that orders the same way.
#[inline]
fn key(t: u64, g: usize) -> u128 {
    (t as u128) << 64 | g as u128
}

#[inline]
fn group_of(k: u128) -> usize {
    k as u64 as usize
}

#[derive(Clone, Debug, Default)]
pub(super) struct TimerQueue {
    /// [`key`]s, a min-heap.
    heap: Vec<u128>,
    /// Each group's index in `heap`, or `NONE`.
    pos: Vec<usize>,
}

impl TimerQueue {
    /// No timer armed, for groups `0..groups`.
    pub fn new(groups: usize) -> Self {
        TimerQueue {
            heap: Vec::with_capacity(groups),
            pos: vec![NONE; groups],
        }
    }

    /// The earliest armed timer `(expiry ns, group)`.
    #[inline]
    pub fn first(&self) -> Option<(u64, usize)> {
        self.heap.first().map(|&k| ((k >> 64) as u64, group_of(k)))
    }

    /// `g`'s expiry, if its timer is armed.
    #[inline]
    pub fn get(&self, g: usize) -> Option<u64> {
        match self.pos.get(g) {
            Some(&i) if i != NONE => Some((self.heap[i] >> 64) as u64),
            _ => None,
        }
    }

    /// Arm (`Some`), re-arm or cancel (`None`) `g`'s timer.
    pub fn set(&mut self, g: usize, at: Option<u64>) {
        if g >= self.pos.len() {
            self.pos.resize(g + 1, NONE);
        }
        let i = self.pos[g];
        match (at, i == NONE) {
            (None, true) => {}
            (Some(t), true) => {
                self.heap.push(key(t, g));
                self.sift_up(self.heap.len() - 1);
            }
            (Some(t), false) => {
                let old = self.heap[i];
                self.heap[i] = key(t, g);
                if self.heap[i] < old {
                    self.sift_up(i);
                } else {
                    self.sift_down(i);
                }
            }
            (None, false) => {
                self.pos[g] = NONE;
                let last = self.heap.pop().unwrap_or_default();
                if i < self.heap.len() {
                    // the last entry fills the hole; it may belong above
                    // or below it
                    self.heap[i] = last;
                    let i = self.sift_up(i);
                    self.sift_down(i);
                }
            }
        }
    }

    /// Move the entry at `i` up to its place; returns where it landed.
    fn sift_up(&mut self, mut i: usize) -> usize {
        let e = self.heap[i];
        while i > 0 {
            let p = (i - 1) / ARITY;
            let up = self.heap[p];
            if up <= e {
                break;
            }
            self.heap[i] = up;
            self.pos[group_of(up)] = i;
            i = p;
        }
        self.heap[i] = e;
        self.pos[group_of(e)] = i;
        i
    }

    /// Move the entry at `i` down to its place.
    fn sift_down(&mut self, mut i: usize) {
        let e = self.heap[i];
        let n = self.heap.len();
        loop {
            let first = i * ARITY + 1;
            if first >= n {
                break;
            }
            let end = (first + ARITY).min(n);
            let (mut c, mut m) = (first, self.heap[first]);
            for k in first + 1..end {
                let v = self.heap[k];
                if v < m {
                    (c, m) = (k, v);
                }
            }
            if e <= m {
                break;
            }
            self.heap[i] = m;
            self.pos[group_of(m)] = i;
            i = c;
        }
        self.heap[i] = e;
        self.pos[group_of(e)] = i;
    }

    /// Heap order holds and the index is consistent (for the invariants).
    pub fn check(&self) -> Result<(), String> {
        for (i, &k) in self.heap.iter().enumerate() {
            let (t, g) = ((k >> 64) as u64, group_of(k));
            if self.pos.get(g) != Some(&i) {
                return Err(format!("timer ({t}, {g}) at {i} indexed elsewhere"));
            }
            if i > 0 && self.heap[(i - 1) / ARITY] > k {
                return Err(format!("timer ({t}, {g}) at {i} above its parent"));
            }
        }
        let indexed = self.pos.iter().filter(|&&i| i != NONE).count();
        if indexed != self.heap.len() {
            return Err(format!(
                "{indexed} groups indexed, {} timers",
                self.heap.len()
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 256,
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        /// Any sequence of arm / re-arm / cancel / fire-the-first keeps the
        /// same earliest timer as an ordered set of `(expiry, group)`.
        #[test]
        fn matches_an_ordered_set(
            ops in prop::collection::vec((0usize..40, prop::option::of(0u64..60), any::<bool>()), 1..400),
        ) {
            let mut q = TimerQueue::new(40);
            let mut armed: Vec<Option<u64>> = vec![None; 40];
            let mut set = BTreeSet::new();
            for &(g, at, fire) in &ops {
                if fire {
                    // what run_timers does: take the first, cancel it
                    if let Some(&(t, f)) = set.iter().next() {
                        prop_assert_eq!(q.first(), Some((t, f)));
                        q.set(f, None);
                        set.remove(&(t, f));
                        armed[f] = None;
                    }
                } else {
                    q.set(g, at);
                    if let Some(old) = armed[g] {
                        set.remove(&(old, g));
                    }
                    if let Some(t) = at {
                        set.insert((t, g));
                    }
                    armed[g] = at;
                }
                q.check().map_err(TestCaseError::fail)?;
                prop_assert_eq!(q.first(), set.iter().next().copied());
                for (k, &a) in armed.iter().enumerate() {
                    prop_assert_eq!(q.get(k), a);
                }
            }
        }
    }
}
