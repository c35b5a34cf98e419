//! Knob syntax, defaults, print formats and error classes; `io.stat` and
//! the monitor formats.

use super::knob::*;
use super::model::*;
use super::tests::{io, tree};
use super::vtime::*;
use super::*;
use crate::io::IoOp;
use crate::time::Duration;

// ---- knobs ----------------------------------------------------------------------

#[test]
fn qos_default_line_and_round_trip() {
    let t = tree(&["/a"]);
    let dev = DevId::new(8, 0);
    let mut c = IoCost::new(IoCostConfig::default(), &t);
    assert_eq!(
        c.qos_line(dev),
        "8:0 enable=0 ctrl=auto rpct=0.00 rlat=25000 wpct=0.00 wlat=25000 min=1.00 max=10000.00"
    );
    let line =
        "8:0 enable=1 ctrl=user rpct=95.00 rlat=5000 wpct=90.50 wlat=10000 min=50.00 max=150.00";
    c.apply_qos(&parse_qos(line).unwrap()).unwrap();
    assert_eq!(c.qos_line(dev), line);
    // reading the line back and writing it again changes nothing
    c.apply_qos(&parse_qos(&c.qos_line(dev)).unwrap()).unwrap();
    assert_eq!(c.qos_line(dev), line);
    // period: 2 × max(rlat, wlat) at p90.5 → 20 ms; vrate bounds follow min/max
    assert_eq!(c.period_us(), 20_000);
    // ctrl=auto alone: back to the class defaults, enable kept
    c.apply_qos(&parse_qos("8:0 ctrl=auto").unwrap()).unwrap();
    assert_eq!(
        c.qos_line(dev),
        "8:0 enable=1 ctrl=auto rpct=0.00 rlat=25000 wpct=0.00 wlat=25000 min=1.00 max=10000.00"
    );
    // ctrl=user alone freezes the current values
    c.apply_qos(&parse_qos("8:0 ctrl=user").unwrap()).unwrap();
    assert!(c.qos_line(dev).contains("ctrl=user rpct=0.00 rlat=25000"));
    // the HDD defaults
    let hdd = IoCost::new(
        IoCostConfig {
            rotational: true,
            ..IoCostConfig::default()
        },
        &t,
    );
    assert!(hdd
        .qos_line(dev)
        .ends_with("rlat=250000 wpct=0.00 wlat=250000 min=1.00 max=10000.00"));
}

#[test]
fn qos_token_order_and_values() {
    let w = parse_qos("8:0 rlat=100 ctrl=auto").unwrap();
    assert_eq!(w.user, Some(false), "ctrl=auto after a parameter wins");
    let w = parse_qos("8:0 ctrl=auto rlat=100").unwrap();
    assert_eq!(w.user, Some(true));
    let w = parse_qos("8:0\trpct=99.999  wpct=-0.5 min=0 max=1000000 rlat=0x10 wlat=010").unwrap();
    assert_eq!(
        w.params[QOS_RPPM],
        Some(1_000_000),
        "99.999 rounds to 100.00"
    );
    assert_eq!(
        w.params[QOS_WPPM],
        Some(5_000),
        "the kernel reads -0.5 as +0.50"
    );
    assert_eq!(w.params[QOS_MIN], Some(VRATE_MIN_PPM), "min clamps to 1%");
    assert_eq!(
        w.params[QOS_MAX],
        Some(VRATE_MAX_PPM),
        "max clamps to 10000%"
    );
    assert_eq!(w.params[QOS_RLAT], Some(16), "base-0 numbers: hex");
    assert_eq!(w.params[QOS_WLAT], Some(8), "base-0 numbers: octal");
    // rlat is stored in 32 bits
    let w = parse_qos("8:0 rlat=4294967297").unwrap();
    assert_eq!(w.params[QOS_RLAT], Some(1));
    // trailing text after a float is ignored, as cgroup_parse_float does
    assert_eq!(
        parse_qos("8:0 rpct=95x").unwrap().params[QOS_RPPM],
        Some(950_000)
    );
    assert_eq!(parse_qos("8:0 enable=7").unwrap().enable, Some(true));
    assert_eq!(parse_qos("8:0").unwrap().enable, None);
}

