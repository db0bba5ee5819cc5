//! Mutation 3: config injection (upstream's `injection.go`).
//!
//! 1. Every KRM file of the package (`*.yaml`, `*.yml`, `*.json`, `Kptfile`)
//!    is read; one that is not a stream of objects fails the mutation.
//! 2. Every object annotated `kpt.dev/config-injection` is an injection
//!    point with condition type `config.injection.<Kind>.<name>`; the value
//!    must be `required` or `optional`.
//! 3. Invalid values and duplicate condition types fail the mutation
//!    (`errors in injection points: …`).
//! 4. For each point, the in-cluster objects of the point's apiVersion and
//!    kind are taken from the candidates the caller supplies (the objects it
//!    listed in the PackageVariant's namespace; a candidate that carries
//!    another namespace is ignored, so nothing leaks across namespaces). The
//!    first injector (in spec order) whose optional group/version/kind match
//!    the in-package object and whose name is the name of a candidate
//!    selects it. Its `data` (core ConfigMap) or `spec` (anything else)
//!    replaces the point's field, and the point is annotated
//!    `kpt.dev/injected-resource: <name>`.
//! 5. Files with an injected point are rewritten; the Kptfile gets a
//!    condition per point and a readiness gate per required point (see
//!    [`super::conditions`]). A required point left without a resource is
//!    not an error: its condition is False and its gate blocks approval.
//!
//! Files are visited in name order (upstream iterates a Go map), so the
//! order of points and of duplicate-condition errors is deterministic.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::api::package_revision::{PackageCondition, ReadinessGate};
use crate::api::{InjectionSelector, PackageVariant};
use crate::yaml::Node;

use super::conditions::set_injection_conditions_and_gates;
use super::error::MutationError;
use super::{file_object, PrrRef, KPTFILE};
use crate::krm::gofmt::quote;
use crate::krm::objects::{emit_object, emit_objects, is_krm_file, parse_objects, scalar_string};

/// Annotation that makes an object an injection point.
pub const CONFIG_INJECTION_ANNOTATION: &str = "kpt.dev/config-injection";
/// Annotation naming the in-cluster object that was injected.
pub const INJECTED_RESOURCE_ANNOTATION: &str = "kpt.dev/injected-resource";

/// The KRM files of a package, read as objects, by file name.
pub type PackageObjects = BTreeMap<String, Vec<Node>>;

/// An injection point and, after [`inject_resources`], its outcome.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InjectionPoint {
    /// File holding the object.
    pub file: String,
    /// Position of the object in its file.
    pub index: usize,
    /// `apiVersion` of the in-package object.
    pub api_version: String,
    /// `kind` of the in-package object.
    pub kind: String,
    /// `metadata.name` of the in-package object.
    pub name: String,
    /// `config.injection.<Kind>.<name>`.
    pub condition_type: String,
    /// Annotated `required` (else `optional`, or invalid).
    pub required: bool,
    /// What went wrong with this point.
    pub errors: Vec<String>,
    /// Whether an in-cluster object was injected.
    pub injected: bool,
    /// Name of the in-cluster object selected.
    pub injected_name: String,
}

/// The outcome of [`ensure_config_injection`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InjectionOutcome {
    /// Every injection point, in file order, with its outcome.
    pub points: Vec<InjectionPoint>,
    /// The Kptfile's `status.conditions` after the mutation.
    pub conditions: Vec<PackageCondition>,
    /// The Kptfile's `info.readinessGates` after the mutation.
    pub readiness_gates: Vec<ReadinessGate>,
}

/// `config.injection.<kind>.<name>`.
pub fn injection_condition_type(kind: &str, name: &str) -> String {
    format!("config.injection.{kind}.{name}")
}

/// Reads every KRM file of the package (upstream's `parseFiles`); other
/// files are skipped.
pub fn parse_package_files(
    files: &BTreeMap<String, String>,
) -> Result<PackageObjects, MutationError> {
    let mut out = PackageObjects::new();
    for (file, text) in files {
        if !is_krm_file(file) {
            continue;
        }
        let objects = parse_objects(text).map_err(|source| MutationError::ResourceParse {
            file: file.clone(),
            source,
        })?;
        out.insert(file.clone(), objects);
    }
    Ok(out)
}

/// The annotation value of an injection point, if `object` is one.
fn injection_annotation(object: &Node) -> Option<&str> {
    let annotations = object.get("metadata")?.get("annotations")?;
    scalar_string(annotations.get(CONFIG_INJECTION_ANNOTATION)?)
}

