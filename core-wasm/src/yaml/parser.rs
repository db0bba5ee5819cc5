//! The event parser: a function-by-function port of yaml.v3's `parserc.go`
//! (itself a port of libyaml's `parser.c`), including yaml.v3's comment
//! handling (head/line/foot comments, stem comments, tail comments).
//!
//! The parser implements the following grammar:
//!
//! ```text
//! stream               ::= STREAM-START implicit_document? explicit_document* STREAM-END
//! implicit_document    ::= block_node DOCUMENT-END*
//! explicit_document    ::= DIRECTIVE* DOCUMENT-START block_node? DOCUMENT-END*
//! block_node_or_indentless_sequence    ::=
//!                          ALIAS
//!                          | properties (block_content | indentless_block_sequence)?
//!                          | block_content
//!                          | indentless_block_sequence
//! block_node           ::= ALIAS
//!                          | properties block_content?
//!                          | block_content
//! flow_node            ::= ALIAS
//!                          | properties flow_content?
//!                          | flow_content
//! properties           ::= TAG ANCHOR? | ANCHOR TAG?
//! block_content        ::= block_collection | flow_collection | SCALAR
//! flow_content         ::= flow_collection | SCALAR
//! block_collection     ::= block_sequence | block_mapping
//! flow_collection      ::= flow_sequence | flow_mapping
//! block_sequence       ::= BLOCK-SEQUENCE-START (BLOCK-ENTRY block_node?)* BLOCK-END
//! indentless_sequence  ::= (BLOCK-ENTRY block_node?)+
//! block_mapping        ::= BLOCK-MAPPING_START
//!                          ((KEY block_node_or_indentless_sequence?)?
//!                          (VALUE block_node_or_indentless_sequence?)?)*
//!                          BLOCK-END
//! flow_sequence        ::= FLOW-SEQUENCE-START
//!                          (flow_sequence_entry FLOW-ENTRY)*
//!                          flow_sequence_entry?
//!                          FLOW-SEQUENCE-END
//! flow_sequence_entry  ::= flow_node | KEY flow_node? (VALUE flow_node?)?
//! flow_mapping         ::= FLOW-MAPPING-START
//!                          (flow_mapping_entry FLOW-ENTRY)*
//!                          flow_mapping_entry?
//!                          FLOW-MAPPING-END
//! flow_mapping_entry   ::= flow_node | KEY flow_node? (VALUE flow_node?)?
//! ```
//!
//! Differences from Go, none of them observable on a successful parse:
//! * every function returns `Result` instead of `bool` + an error stored in
//!   the struct; `Parser::parse` also remembers the first error in
//!   `Parser::error` and returns it again on every later call (Go returns an
//!   empty event once an error is set).
//! * `peek_token` returns a copy of the head token's type, marks and style
//!   (`Peeked`); the payload (value, suffix, prefix, version) is moved out
//!   of the queue by `Parser::skip_token`, which returns the token. Where Go
//!   reads the payload just before skipping, the port skips first and then
//!   reads it; skipping does not touch any state that is read in between.
//!
//! One difference shows on malformed input only: Go's
//! `yaml_parser_split_stem_comment` ignores a failing `peek_token`, so
//! yaml.v3 still returns that call's event (without the stem split) and
//! leaves the scanner error in `parser.error`, where its decoder finds it
//! right after the call; when the retried peek fails too, Go reports the
//! second scanner error instead. The port fails that call with the first
//! scanner error.

#![allow(dead_code)]

use super::error::{ErrorKind, Fallible as Result, YamlError};
use super::parser_state::{Comment, Parser, ParserState};
use super::token::{
    Comments, Directives, Event, EventStyle, EventType, MappingStyle, Mark, ScalarStyle,
    SequenceStyle, TagDirective, Token, TokenType, VersionDirective,
};

/// What the parser looks at in the head token without taking it: Go's
/// `*yaml_token_t` as returned by `peek_token`, minus the payload.
#[derive(Debug, Clone, Copy)]
struct Peeked {
    typ: TokenType,
    start_mark: Mark,
    end_mark: Mark,
    style: ScalarStyle,
}

/// `default_tag_directives`: handle and prefix of the two default `%TAG`s.
const DEFAULT_TAG_DIRECTIVES: [(&[u8], &[u8]); 2] = [(b"!", b"!"), (b"!!", b"tag:yaml.org,2002:")];

impl Parser {
    /// Ports `peek_token`: makes sure a token is available, folds the comments
    /// that precede it into the parser and returns a view of it.
    #[inline(always)]
    fn peek_token(&mut self) -> Result<Peeked> {
        // Fast path: the head token is already there and no comment waits
        // to be unfolded (the usual case when a token is peeked again).
        if self.token_available && self.comments_head >= self.comments.len() {
            if let Some(token) = self.tokens.front() {
                return Ok(Peeked {
                    typ: token.typ,
                    start_mark: token.start_mark,
                    end_mark: token.end_mark,
                    style: token.style,
                });
            }
        }
        self.peek_token_slow()
    }

    /// [`Parser::peek_token`] in full.
    #[inline(never)]
    fn peek_token_slow(&mut self) -> Result<Peeked> {
        if !self.token_available {
            self.fetch_more_tokens()?;
        }
        let peeked = match self.tokens.front() {
            Some(token) => Peeked {
                typ: token.typ,
                start_mark: token.start_mark,
                end_mark: token.end_mark,
                style: token.style,
            },
            // Go would index out of range here; the scanner never lets it
            // happen, but fail cleanly rather than panic.
            None => {
                let mark = self.mark;
                return Err(self.set_parser_error("did not find expected token", mark));
            }
        };
        if self.comments_head < self.comments.len() {
            self.unfold_comments(peeked.typ, peeked.start_mark.index);
        }
        Ok(peeked)
    }

    /// Ports `yaml_parser_unfold_comments`: joins all comments queued before
    /// the position of the given token into the parser's head/foot/line
    /// comments.
    fn unfold_comments(&mut self, token_typ: TokenType, token_start_index: u32) {
        while let Some(comment) = self.comments.get_mut(self.comments_head) {
            if token_start_index < comment.token_mark.index {
                break;
            }
            if !comment.head.is_empty() {
                if token_typ == TokenType::BlockEnd {
                    // No heads on ends, so keep comment.head for a follow up token.
                    break;
                }
                if !self.head_comment.is_empty() {
                    self.head_comment.push(b'\n');
                }
                self.head_comment.extend_from_slice(&comment.head);
            }
            if !comment.foot.is_empty() {
                if !self.foot_comment.is_empty() {
                    self.foot_comment.push(b'\n');
                }
                self.foot_comment.extend_from_slice(&comment.foot);
            }
            if !comment.line.is_empty() {
                if !self.line_comment.is_empty() {
                    self.line_comment.push(b'\n');
                }
                self.line_comment.extend_from_slice(&comment.line);
            }
            *comment = Comment::default();
            self.comments_head += 1;
        }
    }

    /// Ports `skip_token`: removes the head token from the queue (after
    /// `peek_token`) and returns it so its payload can be used.
    fn skip_token(&mut self) -> Token {
        self.token_available = false;
        self.tokens_parsed += 1;
        let token = self.tokens.pop_front().unwrap_or_default();
        self.stream_end_produced = token.typ == TokenType::StreamEnd;
        token
    }

    /// Ports `yaml_parser_parse`: returns the next event. After the stream end
    /// it returns events of type `EventType::NoEvent`; after an error it
    /// returns that error again.
    pub(crate) fn parse(&mut self) -> Result<Event> {
        if let Some(err) = &self.error {
            return Err(err.clone());
        }
        // No events after the end of the stream.
        if self.stream_end_produced || self.state == ParserState::End {
            return Ok(Event::default());
        }
        self.state_machine()
            .map_err(|err| self.error.get_or_insert(err).clone())
    }

    /// Ports `yaml_parser_set_parser_error`: records (if it is the first) and
    /// returns a parser error.
    #[cold]
    fn set_parser_error(&mut self, problem: &str, problem_mark: Mark) -> Box<YamlError> {
        let err = Box::new(YamlError::new(ErrorKind::Parser, problem, problem_mark));
        self.error.get_or_insert(err).clone()
    }

    /// Ports `yaml_parser_set_parser_error_context`: records (if it is the
    /// first) and returns a parser error with a context.
    #[cold]
    fn set_parser_error_context(
        &mut self,
        context: &str,
        context_mark: Mark,
        problem: &str,
        problem_mark: Mark,
    ) -> Box<YamlError> {
        let err = Box::new(YamlError::with_context(
            ErrorKind::Parser,
            context,
            context_mark,
            problem,
            problem_mark,
        ));
        self.error.get_or_insert(err).clone()
    }

    /// Pops the state stack (Go's `parser.states[len(parser.states)-1]` plus
    /// the truncation); the grammar guarantees it is not empty.
    fn pop_state(&mut self) -> ParserState {
        self.states.pop().unwrap_or(ParserState::End)
    }

    /// Pops the mark stack (Go's `parser.marks[len(parser.marks)-1]` plus the
    /// truncation); the grammar guarantees it is not empty.
    fn pop_mark(&mut self) -> Mark {
        self.marks.pop().unwrap_or_default()
    }

