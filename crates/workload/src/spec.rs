//! `JobSpec`: one fio job, parsed and validated. The hot path never sees a
//! string: everything here is typed. Parsing lives in `blkqos-fio`.

use blkqos_core::Duration;

pub use crate::spec_engine::{CpuMode, CpuSpec, EngineSpec, ExecSpec, SgWriteMode, StatType};
pub use crate::spec_ext::{
    BsSplit, Fallocate, FileService, FilesSpec, FlowSpec, RandomDist, RwSeq, Zone, ZoneSize,
};
pub use crate::spec_verify::{BufferSpec, DataOption, DedupeMode, VerifyKind, VerifySpec};

pub use crate::ddir::PerDir;

use crate::ddir::Ddir;

/// `rw=` (`readwrite=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RwMode {
    Read,
    Write,
    Trim,
    RandRead,
    RandWrite,
    RandTrim,
    /// `rw` / `readwrite`: sequential mixed.
    ReadWrite,
    RandRw,
}

impl RwMode {
    pub fn is_random(self) -> bool {
        matches!(
            self,
            RwMode::RandRead | RwMode::RandWrite | RwMode::RandTrim | RwMode::RandRw
        )
    }
    pub fn is_mixed(self) -> bool {
        matches!(self, RwMode::ReadWrite | RwMode::RandRw)
    }
    pub fn has_read(self) -> bool {
        matches!(
            self,
            RwMode::Read | RwMode::RandRead | RwMode::ReadWrite | RwMode::RandRw
        )
    }
    pub fn has_write(self) -> bool {
        matches!(
            self,
            RwMode::Write | RwMode::RandWrite | RwMode::ReadWrite | RwMode::RandRw
        )
    }
    pub fn has_trim(self) -> bool {
        matches!(self, RwMode::Trim | RwMode::RandTrim)
    }
    /// fio's spelling in the job banner (`rw=randread`).
    pub fn fio_name(self) -> &'static str {
        match self {
            RwMode::Read => "read",
            RwMode::Write => "write",
            RwMode::Trim => "trim",
            RwMode::RandRead => "randread",
            RwMode::RandWrite => "randwrite",
            RwMode::RandTrim => "randtrim",
            RwMode::ReadWrite => "rw",
            RwMode::RandRw => "randrw",
        }
    }
}

/// `ioengine=`. All run on the chosen backend; the engine decides fio's
/// semantics that show in results (sync engines have no slat and QD 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoEngine {
    Libaio,
    IoUring,
    Psync,
    Sync,
    /// `pvsync`: preadv/pwritev, one IO per call.
    Pvsync,
    /// `pvsync2`: preadv2/pwritev2, one IO per call.
    Pvsync2,
    /// `posixaio`: aio_read/aio_write, queued up to iodepth.
    Posixaio,
    /// `null`: every IO completes at once, nothing reaches a device
    /// (fio engines/null.c).
    Null,
    /// `io_uring_cmd` with `cmd_type=nvme`: NVMe commands through an NVMe
    /// generic character device (fio engines/io_uring.c): queued up to
    /// iodepth, a passthrough request (no bio).
    IoUringCmd,
    /// `sg`: SCSI commands by `SG_IO` on a block device (fio
    /// engines/sg.c, `FIO_SYNCIO`): one IO per call, a passthrough request.
    Sg,
    /// `filecreate`: each file opened with `O_CREAT` (fio
    /// engines/filecreate.c); one "IO" of `bs` per file, no data moved.
    Filecreate,
    /// `filestat`: each file `stat`ed (`stat_type`; fio engines/filestat.c).
    Filestat,
    /// `filedelete`: each file unlinked (fio engines/filedelete.c).
    Filedelete,
    /// `libzbc`: zoned SCSI/ATA disks by libzbc (fio engines/libzbc.c,
    /// `FIO_SYNCIO`): one synchronous read or write per call
    /// (`zbc_pread`/`zbc_pwrite`, through the block device), trims as zone
    /// resets.
    Libzbc,
    /// `dircreate`: each file's name made a directory with `mkdir` (fio
    /// 3.34 engines/fileoperations.c; fio 3.33 cannot load it).
    Dircreate,
    /// `dirstat`: each directory `stat`ed (fio 3.34).
    Dirstat,
    /// `dirdelete`: each directory removed with `rmdir` (fio 3.34).
    Dirdelete,
    /// `falloc`: every IO a `fallocate(2)` of its range (fio
    /// engines/falloc.c): reads `KEEP_SIZE`, writes mode 0 (the file
    /// grows), trims `PUNCH_HOLE | KEEP_SIZE`.
    Falloc,
    /// `ftruncate`: every write an `ftruncate(2)` to its offset (fio
    /// engines/ftruncate.c); reads and trims fail with EINVAL.
    Ftruncate,
    /// `e4defrag`: every write an `EXT4_IOC_MOVE_EXT` of its blocks to a
    /// donor file (fio engines/e4defrag.c); reads and trims fail with
    /// EINVAL.
    E4defrag,
    /// `cpuio`: burns `cpuload` percent of a CPU in `cpuchunks` cycles
    /// (fio engines/cpu.c); no IO.
    Cpuio,
    /// `exec`: runs `program` for the job's runtime (fio engines/exec.c);
    /// no IO.
    Exec,
    /// `libpmem`: every IO a copy between the job's buffer and a shared
    /// memory mapping of its file (fio engines/libpmem.c; loads and
    /// stores, no block IO).
    Libpmem,
    /// `dev-dax`: the same copies on a device-DAX character device
    /// (`/dev/daxX.Y`; fio engines/dev-dax.c).
    DevDax,
    /// `page_fault`: every IO a copy to or from anonymous private memory
    /// of the job's size, faulting its pages in (engines/page_fault.c of
    /// a fio newer than 3.33, which has no such engine).
    PageFault,
}

