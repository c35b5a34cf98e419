//! `zonemode=strided` against real fio 3.33: the same job file (a 16 MiB
//! scratch file, QD1 so the log's order is the issue order) run by fio, by
//! blkqos on the simulator and on the real engine; each writes a per-IO
//! latency log with offsets (`write_lat_log`, `log_offset=1`). The
//! offsets must be the same sequence (sequential jobs), or visit the same
//! zones in the same order (random jobs: fio's random numbers are not
//! blkqos's, the zones are). One case reads 4 MiB of an existing 16 MiB
//! file: the zones wrap at the end of the file, not of `size`.

use crate::engine_util;

use engine_util::*;
use std::path::Path;
use std::process::Command;

struct Case {
    name: &'static str,
    job: &'static str,
    /// Compare zone numbers (offset / this) instead of offsets.
    zone_of: Option<u64>,
    /// The file exists beforehand with this many MiB, more than the
    /// job's `size`: zones wrap at the file's end, not at `size` (real
    /// engine and fio only: a simulated file is as large as `size`).
    file_mib: Option<u64>,
}

const CASES: [Case; 6] = [
    Case {
        name: "skip",
        job: "rw=read\nzonesize=1m\nzoneskip=3m\n",
        zone_of: None,
        file_mib: None,
    },
    Case {
        name: "size_over_range",
        job: "rw=read\nzonesize=1m\nzonerange=512k\n",
        zone_of: None,
        file_mib: None,
    },
    Case {
        name: "range_over_size",
        job: "rw=write\nzonesize=1m\nzonerange=2m\nzoneskip=3m\n",
        zone_of: None,
        file_mib: None,
    },
    Case {
        name: "skip_in_zones",
        job: "rw=read\nzonesize=512k\nzoneskip=3z\nio_size=6m\n",
        zone_of: None,
        file_mib: None,
    },
    Case {
        name: "random",
        job: "rw=randread\nzonesize=1m\nzoneskip=3m\n",
        zone_of: Some(4 << 20),
        file_mib: None,
    },
    Case {
        name: "file_beyond_size",
        job: "rw=read\nzonesize=1m\nzoneskip=3m\nsize=4m\n",
        zone_of: None,
        file_mib: Some(16),
    },
];

fn fio_present() -> bool {
    Command::new("fio").arg("--version").output().is_ok()
}

/// The offsets of the clat log `dir/NAME_clat.1.log`, in log order.
fn offsets(dir: &Path, name: &str) -> Vec<u64> {
    let p = dir.join(format!("{name}_clat.1.log"));
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    text.lines()
        .map(|l| {
            l.split(',')
                .nth(4)
                .expect("offset column")
                .trim()
                .parse()
                .expect("offset")
        })
        .collect()
}

fn job_text(c: &Case, file: &Path) -> String {
    format!(
        "[{n}]\nfilename={f}\nsize=16m\nbs=256k\ndirect=1\nioengine=psync\nzonemode=strided\n\
         write_lat_log={n}\nlog_offset=1\n{j}",
        n = c.name,
        f = file.display(),
        j = c.job
    )
}

#[test]
#[ignore = "tier real"]
fn strided_offsets_match_fio() {
    let _x = exclusive();
    if !fio_present() {
        blkqos_testkit::skip(blkqos_testkit::Reason::Fio, "fio is not installed");
        return;
    }
    for c in &CASES {
        let s = Scratch::new();
        let file = s.path("data");
        if let Some(mib) = c.file_mib {
            let f = std::fs::File::create(&file).unwrap();
            f.set_len(mib << 20).unwrap();
        }
        let jf = s.path(&format!("{}.fio", c.name));
        std::fs::write(&jf, job_text(c, &file)).unwrap();
        let key = |v: Vec<u64>| -> Vec<u64> {
            v.into_iter()
                .map(|o| c.zone_of.map_or(o, |z| o / z))
                .collect()
        };
        let mut got = Vec::new();
        for be in [Be::Sim, Be::Uring, Be::Threads] {
            if be == Be::Sim && c.file_mib.is_some() {
                continue;
            }
            let mut args = vec!["run".to_string(), jf.display().to_string()];
            if be.is_real() {
                args.push(be.flag());
            }
            let r = blkqos(&args, s.dir.path());
            if let Some(why) = r.kernel_refusal() {
                blkqos_testkit::skip(
                    blkqos_testkit::Reason::IoUring,
                    format!("{} {}: {why}", c.name, be.name()),
                );
                continue;
            }
            r.ok();
            got.push((be.name(), key(offsets(s.dir.path(), c.name))));
        }
        let mut cmd = Command::new("fio");
        cmd.arg(&jf).current_dir(s.dir.path());
        let f = run_bounded(cmd, TIMEOUT);
        assert_eq!(f.code, Some(0), "fio {}: {}", c.name, f.stderr);
        let want = key(offsets(s.dir.path(), c.name));
        assert!(!want.is_empty());
        for (be, g) in got {
            assert_eq!(g, want, "{} on {be}: offsets (or zones) vs fio", c.name);
        }
    }
}
