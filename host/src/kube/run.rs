//! `porch-variants controller`: the reflectors (one watch per kind, shared
//! by both reconcilers), the controllers and their triggers, leader
//! election, the health and metrics server, and graceful shutdown on
//! SIGTERM or Ctrl-C.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::controller::Controller;
use kube::runtime::reflector::reflector;
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Client, Resource, ResourceExt};
use prometheus_client::registry::Registry;
use tokio::sync::{mpsc, watch};

use super::api::{PackageRevision, PackageVariant, PackageVariantSet, Repository};
use super::cache::{Caches, ObjectCaches, RevisionIndex};
use super::controller::{self as ctl, Context, PACKAGE_VARIANTS, PACKAGE_VARIANT_SETS};
use super::health::{self, HealthState};
use super::leader::{self, LeaseConfig};
use super::metrics::Metrics;
use super::prc::PACKAGE_REVISIONS;
use super::recent::{Expectations, RecentWrites};
use super::repo::REPOSITORIES;
use crate::engine_api::{ComponentCore, Core, NativeCore};

/// Options of `porch-variants controller`.
#[derive(Debug, Clone, clap::Args)]
pub struct ControllerArgs {
    /// Reconcilers to run (`packagevariants`, `packagevariantsets`,
    /// `packagerevisions`, `repositories`, or `*`), comma-separated, as
    /// Porch's `--reconcilers`.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "packagevariants,packagevariantsets"
    )]
    pub reconcilers: Vec<String>,
    /// Kinds watched as config-injection sources and objectSelector
    /// targets, as `apiVersion/Kind` (`v1/ConfigMap`, `example.com/v1/Team`).
    #[arg(long, value_delimiter = ',', default_value = "v1/ConfigMap")]
    pub watch_kinds: Vec<String>,
    /// Address of `/healthz`, `/readyz` and `/metrics`.
    #[arg(long, default_value = "0.0.0.0:8080")]
    pub listen: SocketAddr,
    /// Elect a leader on a Lease (only the leader writes).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub leader_elect: bool,
    /// Name of the Lease.
    #[arg(long, default_value = "porch-variants")]
    pub lease_name: String,
    /// Namespace of the Lease.
    #[arg(long, env = "POD_NAMESPACE", default_value = "porch-variants-system")]
    pub lease_namespace: String,
    /// This replica's identity in the Lease.
    #[arg(long, env = "POD_NAME", default_value = "porch-variants")]
    pub identity: String,
    /// Split every controller's objects across the replicas in this many
    /// shards, each held on a Lease (`<lease-name>-s<N>-shard-<k>`) by one
    /// replica at a time; 0 keeps one leader writing everything.
    #[arg(long, default_value_t = 0)]
    pub shards: u32,
    /// How long a Lease (the leader's, a shard's, a member's) holds
    /// without renewal.
    #[arg(long, default_value = "15s", value_parser = humantime::parse_duration)]
    pub lease_duration: Duration,
    /// How often Leases are renewed (and free ones looked for).
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    pub lease_renew_every: Duration,
    /// Run the core natively instead of as the WebAssembly component.
    #[arg(long)]
    pub native_core: bool,
    /// Seconds to wait for every cache's first sync before giving up (no
    /// reconcile runs before), as controller-runtime's `CacheSyncTimeout`.
    #[arg(
        long,
        default_value_t = 120,
        value_name = "SECONDS",
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub cache_sync_timeout: u64,
    /// Which API the variant controllers drive: `v1alpha1`, Porch's
    /// aggregated API (porch-server writes the drafts), or `v1alpha2`,
    /// PackageRevision objects with a source that the PackageRevision
    /// controller makes in Git (no porch-server needed).
    #[arg(long, value_enum, default_value_t = crate::store::v1alpha2::PorchApi::V1alpha1)]
    pub porch_api: crate::store::v1alpha2::PorchApi,
    /// The v1alpha2 PackageRevision controller (reconciler
    /// `packagerevisions`).
    #[command(flatten)]
    pub packagerevisions: super::prc::PrcArgs,
    /// Porch's function runner, for the PackageRevision controller's
    /// renders (Porch's deployment: `function-runner.porch-system.svc:9445`).
    #[command(flatten)]
    pub runner: crate::function_runner::RunnerArgs,
    /// The Repository controller (reconciler `repositories`; Git paths
    /// under `--packagerevisions.git-root`).
    #[command(flatten)]
    pub repositories: super::repo::RepoArgs,
    /// Reconcile as usual but write nothing: no object, no status, no Git,
    /// no Lease. Each write a reconcile would make is logged (`would
    /// write`, with a diff of what it changes), a set's plan followed
    /// through the variants it would create or change. The PackageRevision
    /// and Repository controllers do not run (their work is Git writes).
    #[arg(long)]
    pub dry_run: bool,
}

