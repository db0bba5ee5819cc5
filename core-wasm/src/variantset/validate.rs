//! `validatePackageVariantSet`: every message, in upstream's order. The
//! controller joins them with `"; "` into the `Stalled` condition (reason
//! `ValidationError`). CEL syntax is not checked here: as upstream, a bad
//! expression surfaces when a target is rendered.

use super::types::{MapExpr, PackageVariantSet, PackageVariantTemplate, RolloutStrategy, Target};
use crate::api::Function;

/// Validates a PackageVariantSet; the messages in order (empty when valid).
pub fn validate(pvs: &PackageVariantSet) -> Vec<String> {
    let mut errs = Vec::new();
    match &pvs.spec.upstream {
        None => errs.push("spec.upstream is a required field".to_string()),
        Some(up) => {
            if up.package.is_empty() {
                errs.push("spec.upstream.package is a required field".to_string());
            }
            if up.repo.is_empty() {
                errs.push("spec.upstream.repo is a required field".to_string());
            }
            if up.revision == 0 && up.workspace_name.is_empty() {
                errs.push(
                    "either spec.upstream.revision or spec.upstream.workspaceName must be specified"
                        .to_string(),
                );
            }
        }
    }
    if pvs.spec.targets.is_empty() {
        errs.push("must specify at least one item in spec.targets".to_string());
    }
    for (i, target) in pvs.spec.targets.iter().enumerate() {
        validate_target(i, target, &mut errs);
    }
    if let Some(strategy) = &pvs.spec.rollout_strategy {
        validate_rollout(strategy, &mut errs);
    }
    errs
}

/// `spec.rolloutStrategy`: named, distinct steps with valid selectors and
/// a `maxUpdate` of at least 1 or a percentage from 1% to 100%.
fn validate_rollout(strategy: &RolloutStrategy, errs: &mut Vec<String>) {
    if let Some(expr) = &strategy.ready_when {
        let env = crate::krm::cel::CelEnv::readiness(crate::krm::cel::Limits::default());
        if let Err(e) = env.compile(expr) {
            errs.push(format!("spec.rolloutStrategy.readyWhen: {e}"));
        }
    }
    for (i, step) in strategy.steps.iter().enumerate() {
        let field = format!("spec.rolloutStrategy.steps[{i}]");
        if step.name.is_empty() {
            errs.push(format!("{field}.name cannot be empty"));
        } else if strategy.steps[..i].iter().any(|s| s.name == step.name) {
            errs.push(format!(
                "{field}.name {:?} is used by an earlier step",
                step.name
            ));
        }
        if let Some(Err(e)) = step.selector.as_ref().map(|s| s.to_selector()) {
            errs.push(format!("{field}.selector: {e}"));
        }
        let valid = match &step.max_update {
            None => true,
            Some(serde_json::Value::Number(n)) => n.as_u64().is_some_and(|n| n >= 1),
            Some(serde_json::Value::String(s)) => s
                .strip_suffix('%')
                .and_then(|p| p.parse::<u64>().ok())
                .is_some_and(|p| (1..=100).contains(&p)),
            Some(_) => false,
        };
        if !valid {
            errs.push(format!(
                "{field}.maxUpdate must be a count of at least 1 or a percentage from \"1%\" to \"100%\""
            ));
        }
    }
}

/// Joins messages as `combineErrors` does (`"; "`, empty ones skipped).
pub fn combine(errs: &[String]) -> String {
    errs.iter()
        .filter(|e| !e.is_empty())
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join("; ")
}

fn validate_target(i: usize, target: &Target, errs: &mut Vec<String>) {
    let mut count = 0;
    if let Some(repos) = &target.repositories {
        count += 1;
        if repos.is_empty() {
            errs.push(format!(
                "spec.targets[{i}].repositories must not be an empty list if specified"
            ));
        }
        for (j, rt) in repos.iter().enumerate() {
            if rt.name.is_empty() {
                errs.push(format!(
                    "spec.targets[{i}].repositories[{j}].name cannot be empty"
                ));
            }
            for (k, pn) in rt.package_names.iter().enumerate() {
                if pn.is_empty() {
                    errs.push(format!(
                        "spec.targets[{i}].repositories[{j}].packageNames[{k}] cannot be empty"
                    ));
                }
            }
        }
    }
    if target.repository_selector.is_some() {
        count += 1;
    }
    if let Some(os) = &target.object_selector {
        count += 1;
        if os.api_version.is_empty() {
            errs.push(format!(
                "spec.targets[{i}].objectselector.apiVersion cannot be empty"
            ));
        }
        if os.kind.is_empty() {
            errs.push(format!(
                "spec.targets[{i}].objectselector.kind cannot be empty"
            ));
        }
    }
    if count != 1 {
        errs.push(format!(
            "spec.targets[{i}] must specify one of `repositories`, `repositorySelector`, or `objectSelector`"
        ));
    }
    if let Some(template) = &target.template {
        validate_template(template, &format!("spec.targets[{i}].template"), errs);
    }
}

