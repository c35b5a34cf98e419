//! The iocost knobs — `io.weight`, `io.cost.qos`, `io.cost.model` — parsed
//! with the kernel's syntax and error classes and printed in its format
//! (`ioc_weight_write/show`, `ioc_qos_write/prfill`,
//! `ioc_cost_model_write/prfill` in linux v6.9+ `block/blk-iocost.c`).
//!
//! The kernel parses these files with `match_token()` patterns (`%u`,
//! `%s`), `match_u64()`, `cgroup_parse_float()` and `sscanf("%u")`; the
//! scanners below reproduce what each accepts, including the quirks: numbers
//! in `%u`/`match_u64` fields are base-0 (`0x10` = 16, `010` = 8, `09` is
//! refused), percentages take up to two decimals and round further digits
//! to nearest, `rlat`/`wlat` are stored in 32 bits (truncated), and
//! `sscanf("%u")` in `io.weight` ignores trailing text and truncates to 32
//! bits. Every refusal is `-EINVAL`: unlike `io.max`, these files never
//! return `-ERANGE` (an out-of-range weight is `-EINVAL`, and an
//! overflowing `match_u64` is turned into `-EINVAL` by the callers).

use super::model::{
    NR_I_LCOEFS, NR_QOS_PARAMS, QOS_MAX, QOS_MIN, QOS_RLAT, QOS_RPPM, QOS_WLAT, QOS_WPPM,
};
use super::vtime::{VRATE_MAX_PPM, VRATE_MIN_PPM};
use crate::io::DevId;
use crate::knob_line::split_dev;
pub use crate::knob_line::KnobError;

/// `CGROUP_WEIGHT_MIN`, `CGROUP_WEIGHT_DFL`, `CGROUP_WEIGHT_MAX`.
pub const WEIGHT_MIN: u32 = 1;
/// `CGROUP_WEIGHT_DFL`: the weight of a group nobody wrote (100).
pub const WEIGHT_DFL: u32 = 100;
/// `CGROUP_WEIGHT_MAX`: the largest weight `io.weight` accepts (10000).
pub const WEIGHT_MAX: u32 = 10_000;

/// A parsed `io.weight` write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WeightWrite {
    /// `N` or `default N`: the cgroup's default weight (all devices
    /// without an override).
    Default(u32),
    /// `MAJ:MIN N`: a per-device override.
    Device(DevId, u32),
    /// `MAJ:MIN default`: remove the override.
    DeviceDefault(DevId),
}

/// A parsed `io.cost.qos` write. Tokens are applied in order by the kernel;
/// what matters of that order is folded in here: `user` is the final
/// `ctrl` state (`ctrl=auto` → false, `ctrl=user` or any parameter → true,
/// the last one wins), `None` when the write does not touch it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QosWrite {
    /// The device the line names.
    pub dev: DevId,
    /// `enable=0|1`: `Some(true)` to enable iocost on the device, `None` if
    /// the write does not say.
    pub enable: Option<bool>,
    /// The final `ctrl` state: `Some(true)` for user QoS parameters
    /// (`ctrl=user` or any parameter), `Some(false)` for `ctrl=auto` (back
    /// to the autop defaults), `None` if untouched.
    pub user: Option<bool>,
    /// Indexed by `QOS_RPPM` … `QOS_MAX`: ppm for rpct/wpct/min/max, µs for
    /// rlat/wlat, already clamped as the kernel stores them.
    pub params: [Option<u32>; NR_QOS_PARAMS],
}

/// A parsed `io.cost.model` write (`model=linear` is the only model).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelWrite {
    /// The device the line names.
    pub dev: DevId,
    /// The final `ctrl` state: `Some(true)` for a user model (`ctrl=user` or
    /// any coefficient), `Some(false)` for `ctrl=auto`, `None` if untouched.
    pub user: Option<bool>,
    /// Indexed by `I_LCOEF_RBPS` … `I_LCOEF_WRANDIOPS`.
    pub coefs: [Option<u64>; NR_I_LCOEFS],
}

fn einval(file: &'static str, token: &str, why: &'static str) -> KnobError {
    KnobError::Invalid {
        file,
        token: token.to_string(),
        why,
    }
}

