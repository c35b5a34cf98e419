//! Per-device disk statistics (`struct disk_stats`), updated where the
//! kernel updates them: at request start (`blk_account_io_start`) and at
//! request completion (`blk_account_io_done`).
//!
//! # Busy time (`io_ticks`) generations — [`TicksMode`]
//!
//! The kernel keeps `io_ticks` in jiffies and has changed how it advances it
//! (`update_io_ticks` in block/blk-core.c; docs/accounting.md). Each generation is selectable:
//!
//! | mode | kernels | at start | at completion |
//! |---|---|---|---|
//! | `round-stats` | ≤ 4.20 | if in flight: `+= now − stamp` | same |
//! | `sampling-v1` | 5.0–5.6 | new jiffy: `+= 1` | new jiffy: `+= 1` |
//! | `sampling-v2` | 5.7–6.9 | new jiffy: `+= 1` | new jiffy: `+= now − stamp` |
//! | `inflight` | 6.10+ | new jiffy and already in flight: `+= now − stamp` | new jiffy: `+= now − stamp` |
//! | `precise` | blkqos | exact ns with ≥ 1 request in flight | same |
//! | `off` | `queue/iostats = 0` | nothing is accounted | nothing |
//!
//! Worked example (HZ=1000): a 60 µs IO starting every ~1.06 ms. Under
//! `sampling-v1` every start lands in a new jiffy and adds a whole jiffy:
//! %util ≈ 94% for a device busy 5.7% of the time; `precise` reports 5.7%.
//!
//! # time_in_queue
//! Since 5.7 the kernel reports the sum of completed request times
//! (`nsecs` of every stat group / 10^6) — which is what `/proc/diskstats`
//! field 11 shows here in every mode except `round-stats`, where it is the
//! in-flight integral the old kernel kept (in jiffies). The exact in-flight
//! integral is always available as [`DiskStats::inflight_integral_ns`].
//!
//! # Cost
//! Precise accounting reuses the timestamps the driver already takes for
//! every request (start and completion), so it adds one subtraction and two
//! additions per event, no clock read.

use blkqos_core::{Instant, IoOp, Jiffies};

/// How busy time is accounted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TicksMode {
    /// `round-stats` (Linux ≤ 4.20, `part_round_stats`): while anything is
    /// in flight, every start and completion adds `now − stamp`.
    RoundStats,
    /// `sampling-v1` (Linux 5.0–5.6, `update_io_ticks`): the first start or
    /// completion in a new jiffy adds one whole jiffy.
    SamplingV1,
    /// `sampling-v2` (Linux 5.7–6.9): a start in a new jiffy adds one
    /// jiffy; a completion in a new jiffy adds `now − stamp`.
    SamplingV2,
    /// `inflight` (Linux 6.10+): a start in a new jiffy adds `now − stamp`
    /// only if requests were already in flight; a completion in a new
    /// jiffy adds `now − stamp`.
    Inflight,
    /// `precise` (blkqos only): exact nanoseconds with at least one request
    /// in flight, not rounded to jiffies. The default.
    #[default]
    Precise,
    /// No accounting at all (`/sys/block/X/queue/iostats = 0`): every
    /// counter stays 0. For measuring what accounting costs.
    Off,
}

