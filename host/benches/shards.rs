//! A fleet of PackageVariants shared by five replicas (`--shards 64`),
//! and a blueprint change that every variant must follow.
//!
//! The fleet: one blueprint, published as v1 and then v2, and `n`
//! PackageVariants, each with its own published downstream cloned from
//! v1. Five replicas run their real shard rounds against one fake API
//! server that keeps Leases (`tests/kube_support`) until the 64 shards are
//! split between them; then every variant's event is delivered to every
//! replica, as each replica's watch delivers it, and each replica
//! reconciles the variants of its shards: one upgrade draft per variant.
//!
//! Printed per replica: the shards and variants it holds, the reconciles
//! it ran, its requests, and the time it took for its share (the
//! replicas run one after the other here; in a cluster they run at once,
//! so the fleet has converged when the slowest has). Also printed: the
//! memory of the caches, which every replica holds whole (why, in
//! docs/performance.md), and the time one replica alone takes for the
//! whole fleet.
//!
//! `cargo bench -p porch-variants --bench shards` runs 100,000 variants;
//! under `cargo test` it runs 1,000 and checks that every variant was
//! upgraded exactly once, by the replica holding its shard.

#[path = "../tests/kube_support/mod.rs"]
mod kube_support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kube_support::*;
use porch_variants::kube::controller;
use porch_variants::kube::metrics::Metrics;
use porch_variants::kube::shard;
use pv_core::api::{PackageRevision, PackageVariant};
use serde_json::json;

const NS: &str = "default";
const SHARDS: u32 = 64;
const REPLICAS: usize = 5;

const KPTFILE: &str =
    "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: web\ninfo:\n  description: web\n";
const CONTEXT: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kptfile.kpt.dev\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\ndata:\n  name: web\n";
const DEPLOY: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web # the blueprint's\nspec:\n  replicas: 2\n  template:\n    spec:\n      containers:\n      - name: web\n        image: web:1.0\n";

fn files(image: &str, site: Option<&str>) -> BTreeMap<String, String> {
    let context = match site {
        Some(site) => format!("{CONTEXT}  site: {site}\n"),
        None => CONTEXT.to_string(),
    };
    BTreeMap::from([
        ("Kptfile".to_string(), KPTFILE.to_string()),
        ("package-context.yaml".to_string(), context),
        (
            "deployment.yaml".to_string(),
            DEPLOY.replace("web:1.0", image),
        ),
    ])
}

fn published(repo: &str, ws: &str, revision: i64, owner: Option<usize>) -> PackageRevision {
    let name = format!("{repo}.web.{ws}");
    let mut v = json!({
        "apiVersion": "porch.kpt.dev/v1alpha1", "kind": "PackageRevision",
        "metadata": {"name": name, "namespace": NS, "uid": format!("uid-{name}"), "resourceVersion": "7"},
        "spec": {"packageName": "web", "repository": repo, "workspaceName": ws,
                 "revision": revision, "lifecycle": "Published"},
        "status": {"selfLock": {"type": "git", "git": {"repo": repo, "directory": "web",
                   "ref": format!("web/v{revision}"), "commit": "c0ffee"}}}
    });
    if let Some(i) = owner {
        v["metadata"]["ownerReferences"] = json!([{"apiVersion": "config.porch.kpt.dev/v1alpha1",
            "kind": "PackageVariant", "name": format!("pv-{i}"), "uid": format!("uid-pv-{i}"),
            "controller": true}]);
        v["status"]["upstreamLock"] = json!({"type": "git", "git": {"repo": "blueprints",
            "directory": "web", "ref": "web/v1", "commit": "c0ffee"}});
    }
    serde_json::from_value(v).expect("revision")
}

fn variant(i: usize) -> PackageVariant {
    fleet_variant(i, "site", &format!("edge-{i}"))
}

/// Resident memory of this process, in bytes.
fn resident() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

/// One replica's figures.
struct Row {
    id: String,
    shards: usize,
    owned: usize,
    reconciles: u64,
    requests: usize,
    drafts: usize,
    took: Duration,
}

