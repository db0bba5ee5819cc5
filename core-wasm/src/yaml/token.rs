//! Tokens, events, marks and styles shared by the scanner, parser and
//! emitter (`yamlh.go` of yaml.v3).

/// A position in the input: byte-independent character index, zero-based line
/// and zero-based column (counted in characters).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Mark {
    /// Character index from the start of the input.
    pub index: usize,
    /// Zero-based line.
    pub line: usize,
    /// Zero-based column, in characters.
    pub column: usize,
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
    pub(crate) version_directive: Option<VersionDirective>,
    pub(crate) tag_directives: Vec<TagDirective>,
    pub(crate) head_comment: Vec<u8>,
    pub(crate) line_comment: Vec<u8>,
    pub(crate) foot_comment: Vec<u8>,
    pub(crate) tail_comment: Vec<u8>,
    pub(crate) anchor: Vec<u8>,
    pub(crate) tag: Vec<u8>,
    pub(crate) value: Vec<u8>,
    /// For document start/end: the indicator is implicit. For scalars: plain
    /// implicit. For collections: the tag is implicit.
    pub(crate) implicit: bool,
    pub(crate) quoted_implicit: bool,
    pub(crate) style: EventStyle,
}

impl Event {
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
