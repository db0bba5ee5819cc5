//! The scanner of yaml.v3 (`scannerc.go`), ported function by function.
//!
//! It turns the input into tokens and, as yaml.v3 does, collects the
//! comments it meets into `Parser::comments` (head, line and foot comments
//! with the marks the parser uses to attach them to events). The input checks
//! of `readerc.go` (BOM skipping, rejection of control characters) are done
//! once, up front, in [`Parser::new`], and `yaml_insert_token` of `apic.go`
//! is `Parser::insert_token`. The output (tokens, marks, comments, errors)
//! was compared with yaml.v3 v3.0.1 on its own test corpus, a few thousand
//! real-world YAML files and a few hundred thousand generated and mutated
//! inputs.
//!
//! Differences from Go that do not change behaviour:
//! * the whole input is in `buffer` (NUL-padded), so every `cache()` /
//!   `yaml_parser_update_buffer` call is dropped; reads past the end of the
//!   buffer see NUL (see `chars::at`), where Go's reader pads with NULs too;
//! * functions return `Result` instead of `bool` plus an error in the struct;
//!   [`Parser::fetch_more_tokens`] records the first error in `error`;
//! * the token queue is a `VecDeque` holding only the unconsumed tokens (Go's
//!   `tokens[tokens_head:]`). Go also looks at `tokens[len(tokens)-1]` and
//!   `tokens[len(tokens)-2]`, which may in principle be consumed tokens; while
//!   scanning, the queue always holds at least two unconsumed tokens once the
//!   first two have been fetched (the parser consumes a token only after
//!   `fetch_more_tokens` made at least three available), so the last two
//!   queue entries are the same tokens Go looks at.
//!
//! Differences that can show:
//! * Go reads its input in 512-byte chunks and reports a control character
//!   only when the reader reaches it, after the tokens before it (for inputs
//!   of more than about 512 bytes); here it is reported before any token,
//!   with its position in the message and the mark.
//! * Go skips a byte order mark at the start of a line, but its `is_bom`
//!   looks at the start of the reader's sliding buffer window instead of at
//!   the current position: while that window starts with a U+FEFF, Go drops
//!   the first character of every line, whatever it is (an input starting
//!   with two byte order marks reads `kind: x` as `ind: x`). Here the window
//!   never slides (it starts after a leading BOM), the character skipped
//!   must itself be a U+FEFF, and it takes no column: where Go would drop
//!   another character it is kept, and the lines after it keep their
//!   indentation. Elsewhere the two agree.

use super::chars::{
    as_digit, as_hex, at, is_alpha, is_blank, is_blankz, is_bom, is_bom_at, is_break, is_breakz,
    is_crlf, is_digit, is_hex, is_space, is_tab, is_z, width,
};
use super::error::{ErrorKind, Fallible as Result, YamlError};
use super::parser_state::{Comment, Parser, SimpleKey};
use super::token::{Mark, ScalarStyle, Token, TokenType};

/// `max_flow_level`: limits the flow level.
const MAX_FLOW_LEVEL: usize = 10000;

/// `max_indents`: limits the indents stack size.
const MAX_INDENTS: usize = 10000;

/// The longest input accepted, in bytes: marks count in `u32`, with room
/// for the lookahead past the end.
const MAX_INPUT_LEN: usize = (u32::MAX - (1 << 16)) as usize;

/// `max_number_length`: the maximum number of digits of a `%YAML` version.
const MAX_NUMBER_LENGTH: i8 = 2;

/// A column, line or count as Go's signed `int`, for the comparisons Go does
/// against `indent` (which may be -1) and for arithmetic that may go negative.
#[inline]
fn int<T>(n: T) -> isize
where
    isize: TryFrom<T>,
{
    isize::try_from(n).unwrap_or(isize::MAX)
}

/// A buffer offset or run length as a mark field (inputs are at most
/// `u32::MAX` bytes long, see [`Parser::new`]).
#[inline]
fn narrow(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Appends `bytes` to `s`; an unallocated `s` gets an exact-size copy in one
/// allocation (most scalar and comment texts are a single run).
#[inline]
fn append(s: &mut Vec<u8>, bytes: &[u8]) {
    if s.capacity() == 0 {
        *s = bytes.to_vec();
    } else {
        s.extend_from_slice(bytes);
    }
}

/// The number of spaces (and, if `tabs`, tabs) in `buffer` from `pos` on;
/// runs of spaces (indentation) are counted eight at a time.
#[inline]
fn blank_run(buffer: &[u8], pos: usize, tabs: bool) -> usize {
    let rest = buffer.get(pos..).unwrap_or_default();
    if tabs {
        return rest
            .iter()
            .take_while(|&&c| c == b' ' || c == b'\t')
            .count();
    }
    const SPACES: u64 = u64::from_ne_bytes([b' '; 8]);
    let mut run = 0;
    for chunk in rest.chunks_exact(8) {
        match <[u8; 8]>::try_from(chunk) {
            Ok(word) if u64::from_ne_bytes(word) == SPACES => run += 8,
            _ => break,
        }
    }
    let tail = rest.get(run..).unwrap_or_default();
    run + tail.iter().take_while(|&&c| c == b' ').count()
}

/// ASCII bytes that [`Parser::read_plain_run`] copies in any context:
/// printable, no space and none of `:,?[]{}`.
const PLAIN_RUN_BYTE: [bool; 256] = {
    let mut table = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        table[c] =
            b.is_ascii_graphic() && !matches!(b, b':' | b',' | b'?' | b'[' | b']' | b'{' | b'}');
        c += 1;
    }
    table
};

/// ASCII bytes that [`Parser::read_quoted_run`] copies: printable, no space
/// and none of `'"\`.
const QUOTED_RUN_BYTE: [bool; 256] = {
    let mut table = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        table[c] = b.is_ascii_graphic() && !matches!(b, b'\'' | b'"' | b'\\');
        c += 1;
    }
    table
};

/// A token with only a type and marks (Go's `yaml_token_t{typ, start_mark,
/// end_mark}` literals).
#[inline]
fn simple_token(typ: TokenType, start_mark: Mark, end_mark: Mark) -> Token {
    Token {
        typ,
        start_mark,
        end_mark,
        ..Token::default()
    }
}

/// The reader's character check (`yaml_parser_update_buffer` in
/// `readerc.go`): only `#x9 | #xA | #xD | [#x20-#x7E] | #x85 | [#xA0-#xD7FF] |
/// [#xE000-#xFFFD] | [#x10000-#x10FFFF]` are allowed. Surrogates cannot occur
/// in a `&str`, so only the C0 controls (but tab, LF, CR), DEL, the C1
/// controls (but NEL) and U+FFFE/U+FFFF have to be rejected.
fn check_input(input: &str) -> Result<()> {
    // Chunks made only of printable ASCII and LF are skipped at once (the
    // `fold` lets the compiler vectorize the test); the others, and the
    // tail, are checked byte by byte.
    const CHUNK: usize = 32;
    let b = input.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if let Some(chunk) = b.get(i..i + CHUNK) {
            let plain = chunk.iter().fold(true, |acc, &c| {
                acc & (c.wrapping_sub(0x20) < 0x5f || c == b'\n')
            });
            if plain {
                i += CHUNK;
                continue;
            }
        }
        let end = (i + CHUNK).min(b.len());
        while i < end {
            let bad = match INPUT_CLASS[usize::from(b[i])] {
                InputClass::Ok => false,
                InputClass::Bad => true,
                // U+0080..U+009F are encoded as C2 80..C2 9F.
                InputClass::C2 => {
                    let c1 = at(b, i + 1);
                    c1 < 0xa0 && c1 != 0x85
                }
                // U+FFFE and U+FFFF are encoded as EF BF BE and EF BF BF.
                InputClass::Ef => {
                    at(b, i + 1) == 0xbf && (at(b, i + 2) == 0xbe || at(b, i + 2) == 0xbf)
                }
            };
            if bad {
                return Err(control_character_error(input, i));
            }
            i += 1;
        }
    }
    Ok(())
}

/// How [`check_input`] treats a byte.
#[derive(Clone, Copy)]
enum InputClass {
    /// Allowed (or a byte of a multi-byte character that is allowed).
    Ok,
    /// A disallowed ASCII control character.
    Bad,
    /// The lead byte of U+0080..U+00BF.
    C2,
    /// The lead byte of U+F000..U+FFFF.
    Ef,
}

/// [`InputClass`] of every byte value.
const INPUT_CLASS: [InputClass; 256] = {
    let mut table = [InputClass::Ok; 256];
    let mut c = 0;
    while c < 0x20 {
        if c != 0x09 && c != 0x0a && c != 0x0d {
            table[c] = InputClass::Bad;
        }
        c += 1;
    }
    table[0x7f] = InputClass::Bad;
    table[0xc2] = InputClass::C2;
    table[0xef] = InputClass::Ef;
    table
};

/// The reader error for the control character at byte `offset` of `input`:
/// Go reports the raw byte offset and the value; here the value goes into the
/// message and the position into a mark counted the way the scanner counts.
fn control_character_error(input: &str, offset: usize) -> Box<YamlError> {
    let mut mark = Mark::default();
    let mut prev_cr = false;
    for ch in input.get(..offset).unwrap_or("").chars() {
        mark.index += 1;
        match ch {
            // CR LF is one line break; the LF only advances the index.
            '\n' if prev_cr => {}
            '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}' => {
                mark.line += 1;
                mark.column = 0;
            }
            _ => mark.column += 1,
        }
        prev_cr = ch == '\r';
    }
    let value = input
        .get(offset..)
        .and_then(|s| s.chars().next())
        .map_or(0, u32::from);
    Box::new(YamlError::new(
        ErrorKind::Reader,
        format!(
            "control characters are not allowed (found U+{value:04X} at line {}, column {})",
            mark.line + 1,
            mark.column + 1
        ),
        mark,
    ))
}

impl Parser {
    /// Creates a parser over `input` (`yaml_parser_initialize` +
    /// `yaml_parser_set_input_string`, with the reader's BOM skipping and
    /// control-character check of `readerc.go` done up front).
    pub(crate) fn new(input: &str) -> Result<Parser> {
        // `yaml_parser_determine_encoding`: a leading UTF-8 BOM is skipped and
        // not counted in the marks.
        let input = input.strip_prefix('\u{feff}').unwrap_or(input);
        if input.len() > MAX_INPUT_LEN {
            return Err(Box::new(YamlError::new(
                ErrorKind::Reader,
                "input is too long",
                Mark::default(),
            )));
        }
        check_input(input)?;
        let mut buffer = Vec::with_capacity(input.len() + Parser::PADDING);
        buffer.extend_from_slice(input.as_bytes());
        buffer.resize(input.len() + Parser::PADDING, 0);
        Ok(Parser {
            buffer,
            ..Parser::default()
        })
    }

    // ----------------------------------------------------------------------
    // Buffer helpers.

    /// The byte `k` positions after the current one (NUL past the end).
    #[inline]
    fn ch(&self, k: usize) -> u8 {
        at(&self.buffer, self.buffer_pos + k)
    }

    /// `skip`: advance the buffer pointer by one character.
    #[inline]
    fn skip(&mut self) {
        let c = self.ch(0);
        if c != b' ' && c != b'\t' {
            self.newlines = 0;
        }
        self.mark = self.mark.forward(1);
        // The buffer is valid UTF-8, so the width is never 0; `max` only
        // guarantees progress.
        self.buffer_pos += width(c).max(1);
    }

    /// `skip_line`: advance over a line break, if there is one.
    #[inline]
    fn skip_line(&mut self) {
        if is_crlf(&self.buffer, self.buffer_pos) {
            self.mark = self.mark.next_line(2);
            self.buffer_pos += 2;
            self.newlines += 1;
        } else if is_break(&self.buffer, self.buffer_pos) {
            self.mark = self.mark.next_line(1);
            self.buffer_pos += width(self.ch(0)).max(1);
            self.newlines += 1;
        }
    }

    /// `read`: copy a character to `s` and advance the pointers.
    #[inline]
    fn read(&mut self, s: &mut Vec<u8>) {
        let pos = self.buffer_pos;
        let c = self.ch(0);
        if c != b' ' && c != b'\t' {
            self.newlines = 0;
        }
        // Go panics on an invalid leading octet; a `&str` has none.
        let w = width(c).max(1);
        match self.buffer.get(pos..pos + w) {
            Some(bytes) => s.extend_from_slice(bytes),
            None => s.push(c),
        }
        self.buffer_pos += w;
        self.mark = self.mark.forward(1);
    }

    /// `read_line`: copy a line break to `s` (CR LF, CR, LF and NEL become
    /// LF; LS and PS are kept) and advance the pointers.
    #[inline]
    fn read_line(&mut self, s: &mut Vec<u8>) {
        let c0 = self.ch(0);
        let c1 = self.ch(1);
        let c2 = self.ch(2);
        // CR LF is two characters, the other breaks one.
        let mut chars = 1;
        if c0 == b'\r' && c1 == b'\n' {
            // CR LF . LF
            s.push(b'\n');
            self.buffer_pos += 2;
            chars = 2;
        } else if c0 == b'\r' || c0 == b'\n' {
            // CR|LF . LF
            s.push(b'\n');
            self.buffer_pos += 1;
        } else if c0 == 0xc2 && c1 == 0x85 {
            // NEL . LF
            s.push(b'\n');
            self.buffer_pos += 2;
        } else if c0 == 0xe2 && c1 == 0x80 && (c2 == 0xa8 || c2 == 0xa9) {
            // LS|PS . LS|PS
            s.extend_from_slice(&[c0, c1, c2]);
            self.buffer_pos += 3;
        } else {
            return;
        }
        self.mark = self.mark.next_line(chars);
        self.newlines += 1;
    }

