//! The YAML emitter: a function-by-function port of yaml.v3's `emitterc.go`
//! (v3.0.1, itself a port of libyaml) plus the output side of `writerc.go` and
//! `apic.go`, with the two patches of kyaml's fork (`sigs.k8s.io/yaml/goyaml.v3`):
//!
//! 1. compact sequence indentation (`Encoder.CompactSeqIndent()`): a block
//!    sequence that is the value of a mapping key is not indented past its key
//!    (`a:\n- b\n` rather than `a:\n  - b\n`);
//! 2. `yaml_emitter_process_line_comment_linebreak`: a literal or folded scalar
//!    without a line comment ends its header line with a line break of its own,
//!    so a value starting with a line break keeps it (go-yaml/yaml#755).
//!
//! Output goes straight into a `Vec<u8>`: there is no intermediate buffer and
//! no flushing. Go's boolean returns become `Result`s; functions that can only
//! fail in Go because of a full buffer return nothing.

#![allow(dead_code)]

use std::collections::VecDeque;

use super::chars::{
    is_alpha, is_ascii, is_blank, is_blankz, is_bom, is_break, is_printable, is_space, width,
};
use super::error::{ErrorKind, Fallible as Result, YamlError};
use super::token::{
    Comments, Event, EventStyle, EventType, Mark, ScalarStyle, TagDirective, VersionDirective,
};

/// The preferred line break (`yaml_break_t`; `yaml_ANY_BREAK` means `Ln`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum LineBreak {
    /// `\n` (Unix style), the default.
    #[default]
    Ln,
    /// `\r` (old Mac style).
    Cr,
    /// `\r\n` (DOS style).
    CrLn,
}

/// The emitter settings (`yaml_emitter_set_*` of `apic.go`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EmitterOptions {
    /// The indentation increment (`best_indent`); out of 2..=9 means 2.
    pub(crate) indent: usize,
    /// The preferred line width (`best_width`); negative means unlimited,
    /// which is yaml.v3's default.
    pub(crate) width: isize,
    /// Whether non-ASCII characters may be written unescaped.
    pub(crate) unicode: bool,
    /// kyaml's `CompactSeqIndent()`: `- ` counts as part of the indentation.
    pub(crate) compact_sequence_indent: bool,
    /// The line break to write.
    pub(crate) line_break: LineBreak,
    /// Whether to write canonical YAML.
    pub(crate) canonical: bool,
}

impl EmitterOptions {
    /// The settings of kyaml's encoder: `SetIndent(2)` and `CompactSeqIndent()`.
    pub(crate) fn kyaml() -> Self {
        EmitterOptions {
            indent: 2,
            width: -1,
            unicode: true,
            compact_sequence_indent: true,
            line_break: LineBreak::Ln,
            canonical: false,
        }
    }

    /// The defaults of a plain yaml.v3 `Encoder`: indent 4, unlimited width.
    pub(crate) fn yaml_v3() -> Self {
        EmitterOptions {
            indent: 4,
            width: -1,
            unicode: true,
            compact_sequence_indent: false,
            line_break: LineBreak::Ln,
            canonical: false,
        }
    }
}

/// The emitter states (`yaml_emitter_state_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EmitterState {
    /// Expect STREAM-START.
    StreamStart,
    /// Expect the first DOCUMENT-START or STREAM-END.
    FirstDocumentStart,
    /// Expect DOCUMENT-START or STREAM-END.
    DocumentStart,
    /// Expect the content of a document.
    DocumentContent,
    /// Expect DOCUMENT-END.
    DocumentEnd,
    /// Expect the first item of a flow sequence.
    FlowSequenceFirstItem,
    /// Expect the next item of a flow sequence, with the comma already written out.
    FlowSequenceTrailItem,
    /// Expect an item of a flow sequence.
    FlowSequenceItem,
    /// Expect the first key of a flow mapping.
    FlowMappingFirstKey,
    /// Expect the next key of a flow mapping, with the comma already written out.
    FlowMappingTrailKey,
    /// Expect a key of a flow mapping.
    FlowMappingKey,
    /// Expect a value for a simple key of a flow mapping.
    FlowMappingSimpleValue,
    /// Expect a value of a flow mapping.
    FlowMappingValue,
    /// Expect the first item of a block sequence.
    BlockSequenceFirstItem,
    /// Expect an item of a block sequence.
    BlockSequenceItem,
    /// Expect the first key of a block mapping.
    BlockMappingFirstKey,
    /// Expect the key of a block mapping.
    BlockMappingKey,
    /// Expect a value for a simple key of a block mapping.
    BlockMappingSimpleValue,
    /// Expect a value of a block mapping.
    BlockMappingValue,
    /// Expect nothing.
    End,
}

/// What comes after an event given to [`Emitter::emit_known`], as far as
/// the emitter looks ahead.
#[derive(Debug, Default)]
pub(crate) struct Next {
    /// The type of the next event.
    pub(crate) typ: EventType,
    /// Its line comment (only read when the next event ends an empty
    /// collection).
    pub(crate) line_comment: Vec<u8>,
}

/// Anchor analysis (`anchor_data`).
#[derive(Debug, Default)]
pub(crate) struct AnchorData {
    /// The anchor value (empty: none).
    pub(crate) anchor: Vec<u8>,
    /// Is it an alias?
    pub(crate) alias: bool,
}

/// Tag analysis (`tag_data`).
#[derive(Debug, Default)]
pub(crate) struct TagData {
    /// The tag handle.
    pub(crate) handle: Vec<u8>,
    /// The tag suffix.
    pub(crate) suffix: Vec<u8>,
}

/// Scalar analysis (`scalar_data`).
#[derive(Debug, Default)]
pub(crate) struct ScalarData {
    /// The scalar value.
    pub(crate) value: Vec<u8>,
    /// Does the scalar contain line breaks?
    pub(crate) multiline: bool,
    /// Can the scalar be expressed in the flow plain style?
    pub(crate) flow_plain_allowed: bool,
    /// Can the scalar be expressed in the block plain style?
    pub(crate) block_plain_allowed: bool,
    /// Can the scalar be expressed in the single quoted style?
    pub(crate) single_quoted_allowed: bool,
    /// Can the scalar be expressed in the literal or folded styles?
    pub(crate) block_allowed: bool,
    /// The output style; `None` when the event carried a style value that is
    /// no scalar style (Go panics with "unknown scalar style" on it).
    pub(crate) style: Option<ScalarStyle>,
}

/// The tag directives every document knows (`default_tag_directives`).
const DEFAULT_TAG_DIRECTIVES: [(&[u8], &[u8]); 2] = [(b"!", b"!"), (b"!!", b"tag:yaml.org,2002:")];

/// The width standing for "unlimited" (Go's `1<<31 - 1`).
const UNLIMITED_WIDTH: isize = 0x7FFF_FFFF;

/// Go's `yaml_FLOW_SEQUENCE_STYLE` (also `yaml_FLOW_MAPPING_STYLE` and
/// `yaml_PLAIN_SCALAR_STYLE`: Go compares the raw style number).
const GO_FLOW_STYLE: i8 = 2;

/// The raw `yaml_style_t` number Go stores for a style (scalar styles are the
/// bit flags 2, 4, 8, 16, 32; collection styles are 1 = block, 2 = flow).
fn go_style(style: EventStyle) -> i8 {
    match style {
        EventStyle::None => 0,
        EventStyle::Scalar(s) => match s {
            ScalarStyle::Any => 0,
            ScalarStyle::Plain => 2,
            ScalarStyle::SingleQuoted => 4,
            ScalarStyle::DoubleQuoted => 8,
            ScalarStyle::Literal => 16,
            ScalarStyle::Folded => 32,
        },
        EventStyle::Sequence(s) => match s {
            super::token::SequenceStyle::Any => 0,
            super::token::SequenceStyle::Block => 1,
            super::token::SequenceStyle::Flow => 2,
        },
        EventStyle::Mapping(s) => match s {
            super::token::MappingStyle::Any => 0,
            super::token::MappingStyle::Block => 1,
            super::token::MappingStyle::Flow => 2,
        },
    }
}

/// `event.scalar_style()`: the raw style read as a scalar style (`None` when
/// the number is no scalar style).
fn go_scalar_style(event: &Event) -> Option<ScalarStyle> {
    match go_style(event.style) {
        0 => Some(ScalarStyle::Any),
        2 => Some(ScalarStyle::Plain),
        4 => Some(ScalarStyle::SingleQuoted),
        8 => Some(ScalarStyle::DoubleQuoted),
        16 => Some(ScalarStyle::Literal),
        32 => Some(ScalarStyle::Folded),
        _ => None,
    }
}

/// `yaml_emitter_set_emitter_error`: an emitter error with yaml.v3's wording.
#[cold]
fn emitter_error(problem: impl Into<String>) -> Box<YamlError> {
    Box::new(YamlError::new(ErrorKind::Emitter, problem, Mark::default()))
}

/// The error replacing Go's `panic("unknown character width")` (and the
/// index-out-of-range panics or endless loops of invalid UTF-8).
fn width_error() -> Box<YamlError> {
    emitter_error("unknown character width")
}

/// The emitter (`yaml_emitter_t`), writing into an in-memory buffer.
#[derive(Debug)]
pub(crate) struct Emitter {
    /// The output written so far (`output_buffer`).
    pub(crate) output: Vec<u8>,

    /// Is the output in the canonical style?
    pub(crate) canonical: bool,
    /// The number of indentation spaces.
    pub(crate) best_indent: isize,
    /// The preferred width of the output lines.
    pub(crate) best_width: isize,
    /// Allow unescaped non-ASCII characters?
    pub(crate) unicode: bool,
    /// The preferred line break.
    pub(crate) line_break: LineBreak,
    /// kyaml: is `- ` part of the indentation of sequence items?
    pub(crate) compact_sequence_indent: bool,

    /// The current emitter state.
    pub(crate) state: EmitterState,
    /// The stack of states.
    pub(crate) states: Vec<EmitterState>,

    /// The event queue (Go's `events[events_head:]`).
    pub(crate) events: VecDeque<Event>,
    /// For an event emitted with [`Emitter::emit_known`]: what the caller
    /// says of the event after it, which the queue would otherwise hold.
    next: Option<Next>,
    /// The line comment of the next event was taken (for an empty
    /// collection written as a key) while that event was not yet emitted:
    /// it is dropped from that event when it comes.
    next_line_comment_taken: bool,

    /// The stack of indentation levels.
    pub(crate) indents: Vec<isize>,

    /// The list of tag directives.
    pub(crate) tag_directives: Vec<TagDirective>,

    /// The current indentation level.
    pub(crate) indent: isize,

    /// The current flow level.
    pub(crate) flow_level: isize,

    /// Is it the document root context?
    pub(crate) root_context: bool,
    /// Is it a sequence context?
    pub(crate) sequence_context: bool,
    /// Is it a mapping context?
    pub(crate) mapping_context: bool,
    /// Is it a simple mapping key context?
    pub(crate) simple_key_context: bool,

    /// The current line.
    pub(crate) line: isize,
    /// The current column.
    pub(crate) column: isize,
    /// If the last character was a whitespace?
    pub(crate) whitespace: bool,
    /// If the last character was an indentation character (' ', '-', '?', ':')?
    pub(crate) indention: bool,
    /// If an explicit document end is required? (yaml.v3's encoder clears it
    /// before STREAM-END.)
    pub(crate) open_ended: bool,

    /// Is there's an empty line above?
    pub(crate) space_above: bool,
    /// The indent used to write the foot comment above, or -1 if none.
    pub(crate) foot_indent: isize,

    /// Anchor analysis.
    pub(crate) anchor_data: AnchorData,
    /// Tag analysis.
    pub(crate) tag_data: TagData,
    /// Scalar analysis.
    pub(crate) scalar_data: ScalarData,

    /// The head comment to write.
    pub(crate) head_comment: Vec<u8>,
    /// The line comment to write.
    pub(crate) line_comment: Vec<u8>,
    /// The foot comment to write.
    pub(crate) foot_comment: Vec<u8>,
    /// The tail comment to write.
    pub(crate) tail_comment: Vec<u8>,

    /// A line comment given with a mapping key.
    pub(crate) key_line_comment: Vec<u8>,
    /// The line comment of an empty flow collection that is a simple key
    /// inside a flow mapping, written after the value (not in Go).
    pub(crate) flow_key_line_comment: Vec<u8>,
    /// Scalar buffers done with, for the next events to reuse.
    spare: Vec<Vec<u8>>,
}

impl Emitter {
    /// `yaml_emitter_initialize` plus the `yaml_emitter_set_*` calls of the options.
    pub(crate) fn new(options: EmitterOptions) -> Self {
        Emitter {
            output: Vec::new(),
            canonical: options.canonical,
            best_indent: isize::try_from(options.indent).unwrap_or(isize::MAX),
            best_width: if options.width < 0 { -1 } else { options.width },
            unicode: options.unicode,
            line_break: options.line_break,
            compact_sequence_indent: options.compact_sequence_indent,
            state: EmitterState::StreamStart,
            states: Vec::with_capacity(16),
            events: VecDeque::with_capacity(16),
            next: None,
            next_line_comment_taken: false,
            indents: Vec::with_capacity(16),
            tag_directives: Vec::new(),
            indent: 0,
            flow_level: 0,
            root_context: false,
            sequence_context: false,
            mapping_context: false,
            simple_key_context: false,
            line: 0,
            column: 0,
            whitespace: false,
            indention: false,
            open_ended: false,
            space_above: false,
            foot_indent: 0,
            anchor_data: AnchorData::default(),
            tag_data: TagData::default(),
            scalar_data: ScalarData::default(),
            head_comment: Vec::new(),
            line_comment: Vec::new(),
            foot_comment: Vec::new(),
            tail_comment: Vec::new(),
            key_line_comment: Vec::new(),
            flow_key_line_comment: Vec::new(),
            spare: Vec::new(),
        }
    }

    /// The output written so far (`output_buffer`).
    pub(crate) fn output(&self) -> &[u8] {
        &self.output
    }

    /// The output, consuming the emitter.
    pub(crate) fn into_output(self) -> Vec<u8> {
        self.output
    }

    // ----- Output primitives -------------------------------------------------

    /// `put`: put a character to the output buffer.
    #[inline]
    fn put(&mut self, value: u8) {
        self.output.push(value);
        self.column += 1;
    }

    /// `put_break`: put a line break to the output buffer.
    fn put_break(&mut self) {
        match self.line_break {
            LineBreak::Cr => self.output.push(b'\r'),
            LineBreak::Ln => self.output.push(b'\n'),
            LineBreak::CrLn => self.output.extend_from_slice(b"\r\n"),
        }
        if self.column == 0 {
            self.space_above = true;
        }
        self.column = 0;
        self.line += 1;
        // [Go] Do this here and below and drop from everywhere else (see commented lines).
        self.indention = true;
    }

    /// `write`: copy a character from a string into the buffer.
    #[inline]
    fn write(&mut self, s: &[u8], i: &mut usize) -> Result<()> {
        let Some(&c) = s.get(*i) else {
            return Err(width_error());
        };
        if c < 0x80 {
            self.output.push(c);
            self.column += 1;
            *i += 1;
            return Ok(());
        }
        let w = width(c);
        if w == 0 || *i + w > s.len() {
            return Err(width_error());
        }
        self.output.extend_from_slice(&s[*i..*i + w]);
        self.column += 1;
        *i += w;
        Ok(())
    }

    /// `write_all`: write a whole string into the buffer.
    fn write_all(&mut self, s: &[u8]) -> Result<()> {
        let mut i = 0;
        while i < s.len() {
            self.write(s, &mut i)?;
        }
        Ok(())
    }

    /// `write_break`: copy a line break character from a string into the buffer.
    fn write_break(&mut self, s: &[u8], i: &mut usize) -> Result<()> {
        if s.get(*i) == Some(&b'\n') {
            self.put_break();
            *i += 1;
        } else {
            self.write(s, i)?;
            if self.column == 0 {
                self.space_above = true;
            }
            self.column = 0;
            self.line += 1;
            // [Go] Do this here and above and drop from everywhere else (see commented lines).
            self.indention = true;
        }
        Ok(())
    }

    /// Copies the run of bytes of `s` from `*i` on that `keep` accepts (which
    /// must accept only ASCII characters other than line breaks), one column
    /// each: the same as calling `write` on each of them, only faster.
    #[inline]
    fn write_ascii_run(&mut self, s: &[u8], i: &mut usize, keep: impl Fn(u8) -> bool) {
        let start = *i;
        let run = s[start..].iter().take_while(|&&c| keep(c)).count();
        if run > 0 {
            self.output.extend_from_slice(&s[start..start + run]);
            self.column += run as isize;
            *i += run;
        }
    }

    // ----- Event queue and state machine ------------------------------------

    /// `yaml_emitter_emit` for a caller that knows the events to come (the
    /// encoder, which has the whole node): the event is written at once,
    /// without going through the queue, and `next` answers the emitter's
    /// look-ahead (whether a collection is empty, and the line comment of
    /// its end). The output is the same as from [`Emitter::emit`] of the
    /// same events.
    pub(crate) fn emit_known(&mut self, mut event: Event, next: Next) -> Result<()> {
        if !self.events.is_empty() {
            // Events given without look-ahead wait in the queue: this one
            // must wait behind them.
            return self.emit(event);
        }
        self.drop_taken_line_comment(&mut event);
        self.next = Some(next);
        let result = self
            .analyze_event(&mut event)
            .and_then(|()| self.state_machine(&event));
        self.next = None;
        result
    }

    /// Drops the line comment of `event` when it was taken for the event
    /// before it (see [`Emitter::take_next_line_comment`]).
    fn drop_taken_line_comment(&mut self, event: &mut Event) {
        if std::mem::take(&mut self.next_line_comment_taken) {
            if let Some(c) = event.comments.as_mut() {
                c.line.clear();
            }
        }
    }

    /// `yaml_emitter_emit`: queue an event and emit what the queue allows.
    pub(crate) fn emit(&mut self, mut event: Event) -> Result<()> {
        self.drop_taken_line_comment(&mut event);
        if self.events.is_empty()
            && !matches!(
                event.typ,
                EventType::DocumentStart | EventType::SequenceStart | EventType::MappingStart
            )
        {
            // Shortcut: Go would queue the event and take it out at once, as
            // it needs no look-ahead.
            self.analyze_event(&mut event)?;
            return self.state_machine(&event);
        }
        self.events.push_back(event);
        while !self.need_more_events() {
            // The event at the head is taken out of the queue while it is
            // processed; `self.events.front()` is then Go's `events[head+1]`.
            let Some(mut event) = self.events.pop_front() else {
                break;
            };
            self.analyze_event(&mut event)?;
            self.state_machine(&event)?;
        }
        Ok(())
    }

    /// `yaml_emitter_need_more_events`: whether to accumulate more events
    /// before emitting (1 extra for DOCUMENT-START, 2 for SEQUENCE-START, 3 for
    /// MAPPING-START).
    fn need_more_events(&self) -> bool {
        let Some(head) = self.events.front() else {
            return true;
        };
        let accumulate = match head.typ {
            EventType::DocumentStart => 1,
            EventType::SequenceStart => 2,
            EventType::MappingStart => 3,
            _ => return false,
        };
        if self.events.len() > accumulate {
            return false;
        }
        let mut level = 0isize;
        for event in &self.events {
            match event.typ {
                EventType::StreamStart
                | EventType::DocumentStart
                | EventType::SequenceStart
                | EventType::MappingStart => level += 1,
                EventType::StreamEnd
                | EventType::DocumentEnd
                | EventType::SequenceEnd
                | EventType::MappingEnd => level -= 1,
                _ => {}
            }
            if level == 0 {
                return false;
            }
        }
        true
    }

