//! The catalog's `set-annotations` function
//! (`functions/go/set-annotations`), built on kyaml's `framework` and
//! kustomize's annotations filter (api `v0.10.2-0.20211202184144`).
//!
//! Every annotation is set at every field its field specs reach (the
//! user's `additionalAnnotationFields`, then kustomize's `commonAnnotations`
//! defaults), creating missing mappings: kustomize's `SetEntry` replaces the
//! value even when it is already equal, so a value's quoting is rewritten
//! (kpt copies its comments back). Local-config items are included.

use std::collections::{BTreeMap, BTreeSet};

use crate::render::annotations as ann;
use crate::render::result::{Field, FileRef, FnResult};
use crate::yaml::{self, Kind, Node, Style};

use super::{FnInput, FnOutput};

/// A kustomize `FieldSpec`.
#[derive(Debug, Clone, Default, PartialEq)]
struct FieldSpec {
    group: String,
    version: String,
    kind: String,
    path: String,
    create: bool,
}

impl FieldSpec {
    fn new(group: &str, version: &str, kind: &str, path: &str) -> FieldSpec {
        FieldSpec {
            group: group.to_string(),
            version: version.to_string(),
            kind: kind.to_string(),
            path: path.to_string(),
            create: true,
        }
    }
}

/// kustomize's `commonAnnotations` field specs.
fn default_field_specs() -> Vec<FieldSpec> {
    let template = "spec/template/metadata/annotations";
    vec![
        FieldSpec::new("", "", "", "metadata/annotations"),
        FieldSpec::new("", "v1", "ReplicationController", template),
        FieldSpec::new("", "", "Deployment", template),
        FieldSpec::new("", "", "ReplicaSet", template),
        FieldSpec::new("", "", "DaemonSet", template),
        FieldSpec::new("", "", "StatefulSet", template),
        FieldSpec::new("batch", "", "Job", template),
        FieldSpec::new(
            "batch",
            "",
            "CronJob",
            "spec/jobTemplate/metadata/annotations",
        ),
        FieldSpec::new(
            "batch",
            "",
            "CronJob",
            "spec/jobTemplate/spec/template/metadata/annotations",
        ),
    ]
}

/// Runs `set-annotations` on the items.
pub fn run(input: FnInput) -> FnOutput {
    let mut items = input.items;
    let config = input.function_config.as_ref().map(Node::root);
    let (annotations, specs) = match configure(config) {
        Ok(c) => c,
        Err(e) => return failed(items, format!("failed to configure function: {e}")),
    };
    if let Err(e) = check_ids(&items) {
        return failed(Vec::new(), format!("failed to run function: {e}"));
    }
    let mut applied: BTreeMap<(String, String, String), BTreeMap<String, String>> = BTreeMap::new();
    for item in &mut items {
        let file_path = file_annotation(item, ann::PATH, ann::LEGACY_PATH);
        let file_index = file_annotation(item, ann::INDEX, ann::LEGACY_INDEX);
        for (key, value) in &annotations {
            for spec in &specs {
                let mut set = |field_path: &str| {
                    applied
                        .entry((
                            file_path.clone(),
                            file_index.clone(),
                            field_path.to_string(),
                        ))
                        .or_default()
                        .insert(key.clone(), value.clone());
                };
                if let Err(e) = apply(item, spec, key, value, &mut set) {
                    return failed(
                        Vec::new(),
                        format!("failed to run function: failed to run transformer: {e}"),
                    );
                }
            }
        }
    }
    FnOutput {
        items,
        results: results(applied),
        ..FnOutput::default()
    }
}

/// The framework's answer to an error: one error result, the error
/// (`[error]: …`) on stderr, exit 1.
pub(super) fn failed(items: Vec<Node>, message: String) -> FnOutput {
    let text = format!("[error]: {message}");
    FnOutput {
        items,
        results: vec![FnResult::error(message)],
        stderr: text.clone(),
        failure: Some(text),
    }
}

/// `kioutil.GetFileAnnotations`: the annotation, else its legacy twin.
pub(super) fn file_annotation(item: &Node, key: &str, legacy: &str) -> String {
    let annotations = item.get_path(&["metadata", "annotations"]);
    let read = |k: &str| annotations.and_then(|a| a.get(k)).map(|v| v.value.clone());
    read(key).or_else(|| read(legacy)).unwrap_or_default()
}

