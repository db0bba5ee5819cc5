//! The catalog's `set-labels` function (`functions/go/set-labels`), built on
//! the kpt function SDK (`fn.WithContext` + `runnerProcessor`).
//!
//! Labels are written with the SDK's `SetNestedString` semantics: a key that
//! exists with another value is replaced in place (keeping its comments), a
//! missing key is appended (with the mappings leading to it) when the field
//! may be created. Reads follow the SDK's `NestedString`, so a path that runs
//! through something other than a mapping, or ends on a value that is not a
//! string, is an error for that object.

use std::collections::BTreeMap;

use crate::render::annotations as ann;
use crate::render::result::FnResult;
use crate::yaml::{Kind, Node};

use super::{FnInput, FnOutput, FUNCTION_FAILURE};

/// What the SDK prints on stderr when the processor returns `false`.
pub(super) const FAILURE_STDERR: &str = "failed to evaluate function: error: function failure";

/// What a Go nil-pointer dereference prints (the function crashes).
const NIL_POINTER_PANIC: &str =
    "panic: runtime error: invalid memory address or nil pointer dereference";

/// Runs `set-labels` on the items.
pub fn run(input: FnInput) -> FnOutput {
    let mut items = input.items;
    let config = input.function_config.as_ref().map(Node::root);
    let mut results = Vec::new();

    let not_given = config.is_none_or(|c| c.kind == Kind::Mapping && c.content.is_empty())
        || config.is_some_and(sdk_empty_function_config);
    let mut labels = BTreeMap::new();
    if not_given {
        results.push(FnResult::info("`FunctionConfig` is not given"));
    } else if let Some(c) = config {
        match read_config(c) {
            Ok(l) => labels = l,
            Err(message) => {
                results.push(FnResult::error(message));
                return failed(items, results);
            }
        }
    }

    let selected: Vec<usize> = (0..items.len())
        .filter(|&i| {
            items
                .get(i)
                .is_some_and(|item| !sdk_is_local_config(item.root()))
        })
        .collect();
    if selected.is_empty() {
        results.push(FnResult::info("no input resources"));
        return done(items, results);
    }
    if config.is_none_or(empty_fn_config) {
        return failed(items, results);
    }
    if labels.is_empty() {
        results.push(FnResult::warning(
            "no `labels` arguments are given in FunctionConfig",
        ));
        return done(items, results);
    }

    let backup = selected
        .iter()
        .any(|&i| items.get(i).is_some_and(|item| may_crash(item.root())))
        .then(|| items.clone());
    let labels: Vec<(String, String)> = labels.into_iter().collect();
    let mut setter = Setter {
        labels: &labels,
        count: 0,
    };
    let mut run_results = Vec::new();
    for &i in &selected {
        let Some(item) = items.get_mut(i) else {
            continue;
        };
        match setter.object(item.root_mut()) {
            Ok(()) => {}
            Err(Stop::Error(message)) => run_results.push(FnResult::error(message)),
            Err(Stop::Crash) => {
                return FnOutput {
                    items: backup.unwrap_or(items),
                    stderr: NIL_POINTER_PANIC.to_string(),
                    failure: Some(NIL_POINTER_PANIC.to_string()),
                    ..FnOutput::default()
                };
            }
        }
    }
    run_results.push(FnResult::info(format!(
        "set {} labels in total",
        setter.count
    )));
    let failed_run = run_results.iter().any(FnResult::is_error);
    results.extend(run_results);
    if failed_run {
        failed(items, results)
    } else {
        done(items, results)
    }
}

fn done(items: Vec<Node>, results: Vec<FnResult>) -> FnOutput {
    FnOutput {
        items,
        results,
        ..FnOutput::default()
    }
}

fn failed(items: Vec<Node>, results: Vec<FnResult>) -> FnOutput {
    FnOutput {
        items,
        results,
        stderr: FAILURE_STDERR.to_string(),
        failure: Some(FUNCTION_FAILURE.to_string()),
    }
}

/// Why an object's processing stopped.
enum Stop {
    /// An error the SDK reports as an error result.
    Error(String),
    /// The Go code dereferences a nil pointer.
    Crash,
}

impl From<String> for Stop {
    fn from(message: String) -> Stop {
        Stop::Error(message)
    }
}

// ---------------------------------------------------------------------------
// The SDK's view of objects.

/// A string value as the SDK's `GetNestedString` reads it: a scalar tagged
/// `!!str`.
fn sdk_string(node: &Node) -> Option<&str> {
    (node.kind == Kind::Scalar && node.tag == "!!str").then_some(node.value.as_str())
}

/// The value of `key` in a mapping (the SDK's `getValueNode`: keys that are
/// string scalars, first match); `None` for anything but a mapping.
fn map_get<'a>(node: &'a Node, key: &str) -> Option<&'a Node> {
    if node.kind != Kind::Mapping {
        return None;
    }
    node.get(key)
}

fn map_get_mut<'a>(node: &'a mut Node, key: &str) -> Option<&'a mut Node> {
    if node.kind != Kind::Mapping {
        return None;
    }
    node.get_mut(key)
}

/// `GetNestedString` on a path of mapping keys.
fn nested_string_value(root: &Node, path: &[&str]) -> Option<String> {
    let mut cur = root;
    for key in path {
        cur = map_get(cur, key)?;
    }
    sdk_string(cur).map(str::to_string)
}

/// `KubeObject.IsLocalConfig`.
fn sdk_is_local_config(root: &Node) -> bool {
    nested_string_value(root, &["metadata", "annotations", ann::LOCAL_CONFIG])
        .is_some_and(|v| !v.is_empty() && v != "false")
}

/// Group, version and kind from `apiVersion` and `kind`
/// (`KubeObject.GroupVersionKind`: an unparsable apiVersion gives an empty
/// triple).
pub(super) fn group_version_kind(root: &Node) -> (String, String, String) {
    let api_version = nested_string_value(root, &["apiVersion"]).unwrap_or_default();
    let kind = nested_string_value(root, &["kind"]).unwrap_or_default();
    match parse_group_version(&api_version) {
        Some((g, v)) => (g, v, kind),
        None => Default::default(),
    }
}

