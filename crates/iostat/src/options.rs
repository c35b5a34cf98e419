//! sysstat's iostat command line, parsed as `main()` in iostat.c (12.6.1)
//! parses it.

use crate::devlist::DevList;
pub use crate::devlist::DeviceArg;
use crate::error::Error;
use crate::metrics::Unit;

/// sysstat's usage text (iostat.c `usage`), minus the options this
/// implementation does not have.
pub const USAGE: &str = "\
Usage: iostat [ options ] [ <interval> [ <count> ] ]
Options are:
[ -c ] [ -d ] [ -k | -m ] [ -s ] [ -t ] [ -x ] [ -y ] [ -z ]
[ --dec={ 0 | 1 | 2 } ] [ -o JSON ] [ -p [ <device> [,...] | ALL ] ]
[ <device> [...] | ALL ]";

/// The parsed command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// `avg-cpu` report (`-c`, or the default without `-c`/`-d`).
    pub cpu: bool,
    /// Device report.
    pub disk: bool,
    /// `-x`.
    pub extended: bool,
    /// `-s`.
    pub short: bool,
    /// `-p ALL` (or `-p` alone): every device and partition, read from
    /// `/proc/diskstats` in file order.
    pub everything: bool,
    /// Devices or `ALL` or `-p DEV` given: also show devices with no IO.
    pub unfiltered: bool,
    /// Report all whole devices (no device list, or `ALL`).
    pub all_devices: bool,
    /// `-z`: omit devices with no IO during the interval.
    pub zero_omit: bool,
    /// `-y`: omit the first ("since boot") report when an interval is given.
    pub omit_since_boot: bool,
    /// `-t`: print a timestamp per report.
    pub timestamp: bool,
    /// `S_TIME_FORMAT=ISO`: ISO 8601 dates and timestamps.
    pub iso: bool,
    /// `-o JSON`.
    pub json: bool,
    pub unit: Unit,
    /// `--dec=N`: decimal places of the plain report (default 2).
    pub decimals: Option<usize>,
    /// Seconds between reports; 0: one report.
    pub interval: u64,
    /// Number of reports; `None`: until the samples end (live: forever).
    pub count: Option<u64>,
    /// Devices named on the command line, in sysstat's list order.
    pub devices: Vec<DeviceArg>,
}

fn usage(msg: impl std::fmt::Display) -> Error {
    Error::Usage(format!("{msg}\n{USAGE}"))
}

fn all_digits(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_digit())
}

/// `atol` on a string of digits (saturating, as glibc's `strtol` does).
fn atol(s: &str) -> u64 {
    if s.is_empty() {
        0
    } else {
        s.parse::<u64>()
            .unwrap_or(i64::MAX as u64)
            .min(i64::MAX as u64)
    }
}

/// sysstat's `device_name` (common.c) without `realpath`: strip `/dev/`
/// and spell `/` as `!`.
pub fn device_key(name: &str) -> String {
    name.strip_prefix("/dev/").unwrap_or(name).replace('/', "!")
}

/// Parse iostat's arguments (without the program name).
/// `env` looks up `POSIXLY_CORRECT` and `S_TIME_FORMAT`.
pub fn parse_args_env<S: AsRef<str>>(
    args: &[S],
    env: impl Fn(&str) -> Option<String>,
) -> Result<Options, Error> {
    let mut p = Parser::new();
    let mut opt = 0;
    while opt < args.len() {
        let next = args.get(opt + 1).map(|s| s.as_ref());
        opt += p.arg(args[opt].as_ref(), next)?;
    }
    Ok(p.finish(env))
}

/// What `main()` in iostat.c keeps while it walks the arguments.
struct Parser {
    /// The options so far.
    o: Options,
    /// `-k` seen.
    kilo: bool,
    /// `-m` seen.
    mega: bool,
    /// `-c` or `-d` seen.
    report_set: bool,
    /// The devices named, with or without `-p`.
    list: DevList,
    /// 0: no number seen, 1: interval seen, -1: interval and count seen.
    it: i32,
}

impl Parser {
    /// Nothing parsed yet: sysstat's defaults.
    fn new() -> Parser {
        let o = Options {
            cpu: false,
            disk: false,
            extended: false,
            short: false,
            everything: false,
            unfiltered: false,
            all_devices: false,
            zero_omit: false,
            omit_since_boot: false,
            timestamp: false,
            iso: false,
            json: false,
            unit: Unit::Sectors,
            decimals: None,
            interval: 0,
            count: Some(1),
            devices: Vec::new(),
        };
        Parser {
            o,
            kilo: false,
            mega: false,
            report_set: false,
            list: DevList::default(),
            it: 0,
        }
    }

