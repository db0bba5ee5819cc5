//! Instants and durations as Go's `time` package has them, for the
//! Repository controller's scheduling and the approval policy's delay:
//! [`Time`] (an instant in UTC with nanoseconds, Go's zero time included)
//! and [`Duration`] (signed
//! nanoseconds in an `i64`, parsed and printed in Go notation: `30s`,
//! `1h0m0s`).
//!
//! Written by hand rather than taken from a date crate: the decisions only
//! need RFC 3339 parsing, civil-date arithmetic in UTC and Go's duration
//! syntax, and matching Go exactly (saturating subtraction, the zero time of
//! year 1, `Duration.String()`) is simpler here than adapting a crate.

use std::fmt;

/// Nanoseconds in a second.
const NANOS_PER_SEC: i64 = 1_000_000_000;
/// Seconds from 0001-01-01T00:00:00Z (Go's zero time) to the Unix epoch.
const ZERO_UNIX_SECS: i64 = -62_135_596_800;

/// Go's `quote` in package time, as its errors quote: `"` around the
/// text, `"` and `\` escaped, control and non-ASCII bytes as `\xNN`.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if (c as u32) < 0x20 || !c.is_ascii() {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("\\x{b:02x}"));
            }
        } else {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
    }
    out.push('"');
    out
}

/// An error reading a time or a duration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimeError {
    /// Not an RFC 3339 time (`2006-01-02T15:04:05Z07:00`, fractional
    /// seconds allowed).
    #[error("parsing time {0:?} as RFC 3339: invalid format")]
    InvalidTime(String),
    /// Not a Go duration (`[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+`, or `0`).
    #[error("time: invalid duration {}", quote(.0))]
    InvalidDuration(String),
    /// A duration part without a unit (`10`).
    #[error("time: missing unit in duration {}", quote(.0))]
    MissingUnit(String),
    /// A unit other than ns, us, µs, ms, s, m, h.
    #[error("time: unknown unit {} in duration {}", quote(unit), quote(duration))]
    UnknownUnit {
        /// The unit.
        unit: String,
        /// The whole duration text.
        duration: String,
    },
}

/// A span of time in nanoseconds, as Go's `time.Duration` (saturating
/// arithmetic instead of Go's wrap-around).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(i64);

impl Duration {
    /// No time.
    pub const ZERO: Duration = Duration(0);
    /// The longest duration (about 292 years), what Go's `time.Since`
    /// returns for the zero time.
    pub const MAX: Duration = Duration(i64::MAX);
    /// The most negative duration.
    pub const MIN: Duration = Duration(i64::MIN);

    /// `n` nanoseconds.
    pub const fn from_nanos(n: i64) -> Duration {
        Duration(n)
    }
    /// `ms` milliseconds (saturating).
    pub const fn from_millis(ms: i64) -> Duration {
        Duration(ms.saturating_mul(1_000_000))
    }
    /// `s` seconds (saturating).
    pub const fn from_secs(s: i64) -> Duration {
        Duration(s.saturating_mul(NANOS_PER_SEC))
    }
    /// `m` minutes (saturating).
    pub const fn from_mins(m: i64) -> Duration {
        Duration::from_secs(m.saturating_mul(60))
    }
    /// `h` hours (saturating).
    pub const fn from_hours(h: i64) -> Duration {
        Duration::from_secs(h.saturating_mul(3600))
    }
    /// The duration in nanoseconds.
    pub const fn as_nanos(self) -> i64 {
        self.0
    }
    /// Whole seconds, truncated toward zero.
    pub const fn as_secs(self) -> i64 {
        self.0 / NANOS_PER_SEC
    }
    /// Sum, saturating at the limits.
    pub const fn saturating_add(self, other: Duration) -> Duration {
        Duration(self.0.saturating_add(other.0))
    }
    /// Difference, saturating at the limits.
    pub const fn saturating_sub(self, other: Duration) -> Duration {
        Duration(self.0.saturating_sub(other.0))
    }
    /// Whether the duration is negative.
    pub const fn is_negative(self) -> bool {
        self.0 < 0
    }

