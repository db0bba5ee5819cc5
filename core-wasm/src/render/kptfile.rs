//! The Kptfile as render reads it (strictly, as kpt decodes it), the
//! pipeline's static validation, and the root Kptfile's status as render
//! writes it back.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::api::kptfile::fields;
use crate::api::{Function, ResourceReference, Selector};
use crate::yaml::{self, Format, Kind, Node};

use super::image;
use super::package::{self, Files};

/// A package's Kptfile, as far as render needs it.
#[derive(Debug, Clone, Default)]
pub struct KptfileInfo {
    /// The pipeline's mutators.
    pub mutators: Vec<Function>,
    /// The pipeline's validators.
    pub validators: Vec<Function>,
    /// `metadata.annotations`.
    pub annotations: BTreeMap<String, String>,
    /// `metadata.name`.
    pub name: String,
}

/// Reads a Kptfile's text: its kind and version, unknown fields (an error,
/// as kpt decodes strictly) and the pipeline.
pub fn decode(text: &str) -> Result<KptfileInfo, String> {
    let doc = yaml::parse_document(text).map_err(|e| format!("yaml: {e}"))?;
    let root = doc.root();
    if root.kind != Kind::Mapping {
        return Err("yaml: the Kptfile is not a mapping".to_string());
    }
    let api_version = root.get_str(&["apiVersion"]).unwrap_or("");
    let kind = root.get_str(&["kind"]).unwrap_or("");
    if kind == "Kptfile" && matches!(api_version, "kpt.dev/v1alpha1" | "kpt.dev/v1alpha2") {
        let v = api_version.trim_start_matches("kpt.dev/");
        return Err(format!("old resource version \"{v}\" found in Kptfile"));
    }
    if kind != "Kptfile" || api_version != "kpt.dev/v1" {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        return Err(format!(
            "unknown resource type \"{group}/{version}, Kind={kind}\" found in Kptfile"
        ));
    }
    let mut unknown = Vec::new();
    check_fields(root, fields::TOP, "v1.KptFile", &mut unknown);
    let mut info = KptfileInfo {
        name: root
            .get_str(&["metadata", "name"])
            .unwrap_or("")
            .to_string(),
        ..KptfileInfo::default()
    };
    if let Some(ann) = root.get_path(&["metadata", "annotations"]) {
        for (k, v) in ann.pairs() {
            if let (Some(k), Kind::Scalar) = (k.as_str(), v.kind) {
                info.annotations.insert(k.to_string(), v.value.clone());
            }
        }
    }
    if let Some(pipeline) = root.get("pipeline").filter(|p| !p.is_null()) {
        if pipeline.kind != Kind::Mapping {
            return Err(type_error(pipeline, "v1.Pipeline"));
        }
        check_fields(
            pipeline,
            &["mutators", "validators"],
            "v1.Pipeline",
            &mut unknown,
        );
        info.mutators = functions(pipeline.get("mutators"), &mut unknown)?;
        info.validators = functions(pipeline.get("validators"), &mut unknown)?;
    }
    if !unknown.is_empty() {
        return Err(format!(
            "yaml: unmarshal errors:\n  {}",
            unknown.join("\n  ")
        ));
    }
    Ok(info)
}

fn check_fields(node: &Node, known: &[&str], ty: &str, out: &mut Vec<String>) {
    for (k, _) in node.pairs() {
        let key = k.value.as_str();
        if !known.contains(&key) {
            out.push(format!(
                "line {}: field {key} not found in type {ty}",
                k.line
            ));
        }
    }
}

fn type_error(node: &Node, ty: &str) -> String {
    let what = match node.kind {
        Kind::Sequence => "!!seq",
        Kind::Mapping => "!!map",
        _ => node.tag.as_ref(),
    };
    format!(
        "yaml: unmarshal errors:\n  line {}: cannot unmarshal {what} into {ty}",
        node.line
    )
}

fn scalar(node: &Node, ty: &str) -> Result<String, String> {
    match node.kind {
        Kind::Scalar if node.is_null() => Ok(String::new()),
        Kind::Scalar => Ok(node.value.clone()),
        _ => Err(type_error(node, ty)),
    }
}

fn string_map(node: Option<&Node>) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    let Some(node) = node.filter(|n| !n.is_null()) else {
        return Ok(out);
    };
    if node.kind != Kind::Mapping {
        return Err(type_error(node, "map[string]string"));
    }
    for (k, v) in node.pairs() {
        out.insert(k.value.clone(), scalar(v, "string")?);
    }
    Ok(out)
}

