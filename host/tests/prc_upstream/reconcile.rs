//! Upstream's reconcile-level cases of the v1alpha2 PackageRevision
//! controller (`conformance/porch-upstream-prc`, see its README) against
//! the pure reconcile step, `pv_core::prc::reconcile::step`.
//!
//! A case's fakes (`input/client.yaml`, `cache.yaml`, `apireader.yaml`,
//! `fetcher.yaml`, the renderer in `reconciler.yaml`) answer each [`Call`]
//! the step asks for; the calls made are compared with
//! `expected/calls.yaml` (ours are named after upstream's mocks:
//! `client.Get` = GetPackageRevision or GetRepository, `apiReader.Get` =
//! ReadPackageRevision, `client.Patch` = MergePatch (merge) or ApplySpec
//! (apply), `client.Status().Patch` = ApplyStatus, `client.List` =
//! ListPackageRevisions, `renderer.Render` = Render; `content.*` reads are
//! folded into the answer of GetPackageContent and not compared; a Render
//! answered `busy` is the semaphore's try, not a render), the `applied`
//! objects with `<now>` as the step's time, and the outcome with
//! `expected/result.yaml`.
//!
//! Upstream's cases enter at different levels (Reconcile, the render
//! sub-reconciler, applySource, the render I/O helpers). The step is the
//! whole Reconcile, so a case that enters lower is run through the step
//! with the object prepared to reach that phase (finalizer and owner
//! reference present, a lifecycle set), and its expectation is lifted to
//! what upstream's Reconcile does with it: a sub-reconciler's error is
//! dropped (Reconcile returns `{}` and nil), a nil result continues to the
//! lifecycle phase (the driver stops at its first call), and the calls of
//! the entry's own segment are compared.
//!
//! Our intended deviations ([`DEVIATIONS`]) are listed by case: each must
//! fail upstream's expectation and pass the expectation adjusted by exactly
//! that deviation. Cases upstream cannot run itself are [`SKIPPED`] with
//! upstream's reason.

use porch_variants::engine_api::{ComponentCore, Core, NativeCore};
use porch_variants_tests::prc_cases::{case_dirs, cases_dir, merge_patch, strip, yaml, Tally};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use pv_core::api::meta::Condition;
use pv_core::api::package_revision::v1alpha2::{self, PackageRevision};
use pv_core::prc::reconcile::status::{self as status_builders};
use pv_core::prc::reconcile::{
    step, Answer, Call, Config, Content, Fetched, Files, Outcome, Rendered, Step, StepInput,
};
use pv_core::prc::{fieldindex, render as prc_render, FINALIZER};
use serde_json::{json, Value};

/// The time every step runs at (`<now>` in the cases).
const NOW: &str = "2026-04-29T12:00:00Z";

/// `<now>` replaced by [`NOW`], at any depth.
fn at_now(v: &Value) -> Value {
    match v {
        Value::String(s) if s == "<now>" => json!(NOW),
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), at_now(v))).collect()),
        Value::Array(a) => Value::Array(a.iter().map(at_now).collect()),
        v => v.clone(),
    }
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        v => v.to_string(),
    }
}

/// One case folder.
struct Case {
    dir: PathBuf,
    name: String,
}

impl Case {
    fn input(&self, f: &str) -> Value {
        yaml(&self.dir.join("input").join(f))
    }

    fn expected(&self, f: &str) -> Value {
        yaml(&self.dir.join("expected").join(f))
    }

    fn has_input(&self, f: &str) -> bool {
        self.dir.join("input").join(f).exists()
    }

    /// A value that may name a case file (`input/files/Kptfile`) or a
    /// folder (`input/files/old-upstream/`): the file's text, or the
    /// folder's files.
    fn file_text(&self, v: &Value) -> String {
        let s = text(v);
        if s.starts_with("input/") && self.dir.join(&s).is_file() {
            return std::fs::read_to_string(self.dir.join(&s)).unwrap_or_default();
        }
        s
    }

    /// Package files as a case writes them: a map of path to text (or to a
    /// case file), or a case folder.
    fn files(&self, v: &Value) -> Files {
        if let Some(dir) = v.as_str().filter(|s| s.starts_with("input/")) {
            return read_dir_files(&self.dir.join(dir));
        }
        v.as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.clone(), self.file_text(v)))
            .collect()
    }

    /// An object a fake returns: inline, or a case file.
    fn object(&self, v: &Value) -> Value {
        match v.as_str() {
            Some(f) if f.starts_with("input/") => yaml(&self.dir.join(f)),
            _ => v.clone(),
        }
    }
}

fn read_dir_files(dir: &Path) -> Files {
    fn walk(root: &Path, dir: &Path, out: &mut Files) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(root, &p, out);
            } else if let Ok(rel) = p.strip_prefix(root) {
                let text = std::fs::read_to_string(&p).unwrap_or_default();
                out.insert(rel.to_string_lossy().replace('\\', "/"), text);
            }
        }
    }
    let mut out = Files::new();
    walk(dir, dir, &mut out);
    out
}

/// A PackageRevision as the API server would return it: nulls dropped and
/// the required condition fields present (upstream's tests build
/// conditions in memory with Go's zero values).
fn api_object(v: &Value) -> Value {
    let mut v = strip(v);
    if let Some(list) = v
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
    {
        for c in list.iter_mut().filter_map(Value::as_object_mut) {
            for k in ["type", "status", "reason"] {
                c.entry(k).or_insert(json!(""));
            }
        }
    }
    v
}

/// A fake's `returns` as an answer: `{object}`, `{error: {notFound}}`,
/// `{error: text}`; anything else is success with null.
fn returns(case: &Case, r: &Value) -> Answer {
    if let Some(e) = r.get("error") {
        if e.get("notFound").is_some() {
            return Answer::NotFound {
                message: "not found".into(),
            };
        }
        return Answer::error(text(e));
    }
    if let Some(o) = r.get("object") {
        return Answer::ok(api_object(&case.object(o)));
    }
    Answer::ok(Value::Null)
}

/// A ContentCache content as cases write it, folded into our [`Content`]:
/// `key.revision`, `commitInfo`, `lock`/`GetLock` (self lock or its
/// error), `upstreamLock`, `resources` (or `{error}`).
fn content(case: &Case, c: &Value) -> Value {
    let mut out = Content {
        lifecycle: serde_json::from_value(c["lifecycle"].clone()).unwrap_or_default(),
        revision: c["key"]["revision"].as_i64().unwrap_or(0),
        published_by: text(&c["commitInfo"]["author"]),
        published_at: c["commitInfo"]["time"].as_str().map(str::to_string),
        ..Content::default()
    };
    let locator = |v: &Value| {
        serde_json::from_value::<pv_core::api::package_revision::Locator>(strip(v))
            .ok()
            .filter(|l| l.git.is_some())
    };
    match c.get("resources") {
        Some(r)
            if r.as_object()
                .is_some_and(|m| m.len() == 1 && m.contains_key("error")) =>
        {
            out.resources_error = Some(text(&r["error"]));
        }
        Some(r) => out.resources = Some(case.files(r)),
        None => {}
    }
    if let Some(g) = c.get("GetLock") {
        if let Some(e) = g.get("error") {
            out.lock_error = Some(text(e));
        } else {
            out.self_lock = locator(&g["lock"]);
        }
    } else {
        out.self_lock = locator(&c["lock"]["locator"]);
    }
    out.upstream_lock = locator(&c["upstreamLock"]["locator"]);
    serde_json::to_value(out).unwrap_or_default()
}

fn repo_key_matches(want: &Value, ns: &str, name: &str) -> bool {
    match want {
        Value::Object(m) => {
            m.get("namespace").is_none_or(|v| text(v) == ns)
                && m.get("name").is_none_or(|v| text(v) == name)
        }
        _ => true,
    }
}

/// The case's fakes answering our calls.
struct Fakes<'a> {
    case: &'a Case,
    pr: Value,
    client: Value,
    cache: Value,
    apireader: Value,
    fetcher: Value,
    renderer: Value,
    /// The renderer hands back what it is given.
    identity_renderer: bool,
    /// Every render slot is taken.
    busy: bool,
    /// The last draft's UpdateResources fails with this.
    update_error: Option<String>,
    gets: usize,
}

impl<'a> Fakes<'a> {
    fn new(case: &'a Case, pr: Value) -> Self {
        let reconciler = case.input("reconciler.yaml");
        Fakes {
            case,
            pr,
            client: case.input("client.yaml"),
            cache: case.input("cache.yaml"),
            apireader: case.input("apireader.yaml"),
            fetcher: case.input("fetcher.yaml"),
            renderer: reconciler["Renderer"]["returns"].clone(),
            identity_renderer: false,
            busy: false,
            update_error: None,
            gets: 0,
        }
    }

    /// The first cache fake of `method` whose args match.
    fn cache_entry(&self, method: &str, matches: impl Fn(&Value) -> bool) -> Option<Value> {
        self.cache[method]
            .as_array()
            .into_iter()
            .flatten()
            .find(|e| e.get("args").is_none_or(|a| a.is_string() || matches(a)))
            .map(|e| e["returns"].clone())
    }

