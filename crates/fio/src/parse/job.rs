//! Turning sections and command-line groups into [`JobSpec`]s: global
//! defaults (`def_thread`), option order, substitution, reporting groups and
//! the option fix-ups fio applies before a job runs (mirrors fio 3.33
//! `init.c: __parse_jobs_ini`, `get_new_job`, `add_job`, `fixup_options`;
//! `options.c: fio_options_parse`).

use blkqos_workload::spec::{JobSpec, Origin, PerDir, SizeSpec};
use blkqos_workload::Ddir;

use super::apply::{apply, JobState};
use super::error::{Loc, ParseError};
use super::ini::{read_sections, strip_blank_end, Fs, RawOpt, Section};
use super::options::OptDef;
use super::registry::{lookup, prio, suggest, Lookup};
use super::showcmd::render_opts;
use super::subst::{expand_env, replace_keywords, Keywords};
use super::JobSet;

/// Finds a supported option, or says why `name` is not one.
pub(crate) fn find_option(
    name: &str,
    written: (&str, Option<&str>),
    loc: &Loc,
) -> Result<&'static OptDef, ParseError> {
    let err = |msg: String| loc.option_error(written.0, written.1, msg);
    match lookup(name) {
        Lookup::Supported(def) => Ok(def),
        Lookup::Unsupported(canonical) => Err(err(format!(
            "unsupported option `{canonical}` (a fio 3.33 option blkqos does not implement)"
        ))),
        Lookup::Unknown => Err(err(match suggest(name, &[]) {
            Some(s) => {
                format!("unknown option `{name}` (not a fio 3.33 option); did you mean `{s}`?")
            }
            None => format!("unknown option `{name}` (not a fio 3.33 option)"),
        })),
    }
}

/// Looks `name` up, applies `value` to `st` and records it in the job's
/// option list. `written` is the option as the user wrote it, for errors.
pub(crate) fn set_option(
    st: &mut JobState,
    name: &str,
    value: Option<&str>,
    written: (&str, Option<&str>),
    loc: &Loc,
) -> Result<(), ParseError> {
    let def = find_option(name, written, loc)?;
    let engine_on = if def.opt == super::options::Opt::EngineOption {
        super::engine_opts::apply(st, def.name, value)
    } else {
        apply(st, def, value).map(|()| true)
    };
    let engine_on = engine_on.map_err(|mut msg| {
        if let (Some(v), Some(w)) = (value, written.1) {
            if v != w {
                msg.push_str(&format!(" (value after substitution: `{v}`)"));
            }
        }
        loc.option_error(written.0, written.1, msg)
    })?;
    if matches!(
        def.opt,
        super::options::Opt::EngineOption | super::options::Opt::IoEngine
    ) {
        super::engine_opts::record(st, def, engine_on, written, loc);
    }
    if matches!(
        def.opt,
        super::options::Opt::Sync | super::options::Opt::Invalidate
    ) {
        super::engine_mapped::record(st, def.opt, written, loc);
    }
    if super::apply_verify::is_data_option(def.opt) {
        st.spec
            .data_options
            .push(blkqos_workload::spec::DataOption {
                file: loc.file.clone(),
                line: loc.line,
                option: written.0.to_string(),
                value: written.1.map(str::to_string),
            });
    }
    st.dump
        .push((def.name.to_string(), value.map(str::to_string)));
    Ok(())
}

/// Splits an option line at the first `=` (`parse.c: get_option`); the name
/// loses trailing blanks, the value is kept verbatim.
fn split_opt(s: &str) -> (&str, Option<&str>) {
    match s.split_once('=') {
        Some((n, v)) => (strip_blank_end(n), Some(v)),
        None => (s, None),
    }
}

/// Collects jobs the way fio's option parsing does, for job files and the
/// command line alike.
pub(crate) struct Builder<'a> {
    env: &'a dyn Fn(&str) -> Option<String>,
    fs: &'a dyn Fs,
    kw: Keywords,
    /// fio's `def_thread`: what `[global]` sections and command-line options
    /// before the first `--name` set.
    pub globals: JobState,
    jobs: Vec<JobSpec>,
    groupid: u32,
    prev_group_jobs: u32,
    /// Jobs so far, clones included (fio's `thread_number`).
    clones: u32,
    /// `fio --showcmd` output, one line per job file.
    pub showcmd: Vec<String>,
}

