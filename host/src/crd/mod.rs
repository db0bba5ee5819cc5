//! The CustomResourceDefinitions of PackageVariant
//! (`config.porch.kpt.dev/v1alpha1`) and PackageVariantSet
//! (`config.porch.kpt.dev/v1alpha2` served and stored, `v1alpha1` kept
//! unserved as upstream does), and of the PackageRevision controller's
//! kinds (`porch.kpt.dev/v1alpha2` PackageRevision,
//! `config.porch.kpt.dev/v1alpha1` Repository), generated from the Rust
//! types.
//!
//! The schemas come from the types' `schemars::JsonSchema` derives
//! (openapi3 settings, subschemas inlined), rewritten to Kubernetes'
//! structural schema rules by [`structural`]. The few facts the Rust types
//! cannot carry (upstream's `+kubebuilder` markers: required fields, list
//! and map types, the standard `metav1.Condition` schema) are added by
//! [`MARKERS`], each with the path it applies to.

pub mod drift;
pub mod kpt;

use pv_core::api::package_variant::{PackageVariantSpec, PackageVariantStatus};
use pv_core::variantset::types::{v1alpha1, PackageVariantSetSpec, PackageVariantSetStatus};
use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::{json, Map, Value};

/// The API group of both CRDs.
pub const GROUP: &str = "config.porch.kpt.dev";
/// Name of the PackageVariant CRD.
pub const PACKAGE_VARIANT_CRD: &str = "packagevariants.config.porch.kpt.dev";
/// Name of the PackageVariantSet CRD.
pub const PACKAGE_VARIANT_SET_CRD: &str = "packagevariantsets.config.porch.kpt.dev";

/// The JSON schema of `T` as schemars writes it for OpenAPI 3, with every
/// subschema inlined.
fn raw_schema<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::openapi3()
        .with(|s| {
            s.inline_subschemas = true;
        })
        .into_generator();
    generator.into_root_schema_for::<T>().to_value()
}

/// The structural schema of `T`.
pub fn schema_of<T: JsonSchema>() -> Value {
    let mut v = raw_schema::<T>();
    structural(&mut v);
    v
}

/// Formats Kubernetes accepts for the types used here.
const FORMATS: &[&str] = &["int32", "int64", "double", "float", "date-time"];

/// Rewrites a schemars schema to Kubernetes' structural schema rules: no
/// `$schema`/`title`/`default`/`nullable`/`definitions`, `Option<T>`
/// collapsed to `T`, free-form JSON (`true`) as
/// `x-kubernetes-preserve-unknown-fields`, unsigned or unknown formats
/// dropped.
pub fn structural(v: &mut Value) {
    if let Value::Bool(true) = v {
        *v = json!({"x-kubernetes-preserve-unknown-fields": true});
        return;
    }
    let Value::Object(obj) = v else {
        return;
    };
    for key in [
        "$schema",
        "$defs",
        "definitions",
        "title",
        "default",
        "nullable",
        "examples",
        "minimum",
        "maximum",
    ] {
        obj.remove(key);
    }
    if let Some(Value::String(f)) = obj.get("format") {
        if !FORMATS.contains(&f.as_str()) {
            obj.remove("format");
        }
    }
    // `type: [T, "null"]` → `type: T`.
    if let Some(Value::Array(types)) = obj.get("type") {
        let kept: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        if kept.len() == 1 {
            obj.insert("type".into(), kept[0].clone());
        }
    }
    // `anyOf: [T, {nullable/null}]` (an `Option` of an inlined type) → T.
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = obj.get(key) {
            let kept: Vec<Value> = branches
                .iter()
                .filter(|b| {
                    !(b.get("type") == Some(&json!("null"))
                        || b.get("enum") == Some(&json!([null]))
                        || b.get("nullable") == Some(&json!(true)) && b.get("type").is_none())
                })
                .cloned()
                .collect();
            if kept.len() == 1 {
                obj.remove(key);
                if let Value::Object(inner) = &kept[0] {
                    for (k, val) in inner {
                        obj.entry(k.clone()).or_insert_with(|| val.clone());
                    }
                }
            }
        }
    }
    // An object without properties that allows anything is free-form.
    if obj.is_empty() {
        obj.insert("x-kubernetes-preserve-unknown-fields".into(), json!(true));
        return;
    }
    if obj.get("additionalProperties") == Some(&json!(true)) {
        obj.remove("additionalProperties");
        obj.insert("x-kubernetes-preserve-unknown-fields".into(), json!(true));
    }
    if let Some(Value::Object(props)) = obj.get_mut("properties") {
        for p in props.values_mut() {
            structural(p);
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(sub) = obj.get_mut(key) {
            structural(sub);
        }
    }
    if obj.get("required") == Some(&json!([])) {
        obj.remove("required");
    }
}

