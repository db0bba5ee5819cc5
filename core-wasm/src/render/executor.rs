//! The render walk: packages depth-first (or breadth-first under
//! `kpt.dev/bfs-rendering`), each package's mutators then validators, the
//! step records and results, and writing the rendered package back.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::api::Function;
use crate::krm::cel::{Budget, CelEnv, CelError, ConditionInput, Limits};
use crate::yaml::{self, Format, Node};

use super::annotations as ann;
use super::builtins;
use super::eval::EvalSpec;
use super::function::{self, Ran, Runner, StepError, PENDING};
use super::function_config::{self, Executor};
use super::image;
use super::kptfile::{self, clean_path, KptfileInfo, RenderStatusUpdate};
use super::package::{self, display, Files};
use super::result::FnResult;
use super::runtime::{FunctionRef, FunctionRuntime};
use super::select;

/// How to render.
#[derive(Debug, Clone)]
pub struct RenderOptions {
    /// Run `exec:` functions (kpt's `--allow-exec`).
    pub allow_exec: bool,
    /// Prefix of images named without a registry.
    pub image_prefix: String,
    /// The absolute path functions see as the root package's
    /// `package-path` annotation.
    pub root_path: String,
    /// Run this one function over the package's resources as `kpt fn
    /// eval` does, instead of rendering its pipelines.
    pub eval: Option<EvalSpec>,
    /// Porch's FunctionConfigs: which executor runs the images they name
    /// ([`super::function_config`]).
    pub function_configs: Vec<crate::api::function_config::FunctionConfig>,
}

impl Default for RenderOptions {
    fn default() -> Self {
        RenderOptions {
            allow_exec: false,
            image_prefix: image::DEFAULT_PREFIX.to_string(),
            root_path: "/".to_string(),
            eval: None,
            function_configs: Vec::new(),
        }
    }
}

/// One step of `renderStatus` (kpt's `PipelineStepResult`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StepRecord {
    /// The function's `name`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The resolved image.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub image: String,
    /// The exec string.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub exec: String,
    /// Why it did not run or produced no result.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub execution_error: String,
    /// Its stderr.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub stderr: String,
    /// Its exit code.
    pub exit_code: i64,
    /// Its results.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub results: Vec<FnResult>,
    /// Its results of severity `error`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub error_results: Vec<FnResult>,
    /// Its `when` condition.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub when: String,
    /// Whether its condition was false, so it did not run.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub skipped: bool,
}

/// One entry of kpt's `FunctionResultList`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResultListItem {
    /// The resolved image.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub image: String,
    /// The exec string.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub exec: String,
    /// Its stderr.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub stderr: String,
    /// Its exit code.
    pub exit_code: i64,
    /// Its results.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub results: Vec<FnResult>,
}

/// A render's failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderFailure {
    /// The hydration error as the Kptfile condition shows it
    /// (`pkg.render: pkg .:\n\tpipeline.run: …`).
    pub message: String,
    /// The innermost cause, as `kpt fn render` prints it after `Error: `.
    pub cause: String,
    /// The function's output was shown already (kpt prints nothing more).
    pub handled: bool,
    /// The failing steps with their error results, one line each
    /// (`<image>: exit code 1: <error result>`), for status messages.
    pub detail: String,
}

/// What a render produced.
#[derive(Debug, Clone, Default)]
pub struct RenderOutput {
    /// Every file afterwards (files render does not read are unchanged).
    pub files: Files,
    /// The render's failure, if any.
    pub failure: Option<RenderFailure>,
    /// One entry per function that ran, in order.
    pub results: Vec<ResultListItem>,
    /// `Successfully executed N function(s) in M package(s).` or the
    /// partial/failed form (empty after a failure without
    /// save-on-render-failure).
    pub summary: String,
    /// kpt's progress lines (`[RUNNING] "…"`, `[PASS] "…"`, …).
    pub log: Vec<String>,
    /// Set when the render stopped for a function the caller must run
    /// (only with a [`super::RecordedRuntime`]).
    pub pending: bool,
    /// Whether the root Kptfile was readable (no status is written when it
    /// was not).
    pub status_written: bool,
}

impl RenderOutput {
    /// kpt's `FunctionResultList` as YAML (`results.yaml`).
    pub fn results_yaml(&self) -> String {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct List<'a> {
            api_version: &'a str,
            kind: &'a str,
            metadata: BTreeMap<&'a str, &'a str>,
            exit_code: i64,
            #[serde(skip_serializing_if = "Vec::is_empty")]
            items: &'a Vec<ResultListItem>,
        }
        let list = List {
            api_version: "kpt.dev/v1",
            kind: "FunctionResultList",
            metadata: BTreeMap::from([("name", "fnresults")]),
            exit_code: i64::from(
                self.results.iter().any(|r| r.exit_code != 0)
                    || self.failure.is_some()
                        && !self.results.is_empty()
                        && self.results.iter().any(|r| r.exit_code != 0),
            ),
            items: &self.results,
        };
        let value = serde_json::to_value(&list).unwrap_or_default();
        yaml::emit_stream(
            &[Node::new_document(yaml::from_json_ordered(&value))],
            Format::KyamlWide,
        )
        .unwrap_or_default()
    }
}

