//! C `printf`/libc look-alikes the report writers need: `%f` family
//! formatting, `ctime()` and glibc's `strerror()` texts.
//!
//! Rust's `{:.N}` formatting of an `f64` is exact and rounds ties to even,
//! which is what glibc's `printf("%.Nf")` does in the default rounding mode;
//! only NaN and infinity are spelled differently and are mapped here.

/// `printf("%.{prec}f", v)`.
pub fn fixed(v: f64, prec: usize) -> String {
    if v.is_nan() {
        return if v.is_sign_negative() { "-nan" } else { "nan" }.to_string();
    }
    if v.is_infinite() {
        return if v < 0.0 { "-inf" } else { "inf" }.to_string();
    }
    format!("{v:.prec$}")
}

/// `printf("%{width}.{prec}f", v)` (right-aligned, space padded).
pub fn fixed_w(v: f64, width: usize, prec: usize) -> String {
    format!("{:>width$}", fixed(v, prec))
}

/// `printf("%f", v)`: fio's JSON floats.
pub fn f6(v: f64) -> String {
    fixed(v, 6)
}

/// `ctime()` of `secs` since the epoch, in UTC, without the trailing
/// newline: `"Sat Nov 21 20:39:16 2026"` (glibc's
/// `"%.3s %.3s%3d %.2d:%.2d:%.2d %d"`).
pub fn ctime_utc(secs: u64) -> String {
    ctime(secs, 0)
}

/// `ctime()` of `secs` since the epoch in a zone `utc_offset_s` seconds
/// east of UTC (glibc's `localtime_r` then `asctime` layout).
pub fn ctime(secs: u64, utc_offset_s: i32) -> String {
    const WDAY: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MON: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let local = secs as i64 + i64::from(utc_offset_s);
    let days = local.div_euclid(86_400);
    let rem = local.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    // 1970-01-01 was a Thursday
    let wday = (days + 4).rem_euclid(7) as usize;
    format!(
        "{} {}{:3} {:02}:{:02}:{:02} {}",
        WDAY[wday],
        MON[(m - 1) as usize],
        d,
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        y
    )
}

