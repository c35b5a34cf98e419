//! The studies' progress ([`blkqos_studies::progress::Progress`]) as a bar
//! on stderr when it is a terminal, nothing otherwise.

use blkqos_studies::progress::Progress;
use std::io::IsTerminal;
use std::sync::Mutex;

/// A bar per task, drawn only on a terminal.
#[derive(Default)]
pub struct Bar {
    bar: Mutex<Option<indicatif::ProgressBar>>,
}

impl Bar {
    fn with(&self, f: impl FnOnce(&indicatif::ProgressBar)) {
        let guard = self
            .bar
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(b) = guard.as_ref() {
            f(b);
        }
    }
}

impl Progress for Bar {
    fn begin(&self, total: u64, what: &str) {
        let bar = if std::io::stderr().is_terminal() {
            let b = indicatif::ProgressBar::new(total);
            let template = format!("{{bar:30}} {{pos}}/{{len}} {what}, eta {{eta}} {{msg}}");
            b.set_style(
                indicatif::ProgressStyle::with_template(&template)
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            b
        } else {
            indicatif::ProgressBar::hidden()
        };
        *self
            .bar
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(bar);
    }

    fn doing(&self, step: &str) {
        self.with(|b| b.set_message(step.to_string()));
    }

    fn done_one(&self) {
        self.with(|b| b.inc(1));
    }

    fn end(&self) {
        self.with(indicatif::ProgressBar::finish_and_clear);
    }
}
