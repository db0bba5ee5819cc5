//! Several replicas sharing the controllers through shard Leases
//! (`--shards`), against one recording API server that keeps Leases as
//! the API server does. Each replica runs the real shard rounds; the
//! caches are shared and filled as the watches would fill them. A monitor
//! samples every replica's gates throughout and fails the test if any
//! shard is ever open in two replicas at once.

mod kube_support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kube::runtime::controller::Action;
use kube_support::*;
use porch_variants::kube::cache::Caches;
use porch_variants::kube::controller;
use porch_variants::kube::metrics::{Metrics, ShardLabels};
use porch_variants::kube::shard::{self, Gates};
use pv_core::api::{PackageRevision, PackageVariant};
use serde_json::json;

const NS: &str = "default";
const SHARDS: u32 = 12;
const DURATION: Duration = Duration::from_millis(2000);
const RENEW: Duration = Duration::from_millis(250);
const PR_PATH: &str = "/apis/porch.kpt.dev/v1alpha1/namespaces/default/packagerevisions";
const PRR_PATH: &str = "/apis/porch.kpt.dev/v1alpha1/namespaces/default/packagerevisionresources";
const PV_PATH: &str = "/apis/config.porch.kpt.dev/v1alpha1/namespaces/default/packagevariants";

const KPTFILE: &str =
    "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: web\ninfo:\n  description: web\n";
const CONTEXT: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kptfile.kpt.dev\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\ndata:\n  name: web\n";
const DEPLOY: &str =
    "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 2\n";

fn blueprint() -> BTreeMap<String, String> {
    BTreeMap::from([
        ("Kptfile".to_string(), KPTFILE.to_string()),
        ("package-context.yaml".to_string(), CONTEXT.to_string()),
        ("deployment.yaml".to_string(), DEPLOY.to_string()),
    ])
}

fn revision(repo: &str, ws: &str, lifecycle: &str, owner: Option<&str>) -> PackageRevision {
    let name = format!("{repo}.web.{ws}");
    let published = lifecycle == "Published";
    let mut v = json!({
        "apiVersion": "porch.kpt.dev/v1alpha1", "kind": "PackageRevision",
        "metadata": {"name": name, "namespace": NS, "uid": format!("uid-{name}"), "resourceVersion": "7"},
        "spec": {"packageName": "web", "repository": repo, "workspaceName": ws,
                 "revision": i64::from(published), "lifecycle": lifecycle},
        "status": {"selfLock": {"type": "git", "git": {"repo": repo, "directory": "web",
            "ref": if published { "web/v1".to_string() } else { format!("drafts/web/{ws}") },
            "commit": "c0ffee"}}}
    });
    if let Some(pv) = owner {
        v["metadata"]["ownerReferences"] = json!([{"apiVersion": "config.porch.kpt.dev/v1alpha1",
            "kind": "PackageVariant", "name": pv, "uid": format!("uid-{pv}"), "controller": true}]);
        v["status"]["upstreamLock"] = json!({"type": "git", "git": {"repo": "blueprints",
            "directory": "web", "ref": "web/v1", "commit": "c0ffee"}});
    }
    serde_json::from_value(v).expect("revision")
}

fn variant(i: usize) -> PackageVariant {
    fleet_variant(i, "region", &format!("region-{i}"))
}

type Replica = ShardReplica;

/// The shared API server and caches, the replicas, and the monitor.
struct Fleet {
    server: Shared,
    caches: Caches,
    writers: CacheWriters,
    replicas: Vec<Replica>,
    watched: Arc<Mutex<Vec<(String, Gates)>>>,
    overlaps: Arc<Mutex<Vec<String>>>,
    variants: Vec<Arc<porch_variants::kube::api::PackageVariant>>,
}

