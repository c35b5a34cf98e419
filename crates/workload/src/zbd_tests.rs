use super::*;

const ZS: u64 = 1 << 20;
const BS: u64 = 64 << 10;

fn dev(nr: u64, conv: u64) -> ZbdInfo {
    let zones = (0..nr)
        .map(|i| {
            if i < conv {
                ZbdZone::conventional(i * ZS, ZS)
            } else {
                ZbdZone::empty(i * ZS, ZS)
            }
        })
        .collect();
    ZbdInfo::from_report(ZS, zones, nr * ZS)
}

fn file(td: u32, zones: (u64, u64)) -> ZbdFile {
    ZbdFile {
        td,
        file_offset: zones.0 * ZS,
        io_size: (zones.1 - zones.0) * ZS,
        min_bs: PerDir::all(BS),
        random: true,
        rw: false,
        job_max_open_zones: 0,
        reset_threshold: 1.0,
        reset_frequency: 0.0,
        read_beyond_wp: false,
        verify: false,
    }
}

/// A tiny xorshift for offsets.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Random writes of several clones, IOs completing in order after
/// `depth` are in flight; checks every accepted write against the write
/// pointer and the open limits. Returns (writes, resets).
fn run_writes(d: &mut ZbdInfo, files: &[ZbdFile], n: usize, depth: usize) -> (u64, u64) {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut in_flight: Vec<Vec<(u64, u64)>> = vec![Vec::new(); files.len()];
    let (mut writes, mut resets) = (0, 0);
    for step in 0..n {
        let c = step % files.len();
        let f = &files[c];
        if in_flight[c].len() >= depth {
            let (o, l) = in_flight[c].remove(0);
            d.put_io(f, Ddir::Write, o, l, 0);
        }
        let off = f.file_offset + rng.below(f.io_size / BS) * BS;
        match d.adjust_block(f, Ddir::Write, off, BS, in_flight[c].len() as u32) {
            Adjust::Accept { offset, len, reset } => {
                let z = d.zone_idx(offset);
                let zone = d.zones()[z];
                assert_eq!(offset, zone.wp, "a write off the write pointer");
                assert!(offset + len <= zone.start + zone.capacity);
                assert_eq!(zone.owner.map_or(f.td, |o| o.0), f.td, "zone lock");
                if reset.is_some() {
                    resets += 1;
                }
                d.queue_io(f, Ddir::Write, offset, len);
                in_flight[c].push((offset, len));
                writes += 1;
            }
            Adjust::Quiesce => {
                for (o, l) in in_flight[c].drain(..) {
                    d.put_io(f, Ddir::Write, o, l, 0);
                }
            }
            Adjust::Busy => {}
            other => panic!("step {step}: {other:?}"),
        }
        if d.max_open_zones > 0 {
            assert!(d.open_zones().len() as u32 <= d.max_open_zones);
        }
        for f in files {
            if f.job_max_open_zones > 0 {
                let mine = d.td_open.get(&f.td).copied().unwrap_or(0);
                assert!(mine <= f.job_max_open_zones, "job_max_open_zones");
            }
        }
    }
    (writes, resets)
}

#[test]
fn writes_land_on_write_pointers_within_the_open_limit() {
    let mut d = dev(64, 0);
    d.set_max_open_zones(4, 0, false).unwrap();
    let files: Vec<ZbdFile> = (0..3).map(|td| file(td, (0, 64))).collect();
    let (writes, resets) = run_writes(&mut d, &files, 5000, 4);
    // 64 zones of 16 blocks fill up; then a full zone that opens again is
    // reset before it is written
    assert!(writes > 1024 && resets > 0, "{writes} {resets}");
    let written: u64 = d.zones().iter().map(|z| z.wp - z.start).sum();
    assert_eq!(written, d.sectors_with_data());
}

#[test]
fn job_max_open_zones_per_clone() {
    let mut d = dev(32, 0);
    d.set_max_open_zones(8, 0, false).unwrap();
    let files: Vec<ZbdFile> = (0..2)
        .map(|td| ZbdFile {
            job_max_open_zones: 2,
            ..file(td, (0, 32))
        })
        .collect();
    run_writes(&mut d, &files, 400, 1);
    assert!(d.open_zones().len() <= 4);
}

