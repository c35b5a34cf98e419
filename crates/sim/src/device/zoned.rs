//! null_blk's zoned mode (`drivers/block/null_blk/zoned.c`), the state a
//! zoned `null` device keeps: `zoned=1` with `zone_size` (MiB, a power of
//! two), `zone_capacity` (MiB, 0 = the zone size), `zone_nr_conv`
//! conventional zones first, `zone_max_open` and `zone_max_active` (0 = no
//! limit). The last zone may be smaller (`null_init_zoned_dev`).
//!
//! Writes to a sequential zone must start at its write pointer and end
//! within its capacity, else the request fails with EIO
//! (`null_zone_write`); a write to an empty or closed zone opens it
//! implicitly, closing another implicitly open zone when the open limit is
//! reached and the active limit allows it (`null_check_zone_resources`,
//! `null_close_imp_open_zone`), else it fails (`BLK_STS_ZONE_OPEN_RESOURCE`
//! → ETOOMANYREFS, `BLK_STS_ZONE_ACTIVE_RESOURCE` → EOVERFLOW); a zone
//! written to its capacity is full. Reads always succeed (without memory
//! backing null_blk does not look at the write pointer). Discards fail
//! with EOPNOTSUPP: zoned null_blk turns discard off
//! (`null_config_discard`). A request crossing zone boundaries is judged
//! per zone, as the block layer splits it at `chunk_sectors` (the zone
//! size).
//!
//! A zone reset (`REQ_OP_ZONE_RESET`: a discard with
//! [`IoFlags::ZONE_RESET`], fio's `BLKRESETZONE` in `zonemode=zbd`) empties
//! the sequential zones it covers (`null_reset_zone`); it must start on a
//! zone boundary and cover whole zones (`blkdev_zone_mgmt`: EINVAL), and a
//! conventional zone fails it (EIO).
//!
//! Ignores: the other zone management commands (open, close, finish: fio
//! does not issue them), zone append.

use blkqos_core::{Io, IoFlags, IoOp};

/// `BLK_STS_IOERR`.
pub const EIO: i32 = 5;
/// `BLK_STS_ZONE_OPEN_RESOURCE`.
pub const ETOOMANYREFS: i32 = 109;
/// `BLK_STS_ZONE_ACTIVE_RESOURCE`.
pub const EOVERFLOW: i32 = 75;
/// `BLK_STS_NOTSUPP`.
pub const EOPNOTSUPP: i32 = 95;
/// `blkdev_zone_mgmt`'s -EINVAL.
pub const EINVAL: i32 = 22;

const MIB: u64 = 1 << 20;

/// `enum blk_zone_cond` (the ones null_blk uses).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneCond {
    NotWp,
    Empty,
    ImpOpen,
    Closed,
    Full,
}

#[derive(Clone, Copy, Debug)]
pub struct Zone {
    pub start: u64,
    pub len: u64,
    pub capacity: u64,
    pub wp: u64,
    pub cond: ZoneCond,
}

/// The zoned parameters, in null_blk's units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZonedParams {
    pub zone_size_mib: u64,
    pub zone_capacity_mib: u64,
    pub zone_nr_conv: u64,
    pub zone_max_open: u64,
    pub zone_max_active: u64,
}

impl ZonedParams {
    /// null_blk's checks (`null_init_zoned_dev`), as messages.
    pub fn check(&self, capacity: u64) -> Result<(), &'static str> {
        if self.zone_size_mib == 0 || !self.zone_size_mib.is_power_of_two() {
            return Err("zone_size must be a power of two MiB");
        }
        if self.zone_capacity_mib > self.zone_size_mib {
            return Err("zone_capacity must not exceed zone_size");
        }
        if capacity < self.zone_size_mib * MIB {
            return Err("the device must hold at least one zone of zone_size");
        }
        Ok(())
    }
}

#[derive(Clone, Debug)]
pub struct Zones {
    pub zones: Vec<Zone>,
    zone_bytes: u64,
    max_open: u64,
    max_active: u64,
    imp_open: u64,
    closed: u64,
    /// `dev->imp_close_zone_no`: where the search for a zone to close
    /// starts.
    imp_close_zone_no: usize,
}

