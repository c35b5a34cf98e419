//! SIGINT/SIGTERM → the driver's stop and abandon flags
//! (`RunOptions::stop`, `RunOptions::abandon`).
//!
//! While a [`StopOnSignal`] guard lives, signals never end the process;
//! they set flags the run polls:
//!
//! * the first SIGINT sets `stop`: the driver stops issuing, waits for the
//!   IO in flight and drains what it still owes (the write-back buffer,
//!   under the owners' io.max/iocost limits), then the caller writes its
//!   (partial) report;
//! * a SIGTERM, or any second signal, also sets `abandon`: the driver gives
//!   up the throttled drain — it waits only for IO the device already has
//!   and drops what controllers still hold — and the caller writes what the
//!   write-back buffer holds straight to the target, unthrottled.
//!
//! The first signal decides the exit status the caller reports (128 +
//! signal number: 130 for SIGINT, 143 for SIGTERM, as a shell reports a
//! signal death). Nothing here exits: only SIGKILL can end a guarded run
//! before its data and report are written. With no guard alive the signals
//! do what they do by default (terminate).
//!
//! The handler is registered once per process (through `signal-hook`, which
//! chains with other users) and touches process-global atomics only, so it
//! is async-signal-safe and guards can come and go.

use signal_hook::consts::{SIGINT, SIGTERM};
use std::io;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// The flags the handler sets (shared by every guard).
struct Flags {
    stop: Arc<AtomicBool>,
    abandon: Arc<AtomicBool>,
}

static FLAGS: OnceLock<Flags> = OnceLock::new();
/// Signals received since the last `install`.
static COUNT: AtomicU32 = AtomicU32::new(0);
/// The first and the latest of them (0: none).
static FIRST: AtomicI32 = AtomicI32::new(0);
static LAST: AtomicI32 = AtomicI32::new(0);
/// Live guards.
static ARMED: AtomicUsize = AtomicUsize::new(0);
/// Serialises the one-time registration.
static REGISTERED: Mutex<bool> = Mutex::new(false);

fn flags() -> &'static Flags {
    FLAGS.get_or_init(|| Flags {
        stop: Arc::new(AtomicBool::new(false)),
        abandon: Arc::new(AtomicBool::new(false)),
    })
}

/// The handler: atomics only (async-signal-safe).
fn on_signal(sig: i32) {
    if ARMED.load(Ordering::SeqCst) == 0 {
        // nobody asked for a graceful stop: behave as if we had no handler
        let _ = signal_hook::low_level::emulate_default_handler(sig);
        return;
    }
    let Some(f) = FLAGS.get() else {
        return;
    };
    let before = COUNT.fetch_add(1, Ordering::SeqCst);
    let _ = FIRST.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
    LAST.store(sig, Ordering::SeqCst);
    if sig == SIGTERM || before > 0 {
        // set before `stop`: a run that sees `stop` from a SIGTERM sees
        // `abandon` too and never starts the throttled drain
        f.abandon.store(true, Ordering::SeqCst);
    }
    f.stop.store(true, Ordering::SeqCst);
}

/// A guard is armed and a signal asked its run to stop: long set-up work
/// (laying out a file) polls this to end early.
pub fn stop_requested() -> bool {
    ARMED.load(Ordering::SeqCst) > 0 && FLAGS.get().is_some_and(|f| f.stop.load(Ordering::SeqCst))
}

/// `SIGINT`, `SIGTERM`, or `signal N`.
pub fn signal_name(sig: i32) -> String {
    match sig {
        SIGINT => "SIGINT".into(),
        SIGTERM => "SIGTERM".into(),
        n => format!("signal {n}"),
    }
}

/// SIGINT/SIGTERM handling for a run; dropping it restores the default
/// (terminate) behaviour.
#[derive(Debug)]
pub struct StopOnSignal {
    stop: Arc<AtomicBool>,
    abandon: Arc<AtomicBool>,
}

impl StopOnSignal {
    /// Arm the handlers (registering them on first use) with every flag
    /// and count cleared.
    pub fn install() -> io::Result<Self> {
        let f = flags();
        {
            let mut reg = REGISTERED.lock().unwrap_or_else(|p| p.into_inner());
            if !*reg {
                for sig in [SIGINT, SIGTERM] {
                    // SAFETY: `on_signal` only touches atomics and calls
                    // signal-hook's async-signal-safe
                    // `emulate_default_handler`.
                    unsafe { signal_hook::low_level::register(sig, move || on_signal(sig)) }?;
                }
                *reg = true;
            }
        }
        Self::clear();
        ARMED.fetch_add(1, Ordering::SeqCst);
        Ok(StopOnSignal {
            stop: f.stop.clone(),
            abandon: f.abandon.clone(),
        })
    }

