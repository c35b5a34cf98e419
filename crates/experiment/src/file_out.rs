//! A buffered output file that keeps its first write error until it is
//! finished: every stream of a run (traces, fio's logs, status reports)
//! writes through one.

use anyhow::{Context, Result};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// A file written through a buffer that keeps its first error (and writes
/// nothing after it) until [`FileOut::finish`] reports it.
#[derive(Debug)]
pub struct FileOut {
    path: PathBuf,
    out: BufWriter<File>,
    error: Option<std::io::Error>,
}

impl FileOut {
    pub fn create(path: &Path) -> Result<Self> {
        let file =
            File::create(path).with_context(|| format!("cannot write {}", path.display()))?;
        Ok(FileOut {
            path: path.to_path_buf(),
            out: BufWriter::with_capacity(1 << 16, file),
            error: None,
        })
    }

    /// Write with `f` unless an earlier write failed.
    pub fn write_with(&mut self, f: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<()>) {
        if self.error.is_none() {
            if let Err(e) = f(&mut self.out) {
                self.error = Some(e);
            }
        }
    }

    /// Flush: the first error of the whole file, if any.
    pub fn finish(&mut self) -> Result<()> {
        self.write_with(|o| o.flush());
        match self.error.take() {
            Some(e) => Err(e).with_context(|| format!("cannot write {}", self.path.display())),
            None => Ok(()),
        }
    }
}
