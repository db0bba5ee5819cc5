//! The catalog's `apply-replacements` function: kustomize's replacement
//! filter (`api/filters/replacement`) driven by an `ApplyReplacements`
//! config, with kyaml's path lookup (`PathGetter` for sources,
//! `PathMatcher` for targets) and Kubernetes label selectors.
//!
//! Items are edited in place; an item that changed is written and read
//! back, as the Go function's output is, so created nodes get the tags a
//! reader gives them. On any error the items are left as they came in and
//! a single error result is reported.

use std::borrow::Cow;
use std::collections::BTreeMap;

use regex::Regex;
use serde_json::Value;

use super::{FnInput, FnOutput, FUNCTION_FAILURE};
use crate::api::label_selector::{go_atoi, LabelSelector};
use crate::render::result::FnResult;
use crate::yaml::{self, Kind, Node};

/// `types.DefaultReplacementFieldPath`.
const DEFAULT_FIELD_PATH: &str = "metadata.name";
/// kustomize's previous-names annotation.
const PREVIOUS_NAMES: &str = "internal.config.kubernetes.io/previousNames";
/// kustomize's previous-namespaces annotation.
const PREVIOUS_NAMESPACES: &str = "internal.config.kubernetes.io/previousNamespaces";
/// kustomize's previous-kinds annotation.
const PREVIOUS_KINDS: &str = "internal.config.kubernetes.io/previousKinds";
/// What Go prints for a nil pointer dereference.
const NIL_DEREF: &str = "runtime error: invalid memory address or nil pointer dereference";

/// Runs `apply-replacements` on the items.
pub fn run(input: FnInput) -> FnOutput {
    let replacements = match read_config(input.function_config.as_ref()) {
        Ok(r) => r,
        Err(message) => return failed(input.items, message),
    };
    let mut items = input.items.clone();
    let mut touched = vec![false; items.len()];
    match transform(&mut items, &replacements, &mut touched) {
        Ok(()) => {
            for (item, changed) in items.iter_mut().zip(&touched) {
                if *changed {
                    reread(item);
                }
            }
            FnOutput {
                items,
                ..FnOutput::default()
            }
        }
        Err(Fail::Error(message)) => failed(input.items, message),
        Err(Fail::Panic(value)) => FnOutput {
            items: input.items,
            failure: Some(format!("KRM function panicked with: {value}")),
            ..FnOutput::default()
        },
    }
}

/// The output of a run that logged `message` as its error result.
fn failed(items: Vec<Node>, message: String) -> FnOutput {
    FnOutput {
        items,
        results: vec![FnResult::error(message)],
        failure: Some(FUNCTION_FAILURE.to_string()),
        ..FnOutput::default()
    }
}

/// Writes a changed item and reads it back, as the Go function's output is
/// written and read by kpt. Content a scalar was given (kyaml appends
/// created fields to null scalars) is not written, as yaml.v3 drops it.
fn reread(item: &mut Node) {
    strip_scalar_content(item);
    let Ok(text) = yaml::to_string(item) else {
        return;
    };
    if let Ok(doc) = yaml::parse_document(&text) {
        *item = doc;
    }
}

fn strip_scalar_content(node: &mut Node) {
    if node.kind == Kind::Scalar {
        node.content.clear();
        return;
    }
    for child in &mut node.content {
        strip_scalar_content(child);
    }
}

/// Why the transformation stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Fail {
    /// An error the function reports as its result.
    Error(String),
    /// A Go runtime panic, which the builtin runner reports as the failure.
    Panic(String),
}

type Res<T> = Result<T, Fail>;

fn error<T>(message: impl Into<String>) -> Res<T> {
    Err(Fail::Error(message.into()))
}

// ---------------------------------------------------------------------------
// Configuration (`types.Replacement` as encoding/json fills it)
// ---------------------------------------------------------------------------

/// `resid.ResId`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct ResId {
    group: String,
    version: String,
    kind: String,
    name: String,
    namespace: String,
}

impl ResId {
    fn is_empty(&self) -> bool {
        *self == ResId::default()
    }

    /// `ResId.String()`: `group_version_kind/name_namespace`.
    fn go_string(&self) -> String {
        let or = |s: &str, d: &str| {
            if s.is_empty() {
                d.to_string()
            } else {
                s.to_string()
            }
        };
        format!(
            "{}_{}_{}/{}_{}",
            or(&self.group, "~G"),
            or(&self.version, "~V"),
            or(&self.kind, "~K"),
            or(&self.name, "[noName]"),
            or(&self.namespace, "[noNs]")
        )
    }

    /// `ResId.IsSelectedBy`: exact matching, empty selector fields match
    /// anything, namespaces compared as effective namespaces.
    fn is_selected_by(&self, sel: &ResId) -> bool {
        (sel.name.is_empty() || sel.name == self.name)
            && (sel.namespace.is_empty()
                || effective_namespace(&sel.namespace) == effective_namespace(&self.namespace))
            && (sel.group.is_empty() || sel.group == self.group)
            && (sel.version.is_empty() || sel.version == self.version)
            && (sel.kind.is_empty() || sel.kind == self.kind)
    }
}

fn effective_namespace(ns: &str) -> &str {
    if ns.is_empty() || ns == "default" {
        "default"
    } else {
        ns
    }
}

/// `types.FieldOptions`.
#[derive(Debug, Clone, Default)]
struct FieldOptions {
    delimiter: String,
    index: i64,
    create: bool,
}

/// `FieldOptions.String()` of an optional options block.
fn options_string(options: Option<&FieldOptions>) -> String {
    match options {
        Some(o) if !o.delimiter.is_empty() || o.create => {
            format!("{}({}), create={}", o.delimiter, o.index, o.create)
        }
        _ => String::new(),
    }
}

/// `types.SourceSelector`.
#[derive(Debug, Clone, Default)]
struct SourceSelector {
    id: ResId,
    field_path: String,
    options: Option<FieldOptions>,
}

impl SourceSelector {
    /// `SourceSelector.String()`.
    fn go_string(&self) -> String {
        let mut parts = vec![self.id.go_string()];
        if !self.field_path.is_empty() {
            parts.push(self.field_path.clone());
        }
        let opts = options_string(self.options.as_ref());
        if !opts.is_empty() {
            parts.push(opts);
        }
        parts.join(":")
    }
}

/// `types.Selector`.
#[derive(Debug, Clone, Default)]
struct Selector {
    id: ResId,
    annotation_selector: String,
    label_selector: String,
}

/// `types.TargetSelector`.
#[derive(Debug, Clone, Default)]
struct TargetSelector {
    select: Option<Selector>,
    reject: Vec<Option<Selector>>,
    field_paths: Vec<String>,
    options: Option<FieldOptions>,
}

/// `types.Replacement`.
#[derive(Debug, Clone, Default)]
struct Replacement {
    source: Option<SourceSelector>,
    source_value: Option<String>,
    targets: Option<Vec<Option<TargetSelector>>>,
}

