//! The reconcile loops: one [`kube::runtime::Controller`] per reconciler,
//! fed by the shared reflectors of [`super::run`], their triggers, and the
//! error policy (exponential backoff per object).
//!
//! A reconcile converts the cached object to the core's type and runs the
//! synchronous reconciler ([`crate::reconcile`]) on a blocking thread over a
//! [`KubeStore`]. Validation errors are reported in the status (`Stalled`)
//! and not retried; other errors are retried with backoff.
//!
//! With [`Context::dry_run`] (`controller --dry-run`) a reconcile reads as
//! usual and writes into a [`Planned`] overlay: each write it would make
//! goes to the dry run's sink (the log), a set's plan is followed through
//! the variants it would create or change, and nothing reaches the API
//! server or Git.

use std::collections::BTreeSet;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use kube::{Client, ResourceExt};
use tokio::runtime::Handle;
use tokio::sync::watch;

use super::api::{KubeResource, PackageRevision, PackageVariant, PackageVariantSet};
use super::cache::Caches;
use super::metrics::{ErrorLabels, Metrics};
use super::recent::Expectations;
use super::shard::Gates;
use super::store::KubeStore;
use crate::engine_api::Core;
use crate::reconcile::{
    approval, package_variant, package_variant_set, Ctx, Event, ReconcileError,
};
use crate::store::planned::{Planned, PlannedWrite};
use crate::store::StoreError;
use pv_core::approval::POLICY as APPROVAL_POLICY;

/// Name of the PackageVariant reconciler (flag value and metric label).
pub const PACKAGE_VARIANTS: &str = "packagevariants";
/// Name of the PackageVariantSet reconciler (flag value and metric label).
pub const PACKAGE_VARIANT_SETS: &str = "packagevariantsets";
/// Metric label of the approval of revisions annotated by hand (it runs
/// with the PackageVariant reconciler).
pub const APPROVALS: &str = "approvals";

/// How long a replica that is not the leader waits before looking again.
pub const NOT_LEADER_RETRY: Duration = Duration::from_secs(10);
/// How soon a variant whose draft waits for its approval (a delay, a gate)
/// is looked at again; Nephio's approval controller's default.
pub const APPROVAL_RETRY: Duration = Duration::from_secs(10);
/// First retry delay after an error (doubled per consecutive failure).
pub const BACKOFF_BASE: Duration = Duration::from_secs(5);
/// Longest retry delay.
pub const BACKOFF_MAX: Duration = Duration::from_secs(300);

/// A reconcile failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The reconciler failed (a store call or the core).
    #[error("{object}: {source}")]
    Reconcile {
        /// `namespace/name`.
        object: String,
        /// What failed.
        #[source]
        source: ReconcileError,
    },
    /// The cached object does not convert to the core's type.
    #[error("{object}: reading the object: {source}")]
    Convert {
        /// `namespace/name`.
        object: String,
        /// The conversion error.
        #[source]
        source: serde_json::Error,
    },
    /// The blocking reconcile task did not complete.
    #[error("{object}: reconcile task: {source}")]
    Task {
        /// `namespace/name`.
        object: String,
        /// Why.
        #[source]
        source: tokio::task::JoinError,
    },
}

impl Error {
    /// A short label for the `reason` of the error metric.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Error::Reconcile { source, .. } => match source {
                ReconcileError::Store(StoreError::NotFound { .. }) => "not_found",
                ReconcileError::Store(StoreError::Conflict(_)) => "conflict",
                ReconcileError::Store(StoreError::Invalid(_)) => "invalid",
                ReconcileError::Store(StoreError::NotLeader { .. }) => "not_leader",
                ReconcileError::Store(_) => "api",
                ReconcileError::Core(_) => "core",
                ReconcileError::Refused(_) => "refused",
                ReconcileError::Waiting(_) => "waiting",
            },
            Error::Convert { .. } => "convert",
            Error::Task { .. } => "task",
        }
    }
}