    /// Ports `yaml_parser_state_machine`: the state dispatcher.
    fn state_machine(&mut self) -> Result<Event> {
        match self.state {
            ParserState::StreamStart => self.parse_stream_start(),
            ParserState::ImplicitDocumentStart => self.parse_document_start(true),
            ParserState::DocumentStart => self.parse_document_start(false),
            ParserState::DocumentContent => self.parse_document_content(),
            ParserState::DocumentEnd => self.parse_document_end(),
            ParserState::BlockNode => self.parse_node(true, false),
            ParserState::BlockNodeOrIndentlessSequence => self.parse_node(true, true),
            ParserState::FlowNode => self.parse_node(false, false),
            ParserState::BlockSequenceFirstEntry => self.parse_block_sequence_entry(true),
            ParserState::BlockSequenceEntry => self.parse_block_sequence_entry(false),
            ParserState::IndentlessSequenceEntry => self.parse_indentless_sequence_entry(),
            ParserState::BlockMappingFirstKey => self.parse_block_mapping_key(true),
            ParserState::BlockMappingKey => self.parse_block_mapping_key(false),
            ParserState::BlockMappingValue => self.parse_block_mapping_value(),
            ParserState::FlowSequenceFirstEntry => self.parse_flow_sequence_entry(true),
            ParserState::FlowSequenceEntry => self.parse_flow_sequence_entry(false),
            ParserState::FlowSequenceEntryMappingKey => {
                self.parse_flow_sequence_entry_mapping_key()
            }
            ParserState::FlowSequenceEntryMappingValue => {
                self.parse_flow_sequence_entry_mapping_value()
            }
            ParserState::FlowSequenceEntryMappingEnd => {
                self.parse_flow_sequence_entry_mapping_end()
            }
            ParserState::FlowMappingFirstKey => self.parse_flow_mapping_key(true),
            ParserState::FlowMappingKey => self.parse_flow_mapping_key(false),
            ParserState::FlowMappingValue => self.parse_flow_mapping_value(false),
            ParserState::FlowMappingEmptyValue => self.parse_flow_mapping_value(true),
            // Go panics ("invalid parser state"); `parse` never gets here.
            ParserState::End => Ok(Event::default()),
        }
    }

    /// Ports `yaml_parser_parse_stream_start`:
    /// stream ::= STREAM-START implicit_document? explicit_document* STREAM-END
    fn parse_stream_start(&mut self) -> Result<Event> {
        let token = self.peek_token()?;
        if token.typ != TokenType::StreamStart {
            return Err(
                self.set_parser_error("did not find expected <stream-start>", token.start_mark)
            );
        }
        self.state = ParserState::ImplicitDocumentStart;
        let event = Event {
            typ: EventType::StreamStart,
            start_mark: token.start_mark,
            end_mark: token.end_mark,
            ..Event::default()
        };
        self.skip_token();
        Ok(event)
    }

    /// Ports `yaml_parser_parse_document_start`: the start of an implicit or
    /// explicit document, or the stream end.
    fn parse_document_start(&mut self, implicit: bool) -> Result<Event> {
        let mut token = self.peek_token()?;

        // Parse extra document end indicators.
        if !implicit {
            while token.typ == TokenType::DocumentEnd {
                self.skip_token();
                token = self.peek_token()?;
            }
        }

        if implicit
            && token.typ != TokenType::VersionDirective
            && token.typ != TokenType::TagDirective
            && token.typ != TokenType::DocumentStart
            && token.typ != TokenType::StreamEnd
        {
            // Parse an implicit document.
            self.process_directives()?;
            self.states.push(ParserState::DocumentEnd);
            self.state = ParserState::BlockNode;

            let mut head_comment = Vec::new();
            if !self.head_comment.is_empty() {
                // [Go] Scan the header comment backwards, and if an empty line is found, break
                //      the header so the part before the last empty line goes into the
                //      document header, while the bottom of it goes into a follow up event.
                let hc = &self.head_comment;
                let mut split = None;
                let mut i = hc.len() - 1;
                while i > 0 {
                    if hc[i] == b'\n' {
                        if i == hc.len() - 1 {
                            split = Some((i, i + 1));
                            break;
                        } else if hc[i - 1] == b'\n' {
                            split = Some((i - 1, i + 1));
                            break;
                        }
                    }
                    i -= 1;
                }
                if let Some((head_end, rest_start)) = split {
                    let rest = self.head_comment.split_off(rest_start);
                    self.head_comment.truncate(head_end);
                    head_comment = std::mem::replace(&mut self.head_comment, rest);
                }
            }

            Ok(Event {
                typ: EventType::DocumentStart,
                start_mark: token.start_mark,
                end_mark: token.end_mark,
                comments: Comments::boxed(head_comment, Vec::new(), Vec::new(), Vec::new()),
                ..Event::default()
            })
        } else if token.typ != TokenType::StreamEnd {
            // Parse an explicit document.
            let start_mark = token.start_mark;
            let (version_directive, tag_directives) = self.process_directives()?;
            let token = self.peek_token()?;
            if token.typ != TokenType::DocumentStart {
                return Err(self
                    .set_parser_error("did not find expected <document start>", token.start_mark));
            }
            self.states.push(ParserState::DocumentEnd);
            self.state = ParserState::DocumentContent;
            let end_mark = token.end_mark;

            let event = Event {
                typ: EventType::DocumentStart,
                start_mark,
                end_mark,
                directives: Directives::boxed(version_directive, tag_directives),
                implicit: false,
                ..Event::default()
            };
            self.skip_token();
            Ok(event)
        } else {
            // Parse the stream end.
            self.state = ParserState::End;
            let event = Event {
                typ: EventType::StreamEnd,
                start_mark: token.start_mark,
                end_mark: token.end_mark,
                ..Event::default()
            };
            self.skip_token();
            Ok(event)
        }
    }

    /// Ports `yaml_parser_parse_document_content`:
    /// explicit_document ::= DIRECTIVE* DOCUMENT-START block_node? DOCUMENT-END*
    fn parse_document_content(&mut self) -> Result<Event> {
        let token = self.peek_token()?;
        if token.typ == TokenType::VersionDirective
            || token.typ == TokenType::TagDirective
            || token.typ == TokenType::DocumentStart
            || token.typ == TokenType::DocumentEnd
            || token.typ == TokenType::StreamEnd
        {
            self.state = self.pop_state();
            return Ok(self.process_empty_scalar(token.start_mark));
        }
        self.parse_node(true, false)
    }

    /// Ports `yaml_parser_parse_document_end`: the end of a document, with an
    /// optional `...`.
    fn parse_document_end(&mut self) -> Result<Event> {
        let token = self.peek_token()?;

        let start_mark = token.start_mark;
        let mut end_mark = token.start_mark;

        let mut implicit = true;
        if token.typ == TokenType::DocumentEnd {
            end_mark = token.end_mark;
            self.skip_token();
            implicit = false;
        }

        self.tag_directives.clear();

        self.state = ParserState::DocumentStart;
        let mut event = Event {
            typ: EventType::DocumentEnd,
            start_mark,
            end_mark,
            implicit,
            ..Event::default()
        };
        self.set_event_comments(&mut event);
        if let Some(c) = &mut event.comments {
            if !c.head.is_empty() && c.foot.is_empty() {
                c.foot = std::mem::take(&mut c.head);
            }
        }
        Ok(event)
    }

    /// [`Parser::set_event_comments`] for an event still to be built: the
    /// head, line and foot comments to give it.
    fn take_event_comments(&mut self) -> Option<Box<Comments>> {
        self.tail_comment.clear();
        self.stem_comment = None;
        Comments::boxed(
            std::mem::take(&mut self.head_comment),
            std::mem::take(&mut self.line_comment),
            std::mem::take(&mut self.foot_comment),
            Vec::new(),
        )
    }

    /// Ports `yaml_parser_set_event_comments`: moves the pending head, line
    /// and foot comments to the event and drops the tail and stem comments.
    fn set_event_comments(&mut self, event: &mut Event) {
        // (Events are built with empty comments: only non-empty ones move.)
        if !self.head_comment.is_empty() {
            event.comments_mut().head = std::mem::take(&mut self.head_comment);
        }
        if !self.line_comment.is_empty() {
            event.comments_mut().line = std::mem::take(&mut self.line_comment);
        }
        if !self.foot_comment.is_empty() {
            event.comments_mut().foot = std::mem::take(&mut self.foot_comment);
        }
        self.tail_comment.clear();
        self.stem_comment = None;
    }