/// The controller could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// No Kubernetes configuration or client.
    #[error("connecting to Kubernetes")]
    Client(#[source] kube::Error),
    /// A required API is not served (a CRD is not installed).
    #[error(
        "{what} is not queryable ({source}); are the CRDs and RBAC rules installed? (kubectl apply -k deploy/)"
    )]
    NotServed {
        /// Which API.
        what: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// Bad flag value.
    #[error("{0}")]
    Usage(String),
    /// The core could not be loaded.
    #[error("loading the core")]
    Core(#[from] crate::engine_api::CoreError),
    /// A cache's reflector ended before the cache synced.
    #[error("the {cache} cache stopped before syncing")]
    CacheStopped {
        /// Which cache.
        cache: String,
        /// Why.
        #[source]
        source: reflector::store::WriterDropped,
    },
    /// A cache did not sync in time.
    #[error("the {cache} cache did not sync within {seconds} s (--cache-sync-timeout); is the API server reachable and does RBAC allow list and watch?")]
    CacheSyncTimeout {
        /// The first cache not synced.
        cache: String,
        /// The timeout.
        seconds: u64,
    },
    /// The health server failed.
    #[error("health server on {addr}")]
    Serve {
        /// The address.
        addr: SocketAddr,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

fn parse_kind(s: &str) -> Result<GroupVersionKind, RunError> {
    let (gv, kind) = s
        .rsplit_once('/')
        .ok_or_else(|| RunError::Usage(format!("--watch-kinds: {s:?} is not apiVersion/Kind")))?;
    let (group, version) = gv.rsplit_once('/').unwrap_or(("", gv));
    if kind.is_empty() || version.is_empty() {
        return Err(RunError::Usage(format!(
            "--watch-kinds: {s:?} is not apiVersion/Kind"
        )));
    }
    Ok(GroupVersionKind::gvk(group, version, kind))
}

/// A stream of what a channel receives.
fn channel_stream<T: Send + 'static>(rx: mpsc::UnboundedReceiver<T>) -> impl Stream<Item = T> {
    futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|t| (t, rx)) })
}

/// Waits for the first sync of `store`, the `cache` named in
/// `waiting_for` meanwhile (for the timeout's message).
async fn first_sync<K>(
    waiting_for: &std::sync::Mutex<String>,
    cache: String,
    store: &reflector::Store<K>,
) -> Result<(), RunError>
where
    K: Resource + Clone + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    cache.clone_into(&mut waiting_for.lock().unwrap_or_else(|e| e.into_inner()));
    store
        .wait_until_ready()
        .await
        .map_err(|source| RunError::CacheStopped { cache, source })
}

/// Ends the recent writes that a watch event shows the cache has caught up
/// with.
fn observe<K: Resource + Clone>(recent: &RecentWrites<K>, event: &watcher::Event<K>) {
    match event {
        watcher::Event::Apply(k) | watcher::Event::InitApply(k) => recent.observe(
            &k.namespace().unwrap_or_default(),
            &k.name_any(),
            k.resource_version().as_deref(),
        ),
        watcher::Event::Delete(k) => {
            recent.observe(&k.namespace().unwrap_or_default(), &k.name_any(), None)
        }
        watcher::Event::Init | watcher::Event::InitDone => {}
    }
}

/// Objects an event touched.
fn touched<K: Clone>(event: &watcher::Event<K>) -> Option<&K> {
    match event {
        watcher::Event::Apply(k) | watcher::Event::Delete(k) | watcher::Event::InitApply(k) => {
            Some(k)
        }
        watcher::Event::Init | watcher::Event::InitDone => None,
    }
}

/// Runs a reflector of `api` into `writer`, calling `on_event` for every
/// event, until the stream ends.
fn spawn_reflector<K>(
    api: Api<K>,
    writer: reflector::store::Writer<K>,
    mut on_event: impl FnMut(&watcher::Event<K>) + Send + 'static,
) where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone + Send + Sync,
{
    tokio::spawn(async move {
        let stream = reflector(
            writer,
            watcher(api, watcher::Config::default()).default_backoff(),
        );
        futures::pin_mut!(stream);
        while let Some(event) = stream.next().await {
            match event {
                Ok(event) => on_event(&event),
                Err(e) => tracing::warn!(error = %e, "watch failed; retrying"),
            }
        }
    });
}

/// Waits for SIGTERM or Ctrl-C.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(error = %e, "no SIGTERM handler");
                    let _ = tokio::signal::ctrl_c().await;
                    return;
                }
            };
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Checks that an API is served before starting (a clear error when a CRD
/// is missing).
async fn check_served<K>(api: &Api<K>, what: &str) -> Result<(), RunError>
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.list(&kube::api::ListParams::default().limit(1))
        .await
        .map(|_| ())
        .map_err(|source| RunError::NotServed {
            what: what.to_string(),
            source,
        })
}