impl IoEngine {
    /// Engines that do one IO per system call (`FIO_SYNCIO`): no queue,
    /// no slat; fio warns that iodepth > 1 has no effect.
    pub fn is_sync(self) -> bool {
        matches!(
            self,
            IoEngine::Psync
                | IoEngine::Sync
                | IoEngine::Pvsync
                | IoEngine::Pvsync2
                | IoEngine::Sg
                | IoEngine::Filecreate
                | IoEngine::Filestat
                | IoEngine::Filedelete
                | IoEngine::Libzbc
                | IoEngine::Dircreate
                | IoEngine::Dirstat
                | IoEngine::Dirdelete
                | IoEngine::Falloc
                | IoEngine::Ftruncate
                | IoEngine::E4defrag
                | IoEngine::Cpuio
                | IoEngine::Exec
                | IoEngine::Libpmem
                | IoEngine::DevDax
                | IoEngine::PageFault
        )
    }
    /// Engines whose every IO is a load or store on a memory mapping
    /// (`libpmem`, `dev-dax`, `page_fault`): no block IO.
    pub fn is_mapped(self) -> bool {
        matches!(
            self,
            IoEngine::Libpmem | IoEngine::DevDax | IoEngine::PageFault
        )
    }
    /// Engines whose operation is a file system call per file, timed as
    /// the job's clat, with no data IO (`FIO_FAKEIO | FIO_NOSTATS`).
    pub fn is_file_metadata(self) -> bool {
        matches!(
            self,
            IoEngine::Filecreate
                | IoEngine::Filestat
                | IoEngine::Filedelete
                | IoEngine::Dircreate
                | IoEngine::Dirstat
                | IoEngine::Dirdelete
        )
    }
    /// Engines whose every IO is a file system call on the job's file in
    /// place of a read or write (`falloc`, `ftruncate`): the job's IO
    /// pattern is fio's, the call is the engine's.
    pub fn is_file_call(self) -> bool {
        matches!(
            self,
            IoEngine::Falloc | IoEngine::Ftruncate | IoEngine::E4defrag
        )
    }
    /// Engines that do no IO but work the host (`FIO_NOIO`): `cpuio`
    /// burns CPU, `exec` runs a program.
    pub fn is_host_task(self) -> bool {
        matches!(self, IoEngine::Cpuio | IoEngine::Exec)
    }
    /// Engines whose commands reach the device as passthrough requests
    /// (`blk_rq_is_passthrough`): no bio, so blk-throttle and rq-qos
    /// (iocost) never see them, and the disk statistics do not count them
    /// (`blk_do_io_stat`).
    pub fn is_passthrough(self) -> bool {
        matches!(self, IoEngine::IoUringCmd | IoEngine::Sg)
    }
    /// io_uring's ring flags apply (`io_uring`, `io_uring_cmd`).
    pub fn is_uring(self) -> bool {
        matches!(self, IoEngine::IoUring | IoEngine::IoUringCmd)
    }
    pub fn fio_name(self) -> &'static str {
        match self {
            IoEngine::Libaio => "libaio",
            IoEngine::IoUring => "io_uring",
            IoEngine::Psync => "psync",
            IoEngine::Sync => "sync",
            IoEngine::Pvsync => "pvsync",
            IoEngine::Pvsync2 => "pvsync2",
            IoEngine::Posixaio => "posixaio",
            IoEngine::Null => "null",
            IoEngine::IoUringCmd => "io_uring_cmd",
            IoEngine::Sg => "sg",
            IoEngine::Filecreate => "filecreate",
            IoEngine::Filestat => "filestat",
            IoEngine::Filedelete => "filedelete",
            IoEngine::Libzbc => "libzbc",
            IoEngine::Dircreate => "dircreate",
            IoEngine::Dirstat => "dirstat",
            IoEngine::Dirdelete => "dirdelete",
            IoEngine::Falloc => "falloc",
            IoEngine::Ftruncate => "ftruncate",
            IoEngine::E4defrag => "e4defrag",
            IoEngine::Cpuio => "cpuio",
            IoEngine::Exec => "exec",
            IoEngine::Libpmem => "libpmem",
            IoEngine::DevDax => "dev-dax",
            IoEngine::PageFault => "page_fault",
        }
    }
}

