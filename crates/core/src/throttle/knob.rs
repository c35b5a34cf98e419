//! The `io.max` knob (cgroup v2) and the v1 `blkio.throttle.*_device` files:
//! parsing with the kernel's error classes and printing in its format
//! (`tg_set_limit`, `tg_prfill_limit`, `blkg_conf_prep` in
//! `block/blk-throttle.c` / `block/blk-cgroup.c`).

use crate::io::DevId;
pub use crate::knob_line::{split_dev, KnobError};

/// "No limit" for bytes/s (`U64_MAX`).
pub const BPS_MAX: u64 = u64::MAX;
/// "No limit" for IOs/s (`UINT_MAX`, stored widened).
pub const IOPS_MAX: u64 = u32::MAX as u64;

/// The four limits of one group on one device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Bytes/s per direction (read, write); `BPS_MAX` = none.
    pub bps: [u64; 2],
    /// IOs/s per direction; `IOPS_MAX` = none.
    pub iops: [u64; 2],
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            bps: [BPS_MAX; 2],
            iops: [IOPS_MAX; 2],
        }
    }
}

/// A limit file written to a group: cgroup v2's `io.max` line, or one of
/// cgroup v1's `blkio.throttle.{read,write}_{bps,iops}_device`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitWrite {
    /// `io.max`: the keys it names.
    IoMax(IoMaxWrite),
    /// A v1 file: one limit.
    V1 {
        /// `write_*` rather than `read_*`.
        write: bool,
        /// `*_iops_device` rather than `*_bps_device`.
        iops: bool,
        /// The new limit (`u64::MAX`: none).
        value: u64,
    },
}

impl LimitWrite {
    /// A cgroup v1 file (the flat hierarchy has only these).
    pub fn is_v1(&self) -> bool {
        matches!(self, LimitWrite::V1 { .. })
    }
    /// Apply to the current limits.
    pub fn apply(&self, l: &mut Limits) {
        match *self {
            LimitWrite::IoMax(w) => w.apply(l),
            LimitWrite::V1 { write, iops, value } => {
                let d = usize::from(write);
                if iops {
                    l.iops[d] = value;
                } else {
                    l.bps[d] = value;
                }
            }
        }
    }
}

impl Limits {
    /// No limit set in either direction (`max` everywhere): the group is not
    /// throttled on this device.
    pub fn is_unlimited(&self) -> bool {
        self.bps == [BPS_MAX; 2] && self.iops == [IOPS_MAX; 2]
    }
}

/// A parsed `io.max` write: the device and the keys it sets (others keep
/// their value).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoMaxWrite {
    /// The device the line names.
    pub dev: DevId,
    /// `rbps=`: read bytes/s; `Some(BPS_MAX)` for `max`, `None` if absent.
    pub rbps: Option<u64>,
    /// `wbps=`: write bytes/s; `Some(BPS_MAX)` for `max`, `None` if absent.
    pub wbps: Option<u64>,
    /// `riops=`: read IOs/s; `Some(IOPS_MAX)` for `max`, `None` if absent.
    pub riops: Option<u64>,
    /// `wiops=`: write IOs/s; `Some(IOPS_MAX)` for `max`, `None` if absent.
    pub wiops: Option<u64>,
}

impl IoMaxWrite {
    /// Apply to the current limits.
    pub fn apply(&self, l: &mut Limits) {
        if let Some(v) = self.rbps {
            l.bps[0] = v;
        }
        if let Some(v) = self.wbps {
            l.bps[1] = v;
        }
        if let Some(v) = self.riops {
            l.iops[0] = v;
        }
        if let Some(v) = self.wiops {
            l.iops[1] = v;
        }
    }
}

/// Parse an `io.max` line (`tg_set_limit`).
pub fn parse_io_max(line: &str) -> Result<IoMaxWrite, KnobError> {
    const F: &str = "io.max";
    let (dev, body) = split_dev(F, line)?;
    let mut w = IoMaxWrite {
        dev,
        rbps: None,
        wbps: None,
        riops: None,
        wiops: None,
    };
    for tok in body.split_whitespace() {
        // the kernel reads each token with sscanf("%26s")
        if tok.len() > 26 {
            return Err(KnobError::Invalid {
                file: F,
                token: tok.to_string(),
                why: "token longer than 26 characters",
            });
        }
        let Some((key, val)) = tok.split_once('=') else {
            return Err(KnobError::Invalid {
                file: F,
                token: tok.to_string(),
                why: "expected key=value",
            });
        };
        let v: u64 = if val == "max" {
            u64::MAX
        } else if !val.is_empty() && val.bytes().all(|c| c.is_ascii_digit()) {
            val.parse().map_err(|_| KnobError::Invalid {
                file: F,
                token: tok.to_string(),
                why: "number does not fit in 64 bits",
            })?
        } else {
            return Err(KnobError::Invalid {
                file: F,
                token: tok.to_string(),
                why: "value must be an unsigned decimal or `max`",
            });
        };
        if v == 0 {
            return Err(KnobError::OutOfRange {
                file: F,
                token: tok.to_string(),
                why: "0 is not a limit: use `max` for no limit",
            });
        }
        match key {
            "rbps" => w.rbps = Some(v),
            "wbps" => w.wbps = Some(v),
            "riops" => w.riops = Some(v.min(IOPS_MAX)),
            "wiops" => w.wiops = Some(v.min(IOPS_MAX)),
            _ => {
                return Err(KnobError::Invalid {
                    file: F,
                    token: tok.to_string(),
                    why: "unknown key: use rbps, wbps, riops or wiops",
                })
            }
        }
    }
    Ok(w)
}

