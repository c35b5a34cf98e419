//! The iostat crate's integration tests: one binary, a module per area
//! (docs/TESTING.md).

mod parse_never_panics;
mod sysstat_fixtures;
