//! Running one function on a list of items, as kpt's `FunctionRunner`
//! and kyaml's `FunctionFilter` do: builtins on the tree in place, other
//! functions through the runtime with the ResourceList protocol, comments
//! and key order copied back by item id, generated items given a file, the
//! package-path and path invariants checked, and the results parsed.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::yaml::{self, Format, Kind, Node};

use super::annotations as ann;
use super::builtins::{self, FnInput};
use super::kptfile::clean_path;
use super::package::{self, check_krm};
use super::result::FnResult;
use super::runtime::{FunctionRef, FunctionRuntime, RuntimeError};

/// How a function is run.
#[derive(Debug, Clone)]
pub enum Runner {
    /// In process.
    Builtin(builtins::Builtin),
    /// Through the runtime.
    External,
}

/// The outcome of one run.
#[derive(Debug, Clone, Default)]
pub struct Ran {
    /// The output items (documents), when the run produced any.
    pub items: Vec<Node>,
    /// The error that fails the step, if any.
    pub error: Option<StepError>,
    /// Whether the function itself ran and produced a result record
    /// (else only `executionError` is recorded).
    pub recorded: bool,
    /// Its exit code (0, the process's code, or 1 by default).
    pub exit_code: i64,
    /// Its stderr.
    pub stderr: String,
    /// Its results.
    pub results: Vec<FnResult>,
}

/// Why a step failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepError {
    /// The text kpt propagates.
    pub message: String,
    /// Details were printed already (kpt's `already handled error`).
    pub handled: bool,
}

impl StepError {
    fn new(message: impl Into<String>) -> StepError {
        StepError {
            message: message.into(),
            handled: false,
        }
    }
}

/// Runs a function on `items` (documents carrying kpt's annotations).
/// `package_path` is the package whose pipeline runs (for generated items).
pub fn run(
    function: &FunctionRef,
    runner: &Runner,
    items: Vec<Node>,
    config: Option<&Node>,
    package_path: &str,
    runtime: &mut dyn FunctionRuntime,
) -> Ran {
    for item in &items {
        if let Err(e) = check_krm(item) {
            return failed(format!(
                "input resource list must contain only KRM resources: {e}"
            ));
        }
    }
    let mut ran = match runner {
        Runner::Builtin(f) => run_builtin(*f, items, config),
        Runner::External => match run_external(function, items, config, runtime) {
            Ok(ran) => ran,
            Err(ran) => return ran,
        },
    };
    if ran.error.is_some() && ran.items.is_empty() {
        return ran;
    }
    default_paths(&mut ran.items, config);
    for item in &mut ran.items {
        if ann::get(item, ann::PACKAGE_PATH).is_none() {
            let _ = item.set_annotation(ann::PACKAGE_PATH, package_path);
        }
    }
    if let Err(e) = path_invariants(&ran.items) {
        ran.error = Some(StepError::new(e));
        ran.recorded = false;
        return ran;
    }
    for item in &ran.items {
        if let Err(e) = check_krm(item) {
            ran.error = Some(StepError::new(format!(
                "output resource list must contain only KRM resources: {e}"
            )));
            ran.recorded = false;
            return ran;
        }
    }
    ran
}

fn failed(message: String) -> Ran {
    Ran {
        error: Some(StepError::new(message)),
        exit_code: 1,
        ..Ran::default()
    }
}

fn run_builtin(f: builtins::Builtin, items: Vec<Node>, config: Option<&Node>) -> Ran {
    let out = f(FnInput {
        items,
        function_config: config.cloned(),
    });
    let error = out.failure.map(StepError::new);
    Ran {
        exit_code: i64::from(error.is_some()),
        items: out.items,
        error,
        recorded: true,
        stderr: out.stderr,
        results: out.results,
    }
}

/// The ResourceList kpt writes to a function: items with ids `"1".."N"`.
fn resource_list(items: &[Node], config: Option<&Node>) -> Result<String, String> {
    let mut list = Node::new_mapping();
    let mut seq = Node::new_sequence();
    for (i, item) in items.iter().enumerate() {
        let mut copy = item.clone();
        let id = (i + 1).to_string();
        copy.set_annotation(ann::ID, &id)
            .map_err(|e| e.to_string())?;
        copy.set_annotation(ann::LEGACY_ID, &id)
            .map_err(|e| e.to_string())?;
        seq.content.push(copy.root().clone());
    }
    list.set_string("apiVersion", "config.kubernetes.io/v1")
        .map_err(|e| e.to_string())?;
    list.set_string("kind", "ResourceList")
        .map_err(|e| e.to_string())?;
    list.set("items", seq).map_err(|e| e.to_string())?;
    if let Some(c) = config {
        list.set("functionConfig", c.root().clone())
            .map_err(|e| e.to_string())?;
    }
    yaml::emit_stream(&[Node::new_document(list)], Format::Kyaml).map_err(|e| e.to_string())
}

