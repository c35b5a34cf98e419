//! Dates for the banner and `-t` timestamps (UTC; sysstat's tests run with
//! `TZ=GMT`).

/// A UTC calendar time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CivilTime {
    pub year: i64,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
}

impl CivilTime {
    /// From Unix seconds (Howard Hinnant's `civil_from_days`).
    pub fn from_unix(secs: i64) -> Self {
        let days = secs.div_euclid(86_400);
        let sod = secs.rem_euclid(86_400);
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        let year = yoe + era * 400 + i64::from(month <= 2);
        CivilTime {
            year,
            month,
            day,
            hour: (sod / 3600) as u32,
            minute: (sod / 60 % 60) as u32,
            second: (sod % 60) as u32,
        }
    }

    /// `strftime("%x")` in the C locale: `06/01/20`; ISO: `2020-06-01`.
    pub fn date(&self, iso: bool) -> String {
        if iso {
            format!("{:04}-{:02}-{:02}", self.year, self.month, self.day)
        } else {
            format!(
                "{:02}/{:02}/{:02}",
                self.month,
                self.day,
                self.year.rem_euclid(100)
            )
        }
    }

    /// `strftime("%x %X")` in the C locale; ISO: `"%FT%T%z"` (UTC).
    pub fn timestamp(&self, iso: bool) -> String {
        let t = format!("{:02}:{:02}:{:02}", self.hour, self.minute, self.second);
        if iso {
            format!("{}T{t}+0000", self.date(true))
        } else {
            format!("{} {t}", self.date(false))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_dates() {
        assert_eq!(
            CivilTime::from_unix(0).timestamp(false),
            "01/01/70 00:00:00"
        );
        // 2020-06-01T12:34:56Z
        let t = CivilTime::from_unix(1_591_014_896);
        assert_eq!(t.date(false), "06/01/20");
        assert_eq!(t.timestamp(true), "2020-06-01T12:34:56+0000");
        assert_eq!(CivilTime::from_unix(951_782_400).date(true), "2000-02-29");
        assert_eq!(
            CivilTime::from_unix(-1).timestamp(true),
            "1969-12-31T23:59:59+0000"
        );
    }
}
