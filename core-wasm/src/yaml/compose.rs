//! Builds [`Node`] trees from parser events (the `parser` half of yaml.v3's
//! `decode.go`), attaching comments exactly where yaml.v3 does.

use std::borrow::Cow;
use std::collections::HashSet;

use super::error::{ErrorKind, Fallible as Result, YamlError};
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
    /// The event looked at (valid while `has_event`); nodes take their text
    /// out of it in place.
    event: Event,
    has_event: bool,
    anchors: HashSet<String>,
    started: bool,
    /// Children of the open collections, innermost last: each collection's
    /// content is moved out in one piece when it ends.
    children: Vec<Node>,
    /// The open collections of [`Composer::parse`] (empty between calls;
    /// kept for its buffer).
    stack: Vec<Frame>,
}

impl Composer {
    /// A composer over `input`.
    pub(crate) fn new(input: &str) -> Result<Composer> {
        Ok(Composer {
            parser: Parser::new(input)?,
            event: Event::default(),
            has_event: false,
            anchors: HashSet::new(),
            started: false,
            children: Vec::new(),
            stack: Vec::new(),
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

    #[cold]
    fn composer_error(&self, problem: String) -> Box<YamlError> {
        let mark = if self.has_event {
            self.event.start_mark
        } else {
            Mark::default()
        };
        Box::new(YamlError::new(ErrorKind::Composer, problem, mark))
    }

    fn peek(&mut self) -> Result<EventType> {
        if !self.has_event {
            // (A `match` rather than `?`: the event is moved once, not
            // twice.)
            match self.parser.parse() {
                Ok(event) => self.event = event,
                Err(err) => return Err(err),
            }
            self.has_event = true;
        }
        Ok(self.event.typ)
    }

    /// Checks that the current event is of type `want` and marks it taken;
    /// its contents stay readable in `self.event` until the next `peek`.
    fn expect(&mut self, want: EventType) -> Result<()> {
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
        self.has_event = false;
        Ok(())
    }

    /// Parses one node and everything below it (`parser.parse`), without
    /// recursion: open collections live on an explicit stack, so the depth
    /// of the input never reaches the call stack. Finished nodes are built
    /// right on `children`, where their parent's content is collected.
    fn parse(&mut self) -> Result<Node> {
        // The stack's buffer is kept for the next document.
        let mut stack = std::mem::take(&mut self.stack);
        stack.clear();
        let result = self.parse_with(&mut stack);
        stack.clear();
        self.stack = stack;
        result
    }

    /// [`Composer::parse`] with the (empty) stack of open collections.
    fn parse_with(&mut self, stack: &mut Vec<Frame>) -> Result<Node> {
        loop {
            // Close finished collections, or open/read the next node.
            let ty = self.peek()?;
            match (stack.last(), ty) {
                (Some(frame), EventType::SequenceEnd | EventType::MappingEnd)
                    if frame.closed_by == ty =>
                {
                    let Some(frame) = stack.pop() else {
                        return Err(unbalanced());
                    };
                    self.close(frame)?;
                }
                (_, EventType::Scalar) => self.scalar()?,
                (_, EventType::Alias) => self.alias()?,
                (_, EventType::SequenceStart) => {
                    self.sequence_start()?;
                    self.push(stack, false, EventType::SequenceEnd)?;
                    continue;
                }
                (_, EventType::MappingStart) => {
                    let block = self.mapping_start()?;
                    self.push(stack, block, EventType::MappingEnd)?;
                    continue;
                }
                (None, EventType::DocumentStart) => return self.document(),
                (_, other) => {
                    return Err(self.composer_error(format!(
                        "attempted to parse unexpected event: {}",
                        other.as_str()
                    )))
                }
            }
            // The finished node is the last child: leave it to its parent,
            // or return it.
            let Some(frame) = stack.last_mut() else {
                return self.children.pop().ok_or_else(unbalanced);
            };
            let done = self.children.len() - 1;
            if frame.closed_by == EventType::SequenceEnd {
                continue;
            }
            if !frame.key_pending {
                frame.key_pending = true;
                let read = done - frame.start;
                if frame.block && !self.children[done].foot_comment().is_empty() && read >= 2 {
                    // A foot comment read with a key belongs to the
                    // previous key.
                    let foot = self.children[done].take_foot_comment();
                    self.children[done - 2].set_foot_comment(foot);
                }
            } else {
                frame.key_pending = false;
                let key = done - 1;
                if self.children[key].foot_comment().is_empty()
                    && !self.children[done].foot_comment().is_empty()
                {
                    let foot = self.children[done].take_foot_comment();
                    self.children[key].set_foot_comment(foot);
                }
                if self.peek()? == EventType::TailComment {
                    if self.children[key].foot_comment().is_empty() {
                        let foot = self.take_foot_comment();
                        self.children[key].set_foot_comment(foot);
                    }
                    self.expect(EventType::TailComment)?;
                }
            }
        }
    }

    /// Ends the collection of `frame` at its end event (the current one):
    /// its children move into it, and it is the last of `children` again.
    fn close(&mut self, frame: Frame) -> Result<()> {
        let Frame {
            start,
            block,
            key_pending,
            closed_by,
        } = frame;
        if key_pending {
            // A key without its value is dropped (the parser never ends a
            // mapping there).
            self.children.pop();
        }
        let start = start.min(self.children.len());
        let content = self.children.split_off(start);
        let Some(node) = self.children.last_mut() else {
            return Err(unbalanced());
        };
        node.content = content;
        // The end event's comments replace the start event's, also when it
        // has none: a line comment read with a collection's start (`? # c`
        // above a flow sequence key) is dropped, as yaml.v3 drops it.
        let (line, foot) = match &mut self.event.comments {
            Some(c) => (take_text(&mut c.line), take_text(&mut c.foot)),
            None => (String::new(), String::new()),
        };
        node.set_line_comment(line);
        if closed_by == EventType::MappingEnd && block && !foot.is_empty() && node.content.len() > 1
        {
            let key = node.content.len() - 2;
            node.content[key].set_foot_comment(foot);
            node.set_foot_comment(String::new());
        } else {
            node.set_foot_comment(foot);
        }
        self.expect(closed_by)?;
        Ok(())
    }

    /// Opens the collection just added to `children`.
    fn push(&mut self, stack: &mut Vec<Frame>, block: bool, closed_by: EventType) -> Result<()> {
        if stack.len() >= MAX_DEPTH {
            return Err(self.composer_error(format!(
                "exceeded max depth of {MAX_DEPTH} nested collections"
            )));
        }
        stack.push(Frame {
            start: self.children.len(),
            block,
            key_pending: false,
            closed_by,
        });
        Ok(())
    }

    /// `parser.node`: a node from the event just taken off the stream; tag,
    /// anchor and comments move from the event into the node, which is
    /// added to `children`.
    fn node(&mut self, kind: Kind, default_tag: &'static str, value: String, style: Style) {
        let ev = &mut self.event;
        let mut style = style;
        let tag = if !ev.tag.is_empty() && ev.tag != b"!" {
            style |= Style::TAGGED;
            short_tag(&take_text(&mut ev.tag))
        } else if !default_tag.is_empty() {
            Cow::Borrowed(default_tag)
        } else if kind == Kind::Scalar {
            Cow::Borrowed(resolve_plain(&value))
        } else {
            Cow::Borrowed("")
        };
        let mut anchor = take_text(&mut ev.anchor);
        if !anchor.is_empty() && kind != Kind::Alias {
            self.anchors.insert(anchor.clone());
        } else {
            anchor = String::new();
        }
        let ev = &mut self.event;
        let comments = match &mut ev.comments {
            None => [String::new(), String::new(), String::new()],
            Some(c) => [
                take_text(&mut c.head),
                take_text(&mut c.line),
                take_text(&mut c.foot),
            ],
        };
        let position = (
            ev.start_mark.line.saturating_add(1),
            ev.start_mark.column.saturating_add(1),
        );
        self.children.push(Node::read(
            kind, style, tag, value, anchor, comments, position,
        ));
    }

    /// The foot comment of the current event, taken out of it.
    fn take_foot_comment(&mut self) -> String {
        match &mut self.event.comments {
            Some(c) => take_text(&mut c.foot),
            None => String::new(),
        }
    }

    /// [`Composer::node`] for a node that does not go to `children`.
    fn lone_node(&mut self, kind: Kind, default_tag: &'static str, style: Style) -> Result<Node> {
        self.node(kind, default_tag, String::new(), style);
        self.children.pop().ok_or_else(unbalanced)
    }

    fn document(&mut self) -> Result<Node> {
        self.expect(EventType::DocumentStart)?;
        let mut n = self.lone_node(Kind::Document, "", Style::plain())?;
        let child = self.parse()?;
        n.content.push(child);
        if self.peek()? == EventType::DocumentEnd {
            let foot = self.take_foot_comment();
            n.set_foot_comment(foot);
        }
        self.expect(EventType::DocumentEnd)?;
        // Anchors are scoped to their document.
        self.anchors.clear();
        Ok(n)
    }

    fn alias(&mut self) -> Result<()> {
        self.expect(EventType::Alias)?;
        let name = take_text(&mut self.event.anchor);
        if !self.anchors.contains(&name) {
            return Err(Box::new(YamlError::new(
                ErrorKind::Composer,
                format!("unknown anchor '{name}' referenced"),
                Mark::default(),
            )));
        }
        self.node(Kind::Alias, "", name, Style::plain());
        Ok(())
    }

    fn scalar(&mut self) -> Result<()> {
        self.expect(EventType::Scalar)?;
        let node_style = match self.event.scalar_style() {
            ScalarStyle::DoubleQuoted => Style::DOUBLE_QUOTED,
            ScalarStyle::SingleQuoted => Style::SINGLE_QUOTED,
            ScalarStyle::Literal => Style::LITERAL,
            ScalarStyle::Folded => Style::FOLDED,
            _ => Style::plain(),
        };
        let value = take_text(&mut self.event.value);
        let default_tag = if node_style.is_plain() {
            if value == "<<" {
                MERGE_TAG
            } else {
                ""
            }
        } else {
            STR_TAG
        };
        self.node(Kind::Scalar, default_tag, value, node_style);
        Ok(())
    }

    /// Adds the (still empty) sequence node to `children`.
    fn sequence_start(&mut self) -> Result<()> {
        self.expect(EventType::SequenceStart)?;
        let style = if self.event.sequence_style() == SequenceStyle::Flow {
            Style::FLOW
        } else {
            Style::plain()
        };
        self.node(Kind::Sequence, SEQ_TAG, String::new(), style);
        Ok(())
    }

    /// Adds the (still empty) mapping node to `children`; whether it is a
    /// block mapping.
    fn mapping_start(&mut self) -> Result<bool> {
        self.expect(EventType::MappingStart)?;
        let block = self.event.mapping_style() != MappingStyle::Flow;
        let style = if block { Style::plain() } else { Style::FLOW };
        self.node(Kind::Mapping, MAP_TAG, String::new(), style);
        Ok(block)
    }
}

/// A collection being read: its node is `Composer::children[start - 1]`,
/// its children so far are `Composer::children[start..]`.
struct Frame {
    start: usize,
    /// A block mapping (foot comments move to keys).
    block: bool,
    /// A mapping whose last child is a key waiting for its value.
    key_pending: bool,
    /// The event that ends the collection.
    closed_by: EventType,
}

/// The stack discipline makes a mismatch impossible; report it rather than
/// panic.
fn unbalanced() -> Box<YamlError> {
    Box::new(YamlError::new(
        ErrorKind::Composer,
        "internal error: unbalanced collections",
        Mark::default(),
    ))
}

/// Moves event bytes into a `String` without copying when they are UTF-8
/// (always, in practice: event text is UTF-8, since the input is `&str` and
/// the scanner only cuts at character boundaries or produces escapes as
/// UTF-8); replacement keeps this total anyway.
#[inline]
fn take_text(b: &mut Vec<u8>) -> String {
    if b.is_empty() {
        return String::new();
    }
    let mut bytes = std::mem::take(b);
    super::trim_slack(&mut bytes);
    text_of(bytes)
}

/// The `String` holding `b` (see [`take_text`]).
fn text_of(b: Vec<u8>) -> String {
    String::from_utf8(b).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

#[cfg(test)]
mod tests {
    use crate::yaml::{emit_stream, parse_stream, Format};

    /// A line comment read with a collection's start event is replaced by
    /// the end event's comments, as yaml.v3's `parser.sequence` and
    /// `parser.mapping` replace it: for a flow collection it is lost. The
    /// expected outputs are tools/kyaml-oracle's.
    #[test]
    fn a_collection_takes_its_line_comment_from_its_end_event() {
        let cases = [
            ("? #\n []", "[]:\n"),
            ("? # c\n  [a]\n", "? [a]\n:\n"),
            ("? # c\n  {a: b}\n", "? {a: b}\n:\n"),
            ("k: [ # c\n  x]\n", "k: [x]\n"),
            ("a: !!seq # c\n  [x]\n", "a: !!seq [x]\n"),
            // Comments that belong to a scalar or an item stay.
            ("? # c\n  a\n", "a: # c\n"),
            ("? # c\n  - x\n: v\n", "? - x # c\n: v\n"),
        ];
        for (input, want) in cases {
            let docs = parse_stream(input).expect("parses");
            let out = emit_stream(&docs, Format::Kyaml).expect("emits");
            assert_eq!(out, want, "{input:?}");
            parse_stream(&out).expect("the output parses");
        }
    }

    /// Byte order marks: Go drops the first character of every line while
    /// its buffer window starts with a U+FEFF (`\u{feff}\u{feff}kind: x`
    /// reads `ind: x`); here only a U+FEFF itself is skipped. A U+FEFF that
    /// Go keeps is kept (the oracle writes `"\uFEFF\x62": 2` for the last
    /// case, as we do).
    #[test]
    fn a_byte_order_mark_never_takes_another_character_with_it() {
        let cases = [
            ("\u{feff}api: v1\nkind: x\n", "api: v1\nkind: x\n"),
            (
                "\u{feff}\u{feff}api: v1\nkind: x\nspec: y\n",
                "api: v1\nkind: x\nspec: y\n",
            ),
            (
                "\u{feff}\u{feff}a: 1\n\u{feff}b: 2\nc: 3\n",
                "a: 1\nb: 2\nc: 3\n",
            ),
            ("a: 1\n\u{feff}b: 2\n", "a: 1\n\"\\uFEFF\\x62\": 2\n"),
        ];
        for (input, want) in cases {
            let docs = parse_stream(input).expect("parses");
            let out = emit_stream(&docs, Format::Kyaml).expect("emits");
            assert_eq!(out, want, "{input:?}");
        }
    }
}
