//! Applying the zone options: `zonemode`, `zonesize`, `zonerange`,
//! `zoneskip`, and zbd's `zonecapacity`, `max_open_zones`,
//! `job_max_open_zones`, `ignore_zone_limits`, `zone_reset_threshold`,
//! `zone_reset_frequency`, `read_beyond_wp` (fio 3.33 `options.c`, and
//! the checks of `init.c: fixup_options`).

use blkqos_workload::spec::{JobSpec, RwSeq};
use blkqos_workload::spec_zone::{ZoneBytes, ZoneMode};
use blkqos_workload::Ddir;

use super::options::{pieces, Kind, Opt, OptDef};
use super::state::JobState;
use super::units::{parse_count, parse_float, parse_plain_int, parse_size, SizeValue};

/// Zones (`zonemode=strided` and `zbd`).
pub(crate) static DEFS: &[OptDef] = &[
    OptDef::new("zonemode", Kind::Str, Opt::ZoneMode, apply),
    OptDef::new("zonesize", Kind::StrVal, Opt::ZoneSize, apply),
    OptDef::new("zonerange", Kind::StrVal, Opt::ZoneRange, apply),
    OptDef::new("zoneskip", Kind::StrVal, Opt::ZoneSkip, apply),
    OptDef::new("zonecapacity", Kind::StrVal, Opt::ZoneCapacity, apply),
    OptDef::new("max_open_zones", Kind::Int, Opt::MaxOpenZones, apply),
    OptDef::new("job_max_open_zones", Kind::Int, Opt::JobMaxOpenZones, apply),
    OptDef::new(
        "ignore_zone_limits",
        Kind::Bool,
        Opt::IgnoreZoneLimits,
        apply,
    ),
    OptDef::new(
        "zone_reset_threshold",
        Kind::FloatList,
        Opt::ZoneResetThreshold,
        apply,
    ),
    OptDef::new(
        "zone_reset_frequency",
        Kind::FloatList,
        Opt::ZoneResetFrequency,
        apply,
    ),
    OptDef::new("read_beyond_wp", Kind::Bool, Opt::ReadBeyondWp, apply),
];

/// Applies `value` when `def` is one of the options this module owns;
/// `None` for the others.
pub(crate) fn apply(st: &mut JobState, def: &OptDef, value: Option<&str>) -> Result<(), String> {
    let Some(v) = value else {
        return Err(format!("Option {} requires an argument", def.name));
    };
    let kb = st.spec.kb_base;
    let z = &mut st.spec.zones;
    match def.opt {
        Opt::ZoneMode => {
            z.mode = parse_mode(v)?;
            z.mode_given = true;
        }
        Opt::ZoneSize => z.size_bytes = bytes(v, kb)?,
        Opt::ZoneRange => z.range_bytes = bytes(v, kb)?,
        Opt::ZoneCapacity => z.capacity_bytes = bytes(v, kb)?,
        // FIO_OPT_INT, maxval ZBD_MAX_OPEN_ZONES
        Opt::MaxOpenZones => z.max_open_zones = open_zones(v, kb)?,
        Opt::JobMaxOpenZones => z.job_max_open_zones = open_zones(v, kb)?,
        Opt::IgnoreZoneLimits => z.ignore_zone_limits = boolean(v)?,
        Opt::ReadBeyondWp => z.read_beyond_wp = boolean(v)?,
        // FIO_OPT_FLOAT_LIST, maxlen 1, minfp 0, maxfp 1
        Opt::ZoneResetThreshold => z.reset_threshold = fraction(v)?,
        Opt::ZoneResetFrequency => z.reset_frequency = fraction(v)?,
        _ => z.skip = zone_bytes(v, kb)?,
    }
    Ok(())
}

fn parse_mode(v: &str) -> Result<ZoneMode, String> {
    match v {
        "none" => Ok(ZoneMode::None),
        "strided" => Ok(ZoneMode::Strided),
        "zbd" => Ok(ZoneMode::Zbd),
        _ => Err(format!(
            "invalid value `{v}` (valid values: none, strided, zbd)"
        )),
    }
}

fn open_zones(v: &str, kb: u32) -> Result<u32, String> {
    let n = parse_count(one(v)?, kb)?;
    let max = u64::from(blkqos_workload::zbd::ZBD_MAX_OPEN_ZONES);
    if n > max {
        return Err(format!("max value out of range: {n} ({max} max)"));
    }
    Ok(n as u32)
}