/// What every reconcile shares.
pub struct Context {
    /// The API client (writes).
    pub client: Client,
    /// The caches (reads).
    pub caches: Caches,
    /// The core that decides and edits packages.
    pub core: Arc<dyn Core + Send + Sync>,
    /// Metrics.
    pub metrics: Arc<Metrics>,
    /// Which objects this replica may write: the leader Lease's one gate
    /// (always open without election), or one per shard.
    pub gates: Gates,
    /// Objects written that the caches may not show yet, read over them
    /// by every reconcile.
    pub recent: Expectations,
    /// With `--porch-api v1alpha2`: the PackageRevision controller's
    /// context, whose v1alpha2 cache and Repositories' Git the variants
    /// read and write (`None`: the aggregated v1alpha1 API).
    pub v1alpha2: Option<Arc<super::prc::PrcContext>>,
    /// `controller --dry-run`: writes are planned, not made (`None`:
    /// they are made).
    pub dry_run: Option<DryRun>,
    failures: Mutex<HashMap<(String, String), u32>>,
}

/// Where a dry run's planned writes go, with the object whose reconcile
/// planned them.
pub type PlanSink = dyn Fn(&str, &PlannedWrite) + Send + Sync;

/// `controller --dry-run`: each reconcile's writes are planned, not made,
/// and handed to a sink.
#[derive(Clone)]
pub struct DryRun {
    sink: Arc<PlanSink>,
}

impl std::fmt::Debug for DryRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DryRun").finish_non_exhaustive()
    }
}

impl DryRun {
    /// Planned writes logged (`would write`, with the diff of what they
    /// change on a line of its own).
    pub fn logging() -> Self {
        DryRun::to(|reconcile, w| {
            tracing::info!(
                reconcile = %reconcile,
                object = %w.object,
                action = %w.action,
                detail = %w.detail,
                "would write"
            );
            if !w.diff.is_empty() {
                tracing::info!(object = %w.object, "would change:\n{}", w.diff.trim_end());
            }
        })
    }

    /// Planned writes handed to `sink`.
    pub fn to(sink: impl Fn(&str, &PlannedWrite) + Send + Sync + 'static) -> Self {
        DryRun {
            sink: Arc::new(sink),
        }
    }
}

impl Context {
    /// A context; `leader` says whether this replica may write.
    pub fn new(
        client: Client,
        caches: Caches,
        core: Arc<dyn Core + Send + Sync>,
        metrics: Arc<Metrics>,
        leader: watch::Receiver<bool>,
    ) -> Self {
        Context {
            client,
            caches,
            core,
            metrics,
            gates: Gates::single(leader),
            recent: Expectations::default(),
            v1alpha2: None,
            dry_run: None,
            failures: Mutex::default(),
        }
    }