    fn client_get(&self, kind: &str, key: &str) -> Option<Value> {
        self.client["get"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|e| text(&e["kind"]) == kind && text(&e["key"]) == key)
            .map(|e| e["returns"].clone())
    }

    /// A draft handle, or the failure a `returns` text describes.
    fn draft(&mut self, r: Option<Value>) -> Answer {
        match r {
            Some(Value::String(s)) => {
                if let Some(i) = s.find("UpdateResources returns") {
                    let rest = &s[i..];
                    let quoted = rest.split('\'').nth(1).unwrap_or(rest);
                    self.update_error = Some(quoted.to_string());
                }
                Answer::ok(json!("draft"))
            }
            Some(r) if r.get("error").is_some() => returns(self.case, &r),
            _ => Answer::ok(json!("draft")),
        }
    }

    fn answer(&mut self, call: &Call) -> Answer {
        let case = self.case;
        match call {
            Call::GetPackageRevision { namespace, name } => {
                self.gets += 1;
                let key = format!("{namespace}/{name}");
                if let Some(r) = self.client_get("PackageRevision", &key) {
                    return returns(case, &r);
                }
                if self.gets == 1 && !self.pr.is_null() {
                    return Answer::ok(self.pr.clone());
                }
                Answer::error(format!("the case has no PackageRevision {key}"))
            }
            Call::ReadPackageRevision { namespace, name } => {
                let key = format!("{namespace}/{name}");
                self.apireader["get"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|e| text(&e["key"]) == key)
                    .map(|e| returns(case, &e["returns"]))
                    .unwrap_or_else(|| Answer::error(format!("the case has no apiReader {key}")))
            }
            Call::GetRepository { namespace, name } => {
                let key = format!("{namespace}/{name}");
                match self.client_get("Repository", &key) {
                    Some(r) => returns(case, &r),
                    None if case.has_input("repository.yaml") => {
                        Answer::ok(case.input("repository.yaml"))
                    }
                    None => Answer::NotFound {
                        message: format!("repositories {name:?} not found"),
                    },
                }
            }
            Call::MergePatch { .. } => match self.client.get("patch") {
                Some(p) => returns(case, &p["returns"]),
                None => Answer::ok(Value::Null),
            },
            Call::ApplyStatus { .. } | Call::ApplySpec { .. } => Answer::ok(Value::Null),
            Call::ListPackageRevisions { .. } => Answer::ok(json!([])),
            Call::GetPackageContent { revision, .. } => {
                let r = self.cache_entry("GetPackageContent", |a| {
                    repo_key_matches(
                        &a["repoKey"],
                        &revision.repository.namespace,
                        &revision.repository.name,
                    ) && a.get("pkg").is_none_or(|p| text(p) == revision.package)
                        && a.get("workspace")
                            .is_none_or(|w| text(w) == revision.workspace)
                });
                match r {
                    Some(r) if r.get("content").is_some() => {
                        Answer::ok(content(case, &r["content"]))
                    }
                    Some(r) => returns(case, &r),
                    None => Answer::error(format!(
                        "the case has no content for {}/{}",
                        revision.package, revision.workspace
                    )),
                }
            }
            Call::CreateNewDraft { revision, .. } => {
                let r = self.cache_entry("CreateNewDraft", |a| {
                    a.get("pkgName").is_none_or(|p| text(p) == revision.package)
                });
                self.draft(r)
            }
            Call::CreateDraftFromExisting { .. } => {
                let r = self.cache_entry("CreateDraftFromExisting", |_| true);
                self.draft(r)
            }
            Call::UpdateResources { .. } => match &self.update_error {
                Some(e) => Answer::error(e.clone()),
                None => Answer::ok(Value::Null),
            },
            Call::CloseDraft { .. } => match self.cache_entry("CloseDraft", |_| true) {
                Some(r) => returns(case, &r),
                None => Answer::ok(Value::Null),
            },
            Call::UpdateLifecycle { lifecycle, .. } => {
                let want = serde_json::to_value(lifecycle).unwrap_or_default();
                match self.cache_entry("UpdateLifecycle", |a| {
                    a.get("desired").is_none_or(|d| *d == want)
                }) {
                    Some(r) if r.get("content").is_some() => {
                        Answer::ok(content(case, &r["content"]))
                    }
                    Some(r) => returns(case, &r),
                    None => Answer::error("the case has no UpdateLifecycle"),
                }
            }
            Call::DeletePackage { .. } => match self.cache_entry("DeletePackage", |_| true) {
                Some(r) => returns(case, &r),
                None => Answer::ok(Value::Null),
            },
            Call::FetchGit { .. } => {
                let Some(r) = self.fetcher["FetchExternalGitPackage"]
                    .as_array()
                    .and_then(|a| a.first())
                    .map(|e| e["returns"].clone())
                else {
                    return Answer::error("the case has no fetcher");
                };
                if r.get("error").is_some() {
                    return returns(case, &r);
                }
                let lock = serde_json::from_value(strip(&r["lock"])).unwrap_or_default();
                Answer::ok(
                    serde_json::to_value(Fetched {
                        files: case.files(&r["resources"]),
                        lock,
                    })
                    .unwrap_or_default(),
                )
            }
            Call::Render { files } => {
                if self.busy {
                    return Answer::ok(json!({"busy": true}));
                }
                if self.identity_renderer {
                    return Answer::ok(json!({"files": files}));
                }
                if let Some(e) = self.renderer.get("infraError") {
                    return Answer::error(text(e));
                }
                let rendered = Rendered {
                    busy: false,
                    files: case.files(&self.renderer["resources"]),
                    pipeline_error: self.renderer["pipelineErr"].as_str().map(str::to_string),
                };
                Answer::ok(serde_json::to_value(rendered).unwrap_or_default())
            }
        }
    }
}

/// What a reconcile did.
#[derive(Debug, Default)]
struct Obs {
    calls: Vec<(Call, Answer)>,
    /// The outcome, when the reconcile ended before the boundary.
    outcome: Option<Outcome>,
    /// The reconcile reached the lifecycle phase (a sub-reconciler's nil
    /// result: the pipeline continued).
    continued: bool,
}

/// The lifecycle phase's first call: a content read of the object's own
/// revision without files, not after a source wrote a draft (whose
/// read-back looks the same).
fn is_boundary(call: &Call, calls: &[(Call, Answer)], pr: &PackageRevision) -> bool {
    let Call::GetPackageContent {
        revision,
        resources: false,
    } = call
    else {
        return false;
    };
    revision.package == pr.spec.package_name
        && revision.workspace == pr.spec.workspace_name
        && revision.repository.name == pr.spec.repository
        && !calls
            .iter()
            .any(|(c, _)| matches!(c, Call::CreateNewDraft { .. }))
}

/// Steps the reconcile to its end (or, with `stop_at_lifecycle`, to the
/// lifecycle phase's first call), answering each call with `answer`; then
/// checks that the host's two other ways of running it (natively with the
/// calls made as they come, and in the component with the answers kept in
/// its instance) make the same calls given the same answers, and end alike.
fn drive(
    input: &mut StepInput,
    stop_at_lifecycle: Option<&PackageRevision>,
    answer: impl FnMut(&Call) -> Answer,
) -> Obs {
    let fresh = StepInput {
        answers: Vec::new(),
        ..input.clone()
    };
    let obs = drive_steps(input, stop_at_lifecycle, answer);
    let native: &dyn Core = &NativeCore;
    for core in [native, component()] {
        if let Err(e) = same_run(core, &fresh, &obs) {
            panic!("{} {}: {e}", core.name(), fresh.name);
        }
    }
    obs
}

/// One component for every case (compiled once per process).
fn component() -> &'static ComponentCore {
    static COMPONENT: std::sync::OnceLock<ComponentCore> = std::sync::OnceLock::new();
    COMPONENT.get_or_init(|| ComponentCore::load().expect("the component loads"))
}

/// `core`'s whole reconcile of `input`, answered with `obs`'s answers,
/// makes `obs`'s calls and ends as `obs` did.
fn same_run(core: &dyn Core, input: &StepInput, obs: &Obs) -> Result<(), String> {
    let mut made = 0usize;
    let mut mismatch = None;
    let ended = core
        .reconcile_package_revision(input, &mut |call| {
            let Some((want, answer)) = obs.calls.get(made) else {
                if !obs.continued && obs.calls.len() <= 200 {
                    mismatch = Some(format!("call {made} beyond the replay's: {call:?}"));
                }
                return None;
            };
            if call != want {
                mismatch = Some(format!("call {made}: {call:?}, the replay made {want:?}"));
                return None;
            }
            made += 1;
            Some(answer.clone())
        })
        .map_err(|e| e.to_string())?;
    if let Some(m) = mismatch {
        return Err(m);
    }
    let runaway = obs.calls.len() > 200;
    match (ended, &obs.outcome) {
        (None, _) if obs.continued || runaway => Ok(()),
        (Some(got), Some(want)) if !obs.continued && !runaway => {
            if &got == want && made == obs.calls.len() {
                Ok(())
            } else {
                Err(format!(
                    "ended with {got:?} after {made} calls, the replay with {want:?} after {}",
                    obs.calls.len()
                ))
            }
        }
        (got, want) => Err(format!(
            "ended with {got:?}, the replay with {want:?} (continued: {})",
            obs.continued
        )),
    }
}

