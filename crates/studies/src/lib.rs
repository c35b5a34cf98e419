//! blkqos's studies: many runs of one experiment, built on
//! `blkqos-experiment`.
//!
//! * [`sweep`]: a scenario over a grid of knob settings, the best point
//!   for an objective (resctl-bench's iocost-tune, on the simulator);
//! * [`calibrate`]: a real device measured, its `io.cost.model` and a
//!   simulated device fitted to it;
//! * [`lab`]: blkqos against real kernels' recorded runs (`lab/`,
//!   docs/fidelity.md);
//! * [`apply`]: a scenario's settings or a sweep's chosen point written to
//!   a live cgroup v2 hierarchy;
//! * [`bench`]: blkqos measuring itself (docs/BENCHMARKS.md).
//!
//! Each study's `run_command` (or `run`) is what the `blkqos` binary calls
//! for its subcommand; the long ones say how far they are through a
//! [`progress::Progress`] the caller gives them.

pub mod apply;
pub mod bench;
pub mod calibrate;
pub mod lab;
pub mod progress;
pub mod sweep;
