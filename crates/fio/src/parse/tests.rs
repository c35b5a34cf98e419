//! Whole-file and command-line tests, including the three job files of the
//! seeds (seed 000's r2.job, seed 001's fio lines, seed 004's job.fio).

use blkqos_core::Duration;
use blkqos_workload::spec::{
    IgnoreErrors, IoEngine, JobSpec, Origin, PerDir, RwMode, SizeSpec, UnifiedRw,
};

use super::ini::tests::MemFs;
use super::*;

fn no_env(_: &str) -> Option<String> {
    None
}

fn file(text: &str) -> Result<JobSet, ParseError> {
    parse_files_with(&[("t.fio".into(), text.into())], &no_env, &MemFs::default())
}

fn cli(args: &[&str]) -> Result<CliParse, ParseError> {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    cli::parse_args(
        &args,
        &["backend", "seed", "dry-run?"],
        &no_env,
        &MemFs::default(),
    )
}

fn opts(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

const JOB_A: &str = "[global]
name=fio-rand-read
filename=/dev/nullb1
rw=randread
bs=4k
direct=1
numjobs=1
time_based=1
runtime=60
group_reporting=1

[file1]
size=4G
ioengine=libaio
iodepth=1
rate_iops=50000
norandommap=1
thinktime=4ms
";

#[test]
fn target_job_a() {
    let set = file(JOB_A).unwrap();
    assert_eq!(set.jobs.len(), 1);
    let mut want = JobSpec::new("file1");
    want.origin = Origin {
        file: "t.fio".into(),
        line: 12,
    };
    want.filename = Some("/dev/nullb1".into());
    want.rw = RwMode::RandRead;
    want.direct = true;
    want.time_based = true;
    want.runtime = Some(Duration::from_secs(60));
    want.group_reporting = true;
    want.size = Some(SizeSpec::Bytes(4 << 30));
    want.ioengine = IoEngine::Libaio;
    want.rate_iops = PerDir::all(Some(50_000));
    want.norandommap = true;
    want.thinktime = Duration::from_us(4000);
    want.job_options = opts(&[
        ("size", "4G"),
        ("ioengine", "libaio"),
        ("iodepth", "1"),
        ("rate_iops", "50000"),
        ("norandommap", "1"),
        ("thinktime", "4ms"),
    ]);
    assert_eq!(set.jobs[0], want);
    assert_eq!(
        set.global_options,
        opts(&[
            ("name", "fio-rand-read"),
            ("rw", "randread"),
            ("bs", "4k"),
            ("direct", "1"),
            ("numjobs", "1"),
            ("time_based", "1"),
            ("runtime", "60"),
            ("group_reporting", "1"),
            // filename has priority -1: fio parses (and lists) it last.
            ("filename", "/dev/nullb1"),
        ])
    );
}

#[test]
fn target_job_b_command_line() {
    let args = "--name=cgB --filename=F --direct=1 --rw=randrw --rwmixread=50 --ioengine=libaio --bs=4k --iodepth=1 --size=4G --runtime=10 --time_based --group_reporting --unified_rw_reporting=mixed --output-format=json --output=out.json --rate_iops=100";
    let p = cli(&args.split(' ').collect::<Vec<_>>()).unwrap();
    assert_eq!(p.output.as_deref(), Some("out.json"));
    assert_eq!(p.output_format, [OutputFormat::Json]);
    assert!(p.job_files.is_empty() && p.other.is_empty());
    assert!(p.jobs.global_options.is_empty());
    let mut want = JobSpec::new("cgB");
    want.origin = Origin {
        file: COMMAND_LINE.into(),
        line: 0,
    };
    want.filename = Some("F".into());
    want.direct = true;
    want.rw = RwMode::RandRw;
    want.ioengine = IoEngine::Libaio;
    want.size = Some(SizeSpec::Bytes(4 << 30));
    want.runtime = Some(Duration::from_secs(10));
    want.time_based = true;
    want.group_reporting = true;
    want.unified_rw_reporting = UnifiedRw::Mixed;
    // No comma: 100/s for reads *and* for writes (fio's `rate=` takes R,W,T and one value sets all three).
    want.rate_iops = PerDir::all(Some(100));
    // As in fio 3.33's JSON (`json_object_add_value_string` skips a NULL value): flags given bare are left out.
    want.job_options = opts(&[
        ("name", "cgB"),
        ("filename", "F"),
        ("direct", "1"),
        ("rw", "randrw"),
        ("rwmixread", "50"),
        ("ioengine", "libaio"),
        ("bs", "4k"),
        ("iodepth", "1"),
        ("size", "4G"),
        ("runtime", "10"),
        ("unified_rw_reporting", "mixed"),
        ("rate_iops", "100"),
    ]);
    assert_eq!(p.jobs.jobs, [want]);
}

#[test]
fn target_job_c() {
    let text = "[global]
bs=4K
iodepth=1
direct=1
ioengine=libaio
group_reporting
time_based
runtime=100
thinktime=1ms
numjobs=1
name=raw-write
rw=randrw
ignore_error=EIO:EIO

[job1]
filename=/dev/nvme0n1
";
    let set = file(text).unwrap();
    let mut want = JobSpec::new("job1");
    want.origin = Origin {
        file: "t.fio".into(),
        line: 15,
    };
    want.filename = Some("/dev/nvme0n1".into());
    want.direct = true;
    want.ioengine = IoEngine::Libaio;
    want.group_reporting = true;
    want.time_based = true;
    want.runtime = Some(Duration::from_secs(100));
    want.thinktime = Duration::from_ms(1);
    want.rw = RwMode::RandRw;
    want.ignore_error = IgnoreErrors {
        read: vec![5, 5],
        write: vec![],
        verify: vec![],
        continue_on: 1,
    };
    want.job_options = opts(&[("filename", "/dev/nvme0n1")]);
    assert_eq!(set.jobs, [want]);
    // Bare flags are not echoed into the global options either.
    let names: Vec<_> = set.global_options.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        names,
        [
            "bs",
            "iodepth",
            "direct",
            "ioengine",
            "runtime",
            "thinktime",
            "numjobs",
            "name",
            "rw",
            "ignore_error"
        ]
    );
}

