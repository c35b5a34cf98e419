//! `zonemode=zbd` (fio 3.33 `zbd.c`): fio's view of a zoned block
//! device's zones, shared by every job clone on the device (fio's
//! `struct zoned_block_device_info`, one per file name): write pointers,
//! the open-zone list and its limits, the data counters behind
//! `zone_reset_threshold`, and the zone locks (fio's `z->mutex`: a zone
//! with IO of one clone in flight is not touched by another).
//!
//! [`ZbdInfo::adjust_block`] is fio's `zbd_adjust_block`: writes move to a
//! write pointer of an open zone (another zone when it is full, the zone
//! is reset when full or when the reset threshold says so), reads stay
//! below the write pointer (`read_beyond_wp=0`), random trims move to a
//! zone with data. Where fio waits inside the function (`io_u_quiesce`,
//! a zone lock another thread holds), the answer says so and the caller
//! tries again once the wait is over ([`Adjust::Quiesce`], [`Adjust::Busy`]).

use crate::ddir::{Ddir, PerDir};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// One zone as fio sees it (`struct fio_zone_info`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZbdZone {
    pub start: u64,
    /// Writable bytes from `start` (fio `capacity`).
    pub capacity: u64,
    /// Write pointer (`start + capacity` for a conventional or full zone).
    pub wp: u64,
    /// A sequential zone (fio `has_wp`).
    pub has_wp: bool,
    /// In the open-zone list.
    pub open: bool,
    /// The clone whose IO holds the zone lock, and how many of its IOs.
    owner: Option<(u32, u32)>,
}

impl ZbdZone {
    /// A sequential zone at `start`, empty.
    pub fn empty(start: u64, capacity: u64) -> Self {
        ZbdZone {
            start,
            capacity,
            wp: start,
            has_wp: true,
            open: false,
            owner: None,
        }
    }

    /// A conventional zone (no write pointer).
    pub fn conventional(start: u64, capacity: u64) -> Self {
        ZbdZone {
            has_wp: false,
            wp: start + capacity,
            ..Self::empty(start, capacity)
        }
    }

    fn cap_end(&self) -> u64 {
        self.start + self.capacity
    }
}

/// fio's `ZBD_MAX_OPEN_ZONES`.
pub const ZBD_MAX_OPEN_ZONES: u32 = 4096;

/// The device's zones as fio tracks them.
#[derive(Debug)]
pub struct ZbdInfo {
    zones: Vec<ZbdZone>,
    /// The sentinel's start: the end of the last zone.
    end: u64,
    pub zone_size: u64,
    /// The limit in force (0: no limit, open zones not tracked).
    pub max_open_zones: u32,
    open_zones: Vec<usize>,
    sectors_with_data: u64,
    wp_sectors_with_data: u64,
    /// Writes until the next threshold reset (fio `write_cnt`).
    write_cnt: u32,
    /// Open zones per clone (fio `td->num_open_zones`).
    td_open: BTreeMap<u32, u32>,
    /// IOs in flight in sequential zones, every clone.
    in_flight: u32,
}

/// A clone's file in zbd mode: its range and the options fio reads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ZbdFile {
    /// The clone (fio's `td`).
    pub td: u32,
    /// Absolute start of the clone's IO range (fio `file_offset`).
    pub file_offset: u64,
    /// Its length (fio `io_size`).
    pub io_size: u64,
    /// Minimum block size per direction.
    pub min_bs: PerDir<u64>,
    pub random: bool,
    /// The job reads and writes (fio `td_rw`).
    pub rw: bool,
    pub job_max_open_zones: u32,
    /// `zone_reset_threshold` and `zone_reset_frequency`.
    pub reset_threshold: f64,
    pub reset_frequency: f64,
    pub read_beyond_wp: bool,
    pub verify: bool,
}

