//! The `porch-variants local` and `porch-variants rpkg` commands.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pv_core::api::package_revision::Lifecycle;
use pv_core::api::PackageRevision;
use serde::Serialize;

use super::dir_lock::{remove_stale_git_locks, DirLock};
use super::{read_objects, repo_configs, LocalObjects};
use crate::engine_api::{ComponentCore, Core, NativeCore};
use crate::reconcile::{run_to_fixed_point_quiet, Ctx, DraftRenderer, Progress, RunReport};
use crate::store::counting::{CallCounts, Counter, Counting};
use crate::store::git::{init_bare, remove_unfinished_repository};
use crate::store::remote::{remote_configs, RemoteRevisions};
use crate::store::v1alpha2::{PorchApi, V2Revisions};
use crate::store::{NewRevision, PackageRevisionStore, PrFilter, StoreError};

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Output {
    /// Lines for people.
    #[default]
    Text,
    /// One JSON document for scripts.
    Json,
}

/// Output formats of `porch-variants rpkg`, as porchctl's `-o`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum RpkgOutput {
    /// porchctl's table (and lines for people).
    #[default]
    Text,
    /// The table (porch-server's table has no further columns).
    Wide,
    /// One JSON document for scripts.
    Json,
    /// The objects as YAML: one object, or a `List` of them, as
    /// kubectl prints them.
    Yaml,
}

/// Options of `porch-variants local`.
#[derive(Debug, Clone, clap::Args)]
#[command(
    after_help = "Exit status: 0 converged with nothing stalled; 1 an error (a failed reconcile or render, no fixed point within --max-passes); 2 converged, with objects stalled (an invalid object, an upstream not found), each named on the last lines."
)]
pub struct LocalArgs {
    /// The directory (objects as YAML files, repositories under repos/).
    pub dir: PathBuf,
    /// Create missing repositories and publish the seed packages under
    /// packages/<repo>/<package>/ first.
    #[arg(long)]
    pub init: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Output::Text)]
    pub output: Output,
    /// Use the core compiled into this binary instead of the embedded
    /// WebAssembly component.
    #[arg(long)]
    pub native_core: bool,
    /// Most reconcile passes before giving up on a fixed point, counted
    /// from the last pass in which an approval policy proposed or approved
    /// a draft (so a rollout that approval drives runs to its end).
    #[arg(long, default_value_t = 10)]
    pub max_passes: usize,
    /// No progress bar.
    #[arg(long)]
    pub no_progress: bool,
    /// How the variants' drafts are made: `v1alpha2` (the default here)
    /// declares v1alpha2 PackageRevisions with a source, which the
    /// PackageRevision controller in this process makes; `v1alpha1` writes
    /// them with their content.
    #[arg(long, value_enum, default_value_t = PorchApi::V1alpha2)]
    pub porch_api: PorchApi,
    /// Reconcile every PackageVariant, also those that nothing they read
    /// changed for since a run in which they wrote nothing (skipped by
    /// default; see `.porch-variants/cache/`).
    #[arg(long)]
    pub reconcile_all: bool,
    /// How many PackageVariants to reconcile at once (default: one per
    /// CPU). Variants that share a repository are still reconciled one
    /// after the other, in the order of `--jobs 1`, so the result does not
    /// depend on it.
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// How the directory's objects are read, as kubectl's `--validate`:
    /// `strict` refuses a field their schema does not know or a key
    /// written twice (naming file, object, field and line), `warn` reports
    /// them, `ignore` drops them silently.
    #[arg(long, value_enum, default_value_t = super::Validation::Strict, value_name = "MODE")]
    pub validate: super::Validation,
    /// Porch's function runner, for the drafts' renders.
    #[command(flatten)]
    pub runner: crate::function_runner::RunnerArgs,
    /// Plan only: run the whole reconcile on a copy of the directory and
    /// print each write, and each revision it would create, change or
    /// delete with a diff of its content; the directory is left as it was.
    #[arg(long)]
    pub dry_run: bool,
}

impl LocalArgs {
    /// `--jobs`, or one per CPU.
    pub fn jobs(&self) -> usize {
        self.jobs.unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
        })
    }
}

/// What a local run did (the JSON output).
#[derive(Debug, Serialize)]
pub struct LocalSummary {
    /// The run.
    #[serde(flatten)]
    pub report: RunReport,
    /// Store calls.
    pub store_calls: CallCounts,
    /// Which core decided (`component` or `native`).
    pub core: &'static str,
    /// Wall time of the reconcile, in seconds.
    pub seconds: f64,
    /// Packages published by `--init`.
    pub seeded: Vec<String>,
    /// The v1alpha2 PackageRevisions reconciled.
    pub package_revisions: Vec<super::rpkg::PrLine>,
    /// The PackageVariants and PackageVariantSets left stalled (their
    /// `Stalled` condition True: an invalid object, an upstream not found),
    /// each with why.
    pub stalled: Vec<crate::reconcile::Event>,
}

impl LocalSummary {
    /// `local`'s exit code: 0 converged with nothing stalled, 1 an error
    /// (a failed reconcile, a failed render, no fixed point), 2 converged
    /// with stalled objects.
    pub fn exit_code(&self, ok: bool) -> u8 {
        match (ok, self.stalled.is_empty()) {
            (false, _) => 1,
            (true, false) => 2,
            (true, true) => 0,
        }
    }
}

