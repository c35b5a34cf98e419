//! The libraries' lines on stderr (notes, warnings, what a run did and
//! wrote): `blkqos-experiment` and `blkqos-studies` say them through the
//! `log` facade, and the binary prints each message as it is, one line,
//! when it is said. Another crate's log records are not printed.

struct StderrLog;

impl log::Log for StderrLog {
    fn enabled(&self, m: &log::Metadata) -> bool {
        m.level() <= log::Level::Info && m.target().starts_with("blkqos_")
    }

    fn log(&self, r: &log::Record) {
        if self.enabled(r.metadata()) {
            eprintln!("{}", r.args());
        }
    }

    fn flush(&self) {}
}

static LOGGER: StderrLog = StderrLog;

/// Print the libraries' lines from now on (once per process).
pub fn install() {
    if log::set_logger(&LOGGER).is_ok() {
        log::set_max_level(log::LevelFilter::Info);
    }
}