/// What [`ZbdInfo::adjust_block`] makes of an IO.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Adjust {
    /// Issue it at `offset` for `len` bytes; first reset the zone at
    /// `reset` (start, length) on the device when given.
    Accept {
        offset: u64,
        len: u64,
        reset: Option<(u64, u64)>,
    },
    /// fio `io_u_quiesce`: wait for this clone's IO in flight, then try
    /// again.
    Quiesce,
    /// Another clone holds the zone (fio blocks on its lock): try again
    /// when IO completes.
    Busy,
    /// No zone can take the IO: the job's IO is done (fio `io_u_eof`).
    Eof,
    /// The job fails with this errno (fio `td_verror`), and its IO ends.
    Fail(i32),
}

const EIO: i32 = 5;
const EINVAL: i32 = 22;

/// A [`ZbdInfo`] shared by the clones on one device.
#[derive(Clone, Debug)]
pub struct ZbdShared(pub Arc<Mutex<ZbdInfo>>);

impl ZbdShared {
    pub fn new(info: ZbdInfo) -> Self {
        ZbdShared(Arc::new(Mutex::new(info)))
    }

    pub fn lock(&self) -> MutexGuard<'_, ZbdInfo> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl PartialEq for ZbdShared {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}
impl Eq for ZbdShared {}

impl ZbdInfo {
    /// Zones as the device reports them (fio `parse_zone_info`), each
    /// `zone_size` bytes apart; `end`: the end of the last one.
    pub fn from_report(zone_size: u64, zones: Vec<ZbdZone>, end: u64) -> Self {
        let mut z = ZbdInfo {
            zones,
            end,
            zone_size,
            max_open_zones: 0,
            open_zones: Vec::new(),
            sectors_with_data: 0,
            wp_sectors_with_data: 0,
            write_cnt: u32::MAX,
            td_open: BTreeMap::new(),
            in_flight: 0,
        };
        for zone in &z.zones {
            let data = zone.wp - zone.start;
            z.sectors_with_data += data;
            if zone.has_wp {
                z.wp_sectors_with_data += data;
            }
        }
        z
    }

    /// fio `zbd_set_max_open_zones` for a host-managed device whose own
    /// limit is `device_max` (0: none).
    pub fn set_max_open_zones(
        &mut self,
        user_max: u32,
        device_max: u32,
        ignore_zone_limits: bool,
    ) -> Result<(), String> {
        self.max_open_zones = if ignore_zone_limits || device_max == 0 {
            user_max
        } else if user_max == 0 {
            device_max
        } else if user_max <= device_max {
            user_max
        } else {
            return Err(format!(
                "Specified --max_open_zones ({user_max}) is larger than max ({device_max})"
            ));
        };
        if self.max_open_zones > ZBD_MAX_OPEN_ZONES {
            return Err(format!(
                "'max_open_zones' value is larger than {ZBD_MAX_OPEN_ZONES}"
            ));
        }
        Ok(())
    }

    pub fn zones(&self) -> &[ZbdZone] {
        &self.zones
    }

    /// The open zones, in list order.
    pub fn open_zones(&self) -> &[usize] {
        &self.open_zones
    }

    /// fio `zbd_offset_to_zone_idx` (the sentinel past the end).
    pub fn zone_idx(&self, offset: u64) -> usize {
        ((offset / self.zone_size) as usize).min(self.zones.len())
    }

    fn zone_start(&self, i: usize) -> u64 {
        self.zones.get(i).map_or(self.end, |z| z.start)
    }

    /// The end of zone `i` (fio `zbd_zone_end`).
    pub fn zone_end(&self, i: usize) -> u64 {
        self.zone_start(i + 1)
    }

    fn has_wp(&self, i: usize) -> bool {
        self.zones.get(i).is_some_and(|z| z.has_wp)
    }