    /// `time.ParseDuration`: a possibly signed sequence of decimal numbers,
    /// each with an optional fraction and a unit (`300ms`, `-1.5h`,
    /// `2h45m`); `0` needs no unit. Units: `ns`, `us` (or `µs`, `μs`), `ms`,
    /// `s`, `m`, `h`. Errors carry Go's texts.
    pub fn parse(text: &str) -> Result<Duration, TimeError> {
        let invalid = || TimeError::InvalidDuration(text.to_string());
        let mut s = text.as_bytes();
        let mut neg = false;
        if let Some(&c) = s.first() {
            if c == b'-' || c == b'+' {
                neg = c == b'-';
                s = &s[1..];
            }
        }
        if s == b"0" {
            return Ok(Duration::ZERO);
        }
        if s.is_empty() {
            return Err(invalid());
        }
        const LIMIT: u64 = 1 << 63;
        let mut total: u64 = 0;
        while !s.is_empty() {
            if !(s[0] == b'.' || s[0].is_ascii_digit()) {
                return Err(invalid());
            }
            // The integer part.
            let mut v: u64 = 0;
            let mut i = 0;
            while i < s.len() && s[i].is_ascii_digit() {
                if v > LIMIT / 10 {
                    return Err(invalid());
                }
                v = v * 10 + u64::from(s[i] - b'0');
                if v > LIMIT {
                    return Err(invalid());
                }
                i += 1;
            }
            let pre = i > 0;
            s = &s[i..];
            // The fraction.
            let (mut f, mut scale, mut post) = (0u64, 1f64, false);
            if s.first() == Some(&b'.') {
                s = &s[1..];
                let mut i = 0;
                let mut overflow = false;
                while i < s.len() && s[i].is_ascii_digit() {
                    if !overflow {
                        if f > (LIMIT - 1) / 10 {
                            overflow = true;
                        } else {
                            let y = f * 10 + u64::from(s[i] - b'0');
                            if y > LIMIT {
                                overflow = true;
                            } else {
                                f = y;
                                scale *= 10.0;
                            }
                        }
                    }
                    i += 1;
                }
                post = i > 0;
                s = &s[i..];
            }
            if !pre && !post {
                return Err(invalid());
            }
            // The unit: everything up to the next digit or period.
            let i = s
                .iter()
                .position(|&c| c == b'.' || c.is_ascii_digit())
                .unwrap_or(s.len());
            if i == 0 {
                return Err(TimeError::MissingUnit(text.to_string()));
            }
            let (unit, rest) = s.split_at(i);
            s = rest;
            let unit_nanos: u64 = match unit {
                b"ns" => 1,
                b"us" | b"\xc2\xb5s" | b"\xce\xbcs" => 1_000,
                b"ms" => 1_000_000,
                b"s" => 1_000_000_000,
                b"m" => 60_000_000_000,
                b"h" => 3_600_000_000_000,
                _ => {
                    return Err(TimeError::UnknownUnit {
                        unit: String::from_utf8_lossy(unit).into_owned(),
                        duration: text.to_string(),
                    })
                }
            };
            if v > LIMIT / unit_nanos {
                return Err(invalid());
            }
            v *= unit_nanos;
            if f > 0 {
                // As Go: float64 keeps fractions of hours nanosecond-exact.
                v += (f as f64 * (unit_nanos as f64 / scale)) as u64;
                if v > LIMIT {
                    return Err(invalid());
                }
            }
            total += v;
            if total > LIMIT {
                return Err(invalid());
            }
        }
        if neg {
            // total <= 2^63: its negation fits.
            return Ok(Duration((total as i128).wrapping_neg() as i64));
        }
        if total > LIMIT - 1 {
            return Err(invalid());
        }
        Ok(Duration(total as i64))
    }
}

