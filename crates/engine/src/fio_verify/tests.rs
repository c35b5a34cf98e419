//! Blocks fio 3.33 wrote (`tests/data/fio_verify/*.blk`: the first 4 KiB
//! of `fio --rw=write --bs=4k --verify=<type> --do_verify=0`) verify here,
//! and filling with their header's seed, time, thread and numberio gives
//! fio's bytes back.

use super::check::{check_io, ReadCheck};
use super::fill::{fill_io, WriteMeta};
use super::*;

fn fixture(name: &str) -> Vec<u8> {
    let p = format!(
        "{}/tests/data/fio_verify/{name}.blk",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

fn fmt(vtype: VerifyType) -> Format {
    Format {
        vtype,
        interval: 4096,
        offset: 0,
        pattern: None,
    }
}

fn rc() -> ReadCheck<'static> {
    ReadCheck {
        file_name: "/tmp/f",
        offset: 0,
        flags: 8,
        rand_seed: None,
        numberio: None,
        fatal: false,
        dump_dir: None,
    }
}

/// The header fields of a fio block (after undoing `verify_offset`).
fn meta_of(b: &[u8]) -> WriteMeta {
    WriteMeta {
        rand_seed: u64::from_le_bytes(b[8..16].try_into().unwrap()),
        time_sec: u32::from_le_bytes(b[24..28].try_into().unwrap()),
        time_nsec: u32::from_le_bytes(b[28..32].try_into().unwrap()),
        thread: u16::from_le_bytes([b[32], b[33]]),
        numberio: u16::from_le_bytes([b[34], b[35]]),
    }
}

const SUMS: [(&str, VerifyType); 15] = [
    ("md5", VerifyType::Md5),
    ("crc64", VerifyType::Crc64),
    ("crc32", VerifyType::Crc32),
    ("crc32c", VerifyType::Crc32c),
    ("crc16", VerifyType::Crc16),
    ("crc7", VerifyType::Crc7),
    ("sha1", VerifyType::Sha1),
    ("sha256", VerifyType::Sha256),
    ("sha512", VerifyType::Sha512),
    ("sha3-224", VerifyType::Sha3_224),
    ("sha3-256", VerifyType::Sha3_256),
    ("sha3-384", VerifyType::Sha3_384),
    ("sha3-512", VerifyType::Sha3_512),
    ("xxhash", VerifyType::Xxhash),
    ("meta", VerifyType::HdrOnly),
];

#[test]
fn fio_blocks_verify_and_refill_byte_for_byte() {
    for (name, t) in SUMS {
        let b = fixture(name);
        let f = fmt(t);
        assert_eq!(check_io(&f, &b, &rc()), Ok(()), "{name}");
        let mut ours = vec![0u8; 4096];
        fill_io(&f, &mut ours, 0, &meta_of(&b));
        assert!(ours == b, "{name}: our block differs from fio's");
    }
}

#[test]
fn a_flipped_data_byte_is_reported_as_fio_does() {
    let mut b = fixture("crc32c");
    b[1000] ^= 0xff;
    let err = check_io(&fmt(VerifyType::Crc32c), &b, &rc()).unwrap_err();
    let lines: Vec<&str> = err.lines.lines().collect();
    assert_eq!(
        lines[0],
        "crc32c: verify failed at file /tmp/f offset 0, length 4096 (requested block: \
         offset=0, length=4096, flags=8)"
    );
    assert!(lines[1].starts_with("       Expected CRC: "), "{lines:?}");
    assert!(lines[2].starts_with("       Received CRC: "), "{lines:?}");
    for (name, t) in SUMS.into_iter().filter(|(_, t)| *t != VerifyType::HdrOnly) {
        let mut b = fixture(name);
        // near the end: fio's sha512 field holds only the first and last bytes
        b[4090] ^= 1;
        let e = check_io(&fmt(t), &b, &rc()).unwrap_err();
        assert!(
            e.lines
                .starts_with(&format!("{}: verify failed", sum::name(t))),
            "{name}: {}",
            e.lines
        );
    }
}

#[test]
fn header_faults_in_fio_order() {
    let good = fixture("crc32c");
    let mut b = good.clone();
    b[0] = 0;
    let e = check_io(&fmt(VerifyType::Crc32c), &b, &rc()).unwrap_err();
    assert_eq!(
        e.lines,
        "verify: bad magic header ac00, wanted acca at file /tmp/f offset 0, length 4096 \
         (requested block: offset=0, length=4096)\n"
    );
    let mut r = rc();
    r.offset = 8192;
    let e = check_io(&fmt(VerifyType::Crc32c), &good, &r).unwrap_err();
    assert!(
        e.lines
            .starts_with("verify: bad header offset 0, wanted 8192 at file /tmp/f offset 8192"),
        "{}",
        e.lines
    );
    let mut b = good.clone();
    b[30] ^= 1; // time: only the header's crc32c catches it
    let e = check_io(&fmt(VerifyType::Crc32c), &b, &rc()).unwrap_err();
    assert!(
        e.lines.starts_with("verify: bad header crc "),
        "{}",
        e.lines
    );
    let mut r = rc();
    r.rand_seed = Some(7);
    let e = check_io(&fmt(VerifyType::Crc32c), &good, &r).unwrap_err();
    assert!(e.lines.contains(", wanted 7 at file"), "{}", e.lines);
}

#[test]
fn intervals_offsets_and_patterns_as_fio_writes_them() {
    let pat = vec![0xaa, 0x55, 0x5a, 0xa5];
    let cases = [
        (
            "meta-pat-512",
            VerifyType::HdrOnly,
            512,
            0,
            Some(pat.clone()),
        ),
        (
            "pattern-hdr",
            VerifyType::Pattern,
            4096,
            0,
            Some(pat.clone()),
        ),
        (
            "pattern-nohdr",
            VerifyType::PatternNoHdr,
            4096,
            0,
            Some(b"abc".to_vec()),
        ),
        ("crc32c-off64", VerifyType::Crc32c, 4096, 64, None),
    ];
    for (name, vtype, interval, offset, pattern) in cases {
        let b = fixture(name);
        let f = Format {
            vtype,
            interval,
            offset,
            pattern,
        };
        assert_eq!(check_io(&f, &b, &rc()), Ok(()), "{name}");
        let mut hdr = b[..f.hdr_size().max(HDR_BYTES)].to_vec();
        if offset > 0 {
            hdr.copy_from_slice(&b[offset..offset + f.hdr_size()]);
        }
        let mut ours = vec![0u8; 4096];
        fill_io(&f, &mut ours, 0, &meta_of(&hdr));
        assert!(ours == b, "{name}: our block differs from fio's");
        let mut bad = b.clone();
        bad[4000] ^= 0x10;
        let e = check_io(&f, &bad, &rc()).unwrap_err();
        if f.pattern.is_some() {
            assert!(
                e.lines.starts_with("fio: got pattern '"),
                "{name}: {}",
                e.lines
            );
            assert!(e.lines.contains("Bad bits 1\n"), "{name}: {}", e.lines);
        }
    }
}

#[test]
fn verify_fatal_stops_at_the_first_bad_interval() {
    let f = Format {
        vtype: VerifyType::Crc32c,
        interval: 512,
        offset: 0,
        pattern: None,
    };
    let mut buf = vec![0u8; 4096];
    fill_io(&f, &mut buf, 4096, &WriteMeta::default());
    buf[600] ^= 1;
    buf[1600] ^= 1;
    let mut r = rc();
    r.offset = 4096;
    let all = check_io(&f, &buf, &r).unwrap_err();
    assert_eq!(all.lines.matches("verify failed").count(), 2);
    // fio keeps the last interval's result: the IO is not in error
    assert!(!all.eilseq);
    assert!(
        all.lines.contains("offset 4608, length 512"),
        "{}",
        all.lines
    );
    r.fatal = true;
    let one = check_io(&f, &buf, &r).unwrap_err();
    assert_eq!(one.lines.matches("verify failed").count(), 1);
    assert!(one.eilseq);
    // the last interval bad: an error without verify_fatal too
    buf[4000] ^= 1;
    r.fatal = false;
    assert!(check_io(&f, &buf, &r).unwrap_err().eilseq);
}
