//! blk-throttle behaviours selectable by name. Each behaviour a kernel
//! change altered is a field; the named variants and kernel profiles are
//! presets of those fields.

/// How the wait of an over-limit IO is computed against an IOPS limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IopsWait {
    /// ≤ 4.18: `(io_disp + 1) · HZ / iops + 1 − elapsed` (min 1).
    Legacy,
    /// 4.19 (991f61fe7e1d): the rest of the current slice; with an exact
    /// slice multiple elapsed this can be 0 (the 2019 bug).
    SliceRemainder,
    /// 2019 (3a10f999ffd4): `roundup(elapsed + 1, slice) − elapsed`, never 0.
    SliceRemainderFixed,
    /// 2024+: as `SliceRemainderFixed`, at least `HZ / iops + 1`.
    Mainline,
}

/// The slice length rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SliceRule {
    /// `HZ/10` for every device: kernels without
    /// `CONFIG_BLK_DEV_THROTTLING_LOW` before 6.10 (`blk_throtl_register`
    /// resets the SSD slice), and every kernel since f76581f9f1d2 "Fix
    /// throttle slice time for SSDs" (6.19, backported to 6.12.63).
    Hz10,
    /// `HZ/10` rotational, `HZ/50` non-rotational: THROTTLING_LOW builds
    /// 2017–6.9, and every build 6.10–6.18 (6.12.0–6.12.62).
    SsdHz50,
}

/// Trim rule (`throtl_trim_slice`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrimRule {
    /// Trim every whole elapsed slice.
    WholeSlices,
    /// 2025 (29cb95593430): keep one extra slice, trim only after two.
    KeepOneSlice,
}

/// How the IOs of a bio split to the device's max IO size are charged
/// (the bytes are always charged once, with the whole bio).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitCharge {
    /// ≤ 5.14: the remainder carries `BIO_THROTTLED` (111be8839817
    /// "block-throttle: avoid double charge") and bypasses blk-throttle:
    /// one IO per bio, IOPS under-counted.
    Bypass,
    /// 5.15 – 5.17 (4f1e9630afe6 "blk-throtl: optimize IOPS throttle for
    /// large IO scenarios"): each split adds one IO to `io_split_cnt` at
    /// every level with a limit, folded into `io_disp` at the next dispatch
    /// check (dropped when a new slice starts); the pieces never wait.
    CountOnly,
    /// 5.18+ (9f5ede3c01f9 "block: throttle split bio in case of iops
    /// limit"; `BIO_BPS_THROTTLED` since 6.0): the remainder re-enters
    /// blk-throttle, is charged one IO and no bytes, and may wait for IOPS
    /// budget like any bio.
    PerFragment,
}

/// Everything that distinguishes one blk-throttle generation from another.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Variant {
    /// The name it is selected by (`mainline`, `linux-6.1`, ...).
    pub name: &'static str,
    /// How the wait against an IOPS limit is computed (`tg_within_iops_limit`).
    pub iops_wait: IopsWait,
    /// How long a slice is (`throtl_slice`).
    pub slice: SliceRule,
    /// How much of an elapsed slice is trimmed (`throtl_trim_slice`).
    pub trim: TrimRule,
    /// v6.16: separate bps and iops queues; bytes charged when the bps
    /// stage is cleared. Without it bytes and the IO are charged together.
    pub split_queues: bool,
    /// Carry unused/overdrawn budget across a limit change (6.2+).
    pub carryover: bool,
    /// IO charges of split bios.
    pub split: SplitCharge,
}

/// Linux ≤ 4.18: the pre-2018 IOPS wait, the 20 ms SSD slice, split
/// pieces bypass blk-throttle.
pub const LEGACY: Variant = Variant {
    name: "legacy",
    iops_wait: IopsWait::Legacy,
    slice: SliceRule::SsdHz50,
    trim: TrimRule::WholeSlices,
    split_queues: false,
    carryover: false,
    split: SplitCharge::Bypass,
};