/// Checks the function config and decodes its replacements, with the
/// catalog function's messages.
fn read_config(config: Option<&Node>) -> Result<Vec<Replacement>, String> {
    const MISSING: &str = "FunctionConfig is missing. Expect `ApplyReplacements`";
    let Some(doc) = config else {
        return Err(MISSING.to_string());
    };
    let root = doc.root();
    if root.content.is_empty() {
        return Err(MISSING.to_string());
    }
    let field = |key: &str| {
        root.get(key)
            .filter(|n| n.kind == Kind::Scalar)
            .map_or("", |n| n.value.as_str())
    };
    let (kind, api_version) = (field("kind"), field("apiVersion"));
    if kind != "ApplyReplacements" || api_version != "fn.kpt.dev/v1alpha1" {
        return Err(format!(
            "received functionConfig of kind {kind} and apiVersion {api_version}, only \
             functionConfig of kind ApplyReplacements and apiVersion fn.kpt.dev/v1alpha1 is \
             supported"
        ));
    }
    let wrap = |e: String| {
        format!(
            "unable to convert functionConfig to replacements:\nunable to convert object to \
             *replacements.Replacements with error: {e}"
        )
    };
    let json = yaml::to_json_strict(doc).map_err(|e| wrap(e.to_string()))?;
    Decoder::default().config(&json).map_err(wrap)
}

/// Decodes JSON into the config types the way Go's `encoding/json` does:
/// keys matched exactly or case-insensitively, in sorted order (the JSON
/// comes from a Go map), `null` leaves a value alone, and the first type
/// mismatch is the error.
#[derive(Default)]
struct Decoder {
    /// JSON names of the fields being decoded.
    stack: Vec<&'static str>,
}

type DecResult<T> = Result<T, String>;

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

impl Decoder {
    fn type_error(&self, value: &str, strukt: &str, go_type: &str) -> String {
        format!(
            "json: cannot unmarshal {value} into Go struct field {strukt}.{} of type {go_type}",
            self.stack.join(".")
        )
    }

    fn mismatch(&self, v: &Value, strukt: &str, go_type: &str) -> String {
        self.type_error(json_kind(v), strukt, go_type)
    }