impl TicksMode {
    /// The names [`TicksMode::by_name`] accepts and [`TicksMode::name`]
    /// returns, one per mode, in declaration order (kernel aliases such as
    /// `linux-6.1` are accepted too but not listed).
    pub const NAMES: &'static [&'static str] = &[
        "round-stats",
        "sampling-v1",
        "sampling-v2",
        "inflight",
        "precise",
        "off",
    ];

    /// The mode called `s`: one of [`TicksMode::NAMES`], or a kernel alias
    /// (`linux-4.19`, `linux-5.4`, `linux-6.1`, `linux-6.6`, `linux-6.12`,
    /// `linux-6.18`) for the generation that kernel uses. `None` for
    /// anything else.
    pub fn by_name(s: &str) -> Option<Self> {
        Some(match s {
            "round-stats" | "linux-4.19" => TicksMode::RoundStats,
            "sampling-v1" | "linux-5.4" => TicksMode::SamplingV1,
            "sampling-v2" | "linux-6.1" | "linux-6.6" => TicksMode::SamplingV2,
            "inflight" | "linux-6.12" | "linux-6.18" => TicksMode::Inflight,
            "precise" => TicksMode::Precise,
            "off" => TicksMode::Off,
            _ => return None,
        })
    }
    /// The mode's canonical name (an entry of [`TicksMode::NAMES`]).
    pub fn name(self) -> &'static str {
        match self {
            TicksMode::RoundStats => "round-stats",
            TicksMode::SamplingV1 => "sampling-v1",
            TicksMode::SamplingV2 => "sampling-v2",
            TicksMode::Inflight => "inflight",
            TicksMode::Precise => "precise",
            TicksMode::Off => "off",
        }
    }
}

/// One device's disk statistics, as the kernel keeps them in `struct
/// disk_stats` and shows them in `/proc/diskstats`: per-stat-group counters
/// (read, write, discard, flush), requests in flight, and busy time
/// (`io_ticks`) advanced by the selected [`TicksMode`]. The exact busy time
/// and in-flight integral are kept alongside in every mode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiskStats {
    /// Completed IOs per stat group (read, write, discard, flush).
    pub ios: [u64; 4],
    /// Bios merged into an existing request per stat group (read, write,
    /// discard, flush), counted by [`DiskStats::merged`] (the kernel's
    /// `merges` field, `/proc/diskstats` fields 2, 6, 13).
    pub merges: [u64; 4],
    /// 512-byte sectors per stat group.
    pub sectors: [u64; 4],
    /// Sum of request times (start → completion) in ns per stat group.
    pub nsecs: [u64; 4],
    /// Requests in flight (read, write).
    pub in_flight: [u32; 2],
    /// Exact ns with at least one request in flight (always kept).
    pub busy_ns: u64,
    /// Exact ∫ in-flight dt, in request·ns (always kept).
    pub inflight_integral_ns: u128,
    mode: TicksMode,
    hz: u64,
    /// Where in its jiffy the run starts (ns).
    tick_phase_ns: u64,
    /// Jiffy-based io_ticks of the selected generation.
    io_ticks_jiffies: u64,
    /// `round-stats`: in-flight integral in request·jiffies.
    time_in_queue_jiffies: u64,
    /// `bd_stamp` in jiffies.
    stamp_jiffies: Jiffies,
    /// Exact-time stamp (ns) for the precise integrals.
    stamp: Instant,
}

impl Default for DiskStats {
    fn default() -> Self {
        Self::new(TicksMode::Precise, 1000)
    }
}

impl DiskStats {
    /// Jiffies count from a run start `phase_ns` into its jiffy.
    pub fn with_tick_phase(mut self, phase_ns: u64) -> Self {
        self.tick_phase_ns = phase_ns;
        self.stamp_jiffies = Instant(phase_ns).to_jiffies(self.hz);
        self
    }

    /// Empty statistics that advance `io_ticks` by `mode` with a jiffy of
    /// 1/`hz` s (`CONFIG_HZ`; 0 is taken as 1). The run starts at the
    /// beginning of a jiffy unless [`DiskStats::with_tick_phase`] says
    /// otherwise.
    pub fn new(mode: TicksMode, hz: u64) -> Self {
        DiskStats {
            ios: [0; 4],
            merges: [0; 4],
            sectors: [0; 4],
            nsecs: [0; 4],
            in_flight: [0; 2],
            busy_ns: 0,
            inflight_integral_ns: 0,
            mode,
            hz: hz.max(1),
            tick_phase_ns: 0,
            io_ticks_jiffies: 0,
            time_in_queue_jiffies: 0,
            stamp_jiffies: Jiffies::ZERO,
            stamp: Instant::ZERO,
        }
    }

    /// The busy-time generation these statistics follow.
    pub fn mode(&self) -> TicksMode {
        self.mode
    }

