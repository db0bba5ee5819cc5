//! Results (`config.kubernetes.io/v1` `Result`): building them with the
//! object, field and file they are about, writing them into the output
//! ResourceList, and the plain-text summary of error results used on
//! stderr and by the wasm build's `processResourceListErrors`.

use pv_core::api::resource_list::{Field, FileRef, ResourceRef};
use pv_core::api::{ResultItem, Severity};
use pv_core::yaml::{from_json, string_node, Node};

use crate::annotations;

/// A result with a message and severity and nothing else.
pub fn new(severity: Severity, message: impl Into<String>) -> ResultItem {
    ResultItem::new(severity, message)
}

/// An error result.
pub fn error(message: impl Into<String>) -> ResultItem {
    new(Severity::Error, message)
}

/// Names the object a result is about.
pub fn about(
    mut result: ResultItem,
    api_version: &str,
    kind: &str,
    name: &str,
    namespace: &str,
) -> ResultItem {
    result.resource_ref = Some(ResourceRef {
        api_version: api_version.to_string(),
        kind: kind.to_string(),
        name: name.to_string(),
        namespace: namespace.to_string(),
    });
    result
}

/// Names an item (an object read from the ResourceList): its type, name
/// and, when it has one, its file and index.
pub fn about_item(result: ResultItem, item: &Node) -> ResultItem {
    let mut result = about(
        result,
        item.api_version(),
        item.object_kind(),
        item.name(),
        item.namespace(),
    );
    if let Some(path) = annotations::path(item) {
        result = in_file(result, path, annotations::index(item));
    }
    result
}

/// Names the field a result is about.
pub fn at_field(mut result: ResultItem, path: impl Into<String>) -> ResultItem {
    result.field = Some(Field {
        path: path.into(),
        current_value: None,
        proposed_value: None,
    });
    result
}

/// Names the file (and object index in it) a result is about.
pub fn in_file(mut result: ResultItem, path: &str, index: usize) -> ResultItem {
    result.file = Some(FileRef {
        path: path.to_string(),
        index: i64::try_from(index).unwrap_or(i64::MAX),
    });
    result
}

/// The first field path (`spec.…`) a validation message names, which is
/// where upstream's messages put it.
pub fn field_in_message(message: &str) -> Option<String> {
    message
        .split_whitespace()
        .find(|w| *w == "spec" || w.starts_with("spec."))
        .map(|w| w.trim_end_matches([':', ',', ';']).to_string())
}

/// Whether any result is an error.
pub fn has_errors(results: &[ResultItem]) -> bool {
    results.iter().any(ResultItem::is_error)
}

/// A result as a YAML mapping, fields in the spec's order (message,
/// severity, resourceRef, field, file, tags).
pub fn to_node(result: &ResultItem) -> Node {
    let mut m = Node::new_mapping();
    let push = |m: &mut Node, key: &str, value: Node| {
        m.content.push(Node::new_string(key));
        m.content.push(value);
    };
    push(&mut m, "message", string_node(&result.message));
    if let Some(severity) = &result.severity {
        push(&mut m, "severity", Node::new_string(severity));
    }
    if let Some(r) = &result.resource_ref {
        let mut n = Node::new_mapping();
        push(&mut n, "apiVersion", string_node(&r.api_version));
        push(&mut n, "kind", string_node(&r.kind));
        push(&mut n, "name", string_node(&r.name));
        if !r.namespace.is_empty() {
            push(&mut n, "namespace", string_node(&r.namespace));
        }
        push(&mut m, "resourceRef", n);
    }
    if let Some(f) = &result.field {
        let mut n = Node::new_mapping();
        push(&mut n, "path", string_node(&f.path));
        if let Some(v) = &f.current_value {
            push(&mut n, "currentValue", from_json(v));
        }
        if let Some(v) = &f.proposed_value {
            push(&mut n, "proposedValue", from_json(v));
        }
        push(&mut m, "field", n);
    }
    if let Some(f) = &result.file {
        let mut n = Node::new_mapping();
        push(&mut n, "path", string_node(&f.path));
        if f.index != 0 {
            push(
                &mut n,
                "index",
                Node::new_scalar("!!int", f.index.to_string()),
            );
        }
        push(&mut m, "file", n);
    }
    if !result.tags.is_empty() {
        let mut n = Node::new_mapping();
        for (k, v) in &result.tags {
            push(&mut n, k, string_node(v));
        }
        push(&mut m, "tags", n);
    }
    m
}

/// One line per error result, as kpt prints results:
/// `[error] <apiVersion>/<kind>/[<namespace>/]<name> <field>: <message> (<file>)`.
pub fn error_summary(results: &[ResultItem]) -> String {
    let mut out = String::new();
    for r in results.iter().filter(|r| r.is_error()) {
        out.push_str("[error]");
        if let Some(o) = &r.resource_ref {
            out.push(' ');
            out.push_str(&o.api_version);
            out.push('/');
            out.push_str(&o.kind);
            out.push('/');
            if !o.namespace.is_empty() {
                out.push_str(&o.namespace);
                out.push('/');
            }
            out.push_str(&o.name);
        }
        if let Some(f) = &r.field {
            out.push(' ');
            out.push_str(&f.path);
        }
        out.push_str(": ");
        out.push_str(&r.message);
        if let Some(f) = &r.file {
            out.push_str(" (");
            out.push_str(&f.path);
            if f.index != 0 {
                out.push_str(&format!(" #{}", f.index));
            }
            out.push(')');
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pv_core::yaml::to_string;

    #[test]
    fn field_paths_are_found_in_upstream_messages() {
        assert_eq!(
            field_in_message("missing required field spec.upstream.repo").as_deref(),
            Some("spec.upstream.repo")
        );
        assert_eq!(
            field_in_message("spec.packageContext.data: Invalid value: x").as_deref(),
            Some("spec.packageContext.data")
        );
        assert_eq!(field_in_message("no field here"), None);
    }

    #[test]
    fn results_are_written_in_the_spec_order() {
        let r = in_file(
            at_field(
                about(error("bad: value"), "v1", "ConfigMap", "a", "ns"),
                "data.x",
            ),
            "a.yaml",
            2,
        );
        assert_eq!(
            to_string(&to_node(&r)).unwrap(),
            "message: 'bad: value'\nseverity: error\nresourceRef:\n  apiVersion: v1\n  kind: ConfigMap\n  name: a\n  namespace: ns\nfield:\n  path: data.x\nfile:\n  path: a.yaml\n  index: 2\n"
        );
        assert_eq!(
            error_summary(&[r]),
            "[error] v1/ConfigMap/ns/a data.x: bad: value (a.yaml #2)\n"
        );
    }
}
