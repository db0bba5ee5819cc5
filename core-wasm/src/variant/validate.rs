//! Validation of a PackageVariant (`validatePackageVariant` upstream) and
//! defaulting of its policies.
//!
//! Messages and their order are upstream's, byte for byte, so that the
//! `Stalled` condition reads the same as Porch's. One difference, on
//! purpose: upstream's `isValidUpstream` overwrites `spec.upstream.revision`
//! with `-1`, so the revision a user asks for is never used. Here validation
//! only reads the object; the revision is honoured by
//! [`crate::variant::upstream::resolve_upstream`].

use crate::api::package_variant::{
    AdoptionPolicy, DeletionPolicy, Downstream, PackageVariant, PackageVariantSpec, Upstream,
};

/// `spec.packageContext` keys that Porch generates and a variant must not set
/// or remove.
pub const RESERVED_PACKAGE_CONTEXT_KEYS: [&str; 2] = ["name", "package-path"];

/// Validation failed; `errors` are upstream's messages in upstream's order.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", combine_errors(errors))]
pub struct ValidationError {
    /// Every message, in the order upstream reports them.
    pub errors: Vec<String>,
}

/// A PackageVariant that passed validation, with its required parts and its
/// (defaulted) policies at hand.
#[derive(Debug, Clone, Copy)]
pub struct ValidPackageVariant<'a> {
    /// The object itself.
    pub pv: &'a PackageVariant,
    /// `spec.upstream` (repo and package are non-empty).
    pub upstream: &'a Upstream,
    /// `spec.downstream` (repo and package are non-empty).
    pub downstream: &'a Downstream,
    /// `spec.adoptionPolicy`, defaulted.
    pub adoption: AdoptionPolicy,
    /// `spec.deletionPolicy`, defaulted.
    pub deletion: DeletionPolicy,
}

/// `isValidUpstream`: the messages for `spec.upstream`.
///
/// Unlike upstream this does not touch `revision` (upstream forces it to
/// `-1`, which is why a PackageVariant's `upstream.revision` never had any
/// effect there).
pub fn validate_upstream(upstream: Option<&Upstream>) -> Vec<String> {
    let Some(upstream) = upstream else {
        return vec!["missing required field spec.upstream".to_string()];
    };
    let mut errs = Vec::new();
    if upstream.repo.is_empty() {
        errs.push("missing required field spec.upstream.repo".to_string());
    }
    if upstream.package.is_empty() {
        errs.push("missing required field spec.upstream.package".to_string());
    }
    errs
}

/// `validatePackageVariant`: every message, in upstream's order (empty when
/// the object is valid). Empty policies count as their defaults, as
/// upstream defaults them before checking.
pub fn validate_package_variant(pv: &PackageVariant) -> Vec<String> {
    let spec = &pv.spec;
    let mut errs = validate_upstream(spec.upstream.as_ref());
    match &spec.downstream {
        None => errs.push("missing required field spec.downstream".to_string()),
        Some(ds) => {
            if ds.repo.is_empty() {
                errs.push("missing required field spec.downstream.repo".to_string());
            }
            if ds.package.is_empty() {
                errs.push("missing required field spec.downstream.package".to_string());
            }
        }
    }
    if AdoptionPolicy::from_spec(&spec.adoption_policy).is_none() {
        errs.push(
            "spec.adoptionPolicy field can only be \"adoptNone\" or \"adoptExisting\"".to_string(),
        );
    }
    if DeletionPolicy::from_spec(&spec.deletion_policy).is_none() {
        errs.push("spec.deletionPolicy can only be \"orphan\" or \"delete\"".to_string());
    }
    if let Some(pc) = &spec.package_context {
        for key in RESERVED_PACKAGE_CONTEXT_KEYS {
            if pc.data.contains_key(key) {
                let value = go_json_map(pc.data.iter().map(|(k, v)| (k.as_str(), v.as_str())));
                errs.push(field_invalid(
                    "spec.packageContext.data",
                    &value,
                    &format!("must not contain the key {}", go_quote(key)),
                ));
            }
            for k in &pc.remove_keys {
                if k == key {
                    let value = go_json_list(pc.remove_keys.iter().map(String::as_str));
                    errs.push(field_invalid(
                        "spec.packageContext.removeKeys",
                        &value,
                        &format!("must not contain the key {}", go_quote(key)),
                    ));
                }
            }
        }
    }
    for (i, injector) in spec.injectors.iter().enumerate() {
        if injector.name.is_empty() {
            errs.push(format!("spec.injectors[{i}].name must not be empty"));
        }
    }
    errs
}

