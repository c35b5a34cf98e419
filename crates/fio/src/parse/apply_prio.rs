//! IO priorities and CPU placement: `prio`, `prioclass`, `log_prio`,
//! `nice`, `cpus_allowed`, `cpumask`, `cpus_allowed_policy`,
//! `numa_cpu_nodes`, `numa_mem_policy` (fio 3.33 `options.c`), and the
//! io_uring/libaio engines' `cmdprio_percentage`, `cmdprio_class`,
//! `cmdprio`, `cmdprio_bssplit` (`engines/cmdprio.c`,
//! `parse_cmdprio_bssplit_entry`, `split_parse_prio_ddir`). The options
//! are kept as given while the job is parsed and resolved into
//! [`PrioSpec`] by [`finish`], as fio resolves them when the job starts
//! (`thread_main`'s `ioprio_set`, `fio_cmdprio_init`).

use blkqos_workload::prio::{
    ioprio_value, BsPrio, CmdPrio, PrioSpec, CMDPRIO_BSSPLIT_MAX, IOPRIO_CLASS_BE, IOPRIO_CLASS_RT,
    IOPRIO_MAX_CLASS, IOPRIO_MAX_LEVEL,
};
use blkqos_workload::spec_cpu::{parse_cpu_list, parse_cpu_mask, parse_mem_policy, CpusPolicy};

use super::options::{Kind, Opt, OptDef};
use super::state::{JobState, PrioGiven};
use super::units::{parse_count, parse_plain_int};

/// IO priorities and CPU placement.
pub(crate) static DEFS: &[OptDef] = &[
    OptDef::new("prio", Kind::Int, Opt::Prio, apply),
    OptDef::new("prioclass", Kind::Int, Opt::PrioClass, apply),
    OptDef::new("log_prio", Kind::Bool, Opt::LogPrio, apply),
    OptDef::new("nice", Kind::Int, Opt::Nice, apply),
    OptDef::new("cpus_allowed", Kind::Str, Opt::CpusAllowed, apply),
    OptDef::new("cpumask", Kind::Int, Opt::CpuMask, apply),
    // fio: FIO_OPT_C_GENERAL prio 1 (before cpus_allowed)
    OptDef::new(
        "cpus_allowed_policy",
        Kind::Str,
        Opt::CpusAllowedPolicy,
        apply,
    )
    .prio(1),
    OptDef::new("numa_cpu_nodes", Kind::Str, Opt::NumaCpuNodes, apply),
    OptDef::new("numa_mem_policy", Kind::Str, Opt::NumaMemPolicy, apply),
];

/// Applies a core option this module owns; `None` for the others.
pub(crate) fn apply(st: &mut JobState, def: &OptDef, value: Option<&str>) -> Result<(), String> {
    let opt = def.opt;
    let Some(v) = value else {
        return Err(format!("Option {} requires an argument", def.name));
    };
    let cpu = &mut st.spec.cpu;
    match opt {
        Opt::Prio => st.prio.prio = Some(int_in(v, 0, IOPRIO_MAX_LEVEL)?),
        Opt::PrioClass => st.prio.prioclass = Some(int_in(v, 0, IOPRIO_MAX_CLASS)?),
        Opt::LogPrio => st.spec.prio.log_prio = parse_plain_int(v)? != 0,
        Opt::Nice => {
            let n: i32 = v
                .trim()
                .parse()
                .map_err(|_| format!("invalid integer `{v}`"))?;
            if !(-20..=19).contains(&n) {
                return Err(format!("nice={n} out of range (-20 to 19)"));
            }
            cpu.nice = Some(n);
        }
        Opt::CpusAllowed => cpu.cpus_allowed = Some(parse_cpu_list(v)?),
        Opt::CpuMask => cpu.cpus_allowed = Some(parse_cpu_mask(v)?),
        Opt::CpusAllowedPolicy => {
            cpu.cpus_policy = match v.trim() {
                "shared" => CpusPolicy::Shared,
                "split" => CpusPolicy::Split,
                o => return Err(format!("invalid value `{o}` (valid values: shared, split)")),
            }
        }
        Opt::NumaCpuNodes => cpu.numa_cpu_nodes = Some(parse_cpu_list(v)?),
        _ => cpu.numa_mem_policy = Some(parse_mem_policy(v)?),
    }
    Ok(())
}

fn int_in(v: &str, lo: u16, hi: u16) -> Result<u16, String> {
    let n = parse_plain_int(v)?;
    if n < u64::from(lo) || n > u64::from(hi) {
        return Err(format!("value {n} out of range ({lo} to {hi})"));
    }
    Ok(n as u16)
}