/// One upstream `+kubebuilder` marker the Rust types do not carry: at a
/// schema path (property names joined by `.`, `[]` for list items), merge
/// these keys.
pub struct Marker {
    /// CRD (`PackageVariant`, `PackageVariantSet`) and path.
    pub path: &'static str,
    /// Keys merged into the schema at that path.
    pub keys: fn() -> Value,
    /// Whether the keys replace the schema there instead.
    pub replace: bool,
}

/// `metav1.Condition` as Kubernetes defines it (required fields, the
/// status enum, lengths and patterns).
pub fn condition_schema() -> Value {
    json!({
        "description": "Condition contains details for one aspect of the current state of this API Resource.",
        "properties": {
            "lastTransitionTime": {"format": "date-time", "type": "string"},
            "message": {"maxLength": 32768, "type": "string"},
            "observedGeneration": {"format": "int64", "minimum": 0, "type": "integer"},
            "reason": {
                "maxLength": 1024, "minLength": 1,
                "pattern": "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$", "type": "string"
            },
            "status": {"enum": ["True", "False", "Unknown"], "type": "string"},
            "type": {
                "maxLength": 316,
                "pattern": "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
                "type": "string"
            }
        },
        "required": ["lastTransitionTime", "message", "reason", "status", "type"],
        "type": "object"
    })
}

fn required(fields: &'static [&'static str]) -> Value {
    json!({ "required": fields })
}