/// The results: one per file and field, sorted as `framework.Results.Sort`.
fn results(applied: BTreeMap<(String, String, String), BTreeMap<String, String>>) -> Vec<FnResult> {
    if applied.is_empty() {
        return vec![FnResult {
            message: "no annotations applied".to_string(),
            ..FnResult::default()
        }];
    }
    let mut out: Vec<FnResult> = applied
        .into_iter()
        .map(|((path, index, field), values)| {
            let json: Vec<String> = values
                .iter()
                .map(|(k, v)| format!("{}:{}", go_json_string(k), go_json_string(v)))
                .collect();
            FnResult {
                message: format!("set annotations: {{{}}}", json.join(",")),
                field: Some(Field {
                    path: field,
                    ..Field::default()
                }),
                file: Some(FileRef {
                    path,
                    index: index.trim().parse().unwrap_or(0),
                }),
                ..FnResult::default()
            }
        })
        .collect();
    let sort_key = |r: &FnResult| {
        let (path, index) = r
            .file
            .as_ref()
            .map(|f| (f.path.clone(), f.index))
            .unwrap_or_default();
        let field = r.field.as_ref().map(|f| f.path.as_str()).unwrap_or("");
        let text = format!(
            "resource-ref:%!s(<nil>),field:&{{{field} %!s(<nil>) %!s(<nil>)}},message:{}",
            r.message
        );
        (path, index, text)
    };
    out.sort_by_cached_key(sort_key);
    out
}

/// Go's `json.Marshal` of a string, as the catalog's function (built with
/// a Go before 1.22) writes it.
fn go_json_string(s: &str) -> String {
    crate::krm::gofmt::json_string(s, crate::krm::gofmt::GoJson::Before122)
}

// ---------------------------------------------------------------------------
// Configuration.

type Config = (BTreeMap<String, String>, Vec<FieldSpec>);

/// `setAnnotationFunction.Config`.
fn configure(config: Option<&Node>) -> Result<Config, String> {
    let gvk = config.map(|c| (scalar_text(c, "apiVersion"), scalar_text(c, "kind")));
    let (annotations, mut specs) = match gvk {
        Some((api, kind)) if api == "v1" && kind == "ConfigMap" => {
            (config.map(data_map).unwrap_or_default(), Vec::new())
        }
        Some((api, kind))
            if api == "fn.kpt.dev/v1alpha1"
                && (kind == "SetAnnotations" || kind == "SetAnnotationConfig") =>
        {
            match config {
                Some(c) => plugin_config(c)?,
                None => Default::default(),
            }
        }
        _ => return Err("`functionConfig` must be a `ConfigMap` or `SetAnnotations`".to_string()),
    };
    if annotations.is_empty() {
        return Err("input annotation list cannot be empty".to_string());
    }
    specs.extend(default_field_specs());
    Ok((annotations, specs))
}

/// A top-level scalar's text (`""` when absent or not a scalar).
fn scalar_text(node: &Node, key: &str) -> String {
    node.get(key)
        .filter(|v| v.kind == Kind::Scalar)
        .map(|v| v.value.clone())
        .unwrap_or_default()
}

/// `RNode.GetDataMap`: each `data` entry's text, whatever its type.
pub(super) fn data_map(config: &Node) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    if let Some(data) = config.get("data").filter(|d| d.kind == Kind::Mapping) {
        for (k, v) in data.pairs() {
            map.insert(k.value.clone(), v.value.clone());
        }
    }
    map
}

/// The JSON type of a node as sigs.k8s.io/yaml (yaml.v2) converts it.
fn json_type(node: &Node) -> &'static str {
    match node.kind {
        Kind::Mapping => "object",
        Kind::Sequence => "array",
        _ if yaml11_bool(node).is_some() => "bool",
        _ => match node.tag.as_ref() {
            "!!int" | "!!float" => "number",
            "!!null" => "null",
            _ => "string",
        },
    }
}

/// A YAML 1.1 boolean (yaml.v2 also reads `yes`, `on`, `y`, …).
fn yaml11_bool(node: &Node) -> Option<bool> {
    if node.kind != Kind::Scalar {
        return None;
    }
    if node.tag == "!!bool" {
        return Some(node.value.eq_ignore_ascii_case("true"));
    }
    if !node.style.is_plain() || node.tag != "!!str" {
        return None;
    }
    match node.value.as_str() {
        "y" | "Y" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" => Some(true),
        "n" | "N" | "no" | "No" | "NO" | "off" | "Off" | "OFF" => Some(false),
        _ => None,
    }
}

/// A scalar converted for a Go `string` target (sigs.k8s.io/yaml turns
/// numbers and booleans into their Go text); `None` for null.
fn string_target(node: &Node) -> Option<String> {
    if let Some(b) = yaml11_bool(node) {
        return Some(b.to_string());
    }
    Some(match node.tag.as_ref() {
        "!!null" => return None,
        "!!int" => go_int_text(&node.value).unwrap_or_else(|| node.value.clone()),
        "!!float" => go_float32_text(&node.value).unwrap_or_else(|| node.value.clone()),
        _ => node.value.clone(),
    })
}

