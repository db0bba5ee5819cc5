//! Builds [`Node`] trees from parser events (the `parser` half of yaml.v3's
//! `decode.go`), attaching comments exactly where yaml.v3 does.

use std::collections::HashSet;

use super::error::{ErrorKind, Result, YamlError};
use super::node::{Kind, Node, Style};
use super::parser_state::Parser;
use super::resolve::{resolve_plain, short_tag, MAP_TAG, MERGE_TAG, SEQ_TAG, STR_TAG};
use super::token::{Event, EventType, MappingStyle, Mark, ScalarStyle, SequenceStyle};

/// Deepest collection nesting accepted. Real Kubernetes objects stay far
/// below it; the cap keeps every recursive walk of a tree (emit, convert,
/// drop) within a small, fixed stack, including inside WebAssembly.
pub const MAX_DEPTH: usize = 256;

/// Reads documents one at a time from a YAML stream, like `yaml.Decoder`.
pub(crate) struct Composer {
    parser: Parser,
    event: Option<Event>,
    anchors: HashSet<String>,
    started: bool,
}

impl Composer {
    /// A composer over `input`.
    pub(crate) fn new(input: &str) -> Result<Composer> {
        Ok(Composer {
            parser: Parser::new(input)?,
            event: None,
            anchors: HashSet::new(),
            started: false,
        })
    }

    /// The next document node, or `None` at the end of the stream
    /// (`Decoder.Decode` into a `yaml.Node`).
    pub(crate) fn next_document(&mut self) -> Result<Option<Node>> {
        if !self.started {
            self.expect(EventType::StreamStart)?;
            self.started = true;
        }
        match self.peek()? {
            EventType::StreamEnd => Ok(None),
            EventType::DocumentStart => self.document().map(Some),
            other => Err(self.composer_error(format!(
                "expected document start event but got {}",
                other.as_str()
            ))),
        }
    }

    fn composer_error(&self, problem: String) -> YamlError {
        let mark = self
            .event
            .as_ref()
            .map(|e| e.start_mark)
            .unwrap_or_default();
        YamlError::new(ErrorKind::Composer, problem, mark)
    }

    fn peek(&mut self) -> Result<EventType> {
        if self.event.is_none() {
            self.event = Some(self.parser.parse()?);
        }
        Ok(self.event.as_ref().map_or(EventType::NoEvent, |e| e.typ))
    }

    /// Takes the current event, which must be of type `want`.
    fn expect(&mut self, want: EventType) -> Result<Event> {
        let got = self.peek()?;
        if got == EventType::StreamEnd && want != EventType::StreamEnd {
            return Err(self.composer_error(
                "attempted to go past the end of stream; corrupted value?".to_string(),
            ));
        }
        if got != want {
            return Err(self.composer_error(format!(
                "expected {} event but got {}",
                want.as_str(),
                got.as_str()
            )));
        }
        Ok(self.event.take().unwrap_or_default())
    }

    /// The current event (after a successful `peek`).
    fn current(&self) -> &Event {
        // `peek` always leaves an event in place before this is called.
        static EMPTY: std::sync::OnceLock<Event> = std::sync::OnceLock::new();
        self.event
            .as_ref()
            .unwrap_or_else(|| EMPTY.get_or_init(Event::default))
    }