#[test]
fn section_name_overrides_inherited_name() {
    let set = file("[global]\nname=g\n[a]\n[b]\nname=inner\n").unwrap();
    let names: Vec<_> = set.jobs.iter().map(|j| j.name.as_str()).collect();
    // A name= inside the section wins over the section header, as in fio.
    assert_eq!(names, ["a", "inner"]);
    assert_eq!(set.global_options, opts(&[("name", "g")]));
}

#[test]
fn aliases_are_canonicalised() {
    let set = file(
        "[a]\nreadwrite=randwrite\nblocksize=8k\ntimeout=5\nfileoffset=1m\nblocksize_range=4k-16k\nwait_for_previous\n",
    )
    .unwrap();
    let j = &set.jobs[0];
    assert_eq!(j.rw, RwMode::RandWrite);
    assert_eq!(j.bs, PerDir::all(8192));
    assert_eq!(j.runtime, Some(Duration::from_secs(5)));
    assert_eq!(j.offset, SizeSpec::Bytes(1 << 20));
    assert_eq!(j.bsrange, Some(PerDir::all((4096, 16384))));
    assert_eq!(
        j.job_options,
        opts(&[
            ("rw", "randwrite"),
            ("bs", "8k"),
            ("runtime", "5"),
            ("offset", "1m"),
            ("bsrange", "4k-16k"),
        ])
    );
}

#[test]
fn multiple_globals_apply_below_them() {
    let set =
        file("[global]\nbs=8k\n[a]\n[global]\nbs=16k\niodepth=4\n[b]\n[c]\niodepth=2\n").unwrap();
    let got: Vec<_> = set
        .jobs
        .iter()
        .map(|j| (j.name.as_str(), j.bs.read, j.iodepth))
        .collect();
    assert_eq!(got, [("a", 8192, 1), ("b", 16384, 4), ("c", 16384, 2)]);
    assert_eq!(
        set.global_options,
        opts(&[("bs", "8k"), ("bs", "16k"), ("iodepth", "4")])
    );
}

#[test]
fn comments_and_blanks() {
    let set = file("; top\n# top\n[a] ; comment\n  bs = 8k ; inline\nsize=1m#x\n\n  ; indented comment\nrw=write;x\n").unwrap();
    let j = &set.jobs[0];
    assert_eq!(
        (j.name.as_str(), j.bs.read, j.rw),
        ("a", 8192, RwMode::Write)
    );
    assert_eq!(j.size, Some(SizeSpec::Bytes(1 << 20)));
    // Values are echoed verbatim: fio keeps the blank after `=`.
    assert_eq!(j.job_options[0], ("bs".to_string(), " 8k".to_string()));
    // ...which makes string options fail, as in fio.
    assert!(file("[a]\nrw = read\n").is_err());
}

#[test]
fn kb_base_is_parsed_first() {
    // kb_base has priority 1, so it applies to the section's sizes even when
    // written after them.
    let set = file("[a]\nbs=1k\nkb_base=1000\n").unwrap();
    assert_eq!(set.jobs[0].bs.read, 1000);
    assert_eq!(set.jobs[0].kb_base, 1000);
    assert_eq!(set.jobs[0].job_options[0].0, "kb_base");
    // Inherited from the globals too.
    let set = file("[global]\nkb_base=1000\n[a]\nsize=1MiB\n").unwrap();
    assert_eq!(set.jobs[0].size, Some(SizeSpec::Bytes(1 << 20)));
}