fn functions(node: Option<&Node>, unknown: &mut Vec<String>) -> Result<Vec<Function>, String> {
    let Some(node) = node.filter(|n| !n.is_null()) else {
        return Ok(Vec::new());
    };
    if node.kind != Kind::Sequence {
        return Err(type_error(node, "[]v1.Function"));
    }
    let mut out = Vec::new();
    for f in &node.content {
        if f.kind != Kind::Mapping {
            return Err(type_error(f, "v1.Function"));
        }
        check_fields(f, fields::FUNCTION, "v1.Function", unknown);
        let get = |k: &str| f.get(k).map(|n| scalar(n, "string")).transpose();
        out.push(Function {
            image: get("image")?.unwrap_or_default(),
            exec: get("exec")?.unwrap_or_default(),
            config_path: get("configPath")?.unwrap_or_default(),
            config_map: string_map(f.get("configMap"))?,
            config_ref: reference(f.get("configRef"), unknown)?,
            name: get("name")?.unwrap_or_default(),
            tag: get("tag")?.unwrap_or_default(),
            selectors: selectors(f.get("selectors"), unknown)?,
            exclude: selectors(f.get("exclude"), unknown)?,
            when: get("when")?.unwrap_or_default(),
        });
    }
    Ok(out)
}

fn reference(
    node: Option<&Node>,
    unknown: &mut Vec<String>,
) -> Result<Option<ResourceReference>, String> {
    let Some(node) = node.filter(|n| !n.is_null()) else {
        return Ok(None);
    };
    if node.kind != Kind::Mapping {
        return Err(type_error(node, "v1.ResourceReference"));
    }
    check_fields(node, fields::REFERENCE, "v1.ResourceReference", unknown);
    let get = |k: &str| node.get(k).map(|n| scalar(n, "string")).transpose();
    Ok(Some(ResourceReference {
        api_version: get("apiVersion")?.unwrap_or_default(),
        kind: get("kind")?.unwrap_or_default(),
        name: get("name")?.unwrap_or_default(),
        namespace: get("namespace")?.unwrap_or_default(),
    }))
}

fn selectors(node: Option<&Node>, unknown: &mut Vec<String>) -> Result<Vec<Selector>, String> {
    let Some(node) = node.filter(|n| !n.is_null()) else {
        return Ok(Vec::new());
    };
    if node.kind != Kind::Sequence {
        return Err(type_error(node, "[]v1.Selector"));
    }
    let mut out = Vec::new();
    for s in &node.content {
        if s.kind != Kind::Mapping {
            return Err(type_error(s, "v1.Selector"));
        }
        check_fields(s, fields::SELECTOR, "v1.Selector", unknown);
        let get = |k: &str| s.get(k).map(|n| scalar(n, "string")).transpose();
        out.push(Selector {
            api_version: get("apiVersion")?.unwrap_or_default(),
            kind: get("kind")?.unwrap_or_default(),
            name: get("name")?.unwrap_or_default(),
            namespace: get("namespace")?.unwrap_or_default(),
            labels: string_map(s.get("labels"))?,
            annotations: string_map(s.get("annotations"))?,
        });
    }
    Ok(out)
}

/// kpt's `ValidateError` text.
fn invalid(image: &str, field: &str, value: &str, reason: &str) -> String {
    let value_line = if value.is_empty() {
        String::new()
    } else {
        format!("Value: \"{value}\"\n")
    };
    format!(
        "invalid pipeline: function \"{image}\": Kptfile is invalid:\nField: `{field}`\n{value_line}Reason: {reason}\n"
    )
}

/// `KptFile.Validate`: each function of the pipeline, mutators first; the
/// first error wins. `files` and `dir` locate `configPath` files.
pub fn validate(info: &KptfileInfo, files: &Files, dir: &str) -> Result<(), String> {
    let lists = [
        ("mutators", &info.mutators),
        ("validators", &info.validators),
    ];
    for (list, fns) in lists {
        for (i, f) in fns.iter().enumerate() {
            let at = format!("pipeline.{list}[{i}]");
            validate_function(f, &at, files, dir)?;
        }
    }
    Ok(())
}