fn run_external(
    function: &FunctionRef,
    items: Vec<Node>,
    config: Option<&Node>,
    runtime: &mut dyn FunctionRuntime,
) -> Result<Ran, Ran> {
    let input = resource_list(&items, config).map_err(failed)?;
    let output = match runtime.run(function, &input) {
        Ok(out) => out,
        Err(RuntimeError::NotFound) => {
            return Err(failed(format!(
                "function runtime failed to evaluate function {:?}: function {:?} not found",
                function.display(),
                function.display()
            )))
        }
        Err(RuntimeError::Failed(msg)) => return Err(failed(msg)),
        Err(RuntimeError::Pending) => return Err(failed(PENDING.to_string())),
    };
    let exit_error = (output.exit_code != 0).then(|| StepError {
        message: format!("exit code {}", output.exit_code),
        handled: true,
    });
    let parsed = match parse_output(&output.stdout, &items) {
        Ok(p) => p,
        Err(e) => {
            let mut ran = failed(e);
            ran.recorded = true;
            ran.stderr = output.stderr;
            return Err(ran);
        }
    };
    Ok(Ran {
        items: parsed.0,
        exit_code: i64::from(
            output
                .exit_code
                .max(if exit_error.is_some() { 1 } else { 0 }),
        ),
        error: exit_error,
        recorded: true,
        stderr: output.stderr,
        results: parsed.1,
    })
}

/// Marks a render stopped for a function the component must ask its host
/// to run.
pub const PENDING: &str = "\u{0}pending";

/// Reads a function's output ResourceList: the items (comments and key
/// order copied back from the input item with the same id, ids removed,
/// kpt's legacy/current annotation pairs reconciled) and the results.
fn parse_output(stdout: &str, input: &[Node]) -> Result<(Vec<Node>, Vec<FnResult>), String> {
    if stdout.trim().is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let doc = yaml::parse_document(stdout)
        .map_err(|e| format!("failed to parse function output: {e}"))?;
    let root = doc.root();
    if root.kind != Kind::Mapping {
        return Err("failed to parse function output: not a ResourceList".to_string());
    }
    let by_id: BTreeMap<String, &Node> = input
        .iter()
        .enumerate()
        .map(|(i, n)| ((i + 1).to_string(), n))
        .collect();
    let mut items = Vec::new();
    if let Some(seq) = root.get("items").filter(|n| n.kind == Kind::Sequence) {
        for item in &seq.content {
            let mut out = Node::new_document(item.clone());
            let id = ann::get(&out, ann::ID)
                .or_else(|| ann::get(&out, ann::LEGACY_ID))
                .map(str::to_string);
            let original = id.as_deref().and_then(|id| by_id.get(id)).copied();
            if let Some(orig) = original {
                yaml::deep_copy_formatting(orig, &mut out);
            }
            remove_annotations(&mut out, &[ann::ID, ann::LEGACY_ID]);
            reconcile_pairs(&mut out, original)?;
            items.push(out);
        }
    }
    let mut results = Vec::new();
    if let Some(r) = root.get("results") {
        let value = yaml::to_json(r).map_err(|e| format!("failed to parse results: {e}"))?;
        let list = match value {
            Value::Array(a) => a,
            Value::Object(mut o) => match o.remove("items") {
                Some(Value::Array(a)) => a,
                _ => Vec::new(),
            },
            _ => Vec::new(),
        };
        for mut v in list {
            lift_legacy_result(&mut v);
            let r: FnResult =
                serde_json::from_value(v).map_err(|e| format!("failed to parse results: {e}"))?;
            results.push(r);
        }
    }
    Ok((items, results))
}

/// Older results name the object under `resourceRef.metadata` and the
/// proposal as `field.suggestedValue`.
fn lift_legacy_result(v: &mut Value) {
    if let Some(rr) = v.get_mut("resourceRef").and_then(Value::as_object_mut) {
        if let Some(Value::Object(meta)) = rr.remove("metadata") {
            for k in ["name", "namespace"] {
                if let Some(x) = meta.get(k) {
                    rr.entry(k).or_insert_with(|| x.clone());
                }
            }
        }
    }
    if let Some(f) = v.get_mut("field").and_then(Value::as_object_mut) {
        if let Some(s) = f.remove("suggestedValue") {
            f.entry("proposedValue").or_insert(s);
        }
    }
    if let Some(file) = v.get_mut("file").and_then(Value::as_object_mut) {
        if let Some(Value::String(s)) = file.get("index").cloned() {
            if let Ok(i) = s.parse::<i64>() {
                file.insert("index".into(), Value::from(i));
            }
        }
    }
}

