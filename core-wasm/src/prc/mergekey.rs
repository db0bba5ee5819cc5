//! Merge keys (`PRC/mergekey.go`, kpt's `addmergecomment`): before a
//! three-way merge, every resource gets the comment `# kpt-merge:
//! <namespace>/<name>` on its `metadata:` key (unless one is there) and the
//! annotation `internal.kpt.dev/upstream-identifier:
//! <group>|<kind>|<namespace>|<name>`, so the merge can match resources
//! whose name or namespace a variant changed.

use crate::render::package::{seq_indent_style, split_documents, Files};
use crate::yaml::{self, Format, Kind, Node};

/// The prefix of the merge comment.
pub const MERGE_COMMENT_PREFIX: &str = "kpt-merge:";
/// The annotation naming a resource's origin.
pub const UPSTREAM_IDENTIFIER: &str = "internal.kpt.dev/upstream-identifier";

/// Whether a file is read as resources: `*.yaml`, `*.yml` and `Kptfile`
/// (by base name); every other file passes through unchanged.
pub fn is_resource_file(path: &str) -> bool {
    let base = path.rsplit('/').next().unwrap_or(path);
    base == "Kptfile" || base.ends_with(".yaml") || base.ends_with(".yml")
}

/// Adds the merge comment and the upstream identifier to every resource of
/// the resource files; other files are kept byte for byte. A file that does
/// not parse fails the whole call, naming it.
pub fn add_merge_comments(files: &Files) -> Result<Files, String> {
    let (resources, mut out) = read_resources(files)?;
    for (path, mut docs) in resources {
        let wide = seq_indent_style(&files[&path]) == "wide";
        for doc in &mut docs {
            add_merge_comment(doc).map_err(|e| format!("{path}: {e}"))?;
        }
        let format = if wide {
            Format::KyamlWide
        } else {
            Format::Kyaml
        };
        let text = yaml::emit_stream(&docs, format).map_err(|e| format!("{path}: {e}"))?;
        out.insert(path, text);
    }
    Ok(out)
}

/// A resource file's path and its documents.
pub type ResourceFile = (String, Vec<Node>);

/// The resource files parsed (their documents by path), and every other
/// file as it is.
pub fn read_resources(files: &Files) -> Result<(Vec<ResourceFile>, Files), String> {
    let mut resources = Vec::new();
    let mut other = Files::new();
    for (path, text) in files {
        if !is_resource_file(path) {
            other.insert(path.clone(), text.clone());
            continue;
        }
        let mut docs = Vec::new();
        for chunk in split_documents(text).map_err(|e| format!("{path}: {e}"))? {
            docs.push(yaml::parse_document(&chunk).map_err(|e| format!("{path}: {e}"))?);
        }
        resources.push((path.clone(), docs));
    }
    Ok((resources, other))
}

/// `AddMergeComment.Filter` on one resource: skipped when it has no name,
/// namespace or labels.
pub fn add_merge_comment(doc: &mut Node) -> Result<(), yaml::YamlError> {
    let name = doc.name().to_string();
    let namespace = doc.namespace().to_string();
    let has_labels = doc
        .root()
        .get("metadata")
        .and_then(|m| m.get("labels"))
        .is_some_and(|l| l.kind == Kind::Mapping && !l.content.is_empty());
    if name.is_empty() && namespace.is_empty() && !has_labels {
        return Ok(());
    }
    let root = doc.root_mut();
    let Some(i) = root.key_index("metadata") else {
        return Ok(());
    };
    let key = &mut root.content[i];
    if !key.line_comment().contains(MERGE_COMMENT_PREFIX) {
        key.set_line_comment(format!("# {MERGE_COMMENT_PREFIX} {namespace}/{name}"));
    }
    let comment = key.line_comment().to_string();
    let (origin_ns, origin_name) =
        ns_and_name_for_merge(&comment).unwrap_or_else(|| (namespace.clone(), name.clone()));
    let origin_ns = if origin_ns.is_empty() {
        "default".to_string()
    } else if namespace == "~X" {
        "~C".to_string()
    } else {
        origin_ns
    };
    let api_version = doc.api_version();
    let group = api_version
        .split_once('/')
        .map(|(g, _)| g)
        .unwrap_or_default()
        .to_string();
    let kind = doc.object_kind().to_string();
    doc.set_annotation(
        UPSTREAM_IDENTIFIER,
        &format!("{group}|{kind}|{origin_ns}|{origin_name}"),
    )
}

/// `NsAndNameForMerge`: the namespace and name of a `kpt-merge:` comment.
pub fn ns_and_name_for_merge(comment: &str) -> Option<(String, String)> {
    let c = comment.strip_prefix('#').unwrap_or(comment).trim();
    let rest = c.strip_prefix(MERGE_COMMENT_PREFIX)?;
    let (ns, name) = rest.trim().split_once('/')?;
    Some((ns.to_string(), name.to_string()))
}

/// Where a resource without a path annotation is written:
/// `<namespace or non-namespaced>/<name or unnamed>.yaml`.
pub fn default_path(doc: &Node) -> String {
    let ns = match doc.namespace() {
        "" => "non-namespaced",
        ns => ns,
    };
    let name = match doc.name() {
        "" => "unnamed",
        n => n,
    };
    format!("{ns}/{name}.yaml")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> String {
        let files = Files::from([("cm.yaml".to_string(), text.to_string())]);
        add_merge_comments(&files).unwrap()["cm.yaml"].clone()
    }

    #[test]
    fn the_comment_and_the_identifier_are_added_once() {
        let got = one(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: prod\n",
        );
        assert_eq!(
            got,
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: # kpt-merge: prod/web\n  name: web\n  namespace: prod\n  annotations:\n    internal.kpt.dev/upstream-identifier: apps|Deployment|prod|web\n"
        );
        assert_eq!(one(&got), got, "a second pass changes nothing");
    }

    #[test]
    fn an_existing_comment_names_the_origin() {
        let got =
            one("apiVersion: v1\nkind: ConfigMap\nmetadata: # kpt-merge: /old\n  name: new\n");
        assert!(got.contains("metadata: # kpt-merge: /old\n"), "{got}");
        assert!(got.contains("'|ConfigMap|default|old'"), "{got}");
    }

    #[test]
    fn resources_without_name_namespace_or_labels_are_left_alone() {
        let text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  annotations:\n    a: b\n";
        assert_eq!(one(text), text);
    }

    #[test]
    fn a_file_that_does_not_parse_is_named() {
        let files = Files::from([("bad.yaml".to_string(), "not: valid: yaml: [".to_string())]);
        let err = add_merge_comments(&files).unwrap_err();
        assert!(err.starts_with("bad.yaml: "), "{err}");
    }
}
