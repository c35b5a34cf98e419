//! The simulator's event queue: pending completions, earliest first.
//!
//! Device models produce completion times in nearly increasing order (a
//! new IO usually completes after those already queued, or a few places
//! before them), so most of the queue is kept as a sorted array: a push
//! goes in at most [`NEAR_END`] places from its end, a pop takes its
//! front. Anything that would go deeper (say, a fast write behind many
//! slow reads) goes to a binary min-heap instead, and a pop takes the
//! smaller of the two fronts. Typical cost: a few comparisons per push and
//! per pop; worst case: a heap's.
//!
//! Determinism: every key the simulator stores is unique (a sequence number
//! breaks ties), so the queue pops exactly the sequence any priority queue
//! would; results never depend on where an item was kept.

/// How far from the end of the sorted part a push may go in.
const NEAR_END: usize = 8;

/// A priority queue of `Copy` items ordered by `Ord` (smallest first).
#[derive(Clone, Debug)]
pub struct EventQueue<T> {
    /// `sorted[head..]` is in ascending order; `sorted[..head]` was popped.
    sorted: Vec<T>,
    head: usize,
    /// Items that were out of order by more than [`NEAR_END`] places.
    heap: MinHeap<T>,
}

impl<T: Ord + Copy> EventQueue<T> {
    pub fn with_capacity(n: usize) -> Self {
        EventQueue {
            sorted: Vec::with_capacity(2 * n),
            head: 0,
            heap: MinHeap::with_capacity(n),
        }
    }

    pub fn len(&self) -> usize {
        self.sorted.len() - self.head + self.heap.len()
    }

