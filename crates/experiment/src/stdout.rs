//! Writing to stdout without panicking (`print!` panics on a closed pipe).
//!
//! A reader that goes away (`blkqos iostat -x 1 | head -1`) makes the next
//! write fail with EPIPE: the caller gets the error, and `main` exits with
//! status 141 and no message, as a program killed by SIGPIPE does (sysstat,
//! coreutils). SIGPIPE itself stays ignored (Rust's default), so a run on
//! the real engine is never killed by it mid-drain.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// Something was written to stdout by this process (through
/// [`write_out`] or [`lock`]).
static USED: AtomicBool = AtomicBool::new(false);

/// Write `text` to stdout and flush it.
pub fn write_out(text: &str) -> std::io::Result<()> {
    let mut out = lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// Whether anything went to stdout so far.
pub fn used() -> bool {
    USED.load(Ordering::Relaxed)
}

/// stdout, locked, noting that it was written to.
pub fn lock() -> Marked {
    Marked(std::io::stdout().lock())
}

/// A locked stdout that records a non-empty write in [`used`].
pub struct Marked(std::io::StdoutLock<'static>);

impl Write for Marked {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if !buf.is_empty() {
            USED.store(true, Ordering::Relaxed);
        }
        self.0.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

/// Status of a process that a closed pipe ended (128 + SIGPIPE).
pub const BROKEN_PIPE_STATUS: u8 = 141;

/// The error, or one of its causes, is EPIPE.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// `println!` that returns the write's error instead of panicking.
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::stdout::write_out(&format!("{}\n", format_args!($($arg)*)))
    };
}