    /// Visits the known fields of an object in Go's order; `null` is a
    /// no-op, anything else but an object a type error.
    fn object(
        &mut self,
        v: &Value,
        ctx: &str,
        go_type: &str,
        names: &[&'static str],
        mut field: impl FnMut(&mut Self, &'static str, &Value) -> DecResult<()>,
    ) -> DecResult<()> {
        let map = match v {
            Value::Null => return Ok(()),
            Value::Object(m) => m,
            other => return Err(self.mismatch(other, ctx, go_type)),
        };
        let mut keys: Vec<&String> = map.keys().collect();
        keys.sort();
        for key in keys {
            let name = names
                .iter()
                .find(|n| **n == key.as_str())
                .or_else(|| names.iter().find(|n| n.eq_ignore_ascii_case(key)));
            let (Some(name), Some(value)) = (name, map.get(key)) else {
                continue;
            };
            self.stack.push(name);
            let result = field(self, name, value);
            self.stack.pop();
            result?;
        }
        Ok(())
    }

    fn string(&self, v: &Value, ctx: &str, out: &mut String) -> DecResult<()> {
        match v {
            Value::Null => Ok(()),
            Value::String(s) => {
                *out = s.clone();
                Ok(())
            }
            other => Err(self.mismatch(other, ctx, "string")),
        }
    }

    fn bool(&self, v: &Value, ctx: &str, out: &mut bool) -> DecResult<()> {
        match v {
            Value::Null => Ok(()),
            Value::Bool(b) => {
                *out = *b;
                Ok(())
            }
            other => Err(self.mismatch(other, ctx, "bool")),
        }
    }

    fn int(&self, v: &Value, ctx: &str, out: &mut i64) -> DecResult<()> {
        let n = match v {
            Value::Null => return Ok(()),
            Value::Number(n) => n,
            other => return Err(self.mismatch(other, ctx, "int")),
        };
        if let Some(i) = n.as_i64() {
            *out = i;
            return Ok(());
        }
        let literal = match (n.as_u64(), n.as_f64()) {
            (Some(u), _) => u.to_string(),
            (None, Some(f)) => {
                if f.fract() == 0.0 && f.abs() < 1e21 {
                    if f.abs() < 9.2e18 {
                        // Go writes an integral float without a fraction.
                        *out = f as i64;
                        return Ok(());
                    }
                    format!("{f:.0}")
                } else {
                    format!("{f}")
                }
            }
            (None, None) => n.to_string(),
        };
        Err(self.type_error(&format!("number {literal}"), ctx, "int"))
    }

    fn string_list(&self, v: &Value, ctx: &str, out: &mut Vec<String>) -> DecResult<()> {
        let items = match v {
            Value::Null => {
                out.clear();
                return Ok(());
            }
            Value::Array(a) => a,
            other => return Err(self.mismatch(other, ctx, "[]string")),
        };
        let mut list = Vec::with_capacity(items.len());
        for item in items {
            let mut s = String::new();
            self.string(item, ctx, &mut s)?;
            list.push(s);
        }
        *out = list;
        Ok(())
    }

    fn config(&mut self, v: &Value) -> DecResult<Vec<Replacement>> {
        let mut out = Vec::new();
        self.object(
            v,
            "",
            "replacements.Replacements",
            &["replacements"],
            |d, _, v| {
                out = match v {
                    Value::Null => Vec::new(),
                    Value::Array(items) => {
                        let mut list = Vec::with_capacity(items.len());
                        for item in items {
                            let mut r = Replacement::default();
                            d.replacement(item, "Replacements", &mut r)?;
                            list.push(r);
                        }
                        list
                    }
                    other => return Err(d.mismatch(other, "Replacements", "[]types.Replacement")),
                };
                Ok(())
            },
        )?;
        Ok(out)
    }

    fn replacement(&mut self, v: &Value, ctx: &str, r: &mut Replacement) -> DecResult<()> {
        const S: &str = "Replacement";
        self.object(
            v,
            ctx,
            "types.Replacement",
            &["source", "sourceValue", "targets"],
            |d, name, v| match name {
                "source" => {
                    if v.is_null() {
                        r.source = None;
                        return Ok(());
                    }
                    let mut s = r.source.take().unwrap_or_default();
                    d.source(v, S, &mut s)?;
                    r.source = Some(s);
                    Ok(())
                }
                "sourceValue" => match v {
                    Value::Null => {
                        r.source_value = None;
                        Ok(())
                    }
                    Value::String(s) => {
                        r.source_value = Some(s.clone());
                        Ok(())
                    }
                    other => Err(d.mismatch(other, S, "string")),
                },
                _ => {
                    let items = match v {
                        Value::Null => {
                            r.targets = None;
                            return Ok(());
                        }
                        Value::Array(a) => a,
                        other => return Err(d.mismatch(other, S, "[]*types.TargetSelector")),
                    };
                    let mut list = Vec::with_capacity(items.len());
                    for item in items {
                        if item.is_null() {
                            list.push(None);
                            continue;
                        }
                        let mut t = TargetSelector::default();
                        d.target(item, S, &mut t)?;
                        list.push(Some(t));
                    }
                    r.targets = Some(list);
                    Ok(())
                }
            },
        )
    }

    fn res_id_field(&self, name: &str, v: &Value, ctx: &str, id: &mut ResId) -> DecResult<bool> {
        let out = match name {
            "group" => &mut id.group,
            "version" => &mut id.version,
            "kind" => &mut id.kind,
            "name" => &mut id.name,
            "namespace" => &mut id.namespace,
            _ => return Ok(false),
        };
        self.string(v, ctx, out)?;
        Ok(true)
    }

    fn source(&mut self, v: &Value, ctx: &str, s: &mut SourceSelector) -> DecResult<()> {
        const S: &str = "SourceSelector";
        self.object(
            v,
            ctx,
            "types.SourceSelector",
            &[
                "group",
                "version",
                "kind",
                "name",
                "namespace",
                "fieldPath",
                "options",
            ],
            |d, name, v| {
                if d.res_id_field(name, v, S, &mut s.id)? {
                    return Ok(());
                }
                match name {
                    "fieldPath" => d.string(v, S, &mut s.field_path),
                    _ => d.options(v, S, &mut s.options),
                }
            },
        )
    }

    fn options(&mut self, v: &Value, ctx: &str, out: &mut Option<FieldOptions>) -> DecResult<()> {
        const S: &str = "FieldOptions";
        if v.is_null() {
            *out = None;
            return Ok(());
        }
        let mut o = out.take().unwrap_or_default();
        let mut encoding = String::new();
        self.object(
            v,
            ctx,
            "types.FieldOptions",
            &["delimiter", "index", "encoding", "create"],
            |d, name, v| match name {
                "delimiter" => d.string(v, S, &mut o.delimiter),
                "index" => d.int(v, S, &mut o.index),
                "encoding" => d.string(v, S, &mut encoding),
                _ => d.bool(v, S, &mut o.create),
            },
        )?;
        *out = Some(o);
        Ok(())
    }

    fn selector(&mut self, v: &Value, ctx: &str, s: &mut Selector) -> DecResult<()> {
        const S: &str = "Selector";
        self.object(
            v,
            ctx,
            "types.Selector",
            &[
                "group",
                "version",
                "kind",
                "name",
                "namespace",
                "annotationSelector",
                "labelSelector",
            ],
            |d, name, v| {
                if d.res_id_field(name, v, S, &mut s.id)? {
                    return Ok(());
                }
                match name {
                    "annotationSelector" => d.string(v, S, &mut s.annotation_selector),
                    _ => d.string(v, S, &mut s.label_selector),
                }
            },
        )
    }

    fn target(&mut self, v: &Value, ctx: &str, t: &mut TargetSelector) -> DecResult<()> {
        const S: &str = "TargetSelector";
        self.object(
            v,
            ctx,
            "types.TargetSelector",
            &["select", "reject", "fieldPaths", "options"],
            |d, name, v| match name {
                "select" => {
                    if v.is_null() {
                        t.select = None;
                        return Ok(());
                    }
                    let mut s = t.select.take().unwrap_or_default();
                    d.selector(v, S, &mut s)?;
                    t.select = Some(s);
                    Ok(())
                }
                "reject" => {
                    let items = match v {
                        Value::Null => {
                            t.reject.clear();
                            return Ok(());
                        }
                        Value::Array(a) => a,
                        other => return Err(d.mismatch(other, S, "[]*types.Selector")),
                    };
                    let mut list = Vec::with_capacity(items.len());
                    for item in items {
                        if item.is_null() {
                            list.push(None);
                            continue;
                        }
                        let mut s = Selector::default();
                        d.selector(item, S, &mut s)?;
                        list.push(Some(s));
                    }
                    t.reject = list;
                    Ok(())
                }
                "fieldPaths" => d.string_list(v, S, &mut t.field_paths),
                _ => d.options(v, S, &mut t.options),
            },
        )
    }
}

// ---------------------------------------------------------------------------
// The filter (`replacement.Filter`)
// ---------------------------------------------------------------------------

fn transform(items: &mut [Node], replacements: &[Replacement], touched: &mut [bool]) -> Res<()> {
    for r in replacements {
        let Some(targets) = r.targets.as_ref() else {
            return error("replacements must specify a source and at least one target");
        };
        if r.source.is_none() && r.source_value.is_none() {
            return error("replacements must specify a source and at least one target");
        }
        let value = get_replacement(items, r)?;
        apply_replacement(items, &value, targets, touched)?;
    }
    Ok(())
}

/// The value a replacement copies: its `sourceValue`, or the source
/// field (refined by the source options).
fn get_replacement(items: &[Node], r: &Replacement) -> Res<Node> {
    let source = match (&r.source, &r.source_value) {
        (Some(_), Some(_)) => return error("value and resource selectors are mutually exclusive"),
        (None, Some(v)) => return Ok(Node::new_scalar("", v.clone())),
        (Some(s), None) => s,
        (None, None) => return error("replacements must specify a source and at least one target"),
    };
    let item = select_source(items, source)?;
    let field_path = if source.field_path.is_empty() {
        DEFAULT_FIELD_PATH
    } else {
        source.field_path.as_str()
    };
    let path = smarter_path_split(field_path);
    let found = match lookup(item.root(), &path) {
        Ok(n) => n,
        Err(Fail::Error(e)) => return error(format!("error looking up replacement source: {e}")),
        Err(panic) => return Err(panic),
    };
    let node = match found {
        Some(n) if !is_nil_or_empty(n) => n,
        _ => {
            return error(format!(
                "fieldPath `{field_path}` is missing for replacement source {}",
                source.id.go_string()
            ))
        }
    };
    let Some(options) = source.options.as_ref().filter(|o| !o.delimiter.is_empty()) else {
        return Ok(node.clone());
    };
    if node.kind != Kind::Scalar {
        return error("delimiter option can only be used with scalar nodes");
    }
    let text = get_value(node);
    let parts: Vec<&str> = text.split(options.delimiter.as_str()).collect();
    let picked = usize::try_from(options.index)
        .ok()
        .and_then(|i| parts.get(i));
    let Some(picked) = picked else {
        return error(format!(
            "options.index {} is out of bounds for value {text}",
            options.index
        ));
    };
    let mut value = node.clone();
    value.value = (*picked).to_string();
    Ok(value)
}

/// The one item the source selects (by current or previous id).
fn select_source<'a>(items: &'a [Node], source: &SourceSelector) -> Res<&'a Node> {
    let mut found = None;
    for item in items {
        let ids = match make_res_ids(item) {
            Ok(ids) => ids,
            Err(e) => return error(format!("error getting node IDs: {e}")),
        };
        if ids.iter().any(|id| id.is_selected_by(&source.id)) {
            if found.is_some() {
                return error(format!(
                    "multiple matches for selector {}",
                    source.go_string()
                ));
            }
            found = Some(item);
        }
    }
    match found {
        Some(item) => Ok(item),
        None => error(format!("nothing selected by {}", source.go_string())),
    }
}

/// The compiled regexes of a selector's id fields (`types.SelectorRegex`).
struct SelectorRegex {
    group: Option<Regex>,
    version: Option<Regex>,
    kind: Option<Regex>,
    name: Option<Regex>,
    namespace: Option<Regex>,
}

impl SelectorRegex {
    fn new(id: &ResId) -> Result<SelectorRegex, String> {
        Ok(SelectorRegex {
            group: anchored(&id.group)?,
            version: anchored(&id.version)?,
            kind: anchored(&id.kind)?,
            name: anchored(&id.name)?,
            namespace: anchored(&id.namespace)?,
        })
    }

    fn matches(&self, id: &ResId) -> bool {
        let ok = |re: &Option<Regex>, s: &str| re.as_ref().is_none_or(|re| re.is_match(s));
        ok(&self.group, &id.group)
            && ok(&self.version, &id.version)
            && ok(&self.kind, &id.kind)
            && ok(&self.name, &id.name)
            && ok(&self.namespace, &id.namespace)
    }
}

/// `^(?:pattern)$`, or no constraint for an empty pattern.
fn anchored(pattern: &str) -> Result<Option<Regex>, String> {
    if pattern.is_empty() {
        return Ok(None);
    }
    compile_regex(&format!("^(?:{pattern})$")).map(Some)
}

