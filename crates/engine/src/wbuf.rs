//! blkqos's userspace write-back buffer: the bytes of the pages buffered
//! jobs wrote that are not on the target yet.
//!
//! The driver's page-cache model ([`blkqos_driver::pagecache`]) decides
//! everything about buffered writes — which group owns a dirty page, when
//! a writer is throttled (balance_dirty_pages), when and in which IOs the
//! flushers write pages back under the owner's io.max/iocost, fsync. This
//! store only holds the data, so that what the model acknowledged is what
//! reaches the target:
//!
//! * [`PageStore::write`]: a job's write is acknowledged — its bytes (the
//!   job's data, blkqos's [`pattern`]) are copied into the page(s). A page
//!   written only in part is first read in from the target, as the kernel
//!   reads a page that is not uptodate before a partial write.
//! * [`PageStore::copy_out`]: a writeback IO (`IoFlags::WRITEBACK`) takes
//!   its data from the store when it is issued, recording which version of
//!   each page it carries.
//! * [`PageStore::written_back`]: when that IO succeeded, a page not
//!   written again since its copy is on the target and leaves the store; a
//!   page written again stays (the model has it dirty again). A failed
//!   writeback keeps every page.
//! * [`PageStore::overlay`]: reads see the newest data: pages in the store
//!   are copied over what the target returned.
//!
//! Bounded: only dirty pages and pages under writeback are held, and the
//! model keeps them under its dirty threshold (writers wait). Page buffers
//! are recycled, so a steady run allocates nothing after warm-up.

use crate::pattern;
use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;

/// Page size of the store (the model's `PAGE_BYTES`).
pub const PAGE: u64 = 4096;

/// What the store did (for reports and tests).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Bytes acknowledged into the store.
    pub bytes_written: u64,
    /// Pages that left the store after a successful writeback.
    pub pages_written_back: u64,
    /// Most pages held at once.
    pub pages_peak: u64,
    /// Partial-page writes that read the page in first.
    pub read_ins: u64,
    /// Pages a writeback IO asked for that the store did not hold (never,
    /// unless the model and the store disagree: the IO writes the pattern).
    pub missing: u64,
    /// Writeback IOs that failed (their pages were kept).
    pub failed_writebacks: u64,
}

/// The pieces of `[offset, offset + len)` in each page: (page index,
/// range within the page, range within the byte run).
fn spans(
    offset: u64,
    len: u64,
) -> impl Iterator<Item = (u64, std::ops::Range<usize>, std::ops::Range<usize>)> {
    let end = offset + len;
    let first = offset / PAGE;
    // empty when len = 0
    let last = if len == 0 { first } else { end.div_ceil(PAGE) };
    (first..last).map(move |idx| {
        let page_start = idx * PAGE;
        let from = offset.max(page_start);
        let to = end.min(page_start + PAGE);
        (
            idx,
            (from - page_start) as usize..(to - page_start) as usize,
            (from - offset) as usize..(to - offset) as usize,
        )
    })
}

struct Page {
    data: Box<[u8]>,
    /// Bumped by every write to the page.
    version: u64,
    /// `version` when the last writeback IO copied the page.
    copied: u64,
}

/// The write-back buffer: the data of the pages buffered jobs wrote that
/// have not reached the target yet, [`PAGE`]-sized pages keyed by their
/// page index on the target (module docs).
pub struct PageStore {
    pages: HashMap<u64, Page>,
    spare: Vec<Box<[u8]>>,
    /// The target, for reading in partially written pages.
    file: File,
    /// What the store did so far.
    pub stats: StoreStats,
}

impl PageStore {
    /// An empty store for the target `file` (read from to fill in pages
    /// written only in part).
    pub fn new(file: File) -> Self {
        PageStore {
            pages: HashMap::new(),
            spare: Vec::new(),
            file,
            stats: StoreStats::default(),
        }
    }

    /// Pages held now.
    pub fn len(&self) -> usize {
        self.pages.len()
    }

