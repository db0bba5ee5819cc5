//! Parity: every upstream conformance case and every golden test of the
//! core runs through the native core and through the component, and both
//! must answer exactly the same records.
//!
//! Each case folder is turned into calls of the component's exports
//! (`validate-*`, `plan-reconcile`, `apply-mutations`, `render-*`,
//! `format-files`) from its inputs: the objects it holds, or, for the cases
//! of helper functions (expressions, map overlays, upstream look-ups,
//! function names, injection points), a package or a set that exercises
//! the helper. Every YAML file of every case, and the round-trip corpus of
//! the YAML layer, also goes through `format-files`. Correctness against
//! upstream is the conformance and golden tests' job; this test proves the
//! component reproduces the native core on all of their inputs.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use porch_variants::component::native;
use porch_variants::component::types::{
    CelLimits, CloneInput, File, MutationInput, PlanInput, RenderInput, UpgradeInput,
    UpstreamSource,
};
use porch_variants::component::CoreComponent;
use porch_variants_tests::conformance::cases;
use porch_variants_tests::conformance_dir;
use serde_json::{json, Value};

/// One call of an export.
#[derive(Debug, Clone)]
enum Call {
    ValidatePv(String),
    Plan(PlanInput),
    Mutate(MutationInput),
    ValidatePvs(String),
    Render(RenderInput),
    Format(Vec<File>),
    Clone(CloneInput),
    Upgrade(UpgradeInput),
}

impl Call {
    fn name(&self) -> &'static str {
        match self {
            Call::ValidatePv(_) => "validate-package-variant",
            Call::Plan(_) => "plan-reconcile",
            Call::Mutate(_) => "apply-mutations",
            Call::ValidatePvs(_) => "validate-package-variant-set",
            Call::Render(_) => "render-package-variant-set",
            Call::Format(_) => "format-files",
            Call::Clone(_) => "clone-package",
            Call::Upgrade(_) => "upgrade-package",
        }
    }
}

/// Runs `call` natively and in the component; `Err` describes a
/// difference.
fn check(component: &CoreComponent, call: &Call) -> Result<(), String> {
    fn same<T: PartialEq + std::fmt::Debug>(native: T, wasm: T) -> Result<(), String> {
        if native == wasm {
            Ok(())
        } else {
            Err(format!("native: {native:#?}\ncomponent: {wasm:#?}"))
        }
    }
    let fail = |e: porch_variants::component::ComponentError| format!("component failed: {e}");
    match call {
        Call::ValidatePv(pv) => same(
            native::validate_package_variant(pv),
            component.validate_package_variant(pv).map_err(fail)?,
        ),
        Call::Plan(input) => same(
            native::plan_reconcile(input),
            component.plan_reconcile(input).map_err(fail)?,
        ),
        Call::Mutate(input) => same(
            native::apply_mutations(input),
            component.apply_mutations(input).map_err(fail)?,
        ),
        Call::ValidatePvs(pvs) => same(
            native::validate_package_variant_set(pvs),
            component.validate_package_variant_set(pvs).map_err(fail)?,
        ),
        Call::Render(input) => same(
            native::render_package_variant_set(input),
            component.render_package_variant_set(input).map_err(fail)?,
        ),
        Call::Format(files) => same(
            native::format_files(files),
            component.format_files(files).map_err(fail)?,
        ),
        Call::Clone(input) => same(
            native::clone_package(input),
            component.clone_package(input).map_err(fail)?,
        ),
        Call::Upgrade(input) => same(
            native::upgrade_package(input),
            component.upgrade_package(input).map_err(fail)?,
        ),
    }
}

