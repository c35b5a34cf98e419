//! Bad input exits with status 2 and a message naming the file, the line
//! and the offending token; never a panic.

use crate::common;

use common::*;
use std::path::Path;

/// Run `blkqos run ARGS` in `dir`, expect exit status 2, return stderr.
#[track_caller]
fn bad(dir: &Path, args: &[&str]) -> String {
    let mut a = vec!["run"];
    a.extend_from_slice(args);
    let r = blkqos(&a, Some(dir));
    assert_no_panic(&r);
    assert_eq!(
        r.code,
        Some(2),
        "`blkqos run {}`: want exit status 2 (bad input)\nstderr:\n{}",
        args.join(" "),
        r.stderr
    );
    assert!(
        r.stderr.starts_with("blkqos: "),
        "error not reported as `blkqos: ...`:\n{}",
        r.stderr
    );
    assert!(r.stdout.is_empty(), "output despite bad input");
    r.stderr
}

#[track_caller]
fn assert_mentions(stderr: &str, needles: &[&str]) {
    for n in needles {
        assert!(stderr.contains(n), "error message lacks `{n}`:\n{stderr}");
    }
}

/// 1-based line of the first line of `text` containing `needle`.
fn line_of(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("`{needle}` not in test input"))
        + 1
}

/// A job file with `bad` as its last line: the error names file:line and the
/// token.
#[track_caller]
fn bad_job_line(bad_line: &str, tokens: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let text = format!("[global]\nioengine=libaio\n\n[j]\nrw=randread\nsize=1m\n{bad_line}\n");
    write_file(dir.path(), "job.fio", &text);
    let err = bad(dir.path(), &["job.fio", "--output-format=json"]);
    let loc = format!("job.fio:{}:", line_of(&text, bad_line));
    assert_mentions(&err, &[&loc]);
    assert_mentions(&err, tokens);
}

#[test]
fn unknown_option_in_job_file() {
    bad_job_line("foo=1", &["foo"]);
}

#[test]
fn malformed_size_in_job_file() {
    bad_job_line("size=4x", &["size", "4x"]);
}

#[test]
fn bogus_rw_in_job_file() {
    bad_job_line("rw=bogus", &["rw", "bogus"]);
}

#[test]
fn bad_option_in_global_section() {
    let dir = tempfile::tempdir().unwrap();
    let text = "[global]\nbs=4q\n[j]\nrw=read\nsize=1m\n";
    write_file(dir.path(), "g.fio", text);
    let err = bad(dir.path(), &["g.fio"]);
    assert_mentions(&err, &["g.fio:2:", "4q"]);
}

#[test]
fn unknown_option_on_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let err = bad(
        dir.path(),
        &["--name=j", "--rw=read", "--size=1m", "--foo=1"],
    );
    assert_mentions(&err, &["<command line>", "foo"]);
}

#[test]
fn missing_job_file() {
    let dir = tempfile::tempdir().unwrap();
    let err = bad(dir.path(), &["no-such-job.fio"]);
    assert_mentions(&err, &["no-such-job.fio", "No such file"]);
}

#[test]
fn missing_scenario_file() {
    let dir = tempfile::tempdir().unwrap();
    let err = bad(dir.path(), &["no-such-scenario.toml"]);
    assert_mentions(&err, &["no-such-scenario.toml", "No such file"]);
}

// ---- scenario files ---------------------------------------------------

const JOB_ARGS: &str =
    "--name=j --rw=randread --bs=4k --size=1m --ioengine=libaio --runtime=1 --time_based";

/// A scenario with one io.max write of `value` to `file`; `device` and
/// `controllers` are extra lines of those tables.
fn scenario(device: &str, controllers: &str, file: &str, value: &str, fio: &str) -> String {
    format!(
        "seed = 1\n\
         [device]\n\
         devid = \"253:1\"\n\
         {device}\n\
         [controllers]\n\
         {controllers}\n\
         [[write]]\n\
         file = \"{file}\"\n\
         value = \"{value}\"\n\
         [[fio]]\n\
         cgroup = \"/cg1\"\n\
         {fio}\n"
    )
}

fn default_fio() -> String {
    format!("args = \"{JOB_ARGS}\"")
}