/// The objects of `objects` whose `Stalled` condition is True, with its
/// message.
fn stalled_objects(
    objects: &dyn crate::store::ObjectStore,
) -> Result<Vec<crate::reconcile::Event>, LocalError> {
    let stalled = |conditions: &[pv_core::api::Condition]| {
        conditions
            .iter()
            .find(|c| c.type_ == "Stalled" && c.status == "True")
            .map(|c| format!("{}: {}", c.reason, c.message))
    };
    let mut out = Vec::new();
    for pv in objects.list_package_variants(None)? {
        if let Some(why) = stalled(&pv.status.conditions) {
            out.push(crate::reconcile::Event::new(
                format!(
                    "PackageVariant {}/{}",
                    pv.metadata.namespace, pv.metadata.name
                ),
                "stalled",
                why,
            ));
        }
    }
    for set in objects.list_package_variant_sets(None)? {
        if let Some(why) = stalled(&set.status.conditions) {
            out.push(crate::reconcile::Event::new(
                format!(
                    "PackageVariantSet {}/{}",
                    set.metadata.namespace, set.metadata.name
                ),
                "stalled",
                why,
            ));
        }
    }
    Ok(out)
}

/// Errors of the local commands.
#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    /// A store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The core could not be loaded.
    #[error(transparent)]
    Core(#[from] crate::engine_api::CoreError),
    /// The reconcile failed.
    #[error(transparent)]
    Reconcile(#[from] crate::reconcile::ReconcileError),
    /// Bad usage.
    #[error("{0}")]
    Usage(String),
    /// The function runner could not be set up.
    #[error(transparent)]
    Runner(#[from] crate::function_runner::RunnerError),
}

/// What a person sees of a run while it goes: with text output, each write
/// on stdout as it happens (in the order of the report, so `--jobs` does
/// not change it); unless `--no-progress`, progress on stderr: a bar on a
/// terminal, otherwise a line every [`PROGRESS_EVERY`] with the variants
/// done, the rate and the time left.
struct RunProgress {
    bar: Option<indicatif::ProgressBar>,
    lines: bool,
    events: bool,
    state: std::sync::Mutex<PassState>,
}

/// How often a progress line is printed when stderr is not a terminal.
const PROGRESS_EVERY: Duration = Duration::from_secs(5);

struct PassState {
    pass: usize,
    total: usize,
    done: usize,
    started: Instant,
    last_line: Instant,
}

impl RunProgress {
    fn new(args: &LocalArgs) -> Self {
        use std::io::IsTerminal;
        let shown = !args.no_progress;
        let terminal = std::io::stderr().is_terminal();
        let bar = (shown && terminal).then(|| {
            let b = indicatif::ProgressBar::with_draw_target(
                Some(0),
                indicatif::ProgressDrawTarget::stderr(),
            );
            b.set_style(
                indicatif::ProgressStyle::with_template(
                    "{msg} [{bar:40}] {pos}/{len} {elapsed} (eta {eta})",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            b.enable_steady_tick(Duration::from_millis(200));
            b
        });
        RunProgress {
            bar,
            lines: shown && !terminal,
            events: args.output == Output::Text,
            state: std::sync::Mutex::new(PassState {
                pass: 0,
                total: 0,
                done: 0,
                started: Instant::now(),
                last_line: Instant::now(),
            }),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, PassState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// One line of a write: `OBJECT: ACTION[: DETAIL]`.
fn event_line(e: &crate::reconcile::Event) -> String {
    if e.detail.is_empty() {
        format!("{}: {}", e.object, e.action)
    } else {
        format!("{}: {}: {}", e.object, e.action, e.detail)
    }
}

impl Progress for RunProgress {
    fn start_pass(&self, pass: usize, total: usize) {
        let mut st = self.state();
        *st = PassState {
            pass,
            total,
            done: 0,
            started: Instant::now(),
            last_line: Instant::now(),
        };
        if let Some(b) = &self.bar {
            b.set_length(total as u64);
            b.set_position(0);
            b.set_message(format!("pass {pass}"));
        }
    }
    fn grow(&self, more: usize) {
        self.state().total += more;
        if let Some(b) = &self.bar {
            b.inc_length(more as u64);
        }
    }
    fn tick(&self) {
        if let Some(b) = &self.bar {
            b.inc(1);
        }
        let mut st = self.state();
        st.done += 1;
        if self.lines && st.last_line.elapsed() >= PROGRESS_EVERY {
            st.last_line = Instant::now();
            let rate = st.done as f64 / st.started.elapsed().as_secs_f64().max(1e-3);
            let left = st.total.saturating_sub(st.done) as f64 / rate.max(1e-3);
            eprintln!(
                "pass {}: {}/{} done, {rate:.0}/s, about {left:.0}s left",
                st.pass, st.done, st.total
            );
        }
    }
    fn event(&self, event: &crate::reconcile::Event) {
        self.line(&event_line(event));
    }
    fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

impl RunProgress {
    /// Prints `line` on stdout now (text output only).
    fn line(&self, line: &str) {
        if !self.events {
            return;
        }
        let print = || crate::outln!("{line}");
        match &self.bar {
            Some(b) => b.suspend(print),
            None => print(),
        }
    }
}

/// The repositories of a local directory, opened by a writing command.
pub struct OpenedRepositories {
    /// The store over the repositories (remote ones through their
    /// mirrors).
    pub store: RemoteRevisions,
    /// The revisions `--init` published.
    pub seeded: Vec<String>,
    /// The directory's lock, held as long as this value lives.
    pub lock: DirLock,
    /// The directory's objects, as read under the lock.
    pub objects: super::DirObjects,
}

/// Opens the Git repositories of `dir` (creating missing ones and
/// publishing seed packages when `init`), holding the directory's lock and
/// having removed the Git lock files a killed process left. Repositories
/// whose `spec.git.repo` is a URL are synced into their mirrors once here,
/// and every write to them is pushed (see [`crate::store::remote`]).
pub fn open_repositories(
    dir: &Path,
    init: bool,
    validation: super::Validation,
) -> Result<OpenedRepositories, LocalError> {
    let lock = DirLock::acquire(dir)?;
    let objects = read_objects(dir, validation)?;
    let configs = repo_configs(dir, &objects)?;
    let remotes = remote_configs(&objects.objects, &objects.sources, &configs)?;
    let is_remote = |c: &crate::store::git::GitRepoConfig| {
        remotes
            .iter()
            .any(|r| r.repo.namespace == c.namespace && r.repo.name == c.name)
    };
    if init {
        // A remote repository's mirror is made when it is opened.
        for c in configs.iter().filter(|c| !is_remote(c)) {
            if !c.path.exists() || remove_unfinished_repository(&c.path)? {
                init_bare(&c.path, &c.branch)?;
            }
        }
    }
    for c in &configs {
        if c.path.is_dir() {
            remove_stale_git_locks(&c.path)?;
        }
    }
    let local = configs.iter().filter(|c| !is_remote(c)).cloned().collect();
    let store = RemoteRevisions::open(local, remotes)?;
    // The lock is held: what a killed process left half moved is finished.
    store.finish_interrupted_moves()?;
    let mut seeded = Vec::new();
    if init {
        // Every seed package is read and checked before any is published:
        // one that would not render stops `--init` with nothing published.
        let mut actions = Vec::new();
        for c in &configs {
            let seeds = dir.join("packages").join(&c.name);
            let Ok(entries) = std::fs::read_dir(&seeds) else {
                continue;
            };
            let mut pkgs: Vec<PathBuf> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_dir())
                .collect();
            pkgs.sort();
            for p in pkgs {
                let package = p
                    .file_name()
                    .and_then(|n| n.to_str())
                    .unwrap_or_default()
                    .to_string();
                let name = crate::store::revision_name(&c.name, &package, SEED_WORKSPACE);
                pv_core::variantset::selector::is_dns1123_subdomain(&name).map_err(|e| {
                    StoreError::Data {
                        context: p.display().to_string(),
                        message: format!(
                            "package {package:?} cannot be published: its revision would be named {name:?}, and {e}"
                        ),
                    }
                })?;
                let existing = store.list(&c.namespace, &PrFilter::package(&c.name, &package))?;
                if existing.is_empty() {
                    let files = read_seed_package(&p)?;
                    actions.push((c, package, SeedAction::Publish(files)));
                } else if let Some(left) = unpublished_seed(&existing) {
                    // An earlier `--init` stopped between creating the seed
                    // revision and publishing it: finish the publish.
                    actions.push((c, package, SeedAction::Finish(Box::new(left.clone()))));
                }
            }
        }
        for (c, package, action) in actions {
            seeded.push(match action {
                SeedAction::Publish(files) => publish_files(
                    &store,
                    &c.namespace,
                    &c.name,
                    &package,
                    SEED_WORKSPACE,
                    files,
                    "init",
                )?,
                SeedAction::Finish(left) => publish_existing(&store, &c.namespace, &left)?,
            });
        }
    }
    Ok(OpenedRepositories {
        store,
        seeded,
        lock,
        objects,
    })
}

/// The workspace of the revision a seed package is published as.
const SEED_WORKSPACE: &str = "v1";

/// Largest file of a seed package that is read.
pub const MAX_SEED_FILE: u64 = 64 << 20;
/// Largest seed package (all its files) that is read.
pub const MAX_SEED_PACKAGE: u64 = 256 << 20;

/// Reads a seed package's directory as package files: directories and
/// regular UTF-8 files only (a symbolic link is refused, never followed),
/// each file at most [`MAX_SEED_FILE`] and all at most
/// [`MAX_SEED_PACKAGE`] bytes. The walk keeps its own stack, so any depth
/// the file system allows is read without recursion.
pub fn read_package_dir(dir: &Path) -> Result<crate::store::Files, LocalError> {
    let refuse = |p: &Path, message: String| {
        LocalError::Store(StoreError::Data {
            context: p.display().to_string(),
            message,
        })
    };
    let mut files = crate::store::Files::new();
    let mut total = 0u64;
    let mut stack = vec![(dir.to_path_buf(), 0usize)];
    // A path longer than the system allows (PATH_MAX) is named by its
    // depth under the package, not by the whole path.
    let too_deep = |depth: usize| {
        refuse(
            dir,
            format!(
                "directories nested {depth} deep: the path is longer than the file system allows, so the package cannot be read"
            ),
        )
    };
    let name_too_long = |e: &std::io::Error| e.raw_os_error() == Some(36);
    while let Some((d, depth)) = stack.pop() {
        let entries = match std::fs::read_dir(&d) {
            Ok(entries) => entries,
            Err(e) if name_too_long(&e) => return Err(too_deep(depth)),
            Err(e) => return Err(StoreError::io(format!("reading {}", d.display()))(e).into()),
        };
        for e in entries {
            let e = e.map_err(StoreError::io(format!("reading {}", d.display())))?;
            let p = e.path();
            let kind = e
                .file_type()
                .map_err(StoreError::io(format!("reading {}", p.display())))?;
            if kind.is_symlink() {
                return Err(refuse(
                    &p,
                    "a symbolic link: a seed package holds directories and regular files only, and links are not followed".into(),
                ));
            }
            if kind.is_dir() {
                stack.push((p, depth + 1));
                continue;
            }
            if !kind.is_file() {
                return Err(refuse(&p, "not a regular file".into()));
            }
            let len = e
                .metadata()
                .map_err(StoreError::io(format!("reading {}", p.display())))?
                .len();
            if len > MAX_SEED_FILE {
                return Err(refuse(
                    &p,
                    format!(
                        "{len} bytes, more than the {} MiB a package file may have",
                        MAX_SEED_FILE >> 20
                    ),
                ));
            }
            total += len;
            if total > MAX_SEED_PACKAGE {
                return Err(refuse(
                    dir,
                    format!(
                        "more than the {} MiB a package may have",
                        MAX_SEED_PACKAGE >> 20
                    ),
                ));
            }
            let rel = p
                .strip_prefix(dir)
                .unwrap_or(&p)
                .to_string_lossy()
                .replace('\\', "/");
            let bytes = match std::fs::read(&p) {
                Ok(b) => b,
                Err(e) if name_too_long(&e) => return Err(too_deep(depth)),
                Err(e) => return Err(StoreError::io(format!("reading {}", p.display()))(e).into()),
            };
            let text = String::from_utf8(bytes).map_err(|_| refuse(&p, "not UTF-8 text".into()))?;
            files.insert(rel, text);
        }
    }
    Ok(files)
}

/// What `--init` does with one seed package.
enum SeedAction {
    /// Publish these files as the package's first revision.
    Publish(crate::store::Files),
    /// Publish the revision an interrupted `--init` left as a draft.
    Finish(Box<PackageRevision>),
}

/// A seed package's files ([`read_package_dir`]), checked as render reads
/// a package ([`pv_core::render::check_package`]): a Kptfile that does not
/// decode or validate, or a resource file that does not parse, is refused
/// naming the file.
pub fn read_seed_package(dir: &Path) -> Result<crate::store::Files, LocalError> {
    let files = read_package_dir(dir)?;
    pv_core::render::check_package(&files).map_err(|message| {
        LocalError::Store(StoreError::Data {
            context: format!("seed package {}", dir.display()),
            message,
        })
    })?;
    Ok(files)
}

/// The seed revision (workspace `v1`) an interrupted `--init` created but
/// did not publish, when the package has no published revision.
fn unpublished_seed(existing: &[PackageRevision]) -> Option<&PackageRevision> {
    if existing.iter().any(|r| r.spec.lifecycle.is_published()) {
        return None;
    }
    existing
        .iter()
        .find(|r| r.spec.workspace_name == SEED_WORKSPACE)
}

/// Proposes (when a draft) and publishes an existing revision.
fn publish_existing(
    store: &dyn PackageRevisionStore,
    ns: &str,
    revision: &PackageRevision,
) -> Result<String, LocalError> {
    let name = &revision.metadata.name;
    if revision.spec.lifecycle != Lifecycle::Proposed {
        store.update_lifecycle(ns, name, Lifecycle::Proposed)?;
    }
    let published = store.update_lifecycle(ns, name, Lifecycle::Published)?;
    Ok(format!("{name} (revision {})", published.spec.revision))
}

/// Creates a draft of `package` with `files` and publishes it.
pub fn publish_files(
    store: &dyn PackageRevisionStore,
    ns: &str,
    repo: &str,
    package: &str,
    workspace: &str,
    files: crate::store::Files,
    task: &str,
) -> Result<String, LocalError> {
    let mut pr = PackageRevision::default();
    pr.metadata.namespace = ns.to_string();
    pr.spec.repository = repo.to_string();
    pr.spec.package_name = package.to_string();
    pr.spec.workspace_name = workspace.to_string();
    pr.spec.tasks = vec![pv_core::api::Task {
        type_: task.to_string(),
        ..Default::default()
    }];
    let created = store.create(NewRevision {
        revision: pr,
        files,
        upstream_lock: None,
    })?;
    publish_existing(store, ns, &created)
}

/// `porch-variants local <dir>`.
pub fn run_local(args: &LocalArgs) -> Result<(LocalSummary, bool), LocalError> {
    let dir = &args.dir;
    if !dir.is_dir() {
        return Err(LocalError::Usage(format!(
            "{} is not a directory",
            dir.display()
        )));
    }
    let OpenedRepositories {
        store: git,
        seeded,
        lock: _lock,
        objects: dir_objects,
    } = open_repositories(dir, args.init, args.validate)?;
    let git = git.with_owner_cache(dir.join(super::OWNER_CACHE));
    let now = crate::clock::now();
    let objects = LocalObjects::load(dir, &dir_objects, &now)?;
    let core: Box<dyn Core> = if args.native_core {
        Box::new(NativeCore)
    } else {
        Box::new(ComponentCore::load()?)
    };
    let identity = crate::reconcile::quiet::build_identity(core.name());
    let mut quiet = if args.reconcile_all {
        None
    } else {
        Some(super::read_quiet_digests(dir).for_identity(&identity))
    };
    let recorded = quiet.clone();
    let counter = Counter::new();
    let revisions = Counting::new(&git, counter.clone());
    let objects = Counting::new(objects, counter.clone());
    let renderer = DraftRenderer::porch_server(&args.dir, args.runner.runner()?);
    // Porch's FunctionConfigs in DIR choose the executor of the images
    // they name, as porch-server's do.
    renderer.set_function_configs(dir_objects.function_configs()?);
    let ctx = Ctx {
        revisions: &revisions,
        objects: &objects,
        core: core.as_ref(),
        now,
        renderer: Some(&renderer),
        jobs: args.jobs(),
    };
    let bar = RunProgress::new(args);
    for seed in &seeded {
        bar.line(&format!("seeded {seed}"));
    }
    let started = Instant::now();
    let declared: Vec<serde_json::Value> = dir_objects
        .objects
        .iter()
        .filter(|o| super::rpkg::is_v1alpha2(o))
        .cloned()
        .collect();
    let repositories: Vec<serde_json::Value> = dir_objects
        .objects
        .iter()
        .filter(|o| o["kind"] == "Repository")
        .cloned()
        .collect();
    let (report, package_revisions) = if args.porch_api == PorchApi::V1alpha2 {
        // The variants declare v1alpha2 objects; the PackageRevision
        // controller (this process) makes them in Git as they are written.
        let session =
            super::rpkg::Session::open(dir, &repositories, &revisions, core.as_ref(), &renderer)?;
        let mut namespaces: Vec<String> = repositories
            .iter()
            .map(|r| {
                crate::store::rules::ns_or_default(
                    r["metadata"]["namespace"].as_str().unwrap_or_default(),
                )
            })
            .collect();
        namespaces.sort();
        namespaces.dedup();
        for ns in &namespaces {
            session.discover(ns)?;
        }
        // What the controller did not finish last time (a failed source,
        // a render not done) is tried again before the variants look.
        let retried = session.retry_unready()?;
        retried.iter().for_each(|e| bar.event(e));
        // The revisions declared in the directory's files first: a
        // variant may clone one, and an approval policy they carry is
        // applied by the passes below.
        let mut lines = super::rpkg::reconcile_declared(&session, &declared)?;
        let v2 = Counting::new(
            V2Revisions::new(&session.api, &revisions, Some(&session)),
            counter.clone(),
        );
        let ctx = Ctx {
            revisions: &v2,
            ..ctx
        };
        let mut report = run_to_fixed_point_quiet(&ctx, args.max_passes, &bar, quiet.as_mut())?;
        // Drafts whose render was left for a push that did not come (the
        // variant's mutations changed nothing) are rendered now.
        let rendered = session.retry_unready()?;
        rendered.iter().for_each(|e| bar.event(e));
        // Every write of the run is counted, the controller's too.
        report.events.splice(0..0, retried);
        report.events.extend(rendered);
        // Then whatever the passes left the controller to do (a draft
        // whose render failed is reported here).
        lines.extend(super::rpkg::reconcile_declared(&session, &declared)?);
        session.keep_discovered()?;
        session.compact()?;
        (report, lines)
    } else {
        let report = run_to_fixed_point_quiet(&ctx, args.max_passes, &bar, quiet.as_mut())?;
        let lines = if declared.is_empty() && !super::rpkg::has_objects(dir) {
            Vec::new()
        } else {
            let session = super::rpkg::Session::open(
                dir,
                &repositories,
                &revisions,
                core.as_ref(),
                &renderer,
            )?;
            let lines = super::rpkg::reconcile_declared(&session, &declared)?;
            session.compact()?;
            lines
        };
        (report, lines)
    };
    let seconds = started.elapsed().as_secs_f64();
    if let Some(q) = quiet.filter(|q| Some(q) != recorded.as_ref()) {
        super::write_quiet_digests(dir, &q)?;
    }
    git.save_owner_cache()?;
    let ok = report.converged && report.errors.is_empty() && package_revisions.iter().all(|l| l.ok);
    let stalled = stalled_objects(&objects)?;
    Ok((
        LocalSummary {
            report,
            store_calls: counter.counts(),
            core: core.name(),
            seconds,
            seeded,
            package_revisions,
            stalled,
        },
        ok,
    ))
}

/// Prints a summary as text (the seeded packages and the writes were
/// printed as they happened).
pub fn print_text(s: &LocalSummary) {
    // The writes were printed as they happened; what is left failing is
    // summed up.
    for e in &s.stalled {
        crate::outln!("{}: stalled: {}", e.object, e.detail);
    }
    for e in &s.report.errors {
        crate::outln!("{}: error: {}", e.object, e.detail);
    }
    for l in &s.package_revisions {
        crate::outln!("{}: {}", l.object, l.detail);
    }
    crate::outln!(
        "{} PackageVariantSet(s), {} PackageVariant(s){}: {} write(s) in {} pass(es), {}; {} store reads, {} store writes; {:.2}s ({} core)",
        s.report.package_variant_sets,
        s.report.package_variants,
        if s.report.skipped > 0 {
            format!(" ({} unchanged since a quiet run, skipped)", s.report.skipped)
        } else {
            String::new()
        },
        s.report.events.len(),
        s.report.passes,
        if s.report.converged { "converged" } else { "NOT converged" },
        s.store_calls.reads,
        s.store_calls.writes,
        s.seconds,
        s.core
    );
}

/// `porch-variants rpkg` subcommands.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum RpkgCommand {
    /// List package revisions.
    List {
        /// Only this repository.
        #[arg(long)]
        repo: Option<String>,
        /// Only this package.
        #[arg(long)]
        package: Option<String>,
    },
    /// Propose drafts for approval.
    Propose(Names),
    /// Publish proposed revisions.
    Approve(Names),
    /// Send proposed revisions back to draft.
    Reject(Names),
    /// Propose the deletion of published revisions.
    ProposeDelete(Names),
    /// Delete the named drafts, proposed revisions, or revisions whose
    /// deletion was proposed; with --all, every revision whose deletion was
    /// proposed (never all drafts at once).
    #[command(alias = "del")]
    Delete(Names),
    /// Create a package with kpt's initializer, as a draft (a v1alpha2
    /// PackageRevision with `source.init`).
    Init(super::rpkg::InitArgs),
    /// Clone a published revision, or a package in a Git repository, into
    /// a new package (`source.cloneFrom`).
    Clone(super::rpkg::CloneArgs),
    /// A new revision of a package from one of its published revisions
    /// (`source.copyFrom`).
    Copy(super::rpkg::CopyArgs),
    /// A new revision of a cloned package, merged with a newer revision of
    /// its upstream (`source.upgrade`).
    Upgrade(super::rpkg::UpgradeArgs),
    /// Show v1alpha2 PackageRevisions (every revision in Git has one).
    Get {
        /// Only these.
        names: Vec<String>,
    },
    /// Write a revision's files into a directory.
    Pull {
        /// The revision.
        name: String,
        /// The directory.
        #[arg(value_name = "DIR")]
        to: PathBuf,
    },
    /// Replace a draft's files with a directory's, and render it.
    Push {
        /// The draft.
        name: String,
        /// The directory.
        #[arg(value_name = "DIR")]
        from: PathBuf,
    },
}

/// Revisions to act on.
#[derive(Debug, Clone, clap::Args)]
pub struct Names {
    /// Revision names (`<repo>.<package>.<workspace>`).
    pub names: Vec<String>,
    /// Every revision in the lifecycle the command applies to.
    #[arg(long)]
    pub all: bool,
    /// The revisions in the lifecycle the command applies to whose labels
    /// match this selector (kubectl's syntax: `team=a,tier in (web,db)`).
    #[arg(long, short = 'l', value_name = "LABELS")]
    pub selector: Option<String>,
    /// Propose or approve a revision whose render failed (said, not
    /// silent).
    #[arg(long)]
    pub force: bool,
}

/// Whether `local` has run on `dir` (its repositories or its state are
/// there).
fn is_local_directory(dir: &Path) -> bool {
    dir.join("repos").is_dir() || dir.join(".porch-variants").is_dir()
}

/// `porch-variants rpkg --dir <dir> <command>`.
pub fn run_rpkg(
    dir: &Path,
    namespace: &str,
    cmd: &RpkgCommand,
    output: RpkgOutput,
    validation: super::Validation,
) -> Result<(), LocalError> {
    // Outside a directory `local` has run on, nothing is created (not even
    // the lock) and nothing is listed as if it were empty.
    if !is_local_directory(dir) {
        return Err(LocalError::Usage(format!(
            "{} is not a porch-variants directory (no repos/ and no .porch-variants/): \
             `porch-variants local --init {}` makes one from its Repository objects",
            dir.display(),
            dir.display()
        )));
    }
    let OpenedRepositories {
        store: git,
        lock: _lock,
        objects: dir_objects,
        ..
    } = open_repositories(dir, false, validation)?;
    // The v1alpha2 controller (and the component it decides with) is
    // loaded only where v1alpha2 objects exist or are made.
    let lifecycle_verb = matches!(
        cmd,
        RpkgCommand::List { .. }
            | RpkgCommand::Propose(_)
            | RpkgCommand::Approve(_)
            | RpkgCommand::Reject(_)
            | RpkgCommand::ProposeDelete(_)
            | RpkgCommand::Delete(_)
    );
    let core;
    let renderer;
    let session = if lifecycle_verb && !super::rpkg::has_objects(dir) {
        None
    } else {
        core = ComponentCore::load()?;
        renderer = DraftRenderer::porch_server(dir, None);
        let repositories: Vec<serde_json::Value> = dir_objects
            .objects
            .into_iter()
            .filter(|o| o["kind"] == "Repository")
            .collect();
        Some(super::rpkg::Session::open(
            dir,
            &repositories,
            &git,
            &core,
            &renderer,
        )?)
    };
    if let Some(s) = &session {
        // What the controller did not finish (a killed command's object)
        // is finished first, as a restarted controller does.
        for e in s.retry_unready()? {
            if matches!(output, RpkgOutput::Text | RpkgOutput::Wide) {
                crate::outln!("{}", event_line(&e));
            }
        }
    }
    let v2 = || -> Result<&super::rpkg::Session<'_>, LocalError> {
        session
            .as_ref()
            .ok_or_else(|| LocalError::Usage("the PackageRevision controller is not loaded".into()))
    };
    // The labels of a revision: its v1alpha2 object's where it has one
    // (what `rpkg get` shows), else what Git records.
    let labels_of = |p: &pv_core::api::package_revision::PackageRevision| {
        let mut labels = p.metadata.labels.clone();
        if let Some(obj) = session
            .as_ref()
            .and_then(|s| crate::prc::PrApi::get(&s.api, namespace, &p.metadata.name).ok())
        {
            if let Some(map) = obj["metadata"]["labels"].as_object() {
                for (k, v) in map {
                    labels.insert(k.clone(), v.as_str().unwrap_or_default().to_string());
                }
            }
        }
        labels
    };
    let select = |names: &Names, from: &[Lifecycle]| -> Result<Vec<String>, LocalError> {
        let selector = match &names.selector {
            Some(s) => Some(
                pv_core::api::label_selector::LabelSelector::parse(s)
                    .map_err(|e| LocalError::Usage(format!("--selector {s:?}: {e}")))?,
            ),
            None => None,
        };
        if (names.all || selector.is_some()) && !names.names.is_empty() {
            return Err(LocalError::Usage(
                "name revisions, or pass --all or --selector, not both".into(),
            ));
        }
        if names.all || selector.is_some() {
            Ok(git
                .list(namespace, &PrFilter::default())?
                .into_iter()
                .filter(|p| from.contains(&p.spec.lifecycle))
                .filter(|p| selector.as_ref().is_none_or(|s| s.matches(&labels_of(p))))
                .map(|p| p.metadata.name)
                .collect())
        } else if names.names.is_empty() {
            Err(LocalError::Usage(
                "name revisions or pass --all or --selector".into(),
            ))
        } else {
            Ok(names.names.clone())
        }
    };
    // porchctl's rules: what each verb may move a revision from.
    let current = |name: &str| -> Result<Lifecycle, LocalError> {
        if let Some(obj) = session
            .as_ref()
            .and_then(|s| crate::prc::PrApi::get(&s.api, namespace, name).ok())
        {
            if let Ok(l) = serde_json::from_value::<Lifecycle>(obj["spec"]["lifecycle"].clone()) {
                return Ok(l);
            }
        }
        Ok(git.get(namespace, name)?.spec.lifecycle)
    };
    let act_on =
        |names: Vec<String>, to: Option<Lifecycle>, verb: &str| -> Result<(), LocalError> {
            for name in names {
                // A revision with a v1alpha2 object goes through the
                // PackageRevision controller, which keeps its status.
                if let Some(session) = session
                    .as_ref()
                    .filter(|s| crate::prc::PrApi::get(&s.api, namespace, &name).is_ok())
                {
                    match to {
                        Some(l) => {
                            let (pr, outcome) = session.set_lifecycle(namespace, &name, l)?;
                            super::rpkg::check(&name, &pr, &outcome)?;
                            if pr.status.revision > 0 {
                                crate::outln!("{name} {verb} (revision {})", pr.status.revision);
                            } else {
                                crate::outln!("{name} {verb}");
                            }
                        }
                        None => {
                            let outcome = session.delete(namespace, &name)?;
                            if let Some(e) = outcome.error {
                                return Err(LocalError::Usage(format!("{name}: {e}")));
                            }
                            crate::outln!("{name} {verb}");
                        }
                    }
                    continue;
                }
                match to {
                    Some(l) => {
                        let pr = git.update_lifecycle(namespace, &name, l)?;
                        if pr.spec.revision > 0 {
                            crate::outln!("{name} {verb} (revision {})", pr.spec.revision);
                        } else {
                            crate::outln!("{name} {verb}");
                        }
                    }
                    None => {
                        git.delete(namespace, &name)?;
                        crate::outln!("{name} {verb}");
                    }
                }
            }
            Ok(())
        };
    // A revision whose render failed is not proposed or approved, unless
    // forced: what it would publish is not what its pipeline makes.
    let render_failure = |name: &str| -> Option<String> {
        let obj = crate::prc::PrApi::get(&session.as_ref()?.api, namespace, name).ok()?;
        let rendered = obj["status"]["conditions"]
            .as_array()?
            .iter()
            .find(|c| c["type"] == "Rendered")?;
        (rendered["status"] == "False").then(|| {
            rendered["message"]
                .as_str()
                .unwrap_or("no message")
                .to_string()
        })
    };
    let act = |names: Vec<String>,
               to: Option<Lifecycle>,
               verb: &str,
               force: bool,
               bulk: bool|
     -> Result<(), LocalError> {
        let mut refused = Vec::new();
        let names: Vec<String> = names
            .into_iter()
            .filter_map(|name| match (current(&name), to) {
                (Err(e), _) => {
                    refused.push(format!("{name}: {e}"));
                    None
                }
                (Ok(from), Some(to)) => match porchctl_rule(from, to) {
                    Rule::Move if matches!(to, Lifecycle::Proposed | Lifecycle::Published) => {
                        match render_failure(&name) {
                            None => Some(name),
                            Some(why) if force => {
                                eprintln!("{name}: its render failed ({why}); {verb} as --force asks");
                                Some(name)
                            }
                            Some(why) => {
                                let why = format!(
                                    "its render failed: {why}; push a package that renders, or pass --force"
                                );
                                eprintln!("{name} failed ({why})");
                                refused.push(why);
                                None
                            }
                        }
                    }
                    Rule::Move => Some(name),
                    Rule::Already => {
                        eprintln!("{name} is already {}", lifecycle_word(to));
                        None
                    }
                    Rule::Refuse(why) => {
                        eprintln!("{name} failed ({why})");
                        refused.push(why);
                        None
                    }
                },
                (Ok(_), None) => Some(name),
            })
            .collect();
        let acted = names.len();
        let result = act_on(names, to, verb);
        if bulk {
            let done = if result.is_ok() { acted } else { 0 };
            if refused.is_empty() {
                crate::outln!("{done} {verb}");
            } else {
                crate::outln!("{done} {verb}, {} refused", refused.len());
            }
        }
        if !refused.is_empty() {
            return Err(LocalError::Usage(format!(
                "errors:\n  {}",
                refused.join("\n  ")
            )));
        }
        result
    };
    let result = match cmd {
        RpkgCommand::List { repo, package } => {
            let filter = PrFilter {
                repository: repo.clone(),
                package: package.clone(),
                owner_uid: None,
            };
            let prs = git.list(namespace, &filter)?;
            let objects: Vec<serde_json::Value> = prs
                .iter()
                .map(|p| serde_json::to_value(p).unwrap_or_default())
                .collect();
            super::rpkg::print_revisions(&objects, output, false, |o| {
                let latest = o["metadata"]["labels"]
                    [pv_core::api::package_revision::LATEST_REVISION_LABEL]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                super::rpkg::Row::new(
                    o,
                    o["spec"]["repository"].as_str().unwrap_or_default(),
                    o["spec"]["revision"].as_i64().unwrap_or(0),
                    latest,
                )
            })
        }
        RpkgCommand::Propose(n) => act(
            select(n, &[Lifecycle::Draft])?,
            Some(Lifecycle::Proposed),
            "proposed",
            n.force,
            n.all || n.selector.is_some(),
        ),
        RpkgCommand::Approve(n) => act(
            select(n, &[Lifecycle::Proposed])?,
            Some(Lifecycle::Published),
            "approved",
            n.force,
            n.all || n.selector.is_some(),
        ),
        RpkgCommand::Reject(n) => act(
            select(n, &[Lifecycle::Proposed])?,
            Some(Lifecycle::Draft),
            "rejected",
            n.force,
            n.all || n.selector.is_some(),
        ),
        RpkgCommand::ProposeDelete(n) => act(
            select(n, &[Lifecycle::Published])?,
            Some(Lifecycle::DeletionProposed),
            "deletion proposed",
            n.force,
            n.all || n.selector.is_some(),
        ),
        RpkgCommand::Delete(n) => act(
            select(n, &[Lifecycle::DeletionProposed])?,
            None,
            "deleted",
            n.force,
            n.all || n.selector.is_some(),
        ),
        RpkgCommand::Init(a) => super::rpkg::init(v2()?, namespace, a),
        RpkgCommand::Clone(a) => super::rpkg::clone(v2()?, namespace, a),
        RpkgCommand::Copy(a) => super::rpkg::copy(v2()?, namespace, a),
        RpkgCommand::Upgrade(a) => super::rpkg::upgrade(v2()?, namespace, a),
        RpkgCommand::Get { names } => super::rpkg::get(v2()?, namespace, names, output),
        RpkgCommand::Pull { name, to } => super::rpkg::pull(v2()?, namespace, name, to),
        RpkgCommand::Push { name, from } => super::rpkg::push(v2()?, namespace, name, from),
    };
    if let Some(s) = &session {
        s.compact()?;
    }
    result
}

/// What porchctl does when a verb asks a revision to move.
enum Rule {
    /// It moves.
    Move,
    /// It is there already (said, not an error).
    Already,
    /// Refused, with porchctl's message.
    Refuse(String),
}

/// porchctl's rules (`rpkg propose`, `approve`, `reject`, `propose-delete`):
/// propose only a Draft, approve only a Proposed revision (or a deletion
/// proposal back to Published), reject a Proposed one back to Draft.
fn porchctl_rule(from: Lifecycle, to: Lifecycle) -> Rule {
    use Lifecycle::{DeletionProposed, Draft, Proposed, Published};
    match (from, to) {
        (f, t) if f == t => Rule::Already,
        (Draft, Proposed) => Rule::Move,
        (_, Proposed) => Rule::Refuse(format!("cannot propose {} package", lifecycle_word(from))),
        (Proposed, Published | Draft) | (DeletionProposed, Published) => Rule::Move,
        (Published, DeletionProposed) => Rule::Move,
        (_, DeletionProposed) => Rule::Refuse(format!(
            "cannot propose {} package for deletion; only published packages can be deleted",
            lifecycle_word(from)
        )),
        _ => Rule::Refuse(format!(
            "cannot change approval from {} to {}",
            lifecycle_word(from),
            lifecycle_word(to)
        )),
    }
}

/// A lifecycle as Porch spells it (`Draft`, `Proposed`, ...).
fn lifecycle_word(l: Lifecycle) -> String {
    serde_json::to_value(l)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{l:?}"))
}
