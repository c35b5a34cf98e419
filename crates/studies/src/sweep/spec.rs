//! What a sweep varies: `--vary TARGET=VALUES`.
//!
//! A target is a field of a cgroupfs knob line, a whole knob value, a
//! simulated device parameter or a controller option:
//!
//! | target | example | what a point changes |
//! |---|---|---|
//! | `io.cost.qos:F` | `io.cost.qos:rlat` | field F of the root's io.cost.qos line (enable, ctrl, rpct, rlat, wpct, wlat, min, max) |
//! | `io.cost.model:F` | `io.cost.model:rrandiops` | field F of the root's io.cost.model line |
//! | `CG/io.max:F` | `/cgA/io.max:riops` | field F (rbps, wbps, riops, wiops) of the group's io.max line |
//! | `CG/io.weight` | `/cgB/io.weight` | the group's weight on the scenario's device (`MAJ:MIN N`) |
//! | `CG/blkio.throttle.*_device` | | the group's v1 limit on the device (`MAJ:MIN N`) |
//! | `device:K` | `device:mbps` | parameter K of the scenario's `[device]` |
//! | `controllers:K` | `controllers:iocost` | option K of `[controllers]` |
//!
//! Values are a comma list (`25,50,75`, `hold,reset`) or a numeric range:
//! `LO..HI:N` or `LO..HI:lin:N` (N evenly spaced values, both ends
//! included), `LO..HI:log:N` (N values evenly spaced on a log scale, as
//! latency targets are usually swept), `LO..HI:step:S`. Range values keep
//! the precision the bounds are written with: `25..75:3` gives 25, 50, 75
//! and `0.5..2.0:4` gives 0.5, 1.0, 1.5, 2.0.

use blkqos_core::cgroupfs::{split_target, KnobFile};

/// Most values one knob may take (a range's N).
pub const MAX_VALUES: u64 = 10_000;

/// What a knob changes in the scenario.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// A `key=value` field of a knob line (io.cost.qos, io.cost.model,
    /// io.max), merged into the scenario's line.
    Field {
        cgroup: String,
        knob: KnobFile,
        field: String,
    },
    /// A knob whose value is `MAJ:MIN VALUE` on the scenario's device
    /// (io.weight, cgroup v1 throttle files).
    Line { cgroup: String, knob: KnobFile },
    /// A `[device]` parameter.
    Device { key: String },
    /// A `[controllers]` option.
    Controller { key: String },
}

/// One `--vary`: a target and the values it takes, in order.
#[derive(Clone, Debug)]
pub struct Knob {
    /// The target as written (`io.cost.qos:rlat`): the column name.
    pub name: String,
    /// The values as written (`1000..20000:log:8`).
    pub spec: String,
    pub target: Target,
    pub values: Vec<String>,
}

impl Knob {
    /// Does the knob set a cgroup file (what `blkqos apply` can write),
    /// rather than a simulated device's or controller's parameter?
    pub fn writes_a_file(&self) -> bool {
        matches!(self.target, Target::Field { .. } | Target::Line { .. })
    }
}

/// io.cost.qos's fields, and `vrate`: `min` and `max` both (a fixed
/// vrate, as iocost-tune's solutions have).
const QOS_FIELDS: &[&str] = &[
    "enable", "ctrl", "rpct", "rlat", "wpct", "wlat", "min", "max", "vrate",
];
const MODEL_FIELDS: &[&str] = &[
    "ctrl",
    "rbps",
    "rseqiops",
    "rrandiops",
    "wbps",
    "wseqiops",
    "wrandiops",
];
const IO_MAX_FIELDS: &[&str] = &["rbps", "wbps", "riops", "wiops"];
/// Device keys a sweep must not change: knob lines and reports name them.
const FIXED_DEVICE_KEYS: &[&str] = &["model", "devid", "name", "path", "backend"];

/// Parse one `--vary TARGET=VALUES` argument.
pub fn parse_vary(arg: &str) -> Result<Knob, String> {
    let bad = |why: String| format!("--vary `{arg}`: {why}");
    let (name, spec) = arg.split_once('=').ok_or_else(|| {
        bad("expected TARGET=VALUES, e.g. io.cost.qos:rlat=1000..20000:log:8".into())
    })?;
    let (name, spec) = (name.trim(), spec.trim());
    let target = parse_target(name).map_err(bad)?;
    let values = parse_values(spec).map_err(bad)?;
    Ok(Knob {
        name: name.to_string(),
        spec: spec.to_string(),
        target,
        values,
    })
}