/// Removes annotations, and the annotations map (then metadata) when it
/// becomes empty.
pub fn remove_annotations(item: &mut Node, keys: &[&str]) {
    let root = item.root_mut();
    let Some(meta) = root.get_mut("metadata") else {
        return;
    };
    let Some(anns) = meta.get_mut("annotations") else {
        return;
    };
    for k in keys {
        anns.remove(k);
    }
}

/// Drops `metadata.annotations` when empty, then `metadata` when empty
/// (kyaml's `ClearEmptyAnnotations`).
pub fn clear_empty_annotations(item: &mut Node) {
    let root = item.root_mut();
    let Some(meta) = root.get_mut("metadata") else {
        return;
    };
    if meta
        .get("annotations")
        .is_some_and(|a| a.kind == Kind::Mapping && a.content.is_empty())
    {
        meta.remove("annotations");
    }
    if meta.kind == Kind::Mapping && meta.content.is_empty() {
        root.remove("metadata");
    }
}

/// kyaml's `ReconcileInternalAnnotations` for one item: one side of a
/// legacy/current pair set copies to the other; a side the function
/// changed wins; both changed differently is an error.
fn reconcile_pairs(item: &mut Node, original: Option<&Node>) -> Result<(), String> {
    for (new, old, what) in [
        (ann::PATH, ann::LEGACY_PATH, "path"),
        (ann::INDEX, ann::LEGACY_INDEX, "index"),
    ] {
        let a = ann::get(item, new).map(str::to_string);
        let b = ann::get(item, old).map(str::to_string);
        let orig = original.and_then(|o| ann::get(o, new)).map(str::to_string);
        let value = match (a, b) {
            (Some(a), Some(b)) if a == b => continue,
            (Some(a), Some(b)) => {
                if orig.as_deref() == Some(a.as_str()) {
                    b
                } else if orig.as_deref() == Some(b.as_str()) {
                    a
                } else {
                    return Err(format!(
                        "resource input to function has mismatched legacy and internal {what} annotations"
                    ));
                }
            }
            (Some(v), None) | (None, Some(v)) => v,
            (None, None) => continue,
        };
        item.set_annotation(new, &value)
            .map_err(|e| e.to_string())?;
        item.set_annotation(old, &value)
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// kyaml's default file for generated items: `<dir of the config's
/// file>/<namespace>/<kind>_<name>.yaml`.
fn default_paths(items: &mut [Node], config: Option<&Node>) {
    let mut dir = config
        .and_then(ann::path)
        .map(|p| package::dir_of(p).to_string())
        .unwrap_or_default();
    if package::base_of(&dir) == "functions" {
        dir = package::dir_of(&dir).to_string();
    }
    for item in items.iter_mut() {
        if ann::path(item).is_some() {
            continue;
        }
        let ns = item.namespace().to_string();
        let file = format!("{}_{}.yaml", item.object_kind().to_lowercase(), item.name());
        let path = package::join(&package::join(&dir, &ns), &file);
        let _ = item.set_annotation(ann::PATH, &path);
        let _ = item.set_annotation(ann::LEGACY_PATH, &path);
    }
}

/// No item may leave its package, and no two items of a package may
/// claim the same file and index.
fn path_invariants(items: &[Node]) -> Result<(), String> {
    let mut seen = std::collections::BTreeSet::new();
    for item in items {
        let raw = ann::path(item).unwrap_or_default();
        let clean = clean_path(raw);
        if clean == ".." || clean.starts_with("../") {
            return Err(format!(
                "function must not modify resources outside of package: resource has path {raw}"
            ));
        }
        let pkg = ann::get(item, ann::PACKAGE_PATH).unwrap_or_default();
        let index = ann::get(item, ann::INDEX)
            .or_else(|| ann::get(item, ann::LEGACY_INDEX))
            .unwrap_or_default();
        if !seen.insert((pkg.to_string(), clean.clone(), index.to_string())) {
            return Err(format!(
                "resource at path {clean:?} and index {index:?} already exists"
            ));
        }
    }
    Ok(())
}