    /// fio `zbd_zone_align_file_sizes` for a clone's range `(offset,
    /// len)`: a writing job's range starts and ends on zone boundaries.
    /// The new range and fio's notes, or fio's refusal.
    pub fn align_range(
        &self,
        offset: u64,
        len: u64,
        reads_only: bool,
        name: &str,
    ) -> Result<(u64, u64, Vec<String>), String> {
        let mut notes = Vec::new();
        let (mut off, mut size) = (offset, len);
        if len == 0 || off >= self.end || !self.is_seq_range(off, size) {
            return Ok((off, size, notes));
        }
        let z = self.zone_idx(off);
        if off != self.zone_start(z) && !reads_only {
            let new_offset = self.zone_end(z);
            if new_offset >= off + size {
                return Err(format!("{name}: io_size must be at least one zone"));
            }
            notes.push(format!(
                "{name}: rounded up offset from {off} to {new_offset}"
            ));
            size -= new_offset - off;
            off = new_offset;
        }
        let new_end = self.zone_start(self.zone_idx(off + size));
        if !reads_only && off + size != new_end {
            if new_end <= off {
                return Err(format!("{name}: io_size must be at least one zone"));
            }
            notes.push(format!(
                "{name}: rounded down io_size from {size} to {}",
                new_end - off
            ));
            size = new_end - off;
        }
        Ok((off, size, notes))
    }

    /// fio `zbd_is_seq_job`: the range holds a sequential zone.
    fn is_seq_range(&self, off: u64, len: u64) -> bool {
        let (b, e) = (self.zone_idx(off), self.zone_idx(off + len - 1));
        (b..=e).any(|i| self.has_wp(i))
    }

    /// First and past-the-last zone of a clone's range (fio `min_zone`,
    /// `max_zone`).
    fn range(&self, f: &ZbdFile) -> (usize, usize) {
        (
            self.zone_idx(f.file_offset),
            self.zone_idx(f.file_offset + f.io_size),
        )
    }

    fn valid(f: &ZbdFile, offset: u64) -> bool {
        offset.wrapping_sub(f.file_offset) < f.io_size
    }

    /// fio `zbd_file_reset` at the start of a clone's IO: the threshold
    /// counter restarts; with `verify`, the zones of the range holding
    /// data are reset first. The resets to issue on the device.
    pub fn file_reset(&mut self, f: &ZbdFile, writes: bool) -> Vec<(u64, u64)> {
        if !writes {
            return Vec::new();
        }
        // zbd_process_swd(SET_SWD): the data counters over the range
        let (b, e) = self.range(f);
        let zones = &self.zones[b..e.min(self.zones.len())];
        self.sectors_with_data = zones.iter().map(|z| z.wp - z.start).sum();
        self.wp_sectors_with_data = zones
            .iter()
            .filter(|z| z.has_wp)
            .map(|z| z.wp - z.start)
            .sum();
        let mut resets = Vec::new();
        if f.verify {
            let (b, e) = self.range(f);
            for i in b..e {
                if !self.zones[i].has_wp {
                    continue;
                }
                self.close_zone(f.td, i);
                if let Some(r) = self.reset_zone(i) {
                    resets.push(r);
                }
            }
        }
        self.reset_write_cnt(f);
        resets
    }

    fn reset_write_cnt(&mut self, f: &ZbdFile) {
        self.write_cnt = if f.reset_frequency > 0.0 {
            (1.0 / f.reset_frequency).min(f64::from(u32::MAX)) as u32
        } else {
            u32::MAX
        };
    }

    /// fio `zbd_reset_zone`: the zone's data is gone; `None` when it had
    /// none (no reset issued, none counted).
    fn reset_zone(&mut self, i: usize) -> Option<(u64, u64)> {
        let z = self.zones[i];
        let data = z.wp - z.start;
        if data == 0 {
            return None;
        }
        // the counters may cover only a clone's range (zbd_file_reset)
        self.sectors_with_data = self.sectors_with_data.saturating_sub(data);
        self.wp_sectors_with_data = self.wp_sectors_with_data.saturating_sub(data);
        self.zones[i].wp = z.start;
        Some((z.start, self.zone_end(i) - z.start))
    }

