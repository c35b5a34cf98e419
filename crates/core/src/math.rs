//! The kernel's integer helpers, named by their rounding so call sites say
//! which one the kernel uses.

/// `ceil(a / b)` (kernel `DIV_ROUND_UP` / `div64_u64` + round up).
#[inline]
pub const fn div_round_up(a: u64, b: u64) -> u64 {
    a.div_ceil(b)
}

/// `roundup(x, y)`: the smallest multiple of `y` that is ≥ `x`.
#[inline]
pub const fn roundup(x: u64, y: u64) -> u64 {
    x.div_ceil(y) * y
}

/// `rounddown(x, y)`: the largest multiple of `y` that is ≤ `x`.
#[inline]
pub const fn rounddown(x: u64, y: u64) -> u64 {
    x - x % y
}

/// `a * b / c` with a 128-bit intermediate, truncating (kernel `mul_u64_u64_div_u64`).
/// A product that fits in 64 bits is divided in 64 bits (same result, no
/// 128-bit division call).
#[inline]
pub const fn mul_div_floor(a: u64, b: u64, c: u64) -> u64 {
    match a.checked_mul(b) {
        Some(p) => p / c,
        None => ((a as u128 * b as u128) / c as u128) as u64,
    }
}

/// `ceil(a * b / c)` with a 128-bit intermediate (64-bit when the product fits).
#[inline]
pub const fn mul_div_ceil(a: u64, b: u64, c: u64) -> u64 {
    match a.checked_mul(b) {
        Some(p) => p.div_ceil(c),
        None => (a as u128 * b as u128).div_ceil(c as u128) as u64,
    }
}

/// `int_sqrt(x)`: the integer square root, rounded down (lib/math/int_sqrt.c).
#[inline]
pub const fn int_sqrt(x: u64) -> u64 {
    x.isqrt()
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn rounding() {
        assert_eq!(div_round_up(7, 2), 4);
        assert_eq!(roundup(101, 100), 200);
        assert_eq!(roundup(100, 100), 100);
        assert_eq!(rounddown(199, 100), 100);
        assert_eq!(mul_div_floor(u64::MAX, 2, 4), u64::MAX / 2);
        assert_eq!(mul_div_ceil(10, 1, 3), 4);
        assert_eq!(mul_div_ceil(u64::MAX, 3, 6), u64::MAX / 2 + 1);
    }

    #[test]
    fn fast_path_matches_128_bit() {
        let edge = [0, 1, 2, 3, 7, 65_535, 65_536, 1 << 32, u32::MAX as u64];
        let edge = edge
            .iter()
            .chain(&[(1 << 48) - 1, 1 << 63, u64::MAX - 1, u64::MAX]);
        let mut x = 0x1234_5678_9abc_def1u64;
        let mut vals: Vec<u64> = edge.copied().collect();
        for _ in 0..2000 {
            // xorshift64*, shifted to cover every magnitude
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            vals.push(x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> (x % 64));
        }
        for w in vals.windows(3) {
            let (a, b, c) = (w[0], w[1], w[2].max(1));
            let p = a as u128 * b as u128;
            assert_eq!(
                mul_div_floor(a, b, c),
                (p / c as u128) as u64,
                "{a} {b} {c}"
            );
            assert_eq!(
                mul_div_ceil(a, b, c),
                p.div_ceil(c as u128) as u64,
                "{a} {b} {c}"
            );
        }
    }
}
