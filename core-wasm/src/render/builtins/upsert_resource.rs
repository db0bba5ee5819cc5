//! The catalog's `upsert-resource` function (`functions/go/upsert-resource`):
//! the function config is a resource (or a `List` of them) to put in the
//! package. Each replaces every resource of the same group, kind, name and
//! namespace (and path, when it names one with
//! `config.kubernetes.io/target-path`), keeping where that resource lives;
//! a resource that matches none is added, to its target path if it has one.
//!
//! No results on success; an error result `failed to upsert resource: …`
//! otherwise.

use std::collections::BTreeMap;

use crate::render::annotations as ann;
use crate::yaml::{self, Kind, Node};

use super::{framework_error, FnInput, FnOutput};

/// Where the config says a resource goes.
const TARGET_PATH: &str = "config.kubernetes.io/target-path";
/// The annotations of kpt v0's function configs.
const FUNCTION_ANNOTATIONS: [&str; 2] = ["config.kubernetes.io/function", "config.k8s.io/function"];
/// The annotations by which kpt keeps track of where an item lives, kept
/// from the resource a replacement takes the place of.
const PLACE_ANNOTATIONS: [&str; 8] = ann::PLACE;

/// Runs `upsert-resource` on the items.
pub fn run(input: FnInput) -> FnOutput {
    let mut items = input.items;
    let Some(config) = input.function_config else {
        return failed(items, "missing function config".into());
    };
    let resources = match unwrap(config.root()) {
        Ok(r) => r,
        Err(e) => return failed(items, e),
    };
    for resource in resources {
        if let Err(e) = upsert(&mut items, &resource) {
            return failed(items, e);
        }
    }
    FnOutput {
        items,
        ..FnOutput::default()
    }
}

fn failed(items: Vec<Node>, message: String) -> FnOutput {
    framework_error(items, "failed to upsert resource", message)
}

/// The resources a config holds: a `List`'s items, or the config itself.
fn unwrap(config: &Node) -> Result<Vec<Node>, String> {
    if config.kind != Kind::Mapping {
        return Err("missing Resource metadata".into());
    }
    if config.get_str(&["kind"]) != Some("List") {
        return Ok(vec![config.clone()]);
    }
    Ok(config
        .get("items")
        .map(|items| items.content.clone())
        .unwrap_or_default())
}

fn annotations(node: &Node) -> BTreeMap<String, String> {
    node.get_path(&["metadata", "annotations"])
        .filter(|a| a.kind == Kind::Mapping)
        .map(|a| {
            a.pairs()
                .map(|(k, v)| (k.value.clone(), v.value.clone()))
                .collect()
        })
        .unwrap_or_default()
}

fn group(api_version: &str) -> &str {
    api_version.split_once('/').map_or("", |(g, _)| g)
}

fn is_function_config(node: &Node) -> bool {
    let a = annotations(node);
    FUNCTION_ANNOTATIONS
        .iter()
        .any(|k| a.get(*k).is_some_and(|v| !v.is_empty()))
}

/// kyaml's `SetAnnotations`: the annotations replaced by `map`, keys
/// sorted; an empty map leaves none.
fn set_annotations(node: &mut Node, map: &BTreeMap<String, String>) -> Result<(), String> {
    let root = node.root_mut();
    if let Some(meta) = root.get_mut("metadata") {
        meta.remove("annotations");
    }
    if map.is_empty() {
        return Ok(());
    }
    let mut anns = Node::new_mapping();
    for (k, v) in map {
        anns.set(k, yaml::string_node(v))
            .map_err(|e| e.to_string())?;
    }
    root.upsert_map("metadata")
        .and_then(|meta| meta.set("annotations", anns))
        .map_err(|e| e.to_string())
}