#[test]
fn qos_min_over_max_is_einval() {
    let t = tree(&["/a"]);
    let mut c = IoCost::new(IoCostConfig::default(), &t);
    let e = c
        .apply_qos(&parse_qos("8:0 min=200 max=100").unwrap())
        .unwrap_err();
    assert_eq!(e.errno_name(), "EINVAL");
    assert!(e.to_string().contains("min=200.00 max=100.00"), "{e}");
    c.apply_qos(&parse_qos("8:0 max=50").unwrap()).unwrap();
    let e = c
        .apply_qos(&parse_qos("8:0 min=60 enable=1").unwrap())
        .unwrap_err();
    assert_eq!(e.errno_name(), "EINVAL");
    assert!(!c.enabled(), "a refused write changes nothing");
    // checked even when ctrl=auto discards the values
    assert!(c
        .apply_qos(&parse_qos("8:0 min=60 ctrl=auto").unwrap())
        .is_err());
}

#[test]
fn model_default_line_and_round_trip() {
    let t = tree(&["/a"]);
    let dev = DevId::new(259, 0);
    let mut c = IoCost::new(IoCostConfig::default(), &t);
    assert_eq!(
        c.model_line(dev),
        "259:0 ctrl=auto model=linear rbps=488636629 rseqiops=8932 rrandiops=8518 wbps=427891549 wseqiops=28755 wrandiops=21940"
    );
    let seed = "259:0 ctrl=user model=linear rbps=173471131 rseqiops=3566 rrandiops=3566 wbps=173333269 wseqiops=3566 wrandiops=3566";
    c.apply_model(&parse_model(seed).unwrap());
    assert_eq!(c.model_line(dev), seed);
    c.apply_model(&parse_model(&c.model_line(dev)).unwrap());
    assert_eq!(c.model_line(dev), seed);
    // partial write keeps the rest, and sets ctrl=user
    c.apply_model(&parse_model("259:0 ctrl=auto").unwrap());
    c.apply_model(&parse_model("259:0 rrandiops=1000").unwrap());
    assert!(c
        .model_line(dev)
        .starts_with("259:0 ctrl=user model=linear rbps=488636629 rseqiops=8932 rrandiops=1000 "));
    assert_eq!(
        c.params().lcoefs[LCOEF_RRANDIO],
        VTIME_PER_SEC.div_ceil(1000) - 1_152_074
    );
}

#[test]
fn weight_parse_and_print() {
    let d = DevId::new(8, 16);
    assert_eq!(parse_io_weight("200"), Ok(WeightWrite::Default(200)));
    assert_eq!(
        parse_io_weight("default 300"),
        Ok(WeightWrite::Default(300))
    );
    assert_eq!(parse_io_weight("  50"), Ok(WeightWrite::Default(50)));
    assert_eq!(
        parse_io_weight("8:16 10000"),
        Ok(WeightWrite::Device(d, 10_000))
    );
    assert_eq!(
        parse_io_weight("8:16 default"),
        Ok(WeightWrite::DeviceDefault(d))
    );
    // sscanf("%u") quirks: trailing text ignored, 32-bit truncation
    assert_eq!(parse_io_weight("150abc"), Ok(WeightWrite::Default(150)));
    assert_eq!(parse_io_weight("4294967396"), Ok(WeightWrite::Default(100)));
    assert_eq!(format_io_weight(100, &[]), "default 100");
    assert_eq!(format_io_weight(50, &[(d, 7)]), "default 50\n8:16 7");
}

