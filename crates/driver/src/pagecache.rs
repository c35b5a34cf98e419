//! The page cache and writeback of a simulated kernel, for buffered
//! (`direct=0`) jobs.
//!
//! # Design
//!
//! A buffered write completes into dirty pages; the device sees the data
//! later, when a flusher writes the pages back. The model keeps what decides
//! *when* and *on whose account* that IO happens:
//!
//! * **Pages** (4 KiB) are clean, dirty, under writeback, or under writeback
//!   and re-dirtied. Pages are keyed by their device page index, so files
//!   are regions of the device (as the simulator lays them out).
//! * **Ownership** is per inode, as cgroup writeback has it
//!   (`inode_attach_wb`): the group that first dirties an inode owns it, and
//!   every writeback IO of the inode is charged to that group. Switching
//!   the owner of a shared inode (`inode_switch_wbs`) is not modelled.
//! * **Thresholds**: `dirty_ratio`/`dirty_background_ratio` of the
//!   configured memory (or the `_bytes` variants), as
//!   `domain_dirty_limits` computes them.
//! * **Writers** are throttled by `balance_dirty_pages` as the kernel runs
//!   it ([`dirty`]): a write dirties its pages as it copies them, calls in
//!   every `nr_dirtied_pause` pages and may sleep there, so a write's
//!   latency is its copy plus its pauses. Rates and limits follow the
//!   wb's measured write bandwidth and its share of writeback completions,
//!   in the global domain and in its memory cgroup's.
//! * **Flushers** write back, per inode in page order from a cursor
//!   (`write_cache_pages` with `writeback_index`), runs of contiguous dirty
//!   pages of at most `writeback_io_bytes` per IO and a chunk per inode
//!   per turn (`writeback_chunk_size`), inodes oldest-dirtied first
//!   (`b_dirty`). Background writeback runs while `wb_over_bg_thresh`
//!   holds (the dirty pages, not counting those under writeback, over
//!   `bg_thresh`, or the wb's or its memcg's share of it); periodic
//!   writeback every `writeback_interval` writes inodes dirtied more than
//!   `dirty_expire` ago (`wb_kupdate`). In the `async` and `root` modes a
//!   flusher forms each bio when it is free to submit it ([`flusher`]), so
//!   pages it has not reached stay dirty.
//! * **fsync** writes every dirty page of the inode at once, waits for all
//!   of its writeback to complete, then the driver sends a flush.
//!
//! # Writeback dispatch modes
//!
//! * `async` (default): a flusher hands writeback IO to the controllers and
//!   goes on; IO a controller holds is released at its own time, in
//!   deadline order. This is Linux's cgroup-v2 writeback under
//!   blk-throttle/iocost (the flusher's bios carry the owner and wait in the
//!   owner's throttle queue) and also the io-throttle `kiothrottled` design
//!   (a deadline-ordered tree of delayed writeback requests dispatched by a
//!   kernel thread): with a flusher that never blocks the two coincide.
//! * `sync`: one flusher for the device submits writeback IO and waits
//!   while a controller holds it, as throttling in the submitter's context
//!   does (io-throttle before `kiothrottled`): one owner's limit stalls
//!   every other owner's writeback, and the device sees bursts.
//! * `root`: writeback IO is charged to the root group (cgroup v1, or a
//!   kernel without cgroup writeback): group limits never see buffered
//!   writes.

use blkqos_core::{Duration, GroupId, Instant};
use std::collections::VecDeque;

pub mod dirty;
mod flusher;

/// The page cache's maps: keyed by page index, inode key or group, hashed
/// with foldhash (a page write looks up every page it touches; SipHash
/// was a quarter of a buffered run's instructions). Nothing iterates them
/// in an order that reaches a result.
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::FixedState>;

/// Bytes per page.
pub const PAGE_BYTES: u64 = 4096;
/// Pending memcg statistics updates above which a reclaim flushes them
/// (`MEMCG_CHARGE_BATCH` × the lab guest's two CPUs).
const MEMCG_FLUSH_UPDATES: u64 = 64 * 2;
/// How writeback IO reaches the controllers (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum WritebackMode {
    /// `async` (the default; also `linux`, `deadline`): the flusher hands
    /// writeback IO to the controllers and goes on; held IO is released in
    /// deadline order (cgroup-v2 writeback under blk-throttle/iocost).
    #[default]
    Async,
    /// `sync`: one flusher per device waits while a controller holds its
    /// IO, so one owner's limit stalls every owner's writeback.
    Sync,
    /// `root` (also `v1`): writeback IO is charged to the root group, as
    /// in cgroup v1 or a kernel without cgroup writeback.
    Root,
}

impl WritebackMode {
    /// The mode called `s`: `async` (or `linux`, `deadline`), `sync`,
    /// `root` (or `v1`); `None` for anything else.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "async" | "linux" | "deadline" => Some(Self::Async),
            "sync" => Some(Self::Sync),
            "root" | "v1" => Some(Self::Root),
            _ => None,
        }
    }
    /// The mode's canonical name (`async`, `sync` or `root`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Async => "async",
            Self::Sync => "sync",
            Self::Root => "root",
        }
    }
}

/// A dirty limit: a share of memory or an absolute size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DirtyLimit {
    /// A percentage of [`PageCacheConfig::memory_bytes`] (`vm.dirty_ratio`,
    /// `vm.dirty_background_ratio`).
    Percent(u32),
    /// An absolute size in bytes, rounded up to whole pages
    /// (`vm.dirty_bytes`, `vm.dirty_background_bytes`).
    Bytes(u64),
}

impl DirtyLimit {
    fn pages(self, memory_bytes: u64) -> u64 {
        match self {
            DirtyLimit::Percent(p) => memory_bytes / PAGE_BYTES * u64::from(p) / 100,
            DirtyLimit::Bytes(b) => b.div_ceil(PAGE_BYTES),
        }
    }
}