/// `_parse_integer_fixup_radix` for base 0: `(radix, prefix length)`.
fn radix0(s: &[u8]) -> (u32, usize) {
    if s.first() == Some(&b'0') {
        if s.get(1).is_some_and(|c| c.eq_ignore_ascii_case(&b'x'))
            && s.get(2).is_some_and(|c| c.is_ascii_hexdigit())
        {
            (16, 2)
        } else {
            (8, 0)
        }
    } else {
        (10, 0)
    }
}

/// `_parse_integer`: digits of `radix` at the start of `s`; returns the
/// wrapped value, the digit count and whether it overflowed 64 bits.
fn parse_integer(s: &[u8], radix: u32) -> (u64, usize, bool) {
    let mut v: u64 = 0;
    let mut overflow = false;
    let mut n = 0;
    for &c in s {
        let Some(d) = (c as char).to_digit(radix) else {
            break;
        };
        match v
            .checked_mul(radix as u64)
            .and_then(|x| x.checked_add(d as u64))
        {
            Some(x) => v = x,
            None => {
                overflow = true;
                v = v.wrapping_mul(radix as u64).wrapping_add(d as u64);
            }
        }
        n += 1;
    }
    (v, n, overflow)
}

/// Does the `match_token` pattern `%u` accept all of `arg`? (`simple_strtoul`
/// in base 0 must consume at least one character and everything.)
fn match_u(arg: &str) -> bool {
    let b = arg.as_bytes();
    let (radix, skip) = radix0(b);
    let (_, n, _) = parse_integer(&b[skip..], radix);
    n > 0 && skip + n == b.len()
}

/// `match_u64` (`kstrtoull(s, 0)`): `None` on overflow or garbage.
fn match_u64(arg: &str) -> Option<u64> {
    let b = arg.as_bytes();
    let b = b.strip_prefix(b"+").unwrap_or(b);
    let (radix, skip) = radix0(b);
    let (v, n, overflow) = parse_integer(&b[skip..], radix);
    (n > 0 && !overflow && skip + n == b.len()).then_some(v)
}

/// `sscanf(s, "%u")` at `s`: skips leading whitespace, needs a decimal
/// digit, ignores what follows, truncates to 32 bits.
fn scan_u(s: &str) -> Option<u32> {
    let b = s.trim_start().as_bytes();
    let (v, n, _) = parse_integer(b, 10);
    (n > 0).then_some(v as u32)
}

/// `sscanf(s, "default %u")`.
fn scan_default_u(s: &str) -> Option<u32> {
    scan_u(s.strip_prefix("default")?)
}

/// `cgroup_parse_float(s, 2)`: `"%lld.%n%lld%n"`, the fraction scaled to two
/// decimals (extra digits rounded to nearest). Hundredths, or `None`.
pub fn parse_float2(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let neg = b.first() == Some(&b'-');
    let start = usize::from(neg);
    let (whole, n, _) = parse_integer(&b[start..], 10);
    if n == 0 {
        return None;
    }
    let whole = if neg {
        (whole as i64).wrapping_neg()
    } else {
        whole as i64
    };
    let mut rest = &b[start + n..];
    let (mut frac, mut flen) = (0i64, 0u32);
    if rest.first() == Some(&b'.') {
        rest = &rest[1..];
        let fneg = rest.first() == Some(&b'-');
        let (f, fl, _) = parse_integer(&rest[usize::from(fneg)..], 10);
        if fl > 0 {
            frac = if fneg {
                (f as i64).wrapping_neg()
            } else {
                f as i64
            };
            flen = (fl + usize::from(fneg)) as u32;
        }
    }
    if frac < 0 {
        return None;
    }
    let pow10 = |p: u32| (0..p).fold(1u64, |a, _| a.wrapping_mul(10));
    let frac = if flen < 2 {
        frac.wrapping_mul(pow10(2 - flen) as i64)
    } else {
        // DIV_ROUND_CLOSEST_ULL
        let d = pow10(flen - 2).max(1);
        ((frac as u64).wrapping_add(d / 2) / d) as i64
    };
    Some(whole.wrapping_mul(100).wrapping_add(frac))
}