impl fmt::Display for Duration {
    /// Go's `Duration.String()`: `72h3m0.5s`, `1m0s`, `1.5ms`, `0s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let neg = self.0 < 0;
        let mut u = self.0.unsigned_abs();
        let mut out = String::new();
        if u < 1_000_000_000 {
            let (prec, unit) = match u {
                0 => return f.write_str("0s"),
                1..=999 => (0, "ns"),
                1_000..=999_999 => (3, "\u{b5}s"),
                _ => (6, "ms"),
            };
            let (frac, int) = frac_digits(u, prec);
            u = int;
            out.push_str(&u.to_string());
            out.push_str(&frac);
            out.push_str(unit);
        } else {
            let (frac, secs) = frac_digits(u, 9);
            u = secs;
            let s = u % 60;
            u /= 60;
            if u > 0 {
                let m = u % 60;
                u /= 60;
                if u > 0 {
                    out.push_str(&format!("{u}h"));
                }
                out.push_str(&format!("{m}m"));
            }
            out.push_str(&format!("{s}{frac}s"));
        }
        if neg {
            f.write_str("-")?;
        }
        f.write_str(&out)
    }
}

/// Go's `fmtFrac`: the fraction of `v / 10^prec` as `.123` without
/// trailing zeros (empty when zero), and the integer part.
fn frac_digits(mut v: u64, prec: u32) -> (String, u64) {
    let mut digits = Vec::new();
    let mut printed = false;
    for _ in 0..prec {
        let digit = v % 10;
        printed = printed || digit != 0;
        if printed {
            digits.push(char::from(b'0' + digit as u8));
        }
        v /= 10;
    }
    if !printed {
        return (String::new(), v);
    }
    digits.push('.');
    digits.reverse();
    (digits.into_iter().collect(), v)
}

/// An instant in UTC with nanosecond precision. [`Time::ZERO`] is Go's
/// zero time (0001-01-01T00:00:00Z), which the controller reads as "never".
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Time {
    secs: i64,
    nanos: u32,
}

impl Default for Time {
    fn default() -> Self {
        Time::ZERO
    }
}

impl Time {
    /// Go's zero time, 0001-01-01T00:00:00Z.
    pub const ZERO: Time = Time {
        secs: ZERO_UNIX_SECS,
        nanos: 0,
    };

    /// The instant `secs` seconds and `nanos` nanoseconds after the Unix
    /// epoch (`nanos` above a second carries into the seconds).
    pub const fn from_unix(secs: i64, nanos: u32) -> Time {
        let extra = (nanos / 1_000_000_000) as i64;
        Time {
            secs: secs.saturating_add(extra),
            nanos: nanos % 1_000_000_000,
        }
    }

    /// Seconds since the Unix epoch (floor).
    pub const fn unix_secs(self) -> i64 {
        self.secs
    }

    /// Nanoseconds within the second.
    pub const fn subsec_nanos(self) -> u32 {
        self.nanos
    }

    /// Whether this is Go's zero time.
    pub fn is_zero(self) -> bool {
        self == Time::ZERO
    }

    /// `metav1.Time` as Kubernetes stores it: empty (or absent) is the zero
    /// time; otherwise RFC 3339. An unreadable value is also read as the
    /// zero time: the API server would not have stored it, and the
    /// decisions treat "never" conservatively.
    pub fn from_k8s(text: Option<&str>) -> Time {
        match text {
            None | Some("") => Time::ZERO,
            Some(t) => Time::parse_rfc3339(t).unwrap_or(Time::ZERO),
        }
    }