/// A package's error during hydration.
#[derive(Debug, Clone)]
pub(super) struct HydrateError {
    /// The package whose pipeline failed (`.`, `./db`).
    pkg: String,
    /// kpt's operation (`pipeline.run`).
    op: &'static str,
    /// The cause.
    pub(super) cause: String,
    /// Already printed.
    pub(super) handled: bool,
    /// The failing package's resources as far as they got.
    partial: Vec<Node>,
}

/// One render (or eval) under way: what it reads, runs and records.
pub(super) struct Walk<'a> {
    pub(super) files: &'a Files,
    pub(super) dirs: BTreeSet<String>,
    pub(super) opts: &'a RenderOptions,
    pub(super) runtime: &'a mut dyn FunctionRuntime,
    pub(super) mutation_steps: Vec<StepRecord>,
    pub(super) validation_steps: Vec<StepRecord>,
    pub(super) results: Vec<ResultListItem>,
    pub(super) executed: usize,
    pub(super) visited: usize,
    pub(super) input_files: BTreeSet<String>,
    pub(super) log: Vec<String>,
    pub(super) pending: bool,
    /// Keep the resources as they were before a failed function
    /// (`kpt.dev/save-on-render-failure`); otherwise a mutator that sees
    /// every resource takes them instead of a copy.
    pub(super) keep_partial: bool,
    /// The CEL environment of `when` conditions.
    pub(super) conditions: CelEnv,
    /// What all conditions of the render may spend.
    pub(super) budget: Budget,
    /// The function config of an eval (`--fn-config`), which replaces
    /// what the function names.
    pub(super) eval_config: Option<Node>,
}

impl<'a> Walk<'a> {
    /// A walk over `files` with nothing done yet.
    pub(super) fn new(
        files: &'a Files,
        dirs: BTreeSet<String>,
        opts: &'a RenderOptions,
        runtime: &'a mut dyn FunctionRuntime,
    ) -> Self {
        Walk {
            files,
            dirs,
            opts,
            runtime,
            mutation_steps: Vec::new(),
            validation_steps: Vec::new(),
            results: Vec::new(),
            executed: 0,
            visited: 0,
            input_files: BTreeSet::new(),
            log: Vec::new(),
            pending: false,
            keep_partial: false,
            conditions: CelEnv::conditions(Limits::default()),
            budget: Budget::new(Limits::default().max_render_cost),
            eval_config: None,
        }
    }
}

/// Renders the package whose root `Kptfile` is at the top of `files`
/// (a copy of them: see [`render_owned`]).
pub fn render(
    files: &Files,
    opts: &RenderOptions,
    runtime: &mut dyn FunctionRuntime,
) -> RenderOutput {
    render_owned(files.clone(), opts, runtime)
}

/// Renders the package whose root `Kptfile` is at the top of `files`,
/// taking them: each file written back replaces its text, so a render
/// holds the files and their parsed resources, never a second copy of
/// either. When the render is pending, the output's files are `files`
/// unchanged.
pub fn render_owned(
    files: Files,
    opts: &RenderOptions,
    runtime: &mut dyn FunctionRuntime,
) -> RenderOutput {
    if let Some(spec) = &opts.eval {
        return super::eval::eval_owned(files, opts, spec, runtime);
    }
    let mut out = RenderOutput::default();
    let fail_early = failed_before_running;
    let Some(root_text) = files.get("Kptfile") else {
        return fail_early(
            out,
            files,
            "failed to read Kptfile: no Kptfile at the package root".into(),
        );
    };
    let root_info = match kptfile::decode(root_text) {
        Ok(i) => i,
        Err(e) => {
            let cause = format!("error reading Kptfile at \".\": {e}");
            return fail_early(out, files, cause);
        }
    };
    if let Err(e) = kptfile::validate(&root_info, &files, "") {
        return fail_early(out, files, e);
    }
    let bfs = is_true(root_info.annotations.get("kpt.dev/bfs-rendering"));
    let save_on_failure = is_true(root_info.annotations.get("kpt.dev/save-on-render-failure"));
    let mut walk = Walk::new(&files, package::package_dirs(&files), opts, runtime);
    walk.keep_partial = save_on_failure;
    let hydrated = if bfs {
        walk.hydrate_bfs(root_info)
    } else {
        walk.hydrate_dfs("", root_info)
    };
    out.pending = walk.pending;
    out.log = std::mem::take(&mut walk.log);
    out.results = std::mem::take(&mut walk.results);
    let Walk {
        mutation_steps,
        validation_steps,
        executed,
        visited,
        input_files,
        ..
    } = walk;
    out.files = files;
    if out.pending {
        return out;
    }
    let (items, error) = match hydrated {
        Ok(items) => (Some(items), None),
        Err(e) => {
            let keep = save_on_failure.then(|| e.partial.clone());
            (keep, Some(e))
        }
    };
    let mut write_error = None;
    if let Some(items) = items {
        match write_items(
            &mut out.files,
            items,
            &opts.root_path,
            &input_files,
            error.is_none(),
        ) {
            Ok(()) => {}
            Err(e) => write_error = Some(e),
        }
    }
    let packages = visited;
    out.summary = match (&error, save_on_failure) {
        (None, _) => format!(
            "Successfully executed {} function(s) in {} package(s).",
            executed, packages
        ),
        (Some(_), true) if executed > 0 => format!(
            "Partially executed {} function(s) in {} package(s).",
            executed, packages
        ),
        (Some(_), true) => format!("Failed to execute any functions in {packages} package(s)."),
        (Some(_), false) => String::new(),
    };
    let failure = match (error, write_error) {
        (Some(e), Some(w)) if save_on_failure => {
            let message = hydrate_message(&e, bfs);
            Some(RenderFailure {
                message: format!(
                    "failed to save resources: {w} (original render error: {message})"
                ),
                detail: w.clone(),
                cause: w,
                handled: false,
            })
        }
        (Some(e), _) => Some(RenderFailure {
            message: hydrate_message(&e, bfs),
            detail: failure_detail(&mutation_steps, &validation_steps, &e.cause),
            cause: e.cause.clone(),
            handled: e.handled,
        }),
        (None, Some(w)) => Some(RenderFailure {
            message: w.clone(),
            detail: w.clone(),
            cause: w,
            handled: false,
        }),
        (None, None) => None,
    };
    // The root Kptfile's status.
    let mut status = serde_json::Map::new();
    let steps = |v: &Vec<StepRecord>| serde_json::to_value(v).unwrap_or_default();
    if !mutation_steps.is_empty() {
        status.insert("mutationSteps".into(), steps(&mutation_steps));
    }
    if !validation_steps.is_empty() {
        status.insert("validationSteps".into(), steps(&validation_steps));
    }
    if failure.is_some() {
        let summary = error_summary(&mutation_steps, &validation_steps);
        if !summary.is_empty() {
            status.insert("errorSummary".into(), summary.into());
        }
    }
    let update = RenderStatusUpdate {
        ok: failure.is_none(),
        message: failure
            .as_ref()
            .map(|f| f.message.clone())
            .unwrap_or_default(),
        render_status: (!status.is_empty()).then_some(serde_json::Value::Object(status)),
    };
    if let Some(text) = out.files.get("Kptfile") {
        if let Ok(new_text) = kptfile::write_status(text, update) {
            out.files.insert("Kptfile".into(), new_text);
            out.status_written = true;
        }
    }
    out.failure = failure;
    out
}

