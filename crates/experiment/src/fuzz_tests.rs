//! Fuzzing whole inputs: scenario files, command lines and knob lines,
//! mutated from valid seeds, go through the same path as `blkqos run`
//! (parse, plan, and a simulated run stopped after a short wall time).
//! Whatever they hold, nothing panics and a refusal names where the bad
//! value is (`s.toml:LINE` for a scenario, `<command line>` or the flag for
//! options).
//!
//! `BLKQOS_FUZZ_CASES=N` sets the number of cases per target (default 48;
//! `.ci/run` runs more, for a bounded time).

use crate::experiment::Experiment;
use proptest::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn cases() -> u32 {
    std::env::var("BLKQOS_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(48)
}

/// Small valid scenarios covering each part of the format.
const SCENARIOS: &[&str] = &[
    "seed = 3\n[device]\nmodel = \"null\"\nmbps = 4\n[[write]]\nfile = \"/sys/fs/cgroup/a/io.max\"\nvalue = \"253:0 riops=100 wbps=1048576\"\n[[write]]\nfile = \"/sys/fs/cgroup/a/io.max\"\nvalue = \"253:0 riops=max\"\nat = \"200ms\"\n[[fio]]\ncgroup = \"/a\"\nargs = \"--name=r --rw=randread --bs=4k --size=1m --runtime=1 --time_based --direct=1 --ioengine=libaio --iodepth=4\"\n",
    "cgroups = [\"/x\", \"/y/z\"]\n[device]\nmodel = \"ssd\"\nchannels = 2\n[controllers]\nthrottle = \"linux-6.12\"\n[[write]]\nfile = \"/sys/fs/cgroup/io.cost.qos\"\nvalue = \"253:0 enable=1 ctrl=user rpct=95 rlat=5000 wpct=95 wlat=5000 min=50 max=150\"\n[[write]]\nfile = \"/sys/fs/cgroup/io.cost.model\"\nvalue = \"253:0 ctrl=user model=linear rbps=2000000000 rseqiops=100000 rrandiops=100000 wbps=1000000000 wseqiops=50000 wrandiops=50000\"\n[[write]]\nfile = \"/sys/fs/cgroup/x/io.weight\"\nvalue = \"default 300\"\n[[write]]\nfile = \"/sys/fs/cgroup/y/z/io.weight\"\nvalue = \"253:0 50\"\nat = \"100ms\"\n[[fio]]\ncgroup = \"/x\"\njob = \"\"\"\n[a]\nrw=randrw\nbs=4k,64k\nsize=2m\nruntime=500ms\ntime_based\ndirect=1\nioengine=io_uring\niodepth=8\n\"\"\"\n[[fio]]\ncgroup = \"/y/z\"\nargs = \"--name=b --rw=write --bs=16k --size=1m --direct=1 --rate_iops=200\"\n",
    "[device]\nmodel = \"hdd\"\n[pagecache]\nmemory = \"64m\"\ndirty_ratio = 20\nwriteback = \"sync\"\n[accounting]\niostats = \"sampling-v2\"\ndiskstats_every = \"100ms\"\n[[write]]\nfile = \"/sys/fs/cgroup/w/io.max\"\nvalue = \"253:0 wbps=2097152\"\n[[fio]]\ncgroup = \"/w\"\nargs = \"--name=w --rw=write --bs=64k --size=4m --direct=0 --ioengine=psync --end_fsync=1\"\n",
    "[device]\nmodel = \"cloud\"\niops = 500\nmbps = 50\nburst_ms = 100\n[[write]]\nfile = \"/sys/fs/cgroup/blkio/g/blkio.throttle.read_iops_device\"\nvalue = \"253:0 50\"\n[[fio]]\ncgroup = \"/g\"\nargs = \"--name=s --rw=read --bs=128k --size=2m --direct=1 --numjobs=2 --thinktime=1ms\"\n",
];

/// Values that reach the corners: negatives, units fio misreads, empty,
/// huge, non-numbers, lists.
const ODD_VALUES: &[&str] = &[
    "-1",
    "0",
    "1x",
    "1sec",
    "",
    " ",
    "4k-",
    "-4k",
    "1e999",
    "nan",
    "99999999999999999999",
    "18446744073709551615",
    "0x",
    "0xffffffffffffffff",
    "%",
    "101%",
    "max",
    "1:2:3",
    "a,b,c",
    "4k,,",
    "\"",
    "[",
    "1/0",
    "${X}",
    "1000",
    "3600s",
    "1m",
    "4g",
    "true",
    "253:0",
    "253:0 x=1",
];

/// Byte ranges of the values in a scenario: TOML values after ` = ` and
/// option values after `=` inside strings.
fn value_spans(text: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'=' {
            let start = i + 1 + usize::from(bytes.get(i + 1) == Some(&b' '));
            let end = text[start..]
                .find([' ', '\n', '"'])
                .map_or(text.len(), |e| start + e);
            spans.push((start, end));
        }
        i += 1;
    }
    spans
}