    /// Parses one node and everything below it (`parser.parse`), without
    /// recursion: open collections live on an explicit stack, so the depth
    /// of the input never reaches the call stack.
    fn parse(&mut self) -> Result<Node> {
        let mut stack: Vec<Frame> = Vec::new();
        loop {
            // Close finished collections, or open/read the next node.
            let ty = self.peek()?;
            let done = match (stack.last(), ty) {
                (Some(Frame::Sequence(_)), EventType::SequenceEnd) => {
                    let Some(Frame::Sequence(mut n)) = stack.pop() else {
                        return Err(unbalanced());
                    };
                    n.line_comment = lossless(&self.current().line_comment);
                    n.foot_comment = lossless(&self.current().foot_comment);
                    self.expect(EventType::SequenceEnd)?;
                    n
                }
                (Some(Frame::Mapping { .. }), EventType::MappingEnd) => {
                    let Some(Frame::Mapping {
                        mut node, block, ..
                    }) = stack.pop()
                    else {
                        return Err(unbalanced());
                    };
                    node.line_comment = lossless(&self.current().line_comment);
                    node.foot_comment = lossless(&self.current().foot_comment);
                    if block && !node.foot_comment.is_empty() && node.content.len() > 1 {
                        let key = node.content.len() - 2;
                        node.content[key].foot_comment = std::mem::take(&mut node.foot_comment);
                    }
                    self.expect(EventType::MappingEnd)?;
                    node
                }
                (_, EventType::Scalar) => self.scalar()?,
                (_, EventType::Alias) => self.alias()?,
                (_, EventType::SequenceStart) => {
                    let n = self.sequence_start()?;
                    self.push(&mut stack, Frame::Sequence(n))?;
                    continue;
                }
                (_, EventType::MappingStart) => {
                    let (node, block) = self.mapping_start()?;
                    self.push(
                        &mut stack,
                        Frame::Mapping {
                            node,
                            block,
                            key: None,
                        },
                    )?;
                    continue;
                }
                (None, EventType::DocumentStart) => return self.document(),
                (_, other) => {
                    return Err(self.composer_error(format!(
                        "attempted to parse unexpected event: {}",
                        other.as_str()
                    )))
                }
            };
            // Hand the finished node to its parent, or return it.
            match stack.last_mut() {
                None => return Ok(done),
                Some(Frame::Sequence(n)) => n.content.push(done),
                Some(Frame::Mapping { node, block, key }) => match key.take() {
                    None => {
                        let mut k = done;
                        if *block && !k.foot_comment.is_empty() && node.content.len() >= 2 {
                            // A foot comment read with a key belongs to the
                            // previous key.
                            let prev_key = node.content.len() - 2;
                            node.content[prev_key].foot_comment =
                                std::mem::take(&mut k.foot_comment);
                        }
                        *key = Some(k);
                    }
                    Some(mut k) => {
                        let mut v = done;
                        if k.foot_comment.is_empty() && !v.foot_comment.is_empty() {
                            k.foot_comment = std::mem::take(&mut v.foot_comment);
                        }
                        node.content.push(k);
                        node.content.push(v);
                        if self.peek()? == EventType::TailComment {
                            let key = node.content.len() - 2;
                            if node.content[key].foot_comment.is_empty() {
                                node.content[key].foot_comment =
                                    lossless(&self.current().foot_comment);
                            }
                            self.expect(EventType::TailComment)?;
                        }
                    }
                },
            }
        }
    }

    fn push(&mut self, stack: &mut Vec<Frame>, frame: Frame) -> Result<()> {
        if stack.len() >= MAX_DEPTH {
            return Err(self.composer_error(format!(
                "exceeded max depth of {MAX_DEPTH} nested collections"
            )));
        }
        stack.push(frame);
        Ok(())
    }

    /// `parser.node`: a node from an event taken off the stream; tag,
    /// anchor and comments move from the event into the node.
    fn node(&mut self, kind: Kind, default_tag: &str, ev: Event, value: String) -> Node {
        let mut style = Style::plain();
        let tag = if !ev.tag.is_empty() && ev.tag != b"!" {
            style = Style::TAGGED;
            short_tag(&into_string(ev.tag))
        } else if !default_tag.is_empty() {
            default_tag.to_string()
        } else if kind == Kind::Scalar {
            resolve_plain(&value).to_string()
        } else {
            String::new()
        };
        let anchor = into_string(ev.anchor);
        if !anchor.is_empty() && kind != Kind::Alias {
            self.anchors.insert(anchor.clone());
        }
        Node {
            kind,
            style,
            tag,
            value,
            anchor: if kind == Kind::Alias {
                String::new()
            } else {
                anchor
            },
            content: Vec::new(),
            head_comment: into_string(ev.head_comment),
            line_comment: into_string(ev.line_comment),
            foot_comment: into_string(ev.foot_comment),
            line: ev.start_mark.line + 1,
            column: ev.start_mark.column + 1,
        }
    }