    /// Ports `yaml_parser_parse_node`: an alias, a scalar, the start of a
    /// collection, or an empty scalar carrying only properties.
    fn parse_node(&mut self, block: bool, indentless_sequence: bool) -> Result<Event> {
        let mut token = self.peek_token()?;

        if token.typ == TokenType::Alias {
            self.state = self.pop_state();
            let alias = self.skip_token();
            let mut event = Event {
                typ: EventType::Alias,
                start_mark: token.start_mark,
                end_mark: token.end_mark,
                anchor: alias.value,
                ..Event::default()
            };
            self.set_event_comments(&mut event);
            return Ok(event);
        }

        let mut start_mark = token.start_mark;
        let mut end_mark = token.start_mark;

        let mut tag_token = false;
        let mut tag_handle = Vec::new();
        let mut tag_suffix = Vec::new();
        let mut anchor = Vec::new();
        let mut tag_mark = Mark::default();
        if token.typ == TokenType::Anchor {
            anchor = self.skip_token().value;
            start_mark = token.start_mark;
            end_mark = token.end_mark;
            token = self.peek_token()?;
            if token.typ == TokenType::Tag {
                tag_token = true;
                let tag = self.skip_token();
                tag_handle = tag.value;
                tag_suffix = tag.extra;
                tag_mark = token.start_mark;
                end_mark = token.end_mark;
                token = self.peek_token()?;
            }
        } else if token.typ == TokenType::Tag {
            tag_token = true;
            let tag = self.skip_token();
            tag_handle = tag.value;
            tag_suffix = tag.extra;
            start_mark = token.start_mark;
            tag_mark = token.start_mark;
            end_mark = token.end_mark;
            token = self.peek_token()?;
            if token.typ == TokenType::Anchor {
                anchor = self.skip_token().value;
                end_mark = token.end_mark;
                token = self.peek_token()?;
            }
        }

        let mut tag = Vec::new();
        if tag_token {
            if tag_handle.is_empty() {
                tag = tag_suffix;
            } else {
                if let Some(directive) = self.tag_directives.iter().find(|d| d.handle == tag_handle)
                {
                    tag = Vec::with_capacity(directive.prefix.len() + tag_suffix.len());
                    tag.extend_from_slice(&directive.prefix);
                    tag.extend_from_slice(&tag_suffix);
                }
                if tag.is_empty() {
                    return Err(self.set_parser_error_context(
                        "while parsing a node",
                        start_mark,
                        "found undefined tag handle",
                        tag_mark,
                    ));
                }
            }
        }

        let implicit = tag.is_empty();
        if indentless_sequence && token.typ == TokenType::BlockEntry {
            end_mark = token.end_mark;
            self.state = ParserState::IndentlessSequenceEntry;
            return Ok(Event {
                typ: EventType::SequenceStart,
                start_mark,
                end_mark,
                anchor,
                tag,
                implicit,
                style: EventStyle::Sequence(SequenceStyle::Block),
                ..Event::default()
            });
        }
        if token.typ == TokenType::Scalar {
            let mut plain_implicit = false;
            let mut quoted_implicit = false;
            end_mark = token.end_mark;
            if (tag.is_empty() && token.style == ScalarStyle::Plain) || tag == b"!" {
                plain_implicit = true;
            } else if tag.is_empty() {
                quoted_implicit = true;
            }
            self.state = self.pop_state();

            let scalar = self.skip_token();
            let comments = self.take_event_comments();
            return Ok(Event {
                typ: EventType::Scalar,
                start_mark,
                end_mark,
                anchor,
                tag,
                value: scalar.value,
                implicit: plain_implicit,
                quoted_implicit,
                style: EventStyle::Scalar(token.style),
                comments,
                ..Event::default()
            });
        }
        if token.typ == TokenType::FlowSequenceStart {
            // [Go] Some of the events below can be merged as they differ only on style.
            end_mark = token.end_mark;
            self.state = ParserState::FlowSequenceFirstEntry;
            let mut event = Event {
                typ: EventType::SequenceStart,
                start_mark,
                end_mark,
                anchor,
                tag,
                implicit,
                style: EventStyle::Sequence(SequenceStyle::Flow),
                ..Event::default()
            };
            self.set_event_comments(&mut event);
            return Ok(event);
        }
        if token.typ == TokenType::FlowMappingStart {
            end_mark = token.end_mark;
            self.state = ParserState::FlowMappingFirstKey;
            let mut event = Event {
                typ: EventType::MappingStart,
                start_mark,
                end_mark,
                anchor,
                tag,
                implicit,
                style: EventStyle::Mapping(MappingStyle::Flow),
                ..Event::default()
            };
            self.set_event_comments(&mut event);
            return Ok(event);
        }
        if block && token.typ == TokenType::BlockSequenceStart {
            end_mark = token.end_mark;
            self.state = ParserState::BlockSequenceFirstEntry;
            let mut event = Event {
                typ: EventType::SequenceStart,
                start_mark,
                end_mark,
                anchor,
                tag,
                implicit,
                style: EventStyle::Sequence(SequenceStyle::Block),
                ..Event::default()
            };
            if let Some(stem) = self.stem_comment.take() {
                event.comments_mut().head = stem;
            }
            return Ok(event);
        }
        if block && token.typ == TokenType::BlockMappingStart {
            end_mark = token.end_mark;
            self.state = ParserState::BlockMappingFirstKey;
            let mut event = Event {
                typ: EventType::MappingStart,
                start_mark,
                end_mark,
                anchor,
                tag,
                implicit,
                style: EventStyle::Mapping(MappingStyle::Block),
                ..Event::default()
            };
            if let Some(stem) = self.stem_comment.take() {
                event.comments_mut().head = stem;
            }
            return Ok(event);
        }
        if !anchor.is_empty() || !tag.is_empty() {
            self.state = self.pop_state();

            return Ok(Event {
                typ: EventType::Scalar,
                start_mark,
                end_mark,
                anchor,
                tag,
                implicit,
                quoted_implicit: false,
                style: EventStyle::Scalar(ScalarStyle::Plain),
                ..Event::default()
            });
        }

        let context = if block {
            "while parsing a block node"
        } else {
            "while parsing a flow node"
        };
        Err(self.set_parser_error_context(
            context,
            start_mark,
            "did not find expected node content",
            token.start_mark,
        ))
    }

    /// Ports `yaml_parser_parse_block_sequence_entry`:
    /// block_sequence ::= BLOCK-SEQUENCE-START (BLOCK-ENTRY block_node?)* BLOCK-END
    fn parse_block_sequence_entry(&mut self, first: bool) -> Result<Event> {
        if first {
            let token = self.peek_token()?;
            self.marks.push(token.start_mark);
            self.skip_token();
        }

        let mut token = self.peek_token()?;

        if token.typ == TokenType::BlockEntry {
            let mark = token.end_mark;
            let prior_head_len = self.head_comment.len();
            self.skip_token();
            self.split_stem_comment(prior_head_len)?;
            token = self.peek_token()?;
            if token.typ != TokenType::BlockEntry && token.typ != TokenType::BlockEnd {
                self.states.push(ParserState::BlockSequenceEntry);
                return self.parse_node(true, false);
            } else {
                self.state = ParserState::BlockSequenceEntry;
                return Ok(self.process_empty_scalar(mark));
            }
        }
        if token.typ == TokenType::BlockEnd {
            self.state = self.pop_state();
            self.pop_mark();

            let event = Event {
                typ: EventType::SequenceEnd,
                start_mark: token.start_mark,
                end_mark: token.end_mark,
                ..Event::default()
            };

            self.skip_token();
            return Ok(event);
        }

        let context_mark = self.pop_mark();
        Err(self.set_parser_error_context(
            "while parsing a block collection",
            context_mark,
            "did not find expected '-' indicator",
            token.start_mark,
        ))
    }

    /// Ports `yaml_parser_parse_indentless_sequence_entry`:
    /// indentless_sequence ::= (BLOCK-ENTRY block_node?)+
    fn parse_indentless_sequence_entry(&mut self) -> Result<Event> {
        let mut token = self.peek_token()?;

        if token.typ == TokenType::BlockEntry {
            let mark = token.end_mark;
            let prior_head_len = self.head_comment.len();
            self.skip_token();
            self.split_stem_comment(prior_head_len)?;
            token = self.peek_token()?;
            if token.typ != TokenType::BlockEntry
                && token.typ != TokenType::Key
                && token.typ != TokenType::Value
                && token.typ != TokenType::BlockEnd
            {
                self.states.push(ParserState::IndentlessSequenceEntry);
                return self.parse_node(true, false);
            }
            self.state = ParserState::IndentlessSequenceEntry;
            return Ok(self.process_empty_scalar(mark));
        }
        self.state = self.pop_state();

        Ok(Event {
            typ: EventType::SequenceEnd,
            start_mark: token.start_mark,
            end_mark: token.start_mark, // [Go] Shouldn't this be token.end_mark?
            ..Event::default()
        })
    }

    /// Ports `yaml_parser_split_stem_comment`: when a sequence or mapping
    /// starts under a sequence entry, the head comment gathered before the
    /// entry (its first `stem_len` bytes) is moved aside as the stem comment,
    /// to become the head comment of the nested collection as a whole.
    fn split_stem_comment(&mut self, stem_len: usize) -> Result<()> {
        if stem_len == 0 {
            return Ok(());
        }

        let token = self.peek_token()?;
        if token.typ != TokenType::BlockSequenceStart && token.typ != TokenType::BlockMappingStart {
            return Ok(());
        }

        let mut stem = std::mem::take(&mut self.head_comment);
        if stem.len() != stem_len {
            // Skip the '\n' that joined the prior head comment to the rest.
            self.head_comment = stem
                .get(stem_len + 1..)
                .map(<[u8]>::to_vec)
                .unwrap_or_default();
            stem.truncate(stem_len);
        }
        self.stem_comment = Some(stem);
        Ok(())
    }

