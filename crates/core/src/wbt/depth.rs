//! The depth arithmetic blk-wbt shares with the other rq-qos policies
//! (block/blk-rq-qos.c `struct rq_depth`) and blk-wbt's own limits
//! (block/blk-wbt.c `calc_wb_limits`).

/// `RWB_DEF_DEPTH`: the write depth at scale step 0.
pub const DEFAULT_DEPTH: u32 = 16;

/// `struct rq_depth`: how deep writes may go at the current scale step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RqDepth {
    /// `scale_step`: 0 is the centre; > 0 after latency misses (shallower),
    /// < 0 while only writes run (deeper).
    pub scale_step: i32,
    /// `scaled_max`: the last step up reached the cap.
    pub scaled_max: bool,
    /// `max_depth` at this step.
    pub max_depth: u32,
    /// `default_depth` ([`DEFAULT_DEPTH`]).
    pub default_depth: u32,
    /// `queue_depth`: the queue's request slots (`blk_queue_depth`).
    pub queue_depth: u32,
}

impl RqDepth {
    /// `wbt_update_limits` at init: step 0, its depth.
    pub fn new(queue_depth: u32) -> Self {
        let mut d = RqDepth {
            scale_step: 0,
            scaled_max: false,
            max_depth: 0,
            default_depth: DEFAULT_DEPTH,
            queue_depth: queue_depth.max(1),
        };
        d.calc_max_depth();
        d
    }

    /// linux block/blk-rq-qos.c: rq_depth_calc_max_depth(). True when a
    /// deeper step was capped at 3/4 of the queue (or a QD1 device's 2).
    pub fn calc_max_depth(&mut self) -> bool {
        if self.queue_depth == 1 {
            if self.scale_step > 0 {
                self.max_depth = 1;
                return false;
            }
            self.max_depth = 2;
            return true;
        }
        let mut depth = self.default_depth.min(self.queue_depth);
        let mut capped = false;
        if self.scale_step > 0 {
            depth = 1 + ((depth - 1) >> self.scale_step.min(31));
        } else if self.scale_step < 0 {
            let maxd = 3 * self.queue_depth / 4;
            let shift = (-self.scale_step).min(31) as u32;
            depth = 1u32.saturating_add((depth - 1).checked_shl(shift).unwrap_or(u32::MAX));
            if depth > maxd {
                depth = maxd;
                capped = true;
            }
        }
        self.max_depth = depth;
        capped
    }

    /// linux block/blk-rq-qos.c: rq_depth_scale_up(). False when the
    /// previous step already reached the cap.
    pub fn scale_up(&mut self) -> bool {
        if self.scaled_max {
            return false;
        }
        self.scale_step -= 1;
        self.scaled_max = self.calc_max_depth();
        true
    }

    /// linux block/blk-rq-qos.c: rq_depth_scale_down(). A hard throttle
    /// (a latency miss) from a deeper-than-centre step goes straight to
    /// the centre. False at depth 1.
    pub fn scale_down(&mut self, hard_throttle: bool) -> bool {
        if self.max_depth == 1 {
            return false;
        }
        if self.scale_step < 0 && hard_throttle {
            self.scale_step = 0;
        } else {
            self.scale_step += 1;
        }
        self.scaled_max = false;
        self.calc_max_depth();
        true
    }
}

/// linux block/blk-wbt.c: calc_wb_limits(): `(wb_normal, wb_background)`
/// for a max depth; both 0 when wbt is off (`min_lat_nsec == 0`).
pub fn wb_limits(max_depth: u32, enabled: bool) -> (u32, u32) {
    if !enabled {
        (0, 0)
    } else if max_depth <= 2 {
        (max_depth, 1)
    } else {
        // (max_depth + 1) / 2 and (max_depth + 3) / 4
        (max_depth.div_ceil(2), max_depth.div_ceil(4))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `wbt_step` lines of the lab's 6.12 trace of w02 (null_blk,
    /// `nr_requests` 64): step -1 is `background=8, normal=16, max=31`,
    /// step 0 `4, 8, 16`, step -2 `12, 24, 48` (capped at 3/4 of 64).
    #[test]
    fn steps_match_the_kernels_trace() {
        let mut d = RqDepth::new(64);
        assert_eq!((d.scale_step, d.max_depth), (0, 16));
        assert_eq!(wb_limits(d.max_depth, true), (8, 4));
        assert!(d.scale_up());
        assert_eq!((d.scale_step, d.max_depth), (-1, 31));
        assert_eq!(wb_limits(d.max_depth, true), (16, 8));
        assert!(d.scale_down(false));
        assert_eq!((d.scale_step, d.max_depth), (0, 16));
        assert!(d.scale_up() && d.scale_up());
        assert_eq!((d.scale_step, d.max_depth, d.scaled_max), (-2, 48, true));
        assert_eq!(wb_limits(d.max_depth, true), (24, 12));
        // capped: no further step up
        assert!(!d.scale_up());
        assert_eq!(d.scale_step, -2);
        // a latency miss from a deep step goes to the centre
        assert!(d.scale_down(true));
        assert_eq!((d.scale_step, d.max_depth), (0, 16));
        // shallower steps halve the depth down to 1
        for (step, depth) in [(1, 8), (2, 4), (3, 2), (4, 1)] {
            assert!(d.scale_down(true));
            assert_eq!((d.scale_step, d.max_depth), (step, depth));
        }
        assert!(!d.scale_down(true));
        assert_eq!(wb_limits(1, true), (1, 1));
        assert_eq!(wb_limits(16, false), (0, 0));
    }

    #[test]
    fn a_qd1_device_gets_two() {
        let mut d = RqDepth::new(1);
        assert_eq!(d.max_depth, 2);
        assert!(d.scale_down(false));
        assert_eq!(d.max_depth, 1);
    }
}
