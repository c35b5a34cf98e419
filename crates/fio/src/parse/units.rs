//! Numbers with units: sizes, times, booleans, floats.
//!
//! Mirrors fio 3.33 `parse.c` (`str_to_decimal`, `get_mult_bytes`,
//! `__get_mult_bytes`, `get_mult_time`, `check_int`, `str_to_float`) where
//! fio gives input a definite meaning, and rejects input that fio would
//! silently misread (`4x`, `1.5k`, `4 k`, a suffix after a hex number): fio
//! reads the leading integer and ignores such trailing text.
//!
//! An *alphabetic* time suffix fio does not know (`sec`, `min`, `x`...) is
//! refused: fio 3.33 reads it as a multiplier of 1 (`runtime=1sec` runs for
//! 1 µs, `runtime=1x` issues nothing and exits 0), a silent misreading.

/// A value of a size-type option (`check_str_bytes`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SizeValue {
    Bytes(u64),
    /// `N%` (fio encodes it as `-1 - N`; `parse_is_percent`).
    Percent(u32),
}

/// fio's `strtoll` range: anything above is ERANGE.
const MAX_VALUE: u64 = i64::MAX as u64;

const ARITHMETIC: &str =
    "arithmetic expressions `(...)` are not supported (the fio 3.33 this mirrors is built without CONFIG_ARITHMETIC and rejects them too)";

/// The leading integer of a value and what follows it.
struct Number<'a> {
    value: u64,
    suffix: &'a str,
    hex: bool,
}

/// `strtoll` with fio's base choice (hex when the value starts with `0x`),
/// refusing negative numbers and non-numbers.
fn leading_number(s: &str) -> Result<Number<'_>, String> {
    let s = s.trim();
    if s.is_empty() {
        return Err("empty value".into());
    }
    if s.starts_with('(') {
        return Err(ARITHMETIC.into());
    }
    let body = s.strip_prefix('+').unwrap_or(s);
    if body.starts_with('-') {
        return Err("negative values are not allowed".into());
    }
    let (digits_of, radix, hex) = match body.strip_prefix("0x").or_else(|| body.strip_prefix("0X"))
    {
        Some(h) => (h, 16, true),
        None => (body, 10, false),
    };
    let end = digits_of
        .find(|c: char| !c.is_digit(radix))
        .unwrap_or(digits_of.len());
    if end == 0 {
        return Err(if hex {
            "malformed hexadecimal number".into()
        } else {
            "not a number".into()
        });
    }
    let value = u64::from_str_radix(&digits_of[..end], radix)
        .ok()
        .filter(|v| *v <= MAX_VALUE)
        .ok_or_else(|| "number out of range".to_string())?;
    Ok(Number {
        value,
        suffix: &digits_of[end..],
        hex,
    })
}

/// The multiplier of a size suffix (`__get_mult_bytes`), case-insensitive:
/// none or `b` = 1; `k m g t p`, alone or followed by `b` or `i`, are powers
/// of `kb_base`; followed by `ib` they are powers of the *other* base (1000
/// with the default `kb_base=1024`: fio's "inverted" IEC/SI reading).
pub(crate) fn size_multiplier(suffix: &str, kb_base: u32) -> Option<u64> {
    let lower = suffix.to_ascii_lowercase();
    if lower.is_empty() || lower == "b" {
        return Some(1);
    }
    let mut chars = lower.chars();
    let pow = match chars.next()? {
        'k' => 1,
        'm' => 2,
        'g' => 3,
        't' => 4,
        'p' => 5,
        _ => return None,
    };
    let base: u64 = match chars.as_str() {
        "" | "b" | "i" => u64::from(kb_base),
        "ib" if kb_base == 1000 => 1024,
        "ib" => 1000,
        _ => return None,
    };
    base.checked_pow(pow)
}

