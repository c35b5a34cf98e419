//! The backend of the memory-mapped engines: every IO is a copy between
//! the job's buffer and a memory mapping, made when the IO is submitted
//! and complete when the copy returns (`FIO_SYNCIO`; no block IO):
//!
//! * `libpmem` (fio 3.33 engines/libpmem.c): a shared mapping of the
//!   job's file (`pmem_map_file`). Reads `memcpy` from it; writes copy
//!   into it with non-temporal stores when `direct=1`
//!   (`PMEM_F_MEM_NONTEMPORAL`), plainly otherwise; with `sync=1` each
//!   write then drains (`fio_libpmem_queue`: no `PMEM_F_MEM_NODRAIN`),
//!   and a sync IO (`fsync=`) drains. libpmem's drain is a fence that
//!   completes its cache flushes on persistent memory; blkqos makes the
//!   range durable with `msync(MS_SYNC)`, which on a DAX file system
//!   writes back the CPU cache lines (the kernel's
//!   `dax_writeback_mapping_range`) and on any other writes the page
//!   cache's pages to the disk, where fio 3.33's engine refuses a file
//!   that is not on persistent memory (err=95, unless
//!   `PMEM_IS_PMEM_FORCE=1`, and then nothing makes its writes durable).
//!   At the end of a job without `direct=1` the whole mapping drains
//!   (`fio_libpmem_close_file`).
//! * `dev-dax` (engines/dev-dax.c): a shared mapping of a device-DAX
//!   character device; each write copies and writes the CPU cache lines
//!   back (`pmem_memcpy_persist`: `clflush` here, then `sfence`).
//! * `page_fault` (engines/page_fault.c of a fio newer than 3.33): a
//!   private anonymous mapping of the job's size per job clone
//!   (`fio_page_fault_init`); each IO copies to or from it, faulting in
//!   the pages it touches first; an IO past the mapping fails with
//!   EINVAL; syncs do nothing.
//!
//! Trims fail with EINVAL in all three, as in fio. The driver's target is
//! a ledger of regions (the run's plan): an IO's offset names the region
//! and the offset in it.

use crate::mapcopy;
use blkqos_core::{Instant, Io, IoOp};
use blkqos_driver::{Backend, Completion};
use memmap2::{MmapMut, MmapOptions};
use std::fs::File;
use std::path::PathBuf;

/// Which engine a job clone runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapEngine {
    /// fio `libpmem`.
    Libpmem,
    /// fio `dev-dax`.
    DevDax,
    /// fio `page_fault`.
    PageFault,
}

/// One mapping, and where it lies on the driver's ledger.
pub struct Region {
    /// Start on the ledger.
    pub start: u64,
    /// Length (the mapping's).
    pub len: u64,
    /// The mapped file or device (None: anonymous memory).
    pub path: Option<PathBuf>,
    map: MmapMut,
}

impl Region {
    /// A shared read-write mapping of the first `len` bytes of `file`
    /// (libpmem's `pmem_map_file`, dev-dax's `mmap(MAP_SHARED)`).
    pub fn shared(path: PathBuf, file: &File, start: u64, len: u64) -> std::io::Result<Region> {
        let n = usize::try_from(len.max(1)).map_err(|_| std::io::Error::other("too large"))?;
        // SAFETY: the mapping is of a file the run owns for its duration;
        // blkqos reads and writes it only through this mapping meanwhile
        // (a change by another process shows as changed bytes, no more).
        let map = unsafe { MmapOptions::new().len(n).map_mut(file)? };
        Ok(Region {
            start,
            len,
            path: Some(path),
            map,
        })
    }

    /// A private anonymous mapping of `len` bytes (`fio_page_fault_init`:
    /// `MAP_PRIVATE | MAP_ANONYMOUS`); no page is there until touched.
    pub fn anonymous(start: u64, len: u64) -> std::io::Result<Region> {
        let n = usize::try_from(len.max(1)).map_err(|_| std::io::Error::other("too large"))?;
        let map = MmapOptions::new().len(n).map_anon()?;
        Ok(Region {
            start,
            len,
            path: None,
            map,
        })
    }

    /// Make `[off, off + len)` of a shared mapping durable (`msync`).
    fn sync_range(&self, off: usize, len: usize) -> Result<(), i32> {
        if self.path.is_none() {
            return Ok(());
        }
        self.map
            .flush_range(off, len)
            .map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))
    }
}

