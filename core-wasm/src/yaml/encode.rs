//! Turns [`Node`] trees into emitter events (the `node` half of yaml.v3's
//! `encode.go`), so that output matches yaml.v3's `Encoder` byte for byte.

use super::emitter::{Emitter, EmitterOptions, Next};
use super::error::{Fallible as Result, YamlError};
use super::node::{Kind, Node, Style};
use super::resolve::{
    long_tag, resolve_plain, short_tag_ref, BINARY_TAG, MAP_TAG, SEQ_TAG, STR_TAG,
};
use super::token::{
    Comments, Event, EventStyle, EventType, MappingStyle, ScalarStyle, SequenceStyle,
};

/// A stream encoder: one `yaml.Encoder` with its settings.
///
/// yaml.v3's emitter holds events back in a queue until it has seen enough
/// of what follows (up to three events after a mapping start). The encoder
/// has the whole node, so it tells the emitter what follows instead, and
/// every event is written at once ([`Emitter::emit_known`]); the queued
/// path stays for checking that both write the same bytes.
pub(crate) struct Encoder {
    emitter: Emitter,
    started: bool,
    /// Events go through the emitter's queue, as in yaml.v3.
    queued: bool,
}

impl Encoder {
    /// An encoder writing with `options`.
    pub(crate) fn new(options: EmitterOptions) -> Encoder {
        Encoder {
            emitter: Emitter::new(options),
            started: false,
            queued: false,
        }
    }

    /// An encoder whose events go through the emitter's queue, as in
    /// yaml.v3: the reference the direct path is checked against.
    pub(crate) fn queued(options: EmitterOptions) -> Encoder {
        Encoder {
            queued: true,
            ..Encoder::new(options)
        }
    }

    /// An encoder writing with `options` into an output buffer of
    /// `capacity` bytes (grown as needed).
    pub(crate) fn with_capacity(options: EmitterOptions, capacity: usize) -> Encoder {
        let mut encoder = Encoder::new(options);
        encoder.emitter.output.reserve(capacity);
        encoder
    }

    /// Emits an event that needs no look-ahead.
    fn emit(&mut self, event: Event) -> Result<()> {
        if self.queued {
            return self.emitter.emit(event);
        }
        self.emitter.emit_known(event, Next::default())
    }

    /// Emits the start event of `node`, a sequence or mapping (as `style`
    /// says) tagged `tag`, with the tail comment `tail`. The emitter looks
    /// ahead at the next event only to see whether the collection is empty
    /// (then the next event is its end, with the node's line comment).
    fn emit_start(&mut self, node: &Node, tag: &str, style: EventStyle, tail: &str) -> Result<()> {
        let (typ, end) = match style {
            EventStyle::Sequence(_) => (EventType::SequenceStart, EventType::SequenceEnd),
            _ => (EventType::MappingStart, EventType::MappingEnd),
        };
        let event = Event {
            typ,
            anchor: node.anchor().as_bytes().to_vec(),
            tag: long_tag(tag).into_bytes(),
            implicit: tag.is_empty(),
            style,
            comments: comments(node.head_comment(), "", "", tail),
            ..Event::default()
        };
        if self.queued {
            return self.emitter.emit(event);
        }
        let next = if node.content.is_empty() {
            Next {
                typ: end,
                line_comment: node.line_comment().as_bytes().to_vec(),
            }
        } else {
            Next::default()
        };
        self.emitter.emit_known(event, next)
    }

    /// `Encoder.Encode(node)`: a document node is written as is, any other
    /// node inside an implicit document.
    pub(crate) fn encode(&mut self, node: &Node) -> Result<()> {
        if !self.started {
            self.emit(Event {
                typ: EventType::StreamStart,
                ..Event::default()
            })?;
            self.started = true;
        }
        if node.kind == Kind::Document {
            self.node(node, "")
        } else {
            self.emit(document_start(""))?;
            self.node(node, "")?;
            self.emit(document_end(""))
        }
    }

    /// `Encoder.Close()`: ends the stream and returns the text.
    pub(crate) fn finish(mut self) -> Result<Vec<u8>> {
        if self.started {
            self.emitter.open_ended = false;
            self.emit(Event {
                typ: EventType::StreamEnd,
                ..Event::default()
            })?;
        }
        Ok(self.emitter.into_output())
    }