/// The page cache's settings: memory, the `vm.dirty_*` sysctls, writeback
/// IO sizes, the dispatch mode, and the CPU cost of cached IO.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageCacheConfig {
    /// Memory available to the page cache (`dirtyable` memory).
    pub memory_bytes: u64,
    /// `vm.dirty_ratio` / `vm.dirty_bytes`.
    pub dirty: DirtyLimit,
    /// `vm.dirty_background_ratio` / `vm.dirty_background_bytes`.
    pub dirty_background: DirtyLimit,
    /// `vm.dirty_expire_centisecs` (30 s).
    pub dirty_expire: Duration,
    /// `vm.dirty_writeback_centisecs` (5 s).
    pub writeback_interval: Duration,
    /// Largest writeback IO (a full bio: 1 MiB; lower it to the device's
    /// `max_sectors_kb` to model split requests).
    pub writeback_io_bytes: u64,
    /// Bytes written from one inode before moving to the next; 0 (the
    /// default): the kernel's `writeback_chunk_size`, from the wb's write
    /// bandwidth (4 MiB at tens of MB/s, up to 1/8 of the dirty limit
    /// plus 4 MiB while the estimate is high).
    pub chunk_bytes: u64,
    /// How writeback IO reaches the controllers.
    pub mode: WritebackMode,
    /// CPU time of a buffered read hit or write: a fixed syscall cost plus
    /// the copy at `copy_bytes_per_s` (so cached IO takes time, like
    /// `copy_page_to_iter` / `copy_page_from_iter` on a real host).
    pub syscall_ns: u64,
    /// Copy speed between user buffer and cache, in bytes per second
    /// (0 is taken as 1).
    pub copy_bytes_per_s: u64,
    /// Reads of cached pages are served from the cache. Off for the real
    /// engine's write-back buffer, which holds only dirty pages and pages
    /// under writeback: reads go to the target and the buffer's newer
    /// pages are laid over what it returns.
    pub cache_reads: bool,
    /// Keep the per-second writeback series ([`PageCacheReport::series`]):
    /// only a written report needs it.
    pub series: bool,
    /// When the jobs are done (or stopped), write every dirty page back
    /// and flush before the run ends (the real engine's write-back buffer:
    /// nothing acknowledged is left behind). The simulator leaves dirty
    /// pages in memory, as a kernel would.
    pub drain_at_end: bool,
    /// `CONFIG_HZ` of the kernel whose dirty throttle runs: its pauses,
    /// periods and bandwidth intervals are jiffies (0 is taken as 1000).
    pub hz: u64,
    /// Where in its jiffy the run starts (ns), as the driver's other
    /// jiffy clocks.
    pub tick_phase_ns: u64,
    /// Keep the `balance_dirty_pages` and `bdi_dirty_ratelimit`
    /// tracepoints ([`PageCache::drain_trace`]).
    pub trace: bool,
    /// A buffered write dirties whole large folios (the largest aligned
    /// power of two of pages the write covers, up to 2 MiB, the PMD
    /// order `__filemap_get_folio` is capped at) and its task calls into
    /// `balance_dirty_pages` after each folio; false: 4 KiB folios.
    pub large_folios: bool,
    /// `balance_dirty_pages` reads a memory cgroup's page counts as the
    /// periodic 2 s flush left them (`mem_cgroup_flush_stats_ratelimited`
    /// in `mem_cgroup_wb_stats`, Linux 6.8 on); false: flushed at the
    /// read once more than 128 updates are pending (6.1's
    /// `mem_cgroup_flush_stats`).
    pub memcg_stats_ratelimited: bool,
    /// Where a wb's share of a dirty threshold is floored while its
    /// writeout fraction is small: in `__wb_calc_thresh` (Linux 6.14 on,
    /// the default) or in `wb_position_ratio` alone (before).
    pub wb_thresh_floor: dirty::WbThreshFloor,
    /// How far the periodic memcg statistics flush is into its 2 s period
    /// when the run starts, ns (below 2 s): it runs every `FLUSH_TIME`
    /// since the root memory cgroup came online at boot
    /// (`mem_cgroup_css_online` queues `stats_flush_dwork`), not since the
    /// job, so its first run comes 2 s less this after the start.
    pub memcg_flush_phase_ns: u64,
    /// Something reads the groups' `io.stat` every this many ns (0: nothing
    /// does), the first read `io_stat_read_phase_ns` into the run: a
    /// monitor, as the lab's sampler reads it every second.
    pub io_stat_read_every_ns: u64,
    /// When the first of those reads comes after the start, ns (below
    /// `io_stat_read_every_ns`).
    pub io_stat_read_phase_ns: u64,
    /// Such a read flushes the memory cgroups' statistics (before Linux
    /// 6.16, when every controller shared the cgroup's rstat tree).
    pub io_stat_flushes_memcg: bool,
    /// `memory.max` of groups that have one (bytes): the group's page
    /// cache pages are charged to it, it reclaims its own clean pages
    /// beyond it, and its dirty limits shrink with its headroom
    /// (`mem_cgroup_wb_stats`).
    pub memory_max: Vec<(GroupId, u64)>,
}

impl PageCacheConfig {
    /// CPU time to copy `bytes` between the user buffer and the cache.
    pub fn copy_time(&self, bytes: u64) -> Duration {
        let copy = bytes.saturating_mul(1_000_000_000) / self.copy_bytes_per_s.max(1);
        Duration(self.syscall_ns + copy)
    }
}

impl Default for PageCacheConfig {
    fn default() -> Self {
        PageCacheConfig {
            memory_bytes: 1 << 30,
            dirty: DirtyLimit::Percent(20),
            dirty_background: DirtyLimit::Percent(10),
            dirty_expire: Duration::from_ms(30_000),
            writeback_interval: Duration::from_ms(5_000),
            writeback_io_bytes: 1 << 20,
            chunk_bytes: 0,
            mode: WritebackMode::Async,
            // measured: fio `rw=write direct=0 ioengine=psync size=1g` into
            // tmpfs on a 2-vCPU Xeon VM (2026-11-28), 3 runs per size: mean
            // clat 1.09 µs at 4 KiB and 53.2 µs at 256 KiB, a line of
            // 297 ns + 4.92 GB/s (docs/writeback.md)
            syscall_ns: 300,
            copy_bytes_per_s: 4_920_000_000,
            cache_reads: true,
            drain_at_end: false,
            series: true,
            hz: 1000,
            tick_phase_ns: 0,
            trace: false,
            large_folios: false,
            memory_max: Vec::new(),
            memcg_stats_ratelimited: true,
            wb_thresh_floor: dirty::WbThreshFloor::CalcThresh,
            memcg_flush_phase_ns: 0,
            io_stat_read_every_ns: 0,
            io_stat_read_phase_ns: 0,
            io_stat_flushes_memcg: false,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PageState {
    Clean,
    Dirty,
    Writeback,
    /// Under writeback and dirtied again: dirty once the IO completes.
    WritebackDirty,
}

#[derive(Clone, Copy, Debug)]
struct Page {
    inode: u32,
    state: PageState,
    /// It has a place in `clean_fifo` (the first time it became clean
    /// since it entered the cache or since eviction passed it over).
    in_fifo: bool,
}

struct Inode {
    wb: usize,
    dirty: pageset::SortedPageSet,
    /// When the inode went from clean to dirty (`dirtied_when`).
    dirtied_when: Option<Instant>,
    writeback_pages: u64,
    /// `writeback_index`: where the next writeback pass starts.
    cursor: u64,
    /// fsync in progress: write every dirty page at the next poll.
    sync_all: bool,
    in_b_dirty: bool,
    /// A writeback of this inode failed with this errno since the last
    /// fsync reported one (`mapping_set_error`; 0 = none).
    wb_err: i32,
}

/// A writeback domain (`bdi_writeback`): one per owner group.
struct Wb {
    group: GroupId,
    dirty_pages: u64,
    writeback_pages: u64,
    /// Inodes with dirty pages, oldest first (`b_dirty`).
    b_dirty: VecDeque<usize>,
    /// Bandwidth, rate limits and completions ([`dirty`]).
    st: dirty::WbState,
    /// Its clean pages, and their places in the eviction order.
    clean_pages: u64,
    clean_fifo: VecDeque<(u64, u64)>,
    /// The group's `memory.max` in pages (None: `max`).
    max_pages: Option<u64>,
    /// Its memory cgroup's statistics as last flushed: (file pages, dirty
    /// pages, pages under writeback).
    memcg_stat: (u64, u64, u64),
    /// It submitted writeback in the current poll.
    flushed: bool,
}

/// A buffered write in progress ([`PageCache::start_write`]).
#[derive(Clone, Copy, Debug)]
struct BufferedWrite {
    inode: usize,
    /// The next page to dirty and the end of the write's pages.
    next: u64,
    end: u64,
    /// Copy time per page (ns).
    page_ns: u64,
    /// Pages being copied now (dirtied at the next step).
    chunk: u64,
    /// Asleep in `balance_dirty_pages`: (pages it was called with, pass
    /// again on waking: the hard-limit loop, the jiffy the loop began).
    sleeping: Option<(u64, bool, u64)>,
}

/// One writeback IO for the driver to submit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WritebackIo {
    /// The group the IO is charged to: the inode's owner (the root group
    /// in [`WritebackMode::Root`]).
    pub group: GroupId,
    /// Device byte offset.
    pub offset: u64,
    /// Length in bytes.
    pub len: u64,
    /// A sync's writeback (`WB_SYNC_ALL`: `REQ_SYNC`), not the flusher's
    /// background or periodic writeback (`REQ_BACKGROUND`).
    pub sync: bool,
}

/// Per task statistics (what io-throttle exported per task).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskStats {
    /// Bytes the task's buffered writes dirtied.
    pub dirtied_bytes: u64,
    /// `balance_dirty_pages` pauses the task took (pauses of 0 ns are not
    /// counted).
    pub pauses: u64,
    /// Sum of those pauses in ns.
    pub pause_ns_total: u64,
    /// Longest single pause in ns.
    pub pause_ns_max: u64,
    /// fsyncs the task completed (writeback waited for and flush done).
    pub fsyncs: u64,
    /// Sum of their durations in ns, from entering fsync to its flush's
    /// completion.
    pub fsync_ns_total: u64,
    /// Pages of the task's files still dirty or under writeback at the end.
    pub dirty_pages_end: u64,
}

/// One second of the writeback time series.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SecondSample {
    /// Bytes of writes the device completed in this second (all writes).
    pub device_write_bytes: u64,
    /// Writeback bytes completed per owner group (group index → bytes).
    pub writeback_bytes: Vec<(GroupId, u64)>,
    /// Dirty and writeback pages at the end of the second.
    pub dirty_pages: u64,
    /// Pages under writeback at the end of the second.
    pub writeback_pages: u64,
}

