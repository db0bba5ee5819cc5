//! Steady-state cost of the Kubernetes-mode PackageVariant controller with
//! `--porch-api v1alpha2`, for fleets of 1,000 and 10,000 variants (100
//! under `cargo test`), against the fake API server and real Git.
//!
//! Each fleet is one published blueprint in Git and `n` variants, each with
//! its own downstream Repository (a bare Git repository) holding the
//! variant's published package, cloned from the blueprint, and the
//! v1alpha2 PackageRevision objects the Repository controller would keep
//! for them, in the watch cache. A sample of the variants is reconciled
//! twice: the first reconcile writes the variant's status (fed back into
//! the cache as the watch would), the second has nothing to do. Per
//! reconcile the bench counts the API requests (the second must make none:
//! no LIST, no write) and times it; a reconcile's cost must not grow with
//! the fleet.
//!
//! `cargo bench -p porch-variants --bench v1alpha2_calls` prints the table;
//! `PV_BENCH_SIZES=1000,10000` and `PV_BENCH_SAMPLE=200` change the fleets
//! and the variants reconciled.

#[path = "../tests/kube_support/mod.rs"]
mod kube_support;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use kube_support::*;
use porch_variants::kube::controller::{self, Context};
use porch_variants::local::cli::publish_files;
use porch_variants::store::git::{init_bare, GitRepoConfig, GitRevisions};
use porch_variants::store::{PackageRevisionStore, PrFilter};
use pv_core::api::PackageVariant;
use serde_json::json;

const NS: &str = "default";

const KPTFILE: &str = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: web\ninfo:\n  description: web\npipeline:\n  mutators:\n  - image: set-labels:v1\n    configMap:\n      app: web\n";
const CONTEXT: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kptfile.kpt.dev\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\ndata:\n  name: web\n";
const DEPLOY: &str =
    "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  labels:\n    app: web\nspec:\n  replicas: 2\n";

fn store(root: &Path, names: &[&str]) -> GitRevisions {
    GitRevisions::open(
        names
            .iter()
            .map(|r| GitRepoConfig {
                name: r.to_string(),
                namespace: NS.into(),
                path: root.join(r),
                branch: "main".into(),
                directory: String::new(),
            })
            .collect(),
    )
    .expect("the repositories open")
}

fn repository(name: &str) -> pv_core::variantset::Repository {
    serde_json::from_value(json!({
        "apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "Repository",
        "metadata": {"name": name, "namespace": NS, "uid": format!("uid-{name}")},
        "spec": {"type": "git", "git": {"repo": name, "branch": "main"}},
    }))
    .expect("repository")
}

fn variant(i: usize) -> PackageVariant {
    serde_json::from_value(json!({
        "apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "PackageVariant",
        "metadata": {"name": format!("pv-{i}"), "namespace": NS, "uid": format!("uid-pv-{i}"),
                     "resourceVersion": "3", "finalizers": ["config.porch.kpt.dev/packagevariants"]},
        "spec": {
            "upstream": {"repo": "blueprints", "package": "web"},
            "downstream": {"repo": format!("edge-{i}"), "package": "web"},
        }
    }))
    .expect("variant")
}

struct Fleet {
    server: Shared,
    ctx: Arc<Context>,
    writers: CacheWriters,
    _root: tempfile::TempDir,
}