impl Zones {
    pub fn new(p: ZonedParams, capacity: u64) -> Self {
        let zone_bytes = p.zone_size_mib * MIB;
        let cap_bytes = if p.zone_capacity_mib == 0 {
            zone_bytes
        } else {
            p.zone_capacity_mib * MIB
        };
        let nr = capacity.div_ceil(zone_bytes);
        // null_blk: at least one sequential zone
        let nr_conv = p.zone_nr_conv.min(nr.saturating_sub(1));
        let zones = (0..nr)
            .map(|i| {
                let start = i * zone_bytes;
                let len = zone_bytes.min(capacity - start);
                let conv = i < nr_conv;
                Zone {
                    start,
                    len,
                    capacity: if conv { len } else { cap_bytes.min(len) },
                    wp: if conv { u64::MAX } else { start },
                    cond: if conv {
                        ZoneCond::NotWp
                    } else {
                        ZoneCond::Empty
                    },
                }
            })
            .collect();
        // null_blk caps max_open at max_active
        let max_open = if p.zone_max_active > 0 && p.zone_max_open > p.zone_max_active {
            p.zone_max_active
        } else {
            p.zone_max_open
        };
        Zones {
            zones,
            zone_bytes,
            max_open,
            max_active: p.zone_max_active,
            imp_open: 0,
            closed: 0,
            imp_close_zone_no: nr_conv as usize,
        }
    }

    /// The errno of `io` on the zoned device (0: it succeeds), applying
    /// what it does to the zones.
    pub fn apply(&mut self, io: &Io) -> i32 {
        match io.op {
            IoOp::Read | IoOp::Flush => 0,
            IoOp::Discard if io.flags.contains(IoFlags::ZONE_RESET) => {
                self.reset(io.offset, io.len)
            }
            IoOp::Discard => EOPNOTSUPP,
            IoOp::Write => {
                let mut off = io.offset;
                let end = io.offset + io.len;
                while off < end {
                    let z = (off / self.zone_bytes) as usize;
                    let piece_end = end.min(self.zones[z].start + self.zones[z].len);
                    let e = self.write(z, off, piece_end - off);
                    if e != 0 {
                        return e;
                    }
                    off = piece_end;
                }
                0
            }
        }
    }

    /// `REQ_OP_ZONE_RESET` of the zones in `[offset, offset + len)` (`len`
    /// 0: the zone at `offset`): `blkdev_zone_mgmt`'s checks, then
    /// `null_reset_zone` for each.
    fn reset(&mut self, offset: u64, len: u64) -> i32 {
        let first = (offset / self.zone_bytes) as usize;
        if first >= self.zones.len() || self.zones[first].start != offset {
            return EINVAL;
        }
        let end = offset + len.max(1);
        let last = self
            .zones
            .iter()
            .rposition(|z| z.start < end)
            .unwrap_or(first);
        let covered = self.zones[last].start + self.zones[last].len;
        if len > 0 && end != covered {
            return EINVAL;
        }
        if self.zones[first..=last]
            .iter()
            .any(|z| z.cond == ZoneCond::NotWp)
        {
            return EIO;
        }
        for z in first..=last {
            match self.zones[z].cond {
                ZoneCond::ImpOpen => self.imp_open -= 1,
                ZoneCond::Closed => self.closed -= 1,
                _ => {}
            }
            let zone = &mut self.zones[z];
            zone.cond = ZoneCond::Empty;
            zone.wp = zone.start;
        }
        0
    }

