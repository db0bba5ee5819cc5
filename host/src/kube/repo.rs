//! Porch's Repository controller (`REPO/`, reconciler `repositories`) in
//! Kubernetes mode.
//!
//! The decisions are the core's ([`pv_core::repo::reconcile`]: [`step`]
//! for a reconcile, [`sync_step`] for the background full sync it may ask
//! for); this module makes the calls they ask for:
//! * the Repository: read from the watch cache; finalizer merge patch,
//!   finalizer-removing Update and status server-side apply on the API
//!   server under the field manager `repository-controller`;
//! * the v1alpha2 PackageRevisions of a migrated Repository: a labelled
//!   List, server-side applies under `repository-controller` (forced) and
//!   `repository-controller-seed` (not forced), Deletes;
//! * Git: the Repository's repository resolved as the PackageRevision
//!   controller resolves it ([`super::prc::repo_configs`], under
//!   `--packagerevisions.git-root`), opened with [`RemoteRevisions`]
//!   (a remote one is fetched into its mirror), listed through the
//!   [`PackageRevisionStore`], its branch's commit read with `git2`;
//! * the sync semaphore (`--repositories.max-concurrent-syncs`), and the
//!   cold-start set of the Repositories this process has synced.
//!
//! The deviation from upstream: the Repository cache of Porch
//! (`Cache.OpenRepository` keeping a handle between reconciles) is not
//! kept: each background sync opens the repository anew, and closing one
//! (deletion) has nothing to release.
//!
//! [`step`]: pv_core::repo::reconcile::step
//! [`sync_step`]: pv_core::repo::reconcile::sync_step

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
};
use kube::runtime::controller::Action;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Client, ResourceExt};
use pv_core::api::package_revision::LATEST_REVISION_LABEL;
use pv_core::prc::reconcile::Answer;
use pv_core::repo::discovery::{
    CommitInfo, DiscoveredPackageRevision, PackageRevisionKey, RepositoryKey,
};
use pv_core::repo::reconcile::{Call, Config, Outcome, RepoKey, Step, StepInput, SyncInput};
use pv_core::repo::status::{status_retry_step, PatchOutcome, RetryStep, STATUS_RETRY_JITTER};
use serde_json::Value;
use tokio::runtime::Handle;
use tokio::sync::{watch, Semaphore};

use super::api::Repository;
use super::prc::api_err;
use super::prc::PrcContext;
use super::shard::Gates;
use crate::prc::{CallError, CallResult};
use crate::store::git::GitRepoConfig;
use crate::store::remote::RemoteRevisions;
use crate::store::{PackageRevisionStore, PrFilter};

/// Name of this controller (`--reconcilers`, logs).
pub const REPOSITORIES: &str = "repositories";

/// More calls than any reconcile or sync makes (a sync makes four applies
/// per discovered revision plus one delete per stale object).
pub const MAX_CALLS: usize = 1_000_000;

/// The Repository controller's flags (upstream's names).
#[derive(Debug, Clone, clap::Args)]
pub struct RepoArgs {
    /// Reconciles running at once.
    #[arg(
        id = "repositories.max-concurrent-reconciles",
        long = "repositories.max-concurrent-reconciles",
        default_value_t = 100
    )]
    pub max_concurrent_reconciles: usize,
    /// Full syncs running at once; 0: 100 (upstream's fallback).
    #[arg(
        id = "repositories.max-concurrent-syncs",
        long = "repositories.max-concurrent-syncs",
        default_value_t = 50
    )]
    pub max_concurrent_syncs: usize,
    /// Period of the connectivity check.
    #[arg(
        id = "repositories.health-check-frequency",
        long = "repositories.health-check-frequency",
        default_value = "5m",
        value_parser = humantime::parse_duration
    )]
    pub health_check_frequency: Duration,
    /// Period of the full sync.
    #[arg(
        id = "repositories.full-sync-frequency",
        long = "repositories.full-sync-frequency",
        default_value = "1h",
        value_parser = humantime::parse_duration
    )]
    pub full_sync_frequency: Duration,
    /// Age after which a sync in progress is considered stale.
    #[arg(
        id = "repositories.sync-stale-timeout",
        long = "repositories.sync-stale-timeout",
        default_value = "20m",
        value_parser = humantime::parse_duration
    )]
    pub sync_stale_timeout: Duration,
    /// Full syncs also maintain v1alpha2 PackageRevisions (of Repositories
    /// annotated `porch.kpt.dev/v1alpha2-migration: "true"`).
    #[arg(
        id = "repositories.create-v1alpha2-rpkg",
        long = "repositories.create-v1alpha2-rpkg",
        default_value_t = false,
        num_args = 0..=1,
        default_missing_value = "true",
        action = clap::ArgAction::Set
    )]
    pub create_v1alpha2_rpkg: bool,
}