fn upsert(items: &mut Vec<Node>, resource: &Node) -> Result<(), String> {
    if resource.kind != Kind::Mapping {
        return Err("missing Resource metadata".into());
    }
    let wanted = annotations(resource);
    let target = wanted.get(TARGET_PATH).cloned().unwrap_or_default();
    let key = |n: &Node| {
        (
            group(n.get_str(&["apiVersion"]).unwrap_or_default()).to_string(),
            n.get_str(&["kind"]).unwrap_or_default().to_string(),
            n.get_str(&["metadata", "name"])
                .unwrap_or_default()
                .to_string(),
            n.get_str(&["metadata", "namespace"])
                .unwrap_or_default()
                .to_string(),
        )
    };
    let want_key = key(resource);
    let mut found = false;
    for item in items.iter_mut() {
        let root = item.root();
        if is_function_config(root) || key(root) != want_key {
            continue;
        }
        let place = annotations(root);
        if !target.is_empty() && place.get(ann::PATH) != Some(&target) {
            continue;
        }
        let mut merged = wanted.clone();
        for k in PLACE_ANNOTATIONS {
            merged.remove(k);
            if let Some(v) = place.get(k) {
                merged.insert(k.to_string(), v.clone());
            }
        }
        for k in FUNCTION_ANNOTATIONS.iter().chain([&TARGET_PATH]) {
            merged.remove(*k);
        }
        let mut replacement = Node::new_document(resource.clone());
        set_annotations(&mut replacement, &merged)?;
        *item = replacement;
        found = true;
    }
    if !found {
        let mut added = wanted;
        for k in FUNCTION_ANNOTATIONS.iter().chain(&PLACE_ANNOTATIONS) {
            added.remove(*k);
        }
        if let Some(path) = added.remove(TARGET_PATH).filter(|p| !p.is_empty()) {
            added.insert(ann::PATH.to_string(), path);
        }
        let mut new = Node::new_document(resource.clone());
        set_annotations(&mut new, &added)?;
        items.push(new);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn docs(text: &str) -> Vec<Node> {
        yaml::parse_stream(text).expect("parses")
    }

    fn emit(items: &[Node]) -> String {
        yaml::emit_stream(items, yaml::Format::Kyaml).expect("emits")
    }

    const ITEMS: &str = "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n  namespace: n\n  annotations:\n    internal.config.kubernetes.io/path: a.yaml\nspec:\n  selector:\n    app: foo\n";

    #[test]
    fn a_matching_resource_is_replaced_where_it_lives() {
        let out = run(FnInput {
            items: docs(ITEMS),
            function_config: docs("apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n  namespace: n\n  annotations:\n    team: x\nspec:\n  selector:\n    app: bar\n").pop(),
        });
        assert_eq!(out.failure, None);
        assert_eq!(
            emit(&out.items),
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n  namespace: n\n  annotations:\n    internal.config.kubernetes.io/path: a.yaml\n    team: x\nspec:\n  selector:\n    app: bar\n"
        );
    }

    #[test]
    fn a_new_resource_is_added_at_its_target_path() {
        let out = run(FnInput {
            items: docs(ITEMS),
            function_config: docs("apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: c\n    annotations:\n      config.kubernetes.io/target-path: cm.yaml\n").pop(),
        });
        assert_eq!(out.items.len(), 2);
        assert_eq!(out.items[1].annotation(ann::PATH), Some("cm.yaml"));
        assert_eq!(out.items[1].annotation(TARGET_PATH), None);
        // Another path: not the same resource.
        let out = run(FnInput {
            items: docs(ITEMS),
            function_config: docs("apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n  namespace: n\n  annotations:\n    config.kubernetes.io/target-path: b.yaml\n").pop(),
        });
        assert_eq!(out.items.len(), 2);
        assert_eq!(
            out.items[0].root().get_str(&["spec", "selector", "app"]),
            Some("foo")
        );
    }

    #[test]
    fn no_config_is_an_error_result() {
        let out = run(FnInput {
            items: docs(ITEMS),
            function_config: None,
        });
        assert!(out.failure.is_some());
        assert_eq!(
            out.results[0].message,
            "failed to upsert resource: missing function config"
        );
    }
}