    fn node(&mut self, node: &Node, tail: &str) -> Result<()> {
        // If the tag was not explicitly requested, and dropping it won't
        // change the implicit tag of the value, don't include it.
        let mut tag: &str = &node.tag;
        let stag = short_tag_ref(tag);
        let mut force_quoting = false;
        if !tag.is_empty() && !node.style.contains(Style::TAGGED) {
            if node.kind == Kind::Scalar {
                if same_tag(&stag, STR_TAG)
                    && node.style.intersects(
                        Style::SINGLE_QUOTED
                            | Style::DOUBLE_QUOTED
                            | Style::LITERAL
                            | Style::FOLDED,
                    )
                {
                    tag = "";
                } else {
                    let rtag = resolve_plain(&node.value);
                    if same_tag(rtag, &stag) {
                        tag = "";
                    } else if same_tag(&stag, STR_TAG) {
                        tag = "";
                        force_quoting = true;
                    }
                }
            } else {
                let rtag = match node.kind {
                    Kind::Mapping => MAP_TAG,
                    Kind::Sequence => SEQ_TAG,
                    _ => "",
                };
                if same_tag(rtag, &stag) {
                    tag = "";
                }
            }
        }

        match node.kind {
            Kind::Document => {
                let mut ev = document_start(node.head_comment());
                ev.implicit = true;
                self.emit(ev)?;
                for child in &node.content {
                    self.node(child, "")?;
                }
                self.emit(document_end(node.foot_comment()))
            }
            Kind::Sequence => {
                let style = if node.style.contains(Style::FLOW) {
                    SequenceStyle::Flow
                } else {
                    SequenceStyle::Block
                };
                self.emit_start(node, tag, EventStyle::Sequence(style), "")?;
                for child in &node.content {
                    self.node(child, "")?;
                }
                self.emit(Event {
                    typ: EventType::SequenceEnd,
                    comments: comments("", node.line_comment(), node.foot_comment(), ""),
                    ..Event::default()
                })
            }
            Kind::Mapping => {
                let style = if node.style.contains(Style::FLOW) {
                    MappingStyle::Flow
                } else {
                    MappingStyle::Block
                };
                self.emit_start(node, tag, EventStyle::Mapping(style), tail)?;
                // The foot comment of a key is written after its value, as
                // the tail of the next key (or of the mapping end).
                let mut tail: &str = "";
                for pair in node.content.chunks(2) {
                    let key = &pair[0];
                    if key.foot_comment().is_empty() {
                        self.node(key, tail)?;
                    } else {
                        let mut copy = key.clone();
                        copy.set_foot_comment(String::new());
                        self.node(&copy, tail)?;
                    }
                    tail = key.foot_comment();
                    if let Some(value) = pair.get(1) {
                        self.node(value, "")?;
                    }
                }
                self.emit(Event {
                    typ: EventType::MappingEnd,
                    comments: comments("", node.line_comment(), node.foot_comment(), tail),
                    ..Event::default()
                })
            }
            Kind::Alias => self.emit(Event {
                typ: EventType::Alias,
                anchor: node.value.as_bytes().to_vec(),
                comments: comments(
                    node.head_comment(),
                    node.line_comment(),
                    node.foot_comment(),
                    "",
                ),
                ..Event::default()
            }),
            Kind::Scalar => {
                if stag == BINARY_TAG && node.value.contains(['\u{0}']) {
                    return Err(Box::new(YamlError::edit(
                        "explicitly tagged !!binary data must be base64-encoded",
                    )));
                }
                let style = if node.style.contains(Style::DOUBLE_QUOTED) {
                    ScalarStyle::DoubleQuoted
                } else if node.style.contains(Style::SINGLE_QUOTED) {
                    ScalarStyle::SingleQuoted
                } else if node.style.contains(Style::LITERAL) {
                    ScalarStyle::Literal
                } else if node.style.contains(Style::FOLDED) {
                    ScalarStyle::Folded
                } else if node.value.bytes().any(|b| b == b'\n') {
                    ScalarStyle::Literal
                } else if force_quoting {
                    ScalarStyle::DoubleQuoted
                } else {
                    ScalarStyle::Plain
                };
                let implicit = tag.is_empty();
                let value = self.emitter.buffer_with(node.value.as_bytes());
                self.emit(Event {
                    typ: EventType::Scalar,
                    anchor: node.anchor().as_bytes().to_vec(),
                    tag: if implicit {
                        Vec::new()
                    } else {
                        long_tag(tag).into_bytes()
                    },
                    value,
                    implicit,
                    quoted_implicit: implicit,
                    style: EventStyle::Scalar(style),
                    comments: comments(
                        node.head_comment(),
                        node.line_comment(),
                        node.foot_comment(),
                        tail,
                    ),
                    ..Event::default()
                })
            }
        }
    }
}

/// `a == b`, decided at once when both are the same (static) tag string.
#[inline]
fn same_tag(a: &str, b: &str) -> bool {
    std::ptr::eq(a, b) || a == b
}

fn document_start(head_comment: &str) -> Event {
    Event {
        typ: EventType::DocumentStart,
        implicit: true,
        comments: comments(head_comment, "", "", ""),
        ..Event::default()
    }
}

fn document_end(foot_comment: &str) -> Event {
    Event {
        typ: EventType::DocumentEnd,
        implicit: true,
        comments: comments("", "", foot_comment, ""),
        ..Event::default()
    }
}

/// The event comments of a node (no allocation when all are empty).
#[inline]
fn comments(head: &str, line: &str, foot: &str, tail: &str) -> Option<Box<Comments>> {
    if head.is_empty() && line.is_empty() && foot.is_empty() && tail.is_empty() {
        return None;
    }
    Some(Box::new(Comments {
        head: head.as_bytes().to_vec(),
        line: line.as_bytes().to_vec(),
        foot: foot.as_bytes().to_vec(),
        tail: tail.as_bytes().to_vec(),
    }))
}
