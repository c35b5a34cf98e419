//! One group's budget in one direction: the slice and the wait rules
//! (`tg_within_bps_limit`, `tg_within_iops_limit`, `throtl_start_new_slice`,
//! `throtl_extend_slice`, `throtl_trim_slice`, `throtl_slice_used`).
//! Points in time are [`Jiffies`] (`now`, a slice's start and end); slice
//! lengths, elapsed times and waits are counts of jiffies (`u64`); all math
//! is the kernel's truncating integer math.

use super::knob::{BPS_MAX, IOPS_MAX};
use super::variant::{IopsWait, TrimRule};
use crate::math::{rounddown, roundup};
use crate::time::Jiffies;

/// `calculate_bytes_allowed`: `bps · t / HZ` for `t` jiffies, or "unlimited" when the
/// product could overflow (`ilog2(bps) + ilog2(t) − ilog2(HZ) > 62`).
pub fn bytes_allowed(bps: u64, t: u64, hz: u64) -> u64 {
    if bps == BPS_MAX || t == 0 {
        return if bps == BPS_MAX { u64::MAX } else { 0 };
    }
    if bps.ilog2() + t.ilog2() > 62 + hz.ilog2() {
        return u64::MAX;
    }
    match bps.checked_mul(t) {
        Some(p) => p / hz,
        None => crate::math::mul_div_floor(bps, t, hz),
    }
}

/// `calculate_io_allowed`: `min(iops · t / HZ, UINT_MAX)` for `t` jiffies.
pub fn io_allowed(iops: u64, t: u64, hz: u64) -> u64 {
    if iops >= IOPS_MAX {
        return IOPS_MAX;
    }
    match iops.checked_mul(t) {
        Some(p) => (p / hz).min(IOPS_MAX),
        None => crate::math::mul_div_floor(iops, t, hz).min(IOPS_MAX),
    }
}

/// What [`DirBudget::update_slice`] did to the slice (each logged by the
/// kernel: `new slice`, `extend slice`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SliceUpdate {
    /// `throtl_start_new_slice`.
    New,
    /// `throtl_extend_slice`.
    Extended,
    /// Long enough already.
    Kept,
}

/// Budget state of one direction of one group.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DirBudget {
    /// Bytes charged in the current slice (negative = carried-over credit).
    pub bytes_disp: i64,
    /// IOs charged in the current slice.
    pub io_disp: i64,
    /// First jiffy of the current slice (`tg->slice_start[rw]`).
    pub slice_start_jiffy: Jiffies,
    /// Last jiffy of the current slice (`tg->slice_end[rw]`).
    pub slice_end_jiffy: Jiffies,
    /// IOs of split bios not yet taken into `io_disp` (`io_split_cnt`,
    /// 5.15 – 5.17 only; dropped when a new slice starts).
    pub io_split: i64,
}

impl DirBudget {
    /// `throtl_slice_used`: true unless `start ≤ now ≤ end`.
    pub fn slice_used(&self, now: Jiffies) -> bool {
        !(self.slice_start_jiffy <= now && now <= self.slice_end_jiffy)
    }

    /// `throtl_start_new_slice`.
    pub fn start_new_slice(&mut self, now: Jiffies, slice: u64, clear: bool) {
        if clear {
            self.bytes_disp = 0;
            self.io_disp = 0;
        }
        self.io_split = 0;
        self.slice_start_jiffy = now;
        self.slice_end_jiffy = now + slice;
    }

    /// `throtl_start_new_slice_with_credit`: a parent whose slice is used
    /// restarts it no later than the child's slice start.
    pub fn start_new_slice_with_credit(&mut self, now: Jiffies, slice: u64, start: Jiffies) {
        self.bytes_disp = 0;
        self.io_disp = 0;
        self.io_split = 0;
        if start >= self.slice_start_jiffy {
            self.slice_start_jiffy = start;
        }
        self.slice_end_jiffy = now + slice;
    }

