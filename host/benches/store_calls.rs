//! Steady-state cost of the Kubernetes-mode PackageVariant controller for
//! fleets of 100, 1,000 and 10,000 variants, against upstream Porch's
//! algorithm replayed on the same caches.
//!
//! Each fleet is one published blueprint and `n` PackageVariants, each with
//! its own downstream package. Every variant is first reconciled against a
//! fake API server (`tests/kube_support`: kube's client over a mock service
//! that records every request), and its draft and status are fed back into
//! the caches as the watches would. Then, in one run:
//!
//! * **ours**: every variant is reconciled once more (a resync). The figures
//!   are the API requests recorded, the cached PackageRevisions each
//!   reconcile reads (through the repository/package and owner indexes), and
//!   the variants one downstream PackageRevision event enqueues
//!   (`package_variants_of_revision`).
//! * **upstream**: Porch's `packagevariant_controller.go` per reconcile lists
//!   every PackageRevision of the namespace from its informer cache, GETs
//!   the PackageRevisionResources of every downstream (uncached), and always
//!   updates the status; a PackageRevision event enqueues every
//!   PackageVariant of the namespace. The bench walks the same caches that
//!   way and counts.
//!
//! `cargo bench -p porch-variants --bench store_calls` prints the table;
//! under `cargo test` (no `--bench` argument) it runs the 100-variant fleet
//! only and checks the figures it prints.

#[path = "../tests/kube_support/mod.rs"]
mod kube_support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use kube::ResourceExt;
use kube_support::*;
use porch_variants::kube::api::{KubeResource, PackageRevision as KubePr};
use porch_variants::kube::controller::{self, package_variants_of_revision, Context};
use pv_core::api::{PackageRevision, PackageVariant};
use serde_json::{json, Value};

const NS: &str = "default";

const KPTFILE: &str = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: web\ninfo:\n  description: web\npipeline:\n  mutators:\n  - image: set-labels:v1\n";
const CONTEXT: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kptfile.kpt.dev\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\ndata:\n  name: web\n";
const DEPLOY: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web # the blueprint's\nspec:\n  replicas: 2\n  template:\n    spec:\n      containers:\n      - name: web\n        image: web:1.0\n";

/// The blueprint `blueprints/web` v1, published.
fn blueprint() -> (PackageRevision, BTreeMap<String, String>) {
    let pr = serde_json::from_value(json!({
        "apiVersion": "porch.kpt.dev/v1alpha1", "kind": "PackageRevision",
        "metadata": {"name": "blueprints.web.v1", "namespace": NS, "uid": "uid-blueprint", "resourceVersion": "7"},
        "spec": {"packageName": "web", "repository": "blueprints", "workspaceName": "v1",
                 "revision": 1, "lifecycle": "Published"},
        "status": {"selfLock": {"type": "git", "git": {"repo": "blueprints", "directory": "web", "ref": "web/v1", "commit": "c0ffee"}}}
    }))
    .expect("blueprint revision");
    let files = BTreeMap::from([
        ("Kptfile".to_string(), KPTFILE.to_string()),
        ("package-context.yaml".to_string(), CONTEXT.to_string()),
        ("deployment.yaml".to_string(), DEPLOY.to_string()),
    ]);
    (pr, files)
}

fn variant(i: usize) -> PackageVariant {
    fleet_variant(i, "site", &format!("edge-{i}"))
}

/// A fleet whose every variant has its draft: caches, fake server, stored
/// variants and their drafts.
struct Fleet {
    server: Shared,
    ctx: Arc<Context>,
    writers: CacheWriters,
    variants: Vec<PackageVariant>,
    drafts: Vec<PackageRevision>,
}

impl Fleet {
    async fn new(n: usize) -> Fleet {
        let server: Shared = Arc::new(Mutex::new(ServerState::default()));
        let (caches, mut writers) = caches();
        let ctx = context(fake_client(server.clone()), caches);
        let (bp, files) = blueprint();
        put_revision(&ctx.caches, &mut writers, &bp);
        server
            .lock()
            .expect("state")
            .files
            .insert(bp.metadata.name.clone(), files);
        let mut fleet = Fleet {
            server,
            ctx,
            writers,
            variants: Vec::with_capacity(n),
            drafts: Vec::with_capacity(n),
        };
        for i in 1..=n {
            fleet.create(variant(i)).await;
        }
        fleet
    }

    /// The first reconcile of `pv`; its draft and status go back into the
    /// caches as the watches would deliver them.
    async fn create(&mut self, pv: PackageVariant) {
        let obj = put_variant(&mut self.writers, &pv);
        controller::reconcile_package_variant(obj, self.ctx.clone())
            .await
            .expect("first reconcile");
        let calls = calls(&self.server);
        clear(&self.server);
        let post = calls
            .iter()
            .find(|c| c.method == "POST")
            .expect("the first reconcile creates a draft");
        // As Porch serves the draft: named, with its locks.
        let mut body = post.body.clone();
        let name = format!(
            "{}.web.{}",
            body["spec"]["repository"].as_str().unwrap_or_default(),
            body["spec"]["workspaceName"].as_str().unwrap_or_default()
        );
        body["metadata"]["name"] = json!(name);
        body["metadata"]["uid"] = json!(format!("uid-{name}"));
        body["metadata"]["resourceVersion"] = json!("7");
        body["status"] = json!({
            "selfLock": {"type": "git", "git": {"repo": body["spec"]["repository"], "directory": "web",
                         "ref": format!("drafts/web/{}", body["spec"]["workspaceName"].as_str().unwrap_or_default()),
                         "commit": "c0ffee"}},
            "upstreamLock": {"type": "git", "git": {"repo": "blueprints", "directory": "web", "ref": "web/v1", "commit": "c0ffee"}}
        });
        let draft: PackageRevision = serde_json::from_value(body).expect("the created draft");
        put_revision(&self.ctx.caches, &mut self.writers, &draft);
        let status = calls
            .iter()
            .rev()
            .find(|c| c.method == "PATCH" && c.uri.contains("/status"))
            .map(|c| c.body["status"].clone())
            .unwrap_or(Value::Null);
        let mut stored = pv;
        stored.status = serde_json::from_value(status).expect("applied status");
        put_variant(&mut self.writers, &stored);
        self.variants.push(stored);
        self.drafts.push(draft);
    }
}