/// [`drive`] by the replay step alone.
fn drive_steps(
    input: &mut StepInput,
    stop_at_lifecycle: Option<&PackageRevision>,
    mut answer: impl FnMut(&Call) -> Answer,
) -> Obs {
    let mut obs = Obs::default();
    loop {
        match step(input) {
            Step::Done { outcome } => {
                obs.outcome = Some(outcome);
                return obs;
            }
            Step::Call { call } => {
                if let Some(pr) = stop_at_lifecycle {
                    if is_boundary(&call, &obs.calls, pr) {
                        obs.continued = true;
                        return obs;
                    }
                }
                let a = answer(&call);
                input.answers.push(a.clone());
                obs.calls.push((call, a));
                if obs.calls.len() > 200 {
                    obs.outcome = Some(Outcome {
                        error: Some("runaway reconcile".into()),
                        ..Outcome::default()
                    });
                    return obs;
                }
            }
        }
    }
}

/// Our name of a call, after upstream's mocks (None: the semaphore's try).
fn call_name(c: &Call, a: &Answer) -> Option<&'static str> {
    Some(match c {
        Call::GetPackageRevision { .. } => "client.Get",
        Call::ReadPackageRevision { .. } => "apiReader.Get",
        Call::GetRepository { .. } => "client.Get Repository",
        Call::MergePatch { .. } => "client.Patch",
        Call::ApplyStatus { .. } => "client.Status().Patch",
        Call::ApplySpec { .. } => "client.Patch apply",
        Call::ListPackageRevisions { .. } => "client.List",
        Call::GetPackageContent { .. } => "cache.GetPackageContent",
        Call::CreateNewDraft { .. } => "cache.CreateNewDraft",
        Call::CreateDraftFromExisting { .. } => "cache.CreateDraftFromExisting",
        Call::UpdateResources { .. } => "draft.UpdateResources",
        Call::CloseDraft { .. } => "cache.CloseDraft",
        Call::UpdateLifecycle { .. } => "cache.UpdateLifecycle",
        Call::DeletePackage { .. } => "cache.DeletePackage",
        Call::FetchGit { .. } => "fetcher.FetchExternalGitPackage",
        Call::Render { .. } => {
            let busy = matches!(a, Answer::Ok { value } if value["busy"] == json!(true));
            if busy {
                return None;
            }
            "renderer.Render"
        }
    })
}

/// Upstream's name of an expected call, as [`call_name`] names ours (None:
/// folded into another call's answer, or a note).
fn expected_name(e: &Value) -> Option<&'static str> {
    let call = e.get("call")?.as_str()?;
    Some(match call {
        "client.Get" if text(&e["kind"]) == "Repository" => "client.Get Repository",
        "client.Get" => "client.Get",
        "apiReader.Get (uncached)" => "apiReader.Get",
        "client.Patch" if text(&e["patchType"]).starts_with("apply") => "client.Patch apply",
        "client.Patch" => "client.Patch",
        "client.Status().Patch" => "client.Status().Patch",
        "client.List" => "client.List",
        "cache.GetPackageContent" => "cache.GetPackageContent",
        "cache.CreateNewDraft" => "cache.CreateNewDraft",
        "cache.CreateDraftFromExisting" => "cache.CreateDraftFromExisting",
        "draft.UpdateResources" => "draft.UpdateResources",
        "cache.CloseDraft" => "cache.CloseDraft",
        "cache.UpdateLifecycle" => "cache.UpdateLifecycle",
        "cache.DeletePackage" => "cache.DeletePackage",
        "renderer.Render" => "renderer.Render",
        "fetcher.FetchExternalGitPackage" => "fetcher.FetchExternalGitPackage",
        c if c.starts_with("content.") => return None,
        c => panic!("unknown expected call {c}"),
    })
}

/// Whether a forbidden entry (`client.Patch (label)`, `any ContentCache
/// call`, ...) names our call.
fn forbids(entry: &str, c: &Call, a: &Answer) -> bool {
    let Some(name) = call_name(c, a) else {
        return false;
    };
    let cache = name.starts_with("cache.") || name == "draft.UpdateResources";
    match entry {
        "any ContentCache call" => cache,
        "client.Patch (spec)" => name == "client.Patch apply",
        e if e.starts_with("client.Patch (label") => name == "client.Patch",
        "client.Patch" => name == "client.Patch" || name == "client.Patch apply",
        "client.Status()" | "client.Status().Patch" => name == "client.Status().Patch",
        e if e.starts_with("client.List") => name == "client.List",
        "render-complete status apply" => {
            matches!(c, Call::ApplyStatus { object, .. }
                if object["status"]["conditions"][0]["type"] == "Rendered"
                && object["status"]["conditions"][0]["status"] == "True")
        }
        // Folded into GetPackageContent's answer: not a call of ours.
        "content.Key" | "content.GetCommitInfo" => false,
        e => name == e,
    }
}