    /// `null_zone_write` for one zone's piece.
    fn write(&mut self, z: usize, off: u64, len: u64) -> i32 {
        let zone = self.zones[z];
        if zone.cond == ZoneCond::NotWp {
            return 0;
        }
        if zone.cond == ZoneCond::Full || zone.wp + len > zone.start + zone.capacity {
            return EIO;
        }
        if off != zone.wp {
            return EIO;
        }
        if matches!(zone.cond, ZoneCond::Empty | ZoneCond::Closed) {
            let e = self.check_resources(zone.cond);
            if e != 0 {
                return e;
            }
            if zone.cond == ZoneCond::Closed {
                self.closed -= 1;
            }
            self.imp_open += 1;
            self.zones[z].cond = ZoneCond::ImpOpen;
        }
        let zone = &mut self.zones[z];
        zone.wp += len;
        if zone.wp == zone.start + zone.capacity {
            self.imp_open -= 1;
            zone.cond = ZoneCond::Full;
        }
        0
    }

    /// `null_check_active`.
    fn active_ok(&self) -> bool {
        self.max_active == 0 || self.imp_open + self.closed < self.max_active
    }

    /// `null_check_zone_resources` for an empty or closed zone.
    fn check_resources(&mut self, cond: ZoneCond) -> i32 {
        if cond == ZoneCond::Empty && !self.active_ok() {
            return EOVERFLOW;
        }
        // null_check_open
        if self.max_open == 0 || self.imp_open < self.max_open {
            return 0;
        }
        if self.imp_open > 0 && self.active_ok() {
            self.close_imp_open_zone();
            return 0;
        }
        ETOOMANYREFS
    }