    /// Ports `yaml_parser_parse_block_mapping_key`:
    /// block_mapping ::= BLOCK-MAPPING_START ((KEY block_node_or_indentless_sequence?)?
    /// (VALUE block_node_or_indentless_sequence?)?)* BLOCK-END
    fn parse_block_mapping_key(&mut self, first: bool) -> Result<Event> {
        if first {
            let token = self.peek_token()?;
            self.marks.push(token.start_mark);
            self.skip_token();
        }

        let mut token = self.peek_token()?;

        // [Go] A tail comment was left from the prior mapping value processed. Emit an event
        //      as it needs to be processed with that value and not the following key.
        if !self.tail_comment.is_empty() {
            return Ok(Event {
                typ: EventType::TailComment,
                start_mark: token.start_mark,
                end_mark: token.end_mark,
                comments: Comments::boxed(
                    Vec::new(),
                    Vec::new(),
                    std::mem::take(&mut self.tail_comment),
                    Vec::new(),
                ),
                ..Event::default()
            });
        }

        if token.typ == TokenType::Key {
            let mark = token.end_mark;
            self.skip_token();
            token = self.peek_token()?;
            if token.typ != TokenType::Key
                && token.typ != TokenType::Value
                && token.typ != TokenType::BlockEnd
            {
                self.states.push(ParserState::BlockMappingValue);
                return self.parse_node(true, true);
            } else {
                self.state = ParserState::BlockMappingValue;
                return Ok(self.process_empty_scalar(mark));
            }
        } else if token.typ == TokenType::BlockEnd {
            self.state = self.pop_state();
            self.pop_mark();
            let comments = self.take_event_comments();
            self.skip_token();
            return Ok(Event {
                typ: EventType::MappingEnd,
                start_mark: token.start_mark,
                end_mark: token.end_mark,
                comments,
                ..Event::default()
            });
        }

        let context_mark = self.pop_mark();
        Err(self.set_parser_error_context(
            "while parsing a block mapping",
            context_mark,
            "did not find expected key",
            token.start_mark,
        ))
    }

    /// Ports `yaml_parser_parse_block_mapping_value`: the VALUE part of a
    /// block mapping entry.
    fn parse_block_mapping_value(&mut self) -> Result<Event> {
        let mut token = self.peek_token()?;
        if token.typ == TokenType::Value {
            let mark = token.end_mark;
            self.skip_token();
            token = self.peek_token()?;
            if token.typ != TokenType::Key
                && token.typ != TokenType::Value
                && token.typ != TokenType::BlockEnd
            {
                self.states.push(ParserState::BlockMappingKey);
                return self.parse_node(true, true);
            }
            self.state = ParserState::BlockMappingKey;
            return Ok(self.process_empty_scalar(mark));
        }
        self.state = ParserState::BlockMappingKey;
        Ok(self.process_empty_scalar(token.start_mark))
    }

    /// Ports `yaml_parser_parse_flow_sequence_entry`:
    /// flow_sequence ::= FLOW-SEQUENCE-START (flow_sequence_entry FLOW-ENTRY)*
    /// flow_sequence_entry? FLOW-SEQUENCE-END
    fn parse_flow_sequence_entry(&mut self, first: bool) -> Result<Event> {
        if first {
            let token = self.peek_token()?;
            self.marks.push(token.start_mark);
            self.skip_token();
        }
        let mut token = self.peek_token()?;
        if token.typ != TokenType::FlowSequenceEnd {
            if !first {
                if token.typ == TokenType::FlowEntry {
                    self.skip_token();
                    token = self.peek_token()?;
                } else {
                    let context_mark = self.pop_mark();
                    return Err(self.set_parser_error_context(
                        "while parsing a flow sequence",
                        context_mark,
                        "did not find expected ',' or ']'",
                        token.start_mark,
                    ));
                }
            }

            if token.typ == TokenType::Key {
                self.state = ParserState::FlowSequenceEntryMappingKey;
                let event = Event {
                    typ: EventType::MappingStart,
                    start_mark: token.start_mark,
                    end_mark: token.end_mark,
                    implicit: true,
                    style: EventStyle::Mapping(MappingStyle::Flow),
                    ..Event::default()
                };
                self.skip_token();
                return Ok(event);
            } else if token.typ != TokenType::FlowSequenceEnd {
                self.states.push(ParserState::FlowSequenceEntry);
                return self.parse_node(false, false);
            }
        }

        self.state = self.pop_state();
        self.pop_mark();

        let mut event = Event {
            typ: EventType::SequenceEnd,
            start_mark: token.start_mark,
            end_mark: token.end_mark,
            ..Event::default()
        };
        self.set_event_comments(&mut event);

        self.skip_token();
        Ok(event)
    }

    /// Ports `yaml_parser_parse_flow_sequence_entry_mapping_key`: the key of a
    /// single-pair mapping inside a flow sequence.
    fn parse_flow_sequence_entry_mapping_key(&mut self) -> Result<Event> {
        let token = self.peek_token()?;
        if token.typ != TokenType::Value
            && token.typ != TokenType::FlowEntry
            && token.typ != TokenType::FlowSequenceEnd
        {
            self.states.push(ParserState::FlowSequenceEntryMappingValue);
            return self.parse_node(false, false);
        }
        let mark = token.end_mark;
        self.skip_token();
        self.state = ParserState::FlowSequenceEntryMappingValue;
        Ok(self.process_empty_scalar(mark))
    }

    /// Ports `yaml_parser_parse_flow_sequence_entry_mapping_value`: the value
    /// of a single-pair mapping inside a flow sequence.
    fn parse_flow_sequence_entry_mapping_value(&mut self) -> Result<Event> {
        let token = self.peek_token()?;
        if token.typ == TokenType::Value {
            self.skip_token();
            // Go shadows `token` here: the empty scalar below keeps the mark
            // of the VALUE token. (Go reads it through a pointer into the
            // token slice, which the scanner's queue compaction could in
            // principle overwrite; the port always uses the VALUE token.)
            let next = self.peek_token()?;
            if next.typ != TokenType::FlowEntry && next.typ != TokenType::FlowSequenceEnd {
                self.states.push(ParserState::FlowSequenceEntryMappingEnd);
                return self.parse_node(false, false);
            }
        }
        self.state = ParserState::FlowSequenceEntryMappingEnd;
        Ok(self.process_empty_scalar(token.start_mark))
    }

    /// Ports `yaml_parser_parse_flow_sequence_entry_mapping_end`: the end of a
    /// single-pair mapping inside a flow sequence.
    fn parse_flow_sequence_entry_mapping_end(&mut self) -> Result<Event> {
        let token = self.peek_token()?;
        self.state = ParserState::FlowSequenceEntry;
        Ok(Event {
            typ: EventType::MappingEnd,
            start_mark: token.start_mark,
            end_mark: token.start_mark, // [Go] Shouldn't this be end_mark?
            ..Event::default()
        })
    }

    /// Ports `yaml_parser_parse_flow_mapping_key`:
    /// flow_mapping ::= FLOW-MAPPING-START (flow_mapping_entry FLOW-ENTRY)*
    /// flow_mapping_entry? FLOW-MAPPING-END
    fn parse_flow_mapping_key(&mut self, first: bool) -> Result<Event> {
        if first {
            let token = self.peek_token()?;
            self.marks.push(token.start_mark);
            self.skip_token();
        }

        let mut token = self.peek_token()?;

        if token.typ != TokenType::FlowMappingEnd {
            if !first {
                if token.typ == TokenType::FlowEntry {
                    self.skip_token();
                    token = self.peek_token()?;
                } else {
                    let context_mark = self.pop_mark();
                    return Err(self.set_parser_error_context(
                        "while parsing a flow mapping",
                        context_mark,
                        "did not find expected ',' or '}'",
                        token.start_mark,
                    ));
                }
            }

            if token.typ == TokenType::Key {
                self.skip_token();
                token = self.peek_token()?;
                if token.typ != TokenType::Value
                    && token.typ != TokenType::FlowEntry
                    && token.typ != TokenType::FlowMappingEnd
                {
                    self.states.push(ParserState::FlowMappingValue);
                    return self.parse_node(false, false);
                } else {
                    self.state = ParserState::FlowMappingValue;
                    return Ok(self.process_empty_scalar(token.start_mark));
                }
            } else if token.typ != TokenType::FlowMappingEnd {
                self.states.push(ParserState::FlowMappingEmptyValue);
                return self.parse_node(false, false);
            }
        }

        self.state = self.pop_state();
        self.pop_mark();
        let mut event = Event {
            typ: EventType::MappingEnd,
            start_mark: token.start_mark,
            end_mark: token.end_mark,
            ..Event::default()
        };
        self.set_event_comments(&mut event);
        self.skip_token();
        Ok(event)
    }

