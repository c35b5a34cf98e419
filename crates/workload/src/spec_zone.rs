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
    /// `zbd`: a zoned block device; writes go to zone write pointers,
    /// zones are opened and reset as fio's `zbd.c` does ([`crate::zbd`]).
    Zbd,
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
#[derive(Clone, Debug, PartialEq, Default)]
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
    /// `zonecapacity=` (zbd on a device without zones of its own; 0: the
    /// zone size).
    pub capacity_bytes: u64,
    /// `max_open_zones=` (0: the device's limit, or none).
    pub max_open_zones: u32,
    /// `job_max_open_zones=` (0: no per-job limit).
    pub job_max_open_zones: u32,
    /// `ignore_zone_limits=1`: the device's open-zone limit is not used.
    pub ignore_zone_limits: bool,
    /// `zone_reset_threshold=` (fraction of the range holding data).
    pub reset_threshold: f64,
    /// `zone_reset_frequency=` (0: no threshold resets).
    pub reset_frequency: f64,
    /// `read_beyond_wp=1`.
    pub read_beyond_wp: bool,
    /// `size=Nz`, `offset=Nz`: counts of zones, resolved with the zone
    /// size (fio `size_nz`, `start_offset_nz`).
    pub size_nz: u64,
    pub offset_nz: u64,
    /// The zones of the device the job runs on, shared by its clones
    /// (set when the run is planned).
    pub zbd: Option<crate::zbd::ZbdShared>,
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
