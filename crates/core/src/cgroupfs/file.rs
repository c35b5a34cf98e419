//! Cgroup knob writes: `echo VALUE > /sys/fs/cgroup/<path>/<file>`.
//!
//! A write target is a cgroupfs path. The mount prefixes `/sys/fs/cgroup`
//! and `/sys/fs/cgroup/unified` (v2 under a hybrid mount) are stripped, so
//! knob lines from scripts apply unchanged; a bare `/cg1/io.max` also works.

use crate::CgroupTree;

/// The knob files blkqos understands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KnobFile {
    /// cgroup v2 `io.max`: blk-throttle's per-device bps/iops limits.
    IoMax,
    /// cgroup v2 `io.weight`: the group's iocost weight (`default` and per device).
    IoWeight,
    /// `io.cost.model` (root only): iocost's per-device cost model.
    IoCostModel,
    /// `io.cost.qos` (root only): iocost's enable switch and QoS parameters.
    IoCostQos,
    /// cgroup v1 `blkio.throttle.{read,write}_{bps,iops}_device`.
    V1Throttle {
        /// `write_*` rather than `read_*`.
        write: bool,
        /// `*_iops_device` rather than `*_bps_device`.
        iops: bool,
    },
}

impl KnobFile {
    /// The knob for a file name as cgroupfs spells it (`io.max`,
    /// `blkio.throttle.read_bps_device`, ...); `None` for any other file.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "io.max" => KnobFile::IoMax,
            "io.weight" => KnobFile::IoWeight,
            "io.cost.model" => KnobFile::IoCostModel,
            "io.cost.qos" => KnobFile::IoCostQos,
            "blkio.throttle.read_bps_device" => KnobFile::V1Throttle {
                write: false,
                iops: false,
            },
            "blkio.throttle.write_bps_device" => KnobFile::V1Throttle {
                write: true,
                iops: false,
            },
            "blkio.throttle.read_iops_device" => KnobFile::V1Throttle {
                write: false,
                iops: true,
            },
            "blkio.throttle.write_iops_device" => KnobFile::V1Throttle {
                write: true,
                iops: true,
            },
            _ => return None,
        })
    }
    /// The file name as cgroupfs spells it (inverse of [`KnobFile::from_name`]).
    pub fn name(self) -> &'static str {
        match self {
            KnobFile::IoMax => "io.max",
            KnobFile::IoWeight => "io.weight",
            KnobFile::IoCostModel => "io.cost.model",
            KnobFile::IoCostQos => "io.cost.qos",
            KnobFile::V1Throttle {
                write: false,
                iops: false,
            } => "blkio.throttle.read_bps_device",
            KnobFile::V1Throttle {
                write: true,
                iops: false,
            } => "blkio.throttle.write_bps_device",
            KnobFile::V1Throttle {
                write: false,
                iops: true,
            } => "blkio.throttle.read_iops_device",
            KnobFile::V1Throttle {
                write: true,
                iops: true,
            } => "blkio.throttle.write_iops_device",
        }
    }
    /// Files that exist only in the root cgroup.
    pub fn root_only(self) -> bool {
        matches!(self, KnobFile::IoCostModel | KnobFile::IoCostQos)
    }
    /// Files that do not exist in the root cgroup.
    pub fn non_root(self) -> bool {
        matches!(self, KnobFile::IoMax | KnobFile::IoWeight)
    }
}

/// Split a write target into (cgroup path, knob file).
pub fn split_target(target: &str) -> Result<(String, KnobFile), String> {
    let t = target.trim();
    let rest = [
        "/sys/fs/cgroup/unified",
        "/sys/fs/cgroup/blkio",
        "/sys/fs/cgroup",
    ]
    .iter()
    .find_map(|p| {
        t.strip_prefix(p)
            .filter(|r| r.is_empty() || r.starts_with('/'))
    })
    .unwrap_or(t);
    let (dir, file) = match rest.rsplit_once('/') {
        Some((d, f)) => (d, f),
        None => ("", rest),
    };
    let knob = KnobFile::from_name(file).ok_or_else(|| {
        format!(
            "`{file}` is not a knob file blkqos knows: use io.max, io.weight, io.cost.model, io.cost.qos or blkio.throttle.*_device"
        )
    })?;
    let path =
        CgroupTree::normalize(if dir.is_empty() { "/" } else { dir }).map_err(|e| e.to_string())?;
    if knob.root_only() && path != "/" {
        return Err(format!(
            "{} exists only in the root cgroup, not in {path}",
            knob.name()
        ));
    }
    if knob.non_root() && path == "/" {
        return Err(format!(
            "{} does not exist in the root cgroup (the root cannot be limited)",
            knob.name()
        ));
    }
    Ok((path, knob))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets() {
        assert_eq!(
            split_target("/sys/fs/cgroup/unified/cg1/io.max").unwrap(),
            ("/cg1".to_string(), KnobFile::IoMax)
        );
        assert_eq!(
            split_target("/sys/fs/cgroup/io.cost.qos").unwrap(),
            ("/".to_string(), KnobFile::IoCostQos)
        );
        assert_eq!(split_target("/a/b/io.weight").unwrap().0, "/a/b");
        assert!(split_target("/sys/fs/cgroup/io.max").is_err());
        assert!(split_target("/cgA/io.cost.model").is_err());
        assert!(split_target("/cgA/io.bogus").is_err());
    }
}