/// A per-direction integer option (`FIO_OPT_INT` with a read and a write
/// value): `R` for both, or `R,W`.
fn per_dir(v: &str, lo: u16, hi: u16) -> Result<[u16; 2], String> {
    let parts: Vec<&str> = v.split(',').collect();
    let r = int_in(parts[0], lo, hi)?;
    let w = match parts.get(1) {
        Some(w) if !w.trim().is_empty() => int_in(w, lo, hi)?,
        _ => r,
    };
    Ok([r, w])
}

/// Applies one of the engines' cmdprio options; whether it asks for
/// something.
pub(crate) fn apply_engine(st: &mut JobState, name: &str, v: &str) -> Result<bool, String> {
    let p = &mut st.prio;
    Ok(match name {
        "cmdprio_percentage" => {
            let [r, w] = per_dir(v, 0, 100)?;
            p.percentage = [u32::from(r), u32::from(w)];
            r > 0 || w > 0
        }
        "cmdprio_class" => {
            p.class = per_dir(v, 1, IOPRIO_MAX_CLASS)?;
            true
        }
        "cmdprio" => {
            p.level = per_dir(v, 0, IOPRIO_MAX_LEVEL)?;
            true
        }
        _ => {
            // checked when the job is complete (the implicit class and
            // level come from cmdprio_class and cmdprio)
            parse_bssplit(v, 1024, [0, 0])?;
            p.bssplit = Some(v.to_string());
            !v.trim().is_empty()
        }
    })
}

/// One `cmdprio_bssplit` entry: `(bs, percent, ioprio or None for the
/// implicit one, more fields given)` (`parse_cmdprio_bssplit_entry`:
/// `sscanf("%m[^/]/%u/%u/%u")`, so `bs/perc/class/level` and anything
/// after a fourth field is not read).
fn parse_entry(e: &str, kb: u32) -> Result<(u64, u32, Option<u16>, bool), String> {
    let fields: Vec<&str> = e.split('/').collect();
    let bs = parse_count(fields[0], kb)?;
    let mut nums = Vec::new();
    for f in &fields[1..] {
        match f.trim().parse::<u32>() {
            Ok(n) if nums.len() < 3 => nums.push(n),
            Ok(_) => break,
            Err(_) => break,
        }
    }
    let perc = nums.first().copied().unwrap_or(0).min(100);
    match nums.len() {
        0 | 1 => Ok((bs, perc, None, false)),
        3 => {
            let class = (nums[1] as u16).min(IOPRIO_MAX_CLASS);
            let level = (nums[2] as u16).min(IOPRIO_MAX_LEVEL);
            Ok((bs, perc, Some(ioprio_value(class, level)), fields.len() > 4))
        }
        _ => Err(format!(
            "invalid cmdprio_bssplit format in `{e}` (fio 3.33 takes bs/percent or \
             bs/percent/class/level)"
        )),
    }
}

/// `cmdprio_bssplit=` per read and write (a trim list is ignored, as
/// fio's `fio_cmdprio_bssplit_ddir` does): zero-percent entries dropped,
/// sorted by block size, entries of one size grouped; and whether some
/// entry had fields past the fourth.
fn parse_bssplit(v: &str, kb: u32, implicit: [u16; 2]) -> Result<([Vec<BsPrio>; 2], bool), String> {
    let lists: Vec<&str> = v.trim().split(',').collect();
    if lists.len() > 3 {
        return Err("at most three lists (read,write,trim)".into());
    }
    let mut out: [Vec<BsPrio>; 2] = Default::default();
    let mut extra = false;
    for (d, slot) in out.iter_mut().enumerate() {
        let list = lists.get(d).or(lists.last()).copied().unwrap_or("");
        let items: Vec<&str> = list.split(':').take_while(|i| !i.is_empty()).collect();
        if items.len() > CMDPRIO_BSSPLIT_MAX {
            return Err("too many cmdprio_bssplit entries".into());
        }
        let mut entries = Vec::new();
        for item in items {
            let (bs, perc, prio, more) = parse_entry(item, kb)?;
            extra |= more;
            if perc > 0 {
                entries.push((bs, perc, prio.unwrap_or(implicit[d])));
            }
        }
        entries.sort_by_key(|e| e.0);
        for (bs, perc, prio) in entries {
            match slot.last_mut() {
                Some(b) if b.bs == bs => b.prios.push((perc, prio)),
                _ => slot.push(BsPrio {
                    bs,
                    prios: vec![(perc, prio)],
                }),
            }
        }
        for b in slot.iter() {
            if b.total_percent() > 100 {
                return Err(format!(
                    "cmdprio_bssplit total percentage for bs: {} exceeds 100",
                    b.bs
                ));
            }
        }
    }
    Ok((out, extra))
}

