//! The v1alpha2 PackageRevision controller's host side: the reconcile's
//! decisions are the core's ([`pv_core::prc::reconcile`], through
//! [`Core::reconcile_package_revision`], which calls back for each call it
//! makes); this module makes
//! the calls the core asks for against
//! * a [`PrApi`] — the PackageRevision and Repository objects (the API
//!   server in Kubernetes mode; files under the directory in local mode,
//!   [`local_api`]);
//! * a [`ContentCache`] — package content in Git ([`content`], over the
//!   [`crate::store::PackageRevisionStore`]);
//! * a [`Renderer`] — kpt's pipeline, behind a bounded number of render
//!   slots.

pub mod content;
pub mod fetch;
pub mod local_api;

use std::sync::atomic::{AtomicUsize, Ordering};

use pv_core::prc::reconcile::{
    Answer, Call, Config, Files, Outcome, Rendered, RevisionKey, StepInput,
};
use serde_json::Value;

use crate::engine_api::{Core, CoreError};

/// A call failed: its answer to the core.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// The object or revision does not exist.
    #[error("{0}")]
    NotFound(String),
    /// It exists already.
    #[error("{0}")]
    AlreadyExists(String),
    /// Anything else.
    #[error("{0}")]
    Failed(String),
}

/// Result of a call.
pub type CallResult<T> = Result<T, CallError>;

impl From<crate::store::StoreError> for CallError {
    fn from(e: crate::store::StoreError) -> Self {
        match e {
            crate::store::StoreError::NotFound { .. } => CallError::NotFound(e.to_string()),
            e => CallError::Failed(e.to_string()),
        }
    }
}

/// The PackageRevision (v1alpha2) and Repository objects, as the API
/// server serves them.
pub trait PrApi {
    /// Get through the (possibly lagging) cache.
    fn get(&self, namespace: &str, name: &str) -> CallResult<Value>;
    /// Get past every cache.
    fn read(&self, namespace: &str, name: &str) -> CallResult<Value>;
    /// A Repository object.
    fn get_repository(&self, namespace: &str, name: &str) -> CallResult<Value>;
    /// JSON merge patch of a PackageRevision.
    fn merge_patch(&self, namespace: &str, name: &str, patch: &Value) -> CallResult<()>;
    /// Server-side apply of `object`'s status, forced, as `manager`.
    fn apply_status(&self, manager: &str, object: &Value) -> CallResult<()>;
    /// Server-side apply of `object`'s spec, forced, as `manager`.
    fn apply_spec(&self, manager: &str, object: &Value) -> CallResult<()>;
    /// The PackageRevisions of one package of one repository.
    fn list(&self, namespace: &str, repository: &str, package: &str) -> CallResult<Vec<Value>>;
}

/// Porch's ContentCache: package revisions in Git, written through drafts
/// (`create_*_draft` → `update_resources` → `close_draft`).
pub trait ContentCache {
    /// A revision's lifecycle, locks, publish data and (if asked) files.
    fn get_package_content(
        &self,
        revision: &RevisionKey,
        resources: bool,
    ) -> CallResult<pv_core::prc::reconcile::Content>;
    /// A draft for a new revision; [`CallError::AlreadyExists`] when the
    /// revision is already in Git.
    fn create_new_draft(&self, revision: &RevisionKey) -> CallResult<String>;
    /// A draft over an existing draft or proposed revision.
    fn create_draft_from_existing(&self, revision: &RevisionKey) -> CallResult<String>;
    /// Sets a draft's files.
    fn update_resources(
        &self,
        draft: &str,
        files: &Files,
        message: &str,
        upstream_lock: Option<&pv_core::api::package_revision::Locator>,
    ) -> CallResult<()>;
    /// Writes a draft to Git.
    fn close_draft(&self, draft: &str) -> CallResult<()>;
    /// Moves a revision to `lifecycle`; the updated content.
    fn update_lifecycle(
        &self,
        revision: &RevisionKey,
        lifecycle: pv_core::api::Lifecycle,
    ) -> CallResult<pv_core::prc::reconcile::Content>;
    /// Deletes a revision from Git.
    fn delete_package(&self, revision: &RevisionKey) -> CallResult<()>;
}