/// The target part of `--vary`.
fn parse_target(name: &str) -> Result<Target, String> {
    if let Some(key) = name.strip_prefix("device:") {
        if FIXED_DEVICE_KEYS.contains(&key) || key.is_empty() {
            return Err(format!(
                "device key `{key}` cannot be varied: vary a model parameter (see `blkqos devices`)"
            ));
        }
        return Ok(Target::Device { key: key.into() });
    }
    if let Some(key) = name.strip_prefix("controllers:") {
        if key.is_empty() {
            return Err("controllers: needs an option, e.g. controllers:iocost".into());
        }
        return Ok(Target::Controller { key: key.into() });
    }
    let (path, field) = match name.rsplit_once(':') {
        Some((p, f)) => (p, Some(f)),
        None => (name, None),
    };
    let (cgroup, knob) = split_target(path)?;
    let fields = match knob {
        KnobFile::IoCostQos => QOS_FIELDS,
        KnobFile::IoCostModel => MODEL_FIELDS,
        KnobFile::IoMax => IO_MAX_FIELDS,
        KnobFile::IoWeight | KnobFile::V1Throttle { .. } => {
            return match field {
                None => Ok(Target::Line { cgroup, knob }),
                Some(f) => Err(format!(
                    "{} takes no field (`:{f}`): its value is the weight or limit on the scenario's device",
                    knob.name()
                )),
            };
        }
    };
    match field {
        Some(f) if fields.contains(&f) => Ok(Target::Field {
            cgroup,
            knob,
            field: f.to_string(),
        }),
        Some(f) => Err(format!(
            "{} has no field `{f}`: use {}",
            knob.name(),
            fields.join(", ")
        )),
        None => Err(format!(
            "name the {} field to vary, e.g. {}:{}",
            knob.name(),
            path,
            fields[1]
        )),
    }
}

/// The values part of `--vary`: a range or a comma list.
pub fn parse_values(spec: &str) -> Result<Vec<String>, String> {
    if spec.contains("..") {
        return parse_range(spec);
    }
    let values: Vec<String> = spec.split(',').map(|v| v.trim().to_string()).collect();
    if values.iter().any(String::is_empty) {
        return Err(format!("empty value in the list `{spec}`"));
    }
    for (i, v) in values.iter().enumerate() {
        if values[..i].contains(v) {
            return Err(format!("value `{v}` is listed twice"));
        }
    }
    Ok(values)
}

/// A decimal number as an integer scaled by 10^decimals.
#[derive(Clone, Copy, Debug)]
struct Decimal {
    scaled: i128,
    decimals: u32,
}

fn parse_decimal(s: &str) -> Option<Decimal> {
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    if !digits(int) || (!frac.is_empty() && !digits(frac)) || frac.len() > 6 || int.len() > 18 {
        return None;
    }
    let scaled = format!("{int}{frac}").parse().ok()?;
    Some(Decimal {
        scaled,
        decimals: frac.len() as u32,
    })
}

impl Decimal {
    fn rescale(self, decimals: u32) -> i128 {
        self.scaled * 10i128.pow(decimals - self.decimals)
    }
}

/// Format a value scaled by 10^decimals.
fn format_scaled(v: i128, decimals: u32) -> String {
    if decimals == 0 {
        return v.to_string();
    }
    let p = 10i128.pow(decimals);
    format!("{}.{:0w$}", v / p, v % p, w = decimals as usize)
}

/// `LO..HI:N`, `LO..HI:lin:N`, `LO..HI:log:N` or `LO..HI:step:S`.
fn parse_range(spec: &str) -> Result<Vec<String>, String> {
    let form = "a range is LO..HI:N, LO..HI:lin:N, LO..HI:log:N or LO..HI:step:S";
    let (bounds, how) = spec
        .split_once(':')
        .ok_or_else(|| format!("`{spec}`: say how many values: {form}"))?;
    let (lo_s, hi_s) = bounds.split_once("..").expect("checked by the caller");
    let num = |s: &str| {
        parse_decimal(s.trim()).ok_or_else(|| {
            format!("`{s}` is not a non-negative decimal number (at most 6 decimals)")
        })
    };
    let (lo, hi) = (num(lo_s)?, num(hi_s)?);
    let (kind, arg) = match how.split_once(':') {
        Some((k, a)) => (k.trim(), a.trim()),
        None => ("lin", how.trim()),
    };
    let mut decimals = lo.decimals.max(hi.decimals);
    let step = if kind == "step" {
        let s = num(arg)?;
        decimals = decimals.max(s.decimals);
        Some(s.rescale(decimals))
    } else {
        None
    };
    let (lo_i, hi_i) = (lo.rescale(decimals), hi.rescale(decimals));
    if lo_i >= hi_i {
        return Err(format!("`{spec}`: LO must be below HI"));
    }
    let scaled: Vec<i128> = match (kind, step) {
        ("step", Some(s)) => step_values(lo_i, hi_i, s)?,
        ("lin" | "log", _) => {
            let n: u64 = arg
                .parse()
                .ok()
                .filter(|n| (2..=MAX_VALUES).contains(n))
                .ok_or_else(|| format!("`{arg}`: the number of values must be 2..{MAX_VALUES}"))?;
            if kind == "lin" {
                lin_values(lo_i, hi_i, n)
            } else if lo_i == 0 {
                return Err(format!("`{spec}`: a log range needs LO above 0"));
            } else {
                log_values(lo_i, hi_i, n)
            }
        }
        _ => return Err(format!("`{spec}`: unknown spacing `{kind}`: {form}")),
    };
    for w in scaled.windows(2) {
        if w[0] == w[1] {
            return Err(format!(
                "`{spec}` gives {} twice once rounded to the precision of its bounds: ask for fewer values, or write the bounds with more decimals",
                format_scaled(w[0], decimals)
            ));
        }
    }
    Ok(scaled
        .into_iter()
        .map(|v| format_scaled(v, decimals))
        .collect())
}