    // ----------------------------------------------------------------------
    // Errors and the token queue.

    /// `yaml_parser_set_scanner_error`: the problem mark is the current mark.
    #[cold]
    fn scanner_error(&self, context: &str, context_mark: Mark, problem: &str) -> Box<YamlError> {
        Box::new(YamlError::with_context(
            ErrorKind::Scanner,
            context,
            context_mark,
            problem,
            self.mark,
        ))
    }

    /// `yaml_parser_set_scanner_tag_error`.
    fn scanner_tag_error(
        &self,
        directive: bool,
        context_mark: Mark,
        problem: &str,
    ) -> Box<YamlError> {
        let context = if directive {
            "while parsing a %TAG directive"
        } else {
            "while parsing a tag"
        };
        self.scanner_error(context, context_mark, problem)
    }

    /// `yaml_insert_token` (`apic.go`): `pos` is relative to the queue head;
    /// `None` (Go's -1) appends.
    fn insert_token(&mut self, pos: Option<usize>, token: Token) {
        match pos {
            None => self.tokens.push_back(token),
            Some(pos) => {
                // Go would panic on a position past the end; it cannot occur
                // (positions come from unconsumed simple keys), clamp anyway.
                let pos = pos.min(self.tokens.len());
                self.tokens.insert(pos, token);
            }
        }
    }

    /// The number of the next token to be queued (Go's `tokens_parsed +
    /// (len(tokens) - tokens_head)`).
    #[inline]
    fn next_token_number(&self) -> usize {
        self.tokens_parsed + self.tokens.len()
    }

    // ----------------------------------------------------------------------
    // Fetching tokens.

    /// `yaml_parser_fetch_more_tokens`: ensure that the token queue contains
    /// at least one token which can be returned to the parser.
    ///
    /// The first error is kept in `error` and returned again by later calls.
    pub(crate) fn fetch_more_tokens(&mut self) -> Result<()> {
        if let Some(err) = &self.error {
            return Err(err.clone());
        }
        let result = self.fetch_more_tokens_inner();
        if let Err(err) = &result {
            self.error = Some(err.clone());
        }
        result
    }

    /// The body of `yaml_parser_fetch_more_tokens`.
    fn fetch_more_tokens_inner(&mut self) -> Result<()> {
        // While we need more tokens to fetch, do it.
        loop {
            // [Go] The comment parsing logic requires a lookahead of two tokens
            // so that foot comments may be parsed in time of associating them
            // with the tokens that are parsed before them, and also for line
            // comments to be transformed into head comments in some edge cases.
            if self.tokens.len() > 2 {
                // If a potential simple key is at the head position, we need to fetch
                // the next token to disambiguate it.
                match self.simple_keys_by_tok.get(self.tokens_parsed) {
                    None => break,
                    Some(head_tok_idx) => {
                        if !self.simple_key_is_valid(head_tok_idx)? {
                            break;
                        }
                    }
                }
            }
            // Fetch the next token.
            self.fetch_next_token()?;
        }
        self.token_available = true;
        Ok(())
    }

    /// `yaml_parser_fetch_next_token`: the dispatcher for token fetchers.
    fn fetch_next_token(&mut self) -> Result<()> {
        // Check if we just started scanning.  Fetch STREAM-START then.
        if !self.stream_start_produced {
            self.fetch_stream_start();
            return Ok(());
        }

        let scan_mark = self.mark.fresh_copy();

        // Eat whitespaces and comments until we reach the next token.
        self.scan_to_next_token()?;

        // [Go] While unrolling indents, transform the head comments of prior
        // indentation levels observed after scan_start into foot comments at
        // the respective indexes.

        // Check the indentation level against the current column.
        self.unroll_indent(int(self.mark.column), scan_mark)?;

        // Is it the end of the stream?
        if is_z(&self.buffer, self.buffer_pos) {
            return self.fetch_stream_end();
        }

        let c = self.ch(0);

        // Is it a directive?
        if self.mark.column == 0 && c == b'%' {
            return self.fetch_directive();
        }

        // Is it the document start indicator?
        if self.mark.column == 0
            && c == b'-'
            && self.ch(1) == b'-'
            && self.ch(2) == b'-'
            && is_blankz(&self.buffer, self.buffer_pos + 3)
        {
            return self.fetch_document_indicator(TokenType::DocumentStart);
        }

        // Is it the document end indicator?
        if self.mark.column == 0
            && c == b'.'
            && self.ch(1) == b'.'
            && self.ch(2) == b'.'
            && is_blankz(&self.buffer, self.buffer_pos + 3)
        {
            return self.fetch_document_indicator(TokenType::DocumentEnd);
        }

        let mut comment_mark = self.mark.fresh_copy();
        if let Some(last) = self.tokens.back() {
            if (self.flow_level == 0 && c == b':') || (self.flow_level > 0 && c == b',') {
                // Associate any following comments with the prior token.
                comment_mark = last.start_mark;
            }
        }

        self.fetch_token(c)?;

        // Go does the rest in a deferred function that runs when the fetcher
        // above succeeded.
        if self
            .tokens
            .back()
            .is_some_and(|t| t.typ == TokenType::BlockEntry)
        {
            // Sequence indicators alone have no line comments. It becomes
            // a head comment for whatever follows.
            return Ok(());
        }
        // `scan_line_comment` finds nothing unless blanks or a `#` follow
        // on the same line.
        let next = self.ch(0);
        if self.newlines > 0 || !(next == b' ' || next == b'\t' || next == b'#') {
            return Ok(());
        }
        self.scan_line_comment(comment_mark)
    }

    /// The second half of `yaml_parser_fetch_next_token`: dispatch on the
    /// character `c` at the current position.
    fn fetch_token(&mut self, c: u8) -> Result<()> {
        // The most common case first: a letter or digit starts no indicator,
        // only a plain scalar (the last check below).
        if c.is_ascii_alphanumeric() {
            return self.fetch_plain_scalar();
        }

        // Is it the flow sequence start indicator?
        if c == b'[' {
            return self.fetch_flow_collection_start(TokenType::FlowSequenceStart);
        }

        // Is it the flow mapping start indicator?
        if c == b'{' {
            return self.fetch_flow_collection_start(TokenType::FlowMappingStart);
        }

        // Is it the flow sequence end indicator?
        if c == b']' {
            return self.fetch_flow_collection_end(TokenType::FlowSequenceEnd);
        }

        // Is it the flow mapping end indicator?
        if c == b'}' {
            return self.fetch_flow_collection_end(TokenType::FlowMappingEnd);
        }

        // Is it the flow entry indicator?
        if c == b',' {
            return self.fetch_flow_entry();
        }

        let next_is_blankz = is_blankz(&self.buffer, self.buffer_pos + 1);

        // Is it the block entry indicator?
        if c == b'-' && next_is_blankz {
            return self.fetch_block_entry();
        }

        // Is it the key indicator?
        if c == b'?' && (self.flow_level > 0 || next_is_blankz) {
            return self.fetch_key();
        }

        // Is it the value indicator?
        if c == b':' && (self.flow_level > 0 || next_is_blankz) {
            return self.fetch_value();
        }

        // Is it an alias?
        if c == b'*' {
            return self.fetch_anchor(TokenType::Alias);
        }

        // Is it an anchor?
        if c == b'&' {
            return self.fetch_anchor(TokenType::Anchor);
        }

        // Is it a tag?
        if c == b'!' {
            return self.fetch_tag();
        }

        // Is it a literal scalar?
        if c == b'|' && self.flow_level == 0 {
            return self.fetch_block_scalar(true);
        }

        // Is it a folded scalar?
        if c == b'>' && self.flow_level == 0 {
            return self.fetch_block_scalar(false);
        }

        // Is it a single-quoted scalar?
        if c == b'\'' {
            return self.fetch_flow_scalar(true);
        }

        // Is it a double-quoted scalar?
        if c == b'"' {
            return self.fetch_flow_scalar(false);
        }

        // Is it a plain scalar?
        //
        // A plain scalar may start with any non-blank characters except
        //
        //      '-', '?', ':', ',', '[', ']', '{', '}',
        //      '#', '&', '*', '!', '|', '>', '\'', '\"',
        //      '%', '@', '`'.
        //
        // In the block context (and, for the '-' indicator, in the flow context
        // too), it may also start with the characters
        //
        //      '-', '?', ':'
        //
        // if it is followed by a non-space character.
        //
        // The last rule is more restrictive than the specification requires.
        // [Go] TODO Make this logic more reasonable.
        if !(is_blankz(&self.buffer, self.buffer_pos)
            || matches!(
                c,
                b'-' | b'?'
                    | b':'
                    | b','
                    | b'['
                    | b']'
                    | b'{'
                    | b'}'
                    | b'#'
                    | b'&'
                    | b'*'
                    | b'!'
                    | b'|'
                    | b'>'
                    | b'\''
                    | b'"'
                    | b'%'
                    | b'@'
                    | b'`'
            ))
            || (c == b'-' && !is_blank(&self.buffer, self.buffer_pos + 1))
            || (self.flow_level == 0 && (c == b'?' || c == b':') && !next_is_blankz)
        {
            return self.fetch_plain_scalar();
        }

        // If we don't determine the token type so far, it is an error.
        Err(self.scanner_error(
            "while scanning for the next token",
            self.mark,
            "found character that cannot start any token",
        ))
    }

    // ----------------------------------------------------------------------
    // Simple keys, flow levels and indentation.

    /// `yaml_simple_key_is_valid` for `simple_keys[idx]`: whether the
    /// potential simple key is still possible; a stale required key is an
    /// error.
    fn simple_key_is_valid(&mut self, idx: usize) -> Result<bool> {
        // An index left behind in `simple_keys_by_tok` for a flow level that
        // is gone would make Go panic; treat it as no key.
        let Some(simple_key) = self.simple_keys.get(idx).copied() else {
            return Ok(false);
        };
        if !simple_key.possible {
            return Ok(false);
        }

        // The 1.2 specification says:
        //
        //     "If the ? indicator is omitted, parsing needs to see past the
        //     implicit key to recognize it as such. To limit the amount of
        //     lookahead required, the “:” indicator must appear at most 1024
        //     Unicode characters beyond the start of the key. In addition, the key
        //     is restricted to a single line."
        //
        if simple_key.mark.line < self.mark.line || simple_key.mark.index + 1024 < self.mark.index {
            // Check if the potential simple key to be removed is required.
            if simple_key.required {
                return Err(self.scanner_error(
                    "while scanning a simple key",
                    simple_key.mark,
                    "could not find expected ':'",
                ));
            }
            self.simple_keys[idx].possible = false;
            return Ok(false);
        }
        Ok(true)
    }

    /// `yaml_parser_save_simple_key`: check if a simple key may start at the
    /// current position and add it if needed.
    fn save_simple_key(&mut self) -> Result<()> {
        // A simple key is required at the current position if the scanner is in
        // the block context and the current column coincides with the indentation
        // level.
        let required = self.flow_level == 0 && self.indent == int(self.mark.column);

        //
        // If the current position may start a simple key, save it.
        //
        if self.simple_key_allowed {
            let simple_key = SimpleKey {
                possible: true,
                required,
                token_number: self.next_token_number(),
                mark: self.mark,
            };

            self.remove_simple_key()?;
            if let Some(last) = self.simple_keys.len().checked_sub(1) {
                self.simple_keys[last] = simple_key;
                self.simple_keys_by_tok
                    .insert(simple_key.token_number, last, self.tokens_parsed);
            }
        }
        Ok(())
    }

    /// `yaml_parser_remove_simple_key`: remove a potential simple key at the
    /// current flow level.
    fn remove_simple_key(&mut self) -> Result<()> {
        let Some(i) = self.simple_keys.len().checked_sub(1) else {
            return Ok(());
        };
        let simple_key = self.simple_keys[i];
        if simple_key.possible {
            // If the key is required, it is an error.
            if simple_key.required {
                return Err(self.scanner_error(
                    "while scanning a simple key",
                    simple_key.mark,
                    "could not find expected ':'",
                ));
            }
            // Remove the key from the stack.
            self.simple_keys[i].possible = false;
            self.simple_keys_by_tok.remove(simple_key.token_number);
        }
        Ok(())
    }

    /// `yaml_parser_increase_flow_level`: increase the flow level and resize
    /// the simple key list if needed.
    fn increase_flow_level(&mut self) -> Result<()> {
        // Reset the simple key on the next level.
        self.simple_keys.push(SimpleKey {
            possible: false,
            required: false,
            token_number: self.next_token_number(),
            mark: self.mark,
        });

        // Increase the flow level.
        self.flow_level += 1;
        if self.flow_level > MAX_FLOW_LEVEL {
            let mark = self.simple_keys.last().map_or(self.mark, |k| k.mark);
            return Err(self.scanner_error(
                "while increasing flow level",
                mark,
                &format!("exceeded max depth of {MAX_FLOW_LEVEL}"),
            ));
        }
        Ok(())
    }

