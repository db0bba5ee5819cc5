//! The three mutations Porch applies to a downstream package, in upstream's
//! order: package context, pipeline functions, config injection; and change
//! detection.
//!
//! [`apply_mutations`] is upstream's `calculateDraftResources` without the
//! API calls: the caller passes the files of the PackageRevisionResources
//! and the in-cluster objects config injection may use (the objects of the
//! PackageVariant's namespace; the core never lists anything), and gets the
//! mutated files, whether they changed, and the injection outcome. Each
//! step is also public, as upstream's functions are, and each writes the
//! files it touches exactly as Porch's kyaml-based code writes them; files
//! no step touches come back byte-identical.
//!
//! * [`package_context`] — `spec.packageContext` into `package-context.yaml`.
//! * [`pipeline`] — `spec.pipeline` prepended to the Kptfile's pipeline.
//! * [`injection`] and [`conditions`] — in-cluster objects into injection
//!   points, conditions and readiness gates into the Kptfile.
//! * [`change`] — which files changed (the Kptfile compared semantically).
//! * [`objects`] — package files as KRM objects, as the kpt SDK reads and
//!   writes them; [`kptfile_view`] — the Kptfile as kpt's Go types see it.

pub mod change;
pub mod conditions;
pub mod error;
pub mod injection;
pub mod kptfile_view;
pub use crate::krm::objects;
pub mod package_context;
pub mod pipeline;

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;

use crate::api::package_revision::{PackageCondition, ReadinessGate};
use crate::api::{PackageRevisionResources, PackageVariant};
use crate::yaml::Node;

pub use change::{changed_files, kptfiles_equal};
pub use conditions::set_injection_conditions_and_gates;
pub use error::{MutationError, ObjectsError};
pub use injection::{
    ensure_config_injection, find_injection_points, inject_resources, parse_package_files,
    validate_injection_points, InjectionOutcome, InjectionPoint, PackageObjects,
};
pub use package_context::ensure_package_context;
pub use pipeline::ensure_krm_functions;

/// Name of the Kptfile in a package.
pub const KPTFILE: &str = "Kptfile";

/// The PackageRevisionResources being mutated, named in error messages as
/// `<namespace>/<name>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrrRef<'a> {
    /// Namespace.
    pub namespace: &'a str,
    /// Name (that of the PackageRevision).
    pub name: &'a str,
}

impl<'a> PrrRef<'a> {
    /// The reference of a PackageRevisionResources object.
    pub fn of(prr: &'a PackageRevisionResources) -> Self {
        PrrRef {
            namespace: &prr.metadata.namespace,
            name: &prr.metadata.name,
        }
    }
}

impl fmt::Display for PrrRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// What the mutations did to a package.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MutationOutcome {
    /// Every file of the package after the mutations; files no mutation
    /// touched are byte-identical to the input.
    pub files: BTreeMap<String, String>,
    /// Whether the package must be written back (some file changed; the
    /// Kptfile only counts when it changed semantically).
    pub changed: bool,
    /// The files that changed, in name order.
    pub changed_files: Vec<String>,
    /// The Kptfile's `status.conditions` afterwards (the package
    /// conditions Porch mirrors into the PackageRevision's status).
    pub conditions: Vec<PackageCondition>,
    /// The Kptfile's `info.readinessGates` afterwards.
    pub readiness_gates: Vec<ReadinessGate>,
    /// One entry per injection point, in file order, with its outcome.
    pub results: Vec<InjectionPoint>,
}

/// Applies the three mutations of `pv` to the files of a package, in
/// upstream's order (package context, pipeline, config injection), then
/// detects whether anything changed.
///
/// `candidates` are the in-cluster objects (as JSON, e.g. unstructured
/// objects from a list) of the PackageVariant's namespace that config
/// injection may use; one carrying another namespace is ignored.
pub fn apply_mutations(
    pv: &PackageVariant,
    prr: PrrRef<'_>,
    files: &BTreeMap<String, String>,
    candidates: &[Value],
) -> Result<MutationOutcome, MutationError> {
    let mut out = files.clone();
    ensure_package_context(pv, prr, &mut out)?;
    ensure_krm_functions(pv, prr, &mut out)?;
    let injection = ensure_config_injection(pv, prr, &mut out, candidates)?;
    let changed_files = changed_files(files, &out);
    Ok(MutationOutcome {
        files: out,
        changed: !changed_files.is_empty(),
        changed_files,
        conditions: injection.conditions,
        readiness_gates: injection.readiness_gates,
        results: injection.points,
    })
}

/// [`apply_mutations`] on a PackageRevisionResources object, which must
/// carry its `resources` map.
pub fn apply_to_resources(
    pv: &PackageVariant,
    prr: &PackageRevisionResources,
    candidates: &[Value],
) -> Result<MutationOutcome, MutationError> {
    let target = PrrRef::of(prr);
    let files = prr
        .spec
        .resources
        .as_ref()
        .ok_or_else(|| MutationError::NilResources {
            prr: target.to_string(),
        })?;
    apply_mutations(pv, target, files, candidates)
}