/// `out` with `files` unchanged and `cause` as its failure: a render that
/// stopped before any function ran.
pub(super) fn failed_before_running(
    mut out: RenderOutput,
    files: Files,
    cause: String,
) -> RenderOutput {
    out.failure = Some(RenderFailure {
        message: cause.clone(),
        detail: cause.clone(),
        cause,
        handled: false,
    });
    out.files = files;
    out
}

fn is_true(v: Option<&String>) -> bool {
    v.is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

fn hydrate_message(e: &HydrateError, bfs: bool) -> String {
    let cause = if e.handled {
        "already handled error".to_string()
    } else {
        e.cause.clone()
    };
    if bfs && e.pkg != "." {
        format!("pkg.render: pkg .:\n\t{}: pkg {}: {cause}", e.op, e.pkg)
    } else {
        format!("pkg.render: pkg {}:\n\t{}: {cause}", e.pkg, e.op)
    }
}

/// Each failed step with its error results (or the cause when no step
/// failed): what a status message needs to name the function and why.
fn failure_detail(m: &[StepRecord], v: &[StepRecord], cause: &str) -> String {
    let mut lines = Vec::new();
    for s in m.iter().chain(v) {
        if s.execution_error.is_empty() && s.exit_code == 0 {
            continue;
        }
        let function = if s.image.is_empty() {
            &s.exec
        } else {
            &s.image
        };
        let name = if s.name.is_empty() {
            function.clone()
        } else {
            format!("{} ({function})", s.name)
        };
        let mut line = if s.execution_error.is_empty() {
            format!("{name}: exit code {}", s.exit_code)
        } else {
            format!("{name}: {}", s.execution_error)
        };
        for r in &s.error_results {
            line.push_str(": ");
            line.push_str(&r.message);
        }
        if s.error_results.is_empty() && s.execution_error.is_empty() {
            line.push_str(": ");
            line.push_str(cause);
        }
        lines.push(line);
    }
    if lines.is_empty() {
        cause.to_string()
    } else {
        lines.join("\n")
    }
}

fn error_summary(m: &[StepRecord], v: &[StepRecord]) -> String {
    let mut lines = Vec::new();
    for s in m.iter().chain(v) {
        let name = [&s.name, &s.image, &s.exec]
            .into_iter()
            .find(|x| !x.is_empty())
            .cloned()
            .unwrap_or_default();
        if !s.execution_error.is_empty() {
            lines.push(format!("{name}: {}", s.execution_error));
        } else if s.exit_code != 0 {
            lines.push(format!("{name}: exit code {}", s.exit_code));
        }
    }
    lines.join("\n")
}

/// A function ready to run.
struct Prepared {
    function: Function,
    fref: FunctionRef,
    runner: Runner,
    config: Option<Node>,
    /// Where a FunctionConfig sent the function, said with its errors.
    chosen: Option<String>,
}

impl Prepared {
    /// `ran`, its error saying where a FunctionConfig sent the function.
    fn noted(&self, mut ran: Ran) -> Ran {
        if let (Some(note), Some(e)) = (&self.chosen, ran.error.as_mut()) {
            if e.message != PENDING {
                e.message = format!("{} ({note})", e.message);
            }
        }
        ran
    }
}

impl Walk<'_> {
    fn package_path(&self, dir: &str) -> String {
        let root = self.opts.root_path.trim_end_matches('/');
        if dir.is_empty() {
            if root.is_empty() {
                "/".to_string()
            } else {
                root.to_string()
            }
        } else {
            format!("{root}/{dir}")
        }
    }

    pub(super) fn local_resources(&mut self, dir: &str) -> Result<Vec<Node>, HydrateError> {
        let pkg_path = self.package_path(dir);
        let mut items = Vec::new();
        for (rel, text) in package::resource_files(self.files, &self.dirs, dir) {
            let read = package::read_file(rel, text, &pkg_path).map_err(|cause| HydrateError {
                pkg: display(dir),
                op: "pkg.read",
                cause,
                handled: false,
                partial: Vec::new(),
            })?;
            if !read.is_empty() {
                self.input_files.insert(package::join(dir, rel));
            }
            items.extend(read);
        }
        Ok(items)
    }

    fn subpackage_info(&self, dir: &str) -> Result<KptfileInfo, String> {
        let text = self
            .files
            .get(&package::join(dir, "Kptfile"))
            .map(String::as_str)
            .unwrap_or("");
        let info = kptfile::decode(text)
            .map_err(|e| format!("error reading Kptfile at {:?}: {e}", display(dir)))?;
        kptfile::validate(&info, self.files, dir)?;
        Ok(info)
    }

    fn hydrate_dfs(&mut self, dir: &str, info: KptfileInfo) -> Result<Vec<Node>, HydrateError> {
        self.visited += 1;
        let mut input = self.local_resources(dir)?;
        for sub in package::direct_subpackages(&self.dirs, dir) {
            let sub_info = self.subpackage_info(&sub).map_err(|cause| HydrateError {
                pkg: display(dir),
                op: "pkg.Subpackages",
                cause: format!("pkg {}: {cause}", display(&sub)),
                handled: false,
                partial: input.clone(),
            })?;
            match self.hydrate_dfs(&sub, sub_info) {
                Ok(out) => input.extend(out),
                Err(mut e) => {
                    let mut partial = input;
                    partial.append(&mut e.partial);
                    e.partial = partial;
                    return Err(e);
                }
            }
        }
        self.run_pipeline(dir, &info, input)
    }

    fn hydrate_bfs(&mut self, root_info: KptfileInfo) -> Result<Vec<Node>, HydrateError> {
        // Discovery, level by level.
        let mut order: Vec<(String, KptfileInfo)> = Vec::new();
        let mut resources: BTreeMap<String, Vec<Node>> = BTreeMap::new();
        let mut children: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([(String::new(), root_info)]);
        while let Some((dir, info)) = queue.pop_front() {
            self.visited += 1;
            resources.insert(dir.clone(), self.local_resources(&dir)?);
            let subs = package::direct_subpackages(&self.dirs, &dir);
            for sub in &subs {
                let sub_info = self.subpackage_info(sub).map_err(|cause| HydrateError {
                    pkg: display(&dir),
                    op: "pkg.Subpackages",
                    cause: format!("pkg {}: {cause}", display(sub)),
                    handled: false,
                    partial: Vec::new(),
                })?;
                queue.push_back((sub.clone(), sub_info));
            }
            children.insert(dir.clone(), subs);
            order.push((dir, info));
        }
        fn descendants(children: &BTreeMap<String, Vec<String>>, dir: &str, out: &mut Vec<String>) {
            for c in children.get(dir).into_iter().flatten() {
                out.push(c.clone());
                descendants(children, c, out);
            }
        }
        let concat = |resources: &BTreeMap<String, Vec<Node>>| -> Vec<Node> {
            order
                .iter()
                .flat_map(|(d, _)| resources.get(d).cloned().unwrap_or_default())
                .collect()
        };
        for (dir, info) in &order {
            let mut family = vec![dir.clone()];
            descendants(&children, dir, &mut family);
            let input: Vec<Node> = family
                .iter()
                .flat_map(|d| resources.get(d).cloned().unwrap_or_default())
                .collect();
            let result = self.run_pipeline(dir, info, input);
            let (output, failed) = match result {
                Ok(o) => (o, None),
                // The family's resources as the steps before the failure
                // left them: put back in their packages like an output, so
                // each is saved once.
                Err(mut e) => (std::mem::take(&mut e.partial), Some(e)),
            };
            self.redistribute(dir, &family, output, &mut resources);
            if let Some(mut e) = failed {
                e.partial = concat(&resources);
                return Err(e);
            }
        }
        Ok(concat(&resources))
    }

    /// Puts the `output` of `dir`'s pipeline back in the packages of
    /// `family` (`dir` and its descendants) by each item's package path
    /// (items without one stay in `dir`); a package of the family with no
    /// item left is emptied.
    fn redistribute(
        &self,
        dir: &str,
        family: &[String],
        output: Vec<Node>,
        resources: &mut BTreeMap<String, Vec<Node>>,
    ) {
        let paths: BTreeMap<String, String> = family
            .iter()
            .map(|d| (self.package_path(d), d.clone()))
            .collect();
        let mut groups: BTreeMap<String, Vec<Node>> = BTreeMap::new();
        for item in output {
            let owner = ann::get(&item, ann::PACKAGE_PATH)
                .and_then(|p| paths.get(p))
                .cloned()
                .unwrap_or_else(|| dir.to_string());
            groups.entry(owner).or_default().push(item);
        }
        for d in family {
            resources.insert(d.clone(), groups.remove(d).unwrap_or_default());
        }
    }

    fn prepare(&mut self, f: &Function, dir: &str) -> Result<Prepared, String> {
        if !f.exec.is_empty() && !self.opts.allow_exec {
            return Err(
                "must run with `--allow-exec` option to allow running function binaries".into(),
            );
        }
        let resolved = if f.image.is_empty() {
            String::new()
        } else {
            image::resolve(&f.image, &f.tag, &self.opts.image_prefix)
        };
        // An image a FunctionConfig names runs where it says; any other
        // as the builtin of its name when there is one.
        let chosen = (!resolved.is_empty())
            .then(|| {
                function_config::select(
                    &self.opts.function_configs,
                    &resolved,
                    &self.opts.image_prefix,
                    self.opts.allow_exec,
                )
            })
            .flatten();
        let mut exec = f.exec.clone();
        let note = match &chosen {
            None => None,
            Some(Executor::Builtin(id)) => {
                Some(format!("a FunctionConfig runs it as builtin {id:?}"))
            }
            Some(Executor::Binary(path)) => {
                Some(format!("a FunctionConfig runs it as binary {path:?}"))
            }
            Some(Executor::Pod) => Some(
                "a FunctionConfig sends it to the pod executor, Porch's function runner"
                    .to_string(),
            ),
        };
        let runner = match chosen {
            None => match image::catalog_name(&resolved, &self.opts.image_prefix)
                .and_then(builtins::lookup)
            {
                Some(b) if !resolved.is_empty() => Runner::Builtin(b),
                _ => Runner::External,
            },
            // A builtin the core does not have (starlark) is the host's.
            Some(Executor::Builtin(id)) => {
                builtins::lookup(&id).map_or(Runner::External, Runner::Builtin)
            }
            Some(Executor::Binary(path)) => {
                exec = path;
                Runner::External
            }
            Some(Executor::Pod) => Runner::External,
        };
        let config = if let Some(config) = &self.eval_config {
            Some(config.clone())
        } else if !f.config_path.is_empty() {
            let path = package::join(dir, &clean_path(&f.config_path));
            let text = self
                .files
                .get(&path)
                .ok_or_else(|| format!("missing function config {:?}", f.config_path))?;
            let doc = yaml::parse_document(text)
                .map_err(|e| format!("invalid function config {:?} {e}", f.config_path))?;
            Some(doc)
        } else if !f.config_map.is_empty() {
            let mut cm = Node::new_mapping();
            let mut meta = Node::new_mapping();
            let mut data = Node::new_mapping();
            let set = |n: &mut Node, k: &str, v: Node| n.set(k, v).map_err(|e| e.to_string());
            set(&mut meta, "name", Node::new_string("function-input"))?;
            for (k, v) in &f.config_map {
                set(&mut data, k, yaml::string_node(v))?;
            }
            set(&mut cm, "apiVersion", Node::new_string("v1"))?;
            set(&mut cm, "kind", Node::new_string("ConfigMap"))?;
            set(&mut cm, "metadata", meta)?;
            set(&mut cm, "data", data)?;
            Some(Node::new_document(cm))
        } else {
            None
        };
        Ok(Prepared {
            function: f.clone(),
            fref: FunctionRef {
                image: resolved,
                exec,
            },
            runner,
            config,
            chosen: note,
        })
    }

    fn record(&mut self, p: &Prepared, ran: &Ran, validator: bool) {
        let mut step = StepRecord {
            name: p.function.name.clone(),
            image: p.fref.image.clone(),
            exec: p.fref.exec.clone(),
            exit_code: ran.exit_code,
            when: p.function.when.clone(),
            ..StepRecord::default()
        };
        if ran.recorded {
            step.stderr = ran.stderr.clone();
            step.results = ran.results.clone();
            step.error_results = ran
                .results
                .iter()
                .filter(|r| r.is_error())
                .cloned()
                .collect();
            self.results.push(ResultListItem {
                image: p.fref.image.clone(),
                exec: p.fref.exec.clone(),
                stderr: ran.stderr.clone(),
                exit_code: ran.exit_code,
                results: ran.results.clone(),
            });
        } else if let Some(e) = &ran.error {
            step.exit_code = 1;
            step.execution_error = e.message.clone();
        }
        if validator {
            self.validation_steps.push(step);
        } else {
            self.mutation_steps.push(step);
        }
    }

    fn pre_exec_failure(&mut self, f: &Function, resolved: String, err: &str, validator: bool) {
        let step = StepRecord {
            name: f.name.clone(),
            image: resolved,
            exec: f.exec.clone(),
            execution_error: err.to_string(),
            exit_code: 1,
            when: f.when.clone(),
            ..StepRecord::default()
        };
        if validator {
            self.validation_steps.push(step);
        } else {
            self.mutation_steps.push(step);
        }
    }

    /// A step whose condition was false: recorded as skipped, not run.
    fn skip(&mut self, p: &Prepared, validator: bool) {
        self.log.push(format!(
            "[SKIPPED] {:?} (celCondition not met)",
            p.fref.display()
        ));
        let step = StepRecord {
            name: p.function.name.clone(),
            image: p.fref.image.clone(),
            exec: p.fref.exec.clone(),
            when: p.function.when.clone(),
            skipped: true,
            ..StepRecord::default()
        };
        if validator {
            self.validation_steps.push(step);
        } else {
            self.mutation_steps.push(step);
        }
    }

    /// kpt's `when`: whether the step runs, from its input items.
    fn condition(&mut self, p: &Prepared, input: &[Node]) -> Result<bool, String> {
        let when = p.function.when.as_str();
        if when.is_empty() {
            return Ok(true);
        }
        let wrap = |e: String| {
            format!(
                "failed to evaluate condition for function {:?}: {e}",
                p.fref.display()
            )
        };
        let program = self
            .conditions
            .compile(when)
            .map_err(|e| wrap(format!("failed to compile CEL expression: {e}")))?;
        let mut items = Vec::with_capacity(input.len());
        for item in input {
            let v = yaml::to_json(item.root())
                .map_err(|e| wrap(format!("failed to convert resources: {e}")))?;
            items.push(v);
        }
        let resources = ConditionInput::new(&items);
        self.conditions
            .eval_condition(&program, &resources, &mut self.budget)
            .map_err(|e| match e {
                CelError::NotABool(_) => wrap(e.to_string()),
                e => wrap(format!("failed to evaluate CEL expression: {e}")),
            })
    }

    /// kpt's `configRef`: the one resource of the current items it names.
    fn config_ref(&self, f: &Function, items: &[Node]) -> Result<Option<Node>, String> {
        let Some(r) = &f.config_ref else {
            return Ok(None);
        };
        let found: Vec<&Node> = items
            .iter()
            .filter(|i| {
                let root = i.root();
                let get = |path: &[&str]| root.get_str(path).unwrap_or_default();
                r.matches(
                    get(&["apiVersion"]),
                    get(&["kind"]),
                    get(&["metadata", "name"]),
                    get(&["metadata", "namespace"]),
                )
            })
            .collect();
        match found.as_slice() {
            [one] => Ok(Some((*one).clone())),
            [] => Err(format!(
                "configRef: no resource of kind {:?} named {:?} in the package",
                r.kind, r.name
            )),
            many => Err(format!(
                "configRef: {} resources of kind {:?} named {:?} in the package; it must match exactly one",
                many.len(),
                r.kind,
                r.name
            )),
        }
    }

    fn log_run(&mut self, p: &Prepared, selected: Option<usize>, ran: &Ran) {
        let on = selected.map_or(String::new(), |n| format!(" on {n} resource(s)"));
        self.log
            .push(format!("[RUNNING] {:?}{on}", p.fref.display()));
        let verdict = if ran.error.is_some() { "FAIL" } else { "PASS" };
        self.log.push(format!("[{verdict}] {:?}", p.fref.display()));
        if !ran.results.is_empty() {
            let parts: Vec<String> = ran.results.iter().map(result_line).collect();
            self.log.push(format!("  Results: {}", parts.join(", ")));
        }
        if ran.error.is_some() && (!ran.stderr.is_empty() || ran.exit_code != 0) {
            let stderr = ran.stderr.trim_end().replace('\n', ", ");
            self.log
                .push(format!("  Stderr: {stderr}  Exit code: {}", ran.exit_code));
        }
    }

    pub(super) fn run_pipeline(
        &mut self,
        dir: &str,
        info: &KptfileInfo,
        input: Vec<Node>,
    ) -> Result<Vec<Node>, HydrateError> {
        let pkg = display(dir);
        let err = |cause: String, handled: bool, partial: Vec<Node>| HydrateError {
            pkg: pkg.clone(),
            op: "pipeline.run",
            cause,
            handled,
            partial,
        };
        if info.mutators.is_empty() && info.validators.is_empty() {
            for item in &input {
                if let Err(e) = package::check_krm(item) {
                    return Err(err(
                        format!("input resource list must contain only KRM resources: {e}"),
                        false,
                        input,
                    ));
                }
            }
            return Ok(input);
        }
        // configPath must name a resource of this package.
        let pkg_path = self.package_path(dir);
        let own_paths: BTreeSet<String> = input
            .iter()
            .filter(|i| ann::get(i, ann::PACKAGE_PATH) == Some(pkg_path.as_str()))
            .filter_map(|i| ann::path(i).map(clean_path))
            .collect();
        for (list, fns) in [
            ("mutators", &info.mutators),
            ("validators", &info.validators),
        ] {
            for (i, f) in fns.iter().enumerate() {
                if !f.config_path.is_empty() && !own_paths.contains(&clean_path(&f.config_path)) {
                    let cause = format!(
                        "Kptfile is invalid:\nField: `pipeline.{list}[{i}].configPath`\nValue: {:?}\nReason: functionConfig must exist in the current package\n",
                        f.config_path
                    );
                    return Err(err(cause, false, input));
                }
            }
        }
        // Mutators: every runner first, then each in turn.
        let mut prepared = Vec::new();
        for f in &info.mutators {
            match self.prepare(f, dir) {
                Ok(p) => prepared.push(p),
                Err(e) => {
                    let resolved = if f.image.is_empty() {
                        String::new()
                    } else {
                        image::resolve(&f.image, &f.tag, &self.opts.image_prefix)
                    };
                    self.pre_exec_failure(f, resolved, &e, false);
                    return Err(err(e, false, input));
                }
            }
        }
        let mut items = input;
        for mut p in prepared {
            // A referenced config as earlier steps left it (before the
            // selection and the condition, as kpt resolves it).
            match self.config_ref(&p.function, &items) {
                Ok(Some(config)) => p.config = Some(config),
                Ok(None) => {}
                Err(e) => return Err(err(e, false, items)),
            }
            // The config as earlier steps left it.
            if !p.function.config_path.is_empty() {
                if let Some(found) = items.iter().rfind(|i| {
                    ann::get(i, ann::PACKAGE_PATH) == Some(pkg_path.as_str())
                        && ann::path(i) == Some(p.function.config_path.as_str())
                }) {
                    p.config = Some(found.clone());
                }
            }
            let selecting = !p.function.selectors.is_empty() || !p.function.exclude.is_empty();
            let picked = select::select(&items, &p.function.selectors, &p.function.exclude);
            let mut fn_input: Vec<Node> = Vec::with_capacity(picked.len());
            if selecting {
                for (i, item) in items.iter_mut().enumerate() {
                    let _ = item.set_annotation(ann::KPT_RESOURCE_ID, &i.to_string());
                }
            }
            if !selecting && !self.keep_partial && picked.len() == items.len() {
                fn_input = std::mem::take(&mut items);
            } else {
                for &i in &picked {
                    fn_input.push(items[i].clone());
                }
            }
            match self.condition(&p, &fn_input) {
                Ok(true) => {}
                outcome => {
                    if items.is_empty() && !fn_input.is_empty() {
                        items = fn_input;
                    }
                    if selecting {
                        for item in items.iter_mut() {
                            function::remove_annotations(item, &[ann::KPT_RESOURCE_ID]);
                        }
                    }
                    match outcome {
                        Ok(_) => {
                            self.skip(&p, false);
                            continue;
                        }
                        Err(e) => {
                            self.pre_exec_failure(&p.function, p.fref.image.clone(), &e, false);
                            return Err(err(e, false, items));
                        }
                    }
                }
            }
            let ran = p.noted(function::run(
                &p.fref,
                &p.runner,
                fn_input,
                p.config.as_ref(),
                &pkg_path,
                &mut *self.runtime,
            ));
            if ran.error.as_ref().is_some_and(|e| e.message == PENDING) {
                self.pending = true;
                return Err(err(PENDING.into(), false, Vec::new()));
            }
            self.log_run(&p, selecting.then_some(picked.len()), &ran);
            self.record(&p, &ran, false);
            if let Some(StepError { message, handled }) = ran.error {
                if selecting {
                    for item in items.iter_mut() {
                        function::remove_annotations(item, &[ann::KPT_RESOURCE_ID]);
                    }
                }
                return Err(err(message, handled, items));
            }
            self.executed += 1;
            items = if selecting {
                merge_selected(items, &picked, ran.items)
            } else {
                ran.items
            };
        }
        // Validators: on copies; their output is discarded.
        for f in &info.validators {
            let p = match self.prepare(f, dir) {
                Ok(p) => p,
                Err(e) => {
                    let resolved = if f.image.is_empty() {
                        String::new()
                    } else {
                        image::resolve(&f.image, &f.tag, &self.opts.image_prefix)
                    };
                    self.pre_exec_failure(f, resolved, &e, true);
                    return Err(err(e, false, items));
                }
            };
            let mut p = p;
            match self.config_ref(&p.function, &items) {
                Ok(Some(config)) => p.config = Some(config),
                Ok(None) => {}
                Err(e) => {
                    self.pre_exec_failure(&p.function, p.fref.image.clone(), &e, true);
                    return Err(err(e, false, items));
                }
            }
            let picked = select::select(&items, &p.function.selectors, &p.function.exclude);
            let selecting = !p.function.selectors.is_empty() || !p.function.exclude.is_empty();
            let fn_input: Vec<Node> = picked.iter().map(|&i| items[i].clone()).collect();
            match self.condition(&p, &fn_input) {
                Ok(true) => {}
                Ok(false) => {
                    self.skip(&p, true);
                    continue;
                }
                Err(e) => {
                    self.pre_exec_failure(&p.function, p.fref.image.clone(), &e, true);
                    return Err(err(e, false, items));
                }
            }
            let ran = p.noted(function::run(
                &p.fref,
                &p.runner,
                fn_input,
                p.config.as_ref(),
                &pkg_path,
                &mut *self.runtime,
            ));
            if ran.error.as_ref().is_some_and(|e| e.message == PENDING) {
                self.pending = true;
                return Err(err(PENDING.into(), false, Vec::new()));
            }
            self.log_run(&p, selecting.then_some(picked.len()), &ran);
            self.record(&p, &ran, true);
            if let Some(StepError { message, handled }) = ran.error {
                return Err(err(message, handled, items));
            }
            self.executed += 1;
        }
        Ok(items)
    }
}

