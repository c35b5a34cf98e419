//! The simulator's integration tests: one binary, a module per area
//! (docs/TESTING.md).

mod cpus;
mod plug;
mod run_sink;
mod seed_004_accounting;
mod split;
mod stop;
mod tagwait;
