//! Go's `time` package as starlib's `time.star` shows it to a program:
//! `ParseDuration` and `Duration.String`, `LoadLocation`, `Date` with its
//! normalisation, `Time.Format` and `time.Parse`/`ParseInLocation` with
//! Go's layouts (the reference time `Mon Jan 2 15:04:05 MST 2006`), and
//! their error texts.
//!
//! Written out here because no crate speaks Go's layouts; the zone rules
//! come from jiff's bundled database. An instant is seconds and
//! nanoseconds since the Unix epoch over the whole `i64` range, as Go's
//! is, so year 0 and negative years format as Go formats them. `Local` is
//! UTC, as it is in the catalog's function image, which sets no zone.

use jiff::tz::TimeZone;

/// Nanoseconds in a second.
pub const SECOND: i64 = 1_000_000_000;

/// RFC 3339, `parse_time`'s default layout.
pub const RFC3339: &str = "2006-01-02T15:04:05Z07:00";

/// The layout of Go's `Time.String`.
const STRING_LAYOUT: &str = "2006-01-02 15:04:05.999999999 -0700 MST";

pub use pv_core::time::quote;

// ------------------------------------------------------------ durations --

/// Go's `time.ParseDuration`, in nanoseconds.
pub fn parse_duration(text: &str) -> Result<i64, String> {
    pv_core::time::Duration::parse(text)
        .map(pv_core::time::Duration::as_nanos)
        .map_err(|e| e.to_string())
}

/// Go's `Duration.String`: `72h3m0.5s`, `1.5ms`, `0s`.
pub fn duration_string(d: i64) -> String {
    pv_core::time::Duration::from_nanos(d).to_string()
}

// ------------------------------------------------------------ locations --

/// Where a time is shown: Go's `*time.Location`.
#[derive(Debug, Clone, PartialEq)]
pub enum Location {
    /// `UTC`.
    Utc,
    /// `Local`: UTC named `Local`.
    Local,
    /// A zone of the database, by its name.
    Zone(String, TimeZone),
    /// A zone parsing made up: a name (maybe empty) and an offset.
    Fixed(String, i32),
}

impl Location {
    /// Go's `time.LoadLocation`.
    pub fn load(name: &str) -> Result<Location, String> {
        match name {
            "" | "UTC" => return Ok(Location::Utc),
            "Local" => return Ok(Location::Local),
            _ => {}
        }
        if name.contains("..") || name.starts_with('/') || name.starts_with('\\') {
            return Err("time: invalid location name".to_string());
        }
        match jiff::tz::db().get(name) {
            // The database is case-insensitive; Go's file lookup is not.
            Ok(tz) if tz.iana_name() == Some(name) => Ok(Location::Zone(name.to_string(), tz)),
            _ => Err(format!("unknown time zone {name}")),
        }
    }

    /// The zone's abbreviation and offset (seconds east of UTC) at the
    /// instant `unix`.
    pub fn lookup(&self, unix: i64) -> (String, i32) {
        match self {
            Location::Utc | Location::Local => ("UTC".to_string(), 0),
            Location::Fixed(name, offset) => (name.clone(), *offset),
            Location::Zone(_, tz) => {
                let at = jiff::Timestamp::from_second(unix.clamp(
                    jiff::Timestamp::MIN.as_second(),
                    jiff::Timestamp::MAX.as_second(),
                ))
                .unwrap_or(jiff::Timestamp::UNIX_EPOCH);
                let info = tz.to_offset_info(at);
                (info.abbreviation().to_string(), info.offset().seconds())
            }
        }
    }

    /// The offset of the zone called `name` near the instant `unix`, if
    /// this location has one (Go's `lookupName`).
    fn lookup_name(&self, name: &str, unix: i64) -> Option<i32> {
        let (abbreviation, offset) = self.lookup(unix);
        if abbreviation == name {
            let (again, offset_then) = self.lookup(unix - i64::from(offset));
            return Some(if again == name { offset_then } else { offset });
        }
        // The zone's other abbreviation, half a year away.
        let (other, other_offset) = self.lookup(unix + 182 * 86_400);
        (other == name).then_some(other_offset)
    }
}

impl std::fmt::Display for Location {
    /// Go's `Location.String`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Utc => f.write_str("UTC"),
            Location::Local => f.write_str("Local"),
            Location::Zone(name, _) | Location::Fixed(name, _) => f.write_str(name),
        }
    }
}

// ---------------------------------------------------------------- times --

use pv_core::time::{civil_from_days, days_from_civil};

fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in(month: i64, year: i64) -> i64 {
    pv_core::time::days_in_month(year, month)
}

const LONG_MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const LONG_DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

/// A moment and where it is shown: Go's `time.Time` (without the
/// monotonic reading).
#[derive(Debug, Clone, PartialEq)]
pub struct GoTime {
    /// Seconds since the Unix epoch.
    pub unix: i64,
    /// Nanoseconds within the second, `0..1e9`.
    pub nsec: u32,
    /// Where it is shown.
    pub loc: Location,
}

