//! The state shared by the scanner (`scanner.rs`) and the parser
//! (`parser.rs`): yaml.v3's `yaml_parser_t`, with the whole input held in
//! memory instead of a streaming reader.

use std::collections::VecDeque;

use super::error::YamlError;
use super::token::{Mark, TagDirective, Token};

/// A possible simple key (`yaml_simple_key_t`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SimpleKey {
    pub(crate) possible: bool,
    pub(crate) required: bool,
    pub(crate) token_number: usize,
    pub(crate) mark: Mark,
}

/// Parser states (`yaml_parser_state_t`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum ParserState {
    #[default]
    StreamStart,
    ImplicitDocumentStart,
    DocumentStart,
    DocumentContent,
    DocumentEnd,
    BlockNode,
    // Never entered, as in libyaml and yaml.v3; kept so the state machine
    // reads like Go's.
    #[allow(dead_code)]
    BlockNodeOrIndentlessSequence,
    #[allow(dead_code)]
    FlowNode,
    BlockSequenceFirstEntry,
    BlockSequenceEntry,
    IndentlessSequenceEntry,
    BlockMappingFirstKey,
    BlockMappingKey,
    BlockMappingValue,
    FlowSequenceFirstEntry,
    FlowSequenceEntry,
    FlowSequenceEntryMappingKey,
    FlowSequenceEntryMappingValue,
    FlowSequenceEntryMappingEnd,
    FlowMappingFirstKey,
    FlowMappingKey,
    FlowMappingValue,
    FlowMappingEmptyValue,
    End,
}

/// A comment found by the scanner (`yaml_comment_t`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Comment {
    /// Position where scanning for comments started.
    pub(crate) scan_mark: Mark,
    /// Position after which tokens will be associated with this comment.
    pub(crate) token_mark: Mark,
    /// Position of the `#` comment mark.
    pub(crate) start_mark: Mark,
    /// Position where the comment terminated.
    pub(crate) end_mark: Mark,
    pub(crate) head: Vec<u8>,
    pub(crate) line: Vec<u8>,
    pub(crate) foot: Vec<u8>,
}

/// yaml.v3's `yaml_parser_t`. Field names follow the Go source so that the
/// port can be checked line by line against it.
///
/// Differences from Go:
/// * `buffer` holds the whole input (after a UTF-8 BOM, if any, is skipped)
///   followed by [`Parser::PADDING`] NUL bytes, so `buffer[buffer_pos + k]`
///   look-ahead never runs out; there is no reader, `unread` or `cache()`.
/// * errors are returned as `Result` instead of being stored in the struct;
///   `error` remembers the first one so that later calls fail the same way.
/// * the token queue is a `VecDeque` whose front is the head (Go's
///   `tokens[tokens_head]`).
/// * Go's distinction between a nil and an empty `[]byte` is kept with
///   `Option<Vec<u8>>` only where the Go code tests `!= nil` (`stem_comment`).
#[derive(Debug, Default)]
pub(crate) struct Parser {
    /// The first error met; once set every call returns it again.
    pub(crate) error: Option<Box<YamlError>>,

    // Input.
    pub(crate) buffer: Vec<u8>,
    pub(crate) buffer_pos: usize,
    /// Number of line breaks since the last non-break/non-blank character.
    pub(crate) newlines: usize,
    /// The mark of the current position.
    pub(crate) mark: Mark,

    // Comments.
    pub(crate) head_comment: Vec<u8>,
    pub(crate) line_comment: Vec<u8>,
    pub(crate) foot_comment: Vec<u8>,
    /// Foot comment that happens at the end of a block.
    pub(crate) tail_comment: Vec<u8>,
    /// Comment in an item preceding a nested structure.
    pub(crate) stem_comment: Option<Vec<u8>>,
    /// The folded comments for all parsed tokens.
    pub(crate) comments: Vec<Comment>,
    pub(crate) comments_head: usize,

    /// Scratch buffers of the scalar scanners, kept between scalars.
    pub(crate) scratch: [Vec<u8>; 3],

    // Scanner state.
    pub(crate) stream_start_produced: bool,
    pub(crate) stream_end_produced: bool,
    /// The number of unclosed `[` and `{` indicators.
    pub(crate) flow_level: usize,
    /// The tokens queue; its front is the next token.
    pub(crate) tokens: VecDeque<Token>,
    /// The number of tokens fetched from the queue.
    pub(crate) tokens_parsed: usize,
    /// Does the tokens queue contain a token ready for dequeueing.
    pub(crate) token_available: bool,
    /// The current indentation level (-1 at stream level).
    pub(crate) indent: isize,
    pub(crate) indents: Vec<isize>,
    pub(crate) simple_key_allowed: bool,
    pub(crate) simple_keys: Vec<SimpleKey>,
    /// Possible simple-key indexes, keyed by token number.
    pub(crate) simple_keys_by_tok: TokenKeys,