/// What a run's page cache reports.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PageCacheReport {
    /// The writeback dispatch mode's name ([`WritebackMode::name`]).
    pub mode: &'static str,
    /// The dirty threshold in pages (`thresh` of `domain_dirty_limits`),
    /// at least 1.
    pub thresh_pages: u64,
    /// The background writeback threshold in pages (`bg_thresh`), kept
    /// below `thresh_pages` as the kernel does.
    pub bg_thresh_pages: u64,
    /// One sample per second (empty when not kept: [`PageCacheConfig::series`]).
    pub series: Series,
    /// Indexed by job slot.
    pub tasks: Vec<TaskStats>,
    /// Bytes dirtied per owner group (sorted by group).
    pub dirtied_bytes: Vec<(GroupId, u64)>,
    /// Bytes whose writeback completed without error, per owner group
    /// (sorted by group).
    pub written_back_bytes: Vec<(GroupId, u64)>,
    /// Pages written back more than once without being dirtied in between
    /// (must be 0).
    pub double_writebacks: u64,
}

/// The page cache and writeback of one device (module docs): buffered
/// jobs dirty pages through it, it throttles them as `balance_dirty_pages`
/// does, and its flushers produce the [`WritebackIo`]s the driver submits.
pub struct PageCache {
    cfg: PageCacheConfig,
    t0: Instant,
    thresh: u64,
    bg_thresh: u64,
    pages: HashMap<u64, Page>,
    /// Pages in the order they first became clean, per wb, numbered
    /// from `clean_seq`: the eviction order is the numbering's (see
    /// `evict`), a memory cgroup's reclaim takes its own wb's first.
    clean_seq: u64,
    nr_clean: u64,
    nr_dirty: u64,
    nr_writeback: u64,
    inodes: Vec<Inode>,
    inode_by_key: HashMap<u64, usize>,
    wbs: Vec<Wb>,
    wb_by_group: HashMap<GroupId, usize>,
    next_periodic: Instant,
    /// Round-robin position over wbs for background writeback.
    rr: usize,
    /// `sync` mode: the shared flusher waits for its last IO to pass the
    /// controllers.
    flusher_blocked: bool,
    /// An fsync asked for its inode's writeback: poll at once.
    sync_pending: bool,
    /// A periodic (kupdate) pass is due or unfinished.
    kupdate_due: bool,
    /// `sync`: (wb, inode, bytes left) of the chunk being written.
    sync_chunk: Option<(usize, usize, u64)>,
    /// `async`, `root`: the flushers ([`flusher`]), and whether one was
    /// woken since the driver last asked.
    flushers: Vec<flusher::Flusher>,
    flusher_kick: bool,
    tasks: Vec<TaskStats>,
    series: Series,
    dirtied_by_group: HashMap<GroupId, u64>,
    written_by_group: HashMap<GroupId, u64>,
    /// Pages whose writeback completed and that were not dirtied since.
    written_clean: pageset::PageSet,
    double_writebacks: u64,
    hz: dirty::Hz,
    /// The global writeback domain (`global_wb_domain`).
    global: dirty::Domain,
    /// Per task: its dirty throttle state and its write in progress.
    throttle: Vec<dirty::TaskState>,
    writes: Vec<Option<BufferedWrite>>,
    /// The jiffy of the current poll (writeback-side bandwidth updates).
    poll_j: u64,
    /// Tracepoint records not yet drained ([`PageCacheConfig::trace`]).
    trace: Vec<Box<dyn blkqos_core::controller::TraceRecord>>,
    /// Pauses taken since the last [`PageCache::take_dirty_sleeps`]: the
    /// sleeping task's group and when it went to sleep.
    dirty_sleeps: Vec<(GroupId, Instant)>,
    /// When the periodic memcg statistics flush runs next, and the page
    /// state changes of memory cgroups since the last flush.
    next_memcg_flush: Instant,
    memcg_pending: u64,
    /// When a read of `io.stat` flushes the memcg statistics next
    /// ([`PageCacheConfig::io_stat_flushes_memcg`]).
    next_io_stat_read: Option<Instant>,
}

impl PageCache {
    /// An empty (all clean) cache configured by `cfg`, for a run starting
    /// at `t0` with `nr_tasks` jobs (the task slots of
    /// [`PageCacheReport::tasks`]). Thresholds are computed here as
    /// `domain_dirty_limits` does.
    pub fn new(cfg: PageCacheConfig, t0: Instant, nr_tasks: usize) -> Self {
        let thresh = cfg.dirty.pages(cfg.memory_bytes).max(1);
        // the kernel keeps bg_thresh below thresh (`domain_dirty_limits`)
        let bg_thresh = match cfg.dirty_background.pages(cfg.memory_bytes) {
            bg if bg >= thresh => thresh / 2,
            bg => bg,
        };
        let hz = dirty::Hz(if cfg.hz == 0 { 1000 } else { cfg.hz });
        let j0 = (t0.0 + cfg.tick_phase_ns) / (1_000_000_000 / hz.0);
        PageCache {
            hz,
            global: dirty::Domain::global(thresh, j0),
            throttle: vec![dirty::TaskState::default(); nr_tasks],
            writes: vec![None; nr_tasks],
            poll_j: j0,
            trace: Vec::new(),
            dirty_sleeps: Vec::new(),
            next_memcg_flush: t0
                + Duration(2_000_000_000 - cfg.memcg_flush_phase_ns % 2_000_000_000),
            memcg_pending: 0,
            next_io_stat_read: (cfg.io_stat_flushes_memcg && cfg.io_stat_read_every_ns > 0)
                .then(|| t0 + Duration(cfg.io_stat_read_phase_ns % cfg.io_stat_read_every_ns)),
            next_periodic: t0 + cfg.writeback_interval,
            cfg,
            t0,
            thresh,
            bg_thresh,
            pages: HashMap::default(),
            clean_seq: 0,
            nr_clean: 0,
            nr_dirty: 0,
            nr_writeback: 0,
            inodes: Vec::new(),
            inode_by_key: HashMap::default(),
            wbs: Vec::new(),
            wb_by_group: HashMap::default(),
            rr: 0,
            flusher_blocked: false,
            sync_pending: false,
            kupdate_due: false,
            sync_chunk: None,
            flushers: Vec::new(),
            flusher_kick: false,
            tasks: vec![TaskStats::default(); nr_tasks],
            series: Series::default(),
            dirtied_by_group: HashMap::default(),
            written_by_group: HashMap::default(),
            written_clean: pageset::PageSet::default(),
            double_writebacks: 0,
        }
    }

    /// The writeback dispatch mode.
    pub fn mode(&self) -> WritebackMode {
        self.cfg.mode
    }

    /// CPU time of a cached read or write of `bytes`.
    pub fn copy_time(&self, bytes: u64) -> Duration {
        self.cfg.copy_time(bytes)
    }