fn validate_function(f: &Function, at: &str, files: &Files, dir: &str) -> Result<(), String> {
    let img = f.image.as_str();
    if f.image.is_empty() && f.exec.is_empty() {
        return Err(invalid(
            img,
            at,
            "",
            "must specify a functon (`image` or `exec`) to execute",
        ));
    }
    if !f.image.is_empty() && !f.exec.is_empty() {
        return Err(invalid(
            img,
            at,
            "",
            "must not specify both `image` and `exec` at the same time",
        ));
    }
    if !f.image.is_empty() && !image::is_valid(&f.image) {
        let reason = format!("function name {:?} is invalid", f.image);
        return Err(invalid(img, &format!("{at}.image"), &f.image, &reason));
    }
    if let Some(r) = &f.config_ref {
        // kpt's newer validation (the one with `configRef`).
        if !f.config_map.is_empty() || !f.config_path.is_empty() {
            return Err(invalid(
                img,
                at,
                "",
                "functionConfig must specify at most one of `configMap`, `configPath`, or `configRef`",
            ));
        }
        if r.kind.is_empty() {
            let field = format!("{at}.configRef.kind");
            return Err(invalid(img, &field, "", "configRef must specify `kind`"));
        }
        if r.name.is_empty() {
            let field = format!("{at}.configRef.name");
            return Err(invalid(img, &field, "", "configRef must specify `name`"));
        }
    }
    if !f.config_map.is_empty() && !f.config_path.is_empty() {
        return Err(invalid(
            img,
            at,
            "",
            "functionConfig must not specify both `configMap` and `configPath` at the same time",
        ));
    }
    if f.config_path.is_empty() {
        return Ok(());
    }
    let field = format!("{at}.configPath");
    let p = f.config_path.as_str();
    if p.trim().is_empty() {
        return Err(invalid(img, &field, p, "path must not be empty"));
    }
    if p.starts_with('/') {
        return Err(invalid(img, &field, p, "path must be relative"));
    }
    let clean = clean_path(p);
    if clean.split('/').any(|c| c == "..") {
        return Err(invalid(
            img,
            &field,
            p,
            "path must not be outside the package",
        ));
    }
    let Some(text) = files.get(&package::join(dir, &clean)) else {
        return Err(invalid(
            img,
            &field,
            p,
            "functionConfig must exist in the current package",
        ));
    };
    let docs = yaml::parse_stream(text).map_err(|e| {
        invalid(
            img,
            &field,
            p,
            &format!("failed to read functionConfig {p:?}: {e}"),
        )
    })?;
    let docs: Vec<&Node> = docs.iter().filter(|d| !d.root().is_null()).collect();
    if docs.len() > 1 {
        let reason = format!(
            "functionConfig {p:?} must not contain more than one config, got {}",
            docs.len()
        );
        return Err(invalid(img, &field, p, &reason));
    }
    if let Some(doc) = docs.first() {
        let root = doc.root();
        let has = |path: &[&str]| root.get_str(path).is_some_and(|s| !s.is_empty());
        let missing = if !has(&["apiVersion"]) {
            Some("`apiVersion`")
        } else if !has(&["kind"]) {
            Some("`kind`")
        } else if !has(&["metadata", "name"]) {
            Some("`metadata.name`")
        } else {
            None
        };
        if let Some(m) = missing {
            let reason = format!("functionConfig {p:?}: resource must have {m}");
            return Err(invalid(img, &field, p, &reason));
        }
    }
    Ok(())
}

/// Go's `path.Clean` for relative slash paths.
pub fn clean_path(p: &str) -> String {
    let rooted = p.starts_with('/');
    let mut out: Vec<&str> = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                if out.last().is_some_and(|l| *l != "..") {
                    out.pop();
                } else if !rooted {
                    out.push("..");
                }
            }
            c => out.push(c),
        }
    }
    let joined = out.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_string(),
        (false, false) => joined,
    }
}

/// The `Rendered` condition and `renderStatus` to write.
#[derive(Debug, Clone, Default)]
pub struct RenderStatusUpdate {
    /// Whether the render succeeded.
    pub ok: bool,
    /// The failure's message (with the root as `.`).
    pub message: String,
    /// `status.renderStatus`, absent when no step ran.
    pub render_status: Option<Value>,
}

