//! Structural comparison of two CRDs: names (short names included),
//! versions with their printer columns and selectable fields, and in each
//! schema the same field names, types, required fields, list and map
//! types, enums, free-form fields, defaults and CEL validation rules, at
//! every path. Descriptions, lengths, patterns and formats are not
//! compared.

use serde_json::Value;

/// Differences accepted between our CRDs and upstream's, each with why.
/// An entry is `<version>:<path>:<what>` as [`compare_crds`] reports it.
pub const ALLOWED_DIFFERENCES: &[(&str, &str)] = &[
    (
        "v1alpha2:.spec.rolloutStrategy:field: only ours",
        "staged rollouts are porch-variants' extension; absent, a set behaves as upstream's",
    ),
    (
        "v1alpha2:.status.rollout:field: only ours",
        "where a staged rollout stands; written only for a set with a rollout strategy",
    ),
    (
        "v1alpha1:.status.rollout:field: only ours",
        "the unserved v1alpha1 shares the status type; never written in that version",
    ),
];

/// The keys compared at each schema node.
const COMPARED: &[&str] = &[
    "type",
    "required",
    "enum",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-int-or-string",
    "x-kubernetes-validations",
    "default",
];

fn normalized(key: &str, v: Option<&Value>) -> Option<Value> {
    let v = v?.clone();
    match (key, v) {
        ("required", Value::Array(mut items)) => {
            items.sort_by_key(|a| a.to_string());
            items.dedup();
            Some(Value::Array(items))
        }
        (_, v) => Some(v),
    }
}

/// Appends to `out` every difference between schema nodes `ours` and
/// `theirs` at `path` (and below).
pub fn compare_schema(path: &str, ours: &Value, theirs: &Value, out: &mut Vec<String>) {
    for key in COMPARED {
        let a = normalized(key, ours.get(*key));
        let b = normalized(key, theirs.get(*key));
        if a != b {
            out.push(format!(
                "{path}:{key}: ours {} upstream {}",
                a.map_or("-".to_string(), |v| v.to_string()),
                b.map_or("-".to_string(), |v| v.to_string())
            ));
        }
    }
    let empty = serde_json::Map::new();
    let props_a = ours
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let props_b = theirs
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    for (name, a) in props_a {
        let sub = format!("{path}.{name}");
        match props_b.get(name) {
            Some(b) => compare_schema(&sub, a, b, out),
            None => out.push(format!("{sub}:field: only ours")),
        }
    }
    for name in props_b.keys() {
        if !props_a.contains_key(name) {
            out.push(format!("{path}.{name}:field: only upstream"));
        }
    }
    for (key, suffix) in [("items", "[]"), ("additionalProperties", "{}")] {
        match (ours.get(key), theirs.get(key)) {
            (Some(a), Some(b)) => compare_schema(&format!("{path}{suffix}"), a, b, out),
            (None, None) => {}
            (a, _) => out.push(format!(
                "{path}{suffix}:{key}: only {}",
                if a.is_some() { "ours" } else { "upstream" }
            )),
        }
    }
}

/// Every difference between two CRDs (names, scope, versions with their
/// served/storage flags and subresources, and each version's schema),
/// except the [`ALLOWED_DIFFERENCES`].
pub fn compare_crds(ours: &Value, theirs: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for key in ["group", "names", "scope"] {
        if ours["spec"][key] != theirs["spec"][key] {
            out.push(format!(
                "spec.{key}: ours {} upstream {}",
                ours["spec"][key], theirs["spec"][key]
            ));
        }
    }
    if ours["metadata"]["name"] != theirs["metadata"]["name"] {
        out.push("metadata.name differs".to_string());
    }
    let empty = Vec::new();
    let versions =
        |v: &Value| -> Vec<Value> { v["spec"]["versions"].as_array().unwrap_or(&empty).to_vec() };
    let (va, vb) = (versions(ours), versions(theirs));
    let names = |vs: &[Value]| -> Vec<String> {
        vs.iter()
            .map(|v| v["name"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    if names(&va) != names(&vb) {
        out.push(format!(
            "versions: ours {:?} upstream {:?}",
            names(&va),
            names(&vb)
        ));
    }
    for a in &va {
        let name = a["name"].as_str().unwrap_or_default();
        let Some(b) = vb.iter().find(|b| b["name"] == a["name"]) else {
            continue;
        };
        for key in [
            "served",
            "storage",
            "subresources",
            "additionalPrinterColumns",
            "selectableFields",
        ] {
            if a[key] != b[key] {
                out.push(format!("{name}:{key}: ours {} upstream {}", a[key], b[key]));
            }
        }
        let mut diffs = Vec::new();
        compare_schema(
            "",
            &a["schema"]["openAPIV3Schema"],
            &b["schema"]["openAPIV3Schema"],
            &mut diffs,
        );
        out.extend(diffs.into_iter().map(|d| format!("{name}:{d}")));
    }
    out.retain(|d| !ALLOWED_DIFFERENCES.iter().any(|(allowed, _)| d == allowed));
    out
}