/// Write the scenario, run it, expect status 2 and `name:line` of the line
/// containing `at`, plus `tokens`.
#[track_caller]
fn bad_scenario(text: &str, at: &str, tokens: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    write_file(dir.path(), "s.toml", text);
    let err = bad(dir.path(), &["s.toml", "--output-format=json"]);
    let loc = format!("s.toml:{}:", line_of(text, at));
    assert_mentions(&err, &[&loc]);
    assert_mentions(&err, tokens);
    err
}

#[test]
fn good_scenario_runs() {
    // the baseline the bad scenarios below are variations of
    let dir = tempfile::tempdir().unwrap();
    let text = scenario(
        "",
        "",
        "/sys/fs/cgroup/cg1/io.max",
        "253:1 riops=100",
        &default_fio(),
    );
    write_file(dir.path(), "s.toml", &text);
    let r = blkqos(&["run", "s.toml", "--output-format=json"], Some(dir.path()));
    r.ok();
    let iops = num(&r.json(), "/jobs/0/read/iops");
    assert_within("baseline iops", iops, 100.0, 2.0);
}

#[test]
fn write_to_unknown_knob_file() {
    let text = scenario(
        "",
        "",
        "/sys/fs/cgroup/cg1/io.bogus",
        "253:1 riops=100",
        &default_fio(),
    );
    bad_scenario(&text, "io.bogus", &["io.bogus"]);
}

#[test]
fn io_max_zero_is_erange() {
    let text = scenario(
        "",
        "",
        "/sys/fs/cgroup/cg1/io.max",
        "253:1 riops=0",
        &default_fio(),
    );
    let err = bad_scenario(&text, "riops=0", &["riops=0"]);
    // the kernel answers ERANGE ("Numerical result out of range")
    let lower = err.to_lowercase();
    assert!(
        lower.contains("out of range") || lower.contains("erange"),
        "riops=0 must be reported as ERANGE:\n{err}"
    );
}

#[test]
fn io_max_non_number_is_invalid() {
    let text = scenario(
        "",
        "",
        "/sys/fs/cgroup/cg1/io.max",
        "253:1 riops=abc",
        &default_fio(),
    );
    let err = bad_scenario(&text, "riops=abc", &["riops=abc"]);
    assert!(
        err.to_lowercase().contains("invalid"),
        "riops=abc must be reported as EINVAL:\n{err}"
    );
}

#[test]
fn io_max_for_another_device() {
    let text = scenario(
        "",
        "",
        "/sys/fs/cgroup/cg1/io.max",
        "8:0 riops=100",
        &default_fio(),
    );
    bad_scenario(&text, "8:0 riops", &["8:0", "253:1"]);
}

#[test]
fn unknown_device_parameter() {
    // the only key besides devid, sorting before it
    let text = scenario(
        "bogus_param = 3",
        "",
        "/sys/fs/cgroup/cg1/io.max",
        "253:1 riops=100",
        &default_fio(),
    );
    bad_scenario(&text, "bogus_param", &["bogus_param"]);
}

/// The [device] error points at the offending key, wherever it is in the
/// table.
///
/// Fails today: `Experiment::from_scenario` (crates/experiment/src/experiment.rs)
/// reports the line of the first key of the table in sorted order, not the
/// line of the bad key (here `devid`'s line 3 instead of line 5).
#[test]
fn device_error_names_the_offending_line() {
    let text = scenario(
        "model = \"ssd\"\nread_ns = \"fast\"",
        "",
        "/sys/fs/cgroup/cg1/io.max",
        "253:1 riops=100",
        &default_fio(),
    );
    bad_scenario(&text, "read_ns", &["read_ns", "fast"]);
}

#[test]
fn bad_throttle_name() {
    let text = scenario(
        "",
        "throttle = \"nope\"",
        "/sys/fs/cgroup/cg1/io.max",
        "253:1 riops=100",
        &default_fio(),
    );
    bad_scenario(&text, "throttle", &["nope", "throttle"]);
}

#[test]
fn bad_throttle_flag_after_scenario() {
    let dir = tempfile::tempdir().unwrap();
    let text = scenario(
        "",
        "",
        "/sys/fs/cgroup/cg1/io.max",
        "253:1 riops=100",
        &default_fio(),
    );
    write_file(dir.path(), "s.toml", &text);
    let err = bad(dir.path(), &["s.toml", "--throttle=nope"]);
    assert_mentions(&err, &["nope"]);
}

#[test]
fn missing_job_file_in_scenario() {
    let text = scenario(
        "",
        "",
        "/sys/fs/cgroup/cg1/io.max",
        "253:1 riops=100",
        "job_file = \"nope.fio\"",
    );
    bad_scenario(&text, "nope.fio", &["nope.fio"]);
}

