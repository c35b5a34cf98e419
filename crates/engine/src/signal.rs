//! SIGINT/SIGTERM → the driver's stop flag (`RunOptions::stop`).
//!
//! While a [`StopOnSignal`] guard lives, the first SIGINT or SIGTERM sets the
//! flag: the driver stops issuing, drains what is in flight and still writes
//! its (partial) report. A second signal while the flag is set exits at once
//! with status 128 + signal number (130 for SIGINT, 143 for SIGTERM), as a
//! shell reports a signal death. With no guard alive the signals do what
//! they do by default (terminate).
//!
//! The handler is registered once per process (through `signal-hook`, which
//! chains with other users) and reads process-global atomics only, so it is
//! async-signal-safe and guards can come and go.

use signal_hook::consts::{SIGINT, SIGTERM};
use std::io;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// The flag the handler sets (shared by every guard).
static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();
/// Live guards.
static ARMED: AtomicUsize = AtomicUsize::new(0);
/// Serialises the one-time registration.
static REGISTERED: Mutex<bool> = Mutex::new(false);

fn on_signal(sig: i32) {
    if ARMED.load(Ordering::SeqCst) == 0 {
        // nobody asked for a graceful stop: behave as if we had no handler
        let _ = signal_hook::low_level::emulate_default_handler(sig);
        return;
    }
    let Some(flag) = FLAG.get() else {
        return;
    };
    if flag.swap(true, Ordering::SeqCst) {
        signal_hook::low_level::exit(128 + sig);
    }
}

/// SIGINT/SIGTERM handling for a run; dropping it restores the default
/// (terminate) behaviour.
#[derive(Debug)]
pub struct StopOnSignal {
    flag: Arc<AtomicBool>,
}

impl StopOnSignal {
    /// Arm the handlers (registering them on first use) with the flag cleared.
    pub fn install() -> io::Result<Self> {
        let flag = FLAG
            .get_or_init(|| Arc::new(AtomicBool::new(false)))
            .clone();
        {
            let mut reg = REGISTERED.lock().unwrap_or_else(|p| p.into_inner());
            if !*reg {
                for sig in [SIGINT, SIGTERM] {
                    // SAFETY: `on_signal` only touches atomics and calls
                    // signal-hook's async-signal-safe `exit` /
                    // `emulate_default_handler`.
                    unsafe { signal_hook::low_level::register(sig, move || on_signal(sig)) }?;
                }
                *reg = true;
            }
        }
        flag.store(false, Ordering::SeqCst);
        ARMED.fetch_add(1, Ordering::SeqCst);
        Ok(StopOnSignal { flag })
    }

    /// The flag to put in `RunOptions::stop`.
    pub fn flag(&self) -> Arc<AtomicBool> {
        self.flag.clone()
    }

    /// A signal arrived since `install`.
    pub fn stopped(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }
}

impl Drop for StopOnSignal {
    fn drop(&mut self) {
        ARMED.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_signal_sets_the_flag() {
        let g = StopOnSignal::install().unwrap();
        let flag = g.flag();
        assert!(!g.stopped());
        signal_hook::low_level::raise(SIGTERM).unwrap();
        // delivered synchronously to this thread by raise()
        assert!(flag.load(Ordering::SeqCst));
        assert!(g.stopped());
        drop(g);
        // a new guard starts cleared
        let g2 = StopOnSignal::install().unwrap();
        assert!(!g2.stopped());
    }
}