/// `combineErrors`: the messages joined with `"; "`, empty ones skipped.
pub fn combine_errors<S: AsRef<str>>(errs: &[S]) -> String {
    errs.iter()
        .map(AsRef::as_ref)
        .filter(|e| !e.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

/// Fills in the default policies (`adoptNone`, `delete`) where the spec
/// leaves them empty, as upstream does in memory before validating. Other
/// fields are left alone.
pub fn default_policies(spec: &mut PackageVariantSpec) {
    if spec.adoption_policy.is_empty() {
        spec.adoption_policy = AdoptionPolicy::AdoptNone.as_str().to_string();
    }
    if spec.deletion_policy.is_empty() {
        spec.deletion_policy = DeletionPolicy::Delete.as_str().to_string();
    }
}

/// Validates `pv` and, when valid, returns its required parts and defaulted
/// policies.
pub fn validate(pv: &PackageVariant) -> Result<ValidPackageVariant<'_>, ValidationError> {
    let errors = validate_package_variant(pv);
    let parts = (
        pv.spec.upstream.as_ref(),
        pv.spec.downstream.as_ref(),
        AdoptionPolicy::from_spec(&pv.spec.adoption_policy),
        DeletionPolicy::from_spec(&pv.spec.deletion_policy),
    );
    match parts {
        (Some(upstream), Some(downstream), Some(adoption), Some(deletion)) if errors.is_empty() => {
            Ok(ValidPackageVariant {
                pv,
                upstream,
                downstream,
                adoption,
                deletion,
            })
        }
        _ => Err(ValidationError { errors }),
    }
}

/// `field.Invalid(path, value, detail).Error()` for a value that
/// apimachinery prints as JSON (maps and slices).
fn field_invalid(path: &str, json_value: &str, detail: &str) -> String {
    format!("{path}: Invalid value: {json_value}: {detail}")
}

/// Go's `%q` for the plain ASCII strings used in messages here.
fn go_quote(s: &str) -> String {
    go_json_string(s)
}

/// `json.Marshal(map[string]string)`: keys sorted (the iterator already is,
/// it comes from a `BTreeMap`).
fn go_json_map<'a>(pairs: impl Iterator<Item = (&'a str, &'a str)>) -> String {
    let body: Vec<String> = pairs
        .map(|(k, v)| format!("{}:{}", go_json_string(k), go_json_string(v)))
        .collect();
    format!("{{{}}}", body.join(","))
}

/// `json.Marshal([]string)`.
fn go_json_list<'a>(items: impl Iterator<Item = &'a str>) -> String {
    let body: Vec<String> = items.map(go_json_string).collect();
    format!("[{}]", body.join(","))
}

