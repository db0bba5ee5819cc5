//! The catalog's `create-setters` function (`functions/go/create-setters`):
//! the inverse of apply-setters. Every `data` entry of the ConfigMap is a
//! setter; a scalar field whose value contains setter values gets the
//! comment `# kpt-set: <value with each ${name}>`, and a sequence whose
//! items are exactly an array setter's gets `# kpt-set: ${name}`.
//!
//! * Scalar setters are tried longest value first, left to right through
//!   the field's value (Go's `strings.Replacer`); multi-line values and
//!   kpt's `config.kubernetes.io` annotations are left alone.
//! * A sequence's items and an array setter's values are compared sorted.
//!   A flow sequence that gets a comment, or holds any scalar setter's
//!   value, is written in block style with the comment on its key.
//! * Each comment added is a result; none at all is the function's error
//!   (`no matches for the input list of setters`).

use crate::render::annotations as ann;
use crate::yaml::{self, Kind, Node, Style};

use super::set_annotations::{data_map, file_annotation};
use super::set_namespace::go_quote;
use super::{field_result, framework_error, FnInput, FnOutput};

struct Scalar {
    name: String,
    value: String,
}

struct Array {
    name: String,
    values: Vec<String>,
}

struct Added {
    file: String,
    field: String,
    value: String,
    comment: String,
}

/// Runs `create-setters` on the items.
pub fn run(input: FnInput) -> FnOutput {
    let mut items = input.items;
    let data = input
        .function_config
        .as_ref()
        .map(|c| data_map(c.root()))
        .unwrap_or_default();
    let (scalars, arrays) = match decode(data) {
        Ok(s) => s,
        Err(e) => return failed(items, e),
    };
    let mut added = Vec::new();
    for item in &mut items {
        let file = file_annotation(item, ann::PATH, ann::LEGACY_PATH);
        let mut walk = Walk {
            scalars: &scalars,
            arrays: &arrays,
            file: &file,
            added: &mut added,
        };
        walk.node(item.root_mut(), "");
    }
    if added.is_empty() {
        return failed(items, "no matches for the input list of setters".into());
    }
    let results = added
        .into_iter()
        .map(|a| {
            field_result(
                format!(
                    "Added line comment {} for field with value {}",
                    go_quote(&a.comment),
                    go_quote(&a.value)
                ),
                a.file,
                a.field,
            )
        })
        .collect();
    FnOutput {
        items,
        results,
        ..FnOutput::default()
    }
}

fn failed(items: Vec<Node>, message: String) -> FnOutput {
    framework_error(items, "failed to create setters", message)
}

/// `Decode`: each value read as YAML, a sequence an array setter (its
/// items sorted), a scalar a scalar setter; scalar setters longest value
/// first.
fn decode(
    data: std::collections::BTreeMap<String, String>,
) -> Result<(Vec<Scalar>, Vec<Array>), String> {
    if data.is_empty() {
        return Err("config map cannot be empty".into());
    }
    let mut scalars = Vec::new();
    let mut arrays = Vec::new();
    for (name, value) in data {
        let parsed = yaml::parse_document(&value).map_err(|_| "parsing error".to_string())?;
        let root = parsed.root();
        match root.kind {
            Kind::Sequence => {
                let mut values: Vec<String> =
                    root.content.iter().map(|n| n.value.clone()).collect();
                values.sort();
                arrays.push(Array { name, values });
            }
            Kind::Scalar => scalars.push(Scalar { name, value }),
            _ => {}
        }
    }
    // An empty value would match between every two characters.
    scalars.retain(|s| !s.value.is_empty());
    scalars.sort_by_key(|s| std::cmp::Reverse(s.value.len()));
    Ok((scalars, arrays))
}

struct Walk<'a> {
    scalars: &'a [Scalar],
    arrays: &'a [Array],
    file: &'a str,
    added: &'a mut Vec<Added>,
}