    /// `yaml_parser_decrease_flow_level`.
    fn decrease_flow_level(&mut self) {
        if self.flow_level > 0 {
            self.flow_level -= 1;
            if let Some(last) = self.simple_keys.pop() {
                self.simple_keys_by_tok.remove(last.token_number);
            }
        }
    }

    /// `yaml_parser_roll_indent`: push the current indentation level to the
    /// stack and set the new level if the current column is greater than the
    /// indentation level. In this case, append or insert the specified token
    /// into the token queue. `number` is the absolute token number to insert
    /// at (Go's `number > -1`), `None` to append.
    fn roll_indent(
        &mut self,
        column: isize,
        number: Option<usize>,
        typ: TokenType,
        mark: Mark,
    ) -> Result<()> {
        // In the flow context, do nothing.
        if self.flow_level > 0 {
            return Ok(());
        }

        if self.indent < column {
            // Push the current indentation level to the stack and set the new
            // indentation level.
            self.indents.push(self.indent);
            self.indent = column;
            if self.indents.len() > MAX_INDENTS {
                let context_mark = self.simple_keys.last().map_or(self.mark, |k| k.mark);
                return Err(self.scanner_error(
                    "while increasing indent level",
                    context_mark,
                    &format!("exceeded max depth of {MAX_INDENTS}"),
                ));
            }

            // Create a token and insert it into the queue.
            let token = simple_token(typ, mark, mark);
            // A negative position (Go) appends.
            let pos = number.and_then(|n| n.checked_sub(self.tokens_parsed));
            self.insert_token(pos, token);
        }
        Ok(())
    }

    /// `yaml_parser_unroll_indent`: pop indentation levels from the indents
    /// stack until the current level becomes less or equal to the column. For
    /// each indentation level, append the BLOCK-END token.
    fn unroll_indent(&mut self, column: isize, scan_mark: Mark) -> Result<()> {
        // In the flow context, do nothing.
        if self.flow_level > 0 {
            return Ok(());
        }

        let mut block_mark = scan_mark;
        // Go decrements a signed index; it is never 0 here when a block ends
        // (some token was consumed before any indentation level was pushed).
        block_mark.index = block_mark.index.saturating_sub(1);

        // Loop through the indentation levels in the stack.
        while self.indent > column {
            // [Go] Reposition the end token before potential following
            //      foot comments of parent blocks. For that, search
            //      backwards for recent comments that were at the same
            //      indent as the block that is ending now.
            let mut stop_index = block_mark.index;
            for comment in self.comments.iter().rev() {
                if comment.end_mark.index < stop_index {
                    // Don't go back beyond the start of the comment/whitespace scan, unless column < 0.
                    // If requested indent column is < 0, then the document is over and everything else
                    // is a foot anyway.
                    break;
                }
                if int(comment.start_mark.column) == self.indent + 1 {
                    // This is a good match. But maybe there's a former comment
                    // at that same indent level, so keep searching.
                    block_mark = comment.start_mark;
                }

                // While the end of the former comment matches with
                // the start of the following one, we know there's
                // nothing in between and scanning is still safe.
                stop_index = comment.scan_mark.index;
            }

            // Create a token and append it to the queue.
            let token = simple_token(TokenType::BlockEnd, block_mark, block_mark);
            self.insert_token(None, token);

            // Pop the indentation level.
            match self.indents.pop() {
                Some(indent) => self.indent = indent,
                None => {
                    // Unreachable: an indentation above -1 was pushed.
                    self.indent = -1;
                    break;
                }
            }
        }
        Ok(())
    }

    // ----------------------------------------------------------------------
    // Token fetchers.

    /// `yaml_parser_fetch_stream_start`: initialize the scanner and produce
    /// the STREAM-START token.
    fn fetch_stream_start(&mut self) {
        // Set the initial indentation.
        self.indent = -1;

        // Initialize the simple key stack.
        self.simple_keys.push(SimpleKey::default());

        self.simple_keys_by_tok.clear();

        // A simple key is allowed at the beginning of the stream.
        self.simple_key_allowed = true;

        // We have started.
        self.stream_start_produced = true;

        // Create the STREAM-START token and append it to the queue.
        let token = simple_token(TokenType::StreamStart, self.mark, self.mark);
        self.insert_token(None, token);
    }

    /// `yaml_parser_fetch_stream_end`: produce the STREAM-END token and shut
    /// down the scanner.
    fn fetch_stream_end(&mut self) -> Result<()> {
        // Force new line.
        if self.mark.column != 0 {
            self.mark.column = 0;
            self.mark.line += 1;
        }

        // Reset the indentation level.
        self.unroll_indent(-1, self.mark)?;

        // Reset simple keys.
        self.remove_simple_key()?;

        self.simple_key_allowed = false;

        // Create the STREAM-END token and append it to the queue.
        let token = simple_token(TokenType::StreamEnd, self.mark, self.mark);
        self.insert_token(None, token);
        Ok(())
    }

    /// `yaml_parser_fetch_directive`: produce a VERSION-DIRECTIVE or
    /// TAG-DIRECTIVE token.
    fn fetch_directive(&mut self) -> Result<()> {
        // Reset the indentation level.
        self.unroll_indent(-1, self.mark)?;

        // Reset simple keys.
        self.remove_simple_key()?;

        self.simple_key_allowed = false;

        // Create the YAML-DIRECTIVE or TAG-DIRECTIVE token.
        let token = self.scan_directive()?;
        // Append the token to the queue.
        self.insert_token(None, token);
        Ok(())
    }

    /// `yaml_parser_fetch_document_indicator`: produce the DOCUMENT-START or
    /// DOCUMENT-END token.
    fn fetch_document_indicator(&mut self, typ: TokenType) -> Result<()> {
        // Reset the indentation level.
        self.unroll_indent(-1, self.mark)?;

        // Reset simple keys.
        self.remove_simple_key()?;

        self.simple_key_allowed = false;

        // Consume the token.
        let start_mark = self.mark.fresh_copy();

        self.skip();
        self.skip();
        self.skip();

        let end_mark = self.mark.fresh_copy();

        // Create the DOCUMENT-START or DOCUMENT-END token.
        let token = simple_token(typ, start_mark, end_mark);
        // Append the token to the queue.
        self.insert_token(None, token);
        Ok(())
    }

    /// `yaml_parser_fetch_flow_collection_start`: produce the
    /// FLOW-SEQUENCE-START or FLOW-MAPPING-START token.
    fn fetch_flow_collection_start(&mut self, typ: TokenType) -> Result<()> {
        // The indicators '[' and '{' may start a simple key.
        self.save_simple_key()?;

        // Increase the flow level.
        self.increase_flow_level()?;

        // A simple key may follow the indicators '[' and '{'.
        self.simple_key_allowed = true;

        // Consume the token.
        let start_mark = self.mark.fresh_copy();
        self.skip();
        let end_mark = self.mark.fresh_copy();

        // Create the FLOW-SEQUENCE-START of FLOW-MAPPING-START token.
        let token = simple_token(typ, start_mark, end_mark);
        // Append the token to the queue.
        self.insert_token(None, token);
        Ok(())
    }

    /// `yaml_parser_fetch_flow_collection_end`: produce the FLOW-SEQUENCE-END
    /// or FLOW-MAPPING-END token.
    fn fetch_flow_collection_end(&mut self, typ: TokenType) -> Result<()> {
        // Reset any potential simple key on the current flow level.
        self.remove_simple_key()?;

        // Decrease the flow level.
        self.decrease_flow_level();

        // No simple keys after the indicators ']' and '}'.
        self.simple_key_allowed = false;

        // Consume the token.

        let start_mark = self.mark.fresh_copy();
        self.skip();
        let end_mark = self.mark.fresh_copy();

        // Create the FLOW-SEQUENCE-END of FLOW-MAPPING-END token.
        let token = simple_token(typ, start_mark, end_mark);
        // Append the token to the queue.
        self.insert_token(None, token);
        Ok(())
    }

    /// `yaml_parser_fetch_flow_entry`: produce the FLOW-ENTRY token.
    fn fetch_flow_entry(&mut self) -> Result<()> {
        // Reset any potential simple keys on the current flow level.
        self.remove_simple_key()?;

        // Simple keys are allowed after ','.
        self.simple_key_allowed = true;

        // Consume the token.
        let start_mark = self.mark.fresh_copy();
        self.skip();
        let end_mark = self.mark.fresh_copy();

        // Create the FLOW-ENTRY token and append it to the queue.
        let token = simple_token(TokenType::FlowEntry, start_mark, end_mark);
        self.insert_token(None, token);
        Ok(())
    }

    /// `yaml_parser_fetch_block_entry`: produce the BLOCK-ENTRY token.
    fn fetch_block_entry(&mut self) -> Result<()> {
        // Check if the scanner is in the block context.
        if self.flow_level == 0 {
            // Check if we are allowed to start a new entry.
            if !self.simple_key_allowed {
                return Err(self.scanner_error(
                    "",
                    self.mark,
                    "block sequence entries are not allowed in this context",
                ));
            }
            // Add the BLOCK-SEQUENCE-START token if needed.
            self.roll_indent(
                int(self.mark.column),
                None,
                TokenType::BlockSequenceStart,
                self.mark,
            )?;
        } else {
            // It is an error for the '-' indicator to occur in the flow context,
            // but we let the Parser detect and report about it because the Parser
            // is able to point to the context.
        }

        // Reset any potential simple keys on the current flow level.
        self.remove_simple_key()?;

        // Simple keys are allowed after '-'.
        self.simple_key_allowed = true;

        // Consume the token.
        let start_mark = self.mark.fresh_copy();
        self.skip();
        let end_mark = self.mark.fresh_copy();

        // Create the BLOCK-ENTRY token and append it to the queue.
        let token = simple_token(TokenType::BlockEntry, start_mark, end_mark);
        self.insert_token(None, token);
        Ok(())
    }

    /// `yaml_parser_fetch_key`: produce the KEY token.
    fn fetch_key(&mut self) -> Result<()> {
        // In the block context, additional checks are required.
        if self.flow_level == 0 {
            // Check if we are allowed to start a new key (not nessesary simple).
            if !self.simple_key_allowed {
                return Err(self.scanner_error(
                    "",
                    self.mark,
                    "mapping keys are not allowed in this context",
                ));
            }
            // Add the BLOCK-MAPPING-START token if needed.
            self.roll_indent(
                int(self.mark.column),
                None,
                TokenType::BlockMappingStart,
                self.mark,
            )?;
        }

        // Reset any potential simple keys on the current flow level.
        self.remove_simple_key()?;

        // Simple keys are allowed after '?' in the block context.
        self.simple_key_allowed = self.flow_level == 0;

        // Consume the token.
        let start_mark = self.mark.fresh_copy();
        self.skip();
        let end_mark = self.mark.fresh_copy();

        // Create the KEY token and append it to the queue.
        let token = simple_token(TokenType::Key, start_mark, end_mark);
        self.insert_token(None, token);
        Ok(())
    }

    /// `yaml_parser_fetch_value`: produce the VALUE token.
    fn fetch_value(&mut self) -> Result<()> {
        let idx = self.simple_keys.len().saturating_sub(1);

        // Have we found a simple key?
        if self.simple_key_is_valid(idx)? {
            let simple_key = self.simple_keys[idx];

            // Create the KEY token and insert it into the queue.
            let token = simple_token(TokenType::Key, simple_key.mark, simple_key.mark);
            // A negative position (Go) appends.
            let pos = simple_key.token_number.checked_sub(self.tokens_parsed);
            self.insert_token(pos, token);

            // In the block context, we may need to add the BLOCK-MAPPING-START token.
            self.roll_indent(
                int(simple_key.mark.column),
                Some(simple_key.token_number),
                TokenType::BlockMappingStart,
                simple_key.mark,
            )?;

            // Remove the simple key.
            self.simple_keys[idx].possible = false;
            self.simple_keys_by_tok.remove(simple_key.token_number);

            // A simple key cannot follow another simple key.
            self.simple_key_allowed = false;
        } else {
            // The ':' indicator follows a complex key.

            // In the block context, extra checks are required.
            if self.flow_level == 0 {
                // Check if we are allowed to start a complex value.
                if !self.simple_key_allowed {
                    return Err(self.scanner_error(
                        "",
                        self.mark,
                        "mapping values are not allowed in this context",
                    ));
                }

                // Add the BLOCK-MAPPING-START token if needed.
                self.roll_indent(
                    int(self.mark.column),
                    None,
                    TokenType::BlockMappingStart,
                    self.mark,
                )?;
            }

            // Simple keys after ':' are allowed in the block context.
            self.simple_key_allowed = self.flow_level == 0;
        }

        // Consume the token.
        let start_mark = self.mark.fresh_copy();
        self.skip();
        let end_mark = self.mark.fresh_copy();

        // Create the VALUE token and append it to the queue.
        let token = simple_token(TokenType::Value, start_mark, end_mark);
        self.insert_token(None, token);
        Ok(())
    }