    fn failures(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), u32>> {
        self.failures.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn queue_depth(&self, controller: &str) {
        let mut by_shard: HashMap<u32, i64> = HashMap::new();
        let n = {
            let failures = self.failures();
            let waiting: Vec<&String> = failures
                .keys()
                .filter(|(c, _)| c == controller)
                .map(|(_, o)| o)
                .collect();
            for object in &waiting {
                let (ns, name) = object.split_once('/').unwrap_or(("", object));
                *by_shard.entry(self.gates.shard_of(ns, name)).or_default() += 1;
            }
            waiting.len()
        };
        self.metrics
            .queue_depth
            .get_or_create(&Metrics::labels(controller))
            .set(i64::try_from(n).unwrap_or(i64::MAX));
        for shard in 0..self.gates.shards() {
            let depth = by_shard.get(&shard).copied().unwrap_or(0);
            let labels = super::metrics::ShardLabels {
                controller: controller.to_string(),
                shard,
            };
            // Shards never waited on are left out rather than set to 0.
            if depth > 0 || self.metrics.shard_queue_depth.get(&labels).is_some() {
                self.metrics
                    .shard_queue_depth
                    .get_or_create(&labels)
                    .set(depth);
            }
        }
    }

    /// The delay before the next retry of `object` (and counts the
    /// failure).
    pub fn backoff(&self, controller: &str, object: &str) -> Duration {
        let n = {
            let mut f = self.failures();
            let n = f
                .entry((controller.to_string(), object.to_string()))
                .or_insert(0);
            *n = n.saturating_add(1);
            *n
        };
        self.queue_depth(controller);
        let factor = 2u32.saturating_pow(n.saturating_sub(1).min(16));
        BACKOFF_BASE.saturating_mul(factor).min(BACKOFF_MAX)
    }

    fn succeeded(&self, controller: &str, object: &str) {
        let removed = self
            .failures()
            .remove(&(controller.to_string(), object.to_string()))
            .is_some();
        if removed {
            self.queue_depth(controller);
        }
    }
}

/// RFC 3339 now, in seconds (as `metav1.Time` is written).
pub fn now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

fn key<K: ResourceExt>(obj: &K) -> String {
    format!("{}/{}", obj.namespace().unwrap_or_default(), obj.name_any())
}

fn log_events(events: &[Event]) {
    for e in events {
        tracing::info!(object = %e.object, action = %e.action, detail = %e.detail, "write");
    }
}

/// The Repositories a variant's reconcile reads in v1alpha2 mode: its
/// upstream's and downstream's, and those holding revisions it owns.
fn variant_scope(ctx: &Context, pv: &pv_core::api::PackageVariant) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    if let Some(u) = &pv.spec.upstream {
        names.insert(u.repo.clone());
    }
    if let Some(d) = &pv.spec.downstream {
        names.insert(d.repo.clone());
    }
    if let Some(prc) = &ctx.v1alpha2 {
        for (ns, repository, _) in prc.index.packages_owned_by(&pv.metadata.uid) {
            if ns == pv.metadata.namespace {
                names.insert(repository);
            }
        }
    }
    names
}

/// What a reconcile reconciles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Variant,
    Set,
    Revision,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Variant => "PackageVariant",
            Kind::Set => "PackageVariantSet",
            Kind::Revision => "PackageRevision",
        }
    }
}