/// `rate_process=`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum RateProcess {
    #[default]
    Linear,
    Poisson,
}

/// `unified_rw_reporting=`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum UnifiedRw {
    #[default]
    None,
    Mixed,
    Both,
}

/// `thinktime_blocks_type=`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ThinkBlocksType {
    #[default]
    Complete,
    Issue,
}

/// A size that may be given as a percentage of the file/device (`size=50%`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizeSpec {
    Bytes(u64),
    Percent(u32),
}

/// fio's error types (`enum error_type_bit`) as `continue_on_error` bits.
pub const ERROR_TYPE_READ: u8 = 1;
pub const ERROR_TYPE_WRITE: u8 = 2;
pub const ERROR_TYPE_VERIFY: u8 = 4;

/// fio's default non-fatal errors of a type whose list is not given
/// (`__NON_FATAL_ERR`: EIO, EILSEQ).
pub const NON_FATAL_ERR: [i32; 2] = [5, 84];

const EILSEQ: i32 = 84;

/// `ignore_error=READLIST,WRITELIST,VERIFYLIST` (errno values per list)
/// and `continue_on_error=` (the types whose errors may be non-fatal).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct IgnoreErrors {
    pub read: Vec<i32>,
    pub write: Vec<i32>,
    pub verify: Vec<i32>,
    /// fio's `td->o.continue_on_error`: `ERROR_TYPE_*` bits, assigned by
    /// `continue_on_error=` and or-ed in by `ignore_error` for every list
    /// it gives (`ignore_error_type`).
    pub continue_on: u8,
}

impl IgnoreErrors {
    /// fio's `ts->continue_on_error`: the report shows `total_err` and
    /// `first_error`.
    pub fn is_set(&self) -> bool {
        self.continue_on != 0
    }

    /// Does `errno` on a read (`read`) or a write/trim/sync leave the job
    /// running? fio's `td_non_fatal_error(td, td_error_type(ddir, err),
    /// err)`: EILSEQ is a verify error; a type not in `continue_on` is
    /// always fatal; a type without its own list takes `NON_FATAL_ERR`.
    pub fn non_fatal(&self, read: bool, errno: i32) -> bool {
        let (bit, list) = if errno == EILSEQ {
            (ERROR_TYPE_VERIFY, &self.verify)
        } else if read {
            (ERROR_TYPE_READ, &self.read)
        } else {
            (ERROR_TYPE_WRITE, &self.write)
        };
        if self.continue_on & bit == 0 {
            return false;
        }
        if list.is_empty() {
            NON_FATAL_ERR.contains(&errno)
        } else {
            list.contains(&errno)
        }
    }
}

