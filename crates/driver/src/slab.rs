//! Preallocated slots for in-flight IOs: no allocation per IO once warm.
//!
//! A slot keeps its last value after a removal (only its `full` flag
//! drops): values are `Copy`, and a removal hands out the value where it
//! is, for a plain copy (`Option::take` on a value with a niche moved the
//! bytes around the niche with a `memmove` call per IO).

use blkqos_core::IoId;

/// A slab of `T` addressed by [`IoId`] (index in the low 32 bits,
/// generation in the high 32 bits so stale ids are detected).
#[derive(Debug)]
pub struct Slab<T> {
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
    len: usize,
}

/// One slot: its generation, whether it holds a value, and the value (the
/// last one stored, when it does not).
#[derive(Debug)]
struct Slot<T> {
    gen: u32,
    full: bool,
    value: T,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab {
            slots: Vec::new(),
            free: Vec::new(),
            len: 0,
        }
    }
}

impl<T: Copy> Slab<T> {
    /// An empty slab with room for `n` values before it allocates.
    pub fn with_capacity(n: usize) -> Self {
        Slab {
            slots: Vec::with_capacity(n),
            free: Vec::with_capacity(n),
            len: 0,
        }
    }
    /// Store `v` in a free slot (reusing a freed one first) and return its
    /// id.
    pub fn insert(&mut self, v: T) -> IoId {
        self.insert_with(|_| v)
    }
    /// Insert the value `make` builds from the id it will have.
    #[inline]
    pub fn insert_with(&mut self, make: impl FnOnce(IoId) -> T) -> IoId {
        self.len += 1;
        if let Some(i) = self.free.pop() {
            let slot = &mut self.slots[i as usize];
            slot.gen = slot.gen.wrapping_add(1);
            let id = IoId((u64::from(slot.gen) << 32) | u64::from(i));
            slot.value = make(id);
            slot.full = true;
            id
        } else {
            let i = self.slots.len() as u32;
            let id = IoId(u64::from(i));
            self.slots.push(Slot {
                gen: 0,
                full: true,
                value: make(id),
            });
            id
        }
    }
    #[inline]
    fn locate(&self, id: IoId) -> Option<usize> {
        let i = (id.0 & 0xffff_ffff) as usize;
        let gen = (id.0 >> 32) as u32;
        match self.slots.get(i) {
            Some(s) if s.full && s.gen == gen => Some(i),
            _ => None,
        }
    }
    /// The value stored under `id`; `None` if it was removed (a stale id).
    #[inline]
    pub fn get(&self, id: IoId) -> Option<&T> {
        self.locate(id).map(|i| &self.slots[i].value)
    }
    /// The value stored under `id`, mutably; `None` if it was removed.
    #[inline]
    pub fn get_mut(&mut self, id: IoId) -> Option<&mut T> {
        self.locate(id).map(|i| &mut self.slots[i].value)
    }
    /// Free the slot of `id` and return the value it held (still there
    /// until an insert reuses the slot: copy it out with `let Some(&v)`);
    /// `None` if it was already removed. A reference and not an
    /// `Option<T>`: that would keep its tag in a niche of `T` (a `bool`
    /// deep inside a flight), and the copy into it is cut around that byte
    /// into pieces that later reads of the copy straddle.
    #[inline]
    pub fn remove(&mut self, id: IoId) -> Option<&T> {
        let i = self.locate(id)?;
        self.len -= 1;
        self.free.push(i as u32);
        let slot = &mut self.slots[i];
        slot.full = false;
        Some(&slot.value)
    }
    /// Number of values stored.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Is nothing stored?
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn stale_ids_are_rejected() {
        let mut s = Slab::default();
        let a = s.insert(1);
        assert_eq!(s.remove(a), Some(&1));
        assert_eq!(s.remove(a), None);
        let b = s.insert(2);
        assert_ne!(a, b);
        assert_eq!(s.get(a), None);
        assert_eq!(s.get(b), Some(&2));
        assert_eq!(s.len(), 1);
        let c = s.insert_with(|id| id.0);
        assert_eq!(s.get(c), Some(&c.0));
    }
}