    /// Ports `yaml_parser_parse_flow_mapping_value`:
    /// flow_mapping_entry ::= flow_node | KEY flow_node? (VALUE flow_node?)?
    fn parse_flow_mapping_value(&mut self, empty: bool) -> Result<Event> {
        let mut token = self.peek_token()?;
        if empty {
            self.state = ParserState::FlowMappingKey;
            return Ok(self.process_empty_scalar(token.start_mark));
        }
        if token.typ == TokenType::Value {
            self.skip_token();
            token = self.peek_token()?;
            if token.typ != TokenType::FlowEntry && token.typ != TokenType::FlowMappingEnd {
                self.states.push(ParserState::FlowMappingKey);
                return self.parse_node(false, false);
            }
        }
        self.state = ParserState::FlowMappingKey;
        Ok(self.process_empty_scalar(token.start_mark))
    }

    /// Ports `yaml_parser_process_empty_scalar`: an empty plain scalar event.
    fn process_empty_scalar(&self, mark: Mark) -> Event {
        Event {
            typ: EventType::Scalar,
            start_mark: mark,
            end_mark: mark,
            value: Vec::new(), // Empty
            implicit: true,
            style: EventStyle::Scalar(ScalarStyle::Plain),
            ..Event::default()
        }
    }

    /// Ports `yaml_parser_process_directives`: the `%YAML` and `%TAG`
    /// directives of a document, after which the default tag directives are
    /// added.
    fn process_directives(&mut self) -> Result<(Option<VersionDirective>, Vec<TagDirective>)> {
        let mut version_directive: Option<VersionDirective> = None;
        let mut tag_directives = Vec::new();

        let mut token = self.peek_token()?;

        while token.typ == TokenType::VersionDirective || token.typ == TokenType::TagDirective {
            // The token is taken before it is checked; on an error the parser
            // is finished anyway, so this is not observable.
            let directive = self.skip_token();
            if token.typ == TokenType::VersionDirective {
                if version_directive.is_some() {
                    return Err(
                        self.set_parser_error("found duplicate %YAML directive", token.start_mark)
                    );
                }
                if directive.major != 1 || directive.minor != 1 {
                    return Err(
                        self.set_parser_error("found incompatible YAML document", token.start_mark)
                    );
                }
                version_directive = Some(VersionDirective {
                    major: directive.major,
                    minor: directive.minor,
                });
            } else {
                let value = TagDirective {
                    handle: directive.value,
                    prefix: directive.extra,
                };
                self.append_tag_directive(&value, false, token.start_mark)?;
                tag_directives.push(value);
            }

            token = self.peek_token()?;
        }

        for (handle, prefix) in DEFAULT_TAG_DIRECTIVES {
            // `append_tag_directive` with duplicates allowed (the document's
            // own directive wins), copying the default only when it is added.
            if !self.tag_directives.iter().any(|d| d.handle == handle) {
                self.tag_directives.push(TagDirective {
                    handle: handle.to_vec(),
                    prefix: prefix.to_vec(),
                });
            }
        }

        Ok((version_directive, tag_directives))
    }

    /// Ports `yaml_parser_append_tag_directive`: adds a tag directive to the
    /// parser's stack, failing on a duplicate handle unless duplicates are
    /// allowed (then the first one wins).
    fn append_tag_directive(
        &mut self,
        value: &TagDirective,
        allow_duplicates: bool,
        mark: Mark,
    ) -> Result<()> {
        if self.tag_directives.iter().any(|d| d.handle == value.handle) {
            if allow_duplicates {
                return Ok(());
            }
            return Err(self.set_parser_error("found duplicate %TAG directive", mark));
        }
        self.tag_directives.push(value.clone());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    //! Event dumps checked against real yaml.v3 (v3.0.1): each expected dump
    //! was produced by running Go's `yaml_parser_parse` on the same input and
    //! printing the events in the format of `dump`.

    use super::*;
    use std::fmt::Write as _;

    /// Quotes bytes the way the Go dumper did.
    fn dq(s: &[u8]) -> String {
        let mut out = String::from("\"");
        for chunk in s.utf8_chunks() {
            for c in chunk.valid().chars() {
                match c {
                    '\n' => out.push_str("\\n"),
                    '\t' => out.push_str("\\t"),
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                        let _ = write!(out, "\\x{:02x}", c as u32);
                    }
                    c => out.push(c),
                }
            }
            for b in chunk.invalid() {
                let _ = write!(out, "\\x{b:02x}");
            }
        }
        out.push('"');
        out
    }

    /// A mark as `index,line,column`.
    fn dm(m: Mark) -> String {
        format!("{},{},{}", m.index, m.line, m.column)
    }

    /// Parses `input` to the end (or the first error) and dumps the events.
    fn dump(input: &str) -> String {
        let mut out = String::new();
        let mut parser = match Parser::new(input) {
            Ok(parser) => parser,
            Err(err) => return format!("ERROR {:?} {}\n", err.kind, dq(err.problem.as_bytes())),
        };
        for _ in 0..100_000 {
            let event = match parser.parse() {
                Ok(event) => event,
                Err(err) => {
                    let _ = write!(
                        out,
                        "ERROR {:?} {} @{}",
                        err.kind,
                        dq(err.problem.as_bytes()),
                        dm(err.problem_mark)
                    );
                    if !err.context.is_empty() {
                        let _ = write!(
                            out,
                            " ctx {} @{}",
                            dq(err.context.as_bytes()),
                            dm(err.context_mark)
                        );
                    }
                    out.push('\n');
                    break;
                }
            };
            let _ = write!(
                out,
                "{} @{}..{}",
                event.typ.as_str(),
                dm(event.start_mark),
                dm(event.end_mark)
            );
            match event.style {
                EventStyle::None => {}
                EventStyle::Scalar(s) => {
                    let _ = write!(out, " style={s:?}");
                }
                EventStyle::Sequence(s) => {
                    let _ = write!(out, " style={s:?}");
                }
                EventStyle::Mapping(s) => {
                    let _ = write!(out, " style={s:?}");
                }
            }
            if !event.value.is_empty() {
                let _ = write!(out, " v={}", dq(&event.value));
            }
            if !event.anchor.is_empty() {
                let _ = write!(out, " &{}", dq(&event.anchor));
            }
            if !event.tag.is_empty() {
                let _ = write!(out, " !{}", dq(&event.tag));
            }
            if event.implicit {
                out.push_str(" i");
            }
            if event.quoted_implicit {
                out.push_str(" qi");
            }
            for (name, comment) in [
                ("H", event.head_comment()),
                ("L", event.line_comment()),
                ("F", event.foot_comment()),
                ("T", event.tail_comment()),
            ] {
                if !comment.is_empty() {
                    let _ = write!(out, " {name}={}", dq(comment));
                }
            }
            if let Some(v) = event.version_directive() {
                let _ = write!(out, " V={}.{}", v.major, v.minor);
            }
            for td in event.tag_directives() {
                let _ = write!(out, " TD={}:{}", dq(&td.handle), dq(&td.prefix));
            }
            out.push('\n');
            if event.typ == EventType::StreamEnd || event.typ == EventType::NoEvent {
                break;
            }
        }
        out
    }

    /// Asserts that `input` parses into the `expected` dump.
    fn check(input: &str, expected: &str) {
        let got = dump(input);
        assert_eq!(got, expected, "input: {input:?}\ngot:\n{got}");
    }

    #[test]
    fn stream_end_and_errors_are_sticky() {
        let mut parser = Parser::new("a: 1\n").unwrap();
        let mut types = Vec::new();
        loop {
            let event = parser.parse().unwrap();
            types.push(event.typ);
            if event.typ == EventType::StreamEnd {
                break;
            }
        }
        assert_eq!(types.len(), 8);
        for _ in 0..3 {
            assert_eq!(parser.parse().unwrap().typ, EventType::NoEvent);
        }

        let mut parser = Parser::new("[a, b\n").unwrap();
        let err = loop {
            match parser.parse() {
                Ok(event) => assert_ne!(event.typ, EventType::StreamEnd),
                Err(err) => break err,
            }
        };
        assert_eq!(err.kind, ErrorKind::Parser);
        assert_eq!(err.problem, "did not find expected ',' or ']'");
        assert_eq!(parser.parse().unwrap_err(), err);
        assert_eq!(parser.parse().unwrap_err(), err);
    }

    /// Deliberate deviation: Go's `yaml_parser_split_stem_comment` ignores a
    /// failed `peek_token`, so yaml.v3 still returns the nested `sequence
    /// start` (without its stem comment) and only reports the scanner error
    /// through `parser.error` (which yaml.v3's decoder checks right after the
    /// call). The port fails that very call with the scanner error.
    #[test]
    fn scanner_error_while_splitting_stem_comment() {
        check(
            "# c\n- - \"abc\n",
            r##"stream start @0,0,0..0,0,0
document start @4,1,0..4,1,0
sequence start @4,1,0..4,1,0 style=Block i
ERROR Scanner "found unexpected end of stream" @13,2,0 ctx "while scanning a quoted scalar" @8,1,4
"##,
        );
    }

    #[test]
    fn never_panics_on_odd_inputs() {
        let inputs = [
            "",
            "-",
            "?",
            ":",
            "[",
            "]",
            "{",
            "}",
            "- - - -",
            "? ? ?",
            ": : :",
            "&a",
            "!t",
            "&a !t",
            "!t &a",
            "*a",
            "[?]",
            "{?}",
            "[? a : b]",
            "[: b]",
            "{: b}",
            "- ? a\n  : b",
            "--- !",
            "...",
            "--- ...",
            "%YAML 1.1",
            "%TAG ! !\n",
            "# c\n- # d\n  # e\n  - f\n# g\n",
            "a:\n  # x\n# y\n  b: c",
            "\u{feff}a: b",
            "a: |\n  x\n# c\n",
            "[a, {b: c}, [d]]: e",
        ];
        for input in inputs {
            let _ = dump(input);
        }
    }

