//! iocost behaviours selectable by name. The one behaviour that differs
//! between the kernels we model is what a period *without completions*
//! does to `busy_level` (seed 001, "blk-iocost: fix busy_level reset when
//! no IOs complete", Jialin Wang, 2026).
//!
//! Without completions `missed_ppm` and `rq_wait_pct` read 0 (both are
//! sampled at completion), which the old code takes for "QoS met with
//! margin" and so resets a positive `busy_level`; on a saturated device
//! whose IOs outlive a period the level then never reaches the 4 needed
//! for the first vrate cut.
//!
//! * `reset` — the code before the fix (every kernel up to 7.0).
//! * `hold` — the fix as applied (v3, upstream f91ffe89b201, queued for
//!   7.1, acked by Tejun Heo): no completions *and* lagging IO → leave
//!   `busy_level` unchanged; every other case as before.
//! * `hold-v2` — the v2 posting of the same patch (not merged): no
//!   completions → lagging: clamp to [−4, 4]; else shortages: `min(level,
//!   0)` (no decrement); else 0. Tejun questioned the ±4 clamp and the
//!   missing decrement; v3 dropped both. Kept for comparison.

/// What a period with `nr_done == 0` does to `busy_level`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoDoneRule {
    Reset,
    Hold,
    HoldClamp,
}

/// Everything that distinguishes one iocost generation from another.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Variant {
    pub name: &'static str,
    pub no_done: NoDoneRule,
}

pub const RESET: Variant = Variant {
    name: "reset",
    no_done: NoDoneRule::Reset,
};

pub const HOLD: Variant = Variant {
    name: "hold",
    no_done: NoDoneRule::Hold,
};

pub const HOLD_V2: Variant = Variant {
    name: "hold-v2",
    no_done: NoDoneRule::HoldClamp,
};

impl Default for Variant {
    fn default() -> Self {
        HOLD
    }
}

/// Names accepted for the iocost variant, with what they mean.
pub const NAMES: &[(&str, &str)] = &[
    (
        "reset",
        "no completions in a period reset busy_level (kernels up to 7.0)",
    ),
    (
        "hold",
        "no completions with lagging IO keep busy_level (f91ffe89b201, 7.1; default)",
    ),
    (
        "hold-v2",
        "the unmerged v2 of the fix: clamp to [-4,4] / min(level,0) / 0",
    ),
    ("mainline", "= hold"),
    ("linux-7.1", "= hold"),
    ("linux-7.0", "= reset"),
    ("linux-6.18", "= reset"),
    ("linux-6.12", "= reset"),
    (
        "linux-6.9",
        "= reset (the oldest kernel whose iocost code this models)",
    ),
];

impl Variant {
    /// Look a variant or kernel profile up by name.
    pub fn by_name(name: &str) -> Option<Variant> {
        Some(match name {
            "reset" | "linux-6.9" | "linux-6.12" | "linux-6.18" | "linux-7.0" => RESET,
            "hold" | "mainline" | "linux-7.1" => HOLD,
            "hold-v2" => HOLD_V2,
            _ => return None,
        })
    }
}