/// A string as Porch's Go writes it in JSON.
pub(crate) fn go_json_string(s: &str) -> String {
    crate::krm::gofmt::json_string(s, crate::krm::gofmt::GoJson::Current)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::package_variant::{InjectionSelector, PackageContext};

    fn valid_pv() -> PackageVariant {
        let mut pv = PackageVariant::default();
        pv.metadata.name = "my-pv".into();
        pv.spec.upstream = Some(Upstream {
            repo: "blueprints".into(),
            package: "foo".into(),
            revision: 1,
            workspace_name: String::new(),
        });
        pv.spec.downstream = Some(Downstream {
            repo: "deployments".into(),
            package: "foo".into(),
        });
        pv
    }

    #[test]
    fn empty_spec_reports_both_missing_parts() {
        let pv = PackageVariant::default();
        assert_eq!(
            combine_errors(&validate_package_variant(&pv)),
            "missing required field spec.upstream; missing required field spec.downstream"
        );
        let err = validate(&pv).unwrap_err();
        assert_eq!(err.errors.len(), 2);
        assert_eq!(
            err.to_string(),
            "missing required field spec.upstream; missing required field spec.downstream"
        );
    }

    #[test]
    fn missing_fields_in_order() {
        let mut pv = valid_pv();
        pv.spec.upstream = Some(Upstream::default());
        pv.spec.downstream = Some(Downstream::default());
        assert_eq!(
            validate_package_variant(&pv),
            vec![
                "missing required field spec.upstream.repo",
                "missing required field spec.upstream.package",
                "missing required field spec.downstream.repo",
                "missing required field spec.downstream.package",
            ]
        );
    }

    #[test]
    fn validation_does_not_force_the_revision() {
        // Upstream's isValidUpstream sets revision = -1; we keep what the user wrote.
        let pv = valid_pv();
        let v = validate(&pv).unwrap();
        assert_eq!(v.upstream.revision, 1);
        assert_eq!(pv.spec.upstream.as_ref().unwrap().revision, 1);
    }

    #[test]
    fn policies_default_and_reject_unknown_values() {
        let mut pv = valid_pv();
        let v = validate(&pv).unwrap();
        assert_eq!(v.adoption, AdoptionPolicy::AdoptNone);
        assert_eq!(v.deletion, DeletionPolicy::Delete);

        default_policies(&mut pv.spec);
        assert_eq!(pv.spec.adoption_policy, "adoptNone");
        assert_eq!(pv.spec.deletion_policy, "delete");

        pv.spec.adoption_policy = "adoptExisting".into();
        pv.spec.deletion_policy = "orphan".into();
        default_policies(&mut pv.spec);
        let v = validate(&pv).unwrap();
        assert_eq!(v.adoption, AdoptionPolicy::AdoptExisting);
        assert_eq!(v.deletion, DeletionPolicy::Orphan);

        pv.spec.adoption_policy = "invalid".into();
        pv.spec.deletion_policy = "invalid".into();
        assert_eq!(
            validate(&pv).unwrap_err().to_string(),
            "spec.adoptionPolicy field can only be \"adoptNone\" or \"adoptExisting\"; \
             spec.deletionPolicy can only be \"orphan\" or \"delete\""
        );
    }

    #[test]
    fn reserved_package_context_keys() {
        let mut pv = valid_pv();
        pv.spec.package_context = Some(PackageContext {
            data: [("package-path", "x"), ("name", "a<b")]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            remove_keys: vec!["name".into(), "name".into(), "other".into()],
        });
        assert_eq!(
            validate_package_variant(&pv),
            vec![
                r#"spec.packageContext.data: Invalid value: {"name":"a\u003cb","package-path":"x"}: must not contain the key "name""#,
                r#"spec.packageContext.removeKeys: Invalid value: ["name","name","other"]: must not contain the key "name""#,
                r#"spec.packageContext.removeKeys: Invalid value: ["name","name","other"]: must not contain the key "name""#,
                r#"spec.packageContext.data: Invalid value: {"name":"a\u003cb","package-path":"x"}: must not contain the key "package-path""#,
            ]
        );
    }

    #[test]
    fn injectors_need_names() {
        let mut pv = valid_pv();
        pv.spec.injectors = vec![
            InjectionSelector {
                name: "foo".into(),
                ..Default::default()
            },
            InjectionSelector::default(),
        ];
        assert_eq!(
            validate_package_variant(&pv),
            vec!["spec.injectors[1].name must not be empty"]
        );
    }

    #[test]
    fn combine_skips_empty_messages() {
        assert_eq!(combine_errors(&["a", "", "b"]), "a; b");
        assert_eq!(combine_errors::<&str>(&[]), "");
    }

    #[test]
    fn go_json_escapes() {
        assert_eq!(
            go_json_string("a\"b\\c\n<&>\u{1}"),
            r#""a\"b\\c\n\u003c\u0026\u003e\u0001""#
        );
    }
}
