//! Applying the zone options: `zonemode`, `zonesize`, `zonerange`,
//! `zoneskip` (fio 3.33 `options.c`, and the checks of `init.c:
//! fixup_options`).

use blkqos_workload::spec::{JobSpec, RwSeq};
use blkqos_workload::spec_zone::{ZoneBytes, ZoneMode};

use super::options::{pieces, Kind, Opt, OptDef};
use super::state::JobState;
use super::units::{parse_size, SizeValue};

/// Applies `value` when `def` is one of the options this module owns;
/// `None` for the others.
pub(crate) fn apply(
    st: &mut JobState,
    def: &OptDef,
    value: Option<&str>,
) -> Option<Result<(), String>> {
    if !matches!(
        def.opt,
        Opt::ZoneMode | Opt::ZoneSize | Opt::ZoneRange | Opt::ZoneSkip
    ) {
        return None;
    }
    let Some(v) = value else {
        return Some(Err(format!("Option {} requires an argument", def.name)));
    };
    let kb = st.spec.kb_base;
    let z = &mut st.spec.zones;
    Some((|| {
        match def.opt {
            Opt::ZoneMode => {
                z.mode = parse_mode(v)?;
                z.mode_given = true;
            }
            Opt::ZoneSize => z.size_bytes = bytes(v, kb)?,
            Opt::ZoneRange => z.range_bytes = bytes(v, kb)?,
            _ => z.skip = zone_bytes(v, kb)?,
        }
        Ok(())
    })())
}

fn parse_mode(v: &str) -> Result<ZoneMode, String> {
    match v {
        "none" => Ok(ZoneMode::None),
        "strided" => Ok(ZoneMode::Strided),
        "zbd" => Err(
            "unsupported zonemode `zbd` (fio's zoned block device mode: fio tracks each \
             zone's write pointer, opens and resets zones): use zonemode=strided, or \
             sequential writes without zonemode on a simulated zoned device \
             (--device=null,zoned=1,zone_size=MiB)"
                .into(),
        ),
        _ => Err(format!(
            "invalid value `{v}` (valid values: none, strided, zbd)"
        )),
    }
}

/// The one piece of a size value (fio would keep part of a list).
fn one(v: &str) -> Result<&str, String> {
    if v.trim_start().starts_with('-') {
        return Err("negative values are not allowed".into());
    }
    match pieces(Kind::StrVal, v).as_slice() {
        [p] => Ok(p),
        _ => Err("this option takes a single value".into()),
    }
}

fn bytes(v: &str, kb: u32) -> Result<u64, String> {
    match parse_size(one(v)?, kb)? {
        SizeValue::Bytes(b) => Ok(b),
        SizeValue::Percent(_) => Err("a percentage is not a valid value here".into()),
    }
}

/// `FIO_OPT_STR_VAL_ZONE`: bytes, or `Nz` zones.
fn zone_bytes(v: &str, kb: u32) -> Result<ZoneBytes, String> {
    let p = one(v)?;
    if let Some(n) = p.strip_suffix('z') {
        let n = n
            .trim()
            .parse::<u64>()
            .map_err(|_| format!("`{p}` is not a number of zones (Nz)"))?;
        return Ok(ZoneBytes::Zones(n));
    }
    bytes(p, kb).map(ZoneBytes::Bytes)
}

/// fio `fixup_options`' zone checks, with fio's wording, and the
/// combinations blkqos does not run.
pub(crate) fn fixup(s: &mut JobSpec) -> Result<(), String> {
    let z = &mut s.zones;
    if z.mode == ZoneMode::None && z.size_bytes > 0 {
        return Err("--zonemode=none and --zonesize are not compatible.".into());
    }
    if z.mode == ZoneMode::Strided && z.size_bytes == 0 {
        return Err("--zonesize must be specified when using --zonemode=strided.".into());
    }
    if !z.mode_given && (z.range_bytes > 0 || z.skip != ZoneBytes::default()) {
        s.notes
            .push("zonerange/zoneskip without zonemode have no effect (as in fio)".into());
    }
    if z.mode == ZoneMode::Strided {
        if s.files.is_multi(s.filename.as_deref()) {
            return Err(
                "zonemode=strided with several files is not supported: give the job one file"
                    .into(),
            );
        }
        if matches!(s.rw_seq, RwSeq::Add(_)) {
            return Err(
                "zonemode=strided with an rw=X:N offset step is not supported: drop the step"
                    .into(),
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::options::{lookup, Lookup};

    fn with(opts: &[(&str, &str)]) -> Result<JobSpec, String> {
        let mut st = JobState::new();
        for (n, v) in opts {
            match lookup(n) {
                Lookup::Supported(d) => super::super::apply::apply(&mut st, d, Some(v))?,
                other => panic!("{n}: {other:?}"),
            }
        }
        let mut s = st.spec;
        fixup(&mut s)?;
        Ok(s)
    }

    #[test]
    fn strided_options() {
        let s = with(&[
            ("zonemode", "strided"),
            ("zonesize", "256m"),
            ("zoneskip", "2g"),
        ])
        .unwrap();
        let z = &s.zones;
        assert_eq!(z.mode, ZoneMode::Strided);
        assert_eq!((z.size_bytes, z.range()), (256 << 20, 256 << 20));
        assert_eq!(z.skip.bytes(z.size_bytes), 2 << 30);
        let s = with(&[
            ("zonemode", "strided"),
            ("zonesize", "1m"),
            ("zonerange", "4m"),
            ("zoneskip", "2z"),
        ])
        .unwrap();
        assert_eq!(s.zones.range(), 4 << 20);
        assert_eq!(s.zones.skip.bytes(s.zones.size_bytes), 2 << 20);
    }

    #[test]
    fn fio_refusals() {
        let e = with(&[("zonesize", "1m")]).unwrap_err();
        assert_eq!(e, "--zonemode=none and --zonesize are not compatible.");
        let e = with(&[("zonemode", "strided")]).unwrap_err();
        assert!(e.contains("--zonesize must be specified"), "{e}");
        assert!(with(&[("zonemode", "bogus")]).is_err());
        assert!(with(&[("zonesize", "-1")]).is_err());
        assert!(with(&[("zoneskip", "xz")]).is_err());
        let e = with(&[
            ("zonemode", "strided"),
            ("zonesize", "1m"),
            ("rw", "read:4k"),
        ]);
        assert!(e.unwrap_err().contains("offset step"));
    }
}
