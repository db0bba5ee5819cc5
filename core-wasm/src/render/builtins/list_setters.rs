//! The catalog's `list-setters` function (`functions/go/list-setters`): the
//! setters a package uses, found in its setter comments (`# kpt-set: …`,
//! as `apply-setters` reads them) and, when the Kptfile is among the items
//! (`--include-meta-resources`), in the configs of its pipeline's
//! `apply-setters` steps. The items are left as they are.
//!
//! Results: one per setter, sorted by name, `Name: N, Value: V, Type: T,
//! Count: C` (arrays `Value: [a, b]`, `Type: array`; scalars typed by
//! their YAML tag); a warning `no setters found` when there is none.

use std::collections::BTreeMap;

use crate::render::annotations as ann;
use crate::render::result::FnResult;
use crate::yaml::{self, Kind, Node, Style};

use super::apply_setters::{clean, current_setter_values, setter_pattern};
use super::set_annotations::data_map;
use super::{FnInput, FnOutput};

/// A setter found: its value, type and how many fields use it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Found {
    value: String,
    kind: String,
    count: usize,
}

/// What the walk found, by name: array setters and scalar setters.
#[derive(Default)]
struct Setters {
    arrays: BTreeMap<String, (Vec<String>, usize)>,
    scalars: BTreeMap<String, Found>,
}

/// Runs `list-setters` on the items.
pub fn run(input: FnInput) -> FnOutput {
    let items = input.items;
    let mut setters = Setters::default();
    for (name, value) in kptfile_setters(&items) {
        match array_values(&value) {
            Some(values) => {
                setters.arrays.insert(name, (values, 0));
            }
            None => {
                setters.scalars.insert(
                    name,
                    Found {
                        value,
                        kind: "str".into(),
                        count: 0,
                    },
                );
            }
        }
    }
    for item in &items {
        setters.node(item.root());
    }
    let mut results: Vec<(String, String)> = Vec::new();
    for (name, (values, count)) in &setters.arrays {
        results.push((
            name.clone(),
            format!(
                "Name: {name}, Value: [{}], Type: array, Count: {count}",
                values.join(", ")
            ),
        ));
    }
    for (name, f) in &setters.scalars {
        results.push((
            name.clone(),
            format!(
                "Name: {name}, Value: {}, Type: {}, Count: {}",
                f.value, f.kind, f.count
            ),
        ));
    }
    // Sorted by name, arrays before scalars of the same name.
    results.sort_by(|a, b| a.0.cmp(&b.0));
    let results = if results.is_empty() {
        vec![FnResult::warning("no setters found")]
    } else {
        results
            .into_iter()
            .map(|(_, message)| FnResult {
                message,
                ..FnResult::default()
            })
            .collect()
    };
    FnOutput {
        items,
        results,
        ..FnOutput::default()
    }
}

/// The setters the root Kptfile's `apply-setters` steps give (their
/// `configMap`, or the `data` of their `configPath` file among the items),
/// later steps winning; none when the Kptfile is not among the items.
fn kptfile_setters(items: &[Node]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Some(kptfile) = items
        .iter()
        .find(|i| i.annotation(ann::PATH) == Some("Kptfile"))
    else {
        return out;
    };
    let Some(mutators) = kptfile.root().get_path(&["pipeline", "mutators"]) else {
        return out;
    };
    for f in &mutators.content {
        if !f
            .get_str(&["image"])
            .unwrap_or_default()
            .contains("apply-setters")
        {
            continue;
        }
        if let Some(cm) = f.get("configMap").filter(|c| c.kind == Kind::Mapping) {
            for (k, v) in cm.pairs() {
                out.insert(k.value.clone(), v.value.clone());
            }
        } else if let Some(path) = f.get_str(&["configPath"]) {
            if let Some(config) = items.iter().find(|i| i.annotation(ann::PATH) == Some(path)) {
                out.extend(data_map(config.root()));
            }
        }
    }
    out
}

/// A setter value read as a YAML sequence (`getArraySetterValues`): its
/// items as YAML, or `None` when it is not a sequence.
fn array_values(value: &str) -> Option<Vec<String>> {
    let doc = yaml::parse_document(value).ok()?;
    let root = doc.root();
    if root.kind != Kind::Sequence {
        return None;
    }
    root.content
        .iter()
        .map(|item| {
            yaml::emit_stream(&[Node::new_document(item.clone())], yaml::Format::Kyaml)
                .ok()
                .map(|t| t.replace('\n', ""))
        })
        .collect()
}

