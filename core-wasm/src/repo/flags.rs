//! Command-line flags parsed as Go's `flag.FlagSet.Parse` does, for the
//! controllers' `BindFlags`: `-name=value`, `--name=value`, `-name value`
//! (not for booleans), `-name` (booleans only); `--` or the first
//! non-flag argument ends the flags. Values are read as Go's `flag` reads
//! them (`strconv.ParseInt(s, 0, 64)`, `strconv.ParseBool`,
//! `time.ParseDuration`).

use std::collections::BTreeMap;

use super::time::Duration;

/// A bad command line (Go's messages).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FlagError {
    /// A flag nobody defined.
    #[error("flag provided but not defined: -{0}")]
    Unknown(String),
    /// `-name` without the value a non-boolean flag needs.
    #[error("flag needs an argument: -{0}")]
    MissingValue(String),
    /// `---name` or `-=x`.
    #[error("bad flag syntax: {0}")]
    Syntax(String),
    /// A value of the wrong type.
    #[error("invalid value {value:?} for flag -{name}: {reason}")]
    InvalidValue {
        /// The flag.
        name: String,
        /// The value given.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// The type of a defined flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `flag.IntVar` (64-bit).
    Int,
    /// `flag.BoolVar`.
    Bool,
    /// `flag.StringVar`.
    String,
    /// `flag.DurationVar`.
    Duration,
}

/// A parsed flag value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// An integer.
    Int(i64),
    /// A boolean.
    Bool(bool),
    /// A string.
    String(String),
    /// A duration.
    Duration(Duration),
}

/// The flags set on a command line, by name (without the prefix), and the
/// arguments left after them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed {
    /// Values of the flags given (later occurrences win).
    pub values: BTreeMap<String, Value>,
    /// Arguments after the flags.
    pub rest: Vec<String>,
}

/// Parses `argv` (without the program name) against flags `prefix + name`
/// of the given kinds.
pub fn parse(prefix: &str, defined: &[(&str, Kind)], argv: &[String]) -> Result<Parsed, FlagError> {
    let mut out = Parsed::default();
    let mut i = 0;
    while i < argv.len() {
        let arg = &argv[i];
        if arg.len() < 2 || !arg.starts_with('-') {
            break;
        }
        let mut body = &arg[1..];
        if body.starts_with('-') {
            body = &body[1..];
            if body.is_empty() {
                i += 1; // "--" ends the flags.
                break;
            }
        }
        if body.is_empty() || body.starts_with('-') || body.starts_with('=') {
            return Err(FlagError::Syntax(arg.clone()));
        }
        i += 1;
        let (name, inline) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (body, None),
        };
        let kind = name
            .strip_prefix(prefix)
            .and_then(|short| defined.iter().find(|(n, _)| *n == short))
            .map(|(n, k)| (*n, *k));
        let Some((short, kind)) = kind else {
            return Err(FlagError::Unknown(name.to_string()));
        };
        let text = match (inline, kind) {
            (Some(v), _) => v,
            (None, Kind::Bool) => "true".to_string(),
            (None, _) => {
                let Some(v) = argv.get(i) else {
                    return Err(FlagError::MissingValue(name.to_string()));
                };
                i += 1;
                v.clone()
            }
        };
        let invalid = |reason: &str| FlagError::InvalidValue {
            name: name.to_string(),
            value: text.clone(),
            reason: reason.to_string(),
        };
        let value = match kind {
            Kind::Int => Value::Int(parse_int(&text).ok_or_else(|| invalid("parse error"))?),
            Kind::Bool => Value::Bool(parse_bool(&text).ok_or_else(|| invalid("parse error"))?),
            Kind::String => Value::String(text.clone()),
            Kind::Duration => {
                Value::Duration(Duration::parse(&text).map_err(|_| invalid("parse error"))?)
            }
        };
        out.values.insert(short.to_string(), value);
    }
    out.rest = argv[i.min(argv.len())..].to_vec();
    Ok(out)
}

