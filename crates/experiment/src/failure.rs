//! How an experiment fails: an error and what it means for the caller,
//! as the exit status it maps to.
//!
//! The library's entry points that plan or run an experiment return a
//! [`Failure`], classified where the error happens: a plan refused (a
//! scenario, job file, option or knob line blkqos does not take) is bad
//! input; a run that failed (an IO error that ended it, an invariant a
//! controller broke: the driver's `RunError`) is a run failure. A caller
//! reads the class, never downcasts.

/// A failure and the exit status it maps to: 2 for bad input (scenario,
/// job file, option, knob line), 1 for a run that failed, 128 + N for a
/// signal.
#[derive(Debug)]
pub struct Failure {
    pub code: u8,
    pub err: anyhow::Error,
}

impl Failure {
    /// Exit status of bad input.
    pub const INPUT: u8 = 2;
    /// Exit status of a run that failed.
    pub const RUN: u8 = 1;

    /// Bad input: what blkqos refuses to plan or run.
    pub fn input(err: anyhow::Error) -> Self {
        Failure {
            code: Self::INPUT,
            err,
        }
    }

    /// A run that failed.
    pub fn run(err: anyhow::Error) -> Self {
        Failure {
            code: Self::RUN,
            err,
        }
    }

    /// An error from running an experiment: the driver's `RunError` is a
    /// run failure, anything else what the run refused up front (input).
    pub fn of_run(err: anyhow::Error) -> Self {
        if err.is::<blkqos_driver::RunError>() {
            Self::run(err)
        } else {
            Self::input(err)
        }
    }

    /// The same failure with `what` said before it.
    pub fn context(self, what: impl std::fmt::Display + Send + Sync + 'static) -> Self {
        Failure {
            code: self.code,
            err: self.err.context(what),
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#}", self.err)
    }
}

impl std::error::Error for Failure {}
