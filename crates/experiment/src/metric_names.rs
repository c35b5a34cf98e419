//! The names of the numbers a finished run is judged by, with their
//! units: whole-run metrics (`total_bw_mbps`) and per-group ones
//! (`/cgB.clat_p99_ms`), their titles for a reader, and the integer unit
//! they are kept in ([`Milli`]). Nothing here reads a run
//! ([`crate::metrics`] does), so the report pages can name them.

/// A metric value in thousandths of its unit (µs for `_ms`, kB/s for
/// `_mbps`).
pub type Milli = i64;

/// Whole-run metrics.
pub const RUN_METRICS: &[&str] = &["total_bw_mbps", "total_iops", "util_pct", "vrate_pct"];

/// Per-cgroup metrics (`/cgB.clat_p99_ms`).
pub const GROUP_METRICS: &[&str] = &[
    "bw_mbps",
    "iops",
    "clat_mean_ms",
    "clat_p50_ms",
    "clat_p90_ms",
    "clat_p99_ms",
    "clat_p999_ms",
    "clat_max_ms",
    "lat_mean_ms",
    "lat_p50_ms",
    "lat_p90_ms",
    "lat_p99_ms",
    "lat_p999_ms",
    "lat_max_ms",
];

/// A metric's name for a reader, with its unit: `total_bw_mbps` is "total
/// bandwidth (MB/s)", `/cgB.clat_p99_ms` "/cgB completion latency p99
/// (ms)". A name this blkqos does not know comes back as it is.
pub fn metric_title(name: &str) -> String {
    let (group, metric) = match name.rsplit_once('.') {
        Some((g, m)) if name.starts_with('/') => (Some(g), m),
        _ => (None, name),
    };
    let what = match metric {
        "total_bw_mbps" => "total bandwidth (MB/s)".to_string(),
        "total_iops" => "total IOPS".to_string(),
        "util_pct" => "device %util".to_string(),
        "vrate_pct" => "iocost vrate (%)".to_string(),
        "bw_mbps" => "bandwidth (MB/s)".to_string(),
        "iops" => "IOPS".to_string(),
        m => match m
            .strip_suffix("_ms")
            .and_then(|m| m.split_once('_'))
            .and_then(|(kind, stat)| {
                let kind = match kind {
                    "clat" => "completion latency",
                    "lat" => "total latency",
                    _ => return None,
                };
                let stat = match stat {
                    "p999" => "p99.9",
                    "mean" | "max" | "p50" | "p90" | "p99" => stat,
                    _ => return None,
                };
                Some(format!("{kind} {stat} (ms)"))
            }) {
            Some(t) => t,
            None => return name.to_string(),
        },
    };
    match group {
        Some(g) => format!("{g} {what}"),
        None => what,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_metric_has_a_title_with_its_unit() {
        assert_eq!(metric_title("total_bw_mbps"), "total bandwidth (MB/s)");
        assert_eq!(
            metric_title("/cgB.clat_p99_ms"),
            "/cgB completion latency p99 (ms)"
        );
        assert_eq!(
            metric_title("/a/b.lat_p999_ms"),
            "/a/b total latency p99.9 (ms)"
        );
        assert_eq!(metric_title("/.iops"), "/ IOPS");
        assert_eq!(metric_title("nonsense"), "nonsense");
        for m in RUN_METRICS {
            assert_ne!(metric_title(m), *m, "{m}");
        }
        for m in GROUP_METRICS {
            let name = format!("/g.{m}");
            assert_ne!(metric_title(&name), name, "{m}");
        }
    }
}