    fn inflight(&self) -> u64 {
        u64::from(self.in_flight[0] + self.in_flight[1])
    }

    /// Exact busy time and in-flight integral up to `now`.
    #[inline]
    fn advance_exact(&mut self, now: Instant) {
        if now > self.stamp {
            let n = self.inflight();
            if n > 0 {
                let dt = (now - self.stamp).as_ns();
                self.busy_ns += dt;
                self.inflight_integral_ns += u128::from(dt) * u128::from(n);
            }
            self.stamp = now;
        }
    }

    /// `update_io_ticks(part, now, end)` of the selected generation; called
    /// before the in-flight count changes.
    #[inline]
    fn update_io_ticks(&mut self, now: Instant, end: bool) {
        if matches!(self.mode, TicksMode::Precise | TicksMode::Off) {
            // no jiffies: skip the two divisions below on every IO
            return;
        }
        self.update_jiffy_ticks(now, end);
    }

    /// [`DiskStats::update_io_ticks`] of the jiffy-based generations (out
    /// of line: the default precise mode never comes here).
    #[inline(never)]
    fn update_jiffy_ticks(&mut self, now: Instant, end: bool) {
        let j = Instant(now.as_ns() + self.tick_phase_ns).to_jiffies(self.hz);
        let stamp = self.stamp_jiffies;
        match self.mode {
            TicksMode::Precise | TicksMode::Off => {}
            TicksMode::RoundStats => {
                // part_round_stats: charge the elapsed jiffies if busy
                let n = self.inflight();
                if n > 0 && j > stamp {
                    self.io_ticks_jiffies += j.since(stamp);
                    self.time_in_queue_jiffies += n * j.since(stamp);
                }
                self.stamp_jiffies = j;
            }
            TicksMode::SamplingV1 => {
                if j != stamp {
                    self.stamp_jiffies = j;
                    self.io_ticks_jiffies += 1;
                }
            }
            TicksMode::SamplingV2 => {
                if j > stamp {
                    self.stamp_jiffies = j;
                    self.io_ticks_jiffies += if end { j.since(stamp) } else { 1 };
                }
            }
            TicksMode::Inflight => {
                if j > stamp {
                    self.stamp_jiffies = j;
                    if end || self.inflight() > 0 {
                        self.io_ticks_jiffies += j.since(stamp);
                    }
                }
            }
        }
    }

    /// A request started (`blk_account_io_start`).
    #[inline]
    pub fn start(&mut self, op: IoOp, now: Instant) {
        if self.mode == TicksMode::Off {
            return;
        }
        self.advance_exact(now);
        self.update_io_ticks(now, false);
        self.in_flight[op.dir().idx()] += 1;
    }

    /// A bio merged into a request (`blk_account_io_merge_bio`).
    #[inline]
    pub fn merged(&mut self, op: IoOp) {
        self.merges[op.stat_group()] += 1;
    }

    /// A request completed (`blk_account_io_done`).
    #[inline]
    pub fn done(&mut self, op: IoOp, bytes: u64, started: Instant, now: Instant) {
        if self.mode == TicksMode::Off {
            return;
        }
        self.advance_exact(now);
        self.update_io_ticks(now, true);
        let g = op.stat_group();
        self.ios[g] += 1;
        self.sectors[g] += bytes >> 9;
        self.nsecs[g] += (now - started).as_ns();
        self.in_flight[op.dir().idx()] -= 1;
    }

    /// What a reader sees at `now` (`part_stat_show` / `diskstats_show`
    /// first bring io_ticks up to date when IO is in flight).
    pub fn sync(&mut self, now: Instant) {
        self.advance_exact(now);
        if self.inflight() > 0 {
            self.update_io_ticks(now, true);
        }
    }

    /// Busy time in ms as `/proc/diskstats` field 10 shows it.
    pub fn io_ticks_ms(&self) -> u64 {
        match self.mode {
            TicksMode::Precise => self.busy_ns / 1_000_000,
            _ => self.io_ticks_jiffies * 1000 / self.hz,
        }
    }

