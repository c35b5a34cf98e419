//! The fio crate's integration tests: one binary, a module per area
//! (docs/TESTING.md). One report differential against fio 3.33 runs by
//! default (`tier_real::report_vs_fio::structure_mixed_matches_fio`), the others in
//! `cargo xtask test real`; fio's example job files in `cargo xtask test
//! examples`.

mod report_util;

mod parse_never_panics;
mod report_fixture;
mod report_golden;
mod report_jq;

/// fio 3.33's reports against ours (one runs by default, the rest with
/// the real tier).
mod tier_real {
    mod report_vs_fio;
}

/// fio's own example job files against `fio --parse-only`/`--showcmd`.
mod tier_examples {
    mod fio_examples;
}
