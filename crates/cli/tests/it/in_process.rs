//! The library is what the command runs: planning, a simulated run and
//! fio's reports called in-process give, byte for byte, what `blkqos run`
//! prints for the same arguments; a bad argument is refused the same way.

use crate::common;

use std::path::Path;

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// In-process reports, time-stamped as the command time-stamps a
/// simulated run under `SOURCE_DATE_EPOCH`, each with the file its
/// invocation writes it to (`None`: stdout).
fn in_process(a: &[String]) -> Vec<(Option<std::path::PathBuf>, String)> {
    // the command under SOURCE_DATE_EPOCH prints UTC at that epoch
    std::env::set_var("SOURCE_DATE_EPOCH", common::EPOCH);
    let exp = blkqos::plan_run(a).expect("plan");
    let ran = blkqos::run_simulated(&exp).expect("run");
    let t0_ms = common::EPOCH.parse::<u64>().unwrap() * 1000;
    let outputs = exp.invocations.iter().map(|i| i.output.clone());
    outputs
        .zip(blkqos::fio_reports(&exp, &ran, t0_ms))
        .collect()
}

#[test]
fn a_scenario_and_a_command_line_report_as_the_command_does() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let scenario = root.join("examples/iocost-weights/weights.toml");
    let cases = [
        args(&[scenario.to_str().unwrap()]),
        args(&[
            "--name=a",
            "--rw=randrw",
            "--bs=4k",
            "--size=8m",
            "--iodepth=8",
            "--ioengine=io_uring",
            "--output-format=json,normal",
            "--device=ssd,channels=4",
        ]),
    ];
    for (k, a) in cases.iter().enumerate() {
        let dir =
            std::env::temp_dir().join(format!("blkqos-in-process-{}-{k}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let got = in_process(a);
        let cmd = common::blkqos(&[&["run".to_string()], a.as_slice()].concat(), Some(&dir));
        assert_eq!(cmd.code, Some(0), "{a:?}: {}", cmd.stderr);
        let mut stdout = String::new();
        for (out, report) in &got {
            assert!(report.contains("fio-3.33"), "{a:?}: {report}");
            match out {
                Some(p) => assert_eq!(
                    &std::fs::read_to_string(dir.join(p)).unwrap(),
                    report,
                    "{a:?}: {} in-process and from the command differ",
                    p.display()
                ),
                None => stdout.push_str(report),
            }
        }
        // a scenario whose reports all went to files: the command adds
        // its summary of what ran (run_summary), the reports are the same
        let cmd_stdout = cmd.stdout_str();
        let reports = match (stdout.is_empty(), cmd_stdout.starts_with("# what ran (")) {
            (true, true) => "",
            _ => cmd_stdout.as_str(),
        };
        assert_eq!(stdout, reports, "{a:?}: in-process and command differ");
        std::fs::remove_dir_all(&dir).ok();
    }
}

#[test]
fn a_bad_option_is_refused_in_process_as_on_the_command_line() {
    let a = args(&["--name=a", "--rw=randread", "--size=8m", "--iodeph=8"]);
    let err = format!("{:#}", blkqos::plan_run(&a).expect_err("refused"));
    let cmd = common::blkqos(&[&["run".to_string()], a.as_slice()].concat(), None);
    assert_eq!(cmd.code, Some(2));
    assert_eq!(cmd.stderr.trim(), format!("blkqos: {err}"));
}