impl Default for RepoArgs {
    /// The flags' defaults.
    fn default() -> Self {
        RepoArgs {
            max_concurrent_reconciles: 100,
            max_concurrent_syncs: 50,
            health_check_frequency: Duration::from_secs(5 * 60),
            full_sync_frequency: Duration::from_secs(60 * 60),
            sync_stale_timeout: Duration::from_secs(20 * 60),
            create_v1alpha2_rpkg: false,
        }
    }
}

impl RepoArgs {
    /// The reconcile's configuration.
    pub fn config(&self) -> Config {
        let ms = |d: Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        Config {
            cache_available: true,
            health_check_frequency_ms: ms(self.health_check_frequency),
            full_sync_frequency_ms: ms(self.full_sync_frequency),
            sync_stale_timeout_ms: ms(self.sync_stale_timeout),
            create_v1alpha2: self.create_v1alpha2_rpkg,
        }
    }

    /// Slots of the sync semaphore.
    pub fn sync_slots(&self) -> usize {
        if self.max_concurrent_syncs == 0 {
            100
        } else {
            self.max_concurrent_syncs
        }
    }
}

/// What every reconcile of the controller shares.
pub struct RepoContext {
    /// Writes and uncached reads.
    pub client: Client,
    /// The Repositories.
    pub repositories: Store<Repository>,
    /// The PackageRevision controller's context: where Repositories' Git
    /// is found ([`super::prc::repo_configs`]).
    pub git: Arc<PrcContext>,
    /// The sync semaphore.
    pub syncs: Arc<Semaphore>,
    /// The reconcile's configuration.
    pub config: Config,
    /// Which objects this replica may write.
    pub gates: Gates,
    /// Repositories a full sync was started for since the process started
    /// (`<namespace>/<name>`).
    pub synced: Mutex<HashSet<String>>,
    /// Consecutive backoff requeues of each Repository.
    pub backoff: Mutex<HashMap<String, u32>>,
    /// The background syncs started and not yet waited for.
    pub jobs: Mutex<Vec<tokio::task::JoinHandle<Outcome>>>,
}

impl RepoContext {
    /// A context with `slots` sync slots.
    pub fn new(
        client: Client,
        repositories: Store<Repository>,
        git: Arc<PrcContext>,
        slots: usize,
        config: Config,
        leader: watch::Receiver<bool>,
    ) -> Self {
        RepoContext {
            client,
            repositories,
            git,
            syncs: Arc::new(Semaphore::new(slots)),
            config,
            gates: Gates::single(leader),
            synced: Mutex::default(),
            backoff: Mutex::default(),
            jobs: Mutex::default(),
        }
    }

    /// Waits for every background sync started so far; their outcomes.
    pub async fn wait_for_syncs(&self) -> Vec<Outcome> {
        let jobs: Vec<_> = std::mem::take(&mut *lock(&self.jobs));
        let mut out = Vec::new();
        for j in jobs {
            match j.await {
                Ok(o) => out.push(o),
                Err(e) => out.push(Outcome {
                    error: Some(format!("the sync task failed: {e}")),
                    ..Outcome::default()
                }),
            }
        }
        out
    }
}

