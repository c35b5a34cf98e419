//! How a study says how far it is: it calls a [`Progress`] the caller
//! gives it; the `blkqos` binary draws a bar on a terminal, a program
//! embedding the studies may pass [`Silent`].

/// Progress of one task of many steps (a calibration's jobs, a sweep's
/// points); called from the study's threads.
pub trait Progress: Sync {
    /// A task of `total` steps named `what` begins.
    fn begin(&self, total: u64, what: &str);
    /// The step now running, said beside the count.
    fn doing(&self, _step: &str) {}
    /// One more step is done.
    fn done_one(&self);
    /// The task ended.
    fn end(&self);
}

/// Says nothing.
pub struct Silent;

impl Progress for Silent {
    fn begin(&self, _: u64, _: &str) {}
    fn done_one(&self) {}
    fn end(&self) {}
}
