//! Byte classification helpers of libyaml / yaml.v3 (`yamlprivateh.go`).
//!
//! All helpers take a byte slice and an index and treat any index past the end
//! of the slice as a NUL byte, which is how the Go code sees its zero-padded
//! read buffer. This keeps look-ahead (`b[i+1]`, `b[i+2]`) free of panics.

#[inline]
pub(crate) fn at(b: &[u8], i: usize) -> u8 {
    match b.get(i) {
        Some(c) => *c,
        None => 0,
    }
}

#[inline]
pub(crate) fn is_alpha(b: &[u8], i: usize) -> bool {
    let c = at(b, i);
    c.is_ascii_alphanumeric() || c == b'_' || c == b'-'
}

#[inline]
pub(crate) fn is_digit(b: &[u8], i: usize) -> bool {
    at(b, i).is_ascii_digit()
}

#[inline]
pub(crate) fn as_digit(b: &[u8], i: usize) -> u32 {
    u32::from(at(b, i).wrapping_sub(b'0'))
}

#[inline]
pub(crate) fn is_hex(b: &[u8], i: usize) -> bool {
    at(b, i).is_ascii_hexdigit()
}

#[inline]
pub(crate) fn as_hex(b: &[u8], i: usize) -> u32 {
    let c = at(b, i);
    match c {
        b'A'..=b'F' => u32::from(c - b'A') + 10,
        b'a'..=b'f' => u32::from(c - b'a') + 10,
        _ => u32::from(c.wrapping_sub(b'0')),
    }
}

#[inline]
pub(crate) fn is_ascii(b: &[u8], i: usize) -> bool {
    at(b, i) <= 0x7f
}

/// Whether the character at `i` is printable in the YAML sense.
#[inline]
pub(crate) fn is_printable(b: &[u8], i: usize) -> bool {
    let c = at(b, i);
    let c1 = at(b, i + 1);
    let c2 = at(b, i + 2);
    c == 0x0a
        || (0x20..=0x7e).contains(&c)
        || (c == 0xc2 && c1 >= 0xa0)
        || (c > 0xc2 && c < 0xed)
        || (c == 0xed && c1 < 0xa0)
        || c == 0xee
        || (c == 0xef && !(c1 == 0xbb && c2 == 0xbf) && !(c1 == 0xbf && (c2 == 0xbe || c2 == 0xbf)))
}

#[inline]
pub(crate) fn is_z(b: &[u8], i: usize) -> bool {
    at(b, i) == 0
}

/// Whether the slice starts with a UTF-8 byte order mark (Go checks index 0,
/// whatever `i` is; kept for parity).
#[inline]
pub(crate) fn is_bom(b: &[u8], _i: usize) -> bool {
    is_bom_at(b, 0)
}

/// Whether a UTF-8 byte order mark is at `i`.
#[inline]
pub(crate) fn is_bom_at(b: &[u8], i: usize) -> bool {
    at(b, i) == 0xef && at(b, i + 1) == 0xbb && at(b, i + 2) == 0xbf
}

#[inline]
pub(crate) fn is_space(b: &[u8], i: usize) -> bool {
    at(b, i) == b' '
}

#[inline]
pub(crate) fn is_tab(b: &[u8], i: usize) -> bool {
    at(b, i) == b'\t'
}

#[inline]
pub(crate) fn is_blank(b: &[u8], i: usize) -> bool {
    let c = at(b, i);
    c == b' ' || c == b'\t'
}

#[inline]
pub(crate) fn is_break(b: &[u8], i: usize) -> bool {
    let c = at(b, i);
    c == b'\r'
        || c == b'\n'
        || (c == 0xc2 && at(b, i + 1) == 0x85)
        || (c == 0xe2 && at(b, i + 1) == 0x80 && (at(b, i + 2) == 0xa8 || at(b, i + 2) == 0xa9))
}

#[inline]
pub(crate) fn is_crlf(b: &[u8], i: usize) -> bool {
    at(b, i) == b'\r' && at(b, i + 1) == b'\n'
}

#[inline]
pub(crate) fn is_breakz(b: &[u8], i: usize) -> bool {
    is_break(b, i) || is_z(b, i)
}

#[inline]
pub(crate) fn is_blankz(b: &[u8], i: usize) -> bool {
    is_blank(b, i) || is_breakz(b, i)
}

/// Width in bytes of the UTF-8 sequence starting with `c` (0 when invalid).
#[inline]
pub(crate) fn width(c: u8) -> usize {
    if c & 0x80 == 0x00 {
        1
    } else if c & 0xe0 == 0xc0 {
        2
    } else if c & 0xf0 == 0xe0 {
        3
    } else if c & 0xf8 == 0xf0 {
        4
    } else {
        0
    }
}
