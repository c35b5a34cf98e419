//! The typed forms of engine-private options: io_uring's and
//! io_uring_cmd's ring flags, the sg engine's SCSI write command, and what
//! the real engine cannot honour. [`crate::spec::JobSpec::engine`] holds
//! them.

/// `sg_write_mode=` (fio 3.33 engines/sg.c): which SCSI command a write
/// becomes. fio counts every one of them as a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SgWriteMode {
    /// `write`: WRITE(10/16).
    #[default]
    Write,
    /// `write_and_verify` (`verify`): WRITE AND VERIFY, BYTCHK 0.
    WriteAndVerify,
    /// `write_same` (`same`): WRITE SAME, one block sent for the range.
    WriteSame,
    /// `write_same_ndob`: WRITE SAME(16) with NDOB, no data sent.
    WriteSameNdob,
    /// `verify_bytchk_00`: VERIFY, the device checks its medium, no data sent.
    VerifyBytchk00,
    /// `verify_bytchk_01`: VERIFY, the range's data sent and compared.
    VerifyBytchk01,
    /// `verify_bytchk_11`: VERIFY, one block sent and compared with every block.
    VerifyBytchk11,
    /// `write_stream`: WRITE STREAM(16) with `stream_id`.
    WriteStream,
}

impl SgWriteMode {
    /// fio's name of the mode.
    pub fn fio_name(self) -> &'static str {
        match self {
            SgWriteMode::Write => "write",
            SgWriteMode::WriteAndVerify => "write_and_verify",
            SgWriteMode::WriteSame => "write_same",
            SgWriteMode::WriteSameNdob => "write_same_ndob",
            SgWriteMode::VerifyBytchk00 => "verify_bytchk_00",
            SgWriteMode::VerifyBytchk01 => "verify_bytchk_01",
            SgWriteMode::VerifyBytchk11 => "verify_bytchk_11",
            SgWriteMode::WriteStream => "write_stream",
        }
    }
    /// VERIFY with BYTCHK 01 or 11: the device compares data sent with
    /// its medium, and fails the command when they differ.
    pub fn compares_data(self) -> bool {
        matches!(
            self,
            SgWriteMode::VerifyBytchk01 | SgWriteMode::VerifyBytchk11
        )
    }
    /// The medium operation the command becomes on the device: VERIFY
    /// reads the range (whatever it sends), every other mode writes it.
    pub fn device_reads(self) -> bool {
        matches!(
            self,
            SgWriteMode::VerifyBytchk00 | SgWriteMode::VerifyBytchk01 | SgWriteMode::VerifyBytchk11
        )
    }
}

/// filestat's `stat_type=` (fio 3.33 engines/filestat.c).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum StatType {
    #[default]
    Stat,
    Lstat,
    /// `statx(2)` of the file's absolute path.
    Statx,
}

impl StatType {
    pub fn fio_name(self) -> &'static str {
        match self {
            StatType::Stat => "stat",
            StatType::Lstat => "lstat",
            StatType::Statx => "statx",
        }
    }
}

/// cpuio's `cpumode=` (fio 3.33 engines/cpu.c): how a cycle burns CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum CpuMode {
    /// `noop`: spin on the clock.
    #[default]
    Noop,
    /// `qsort`: sort an array of random numbers over and over.
    Qsort,
}

impl CpuMode {
    pub fn fio_name(self) -> &'static str {
        match self {
            CpuMode::Noop => "noop",
            CpuMode::Qsort => "qsort",
        }
    }
}

/// cpuio's options (fio 3.33 engines/cpu.c `options[]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuSpec {
    /// `cpuload=`: percent of a CPU to use (0: not given, an error).
    pub load_pct: u32,
    /// `cpuchunks=`: the length of one burn cycle in µs (fio 50000).
    pub chunk_us: u64,
    /// `cpumode=`.
    pub mode: CpuMode,
    /// `exit_on_io_done=1`: end when the IO jobs are done (the real engine
    /// refuses it: it runs cpuio jobs only beside jobs without block IO).
    pub exit_on_io_done: bool,
}

impl Default for CpuSpec {
    fn default() -> Self {
        CpuSpec {
            load_pct: 0,
            chunk_us: 50_000,
            mode: CpuMode::Noop,
            exit_on_io_done: false,
        }
    }
}

/// exec's options (fio 3.33 engines/exec.c `options[]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecSpec {
    /// `program=` (None: not given, an error).
    pub program: Option<String>,
    /// `arguments=`, `%r` and `%n` not yet expanded.
    pub arguments: Option<String>,
    /// `grace_time=`: seconds between SIGTERM and the end (fio 1).
    pub grace_time_s: u64,
    /// `std_redirect=`: the program's stdout and stderr go to
    /// `NAME.stdout` and `NAME.stderr` (fio 1).
    pub std_redirect: bool,
}

impl Default for ExecSpec {
    fn default() -> Self {
        ExecSpec {
            program: None,
            arguments: None,
            grace_time_s: 1,
            std_redirect: true,
        }
    }
}

/// Engine-private options of a job (fio's `td->eo`).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct EngineSpec {
    /// io_uring `sqthread_poll=1`: a kernel thread takes the submissions
    /// off the ring (`IORING_SETUP_SQPOLL`); the job makes no system call
    /// to submit.
    pub sqthread_poll: bool,
    /// io_uring `sqthread_poll_cpu=N`: the CPU of that thread.
    pub sqthread_poll_cpu: Option<u32>,
    /// io_uring `hipri=1`: polled completions (`IORING_SETUP_IOPOLL`),
    /// real engine only.
    pub hipri: bool,
    /// io_uring `fixedbufs=1`: buffers registered with the ring.
    pub fixedbufs: bool,
    /// io_uring `registerfiles=1`: files registered with the ring.
    pub registerfiles: bool,
    /// io_uring `nonvectored=0`: `IORING_OP_READV`/`WRITEV` (an iovec)
    /// instead of `READ`/`WRITE` (a plain buffer, fio's default).
    pub vectored: bool,
    /// `sg_write_mode=`.
    pub sg_write_mode: SgWriteMode,
    /// filestat's `stat_type=`.
    pub stat_type: StatType,
    /// cpuio's options.
    pub cpu: CpuSpec,
    /// exec's options.
    pub exec: ExecSpec,
    /// e4defrag's `donorname=` (None: not given, an error).
    pub donor_name: Option<String>,
    /// e4defrag's `inplace=`.
    pub inplace: bool,
    /// `sync=` (fio's `sync_io`): `sync`/`1` or `dsync` asks for
    /// synchronous writes; only the memory-mapped engines honour it here.
    pub sync_io: bool,
    /// Where `sync=` was given, `FILE:LINE: option `sync`: value `v``.
    pub sync_at: Option<crate::spec_verify::DataOption>,
    /// Where `invalidate=` was given: only the memory-mapped engines take
    /// it (fio drops no cache for them).
    pub invalidate_at: Option<crate::spec_verify::DataOption>,
    /// Where `ioengine=` named a file system metadata engine: the
    /// simulator's refusal (it has no file system).
    pub sim_refusal: Option<String>,
    /// Where `fixedbufs=1` or `registerfiles=1` was given (`FILE:LINE:
    /// option `x`: value `y``): the real engine honours them when its
    /// io_uring ring registered its buffers and target, and refuses the
    /// job with this place otherwise.
    pub registration_at: Option<String>,
    /// The first engine option (or engine) the real engine cannot honour:
    /// the refusal to give, with the job file, line, option and value.
    pub real_refusal: Option<String>,
}
