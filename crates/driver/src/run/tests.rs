//! The driver loop's own bounds.

use super::{run, JobSetup, RunError, RunOptions, MAX_PASSES_PER_INSTANT};
use crate::backend::{Backend, Completion};
use blkqos_core::{ControllerStack, Duration, GroupId, Instant, Io};
use blkqos_workload::JobSpec;

/// A backend with a broken clock: IOs complete when submitted, but
/// waiting for a deadline never moves time.
#[derive(Default)]
struct FrozenClock {
    done: Vec<Completion>,
}

impl Backend for FrozenClock {
    fn now(&self) -> Instant {
        Instant::ZERO
    }
    fn nr_requests(&self) -> u32 {
        64
    }
    fn capacity_bytes(&self) -> u64 {
        1 << 20
    }
    fn submit(&mut self, io: &Io, now: Instant) {
        self.done.push(Completion {
            id: io.id,
            error: 0,
            bytes: io.len,
            at: now,
            issued: None,
            dispatched: None,
        });
    }
    fn wait(&mut self, _deadline: Option<Instant>, out: &mut Vec<Completion>) {
        out.append(&mut self.done);
    }
    fn in_flight(&self) -> usize {
        self.done.len()
    }
}

/// A job that thinks 1 ms after each IO on a clock that never moves would
/// wait for its wake-up forever; the loop ends after its bound of passes
/// at one instant with an error naming the instant, instead of hanging.
#[test]
fn a_loop_whose_clock_never_moves_ends_with_an_error() {
    let mut spec = JobSpec::new("thinker");
    spec.thinktime = Duration::from_ms(1);
    let setup = JobSetup {
        spec,
        clone: 0,
        group: GroupId::ROOT,
        region_start: 0,
        region_len: 64 << 10,
        seed: 1,
        files: Vec::new(),
    };
    let mut stack = ControllerStack::pass_through();
    let opts = RunOptions::default();
    let err = run(&mut FrozenClock::default(), &mut stack, vec![setup], &opts)
        .expect_err("a spinning loop is an error");
    match err {
        RunError::Spinning { passes, at } => {
            assert_eq!(passes, MAX_PASSES_PER_INSTANT + 1);
            assert_eq!(at, Instant::ZERO);
        }
        e => panic!("expected Spinning, got {e}"),
    }
}