    // Parser state.
    pub(crate) state: ParserState,
    pub(crate) states: Vec<ParserState>,
    pub(crate) marks: Vec<Mark>,
    pub(crate) tag_directives: Vec<TagDirective>,
}

impl Parser {
    /// NUL bytes appended after the input for look-ahead.
    pub(crate) const PADDING: usize = 8;
}

/// Go's `simple_keys_by_tok` map (token number → index into `simple_keys`),
/// kept as a list sorted by token number: keys are recorded in the order
/// their tokens are queued, and only the head of the queue is looked up, so
/// entries of consumed tokens are dropped from the front (`entries[..head]`
/// are dropped ones, removed in batches).
#[derive(Debug, Default)]
pub(crate) struct TokenKeys {
    entries: Vec<(usize, usize)>,
    head: usize,
}

impl TokenKeys {
    /// Where `token_number` is (`Ok`) or would go (`Err`) in `entries`.
    #[inline]
    fn find(&self, token_number: usize) -> std::result::Result<usize, usize> {
        let len = self.entries.len();
        let live = self.entries.get(self.head..).unwrap_or(&[]);
        // The newest entry is the one most often replaced or removed, the
        // oldest the one looked up.
        match live.last() {
            None => return Err(len),
            Some(&(last, _)) if last < token_number => return Err(len),
            Some(&(last, _)) if last == token_number => return Ok(len - 1),
            _ => {}
        }
        match live.first() {
            Some(&(first, _)) if first == token_number => Ok(self.head),
            Some(&(first, _)) if first > token_number => Err(self.head),
            _ => match live.binary_search_by_key(&token_number, |&(t, _)| t) {
                Ok(pos) => Ok(self.head + pos),
                Err(pos) => Err(self.head + pos),
            },
        }
    }

    /// The index recorded for `token_number`.
    #[inline]
    pub(crate) fn get(&self, token_number: usize) -> Option<usize> {
        self.find(token_number).ok().map(|pos| self.entries[pos].1)
    }

    /// Records `index` for `token_number` (replacing an earlier entry);
    /// `consumed` is the number of tokens taken off the queue so far.
    #[inline]
    pub(crate) fn insert(&mut self, token_number: usize, index: usize, consumed: usize) {
        while self
            .entries
            .get(self.head)
            .is_some_and(|&(t, _)| t < consumed)
        {
            self.head += 1;
        }
        if self.head >= 16 && self.head * 2 >= self.entries.len() {
            self.entries.drain(..self.head);
            self.head = 0;
        }
        match self.find(token_number) {
            Ok(pos) => self.entries[pos].1 = index,
            Err(pos) => self.entries.insert(pos, (token_number, index)),
        }
    }

    /// Forgets `token_number`.
    #[inline]
    pub(crate) fn remove(&mut self, token_number: usize) {
        if let Ok(pos) = self.find(token_number) {
            self.entries.remove(pos);
        }
    }

    /// Forgets everything.
    pub(crate) fn clear(&mut self) {
        self.entries.clear();
        self.head = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::TokenKeys;

    #[test]
    fn token_keys_behave_like_a_map_for_queued_tokens() {
        let mut keys = TokenKeys::default();
        assert_eq!(keys.get(0), None);
        keys.insert(3, 0, 0);
        keys.insert(5, 1, 0);
        keys.insert(5, 2, 0);
        assert_eq!(keys.get(3), Some(0));
        assert_eq!(keys.get(5), Some(2));
        assert_eq!(keys.get(4), None);
        // An entry recorded out of order still lands in its place.
        keys.insert(4, 7, 0);
        assert_eq!(keys.get(4), Some(7));
        keys.remove(4);
        assert_eq!(keys.get(4), None);
        assert_eq!(keys.get(5), Some(2));
        // Entries of consumed tokens go; the others stay.
        for t in 6..40 {
            keys.insert(t, t, t - 1);
        }
        assert_eq!(keys.get(3), None);
        assert_eq!(keys.get(39), Some(39));
        assert_eq!(keys.get(38), Some(38));
        keys.remove(39);
        assert_eq!(keys.get(39), None);
        assert_eq!(keys.get(38), Some(38));
        keys.clear();
        assert_eq!(keys.get(38), None);
    }
}