impl Walk<'_> {
    fn node(&mut self, node: &mut Node, path: &str) {
        match node.kind {
            Kind::Document => {
                if let Some(root) = node.content.first_mut() {
                    self.node(root, "");
                }
            }
            Kind::Mapping => {
                self.mapping(node, path);
                for pair in node.content.chunks_mut(2) {
                    if let [key, value] = pair {
                        let field = format!("{path}.{}", key.value);
                        self.node(value, &field);
                    }
                }
            }
            Kind::Sequence => {
                for (i, item) in node.content.iter_mut().enumerate() {
                    self.node(item, &format!("{path}[{i}]"));
                }
            }
            Kind::Scalar => self.scalar(node, path),
            Kind::Alias => {}
        }
    }

    /// `visitMapping`: a sequence whose items are an array setter's.
    fn mapping(&mut self, object: &mut Node, path: &str) {
        for pair in object.content.chunks_mut(2) {
            let [key, value] = pair else { continue };
            if value.kind != Kind::Sequence {
                continue;
            }
            let field = format!("{path}.{}", key.value)
                .trim_start_matches('.')
                .to_string();
            let mut values: Vec<String> = value.content.iter().map(|n| n.value.clone()).collect();
            values.sort();
            // Where the comment goes: the key of a block sequence, the
            // sequence itself in flow style (moved to the key when the
            // sequence turns to block style).
            let mut on_key = true;
            if value.style.contains(Style::FLOW) {
                let holds_scalar = values
                    .iter()
                    .any(|v| self.scalars.iter().any(|s| v.contains(&s.value)));
                if holds_scalar {
                    value.style = Style::plain();
                } else {
                    on_key = false;
                }
            }
            let Some(array) = self.arrays.iter().find(|a| a.values == values) else {
                continue;
            };
            if !on_key && !values.is_empty() {
                value.style = Style::plain();
                on_key = true;
            }
            let comment = format!("kpt-set: ${{{}}}", array.name);
            if on_key {
                key.set_line_comment(format!("# {comment}"));
            } else {
                value.set_line_comment(format!("# {comment}"));
            }
            self.added.push(Added {
                file: self.file.to_string(),
                field,
                value: format!("[{}]", values.join(" ")),
                comment,
            });
        }
    }

    /// `visitScalar`: a value holding setter values gets its pattern.
    fn scalar(&mut self, object: &mut Node, path: &str) {
        if path.contains(".annotations.internal.config.kubernetes.io")
            || path.contains(".annotations.config.kubernetes.io")
            || object.value.contains('\n')
        {
            return;
        }
        let Some(pattern) = replace(&object.value, self.scalars) else {
            return;
        };
        let comment = format!("kpt-set: {pattern}");
        object.set_line_comment(format!("# {comment}"));
        self.added.push(Added {
            file: self.file.to_string(),
            field: path.trim_start_matches('.').to_string(),
            value: object.value.clone(),
            comment,
        });
    }
}

/// Go's `strings.Replacer` over the setters (each value to `${name}`, the
/// first setter matching at a position winning): `None` when nothing
/// matched.
fn replace(value: &str, scalars: &[Scalar]) -> Option<String> {
    let mut out = String::with_capacity(value.len());
    let mut matched = false;
    let mut rest = value;
    while !rest.is_empty() {
        if let Some(s) = scalars.iter().find(|s| rest.starts_with(s.value.as_str())) {
            out.push_str(&format!("${{{}}}", s.name));
            rest = &rest[s.value.len()..];
            matched = true;
        } else {
            let c = rest.chars().next().unwrap_or_default();
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    matched.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_on(resources: &str, data: &str) -> (String, FnOutput) {
        let out = run(FnInput {
            items: yaml::parse_stream(resources).expect("resources"),
            function_config: Some(
                yaml::parse_document(&format!(
                    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: s\ndata:\n{data}"
                ))
                .expect("config"),
            ),
        });
        let text = yaml::emit_stream(&out.items, yaml::Format::Kyaml).expect("emit");
        (text, out)
    }

    #[test]
    fn scalars_and_arrays_get_their_setter_comments() {
        let (text, out) = run_on(
            "name: ubuntu-development\nimage: nginx:1.1.2\nroles:\n- pro\n- dev\nflow: [a, b]\nother: x\n",
            "  image: ubuntu\n  app: nginx\n  tag: 1.1.2\n  role: |\n    - dev\n    - pro\n  ab: '[b, a]'\n",
        );
        assert_eq!(out.failure, None);
        assert_eq!(
            text,
            "name: ubuntu-development # kpt-set: ${image}-development\nimage: nginx:1.1.2 # kpt-set: ${app}:${tag}\nroles: # kpt-set: ${role}\n- pro\n- dev\nflow: # kpt-set: ${ab}\n- a\n- b\nother: x\n"
        );
        // The mapping's sequences come first, as the catalog visits them.
        assert_eq!(
            out.results[0].message,
            "Added line comment \"kpt-set: ${role}\" for field with value \"[dev pro]\""
        );
        assert!(out
            .results
            .iter()
            .any(|r| r.message == "Added line comment \"kpt-set: ${image}-development\" for field with value \"ubuntu-development\""));
        assert!(out
            .results
            .iter()
            .any(|r| r.message.contains("for field with value \"[dev pro]\"")));
    }

    #[test]
    fn the_longest_value_wins_and_no_match_is_an_error() {
        assert_eq!(
            replace(
                "nginx-abc-development",
                &[
                    Scalar {
                        name: "long".into(),
                        value: "nginx-abc".into()
                    },
                    Scalar {
                        name: "short".into(),
                        value: "nginx".into()
                    }
                ]
            )
            .as_deref(),
            Some("${long}-development")
        );
        let (_, out) = run_on("a: b\n", "  x: y\n");
        assert_eq!(
            out.failure.as_deref(),
            Some("no matches for the input list of setters")
        );
        let out = run(FnInput::default());
        assert_eq!(out.failure.as_deref(), Some("config map cannot be empty"));
        assert_eq!(
            out.results[0].message,
            "failed to create setters: config map cannot be empty"
        );
    }
}