/// Days since 1970-01-01 to (year, month 1..=12, day 1..=31), proleptic
/// Gregorian (H. Hinnant's `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// glibc's `strerror(errnum)` text (Linux errno numbering).
pub fn strerror(errnum: i32) -> String {
    let s = match errnum {
        0 => "Success",
        1 => "Operation not permitted",
        2 => "No such file or directory",
        3 => "No such process",
        4 => "Interrupted system call",
        5 => "Input/output error",
        6 => "No such device or address",
        7 => "Argument list too long",
        8 => "Exec format error",
        9 => "Bad file descriptor",
        10 => "No child processes",
        11 => "Resource temporarily unavailable",
        12 => "Cannot allocate memory",
        13 => "Permission denied",
        14 => "Bad address",
        15 => "Block device required",
        16 => "Device or resource busy",
        17 => "File exists",
        18 => "Invalid cross-device link",
        19 => "No such device",
        20 => "Not a directory",
        21 => "Is a directory",
        22 => "Invalid argument",
        23 => "Too many open files in system",
        24 => "Too many open files",
        25 => "Inappropriate ioctl for device",
        26 => "Text file busy",
        27 => "File too large",
        28 => "No space left on device",
        29 => "Illegal seek",
        30 => "Read-only file system",
        31 => "Too many links",
        32 => "Broken pipe",
        33 => "Numerical argument out of domain",
        34 => "Numerical result out of range",
        35 => "Resource deadlock avoided",
        36 => "File name too long",
        37 => "No locks available",
        38 => "Function not implemented",
        39 => "Directory not empty",
        40 => "Too many levels of symbolic links",
        42 => "No message of desired type",
        43 => "Identifier removed",
        44 => "Channel number out of range",
        45 => "Level 2 not synchronized",
        46 => "Level 3 halted",
        47 => "Level 3 reset",
        48 => "Link number out of range",
        49 => "Protocol driver not attached",
        50 => "No CSI structure available",
        51 => "Level 2 halted",
        52 => "Invalid exchange",
        53 => "Invalid request descriptor",
        54 => "Exchange full",
        55 => "No anode",
        56 => "Invalid request code",
        57 => "Invalid slot",
        59 => "Bad font file format",
        60 => "Device not a stream",
        61 => "No data available",
        62 => "Timer expired",
        63 => "Out of streams resources",
        64 => "Machine is not on the network",
        65 => "Package not installed",
        66 => "Object is remote",
        67 => "Link has been severed",
        68 => "Advertise error",
        69 => "Srmount error",
        70 => "Communication error on send",
        71 => "Protocol error",
        72 => "Multihop attempted",
        73 => "RFS specific error",
        74 => "Bad message",
        75 => "Value too large for defined data type",
        76 => "Name not unique on network",
        77 => "File descriptor in bad state",
        78 => "Remote address changed",
        79 => "Can not access a needed shared library",
        80 => "Accessing a corrupted shared library",
        81 => ".lib section in a.out corrupted",
        82 => "Attempting to link in too many shared libraries",
        83 => "Cannot exec a shared library directly",
        84 => "Invalid or incomplete multibyte or wide character",
        85 => "Interrupted system call should be restarted",
        86 => "Streams pipe error",
        87 => "Too many users",
        88 => "Socket operation on non-socket",
        89 => "Destination address required",
        90 => "Message too long",
        91 => "Protocol wrong type for socket",
        92 => "Protocol not available",
        93 => "Protocol not supported",
        94 => "Socket type not supported",
        95 => "Operation not supported",
        96 => "Protocol family not supported",
        97 => "Address family not supported by protocol",
        98 => "Address already in use",
        99 => "Cannot assign requested address",
        100 => "Network is down",
        101 => "Network is unreachable",
        102 => "Network dropped connection on reset",
        103 => "Software caused connection abort",
        104 => "Connection reset by peer",
        105 => "No buffer space available",
        106 => "Transport endpoint is already connected",
        107 => "Transport endpoint is not connected",
        108 => "Cannot send after transport endpoint shutdown",
        109 => "Too many references: cannot splice",
        110 => "Connection timed out",
        111 => "Connection refused",
        112 => "Host is down",
        113 => "No route to host",
        114 => "Operation already in progress",
        115 => "Operation now in progress",
        116 => "Stale file handle",
        117 => "Structure needs cleaning",
        118 => "Not a XENIX named type file",
        119 => "No XENIX semaphores available",
        120 => "Is a named type file",
        121 => "Remote I/O error",
        122 => "Disk quota exceeded",
        123 => "No medium found",
        124 => "Wrong medium type",
        125 => "Operation canceled",
        126 => "Required key not available",
        127 => "Key has expired",
        128 => "Key has been revoked",
        129 => "Key was rejected by service",
        130 => "Owner died",
        131 => "State not recoverable",
        132 => "Operation not possible due to RF-kill",
        133 => "Memory page has hardware error",
        _ => return format!("Unknown error {errnum}"),
    };
    s.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printf_like() {
        assert_eq!(f6(200.266578), "200.266578");
        assert_eq!(f6(0.0), "0.000000");
        assert_eq!(fixed(0.125, 2), "0.12"); // ties to even, as glibc
        assert_eq!(fixed(0.375, 2), "0.38");
        assert_eq!(fixed_w(7.9087, 5, 2), " 7.91");
        assert_eq!(fixed_w(112.57, 5, 2), "112.57");
        assert_eq!(fixed(f64::NAN, 2), "nan");
        assert_eq!(fixed_w(f64::INFINITY, 5, 2), "  inf");
    }

    #[test]
    fn ctime_layout() {
        assert_eq!(ctime_utc(0), "Thu Jan  1 00:00:00 1970");
        // a fio 3.33 report's timestamp, rendered in UTC
        assert_eq!(ctime_utc(1795293556), "Sat Nov 21 20:39:16 2026");
        assert_eq!(ctime_utc(951_782_400), "Tue Feb 29 00:00:00 2000");
        assert_eq!(ctime_utc(4_102_444_799), "Thu Dec 31 23:59:59 2099");
        // Asia/Tokyo (+9 h) and a zone west of UTC across a year boundary
        assert_eq!(
            super::ctime(1795293556, 9 * 3600),
            "Sun Nov 22 05:39:16 2026"
        );
        assert_eq!(super::ctime(0, -5 * 3600), "Wed Dec 31 19:00:00 1969");
    }

    #[test]
    fn errno_texts() {
        assert_eq!(strerror(0), "Success");
        assert_eq!(strerror(5), "Input/output error");
        assert_eq!(strerror(22), "Invalid argument");
        assert_eq!(strerror(41), "Unknown error 41");
        assert_eq!(strerror(-3), "Unknown error -3");
    }
}