/// Linux 4.19 – 5.14 with the 2019 zero-wait fix: wait for the rest of
/// the slice, 20 ms SSD slice, split pieces bypass.
pub const SLICE_REMAINDER: Variant = Variant {
    name: "slice-remainder",
    iops_wait: IopsWait::SliceRemainderFixed,
    slice: SliceRule::SsdHz50,
    trim: TrimRule::WholeSlices,
    split_queues: false,
    carryover: false,
    split: SplitCharge::Bypass,
};

/// The current kernel: split bps/iops queues, carryover, keep-one-slice
/// trim, 100 ms slice on every device, split pieces charged one IO each.
pub const MAINLINE: Variant = Variant {
    name: "mainline",
    iops_wait: IopsWait::Mainline,
    slice: SliceRule::Hz10,
    trim: TrimRule::KeepOneSlice,
    split_queues: true,
    carryover: true,
    split: SplitCharge::PerFragment,
};

/// Names accepted for `throttle = "..."` / `--throttle=...`, with what
/// they mean.
pub const NAMES: &[(&str, &str)] = &[
    (
        "legacy",
        "pre-2018 IOPS wait (linux ≤ 4.18), 20 ms SSD slice, split pieces bypass",
    ),
    (
        "slice-remainder",
        "2018 fix + 2019 zero-wait correction, 20 ms SSD slice, split pieces bypass (4.19 – 5.14)",
    ),
    (
        "slice-remainder-2018",
        "2018 fix without the 2019 correction (4.19 before stable fixes)",
    ),
    (
        "mainline",
        "current kernel: split bps/iops queues, carryover, 100 ms slice",
    ),
    (
        "mainline-ssd-slice",
        "mainline with the 20 ms SSD slice of 6.10 – 6.17",
    ),
    ("linux-4.18", "= legacy"),
    ("linux-4.19", "= slice-remainder-2018"),
    (
        "linux-5.15",
        "slice-remainder + split pieces counted, never waiting (5.15 – 5.17)",
    ),
    (
        "linux-6.1",
        "6.1 as distributions build it (no THROTTLING_LOW): 100 ms slice, rest-of-slice wait, carryover, split pieces charged one IO each",
    ),
    (
        "linux-6.1-low",
        "linux-6.1 built with THROTTLING_LOW: the 20 ms SSD slice",
    ),
    ("linux-6.6", "= linux-6.1"),
    (
        "linux-6.12",
        "6.12.63+: 100 ms slice, wait at least HZ/iops + 1 (6.11), whole-slice trim, one queue",
    ),
    (
        "linux-6.12.0",
        "6.12.0 - 6.12.62 (and 6.10 - 6.18): linux-6.12 with the 20 ms SSD slice",
    ),
    ("linux-6.18", "= linux-6.12.0 + keep-one-slice trim and split queues (6.15, 6.16)"),
    ("linux-7.2", "= mainline"),
];