    /// `throtl_set_slice_end`: `roundup(jiffy_end, throtl_slice)`.
    pub fn set_slice_end(&mut self, end: Jiffies, slice: u64) {
        self.slice_end_jiffy = end.roundup(slice);
    }

    /// `throtl_extend_slice`: only ever lengthens; `true` when it did
    /// (the kernel logs `extend slice` then).
    pub fn extend_slice(&mut self, end: Jiffies, slice: u64) -> bool {
        let longer = self.slice_end_jiffy < end;
        if longer {
            self.set_slice_end(end, slice);
        }
        longer
    }

    /// `tg_update_slice` (mainline) / the head of `tg_may_dispatch`
    /// (legacy): a new slice, or the current one extended to a slice
    /// from now, or kept.
    pub fn update_slice(&mut self, now: Jiffies, slice: u64, queued: bool) -> SliceUpdate {
        if self.slice_used(now) && !queued {
            self.start_new_slice(now, slice, true);
            SliceUpdate::New
        } else if self.extend_slice(now + slice, slice) {
            SliceUpdate::Extended
        } else {
            SliceUpdate::Kept
        }
    }

    /// `tg_within_bps_limit`: 0 if `size` bytes may go now, else the wait
    /// in jiffies.
    pub fn bps_wait(&self, bps: u64, size: u64, now: Jiffies, slice: u64, hz: u64) -> u64 {
        if bps == BPS_MAX {
            return 0;
        }
        let elapsed = self.elapsed(now);
        let rnd = roundup(if elapsed == 0 { slice } else { elapsed }, slice);
        let allowed = bytes_allowed(bps, rnd, hz);
        let need = self.bytes_disp as i128 + size as i128;
        if allowed == u64::MAX || (allowed > 0 && need <= allowed as i128) {
            return 0;
        }
        let extra = (need - allowed as i128).max(0) as u128;
        let mut wait = (extra * hz as u128 / bps as u128) as u64;
        if wait == 0 {
            wait = 1;
        }
        wait + (rnd - elapsed)
    }

    /// `tg_within_iops_limit` under the given rule: 0 if one more IO may go
    /// now, else the wait in jiffies (0 is possible only under
    /// [`IopsWait::SliceRemainder`], the 2019 bug).
    pub fn iops_wait(
        &self,
        iops: u64,
        rule: IopsWait,
        now: Jiffies,
        slice: u64,
        hz: u64,
    ) -> Option<u64> {
        if iops >= IOPS_MAX {
            return None;
        }
        let elapsed = self.elapsed(now);
        let rnd = match rule {
            IopsWait::Legacy | IopsWait::SliceRemainder => {
                roundup(if elapsed == 0 { slice } else { elapsed }, slice)
            }
            IopsWait::SliceRemainderFixed | IopsWait::Mainline => roundup(elapsed + 1, slice),
        };
        let allowed = io_allowed(iops, rnd, hz) as i64;
        // the kernel's `io_disp + 1 <= io_allowed`
        if allowed > 0 && self.io_disp < allowed {
            return None;
        }
        Some(match rule {
            IopsWait::Legacy => {
                let w = ((self.io_disp + 1).max(0) as u64 * hz) / iops + 1;
                if w > elapsed {
                    w - elapsed
                } else {
                    1
                }
            }
            IopsWait::SliceRemainder | IopsWait::SliceRemainderFixed => rnd - elapsed,
            IopsWait::Mainline => (rnd - elapsed).max(hz / iops + 1),
        })
    }

    /// `throtl_trim_slice` after a dispatch or a direct pass: `true` when
    /// it got as far as the kernel's `trim slice` message (whole slices
    /// have passed).
    pub fn trim(
        &mut self,
        bps: u64,
        iops: u64,
        rule: TrimRule,
        now: Jiffies,
        slice: u64,
        hz: u64,
    ) -> bool {
        if self.slice_used(now) {
            return false;
        }
        self.set_slice_end(now + slice, slice);
        match rule {
            TrimRule::WholeSlices => self.trim_whole_slices(bps, iops, now, slice, hz),
            TrimRule::KeepOneSlice => self.trim_keep_one_slice(bps, iops, now, slice, hz),
        }
    }