/// Upstream's `getFileKubeObject`: the one object of `file`, which must
/// exist, parse, and have the given kind and name when those are given.
pub(crate) fn file_object(
    prr: PrrRef<'_>,
    files: &BTreeMap<String, String>,
    file: &str,
    kind: Option<&str>,
    name: Option<&str>,
) -> Result<Node, MutationError> {
    let text = files.get(file).ok_or_else(|| MutationError::FileNotFound {
        file: file.to_string(),
        prr: prr.to_string(),
    })?;
    let object = objects::parse_object(text).map_err(|source| MutationError::FileParse {
        file: file.to_string(),
        prr: prr.to_string(),
        source,
    })?;
    if let Some(kind) = kind {
        if object.object_kind() != kind {
            return Err(MutationError::KindMismatch {
                file: file.to_string(),
                kind: kind.to_string(),
                prr: prr.to_string(),
            });
        }
    }
    if let Some(name) = name {
        if object.name() != name {
            return Err(MutationError::NameMismatch {
                file: file.to_string(),
                name: name.to_string(),
                prr: prr.to_string(),
            });
        }
    }
    Ok(object)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{Function, InjectionSelector, PackageContext, Pipeline};
    use serde_json::json;

    const PRR: PrrRef<'static> = PrrRef {
        namespace: "ns",
        name: "prr",
    };

    fn package() -> BTreeMap<String, String> {
        BTreeMap::from([
            (
                KPTFILE.to_string(),
                "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\npipeline:\n  mutators:\n    - image: user # indented the other way\n".to_string(),
            ),
            (
                "package-context.yaml".to_string(),
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kptfile.kpt.dev\ndata:\n  name: p\n".to_string(),
            ),
            (
                "ep.yaml".to_string(),
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ep\n  annotations:\n    kpt.dev/config-injection: required\ndata: {}\n".to_string(),
            ),
            ("deploy.yaml".to_string(), "kind: Deployment\nmetadata:\n    name: d   # odd layout kept\n".to_string()),
            ("README.md".to_string(), "not yaml: [".to_string()),
        ])
    }

    fn pv() -> PackageVariant {
        let mut pv = PackageVariant::default();
        pv.metadata.name = "pv".into();
        pv.metadata.namespace = "ns".into();
        pv.spec.package_context = Some(PackageContext {
            data: [("region".to_string(), "east".to_string())].into(),
            remove_keys: Vec::new(),
        });
        pv.spec.pipeline = Some(Pipeline {
            mutators: vec![Function {
                name: "set".into(),
                image: "img".into(),
                ..Function::default()
            }],
            validators: Vec::new(),
        });
        pv.spec.injectors = vec![InjectionSelector {
            name: "east-ep".into(),
            ..InjectionSelector::default()
        }];
        pv
    }

    fn cluster() -> Vec<Value> {
        vec![json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "east-ep", "namespace": "ns"}, "data": {"db": "east"}})]
    }

    #[test]
    fn a_full_pass_then_a_second_pass_that_changes_nothing() {
        let files = package();
        let once = apply_mutations(&pv(), PRR, &files, &cluster()).unwrap();
        assert!(once.changed);
        assert_eq!(
            once.changed_files,
            ["Kptfile", "ep.yaml", "package-context.yaml"]
        );
        assert_eq!(once.files["deploy.yaml"], files["deploy.yaml"]);
        assert_eq!(once.files["README.md"], files["README.md"]);
        assert_eq!(
            once.files["ep.yaml"],
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ep\n  annotations:\n    kpt.dev/config-injection: required\n    kpt.dev/injected-resource: east-ep\ndata:\n  db: east\n"
        );
        assert_eq!(once.readiness_gates.len(), 1);
        assert_eq!(once.conditions[0].status, "True");
        assert!(once.results[0].injected);

        let twice = apply_mutations(&pv(), PRR, &once.files, &cluster()).unwrap();
        assert!(!twice.changed, "{:?}", twice.changed_files);
        assert_eq!(twice.files, once.files);
    }

    #[test]
    fn a_kptfile_only_reformatted_is_not_a_change() {
        let mut files = package();
        files.remove("ep.yaml");
        let pv = PackageVariant::default();
        let out = apply_mutations(&pv, PRR, &files, &[]).unwrap();
        assert_ne!(out.files[KPTFILE], files[KPTFILE], "rewritten");
        assert!(!out.changed);
        assert!(out.changed_files.is_empty());
    }

    #[test]
    fn resources_must_be_present() {
        let mut prr = PackageRevisionResources::default();
        prr.metadata.namespace = "ns".into();
        prr.metadata.name = "prr".into();
        assert_eq!(
            apply_to_resources(&pv(), &prr, &[])
                .unwrap_err()
                .to_string(),
            "nil resources found for PackageRevisionResources 'ns/prr'"
        );
        prr.spec.resources = Some(package());
        assert!(apply_to_resources(&pv(), &prr, &cluster()).unwrap().changed);
    }
}
