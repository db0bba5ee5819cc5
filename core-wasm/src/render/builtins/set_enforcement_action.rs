//! The catalog's `set-enforcement-action` function
//! (`functions/go/set-enforcement-action`): every Gatekeeper constraint
//! (`constraints.gatekeeper.sh/v1beta1`, named, with a kind) gets
//! `spec.enforcementAction` set to the ConfigMap's `enforcementAction`
//! (`deny`, `warn` or `dryrun`, the config's only key).
//!
//! Results: `Number of policies set to [A]: N`, then `Policy name: [NAME]`
//! with its file per policy; a warning when there is none.

use crate::render::annotations as ann;
use crate::render::result::{FileRef, FnResult};
use crate::yaml::{Kind, Node, Style};

use super::set_annotations::{data_map, file_annotation};
use super::{framework_error, FnInput, FnOutput};

const POLICY_API_VERSION: &str = "constraints.gatekeeper.sh/v1beta1";
const ACTIONS: [&str; 3] = ["deny", "warn", "dryrun"];

/// Runs `set-enforcement-action` on the items.
pub fn run(input: FnInput) -> FnOutput {
    let mut items = input.items;
    let data = input
        .function_config
        .as_ref()
        .map(|c| data_map(c.root()))
        .unwrap_or_default();
    let action = if data.len() != 1 {
        Err("expecting exactly 1 enforcementAction as part of the ConfigMap".to_string())
    } else {
        let action = data.get("enforcementAction").cloned().unwrap_or_default();
        if ACTIONS.contains(&action.as_str()) {
            Ok(action)
        } else {
            Err(format!(
                "expected values for enforcementAction are [{}] or [{}] or [{}]",
                ACTIONS[0], ACTIONS[1], ACTIONS[2]
            ))
        }
    };
    let action = match action {
        Ok(a) => a,
        Err(e) => return failed(items, e),
    };
    let mut policies = Vec::new();
    for item in &mut items {
        let file = file_annotation(item, ann::PATH, ann::LEGACY_PATH);
        let root = item.root_mut();
        let name = root
            .get_str(&["metadata", "name"])
            .unwrap_or_default()
            .to_string();
        let kind = root.get_str(&["kind"]).unwrap_or_default();
        if name.is_empty()
            || kind.is_empty()
            || root.get_str(&["apiVersion"]) != Some(POLICY_API_VERSION)
        {
            continue;
        }
        if root.get("spec").is_none() {
            // kyaml's `LookupCreate(ScalarNode, "spec")` makes `spec` a
            // scalar, on which the field cannot be set.
            return failed(
                items,
                "wrong Node Kind for  expected: MappingNode was ScalarNode: value: {}".into(),
            );
        }
        let Some(spec) = root.get_mut("spec").filter(|s| s.kind == Kind::Mapping) else {
            return failed(
                items,
                format!("wrong Node Kind for spec expected: MappingNode (policy {name})"),
            );
        };
        match spec.get_mut("enforcementAction") {
            Some(field) => {
                field.kind = Kind::Scalar;
                field.content.clear();
                field.value = action.clone();
                field.tag = "".into();
                field.style = Style::plain();
            }
            None => {
                if let Err(e) = spec.set("enforcementAction", Node::new_string(action.clone())) {
                    return failed(items, e.to_string());
                }
            }
        }
        policies.push(FnResult {
            file: Some(FileRef {
                path: file,
                index: 0,
            }),
            ..FnResult::info(format!("Policy name: [{name}]"))
        });
    }
    let results = if policies.is_empty() {
        vec![FnResult::warning(format!(
            "Found no policy to set to [{action}]"
        ))]
    } else {
        let mut r = vec![FnResult::info(format!(
            "Number of policies set to [{action}]: {}",
            policies.len()
        ))];
        r.extend(policies);
        r
    };
    FnOutput {
        items,
        results,
        ..FnOutput::default()
    }
}

fn failed(items: Vec<Node>, message: String) -> FnOutput {
    framework_error(items, "failed to process policies", message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml;

    fn run_on(resources: &str, config: &str) -> (String, FnOutput) {
        let out = run(FnInput {
            items: yaml::parse_stream(resources).expect("resources"),
            function_config: Some(yaml::parse_document(config).expect("config")),
        });
        let text = yaml::emit_stream(&out.items, yaml::Format::Kyaml).expect("emit");
        (text, out)
    }

    const POLICY: &str = "apiVersion: constraints.gatekeeper.sh/v1beta1\nkind: K8sX\nmetadata:\n  name: p\nspec:\n  enforcementAction: deny # was\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\nspec:\n  enforcementAction: deny\n";

    #[test]
    fn constraints_get_the_action_and_other_objects_do_not() {
        let (text, out) = run_on(
            POLICY,
            "apiVersion: v1\nkind: ConfigMap\ndata:\n  enforcementAction: dryrun\n",
        );
        assert_eq!(out.failure, None);
        assert!(text.contains("enforcementAction: dryrun # was\n"), "{text}");
        assert!(text.ends_with("enforcementAction: deny\n"), "{text}");
        assert_eq!(
            out.results[0].message,
            "Number of policies set to [dryrun]: 1"
        );
        assert_eq!(out.results[1].message, "Policy name: [p]");
    }

    #[test]
    fn a_bad_config_is_refused_and_no_policy_warns() {
        let (_, out) = run_on(
            POLICY,
            "apiVersion: v1\nkind: ConfigMap\ndata:\n  enforcementAction: block\n",
        );
        assert_eq!(
            out.results[0].message,
            "failed to process policies: expected values for enforcementAction are [deny] or [warn] or [dryrun]"
        );
        assert!(out.failure.is_some());
        let (_, out) = run_on(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n",
            "apiVersion: v1\nkind: ConfigMap\ndata:\n  enforcementAction: warn\n",
        );
        assert_eq!(out.results[0].message, "Found no policy to set to [warn]");
        assert_eq!(out.results[0].severity.as_deref(), Some("warning"));
    }
}