fn validate_template(t: &PackageVariantTemplate, field: &str, errs: &mut Vec<String>) {
    if let Some(p) = &t.adoption_policy {
        if p != "adoptNone" && p != "adoptExisting" {
            errs.push(format!(
                "{field}.adoptionPolicy can only be \"adoptNone\" or \"adoptExisting\""
            ));
        }
    }
    if let Some(p) = &t.deletion_policy {
        if p != "orphan" && p != "delete" {
            errs.push(format!(
                "{field}.deletionPolicy can only be \"orphan\" or \"delete\""
            ));
        }
    }
    if let Some(ds) = &t.downstream {
        if ds.repo.is_some() && ds.repo_expr.is_some() {
            errs.push(format!(
                "{field} may specify only one of `downstream.repo` and `downstream.repoExpr`"
            ));
        }
        if ds.package.is_some() && ds.package_expr.is_some() {
            errs.push(format!(
                "{field} may specify only one of `downstream.package` and `downstream.packageExpr`"
            ));
        }
    }
    validate_map_exprs(&t.label_exprs, &format!("{field}.labelExprs"), errs);
    validate_map_exprs(
        &t.annotation_exprs,
        &format!("{field}.annotationExprs"),
        errs,
    );
    if let Some(pc) = &t.package_context {
        validate_map_exprs(
            &pc.data_exprs,
            &format!("{field}.packageContext.dataExprs"),
            errs,
        );
    }
    for (i, inj) in t.injectors.iter().enumerate() {
        if inj.name.is_some() && inj.name_expr.is_some() {
            errs.push(format!(
                "{field}.injectors[{i}] may specify only one of `name` and `nameExpr`"
            ));
        }
        if inj.name.is_none() && inj.name_expr.is_none() {
            errs.push(format!(
                "{field}.injectors[{i}] must specify either `name` or `nameExpr`"
            ));
        }
    }
    if let Some(p) = &t.pipeline {
        for (i, f) in p.validators.iter().enumerate() {
            validate_function(
                &f.function,
                &format!("{field}.pipeline.validators[{i}]"),
                errs,
            );
        }
        for (i, f) in p.mutators.iter().enumerate() {
            validate_function(
                &f.function,
                &format!("{field}.pipeline.mutators[{i}]"),
                errs,
            );
        }
    }
}

fn validate_map_exprs(exprs: &[MapExpr], field: &str, errs: &mut Vec<String>) {
    for (j, me) in exprs.iter().enumerate() {
        if me.key.is_some() && me.key_expr.is_some() {
            errs.push(format!(
                "{field}[{j}] may specify only one of `key` and `keyExpr`"
            ));
        }
        if me.value.is_some() && me.value_expr.is_some() {
            errs.push(format!(
                "{field}[{j}] may specify only one of `value` and `valueExpr`"
            ));
        }
    }
}

fn validate_function(f: &Function, field: &str, errs: &mut Vec<String>) {
    if f.image.is_empty() {
        errs.push(format!("{field}.image must not be empty"));
    }
    if f.name.contains('.') {
        errs.push(format!("{field}.name must not contain '.'"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Upstream;
    use crate::variantset::types::{DownstreamTemplate, ObjectSelector, RepositoryTarget};

    fn pvs(targets: Vec<Target>) -> PackageVariantSet {
        let mut p = PackageVariantSet::default();
        p.spec.upstream = Some(Upstream {
            repo: "r".into(),
            package: "p".into(),
            revision: 1,
            workspace_name: String::new(),
        });
        p.spec.targets = targets;
        p
    }

    #[test]
    fn a_valid_set_has_no_errors() {
        let t = Target {
            repositories: Some(vec![RepositoryTarget {
                name: "a".into(),
                package_names: vec![],
            }]),
            ..Target::default()
        };
        assert!(validate(&pvs(vec![t])).is_empty());
    }

    #[test]
    fn a_ready_when_that_does_not_compile_is_named() {
        let t = Target {
            repositories: Some(vec![RepositoryTarget {
                name: "a".into(),
                package_names: vec![],
            }]),
            ..Target::default()
        };
        let mut p = pvs(vec![t]);
        p.spec.rollout_strategy = Some(crate::variantset::types::RolloutStrategy {
            ready_when: Some("revision.status.".into()),
            ..Default::default()
        });
        let errs = validate(&p);
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(
            errs[0].starts_with("spec.rolloutStrategy.readyWhen: "),
            "{errs:?}"
        );
        // An unknown variable is refused too; `revision` is the only one.
        p.spec.rollout_strategy.as_mut().unwrap().ready_when = Some("target.name == 'a'".into());
        assert_eq!(validate(&p).len(), 1);
        p.spec.rollout_strategy.as_mut().unwrap().ready_when =
            Some("revision.spec.lifecycle == 'Published'".into());
        assert!(validate(&p).is_empty());
    }

    #[test]
    fn workspace_name_satisfies_the_revision_rule() {
        let mut p = pvs(vec![]);
        let up = p.spec.upstream.as_mut().unwrap();
        up.revision = 0;
        up.workspace_name = "v1".into();
        assert_eq!(
            validate(&p),
            vec!["must specify at least one item in spec.targets"]
        );
    }

    #[test]
    fn empty_repository_list_and_object_selector_fields() {
        let t0 = Target {
            repositories: Some(vec![]),
            ..Target::default()
        };
        let t1 = Target {
            object_selector: Some(ObjectSelector::default()),
            template: Some(PackageVariantTemplate {
                downstream: Some(DownstreamTemplate {
                    repo: Some(String::new()),
                    repo_expr: Some(String::new()),
                    ..DownstreamTemplate::default()
                }),
                ..PackageVariantTemplate::default()
            }),
            ..Target::default()
        };
        assert_eq!(
            validate(&pvs(vec![t0, t1])),
            vec![
                "spec.targets[0].repositories must not be an empty list if specified",
                "spec.targets[1].objectselector.apiVersion cannot be empty",
                "spec.targets[1].objectselector.kind cannot be empty",
                "spec.targets[1].template may specify only one of `downstream.repo` and `downstream.repoExpr`",
            ]
        );
        assert_eq!(combine(&["a".into(), String::new(), "b".into()]), "a; b");
    }
}