/// Upstream's assertions on a merge-patched object.
fn patch_assert(after: &Value, assert: &str) -> Result<(), String> {
    let fins: Vec<String> = after["metadata"]["finalizers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(text)
        .collect();
    let owners = after["metadata"]["ownerReferences"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let ok = if let Some(f) = assert.strip_prefix("finalizers contains ") {
        fins.iter().any(|x| x == f)
    } else if let Some(f) = assert.strip_prefix("finalizers does not contain ") {
        !fins.iter().any(|x| x == f)
    } else if let Some(n) = assert.strip_prefix("len(ownerReferences) == ") {
        owners.len().to_string() == n
    } else if assert == "ownerReferences is empty" {
        owners.is_empty()
    } else if let Some(rest) = assert.strip_prefix("ownerReferences[0].") {
        let (field, want) = rest.split_once(" == ").unwrap_or((rest, ""));
        owners.first().is_some_and(|o| text(&o[field]) == want)
    } else if assert.contains("latest-revision'] = 'false'") {
        after["metadata"]["labels"][pv_core::prc::LATEST_REVISION_LABEL] == "false"
    } else {
        return Err(format!("unknown patch assertion {assert:?}"));
    };
    if ok {
        Ok(())
    } else {
        Err(format!("patch assertion {assert:?} fails on {after}"))
    }
}

/// The expected error of a result or output: null, `{any}`, or
/// `{contains, alsoContains, full_text_derived}` (the derived full text
/// must match exactly when given).
#[derive(Debug, Clone, PartialEq)]
enum WantErr {
    None,
    Any,
    Text {
        contains: Vec<String>,
        full: Option<String>,
    },
}

impl WantErr {
    fn parse(v: &Value) -> Self {
        if v.is_null() {
            return WantErr::None;
        }
        if v.get("any").is_some() {
            return WantErr::Any;
        }
        let mut contains = vec![text(&v["contains"])];
        contains.extend(v["alsoContains"].as_array().into_iter().flatten().map(text));
        WantErr::Text {
            contains,
            full: v["full_text_derived"].as_str().map(str::to_string),
        }
    }

    fn check(&self, got: Option<&str>, what: &str) -> Result<(), String> {
        match (self, got) {
            (WantErr::None, None) | (WantErr::Any, Some(_)) => Ok(()),
            (WantErr::None, Some(g)) => Err(format!(
                "{what}: error present where upstream has none: {g:?}"
            )),
            (_, None) => Err(format!("{what}: no error, want {self:?}")),
            (WantErr::Text { contains, full }, Some(g)) => {
                if let Some(f) = full {
                    if g != f {
                        return Err(format!("{what}: error {g:?}, want {f:?}"));
                    }
                }
                match contains.iter().find(|c| !g.contains(c.as_str())) {
                    Some(c) => Err(format!("{what}: error {g:?} lacks {c:?}")),
                    None => Ok(()),
                }
            }
        }
    }
}

/// Go's duration text (`0s`, `2s`, `1m30s`, `500ms`) in milliseconds.
fn go_duration_ms(s: &str) -> u64 {
    let (mut total, mut num) = (0f64, String::new());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() || c == '.' {
            num.push(c);
            continue;
        }
        let mut unit = c.to_string();
        while let Some(&n) = chars.peek() {
            if n.is_ascii_alphabetic() {
                unit.push(n);
                chars.next();
            } else {
                break;
            }
        }
        let n: f64 = num.parse().unwrap_or(0.0);
        num.clear();
        total += n * match unit.as_str() {
            "ms" => 1.0,
            "s" => 1000.0,
            "m" => 60_000.0,
            "h" => 3_600_000.0,
            _ => 0.0,
        };
    }
    total as u64
}

/// What upstream's Reconcile does with the case, at our step's level.
#[derive(Debug, Clone)]
struct Want {
    /// The expected calls of the entry's segment (None: not compared).
    calls: Option<Vec<Value>>,
    forbidden: Vec<String>,
    status_patches: Option<usize>,
    /// How the reconcile ends (ignored when `continues`).
    requeue: bool,
    requeue_after_ms: u64,
    error: WantErr,
    /// The pipeline goes on to the lifecycle phase.
    continues: bool,
    /// The error upstream's Reconcile drops (a sub-reconciler's or a
    /// helper's), which deviation 1 returns.
    swallowed: Option<WantErr>,
    /// applySource's output, checked on the draft write or the failure
    /// status.
    source: Option<Value>,
}

impl Want {
    fn new() -> Self {
        Want {
            calls: None,
            forbidden: Vec::new(),
            status_patches: None,
            requeue: false,
            requeue_after_ms: 0,
            error: WantErr::None,
            continues: false,
            swallowed: None,
            source: None,
        }
    }

    fn with_calls(mut self, case: &Case) -> Self {
        let c = case.expected("calls.yaml");
        if !c.is_null() {
            self.calls = Some(c["calls"].as_array().cloned().unwrap_or_default());
            self.forbidden = c["forbidden"]
                .as_array()
                .into_iter()
                .flatten()
                .map(text)
                .collect();
            self.status_patches = c["statusPatchCount"].as_u64().map(|n| n as usize);
        }
        self
    }

    /// A ctrl.Result from `result.yaml`; a sub-reconciler's `nil` result
    /// with no error continues, an error is dropped by Reconcile.
    fn result(mut self, r: &Value, entry_is_reconcile: bool) -> Self {
        let err = WantErr::parse(&r["error"]);
        let res = r.get("result").cloned().unwrap_or(Value::Null);
        if let Some(obj) = res.as_object() {
            self.requeue = obj.get("requeue").is_some_and(|v| v == true);
            self.requeue_after_ms = go_duration_ms(&text(&obj["requeueAfter"]));
        }
        if entry_is_reconcile {
            self.error = err;
        } else if err == WantErr::None {
            self.continues = !res.is_object();
        } else {
            self.swallowed = Some(err);
        }
        self
    }
}

/// Compares one of our calls with an expected entry.
fn compare_call(case: &Case, pr: &Value, ours: &Call, want: &Value) -> Result<(), String> {
    let args = &want["args"];
    let eq = |field: &str, got: &str, w: &Value| -> Result<(), String> {
        if w.is_null() || text(w) == "any" || text(w) == got {
            Ok(())
        } else {
            Err(format!("{field}: got {got:?}, want {w}"))
        }
    };
    match ours {
        Call::GetPackageRevision { namespace, name }
        | Call::ReadPackageRevision { namespace, name }
        | Call::GetRepository { namespace, name } => {
            eq("key", &format!("{namespace}/{name}"), &want["key"])?;
        }
        Call::ApplyStatus {
            field_manager,
            object,
        }
        | Call::ApplySpec {
            field_manager,
            object,
        } => {
            eq("fieldManager", field_manager, &want["fieldManager"])?;
            if let Some(applied) = want.get("applied") {
                let (got, w) = (strip(object), strip(&at_now(applied)));
                if got != w {
                    return Err(format!("applied: got {got}, want {w}"));
                }
            }
        }
        Call::MergePatch { patch, .. } => {
            let mut after = pr.clone();
            merge_patch(&mut after, patch);
            for a in want["upstreamAsserts"].as_array().into_iter().flatten() {
                patch_assert(&after, &text(a))?;
            }
            let expect = case.expected("object-after-patch.yaml");
            if !expect.is_null() && strip(&after) != strip(&expect) {
                return Err(format!("object after patch: got {after}, want {expect}"));
            }
        }
        Call::ListPackageRevisions {
            namespace,
            repository,
            package_name,
        } => {
            let o = &want["options"];
            eq("namespace", namespace, &o["namespace"])?;
            eq(
                "spec.repository",
                repository,
                &o["matchingFields"]["spec.repository"],
            )?;
            eq(
                "spec.packageName",
                package_name,
                &o["matchingFields"]["spec.packageName"],
            )?;
        }
        Call::GetPackageContent { revision, .. }
        | Call::CreateNewDraft { revision, .. }
        | Call::CreateDraftFromExisting { revision }
        | Call::UpdateLifecycle { revision, .. }
        | Call::DeletePackage { revision } => {
            if !repo_key_matches(
                &args["repoKey"],
                &revision.repository.namespace,
                &revision.repository.name,
            ) {
                return Err(format!(
                    "repoKey: got {:?}, want {}",
                    revision.repository, args["repoKey"]
                ));
            }
            let pkg = args.get("pkg").or_else(|| args.get("pkgName"));
            eq("pkg", &revision.package, pkg.unwrap_or(&Value::Null))?;
            eq("workspace", &revision.workspace, &args["workspace"])?;
            match ours {
                Call::UpdateLifecycle { lifecycle, .. } => {
                    let got = serde_json::to_value(lifecycle).unwrap_or_default();
                    eq("desired", &text(&got), &args["desired"])?;
                }
                Call::CreateNewDraft { lifecycle, .. } => {
                    let got = serde_json::to_value(lifecycle).unwrap_or_default();
                    eq("lifecycle", &text(&got), &args["lifecycle"])?;
                }
                _ => {}
            }
        }
        Call::UpdateResources { files, message, .. } => {
            eq("commitMsg", message, &args["commitMsg"])?;
            compare_files("resources", files, &args["resources"])?;
        }
        Call::CloseDraft { version, .. } => {
            eq("version", &version.to_string(), &args["version"])?;
        }
        Call::Render { files } => compare_files("render input", files, &args["resources"])?,
        Call::FetchGit { namespace, git } => {
            eq("namespace", namespace, &args["namespace"])?;
            let got = serde_json::to_value(git).unwrap_or_default();
            if !args["gitSpec"].is_null() && strip(&got) != strip(&args["gitSpec"]) {
                return Err(format!("gitSpec: got {got}, want {}", args["gitSpec"]));
            }
        }
    }
    Ok(())
}

/// Files against a case's description: a JSON map in a string
/// (`'{"Kptfile": "x"}'`); prose (`map containing Kptfile`) checks the
/// key named.
fn compare_files(what: &str, got: &Files, want: &Value) -> Result<(), String> {
    let Some(s) = want.as_str() else {
        return Ok(());
    };
    if let Ok(map) = serde_json::from_str::<Files>(s) {
        return if *got == map {
            Ok(())
        } else {
            Err(format!("{what}: got {got:?}, want {map:?}"))
        };
    }
    if let Some(key) = s.strip_prefix("map containing ") {
        if !got.contains_key(key) {
            return Err(format!("{what}: {got:?} has no {key}"));
        }
    }
    Ok(())
}

/// Compares what the reconcile did (the calls of the entry's segment and
/// how it ended) with `want`; returns every difference.
fn compare(
    case: &Case,
    pr: &Value,
    segment: &[(Call, Answer)],
    obs: &Obs,
    want: &Want,
) -> Vec<String> {
    let mut diffs = Vec::new();
    let ours: Vec<(&Call, &'static str)> = segment
        .iter()
        .filter_map(|(c, a)| call_name(c, a).map(|n| (c, n)))
        .collect();
    if let Some(calls) = &want.calls {
        let expected: Vec<(&Value, &'static str)> = calls
            .iter()
            .filter_map(|e| expected_name(e).map(|n| (e, n)))
            .collect();
        let names = |v: Vec<&'static str>| v.join(", ");
        if ours.len() != expected.len() || ours.iter().zip(&expected).any(|((_, a), (_, b))| a != b)
        {
            diffs.push(format!(
                "calls: got [{}], want [{}]",
                names(ours.iter().map(|(_, n)| *n).collect()),
                names(expected.iter().map(|(_, n)| *n).collect())
            ));
        } else {
            for (i, ((c, n), (e, _))) in ours.iter().zip(&expected).enumerate() {
                if let Err(d) = compare_call(case, pr, c, e) {
                    diffs.push(format!("call {i} {n}: {d}"));
                }
            }
        }
    }
    for f in &want.forbidden {
        if let Some((c, _)) = segment.iter().find(|(c, a)| forbids(f, c, a)) {
            diffs.push(format!("forbidden {f}: {c:?}"));
        }
    }
    if let Some(n) = want.status_patches {
        let got = ours
            .iter()
            .filter(|(_, n)| *n == "client.Status().Patch")
            .count();
        if got != n {
            diffs.push(format!("status patches: got {got}, want {n}"));
        }
    }
    if want.continues {
        if !obs.continued {
            diffs.push(format!(
                "the pipeline stopped ({:?}) where upstream continues",
                obs.outcome
            ));
        }
    } else if obs.continued {
        diffs.push("the pipeline continued where upstream stops".into());
    } else if let Some(o) = &obs.outcome {
        if o.requeue != want.requeue || o.requeue_after_ms != want.requeue_after_ms {
            diffs.push(format!(
                "result: got requeue={} after={}ms, want requeue={} after={}ms",
                o.requeue, o.requeue_after_ms, want.requeue, want.requeue_after_ms
            ));
        }
        if let Err(d) = want.error.check(o.error.as_deref(), "outcome") {
            diffs.push(d);
        }
    }
    diffs
}

/// How a case enters the controller.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Entry {
    Reconcile,
    Render,
    Source,
    ReadResources,
    WriteRendered,
    SyncKptfile,
    Semaphore,
}

fn entry_of(case: &Case) -> Entry {
    let r = text(&case.input("reconciler.yaml")["entry"]);
    match r.split('(').next().unwrap_or_default() {
        "reconcileRender" => Entry::Render,
        "applySource" => Entry::Source,
        "readPackageResources" => Entry::ReadResources,
        "writeRenderedResources" => Entry::WriteRendered,
        "syncKptfileFields" => Entry::SyncKptfile,
        "renderWithConcurrencyLimit" => Entry::Semaphore,
        _ => Entry::Reconcile,
    }
}

/// The object a helper case runs on when it names none: a rendered
/// draft's source trigger.
fn default_pr() -> Value {
    json!({
        "apiVersion": "porch.kpt.dev/v1alpha2", "kind": "PackageRevision",
        "metadata": {"name": "test-pr", "namespace": "default"},
        "spec": {"packageName": "my-pkg", "repository": "my-repo",
            "workspaceName": "ws-1", "lifecycle": "Draft"},
        "status": {"creationSource": "init",
            "conditions": [{"type": "Rendered", "status": "Unknown", "reason": ""}]},
    })
}

/// The object prepared to reach a phase: finalizer and Repository owner
/// reference present (the ownership phase does nothing) and a lifecycle
/// set (the pipeline does not stop before the source phase).
fn prepared(mut pr: Value) -> Value {
    let repo = text(&pr["spec"]["repository"]);
    let meta = pr["metadata"].as_object_mut().cloned().unwrap_or_default();
    let mut meta = Value::Object(meta);
    let fins = meta["finalizers"].as_array().cloned().unwrap_or_default();
    if !fins.iter().any(|f| f == FINALIZER) {
        let mut fins = fins;
        fins.push(json!(FINALIZER));
        meta["finalizers"] = json!(fins);
    }
    meta["ownerReferences"] = json!([{"apiVersion": "config.porch.kpt.dev/v1alpha1",
        "kind": "Repository", "name": repo, "uid": "repo-uid"}]);
    pr["metadata"] = meta;
    if text(&pr["spec"]["lifecycle"]).is_empty() {
        pr["spec"]["lifecycle"] = json!("Draft");
    }
    pr
}

/// A reconcile-level case (every group but the builders, predicates and
/// indexes): returns the differences from upstream's expectation, and from
/// the expectation as deviation `dev` adjusts it.
fn reconcile_case(case: &Case, dev: Option<&Deviation>) -> (Vec<String>, Vec<String>) {
    let entry = entry_of(case);
    let pr_file = case.input("packagerevision.yaml");
    let raw_pr = match (entry, pr_file.is_null()) {
        (Entry::Reconcile, _) => pr_file.clone(),
        (_, true) => default_pr(),
        (_, false) => pr_file.clone(),
    };
    let pr_value = if entry == Entry::Reconcile {
        api_object(&raw_pr)
    } else {
        api_object(&prepared(raw_pr))
    };
    let pr: PackageRevision = serde_json::from_value(pr_value.clone()).unwrap_or_default();
    let request = case.input("request.yaml");
    let (namespace, name) = if entry == Entry::Reconcile && !request.is_null() {
        (
            text(&request["request"]["namespace"]),
            text(&request["request"]["name"]),
        )
    } else {
        (pr.metadata.namespace.clone(), pr.metadata.name.clone())
    };
    let reconciler = case.input("reconciler.yaml");
    let reconciler_text =
        std::fs::read_to_string(case.dir.join("input/reconciler")).unwrap_or_default();
    let render = match entry {
        Entry::Reconcile => !reconciler_text.contains("Renderer: null"),
        Entry::Source => false,
        Entry::Render => !reconciler["Renderer"].is_null(),
        _ => true,
    };
    let mut fakes = Fakes::new(
        case,
        if pr_file.is_null() && entry == Entry::Reconcile {
            Value::Null
        } else {
            pr_value.clone()
        },
    );
    let mut want = Want::new().with_calls(case);
    match entry {
        Entry::ReadResources => {
            let err = WantErr::parse(&case.expected("result.yaml")["error"]);
            fakes.cache = case.input("cache.yaml");
            want.swallowed = Some(err);
        }
        Entry::WriteRendered => {
            // The helper writes {Kptfile: x}: the content read and the
            // renderer hand those files on.
            fakes.cache["GetPackageContent"] =
                json!([{"returns": {"content": {"resources": {"Kptfile": "x"}}}}]);
            fakes.identity_renderer = true;
            want.swallowed = Some(WantErr::parse(&case.expected("result.yaml")["error"]));
        }
        Entry::SyncKptfile => {
            let files = case.input("resources.yaml");
            fakes.cache =
                json!({"GetPackageContent": [{"returns": {"content": {"resources": files}}}]});
            fakes.identity_renderer = true;
            want.continues = true;
        }
        Entry::Semaphore => {
            fakes.cache = json!({"GetPackageContent": [{"returns": {"content": {"resources": {"Kptfile": "x"}}}}]});
            fakes.busy = true;
            let r = case.expected("result.yaml");
            want.requeue = r["requeue"]["requeue"] == true;
            want.requeue_after_ms = go_duration_ms(&text(&r["requeue"]["requeueAfter"]));
            want.error = WantErr::parse(&r["error"]);
        }
        Entry::Source => {
            let out = case.expected("output.yaml");
            let err = WantErr::parse(&out["error"]);
            if err != WantErr::None {
                want.swallowed = Some(err);
            } else if text(&out["creationSource"]).is_empty() {
                want.continues = true;
            } else {
                // A source that ran: Reconcile writes it and requeues.
                want.requeue = true;
                let readback = json!({"args": {"pkg": pr.spec.package_name,
                    "workspace": pr.spec.workspace_name},
                    "returns": {"content": {"lifecycle": "Draft"}}});
                let mut entries = fakes.cache["GetPackageContent"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                entries.push(readback);
                if fakes.cache.is_null() {
                    fakes.cache = json!({});
                }
                fakes.cache["GetPackageContent"] = json!(entries);
            }
            want.source = Some(out);
        }
        Entry::Render | Entry::Reconcile => {
            want = want.result(&case.expected("result.yaml"), entry == Entry::Reconcile);
        }
    }
    let mut input = StepInput {
        namespace,
        name,
        now: NOW.into(),
        config: Config {
            render,
            ..Config::default()
        },
        answers: Vec::new(),
    };
    correct_creation_source(case, &pr, &mut want);
    let boundary = (entry != Entry::Reconcile).then_some(&pr);
    let obs = drive(&mut input, boundary, |c| fakes.answer(c));
    let segment = segment_of(entry, &obs.calls);
    let mut diffs = compare(case, &pr_value, &segment, &obs, &want);
    if let Some(out) = &want.source {
        diffs.extend(check_source_output(&obs.calls, out));
    }
    let adjusted = dev.map(|d| {
        let mut w = want.clone();
        d.adjust(&mut w);
        let mut diffs = compare(case, &pr_value, &segment, &obs, &w);
        if let Some(out) = &w.source {
            diffs.extend(check_source_output(&obs.calls, out));
        }
        diffs
    });
    (diffs, adjusted.unwrap_or_default())
}

/// The calls of the entry's own segment: everything for Reconcile; after
/// the first Get for a sub-reconciler; for applySource up to the draft
/// write or the failure status; for the render helpers their own calls.
fn segment_of(entry: Entry, calls: &[(Call, Answer)]) -> Vec<(Call, Answer)> {
    let pos = |f: &dyn Fn(&Call) -> bool| calls.iter().position(|(c, _)| f(c));
    let (from, to) = match entry {
        Entry::Reconcile => (0, calls.len()),
        Entry::Render => (1, calls.len()),
        Entry::Source => {
            let end = pos(&|c| {
                matches!(c, Call::CreateNewDraft { .. })
                    || matches!(c, Call::ApplyStatus { object, .. }
                        if object["status"]["conditions"].as_array().is_some_and(|a| a.len() == 2))
            })
            .unwrap_or(calls.len());
            (1, end)
        }
        Entry::ReadResources => {
            let start =
                pos(&|c| matches!(c, Call::GetPackageContent { .. })).unwrap_or(calls.len());
            (start, (start + 1).min(calls.len()))
        }
        Entry::WriteRendered => {
            let start =
                pos(&|c| matches!(c, Call::CreateDraftFromExisting { .. })).unwrap_or(calls.len());
            let end = calls[start..]
                .iter()
                .position(|(c, _)| matches!(c, Call::ApplyStatus { .. }))
                .map_or(calls.len(), |i| start + i);
            (start, end)
        }
        Entry::SyncKptfile => {
            let start =
                pos(&|c| matches!(c, Call::CloseDraft { .. })).map_or(calls.len(), |i| i + 1);
            let end = calls[start..]
                .iter()
                .position(|(c, _)| {
                    matches!(c, Call::ApplyStatus { field_manager, .. }
                    if field_manager == status_builders::RENDER_MANAGER)
                })
                .map_or(calls.len(), |i| start + i);
            (start, end)
        }
        Entry::Semaphore => {
            let start = pos(&|c| matches!(c, Call::Render { .. })).unwrap_or(calls.len());
            (start, calls.len())
        }
    };
    calls[from.min(to)..to].to_vec()
}

/// applySource's `(resources, creationSource, error)` against what the
/// reconcile did with them: the draft write, or the failure status.
fn check_source_output(calls: &[(Call, Answer)], out: &Value) -> Vec<String> {
    let mut diffs = Vec::new();
    let written = calls.iter().find_map(|(c, _)| match c {
        Call::UpdateResources { files, message, .. } => Some((files, message)),
        _ => None,
    });
    let failed = calls.iter().find_map(|(c, _)| match c {
        Call::ApplyStatus { object, .. }
            if object["status"]["conditions"]
                .as_array()
                .is_some_and(|a| a.len() == 2) =>
        {
            Some(object["status"]["conditions"].clone())
        }
        _ => None,
    });
    let source = text(&out["creationSource"]);
    match (source.is_empty(), written) {
        (true, Some((_, m))) => diffs.push(format!("a source ran ({m}) where none should")),
        (false, None) => diffs.push(format!("no draft was written, want source {source}")),
        (false, Some((files, message))) => {
            if *message != source {
                diffs.push(format!("creationSource: got {message}, want {source}"));
            }
            let r = &out["resources"];
            if let Some(keys) = r.get("hasKeys") {
                for k in keys.as_array().into_iter().flatten().map(text) {
                    if !files.contains_key(&k) {
                        diffs.push(format!("resources lack {k}: {:?}", files.keys()));
                    }
                }
                for (k, v) in r.as_object().into_iter().flatten() {
                    if let Some(file) = k.strip_suffix(" contains") {
                        for s in v.as_array().into_iter().flatten().map(text) {
                            if !files.get(file).is_some_and(|t| t.contains(&s)) {
                                diffs.push(format!("{file} lacks {s:?}: {:?}", files.get(file)));
                            }
                        }
                    }
                }
            } else if r.is_object() {
                let want: Files = r
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(k, v)| (k.clone(), text(v)))
                    .collect();
                if *files != want {
                    diffs.push(format!("resources: got {files:?}, want {want:?}"));
                }
            }
        }
        (true, None) => {}
    }
    let err = WantErr::parse(&out["error"]);
    let message = failed.as_ref().map(|c| text(&c[0]["message"]));
    if let Err(d) = err.check(message.as_deref(), "applySource error (the failure status)") {
        diffs.push(d);
    }
    if let Some(c) = &failed {
        let types: Vec<String> = c
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| text(&c["type"]))
            .collect();
        if types != ["Ready", "Rendered"] || c[0]["message"] != c[1]["message"] {
            diffs.push(format!("setSourceFailed: got conditions {c}"));
        }
    }
    diffs
}

/// `prc-status-field-managers`: the applies each builder makes.
fn field_managers(case: &Case) -> Result<(), String> {
    let pr_value = api_object(&case.input("packagerevision.yaml"));
    let pr: PackageRevision =
        serde_json::from_value(pr_value.clone()).map_err(|e| e.to_string())?;
    let call = case.input("call.yaml");
    let conditions: Vec<Condition> = call["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| serde_json::from_value(at_now(&strip(c))).map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    let calls: Vec<Call> = match text(&call["fn"]).as_str() {
        "updateStatus" => {
            let content = case.input("content.yaml");
            let content: Option<Content> = (!content.is_null())
                .then(|| serde_json::from_value(self::content(case, &content)))
                .transpose()
                .map_err(|e| e.to_string())?;
            let source = text(&call["creationSource"]);
            vec![status_builders::main_status(
                &pr,
                &conditions,
                (!source.is_empty()).then_some(source.as_str()),
                content.as_ref(),
            )]
        }
        "updateRenderStatus" => vec![status_builders::render_status(
            &pr,
            &text(&call["renderingVersion"]),
            &text(&call["observedVersion"]),
            conditions.first().cloned().unwrap_or_default(),
        )],
        "setRenderFailed" => status_builders::render_failed_applies(
            &pr,
            "assert.AnError general error for testing",
            NOW,
        )
        .to_vec(),
        _ => status_builders::kptfile_applies(&pr, &case.input("kptfile.yaml")),
    };
    let segment: Vec<(Call, Answer)> = calls
        .into_iter()
        .map(|c| (c, Answer::ok(Value::Null)))
        .collect();
    let mut want = Want::new().with_calls(case);
    want.continues = true;
    let obs = Obs {
        continued: true,
        ..Obs::default()
    };
    let diffs = compare(case, &pr_value, &segment, &obs, &want);
    if diffs.is_empty() {
        Ok(())
    } else {
        Err(diffs.join("; "))
    }
}

/// `prc-render-request-predicate`.
fn predicate(case: &Case) -> Result<(), String> {
    let input = case.input("case.yaml");
    let annotations = |v: &Value| -> BTreeMap<String, String> {
        v.as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.clone(), text(v)))
            .collect()
    };
    let got = prc_render::render_request_changed(
        &annotations(&input["old"]["annotations"]),
        &annotations(&input["new"]["annotations"]),
    );
    let want = case.expected("output.yaml")["fires"] == true;
    (got == want)
        .then_some(())
        .ok_or(format!("fires: got {got}, want {want}"))
}