/// Where a job came from, for error messages and reports.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Origin {
    /// Job file path, or `<command line>`.
    pub file: String,
    /// Line of the section header (0 for the command line).
    pub line: usize,
}

/// One fio job (before `numjobs` cloning), fully typed.
#[derive(Clone, Debug, PartialEq)]
pub struct JobSpec {
    pub name: String,
    pub origin: Origin,
    /// Reporting group (fio `groupid`): one per job file, bumped by `stonewall`/`new_group`.
    pub group_id: u32,
    pub description: Option<String>,
    pub filename: Option<String>,
    pub size: Option<SizeSpec>,
    pub offset: SizeSpec,
    pub rw: RwMode,
    /// Percent of reads in a mixed job (`rwmixread`, or 100 − `rwmixwrite`).
    pub rwmixread: u32,
    pub bs: PerDir<u64>,
    /// `bsrange` (min, max) per direction; when set, overrides `bs`.
    pub bsrange: Option<PerDir<(u64, u64)>>,
    pub direct: bool,
    pub ioengine: IoEngine,
    pub iodepth: u32,
    /// `iodepth_batch_submit` (alias `iodepth_batch`): IOs queued before
    /// one submit call commits them (0 = iodepth; see [`JobSpec::submit_batch`]).
    pub iodepth_batch: u32,
    pub numjobs: u32,
    pub runtime: Option<Duration>,
    pub time_based: bool,
    pub ramp_time: Duration,
    /// `rate` in bytes/s per direction (None = no cap).
    pub rate_bps: PerDir<Option<u64>>,
    /// `rate_iops` per direction.
    pub rate_iops: PerDir<Option<u64>>,
    pub rate_process: RateProcess,
    pub rate_ignore_thinktime: bool,
    pub thinktime: Duration,
    pub thinktime_spin: Duration,
    pub thinktime_blocks: u32,
    pub thinktime_blocks_type: ThinkBlocksType,
    pub norandommap: bool,
    pub randrepeat: bool,
    pub randseed: u64,
    /// `randrepeat` as the job gave it, before a `randseed` turned it off
    /// (fio seeds before `fixup_options` does that): a random job's
    /// offsets then start from `FIO_RANDSEED` × thread number whatever
    /// the `randseed` (`td_fill_rand_seeds_internal`).
    pub randrepeat_given: bool,
    pub group_reporting: bool,
    pub unified_rw_reporting: UnifiedRw,
    pub percentile_list: Vec<f64>,
    pub clat_percentiles: bool,
    pub lat_percentiles: bool,
    pub slat_percentiles: bool,
    /// cgroup path the job runs in (fio `cgroup=`); `None` = root.
    pub cgroup: Option<String>,
    pub ignore_error: IgnoreErrors,
    /// `bwavgtime` / `iopsavgtime`.
    pub bw_avg_time: Duration,
    pub iops_avg_time: Duration,
    pub kb_base: u32,
    /// fsync every N writes (`fsync=`), 0 = never.
    pub fsync_blocks: u32,
    /// fdatasync every N writes (`fdatasync=`), 0 = never.
    pub fdatasync_blocks: u32,
    /// fsync the file when the job ends (`end_fsync=1`).
    pub end_fsync: bool,
    /// `stonewall`: the job starts when every job before it has ended.
    pub stonewall: bool,
    /// `startdelay=LO[-HI]`: the job starts this long after the run
    /// (a delay drawn in the range per job when `HI > LO`).
    pub start_delay: (Duration, Duration),
    /// `thread`: fio runs the job as a thread instead of a process. blkqos
    /// runs every job in one loop of one process either way, so it changes
    /// nothing that shows in the results.
    pub thread: bool,
    /// `loops=`: the whole workload is done this many times.
    pub loops: u32,
    /// `number_ios=`: stop after this many completed IOs (× loops), 0 = off.
    pub number_ios: u64,
    /// `io_size=` (`io_limit`): bytes of IO to do, wrapping in the region.
    pub io_size: Option<u64>,
    /// `bssplit=`: block sizes with weights, per direction.
    pub bssplit: Option<PerDir<Vec<BsSplit>>>,
    /// `blockalign=` per direction (None: the minimum block size).
    pub blockalign: PerDir<Option<u64>>,
    pub random_dist: RandomDist,
    /// `rw=MODE:N` postfix.
    pub rw_seq: RwSeq,
    /// `gtod_reduce=1`: no slat/clat/lat, no bw/iops samples, no
    /// percentiles (fio's `str_gtod_reduce_cb` sets the `disable_*` flags).
    pub gtod_reduce: bool,
    /// `disable_lat=1`: no total latency (`lat`) samples.
    pub disable_lat: bool,
    /// `disable_clat=1`: no completion latency samples, nor latency
    /// buckets (fio marks them with the clat sample).
    pub disable_clat: bool,
    /// `disable_slat=1`: no submission latency samples.
    pub disable_slat: bool,
    pub files: FilesSpec,
    pub flow: FlowSpec,
    /// `rate_min=` (`ratemin`): bytes/s per direction below which the job
    /// fails, checked every `rate_cycle`.
    pub rate_min: PerDir<Option<u64>>,
    /// `rate_cycle=` (`ratecycle`, fio default 1000 ms).
    pub rate_cycle: Duration,
    /// What the parser has to say about the job's options (stderr).
    pub notes: Vec<String>,
    /// `write_bw_log`, `write_iops_log`, `write_lat_log` and their
    /// modifiers.
    pub logs: crate::iolog::LogSpec,
    /// The options the job was given, canonical names, values verbatim:
    /// fio's JSON `"job options"` (globals excluded).
    pub job_options: Vec<(String, String)>,
    /// Engine-private options (io_uring's ring flags, `sg_write_mode`).
    pub engine: EngineSpec,
    /// `verify=` and its family.
    pub verify: VerifySpec,
    /// What write buffers hold (`buffer_pattern`, `zero_buffers`, ...).
    pub buffers: BufferSpec,
    /// `fill_device=1` (`fill_fs`): without `size`, write until the target
    /// is full.
    pub fill_device: bool,
    /// `offset_increment=` bytes: clone `n` starts `n` times this after
    /// `offset` (fio `get_start_offset`).
    pub offset_increment: u64,
    /// Where the job was given options about data (verification, buffer
    /// contents), for the real engine's refusal.
    pub data_options: Vec<DataOption>,
    /// `wait_for`, `exitall`, `exit_what`, `exitall_on_error`.
    pub control: crate::spec_run::RunControl,
    /// `zonemode`, `zonesize`, `zonerange`, `zoneskip`.
    pub zones: crate::spec_zone::ZoneSpec,
    /// `io_submit_mode`, `random_generator`, `latency_target`.
    pub submit: crate::spec_submit::SubmitSpec,
    /// `steadystate` (`ss`), `ss_dur`, `ss_ramp`.
    pub steadystate: crate::steadystate::SteadyStateSpec,
    /// IO priorities (`prio`, `prioclass`, `cmdprio*`, `log_prio`).
    pub prio: crate::prio::PrioSpec,
    /// CPU placement and scheduling (`nice`, `cpus_allowed`, `numa_*`).
    pub cpu: crate::spec_cpu::CpuSpec,
}