/// One fleet's figures.
#[derive(Debug, Default)]
struct Figures {
    variants: usize,
    /// Ours: API requests, writes and cached revisions read in the resync.
    requests: usize,
    writes: usize,
    revisions_read: usize,
    /// Ours: variants one downstream revision event enqueues.
    enqueued: usize,
    /// Ours: wall time of the resync, per reconcile (µs).
    micros_per_reconcile: f64,
    /// Upstream's algorithm on the same caches.
    up_requests: usize,
    up_writes: usize,
    up_revisions_read: usize,
    up_enqueued: usize,
}

async fn measure(n: usize) -> Figures {
    let mut fleet = Fleet::new(n).await;
    let caches = fleet.ctx.caches.clone();
    let mut f = Figures {
        variants: n,
        ..Figures::default()
    };

    // Ours: a resync of every variant.
    let started = Instant::now();
    for pv in fleet.variants.clone() {
        let obj = put_variant(&mut fleet.writers, &pv);
        controller::reconcile_package_variant(obj, fleet.ctx.clone())
            .await
            .expect("steady reconcile");
    }
    f.micros_per_reconcile = started.elapsed().as_secs_f64() * 1e6 / n as f64;
    let resync = calls(&fleet.server);
    f.requests = resync.len();
    f.writes = resync.iter().filter(|c| c.method != "GET").count();
    for pv in &fleet.variants {
        let index = &caches.revision_index;
        f.revisions_read += index.by_owner(&pv.metadata.uid).len();
        for (repo, pkg) in [
            pv.spec.upstream.as_ref().map(|u| (&u.repo, &u.package)),
            pv.spec.downstream.as_ref().map(|d| (&d.repo, &d.package)),
        ]
        .into_iter()
        .flatten()
        {
            f.revisions_read += index.by_package(NS, repo, pkg).len();
        }
    }
    let event = KubePr::from_core(&fleet.drafts[n / 2]).expect("revision converts");
    f.enqueued = package_variants_of_revision(&caches, &event).len();

    // Upstream's algorithm, walking the same caches.
    for pv in &fleet.variants {
        let all: Vec<_> = caches
            .revisions
            .state()
            .into_iter()
            .filter(|pr| pr.namespace().as_deref() == Some(NS))
            .collect();
        f.up_revisions_read += all.len();
        let owned = all
            .iter()
            .filter(|pr| {
                pr.owner_references()
                    .iter()
                    .any(|o| o.uid == pv.metadata.uid)
            })
            .count();
        // One uncached GET of each downstream's resources, one status update.
        f.up_requests += owned + 1;
        f.up_writes += 1;
    }
    f.up_enqueued = caches
        .package_variants
        .state()
        .iter()
        .filter(|pv| {
            pv.namespace().as_deref() == Some(event.namespace().unwrap_or_default().as_str())
        })
        .count();
    f
}

fn per(total: usize, n: usize) -> f64 {
    total as f64 / n as f64
}

/// One row of the table (ours / upstream, and their ratio where it grows).
fn print(f: &Figures) {
    let n = f.variants;
    let event = |total: usize, reconciles: usize| per(total, n) * reconciles as f64;
    let (req_ev, up_req_ev) = (
        event(f.requests, f.enqueued),
        event(f.up_requests, f.up_enqueued),
    );
    let (read_ev, up_read_ev) = (
        event(f.revisions_read, f.enqueued),
        event(f.up_revisions_read, f.up_enqueued),
    );
    println!(
        "| {n} | {:.0} / {:.0} | {:.0} / {:.0} | {:.0} / {:.0} | {} / {} | {:.0} / {:.0} ({:.0}x) | {:.0} / {:.0} ({:.0}x) | {:.0} |",
        per(f.requests, n),
        per(f.up_requests, n),
        per(f.writes, n),
        per(f.up_writes, n),
        per(f.revisions_read, n),
        per(f.up_revisions_read, n),
        f.enqueued,
        f.up_enqueued,
        req_ev,
        up_req_ev,
        up_req_ev / req_ev,
        read_ev,
        up_read_ev,
        up_read_ev / read_ev,
        f.micros_per_reconcile,
    );
}

/// What the figures must show (checked under `cargo test`).
fn check(f: &Figures) {
    let n = f.variants;
    assert_eq!(f.writes, 0, "a resync of a converged fleet writes nothing");
    assert_eq!(
        f.requests, n,
        "one uncached GET of the draft's resources each"
    );
    assert_eq!(f.enqueued, 1, "a downstream event reaches its one owner");
    assert_eq!(f.up_enqueued, n);
    assert_eq!(f.up_revisions_read, n * (n + 1));
    assert_eq!(f.up_requests, 2 * n);
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let sizes: &[usize] = if bench { &[100, 1_000, 10_000] } else { &[100] };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    println!("Steady state, Kubernetes mode: ours / upstream's algorithm on the same caches.");
    println!(
        "| variants | API requests per reconcile | writes per reconcile | revisions read per reconcile \
         | reconciles per downstream event | API requests per event | revisions read per event \
         | ours, µs per reconcile |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for &n in sizes {
        let figures = runtime.block_on(measure(n));
        print(&figures);
        check(&figures);
    }
}