/// A job inside a scenario: `s.toml ([[fio]] #1 <part>):LINE:` with the line
/// counted in the scenario file.
#[track_caller]
fn bad_fio_part(text: &str, part: &str, at: &str, tokens: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    write_file(dir.path(), "s.toml", text);
    let err = bad(dir.path(), &["s.toml", "--output-format=json"]);
    let loc = format!("s.toml ([[fio]] #1 {part}):{}:", line_of(text, at));
    assert_mentions(&err, &[&loc]);
    assert_mentions(&err, tokens);
}

#[test]
fn bad_option_in_inline_job_names_the_scenario_line() {
    let fio = "job = \"\"\"\n[j]\nrw=randread\nsize=1m\nfoo=1\n\"\"\"";
    let text = scenario("", "", "/sys/fs/cgroup/cg1/io.max", "253:1 riops=100", fio);
    bad_fio_part(&text, "inline job", "foo=1", &["foo"]);
}

#[test]
fn bad_option_in_scenario_args() {
    let fio = format!("args = \"{JOB_ARGS} --size=4x\"");
    let text = scenario("", "", "/sys/fs/cgroup/cg1/io.max", "253:1 riops=100", &fio);
    bad_fio_part(&text, "args", "args =", &["size", "4x"]);
}

#[test]
fn bad_write_time() {
    let text = scenario(
        "",
        "",
        "/sys/fs/cgroup/cg1/io.max",
        "253:1 riops=100\"\nat = \"5 sec",
        &default_fio(),
    );
    bad_scenario(&text, "at = ", &["5 sec"]);
}

#[test]
fn unknown_scenario_key() {
    let text = format!(
        "{}bogus_key = 1\n",
        scenario(
            "",
            "",
            "/sys/fs/cgroup/cg1/io.max",
            "253:1 riops=100",
            &default_fio()
        )
    );
    bad_scenario(&text, "bogus_key", &["bogus_key"]);
}

/// A baseline scenario with `accounting` appended as an `[accounting]`
/// table.
fn with_accounting(accounting: &str) -> String {
    let base = scenario(
        "",
        "",
        "/sys/fs/cgroup/cg1/io.max",
        "253:1 riops=100",
        &default_fio(),
    );
    format!("{base}[accounting]\n{accounting}\n")
}

#[test]
fn empty_lat_hist_in_scenario() {
    let text = with_accounting("lat_hist = \"\"");
    bad_scenario(
        &text,
        "lat_hist",
        &["[accounting]", "lat_hist", "file name"],
    );
    // named by an absolute path, "" must not become the scenario's directory
    let dir = tempfile::tempdir().unwrap();
    let abs = write_file(dir.path(), "s.toml", &text);
    let err = bad(dir.path(), &[abs.to_str().expect("utf-8 path")]);
    assert_mentions(&err, &["s.toml:", "lat_hist", "file name"]);
}

#[test]
fn lat_hist_not_a_string_in_scenario() {
    let text = with_accounting("lat_hist = [\"a\", \"b\"]");
    bad_scenario(&text, "lat_hist", &["[accounting]", "lat_hist", "string"]);
}

#[test]
fn unknown_accounting_key_lists_lat_hist() {
    let text = with_accounting("lat_histogram = \"x\"");
    bad_scenario(
        &text,
        "lat_histogram",
        &["lat_histogram", "lat_hist", "request_trace"],
    );
}

#[test]
fn empty_lat_hist_flag() {
    let dir = tempfile::tempdir().unwrap();
    let err = bad(
        dir.path(),
        &["--name=j", "--rw=read", "--size=1m", "--lat-hist="],
    );
    assert_mentions(&err, &["--lat-hist", "file name"]);
    let err = bad(
        dir.path(),
        &["--name=j", "--rw=read", "--size=1m", "--request-trace="],
    );
    assert_mentions(&err, &["--request-trace", "file name"]);
    // after a scenario too
    let text = scenario(
        "",
        "",
        "/sys/fs/cgroup/cg1/io.max",
        "253:1 riops=100",
        &default_fio(),
    );
    write_file(dir.path(), "s.toml", &text);
    let err = bad(dir.path(), &["s.toml", "--lat-hist="]);
    assert_mentions(&err, &["--lat-hist", "file name"]);
}

