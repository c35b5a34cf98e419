//! `--live` on the real engine: a block per second on stderr (plain blocks
//! off a terminal), the io.max-limited cgroup's row at its limit. Generous
//! bounds: the sink is called at the first loop pass after each second.

use crate::engine_util;

use engine_util::*;

fn live_blocks_once_a_second(be: Be) {
    let _x = exclusive();
    let s = Scratch::new();
    let f = s.path("live.dat");
    let jl = s.path("live.jsonl");
    let mut args: Vec<String> = vec!["run".into()];
    args.extend(
        format!(
            "--name=a --filename={} --size=16m --bs=4k --rw=randread --ioengine=io_uring \
             --direct=1 --iodepth=8 --norandommap --runtime=3 --time_based --cgroup=/lim",
            f.display()
        )
        .split(' ')
        .map(String::from),
    );
    args.push(format!("--io-max={} riops=200", s.devid));
    args.push(be.flag());
    args.push("--live".into());
    args.push(format!("--live-json={}", jl.display()));
    args.push("--output-format=json".into());
    let r = blkqos(&args, s.dir.path());
    if let Some(why) = r.kernel_refusal() {
        blkqos_testkit::skip(
            blkqos_testkit::Reason::IoUring,
            format!("{}: {why}", be.name()),
        );
        return;
    }
    r.ok();
    let heads: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.starts_with("live t="))
        .collect();
    eprintln!("{}:\n{}", be.name(), r.stderr);
    // 3 s: blocks at about 1, 2 and 3 s, and the end unless it is a sliver
    assert!((2..=5).contains(&heads.len()), "{heads:?}");
    assert!(!r.stderr.contains("\x1b["), "no redraw off a terminal");
    assert!(
        !r.stderr.contains("blkqos: ["),
        "no --eta line under --live"
    );
    let text = std::fs::read_to_string(&jl).unwrap();
    let blocks: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!((heads.len()..=heads.len() + 1).contains(&blocks.len()));
    // whole seconds: each about 1 s long, /lim at 200 IOPS ±10%
    let full: Vec<&serde_json::Value> = blocks[..blocks.len() - 1].iter().skip(1).collect();
    assert!(!full.is_empty(), "{text}");
    for b in full {
        let len_s = b["interval_ns"].as_f64().unwrap() / 1e9;
        assert!((0.9..1.5).contains(&len_s), "interval {len_s} s");
        let row = b["cgroups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["cgroup"] == "/lim")
            .unwrap_or_else(|| panic!("no /lim row: {b}"));
        let iops = row["ios"][0].as_f64().unwrap() / len_s;
        assert!(within(iops, 200.0, 10.0), "{iops} IOPS, want 200: {b}");
        assert!(row["p99_ns"].as_u64().unwrap() > 0);
    }
}

on_real_backends!(live_blocks_once_a_second);