/// A size or plain integer (`str_to_decimal` with `kilo=1`).
pub(crate) fn parse_size(s: &str, kb_base: u32) -> Result<SizeValue, String> {
    let n = leading_number(s)?;
    if n.hex {
        if !n.suffix.is_empty() {
            return Err(format!(
                "unexpected `{}` after a hexadecimal number (fio would ignore it)",
                n.suffix
            ));
        }
        return Ok(SizeValue::Bytes(n.value));
    }
    if n.suffix == "%" {
        return match u32::try_from(n.value) {
            Ok(p) if p <= 100 => Ok(SizeValue::Percent(p)),
            _ => Err("a percentage must be at most 100%".into()),
        };
    }
    if n.suffix.eq_ignore_ascii_case("z") {
        return Err(
            "zone units (`z`) are supported for size= and offset= (fio also takes them for \
             io_size and offset_increment): give this one in bytes"
                .into(),
        );
    }
    let mult = size_multiplier(n.suffix, kb_base).ok_or_else(|| {
        format!(
            "invalid size suffix `{}` (expected k, m, g, t or p, optionally followed by b, i or ib)",
            n.suffix
        )
    })?;
    n.value
        .checked_mul(mult)
        .filter(|v| *v <= MAX_VALUE)
        .map(SizeValue::Bytes)
        .ok_or_else(|| "value out of range".into())
}

/// A plain integer that may carry a size suffix but no `%`.
pub(crate) fn parse_count(s: &str, kb_base: u32) -> Result<u64, String> {
    match parse_size(s, kb_base)? {
        SizeValue::Bytes(v) => Ok(v),
        SizeValue::Percent(_) => Err("a percentage is not allowed here".into()),
    }
}

/// The multiplier (to µs) of an alphabetic time suffix (`get_mult_time`:
/// `us`/`ms` as prefixes, so `usec`/`msec` too; `s m h d` exactly). None for
/// a suffix fio does not know (fio would multiply by 1).
fn time_multiplier(suffix: &str) -> Option<u64> {
    let lower = suffix.to_ascii_lowercase();
    if lower.starts_with("us") {
        Some(1)
    } else if lower.starts_with("ms") {
        Some(1_000)
    } else {
        match lower.as_str() {
            "s" => Some(1_000_000),
            "m" => Some(60 * 1_000_000),
            "h" => Some(3_600 * 1_000_000),
            "d" => Some(86_400 * 1_000_000),
            _ => None,
        }
    }
}

/// A time in microseconds (`check_str_time`). Without a unit the value is in
/// seconds when `default_seconds` (runtime, ramp_time) and in µs otherwise
/// (thinktime). A hex value is taken as µs whatever the option, as in fio
/// (the `x` of `0x` reads as an unknown unit).
pub(crate) fn parse_time_us(s: &str, default_seconds: bool) -> Result<u64, String> {
    let n = leading_number(s)?;
    let mult = if n.hex {
        if !n.suffix.is_empty() {
            return Err(format!(
                "unexpected `{}` after a hexadecimal number (fio would ignore it)",
                n.suffix
            ));
        }
        1
    } else if n.suffix.is_empty() {
        if default_seconds {
            1_000_000
        } else {
            1
        }
    } else if n.suffix.starts_with(|c: char| c.is_ascii_alphabetic()) {
        time_multiplier(n.suffix).ok_or_else(|| {
            format!(
                "unknown time unit `{}` (units are us, ms, s, m, h, d; fio would read it as µs)",
                n.suffix
            )
        })?
    } else {
        return Err(format!(
            "malformed time value: unexpected `{}` (units are us, ms, s, m, h, d)",
            n.suffix
        ));
    };
    n.value
        .checked_mul(mult)
        .ok_or_else(|| "value out of range".into())
}

/// An unsigned integer without units (`check_int`: `%u`, or `%x` for `0x`).
pub(crate) fn parse_plain_int(s: &str) -> Result<u64, String> {
    let n = leading_number(s)?;
    if !n.suffix.is_empty() {
        return Err(format!(
            "expected an integer, found `{}` after it",
            n.suffix
        ));
    }
    if n.value > u64::from(u32::MAX) {
        return Err("value out of range".into());
    }
    Ok(n.value)
}