    /// fio `zbd_close_zone` (by clone `td`).
    fn close_zone(&mut self, td: u32, i: usize) {
        if !self.zones[i].open {
            return;
        }
        if let Some(p) = self.open_zones.iter().position(|&z| z == i) {
            self.open_zones.remove(p);
            let n = self.td_open.entry(td).or_insert(0);
            *n = n.saturating_sub(1);
            self.zones[i].open = false;
        }
    }

    fn full(&self, i: usize, required: u64) -> bool {
        let z = &self.zones[i];
        z.has_wp && z.wp + required > z.cap_end()
    }

    /// fio `zbd_open_zone`.
    fn open_zone(&mut self, f: &ZbdFile, i: usize) -> bool {
        if f.verify && self.full(i, f.min_bs[Ddir::Write]) {
            return false;
        }
        if self.max_open_zones == 0 {
            return true;
        }
        let z = &self.zones[i];
        if z.open {
            return z.wp < z.cap_end();
        }
        let mine = self.td_open.get(&f.td).copied().unwrap_or(0);
        if f.job_max_open_zones > 0 && mine >= f.job_max_open_zones {
            return false;
        }
        if self.open_zones.len() as u32 >= self.max_open_zones {
            return false;
        }
        self.open_zones.push(i);
        *self.td_open.entry(f.td).or_insert(0) += 1;
        self.zones[i].open = true;
        true
    }

    /// Another clone holds zone `i`'s lock.
    fn locked_by_other(&self, f: &ZbdFile, i: usize) -> bool {
        self.zones
            .get(i)
            .and_then(|z| z.owner)
            .is_some_and(|(td, _)| td != f.td)
    }

    /// fio `zbd_adjust_ddir`: a random mixed job's first read becomes a
    /// write while no zone holds data.
    pub fn adjust_ddir(&self, f: &ZbdFile, ddir: Ddir) -> Ddir {
        if ddir != Ddir::Read || !f.rw || self.sectors_with_data > 0 || f.read_beyond_wp {
            ddir
        } else {
            Ddir::Write
        }
    }

    /// fio `zbd_adjust_block` for an IO of `len` bytes at `offset` in
    /// direction `ddir`; `own_in_flight`: the clone's IOs in flight.
    pub fn adjust_block(
        &mut self,
        f: &ZbdFile,
        ddir: Ddir,
        offset: u64,
        len: u64,
        own_in_flight: u32,
    ) -> Adjust {
        let min_bs = f.min_bs[ddir].max(1);
        let zb = self.zone_idx(offset);
        if zb >= self.zones.len() {
            return Adjust::Eof;
        }
        if !self.zones[zb].has_wp {
            return self.conventional(ddir, zb, offset, len, min_bs);
        }
        if ddir == Ddir::Read && f.read_beyond_wp {
            return Adjust::Accept {
                offset,
                len,
                reset: None,
            };
        }
        if self.locked_by_other(f, zb) {
            return self.busy(own_in_flight);
        }
        match ddir {
            Ddir::Read => self.adjust_read(f, zb, offset, len, min_bs, own_in_flight),
            Ddir::Write => self.adjust_write(f, zb, offset, len, min_bs, own_in_flight),
            Ddir::Trim => {
                // a random trim goes to a zone with data
                if !f.random || self.zones[zb].wp > self.zones[zb].start {
                    return Adjust::Accept {
                        offset,
                        len,
                        reset: None,
                    };
                }
                match self.find_zone(f, 1, zb) {
                    Some(z) if self.locked_by_other(f, z) => self.busy(own_in_flight),
                    Some(z) => Adjust::Accept {
                        offset: self.zones[z].start,
                        len,
                        reset: None,
                    },
                    None => Adjust::Eof,
                }
            }
        }
    }