/// A fraction in [0, 1) from the clock's nanoseconds: enough to spread
/// retries apart (the core has no randomness, and no more is needed).
fn jitter_fraction() -> f64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    f64::from(nanos % 1000) / 1000.0
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A reconcile failed; the controller backs off and retries.
#[derive(Debug, thiserror::Error)]
pub enum RepoError {
    /// The reconcile returned an error.
    #[error("Repository {object}: {message}")]
    Reconcile {
        /// `namespace/name`.
        object: String,
        /// The error.
        message: String,
    },
}

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

fn failed(e: impl std::fmt::Display) -> CallError {
    CallError::Failed(e.to_string())
}

/// The Repository resource, untyped (writes send the core's objects).
fn repository_resource() -> ApiResource {
    ApiResource::erase::<Repository>(&())
}

/// An opened Git repository of one Repository.
struct Opened {
    key: RepoKey,
    store: RemoteRevisions,
    config: GitRepoConfig,
    remote: bool,
}

/// Makes the calls of one reconcile or one background sync, on a blocking
/// thread.
struct Executor<'a> {
    ctx: &'a RepoContext,
    handle: Handle,
    opened: Option<Opened>,
    /// Sync slots taken and not given back by this executor.
    slots_taken: usize,
    /// Open while this replica may write the Repository's objects.
    gate: watch::Receiver<bool>,
}