/// `prc-fieldindex`.
fn field_index(case: &Case) -> Result<(), String> {
    let want = case.expected("output.yaml");
    if let Some(indexed) = want.get("indexed") {
        let selectors = &case.input("selectors.yaml")["PackageRevisionSelectableFields"];
        let ours: Vec<&str> = v1alpha2::SELECTABLE_FIELDS.to_vec();
        if *selectors != json!(ours) {
            return Err(format!("selectors: ours {ours:?}, upstream {selectors}"));
        }
        if *indexed != json!(fieldindex::INDEXED_FIELDS)
            || !fieldindex::unindexed_selectors().is_empty()
        {
            return Err(format!(
                "indexed {:?}, unindexed {:?}, want {indexed}",
                fieldindex::INDEXED_FIELDS,
                fieldindex::unindexed_selectors()
            ));
        }
        return Ok(());
    }
    let pr: PackageRevision =
        serde_json::from_value(api_object(&case.input("packagerevision.yaml")))
            .map_err(|e| e.to_string())?;
    let got = json!(fieldindex::index_values(&pr));
    (got == want)
        .then_some(())
        .ok_or(format!("got {got}, want {want}"))
}

/// `api-v1alpha2-selectable-fields`: the shipped CRD's `selectableFields`
/// against our constants, both ways, and our constants against upstream's.
fn selectable_fields(case: &Case) -> Result<(), String> {
    let constants = &case.input("constants.yaml")["PackageRevisionSelectableFields"];
    if *constants != json!(v1alpha2::SELECTABLE_FIELDS) {
        return Err(format!(
            "constants: ours {:?}, upstream {constants}",
            v1alpha2::SELECTABLE_FIELDS
        ));
    }
    let crd = yaml(&cases_dir().join("crds/porch.kpt.dev_packagerevisions.yaml"));
    let version = crd["spec"]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|v| v["name"] == "v1alpha2")
        .ok_or("the CRD has no v1alpha2")?;
    let mut in_crd: Vec<String> = version["selectableFields"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| text(&f["jsonPath"]))
        .collect();
    let mut ours = v1alpha2::selectable_json_paths();
    let want: Vec<String> = case.expected("output.yaml")["selectableFields"]
        .as_array()
        .into_iter()
        .flatten()
        .map(text)
        .collect();
    if in_crd.is_empty() || in_crd != want {
        return Err(format!("CRD selectableFields {in_crd:?}, want {want:?}"));
    }
    in_crd.sort();
    ours.sort();
    (in_crd == ours)
        .then_some(())
        .ok_or(format!("CRD {in_crd:?} vs constants {ours:?}"))
}