/// `schema.ParseGroupVersion`.
fn parse_group_version(gv: &str) -> Option<(String, String)> {
    if gv.is_empty() || gv == "/" {
        return Some(Default::default());
    }
    match gv.matches('/').count() {
        0 => Some((String::new(), gv.to_string())),
        1 => gv
            .split_once('/')
            .map(|(g, v)| (g.to_string(), v.to_string())),
        _ => None,
    }
}

/// `GroupKind.String()`.
fn group_kind_string(group: &str, kind: &str) -> String {
    if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    }
}

/// The SDK's deprecated `IsGVK`: only the parts given on both sides must
/// match.
fn is_gvk(gvk: &(String, String, String), group: &str, version: &str, kind: &str) -> bool {
    let (g, v, k) = gvk;
    !(!k.is_empty() && !kind.is_empty() && k != kind
        || !g.is_empty() && !group.is_empty() && g != group
        || !v.is_empty() && !version.is_empty() && v != version)
}

/// `NestedStringMap("data")` of a ConfigMap: `Ok(None)` when absent, an
/// error message when `data` is not a mapping or its keys repeat.
fn nested_string_map(root: &Node, field: &str) -> Result<Option<BTreeMap<String, String>>, String> {
    let Some(data) = map_get(root, field) else {
        return Ok(None);
    };
    if data.kind != Kind::Mapping {
        return Err(unmatched_field(
            &object_context(root),
            &[field],
            "map[string]string",
        ));
    }
    let mut duplicates = Vec::new();
    let pairs: Vec<(&Node, &Node)> = data.pairs().collect();
    for (i, (ki, _)) in pairs.iter().enumerate() {
        for (kj, _) in pairs.iter().skip(i + 1) {
            if ki.kind == kj.kind && ki.value == kj.value {
                duplicates.push(format!(
                    "line {}: mapping key {:?} already defined at line {}",
                    kj.line, kj.value, ki.line
                ));
            }
        }
    }
    if !duplicates.is_empty() {
        return Err(format!(
            "yaml: unmarshal errors:\n  {}",
            duplicates.join("\n  ")
        ));
    }
    let mut map = BTreeMap::new();
    for (k, v) in pairs {
        if k.kind != Kind::Scalar || v.kind != Kind::Scalar {
            continue;
        }
        let value = if v.tag == "!!null" {
            String::new()
        } else {
            v.value.clone()
        };
        map.insert(k.value.clone(), value);
    }
    Ok(Some(map))
}

/// The SDK's `EmptyFunctionConfig`: the ConfigMap `function-input` with an
/// empty `data` mapping.
fn sdk_empty_function_config(config: &Node) -> bool {
    let data = match nested_string_map(config, "data") {
        Ok(Some(d)) => d,
        _ => return false,
    };
    nested_string_value(config, &["kind"]).as_deref() == Some("ConfigMap")
        && nested_string_value(config, &["metadata", "name"]).as_deref() == Some("function-input")
        && data.is_empty()
}

/// set-labels' own `EmptyfnConfig`.
fn empty_fn_config(config: &Node) -> bool {
    let kind = nested_string_value(config, &["kind"]).unwrap_or_default();
    let name = nested_string_value(config, &["metadata", "name"]).unwrap_or_default();
    if kind == "ConfigMap" && name == "function-input" {
        return nested_string_map(config, "data")
            .ok()
            .flatten()
            .is_none_or(|d| d.is_empty());
    }
    kind.is_empty() && name.is_empty()
}

/// `runnerProcessor.config` for `SetLabels`.
fn read_config(config: &Node) -> Result<BTreeMap<String, String>, String> {
    let (group, _, kind) = group_version_kind(config);
    if group.is_empty() && kind == "ConfigMap" {
        return match nested_string_map(config, "data")? {
            Some(data) => Ok(data),
            None => Ok(BTreeMap::new()),
        };
    }
    if group == "fn.kpt.dev" && kind == "SetLabels" {
        return decode_set_labels(config).map_err(|e| {
            format!("unable to convert object to *setlabels.SetLabels with error: {e}")
        });
    }
    Err(format!(
        "unknown FunctionConfig `{}`, expect `SetLabels.fn.kpt.dev` or `ConfigMap.v1`",
        group_kind_string(&group, &kind)
    ))
}

/// The JSON type name Go's `encoding/json` reports for a YAML node decoded
/// by yaml.v3 into `interface{}` and marshalled back.
fn json_type(node: &Node) -> &'static str {
    match node.kind {
        Kind::Mapping => "object",
        Kind::Sequence => "array",
        _ => match node.tag.as_ref() {
            "!!int" | "!!float" => "number",
            "!!bool" => "bool",
            "!!null" => "null",
            _ => "string",
        },
    }
}