impl Executor<'_> {
    fn leading(&self, what: &str) -> CallResult<()> {
        super::prc::leading(&self.gate, what)
    }

    fn repo_api(&self, ns: &str) -> Api<DynamicObject> {
        Api::namespaced_with(self.ctx.client.clone(), ns, &repository_resource())
    }

    fn pr_api(&self, ns: &str) -> Api<DynamicObject> {
        Api::namespaced_with(self.ctx.client.clone(), ns, &super::prc::api_resource())
    }

    fn params(manager: &str) -> PatchParams {
        PatchParams {
            field_manager: Some(manager.to_string()),
            ..PatchParams::default()
        }
    }

    fn object<T: serde::Serialize>(object: &T) -> CallResult<DynamicObject> {
        serde_json::to_value(object)
            .and_then(serde_json::from_value)
            .map_err(failed)
    }

    fn key(object: &Value) -> (String, String) {
        let m = &object["metadata"];
        (
            m["namespace"].as_str().unwrap_or_default().to_string(),
            m["name"].as_str().unwrap_or_default().to_string(),
        )
    }

    /// Runs a Repository status apply as upstream's `updateStatus` does:
    /// a 409 Conflict is tried again after the wait
    /// [`status_retry_step`] gives (25 ms, plus up to a tenth of it),
    /// two conflicts in a row give up; any other error is returned at once.
    fn apply_status_retrying<T>(
        &self,
        what: &str,
        mut apply: impl FnMut() -> Result<T, kube::Error>,
    ) -> CallResult<Value> {
        let mut attempt = 1;
        loop {
            let outcome = match apply() {
                Ok(_) => PatchOutcome::Ok,
                Err(kube::Error::Api(s)) if s.code == 409 => PatchOutcome::Conflict,
                Err(e) => return Err(api_err(what, e)),
            };
            match status_retry_step(attempt, outcome) {
                RetryStep::Done => return Ok(Value::Null),
                RetryStep::RetryAfter(wait) => {
                    let wait = Duration::from_nanos(u64::try_from(wait.as_nanos()).unwrap_or(0));
                    let jitter = wait.mul_f64(STATUS_RETRY_JITTER * jitter_fraction());
                    tracing::debug!(%what, attempt, "conflict, trying the status apply again");
                    std::thread::sleep(wait + jitter);
                    attempt += 1;
                }
                RetryStep::Fail(e) => {
                    return Err(CallError::Failed(format!("{what}: {e}")));
                }
            }
        }
    }

    /// The Git configuration of `namespace/name` and whether it is remote.
    fn git_config(
        &self,
        namespace: &str,
        name: &str,
    ) -> CallResult<(Vec<GitRepoConfig>, Vec<crate::store::remote::RemoteConfig>)> {
        let only = [name.to_string()].into();
        let (local, remote) =
            super::prc::repo_configs(&self.ctx.git, &self.handle, namespace, &only)
                .map_err(CallError::Failed)?;
        if local.is_empty() && remote.is_empty() {
            return Err(CallError::Failed(format!(
                "Repository {namespace}/{name}: no Git repository (spec.git.repo) is configured"
            )));
        }
        Ok((local, remote))
    }

    fn open(&self, namespace: &str, name: &str) -> CallResult<Opened> {
        let (local, remote) = self.git_config(namespace, name)?;
        let is_remote = !remote.is_empty();
        let config = match (local.first(), remote.first()) {
            (Some(c), _) => c.clone(),
            (None, Some(r)) => r.repo.clone(),
            (None, None) => unreachable!("checked by git_config"),
        };
        let store = RemoteRevisions::open(local, remote)
            .and_then(RemoteRevisions::require_reachable)
            .map_err(failed)?
            .fenced(self.gate.clone());
        Ok(Opened {
            key: RepoKey {
                namespace: namespace.to_string(),
                name: name.to_string(),
            },
            store,
            config,
            remote: is_remote,
        })
    }

    fn opened(&self, key: &RepoKey) -> CallResult<&Opened> {
        self.opened
            .as_ref()
            .filter(|o| o.key == *key)
            .ok_or_else(|| {
                CallError::Failed(format!(
                    "repository {}/{} is not open",
                    key.namespace, key.name
                ))
            })
    }

    fn branch_commit(config: &GitRepoConfig) -> CallResult<String> {
        let repo = git2::Repository::open(&config.path).map_err(|e| {
            failed(format!(
                "opening {}: {}",
                config.path.display(),
                e.message()
            ))
        })?;
        let reference = format!("refs/heads/{}", config.branch);
        let commit = repo
            .find_reference(&reference)
            .and_then(|r| r.peel_to_commit())
            .map_err(|e| failed(format!("branch {:?}: {}", config.branch, e.message())))?;
        Ok(commit.id().to_string())
    }

    fn list_packages(&self, key: &RepoKey) -> CallResult<Vec<DiscoveredPackageRevision>> {
        let opened = self.opened(key)?;
        let filter = PrFilter {
            repository: Some(key.name.clone()),
            ..PrFilter::default()
        };
        let mut prs = opened.store.list(&key.namespace, &filter)?;
        crate::store::mark_latest(&mut prs);
        let mut out = Vec::with_capacity(prs.len());
        for pr in prs {
            let kptfile = opened
                .store
                .resources(&key.namespace, &pr.metadata.name)
                .ok()
                .and_then(|r| r.spec.resources.and_then(|m| m.get("Kptfile").cloned()))
                .and_then(|text| kptfile_json(&text))
                .unwrap_or(Value::Null);
            let (path, package) = match pr.spec.package_name.rsplit_once('/') {
                Some((p, n)) => (p.to_string(), n.to_string()),
                None => (String::new(), pr.spec.package_name.clone()),
            };
            let lock = |l: &Option<pv_core::api::package_revision::Locator>| {
                l.as_ref()
                    .and_then(|l| serde_json::to_value(l).ok())
                    .unwrap_or(Value::Null)
            };
            out.push(DiscoveredPackageRevision {
                key: PackageRevisionKey {
                    repo_key: RepositoryKey {
                        namespace: key.namespace.clone(),
                        name: key.name.clone(),
                    },
                    path,
                    package,
                    workspace_name: pr.spec.workspace_name.clone(),
                    revision: pr.spec.revision,
                },
                lifecycle: pr.spec.lifecycle,
                kptfile,
                upstream_lock: lock(&pr.status.upstream_lock),
                self_lock: lock(&pr.status.self_lock),
                commit_info: CommitInfo {
                    time: pr.status.publish_timestamp.clone(),
                    author: pr.status.published_by.clone(),
                },
                is_latest_revision: pr
                    .metadata
                    .labels
                    .get(LATEST_REVISION_LABEL)
                    .is_some_and(|v| v == "true"),
            });
        }
        Ok(out)
    }

    fn call(&mut self, call: &Call) -> Answer {
        match call {
            Call::GetRepository { namespace, name } => answer(
                self.ctx
                    .repositories
                    .get(&ObjectRef::new(name).within(namespace))
                    .ok_or_else(|| {
                        CallError::NotFound(format!(
                            "repositories.config.porch.kpt.dev \"{name}\" not found"
                        ))
                    })
                    .and_then(|r| serde_json::to_value(r.as_ref()).map_err(failed)),
            ),
            Call::PatchRepository {
                namespace,
                name,
                patch,
            } => {
                let what = format!("patch Repository {namespace}/{name}");
                answer(self.leading(&what).and_then(|()| {
                    self.handle
                        .block_on(self.repo_api(namespace).patch(
                            name,
                            &Self::params(pv_core::repo::FIELD_MANAGER),
                            &Patch::Merge(patch),
                        ))
                        .map(|_| Value::Null)
                        .map_err(|e| api_err(&what, e))
                }))
            }
            Call::UpdateRepository { object } => {
                let (ns, name) = (&object.metadata.namespace, &object.metadata.name);
                let what = format!("update Repository {ns}/{name}");
                answer(self.leading(&what).and_then(|()| {
                    let obj = Self::object(object)?;
                    let params = PostParams {
                        field_manager: Some(pv_core::repo::FIELD_MANAGER.to_string()),
                        ..PostParams::default()
                    };
                    self.handle
                        .block_on(self.repo_api(ns).replace(name, &params, &obj))
                        .map(|_| Value::Null)
                        .map_err(|e| api_err(&what, e))
                }))
            }
            Call::ApplyRepositoryStatus {
                field_manager,
                object,
            } => {
                let (ns, name) = (&object.metadata.namespace, &object.metadata.name);
                let what = format!("apply status of Repository {ns}/{name} as {field_manager}");
                answer(self.leading(&what).and_then(|()| {
                    let params = PatchParams::apply(field_manager).force();
                    self.apply_status_retrying(&what, || {
                        self.handle.block_on(self.repo_api(ns).patch_status(
                            name,
                            &params,
                            &Patch::Apply(object),
                        ))
                    })
                }))
            }
            Call::ListRepositories => answer(
                self.ctx
                    .repositories
                    .state()
                    .iter()
                    .map(|r| serde_json::to_value(r.as_ref()).map_err(failed))
                    .collect::<CallResult<Vec<Value>>>(),
            ),
            Call::CloseRepository { repository, .. } => {
                // Nothing is kept open between reconciles (see the module
                // documentation); the mirror of a remote repository is a
                // cache that a Repository of the same name reuses.
                let key = (&repository.metadata.namespace, &repository.metadata.name);
                if self
                    .opened
                    .as_ref()
                    .is_some_and(|o| (&o.key.namespace, &o.key.name) == key)
                {
                    self.opened = None;
                }
                Answer::ok(Value::Null)
            }
            Call::CheckRepositoryConnectivity { repository } => {
                let (ns, name) = (&repository.metadata.namespace, &repository.metadata.name);
                answer(
                    self.open(ns, name)
                        .and_then(|o| Self::branch_commit(&o.config))
                        .map(|_| Value::Null),
                )
            }
            Call::AcquireSyncSlot => match self.ctx.syncs.try_acquire() {
                Ok(permit) => {
                    permit.forget();
                    self.slots_taken += 1;
                    Answer::ok(Value::Bool(true))
                }
                Err(_) => Answer::ok(Value::Bool(false)),
            },
            Call::ReleaseSyncSlot => {
                self.release();
                Answer::ok(Value::Null)
            }
            Call::OpenRepository { repository } => {
                let (ns, name) = (&repository.metadata.namespace, &repository.metadata.name);
                match self.open(ns, name) {
                    Ok(o) => {
                        self.opened = Some(o);
                        Answer::ok(Value::Null)
                    }
                    Err(e) => answer::<Value>(Err(e)),
                }
            }
            Call::Refresh { repository } => answer(self.opened(repository).and_then(|o| {
                if o.remote {
                    o.store
                        .sync_repository(&o.key.namespace, &o.key.name)
                        .map_err(failed)?;
                }
                Ok(Value::Null)
            })),
            Call::ListPackages { repository } => answer(self.list_packages(repository)),
            Call::BranchCommitHash { repository } => answer(
                self.opened(repository)
                    .and_then(|o| Self::branch_commit(&o.config)),
            ),
            Call::ListPackageRevisions {
                namespace,
                repository,
            } => {
                let what = format!("list PackageRevisions of Repository {namespace}/{repository}");
                let params = ListParams::default()
                    .labels(&format!("{}={repository}", pv_core::repo::REPOSITORY_LABEL));
                answer(
                    self.handle
                        .block_on(self.pr_api(namespace).list(&params))
                        .map_err(|e| api_err(&what, e))
                        .and_then(|l| {
                            l.items
                                .iter()
                                .map(|o| serde_json::to_value(o).map_err(failed))
                                .collect::<CallResult<Vec<Value>>>()
                        }),
                )
            }
            Call::ApplyPackageRevision {
                field_manager,
                force,
                object,
            } => {
                let (ns, name) = Self::key(object);
                let what = format!("apply PackageRevision {ns}/{name} as {field_manager}");
                answer(self.leading(&what).and_then(|()| {
                    let mut params = PatchParams::apply(field_manager);
                    params.force = *force;
                    self.handle
                        .block_on(
                            self.pr_api(&ns)
                                .patch(&name, &params, &Patch::Apply(object)),
                        )
                        .map(|_| Value::Null)
                        .map_err(|e| api_err(&what, e))
                }))
            }
            Call::ApplyPackageRevisionStatus {
                field_manager,
                force,
                object,
            } => {
                let (ns, name) = Self::key(object);
                let what =
                    format!("apply status of PackageRevision {ns}/{name} as {field_manager}");
                answer(self.leading(&what).and_then(|()| {
                    let mut params = PatchParams::apply(field_manager);
                    params.force = *force;
                    self.handle
                        .block_on(self.pr_api(&ns).patch_status(
                            &name,
                            &params,
                            &Patch::Apply(object),
                        ))
                        .map(|_| Value::Null)
                        .map_err(|e| api_err(&what, e))
                }))
            }
            Call::DeletePackageRevision { namespace, name } => {
                let what = format!("delete PackageRevision {namespace}/{name}");
                answer(self.leading(&what).and_then(|()| {
                    self.handle
                        .block_on(
                            self.pr_api(namespace)
                                .delete(name, &DeleteParams::default()),
                        )
                        .map(|_| Value::Null)
                        .map_err(|e| api_err(&what, e))
                }))
            }
        }
    }

    fn release(&mut self) {
        if self.slots_taken > 0 {
            self.slots_taken -= 1;
            self.ctx.syncs.add_permits(1);
        }
    }
}