/// `strconv.ParseBool`.
pub fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// `strconv.ParseInt(s, 0, 64)`: optional sign, then decimal, `0x` hex,
/// `0o` or leading-`0` octal, `0b` binary; underscores only between digits
/// (a base prefix counts as a digit).
pub fn parse_int(s: &str) -> Option<i64> {
    let (neg, body) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let lower = body.to_ascii_lowercase();
    let (radix, digits) = if let Some(d) = lower.strip_prefix("0x") {
        (16, d)
    } else if let Some(d) = lower.strip_prefix("0o") {
        (8, d)
    } else if let Some(d) = lower.strip_prefix("0b") {
        (2, d)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, &lower[1..])
    } else {
        (10, lower.as_str())
    };
    if digits.contains('_') && !underscores_ok(&lower) {
        return None;
    }
    let clean: String = digits.chars().filter(|&c| c != '_').collect();
    if clean.is_empty() || clean.starts_with('+') || clean.starts_with('-') {
        return None;
    }
    let magnitude = u64::from_str_radix(&clean, radix).ok()?;
    if neg {
        if magnitude > (i64::MAX as u64) + 1 {
            return None;
        }
        Some((magnitude as i128).wrapping_neg() as i64)
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// Go's `underscoreOK` (of an unsigned, lower-cased number): every `_`
/// sits between digits, a base prefix counting as one.
fn underscores_ok(s: &str) -> bool {
    let b = s.as_bytes();
    let (mut i, mut saw, mut hex) = (0, b'^', false);
    if b.len() >= 2 && b[0] == b'0' && matches!(b[1], b'b' | b'o' | b'x') {
        i = 2;
        saw = b'0';
        hex = b[1] == b'x';
    }
    while i < b.len() {
        let c = b[i];
        i += 1;
        if c.is_ascii_digit() || (hex && (b'a'..=b'f').contains(&c)) {
            saw = b'0';
        } else if c == b'_' {
            if saw != b'0' {
                return false;
            }
            saw = b'_';
        } else if saw == b'_' {
            return false;
        } else {
            saw = b'!';
        }
    }
    saw != b'_'
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    const DEFINED: &[(&str, Kind)] = &[
        ("n", Kind::Int),
        ("b", Kind::Bool),
        ("s", Kind::String),
        ("d", Kind::Duration),
    ];

    #[test]
    fn go_flag_syntax() {
        let p = parse(
            "x-",
            DEFINED,
            &args(&[
                "--x-n=0x10",
                "-x-b",
                "-x-s",
                "v",
                "-x-d=1m30s",
                "rest",
                "-x-n=1",
            ]),
        )
        .unwrap();
        assert_eq!(p.values["n"], Value::Int(16));
        assert_eq!(p.values["b"], Value::Bool(true));
        assert_eq!(p.values["s"], Value::String("v".into()));
        assert_eq!(p.values["d"], Value::Duration(Duration::from_secs(90)));
        assert_eq!(p.rest, args(&["rest", "-x-n=1"]));
        let p = parse("x-", DEFINED, &args(&["-x-b=false", "--", "-x-n=1"])).unwrap();
        assert_eq!(p.values["b"], Value::Bool(false));
        assert_eq!(p.rest, args(&["-x-n=1"]));
    }

    #[test]
    fn go_flag_errors() {
        let err = |a: &[&str]| parse("x-", DEFINED, &args(a)).unwrap_err().to_string();
        assert_eq!(err(&["-y"]), "flag provided but not defined: -y");
        assert_eq!(err(&["-n=1"]), "flag provided but not defined: -n");
        assert_eq!(err(&["-x-n"]), "flag needs an argument: -x-n");
        assert_eq!(err(&["---x-n=1"]), "bad flag syntax: ---x-n=1");
        assert_eq!(
            err(&["-x-n=ten"]),
            "invalid value \"ten\" for flag -x-n: parse error"
        );
        assert_eq!(
            err(&["-x-d=5"]),
            "invalid value \"5\" for flag -x-d: parse error"
        );
    }

    #[test]
    fn ints_parse_as_strconv_base_zero() {
        for (s, v) in [
            ("10", Some(10)),
            ("-10", Some(-10)),
            ("+7", Some(7)),
            ("010", Some(8)),
            ("0o17", Some(15)),
            ("0b101", Some(5)),
            ("0x_1F", Some(31)),
            ("1_000", Some(1000)),
            ("0_17", Some(15)),
            ("1__0", None),
            ("_1", None),
            ("1_", None),
            ("0x", None),
            ("", None),
            ("-", None),
            ("9223372036854775807", Some(i64::MAX)),
            ("-9223372036854775808", Some(i64::MIN)),
            ("9223372036854775808", None),
        ] {
            assert_eq!(parse_int(s), v, "{s}");
        }
    }
}