    #[test]
    fn block_mapping() {
        check(
            "a: 1\nb: two\nc:\n  d: 3\n",
            r##"stream start @0,0,0..0,0,0
document start @0,0,0..0,0,0
mapping start @0,0,0..0,0,0 style=Block i
scalar @0,0,0..1,0,1 style=Plain v="a" i
scalar @3,0,3..4,0,4 style=Plain v="1" i
scalar @5,1,0..6,1,1 style=Plain v="b" i
scalar @8,1,3..11,1,6 style=Plain v="two" i
scalar @12,2,0..13,2,1 style=Plain v="c" i
mapping start @17,3,2..17,3,2 style=Block i
scalar @17,3,2..18,3,3 style=Plain v="d" i
scalar @20,3,5..21,3,6 style=Plain v="3" i
mapping end @21,4,0..21,4,0
mapping end @21,4,0..21,4,0
document end @22,4,0..22,4,0 i
stream end @22,4,0..22,4,0
"##,
        );
    }

    #[test]
    fn block_sequence() {
        check(
            "- a\n- b\n- - c\n  - d\n- e: f\n",
            r##"stream start @0,0,0..0,0,0
document start @0,0,0..0,0,0
sequence start @0,0,0..0,0,0 style=Block i
scalar @2,0,2..3,0,3 style=Plain v="a" i
scalar @6,1,2..7,1,3 style=Plain v="b" i
sequence start @10,2,2..10,2,2 style=Block i
scalar @12,2,4..13,2,5 style=Plain v="c" i
scalar @18,3,4..19,3,5 style=Plain v="d" i
sequence end @19,4,0..19,4,0
mapping start @22,4,2..22,4,2 style=Block i
scalar @22,4,2..23,4,3 style=Plain v="e" i
scalar @25,4,5..26,4,6 style=Plain v="f" i
mapping end @26,5,0..26,5,0
sequence end @26,5,0..26,5,0
document end @27,5,0..27,5,0 i
stream end @27,5,0..27,5,0
"##,
        );
    }

    #[test]
    fn indentless() {
        check(
            "key:\n- a\n- b\nother: x\n",
            r##"stream start @0,0,0..0,0,0
document start @0,0,0..0,0,0
mapping start @0,0,0..0,0,0 style=Block i
scalar @0,0,0..3,0,3 style=Plain v="key" i
sequence start @5,1,0..6,1,1 style=Block i
scalar @7,1,2..8,1,3 style=Plain v="a" i
scalar @11,2,2..12,2,3 style=Plain v="b" i
sequence end @13,3,0..13,3,0
scalar @13,3,0..18,3,5 style=Plain v="other" i
scalar @20,3,7..21,3,8 style=Plain v="x" i
mapping end @21,4,0..21,4,0
document end @22,4,0..22,4,0 i
stream end @22,4,0..22,4,0
"##,
        );
    }

    #[test]
    fn flow() {
        check(
            "{a: [1, 2], b: {c: d}, e}\n",
            r##"stream start @0,0,0..0,0,0
document start @0,0,0..1,0,1
mapping start @0,0,0..1,0,1 style=Flow i
scalar @1,0,1..2,0,2 style=Plain v="a" i
sequence start @4,0,4..5,0,5 style=Flow i
scalar @5,0,5..6,0,6 style=Plain v="1" i
scalar @8,0,8..9,0,9 style=Plain v="2" i
sequence end @9,0,9..10,0,10
scalar @12,0,12..13,0,13 style=Plain v="b" i
mapping start @15,0,15..16,0,16 style=Flow i
scalar @16,0,16..17,0,17 style=Plain v="c" i
scalar @19,0,19..20,0,20 style=Plain v="d" i
mapping end @20,0,20..21,0,21
scalar @23,0,23..24,0,24 style=Plain v="e" i
scalar @24,0,24..24,0,24 style=Plain i
mapping end @24,0,24..25,0,25
document end @26,1,0..26,1,0 i
stream end @26,1,0..26,1,0
"##,
        );
    }

    #[test]
    fn flow_seq_pairs() {
        check(
            "[a: b, c, ? d]\n",
            r##"stream start @0,0,0..0,0,0
document start @0,0,0..1,0,1
sequence start @0,0,0..1,0,1 style=Flow i
mapping start @1,0,1..1,0,1 style=Flow i
scalar @1,0,1..2,0,2 style=Plain v="a" i
scalar @4,0,4..5,0,5 style=Plain v="b" i
mapping end @5,0,5..5,0,5
scalar @7,0,7..8,0,8 style=Plain v="c" i
mapping start @10,0,10..11,0,11 style=Flow i
scalar @12,0,12..13,0,13 style=Plain v="d" i
scalar @13,0,13..13,0,13 style=Plain i
mapping end @13,0,13..13,0,13
sequence end @13,0,13..14,0,14
document end @15,1,0..15,1,0 i
stream end @15,1,0..15,1,0
"##,
        );
    }

    #[test]
    fn flow_map_empty() {
        check(
            "{a, b: , ? c, : d}\n",
            r##"stream start @0,0,0..0,0,0
document start @0,0,0..1,0,1
mapping start @0,0,0..1,0,1 style=Flow i
scalar @1,0,1..2,0,2 style=Plain v="a" i
scalar @2,0,2..2,0,2 style=Plain i
scalar @4,0,4..5,0,5 style=Plain v="b" i
scalar @7,0,7..7,0,7 style=Plain i
scalar @11,0,11..12,0,12 style=Plain v="c" i
scalar @12,0,12..12,0,12 style=Plain i
ERROR Parser "did not find expected node content" @14,0,14 ctx "while parsing a flow node" @14,0,14
"##,
        );
    }

    #[test]
    fn scalar_styles() {
        check(
            "plain: text\nsingle: 'it''s'\ndouble: \"a\\tb\"\nliteral: |\n  line1\n  line2\nfolded: >-\n  one\n  two\n",
            r##"stream start @0,0,0..0,0,0
document start @0,0,0..0,0,0
mapping start @0,0,0..0,0,0 style=Block i
scalar @0,0,0..5,0,5 style=Plain v="plain" i
scalar @7,0,7..11,0,11 style=Plain v="text" i
scalar @12,1,0..18,1,6 style=Plain v="single" i
scalar @20,1,8..27,1,15 style=SingleQuoted v="it's" qi
scalar @28,2,0..34,2,6 style=Plain v="double" i
scalar @36,2,8..42,2,14 style=DoubleQuoted v="a\tb" qi
scalar @43,3,0..50,3,7 style=Plain v="literal" i
scalar @52,3,9..70,6,0 style=Literal v="line1\nline2\n" qi
scalar @70,6,0..76,6,6 style=Plain v="folded" i
scalar @78,6,8..93,9,0 style=Folded v="one two" qi
mapping end @92,9,0..92,9,0
document end @93,9,0..93,9,0 i
stream end @93,9,0..93,9,0
"##,
        );
    }

    #[test]
    fn anchors_tags() {
        check(
            "base: &b {x: 1}\nref: *b\ntagged: !!str 123\nlocal: !foo bar\nboth: &a !!int 7\ntagonly: !!null\nbang: ! x\n",
            r##"stream start @0,0,0..0,0,0
document start @0,0,0..0,0,0
mapping start @0,0,0..0,0,0 style=Block i
scalar @0,0,0..4,0,4 style=Plain v="base" i
mapping start @6,0,6..10,0,10 style=Flow &"b" i
scalar @10,0,10..11,0,11 style=Plain v="x" i
scalar @13,0,13..14,0,14 style=Plain v="1" i
mapping end @14,0,14..15,0,15
scalar @16,1,0..19,1,3 style=Plain v="ref" i
alias @21,1,5..23,1,7 &"b"
scalar @24,2,0..30,2,6 style=Plain v="tagged" i
scalar @32,2,8..41,2,17 style=Plain v="123" !"tag:yaml.org,2002:str"
scalar @42,3,0..47,3,5 style=Plain v="local" i
scalar @49,3,7..57,3,15 style=Plain v="bar" !"!foo"
scalar @58,4,0..62,4,4 style=Plain v="both" i
scalar @64,4,6..74,4,16 style=Plain v="7" &"a" !"tag:yaml.org,2002:int"
scalar @75,5,0..82,5,7 style=Plain v="tagonly" i
scalar @84,5,9..90,5,15 style=Plain !"tag:yaml.org,2002:null"
scalar @91,6,0..95,6,4 style=Plain v="bang" i
scalar @97,6,6..100,6,9 style=Plain v="x" !"!" i
mapping end @100,7,0..100,7,0
document end @101,7,0..101,7,0 i
stream end @101,7,0..101,7,0
"##,
        );
    }