    /// Parses `2006-01-02T15:04:05[.999999999](Z|±07:00)` as Go's
    /// `time.Parse(time.RFC3339, …)` does.
    pub fn parse_rfc3339(text: &str) -> Result<Time, TimeError> {
        let bad = || TimeError::InvalidTime(text.to_string());
        let b = text.as_bytes();
        let num = |range: std::ops::Range<usize>| -> Result<i64, TimeError> {
            let part = b.get(range).ok_or_else(bad)?;
            if part.is_empty() || !part.iter().all(u8::is_ascii_digit) {
                return Err(bad());
            }
            Ok(part
                .iter()
                .fold(0i64, |acc, d| acc * 10 + i64::from(d - b'0')))
        };
        if b.len() < 20
            || b[4] != b'-'
            || b[7] != b'-'
            || !matches!(b[10], b'T' | b't')
            || b[13] != b':'
            || b[16] != b':'
        {
            return Err(bad());
        }
        let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
        let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
        if !(1..=12).contains(&month)
            || day < 1
            || day > days_in_month(year, month)
            || hour > 23
            || minute > 59
            || second > 59
        {
            return Err(bad());
        }
        let mut i = 19;
        let mut nanos: u32 = 0;
        if b[i] == b'.' || b[i] == b',' {
            let start = i + 1;
            let mut end = start;
            while end < b.len() && b[end].is_ascii_digit() {
                end += 1;
            }
            if end == start {
                return Err(bad());
            }
            for (k, d) in b[start..end].iter().enumerate() {
                if k < 9 {
                    nanos += u32::from(d - b'0') * 10u32.pow(8 - k as u32);
                }
            }
            i = end;
        }
        let offset_secs = match b.get(i..) {
            Some(b"Z") | Some(b"z") => 0,
            Some(rest) if rest.len() == 6 && (rest[0] == b'+' || rest[0] == b'-') => {
                if rest[3] != b':' {
                    return Err(bad());
                }
                let (h, m) = (num(i + 1..i + 3)?, num(i + 4..i + 6)?);
                if h > 23 || m > 59 {
                    return Err(bad());
                }
                let off = h * 3600 + m * 60;
                if rest[0] == b'-' {
                    -off
                } else {
                    off
                }
            }
            _ => return Err(bad()),
        };
        let secs = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second
            - offset_secs;
        Ok(Time { secs, nanos })
    }

    /// RFC 3339 in UTC at second precision, as `metav1.Time` serialises
    /// (`2006-01-02T15:04:05Z`).
    pub fn to_rfc3339(self) -> String {
        let c = self.civil();
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
            c.year, c.month, c.day, c.hour, c.minute, c.second
        )
    }

    /// `t.Add(d)`, saturating at the representable range.
    pub fn plus(self, d: Duration) -> Time {
        let total = self.total_nanos() + i128::from(d.as_nanos());
        Time::from_total_nanos(total)
    }

    /// `t.Sub(u)`: the duration from `earlier` to `self`, saturating at
    /// [`Duration::MIN`] and [`Duration::MAX`] as Go's does.
    pub fn since(self, earlier: Time) -> Duration {
        let d = self.total_nanos() - earlier.total_nanos();
        Duration(d.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64)
    }

    /// `t.After(u)`.
    pub fn after(self, other: Time) -> bool {
        self > other
    }

    /// `t.Before(u)`.
    pub fn before(self, other: Time) -> bool {
        self < other
    }

    fn total_nanos(self) -> i128 {
        i128::from(self.secs) * i128::from(NANOS_PER_SEC) + i128::from(self.nanos)
    }

    fn from_total_nanos(total: i128) -> Time {
        let per = i128::from(NANOS_PER_SEC);
        let secs = total.div_euclid(per);
        let nanos = total.rem_euclid(per) as u32;
        let secs = secs.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
        Time { secs, nanos }
    }

    /// The civil (UTC) date and time of the instant.
    pub fn civil(self) -> Civil {
        let days = self.secs.div_euclid(86_400);
        let rem = self.secs.rem_euclid(86_400);
        let (year, month, day) = civil_from_days(days);
        Civil {
            year,
            month,
            day,
            hour: rem / 3600,
            minute: rem % 3600 / 60,
            second: rem % 60,
        }
    }

    /// The instant of a civil UTC date and time; out-of-range fields carry
    /// over as Go's `time.Date` normalises them (day 32 of January is
    /// February 1).
    pub fn from_civil(c: Civil) -> Time {
        // Normalise the month first (days_from_civil wants 1..=12).
        let months = c.year * 12 + (c.month - 1);
        let (year, month) = (months.div_euclid(12), months.rem_euclid(12) + 1);
        let days = days_from_civil(year, month, 1) + (c.day - 1);
        let secs = days
            .saturating_mul(86_400)
            .saturating_add(c.hour * 3600 + c.minute * 60 + c.second);
        Time { secs, nanos: 0 }
    }

    /// Day of the week, 0 = Sunday.
    pub fn weekday(self) -> i64 {
        (self.secs.div_euclid(86_400) + 4).rem_euclid(7)
    }
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_rfc3339())
    }
}

