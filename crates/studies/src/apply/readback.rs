//! Reading a knob file back as the kernel prints it: does it hold what was
//! written, and which line puts back what it held before.
//!
//! The kernel's formats: `io.max` prints a line per device with any limit,
//! `MAJ:MIN rbps=N|max wbps=… riops=… wiops=…` (`tg_prfill_limit`), and
//! none for a device without one; `io.weight` prints `default N`, then
//! `MAJ:MIN N` per device with its own weight (`ioc_weight_show`);
//! `io.cost.qos` prints `MAJ:MIN enable=0|1 ctrl=auto|user rpct=P.PP
//! rlat=N wpct=P.PP wlat=N min=P.PP max=P.PP` (`ioc_qos_prfill`) and
//! `io.cost.model` `MAJ:MIN ctrl=… model=linear rbps=N …`
//! (`ioc_cost_model_prfill`), for devices iocost has seen.

use blkqos_core::cgroupfs::KnobFile;
use blkqos_core::DevId;

/// The fields of `dev`'s line in `content` (`key=value` pairs), or `None`
/// when the file has no line for it.
fn device_fields(content: &str, dev: DevId) -> Option<Vec<(String, String)>> {
    let tag = dev.to_string();
    let line = content
        .lines()
        .find(|l| l.split_whitespace().next() == Some(tag.as_str()))?;
    Some(
        line.split_whitespace()
            .skip(1)
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    )
}

/// A field's value as a number (`max` is unbounded).
fn number(v: &str) -> Option<f64> {
    if v == "max" {
        Some(f64::INFINITY)
    } else {
        v.parse().ok()
    }
}

/// Equal as the kernel prints them: numbers within its 2-decimal rounding
/// (percentages are kept in hundredths), words exactly.
fn same(written: &str, read: &str) -> bool {
    match (number(written), number(read)) {
        (Some(a), Some(b)) => a == b || (a - b).abs() <= 0.005 + 1e-9 * a.abs(),
        _ => written == read,
    }
}

/// Why the file's `content` (read after writing `value` for `dev`) does
/// not show the write; `None` when it does.
pub fn mismatch(knob: KnobFile, value: &str, content: &str, dev: DevId) -> Option<String> {
    // a file that keeps the line as written (a test hierarchy)
    if content.trim() == value.trim() {
        return None;
    }
    let mut words = value.split_whitespace();
    let first = words.next().unwrap_or("");
    if knob == KnobFile::IoWeight && first != dev.to_string() {
        // `N` or `default N`: the default weight
        let want = if first == "default" {
            words.next().unwrap_or("")
        } else {
            first
        };
        let got = content
            .lines()
            .find_map(|l| l.strip_prefix("default "))
            .map(str::trim);
        return match got {
            Some(g) if same(want, g) => None,
            Some(g) => Some(format!("default weight reads {g}, not {want}")),
            None => Some("no `default` line".into()),
        };
    }
    if knob == KnobFile::IoWeight {
        let want = words.next().unwrap_or("");
        let got = content.lines().find_map(|l| {
            let mut w = l.split_whitespace();
            (w.next() == Some(first)).then(|| w.next().unwrap_or("").to_string())
        });
        return match got {
            // `MAJ:MIN default` removes the device's own weight
            None if want == "default" => None,
            Some(g) if same(want, &g) => None,
            Some(g) => Some(format!("{first} reads {g}, not {want}")),
            None => Some(format!("no line for {first}")),
        };
    }
    let read = device_fields(content, dev);
    for (k, v) in value
        .split_whitespace()
        .skip(1)
        .filter_map(|kv| kv.split_once('='))
    {
        // io.max prints no line for a device with no limit at all
        let got = match &read {
            Some(fields) => fields.iter().find(|f| f.0 == k).map(|f| f.1.as_str()),
            None if knob == KnobFile::IoMax => Some("max"),
            None => return Some(format!("no line for {dev}")),
        };
        match got {
            Some(g) if same(v, g) => {}
            Some(g) => return Some(format!("{k} reads {g}, not {v}")),
            None => return Some(format!("no {k} in {dev}'s line")),
        }
    }
    None
}

