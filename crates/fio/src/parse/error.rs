//! [`ParseError`]: where a job file or command line went wrong.

use std::fmt;

/// The label used as [`ParseError::file`] for errors on the command line.
pub const COMMAND_LINE: &str = "<command line>";

/// A job-file or command-line error, located as precisely as possible.
///
/// Displays as `FILE:LINE: option `opt`: value `v`: message`; the line is left
/// out when it is 0 (the command line, or a whole-file problem), and the
/// option and value parts when they are not known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// Job file path, or [`COMMAND_LINE`].
    pub file: String,
    /// 1-based line; 0 = the command line or the file as a whole.
    pub line: usize,
    /// The option as it was written (before alias canonicalisation).
    pub option: Option<String>,
    /// The value as it was written (before `${VAR}` expansion).
    pub value: Option<String>,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.file)?;
        if self.line > 0 {
            write!(f, ":{}", self.line)?;
        }
        if let Some(o) = &self.option {
            write!(f, ": option `{o}`")?;
        }
        if let Some(v) = &self.value {
            write!(f, ": value `{v}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ParseError {}

/// A position in a job file (or the command line).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Loc {
    pub file: String,
    pub line: usize,
}

impl Loc {
    pub fn new(file: &str, line: usize) -> Self {
        Loc {
            file: file.to_string(),
            line,
        }
    }

    pub fn command_line() -> Self {
        Loc::new(COMMAND_LINE, 0)
    }

    /// An error at this position, not tied to an option.
    pub fn error(&self, message: impl Into<String>) -> ParseError {
        ParseError {
            file: self.file.clone(),
            line: self.line,
            option: None,
            value: None,
            message: message.into(),
        }
    }

    /// An error about `option` (given `value`) at this position.
    pub fn option_error(
        &self,
        option: &str,
        value: Option<&str>,
        message: impl Into<String>,
    ) -> ParseError {
        ParseError {
            option: Some(option.to_string()),
            value: value.map(str::to_string),
            ..self.error(message)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_omits_missing_parts() {
        let e = Loc::new("a.fio", 3).option_error("bs", Some("4x"), "bad");
        assert_eq!(e.to_string(), "a.fio:3: option `bs`: value `4x`: bad");
        let e = Loc::command_line().option_error("direct", None, "needs a value");
        assert_eq!(
            e.to_string(),
            "<command line>: option `direct`: needs a value"
        );
        assert_eq!(
            Loc::new("b.fio", 0).error("empty").to_string(),
            "b.fio: empty"
        );
    }
}