    /// Busy time in ns at the mode's resolution (jiffies × ns/jiffy).
    pub fn io_ticks_ns(&self) -> u64 {
        match self.mode {
            TicksMode::Precise => self.busy_ns,
            _ => self.io_ticks_jiffies * (1_000_000_000 / self.hz),
        }
    }

    /// Field 11 (`time_in_queue`, ms).
    pub fn time_in_queue_ms(&self) -> u64 {
        match self.mode {
            TicksMode::RoundStats => self.time_in_queue_jiffies * 1000 / self.hz,
            _ => self.nsecs.iter().sum::<u64>() / 1_000_000,
        }
    }

    /// The 17 counters of a `/proc/diskstats` line (after `major minor name`).
    pub fn diskstats_fields(&self) -> [u64; 17] {
        let ms = |ns: u64| ns / 1_000_000;
        [
            self.ios[0],
            self.merges[0],
            self.sectors[0],
            ms(self.nsecs[0]),
            self.ios[1],
            self.merges[1],
            self.sectors[1],
            ms(self.nsecs[1]),
            self.inflight(),
            self.io_ticks_ms(),
            self.time_in_queue_ms(),
            self.ios[2],
            self.merges[2],
            self.sectors[2],
            ms(self.nsecs[2]),
            self.ios[3],
            ms(self.nsecs[3]),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_time_is_union_of_intervals() {
        let mut d = DiskStats::default();
        d.start(IoOp::Read, Instant(10));
        d.start(IoOp::Write, Instant(15));
        d.done(IoOp::Read, 4096, Instant(10), Instant(20));
        d.done(IoOp::Write, 4096, Instant(15), Instant(30));
        d.start(IoOp::Read, Instant(40));
        d.done(IoOp::Read, 512, Instant(40), Instant(45));
        assert_eq!(d.busy_ns, 20 + 5);
        assert_eq!(d.inflight_integral_ns, 5 + 2 * 5 + 10 + 5);
        assert_eq!(d.ios, [2, 1, 0, 0]);
        assert_eq!(d.sectors, [9, 8, 0, 0]);
    }

    /// 60 µs IOs every 1.06 ms at HZ=1000: the jiffy generations.
    fn sparse(mode: TicksMode) -> DiskStats {
        let mut d = DiskStats::new(mode, 1000);
        let mut t = 300_000u64; // start mid-jiffy
        for _ in 0..1000 {
            d.start(IoOp::Read, Instant(t));
            d.done(IoOp::Read, 4096, Instant(t), Instant(t + 60_000));
            t += 1_060_000;
        }
        d.sync(Instant(t));
        d
    }

    #[test]
    fn generations_on_sparse_fast_io() {
        let elapsed_ms = 1060.0;
        let util = |d: &DiskStats| d.io_ticks_ms() as f64 / elapsed_ms * 100.0;
        let v1 = sparse(TicksMode::SamplingV1);
        let v2 = sparse(TicksMode::SamplingV2);
        let inflight = sparse(TicksMode::Inflight);
        let precise = sparse(TicksMode::Precise);
        let rs = sparse(TicksMode::RoundStats);
        // every start in a new jiffy counts a whole jiffy
        assert!(util(&v1) > 90.0, "v1 {}", util(&v1));
        assert!(util(&v2) > 90.0, "v2 {}", util(&v2));
        // exact: 60 ms busy of 1060
        assert_eq!(precise.busy_ns, 60_000_000);
        assert!((util(&precise) - 5.66).abs() < 0.01);
        // inflight counts the jiffy boundaries IOs straddle: unbiased on average
        assert!(util(&inflight) < 20.0, "inflight {}", util(&inflight));
        assert!(util(&rs) < 20.0, "round-stats {}", util(&rs));
    }

    #[test]
    fn time_in_queue_is_sum_of_request_times() {
        let d = sparse(TicksMode::Inflight);
        assert_eq!(d.time_in_queue_ms(), 60);
        assert_eq!(d.diskstats_fields()[10], 60);
        assert_eq!(d.diskstats_fields()[0], 1000);
    }
}