/// `json.Unmarshal` of the config (as JSON) into
/// `struct { Labels map[string]string "json:labels" }`: JSON keys are taken
/// in sorted order and matched to the field case-insensitively.
fn decode_set_labels(config: &Node) -> Result<BTreeMap<String, String>, String> {
    let mut fields: Vec<(&str, &Node)> = config
        .pairs()
        .filter(|(k, _)| k.kind == Kind::Scalar && k.value.eq_ignore_ascii_case("labels"))
        .map(|(k, v)| (k.value.as_str(), v))
        .collect();
    fields.sort_by(|a, b| a.0.cmp(b.0));
    let mut labels: Option<BTreeMap<String, String>> = None;
    let mut first_error = None;
    let mut type_error = |what: &str, of: &str| {
        if first_error.is_none() {
            first_error = Some(format!(
                "json: cannot unmarshal {what} into Go struct field SetLabels.labels of type {of}"
            ));
        }
    };
    for (_, value) in fields {
        match json_type(value) {
            "null" => labels = None,
            "object" => {
                let map = labels.get_or_insert_with(BTreeMap::new);
                let mut entries: Vec<(&Node, &Node)> = value.pairs().collect();
                entries.sort_by(|a, b| a.0.value.cmp(&b.0.value));
                for (k, v) in entries {
                    let text = match json_type(v) {
                        "string" => v.value.clone(),
                        "null" => String::new(),
                        other => {
                            type_error(other, "string");
                            String::new()
                        }
                    };
                    map.insert(k.value.clone(), text);
                }
            }
            other => type_error(other, "map[string]string"),
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(labels.unwrap_or_default()),
    }
}

// ---------------------------------------------------------------------------
// The transformer.

/// Where a sub-object sits, for the SDK's `ErrUnmatchedField` message.
#[derive(Clone, Default)]
struct Context {
    /// `parentGVK.GroupVersion()`, printed.
    group_version: String,
    /// `parentGVK.Kind`.
    kind: String,
    /// The dotted field path of the sub-object (`""` for an object).
    path: String,
}

impl Context {
    fn child(&self, key: &str) -> Context {
        Context {
            path: format!("{}.{key}", self.path),
            ..self.clone()
        }
    }
}

/// The context of an object: the SDK reads its parent GVK from top-level
/// `group`, `version` and `kind` fields.
fn object_context(root: &Node) -> Context {
    let group = nested_string_value(root, &["group"]).unwrap_or_default();
    let version = nested_string_value(root, &["version"]).unwrap_or_default();
    let kind = nested_string_value(root, &["kind"]).unwrap_or_default();
    let group_version = if group.is_empty() {
        version
    } else {
        format!("{group}/{version}")
    };
    Context {
        group_version,
        kind,
        path: String::new(),
    }
}

/// `NewErrUnmatchedField(...).Error()`.
fn unmatched_field(ctx: &Context, fields: &[&str], data_type: &str) -> String {
    format!(
        "Resource(apiVersion={}, kind={}) has unmatched field type {:?} in fieldpath {}.{}",
        ctx.group_version,
        ctx.kind,
        data_type,
        ctx.path,
        fields.join(".")
    )
}

/// `GetNestedString` on a path: `Ok(None)` when a key is missing, `Err` when
/// the path crosses a non-mapping or ends on a non-string.
fn nested_string(node: &Node, fields: &[&str]) -> Result<Option<String>, ()> {
    let mut cur = node;
    for (i, key) in fields.iter().enumerate() {
        let Some(next) = map_get(cur, key) else {
            return Ok(None);
        };
        if i + 1 == fields.len() {
            return sdk_string(next).map(|s| Some(s.to_string())).ok_or(());
        }
        if next.kind != Kind::Mapping {
            return Err(());
        }
        cur = next;
    }
    Ok(None)
}

/// `SetNestedString`: creates missing mappings (appended), replaces or
/// appends the value. A sub-object that is not a mapping takes nothing
/// visible (the SDK appends to the content of a scalar, which is never
/// written).
fn set_nested_string(node: &mut Node, fields: &[&str], value: &str) {
    let Some((last, parents)) = fields.split_last() else {
        return;
    };
    let mut cur = node;
    for key in parents {
        if cur.kind != Kind::Mapping {
            return;
        }
        let i = match cur.key_index(key) {
            Some(i) => i,
            None => {
                cur.content.push(Node::new_string(*key));
                cur.content.push(Node::new_mapping());
                cur.content.len() - 2
            }
        };
        match cur.content.get_mut(i + 1) {
            Some(next) => cur = next,
            None => return,
        }
    }
    if cur.kind == Kind::Mapping {
        let _ = cur.set(last, Node::new_string(value));
    }
}

/// Elements of a sequence as the SDK's `NestedSlice` gives them: `Ok(None)`
/// when absent, an error when not a sequence or an element is not a
/// mapping.
fn nested_slice<'a>(
    node: &'a mut Node,
    ctx: &Context,
    key: &str,
) -> Result<Option<Vec<&'a mut Node>>, String> {
    let Some(value) = map_get_mut(node, key) else {
        return Ok(None);
    };
    if value.kind != Kind::Sequence {
        return Err(unmatched_field(ctx, &[key], "struct {}"));
    }
    if let Some(bad) = value.content.iter().find(|e| e.kind != Kind::Mapping) {
        return Err(format!("unhandled node kind {}", go_kind_number(bad.kind)));
    }
    Ok(Some(value.content.iter_mut().collect()))
}

/// `GetSlice`: [`nested_slice`] with errors dropped.
fn get_slice<'a>(node: &'a mut Node, key: &str) -> Vec<&'a mut Node> {
    nested_slice(node, &Context::default(), key)
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// yaml.v3's numeric `Kind`.
fn go_kind_number(kind: Kind) -> u8 {
    match kind {
        Kind::Document => 1,
        Kind::Sequence => 2,
        Kind::Mapping => 4,
        Kind::Scalar => 8,
        Kind::Alias => 16,
    }
}

/// Whether the Go code would dereference a nil pointer on this object: a
/// `batch` CronJob whose `spec.jobTemplate` exists without a `spec` key.
fn may_crash(root: &Node) -> bool {
    let gvk = group_version_kind(root);
    if !is_gvk(&gvk, "batch", "", "CronJob") {
        return false;
    }
    let Some(template) = map_get(root, "spec").and_then(|s| map_get(s, "jobTemplate")) else {
        return false;
    };
    map_get(template, "spec").is_none()
}

struct Setter<'a> {
    labels: &'a [(String, String)],
    count: usize,
}