impl Drop for Executor<'_> {
    /// A slot taken and neither handed to a background sync nor given back
    /// (a reconcile or sync that ended early) is given back.
    fn drop(&mut self) {
        while self.slots_taken > 0 {
            self.release();
        }
    }
}

/// The root Kptfile's YAML as JSON.
fn kptfile_json(text: &str) -> Option<Value> {
    let docs = pv_core::yaml::parse_stream(text).ok()?;
    pv_core::yaml::to_json(docs.first()?).ok()
}

fn log_outcome(object: &str, outcome: &Outcome) {
    for line in &outcome.log {
        tracing::warn!(repository = %object, "{line}");
    }
}

/// Runs `step` over an executor until it is done.
fn drive(
    exec: &mut Executor<'_>,
    object: &str,
    mut step: impl FnMut(Option<Answer>) -> Step,
) -> Result<Outcome, String> {
    let (mut calls, mut last) = (0, None);
    loop {
        match step(last.take()) {
            Step::Done { outcome } => {
                log_outcome(object, &outcome);
                return Ok(outcome);
            }
            Step::Call { call } => {
                if calls >= MAX_CALLS {
                    return Err(format!("made more than {MAX_CALLS} calls"));
                }
                calls += 1;
                tracing::debug!(?call, "repository call");
                last = Some(exec.call(&call));
            }
        }
    }
}