    #[test]
    fn documents() {
        check(
            "%YAML 1.1\n%TAG !e! tag:example.com,2000:\n--- !e!thing\na: 1\n...\n---\n- b\n...\n",
            r##"stream start @0,0,0..0,0,0
document start @0,0,0..44,2,3 V=1.1 TD="!e!":"tag:example.com,2000:"
mapping start @45,2,4..54,3,0 style=Block !"tag:example.com,2000:thing"
scalar @54,3,0..55,3,1 style=Plain v="a" i
scalar @57,3,3..58,3,4 style=Plain v="1" i
mapping end @58,4,0..58,4,0
document end @59,4,0..62,4,3
document start @63,5,0..66,5,3
sequence start @67,6,0..67,6,0 style=Block i
scalar @69,6,2..70,6,3 style=Plain v="b" i
sequence end @70,7,0..70,7,0
document end @71,7,0..74,7,3
stream end @75,8,0..75,8,0
"##,
        );
    }

    #[test]
    fn explicit_empty_docs() {
        check(
            "---\n---\n...\n...\n--- x\n",
            r##"stream start @0,0,0..0,0,0
document start @0,0,0..3,0,3
scalar @4,1,0..4,1,0 style=Plain i
document end @4,1,0..4,1,0 i
document start @4,1,0..7,1,3
scalar @8,2,0..8,2,0 style=Plain i
document end @8,2,0..11,2,3
document start @16,4,0..19,4,3
scalar @20,4,4..21,4,5 style=Plain v="x" i
document end @22,5,0..22,5,0 i
stream end @22,5,0..22,5,0
"##,
        );
    }

    #[test]
    fn empty_stream() {
        check(
            "",
            r##"stream start @0,0,0..0,0,0
stream end @0,0,0..0,0,0
"##,
        );
    }

    #[test]
    fn only_comment() {
        check(
            "# just a comment\n",
            r##"stream start @0,0,0..0,0,0
stream end @17,1,0..17,1,0
"##,
        );
    }

    #[test]
    fn empty_values() {
        check(
            "a:\nb: ~\n? c\n: \n- \n",
            r##"stream start @0,0,0..0,0,0
document start @0,0,0..0,0,0
mapping start @0,0,0..0,0,0 style=Block i
scalar @0,0,0..1,0,1 style=Plain v="a" i
scalar @2,0,2..2,0,2 style=Plain i
scalar @3,1,0..4,1,1 style=Plain v="b" i
scalar @6,1,3..7,1,4 style=Plain v="~" i
scalar @10,2,2..11,2,3 style=Plain v="c" i
sequence start @15,4,0..16,4,1 style=Block i
scalar @16,4,1..16,4,1 style=Plain i
sequence end @17,5,0..17,5,0
mapping end @17,5,0..17,5,0
document end @18,5,0..18,5,0 i
stream end @18,5,0..18,5,0
"##,
        );
    }

    #[test]
    fn empty_values2() {
        check(
            "a:\nb:\n  -\n  - x\n---\n",
            r##"stream start @0,0,0..0,0,0
document start @0,0,0..0,0,0
mapping start @0,0,0..0,0,0 style=Block i
scalar @0,0,0..1,0,1 style=Plain v="a" i
scalar @2,0,2..2,0,2 style=Plain i
scalar @3,1,0..4,1,1 style=Plain v="b" i
sequence start @8,2,2..8,2,2 style=Block i
scalar @9,2,3..9,2,3 style=Plain i
scalar @14,3,4..15,3,5 style=Plain v="x" i
sequence end @15,4,0..15,4,0
mapping end @15,4,0..15,4,0
document end @16,4,0..16,4,0 i
document start @16,4,0..19,4,3
scalar @20,5,0..20,5,0 style=Plain i
document end @20,5,0..20,5,0 i
stream end @20,5,0..20,5,0
"##,
        );
    }

    #[test]
    fn head_comment_key() {
        check(
            "# top comment\n\n# key head\nkey: value\n",
            r##"stream start @0,0,0..0,0,0
document start @26,3,0..26,3,0 H="# top comment"
mapping start @26,3,0..26,3,0 style=Block i
scalar @26,3,0..29,3,3 style=Plain v="key" i H="# key head"
scalar @31,3,5..36,3,10 style=Plain v="value" i
mapping end @36,4,0..36,4,0
document end @37,4,0..37,4,0 i
stream end @37,4,0..37,4,0
"##,
        );
    }

    #[test]
    fn line_comment() {
        check(
            "key: value # trailing\nother: [1, 2] # flow line\n",
            r##"stream start @0,0,0..0,0,0
document start @0,0,0..0,0,0
mapping start @0,0,0..0,0,0 style=Block i
scalar @0,0,0..3,0,3 style=Plain v="key" i
scalar @5,0,5..10,0,10 style=Plain v="value" i L="# trailing"
scalar @22,1,0..27,1,5 style=Plain v="other" i
sequence start @29,1,7..30,1,8 style=Flow i
scalar @30,1,8..31,1,9 style=Plain v="1" i
scalar @33,1,11..34,1,12 style=Plain v="2" i
sequence end @34,1,12..35,1,13 L="# flow line"
mapping end @47,2,0..47,2,0
document end @48,2,0..48,2,0 i
stream end @48,2,0..48,2,0
"##,
        );
    }

    #[test]
    fn foot_comments() {
        check(
            "a:\n  b: 1\n  # foot of b\n# foot of a\nc: 2\n",
            r##"stream start @0,0,0..0,0,0
document start @0,0,0..0,0,0
mapping start @0,0,0..0,0,0 style=Block i
scalar @0,0,0..1,0,1 style=Plain v="a" i
mapping start @5,1,2..5,1,2 style=Block i
scalar @5,1,2..6,1,3 style=Plain v="b" i
scalar @8,1,5..9,1,6 style=Plain v="1" i F="# foot of b"
mapping end @12,2,3..12,2,3
scalar @36,4,0..37,4,1 style=Plain v="c" i H="# foot of a"
scalar @39,4,3..40,4,4 style=Plain v="2" i
mapping end @40,5,0..40,5,0
document end @41,5,0..41,5,0 i
stream end @41,5,0..41,5,0
"##,
        );
    }

    #[test]
    fn comments_before_doc() {
        check(
            "# before first\n---\n# doc head\na: 1\n# before second\n---\nb: 2\n",
            r##"stream start @0,0,0..0,0,0
document start @15,1,0..18,1,3
mapping start @30,3,0..30,3,0 style=Block i
scalar @30,3,0..31,3,1 style=Plain v="a" i H="# before first\n# doc head"
scalar @33,3,3..34,3,4 style=Plain v="1" i
mapping end @35,4,1..35,4,1
document end @51,5,0..51,5,0 i F="# before second"
document start @51,5,0..54,5,3
mapping start @55,6,0..55,6,0 style=Block i
scalar @55,6,0..56,6,1 style=Plain v="b" i
scalar @58,6,3..59,6,4 style=Plain v="2" i
mapping end @59,7,0..59,7,0
document end @60,7,0..60,7,0 i
stream end @60,7,0..60,7,0
"##,
        );
    }

    #[test]
    fn doc_end_comment() {
        check(
            "a: 1\n# last\n...\n# after end\n",
            r##"stream start @0,0,0..0,0,0
document start @0,0,0..0,0,0
mapping start @0,0,0..0,0,0 style=Block i
scalar @0,0,0..1,0,1 style=Plain v="a" i
scalar @3,0,3..4,0,4 style=Plain v="1" i
mapping end @5,1,1..5,1,1
document end @12,2,0..15,2,3 H="# last" F="# after end"
stream end @28,4,0..28,4,0
"##,
        );
    }

    #[test]
    fn comment_key_nested() {
        check(
            "key:\n  # between key and nested\n  nested: 1\nlist:\n  # before list\n  - a\n",
            r##"stream start @0,0,0..0,0,0
document start @0,0,0..0,0,0
mapping start @0,0,0..0,0,0 style=Block i
scalar @0,0,0..3,0,3 style=Plain v="key" i
mapping start @34,2,2..34,2,2 style=Block i
scalar @34,2,2..40,2,8 style=Plain v="nested" i H="# between key and nested"
scalar @42,2,10..43,2,11 style=Plain v="1" i
mapping end @43,3,0..43,3,0
scalar @44,3,0..48,3,4 style=Plain v="list" i
sequence start @68,5,2..68,5,2 style=Block i
scalar @70,5,4..71,5,5 style=Plain v="a" i H="# before list"
sequence end @71,6,0..71,6,0
mapping end @71,6,0..71,6,0
document end @72,6,0..72,6,0 i
stream end @72,6,0..72,6,0
"##,
        );
    }

    #[test]
    fn multi_line_comments() {
        check(
            "# one\n# two\n\n# three\n# four\nk: v # l1\n  # l2\n",
            r##"stream start @0,0,0..0,0,0
document start @28,5,0..28,5,0 H="# one\n# two"
mapping start @28,5,0..28,5,0 style=Block i
scalar @28,5,0..29,5,1 style=Plain v="k" i H="# three\n# four"
scalar @31,5,3..32,5,4 style=Plain v="v" i L="# l1" F="# l2"
mapping end @44,7,0..44,7,0
document end @45,7,0..45,7,0 i
stream end @45,7,0..45,7,0
"##,
        );
    }