    fn busy(&self, own_in_flight: u32) -> Adjust {
        // fio zone_lock: the lock is busy, so the clone first completes
        // its own IO (io_u_quiesce), then blocks
        if own_in_flight > 0 {
            Adjust::Quiesce
        } else {
            Adjust::Busy
        }
    }

    /// A conventional zone: anything but a write crossing into a
    /// sequential zone goes as it is.
    fn conventional(&self, ddir: Ddir, zb: usize, offset: u64, len: u64, min_bs: u64) -> Adjust {
        let next = self.zone_start(zb + 1);
        if ddir != Ddir::Write || !self.has_wp(zb + 1) || offset + len <= next {
            return Adjust::Accept {
                offset,
                len,
                reset: None,
            };
        }
        let (off, new_len) = if offset + min_bs > next {
            let o = self.zones[zb].start + next - offset;
            (o, len.min(next - o))
        } else {
            (offset, next - offset)
        };
        Adjust::Accept {
            offset: off,
            len: new_len / min_bs * min_bs,
            reset: None,
        }
    }

    fn adjust_read(
        &mut self,
        f: &ZbdFile,
        zb: usize,
        offset: u64,
        len: u64,
        min_bs: u64,
        own_in_flight: u32,
    ) -> Adjust {
        let orig_start = self.zones[zb].start;
        let mut z = zb;
        let mut off = offset;
        let mut range = self.zones[z].wp - self.zones[z].start;
        if range < min_bs || (!f.random && off + min_bs > self.zones[z].wp) {
            let Some(found) = self.find_zone(f, min_bs, zb) else {
                return Adjust::Eof;
            };
            if self.locked_by_other(f, found) {
                return self.busy(own_in_flight);
            }
            z = found;
            range = self.zones[z].wp - self.zones[z].start;
            if !f.random {
                off = self.zones[z].start;
            }
        }
        let zone = self.zones[z];
        if range <= len {
            off = zone.start;
        } else if f.random {
            off = zone.start + ((off - orig_start) % (range - len)) / min_bs * min_bs;
        }
        if !zone.has_wp {
            return Adjust::Accept {
                offset: off,
                len,
                reset: None,
            };
        }
        let new_len = len.min(zone.wp - off) / min_bs * min_bs;
        Adjust::Accept {
            offset: off,
            len: new_len,
            reset: None,
        }
    }

    fn adjust_write(
        &mut self,
        f: &ZbdFile,
        zb: usize,
        offset: u64,
        len: u64,
        min_bs: u64,
        own_in_flight: u32,
    ) -> Adjust {
        if len > self.zone_size {
            // "I/O buflen exceeds zone size"
            return Adjust::Fail(EINVAL);
        }
        let mut z = zb;
        if !self.open_zone(f, z) {
            z = match self.convert_to_open_zone(f, offset, own_in_flight) {
                Ok(z) => z,
                Err(a) => return a,
            };
        }
        if self.locked_by_other(f, z) {
            return self.busy(own_in_flight);
        }
        let threshold = f.reset_frequency > 0.0
            && self.wp_sectors_with_data as f64 >= f.io_size as f64 * f.reset_threshold;
        let full = self.full(z, min_bs);
        if (full || (threshold && self.write_cnt <= 1)) && own_in_flight > 0 {
            // the reset is synchronous: fio waits for the writes in flight
            return Adjust::Quiesce;
        }
        let mut reset_zone = false;
        if threshold {
            // fio zbd_dec_and_reset_write_cnt
            self.write_cnt = self.write_cnt.saturating_sub(1);
            if self.write_cnt == 0 {
                self.reset_write_cnt(f);
                reset_zone = true;
            }
        }
        let mut reset = None;
        if reset_zone || full {
            reset = self.reset_zone(z);
            if self.zones[z].capacity < min_bs {
                return Adjust::Fail(EINVAL);
            }
        }
        let zone = self.zones[z];
        let off = zone.wp;
        if !Self::valid(f, off) {
            return Adjust::Fail(EINVAL);
        }
        let new_len = len.min(zone.cap_end() - off) / min_bs * min_bs;
        if new_len < min_bs {
            // "zone remainder too small"
            return Adjust::Fail(EIO);
        }
        Adjust::Accept {
            offset: off,
            len: new_len,
            reset,
        }
    }

