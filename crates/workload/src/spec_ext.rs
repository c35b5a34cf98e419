//! The typed forms of fio options beyond one job on one region: several
//! files per job, block-size splits, offset distributions, `rw` postfixes,
//! start delays and flow control. [`crate::spec::JobSpec`] holds them.

use blkqos_core::Duration;

/// `random_distribution=` (fio `enum fio_random_distribution`).
#[derive(Clone, Debug, PartialEq, Default)]
pub enum RandomDist {
    /// `random`: uniform (the default).
    #[default]
    Random,
    /// `zipf:THETA` (θ > 0, ≠ 1).
    Zipf(f64),
    /// `pareto:H` (0 < h < 1).
    Pareto(f64),
    /// `normal:DEV` / `gauss:DEV`: a normal distribution centred on the
    /// middle of the file, `DEV` percent of the file as its deviation
    /// (0 < dev ≤ 100).
    Normal(f64),
    /// `zoned:A/B:C/D…`: `A` percent of the IO goes to the first `B`
    /// percent of the file, and so on (`zoned_abs`: zone sizes in bytes).
    Zoned(Vec<Zone>),
}

/// One zone of `random_distribution=zoned` / `zoned_abs`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Zone {
    /// Share of the IOs, percent.
    pub access_pct: u32,
    /// Extent of the zone: a percentage of the file (`zoned`) or bytes
    /// (`zoned_abs`).
    pub size: ZoneSize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneSize {
    Percent(u32),
    Bytes(u64),
}

/// The `rw=MODE:N` postfix (fio `rw_seq` / `ddir_seq_nr` / `ddir_seq_add`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum RwSeq {
    /// No postfix.
    #[default]
    None,
    /// Random modes: a new random offset only every `N` IOs, the IOs in
    /// between follow on sequentially (`ddir_seq_nr`).
    Every(u32),
    /// Sequential modes: add this many bytes (may be negative) to the next
    /// offset after each IO, making holes or going backwards
    /// (`ddir_seq_add`).
    Add(i64),
}

/// `file_service_type=` (fio `enum file_service_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FileService {
    /// `random`: a random file for each batch.
    Random,
    /// `roundrobin` (fio's default): the next file for each batch.
    #[default]
    RoundRobin,
    /// `sequential`: each file until it is done, then the next.
    Sequential,
}

/// `fallocate=` (fio `enum fio_fallocate_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Fallocate {
    None,
    /// fio's default on Linux: `posix` (allocate the whole file).
    #[default]
    Posix,
    /// `keep`: FALLOC_FL_KEEP_SIZE.
    Keep,
    /// `native`: fallocate(2) without flags, ignored if unsupported.
    Native,
    /// `truncate`: ftruncate to the file size.
    Truncate,
}

/// The files of one job: `directory`, `nrfiles`, `filesize`,
/// `filename_format`, `openfiles`, `file_service_type`, `create_on_open`,
/// `fallocate`.
#[derive(Clone, Debug, PartialEq)]
pub struct FilesSpec {
    /// `directory=`: `:`-separated; file `i` goes to entry `i % len`.
    pub directory: Vec<String>,
    /// `nrfiles=` (fio default 1).
    pub nrfiles: u32,
    /// `filesize=LO[-HI]`: each file's size, drawn in the range.
    pub filesize: Option<(u64, u64)>,
    /// `filename_format=` (fio default `$jobname.$jobnum.$filenum`).
    pub filename_format: String,
    /// `openfiles=`: files open at once (0 = all of them).
    pub openfiles: u32,
    pub service: FileService,
    /// IOs issued to one file before switching (`file_service_type=X:N`).
    pub service_batch: u32,
    pub create_on_open: bool,
    pub fallocate: Fallocate,
}

impl Default for FilesSpec {
    fn default() -> Self {
        FilesSpec {
            directory: Vec::new(),
            nrfiles: 1,
            filesize: None,
            filename_format: "$jobname.$jobnum.$filenum".into(),
            openfiles: 0,
            service: FileService::RoundRobin,
            service_batch: 1,
            create_on_open: false,
            fallocate: Fallocate::Posix,
        }
    }
}

impl FilesSpec {
    /// Does the job use more than the one file (or device) of `filename`
    /// as before: several files, a directory, file sizes or a name format?
    pub fn is_multi(&self, filename: Option<&str>) -> bool {
        self.nrfiles > 1
            || !self.directory.is_empty()
            || self.filesize.is_some()
            || self.filename_format != FilesSpec::default().filename_format
            || filename.is_some_and(|f| split_names(f).len() > 1)
    }

    /// The paths of clone `jobnum`'s files (fio `add_file`, with the
    /// directory in front of relative names).
    pub fn paths(&self, filename: Option<&str>, jobname: &str, jobnum: u32) -> Vec<String> {
        match filename {
            Some(f) => split_names(f)
                .into_iter()
                .enumerate()
                .map(|(i, name)| match self.directory.len() {
                    0 => name,
                    _ if name.starts_with('/') => name,
                    n => format!("{}/{name}", self.directory[i % n]),
                })
                .collect(),
            None => (0..self.nrfiles)
                .map(|i| self.file_name(jobname, jobnum, i))
                .collect(),
        }
    }

    /// The name of file `filenum` of clone `jobnum` of job `jobname`
    /// (fio `create_work_dirs` / `make_filename`: `$jobname`, `$jobnum`,
    /// `$filenum`, `$clientuid` substituted), in its directory.
    pub fn file_name(&self, jobname: &str, jobnum: u32, filenum: u32) -> String {
        let base = self
            .filename_format
            .replace("$jobname", jobname)
            .replace("$jobnum", &jobnum.to_string())
            .replace("$filenum", &filenum.to_string())
            .replace("$clientuid", "0");
        match self.directory.len() {
            0 => base,
            n => format!("{}/{base}", self.directory[filenum as usize % n]),
        }
    }
}

/// `flow=`, `flow_id=`, `flow_watermark=`, `flow_sleep=` (fio flow.c).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowSpec {
    /// Added to the shared counter per IO (0 = no flow control).
    pub weight: i32,
    pub id: u32,
    pub watermark: u32,
    /// Sleep when over the watermark (0: just skip the IO and retry).
    pub sleep: Duration,
}

impl Default for FlowSpec {
    fn default() -> Self {
        FlowSpec {
            weight: 0,
            id: 0,
            watermark: 1024,
            sleep: Duration::ZERO,
        }
    }
}

/// One `bssplit=` entry: a block size and its share in percent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BsSplit {
    pub bs: u64,
    pub pct: u32,
}

/// Names separated by `:`, a `\:` staying in the name (fio `get_next_str`);
/// empty names are skipped.
pub fn split_names(v: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = v.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&':') => {
                cur.push(':');
                chars.next();
            }
            ':' => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            _ => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// EIO: what a missed `rate_min` fails a job with (fio `td_verror(td, EIO,
/// "check_min_rate")`).
pub const EIO: i32 = 5;