    /// The inode of a file (keyed by its region start), owned by `group`
    /// from its first use on.
    pub fn inode(&mut self, key: u64, group: GroupId) -> usize {
        if let Some(&i) = self.inode_by_key.get(&key) {
            return i;
        }
        let wb = self.wb_of(group);
        self.inodes.push(Inode {
            wb,
            dirty: pageset::SortedPageSet::default(),
            dirtied_when: None,
            writeback_pages: 0,
            cursor: 0,
            sync_all: false,
            in_b_dirty: false,
            wb_err: 0,
        });
        let i = self.inodes.len() - 1;
        self.inode_by_key.insert(key, i);
        i
    }

    fn wb_of(&mut self, group: GroupId) -> usize {
        if let Some(&w) = self.wb_by_group.get(&group) {
            return w;
        }
        self.wbs.push(Wb {
            group,
            dirty_pages: 0,
            writeback_pages: 0,
            b_dirty: VecDeque::new(),
            st: dirty::WbState::new(self.jiffies(self.t0), group != GroupId::ROOT),
            flushed: false,
            clean_pages: 0,
            clean_fifo: VecDeque::new(),
            memcg_stat: (0, 0, 0),
            max_pages: self
                .cfg
                .memory_max
                .iter()
                .find(|(g, _)| *g == group)
                .map(|&(_, b)| b / PAGE_BYTES),
        });
        self.wb_by_group.insert(group, self.wbs.len() - 1);
        self.wbs.len() - 1
    }

    fn pages_of(offset: u64, len: u64) -> std::ops::Range<u64> {
        offset / PAGE_BYTES..(offset + len).div_ceil(PAGE_BYTES)
    }

    /// Are all pages of `[offset, offset+len)` in the cache?
    pub fn read_hit(&self, offset: u64, len: u64) -> bool {
        self.cfg.cache_reads && Self::pages_of(offset, len).all(|p| self.pages.contains_key(&p))
    }

    /// Drop the clean pages of `inode` (`posix_fadvise(POSIX_FADV_DONTNEED)`
    /// after an fsync, as fio's `file_invalidate_cache` does before a verify
    /// read-back): later reads of them go to the device. Dirty pages and
    /// pages under writeback stay. Returns how many pages went.
    pub fn drop_clean(&mut self, inode: usize) -> u64 {
        let before = self.pages.len();
        self.pages
            .retain(|_, pg| !(pg.inode as usize == inode && pg.state == PageState::Clean));
        let dropped = (before - self.pages.len()) as u64;
        if dropped > 0 {
            self.nr_clean -= dropped;
            let wb = self.inodes[inode].wb;
            let pages = &self.pages;
            let w = &mut self.wbs[wb];
            w.clean_pages -= dropped;
            w.clean_fifo.retain(|(_, p)| pages.contains_key(p));
        }
        dropped
    }

    /// A device read of `[offset, offset+len)` completed: cache it clean.
    pub fn insert_clean(&mut self, inode: usize, offset: u64, len: u64) {
        for p in Self::pages_of(offset, len) {
            if let std::collections::hash_map::Entry::Vacant(e) = self.pages.entry(p) {
                e.insert(Page {
                    inode: inode as u32,
                    state: PageState::Clean,
                    in_fifo: true,
                });
                self.nr_clean += 1;
                let wb = self.inodes[inode].wb;
                self.wbs[wb].clean_pages += 1;
                self.push_clean(wb, p);
                self.charge(wb);
            }
        }
        self.evict();
    }

    /// Page `p` of wb `wb` takes its place in the eviction order.
    fn push_clean(&mut self, wb: usize, p: u64) {
        self.wbs[wb].clean_fifo.push_back((self.clean_seq, p));
        self.clean_seq += 1;
    }

    /// The wb's memory cgroup charged a page: over its `memory.max`, it
    /// reclaims its own clean pages, oldest first (`try_charge` →
    /// `try_to_free_mem_cgroup_pages`; dirty and writeback pages stay).
    /// Reclaim flushes the memcg's statistics when enough updates are
    /// pending (`mem_cgroup_flush_stats`: more than `MEMCG_CHARGE_BATCH`
    /// per CPU, two CPUs).
    fn charge(&mut self, wb: usize) {
        let Some(max) = self.wbs[wb].max_pages else {
            return;
        };
        if self.memcg_pages(wb) > max && self.memcg_pending > MEMCG_FLUSH_UPDATES {
            self.flush_memcg_stats();
        }
        while self.memcg_pages(wb) > max {
            if !self.evict_one(wb) {
                return;
            }
        }
    }

    /// `do_flush_stats`: every memory cgroup's statistics become current.
    fn flush_memcg_stats(&mut self) {
        for w in &mut self.wbs {
            w.memcg_stat = (
                w.clean_pages + w.dirty_pages + w.writeback_pages,
                w.dirty_pages,
                w.writeback_pages,
            );
        }
        self.memcg_pending = 0;
    }

    /// The periodic flusher (`flush_memcg_stats_dwork`, every
    /// `FLUSH_TIME`, 2 s) ran at every multiple of it up to `now`.
    fn periodic_memcg_flush(&mut self, now: Instant) {
        if now >= self.next_memcg_flush {
            self.flush_memcg_stats();
            while self.next_memcg_flush <= now {
                self.next_memcg_flush += Duration::from_ms(2000);
            }
        }
        // a monitor's io.stat read (`blkcg_print_stat` →
        // `cgroup_rstat_flush` of the whole cgroup, before 6.16)
        if let Some(t) = self.next_io_stat_read.filter(|&t| now >= t) {
            self.flush_memcg_stats();
            let every = Duration(self.cfg.io_stat_read_every_ns);
            let mut next = t;
            while next <= now {
                next += every;
            }
            self.next_io_stat_read = Some(next);
        }
    }

    /// The pages a wb's memory cgroup holds in the cache.
    fn memcg_pages(&self, wb: usize) -> u64 {
        let w = &self.wbs[wb];
        w.clean_pages + w.dirty_pages + w.writeback_pages
    }

    /// Drop the first clean page of wb `w`'s eviction order; false when it
    /// has none (a page found dirty or under writeback loses its place).
    fn evict_one(&mut self, w: usize) -> bool {
        loop {
            match self.pop_clean(w) {
                Some(true) => return true,
                Some(false) => continue,
                None => return false,
            }
        }
    }

    /// Take the first place of wb `w`'s eviction order: Some(true) when
    /// its page was clean and is dropped, Some(false) when the page is
    /// gone or dirty (it loses its place), None when `w` has no place.
    fn pop_clean(&mut self, w: usize) -> Option<bool> {
        let (_, p) = self.wbs[w].clean_fifo.pop_front()?;
        let Some(pg) = self.pages.get_mut(&p) else {
            return Some(false);
        };
        if pg.state != PageState::Clean {
            pg.in_fifo = false;
            return Some(false);
        }
        self.pages.remove(&p);
        self.nr_clean -= 1;
        self.wbs[w].clean_pages -= 1;
        Some(true)
    }

    /// Drop clean pages, oldest first, while the cache exceeds memory.
    ///
    /// A page has one place in the FIFO, taken the first time it became
    /// clean; writing it again and cleaning it keeps that place. A page
    /// found dirty or under writeback when its place comes up loses it and
    /// takes a new one when it is clean again. (Before, every time a page
    /// became clean added an entry: the FIFO grew by one entry per 4 KiB
    /// written back in a cache that never fills, 720 MB an hour at
    /// 100 MB/s; now it holds at most one entry per cached page.)
    fn evict(&mut self) {
        let limit = self.cfg.memory_bytes / PAGE_BYTES;
        while self.nr_clean + self.nr_dirty + self.nr_writeback > limit {
            // the wb whose first place is the oldest
            let oldest = (0..self.wbs.len())
                .filter_map(|w| self.wbs[w].clean_fifo.front().map(|&(seq, _)| (seq, w)))
                .min();
            let Some((_, w)) = oldest else {
                return;
            };
            self.pop_clean(w);
        }
    }