    /// Are no pages held?
    pub fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }

    fn page_mut(&mut self, idx: u64, whole: bool) -> &mut Page {
        if !self.pages.contains_key(&idx) {
            let mut data = self
                .spare
                .pop()
                .unwrap_or_else(|| vec![0u8; PAGE as usize].into_boxed_slice());
            if !whole {
                // not uptodate: read it in (a short read past EOF leaves 0s)
                data.fill(0);
                self.stats.read_ins += 1;
                let mut at = 0usize;
                while at < data.len() {
                    match self.file.read_at(&mut data[at..], idx * PAGE + at as u64) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => at += n,
                    }
                }
            }
            self.pages.insert(
                idx,
                Page {
                    data,
                    version: 0,
                    copied: 0,
                },
            );
            self.stats.pages_peak = self.stats.pages_peak.max(self.pages.len() as u64);
        }
        self.pages.get_mut(&idx).expect("inserted")
    }

    /// A job wrote `len` bytes at `offset` (its data: [`pattern`]).
    pub fn write(&mut self, offset: u64, len: u64) {
        for (idx, in_page, _) in spans(offset, len) {
            let whole = in_page.len() == PAGE as usize;
            let at = idx * PAGE + in_page.start as u64;
            let p = self.page_mut(idx, whole);
            pattern::fill(&mut p.data[in_page], at);
            p.version += 1;
        }
        self.stats.bytes_written += len;
    }

    /// A writeback IO of `buf.len()` bytes at `offset` is issued: fill
    /// `buf` from the store.
    pub fn copy_out(&mut self, offset: u64, buf: &mut [u8]) {
        for (idx, in_page, in_buf) in spans(offset, buf.len() as u64) {
            let at = offset + in_buf.start as u64;
            let dst = &mut buf[in_buf];
            match self.pages.get_mut(&idx) {
                Some(p) => {
                    dst.copy_from_slice(&p.data[in_page]);
                    p.copied = p.version;
                }
                None => {
                    self.stats.missing += 1;
                    pattern::fill(dst, at);
                }
            }
        }
    }

    /// The writeback IO of `len` bytes at `offset` completed (`ok`): pages
    /// not written since their copy leave the store.
    pub fn written_back(&mut self, offset: u64, len: u64, ok: bool) {
        if !ok {
            self.stats.failed_writebacks += 1;
            return;
        }
        for (idx, _, _) in spans(offset, len) {
            let clean = self.pages.get(&idx).is_some_and(|p| p.copied == p.version);
            if clean {
                let p = self.pages.remove(&idx).expect("present");
                self.spare.push(p.data);
                self.stats.pages_written_back += 1;
            }
        }
    }

    /// When the run did not drain the buffer under its limits (the driver
    /// failed, or the drain was given up after a SIGTERM or a second
    /// signal): write every held page to `file` in page order,
    /// unthrottled, then fsync it. Returns (pages written,
    /// pages whose write failed); written pages leave the store.
    pub fn write_out(&mut self, file: &File) -> (u64, u64) {
        let mut idxs: Vec<u64> = self.pages.keys().copied().collect();
        idxs.sort_unstable();
        let (mut written, mut failed) = (0, 0);
        for idx in idxs {
            let ok = file
                .write_all_at(&self.pages[&idx].data, idx * PAGE)
                .is_ok();
            if ok {
                let p = self.pages.remove(&idx).expect("listed");
                self.spare.push(p.data);
                written += 1;
            } else {
                failed += 1;
            }
        }
        if written > 0 && file.sync_all().is_err() {
            failed += written;
            written = 0;
        }
        self.stats.pages_written_back += written;
        (written, failed)
    }

    /// A read of `buf.len()` bytes at `offset` returned from the target:
    /// pages in the store are newer.
    pub fn overlay(&self, offset: u64, buf: &mut [u8]) {
        if self.pages.is_empty() {
            return;
        }
        for (idx, in_page, in_buf) in spans(offset, buf.len() as u64) {
            if let Some(p) = self.pages.get(&idx) {
                buf[in_buf].copy_from_slice(&p.data[in_page]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn store_on(content: &[u8]) -> (tempfile::NamedTempFile, PageStore) {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(content).unwrap();
        let s = PageStore::new(f.reopen().unwrap());
        (f, s)
    }

    #[test]
    fn written_pages_are_copied_out_and_leave_after_writeback() {
        let (_f, mut s) = store_on(&[]);
        s.write(0, 8192);
        assert_eq!(s.len(), 2);
        let mut buf = vec![0u8; 8192];
        s.copy_out(0, &mut buf);
        assert_eq!(pattern::check(&buf, 0), None);
        s.written_back(0, 8192, true);
        assert!(s.is_empty());
        assert_eq!(s.stats.pages_written_back, 2);
        assert_eq!(s.stats.missing, 0);
    }

    #[test]
    fn write_out_puts_every_held_page_on_the_target() {
        let (f, mut s) = store_on(&[9u8; 3 * 4096]);
        s.write(4096, 4096);
        s.write(10, 20);
        assert_eq!(s.len(), 2);
        let w = std::fs::OpenOptions::new()
            .write(true)
            .open(f.path())
            .unwrap();
        assert_eq!(s.write_out(&w), (2, 0));
        assert!(s.is_empty());
        let data = std::fs::read(f.path()).unwrap();
        assert_eq!(pattern::check(&data[4096..8192], 4096), None);
        assert_eq!(pattern::check(&data[10..30], 10), None);
        assert_eq!((data[9], data[30], data[8192]), (9, 9, 9));
    }

    #[test]
    fn a_page_written_again_after_its_copy_stays() {
        let (_f, mut s) = store_on(&[]);
        s.write(0, 8192);
        let mut buf = vec![0u8; 8192];
        s.copy_out(0, &mut buf);
        s.write(4096, 4096);
        s.written_back(0, 8192, true);
        assert_eq!(s.len(), 1, "page 1 was re-dirtied under writeback");
        s.written_back(4096, 4096, false);
        assert_eq!(s.len(), 1, "a failed writeback keeps its pages");
    }

    #[test]
    fn a_partial_write_reads_the_page_in_and_reads_see_the_store() {
        let (_f, mut s) = store_on(&[7u8; 4096]);
        s.write(100, 50);
        assert_eq!(s.stats.read_ins, 1);
        let mut page = vec![0u8; 4096];
        s.copy_out(0, &mut page);
        assert_eq!(page[99], 7);
        assert_eq!(page[150], 7);
        assert_eq!(pattern::check(&page[100..150], 100), None);
        // a read returning stale data gets the store's bytes over it
        let mut read = vec![1u8; 300];
        s.overlay(0, &mut read);
        assert_eq!(read[0], 7);
        assert_eq!(pattern::check(&read[100..150], 100), None);
        let mut past = vec![1u8; 10];
        s.overlay(8192, &mut past);
        assert_eq!(past, vec![1u8; 10], "pages not held are left alone");
    }
}
