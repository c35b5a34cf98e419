//! fio's `num2str()` (`lib/num2str.c`, fio 3.33): "cheesy number->string
//! conversion, complete with carry rounding error". Reproduced quirk for
//! quirk, since the normal output prints IOPS, bandwidth, sizes and
//! latency extremes through it.

use super::cfmt;

/// `enum n2s_unit` (`lib/num2str.h`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum N2sUnit {
    None = 0,
    PerSec = 1,
    Byte = 2,
    Bit = 3,
    BytePerSec = 4,
    BitPerSec = 5,
}

impl N2sUnit {
    fn suffix(self) -> &'static str {
        match self {
            N2sUnit::None => "",
            N2sUnit::PerSec => "/s",
            N2sUnit::Byte => "B",
            N2sUnit::Bit => "bit",
            N2sUnit::BytePerSec => "B/s",
            N2sUnit::BitPerSec => "bit/s",
        }
    }
}

const SISTR: [&str; 7] = ["", "k", "M", "G", "T", "P", "E"];
const IECSTR: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];

/// Port of fio's `num2str(num, maxlen, base, pow2, units)`.
///
/// * `maxlen`: max digits of the result (prefix and unit not counted, `.` counted);
/// * `base`: multiplier of `num` (1, or 1024 if `num` is in KiB, ...);
/// * `pow2`: IEC (`Ki`, 1024) prefixes if true, SI (`k`, 1000) otherwise.
pub fn num2str(num: u64, maxlen: i32, base: u32, pow2: bool, units: N2sUnit) -> String {
    let prefixes = if pow2 { &IECSTR } else { &SISTR };
    let thousand: u64 = if pow2 { 1024 } else { 1000 };
    let mut num = num;
    let mut base = base;
    let mut post_index = 0usize;
    while base > 1 {
        base /= thousand as u32;
        post_index += 1;
    }
    if matches!(units, N2sUnit::Bit | N2sUnit::BitPerSec) {
        num = num.wrapping_mul(8);
    }

    // Divide by K/Ki until the string length of num <= maxlen.
    // (`strlen(tmp) <= maxlen` compares a size_t with an int: a negative
    // maxlen becomes huge, so any length fits.)
    let fits = |n: u64| maxlen < 0 || digits(n) <= maxlen as usize;
    let mut modulo: Option<u64> = None;
    let mut carry = false;
    while post_index < SISTR.len() {
        if fits(num) {
            break;
        }
        let m = num % thousand;
        num /= thousand;
        carry = m >= thousand / 2;
        modulo = Some(m);
        post_index += 1;
    }
    if post_index >= SISTR.len() {
        post_index = 0;
    }

    let done = |n: u64| format!("{}{}{}", n, prefixes[post_index], units.suffix());

    // If no modulo, then we're done.
    let Some(modulo) = modulo else {
        return done(num);
    };

    // If no room for decimals, then we're done.
    let room = maxlen as i64 - digits(num) as i64;
    if room <= 1 {
        if carry {
            num = num.wrapping_add(1);
        }
        return done(num);
    }

    // Fill in everything and return the result.
    let frac = cfmt::fixed(modulo as f64 / thousand as f64, (room - 1) as usize);
    if frac.starts_with('1') {
        num = num.wrapping_add(1);
    }
    format!(
        "{}.{}{}{}",
        num,
        frac.get(2..).unwrap_or(""),
        prefixes[post_index],
        units.suffix()
    )
}

fn digits(n: u64) -> usize {
    let mut d = 1;
    let mut n = n / 10;
    while n > 0 {
        d += 1;
        n /= 10;
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    /// fio's `unittests/lib/num2str.c`, all cases.
    #[test]
    fn fio_unittest_cases() {
        let cases: [(u64, i32, u32, bool, N2sUnit, &str); 6] = [
            (1, 1, 1, false, N2sUnit::None, "1"),
            (
                u64::MAX,
                99,
                1,
                false,
                N2sUnit::None,
                "18446744073709551615",
            ),
            (18446744073709551, 2, 1, false, N2sUnit::None, "18P"),
            (18446744073709551, 4, 1, false, N2sUnit::None, "18.4P"),
            (u64::MAX, 2, 1, false, N2sUnit::None, "18E"),
            (u64::MAX, 4, 1, false, N2sUnit::None, "18.4E"),
        ];
        for (num, maxlen, base, pow2, unit, want) in cases {
            assert_eq!(
                num2str(num, maxlen, base, pow2, unit),
                want,
                "{num} {maxlen}"
            );
        }
    }

    /// Values seen in real fio 3.33 normal output (and cross-checked against
    /// fio's C `num2str` compiled from `lib/num2str.c`).
    #[test]
    fn fio_output_cases() {
        use N2sUnit::*;
        let cases: [(u64, i32, bool, N2sUnit, &str); 22] = [
            (7163, 4, false, None, "7163"),
            (13436, 4, false, None, "13.4k"),
            (29343072, 4, true, BytePerSec, "28.0MiB/s"),
            (29343072, 4, false, BytePerSec, "29.3MB/s"),
            (29372416, 4, true, Byte, "28.0MiB"),
            (29540352, 4, true, Byte, "28.2MiB"),
            (2457190, 4, true, BytePerSec, "2400KiB/s"),
            (7372800, 4, true, Byte, "7200KiB"),
            (7372800, 4, false, Byte, "7373kB"),
            (4046546, 6, false, None, "4046.5k"),
            (1854, 6, false, None, "1854"),
            (999_999, 6, false, None, "999999"),
            (1_000_000, 6, false, None, "1000.0k"),
            (9_999_950, 6, false, None, "9999.9k"),
            (9_999_999, 6, false, None, "10000.0k"),
            (0, 4, true, Byte, "0B"),
            (0, 0, true, Byte, "0B"),
            (38903808, 0, false, None, "0"),
            (1023, 4, true, Byte, "1023B"),
            (10240, 4, true, Byte, "10.0KiB"),
            (1_048_575, 4, true, Byte, "1024KiB"),
            (5, 1, true, Bit, "0Kibit"),
        ];
        for (num, maxlen, pow2, unit, want) in cases {
            assert_eq!(num2str(num, maxlen, 1, pow2, unit), want, "{num} {maxlen}");
        }
    }

    #[test]
    fn base_shifts_prefix() {
        // num already in KiB
        assert_eq!(num2str(512, 4, 1024, true, N2sUnit::Byte), "512KiB");
        assert_eq!(num2str(512, 4, 1000, false, N2sUnit::Byte), "512kB");
    }
}