/// A YAML integer as Go prints the parsed value.
fn go_int_text(text: &str) -> Option<String> {
    let plain = text.replace('_', "");
    let (negative, digits) = match plain.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, plain.strip_prefix('+').unwrap_or(&plain)),
    };
    let (radix, digits) = if let Some(d) = digits.strip_prefix("0x").or(digits.strip_prefix("0X")) {
        (16, d)
    } else if let Some(d) = digits.strip_prefix("0o").or(digits.strip_prefix("0O")) {
        (8, d)
    } else if let Some(d) = digits.strip_prefix("0b").or(digits.strip_prefix("0B")) {
        (2, d)
    } else if digits.len() > 1 && digits.starts_with('0') {
        (8, &digits[1..])
    } else {
        (10, digits)
    };
    let magnitude = u128::from_str_radix(digits, radix).ok()?;
    Some(if negative && magnitude != 0 {
        format!("-{magnitude}")
    } else {
        magnitude.to_string()
    })
}

/// `strconv.FormatFloat(f, 'g', -1, 32)` of a YAML float.
fn go_float32_text(text: &str) -> Option<String> {
    let lower = text.to_ascii_lowercase();
    let f: f64 = match lower.trim_start_matches('+') {
        ".inf" => f64::INFINITY,
        "-.inf" => f64::NEG_INFINITY,
        ".nan" => f64::NAN,
        t => t.replace('_', "").parse().ok()?,
    };
    let f = f as f32;
    if f.is_nan() {
        return Some("NaN".to_string());
    }
    if f.is_infinite() {
        return Some(if f > 0.0 { "+Inf" } else { "-Inf" }.to_string());
    }
    if f == 0.0 {
        return Some(if f.is_sign_negative() { "-0" } else { "0" }.to_string());
    }
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e')?;
    let exp: i32 = exp.parse().ok()?;
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if !(-4..6).contains(&exp) {
        let first = digits.get(..1).unwrap_or("0");
        let rest = digits.get(1..).unwrap_or("");
        let dot = if rest.is_empty() { "" } else { "." };
        let exp_sign = if exp < 0 { '-' } else { '+' };
        return Some(format!(
            "{sign}{first}{dot}{rest}e{exp_sign}{:02}",
            exp.unsigned_abs()
        ));
    }
    let n = i32::try_from(digits.len()).ok()?;
    let point = exp + 1;
    let body = if point <= 0 {
        format!("0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
    } else if point >= n {
        format!("{digits}{}", "0".repeat(point.abs_diff(n) as usize))
    } else {
        let (a, b) = digits.split_at(point.unsigned_abs() as usize);
        format!("{a}.{b}")
    };
    Some(format!("{sign}{body}"))
}

/// A JSON unmarshal type error message.
fn type_error(value: &str, place: &str, of: &str) -> String {
    format!("json: cannot unmarshal {value} into Go struct field {place} of type {of}")
}

/// `plugin.Config`: the SetAnnotations config read as sigs.k8s.io/yaml
/// reads it (JSON keys sorted, matched case-insensitively).
fn plugin_config(config: &Node) -> Result<Config, String> {
    let mut fields: Vec<(&str, &Node)> = config
        .pairs()
        .filter(|(k, _)| k.kind == Kind::Scalar)
        .map(|(k, v)| (k.value.as_str(), v))
        .collect();
    fields.sort_by(|a, b| a.0.cmp(b.0));
    let mut annotations: Option<BTreeMap<String, String>> = None;
    let mut field_specs: Option<Vec<FieldSpec>> = None;
    let mut additional: Option<Vec<FieldSpec>> = None;
    let mut error: Option<String> = None;
    let mut note = |e: String| {
        if error.is_none() {
            error = Some(e);
        }
    };
    for (key, value) in fields {
        if key.eq_ignore_ascii_case("annotations") {
            match json_type(value) {
                "null" => annotations = None,
                "object" => {
                    let map = annotations.get_or_insert_with(BTreeMap::new);
                    for (k, v) in value.pairs() {
                        let text = match json_type(v) {
                            "object" | "array" => {
                                note(type_error(json_type(v), "plugin.annotations", "string"));
                                String::new()
                            }
                            _ => string_target(v).unwrap_or_default(),
                        };
                        map.insert(k.value.clone(), text);
                    }
                }
                other => note(type_error(other, "plugin.annotations", "map[string]string")),
            }
        } else if key.eq_ignore_ascii_case("fieldSpecs") {
            field_specs = read_specs(value, "fieldSpecs", &mut note);
        } else if key.eq_ignore_ascii_case("additionalAnnotationFields") {
            additional = read_specs(value, "additionalAnnotationFields", &mut note);
        }
    }
    if let Some(e) = error {
        let text = yaml::to_string(config).unwrap_or_default();
        return Err(format!(
            "failed to unmarshal config {}: error unmarshaling JSON: while decoding JSON: {e}",
            go_json_string(&text)
        ));
    }
    if additional.is_some() && field_specs.is_some() {
        return Err(
            "`fieldSpecs` has been deprecated, please rename it to `additionalAnnotationFields`"
                .to_string(),
        );
    }
    Ok((
        annotations.unwrap_or_default(),
        additional.or(field_specs).unwrap_or_default(),
    ))
}

/// A `[]types.FieldSpec` field.
fn read_specs(value: &Node, name: &str, note: &mut impl FnMut(String)) -> Option<Vec<FieldSpec>> {
    match json_type(value) {
        "null" => return None,
        "array" => {}
        other => {
            note(type_error(
                other,
                &format!("plugin.{name}"),
                "[]types.FieldSpec",
            ));
            return Some(Vec::new());
        }
    }
    let mut specs = Vec::new();
    for element in &value.content {
        let mut spec = FieldSpec::default();
        match json_type(element) {
            "null" => {}
            "object" => {
                let mut entries: Vec<(&Node, &Node)> = element.pairs().collect();
                entries.sort_by(|a, b| a.0.value.cmp(&b.0.value));
                for (k, v) in entries {
                    let field = k.value.to_ascii_lowercase();
                    let place = format!("FieldSpec.{name}.{field}");
                    let target = match field.as_str() {
                        "group" => &mut spec.group,
                        "version" => &mut spec.version,
                        "kind" => &mut spec.kind,
                        "path" => &mut spec.path,
                        "create" => {
                            match json_type(v) {
                                "bool" => spec.create = yaml11_bool(v).unwrap_or(false),
                                "null" => {}
                                other => note(type_error(other, &place, "bool")),
                            }
                            continue;
                        }
                        _ => continue,
                    };
                    match json_type(v) {
                        "object" | "array" => note(type_error(json_type(v), &place, "string")),
                        _ => {
                            if let Some(text) = string_target(v) {
                                *target = text;
                            }
                        }
                    }
                }
            }
            other => note(type_error(
                other,
                &format!("plugin.{name}"),
                "types.FieldSpec",
            )),
        }
        specs.push(spec);
    }
    Some(specs)
}

// ---------------------------------------------------------------------------
// The resource map and the filter.

/// kustomize's resource map refuses two items with the same id.
fn check_ids(items: &[Node]) -> Result<(), String> {
    let mut seen = BTreeSet::new();
    for item in items {
        let root = item.root();
        let api = scalar_text(root, "apiVersion");
        let (group, version) = match api.split_once('/') {
            Some((g, v)) => (g.to_string(), v.to_string()),
            None => (String::new(), api.clone()),
        };
        let kind = scalar_text(root, "kind");
        let meta = |k: &str| {
            root.get("metadata")
                .map(|m| scalar_text(m, k))
                .unwrap_or_default()
        };
        let (namespace, name) = (meta("namespace"), meta("name"));
        let effective = if namespace.is_empty() || namespace == "~X" {
            "default".to_string()
        } else {
            namespace.clone()
        };
        let key = (
            group.clone(),
            version.clone(),
            kind.clone(),
            effective,
            name.clone(),
        );
        if !seen.insert(key) {
            let or = |s: &str, none: &str| {
                if s.is_empty() {
                    none.to_string()
                } else {
                    s.to_string()
                }
            };
            return Err(format!(
                "may not add resource with an already registered id: {}_{}_{}|{}|{}",
                or(&group, "~G"),
                or(&version, "~V"),
                or(&kind, "~K"),
                or(&namespace, "~X"),
                or(&name, "~N")
            ));
        }
    }
    Ok(())
}

/// kyaml's `PathSplitter`: `/` separates, except inside brackets.
fn split_path(path: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    for c in path.chars() {
        match c {
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            '/' if depth == 0 => {
                parts.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    parts.push(current);
    parts
}

/// One field spec on one object for one annotation (`fieldspec.Filter`).
fn apply(
    item: &mut Node,
    spec: &FieldSpec,
    key: &str,
    value: &str,
    set: &mut dyn FnMut(&str),
) -> Result<(), String> {
    let root = item.root_mut();
    let api = scalar_text(root, "apiVersion");
    let (group, version) = match api.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api.as_str()),
    };
    let kind = root
        .get("kind")
        .map(|k| k.value.clone())
        .unwrap_or_default();
    if !spec.kind.is_empty() && spec.kind != kind
        || !spec.group.is_empty() && spec.group != group
        || !spec.version.is_empty() && spec.version != version
    {
        return Ok(());
    }
    let parts = split_path(&spec.path);
    let mut trail = Vec::new();
    let walk = Walk {
        create: spec.create,
        key,
        value,
    };
    walk.filter(root, &parts, &mut trail, set).map_err(|e| {
        let text = yaml::to_string(root).unwrap_or_default();
        format!("considering field '{}' of object\n{text}: {e}", spec.path)
    })
}

struct Walk<'a> {
    create: bool,
    key: &'a str,
    value: &'a str,
}

impl Walk<'_> {
    fn filter(
        &self,
        node: &mut Node,
        parts: &[String],
        trail: &mut Vec<String>,
        set: &mut dyn FnMut(&str),
    ) -> Result<(), String> {
        let Some((first, rest)) = parts.split_first() else {
            return self.set_entry(node, trail, set);
        };
        if node.kind == Kind::Scalar && node.tag == "!!null" {
            return Ok(());
        }
        match node.kind {
            Kind::Sequence => {
                for element in &mut node.content {
                    let mut inner = trail.clone();
                    self.filter(element, parts, &mut inner, set)?;
                }
                Ok(())
            }
            Kind::Mapping => self.field(node, first, rest, trail, set),
            Kind::Alias => Ok(()),
            _ => Err("expected sequence or mapping node".to_string()),
        }
    }

    fn field(
        &self,
        node: &mut Node,
        part: &str,
        rest: &[String],
        trail: &mut Vec<String>,
        set: &mut dyn FnMut(&str),
    ) -> Result<(), String> {
        let (name, is_seq) = match part.strip_suffix("[]") {
            Some(n) => (n, true),
            None => (part, false),
        };
        if name.is_empty() {
            return Err("cannot set or create an empty field name".to_string());
        }
        let create = self.create && !is_seq;
        let found = (0..node.content.len()).step_by(2).find(|&i| {
            node.content
                .get(i)
                .is_some_and(|k| k.kind == Kind::Scalar && k.value == name)
        });
        let index = match found {
            Some(i) => i + 1,
            None if create => {
                node.content.push(Node::new_string(name));
                let mut created = Node::new_mapping();
                created.tag = "".into();
                node.content.push(created);
                node.content.len() - 1
            }
            None => return Ok(()),
        };
        let Some(field) = node.content.get_mut(index) else {
            return Ok(());
        };
        if field.kind == Kind::Scalar && field.tag == "!!null" && (create || is_seq) {
            if is_seq {
                field.kind = Kind::Sequence;
                field.tag = "".into();
            } else {
                field.kind = Kind::Mapping;
                field.tag = "!!map".into();
            }
            field.value.clear();
            field.style = Style::plain();
        }
        trail.push(name.to_string());
        self.filter(field, rest, trail, set)
    }

    /// kustomize's `SetEntry` through the callback: the result is recorded,
    /// then the field is set.
    fn set_entry(
        &self,
        node: &mut Node,
        trail: &[String],
        set: &mut dyn FnMut(&str),
    ) -> Result<(), String> {
        set(&trail.join("."));
        match node.kind {
            Kind::Mapping => {}
            Kind::Scalar if node.tag == "!!null" => return Ok(()),
            other => {
                let text = yaml::to_string(node).unwrap_or_default();
                let number = match other {
                    Kind::Document => 1,
                    Kind::Sequence => 2,
                    Kind::Mapping => 4,
                    Kind::Scalar => 8,
                    Kind::Alias => 16,
                };
                return Err(format!(
                    "wrong Node Kind for {} expected: 4 was {number}: value: {{{}}}",
                    trail.join("."),
                    text.trim()
                ));
            }
        }
        let mut scalar = Node::new_string(self.value);
        if yaml11_non_string(self.value) {
            scalar.style = Style::DOUBLE_QUOTED;
        }
        let found = (0..node.content.len()).step_by(2).find(|&i| {
            node.content
                .get(i)
                .is_some_and(|k| k.kind == Kind::Scalar && k.value == self.key)
        });
        match found.and_then(|i| node.content.get_mut(i + 1)) {
            Some(old) => {
                scalar.copy_comments_from(old);
                *old = scalar;
            }
            None => {
                node.content.push(Node::new_string(self.key));
                node.content.push(scalar);
            }
        }
        Ok(())
    }
}