/// Hands the objects of a newly taken shard to the controllers, and keeps
/// the owned-object gauges.
struct Handoff {
    gates: super::shard::Gates,
    caches: Caches,
    prc_store: reflector::Store<DynamicObject>,
    pv: mpsc::UnboundedSender<PackageVariant>,
    pvs: mpsc::UnboundedSender<PackageVariantSet>,
    prc: mpsc::UnboundedSender<DynamicObject>,
    repo: mpsc::UnboundedSender<Repository>,
    metrics: Arc<Metrics>,
    /// Which reconcilers run: variants, sets, PackageRevisions, Repositories.
    controllers: [bool; 4],
}

impl Handoff {
    fn in_shards<K: Resource>(&self, obj: &K, shards: &std::collections::BTreeSet<u32>) -> bool {
        shards.contains(
            &self
                .gates
                .shard_of(&obj.namespace().unwrap_or_default(), &obj.name_any()),
        )
    }

    fn owned<K: Resource>(&self, objs: &[Arc<K>], controller: &str) {
        let held = self.gates.held();
        let n = objs
            .iter()
            .filter(|o| {
                held.contains(
                    &self
                        .gates
                        .shard_of(&o.namespace().unwrap_or_default(), &o.name_any()),
                )
            })
            .count();
        self.metrics
            .owned
            .get_or_create(&Metrics::labels(controller))
            .set(i64::try_from(n).unwrap_or(i64::MAX));
    }

    /// Sends the objects of `store` in `shards` on `tx`; how many.
    fn send_in<K>(
        &self,
        store: &reflector::Store<K>,
        tx: &mpsc::UnboundedSender<K>,
        shards: &std::collections::BTreeSet<u32>,
    ) -> usize
    where
        K: Resource + Clone + 'static,
        K::DynamicType: Eq + std::hash::Hash + Clone,
    {
        store
            .state()
            .iter()
            .filter(|o| self.in_shards(o.as_ref(), shards))
            .filter(|o| tx.send(o.as_ref().clone()).is_ok())
            .count()
    }

    /// One pass over the caches for every shard taken since the last.
    fn hand_over(&self, shards: &std::collections::BTreeSet<u32>) {
        let [pv, pvs, prc, repo] = self.controllers;
        let mut n = 0usize;
        if pv {
            n += self.send_in(&self.caches.package_variants, &self.pv, shards);
        }
        if pvs {
            n += self.send_in(&self.caches.package_variant_sets, &self.pvs, shards);
        }
        if prc {
            n += self.send_in(&self.prc_store, &self.prc, shards);
        }
        if repo {
            n += self.send_in(&self.caches.repositories, &self.repo, shards);
        }
        tracing::info!(?shards, objects = n, "shards handed to the controllers");
    }

    fn count(&self) {
        self.owned(&self.caches.package_variants.state(), PACKAGE_VARIANTS);
        self.owned(
            &self.caches.package_variant_sets.state(),
            PACKAGE_VARIANT_SETS,
        );
        self.owned(&self.prc_store.state(), PACKAGE_REVISIONS);
        self.owned(&self.caches.repositories.state(), REPOSITORIES);
    }

    async fn run(
        self,
        mut gained: mpsc::UnboundedReceiver<u32>,
        stop: impl std::future::Future<Output = ()>,
    ) {
        futures::pin_mut!(stop);
        let mut tick = tokio::time::interval(Duration::from_secs(10));
        loop {
            tokio::select! {
                k = gained.recv() => match k {
                    Some(k) => {
                        let mut shards = std::collections::BTreeSet::from([k]);
                        while let Ok(k) = gained.try_recv() {
                            shards.insert(k);
                        }
                        self.hand_over(&shards);
                        self.count();
                    }
                    None => break,
                },
                _ = tick.tick() => self.count(),
                () = &mut stop => break,
            }
        }
    }
}

/// Runs the controller until SIGTERM or Ctrl-C.
pub async fn run(args: ControllerArgs) -> Result<(), RunError> {
    let client = Client::try_default().await.map_err(RunError::Client)?;
    run_with(client, args, shutdown_signal()).await
}

