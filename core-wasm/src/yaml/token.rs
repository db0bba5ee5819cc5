//! Tokens, events, marks and styles shared by the scanner, parser and
//! emitter (`yamlh.go` of yaml.v3).

/// A position in the input: byte-independent character index, zero-based line
/// and zero-based column (counted in characters).
/// Fields are 32-bit (marks are copied into every token and event); the
/// scanner rejects inputs too long for them. Aligned to 8 bytes, a mark is
/// copied as one 16-byte move rather than an 8-byte and a 4-byte one at odd
/// offsets, which the processor often could not forward from the stores
/// that had just written them (`cargo bench --bench yaml`: 4% less time).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C, align(8))]
pub struct Mark {
    /// Character index from the start of the input.
    pub index: u32,
    /// Zero-based line.
    pub line: u32,
    /// Zero-based column, in characters.
    pub column: u32,
}

impl Mark {
    /// The mark `n` characters further on the same line.
    #[inline(always)]
    #[must_use]
    pub(crate) fn forward(self, n: u32) -> Mark {
        Mark {
            index: self.index + n,
            line: self.line,
            column: self.column + n,
        }
    }

    /// A copy of a mark that was just moved, read field by field.
    ///
    /// The scanner moves its mark with one 4-byte store per field, and
    /// tokens copy it right after. A copy read as one 16-byte load cannot
    /// be forwarded from those stores: it waits until they reach the cache,
    /// which `perf annotate` showed as the costliest instruction of the
    /// plain-scalar scanner. `black_box` keeps the compiler from merging the
    /// field reads back into one load; it changes no value.
    #[inline(always)]
    #[must_use]
    pub(crate) fn fresh_copy(&self) -> Mark {
        Mark {
            index: std::hint::black_box(self.index),
            line: self.line,
            column: std::hint::black_box(self.column),
        }
    }

    /// The mark at the start of the next line, after a line break of
    /// `chars` characters.
    #[inline(always)]
    #[must_use]
    pub(crate) fn next_line(self, chars: u32) -> Mark {
        Mark {
            index: self.index + chars,
            line: self.line + 1,
            column: 0,
        }
    }
}

/// Scalar styles (`yaml_scalar_style_t`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum ScalarStyle {
    #[default]
    Any,
    Plain,
    SingleQuoted,
    DoubleQuoted,
    Literal,
    Folded,
}

/// Sequence styles (`yaml_sequence_style_t`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum SequenceStyle {
    #[default]
    Any,
    Block,
    Flow,
}

/// Mapping styles (`yaml_mapping_style_t`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum MappingStyle {
    #[default]
    Any,
    Block,
    Flow,
}

/// Token types (`yaml_token_type_t`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum TokenType {
    #[default]
    NoToken,
    StreamStart,
    StreamEnd,
    VersionDirective,
    TagDirective,
    DocumentStart,
    DocumentEnd,
    BlockSequenceStart,
    BlockMappingStart,
    BlockEnd,
    FlowSequenceStart,
    FlowSequenceEnd,
    FlowMappingStart,
    FlowMappingEnd,
    BlockEntry,
    FlowEntry,
    Key,
    Value,
    Alias,
    Anchor,
    Tag,
    Scalar,
}

/// A token (`yaml_token_t`). `value` holds the alias/anchor name, the scalar
/// value, the tag handle or the tag-directive handle; `extra` the tag suffix
/// (Go's `suffix`) of a tag or the prefix (Go's `prefix`) of a tag directive,
/// which no token has both of; `major`/`minor` the `%YAML` version.
#[derive(Debug, Clone, Default)]
pub(crate) struct Token {
    pub(crate) typ: TokenType,
    pub(crate) start_mark: Mark,
    pub(crate) end_mark: Mark,
    pub(crate) value: Vec<u8>,
    pub(crate) extra: Vec<u8>,
    pub(crate) style: ScalarStyle,
    pub(crate) major: i8,
    pub(crate) minor: i8,
}

/// Event types (`yaml_event_type_t`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum EventType {
    #[default]
    NoEvent,
    StreamStart,
    StreamEnd,
    DocumentStart,
    DocumentEnd,
    Alias,
    Scalar,
    SequenceStart,
    SequenceEnd,
    MappingStart,
    MappingEnd,
    TailComment,
}

impl EventType {
    /// The names yaml.v3 uses in messages (`eventStrings`).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            EventType::NoEvent => "none",
            EventType::StreamStart => "stream start",
            EventType::StreamEnd => "stream end",
            EventType::DocumentStart => "document start",
            EventType::DocumentEnd => "document end",
            EventType::Alias => "alias",
            EventType::Scalar => "scalar",
            EventType::SequenceStart => "sequence start",
            EventType::SequenceEnd => "sequence end",
            EventType::MappingStart => "mapping start",
            EventType::MappingEnd => "mapping end",
            EventType::TailComment => "tail comment",
        }
    }
}

/// `%YAML` directive.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct VersionDirective {
    pub(crate) major: i8,
    pub(crate) minor: i8,
}

/// `%TAG` directive.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct TagDirective {
    pub(crate) handle: Vec<u8>,
    pub(crate) prefix: Vec<u8>,
}