impl Setters {
    /// `acceptImpl`: each mapping's tagged sequences, then its values;
    /// each sequence item; each scalar.
    fn node(&mut self, node: &Node) {
        match node.kind {
            Kind::Document => {
                if let Some(root) = node.content.first() {
                    self.node(root);
                }
            }
            Kind::Mapping => {
                self.mapping(node);
                for pair in node.content.chunks(2) {
                    if let [_, value] = pair {
                        self.node(value);
                    }
                }
            }
            Kind::Sequence => node.content.iter().for_each(|i| self.node(i)),
            Kind::Scalar => self.scalar(node),
            Kind::Alias => {}
        }
    }

    /// `visitMapping`: sequences whose key (or, in flow style, the
    /// sequence) carries a setter comment.
    fn mapping(&mut self, object: &Node) {
        for pair in object.content.chunks(2) {
            let [key, value] = pair else { continue };
            if value.kind != Kind::Sequence {
                continue;
            }
            let comment = if value.style.contains(Style::FLOW) {
                value.line_comment()
            } else {
                key.line_comment()
            };
            let Some(pattern) = setter_pattern(comment).filter(|p| !p.is_empty()) else {
                continue;
            };
            let mut values: Vec<String> = value.content.iter().map(|v| v.value.clone()).collect();
            values.sort();
            self.arrays
                .entry(clean(pattern).to_string())
                .and_modify(|(_, count)| *count += 1)
                .or_insert((values, 1));
        }
    }

    /// `visitScalar`: the setters a tagged scalar's pattern reads back.
    fn scalar(&mut self, object: &Node) {
        let Some(pattern) = setter_pattern(object.line_comment()).filter(|p| !p.is_empty()) else {
            return;
        };
        let kind = object.tag.trim_start_matches("!!").to_string();
        for (name, value) in current_setter_values(pattern, &object.value) {
            match self.scalars.get_mut(&name) {
                Some(found) => {
                    if found.kind == "str" && kind != "str" {
                        found.kind = kind.clone();
                    }
                    found.count += 1;
                }
                None => {
                    self.scalars.insert(
                        name,
                        Found {
                            value,
                            kind: kind.clone(),
                            count: 1,
                        },
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(text: &str) -> Vec<String> {
        let out = run(FnInput {
            items: yaml::parse_stream(text).expect("parses"),
            function_config: None,
        });
        out.results.into_iter().map(|r| r.message).collect()
    }

    #[test]
    fn setters_are_listed_with_their_values_types_and_counts() {
        assert_eq!(
            messages("a:\n  replicas: 3 # kpt-set: ${replicas}\n  image: \"nginx:1.2\" # kpt-set: nginx:${tag}\n  other: \"4\" # kpt-set: ${replicas}\nenvs: # kpt-set: ${env}\n- b\n- a\nmore: [x] # kpt-set: ${env}\n"),
            vec![
                "Name: env, Value: [a, b], Type: array, Count: 2",
                "Name: replicas, Value: 3, Type: int, Count: 2",
                "Name: tag, Value: 1.2, Type: str, Count: 1",
            ]
        );
    }

    #[test]
    fn the_kptfiles_apply_setters_config_counts_when_included() {
        assert_eq!(
            messages("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\n  annotations:\n    internal.config.kubernetes.io/path: Kptfile\npipeline:\n  mutators:\n  - image: apply-setters:v0.2\n    configMap:\n      unused: x\n      list: '[a, b]'\n---\na: 1 # kpt-set: ${unused}\n"),
            vec![
                "Name: list, Value: [a, b], Type: array, Count: 0",
                "Name: unused, Value: x, Type: int, Count: 1",
            ]
        );
    }

    #[test]
    fn no_setters_is_a_warning() {
        let out = run(FnInput {
            items: yaml::parse_stream("a: 1 # a comment\n").expect("parses"),
            function_config: None,
        });
        assert_eq!(out.results, vec![FnResult::warning("no setters found")]);
    }
}