impl Variant {
    /// Look a variant or kernel profile up by name.
    pub fn by_name(name: &str) -> Option<Variant> {
        Some(match name {
            "legacy" | "linux-4.18" => LEGACY,
            "slice-remainder" => SLICE_REMAINDER,
            "linux-5.15" => Variant {
                name: "linux-5.15",
                split: SplitCharge::CountOnly,
                ..SLICE_REMAINDER
            },
            // carryover arrived in 6.1-rc1 (a880ae93e5b5), as its own
            // counters; folding it into disp (this model) is equivalent
            "linux-6.1" | "linux-6.6" => Variant {
                name: "linux-6.1",
                slice: SliceRule::Hz10,
                carryover: true,
                split: SplitCharge::PerFragment,
                ..SLICE_REMAINDER
            },
            "linux-6.1-low" => Variant {
                name: "linux-6.1-low",
                carryover: true,
                split: SplitCharge::PerFragment,
                ..SLICE_REMAINDER
            },
            "slice-remainder-2018" | "linux-4.19" => Variant {
                name: "slice-remainder-2018",
                iops_wait: IopsWait::SliceRemainder,
                ..SLICE_REMAINDER
            },
            "linux-6.12" => Variant {
                name: "linux-6.12",
                iops_wait: IopsWait::Mainline,
                slice: SliceRule::Hz10,
                trim: TrimRule::WholeSlices,
                split_queues: false,
                carryover: true,
                split: SplitCharge::PerFragment,
            },
            "linux-6.12.0" => Variant {
                name: "linux-6.12.0",
                iops_wait: IopsWait::Mainline,
                slice: SliceRule::SsdHz50,
                trim: TrimRule::WholeSlices,
                split_queues: false,
                carryover: true,
                split: SplitCharge::PerFragment,
            },
            "linux-6.18" => Variant {
                name: "linux-6.18",
                slice: SliceRule::SsdHz50,
                ..MAINLINE
            },
            "mainline" | "linux-7.2" => MAINLINE,
            "mainline-ssd-slice" => Variant {
                name: "mainline-ssd-slice",
                slice: SliceRule::SsdHz50,
                ..MAINLINE
            },
            _ => return None,
        })
    }

    /// Slice length for a device (`throtl_slice`), a count of jiffies.
    #[must_use]
    pub fn slice_jiffies(&self, hz: u64, rotational: bool) -> u64 {
        match (self.slice, rotational) {
            (SliceRule::SsdHz50, false) => (hz / 50).max(1),
            _ => (hz / 10).max(1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_name_resolves() {
        for (n, _) in NAMES {
            assert!(Variant::by_name(n).is_some(), "{n}");
        }
        assert!(Variant::by_name("bogus").is_none());
        assert_eq!(LEGACY.slice_jiffies(1000, false), 20);
        assert_eq!(MAINLINE.slice_jiffies(1000, false), 100);
        assert_eq!(MAINLINE.slice_jiffies(250, true), 25);
        assert_eq!(LEGACY.slice_jiffies(100, false), 2);
    }

    #[test]
    fn split_charges_follow_the_history() {
        let split = |n| Variant::by_name(n).unwrap().split;
        for n in ["legacy", "linux-4.18", "linux-4.19", "slice-remainder"] {
            assert_eq!(split(n), SplitCharge::Bypass, "{n}");
        }
        assert_eq!(split("linux-5.15"), SplitCharge::CountOnly);
        for n in [
            "linux-6.1",
            "linux-6.6",
            "linux-6.12",
            "linux-6.18",
            "mainline",
        ] {
            assert_eq!(split(n), SplitCharge::PerFragment, "{n}");
        }
        // apart from splits, 5.15 is slice-remainder; 6.1 adds carryover
        // and, as distributions build it, the 100 ms slice
        let v = Variant::by_name("linux-5.15").unwrap();
        assert_eq!(
            Variant {
                name: "slice-remainder",
                split: SplitCharge::Bypass,
                ..v
            },
            SLICE_REMAINDER
        );
        let v = Variant::by_name("linux-6.1").unwrap();
        assert_eq!(
            Variant {
                name: "slice-remainder",
                split: SplitCharge::Bypass,
                slice: SliceRule::SsdHz50,
                carryover: false,
                ..v
            },
            SLICE_REMAINDER
        );
        assert_eq!(v.slice_jiffies(250, false), 25);
        assert_eq!(
            Variant::by_name("linux-6.1-low")
                .unwrap()
                .slice_jiffies(250, false),
            5
        );
        assert_eq!(
            Variant::by_name("linux-6.12")
                .unwrap()
                .slice_jiffies(250, false),
            25
        );
        assert_eq!(
            Variant::by_name("linux-6.12.0")
                .unwrap()
                .slice_jiffies(250, false),
            5
        );
    }
}