/// fio's default seed for `randrepeat=1` without `randseed` (`FIO_RANDSEED`).
pub const FIO_RANDSEED: u64 = 0xb1899bed;

impl JobSpec {
    /// A job with fio 3.33's defaults.
    pub fn new(name: impl Into<String>) -> Self {
        JobSpec {
            name: name.into(),
            origin: Origin::default(),
            group_id: 0,
            description: None,
            filename: None,
            size: None,
            offset: SizeSpec::Bytes(0),
            rw: RwMode::Read,
            rwmixread: 50,
            bs: PerDir::all(4096),
            bsrange: None,
            direct: false,
            ioengine: IoEngine::Psync,
            iodepth: 1,
            iodepth_batch: 1,
            numjobs: 1,
            runtime: None,
            time_based: false,
            ramp_time: Duration::ZERO,
            rate_bps: PerDir::all(None),
            rate_iops: PerDir::all(None),
            rate_process: RateProcess::Linear,
            rate_ignore_thinktime: false,
            thinktime: Duration::ZERO,
            thinktime_spin: Duration::ZERO,
            thinktime_blocks: 1,
            thinktime_blocks_type: ThinkBlocksType::Complete,
            norandommap: false,
            randrepeat: true,
            randseed: FIO_RANDSEED,
            randrepeat_given: true,
            group_reporting: false,
            unified_rw_reporting: UnifiedRw::None,
            percentile_list: blkqos_core::hist::DEFAULT_PERCENTILES.to_vec(),
            clat_percentiles: true,
            lat_percentiles: false,
            slat_percentiles: false,
            cgroup: None,
            ignore_error: IgnoreErrors::default(),
            bw_avg_time: Duration::from_ms(500),
            iops_avg_time: Duration::from_ms(500),
            kb_base: 1024,
            fsync_blocks: 0,
            fdatasync_blocks: 0,
            end_fsync: false,
            stonewall: false,
            start_delay: (Duration::ZERO, Duration::ZERO),
            thread: false,
            loops: 1,
            number_ios: 0,
            io_size: None,
            bssplit: None,
            blockalign: PerDir::all(None),
            random_dist: RandomDist::Random,
            rw_seq: RwSeq::None,
            gtod_reduce: false,
            disable_lat: false,
            disable_clat: false,
            disable_slat: false,
            files: FilesSpec::default(),
            flow: FlowSpec::default(),
            rate_min: PerDir::all(None),
            rate_cycle: Duration::from_ms(1000),
            notes: Vec::new(),
            logs: crate::iolog::LogSpec::default(),
            job_options: Vec::new(),
            engine: EngineSpec::default(),
            verify: VerifySpec::default(),
            buffers: BufferSpec::default(),
            fill_device: false,
            offset_increment: 0,
            data_options: Vec::new(),
            control: crate::spec_run::RunControl::default(),
            zones: crate::spec_zone::ZoneSpec::default(),
            submit: crate::spec_submit::SubmitSpec::default(),
            steadystate: crate::steadystate::SteadyStateSpec::default(),
            prio: crate::prio::PrioSpec::default(),
            cpu: crate::spec_cpu::CpuSpec::default(),
        }
    }

