//! The annotations kpt puts on items (kyaml's `kioutil`), and the one this
//! project uses to mark objects that stand in for in-cluster resources.

use pv_core::yaml::{Kind, Node, Style};

/// Slash-separated path of the file an item comes from, relative to the
/// package (`kioutil.PathAnnotation`).
pub const PATH: &str = "internal.config.kubernetes.io/path";
/// Position of the item in its file (`kioutil.IndexAnnotation`).
pub const INDEX: &str = "internal.config.kubernetes.io/index";
/// Legacy duplicate of [`PATH`], still sent by kpt.
pub const LEGACY_PATH: &str = "config.kubernetes.io/path";
/// Legacy duplicate of [`INDEX`], still sent by kpt.
pub const LEGACY_INDEX: &str = "config.kubernetes.io/index";
/// Legacy item id kpt uses to copy comments back (`config.k8s.io/id`).
pub const LEGACY_ID: &str = "config.k8s.io/id";
/// Prefix of every kpt-internal annotation (id, seqindent, …).
pub const INTERNAL_PREFIX: &str = "internal.config.kubernetes.io/";
/// Marks an item that stands in for an in-cluster object: an injection
/// source, a Repository, a target object or the upstream PackageRevision.
/// Such items are inputs only and never appear in a function's output.
pub const CLUSTER_OBJECT: &str = "porch-variants/cluster-object";

/// Whether `key` is an annotation kpt manages (path, index, ids, sequence
/// indentation, …) and strips when it writes files.
pub fn is_kpt_annotation(key: &str) -> bool {
    key.starts_with(INTERNAL_PREFIX)
        || key == LEGACY_PATH
        || key == LEGACY_INDEX
        || key == LEGACY_ID
}

/// `metadata.annotations[key]` of an item, when it is a scalar.
pub fn get<'a>(item: &'a Node, key: &str) -> Option<&'a str> {
    let value = item.get("metadata")?.get("annotations")?.get(key)?;
    (value.kind == Kind::Scalar).then_some(value.value.as_str())
}

/// The file of an item: the path annotation, else its legacy duplicate.
pub fn path(item: &Node) -> Option<&str> {
    get(item, PATH)
        .or_else(|| get(item, LEGACY_PATH))
        .filter(|p| !p.is_empty())
}

/// The position of an item in its file (0 when absent or not a number).
pub fn index(item: &Node) -> usize {
    get(item, INDEX)
        .or_else(|| get(item, LEGACY_INDEX))
        .and_then(|i| i.trim().parse().ok())
        .unwrap_or(0)
}

/// Whether an item is annotated `porch-variants/cluster-object: "true"`.
pub fn is_cluster_object(item: &Node) -> bool {
    get(item, CLUSTER_OBJECT) == Some("true")
}

/// The kpt annotations removed from an item, as key and value nodes in
/// their original order and style, to put back on the item's successor.
pub type Removed = Vec<(Node, Node)>;

/// Removes kpt's annotations (and, when `cluster` is set, the
/// cluster-object marker) from `item`, then an `annotations` mapping and a
/// `metadata` mapping left empty, as kyaml does before writing a file.
pub fn strip(item: &mut Node, cluster: bool) -> Removed {
    let mut removed = Removed::new();
    let Some(meta) = item.get_mut("metadata") else {
        return removed;
    };
    if let Some(annotations) = meta.get_mut("annotations") {
        if annotations.kind == Kind::Mapping {
            let content = std::mem::take(&mut annotations.content);
            let mut pairs = content.into_iter();
            while let (Some(key), Some(value)) = (pairs.next(), pairs.next()) {
                let name = key.as_str().unwrap_or("");
                if is_kpt_annotation(name) || (cluster && name == CLUSTER_OBJECT) {
                    removed.push((key, value));
                } else {
                    annotations.content.push(key);
                    annotations.content.push(value);
                }
            }
            if annotations.content.is_empty() {
                meta.remove("annotations");
            }
        }
    }
    if meta.kind == Kind::Mapping && meta.content.is_empty() {
        item.remove("metadata");
    }
    removed
}

/// Puts annotations removed by [`strip`] back at the end of
/// `metadata.annotations` (created when missing).
pub fn restore(item: &mut Node, removed: &Removed) -> pv_core::yaml::Result<()> {
    if removed.is_empty() {
        return Ok(());
    }
    let annotations = item.upsert_map("metadata")?.upsert_map("annotations")?;
    for (key, value) in removed {
        if let Some(name) = key.as_str() {
            annotations.remove(name);
        }
        annotations.content.push(key.clone());
        annotations.content.push(value.clone());
    }
    Ok(())
}

/// The path and index annotations (new and legacy) kpt expects on a new
/// item, single-quoted as kpt writes them.
pub fn location(path: &str, index: usize) -> Removed {
    let quoted = |v: &str| {
        let mut n = Node::new_string(v);
        n.style = Style::SINGLE_QUOTED;
        n
    };
    let index = index.to_string();
    vec![
        (Node::new_string(LEGACY_INDEX), quoted(&index)),
        (Node::new_string(LEGACY_PATH), quoted(path)),
        (Node::new_string(INDEX), quoted(&index)),
        (Node::new_string(PATH), quoted(path)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use pv_core::yaml::{parse_document, to_string};

    #[test]
    fn strip_then_restore_round_trips_and_empties_are_removed() {
        let text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  annotations:\n    config.kubernetes.io/path: 'a.yaml'\n    internal.config.kubernetes.io/path: 'a.yaml'\n    internal.config.kubernetes.io/index: '1'\n";
        let mut doc = parse_document(text).unwrap();
        assert_eq!(path(&doc.content[0]), Some("a.yaml"));
        assert_eq!(index(&doc.content[0]), 1);
        let removed = strip(doc.root_mut(), false);
        assert_eq!(removed.len(), 3);
        assert_eq!(
            to_string(&doc).unwrap(),
            "apiVersion: v1\nkind: ConfigMap\n"
        );
        restore(doc.root_mut(), &removed).unwrap();
        assert_eq!(to_string(&doc).unwrap(), text);
    }

    #[test]
    fn only_kpt_annotations_are_stripped() {
        assert!(is_kpt_annotation("internal.config.kubernetes.io/seqindent"));
        assert!(is_kpt_annotation("config.k8s.io/id"));
        assert!(!is_kpt_annotation("config.kubernetes.io/local-config"));
        assert!(!is_kpt_annotation(CLUSTER_OBJECT));
    }
}