/// Odd but well-formed values never crash the binary: each either runs or
/// is rejected as bad input.
#[test]
fn odd_values_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[&[&str]] = &[
        &["--bs=0"],
        &["--iodepth=0"],
        &["--rate_iops=0"],
        &["--size=0"],
        &["--bs=3"],
        &["--bsrange=4k-1k"],
        &["--thinktime=1ms", "--thinktime_blocks=0"],
        &["--rate=1"],
        &["--offset=2g"],
        &["--runtime=0"],
        &["--size=100%"],
        &["--percentile_list=0"],
        &["--ramp_time=1"],
        &["--rw=randrw", "--rwmixread=101"],
        &["--iodepth=100000", "--rw=randwrite"],
        &["--device=ssd,channels=0"],
        &["--device=bogus"],
        &["--device=null,mbps=-1"],
        &["--seed=-1"],
        &["--output-format=yaml"],
    ];
    for extra in cases {
        let mut args = vec![
            "run",
            "--name=j",
            "--rw=randread",
            "--size=1m",
            "--runtime=1",
            "--time_based",
            "--output-format=json",
        ];
        args.extend_from_slice(extra);
        let r = blkqos(&args, Some(dir.path()));
        assert_no_panic(&r);
        assert!(
            matches!(r.code, Some(0) | Some(2)),
            "{extra:?}: exit status {:?}\n{}",
            r.code,
            r.stderr
        );
    }
}

#[test]
fn bad_pagecache_values_name_line_key_and_value() {
    let base = "[device]\nmodel = \"ssd\"\n[pagecache]\n";
    let fio = "\n[[fio]]\nargs = \"--name=w --rw=write --bs=4k --size=1m\"\n";
    for (line, tokens) in [
        (
            "writeback = \"later\"",
            &["writeback", "later", "async"][..],
        ),
        ("dirty_ratio = 150", &["dirty_ratio", "150"][..]),
        (
            "writeback_io = \"6000\"",
            &["writeback_io", "6000", "4k"][..],
        ),
        ("memory = \"lots\"", &["memory", "lots"][..]),
        ("dirty_limit = 5", &["dirty_limit", "unknown"][..]),
    ] {
        let text = format!("{base}{line}{fio}");
        bad_scenario(&text, line, tokens);
    }
}

#[test]
fn tick_phase_beyond_a_jiffy() {
    let text = scenario(
        "",
        "tick_phase_ns = 20000000",
        "/sys/fs/cgroup/cg1/io.max",
        "253:1 riops=100",
        &default_fio(),
    );
    bad_scenario(&text, "tick_phase_ns", &["tick_phase_ns", "20000000"]);
}

#[test]
fn bad_iocost_timer_lateness() {
    for (line, tokens) in [
        (
            "iocost_timer_late_ns = \"1,2,3\"",
            &["iocost_timer_late_ns", "`1,2,3`", "3 values"][..],
        ),
        (
            "iocost_timer_late_ns = \"1,2,3,4,5,7,6\"",
            &["iocost_timer_late_ns", "decrease"][..],
        ),
        (
            "iocost_timer_late_ns = \"1,2,3,4,5,6,soon\"",
            &["iocost_timer_late_ns", "`soon`"][..],
        ),
    ] {
        let text = scenario(
            "",
            line,
            "/sys/fs/cgroup/cg1/io.max",
            "253:1 riops=100",
            &default_fio(),
        );
        bad_scenario(&text, "iocost_timer_late_ns", tokens);
    }
}

#[test]
fn unknown_kernel_profile() {
    let dir = tempfile::tempdir().unwrap();
    for (flag, tokens) in [
        ("--kernel=5.4", &["--kernel", "5.4", "6.1, 6.12, 7.2"][..]),
        (
            "--kernel=6.12,throttling_low=y",
            &["throttling_low", "6.10"][..],
        ),
        ("--kernel=6.1,hz=7", &["hz", "7"][..]),
    ] {
        let err = bad(dir.path(), &["--name=j", "--rw=read", "--size=1m", flag]);
        assert_mentions(&err, tokens);
    }
}