#[test]
fn without_a_limit_a_full_zone_is_reset() {
    // one zone, 16 blocks: the 17th write resets it
    let mut d = dev(1, 0);
    let f = file(0, (0, 1));
    let (writes, resets) = run_writes(&mut d, &[f], 17 * 3, 1);
    assert_eq!((writes, resets), (51, 3));
}

#[test]
fn the_reset_threshold_resets_every_nth_write() {
    // threshold 0.5 of 4 zones, frequency 0.25: once 2 zones' worth is
    // written, every 4th write resets its zone
    let mut d = dev(4, 0);
    let f = ZbdFile {
        reset_threshold: 0.5,
        reset_frequency: 0.25,
        ..file(0, (0, 4))
    };
    d.file_reset(&f, true);
    let mut resets = 0;
    for i in 0..32 {
        // sequential zones 0 and 1 first
        let off = (i / 16) * ZS;
        match d.adjust_block(&f, Ddir::Write, off, BS, 0) {
            Adjust::Accept { offset, len, reset } => {
                resets += u64::from(reset.is_some());
                d.queue_io(&f, Ddir::Write, offset, len);
                d.put_io(&f, Ddir::Write, offset, len, 0);
            }
            other => panic!("{other:?}"),
        }
    }
    // the counter runs only past 2 MiB of data: no reset yet
    assert_eq!(resets, 0);
    let mut n = 0;
    for _ in 0..8 {
        if let Adjust::Accept { offset, len, reset } =
            d.adjust_block(&f, Ddir::Write, 2 * ZS, BS, 0)
        {
            n += u64::from(reset.is_some());
            d.queue_io(&f, Ddir::Write, offset, len);
            d.put_io(&f, Ddir::Write, offset, len, 0);
        }
    }
    assert_eq!(n, 2, "writes 4 and 8 past the threshold reset");
}

#[test]
fn a_reset_waits_for_writes_in_flight() {
    let mut d = dev(1, 0);
    let f = file(0, (0, 1));
    for _ in 0..16 {
        let Adjust::Accept { offset, len, .. } = d.adjust_block(&f, Ddir::Write, 0, BS, 0) else {
            panic!()
        };
        d.queue_io(&f, Ddir::Write, offset, len);
    }
    // full, with the clone's writes in flight: quiesce first
    assert_eq!(d.adjust_block(&f, Ddir::Write, 0, BS, 16), Adjust::Quiesce);
    for i in 0..16 {
        d.put_io(&f, Ddir::Write, i * BS, BS, 0);
    }
    let a = d.adjust_block(&f, Ddir::Write, 0, BS, 0);
    assert_eq!(
        a,
        Adjust::Accept {
            offset: 0,
            len: BS,
            reset: Some((0, ZS))
        }
    );
}

#[test]
fn another_clones_zone_is_busy() {
    let mut d = dev(2, 0);
    let (a, b) = (file(0, (0, 2)), file(1, (0, 2)));
    let Adjust::Accept { offset, len, .. } = d.adjust_block(&a, Ddir::Write, 0, BS, 0) else {
        panic!()
    };
    d.queue_io(&a, Ddir::Write, offset, len);
    assert_eq!(d.adjust_block(&b, Ddir::Write, 0, BS, 0), Adjust::Busy);
    assert_eq!(d.adjust_block(&b, Ddir::Write, 0, BS, 1), Adjust::Quiesce);
    d.put_io(&a, Ddir::Write, offset, len, 0);
    assert!(matches!(
        d.adjust_block(&b, Ddir::Write, 0, BS, 0),
        Adjust::Accept { offset: o, .. } if o == BS
    ));
}