    /// `yaml_parser_fetch_anchor`: produce the ALIAS or ANCHOR token.
    fn fetch_anchor(&mut self, typ: TokenType) -> Result<()> {
        // An anchor or an alias could be a simple key.
        self.save_simple_key()?;

        // A simple key cannot follow an anchor or an alias.
        self.simple_key_allowed = false;

        // Create the ALIAS or ANCHOR token and append it to the queue.
        let token = self.scan_anchor(typ)?;
        self.insert_token(None, token);
        Ok(())
    }

    /// `yaml_parser_fetch_tag`: produce the TAG token.
    fn fetch_tag(&mut self) -> Result<()> {
        // A tag could be a simple key.
        self.save_simple_key()?;

        // A simple key cannot follow a tag.
        self.simple_key_allowed = false;

        // Create the TAG token and append it to the queue.
        let token = self.scan_tag()?;
        self.insert_token(None, token);
        Ok(())
    }

    /// `yaml_parser_fetch_block_scalar`: produce the SCALAR(...,literal) or
    /// SCALAR(...,folded) tokens.
    fn fetch_block_scalar(&mut self, literal: bool) -> Result<()> {
        // Remove any potential simple keys.
        self.remove_simple_key()?;

        // A simple key may follow a block scalar.
        self.simple_key_allowed = true;

        // Create the SCALAR token and append it to the queue.
        let token = self.scan_block_scalar(literal)?;
        self.insert_token(None, token);
        Ok(())
    }

    /// `yaml_parser_fetch_flow_scalar`: produce the SCALAR(...,single-quoted)
    /// or SCALAR(...,double-quoted) tokens.
    fn fetch_flow_scalar(&mut self, single: bool) -> Result<()> {
        // A plain scalar could be a simple key.
        self.save_simple_key()?;

        // A simple key cannot follow a flow scalar.
        self.simple_key_allowed = false;

        // Create the SCALAR token and append it to the queue.
        let token = self.scan_flow_scalar(single)?;
        self.insert_token(None, token);
        Ok(())
    }

    /// `yaml_parser_fetch_plain_scalar`: produce the SCALAR(...,plain) token.
    fn fetch_plain_scalar(&mut self) -> Result<()> {
        // A plain scalar could be a simple key.
        self.save_simple_key()?;

        // A simple key cannot follow a flow scalar.
        self.simple_key_allowed = false;

        // Create the SCALAR token and append it to the queue.
        let token = self.scan_plain_scalar()?;
        self.insert_token(None, token);
        Ok(())
    }

    // ----------------------------------------------------------------------
    // Scanners.

    /// `yaml_parser_scan_to_next_token`: eat whitespaces and comments until
    /// the next token is found.
    fn scan_to_next_token(&mut self) -> Result<()> {
        let scan_mark = self.mark.fresh_copy();

        // Until the next token is not found.
        loop {
            // Allow the BOM mark to start a line.
            // (Go looks only at the start of its buffer window, and then
            // skips whatever character is here, counting it as a column; a
            // BOM is skipped here only where it is, as no column: see the
            // module documentation.)
            if self.mark.column == 0
                && is_bom(&self.buffer, self.buffer_pos)
                && is_bom_at(&self.buffer, self.buffer_pos)
            {
                self.skip();
                self.mark.column = 0;
            }

            // Eat whitespaces.
            // Tabs are allowed:
            //  - in the flow context
            //  - in the block context, but not at the beginning of the line or
            //  after '-', '?', or ':' (complex value).
            // (The run is skipped at once: skipping a blank only advances
            // the position, index and column by one.)
            let tabs = self.flow_level > 0 || !self.simple_key_allowed;
            let run = blank_run(&self.buffer, self.buffer_pos, tabs);
            self.buffer_pos += run;
            self.mark = self.mark.forward(narrow(run));

            // Check if we just had a line comment under a sequence entry that
            // looks more like a header to the following content. Similar to this:
            //
            // - # The comment
            //   - Some data
            //
            // If so, transform the line comment to a head comment and reposition.
            let n = self.tokens.len();
            if n > 1 && self.comments.last().is_some_and(|c| !c.line.is_empty()) {
                let token_a = self.tokens[n - 2].typ;
                let token_b = self.tokens[n - 1].typ;
                let at_break = is_break(&self.buffer, self.buffer_pos);
                let mark = self.mark.fresh_copy();
                if let Some(comment) = self.comments.last_mut() {
                    if token_a == TokenType::BlockSequenceStart
                        && token_b == TokenType::BlockEntry
                        && !comment.line.is_empty()
                        && !at_break
                    {
                        // If it was in the prior line, reposition so it becomes a
                        // header of the follow up token. Otherwise, keep it in place
                        // so it becomes a header of the former.
                        comment.head = std::mem::take(&mut comment.line);
                        if comment.start_mark.line + 1 == mark.line {
                            comment.token_mark = mark;
                        }
                    }
                }
            }

            // Eat a comment until a line break.
            if self.ch(0) == b'#' {
                self.scan_comments(scan_mark)?;
            }

            // If it is a line break, eat it.
            if is_break(&self.buffer, self.buffer_pos) {
                self.skip_line();

                // In the block context, a new line may start a simple key.
                if self.flow_level == 0 {
                    self.simple_key_allowed = true;
                }
            } else {
                break; // We have found a token.
            }
        }

        Ok(())
    }

    /// Eat blanks (`for is_blank(...) { skip(parser) }`).
    #[inline]
    fn skip_blanks(&mut self) {
        while is_blank(&self.buffer, self.buffer_pos) {
            self.skip();
        }
    }

    /// `yaml_parser_scan_directive`: scan a YAML-DIRECTIVE or TAG-DIRECTIVE
    /// token.
    ///
    /// Scope:
    /// ```text
    ///      %YAML    1.1    # a comment \n
    ///      ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
    ///      %TAG    !yaml!  tag:yaml.org,2002:  \n
    ///      ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
    /// ```
    fn scan_directive(&mut self) -> Result<Token> {
        // Eat '%'.
        let start_mark = self.mark.fresh_copy();
        self.skip();

        // Scan the directive name.
        let name = self.scan_directive_name(start_mark)?;

        let token = if name == b"YAML" {
            // Is it a YAML directive?

            // Scan the VERSION directive value.
            let (major, minor) = self.scan_version_directive_value(start_mark)?;
            let end_mark = self.mark.fresh_copy();

            // Create a VERSION-DIRECTIVE token.
            Token {
                typ: TokenType::VersionDirective,
                start_mark,
                end_mark,
                major,
                minor,
                ..Token::default()
            }
        } else if name == b"TAG" {
            // Is it a TAG directive?

            // Scan the TAG directive value.
            let (handle, prefix) = self.scan_tag_directive_value(start_mark)?;
            let end_mark = self.mark.fresh_copy();

            // Create a TAG-DIRECTIVE token.
            Token {
                typ: TokenType::TagDirective,
                start_mark,
                end_mark,
                value: handle,
                extra: prefix,
                ..Token::default()
            }
        } else {
            // Unknown directive.
            return Err(self.scanner_error(
                "while scanning a directive",
                start_mark,
                "found unknown directive name",
            ));
        };

        // Eat the rest of the line including any comments.
        self.skip_blanks();

        if self.ch(0) == b'#' {
            // [Go] Discard this inline comment for the time being.
            //if !yaml_parser_scan_line_comment(parser, start_mark) {
            //	return false
            //}
            while !is_breakz(&self.buffer, self.buffer_pos) {
                self.skip();
            }
        }

        // Check if we are at the end of the line.
        if !is_breakz(&self.buffer, self.buffer_pos) {
            return Err(self.scanner_error(
                "while scanning a directive",
                start_mark,
                "did not find expected comment or line break",
            ));
        }

        // Eat a line break.
        if is_break(&self.buffer, self.buffer_pos) {
            self.skip_line();
        }

        Ok(token)
    }

    /// `yaml_parser_scan_directive_name`: scan the directive name.
    ///
    /// Scope:
    /// ```text
    ///      %YAML   1.1     # a comment \n
    ///       ^^^^
    ///      %TAG    !yaml!  tag:yaml.org,2002:  \n
    ///       ^^^
    /// ```
    fn scan_directive_name(&mut self, start_mark: Mark) -> Result<Vec<u8>> {
        // Consume the directive name.
        let mut s = Vec::new();
        while is_alpha(&self.buffer, self.buffer_pos) {
            self.read(&mut s);
        }

        // Check if the name is empty.
        if s.is_empty() {
            return Err(self.scanner_error(
                "while scanning a directive",
                start_mark,
                "could not find expected directive name",
            ));
        }

        // Check for an blank character after the name.
        if !is_blankz(&self.buffer, self.buffer_pos) {
            return Err(self.scanner_error(
                "while scanning a directive",
                start_mark,
                "found unexpected non-alphabetical character",
            ));
        }
        Ok(s)
    }

    /// `yaml_parser_scan_version_directive_value`: scan the value of
    /// VERSION-DIRECTIVE; returns `(major, minor)`.
    ///
    /// Scope:
    /// ```text
    ///      %YAML   1.1     # a comment \n
    ///           ^^^^^^
    /// ```
    fn scan_version_directive_value(&mut self, start_mark: Mark) -> Result<(i8, i8)> {
        // Eat whitespaces.
        self.skip_blanks();

        // Consume the major version number.
        let major = self.scan_version_directive_number(start_mark)?;

        // Eat '.'.
        if self.ch(0) != b'.' {
            return Err(self.scanner_error(
                "while scanning a %YAML directive",
                start_mark,
                "did not find expected digit or '.' character",
            ));
        }

        self.skip();

        // Consume the minor version number.
        let minor = self.scan_version_directive_number(start_mark)?;
        Ok((major, minor))
    }

    /// `yaml_parser_scan_version_directive_number`: scan the version number of
    /// VERSION-DIRECTIVE.
    ///
    /// Scope:
    /// ```text
    ///      %YAML   1.1     # a comment \n
    ///              ^
    ///      %YAML   1.1     # a comment \n
    ///                ^
    /// ```
    fn scan_version_directive_number(&mut self, start_mark: Mark) -> Result<i8> {
        // Repeat while the next character is digit.
        let mut value: i8 = 0;
        let mut length: i8 = 0;
        while is_digit(&self.buffer, self.buffer_pos) {
            // Check if the number is too long.
            length += 1;
            if length > MAX_NUMBER_LENGTH {
                return Err(self.scanner_error(
                    "while scanning a %YAML directive",
                    start_mark,
                    "found extremely long version number",
                ));
            }
            // At most two digits: at most 99, which fits.
            let digit = i8::try_from(as_digit(&self.buffer, self.buffer_pos)).unwrap_or(0);
            value = value.wrapping_mul(10).wrapping_add(digit);
            self.skip();
        }

        // Check if the number was present.
        if length == 0 {
            return Err(self.scanner_error(
                "while scanning a %YAML directive",
                start_mark,
                "did not find expected version number",
            ));
        }
        Ok(value)
    }

    /// `yaml_parser_scan_tag_directive_value`: scan the value of a
    /// TAG-DIRECTIVE token; returns `(handle, prefix)`.
    ///
    /// Scope:
    /// ```text
    ///      %TAG    !yaml!  tag:yaml.org,2002:  \n
    ///          ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
    /// ```
    fn scan_tag_directive_value(&mut self, start_mark: Mark) -> Result<(Vec<u8>, Vec<u8>)> {
        // Eat whitespaces.
        self.skip_blanks();

        // Scan a handle.
        let handle_value = self.scan_tag_handle(true, start_mark)?;

        // Expect a whitespace.
        if !is_blank(&self.buffer, self.buffer_pos) {
            return Err(self.scanner_error(
                "while scanning a %TAG directive",
                start_mark,
                "did not find expected whitespace",
            ));
        }

        // Eat whitespaces.
        self.skip_blanks();

        // Scan a prefix.
        let prefix_value = self.scan_tag_uri(true, &[], start_mark)?;

        // Expect a whitespace or line break.
        if !is_blankz(&self.buffer, self.buffer_pos) {
            return Err(self.scanner_error(
                "while scanning a %TAG directive",
                start_mark,
                "did not find expected whitespace or line break",
            ));
        }

        Ok((handle_value, prefix_value))
    }

    /// `yaml_parser_scan_anchor`: scan an ANCHOR or ALIAS token.
    fn scan_anchor(&mut self, typ: TokenType) -> Result<Token> {
        let mut s = Vec::new();

        // Eat the indicator character.
        let start_mark = self.mark.fresh_copy();
        self.skip();

        // Consume the value.
        while is_alpha(&self.buffer, self.buffer_pos) {
            self.read(&mut s);
        }

        let end_mark = self.mark.fresh_copy();

        /*
         * Check if length of the anchor is greater than 0 and it is followed by
         * a whitespace character or one of the indicators:
         *
         *      '?', ':', ',', ']', '}', '%', '@', '`'.
         */

        if s.is_empty()
            || !(is_blankz(&self.buffer, self.buffer_pos)
                || matches!(
                    self.ch(0),
                    b'?' | b':' | b',' | b']' | b'}' | b'%' | b'@' | b'`'
                ))
        {
            let context = if typ == TokenType::Anchor {
                "while scanning an anchor"
            } else {
                "while scanning an alias"
            };
            return Err(self.scanner_error(
                context,
                start_mark,
                "did not find expected alphabetic or numeric character",
            ));
        }

        // Create a token.
        Ok(Token {
            typ,
            start_mark,
            end_mark,
            value: s,
            ..Token::default()
        })
    }

