//! Reading the input `ResourceList` and writing the output one, both with
//! the lossless YAML layer so that items nobody edits come out byte for
//! byte as they came in.

use pv_core::api::ResultItem;
use pv_core::yaml::{self, Kind, Node, YamlError};

use crate::results;

/// `apiVersion` of ResourceLists this project writes when the input has
/// none to copy.
pub const API_VERSION: &str = "config.kubernetes.io/v1";
/// `kind` of a ResourceList.
pub const KIND: &str = "ResourceList";

/// Why the input is not a ResourceList.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    /// The input is not YAML.
    #[error("the input is not YAML: {0}")]
    Yaml(#[from] Box<YamlError>),
    /// The input is YAML but not a ResourceList.
    #[error("the input is not a ResourceList: {0}")]
    NotAResourceList(String),
}

/// A parsed input ResourceList, its items taken out.
#[derive(Debug, Clone)]
pub struct Input {
    /// The document, kept to write the output in the same shape (its
    /// `apiVersion`, comments).
    doc: Node,
    /// The items, in order (each should be an object; see
    /// [`non_objects`]).
    pub items: Vec<Node>,
    /// `functionConfig`, when present and not null.
    pub function_config: Option<Node>,
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Document => "document",
        Kind::Sequence => "sequence",
        Kind::Mapping => "mapping",
        Kind::Scalar => "scalar",
        Kind::Alias => "alias",
    }
}

/// Parses a ResourceList (`config.kubernetes.io/v1` or `v1beta1`).
pub fn read(input: &str) -> Result<Input, InputError> {
    let mut doc = yaml::parse_document(input).map_err(Box::new)?;
    let root = doc.root_mut();
    if root.kind != Kind::Mapping {
        return Err(InputError::NotAResourceList(format!(
            "the document is a {}, not a mapping",
            kind_name(root.kind)
        )));
    }
    if root.object_kind() != KIND {
        return Err(InputError::NotAResourceList(format!(
            "kind is {:?}, not {KIND:?}",
            root.object_kind()
        )));
    }
    let items = match root.get_mut("items") {
        None => Vec::new(),
        Some(n) if n.is_null() => Vec::new(),
        Some(n) if n.kind == Kind::Sequence => std::mem::take(&mut n.content),
        Some(n) => {
            return Err(InputError::NotAResourceList(format!(
                "items is a {}, not a list",
                kind_name(n.kind)
            )))
        }
    };
    let function_config = root.remove("functionConfig").filter(|n| !n.is_null());
    Ok(Input {
        doc,
        items,
        function_config,
    })
}

/// `items[i]` that are not objects (mappings), as error results.
pub fn non_objects(items: &[Node]) -> Vec<ResultItem> {
    items
        .iter()
        .enumerate()
        .filter(|(_, item)| item.kind != Kind::Mapping)
        .map(|(i, item)| {
            results::at_field(
                results::error(format!(
                    "items[{i}] is not a KRM object: it is a {}",
                    kind_name(item.kind)
                )),
                format!("items[{i}]"),
            )
        })
        .collect()
}

/// Writes the output ResourceList: the input's document (when it could be
/// read) with `items` replaced, `functionConfig` dropped and `results` set.
///
/// Only an edit can make the emitter refuse the document. Then no half
/// document is written: the output carries no items and every result, and
/// an error result saying why is added to `results`, so the run fails and
/// kpt keeps the package as it was instead of taking the empty item list
/// for the new package.
pub fn write(input: Option<Input>, items: Vec<Node>, results: &mut Vec<ResultItem>) -> String {
    let mut doc = match input {
        Some(input) => input.doc,
        None => empty_document(),
    };
    let mut root = doc.root_mut();
    // Plain `kind: ResourceList`, whatever the input's quoting: kpt's node
    // runtime recognises output by that literal text.
    if root.set_string("kind", KIND).is_err() {
        doc = empty_document();
        root = doc.root_mut();
    }
    root.remove("results");
    let mut seq = match root.remove("items") {
        Some(n) if n.kind == Kind::Sequence => n,
        _ => Node::new_sequence(),
    };
    seq.content = items;
    root.content.push(Node::new_string("items"));
    root.content.push(seq);
    set_results(root, results);
    match yaml::to_string(&doc) {
        Ok(text) => text,
        Err(e) => {
            results.push(results::error(format!("cannot write the output: {e}")));
            let mut fallback = empty_document();
            let root = fallback.root_mut();
            root.content.push(Node::new_string("items"));
            root.content.push(Node::new_sequence());
            set_results(root, results);
            yaml::to_string(&fallback).unwrap_or_else(|_| {
                let mut last = empty_document();
                set_results(last.root_mut(), &results[results.len() - 1..]);
                yaml::to_string(&last).unwrap_or_default()
            })
        }
    }
}

/// A document holding `apiVersion` and `kind` of a ResourceList.
fn empty_document() -> Node {
    let mut root = Node::new_mapping();
    root.content.push(Node::new_string("apiVersion"));
    root.content.push(Node::new_string(API_VERSION));
    root.content.push(Node::new_string("kind"));
    root.content.push(Node::new_string(KIND));
    Node::new_document(root)
}

/// Adds `results` to `root` (nothing when there are none).
fn set_results(root: &mut Node, results: &[ResultItem]) {
    if !results.is_empty() {
        let mut list = Node::new_sequence();
        list.content = results.iter().map(results::to_node).collect();
        root.content.push(Node::new_string("results"));
        root.content.push(list);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_keeps_items_and_drops_function_config() {
        let text = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- # c\n  apiVersion: v1\n  kind: A\n  metadata:\n    name: a # keep\nfunctionConfig:\n  kind: X\n";
        let input = read(text).unwrap();
        assert!(input.function_config.is_some());
        let items = input.items.clone();
        assert_eq!(
            write(Some(input), items, &mut Vec::new()),
            "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- # c\n  apiVersion: v1\n  kind: A\n  metadata:\n    name: a # keep\n"
        );
    }

    #[test]
    fn an_output_the_emitter_refuses_fails_the_run_instead_of_dropping_items() {
        let mut item = Node::new_mapping();
        item.content.push(Node::new_string("kind"));
        let mut value = Node::new_string("A");
        value.set_anchor("not an anchor");
        item.content.push(value);
        let mut results = vec![results::new(pv_core::api::Severity::Info, "kept")];
        let text = write(None, vec![item], &mut results);
        assert_eq!(results.len(), 2);
        assert!(results[1].is_error());
        assert!(
            results[1].message.starts_with("cannot write the output: "),
            "{}",
            results[1].message
        );
        let back = read(&text).unwrap();
        assert!(back.items.is_empty(), "{text}");
        assert!(text.contains("message: kept"), "{text}");
        assert!(text.contains("cannot write the output"), "{text}");
    }

    #[test]
    fn bad_inputs_are_reported() {
        assert!(matches!(read("a: [b"), Err(InputError::Yaml(_))));
        assert!(matches!(read("- a"), Err(InputError::NotAResourceList(_))));
        assert!(matches!(
            read("kind: List"),
            Err(InputError::NotAResourceList(_))
        ));
        let input = read("kind: ResourceList\nitems: [x]\n").unwrap();
        assert_eq!(non_objects(&input.items).len(), 1);
        assert_eq!(
            write(None, vec![], &mut Vec::new()),
            "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n"
        );
    }
}