    /// The smallest item.
    #[inline]
    pub fn peek(&self) -> Option<&T> {
        match (self.sorted.get(self.head), self.heap.peek()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Remove and return the smallest item (the simulator pops with
    /// [`EventQueue::pop_if`]).
    #[cfg(test)]
    pub fn pop(&mut self) -> Option<T> {
        match (self.sorted.get(self.head), self.heap.peek()) {
            (Some(a), Some(b)) if b < a => self.heap.pop(),
            (Some(&a), _) => {
                self.head += 1;
                Some(a)
            }
            (None, _) => self.heap.pop(),
        }
    }

    /// Remove every item `due` says is due, smallest first, and hand each
    /// to `each` where it lies: the same items in the same order as
    /// [`EventQueue::pop_if`] until it says no, without copying each item
    /// through a temporary (an `Option<T>` copy cut the item into pieces
    /// that the reads after it straddled, each read waiting for the stores
    /// to land).
    #[inline(always)]
    pub fn pop_each(&mut self, due: impl Fn(&T) -> bool, mut each: impl FnMut(&T)) {
        loop {
            let from_heap = match (self.sorted.get(self.head), self.heap.peek()) {
                (Some(a), Some(b)) => b < a,
                (None, Some(_)) => true,
                (Some(_), None) => false,
                (None, None) => return,
            };
            if from_heap {
                if !self.heap.peek().is_some_and(&due) {
                    return;
                }
                if let Some(x) = self.heap.pop() {
                    each(&x);
                }
            } else {
                let a = &self.sorted[self.head];
                if !due(a) {
                    return;
                }
                each(a);
                self.head += 1;
            }
        }
    }

    /// Remove and return the smallest item if `due` says so (one look at
    /// the fronts, where a peek then a pop would look twice).
    #[cfg(test)]
    pub fn pop_if(&mut self, due: impl FnOnce(&T) -> bool) -> Option<T> {
        let a = self.sorted.get(self.head);
        let b = self.heap.peek();
        let from_heap = match (a, b) {
            (Some(a), Some(b)) => b < a,
            (None, b) => b.is_some(),
            (Some(_), None) => false,
        };
        if from_heap {
            if !due(b?) {
                return None;
            }
            self.heap.pop()
        } else {
            let x = *a?;
            if !due(&x) {
                return None;
            }
            self.head += 1;
            Some(x)
        }
    }

    /// Insert `x`. Inlined: an item passed through memory is read back
    /// in 16-byte pieces across the caller's 8-byte stores into it, and
    /// each such read waits for the stores to land.
    #[inline(always)]
    pub fn push(&mut self, x: T) {
        if self.head > 0 && self.head * 2 >= self.sorted.len() {
            // the popped prefix is as long as the live part: drop it
            // (amortised O(1) per push)
            self.sorted.drain(..self.head);
            self.head = 0;
        }
        let end = self.sorted.len();
        let floor = self.head.max(end.saturating_sub(NEAR_END));
        if floor > self.head && self.sorted[floor - 1] > x {
            // it would go deeper than NEAR_END places
            self.heap.push(x);
            return;
        }
        // insertion sort from the end (stops at `floor` at the latest)
        self.sorted.push(x);
        let mut i = end;
        while i > self.head && self.sorted[i - 1] > x {
            self.sorted[i] = self.sorted[i - 1];
            i -= 1;
        }
        self.sorted[i] = x;
    }
}

/// A binary min-heap of `Copy` items ordered by `Ord` (smallest on top).
///
/// Removal uses the "bottom-up" sift, as std's `BinaryHeap` does, but picks
/// the smaller child without a branch (which child wins is unpredictable).
#[derive(Clone, Debug, Default)]
pub struct MinHeap<T> {
    items: Vec<T>,
}

impl<T: Ord + Copy> MinHeap<T> {
    pub fn with_capacity(n: usize) -> Self {
        MinHeap {
            items: Vec::with_capacity(n),
        }
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// The smallest item.
    #[inline]
    pub fn peek(&self) -> Option<&T> {
        self.items.first()
    }

    /// Insert `x`. Inlined: an item passed through memory is read back
    /// in 16-byte pieces across the caller's 8-byte stores into it, and
    /// each such read waits for the stores to land.
    #[inline(always)]
    pub fn push(&mut self, x: T) {
        self.items.push(x);
        self.sift_up(self.items.len() - 1, x);
    }

    /// Remove and return the smallest item.
    #[inline]
    pub fn pop(&mut self) -> Option<T> {
        let last = self.items.pop()?;
        match self.items.first().copied() {
            Some(top) => {
                self.sift_down_from_root(last);
                Some(top)
            }
            None => Some(last),
        }
    }

    /// Fill the hole at `i` with `x`, moving it up to its place.
    #[inline]
    fn sift_up(&mut self, mut i: usize, x: T) {
        let items = &mut self.items[..];
        while i > 0 {
            let parent = (i - 1) / 2;
            if items[parent] <= x {
                break;
            }
            items[i] = items[parent];
            i = parent;
        }
        items[i] = x;
    }

    /// Fill the hole at the root with `x`: move the hole down to a leaf
    /// along the smaller children, then sift `x` up from there.
    #[inline]
    fn sift_down_from_root(&mut self, x: T) {
        let items = &mut self.items[..];
        let n = items.len();
        let mut i = 0;
        let mut child = 1;
        while child + 1 < n {
            // branch-free choice of the smaller child: which one wins is
            // unpredictable, and a mispredicted branch costs more than the
            // whole comparison
            child += usize::from(items[child + 1] < items[child]);
            items[i] = items[child];
            i = child;
            child = 2 * i + 1;
        }
        if child < n {
            items[i] = items[child];
            i = child;
        }
        self.sift_up(i, x);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// xorshift64 for test data.
    fn xs(x: &mut u64) -> u64 {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        *x
    }

    /// The operations both queues offer, for one test harness.
    trait Queue {
        fn push(&mut self, v: (u64, u64));
        fn pop(&mut self) -> Option<(u64, u64)>;
        fn peek(&self) -> Option<(u64, u64)>;
        fn len(&self) -> usize;
    }
    impl Queue for MinHeap<(u64, u64)> {
        fn push(&mut self, v: (u64, u64)) {
            MinHeap::push(self, v)
        }
        fn pop(&mut self) -> Option<(u64, u64)> {
            MinHeap::pop(self)
        }
        fn peek(&self) -> Option<(u64, u64)> {
            MinHeap::peek(self).copied()
        }
        fn len(&self) -> usize {
            MinHeap::len(self)
        }
    }
    impl Queue for EventQueue<(u64, u64)> {
        fn push(&mut self, v: (u64, u64)) {
            EventQueue::push(self, v)
        }
        fn pop(&mut self) -> Option<(u64, u64)> {
            EventQueue::pop(self)
        }
        fn peek(&self) -> Option<(u64, u64)> {
            EventQueue::peek(self).copied()
        }
        fn len(&self) -> usize {
            EventQueue::len(self)
        }
    }

    /// Random pushes (keys `drift * round + [0, spread)`, unique by round)
    /// and pops, checked against std's `BinaryHeap`.
    fn matches_std(mut q: impl Queue, drift: u64, spread: u64) {
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        let mut b = BinaryHeap::new();
        let mut r = 7u64;
        for round in 0..20_000u64 {
            // push two times in three, else pop
            let op = xs(&mut r) % 3;
            if op > 0 || q.len() == 0 {
                let v = (drift * round + xs(&mut r) % spread, round);
                q.push(v);
                b.push(Reverse(v));
            } else {
                assert_eq!(q.pop(), b.pop().map(|Reverse(v)| v));
            }
            assert_eq!(q.len(), b.len());
            assert_eq!(q.peek(), b.peek().map(|&Reverse(v)| v));
        }
        while let Some(Reverse(v)) = b.pop() {
            assert_eq!(q.pop(), Some(v));
        }
        assert_eq!(q.pop(), None);
    }

    #[test]
    fn heap_pops_in_order() {
        matches_std(MinHeap::with_capacity(8), 0, 50);
        matches_std(MinHeap::with_capacity(8), 10, 100);
    }

    #[test]
    fn event_queue_pops_in_order() {
        // random keys (mostly the heap), nearly sorted keys (mostly the
        // sorted part), and ties in the first field
        matches_std(EventQueue::with_capacity(8), 0, 1 << 40);
        matches_std(EventQueue::with_capacity(8), 100, 120);
        matches_std(EventQueue::with_capacity(8), 100, 2000);
        matches_std(EventQueue::with_capacity(8), 0, 3);
    }

    /// `pop_if` takes what a peek then a pop would: the smallest item,
    /// when the condition holds for it, and nothing otherwise.
    #[test]
    fn pop_each_pops_what_pop_if_pops() {
        let mut rng = 7u64;
        for _ in 0..200 {
            let (mut a, mut b) = (EventQueue::with_capacity(4), EventQueue::with_capacity(4));
            for k in 0..64u64 {
                rng = rng
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                // mostly increasing, some far behind (the heap's share)
                let at = if rng >> 60 == 0 {
                    k / 3
                } else {
                    k + (rng >> 58)
                };
                a.push((at, k));
                b.push((at, k));
                if rng & 3 == 0 {
                    let limit = k.saturating_sub(rng >> 61);
                    let mut got = Vec::new();
                    a.pop_each(|v| v.0 <= limit, |v| got.push(*v));
                    let mut want = Vec::new();
                    while let Some(v) = b.pop_if(|v| v.0 <= limit) {
                        want.push(v);
                    }
                    assert_eq!(got, want);
                }
            }
        }
    }

    #[test]
    fn pop_if_is_peek_then_pop() {
        for (drift, spread) in [(0, 1 << 40), (100, 120), (100, 2000), (0, 3)] {
            let mut q = EventQueue::with_capacity(8);
            let mut b = EventQueue::with_capacity(8);
            let mut r = 11u64;
            for round in 0..20_000u64 {
                if !xs(&mut r).is_multiple_of(3) {
                    let v = (drift * round + xs(&mut r) % spread, round);
                    q.push(v);
                    b.push(v);
                } else {
                    let limit = drift * round + xs(&mut r) % spread;
                    let want = match b.peek() {
                        Some(&v) if v.0 <= limit => b.pop(),
                        _ => None,
                    };
                    assert_eq!(q.pop_if(|v| v.0 <= limit), want);
                }
                assert_eq!(q.len(), b.len());
            }
            while let Some(v) = b.pop() {
                assert_eq!(q.pop_if(|_| true), Some(v));
            }
            assert_eq!(q.pop_if(|_| true), None);
        }
    }
}