async fn simulate(n: usize) -> (Vec<Row>, u64) {
    let server: Shared = Arc::new(Mutex::new(ServerState::default()));
    server.lock().expect("state").stateful_leases = true;
    let before = resident();
    let (caches, mut writers) = caches();
    let mut variants = Vec::with_capacity(n);
    {
        let mut s = server.lock().expect("state");
        s.files
            .insert("blueprints.web.v1".into(), files("web:1.0", None));
        s.files
            .insert("blueprints.web.v2".into(), files("web:2.0", None));
    }
    put_revision(
        &caches,
        &mut writers,
        &published("blueprints", "v1", 1, None),
    );
    for i in 0..n {
        let downstream = published(&format!("edge-{i}"), "v1", 1, Some(i));
        put_revision(&caches, &mut writers, &downstream);
        variants.push(put_variant(&mut writers, &variant(i)));
    }
    let cache_bytes = resident().saturating_sub(before);
    // What the API server holds: each downstream's files.
    for i in 0..n {
        server.lock().expect("state").files.insert(
            format!("edge-{i}.web.v1"),
            files("web:1.0", Some(&format!("edge-{i}"))),
        );
    }
    // The blueprint change.
    put_revision(
        &caches,
        &mut writers,
        &published("blueprints", "v2", 2, None),
    );

    let replicas: Vec<ShardReplica> = (0..REPLICAS)
        .map(|r| {
            start_shard_replica(
                &server,
                &caches,
                &format!("replica-{r}"),
                SHARDS,
                Duration::from_secs(60),
                Duration::from_millis(300),
            )
        })
        .collect();
    // Until the shards are split: each held once, at most a share each.
    let share = shard::share(SHARDS, REPLICAS);
    let started = Instant::now();
    loop {
        let mut held = vec![0usize; SHARDS as usize];
        for r in &replicas {
            for k in r.gates.held() {
                held[k as usize] += 1;
            }
        }
        let fair = replicas
            .iter()
            .all(|r| (1..=share).contains(&r.gates.held().len()));
        if held.iter().all(|h| *h == 1) && fair {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the shards were not split: {held:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let mut rows = Vec::new();
    for ShardReplica {
        id,
        gates,
        ctx,
        metrics,
        ..
    } in &replicas
    {
        let owned = variants
            .iter()
            .filter(|pv| gates.open(NS, &kube::ResourceExt::name_any(pv.as_ref())))
            .count();
        let t = Instant::now();
        let (mut requests, mut drafts) = (0usize, 0usize);
        let mut harness = Duration::ZERO;
        for pv in &variants {
            controller::reconcile_package_variant(pv.clone(), ctx.clone())
                .await
                .expect("reconcile");
            let feeding = Instant::now();
            // The recording is the harness's: taken and dropped at once.
            let made: Vec<Call> = {
                let mut s = server.lock().expect("state");
                s.history.clear();
                std::mem::take(&mut s.calls)
            };
            for call in made
                .iter()
                .filter(|c| &c.client == id && !c.uri.contains("/leases"))
            {
                requests += 1;
                if call.method == "POST" {
                    drafts += 1;
                    // The watch brings the draft: into the cache, and the
                    // replica's own record of the write ends.
                    let mut body = call.body.clone();
                    let name = format!(
                        "{}.web.{}",
                        body["spec"]["repository"].as_str().unwrap_or_default(),
                        body["spec"]["workspaceName"].as_str().unwrap_or_default()
                    );
                    body["metadata"]["name"] = json!(name);
                    body["metadata"]["resourceVersion"] = json!("8");
                    let draft: PackageRevision =
                        serde_json::from_value(body).expect("the created draft");
                    put_revision(&caches, &mut writers, &draft);
                    ctx.recent.revisions.observe(NS, &name, Some("8"));
                }
            }
            ctx.recent
                .variants
                .observe(NS, &kube::ResourceExt::name_any(pv.as_ref()), Some("8"));
            harness += feeding.elapsed();
        }
        // The replica's time: without the harness's recording and feeding.
        let took = t.elapsed().saturating_sub(harness);
        rows.push(Row {
            id: id.clone(),
            shards: gates.held().len(),
            owned,
            reconciles: metrics
                .reconciles
                .get_or_create(&Metrics::labels("packagevariants"))
                .get(),
            requests,
            drafts,
            took,
        });
    }
    for r in &replicas {
        r.stop.send_replace(true);
    }
    (rows, cache_bytes)
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let n = if bench { 100_000 } else { 1_000 };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let (rows, cache_bytes) = runtime.block_on(simulate(n));
    println!("{n} PackageVariants, {REPLICAS} replicas, {SHARDS} shards; blueprint v1 -> v2");
    println!(
        "| replica | shards held | variants owned | reconciles run | API requests | upgrade drafts | time for its share |"
    );
    println!("|---|---|---|---|---|---|---|");
    for r in &rows {
        println!(
            "| {} | {} | {} | {} | {} | {} | {:.2} s |",
            r.id,
            r.shards,
            r.owned,
            r.reconciles,
            r.requests,
            r.drafts,
            r.took.as_secs_f64(),
        );
    }
    let slowest = rows.iter().map(|r| r.took).max().unwrap_or_default();
    let alone: Duration = rows.iter().map(|r| r.took).sum();
    let (most, least) = (
        rows.iter().map(|r| r.owned).max().unwrap_or(0),
        rows.iter().map(|r| r.owned).min().unwrap_or(0),
    );
    println!(
        "caches (every replica holds all): {:.1} MiB; converged after {:.2} s (the slowest replica), one replica alone {:.2} s ({:.2}x); shares from {least} to {most} variants",
        mib(cache_bytes),
        slowest.as_secs_f64(),
        alone.as_secs_f64(),
        alone.as_secs_f64() / slowest.as_secs_f64().max(f64::MIN_POSITIVE),
    );
    // What the simulation must show.
    let drafts: usize = rows.iter().map(|r| r.drafts).sum();
    assert_eq!(drafts, n, "every variant upgraded once");
    for r in &rows {
        assert_eq!(r.drafts, r.owned, "{}: its own variants only", r.id);
        assert_eq!(r.reconciles as usize, r.owned, "{}", r.id);
        assert!(r.owned > 0, "{} owns nothing", r.id);
    }
    assert!(
        most <= least * 2,
        "shares from {least} to {most} variants are not balanced"
    );
}
