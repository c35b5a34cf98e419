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
#[inline]
pub const fn mul_div_floor(a: u64, b: u64, c: u64) -> u64 {
    ((a as u128 * b as u128) / c as u128) as u64
}

/// `ceil(a * b / c)` with a 128-bit intermediate.
#[inline]
pub const fn mul_div_ceil(a: u64, b: u64, c: u64) -> u64 {
    (a as u128 * b as u128).div_ceil(c as u128) as u64
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
    }
}