/// The civil fields of a time in its location.
#[derive(Debug, Clone, PartialEq)]
pub struct Civil {
    /// The year (astronomical: 0 is 1 BC).
    pub year: i64,
    /// `1..=12`.
    pub month: u32,
    /// `1..=31`.
    pub day: u32,
    /// `0..24`.
    pub hour: u32,
    /// `0..60`.
    pub minute: u32,
    /// `0..60`.
    pub second: u32,
    /// `0..7`, Sunday first.
    pub weekday: u32,
    /// `1..=366`.
    pub yday: u32,
    /// The zone's abbreviation.
    pub zone: String,
    /// Seconds east of UTC.
    pub offset: i32,
}

impl GoTime {
    /// Go's `time.Unix(sec, nsec)`, in `Local`.
    pub fn from_unix(sec: i64, nsec: i64) -> GoTime {
        let unix = sec.wrapping_add(nsec.div_euclid(SECOND));
        GoTime {
            unix,
            nsec: nsec.rem_euclid(SECOND) as u32,
            loc: Location::Local,
        }
    }

    /// Go's `time.Date`: the fields may be out of their ranges and are
    /// carried (October 32 is November 1).
    #[allow(clippy::too_many_arguments)]
    pub fn date(
        year: i64,
        month: i64,
        day: i64,
        hour: i64,
        minute: i64,
        second: i64,
        nsec: i64,
        loc: Location,
    ) -> GoTime {
        let m = month - 1;
        let year = year + m.div_euclid(12);
        let month = m.rem_euclid(12) + 1;
        let days = days_from_civil(year, month, 1) + day - 1;
        let local = days
            .wrapping_mul(86_400)
            .wrapping_add(hour * 3600 + minute * 60 + second)
            .wrapping_add(nsec.div_euclid(SECOND));
        let (_, guess) = loc.lookup(local);
        let mut unix = local - i64::from(guess);
        let (_, offset) = loc.lookup(unix);
        if offset != guess {
            unix = local - i64::from(offset);
        }
        GoTime {
            unix,
            nsec: nsec.rem_euclid(SECOND) as u32,
            loc,
        }
    }

    /// The same instant shown in `loc` (Go's `Time.In`).
    pub fn in_location(&self, loc: Location) -> GoTime {
        GoTime {
            loc,
            ..self.clone()
        }
    }

    /// Nanoseconds since the epoch, wrapping as Go's does.
    pub fn unix_nano(&self) -> i64 {
        self.unix
            .wrapping_mul(SECOND)
            .wrapping_add(i64::from(self.nsec))
    }

    /// Whether this is Go's zero time, January 1 of year 1, UTC.
    pub fn is_zero(&self) -> bool {
        self.unix == -62_135_596_800 && self.nsec == 0
    }

    /// The time `d` nanoseconds later.
    pub fn add(&self, d: i64) -> GoTime {
        let total = i64::from(self.nsec) + d.rem_euclid(SECOND);
        GoTime {
            unix: self
                .unix
                .wrapping_add(d.div_euclid(SECOND))
                .wrapping_add(total / SECOND),
            nsec: (total % SECOND) as u32,
            loc: self.loc.clone(),
        }
    }

    /// `self - other` in nanoseconds, saturating as Go's `Sub`.
    pub fn sub(&self, other: &GoTime) -> i64 {
        let secs = i128::from(self.unix) - i128::from(other.unix);
        let ns = secs * i128::from(SECOND) + i128::from(self.nsec) - i128::from(other.nsec);
        ns.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
    }

    /// The civil fields in the time's location.
    pub fn civil(&self) -> Civil {
        let (zone, offset) = self.loc.lookup(self.unix);
        let local = self.unix.wrapping_add(i64::from(offset));
        let days = local.div_euclid(86_400);
        let secs = local.rem_euclid(86_400) as u32;
        let (year, month, day) = civil_from_days(days);
        Civil {
            year,
            month: month as u32,
            day: day as u32,
            hour: secs / 3600,
            minute: secs / 60 % 60,
            second: secs % 60,
            weekday: (days + 4).rem_euclid(7) as u32,
            yday: (days - days_from_civil(year, 1, 1) + 1) as u32,
            zone,
            offset,
        }
    }

    /// Go's `Time.Format(layout)`.
    pub fn format(&self, layout: &str) -> String {
        let c = self.civil();
        let mut out = String::new();
        let mut rest = layout;
        loop {
            let (prefix, chunk, suffix) = next_chunk(rest);
            out.push_str(prefix);
            let Some(chunk) = chunk else { break };
            rest = suffix;
            format_chunk(&mut out, chunk, &c, self.nsec);
        }
        out
    }
}