    fn document(&mut self) -> Result<Node> {
        let ev = self.expect(EventType::DocumentStart)?;
        let mut n = self.node(Kind::Document, "", ev, String::new());
        let child = self.parse()?;
        n.content.push(child);
        if self.peek()? == EventType::DocumentEnd {
            n.foot_comment = lossless(&self.current().foot_comment);
        }
        self.expect(EventType::DocumentEnd)?;
        // Anchors are scoped to their document.
        self.anchors.clear();
        Ok(n)
    }

    fn alias(&mut self) -> Result<Node> {
        let mut ev = self.expect(EventType::Alias)?;
        let name = into_string(std::mem::take(&mut ev.anchor));
        if !self.anchors.contains(&name) {
            return Err(YamlError::new(
                ErrorKind::Composer,
                format!("unknown anchor '{name}' referenced"),
                Mark::default(),
            ));
        }
        Ok(self.node(Kind::Alias, "", ev, name))
    }

    fn scalar(&mut self) -> Result<Node> {
        let mut ev = self.expect(EventType::Scalar)?;
        let node_style = match ev.scalar_style() {
            ScalarStyle::DoubleQuoted => Style::DOUBLE_QUOTED,
            ScalarStyle::SingleQuoted => Style::SINGLE_QUOTED,
            ScalarStyle::Literal => Style::LITERAL,
            ScalarStyle::Folded => Style::FOLDED,
            _ => Style::plain(),
        };
        let value = into_string(std::mem::take(&mut ev.value));
        let default_tag = if node_style.is_plain() {
            if value == "<<" {
                MERGE_TAG
            } else {
                ""
            }
        } else {
            STR_TAG
        };
        let mut n = self.node(Kind::Scalar, default_tag, ev, value);
        n.style |= node_style;
        Ok(n)
    }

    fn sequence_start(&mut self) -> Result<Node> {
        let ev = self.expect(EventType::SequenceStart)?;
        let flow = ev.sequence_style() == SequenceStyle::Flow;
        let mut n = self.node(Kind::Sequence, SEQ_TAG, ev, String::new());
        if flow {
            n.style |= Style::FLOW;
        }
        Ok(n)
    }

    fn mapping_start(&mut self) -> Result<(Node, bool)> {
        let ev = self.expect(EventType::MappingStart)?;
        let block = ev.mapping_style() != MappingStyle::Flow;
        let mut n = self.node(Kind::Mapping, MAP_TAG, ev, String::new());
        if !block {
            n.style |= Style::FLOW;
        }
        Ok((n, block))
    }
}

/// A collection being read.
enum Frame {
    Sequence(Node),
    Mapping {
        node: Node,
        block: bool,
        /// The key read, waiting for its value.
        key: Option<Node>,
    },
}

/// The stack discipline makes a mismatch impossible; report it rather than
/// panic.
fn unbalanced() -> YamlError {
    YamlError::new(
        ErrorKind::Composer,
        "internal error: unbalanced collections",
        Mark::default(),
    )
}

/// Moves event bytes into a `String` without copying when they are UTF-8
/// (always, in practice: see [`lossless`]).
fn into_string(b: Vec<u8>) -> String {
    String::from_utf8(b).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Event text is UTF-8 (the input is `&str` and the scanner only cuts at
/// character boundaries or produces escapes as UTF-8); replacement keeps this
/// total anyway.
fn lossless(b: &[u8]) -> String {
    match std::str::from_utf8(b) {
        Ok(s) => s.to_string(),
        Err(_) => String::from_utf8_lossy(b).into_owned(),
    }
}