/// The markers, by CRD and path.
pub const MARKERS: &[Marker] = &[
    // PackageVariant: `injectors[].name` is the only required field.
    Marker {
        path: "PackageVariant:spec.injectors[]",
        keys: || required(&["name"]),
        replace: false,
    },
    Marker {
        path: "PackageVariant:status.conditions[]",
        keys: condition_schema,
        replace: false,
    },
    // kpt's FunctionResultList: `exitCode` required on results, `error`
    // on renderStatus.
    Marker {
        path: "PackageVariant:status.downstreamTargets[].renderStatus",
        keys: || required(&["error"]),
        replace: false,
    },
    Marker {
        path: "PackageVariant:status.downstreamTargets[].renderStatus.result",
        keys: || required(&["exitCode"]),
        replace: false,
    },
    Marker {
        path: "PackageVariant:status.downstreamTargets[].renderStatus.result.items",
        keys: || json!({"items": schema_of::<kpt::FunctionResult>(), "type": "array"}),
        replace: true,
    },
    Marker {
        path: "PackageVariant:status.downstreamTargets[].renderStatus.result.metadata",
        keys: || json!({"type": "object"}),
        replace: true,
    },
    Marker {
        path: "PackageVariantSet:status.conditions[]",
        keys: condition_schema,
        replace: false,
    },
    Marker {
        path: "PackageVariantSet:spec.targets[].repositories[]",
        keys: || required(&["name"]),
        replace: false,
    },
    Marker {
        path: "PackageVariantSet:spec.targets[].repositorySelector",
        keys: || json!({"x-kubernetes-map-type": "atomic"}),
        replace: false,
    },
    Marker {
        path: "PackageVariantSet:spec.targets[].repositorySelector.matchExpressions",
        keys: || json!({"x-kubernetes-list-type": "atomic"}),
        replace: false,
    },
    Marker {
        path: "PackageVariantSet:spec.targets[].repositorySelector.matchExpressions[]",
        keys: || required(&["key", "operator"]),
        replace: false,
    },
    Marker {
        path: "PackageVariantSet:spec.targets[].repositorySelector.matchExpressions[].values",
        keys: || json!({"x-kubernetes-list-type": "atomic"}),
        replace: false,
    },
    Marker {
        path: "PackageVariantSet:spec.targets[].objectSelector",
        keys: || json!({"x-kubernetes-map-type": "atomic"}),
        replace: false,
    },
    Marker {
        path: "PackageVariantSet:spec.targets[].objectSelector.matchExpressions",
        keys: || json!({"x-kubernetes-list-type": "atomic"}),
        replace: false,
    },
    Marker {
        path: "PackageVariantSet:spec.targets[].objectSelector.matchExpressions[]",
        keys: || required(&["key", "operator"]),
        replace: false,
    },
    Marker {
        path: "PackageVariantSet:spec.targets[].objectSelector.matchExpressions[].values",
        keys: || json!({"x-kubernetes-list-type": "atomic"}),
        replace: false,
    },
    Marker {
        path: "PackageVariantSet.v1alpha1:spec.targets[].repositories",
        keys: || json!({"x-kubernetes-map-type": "atomic"}),
        replace: false,
    },
    Marker {
        path: "PackageVariantSet.v1alpha1:spec.targets[].repositories.matchExpressions",
        keys: || json!({"x-kubernetes-list-type": "atomic"}),
        replace: false,
    },
    Marker {
        path: "PackageVariantSet.v1alpha1:spec.targets[].repositories.matchExpressions[]",
        keys: || required(&["key", "operator"]),
        replace: false,
    },
    Marker {
        path: "PackageVariantSet.v1alpha1:spec.targets[].repositories.matchExpressions[].values",
        keys: || json!({"x-kubernetes-list-type": "atomic"}),
        replace: false,
    },
    Marker {
        path: "PackageVariantSet.v1alpha1:spec.targets[].objects.selectors[].labelSelector",
        keys: || json!({"x-kubernetes-map-type": "atomic"}),
        replace: false,
    },
    Marker {
        path: "PackageVariantSet.v1alpha1:spec.targets[].objects.selectors[].labelSelector.matchExpressions",
        keys: || json!({"x-kubernetes-list-type": "atomic"}),
        replace: false,
    },
    Marker {
        path: "PackageVariantSet.v1alpha1:spec.targets[].objects.selectors[].labelSelector.matchExpressions[]",
        keys: || required(&["key", "operator"]),
        replace: false,
    },
    Marker {
        path: "PackageVariantSet.v1alpha1:spec.targets[].objects.selectors[].labelSelector.matchExpressions[].values",
        keys: || json!({"x-kubernetes-list-type": "atomic"}),
        replace: false,
    },
    Marker {
        path: "PackageVariantSet.v1alpha1:status.conditions[]",
        keys: condition_schema,
        replace: false,
    },
    // PackageRevision v1alpha2: the lifecycle enum has no empty value in
    // the API (ours reads "" as unset), the source's one-of rule, the
    // enums kept as strings in the types, and the conditions list map.
    Marker {
        path: "PackageRevision:spec.lifecycle",
        keys: || json!({"enum": ["Draft", "Proposed", "Published", "DeletionProposed"], "type": "string"}),
        replace: true,
    },
    Marker {
        path: "PackageRevision:spec.source",
        keys: || {
            json!({"x-kubernetes-validations": [{
                "message": "exactly one of init, cloneFrom, copyFrom, or upgrade must be set",
                "rule": "[has(self.init), has(self.cloneFrom), has(self.copyFrom), has(self.upgrade)].filter(x, x).size() == 1"
            }]})
        },
        replace: false,
    },
    Marker {
        path: "PackageRevision:spec.source.cloneFrom.type",
        keys: || json!({"enum": ["git"]}),
        replace: false,
    },
    Marker {
        path: "PackageRevision:spec.source.upgrade.strategy",
        keys: || json!({"enum": ["resource-merge", "fast-forward", "force-delete-replace", "copy-merge"]}),
        replace: false,
    },
    Marker {
        path: "PackageRevision:status.conditions",
        keys: || json!({"x-kubernetes-list-map-keys": ["type"], "x-kubernetes-list-type": "map"}),
        replace: false,
    },
    Marker {
        path: "PackageRevision:status.conditions[]",
        keys: condition_schema,
        replace: false,
    },
    // Repository: defaults and the deprecated `content` rule.
    Marker {
        path: "Repository:spec.content",
        keys: || {
            json!({"default": "Package", "x-kubernetes-validations": [{
                "message": "The 'content' field is deprecated, its only valid value is 'Package'",
                "rule": "self == '' || self == 'Package'"
            }]})
        },
        replace: false,
    },
    Marker {
        path: "Repository:spec.git.branch",
        keys: || json!({"default": "main", "minLength": 1}),
        replace: false,
    },
    // Required by the API, read leniently by the types.
    Marker {
        path: "Repository:spec.git",
        keys: || required(&["repo"]),
        replace: false,
    },
    Marker {
        path: "Repository:spec.oci",
        keys: || required(&["registry"]),
        replace: false,
    },
    Marker {
        path: "Repository:spec.git.secretRef",
        keys: || required(&["name"]),
        replace: false,
    },
    Marker {
        path: "Repository:spec.oci.secretRef",
        keys: || required(&["name"]),
        replace: false,
    },
    Marker {
        path: "PackageRevision:spec.source.cloneFrom.git.secretRef",
        keys: || required(&["name"]),
        replace: false,
    },
    Marker {
        path: "Repository:status.conditions[]",
        keys: condition_schema,
        replace: false,
    },
];