impl std::fmt::Display for GoTime {
    /// Go's `Time.String`: `2006-01-02 15:04:05.999999999 -0700 MST`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.format(STRING_LAYOUT))
    }
}

// -------------------------------------------------------------- layouts --

/// One element of a layout (Go's `std*` constants).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    LongMonth,
    Month,
    NumMonth,
    ZeroMonth,
    LongWeekDay,
    WeekDay,
    Day,
    UnderDay,
    ZeroDay,
    UnderYearDay,
    ZeroYearDay,
    Hour,
    Hour12,
    ZeroHour12,
    Minute,
    ZeroMinute,
    Second,
    ZeroSecond,
    LongYear,
    Year,
    Pm,
    LowerPm,
    Tz,
    /// `Z0700` and its kin: `Z` for UTC, else like [`Chunk::Num`].
    Iso(TzShape),
    /// `-0700` and its kin.
    Num(TzShape),
    /// `.000` (`true`: `.999`), the digit count and the separator.
    Frac(bool, usize, u8),
}

/// How an offset is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TzShape {
    /// `0700`
    Plain,
    /// `07:00`
    Colon,
    /// `07`
    Short,
    /// `070000`
    Seconds,
    /// `07:00:00`
    ColonSeconds,
}

const TZ_SHAPES: [(&str, TzShape); 5] = [
    ("070000", TzShape::Seconds),
    ("07:00:00", TzShape::ColonSeconds),
    ("0700", TzShape::Plain),
    ("07:00", TzShape::Colon),
    ("07", TzShape::Short),
];

/// Go's `nextStdChunk`: the text before the first element, the element,
/// and the layout after it.
fn next_chunk(layout: &str) -> (&str, Option<Chunk>, &str) {
    let b = layout.as_bytes();
    let at = |i: usize, s: &str| layout.get(i..).is_some_and(|r| r.starts_with(s));
    let digit = |i: usize| b.get(i).is_some_and(u8::is_ascii_digit);
    for i in 0..b.len() {
        let found: Option<(Chunk, usize)> = match b[i] {
            b'J' if at(i, "January") => Some((Chunk::LongMonth, 7)),
            b'J' if at(i, "Jan") => Some((Chunk::Month, 3)),
            b'M' if at(i, "Monday") => Some((Chunk::LongWeekDay, 6)),
            b'M' if at(i, "Mon") => Some((Chunk::WeekDay, 3)),
            b'M' if at(i, "MST") => Some((Chunk::Tz, 3)),
            b'0' if matches!(b.get(i + 1), Some(b'1'..=b'6')) => Some((
                [
                    Chunk::ZeroMonth,
                    Chunk::ZeroDay,
                    Chunk::ZeroHour12,
                    Chunk::ZeroMinute,
                    Chunk::ZeroSecond,
                    Chunk::Year,
                ][usize::from(b[i + 1] - b'1')],
                2,
            )),
            b'0' if at(i, "002") => Some((Chunk::ZeroYearDay, 3)),
            b'1' if at(i, "15") => Some((Chunk::Hour, 2)),
            b'1' => Some((Chunk::NumMonth, 1)),
            b'2' if at(i, "2006") => Some((Chunk::LongYear, 4)),
            b'2' => Some((Chunk::Day, 1)),
            b'_' if at(i, "_2006") => {
                // A literal `_` and then the year.
                return (&layout[..i + 1], Some(Chunk::LongYear), &layout[i + 5..]);
            }
            b'_' if at(i, "_2") => Some((Chunk::UnderDay, 2)),
            b'_' if at(i, "__2") => Some((Chunk::UnderYearDay, 3)),
            b'3' => Some((Chunk::Hour12, 1)),
            b'4' => Some((Chunk::Minute, 1)),
            b'5' => Some((Chunk::Second, 1)),
            b'P' if at(i, "PM") => Some((Chunk::Pm, 2)),
            b'p' if at(i, "pm") => Some((Chunk::LowerPm, 2)),
            b'-' => TZ_SHAPES
                .iter()
                .find(|(s, _)| at(i + 1, s))
                .map(|(s, shape)| (Chunk::Num(*shape), s.len() + 1)),
            b'Z' => TZ_SHAPES
                .iter()
                .find(|(s, _)| at(i + 1, s))
                .map(|(s, shape)| (Chunk::Iso(*shape), s.len() + 1)),
            c @ (b'.' | b',') if matches!(b.get(i + 1), Some(b'0' | b'9')) => {
                let ch = b[i + 1];
                let mut j = i + 1;
                while b.get(j) == Some(&ch) {
                    j += 1;
                }
                (!digit(j)).then_some((Chunk::Frac(ch == b'9', j - i - 1, c), j - i))
            }
            _ => None,
        };
        if let Some((chunk, len)) = found {
            return (&layout[..i], Some(chunk), &layout[i + len..]);
        }
    }
    (layout, None, "")
}