    fn clear() {
        let f = flags();
        f.stop.store(false, Ordering::SeqCst);
        f.abandon.store(false, Ordering::SeqCst);
        COUNT.store(0, Ordering::SeqCst);
        FIRST.store(0, Ordering::SeqCst);
        LAST.store(0, Ordering::SeqCst);
    }

    /// Forget every signal received so far (the next run starts clean).
    pub fn reset(&self) {
        Self::clear();
    }

    /// The flag to put in `RunOptions::stop`.
    pub fn flag(&self) -> Arc<AtomicBool> {
        self.stop.clone()
    }

    /// The flag to put in `RunOptions::abandon`.
    pub fn abandon_flag(&self) -> Arc<AtomicBool> {
        self.abandon.clone()
    }

    /// A signal arrived since `install`.
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// A SIGTERM or a second signal arrived: drains are given up.
    pub fn abandoned(&self) -> bool {
        self.abandon.load(Ordering::SeqCst)
    }

    /// The first signal (the one that stopped the run), if any.
    pub fn signal(&self) -> Option<i32> {
        Some(FIRST.load(Ordering::SeqCst)).filter(|&s| s != 0)
    }

    /// The latest signal, if any.
    pub fn last_signal(&self) -> Option<i32> {
        Some(LAST.load(Ordering::SeqCst)).filter(|&s| s != 0)
    }

    /// Signals received.
    pub fn count(&self) -> u32 {
        COUNT.load(Ordering::SeqCst)
    }

    /// 128 + the first signal (130 SIGINT, 143 SIGTERM), if one arrived.
    pub fn exit_status(&self) -> Option<u8> {
        self.signal().and_then(|s| u8::try_from(128 + s).ok())
    }

    /// Stay armed for the rest of the process: a signal that arrives
    /// while it exits is recorded, never fatal.
    pub fn keep_armed(self) {
        std::mem::forget(self);
    }
}

impl Drop for StopOnSignal {
    fn drop(&mut self) {
        ARMED.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Send SIGTERM to process `pid` (`kill(2)`): how fio's exec engine asks
/// its program to stop (engines/exec.c `fio_exec_queue`).
pub fn terminate(pid: u32) -> std::io::Result<()> {
    let pid =
        libc::pid_t::try_from(pid).map_err(|_| std::io::Error::from_raw_os_error(libc::ESRCH))?;
    // SAFETY: kill takes a pid and a signal number; no memory is shared.
    if unsafe { libc::kill(pid, libc::SIGTERM) } == -1 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    // one test: the flags are process-wide
    #[test]
    fn signals_set_the_flags_and_never_exit() {
        let raise = |s| signal_hook::low_level::raise(s).unwrap();
        let g = StopOnSignal::install().unwrap();
        let (stop, abandon) = (g.flag(), g.abandon_flag());
        assert!(!g.stopped() && g.signal().is_none());
        // delivered synchronously to this thread by raise()
        raise(SIGINT);
        assert!(stop.load(Ordering::SeqCst) && g.stopped());
        assert!(!g.abandoned(), "the first SIGINT drains gracefully");
        assert_eq!((g.signal(), g.exit_status()), (Some(SIGINT), Some(130)));
        raise(SIGINT);
        assert!(abandon.load(Ordering::SeqCst), "a second signal abandons");
        raise(SIGTERM);
        assert_eq!(g.count(), 3, "still alive after three signals");
        assert_eq!((g.signal(), g.last_signal()), (Some(SIGINT), Some(SIGTERM)));
        assert_eq!(g.exit_status(), Some(130), "the first signal decides");
        drop(g);
        // a new guard starts cleared; a first SIGTERM abandons at once
        let g2 = StopOnSignal::install().unwrap();
        assert!(!g2.stopped() && !g2.abandoned() && g2.count() == 0);
        raise(SIGTERM);
        assert!(g2.stopped() && g2.abandoned());
        assert_eq!(g2.exit_status(), Some(143));
        assert_eq!(signal_name(SIGTERM), "SIGTERM");
    }
}