#[test]
fn every_knob_error_is_einval_with_its_token() {
    type Parse = fn(&str) -> Result<(), KnobError>;
    let cases: &[(Parse, &str, &str)] = &[
        (|l| parse_io_weight(l).map(|_| ()), "0", "0"),
        (|l| parse_io_weight(l).map(|_| ()), "10001", "10001"),
        (|l| parse_io_weight(l).map(|_| ()), "-5", "-5"),
        (|l| parse_io_weight(l).map(|_| ()), "default", "default"),
        (|l| parse_io_weight(l).map(|_| ()), "", ""),
        (|l| parse_io_weight(l).map(|_| ()), "8:0 0", "0"),
        (|l| parse_io_weight(l).map(|_| ()), "8:0 abc", "abc"),
        (|l| parse_io_weight(l).map(|_| ()), "sda:1 5", "sda:1"),
        (
            |l| parse_qos(l).map(|_| ()),
            "8:0 rpct=100.01",
            "rpct=100.01",
        ),
        (|l| parse_qos(l).map(|_| ()), "8:0 rpct=-1", "rpct=-1"),
        (|l| parse_qos(l).map(|_| ()), "8:0 rpct=", "rpct="),
        (|l| parse_qos(l).map(|_| ()), "8:0 rpct=.5", "rpct=.5"),
        (|l| parse_qos(l).map(|_| ()), "8:0 wpct=1.-5", "wpct=1.-5"),
        (|l| parse_qos(l).map(|_| ()), "8:0 min=-1", "min=-1"),
        (
            |l| parse_qos(l).map(|_| ()),
            "8:0 max=1234567890123456789012345678901234",
            "max=",
        ),
        (|l| parse_qos(l).map(|_| ()), "8:0 rlat=1k", "rlat=1k"),
        (|l| parse_qos(l).map(|_| ()), "8:0 rlat=09", "rlat=09"),
        (|l| parse_qos(l).map(|_| ()), "8:0 rlat=+5", "rlat=+5"),
        (
            |l| parse_qos(l).map(|_| ()),
            "8:0 wlat=99999999999999999999",
            "wlat=9999",
        ),
        (|l| parse_qos(l).map(|_| ()), "8:0 enable=yes", "enable=yes"),
        (
            |l| parse_qos(l).map(|_| ()),
            "8:0 ctrl=manual",
            "ctrl=manual",
        ),
        (|l| parse_qos(l).map(|_| ()), "8:0 latency=5", "latency=5"),
        (|l| parse_qos(l).map(|_| ()), "8:0 rlat", "rlat"),
        (|l| parse_qos(l).map(|_| ()), "8 enable=1", "8"),
        (
            |l| parse_model(l).map(|_| ()),
            "8:0 model=quadratic",
            "model=quadratic",
        ),
        (|l| parse_model(l).map(|_| ()), "8:0 rbps=-1", "rbps=-1"),
        (|l| parse_model(l).map(|_| ()), "8:0 rbps=1.5", "rbps=1.5"),
        (|l| parse_model(l).map(|_| ()), "8:0 riops=5", "riops=5"),
        (|l| parse_model(l).map(|_| ()), "8:0 ctrl=", "ctrl="),
        (
            |l| parse_model(l).map(|_| ()),
            "8:0 wbps=18446744073709551616",
            "wbps=",
        ),
    ];
    for (parse, line, tok) in cases {
        let e = parse(line).unwrap_err();
        assert_eq!(e.errno_name(), "EINVAL", "{line}");
        assert!(e.to_string().contains(tok), "{line}: {e}");
    }
    // the largest u64 is fine for the model
    assert!(parse_model("8:0 wbps=18446744073709551615").is_ok());
}

#[test]
fn parse_float2_matches_cgroup_parse_float() {
    for (s, v) in [
        ("95", Some(9500)),
        ("95.5", Some(9550)),
        ("95.55", Some(9555)),
        ("95.555", Some(9556)),
        ("95.554", Some(9555)),
        ("0.001", Some(0)),
        ("0.005", Some(1)),
        ("95.", Some(9500)),
        ("95.x", Some(9500)),
        ("-2.5", Some(-150)),
        ("-0.5", Some(50)),
        ("x", None),
        ("", None),
        (".5", None),
        ("1.-5", None),
    ] {
        assert_eq!(parse_float2(s), v, "{s}");
    }
}

// ---- observability ------------------------------------------------------------

#[test]
fn iostat_suffix_and_keys() {
    let t = tree(&["/a/b"]);
    let b = t.get("/a/b").unwrap();
    let mut off = IoCost::new(IoCostConfig::default(), &t);
    assert_eq!(off.iostat_suffix(GroupId::ROOT), "");
    off.apply_qos(&parse_qos("8:0 enable=1").unwrap()).unwrap();
    assert_eq!(
        off.iostat_suffix(GroupId::ROOT),
        " cost.vrate=100.00 cost.usage=0"
    );
    assert_eq!(off.iostat_suffix(b), " cost.usage=0");
    // the same keys typed, as a reader takes them (no parsing)
    let mut keys = Vec::new();
    off.iostat_keys_with(GroupId::ROOT, false, &mut keys);
    use crate::controller::{IostatKey, IostatValue};
    assert_eq!(
        keys,
        [
            IostatKey {
                name: "cost.vrate",
                value: IostatValue::Hundredths(10_000)
            },
            IostatKey {
                name: "cost.usage",
                value: IostatValue::Count(0)
            }
        ]
    );
    assert_eq!(
        off.iostat_suffix_debug(b),
        " cost.usage=0 cost.wait=0 cost.indebt=0 cost.indelay=0"
    );
}