fn pad(out: &mut String, v: i64, width: usize) {
    if v < 0 {
        out.push('-');
    }
    out.push_str(&format!("{:0width$}", v.unsigned_abs()));
}

fn format_chunk(out: &mut String, chunk: Chunk, c: &Civil, nsec: u32) {
    let hour12 = match c.hour % 12 {
        0 => 12,
        h => h,
    };
    match chunk {
        Chunk::Year => pad(out, c.year.rem_euclid(100), 2),
        Chunk::LongYear => pad(out, c.year, 4),
        Chunk::Month => out.push_str(&LONG_MONTHS[c.month as usize - 1][..3]),
        Chunk::LongMonth => out.push_str(LONG_MONTHS[c.month as usize - 1]),
        Chunk::NumMonth => pad(out, c.month.into(), 0),
        Chunk::ZeroMonth => pad(out, c.month.into(), 2),
        Chunk::WeekDay => out.push_str(&LONG_DAYS[c.weekday as usize][..3]),
        Chunk::LongWeekDay => out.push_str(LONG_DAYS[c.weekday as usize]),
        Chunk::Day => pad(out, c.day.into(), 0),
        Chunk::UnderDay => out.push_str(&format!("{:>2}", c.day)),
        Chunk::ZeroDay => pad(out, c.day.into(), 2),
        Chunk::UnderYearDay => out.push_str(&format!("{:>3}", c.yday)),
        Chunk::ZeroYearDay => pad(out, c.yday.into(), 3),
        Chunk::Hour => pad(out, c.hour.into(), 2),
        Chunk::Hour12 => pad(out, hour12.into(), 0),
        Chunk::ZeroHour12 => pad(out, hour12.into(), 2),
        Chunk::Minute => pad(out, c.minute.into(), 0),
        Chunk::ZeroMinute => pad(out, c.minute.into(), 2),
        Chunk::Second => pad(out, c.second.into(), 0),
        Chunk::ZeroSecond => pad(out, c.second.into(), 2),
        Chunk::Pm => out.push_str(if c.hour >= 12 { "PM" } else { "AM" }),
        Chunk::LowerPm => out.push_str(if c.hour >= 12 { "pm" } else { "am" }),
        Chunk::Iso(_) if c.offset == 0 => out.push('Z'),
        Chunk::Iso(shape) | Chunk::Num(shape) => {
            let abs = c.offset.unsigned_abs();
            out.push(if c.offset < 0 { '-' } else { '+' });
            out.push_str(&format!("{:02}", abs / 3600));
            let colon = matches!(shape, TzShape::Colon | TzShape::ColonSeconds);
            if shape != TzShape::Short {
                if colon {
                    out.push(':');
                }
                out.push_str(&format!("{:02}", abs / 60 % 60));
            }
            if matches!(shape, TzShape::Seconds | TzShape::ColonSeconds) {
                if colon {
                    out.push(':');
                }
                out.push_str(&format!("{:02}", abs % 60));
            }
        }
        Chunk::Tz if !c.zone.is_empty() => out.push_str(&c.zone),
        Chunk::Tz => {
            let minutes = c.offset / 60;
            out.push(if minutes < 0 { '-' } else { '+' });
            let m = minutes.unsigned_abs();
            out.push_str(&format!("{:02}{:02}", m / 60, m % 60));
        }
        Chunk::Frac(trim, digits, sep) => {
            let all = format!("{nsec:09}");
            let mut text = &all[..digits.min(9)];
            if trim {
                text = text.trim_end_matches('0');
                if text.is_empty() {
                    return;
                }
            }
            out.push(char::from(sep));
            out.push_str(text);
        }
    }
}

// -------------------------------------------------------------- parsing --

/// Why a value does not match its layout (Go's `ParseError`).
fn parse_error(layout: &str, value: &str, layout_elem: &str, value_elem: &str) -> String {
    format!(
        "parsing time {} as {}: cannot parse {} as {}",
        quote(value),
        quote(layout),
        quote(value_elem),
        quote(layout_elem)
    )
}

/// Go's `skip`: the value after the layout's literal `prefix`, spaces
/// matching any run of spaces.
fn skip<'a>(mut value: &'a str, mut prefix: &str) -> Option<&'a str> {
    while let Some(p) = prefix.chars().next() {
        if p == ' ' {
            if value.chars().next().is_some_and(|c| c != ' ') {
                return None;
            }
            prefix = prefix.trim_start_matches(' ');
            value = value.trim_start_matches(' ');
            continue;
        }
        if !value.starts_with(p) {
            return None;
        }
        prefix = &prefix[p.len_utf8()..];
        value = &value[p.len_utf8()..];
    }
    Some(value)
}