    #[test]
    fn seq_item_comments() {
        check(
            "# head\n- a # line a\n# between\n- b\n# foot\n",
            r##"stream start @0,0,0..0,0,0
document start @7,1,0..7,1,0
sequence start @7,1,0..7,1,0 style=Block i
scalar @9,1,2..10,1,3 style=Plain v="a" i H="# head" L="# line a"
scalar @32,3,2..33,3,3 style=Plain v="b" i H="# between" F="# foot"
sequence end @34,4,1..34,4,1
document end @41,5,0..41,5,0 i
stream end @41,5,0..41,5,0
"##,
        );
    }

    #[test]
    fn stem_comment() {
        check(
            "- # stem\n  - a\n  - b\n# head of second\n- key: v\n  # head of k2\n  k2: w\n",
            r##"stream start @0,0,0..0,0,0
document start @0,0,0..0,0,0
sequence start @0,0,0..0,0,0 style=Block i
sequence start @11,1,2..11,1,2 style=Block i
scalar @13,1,4..14,1,5 style=Plain v="a" i H="# stem"
scalar @19,2,4..20,2,5 style=Plain v="b" i
sequence end @20,3,0..20,3,0
mapping start @40,4,2..40,4,2 style=Block i H="# head of second"
scalar @40,4,2..43,4,5 style=Plain v="key" i
scalar @45,4,7..46,4,8 style=Plain v="v" i
scalar @64,6,2..66,6,4 style=Plain v="k2" i H="# head of k2"
scalar @68,6,6..69,6,7 style=Plain v="w" i
mapping end @69,7,0..69,7,0
sequence end @69,7,0..69,7,0
document end @70,7,0..70,7,0 i
stream end @70,7,0..70,7,0
"##,
        );
    }

    #[test]
    fn stem_nested_seq() {
        check(
            "# outer head\n- - a\n  - b\n# h2\n- # l\n  x: 1\n",
            r##"stream start @0,0,0..0,0,0
document start @13,1,0..13,1,0
sequence start @13,1,0..13,1,0 style=Block i
sequence start @15,1,2..15,1,2 style=Block i H="# outer head"
scalar @17,1,4..18,1,5 style=Plain v="a" i
scalar @23,2,4..24,2,5 style=Plain v="b" i
sequence end @24,3,0..24,3,0
mapping start @38,5,2..38,5,2 style=Block i H="# h2"
scalar @38,5,2..39,5,3 style=Plain v="x" i H="# l"
scalar @41,5,5..42,5,6 style=Plain v="1" i
mapping end @42,6,0..42,6,0
sequence end @42,6,0..42,6,0
document end @43,6,0..43,6,0 i
stream end @43,6,0..43,6,0
"##,
        );
    }

    #[test]
    fn stem_indentless() {
        check(
            "key:\n# before entry\n- a: 1\n  b: 2\n# before second\n- - x\n",
            r##"stream start @0,0,0..0,0,0
document start @0,0,0..0,0,0
mapping start @0,0,0..0,0,0 style=Block i
scalar @0,0,0..3,0,3 style=Plain v="key" i
sequence start @20,2,0..21,2,1 style=Block i
mapping start @22,2,2..22,2,2 style=Block i H="# before entry"
scalar @22,2,2..23,2,3 style=Plain v="a" i
scalar @25,2,5..26,2,6 style=Plain v="1" i
scalar @29,3,2..30,3,3 style=Plain v="b" i
scalar @32,3,5..33,3,6 style=Plain v="2" i
mapping end @33,4,0..33,4,0
sequence start @52,5,2..52,5,2 style=Block i H="# before second"
scalar @54,5,4..55,5,5 style=Plain v="x" i
sequence end @55,6,0..55,6,0
sequence end @55,6,0..55,6,0
mapping end @55,6,0..55,6,0
document end @56,6,0..56,6,0 i
stream end @56,6,0..56,6,0
"##,
        );
    }

    #[test]
    fn kyaml_like() {
        check(
            "apiVersion: v1\nkind: ConfigMap # the kind\nmetadata:\n  name: x # name\n  # annotations next\n  annotations:\n    a: \"b\"\ndata:\n  # a key\n  key: |\n    hello\n# trailing\n",
            r##"stream start @0,0,0..0,0,0
document start @0,0,0..0,0,0
mapping start @0,0,0..0,0,0 style=Block i
scalar @0,0,0..10,0,10 style=Plain v="apiVersion" i
scalar @12,0,12..14,0,14 style=Plain v="v1" i
scalar @15,1,0..19,1,4 style=Plain v="kind" i
scalar @21,1,6..30,1,15 style=Plain v="ConfigMap" i L="# the kind"
scalar @42,2,0..50,2,8 style=Plain v="metadata" i
mapping start @54,3,2..54,3,2 style=Block i
scalar @54,3,2..58,3,6 style=Plain v="name" i
scalar @60,3,8..61,3,9 style=Plain v="x" i L="# name"
scalar @92,5,2..103,5,13 style=Plain v="annotations" i H="# annotations next"
mapping start @109,6,4..109,6,4 style=Block i
scalar @109,6,4..110,6,5 style=Plain v="a" i
scalar @112,6,7..115,6,10 style=DoubleQuoted v="b" qi
mapping end @114,6,10..114,6,10
mapping end @114,6,10..114,6,10
scalar @116,7,0..120,7,4 style=Plain v="data" i
mapping start @134,9,2..134,9,2 style=Block i
scalar @134,9,2..137,9,5 style=Plain v="key" i H="# a key"
scalar @139,9,7..151,11,0 style=Literal v="hello\n" qi
mapping end @150,11,0..150,11,0
mapping end @151,11,1..151,11,1 F="# trailing"
document end @162,12,0..162,12,0 i
stream end @162,12,0..162,12,0
"##,
        );
    }

    #[test]
    fn errors_undefined_tag() {
        check(
            "a: !x!y z\n",
            r##"stream start @0,0,0..0,0,0
document start @0,0,0..0,0,0
mapping start @0,0,0..0,0,0 style=Block i
scalar @0,0,0..1,0,1 style=Plain v="a" i
ERROR Parser "found undefined tag handle" @3,0,3 ctx "while parsing a node" @3,0,3
"##,
        );
    }

    #[test]
    fn errors_bad_key() {
        check(
            "a: 1\n b: 2\n",
            r##"stream start @0,0,0..0,0,0
document start @0,0,0..0,0,0
mapping start @0,0,0..0,0,0 style=Block i
scalar @0,0,0..1,0,1 style=Plain v="a" i
ERROR Scanner "mapping values are not allowed in this context" @7,1,2
"##,
        );
    }

    #[test]
    fn errors_flow() {
        check(
            "[a, b\n",
            r##"stream start @0,0,0..0,0,0
document start @0,0,0..1,0,1
sequence start @0,0,0..1,0,1 style=Flow i
scalar @1,0,1..2,0,2 style=Plain v="a" i
scalar @4,0,4..5,0,5 style=Plain v="b" i
ERROR Parser "did not find expected ',' or ']'" @6,1,0 ctx "while parsing a flow sequence" @0,0,0
"##,
        );
    }

    #[test]
    fn errors_version() {
        check(
            "%YAML 2.0\n--- a\n",
            r##"stream start @0,0,0..0,0,0
ERROR Parser "found incompatible YAML document" @0,0,0
"##,
        );
    }

    #[test]
    fn errors_dup_yaml() {
        check(
            "%YAML 1.1\n%YAML 1.1\n--- a\n",
            r##"stream start @0,0,0..0,0,0
ERROR Parser "found duplicate %YAML directive" @10,1,0
"##,
        );
    }

    #[test]
    fn errors_dup_tag() {
        check(
            "%TAG !a! x\n%TAG !a! y\n--- a\n",
            r##"stream start @0,0,0..0,0,0
ERROR Parser "found duplicate %TAG directive" @11,1,0
"##,
        );
    }

    #[test]
    fn errors_no_doc_start() {
        check(
            "%YAML 1.1\na: b\n",
            r##"stream start @0,0,0..0,0,0
ERROR Scanner "mapping values are not allowed in this context" @11,1,1
"##,
        );
    }

    #[test]
    fn errors_block_seq() {
        check(
            "- a\n- b\n x\n",
            r##"stream start @0,0,0..0,0,0
document start @0,0,0..0,0,0
sequence start @0,0,0..0,0,0 style=Block i
scalar @2,0,2..3,0,3 style=Plain v="a" i
scalar @6,1,2..10,2,2 style=Plain v="b x" i
sequence end @10,3,0..10,3,0
document end @11,3,0..11,3,0 i
stream end @11,3,0..11,3,0
"##,
        );
    }

    #[test]
    fn errors_node() {
        check(
            "a: [b, }\n",
            r##"stream start @0,0,0..0,0,0
document start @0,0,0..0,0,0
mapping start @0,0,0..0,0,0 style=Block i
scalar @0,0,0..1,0,1 style=Plain v="a" i
sequence start @3,0,3..4,0,4 style=Flow i
scalar @4,0,4..5,0,5 style=Plain v="b" i
ERROR Parser "did not find expected node content" @7,0,7 ctx "while parsing a flow node" @7,0,7
"##,
        );
    }
}
