//! A function's `selectors` and `exclude` (kpt's `SelectInput`).

use crate::api::Selector;
use crate::yaml::{Kind, Node};

/// Whether `item` matches every non-empty criterion of `sel`.
pub fn is_match(sel: &Selector, item: &Node) -> bool {
    let root = item.root();
    let text = |path: &[&str]| root.get_str(path).unwrap_or("");
    let map_has = |field: &str, want: &std::collections::BTreeMap<String, String>| {
        want.iter().all(|(k, v)| {
            root.get_path(&["metadata", field, k])
                .is_some_and(|n| n.kind == Kind::Scalar && n.value == *v)
        })
    };
    (sel.api_version.is_empty() || text(&["apiVersion"]) == sel.api_version)
        && (sel.kind.is_empty() || text(&["kind"]) == sel.kind)
        && (sel.name.is_empty() || text(&["metadata", "name"]) == sel.name)
        && (sel.namespace.is_empty() || text(&["metadata", "namespace"]) == sel.namespace)
        && map_has("labels", &sel.labels)
        && map_has("annotations", &sel.annotations)
}

fn is_empty(sel: &Selector) -> bool {
    sel.api_version.is_empty()
        && sel.kind.is_empty()
        && sel.name.is_empty()
        && sel.namespace.is_empty()
        && sel.labels.is_empty()
        && sel.annotations.is_empty()
}

/// The positions of the items a function receives: every item when there
/// are no selectors, else each item once per selector it matches; then the
/// items any non-empty exclusion matches are removed.
pub fn select(items: &[Node], selectors: &[Selector], exclude: &[Selector]) -> Vec<usize> {
    let mut picked: Vec<usize> = if selectors.is_empty() {
        (0..items.len()).collect()
    } else {
        let mut v = Vec::new();
        for (i, item) in items.iter().enumerate() {
            for s in selectors {
                if is_match(s, item) {
                    v.push(i);
                }
            }
        }
        v
    };
    picked.retain(|&i| {
        !exclude
            .iter()
            .any(|e| !is_empty(e) && is_match(e, &items[i]))
    });
    picked
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::parse_document;

    fn item(text: &str) -> Node {
        parse_document(text).expect("parses")
    }

    #[test]
    fn selection_matches_all_criteria_and_exclusions_win() {
        let items = vec![
            item("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels:\n    app: x\n"),
            item("apiVersion: v1\nkind: Service\nmetadata:\n  name: b\n  namespace: ns\n"),
            item("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: k\n"),
        ];
        let by_kind = |k: &str| Selector {
            kind: k.into(),
            ..Selector::default()
        };
        assert_eq!(select(&items, &[], &[]), vec![0, 1, 2]);
        assert_eq!(
            select(&items, &[by_kind("Service"), by_kind("ConfigMap")], &[]),
            vec![0, 1]
        );
        assert_eq!(select(&items, &[], &[by_kind("Kptfile")]), vec![0, 1]);
        let mut labelled = Selector::default();
        labelled.labels.insert("app".into(), "x".into());
        assert_eq!(select(&items, &[labelled], &[]), vec![0]);
        let ns = Selector {
            namespace: "ns".into(),
            ..Selector::default()
        };
        assert_eq!(select(&items, &[ns], &[Selector::default()]), vec![1]);
        // An item matching two selectors is passed twice, as kpt does.
        assert_eq!(
            select(&items, &[by_kind("Service"), Selector::default()], &[]),
            vec![0, 1, 1, 2]
        );
    }
}