/// Compiles a regular expression; errors worded like Go's `regexp`.
fn compile_regex(pattern: &str) -> Result<Regex, String> {
    Regex::new(pattern).map_err(|e| {
        let text = e.to_string();
        let code = if text.contains("unclosed group") {
            "missing closing )"
        } else if text.contains("unopened group") {
            "unexpected )"
        } else if text.contains("unclosed character class") {
            "missing closing ]"
        } else if text.contains("repetition operator missing expression") {
            "missing argument to repetition operator"
        } else if text.contains("escape") {
            "invalid escape sequence"
        } else if text.contains("repetition") {
            "invalid repeat count"
        } else {
            "invalid or unsupported Perl syntax"
        };
        format!("error parsing regexp: {code}: `{pattern}`")
    })
}

fn apply_replacement(
    items: &mut [Node],
    value: &Node,
    targets: &[Option<TargetSelector>],
    touched: &mut [bool],
) -> Res<()> {
    for target in targets {
        let Some(target) = target else {
            return Err(Fail::Panic(NIL_DEREF.to_string()));
        };
        let Some(select) = target.select.as_ref() else {
            return error("target must specify resources to select");
        };
        let default_paths = [DEFAULT_FIELD_PATH.to_string()];
        let field_paths: &[String] = if target.field_paths.is_empty() {
            &default_paths
        } else {
            &target.field_paths
        };
        let creating = |e: String| Fail::Error(format!("error creating target selector: {e}"));
        let select_regex = SelectorRegex::new(&select.id).map_err(creating)?;
        let mut reject_regexes = Vec::new();
        for reject in &target.reject {
            let Some(reject) = reject else {
                return Err(Fail::Panic(NIL_DEREF.to_string()));
            };
            if !reject.id.is_empty() {
                reject_regexes.push(SelectorRegex::new(&reject.id).map_err(creating)?);
            }
        }
        for (item, changed) in items.iter_mut().zip(touched.iter_mut()) {
            let ids = make_res_ids(item).map_err(Fail::Error)?;
            if !select_by_annotations_and_labels(item, select, &target.reject)? {
                continue;
            }
            if reject_regexes
                .iter()
                .any(|r| ids.iter().any(|id| r.matches(id)))
            {
                continue;
            }
            if ids.iter().any(|id| select_regex.matches(id)) {
                copy_value_to_target(item.root_mut(), value, target, field_paths)?;
                *changed = true;
            }
        }
    }
    Ok(())
}

fn select_by_annotations_and_labels(
    item: &Node,
    select: &Selector,
    rejects: &[Option<Selector>],
) -> Res<bool> {
    if !matches_annotations_and_labels(item, select)? {
        return Ok(false);
    }
    for reject in rejects.iter().flatten() {
        if reject.annotation_selector.is_empty() && reject.label_selector.is_empty() {
            continue;
        }
        if matches_annotations_and_labels(item, reject)? {
            return Ok(false);
        }
    }
    Ok(true)
}

fn matches_annotations_and_labels(item: &Node, selector: &Selector) -> Res<bool> {
    let annotations = LabelSelector::parse(&selector.annotation_selector).map_err(Fail::Error)?;
    let anno_match = annotations.matches(&metadata_map(item, "annotations"));
    let labels = LabelSelector::parse(&selector.label_selector).map_err(Fail::Error)?;
    let label_match = labels.matches(&metadata_map(item, "labels"));
    Ok(anno_match && label_match)
}

fn field_retrieval_error(field_path: &str, create: bool) -> String {
    if create {
        format!("unable to find or create field {field_path:?} in replacement target")
    } else {
        format!("unable to find field {field_path:?} in replacement target")
    }
}

fn copy_value_to_target(
    root: &mut Node,
    value: &Node,
    target: &TargetSelector,
    field_paths: &[String],
) -> Res<()> {
    let create = target
        .options
        .as_ref()
        .filter(|o| o.create)
        .map(|_| value.kind);
    for fp in field_paths {
        let path = smarter_path_split(fp);
        let mut found = Vec::new();
        let mut at = Vec::new();
        match path_match(root, &path, create, &mut at, &mut found) {
            Ok(()) => {}
            Err(Fail::Error(e)) => {
                return error(format!(
                    "{}: {e}",
                    field_retrieval_error(fp, create.is_some())
                ))
            }
            Err(panic) => return Err(panic),
        }
        if found.is_empty() {
            return error(field_retrieval_error(fp, create.is_some()));
        }
        for location in &found {
            if let Some(field) = node_at_mut(root, location) {
                set_field_value(target.options.as_ref(), field, value)?;
            }
        }
    }
    Ok(())
}

/// `setFieldValue`: a scalar target keeps its node and takes the value's
/// text; any other target becomes a copy of the value.
fn set_field_value(options: Option<&FieldOptions>, target: &mut Node, value: &Node) -> Res<()> {
    let mut value = value.clone();
    if let Some(options) = options.filter(|o| !o.delimiter.is_empty()) {
        if target.kind != Kind::Scalar {
            return error("delimiter option can only be used with scalar nodes");
        }
        let mut parts: Vec<String> = target
            .value
            .split(options.delimiter.as_str())
            .map(str::to_string)
            .collect();
        let v = get_value(&value).to_string();
        match usize::try_from(options.index) {
            Err(_) => parts.insert(0, v),
            Ok(i) if i >= parts.len() => parts.push(v),
            Ok(i) => {
                if let Some(slot) = parts.get_mut(i) {
                    *slot = v;
                }
            }
        }
        value.value = parts.join(&options.delimiter);
    }
    if target.kind == Kind::Scalar {
        target.value = value.value;
    } else {
        *target = value;
    }
    Ok(())
}

fn node_at_mut<'a>(root: &'a mut Node, location: &[usize]) -> Option<&'a mut Node> {
    let mut cur = root;
    for &i in location {
        cur = cur.content.get_mut(i)?;
    }
    Some(cur)
}

// ---------------------------------------------------------------------------
// Resource ids, labels and annotations
// ---------------------------------------------------------------------------

/// `yaml.GetValue`: the text of a node, empty for a null one.
fn get_value(node: &Node) -> &str {
    if is_null(node) {
        ""
    } else {
        &node.value
    }
}

/// kyaml's `IsMissingOrNull` for a present node: tagged `!!null`.
fn is_null(node: &Node) -> bool {
    node.tag == "!!null"
}

/// `RNode.IsNilOrEmpty` for a present node.
fn is_nil_or_empty(node: &Node) -> bool {
    is_null(node)
        || (matches!(node.kind, Kind::Mapping | Kind::Sequence) && node.content.is_empty())
}

/// The value of the first pair of a mapping whose key text is `key`.
fn field_value<'a>(node: &'a Node, key: &str) -> Option<&'a Node> {
    if node.kind != Kind::Mapping {
        return None;
    }
    node.content
        .chunks_exact(2)
        .find(|pair| pair[0].value == key)
        .map(|pair| &pair[1])
}

/// `metadata.<field>` of an item as a string map.
fn metadata_map(item: &Node, field: &str) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    let Some(m) = field_value(item.root(), "metadata").and_then(|m| field_value(m, field)) else {
        return map;
    };
    if m.kind == Kind::Mapping {
        for pair in m.content.chunks_exact(2) {
            map.insert(pair[0].value.clone(), pair[1].value.clone());
        }
    }
    map
}