/// Go's `getnum`: one or two digits (exactly two when `fixed`).
fn getnum(s: &str, fixed: bool) -> Option<(i64, &str)> {
    let b = s.as_bytes();
    if !b.first().is_some_and(u8::is_ascii_digit) {
        return None;
    }
    if !b.get(1).is_some_and(u8::is_ascii_digit) {
        return (!fixed).then(|| (i64::from(b[0] - b'0'), &s[1..]));
    }
    Some((
        i64::from(b[0] - b'0') * 10 + i64::from(b[1] - b'0'),
        &s[2..],
    ))
}

/// Go's `getnum3`: one to three digits (exactly three when `fixed`).
fn getnum3(s: &str, fixed: bool) -> Option<(i64, &str)> {
    let n = s.bytes().take(3).take_while(u8::is_ascii_digit).count();
    if n == 0 || (fixed && n != 3) {
        return None;
    }
    Some((s[..n].parse().ok()?, &s[n..]))
}

/// Go's `lookup`: the name of `table` the value starts with, ignoring
/// ASCII case.
fn lookup<'a>(table: &[&str], short: bool, value: &'a str) -> Option<(i64, &'a str)> {
    table.iter().enumerate().find_map(|(i, name)| {
        let name = if short { &name[..3] } else { name };
        let head = value.get(..name.len())?;
        head.eq_ignore_ascii_case(name)
            .then(|| (i as i64, &value[name.len()..]))
    })
}

/// Go's `parseNanoseconds` of `value[..n]`, which starts with the point.
fn nanoseconds(value: &str, n: usize) -> Option<i64> {
    let n = n.min(10);
    if !matches!(value.as_bytes().first(), Some(b'.' | b',')) {
        return None;
    }
    let digits = value.get(1..n)?;
    if !digits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let ns: i64 = if digits.is_empty() {
        0
    } else {
        digits.parse().ok()?
    };
    Some(ns * 10i64.pow((10 - n) as u32))
}

/// Go's `parseSignedOffset`: the length of `+hh` or `-hh` (hours ≤ 23).
fn signed_offset_len(value: &str) -> usize {
    let b = value.as_bytes();
    if !matches!(b.first(), Some(b'+' | b'-')) {
        return 0;
    }
    let n = b[1..].iter().take_while(|c| c.is_ascii_digit()).count();
    if n == 0 || n > 2 {
        return 0;
    }
    match value[1..1 + n].parse::<u32>() {
        Ok(h) if h <= 23 => 1 + n,
        _ => 0,
    }
}

/// Go's `parseTimeZone`: the length of a zone abbreviation at the start.
fn zone_len(value: &str) -> Option<usize> {
    let b = value.as_bytes();
    if b.len() < 3 {
        return None;
    }
    if value.starts_with("ChST") || value.starts_with("MeST") {
        return Some(4);
    }
    if let Some(rest) = value.strip_prefix("GMT") {
        return Some(3 + signed_offset_len(rest));
    }
    if matches!(b[0], b'+' | b'-') {
        return Some(signed_offset_len(value)).filter(|n| *n > 0);
    }
    let upper = b
        .iter()
        .take(6)
        .take_while(|c| c.is_ascii_uppercase())
        .count();
    match upper {
        3 => Some(3),
        4 if b[3] == b'T' || value.starts_with("WITA") => Some(4),
        5 if b[4] == b'T' => Some(5),
        _ => None,
    }
}

