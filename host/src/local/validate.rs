//! Reading the directory's objects as `kubectl --validate` does: an object
//! of one of our kinds (PackageVariant, PackageVariantSet, Repository,
//! PackageRevision) is checked against its CRD's schema, the same
//! [`crate::crd`] schema the API server prunes by. A field the schema
//! does not know, or a key written twice, is an error in the default
//! `strict` mode, a warning with `warn`, and passes silently with `ignore`
//! (where the object then reads as it always did: unknown fields dropped,
//! the last of repeated keys kept).

use std::collections::HashMap;
use std::sync::OnceLock;

use pv_core::yaml::{Kind, Node};
use serde_json::Value;

/// How strictly the directory's objects are read (kubectl's
/// `--validate`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Validation {
    /// An unknown or repeated field is an error naming file, object, field
    /// and line (kubectl's `--validate=strict`, also `true`).
    #[default]
    #[value(alias = "true")]
    Strict,
    /// Unknown or repeated fields are reported as warnings; the object is
    /// read as with `ignore`.
    Warn,
    /// Unknown fields are dropped and the last of repeated keys is kept,
    /// without a word (also `false`).
    #[value(alias = "false")]
    Ignore,
}

/// The fields of `metadata` (Kubernetes' ObjectMeta), which CRD schemas do
/// not spell out.
const OBJECT_META: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// The fields of an owner reference.
const OWNER_REFERENCE: &[&str] = &[
    "apiVersion",
    "kind",
    "name",
    "uid",
    "controller",
    "blockOwnerDeletion",
];

/// The schema of each version of a kind: (group, kind) → [(version,
/// openAPIV3Schema)], storage version first.
type Schemas = HashMap<(String, String), Vec<(String, Value)>>;

fn schemas() -> &'static Schemas {
    static SCHEMAS: OnceLock<Schemas> = OnceLock::new();
    SCHEMAS.get_or_init(|| {
        let mut out = Schemas::new();
        let mut crds = crate::crd::all();
        crds.extend(crate::crd::package_revision_crds());
        for (_, crd) in crds {
            let spec = &crd["spec"];
            let key = (
                spec["group"].as_str().unwrap_or_default().to_string(),
                spec["names"]["kind"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            );
            let mut versions: Vec<(bool, String, Value)> = spec["versions"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|v| {
                    (
                        v["storage"] != true,
                        v["name"].as_str().unwrap_or_default().to_string(),
                        v["schema"]["openAPIV3Schema"].clone(),
                    )
                })
                .collect();
            versions.sort_by_key(|v| v.0);
            out.insert(key, versions.into_iter().map(|(_, n, s)| (n, s)).collect());
        }
        out
    })
}