impl<'a> Builder<'a> {
    pub fn new(env: &'a dyn Fn(&str) -> Option<String>, fs: &'a dyn Fs) -> Self {
        Builder {
            env,
            fs,
            kw: Keywords::system(),
            globals: JobState::new(),
            jobs: Vec::new(),
            groupid: 0,
            prev_group_jobs: 0,
            clones: 0,
            showcmd: Vec::new(),
        }
    }

    pub fn fs(&self) -> &'a dyn Fs {
        self.fs
    }

    /// `fill_def_thread`: fio resets the global defaults before each job file
    /// after the first.
    pub fn reset_globals(&mut self) {
        self.globals = JobState::new();
    }

    /// Parses one job file. `stonewall_first`: put a stonewall on its first
    /// job (fio separates job files given together by a stonewall).
    pub fn add_file(
        &mut self,
        path: &str,
        text: &str,
        stonewall_first: bool,
    ) -> Result<(), ParseError> {
        let sections = read_sections(path, text, self.fs)?;
        let mut stonewall = stonewall_first;
        let mut show = String::new();
        for sec in &sections {
            if show.is_empty() {
                show.push_str("fio ");
            }
            if sec.global {
                let mut g = std::mem::replace(&mut self.globals, JobState::new());
                let r = self.parse_section(&mut g, sec);
                self.globals = g;
                r?;
                // fio dumps def_thread's whole option list for every [global].
                show.push_str(&render_opts(&self.globals.dump));
            } else {
                let mut st = self.globals.child();
                st.spec.name = sec.name.clone();
                if stonewall {
                    st.stonewall = true;
                    stonewall = false;
                }
                self.parse_section(&mut st, sec)?;
                show.push_str(&format!("--name={} ", sec.name));
                show.push_str(&render_opts(&st.dump));
                self.add_job(st, &sec.loc)?;
            }
        }
        show.push('\n');
        self.showcmd.push(show);
        Ok(())
    }

    /// `fio_options_parse`: sort by priority, substitute, parse in order.
    fn parse_section(&self, st: &mut JobState, sec: &Section) -> Result<(), ParseError> {
        let mut order: Vec<&RawOpt> = sec.opts.iter().collect();
        // A stable sort, highest priority first (glibc's qsort is a merge
        // sort for arrays this small).
        order.sort_by_key(|o| -prio(split_opt(&o.text).0));
        for raw in order {
            let written = split_opt(&raw.text);
            let subst = replace_keywords(&expand_env(&raw.text, self.env), &self.kw)
                .map_err(|m| raw.loc.option_error(written.0, written.1, m))?;
            let (name, value) = split_opt(&subst);
            set_option(st, name, value, written, &raw.loc)?;
        }
        Ok(())
    }

    /// `add_job`: fix the options up, assign the reporting group, keep it.
    pub fn add_job(&mut self, st: JobState, loc: &Loc) -> Result<(), ParseError> {
        let new_group = st.stonewall || st.new_group;
        let mut spec = finalize(st, loc)?;
        self.check_waitee(&spec, loc)?;
        self.clones = super::limits::add_clones(self.clones, spec.numjobs).map_err(|m| {
            let n = spec.numjobs.to_string();
            loc.option_error("numjobs", Some(&n), format!("job `{}`: {m}", spec.name))
        })?;
        if new_group && self.prev_group_jobs > 0 {
            self.prev_group_jobs = 0;
            self.groupid += 1;
        }
        spec.group_id = self.groupid;
        // td_steadystate_init: every job of a reporting group detects
        // steady state the same way (or none does)
        let differs =
            |j: &&JobSpec| j.group_id == spec.group_id && effective_ss(j) != effective_ss(&spec);
        if let Some(other) = self.jobs.iter().find(differs) {
            return Err(loc.error(format!(
                "job `{}`: job rejected: steadystate options must be consistent within \
                 reporting groups (job `{}` of the same group differs; give every job of \
                 the group the same ss, ss_dur and ss_ramp, or put it in a new_group)",
                spec.name, other.name
            )));
        }
        self.prev_group_jobs += 1;
        self.jobs.push(spec);
        Ok(())
    }

    /// `wait_for=NAME` must name a job defined before this one, not the
    /// job itself (fio refuses both when it adds the job: "waitee job
    /// NAME unknown", "a job cannot wait for itself").
    fn check_waitee(&self, spec: &JobSpec, loc: &Loc) -> Result<(), ParseError> {
        let Some(w) = &spec.control.wait_for else {
            return Ok(());
        };
        let err = |m: String| loc.option_error("wait_for", Some(w), m);
        if *w == spec.name {
            return Err(err(format!(
                "job `{}`: a job cannot wait for itself (wait_for={w})",
                spec.name
            )));
        }
        if !self.jobs.iter().any(|j| j.name == *w) {
            return Err(err(format!(
                "job `{}`: waitee job {w} unknown (wait_for must name a job defined \
                 before this one)",
                spec.name
            )));
        }
        Ok(())
    }

    pub fn finish(self) -> JobSet {
        JobSet {
            jobs: self.jobs,
            global_options: given_options(self.globals.dump),
        }
    }
}

