//! The catalog's `remove-local-config-resources` function
//! (`functions/go/remove-local-config-resources`): every resource annotated
//! `config.kubernetes.io/local-config: "true"` (any case) leaves the
//! package.
//!
//! Results: `Number of resources pruned: N`, then `Resource name: [NAME]`
//! with its file per resource; a warning when none is found.

use crate::render::annotations as ann;
use crate::render::result::{FileRef, FnResult};
use crate::yaml::Node;

use super::set_annotations::file_annotation;
use super::{FnInput, FnOutput};

const LOCAL_CONFIG: &str = "config.kubernetes.io/local-config";

/// Runs `remove-local-config-resources` on the items.
pub fn run(input: FnInput) -> FnOutput {
    let mut kept: Vec<Node> = Vec::with_capacity(input.items.len());
    let mut pruned = Vec::new();
    for item in input.items {
        let root = item.root();
        if root.is_null() || root.content.is_empty() {
            // kyaml's IsNilOrEmpty: dropped without a word.
            continue;
        }
        let local = item
            .annotation(LOCAL_CONFIG)
            .is_some_and(|v| v.eq_ignore_ascii_case("true"));
        if !local {
            kept.push(item);
            continue;
        }
        pruned.push(FnResult {
            file: Some(FileRef {
                path: file_annotation(&item, ann::PATH, ann::LEGACY_PATH),
                index: 0,
            }),
            ..FnResult::info(format!(
                "Resource name: [{}]",
                root.get_str(&["metadata", "name"]).unwrap_or_default()
            ))
        });
    }
    let results = if pruned.is_empty() {
        vec![FnResult::warning(
            "Found no resources to prune with the local config annotation",
        )]
    } else {
        let mut r = vec![FnResult::info(format!(
            "Number of resources pruned: {}",
            pruned.len()
        ))];
        r.extend(pruned);
        r
    };
    FnOutput {
        items: kept,
        results,
        ..FnOutput::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml;

    fn items(text: &str) -> Vec<Node> {
        yaml::parse_stream(text).expect("parses")
    }

    #[test]
    fn local_config_resources_go_and_are_named() {
        let out = run(FnInput {
            items: items("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kept\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: gone\n  annotations:\n    config.kubernetes.io/local-config: \"TRUE\"\n    internal.config.kubernetes.io/path: a.yaml\n"),
            function_config: None,
        });
        assert_eq!(out.items.len(), 1);
        assert_eq!(
            out.items[0].root().get_str(&["metadata", "name"]),
            Some("kept")
        );
        assert_eq!(out.results[0].message, "Number of resources pruned: 1");
        assert_eq!(out.results[1].message, "Resource name: [gone]");
        assert_eq!(
            out.results[1].file.as_ref().map(|f| f.path.as_str()),
            Some("a.yaml")
        );
    }

    #[test]
    fn nothing_to_prune_is_a_warning() {
        let out = run(FnInput {
            items: items("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kept\n  annotations:\n    config.kubernetes.io/local-config: \"false\"\n"),
            function_config: None,
        });
        assert_eq!(out.items.len(), 1);
        assert_eq!(
            out.results,
            vec![FnResult::warning(
                "Found no resources to prune with the local config annotation"
            )]
        );
    }
}
