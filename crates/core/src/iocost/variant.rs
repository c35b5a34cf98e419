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
    /// Before the fix (≤ 7.0): no completions read as "QoS met", so
    /// `busy_level` goes to 0 (or down).
    Reset,
    /// The merged fix (f91ffe89b201, 7.1): no completions with lagging IO
    /// leave `busy_level` unchanged.
    Hold,
    /// The v2 posting (not merged): no completions → lagging: clamp to
    /// [−4, 4]; shortages: `min(level, 0)`; else 0.
    HoldClamp,
}

/// Everything that distinguishes one iocost generation from another.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Variant {
    /// The name it is selected by (`reset`, `hold`, `hold-v2`).
    pub name: &'static str,
    /// What a period without completions does to `busy_level`.
    pub no_done: NoDoneRule,
}

/// Every kernel up to 7.0: [`NoDoneRule::Reset`].
pub const RESET: Variant = Variant {
    name: "reset",
    no_done: NoDoneRule::Reset,
};

/// The fix as merged for 7.1 (the default): [`NoDoneRule::Hold`].
pub const HOLD: Variant = Variant {
    name: "hold",
    no_done: NoDoneRule::Hold,
};

/// The unmerged v2 of the fix: [`NoDoneRule::HoldClamp`].
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