/// Values fio or the kernel refuses, or that fio silently misreads, are
/// refused with the key and value named (each was accepted with exit 0).
#[test]
fn silently_misread_values_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, &[&str])] = &[
        // fio splits at `-`: bs=-4k would be "read unchanged, write 4k"
        ("--bs=-4k", &["bs", "-4k", "negative"]),
        ("--rate=-1", &["rate", "-1", "negative"]),
        ("--rate_iops=100,-5", &["rate_iops", "negative"]),
        // an unknown time unit: fio reads it as µs
        ("--runtime=1x", &["runtime", "1x", "unknown time unit `x`"]),
        ("--runtime=1sec", &["runtime", "unknown time unit `sec`"]),
        // O_DIRECT on 1000-byte blocks: the kernel's EINVAL
        ("--bs=1000", &["bs=1000", "direct=1", "512", "EINVAL"]),
        ("--offset=1000", &["offset=1000", "direct=1"]),
        // past the end of the device (fio: "you need to specify valid offset=")
        ("--filename=/dev/nullb0", &[]),
    ];
    for (arg, tokens) in cases {
        let mut args = vec!["--name=x", "--rw=read", "--size=4m", "--direct=1", arg];
        if *arg == "--filename=/dev/nullb0" {
            args.push("--offset=300g");
            let err = bad(dir.path(), &args);
            assert_mentions(&err, &["offset=322122547200", "past the end", "nullb0"]);
            continue;
        }
        let err = bad(dir.path(), &args);
        assert_mentions(&err, &["<command line>"]);
        assert_mentions(&err, tokens);
    }
    // the same in a job file names file and line
    bad_job_line("bs=-4k", &["bs", "negative"]);
    bad_job_line("runtime=1x", &["runtime", "1x"]);
}

#[test]
fn hdd_seek_min_above_seek_max() {
    let dir = tempfile::tempdir().unwrap();
    let err = bad(
        dir.path(),
        &[
            "--name=x",
            "--rw=read",
            "--size=4m",
            "--direct=1",
            "--device=hdd,seek_min_us=100000,seek_max_us=1",
        ],
    );
    assert_mentions(&err, &["seek_min_us", "100000", "seek_max_us"]);
}

#[test]
fn output_that_is_a_directory_or_unwritable() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["--name=x", "--rw=read", "--size=1m", "--direct=1"];
    let d = dir.path().display().to_string();
    for flag in ["--output", "--io-stat", "--lat-hist", "--request-trace"] {
        let out = format!("{flag}={d}");
        let mut a = args.to_vec();
        a.push(&out);
        let err = bad(dir.path(), &a);
        assert_mentions(&err, &[&d, "is a directory"]);
    }
    let missing = format!("--output={d}/no/such/dir/out.txt");
    let mut a = args.to_vec();
    a.push(&missing);
    let err = bad(dir.path(), &a);
    assert_mentions(&err, &["no/such/dir/out.txt", "No such file"]);
}

/// `io.cost.qos` whose min ends above max: the kernel's EINVAL, reported at
/// the write's line with the value as written, once.
#[test]
fn io_cost_qos_min_above_max() {
    let text = format!(
        "cgroups = [\"/cg1\"]\n{}",
        scenario(
            "",
            "",
            "/sys/fs/cgroup/io.cost.qos",
            "253:1 enable=1 min=90.00 max=50",
            &default_fio(),
        )
    );
    let err = bad_scenario(
        &text,
        "min=90.00",
        &[
            "min must not exceed max",
            "`253:1 enable=1 min=90.00 max=50`",
        ],
    );
    assert_eq!(err.matches("io.cost.qos").count(), 1, "{err}");
    // a later write that makes min > max is refused too, at its line
    let text = format!(
        "cgroups = [\"/cg1\"]\n{}[[write]]\nfile = \"/sys/fs/cgroup/io.cost.qos\"\nvalue = \"253:1 max=20\"\nat = \"1s\"\n",
        scenario(
            "",
            "",
            "/sys/fs/cgroup/io.cost.qos",
            "253:1 enable=1 min=50 max=100",
            &default_fio()
        )
    );
    bad_scenario(&text, "max=20", &["min must not exceed max"]);
    // and on the command line, the flag is named
    let dir = tempfile::tempdir().unwrap();
    let err = bad(
        dir.path(),
        &[
            "--name=x",
            "--rw=read",
            "--size=1m",
            "--direct=1",
            "--device=null,devid=253:1",
            "--io-cost-qos=253:1 enable=1 min=90 max=50",
        ],
    );
    assert_mentions(&err, &["--io-cost-qos", "min must not exceed max"]);
}