/// `[<severity>] <apiVersion/kind/namespace/name> <field>: <message>`.
fn result_line(r: &FnResult) -> String {
    let mut s = format!("[{}]", r.severity.as_deref().unwrap_or("info"));
    if let Some(rr) = &r.resource_ref {
        let parts: Vec<&str> = [&rr.api_version, &rr.kind, &rr.namespace, &rr.name]
            .into_iter()
            .map(String::as_str)
            .filter(|p| !p.is_empty())
            .collect();
        if !parts.is_empty() {
            s.push(' ');
            s.push_str(&parts.join("/"));
        }
    }
    if let Some(f) = r.field.as_ref().filter(|f| !f.path.is_empty()) {
        s.push(' ');
        s.push_str(&f.path);
    }
    s.push_str(": ");
    s.push_str(&r.message);
    s
}

/// kpt's `MergeWithInput`: selected items are replaced by the output item
/// with their `kpt-resource-id` (or dropped), the others stay, new items
/// follow; the id stamps are removed.
fn merge_selected(input: Vec<Node>, picked: &[usize], output: Vec<Node>) -> Vec<Node> {
    let picked: BTreeSet<usize> = picked.iter().copied().collect();
    let mut by_id: BTreeMap<String, Node> = BTreeMap::new();
    let mut fresh = Vec::new();
    for item in output {
        match ann::get(&item, ann::KPT_RESOURCE_ID).map(str::to_string) {
            Some(id) => {
                by_id.insert(id, item);
            }
            None => fresh.push(item),
        }
    }
    let mut merged = Vec::new();
    for (i, item) in input.into_iter().enumerate() {
        if picked.contains(&i) {
            if let Some(out) = by_id.remove(&i.to_string()) {
                merged.push(out);
            }
        } else {
            merged.push(item);
        }
    }
    merged.extend(fresh);
    for item in &mut merged {
        function::remove_annotations(item, &[ann::KPT_RESOURCE_ID]);
    }
    merged
}