    /// `yaml_parser_scan_tag`: scan a TAG token.
    fn scan_tag(&mut self) -> Result<Token> {
        let mut handle;
        let mut suffix;

        let start_mark = self.mark.fresh_copy();

        // Check if the tag is in the canonical form.
        if self.ch(1) == b'<' {
            // Keep the handle as ''
            handle = Vec::new();

            // Eat '!<'
            self.skip();
            self.skip();

            // Consume the tag value.
            suffix = self.scan_tag_uri(false, &[], start_mark)?;

            // Check for '>' and eat it.
            if self.ch(0) != b'>' {
                return Err(self.scanner_error(
                    "while scanning a tag",
                    start_mark,
                    "did not find the expected '>'",
                ));
            }

            self.skip();
        } else {
            // The tag has either the '!suffix' or the '!handle!suffix' form.

            // First, try to scan a handle.
            handle = self.scan_tag_handle(false, start_mark)?;

            // Check if it is, indeed, handle.
            if handle.first() == Some(&b'!') && handle.len() > 1 && handle.last() == Some(&b'!') {
                // Scan the suffix now.
                suffix = self.scan_tag_uri(false, &[], start_mark)?;
            } else {
                // It wasn't a handle after all.  Scan the rest of the tag.
                suffix = self.scan_tag_uri(false, &handle, start_mark)?;

                // Set the handle to '!'.
                handle = vec![b'!'];

                // A special case: the '!' tag.  Set the handle to '' and the
                // suffix to '!'.
                if suffix.is_empty() {
                    std::mem::swap(&mut handle, &mut suffix);
                }
            }
        }

        // Check the character which ends the tag.
        if !is_blankz(&self.buffer, self.buffer_pos) {
            return Err(self.scanner_error(
                "while scanning a tag",
                start_mark,
                "did not find expected whitespace or line break",
            ));
        }

        let end_mark = self.mark.fresh_copy();

        // Create a token.
        Ok(Token {
            typ: TokenType::Tag,
            start_mark,
            end_mark,
            value: handle,
            extra: suffix,
            ..Token::default()
        })
    }

    /// `yaml_parser_scan_tag_handle`: scan a tag handle.
    fn scan_tag_handle(&mut self, directive: bool, start_mark: Mark) -> Result<Vec<u8>> {
        // Check the initial '!' character.
        if self.ch(0) != b'!' {
            return Err(self.scanner_tag_error(directive, start_mark, "did not find expected '!'"));
        }

        let mut s = Vec::new();

        // Copy the '!' character.
        self.read(&mut s);

        // Copy all subsequent alphabetical and numerical characters.
        while is_alpha(&self.buffer, self.buffer_pos) {
            self.read(&mut s);
        }

        // Check if the trailing character is '!' and copy it.
        if self.ch(0) == b'!' {
            self.read(&mut s);
        } else {
            // It's either the '!' tag or not really a tag handle.  If it's a %TAG
            // directive, it's an error.  If it's a tag token, it must be a part of URI.
            if directive && s != b"!" {
                return Err(self.scanner_tag_error(
                    directive,
                    start_mark,
                    "did not find expected '!'",
                ));
            }
        }

        Ok(s)
    }

    /// `yaml_parser_scan_tag_uri`: scan a tag URI; `head` is Go's `head`
    /// (empty for nil), whose leading '!' is not copied.
    fn scan_tag_uri(&mut self, directive: bool, head: &[u8], start_mark: Mark) -> Result<Vec<u8>> {
        //size_t length = head ? strlen((char *)head) : 0
        let mut s = Vec::new();
        let mut has_tag = !head.is_empty();

        // Copy the head if needed.
        //
        // Note that we don't copy the leading '!' character.
        if let Some(rest) = head.get(1..) {
            s.extend_from_slice(rest);
        }

        // The set of characters that may appear in URI is as follows:
        //
        //      '0'-'9', 'A'-'Z', 'a'-'z', '_', '-', ';', '/', '?', ':', '@', '&',
        //      '=', '+', '$', ',', '.', '!', '~', '*', '\'', '(', ')', '[', ']',
        //      '%'.
        // [Go] TODO Convert this into more reasonable logic.
        while is_alpha(&self.buffer, self.buffer_pos)
            || matches!(
                self.ch(0),
                b';' | b'/'
                    | b'?'
                    | b':'
                    | b'@'
                    | b'&'
                    | b'='
                    | b'+'
                    | b'$'
                    | b','
                    | b'.'
                    | b'!'
                    | b'~'
                    | b'*'
                    | b'\''
                    | b'('
                    | b')'
                    | b'['
                    | b']'
                    | b'%'
            )
        {
            // Check if it is a URI-escape sequence.
            if self.ch(0) == b'%' {
                self.scan_uri_escapes(directive, start_mark, &mut s)?;
            } else {
                self.read(&mut s);
            }
            has_tag = true;
        }

        if !has_tag {
            return Err(self.scanner_tag_error(
                directive,
                start_mark,
                "did not find expected tag URI",
            ));
        }
        Ok(s)
    }

    /// `yaml_parser_scan_uri_escapes`: decode an URI-escape sequence
    /// corresponding to a single UTF-8 character.
    fn scan_uri_escapes(
        &mut self,
        directive: bool,
        start_mark: Mark,
        s: &mut Vec<u8>,
    ) -> Result<()> {
        // Decode the required number of characters.
        let mut w: usize = 1024;
        while w > 0 {
            // Check for a URI-escaped octet.
            if !(self.ch(0) == b'%'
                && is_hex(&self.buffer, self.buffer_pos + 1)
                && is_hex(&self.buffer, self.buffer_pos + 2))
            {
                return Err(self.scanner_tag_error(
                    directive,
                    start_mark,
                    "did not find URI escaped octet",
                ));
            }

            // Get the octet (two hex digits: at most 0xFF).
            let octet = u8::try_from(
                (as_hex(&self.buffer, self.buffer_pos + 1) << 4)
                    + as_hex(&self.buffer, self.buffer_pos + 2),
            )
            .unwrap_or(0);

            // If it is the leading octet, determine the length of the UTF-8 sequence.
            if w == 1024 {
                w = width(octet);
                if w == 0 {
                    return Err(self.scanner_tag_error(
                        directive,
                        start_mark,
                        "found an incorrect leading UTF-8 octet",
                    ));
                }
            } else {
                // Check if the trailing octet is correct.
                if octet & 0xC0 != 0x80 {
                    return Err(self.scanner_tag_error(
                        directive,
                        start_mark,
                        "found an incorrect trailing UTF-8 octet",
                    ));
                }
            }

            // Copy the octet and move the pointers.
            s.push(octet);
            self.skip();
            self.skip();
            self.skip();
            w -= 1;
        }
        Ok(())
    }

    /// `yaml_parser_scan_block_scalar`: scan a block scalar.
    fn scan_block_scalar(&mut self, literal: bool) -> Result<Token> {
        // Eat the indicator '|' or '>'.
        let start_mark = self.mark.fresh_copy();
        self.skip();

        // Scan the additional block scalar indicators.

        // Check for a chomping indicator.
        let mut chomping: i32 = 0;
        let mut increment: isize = 0;
        if self.ch(0) == b'+' || self.ch(0) == b'-' {
            // Set the chomping method and eat the indicator.
            chomping = if self.ch(0) == b'+' { 1 } else { -1 };
            self.skip();

            // Check for an indentation indicator.
            if is_digit(&self.buffer, self.buffer_pos) {
                // Check that the indentation is greater than 0.
                if self.ch(0) == b'0' {
                    return Err(self.scanner_error(
                        "while scanning a block scalar",
                        start_mark,
                        "found an indentation indicator equal to 0",
                    ));
                }

                // Get the indentation level and eat the indicator.
                increment = isize::try_from(as_digit(&self.buffer, self.buffer_pos)).unwrap_or(0);
                self.skip();
            }
        } else if is_digit(&self.buffer, self.buffer_pos) {
            // Do the same as above, but in the opposite order.

            if self.ch(0) == b'0' {
                return Err(self.scanner_error(
                    "while scanning a block scalar",
                    start_mark,
                    "found an indentation indicator equal to 0",
                ));
            }
            increment = isize::try_from(as_digit(&self.buffer, self.buffer_pos)).unwrap_or(0);
            self.skip();

            if self.ch(0) == b'+' || self.ch(0) == b'-' {
                chomping = if self.ch(0) == b'+' { 1 } else { -1 };
                self.skip();
            }
        }

        // Eat whitespaces and comments to the end of the line.
        self.skip_blanks();
        if self.ch(0) == b'#' {
            self.scan_line_comment(start_mark)?;
            while !is_breakz(&self.buffer, self.buffer_pos) {
                self.skip();
            }
        }

        // Check if we are at the end of the line.
        if !is_breakz(&self.buffer, self.buffer_pos) {
            return Err(self.scanner_error(
                "while scanning a block scalar",
                start_mark,
                "did not find expected comment or line break",
            ));
        }

        // Eat a line break.
        if is_break(&self.buffer, self.buffer_pos) {
            self.skip_line();
        }

        let mut end_mark = self.mark.fresh_copy();

        // Set the indentation level if it was specified.
        let mut indent: isize = 0;
        if increment > 0 {
            if self.indent >= 0 {
                indent = self.indent + increment;
            } else {
                indent = increment;
            }
        }

        // Scan the leading line breaks and determine the indentation level if needed.
        let mut s = Vec::new();
        let mut leading_break = Vec::new();
        let mut trailing_breaks = Vec::new();
        self.scan_block_scalar_breaks(
            &mut indent,
            &mut trailing_breaks,
            start_mark,
            &mut end_mark,
        )?;

        // Scan the block scalar content.
        let mut leading_blank = false;
        while int(self.mark.column) == indent && !is_z(&self.buffer, self.buffer_pos) {
            // We are at the beginning of a non-empty line.

            // Is it a trailing whitespace?
            let trailing_blank = is_blank(&self.buffer, self.buffer_pos);

            // Check if we need to fold the leading line break.
            if !literal
                && !leading_blank
                && !trailing_blank
                && leading_break.first() == Some(&b'\n')
            {
                // Do we need to join the lines by space?
                if trailing_breaks.is_empty() {
                    s.push(b' ');
                }
            } else {
                s.extend_from_slice(&leading_break);
            }
            leading_break.clear();

            // Append the remaining line breaks.
            s.extend_from_slice(&trailing_breaks);
            trailing_breaks.clear();

            // Is it a leading whitespace?
            leading_blank = is_blank(&self.buffer, self.buffer_pos);

            // Consume the current line.
            self.read_to_breakz(&mut s);

            // Consume the line break.
            self.read_line(&mut leading_break);

            // Eat the following indentation spaces and line breaks.
            self.scan_block_scalar_breaks(
                &mut indent,
                &mut trailing_breaks,
                start_mark,
                &mut end_mark,
            )?;
        }

        // Chomp the tail.
        if chomping != -1 {
            s.extend_from_slice(&leading_break);
        }
        if chomping == 1 {
            s.extend_from_slice(&trailing_breaks);
        }

        // Create a token.
        Ok(Token {
            typ: TokenType::Scalar,
            start_mark,
            end_mark,
            value: s,
            style: if literal {
                ScalarStyle::Literal
            } else {
                ScalarStyle::Folded
            },
            ..Token::default()
        })
    }

    /// `for !is_breakz(...) { s = read(parser, s) }`, copying the run of
    /// characters up to the next line break (or the end) at once. Marks and
    /// `newlines` end up exactly as after reading the characters one by one.
    fn read_to_breakz(&mut self, s: &mut Vec<u8>) {
        let start = self.buffer_pos;
        let mut pos = start;
        let mut chars = 0;
        let mut non_blank = false;
        loop {
            let c = at(&self.buffer, pos);
            // Fast path: printable ASCII and spaces (one byte, no break).
            if c.is_ascii_graphic() {
                non_blank = true;
                pos += 1;
                chars += 1;
                continue;
            }
            if c == b' ' {
                pos += 1;
                chars += 1;
                continue;
            }
            if is_breakz(&self.buffer, pos) {
                break;
            }
            if c != b' ' && c != b'\t' {
                non_blank = true;
            }
            pos += width(c).max(1);
            chars += 1;
        }
        if chars == 0 {
            return;
        }
        match self.buffer.get(start..pos) {
            Some(bytes) => append(s, bytes),
            None => {
                // Unreachable: a break or NUL is always found inside the
                // padded buffer. Fall back to reading one by one.
                for _ in 0..chars {
                    self.read(s);
                }
                return;
            }
        }
        if non_blank {
            self.newlines = 0;
        }
        self.buffer_pos = pos;
        self.mark = self.mark.forward(chars);
    }