fn boolean(v: &str) -> Result<bool, String> {
    match parse_plain_int(one(v)?)? {
        0 => Ok(false),
        1 => Ok(true),
        n => Err(format!("max value out of range: {n} (1 max)")),
    }
}

fn fraction(v: &str) -> Result<f64, String> {
    let f = match pieces(Kind::FloatList, v).as_slice() {
        [p] => parse_float(p)?,
        _ => return Err("this option takes a single value".into()),
    };
    if !(0.0..=1.0).contains(&f) {
        return Err(format!("value out of range: {f} (0 to 1)"));
    }
    Ok(f)
}

/// `size=Nz` / `offset=Nz` (`FIO_OPT_STR_VAL_ZONE`): the number of
/// zones, or `None` for a plain size.
pub(crate) fn zones_of(v: &str) -> Result<Option<u64>, String> {
    let t = v.trim();
    let Some(n) = t.strip_suffix('z').or_else(|| t.strip_suffix('Z')) else {
        return Ok(None);
    };
    n.trim()
        .parse::<u64>()
        .map(Some)
        .map_err(|_| format!("`{v}` is not a number of zones (Nz)"))
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

/// `size=Nz`, `offset=Nz` in bytes (fio
/// `zbd_recalc_options_with_zone_granularity`, with the job's zonesize).
fn resolve_zone_counts(s: &mut JobSpec) -> Result<(), String> {
    let z = &s.zones;
    if z.size_nz == 0 && z.offset_nz == 0 {
        return Ok(());
    }
    if z.size_bytes == 0 {
        return Err(
            "size=Nz / offset=Nz count zones of zonesize: give zonesize= (the device's zone size)"
                .into(),
        );
    }
    let zs = z.size_bytes;
    if z.size_nz > 0 {
        s.size = Some(blkqos_workload::SizeSpec::Bytes(
            z.size_nz.saturating_mul(zs),
        ));
    }
    if z.offset_nz > 0 {
        s.offset = blkqos_workload::SizeSpec::Bytes(z.offset_nz.saturating_mul(zs));
    }
    // resolved: the job is the same as one given in bytes
    s.zones.size_nz = 0;
    s.zones.offset_nz = 0;
    Ok(())
}

/// What fio checks of a zbd job before it runs (`zbd_using_direct_io`,
/// `zbd_verify_bs`), and the combinations blkqos does not run.
fn zbd_checks(s: &mut JobSpec) -> Result<(), String> {
    let z = &s.zones;
    // fio zbd_using_direct_io: only a block device's writes (io_uring_cmd
    // drives the NVMe character device)
    if s.rw.has_write() && !s.direct && s.ioengine != blkqos_workload::IoEngine::IoUringCmd {
        return Err("Using direct I/O is mandatory for writing to ZBD drives".into());
    }
    if s.rw.has_trim() {
        let ranged = s.bsrange.is_some_and(|r| {
            let (lo, hi) = r.get(Ddir::Trim);
            lo != hi
        });
        if ranged
            || s.bssplit
                .as_ref()
                .is_some_and(|b| !b[Ddir::Trim].is_empty())
        {
            return Err("bsrange and bssplit are not allowed for trim with zonemode=zbd".into());
        }
        if z.size_bytes > 0 && s.bs.get(Ddir::Trim) != z.size_bytes {
            return Err(format!(
                "trim block size {} is not the zone size {}",
                s.bs.get(Ddir::Trim),
                z.size_bytes
            ));
        }
    }
    if s.verify.logs_writes() && z.size_bytes > 0 {
        for d in Ddir::ALL {
            if !z.size_bytes.is_multiple_of(s.bs.get(d).max(1)) {
                return Err(format!(
                    "block size {} is not a divisor of the zone size {}",
                    s.bs.get(d),
                    z.size_bytes
                ));
            }
        }
    }
    if z.capacity_bytes > 0 {
        // fio init_zone_info uses it only where it emulates zones
        s.notes.push(
            "zonecapacity has no effect on a zoned device: fio takes each zone's capacity from \
             the device (on the simulator: zone_capacity= of --device=null,zoned=1)"
                .into(),
        );
    }
    let unsupported = |what: &str| {
        Err(format!(
            "zonemode=zbd with {what} is not supported: leave it out"
        ))
    };
    if z.skip != ZoneBytes::default() {
        return unsupported("zoneskip (sequential zone skipping)");
    }
    if s.files.is_multi(s.filename.as_deref()) {
        return unsupported("several files (blkqos runs one zoned device)");
    }
    if matches!(s.rw_seq, RwSeq::Add(_)) {
        return unsupported("an rw=X:N offset step");
    }
    if s.verify.logs_writes() && (s.loops > 1 || z.reset_frequency > 0.0) {
        // fio resets the zones only when the file is set up, and asserts
        // that no zone is reset while it verifies
        return unsupported("verify and loops>1 or zone_reset_frequency");
    }
    Ok(())
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
    resolve_zone_counts(s)?;
    if s.zones.mode == ZoneMode::Zbd {
        zbd_checks(s)?;
    }
    let z = &mut s.zones;
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

/// The zone options of a job back as fio options (`to_fio_args`).
pub(crate) fn render(j: &JobSpec, push: &mut impl FnMut(&str, String)) {
    let z = &j.zones;
    if z.mode_given {
        let m = match z.mode {
            ZoneMode::None => "none",
            ZoneMode::Strided => "strided",
            ZoneMode::Zbd => "zbd",
        };
        push("zonemode", m.into());
    }
    if z.capacity_bytes > 0 {
        push("zonecapacity", z.capacity_bytes.to_string());
    }
    if z.max_open_zones > 0 {
        push("max_open_zones", z.max_open_zones.to_string());
    }
    if z.job_max_open_zones > 0 {
        push("job_max_open_zones", z.job_max_open_zones.to_string());
    }
    if z.ignore_zone_limits {
        push("ignore_zone_limits", "1".into());
    }
    if z.reset_frequency > 0.0 {
        push("zone_reset_frequency", z.reset_frequency.to_string());
    }
    if z.reset_threshold > 0.0 {
        push("zone_reset_threshold", z.reset_threshold.to_string());
    }
    if z.read_beyond_wp {
        push("read_beyond_wp", "1".into());
    }
    if z.size_bytes > 0 {
        push("zonesize", z.size_bytes.to_string());
    }
    if z.range_bytes > 0 {
        push("zonerange", z.range_bytes.to_string());
    }
    match z.skip {
        ZoneBytes::Bytes(0) => {}
        ZoneBytes::Bytes(b) => push("zoneskip", b.to_string()),
        ZoneBytes::Zones(n) => push("zoneskip", format!("{n}z")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::registry::{lookup, Lookup};

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
    fn zbd_options() {
        let s = with(&[
            ("zonemode", "zbd"),
            ("zonesize", "256m"),
            ("max_open_zones", "32"),
            ("job_max_open_zones", "4"),
            ("zone_reset_threshold", "0.7"),
            ("zone_reset_frequency", "0.125"),
            ("read_beyond_wp", "1"),
            ("ignore_zone_limits", "1"),
            ("direct", "1"),
            ("rw", "randwrite"),
            ("offset", "524z"),
            ("size", "8z"),
        ])
        .unwrap();
        let z = &s.zones;
        assert_eq!(z.mode, ZoneMode::Zbd);
        assert_eq!((z.max_open_zones, z.job_max_open_zones), (32, 4));
        assert_eq!((z.reset_threshold, z.reset_frequency), (0.7, 0.125));
        assert!(z.read_beyond_wp && z.ignore_zone_limits);
        // fio zbd_recalc_options_with_zone_granularity
        assert_eq!((z.size_nz, z.offset_nz), (0, 0), "resolved");
        assert_eq!(s.offset, blkqos_workload::SizeSpec::Bytes(524 << 28));
        assert_eq!(s.size, Some(blkqos_workload::SizeSpec::Bytes(8 << 28)));
        for (o, v) in [
            ("zone_reset_threshold", "1.5"),
            ("zone_reset_frequency", "-0.1"),
            ("max_open_zones", "4097"),
            ("read_beyond_wp", "2"),
        ] {
            assert!(with(&[(o, v)]).is_err(), "{o}={v}");
        }
        // zones without a zone size
        let e = with(&[("zonemode", "zbd"), ("size", "2z")]).unwrap_err();
        assert!(e.contains("give zonesize="), "{e}");
        let e = with(&[("zonemode", "zbd"), ("rw", "write")]).unwrap_err();
        assert!(e.contains("direct I/O is mandatory"), "{e}");
        let e = with(&[
            ("zonemode", "zbd"),
            ("zonesize", "4m"),
            ("rw", "trim"),
            ("bs", "1m"),
        ])
        .unwrap_err();
        assert!(
            e.contains("trim block size 1048576 is not the zone size"),
            "{e}"
        );
        let e = with(&[("zonemode", "zbd"), ("zoneskip", "1z")]).unwrap_err();
        assert!(e.contains("zoneskip"), "{e}");
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