/// `utils.MakeResIds`: the item's current id and its previous ids.
fn make_res_ids(item: &Node) -> Result<Vec<ResId>, String> {
    let root = item.root();
    let api_version = field_value(root, "apiVersion").map_or("", get_value);
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g.to_string(), v.to_string()),
        None => (String::new(), api_version.to_string()),
    };
    let meta = |key: &str| {
        field_value(root, "metadata")
            .and_then(|m| field_value(m, key))
            .map_or(String::new(), |n| get_value(n).to_string())
    };
    let kind = field_value(root, "kind").map_or(String::new(), |n| n.value.clone());
    let mut ids = vec![ResId {
        group: group.clone(),
        version: version.clone(),
        kind,
        name: meta("name"),
        namespace: meta("namespace"),
    }];
    let annotations = metadata_map(item, "annotations");
    let Some(names) = annotations.get(PREVIOUS_NAMES) else {
        return Ok(ids);
    };
    let get = |key: &str| annotations.get(key).map_or("", String::as_str);
    let names: Vec<&str> = names.split(',').collect();
    let namespaces: Vec<&str> = get(PREVIOUS_NAMESPACES).split(',').collect();
    let kinds: Vec<&str> = get(PREVIOUS_KINDS).split(',').collect();
    if names.len() != namespaces.len() || names.len() != kinds.len() {
        return Err(
            "number of previous names, number of previous namespaces, number of \
                    previous kinds not equal"
                .to_string(),
        );
    }
    for ((name, namespace), kind) in names.iter().zip(&namespaces).zip(&kinds) {
        ids.push(ResId {
            group: group.clone(),
            version: version.clone(),
            kind: (*kind).to_string(),
            name: (*name).to_string(),
            namespace: (*namespace).to_string(),
        });
    }
    Ok(ids)
}

// ---------------------------------------------------------------------------
// Field paths (kyaml `utils.SmarterPathSplitter`, `PathGetter`, `PathMatcher`)
// ---------------------------------------------------------------------------

/// `utils.PathSplitter` on `.`: a leading `.` is dropped and `\.` escapes
/// the delimiter.
fn path_split(path: &str) -> Vec<String> {
    let mut parts: Vec<&str> = path.split('.').collect();
    if parts.len() > 1 && parts.first() == Some(&"") {
        parts.remove(0);
    }
    let mut out: Vec<String> = Vec::with_capacity(parts.len());
    for part in parts {
        match out.last_mut() {
            Some(last) if last.ends_with('\\') => {
                last.pop();
                last.push('.');
                last.push_str(part);
            }
            _ => out.push(part.to_string()),
        }
    }
    out
}

/// `utils.SmarterPathSplitter` on `.`: bracketed parts stay whole;
/// `[a.b]` without `=` is a plain key `a.b`.
fn smarter_path_split(path: &str) -> Vec<String> {
    let split = path_split(path);
    let mut out = Vec::with_capacity(split.len());
    let mut i = 0;
    while let Some(elem) = split.get(i) {
        if elem.starts_with('[') && !elem.ends_with(']') {
            let mut joined = elem.clone();
            while let Some(next) = split.get(i + 1) {
                i += 1;
                joined.push('.');
                joined.push_str(next);
                if next.ends_with(']') {
                    break;
                }
            }
            out.push(joined);
        } else {
            out.push(elem.clone());
        }
        i += 1;
    }
    for elem in &mut out {
        if elem.len() >= 2 && elem.starts_with('[') && elem.ends_with(']') && !elem.contains('=') {
            *elem = elem[1..elem.len() - 1].to_string();
        }
    }
    out
}

/// kyaml's `IsIdxNumber`: a non-negative index.
fn idx_number(s: &str) -> Option<usize> {
    go_atoi(s).and_then(|i| usize::try_from(i).ok())
}

/// kyaml's `IsListIndex`: `[...]`.
fn is_list_index(s: &str) -> bool {
    s.starts_with('[') && s.ends_with(']')
}

/// kyaml's `SplitIndexNameValue`.
fn split_index_name_value(part: &str) -> Result<(&str, &str), String> {
    let elem = part.strip_suffix(']').unwrap_or(part);
    let elem = elem.strip_prefix('[').unwrap_or(elem);
    elem.split_once('=').ok_or_else(|| {
        "list path element must contain fieldName=fieldValue for element to match".to_string()
    })
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Sequence => "SequenceNode",
        Kind::Mapping => "MappingNode",
        Kind::Scalar => "ScalarNode",
        Kind::Document => "DocumentNode",
        Kind::Alias => "AliasNode",
    }
}

/// kyaml's `ErrorIfInvalid` message.
fn wrong_kind(field_path: &str, expected: Kind, node: &Node) -> Fail {
    let text = yaml::to_string(node).unwrap_or_default();
    Fail::Error(format!(
        "wrong Node Kind for {field_path} expected: {} was {}: value: {{{}}}",
        kind_name(expected),
        kind_name(node.kind),
        text.trim()
    ))
}

/// Checks a node can be read as a sequence (`RNode.Elements`).
fn check_sequence(node: &Node, field_path: &str) -> Res<()> {
    if is_null(node) || node.kind == Kind::Sequence {
        Ok(())
    } else {
        Err(wrong_kind(field_path, Kind::Sequence, node))
    }
}

/// What `Get(name)` (kyaml's `FieldMatcher`) finds in a node.
enum Field {
    /// Nothing.
    Missing,
    /// The node itself (an empty name on an empty scalar).
    Itself,
    /// The value at this content index.
    At(usize),
}

fn get_field(node: &Node, name: &str, field_path: &str) -> Res<Field> {
    if is_null(node) {
        return Ok(Field::Missing);
    }
    if name.is_empty() {
        if node.kind != Kind::Scalar {
            return Err(wrong_kind(field_path, Kind::Scalar, node));
        }
        return Ok(if node.value.is_empty() {
            Field::Itself
        } else {
            Field::Missing
        });
    }
    if node.kind != Kind::Mapping {
        return Err(wrong_kind(field_path, Kind::Mapping, node));
    }
    Ok((0..node.content.len())
        .step_by(2)
        .find(|&i| node.content.get(i).is_some_and(|k| k.value == name))
        .map_or(Field::Missing, |i| Field::At(i + 1)))
}

/// `Lookup(path...)` (kyaml's `PathGetter` without create) from a root.
fn lookup<'a>(root: &'a Node, path: &[String]) -> Res<Option<&'a Node>> {
    let mut field_path: Vec<&str> = Vec::new();
    let mut cur = root;
    for part in path.iter().map(|p| p.trim()).filter(|p| !p.is_empty()) {
        let here = field_path.join(".");
        let next = if let Some(idx) = go_atoi(part) {
            let Ok(idx) = usize::try_from(idx) else {
                return error(format!("array index {idx} cannot be negative"));
            };
            check_sequence(cur, &here)?;
            cur.content.get(idx)
        } else if part == "-" {
            check_sequence(cur, &here)?;
            match cur.content.last() {
                Some(last) => Some(last),
                None => return Err(Fail::Panic("runtime error: index out of range [-1]".into())),
            }
        } else if is_list_index(part) {
            let (name, value) = split_index_name_value(part).map_err(Fail::Error)?;
            check_sequence(cur, &here)?;
            if name.is_empty() {
                cur.content.iter().find(|e| e.value == value)
            } else {
                let mut found = None;
                for elem in &cur.content {
                    if elem.kind != Kind::Mapping && !is_null(elem) {
                        continue;
                    }
                    if let Field::At(i) = get_field(elem, name, &here)? {
                        if elem.content.get(i).is_some_and(|v| v.value == value) {
                            found = Some(elem);
                            break;
                        }
                    }
                }
                found
            }
        } else {
            field_path.push(part);
            match get_field(cur, part, &here)? {
                Field::Missing => None,
                Field::Itself => Some(cur),
                Field::At(i) => cur.content.get(i),
            }
        };
        match next {
            Some(n) => cur = n,
            None => return Ok(None),
        }
    }
    Ok(Some(cur))
}

