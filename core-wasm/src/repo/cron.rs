//! `spec.sync.schedule`: the cron schedules of Repository full syncs, parsed
//! and stepped exactly as upstream's `robfig/cron/v3` `ParseStandard` and
//! `Schedule.Next` do.
//!
//! Written by hand on purpose: upstream's behaviour is robfig's, and the
//! maintained Rust cron crates differ from it where it matters here. The
//! `cron` crate wants a seconds field (6–7 fields), `croner` and
//! `saffron` have their own rules for day-of-month/day-of-week, `?`, names
//! and steps; what is valid or invalid decides between the cron schedule
//! and the fallback frequency, so the parser must accept and reject what
//! robfig does. Robfig's rules kept here:
//!
//! * five fields (minute hour day-of-month month day-of-week), or a
//!   descriptor (`@yearly`, `@annually`, `@monthly`, `@weekly`, `@daily`,
//!   `@midnight`, `@hourly`, `@every <Go duration>`), optionally after a
//!   `TZ=<zone> ` or `CRON_TZ=<zone> ` prefix;
//! * each field a comma list of `*` or `?`, `n`, `a-b`, each with an
//!   optional `/step`; `n/step` means `n-max/step`; month and weekday names
//!   (`jan`, `sun`, case-insensitive); weekday 0–6 (7 is out of range);
//! * when either day field is `*` (or `?`, or a `*/1`), a day must match
//!   both fields; otherwise either;
//! * `Next(t)` is the first matching minute strictly after `t`; no match
//!   within about five years gives the zero time (`None` here).
//!
//! Differences: times are UTC (upstream uses the controller process's local
//! zone, UTC in its container image); a `TZ=` prefix names a zone only if it
//! is `UTC`, `Etc/UTC` or `Local` (there is no zone database in the core),
//! other zones are parse errors, so such schedules fall back to the
//! frequency; a `TZ=` prefix without a following schedule is an error
//! (robfig panics on it).

use super::time::{Civil, Duration, Time};

/// An unusable schedule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CronError {
    /// The schedule text is empty.
    #[error("empty spec string")]
    Empty,
    /// Not five fields.
    #[error("expected exactly 5 fields, found {count}: {fields:?}")]
    FieldCount {
        /// Fields found.
        count: usize,
        /// The fields.
        fields: Vec<String>,
    },
    /// A field that does not parse (robfig's message).
    #[error("{0}")]
    Field(String),
    /// An unknown `@` descriptor, or `@every` with a bad duration.
    #[error("{0}")]
    Descriptor(String),
    /// A time zone the core cannot resolve.
    #[error("provided bad location {0}: unknown time zone {0}")]
    Location(String),
}

/// The latest start of a search for the next run (about year 100000).
const MAX_START_SECS: i64 = 3_093_527_980_800;

/// Set when a field was `*` or `?` (robfig's `starBit`).
const STAR: u64 = 1 << 63;

/// A parsed schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Schedule {
    /// Five fields as bit sets (bit n set = value n matches).
    Spec(Spec),
    /// `@every <duration>`: a constant delay (whole seconds, at least 1s).
    Every(Duration),
}

/// The bit sets of a five-field schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spec {
    minute: u64,
    hour: u64,
    dom: u64,
    month: u64,
    dow: u64,
}

struct Bounds {
    min: u64,
    max: u64,
    names: &'static [(&'static str, u64)],
}

const MINUTES: Bounds = Bounds {
    min: 0,
    max: 59,
    names: &[],
};
const HOURS: Bounds = Bounds {
    min: 0,
    max: 23,
    names: &[],
};
const DOM: Bounds = Bounds {
    min: 1,
    max: 31,
    names: &[],
};
const MONTHS: Bounds = Bounds {
    min: 1,
    max: 12,
    names: &[
        ("jan", 1),
        ("feb", 2),
        ("mar", 3),
        ("apr", 4),
        ("may", 5),
        ("jun", 6),
        ("jul", 7),
        ("aug", 8),
        ("sep", 9),
        ("oct", 10),
        ("nov", 11),
        ("dec", 12),
    ],
};
const DOW: Bounds = Bounds {
    min: 0,
    max: 6,
    names: &[
        ("sun", 0),
        ("mon", 1),
        ("tue", 2),
        ("wed", 3),
        ("thu", 4),
        ("fri", 5),
        ("sat", 6),
    ],
};

