//! The state shared by the scanner (`scanner.rs`) and the parser
//! (`parser.rs`): yaml.v3's `yaml_parser_t`, with the whole input held in
//! memory instead of a streaming reader.

use std::collections::{HashMap, VecDeque};

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
    pub(crate) error: Option<YamlError>,

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
    pub(crate) simple_keys_by_tok: HashMap<usize, usize>,

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
