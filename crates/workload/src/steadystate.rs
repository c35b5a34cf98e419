//! fio's steady-state detection (`steadystate=`/`ss`, `ss_dur`, `ss_ramp`;
//! fio 3.33 `steadystate.c`): once a second a job's (or, with
//! `group_reporting`, its reporting group's) IOPS and bandwidth since the
//! previous check go into a ring of `ss_dur` samples; when the ring is
//! full, the criterion is judged over it (the largest deviation from the
//! mean, or the least-squares slope, absolute or as a percentage of the
//! mean) and the job (or group) stops once it is below the limit.
//!
//! [`SteadyStateSpec`] is the job's setting, [`SteadyState`] the detector
//! and what the report shows of it. The driver feeds the samples
//! ([`SteadyState::add_sample`]) from its one-second tick.

use blkqos_core::Duration;

/// What the criterion measures (fio `FIO_SS_IOPS` / bandwidth).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SsMetric {
    Iops,
    Bw,
}

/// `steadystate=` (`ss`), `steadystate_duration` (`ss_dur`),
/// `steadystate_ramp_time` (`ss_ramp`). Detection runs when `dur_s > 0`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SteadyStateSpec {
    pub metric: SsMetric,
    /// `_slope`: judge the least-squares slope, else the largest deviation
    /// from the mean (fio `FIO_SS_SLOPE`).
    pub slope: bool,
    /// The limit is a percentage of the mean (fio `FIO_SS_PCT`).
    pub pct: bool,
    /// The threshold: a percentage, IOPS, or bytes/s.
    pub limit: f64,
    /// `ss_dur` in whole seconds (fio `td_steadystate_init` divides the µs
    /// value by 10^6, truncating): the ring's length.
    pub dur_s: u64,
    /// `ss_ramp`: no samples are kept until one second after it has passed
    /// since the job's epoch.
    pub ramp: Duration,
}

impl Default for SteadyStateSpec {
    /// fio's option default `iops_slope:0.01%`, no duration (off).
    fn default() -> Self {
        Self {
            metric: SsMetric::Iops,
            slope: true,
            pct: true,
            limit: 0.01,
            dur_s: 0,
            ramp: Duration::ZERO,
        }
    }
}

impl SteadyStateSpec {
    /// Detection is on (`ss_dur` of at least a second).
    pub fn enabled(&self) -> bool {
        self.dur_s > 0
    }

    /// The criterion's name as fio prints it (`iops`, `bw_slope`, ...).
    pub fn criterion_name(&self) -> String {
        let m = match self.metric {
            SsMetric::Iops => "iops",
            SsMetric::Bw => "bw",
        };
        format!("{m}{}", if self.slope { "_slope" } else { "" })
    }

    /// `ss=` as fio's JSON shows it: `iops:10.000000%` (the limit as a C
    /// float with `%f`).
    pub fn json_name(&self) -> String {
        format!(
            "{}:{:.6}{}",
            self.criterion_name(),
            self.limit as f32,
            if self.pct { "%" } else { "" }
        )
    }
}

/// One job's detector (fio `struct steadystate_data`), and the state the
/// report prints (fio copies it into `thread_stat`).
#[derive(Clone, Debug, PartialEq)]
pub struct SteadyState {
    pub spec: SteadyStateSpec,
    /// This detector keeps the samples (fio `FIO_SS_DATA`: every job
    /// without `group_reporting`, the last job of each reporting group
    /// with it).
    pub has_data: bool,
    pub attained: bool,
    /// The ramp is over: samples are taken.
    pub ramp_over: bool,
    pub buffer_full: bool,
    pub head: usize,
    pub tail: usize,
    /// bytes/s per sample.
    pub bw_data: Vec<u64>,
    pub iops_data: Vec<u64>,
    sum_y: u64,
    sum_xy: u64,
    oldest_y: u64,
    sum_x: u64,
    sum_x_sq: u64,
    pub slope: f64,
    pub deviation: f64,
    pub criterion: f64,
    /// Completed IOs and bytes at the previous check, and its time.
    pub prev_ios: u64,
    pub prev_bytes: u64,
    pub prev_time_ns: u64,
}

impl SteadyState {
    /// A detector for `spec` (fio `td_steadystate_init`); `has_data`: it
    /// keeps the samples ([`SteadyState::has_data`]).
    pub fn new(spec: SteadyStateSpec, has_data: bool) -> Self {
        let n = spec.dur_s;
        let len = if has_data { n as usize } else { 0 };
        Self {
            spec,
            has_data,
            attained: false,
            ramp_over: spec.ramp == Duration::ZERO,
            buffer_full: false,
            head: 0,
            tail: 0,
            bw_data: vec![0; len],
            iops_data: vec![0; len],
            sum_y: 0,
            sum_xy: 0,
            oldest_y: 0,
            sum_x: n * n.saturating_sub(1) / 2,
            sum_x_sq: n.saturating_sub(1) * n * (2 * n).saturating_sub(1) / 6,
            slope: 0.0,
            deviation: 0.0,
            criterion: 0.0,
            prev_ios: 0,
            prev_bytes: 0,
            prev_time_ns: 0,
        }
    }