#[test]
fn empty_fio_table_names_its_line() {
    let text = "seed = 1\n[device]\nmodel = \"null\"\n\n[[fio]]\ncgroup = \"/a\"\n";
    bad_scenario(
        text,
        "[[fio]]",
        &["give exactly one of job_file, job or args"],
    );
    let text = "seed = 1\n[device]\nmodel = \"null\"\n\n[[fio]]\n";
    bad_scenario(text, "[[fio]]", &["give exactly one of"]);
}

/// An OS error is printed once, not once per layer.
#[test]
fn os_errors_are_printed_once() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("no-such-dir").join("f");
    let t = format!("--filename={}", target.display());
    let r = blkqos(
        &[
            "run",
            "--name=x",
            "--rw=write",
            "--size=1m",
            &t,
            "--backend=real",
        ],
        Some(dir.path()),
    );
    assert_no_panic(&r);
    assert_ne!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stderr.matches("os error 2").count(), 1, "{}", r.stderr);
    assert_eq!(
        r.stderr.matches(&*target.display().to_string()).count(),
        1,
        "{}",
        r.stderr
    );
}

/// blkqos's own flags take fio's `_` spelling too (`--allow_destructive`),
/// and the safety refusal names the flag that exists.
#[test]
fn own_flags_accept_underscores() {
    let dir = tempfile::tempdir().unwrap();
    // accepted (then refused for the simulator: it only applies to the engine)
    let err = bad(
        dir.path(),
        &["--name=x", "--rw=read", "--size=1m", "--allow_destructive"],
    );
    assert_mentions(&err, &["--allow-destructive", "--backend=real"]);
    let r = blkqos(
        &[
            "run",
            "--name=x",
            "--rw=read",
            "--size=1m",
            "--direct=1",
            "--io_stat=io.stat",
        ],
        Some(dir.path()),
    );
    r.ok();
    assert!(dir.path().join("io.stat").exists());
}

/// A knob write scheduled after the run's end is reported, not dropped
/// silently.
#[test]
fn knob_write_after_the_run_warns() {
    let dir = tempfile::tempdir().unwrap();
    let text = "seed = 1\n[device]\nmodel = \"null\"\n[[write]]\nfile = \"/sys/fs/cgroup/a/io.max\"\nvalue = \"253:0 riops=100\"\nat = \"3600s\"\n[[fio]]\ncgroup = \"/a\"\nargs = \"--name=x --rw=read --bs=4k --size=1m --runtime=1 --time_based --direct=1\"\n";
    write_file(dir.path(), "late.toml", text);
    let r = blkqos(&["run", "late.toml"], Some(dir.path()));
    r.ok();
    assert_mentions(
        &r.stderr,
        &[
            "late.toml:6",
            "warning",
            "253:0 riops=100",
            "never applied",
            "3600.000 s",
        ],
    );
}

#[test]
fn iostat_count_without_interval_blames_the_interval() {
    let r = blkqos(&["iostat", "-x", "0", "2"], None);
    assert_no_panic(&r);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert_mentions(&r.stderr, &["count (2) needs an interval"]);
}

/// A reader that goes away (`| head -1`) ends the program as SIGPIPE ends
/// sysstat's: status 141, nothing on stderr.
#[test]
fn closed_stdout_exits_141_silently() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    for args in [
        &["iostat", "-x", "1", "5"][..],
        // 200 job reports: far more than a pipe holds
        &[
            "run",
            "--name=x",
            "--rw=read",
            "--size=1m",
            "--direct=1",
            "--numjobs=200",
        ][..],
    ] {
        let mut child = Command::new(BIN)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = String::new();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        out.read_line(&mut first).unwrap();
        drop(out);
        let r = run_bounded_child(child);
        assert_eq!(r.code, Some(141), "{args:?}: {}", r.stderr);
        assert!(r.stderr.is_empty(), "{args:?}: {}", r.stderr);
    }
}