    /// The body of `throtl_trim_slice` before 2025: trim every whole
    /// elapsed slice from both counters (floored at 0) and move the start.
    #[inline]
    fn trim_whole_slices(
        &mut self,
        bps: u64,
        iops: u64,
        now: Jiffies,
        slice: u64,
        hz: u64,
    ) -> bool {
        let n = self.elapsed(now) / slice;
        if n == 0 {
            return false;
        }
        let t = slice * n;
        let bytes_trim = if bps == BPS_MAX {
            u64::MAX
        } else {
            bytes_allowed(bps, t, hz)
        };
        let io_trim = if iops >= IOPS_MAX {
            IOPS_MAX
        } else {
            io_allowed(iops, t, hz)
        };
        if bytes_trim == 0 && io_trim == 0 {
            return false;
        }
        self.bytes_disp = if self.bytes_disp as i128 >= bytes_trim as i128 {
            self.bytes_disp - bytes_trim as i64
        } else {
            0
        };
        self.io_disp = if self.io_disp >= io_trim as i64 {
            self.io_disp - io_trim as i64
        } else {
            0
        };
        self.slice_start_jiffy += t;
        true
    }

    /// The body of `throtl_trim_slice` since 2025 (29cb95593430): keep one
    /// extra slice, trim the rest through `throtl_trim_bps` and
    /// `throtl_trim_iops`, and move the start.
    #[inline]
    fn trim_keep_one_slice(
        &mut self,
        bps: u64,
        iops: u64,
        now: Jiffies,
        slice: u64,
        hz: u64,
    ) -> bool {
        let mut t = rounddown(self.elapsed(now), slice);
        if t < 2 * slice {
            return false;
        }
        t -= slice;
        let bytes_trim = self.trim_bps(bps, t, hz);
        let io_trim = self.trim_iops(iops, t, hz);
        if bytes_trim == 0 && io_trim == 0 {
            return false;
        }
        self.slice_start_jiffy += t;
        true
    }

    /// `throtl_trim_bps`: the bytes trimmed for `t` jiffies at `bps` (all of
    /// `bytes_disp` when that is less); an unlimited bps trims nothing and
    /// keeps its counter.
    #[inline]
    fn trim_bps(&mut self, bps: u64, t: u64, hz: u64) -> i128 {
        if bps == BPS_MAX {
            return 0;
        }
        let t = bytes_allowed(bps, t, hz) as i128;
        if t <= 0 || (self.bytes_disp as i128) < t {
            let all = self.bytes_disp as i128;
            self.bytes_disp = 0;
            all
        } else {
            self.bytes_disp -= t as i64;
            t
        }
    }

    /// `throtl_trim_iops`: the IOs trimmed for `t` jiffies at `iops` (all of
    /// `io_disp` when that is less); an unlimited iops trims nothing and
    /// keeps its counter.
    #[inline]
    fn trim_iops(&mut self, iops: u64, t: u64, hz: u64) -> i64 {
        if iops >= IOPS_MAX {
            return 0;
        }
        let t = io_allowed(iops, t, hz) as i64;
        if t <= 0 || self.io_disp < t {
            let all = self.io_disp;
            self.io_disp = 0;
            all
        } else {
            self.io_disp -= t;
            t
        }
    }

