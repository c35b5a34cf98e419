//! The state of a job while its options are applied (`apply`,
//! `apply_ext`): fio's `thread_data` for the job being parsed.

use blkqos_workload::spec::{JobSpec, PerDir};

/// A job's options while its section (or command-line group) is being
/// parsed: fio's `thread_data` for the job, or `def_thread` for globals.
#[derive(Clone, Debug)]
pub(crate) struct JobState {
    pub spec: JobSpec,
    /// `bsrange` per direction as given; unset directions fall back to `bs`.
    pub bsrange: PerDir<Option<(u64, u64)>>,
    pub randseed_set: bool,
    pub stonewall: bool,
    pub new_group: bool,
    /// The options given to this job, canonical name and verbatim value
    /// (`None` = a bare flag): fio's `opt_list`.
    pub dump: Vec<(String, Option<String>)>,
    /// Engine options and `ioengine` as given, with where
    /// (`engine_opts::finish` checks them; inherited from globals).
    pub engine_given: Vec<Given>,
    /// `prio`, `prioclass` and the cmdprio options as given.
    pub prio: PrioGiven,
}

impl JobState {
    /// fio 3.33's defaults (`fill_def_thread`).
    pub fn new() -> Self {
        JobState {
            spec: JobSpec::new(""),
            bsrange: PerDir::all(None),
            randseed_set: false,
            stonewall: false,
            new_group: false,
            dump: Vec::new(),
            engine_given: Vec::new(),
            prio: Default::default(),
        }
    }

    /// A job inheriting these settings (`get_new_job` from `def_thread`):
    /// everything is copied except the list of given options.
    pub fn child(&self) -> Self {
        let mut c = JobState {
            dump: Vec::new(),
            ..self.clone()
        };
        for g in &mut c.engine_given {
            g.from_global = true;
        }
        c
    }
}

/// An engine option (or `ioengine`) as given, where: checked and turned
/// into refusals by [`finish`].
#[derive(Clone, Debug)]
pub(crate) struct Given {
    pub name: &'static str,
    pub written: String,
    pub value: Option<String>,
    /// The option asks for something (not its default / off value).
    pub on: bool,
    pub loc: super::error::Loc,
    /// Inherited from a `[global]` section (or the command line's
    /// globals), not given in the job.
    pub from_global: bool,
}

/// The priority options as given (fio's `thread_options` fields).
#[derive(Clone, Debug, Default)]
pub(crate) struct PrioGiven {
    pub prio: Option<u16>,
    pub prioclass: Option<u16>,
    /// `cmdprio_percentage`, `cmdprio_class`, `cmdprio` per read, write.
    pub percentage: [u32; 2],
    pub class: [u16; 2],
    pub level: [u16; 2],
    pub bssplit: Option<String>,
}