    /// Parse argument `a` (`next` is the one after it); how many arguments
    /// it took, 1 or 2.
    fn arg(&mut self, a: &str, next: Option<&str>) -> Result<usize, Error> {
        if a == "-p" {
            Ok(self.partitions(next))
        } else if a == "-o" {
            match next {
                Some("JSON") => self.o.json = true,
                _ => return Err(usage("-o takes JSON")),
            }
            Ok(2)
        } else if let Some(d) = a.strip_prefix("--dec=") {
            match d {
                "0" | "1" | "2" => self.o.decimals = Some(usize::from(d.as_bytes()[0] - b'0')),
                _ => {
                    return Err(usage(format!(
                        "{a}: the number of decimal places is 0, 1 or 2"
                    )))
                }
            }
            Ok(1)
        } else if matches!(
            a,
            "--human" | "--pretty" | "--compact" | "-g" | "-j" | "-f" | "+f"
        ) {
            Err(usage(format!(
                "{a}: this option of sysstat's iostat is not supported"
            )))
        } else if let Some(flags) = a.strip_prefix('-') {
            self.flags(a, flags)?;
            Ok(1)
        } else if !all_digits(a) {
            self.device(a);
            Ok(1)
        } else {
            self.number(a)?;
            Ok(1)
        }
    }

    /// `-p` with its optional list (`next`, when it is neither a number nor
    /// an option): how many arguments it took.
    fn partitions(&mut self, next: Option<&str>) -> usize {
        let o = &mut self.o;
        match next {
            Some(n) if !all_digits(n) && !n.starts_with('-') => {
                o.unfiltered = true;
                for t in n.split(',').filter(|t| !t.is_empty()) {
                    if t == "ALL" {
                        o.everything = true;
                    } else {
                        self.list.add(&device_key(t), true, !o.everything, None);
                    }
                }
                2
            }
            _ => {
                o.everything = true;
                1
            }
        }
    }

    /// The one-letter options of argument `a` (`flags`: `a` without its
    /// dash).
    fn flags(&mut self, a: &str, flags: &str) -> Result<(), Error> {
        let o = &mut self.o;
        for c in flags.chars() {
            match c {
                'c' => {
                    o.cpu = true;
                    self.report_set = true;
                }
                'd' => {
                    o.disk = true;
                    self.report_set = true;
                }
                'k' if self.mega => return Err(usage("-k and -m exclude each other")),
                'k' => self.kilo = true,
                'm' if self.kilo => return Err(usage("-k and -m exclude each other")),
                'm' => self.mega = true,
                'p' => o.everything = true,
                's' => o.short = true,
                't' => o.timestamp = true,
                'x' => o.extended = true,
                'y' => o.omit_since_boot = true,
                'z' => o.zero_omit = true,
                'H' | 'h' | 'N' | 'V' => {
                    return Err(usage(format!(
                        "-{c}: this option of sysstat's iostat is not supported"
                    )))
                }
                _ => return Err(usage(format!("{a}: unknown option"))),
            }
        }
        Ok(())
    }

    /// A device named (or `ALL`): shown even without IO.
    fn device(&mut self, a: &str) {
        self.o.unfiltered = true;
        if a == "ALL" {
            self.o.all_devices = true;
        } else {
            self.list
                .add(&device_key(a), false, !self.o.everything, None);
        }
    }

    /// A number: the interval, then the count.
    fn number(&mut self, a: &str) -> Result<(), Error> {
        let o = &mut self.o;
        if self.it == 0 {
            o.interval = atol(a);
            o.count = None;
            self.it = 1;
        } else if self.it > 0 {
            let count = atol(a);
            if o.interval == 0 {
                return Err(usage(format!(
                    "a count ({a}) needs an interval of 1 s or more (interval 0 prints one report since boot)"
                )));
            }
            if count < 1 {
                return Err(usage(format!("bad count {a:?} (it must be 1 or more)")));
            }
            o.count = Some(count);
            self.it = -1;
        } else {
            return Err(usage(format!("unexpected argument {a:?}")));
        }
        Ok(())
    }

