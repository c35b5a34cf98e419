//! What every knob line shares: the device that starts it
//! (`blkg_conf_prep`) and the kernel's error classes for a refused write.

use crate::io::DevId;

/// The kernel's error classes for a rejected write.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KnobError {
    /// `-EINVAL`
    #[error("{file}: invalid argument: {why} (`{token}`)")]
    Invalid {
        /// The knob file written (`io.max`, `io.cost.qos`, ...).
        file: &'static str,
        /// The offending token of the line, as written.
        token: String,
        /// Why the kernel refuses it.
        why: &'static str,
    },
    /// `-ERANGE`
    #[error("{file}: `{token}` is out of range: {why}")]
    OutOfRange {
        /// The knob file written.
        file: &'static str,
        /// The offending token of the line, as written.
        token: String,
        /// The range it falls outside of.
        why: &'static str,
    },
    /// `-ENODEV`: the line names a device that is not there.
    #[error("{file}: no such device `{token}`")]
    NoDevice {
        /// The knob file written.
        file: &'static str,
        /// The `MAJ:MIN` token naming the missing device.
        token: String,
    },
}

impl KnobError {
    /// The errno a write(2) to cgroupfs would return.
    pub fn errno_name(&self) -> &'static str {
        match self {
            KnobError::Invalid { .. } => "EINVAL",
            KnobError::OutOfRange { .. } => "ERANGE",
            KnobError::NoDevice { .. } => "ENODEV",
        }
    }
}

/// Parse the device part of a knob line (`blkg_conf_prep`): `MAJ:MIN`
/// followed by whitespace and the body.
pub fn split_dev<'a>(file: &'static str, line: &'a str) -> Result<(DevId, &'a str), KnobError> {
    let line = line.trim();
    let (dev, body) = match line.find(char::is_whitespace) {
        Some(i) => (&line[..i], line[i..].trim_start()),
        None => (line, ""),
    };
    let dev: DevId = dev.parse().map_err(|_| KnobError::Invalid {
        file,
        token: dev.to_string(),
        why: "expected MAJ:MIN",
    })?;
    Ok((dev, body))
}