/// Renders a package with kpt's pipeline; `Ok(Err(..))` is the pipeline's
/// own failure with the partial output, `Err` an infrastructure failure.
pub trait Renderer {
    /// Renders `files`.
    fn render(&self, files: &Files) -> Result<Rendered, String>;
}

/// Fetches a package from a Git location (`cloneFrom.git`).
pub trait GitFetcher {
    /// The files at `git.repo`, `git.ref`, `git.directory`, and the lock.
    fn fetch(
        &self,
        namespace: &str,
        git: &pv_core::api::package_revision::v1alpha2::GitSource,
    ) -> CallResult<pv_core::prc::reconcile::Fetched>;
}

/// A fixed number of render slots (`--packagerevisions.max-concurrent-renders`);
/// 0 means unbounded.
#[derive(Debug)]
pub struct RenderSlots {
    limit: usize,
    taken: AtomicUsize,
}

impl RenderSlots {
    /// `limit` slots (0: no limit).
    pub fn new(limit: usize) -> Self {
        RenderSlots {
            limit,
            taken: AtomicUsize::new(0),
        }
    }

    /// No slot ever free: every render is put off, as when all of a
    /// controller's slots are taken.
    pub fn none() -> Self {
        RenderSlots {
            limit: 1,
            taken: AtomicUsize::new(1),
        }
    }

    /// Takes a slot without waiting; `None` when all are taken.
    pub fn try_take(&self) -> Option<SlotGuard<'_>> {
        let mut cur = self.taken.load(Ordering::Acquire);
        loop {
            if self.limit != 0 && cur >= self.limit {
                return None;
            }
            match self
                .taken
                .compare_exchange(cur, cur + 1, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Some(SlotGuard(self)),
                Err(now) => cur = now,
            }
        }
    }
}

/// A taken render slot, given back on drop.
#[derive(Debug)]
pub struct SlotGuard<'a>(&'a RenderSlots);

impl Drop for SlotGuard<'_> {
    fn drop(&mut self) {
        self.0.taken.fetch_sub(1, Ordering::AcqRel);
    }
}

/// What one reconcile works with.
pub struct Deps<'a> {
    /// Decisions.
    pub core: &'a dyn Core,
    /// Objects.
    pub api: &'a dyn PrApi,
    /// Git content.
    pub content: &'a dyn ContentCache,
    /// The pipeline renderer (`None`: drafts are not rendered).
    pub renderer: Option<&'a dyn Renderer>,
    /// Render slots.
    pub slots: &'a RenderSlots,
    /// Fetches `cloneFrom.git` packages.
    pub fetcher: &'a dyn GitFetcher,
}

/// A reconcile could not run (the core could not be called, or it went on
/// past any sensible number of calls).
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// The core failed.
    #[error(transparent)]
    Core(#[from] CoreError),
    /// The core kept asking for calls.
    #[error("the reconcile of {0} made more than {MAX_CALLS} calls")]
    Runaway(String),
}

/// More calls than any reconcile makes (the three-revision upgrade with a
/// render and a label pass over a large package makes a few dozen, plus one
/// label patch per revision of the package).
pub const MAX_CALLS: usize = 10_000;

fn answer<T: serde::Serialize>(r: CallResult<T>) -> Answer {
    match r {
        Ok(v) => match serde_json::to_value(v) {
            Ok(v) => Answer::ok(v),
            Err(e) => Answer::error(e.to_string()),
        },
        Err(CallError::NotFound(m)) => Answer::NotFound { message: m },
        Err(CallError::AlreadyExists(m)) => Answer::AlreadyExists { message: m },
        Err(CallError::Failed(m)) => Answer::error(m),
    }
}