/// What fio compares in `td_steadystate_init` (all zero when `ss_dur` is).
fn effective_ss(j: &JobSpec) -> Option<blkqos_workload::steadystate::SteadyStateSpec> {
    j.steadystate.enabled().then_some(j.steadystate)
}

/// The options with a value, as fio's JSON shows them (bare flags are left
/// out: `json_object_add_value_string` skips a NULL value).
fn given_options(dump: Vec<(String, Option<String>)>) -> Vec<(String, String)> {
    dump.into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
        .collect()
}

/// The smallest logical block size a Linux block device has.
const MIN_LOGICAL_BLOCK: u64 = 512;

/// `direct=1`: the kernel fails O_DIRECT IO whose length or offset is not a
/// multiple of the logical block size with EINVAL (`blkdev_dio_invalid`,
/// `iomap_dio_bio_iter`); fio runs it and fails on the first IO. Refused
/// here, before anything runs, for the 512 bytes every device accepts (a
/// 4 KiB-sector target still fails at the first IO, as in fio).
fn check_direct_alignment(s: &JobSpec) -> Result<(), String> {
    let why = "with direct=1: O_DIRECT IO must be a multiple of the logical block size \
               (512 bytes); the kernel fails it with EINVAL";
    for d in Ddir::ALL {
        let dir = d.name();
        if !s.bs.get(d).is_multiple_of(MIN_LOGICAL_BLOCK) {
            return Err(format!("bs={} ({dir}) {why}", s.bs.get(d)));
        }
        if let Some((lo, hi)) = s.bsrange.map(|r| r.get(d)) {
            if !lo.is_multiple_of(MIN_LOGICAL_BLOCK) || !hi.is_multiple_of(MIN_LOGICAL_BLOCK) {
                return Err(format!("bsrange={lo}-{hi} ({dir}) {why}"));
            }
        }
    }
    if let SizeSpec::Bytes(off) = s.offset {
        if !off.is_multiple_of(MIN_LOGICAL_BLOCK) {
            return Err(format!("offset={off} {why}"));
        }
    }
    Ok(())
}