impl Fleet {
    fn new(variants: usize) -> Fleet {
        let server: Shared = Arc::new(Mutex::new(ServerState::default()));
        server.lock().unwrap().stateful_leases = true;
        let (caches, mut writers) = caches();
        put_revision(
            &caches,
            &mut writers,
            &revision("blueprints", "v1", "Published", None),
        );
        server
            .lock()
            .unwrap()
            .files
            .insert("blueprints.web.v1".into(), blueprint());
        let variants = (0..variants)
            .map(|i| put_variant(&mut writers, &variant(i)))
            .collect();
        let watched: Arc<Mutex<Vec<(String, Gates)>>> = Arc::default();
        let overlaps: Arc<Mutex<Vec<String>>> = Arc::default();
        {
            let (watched, overlaps) = (watched.clone(), overlaps.clone());
            tokio::spawn(async move {
                loop {
                    let replicas = watched.lock().unwrap().clone();
                    let mut open: BTreeMap<u32, String> = BTreeMap::new();
                    for (id, gates) in &replicas {
                        for k in gates.held() {
                            if let Some(other) = open.insert(k, id.clone()) {
                                overlaps
                                    .lock()
                                    .unwrap()
                                    .push(format!("shard {k} open in {other} and {id}"));
                            }
                        }
                    }
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            });
        }
        Fleet {
            server,
            caches,
            writers,
            replicas: Vec::new(),
            watched,
            overlaps,
            variants,
        }
    }

    fn start(&mut self, id: &str) {
        self.start_split(id, SHARDS);
    }

    /// A replica splitting the objects into `shards`.
    fn start_split(&mut self, id: &str, shards: u32) {
        let r = start_shard_replica(&self.server, &self.caches, id, shards, DURATION, RENEW);
        self.watched
            .lock()
            .unwrap()
            .push((id.to_string(), r.gates.clone()));
        self.replicas.push(r);
    }

    /// Which replicas hold each shard.
    fn holders(&self) -> BTreeMap<u32, Vec<String>> {
        let mut out: BTreeMap<u32, Vec<String>> = (0..SHARDS).map(|k| (k, Vec::new())).collect();
        for r in &self.replicas {
            if r.task.is_finished() {
                continue;
            }
            for k in r.gates.held() {
                out.entry(k).or_default().push(r.id.clone());
            }
        }
        out
    }

    /// Waits until every shard is held by exactly one live replica, each
    /// holding at most `share`.
    async fn partitioned(&self, share: usize) -> Duration {
        let started = Instant::now();
        loop {
            let holders = self.holders();
            let once = holders.values().all(|h| h.len() == 1);
            let fair = self
                .replicas
                .iter()
                .filter(|r| !r.task.is_finished())
                .all(|r| r.gates.held().len() <= share && !r.gates.held().is_empty());
            if once && fair {
                return started.elapsed();
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "not partitioned: {holders:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits until replica `i` holds every shard (at most 20 s after
    /// `started`).
    async fn holds_every_shard(&self, i: usize, started: Instant) {
        let gates = &self.replicas[i].gates;
        while gates.held().len() < SHARDS as usize {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "{:?}",
                gates.held()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Delivers `pv` to every live replica's controller, as each
    /// replica's watch does; the actions.
    async fn reconcile_everywhere(&self, i: usize) -> Vec<(String, Result<Action, String>)> {
        let mut out = Vec::new();
        let handles: Vec<_> = self
            .replicas
            .iter()
            .filter(|r| !r.task.is_finished())
            .map(|r| {
                let (obj, ctx, id) = (self.variants[i].clone(), r.ctx.clone(), r.id.clone());
                tokio::spawn(async move {
                    let a = controller::reconcile_package_variant(obj, ctx)
                        .await
                        .map_err(|e| e.to_string());
                    (id, a)
                })
            })
            .collect();
        for h in handles {
            out.push(h.await.expect("joins"));
        }
        out
    }

    fn owner_of(&self, i: usize) -> String {
        let holders = self.holders();
        let k = shard::shard_of(NS, &format!("pv-{i}"), SHARDS);
        holders[&k].first().cloned().unwrap_or_default()
    }

    /// The requests other than Leases', in order.
    fn writes(&self) -> Vec<Call> {
        history(&self.server)
            .into_iter()
            .filter(|c| !c.uri.contains("/leases") && c.method != "GET")
            .collect()
    }

    fn assert_no_overlap(&self) {
        let o = self.overlaps.lock().unwrap();
        assert!(o.is_empty(), "a shard was open in two replicas: {o:?}");
    }
}

fn reconciles(r: &Replica) -> u64 {
    (0..SHARDS)
        .map(|shard| {
            r.metrics
                .shard_reconciles
                .get_or_create(&ShardLabels {
                    controller: "packagevariants".into(),
                    shard,
                })
                .get()
        })
        .sum()
}

fn draft_of(i: usize) -> String {
    format!("edge-{i}.web.packagevariant-1")
}

/// Three replicas split the shards between them, and a fleet of 30
/// variants, each delivered to every replica, is reconciled once: one
/// draft per variant, every write about a variant made by the replica
/// holding its shard.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_replicas_split_the_fleet_and_reconcile_each_variant_once() {
    let mut f = Fleet::new(30);
    for id in ["r-0", "r-1", "r-2"] {
        f.start(id);
    }
    f.partitioned(4).await;
    for i in 0..30 {
        for (id, action) in f.reconcile_everywhere(i).await {
            assert_eq!(action, Ok(Action::await_change()), "pv-{i} on {id}");
        }
    }
    let writes = f.writes();
    for i in 0..30 {
        let owner = f.owner_of(i);
        let posts: Vec<&Call> = writes
            .iter()
            .filter(|c| c.method == "POST" && c.body["spec"]["repository"] == format!("edge-{i}"))
            .collect();
        assert_eq!(posts.len(), 1, "pv-{i}: {posts:#?}");
        assert_eq!(posts[0].client, owner, "pv-{i}");
        let about: Vec<&Call> = writes
            .iter()
            .filter(|c| {
                c.uri.contains(&format!("{PV_PATH}/pv-{i}/"))
                    || c.uri.contains(&format!("{PRR_PATH}/{}", draft_of(i)))
            })
            .collect();
        assert_eq!(about.len(), 2, "pv-{i}: the resources and the status");
        assert!(
            about.iter().all(|c| c.client == owner),
            "pv-{i}: {about:#?}"
        );
        let files = f.server.lock().unwrap().files[&draft_of(i)].clone();
        assert!(
            files["package-context.yaml"].contains(&format!("region: region-{i}")),
            "pv-{i}"
        );
    }
    let total: u64 = f.replicas.iter().map(reconciles).sum();
    assert_eq!(total, 30, "each variant reconciled once");
    for r in &f.replicas {
        assert!(reconciles(r) > 0, "{} reconciled nothing", r.id);
    }
    assert!(!writes
        .iter()
        .any(|c| c.uri.starts_with(PR_PATH) && c.method != "POST"));
    f.assert_no_overlap();
}

/// A replica dies in the middle of a reconcile, after its draft was
/// created and before the mutated resources were written. Its shards are
/// taken over within the Lease duration (plus a round or two), and the
/// replica now holding the variant finishes the reconcile: the same
/// draft, its resources written, no second draft.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_killed_replicas_share_is_taken_over_with_no_duplicate_draft_and_no_lost_write() {
    let mut f = Fleet::new(12);
    for id in ["r-0", "r-1", "r-2"] {
        f.start(id);
    }
    f.partitioned(4).await;
    let i = 0;
    let victim = f.owner_of(i);
    let v = f.replicas.iter().position(|r| r.id == victim).unwrap();
    let post = format!("POST {PR_PATH}");
    f.server.lock().unwrap().held.insert(post.clone());
    let reconcile = tokio::spawn(controller::reconcile_package_variant(
        f.variants[i].clone(),
        f.replicas[v].ctx.clone(),
    ));
    while !lines(&f.server).contains(&post) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // SIGKILL: the process and its requests stop; its Leases are not
    // released. The draft's creation reached the API server.
    let killed_at = Instant::now();
    f.replicas[v].task.abort();
    reconcile.abort();
    while !f.replicas[v].task.is_finished() {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    f.server.lock().unwrap().cut_off.insert(victim.clone());
    f.server.lock().unwrap().held.remove(&post);
    let victims_shards: BTreeSet<u32> = (0..SHARDS).filter(|k| f.holders()[k].is_empty()).collect();
    assert!(!victims_shards.is_empty());
    // porch-server cloned the upstream into it; the watch brings the
    // draft to the survivors.
    f.server
        .lock()
        .unwrap()
        .files
        .insert(draft_of(i), blueprint());
    let mut draft = revision(
        &format!("edge-{i}"),
        "packagevariant-1",
        "Draft",
        Some("pv-0"),
    );
    let created = f
        .writes()
        .into_iter()
        .find(|c| c.method == "POST")
        .expect("the draft's creation");
    draft.spec.tasks =
        serde_json::from_value(created.body["spec"]["tasks"].clone()).expect("tasks");
    put_revision(&f.caches, &mut f.writers, &draft);
    let took = f.partitioned(6).await;
    let took_over = killed_at.elapsed();
    assert!(
        took_over < DURATION + RENEW * 6,
        "taken over after {took_over:?} (waited {took:?})"
    );
    for (id, action) in f.reconcile_everywhere(i).await {
        assert_eq!(action, Ok(Action::await_change()), "{id}");
    }
    let heir = f.owner_of(i);
    assert_ne!(heir, victim);
    let writes = f.writes();
    let posts = writes
        .iter()
        .filter(|c| c.method == "POST" && c.body["spec"]["repository"] == "edge-0")
        .count();
    assert_eq!(posts, 1, "no second draft");
    let by_heir: Vec<String> = writes
        .iter()
        .filter(|c| c.client == heir)
        .map(Call::line)
        .collect();
    assert_eq!(
        by_heir,
        [
            format!("PUT {PRR_PATH}/{}", draft_of(i)),
            format!("PATCH {PV_PATH}/pv-{i}/status"),
        ]
    );
    let files = f.server.lock().unwrap().files[&draft_of(i)].clone();
    assert!(files["package-context.yaml"].contains("region: region-0"));
    f.assert_no_overlap();
}

/// A fourth replica joins: the others give up what is over their new
/// share, it takes that, and no replica restarts.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_replica_added_takes_a_share_and_the_others_keep_running() {
    let mut f = Fleet::new(0);
    for id in ["r-0", "r-1", "r-2"] {
        f.start(id);
    }
    f.partitioned(4).await;
    let before: Vec<BTreeSet<u32>> = f.replicas.iter().map(|r| r.gates.held()).collect();
    f.start("r-3");
    f.partitioned(3).await;
    for (r, had) in f.replicas.iter().zip(&before) {
        assert!(!r.task.is_finished(), "{} stopped", r.id);
        assert_eq!(r.gates.held().len(), 3, "{}", r.id);
        // Rendezvous: a replica keeps shards it had; it only gives up.
        assert!(
            r.gates.held().is_subset(had),
            "{}: {had:?} then {:?}",
            r.id,
            r.gates.held()
        );
    }
    assert_eq!(f.replicas[3].gates.held().len(), 3);
    f.assert_no_overlap();
}

/// A replica cut off from the API server keeps running but cannot renew:
/// its gates close before any other replica may open them, and once the
/// partition heals it takes a share again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_partitioned_replica_stops_writing_before_its_shards_move() {
    let mut f = Fleet::new(0);
    for id in ["r-0", "r-1", "r-2"] {
        f.start(id);
    }
    f.partitioned(4).await;
    f.server.lock().unwrap().cut_off.insert("r-1".into());
    let started = Instant::now();
    while !f.replicas[1].gates.held().is_empty() {
        assert!(started.elapsed() < DURATION * 2, "r-1 kept its gates open");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    assert!(
        started.elapsed() <= DURATION,
        "closed after {:?}",
        started.elapsed()
    );
    // The others take its shards.
    loop {
        let holders = f.holders();
        if holders.values().all(|h| h.len() == 1) {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "{holders:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    f.server.lock().unwrap().cut_off.clear();
    f.partitioned(4).await;
    assert!(!f.replicas[1].gates.held().is_empty());
    f.assert_no_overlap();
    for r in &f.replicas {
        r.stop.send_replace(true);
    }
}

/// What a reconcile on a replica that does not hold the shard does: no
/// request, and it waits for a change (the replica that takes the shard
/// reconciles everything in it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_variant_of_another_replicas_shard_makes_no_request() {
    let mut f = Fleet::new(1);
    f.start("r-0");
    let r = &f.replicas[0];
    assert!(
        r.gates.held().is_empty(),
        "no shard before the second round"
    );
    let action = controller::reconcile_package_variant(f.variants[0].clone(), r.ctx.clone())
        .await
        .expect("reconcile");
    assert_eq!(action, Action::await_change());
    assert!(f.writes().is_empty());
    f.replicas[0].stop.send_replace(true);
    f.replicas.clear();
}

/// A reconcile that fails is counted in its shard's queue depth, and the
/// count goes once it succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_reconcile_is_counted_in_its_shards_queue_depth() {
    let mut f = Fleet::new(1);
    f.start("r-0");
    f.partitioned(SHARDS as usize).await;
    let post = format!("POST {PR_PATH}");
    f.server.lock().unwrap().fail.insert(post.clone());
    let r = &f.replicas[0];
    let pv = f.variants[0].clone();
    let e = controller::reconcile_package_variant(pv.clone(), r.ctx.clone())
        .await
        .expect_err("the create fails");
    controller::package_variant_error_policy(pv.clone(), &e, r.ctx.clone());
    let labels = ShardLabels {
        controller: "packagevariants".into(),
        shard: shard::shard_of(NS, "pv-0", SHARDS),
    };
    let depth = |m: &Metrics| m.shard_queue_depth.get(&labels).map(|g| g.get());
    assert_eq!(depth(&r.metrics), Some(1));
    f.server.lock().unwrap().fail.remove(&post);
    controller::reconcile_package_variant(pv, r.ctx.clone())
        .await
        .expect("the retry succeeds");
    assert_eq!(depth(&r.metrics), Some(0));
    r.stop.send_replace(true);
}

/// A Lease as another process keeps it: held by `holder`, renewed now.
fn foreign_lease(name: &str, holder: &str) -> serde_json::Value {
    json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
           "metadata": {"name": name, "namespace": NS, "resourceVersion": "1"},
           "spec": {"holderIdentity": holder, "leaseDurationSeconds": 2,
                    "renewTime": "2026-01-01T00:00:00.000000Z"}})
}

/// Renews `name` as its holder would, every `RENEW`, until the handle is
/// aborted.
fn keep_renewing(server: &Shared, name: &str) -> tokio::task::JoinHandle<()> {
    let (server, name) = (server.clone(), name.to_string());
    tokio::spawn(async move {
        for i in 0u64.. {
            {
                let mut s = server.lock().unwrap();
                if let Some(l) = s.leases.get_mut(&name) {
                    l["spec"]["renewTime"] =
                        json!(format!("2026-01-01T00:00:{:02}.000000Z", i % 60));
                    l["metadata"]["resourceVersion"] = json!(format!("r{i}"));
                }
            }
            tokio::time::sleep(RENEW).await;
        }
    })
}

/// While a replica that is not sharded holds the leader Lease (a rolling
/// update from one leader to shards), no sharded replica holds a shard;
/// once that Lease expires, they split the shards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharded_replicas_wait_for_the_leader_lease() {
    let mut f = Fleet::new(0);
    f.server.lock().unwrap().leases.insert(
        "porch-variants".into(),
        foreign_lease("porch-variants", "old-leader"),
    );
    let leader = keep_renewing(&f.server, "porch-variants");
    f.start("r-0");
    f.start("r-1");
    tokio::time::sleep(DURATION * 2).await;
    assert!(f.holders().values().all(Vec::is_empty), "{:?}", f.holders());
    // The old leader is gone: its Lease expires.
    leader.abort();
    let took = f.partitioned(6).await;
    assert!(
        took >= DURATION / 2,
        "taken {took:?} after the leader stopped"
    );
    f.assert_no_overlap();
}

/// Replicas split into different numbers of shards (a change of
/// `--shards` rolling out) never both hold shards: each sees the other's
/// member Lease and holds none until it is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_split_another_way_hold_nothing_together() {
    let mut f = Fleet::new(0);
    f.start_split("old", 6);
    f.start_split("new", SHARDS);
    tokio::time::sleep(DURATION * 2).await;
    for r in &f.replicas {
        assert!(
            r.gates.held().is_empty(),
            "{} holds {:?}",
            r.id,
            r.gates.held()
        );
    }
    // The old one stops (its member Lease is released): the new one takes
    // every shard.
    f.replicas[0].stop.send_replace(true);
    let started = Instant::now();
    f.holds_every_shard(1, started).await;
}