/// A node kyaml creates along a path (`&yaml.Node{Kind: kind}`).
fn created(kind: Kind) -> Node {
    let mut node = match kind {
        Kind::Mapping => Node::new_mapping(),
        Kind::Sequence => Node::new_sequence(),
        _ => Node::new_scalar("", ""),
    };
    node.kind = kind;
    node.tag = Cow::Borrowed("");
    node
}

/// kyaml's `getPathPartKind`.
fn path_part_kind(next: Option<&String>, create: Kind) -> Kind {
    match next.map(String::as_str) {
        Some(p) if is_list_index(p) || idx_number(p).is_some() => Kind::Sequence,
        None | Some("") => create,
        Some(_) => Kind::Mapping,
    }
}

/// kyaml's `PathMatcher` (with `Create`): the locations (content indices
/// from `node`, after `at`) of every node the path matches, creating
/// missing parts when `create` is set.
fn path_match(
    node: &mut Node,
    path: &[String],
    create: Option<Kind>,
    at: &mut Vec<usize>,
    out: &mut Vec<Vec<usize>>,
) -> Res<()> {
    let Some((part, rest)) = path.split_first() else {
        out.push(at.clone());
        return Ok(());
    };
    if let Some(idx) = idx_number(part) {
        check_sequence(node, "")?;
        if let Some(kind) = create.filter(|_| node.content.len() == idx) {
            node.content
                .push(created(path_part_kind(rest.first(), kind)));
        }
        let len = node.content.len();
        let Some(elem) = node.content.get_mut(idx) else {
            return error(format!(
                "index {idx} specified but only {len} elements found"
            ));
        };
        at.push(idx);
        let result = path_match(elem, rest, create, at, out);
        at.pop();
        return result;
    }
    if is_list_index(part) {
        return match_sequence(node, part, rest, create, at, out);
    }
    if part == "*" {
        check_sequence(node, "")?;
        for (i, elem) in node.content.iter_mut().enumerate() {
            at.push(i);
            let result = path_match(elem, rest, create, at, out);
            at.pop();
            result?;
        }
        return Ok(());
    }
    let index = match get_field(node, part, "")? {
        Field::Itself => return path_match(node, rest, create, at, out),
        Field::At(i) => i,
        Field::Missing => {
            let Some(kind) = create.filter(|_| !part.is_empty()) else {
                return Ok(());
            };
            let mut key = Node::new_scalar("", part.clone());
            key.tag = Cow::Borrowed("");
            node.content.push(key);
            node.content
                .push(created(path_part_kind(rest.first(), kind)));
            node.content.len() - 1
        }
    };
    let Some(child) = node.content.get_mut(index) else {
        return Ok(());
    };
    at.push(index);
    let result = path_match(child, rest, create, at, out);
    at.pop();
    result
}

