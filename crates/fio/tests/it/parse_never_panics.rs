//! The public parsing API returns `Ok` or `Err` on any input, never panics.
//! (The crate's own property tests go further, with an in-memory file
//! system for `include` and job files.)

use blkqos_fio::{parse_fio_args, parse_job_file, showcmd};
use proptest::prelude::*;

fn env(name: &str) -> Option<String> {
    (name == "V").then(|| "4k".to_string())
}

const VALID: &str = "[global]\nrw=randrw\nbs=4k,8k\ntime_based\nruntime=10\n[a]\nsize=1g\nrate_iops=100\nignore_error=EIO:EIO\n[b]\nthinktime=4ms\nnumjobs=2\n";

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn job_file_text(text in "\\PC{0,400}") {
        // Keep the real file system out of it.
        prop_assume!(!text.contains("include"));
        let _ = parse_job_file("fuzz.fio", &text, &env);
        let _ = showcmd("fuzz.fio", &text, &env);
    }

    #[test]
    fn job_file_edits(cut in 0usize..VALID.len(), insert in "[\\[\\]=,:;#%$(){}a-z0-9\\- \n]{0,12}") {
        let mut text = VALID.to_string();
        text.insert_str(cut, &insert);
        prop_assume!(!text.contains("include"));
        let _ = parse_job_file("fuzz.fio", &text, &env);
    }

    #[test]
    fn command_lines(args in prop::collection::vec("-{1,2}\\PC{0,24}", 0..10)) {
        // Only options: a bare argument would be read as a job file.
        prop_assume!(args.iter().all(|a| a != "--"));
        let _ = parse_fio_args(&args, &["backend", "quiet?"], &env);
    }
}
