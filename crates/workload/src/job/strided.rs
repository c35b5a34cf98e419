//! `zonemode=strided` (fio 3.33 `io_u.c: setup_strided_zone_mode` and
//! `fill_io_u`): the job does `zonesize` bytes of IO in a zone of
//! `zonerange` bytes starting at the zone's base, then the base moves by
//! `zonerange + zoneskip`, back to the region's start past the end of the
//! file. Offsets here are relative to the start of the job's region.

use crate::spec_zone::ZoneSpec;

#[derive(Debug)]
pub(super) struct Strided {
    size: u64,
    range: u64,
    skip: u64,
    /// Bytes from the region's start to the end of the file (fio
    /// `real_file_size - start offset`).
    tail: u64,
    /// fio `td->zone_bytes`: IO bytes in the current zone.
    zone_bytes: u64,
    /// fio `f->file_offset - start offset`: the current zone's base.
    pub base: u64,
}

/// What the zone bookkeeping tells the file before an IO.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Step {
    /// Nothing to reset.
    Keep,
    /// fio `fio_file_reset`: positions back to the zone's base, random
    /// map cleared.
    Reset,
}

impl Strided {
    /// `None` unless the spec asks for strided zones.
    pub(super) fn new(z: &ZoneSpec, region_len: u64) -> Option<Self> {
        if z.mode != crate::spec_zone::ZoneMode::Strided || z.size_bytes == 0 {
            return None;
        }
        Some(Strided {
            size: z.size_bytes,
            range: z.range().max(1),
            skip: z.skip.bytes(z.size_bytes),
            tail: if z.file_tail_bytes == 0 {
                region_len
            } else {
                z.file_tail_bytes
            },
            zone_bytes: 0,
            base: 0,
        })
    }

    /// fio `setup_strided_zone_mode` before the offset of the next IO:
    /// moves to the next zone once `zonesize` bytes were done, keeps the
    /// sequential position `pos` (relative to the region) inside
    /// `[base, base + zonerange)`.
    pub(super) fn before_io(&mut self, pos: &mut u64) -> Step {
        if self.zone_bytes >= self.size {
            self.zone_bytes = 0;
            self.base += self.range + self.skip;
            // wrap from the beginning past the end of the file
            if self.base >= self.tail {
                self.base = 0;
            }
            *pos = self.base;
        }
        if *pos >= self.base + self.range {
            *pos = self.base;
        }
        if self.zone_bytes.is_multiple_of(self.range) {
            Step::Reset
        } else {
            Step::Keep
        }
    }

    /// fio `fill_io_u`: an IO that would cross the end of the file is not
    /// issued (the file is done); otherwise it counts in the zone.
    pub(super) fn after_offset(&mut self, rel: u64, len: u64) -> bool {
        if rel + len > self.tail {
            return false;
        }
        self.zone_bytes += len;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec_zone::{ZoneBytes, ZoneMode};

    fn zs(size: u64, range: u64, skip: u64, tail: u64) -> Strided {
        let z = ZoneSpec {
            mode: ZoneMode::Strided,
            mode_given: true,
            size_bytes: size,
            range_bytes: range,
            skip: ZoneBytes::Bytes(skip),
            file_tail_bytes: tail,
            ..ZoneSpec::default()
        };
        Strided::new(&z, tail).unwrap()
    }

    /// Sequential offsets of `n` IOs of `len` bytes.
    fn seq(mut z: Strided, len: u64, n: usize) -> Vec<u64> {
        let mut pos = 0;
        (0..n)
            .map(|_| {
                if z.before_io(&mut pos) == Step::Reset {
                    pos = z.base;
                }
                let off = pos;
                assert!(z.after_offset(off, len));
                pos = off + len;
                off
            })
            .collect()
    }

    const M: u64 = 1 << 20;
    const K256: u64 = 256 << 10;

    #[test]
    fn size_then_skip_then_wrap() {
        // fio 3.33, 16 MiB file, bs=256k zonesize=1m zoneskip=3m: 0 .25 .5
        // .75 4 4.25 ... 12.75 then 0 again
        let got = seq(zs(M, 0, 3 * M, 16 * M), K256, 20);
        let want: Vec<u64> = [0, 4, 8, 12, 0]
            .iter()
            .flat_map(|z| (0..4).map(move |i| z * M + i * K256))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn zone_size_over_range_repeats_the_range() {
        // fio 3.33, zonesize=1m zonerange=512k: 0 .25 0 .25 .5 .75 .5 .75
        let got = seq(zs(M, M / 2, 0, 16 * M), K256, 8);
        let want: Vec<u64> = [0, 1, 0, 1, 2, 3, 2, 3].iter().map(|i| i * K256).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn range_over_size_leaves_a_gap() {
        // zonesize=1m zonerange=2m zoneskip=3m: zones at 0, 5, 10, 15 MiB
        let got = seq(zs(M, 2 * M, 3 * M, 16 * M), K256, 20);
        let bases: Vec<u64> = got.iter().step_by(4).map(|o| o / M).collect();
        assert_eq!(bases, [0, 5, 10, 15, 0]);
    }

    #[test]
    fn crossing_the_end_is_refused() {
        let mut z = zs(M, 0, 0, 3 * M / 2);
        assert!(z.after_offset(0, M));
        let mut pos = M;
        z.before_io(&mut pos);
        assert_eq!(z.base, M);
        assert!(
            !z.after_offset(M + K256, K256 * 2),
            "1.25 MiB + 512 KiB > 1.5 MiB"
        );
    }
}