/// Wait for a child (hang guard: 60 s) and collect its stderr.
fn run_bounded_child(mut child: std::process::Child) -> Ran {
    use std::io::Read;
    let t0 = std::time::Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if t0.elapsed() > TIMEOUT {
            child.kill().ok();
            panic!("still running after its reader left");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    Ran {
        code: status.code(),
        stdout: Vec::new(),
        stderr,
    }
}

#[test]
fn bad_values_of_file_and_distribution_options() {
    bad_job_line(
        "random_distribution=zipf:1",
        &["random_distribution", "zipf:1", "theta"],
    );
    bad_job_line(
        "random_distribution=zoned:50/5:30/15",
        &["zoned:50/5:30/15", "100"],
    );
    bad_job_line("bssplit=4k/70:8k/70", &["bssplit", "more than 100"]);
    bad_job_line("rw=read:4q", &["rw", "read:4q", "postfix"]);
    bad_job_line("file_service_type=zipf", &["file_service_type", "zipf"]);
    bad_job_line("nrfiles=0", &["nrfiles", "min value"]);
    bad_job_line("filesize=0", &["filesize"]);
    bad_job_line("ioengine=rbd", &["ioengine", "rbd", "network", "libaio"]);
    bad_job_line("flow=-2", &["flow", "-2", "negative"]);
}

/// `memory.max` in a scenario: a value that is no size, a cgroup the
/// scenario does not have, a write during the run; each named with its
/// file and line.
#[test]
fn bad_memory_max_and_wbt_lat_usec_in_scenario() {
    let base = |file: &str, value: &str, at: &str| {
        format!(
            "cgroups = [\"/a\"]\n[device]\nmodel = \"null\"\n\n[[write]]\nfile = \"{file}\"\nvalue = \"{value}\"\n{at}\n[[fio]]\ncgroup = \"/a\"\nargs = \"--name=a --rw=write --bs=1m --size=4m --direct=0\"\n"
        )
    };
    for (text, tokens) in [
        (
            base("/sys/fs/cgroup/a/memory.max", "lots", ""),
            vec!["memory.max", "`lots`"],
        ),
        (
            base("/sys/fs/cgroup/aa/memory.max", "64m", ""),
            vec!["memory.max", "`/aa`"],
        ),
        (
            base("/sys/fs/cgroup/a/memory.max", "64m", "at = \"1s\""),
            vec!["memory.max", "before the run"],
        ),
        // blk-wbt's knob: the scenario's device (null's default name is
        // nullb0), a number, before the run
        (
            base("/sys/block/sda/queue/wbt_lat_usec", "2000", ""),
            vec!["wbt_lat_usec", "/sys/block/nullb0"],
        ),
        (
            base("/sys/block/nullb0/queue/wbt_lat_usec", "fast", ""),
            vec!["wbt_lat_usec", "`fast`"],
        ),
        (
            base("/sys/block/nullb0/queue/wbt_lat_usec", "0", "at = \"1s\""),
            vec!["wbt_lat_usec", "before the run"],
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        write_file(dir.path(), "s.toml", &text);
        let err = bad(dir.path(), &["s.toml"]);
        assert_mentions(&err, &["s.toml:"]);
        assert_mentions(&err, &tokens);
    }
}

/// The guest-host parameters of the null model name the key and value
/// that break their order (a quantile below the one before it).
#[test]
fn null_host_quantiles_out_of_order_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for (device, key, value) in [
        ("null,late_p50_ns=100,late_p99_ns=50", "late_p99_ns", "`50`"),
        (
            "null,late_sleep_p50_ns=100,late_sleep_p99_ns=50",
            "late_sleep_p99_ns",
            "`50`",
        ),
        (
            "null,late_busy_p50_ns=100,late_busy_p99_ns=50",
            "late_busy_p99_ns",
            "`50`",
        ),
        (
            "null,late_idle_p50_ns=100,late_idle_p99_ns=60",
            "late_idle_p99_ns",
            "`60`",
        ),
        (
            "null,mbps=4,restart_p50_ns=100,restart_p90_ns=50,restart_p99_ns=200",
            "restart_p90_ns",
            "`50`",
        ),
        (
            "null,mbps=4,restart_p50_ns=1,restart_p90_ns=50,restart_p99_ns=20",
            "restart_p99_ns",
            "`20`",
        ),
        (
            "null,mbps=4,dispatch_p50_ns=4000,dispatch_p90_ns=3000,dispatch_p99_ns=9000",
            "dispatch_p90_ns",
            "`3000`",
        ),
        (
            "null,mbps=4,irq_p50_ns=1,irq_p90_ns=50,irq_p99_ns=20",
            "irq_p99_ns",
            "`20`",
        ),
    ] {
        let err = bad(
            dir.path(),
            &[
                "--name=j",
                "--rw=read",
                "--size=1m",
                &format!("--device={device}"),
            ],
        );
        assert_mentions(&err, &[key, value]);
    }
}