/// What `fixup_options` (and `setup_random_seeds`) do to the options that
/// [`JobSpec`] models.
fn finalize(st: JobState, loc: &Loc) -> Result<JobSpec, ParseError> {
    let mut s = st.spec;
    s.origin = Origin {
        file: loc.file.clone(),
        line: loc.line,
    };
    fixup_io_options(&mut s, &st.bsrange)
        .map_err(|msg| loc.error(format!("job `{}`: {msg}", s.name)))?;
    fixup_seed_and_logs(&mut s, st.randseed_set, st.stonewall);
    if let Err(m) = super::apply_zone::fixup(&mut s) {
        return Err(loc.error(format!("job `{}`: {m}", s.name)));
    }
    if let Err(m) = fixup_files(&mut s) {
        return Err(loc.error(format!("job `{}`: {m}", s.name)));
    }
    if s.ioengine.is_sync() && s.iodepth > 1 {
        s.notes.push(format!(
            "ioengine={} does one IO per system call: iodepth={} has no effect (as in fio)",
            s.ioengine.fio_name(),
            s.iodepth
        ));
    }
    super::apply_submit::check(&mut s).map_err(|(opt, value, m)| {
        loc.option_error(opt, Some(&value), format!("job `{}`: {m}", s.name))
    })?;
    if s.flow.watermark != 1024 {
        s.notes.push(
            "flow_watermark has no effect in fio 3.33 (flow control keeps the jobs' IO \
             counts in the ratio of their `flow` weights), nor here"
                .into(),
        );
    }
    match super::apply_prio::finish(&st.prio, &mut s.prio, s.kb_base) {
        Ok(Some(note)) => s.notes.push(note),
        Ok(None) => {}
        Err(m) => return Err(loc.error(format!("job `{}`: {m}", s.name))),
    }
    super::apply_prio::cpu_notes(&mut s);
    super::engine_opts::finish(&mut s, &st.engine_given)?;
    s.job_options = given_options(st.dump);
    Ok(s)
}

/// `bsrange`, `rate`, `time_based`, `thinktime_spin`, `size` and `direct`
/// fixed up or refused; the error is the message without the job's name.
fn fixup_io_options(s: &mut JobSpec, bsrange: &PerDir<Option<(u64, u64)>>) -> Result<(), String> {
    if bsrange.values().any(Option::is_some) {
        let bs = s.bs;
        s.bsrange = Some(PerDir::from_fn(|d| bsrange[d].unwrap_or((bs[d], bs[d]))));
    }
    let any = |p: &PerDir<Option<u64>>| p.read.is_some() || p.write.is_some() || p.trim.is_some();
    if any(&s.rate_bps) && any(&s.rate_iops) {
        return Err("rate and rate_iops are mutually exclusive".into());
    }
    // fio warns "time_based requires a runtime/timeout setting" and clears it.
    if s.time_based && s.runtime.is_none() {
        s.time_based = false;
    }
    if s.thinktime_spin > s.thinktime {
        s.thinktime_spin = s.thinktime;
    }
    if let Some(SizeSpec::Bytes(n)) = s.size {
        let min = Ddir::ALL
            .into_iter()
            .map(|d| s.min_bs(d))
            .min()
            .unwrap_or(1);
        if n < min {
            return Err(format!(
                "size too small, must not be less than minimum block size: {n} < {min}"
            ));
        }
    }
    if s.direct {
        check_direct_alignment(s)?;
    }
    Ok(())
}

/// `randrepeat` as `randseed` leaves it, the `stonewall`, and the names of
/// the logs a bare `write_*_log` asks for.
fn fixup_seed_and_logs(s: &mut JobSpec, randseed_set: bool, stonewall: bool) {
    // fio turns randrepeat off when randseed is given, but then seeds every
    // generator from randseed: deterministic, which is what `randrepeat`
    // means in JobSpec.
    s.randrepeat_given = s.randrepeat;
    if randseed_set {
        s.randrepeat = true;
    }
    s.stonewall = stonewall;
    // bare write_*_log: logs named after the job
    let job_name = s.name.clone();
    let l = &mut s.logs;
    for prefix in [&mut l.bw, &mut l.iops, &mut l.lat, &mut l.hist]
        .into_iter()
        .flatten()
    {
        if prefix.is_empty() {
            prefix.clone_from(&job_name);
        }
    }
}

/// The files of a job (`setup_files`): `filename=a:b` gives one file per
/// name (and `nrfiles` is how many there are), `filesize` must fit `size`.
fn fixup_files(s: &mut JobSpec) -> Result<(), String> {
    if let Some(f) = &s.filename {
        let names = super::apply_ext::split_names(f);
        if names.len() > 1 {
            s.files.nrfiles = names.len() as u32;
        }
    }
    Ok(())
}