/// Rewrites the root Kptfile with the render's status, as kpt does: the
/// whole file re-marshalled from kpt's struct (struct field order, sorted
/// map keys, no comments, wide sequences), the previous `Rendered`
/// condition replaced by one appended at the end, `renderStatus` replaced.
pub fn write_status(text: &str, update: RenderStatusUpdate) -> Result<String, String> {
    let doc = yaml::parse_document(text).map_err(|e| e.to_string())?;
    let mut value = yaml::to_json(doc.root()).map_err(|e| e.to_string())?;
    let Some(obj) = value.as_object_mut() else {
        return Err("the Kptfile is not a mapping".to_string());
    };
    let status = obj
        .entry("status")
        .or_insert_with(|| Value::Object(Map::new()));
    if !status.is_object() {
        *status = Value::Object(Map::new());
    }
    if let Some(status) = status.as_object_mut() {
        let mut conditions: Vec<Value> = status
            .get("conditions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        conditions.retain(|c| c.get("type").and_then(Value::as_str) != Some("Rendered"));
        let mut cond = Map::new();
        cond.insert("type".into(), "Rendered".into());
        cond.insert(
            "status".into(),
            if update.ok { "True" } else { "False" }.into(),
        );
        cond.insert(
            "reason".into(),
            if update.ok {
                "RenderSuccess"
            } else {
                "RenderFailed"
            }
            .into(),
        );
        if !update.message.is_empty() {
            cond.insert("message".into(), update.message.into());
        }
        conditions.push(Value::Object(cond));
        status.insert("conditions".into(), Value::Array(conditions));
        match update.render_status {
            Some(rs) => {
                status.insert("renderStatus".into(), rs);
            }
            None => {
                status.remove("renderStatus");
            }
        }
    }
    // Each step takes the value before, so that a status of many results
    // is held about twice at most, not four times.
    let ordered = reorder(value, "");
    let node = yaml::from_json_ordered_owned(ordered);
    yaml::emit_stream(&[Node::new_document(node)], Format::KyamlWide).map_err(|e| e.to_string())
}

/// Orders the object at `path` (see [`fields::of`]) and drops fields the Go
/// struct does not have; maps without a struct get sorted keys.
fn reorder(value: Value, path: &str) -> Value {
    match value {
        Value::Object(mut map) => {
            let order = fields::of(path, fields::Schema::Head);
            let mut out = Map::new();
            match order {
                Some(fields) => {
                    for f in fields {
                        if let Some(v) = map.remove(*f) {
                            if is_empty(&v) && *f != "resourceRef" && *f != "exitCode" {
                                continue;
                            }
                            let child = if path.is_empty() {
                                (*f).to_string()
                            } else {
                                format!("{path}.{f}")
                            };
                            out.insert((*f).to_string(), reorder(v, &child));
                        }
                    }
                }
                _ => {
                    let mut keys: Vec<String> = map.keys().cloned().collect();
                    keys.sort();
                    for k in keys {
                        if let Some(v) = map.remove(&k) {
                            let child = format!("{path}.{k}");
                            out.insert(k, reorder(v, &child));
                        }
                    }
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => {
            let child = format!("{path}[]");
            Value::Array(items.into_iter().map(|v| reorder(v, &child)).collect())
        }
        v => v,
    }
}

/// Go's `omitempty` for the fields kpt marks so.
fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_function_fields_fail_with_the_line() {
        let text = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: x\npipeline:\n  mutators:\n    - image: a\n      targetResources: []\n";
        let err = decode(text).expect_err("strict");
        assert_eq!(
            err,
            "yaml: unmarshal errors:\n  line 8: field targetResources not found in type v1.Function"
        );
        assert_eq!(
            decode("apiVersion: kpt.dev/v1alpha2\nkind: Kptfile\n").expect_err("old"),
            "old resource version \"v1alpha2\" found in Kptfile"
        );
    }

    #[test]
    fn validation_names_field_value_and_reason() {
        let text = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: x\npipeline:\n  mutators:\n    - image: a\n    - image: b\n      configPath: ../x.yaml\n";
        let info = decode(text).expect("decodes");
        let err = validate(&info, &Files::new(), "").expect_err("invalid");
        assert_eq!(
            err,
            "invalid pipeline: function \"b\": Kptfile is invalid:\nField: `pipeline.mutators[1].configPath`\nValue: \"../x.yaml\"\nReason: path must not be outside the package\n"
        );
    }

    #[test]
    fn status_is_written_in_struct_order_with_the_condition_appended() {
        let text = "# comment\napiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata: # c\n  name: x\npipeline:\n  mutators:\n  - configMap: {b: \"2\", a: \"true\"}\n    image: a\nstatus:\n  conditions:\n  - type: Rendered\n    status: \"True\"\n  - type: Other\n    status: \"False\"\n";
        let out = write_status(
            text,
            RenderStatusUpdate {
                ok: false,
                message: "pkg.render: pkg .:\n\tpipeline.run: boom".into(),
                render_status: None,
            },
        )
        .expect("writes");
        assert_eq!(
            out,
            "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: x\npipeline:\n  mutators:\n    - image: a\n      configMap:\n        a: \"true\"\n        b: \"2\"\nstatus:\n  conditions:\n    - type: Other\n      status: \"False\"\n    - type: Rendered\n      status: \"False\"\n      reason: RenderFailed\n      message: |-\n        pkg.render: pkg .:\n        \tpipeline.run: boom\n"
        );
    }

    #[test]
    fn clean_path_matches_go() {
        assert_eq!(clean_path("a/./b/../c.yaml"), "a/c.yaml");
        assert_eq!(clean_path("../x"), "../x");
        assert_eq!(clean_path("/a/../../b"), "/b");
    }
}