    /// The options once every argument is read: the implied reports and
    /// devices, the unit and the date format from `env`.
    fn finish(self, env: impl Fn(&str) -> Option<String>) -> Options {
        let mut o = self.o;
        if o.interval == 0 {
            o.count = Some(1);
        }
        if !self.report_set {
            o.cpu = true;
            o.disk = true;
        }
        if o.everything || o.extended || o.unfiltered {
            o.disk = true;
        }
        if !o.unfiltered {
            o.all_devices = true;
        }
        // set_disk_output_unit: kB unless POSIXLY_CORRECT is set.
        o.unit = if self.mega {
            Unit::Megabytes
        } else if self.kilo || env("POSIXLY_CORRECT").is_none() {
            Unit::Kilobytes
        } else {
            Unit::Sectors
        };
        o.iso = env("S_TIME_FORMAT").as_deref() == Some("ISO");
        o.devices = self.list.into_args();
        o
    }
}

/// [`parse_args_env`] with an empty environment (kB units, `%x` dates).
pub fn parse_args<S: AsRef<str>>(args: &[S]) -> Result<Options, Error> {
    parse_args_env(args, |_| None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<Options, Error> {
        let v: Vec<&str> = s.split_whitespace().collect();
        parse_args(&v)
    }

    fn keys(o: &Options) -> Vec<(&str, bool)> {
        o.devices
            .iter()
            .map(|d| (d.key.as_str(), d.with_partitions))
            .collect()
    }

    #[test]
    fn defaults() {
        let o = p("").unwrap();
        assert!(o.cpu && o.disk && !o.extended && o.all_devices && !o.unfiltered);
        assert_eq!((o.interval, o.count, o.unit), (0, Some(1), Unit::Kilobytes));
        let o = p("-x 1 2").unwrap();
        assert!(o.cpu && o.disk && o.extended);
        assert_eq!((o.interval, o.count), (1, Some(2)));
        let o = p("-d 5").unwrap();
        assert!(!o.cpu && o.disk);
        assert_eq!((o.interval, o.count), (5, None));
        let o = p("-c").unwrap();
        assert!(o.cpu && !o.disk);
        let o = p("-cx").unwrap();
        assert!(o.cpu && o.disk, "-x implies the device report");
    }

    #[test]
    fn devices_and_all() {
        let o = p("-x ALL 1 2").unwrap();
        assert!(o.unfiltered && o.all_devices && o.devices.is_empty());
        let o = p("sdc /dev/sda 2").unwrap();
        assert!(o.unfiltered && !o.all_devices);
        assert_eq!(
            keys(&o),
            [("sda", false), ("sdc", false)],
            "sorted like add_list_device"
        );
        let o = p("-p sdb,sda").unwrap();
        assert!(o.unfiltered && !o.everything);
        assert_eq!(keys(&o), [("sda", true), ("sdb", true)]);
        let o = p("-p ALL,sdb,sda").unwrap();
        assert!(o.everything && o.unfiltered);
        assert_eq!(
            keys(&o),
            [("sdb", true), ("sda", true)],
            "not sorted once -p ALL is seen"
        );
        let o = p("-p 1 2").unwrap();
        assert!(o.everything && !o.unfiltered && o.all_devices);
        assert_eq!((o.interval, o.count), (1, Some(2)));
        let o = p("-p -x").unwrap();
        assert!(o.everything && o.extended && !o.unfiltered);
        let o = p("sda -p sda").unwrap();
        assert_eq!(keys(&o), [("sda", true)]);
        let o = p("cciss/c0d0").unwrap();
        assert_eq!(keys(&o), [("cciss!c0d0", false)]);
    }

    #[test]
    fn units() {
        assert_eq!(p("-m").unwrap().unit, Unit::Megabytes);
        assert_eq!(p("-k").unwrap().unit, Unit::Kilobytes);
        let v: [&str; 0] = [];
        let posix = |k: &str| (k == "POSIXLY_CORRECT").then(String::new);
        assert_eq!(parse_args_env(&v, posix).unwrap().unit, Unit::Sectors);
        assert_eq!(
            parse_args_env(&["-k"], posix).unwrap().unit,
            Unit::Kilobytes
        );
    }

    #[test]
    fn bad_command_lines() {
        for bad in [
            "2 0", "0 5", "1 2 3", "-2 1", "2 -1", "-k -m", "-mk", "-q", "--foo", "-o", "-o XML",
            "--dec=3", "-g x", "--pretty", "-h",
        ] {
            match p(bad) {
                Err(Error::Usage(_)) => {}
                other => panic!("{bad:?}: {other:?}"),
            }
        }
        assert_eq!(p("--dec=1").unwrap().decimals, Some(1));
        assert!(p("-y 1 3").unwrap().omit_since_boot);
    }
}
