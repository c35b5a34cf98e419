//! Zone options (fio 3.33 `zonemode`, `zonesize`, `zonerange`,
//! `zoneskip`): the typed form [`crate::spec::JobSpec`] holds.

/// `zonemode=` (fio `enum fio_zone_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ZoneMode {
    /// No zones (`none`, the default).
    #[default]
    None,
    /// `strided`: do `zonesize` bytes in a zone of `zonerange` bytes,
    /// then move on by `zonerange + zoneskip` (fio `io_u.c:
    /// setup_strided_zone_mode`).
    Strided,
}

/// A byte count that may be given in zones (`FIO_OPT_STR_VAL_ZONE`:
/// `2z` = two zones of `zonesize`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneBytes {
    Bytes(u64),
    Zones(u64),
}

impl Default for ZoneBytes {
    fn default() -> Self {
        ZoneBytes::Bytes(0)
    }
}

impl ZoneBytes {
    /// In bytes, zones of `zone_size_bytes` each.
    pub fn bytes(self, zone_size_bytes: u64) -> u64 {
        match self {
            ZoneBytes::Bytes(b) => b,
            ZoneBytes::Zones(n) => n.saturating_mul(zone_size_bytes),
        }
    }
}

/// A job's zone options.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ZoneSpec {
    pub mode: ZoneMode,
    /// `zonemode` was given (fio's `ZONE_MODE_NOT_SPECIFIED` otherwise).
    pub mode_given: bool,
    /// `zonesize=`: bytes of IO per zone (strided).
    pub size_bytes: u64,
    /// `zonerange=`: the zone's extent (0: `zonesize`).
    pub range_bytes: u64,
    /// `zoneskip=`: bytes skipped after each zone.
    pub skip: ZoneBytes,
    /// Bytes from the start of the job's region to the end of its file or
    /// device (fio `real_file_size - file_offset`): where strided zones
    /// wrap. Set by whoever lays the job out; 0: the region's length.
    pub file_tail_bytes: u64,
}

impl ZoneSpec {
    /// `zonerange`, defaulting to `zonesize`.
    pub fn range(&self) -> u64 {
        if self.range_bytes == 0 {
            self.size_bytes
        } else {
            self.range_bytes
        }
    }
}