/// `n` variants, each with its published downstream in its own repository.
fn fleet(n: usize) -> Fleet {
    let server: Shared = Arc::new(Mutex::new(ServerState::default()));
    let client = fake_client(server.clone());
    let root = tempfile::tempdir().expect("temp dir");
    let (caches, mut writers) = caches();
    let mut v2 = V2Cache::default();

    init_bare(&root.path().join("blueprints"), "main").expect("blueprints");
    put_repository(&mut writers, &repository("blueprints"));
    let files = BTreeMap::from([
        ("Kptfile".to_string(), KPTFILE.to_string()),
        ("package-context.yaml".to_string(), CONTEXT.to_string()),
        ("deployment.yaml".to_string(), DEPLOY.to_string()),
    ]);
    let blueprints = store(root.path(), &["blueprints"]);
    publish_files(
        &blueprints,
        NS,
        "blueprints",
        "web",
        "v1",
        files.clone(),
        "init",
    )
    .expect("blueprint");
    let up_lock = blueprints
        .list(NS, &PrFilter::package("blueprints", "web"))
        .expect("blueprint listed")
        .remove(0)
        .status
        .self_lock;
    v2.put(json!({
        "apiVersion": "porch.kpt.dev/v1alpha2", "kind": "PackageRevision",
        "metadata": {"name": "blueprints.web.v1", "namespace": NS, "resourceVersion": "1",
                     "labels": {"porch.kpt.dev/latest-revision": "true"}},
        "spec": {"packageName": "web", "repository": "blueprints", "workspaceName": "v1",
                 "lifecycle": "Published"},
        "status": {"revision": 1, "selfLock": up_lock},
    }));
    let mut downstream = files;
    downstream.insert(
        "Kptfile".into(),
        KPTFILE.to_string()
            + "upstream:\n  type: git\n  git:\n    repo: blueprints\n    directory: web\n    ref: web/v1\n  updateStrategy: resource-merge\nupstreamLock:\n  type: git\n  git:\n    repo: blueprints\n    directory: web\n    ref: web/v1\n    commit: c0ffee\n",
    );
    for i in 1..=n {
        let repo = format!("edge-{i}");
        init_bare(&root.path().join(&repo), "main").expect("downstream repository");
        put_repository(&mut writers, &repository(&repo));
        let git = store(root.path(), &[&repo]);
        publish_files(&git, NS, &repo, "web", "v1", downstream.clone(), "init")
            .expect("downstream");
        let name = format!("{repo}.web.v1");
        let mut owned = pv_core::api::ObjectMeta::default();
        owned.owner_references.push(pv_core::api::OwnerReference {
            api_version: "config.porch.kpt.dev/v1alpha1".into(),
            kind: "PackageVariant".into(),
            name: format!("pv-{i}"),
            uid: format!("uid-pv-{i}"),
            controller: Some(true),
            ..Default::default()
        });
        git.update_metadata(NS, &name, &owned)
            .expect("owner in Git");
        let lock = git.get(NS, &name).expect("published").status.self_lock;
        v2.put(json!({
                "apiVersion": "porch.kpt.dev/v1alpha2", "kind": "PackageRevision",
                "metadata": {"name": name, "namespace": NS, "resourceVersion": "3",
                    "labels": {"porch.kpt.dev/latest-revision": "true"},
                    "ownerReferences": [
                        {"apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "Repository",
                         "name": repo, "uid": format!("uid-{repo}")},
                        {"apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "PackageVariant",
                         "name": format!("pv-{i}"), "uid": format!("uid-pv-{i}"), "controller": true}]},
                "spec": {"packageName": "web", "repository": repo, "workspaceName": "v1",
                         "lifecycle": "Published"},
                "status": {"revision": 1, "selfLock": lock,
                           "upstreamLock": {"type": "git", "git": {"repo": "blueprints", "directory": "web",
                                             "ref": "web/v1", "commit": "c0ffee"}}},
            }),
        );
        put_variant(&mut writers, &variant(i));
    }

    let (ctx, _prc) = v1alpha2_contexts(client, caches, &v2, root.path());
    std::mem::forget(v2);
    Fleet {
        server,
        ctx,
        writers,
        _root: root,
    }
}

/// One fleet's figures, per reconcile of the sample.
struct Figures {
    variants: usize,
    sample: usize,
    first_requests: f64,
    first_writes: f64,
    noop_requests: usize,
    noop_lists: usize,
    noop_writes: usize,
    first_micros: f64,
    noop_micros: f64,
}