    /// Copy the run of characters that the inner loop of
    /// `yaml_parser_scan_plain_scalar` would copy one by one without any other
    /// effect: characters that are not blank, a line break or NUL, not a ':'
    /// followed by a blank, a line break or NUL, and, in the flow context,
    /// not one of `,?[]{}`. Marks and `newlines` end up as after `read`ing
    /// them one by one. Returns whether anything was copied.
    fn read_plain_run(&mut self, s: &mut Vec<u8>) -> bool {
        let start = self.buffer_pos;
        let flow = self.flow_level > 0;
        let mut pos = start;
        let mut chars = 0;
        loop {
            let c = at(&self.buffer, pos);
            if PLAIN_RUN_BYTE[usize::from(c)] {
                // Fast path: a byte that passes every check below.
                pos += 1;
                chars += 1;
                continue;
            }
            if c < 0x80 {
                if c <= b' '
                    || (c == b':' && is_blankz(&self.buffer, pos + 1))
                    || (flow && matches!(c, b',' | b'?' | b'[' | b']' | b'{' | b'}'))
                {
                    break;
                }
                pos += 1;
            } else {
                if is_break(&self.buffer, pos) {
                    break;
                }
                pos += width(c).max(1);
            }
            chars += 1;
        }
        if chars == 0 {
            return false;
        }
        match self.buffer.get(start..pos) {
            Some(bytes) => append(s, bytes),
            // Unreachable: the padding NULs stop the run.
            None => return false,
        }
        // None of the characters is blank.
        self.newlines = 0;
        self.buffer_pos = pos;
        self.mark = self.mark.forward(chars);
        true
    }

    /// The scratch buffers of the scalar scanners (leading break, trailing
    /// breaks, whitespaces), emptied; handed back through `scratch` so their
    /// memory is reused by the next scalar.
    fn take_scratch(&mut self) -> [Vec<u8>; 3] {
        let mut scratch = std::mem::take(&mut self.scratch);
        for buffer in &mut scratch {
            buffer.clear();
        }
        scratch
    }

    /// Copy the run of characters that the inner loop of
    /// `yaml_parser_scan_flow_scalar` would copy one by one with `read`:
    /// characters that are not blank, a line break or NUL, not a quote or
    /// (in double quotes) a backslash. Marks and `newlines` end up as after
    /// `read`ing them one by one. Returns whether anything was copied.
    fn read_quoted_run(&mut self, s: &mut Vec<u8>) -> bool {
        let start = self.buffer_pos;
        let mut pos = start;
        let mut chars = 0;
        loop {
            let c = at(&self.buffer, pos);
            if QUOTED_RUN_BYTE[usize::from(c)] {
                // Fast path: a byte that passes every check below.
                pos += 1;
                chars += 1;
                continue;
            }
            if c < 0x80 {
                if c <= b' ' || c == b'\'' || c == b'"' || c == b'\\' {
                    // A quote of the other kind and a backslash in single
                    // quotes are ordinary, but rare: `read` takes them.
                    break;
                }
                pos += 1;
            } else {
                if is_break(&self.buffer, pos) {
                    break;
                }
                pos += width(c).max(1);
            }
            chars += 1;
        }
        if chars == 0 {
            return false;
        }
        match self.buffer.get(start..pos) {
            Some(bytes) => append(s, bytes),
            // Unreachable: the padding NULs stop the run.
            None => return false,
        }
        // None of the characters is blank.
        self.newlines = 0;
        self.buffer_pos = pos;
        self.mark = self.mark.forward(chars);
        true
    }

    /// `yaml_parser_scan_block_scalar_breaks`: scan indentation spaces and
    /// line breaks for a block scalar; determine the indentation level if
    /// needed.
    fn scan_block_scalar_breaks(
        &mut self,
        indent: &mut isize,
        breaks: &mut Vec<u8>,
        start_mark: Mark,
        end_mark: &mut Mark,
    ) -> Result<()> {
        *end_mark = self.mark.fresh_copy();

        // Eat the indentation spaces and line breaks.
        let mut max_indent: isize = 0;
        loop {
            // Eat the indentation spaces.
            while (*indent == 0 || int(self.mark.column) < *indent)
                && is_space(&self.buffer, self.buffer_pos)
            {
                self.skip();
            }
            if int(self.mark.column) > max_indent {
                max_indent = int(self.mark.column);
            }

            // Check for a tab character messing the indentation.
            if (*indent == 0 || int(self.mark.column) < *indent)
                && is_tab(&self.buffer, self.buffer_pos)
            {
                return Err(self.scanner_error(
                    "while scanning a block scalar",
                    start_mark,
                    "found a tab character where an indentation space is expected",
                ));
            }

            // Have we found a non-empty line?
            if !is_break(&self.buffer, self.buffer_pos) {
                break;
            }

            // Consume the line break.
            // [Go] Should really be returning breaks instead.
            self.read_line(breaks);
            *end_mark = self.mark.fresh_copy();
        }

        // Determine the indentation level if needed.
        if *indent == 0 {
            *indent = max_indent;
            if *indent < self.indent + 1 {
                *indent = self.indent + 1;
            }
            if *indent < 1 {
                *indent = 1;
            }
        }
        Ok(())
    }

    /// Whether a document indicator (`---` or `...` followed by a blank or
    /// the end) starts at the current position, which is at column 0.
    #[inline]
    fn at_document_indicator(&self) -> bool {
        self.mark.column == 0
            && ((self.ch(0) == b'-' && self.ch(1) == b'-' && self.ch(2) == b'-')
                || (self.ch(0) == b'.' && self.ch(1) == b'.' && self.ch(2) == b'.'))
            && is_blankz(&self.buffer, self.buffer_pos + 3)
    }

    /// `yaml_parser_scan_flow_scalar`: scan a quoted scalar.
    fn scan_flow_scalar(&mut self, single: bool) -> Result<Token> {
        // Eat the left quote.
        let start_mark = self.mark.fresh_copy();
        self.skip();

        // Consume the content of the quoted scalar.
        let mut s = Vec::new();
        let [mut leading_break, mut trailing_breaks, mut whitespaces] = self.take_scratch();
        loop {
            // Check that there are no document indicators at the beginning of the line.
            if self.at_document_indicator() {
                return Err(self.scanner_error(
                    "while scanning a quoted scalar",
                    start_mark,
                    "found unexpected document indicator",
                ));
            }

            // Check for EOF.
            if is_z(&self.buffer, self.buffer_pos) {
                return Err(self.scanner_error(
                    "while scanning a quoted scalar",
                    start_mark,
                    "found unexpected end of stream",
                ));
            }

            // Consume non-blank characters.
            let mut leading_blanks = false;
            while !is_blankz(&self.buffer, self.buffer_pos) {
                let c = self.ch(0);
                if single && c == b'\'' && self.ch(1) == b'\'' {
                    // Is is an escaped single quote.
                    s.push(b'\'');
                    self.skip();
                    self.skip();
                } else if single && c == b'\'' {
                    // It is a right single quote.
                    break;
                } else if !single && c == b'"' {
                    // It is a right double quote.
                    break;
                } else if !single && c == b'\\' && is_break(&self.buffer, self.buffer_pos + 1) {
                    // It is an escaped line break.
                    self.skip();
                    self.skip_line();
                    leading_blanks = true;
                    break;
                } else if !single && c == b'\\' {
                    // It is an escape sequence.
                    let mut code_length: usize = 0;

                    // Check the escape character.
                    match self.ch(1) {
                        b'0' => s.push(0),
                        b'a' => s.push(b'\x07'),
                        b'b' => s.push(b'\x08'),
                        b't' | b'\t' => s.push(b'\x09'),
                        b'n' => s.push(b'\x0A'),
                        b'v' => s.push(b'\x0B'),
                        b'f' => s.push(b'\x0C'),
                        b'r' => s.push(b'\x0D'),
                        b'e' => s.push(b'\x1B'),
                        b' ' => s.push(b'\x20'),
                        b'"' => s.push(b'"'),
                        b'\'' => s.push(b'\''),
                        b'\\' => s.push(b'\\'),
                        // NEL (#x85)
                        b'N' => s.extend_from_slice(b"\xC2\x85"),
                        // #xA0
                        b'_' => s.extend_from_slice(b"\xC2\xA0"),
                        // LS (#x2028)
                        b'L' => s.extend_from_slice(b"\xE2\x80\xA8"),
                        // PS (#x2029)
                        b'P' => s.extend_from_slice(b"\xE2\x80\xA9"),
                        b'x' => code_length = 2,
                        b'u' => code_length = 4,
                        b'U' => code_length = 8,
                        _ => {
                            return Err(self.scanner_error(
                                "while parsing a quoted scalar",
                                start_mark,
                                "found unknown escape character",
                            ));
                        }
                    }

                    self.skip();
                    self.skip();

                    // Consume an arbitrary escape code.
                    if code_length > 0 {
                        let mut value: u32 = 0;

                        // Scan the character value.
                        for k in 0..code_length {
                            if !is_hex(&self.buffer, self.buffer_pos + k) {
                                return Err(self.scanner_error(
                                    "while parsing a quoted scalar",
                                    start_mark,
                                    "did not find expected hexdecimal number",
                                ));
                            }
                            value = (value << 4) + as_hex(&self.buffer, self.buffer_pos + k);
                        }

                        // Check the value and write the character.
                        if (0xD800..=0xDFFF).contains(&value) || value > 0x10FFFF {
                            return Err(self.scanner_error(
                                "while parsing a quoted scalar",
                                start_mark,
                                "found invalid Unicode character escape code",
                            ));
                        }
                        // Every value left is a Unicode scalar value.
                        let ch = char::from_u32(value).unwrap_or(char::REPLACEMENT_CHARACTER);
                        let mut utf8 = [0; 4];
                        s.extend_from_slice(ch.encode_utf8(&mut utf8).as_bytes());

                        // Advance the pointer.
                        for _ in 0..code_length {
                            self.skip();
                        }
                    }
                } else {
                    // It is a non-escaped non-blank character (with the
                    // characters after it that need no special handling).
                    if !self.read_quoted_run(&mut s) {
                        self.read(&mut s);
                    }
                }
            }

            // Check if we are at the end of the scalar.
            if single {
                if self.ch(0) == b'\'' {
                    break;
                }
            } else if self.ch(0) == b'"' {
                break;
            }

            // Consume blank characters.
            while is_blank(&self.buffer, self.buffer_pos) || is_break(&self.buffer, self.buffer_pos)
            {
                if is_blank(&self.buffer, self.buffer_pos) {
                    // Consume a space or a tab character.
                    if !leading_blanks {
                        self.read(&mut whitespaces);
                    } else {
                        self.skip();
                    }
                } else {
                    // Check if it is a first line break.
                    if !leading_blanks {
                        whitespaces.clear();
                        self.read_line(&mut leading_break);
                        leading_blanks = true;
                    } else {
                        self.read_line(&mut trailing_breaks);
                    }
                }
            }

            // Join the whitespaces or fold line breaks.
            if leading_blanks {
                // Do we need to fold line breaks?
                if leading_break.first() == Some(&b'\n') {
                    if trailing_breaks.is_empty() {
                        s.push(b' ');
                    } else {
                        s.extend_from_slice(&trailing_breaks);
                    }
                } else {
                    s.extend_from_slice(&leading_break);
                    s.extend_from_slice(&trailing_breaks);
                }
                trailing_breaks.clear();
                leading_break.clear();
            } else {
                s.extend_from_slice(&whitespaces);
                whitespaces.clear();
            }
        }

        self.scratch = [leading_break, trailing_breaks, whitespaces];

        // Eat the right quote.
        self.skip();
        let end_mark = self.mark.fresh_copy();

        // Create a token.
        Ok(Token {
            typ: TokenType::Scalar,
            start_mark,
            end_mark,
            value: s,
            style: if single {
                ScalarStyle::SingleQuoted
            } else {
                ScalarStyle::DoubleQuoted
            },
            ..Token::default()
        })
    }