/// How one job clone does its IO.
#[derive(Clone, Debug)]
pub struct CloneSetup {
    /// Its engine.
    pub engine: MapEngine,
    /// libpmem `sync=1`: every write drains.
    pub sync: bool,
    /// libpmem `direct=1`: non-temporal copies, no drain at the end.
    pub direct: bool,
    /// What every write holds (`buffer_pattern`, or one zero byte for
    /// `zero_buffers`); None: fio's random contents.
    pub fill: Option<Vec<u8>>,
    /// fio scrambles the buffer before each write (`TD_F_SCRAMBLE_BUFFERS`).
    pub scramble: bool,
    /// Seed of the random contents.
    pub seed: u64,
    /// The largest IO of the clone.
    pub max_io_bytes: u64,
    /// The regions (indices into the backend's) the clone does IO on.
    pub regions: Vec<usize>,
}

struct CloneState {
    setup: CloneSetup,
    buf: Vec<u8>,
    /// Page faults its IOs took: (minor, major).
    faults: (u64, u64),
}

/// The calling thread's page faults so far, (minor, major).
fn thread_faults() -> Option<(u64, u64)> {
    crate::usage::ProcessUsage::thread_now().map(|u| (u.minflt, u.majflt))
}

/// The synchronous backend of the memory-mapped engines.
pub struct MappedBackend {
    epoch: std::time::Instant,
    regions: Vec<Region>,
    clones: Vec<CloneState>,
    done: Vec<Completion>,
    capacity: u64,
    msyncs: u64,
}

impl MappedBackend {
    /// A backend over `regions`, job clone `i` (its index, the IO's
    /// submitter) doing IO as `clones[i]` says.
    pub fn new(regions: Vec<Region>, clones: Vec<CloneSetup>) -> Self {
        let capacity = regions.iter().map(|r| r.start + r.len).max().unwrap_or(0);
        let clones = clones
            .into_iter()
            .map(|setup| {
                let mut buf = vec![0u8; usize::try_from(setup.max_io_bytes.max(1)).unwrap_or(1)];
                match &setup.fill {
                    Some(p) => crate::pattern::repeat(&mut buf, p),
                    None => mapcopy::fill_random(&mut buf, setup.seed),
                }
                CloneState {
                    setup,
                    buf,
                    faults: (0, 0),
                }
            })
            .collect();
        MappedBackend {
            epoch: std::time::Instant::now(),
            regions,
            clones,
            done: Vec::new(),
            capacity,
            msyncs: 0,
        }
    }

    /// The regions, for the run's report and checks.
    pub fn regions(&self) -> &[Region] {
        &self.regions
    }

    /// The page faults clone `c`'s IOs took, (minor, major): the
    /// thread's `getrusage(RUSAGE_THREAD)` counts around each copy.
    pub fn faults(&self, c: usize) -> Option<(u64, u64)> {
        self.clones.get(c).map(|s| s.faults)
    }

    /// `msync` calls made so far (the drains of libpmem jobs).
    pub fn msyncs(&self) -> u64 {
        self.msyncs
    }

    /// The jobs' end (`fio_libpmem_close_file`): the mappings of every
    /// libpmem clone without `direct=1` drain. The first failure's errno.
    pub fn close(&mut self) -> Result<(), i32> {
        let mut first = Ok(());
        for c in 0..self.clones.len() {
            let s = &self.clones[c].setup;
            if s.engine == MapEngine::Libpmem && !s.direct {
                let r = self.drain_all(c);
                first = first.and(r);
            }
        }
        first
    }

    /// Drain every region of clone `c` (libpmem `pmem_drain`, made durable
    /// on any file system with `msync`).
    fn drain_all(&mut self, c: usize) -> Result<(), i32> {
        mapcopy::drain();
        for &r in &self.clones[c].setup.regions {
            let reg = &self.regions[r];
            self.msyncs += 1;
            reg.sync_range(0, reg.map.len())?;
        }
        Ok(())
    }