/// iocost enabled on `t`, 100 4 KiB reads of `b` (≈ 11.7 ms of device
/// time) submitted and completed, then one period.
fn one_period_of_reads(t: &CgroupTree, b: GroupId) -> IoCost {
    let mut c = IoCost::new(IoCostConfig::default(), t);
    c.apply_qos(&parse_qos("8:0 enable=1").unwrap()).unwrap();
    let mut rel = Vec::new();
    let now = Instant::from_ms(1);
    let mut ios: Vec<Io> = (0..100).map(|i| io(i, b, IoOp::Read, 1)).collect();
    for x in &mut ios {
        assert_eq!(c.on_submit(x, now), Verdict::Dispatch);
    }
    for x in &ios {
        c.on_complete(x, now, now, now + Duration::from_us(50));
    }
    // the period timer (after the completions: time only goes forward)
    let d = c.next_deadline().unwrap().max(now + Duration::from_us(50));
    c.on_timer(d, &mut rel);
    c
}

#[test]
fn iostat_usage_is_flushed_up_the_tree() {
    let t = tree(&["/a/b"]);
    let [a, b] = ["/a", "/a/b"].map(|p| t.get(p).unwrap());
    let c = one_period_of_reads(&t, b);
    // the first IO has no cursor yet: sequential
    let usage = (15_387_255 + 99 * 16_135_121) / VTIME_PER_USEC;
    assert_eq!(usage, 11_734);
    // usage is flushed up the tree: root, /a and /a/b all show it
    for g in [GroupId::ROOT, a, b] {
        assert_eq!(c.stats(g).usage_us, usage, "{g}");
    }
    assert!(c.iostat_suffix(a).ends_with("cost.usage=11734"));
}

#[test]
fn trace_text_and_json_format() {
    let t = tree(&["/a/b"]);
    let b = t.get("/a/b").unwrap();
    let mut c = one_period_of_reads(&t, b);
    let mut tr = Vec::new();
    c.take_trace(&mut tr);
    let p = &tr[0];
    assert_eq!(p.period, 0);
    assert_eq!(p.state, RunState::Run);
    let text = p.format_text("sda");
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with(
            "sda RUN  per=50ms cur_per=0.052:v0.052 busy= +0 vrate=100.00% params=ssd_dfl"
        ),
        "{}",
        lines[0]
    );
    assert!(lines[1].contains("weight") && lines[1].contains("hweight%"));
    assert!(
        lines[2].starts_with("/a/b                         *   100/  100 100.00/100.00"),
        "{}",
        lines[2]
    );
    // usage% = 11.734 ms of a 50 ms period
    assert!(lines[2].ends_with(" 23.47"), "{}", lines[2]);
    let json = p.format_json("sda");
    let jl: Vec<&str> = json.lines().collect();
    assert_eq!(jl.len(), 2);
    assert!(
        jl[0].starts_with(
            "{\"device\": \"sda\", \"timestamp\": 0.052000, \"period\": 0, \"state\": \"RUN\""
        ),
        "{}",
        jl[0]
    );
    assert!(jl[1].starts_with("{\"cgroup\": \"/a/b\"") && jl[1].ends_with('}'));
    assert!(jl[1].contains("\"usage_pct\": 23.4680"), "{}", jl[1]);
}

#[test]
fn trace_names_user_params() {
    let t = tree(&["/a/b"]);
    let b = t.get("/a/b").unwrap();
    let mut c = one_period_of_reads(&t, b);
    let mut tr = Vec::new();
    c.take_trace(&mut tr);
    // user params show in the monitor name
    c.apply_model(&parse_model("8:0 rbps=1").unwrap());
    let d = c.next_deadline().unwrap();
    c.on_timer(d, &mut Vec::new());
    tr.clear();
    c.take_trace(&mut tr);
    assert!(tr[0]
        .format_text("sda")
        .lines()
        .next()
        .unwrap()
        .ends_with("params=ssd_dfl(C)"));
}