#[test]
fn environment_and_keywords() {
    let env = |k: &str| (k == "BS").then(|| "16k".to_string());
    let set = parse_files_with(
        &[(
            "t.fio".into(),
            "[a]\nbs=${BS}\nsize=${NOPE}1m\nnumjobs=$ncpus\niodepth=$pagesize/512\n".into(),
        )],
        &env,
        &MemFs::default(),
    )
    .unwrap();
    let j = &set.jobs[0];
    assert_eq!(j.bs.read, 16384);
    assert_eq!(j.size, Some(SizeSpec::Bytes(1 << 20)));
    assert_eq!(u64::from(j.numjobs), subst::Keywords::system().ncpus);
    assert_eq!(j.iodepth, 8);
    assert_eq!(j.job_options[0], ("bs".to_string(), "16k".to_string()));
    assert_eq!(j.job_options[3], ("iodepth".to_string(), "8".to_string()));
    // An unset variable leaves an empty value: an error that names it.
    let e = file("[a]\nbs=${FIO_BS}\n").unwrap_err();
    assert_eq!(
        (e.line, e.option.as_deref(), e.value.as_deref()),
        (2, Some("bs"), Some("${FIO_BS}"))
    );
}

#[test]
fn flags_and_bools() {
    let e = file("[a]\ndirect\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "t.fio:2: option `direct`: Option direct requires an argument"
    );
    let set = file("[a]\ntime_based\nruntime=1\ngroup_reporting=1\nnorandommap=0\n").unwrap();
    let j = &set.jobs[0];
    assert!(j.time_based && j.group_reporting && !j.norandommap);
    assert_eq!(
        j.job_options,
        opts(&[
            ("runtime", "1"),
            ("group_reporting", "1"),
            ("norandommap", "0")
        ])
    );
}

#[test]
fn fixups() {
    // time_based without runtime: fio warns and drops time_based.
    assert!(!file("[a]\ntime_based\n").unwrap().jobs[0].time_based);
    // thinktime_spin is capped at thinktime.
    let j = &file("[a]\nthinktime=10\nthinktime_spin=50\n").unwrap().jobs[0];
    assert_eq!(j.thinktime_spin, Duration::from_us(10));
    // randseed makes the run deterministic from that seed.
    let j = &file("[a]\nrandrepeat=0\nrandseed=42\n").unwrap().jobs[0];
    assert_eq!((j.randrepeat, j.randseed), (true, 42));
    assert!(!file("[a]\nrandrepeat=0\n").unwrap().jobs[0].randrepeat);
    // bsrange for some directions only: the others use bs.
    let j = &file("[a]\nbs=2k\nbsrange=1k-8k,\n").unwrap().jobs[0];
    assert_eq!(
        j.bsrange,
        Some(PerDir {
            read: (1024, 8192),
            write: (2048, 2048),
            trim: (2048, 2048)
        })
    );
    let e = file("[a]\nrate=1m\nrate_iops=10\n").unwrap_err();
    assert_eq!(
        (e.line, e.message.as_str()),
        (1, "job `a`: rate and rate_iops are mutually exclusive")
    );
    let e = file("[a]\nbs=8k\nsize=4k\n").unwrap_err();
    assert!(e.message.contains("size too small"), "{e}");
}