    fn pick(&self, i: usize) -> u64 {
        match self.spec.metric {
            SsMetric::Iops => self.iops_data[i],
            SsMetric::Bw => self.bw_data[i],
        }
    }

    /// One second's IOPS and bw (bytes/s) into the ring; whether steady
    /// state is attained now (fio `steadystate_slope` /
    /// `steadystate_deviation`).
    pub fn add_sample(&mut self, iops: u64, bw: u64) -> bool {
        if !self.has_data {
            return false;
        }
        self.bw_data[self.tail] = bw;
        self.iops_data[self.tail] = iops;
        let dur = self.spec.dur_s as usize;
        if self.buffer_full || self.tail.wrapping_sub(self.head) == dur - 1 {
            let done = if self.spec.slope {
                self.judge_slope(dur)
            } else {
                self.judge_deviation(dur)
            };
            if done {
                return true;
            }
        }
        self.tail = (self.tail + 1) % dur;
        if self.tail <= self.head {
            self.head = (self.head + 1) % dur;
        }
        false
    }

    /// fio `steadystate_slope`: the slope by least squares over the ring,
    /// x the sample's place (assumed evenly spaced), sums kept running.
    fn judge_slope(&mut self, dur: usize) -> bool {
        let new_val = self.pick(self.tail);
        if !self.buffer_full {
            // first time through; fio sums y in array order but weighs
            // x by the place after head (head is 0 here)
            self.sum_y = 0;
            for i in 0..dur {
                self.sum_y = self.sum_y.wrapping_add(self.pick(i));
                let j = (self.head + i) % dur;
                self.sum_xy = self
                    .sum_xy
                    .wrapping_add((i as u64).wrapping_mul(self.pick(j)));
            }
            self.buffer_full = true;
        } else {
            self.sum_y = self.sum_y.wrapping_sub(self.oldest_y).wrapping_add(new_val);
            self.sum_xy = self
                .sum_xy
                .wrapping_sub(self.sum_y)
                .wrapping_add((dur as u64).wrapping_mul(new_val));
        }
        self.oldest_y = self.pick(self.head);
        let n = dur as f64;
        let sum_x = self.sum_x as f64;
        self.slope = (self.sum_xy as f64 - sum_x * self.sum_y as f64 / n)
            / (self.sum_x_sq as f64 - sum_x * sum_x / n);
        self.criterion = if self.spec.pct {
            // fio divides sum_y by dur in integers
            100.0 * self.slope / (self.sum_y / dur as u64) as f64
        } else {
            self.slope
        };
        self.criterion.abs() < self.spec.limit
    }

    /// fio `steadystate_deviation`: the largest distance of a sample from
    /// the ring's mean.
    fn judge_deviation(&mut self, dur: usize) -> bool {
        if !self.buffer_full {
            self.sum_y = (0..dur).fold(0u64, |s, i| s.wrapping_add(self.pick(i)));
            self.buffer_full = true;
        } else {
            let newest = self.pick(self.tail);
            self.sum_y = self.sum_y.wrapping_sub(self.oldest_y).wrapping_add(newest);
        }
        self.oldest_y = self.pick(self.head);
        let mean = self.sum_y as f64 / dur as f64;
        self.deviation = (0..dur)
            .map(|i| (self.pick(i) as f64 - mean).abs())
            .fold(0.0, f64::max);
        self.criterion = if self.spec.pct {
            100.0 * self.deviation / mean
        } else {
            self.deviation
        };
        self.criterion < self.spec.limit
    }

    /// The samples in the order fio's JSON lists them (`show_thread_status_json`:
    /// from head when attained or not full, else from the one before head).
    pub fn ordered(&self) -> (Vec<u64>, Vec<u64>) {
        let dur = self.bw_data.len();
        if dur == 0 {
            return (Vec::new(), Vec::new());
        }
        let start = if self.attained || !self.buffer_full {
            self.head
        } else if self.head == 0 {
            dur - 1
        } else {
            self.head - 1
        };
        let idx = (0..dur).map(|l| (start + l) % dur);
        (
            idx.clone().map(|k| self.bw_data[k]).collect(),
            idx.map(|k| self.iops_data[k]).collect(),
        )
    }

    /// fio `steadystate_bw_mean`: the ring's mean bytes/s (integer).
    pub fn bw_mean(&self) -> u64 {
        mean(&self.bw_data, self.spec.dur_s)
    }