/// One reconcile of `namespace/name` (on a blocking thread); a sync slot
/// it took is handed to the outcome's background sync
/// ([`Outcome::sync_job`], to start with [`sync_once`]).
pub fn reconcile_once(
    ctx: &RepoContext,
    handle: Handle,
    namespace: &str,
    name: &str,
    now: &str,
) -> Result<Outcome, String> {
    let object = format!("{namespace}/{name}");
    let synced_since_start = lock(&ctx.synced).contains(&object);
    let mut exec = Executor {
        ctx,
        handle,
        opened: None,
        slots_taken: 0,
        gate: ctx.gates.gate(namespace, name),
    };
    let mut input = StepInput {
        namespace: namespace.to_string(),
        name: name.to_string(),
        now: now.to_string(),
        config: ctx.config.clone(),
        synced_since_start,
        answers: Vec::new(),
    };
    let outcome = drive(&mut exec, &object, |answer| {
        input.answers.extend(answer);
        pv_core::repo::reconcile::step(&input)
    })?;
    if outcome.sync_job.is_some() && exec.slots_taken > 0 {
        // The slot is the background sync's, given back by its last call.
        exec.slots_taken -= 1;
    }
    Ok(outcome)
}

/// One background full sync of `repository` (on a blocking thread). The
/// sync slot taken for it is given back at the end, whatever happens.
pub fn sync_once(
    ctx: &RepoContext,
    handle: Handle,
    repository: pv_core::api::repository::Repository,
    now: &str,
) -> Outcome {
    let object = pv_core::repo::cold_start_key(&repository);
    let gate = ctx
        .gates
        .gate(&repository.metadata.namespace, &repository.metadata.name);
    let mut exec = Executor {
        ctx,
        handle,
        opened: None,
        slots_taken: 1,
        gate,
    };
    let mut input = SyncInput {
        repository,
        now: now.to_string(),
        config: ctx.config.clone(),
        answers: Vec::new(),
    };
    let outcome = drive(&mut exec, &object, |answer| {
        input.answers.extend(answer);
        pv_core::repo::reconcile::sync_step(&input)
    });
    match outcome {
        Ok(o) => {
            if let Some(e) = &o.error {
                tracing::warn!(repository = %object, error = %e, "full sync failed");
            } else {
                tracing::info!(repository = %object, "full sync done");
            }
            o
        }
        Err(message) => {
            tracing::warn!(repository = %object, error = %message, "full sync failed");
            Outcome {
                error: Some(message),
                ..Outcome::default()
            }
        }
    }
}