/// Resolves the job's priorities (fio `thread_main`: `td->ioprio` from
/// `prio`/`prioclass`, the class defaulting to best effort;
/// `fio_cmdprio_init`: `cmdprio_class` defaulting to real time).
pub(crate) fn finish(
    given: &PrioGiven,
    spec: &mut PrioSpec,
    kb: u32,
) -> Result<Option<String>, String> {
    spec.ioprio = if given.prio.is_some() || given.prioclass.is_some() {
        let class = match given.prioclass.unwrap_or(0) {
            0 => IOPRIO_CLASS_BE,
            c => c,
        };
        ioprio_value(class, given.prio.unwrap_or(0))
    } else {
        0
    };
    let class = given
        .class
        .map(|c| if c == 0 { IOPRIO_CLASS_RT } else { c });
    let implicit = [
        ioprio_value(class[0], given.level[0]),
        ioprio_value(class[1], given.level[1]),
    ];
    let bssplit = given.bssplit.as_deref().filter(|b| !b.trim().is_empty());
    let has_perc = given.percentage.iter().any(|&p| p > 0);
    if has_perc && bssplit.is_some() {
        return Err(
            "cmdprio_percentage and cmdprio_bssplit options are mutually exclusive \
                    (fio 3.33 fails the engine's init with EINVAL)"
                .into(),
        );
    }
    let mut note = None;
    if let Some(b) = bssplit {
        let (split, extra) = parse_bssplit(b, kb, implicit)?;
        let [r, w] = split;
        spec.cmdprio = [mode(r), mode(w)];
        if extra {
            note = Some(format!(
                "cmdprio_bssplit={b}: fio 3.33 reads bs/percent/class/level and ignores \
                 any further field (the priority hint of later fio versions), as here: \
                 no hint is sent"
            ));
        }
    } else if has_perc {
        spec.cmdprio = [0, 1].map(|d| {
            if given.percentage[d] == 0 {
                CmdPrio::None
            } else {
                CmdPrio::Percentage {
                    percent: given.percentage[d],
                    ioprio: implicit[d],
                }
            }
        });
    }
    Ok(note)
}

/// The simulator's notes for the CPU placement options: it models no
/// CPUs, no scheduler and no NUMA memory, so they change nothing there;
/// the real engine applies them to its thread.
pub(crate) fn cpu_notes(s: &mut blkqos_workload::JobSpec) {
    let c = &s.cpu;
    let mut asked = Vec::new();
    if let Some(n) = c.nice {
        asked.push(format!("nice={n}"));
    }
    if c.cpus_allowed.is_some() {
        asked.push("cpus_allowed/cpumask".to_string());
    }
    if c.cpus_policy == CpusPolicy::Split {
        asked.push("cpus_allowed_policy=split".to_string());
    }
    if c.numa_cpu_nodes.is_some() {
        asked.push("numa_cpu_nodes".to_string());
    }
    if let Some(p) = &c.numa_mem_policy {
        asked.push(format!("numa_mem_policy={}", p.mode.fio_name()));
    }
    if asked.is_empty() {
        return;
    }
    s.notes.push(format!(
        "{} (simulator: no effect): the simulator models no CPUs, CPU scheduler or NUMA memory, so where and at what priority the job's thread runs changes nothing it shows; the real engine applies them to its thread (setpriority, sched_setaffinity, set_mempolicy)",
        asked.join(", ")
    ));
}