    /// `yaml_emitter_append_tag_directive`: append a directive to the directives stack.
    fn append_tag_directive(
        &mut self,
        handle: &[u8],
        prefix: &[u8],
        allow_duplicates: bool,
    ) -> Result<()> {
        if self.tag_directives.iter().any(|td| td.handle == handle) {
            if allow_duplicates {
                return Ok(());
            }
            return Err(emitter_error("duplicate %TAG directive"));
        }
        self.tag_directives.push(TagDirective {
            handle: handle.to_vec(),
            prefix: prefix.to_vec(),
        });
        Ok(())
    }

    /// `yaml_emitter_increase_indent_compact` (kyaml's fork; Go's
    /// `yaml_emitter_increase_indent` is this with `compact_seq == false`).
    fn increase_indent(&mut self, flow: bool, indentless: bool, compact_seq: bool) {
        self.indents.push(self.indent);
        if self.indent < 0 {
            self.indent = if flow { self.best_indent } else { 0 };
        } else if !indentless {
            // [Go] This was changed so that indentations are more regular.
            if self.states.last() == Some(&EmitterState::BlockSequenceItem) {
                // The first indent inside a sequence will just skip the "- " indicator.
                self.indent += 2;
            } else {
                // Everything else aligns to the chosen indentation.
                self.indent =
                    self.best_indent * ((self.indent + self.best_indent) / self.best_indent);
                if compact_seq {
                    // Subtract 2 to account for the "- " at the beginning of the sequence node.
                    // (sigs.k8s.io/yaml's copy also subtracts in the branch above, which
                    // makes no difference: `compact_seq` needs a mapping context, so the
                    // state on top is then a mapping state.)
                    self.indent -= 2;
                }
            }
        }
    }

    /// Pops the indentation stack (Go: `indent = indents[len-1]; indents = indents[:len-1]`).
    fn pop_indent(&mut self) -> Result<()> {
        match self.indents.pop() {
            Some(indent) => {
                self.indent = indent;
                Ok(())
            }
            None => Err(emitter_error("unbalanced indentation stack")),
        }
    }

    /// Pops the state stack (Go: `state = states[len-1]; states = states[:len-1]`).
    fn pop_state(&mut self) -> Result<()> {
        match self.states.pop() {
            Some(state) => {
                self.state = state;
                Ok(())
            }
            None => Err(emitter_error("unbalanced emitter state stack")),
        }
    }

    /// `yaml_emitter_state_machine`: the state dispatcher.
    fn state_machine(&mut self, event: &Event) -> Result<()> {
        match self.state {
            EmitterState::StreamStart => self.emit_stream_start(event),
            EmitterState::FirstDocumentStart => self.emit_document_start(event, true),
            EmitterState::DocumentStart => self.emit_document_start(event, false),
            EmitterState::DocumentContent => self.emit_document_content(event),
            EmitterState::DocumentEnd => self.emit_document_end(event),
            EmitterState::FlowSequenceFirstItem => self.emit_flow_sequence_item(event, true, false),
            EmitterState::FlowSequenceTrailItem => self.emit_flow_sequence_item(event, false, true),
            EmitterState::FlowSequenceItem => self.emit_flow_sequence_item(event, false, false),
            EmitterState::FlowMappingFirstKey => self.emit_flow_mapping_key(event, true, false),
            EmitterState::FlowMappingTrailKey => self.emit_flow_mapping_key(event, false, true),
            EmitterState::FlowMappingKey => self.emit_flow_mapping_key(event, false, false),
            EmitterState::FlowMappingSimpleValue => self.emit_flow_mapping_value(event, true),
            EmitterState::FlowMappingValue => self.emit_flow_mapping_value(event, false),
            EmitterState::BlockSequenceFirstItem => self.emit_block_sequence_item(event, true),
            EmitterState::BlockSequenceItem => self.emit_block_sequence_item(event, false),
            EmitterState::BlockMappingFirstKey => self.emit_block_mapping_key(event, true),
            EmitterState::BlockMappingKey => self.emit_block_mapping_key(event, false),
            EmitterState::BlockMappingSimpleValue => self.emit_block_mapping_value(event, true),
            EmitterState::BlockMappingValue => self.emit_block_mapping_value(event, false),
            EmitterState::End => Err(emitter_error("expected nothing after STREAM-END")),
        }
    }

    /// `yaml_emitter_emit_stream_start`: expect STREAM-START.
    fn emit_stream_start(&mut self, event: &Event) -> Result<()> {
        if event.typ != EventType::StreamStart {
            return Err(emitter_error("expected STREAM-START"));
        }
        // The encoding is always UTF-8, so no BOM is ever written.
        if self.best_indent < 2 || self.best_indent > 9 {
            self.best_indent = 2;
        }
        if self.best_width >= 0 && self.best_width <= self.best_indent * 2 {
            self.best_width = 80;
        }
        if self.best_width < 0 {
            self.best_width = UNLIMITED_WIDTH;
        }

        self.indent = -1;
        self.line = 0;
        self.column = 0;
        self.whitespace = true;
        self.indention = true;
        self.space_above = true;
        self.foot_indent = -1;

        self.state = EmitterState::FirstDocumentStart;
        Ok(())
    }

    /// `yaml_emitter_emit_document_start`: expect DOCUMENT-START or STREAM-END.
    fn emit_document_start(&mut self, event: &Event, first: bool) -> Result<()> {
        if event.typ == EventType::DocumentStart {
            if let Some(version_directive) = &event.version_directive() {
                self.analyze_version_directive(version_directive)?;
            }

            for tag_directive in event.tag_directives() {
                self.analyze_tag_directive(tag_directive)?;
                self.append_tag_directive(&tag_directive.handle, &tag_directive.prefix, false)?;
            }

            for (handle, prefix) in DEFAULT_TAG_DIRECTIVES {
                self.append_tag_directive(handle, prefix, true)?;
            }

            let mut implicit = event.implicit;
            if !first || self.canonical {
                implicit = false;
            }

            if self.open_ended
                && (event.version_directive().is_some() || !event.tag_directives().is_empty())
            {
                self.write_indicator(b"...", true, false, false);
                self.write_indent();
            }

            if event.version_directive().is_some() {
                implicit = false;
                self.write_indicator(b"%YAML", true, false, false);
                self.write_indicator(b"1.1", true, false, false);
                self.write_indent();
            }

            if !event.tag_directives().is_empty() {
                implicit = false;
                for tag_directive in event.tag_directives() {
                    self.write_indicator(b"%TAG", true, false, false);
                    self.write_tag_handle(&tag_directive.handle)?;
                    self.write_tag_content(&tag_directive.prefix, true)?;
                    self.write_indent();
                }
            }

            if self.check_empty_document() {
                implicit = false;
            }
            if !implicit {
                self.write_indent();
                self.write_indicator(b"---", true, false, false);
                // Go: `if emitter.canonical || true`.
                self.write_indent();
            }

            if !self.head_comment.is_empty() {
                self.process_head_comment()?;
                self.put_break();
            }

            self.state = EmitterState::DocumentContent;
            return Ok(());
        }

        if event.typ == EventType::StreamEnd {
            if self.open_ended {
                self.write_indicator(b"...", true, false, false);
                self.write_indent();
            }
            self.state = EmitterState::End;
            return Ok(());
        }

        Err(emitter_error("expected DOCUMENT-START or STREAM-END"))
    }

    /// `yaml_emitter_emit_document_content`: expect the root node.
    fn emit_document_content(&mut self, event: &Event) -> Result<()> {
        self.states.push(EmitterState::DocumentEnd);
        self.process_head_comment()?;
        self.emit_node(event, true, false, false, false)?;
        self.process_line_comment(false)?;
        self.process_foot_comment()?;
        Ok(())
    }

    /// `yaml_emitter_emit_document_end`: expect DOCUMENT-END.
    fn emit_document_end(&mut self, event: &Event) -> Result<()> {
        if event.typ != EventType::DocumentEnd {
            return Err(emitter_error("expected DOCUMENT-END"));
        }
        // [Go] Force document foot separation.
        self.foot_indent = 0;
        self.process_foot_comment()?;
        self.foot_indent = -1;
        self.write_indent();
        if !event.implicit {
            // [Go] Allocate the slice elsewhere.
            self.write_indicator(b"...", true, false, false);
            self.write_indent();
        }
        self.state = EmitterState::DocumentStart;
        self.tag_directives.clear();
        Ok(())
    }

    /// `yaml_emitter_emit_flow_sequence_item`: expect a flow item node.
    fn emit_flow_sequence_item(&mut self, event: &Event, first: bool, trail: bool) -> Result<()> {
        if first {
            self.write_indicator(b"[", true, true, false);
            self.increase_indent(true, false, false);
            self.flow_level += 1;
        }

        if event.typ == EventType::SequenceEnd {
            if self.canonical && !first && !trail {
                self.write_indicator(b",", false, false, false);
            }
            self.flow_level -= 1;
            self.pop_indent()?;
            if self.column == 0 || self.canonical && !first {
                self.write_indent();
            }
            self.write_indicator(b"]", false, false, false);
            self.process_line_comment(false)?;
            self.process_foot_comment()?;
            self.pop_state()?;
            return Ok(());
        }

        if !first && !trail {
            self.write_indicator(b",", false, false, false);
        }

        self.process_head_comment()?;
        if self.column == 0 {
            self.write_indent();
        }

        if self.canonical || self.column > self.best_width {
            self.write_indent();
        }
        if self.line_comment.len() + self.foot_comment.len() + self.tail_comment.len() > 0 {
            self.states.push(EmitterState::FlowSequenceTrailItem);
        } else {
            self.states.push(EmitterState::FlowSequenceItem);
        }
        self.emit_node(event, false, true, false, false)?;
        if self.line_comment.len() + self.foot_comment.len() + self.tail_comment.len() > 0 {
            self.write_indicator(b",", false, false, false);
        }
        self.process_line_comment(false)?;
        self.process_foot_comment()?;
        Ok(())
    }

    /// The line comment of the next queued event, taken out of it: for an
    /// empty collection about to be written, the comment of its end event.
    fn take_next_line_comment(&mut self) -> Vec<u8> {
        if let Some(next) = self.next.as_mut() {
            self.next_line_comment_taken = true;
            return std::mem::take(&mut next.line_comment);
        }
        self.events
            .front_mut()
            .and_then(|end| end.comments.as_mut())
            .map(|c| std::mem::take(&mut c.line))
            .unwrap_or_default()
    }

    /// `yaml_emitter_emit_flow_mapping_key`: expect a flow key node.
    fn emit_flow_mapping_key(&mut self, event: &Event, first: bool, trail: bool) -> Result<()> {
        if first {
            self.write_indicator(b"{", true, true, false);
            self.increase_indent(true, false, false);
            self.flow_level += 1;
        }

        if event.typ == EventType::MappingEnd {
            if (self.canonical
                || self.head_comment.len() + self.foot_comment.len() + self.tail_comment.len() > 0)
                && !first
                && !trail
            {
                self.write_indicator(b",", false, false, false);
            }
            self.process_head_comment()?;
            self.flow_level -= 1;
            self.pop_indent()?;
            if self.canonical && !first {
                self.write_indent();
            }
            self.write_indicator(b"}", false, false, false);
            self.process_line_comment(false)?;
            self.process_foot_comment()?;
            self.pop_state()?;
            return Ok(());
        }

        if !first && !trail {
            self.write_indicator(b",", false, false, false);
        }

        self.process_head_comment()?;

        if self.column == 0 {
            self.write_indent();
        }

        if self.canonical || self.column > self.best_width {
            self.write_indent();
        }

        if !self.canonical && self.check_simple_key(event) {
            if event.typ != EventType::Scalar {
                // An empty flow collection as a simple key: as in a block
                // mapping (`emit_block_mapping_key`), Go would write its
                // line comment and a line break before the `:`, which
                // then no longer makes a key.
                self.flow_key_line_comment = self.take_next_line_comment();
            }
            self.states.push(EmitterState::FlowMappingSimpleValue);
            return self.emit_node(event, false, false, true, true);
        }
        self.write_indicator(b"?", true, false, false);
        self.states.push(EmitterState::FlowMappingValue);
        self.emit_node(event, false, false, true, false)
    }

    /// `yaml_emitter_emit_flow_mapping_value`: expect a flow value node.
    fn emit_flow_mapping_value(&mut self, event: &Event, simple: bool) -> Result<()> {
        let key_comment = std::mem::take(&mut self.flow_key_line_comment);
        if matches!(event.typ, EventType::Scalar | EventType::Alias) && self.line_comment.is_empty()
        {
            // The key's comment goes after the value, as a value's own
            // comment does (`{{}: v, # c` then `}`). Before a collection
            // value, or when the value has a comment of its own, there is
            // no place for it: it is dropped.
            self.line_comment = key_comment;
        }
        if simple {
            self.write_indicator(b":", false, false, false);
        } else {
            if self.canonical || self.column > self.best_width {
                self.write_indent();
            }
            self.write_indicator(b":", true, false, false);
        }
        if self.line_comment.len() + self.foot_comment.len() + self.tail_comment.len() > 0 {
            self.states.push(EmitterState::FlowMappingTrailKey);
        } else {
            self.states.push(EmitterState::FlowMappingKey);
        }
        self.emit_node(event, false, false, true, false)?;
        if self.line_comment.len() + self.foot_comment.len() + self.tail_comment.len() > 0 {
            self.write_indicator(b",", false, false, false);
        }
        self.process_line_comment(false)?;
        self.process_foot_comment()?;
        Ok(())
    }

    /// `yaml_emitter_emit_block_sequence_item`: expect a block item node
    /// (with kyaml's compact sequence indentation).
    fn emit_block_sequence_item(&mut self, event: &Event, first: bool) -> Result<()> {
        if first {
            // kyaml: in a mapping context, when at the start of a line or after
            // something that is not an indentation character, and `- ` counts
            // as indentation, the sequence is not indented past its key.
            let seq = self.mapping_context
                && (self.column == 0 || !self.indention)
                && self.compact_sequence_indent;
            self.increase_indent(false, false, seq);
        }
        if event.typ == EventType::SequenceEnd {
            self.pop_indent()?;
            self.pop_state()?;
            return Ok(());
        }
        self.process_head_comment()?;
        self.write_indent();
        self.write_indicator(b"-", true, false, true);
        self.states.push(EmitterState::BlockSequenceItem);
        self.emit_node(event, false, true, false, false)?;
        self.process_line_comment(false)?;
        self.process_foot_comment()?;
        Ok(())
    }

    /// `yaml_emitter_emit_block_mapping_key`: expect a block key node.
    fn emit_block_mapping_key(&mut self, event: &Event, first: bool) -> Result<()> {
        if first {
            self.increase_indent(false, false, false);
        }
        self.process_head_comment()?;
        if event.typ == EventType::MappingEnd {
            self.pop_indent()?;
            self.pop_state()?;
            return Ok(());
        }
        self.write_indent();
        if !self.line_comment.is_empty() {
            // [Go] A line comment was provided for the key. That's unusual as the
            //      scanner associates line comments with the value. Either way,
            //      save the line comment and render it appropriately later.
            self.key_line_comment = std::mem::take(&mut self.line_comment);
        }
        if self.check_simple_key(event) {
            if matches!(
                event.typ,
                EventType::MappingStart | EventType::SequenceStart
            ) {
                // An empty flow collection as a simple key (`{}: v`): Go
                // writes its line comment right after the `}`, with the
                // line break, and the `:` on the next line no longer makes
                // a key (`{} # c` then `:`). Treat it as a scalar key's
                // comment; when a key comment is already pending (Go keeps
                // one that a flow value left unwritten), there is no place
                // for it, and it is dropped.
                let comment = self.take_next_line_comment();
                if self.key_line_comment.is_empty() {
                    self.key_line_comment = comment;
                }
            }
            self.states.push(EmitterState::BlockMappingSimpleValue);
            return self.emit_node(event, false, false, true, true);
        }
        self.write_indicator(b"?", true, false, true);
        self.states.push(EmitterState::BlockMappingValue);
        self.emit_node(event, false, false, true, false)
    }

    /// `yaml_emitter_emit_block_mapping_value`: expect a block value node.
    fn emit_block_mapping_value(&mut self, event: &Event, simple: bool) -> Result<()> {
        if simple {
            self.write_indicator(b":", false, false, false);
        } else {
            self.write_indent();
            self.write_indicator(b":", true, false, true);
        }
        if !self.key_line_comment.is_empty() {
            // [Go] Line comments are generally associated with the value, but when there's
            //      no value on the same line as a mapping key they end up attached to the
            //      key itself.
            if event.typ == EventType::Scalar {
                if self.line_comment.is_empty() {
                    // A scalar is coming and it has no line comments by itself yet,
                    // so just let it handle the line comment as usual. If it has a
                    // line comment, we can't have both so the one from the key is lost.
                    self.line_comment = std::mem::take(&mut self.key_line_comment);
                }
            } else if go_style(event.style) != GO_FLOW_STYLE
                && (event.typ == EventType::MappingStart || event.typ == EventType::SequenceStart)
            {
                // Go compares `event.sequence_style()` (the raw style number)
                // with the flow sequence style, also for mappings.
                // An indented block follows, so write the comment right now.
                //
                // Unlike Go, write the collection's anchor and tag first: Go
                // writes them after the comment's line break, at the key's
                // column, which does not parse (`b: # c\n&x\n  d: e`). This
                // is the only place where our output differs from yaml.v3's,
                // and only where yaml.v3's is not YAML.
                self.process_anchor()?;
                self.process_tag()?;
                self.anchor_data.anchor.clear();
                self.tag_data.handle.clear();
                self.tag_data.suffix.clear();
                std::mem::swap(&mut self.line_comment, &mut self.key_line_comment);
                self.process_line_comment(false)?;
                std::mem::swap(&mut self.line_comment, &mut self.key_line_comment);
            }
        }
        self.states.push(EmitterState::BlockMappingKey);
        self.emit_node(event, false, false, true, false)?;
        self.process_line_comment(false)?;
        self.process_foot_comment()?;
        Ok(())
    }

    /// `yaml_emitter_emit_node`: expect a node.
    fn emit_node(
        &mut self,
        event: &Event,
        root: bool,
        sequence: bool,
        mapping: bool,
        simple_key: bool,
    ) -> Result<()> {
        self.root_context = root;
        self.sequence_context = sequence;
        self.mapping_context = mapping;
        self.simple_key_context = simple_key;

        match event.typ {
            EventType::Alias => self.emit_alias(event),
            EventType::Scalar => self.emit_scalar(event),
            EventType::SequenceStart => self.emit_sequence_start(event),
            EventType::MappingStart => self.emit_mapping_start(event),
            typ => Err(emitter_error(format!(
                "expected SCALAR, SEQUENCE-START, MAPPING-START, or ALIAS, but got {}",
                typ.as_str()
            ))),
        }
    }

    /// `yaml_emitter_emit_alias`: expect ALIAS.
    fn emit_alias(&mut self, _event: &Event) -> Result<()> {
        self.process_anchor()?;
        self.pop_state()
    }

    /// `yaml_emitter_emit_scalar`: expect SCALAR.
    fn emit_scalar(&mut self, event: &Event) -> Result<()> {
        self.select_scalar_style(event)?;
        self.process_anchor()?;
        self.process_tag()?;
        self.increase_indent(true, false, false);
        self.process_scalar()?;
        self.pop_indent()?;
        self.pop_state()
    }

    /// `yaml_emitter_emit_sequence_start`: expect SEQUENCE-START.
    fn emit_sequence_start(&mut self, event: &Event) -> Result<()> {
        self.process_anchor()?;
        self.process_tag()?;
        if self.flow_level > 0
            || self.canonical
            || go_style(event.style) == GO_FLOW_STYLE
            || self.check_empty_sequence(event)
        {
            self.state = EmitterState::FlowSequenceFirstItem;
        } else {
            self.state = EmitterState::BlockSequenceFirstItem;
        }
        Ok(())
    }