/// The schema node at `path` (`a.b[].c`), if any.
pub fn node_at<'a>(root: &'a mut Value, path: &str) -> Option<&'a mut Value> {
    let mut cur = root;
    for part in path.split('.') {
        let (name, items) = match part.strip_suffix("[]") {
            Some(n) => (n, true),
            None => (part, false),
        };
        cur = cur.get_mut("properties")?.get_mut(name)?;
        if items {
            cur = cur.get_mut("items")?;
        }
    }
    Some(cur)
}

fn apply_markers(kind: &str, root: &mut Value) {
    for m in MARKERS {
        let Some((k, path)) = m.path.split_once(':') else {
            continue;
        };
        if k != kind {
            continue;
        }
        if let Some(node) = node_at(root, path) {
            if m.replace {
                *node = (m.keys)();
                continue;
            }
            let Value::Object(node) = node else {
                continue;
            };
            if let Value::Object(keys) = (m.keys)() {
                for (key, val) in keys {
                    node.insert(key, val);
                }
            }
        }
    }
}

const API_VERSION_DESCRIPTION: &str =
    "APIVersion defines the versioned schema of this representation of an object.";
const KIND_DESCRIPTION: &str =
    "Kind is a string value representing the REST resource this object represents.";

/// The `openAPIV3Schema` of a kind from its spec and status schemas.
fn object_schema(kind: &str, description: &str, spec: Value, status: Value) -> Value {
    let mut root = json!({
        "description": description,
        "properties": {
            "apiVersion": {"description": API_VERSION_DESCRIPTION, "type": "string"},
            "kind": {"description": KIND_DESCRIPTION, "type": "string"},
            "metadata": {"type": "object"},
            "spec": spec,
            "status": status,
        },
        "type": "object",
    });
    apply_markers(kind, &mut root);
    root
}

fn version(name: &str, served: bool, storage: bool, schema: Value) -> Value {
    json!({
        "name": name,
        "schema": {"openAPIV3Schema": schema},
        "served": served,
        "storage": storage,
        "subresources": {"status": {}},
    })
}

fn crd(kind: &str, plural: &str, versions: Vec<Value>) -> Value {
    crd_in(GROUP, kind, plural, &[], versions)
}

fn crd_in(
    group: &str,
    kind: &str,
    plural: &str,
    short_names: &[&str],
    versions: Vec<Value>,
) -> Value {
    let mut names = Map::new();
    names.insert("kind".into(), json!(kind));
    names.insert("listKind".into(), json!(format!("{kind}List")));
    names.insert("plural".into(), json!(plural));
    if !short_names.is_empty() {
        names.insert("shortNames".into(), json!(short_names));
    }
    names.insert("singular".into(), json!(kind.to_lowercase()));
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {
            "group": group,
            "names": names,
            "scope": "Namespaced",
            "versions": versions,
        }
    })
}