/// A floating-point number (`str_to_float`).
pub(crate) fn parse_float(s: &str) -> Result<f64, String> {
    let t = s.trim();
    if t.starts_with('(') {
        return Err(ARITHMETIC.into());
    }
    match t.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(format!("not a floating point value: `{t}`")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(s: &str) -> u64 {
        match parse_size(s, 1024) {
            Ok(SizeValue::Bytes(b)) => b,
            other => panic!("{s}: {other:?}"),
        }
    }

    #[test]
    fn size_suffixes_default_base() {
        assert_eq!(bytes("4k"), 4096);
        assert_eq!(bytes("4K"), 4096);
        assert_eq!(bytes("4kb"), 4096);
        assert_eq!(bytes("4KB"), 4096);
        assert_eq!(
            bytes("1mi"),
            1 << 20,
            "`mi` is a 1024-power (HOWTO is wrong)"
        );
        assert_eq!(bytes("1Mi"), 1 << 20);
        assert_eq!(
            bytes("1MiB"),
            1_000_000,
            "`ib` forms are 1000-powers by default"
        );
        assert_eq!(bytes("1kib"), 1000);
        assert_eq!(bytes("2g"), 2 << 30);
        assert_eq!(bytes("1t"), 1 << 40);
        assert_eq!(bytes("1p"), 1 << 50);
        assert_eq!(bytes("1pib"), 1_000_000_000_000_000);
        assert_eq!(bytes("512"), 512);
        assert_eq!(bytes("512b"), 512);
        assert_eq!(bytes("512B"), 512);
        assert_eq!(bytes("0x10"), 16);
        assert_eq!(bytes("0X1f"), 31);
        assert_eq!(bytes("+8"), 8);
        assert_eq!(bytes(" 4k"), 4096, "strtoll skips leading blanks");
    }

    #[test]
    fn size_suffixes_kb_base_1000() {
        let b = |s| parse_size(s, 1000).unwrap();
        assert_eq!(b("1k"), SizeValue::Bytes(1000));
        assert_eq!(b("1mi"), SizeValue::Bytes(1_000_000));
        assert_eq!(b("1MiB"), SizeValue::Bytes(1 << 20));
        assert_eq!(b("1kib"), SizeValue::Bytes(1024));
    }

    #[test]
    fn size_rejects_what_fio_would_misread() {
        for bad in [
            "4x",
            "1.5k",
            "4 k",
            "k",
            "",
            "  ",
            "-1",
            "0x10k",
            "1e6",
            "4kk",
            "4kbb",
            "(4096*2)",
            "1z",
            "99999999999999999999",
            "8192p",
            "0x",
        ] {
            assert!(parse_size(bad, 1024).is_err(), "{bad:?} should be rejected");
        }
    }

    #[test]
    fn percent() {
        assert_eq!(parse_size("50%", 1024), Ok(SizeValue::Percent(50)));
        assert_eq!(parse_size("100%", 1024), Ok(SizeValue::Percent(100)));
        assert!(parse_size("101%", 1024).is_err());
        assert!(parse_count("5%", 1024).is_err());
    }

    #[test]
    fn times() {
        assert_eq!(parse_time_us("4ms", false), Ok(4000));
        assert_eq!(parse_time_us("4MS", false), Ok(4000));
        assert_eq!(parse_time_us("4msec", false), Ok(4000));
        assert_eq!(parse_time_us("7us", true), Ok(7));
        assert_eq!(parse_time_us("7usec", true), Ok(7));
        assert_eq!(
            parse_time_us("4", false),
            Ok(4),
            "thinktime default unit is µs"
        );
        assert_eq!(
            parse_time_us("60", true),
            Ok(60_000_000),
            "runtime default unit is s"
        );
        assert_eq!(parse_time_us("2s", false), Ok(2_000_000));
        assert_eq!(parse_time_us("2m", true), Ok(120_000_000));
        assert_eq!(parse_time_us("1h", true), Ok(3_600_000_000));
        assert_eq!(parse_time_us("1d", true), Ok(86_400_000_000));
        // fio 3.33 reads units it does not know as µs: refused here
        for bad in ["1sec", "1x", "2min", "1hours"] {
            let e = parse_time_us(bad, true).unwrap_err();
            assert!(e.contains("unknown time unit"), "{bad}: {e}");
        }
        assert_eq!(parse_time_us("3msec", true), Ok(3_000));
        assert_eq!(parse_time_us("3usec", true), Ok(3));
        assert_eq!(parse_time_us("0x10", true), Ok(16), "hex is read as µs");
        for bad in ["1.5s", "1 s", "s", "-1", "(1+1)", "5%"] {
            assert!(parse_time_us(bad, true).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn ints_and_floats() {
        assert_eq!(parse_plain_int("1"), Ok(1));
        assert_eq!(parse_plain_int("0x1"), Ok(1));
        assert!(parse_plain_int("1k").is_err());
        assert!(parse_plain_int("yes").is_err());
        assert!(parse_plain_int("4294967296").is_err());
        assert_eq!(parse_float("99.9"), Ok(99.9));
        assert!(parse_float("nan").is_err());
        assert!(parse_float("x").is_err());
    }
}