/// `prc-kpt-renderer`: the controller's kpt renderer with builtins only.
fn kpt_renderer(case: &Case) -> Result<(), String> {
    let files = read_dir_files(&case.dir.join("input/resources"));
    let want = case.expected("output.yaml");
    let out = prc_render::render_package(
        &files,
        &pv_core::render::RenderOptions::default(),
        &mut pv_core::render::BuiltinsOnly,
    )
    .map_err(|e| format!("infrastructure error {e}"))?;
    if let Some(e) = out.pipeline_error {
        return Err(format!("pipeline error {e}"));
    }
    if let Some(keys) = want["resourcesContainKeys"].as_array() {
        for k in keys.iter().map(text) {
            if !out.files.contains_key(&k) {
                return Err(format!("output lacks {k}: {:?}", out.files.keys()));
            }
        }
    } else if out.files != files {
        return Err(format!(
            "output {:?} differs from input {files:?}",
            out.files
        ));
    }
    Ok(())
}

/// `prc-integration`: the suite's end state with an in-memory API server
/// (Get, merge patches, status applies by condition type, Lists with field
/// selectors through [`fieldindex::matches_fields`]; no Repository kind, as
/// in the suite's envtest scheme) and the case's ContentCache fakes.
fn integration(case: &Case) -> Result<(), String> {
    let want = case.expected("output.yaml");
    let name_of = |v: &Value| text(&v["metadata"]["name"]).replace("<n>", "1");
    let mut objects: Vec<Value> = match case.input("packagerevisions.yaml") {
        Value::Array(a) => a,
        _ => vec![case.input("packagerevision.yaml")],
    };
    objects.retain(|o| !o.is_null());
    for o in &mut objects {
        o["metadata"]["name"] = json!(name_of(o));
        *o = api_object(o);
    }
    if let Some(fields) = case.input("list.yaml").get("matchingFields") {
        let fields: BTreeMap<String, String> =
            serde_json::from_value(fields.clone()).map_err(|e| e.to_string())?;
        let found: Vec<String> = objects
            .iter()
            .filter_map(|o| serde_json::from_value::<PackageRevision>(o.clone()).ok())
            .filter(|p| fieldindex::matches_fields(p, &fields))
            .map(|p| p.metadata.name)
            .collect();
        let ok = match (text(&want["result"]).as_str(), want["count"].as_u64()) {
            (_, Some(n)) => found.len() as u64 == n,
            ("empty list", _) => found.is_empty(),
            _ => found.contains(&name_of(&objects[0])),
        };
        return ok
            .then_some(())
            .ok_or(format!("listed {found:?}, want {want}"));
    }
    let request = case.input("request.yaml");
    let (namespace, name) = match objects.first() {
        Some(o) if request.is_null() => (text(&o["metadata"]["namespace"]), name_of(o)),
        _ => (text(&request["namespace"]), text(&request["name"])),
    };
    let mut store: BTreeMap<String, Value> =
        objects.iter().map(|o| (name_of(o), o.clone())).collect();
    let mut fakes = Fakes::new(case, Value::Null);
    let mut input = StepInput {
        namespace,
        name,
        now: NOW.into(),
        config: Config {
            render: false,
            ..Config::default()
        },
        answers: Vec::new(),
    };
    let obs = drive(&mut input, None, |c| match c {
        Call::GetPackageRevision { name, .. } => store
            .get(name)
            .cloned()
            .map(Answer::ok)
            .unwrap_or(Answer::NotFound {
                message: format!("packagerevisions {name:?} not found"),
            }),
        Call::GetRepository { .. } => {
            Answer::error("no kind is registered for the type v1alpha1.Repository in scheme")
        }
        Call::MergePatch { name, patch, .. } => match store.get_mut(name) {
            Some(o) => {
                merge_patch(o, patch);
                Answer::ok(Value::Null)
            }
            None => Answer::NotFound {
                message: "not found".into(),
            },
        },
        Call::ApplyStatus { object, .. } | Call::ApplySpec { object, .. } => {
            let name = text(&object["metadata"]["name"]);
            if let Some(o) = store.get_mut(&name) {
                apply_to(o, object);
            }
            Answer::ok(Value::Null)
        }
        Call::ListPackageRevisions {
            repository,
            package_name,
            ..
        } => {
            let fields = BTreeMap::from([
                ("spec.repository".to_string(), repository.clone()),
                ("spec.packageName".to_string(), package_name.clone()),
            ]);
            let items: Vec<Value> = store
                .values()
                .filter(|o| {
                    serde_json::from_value::<PackageRevision>((*o).clone())
                        .is_ok_and(|p| fieldindex::matches_fields(&p, &fields))
                })
                .cloned()
                .collect();
            Answer::ok(json!(items))
        }
        c => fakes.answer(c),
    });
    let mut want_r = Want::new().result(&case.expected("result.yaml"), true);
    want_r.calls = None;
    let diffs = compare(case, &Value::Null, &obs.calls, &obs, &want_r);
    let mut diffs = diffs;
    let stored = store.get(&input.name).cloned().unwrap_or(Value::Null);
    for (k, v) in case
        .expected("stored.yaml")
        .as_object()
        .into_iter()
        .flatten()
    {
        if k == "spec.lifecycle" {
            if stored["spec"]["lifecycle"] != *v {
                diffs.push(format!(
                    "stored spec.lifecycle {}",
                    stored["spec"]["lifecycle"]
                ));
            }
            continue;
        }
        let ty = k
            .strip_prefix("status.conditions[type=")
            .and_then(|r| r.strip_suffix(']'))
            .ok_or(format!("unknown stored key {k}"))?;
        let c = stored["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == ty)
            .cloned()
            .unwrap_or(Value::Null);
        let ok = c["status"] == v["status"]
            && c["reason"] == v["reason"]
            && v["messageContains"]
                .as_str()
                .is_none_or(|m| text(&c["message"]).contains(m));
        if !ok {
            diffs.push(format!("stored {k}: got {c}, want {v}"));
        }
    }
    if diffs.is_empty() {
        Ok(())
    } else {
        Err(diffs.join("; "))
    }
}

/// A server-side apply into the stored object, roughly: conditions merged
/// by type, other fields replaced.
fn apply_to(stored: &mut Value, applied: &Value) {
    for part in ["spec", "status"] {
        let Some(fields) = applied.get(part).and_then(Value::as_object) else {
            continue;
        };
        let target = stored
            .as_object_mut()
            .map(|o| o.entry(part).or_insert(json!({})))
            .and_then(Value::as_object_mut);
        let Some(target) = target else { continue };
        for (k, v) in fields {
            if k == "conditions" {
                let list = target.entry(k.clone()).or_insert(json!([]));
                let Some(list) = list.as_array_mut() else {
                    continue;
                };
                for c in v.as_array().into_iter().flatten() {
                    list.retain(|x| x["type"] != c["type"]);
                    list.push(c.clone());
                }
            } else {
                target.insert(k.clone(), v.clone());
            }
        }
    }
}

/// A deviation of ours from upstream that a case shows.
struct Deviation {
    case: &'static str,
    /// Which of the four intended deviations.
    number: u8,
    /// The error our reconcile returns where upstream's returns none.
    error: &'static str,
    why: &'static str,
}

impl Deviation {
    /// Upstream's expectation as the deviation changes it: the error is
    /// returned (1, 2), and a failed re-read records Rendered=False under
    /// the render manager (2).
    fn adjust(&self, w: &mut Want) {
        if let Some(WantErr::Text { full: Some(f), .. }) = &w.swallowed {
            assert_eq!(f, self.error, "{}: the case's own error text", self.case);
        }
        if self.number == 5 {
            // The package's content is read to see whether it is still in
            // Git; it is, so the revision stays blocked as upstream's.
            if let Some(calls) = &mut w.calls {
                calls.push(json!({"call": "cache.GetPackageContent"}));
            }
            return;
        }
        w.error = WantErr::Text {
            contains: Vec::new(),
            full: Some(self.error.to_string()),
        };
        w.continues = false;
        if self.number == 2 {
            if let Some(calls) = &mut w.calls {
                calls.push(json!({"call": "client.Status().Patch",
                    "fieldManager": status_builders::RENDER_MANAGER,
                    "applied": {"apiVersion": "porch.kpt.dev/v1alpha2", "kind": "PackageRevision",
                        "metadata": {"name": "test-pr", "namespace": "default"},
                        "status": {"conditions": [{"type": "Rendered", "status": "False",
                            "lastTransitionTime": "<now>", "reason": "RenderFailed",
                            "message": self.error}]}}}));
            }
        }
    }
}

const D1_SOURCE: &str = "an infrastructure failure of the source phase (a read or a draft write that may succeed later) is returned for backoff; upstream's Reconcile logs it and returns nil";
const D1_RENDER: &str = "an infrastructure failure of the render phase (content read, renderer, draft write) is returned for backoff; upstream's reconcileRender returns it and Reconcile drops it";

/// Every case that differs from upstream by one of our intended
/// deviations: (1) infrastructure errors of the source and render phases
/// are returned; (2) a failed stale-check re-read applies Rendered=False
/// and returns the error; (3) main-manager status applies without content
/// re-send the publish data; (4) CreateNewDraft answered AlreadyExists
/// goes on as if written; (5) a Published revision being deleted reads
/// its content before staying blocked. (No case shows 3 or 4: no case's object carries
/// publish data on a content-less apply, and no case answers
/// CreateNewDraft with AlreadyExists.)
const DEVIATIONS: &[Deviation] = &[
    Deviation { case: "prc-source-reconcile/create-draft-fails", number: 1, error: "create draft: repo not found", why: D1_SOURCE },
    Deviation { case: "prc-source-reconcile/update-resources-fails", number: 1, error: "update resources: write failed", why: D1_SOURCE },
    Deviation { case: "prc-source-reconcile/close-draft-fails", number: 1, error: "close draft: git push failed", why: D1_SOURCE },
    Deviation { case: "prc-source-copy/not-found", number: 1, error: concat!("failed to get source package \"repo.pkg.v1\": ", "assert.AnError general error for testing"), why: D1_SOURCE },
    Deviation { case: "prc-source-clone/git-fetch-error", number: 1, error: concat!("failed to fetch from git: ", "assert.AnError general error for testing"), why: D1_SOURCE },
    Deviation { case: "prc-source-clone/upstream-ref-get-content-error", number: 1, error: concat!("failed to get upstream package content: ", "assert.AnError general error for testing"), why: D1_SOURCE },
    Deviation { case: "prc-source-clone/upstream-ref-get-lock-error", number: 1, error: concat!("failed to get upstream lock for \"upstream-repo.pkg.v1\": ", "assert.AnError general error for testing"), why: D1_SOURCE },
    Deviation { case: "prc-source-clone/upstream-ref-get-resources-error", number: 1, error: concat!("failed to read upstream resources: ", "assert.AnError general error for testing"), why: D1_SOURCE },
    Deviation { case: "prc-source-clone/upstream-ref-not-found", number: 1, error: concat!("failed to get upstream package \"upstream-repo.pkg.v1\": ", "assert.AnError general error for testing"), why: D1_SOURCE },
    Deviation { case: "prc-source-upgrade/old-upstream-not-found", number: 1, error: concat!("old upstream: failed to get package \"upstream.pkg.v1\": ", "assert.AnError general error for testing"), why: D1_SOURCE },
    Deviation { case: "prc-source-upgrade/current-package-not-found", number: 1, error: concat!("current package: failed to get package \"downstream.pkg.v1\": ", "assert.AnError general error for testing"), why: D1_SOURCE },
    Deviation { case: "prc-source-upgrade/read-resources-error", number: 1, error: concat!("failed to read old upstream resources: ", "assert.AnError general error for testing"), why: D1_SOURCE },
    Deviation { case: "prc-source-upgrade/new-upstream-lock-error", number: 1, error: concat!("failed to get new upstream lock: ", "assert.AnError general error for testing"), why: D1_SOURCE },
    Deviation { case: "prc-render-reconcile/read-content-fails", number: 1, error: "get content for render: repo not found", why: D1_RENDER },
    Deviation { case: "prc-render-reconcile/render-error-swallowed-by-reconcile", number: 1, error: "get content for render: cache down", why: D1_RENDER },
    Deviation { case: "prc-render-reconcile/write-fails", number: 1, error: "create draft for render: draft failed", why: D1_RENDER },
    Deviation { case: "prc-render-failure/renderer-infra-error", number: 1, error: "render failed: fn-runner unavailable", why: D1_RENDER },
    Deviation { case: "prc-render-io/read-resources-get-contents-fails", number: 1, error: "read resources for render: corrupt", why: D1_RENDER },
    Deviation { case: "prc-render-io/write-update-resources-fails", number: 1, error: "write rendered resources: write failed", why: D1_RENDER },
    Deviation { case: "prc-render-io/write-close-draft-fails", number: 1, error: "close draft after render: git push failed", why: D1_RENDER },
    Deviation { case: "prc-deletion-gating/published-repo-exists-blocked", number: 5, error: "", why: "a Published revision being deleted while its Repository exists is kept only if its package is still in Git (one content read); upstream keeps it Terminating even when the package is gone (reference §13.7)" },
    Deviation { case: "prc-render-stale/reread-fails", number: 2, error: "re-read PR after render: api server gone", why: "upstream returns the re-read error without setRenderFailed, leaving Rendered=Unknown \"rendering\" and the rendering version set (reference §13.4); we record Rendered=False under the render manager and return the error" },
];

const STALE_SUITE: &str = "upstream's envtest suite is stale and not run upstream (reference §13.5): it expects ctrl.Result{} where the controller code and its unit test TestReconcileLifecycleTransition return {Requeue: true} for a published-ish desired lifecycle (see prc-lifecycle-transition)";

/// Cases upstream cannot run itself, with upstream's reason.
const SKIPPED: &[(&str, &str)] = &[
    (
        "prc-integration/transition-proposed-to-published",
        STALE_SUITE,
    ),
    (
        "prc-integration/transition-published-to-deletionproposed",
        STALE_SUITE,
    ),
    (
        "prc-integration/transition-deletionproposed-to-published",
        STALE_SUITE,
    ),
];

/// The one correction made to cases' derived `applied` objects (derived by
/// reading the Go code, not asserted upstream): `updateStatus` re-sends the
/// object's current `status.creationSource` when it is given none
/// (status.go; pinned by prc-status-field-managers/
/// update-status-preserves-creation-source and set-render-failed), so the
/// main-manager apply of `setRenderFailed` carries it. The render cases'
/// derived objects omit it; it is added (and the case named in the run's
/// output) before comparing.
fn correct_creation_source(case: &Case, pr: &PackageRevision, want: &mut Want) {
    let source = &pr.status.creation_source;
    let Some(calls) = &mut want.calls else { return };
    for c in calls.iter_mut() {
        let main = c["fieldManager"] == status_builders::MAIN_MANAGER;
        let Some(status) = c
            .pointer_mut("/applied/status")
            .and_then(Value::as_object_mut)
        else {
            continue;
        };
        if main && !source.is_empty() && !status.contains_key("creationSource") {
            status.insert("creationSource".into(), json!(source));
            println!(
                "erratum {}: the derived setRenderFailed apply lacks status.creationSource {source:?}",
                case.name
            );
        }
    }
}

type Adapter = fn(&Case) -> Result<(), String>;

/// A group and how its cases run (None: the reconcile-level runner).
const GROUPS: &[(&str, Option<Adapter>)] = &[
    ("prc-reconcile-basic", None),
    ("prc-finalizer-ownerref", None),
    ("prc-deletion-gating", None),
    ("prc-lifecycle-transition", None),
    ("prc-source-reconcile", None),
    ("prc-source-dispatch", None),
    ("prc-source-copy", None),
    ("prc-source-clone", None),
    ("prc-source-upgrade", None),
    ("prc-render-reconcile", None),
    ("prc-render-stale", None),
    ("prc-render-failure", None),
    ("prc-render-semaphore", None),
    ("prc-render-io", None),
    ("prc-status-field-managers", Some(field_managers)),
    ("prc-render-request-predicate", Some(predicate)),
    ("prc-fieldindex", Some(field_index)),
    ("api-v1alpha2-selectable-fields", Some(selectable_fields)),
    ("prc-kpt-renderer", Some(kpt_renderer)),
    ("prc-integration", Some(integration)),
];

/// Runs every case of [`GROUPS`], checking [`DEVIATIONS`] and [`SKIPPED`].
pub fn run() -> Tally {
    let (mut passed, mut failed, mut deviations, mut skipped) = (0, Vec::new(), 0, Vec::new());
    let mut seen = Vec::new();
    for (group, adapter) in GROUPS {
        for (name, d) in case_dirs(group) {
            seen.push(name.clone());
            let case = Case { dir: d, name };
            if let Some((_, why)) = SKIPPED.iter().find(|(n, _)| *n == case.name) {
                skipped.push(format!("{}: {why}", case.name));
                continue;
            }
            let dev = DEVIATIONS.iter().find(|d| d.case == case.name);
            let (diffs, adjusted) = match adapter {
                Some(a) => (a(&case).err().into_iter().collect(), Vec::new()),
                None => reconcile_case(&case, dev),
            };
            match dev {
                None if diffs.is_empty() => passed += 1,
                None => failed.push(format!("{}: {}", case.name, diffs.join("; "))),
                Some(d) if diffs.is_empty() => failed.push(format!(
                    "{}: listed as deviation {} but matches upstream",
                    case.name, d.number
                )),
                Some(d) if !adjusted.is_empty() => failed.push(format!(
                    "{}: deviation {} does not explain the difference: {}",
                    case.name,
                    d.number,
                    adjusted.join("; ")
                )),
                Some(d) => {
                    println!(
                        "deviation {} {}: {} ({})",
                        d.number,
                        case.name,
                        diffs.join("; "),
                        d.why
                    );
                    deviations += 1;
                }
            }
        }
    }
    for d in DEVIATIONS {
        assert!(
            seen.iter().any(|s| s == d.case),
            "deviation of an unknown case {}",
            d.case
        );
    }
    for (s, _) in SKIPPED {
        assert!(seen.iter().any(|n| n == s), "skip of an unknown case {s}");
    }
    for s in &skipped {
        println!("skipped {s}");
    }
    Tally {
        passed,
        deviations,
        failed,
        skipped,
    }
}