/// A mutation of a seed text: replace one value, insert a fragment, or
/// delete a range.
fn mutate(seed: &str, pick: usize, odd: &str, kind: u8) -> String {
    let spans = value_spans(seed);
    match kind % 3 {
        0 if !spans.is_empty() => {
            let (s, e) = spans[pick % spans.len()];
            format!("{}{odd}{}", &seed[..s], &seed[e..])
        }
        1 => {
            let at = floor_char(seed, pick % (seed.len() + 1));
            format!("{}{odd}{}", &seed[..at], &seed[at..])
        }
        _ => {
            let a = floor_char(seed, pick % (seed.len() + 1));
            let b = floor_char(seed, (a + 1 + pick % 7).min(seed.len()));
            format!("{}{}", &seed[..a], &seed[b..])
        }
    }
}

fn floor_char(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Run a parsed experiment on the simulator for at most ~150 ms of wall
/// time (a stop flag, as SIGINT sets it).
fn run_briefly(exp: &Experiment) {
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let watchdog = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(150));
        s.store(true, Ordering::SeqCst);
    });
    // an error is fine (a run can fail); a panic is not
    let _ = exp.run_sim_with(Some(stop), None);
    watchdog.join().unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn mutated_scenarios_never_panic(
        seed in 0..SCENARIOS.len(),
        pick in any::<usize>(),
        odd in prop::sample::select(ODD_VALUES),
        kind in any::<u8>(),
        times in 1..3usize,
    ) {
        let mut text = SCENARIOS[seed].to_string();
        for t in 0..times {
            text = mutate(&text, pick.wrapping_mul(t + 1), odd, kind.wrapping_add(t as u8));
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.toml");
        std::fs::write(&path, &text).unwrap();
        match crate::scenario_build::experiment(&path) {
            Ok(exp) => run_briefly(&exp),
            Err(e) => {
                let msg = format!("{e:#}");
                prop_assert!(msg.contains("s.toml"), "refusal without the file: {msg}\n{text}");
            }
        }
    }

    #[test]
    fn mutated_command_lines_never_panic(
        pick in any::<usize>(),
        odd in prop::sample::select(ODD_VALUES),
    ) {
        let mut args: Vec<String> = [
            "--name=x", "--rw=randrw", "--bs=4k", "--size=1m", "--runtime=1",
            "--time_based", "--direct=1", "--iodepth=4", "--rate_iops=500",
            "--device=ssd,channels=2", "--cgroup=a", "--io-max=253:0 riops=100",
            "--io-weight=200", "--hz=250", "--iostats=inflight",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let i = pick % args.len();
        let key = args[i].split_once('=').map_or(args[i].clone(), |(k, _)| k.to_string());
        args[i] = format!("{key}={odd}");
        match crate::flags::build(&args) {
            Ok(exp) => run_briefly(&exp),
            Err(e) => {
                let msg = format!("{e:#}");
                prop_assert!(
                    msg.contains("<command line>") || msg.contains(&key) || msg.contains("--"),
                    "refusal without the option: {msg}\n{args:?}"
                );
            }
        }
    }

    #[test]
    fn knob_lines_never_panic(line in "[0-9a-z:=. \\-]{0,60}") {
        use blkqos_core::iocost::knob::{parse_io_weight, parse_model, parse_qos};
        let _ = blkqos_core::throttle::knob::parse_io_max(&line);
        let _ = parse_qos(&line);
        let _ = parse_model(&line);
        let _ = parse_io_weight(&line);
        for prefix in ["253:0 ", "default ", "253:0 enable=1 "] {
            let l = format!("{prefix}{line}");
            let _ = blkqos_core::throttle::knob::parse_io_max(&l);
            let _ = parse_qos(&l);
            let _ = parse_model(&l);
            let _ = parse_io_weight(&l);
        }
    }
}