/// Writes the rendered items back into `files`: paths made root-relative,
/// kpt's annotations removed, documents grouped by file in index order,
/// each file written whole in its sequence style; with `prune`, files read
/// whose items all went are deleted.
pub(super) fn write_items(
    files: &mut Files,
    items: Vec<Node>,
    root_path: &str,
    input_files: &BTreeSet<String>,
    prune: bool,
) -> Result<(), String> {
    let root = root_path.trim_end_matches('/');
    let mut groups: BTreeMap<String, Vec<(Option<i64>, Node)>> = BTreeMap::new();
    for mut item in items {
        let pkg = ann::get(&item, ann::PACKAGE_PATH)
            .unwrap_or(root_path)
            .to_string();
        let rel_pkg = if pkg == root_path || pkg == root {
            String::new()
        } else {
            match pkg.strip_prefix(root).and_then(|r| r.strip_prefix('/')) {
                Some(r) => r.to_string(),
                None => {
                    return Err(format!(
                        "subpackage {pkg:?} is not a descendant of {root_path:?}"
                    ))
                }
            }
        };
        let raw = ann::path(&item).map(str::to_string).unwrap_or_else(|| {
            let ns = item.namespace().to_string();
            let file = format!("{}_{}.yaml", item.object_kind().to_lowercase(), item.name());
            package::join(&ns, &file)
        });
        let clean = clean_path(raw.trim_start_matches('/'));
        let path = package::join(&rel_pkg, &clean);
        if clean == ".." || clean.starts_with("../") {
            return Err(format!(
                "resource must be written under package {root_path}: {path}"
            ));
        }
        let index = ann::index(&item);
        function::remove_annotations(
            &mut item,
            &[
                ann::PACKAGE_PATH,
                ann::PATH,
                ann::LEGACY_PATH,
                ann::INDEX,
                ann::LEGACY_INDEX,
                ann::ID,
                ann::LEGACY_ID,
            ],
        );
        groups.entry(path).or_default().push((index, item));
    }
    let mut written = BTreeSet::new();
    for (path, mut group) in groups {
        if path.ends_with('/') || path.is_empty() {
            return Err(format!(
                "config.kubernetes.io/path cannot be a directory: {path}"
            ));
        }
        let max = group.iter().filter_map(|(i, _)| *i).max().unwrap_or(0);
        let mut next = max;
        for (i, _) in group.iter_mut() {
            if i.is_none() {
                *i = Some(next);
                next += 1;
            }
        }
        group.sort_by_key(|(i, _)| i.unwrap_or(-1));
        let wide = group
            .first()
            .and_then(|(_, n)| ann::get(n, ann::SEQ_INDENT))
            == Some("wide");
        let mut nodes: Vec<Node> = group.into_iter().map(|(_, n)| n).collect();
        for n in &mut nodes {
            function::remove_annotations(n, &[ann::SEQ_INDENT]);
            function::clear_empty_annotations(n);
        }
        let text = if path.ends_with(".json") && nodes.len() == 1 {
            json_text(&nodes[0])?
        } else {
            let format = if wide {
                Format::KyamlWide
            } else {
                Format::Kyaml
            };
            // About the old text's length: allocated once, not doubled up to.
            let old = files.get(&path).map_or(0, String::len);
            let capacity = old.saturating_add(old / 16).saturating_add(256);
            yaml::emit_stream_sized(&nodes, format, capacity)
                .map_err(|e| format!("failed to save resources: {e}"))?
        };
        files.insert(path.clone(), text);
        written.insert(path);
    }
    if prune {
        for f in input_files {
            if !written.contains(f) {
                files.remove(f);
            }
        }
    }
    Ok(())
}

/// A single-object `.json` file: 2-space-indented JSON with sorted keys.
fn json_text(node: &Node) -> Result<String, String> {
    let value = yaml::to_json(node.root()).map_err(|e| e.to_string())?;
    let sorted = sort_keys(&value);
    serde_json::to_string_pretty(&sorted).map_err(|e| e.to_string())
}

fn sort_keys(v: &serde_json::Value) -> serde_json::Value {
    match v {
        serde_json::Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let mut out = serde_json::Map::new();
            for k in keys {
                out.insert(k.clone(), sort_keys(&m[k]));
            }
            serde_json::Value::Object(out)
        }
        serde_json::Value::Array(a) => serde_json::Value::Array(a.iter().map(sort_keys).collect()),
        v => v.clone(),
    }
}
