//! How a command fails: an error and the exit status it maps to.

/// A failure and the exit status it maps to: 2 for bad input (scenario,
/// job file, option, knob line), 1 for a run that failed, 128 + N for a
/// signal.
#[derive(Debug)]
pub struct Failure {
    pub code: u8,
    pub err: anyhow::Error,
}
