//! Errors: unreadable files, malformed `/proc` text, bad command lines.

use std::path::PathBuf;

/// Everything that can go wrong reading samples or parsing options.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be read. (The OS error is the `source`, printed by
    /// error-chain reporters such as anyhow's `{:#}`.)
    #[error("cannot read {}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A `/proc` file has a line that is not in the kernel's format.
    /// `line` is 1-based.
    #[error("{}:{line}: {msg}", path.display())]
    Parse {
        path: PathBuf,
        line: usize,
        msg: String,
    },
    /// A bad command line (sysstat prints its usage here).
    #[error("{0}")]
    Usage(String),
    /// Writing the report failed (the OS error is the `source`).
    #[error("cannot write the report")]
    Write(#[from] std::io::Error),
}

impl Error {
    /// Attach a file name to a [`ParseError`] from one of the text parsers.
    pub fn parse(path: impl Into<PathBuf>, e: ParseError) -> Self {
        Error::Parse {
            path: path.into(),
            line: e.line,
            msg: e.msg,
        }
    }
}

/// A parse failure in text that has no file name yet (see [`Error::parse`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {msg}")]
pub struct ParseError {
    /// 1-based line number.
    pub line: usize,
    pub msg: String,
}

impl ParseError {
    pub(crate) fn new(line: usize, msg: impl Into<String>) -> Self {
        ParseError {
            line,
            msg: msg.into(),
        }
    }
}