async fn measure(n: usize, sample: usize) -> Figures {
    let mut f = fleet(n);
    let step = (n / sample.max(1)).max(1);
    let picked: Vec<usize> = (1..=n).step_by(step).take(sample).collect();
    clear(&f.server);

    let started = Instant::now();
    let mut settled = Vec::with_capacity(picked.len());
    for &i in &picked {
        let pv = variant(i);
        let obj = put_variant(&mut f.writers, &pv);
        controller::reconcile_package_variant(obj, f.ctx.clone())
            .await
            .expect("first reconcile");
        let status = calls(&f.server)
            .iter()
            .rev()
            .find(|c| c.method == "PATCH" && c.uri.contains("/status"))
            .map(|c| c.body["status"].clone());
        let mut stored = pv;
        if let Some(status) = status {
            stored.status = serde_json::from_value(status).expect("applied status");
        }
        stored.metadata.resource_version = "4".into();
        settled.push(stored);
    }
    let first_micros = started.elapsed().as_secs_f64() * 1e6 / picked.len() as f64;
    let first = calls(&f.server);
    clear(&f.server);
    for pv in &settled {
        put_variant(&mut f.writers, pv);
    }

    let started = Instant::now();
    for pv in &settled {
        let obj = put_variant(&mut f.writers, pv);
        controller::reconcile_package_variant(obj, f.ctx.clone())
            .await
            .expect("no-op reconcile");
    }
    let noop_micros = started.elapsed().as_secs_f64() * 1e6 / picked.len() as f64;
    let noop = calls(&f.server);
    Figures {
        variants: n,
        sample: picked.len(),
        first_requests: first.len() as f64 / picked.len() as f64,
        first_writes: first.iter().filter(|c| c.method != "GET").count() as f64
            / picked.len() as f64,
        noop_requests: noop.len(),
        noop_lists: noop
            .iter()
            .filter(|c| {
                c.method == "GET" && !c.uri.contains("/namespaces/default/packagevariants/")
            })
            .count(),
        noop_writes: noop.iter().filter(|c| c.method != "GET").count(),
        first_micros,
        noop_micros,
    }
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let sizes: Vec<usize> = match std::env::var("PV_BENCH_SIZES") {
        Ok(s) => s
            .split(',')
            .map(|n| n.trim().parse().expect("PV_BENCH_SIZES: numbers"))
            .collect(),
        Err(_) if bench => vec![1_000, 10_000],
        Err(_) => vec![100],
    };
    let sample: usize = std::env::var("PV_BENCH_SAMPLE")
        .ok()
        .map(|s| s.parse().expect("PV_BENCH_SAMPLE: a number"))
        .unwrap_or(if bench { 200 } else { 20 });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    println!("Kubernetes mode, --porch-api v1alpha2: per reconcile of a sample of the fleet.");
    println!(
        "| variants (repositories) | sample | first reconcile: requests / writes | µs | no-op reconcile: requests / reads / writes | µs |"
    );
    println!("|---|---|---|---|---|---|");
    let mut rows = Vec::new();
    for &n in &sizes {
        let f = runtime.block_on(measure(n, sample));
        println!(
            "| {} ({}) | {} | {:.2} / {:.2} | {:.0} | {} / {} / {} | {:.0} |",
            f.variants,
            f.variants + 1,
            f.sample,
            f.first_requests,
            f.first_writes,
            f.first_micros,
            f.noop_requests,
            f.noop_lists,
            f.noop_writes,
            f.noop_micros
        );
        assert_eq!(
            f.noop_requests, 0,
            "a no-op reconcile makes no request (no LIST, no write)"
        );
        rows.push(f);
    }
    if let [a, b, ..] = rows.as_slice() {
        assert_eq!(
            a.first_requests, b.first_requests,
            "requests per reconcile are the same at every size"
        );
        println!(
            "\nno-op reconcile at {} against {} variants: {:.2}x the time",
            b.variants,
            a.variants,
            b.noop_micros / a.noop_micros
        );
    }
}
