//! A lossless YAML layer that reads and writes YAML exactly as Go's
//! `gopkg.in/yaml.v3` does under kyaml (`sigs.k8s.io/kustomize/kyaml`), which
//! is what kpt and Porch use for every package edit.
//!
//! No Rust crate reproduces yaml.v3's comment attachment and output style
//! byte for byte, so the scanner, parser and emitter here are a port of
//! yaml.v3's (itself a port of libyaml), including kyaml's compact sequence
//! indentation. The node tree mirrors `yaml.Node`; the editing API mirrors the
//! parts of kyaml's `RNode` and the kpt function SDK's `KubeObject` that
//! Porch's controllers use.

mod chars;
mod compose;
mod edit;
mod emitter;
mod encode;
pub(crate) mod error;
mod json;
mod node;
mod order;
mod parser;
mod parser_state;
mod resolve;
mod scanner;
pub(crate) mod token;

pub use compose::MAX_DEPTH;
pub use edit::deep_copy_formatting;
pub use error::{ErrorKind, Result, YamlError};
pub use json::{
    from_json, from_json_ordered, from_json_ordered_owned, string_node, to_json, to_json_strict,
    MAX_EXPANDED_NODES,
};
pub use node::{Kind, Node, Style};
pub use order::{compare_keys, field_order};

use emitter::EmitterOptions;

/// How to write YAML.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// kyaml's encoder (what kpt and Porch write): indent 2, sequences
    /// compact (`- ` at the parent key's column).
    #[default]
    Kyaml,
    /// yaml.v3's default encoder: indent 4, sequences indented.
    YamlV3,
    /// kyaml's encoder with `WideSequenceStyle`: indent 2, sequences
    /// indented under their key (`  - `), as kpt writes files whose
    /// sequences were wide and the Kptfile it re-marshals.
    KyamlWide,
}

impl Format {
    fn options(self) -> EmitterOptions {
        match self {
            Format::Kyaml => EmitterOptions::kyaml(),
            Format::YamlV3 => EmitterOptions::yaml_v3(),
            Format::KyamlWide => EmitterOptions {
                compact_sequence_indent: false,
                ..EmitterOptions::kyaml()
            },
        }
    }
}

/// Parses every document of a YAML stream (a `yaml.Decoder` loop), each as a
/// [`Kind::Document`] node.
pub fn parse_stream(input: &str) -> Result<Vec<Node>> {
    let mut composer = compose::Composer::new(input)?;
    let mut docs = Vec::new();
    while let Some(doc) = composer.next_document()? {
        docs.push(doc);
    }
    Ok(docs)
}

/// Parses the first document of `input` (an empty input gives a document
/// holding a null scalar, as `yaml.Unmarshal` sees it).
pub fn parse_document(input: &str) -> Result<Node> {
    let text = if input.is_empty() { "\n" } else { input };
    let mut composer = compose::Composer::new(text)?;
    match composer.next_document()? {
        Some(doc) => Ok(doc),
        None => Ok(Node::new_document(Node::new_null())),
    }
}

/// Writes documents (or bare nodes) as one stream, separated by `---`, the
/// way one `yaml.Encoder` writes successive `Encode` calls.
pub fn emit_stream(nodes: &[Node], format: Format) -> Result<String> {
    write_stream(encode::Encoder::new(format.options()), nodes)
}

/// [`emit_stream`] into a buffer of `capacity` bytes to start with: a
/// writer that knows about how long the text will be (a file written back
/// over its old text) allocates it once instead of doubling up to it.
pub fn emit_stream_sized(nodes: &[Node], format: Format, capacity: usize) -> Result<String> {
    write_stream(
        encode::Encoder::with_capacity(format.options(), capacity),
        nodes,
    )
}

#[doc(hidden)]
/// [`emit_stream`] with every event going through the emitter's look-ahead
/// queue, as in yaml.v3, where [`emit_stream`] tells the emitter what
/// follows instead: for differential tests and fuzzing, which check that
/// both write the same bytes (or fail alike).
pub fn __emit_stream_queued(nodes: &[Node], format: Format) -> Result<String> {
    write_stream(encode::Encoder::queued(format.options()), nodes)
}

/// Encodes `nodes` one after the other and ends the stream.
fn write_stream(mut encoder: encode::Encoder, nodes: &[Node]) -> Result<String> {
    for node in nodes {
        encoder.encode(node)?;
    }
    output_text(encoder.finish()?)
}

/// The emitter's output as text.
fn output_text(mut bytes: Vec<u8>) -> Result<String> {
    trim_slack(&mut bytes);
    String::from_utf8(bytes).map_err(|_| YamlError::edit("emitter produced invalid UTF-8"))
}

/// Gives back what a buffer grown by doubling holds beyond its text, when
/// that is more than a page: a large scalar or file is otherwise kept at up
/// to twice its size for as long as it lives.
fn trim_slack(bytes: &mut Vec<u8>) {
    if bytes.capacity() - bytes.len() > 4096 {
        bytes.shrink_to_fit();
    }
}

/// kyaml's `String(node)`: one node (a document or any node) as text.
pub fn to_string(node: &Node) -> Result<String> {
    emit_stream(std::slice::from_ref(node), Format::Kyaml)
}

/// Parses `input` and writes it back as kyaml would (`kpt fn` formatting).
///
/// The same as [`emit_stream`] of [`parse_stream`], but each document is
/// written as soon as it is read and then dropped, so the whole tree never
/// lives at once. A parse error anywhere still wins over an emit error, as
/// when the stream is parsed first.
pub fn reformat(input: &str) -> Result<String> {
    let mut composer = compose::Composer::new(input)?;
    // The output is about as long as the input.
    let capacity = input.len().saturating_add(input.len() / 8);
    let mut encoder = encode::Encoder::with_capacity(Format::Kyaml.options(), capacity);
    let mut emit_error = None;
    while let Some(doc) = composer.next_document()? {
        if emit_error.is_none() {
            emit_error = encoder.encode(&doc).err();
        }
    }
    if let Some(err) = emit_error {
        return Err(err.into());
    }
    output_text(encoder.finish()?)
}

#[doc(hidden)]
/// Profiling aid: scans only (tokens), or parses only (events).
pub fn __profile_stage(input: &str, events: bool) -> usize {
    let Ok(mut p) = parser_state::Parser::new(input) else {
        return 0;
    };
    let mut n = 0;
    if events {
        while let Ok(ev) = p.parse() {
            if ev.typ == token::EventType::StreamEnd || ev.typ == token::EventType::NoEvent {
                break;
            }
            n += 1;
        }
    } else {
        loop {
            if p.fetch_more_tokens().is_err() {
                break;
            }
            let Some(t) = p.tokens.pop_front() else { break };
            p.tokens_parsed += 1;
            p.token_available = false;
            n += 1;
            if t.typ == token::TokenType::StreamEnd {
                break;
            }
        }
    }
    n
}