/// `cron.ParseStandard`.
pub fn parse_standard(spec: &str) -> Result<Schedule, CronError> {
    if spec.is_empty() {
        return Err(CronError::Empty);
    }
    let mut spec = spec;
    if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
        let eq = spec.find('=').unwrap_or(0);
        let Some(space) = spec.find(' ') else {
            return Err(CronError::Location(spec[eq + 1..].to_string()));
        };
        let zone = spec.get(eq + 1..space).unwrap_or_default();
        if !matches!(zone, "UTC" | "Etc/UTC" | "Local" | "") {
            return Err(CronError::Location(zone.to_string()));
        }
        spec = spec[space..].trim();
    }
    if spec.starts_with('@') {
        return parse_descriptor(spec);
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(CronError::FieldCount {
            count: fields.len(),
            fields: fields.iter().map(|f| f.to_string()).collect(),
        });
    }
    Ok(Schedule::Spec(Spec {
        minute: field(fields[0], &MINUTES)?,
        hour: field(fields[1], &HOURS)?,
        dom: field(fields[2], &DOM)?,
        month: field(fields[3], &MONTHS)?,
        dow: field(fields[4], &DOW)?,
    }))
}

fn all(b: &Bounds) -> u64 {
    bits(b.min, b.max, 1) | STAR
}

fn parse_descriptor(spec: &str) -> Result<Schedule, CronError> {
    let s = |minute, hour, dom, month, dow| {
        Ok(Schedule::Spec(Spec {
            minute,
            hour,
            dom,
            month,
            dow,
        }))
    };
    match spec {
        "@yearly" | "@annually" => return s(1, 1, 1 << 1, 1 << 1, all(&DOW)),
        "@monthly" => return s(1, 1, 1 << 1, all(&MONTHS), all(&DOW)),
        "@weekly" => return s(1, 1, all(&DOM), all(&MONTHS), 1),
        "@daily" | "@midnight" => return s(1, 1, all(&DOM), all(&MONTHS), all(&DOW)),
        "@hourly" => return s(1, all(&HOURS), all(&DOM), all(&MONTHS), all(&DOW)),
        _ => {}
    }
    if let Some(text) = spec.strip_prefix("@every ") {
        let d = Duration::parse(text)
            .map_err(|e| CronError::Descriptor(format!("failed to parse duration {spec}: {e}")))?;
        // robfig: at least a second, rounded down to whole seconds.
        let d = if d < Duration::from_secs(1) {
            Duration::from_secs(1)
        } else {
            d
        };
        let whole = d.as_nanos() - d.as_nanos() % 1_000_000_000;
        return Ok(Schedule::Every(Duration::from_nanos(whole)));
    }
    Err(CronError::Descriptor(format!(
        "unrecognized descriptor: {spec}"
    )))
}

/// One field: a comma-separated list of ranges.
fn field(text: &str, b: &Bounds) -> Result<u64, CronError> {
    let mut out = 0;
    for part in text.split(',') {
        out |= range(part, b)?;
    }
    Ok(out)
}

