//! Property tests: the parser never panics, whatever it is given, and
//! valid input keeps parsing after harmless changes.

use proptest::prelude::*;

use super::ini::tests::MemFs;
use super::*;
use blkqos_workload::Ddir;

fn env(name: &str) -> Option<String> {
    match name {
        "X" => Some("4k".into()),
        "EQ" => Some("bs=8k".into()),
        "LONG" => Some("9".repeat(200)),
        _ => None,
    }
}

fn fs() -> MemFs {
    let mut fs = MemFs::default();
    fs.0.insert("inc.fio".into(), "bs=8k\ninclude inc2.fio\n".into());
    fs.0.insert("inc2.fio".into(), "rw=randrw\n; c\n".into());
    fs.0.insert("self.fio".into(), "include self.fio\n".into());
    fs.0.insert("job.fio".into(), "[from-file]\nsize=1m\n".into());
    fs
}

const SEEDS: &[&str] = &[
    "[global]\nname=fio-rand-read\nfilename=/dev/nullb1\nrw=randread\nbs=4k\ndirect=1\nnumjobs=1\ntime_based=1\nruntime=60\ngroup_reporting=1\n\n[file1]\nsize=4G\nioengine=libaio\niodepth=1\nrate_iops=50000\nnorandommap=1\nthinktime=4ms\n",
    "[global]\nbs=4K\niodepth=1\ndirect=1\nioengine=libaio\ngroup_reporting\ntime_based\nruntime=100\nthinktime=1ms\nnumjobs=1\nname=raw-write\nrw=randrw\nignore_error=EIO:EIO\n\n[job1]\nfilename=/dev/nvme0n1\n",
    "[a]\nbs=4k,8k:16k\nrate=,500k\nbsrange=1k-4k,2k:8k\npercentile_list=1:50:99.9\nkb_base=1000\nsize=50%\noffset=10%\ninclude inc.fio\nnumjobs=$ncpus*2\nthinktime=${X}\nstonewall\n[global]\nrwmixwrite=30\n[b]\nnew_group\nunified_rw_reporting=both\n",
];

/// Fragments that reach the interesting corners of the grammar.
const TOKENS: &[&str] = &[
    "=",
    ",",
    ":",
    "-",
    "%",
    "[",
    "]",
    "[global]\n",
    "${X}",
    "${EQ}",
    "${LONG}",
    "${",
    "}",
    "$ncpus",
    "$pagesize*",
    "$mb_memory/",
    "include inc.fio\n",
    "include self.fio\n",
    "include \n",
    "0x",
    "k",
    "ib",
    "MiB",
    ";",
    "#",
    "\n",
    "(",
    ")",
    "name=",
    "bs=",
    "rw=",
    "ioengine=",
    "\r",
    "\t",
    " ",
    "é",
    "\u{0}",
    "99999999999999999999",
    "sec",
    "ms",
    "z",
    "time_based",
    "direct",
    "ignore_error=",
    "E",
    "EIO",
    "4294967296",
    "^",
    "/",
    "*",
];

#[derive(Clone, Debug)]
enum Mutation {
    Insert(usize, &'static str),
    InsertChar(usize, char),
    Delete(usize, usize),
    DupLine(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), prop::sample::select(TOKENS)).prop_map(|(i, t)| Mutation::Insert(i, t)),
        (any::<usize>(), any::<char>()).prop_map(|(i, c)| Mutation::InsertChar(i, c)),
        (any::<usize>(), 1usize..8).prop_map(|(i, n)| Mutation::Delete(i, n)),
        any::<usize>().prop_map(Mutation::DupLine),
    ]
}

fn floor_boundary(s: &str, i: usize) -> usize {
    let mut i = i % (s.len() + 1);
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn mutate(seed: &str, muts: &[Mutation]) -> String {
    let mut s = seed.to_string();
    for m in muts {
        match *m {
            Mutation::Insert(i, t) => {
                let i = floor_boundary(&s, i);
                s.insert_str(i, t);
            }
            Mutation::InsertChar(i, c) => {
                let i = floor_boundary(&s, i);
                s.insert(i, c);
            }
            Mutation::Delete(i, n) => {
                let a = floor_boundary(&s, i);
                let b = floor_boundary(&s, a.saturating_add(n).min(s.len()));
                if b > a {
                    s.replace_range(a..b, "");
                }
            }
            Mutation::DupLine(i) => {
                let lines: Vec<&str> = s.split('\n').collect();
                let l = lines[i % lines.len()].to_string();
                s = format!("{s}\n{l}");
            }
        }
    }
    s
}

fn parse(text: &str) -> Result<JobSet, ParseError> {
    parse_files_with(&[("job.fio".into(), text.into())], &env, &fs())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn job_file_arbitrary_text(text in "\\PC{0,300}") {
        let _ = parse(&text);
    }

    #[test]
    fn job_file_ascii_soup(text in "[\\[\\]a-z_=,:;#%$(){}0-9\\- \n\t]{0,300}") {
        let _ = parse(&text);
    }

    #[test]
    fn job_file_mutations(seed in prop::sample::select(SEEDS), muts in prop::collection::vec(mutation(), 0..12)) {
        let text = mutate(seed, &muts);
        if let Ok(set) = parse(&text) {
            // Whatever parses is coherent.
            prop_assert!(!set.jobs.is_empty());
            for j in &set.jobs {
                prop_assert!(j.iodepth >= 1 && j.numjobs >= 1 && j.rwmixread <= 100);
                prop_assert!(Ddir::ALL.into_iter().all(|d| j.min_bs(d) >= 1 && j.min_bs(d) <= j.max_bs(d)));
                prop_assert!(j.percentile_list.len() <= 20);
            }
        }
    }

    #[test]
    fn command_line_arbitrary(args in prop::collection::vec("\\PC{0,30}", 0..12)) {
        let _ = cli::parse_args(&args, &["backend", "flag?"], &env, &fs());
    }

    #[test]
    fn command_line_options(args in prop::collection::vec(
        (prop::sample::select(&["--name", "--bs", "--rw", "--time_based", "--direct", "--output-format",
            "--output", "--rate", "--ignore_error", "--backend", "--flag", "-name", "--", "job.fio",
            "--name=global", "--numjobs", "--percentile_list", "--size", "--kb_base"][..]),
         prop::option::of(prop::sample::select(TOKENS))),
        0..12,
    )) {
        let args: Vec<String> = args
            .into_iter()
            .map(|(a, v)| match v { Some(v) => format!("{a}={v}"), None => a.to_string() })
            .collect();
        let _ = cli::parse_args(&args, &["backend", "flag?"], &env, &fs());
    }
}