    /// The jiffies counter at `now` (the run's tick phase applied).
    fn jiffies(&self, now: Instant) -> u64 {
        (now.0 + self.cfg.tick_phase_ns) / (1_000_000_000 / self.hz.0)
    }

    /// The instant jiffy `j` begins.
    fn instant_of(&self, j: u64) -> Instant {
        Instant((j * (1_000_000_000 / self.hz.0)).saturating_sub(self.cfg.tick_phase_ns))
    }

    /// Task `task` starts a buffered write of `[offset, offset+len)` of
    /// `inode`; its copy starts at `start`. The write goes page by page
    /// as `generic_perform_write` does: copy, dirty, and every
    /// `nr_dirtied_pause` pages a call into `balance_dirty_pages`, which
    /// may sleep. Returns when the page cache next acts on it: call
    /// [`PageCache::step_write`] then.
    pub fn start_write(
        &mut self,
        task: usize,
        inode: usize,
        offset: u64,
        len: u64,
        start: Instant,
    ) -> Instant {
        let pages = Self::pages_of(offset, len);
        let npages = (pages.end - pages.start).max(1);
        let copy_ns = self.cfg.copy_time(len).as_ns() - self.cfg.syscall_ns;
        let w = BufferedWrite {
            inode,
            next: pages.start,
            end: pages.end,
            page_ns: copy_ns / npages,
            chunk: 0,
            sleeping: None,
        };
        self.grow_tasks(task);
        self.writes[task] = Some(w);
        let first = self.next_chunk(task, start + Duration(self.cfg.syscall_ns));
        first.unwrap_or(start)
    }

    fn grow_tasks(&mut self, task: usize) {
        if self.writes.len() <= task {
            self.writes.resize(task + 1, None);
            self.throttle.resize(task + 1, dirty::TaskState::default());
        }
        if self.tasks.len() <= task {
            self.tasks.resize(task + 1, TaskStats::default());
        }
    }

    /// The write of `task` goes on at `now` (the time
    /// [`PageCache::start_write`] or the last step returned): the pages
    /// copied since are dirtied, and the task may be paused. Returns the
    /// next time to call, or None when the write is done (at `now`).
    pub fn step_write(&mut self, task: usize, now: Instant) -> Option<Instant> {
        let w = self.writes.get_mut(task)?.as_mut()?;
        if let Some((pages_dirtied, again, start_j)) = w.sleeping.take() {
            if again {
                if let Some(t) = self.balance(task, pages_dirtied, start_j, now) {
                    return Some(t);
                }
            }
            return self.next_chunk(task, now);
        }
        let (inode, first, n) = (w.inode, w.next, w.chunk);
        w.next += n;
        let wb = self.inodes[inode].wb;
        let group = self.wbs[wb].group;
        for p in first..first + n {
            self.dirty_page(inode, p, now);
        }
        *self.dirtied_by_group.entry(group).or_default() += n * PAGE_BYTES;
        self.tasks[task].dirtied_bytes += n * PAGE_BYTES;
        self.wbs[wb].st.dirtied += n;
        let t = &mut self.throttle[task];
        t.nr_dirtied += n;
        if t.nr_dirtied >= t.ratelimit(self.wbs[wb].st.dirty_exceeded) {
            let pages_dirtied = t.nr_dirtied;
            let start_j = self.jiffies(now);
            if let Some(t) = self.balance(task, pages_dirtied, start_j, now) {
                return Some(t);
            }
        }
        self.next_chunk(task, now)
    }

    /// The next run of pages of `task`'s write to copy from `now`: up to
    /// its next call into `balance_dirty_pages`. None when all are done.
    fn next_chunk(&mut self, task: usize, now: Instant) -> Option<Instant> {
        let w = self.writes[task].as_ref()?;
        if w.next >= w.end {
            self.writes[task] = None;
            return None;
        }
        let wb = self.inodes[w.inode].wb;
        let t = &self.throttle[task];
        let left = t
            .ratelimit(self.wbs[wb].st.dirty_exceeded)
            .saturating_sub(t.nr_dirtied);
        let mut n = left.clamp(1, w.end - w.next);
        if self.cfg.large_folios {
            // generic_perform_write calls in after each folio: whole folios
            // (the largest aligned power of two left, at most 512 pages)
            let mut p = w.next;
            while p - w.next < n {
                let mut folio = 512u64;
                while folio > 1 && (p % folio != 0 || p + folio > w.end) {
                    folio /= 2;
                }
                p += folio;
            }
            n = p - w.next;
        }
        let at = now + Duration(n * w.page_ns);
        if let Some(w) = self.writes[task].as_mut() {
            w.chunk = n;
        }
        Some(at)
    }

    /// One pass of `balance_dirty_pages` for `task` at `now`
    /// ([`dirty::balance_pass`]), its loop started at jiffy `start_j`: the
    /// instant its sleep ends, if it sleeps.
    fn balance(
        &mut self,
        task: usize,
        pages_dirtied: u64,
        start_j: u64,
        now: Instant,
    ) -> Option<Instant> {
        let inode = self.writes[task].as_ref()?.inode;
        let wb = self.inodes[inode].wb;
        self.periodic_memcg_flush(now);
        if !self.cfg.memcg_stats_ratelimited && self.memcg_pending > MEMCG_FLUSH_UPDATES {
            // mem_cgroup_wb_stats → mem_cgroup_flush_stats (before 6.8)
            self.flush_memcg_stats();
        }
        let counts = self.counts(wb);
        let j = self.jiffies(now);
        let hz = self.hz;
        let before = self.throttle[task];
        let pass = dirty::balance_pass(
            &mut self.throttle[task],
            &mut self.wbs[wb].st,
            &mut self.global,
            &counts,
            pages_dirtied,
            j,
            hz,
        );
        if self.cfg.trace {
            self.record_pass(&pass, &before, wb, pages_dirtied, j - start_j, now);
        }
        self.wake_from_balance(wb, pass.freerun);
        match pass.decision {
            dirty::Decision::Proceed => None,
            dirty::Decision::Sleep { pause, again } => {
                // io_schedule_timeout: a timer_list timer
                let wake = blkqos_core::time::timer_wheel_expiry(
                    blkqos_core::Jiffies(j + pause),
                    blkqos_core::Jiffies(j),
                );
                let at = self.instant_of(wake.0).max(now);
                self.note_pause(task, at - now);
                // wb->dirty_sleep, bdi->last_bdp_sleep
                self.dirty_sleeps.push((self.wbs[wb].group, now));
                if let Some(w) = self.writes[task].as_mut() {
                    w.sleeping = Some((pages_dirtied, again, start_j));
                }
                Some(at)
            }
        }
    }

    /// Keep a pass's tracepoints (`balance_dirty_pages` when it
    /// throttled, `bdi_dirty_ratelimit` per update) for the run's trace.
    fn record_pass(
        &mut self,
        pass: &dirty::Pass,
        before: &dirty::TaskState,
        wb: usize,
        pages_dirtied: u64,
        paused: u64,
        now: Instant,
    ) {
        let j = self.jiffies(now) as i64;
        let group = self.wbs[wb].group.0;
        for u in &pass.updates {
            self.trace.push(Box::new(dirty::RatelimitEvent {
                at: now,
                u: *u,
                group,
            }));
        }
        if let Some(t) = pass.throttled {
            self.trace.push(Box::new(dirty::BdpEvent {
                at: now,
                t,
                global_limit: self.global.dirty_limit(),
                dirtied: pages_dirtied,
                dirtied_pause: before.nr_dirtied_pause,
                paused,
                think: before.dirty_paused_when.map_or(0, |w| j - w),
                group,
                hz: self.hz.0,
            }));
        }
    }