/// Go's `time.ParseInLocation(layout, value, loc)` (`time.Parse` is the
/// same with UTC).
pub fn parse(layout: &str, value: &str, loc: &Location) -> Result<GoTime, String> {
    let (alayout, avalue) = (layout, value);
    let mut layout = layout;
    let mut value = value;
    let (mut am, mut pm) = (false, false);
    let (mut year, mut month, mut day, mut yday) = (0i64, -1i64, -1i64, -1i64);
    let (mut hour, mut min, mut sec, mut nsec) = (0i64, 0i64, 0i64, 0i64);
    let mut utc = false;
    let mut zone_offset: Option<i64> = None;
    let mut zone_name = String::new();
    loop {
        let (prefix, chunk, suffix) = next_chunk(layout);
        let elem = &layout[prefix.len()..layout.len() - suffix.len()];
        value = skip(value, prefix).ok_or_else(|| parse_error(alayout, avalue, prefix, value))?;
        let Some(chunk) = chunk else {
            if !value.is_empty() {
                return Err(format!(
                    "parsing time {}: extra text: {}",
                    quote(avalue),
                    quote(value)
                ));
            }
            break;
        };
        layout = suffix;
        let hold = value;
        let mut range: Option<&str> = None;
        let ok: Option<()> = (|| {
            match chunk {
                Chunk::Year => {
                    let p = value.get(..2)?;
                    year = p
                        .parse()
                        .ok()
                        .filter(|_| p.bytes().all(|c| c.is_ascii_digit()))?;
                    year += if year >= 69 { 1900 } else { 2000 };
                    value = &value[2..];
                }
                Chunk::LongYear => {
                    let p = value.get(..4)?;
                    if !p.bytes().all(|c| c.is_ascii_digit()) {
                        return None;
                    }
                    year = p.parse().ok()?;
                    value = &value[4..];
                }
                Chunk::Month | Chunk::LongMonth => {
                    let (m, rest) = lookup(&LONG_MONTHS, chunk == Chunk::Month, value)?;
                    month = m + 1;
                    value = rest;
                }
                Chunk::NumMonth | Chunk::ZeroMonth => {
                    let (m, rest) = getnum(value, chunk == Chunk::ZeroMonth)?;
                    if !(1..=12).contains(&m) {
                        range = Some("month");
                    }
                    month = m;
                    value = rest;
                }
                Chunk::WeekDay | Chunk::LongWeekDay => {
                    value = lookup(&LONG_DAYS, chunk == Chunk::WeekDay, value)?.1;
                }
                Chunk::Day | Chunk::UnderDay | Chunk::ZeroDay => {
                    if chunk == Chunk::UnderDay {
                        value = value.strip_prefix(' ').unwrap_or(value);
                    }
                    (day, value) = getnum(value, chunk == Chunk::ZeroDay)?;
                }
                Chunk::UnderYearDay | Chunk::ZeroYearDay => {
                    if chunk == Chunk::UnderYearDay {
                        for _ in 0..2 {
                            value = value.strip_prefix(' ').unwrap_or(value);
                        }
                    }
                    (yday, value) = getnum3(value, chunk == Chunk::ZeroYearDay)?;
                }
                Chunk::Hour => {
                    (hour, value) = getnum(value, false)?;
                    if !(0..24).contains(&hour) {
                        range = Some("hour");
                    }
                }
                Chunk::Hour12 | Chunk::ZeroHour12 => {
                    (hour, value) = getnum(value, chunk == Chunk::ZeroHour12)?;
                    if !(0..=12).contains(&hour) {
                        range = Some("hour");
                    }
                }
                Chunk::Minute | Chunk::ZeroMinute => {
                    (min, value) = getnum(value, chunk == Chunk::ZeroMinute)?;
                    if !(0..60).contains(&min) {
                        range = Some("minute");
                    }
                }
                Chunk::Second | Chunk::ZeroSecond => {
                    (sec, value) = getnum(value, chunk == Chunk::ZeroSecond)?;
                    if !(0..60).contains(&sec) {
                        range = Some("second");
                        return Some(());
                    }
                    // A fraction the layout does not ask for.
                    let b = value.as_bytes();
                    if b.len() >= 2
                        && matches!(b[0], b'.' | b',')
                        && b[1].is_ascii_digit()
                        && !matches!(next_chunk(layout).1, Some(Chunk::Frac(..)))
                    {
                        let n = 1 + b[1..].iter().take_while(|c| c.is_ascii_digit()).count();
                        nsec = nanoseconds(value, n)?;
                        value = &value[n..];
                    }
                }
                Chunk::Pm | Chunk::LowerPm => {
                    let p = value.get(..2)?;
                    let (a, b) = if chunk == Chunk::Pm {
                        ("AM", "PM")
                    } else {
                        ("am", "pm")
                    };
                    if p == a {
                        am = true;
                    } else if p == b {
                        pm = true;
                    } else {
                        return None;
                    }
                    value = &value[2..];
                }
                Chunk::Iso(_) if value.starts_with('Z') => {
                    value = &value[1..];
                    utc = true;
                }
                Chunk::Iso(shape) | Chunk::Num(shape) => {
                    let b = value.as_bytes();
                    let (h, m, s, len) = match shape {
                        TzShape::Colon if b.len() >= 6 && b[3] == b':' => (1..3, 4..6, None, 6),
                        TzShape::Short if b.len() >= 3 => (1..3, 0..0, None, 3),
                        TzShape::ColonSeconds if b.len() >= 9 && b[3] == b':' && b[6] == b':' => {
                            (1..3, 4..6, Some(7..9), 9)
                        }
                        TzShape::Seconds if b.len() >= 7 => (1..3, 3..5, Some(5..7), 7),
                        TzShape::Plain if b.len() >= 5 => (1..3, 3..5, None, 5),
                        _ => return None,
                    };
                    let two = |r: std::ops::Range<usize>| -> Option<i64> {
                        if r.is_empty() {
                            return Some(0);
                        }
                        getnum(value.get(r)?, true).map(|(n, _)| n)
                    };
                    let (hr, mm) = (two(h)?, two(m)?);
                    let ss = match s {
                        Some(r) => two(r)?,
                        None => 0,
                    };
                    if hr > 24 {
                        range = Some("time zone offset hour");
                    }
                    if mm > 60 {
                        range = Some("time zone offset minute");
                    }
                    if ss > 60 {
                        range = Some("time zone offset second");
                    }
                    let offset = (hr * 60 + mm) * 60 + ss;
                    zone_offset = Some(match b[0] {
                        b'+' => offset,
                        b'-' => -offset,
                        _ => return None,
                    });
                    value = &value[len..];
                }
                Chunk::Tz => {
                    if value.starts_with("UTC") {
                        utc = true;
                        value = &value[3..];
                        return Some(());
                    }
                    let n = zone_len(value)?;
                    zone_name = value[..n].to_string();
                    value = &value[n..];
                }
                Chunk::Frac(false, digits, _) => {
                    let n = 1 + digits;
                    if value.len() < n {
                        return None;
                    }
                    nsec = nanoseconds(value, n)?;
                    value = &value[n..];
                }
                Chunk::Frac(true, ..) => {
                    let b = value.as_bytes();
                    if b.len() < 2 || !matches!(b[0], b'.' | b',') || !b[1].is_ascii_digit() {
                        return Some(());
                    }
                    let n = 1 + b[1..].iter().take_while(|c| c.is_ascii_digit()).count();
                    nsec = nanoseconds(value, n)?;
                    value = &value[n..];
                }
            }
            Some(())
        })();
        if let Some(what) = range {
            return Err(format!(
                "parsing time {}: {what} out of range",
                quote(avalue)
            ));
        }
        if ok.is_none() {
            return Err(parse_error(alayout, avalue, elem, hold));
        }
    }
    if pm && hour < 12 {
        hour += 12;
    } else if am && hour == 12 {
        hour = 0;
    }
    let out_of_range = |what: &str| format!("parsing time {}: {what}", quote(avalue));
    if yday >= 0 {
        let mut d = 0;
        let mut m = 0;
        if is_leap(year) {
            if yday == 31 + 29 {
                m = 2;
                d = 29;
            } else if yday > 31 + 29 {
                yday -= 1;
            }
        }
        if !(1..=365).contains(&yday) {
            return Err(out_of_range("day-of-year out of range"));
        }
        if m == 0 {
            let before = |m: i64| -> i64 { (1..m).map(|k| days_in(k, 1)).sum() };
            m = (yday - 1) / 31 + 1;
            if before(m + 1) < yday {
                m += 1;
            }
            d = yday - before(m);
        }
        if month >= 0 && month != m {
            return Err(out_of_range("day-of-year does not match month"));
        }
        month = m;
        if day >= 0 && day != d {
            return Err(out_of_range("day-of-year does not match day"));
        }
        day = d;
    } else {
        if month < 0 {
            month = 1;
        }
        if day < 0 {
            day = 1;
        }
    }
    if day < 1 || day > days_in(month, year) {
        return Err(out_of_range("day out of range"));
    }
    let at = |loc: Location| GoTime::date(year, month, day, hour, min, sec, nsec, loc);
    if utc {
        return Ok(at(Location::Utc));
    }
    if let Some(offset) = zone_offset {
        let mut t = at(Location::Utc);
        t.unix -= offset;
        let (name, local_offset) = loc.lookup(t.unix);
        if i64::from(local_offset) == offset && (zone_name.is_empty() || name == zone_name) {
            return Ok(t.in_location(loc.clone()));
        }
        return Ok(t.in_location(Location::Fixed(zone_name, offset as i32)));
    }
    if !zone_name.is_empty() {
        let mut t = at(Location::Utc);
        if let Some(offset) = loc.lookup_name(&zone_name, t.unix) {
            t.unix -= i64::from(offset);
            return Ok(t.in_location(loc.clone()));
        }
        let offset = match zone_name.strip_prefix("GMT") {
            Some(hours) if !hours.is_empty() => hours.parse::<i32>().unwrap_or(0) * 3600,
            _ => 0,
        };
        return Ok(t.in_location(Location::Fixed(zone_name, offset)));
    }
    Ok(at(loc.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_and_print_as_go_does() {
        for (text, ns, printed) in [
            ("0", 0, "0s"),
            ("1h30m", 5_400 * SECOND, "1h30m0s"),
            ("-1.5h", -5_400 * SECOND, "-1h30m0s"),
            ("300ms", 300_000_000, "300ms"),
            ("1.5us", 1_500, "1.5\u{b5}s"),
            ("1\u{3bc}s", 1_000, "1\u{b5}s"),
            ("2h45m0.5s", 9_900 * SECOND + 500_000_000, "2h45m0.5s"),
            (".5s", 500_000_000, "500ms"),
            ("1ns", 1, "1ns"),
            ("+3m", 180 * SECOND, "3m0s"),
        ] {
            assert_eq!(parse_duration(text), Ok(ns), "{text}");
            assert_eq!(duration_string(ns), printed, "{text}");
        }
        assert_eq!(duration_string(i64::MIN), "-2562047h47m16.854775808s");
        for (text, err) in [
            ("", "time: invalid duration \"\""),
            ("1", "time: missing unit in duration \"1\""),
            ("1d", "time: unknown unit \"d\" in duration \"1d\""),
            (".s", "time: invalid duration \".s\""),
            ("9999999999h", "time: invalid duration \"9999999999h\""),
            (
                "3\u{e9}s",
                "time: unknown unit \"\\xc3\\xa9s\" in duration \"3\\xc3\\xa9s\"",
            ),
        ] {
            assert_eq!(parse_duration(text), Err(err.to_string()), "{text}");
        }
    }

    #[test]
    fn times_print_and_carry_their_fields_as_go_does() {
        let t = GoTime::date(2009, 11, 10, 23, 0, 0, 0, Location::Utc);
        assert_eq!(t.to_string(), "2009-11-10 23:00:00 +0000 UTC");
        assert_eq!(t.unix, 1_257_894_000);
        // October 32 is November 1; month 0 and day 0 carry backwards.
        let carried = GoTime::date(2021, 10, 32, 0, 0, 0, 0, Location::Utc);
        assert_eq!(carried.format("2006-01-02"), "2021-11-01");
        let zero = GoTime::date(0, 0, 0, 0, 0, 0, 0, Location::Utc);
        assert_eq!(zero.to_string(), "-0001-11-30 00:00:00 +0000 UTC");
        assert!(GoTime::date(1, 1, 1, 0, 0, 0, 0, Location::Utc).is_zero());
        let ny = Location::load("America/New_York").unwrap();
        let t = GoTime::date(2021, 3, 22, 23, 20, 50, 520_000_000, ny.clone());
        assert_eq!(t.to_string(), "2021-03-22 23:20:50.52 -0400 EDT");
        assert_eq!(
            t.in_location(Location::Utc).to_string(),
            "2021-03-23 03:20:50.52 +0000 UTC"
        );
        let winter = GoTime::date(2021, 1, 2, 3, 4, 5, 0, ny);
        assert_eq!(
            winter.format("Mon Jan _2 15:04:05 MST 2006 | Monday January 2 3:4:5 pm -07:00 Z0700 .000 ,999 002"),
            "Sat Jan  2 03:04:05 EST 2021 | Saturday January 2 3:4:5 am -05:00 -0500 .000  002"
        );
        assert_eq!(
            Location::load("Mars/Olympus"),
            Err("unknown time zone Mars/Olympus".into())
        );
        assert_eq!(
            Location::load("america/new_york"),
            Err("unknown time zone america/new_york".into())
        );
        assert_eq!(
            Location::load("../etc"),
            Err("time: invalid location name".into())
        );
        assert_eq!(
            GoTime::from_unix(0, -1).to_string(),
            "1969-12-31 23:59:59.999999999 +0000 UTC"
        );
    }

    #[test]
    fn layouts_parse_as_go_parses_them() {
        let utc = Location::Utc;
        let t = parse(RFC3339, "2021-03-22T23:20:50.52Z", &utc).unwrap();
        assert_eq!(t.to_string(), "2021-03-22 23:20:50.52 +0000 UTC");
        let t = parse(RFC3339, "2021-03-22T23:20:50+01:00", &utc).unwrap();
        assert_eq!(t.to_string(), "2021-03-22 23:20:50 +0100 +0100");
        assert_eq!(
            t.unix,
            parse(RFC3339, "2021-03-22T22:20:50Z", &utc).unwrap().unix
        );
        let t = parse(
            "Jan 2, 2006 at 3:04pm (MST)",
            "Feb 3, 2013 at 7:54pm (PST)",
            &utc,
        )
        .unwrap();
        assert_eq!(t.to_string(), "2013-02-03 19:54:00 +0000 PST");
        let ny = Location::load("America/New_York").unwrap();
        let t = parse("2006-01-02 15:04 MST", "2021-07-01 12:00 EDT", &ny).unwrap();
        assert_eq!(t.to_string(), "2021-07-01 12:00:00 -0400 EDT");
        let t = parse("2006-01-02 15:04", "2021-07-01 12:00", &ny).unwrap();
        assert_eq!(t.in_location(Location::Utc).format("15:04"), "16:00");
        let t = parse("2006-002", "2020-060", &utc).unwrap();
        assert_eq!(t.format("Jan 2"), "Feb 29");
        for (layout, value, err) in [
            (RFC3339, "2021-13-01T00:00:00Z", "parsing time \"2021-13-01T00:00:00Z\": month out of range"),
            (RFC3339, "2021-02-30T00:00:00Z", "parsing time \"2021-02-30T00:00:00Z\": day out of range"),
            (RFC3339, "2021-02-03", "parsing time \"2021-02-03\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"\" as \"T\""),
            (RFC3339, "21-02-03T00:00:00Z", "parsing time \"21-02-03T00:00:00Z\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"21-02-03T00:00:00Z\" as \"2006\""),
            ("2006", "2021x", "parsing time \"2021x\": extra text: \"x\""),
        ] {
            assert_eq!(parse(layout, value, &utc), Err(err.to_string()), "{value}");
        }
    }
}