/// robfig's `getRange`.
fn range(expr: &str, b: &Bounds) -> Result<u64, CronError> {
    let err = |m: String| Err(CronError::Field(m));
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_and_high: Vec<&str> = range_and_step[0].split('-').collect();
    let single = low_and_high.len() == 1;
    let (start, mut end, mut extra);
    if low_and_high[0] == "*" || low_and_high[0] == "?" {
        start = b.min;
        end = b.max;
        extra = STAR;
    } else {
        start = int_or_name(low_and_high[0], b)?;
        end = match low_and_high.len() {
            1 => start,
            2 => int_or_name(low_and_high[1], b)?,
            _ => return err(format!("too many hyphens: {expr}")),
        };
        extra = 0;
    }
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            let step = int(range_and_step[1])?;
            if single {
                end = b.max;
            }
            if step > 1 {
                extra = 0;
            }
            step
        }
        _ => return err(format!("too many slashes: {expr}")),
    };
    if start < b.min {
        return err(format!(
            "beginning of range ({start}) below minimum ({}): {expr}",
            b.min
        ));
    }
    if end > b.max {
        return err(format!(
            "end of range ({end}) above maximum ({}): {expr}",
            b.max
        ));
    }
    if start > end {
        return err(format!(
            "beginning of range ({start}) beyond end of range ({end}): {expr}"
        ));
    }
    if step == 0 {
        return err(format!("step of range should be a positive number: {expr}"));
    }
    Ok(bits(start, end, step) | extra)
}

fn int_or_name(expr: &str, b: &Bounds) -> Result<u64, CronError> {
    let lower = expr.to_ascii_lowercase();
    if let Some((_, v)) = b.names.iter().find(|(n, _)| *n == lower) {
        return Ok(*v);
    }
    int(expr)
}

/// robfig's `mustParseInt`: Go's `strconv.Atoi` (optional sign, decimal
/// digits), negative numbers refused.
fn int(expr: &str) -> Result<u64, CronError> {
    let fail = || CronError::Field(format!("failed to parse int from {expr}: invalid syntax"));
    let (neg, digits) = match expr.as_bytes().first() {
        Some(b'-') => (true, &expr[1..]),
        Some(b'+') => (false, &expr[1..]),
        _ => (false, expr),
    };
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return Err(fail());
    }
    let value: i64 = digits.parse().map_err(|_| {
        CronError::Field(format!(
            "failed to parse int from {expr}: value out of range"
        ))
    })?;
    if neg && value != 0 {
        return Err(CronError::Field(format!(
            "negative number (-{value}) not allowed: {expr}"
        )));
    }
    Ok(value as u64)
}

/// Bits `start..=end` every `step` (all within 0..=63).
fn bits(start: u64, end: u64, step: u64) -> u64 {
    let mut out = 0;
    let mut i = start;
    while i <= end && i < 63 {
        out |= 1 << i;
        i = i.saturating_add(step);
    }
    out
}

impl Schedule {
    /// `Schedule.Next(t)`: the next activation strictly after `t`; `None`
    /// (Go's zero time) when a five-field schedule has none within five
    /// years.
    pub fn next(&self, t: Time) -> Option<Time> {
        match self {
            Schedule::Every(d) => {
                // t + delay, less t's sub-second part.
                let back = Duration::from_nanos(i64::from(t.subsec_nanos()));
                Some(t.plus(d.saturating_sub(back)))
            }
            Schedule::Spec(s) => s.next(t),
        }
    }
}

impl Spec {
    fn day_matches(&self, t: Time) -> bool {
        let c = t.civil();
        let dom = self.dom & (1 << c.day) != 0;
        let dow = self.dow & (1 << t.weekday()) != 0;
        if self.dom & STAR != 0 || self.dow & STAR != 0 {
            dom && dow
        } else {
            dom || dow
        }
    }