    /// Move the tracepoint records kept since the last call to `out`.
    pub fn drain_trace(&mut self, out: &mut Vec<Box<dyn blkqos_core::controller::TraceRecord>>) {
        out.append(&mut self.trace);
    }

    /// Wb `w`'s memory cgroup (one under a `memory.max`) is over its
    /// background threshold (`wb_over_bg_thresh`'s memcg domain, writeback
    /// excluded): its dirty pages as last flushed, or the wb's own dirty
    /// pages (an exact per-wb counter) against its share of it.
    fn memcg_over_bg(&mut self, w: usize) -> bool {
        let Some(dom) = self.wbs[w].max_pages.and(self.wbs[w].st.memcg.as_ref()) else {
            return false;
        };
        let mut c = self.counts(w);
        c.dirty = self.nr_dirty;
        c.memcg_dirty = self.wbs[w].memcg_stat.1;
        c.wb_dirty = self.wbs[w].dirty_pages;
        let g = dirty::Dtc::global(&c, &self.global);
        let m = dirty::Dtc::memcg(&c, &g, dom);
        if m.dirty > m.bg_thresh {
            return true;
        }
        let share = dirty::wb_share(
            &mut self.wbs[w].st,
            &mut self.global,
            true,
            (m.bg_thresh, m.dirty, self.cfg.wb_thresh_floor),
            self.poll_j,
            self.hz,
        );
        self.wbs[w].dirty_pages > share
    }

    /// The page counts `balance_dirty_pages` reads for `wb`.
    fn counts(&self, wb: usize) -> dirty::Counts {
        let (dirty_bytes, dirty_ratio) = match self.cfg.dirty {
            DirtyLimit::Bytes(b) => (b, 0),
            DirtyLimit::Percent(p) => (0, u64::from(p)),
        };
        let (bg_bytes, bg_ratio) = match self.cfg.dirty_background {
            DirtyLimit::Bytes(b) => (b, 0),
            DirtyLimit::Percent(p) => (0, u64::from(p)),
        };
        let w = &self.wbs[wb];
        dirty::Counts {
            avail: self.cfg.memory_bytes / PAGE_BYTES,
            dirty: self.nr_dirty + self.nr_writeback,
            thresh: self.thresh,
            bg_thresh: self.bg_thresh,
            dirty_bytes,
            bg_bytes,
            dirty_ratio,
            bg_ratio,
            wb_dirty: w.dirty_pages + w.writeback_pages,
            memcg_filepages: w.memcg_stat.0,
            memcg_dirty: w.memcg_stat.1 + w.memcg_stat.2,
            // the page counter itself is exact
            memcg_headroom: w
                .max_pages
                .map_or(u64::MAX, |max| max.saturating_sub(self.memcg_pages(wb))),
            floor: self.cfg.wb_thresh_floor,
        }
    }

    /// Dirty `[offset, offset+len)` of `inode` at once, with no throttle
    /// (tests of the writeback side).
    #[cfg(test)]
    pub fn dirty_now(&mut self, task: usize, inode: usize, offset: u64, len: u64, now: Instant) {
        self.grow_tasks(task);
        let wb = self.inodes[inode].wb;
        for p in Self::pages_of(offset, len) {
            self.dirty_page(inode, p, now);
        }
        *self.dirtied_by_group.entry(self.wbs[wb].group).or_default() += len;
        self.tasks[task].dirtied_bytes += len;
        // the writer's next `balance_dirty_pages` call wakes the flusher
        self.wake_from_balance(wb, true);
    }

    fn note_pause(&mut self, task: usize, pause: Duration) {
        if let Some(t) = self.tasks.get_mut(task) {
            t.pauses += 1;
            t.pause_ns_total += pause.as_ns();
            t.pause_ns_max = t.pause_ns_max.max(pause.as_ns());
        }
    }

    /// Page `p` of `inode` (wb `wb`) became dirty: count it, and queue the
    /// inode on its wb's dirty list (`__mark_inode_dirty`).
    fn count_dirty(&mut self, inode: usize, wb: usize, p: u64, now: Instant) {
        self.nr_dirty += 1;
        self.memcg_pending += u64::from(self.wbs[wb].st.memcg.is_some());
        self.wbs[wb].dirty_pages += 1;
        let ino = &mut self.inodes[inode];
        ino.dirty.insert(p);
        if ino.dirtied_when.is_none() {
            ino.dirtied_when = Some(now);
        }
        if !ino.in_b_dirty {
            ino.in_b_dirty = true;
            self.wbs[wb].b_dirty.push_back(inode);
        }
    }

    fn dirty_page(&mut self, inode: usize, p: u64, now: Instant) {
        let wb = self.inodes[inode].wb;
        self.written_clean.remove(p);
        let mut allocated = false;
        let newly_dirty = match self.pages.get_mut(&p) {
            None => {
                self.pages.insert(
                    p,
                    Page {
                        inode: inode as u32,
                        state: PageState::Dirty,
                        in_fifo: false,
                    },
                );
                allocated = true;
                true
            }
            Some(pg) => match pg.state {
                PageState::Clean => {
                    let old_wb = self.inodes[pg.inode as usize].wb;
                    pg.state = PageState::Dirty;
                    pg.inode = inode as u32;
                    self.nr_clean -= 1;
                    self.wbs[old_wb].clean_pages -= 1;
                    true
                }
                PageState::Writeback => {
                    pg.state = PageState::WritebackDirty;
                    false
                }
                PageState::Dirty | PageState::WritebackDirty => false,
            },
        };
        if newly_dirty {
            self.count_dirty(inode, wb, p, now);
        }
        if allocated {
            self.charge(wb);
        }
    }

    /// Start an fsync of `inode`: every dirty page goes to writeback at the
    /// next poll. True when the inode is already clean.
    pub fn fsync(&mut self, inode: usize) -> bool {
        let ino = &mut self.inodes[inode];
        if ino.dirty.is_empty() && ino.writeback_pages == 0 {
            return true;
        }
        ino.sync_all = true;
        self.sync_pending = true;
        false
    }

    /// Is `inode` clean (nothing dirty, nothing under writeback)?
    pub fn inode_clean(&self, inode: usize) -> bool {
        let ino = &self.inodes[inode];
        ino.dirty.is_empty() && ino.writeback_pages == 0
    }

    /// Task `task` finished an fsync that `took` long (entry to flush
    /// completion): counted in its [`TaskStats`].
    pub fn note_fsync(&mut self, task: usize, took: Duration) {
        if let Some(t) = self.tasks.get_mut(task) {
            t.fsyncs += 1;
            t.fsync_ns_total += took.as_ns();
        }
    }

    /// `sync` mode: the flusher's last IO passed the controllers.
    pub fn writeback_dispatched(&mut self) {
        self.flusher_blocked = false;
    }

    /// When the page cache next needs to act without an IO event.
    pub fn next_deadline(&self) -> Option<Instant> {
        if self.sync_pending || self.flusher_kick {
            // due now (the caller clamps to its clock)
            return Some(Instant(0));
        }
        let periodic = (self.nr_dirty > 0).then_some(self.next_periodic);
        // the memcg statistics flush, while some memcg has pages
        let memcg = self
            .wbs
            .iter()
            .any(|w| w.st.memcg.is_some() && (w.dirty_pages + w.writeback_pages) > 0)
            .then(|| {
                self.next_io_stat_read
                    .map_or(self.next_memcg_flush, |t| t.min(self.next_memcg_flush))
            });
        periodic.into_iter().chain(memcg).min()
    }