/// Print one device's `io.max` line as the kernel does, or `None` when all
/// four limits are unlimited (such devices are not listed).
pub fn format_io_max(dev: DevId, l: &Limits) -> Option<String> {
    if l.is_unlimited() {
        return None;
    }
    let b = |v: u64| {
        if v == BPS_MAX {
            "max".to_string()
        } else {
            v.to_string()
        }
    };
    let i = |v: u64| {
        if v >= IOPS_MAX {
            "max".to_string()
        } else {
            v.to_string()
        }
    };
    Some(format!(
        "{dev} rbps={} wbps={} riops={} wiops={}",
        b(l.bps[0]),
        b(l.bps[1]),
        i(l.iops[0]),
        i(l.iops[1])
    ))
}

/// Which v1 file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct V1File {
    /// `write_*_device` rather than `read_*_device`.
    pub write: bool,
    /// `*_iops_device` (IOs/s) rather than `*_bps_device` (bytes/s).
    pub iops: bool,
}

/// Parse a v1 `blkio.throttle.*_device` line: `MAJ:MIN value`, 0 = no limit.
pub fn parse_v1(file: V1File, line: &str) -> Result<(DevId, u64), KnobError> {
    const F: &str = "blkio.throttle";
    let (dev, body) = split_dev(F, line)?;
    let body = body.trim();
    if body.is_empty() || !body.bytes().all(|c| c.is_ascii_digit()) {
        return Err(KnobError::Invalid {
            file: F,
            token: body.to_string(),
            why: "expected MAJ:MIN followed by an unsigned decimal",
        });
    }
    let v: u64 = body.parse().map_err(|_| KnobError::Invalid {
        file: F,
        token: body.to_string(),
        why: "number does not fit in 64 bits",
    })?;
    let v = match (v, file.iops) {
        (0, false) => BPS_MAX,
        (0, true) => IOPS_MAX,
        (v, true) => v.min(IOPS_MAX),
        (v, false) => v,
    };
    Ok((dev, v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_line() {
        let w = parse_io_max("253:1 riops=100 rbps=max").unwrap();
        assert_eq!(w.dev, DevId::new(253, 1));
        assert_eq!(w.riops, Some(100));
        assert_eq!(w.rbps, Some(u64::MAX));
        assert_eq!(w.wbps, None);
        let mut l = Limits::default();
        w.apply(&mut l);
        assert_eq!(
            format_io_max(w.dev, &l).unwrap(),
            "253:1 rbps=max wbps=max riops=100 wiops=max"
        );
    }

    #[test]
    fn omitted_keys_keep_values() {
        let mut l = Limits::default();
        parse_io_max("8:0 wbps=1048576").unwrap().apply(&mut l);
        parse_io_max("8:0 riops=50").unwrap().apply(&mut l);
        assert_eq!(l.bps[1], 1048576);
        assert_eq!(l.iops[0], 50);
        parse_io_max("8:0 wbps=max riops=max")
            .unwrap()
            .apply(&mut l);
        assert_eq!(format_io_max(DevId::new(8, 0), &l), None);
    }

    #[test]
    fn error_classes() {
        let cases = [
            ("8:0 riops=0", "ERANGE", "riops=0"),
            ("8:0 riops=-1", "EINVAL", "riops=-1"),
            ("8:0 riops", "EINVAL", "riops"),
            ("8:0 rbps=1k", "EINVAL", "rbps=1k"),
            ("8:0 foo=1", "EINVAL", "foo=1"),
            ("sda riops=1", "EINVAL", "sda"),
            (
                "8:0 rbps=99999999999999999999",
                "EINVAL",
                "rbps=99999999999999999999",
            ),
            ("8:0 rbps=", "EINVAL", "rbps="),
        ];
        for (line, errno, tok) in cases {
            let e = parse_io_max(line).unwrap_err();
            assert_eq!(e.errno_name(), errno, "{line}");
            assert!(e.to_string().contains(tok), "{line}: {e}");
        }
        // a line with only the device is valid (no change)
        assert!(parse_io_max("8:0").is_ok());
        // riops is clamped to UINT_MAX
        assert_eq!(
            parse_io_max("8:0 riops=99999999999").unwrap().riops,
            Some(IOPS_MAX)
        );
    }

    #[test]
    fn v1_files() {
        let f = V1File {
            write: false,
            iops: true,
        };
        assert_eq!(parse_v1(f, "8:0 100").unwrap(), (DevId::new(8, 0), 100));
        assert_eq!(parse_v1(f, "8:0 0").unwrap().1, IOPS_MAX);
        assert!(parse_v1(f, "8:0 x").is_err());
        assert!(parse_v1(f, "8:0").is_err());
    }
}