    /// robfig's `SpecSchedule.Next`, field by field in UTC (seconds fixed
    /// at 0 for standard schedules).
    fn next(&self, t: Time) -> Option<Time> {
        // Beyond year 100000 (never a Kubernetes time) stepping could
        // saturate and stop advancing: no next run.
        if t.unix_secs() > MAX_START_SECS {
            return None;
        }
        // Start at the next whole second.
        let mut t = Time::from_unix(t.unix_secs().saturating_add(1), 0);
        let mut added = false;
        let year_limit = t.civil().year + 5;
        let with = |t: Time, f: &dyn Fn(&mut Civil)| {
            let mut c = t.civil();
            f(&mut c);
            Time::from_civil(c)
        };
        'wrap: loop {
            if t.civil().year > year_limit {
                return None;
            }
            while self.month & (1 << t.civil().month) == 0 {
                if !added {
                    added = true;
                    t = with(t, &|c| {
                        c.day = 1;
                        c.hour = 0;
                        c.minute = 0;
                        c.second = 0;
                    });
                }
                t = with(t, &|c| c.month += 1);
                if t.civil().month == 1 {
                    continue 'wrap;
                }
            }
            while !self.day_matches(t) {
                if !added {
                    added = true;
                    t = with(t, &|c| {
                        c.hour = 0;
                        c.minute = 0;
                        c.second = 0;
                    });
                }
                t = with(t, &|c| c.day += 1);
                if t.civil().day == 1 {
                    continue 'wrap;
                }
            }
            while self.hour & (1 << t.civil().hour) == 0 {
                if !added {
                    added = true;
                    t = with(t, &|c| {
                        c.minute = 0;
                        c.second = 0;
                    });
                }
                t = t.plus(Duration::from_hours(1));
                if t.civil().hour == 0 {
                    continue 'wrap;
                }
            }
            while self.minute & (1 << t.civil().minute) == 0 {
                if !added {
                    added = true;
                    t = with(t, &|c| c.second = 0);
                }
                t = t.plus(Duration::from_mins(1));
                if t.civil().minute == 0 {
                    continue 'wrap;
                }
            }
            // Seconds: only 0 matches.
            while t.civil().second != 0 {
                added = true;
                t = t.plus(Duration::from_secs(1));
                if t.civil().second == 0 {
                    continue 'wrap;
                }
            }
            return Some(t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Time {
        Time::parse_rfc3339(s).unwrap()
    }

    fn next(spec: &str, from: &str) -> Option<String> {
        parse_standard(spec)
            .unwrap()
            .next(at(from))
            .map(|t| t.to_rfc3339())
    }

    #[test]
    fn next_runs_match_robfig() {
        let cases = [
            (
                "*/5 * * * *",
                "2024-01-01T09:56:30Z",
                "2024-01-01T10:00:00Z",
            ),
            (
                "*/1 * * * *",
                "2024-01-01T09:56:30Z",
                "2024-01-01T09:57:00Z",
            ),
            ("* * * * *", "2024-01-01T09:57:00Z", "2024-01-01T09:58:00Z"),
            (
                "0 */6 * * *",
                "2024-01-01T07:00:00Z",
                "2024-01-01T12:00:00Z",
            ),
            ("0 0 * * *", "2024-01-01T00:00:00Z", "2024-01-02T00:00:00Z"),
            (
                "0 */1 * * *",
                "2024-01-01T10:28:00Z",
                "2024-01-01T11:00:00Z",
            ),
            (
                "30 2 29 2 *",
                "2024-03-01T00:00:00Z",
                "2028-02-29T02:30:00Z",
            ),
            (
                "0 0 1 jan *",
                "2024-06-01T00:00:00Z",
                "2025-01-01T00:00:00Z",
            ),
            // Both day fields restricted: either matches (the 13th or a
            // Friday).
            (
                "0 0 13 * fri",
                "2024-01-01T00:00:00Z",
                "2024-01-05T00:00:00Z",
            ),
            // Day of week restricted, day of month '*': both must match.
            (
                "0 0 * * MON",
                "2024-01-02T00:00:00Z",
                "2024-01-08T00:00:00Z",
            ),
            (
                "15 10 ? * 1-5",
                "2024-01-06T00:00:00Z",
                "2024-01-08T10:15:00Z",
            ),
            (
                "5/20 * * * *",
                "2024-01-01T00:06:00Z",
                "2024-01-01T00:25:00Z",
            ),
            ("@hourly", "2024-01-01T00:06:00Z", "2024-01-01T01:00:00Z"),
            ("@daily", "2024-01-01T00:06:00Z", "2024-01-02T00:00:00Z"),
            ("@weekly", "2024-01-01T00:06:00Z", "2024-01-07T00:00:00Z"),
            ("@monthly", "2024-01-31T00:06:00Z", "2024-02-01T00:00:00Z"),
            ("@yearly", "2024-01-31T00:06:00Z", "2025-01-01T00:00:00Z"),
            (
                "TZ=UTC 0 12 * * *",
                "2024-01-01T12:00:00Z",
                "2024-01-02T12:00:00Z",
            ),
            (
                "@every 1h30m",
                "2024-01-01T00:00:00Z",
                "2024-01-01T01:30:00Z",
            ),
        ];
        for (spec, from, want) in cases {
            assert_eq!(
                next(spec, from).as_deref(),
                Some(want),
                "{spec} after {from}"
            );
        }
    }

    #[test]
    fn impossible_dates_have_no_next_run() {
        assert_eq!(next("0 0 30 2 *", "2024-01-01T00:00:00Z"), None);
        assert_eq!(next("0 0 31 4,6,9,11 *", "2024-01-01T00:00:00Z"), None);
    }

    #[test]
    fn invalid_schedules_are_rejected_as_robfig_does() {
        for bad in [
            "",
            "invalid",
            "invalid cron",
            "* * * *",
            "* * * * * *",
            "60 * * * *",
            "* 24 * * *",
            "* * 0 * *",
            "* * 32 * *",
            "* * * 13 *",
            "* * * * 7",
            "5-1 * * * *",
            "*/0 * * * *",
            "1-2-3 * * * *",
            "1/2/3 * * * *",
            "-1 * * * *",
            "a * * * *",
            "1,,2 * * * *",
            "@reboot",
            "@every",
            "@every 5",
            "TZ=Europe/Paris 0 0 * * *",
            "TZ=UTC",
        ] {
            assert!(parse_standard(bad).is_err(), "{bad:?} should be invalid");
        }
        assert_eq!(
            parse_standard("invalid").unwrap_err().to_string(),
            "expected exactly 5 fields, found 1: [\"invalid\"]"
        );
        assert_eq!(
            parse_standard("60 * * * *").unwrap_err().to_string(),
            "end of range (60) above maximum (59): 60"
        );
    }

    #[test]
    fn extreme_instants_neither_hang_nor_panic() {
        let s = parse_standard("0 * * * *").unwrap();
        assert_eq!(s.next(Time::from_unix(i64::MAX, 0)), None);
        assert!(s.next(Time::from_unix(i64::MIN, 0)).is_some());
        assert!(s.next(Time::ZERO).is_some());
    }

    #[test]
    fn every_rounds_to_whole_seconds_and_at_least_one() {
        assert_eq!(
            parse_standard("@every 1500ms").unwrap(),
            Schedule::Every(Duration::from_secs(1))
        );
        assert_eq!(
            parse_standard("@every 10ms").unwrap(),
            Schedule::Every(Duration::from_secs(1))
        );
        let from = Time::from_unix(1_000, 250_000_000);
        assert_eq!(
            parse_standard("@every 5s").unwrap().next(from),
            Some(Time::from_unix(1_005, 0))
        );
    }

    #[test]
    fn star_with_step_one_keeps_and_semantics() {
        // "*/1" in day-of-month keeps the star bit: a restricted weekday
        // must also match.
        assert_eq!(
            next("0 0 */1 * 1", "2024-01-02T00:00:00Z").as_deref(),
            Some("2024-01-08T00:00:00Z")
        );
        // "*/2" drops it: either field matches (the 3rd is odd).
        assert_eq!(
            next("0 0 */2 * 1", "2024-01-02T00:00:00Z").as_deref(),
            Some("2024-01-03T00:00:00Z")
        );
    }
}