    /// `yaml_parser_scan_plain_scalar`: scan a plain scalar.
    fn scan_plain_scalar(&mut self) -> Result<Token> {
        let mut s = Vec::new();
        let [mut leading_break, mut trailing_breaks, mut whitespaces] = self.take_scratch();
        let mut leading_blanks = false;
        let indent = self.indent + 1;

        let start_mark = self.mark.fresh_copy();
        let mut end_mark = self.mark.fresh_copy();

        // Consume the content of the plain scalar.
        loop {
            // Check for a document indicator.
            if self.at_document_indicator() {
                break;
            }

            // Check for a comment.
            if self.ch(0) == b'#' {
                break;
            }

            // Consume non-blank characters.
            while !is_blankz(&self.buffer, self.buffer_pos) {
                let c = self.ch(0);
                // Check for indicators that may end a plain scalar.
                if (c == b':' && is_blankz(&self.buffer, self.buffer_pos + 1))
                    || (self.flow_level > 0 && matches!(c, b',' | b'?' | b'[' | b']' | b'{' | b'}'))
                {
                    break;
                }

                // Check if we need to join whitespaces and breaks.
                if leading_blanks || !whitespaces.is_empty() {
                    if leading_blanks {
                        // Do we need to fold line breaks?
                        if leading_break.first() == Some(&b'\n') {
                            if trailing_breaks.is_empty() {
                                s.push(b' ');
                            } else {
                                s.extend_from_slice(&trailing_breaks);
                            }
                        } else {
                            s.extend_from_slice(&leading_break);
                            s.extend_from_slice(&trailing_breaks);
                        }
                        trailing_breaks.clear();
                        leading_break.clear();
                        leading_blanks = false;
                    } else {
                        s.extend_from_slice(&whitespaces);
                        whitespaces.clear();
                    }
                }

                // Copy the character.
                // (It and the characters after it that can neither end the
                // scalar nor need joining are copied at once; the character
                // checked above always qualifies, `read` is a safety net.)
                if !self.read_plain_run(&mut s) {
                    self.read(&mut s);
                }

                end_mark = self.mark.fresh_copy();
            }

            // Is it the end?
            if !(is_blank(&self.buffer, self.buffer_pos) || is_break(&self.buffer, self.buffer_pos))
            {
                break;
            }

            // Consume blank characters.
            while is_blank(&self.buffer, self.buffer_pos) || is_break(&self.buffer, self.buffer_pos)
            {
                if is_blank(&self.buffer, self.buffer_pos) {
                    // Check for tab characters that abuse indentation.
                    if leading_blanks
                        && int(self.mark.column) < indent
                        && is_tab(&self.buffer, self.buffer_pos)
                    {
                        return Err(self.scanner_error(
                            "while scanning a plain scalar",
                            start_mark,
                            "found a tab character that violates indentation",
                        ));
                    }

                    // Consume a space or a tab character.
                    if !leading_blanks {
                        self.read(&mut whitespaces);
                    } else if self.ch(0) == b' ' {
                        // The run of spaces (indentation) at once: skipping
                        // a space only advances the position, index and
                        // column by one.
                        let run = blank_run(&self.buffer, self.buffer_pos, false);
                        self.buffer_pos += run;
                        self.mark = self.mark.forward(narrow(run));
                    } else {
                        self.skip();
                    }
                } else {
                    // Check if it is a first line break.
                    if !leading_blanks {
                        whitespaces.clear();
                        self.read_line(&mut leading_break);
                        leading_blanks = true;
                    } else {
                        self.read_line(&mut trailing_breaks);
                    }
                }
            }

            // Check indentation level.
            if self.flow_level == 0 && int(self.mark.column) < indent {
                break;
            }
        }

        self.scratch = [leading_break, trailing_breaks, whitespaces];

        // Create a token.
        let token = Token {
            typ: TokenType::Scalar,
            start_mark,
            end_mark,
            value: s,
            style: ScalarStyle::Plain,
            ..Token::default()
        };

        // Note that we change the 'simple_key_allowed' flag.
        if leading_blanks {
            self.simple_key_allowed = true;
        }
        Ok(token)
    }

    /// Consume a comment line up to the line break, the way Go's inner loop
    /// in `yaml_parser_scan_line_comment` and `yaml_parser_scan_comments`
    /// does: characters (and line breaks) before the character index `seen`
    /// are skipped, the rest is read into `text`. `start_mark` is set to the
    /// mark of the first character read when `text` was empty.
    fn consume_comment(&mut self, seen: u32, text: &mut Vec<u8>, start_mark: &mut Mark) {
        loop {
            if is_breakz(&self.buffer, self.buffer_pos) {
                if self.mark.index >= seen {
                    break;
                }
                if is_z(&self.buffer, self.buffer_pos) {
                    // Go would spin here forever; only blanks and line
                    // breaks precede `seen`, so this is never reached.
                    break;
                }
                self.skip_line();
            } else if self.mark.index >= seen {
                if text.is_empty() {
                    *start_mark = self.mark.fresh_copy();
                }
                self.read_to_breakz(text);
            } else {
                self.skip();
            }
        }
    }

    /// `yaml_parser_scan_line_comment`: scan a comment that follows a token
    /// on the same line and queue it as a line comment.
    fn scan_line_comment(&mut self, token_mark: Mark) -> Result<()> {
        if self.newlines > 0 {
            return Ok(());
        }

        let mut start_mark = Mark::default();
        let mut text = Vec::new();

        let mut peek = 0;
        while peek < 512 {
            if is_blank(&self.buffer, self.buffer_pos + peek) {
                peek += 1;
                continue;
            }
            if self.ch(peek) == b'#' {
                let seen = self.mark.index + narrow(peek);
                self.consume_comment(seen, &mut text, &mut start_mark);
            }
            break;
        }
        if !text.is_empty() {
            self.comments.push(Comment {
                token_mark,
                start_mark,
                line: text,
                ..Comment::default()
            });
        }
        Ok(())
    }