/// Parse an `io.weight` line (`ioc_weight_write`).
pub fn parse_io_weight(line: &str) -> Result<WeightWrite, KnobError> {
    const F: &str = "io.weight";
    let range = |v: u32, tok: &str| {
        if (WEIGHT_MIN..=WEIGHT_MAX).contains(&v) {
            Ok(v)
        } else {
            Err(einval(F, tok, "weight out of range: use 1..10000"))
        }
    };
    if !line.contains(':') {
        let tok = line.trim();
        let v = scan_default_u(line)
            .or_else(|| scan_u(line))
            .ok_or_else(|| einval(F, tok, "expected `N`, `default N` or `MAJ:MIN N|default`"))?;
        return Ok(WeightWrite::Default(range(v, tok)?));
    }
    let (dev, body) = split_dev(F, line)?;
    if body.starts_with("default") {
        return Ok(WeightWrite::DeviceDefault(dev));
    }
    let v = scan_u(body).ok_or_else(|| einval(F, body, "expected a weight or `default`"))?;
    Ok(WeightWrite::Device(dev, range(v, body)?))
}

/// Print `io.weight` (`ioc_weight_show`): `default N`, then one `MAJ:MIN N`
/// line per device override. Lines are joined with `\n`, no trailing newline.
pub fn format_io_weight(default: u32, overrides: &[(DevId, u32)]) -> String {
    let mut s = format!("default {default}");
    for (dev, w) in overrides {
        s.push_str(&format!("\n{dev} {w}"));
    }
    s
}

fn tokens(body: &str) -> impl Iterator<Item = &str> {
    body.split([' ', '\t', '\n']).filter(|t| !t.is_empty())
}

/// `ctrl=%s` / `model=%s`: the argument, if the pattern matches.
fn arg_s<'a>(tok: &'a str, key: &str) -> Option<&'a str> {
    tok.strip_prefix(key).filter(|a| !a.is_empty())
}

/// `ctrl=auto|user`, as the kernel compares it (after `match_strlcpy` into
/// a 32-byte buffer, which only ever shortens a string that then fails).
fn ctrl_value(file: &'static str, tok: &str, arg: &str) -> Result<bool, KnobError> {
    match arg {
        "auto" => Ok(false),
        "user" => Ok(true),
        _ => Err(einval(file, tok, "ctrl must be `auto` or `user`")),
    }
}

/// A `%s` float argument, as `match_strlcpy` into `char buf[32]` + `cgroup_parse_float`.
fn float_arg(file: &'static str, tok: &str, arg: &str) -> Result<i64, KnobError> {
    if arg.len() >= 32 {
        return Err(einval(file, tok, "value longer than 31 characters"));
    }
    parse_float2(arg).ok_or_else(|| einval(file, tok, "expected a decimal number"))
}

/// Parse an `io.cost.qos` line (`ioc_qos_write`).
pub fn parse_qos(line: &str) -> Result<QosWrite, KnobError> {
    const F: &str = "io.cost.qos";
    let (dev, body) = split_dev(F, line)?;
    let mut w = QosWrite {
        dev,
        enable: None,
        user: None,
        params: [None; NR_QOS_PARAMS],
    };
    for tok in tokens(body) {
        if let Some(arg) = tok.strip_prefix("enable=").filter(|a| match_u(a)) {
            let v = match_u64(arg)
                .ok_or_else(|| einval(F, tok, "enable value does not fit in 64 bits"))?;
            w.enable = Some(v != 0);
            continue;
        }
        if let Some(arg) = arg_s(tok, "ctrl=") {
            w.user = Some(ctrl_value(F, tok, arg)?);
            continue;
        }
        let (key, arg) = tok.split_once('=').unwrap_or((tok, ""));
        let (idx, v) = match key {
            "rpct" | "wpct" if !arg.is_empty() => {
                let v = float_arg(F, tok, arg)?;
                if !(0..=10_000).contains(&v) {
                    return Err(einval(F, tok, "percentile must be within 0..100"));
                }
                let idx = if key == "rpct" { QOS_RPPM } else { QOS_WPPM };
                (idx, (v * 100) as u32)
            }
            "rlat" | "wlat" if match_u(arg) => {
                let v = match_u64(arg).ok_or_else(|| einval(F, tok, "latency does not fit in 64 bits"))?;
                let idx = if key == "rlat" { QOS_RLAT } else { QOS_WLAT };
                // stored in a u32: the kernel truncates
                (idx, v as u32)
            }
            "min" | "max" if !arg.is_empty() => {
                let v = float_arg(F, tok, arg)?;
                if v < 0 {
                    return Err(einval(F, tok, "vrate bound must not be negative"));
                }
                let ppm = v.wrapping_mul(100).clamp(VRATE_MIN_PPM as i64, VRATE_MAX_PPM as i64);
                let idx = if key == "min" { QOS_MIN } else { QOS_MAX };
                (idx, ppm as u32)
            }
            _ => {
                return Err(einval(
                    F,
                    tok,
                    "unknown key or bad value: use enable=, ctrl=, rpct=, rlat=, wpct=, wlat=, min=, max=",
                ))
            }
        };
        w.params[idx] = Some(v);
        w.user = Some(true);
    }
    Ok(w)
}

