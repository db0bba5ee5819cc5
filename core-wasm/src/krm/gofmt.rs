//! Go's `%q` verb, for messages that upstream and the catalog's functions
//! format with it (error strings, the `injected resource "<name>" from
//! cluster` condition message, the builtins' results), and Go's
//! `encoding/json` writing of a string.

use std::fmt::Write;

/// `strconv.Quote(s)`: a double-quoted Go string literal. Printable
/// characters are kept; quotes, backslashes and control characters are
/// escaped as Go escapes them.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if !is_go_printable(c) => {
                if (c as u32) < 0x10000 {
                    let _ = write!(out, "\\u{:04x}", c as u32);
                } else {
                    let _ = write!(out, "\\U{:08x}", c as u32);
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// An approximation of Go's `strconv.IsPrint` beyond ASCII: controls
/// (C0, C1), spaces other than U+0020, the soft hyphen, line and paragraph
/// separators, invisible format characters (U+200B–U+200F, U+202A–U+202E,
/// U+2060–U+206F, the BOM), the private use area and the non-characters
/// U+FFFE and U+FFFF are not printable.
fn is_go_printable(c: char) -> bool {
    let u = c as u32;
    !(c.is_control()
        || (c.is_whitespace() && c != ' ')
        || matches!(
            u,
            0x80..=0xa0
                | 0xad
                | 0x1680
                | 0x2000..=0x200f
                | 0x2028..=0x202f
                | 0x205f..=0x206f
                | 0x3000
                | 0xe000..=0xf8ff
                | 0xfeff
                | 0xfff9..=0xfffb
                | 0xfffe..=0xffff
        ))
}

/// Which Go wrote the JSON: `\b` and `\f` are short escapes since Go
/// 1.22, `\u0008` and `\u000c` before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GoJson {
    /// Go 1.22 and later (Porch).
    Current,
    /// Go before 1.22 (the catalog's older function images).
    Before122,
}

/// A string as Go's `encoding/json` writes it: HTML-safe (`<`, `>`, `&`,
/// U+2028 and U+2029 as `\u` escapes), other control characters as
/// `\u00XX`.
pub fn json_string(s: &str, go: GoJson) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' if go == GoJson::Current => out.push_str("\\b"),
            '\u{c}' if go == GoJson::Current => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::{json_string, quote, GoJson};

    #[test]
    fn quotes_like_go() {
        assert_eq!(quote("package-context.yaml"), "\"package-context.yaml\"");
        assert_eq!(quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
        assert_eq!(quote("tab\there\n"), "\"tab\\there\\n\"");
        assert_eq!(quote("\u{1}"), "\"\\x01\"");
        assert_eq!(quote("é✓"), "\"é✓\"");
        assert_eq!(quote("\u{a0}"), "\"\\u00a0\"");
        // Private use, format characters and non-characters are escaped.
        assert_eq!(quote("\u{e000}"), "\"\\ue000\"");
        assert_eq!(quote("\u{2066}"), "\"\\u2066\"");
        assert_eq!(quote("\u{ffff}"), "\"\\uffff\"");
    }

    #[test]
    fn json_strings_are_written_as_each_go_writes_them() {
        let s = "a\"b\\c\n<&>\u{1}\u{8}\u{2028}é";
        assert_eq!(
            json_string(s, GoJson::Current),
            "\"a\\\"b\\\\c\\n\\u003c\\u0026\\u003e\\u0001\\b\\u2028é\""
        );
        assert_eq!(
            json_string(s, GoJson::Before122),
            "\"a\\\"b\\\\c\\n\\u003c\\u0026\\u003e\\u0001\\u0008\\u2028é\""
        );
    }
}