/// The line that puts back what the file held (`before`) for `dev`, after
/// `written` replaced it.
pub fn restore_line(knob: KnobFile, written: &str, before: &str, dev: DevId) -> String {
    let first = written.split_whitespace().next().unwrap_or("");
    let line_for_dev = || {
        let tag = dev.to_string();
        before
            .lines()
            .find(|l| l.split_whitespace().next() == Some(tag.as_str()))
            .map(|l| l.trim().to_string())
    };
    match knob {
        KnobFile::IoWeight if first != dev.to_string() => before
            .lines()
            .find(|l| l.starts_with("default "))
            .map_or_else(|| "default 100".to_string(), |l| l.trim().to_string()),
        KnobFile::IoWeight => line_for_dev().unwrap_or_else(|| format!("{dev} default")),
        KnobFile::IoMax => {
            line_for_dev().unwrap_or_else(|| format!("{dev} rbps=max wbps=max riops=max wiops=max"))
        }
        KnobFile::IoCostQos => line_for_dev().unwrap_or_else(|| format!("{dev} enable=0")),
        KnobFile::IoCostModel => line_for_dev().unwrap_or_else(|| format!("{dev} ctrl=auto")),
        // v1: `MAJ:MIN 0` removes a device's limit
        KnobFile::V1Throttle { .. } => line_for_dev().unwrap_or_else(|| format!("{dev} 0")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEV: DevId = DevId::new(8, 16);

    #[test]
    fn the_kernels_formats_show_what_was_written() {
        let qos = "8:0 enable=0 ctrl=auto rpct=0.00 rlat=250000 wpct=0.00 wlat=250000 min=1.00 max=10000.00\n\
                   8:16 enable=1 ctrl=user rpct=95.00 rlat=2000 wpct=95.00 wlat=5000 min=25.00 max=92.00\n";
        let w = "8:16 enable=1 ctrl=user rpct=95 rlat=2000 wpct=95 wlat=5000 min=25 max=92";
        assert_eq!(mismatch(KnobFile::IoCostQos, w, qos, DEV), None);
        let w2 = "8:16 enable=1 max=93";
        assert_eq!(
            mismatch(KnobFile::IoCostQos, w2, qos, DEV).as_deref(),
            Some("max reads 92.00, not 93")
        );
        // io.max: no line at all when every limit is max
        assert_eq!(mismatch(KnobFile::IoMax, "8:16 riops=max", "", DEV), None);
        assert!(mismatch(KnobFile::IoMax, "8:16 riops=100", "", DEV).is_some());
        let max = "8:16 rbps=max wbps=max riops=100 wiops=max\n";
        assert_eq!(mismatch(KnobFile::IoMax, "8:16 riops=100", max, DEV), None);
        let weight = "default 100\n8:16 300\n";
        assert_eq!(mismatch(KnobFile::IoWeight, "100", weight, DEV), None);
        assert_eq!(
            mismatch(KnobFile::IoWeight, "default 100", weight, DEV),
            None
        );
        assert_eq!(mismatch(KnobFile::IoWeight, "8:16 300", weight, DEV), None);
        assert!(mismatch(KnobFile::IoWeight, "default 200", weight, DEV).is_some());
        assert_eq!(
            mismatch(KnobFile::IoWeight, "8:16 default", "default 100\n", DEV),
            None
        );
    }

    #[test]
    fn what_was_there_before_comes_back() {
        let before = "8:16 enable=1 ctrl=auto rpct=0.00 rlat=250000 wpct=0.00 wlat=250000 min=1.00 max=10000.00\n";
        assert_eq!(
            restore_line(KnobFile::IoCostQos, "8:16 enable=1 max=92", before, DEV),
            before.trim()
        );
        assert_eq!(
            restore_line(KnobFile::IoCostQos, "8:16 enable=1", "", DEV),
            "8:16 enable=0"
        );
        assert_eq!(
            restore_line(KnobFile::IoMax, "8:16 riops=1", "", DEV),
            "8:16 rbps=max wbps=max riops=max wiops=max"
        );
        assert_eq!(
            restore_line(
                KnobFile::IoWeight,
                "default 300",
                "default 100\n8:16 50\n",
                DEV
            ),
            "default 100"
        );
        assert_eq!(
            restore_line(KnobFile::IoWeight, "8:16 300", "default 100\n", DEV),
            "8:16 default"
        );
        assert_eq!(
            restore_line(KnobFile::IoCostModel, "8:16 ctrl=user", "", DEV),
            "8:16 ctrl=auto"
        );
    }
}