    /// Generate the writeback IO due at `now` (fsyncs, background,
    /// periodic) into `out`.
    pub fn poll(&mut self, now: Instant, out: &mut Vec<WritebackIo>) {
        self.poll_j = self.jiffies(now);
        self.periodic_memcg_flush(now);
        self.poll_writeback(now, out);
        // do_writepages: a wb that submitted writeback updates its
        // bandwidth estimate when the last one is older than the interval
        for w in &mut self.wbs {
            if std::mem::take(&mut w.flushed) && dirty::bandwidth_due(&w.st, self.poll_j, self.hz) {
                dirty::update_bandwidth(&mut w.st, &mut self.global, None, self.poll_j, self.hz);
            }
        }
    }

    fn poll_writeback(&mut self, now: Instant, out: &mut Vec<WritebackIo>) {
        // fsync: the caller writes its inode's pages itself, never blocked
        self.sync_pending = false;
        for i in 0..self.inodes.len() {
            if self.inodes[i].sync_all {
                self.inodes[i].sync_all = false;
                let before = out.len();
                while self.write_some(i, u64::MAX, out) {}
                for w in &mut out[before..] {
                    w.sync = true;
                }
            }
        }
        if now >= self.next_periodic {
            self.kupdate_due = true;
            while self.next_periodic <= now {
                self.next_periodic += self.cfg.writeback_interval;
            }
        }
        if self.lazy_flushers() {
            // the flushers form their bios when the driver asks
            if std::mem::take(&mut self.kupdate_due) {
                self.wake_periodic(now);
            }
            return;
        }
        if self.flusher_blocked {
            return;
        }
        let one_at_a_time = self.cfg.mode == WritebackMode::Sync;
        let periodic = std::mem::take(&mut self.kupdate_due);
        // background writeback: while dirty (not under writeback) > bg
        while self.nr_dirty > self.bg_thresh {
            if !self.flush_round(out, None, one_at_a_time) {
                break;
            }
            if one_at_a_time && !out.is_empty() {
                self.flusher_blocked = true;
                return;
            }
        }
        // and for a wb whose memory cgroup is over its own background
        // threshold (wb_over_bg_thresh's memcg domain)
        for w in 0..self.wbs.len() {
            while self.memcg_over_bg(w) {
                if !self.flush_wb(w, out, None, one_at_a_time) {
                    break;
                }
                if one_at_a_time && !out.is_empty() {
                    self.flusher_blocked = true;
                    return;
                }
            }
        }
        // periodic writeback of expired inodes
        if periodic && now.0 >= self.t0.0 + self.cfg.dirty_expire.as_ns() {
            let expired_before = now.0 - self.cfg.dirty_expire.as_ns();
            while self.flush_round(out, Some(Instant(expired_before)), one_at_a_time) {
                if one_at_a_time && !out.is_empty() {
                    // the rest of this kupdate pass after the IO passes
                    self.kupdate_due = true;
                    self.flusher_blocked = true;
                    return;
                }
            }
        }
    }

    /// One turn over the wbs (round robin from `rr`): the first wb with an
    /// eligible inode writes a chunk of it (or one IO when
    /// `one_at_a_time`). False if nothing was eligible.
    fn flush_round(
        &mut self,
        out: &mut Vec<WritebackIo>,
        expired_before: Option<Instant>,
        one_at_a_time: bool,
    ) -> bool {
        // `sync`: the flusher is in the middle of an inode's chunk
        if let Some((w, inode, left)) = self.sync_chunk.take() {
            if left > 0 && !self.inodes[inode].dirty.is_empty() {
                let before = out.len();
                self.write_some(inode, left, out);
                let wrote: u64 = out[before..].iter().map(|io| io.len).sum();
                let left = left.saturating_sub(wrote);
                if left > 0 && !self.inodes[inode].dirty.is_empty() {
                    self.sync_chunk = Some((w, inode, left));
                } else {
                    self.end_chunk(w, inode);
                }
                return true;
            }
            self.end_chunk(w, inode);
        }
        let n = self.wbs.len();
        (0..n).any(|k| self.flush_wb((self.rr + k) % n, out, expired_before, one_at_a_time))
    }

    /// Wb `w` writes a chunk of its first eligible inode (or one IO when
    /// `one_at_a_time`); false if it has none.
    fn flush_wb(
        &mut self,
        w: usize,
        out: &mut Vec<WritebackIo>,
        expired_before: Option<Instant>,
        one_at_a_time: bool,
    ) -> bool {
        {
            let Some(&inode) = self.wbs[w].b_dirty.front() else {
                return false;
            };
            if let Some(t) = expired_before {
                if self.inodes[inode].dirtied_when.is_none_or(|d| d > t) {
                    return false;
                }
            }
            let mut left = self.chunk_bytes(w);
            while left > 0 {
                let before = out.len();
                if !self.write_some(inode, left, out) {
                    break;
                }
                let wrote: u64 = out[before..].iter().map(|io| io.len).sum();
                left = left.saturating_sub(wrote);
                if one_at_a_time {
                    // one IO now, the rest of the chunk after it passes
                    if left > 0 && !self.inodes[inode].dirty.is_empty() {
                        self.sync_chunk = Some((w, inode, left));
                        return true;
                    }
                    break;
                }
            }
            self.end_chunk(w, inode);
            true
        }
    }

    /// Bytes of one inode wb `w` writes per turn: `chunk_bytes`, or the
    /// kernel's `writeback_chunk_size` (fs/fs-writeback.c) for
    /// background and periodic writeback: half a second of the wb's
    /// write bandwidth, at most 1/8 (`DIRTY_SCOPE`) of the global dirty
    /// limit, plus `MIN_WRITEBACK_PAGES` (4 MiB), rounded down to a
    /// multiple of it.
    fn chunk_bytes(&self, w: usize) -> u64 {
        if self.cfg.chunk_bytes > 0 {
            return self.cfg.chunk_bytes;
        }
        const MIN_WRITEBACK_PAGES: u64 = 4096 >> (12 - 10);
        const DIRTY_SCOPE: u64 = 8;
        let pages =
            (self.wbs[w].st.avg_write_bandwidth / 2).min(self.global.dirty_limit() / DIRTY_SCOPE);
        (pages + MIN_WRITEBACK_PAGES) / MIN_WRITEBACK_PAGES * MIN_WRITEBACK_PAGES * PAGE_BYTES
    }

    /// The flusher is done with `inode`'s chunk: requeue it at the tail of
    /// its wb's `b_dirty` if still dirty, and move to the next wb.
    fn end_chunk(&mut self, w: usize, inode: usize) {
        let wbq = &mut self.wbs[w].b_dirty;
        if wbq.front() == Some(&inode) {
            wbq.pop_front();
            if !self.inodes[inode].dirty.is_empty() {
                wbq.push_back(inode);
            } else {
                self.inodes[inode].in_b_dirty = false;
            }
        }
        self.rr = (w + 1) % self.wbs.len().max(1);
    }

    /// Write back one run of contiguous dirty pages of `inode` from its
    /// cursor (wrapping), at most `max_bytes` and one IO's worth. False if
    /// the inode has no dirty page.
    fn write_some(&mut self, inode: usize, max_bytes: u64, out: &mut Vec<WritebackIo>) -> bool {
        let max_pages = (self.cfg.writeback_io_bytes.min(max_bytes) / PAGE_BYTES).max(1);
        let ino = &mut self.inodes[inode];
        let first = match ino.dirty.first_from(ino.cursor) {
            Some(p) => p,
            None => match ino.dirty.first_from(0) {
                Some(p) => p,
                None => return false,
            },
        };
        let mut last = first;
        while last + 1 - first < max_pages && ino.dirty.contains(last + 1) {
            last += 1;
        }
        for p in first..=last {
            ino.dirty.remove(p);
        }
        ino.cursor = last + 1;
        let npages = last + 1 - first;
        let inode_was_idle = ino.writeback_pages == 0;
        ino.writeback_pages += npages;
        if ino.dirty.is_empty() {
            ino.dirtied_when = None;
        }
        let wb = ino.wb;
        for p in first..=last {
            if let Some(pg) = self.pages.get_mut(&p) {
                pg.state = PageState::Writeback;
            }
        }
        self.nr_dirty -= npages;
        self.nr_writeback += npages;
        let w = &mut self.wbs[wb];
        if inode_was_idle {
            // wb_inode_writeback_start
            dirty::bandwidth_estimate_start(
                &mut w.st,
                w.writeback_pages == 0,
                self.poll_j,
                self.hz,
            );
        }
        w.flushed = true;
        if w.st.memcg.is_some() {
            self.memcg_pending += npages;
        }
        w.dirty_pages -= npages;
        w.writeback_pages += npages;
        let group = match self.cfg.mode {
            WritebackMode::Root => GroupId::ROOT,
            _ => w.group,
        };
        out.push(WritebackIo {
            group,
            offset: first * PAGE_BYTES,
            len: npages * PAGE_BYTES,
            sync: false,
        });
        true
    }