fn step_values(lo: i128, hi: i128, step: i128) -> Result<Vec<i128>, String> {
    if step <= 0 {
        return Err("the step must be above 0".into());
    }
    let n = (hi - lo) / step + 1;
    if n as u64 > MAX_VALUES {
        return Err(format!("the step gives {n} values: at most {MAX_VALUES}"));
    }
    Ok((0..n).map(|k| lo + k * step).collect())
}

/// `n` values from `lo` to `hi`, evenly spaced, rounded half away from 0.
fn lin_values(lo: i128, hi: i128, n: u64) -> Vec<i128> {
    let span = hi - lo;
    let d = i128::from(n - 1);
    (0..i128::from(n))
        .map(|k| lo + (2 * span * k + d) / (2 * d))
        .collect()
}

/// `n` values from `lo` to `hi` with a constant ratio, rounded to the
/// nearest; the ends are exact. (f64 `powf`: a platform whose libm rounds
/// the last bit differently could round a value the other way; the sweep
/// id covers the values, so shards made there are refused by `--merge`.)
fn log_values(lo: i128, hi: i128, n: u64) -> Vec<i128> {
    let ratio = hi as f64 / lo as f64;
    let last = n - 1;
    (0..=last)
        .map(|k| match k {
            0 => lo,
            k if k == last => hi,
            k => (lo as f64 * ratio.powf(k as f64 / last as f64)).round() as i128,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vals(s: &str) -> Vec<String> {
        parse_values(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn ranges() {
        assert_eq!(vals("25..75:3"), ["25", "50", "75"]);
        assert_eq!(vals("25..75:lin:3"), ["25", "50", "75"]);
        assert_eq!(vals("0.5..2.0:4"), ["0.5", "1.0", "1.5", "2.0"]);
        assert_eq!(vals("50..500:step:150"), ["50", "200", "350", "500"]);
        assert_eq!(vals("50..510:step:150"), ["50", "200", "350", "500"]);
        assert_eq!(
            vals("1000..16000:log:5"),
            ["1000", "2000", "4000", "8000", "16000"]
        );
        assert_eq!(vals("1..10:log:3"), ["1", "3", "10"]);
        assert_eq!(vals("25, 50 ,75"), ["25", "50", "75"]);
        assert_eq!(vals("hold,reset"), ["hold", "reset"]);
        assert_eq!(vals("0..1:step:0.25").len(), 5);
    }

    #[test]
    fn bad_values() {
        for (s, needle) in [
            ("1..3:log:8", "twice"),
            ("5..1:3", "below"),
            ("1..5", "how many"),
            ("1..5:1", "2..10000"),
            ("1..5:cubic:3", "unknown spacing"),
            ("0..5:log:3", "above 0"),
            ("a..5:3", "`a`"),
            ("-1..5:3", "`-1`"),
            ("1,,2", "empty"),
            ("1,2,1", "twice"),
            ("1..5:step:0", "above 0"),
            ("0..100000:step:1", "at most"),
        ] {
            let e = parse_values(s).expect_err(s);
            assert!(e.contains(needle), "{s}: {e}");
        }
    }

    #[test]
    fn targets() {
        let t = |s: &str| parse_target(s);
        assert_eq!(
            t("io.cost.qos:rlat"),
            Ok(Target::Field {
                cgroup: "/".into(),
                knob: KnobFile::IoCostQos,
                field: "rlat".into()
            })
        );
        assert_eq!(
            t("/sys/fs/cgroup/cgA/io.max:riops"),
            Ok(Target::Field {
                cgroup: "/cgA".into(),
                knob: KnobFile::IoMax,
                field: "riops".into()
            })
        );
        assert_eq!(
            t("/cgB/io.weight"),
            Ok(Target::Line {
                cgroup: "/cgB".into(),
                knob: KnobFile::IoWeight
            })
        );
        assert_eq!(t("device:mbps"), Ok(Target::Device { key: "mbps".into() }));
        for (s, needle) in [
            ("io.cost.qos:bogus", "no field `bogus`"),
            ("io.cost.qos", "name the io.cost.qos field"),
            ("/cgB/io.weight:w", "takes no field"),
            ("/cgB/io.cost.qos:rlat", "only in the root"),
            ("io.bogus:x", "not a knob file"),
            ("device:devid", "cannot be varied"),
            ("controllers:", "needs an option"),
        ] {
            let e = t(s).expect_err(s);
            assert!(e.contains(needle), "{s}: {e}");
        }
    }

    #[test]
    fn vary_names_the_argument() {
        let e = parse_vary("io.cost.qos:rlat").unwrap_err();
        assert!(e.starts_with("--vary `io.cost.qos:rlat`"), "{e}");
        let k = parse_vary("io.cost.qos:min=25,50").unwrap();
        assert_eq!(
            (k.name.as_str(), k.spec.as_str()),
            ("io.cost.qos:min", "25,50")
        );
    }
}