/// A civil date and time in UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Civil {
    /// Year (1 = year 1 AD).
    pub year: i64,
    /// Month, 1–12.
    pub month: i64,
    /// Day of the month, 1–31.
    pub day: i64,
    /// Hour, 0–23.
    pub hour: i64,
    /// Minute, 0–59.
    pub minute: i64,
    /// Second, 0–59.
    pub second: i64,
}

/// Days in `month` of `year` (proleptic Gregorian).
pub fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        _ => 28,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
/// algorithm); linear in `day`, so day overflow carries into the next
/// months.
pub fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day count since 1970-01-01.
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_print_as_go_does() {
        let cases = [
            (0, "0s"),
            (1, "1ns"),
            (1_100, "1.1\u{b5}s"),
            (2_200_000, "2.2ms"),
            (3_300_000_000, "3.3s"),
            (4 * 60 * NANOS_PER_SEC + 5 * NANOS_PER_SEC, "4m5s"),
            (4 * 60 * NANOS_PER_SEC + 5_001_000_000, "4m5.001s"),
            (
                5 * 3600 * NANOS_PER_SEC + 6 * 60 * NANOS_PER_SEC + 7_001_000_000,
                "5h6m7.001s",
            ),
            (8 * 60 * NANOS_PER_SEC + 1, "8m0.000000001s"),
            (3600 * NANOS_PER_SEC, "1h0m0s"),
            (-1_500_000_000, "-1.5s"),
            (i64::MAX, "2562047h47m16.854775807s"),
            (i64::MIN, "-2562047h47m16.854775808s"),
        ];
        for (nanos, want) in cases {
            assert_eq!(Duration(nanos).to_string(), want, "{nanos}");
        }
    }

    #[test]
    fn durations_parse_as_go_does() {
        let ok = [
            ("0", 0),
            ("5s", 5 * NANOS_PER_SEC),
            ("30s", 30 * NANOS_PER_SEC),
            ("1478s", 1478 * NANOS_PER_SEC),
            ("-5s", -5 * NANOS_PER_SEC),
            ("+5s", 5 * NANOS_PER_SEC),
            ("-0", 0),
            ("5.0s", 5 * NANOS_PER_SEC),
            ("5.6s", 5_600_000_000),
            ("5.s", 5 * NANOS_PER_SEC),
            (".5s", 500_000_000),
            ("1.004s", 1_004_000_000),
            ("10ns", 10),
            ("11us", 11_000),
            ("12\u{b5}s", 12_000),
            ("12\u{3bc}s", 12_000),
            ("13ms", 13_000_000),
            ("15m", 15 * 60 * NANOS_PER_SEC),
            ("16h", 16 * 3600 * NANOS_PER_SEC),
            ("3h30m", (3 * 3600 + 30 * 60) * NANOS_PER_SEC),
            ("10.5s4m", 4 * 60 * NANOS_PER_SEC + 10_500_000_000),
            ("-2m3.4s", -(2 * 60 * NANOS_PER_SEC + 3_400_000_000)),
            ("1h2m3s4ms5us6ns", 3_723_004_005_006),
            ("9223372036854775807ns", i64::MAX),
            ("-9223372036854775808ns", i64::MIN),
            ("0.100000000000000000000h", 6 * 60 * NANOS_PER_SEC),
        ];
        for (text, nanos) in ok {
            assert_eq!(Duration::parse(text), Ok(Duration(nanos)), "{text}");
        }
        for bad in [
            "",
            "3",
            "-",
            "s",
            ".",
            "-.",
            ".s",
            "+.s",
            "1d",
            "3000000h",
            "9223372036854775808ns",
        ] {
            assert!(Duration::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            Duration::parse("3").unwrap_err().to_string(),
            "time: missing unit in duration \"3\""
        );
        assert_eq!(
            Duration::parse("1d").unwrap_err().to_string(),
            "time: unknown unit \"d\" in duration \"1d\""
        );
    }

    #[test]
    fn times_parse_and_print_rfc3339() {
        let t = Time::parse_rfc3339("2024-01-01T09:56:30Z").unwrap();
        assert_eq!(t.unix_secs(), 1_704_102_990);
        assert_eq!(t.to_rfc3339(), "2024-01-01T09:56:30Z");
        let off = Time::parse_rfc3339("2024-01-01T10:56:30.5+01:00").unwrap();
        assert_eq!(off.unix_secs(), t.unix_secs());
        assert_eq!(off.subsec_nanos(), 500_000_000);
        assert_eq!(Time::ZERO.to_rfc3339(), "0001-01-01T00:00:00Z");
        assert_eq!(
            Time::parse_rfc3339("0001-01-01T00:00:00Z").unwrap(),
            Time::ZERO
        );
        for bad in [
            "",
            "now",
            "2024-02-30T00:00:00Z",
            "2024-01-01T24:00:00Z",
            "2024-01-01 00:00:00Z",
            "2024-01-01T00:00:00",
            "2024-01-01T00:00:00+0100",
            "2024-01-01T00:00:00.Z",
        ] {
            assert!(Time::parse_rfc3339(bad).is_err(), "{bad}");
        }
        assert_eq!(Time::from_k8s(Some("garbage")), Time::ZERO);
        assert_eq!(Time::from_k8s(None), Time::ZERO);
    }

    #[test]
    fn subtraction_saturates_like_go() {
        let now = Time::parse_rfc3339("2026-04-29T00:00:00Z").unwrap();
        assert_eq!(now.since(Time::ZERO), Duration::MAX);
        assert_eq!(Time::ZERO.since(now), Duration::MIN);
        assert_eq!(
            now.plus(Duration::from_hours(1)).since(now),
            Duration::from_hours(1)
        );
    }

    #[test]
    fn civil_dates_round_trip_and_normalise() {
        for secs in [
            -62_135_596_800,
            -1,
            0,
            951_782_400,
            1_709_164_800,
            253_402_300_799,
        ] {
            let t = Time::from_unix(secs, 0);
            assert_eq!(Time::from_civil(t.civil()), t);
        }
        let jan32 = Civil {
            year: 2024,
            month: 1,
            day: 32,
            hour: 0,
            minute: 0,
            second: 0,
        };
        assert_eq!(Time::from_civil(jan32).to_rfc3339(), "2024-02-01T00:00:00Z");
        let month13 = Civil {
            month: 13,
            day: 1,
            ..jan32
        };
        assert_eq!(
            Time::from_civil(month13).to_rfc3339(),
            "2025-01-01T00:00:00Z"
        );
        // 2024-01-01 was a Monday.
        assert_eq!(
            Time::parse_rfc3339("2024-01-01T12:00:00Z")
                .unwrap()
                .weekday(),
            1
        );
    }
}
