//! fio's data verification on the real engine: each job clone's verify
//! format for [`blkqos_engine::EngineOptions::fio_verify`] (fio 3.33
//! verify.c, init.c `fixup_options`), or a refusal naming the option.

use anyhow::{bail, Result};
use blkqos_engine::fio_verify::{Format, JobVerify, VerifyType};
use blkqos_workload::spec::VerifyKind;
use blkqos_workload::{Ddir, JobSpec};
use std::path::Path;

/// fio's `enum verify_type` of a `verify=` kind.
fn vtype(k: VerifyKind) -> Option<VerifyType> {
    Some(match k {
        VerifyKind::None => return None,
        VerifyKind::Md5 => VerifyType::Md5,
        VerifyKind::Crc64 => VerifyType::Crc64,
        VerifyKind::Crc32 => VerifyType::Crc32,
        // options.c maps `crc32c-intel` to VERIFY_CRC32C
        VerifyKind::Crc32c => VerifyType::Crc32c,
        VerifyKind::Crc16 => VerifyType::Crc16,
        VerifyKind::Crc7 => VerifyType::Crc7,
        VerifyKind::Sha1 => VerifyType::Sha1,
        VerifyKind::Sha256 => VerifyType::Sha256,
        VerifyKind::Sha512 => VerifyType::Sha512,
        VerifyKind::Sha3_224 => VerifyType::Sha3_224,
        VerifyKind::Sha3_256 => VerifyType::Sha3_256,
        VerifyKind::Sha3_384 => VerifyType::Sha3_384,
        VerifyKind::Sha3_512 => VerifyType::Sha3_512,
        VerifyKind::Xxhash => VerifyType::Xxhash,
        VerifyKind::Meta => VerifyType::HdrOnly,
        VerifyKind::Pattern => VerifyType::PatternNoHdr,
        VerifyKind::PatternHdr => VerifyType::Pattern,
        VerifyKind::Null => VerifyType::Null,
    })
}

/// The option a refusal names: where `verify` (or the given option) was set.
fn at(j: &JobSpec, opt: &str) -> String {
    j.data_options
        .iter()
        .find(|o| o.option == opt)
        .or_else(|| {
            j.data_options
                .iter()
                .find(|o| o.option.starts_with("verify"))
        })
        .map_or_else(|| format!("job `{}`", j.name), |o| o.to_string())
}

/// One job's format: the interval after fio's fixup, checked against the
/// header's size as fio's `populate_hdr` and `verify_offset` need.
fn format_of(j: &JobSpec, t: VerifyType) -> Result<Format> {
    let v = &j.verify;
    let interval = v.effective_interval(
        (j.min_bs(Ddir::Write), j.max_bs(Ddir::Write)),
        j.min_bs(Ddir::Read),
        j.rw.has_read(),
    );
    let format = Format {
        vtype: t,
        interval: interval as usize,
        offset: v.offset as usize,
        pattern: v.pattern.clone(),
    };
    let hsize = format.hdr_size() as u64;
    if hsize > 0 && interval <= hsize {
        bail!(
            "{}: job `{}`: a verify interval of {interval} bytes holds no data after the \
             {hsize}-byte header (fio: \"Blocksize too small\"): use a larger bs or \
             verify_interval",
            at(j, "verify_interval"),
            j.name
        );
    }
    if v.offset > 0 && (v.offset < hsize || v.offset + hsize > interval) {
        bail!(
            "{}: job `{}`: verify_offset={} must leave room for the {hsize}-byte header \
             between {hsize} and {} bytes into each {interval}-byte interval",
            at(j, "verify_offset"),
            j.name,
            v.offset,
            interval.saturating_sub(hsize)
        );
    }
    Ok(format)
}