    /// The `balance_dirty_pages` sleeps since the last call: each
    /// sleeping task's group and the time it went to sleep (blk-wbt
    /// lets writeback go deeper for a second after one).
    pub fn take_dirty_sleeps(&mut self) -> std::vec::Drain<'_, (GroupId, Instant)> {
        self.dirty_sleeps.drain(..)
    }

    /// A writeback IO of `[offset, offset+len)` completed at `now`.
    pub fn writeback_done(&mut self, offset: u64, len: u64, now: Instant) {
        self.end_writeback(offset, len, now, 0);
    }

    /// A writeback IO of `[offset, offset+len)` failed with `errno` at
    /// `now`. As in Linux (`mapping_set_error`, then `folio_end_writeback`
    /// without re-dirtying) its pages leave writeback clean and the
    /// inode remembers the error for the next fsync
    /// ([`PageCache::take_wb_err`]); the bytes do not count as written.
    pub fn writeback_failed(&mut self, offset: u64, len: u64, errno: i32, now: Instant) {
        self.end_writeback(offset, len, now, errno.max(1));
    }

    /// `file_check_and_advance_wb_err`: the writeback error `inode` got
    /// since the last call (0 = none), reported once.
    pub fn take_wb_err(&mut self, inode: usize) -> i32 {
        self.inodes
            .get_mut(inode)
            .map_or(0, |i| std::mem::take(&mut i.wb_err))
    }

    fn end_writeback(&mut self, offset: u64, len: u64, now: Instant, errno: i32) {
        let mut wb_of_io = None;
        for p in Self::pages_of(offset, len) {
            let Some(pg) = self.pages.get_mut(&p) else {
                continue;
            };
            let inode = pg.inode as usize;
            let wb = self.inodes[inode].wb;
            wb_of_io = Some(wb);
            self.inodes[inode].writeback_pages -= 1;
            self.nr_writeback -= 1;
            self.wbs[wb].writeback_pages -= 1;
            if errno != 0 && self.inodes[inode].wb_err == 0 {
                self.inodes[inode].wb_err = errno;
            }
            match pg.state {
                PageState::Writeback => {
                    pg.state = PageState::Clean;
                    self.nr_clean += 1;
                    self.wbs[wb].clean_pages += 1;
                    if !pg.in_fifo {
                        pg.in_fifo = true;
                        self.push_clean(wb, p);
                    }
                    if errno == 0 && !self.written_clean.insert(p) {
                        self.double_writebacks += 1;
                    }
                }
                PageState::WritebackDirty => {
                    pg.state = PageState::Dirty;
                    self.count_dirty(inode, wb, p, now);
                }
                PageState::Clean | PageState::Dirty => {}
            }
        }
        if let Some(wb) = wb_of_io {
            // __folio_end_writeback → __wb_writeout_add, error or not
            let j = self.jiffies(now);
            let npages = Self::pages_of(offset, len).count() as u64;
            if self.wbs[wb].st.memcg.is_some() {
                self.memcg_pending += npages;
            }
            dirty::writeout_add(&mut self.wbs[wb].st, &mut self.global, npages, j, self.hz);
        }
        if let Some(wb) = wb_of_io.filter(|_| errno == 0) {
            let group = self.wbs[wb].group;
            *self.written_by_group.entry(group).or_default() += len;
            if let Some(s) = self.sample(now) {
                s.writeback_bytes_add(group, len);
            }
        }
        self.evict();
    }

    /// The device completed a write of `bytes` at `now` (any write).
    pub fn device_write_done(&mut self, bytes: u64, now: Instant) {
        if let Some(s) = self.sample(now) {
            s.device_write_bytes += bytes;
        }
    }

    /// The second `now` falls in, from the start.
    fn second_of(&self, now: Instant) -> u64 {
        now.0.saturating_sub(self.t0.0) / 1_000_000_000
    }

    /// The sample of the second `now` falls in, if the series is kept (the
    /// pages at the end of a finished second are the current counts when
    /// the first event of a later second arrives).
    fn sample(&mut self, now: Instant) -> Option<&mut SecondSample> {
        if !self.cfg.series {
            return None;
        }
        let sec = self.second_of(now);
        self.series.at(sec, (self.nr_dirty, self.nr_writeback))
    }

    /// `sync(2)`: every inode with dirty pages goes to writeback at the
    /// next poll.
    pub fn sync_everything(&mut self) {
        for ino in &mut self.inodes {
            if !ino.dirty.is_empty() {
                ino.sync_all = true;
                self.sync_pending = true;
            }
        }
    }

    /// Nothing dirty, nothing under writeback.
    pub fn is_clean(&self) -> bool {
        self.nr_dirty == 0 && self.nr_writeback == 0
    }

    /// Must dirty pages be written back and flushed before the run ends
    /// ([`PageCacheConfig::drain_at_end`])?
    pub fn drain_at_end(&self) -> bool {
        self.cfg.drain_at_end
    }

    /// Pages of `inode` dirty or under writeback.
    pub fn inode_dirty_pages(&self, inode: usize) -> u64 {
        let ino = &self.inodes[inode];
        ino.dirty.len() + ino.writeback_pages
    }

    /// Record `pages` as task `task`'s pages still dirty or under writeback
    /// at the end of the run ([`TaskStats::dirty_pages_end`]).
    pub fn set_task_dirty_end(&mut self, task: usize, pages: u64) {
        if let Some(t) = self.tasks.get_mut(task) {
            t.dirty_pages_end = pages;
        }
    }

    /// Dirty pages now.
    pub fn dirty_pages(&self) -> u64 {
        self.nr_dirty
    }
    /// Pages under writeback now.
    pub fn writeback_pages(&self) -> u64 {
        self.nr_writeback
    }

    /// End the cache at `now` (closing the last second of the series) and
    /// report what it saw.
    pub fn report(mut self, now: Instant) -> PageCacheReport {
        if self.cfg.series {
            let sec = self.second_of(now);
            self.series.finish(sec, (self.nr_dirty, self.nr_writeback));
        }
        let mut dirtied: Vec<_> = self.dirtied_by_group.into_iter().collect();
        dirtied.sort();
        let mut written: Vec<_> = self.written_by_group.into_iter().collect();
        written.sort();
        PageCacheReport {
            mode: self.cfg.mode.name(),
            thresh_pages: self.thresh,
            bg_thresh_pages: self.bg_thresh,
            series: self.series,
            tasks: self.tasks,
            dirtied_bytes: dirtied,
            written_back_bytes: written,
            double_writebacks: self.double_writebacks,
        }
    }
}

impl SecondSample {
    fn writeback_bytes_add(&mut self, group: GroupId, bytes: u64) {
        match self.writeback_bytes.iter_mut().find(|(g, _)| *g == group) {
            Some((_, b)) => *b += bytes,
            None => self.writeback_bytes.push((group, bytes)),
        }
    }
}

mod pageset;
mod series;

pub use series::{Series, MAX_SERIES_ENTRIES};

#[cfg(test)]
mod tests;
