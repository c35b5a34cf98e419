//! `random_generator=lfsr` against fio 3.33: the offsets of each job of a
//! two-job file, from fio's `write_iolog` and from the job state machine.
//! Skipped when `fio` is not installed.

use blkqos_core::{Duration, Instant};
use blkqos_workload::job::{JobAction, Reaped};
use blkqos_workload::spec::{IoEngine, SizeSpec};
use blkqos_workload::spec_submit::RandomGenerator;
use blkqos_workload::{Job, JobSpec, RwMode};
use std::process::Command;

const SIZE_BYTES: u64 = 256 * 1024;

/// The offsets `fio` logs for each job of a file of two identical jobs.
fn fio_offsets(dir: &std::path::Path) -> Option<Vec<Vec<u64>>> {
    let mut job = String::new();
    for name in ["a", "b"] {
        job.push_str(&format!(
            "[{name}]\nioengine=null\nrw=randread\nbs=4k\nsize={SIZE_BYTES}\n\
             random_generator=lfsr\nwrite_iolog={}/{name}.iolog\n",
            dir.display()
        ));
    }
    let file = dir.join("lfsr.fio");
    std::fs::write(&file, job).ok()?;
    let ok = Command::new("fio")
        .arg("--output=/dev/null")
        .arg(&file)
        .status()
        .ok()?
        .success();
    if !ok {
        return None;
    }
    let logs = ["a", "b"].map(|name| {
        let text = std::fs::read_to_string(dir.join(format!("{name}.iolog"))).expect("iolog");
        text.lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (f.len() == 5 && f[2] == "read").then(|| f[3].parse().expect("offset"))
            })
            .collect()
    });
    Some(logs.to_vec())
}

/// The offsets of fio's thread `thread_number` as the job issues them.
fn blkqos_offsets(thread_number: u64) -> Vec<u64> {
    let mut s = JobSpec::new("j");
    s.rw = RwMode::RandRead;
    s.ioengine = IoEngine::Null;
    s.size = Some(SizeSpec::Bytes(SIZE_BYTES));
    s.submit.random_generator = RandomGenerator::Lfsr;
    let mut job = Job::new(s, 0, 0, SIZE_BYTES, 1, Instant::ZERO);
    job.set_thread_number(thread_number);
    let mut now = Instant::ZERO;
    let mut out = Vec::new();
    loop {
        match job.next_action(now) {
            JobAction::Issue(io) => {
                out.push(io.offset);
                job.submitted(now);
                now += Duration::from_us(1);
                let r = Reaped {
                    io,
                    issue_time: now,
                    error: 0,
                    bytes_done: io.len,
                };
                job.reap(&[r], now);
            }
            JobAction::Done => return out,
            a => panic!("unexpected {a:?}"),
        }
    }
}

#[test]
fn lfsr_offsets_are_fios() {
    let dir = std::env::temp_dir().join(format!("blkqos-lfsr-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let Some(fio) = fio_offsets(&dir) else {
        blkqos_testkit::skip(blkqos_testkit::Reason::Fio, "fio is not installed");
        return;
    };
    let _ = std::fs::remove_dir_all(&dir);
    for (i, want) in fio.iter().enumerate() {
        assert_eq!(want.len() as u64, SIZE_BYTES / 4096);
        assert_eq!(&blkqos_offsets(i as u64 + 1), want, "job {}", i + 1);
    }
}