/// Runs `f` over `rctx`, or, in a dry run, over a [`Planned`] overlay of
/// it: a set's plan is then followed through the variants it would create
/// or change (each reconciled on the same overlay, as the variant
/// controller would reconcile them next), the planned writes go to the
/// dry run's sink, and an error ends the plan there (it is logged, not
/// retried: nothing changed that a retry would see).
fn reconcile_in<F>(
    rctx: &Ctx<'_>,
    dry_run: Option<&DryRun>,
    kind: Kind,
    subject: &str,
    f: F,
    events: &mut Vec<Event>,
) -> Result<(), ReconcileError>
where
    F: FnOnce(&Ctx<'_>, &mut Vec<Event>) -> Result<(), ReconcileError>,
{
    let Some(dry_run) = dry_run else {
        return f(rctx, events);
    };
    let planned = Planned::new(rctx.revisions, rctx.objects);
    let pctx = Ctx {
        revisions: &planned,
        objects: &planned,
        core: rctx.core,
        now: rctx.now.clone(),
        renderer: rctx.renderer,
        jobs: 1,
    };
    let mut result = f(&pctx, events).map_err(|e| (subject.to_string(), e));
    if kind == Kind::Set && result.is_ok() {
        for pv in planned.variants_written() {
            if let Err(e) = package_variant::reconcile(&pctx, &pv, events) {
                let child = format!(
                    "PackageVariant {}/{}",
                    pv.metadata.namespace, pv.metadata.name
                );
                result = Err((child, e));
                break;
            }
        }
    }
    for w in planned.writes() {
        (dry_run.sink)(subject, &w);
    }
    if let Err((object, e)) = result {
        tracing::warn!(reconcile = %subject, object = %object, error = %e, "a dry run's plan stops here");
    }
    Ok(())
}

/// Runs `f` (a synchronous reconcile over a [`KubeStore`]) on a blocking
/// thread; in v1alpha2 mode it opens the Git repositories named in
/// `scope` (a reconcile's cost does not grow with the namespace's
/// Repositories).
async fn run_blocking<F>(
    ctx: &Arc<Context>,
    kind: Kind,
    object: &str,
    scope: BTreeSet<String>,
    f: F,
) -> Result<Vec<Event>, Error>
where
    F: FnOnce(&Ctx<'_>, &mut Vec<Event>) -> Result<(), ReconcileError> + Send + 'static,
{
    let handle = Handle::current();
    let dry_run = ctx.dry_run.clone();
    // A dry run's stores can write nothing: its writes go to the overlay,
    // and the gate under it stays shut.
    let gate = match dry_run {
        Some(_) => watch::channel(false).1,
        None => {
            let (ns, name) = object.split_once('/').unwrap_or(("", object));
            ctx.gates.gate(ns, name)
        }
    };
    let subject = format!("{} {object}", kind.name());
    let (client, caches, core) = (ctx.client.clone(), ctx.caches.clone(), ctx.core.clone());
    let recent = ctx.recent.clone();
    let v1alpha2 = ctx.v1alpha2.clone();
    let namespace = object.split('/').next().unwrap_or_default().to_string();
    let (result, events) = tokio::task::spawn_blocking(move || {
        let v2_recent = recent.v1alpha2.clone();
        let store =
            KubeStore::sharing(client, caches, handle.clone(), recent).leading(gate.clone());
        let mut events = Vec::new();
        let Some(prc) = v1alpha2 else {
            let rctx = Ctx {
                revisions: &store,
                objects: &store,
                core: core.as_ref(),
                now: now(),
                renderer: None,
                jobs: 1,
            };
            let result = reconcile_in(&rctx, dry_run.as_ref(), kind, &subject, f, &mut events);
            return (result, events);
        };
        // v1alpha2: revisions are the v1alpha2 objects, content the
        // Repositories' Git; the PackageRevision controller renders.
        let git = match super::prc::repo_configs(&prc, &handle, &namespace, &scope).and_then(
            |(local, remote)| {
                let options = crate::store::remote::RemoteOptions {
                    reuse_fetch_for: prc.git_fetch_interval,
                    ..Default::default()
                };
                crate::store::remote::RemoteRevisions::open_with(local, remote, options)
                    .map(|git| git.fenced(gate.clone()))
                    .map_err(|e| e.to_string())
            },
        ) {
            Ok(git) => git,
            Err(message) => {
                let e = ReconcileError::Store(StoreError::Data {
                    context: format!("the Git repositories of namespace {namespace}"),
                    message,
                });
                return (Err(e), events);
            }
        };
        let objects = super::v1alpha2::KubeV2Objects::new(&prc, &v2_recent, handle, gate);
        let revisions = crate::store::v1alpha2::V2Revisions::new(&objects, &git, None);
        let rctx = Ctx {
            revisions: &revisions,
            objects: &store,
            core: core.as_ref(),
            now: now(),
            // What the controller's render will make of the mutated files
            // decides whether they changed (and a failing pipeline is
            // reported before anything is written).
            renderer: prc.renderer.as_deref(),
            jobs: 1,
        };
        let result = reconcile_in(&rctx, dry_run.as_ref(), kind, &subject, f, &mut events);
        (result, events)
    })
    .await
    .map_err(|source| Error::Task {
        object: object.to_string(),
        source,
    })?;
    ctx.metrics.record_fuel(ctx.core.fuel_used());
    if ctx.dry_run.is_none() {
        log_events(&events);
    }
    result.map_err(|source| Error::Reconcile {
        object: object.to_string(),
        source,
    })?;
    Ok(events)
}

/// Whether this replica may reconcile `obj` now; when not, the action
/// (another replica owns it, or this one waits for the leader Lease).
fn not_writable<K: ResourceExt>(ctx: &Context, controller: &str, obj: &K) -> Option<Action> {
    let (ns, name) = (obj.namespace().unwrap_or_default(), obj.name_any());
    if ctx.gates.open(&ns, &name) {
        ctx.metrics
            .shard_reconcile(controller, ctx.gates.shard_of(&ns, &name));
        return None;
    }
    ctx.metrics
        .not_leader
        .get_or_create(&Metrics::labels(controller))
        .inc();
    Some(if ctx.gates.is_sharded() {
        // The replica that takes the shard reconciles everything in it.
        Action::await_change()
    } else {
        Action::requeue(NOT_LEADER_RETRY)
    })
}

/// Reconciles one PackageVariant.
#[tracing::instrument(skip_all, fields(pv = %key(pv.as_ref()), shard = ctx.gates.shard_of(&pv.namespace().unwrap_or_default(), &pv.name_any())))]
pub async fn reconcile_package_variant(
    pv: Arc<PackageVariant>,
    ctx: Arc<Context>,
) -> Result<Action, Error> {
    let object = key(pv.as_ref());
    let labels = Metrics::labels(PACKAGE_VARIANTS);
    if let Some(action) = not_writable(&ctx, PACKAGE_VARIANTS, pv.as_ref()) {
        return Ok(action);
    }
    ctx.metrics.reconciles.get_or_create(&labels).inc();
    // The variant as this controller last wrote it while the cache has not
    // caught up (a revision event can trigger the next reconcile before
    // the watch brings the finalizer the last one added).
    let (ns, name) = (pv.namespace().unwrap_or_default(), pv.name_any());
    let Some(pv) = ctx.recent.variants.read_over(&ns, &name, Some(pv)) else {
        return Ok(Action::await_change());
    };
    let core_pv = pv.to_core().map_err(|source| Error::Convert {
        object: object.clone(),
        source,
    })?;
    // A variant that asks for an approval policy has its drafts proposed
    // and approved here, as Nephio's approval controller would.
    let asks_approval = core_pv.spec.annotations.contains_key(APPROVAL_POLICY);
    let waiting = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let waits = waiting.clone();
    let scope = variant_scope(&ctx, &core_pv);
    run_blocking(&ctx, Kind::Variant, &object, scope, move |rctx, events| {
        package_variant::reconcile(rctx, &core_pv, events)?;
        if asks_approval {
            // The variant as this reconcile left it (its Ready condition).
            let (ns, name) = (&core_pv.metadata.namespace, &core_pv.metadata.name);
            let now = rctx
                .objects
                .list_package_variants(Some(ns))?
                .into_iter()
                .find(|p| &p.metadata.name == name)
                .unwrap_or(core_pv);
            let mut refused = Vec::new();
            let wait = approval::approve(rctx, std::slice::from_ref(&now), events, &mut refused)?;
            waits.store(wait, std::sync::atomic::Ordering::Relaxed);
            for e in refused {
                tracing::warn!(object = %e.object, detail = %e.detail, "not approved");
            }
        }
        Ok(())
    })
    .await?;
    ctx.succeeded(PACKAGE_VARIANTS, &object);
    if waiting.load(std::sync::atomic::Ordering::Relaxed) && ctx.dry_run.is_none() {
        // A delay or a gate is not an event: look again.
        return Ok(Action::requeue(APPROVAL_RETRY));
    }
    // Every input of a reconcile is watched: wait for the next change (a
    // validation error, reported as Stalled, is not retried either).
    Ok(Action::await_change())
}

/// Reconciles one PackageVariantSet.
#[tracing::instrument(skip_all, fields(pvs = %key(pvs.as_ref()), shard = ctx.gates.shard_of(&pvs.namespace().unwrap_or_default(), &pvs.name_any())))]
pub async fn reconcile_package_variant_set(
    pvs: Arc<PackageVariantSet>,
    ctx: Arc<Context>,
) -> Result<Action, Error> {
    let object = key(pvs.as_ref());
    let labels = Metrics::labels(PACKAGE_VARIANT_SETS);
    if let Some(action) = not_writable(&ctx, PACKAGE_VARIANT_SETS, pvs.as_ref()) {
        return Ok(action);
    }
    ctx.metrics.reconciles.get_or_create(&labels).inc();
    let core_pvs = pvs.to_core().map_err(|source| Error::Convert {
        object: object.clone(),
        source,
    })?;
    // A set reads objects (its children, their downstream revisions) and
    // no package content: of Git, at most its upstream's repository.
    let scope = core_pvs
        .spec
        .upstream
        .iter()
        .map(|u| u.repo.clone())
        .collect();
    run_blocking(&ctx, Kind::Set, &object, scope, move |rctx, events| {
        package_variant_set::reconcile(rctx, &core_pvs, events)
    })
    .await?;
    ctx.succeeded(PACKAGE_VARIANT_SETS, &object);
    Ok(Action::await_change())
}

/// Whether a PackageRevision (its annotations and `spec.lifecycle`) is one
/// the approval policy may move: it carries the policy annotation and is
/// not published. Its events go to the approval of revisions annotated by
/// hand.
pub fn asks_approval(
    annotations: &std::collections::BTreeMap<String, String>,
    lifecycle: pv_core::api::package_revision::Lifecycle,
) -> bool {
    use pv_core::api::package_revision::Lifecycle;
    annotations.contains_key(APPROVAL_POLICY)
        && !matches!(
            lifecycle,
            Lifecycle::Published | Lifecycle::DeletionProposed
        )
}

/// Proposes and approves, as Nephio's approval controller does, the
/// revisions of `pr`'s package that carry an approval policy themselves
/// (annotated by hand, `kubectl annotate`), on Porch's v1alpha1 API.
/// Revisions owned by a variant whose `spec.annotations` asks for the
/// policy are left to that variant's reconcile.
pub async fn reconcile_approval(
    pr: Arc<PackageRevision>,
    ctx: Arc<Context>,
) -> Result<Action, Error> {
    let package = (pr.spec.repository.clone(), pr.spec.package_name.clone());
    approve_annotated(pr.as_ref(), package, ctx).await
}

/// [`reconcile_approval`] on v1alpha2 PackageRevisions.
pub async fn reconcile_approval_v1alpha2(
    obj: Arc<kube::api::DynamicObject>,
    ctx: Arc<Context>,
) -> Result<Action, Error> {
    let text = |f: &str| obj.data["spec"][f].as_str().unwrap_or_default().to_string();
    let package = (text("repository"), text("packageName"));
    approve_annotated(obj.as_ref(), package, ctx).await
}

async fn approve_annotated<K: ResourceExt>(
    obj: &K,
    (repository, package): (String, String),
    ctx: Arc<Context>,
) -> Result<Action, Error> {
    if let Some(action) = not_writable(&ctx, APPROVALS, obj) {
        return Ok(action);
    }
    ctx.metrics
        .reconciles
        .get_or_create(&Metrics::labels(APPROVALS))
        .inc();
    let object = key(obj);
    let ns = obj.namespace().unwrap_or_default();
    let caches = ctx.caches.clone();
    let waiting = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let waits = waiting.clone();
    let scope = BTreeSet::from([repository.clone()]);
    run_blocking(&ctx, Kind::Revision, &object, scope, move |rctx, events| {
        let owner = |ns: &str, name: &str| {
            caches
                .package_variants
                .get(&ObjectRef::new(name).within(ns))
                .and_then(|pv| pv.to_core().ok())
        };
        let handles = |pr: &pv_core::api::PackageRevision| {
            pv_core::approval::owner_variant(pr)
                .and_then(|n| owner(&pr.metadata.namespace, n))
                .is_none_or(|pv| !pv.spec.annotations.contains_key(APPROVAL_POLICY))
        };
        let package = approval::Package {
            namespace: &ns,
            repository: &repository,
            name: &package,
        };
        let mut refused = Vec::new();
        let wait =
            approval::approve_package(rctx, package, &owner, &handles, events, &mut refused)?;
        waits.store(wait, std::sync::atomic::Ordering::Relaxed);
        for e in refused {
            tracing::warn!(object = %e.object, detail = %e.detail, "not approved");
        }
        Ok(())
    })
    .await?;
    ctx.succeeded(APPROVALS, &object);
    if waiting.load(std::sync::atomic::Ordering::Relaxed) && ctx.dry_run.is_none() {
        return Ok(Action::requeue(APPROVAL_RETRY));
    }
    Ok(Action::await_change())
}

/// Error policy of the approval of revisions annotated by hand.
pub fn approval_error_policy<K: ResourceExt>(
    obj: Arc<K>,
    error: &Error,
    ctx: Arc<Context>,
) -> Action {
    error_policy_for(APPROVALS, &key(obj.as_ref()), error, &ctx)
}

fn error_policy_for(controller: &str, object: &str, error: &Error, ctx: &Context) -> Action {
    ctx.metrics
        .errors
        .get_or_create(&ErrorLabels {
            controller: controller.to_string(),
            reason: error.metric_label().to_string(),
        })
        .inc();
    let delay = ctx.backoff(controller, object);
    tracing::warn!(%error, retry_in = ?delay, "reconcile failed");
    Action::requeue(delay)
}

/// Error policy of the PackageVariant controller: count, back off.
pub fn package_variant_error_policy(
    pv: Arc<PackageVariant>,
    error: &Error,
    ctx: Arc<Context>,
) -> Action {
    error_policy_for(PACKAGE_VARIANTS, &key(pv.as_ref()), error, &ctx)
}

/// Error policy of the PackageVariantSet controller: count, back off.
pub fn package_variant_set_error_policy(
    pvs: Arc<PackageVariantSet>,
    error: &Error,
    ctx: Arc<Context>,
) -> Action {
    error_policy_for(PACKAGE_VARIANT_SETS, &key(pvs.as_ref()), error, &ctx)
}

/// The PackageVariants a PackageRevision event concerns: its owners, and
/// the variants of its namespace whose upstream or downstream is its
/// package (an upstream gained a revision; an adoptable revision appeared).
pub fn package_variants_of_revision(
    caches: &Caches,
    pr: &PackageRevision,
) -> Vec<ObjectRef<PackageVariant>> {
    package_variants_of_package(
        caches,
        &pr.namespace().unwrap_or_default(),
        pr.owner_references(),
        &pr.spec.repository,
        &pr.spec.package_name,
    )
}

/// [`package_variants_of_revision`] for a v1alpha2 PackageRevision.
pub fn package_variants_of_v1alpha2(
    caches: &Caches,
    obj: &kube::api::DynamicObject,
) -> Vec<ObjectRef<PackageVariant>> {
    let spec = &obj.data["spec"];
    package_variants_of_package(
        caches,
        &obj.namespace().unwrap_or_default(),
        obj.owner_references(),
        spec["repository"].as_str().unwrap_or_default(),
        spec["packageName"].as_str().unwrap_or_default(),
    )
}

fn package_variants_of_package(
    caches: &Caches,
    ns: &str,
    owners: &[k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference],
    repository: &str,
    package: &str,
) -> Vec<ObjectRef<PackageVariant>> {
    let mut out: Vec<ObjectRef<PackageVariant>> = owners
        .iter()
        .filter(|o| o.kind == "PackageVariant")
        .map(|o| ObjectRef::new(&o.name).within(ns))
        .collect();
    for pv in caches.package_variants.state() {
        if pv.namespace().as_deref() != Some(ns) {
            continue;
        }
        let up = pv
            .spec
            .upstream
            .as_ref()
            .is_some_and(|u| u.repo == repository && u.package == package);
        let down = pv
            .spec
            .downstream
            .as_ref()
            .is_some_and(|d| d.repo == repository && d.package == package);
        if up || down {
            let r = ObjectRef::from_obj(pv.as_ref());
            if !out.contains(&r) {
                out.push(r);
            }
        }
    }
    out
}

/// The PackageVariants an injection-source object (e.g. a ConfigMap)
/// concerns: those of its namespace with an injector naming it.
pub fn package_variants_of_source(
    caches: &Caches,
    api_version: &str,
    kind: &str,
    ns: &str,
    name: &str,
) -> Vec<ObjectRef<PackageVariant>> {
    let (group, version) = match api_version.rsplit_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    };
    caches
        .package_variants
        .state()
        .iter()
        .filter(|pv| pv.namespace().as_deref() == Some(ns))
        .filter(|pv| {
            pv.spec.injectors.iter().any(|i| {
                i.name == name
                    && i.group.as_deref().is_none_or(|g| g == group)
                    && i.version.as_deref().is_none_or(|v| v == version)
                    && i.kind.as_deref().is_none_or(|k| k == kind)
            })
        })
        .map(|pv| ObjectRef::from_obj(pv.as_ref()))
        .collect()
}

/// The PackageVariantSets a PackageRevision event concerns: those of its
/// namespace whose upstream is its package.
pub fn package_variant_sets_of_revision(
    caches: &Caches,
    pr: &PackageRevision,
) -> Vec<ObjectRef<PackageVariantSet>> {
    package_variant_sets_of_package(
        caches,
        &pr.namespace().unwrap_or_default(),
        &pr.spec.repository,
        &pr.spec.package_name,
    )
}

/// [`package_variant_sets_of_revision`] for a v1alpha2 PackageRevision.
pub fn package_variant_sets_of_v1alpha2(
    caches: &Caches,
    obj: &kube::api::DynamicObject,
) -> Vec<ObjectRef<PackageVariantSet>> {
    let spec = &obj.data["spec"];
    package_variant_sets_of_package(
        caches,
        &obj.namespace().unwrap_or_default(),
        spec["repository"].as_str().unwrap_or_default(),
        spec["packageName"].as_str().unwrap_or_default(),
    )
}

fn package_variant_sets_of_package(
    caches: &Caches,
    ns: &str,
    repository: &str,
    package: &str,
) -> Vec<ObjectRef<PackageVariantSet>> {
    caches
        .package_variant_sets
        .state()
        .iter()
        .filter(|s| s.namespace().as_deref() == Some(ns))
        .filter(|s| {
            s.spec
                .upstream
                .as_ref()
                .is_some_and(|u| u.repo == repository && u.package == package)
        })
        .map(|s| ObjectRef::from_obj(s.as_ref()))
        .collect()
}

/// The PackageVariantSet controlling a PackageVariant, if any.
pub fn package_variant_set_of_variant(pv: &PackageVariant) -> Vec<ObjectRef<PackageVariantSet>> {
    let ns = pv.namespace().unwrap_or_default();
    pv.owner_references()
        .iter()
        .filter(|o| o.kind == "PackageVariantSet" && o.controller == Some(true))
        .map(|o| ObjectRef::new(&o.name).within(&ns))
        .collect()
}

/// The PackageVariantSets whose targets a Repository or another object
/// may be (repository targets and selectors; object selectors of its
/// kind).
pub fn package_variant_sets_of_target(
    caches: &Caches,
    api_version: &str,
    kind: &str,
    ns: &str,
    name: &str,
) -> Vec<ObjectRef<PackageVariantSet>> {
    let is_repository = kind == "Repository" && api_version.starts_with("config.porch.kpt.dev/");
    caches
        .package_variant_sets
        .state()
        .iter()
        .filter(|s| s.namespace().as_deref() == Some(ns))
        .filter(|s| {
            s.spec.targets.iter().any(|t| {
                let repos = is_repository
                    && (t.repository_selector.is_some()
                        || t.repositories
                            .as_ref()
                            .is_some_and(|rs| rs.iter().any(|r| r.name == name)));
                let objects = t
                    .object_selector
                    .as_ref()
                    .is_some_and(|o| o.api_version == api_version && o.kind == kind);
                repos || objects
            })
        })
        .map(|s| ObjectRef::from_obj(s.as_ref()))
        .collect()
}
