//! The `blkqos` command ([`blkqos::cli_main`]).

fn main() -> std::process::ExitCode {
    blkqos::cli_main()
}
