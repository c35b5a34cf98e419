//! The registry of option families and the lookup over it: which
//! [`OptDef`] a name or alias is, and what is an *unsupported* fio option
//! rather than an *unknown* name.

use super::known::{CORE_OPTIONS, ENGINE_OPTIONS};
use super::options::OptDef;

/// The option families, each a module that owns its options' table, how
/// they are applied and how a job's values are rendered back as fio
/// options: what `lookup` searches. Adding an option is a line in its
/// family's `DEFS` and that family's apply and render.
static FAMILIES: &[&[OptDef]] = &[
    super::apply::DEFS,
    super::apply_ext::DEFS,
    super::apply_verify::DEFS,
    super::apply_prio::DEFS,
    super::apply_run::DEFS,
    super::apply_steady::DEFS,
    super::apply_zone::DEFS,
    super::apply_submit::DEFS,
    super::engine_mapped::DEFS,
];

/// fio's core options blkqos implements (its engine and profile options
/// aside), family by family.
pub(crate) fn core_defs() -> impl Iterator<Item = &'static OptDef> {
    FAMILIES.iter().flat_map(|f| f.iter())
}

/// What an option name refers to.
#[derive(Debug)]
pub(crate) enum Lookup {
    Supported(&'static OptDef),
    /// A fio 3.33 option (core, engine or profile) blkqos does not
    /// implement; carries the canonical name.
    Unsupported(&'static str),
    Unknown,
}

/// Finds an option by name or alias; names are case-sensitive (`o_match`).
pub(crate) fn lookup(name: &str) -> Lookup {
    if let Some(d) = core_defs()
        .chain(super::apply_ext::PROFILE_DEFS)
        .chain(super::engine_opts::DEFS)
        .find(|d| d.name == name || d.alias == Some(name))
    {
        return Lookup::Supported(d);
    }
    if let Some((canonical, _)) = CORE_OPTIONS
        .iter()
        .find(|(n, a)| *n == name || (!a.is_empty() && *a == name))
    {
        return Lookup::Unsupported(canonical);
    }
    match ENGINE_OPTIONS.binary_search(&name) {
        Ok(i) => Lookup::Unsupported(ENGINE_OPTIONS[i]),
        Err(_) => Lookup::Unknown,
    }
}

/// The option name closest to a misspelt `name` (fio's own options first,
/// then `extra`, e.g. the caller's flags): within two edits (Damerau-
/// Levenshtein) and less than half the name, as a "did you mean".
pub(crate) fn suggest(name: &str, extra: &[&str]) -> Option<String> {
    let names = core_defs()
        .flat_map(|d| std::iter::once(d.name).chain(d.alias))
        .chain(CORE_OPTIONS.iter().map(|(n, _)| *n))
        .chain(ENGINE_OPTIONS.iter().copied())
        .chain(
            extra
                .iter()
                .map(|f| f.trim_start_matches('-').trim_end_matches('?')),
        );
    let mut best: Option<(usize, &str)> = None;
    for cand in names {
        let d = strsim::damerau_levenshtein(name, cand);
        if d <= 2 && d * 2 < name.len() && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, cand));
        }
    }
    best.map(|(_, n)| n.to_string())
}

/// fio's sort priority of an option name (unknown names: 0).
pub(crate) fn prio(name: &str) -> i32 {
    match lookup(name) {
        Lookup::Supported(d) => d.prio,
        Lookup::Unsupported("lockfile" | "unit_base") => 1,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_tables_sorted() {
        assert!(CORE_OPTIONS.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(ENGINE_OPTIONS.windows(2).all(|w| w[0] < w[1]));
        // Every supported option is a real fio option.
        for d in core_defs() {
            assert!(
                CORE_OPTIONS
                    .iter()
                    .any(|(n, a)| *n == d.name && d.alias.unwrap_or("") == *a),
                "{} not in fio's table with that alias",
                d.name
            );
        }
    }

    #[test]
    fn suggestions() {
        assert_eq!(suggest("iodpeth", &[]).as_deref(), Some("iodepth"));
        assert_eq!(suggest("runtim", &[]).as_deref(), Some("runtime"));
        assert_eq!(suggest("directt", &[]).as_deref(), Some("direct"));
        assert_eq!(suggest("startdelya", &[]).as_deref(), Some("startdelay"));
        assert_eq!(suggest("io-mx", &["io-max"]).as_deref(), Some("io-max"));
        assert_eq!(suggest("xyzzy", &[]), None);
        assert_eq!(suggest("bq", &[]), None, "too short to guess");
    }

    #[test]
    fn lookup_kinds() {
        assert!(matches!(lookup("readwrite"), Lookup::Supported(d) if d.name == "rw"));
        assert!(matches!(lookup("blocksize"), Lookup::Supported(d) if d.name == "bs"));
        assert!(matches!(lookup("timeout"), Lookup::Supported(d) if d.name == "runtime"));
        assert!(
            matches!(lookup("wait_for_previous"), Lookup::Supported(d) if d.name == "stonewall")
        );
        assert!(matches!(
            lookup("startdelay"),
            Lookup::Supported(d) if d.name == "startdelay"
        ));
        assert!(
            matches!(lookup("iodepth_batch_submit"), Lookup::Supported(d) if d.name == "iodepth_batch")
        );
        assert!(matches!(
            lookup("iodepth_batch_complete"),
            Lookup::Unsupported("iodepth_batch_complete_min")
        ));
        assert!(
            matches!(lookup("ss_dur"), Lookup::Supported(d) if d.name == "steadystate_duration")
        );
        assert!(matches!(lookup("hipri"), Lookup::Supported(d) if d.name == "hipri"));
        assert!(matches!(lookup("readfua"), Lookup::Unsupported("readfua")));
        assert!(matches!(lookup("ratemin"), Lookup::Supported(d) if d.name == "rate_min"));
        assert_eq!(prio("filename_format"), -1);
        assert!(matches!(lookup("BS"), Lookup::Unknown));
        assert!(matches!(lookup("bogus"), Lookup::Unknown));
        assert_eq!(prio("kb_base"), 1);
        assert_eq!(prio("filename"), -1);
        assert_eq!(prio("bs"), 0);
    }
}