    /// fio `steadystate_iops_mean`.
    pub fn iops_mean(&self) -> u64 {
        mean(&self.iops_data, self.spec.dur_s)
    }
}

fn mean(data: &[u64], dur: u64) -> u64 {
    if dur == 0 {
        return 0;
    }
    data.iter().fold(0u64, |s, &v| s.wrapping_add(v)) / dur
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(metric: SsMetric, slope: bool, pct: bool, limit: f64, dur_s: u64) -> SteadyStateSpec {
        SteadyStateSpec {
            metric,
            slope,
            pct,
            limit,
            dur_s,
            ramp: Duration::ZERO,
        }
    }

    #[test]
    fn deviation_attains_on_a_flat_ring_only_when_full() {
        let mut ss = SteadyState::new(spec(SsMetric::Iops, false, true, 10.0, 3), true);
        assert!(!ss.add_sample(1000, 4_096_000));
        assert!(!ss.add_sample(1000, 4_096_000));
        assert!(ss.add_sample(1000, 4_096_000));
        assert_eq!(ss.criterion, 0.0);
        assert_eq!(ss.iops_mean(), 1000);
    }

    #[test]
    fn deviation_is_the_largest_distance_from_the_mean_in_percent() {
        let mut ss = SteadyState::new(spec(SsMetric::Iops, false, true, 10.0, 4), true);
        for v in [100, 120, 80] {
            assert!(!ss.add_sample(v, 0));
        }
        // mean 100, largest distance 20 -> 20%: not under 10%
        assert!(!ss.add_sample(100, 0));
        assert!((ss.criterion - 20.0).abs() < 1e-9, "{}", ss.criterion);
        assert!((ss.deviation - 20.0).abs() < 1e-9);
        // the ring rolls over its oldest slots: [100, 120, ..] then
        // [100, 100, 80, 100] (mean 95, 15.8%), then all 100
        assert!(!ss.add_sample(100, 0));
        assert!(!ss.add_sample(100, 0));
        assert!(ss.add_sample(100, 0));
        assert_eq!(ss.deviation, 0.0);
    }

    #[test]
    fn slope_of_a_line_is_its_step() {
        // bw rising by 10 each second: slope 10, mean 115 -> 10/115*100 %
        let mut ss = SteadyState::new(spec(SsMetric::Bw, true, false, 5.0, 4), true);
        for v in [100, 110, 120] {
            assert!(!ss.add_sample(0, v));
        }
        assert!(!ss.add_sample(0, 130));
        assert!((ss.slope - 10.0).abs() < 1e-9, "{}", ss.slope);
        // the running sums after the window moves: 110..140, still 10
        assert!(!ss.add_sample(0, 140));
        assert!((ss.slope - 10.0).abs() < 1e-9, "{}", ss.slope);
        // flat: the slope falls under 5 once the rise has left the window
        for _ in 0..3 {
            ss.add_sample(0, 140);
        }
        assert!(ss.slope.abs() < 5.0);
    }

    #[test]
    fn slope_percent_uses_the_integer_mean() {
        let mut ss = SteadyState::new(spec(SsMetric::Iops, true, true, 1.0, 2), true);
        assert!(!ss.add_sample(10, 0));
        assert!(!ss.add_sample(13, 0));
        // slope 3, integer mean 23/2 = 11 -> 27.27%
        assert!(
            (ss.criterion - 300.0 / 11.0).abs() < 1e-9,
            "{}",
            ss.criterion
        );
    }

    #[test]
    fn json_order_starts_before_head_when_full_and_not_attained() {
        let mut ss = SteadyState::new(spec(SsMetric::Iops, false, true, 0.0, 3), true);
        for v in [1, 2, 3, 4] {
            ss.add_sample(v, v * 10);
        }
        // ring [4, 2, 3], head 2 after the wrap: fio lists from head-1
        let (bw, iops) = ss.ordered();
        assert_eq!(iops, vec![2, 3, 4]);
        assert_eq!(bw, vec![20, 30, 40]);
    }

    #[test]
    fn names_as_fio_prints_them() {
        let s = spec(SsMetric::Bw, true, true, 1.0, 10);
        assert_eq!(s.json_name(), "bw_slope:1.000000%");
        let s = spec(SsMetric::Iops, false, false, 250.0, 10);
        assert_eq!(s.json_name(), "iops:250.000000");
    }

    #[test]
    fn a_detector_without_data_never_attains() {
        let mut ss = SteadyState::new(spec(SsMetric::Iops, false, true, 10.0, 2), false);
        assert!(!ss.add_sample(1, 1));
        assert!(!ss.add_sample(1, 1));
        assert!(ss.ordered().0.is_empty());
    }
}
