//! How a job's start and end tie to the other jobs': `wait_for`,
//! `exitall`, `exit_what`, `exitall_on_error` (fio 3.33 `backend.c:
//! waitee_running`, `fio_terminate_threads`). [`crate::spec::JobSpec`]
//! holds them; the driver's loop acts on them.

/// `exit_what=`: which jobs a job that ends stops when `exitall` is on
/// (fio `TERMINATE_GROUP`, `TERMINATE_STONEWALL`, `TERMINATE_ALL`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ExitWhat {
    /// Every job of its reporting group, started or not (fio's default).
    #[default]
    Group,
    /// Every job that has started; jobs not started yet (after the next
    /// stonewall) still run.
    Stonewall,
    /// Every job; those not started never start.
    All,
}

/// The job's ties to the other jobs of the run.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct RunControl {
    /// `wait_for=NAME`: the job starts once every job named `NAME` (all
    /// its clones) has ended.
    pub wait_for: Option<String>,
    /// `exitall` was given (any value: fio's callback sets a run-wide
    /// flag): when any job ends, it stops the jobs its `exit_what` names.
    pub exitall: bool,
    pub exit_what: ExitWhat,
    /// `exitall_on_error`: when this job ends with an error, it stops the
    /// jobs its `exit_what` names.
    pub exitall_on_error: bool,
    /// Which fio process of a scenario runs the job (its `[[fio]]`
    /// entry, 0 for a job file): `wait_for`, `exitall` and `exit_what`
    /// act among the jobs of one process, as each fio is on its own.
    pub invocation: u32,
}
