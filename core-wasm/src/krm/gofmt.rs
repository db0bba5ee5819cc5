//! Go's `%q` verb, for messages that upstream and the catalog's functions
//! format with it (error strings, the `injected resource "<name>" from
//! cluster` condition message, the builtins' results).

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

#[cfg(test)]
mod tests {
    use super::quote;

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
}
