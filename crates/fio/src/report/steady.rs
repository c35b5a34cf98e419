//! The `steadystate` parts of a job's report (fio 3.33 `stat.c`:
//! `show_ss_normal` and the end of `show_thread_status_json`).

use blkqos_workload::steadystate::{SsMetric, SteadyState};

use super::jsonfmt::{Obj, Value};
use super::num2str::{num2str, N2sUnit};

/// `  steadystate  : attained=..., bw=... (...), iops=..., iops mean dev=...%`.
pub fn normal_line(ss: &SteadyState, kb_base: u32, sig_figs: i32, out: &mut String) {
    let i2p = kb_base.is_power_of_two();
    let kb = u64::from(kb_base.max(1));
    let bw = ss.bw_mean() / kb;
    let unit = N2sUnit::BytePerSec;
    out.push_str(&format!(
        "  steadystate  : attained={}, bw={} ({}), iops={}, {}{}={:.3}{}\n",
        if ss.attained { "yes" } else { "no" },
        num2str(bw, sig_figs, kb_base, i2p, unit),
        num2str(bw, sig_figs, kb_base, !i2p, unit),
        num2str(ss.iops_mean(), sig_figs, 1, false, N2sUnit::None),
        match ss.spec.metric {
            SsMetric::Iops => "iops",
            SsMetric::Bw => "bw",
        },
        if ss.spec.slope { " slope" } else { " mean dev" },
        ss.criterion,
        if ss.spec.pct { "%" } else { "" }
    ));
}

/// The job's JSON `steadystate` object.
pub fn json(ss: &SteadyState) -> Obj {
    let mut o = Obj::new();
    o.str("ss", &ss.spec.json_name());
    o.int("duration", ss.spec.dur_s as i64);
    o.int("attained", i64::from(ss.attained));
    // a C float printed with %f
    let pct = if ss.spec.pct { "%" } else { "" };
    o.str("criterion", &format!("{:.6}{pct}", ss.criterion as f32));
    o.float("max_deviation", ss.deviation);
    o.float("slope", ss.slope);
    let (bw, iops) = ss.ordered();
    let ints = |v: Vec<u64>| v.into_iter().map(|x| Value::Int(x as i64)).collect();
    let mut data = Obj::new();
    data.int("bw_mean", ss.bw_mean() as i64);
    data.int("iops_mean", ss.iops_mean() as i64);
    data.arr("iops", ints(iops));
    data.arr("bw", ints(bw));
    o.obj("data", data);
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use blkqos_core::Duration;
    use blkqos_workload::steadystate::SteadyStateSpec;

    fn flat() -> SteadyState {
        let spec = SteadyStateSpec {
            metric: SsMetric::Iops,
            slope: false,
            pct: true,
            limit: 10.0,
            dur_s: 2,
            ramp: Duration::from_secs(1),
        };
        let mut ss = SteadyState::new(spec, true);
        ss.add_sample(1000, 4_096_000);
        ss.attained = ss.add_sample(1000, 4_096_000);
        ss
    }

    #[test]
    fn the_text_line_as_fio_prints_it() {
        // fio 3.33 prints the same number in both units (`bw=4004KiB/s
        // (4004kB/s)`): num2str of the KiB count with base kb_base
        let mut out = String::new();
        normal_line(&flat(), 1024, 4, &mut out);
        assert_eq!(
            out,
            "  steadystate  : attained=yes, bw=4000KiB/s (4000kB/s), iops=1000, \
             iops mean dev=0.000%\n"
        );
    }

    #[test]
    fn the_json_object_has_fios_keys_in_order() {
        let o = json(&flat());
        let keys: Vec<&str> = o.0.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "ss",
                "duration",
                "attained",
                "criterion",
                "max_deviation",
                "slope",
                "data"
            ]
        );
        assert_eq!(o.0[0].1, Value::Str("iops:10.000000%".into()));
        assert_eq!(o.0[3].1, Value::Str("0.000000%".into()));
    }
}