impl Setter<'_> {
    /// `updateLabels`.
    fn update(
        &mut self,
        node: &mut Node,
        ctx: &Context,
        path: &[&str],
        create: bool,
    ) -> Result<(), String> {
        for (key, value) in self.labels {
            let mut fields: Vec<&str> = path.to_vec();
            fields.push(key);
            let old = nested_string(node, &fields)
                .map_err(|()| unmatched_field(ctx, &fields, "string"))?;
            let write = match &old {
                Some(old) => old != value,
                None => create,
            };
            if write {
                set_nested_string(node, &fields, value);
            }
            self.count += 1;
        }
        Ok(())
    }

    /// The body of `Run`'s per-object closure.
    fn object(&mut self, root: &mut Node) -> Result<(), Stop> {
        let gvk = group_version_kind(root);
        let ctx = object_context(root);
        self.update(root, &ctx, &["metadata", "labels"], true)?;

        if is_gvk(&gvk, "", "v1", "Service") || is_gvk(&gvk, "", "v1", "ReplicationController") {
            self.update(root, &ctx, &["spec", "selector"], true)?;
        }
        let label_selector = if is_gvk(&gvk, "", "", "Deployment")
            || is_gvk(&gvk, "", "", "ReplicaSet")
            || is_gvk(&gvk, "", "", "DaemonSet")
            || is_gvk(&gvk, "apps", "", "StatefulSet")
        {
            Some(true)
        } else if is_gvk(&gvk, "batch", "", "Job")
            || is_gvk(&gvk, "policy", "", "PodDisruptionBudget")
        {
            Some(false)
        } else {
            None
        };
        if let Some(create) = label_selector {
            self.update(root, &ctx, &["spec", "selector", "matchLabels"], create)?;
        }
        let network_policy = is_gvk(&gvk, "networking.k8s.io", "", "NetworkPolicy");
        if network_policy {
            self.update(root, &ctx, &["spec", "podSelector", "matchLabels"], false)?;
        }

        let spec_ctx = ctx.child("spec");
        let Some(spec) = map_get_mut(root, "spec") else {
            return Ok(());
        };
        let pod_spec = is_gvk(&gvk, "", "v1", "ReplicationController")
            || is_gvk(&gvk, "", "", "Deployment")
            || is_gvk(&gvk, "", "", "ReplicaSet")
            || is_gvk(&gvk, "", "", "DaemonSet")
            || is_gvk(&gvk, "apps", "", "StatefulSet")
            || is_gvk(&gvk, "batch", "", "Job");
        if pod_spec {
            if let Some(template) = map_get_mut(spec, "template") {
                if self.pod(template, &spec_ctx.child("template")).is_err() {
                    return Ok(());
                }
            }
        }
        if is_gvk(&gvk, "batch", "", "CronJob") {
            if let Some(job) = map_get_mut(spec, "jobTemplate") {
                self.job(job, &spec_ctx.child("jobTemplate"))?;
            }
        }
        if is_gvk(&gvk, "apps", "", "StatefulSet") {
            if let Some(volumes) = nested_slice(spec, &spec_ctx, "volumeClaimTemplates")? {
                for volume in volumes {
                    let vctx = Context::default();
                    self.update(volume, &vctx, &["metadata", "labels"], true)?;
                    self.update(volume, &vctx, &["selector", "matchLabels"], false)?;
                }
            }
        }
        if network_policy {
            for rules in [("ingress", "from"), ("egress", "to")] {
                for rule in get_slice(spec, rules.0) {
                    for peer in get_slice(rule, rules.1) {
                        self.update(
                            peer,
                            &Context::default(),
                            &["podSelector", "matchLabels"],
                            false,
                        )?;
                    }
                }
            }
        }
        Ok(())
    }

    /// `setLabelsInJob`.
    fn job(&mut self, job: &mut Node, ctx: &Context) -> Result<(), Stop> {
        self.update(job, ctx, &["metadata", "labels"], true)?;
        let spec_ctx = ctx.child("spec");
        let Some(spec) = map_get_mut(job, "spec") else {
            return Err(Stop::Crash);
        };
        self.update(spec, &spec_ctx, &["selector", "matchLabels"], false)?;
        match map_get_mut(spec, "template") {
            Some(pod) => Ok(self.pod(pod, &spec_ctx.child("template"))?),
            None => Ok(()),
        }
    }

    /// `setLabelsInPod` and `setLabelsInPodSpec`.
    fn pod(&mut self, pod: &mut Node, ctx: &Context) -> Result<(), String> {
        self.update(pod, ctx, &["metadata", "labels"], true)?;
        let Some(spec) = map_get_mut(pod, "spec") else {
            return Ok(());
        };
        for constraint in get_slice(spec, "topologySpreadConstraints") {
            self.update(
                constraint,
                &Context::default(),
                &["labelSelector", "matchLabels"],
                false,
            )?;
        }
        let Some(affinity) = map_get_mut(spec, "affinity") else {
            return Ok(());
        };
        for kind in ["podAffinity", "podAntiAffinity"] {
            if map_get(affinity, kind).is_none() {
                continue;
            }
            for term in get_slice(affinity, "preferredDuringSchedulingIgnoredDuringExecution") {
                if let Some(inner) = map_get_mut(term, "podAffinityTerm") {
                    self.update(
                        inner,
                        &Context::default().child("podAffinityTerm"),
                        &["labelSelector", "matchLabels"],
                        false,
                    )?;
                }
            }
            for term in get_slice(affinity, "requiredDuringSchedulingIgnoredDuringExecution") {
                self.update(
                    term,
                    &Context::default(),
                    &["labelSelector", "matchLabels"],
                    false,
                )?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::yaml::{emit_stream, parse_document, parse_stream, Format};

    const KPT_ANNOTATIONS: [&str; 5] = [
        ann::SEQ_INDENT,
        ann::LEGACY_PATH,
        ann::LEGACY_INDEX,
        ann::PATH,
        ann::INDEX,
    ];

    /// The documents of files as kpt hands them to a function.
    pub(in crate::render::builtins) fn items(files: &[(&str, &str)]) -> Vec<Node> {
        let mut out = Vec::new();
        for (path, text) in files {
            for (i, mut doc) in parse_stream(text).expect("parses").into_iter().enumerate() {
                let index = i.to_string();
                for (key, value) in [
                    (ann::LEGACY_INDEX, index.as_str()),
                    (ann::INDEX, index.as_str()),
                    (ann::LEGACY_PATH, path),
                    (ann::PATH, path),
                ] {
                    doc.set_annotation(key, value).expect("annotates");
                }
                if is_wide(text) {
                    doc.set_annotation(ann::SEQ_INDENT, "wide")
                        .expect("annotates");
                }
                out.push(doc);
            }
        }
        out
    }

    /// Whether a file indents sequences under their key.
    fn is_wide(text: &str) -> bool {
        let mut previous = "";
        for line in text.lines() {
            let trimmed = line.trim_start();
            if trimmed.starts_with("- ") && previous.trim_end().ends_with(':') {
                let indent = |l: &str| l.len() - l.trim_start().len();
                return indent(line) > indent(previous);
            }
            if !trimmed.is_empty() {
                previous = line;
            }
        }
        false
    }

    /// The text kpt writes for the items of `path` (kpt's annotations
    /// removed, an emptied annotations map dropped).
    pub(in crate::render::builtins) fn file(items: &[Node], path: &str) -> String {
        let mut docs = Vec::new();
        for item in items {
            if ann::path(item) != Some(path) {
                continue;
            }
            let mut doc = item.clone();
            let format = if ann::get(item, ann::SEQ_INDENT) == Some("wide") {
                Format::KyamlWide
            } else {
                Format::Kyaml
            };
            if let Some(meta) = doc.root_mut().get_mut("metadata") {
                if let Some(a) = meta.get_mut("annotations") {
                    for key in KPT_ANNOTATIONS {
                        a.remove(key);
                    }
                    if a.content.is_empty() {
                        meta.remove("annotations");
                    }
                }
            }
            docs.push(emit_stream(&[doc], format).expect("emits"));
        }
        docs.join("---\n")
    }

    fn config(text: &str) -> Option<Node> {
        Some(parse_document(text).expect("parses"))
    }

    fn messages(out: &FnOutput) -> Vec<(String, String)> {
        out.results
            .iter()
            .map(|r| (r.severity.clone().unwrap_or_default(), r.message.clone()))
            .collect()
    }

    fn pair(severity: &str, message: &str) -> (String, String) {
        (severity.to_string(), message.to_string())
    }

    const LOCAL_KPTFILE: &str = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: example\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\n";

    const SIMPLE_IN: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: the-map\ndata:\n  some-key: some-value\n---\napiVersion: dev.example.com/v1\nkind: MyResource\nmetadata:\n  name: the-service\n  namespace: the-namespace\nspec:\n  selector:\n    labels:\n      foo: bar\n";

    const SIMPLE_OUT: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: the-map\n  labels:\n    color: orange\n    fruit: apple\ndata:\n  some-key: some-value\n---\napiVersion: dev.example.com/v1\nkind: MyResource\nmetadata:\n  name: the-service\n  namespace: the-namespace\n  labels:\n    color: orange\n    fruit: apple\nspec:\n  selector:\n    labels:\n      foo: bar\n";

    const FUNCTION_INPUT: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: function-input\ndata:\n  color: orange\n  fruit: apple\n";

    const SETLABELS_CONFIG: &str = "apiVersion: fn.kpt.dev/v1alpha1\nkind: SetLabels\nmetadata:\n  name: my-config\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\nlabels:\n  color: orange\n  fruit: apple\n";

    const ILL_FORMATTED_CONFIG: &str = "apiVersion: fn.kpt.dev/v1alpha1\nkind: SetLabels\nmetadata:\n  name: my-config\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\nlabels:\n  - color: orange\n  - fruit: apple\n";

    const FULL_IN: &str = r#"apiVersion: v1
kind: Service
metadata:
  name: my-service
spec:
  selector:
    app: MyApp
---
apiVersion: v1
kind: ReplicationController
metadata:
  name: nginx
spec:
  replicas: 3
  selector:
    app: nginx
  template:
    metadata:
      name: nginx
      labels:
        app: nginx
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: nginx-deployment
  labels:
    app: nginx
spec:
  replicas: 3
  selector:
    matchLabels:
      app: nginx
  template:
    metadata:
      labels:
        app: nginx
---
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: frontend
  labels:
    app: guestbook
    tier: frontend
spec:
  replicas: 3
  selector:
    matchLabels:
      tier: frontend
  template:
    metadata:
      labels:
        tier: frontend
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: fluentd-elasticsearch
  namespace: kube-system
  labels:
    k8s-app: fluentd-logging
spec:
  selector:
    matchLabels:
      name: fluentd-elasticsearch
  template:
    metadata:
      labels:
        name: fluentd-elasticsearch
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
spec:
  selector:
    matchLabels:
      app: nginx
  serviceName: "nginx"
  replicas: 3
  minReadySeconds: 10
  volumeClaimTemplates:
    - metadata:
        name: www
        labels:
          key: www
      spec:
        accessModes: ["ReadWriteOnce"]
        storageClassName: "my-storage-class"
        resources:
          requests:
            storage: 1Gi
    - metadata:
        name: xxx
        labels:
          key: xxx
        spec:
          accessModes: ["ReadWrite"]
          storageClassName: "my-storage-class"
          resources:
            requests:
              storage: 1Gi
  template:
    metadata:
      labels:
        app: nginx
---
apiVersion: batch/v1
kind: Job
metadata:
  name: pi
spec:
  selector:
    matchLabels:
      name: pi
  template:
    metadata:
      labels:
        color: pi
    spec:
      containers:
        - name: pi
          image: perl:5.34
          command: ["perl", "-Mbignum=bpi", "-wle", "'print bpi(2000)'"]
      restartPolicy: Never
  backoffLimit: 4
---
apiVersion: batch/v1
kind: CronJob
metadata:
  name: hello
spec:
  schedule: "* * * * *"
  jobTemplate:
    metadata:
      labels:
        env: dev
    spec:
      selector:
        matchLabels:
          name: pi
      template:
        metadata:
          labels:
            testkey: testvalue
        spec:
          containers:
            - name: hello
              image: busybox:1.28
              imagePullPolicy: IfNotPresent
              command:
                - /bin/sh
                - -c
                - date; echo Hello from the Kubernetes cluster
          restartPolicy: OnFailure
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: hello
spec:
  selector:
    matchLabels:
      name: pi
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: test-network-policy
  namespace: default
spec:
  podSelector:
    matchLabels:
      role: db
---
apiVersion: dev.example.com/v1
kind: MyResource
metadata:
  name: the-service
  namespace: the-namespace
spec:
  selector:
    labels:
      foo: bar
"#;
    const FULL_OUT: &str = r#"apiVersion: v1
kind: Service
metadata:
  name: my-service
  labels:
    app: new
    color: orange
    fruit: apple
spec:
  selector:
    app: new
    color: orange
    fruit: apple
---
apiVersion: v1
kind: ReplicationController
metadata:
  name: nginx
  labels:
    app: new
    color: orange
    fruit: apple
spec:
  replicas: 3
  selector:
    app: new
    color: orange
    fruit: apple
  template:
    metadata:
      name: nginx
      labels:
        app: new
        color: orange
        fruit: apple
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: nginx-deployment
  labels:
    app: new
    color: orange
    fruit: apple
spec:
  replicas: 3
  selector:
    matchLabels:
      app: new
      color: orange
      fruit: apple
  template:
    metadata:
      labels:
        app: new
        color: orange
        fruit: apple
---
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: frontend
  labels:
    app: new
    tier: frontend
    color: orange
    fruit: apple
spec:
  replicas: 3
  selector:
    matchLabels:
      tier: frontend
      app: new
      color: orange
      fruit: apple
  template:
    metadata:
      labels:
        tier: frontend
        app: new
        color: orange
        fruit: apple
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: fluentd-elasticsearch
  namespace: kube-system
  labels:
    k8s-app: fluentd-logging
    app: new
    color: orange
    fruit: apple
spec:
  selector:
    matchLabels:
      name: fluentd-elasticsearch
      app: new
      color: orange
      fruit: apple
  template:
    metadata:
      labels:
        name: fluentd-elasticsearch
        app: new
        color: orange
        fruit: apple
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
  labels:
    app: new
    color: orange
    fruit: apple
spec:
  selector:
    matchLabels:
      app: new
      color: orange
      fruit: apple
  serviceName: "nginx"
  replicas: 3
  minReadySeconds: 10
  volumeClaimTemplates:
    - metadata:
        name: www
        labels:
          key: www
          app: new
          color: orange
          fruit: apple
      spec:
        accessModes: ["ReadWriteOnce"]
        storageClassName: "my-storage-class"
        resources:
          requests:
            storage: 1Gi
    - metadata:
        name: xxx
        labels:
          key: xxx
          app: new
          color: orange
          fruit: apple
        spec:
          accessModes: ["ReadWrite"]
          storageClassName: "my-storage-class"
          resources:
            requests:
              storage: 1Gi
  template:
    metadata:
      labels:
        app: new
        color: orange
        fruit: apple
---
apiVersion: batch/v1
kind: Job
metadata:
  name: pi
  labels:
    app: new
    color: orange
    fruit: apple
spec:
  selector:
    matchLabels:
      name: pi
  template:
    metadata:
      labels:
        color: orange
        app: new
        fruit: apple
    spec:
      containers:
        - name: pi
          image: perl:5.34
          command: ["perl", "-Mbignum=bpi", "-wle", "'print bpi(2000)'"]
      restartPolicy: Never
  backoffLimit: 4
---
apiVersion: batch/v1
kind: CronJob
metadata:
  name: hello
  labels:
    app: new
    color: orange
    fruit: apple
spec:
  schedule: "* * * * *"
  jobTemplate:
    metadata:
      labels:
        env: dev
        app: new
        color: orange
        fruit: apple
    spec:
      selector:
        matchLabels:
          name: pi
      template:
        metadata:
          labels:
            testkey: testvalue
            app: new
            color: orange
            fruit: apple
        spec:
          containers:
            - name: hello
              image: busybox:1.28
              imagePullPolicy: IfNotPresent
              command:
                - /bin/sh
                - -c
                - date; echo Hello from the Kubernetes cluster
          restartPolicy: OnFailure
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: hello
  labels:
    app: new
    color: orange
    fruit: apple
spec:
  selector:
    matchLabels:
      name: pi
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: test-network-policy
  namespace: default
  labels:
    app: new
    color: orange
    fruit: apple
spec:
  podSelector:
    matchLabels:
      role: db
---
apiVersion: dev.example.com/v1
kind: MyResource
metadata:
  name: the-service
  namespace: the-namespace
  labels:
    app: new
    color: orange
    fruit: apple
spec:
  selector:
    labels:
      foo: bar
"#;
    #[test]
    fn configmap_config() {
        let fn_config = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: local-config-map\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\ndata:\n  color: orange\n  fruit: apple";
        let resources = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: the-map\ndata:\n  some-key: some-value\n";
        let out = run(FnInput {
            items: items(&[
                ("Kptfile", LOCAL_KPTFILE),
                ("fn-config.yaml", fn_config),
                ("resources.yaml", resources),
            ]),
            function_config: config(fn_config),
        });
        assert_eq!(out.failure, None);
        assert_eq!(messages(&out), [pair("info", "set 2 labels in total")]);
        assert_eq!(out.results[0].file, None);
        assert_eq!(
            file(&out.items, "resources.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: the-map\n  labels:\n    color: orange\n    fruit: apple\ndata:\n  some-key: some-value\n"
        );
        assert_eq!(file(&out.items, "fn-config.yaml"), format!("{fn_config}\n"));
        assert_eq!(file(&out.items, "Kptfile"), LOCAL_KPTFILE);
    }

    #[test]
    fn empty_list_advanced_warns() {
        let fn_config =
            "apiVersion: fn.kpt.dev/v1alpha1\nkind: SetLabels\nmetadata:\n  name: my-config\nlabels: {}\n";
        let kptfile = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: example\npipeline:\n  mutators:\n    - image: ghcr.io/kptdev/krm-functions-catalog/set-labels:latest\n      configPath: fn-config.yaml\n";
        let out = run(FnInput {
            items: items(&[
                ("Kptfile", kptfile),
                ("fn-config.yaml", fn_config),
                ("resources.yaml", SIMPLE_IN),
            ]),
            function_config: config(fn_config),
        });
        assert_eq!(out.failure, None);
        assert_eq!(
            messages(&out),
            [pair(
                "warning",
                "no `labels` arguments are given in FunctionConfig"
            )]
        );
        assert_eq!(file(&out.items, "resources.yaml"), SIMPLE_IN);
        assert_eq!(file(&out.items, "Kptfile"), kptfile);
    }

    #[test]
    fn empty_list_simple_fails_without_config() {
        let kptfile = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: example\npipeline:\n  mutators:\n    - image: ghcr.io/kptdev/krm-functions-catalog/set-labels:latest\n      configMap: {}\n";
        for function_config in [None, config("{}")] {
            let out = run(FnInput {
                items: items(&[("Kptfile", kptfile), ("resources.yaml", SIMPLE_IN)]),
                function_config,
            });
            assert_eq!(out.failure.as_deref(), Some(FUNCTION_FAILURE));
            assert_eq!(out.stderr, FAILURE_STDERR);
            assert_eq!(
                messages(&out),
                [pair("info", "`FunctionConfig` is not given")]
            );
            assert_eq!(file(&out.items, "resources.yaml"), SIMPLE_IN);
            assert_eq!(file(&out.items, "Kptfile"), kptfile);
        }
    }

    #[test]
    fn empty_function_input_fails() {
        let out = run(FnInput {
            items: items(&[("app.yaml", SIMPLE_IN)]),
            function_config: config(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: function-input\ndata: {}\n",
            ),
        });
        assert_eq!(out.failure.as_deref(), Some(FUNCTION_FAILURE));
        assert_eq!(
            messages(&out),
            [pair("info", "`FunctionConfig` is not given")]
        );
        assert_eq!(file(&out.items, "app.yaml"), SIMPLE_IN);
    }

    #[test]
    fn empty_resource_has_no_input() {
        let out = run(FnInput {
            items: Vec::new(),
            function_config: config(SETLABELS_CONFIG),
        });
        assert_eq!(out.failure, None);
        assert_eq!(messages(&out), [pair("info", "no input resources")]);
        assert!(out.items.is_empty());
    }

    #[test]
    fn only_local_config_items_means_no_input() {
        let out = run(FnInput {
            items: items(&[("Kptfile", LOCAL_KPTFILE)]),
            function_config: None,
        });
        assert_eq!(out.failure, None);
        assert_eq!(
            messages(&out),
            [
                pair("info", "`FunctionConfig` is not given"),
                pair("info", "no input resources")
            ]
        );
    }

    #[test]
    fn example_full_coverage() {
        let fn_config = "apiVersion: fn.kpt.dev/v1alpha1\nkind: SetLabels\nmetadata:\n  name: my-config\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\nlabels:\n  color: orange\n  fruit: apple\n  app: new\n";
        let out = run(FnInput {
            items: items(&[
                ("Kptfile", LOCAL_KPTFILE),
                ("fn-config.yaml", fn_config),
                ("resources.yaml", FULL_IN),
            ]),
            function_config: config(fn_config),
        });
        assert_eq!(out.failure, None);
        assert_eq!(messages(&out), [pair("info", "set 99 labels in total")]);
        assert_eq!(file(&out.items, "resources.yaml"), FULL_OUT);
        assert_eq!(file(&out.items, "fn-config.yaml"), fn_config);
    }

    #[test]
    fn example_imperative() {
        let out = run(FnInput {
            items: items(&[("app.yaml", SIMPLE_IN)]),
            function_config: config(FUNCTION_INPUT),
        });
        assert_eq!(out.failure, None);
        assert_eq!(messages(&out), [pair("info", "set 4 labels in total")]);
        assert_eq!(file(&out.items, "app.yaml"), SIMPLE_OUT);
    }

    #[test]
    fn example_simple() {
        let out = run(FnInput {
            items: items(&[("resources.yaml", SIMPLE_IN)]),
            function_config: config(FUNCTION_INPUT),
        });
        assert_eq!(out.failure, None);
        assert_eq!(messages(&out), [pair("info", "set 4 labels in total")]);
        assert_eq!(file(&out.items, "resources.yaml"), SIMPLE_OUT);
    }

    #[test]
    fn ill_formatted_and_wrong_data_type_configs() {
        let message = "unable to convert object to *setlabels.SetLabels with error: json: cannot unmarshal array into Go struct field SetLabels.labels of type map[string]string";
        let ill = "apiVersion: v1\nkind: MyResource\nmetadata:\n  name: the-map\n  labels:\n    - apps\n    - env\ndata:\n  some-key: some-value\n";
        let wrong = "apiVersion: v1\nkind: MyResource\nmetadata:\n  name: the-map\ndata:\n  some-key: some-value\n";
        for resources in [ill, wrong] {
            let out = run(FnInput {
                items: items(&[
                    ("Kptfile", LOCAL_KPTFILE),
                    ("fn-config.yaml", ILL_FORMATTED_CONFIG),
                    ("resources.yaml", resources),
                ]),
                function_config: config(ILL_FORMATTED_CONFIG),
            });
            assert_eq!(out.failure.as_deref(), Some(FUNCTION_FAILURE));
            assert_eq!(messages(&out), [pair("error", message)]);
            assert_eq!(out.results[0].resource_ref, None);
            assert_eq!(file(&out.items, "resources.yaml"), resources);
        }
    }

    #[test]
    fn setlabels_config() {
        let resources = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: the-map\ndata:\n  some-key: some-value\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: the-service\n  namespace: the-namespace\nspec:\n  selector:\n    foo: bar\n";
        let out = run(FnInput {
            items: items(&[("resources.yaml", resources)]),
            function_config: config(SETLABELS_CONFIG),
        });
        assert_eq!(out.failure, None);
        assert_eq!(messages(&out), [pair("info", "set 6 labels in total")]);
        assert_eq!(
            file(&out.items, "resources.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: the-map\n  labels:\n    color: orange\n    fruit: apple\ndata:\n  some-key: some-value\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: the-service\n  namespace: the-namespace\n  labels:\n    color: orange\n    fruit: apple\nspec:\n  selector:\n    foo: bar\n    color: orange\n    fruit: apple\n"
        );
    }

    #[test]
    fn wrong_config_group() {
        let fn_config = "apiVersion: fn.kpt.dev/v1alpha1\nkind: BadKind\nmetadata:\n  name: my-config\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\nlabels:\n  color: orange\n  fruit: apple\n";
        let resources = "apiVersion: v1\nkind: MyResource\nmetadata:\n  name: the-map\ndata:\n  some-key: some-value\n";
        let out = run(FnInput {
            items: items(&[("fn-config.yaml", fn_config), ("resources.yaml", resources)]),
            function_config: config(fn_config),
        });
        assert_eq!(out.failure.as_deref(), Some(FUNCTION_FAILURE));
        assert_eq!(
            messages(&out),
            [pair(
                "error",
                "unknown FunctionConfig `BadKind.fn.kpt.dev`, expect `SetLabels.fn.kpt.dev` or `ConfigMap.v1`"
            )]
        );
        assert_eq!(file(&out.items, "resources.yaml"), resources);
    }

    #[test]
    fn label_values_must_be_strings() {
        let fn_config = "apiVersion: fn.kpt.dev/v1alpha1\nkind: SetLabels\nmetadata:\n  name: c\nlabels:\n  a: 1\n";
        let out = run(FnInput {
            items: items(&[("r.yaml", SIMPLE_IN)]),
            function_config: config(fn_config),
        });
        assert_eq!(
            messages(&out),
            [pair("error", "unable to convert object to *setlabels.SetLabels with error: json: cannot unmarshal number into Go struct field SetLabels.labels of type string")]
        );
    }

    #[test]
    fn object_errors_are_results_and_fail() {
        let resources = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels:\n    color: 1\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec: 5\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n";
        let out = run(FnInput {
            items: items(&[("r.yaml", resources)]),
            function_config: config(SETLABELS_CONFIG),
        });
        assert_eq!(out.failure.as_deref(), Some(FUNCTION_FAILURE));
        assert_eq!(
            messages(&out),
            [
                pair("error", "Resource(apiVersion=, kind=ConfigMap) has unmatched field type \"string\" in fieldpath .metadata.labels.color"),
                pair("error", "Resource(apiVersion=, kind=Deployment) has unmatched field type \"string\" in fieldpath .spec.selector.matchLabels.color"),
                pair("info", "set 4 labels in total"),
            ]
        );
        assert_eq!(
            file(&out.items, "r.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels:\n    color: 1\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n  labels:\n    color: orange\n    fruit: apple\nspec: 5\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  labels:\n    color: orange\n    fruit: apple\n"
        );
    }

    #[test]
    fn formatting_survives_and_equal_values_are_untouched() {
        let resources = "apiVersion: v1\nkind: Service\nmetadata:\n  name: s # the name\n  labels: {color: \"orange\"}\nspec:\n  selector:\n    # head\n    fruit: pear # old\n";
        let out = run(FnInput {
            items: items(&[("r.yaml", resources)]),
            function_config: config(SETLABELS_CONFIG),
        });
        assert_eq!(out.failure, None);
        assert_eq!(
            file(&out.items, "r.yaml"),
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: s # the name\n  labels: {color: \"orange\", fruit: apple}\nspec:\n  selector:\n    # head\n    fruit: apple # old\n    color: orange\n"
        );
    }

    #[test]
    fn pod_template_errors_are_swallowed() {
        let resources = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec:\n  template:\n    metadata: x\n  selector: {}\n";
        let out = run(FnInput {
            items: items(&[("r.yaml", resources)]),
            function_config: config(SETLABELS_CONFIG),
        });
        assert_eq!(out.failure, None);
        assert_eq!(messages(&out), [pair("info", "set 4 labels in total")]);
        assert_eq!(
            file(&out.items, "r.yaml"),
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n  labels:\n    color: orange\n    fruit: apple\nspec:\n  template:\n    metadata: x\n  selector: {matchLabels: {color: orange, fruit: apple}}\n"
        );
    }

    #[test]
    fn cronjob_without_job_spec_crashes() {
        let resources = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: c\nspec:\n  jobTemplate:\n    metadata: {}\n";
        let input = items(&[("r.yaml", resources)]);
        let out = run(FnInput {
            items: input.clone(),
            function_config: config(SETLABELS_CONFIG),
        });
        assert_eq!(out.failure.as_deref(), Some(NIL_POINTER_PANIC));
        assert!(out.results.is_empty());
        assert_eq!(out.items, input);
    }

    #[test]
    fn unparsable_group_version_matches_every_kind() {
        let resources =
            "apiVersion: a/b/c\nkind: Thing\nmetadata:\n  name: t\nspec:\n  selector:\n    x: y\n";
        let out = run(FnInput {
            items: items(&[("r.yaml", resources)]),
            function_config: config(FUNCTION_INPUT),
        });
        assert_eq!(out.failure, None);
        assert_eq!(messages(&out), [pair("info", "set 8 labels in total")]);
        assert_eq!(
            file(&out.items, "r.yaml"),
            "apiVersion: a/b/c\nkind: Thing\nmetadata:\n  name: t\n  labels:\n    color: orange\n    fruit: apple\nspec:\n  selector:\n    x: y\n    color: orange\n    fruit: apple\n    matchLabels:\n      color: orange\n      fruit: apple\n"
        );
    }
}