/// A member that counts but never takes its share (its member Lease is
/// renewed, it holds no shard): after a Lease duration the shards it
/// should hold are taken by the others, beyond their share.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shards_a_stuck_member_never_takes_are_taken_by_the_others() {
    let mut f = Fleet::new(0);
    let stuck = format!("porch-variants-s{SHARDS}-member-stuck");
    f.server
        .lock()
        .unwrap()
        .leases
        .insert(stuck.clone(), foreign_lease(&stuck, "stuck"));
    let _renewing = keep_renewing(&f.server, &stuck);
    f.start("r-0");
    let started = Instant::now();
    f.holds_every_shard(0, started).await;
    assert!(
        started.elapsed() >= DURATION,
        "the orphans wait a Lease duration"
    );
    f.assert_no_overlap();
}

/// The shard rounds killed (a panic, an abort): their gates close, so a
/// reconcile still running stops at its next write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gates_close_when_the_rounds_die() {
    let mut f = Fleet::new(0);
    f.start("r-0");
    f.partitioned(SHARDS as usize).await;
    let gate = f.replicas[0].gates.gate(NS, "pv-0");
    assert!(*gate.borrow());
    f.replicas[0].task.abort();
    while !f.replicas[0].task.is_finished() {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert!(!*gate.borrow(), "the gate's last value is closed");
}