    /// fio `pick_random_zone_idx`: an index into the open-zone list from
    /// where the IO's offset lies in the clone's range.
    fn pick_random(&self, f: &ZbdFile, offset: u64) -> usize {
        let n = self.open_zones.len() as u128;
        ((u128::from(offset - f.file_offset) * n) / u128::from(f.io_size.max(1))) as usize
    }

    /// fio `zbd_convert_to_open_zone`: the zone a write that cannot go to
    /// its own zone goes to (its write pointer is where the write lands).
    fn convert_to_open_zone(
        &mut self,
        f: &ZbdFile,
        offset: u64,
        own_in_flight: u32,
    ) -> Result<usize, Adjust> {
        let min_bs = f.min_bs[Ddir::Write].max(1);
        let (min_zone, max_zone) = self.range(f);
        let limited = self.max_open_zones > 0 || f.job_max_open_zones > 0;
        let mut zone_idx = if limited && !self.open_zones.is_empty() {
            self.open_zones[self.pick_random(f, offset).min(self.open_zones.len() - 1)]
        } else {
            self.zone_idx(offset)
        };
        zone_idx = zone_idx.clamp(min_zone, max_zone.saturating_sub(1).max(min_zone));
        let examine = loop {
            let has_wp = self.zones[zone_idx].has_wp;
            if has_wp {
                if !limited {
                    break true;
                }
                if self.open_zones.is_empty() {
                    break false;
                }
            }
            let n = self.open_zones.len();
            let first = self.pick_random(f, offset);
            let cand = (0..n)
                .map(|k| self.open_zones[(first + k) % n])
                .find(|&z| (min_zone..max_zone).contains(&z));
            let Some(cand) = cand else {
                return Err(Adjust::Eof);
            };
            if cand == zone_idx {
                break true;
            }
            zone_idx = cand;
        };
        if examine && self.zones[zone_idx].wp + min_bs <= self.zones[zone_idx].cap_end() {
            return Ok(zone_idx);
        }
        let mine = self.td_open.get(&f.td).copied().unwrap_or(0);
        let open = self.open_zones.len() as u32;
        let wait_zone_close = open as usize == max_zone - min_zone
            || (self.max_open_zones > 0 && open == self.max_open_zones)
            || (f.job_max_open_zones > 0 && mine == f.job_max_open_zones);
        if wait_zone_close && own_in_flight > 0 {
            return Err(Adjust::Quiesce);
        }
        if let Some(z) = self.open_next_zone(f, zone_idx, min_zone) {
            return Ok(z);
        }
        // an open zone the write still fits in
        if let Some(&z) = self
            .open_zones
            .iter()
            .filter(|&&z| (min_zone..max_zone).contains(&z))
            .find(|&&z| self.zones[z].wp + min_bs <= self.zones[z].cap_end())
        {
            return Ok(z);
        }
        // fio waits for IO in flight to close zones, then tries again
        if own_in_flight > 0 {
            return Err(Adjust::Quiesce);
        }
        if self.in_flight > 0 {
            return Err(Adjust::Busy);
        }
        Err(Adjust::Eof)
    }

    /// The first zone after `zone_idx` in `f`'s range (wrapping to
    /// `min_zone`) that is closed and opens now (fio
    /// `zbd_convert_to_open_zone`'s search for a zone to open).
    fn open_next_zone(&mut self, f: &ZbdFile, zone_idx: usize, min_zone: usize) -> Option<usize> {
        let mut z = zone_idx;
        for _ in 0..f.io_size / self.zone_size {
            z += 1;
            if z >= self.zones.len() || !Self::valid(f, self.zones[z].start) {
                z = min_zone;
            }
            if !self.zones[z].has_wp || self.zones[z].open {
                continue;
            }
            if self.open_zone(f, z) {
                return Some(z);
            }
        }
        None
    }