/// Makes one call.
pub fn make_call(deps: &Deps<'_>, call: &Call) -> Answer {
    match call {
        Call::GetPackageRevision { namespace, name } => answer(deps.api.get(namespace, name)),
        Call::ReadPackageRevision { namespace, name } => answer(deps.api.read(namespace, name)),
        Call::GetRepository { namespace, name } => answer(deps.api.get_repository(namespace, name)),
        Call::MergePatch {
            namespace,
            name,
            patch,
        } => answer(deps.api.merge_patch(namespace, name, patch)),
        Call::ApplyStatus {
            field_manager,
            object,
        } => answer(deps.api.apply_status(field_manager, object)),
        Call::ApplySpec {
            field_manager,
            object,
        } => answer(deps.api.apply_spec(field_manager, object)),
        Call::ListPackageRevisions {
            namespace,
            repository,
            package_name,
        } => answer(deps.api.list(namespace, repository, package_name)),
        Call::GetPackageContent {
            revision,
            resources,
        } => answer(deps.content.get_package_content(revision, *resources)),
        Call::CreateNewDraft { revision, .. } => answer(deps.content.create_new_draft(revision)),
        Call::CreateDraftFromExisting { revision } => {
            answer(deps.content.create_draft_from_existing(revision))
        }
        Call::UpdateResources {
            draft,
            files,
            message,
            upstream_lock,
        } => answer(
            deps.content
                .update_resources(draft, files, message, upstream_lock.as_ref()),
        ),
        Call::CloseDraft { draft, .. } => answer(deps.content.close_draft(draft)),
        Call::UpdateLifecycle {
            revision,
            lifecycle,
        } => answer(deps.content.update_lifecycle(revision, *lifecycle)),
        Call::DeletePackage { revision } => answer(deps.content.delete_package(revision)),
        Call::FetchGit { namespace, git } => answer(deps.fetcher.fetch(namespace, git)),
        Call::Render { files } => match deps.renderer {
            None => Answer::error("no renderer is configured"),
            Some(r) => match deps.slots.try_take() {
                None => answer::<Rendered>(Ok(Rendered {
                    busy: true,
                    ..Rendered::default()
                })),
                Some(_slot) => match r.render(files) {
                    Ok(out) => answer(Ok(out)),
                    Err(e) => Answer::error(e),
                },
            },
        },
    }
}

/// Reconciles `namespace/name` once.
pub fn reconcile(
    deps: &Deps<'_>,
    namespace: &str,
    name: &str,
    now: &str,
    config: &Config,
) -> Result<Outcome, ReconcileError> {
    let input = StepInput {
        namespace: namespace.to_string(),
        name: name.to_string(),
        now: now.to_string(),
        config: Config {
            render: deps.renderer.is_some() && config.render,
            ..config.clone()
        },
        answers: Vec::new(),
    };
    let mut calls = 0usize;
    let mut host = |call: &Call| {
        if calls >= MAX_CALLS {
            return None;
        }
        calls += 1;
        tracing::debug!(?call, "packagerevision call");
        Some(make_call(deps, call))
    };
    match deps.core.reconcile_package_revision(&input, &mut host)? {
        Some(outcome) => {
            for line in &outcome.log {
                tracing::warn!(packagerevision = %format!("{namespace}/{name}"), "{line}");
            }
            Ok(outcome)
        }
        None => Err(ReconcileError::Runaway(format!("{namespace}/{name}"))),
    }
}

/// Renders through the core with a [`crate::reconcile::DraftRenderer`]'s
/// options and function runtime.
pub struct CoreRenderer<'a> {
    /// The core.
    pub core: &'a dyn Core,
    /// Options and runtime.
    pub renderer: &'a crate::reconcile::DraftRenderer,
}

impl Renderer for CoreRenderer<'_> {
    fn render(&self, files: &Files) -> Result<Rendered, String> {
        let mut runtime = self
            .renderer
            .runtime
            .lock()
            .map_err(|_| "the function runtime is unusable".to_string())?;
        // kpt renders the package rooted at the shallowest Kptfile; files
        // outside it are kept, and without a Kptfile nothing runs.
        let Some(root) = pv_core::prc::render::PackageRoot::of(files) else {
            return Ok(Rendered {
                files: files.clone(),
                ..Rendered::default()
            });
        };
        let out = self
            .core
            .render_package(root.inside(files), &self.renderer.options(), &mut **runtime)
            .map_err(|e| e.to_string())?;
        let rendered = root.put_back(files, out.files);
        Ok(Rendered {
            busy: false,
            files: rendered,
            pipeline_error: out.failure.map(|f| f.detail.replace('\n', "; ")),
        })
    }
}
