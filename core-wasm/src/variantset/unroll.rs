//! `unrollDownstreamTargets`: turns each target of a set into concrete
//! (repoDefault, packageDefault, object) triples, in order, over the objects
//! the caller supplies (the core does no I/O):
//!
//! * `repositories`: one per repository and package name, the names
//!   defaulting to `[upstream.package]`; no object;
//! * `repositorySelector`: the same as an `objectSelector` over
//!   `config.porch.kpt.dev/v1alpha1` `Repository`, drawn from the supplied
//!   repositories;
//! * `objectSelector`: the supplied objects of that apiVersion and kind
//!   whose labels match (an empty selector matches all; `name` is ignored,
//!   as upstream), each giving repoDefault = its name, packageDefault =
//!   `upstream.package`, and the object as CEL `target`.
//!
//! A kind the caller does not know is upstream's "no matches for kind"
//! (`NoMatchingTargets`); a known kind without matches unrolls to nothing.

use super::scope::in_namespace;
use super::selector::{LabelSelector, SelectorError};
use super::types::{
    ClusterObject, PackageVariantSet, PackageVariantTemplate, Repository, REPOSITORY_API_VERSION,
    REPOSITORY_KIND,
};
use crate::api::ObjectMeta;
use crate::krm::cel::ObjectInput;

/// An apiVersion and kind the cluster serves.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKind {
    /// `v1`, `apps/v1`, …
    pub api_version: String,
    /// `ConfigMap`, …
    pub kind: String,
}

impl ObjectKind {
    /// A kind.
    pub fn new(api_version: impl Into<String>, kind: impl Into<String>) -> Self {
        ObjectKind {
            api_version: api_version.into(),
            kind: kind.into(),
        }
    }
}

/// The objects `objectSelector` targets choose from: the kinds the caller
/// knows to exist (each object's own kind counts too) and the objects, in
/// list order (Kubernetes lists are sorted by name).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TargetObjects {
    /// Kinds known to exist, even with no objects.
    pub kinds: Vec<ObjectKind>,
    /// The objects.
    pub objects: Vec<ClusterObject>,
}

impl TargetObjects {
    /// No kinds, no objects.
    pub fn new() -> Self {
        TargetObjects::default()
    }

    /// The given objects (their kinds become known).
    pub fn from_objects(objects: Vec<ClusterObject>) -> Self {
        TargetObjects {
            kinds: Vec::new(),
            objects,
        }
    }

    /// Declares a kind as existing.
    pub fn with_kind(mut self, api_version: impl Into<String>, kind: impl Into<String>) -> Self {
        self.kinds.push(ObjectKind::new(api_version, kind));
        self
    }

    /// Whether objects of `api_version`/`kind` can be listed.
    pub fn knows(&self, api_version: &str, kind: &str) -> bool {
        (api_version == REPOSITORY_API_VERSION && kind == REPOSITORY_KIND)
            || self
                .kinds
                .iter()
                .any(|k| k.api_version == api_version && k.kind == kind)
            || self
                .objects
                .iter()
                .any(|o| o.api_version == api_version && o.kind == kind)
    }
}

/// One concrete downstream of a set (upstream's `pvContext`).
#[derive(Debug, Clone, PartialEq)]
pub struct UnrolledTarget<'a> {
    /// Index of the `spec.targets` entry it came from.
    pub target_index: usize,
    /// That entry's template.
    pub template: Option<&'a PackageVariantTemplate>,
    /// Default downstream repository.
    pub repo_default: String,
    /// Default downstream package.
    pub package_default: String,
    /// The selected object (selectors only), reduced for CEL.
    pub object: Option<ObjectInput>,
}

/// Why targets could not be unrolled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnrollError {
    /// The selector's kind is unknown (`meta.NoKindMatchError`).
    #[error("no matches for kind {kind:?} in version {api_version:?}")]
    NoMatchingKind {
        /// The selector's apiVersion.
        api_version: String,
        /// The selector's kind.
        kind: String,
    },
    /// The apiVersion is not `[group/]version`.
    #[error("unexpected GroupVersion string: {0}")]
    InvalidApiVersion(String),
    /// The label selector is invalid.
    #[error("{source}")]
    Selector {
        /// Index of the target.
        target_index: usize,
        /// The selector error.
        source: SelectorError,
    },
}

