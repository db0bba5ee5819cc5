//! Implicit tag resolution of plain scalars (`resolve.go` of yaml.v3).
//!
//! Only the tag matters here: the YAML layer keeps every scalar as text, and
//! the tag decides how a value is quoted on output and how it converts to
//! JSON.

/// Short tags used by yaml.v3.
pub(crate) const NULL_TAG: &str = "!!null";
pub(crate) const BOOL_TAG: &str = "!!bool";
pub(crate) const STR_TAG: &str = "!!str";
pub(crate) const INT_TAG: &str = "!!int";
pub(crate) const FLOAT_TAG: &str = "!!float";
pub(crate) const TIMESTAMP_TAG: &str = "!!timestamp";
pub(crate) const SEQ_TAG: &str = "!!seq";
pub(crate) const MAP_TAG: &str = "!!map";
pub(crate) const BINARY_TAG: &str = "!!binary";
pub(crate) const MERGE_TAG: &str = "!!merge";

const LONG_TAG_PREFIX: &str = "tag:yaml.org,2002:";

use std::borrow::Cow;

use super::node::static_tag;

/// `shortTag`: `tag:yaml.org,2002:x` → `!!x` (a static string for the
/// standard tags).
pub(crate) fn short_tag(tag: &str) -> Cow<'static, str> {
    match tag.strip_prefix(LONG_TAG_PREFIX) {
        Some(rest) => static_tag(&format!("!!{rest}")),
        None => static_tag(tag),
    }
}

/// [`short_tag`] borrowing `tag` when it has no long prefix.
pub(crate) fn short_tag_ref(tag: &str) -> Cow<'_, str> {
    match tag.strip_prefix(LONG_TAG_PREFIX) {
        Some(rest) => Cow::Owned(format!("!!{rest}")),
        None => Cow::Borrowed(tag),
    }
}

/// `longTag`: `!!x` → `tag:yaml.org,2002:x`.
pub(crate) fn long_tag(tag: &str) -> String {
    match tag.strip_prefix("!!") {
        Some(rest) => format!("{LONG_TAG_PREFIX}{rest}"),
        None => tag.to_string(),
    }
}

fn resolvable_tag(tag: &str) -> bool {
    matches!(
        tag,
        "" | STR_TAG | BOOL_TAG | INT_TAG | FLOAT_TAG | NULL_TAG | TIMESTAMP_TAG
    )
}

/// The tag yaml.v3 resolves for a plain scalar `value` under `tag` (usually
/// empty). Unlike Go this never fails: a mismatch between an explicit tag and
/// the value is the caller's concern.
pub(crate) fn resolve(tag: &str, value: &str) -> String {
    let tag = short_tag(tag);
    if !resolvable_tag(&tag) {
        return tag.into_owned();
    }
    resolve_implicit(&tag, value).to_string()
}

/// [`resolve`] for an untagged plain scalar, without allocating.
pub(crate) fn resolve_plain(value: &str) -> &'static str {
    resolve_implicit("", value)
}

fn resolve_implicit(tag: &str, value: &str) -> &'static str {
    let hint = match value.as_bytes().first() {
        None => b'N',
        Some(c) => resolve_hint(*c),
    };
    if hint != 0 && tag != STR_TAG && tag != BINARY_TAG {
        match value {
            "true" | "True" | "TRUE" | "false" | "False" | "FALSE" => return BOOL_TAG,
            "" | "~" | "null" | "Null" | "NULL" => return NULL_TAG,
            ".nan" | ".NaN" | ".NAN" | ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF"
            | "-.inf" | "-.Inf" | "-.INF" => return FLOAT_TAG,
            _ => {}
        }
        match hint {
            b'.' if go_parse_float(value) => return FLOAT_TAG,
            b'D' | b'S' => {
                if (tag.is_empty() || tag == TIMESTAMP_TAG) && is_timestamp(value) {
                    return TIMESTAMP_TAG;
                }
                let stripped;
                let plain: &str = if value.contains('_') {
                    stripped = value.replace('_', "");
                    &stripped
                } else {
                    value
                };
                if go_parse_int(plain) {
                    return INT_TAG;
                }
                if is_yaml_style_float(plain) && go_parse_float(plain) {
                    return FLOAT_TAG;
                }
                if let Some(rest) = plain.strip_prefix("0b") {
                    if parse_radix(rest, 2) {
                        return INT_TAG;
                    }
                } else if let Some(rest) = plain.strip_prefix("-0b") {
                    if parse_radix(rest, 2) {
                        return INT_TAG;
                    }
                }
                if let Some(rest) = plain.strip_prefix("0o") {
                    if parse_radix(rest, 8) {
                        return INT_TAG;
                    }
                } else if let Some(rest) = plain.strip_prefix("-0o") {
                    if parse_radix(rest, 8) {
                        return INT_TAG;
                    }
                }
            }
            _ => {}
        }
    }
    STR_TAG
}