    /// `null_close_imp_open_zone`: the first implicitly open zone from
    /// `imp_close_zone_no` on (round robin over the sequential zones)
    /// becomes closed (empty if nothing was written).
    fn close_imp_open_zone(&mut self) {
        let n = self.zones.len();
        let first_seq = self
            .zones
            .iter()
            .position(|z| z.cond != ZoneCond::NotWp)
            .unwrap_or(0);
        let mut i = self.imp_close_zone_no;
        for _ in 0..n {
            if i >= n {
                i = first_seq;
            }
            let this = i;
            i += 1;
            if self.zones[this].cond == ZoneCond::ImpOpen {
                self.imp_close_zone_no = i;
                let z = &mut self.zones[this];
                self.imp_open -= 1;
                if z.wp == z.start {
                    z.cond = ZoneCond::Empty;
                } else {
                    z.cond = ZoneCond::Closed;
                    self.closed += 1;
                }
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use blkqos_core::{GroupId, Instant, IoFlags, IoId, Submitter};

    fn zones(conv: u64, open: u64, active: u64, cap_mib: u64) -> Zones {
        Zones::new(
            ZonedParams {
                zone_size_mib: 4,
                zone_capacity_mib: cap_mib,
                zone_nr_conv: conv,
                zone_max_open: open,
                zone_max_active: active,
            },
            64 * MIB,
        )
    }

    fn w(offset: u64, len: u64) -> Io {
        Io {
            ioprio: 0,
            id: IoId(0),
            submitter: Submitter(0),
            group: GroupId::ROOT,
            op: IoOp::Write,
            flags: IoFlags::default(),
            offset,
            len,
            submitted_at: Instant::ZERO,
            cost_vtime: 0,
        }
    }

    const Z: u64 = 4 * MIB;

    #[test]
    fn writes_only_at_the_write_pointer() {
        let mut d = zones(0, 0, 0, 0);
        assert_eq!(d.apply(&w(0, 4096)), 0);
        assert_eq!(d.apply(&w(4096, 4096)), 0);
        assert_eq!(d.apply(&w(0, 4096)), EIO, "behind the write pointer");
        assert_eq!(d.apply(&w(16384, 4096)), EIO, "ahead of the write pointer");
        assert_eq!(d.zones[0].wp, 8192);
        assert_eq!(d.zones[0].cond, ZoneCond::ImpOpen);
        // reads anywhere are fine
        let mut r = w(3 * Z, 4096);
        r.op = IoOp::Read;
        assert_eq!(d.apply(&r), 0);
    }

    #[test]
    fn full_at_capacity_then_eio() {
        let mut d = zones(0, 0, 0, 2);
        assert_eq!(d.apply(&w(0, MIB)), 0);
        assert_eq!(d.apply(&w(MIB, 2 * MIB)), EIO, "past the 2 MiB capacity");
        assert_eq!(d.apply(&w(MIB, MIB)), 0);
        assert_eq!(d.zones[0].cond, ZoneCond::Full);
        assert_eq!(d.apply(&w(2 * MIB, 4096)), EIO, "a full zone");
    }

    #[test]
    fn conventional_zones_take_any_write() {
        let mut d = zones(2, 0, 0, 0);
        assert_eq!(d.apply(&w(Z + 8192, 4096)), 0);
        assert_eq!(d.apply(&w(0, 4096)), 0);
        assert_eq!(d.apply(&w(2 * Z + 4096, 4096)), EIO, "zone 2 is sequential");
    }

    #[test]
    fn open_limit_closes_an_implicitly_open_zone() {
        let mut d = zones(0, 2, 0, 0);
        for z in 0..3 {
            assert_eq!(d.apply(&w(z * Z, 4096)), 0, "zone {z}");
        }
        // zone 0 was closed to open zone 2
        assert_eq!(d.zones[0].cond, ZoneCond::Closed);
        assert_eq!(d.imp_open, 2);
        // writing zone 0 again reopens it, closing zone 1
        assert_eq!(d.apply(&w(4096, 4096)), 0);
        assert_eq!(d.zones[1].cond, ZoneCond::Closed);
    }

    #[test]
    fn active_limit_refuses_a_new_zone() {
        let mut d = zones(0, 0, 2, 0);
        assert_eq!(d.apply(&w(0, 4096)), 0);
        assert_eq!(d.apply(&w(Z, 4096)), 0);
        assert_eq!(d.apply(&w(2 * Z, 4096)), EOVERFLOW);
        // open == active: no zone can be closed to make room
        let mut d = zones(0, 2, 2, 0);
        assert_eq!(d.apply(&w(0, 4096)), 0);
        assert_eq!(d.apply(&w(Z, 4096)), 0);
        assert_eq!(d.apply(&w(2 * Z, 4096)), EOVERFLOW);
        // a full zone is not active any more
        assert_eq!(d.apply(&w(4096, Z - 4096)), 0);
        assert_eq!(d.apply(&w(2 * Z, 4096)), 0);
    }

    #[test]
    fn a_zone_reset_empties_the_zone() {
        let mut d = zones(1, 2, 0, 0);
        assert_eq!(d.apply(&w(Z, Z)), 0);
        assert_eq!(d.zones[1].cond, ZoneCond::Full);
        assert_eq!(d.apply(&w(2 * Z, 4096)), 0);
        let reset = |offset, len| {
            let mut r = w(offset, len);
            r.op = IoOp::Discard;
            r.flags = IoFlags::ZONE_RESET;
            r
        };
        assert_eq!(d.apply(&reset(Z + 4096, 0)), EINVAL, "not a zone start");
        assert_eq!(d.apply(&reset(Z, 4096)), EINVAL, "part of a zone");
        assert_eq!(d.apply(&reset(0, Z)), EIO, "a conventional zone");
        assert_eq!(d.apply(&reset(Z, 2 * Z)), 0);
        assert_eq!((d.zones[1].cond, d.zones[1].wp), (ZoneCond::Empty, Z));
        assert_eq!(d.zones[2].cond, ZoneCond::Empty);
        assert_eq!(d.imp_open, 0);
        // written again from the start
        assert_eq!(d.apply(&w(Z, 4096)), 0);
        assert_eq!(d.apply(&reset(Z, 0)), 0);
        assert_eq!(d.zones[1].wp, Z);
    }

    #[test]
    fn a_write_crossing_zones_is_judged_per_zone() {
        let mut d = zones(1, 0, 0, 0);
        // conventional zone 0 into sequential zone 1 at its write pointer
        assert_eq!(d.apply(&w(Z - 4096, 8192)), 0);
        assert_eq!(d.zones[1].wp, Z + 4096);
        assert_eq!(d.apply(&w(Z - 4096, 16384)), EIO);
        let mut t = w(0, 4096);
        t.op = IoOp::Discard;
        assert_eq!(d.apply(&t), EOPNOTSUPP);
    }
}