/// Unrolls every target of `pvs` (which must have an upstream; without one
/// the package default is empty).
pub fn unroll<'a>(
    pvs: &'a PackageVariantSet,
    repositories: &[Repository],
    objects: &TargetObjects,
) -> Result<Vec<UnrolledTarget<'a>>, UnrollError> {
    let upstream_package = pvs
        .spec
        .upstream
        .as_ref()
        .map(|u| u.package.as_str())
        .unwrap_or_default();
    let ns = pvs.metadata.namespace.as_str();
    let mut out = Vec::new();
    for (i, target) in pvs.spec.targets.iter().enumerate() {
        let template = target.template.as_ref();
        if let Some(repos) = &target.repositories {
            for rt in repos {
                if rt.package_names.is_empty() {
                    out.push(explicit(i, template, &rt.name, upstream_package));
                } else {
                    for pn in &rt.package_names {
                        out.push(explicit(i, template, &rt.name, pn));
                    }
                }
            }
            continue;
        }
        let (selector, api_version, kind) = if let Some(sel) = &target.repository_selector {
            (sel, REPOSITORY_API_VERSION, REPOSITORY_KIND)
        } else if let Some(os) = &target.object_selector {
            (&os.selector, os.api_version.as_str(), os.kind.as_str())
        } else {
            continue;
        };
        let selected = select(selector, api_version, kind, ns, repositories, objects).map_err(
            |e| match e {
                UnrollError::Selector { source, .. } => UnrollError::Selector {
                    target_index: i,
                    source,
                },
                other => other,
            },
        )?;
        for meta in selected {
            out.push(UnrolledTarget {
                target_index: i,
                template,
                repo_default: meta.name.clone(),
                package_default: upstream_package.to_string(),
                object: Some(ObjectInput::from_meta(meta)),
            });
        }
    }
    Ok(out)
}

fn explicit<'a>(
    i: usize,
    template: Option<&'a PackageVariantTemplate>,
    repo: &str,
    package: &str,
) -> UnrolledTarget<'a> {
    UnrolledTarget {
        target_index: i,
        template,
        repo_default: repo.to_string(),
        package_default: package.to_string(),
        object: None,
    }
}