    /// `yaml_emitter_emit_mapping_start`: expect MAPPING-START.
    fn emit_mapping_start(&mut self, event: &Event) -> Result<()> {
        self.process_anchor()?;
        self.process_tag()?;
        if self.flow_level > 0
            || self.canonical
            || go_style(event.style) == GO_FLOW_STYLE
            || self.check_empty_mapping(event)
        {
            self.state = EmitterState::FlowMappingFirstKey;
        } else {
            self.state = EmitterState::BlockMappingFirstKey;
        }
        Ok(())
    }

    /// `yaml_emitter_check_empty_document`: always false in yaml.v3.
    fn check_empty_document(&self) -> bool {
        false // [Go] Huh?
    }

    /// `yaml_emitter_check_empty_sequence`: whether the head event and the
    /// next one are SEQUENCE-START, SEQUENCE-END (`event` is the head event).
    fn check_empty_sequence(&self, event: &Event) -> bool {
        event.typ == EventType::SequenceStart && self.next_type() == Some(EventType::SequenceEnd)
    }

    /// The type of the event after the head event, if known yet.
    fn next_type(&self) -> Option<EventType> {
        match &self.next {
            Some(next) => Some(next.typ),
            None => self.events.front().map(|e| e.typ),
        }
    }

    /// `yaml_emitter_check_empty_mapping`: whether the head event and the
    /// next one are MAPPING-START, MAPPING-END (`event` is the head event).
    fn check_empty_mapping(&self, event: &Event) -> bool {
        event.typ == EventType::MappingStart && self.next_type() == Some(EventType::MappingEnd)
    }

    /// `yaml_emitter_check_simple_key`: whether the head node (`event`) can be
    /// expressed as a simple key.
    fn check_simple_key(&self, event: &Event) -> bool {
        let length = match event.typ {
            EventType::Alias => self.anchor_data.anchor.len(),
            EventType::Scalar => {
                if self.scalar_data.multiline {
                    return false;
                }
                self.anchor_data.anchor.len()
                    + self.tag_data.handle.len()
                    + self.tag_data.suffix.len()
                    + self.scalar_data.value.len()
            }
            EventType::SequenceStart => {
                if !self.check_empty_sequence(event) {
                    return false;
                }
                self.anchor_data.anchor.len()
                    + self.tag_data.handle.len()
                    + self.tag_data.suffix.len()
            }
            EventType::MappingStart => {
                if !self.check_empty_mapping(event) {
                    return false;
                }
                self.anchor_data.anchor.len()
                    + self.tag_data.handle.len()
                    + self.tag_data.suffix.len()
            }
            _ => return false,
        };
        length <= 128
    }

    /// `yaml_emitter_select_scalar_style`: determine an acceptable scalar style.
    fn select_scalar_style(&mut self, event: &Event) -> Result<()> {
        let no_tag = self.tag_data.handle.is_empty() && self.tag_data.suffix.is_empty();
        if no_tag && !event.implicit && !event.quoted_implicit {
            return Err(emitter_error(
                "neither tag nor implicit flags are specified",
            ));
        }

        let mut style = go_scalar_style(event);
        if style == Some(ScalarStyle::Any) {
            style = Some(ScalarStyle::Plain);
        }
        if self.canonical {
            style = Some(ScalarStyle::DoubleQuoted);
        }
        if self.simple_key_context && self.scalar_data.multiline {
            style = Some(ScalarStyle::DoubleQuoted);
        }

        if style == Some(ScalarStyle::Plain) {
            if self.flow_level > 0 && !self.scalar_data.flow_plain_allowed
                || self.flow_level == 0 && !self.scalar_data.block_plain_allowed
            {
                style = Some(ScalarStyle::SingleQuoted);
            }
            if self.scalar_data.value.is_empty() && (self.flow_level > 0 || self.simple_key_context)
            {
                style = Some(ScalarStyle::SingleQuoted);
            }
            if no_tag && !event.implicit {
                style = Some(ScalarStyle::SingleQuoted);
            }
        }
        if style == Some(ScalarStyle::SingleQuoted) && !self.scalar_data.single_quoted_allowed {
            style = Some(ScalarStyle::DoubleQuoted);
        }
        if (style == Some(ScalarStyle::Literal) || style == Some(ScalarStyle::Folded))
            && (!self.scalar_data.block_allowed || self.flow_level > 0 || self.simple_key_context)
        {
            style = Some(ScalarStyle::DoubleQuoted);
        }

        if no_tag && !event.quoted_implicit && style != Some(ScalarStyle::Plain) {
            self.tag_data.handle.clear();
            self.tag_data.handle.push(b'!');
        }
        self.scalar_data.style = style;
        Ok(())
    }

    /// `yaml_emitter_process_anchor`: write an anchor.
    fn process_anchor(&mut self) -> Result<()> {
        if self.anchor_data.anchor.is_empty() {
            return Ok(());
        }
        let c: &[u8] = if self.anchor_data.alias { b"*" } else { b"&" };
        self.write_indicator(c, true, false, false);
        let anchor = std::mem::take(&mut self.anchor_data.anchor);
        let result = self.write_anchor(&anchor);
        self.anchor_data.anchor = anchor;
        result
    }

    /// `yaml_emitter_process_tag`: write a tag.
    fn process_tag(&mut self) -> Result<()> {
        if self.tag_data.handle.is_empty() && self.tag_data.suffix.is_empty() {
            return Ok(());
        }
        let handle = std::mem::take(&mut self.tag_data.handle);
        let suffix = std::mem::take(&mut self.tag_data.suffix);
        let result = self.write_tag(&handle, &suffix);
        self.tag_data.handle = handle;
        self.tag_data.suffix = suffix;
        result
    }

    /// The body of `yaml_emitter_process_tag`, on the taken-out tag data.
    fn write_tag(&mut self, handle: &[u8], suffix: &[u8]) -> Result<()> {
        if !handle.is_empty() {
            self.write_tag_handle(handle)?;
            if !suffix.is_empty() {
                self.write_tag_content(suffix, false)?;
            }
        } else {
            // [Go] Allocate these slices elsewhere.
            self.write_indicator(b"!<", true, false, false);
            self.write_tag_content(suffix, false)?;
            self.write_indicator(b">", false, false, false);
        }
        Ok(())
    }

    /// `yaml_emitter_process_scalar`: write a scalar.
    fn process_scalar(&mut self) -> Result<()> {
        let Some(style) = self.scalar_data.style else {
            return Err(emitter_error("unknown scalar style"));
        };
        let value = std::mem::take(&mut self.scalar_data.value);
        let allow_breaks = !self.simple_key_context;
        let result = match style {
            ScalarStyle::Plain => self.write_plain_scalar(&value, allow_breaks),
            ScalarStyle::SingleQuoted => self.write_single_quoted_scalar(&value, allow_breaks),
            ScalarStyle::DoubleQuoted => self.write_double_quoted_scalar(&value, allow_breaks),
            ScalarStyle::Literal => self.write_literal_scalar(&value),
            ScalarStyle::Folded => self.write_folded_scalar(&value),
            ScalarStyle::Any => Err(emitter_error("unknown scalar style")),
        };
        self.scalar_data.value = value;
        result
    }

    /// `yaml_emitter_process_head_comment`: write a head comment (and a
    /// pending tail comment before it).
    fn process_head_comment(&mut self) -> Result<()> {
        if !self.tail_comment.is_empty() {
            self.write_indent();
            let mut comment = std::mem::take(&mut self.tail_comment);
            let result = self.write_comment(&comment);
            comment.clear();
            self.tail_comment = comment;
            result?;
            self.foot_indent = self.indent.max(0);
        }

        if self.head_comment.is_empty() {
            return Ok(());
        }
        self.write_indent();
        let mut comment = std::mem::take(&mut self.head_comment);
        let result = self.write_comment(&comment);
        comment.clear();
        self.head_comment = comment;
        result
    }

    /// `yaml_emitter_process_line_comment_linebreak` (kyaml's fork): write a
    /// line comment; without one, write a line break when `linebreak` is set.
    fn process_line_comment(&mut self, linebreak: bool) -> Result<()> {
        if self.line_comment.is_empty() {
            // The next 3 lines are needed to resolve an issue with leading newlines
            // See https://github.com/go-yaml/yaml/issues/755
            // When linebreak is set to true, put_break will be called and will add
            // the needed newline.
            if linebreak {
                self.put_break();
            }
            return Ok(());
        }
        if !self.whitespace {
            self.put(b' ');
        }
        let mut comment = std::mem::take(&mut self.line_comment);
        let result = self.write_comment(&comment);
        comment.clear();
        self.line_comment = comment;
        result
    }

    /// `yaml_emitter_process_foot_comment`: write a foot comment.
    fn process_foot_comment(&mut self) -> Result<()> {
        if self.foot_comment.is_empty() {
            return Ok(());
        }
        self.write_indent();
        let mut comment = std::mem::take(&mut self.foot_comment);
        let result = self.write_comment(&comment);
        comment.clear();
        self.foot_comment = comment;
        result?;
        self.foot_indent = self.indent.max(0);
        Ok(())
    }

    /// `yaml_emitter_analyze_version_directive`: check if a %YAML directive is valid.
    fn analyze_version_directive(&self, version_directive: &VersionDirective) -> Result<()> {
        if version_directive.major != 1 || version_directive.minor != 1 {
            return Err(emitter_error("incompatible %YAML directive"));
        }
        Ok(())
    }

    /// `yaml_emitter_analyze_tag_directive`: check if a %TAG directive is valid.
    fn analyze_tag_directive(&self, tag_directive: &TagDirective) -> Result<()> {
        let handle = &tag_directive.handle;
        let prefix = &tag_directive.prefix;
        let Some((&first, _)) = handle.split_first() else {
            return Err(emitter_error("tag handle must not be empty"));
        };
        if first != b'!' {
            return Err(emitter_error("tag handle must start with '!'"));
        }
        if handle.last() != Some(&b'!') {
            return Err(emitter_error("tag handle must end with '!'"));
        }
        let mut i = 1;
        while i + 1 < handle.len() {
            if !is_alpha(handle, i) {
                return Err(emitter_error(
                    "tag handle must contain alphanumerical characters only",
                ));
            }
            // An alphanumerical character is ASCII: its width is 1.
            i += width(handle[i]).max(1);
        }
        if prefix.is_empty() {
            return Err(emitter_error("tag prefix must not be empty"));
        }
        Ok(())
    }

    /// `yaml_emitter_analyze_anchor`: check if an anchor is valid; takes it
    /// out of the event into `anchor_data`.
    fn analyze_anchor(&mut self, anchor: Vec<u8>, alias: bool) -> Result<()> {
        if anchor.is_empty() {
            return Err(emitter_error(if alias {
                "alias value must not be empty"
            } else {
                "anchor value must not be empty"
            }));
        }
        let mut i = 0;
        while i < anchor.len() {
            if !is_alpha(&anchor, i) {
                return Err(emitter_error(if alias {
                    "alias value must contain alphanumerical characters only"
                } else {
                    "anchor value must contain alphanumerical characters only"
                }));
            }
            // An alphanumerical character is ASCII: its width is 1.
            i += width(anchor[i]).max(1);
        }
        self.anchor_data.anchor = anchor;
        self.anchor_data.alias = alias;
        Ok(())
    }

    /// `yaml_emitter_analyze_tag`: check if a tag is valid and split it into a
    /// known handle and a suffix.
    fn analyze_tag(&mut self, tag: &[u8]) -> Result<()> {
        if tag.is_empty() {
            return Err(emitter_error("tag value must not be empty"));
        }
        for tag_directive in &self.tag_directives {
            if tag.starts_with(&tag_directive.prefix) {
                if tag.len() == tag_directive.prefix.len() && tag_directive.handle != b"!" {
                    // A handle with no suffix (`!!` for the tag
                    // `tag:yaml.org,2002:` itself) is not a tag when read
                    // back; yaml.v3 writes it anyway. We write the tag
                    // verbatim instead.
                    break;
                }
                self.tag_data.handle.clear();
                self.tag_data
                    .handle
                    .extend_from_slice(&tag_directive.handle);
                self.tag_data.suffix.clear();
                self.tag_data
                    .suffix
                    .extend_from_slice(&tag[tag_directive.prefix.len()..]);
                return Ok(());
            }
        }
        self.tag_data.suffix.clear();
        self.tag_data.suffix.extend_from_slice(tag);
        Ok(())
    }

    /// `yaml_emitter_analyze_scalar`: check if a scalar is valid and which
    /// styles can express it; takes the value out of the event into `scalar_data`.
    fn analyze_scalar(&mut self, value: Vec<u8>) -> Result<()> {
        let mut block_indicators = false;
        let mut flow_indicators = false;
        let mut line_breaks = false;
        let mut special_characters = false;
        let mut tab_characters = false;

        let mut leading_space = false;
        let mut leading_break = false;
        let mut trailing_space = false;
        let mut trailing_break = false;
        let mut break_space = false;
        let mut space_break = false;

        let mut previous_space = false;
        let mut previous_break = false;

        if value.is_empty() {
            self.keep_value(value);
            self.scalar_data.multiline = false;
            self.scalar_data.flow_plain_allowed = false;
            self.scalar_data.block_plain_allowed = true;
            self.scalar_data.single_quoted_allowed = true;
            self.scalar_data.block_allowed = false;
            return Ok(());
        }

        if value.starts_with(b"---") || value.starts_with(b"...") {
            block_indicators = true;
            flow_indicators = true;
        }

        let mut preceded_by_whitespace = true;
        let mut i = 0;
        while i < value.len() {
            let plain = if i == 0 {
                // A letter or digit is no indicator either.
                value[i].is_ascii_alphanumeric()
            } else {
                PLAIN_BYTE[usize::from(value[i])]
            };
            if plain {
                // Fast path: characters past the first that are no
                // indicator, no space, no break and printable (or a first
                // letter or digit) only reset these.
                previous_space = false;
                previous_break = false;
                preceded_by_whitespace = false;
                i += 1;
                while i < value.len() && PLAIN_BYTE[usize::from(value[i])] {
                    i += 1;
                }
                continue;
            }
            let w = width(value[i]);
            if w == 0 {
                // Go loops forever here (`i += 0`).
                return Err(width_error());
            }
            let followed_by_whitespace = i + w >= value.len() || is_blank(&value, i + w);

            if i == 0 {
                match value[i] {
                    b'#' | b',' | b'[' | b']' | b'{' | b'}' | b'&' | b'*' | b'!' | b'|' | b'>'
                    | b'\'' | b'"' | b'%' | b'@' | b'`' => {
                        flow_indicators = true;
                        block_indicators = true;
                    }
                    b'?' | b':' => {
                        flow_indicators = true;
                        if followed_by_whitespace {
                            block_indicators = true;
                        }
                    }
                    b'-' if followed_by_whitespace => {
                        flow_indicators = true;
                        block_indicators = true;
                    }
                    _ => {}
                }
            } else {
                match value[i] {
                    b',' | b'?' | b'[' | b']' | b'{' | b'}' => {
                        flow_indicators = true;
                    }
                    b':' => {
                        flow_indicators = true;
                        if followed_by_whitespace {
                            block_indicators = true;
                        }
                    }
                    b'#' if preceded_by_whitespace => {
                        flow_indicators = true;
                        block_indicators = true;
                    }
                    _ => {}
                }
            }

            if value[i] == b'\t' {
                tab_characters = true;
            } else if !is_printable(&value, i) || !is_ascii(&value, i) && !self.unicode {
                special_characters = true;
            }
            if is_space(&value, i) {
                if i == 0 {
                    leading_space = true;
                }
                if i + w == value.len() {
                    trailing_space = true;
                }
                if previous_break {
                    break_space = true;
                }
                previous_space = true;
                previous_break = false;
            } else if is_break(&value, i) {
                line_breaks = true;
                if i == 0 {
                    leading_break = true;
                }
                if i + w == value.len() {
                    trailing_break = true;
                }
                if previous_space {
                    space_break = true;
                }
                previous_space = false;
                previous_break = true;
            } else {
                previous_space = false;
                previous_break = false;
            }

            // [Go]: Why 'z'? Couldn't be the end of the string as that's the loop condition.
            preceded_by_whitespace = is_blankz(&value, i);
            i += w;
        }

        self.keep_value(value);
        self.scalar_data.multiline = line_breaks;
        self.scalar_data.flow_plain_allowed = true;
        self.scalar_data.block_plain_allowed = true;
        self.scalar_data.single_quoted_allowed = true;
        self.scalar_data.block_allowed = true;

        if leading_space || leading_break || trailing_space || trailing_break {
            self.scalar_data.flow_plain_allowed = false;
            self.scalar_data.block_plain_allowed = false;
        }
        if trailing_space {
            self.scalar_data.block_allowed = false;
        }
        if break_space {
            self.scalar_data.flow_plain_allowed = false;
            self.scalar_data.block_plain_allowed = false;
            self.scalar_data.single_quoted_allowed = false;
        }
        if space_break || tab_characters || special_characters {
            self.scalar_data.flow_plain_allowed = false;
            self.scalar_data.block_plain_allowed = false;
            self.scalar_data.single_quoted_allowed = false;
        }
        if space_break || special_characters {
            self.scalar_data.block_allowed = false;
        }
        if line_breaks {
            self.scalar_data.flow_plain_allowed = false;
            self.scalar_data.block_plain_allowed = false;
        }
        if flow_indicators {
            self.scalar_data.flow_plain_allowed = false;
        }
        if block_indicators {
            self.scalar_data.block_plain_allowed = false;
        }
        Ok(())
    }

    /// Makes `value` the analysed scalar, keeping the previous buffer for
    /// [`Emitter::buffer_with`].
    fn keep_value(&mut self, value: Vec<u8>) {
        let old = std::mem::replace(&mut self.scalar_data.value, value);
        if old.capacity() > 0 && self.spare.len() < Self::SPARE_BUFFERS {
            self.spare.push(old);
        }
    }

    /// Buffers kept for reuse.
    const SPARE_BUFFERS: usize = 16;

    /// A copy of `bytes` for an event, in a reused buffer when one is free.
    pub(crate) fn buffer_with(&mut self, bytes: &[u8]) -> Vec<u8> {
        if bytes.is_empty() {
            return Vec::new();
        }
        match self.spare.pop() {
            Some(mut buffer) => {
                buffer.clear();
                buffer.extend_from_slice(bytes);
                buffer
            }
            None => bytes.to_vec(),
        }
    }