/// Print one device's `io.cost.qos` line (`ioc_qos_prfill`), without newline.
pub fn format_qos(dev: DevId, enabled: bool, user: bool, qos: &[u32; NR_QOS_PARAMS]) -> String {
    let p = |ppm: u32| format!("{}.{:02}", ppm / 10_000, ppm % 10_000 / 100);
    format!(
        "{dev} enable={} ctrl={} rpct={} rlat={} wpct={} wlat={} min={} max={}",
        u8::from(enabled),
        if user { "user" } else { "auto" },
        p(qos[QOS_RPPM]),
        qos[QOS_RLAT],
        p(qos[QOS_WPPM]),
        qos[QOS_WLAT],
        p(qos[QOS_MIN]),
        p(qos[QOS_MAX]),
    )
}

/// The io.cost.model keys of the linear model, in the kernel's order
/// (`ioc_cost_model_prfill`).
pub const LCOEF_KEYS: [&str; NR_I_LCOEFS] = [
    "rbps",
    "rseqiops",
    "rrandiops",
    "wbps",
    "wseqiops",
    "wrandiops",
];

/// Parse an `io.cost.model` line (`ioc_cost_model_write`).
pub fn parse_model(line: &str) -> Result<ModelWrite, KnobError> {
    const F: &str = "io.cost.model";
    let (dev, body) = split_dev(F, line)?;
    let mut w = ModelWrite {
        dev,
        user: None,
        coefs: [None; NR_I_LCOEFS],
    };
    for tok in tokens(body) {
        if let Some(arg) = arg_s(tok, "ctrl=") {
            w.user = Some(ctrl_value(F, tok, arg)?);
            continue;
        }
        if let Some(arg) = arg_s(tok, "model=") {
            if arg != "linear" {
                return Err(einval(F, tok, "the only model is `linear`"));
            }
            continue;
        }
        let (key, arg) = tok.split_once('=').unwrap_or((tok, ""));
        let Some(idx) = LCOEF_KEYS
            .iter()
            .position(|k| *k == key)
            .filter(|_| match_u(arg))
        else {
            return Err(einval(
                F,
                tok,
                "unknown key or bad value: use ctrl=, model=linear, rbps=, rseqiops=, rrandiops=, wbps=, wseqiops=, wrandiops=",
            ));
        };
        let v = match_u64(arg).ok_or_else(|| einval(F, tok, "value does not fit in 64 bits"))?;
        w.coefs[idx] = Some(v);
        w.user = Some(true);
    }
    Ok(w)
}

/// Print one device's `io.cost.model` line (`ioc_cost_model_prfill`).
pub fn format_model(dev: DevId, user: bool, i_lcoefs: &[u64; NR_I_LCOEFS]) -> String {
    let u = i_lcoefs;
    format!(
        "{dev} ctrl={} model=linear rbps={} rseqiops={} rrandiops={} wbps={} wseqiops={} wrandiops={}",
        if user { "user" } else { "auto" },
        u[0],
        u[1],
        u[2],
        u[3],
        u[4],
        u[5]
    )
}