#[test]
fn groups_and_files() {
    let set = file("[a]\n[b]\n[c]\nstonewall\n[d]\n[e]\nnew_group\n").unwrap();
    let groups: Vec<_> = set.jobs.iter().map(|j| j.group_id).collect();
    assert_eq!(groups, [0, 0, 1, 1, 2]);
    // stonewall in [global] puts every job in its own group; the first job
    // has no previous job to wall off.
    let set = file("[global]\nstonewall\n[a]\n[b]\n").unwrap();
    assert_eq!(
        set.jobs.iter().map(|j| j.group_id).collect::<Vec<_>>(),
        [0, 1]
    );

    let files = [
        (
            "one.fio".to_string(),
            "[global]\nbs=8k\n[a]\n[b]\n".to_string(),
        ),
        (
            "two.fio".to_string(),
            "[c]\n[global]\niodepth=2\n[d]\n".to_string(),
        ),
    ];
    let set = parse_files_with(&files, &no_env, &MemFs::default()).unwrap();
    let got: Vec<_> = set
        .jobs
        .iter()
        .map(|j| {
            (
                j.name.as_str(),
                j.group_id,
                j.bs.read,
                j.origin.file.as_str(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("a", 0, 8192, "one.fio"),
            ("b", 0, 8192, "one.fio"),
            ("c", 1, 4096, "two.fio"),
            ("d", 1, 4096, "two.fio")
        ],
        "globals do not carry over to the next file; each file is a group"
    );
    assert_eq!(set.global_options, opts(&[("iodepth", "2")]));
}

#[test]
fn empty_sections_and_no_jobs() {
    // fio accepts a job section without options.
    let set = file("[a]\n").unwrap();
    assert_eq!(set.jobs[0], {
        let mut j = JobSpec::new("a");
        j.origin = Origin {
            file: "t.fio".into(),
            line: 1,
        };
        j
    });
    assert_eq!(
        file("[global]\nbs=4k\n").unwrap_err().message,
        "No job(s) defined"
    );
    assert_eq!(file("").unwrap_err().message, "No job(s) defined");
}

#[test]
fn unsupported_and_unknown() {
    let e = file("[a]\nbs=4k\nverify_state_save=1\n").unwrap_err();
    assert_eq!(
        (e.line, e.option.as_deref()),
        (3, Some("verify_state_save"))
    );
    assert!(
        e.message
            .starts_with("unsupported option `verify_state_save`"),
        "{e}"
    );
    let e = file("[a]\nbogus=1\n").unwrap_err();
    assert!(e.message.starts_with("unknown option `bogus`"), "{e}");
    let e = file("[a]\nioengine=rbd\n").unwrap_err();
    assert!(e.message.contains("unsupported ioengine `rbd`"), "{e}");
    let e = file("[a]\nreadfua=1\n").unwrap_err();
    assert!(e.message.starts_with("unsupported option `readfua`"), "{e}");
    let e = file("[a]\nhipri\n").unwrap_err();
    assert_eq!((e.line, e.option.as_deref()), (2, Some("hipri")));
    assert!(e.message.contains("option of ioengine=io_uring"), "{e}");
    let e = file("[a]\niodepth=0\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "t.fio:2: option `iodepth`: value `0`: min value out of range: 0 (1 min)"
    );
    let e = file("[a]\nsize=4x\n").unwrap_err();
    assert_eq!(
        (e.line, e.option.as_deref(), e.value.as_deref()),
        (2, Some("size"), Some("4x"))
    );
    let e = file("[a]\nbs=(4096*2)\n").unwrap_err();
    assert!(e.message.contains("arithmetic"), "{e}");
}

#[test]
fn includes_resolve_relative_to_the_including_file() {
    let mut fs = MemFs::default();
    fs.0.insert("dir/common.fio".into(), "bs=64k\nrw=write\n".into());
    let set = parse_files_with(
        &[(
            "dir/j.fio".into(),
            "[a]\ninclude common.fio\niodepth=3\n".into(),
        )],
        &no_env,
        &fs,
    )
    .unwrap();
    let j = &set.jobs[0];
    assert_eq!((j.bs.read, j.rw, j.iodepth), (65536, RwMode::Write, 3));
    let e = parse_files_with(
        &[("dir/j.fio".into(), "[a]\nbs=4k\ninclude nope.fio\n".into())],
        &no_env,
        &fs,
    )
    .unwrap_err();
    assert_eq!((e.file.as_str(), e.line), ("dir/j.fio", 3));
    let mut fs = MemFs::default();
    fs.0.insert("dir/bad.fio".into(), "\nbs=1q\n".into());
    let e = parse_files_with(
        &[("dir/j.fio".into(), "[a]\ninclude bad.fio\n".into())],
        &no_env,
        &fs,
    )
    .unwrap_err();
    assert_eq!((e.file.as_str(), e.line), ("dir/bad.fio", 2));
}

#[test]
fn command_line_structure() {
    let p = cli(&[
        "--bs=8k",
        "--backend=sim",
        "--name=a",
        "--iodepth",
        "4",
        "--seed",
        "7",
        "--name=global",
        "--rw=write",
        "--dry-run",
        "-name=b",
        "--output-format=json+,normal,json+",
    ])
    .unwrap();
    let got: Vec<_> = p
        .jobs
        .jobs
        .iter()
        .map(|j| (j.name.as_str(), j.bs.read, j.iodepth, j.rw))
        .collect();
    assert_eq!(
        got,
        [("a", 8192, 4, RwMode::Read), ("b", 8192, 1, RwMode::Write)]
    );
    assert_eq!(
        p.other,
        opts(&[("backend", "sim"), ("seed", "7"), ("dry-run", "")])
    );
    assert_eq!(
        p.output_format,
        [OutputFormat::JsonPlus, OutputFormat::Normal]
    );
    assert_eq!(
        p.jobs.global_options,
        opts(&[("bs", "8k"), ("name", "global"), ("rw", "write")])
    );
    assert_eq!(
        p.jobs.jobs[0].job_options,
        opts(&[("name", "a"), ("iodepth", "4")])
    );
    assert_eq!(
        cli(&["--name=x"]).unwrap().output_format,
        [OutputFormat::Normal]
    );
}

#[test]
fn command_line_errors() {
    let err = |a: &[&str]| cli(a).unwrap_err();
    let e = err(&["--name=x", "--direct"]);
    assert_eq!(
        e.to_string(),
        "<command line>: option `direct`: option direct requires an argument"
    );
    assert_eq!(
        err(&["--name=x", "--direct="]).message,
        "option direct requires an argument"
    );
    assert!(err(&["--name=x", "--frobnicate=1"])
        .message
        .starts_with("unknown option"));
    assert!(err(&["--name=x", "--readfua"])
        .message
        .starts_with("unsupported option `readfua`"));
    assert!(err(&["--name=x", "--ioengine=psync", "--hipri"])
        .message
        .contains("option of ioengine=io_uring"));
    assert!(err(&["--name=x", "--minimal"])
        .message
        .contains("unsupported fio command-line option"));
    assert!(err(&["--name=x", "--output-format=csv"])
        .message
        .contains("unsupported output format"));
    assert!(err(&["--name=x", "--output"])
        .message
        .contains("requires an argument"));
    assert!(err(&["--name=x", "--backend"])
        .message
        .contains("requires an argument"));
    assert_eq!(err(&["--bs=4k"]).message, "No job(s) defined");
    assert!(err(&["--name=x", "missing.fio"])
        .message
        .contains("unable to open 'missing.fio' job file"));
    assert!(err(&["-"]).message.contains("standard input"));
    // A flag's value needs `=`: `--time_based 1` makes `1` a job file.
    assert!(err(&["--name=x", "--time_based", "1"])
        .message
        .contains("'1'"));
}

#[test]
fn command_line_with_job_files() {
    let mut fs = MemFs::default();
    fs.0.insert("a.fio".into(), "[fa]\n".into());
    fs.0.insert("b.fio".into(), "[fb]\n".into());
    let args: Vec<String> = ["--iodepth=8", "--name=c", "a.fio", "--", "b.fio"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let p = cli::parse_args(&args, &[], &no_env, &fs).unwrap();
    let got: Vec<_> = p
        .jobs
        .jobs
        .iter()
        .map(|j| (j.name.as_str(), j.iodepth, j.group_id))
        .collect();
    // CLI globals carry into the first file only; later files are walled off.
    assert_eq!(got, [("c", 8, 0), ("fa", 8, 0), ("fb", 1, 1)]);
    assert_eq!(p.job_files, ["a.fio", "b.fio"]);
}

#[test]
fn showcmd_like_fio() {
    let text = "; fio-rand-RW.job for fiotest\n\n[global]\nname=fio-rand-RW\nfilename=fio-rand-RW\nrw=randrw\nrwmixread=60\nrwmixwrite=40\nbs=4K\ndirect=0\nnumjobs=4\ntime_based\nruntime=900\n\n[file1]\nsize=10G\nioengine=libaio\niodepth=16";
    let fs = MemFs::default();
    let mut b = job::Builder::new(&no_env, &fs);
    b.add_file("t.fio", text, false).unwrap();
    assert_eq!(
        b.showcmd.concat(),
        "fio --name=fio-rand-RW --rw=randrw --rwmixread=60 --rwmixwrite=40 --bs=4K --direct=0 --numjobs=4 --time_based --runtime=900 --filename=fio-rand-RW --name=file1 --size=10G --ioengine=libaio --iodepth=16 \n"
    );
    let set =
        parse_files_with(&[("t.fio".into(), text.into())], &no_env, &MemFs::default()).unwrap();
    assert_eq!(set.jobs[0].rwmixread, 60);
    assert_eq!(set.jobs[0].numjobs, 4);
}

/// Origin, the verbatim option list and where options were given (the
/// data options', `sync`'s and `invalidate`'s place, the place a refusal
/// names) are the only things a command line cannot carry over.
pub(crate) fn comparable(jobs: &[JobSpec]) -> Vec<JobSpec> {
    let unplaced = |at: &Option<blkqos_workload::spec_verify::DataOption>| {
        at.clone()
            .map(|a| blkqos_workload::spec_verify::DataOption {
                file: String::new(),
                line: 0,
                ..a
            })
    };
    jobs.iter()
        .map(|j| {
            let mut j = JobSpec {
                origin: Origin::default(),
                job_options: Vec::new(),
                data_options: Vec::new(),
                ..j.clone()
            };
            j.engine.sync_at = unplaced(&j.engine.sync_at);
            j.engine.invalidate_at = unplaced(&j.engine.invalidate_at);
            j.engine.registration_at = j.engine.registration_at.as_ref().map(|_| String::new());
            j.engine.sim_refusal = j.engine.sim_refusal.as_ref().map(|_| String::new());
            j.engine.real_refusal = j.engine.real_refusal.as_ref().map(|_| String::new());
            j
        })
        .collect()
}

#[test]
fn jobs_round_trip_through_fio_args() {
    let texts = [
        JOB_A,
        "[global]\nkb_base=1000\nbs=4k,8k\nbsrange=1k-2k,\nsize=20%\noffset=5%\n[a]\nrate=1m,,2m\nstonewall\nignore_error=,EIO:7,ENOSPC\npercentile_list=99.99:1.5:50\nrandseed=99\n[b]\nrandrepeat=0\nrate_process=poisson\nthinktime=3ms\nthinktime_spin=1ms\nthinktime_blocks=4\nthinktime_blocks_type=issue\nramp_time=2\nruntime=1500ms\ntime_based\ndescription=two words\ncgroup=x/y\nunified_rw_reporting=both\nlat_percentiles=1\nslat_percentiles=1\nclat_percentiles=0\nbwavgtime=250\niopsavgtime=125\nfsync=4\nend_fsync=1\n[c]\nnew_group\nrate_iops=5,6\nrw=trim\nfilename=a:b\n",
        "[w]\nsize=1m\nexitall\nexit_what=stonewall\n[r]\nsize=1m\nwait_for=w\nexitall_on_error\nzonemode=strided\nzonesize=64k\nzonerange=128k\nzoneskip=2z\n[s]\nsize=1m\nzonemode=strided\nzonesize=64k\nzoneskip=1m\nexit_what=all\n",
        "[a]\nsize=1m\nss=bw_slope:1.5%\nss_dur=10\nss_ramp=500ms\n[b]\nnew_group\nsize=1m\nss=iops:250\nss_dur=3s\n[c]\nnew_group\nsize=1m\nss=bw:10m\nss_dur=2\n",
    ];
    for text in texts {
        let set = file(text).unwrap();
        let args = to_fio_args(&set.jobs);
        let back = cli::parse_args(&args, &[], &no_env, &MemFs::default()).unwrap();
        assert_eq!(
            comparable(&back.jobs.jobs),
            comparable(&set.jobs),
            "{args:?}"
        );
    }
}

#[test]
fn status_interval_is_a_time_in_seconds_by_default() {
    let ms = |v: &str| {
        cli(&["--name=x", &format!("--status-interval={v}")]).map(|p| p.status_interval_ms)
    };
    assert_eq!(ms("2").unwrap(), Some(2000));
    assert_eq!(ms("500ms").unwrap(), Some(500));
    assert_eq!(ms("1m").unwrap(), Some(60_000));
    assert_eq!(cli(&["--name=x"]).unwrap().status_interval_ms, None);
    let e = ms("500us").unwrap_err().to_string();
    assert!(
        e.contains("`status-interval`") && e.contains("too small"),
        "{e}"
    );
    let e = ms("abc").unwrap_err().to_string();
    assert!(
        e.starts_with("<command line>") && e.contains("`abc`"),
        "{e}"
    );
    // `--status-interval 1` takes the next argument, as getopt does
    let p = cli(&["--status-interval", "1", "--name=x"]).unwrap();
    assert_eq!(p.status_interval_ms, Some(1000));
}

#[test]
fn wait_for_needs_an_earlier_job() {
    let ok = file("[a]\nsize=1m\n[b]\nwait_for=a\nsize=1m\n").unwrap();
    assert_eq!(ok.jobs[1].control.wait_for.as_deref(), Some("a"));
    let later = file("[b]\nwait_for=a\nsize=1m\n[a]\nsize=1m\n").unwrap_err();
    let msg = later.to_string();
    assert!(
        msg.contains("t.fio:1") && msg.contains("wait_for") && msg.contains("waitee job a unknown"),
        "{msg}"
    );
    let own = file("[a]\nwait_for=a\nsize=1m\n").unwrap_err().to_string();
    assert!(own.contains("a job cannot wait for itself"), "{own}");
}

#[test]
fn bare_log_options_take_the_job_name() {
    // fio 3.33 writes myjob_bw.1.log, myjob_clat.1.log... for a bare option
    let set = file(
        "[myjob]\nsize=1m\nwrite_bw_log\nwrite_lat_log\n[b]\nname=n2\nsize=1m\nwrite_iops_log=x\n",
    )
    .unwrap();
    assert_eq!(set.jobs[0].logs.bw.as_deref(), Some("myjob"));
    assert_eq!(set.jobs[0].logs.lat.as_deref(), Some("myjob"));
    assert_eq!(set.jobs[0].logs.iops, None);
    assert_eq!(set.jobs[1].logs.iops.as_deref(), Some("x"));
}

/// Option lines that make each option change a job, where a value of the
/// option's type alone does not: a value from the option's set, the
/// options it needs beside it, or a second job (`[b]` is the one judged).
const OPTION_EXAMPLES: &[(&str, &str)] = &[
    (
        "cpus_allowed_policy",
        "cpus_allowed=0-1\ncpus_allowed_policy=split",
    ),
    ("numa_mem_policy", "numa_mem_policy=local"),
    ("rw", "rw=randrw"),
    ("ioengine", "ioengine=libaio"),
    ("time_based", "runtime=2\ntime_based"),
    ("thinktime_spin", "thinktime=10ms\nthinktime_spin=3ms"),
    ("thinktime_blocks_type", "thinktime_blocks_type=issue"),
    ("kb_base", "kb_base=1000"),
    ("new_group", "[b]\nsize=1m\nnew_group"),
    ("random_distribution", "random_distribution=zipf:1.2"),
    (
        "verify_interval",
        "rw=write\nverify=md5\nverify_interval=512",
    ),
    ("verify_offset", "rw=write\nverify=md5\nverify_offset=48"),
    (
        "dedupe_mode",
        "dedupe_percentage=50\ndedupe_mode=working_set",
    ),
    ("wait_for", "[b]\nsize=1m\nwait_for=a"),
    ("steadystate", "steadystate=iops:10%\nss_dur=10"),
    ("zonesize", "zonemode=strided\nzonesize=64k\nzonerange=128k"),
    (
        "zone_reset_threshold",
        "zonemode=zbd\nzone_reset_threshold=0.5",
    ),
    (
        "zone_reset_frequency",
        "zonemode=zbd\nzone_reset_frequency=0.5",
    ),
    ("io_submit_mode", "ioengine=libaio\nio_submit_mode=offload"),
    ("random_generator", "random_generator=lfsr"),
    (
        "latency_percentile",
        "latency_target=10ms\nlatency_percentile=50",
    ),
    (
        "arguments",
        "runtime=1\ntime_based\nioengine=exec\nprogram=/bin/true\narguments=x",
    ),
    (
        "program",
        "runtime=1\ntime_based\nioengine=exec\nprogram=/bin/true",
    ),
    (
        "std_redirect",
        "runtime=1\ntime_based\nioengine=exec\nprogram=/bin/true\nstd_redirect=0",
    ),
    (
        "grace_time",
        "runtime=1\ntime_based\nioengine=exec\nprogram=/bin/true\ngrace_time=3",
    ),
    (
        "exit_on_io_done",
        "runtime=1\ntime_based\nioengine=cpuio\ncpuload=50\nexit_on_io_done=1",
    ),
    ("cmd_type", "ioengine=io_uring_cmd\ncmd_type=nvme"),
    ("cmdprio", "ioengine=io_uring\ncmdprio=3"),
    (
        "cmdprio_bssplit",
        "ioengine=io_uring\ncmdprio_bssplit=4k/50",
    ),
    (
        "cmdprio_class",
        "ioengine=io_uring\ncmdprio_class=1\ncmdprio_percentage=10",
    ),
    (
        "cmdprio_percentage",
        "ioengine=io_uring\ncmdprio_percentage=10",
    ),
    (
        "cpuchunks",
        "runtime=1\ntime_based\nioengine=cpuio\ncpuload=50\ncpuchunks=100",
    ),
    (
        "cpuload",
        "runtime=1\ntime_based\nioengine=cpuio\ncpuload=50",
    ),
    (
        "cpumode",
        "runtime=1\ntime_based\nioengine=cpuio\ncpuload=50\ncpumode=qsort",
    ),
    ("donorname", "ioengine=e4defrag\ndonorname=x"),
    ("inplace", "ioengine=e4defrag\ndonorname=x\ninplace=1"),
    ("fixedbufs", "ioengine=io_uring\nfixedbufs"),
    ("hipri", "ioengine=io_uring\nhipri"),
    ("nonvectored", "ioengine=io_uring\nnonvectored=1"),
    ("registerfiles", "ioengine=io_uring\nregisterfiles"),
    ("sqthread_poll", "ioengine=io_uring\nsqthread_poll"),
    (
        "sqthread_poll_cpu",
        "ioengine=io_uring\nsqthread_poll\nsqthread_poll_cpu=1",
    ),
    ("sg_write_mode", "ioengine=sg\nsg_write_mode=verify"),
    ("stat_type", "ioengine=filestat\nstat_type=lstat"),
    ("rate_process", "rate=1m\nrate_process=poisson"),
    (
        "file_service_type",
        "nrfiles=2\nfile_service_type=roundrobin",
    ),
    ("exit_what", "exitall\nexit_what=stonewall"),
    ("zonemode", "zonemode=strided\nzonesize=64k"),
    ("invalidate", "ioengine=libpmem\ninvalidate=0"),
    ("log_avg_msec", "write_bw_log=x\nlog_avg_msec=3"),
    ("log_max_value", "write_bw_log=x\nlog_max_value=1"),
    ("log_offset", "write_bw_log=x\nlog_offset=1"),
    ("log_hist_msec", "write_hist_log=x\nlog_hist_msec=3"),
    (
        "log_hist_coarseness",
        "write_hist_log=x\nlog_hist_coarseness=3",
    ),
    (
        "steadystate_ramp_time",
        "steadystate=iops:10%\nss_dur=10\nsteadystate_ramp_time=2s",
    ),
    ("latency_window", "latency_target=10ms\nlatency_window=2s"),
    ("latency_run", "latency_target=10ms\nlatency_run=1"),
    ("fallocate", "fallocate=none"),
    ("sync", "ioengine=libpmem\nsync=1"),
];

/// Options blkqos accepts only at fio's default: (option, the options it
/// needs beside it, the default given, a value it refuses). Nothing for a
/// command line to carry.
const ONLY_AT_DEFAULT: &[(&str, &str, &str, &str)] = &[
    (
        "per_job_logs",
        "write_bw_log=x",
        "per_job_logs=1",
        "per_job_logs=0",
    ),
    ("unlink", "", "unlink=0", "unlink=1"),
    ("error_dump", "", "error_dump=0", "error_dump=1"),
    (
        "force_async",
        "ioengine=io_uring",
        "force_async=0",
        "force_async=4",
    ),
    ("nowait", "ioengine=io_uring", "nowait=0", "nowait=1"),
    ("uncached", "ioengine=io_uring", "uncached=0", "uncached=1"),
];

/// Options whose only effect is a note on stderr (why they change
/// nothing here), as fio accepts them.
const NOTE_ONLY: &[(&str, &str)] = &[
    ("create_serialize", "create_serialize=0"),
    ("threads", "threads=3"),
];

/// Options in blkqos's table that it refuses in every form, with why.
const REFUSED: &[(&str, &str)] = &[("verify_only", "rw=write\nverify=md5\nverify_only")];

/// The lines that set option `d` to a value other than its default: the
/// example, or each plain value of its type.
fn option_lines(d: &super::options::OptDef) -> Vec<String> {
    use super::options::Kind;
    if let Some((_, ex)) = OPTION_EXAMPLES.iter().find(|(n, _)| *n == d.name) {
        return vec![ex.to_string()];
    }
    let values: &[&str] = match d.kind {
        Kind::Bool => &["1", "0"],
        Kind::StrSet => &["", "1"],
        Kind::Int => &["3", "1", "2", "0"],
        Kind::Ull | Kind::StrVal => &["8k", "3", "1", "0"],
        Kind::Time => &["2s"],
        Kind::Range => &["1k-4k"],
        Kind::FloatList => &["50:99"],
        Kind::Str | Kind::StrStore => &["x", "1", "0"],
    };
    values
        .iter()
        .map(|v| match v {
            &"" => d.name.to_string(),
            v => format!("{}={v}", d.name),
        })
        .collect()
}

/// The job text of `lines` after `[a]\nsize=1m`; a `[b]` in them is a
/// second job. With the lines or without them.
fn with_and_without(lines: &str) -> (String, String) {
    let base = "[a]\nsize=1m\n";
    let without = if lines.contains("[b]") {
        format!("{base}[b]\nsize=1m\n")
    } else {
        base.to_string()
    };
    (format!("{base}{lines}\n"), without)
}

/// Every option blkqos accepts changes a job in a way `to_fio_args`
/// carries: set to a value other than its default (with the options it
/// needs beside it), the job rendered as fio's command line and parsed
/// back is the same job. An option accepted only at its default, or
/// refused in every form, is listed with the value that shows it.
#[test]
fn every_option_round_trips_through_fio_args() {
    let mut failures = Vec::new();
    let every = super::registry::core_defs()
        .chain(super::apply_ext::PROFILE_DEFS)
        .chain(super::engine_opts::DEFS);
    for d in every {
        if let Some((_, needs, default, other)) =
            ONLY_AT_DEFAULT.iter().find(|(n, ..)| *n == d.name)
        {
            let job = |line: &str| file(&with_and_without(&format!("{needs}\n{line}")).0);
            let same =
                comparable(&job(default).unwrap().jobs) == comparable(&job("").unwrap().jobs);
            if !same || job(other).is_ok() {
                failures.push(format!(
                    "{}: {default} changes the job, or {other} is accepted",
                    d.name
                ));
            }
            continue;
        }
        if let Some((_, line)) = NOTE_ONLY.iter().find(|(n, _)| *n == d.name) {
            let (with, without) = with_and_without(line);
            let mut with = comparable(&file(&with).unwrap().jobs);
            let without = comparable(&file(&without).unwrap().jobs);
            let noted = with[0].notes.len() == without[0].notes.len() + 1;
            with[0].notes = without[0].notes.clone();
            if !noted || with != without {
                failures.push(format!("{}: {line} does more than add a note", d.name));
            }
            continue;
        }
        if let Some((_, lines)) = REFUSED.iter().find(|(n, _)| *n == d.name) {
            if file(&with_and_without(lines).0).is_ok() {
                failures.push(format!("{}: accepted in {lines:?}", d.name));
            }
            continue;
        }
        let mut changed = None;
        let mut why = Vec::new();
        for lines in option_lines(d) {
            let (with, without) = with_and_without(&lines);
            let base = comparable(&file(&without).unwrap().jobs);
            match file(&with) {
                Ok(set) if comparable(&set.jobs) != base => {
                    changed = Some((lines, set));
                    break;
                }
                Ok(_) => why.push(format!("{lines:?}: no change")),
                Err(e) => why.push(format!("{lines:?}: {e}")),
            }
        }
        let Some((lines, set)) = changed else {
            failures.push(format!("{}: no example changes a job: {why:?}", d.name));
            continue;
        };
        let args = to_fio_args(&set.jobs);
        match cli::parse_args(&args, &[], &no_env, &MemFs::default()) {
            Ok(back) if comparable(&back.jobs.jobs) == comparable(&set.jobs) => {}
            Ok(_) => failures.push(format!("{}: {lines:?} is lost in {args:?}", d.name)),
            Err(e) => failures.push(format!("{}: {lines:?}: {args:?} is refused: {e}", d.name)),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