fn resolve_hint(c: u8) -> u8 {
    match c {
        b'+' | b'-' => b'S',
        b'0'..=b'9' => b'D',
        b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' | b'~' => b'M',
        b'.' => b'.',
        _ => 0,
    }
}

/// Digits of `s` in `radix`, non-empty, fitting in 64 bits (signed or not).
fn parse_radix(s: &str, radix: u32) -> bool {
    !s.is_empty() && u64::from_str_radix(s, radix).is_ok()
}

/// Go's `strconv.ParseInt(s, 0, 64)` or `ParseUint(s, 0, 64)` succeeds.
/// Base prefixes `0x`, `0o`, `0b` and a leading `0` (octal) are honoured;
/// underscores were already removed by the caller.
fn go_parse_int(s: &str) -> bool {
    let (neg, body) = match s.as_bytes().first() {
        Some(b'+') => (false, &s[1..]),
        Some(b'-') => (true, &s[1..]),
        _ => (false, s),
    };
    if body.is_empty() {
        return false;
    }
    // The prefix letter in either case; the digits are parsed in either case
    // by `from_str_radix`.
    let b = body.as_bytes();
    let letter = b.get(1).map(|c| c.to_ascii_lowercase());
    let (digits, radix) = match (b[0], letter) {
        (b'0', Some(b'x')) => (&body[2..], 16),
        (b'0', Some(b'o')) => (&body[2..], 8),
        (b'0', Some(b'b')) => (&body[2..], 2),
        (b'0', Some(_)) => (&body[1..], 8),
        _ => (body, 10),
    };
    if digits.is_empty() {
        return false;
    }
    match u64::from_str_radix(digits, radix) {
        Ok(v) => !neg || v <= (i64::MAX as u64) + 1,
        Err(_) => false,
    }
}

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`
fn is_yaml_style_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'-' || b[i] == b'+') {
        i += 1;
    }
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    if i < b.len() && b[i] == b'.' {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if i < b.len() && b[i] == b'.' {
            i += 1;
            digits(&mut i);
        }
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'-' || b[i] == b'+') {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// Go's `strconv.ParseFloat(s, 64)` accepts `s` (decimal and hex floats,
/// `inf`/`nan` spellings, underscores only between digits with a base prefix —
/// yaml.v3 strips them before calling in the integer branch).
fn go_parse_float(s: &str) -> bool {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    let lower = body.to_ascii_lowercase();
    if matches!(lower.as_str(), "inf" | "infinity" | "nan") {
        return true;
    }
    if let Some(hex) = lower.strip_prefix("0x") {
        // Hex float: mantissa with optional '.', mandatory 'p' exponent.
        let Some((mant, exp)) = hex.split_once('p') else {
            return false;
        };
        let mant_ok = !mant.is_empty()
            && mant != "."
            && mant.chars().filter(|c| *c == '.').count() <= 1
            && mant.chars().all(|c| c.is_ascii_hexdigit() || c == '.');
        let exp = exp.strip_prefix(['+', '-']).unwrap_or(exp);
        return mant_ok && !exp.is_empty() && exp.chars().all(|c| c.is_ascii_digit());
    }
    // Rust's parser accepts exactly decimal floats like Go's, except that it
    // also takes "inf"/"nan" words (handled above) and rejects nothing Go takes.
    !lower.is_empty()
        && lower
            .bytes()
            .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'+' | b'-'))
        && lower.parse::<f64>().is_ok()
}

/// yaml.v3's `parseTimestamp`: four digits, `-`, then one of the formats
/// `2006-1-2T15:4:5.999999999Z07:00`, the same with `t`,
/// `2006-1-2 15:4:5.999999999` or `2006-1-2`, with Go's range checks.
pub(crate) fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    if i != 4 || i == b.len() || b[i] != b'-' {
        return false;
    }
    let mut p = Cursor { b, i: 0 };
    let Some(year) = p.fixed(4) else { return false };
    if !p.eat(b'-') {
        return false;
    }
    let Some(month) = p.num12() else { return false };
    if !p.eat(b'-') {
        return false;
    }
    let Some(day) = p.num12() else { return false };
    if !(1..=12).contains(&month) || day < 1 || day > days_in(year, month) {
        return false;
    }
    if p.done() {
        return true;
    }
    let zoned = match p.next() {
        Some(b'T') | Some(b't') => true,
        Some(b' ') => false,
        _ => return false,
    };
    let (Some(h), true, Some(m), true, Some(sec)) =
        (p.num12(), p.eat(b':'), p.num12(), p.eat(b':'), p.num12())
    else {
        return false;
    };
    if h > 23 || m > 59 || sec > 59 {
        return false;
    }
    if p.peek() == Some(b'.') {
        p.i += 1;
        let start = p.i;
        while p.peek().is_some_and(|c| c.is_ascii_digit()) {
            p.i += 1;
        }
        if p.i == start {
            return false;
        }
    }
    if !zoned {
        return p.done();
    }
    match p.next() {
        Some(b'Z') => p.done(),
        Some(b'+') | Some(b'-') => {
            let (Some(zh), true, Some(zm)) = (p.fixed(2), p.eat(b':'), p.fixed(2)) else {
                return false;
            };
            zh <= 24 && zm <= 60 && p.done()
        }
        _ => false,
    }
}

struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }
    fn next(&mut self) -> Option<u8> {
        let c = self.peek();
        self.i += 1;
        c
    }
    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn done(&self) -> bool {
        self.i == self.b.len()
    }
    fn fixed(&mut self, n: usize) -> Option<u32> {
        let mut v = 0u32;
        for _ in 0..n {
            let c = self.peek()?;
            if !c.is_ascii_digit() {
                return None;
            }
            v = v * 10 + u32::from(c - b'0');
            self.i += 1;
        }
        Some(v)
    }
    /// One or two digits (Go's non-fixed `getnum`).
    fn num12(&mut self) -> Option<u32> {
        let c = self.peek()?;
        if !c.is_ascii_digit() {
            return None;
        }
        self.i += 1;
        let mut v = u32::from(c - b'0');
        if let Some(d) = self.peek().filter(u8::is_ascii_digit) {
            self.i += 1;
            v = v * 10 + u32::from(d - b'0');
        }
        Some(v)
    }
}

fn days_in(year: u32, month: u32) -> u32 {
    match month {
        2 if (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_like_yaml_v3() {
        let cases = [
            ("", NULL_TAG),
            ("~", NULL_TAG),
            ("null", NULL_TAG),
            ("true", BOOL_TAG),
            ("False", BOOL_TAG),
            ("yes", STR_TAG),
            ("on", STR_TAG),
            ("1", INT_TAG),
            ("-1", INT_TAG),
            ("0755", INT_TAG),
            ("0x1F", INT_TAG),
            ("0o17", INT_TAG),
            ("0b101", INT_TAG),
            ("1_000", INT_TAG),
            ("08", FLOAT_TAG),
            ("1.5", FLOAT_TAG),
            ("1e3", FLOAT_TAG),
            (".5", FLOAT_TAG),
            (".inf", FLOAT_TAG),
            ("1.2.3", STR_TAG),
            ("2001-12-14", TIMESTAMP_TAG),
            ("2001-12-14t21:59:43.10-05:00", TIMESTAMP_TAG),
            ("2001-12-14 21:59:43.10", TIMESTAMP_TAG),
            ("2001-13-14", STR_TAG),
            ("v1", STR_TAG),
            ("nginx:1.2.3", STR_TAG),
            // `<` has no resolver hint: yaml.v3 resolves `<<` as a string
            // (the composer tags plain `<<` keys as merges itself).
            ("<<", STR_TAG),
            ("99999999999999999999", FLOAT_TAG),
        ];
        for (value, want) in cases {
            assert_eq!(resolve("", value), want, "value {value:?}");
        }
    }

    #[test]
    fn tags_convert_between_short_and_long_forms() {
        assert_eq!(short_tag("tag:yaml.org,2002:str"), "!!str");
        assert_eq!(long_tag("!!int"), "tag:yaml.org,2002:int");
        assert_eq!(short_tag("!custom"), "!custom");
    }
}