/// The node style carried by an event: one of the three style enums,
/// depending on the event type (Go stores them in one `yaml_style_t`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum EventStyle {
    #[default]
    None,
    Scalar(ScalarStyle),
    Sequence(SequenceStyle),
    Mapping(MappingStyle),
}

/// An event (`yaml_event_t`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Event {
    pub(crate) typ: EventType,
    pub(crate) start_mark: Mark,
    /// Set by the parser as yaml.v3 does; nothing reads it yet.
    #[allow(dead_code)]
    pub(crate) end_mark: Mark,
    /// The `%YAML` and `%TAG` directives of a document start; `None` (no
    /// allocation) when it has none.
    pub(crate) directives: Option<Box<Directives>>,
    /// The event's comments; `None` (no allocation) when it has none, as
    /// almost every event.
    pub(crate) comments: Option<Box<Comments>>,
    pub(crate) anchor: Vec<u8>,
    pub(crate) tag: Vec<u8>,
    pub(crate) value: Vec<u8>,
    /// For document start/end: the indicator is implicit. For scalars: plain
    /// implicit. For collections: the tag is implicit.
    pub(crate) implicit: bool,
    pub(crate) quoted_implicit: bool,
    pub(crate) style: EventStyle,
}

/// The directives of a document start event.
#[derive(Debug, Clone, Default)]
pub(crate) struct Directives {
    pub(crate) version: Option<VersionDirective>,
    pub(crate) tags: Vec<TagDirective>,
}

impl Directives {
    /// The directives, boxed, or `None` when there are none.
    pub(crate) fn boxed(
        version: Option<VersionDirective>,
        tags: Vec<TagDirective>,
    ) -> Option<Box<Directives>> {
        if version.is_none() && tags.is_empty() {
            None
        } else {
            Some(Box::new(Directives { version, tags }))
        }
    }
}

/// The comments of an event (kept apart: few events have any).
#[derive(Debug, Clone, Default)]
pub(crate) struct Comments {
    pub(crate) head: Vec<u8>,
    pub(crate) line: Vec<u8>,
    pub(crate) foot: Vec<u8>,
    pub(crate) tail: Vec<u8>,
}

impl Comments {
    /// The comments, boxed, or `None` when all are empty.
    #[inline]
    pub(crate) fn boxed(
        head: Vec<u8>,
        line: Vec<u8>,
        foot: Vec<u8>,
        tail: Vec<u8>,
    ) -> Option<Box<Comments>> {
        if head.is_empty() && line.is_empty() && foot.is_empty() && tail.is_empty() {
            None
        } else {
            Some(Box::new(Comments {
                head,
                line,
                foot,
                tail,
            }))
        }
    }
}

/// No comment text.
#[cfg(test)]
const NO_TEXT: &[u8] = &[];

impl Event {
    /// The `%YAML` directive, if any.
    pub(crate) fn version_directive(&self) -> Option<VersionDirective> {
        self.directives.as_ref().and_then(|d| d.version)
    }
    /// The `%TAG` directives (empty when none).
    pub(crate) fn tag_directives(&self) -> &[TagDirective] {
        self.directives.as_ref().map_or(&[], |d| &d.tags)
    }
    /// The directives, allocated when there were none.
    #[cfg(test)]
    pub(crate) fn directives_mut(&mut self) -> &mut Directives {
        self.directives.get_or_insert_with(Box::default)
    }
    /// The comments, allocated when there were none.
    pub(crate) fn comments_mut(&mut self) -> &mut Comments {
        self.comments.get_or_insert_with(Box::default)
    }
    /// The head comment (empty when none).
    #[cfg(test)]
    pub(crate) fn head_comment(&self) -> &[u8] {
        self.comments.as_ref().map_or(NO_TEXT, |c| &c.head)
    }
    /// The line comment (empty when none).
    #[cfg(test)]
    pub(crate) fn line_comment(&self) -> &[u8] {
        self.comments.as_ref().map_or(NO_TEXT, |c| &c.line)
    }
    /// The foot comment (empty when none).
    #[cfg(test)]
    pub(crate) fn foot_comment(&self) -> &[u8] {
        self.comments.as_ref().map_or(NO_TEXT, |c| &c.foot)
    }
    /// The tail comment (empty when none).
    #[cfg(test)]
    pub(crate) fn tail_comment(&self) -> &[u8] {
        self.comments.as_ref().map_or(NO_TEXT, |c| &c.tail)
    }
    /// `event.scalar_style()`.
    pub(crate) fn scalar_style(&self) -> ScalarStyle {
        match self.style {
            EventStyle::Scalar(s) => s,
            _ => ScalarStyle::Any,
        }
    }
    /// `event.sequence_style()`.
    pub(crate) fn sequence_style(&self) -> SequenceStyle {
        match self.style {
            EventStyle::Sequence(s) => s,
            _ => SequenceStyle::Any,
        }
    }
    /// `event.mapping_style()`.
    pub(crate) fn mapping_style(&self) -> MappingStyle {
        match self.style {
            EventStyle::Mapping(s) => s,
            _ => MappingStyle::Any,
        }
    }
}