/// Starts the background sync of `repository`.
fn spawn_sync(ctx: &Arc<RepoContext>, repository: pv_core::api::repository::Repository) {
    lock(&ctx.synced).insert(pv_core::repo::cold_start_key(&repository));
    let c = ctx.clone();
    let handle = Handle::current();
    let job = tokio::task::spawn_blocking(move || {
        let now = crate::clock::now();
        sync_once(&c, handle, repository, &now)
    });
    let mut jobs = lock(&ctx.jobs);
    jobs.retain(|j| !j.is_finished());
    jobs.push(job);
}

/// The backoff of `Requeue: true` (controller-runtime's per-item
/// exponential rate limiter: 5 ms doubled per retry, at most 1000 s).
fn backoff(ctx: &RepoContext, object: &str) -> Duration {
    let mut b = lock(&ctx.backoff);
    let n = b.entry(object.to_string()).or_insert(0);
    let d = Duration::from_millis(5)
        .saturating_mul(1u32 << (*n).min(20))
        .min(Duration::from_secs(1000));
    *n = n.saturating_add(1);
    d
}

/// Reconciles one Repository.
#[tracing::instrument(skip_all, fields(repository = %format!("{}/{}", obj.namespace().unwrap_or_default(), obj.name_any()), shard = ctx.gates.shard_of(&obj.namespace().unwrap_or_default(), &obj.name_any())))]
pub async fn reconcile(obj: Arc<Repository>, ctx: Arc<RepoContext>) -> Result<Action, RepoError> {
    let (ns, name) = (obj.namespace().unwrap_or_default(), obj.name_any());
    let object = format!("{ns}/{name}");
    if !ctx.gates.open(&ns, &name) {
        return Ok(if ctx.gates.is_sharded() {
            Action::await_change()
        } else {
            Action::requeue(Duration::from_secs(5))
        });
    }
    let handle = Handle::current();
    let c = ctx.clone();
    let (n, nm) = (ns.clone(), name.clone());
    let outcome = tokio::task::spawn_blocking(move || {
        reconcile_once(&c, handle, &n, &nm, &crate::clock::now())
    })
    .await
    .map_err(|e| RepoError::Reconcile {
        object: object.clone(),
        message: e.to_string(),
    })?
    .map_err(|message| RepoError::Reconcile {
        object: object.clone(),
        message,
    })?;
    if let Some(repository) = outcome.sync_job.clone() {
        spawn_sync(&ctx, repository);
    }
    if let Some(message) = outcome.error {
        return Err(RepoError::Reconcile { object, message });
    }
    if outcome.requeue && outcome.requeue_after_ms <= 0 {
        return Ok(Action::requeue(backoff(&ctx, &object)));
    }
    lock(&ctx.backoff).remove(&object);
    Ok(if outcome.requeue_after_ms > 0 {
        Action::requeue(Duration::from_millis(
            u64::try_from(outcome.requeue_after_ms).unwrap_or(u64::MAX),
        ))
    } else {
        Action::await_change()
    })
}

/// The backoff of a failed reconcile.
pub fn error_policy(obj: Arc<Repository>, e: &RepoError, ctx: Arc<RepoContext>) -> Action {
    tracing::warn!(error = %e, "repository reconcile failed");
    let object = format!("{}/{}", obj.namespace().unwrap_or_default(), obj.name_any());
    Action::requeue(backoff(&ctx, &object).max(Duration::from_millis(500)))
}

/// What [`wakes`] compares of a Repository: its generation and whether it
/// is marked for deletion.
pub type Seen = (Option<i64>, bool);

/// [`Seen`] of `repo`.
pub fn seen(repo: &Repository) -> Seen {
    (
        repo.metadata.generation,
        repo.metadata.deletion_timestamp.is_some(),
    )
}

/// Whether an event of `new` (last seen as `old`, `None`: never) should
/// wake the controller: upstream's predicates (create and delete always;
/// an update only with a new generation). A deletion mark does not change
/// the generation of every Repository with finalizers but is an update the
/// controller must see, so a new deletion mark wakes it too.
pub fn wakes(old: Option<Seen>, new: &Repository) -> bool {
    old != Some(seen(new))
}