/// Every object annotated `kpt.dev/config-injection` (upstream's
/// `findInjectionPoints`), in file order then object order.
pub fn find_injection_points(objects: &PackageObjects) -> Vec<InjectionPoint> {
    let mut points = Vec::new();
    for (file, objs) in objects {
        for (index, object) in objs.iter().enumerate() {
            let Some(value) = injection_annotation(object) else {
                continue;
            };
            let kind = object.object_kind().to_string();
            let name = object.name().to_string();
            let mut point = InjectionPoint {
                file: file.clone(),
                index,
                api_version: object.api_version().to_string(),
                condition_type: injection_condition_type(&kind, &name),
                required: value == "required",
                ..InjectionPoint::default()
            };
            if value != "required" && value != "optional" {
                point.errors.push(format!(
                    "{file}: {kind}/{name} has invalid {} annotation value of {}",
                    quote(CONFIG_INJECTION_ANNOTATION),
                    quote(value)
                ));
            }
            point.kind = kind;
            point.name = name;
            points.push(point);
        }
    }
    points
}

/// Upstream's `validateInjectionPoints`: each point's own errors, and for a
/// condition type seen before, `duplicate injection conditionType "<ct>"
/// (<previous file> and <this file>)`; all joined into one error.
pub fn validate_injection_points(points: &[InjectionPoint]) -> Result<(), MutationError> {
    let mut errors = Vec::new();
    let mut seen: BTreeMap<&str, &str> = BTreeMap::new();
    for p in points {
        errors.extend(p.errors.iter().cloned());
        if let Some(previous) = seen.insert(&p.condition_type, &p.file) {
            errors.push(format!(
                "duplicate injection conditionType {} ({previous} and {})",
                quote(&p.condition_type),
                p.file
            ));
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(MutationError::InjectionPoints { errors })
    }
}

/// `fn.ParseGroupVersion`: `group/version`, or `("", version)`.
fn group_version(api_version: &str) -> (&str, &str) {
    api_version.split_once('/').unwrap_or(("", api_version))
}

fn json_str<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// Whether a candidate may be used in `namespace`: one that names another
/// namespace is never used.
fn in_namespace(candidate: &Value, namespace: &str) -> bool {
    let ns = json_str(candidate, "/metadata/namespace");
    ns.is_empty() || ns == namespace
}

/// The candidates of the point's type in the namespace (what upstream's
/// `loadInClusterResources` lists).
fn in_cluster_resources<'a>(
    point: &InjectionPoint,
    namespace: &str,
    candidates: &'a [Value],
) -> Vec<&'a Value> {
    let want = group_version(&point.api_version);
    candidates
        .iter()
        .filter(|c| {
            group_version(json_str(c, "/apiVersion")) == want
                && json_str(c, "/kind") == point.kind
                && in_namespace(c, namespace)
        })
        .collect()
}

/// Upstream's `matchSelector`: the injector's present group/version/kind
/// must match the in-package object; then the first in-cluster object with
/// the injector's name.
fn match_selector<'a>(
    point: &InjectionPoint,
    injector: &InjectionSelector,
    in_cluster: &[&'a Value],
) -> Option<&'a Value> {
    let (g, v) = group_version(&point.api_version);
    let ok = injector.group.as_deref().is_none_or(|x| x == g)
        && injector.version.as_deref().is_none_or(|x| x == v)
        && injector.kind.as_deref().is_none_or(|x| x == point.kind);
    if !ok {
        return None;
    }
    in_cluster
        .iter()
        .copied()
        .find(|u| json_str(u, "/metadata/name") == injector.name)
}

/// Injects the selected in-cluster objects into the points' objects
/// (upstream's `injectResources`); outcomes are recorded on the points.
pub fn inject_resources(
    namespace: &str,
    injectors: &[InjectionSelector],
    candidates: &[Value],
    points: &mut [InjectionPoint],
    objects: &mut PackageObjects,
) {
    for point in points.iter_mut() {
        if injectors.is_empty() {
            point.errors.push("no injectors defined".to_string());
            continue;
        }
        let in_cluster = in_cluster_resources(point, namespace, candidates);
        if in_cluster.is_empty() {
            point.errors.push(format!(
                "no in-cluster resources of type {}.{}",
                point.api_version, point.kind
            ));
            continue;
        }
        let Some(u) = injectors
            .iter()
            .find_map(|inj| match_selector(point, inj, &in_cluster))
        else {
            continue;
        };
        let Some(object) = objects
            .get_mut(&point.file)
            .and_then(|objs| objs.get_mut(point.index))
        else {
            continue;
        };
        inject_resource(point, object, u);
    }
}

