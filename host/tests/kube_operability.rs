//! Operability of the controller: `/healthz`, `/readyz` (ready only after
//! the caches synced) and `/metrics`; leader election on a Lease (only the
//! holder writes; a replica that is not the leader makes no request).

mod kube_support;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use kube_support::*;
use porch_variants::kube::controller::{self, Context};
use porch_variants::kube::health::{self, HealthState};
use porch_variants::kube::leader::{self, LeaseConfig};
use porch_variants::kube::metrics::{self, Metrics};
use prometheus_client::registry::Registry;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;

async fn get(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let request = format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut response = String::new();
    stream.read_to_string(&mut response).await.expect("read");
    let code = response
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (code, body)
}

#[tokio::test]
async fn health_endpoints_report_liveness_readiness_and_metrics() {
    let mut registry = Registry::default();
    let metrics = Metrics::register(&mut registry);
    metrics
        .reconciles
        .get_or_create(&Metrics::labels("packagevariants"))
        .inc();
    // The core's running total, reported by reconciles in any order.
    metrics.record_fuel(Some(100));
    metrics.record_fuel(Some(40));
    metrics.record_fuel(None);
    let state = Arc::new(HealthState {
        ready: Default::default(),
        registry,
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (stop_tx, mut stop_rx) = watch::channel(false);
    let server = tokio::spawn(health::serve_listener(
        listener,
        state.clone(),
        async move {
            let _ = stop_rx.wait_for(|s| *s).await;
        },
    ));
    assert_eq!(get(addr, "/healthz").await.0, 200);
    assert_eq!(get(addr, "/readyz").await.0, 503);
    state.ready.store(true, Ordering::Release);
    assert_eq!(get(addr, "/readyz").await.0, 200);
    let (code, body) = get(addr, "/metrics").await;
    assert_eq!(code, 200);
    assert!(
        body.contains("porch_variants_reconciles_total{controller=\"packagevariants\"} 1"),
        "{body}"
    );
    assert!(
        body.contains("porch_variants_component_fuel_total 100\n"),
        "{body}"
    );
    stop_tx.send(true).expect("stop");
    server.await.expect("join").expect("serve");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_that_does_not_lead_makes_no_request() {
    let server: Shared = Arc::new(Mutex::new(ServerState::default()));
    let (caches, mut writers) = caches();
    let (_tx, not_leader) = watch::channel(false);
    let ctx = Arc::new(Context::new(
        fake_client(server.clone()),
        caches,
        Arc::new(porch_variants::engine_api::NativeCore),
        Arc::new(Metrics::default()),
        not_leader,
    ));
    let pv: pv_core::api::PackageVariant = serde_json::from_value(json!({
        "apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "PackageVariant",
        "metadata": {"name": "pv1", "namespace": "default", "uid": "u1"},
        "spec": {"upstream": {"repo": "blueprints", "package": "web"},
                 "downstream": {"repo": "edge-1", "package": "web"}}
    }))
    .expect("pv");
    let obj = put_variant(&mut writers, &pv);
    let action = controller::reconcile_package_variant(obj, ctx.clone())
        .await
        .expect("reconcile");
    assert_eq!(
        action,
        kube::runtime::controller::Action::requeue(controller::NOT_LEADER_RETRY)
    );
    assert!(calls(&server).is_empty(), "{:?}", lines(&server));
    let text = {
        let mut registry = Registry::default();
        let m = Metrics::register(&mut registry);
        m.not_leader
            .get_or_create(&Metrics::labels("packagevariants"))
            .inc();
        metrics::encode(&registry)
    };
    assert!(text.contains("porch_variants_not_leader_skips_total"));
}

fn lease_config() -> LeaseConfig {
    LeaseConfig {
        name: "porch-variants".into(),
        namespace: "porch-variants-system".into(),
        identity: "replica-a".into(),
        duration: std::time::Duration::from_secs(15),
        renew_every: std::time::Duration::from_secs(5),
    }
}

#[tokio::test]
async fn lease_is_created_when_absent() {
    let server: Shared = Arc::new(Mutex::new(ServerState::default()));
    let client = fake_client(server.clone());
    let held = leader::try_acquire(&client, &lease_config(), &mut leader::Observed::default())
        .await
        .expect("election");
    assert!(held);
    let calls = calls(&server);
    let path = "/apis/coordination.k8s.io/v1/namespaces/porch-variants-system/leases";
    assert_eq!(
        calls.iter().map(Call::line).collect::<Vec<_>>(),
        vec![format!("GET {path}/porch-variants"), format!("POST {path}")]
    );
    assert_eq!(calls[1].body["spec"]["holderIdentity"], "replica-a");
}

fn lease(
    holder: &str,
    renewed: k8s_openapi::jiff::Timestamp,
) -> k8s_openapi::api::coordination::v1::Lease {
    serde_json::from_value(json!({
        "metadata": {"name": "porch-variants", "namespace": "porch-variants-system"},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15,
                 "renewTime": k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(renewed)}
    }))
    .expect("lease")
}

/// Expiry is measured on this replica's clock from when it saw the Lease
/// renewed, not from the holder's renewTime (which another clock wrote).
#[test]
fn a_lease_expires_when_this_replica_has_not_seen_it_renewed_for_its_duration() {
    let now = k8s_openapi::jiff::Timestamp::now();
    let long_ago = now
        .checked_sub(k8s_openapi::jiff::SignedDuration::from_secs(60))
        .expect("time");
    let t0 = std::time::Instant::now();
    let later = |s| t0 + std::time::Duration::from_secs(s);
    let mut seen = leader::Observed::default();
    // A renewTime a minute old by this clock (the holder's clock may be
    // behind): seen for the first time, it counts as just renewed.
    let skewed = lease("replica-b", long_ago);
    assert!(leader::held_by_other(&skewed, "replica-a", &mut seen, t0));
    assert!(leader::held_by_other(
        &skewed,
        "replica-a",
        &mut seen,
        later(14)
    ));
    // Not renewed for its 15 s: expired.
    assert!(!leader::held_by_other(
        &skewed,
        "replica-a",
        &mut seen,
        later(16)
    ));
    // Renewed (a new renewTime): valid for 15 s from when it was seen.
    let renewed = lease("replica-b", now);
    assert!(leader::held_by_other(
        &renewed,
        "replica-a",
        &mut seen,
        later(16)
    ));
    assert!(leader::held_by_other(
        &renewed,
        "replica-a",
        &mut seen,
        later(30)
    ));
    assert!(!leader::held_by_other(
        &renewed,
        "replica-a",
        &mut seen,
        later(32)
    ));
    // Our own Lease, or nobody's, is not held by another.
    assert!(!leader::held_by_other(&renewed, "replica-b", &mut seen, t0));
    assert!(!leader::held_by_other(
        &lease("", now),
        "replica-a",
        &mut seen,
        t0
    ));
}

/// An election round that hangs (the API server stops answering) gives the
/// leadership up once another replica could take the Lease over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_election_round_gives_up_leadership() {
    let server: Shared = Arc::new(Mutex::new(ServerState::default()));
    let client = fake_client(server.clone());
    let cfg = LeaseConfig {
        duration: std::time::Duration::from_secs(2),
        renew_every: std::time::Duration::from_millis(500),
        ..lease_config()
    };
    let (leader_tx, mut leader_rx) = tokio::sync::watch::channel(false);
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let election = tokio::spawn(leader::run(client, cfg, leader_tx, stop_rx));
    let wait = std::time::Duration::from_secs(10);
    tokio::time::timeout(wait, leader_rx.wait_for(|l| *l))
        .await
        .expect("leads")
        .expect("election running");
    let get =
        "GET /apis/coordination.k8s.io/v1/namespaces/porch-variants-system/leases/porch-variants";
    server
        .lock()
        .unwrap()
        .call_delays
        .insert(get.into(), std::time::Duration::from_secs(600));
    tokio::time::timeout(wait, leader_rx.wait_for(|l| !*l))
        .await
        .expect("gives the leadership up")
        .expect("election running");
    let _ = stop_tx.send(true);
    tokio::time::timeout(wait, election)
        .await
        .expect("stops")
        .expect("join");
}