    /// Smallest block size of a direction (`min_bs`): what `rate_iops` multiplies.
    pub fn min_bs(&self, ddir: Ddir) -> u64 {
        if let Some(split) = &self.bssplit {
            if let Some(m) = split[ddir].iter().map(|e| e.bs).min() {
                return m;
            }
        }
        match &self.bsrange {
            Some(r) => r.get(ddir).0,
            None => self.bs.get(ddir),
        }
    }
    /// Largest block size of a direction (`max_bs`).
    pub fn max_bs(&self, ddir: Ddir) -> u64 {
        if let Some(split) = &self.bssplit {
            if let Some(m) = split[ddir].iter().map(|e| e.bs).max() {
                return m;
            }
        }
        match &self.bsrange {
            Some(r) => r.get(ddir).1,
            None => self.bs.get(ddir),
        }
    }
    /// Effective rate cap in bytes/s of a direction (`rate` wins over `rate_iops`).
    pub fn rate_bytes_per_sec(&self, ddir: Ddir) -> Option<u64> {
        self.rate_bps
            .get(ddir)
            .or_else(|| self.rate_iops.get(ddir).map(|i| i * self.min_bs(ddir)))
    }
    /// IOs per submit call: fio's `fixup_options` makes 0, or more than
    /// the iodepth, the iodepth; sync engines submit one at a time.
    pub fn submit_batch(&self) -> u32 {
        let depth = self.effective_iodepth();
        match self.iodepth_batch {
            0 => depth,
            b => b.min(depth),
        }
    }
    /// Effective iodepth: sync engines are always QD 1; fio's io_uring
    /// engines round the iodepth up to a power of two for the ring
    /// (`fio_ioring_init`: "ring depth must be a power-of-2"), after
    /// `fixup_options` has set `iodepth_low` from the depth as written, so
    /// `iodepth=12` keeps up to 16 in flight and reaps down to 12.
    pub fn effective_iodepth(&self) -> u32 {
        match self.ioengine {
            e if e.is_sync() => 1,
            IoEngine::IoUring | IoEngine::IoUringCmd => self.iodepth.max(1).next_power_of_two(),
            _ => self.iodepth.max(1),
        }
    }
}