    /// `yaml_parser_scan_comments`: scan the comment lines starting at the
    /// current position, splitting them into foot comments of the prior
    /// token and a head comment of the next one.
    fn scan_comments(&mut self, scan_mark: Mark) -> Result<()> {
        let mut scan_mark = scan_mark;

        // Go copies `parser.tokens[len(parser.tokens)-1]`; only the type and
        // start mark are used.
        let n = self.tokens.len();
        let (mut token_typ, mut token_start) = match self.tokens.back() {
            Some(t) => (t.typ, t.start_mark),
            None => (TokenType::NoToken, Mark::default()),
        };

        if token_typ == TokenType::FlowEntry && n > 1 {
            let t = &self.tokens[n - 2];
            token_typ = t.typ;
            token_start = t.start_mark;
        }

        let mut token_mark = token_start;
        let mut start_mark = Mark::default();
        let mut next_indent = self.indent;
        if next_indent < 0 {
            next_indent = 0;
        }

        let mut recent_empty = false;
        let mut first_empty = self.newlines <= 1;

        let mut line = self.mark.line;
        let mut column = self.mark.column;

        let mut text: Vec<u8> = Vec::new();

        // The foot line is the place where a comment must start to
        // still be considered as a foot of the prior content.
        // If there's some content in the currently parsed line, then
        // the foot is the line below it.
        let mut foot_line: isize = -1;
        if scan_mark.line > 0 {
            foot_line = int(self.mark.line) - int(self.newlines) + 1;
            if self.newlines == 0 && self.mark.column > 1 {
                foot_line += 1;
            }
        }

        let mut peek: usize = 0;
        while peek < 512 {
            column += 1;
            if is_blank(&self.buffer, self.buffer_pos + peek) {
                peek += 1;
                continue;
            }
            let c = self.ch(peek);
            let close_flow = self.flow_level > 0 && (c == b']' || c == b'}');
            if close_flow || is_breakz(&self.buffer, self.buffer_pos + peek) {
                // Got line break or terminator.
                if close_flow || !recent_empty {
                    if close_flow
                        || first_empty
                            && ((int(start_mark.line) == foot_line
                                && token_typ != TokenType::Value)
                                || int(start_mark.column) - 1 < next_indent)
                    {
                        // This is the first empty line and there were no empty lines before,
                        // so this initial part of the comment is a foot of the prior token
                        // instead of being a head for the following one. Split it up.
                        // Alternatively, this might also be the last comment inside a flow
                        // scope, so it must be a footer.
                        if !text.is_empty() {
                            if int(start_mark.column) - 1 < next_indent {
                                // If dedented it's unrelated to the prior token.
                                token_mark = start_mark;
                            }
                            let end_mark = Mark {
                                index: self.mark.index + narrow(peek),
                                line,
                                column,
                            };
                            self.comments.push(Comment {
                                scan_mark,
                                token_mark,
                                start_mark,
                                end_mark,
                                foot: std::mem::take(&mut text),
                                ..Comment::default()
                            });
                            scan_mark = end_mark;
                            token_mark = scan_mark;
                        }
                    } else if !text.is_empty() && c != 0 {
                        text.push(b'\n');
                    }
                }
                if !is_break(&self.buffer, self.buffer_pos + peek) {
                    break;
                }
                first_empty = false;
                recent_empty = true;
                column = 0;
                line += 1;
                peek += 1;
                continue;
            }

            if !text.is_empty()
                && (close_flow || int(column) - 1 < next_indent && column != start_mark.column)
            {
                // The comment at the different indentation is a foot of the
                // preceding data rather than a head of the upcoming one.
                let end_mark = Mark {
                    index: self.mark.index + narrow(peek),
                    line,
                    column,
                };
                self.comments.push(Comment {
                    scan_mark,
                    token_mark,
                    start_mark,
                    end_mark,
                    foot: std::mem::take(&mut text),
                    ..Comment::default()
                });
                scan_mark = end_mark;
                token_mark = scan_mark;
            }

            if c != b'#' {
                break;
            }

            if text.is_empty() {
                start_mark = Mark {
                    index: self.mark.index + narrow(peek),
                    line,
                    column,
                };
            } else {
                text.push(b'\n');
            }

            recent_empty = false;

            // Consume until after the consumed comment line.
            let seen = self.mark.index + narrow(peek);
            // Unlike the line comment scanner, Go does not move `start_mark`
            // here (it was set above).
            let mut unused = Mark::default();
            self.consume_comment(seen, &mut text, &mut unused);

            line = self.mark.line;
            next_indent = self.indent;
            if next_indent < 0 {
                next_indent = 0;
            }
            column = 0;
            // Go sets `peek = 0` and then the loop's `peek++` runs, so the
            // next look starts one byte past the line break (or NUL) where
            // the comment ended.
            peek = 1;
        }

        if !text.is_empty() {
            self.comments.push(Comment {
                scan_mark,
                token_mark: start_mark,
                start_mark,
                end_mark: Mark {
                    index: (self.mark.index + narrow(peek)).saturating_sub(1),
                    line,
                    column,
                },
                head: text,
                ..Comment::default()
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Scans the whole input the way the parser consumes tokens
    /// (`yaml_parser_scan`), returning the tokens, the parser (for its
    /// comments) and the error, if any.
    fn scan(input: &str) -> (Vec<Token>, Parser, Option<YamlError>) {
        let mut parser = match Parser::new(input) {
            Ok(parser) => parser,
            Err(err) => return (Vec::new(), Parser::default(), Some(*err)),
        };
        let mut tokens = Vec::new();
        loop {
            if !parser.token_available {
                if let Err(err) = parser.fetch_more_tokens() {
                    return (tokens, parser, Some(*err));
                }
            }
            let token = parser.tokens.pop_front().expect("a token is available");
            parser.tokens_parsed += 1;
            parser.token_available = false;
            let end = token.typ == TokenType::StreamEnd;
            tokens.push(token);
            if end {
                return (tokens, parser, None);
            }
        }
    }

    fn types(tokens: &[Token]) -> Vec<TokenType> {
        tokens.iter().map(|t| t.typ).collect()
    }

    fn mark(index: u32, line: u32, column: u32) -> Mark {
        Mark {
            index,
            line,
            column,
        }
    }

    fn text(b: &[u8]) -> &str {
        std::str::from_utf8(b).expect("utf-8")
    }

    /// The scalar values, in order.
    fn scalars(tokens: &[Token]) -> Vec<(&str, ScalarStyle)> {
        tokens
            .iter()
            .filter(|t| t.typ == TokenType::Scalar)
            .map(|t| (text(&t.value), t.style))
            .collect()
    }

    /// Comments as `(token_mark, start_mark, head, line, foot)`.
    fn comments(parser: &Parser) -> Vec<(Mark, Mark, &str, &str, &str)> {
        parser
            .comments
            .iter()
            .map(|c| {
                (
                    c.token_mark,
                    c.start_mark,
                    text(&c.head),
                    text(&c.line),
                    text(&c.foot),
                )
            })
            .collect()
    }

    use TokenType::*;

    #[test]
    fn block_mapping_with_nested_sequence() {
        let (tokens, _, err) = scan("a:\n  - b\n  - c\nd: e\n");
        assert!(err.is_none());
        assert_eq!(
            types(&tokens),
            vec![
                StreamStart,
                BlockMappingStart,
                Key,
                Scalar,
                Value,
                BlockSequenceStart,
                BlockEntry,
                Scalar,
                BlockEntry,
                Scalar,
                BlockEnd,
                Key,
                Scalar,
                Value,
                Scalar,
                BlockEnd,
                StreamEnd,
            ]
        );
        let plain = ScalarStyle::Plain;
        assert_eq!(
            scalars(&tokens),
            vec![
                ("a", plain),
                ("b", plain),
                ("c", plain),
                ("d", plain),
                ("e", plain)
            ]
        );
        // The BLOCK-MAPPING-START and KEY tokens are inserted at the key.
        assert_eq!(tokens[1].start_mark, mark(0, 0, 0));
        assert_eq!(tokens[5].start_mark, mark(5, 1, 2));
        assert_eq!(tokens[7].start_mark, mark(7, 1, 4));
        assert_eq!(tokens[7].end_mark, mark(8, 1, 5));
    }

    #[test]
    fn indentless_sequence() {
        let (tokens, _, err) = scan("key:\n- a\n- b\n");
        assert!(err.is_none());
        assert_eq!(
            types(&tokens),
            vec![
                StreamStart,
                BlockMappingStart,
                Key,
                Scalar,
                Value,
                BlockEntry,
                Scalar,
                BlockEntry,
                Scalar,
                BlockEnd,
                StreamEnd,
            ]
        );
    }

    #[test]
    fn flow_mapping() {
        let (tokens, _, err) = scan("{a: 1, b: [x, y], c}");
        assert!(err.is_none());
        assert_eq!(
            types(&tokens),
            vec![
                StreamStart,
                FlowMappingStart,
                Key,
                Scalar,
                Value,
                Scalar,
                FlowEntry,
                Key,
                Scalar,
                Value,
                FlowSequenceStart,
                Scalar,
                FlowEntry,
                Scalar,
                FlowSequenceEnd,
                FlowEntry,
                Scalar,
                FlowMappingEnd,
                StreamEnd,
            ]
        );
        let values: Vec<&str> = scalars(&tokens).into_iter().map(|(v, _)| v).collect();
        assert_eq!(values, vec!["a", "1", "b", "x", "y", "c"]);
    }

    #[test]
    fn quoted_scalars_with_escapes() {
        let input = "- 'it''s\n  folded'\n- \"\\t\\x41\\u00e9\\U0001F600\\N\\\\ \\\"q\\\"\"\n- \"a\\\n   b\"\n";
        let (tokens, _, err) = scan(input);
        assert!(err.is_none());
        assert_eq!(
            scalars(&tokens),
            vec![
                ("it's folded", ScalarStyle::SingleQuoted),
                ("\tAé😀\u{85}\\ \"q\"", ScalarStyle::DoubleQuoted),
                ("ab", ScalarStyle::DoubleQuoted),
            ]
        );
    }

    #[test]
    fn block_scalars_with_chomping() {
        let input = "clip: |\n  a\n  b\n\nstrip: |-\n  a\n\nkeep: |+\n  a\n\nfolded: >\n  a\n  b\n\n  c\n   d\nindent: |2\n   x\n";
        let (tokens, _, err) = scan(input);
        assert!(err.is_none());
        let values: Vec<(&str, ScalarStyle)> = scalars(&tokens)
            .into_iter()
            .filter(|(_, s)| *s != ScalarStyle::Plain)
            .collect();
        assert_eq!(
            values,
            vec![
                ("a\nb\n", ScalarStyle::Literal),
                ("a", ScalarStyle::Literal),
                ("a\n\n", ScalarStyle::Literal),
                ("a b\nc\n d\n", ScalarStyle::Folded),
                (" x\n", ScalarStyle::Literal),
            ]
        );
    }

    #[test]
    fn anchors_aliases_and_tags() {
        let input = "a: &x !!str v\nb: *x\nc: !local w\nd: !<tag:e,2000:t> u\ne: ! z\n";
        let (tokens, _, err) = scan(input);
        assert!(err.is_none());
        let anchor = tokens.iter().find(|t| t.typ == Anchor).expect("anchor");
        assert_eq!(text(&anchor.value), "x");
        assert_eq!(anchor.start_mark, mark(3, 0, 3));
        assert_eq!(anchor.end_mark, mark(5, 0, 5));
        let alias = tokens.iter().find(|t| t.typ == Alias).expect("alias");
        assert_eq!(text(&alias.value), "x");
        let tags: Vec<(&str, &str)> = tokens
            .iter()
            .filter(|t| t.typ == Tag)
            .map(|t| (text(&t.value), text(&t.extra)))
            .collect();
        assert_eq!(
            tags,
            vec![
                ("!!", "str"),
                ("!", "local"),
                ("", "tag:e,2000:t"),
                ("", "!")
            ]
        );
    }

    #[test]
    fn documents_and_directives() {
        let input = "%YAML 1.2\n%TAG !e! tag:e.com,2000:\n---\na\n...\n--- b\n";
        let (tokens, _, err) = scan(input);
        assert!(err.is_none());
        assert_eq!(
            types(&tokens),
            vec![
                StreamStart,
                VersionDirective,
                TagDirective,
                DocumentStart,
                Scalar,
                DocumentEnd,
                DocumentStart,
                Scalar,
                StreamEnd,
            ]
        );
        assert_eq!((tokens[1].major, tokens[1].minor), (1, 2));
        assert_eq!(text(&tokens[2].value), "!e!");
        assert_eq!(text(&tokens[2].extra), "tag:e.com,2000:");
        assert_eq!(tokens[2].end_mark, mark(34, 1, 24));
        assert_eq!(tokens[3].start_mark, mark(35, 2, 0));
        assert_eq!(tokens[3].end_mark, mark(38, 2, 3));
    }

    #[test]
    fn head_line_and_foot_comments() {
        // Expected values are those of yaml.v3.
        let (tokens, parser, err) = scan("# head\na: 1 # line\n# foot\n\nb: 2\n");
        assert!(err.is_none());
        assert_eq!(tokens[1].start_mark, mark(7, 1, 0));
        assert_eq!(
            comments(&parser),
            vec![
                (mark(0, 0, 1), mark(0, 0, 1), "# head", "", ""),
                (mark(10, 1, 3), mark(12, 1, 5), "", "# line", ""),
                (mark(10, 1, 3), mark(19, 2, 1), "", "", "# foot"),
            ]
        );
        assert_eq!(parser.comments[2].scan_mark, mark(18, 1, 11));
        assert_eq!(parser.comments[2].end_mark, mark(26, 2, 1));
    }

    #[test]
    fn nested_foot_comments_move_block_ends() {
        let (tokens, parser, err) = scan("a:\n  - b # lb\n  # foot b\n  - c\n# foot a\n");
        assert!(err.is_none());
        assert_eq!(
            comments(&parser),
            vec![
                (mark(7, 1, 4), mark(9, 1, 6), "", "# lb", ""),
                (mark(16, 2, 3), mark(16, 2, 3), "# foot b", "", ""),
                (mark(31, 4, 1), mark(31, 4, 1), "", "", "# foot a"),
            ]
        );
        // The inner BLOCK-END stays before the foot comment of the mapping,
        // the outer one is moved to it.
        let ends: Vec<Mark> = tokens
            .iter()
            .filter(|t| t.typ == BlockEnd)
            .map(|t| t.start_mark)
            .collect();
        assert_eq!(ends, vec![mark(30, 4, 0), mark(31, 4, 1)]);
    }

    #[test]
    fn line_comment_after_sequence_entry_becomes_head() {
        let (_, parser, err) = scan("- # The comment\n  - Some data\n");
        assert!(err.is_none());
        assert_eq!(
            comments(&parser),
            vec![(mark(2, 0, 3), mark(2, 0, 3), "# The comment", "", "")]
        );
    }

    #[test]
    fn foot_comment_in_flow_sequence() {
        let (_, parser, err) = scan("[a, # a\n  b\n  # foot\n]\n");
        assert!(err.is_none());
        assert_eq!(
            comments(&parser),
            vec![
                (mark(1, 0, 1), mark(4, 0, 4), "", "# a", ""),
                (mark(10, 1, 2), mark(14, 2, 3), "", "", "# foot"),
            ]
        );
    }

    #[test]
    fn block_scalar_header_comment() {
        let (tokens, parser, err) = scan("k: |+ # keep\n  x\n\n");
        assert!(err.is_none());
        assert_eq!(scalars(&tokens)[1], ("x\n\n", ScalarStyle::Literal));
        assert_eq!(
            comments(&parser),
            vec![(mark(3, 0, 3), mark(6, 0, 6), "", "# keep", "")]
        );
    }

    #[test]
    fn crlf_and_bom() {
        let (tokens, parser, err) = scan("\u{feff}a: b\r\n# c\r\nd: e\r\n");
        assert!(err.is_none());
        assert_eq!(tokens[2].start_mark, mark(0, 0, 0));
        let d = tokens
            .iter()
            .find(|t| t.typ == Scalar && t.value == b"d")
            .expect("d");
        // CR LF counts as two characters.
        assert_eq!(d.start_mark, mark(11, 2, 0));
        assert_eq!(tokens[tokens.len() - 2].start_mark, mark(16, 3, 0));
        assert_eq!(
            comments(&parser),
            vec![(mark(3, 0, 3), mark(6, 1, 1), "", "", "# c")]
        );
    }

    #[test]
    fn control_characters_are_rejected() {
        let err = Parser::new("a: b\n\u{7}c").expect_err("BEL is rejected");
        assert_eq!(err.kind, ErrorKind::Reader);
        assert!(err
            .problem
            .starts_with("control characters are not allowed"));
        assert_eq!(err.problem_mark, mark(5, 1, 0));
        for input in [
            "\u{0}", "a\u{7f}", "\u{80}", "\u{9f}", "\u{fffe}", "\u{ffff}",
        ] {
            assert!(Parser::new(input).is_err(), "{input:?}");
        }
        for input in [
            "\t\r\n", "\u{85}", "\u{a0}", "\u{d7ff}", "\u{e000}", "\u{fffd}", "😀",
        ] {
            assert!(Parser::new(input).is_ok(), "{input:?}");
        }
    }

    #[test]
    fn scanner_errors_are_sticky() {
        let (_, mut parser, err) = scan("a: b\nc\nd: e\n");
        let err = err.expect("an error");
        assert_eq!(err.kind, ErrorKind::Scanner);
        assert_eq!(err.context, "while scanning a simple key");
        assert_eq!(err.problem, "could not find expected ':'");
        assert_eq!(err.context_mark, mark(5, 1, 0));
        assert_eq!(parser.error.as_deref(), Some(&err));
        assert_eq!(*parser.fetch_more_tokens().expect_err("sticky"), err);
    }

    #[test]
    fn other_scanner_errors() {
        let cases = [
            ("a: \"b", "found unexpected end of stream"),
            ("\"a\n---\nb\"", "found unexpected document indicator"),
            ("a: \"\\q\"", "found unknown escape character"),
            (
                "a: \"\\uD800\"",
                "found invalid Unicode character escape code",
            ),
            ("a: b: c", "mapping values are not allowed in this context"),
            (
                "a: - b",
                "block sequence entries are not allowed in this context",
            ),
            (
                "&: x",
                "did not find expected alphabetic or numeric character",
            ),
            ("a: |0\n x", "found an indentation indicator equal to 0"),
            (
                "a: |\n\tb",
                "found a tab character where an indentation space is expected",
            ),
            ("%YAML 123.1\n", "found extremely long version number"),
            ("%FOO\n", "found unknown directive name"),
            ("@x", "found character that cannot start any token"),
            ("!<a b", "did not find the expected '>'"),
            ("!%FF x", "found an incorrect leading UTF-8 octet"),
        ];
        for (input, problem) in cases {
            let (_, _, err) = scan(input);
            let err = err.unwrap_or_else(|| panic!("no error for {input:?}"));
            assert_eq!(err.problem, problem, "{input:?}");
        }
    }

    #[test]
    fn depth_limits() {
        let deep_flow = "[".repeat(MAX_FLOW_LEVEL + 1);
        let (_, _, err) = scan(&deep_flow);
        let err = err.expect("flow depth error");
        assert_eq!(err.context, "while increasing flow level");
        assert_eq!(err.problem, "exceeded max depth of 10000");

        let ok_flow = format!(
            "{}{}",
            "[".repeat(MAX_FLOW_LEVEL),
            "]".repeat(MAX_FLOW_LEVEL)
        );
        assert!(scan(&ok_flow).2.is_none());

        let deep_block = format!("{}x\n", "- ".repeat(MAX_INDENTS + 1));
        let (_, _, err) = scan(&deep_block);
        let err = err.expect("indent depth error");
        assert_eq!(err.context, "while increasing indent level");
        assert_eq!(err.problem, "exceeded max depth of 10000");
    }

    #[test]
    fn simple_key_length_limit() {
        // A key longer than 1024 characters is no simple key (as in yaml.v3).
        let long = format!("{}: v\n", "k".repeat(1030));
        let (_, _, err) = scan(&long);
        let err = err.expect("too long a key");
        assert_eq!(
            err.problem,
            "mapping values are not allowed in this context"
        );
        assert_eq!(err.problem_mark, mark(1030, 0, 1030));
        let short = format!("{}: v\n", "k".repeat(1000));
        assert!(scan(&short).2.is_none());
    }

    #[test]
    fn odd_inputs_do_not_panic() {
        let inputs = [
            "",
            "\n",
            "\u{feff}",
            "\u{feff}\u{feff}",
            "\u{feff}\u{feff}a: b\nc: d\n",
            "#",
            "# only a comment",
            "-",
            "?",
            ":",
            "[",
            "]",
            "{",
            "}",
            "'",
            "\"",
            "\"\\",
            "\"\\x",
            "!",
            "!<",
            "&",
            "*",
            "|",
            ">-2",
            "%",
            "%TAG",
            "%TAG !",
            "%TAG !a! ",
            "%YAML",
            "%YAML 1",
            "%YAML 1.",
            "---",
            "...",
            "- - - -",
            "? ? ? :",
            "a:\u{85}b\u{2028}c\u{2029}",
            "a\r",
            "\r\n\r\n#\r",
            "[a, {b: [c, {d: e}]}, # x\n]",
            "a: b # c\n  # d\n# e\n",
        ];
        for input in inputs {
            // Only the absence of panics (and of endless loops) matters.
            let _ = scan(input);
        }
        // Every prefix of a document that uses every construct.
        let doc = "%YAML 1.1\n%TAG !e! tag:e,2000:\n--- !e!x &a\n# h\nk: [1, 'q''', \"\\u00e9\\\n  x\", {a: *a}] # l\n? c\n: - |+2\n    t\n  - >-\n   f\n...\n";
        for (i, _) in doc.char_indices() {
            let _ = scan(&doc[..i]);
        }
    }
}