    /// The IO `io` of clone `c`: Ok(bytes) or the errno.
    fn serve(&mut self, c: usize, io: &Io) -> Result<u64, i32> {
        let engine = self.clones[c].setup.engine;
        if io.op == IoOp::Flush {
            // libpmem: pmem_drain; dev-dax and page_fault: nothing
            return match engine {
                MapEngine::Libpmem => self.drain_all(c).map(|()| 0),
                _ => Ok(0),
            };
        }
        let st = &self.clones[c];
        let Some(r) = st.setup.regions.iter().copied().find(|&r| {
            let reg = &self.regions[r];
            (reg.start..reg.start + reg.len.max(1)).contains(&io.offset)
        }) else {
            return Err(libc::EINVAL);
        };
        let off = io.offset - self.regions[r].start;
        // page_fault: an IO past the mapping fails (fio_page_fault_queue)
        if off + io.len > self.regions[r].len || io.len as usize > st.buf.len() {
            return Err(libc::EINVAL);
        }
        let (off, len) = (off as usize, io.len as usize);
        match io.op {
            IoOp::Read => {
                let st = &mut self.clones[c];
                st.buf[..len].copy_from_slice(&self.regions[r].map[off..off + len]);
                std::hint::black_box(&st.buf[..len]);
                Ok(io.len)
            }
            IoOp::Write => self.write(c, r, io.offset, off, len).map(|()| io.len),
            _ => Err(libc::EINVAL),
        }
    }

    /// Clone `c` writes `len` bytes at `off` of region `r` (`file_offset`:
    /// the IO's offset, which fio's scrambling stamps).
    fn write(
        &mut self,
        c: usize,
        r: usize,
        file_offset: u64,
        off: usize,
        len: usize,
    ) -> Result<(), i32> {
        let st = &mut self.clones[c];
        if st.setup.scramble {
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            let when = (t.as_secs(), u64::from(t.subsec_nanos()));
            mapcopy::scramble(&mut st.buf[..len], file_offset, when);
        }
        let (src, dst) = (&st.buf[..len], &mut self.regions[r].map[off..off + len]);
        match st.setup.engine {
            MapEngine::PageFault => dst.copy_from_slice(src),
            MapEngine::DevDax => {
                // pmem_memcpy_persist
                dst.copy_from_slice(src);
                mapcopy::flush_cache(dst);
                mapcopy::drain();
            }
            MapEngine::Libpmem => {
                if st.setup.direct {
                    mapcopy::copy_nontemporal(dst, src);
                } else {
                    dst.copy_from_slice(src);
                }
                if st.setup.sync {
                    mapcopy::drain();
                    self.msyncs += 1;
                    self.regions[r].sync_range(off, len)?;
                }
            }
        }
        Ok(())
    }
}

impl Backend for MappedBackend {
    fn now(&self) -> Instant {
        Instant(u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }
    fn nr_requests(&self) -> u32 {
        // one copy at a time per clone; every clone may have one
        u32::try_from(self.clones.len()).unwrap_or(u32::MAX).max(1)
    }
    fn capacity_bytes(&self) -> u64 {
        self.capacity
    }
    fn submit(&mut self, io: &Io, _now: Instant) {
        let c = io.submitter.0 as usize;
        let faults_before = thread_faults();
        let issued = self.now();
        let res = if c < self.clones.len() {
            self.serve(c, io)
        } else {
            Err(libc::EINVAL)
        };
        let at = self.now();
        if let (Some(a), Some(b), Some(st)) =
            (faults_before, thread_faults(), self.clones.get_mut(c))
        {
            st.faults.0 += b.0.saturating_sub(a.0);
            st.faults.1 += b.1.saturating_sub(a.1);
        }
        let (bytes, error) = match res {
            Ok(b) => (b, 0),
            Err(e) => (0, e),
        };
        self.done.push(Completion {
            id: io.id,
            error,
            bytes,
            at,
            issued: Some(issued),
            dispatched: None,
        });
    }
    fn wait(&mut self, deadline: Option<Instant>, out: &mut Vec<Completion>) {
        if self.done.is_empty() {
            if let Some(d) = deadline {
                let now = self.now();
                if d > now {
                    std::thread::sleep(std::time::Duration::from_nanos(d.0 - now.0));
                }
            }
            return;
        }
        out.append(&mut self.done);
    }
    fn in_flight(&self) -> usize {
        self.done.len()
    }
}

#[cfg(test)]
#[path = "mapped_tests.rs"]
mod tests;