/// A printer column: `(name, type, jsonPath)`.
type Column = (&'static str, &'static str, &'static str);

/// `version` with kubectl's printer columns and the fields a field
/// selector may name, in controller-gen's key order.
fn version_with(name: &str, schema: Value, columns: &[Column], selectable: &[&str]) -> Value {
    let mut v = Map::new();
    v.insert(
        "additionalPrinterColumns".into(),
        columns
            .iter()
            .map(|(n, t, p)| json!({"jsonPath": p, "name": n, "type": t}))
            .collect(),
    );
    v.insert("name".into(), json!(name));
    v.insert("schema".into(), json!({"openAPIV3Schema": schema}));
    if !selectable.is_empty() {
        v.insert(
            "selectableFields".into(),
            selectable.iter().map(|p| json!({"jsonPath": p})).collect(),
        );
    }
    v.insert("served".into(), json!(true));
    v.insert("storage".into(), json!(true));
    v.insert("subresources".into(), json!({"status": {}}));
    Value::Object(v)
}

/// The group of the v1alpha2 PackageRevision.
pub const PORCH_GROUP: &str = "porch.kpt.dev";
/// Name of the v1alpha2 PackageRevision CRD.
pub const PACKAGE_REVISION_CRD: &str = "packagerevisions.porch.kpt.dev";
/// Name of the Repository CRD.
pub const REPOSITORY_CRD: &str = "repositories.config.porch.kpt.dev";

/// The `porch.kpt.dev/v1alpha2` PackageRevision CRD (short name `rpkg`).
pub fn package_revision_crd() -> Value {
    use pv_core::api::package_revision::v1alpha2::{Spec, Status};
    let schema = object_schema(
        "PackageRevision",
        "PackageRevision represents a package revision: the object is the intent, Git the content.",
        schema_of::<Spec>(),
        schema_of::<Status>(),
    );
    let columns: &[Column] = &[
        ("Package", "string", ".spec.packageName"),
        ("WorkspaceName", "string", ".spec.workspaceName"),
        ("Revision", "string", ".status.revision"),
        (
            "Latest",
            "string",
            ".metadata.labels['porch.kpt.dev/latest-revision']",
        ),
        ("Lifecycle", "string", ".spec.lifecycle"),
        ("Repository", "string", ".spec.repository"),
        ("Age", "date", ".metadata.creationTimestamp"),
    ];
    let selectable = [
        ".spec.lifecycle",
        ".spec.repository",
        ".spec.packageName",
        ".spec.workspaceName",
        ".status.revision",
    ];
    crd_in(
        PORCH_GROUP,
        "PackageRevision",
        "packagerevisions",
        &["rpkg"],
        vec![version_with("v1alpha2", schema, columns, &selectable)],
    )
}

/// The rules upstream puts on a whole Repository: its name, and the fields
/// that may not change.
fn repository_rules() -> Value {
    let rule = |message: &str, rule: &str| json!({"message": message, "rule": rule});
    let immutable = |field: &str, parent: &str, leaf: &str| {
        rule(
            &format!("spec.{field} is immutable"),
            &format!(
                "!has(oldSelf.spec.{parent}) || !has(oldSelf.spec.{parent}.{leaf}) || self.spec.{parent}.{leaf} == oldSelf.spec.{parent}.{leaf}"
            ),
        )
    };
    json!([
        rule(
            "metadata.name must conform to the RFC1123 DNS label standard",
            "self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')"
        ),
        rule(
            "metadata.name must be no more than 63 characters",
            "size(self.metadata.name) <= 63"
        ),
        rule(
            "spec.type is immutable",
            "!has(oldSelf.spec.type) || self.spec.type == oldSelf.spec.type"
        ),
        immutable("git.repo", "git", "repo"),
        immutable("git.branch", "git", "branch"),
        immutable("git.directory", "git", "directory"),
        immutable("oci.registry", "oci", "registry"),
    ])
}

/// The `config.porch.kpt.dev/v1alpha1` Repository CRD (short name
/// `repo`).
pub fn repository_crd() -> Value {
    use pv_core::api::repository::{RepositorySpec, RepositoryStatus};
    let mut schema = object_schema(
        "Repository",
        "Repository represents a repository of packages.",
        schema_of::<RepositorySpec>(),
        schema_of::<RepositoryStatus>(),
    );
    if let Value::Object(root) = &mut schema {
        root.insert("x-kubernetes-validations".into(), repository_rules());
    }
    let columns: &[Column] = &[
        ("Type", "string", ".spec.type"),
        ("Content", "string", ".spec.content"),
        ("Sync schedule", "string", ".spec.sync.schedule"),
        ("Deployment", "boolean", ".spec.deployment"),
        (
            "Ready",
            "string",
            ".status.conditions[?(@.type=='Ready')].status",
        ),
        ("Address", "string", ".spec['git','oci']['repo','registry']"),
        ("Branch", "string", ".spec.git.branch"),
        ("Age", "date", ".metadata.creationTimestamp"),
    ];
    crd_in(
        GROUP,
        "Repository",
        "repositories",
        &["repo"],
        vec![version_with("v1alpha1", schema, columns, &[])],
    )
}

/// The PackageVariant CRD.
pub fn package_variant_crd() -> Value {
    let schema = object_schema(
        "PackageVariant",
        "PackageVariant represents an upstream and downstream porch package pair.",
        schema_of::<PackageVariantSpec>(),
        schema_of::<PackageVariantStatus>(),
    );
    crd(
        "PackageVariant",
        "packagevariants",
        vec![version("v1alpha1", true, true, schema)],
    )
}

/// The PackageVariantSet CRD: `v1alpha1` (unserved, kept so objects stored
/// with it stay readable by name) and `v1alpha2` (served, stored).
pub fn package_variant_set_crd() -> Value {
    let old = object_schema(
        "PackageVariantSet.v1alpha1",
        "PackageVariantSet is the Schema for the packagevariantsets API",
        schema_of::<v1alpha1::PackageVariantSetSpec>(),
        schema_of::<PackageVariantSetStatus>(),
    );
    let new = object_schema(
        "PackageVariantSet",
        "PackageVariantSet is the Schema for the packagevariantsets API",
        schema_of::<PackageVariantSetSpec>(),
        schema_of::<PackageVariantSetStatus>(),
    );
    crd(
        "PackageVariantSet",
        "packagevariantsets",
        vec![
            version("v1alpha1", false, false, old),
            version("v1alpha2", true, true, new),
        ],
    )
}

/// Both CRDs, with the file name each has under `deploy/crds/`.
pub fn all() -> Vec<(&'static str, Value)> {
    vec![
        (
            "config.porch.kpt.dev_packagevariants.yaml",
            package_variant_crd(),
        ),
        (
            "config.porch.kpt.dev_packagevariantsets.yaml",
            package_variant_set_crd(),
        ),
    ]
}

/// The CRDs of the PackageRevision controller, with their file names
/// under `deploy/crds/`: the v1alpha2 PackageRevision and the Repository
/// (which a cluster with Porch already has). They are not in `deploy/`'s
/// kustomization, and not in [`all`].
pub fn package_revision_crds() -> Vec<(&'static str, Value)> {
    vec![
        (
            "porch.kpt.dev_packagerevisions.yaml",
            package_revision_crd(),
        ),
        ("config.porch.kpt.dev_repositories.yaml", repository_crd()),
    ]
}

/// A CRD as YAML (kyaml style, keys in our JSON order).
pub fn to_yaml(crd: &Value) -> Result<String, pv_core::yaml::YamlError> {
    pv_core::yaml::to_string(&pv_core::yaml::from_json(crd))
}

/// Both CRDs as one multi-document YAML stream.
pub fn all_yaml() -> Result<String, pv_core::yaml::YamlError> {
    yaml_of(all())
}

/// `crds` as one YAML stream.
pub fn yaml_of(crds: Vec<(&'static str, Value)>) -> Result<String, pv_core::yaml::YamlError> {
    let mut out = String::new();
    for (_, crd) in crds {
        out.push_str("---\n");
        out.push_str(&to_yaml(&crd)?);
    }
    Ok(out)
}