/// Upstream's `injectResource`: `data` of a core ConfigMap, else `spec`,
/// replaces the in-package field; the object is annotated with the source.
fn inject_resource(point: &mut InjectionPoint, object: &mut Node, u: &Value) {
    let name = json_str(u, "/metadata/name");
    point.injected = true;
    point.injected_name = name.to_string();
    let (group, _) = group_version(json_str(u, "/apiVersion"));
    let field = if group.is_empty() && json_str(u, "/kind") == "ConfigMap" {
        "data"
    } else {
        "spec"
    };
    let fail = |point: &mut InjectionPoint, error: String| {
        point.injected = false;
        point.errors.push(error);
    };
    let value = match u.get(field) {
        None => {
            return fail(
                point,
                format!("field {} not found in resource {}", quote(field), quote(name)),
            )
        }
        Some(Value::Null) => {
            return fail(
                point,
                format!(
                    "unable to set <nil> at fields [{field}] with error: the passed-in object must not be nil"
                ),
            )
        }
        Some(v) => without_null_creation_timestamp(v),
    };
    if let Err(e) = object.set_json(field, &value) {
        return fail(point, e.to_string());
    }
    if let Err(e) = object.set_annotation(INJECTED_RESOURCE_ANNOTATION, name) {
        fail(point, e.to_string());
    }
}

/// The SDK drops `metadata.creationTimestamp: null` from maps it sets.
fn without_null_creation_timestamp(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        if meta.get("creationTimestamp") == Some(&Value::Null) {
            meta.remove("creationTimestamp");
        }
    }
    v
}

