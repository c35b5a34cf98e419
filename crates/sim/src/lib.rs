//! blkqos-sim: a deterministic discrete-event simulator.
//!
//! Virtual time in nanoseconds, no fixed ticks: the clock jumps from event to
//! event. Events are ordered by (time, sequence number), so ties resolve in
//! submission order and the same inputs give the same outputs, bit for bit.
//!
//! Device models ([`device`]) decide when each IO completes. They are
//! FIFO-per-resource models whose service time is known when the IO starts,
//! which keeps the simulator a simple priority queue of completions.

pub mod backend;
pub mod device;
mod queue;

pub use backend::SimBackend;
pub use device::{DeviceModel, DeviceSpec};