/// `[name=regex]` / `[=regex]` in a `PathMatcher`: elements whose field
/// (or whose own text) matches the unanchored regex.
fn match_sequence(
    node: &mut Node,
    part: &str,
    rest: &[String],
    create: Option<Kind>,
    at: &mut Vec<usize>,
    out: &mut Vec<Vec<usize>>,
) -> Res<()> {
    let (name, pattern) = split_index_name_value(part).map_err(Fail::Error)?;
    for attempt in 0..2 {
        check_sequence(node, "")?;
        let before = out.len();
        let mut regex: Option<Regex> = None;
        for i in 0..node.content.len() {
            let re = match &regex {
                Some(re) => re,
                None => regex.insert(compile_regex(pattern).map_err(Fail::Error)?),
            };
            let Some(elem) = node.content.get_mut(i) else {
                break;
            };
            if name.is_empty() {
                let text = yaml::to_string(elem).unwrap_or_default();
                if re.is_match(text.trim()) {
                    at.push(i);
                    out.push(at.clone());
                    at.pop();
                }
                continue;
            }
            let Some(val) = field_value(elem, name) else {
                continue;
            };
            let text = yaml::to_string(val).unwrap_or_default();
            if !re.is_match(text.trim()) {
                continue;
            }
            at.push(i);
            let result = path_match(elem, rest, create, at, out);
            at.pop();
            result?;
        }
        if out.len() > before || create.is_none() || attempt == 1 {
            return Ok(());
        }
        let mut value = Node::new_scalar("", pattern);
        value.tag = Cow::Borrowed("");
        let elem = if name.is_empty() {
            value
        } else {
            let mut key = Node::new_scalar("", name);
            key.tag = Cow::Borrowed("");
            let mut map = created(Kind::Mapping);
            map.content.push(key);
            map.content.push(value);
            map
        };
        node.content.push(elem);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::annotations::{INDEX, PATH};

    fn doc(text: &str) -> Node {
        yaml::parse_document(text).expect("parses")
    }

    fn run_on(items: &[&str], config: &str) -> FnOutput {
        run(FnInput {
            items: items.iter().map(|t| doc(t)).collect(),
            function_config: Some(doc(config)),
        })
    }

    fn text(out: &FnOutput, i: usize) -> String {
        yaml::to_string(&out.items[i]).expect("emits")
    }

    /// The single error result and the SDK failure.
    fn assert_error(out: &FnOutput, message: &str) {
        assert_eq!(out.failure.as_deref(), Some(FUNCTION_FAILURE));
        assert_eq!(out.results.len(), 1, "{:?}", out.results);
        assert_eq!(out.results[0].message, message);
        assert!(out.results[0].is_error());
    }

    fn config(replacements: &str) -> String {
        format!(
            "apiVersion: fn.kpt.dev/v1alpha1\nkind: ApplyReplacements\nmetadata:\n  name: r\n\
             replacements:\n{replacements}"
        )
    }

    const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  namespace: ns\n\
                      data:\n  PORT: \"8080\"\n  HOST: a.example.com\n  LIST: a,b,c\n";
    const DEPLOY: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: deploy\n\
                          spec:\n  replicas: 1\n  template:\n    spec:\n      containers:\n\
                          \x20     - name: app # the app\n        image: app:1\n        \
                          args: [\"--port\", 'x']\n      - name: sidecar\n        \
                          image: side:1\n";

    /// The catalog's `apply-replacements/example-simple` case.
    #[test]
    fn catalog_example_simple() {
        let resources = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: my-pod\nspec:\n  \
                         containers:\n    - image: busybox\n      name: myapp-container\n  \
                         restartPolicy: OnFailure\n";
        let job = "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: hello\n";
        let cfg = "apiVersion: fn.kpt.dev/v1alpha1\nkind: ApplyReplacements\nmetadata:\n  \
                   name: replacements-fn-config\nreplacements:\n  - source:\n      kind: Pod\n      \
                   name: my-pod\n      fieldPath: spec\n    targets:\n      - select:\n          \
                   name: hello\n          kind: Job\n        fieldPaths:\n          - \
                   spec.template.spec\n        options:\n          create: true\n";
        let annotated = |text: &str, path: &str| {
            let mut d = doc(text);
            d.set_annotation(PATH, path).expect("path");
            d.set_annotation(INDEX, "0").expect("index");
            d
        };
        let items = vec![
            annotated(job, "job.yaml"),
            annotated(cfg, "replacements.yaml"),
            annotated(resources, "resources.yaml"),
        ];
        let before_pod = yaml::to_string(&items[2]).expect("emits");
        let before_cfg = yaml::to_string(&items[1]).expect("emits");
        let out = run(FnInput {
            items,
            function_config: Some(doc(cfg)),
        });
        assert_eq!(out.failure, None);
        assert!(out.results.is_empty());
        assert_eq!(
            text(&out, 0),
            "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: hello\n  annotations:\n    \
             internal.config.kubernetes.io/path: job.yaml\n    \
             internal.config.kubernetes.io/index: \"0\"\nspec:\n  template:\n    spec:\n      \
             containers:\n      - image: busybox\n        name: myapp-container\n      \
             restartPolicy: OnFailure\n"
        );
        assert_eq!(text(&out, 1), before_cfg);
        assert_eq!(text(&out, 2), before_pod);
    }

    #[test]
    fn scalar_target_keeps_its_style_and_tag() {
        let out = run_on(
            &[CM, DEPLOY],
            &config(
                "- source: {kind: ConfigMap, name: cm, fieldPath: data.PORT}\n  targets:\n  \
                 - select: {kind: Deployment}\n    fieldPaths:\n    - spec.replicas\n    \
                 - spec.template.spec.containers.[name=app].args.1\n",
            ),
        );
        assert_eq!(out.failure, None, "{:?}", out.results);
        let t = text(&out, 1);
        assert!(t.contains("  replicas: 8080\n"), "{t}");
        assert!(t.contains("args: [\"--port\", '8080']"), "{t}");
        assert!(t.contains("- name: app # the app\n"), "{t}");
        assert_eq!(text(&out, 0), yaml::to_string(&doc(CM)).expect("emits"));
    }

    #[test]
    fn non_scalar_target_is_replaced_by_a_copy() {
        let out = run_on(
            &[CM, DEPLOY],
            &config(
                "- source: {kind: ConfigMap, fieldPath: data}\n  targets:\n  \
                 - select: {kind: Deployment}\n    fieldPaths: [spec.template]\n",
            ),
        );
        assert_eq!(out.failure, None, "{:?}", out.results);
        assert_eq!(
            text(&out, 1),
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: deploy\nspec:\n  \
             replicas: 1\n  template:\n    PORT: \"8080\"\n    HOST: a.example.com\n    \
             LIST: a,b,c\n"
        );
    }

    #[test]
    fn default_field_path_is_metadata_name_and_source_value() {
        let out = run_on(
            &[CM, DEPLOY],
            &config(
                "- source: {kind: ConfigMap}\n  targets:\n  - select: {kind: Deployment}\n\
                 - sourceValue: \"5\"\n  targets:\n  - select: {kind: Deployment}\n    \
                 fieldPaths: [spec.replicas, spec.template.spec.containers.*.image]\n",
            ),
        );
        assert_eq!(out.failure, None, "{:?}", out.results);
        let t = text(&out, 1);
        assert!(t.contains("  name: cm\n"), "{t}");
        assert!(t.contains("  replicas: 5\n"), "{t}");
        assert_eq!(t.matches("image: \"5\"\n").count(), 2, "{t}");
    }

    #[test]
    fn delimiter_options_on_source_and_target() {
        let out = run_on(
            &[CM, DEPLOY],
            &config(
                "- source:\n    kind: ConfigMap\n    fieldPath: data.LIST\n    \
                 options: {delimiter: ',', index: 1}\n  targets:\n  \
                 - select: {kind: Deployment}\n    fieldPaths: \
                 [spec.template.spec.containers.0.image]\n    \
                 options: {delimiter: ':', index: 1}\n  \
                 - select: {kind: Deployment}\n    fieldPaths: \
                 [spec.template.spec.containers.1.image]\n    \
                 options: {delimiter: ':', index: -1}\n  \
                 - select: {kind: Deployment}\n    fieldPaths: [metadata.name]\n    \
                 options: {delimiter: '-', index: 5}\n",
            ),
        );
        assert_eq!(out.failure, None, "{:?}", out.results);
        let t = text(&out, 1);
        assert!(t.contains("image: app:b\n"), "{t}");
        assert!(t.contains("image: b:side:1\n"), "{t}");
        assert!(t.contains("name: deploy-b\n"), "{t}");
    }

    #[test]
    fn create_option_creates_paths_with_the_value_kind() {
        let out = run_on(
            &[CM, DEPLOY],
            &config(
                "- source: {kind: ConfigMap, fieldPath: data.HOST}\n  targets:\n  \
                 - select: {kind: Deployment}\n    fieldPaths:\n    \
                 - spec.template.metadata.annotations.[example.com/host]\n    \
                 - spec.template.spec.containers.[name=new].env.0.value\n    \
                 options: {create: true}\n",
            ),
        );
        assert_eq!(out.failure, None, "{:?}", out.results);
        assert_eq!(
            text(&out, 1),
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: deploy\nspec:\n  \
             replicas: 1\n  template:\n    spec:\n      containers:\n      - name: app # the \
             app\n        image: app:1\n        args: [\"--port\", 'x']\n      - name: \
             sidecar\n        image: side:1\n      - name: new\n        env:\n        - \
             value: a.example.com\n    metadata:\n      annotations:\n        \
             example.com/host: a.example.com\n"
        );
    }

    #[test]
    fn targets_select_by_regex_labels_and_reject() {
        let d = |name: &str, labels: &str| {
            format!(
                "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n  \
                 labels: {{{labels}}}\nspec:\n  replicas: 1\n"
            )
        };
        let (d1, d2, d3, d4) = (
            d("web-1", "tier: web"),
            d("web-2", "tier: web, skip: x"),
            d("db-1", "tier: db"),
            d("web-3", "tier: web"),
        );
        let out = run_on(
            &[CM, &d1, &d2, &d3, &d4],
            &config(
                "- source: {kind: ConfigMap, fieldPath: data.PORT}\n  targets:\n  \
                 - select: {name: 'web-.*', labelSelector: 'tier in (web),tier!=db'}\n    \
                 reject:\n    - {labelSelector: skip}\n    - {name: web-3}\n    \
                 fieldPaths: [spec.replicas]\n",
            ),
        );
        assert_eq!(out.failure, None, "{:?}", out.results);
        let replicas: Vec<bool> = (1..5)
            .map(|i| text(&out, i).contains("replicas: 8080"))
            .collect();
        assert_eq!(replicas, [true, false, false, false]);
    }

    #[test]
    fn replacements_apply_in_order() {
        let out = run_on(
            &[CM, DEPLOY],
            &config(
                "- sourceValue: first\n  targets:\n  - select: {kind: ConfigMap}\n    \
                 fieldPaths: [data.HOST]\n- source: {kind: ConfigMap, fieldPath: data.HOST}\n  \
                 targets:\n  - select: {kind: Deployment}\n",
            ),
        );
        assert_eq!(out.failure, None, "{:?}", out.results);
        assert!(text(&out, 0).contains("HOST: first\n"));
        assert!(text(&out, 1).contains("  name: first\n"));
    }

    #[test]
    fn source_by_previous_name_and_default_namespace() {
        let renamed = "apiVersion: v1\nkind: Service\nmetadata:\n  name: new\n  annotations:\n    \
                       internal.config.kubernetes.io/previousNames: old\n    \
                       internal.config.kubernetes.io/previousNamespaces: default\n    \
                       internal.config.kubernetes.io/previousKinds: Service\n";
        let out = run_on(
            &[renamed, DEPLOY],
            &config(
                "- source: {kind: Service, name: old, namespace: default}\n  targets:\n  \
                 - select: {kind: Deployment}\n",
            ),
        );
        assert_eq!(out.failure, None, "{:?}", out.results);
        assert!(text(&out, 1).contains("  name: new\n"));
    }

    #[test]
    fn config_errors() {
        let out = run(FnInput {
            items: vec![doc(CM)],
            function_config: None,
        });
        assert_error(
            &out,
            "FunctionConfig is missing. Expect `ApplyReplacements`",
        );
        assert_eq!(text(&out, 0), yaml::to_string(&doc(CM)).expect("emits"));
        let out = run_on(&[CM], "apiVersion: v1\nkind: ConfigMap\ndata: {}\n");
        assert_error(
            &out,
            "received functionConfig of kind ConfigMap and apiVersion v1, only functionConfig \
             of kind ApplyReplacements and apiVersion fn.kpt.dev/v1alpha1 is supported",
        );
        let out = run_on(
            &[CM],
            &config("- source: {kind: ConfigMap, options: {index: x}}\n  targets: []\n"),
        );
        assert_error(
            &out,
            "unable to convert functionConfig to replacements:\nunable to convert object to \
             *replacements.Replacements with error: json: cannot unmarshal string into Go struct \
             field FieldOptions.replacements.source.options.index of type int",
        );
        let out = run_on(&[CM], &config("- targets: {a: b}\n"));
        assert_error(
            &out,
            "unable to convert functionConfig to replacements:\nunable to convert object to \
             *replacements.Replacements with error: json: cannot unmarshal object into Go struct \
             field Replacement.replacements.targets of type []*types.TargetSelector",
        );
    }

    #[test]
    fn replacement_errors() {
        let cases: &[(&str, &str)] = &[
            (
                "- source: {kind: ConfigMap}\n",
                "replacements must specify a source and at least one target",
            ),
            (
                "- sourceValue: x\n  source: {kind: ConfigMap}\n  targets: []\n",
                "value and resource selectors are mutually exclusive",
            ),
            (
                "- source: {kind: Secret, fieldPath: data}\n  targets: []\n",
                "nothing selected by ~G_~V_Secret/[noName]_[noNs]:data",
            ),
            (
                "- source: {options: {create: true}}\n  targets: []\n",
                "multiple matches for selector ~G_~V_~K/[noName]_[noNs]:(0), create=true",
            ),
            (
                "- source: {kind: ConfigMap, fieldPath: data.NOPE}\n  targets: []\n",
                "fieldPath `data.NOPE` is missing for replacement source \
                 ~G_~V_ConfigMap/[noName]_[noNs]",
            ),
            (
                "- source: {kind: ConfigMap, fieldPath: data.PORT.x}\n  targets: []\n",
                "error looking up replacement source: wrong Node Kind for data.PORT expected: \
                 MappingNode was ScalarNode: value: {\"8080\"}",
            ),
            (
                "- source: {kind: ConfigMap, fieldPath: data, options: {delimiter: ','}}\n  \
                 targets: []\n",
                "delimiter option can only be used with scalar nodes",
            ),
            (
                "- source: {kind: ConfigMap, fieldPath: data.LIST, options: {delimiter: ',', \
                 index: 3}}\n  targets: []\n",
                "options.index 3 is out of bounds for value a,b,c",
            ),
            (
                "- source: {kind: ConfigMap}\n  targets:\n  - fieldPaths: [a]\n",
                "target must specify resources to select",
            ),
            (
                "- source: {kind: ConfigMap}\n  targets:\n  - select: {kind: Deployment}\n    \
                 fieldPaths: [spec.nope]\n",
                "unable to find field \"spec.nope\" in replacement target",
            ),
            (
                "- source: {kind: ConfigMap}\n  targets:\n  - select: {kind: Deployment}\n    \
                 fieldPaths: [spec.replicas.x]\n    options: {create: true}\n",
                "unable to find or create field \"spec.replicas.x\" in replacement target: wrong \
                 Node Kind for  expected: MappingNode was ScalarNode: value: {1}",
            ),
            (
                "- source: {kind: ConfigMap, fieldPath: data.PORT}\n  targets:\n  \
                 - select: {kind: Deployment}\n    fieldPaths: [spec.template]\n    \
                 options: {delimiter: ','}\n",
                "delimiter option can only be used with scalar nodes",
            ),
            (
                "- source: {kind: ConfigMap}\n  targets:\n  - select: {name: '(x'}\n",
                "error creating target selector: error parsing regexp: missing closing ): \
                 `^(?:(x)$`",
            ),
            (
                "- source: {kind: ConfigMap}\n  targets:\n  - select: {labelSelector: 'a in b'}\n",
                "unable to parse requirement: found 'b' expected: '('",
            ),
            (
                "- source: {kind: ConfigMap}\n  targets:\n  - select: {labelSelector: '-a'}\n",
                "unable to parse requirement: invalid label key \"-a\": name part must consist \
                 of alphanumeric characters, '-', '_' or '.', and must start and end with an \
                 alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used \
                 for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            ),
        ];
        for (replacements, message) in cases {
            let out = run_on(&[CM, DEPLOY], &config(replacements));
            assert_eq!(
                out.results.first().map(|r| r.message.as_str()),
                Some(*message)
            );
            assert_error(&out, message);
            assert_eq!(text(&out, 1), yaml::to_string(&doc(DEPLOY)).expect("emits"));
        }
    }

    #[test]
    fn a_null_target_panics_like_go() {
        let out = run_on(
            &[CM],
            &config("- source: {kind: ConfigMap}\n  targets: [null]\n"),
        );
        assert!(out.results.is_empty());
        assert_eq!(
            out.failure.as_deref(),
            Some(
                "KRM function panicked with: runtime error: invalid memory address or nil \
                  pointer dereference"
            )
        );
    }

    #[test]
    fn path_splitting() {
        assert_eq!(
            smarter_path_split("a.[name=x.y].c.[app.kubernetes.io/app]"),
            ["a", "[name=x.y]", "c", "app.kubernetes.io/app"]
        );
        assert_eq!(smarter_path_split(".a\\.b.c"), ["a.b", "c"]);
    }

    #[test]
    fn primitive_elements_annotation_selector_and_wildcard_errors() {
        let annotated = DEPLOY.replace(
            "  name: deploy\n",
            "  name: deploy\n  annotations:\n    team: a\n",
        );
        let out = run_on(
            &[CM, &annotated],
            &config(
                "- sourceValue: --listen\n  targets:\n  \
                 - select: {annotationSelector: team=a}\n    fieldPaths:\n    \
                 - spec.template.spec.containers.*.args.[=port]\n",
            ),
        );
        assert_eq!(out.failure, None, "{:?}", out.results);
        assert!(
            text(&out, 1).contains("args: [\"--listen\", 'x']"),
            "{}",
            text(&out, 1)
        );
        let out = run_on(
            &[CM, DEPLOY],
            &config(
                "- sourceValue: x\n  targets:\n  - select: {kind: Deployment}\n    \
                 fieldPaths: [spec.*]\n",
            ),
        );
        assert_error(
            &out,
            "unable to find field \"spec.*\" in replacement target: wrong Node Kind for  \
             expected: SequenceNode was MappingNode: value: {replicas: 1\ntemplate:\n  spec:\n    \
             containers:\n    - name: app # the app\n      image: app:1\n      args: \
             [\"--port\", 'x']\n    - name: sidecar\n      image: side:1}",
        );
    }
}