/// Runs config injection on `files` (upstream's `ensureConfigInjection`):
/// finds and validates injection points, injects from `candidates` (the
/// in-cluster objects of the PackageVariant's namespace), rewrites the
/// files of injected points, and writes the conditions and readiness gates
/// into the Kptfile, which is always rewritten.
pub fn ensure_config_injection(
    pv: &PackageVariant,
    prr: PrrRef<'_>,
    files: &mut BTreeMap<String, String>,
    candidates: &[Value],
) -> Result<InjectionOutcome, MutationError> {
    let mut objects = parse_package_files(files)?;
    let mut points = find_injection_points(&objects);
    validate_injection_points(&points)?;
    inject_resources(
        &pv.metadata.namespace,
        &pv.spec.injectors,
        candidates,
        &mut points,
        &mut objects,
    );
    let injected: BTreeSet<&str> = points
        .iter()
        .filter(|p| p.injected)
        .map(|p| p.file.as_str())
        .collect();
    for file in injected {
        if let Some(objs) = objects.get(file) {
            let text = emit_objects(objs).map_err(MutationError::yaml(file))?;
            files.insert(file.to_string(), text);
        }
    }
    let mut kptfile = file_object(prr, files, KPTFILE, Some("Kptfile"), None)?;
    let (conditions, readiness_gates) = set_injection_conditions_and_gates(&mut kptfile, &points)?;
    let text = emit_object(&kptfile).map_err(MutationError::yaml(KPTFILE))?;
    files.insert(KPTFILE.to_string(), text);
    Ok(InjectionOutcome {
        points,
        conditions,
        readiness_gates,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const PRR: PrrRef<'static> = PrrRef {
        namespace: "ns",
        name: "prr",
    };
    const KPT: &str = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\n";
    const POINT: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ep\n  annotations:\n    kpt.dev/config-injection: required\ndata:\n  db: default\n";

    fn pv(ns: &str, injectors: &[&str]) -> PackageVariant {
        let mut pv = PackageVariant::default();
        pv.metadata.name = "pv".into();
        pv.metadata.namespace = ns.into();
        pv.spec.injectors = injectors
            .iter()
            .map(|n| InjectionSelector {
                name: n.to_string(),
                ..InjectionSelector::default()
            })
            .collect();
        pv
    }

    fn cm(name: &str, ns: Option<&str>, db: &str) -> Value {
        let mut v = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name}, "data": {"db": db}});
        if let Some(ns) = ns {
            v["metadata"]["namespace"] = json!(ns);
        }
        v
    }

    fn files(extra: &[(&str, &str)]) -> BTreeMap<String, String> {
        let mut f = BTreeMap::from([("Kptfile".to_string(), KPT.to_string())]);
        for (k, v) in extra {
            f.insert(k.to_string(), v.to_string());
        }
        f
    }

    #[test]
    fn candidates_of_another_namespace_are_ignored() {
        let mut f = files(&[("ep.yaml", POINT)]);
        let candidates = [
            cm("east", Some("other"), "leaked"),
            cm("east", Some("prod"), "ok"),
        ];
        let out =
            ensure_config_injection(&pv("prod", &["east"]), PRR, &mut f, &candidates).unwrap();
        assert!(out.points[0].injected);
        assert!(f["ep.yaml"].contains("db: ok"), "{}", f["ep.yaml"]);

        let mut f = files(&[("ep.yaml", POINT)]);
        let candidates = [cm("east", Some("other"), "leaked")];
        let out =
            ensure_config_injection(&pv("prod", &["east"]), PRR, &mut f, &candidates).unwrap();
        assert!(!out.points[0].injected);
        assert_eq!(
            out.points[0].errors,
            ["no in-cluster resources of type v1.ConfigMap"]
        );
        assert_eq!(f["ep.yaml"], POINT, "untouched");
        assert_eq!(
            out.readiness_gates,
            [ReadinessGate {
                condition_type: "config.injection.ConfigMap.ep".into()
            }]
        );
        assert_eq!(out.conditions[0].status, "False");
        assert_eq!(
            out.conditions[0].message,
            "no in-cluster resources of type v1.ConfigMap"
        );
    }

    #[test]
    fn required_without_injectors_is_a_false_condition_not_an_error() {
        let mut f = files(&[("ep.yaml", POINT)]);
        let out = ensure_config_injection(&pv("ns", &[]), PRR, &mut f, &[]).unwrap();
        assert_eq!(out.points[0].errors, ["no injectors defined"]);
        assert!(f["Kptfile"].contains("message: no injectors defined"));
        assert!(f["Kptfile"].contains("- conditionType: config.injection.ConfigMap.ep"));
    }

    #[test]
    fn injection_point_errors() {
        let bad = POINT.replace("required", "sometimes");
        let mut f = files(&[("a.yaml", POINT), ("b.yaml", POINT), ("c.yaml", &bad)]);
        let err = ensure_config_injection(&pv("ns", &["x"]), PRR, &mut f, &[]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "errors in injection points: duplicate injection conditionType \"config.injection.ConfigMap.ep\" (a.yaml and b.yaml), c.yaml: ConfigMap/ep has invalid \"kpt.dev/config-injection\" annotation value of \"sometimes\", duplicate injection conditionType \"config.injection.ConfigMap.ep\" (b.yaml and c.yaml)"
        );
        let mut f = files(&[("junk.yaml", "baddata")]);
        assert_eq!(
            ensure_config_injection(&pv("ns", &["x"]), PRR, &mut f, &[])
                .unwrap_err()
                .to_string(),
            "junk.yaml: failed to extract objects: unhandled node kind 8"
        );
    }

    #[test]
    fn missing_field_and_gvk_selectors() {
        let team = "apiVersion: hr.example.com/v1\nkind: Team\nmetadata:\n  name: t\n  annotations:\n    kpt.dev/config-injection: optional\nspec:\n  code: x\n";
        let mut p = pv("ns", &[]);
        p.spec.injectors = vec![
            InjectionSelector {
                kind: Some("Other".into()),
                name: "a".into(),
                ..InjectionSelector::default()
            },
            InjectionSelector {
                group: Some("hr.example.com".into()),
                name: "b".into(),
                ..InjectionSelector::default()
            },
        ];
        let candidates = [
            json!({"apiVersion": "hr.example.com/v1", "kind": "Team", "metadata": {"name": "a"}, "spec": {"code": "A"}}),
            json!({"apiVersion": "hr.example.com/v1", "kind": "Team", "metadata": {"name": "b"}}),
        ];
        let mut f = files(&[("t.yaml", team)]);
        let out = ensure_config_injection(&p, PRR, &mut f, &candidates).unwrap();
        assert!(!out.points[0].injected);
        assert_eq!(
            out.points[0].errors,
            ["field \"spec\" not found in resource \"b\""]
        );
        assert_eq!(f["t.yaml"], team);
        assert!(out.readiness_gates.is_empty());
    }
}