// ---- reading cases ------------------------------------------------------

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A YAML file of the case as JSON (`Null` when absent).
fn yaml(dir: &Path, rel: &str) -> Value {
    let path = dir.join(rel);
    if !path.exists() {
        return Value::Null;
    }
    let doc = pv_core::yaml::parse_document(&read(&path))
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    pv_core::yaml::to_json(&doc).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every document of a YAML stream as JSON.
fn yaml_stream(dir: &Path, rel: &str) -> Vec<Value> {
    let path = dir.join(rel);
    if !path.exists() {
        return Vec::new();
    }
    pv_core::yaml::parse_stream(&read(&path))
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .iter()
        .map(|d| pv_core::yaml::to_json(d).expect("converts"))
        .filter(|v| !v.is_null())
        .collect()
}

/// A list file (`- ...` or `{items: [...]}`) as its elements.
fn yaml_list(dir: &Path, rel: &str) -> Vec<Value> {
    match yaml(dir, rel) {
        Value::Array(items) => items,
        Value::Object(mut m) => match m.remove("items") {
            Some(Value::Array(items)) => items,
            _ => vec![Value::Object(m)],
        },
        _ => Vec::new(),
    }
}

fn text(dir: &Path, rel: &str) -> Option<String> {
    std::fs::read_to_string(dir.join(rel))
        .ok()
        .map(|s| s.strip_suffix('\n').unwrap_or(&s).to_string())
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// `input/resources/*` as files, by name.
fn resources(dir: &Path) -> Vec<File> {
    let mut files = BTreeMap::new();
    if let Ok(entries) = std::fs::read_dir(dir.join("input/resources")) {
        for e in entries.flatten() {
            files.insert(
                e.file_name().to_string_lossy().into_owned(),
                read(&e.path()),
            );
        }
    }
    files
        .into_iter()
        .map(|(path, content)| File { path, content })
        .collect()
}

/// Every `*.yaml` file and Kptfile under the case, for `format-files`.
fn yaml_files(dir: &Path) -> Vec<File> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<File>) {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .map(|rd| rd.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        entries.sort();
        for p in entries {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            if p.is_dir() {
                walk(root, &p, out);
            } else if name.ends_with(".yaml") || name == "Kptfile" {
                out.push(File {
                    path: p.strip_prefix(root).unwrap_or(&p).display().to_string(),
                    content: read(&p),
                });
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out
}

// ---- building calls -------------------------------------------------------

const NOW: &str = "2026-11-22T10:00:00Z";

fn pv_json(pv: &Value) -> String {
    let mut pv = pv.clone();
    if pv.is_null() {
        pv = json!({});
    }
    pv.to_string()
}

/// The variant as a controller reads it: with a uid, the finalizer, and
/// optionally being deleted.
fn as_controller_sees(pv: &Value, deleting: bool) -> Value {
    let mut pv = if pv.is_object() {
        pv.clone()
    } else {
        json!({})
    };
    let meta = pv
        .as_object_mut()
        .expect("object")
        .entry("metadata")
        .or_insert_with(|| json!({}));
    if meta.get("uid").is_none() {
        meta["uid"] = json!("5b1f9a8e-0000-4000-8000-000000000001");
    }
    if meta.get("name").is_none() {
        meta["name"] = json!("my-pv");
    }
    meta["finalizers"] = json!(["config.porch.kpt.dev/packagevariants"]);
    if deleting {
        meta["deletionTimestamp"] = json!(NOW);
    }
    pv
}

/// Plans of a variant over `prs`: as written, as the controller sees it,
/// and being deleted.
fn plans(pv: &Value, prs: &[Value]) -> Vec<Call> {
    let prs: Vec<String> = prs.iter().map(Value::to_string).collect();
    [
        pv.clone(),
        as_controller_sees(pv, false),
        as_controller_sees(pv, true),
    ]
    .into_iter()
    .map(|pv| {
        Call::Plan(PlanInput {
            package_variant: pv_json(&pv),
            package_revisions: prs.clone(),
            now: NOW.into(),
        })
    })
    .collect()
}

/// A PackageRevision from the fields of a case's step or list entry.
fn pr(v: &Value, namespace: &str) -> Value {
    let repo = str_of(v, "repository");
    let package = str_of(v, "packageName");
    let workspace = str_of(v, "workspaceName");
    let name = match str_of(v, "name") {
        "" => format!("{repo}.{package}.{workspace}"),
        n => n.to_string(),
    };
    json!({
        "apiVersion": "porch.kpt.dev/v1alpha1",
        "kind": "PackageRevision",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "repository": repo,
            "packageName": package,
            "workspaceName": workspace,
            "revision": v.get("revision").cloned().unwrap_or(json!(0)),
            "lifecycle": v.get("lifecycle").cloned().unwrap_or(json!("Published")),
        },
    })
}

/// The published upstream a set's `spec.upstream` asks for.
fn upstream_for(pvs: &Value) -> Value {
    let up = pvs.pointer("/spec/upstream").cloned().unwrap_or(json!({}));
    let revision = up.get("revision").and_then(Value::as_i64).unwrap_or(0);
    let workspace = match str_of(&up, "workspaceName") {
        "" => format!("v{}", revision.max(1)),
        w => w.to_string(),
    };
    let ns = pvs
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default();
    pr(
        &json!({
            "repository": str_of(&up, "repo"),
            "packageName": str_of(&up, "package"),
            "workspaceName": workspace,
            "revision": if revision == 0 { 1 } else { revision },
        }),
        ns,
    )
}

fn render(pvs: &Value, prs: &[Value], repos: &[Value], existing: &[Value]) -> Call {
    let list = |vs: &[Value]| vs.iter().map(Value::to_string).collect();
    Call::Render(RenderInput {
        package_variant_set: pvs.to_string(),
        upstream_revisions: list(prs),
        repositories: list(repos),
        target_kinds: Vec::new(),
        target_objects: Vec::new(),
        existing: list(existing),
        downstream_revisions: list(prs),
        limits: None,
    })
}

/// A set with one explicit target and `template`.
fn pvs_with_template(repo: &str, package: &str, template: Value) -> Value {
    json!({
        "apiVersion": "config.porch.kpt.dev/v1alpha2",
        "kind": "PackageVariantSet",
        "metadata": {"name": "my-pvs", "namespace": "default", "uid": "5b1f9a8e-0000-4000-8000-000000000002"},
        "spec": {
            "upstream": {"repo": "up-repo", "package": "up-pkg", "revision": 2},
            "targets": [{
                "repositories": [{"name": repo, "packageNames": [package]}],
                "template": template,
            }],
        },
    })
}

fn repository(name: &str, labels: Value) -> Value {
    json!({
        "apiVersion": "config.porch.kpt.dev/v1alpha1",
        "kind": "Repository",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
    })
}

/// A package whose objects are the case's injection points (`file`,
/// `conditionType`, `required`), with in-cluster objects for those marked
/// injected, and a variant whose injectors select them.
fn injection_package(dir: &Path, points: &[Value]) -> MutationInput {
    let mut files: BTreeMap<String, String> = BTreeMap::new();
    files.insert(
        "Kptfile".into(),
        text(dir, "input/kptfile.yaml")
            .map(|t| t + "\n")
            .unwrap_or_else(|| {
                "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\n".into()
            }),
    );
    files.insert(
        "package-context.yaml".into(),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kptfile.kpt.dev\ndata:\n  name: p\n"
            .into(),
    );
    let mut candidates = Vec::new();
    let mut injectors = Vec::new();
    for p in points {
        let condition = str_of(p, "conditionType");
        let mut parts = condition.splitn(4, '.').skip(2);
        let kind = parts.next().unwrap_or("ConfigMap");
        let name = parts.next().unwrap_or("x");
        let api_version = if kind == "ConfigMap" {
            "v1"
        } else {
            "example.com/v1"
        };
        let mode = if p.get("required").and_then(Value::as_bool) == Some(true) {
            "required"
        } else {
            "optional"
        };
        let doc = format!(
            "apiVersion: {api_version}\nkind: {kind}\nmetadata:\n  name: {name}\n  annotations:\n    kpt.dev/config-injection: {mode}\ndata:\n  a: b\n"
        );
        let file = files.entry(str_of(p, "file").to_string()).or_default();
        if !file.is_empty() {
            file.push_str("---\n");
        }
        file.push_str(&doc);
        let injected = str_of(p, "injectedName");
        if !injected.is_empty() {
            injectors.push(json!({"kind": kind, "name": injected}));
            if p.get("injected").and_then(Value::as_bool) == Some(true) {
                candidates.push(
                    json!({"apiVersion": api_version, "kind": kind,
                        "metadata": {"name": injected, "namespace": "default"}, "data": {"a": "injected"}})
                    .to_string(),
                );
            }
        }
    }
    MutationInput {
        package_variant: json!({"metadata": {"name": "my-pv", "namespace": "default"},
            "spec": {"injectors": injectors}})
        .to_string(),
        namespace: "default".into(),
        name: "prr".into(),
        files: files
            .into_iter()
            .map(|(path, content)| File { path, content })
            .collect(),
        candidates,
    }
}

/// The calls one case folder turns into (besides `format-files`).
fn calls_of(group: &str, dir: &Path) -> Vec<Call> {
    let pv = yaml(dir, "input/packagevariant.yaml");
    let mut calls = Vec::new();
    match group {
        "pv-validate" => {
            calls.push(Call::ValidatePv(pv_json(&pv)));
            calls.extend(plans(&pv, &[]));
        }
        "pv-adoption-policy" | "pv-get-downstream-prs" | "pv-delete-or-orphan" => {
            let mut prs = yaml_list(dir, "input/packagerevisionlist.yaml");
            prs.extend(yaml_list(dir, "input/packagerevision.yaml"));
            calls.push(Call::ValidatePv(pv_json(&pv)));
            calls.extend(plans(&pv, &prs));
        }
        "pv-create-drafts" => {
            let mut prs = yaml_list(dir, "input/prlist-extra.yaml");
            let downstream = yaml(dir, "input/source-downstream.yaml");
            prs.push(downstream.clone());
            let mut pv = if pv.is_object() {
                pv
            } else {
                json!({"metadata": {"namespace": "test-ns"}, "spec": {}})
            };
            let spec = pv["spec"].as_object_mut().expect("spec");
            spec.entry("upstream").or_insert(
                json!({"repo": "upstream-repo", "package": "test-package", "revision": 2}),
            );
            spec.insert(
                "downstream".into(),
                json!({"repo": str_of(&downstream["spec"], "repository"), "package": str_of(&downstream["spec"], "packageName")}),
            );
            // Owned by the variant, so that it is the downstream.
            let pv = as_controller_sees(&pv, false);
            let mut owned = downstream;
            owned["metadata"]["ownerReferences"] = json!([{
                "apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "PackageVariant",
                "name": "my-pv", "uid": pv["metadata"]["uid"], "controller": true}]);
            prs.pop();
            prs.push(owned);
            calls.extend(plans(&pv, &prs));
        }
        "pv-new-workspace-name" => {
            let prs = yaml_list(dir, "input/packagerevisionlist.yaml");
            let first = prs.first().cloned().unwrap_or(json!({"spec": {}}));
            let pv = json!({"metadata": {"name": "my-pv", "namespace": "default"}, "spec": {
                "upstream": {"repo": str_of(&first["spec"], "repository"), "package": str_of(&first["spec"], "packageName")},
                "downstream": {"repo": str_of(&first["spec"], "repository"), "package": str_of(&first["spec"], "packageName")},
            }});
            calls.extend(plans(&pv, &prs));
        }
        "pv-is-valid-upstream" => {
            for step in yaml(dir, "input/steps.yaml")["steps"]
                .as_array()
                .into_iter()
                .flatten()
            {
                let pv = json!({"metadata": {"name": "my-pv", "namespace": "default"}, "spec": {
                    "upstream": step["upstream"], "downstream": {"repo": "d", "package": "p"}}});
                calls.push(Call::ValidatePv(pv.to_string()));
                calls.extend(plans(&pv, &[]));
            }
        }
        "pv-get-upstream-pr" | "pv-get-published-upstream-by-revision" => {
            let steps = yaml(dir, "input/steps.yaml");
            let mut upstream = json!({});
            let mut prs: Vec<Value> = Vec::new();
            for step in steps["steps"].as_array().into_iter().flatten() {
                if let Some(up) = step.get("upstream") {
                    upstream = up.clone();
                }
                for (k, v) in step
                    .get("set")
                    .and_then(Value::as_object)
                    .into_iter()
                    .flatten()
                {
                    upstream[k] = v.clone();
                }
                if let Some(list) = step.get("prList").and_then(Value::as_array) {
                    prs = list.iter().map(|p| pr(p, "default")).collect();
                }
                if let Some(p) = step.get("addPR") {
                    prs.push(pr(p, "default"));
                }
                let pv = json!({"metadata": {"name": "my-pv", "namespace": "default"}, "spec": {
                    "upstream": upstream, "downstream": {"repo": "d", "package": "p"}}});
                calls.extend(plans(&pv, &prs));
            }
        }
        "pv-generate-func-name" | "pv-is-package-variant-func" => {
            let args = yaml(dir, "input/args.yaml");
            let pv_name = match str_of(&args, "pvName") {
                "" => text(dir, "input/pv-name.txt").unwrap_or_default(),
                n => n.to_string(),
            };
            let existing = match str_of(&yaml(dir, "input/function.yaml"), "name") {
                "" => format!("PackageVariant.{pv_name}.{}.0", str_of(&args, "funcName")),
                n => n.to_string(),
            };
            let kptfile = format!(
                "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\npipeline:\n  mutators:\n    - name: {existing:?}\n      image: old\n    - name: user\n      image: user\n"
            );
            let pv = json!({"metadata": {"name": pv_name, "namespace": "default"}, "spec": {
                "pipeline": {"mutators": [{"name": str_of(&args, "funcName"), "image": "img"}]}}});
            calls.push(Call::Mutate(MutationInput {
                package_variant: pv.to_string(),
                namespace: "default".into(),
                name: "prr".into(),
                files: vec![
                    File { path: "Kptfile".into(), content: kptfile },
                    File {
                        path: "package-context.yaml".into(),
                        content: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kptfile.kpt.dev\ndata:\n  name: p\n".into(),
                    },
                ],
                candidates: Vec::new(),
            }));
        }
        "pv-ensure-package-context"
        | "pv-ensure-krm-functions"
        | "pv-ensure-config-injection"
        | "pv-find-injection-points" => {
            let prr = yaml(dir, "input/prr.yaml");
            let candidates = yaml_stream(dir, "input/cluster-objects.yaml")
                .iter()
                .map(Value::to_string)
                .collect();
            calls.push(Call::Mutate(MutationInput {
                package_variant: pv_json(&pv),
                namespace: prr
                    .pointer("/metadata/namespace")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .into(),
                name: prr
                    .pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .into(),
                files: resources(dir),
                candidates,
            }));
        }
        "pv-set-injection-conditions-and-gates" | "pv-validate-injection-points" => {
            let points = yaml_list(dir, "input/injection-points.yaml");
            calls.push(Call::Mutate(injection_package(dir, &points)));
        }
        "pvs-validate" => {
            let pvs = yaml(dir, "input/packagevariantset.yaml");
            calls.push(Call::ValidatePvs(pvs.to_string()));
            calls.push(render(&pvs, &[upstream_for(&pvs)], &[], &[]));
        }
        "pvs-unroll-downstream-targets" => {
            let pvs = yaml(dir, "input/packagevariantset.yaml");
            let repos = yaml_list(dir, "input/list-result.yaml");
            calls.push(render(&pvs, &[upstream_for(&pvs)], &repos, &[]));
        }
        "pvs-ensure-package-variants" => {
            let pvs = yaml(dir, "input/packagevariantset.yaml");
            let existing = yaml_list(dir, "input/existing-packagevariants.yaml");
            let downstreams = yaml_list(dir, "input/downstreams.yaml");
            let mut pvs = pvs;
            pvs["spec"]["targets"] = json!([{"repositories": downstreams.iter().map(|d| json!({
                "name": str_of(d, "repoDefault"), "packageNames": [str_of(d, "packageDefault")]})).collect::<Vec<_>>()}]);
            let repos: Vec<Value> = downstreams
                .iter()
                .map(|d| repository(str_of(d, "repoDefault"), json!({})))
                .collect();
            calls.push(render(&pvs, &[upstream_for(&pvs)], &repos, &existing));
            // The same, staged: one update at a time.
            let mut staged = pvs.clone();
            staged["spec"]["rolloutStrategy"] = json!({"steps": [{"name": "one", "maxUpdate": 1}]});
            calls.push(render(&staged, &[upstream_for(&pvs)], &repos, &existing));
        }
        "pvs-render-spec" => {
            let ctx = yaml(dir, "input/context.yaml");
            let ds = yaml(dir, "input/downstream.yaml");
            let template = yaml(dir, "input/template.yaml");
            let mut pvs = pvs_with_template(
                str_of(&ds, "repoDefault"),
                str_of(&ds, "packageDefault"),
                template,
            );
            if let Some(meta) = ctx.pointer("/pvs/metadata") {
                pvs["metadata"]["name"] = meta["name"].clone();
            }
            if let Some(up) = ctx.pointer("/pvs/spec/upstream") {
                pvs["spec"]["upstream"] = up.clone();
            }
            let mut upstream = upstream_for(&pvs);
            if let Some(meta) = ctx.pointer("/upstreamPR/metadata") {
                upstream["metadata"]["labels"] = meta["labels"].clone();
                upstream["metadata"]["annotations"] = meta["annotations"].clone();
            }
            let repos: Vec<Value> = ctx["repositories"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|r| {
                    let mut r = r.clone();
                    r["metadata"]["namespace"] = json!("default");
                    r
                })
                .collect();
            calls.push(render(&pvs, &[upstream], &repos, &[]));
        }
        "pvs-eval-expr" => {
            let expr = text(dir, "input/expr.txt").unwrap_or_default();
            let vars = yaml(dir, "input/variables.yaml");
            let repo = match str_of(&vars, "repoDefault") {
                "" => "r",
                r => r,
            };
            let pvs = pvs_with_template(
                repo,
                str_of(&vars, "packageDefault"),
                json!({"downstream": {"packageExpr": expr}, "annotationExprs": [{"key": "x", "valueExpr": expr}]}),
            );
            let repos = [repository(repo, json!({"a": "b"}))];
            calls.push(render(&pvs, &[upstream_for(&pvs)], &repos, &[]));
        }
        "pvs-copy-and-overlay-map-expr" => {
            let vars = yaml(dir, "input/variables.yaml");
            let repo = match str_of(&vars, "repoDefault") {
                "" => "r",
                r => r,
            };
            let pvs = pvs_with_template(
                repo,
                str_of(&vars, "packageDefault"),
                json!({"labels": yaml(dir, "input/in-map.yaml"), "labelExprs": yaml(dir, "input/map-exprs.yaml")}),
            );
            let repos = [repository(repo, json!({}))];
            calls.push(render(&pvs, &[upstream_for(&pvs)], &repos, &[]));
        }
        "pvs-get-upstream-pr" => {
            let steps = yaml(dir, "input/steps.yaml");
            let prs: Vec<Value> = steps["prList"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|p| pr(p, "default"))
                .collect();
            let mut pvs = pvs_with_template("r", "p", Value::Null);
            for step in steps["steps"].as_array().into_iter().flatten() {
                if let Some(up) = step.get("upstream") {
                    pvs["spec"]["upstream"] = up.clone();
                }
                for (k, v) in step
                    .get("set")
                    .and_then(Value::as_object)
                    .into_iter()
                    .flatten()
                {
                    pvs["spec"]["upstream"][k] = v.clone();
                }
                calls.push(render(&pvs, &prs, &[repository("r", json!({}))], &[]));
            }
        }
        other => panic!("no parity adapter for conformance group {other}"),
    }
    calls
}

/// One component for all tests (compiled once per process, and cached).
fn component() -> &'static CoreComponent {
    static COMPONENT: OnceLock<CoreComponent> = OnceLock::new();
    COMPONENT.get_or_init(|| CoreComponent::new().expect("component loads"))
}

#[test]
fn every_conformance_case_gives_the_same_answer_natively_and_in_the_component() {
    let root = conformance_dir();
    let component = component();
    let mut groups: Vec<String> = std::fs::read_dir(root.join("cases"))
        .expect("cases")
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    groups.sort();
    let mut per_export: BTreeMap<&str, usize> = BTreeMap::new();
    let mut failures = Vec::new();
    let mut case_count = 0;
    for group in &groups {
        for case in cases(&root, group) {
            case_count += 1;
            let id = format!(
                "{group}/{}",
                case.file_name().unwrap_or_default().to_string_lossy()
            );
            let mut calls = calls_of(group, &case);
            assert!(!calls.is_empty(), "{id}: no call");
            calls.push(Call::Format(yaml_files(&case)));
            for call in &calls {
                *per_export.entry(call.name()).or_default() += 1;
                if let Err(diff) = check(component, call) {
                    failures.push(format!("{id} {}: {diff}", call.name()));
                }
            }
        }
    }
    println!(
        "parity: {case_count} cases of {} groups; calls per export: {per_export:?}",
        groups.len()
    );
    assert!(
        failures.is_empty(),
        "{} differences:\n{}",
        failures.len(),
        failures.join("\n")
    );
    for export in [
        "validate-package-variant",
        "plan-reconcile",
        "apply-mutations",
        "validate-package-variant-set",
        "render-package-variant-set",
        "format-files",
    ] {
        assert!(
            per_export.get(export).copied().unwrap_or(0) > 0,
            "{export} never called"
        );
    }
}

#[test]
fn the_yaml_round_trip_corpus_formats_the_same_natively_and_in_the_component() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../core-wasm/tests/corpus/roundtrip");
    let mut files: Vec<File> = std::fs::read_dir(&dir)
        .expect("corpus")
        .flatten()
        .filter_map(|e| {
            let bytes = std::fs::read(e.path()).ok()?;
            Some(File {
                path: e.file_name().to_string_lossy().into_owned(),
                content: String::from_utf8(bytes).ok()?,
            })
        })
        .collect();
    files.sort_by(|a, b| a.path.cmp(&b.path));
    assert!(files.len() >= 30, "corpus has {} files", files.len());
    check(component(), &Call::Format(files)).unwrap();
}

#[test]
fn the_benchmark_inputs_give_the_same_answer_natively_and_in_the_component() {
    let component = component();
    assert_eq!(native::version(), component.version().expect("version"));
    let mutation = common::mutation_input();
    check(component, &Call::Mutate(mutation)).unwrap();
    let (pvs, revisions, repositories) = common::pvs_inputs(500);
    let input = common::render_input_of(&pvs, &revisions, &repositories);
    check(component, &Call::Render(input.clone())).unwrap();
    // The same with explicit limits, and with limits so tight that the
    // render fails on its budget.
    let mut tight = input;
    tight.limits = Some(CelLimits {
        max_source_len: 4096,
        max_tokens: 512,
        max_nesting: 24,
        max_ast_nodes: 1024,
        max_ast_depth: 48,
        max_cost: 1_000_000,
        max_result_len: 65536,
        max_render_cost: 200,
    });
    check(component, &Call::Render(tight)).unwrap();
}

#[test]
fn invalid_input_is_reported_the_same_way() {
    let component = component();
    for call in [
        Call::ValidatePv("{not json".into()),
        Call::ValidatePvs("[]".into()),
        Call::Plan(PlanInput {
            package_variant: "{}".into(),
            package_revisions: vec!["{\"spec\": 1}".into()],
            now: NOW.into(),
        }),
        Call::Mutate(MutationInput {
            package_variant: "{}".into(),
            namespace: "ns".into(),
            name: "n".into(),
            files: Vec::new(),
            candidates: vec!["nope".into()],
        }),
        render(&json!({"spec": {"targets": 3}}), &[], &[], &[]),
        Call::Format(vec![File {
            path: "bad.yaml".into(),
            content: "a: [".into(),
        }]),
        Call::Clone(CloneInput {
            upstream: vec![file("Kptfile", "kind: [")],
            package: "p".into(),
            source: source("blueprints/web/v1"),
        }),
        Call::Upgrade(UpgradeInput {
            old_upstream: Vec::new(),
            new_upstream: vec![file("Kptfile", "kind: Kptfile\n")],
            local: vec![file("Kptfile", "a: {")],
            source: source("blueprints/web/v2"),
        }),
    ] {
        check(component, &call).unwrap_or_else(|d| panic!("{}: {d}", call.name()));
    }
}

fn file(path: &str, content: &str) -> File {
    File {
        path: path.into(),
        content: content.into(),
    }
}

fn source(r#ref: &str) -> UpstreamSource {
    UpstreamSource {
        repo: "/srv/git/blueprints".into(),
        directory: "web".into(),
        ref_: r#ref.into(),
        commit: "0123456789abcdef0123456789abcdef01234567".into(),
    }
}

/// Replaces `from` by `to` in `path` (which must contain it).
fn edit(files: &[File], path: &str, from: &str, to: &str) -> Vec<File> {
    files
        .iter()
        .map(|f| {
            if f.path == path {
                assert!(f.content.contains(from), "{path} lacks {from:?}");
                file(&f.path, &f.content.replacen(from, to, 1))
            } else {
                f.clone()
            }
        })
        .collect()
}

#[test]
fn clone_and_upgrade_give_the_same_answer_natively_and_in_the_component() {
    let component = component();
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/fleet/packages/blueprints/web");
    let v1 = yaml_files(&dir);
    assert!(
        v1.iter().any(|f| f.path == "Kptfile"),
        "blueprint has a Kptfile"
    );
    let clone = CloneInput {
        upstream: v1.clone(),
        package: "web-east".into(),
        source: source("blueprints/web/v1"),
    };
    check(component, &Call::Clone(clone.clone())).unwrap();
    let local = native::clone_package(&clone).expect("the blueprint clones");
    // Upstream v2 changes the image and adds a resource; the downstream
    // changed the replica count, and also the image (a conflict: ours kept).
    let v2 = {
        let mut v2 = edit(&v1, "deployment.yaml", "web:1.4.2", "web:2.0.0");
        v2.push(file(
            "service.yaml",
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: web # the front\nspec:\n  ports:\n  - port: 80\n",
        ));
        v2
    };
    let ours = edit(&local, "deployment.yaml", "replicas: 2", "replicas: 7");
    let conflicting = edit(&ours, "deployment.yaml", "web:1.4.2", "web:1.4.3");
    for local in [local.clone(), ours, conflicting] {
        let upgrade = UpgradeInput {
            old_upstream: v1.clone(),
            new_upstream: v2.clone(),
            local,
            source: source("blueprints/web/v2"),
        };
        check(component, &Call::Upgrade(upgrade.clone())).unwrap();
        let merged = native::upgrade_package(&upgrade).expect("the upgrade merges");
        assert!(
            merged.files.iter().any(|f| f.path == "service.yaml"),
            "upstream's new resource is taken"
        );
    }
}