/// kyaml's `IsYaml1_1NonString`: whether a YAML 1.1 parser would read the
/// text as something other than a string.
fn yaml11_non_string(value: &str) -> bool {
    if value.is_empty() || value.contains('\n') {
        return false;
    }
    let Ok(doc) = yaml::parse_document(value) else {
        return false;
    };
    let root = doc.root();
    match root.kind {
        Kind::Mapping | Kind::Sequence => true,
        Kind::Scalar => {
            if root.style.contains(Style::TAGGED) {
                return matches!(
                    root.tag.as_ref(),
                    "!!null" | "!!bool" | "!!int" | "!!float" | "!!timestamp"
                );
            }
            if !root.style.is_plain() {
                return false;
            }
            matches!(root.tag.as_ref(), "!!null" | "!!bool" | "!!int" | "!!float")
                || yaml11_bool(root).is_some()
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::builtins::set_labels::tests::{file, items};

    fn config(text: &str) -> Option<Node> {
        Some(yaml::parse_document(text).expect("parses"))
    }

    const SET: &str = r#"set annotations: {"color":"orange","fruit":"apple"}"#;

    fn applied(path: &str, index: i64, field: &str) -> FnResult {
        FnResult {
            message: SET.to_string(),
            field: Some(Field {
                path: field.to_string(),
                ..Field::default()
            }),
            file: Some(FileRef {
                path: path.to_string(),
                index,
            }),
            ..FnResult::default()
        }
    }

    const ONE_MAP: &str =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: the-map\ndata:\n  some-key: some-value\n";

    const ONE_MAP_OUT: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: the-map\n  annotations:\n    color: orange\n    fruit: apple\ndata:\n  some-key: some-value\n";

    const LOCAL_MAP: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: local-config-map\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\ndata:\n  some-key: some-value\n";

    const FUNCTION_INPUT: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: function-input\ndata:\n  color: orange\n  fruit: apple\n";

    const ADVANCED_IN: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: the-map\ndata:\n  some-key: some-value\n---\napiVersion: dev.example.com/v1\nkind: MyResource\nmetadata:\n  name: the-service\n  namespace: the-namespace\nspec:\n  selector:\n    annotations:\n      foo: bar\n";

    const SIMPLE_IN: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: the-map\ndata:\n  some-key: some-value\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: ns\n";

    const SIMPLE_OUT: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: the-map\n  annotations:\n    color: orange\n    fruit: apple\ndata:\n  some-key: some-value\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: ns\n  annotations:\n    color: orange\n    fruit: apple\n";

    #[test]
    fn additional_annotations() {
        let fn_config = "apiVersion: fn.kpt.dev/v1alpha1\nkind: SetAnnotations\nmetadata:\n  name: my-config\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\nannotations:\n  color: orange\n  fruit: apple\nadditionalAnnotationFields:\n- path: data/selector/annotations\n  kind: ConfigMap\n  create: true\n";
        let resources = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: the-map\ndata:\n  some-key: some-value\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: the-second-map\ndata:\n  some-key: some-other-value\n";
        let out = run(FnInput {
            items: items(&[
                ("local-config.yaml", LOCAL_MAP),
                ("resources.yaml", resources),
            ]),
            function_config: config(fn_config),
        });
        assert_eq!(out.failure, None);
        assert_eq!(
            out.results,
            [
                applied("local-config.yaml", 0, "data.selector.annotations"),
                applied("local-config.yaml", 0, "metadata.annotations"),
                applied("resources.yaml", 0, "data.selector.annotations"),
                applied("resources.yaml", 0, "metadata.annotations"),
                applied("resources.yaml", 1, "data.selector.annotations"),
                applied("resources.yaml", 1, "metadata.annotations"),
            ]
        );
        assert_eq!(
            file(&out.items, "local-config.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: local-config-map\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\n    color: orange\n    fruit: apple\ndata:\n  some-key: some-value\n  selector:\n    annotations:\n      color: orange\n      fruit: apple\n"
        );
        assert_eq!(
            file(&out.items, "resources.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: the-map\n  annotations:\n    color: orange\n    fruit: apple\ndata:\n  some-key: some-value\n  selector:\n    annotations:\n      color: orange\n      fruit: apple\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: the-second-map\n  annotations:\n    color: orange\n    fruit: apple\ndata:\n  some-key: some-other-value\n  selector:\n    annotations:\n      color: orange\n      fruit: apple\n"
        );
    }

    #[test]
    fn empty_list_advanced() {
        let fn_config = "apiVersion: fn.kpt.dev/v1alpha1\nkind: SetAnnotations\nmetadata:\n  name: my-func-config\nannotations: {}\nadditionalAnnotationFields:\n- kind: MyResource\n  group: dev.example.com\n  version: v1\n  create: true\n  path: spec/selector/annotations\n";
        let out = run(FnInput {
            items: items(&[
                ("fn-config.yaml", fn_config),
                ("resources.yaml", ADVANCED_IN),
            ]),
            function_config: config(fn_config),
        });
        let message = "failed to configure function: input annotation list cannot be empty";
        assert_eq!(out.results, [FnResult::error(message)]);
        assert_eq!(
            out.failure.as_deref(),
            Some(format!("[error]: {message}").as_str())
        );
        assert_eq!(out.stderr, format!("[error]: {message}"));
        assert_eq!(file(&out.items, "resources.yaml"), ADVANCED_IN);
        assert_eq!(file(&out.items, "fn-config.yaml"), fn_config);
    }

    #[test]
    fn empty_list_simple() {
        let out = run(FnInput {
            items: items(&[("resources.yaml", ADVANCED_IN)]),
            function_config: None,
        });
        let message =
            "failed to configure function: `functionConfig` must be a `ConfigMap` or `SetAnnotations`";
        assert_eq!(out.results, [FnResult::error(message)]);
        assert_eq!(
            out.failure.as_deref(),
            Some(format!("[error]: {message}").as_str())
        );
        assert_eq!(file(&out.items, "resources.yaml"), ADVANCED_IN);
    }

    #[test]
    fn example_advanced() {
        let fn_config = "apiVersion: fn.kpt.dev/v1alpha1\nkind: SetAnnotations\nmetadata:\n  name: my-func-config\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\nannotations:\n  color: orange\n  fruit: apple\nadditionalAnnotationFields:\n  - kind: MyResource\n    create: true\n    group: dev.example.com\n    path: spec/selector/annotations\n    version: v1\n";
        let out = run(FnInput {
            items: items(&[("resources.yaml", ADVANCED_IN)]),
            function_config: config(fn_config),
        });
        assert_eq!(out.failure, None);
        assert_eq!(
            out.results,
            [
                applied("resources.yaml", 0, "metadata.annotations"),
                applied("resources.yaml", 1, "metadata.annotations"),
                applied("resources.yaml", 1, "spec.selector.annotations"),
            ]
        );
        assert_eq!(
            file(&out.items, "resources.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: the-map\n  annotations:\n    color: orange\n    fruit: apple\ndata:\n  some-key: some-value\n---\napiVersion: dev.example.com/v1\nkind: MyResource\nmetadata:\n  name: the-service\n  namespace: the-namespace\n  annotations:\n    color: orange\n    fruit: apple\nspec:\n  selector:\n    annotations:\n      foo: bar\n      color: orange\n      fruit: apple\n"
        );
    }

    #[test]
    fn example_imperative_and_simple() {
        for path in ["app.yaml", "resources.yaml"] {
            let out = run(FnInput {
                items: items(&[(path, SIMPLE_IN)]),
                function_config: config(FUNCTION_INPUT),
            });
            assert_eq!(out.failure, None);
            assert_eq!(
                out.results,
                [
                    applied(path, 0, "metadata.annotations"),
                    applied(path, 1, "metadata.annotations"),
                ]
            );
            assert_eq!(file(&out.items, path), SIMPLE_OUT);
        }
    }

    #[test]
    fn legacy_config() {
        let fn_config = "apiVersion: fn.kpt.dev/v1alpha1\nkind: SetAnnotationConfig\nmetadata:\n  name: my-config\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\nannotations:\n  color: orange\n  fruit: apple\nfieldSpecs:\n  - kind: MyResource\n    create: true\n    group: dev.example.com\n    path: spec/selector/annotations\n    version: v1\n";
        let out = run(FnInput {
            items: items(&[("resources.yaml", ONE_MAP)]),
            function_config: config(fn_config),
        });
        assert_eq!(out.failure, None);
        assert_eq!(
            out.results,
            [applied("resources.yaml", 0, "metadata.annotations")]
        );
        assert_eq!(file(&out.items, "resources.yaml"), ONE_MAP_OUT);

        let both = format!("{fn_config}additionalAnnotationFields: []\n");
        let out = run(FnInput {
            items: items(&[("resources.yaml", ONE_MAP)]),
            function_config: config(&both),
        });
        assert_eq!(
            out.results,
            [FnResult::error("failed to configure function: `fieldSpecs` has been deprecated, please rename it to `additionalAnnotationFields`")]
        );
        assert_eq!(file(&out.items, "resources.yaml"), ONE_MAP);
    }

    #[test]
    fn local_config() {
        let fn_config = "apiVersion: fn.kpt.dev/v1alpha1\nkind: SetAnnotations\nmetadata:\n  name: my-config\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\nannotations:\n  color: orange\n  fruit: apple\n";
        let out = run(FnInput {
            items: items(&[
                ("local-config.yaml", LOCAL_MAP),
                ("resources.yaml", ONE_MAP),
            ]),
            function_config: config(fn_config),
        });
        assert_eq!(out.failure, None);
        assert_eq!(
            out.results,
            [
                applied("local-config.yaml", 0, "metadata.annotations"),
                applied("resources.yaml", 0, "metadata.annotations"),
            ]
        );
        assert_eq!(
            file(&out.items, "local-config.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: local-config-map\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\n    color: orange\n    fruit: apple\ndata:\n  some-key: some-value\n"
        );
        assert_eq!(file(&out.items, "resources.yaml"), ONE_MAP_OUT);
    }

    #[test]
    fn templates_are_created_and_values_restyled() {
        let resources = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n  annotations:\n    color: 'orange' # kept\nspec:\n";
        let fn_config = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: function-input\ndata:\n  color: orange\n  on: 'yes'\n  n: \"1:20\"\n  j: <a&b>\n";
        let out = run(FnInput {
            items: items(&[("d.yaml", resources)]),
            function_config: config(fn_config),
        });
        assert_eq!(out.failure, None);
        assert_eq!(
            file(&out.items, "d.yaml"),
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n  annotations:\n    color: orange # kept\n    j: <a&b>\n    n: 1:20\n    on: \"yes\"\nspec:\n  template:\n    metadata:\n      annotations:\n        color: orange\n        j: <a&b>\n        n: 1:20\n        on: \"yes\"\n"
        );
        let message = r#"set annotations: {"color":"orange","j":"\u003ca\u0026b\u003e","n":"1:20","on":"yes"}"#;
        assert_eq!(out.results.len(), 2);
        assert_eq!(out.results[0].message, message);
        assert_eq!(
            out.results[1].field.as_ref().map(|f| f.path.as_str()),
            Some("spec.template.metadata.annotations")
        );
    }

    #[test]
    fn typed_config_values_become_go_text() {
        let fn_config = "apiVersion: fn.kpt.dev/v1alpha1\nkind: SetAnnotations\nmetadata:\n  name: c\nannotations:\n  a: 0x10\n  b: yes\n  c: 1.5\n  d: 1e7\n  e: ~\n";
        let (annotations, specs) =
            configure(config(fn_config).as_ref().map(Node::root)).expect("configures");
        let got: Vec<(&str, &str)> = annotations
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("a", "16"),
                ("b", "true"),
                ("c", "1.5"),
                ("d", "1e+07"),
                ("e", "")
            ]
        );
        assert_eq!(specs, default_field_specs());
    }

    #[test]
    fn bad_annotation_shapes_fail_to_configure() {
        let fn_config = "apiVersion: fn.kpt.dev/v1alpha1\nkind: SetAnnotations\nmetadata:\n  name: c\nannotations: [a]\n";
        let out = run(FnInput {
            items: items(&[("r.yaml", ONE_MAP)]),
            function_config: config(fn_config),
        });
        assert_eq!(out.results.len(), 1);
        assert!(out.results[0].message.starts_with("failed to configure function: failed to unmarshal config \"apiVersion: fn.kpt.dev/v1alpha1\\nkind: SetAnnotations\\n"));
        assert!(out.results[0].message.ends_with(": error unmarshaling JSON: while decoding JSON: json: cannot unmarshal array into Go struct field plugin.annotations of type map[string]string"));
        assert_eq!(file(&out.items, "r.yaml"), ONE_MAP);
    }

    #[test]
    fn duplicate_ids_fail_the_run() {
        let out = run(FnInput {
            items: items(&[("a.yaml", ONE_MAP), ("b.yaml", ONE_MAP)]),
            function_config: config(FUNCTION_INPUT),
        });
        let message = "failed to run function: may not add resource with an already registered id: ~G_v1_ConfigMap|~X|the-map";
        assert_eq!(out.results, [FnResult::error(message)]);
        assert!(out.items.is_empty());
    }

    #[test]
    fn scalar_on_the_path_is_an_error() {
        let resources = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec: 5\n";
        let out = run(FnInput {
            items: items(&[("r.yaml", resources)]),
            function_config: config(FUNCTION_INPUT),
        });
        assert_eq!(out.results.len(), 1);
        assert!(out.results[0].message.starts_with(
            "failed to run function: failed to run transformer: considering field 'spec/template/metadata/annotations' of object\n"
        ));
        assert!(out.results[0]
            .message
            .ends_with(": expected sequence or mapping node"));
        assert!(out.failure.is_some());
    }

    #[test]
    fn yaml11_strings() {
        for (value, quoted) in [
            ("yes", true),
            ("1:20", false),
            ("123", true),
            ("[a]", true),
            ("a: b", true),
            ("# c", true),
            ("2001-12-14", false),
            ("plain", false),
            ("", false),
            ("a\nb", false),
        ] {
            assert_eq!(yaml11_non_string(value), quoted, "{value:?}");
        }
    }
}