/// Runs the controller with `client` until `shutdown` resolves.
pub async fn run_with(
    client: Client,
    args: ControllerArgs,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), RunError> {
    let all = args.reconcilers.iter().any(|r| r == "*");
    for r in &args.reconcilers {
        if r != "*"
            && r != PACKAGE_VARIANTS
            && r != PACKAGE_VARIANT_SETS
            && r != PACKAGE_REVISIONS
            && r != REPOSITORIES
        {
            return Err(RunError::Usage(format!(
                "--reconcilers: unknown reconciler {r:?} (packagevariants, packagevariantsets, packagerevisions, repositories, *)"
            )));
        }
    }
    if args.lease_renew_every.is_zero() || args.lease_renew_every * 2 > args.lease_duration {
        return Err(RunError::Usage(format!(
            "--lease-renew-every ({:?}) must be at most half of --lease-duration ({:?}), and not 0: writes stop one renewal before a Lease may expire",
            args.lease_renew_every, args.lease_duration
        )));
    }
    if args.shards > 0 && args.identity == "porch-variants" {
        return Err(RunError::Usage(
            "--shards needs each replica's own --identity (POD_NAME); with the default one every replica would hold every shard".into(),
        ));
    }

    if args.dry_run && args.shards > 0 {
        return Err(RunError::Usage(
            "--dry-run takes no Lease and writes nothing: it reconciles every object, and --shards cannot split that".into(),
        ));
    }
    let run_prc = !args.dry_run && (all || args.reconcilers.iter().any(|r| r == PACKAGE_REVISIONS));
    let run_pv = all || args.reconcilers.iter().any(|r| r == PACKAGE_VARIANTS);
    let run_pvs = all || args.reconcilers.iter().any(|r| r == PACKAGE_VARIANT_SETS);
    let run_repo = !args.dry_run && (all || args.reconcilers.iter().any(|r| r == REPOSITORIES));
    if args.dry_run
        && (all
            || args
                .reconcilers
                .iter()
                .any(|r| r == PACKAGE_REVISIONS || r == REPOSITORIES))
    {
        tracing::warn!(
            "--dry-run: the PackageRevision and Repository controllers do not run (their work is Git writes)"
        );
    }
    let v2 = args.porch_api == crate::store::v1alpha2::PorchApi::V1alpha2;
    // The v1alpha2 objects are watched for the PackageRevision controller,
    // and for the variants when they drive that API.
    let watch_v2 = run_prc || (v2 && (run_pv || run_pvs));
    let kinds = args
        .watch_kinds
        .iter()
        .map(|k| parse_kind(k))
        .collect::<Result<Vec<_>, _>>()?;

    let pv_api = Api::<PackageVariant>::all(client.clone());
    let pvs_api = Api::<PackageVariantSet>::all(client.clone());
    let pr_api = Api::<PackageRevision>::all(client.clone());
    let repo_api = Api::<Repository>::all(client.clone());
    check_served(&pv_api, "packagevariants.config.porch.kpt.dev").await?;
    check_served(&pvs_api, "packagevariantsets.config.porch.kpt.dev").await?;
    if !v2 {
        check_served(&pr_api, "packagerevisions.porch.kpt.dev").await?;
    }
    check_served(&repo_api, "repositories.config.porch.kpt.dev").await?;
    let prc_resource = super::prc::api_resource();
    let prc_api = Api::<DynamicObject>::all_with(client.clone(), &prc_resource);
    if watch_v2 {
        check_served(&prc_api, "packagerevisions.porch.kpt.dev/v1alpha2").await?;
    }
    // The watched kinds too: a kind that is not served or not allowed would
    // keep its cache from syncing, and so every reconcile from starting.
    for gvk in &kinds {
        let ar = ApiResource::from_gvk(gvk);
        let api = Api::<DynamicObject>::all_with(client.clone(), &ar);
        let what = format!("{}/{} (--watch-kinds)", ar.api_version, ar.kind);
        check_served(&api, &what).await?;
    }

    let core: Arc<dyn Core + Send + Sync> = if args.native_core {
        Arc::new(NativeCore)
    } else {
        Arc::new(ComponentCore::load()?)
    };

    // Shutdown and leadership.
    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    let sharded = args.shards > 0;
    // A dry run writes nothing, so it needs no Lease (and takes none from
    // the controller that writes).
    let elect = args.leader_elect && !args.dry_run;
    let (leader_tx, leader_rx) = watch::channel(!elect && !sharded);
    let (shard_tx, shard_rx): (Vec<_>, Vec<_>) =
        (0..args.shards).map(|_| watch::channel(false)).unzip();
    let gates = if sharded {
        super::shard::Gates::sharded(shard_rx)
    } else {
        super::shard::Gates::single(leader_rx.clone())
    };
    let mut registry = Registry::default();
    let metrics = Arc::new(Metrics::register(&mut registry));
    let health = Arc::new(HealthState {
        ready: Default::default(),
        registry,
    });

    // The caches (readers) first, so every reflector's event mapping can
    // read them.
    let (pv_store, pv_writer) = reflector::store::<PackageVariant>();
    let (pvs_store, pvs_writer) = reflector::store::<PackageVariantSet>();
    let (pr_store, pr_writer) = reflector::store::<PackageRevision>();
    let (repo_store, repo_writer) = reflector::store::<Repository>();
    let mut object_writers = Vec::new();
    let objects = ObjectCaches::default();
    for gvk in &kinds {
        let ar = ApiResource::from_gvk(gvk);
        let writer = reflector::store::Writer::<DynamicObject>::new(ar.clone());
        objects.insert(&ar.api_version, &ar.kind, writer.as_reader());
        object_writers.push((ar, writer));
    }
    let caches = Caches {
        package_variants: pv_store.clone(),
        package_variant_sets: pvs_store.clone(),
        revisions: pr_store.clone(),
        revision_index: Arc::new(RevisionIndex::default()),
        repositories: repo_store.clone(),
        objects: objects.clone(),
    };

    // Triggers: objects whose change concerns a PackageVariant or a
    // PackageVariantSet, and the primary objects themselves.
    let (pv_ref_tx, pv_ref_rx) = mpsc::unbounded_channel::<ObjectRef<PackageVariant>>();
    let (pvs_ref_tx, pvs_ref_rx) = mpsc::unbounded_channel::<ObjectRef<PackageVariantSet>>();
    let (pv_tx, pv_rx) = mpsc::unbounded_channel::<PackageVariant>();
    let (pvs_tx, pvs_rx) = mpsc::unbounded_channel::<PackageVariantSet>();
    let (pv_all_tx, pvs_all_tx) = (pv_tx.clone(), pvs_tx.clone());
    // Revisions annotated with an approval policy, for the approval of
    // revisions annotated by hand (with the variants' controller).
    let (approval_tx, approval_rx) = mpsc::unbounded_channel::<PackageRevision>();
    let (approval_v2_tx, approval_v2_rx) = mpsc::unbounded_channel::<DynamicObject>();

    // What the reconciles wrote and the caches may not show yet; the watch
    // events below end each entry once the cache has caught up.
    let expectations = Expectations::default();
    {
        let (pvs_ref_tx, recent) = (pvs_ref_tx.clone(), expectations.variants.clone());
        spawn_reflector(pv_api, pv_writer, move |event| {
            observe(&recent, event);
            if let Some(pv) = touched(event) {
                for r in ctl::package_variant_set_of_variant(pv) {
                    let _ = pvs_ref_tx.send(r);
                }
                let _ = pv_tx.send(pv.clone());
            }
        });
    }
    spawn_reflector(pvs_api, pvs_writer, move |event| {
        if let Some(pvs) = touched(event) {
            let _ = pvs_tx.send(pvs.clone());
        }
    });
    if !v2 {
        let (caches, pv_ref_tx, pvs_ref_tx) =
            (caches.clone(), pv_ref_tx.clone(), pvs_ref_tx.clone());
        let recent = expectations.revisions.clone();
        spawn_reflector(pr_api, pr_writer, move |event| {
            caches.revision_index.apply(event);
            observe(&recent, event);
            if let Some(pr) = touched(event).filter(|_| run_pv) {
                if !matches!(event, watcher::Event::Delete(_))
                    && ctl::asks_approval(pr.annotations(), pr.spec.lifecycle)
                {
                    let _ = approval_tx.send(pr.clone());
                }
            }
            if let Some(pr) = touched(event) {
                for r in ctl::package_variants_of_revision(&caches, pr) {
                    let _ = pv_ref_tx.send(r);
                }
                for r in ctl::package_variant_sets_of_revision(&caches, pr) {
                    let _ = pvs_ref_tx.send(r);
                }
            }
        });
    }
    // The Repositories: a reconcile when one is created or deleted, has a
    // new generation or is marked for deletion (upstream's predicates).
    let (repo_tx, repo_rx) = mpsc::unbounded_channel::<Repository>();
    let repo_all_tx = repo_tx.clone();
    {
        let (caches, pvs_ref_tx) = (caches.clone(), pvs_ref_tx.clone());
        let mut seen: std::collections::HashMap<(String, String), super::repo::Seen> =
            Default::default();
        spawn_reflector(repo_api, repo_writer, move |event| {
            if let Some(repo) = touched(event).filter(|_| run_repo) {
                let key = (repo.namespace().unwrap_or_default(), repo.name_any());
                if matches!(event, watcher::Event::Delete(_)) {
                    seen.remove(&key);
                    let _ = repo_tx.send(repo.clone());
                } else {
                    let wake = super::repo::wakes(seen.get(&key).copied(), repo);
                    seen.insert(key, super::repo::seen(repo));
                    if wake {
                        let _ = repo_tx.send(repo.clone());
                    }
                }
            }
            if let Some(repo) = touched(event) {
                let ns = repo.namespace().unwrap_or_default();
                let av = Repository::api_version(&()).into_owned();
                for r in ctl::package_variant_sets_of_target(
                    &caches,
                    &av,
                    "Repository",
                    &ns,
                    &repo.name_any(),
                ) {
                    let _ = pvs_ref_tx.send(r);
                }
            }
        });
    }
    for (ar, writer) in object_writers {
        let api = Api::<DynamicObject>::all_with(client.clone(), &ar);
        let (caches, pv_ref_tx, pvs_ref_tx) =
            (caches.clone(), pv_ref_tx.clone(), pvs_ref_tx.clone());
        spawn_reflector(api, writer, move |event| {
            let Some(obj) = touched(event) else { return };
            let ns = obj.namespace().unwrap_or_default();
            let name = obj.name_any();
            for r in ctl::package_variants_of_source(&caches, &ar.api_version, &ar.kind, &ns, &name)
            {
                let _ = pv_ref_tx.send(r);
            }
            for r in
                ctl::package_variant_sets_of_target(&caches, &ar.api_version, &ar.kind, &ns, &name)
            {
                let _ = pvs_ref_tx.send(r);
            }
        });
    }

    // The v1alpha2 PackageRevisions: a reconcile on a new generation or a
    // changed render request (upstream's event filter), or a deletion.
    let prc_writer = reflector::store::Writer::<DynamicObject>::new(prc_resource.clone());
    let prc_store = prc_writer.as_reader();
    let prc_index = Arc::new(RevisionIndex::default());
    let (prc_tx, prc_rx) = mpsc::unbounded_channel::<DynamicObject>();
    let prc_all_tx = prc_tx.clone();
    if watch_v2 {
        let mut seen: std::collections::HashMap<(String, String), (Option<i64>, String, bool)> =
            Default::default();
        let (caches, pv_ref_tx, pvs_ref_tx) =
            (caches.clone(), pv_ref_tx.clone(), pvs_ref_tx.clone());
        let recent = expectations.v1alpha2.clone();
        let index = prc_index.clone();
        spawn_reflector(prc_api, prc_writer, move |event| {
            index.apply(event);
            if v2 {
                observe(&recent, event);
            }
            let Some(obj) = touched(event) else { return };
            if v2 && run_pv && !matches!(event, watcher::Event::Delete(_)) {
                // v1alpha2 names the lifecycles as v1alpha1 does.
                let lifecycle = serde_json::from_value(obj.data["spec"]["lifecycle"].clone())
                    .unwrap_or_default();
                if ctl::asks_approval(obj.annotations(), lifecycle) {
                    let _ = approval_v2_tx.send(obj.clone());
                }
            }
            if v2 {
                // Any change, status included: a variant waits for its
                // draft's source to be done.
                for r in ctl::package_variants_of_v1alpha2(&caches, obj) {
                    let _ = pv_ref_tx.send(r);
                }
                for r in ctl::package_variant_sets_of_v1alpha2(&caches, obj) {
                    let _ = pvs_ref_tx.send(r);
                }
            }
            if !run_prc {
                return;
            }
            let key = (obj.namespace().unwrap_or_default(), obj.name_any());
            if matches!(event, watcher::Event::Delete(_)) {
                seen.remove(&key);
                return;
            }
            let now = (
                obj.metadata.generation,
                obj.annotations()
                    .get(pv_core::prc::RENDER_REQUEST_ANNOTATION)
                    .cloned()
                    .unwrap_or_default(),
                obj.metadata.deletion_timestamp.is_some(),
            );
            if seen.get(&key) != Some(&now) {
                seen.insert(key, now);
                let _ = prc_tx.send(obj.clone());
            }
        });
    }

    // Every cache has synced: only then may a reconcile run. A reconcile
    // that read a cache still filling would not see the downstream drafts
    // that exist (and create another one) or the upstream revision (and
    // report it missing). Events received meanwhile wait in the channels.
    let waiting_for = Arc::new(std::sync::Mutex::new(String::new()));
    let synced = {
        let (caches, waiting_for) = (caches.clone(), waiting_for.clone());
        let prc_wait = prc_store.clone();
        let prc_index = prc_index.clone();
        async move {
            let w = waiting_for.as_ref();
            first_sync(w, "PackageVariant".into(), &caches.package_variants).await?;
            first_sync(w, "PackageVariantSet".into(), &caches.package_variant_sets).await?;
            if !v2 {
                first_sync(w, "PackageRevision".into(), &caches.revisions).await?;
                // The index is filled from the same events, just after the store.
                while !caches.revision_index.is_synced() {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
            first_sync(w, "Repository".into(), &caches.repositories).await?;
            if watch_v2 {
                first_sync(w, "PackageRevision (v1alpha2)".into(), &prc_wait).await?;
                while !prc_index.is_synced() {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
            for ((api_version, kind), store) in caches.objects.stores() {
                first_sync(w, format!("{api_version}/{kind}"), &store).await?;
            }
            Ok::<(), RunError>(())
        }
    };

    // Shutdown on SIGTERM / Ctrl-C (or the caller's signal).
    {
        let shutdown_tx = shutdown_tx.clone();
        tokio::spawn(async move {
            shutdown.await;
            tracing::info!("shutting down");
            let _ = shutdown_tx.send(true);
        });
    }
    let stopped = |mut rx: watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };

    // Bound before the controllers start: a port in use stops the run at
    // once instead of leaving it without probes until shutdown.
    let addr = args.listen;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| RunError::Serve { addr, source })?;
    let server = {
        let (health, stop) = (health.clone(), stopped(shutdown_rx.clone()));
        tokio::spawn(async move {
            health::serve_listener(listener, health, stop)
                .await
                .map_err(|source| RunError::Serve { addr, source })
        })
    };

    // The Lease is held until the controllers have drained: it is released
    // only after the last in-flight reconcile has written, so the next
    // leader never writes beside this one.
    let (election_stop_tx, election_stop_rx) = watch::channel(false);
    let lease = LeaseConfig {
        name: args.lease_name.clone(),
        namespace: args.lease_namespace.clone(),
        identity: args.identity.clone(),
        duration: args.lease_duration,
        renew_every: args.lease_renew_every,
    };
    let (gained_tx, gained_rx) = mpsc::unbounded_channel::<u32>();
    let election = if sharded {
        let cfg = super::shard::ShardConfig {
            lease,
            shards: args.shards,
        };
        Some(tokio::spawn(super::shard::run(
            client.clone(),
            cfg,
            shard_tx,
            gained_tx,
            metrics.shards.clone(),
            election_stop_rx,
        )))
    } else if elect {
        Some(tokio::spawn(leader::run(
            client.clone(),
            lease,
            leader_tx,
            election_stop_rx,
        )))
    } else {
        None
    };

    // Probes answer from here on; /readyz turns ready with the caches.
    let mut cache_error = None;
    let timeout = Duration::from_secs(args.cache_sync_timeout);
    let started = tokio::select! {
        synced = tokio::time::timeout(timeout, synced) => match synced {
            Ok(Ok(())) => {
                health.ready.store(true, Ordering::Release);
                tracing::info!("caches synced");
                true
            }
            Ok(Err(e)) => {
                cache_error = Some(e);
                false
            }
            Err(_) => {
                let cache = waiting_for.lock().unwrap_or_else(|e| e.into_inner()).clone();
                cache_error = Some(RunError::CacheSyncTimeout {
                    cache,
                    seconds: args.cache_sync_timeout,
                });
                false
            }
        },
        () = stopped(shutdown_rx.clone()) => false,
    };

    let prc_args = &args.packagerevisions;
    let prc_ctx = Arc::new(super::prc::PrcContext {
        client: client.clone(),
        revisions: prc_store.clone(),
        index: prc_index.clone(),
        repositories: caches.repositories.clone(),
        core: core.clone(),
        renderer: Some(Arc::new(crate::reconcile::DraftRenderer::porch_server(
            &prc_args.git_root,
            args.runner
                .runner()
                .map_err(|e| RunError::Usage(e.to_string()))?,
        ))),
        slots: Arc::new(crate::prc::RenderSlots::new(
            prc_args.max_concurrent_renders,
        )),
        config: pv_core::prc::reconcile::Config {
            render: true,
            render_requeue_delay_ms: u64::try_from(prc_args.render_requeue_delay.as_millis())
                .unwrap_or(u64::MAX),
        },
        git_root: prc_args.git_root.clone(),
        git_fetch_interval: prc_args.git_fetch_interval,
        gates: gates.clone(),
    });
    let repo_args = &args.repositories;
    // Porch's FunctionConfigs, where the cluster serves them and drafts
    // are rendered here (v1alpha2): which executor runs the images they
    // name, as porch-server reads them.
    if let Some(renderer) = prc_ctx.renderer.clone().filter(|_| watch_v2) {
        let ar = ApiResource::from_gvk(&GroupVersionKind::gvk(
            "config.porch.kpt.dev",
            "v1alpha1",
            "FunctionConfig",
        ));
        let api = Api::<DynamicObject>::all_with(client.clone(), &ar);
        match check_served(&api, "functionconfigs.config.porch.kpt.dev").await {
            Err(e) => tracing::info!(
                error = %e,
                "FunctionConfigs are not served: images run as no FunctionConfig says"
            ),
            Ok(()) => {
                let writer = reflector::store::Writer::<DynamicObject>::new(ar);
                let store = writer.as_reader();
                spawn_reflector(api, writer, move |event| {
                    if !matches!(event, watcher::Event::Init | watcher::Event::InitApply(_)) {
                        renderer.set_function_configs(super::prc::function_configs(&store.state()));
                    }
                });
            }
        }
    }
    let mut repo_ctx = super::repo::RepoContext::new(
        client.clone(),
        caches.repositories.clone(),
        prc_ctx.clone(),
        repo_args.sync_slots(),
        repo_args.config(),
        leader_rx.clone(),
    );
    repo_ctx.gates = gates.clone();
    let repo_ctx = Arc::new(repo_ctx);
    let mut context = Context::new(
        client.clone(),
        caches.clone(),
        core,
        metrics.clone(),
        leader_rx,
    );
    context.gates = gates.clone();
    context.recent = expectations;
    if started && sharded {
        // A shard taken: everything in it is reconciled here, since the
        // replica that held it may have left work undone. The objects
        // owned are counted on every change of the shards held.
        let handoff = Handoff {
            gates: gates.clone(),
            caches: caches.clone(),
            prc_store: prc_store.clone(),
            pv: pv_all_tx,
            pvs: pvs_all_tx,
            prc: prc_all_tx,
            repo: repo_all_tx,
            metrics: metrics.clone(),
            controllers: [run_pv, run_pvs, run_prc, run_repo],
        };
        tokio::spawn(handoff.run(gained_rx, stopped(shutdown_rx.clone())));
    }
    context.v1alpha2 = v2.then(|| prc_ctx.clone());
    context.dry_run = args.dry_run.then(ctl::DryRun::logging);
    let ctx = Arc::new(context);
    let pv_controller = (started && run_pv).then(|| {
        Controller::for_stream(channel_stream(pv_rx).map(Ok), pv_store)
            .reconcile_on(channel_stream(pv_ref_rx))
            .graceful_shutdown_on(stopped(shutdown_rx.clone()))
            .run(
                ctl::reconcile_package_variant,
                ctl::package_variant_error_policy,
                ctx.clone(),
            )
            .for_each(|_| async {})
    });
    // Nephio's approval controller for revisions annotated by hand: on the
    // revisions the variants drive (v1alpha1 or v1alpha2).
    let approval_controller = (started && run_pv && !v2).then(|| {
        Controller::for_stream(channel_stream(approval_rx).map(Ok), pr_store.clone())
            .graceful_shutdown_on(stopped(shutdown_rx.clone()))
            .run(
                ctl::reconcile_approval,
                ctl::approval_error_policy,
                ctx.clone(),
            )
            .for_each(|_| async {})
    });
    let approval_v2_controller = (started && run_pv && v2).then(|| {
        Controller::for_stream_with(
            channel_stream(approval_v2_rx).map(Ok),
            prc_store.clone(),
            prc_resource.clone(),
        )
        .graceful_shutdown_on(stopped(shutdown_rx.clone()))
        .run(
            ctl::reconcile_approval_v1alpha2,
            ctl::approval_error_policy,
            ctx.clone(),
        )
        .for_each(|_| async {})
    });
    let pvs_controller = (started && run_pvs).then(|| {
        Controller::for_stream(channel_stream(pvs_rx).map(Ok), pvs_store)
            .reconcile_on(channel_stream(pvs_ref_rx))
            .graceful_shutdown_on(stopped(shutdown_rx.clone()))
            .run(
                ctl::reconcile_package_variant_set,
                ctl::package_variant_set_error_policy,
                ctx.clone(),
            )
            .for_each(|_| async {})
    });
    let prc_controller =
        (started && run_prc).then(|| {
            Controller::for_stream_with(channel_stream(prc_rx).map(Ok), prc_store, prc_resource)
                .with_config(kube::runtime::controller::Config::default().concurrency(
                    u16::try_from(prc_args.max_concurrent_reconciles).unwrap_or(u16::MAX),
                ))
                .graceful_shutdown_on(stopped(shutdown_rx.clone()))
                .run(super::prc::reconcile, super::prc::error_policy, prc_ctx)
                .for_each(|_| async {})
        });
    let repo_controller = (started && run_repo).then(|| {
        Controller::for_stream(channel_stream(repo_rx).map(Ok), caches.repositories.clone())
            .with_config(kube::runtime::controller::Config::default().concurrency(
                u16::try_from(repo_args.max_concurrent_reconciles).unwrap_or(u16::MAX),
            ))
            .graceful_shutdown_on(stopped(shutdown_rx.clone()))
            .run(
                super::repo::reconcile,
                super::repo::error_policy,
                repo_ctx.clone(),
            )
            .for_each(|_| async {})
    });
    if started {
        tracing::info!(
            packagerevisions = run_prc,
            repositories = run_repo,
            packagevariants = run_pv,
            packagevariantsets = run_pvs,
            porch_api = ?args.porch_api,
            core = ctx.core.name(),
            dry_run = args.dry_run,
            "controller started"
        );
    }
    tokio::join!(
        async {
            if let Some(c) = pv_controller {
                c.await;
            }
        },
        async {
            if let Some(c) = pvs_controller {
                c.await;
            }
        },
        async {
            if let Some(c) = approval_controller {
                c.await;
            }
            if let Some(c) = approval_v2_controller {
                c.await;
            }
        },
        async {
            if let Some(c) = prc_controller {
                c.await;
            }
        },
        async {
            if let Some(c) = repo_controller {
                c.await;
                // The background full syncs write too: they end before the
                // Lease is released.
                repo_ctx.wait_for_syncs().await;
            }
        },
    );
    let _ = shutdown_tx.send(true);
    let _ = election_stop_tx.send(true);
    if let Some(e) = election {
        let _ = e.await;
    }
    if let Some(e) = cache_error {
        return Err(e);
    }
    match server.await {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!(error = %e, "health server task");
            Ok(())
        }
    }
}