    /// `yaml_emitter_analyze_event`: check if the event data is valid; moves
    /// the comments, anchor and scalar value of the event into the emitter.
    fn analyze_event(&mut self, event: &mut Event) -> Result<()> {
        self.anchor_data.anchor.clear();
        self.tag_data.handle.clear();
        self.tag_data.suffix.clear();
        self.scalar_data.value.clear();

        if let Some(c) = event.comments.take() {
            let Comments {
                head,
                line,
                foot,
                tail,
            } = *c;
            if !head.is_empty() {
                self.head_comment = head;
            }
            if !line.is_empty() {
                self.line_comment = line;
            }
            if !foot.is_empty() {
                self.foot_comment = foot;
            }
            if !tail.is_empty() {
                self.tail_comment = tail;
            }
        }

        match event.typ {
            EventType::Alias => {
                self.analyze_anchor(std::mem::take(&mut event.anchor), true)?;
            }
            EventType::Scalar => {
                if !event.anchor.is_empty() {
                    self.analyze_anchor(std::mem::take(&mut event.anchor), false)?;
                }
                if !event.tag.is_empty()
                    && (self.canonical || (!event.implicit && !event.quoted_implicit))
                {
                    self.analyze_tag(&event.tag)?;
                }
                self.analyze_scalar(std::mem::take(&mut event.value))?;
            }
            EventType::SequenceStart | EventType::MappingStart => {
                if !event.anchor.is_empty() {
                    self.analyze_anchor(std::mem::take(&mut event.anchor), false)?;
                }
                if !event.tag.is_empty() && (self.canonical || !event.implicit) {
                    self.analyze_tag(&event.tag)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// `yaml_emitter_write_indent`: go to a new line when needed, then indent.
    fn write_indent(&mut self) {
        let indent = self.indent.max(0);
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        if self.foot_indent == indent {
            self.put_break();
        }
        if self.column < indent {
            // The spaces at once (`put` one by one in Go).
            let spaces = (indent - self.column).unsigned_abs();
            self.output.resize(self.output.len() + spaces, b' ');
            self.column = indent;
        }
        self.whitespace = true;
        //self.indention = true;
        self.space_above = false;
        self.foot_indent = -1;
    }

    /// `yaml_emitter_write_indicator` (indicators are always ASCII here).
    fn write_indicator(
        &mut self,
        indicator: &[u8],
        need_whitespace: bool,
        is_whitespace: bool,
        is_indention: bool,
    ) {
        if need_whitespace && !self.whitespace {
            self.put(b' ');
        }
        for &c in indicator {
            self.put(c);
        }
        self.whitespace = is_whitespace;
        self.indention = self.indention && is_indention;
        self.open_ended = false;
    }

    /// `yaml_emitter_write_anchor`.
    fn write_anchor(&mut self, value: &[u8]) -> Result<()> {
        self.write_all(value)?;
        self.whitespace = false;
        self.indention = false;
        Ok(())
    }

    /// `yaml_emitter_write_tag_handle`.
    fn write_tag_handle(&mut self, value: &[u8]) -> Result<()> {
        if !self.whitespace {
            self.put(b' ');
        }
        self.write_all(value)?;
        self.whitespace = false;
        self.indention = false;
        Ok(())
    }

    /// `yaml_emitter_write_tag_content`: write a tag (suffix or prefix),
    /// percent-encoding the characters URIs do not allow.
    fn write_tag_content(&mut self, value: &[u8], need_whitespace: bool) -> Result<()> {
        if need_whitespace && !self.whitespace {
            self.put(b' ');
        }
        let mut i = 0;
        while i < value.len() {
            let must_write = match value[i] {
                b';' | b'/' | b'?' | b':' | b'@' | b'&' | b'=' | b'+' | b'$' | b',' | b'_'
                | b'.' | b'~' | b'*' | b'\'' | b'(' | b')' | b'[' | b']' => true,
                _ => is_alpha(value, i),
            };
            if must_write {
                self.write(value, &mut i)?;
            } else {
                let w = width(value[i]);
                if w == 0 || i + w > value.len() {
                    // Go loops forever or panics here.
                    return Err(width_error());
                }
                for _ in 0..w {
                    let octet = value[i];
                    i += 1;
                    self.put(b'%');
                    self.put(hex_digit(octet >> 4));
                    self.put(hex_digit(octet & 0x0f));
                }
            }
        }
        self.whitespace = false;
        self.indention = false;
        Ok(())
    }

    /// `yaml_emitter_write_plain_scalar`.
    fn write_plain_scalar(&mut self, value: &[u8], allow_breaks: bool) -> Result<()> {
        if !value.is_empty() && !self.whitespace {
            self.put(b' ');
        }

        let mut spaces = false;
        let mut breaks = false;
        let mut i = 0;
        while i < value.len() {
            if is_space(value, i) {
                if allow_breaks
                    && !spaces
                    && self.column > self.best_width
                    && !is_space(value, i + 1)
                {
                    self.write_indent();
                    i += 1;
                } else {
                    self.write(value, &mut i)?;
                }
                spaces = true;
            } else if is_break(value, i) {
                if !breaks && value[i] == b'\n' {
                    self.put_break();
                }
                self.write_break(value, &mut i)?;
                //self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.write(value, &mut i)?;
                // Fast path: more characters that take this branch.
                self.write_ascii_run(value, &mut i, is_ascii_graphic);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }

        if !value.is_empty() {
            self.whitespace = false;
        }
        self.indention = false;
        if self.root_context {
            self.open_ended = true;
        }
        Ok(())
    }

    /// `yaml_emitter_write_single_quoted_scalar`.
    fn write_single_quoted_scalar(&mut self, value: &[u8], allow_breaks: bool) -> Result<()> {
        self.write_indicator(b"'", true, false, false);

        let mut spaces = false;
        let mut breaks = false;
        let mut i = 0;
        while i < value.len() {
            if is_space(value, i) {
                if allow_breaks
                    && !spaces
                    && self.column > self.best_width
                    && i > 0
                    && i < value.len() - 1
                    && !is_space(value, i + 1)
                {
                    self.write_indent();
                    i += 1;
                } else {
                    self.write(value, &mut i)?;
                }
                spaces = true;
            } else if is_break(value, i) {
                if !breaks && value[i] == b'\n' {
                    self.put_break();
                }
                self.write_break(value, &mut i)?;
                //self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                if value[i] == b'\'' {
                    self.put(b'\'');
                }
                self.write(value, &mut i)?;
                // Fast path: more characters that take this branch unchanged.
                self.write_ascii_run(value, &mut i, |c| is_ascii_graphic(c) && c != b'\'');
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        self.write_indicator(b"'", false, false, false);
        self.whitespace = false;
        self.indention = false;
        Ok(())
    }

    /// `yaml_emitter_write_double_quoted_scalar`.
    fn write_double_quoted_scalar(&mut self, value: &[u8], allow_breaks: bool) -> Result<()> {
        let mut spaces = false;
        self.write_indicator(b"\"", true, false, false);

        // Go's `is_bom(value, i)` looks at the start of the value, whatever `i` is.
        let bom = is_bom(value, 0);
        let mut i = 0;
        while i < value.len() {
            if !bom && is_ascii_graphic(value[i]) && value[i] != b'"' && value[i] != b'\\' {
                // Fast path: printable ASCII written as is.
                self.write_ascii_run(value, &mut i, |c| {
                    is_ascii_graphic(c) && c != b'"' && c != b'\\'
                });
                spaces = false;
            } else if !is_printable(value, i)
                || (!self.unicode && !is_ascii(value, i))
                || is_bom(value, i)
                || is_break(value, i)
                || value[i] == b'"'
                || value[i] == b'\\'
            {
                let octet = value[i];
                let (w, mut v): (usize, u32) = if octet & 0x80 == 0x00 {
                    (1, u32::from(octet & 0x7F))
                } else if octet & 0xE0 == 0xC0 {
                    (2, u32::from(octet & 0x1F))
                } else if octet & 0xF0 == 0xE0 {
                    (3, u32::from(octet & 0x0F))
                } else if octet & 0xF8 == 0xF0 {
                    (4, u32::from(octet & 0x07))
                } else {
                    // Go loops forever here (`i += 0`).
                    return Err(width_error());
                };
                if i + w > value.len() {
                    return Err(width_error());
                }
                for k in 1..w {
                    v = (v << 6) + u32::from(value[i + k] & 0x3F);
                }
                i += w;

                self.put(b'\\');
                match v {
                    0x00 => self.put(b'0'),
                    0x07 => self.put(b'a'),
                    0x08 => self.put(b'b'),
                    0x09 => self.put(b't'),
                    0x0A => self.put(b'n'),
                    0x0b => self.put(b'v'),
                    0x0c => self.put(b'f'),
                    0x0d => self.put(b'r'),
                    0x1b => self.put(b'e'),
                    0x22 => self.put(b'"'),
                    0x5c => self.put(b'\\'),
                    0x85 => self.put(b'N'),
                    0xA0 => self.put(b'_'),
                    0x2028 => self.put(b'L'),
                    0x2029 => self.put(b'P'),
                    _ => {
                        let digits = if v <= 0xFF {
                            self.put(b'x');
                            2
                        } else if v <= 0xFFFF {
                            self.put(b'u');
                            4
                        } else {
                            self.put(b'U');
                            8
                        };
                        for k in (0..digits).rev() {
                            // The masked value is below 16, so the cast is lossless.
                            let digit = ((v >> (k * 4)) & 0x0F) as u8;
                            self.put(hex_digit(digit));
                        }
                    }
                }
                spaces = false;
            } else if is_space(value, i) {
                if allow_breaks
                    && !spaces
                    && self.column > self.best_width
                    && i > 0
                    && i < value.len() - 1
                {
                    self.write_indent();
                    if is_space(value, i + 1) {
                        self.put(b'\\');
                    }
                    i += 1;
                } else {
                    self.write(value, &mut i)?;
                }
                spaces = true;
            } else {
                self.write(value, &mut i)?;
                spaces = false;
            }
        }
        self.write_indicator(b"\"", false, false, false);
        self.whitespace = false;
        self.indention = false;
        Ok(())
    }

    /// `yaml_emitter_write_block_scalar_hints`: the indentation and chomping
    /// indicators of a literal or folded scalar.
    fn write_block_scalar_hints(&mut self, value: &[u8]) {
        // yaml.v3 writes the indicator for content starting with a space or
        // a line break, not with a tab; its parser (ours too) then reads the
        // tab as indentation and refuses the block (`|-` over `  \tx`).
        // Content starting with a tab gets the indicator as well, so what we
        // write reads back.
        if is_space(value, 0) || is_break(value, 0) || value.first() == Some(&b'\t') {
            // The indentation indicator is relative to the enclosing block
            // collection (the indentation pushed when this scalar's own was
            // set). yaml.v3 writes `best_indent`, which is what the content
            // gets under a mapping key but not under `- ` (two columns): with
            // its default indent of 4 it writes `- |4` above content indented
            // by 2, which no parser reads back. kyaml's indent of 2 never
            // meets the difference, so its output is unchanged.
            let relative = match self.indents.last() {
                Some(&parent) if parent >= 0 => self.indent - parent,
                _ => self.indent,
            };
            let hint = if (1..=9).contains(&relative) {
                relative
            } else {
                self.best_indent
            };
            let digit = u8::try_from(hint).unwrap_or(2);
            let indent_hint = [b'0'.wrapping_add(digit)];
            self.write_indicator(&indent_hint, false, false, false);
        }

        self.open_ended = false;

        let mut chomp_hint: Option<u8> = None;
        if value.is_empty() {
            chomp_hint = Some(b'-');
        } else {
            let mut i = value.len() - 1;
            while i > 0 && value[i] & 0xC0 == 0x80 {
                i -= 1;
            }
            if !is_break(value, i) {
                chomp_hint = Some(b'-');
            } else if i == 0 {
                chomp_hint = Some(b'+');
                self.open_ended = true;
            } else {
                i -= 1;
                while i > 0 && value[i] & 0xC0 == 0x80 {
                    i -= 1;
                }
                if is_break(value, i) {
                    chomp_hint = Some(b'+');
                    self.open_ended = true;
                }
            }
        }
        if let Some(hint) = chomp_hint {
            self.write_indicator(&[hint], false, false, false);
        }
    }

    /// `yaml_emitter_write_literal_scalar` (kyaml: ends the header line with a
    /// line break when there is no line comment).
    fn write_literal_scalar(&mut self, value: &[u8]) -> Result<()> {
        self.write_indicator(b"|", true, false, false);
        self.write_block_scalar_hints(value);
        self.process_line_comment(true)?;
        //self.indention = true;
        self.whitespace = true;
        let mut breaks = true;
        let mut i = 0;
        while i < value.len() {
            if is_break(value, i) {
                self.write_break(value, &mut i)?;
                //self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.write(value, &mut i)?;
                // Fast path: more characters that take this branch.
                self.write_ascii_run(value, &mut i, |c| c == b' ' || is_ascii_graphic(c));
                self.indention = false;
                breaks = false;
            }
        }
        Ok(())
    }

    /// `yaml_emitter_write_folded_scalar` (kyaml: ends the header line with a
    /// line break when there is no line comment).
    fn write_folded_scalar(&mut self, value: &[u8]) -> Result<()> {
        self.write_indicator(b">", true, false, false);
        self.write_block_scalar_hints(value);
        self.process_line_comment(true)?;

        //self.indention = true;
        self.whitespace = true;

        let mut breaks = true;
        let mut leading_spaces = true;
        let mut i = 0;
        while i < value.len() {
            if is_break(value, i) {
                if !breaks && !leading_spaces && value[i] == b'\n' {
                    let mut k = 0;
                    while is_break(value, k) {
                        k += width(value[k]);
                    }
                    if !is_blankz(value, k) {
                        self.put_break();
                    }
                }
                self.write_break(value, &mut i)?;
                //self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                    leading_spaces = is_blank(value, i);
                }
                if !breaks
                    && is_space(value, i)
                    && !is_space(value, i + 1)
                    && self.column > self.best_width
                {
                    self.write_indent();
                    i += 1;
                } else {
                    self.write(value, &mut i)?;
                    // Fast path: more characters that take this branch (no spaces,
                    // where the line may be folded).
                    self.write_ascii_run(value, &mut i, is_ascii_graphic);
                }
                self.indention = false;
                breaks = false;
            }
        }
        Ok(())
    }

    /// `yaml_emitter_write_comment`: write comment lines, adding `# ` where
    /// a line lacks the `#`.
    fn write_comment(&mut self, comment: &[u8]) -> Result<()> {
        let mut breaks = false;
        let mut pound = false;
        let mut i = 0;
        while i < comment.len() {
            if is_break(comment, i) {
                self.write_break(comment, &mut i)?;
                //self.indention = true;
                breaks = true;
                pound = false;
            } else {
                if breaks {
                    self.write_indent();
                }
                if !pound {
                    if comment[i] != b'#' {
                        self.put(b'#');
                        self.put(b' ');
                    }
                    pound = true;
                }
                self.write(comment, &mut i)?;
                // Fast path: more characters that take this branch.
                self.write_ascii_run(comment, &mut i, |c| c == b' ' || is_ascii_graphic(c));
                self.indention = false;
                breaks = false;
            }
        }
        if !breaks {
            self.put_break();
        }

        self.whitespace = true;
        //self.indention = true;
        Ok(())
    }
}

/// Whether `c` is printable ASCII other than the space (0x21..=0x7E).
#[inline]
fn is_ascii_graphic(c: u8) -> bool {
    c.is_ascii_graphic()
}

/// Bytes that `analyze_scalar` passes over without any effect past the
/// first character: printable ASCII other than a space and `,?[]{}:#`.
const PLAIN_BYTE: [bool; 256] = {
    let mut table = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        table[c] = b.is_ascii_graphic()
            && !matches!(b, b',' | b'?' | b'[' | b']' | b'{' | b'}' | b':' | b'#');
        c += 1;
    }
    table
};

/// The uppercase hexadecimal digit of a nibble (Go's `c += '0'` / `c += 'A' - 10`).
#[inline]
fn hex_digit(nibble: u8) -> u8 {
    if nibble < 10 {
        nibble + b'0'
    } else {
        nibble - 10 + b'A'
    }
}

#[cfg(test)]
mod tests {
    //! Event sequences and the exact bytes yaml.v3 (patched as kyaml's fork)
    //! writes for them. The events are written one per line in the form
    //! `TYPE flag key="Go-quoted value" ...`; `FINISH` stands for yaml.v3's
    //! `encoder.finish()`, which clears `open_ended` before STREAM-END. The
    //! sequences and expected outputs were recorded from yaml.v3's `Encoder`
    //! (and its emitter fed the same events directly).

    use super::*;
    use crate::yaml::token::{MappingStyle, SequenceStyle};

    /// Parses a Go-quoted string (`strconv.Quote` syntax) at the start of `s`.
    fn unquote(s: &str) -> (Vec<u8>, &str) {
        let b = s.as_bytes();
        assert_eq!(b[0], b'"', "expected a quoted string in {s:?}");
        let mut out = Vec::new();
        let mut i = 1;
        let hex =
            |digits: &[u8]| u32::from_str_radix(std::str::from_utf8(digits).unwrap(), 16).unwrap();
        while b[i] != b'"' {
            if b[i] != b'\\' {
                out.push(b[i]);
                i += 1;
                continue;
            }
            i += 1;
            let c = b[i];
            i += 1;
            match c {
                b'a' => out.push(0x07),
                b'b' => out.push(0x08),
                b'f' => out.push(0x0c),
                b'n' => out.push(b'\n'),
                b'r' => out.push(b'\r'),
                b't' => out.push(b'\t'),
                b'v' => out.push(0x0b),
                b'\\' | b'"' | b'\'' => out.push(c),
                b'x' => {
                    out.push(hex(&b[i..i + 2]) as u8);
                    i += 2;
                }
                b'u' | b'U' => {
                    let n = if c == b'u' { 4 } else { 8 };
                    let ch = char::from_u32(hex(&b[i..i + n])).unwrap();
                    out.extend_from_slice(ch.to_string().as_bytes());
                    i += n;
                }
                _ => panic!("bad escape in {s:?}"),
            }
        }
        (out, &s[i + 1..])
    }

    /// Parses one event line; `None` for `FINISH`.
    fn parse_event(line: &str) -> Option<Event> {
        let (name, mut rest) = line.split_once(' ').unwrap_or((line, ""));
        let typ = match name {
            "FINISH" => return None,
            "STREAM-START" => EventType::StreamStart,
            "STREAM-END" => EventType::StreamEnd,
            "DOC-START" => EventType::DocumentStart,
            "DOC-END" => EventType::DocumentEnd,
            "ALIAS" => EventType::Alias,
            "SCALAR" => EventType::Scalar,
            "SEQ-START" => EventType::SequenceStart,
            "SEQ-END" => EventType::SequenceEnd,
            "MAP-START" => EventType::MappingStart,
            "MAP-END" => EventType::MappingEnd,
            _ => panic!("unknown event {name}"),
        };
        let mut event = Event {
            typ,
            ..Event::default()
        };
        loop {
            rest = rest.trim_start();
            if rest.is_empty() {
                break;
            }
            let end = rest.find([' ', '=']).unwrap_or(rest.len());
            let key = &rest[..end];
            rest = &rest[end..];
            if !rest.starts_with('=') {
                match key {
                    "implicit" => event.implicit = true,
                    "quoted_implicit" => event.quoted_implicit = true,
                    _ => panic!("unknown flag {key}"),
                }
                continue;
            }
            rest = &rest[1..];
            if key == "tagdir" {
                let (handle, r) = unquote(rest);
                let (prefix, r) = unquote(&r[1..]);
                rest = r;
                event
                    .directives_mut()
                    .tags
                    .push(TagDirective { handle, prefix });
                continue;
            }
            let value: Vec<u8> = if rest.starts_with('"') {
                let (v, r) = unquote(rest);
                rest = r;
                v
            } else {
                let end = rest.find(' ').unwrap_or(rest.len());
                let v = rest.as_bytes()[..end].to_vec();
                rest = &rest[end..];
                v
            };
            match key {
                "style" => {
                    event.style = match (typ, value.as_slice()) {
                        (EventType::Scalar, b"plain") => EventStyle::Scalar(ScalarStyle::Plain),
                        (EventType::Scalar, b"single") => {
                            EventStyle::Scalar(ScalarStyle::SingleQuoted)
                        }
                        (EventType::Scalar, b"double") => {
                            EventStyle::Scalar(ScalarStyle::DoubleQuoted)
                        }
                        (EventType::Scalar, b"literal") => EventStyle::Scalar(ScalarStyle::Literal),
                        (EventType::Scalar, b"folded") => EventStyle::Scalar(ScalarStyle::Folded),
                        (EventType::SequenceStart, b"block") => {
                            EventStyle::Sequence(SequenceStyle::Block)
                        }
                        (EventType::SequenceStart, b"flow") => {
                            EventStyle::Sequence(SequenceStyle::Flow)
                        }
                        (EventType::MappingStart, b"block") => {
                            EventStyle::Mapping(MappingStyle::Block)
                        }
                        (EventType::MappingStart, b"flow") => {
                            EventStyle::Mapping(MappingStyle::Flow)
                        }
                        _ => panic!("bad style in {line}"),
                    }
                }
                "version" => {
                    let v = String::from_utf8(value).unwrap();
                    let (major, minor) = v.split_once('.').unwrap();
                    event.directives_mut().version = Some(VersionDirective {
                        major: major.parse().unwrap(),
                        minor: minor.parse().unwrap(),
                    });
                }
                "anchor" => event.anchor = value,
                "tag" => event.tag = value,
                "value" => event.value = value,
                "head" => event.comments_mut().head = value,
                "line" => event.comments_mut().line = value,
                "foot" => event.comments_mut().foot = value,
                "tail" => event.comments_mut().tail = value,
                _ => panic!("unknown key {key}"),
            }
        }
        Some(event)
    }

    /// Feeds the events to a new emitter: the output, and the error's
    /// problem if one was returned.
    fn run(options: EmitterOptions, events: &str) -> (Vec<u8>, Option<String>) {
        let mut emitter = Emitter::new(options);
        for line in events.lines().map(str::trim).filter(|l| !l.is_empty()) {
            match parse_event(line) {
                None => emitter.open_ended = false,
                Some(event) => {
                    if let Err(err) = emitter.emit(event) {
                        assert_eq!(err.kind, ErrorKind::Emitter);
                        return (emitter.into_output(), Some(err.problem));
                    }
                }
            }
        }
        (emitter.into_output(), None)
    }

    fn kyaml() -> EmitterOptions {
        EmitterOptions::kyaml()
    }

    fn v3() -> EmitterOptions {
        EmitterOptions::yaml_v3()
    }

    fn opts(
        indent: usize,
        width: isize,
        compact_sequence_indent: bool,
        canonical: bool,
        unicode: bool,
        line_break: LineBreak,
    ) -> EmitterOptions {
        EmitterOptions {
            indent,
            width,
            unicode,
            compact_sequence_indent,
            line_break,
            canonical,
        }
    }

    /// A test that the events produce exactly `expected`.
    macro_rules! case {
        ($name:ident, $options:expr, $events:expr, $expected:expr) => {
            #[test]
            fn $name() {
                let (output, err) = run($options, $events);
                assert_eq!(err, None);
                assert_eq!(String::from_utf8(output).unwrap(), $expected);
            }
        };
    }

    /// A test that the events fail with `problem` after writing `expected`.
    macro_rules! case_err {
        ($name:ident, $options:expr, $events:expr, $expected:expr, $problem:expr) => {
            #[test]
            fn $name() {
                let (output, err) = run($options, $events);
                assert_eq!(err.as_deref(), Some($problem));
                assert_eq!(String::from_utf8(output).unwrap(), $expected);
            }
        };
    }

    #[test]
    fn options() {
        let k = EmitterOptions::kyaml();
        assert_eq!(
            (k.indent, k.width, k.unicode, k.compact_sequence_indent),
            (2, -1, true, true)
        );
        assert_eq!((k.line_break, k.canonical), (LineBreak::Ln, false));
        let v = EmitterOptions::yaml_v3();
        assert_eq!(
            (v.indent, v.width, v.unicode, v.compact_sequence_indent),
            (4, -1, true, false)
        );
        assert_eq!((v.line_break, v.canonical), (LineBreak::Ln, false));
    }

    #[test]
    fn output_accessors() {
        let mut emitter = Emitter::new(kyaml());
        for line in [
            "STREAM-START",
            "DOC-START implicit",
            r#"SCALAR implicit value="a""#,
        ] {
            emitter.emit(parse_event(line).unwrap()).unwrap();
        }
        assert_eq!(emitter.output(), b"a");
        emitter
            .emit(parse_event("DOC-END implicit").unwrap())
            .unwrap();
        assert_eq!(emitter.into_output(), b"a\n");
    }

    #[test]
    fn events_are_queued_until_lookahead_is_known() {
        let mut emitter = Emitter::new(kyaml());
        for line in [
            "STREAM-START",
            "DOC-START implicit",
            "MAP-START style=block",
        ] {
            emitter.emit(parse_event(line).unwrap()).unwrap();
        }
        // MAPPING-START waits for three more events (or its end).
        assert_eq!(emitter.events.len(), 1);
        emitter.emit(parse_event("MAP-END").unwrap()).unwrap();
        assert!(emitter.events.is_empty());
        assert_eq!(emitter.output(), b"{}");
    }

    /// Invalid UTF-8 makes Go panic or loop forever; here it is an error.
    #[test]
    fn invalid_utf8_is_an_error() {
        let head = ["STREAM-START", "DOC-START implicit"];
        let values: [&[u8]; 4] = [b"a\x80b", b"ab\xe2\x80", b"\xff", b"\xc3"];
        for value in values {
            for style in [
                ScalarStyle::Plain,
                ScalarStyle::SingleQuoted,
                ScalarStyle::DoubleQuoted,
                ScalarStyle::Literal,
            ] {
                let mut emitter = Emitter::new(kyaml());
                for line in head {
                    emitter.emit(parse_event(line).unwrap()).unwrap();
                }
                let event = Event {
                    typ: EventType::Scalar,
                    value: value.to_vec(),
                    implicit: true,
                    quoted_implicit: true,
                    style: EventStyle::Scalar(style),
                    ..Event::default()
                };
                let err = emitter.emit(event).unwrap_err();
                assert_eq!(
                    err.problem, "unknown character width",
                    "{value:?} {style:?}"
                );
            }
        }
        // In comments and tags too.
        let mut emitter = Emitter::new(kyaml());
        for line in head {
            emitter.emit(parse_event(line).unwrap()).unwrap();
        }
        let event = Event {
            typ: EventType::Scalar,
            value: b"a".to_vec(),
            implicit: true,
            comments: Comments::boxed(Vec::new(), b"# \xe2\x80".to_vec(), Vec::new(), Vec::new()),
            ..Event::default()
        };
        // The line comment of a root scalar is written right after it.
        let err = emitter.emit(event).unwrap_err();
        assert_eq!(err.problem, "unknown character width");
        let mut emitter = Emitter::new(kyaml());
        for line in head {
            emitter.emit(parse_event(line).unwrap()).unwrap();
        }
        let event = Event {
            typ: EventType::Scalar,
            value: b"a".to_vec(),
            tag: b"x\xc3".to_vec(),
            ..Event::default()
        };
        let err = emitter.emit(event).unwrap_err();
        assert_eq!(err.problem, "unknown character width");
    }

    /// A style number that is no scalar style makes Go panic ("unknown
    /// scalar style"); here it is an error.
    #[test]
    fn collection_style_on_scalar_is_an_error() {
        let (_, err) = run(
            kyaml(),
            "STREAM-START\nDOC-START implicit\nSCALAR implicit value=\"x\"",
        );
        assert_eq!(err, None);
        let mut emitter = Emitter::new(kyaml());
        for line in ["STREAM-START", "DOC-START implicit"] {
            emitter.emit(parse_event(line).unwrap()).unwrap();
        }
        let event = Event {
            typ: EventType::Scalar,
            value: b"x".to_vec(),
            implicit: true,
            style: EventStyle::Sequence(SequenceStyle::Block),
            ..Event::default()
        };
        assert_eq!(
            emitter.emit(event).unwrap_err().problem,
            "unknown scalar style"
        );
    }

    /// Go compares raw style numbers: a flow *mapping* after a key with a
    /// line comment counts as a flow sequence, so the comment is not written
    /// before it (it is lost, as in Go).
    #[test]
    fn key_line_comment_before_flow_mapping_follows_go() {
        let (output, err) = run(
            kyaml(),
            r##"
            STREAM-START
            DOC-START implicit
            MAP-START style=block
            SCALAR implicit value="e" line="# key e"
            MAP-START style=flow
            SCALAR implicit value="x"
            SCALAR implicit value="y"
            MAP-END
            MAP-END
            DOC-END implicit
            STREAM-END
            "##,
        );
        assert_eq!(err, None);
        assert_eq!(output, b"e: {x: y}\n");
    }

    /// No event sequence may panic: feed many pseudo-random sequences.
    #[test]
    fn random_event_sequences_never_panic() {
        let pool = [
            "STREAM-START",
            "STREAM-END",
            "DOC-START implicit",
            "DOC-START",
            "DOC-START version=1.1 tagdir=\"!e!\",\"tag:e:\"",
            "DOC-END implicit",
            "DOC-END",
            "MAP-START style=block",
            "MAP-START style=flow anchor=\"m\"",
            "MAP-START tag=\"tag:e:m\" head=\"# h\"",
            "MAP-END",
            "MAP-END tail=\"# t\" foot=\"# f\"",
            "SEQ-START style=block",
            "SEQ-START style=flow line=\"# l\"",
            "SEQ-END",
            "SEQ-END foot=\"# f\"",
            "SCALAR implicit value=\"a\"",
            "SCALAR implicit value=\"\" line=\"# l\"",
            "SCALAR implicit style=literal value=\"\\nx\\n\\n\"",
            "SCALAR implicit style=folded value=\" a\\n b\" head=\"h\"",
            "SCALAR implicit style=double value=\"\\x00\\u2028é\"",
            "SCALAR quoted_implicit style=single value=\"a\\nb\"",
            "SCALAR value=\"untagged\"",
            "SCALAR tag=\"!x\" value=\"- a: b #c\" tail=\"# t\"",
            "ALIAS anchor=\"m\"",
            "ALIAS",
        ];
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for round in 0..3000 {
            let options = match round % 4 {
                0 => kyaml(),
                1 => v3(),
                2 => opts(3, 10, true, false, false, LineBreak::CrLn),
                _ => opts(2, 20, false, true, true, LineBreak::Cr),
            };
            let mut emitter = Emitter::new(options);
            let len = 2 + (next() % 40) as usize;
            for k in 0..len {
                let line = if k == 0 && round % 3 != 0 {
                    "STREAM-START"
                } else {
                    pool[(next() % pool.len() as u64) as usize]
                };
                let _ = emitter.emit(parse_event(line).unwrap());
            }
        }
    }

    case!(
        seq_under_key_kyaml,
        kyaml(),
        r#"
            STREAM-START
            DOC-START implicit
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="a"
            SEQ-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="b"
            SCALAR implicit quoted_implicit style=plain value="c"
            SEQ-END
            MAP-END
            DOC-END implicit
            FINISH
            STREAM-END
        "#,
        "a:\n- b\n- c\n"
    );

    case!(
        seq_under_key_v3,
        v3(),
        r#"
            STREAM-START
            DOC-START implicit
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="a"
            SEQ-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="b"
            SCALAR implicit quoted_implicit style=plain value="c"
            SEQ-END
            MAP-END
            DOC-END implicit
            FINISH
            STREAM-END
        "#,
        "a:\n    - b\n    - c\n"
    );

    case!(
        nested_map_seq_kyaml,
        kyaml(),
        r#"
            STREAM-START
            DOC-START implicit
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="a"
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="b"
            SCALAR implicit quoted_implicit style=plain value="c"
            SCALAR implicit quoted_implicit style=plain value="d"
            SEQ-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="e"
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="f"
            SCALAR implicit quoted_implicit style=plain value="g"
            SCALAR implicit quoted_implicit style=plain value="h"
            SCALAR implicit quoted_implicit style=plain value="i"
            MAP-END
            SEQ-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="j"
            SCALAR implicit quoted_implicit style=plain value="k"
            SEQ-END
            SEQ-END
            MAP-END
            MAP-END
            DOC-END implicit
            FINISH
            STREAM-END
        "#,
        "a:\n  b: c\n  d:\n  - e\n  - f: g\n    h: i\n  - - j\n    - k\n"
    );

    case!(
        nested_map_seq_v3,
        v3(),
        r#"
            STREAM-START
            DOC-START implicit
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="a"
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="b"
            SCALAR implicit quoted_implicit style=plain value="c"
            SCALAR implicit quoted_implicit style=plain value="d"
            SEQ-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="e"
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="f"
            SCALAR implicit quoted_implicit style=plain value="g"
            SCALAR implicit quoted_implicit style=plain value="h"
            SCALAR implicit quoted_implicit style=plain value="i"
            MAP-END
            SEQ-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="j"
            SCALAR implicit quoted_implicit style=plain value="k"
            SEQ-END
            SEQ-END
            MAP-END
            MAP-END
            DOC-END implicit
            FINISH
            STREAM-END
        "#,
        "a:\n    b: c\n    d:\n        - e\n        - f: g\n          h: i\n        - - j\n          - k\n"
    );

    case!(
        seq_of_maps_kyaml,
        kyaml(),
        r#"
            STREAM-START
            DOC-START implicit
            SEQ-START implicit style=block
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="name"
            SCALAR implicit quoted_implicit style=plain value="x"
            SCALAR implicit quoted_implicit style=plain value="image"
            SCALAR implicit quoted_implicit style=plain value="y"
            MAP-END
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="name"
            SCALAR implicit quoted_implicit style=plain value="z"
            SCALAR implicit quoted_implicit style=plain value="ports"
            SEQ-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="80"
            SCALAR implicit quoted_implicit style=plain value="443"
            SEQ-END
            MAP-END
            SEQ-END
            DOC-END implicit
            FINISH
            STREAM-END
        "#,
        "- name: x\n  image: y\n- name: z\n  ports:\n  - 80\n  - 443\n"
    );

    case!(
        seq_of_maps_v3,
        v3(),
        r#"
            STREAM-START
            DOC-START implicit
            SEQ-START implicit style=block
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="name"
            SCALAR implicit quoted_implicit style=plain value="x"
            SCALAR implicit quoted_implicit style=plain value="image"
            SCALAR implicit quoted_implicit style=plain value="y"
            MAP-END
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="name"
            SCALAR implicit quoted_implicit style=plain value="z"
            SCALAR implicit quoted_implicit style=plain value="ports"
            SEQ-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="80"
            SCALAR implicit quoted_implicit style=plain value="443"
            SEQ-END
            MAP-END
            SEQ-END
            DOC-END implicit
            FINISH
            STREAM-END
        "#,
        "- name: x\n  image: y\n- name: z\n  ports:\n    - 80\n    - 443\n"
    );

    case!(
        nested_seqs_kyaml,
        kyaml(),
        r#"
            STREAM-START
            DOC-START implicit
            SEQ-START implicit style=block
            SEQ-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="a"
            SCALAR implicit quoted_implicit style=plain value="b"
            SEQ-END
            SEQ-START implicit style=block
            SEQ-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="c"
            SCALAR implicit quoted_implicit style=plain value="d"
            SEQ-END
            SEQ-END
            SCALAR implicit quoted_implicit style=plain value="e"
            SEQ-END
            DOC-END implicit
            FINISH
            STREAM-END
        "#,
        "- - a\n  - b\n- - - c\n    - d\n- e\n"
    );

    case!(
        flow_styles_kyaml,
        kyaml(),
        r#"
            STREAM-START
            DOC-START implicit
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="a"
            MAP-START implicit style=flow
            SCALAR implicit quoted_implicit style=plain value="b"
            SCALAR implicit quoted_implicit style=plain value="c"
            SCALAR implicit quoted_implicit style=plain value="d"
            SEQ-START implicit style=flow
            SCALAR implicit quoted_implicit style=plain value="e"
            SCALAR implicit quoted_implicit style=plain value="f"
            SEQ-END
            MAP-END
            SCALAR implicit quoted_implicit style=plain value="x"
            SEQ-START implicit style=flow
            SEQ-END
            SCALAR implicit quoted_implicit style=plain value="y"
            MAP-START implicit style=flow
            MAP-END
            SCALAR implicit quoted_implicit style=plain value="z"
            SEQ-START implicit style=flow
            MAP-START implicit style=flow
            SCALAR implicit quoted_implicit style=plain value="p"
            SCALAR implicit quoted_implicit style=plain value="q"
            MAP-END
            SEQ-START implicit style=flow
            SCALAR implicit quoted_implicit style=plain value="r"
            SEQ-END
            SEQ-END
            MAP-END
            DOC-END implicit
            FINISH
            STREAM-END
        "#,
        "a: {b: c, d: [e, f]}\nx: []\ny: {}\nz: [{p: q}, [r]]\n"
    );

    case!(
        scalar_styles_kyaml,
        kyaml(),
        r#"
            STREAM-START
            DOC-START implicit
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="plain"
            SCALAR implicit quoted_implicit style=plain value="hello world"
            SCALAR implicit quoted_implicit style=plain value="single"
            SCALAR implicit quoted_implicit style=single value="it's"
            SCALAR implicit quoted_implicit style=plain value="double"
            SCALAR implicit quoted_implicit style=double value="a\tbé\x01\"q\\"
            SCALAR implicit quoted_implicit style=plain value="lit"
            SCALAR implicit quoted_implicit style=literal value="line1\nline2\n"
            SCALAR implicit quoted_implicit style=plain value="litstrip"
            SCALAR implicit quoted_implicit style=literal value="foo\nbar"
            SCALAR implicit quoted_implicit style=plain value="litkeep"
            SCALAR implicit quoted_implicit style=literal value="foo\n\n"
            SCALAR implicit quoted_implicit style=plain value="folded"
            SCALAR implicit quoted_implicit style=folded value="some folded text\npara\n"
            SCALAR implicit quoted_implicit style=plain value="foldstrip"
            SCALAR implicit quoted_implicit style=folded value="x y z"
            SCALAR implicit quoted_implicit style=plain value="indented"
            SCALAR implicit quoted_implicit style=literal value="  leading\nnormal\n"
            MAP-END
            DOC-END implicit
            FINISH
            STREAM-END
        "#,
        "plain: hello world\nsingle: 'it''s'\ndouble: \"a\\tbé\\x01\\\"q\\\\\"\nlit: |\n  line1\n  line2\nlitstrip: |-\n  foo\n  bar\nlitkeep: |+\n  foo\n\nfolded: >\n  some folded text\n\n  para\n\nfoldstrip: >-\n  x y z\nindented: |2\n    leading\n  normal\n"
    );

    case!(
        scalar_styles_v3,
        v3(),
        r#"
            STREAM-START
            DOC-START implicit
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="plain"
            SCALAR implicit quoted_implicit style=plain value="hello world"
            SCALAR implicit quoted_implicit style=plain value="single"
            SCALAR implicit quoted_implicit style=single value="it's"
            SCALAR implicit quoted_implicit style=plain value="double"
            SCALAR implicit quoted_implicit style=double value="a\tbé\x01\"q\\"
            SCALAR implicit quoted_implicit style=plain value="lit"
            SCALAR implicit quoted_implicit style=literal value="line1\nline2\n"
            SCALAR implicit quoted_implicit style=plain value="litstrip"
            SCALAR implicit quoted_implicit style=literal value="foo\nbar"
            SCALAR implicit quoted_implicit style=plain value="litkeep"
            SCALAR implicit quoted_implicit style=literal value="foo\n\n"
            SCALAR implicit quoted_implicit style=plain value="folded"
            SCALAR implicit quoted_implicit style=folded value="some folded text\npara\n"
            SCALAR implicit quoted_implicit style=plain value="foldstrip"
            SCALAR implicit quoted_implicit style=folded value="x y z"
            SCALAR implicit quoted_implicit style=plain value="indented"
            SCALAR implicit quoted_implicit style=literal value="  leading\nnormal\n"
            MAP-END
            DOC-END implicit
            FINISH
            STREAM-END
        "#,
        "plain: hello world\nsingle: 'it''s'\ndouble: \"a\\tbé\\x01\\\"q\\\\\"\nlit: |\n    line1\n    line2\nlitstrip: |-\n    foo\n    bar\nlitkeep: |+\n    foo\n\nfolded: >\n    some folded text\n\n    para\n\nfoldstrip: >-\n    x y z\nindented: |4\n      leading\n    normal\n"
    );

    case!(
        anchors_tags_kyaml,
        kyaml(),
        r#"
            STREAM-START
            DOC-START implicit
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="a"
            SCALAR implicit quoted_implicit style=plain anchor="x" value="1"
            SCALAR implicit quoted_implicit style=plain value="b"
            ALIAS anchor="x"
            SCALAR implicit quoted_implicit style=plain value="c"
            SCALAR style=plain tag="!custom" value="foo"
            SCALAR implicit quoted_implicit style=plain value="d"
            SCALAR style=plain tag="tag:yaml.org,2002:str" value="123"
            SCALAR implicit quoted_implicit style=plain value="e"
            SCALAR style=plain tag="tag:yaml.org,2002:binary" value="aGVsbG8="
            SCALAR implicit quoted_implicit style=plain value="f"
            MAP-START implicit style=block anchor="m"
            SCALAR implicit quoted_implicit style=plain value="k"
            SCALAR implicit quoted_implicit style=plain value="v"
            MAP-END
            SCALAR implicit quoted_implicit style=plain value="g"
            ALIAS anchor="m"
            SCALAR implicit quoted_implicit style=plain value="h"
            MAP-START style=flow tag="tag:yaml.org,2002:set"
            SCALAR implicit quoted_implicit style=plain value="q"
            SCALAR implicit quoted_implicit style=plain value="null"
            MAP-END
            SCALAR implicit quoted_implicit style=plain value="i"
            SCALAR style=plain tag="tag:example.com,2000:foo" value="bar"
            MAP-END
            DOC-END implicit
            FINISH
            STREAM-END
        "#,
        "a: &x 1\nb: *x\nc: !custom foo\nd: !!str 123\ne: !!binary aGVsbG8=\nf: &m\n  k: v\ng: *m\nh: !!set {q: null}\ni: !<tag:example.com,2000:foo> bar\n"
    );

    case!(
        k8s_comments_kyaml,
        kyaml(),
        r##"
            STREAM-START
            DOC-START implicit head="# doc head"
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="apiVersion" head="# key head"
            SCALAR implicit quoted_implicit style=plain value="v1" line="# line"
            SCALAR implicit quoted_implicit style=plain value="kind"
            SCALAR implicit quoted_implicit style=plain value="Pod"
            SCALAR implicit quoted_implicit style=plain value="metadata"
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="name" head="# name head"
            SCALAR implicit quoted_implicit style=plain value="x" line="# name line"
            SCALAR implicit quoted_implicit style=plain value="labels"
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="a"
            SCALAR implicit quoted_implicit style=plain value="b"
            MAP-END tail="# foot of labels"
            MAP-END
            SCALAR implicit quoted_implicit style=plain value="spec"
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="containers"
            SEQ-START implicit style=block
            MAP-START implicit style=block head="# head of item"
            SCALAR implicit quoted_implicit style=plain value="name"
            SCALAR implicit quoted_implicit style=plain value="c" line="# line c"
            SCALAR implicit quoted_implicit style=plain value="image"
            SCALAR implicit quoted_implicit style=plain value="y"
            MAP-END tail="# foot in item"
            SEQ-END
            MAP-END tail="# foot of list"
            MAP-END tail="# final foot"
            DOC-END implicit
            FINISH
            STREAM-END
        "##,
        "# doc head\n\n# key head\napiVersion: v1 # line\nkind: Pod\nmetadata:\n  # name head\n  name: x # name line\n  labels:\n    a: b\n    # foot of labels\nspec:\n  containers:\n  # head of item\n  - name: c # line c\n    image: y\n    # foot in item\n  # foot of list\n# final foot\n"
    );

    case!(
        k8s_comments_v3,
        v3(),
        r##"
            STREAM-START
            DOC-START implicit head="# doc head"
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="apiVersion" head="# key head"
            SCALAR implicit quoted_implicit style=plain value="v1" line="# line"
            SCALAR implicit quoted_implicit style=plain value="kind"
            SCALAR implicit quoted_implicit style=plain value="Pod"
            SCALAR implicit quoted_implicit style=plain value="metadata"
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="name" head="# name head"
            SCALAR implicit quoted_implicit style=plain value="x" line="# name line"
            SCALAR implicit quoted_implicit style=plain value="labels"
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="a"
            SCALAR implicit quoted_implicit style=plain value="b"
            MAP-END tail="# foot of labels"
            MAP-END
            SCALAR implicit quoted_implicit style=plain value="spec"
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="containers"
            SEQ-START implicit style=block
            MAP-START implicit style=block head="# head of item"
            SCALAR implicit quoted_implicit style=plain value="name"
            SCALAR implicit quoted_implicit style=plain value="c" line="# line c"
            SCALAR implicit quoted_implicit style=plain value="image"
            SCALAR implicit quoted_implicit style=plain value="y"
            MAP-END tail="# foot in item"
            SEQ-END
            MAP-END tail="# foot of list"
            MAP-END tail="# final foot"
            DOC-END implicit
            FINISH
            STREAM-END
        "##,
        "# doc head\n\n# key head\napiVersion: v1 # line\nkind: Pod\nmetadata:\n    # name head\n    name: x # name line\n    labels:\n        a: b\n        # foot of labels\nspec:\n    containers:\n        # head of item\n        - name: c # line c\n          image: y\n          # foot in item\n    # foot of list\n# final foot\n"
    );

    case!(
        comments_seq_kyaml,
        kyaml(),
        r##"
            STREAM-START
            DOC-START implicit
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="items"
            SEQ-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="a" line="# la"
            SCALAR implicit quoted_implicit style=plain value="b" head="# between" foot="# after list"
            SEQ-END
            SCALAR implicit quoted_implicit style=plain value="other"
            SCALAR implicit quoted_implicit style=plain value="1" line="# lo"
            MAP-END
            DOC-END implicit
            FINISH
            STREAM-END
        "##,
        "items:\n- a # la\n# between\n- b\n# after list\n\nother: 1 # lo\n"
    );

    case!(
        comments_seq_v3,
        v3(),
        r##"
            STREAM-START
            DOC-START implicit
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="items"
            SEQ-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="a" line="# la"
            SCALAR implicit quoted_implicit style=plain value="b" head="# between" foot="# after list"
            SEQ-END
            SCALAR implicit quoted_implicit style=plain value="other"
            SCALAR implicit quoted_implicit style=plain value="1" line="# lo"
            MAP-END
            DOC-END implicit
            FINISH
            STREAM-END
        "##,
        "items:\n    - a # la\n    # between\n    - b\n    # after list\nother: 1 # lo\n"
    );

    case!(
        comments_flow_kyaml,
        kyaml(),
        r##"
            STREAM-START
            DOC-START implicit
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="a"
            SEQ-START implicit style=flow
            SCALAR implicit quoted_implicit style=plain value="b"
            SCALAR implicit quoted_implicit style=plain value="c"
            SEQ-END line="# fl"
            SCALAR implicit quoted_implicit style=plain value="d"
            MAP-START implicit style=flow
            SCALAR implicit quoted_implicit style=plain value="e"
            SCALAR implicit quoted_implicit style=plain value="f"
            MAP-END line="# fm"
            SCALAR implicit quoted_implicit style=plain value="g" line="# key line"
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="h"
            SCALAR implicit quoted_implicit style=plain value="i"
            MAP-END
            SCALAR implicit quoted_implicit style=plain value="j" line="# key line seq"
            SEQ-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="k"
            SEQ-END
            MAP-END
            DOC-END implicit
            FINISH
            STREAM-END
        "##,
        "a: [b, c] # fl\nd: {e: f} # fm\ng: # key line\n  h: i\nj: # key line seq\n- k\n"
    );

    case!(
        comments_doc_foot_kyaml,
        kyaml(),
        r##"
            STREAM-START
            DOC-START implicit
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="a"
            SCALAR implicit quoted_implicit style=plain value="1"
            MAP-END
            DOC-END implicit foot="# doc foot"
            FINISH
            STREAM-END
        "##,
        "a: 1\n\n# doc foot\n"
    );

    case!(
        comments_nested_foot_kyaml,
        kyaml(),
        r##"
            STREAM-START
            DOC-START implicit
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="a"
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="b"
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="c"
            SCALAR implicit quoted_implicit style=plain value="d"
            MAP-END tail="# foot c"
            MAP-END tail="# foot b"
            SCALAR implicit quoted_implicit style=plain value="e" head="# foot a"
            SCALAR implicit quoted_implicit style=plain value="f"
            MAP-END
            DOC-END implicit
            FINISH
            STREAM-END
        "##,
        "a:\n  b:\n    c: d\n    # foot c\n  # foot b\n# foot a\ne: f\n"
    );

    case!(
        comment_scalar_doc_kyaml,
        kyaml(),
        r##"
            STREAM-START
            DOC-START implicit
            SCALAR implicit quoted_implicit style=plain value="scalar" head="# head" line="# line" foot="# foot"
            DOC-END implicit
            FINISH
            STREAM-END
        "##,
        "# head\nscalar # line\n# foot\n"
    );

    case!(
        comments_literal_kyaml,
        kyaml(),
        r##"
            STREAM-START
            DOC-START implicit
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="a"
            SCALAR implicit quoted_implicit style=literal value="text\n" line="# lit comment"
            SCALAR implicit quoted_implicit style=plain value="b"
            SCALAR implicit quoted_implicit style=folded value="folded" line="# fold comment"
            MAP-END
            DOC-END implicit
            FINISH
            STREAM-END
        "##,
        "a: | # lit comment\n  text\nb: >- # fold comment\n  folded\n"
    );

    case!(
        quoting_kyaml,
        kyaml(),
        r##"
            STREAM-START
            DOC-START implicit
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="a"
            SCALAR implicit quoted_implicit style=single value=""
            SCALAR implicit quoted_implicit style=plain value="b"
            SCALAR implicit quoted_implicit style=single value=" lead"
            SCALAR implicit quoted_implicit style=plain value="c"
            SCALAR implicit quoted_implicit style=single value="- x"
            SCALAR implicit quoted_implicit style=plain value="d"
            SCALAR implicit quoted_implicit style=single value="a: b"
            SCALAR implicit quoted_implicit style=plain value="e"
            SCALAR implicit quoted_implicit style=single value="a #b"
            SCALAR implicit quoted_implicit style=plain value="f"
            SCALAR implicit quoted_implicit style=single value="#x"
            SCALAR implicit quoted_implicit style=plain value="g"
            SCALAR implicit quoted_implicit style=single value="trail "
            SCALAR implicit quoted_implicit style=plain value="h"
            SCALAR implicit quoted_implicit style=double value="tab\there"
            SCALAR implicit quoted_implicit style=plain value="i"
            SCALAR implicit quoted_implicit style=single value="@at"
            SCALAR implicit quoted_implicit style=plain value="j"
            SCALAR implicit quoted_implicit style=single value="---"
            SCALAR implicit quoted_implicit style=plain value="k"
            SCALAR implicit quoted_implicit style=single value="x:"
            SCALAR implicit quoted_implicit style=plain value="l"
            SEQ-START implicit style=flow
            SCALAR implicit quoted_implicit style=single value=" s"
            SCALAR implicit quoted_implicit style=single value=""
            SCALAR implicit quoted_implicit style=single value="a,b"
            SCALAR implicit quoted_implicit style=single value="{x}"
            SEQ-END
            MAP-END
            DOC-END implicit
            FINISH
            STREAM-END
        "##,
        "a: ''\nb: ' lead'\nc: '- x'\nd: 'a: b'\ne: 'a #b'\nf: '#x'\ng: 'trail '\nh: \"tab\\there\"\ni: '@at'\nj: '---'\nk: 'x:'\nl: [' s', '', 'a,b', '{x}']\n"
    );

    case!(
        unicode_kyaml,
        kyaml(),
        r#"
            STREAM-START
            DOC-START implicit
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="a"
            SCALAR implicit quoted_implicit style=plain value="héllo wörld"
            SCALAR implicit quoted_implicit style=plain value="b"
            SCALAR implicit quoted_implicit style=double value="\u2028"
            SCALAR implicit quoted_implicit style=plain value="c"
            SCALAR implicit quoted_implicit style=double value="\u00a0x"
            SCALAR implicit quoted_implicit style=plain value="d"
            SCALAR implicit quoted_implicit style=plain value="日本語"
            SCALAR implicit quoted_implicit style=plain value="e"
            SCALAR implicit quoted_implicit style=double value="😀"
            MAP-END
            DOC-END implicit
            FINISH
            STREAM-END
        "#,
        "a: héllo wörld\nb: \"\\L\"\nc: \" x\"\nd: 日本語\ne: \"\\U0001F600\"\n"
    );

    case!(
        multiline_plain_kyaml,
        kyaml(),
        r#"
            STREAM-START
            DOC-START implicit
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="a"
            SCALAR implicit quoted_implicit style=literal value="first second\nthird"
            MAP-END
            DOC-END implicit
            FINISH
            STREAM-END
        "#,
        "a: |-\n  first second\n  third\n"
    );

    case!(
        root_scalars_kyaml,
        kyaml(),
        r#"
            STREAM-START
            DOC-START implicit
            SCALAR implicit quoted_implicit style=plain value="just a string"
            DOC-END implicit
            FINISH
            STREAM-END
        "#,
        "just a string\n"
    );

    case!(
        root_seq_kyaml,
        kyaml(),
        r#"
            STREAM-START
            DOC-START implicit
            SEQ-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="a"
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="b"
            SCALAR implicit quoted_implicit style=plain value="c"
            SCALAR implicit quoted_implicit style=plain value="d"
            SCALAR implicit quoted_implicit style=plain value="e"
            MAP-END
            SEQ-END
            DOC-END implicit
            FINISH
            STREAM-END
        "#,
        "- a\n- b: c\n  d: e\n"
    );

    case!(
        empty_values_kyaml,
        kyaml(),
        r#"
            STREAM-START
            DOC-START implicit
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="a"
            SCALAR implicit quoted_implicit style=plain value=""
            SCALAR implicit quoted_implicit style=plain value="b"
            SCALAR implicit quoted_implicit style=plain value="~"
            SCALAR implicit quoted_implicit style=plain value="c"
            SCALAR implicit quoted_implicit style=plain value="null"
            SCALAR implicit quoted_implicit style=plain value="d"
            SEQ-START implicit style=flow
            SEQ-END
            SCALAR implicit quoted_implicit style=plain value="e"
            MAP-START implicit style=flow
            MAP-END
            MAP-END
            DOC-END implicit
            FINISH
            STREAM-END
        "#,
        "a:\nb: ~\nc: null\nd: []\ne: {}\n"
    );

    case!(
        complex_key_kyaml,
        kyaml(),
        r#"
            STREAM-START
            DOC-START implicit
            MAP-START implicit style=block
            SEQ-START implicit style=flow
            SCALAR implicit quoted_implicit style=plain value="a"
            SCALAR implicit quoted_implicit style=plain value="b"
            SEQ-END
            SCALAR implicit quoted_implicit style=plain value="c"
            MAP-START implicit style=flow
            SCALAR implicit quoted_implicit style=plain value="x"
            SCALAR implicit quoted_implicit style=plain value="y"
            MAP-END
            SCALAR implicit quoted_implicit style=plain value="z"
            MAP-END
            DOC-END implicit
            FINISH
            STREAM-END
        "#,
        "? [a, b]\n: c\n? {x: y}\n: z\n"
    );

    case!(
        long_key_kyaml,
        kyaml(),
        r#"
            STREAM-START
            DOC-START implicit
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk"
            SCALAR implicit quoted_implicit style=plain value="v"
            MAP-END
            DOC-END implicit
            FINISH
            STREAM-END
        "#,
        "? kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk\n: v\n"
    );

    case!(
        deep_kyaml,
        kyaml(),
        r#"
            STREAM-START
            DOC-START implicit
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="a"
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="b"
            SEQ-START implicit style=block
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="c"
            SEQ-START implicit style=block
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="d"
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="e"
            SCALAR implicit quoted_implicit style=plain value="f"
            MAP-END
            MAP-END
            SEQ-END
            MAP-END
            SEQ-END
            MAP-END
            MAP-END
            DOC-END implicit
            FINISH
            STREAM-END
        "#,
        "a:\n  b:\n  - c:\n    - d:\n        e: f\n"
    );

    case!(
        deep_v3,
        v3(),
        r#"
            STREAM-START
            DOC-START implicit
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="a"
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="b"
            SEQ-START implicit style=block
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="c"
            SEQ-START implicit style=block
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="d"
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="e"
            SCALAR implicit quoted_implicit style=plain value="f"
            MAP-END
            MAP-END
            SEQ-END
            MAP-END
            SEQ-END
            MAP-END
            MAP-END
            DOC-END implicit
            FINISH
            STREAM-END
        "#,
        "a:\n    b:\n        - c:\n            - d:\n                e: f\n"
    );

    case!(
        seq_in_seq_map_kyaml,
        kyaml(),
        r#"
            STREAM-START
            DOC-START implicit
            SEQ-START implicit style=block
            SEQ-START implicit style=block
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="a"
            SCALAR implicit quoted_implicit style=plain value="b"
            SCALAR implicit quoted_implicit style=plain value="c"
            SCALAR implicit quoted_implicit style=plain value="d"
            MAP-END
            SEQ-END
            SEQ-END
            DOC-END implicit
            FINISH
            STREAM-END
        "#,
        "- - a: b\n    c: d\n"
    );

    case!(
        doc_explicit_kyaml,
        kyaml(),
        r##"
            STREAM-START
            DOC-START implicit
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="a" head="# doc comment"
            SCALAR implicit quoted_implicit style=plain value="b"
            MAP-END
            DOC-END implicit
            FINISH
            STREAM-END
        "##,
        "# doc comment\na: b\n"
    );

    case!(
        multi_doc_kyaml,
        kyaml(),
        r##"
            STREAM-START
            DOC-START implicit
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="a" head="# head"
            SCALAR implicit quoted_implicit style=plain value="b" line="# line"
            SCALAR implicit quoted_implicit style=plain value="c"
            SEQ-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="d"
            SEQ-END
            MAP-END
            DOC-END implicit
            DOC-START implicit
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="a" head="# head"
            SCALAR implicit quoted_implicit style=plain value="b" line="# line"
            SCALAR implicit quoted_implicit style=plain value="c"
            SEQ-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="d"
            SEQ-END
            MAP-END
            DOC-END implicit
            FINISH
            STREAM-END
        "##,
        "# head\na: b # line\nc:\n- d\n---\n# head\na: b # line\nc:\n- d\n"
    );

    case!(
        multi_doc_v3,
        v3(),
        r##"
            STREAM-START
            DOC-START implicit
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="a" head="# head"
            SCALAR implicit quoted_implicit style=plain value="b" line="# line"
            SCALAR implicit quoted_implicit style=plain value="c"
            SEQ-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="d"
            SEQ-END
            MAP-END
            DOC-END implicit
            DOC-START implicit
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="a" head="# head"
            SCALAR implicit quoted_implicit style=plain value="b" line="# line"
            SCALAR implicit quoted_implicit style=plain value="c"
            SEQ-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="d"
            SEQ-END
            MAP-END
            DOC-END implicit
            FINISH
            STREAM-END
        "##,
        "# head\na: b # line\nc:\n    - d\n---\n# head\na: b # line\nc:\n    - d\n"
    );

    case!(
        multiline_key_kyaml,
        kyaml(),
        r#"
            STREAM-START
            DOC-START implicit
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=literal value="a\nb"
            SCALAR implicit quoted_implicit style=plain value="v"
            MAP-END
            DOC-END implicit
            FINISH
            STREAM-END
        "#,
        "? |-\n  a\n  b\n: v\n"
    );

    case!(
        literal_leading_newline_kyaml,
        kyaml(),
        r#"
            STREAM-START
            DOC-START implicit
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="_"
            SCALAR implicit quoted_implicit style=literal value="\na:\n"
            MAP-END
            DOC-END implicit
            FINISH
            STREAM-END
        "#,
        "_: |2\n\n  a:\n"
    );

    case!(
        literal_leading_newline_v3,
        v3(),
        r#"
            STREAM-START
            DOC-START implicit
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="_"
            SCALAR implicit quoted_implicit style=literal value="\na:\n"
            MAP-END
            DOC-END implicit
            FINISH
            STREAM-END
        "#,
        "_: |4\n\n    a:\n"
    );

    case!(
        folded_leading_newline_kyaml,
        kyaml(),
        r#"
            STREAM-START
            DOC-START implicit
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="_"
            SCALAR implicit quoted_implicit style=folded value="\nfolded text\nmore\n"
            MAP-END
            DOC-END implicit
            FINISH
            STREAM-END
        "#,
        "_: >2\n\n  folded text\n\n  more\n\n"
    );

    case!(
        built_styles_kyaml,
        kyaml(),
        r#"
            STREAM-START
            DOC-START implicit
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="lit"
            SCALAR implicit quoted_implicit style=literal value="x\ny\n"
            SCALAR implicit quoted_implicit style=plain value="litstrip"
            SCALAR implicit quoted_implicit style=literal value="x\ny"
            SCALAR implicit quoted_implicit style=plain value="litkeep"
            SCALAR implicit quoted_implicit style=literal value="x\n\n"
            SCALAR implicit quoted_implicit style=plain value="litspace"
            SCALAR implicit quoted_implicit style=literal value="  x\n"
            SCALAR implicit quoted_implicit style=plain value="littrail"
            SCALAR implicit quoted_implicit style=literal value="x \n"
            SCALAR implicit quoted_implicit style=plain value="litempty"
            SCALAR implicit quoted_implicit style=literal value=""
            SCALAR implicit quoted_implicit style=plain value="fold"
            SCALAR implicit quoted_implicit style=folded value="aaa bbb\nccc\n\nddd\n"
            SCALAR implicit quoted_implicit style=plain value="fold_leading_space"
            SCALAR implicit quoted_implicit style=folded value="a\n  b\nc\n"
            SCALAR implicit quoted_implicit style=plain value="single"
            SCALAR implicit quoted_implicit style=single value="it's"
            SCALAR implicit quoted_implicit style=plain value="single_ml"
            SCALAR implicit quoted_implicit style=single value="a\nb"
            SCALAR implicit quoted_implicit style=plain value="double"
            SCALAR implicit quoted_implicit style=double value="q\"\\\a\x1b\u0085\ufeff"
            SCALAR implicit quoted_implicit style=plain value="double_ml"
            SCALAR implicit quoted_implicit style=double value="a\nb\n"
            SCALAR implicit quoted_implicit style=plain value="flowempty"
            SEQ-START implicit style=flow
            SCALAR implicit quoted_implicit style=double value=""
            SCALAR implicit quoted_implicit style=plain value="x"
            SEQ-END
            MAP-END
            DOC-END implicit
            FINISH
            STREAM-END
        "#,
        "lit: |\n  x\n  y\nlitstrip: |-\n  x\n  y\nlitkeep: |+\n  x\n\nlitspace: |2\n    x\nlittrail: \"x \\n\"\nlitempty: \"\"\nfold: >\n  aaa bbb\n\n  ccc\n\n\n  ddd\n\nfold_leading_space: >\n  a\n\n    b\n  c\n\nsingle: 'it''s'\nsingle_ml: 'a\n\n  b'\ndouble: \"q\\\"\\\\\\a\\e\\N\\uFEFF\"\ndouble_ml: \"a\\nb\\n\"\nflowempty: [\"\", x]\n"
    );

    case!(
        built_styles_v3,
        v3(),
        r#"
            STREAM-START
            DOC-START implicit
            MAP-START implicit style=block
            SCALAR implicit quoted_implicit style=plain value="lit"
            SCALAR implicit quoted_implicit style=literal value="x\ny\n"
            SCALAR implicit quoted_implicit style=plain value="litstrip"
            SCALAR implicit quoted_implicit style=literal value="x\ny"
            SCALAR implicit quoted_implicit style=plain value="litkeep"
            SCALAR implicit quoted_implicit style=literal value="x\n\n"
            SCALAR implicit quoted_implicit style=plain value="litspace"
            SCALAR implicit quoted_implicit style=literal value="  x\n"
            SCALAR implicit quoted_implicit style=plain value="littrail"
            SCALAR implicit quoted_implicit style=literal value="x \n"
            SCALAR implicit quoted_implicit style=plain value="litempty"
            SCALAR implicit quoted_implicit style=literal value=""
            SCALAR implicit quoted_implicit style=plain value="fold"
            SCALAR implicit quoted_implicit style=folded value="aaa bbb\nccc\n\nddd\n"
            SCALAR implicit quoted_implicit style=plain value="fold_leading_space"
            SCALAR implicit quoted_implicit style=folded value="a\n  b\nc\n"
            SCALAR implicit quoted_implicit style=plain value="single"
            SCALAR implicit quoted_implicit style=single value="it's"
            SCALAR implicit quoted_implicit style=plain value="single_ml"
            SCALAR implicit quoted_implicit style=single value="a\nb"
            SCALAR implicit quoted_implicit style=plain value="double"
            SCALAR implicit quoted_implicit style=double value="q\"\\\a\x1b\u0085\ufeff"
            SCALAR implicit quoted_implicit style=plain value="double_ml"
            SCALAR implicit quoted_implicit style=double value="a\nb\n"
            SCALAR implicit quoted_implicit style=plain value="flowempty"
            SEQ-START implicit style=flow
            SCALAR implicit quoted_implicit style=double value=""
            SCALAR implicit quoted_implicit style=plain value="x"
            SEQ-END
            MAP-END
            DOC-END implicit
            FINISH
            STREAM-END
        "#,
        "lit: |\n    x\n    y\nlitstrip: |-\n    x\n    y\nlitkeep: |+\n    x\n\nlitspace: |4\n      x\nlittrail: \"x \\n\"\nlitempty: \"\"\nfold: >\n    aaa bbb\n\n    ccc\n\n\n    ddd\n\nfold_leading_space: >\n    a\n\n      b\n    c\n\nsingle: 'it''s'\nsingle_ml: 'a\n\n    b'\ndouble: \"q\\\"\\\\\\a\\e\\N\\uFEFF\"\ndouble_ml: \"a\\nb\\n\"\nflowempty: [\"\", x]\n"
    );

    case!(
        root_literal_keep_kyaml,
        kyaml(),
        r#"
            STREAM-START
            DOC-START implicit
            SCALAR implicit quoted_implicit style=literal value="a\nb\n\n"
            DOC-END implicit
            FINISH
            STREAM-END
        "#,
        "|+\n  a\n  b\n\n"
    );

    case!(
        explicit_doc_markers,
        kyaml(),
        r#"
            STREAM-START
            DOC-START
            MAP-START style=block
            SCALAR implicit value="a"
            SCALAR implicit value="b"
            MAP-END
            DOC-END
            DOC-START
            SCALAR implicit value="c"
            DOC-END implicit
            STREAM-END
        "#,
        "---\na: b\n...\n---\nc\n...\n"
    );

    case!(
        open_ended_root_plain,
        kyaml(),
        r#"
            STREAM-START
            DOC-START implicit
            SCALAR implicit value="plain"
            DOC-END implicit
            STREAM-END
        "#,
        "plain\n...\n"
    );

    case!(
        open_ended_keep_literal,
        kyaml(),
        r#"
            STREAM-START
            DOC-START implicit
            SCALAR implicit style=literal value="x\n\n"
            DOC-END implicit
            DOC-START implicit
            SCALAR implicit value="y"
            DOC-END implicit
            STREAM-END
        "#,
        "! |+\n  x\n\n---\ny\n...\n"
    );

    case!(
        directives,
        kyaml(),
        r#"
            STREAM-START
            DOC-START version=1.1 tagdir="!e!","tag:example.com,2000:"
            MAP-START style=block
            SCALAR tag="tag:example.com,2000:foo" value="a"
            SCALAR tag="tag:yaml.org,2002:str" value="b"
            SCALAR tag="tag:other.org,2000:a b" value="c"
            SEQ-START tag="!local" style=block
            SCALAR implicit value="d"
            SEQ-END
            MAP-END
            DOC-END implicit
            DOC-START tagdir="!f!","tag:f.org:"
            SCALAR tag="tag:f.org:x" value="v"
            DOC-END implicit
            STREAM-END
        "#,
        "%YAML 1.1\n%TAG !e! tag:example.com,2000:\n---\n!e!foo a: !!str b\n!<tag:other.org,2000:a%20b> c: !local\n- d\n%TAG !f! tag:f.org:\n---\n!f!x v\n...\n"
    );

    case!(
        canonical,
        opts(2, -1, false, true, true, LineBreak::Ln),
        r#"
            STREAM-START
            DOC-START implicit
            MAP-START style=block
            SCALAR implicit value="a"
            SEQ-START style=block
            SCALAR implicit value="b"
            SCALAR implicit value="c"
            SEQ-END
            SCALAR implicit value="d"
            MAP-START
            MAP-END
            MAP-END
            DOC-END implicit
            STREAM-END
        "#,
        "---\n{\n  ? ! \"a\"\n  : [\n    ! \"b\",\n    ! \"c\",\n  ],\n  ? ! \"d\"\n  : {},\n}\n"
    );

    case!(
        width_folding,
        opts(2, 20, true, false, true, LineBreak::Ln),
        r#"
            STREAM-START
            DOC-START implicit
            MAP-START style=block
            SCALAR implicit value="plain"
            SCALAR implicit value="the quick brown fox jumps over the lazy dog again and again"
            SCALAR implicit value="single"
            SCALAR implicit style=single value="the quick brown fox jumps over the lazy dog again"
            SCALAR implicit value="double"
            SCALAR implicit style=double value="the quick brown fox  jumps over the  lazy dog again"
            SCALAR implicit value="folded"
            SCALAR implicit style=folded value="the quick brown fox jumps over the lazy dog again\nand a second line that is long\n"
            SCALAR implicit value="flow"
            SEQ-START style=flow
            SCALAR implicit value="aaaaaaaa"
            SCALAR implicit value="bbbbbbbbbb"
            SCALAR implicit value="cccccccccc"
            SCALAR implicit value="dddddddd"
            SEQ-END
            SCALAR implicit value="flowmap"
            MAP-START style=flow
            SCALAR implicit value="aaaaaaaa"
            SCALAR implicit value="bbbbbbbbbb"
            SCALAR implicit value="cccccccccc"
            SCALAR implicit value="dddddddd"
            MAP-END
            MAP-END
            DOC-END implicit
            STREAM-END
        "#,
        "plain: the quick brown\n  fox jumps over the lazy\n  dog again and again\nsingle: ! 'the quick brown\n  fox jumps over the lazy\n  dog again'\ndouble: ! \"the quick brown\n  fox  jumps over the\n  \\ lazy dog again\"\nfolded: ! >\n  the quick brown fox\n  jumps over the lazy\n  dog again\n\n  and a second line that\n  is long\n\nflow: [aaaaaaaa, bbbbbbbbbb,\n  cccccccccc, dddddddd]\nflowmap: {aaaaaaaa: bbbbbbbbbb,\n  cccccccccc: dddddddd}\n"
    );

    case!(
        width_small_resets_to_80,
        opts(2, 3, true, false, true, LineBreak::Ln),
        r#"
            STREAM-START
            DOC-START implicit
            SCALAR implicit value="aaaa bbbb cccc dddd eeee ffff gggg hhhh iiii jjjj kkkk llll mmmm nnnn oooo pppp qqqq rrrr"
            DOC-END implicit
            STREAM-END
        "#,
        "aaaa bbbb cccc dddd eeee ffff gggg hhhh iiii jjjj kkkk llll mmmm nnnn oooo pppp qqqq\n  rrrr\n...\n"
    );

    case!(
        crlf,
        opts(2, -1, true, false, true, LineBreak::CrLn),
        r##"
            STREAM-START
            DOC-START implicit
            MAP-START style=block head="# head"
            SCALAR implicit value="a" line="# line"
            SEQ-START style=block
            SCALAR implicit value="b"
            SCALAR implicit style=literal value="x\ny\n"
            SEQ-END
            MAP-END
            DOC-END implicit
            DOC-START implicit
            SCALAR implicit value="c"
            DOC-END implicit
            FINISH
            STREAM-END
        "##,
        "# head\r\na: # line\r\n- b\r\n- ! |\r\n  x\r\n  y\r\n---\r\nc\r\n"
    );

    case!(
        cr,
        opts(2, -1, true, false, true, LineBreak::Cr),
        r#"
            STREAM-START
            DOC-START implicit
            SEQ-START style=block
            SCALAR implicit value="b"
            SCALAR implicit style=double value="x\ny"
            SEQ-END
            DOC-END implicit
            STREAM-END
        "#,
        "- b\r- ! \"x\\ny\"\r"
    );

    case!(
        no_unicode,
        opts(2, -1, true, false, false, LineBreak::Ln),
        r#"
            STREAM-START
            DOC-START implicit
            MAP-START style=block
            SCALAR implicit value="k"
            SCALAR implicit value="héllo 日本 😀"
            SCALAR implicit value="single"
            SCALAR implicit style=single value="é"
            MAP-END
            DOC-END implicit
            STREAM-END
        "#,
        "k: ! \"h\\xE9llo \\u65E5\\u672C \\U0001F600\"\nsingle: ! \"\\xE9\"\n"
    );

    case!(
        indent_3_compact,
        opts(3, -1, true, false, true, LineBreak::Ln),
        r#"
            STREAM-START
            DOC-START implicit
            MAP-START style=block
            SCALAR implicit value="a"
            MAP-START style=block
            SCALAR implicit value="b"
            SEQ-START style=block
            MAP-START style=block
            SCALAR implicit value="c"
            SCALAR implicit value="d"
            SCALAR implicit value="e"
            SEQ-START style=block
            SCALAR implicit value="f"
            SEQ-END
            MAP-END
            SEQ-END
            MAP-END
            MAP-END
            DOC-END implicit
            STREAM-END
        "#,
        "a:\n   b:\n    - c: d\n      e:\n       - f\n"
    );

    case!(
        indent_out_of_range,
        opts(12, -1, false, false, true, LineBreak::Ln),
        r#"
            STREAM-START
            DOC-START implicit
            MAP-START style=block
            SCALAR implicit value="a"
            MAP-START style=block
            SCALAR implicit value="b"
            SCALAR implicit style=literal value=" x\n"
            MAP-END
            MAP-END
            DOC-END implicit
            STREAM-END
        "#,
        "a:\n  b: ! |2\n     x\n"
    );

    case!(
        complex_keys_block,
        kyaml(),
        r#"
            STREAM-START
            DOC-START implicit
            MAP-START style=block
            SCALAR implicit value="a\nb"
            SCALAR implicit value="plain multi"
            SEQ-START style=block
            SCALAR implicit value="x"
            SEQ-END
            SCALAR implicit value="seq key"
            MAP-START style=block
            SCALAR implicit value="k"
            SCALAR implicit value="v"
            MAP-END
            SCALAR implicit value="map key"
            SEQ-START style=block
            SEQ-END
            SCALAR implicit value="empty seq key"
            ALIAS anchor="anc"
            SCALAR implicit value="alias key"
            MAP-END
            DOC-END implicit
            STREAM-END
        "#,
        "? ! 'a\n\n  b'\n: plain multi\n? - x\n: seq key\n? k: v\n: map key\n[]: empty seq key\n*anc: alias key\n"
    );

    case!(
        flow_multiline_keys,
        kyaml(),
        r#"
            STREAM-START
            DOC-START implicit
            MAP-START style=flow
            SCALAR implicit style=literal value="a\nb"
            SCALAR implicit style=literal value="lit\n"
            SCALAR implicit value=""
            SCALAR implicit value=""
            SCALAR implicit style=folded value="fold"
            SCALAR implicit value="x"
            MAP-END
            DOC-END implicit
            STREAM-END
        "#,
        "{? ! \"a\\nb\" : ! \"lit\\n\", ! '': ! '', ! \"fold\": x}\n"
    );

    case!(
        flow_comments,
        kyaml(),
        r##"
            STREAM-START
            DOC-START implicit
            MAP-START style=block
            SCALAR implicit value="seq"
            SEQ-START style=flow
            SCALAR implicit value="a" line="# la"
            SCALAR implicit value="b" head="# hb"
            SCALAR implicit value="c" foot="# fc"
            SCALAR implicit value="d"
            SEQ-END line="# after"
            SCALAR implicit value="map"
            MAP-START style=flow
            SCALAR implicit value="k1"
            SCALAR implicit value="v1" line="# l1"
            SCALAR implicit value="k2" head="# h2"
            SCALAR implicit value="v2"
            MAP-END
            SCALAR implicit value="map2"
            MAP-START style=flow
            SCALAR implicit value="k"
            SCALAR implicit value="v"
            MAP-END foot="# mf"
            MAP-END
            DOC-END implicit
            STREAM-END
        "##,
        "seq: [a, # la\n  # hb\n  b, c,\n  # fc\n\n  d] # after\nmap: {k1: v1, # l1\n  # h2\n  k2: v2}\nmap2: {k: v,}\n# mf\n"
    );

    case!(
        key_line_comments,
        kyaml(),
        r##"
            STREAM-START
            DOC-START implicit
            MAP-START style=block
            SCALAR implicit value="a" line="# key a"
            SCALAR implicit value="va"
            SCALAR implicit value="b" line="# key b"
            SCALAR implicit value="vb" line="# val b"
            SCALAR implicit value="c" line="# key c"
            MAP-START style=block
            SCALAR implicit value="x"
            SCALAR implicit value="y"
            MAP-END
            SCALAR implicit value="d" line="# key d"
            SEQ-START style=flow
            SCALAR implicit value="x"
            SEQ-END
            SCALAR implicit value="e" line="# key e"
            MAP-START style=flow
            SCALAR implicit value="x"
            SCALAR implicit value="y"
            MAP-END
            SCALAR implicit value="f" line="# key f"
            SEQ-START style=block
            SCALAR implicit value="x"
            SEQ-END
            MAP-END
            DOC-END implicit
            STREAM-END
        "##,
        "a: va # key a\nb: vb # val b\nc: # key c\n  x: y\nd: [x]\ne: {x: y}\nf: # key f\n- x\n"
    );

    case!(
        tail_comments,
        kyaml(),
        r##"
            STREAM-START
            DOC-START implicit
            MAP-START style=block
            SCALAR implicit value="a"
            MAP-START style=block
            SCALAR implicit value="b"
            SCALAR implicit value="c"
            MAP-END
            SCALAR implicit value="d" tail="# foot of a"
            SCALAR implicit value="e"
            MAP-END tail="# tail at end"
            DOC-END implicit
            STREAM-END
        "##,
        "a:\n  b: c\n# foot of a\n\nd: e\n# tail at end\n"
    );

    case!(
        multiline_comments,
        kyaml(),
        r##"
            STREAM-START
            DOC-START implicit head="# one\n\n# two"
            MAP-START style=block
            SCALAR implicit value="a" head="first\nsecond"
            SCALAR implicit value="b" line="# l" foot="# f1\n# f2"
            SCALAR implicit value="c"
            SCALAR implicit value="d"
            MAP-END
            DOC-END implicit foot="# doc foot"
            STREAM-END
        "##,
        "# one\n\n# two\n\n# first\n# second\na: b # l\n# f1\n# f2\n\nc: d\n\n# doc foot\n"
    );

    case!(
        doc_head_comment_explicit,
        kyaml(),
        r##"
            STREAM-START
            DOC-START implicit head="# first doc"
            SCALAR implicit value="a"
            DOC-END implicit
            DOC-START implicit head="# second doc"
            SEQ-START style=block
            SCALAR implicit value="b"
            SEQ-END
            DOC-END implicit
            FINISH
            STREAM-END
        "##,
        "# first doc\n\na\n---\n# second doc\n\n- b\n"
    );

    case!(
        double_escapes,
        kyaml(),
        r#"
            STREAM-START
            DOC-START implicit
            SEQ-START style=block
            SCALAR implicit style=double value="\x00\a\b\t\n\v\f\r\x1b\"\\\u0085\u00a0\u2028\u2029\x7f\x10\ufffe\U0001f600 end"
            SCALAR implicit style=double value="\ufeffbom"
            SCALAR implicit style=double value=" lead  and  trail "
            SEQ-END
            DOC-END implicit
            STREAM-END
        "#,
        "- ! \"\\0\\a\\b\\t\\n\\v\\f\\r\\e\\\"\\\\\\N \\L\\P\\x7F\\x10\\uFFFE\\U0001F600 end\"\n- ! \"\\uFEFF\\x62\\x6F\\x6D\"\n- ! \" lead  and  trail \"\n"
    );

    case!(
        plain_not_allowed,
        kyaml(),
        r#"
            STREAM-START
            DOC-START implicit
            SEQ-START style=block
            SCALAR implicit value="..."
            SCALAR implicit value="? x"
            SCALAR implicit value="?x"
            SCALAR implicit value=":x"
            SCALAR implicit value="-x"
            SCALAR implicit value="a\tb"
            SCALAR implicit value="a\n b"
            SCALAR implicit value="a \nb"
            SCALAR implicit value="\nx"
            SCALAR implicit value="x\n"
            SCALAR implicit value="a,b"
            SCALAR implicit value="a[b]"
            SCALAR implicit value="x#y"
            SCALAR implicit value="\x01"
            SCALAR quoted_implicit value="quoted_implicit only"
            SCALAR tag="tag:yaml.org,2002:int" value="1"
            SCALAR tag="tag:yaml.org,2002:str" quoted_implicit style=double value="s"
            SEQ-END
            DOC-END implicit
            STREAM-END
        "#,
        "- ! '...'\n- ! '? x'\n- ?x\n- :x\n- -x\n- ! \"a\\tb\"\n- ! \"a\\n b\"\n- ! \"a \\nb\"\n- ! '\n\n  x'\n- ! 'x\n\n'\n- a,b\n- a[b]\n- x#y\n- ! \"\\x01\"\n- 'quoted_implicit only'\n- !!int 1\n- \"s\"\n"
    );

    case!(
        anchors_everywhere,
        kyaml(),
        r#"
            STREAM-START
            DOC-START implicit
            MAP-START style=block anchor="root"
            SCALAR implicit value="a"
            SEQ-START style=block anchor="s1" tag="!seq"
            SCALAR implicit anchor="x" value="1"
            ALIAS anchor="x"
            MAP-START style=block anchor="m1"
            SCALAR implicit value="k"
            ALIAS anchor="root"
            MAP-END
            SEQ-END
            SCALAR implicit value="b"
            SEQ-START style=flow anchor="fs"
            ALIAS anchor="s1"
            SEQ-END
            SCALAR implicit value="c"
            MAP-START anchor="em"
            MAP-END
            MAP-END
            DOC-END implicit
            STREAM-END
        "#,
        "&root\na: &s1 !seq\n- &x 1\n- *x\n- &m1\n  k: *root\nb: &fs [*s1]\nc: &em {}\n"
    );

    case!(
        seq_in_seq_in_map_compact,
        kyaml(),
        r#"
            STREAM-START
            DOC-START implicit
            MAP-START style=block
            SCALAR implicit value="a"
            SEQ-START style=block
            SEQ-START style=block
            SCALAR implicit value="x"
            SCALAR implicit value="y"
            SEQ-END
            MAP-START style=block
            SCALAR implicit value="k"
            SEQ-START style=block
            SCALAR implicit value="z"
            SEQ-END
            MAP-END
            SEQ-END
            MAP-END
            DOC-END implicit
            STREAM-END
        "#,
        "a:\n- - x\n  - y\n- k:\n  - z\n"
    );

    case!(
        seq_key_compact,
        kyaml(),
        r#"
            STREAM-START
            DOC-START implicit
            MAP-START style=block
            SEQ-START style=block
            SCALAR implicit value="x"
            SEQ-END
            SEQ-START style=block
            SCALAR implicit value="y"
            SEQ-END
            MAP-END
            DOC-END implicit
            STREAM-END
        "#,
        "? - x\n: - y\n"
    );

    case!(
        seq_with_anchor_value_compact,
        kyaml(),
        r##"
            STREAM-START
            DOC-START implicit
            MAP-START style=block
            SCALAR implicit value="a"
            SEQ-START style=block anchor="s" tag="!t"
            SCALAR implicit value="x"
            SEQ-END
            SCALAR implicit value="b" line="# kc"
            SEQ-START style=block
            SCALAR implicit value="y"
            SEQ-END
            MAP-END
            DOC-END implicit
            STREAM-END
        "##,
        "a: &s !t\n- x\nb: # kc\n- y\n"
    );

    case!(
        literal_variants_v3,
        v3(),
        r#"
            STREAM-START
            DOC-START implicit
            MAP-START style=block
            SCALAR implicit value="_"
            SCALAR implicit style=literal value="\na:\n"
            SCALAR implicit value="crlf"
            SCALAR implicit style=literal value="a\r\nb\r\n"
            SCALAR implicit value="nel"
            SCALAR implicit style=literal value="a\u0085b"
            SCALAR implicit value="ls"
            SCALAR implicit style=folded value="a\u2028b\n\n"
            SCALAR implicit value="onlybreak"
            SCALAR implicit style=literal value="\n"
            SCALAR implicit value="fold_breaks"
            SCALAR implicit style=folded value="a\n\n\nb\n c\nd"
            MAP-END
            DOC-END implicit
            STREAM-END
        "#,
        "_: ! |4\n\n    a:\ncrlf: ! \"a\\r\\nb\\r\\n\"\nnel: ! \"a\\Nb\"\nls: ! >+\n    a\u{2028}    b\n\n\nonlybreak: ! |4+\n\nfold_breaks: ! >-\n    a\n\n\n\n    b\n\n     c\n    d\n"
    );

    case_err!(
        err_no_stream_start,
        kyaml(),
        r#"
            DOC-START implicit
            SCALAR implicit value="x"
        "#,
        "",
        "expected STREAM-START"
    );

    case_err!(
        err_expect_doc_start,
        kyaml(),
        r#"
            STREAM-START
            SCALAR implicit value="x"
        "#,
        "",
        "expected DOCUMENT-START or STREAM-END"
    );

    case_err!(
        err_after_stream_end,
        kyaml(),
        r#"
            STREAM-START
            STREAM-END
            STREAM-START
        "#,
        "",
        "expected nothing after STREAM-END"
    );

    case_err!(
        err_expect_doc_end,
        kyaml(),
        r#"
            STREAM-START
            DOC-START implicit
            SCALAR implicit value="x"
            SCALAR implicit value="y"
        "#,
        "x",
        "expected DOCUMENT-END"
    );

    case_err!(
        err_expect_node,
        kyaml(),
        r#"
            STREAM-START
            DOC-START implicit
            DOC-END implicit
        "#,
        "",
        "expected SCALAR, SEQUENCE-START, MAPPING-START, or ALIAS, but got document end"
    );

    case_err!(
        err_expect_node_in_map,
        kyaml(),
        r#"
            STREAM-START
            DOC-START implicit
            MAP-START style=block
            SCALAR implicit value="a"
            SEQ-END
        "#,
        "a:",
        "expected SCALAR, SEQUENCE-START, MAPPING-START, or ALIAS, but got sequence end"
    );

    case_err!(
        err_no_implicit,
        kyaml(),
        r#"
            STREAM-START
            DOC-START implicit
            SCALAR value="x"
        "#,
        "",
        "neither tag nor implicit flags are specified"
    );

    case_err!(
        err_empty_alias,
        kyaml(),
        r#"
            STREAM-START
            DOC-START implicit
            ALIAS
        "#,
        "",
        "alias value must not be empty"
    );

    case_err!(
        err_bad_anchor,
        kyaml(),
        r#"
            STREAM-START
            DOC-START implicit
            SCALAR implicit anchor="a b" value="x"
        "#,
        "",
        "anchor value must contain alphanumerical characters only"
    );

    case_err!(
        err_bad_alias,
        kyaml(),
        r#"
            STREAM-START
            DOC-START implicit
            ALIAS anchor="a.b"
        "#,
        "",
        "alias value must contain alphanumerical characters only"
    );

    case_err!(
        err_version,
        kyaml(),
        r#"
            STREAM-START
            DOC-START version=1.2
            SCALAR implicit value="x"
        "#,
        "",
        "incompatible %YAML directive"
    );

    case_err!(
        err_tag_handle_start,
        kyaml(),
        r#"
            STREAM-START
            DOC-START tagdir="e!","x:"
            SCALAR implicit value="x"
        "#,
        "",
        "tag handle must start with '!'"
    );

    case_err!(
        err_tag_handle_end,
        kyaml(),
        r#"
            STREAM-START
            DOC-START tagdir="!e","x:"
            SCALAR implicit value="x"
        "#,
        "",
        "tag handle must end with '!'"
    );

    case_err!(
        err_tag_handle_alpha,
        kyaml(),
        r#"
            STREAM-START
            DOC-START tagdir="!e.f!","x:"
            SCALAR implicit value="x"
        "#,
        "",
        "tag handle must contain alphanumerical characters only"
    );

    case_err!(
        err_tag_prefix_empty,
        kyaml(),
        r#"
            STREAM-START
            DOC-START tagdir="!e!",""
            SCALAR implicit value="x"
        "#,
        "",
        "tag prefix must not be empty"
    );

    case_err!(
        err_duplicate_tag,
        kyaml(),
        r#"
            STREAM-START
            DOC-START tagdir="!e!","x:" tagdir="!e!","y:"
            SCALAR implicit value="x"
        "#,
        "",
        "duplicate %TAG directive"
    );

    /// Emits each `(input, kyaml output, yaml.v3-format output)` case in
    /// both formats, checks the bytes and that they parse, and hands
    /// `check` the input's documents, the output and its re-parse.
    fn check_emits(
        cases: &[(&str, &str, &str)],
        check: impl Fn(crate::yaml::Format, &str, &[crate::yaml::Node], &str, &[crate::yaml::Node]),
    ) {
        use crate::yaml::{emit_stream, parse_stream, Format};
        for &(input, kyaml, v3) in cases {
            let docs = parse_stream(input).expect("parses");
            for (format, want) in [(Format::Kyaml, kyaml), (Format::YamlV3, v3)] {
                let out = emit_stream(&docs, format).expect("emits");
                assert_eq!(out, want, "{format:?} of {input:?}");
                let again = parse_stream(&out).expect("the output parses");
                check(
                    format,
                    &format!("{format:?} of {input:?}"),
                    &docs,
                    &out,
                    &again,
                );
            }
        }
    }

    /// A block scalar that starts with a line break needs an indentation
    /// indicator; it must say where the content really is, relative to the
    /// enclosing collection. yaml.v3 (indent 4) writes `- |4` above content
    /// indented by 2, which does not parse; we write `- |2`. kyaml's output
    /// (indent 2) is what it always was, as the oracle gives it.
    #[test]
    fn block_scalar_indentation_indicator_matches_the_content() {
        use crate::yaml::emit_stream;
        let cases = [
            // (input, kyaml output (the oracle's), yaml.v3-format output)
            ("- |\n\n f", "- |2-\n\n  f\n", "- |2-\n\n  f\n"),
            (
                "- a: |\n\n    f\n",
                "- a: |2\n\n    f\n",
                "- a: |2\n\n    f\n",
            ),
            (
                "a:\n- - |\n\n    f\n",
                "a:\n- - |2\n\n    f\n",
                "a:\n    - - |2\n\n        f\n",
            ),
            ("a: |\n\n  f\n", "a: |2\n\n  f\n", "a: |4\n\n    f\n"),
            ("|\n\n f\n", "|2\n\n  f\n", "|4\n\n    f\n"),
        ];
        check_emits(&cases, |format, what, _, out, again| {
            let second = emit_stream(again, format).expect("emits");
            assert_eq!(second, out, "{what} is stable");
        });
    }

    /// A literal or folded block whose content starts with a tab gets an
    /// indentation indicator: yaml.v3 writes none (`a: |-\n  \tx`) and
    /// then cannot read its own output back.
    #[test]
    fn block_scalar_starting_with_a_tab_has_an_indentation_indicator() {
        let cases = [
            // (input, kyaml output, yaml.v3-format output)
            ("a: |2-\n  \tx\n", "a: |2-\n  \tx\n", "a: |4-\n    \tx\n"),
            ("a: |2-\n  \t", "a: |2-\n  \t\n", "a: |4-\n    \t\n"),
            (
                "a: >2\n  \tx\n  y\n",
                "a: >2\n  \tx\n  y\n",
                "a: >4\n    \tx\n    y\n",
            ),
            ("- |2\n  \tx\n", "- |2\n  \tx\n", "- |2\n  \tx\n"),
            // A tab after the first line needs no indicator (as yaml.v3).
            (
                "a: |\n  x\n  \ty\n",
                "a: |\n  x\n  \ty\n",
                "a: |\n    x\n    \ty\n",
            ),
        ];
        check_emits(&cases, |_, what, docs, _, again| {
            assert_eq!(again[0].content, docs[0].content, "{what} reads back");
        });
    }

    /// An empty flow collection as a simple key keeps its line comment on
    /// the key's line: yaml.v3 writes `{} # c` and then `:` on the next
    /// line, which does not parse, in a block mapping and in a flow one. A
    /// non-empty one is written as an explicit `?` key, where the comment
    /// is fine (yaml.v3's output, kept).
    #[test]
    fn an_empty_flow_collection_key_keeps_its_comment_on_its_line() {
        use crate::yaml::emit_stream;
        let cases = [
            // (input, kyaml output, yaml.v3-format output)
            ("{}: # c\n", "{}: # c\n", "{}: # c\n"),
            ("[]: # c\n", "[]: # c\n", "[]: # c\n"),
            ("a:\n  {}: # c\n", "a:\n  {}: # c\n", "a:\n    {}: # c\n"),
            (
                "- {}: # c\n  b: 1\n",
                "- {}: # c\n  b: 1\n",
                "- {}: # c\n  b: 1\n",
            ),
            ("? {} # c\n: v\n", "{}: v # c\n", "{}: v # c\n"),
            ("[a]: # c\n", "? [a] # c\n:\n", "? [a] # c\n:\n"),
            // A key comment a flow value left unwritten is still pending
            // at the next key, as in yaml.v3: that key's own comment has no
            // place (yaml.v3 writes `[] #`, `: []`, `[] #`, `:`).
            ("[]: #\n []\n[]: #\n", "[]: []\n[]: #\n", "[]: []\n[]: #\n"),
            // In a flow mapping the comment goes after the value, as a
            // value's own does (yaml.v3 writes `{{} #` then `: ''}`).
            ("{{}#\n}", "{{}: '', #\n}\n", "{{}: '', #\n}\n"),
            ("{[] # c\n}", "{[]: '', # c\n}\n", "{[]: '', # c\n}\n"),
        ];
        check_emits(&cases, |format, what, _, out, again| {
            assert_eq!(
                emit_stream(again, format).expect("emits"),
                out,
                "{what} is stable"
            );
        });
    }

    /// An alias as a simple key keeps the comments where yaml.v3 puts them:
    /// its own line comment is the key's, and the value's stays the
    /// value's (only empty flow collection keys take their end event's
    /// comment). The expected outputs are tools/kyaml-oracle's.
    #[test]
    fn an_alias_key_leaves_the_value_its_comment() {
        use crate::yaml::emit_stream;
        let cases = [
            // (input, kyaml output, yaml.v3-format output)
            (
                "- &a # one\n- *a : v # two\n",
                "- &a\n- *a: v # two\n",
                "- &a\n- *a: v # two\n",
            ),
            (
                "- &a # one\n- *a : v\n",
                "- &a\n- *a: v # one\n",
                "- &a\n- *a: v # one\n",
            ),
            (
                "- &a # one\n- *a : # two\n  b: c\n",
                "- &a\n- *a: # one\n  # two\n  b: c\n",
                "- &a\n- *a: # one\n  # two\n  b: c\n",
            ),
            (
                "- &a x\n- *a : [] # two\n",
                "- &a x\n- *a: [] # two\n",
                "- &a x\n- *a: [] # two\n",
            ),
            (
                "&a x: 1\n*a : v # two\n",
                "&a x: 1\n*a: v # two\n",
                "&a x: 1\n*a: v # two\n",
            ),
        ];
        check_emits(&cases, |format, what, _, out, again| {
            assert_eq!(
                emit_stream(again, format).expect("emits"),
                out,
                "{what} is stable"
            );
        });
    }

    /// A tag that is a whole handle's prefix (`!<!!>` reads as the tag
    /// `tag:yaml.org,2002:`): yaml.v3 writes the handle alone (`!!`), which
    /// does not parse; we write the tag verbatim. A tag with a suffix is
    /// written as yaml.v3 writes it.
    #[test]
    fn a_tag_that_is_a_handle_prefix_is_written_verbatim() {
        use crate::yaml::emit_stream;
        let cases = [
            (
                "!<!!>",
                "!<tag:yaml.org,2002:>
",
                "!<tag:yaml.org,2002:>
",
            ),
            (
                "!<tag:yaml.org,2002:>",
                "!<tag:yaml.org,2002:>
",
                "!<tag:yaml.org,2002:>
",
            ),
            (
                "a: !<!!> b
",
                "a: !<tag:yaml.org,2002:> b
",
                "a: !<tag:yaml.org,2002:> b
",
            ),
            (
                "!<!!x> a
",
                "!!x a
",
                "!!x a
",
            ),
            (
                "!<!> a
", "a
", "a
",
            ),
        ];
        check_emits(&cases, |format, what, docs, out, again| {
            assert_eq!(again, docs, "{what} reads back as the same nodes");
            assert_eq!(
                emit_stream(again, format).expect("emits"),
                out,
                "{what} is stable"
            );
        });
    }

    /// A key's line comment before an anchored or tagged block collection:
    /// yaml.v3 writes the anchor and tag after the comment's line break, at
    /// the key's column (`a: # hi\n&x\n  c: d`), which does not parse. We
    /// write them before the comment. Without an anchor or tag the output is
    /// yaml.v3's (the last case). A second round trip moves the comment onto
    /// the first entry, as yaml.v3 does for `a: &x # hi` input.
    #[test]
    fn key_line_comment_after_anchor_and_tag_of_a_block_collection() {
        use crate::yaml::emit_stream;
        let cases = [
            // (input, kyaml output, yaml.v3-format output)
            (
                "a: !t # \nb: &x\n  c: d\n",
                "a: !t\nb: &x # \n  c: d\n",
                "a: !t\nb: &x # \n    c: d\n",
            ),
            (
                "a: # hi\n  &x\n  c: d\n",
                "a: &x # hi\n  c: d\n",
                "a: &x # hi\n    c: d\n",
            ),
            (
                "a: !t # hi\nb: &x\n- c\n",
                "a: !t\nb: &x # hi\n- c\n",
                "a: !t\nb: &x # hi\n    - c\n",
            ),
            (
                "a: # hi\n  !t\n  c: d\n",
                "a: !t # hi\n  c: d\n",
                "a: !t # hi\n    c: d\n",
            ),
            (
                "a: # hi\n  &x !t\n  - c\n",
                "a: &x !t # hi\n- c\n",
                "a: &x !t # hi\n    - c\n",
            ),
            (
                "- a: # hi\n    &x\n    c: d\n",
                "- a: &x # hi\n    c: d\n",
                "- a: &x # hi\n    c: d\n",
            ),
            (
                "a: # hi\n  c: d\n",
                "a: # hi\n  c: d\n",
                "a: # hi\n    c: d\n",
            ),
        ];
        check_emits(&cases, |format, what, _, out, again| {
            // The same document, its comment moved: the same text without
            // comments.
            let second = emit_stream(again, format).expect("emits");
            let uncommented = |t: &str| {
                t.lines()
                    .map(|l| l.split(" #").next().unwrap_or(l).trim_end().to_owned())
                    .collect::<Vec<_>>()
            };
            assert_eq!(
                uncommented(&second),
                uncommented(out),
                "{what} re-parses to the same document"
            );
        });
    }
}