/// The options that give `j`'s priorities and placement back (for
/// `to_fio_args`): cmdprio_bssplit in its four-field form.
pub(crate) fn render(j: &blkqos_workload::JobSpec, push: &mut impl FnMut(&str, String)) {
    use blkqos_workload::prio::{ioprio_class, ioprio_level};
    let p = &j.prio;
    if p.ioprio != 0 {
        push("prioclass", ioprio_class(p.ioprio).to_string());
        push("prio", ioprio_level(p.ioprio).to_string());
    }
    if p.log_prio {
        push("log_prio", "1".into());
    }
    match &p.cmdprio {
        [CmdPrio::None, CmdPrio::None] => {}
        [a, b] if matches!(a, CmdPrio::BsSplit(_)) || matches!(b, CmdPrio::BsSplit(_)) => {
            let list = |c: &CmdPrio| match c {
                CmdPrio::BsSplit(split) => split
                    .iter()
                    .flat_map(|e| {
                        e.prios.iter().map(move |&(perc, v)| {
                            format!("{}/{perc}/{}/{}", e.bs, ioprio_class(v), ioprio_level(v))
                        })
                    })
                    .collect::<Vec<_>>()
                    .join(":"),
                _ => "4096/0".into(),
            };
            push("cmdprio_bssplit", format!("{},{}", list(a), list(b)));
        }
        both => {
            let get = |c: &CmdPrio| match c {
                CmdPrio::Percentage { percent, ioprio } => (*percent, *ioprio),
                _ => (0, ioprio_value(IOPRIO_CLASS_RT, 0)),
            };
            let (r, w) = (get(&both[0]), get(&both[1]));
            push("cmdprio_percentage", format!("{},{}", r.0, w.0));
            push(
                "cmdprio_class",
                format!("{},{}", ioprio_class(r.1), ioprio_class(w.1)),
            );
            push(
                "cmdprio",
                format!("{},{}", ioprio_level(r.1), ioprio_level(w.1)),
            );
        }
    }
    let c = &j.cpu;
    let list = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
    if let Some(n) = c.nice {
        push("nice", n.to_string());
    }
    if let Some(cpus) = &c.cpus_allowed {
        push("cpus_allowed", list(cpus));
    }
    if c.cpus_policy == CpusPolicy::Split {
        push("cpus_allowed_policy", "split".into());
    }
    if let Some(nodes) = &c.numa_cpu_nodes {
        push("numa_cpu_nodes", list(nodes));
    }
    if let Some(m) = &c.numa_mem_policy {
        let v = if m.nodes.is_empty() {
            m.mode.fio_name().to_string()
        } else {
            format!("{}:{}", m.mode.fio_name(), list(&m.nodes))
        };
        push("numa_mem_policy", v);
    }
    if j.engine.hipri {
        push("hipri", "1".into());
    }
}

fn mode(split: Vec<BsPrio>) -> CmdPrio {
    if split.is_empty() {
        CmdPrio::None
    } else {
        CmdPrio::BsSplit(split)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn given(bssplit: &str) -> PrioGiven {
        PrioGiven {
            bssplit: Some(bssplit.into()),
            ..PrioGiven::default()
        }
    }

    #[test]
    fn simple_and_advanced_bssplit() {
        // cmdprio-bssplit.fio's [cmdprio]: cmdprio_class=1, cmdprio=0
        let mut spec = PrioSpec::default();
        let mut g = given("64k/100:1024k/0,1024k/0");
        g.class = [1, 1];
        finish(&g, &mut spec, 1024).unwrap();
        assert_eq!(
            spec.cmdprio[0],
            CmdPrio::BsSplit(vec![BsPrio {
                bs: 65536,
                prios: vec![(100, 0x2000)]
            }])
        );
        assert_eq!(spec.cmdprio[1], CmdPrio::None);
        // [cmdprio-adv-def]: prioclass=2, prio=7
        let mut g = given("64k/25/1/1:64k/75/3/2:1024k/0,1024k/0");
        g.prio = Some(7);
        g.prioclass = Some(2);
        finish(&g, &mut spec, 1024).unwrap();
        assert_eq!(spec.ioprio, 0x4007);
        assert_eq!(
            spec.clat_prios(blkqos_workload::Ddir::Read),
            vec![0x4007, 0x2001, 0x6002]
        );
    }

    #[test]
    fn fio_3_33_reads_four_fields() {
        let mut spec = PrioSpec::default();
        let note = finish(
            &given("1M/10/2/0/1:1M/30/2/0/2:1M/60/2/0/0:2M/10/2/0/3:2M/90/2/0/0"),
            &mut spec,
            1024,
        )
        .unwrap();
        assert!(note.unwrap().contains("ignores"));
        assert_eq!(
            spec.clat_prios(blkqos_workload::Ddir::Read),
            vec![0, 0x4000]
        );
        assert!(finish(&given("4k/10/1"), &mut spec, 1024).is_err());
        assert!(finish(&given("4k/60:4k/50/1/1"), &mut spec, 1024)
            .unwrap_err()
            .contains("exceeds 100"));
    }

    #[test]
    fn job_priority_and_class_defaults() {
        let mut spec = PrioSpec::default();
        let g = PrioGiven {
            prio: Some(5),
            percentage: [20, 20],
            ..PrioGiven::default()
        };
        finish(&g, &mut spec, 1024).unwrap();
        assert_eq!(
            spec.ioprio, 0x4005,
            "class best effort when only prio is given"
        );
        assert_eq!(
            spec.cmdprio[1],
            CmdPrio::Percentage {
                percent: 20,
                ioprio: 0x2000
            },
            "cmdprio_class defaults to real time"
        );
        let g = PrioGiven {
            percentage: [20, 0],
            bssplit: Some("4k/10".into()),
            ..PrioGiven::default()
        };
        assert!(finish(&g, &mut spec, 1024)
            .unwrap_err()
            .contains("mutually exclusive"));
        assert_eq!(per_dir("50,20", 0, 100).unwrap(), [50, 20]);
        assert!(per_dir("101", 0, 100).is_err());
    }
}