    /// Carryover on a limit change (`__tg_update_carryover`), computed
    /// with the *old* limits: with bios queued, each limited dimension's
    /// counter becomes minus what the old limit still owed (`disp =
    /// -(allowed(elapsed) - disp)`), and an unlimited one starts from 0;
    /// with nothing queued both start from 0. (6.1 – 6.14 keep the carry
    /// in `carryover_*` beside a zeroed disp; the sums are the same.)
    pub fn carryover(&mut self, bps: u64, iops: u64, queued: bool, now: Jiffies, hz: u64) {
        if !queued {
            self.bytes_disp = 0;
            self.io_disp = 0;
            return;
        }
        let elapsed = self.elapsed(now);
        // the carry is taken only when the old limit allowed something
        // (the kernel's overflow guard), else the counter starts from 0
        let bytes_carry = match bytes_allowed(bps, elapsed, hz) {
            _ if bps == BPS_MAX => 0,
            0 => 0,
            a => (a as i128 - self.bytes_disp as i128).clamp(i64::MIN as i128, i64::MAX as i128)
                as i64,
        };
        let io_carry = match io_allowed(iops, elapsed, hz) as i64 {
            _ if iops >= IOPS_MAX => 0,
            0 => 0,
            a => a - self.io_disp,
        };
        self.bytes_disp = -bytes_carry;
        self.io_disp = -io_carry;
    }