/// The schema `object` is read by: its kind's, at its apiVersion's
/// version (the stored version when it has no apiVersion, as local mode
/// reads such objects). `None` for kinds of other groups; an error for a
/// version the kind does not have.
fn schema_for(object: &Value) -> Result<Option<&'static Value>, String> {
    let kind = object["kind"].as_str().unwrap_or_default();
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let (group, version) = match api_version.rsplit_once('/') {
        Some((g, v)) => (Some(g), Some(v)),
        None if api_version.is_empty() => (None, None),
        None => (Some(""), Some(api_version)),
    };
    let Some(versions) = schemas()
        .iter()
        .find(|((g, k), _)| k == kind && group.is_none_or(|group| group == g))
        .map(|(_, versions)| versions)
    else {
        return Ok(None);
    };
    match version {
        None => Ok(versions.first().map(|(_, s)| s)),
        Some(v) => match versions.iter().find(|(name, _)| name == v) {
            Some((_, s)) => Ok(Some(s)),
            None => Err(format!(
                "no kind {kind:?} is registered for version {api_version:?} (known: {})",
                versions
                    .iter()
                    .map(|(n, _)| n.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        },
    }
}

/// One step of a field path.
#[derive(Debug, Clone)]
enum Step {
    Key(String),
    Index(usize),
}

/// A path as Kubernetes writes it: `spec.injectors[0].nmae`.
fn path_text(path: &[Step]) -> String {
    let mut out = String::new();
    for step in path {
        match step {
            Step::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Step::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// The paths of `value`'s fields that `schema` does not know.
fn unknown_fields(value: &Value, schema: &Value, path: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
    if schema["x-kubernetes-preserve-unknown-fields"] == true {
        return;
    }
    match value {
        Value::Object(map) => {
            let properties = schema["properties"].as_object();
            let additional = &schema["additionalProperties"];
            for (key, child) in map {
                path.push(Step::Key(key.clone()));
                if let Some(s) = properties.and_then(|p| p.get(key)) {
                    unknown_fields(child, s, path, out);
                } else if additional.is_object() {
                    unknown_fields(child, additional, path, out);
                } else if *additional != true {
                    out.push(path.clone());
                }
                path.pop();
            }
        }
        Value::Array(items) => {
            if let Some(s) = schema.get("items") {
                for (i, item) in items.iter().enumerate() {
                    path.push(Step::Index(i));
                    unknown_fields(item, s, path, out);
                    path.pop();
                }
            }
        }
        _ => {}
    }
}

/// The unknown fields of `object` (a whole object of one of our kinds),
/// with `metadata` checked as ObjectMeta.
fn unknown_fields_of(object: &Value, schema: &Value) -> Vec<Vec<Step>> {
    let mut out = Vec::new();
    let mut path = Vec::new();
    let Value::Object(map) = object else {
        return out;
    };
    for (key, child) in map {
        path.push(Step::Key(key.clone()));
        if key == "metadata" {
            metadata_unknown_fields(child, &mut path, &mut out);
        } else if let Some(s) = schema["properties"].get(key) {
            unknown_fields(child, s, &mut path, &mut out);
        } else {
            out.push(path.clone());
        }
        path.pop();
    }
    out
}

fn metadata_unknown_fields(metadata: &Value, path: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
    let Value::Object(map) = metadata else {
        return;
    };
    for (key, child) in map {
        path.push(Step::Key(key.clone()));
        if !OBJECT_META.contains(&key.as_str()) {
            out.push(path.clone());
        } else if key == "ownerReferences" {
            for (i, owner) in child.as_array().into_iter().flatten().enumerate() {
                path.push(Step::Index(i));
                for field in owner.as_object().into_iter().flatten().map(|(k, _)| k) {
                    if !OWNER_REFERENCE.contains(&field.as_str()) {
                        path.push(Step::Key(field.clone()));
                        out.push(path.clone());
                        path.pop();
                    }
                }
                path.pop();
            }
        }
        path.pop();
    }
}

/// The line of the key (or item) at `path` under `node`, when the file
/// spells it out (not through an alias or a merge key).
fn line_of(node: &Node, path: &[Step]) -> Option<u32> {
    let mut node = node.root();
    let mut line = None;
    for step in path {
        match (step, &node.kind) {
            (Step::Key(k), Kind::Mapping) => {
                let i = node
                    .content
                    .chunks(2)
                    .rposition(|kv| kv[0].kind == Kind::Scalar && kv[0].value == *k)?;
                line = Some(node.content[2 * i].line);
                node = node.content.get(2 * i + 1)?;
            }
            (Step::Index(i), Kind::Sequence) => {
                node = node.content.get(*i)?;
                line = Some(node.line);
            }
            _ => return None,
        }
    }
    line.filter(|l| *l > 0)
}

/// What [`check`] found wrong with an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// `strict decoding error: unknown field "spec.injector"`, as the API
    /// server words it, with the line where the file has it.
    pub message: String,
}

/// Checks one document (`doc`, read as `object`): a key written twice
/// anywhere (`repeated_key`, the strict reader's complaint), and for
/// objects of our kinds, fields their schema does not know. An apiVersion
/// the kind does not have is always an error.
pub fn check(
    doc: &Node,
    object: &Value,
    repeated_key: Option<&str>,
) -> Result<Vec<Finding>, String> {
    let mut out = Vec::new();
    if let Some(message) = repeated_key {
        out.push(Finding {
            message: format!("strict decoding error: {message}"),
        });
    }
    let Some(schema) = schema_for(object)? else {
        return Ok(out);
    };
    let unknown = unknown_fields_of(object, schema);
    if unknown.is_empty() {
        return Ok(out);
    }
    let fields: Vec<String> = unknown
        .iter()
        .map(|path| {
            let at = line_of(doc, path)
                .map(|l| format!(" (line {l})"))
                .unwrap_or_default();
            format!("unknown field {:?}{at}", path_text(path))
        })
        .collect();
    out.push(Finding {
        message: format!("strict decoding error: {}", fields.join(", ")),
    });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn findings(text: &str) -> Result<Vec<String>, String> {
        let docs = pv_core::yaml::parse_stream(text).expect("parses");
        let doc = &docs[0];
        let repeated = pv_core::yaml::to_json_strict(doc)
            .err()
            .map(|e| e.to_string());
        let object = pv_core::yaml::to_json(doc).expect("reads");
        check(doc, &object, repeated.as_deref()).map(|f| f.into_iter().map(|f| f.message).collect())
    }

    #[test]
    fn a_misspelt_field_is_named_with_its_path_and_line() {
        let got = findings(
            "apiVersion: config.porch.kpt.dev/v1alpha1\nkind: PackageVariant\nmetadata:\n  name: x\n  lables: {a: b}\nspec:\n  upstream: {repo: r, package: p, revision: v1}\n  downstream: {repo: d, package: p}\n  injector:\n  - name: c\n  pipeline:\n    mutators:\n    - image: x\n      configmap: {a: b}\n",
        )
        .expect("checks");
        assert_eq!(
            got,
            vec![
                "strict decoding error: unknown field \"metadata.lables\" (line 5), unknown field \"spec.injector\" (line 9), unknown field \"spec.pipeline.mutators[0].configmap\" (line 14)"
            ]
        );
    }

    #[test]
    fn a_well_formed_object_of_every_kind_passes() {
        for text in [
            "apiVersion: config.porch.kpt.dev/v1alpha1\nkind: PackageVariant\nmetadata:\n  name: x\n  labels: {a: b}\n  ownerReferences: [{apiVersion: v, kind: K, name: n, uid: u, controller: true}]\nspec:\n  upstream: {repo: r, package: p, revision: v1}\n  downstream: {repo: d, package: p}\n  injectors: [{name: c}]\n  packageContext: {data: {k: v}}\n  pipeline: {mutators: [{image: x, configMap: {a: b}}]}\n",
            "kind: Repository\nmetadata:\n  name: r\nspec:\n  type: git\n  deployment: true\n  git: {repo: 'https://example.com/r.git', branch: main, directory: /, secretRef: {name: s}}\n",
            "apiVersion: config.porch.kpt.dev/v1alpha2\nkind: PackageVariantSet\nmetadata:\n  name: s\nspec:\n  upstream: {repo: r, package: p, revision: v1}\n  targets:\n  - repositories: [{name: d, packageNames: [a]}]\n    template:\n      downstream: {packageExpr: \"'x'\"}\n      annotations: {a: b}\n",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\nanything: goes\n",
        ] {
            assert_eq!(findings(text), Ok(vec![]), "{text}");
        }
    }

    #[test]
    fn a_repeated_key_and_an_unknown_version_are_errors() {
        let got = findings(
            "kind: PackageVariant\nmetadata:\n  name: x\nspec:\n  upstream: {repo: r}\n  upstream: {repo: s}\n",
        )
        .expect("checks");
        assert_eq!(
            got,
            vec![
                "strict decoding error: yaml: line 6: mapping key \"upstream\" already defined at line 5"
            ]
        );
        let e = findings(
            "apiVersion: config.porch.kpt.dev/v9\nkind: PackageVariant\nmetadata:\n  name: x\n",
        )
        .expect_err("refused");
        assert!(
            e.contains(
                "no kind \"PackageVariant\" is registered for version \"config.porch.kpt.dev/v9\""
            ),
            "{e}"
        );
    }
}
