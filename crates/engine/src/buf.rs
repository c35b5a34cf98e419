//! Aligned IO buffers, allocated once per backend.
//!
//! `O_DIRECT` needs the user buffer aligned to the device's DMA alignment
//! (`STATX_DIOALIGN`'s `dio_mem_align`, at most the logical block size in
//! practice). Every buffer here is aligned to at least 4 KiB and sized to
//! the largest IO, so any IO fits any buffer and no IO allocates.

use std::alloc::{self, Layout};
use std::ptr::NonNull;

/// One heap buffer with a chosen alignment (a `Box<[u8]>` with alignment).
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: `AlignedBuf` owns its allocation exclusively, like `Box<[u8]>`:
// moving it to another thread moves that ownership; `&AlignedBuf` only gives
// out `&[u8]`.
unsafe impl Send for AlignedBuf {}
// SAFETY: shared references only allow reads of plain bytes.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// A zero-filled buffer of `len` bytes (≥ 1) aligned to `align` (a power of two).
    ///
    /// # Panics
    /// If `align` is not a power of two or the size overflows (caller bug),
    /// or on allocation failure (as `Box` does).
    pub fn zeroed(len: usize, align: usize) -> Self {
        let layout = Layout::from_size_align(len.max(1), align).expect("valid buffer layout");
        // SAFETY: `layout` has a non-zero size (max(1)).
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let Some(ptr) = NonNull::new(raw) else {
            alloc::handle_alloc_error(layout)
        };
        AlignedBuf { ptr, layout }
    }

    /// Size of the buffer in bytes.
    pub fn len(&self) -> usize {
        self.layout.size()
    }

    /// Is the buffer 0 bytes long? (Never: [`AlignedBuf::zeroed`]
    /// allocates at least one byte.)
    pub fn is_empty(&self) -> bool {
        self.layout.size() == 0
    }

    /// Alignment of the buffer's start in bytes (a power of two).
    pub fn align(&self) -> usize {
        self.layout.align()
    }

    /// The buffer's bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `ptr` points to `layout.size()` initialised (zeroed) bytes
        // owned by `self`; the borrow ties the slice's lifetime to `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.layout.size()) }
    }

    /// The buffer's bytes, writable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_slice`, and `&mut self` makes the access unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.layout.size()) }
    }

    /// Raw pointer for the kernel (io_uring SQEs, buffer registration). The
    /// caller keeps `self` alive and untouched while the kernel uses it.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `zeroed` with exactly this layout.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

impl std::fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AlignedBuf")
            .field("len", &self.len())
            .field("align", &self.align())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_and_zeroed() {
        for align in [4096usize, 8192] {
            let mut b = AlignedBuf::zeroed(12345, align);
            assert_eq!(b.as_mut_ptr() as usize % align, 0);
            assert_eq!(b.len(), 12345);
            assert!(b.as_slice().iter().all(|&x| x == 0));
            b.as_mut_slice()[12344] = 7;
            assert_eq!(b.as_slice()[12344], 7);
        }
    }
}