/// The metadata of the objects of `api_version`/`kind` in namespace `ns`
/// matching `selector`.
fn select<'o>(
    selector: &LabelSelector,
    api_version: &str,
    kind: &str,
    ns: &str,
    repositories: &'o [Repository],
    objects: &'o TargetObjects,
) -> Result<Vec<&'o ObjectMeta>, UnrollError> {
    if api_version.matches('/').count() > 1 {
        return Err(UnrollError::InvalidApiVersion(api_version.to_string()));
    }
    if !objects.knows(api_version, kind) {
        return Err(UnrollError::NoMatchingKind {
            api_version: api_version.to_string(),
            kind: kind.to_string(),
        });
    }
    let sel = selector
        .to_selector()
        .map_err(|source| UnrollError::Selector {
            target_index: 0,
            source,
        })?;
    let keep = |m: &ObjectMeta| in_namespace(&m.namespace, ns) && sel.matches(&m.labels);
    if api_version == REPOSITORY_API_VERSION && kind == REPOSITORY_KIND {
        return Ok(repositories
            .iter()
            .map(|r| &r.metadata)
            .filter(|m| keep(m))
            .collect());
    }
    Ok(objects
        .objects
        .iter()
        .filter(|o| o.api_version == api_version && o.kind == kind)
        .map(|o| &o.metadata)
        .filter(|m| keep(m))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Upstream;
    use crate::variantset::selector::LabelSelectorRequirement;
    use crate::variantset::types::{ObjectSelector, RepositoryTarget, Target};
    use std::collections::BTreeMap;

    fn pvs(targets: Vec<Target>) -> PackageVariantSet {
        let mut p = PackageVariantSet::default();
        p.metadata.namespace = "ns".into();
        p.spec.upstream = Some(Upstream {
            repo: "up".into(),
            package: "up-pkg".into(),
            revision: 1,
            workspace_name: String::new(),
        });
        p.spec.targets = targets;
        p
    }

    fn meta(name: &str, ns: &str, labels: &[(&str, &str)]) -> ObjectMeta {
        ObjectMeta {
            name: name.into(),
            namespace: ns.into(),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>(),
            ..ObjectMeta::default()
        }
    }

    fn repo(name: &str, ns: &str, labels: &[(&str, &str)]) -> Repository {
        Repository {
            metadata: meta(name, ns, labels),
            ..Repository::default()
        }
    }

    fn obj(api: &str, kind: &str, name: &str, labels: &[(&str, &str)]) -> ClusterObject {
        ClusterObject {
            api_version: api.into(),
            kind: kind.into(),
            metadata: meta(name, "ns", labels),
        }
    }

    fn pairs(v: &[UnrolledTarget<'_>]) -> Vec<(String, String, bool)> {
        v.iter()
            .map(|t| {
                (
                    t.repo_default.clone(),
                    t.package_default.clone(),
                    t.object.is_some(),
                )
            })
            .collect()
    }

    #[test]
    fn explicit_repositories_default_the_package() {
        let p = pvs(vec![Target {
            repositories: Some(vec![
                RepositoryTarget {
                    name: "a".into(),
                    package_names: vec!["x".into(), "y".into()],
                },
                RepositoryTarget {
                    name: "b".into(),
                    package_names: vec![],
                },
            ]),
            ..Target::default()
        }]);
        let out = unroll(&p, &[], &TargetObjects::new()).unwrap();
        assert_eq!(
            pairs(&out),
            vec![
                ("a".into(), "x".into(), false),
                ("a".into(), "y".into(), false),
                ("b".into(), "up-pkg".into(), false)
            ]
        );
    }

    #[test]
    fn repository_selector_filters_by_label_and_namespace() {
        let p = pvs(vec![Target {
            repository_selector: Some(LabelSelector {
                match_labels: [("env".to_string(), "prod".to_string())].into(),
                match_expressions: vec![],
            }),
            ..Target::default()
        }]);
        let repos = vec![
            repo("r1", "ns", &[("env", "prod")]),
            repo("r2", "ns", &[("env", "dev")]),
            repo("r3", "other", &[("env", "prod")]),
            repo("r4", "ns", &[("env", "prod")]),
        ];
        let out = unroll(&p, &repos, &TargetObjects::new()).unwrap();
        assert_eq!(
            pairs(&out),
            vec![
                ("r1".into(), "up-pkg".into(), true),
                ("r4".into(), "up-pkg".into(), true)
            ]
        );
        assert_eq!(out[0].object.as_ref().unwrap().labels["env"], "prod");
    }

    #[test]
    fn object_selector_by_kind_and_expressions() {
        let p = pvs(vec![Target {
            object_selector: Some(ObjectSelector {
                selector: LabelSelector {
                    match_labels: BTreeMap::new(),
                    match_expressions: vec![LabelSelectorRequirement {
                        key: "edge".into(),
                        operator: "Exists".into(),
                        values: vec![],
                    }],
                },
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                name: Some("ignored".into()),
            }),
            ..Target::default()
        }]);
        let objects = TargetObjects::from_objects(vec![
            obj("v1", "ConfigMap", "c1", &[("edge", "")]),
            obj("v1", "ConfigMap", "c2", &[]),
            obj("v1", "Secret", "s1", &[("edge", "")]),
        ]);
        let out = unroll(&p, &[], &objects).unwrap();
        assert_eq!(pairs(&out), vec![("c1".into(), "up-pkg".into(), true)]);
    }

    #[test]
    fn unknown_kinds_and_empty_matches() {
        let sel = |kind: &str| {
            pvs(vec![Target {
                object_selector: Some(ObjectSelector {
                    api_version: "example.com/v1".into(),
                    kind: kind.into(),
                    ..ObjectSelector::default()
                }),
                ..Target::default()
            }])
        };
        let p = sel("Foo");
        let err = unroll(&p, &[], &TargetObjects::new()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "no matches for kind \"Foo\" in version \"example.com/v1\""
        );
        let known = TargetObjects::new().with_kind("example.com/v1", "Foo");
        assert!(unroll(&p, &[], &known).unwrap().is_empty());
    }

    #[test]
    fn invalid_selector_is_an_error() {
        let p = pvs(vec![Target {
            repository_selector: Some(LabelSelector {
                match_labels: BTreeMap::new(),
                match_expressions: vec![LabelSelectorRequirement {
                    key: "a".into(),
                    operator: "Sideways".into(),
                    values: vec![],
                }],
            }),
            ..Target::default()
        }]);
        let err = unroll(&p, &[], &TargetObjects::new()).unwrap_err();
        assert!(matches!(
            err,
            UnrollError::Selector {
                target_index: 0,
                ..
            }
        ));
        assert_eq!(
            err.to_string(),
            "\"Sideways\" is not a valid label selector operator"
        );
    }
}