/// Each job clone's verification on the real engine, in the driver's
/// order (job by job, clone by clone: fio's `thread_number`), for the
/// target at `path`; `write_buffer`: blkqos's write-back buffer is on.
pub fn job_verifies(
    jobs: &[&JobSpec],
    path: &Path,
    write_buffer: bool,
) -> Result<Vec<Option<JobVerify>>> {
    let mut out = Vec::new();
    for j in jobs {
        let clones = j.numjobs.max(1) as usize;
        let Some(t) = vtype(j.verify.kind) else {
            out.extend(std::iter::repeat_n(None, clones));
            continue;
        };
        if write_buffer {
            bail!(
                "{}: job `{}`: fio's verify headers with the real engine's write-back buffer \
                 (--pagecache=on, which writes blkqos's own pattern): run with direct=1 or \
                 without --pagecache=on",
                at(j, "verify"),
                j.name
            );
        }
        let format = format_of(j, t)?;
        let (reads, writes) = (j.rw.has_read(), j.rw.has_write());
        let rw = [Ddir::Read, Ddir::Write];
        let one_bs = rw.map(|d| j.min_bs(d)).iter().min() == rw.map(|d| j.max_bs(d)).iter().max();
        for _ in 0..clones {
            out.push(Some(JobVerify {
                format: format.clone(),
                thread: (out.len() + 1) as u16,
                file_name: path.display().to_string(),
                // backend.c do_io: every read of a job that does not both
                // read and write; verify.c verify_io_u: the seed from the
                // header then, or with verify_backlog
                check_all_reads: !(reads && writes),
                check_seed: reads && writes && j.verify.backlog == 0,
                // verify.c verify_header
                check_numberio: writes && one_bs && !j.time_based && !j.verify.only,
                fatal: j.verify.fatal,
                dump_dir: j.verify.dump.then(|| std::path::PathBuf::from(".")),
            }));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(text: &str) -> JobSpec {
        let parsed = blkqos_fio::parse::parse_job_file("t.fio", text, &|_| None).expect("parses");
        parsed.jobs.into_iter().next().expect("a job")
    }

    #[test]
    fn formats_and_checks_as_fio_decides_them() {
        let j = job("[a]\nrw=randwrite\nbs=4k\nverify=crc32c-intel\nnumjobs=2\nsize=1m\n");
        let v = job_verifies(&[&j], Path::new("/tmp/x"), false).unwrap();
        let a = v[1].as_ref().unwrap();
        assert_eq!(a.format.vtype, VerifyType::Crc32c);
        assert_eq!(a.format.interval, 4096);
        assert_eq!(a.thread, 2);
        assert!(a.check_all_reads && !a.check_seed && a.check_numberio);
        let j = job("[a]\nrw=read\nbs=64k\nverify=meta\nverify_pattern=0xaa555aa5\nverify_interval=512\nsize=1m\n");
        let v = job_verifies(&[&j], Path::new("/tmp/x"), false).unwrap();
        let a = v[0].as_ref().unwrap();
        assert_eq!(a.format.vtype, VerifyType::HdrOnly);
        assert_eq!(a.format.interval, 512);
        assert_eq!(
            a.format.pattern.as_deref(),
            Some(&[0xaa, 0x55, 0x5a, 0xa5][..])
        );
        assert!(!a.check_numberio);
        let j = job("[a]\nrw=randrw\nbs=4k\nverify=md5\nverify_backlog=8\nsize=1m\n");
        let a = job_verifies(&[&j], Path::new("/tmp/x"), false).unwrap()[0]
            .clone()
            .unwrap();
        assert!(!a.check_all_reads && !a.check_seed);
        assert!(job_verifies(&[&j], Path::new("/tmp/x"), true).is_err());
        let j = job("[a]\nrw=write\nbs=4k\nverify=sha512\nverify_interval=128\nsize=1m\n");
        let e = job_verifies(&[&j], Path::new("/tmp/x"), false).unwrap_err();
        assert!(e.to_string().contains("Blocksize too small"), "{e}");
    }
}