#[test]
fn reads_stay_below_the_write_pointer() {
    let mut d = dev(4, 0);
    let w = file(0, (0, 4));
    // 3 blocks in zone 2
    for _ in 0..3 {
        let Adjust::Accept { offset, len, .. } = d.adjust_block(&w, Ddir::Write, 2 * ZS, BS, 0)
        else {
            panic!()
        };
        d.queue_io(&w, Ddir::Write, offset, len);
        d.put_io(&w, Ddir::Write, offset, len, 0);
    }
    let r = file(1, (0, 4));
    let mut rng = Rng(7);
    for _ in 0..200 {
        let off = rng.below(64) * BS;
        match d.adjust_block(&r, Ddir::Read, off, 2 * BS, 0) {
            Adjust::Accept { offset, len, .. } => {
                assert!(offset >= 2 * ZS && offset + len <= 2 * ZS + 3 * BS);
                assert!(len >= BS);
            }
            other => panic!("{other:?}"),
        }
    }
    // sequential reads from an empty zone skip to the zone with data,
    // and past it there is nothing
    let seq = ZbdFile {
        random: false,
        ..file(1, (0, 4))
    };
    assert!(matches!(
        d.adjust_block(&seq, Ddir::Read, 0, BS, 0),
        Adjust::Accept { offset, .. } if offset == 2 * ZS
    ));
    assert_eq!(d.adjust_block(&seq, Ddir::Read, 3 * ZS, BS, 0), Adjust::Eof);
    let beyond = ZbdFile {
        read_beyond_wp: true,
        ..seq
    };
    assert!(matches!(
        d.adjust_block(&beyond, Ddir::Read, 3 * ZS, BS, 0),
        Adjust::Accept { offset, .. } if offset == 3 * ZS
    ));
    // an empty device: fio's first random read of a mixed job writes
    let empty = dev(4, 0);
    let rw = ZbdFile { rw: true, ..r };
    assert_eq!(empty.adjust_ddir(&rw, Ddir::Read), Ddir::Write);
    assert_eq!(d.adjust_ddir(&rw, Ddir::Read), Ddir::Read);
}

#[test]
fn trims_reset_zones() {
    let mut d = dev(4, 1);
    let f = file(0, (0, 4));
    let Adjust::Accept { offset, len, .. } = d.adjust_block(&f, Ddir::Write, ZS, BS, 0) else {
        panic!()
    };
    d.queue_io(&f, Ddir::Write, offset, len);
    d.put_io(&f, Ddir::Write, offset, len, 0);
    // a random trim of an empty zone moves to the zone with data
    let t = ZbdFile {
        min_bs: PerDir::all(ZS),
        ..f
    };
    assert!(matches!(
        d.adjust_block(&t, Ddir::Trim, 3 * ZS, ZS, 0),
        Adjust::Accept { offset, .. } if offset == ZS
    ));
    assert_eq!(d.trim(&t, ZS), Ok((true, true)));
    assert_eq!(d.zones()[1].wp, ZS);
    assert_eq!(d.trim(&t, ZS), Ok((true, false)), "empty: not counted");
    assert_eq!(d.trim(&t, ZS + BS), Err(22));
    assert_eq!(d.trim(&t, 0), Ok((false, false)), "conventional zone");
    // the conventional zone counts as data (fio sectors_with_data)
    assert_eq!(d.sectors_with_data(), ZS);
}

#[test]
fn limits_and_alignment() {
    let mut d = dev(8, 0);
    assert!(d.set_max_open_zones(16, 8, false).is_err());
    d.set_max_open_zones(16, 8, true).unwrap();
    assert_eq!(d.max_open_zones, 16);
    d.set_max_open_zones(0, 8, false).unwrap();
    assert_eq!(d.max_open_zones, 8);
    assert!(d.set_max_open_zones(5000, 0, false).is_err());
    let (o, l, notes) = d.align_range(ZS / 2, 3 * ZS, false, "f").unwrap();
    assert_eq!((o, l), (ZS, 2 * ZS));
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(d.align_range(ZS / 2, ZS, false, "f").is_err());
    // reads keep their range
    assert_eq!(d.align_range(ZS / 2, ZS, true, "f").unwrap().0, ZS / 2);
}

#[test]
fn too_large_a_write_fails() {
    let mut d = dev(2, 0);
    let f = file(0, (0, 2));
    assert_eq!(
        d.adjust_block(&f, Ddir::Write, 0, 2 * ZS, 0),
        Adjust::Fail(22)
    );
}