    /// Jiffies from the slice's start to `now` (the kernel's `jiffies -
    /// tg->slice_start[rw]`). A slice never starts after the jiffy it is
    /// read at (`throtl_start_new_slice*` sets the start to now or earlier,
    /// a trim moves it by whole slices that have passed): [`Jiffies::since`]
    /// checks it in debug builds.
    #[inline]
    fn elapsed(&self, now: Jiffies) -> u64 {
        now.since(self.slice_start_jiffy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(io_disp: i64, start: u64) -> DirBudget {
        let start = Jiffies(start);
        DirBudget {
            bytes_disp: 0,
            io_disp,
            slice_start_jiffy: start,
            slice_end_jiffy: start + 100,
            io_split: 0,
        }
    }

    /// The worked example of the module header: HZ 1000, slice 100, iops 1000; IO #101 at elapsed 5.
    #[test]
    fn b11_iops_1000() {
        let b = budget(100, 0);
        assert_eq!(
            b.iops_wait(1000, IopsWait::Legacy, Jiffies(5), 100, 1000),
            Some(97)
        );
        assert_eq!(
            b.iops_wait(1000, IopsWait::SliceRemainder, Jiffies(5), 100, 1000),
            Some(95)
        );
        assert_eq!(
            b.iops_wait(1000, IopsWait::SliceRemainderFixed, Jiffies(5), 100, 1000),
            Some(95)
        );
        // at elapsed = 100 the fixed rule rounds to 200: 200 allowed
        assert_eq!(
            b.iops_wait(1000, IopsWait::SliceRemainderFixed, Jiffies(100), 100, 1000),
            None
        );
    }

    /// iops 10 (1 IO per 100 ms slice), second IO at t = 0.
    #[test]
    fn b11_iops_10() {
        let b = budget(1, 0);
        assert_eq!(
            b.iops_wait(10, IopsWait::Legacy, Jiffies(0), 100, 1000),
            Some(201)
        );
        assert_eq!(
            b.iops_wait(10, IopsWait::SliceRemainderFixed, Jiffies(0), 100, 1000),
            Some(100)
        );
        assert_eq!(
            b.iops_wait(10, IopsWait::Mainline, Jiffies(0), 100, 1000),
            Some(101)
        );
    }

    /// The 2019 bug: an exact slice multiple gives a zero wait.
    #[test]
    fn zero_wait_at_slice_multiple() {
        let b = budget(20, 0);
        // iops 100, slice 100: 10 allowed per slice; at elapsed 200, 20 allowed
        assert_eq!(
            b.iops_wait(100, IopsWait::SliceRemainder, Jiffies(200), 100, 1000),
            Some(0)
        );
        assert_eq!(
            b.iops_wait(100, IopsWait::SliceRemainderFixed, Jiffies(200), 100, 1000),
            None
        );
        let b = budget(30, 0);
        assert_eq!(
            b.iops_wait(100, IopsWait::SliceRemainderFixed, Jiffies(200), 100, 1000),
            Some(100)
        );
    }

    /// iops · slice / HZ < 1: iops 5 with a 20 ms slice.
    #[test]
    fn tiny_iops_limit() {
        let b = budget(0, 0);
        // io_allowed(20) = 0 -> must wait; mainline guarantees HZ/iops + 1
        assert_eq!(
            b.iops_wait(5, IopsWait::SliceRemainderFixed, Jiffies(0), 20, 1000),
            Some(20)
        );
        assert_eq!(
            b.iops_wait(5, IopsWait::Mainline, Jiffies(0), 20, 1000),
            Some(201)
        );
        assert_eq!(
            b.iops_wait(5, IopsWait::Mainline, Jiffies(199), 20, 1000),
            None
        );
    }

    /// The seed experiment's numbers: riops=100, slice 20, IO #3 at 8 ms.
    #[test]
    fn seed_000_waits() {
        let b = DirBudget {
            bytes_disp: 0,
            io_disp: 2,
            slice_start_jiffy: Jiffies(0),
            slice_end_jiffy: Jiffies(20),
            io_split: 0,
        };
        assert_eq!(
            b.iops_wait(100, IopsWait::Legacy, Jiffies(8), 20, 1000),
            Some(23)
        );
        assert_eq!(
            b.iops_wait(100, IopsWait::SliceRemainderFixed, Jiffies(8), 20, 1000),
            Some(12)
        );
    }

    #[test]
    fn bps_wait_counts_from_slice_end() {
        // 1 MiB/s, slice 100: 104857 bytes per slice
        let b = DirBudget {
            bytes_disp: 104_857,
            ..budget(0, 0)
        };
        assert_eq!(b.bps_wait(1 << 20, 4096, Jiffies(10), 100, 1000), 3 + 90);
        assert_eq!(b.bps_wait(1 << 20, 0, Jiffies(10), 100, 1000), 0);
        assert_eq!(b.bps_wait(BPS_MAX, 1 << 30, Jiffies(10), 100, 1000), 0);
        // elapsed 0 considers one whole slice
        let b = budget(0, 50);
        assert_eq!(b.bps_wait(1 << 20, 4096, Jiffies(50), 100, 1000), 0);
    }

    #[test]
    fn allowed_overflow_is_unlimited() {
        assert_eq!(bytes_allowed(1 << 62, 4000, 1000), u64::MAX);
        assert_eq!(bytes_allowed(u64::MAX / 2, 1000, 1000), u64::MAX / 2);
        assert_eq!(bytes_allowed(1 << 20, 100, 1000), 104_857);
        assert_eq!(io_allowed(100, 20, 1000), 2);
        assert_eq!(io_allowed(1, 20, 1000), 0);
    }

    #[test]
    fn trim_keeps_one_slice() {
        let mut b = DirBudget {
            bytes_disp: 0,
            io_disp: 30,
            slice_start_jiffy: Jiffies(0),
            slice_end_jiffy: Jiffies(300),
            io_split: 0,
        };
        b.trim(
            BPS_MAX,
            100,
            TrimRule::KeepOneSlice,
            Jiffies(250),
            100,
            1000,
        );
        // rounddown(250) = 200 >= 2 slices; trim 100 jiffies = 10 IOs
        assert_eq!(b.slice_start_jiffy, Jiffies(100));
        assert_eq!(b.io_disp, 20);
        assert_eq!(b.slice_end_jiffy, Jiffies(400));
        let mut c = DirBudget {
            bytes_disp: 0,
            io_disp: 30,
            slice_start_jiffy: Jiffies(0),
            slice_end_jiffy: Jiffies(300),
            io_split: 0,
        };
        c.trim(BPS_MAX, 100, TrimRule::WholeSlices, Jiffies(250), 100, 1000);
        assert_eq!(c.slice_start_jiffy, Jiffies(200));
        assert_eq!(c.io_disp, 10);
    }

    /// `__tg_update_carryover` with bios queued: a dimension whose old
    /// limit was max starts from 0 (adding rbps to an riops-only group must
    /// not charge it the bytes it moved while unlimited).
    #[test]
    fn carryover_from_max_starts_at_zero() {
        let mut b = DirBudget {
            bytes_disp: 40 << 20,
            io_disp: 3,
            slice_start_jiffy: Jiffies(0),
            slice_end_jiffy: Jiffies(100),
            io_split: 0,
        };
        b.carryover(BPS_MAX, 100, true, Jiffies(50), 1000);
        assert_eq!(b.bytes_disp, 0);
        assert_eq!(b.io_disp, -2);
        // both old limits max: both counters restart
        let mut c = DirBudget {
            bytes_disp: 7,
            io_disp: 9,
            ..b
        };
        c.carryover(BPS_MAX, IOPS_MAX, true, Jiffies(50), 1000);
        assert_eq!((c.bytes_disp, c.io_disp), (0, 0));
        // nothing allowed yet (same jiffy as the slice start): no carry
        let mut d = DirBudget {
            io_disp: 4,
            ..budget(0, 50)
        };
        d.carryover(BPS_MAX, 100, true, Jiffies(50), 1000);
        assert_eq!(d.io_disp, 0);
    }

    /// `throtl_trim_bps` / `throtl_trim_iops` (6.16+): an unlimited
    /// dimension trims nothing and keeps its counter; when neither trims,
    /// the slice start stays.
    #[test]
    fn keep_one_slice_trim_leaves_max_dimensions() {
        let mut b = DirBudget {
            bytes_disp: 12345,
            io_disp: 30,
            slice_start_jiffy: Jiffies(0),
            slice_end_jiffy: Jiffies(300),
            io_split: 0,
        };
        b.trim(
            BPS_MAX,
            100,
            TrimRule::KeepOneSlice,
            Jiffies(250),
            100,
            1000,
        );
        assert_eq!(b.bytes_disp, 12345);
        assert_eq!((b.io_disp, b.slice_start_jiffy), (20, Jiffies(100)));
        let mut c = DirBudget {
            bytes_disp: 12345,
            io_disp: 30,
            slice_start_jiffy: Jiffies(0),
            slice_end_jiffy: Jiffies(300),
            io_split: 0,
        };
        c.trim(
            BPS_MAX,
            IOPS_MAX,
            TrimRule::KeepOneSlice,
            Jiffies(250),
            100,
            1000,
        );
        assert_eq!(
            (c.bytes_disp, c.io_disp, c.slice_start_jiffy),
            (12345, 30, Jiffies(0))
        );
        // whole-slice trim (6.1 - 6.14) trims a max dimension to 0
        let mut w = DirBudget {
            bytes_disp: 12345,
            io_disp: 30,
            slice_start_jiffy: Jiffies(0),
            slice_end_jiffy: Jiffies(300),
            io_split: 0,
        };
        w.trim(BPS_MAX, 100, TrimRule::WholeSlices, Jiffies(250), 100, 1000);
        assert_eq!(
            (w.bytes_disp, w.io_disp, w.slice_start_jiffy),
            (0, 10, Jiffies(200))
        );
    }

    #[test]
    fn carryover_credit_and_overdraft() {
        let mut b = DirBudget {
            bytes_disp: 0,
            io_disp: 3,
            slice_start_jiffy: Jiffies(0),
            slice_end_jiffy: Jiffies(100),
            io_split: 0,
        };
        // 50 jiffies at 100 iops allowed 5, used 3 -> 2 IOs of credit
        b.carryover(BPS_MAX, 100, true, Jiffies(50), 1000);
        assert_eq!(b.io_disp, -2);
        let mut c = b;
        c.carryover(BPS_MAX, 100, false, Jiffies(50), 1000);
        assert_eq!(c.io_disp, 0);
    }
}