    /// fio `zbd_find_zone`: the next zone after `zb` (random IO: also the
    /// nearest before it) holding `min_bytes` of data.
    fn find_zone(&self, f: &ZbdFile, min_bytes: u64, zb: usize) -> Option<usize> {
        let (zf, zl) = self.range(f);
        let readable = |i: usize| self.zones[i].start + min_bytes <= self.zones[i].wp;
        let mut z1 = zb + 1;
        let mut z2 = zb as i64 - 1;
        while z1 < zl || z2 >= zf as i64 {
            if z1 < zl {
                if readable(z1) {
                    return Some(z1);
                }
            } else if !f.random {
                break;
            }
            if f.random && z2 >= zf as i64 && readable(z2 as usize) {
                return Some(z2 as usize);
            }
            z1 += 1;
            z2 -= 1;
        }
        None
    }

    /// fio `zbd_queue_io` when clone `f.td` issues an accepted IO: a write
    /// moves the write pointer; the clone holds the zone until the IO
    /// completes ([`ZbdInfo::put_io`]).
    pub fn queue_io(&mut self, f: &ZbdFile, ddir: Ddir, offset: u64, len: u64) {
        let i = self.zone_idx(offset);
        let Some(z) = self.zones.get_mut(i) else {
            return;
        };
        if !z.has_wp {
            return;
        }
        if ddir == Ddir::Write {
            let zone_end = (offset + len).min(z.cap_end());
            if z.wp <= zone_end {
                self.sectors_with_data += zone_end - z.wp;
                self.wp_sectors_with_data += zone_end - z.wp;
            }
            z.wp = zone_end;
        }
        z.owner = Some(match z.owner {
            Some((td, n)) if td == f.td => (td, n + 1),
            _ => (f.td, 1),
        });
        self.in_flight += 1;
    }

    /// fio `zbd_put_io` at completion: a write that reached the zone's
    /// capacity closes it (`zbd_end_zone_io`); the lock is released with
    /// the clone's last IO in the zone.
    pub fn put_io(&mut self, f: &ZbdFile, ddir: Ddir, offset: u64, len: u64, error: i32) {
        let i = self.zone_idx(offset);
        let Some(z) = self.zones.get_mut(i) else {
            return;
        };
        if !z.has_wp {
            return;
        }
        let cap_end = z.cap_end();
        z.owner = match z.owner {
            Some((td, n)) if n > 1 => Some((td, n - 1)),
            _ => None,
        };
        self.in_flight = self.in_flight.saturating_sub(1);
        if ddir == Ddir::Write && error == 0 && offset + len >= cap_end {
            self.close_zone(f.td, i);
        }
    }

    /// fio `zbd_do_io_u_trim` when a trim is issued: a trim of a
    /// sequential zone resets it. `Ok(true)`: it is a zone reset (whether
    /// or not the zone held data: `counted` says if fio counts it),
    /// `Ok(false)`: a plain trim (conventional zone), `Err`: EINVAL (not
    /// at the zone's start).
    pub fn trim(&mut self, f: &ZbdFile, offset: u64) -> Result<(bool, bool), i32> {
        let i = self.zone_idx(offset);
        if !self.has_wp(i) {
            return Ok((false, false));
        }
        if offset != self.zones[i].start {
            return Err(EINVAL);
        }
        let _ = f;
        Ok((true, self.reset_zone(i).is_some()))
    }

    /// Bytes written below the write pointers (fio `sectors_with_data`).
    pub fn sectors_with_data(&self) -> u64 {
        self.sectors_with_data
    }
}

#[cfg(test)]
#[path = "zbd_tests.rs"]
mod tests;
