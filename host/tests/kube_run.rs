//! `porch-variants controller` wired end to end against a fake API server:
//! the reflectors list each kind once, the caches sync, the PackageVariant
//! found in the cache is reconciled (finalizer, clone draft, resources,
//! status), and the controller stops cleanly on its shutdown signal.

mod kube_support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube_support::*;
use porch_variants::kube::run::{run_with, ControllerArgs};
use serde_json::json;

const PV_PATH: &str = "/apis/config.porch.kpt.dev/v1alpha1/namespaces/default/packagevariants";
const PR_PATH: &str = "/apis/porch.kpt.dev/v1alpha1/namespaces/default/packagerevisions";
const PRR_PATH: &str = "/apis/porch.kpt.dev/v1alpha1/namespaces/default/packagerevisionresources";

fn args() -> ControllerArgs {
    ControllerArgs {
        reconcilers: vec!["packagevariants".into(), "packagevariantsets".into()],
        watch_kinds: vec!["v1/ConfigMap".into()],
        listen: "127.0.0.1:0".parse().expect("addr"),
        leader_elect: false,
        lease_name: "porch-variants".into(),
        lease_namespace: "default".into(),
        identity: "test".into(),
        shards: 0,
        lease_duration: Duration::from_secs(15),
        lease_renew_every: Duration::from_secs(5),
        native_core: true,
        cache_sync_timeout: 20,
        porch_api: Default::default(),
        runner: Default::default(),
        packagerevisions: porch_variants::kube::prc::PrcArgs {
            max_concurrent_renders: 20,
            render_requeue_delay: Duration::from_secs(2),
            max_concurrent_reconciles: 50,
            git_root: std::env::temp_dir(),
            git_fetch_interval: Duration::from_secs(10),
        },
        repositories: porch_variants::kube::repo::RepoArgs::default(),
        dry_run: false,
    }
}

/// A fake server holding one PackageVariant and its upstream revision;
/// LISTs of the resources in `slow` are answered after `delay`.
fn one_variant(slow: &[&str], delay: Duration) -> Shared {
    let server: Shared = Arc::new(Mutex::new(ServerState::default()));
    {
        let mut s = server.lock().unwrap();
        s.lists.insert(
            "packagevariants".into(),
            vec![json!({
                "apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "PackageVariant",
                "metadata": {"name": "pv1", "namespace": "default", "uid": "uid-pv1", "resourceVersion": "3"},
                "spec": {"upstream": {"repo": "blueprints", "package": "web"},
                         "downstream": {"repo": "edge-1", "package": "web"}}
            })],
        );
        s.lists.insert(
            "packagerevisions".into(),
            vec![json!({
                "apiVersion": "porch.kpt.dev/v1alpha1", "kind": "PackageRevision",
                "metadata": {"name": "blueprints.web.v1", "namespace": "default", "uid": "u-up", "resourceVersion": "2"},
                "spec": {"packageName": "web", "repository": "blueprints", "workspaceName": "v1",
                         "revision": 1, "lifecycle": "Published"},
                "status": {"selfLock": {"type": "git", "git": {"repo": "blueprints", "directory": "web", "ref": "web/v1", "commit": "c"}}}
            })],
        );
        s.files.insert(
            "blueprints.web.v1".into(),
            BTreeMap::from([(
                "Kptfile".to_string(),
                "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: web\n".to_string(),
            )]),
        );
        for plural in slow {
            s.list_delays.insert((*plural).to_string(), delay);
        }
    }
    server
}

/// Runs the controller against `server` until the PackageVariant's status
/// is written, stops it, and returns every request it made.
async fn run_until_status(server: &Shared) -> Vec<Call> {
    run_until(server, args(), &format!("PATCH {PV_PATH}/pv1/status")).await
}

/// Runs the controller with `args` until it has sent the request `line`
/// (`METHOD path`), stops it, and returns every request it made.
async fn run_until(server: &Shared, args: ControllerArgs, line: &str) -> Vec<Call> {
    let client = fake_client(server.clone());
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let controller = tokio::spawn(run_with(client, args, async move {
        let _ = stop_rx.await;
    }));
    let mut waited = Duration::ZERO;
    while !lines(server).iter().any(|l| l == line) && waited < Duration::from_secs(20) {
        tokio::time::sleep(Duration::from_millis(20)).await;
        waited += Duration::from_millis(20);
    }
    let _ = stop_tx.send(());
    let result = tokio::time::timeout(Duration::from_secs(20), controller)
        .await
        .expect("controller stops on its shutdown signal")
        .expect("join");
    assert!(result.is_ok(), "{result:?}");
    calls(server)
}

/// The writes among `calls`, as `METHOD path` lines.
fn writes(calls: &[Call]) -> Vec<String> {
    calls
        .iter()
        .filter(|c| c.method != "GET")
        .map(Call::line)
        .collect()
}

/// The writes of one clean reconcile of the PackageVariant.
fn one_reconcile() -> Vec<String> {
    vec![
        format!("PUT {PV_PATH}/pv1"),
        format!("POST {PR_PATH}"),
        format!("PUT {PRR_PATH}/edge-1.web.packagevariant-1"),
        format!("PATCH {PV_PATH}/pv1/status"),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controller_syncs_caches_reconciles_and_shuts_down() {
    let server = one_variant(&[], Duration::ZERO);
    let calls = run_until_status(&server).await;
    // Start-up checks, lists, watches and writes: all allowed by the
    // deployed RBAC.
    let denied = ungranted(&calls);
    assert!(
        denied.is_empty(),
        "deploy/rbac.yaml does not allow: {denied:#?}"
    );
    let lists: Vec<String> = calls
        .iter()
        .filter(|c| c.method == "GET" && !c.uri.contains("watch=true"))
        .filter(|c| !c.uri.contains("packagerevisionresources"))
        .map(|c| c.uri.split('?').next().unwrap_or_default().to_string())
        .collect();
    // Five startup checks (one object each), then one LIST per watched
    // kind: PackageVariants, PackageVariantSets, PackageRevisions,
    // Repositories, ConfigMaps.
    assert_eq!(lists.len(), 10, "{lists:?}");
    assert_eq!(writes(&calls), one_reconcile());
}

/// A PackageVariant is not reconciled before every cache has synced: with
/// the PackageRevision list slow to come, a reconcile would see no upstream
/// (and no existing draft) and write an error status first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_reconcile_runs_before_every_cache_has_synced() {
    let server = one_variant(&["packagerevisions"], Duration::from_millis(400));
    let calls = run_until_status(&server).await;
    assert_eq!(writes(&calls), one_reconcile());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listen_address_in_use_stops_the_controller_at_once() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let mut args = args();
    args.listen = taken.local_addr().expect("addr");
    let server: Shared = Arc::new(Mutex::new(ServerState::default()));
    // No shutdown signal: only the bind failure can end the run.
    let run = run_with(fake_client(server), args, std::future::pending::<()>());
    let result = tokio::time::timeout(Duration::from_secs(20), run)
        .await
        .expect("the run ends without a shutdown signal");
    let e = result.expect_err("the address is in use").to_string();
    assert!(e.contains(&taken.local_addr().unwrap().to_string()), "{e}");
}

/// A watched kind that cannot be listed stops the run at start-up, with
/// the kind and flag named, instead of leaving every reconcile waiting for
/// its cache.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_kind_that_cannot_be_listed_stops_the_run() {
    let server = one_variant(&[], Duration::ZERO);
    server
        .lock()
        .unwrap()
        .fail
        .insert("GET /apis/example.com/v1/teams".into());
    let mut args = args();
    args.watch_kinds.push("example.com/v1/Team".into());
    let e = run_fails(&server, args).await;
    assert!(
        e.starts_with("example.com/v1/Team (--watch-kinds) is not queryable"),
        "{e}"
    );
}

/// Runs the controller without a shutdown signal until it stops on its
/// own, and returns its error; nothing may have been written.
async fn run_fails(server: &Shared, args: ControllerArgs) -> String {
    let run = run_with(
        fake_client(server.clone()),
        args,
        std::future::pending::<()>(),
    );
    let result = tokio::time::timeout(Duration::from_secs(20), run)
        .await
        .expect("the run ends without a shutdown signal");
    let e = result.expect_err("the run fails").to_string();
    let written = writes(&calls(server));
    assert!(written.is_empty(), "{e}: wrote {written:?}");
    e
}

/// A cache that does not sync in time ends the run with an error naming
/// it; nothing is written meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cache_that_does_not_sync_in_time_stops_the_run() {
    let server = one_variant(&["configmaps"], Duration::from_secs(6));
    let mut args = args();
    args.cache_sync_timeout = 2;
    let e = run_fails(&server, args).await;
    // (The wait covers every cache in turn; on a slow machine another one
    // may be the one still waited for.)
    assert!(
        e.starts_with("the ") && e.contains(" cache did not sync within 2 s"),
        "{e}"
    );
}

/// With leader election, the Lease is released only after the reconcile in
/// flight at shutdown has made its last write: a replica taking over never
/// writes beside this one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lease_is_released_after_the_last_write() {
    let server = one_variant(&[], Duration::ZERO);
    let prr_put = format!("PUT {PRR_PATH}/edge-1.web.packagevariant-1");
    server.lock().unwrap().held.insert(prr_put.clone());
    let mut args = args();
    args.leader_elect = true;
    // Shut down while the resources write is in flight; let it finish a
    // moment later (time enough for a release that would not wait).
    let release = {
        let (server, prr_put) = (server.clone(), prr_put.clone());
        tokio::spawn(async move {
            while !lines(&server).contains(&prr_put) {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
            server.lock().unwrap().held.remove(&prr_put);
        })
    };
    let calls = run_until(&server, args, &prr_put).await;
    release.await.expect("join");
    // The release reads the Lease first (the fake server keeps no Lease,
    // so it ends there); renewals come every 5 s, so within the test the
    // last Lease request is the release's.
    let lines: Vec<String> = calls.iter().map(Call::line).collect();
    let status = format!("PATCH {PV_PATH}/pv1/status");
    let status_at = lines.iter().position(|w| *w == status);
    let release_at = lines
        .iter()
        .rposition(|w| w.starts_with("GET ") && w.contains("/leases/"));
    assert!(
        status_at.is_some() && release_at > status_at,
        "the Lease is released after the status write: {lines:#?}"
    );
}

/// With `--porch-api v1alpha2` the controller needs no porch-server: the
/// aggregated v1alpha1 API is neither checked nor listed (here it answers
/// 403), the variant reads the v1alpha2 objects and declares its draft as
/// one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_v1alpha2_the_variants_run_without_porch_server() {
    let server = one_variant(&[], Duration::ZERO);
    let root = tempfile::tempdir().expect("temporary directory");
    {
        let mut s = server.lock().unwrap();
        for line in [
            "GET /apis/porch.kpt.dev/v1alpha1/packagerevisions",
            "GET /apis/porch.kpt.dev/v1alpha1/packagerevisionresources",
        ] {
            s.fail.insert(line.to_string());
        }
        let mut repos = Vec::new();
        for r in ["blueprints", "edge-1"] {
            porch_variants::store::git::init_bare(&root.path().join(r), "main").expect("init");
            repos.push(json!({
                "apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "Repository",
                "metadata": {"name": r, "namespace": "default", "uid": format!("uid-{r}"), "resourceVersion": "1"},
                "spec": {"type": "git", "git": {"repo": r, "branch": "main"}}
            }));
        }
        s.lists.insert("repositories".into(), repos);
        // The one list both versions share here holds the v1alpha2 object.
        s.lists.insert(
            "packagerevisions".into(),
            vec![json!({
                "apiVersion": "porch.kpt.dev/v1alpha2", "kind": "PackageRevision",
                "metadata": {"name": "blueprints.web.v1", "namespace": "default", "resourceVersion": "2"},
                "spec": {"packageName": "web", "repository": "blueprints", "workspaceName": "v1",
                         "lifecycle": "Published"},
                "status": {"revision": 1, "selfLock": {"type": "git", "git": {"repo": "blueprints", "directory": "web", "ref": "web/v1", "commit": "c"}}}
            })],
        );
    }
    let mut args = args();
    args.porch_api = porch_variants::store::v1alpha2::PorchApi::V1alpha2;
    args.packagerevisions.git_root = root.path().to_path_buf();
    let v2 = "/apis/porch.kpt.dev/v1alpha2/namespaces/default/packagerevisions";
    let calls = run_until(&server, args, &format!("PATCH {PV_PATH}/pv1/status")).await;
    assert!(
        !calls
            .iter()
            .any(|c| c.uri.contains("/v1alpha1/packagerevision")),
        "{:?}",
        calls.iter().map(Call::line).collect::<Vec<_>>()
    );
    assert_eq!(
        writes(&calls),
        vec![
            format!("PUT {PV_PATH}/pv1"),
            format!("POST {v2}"),
            format!("PATCH {PV_PATH}/pv1/status"),
        ]
    );
    let post = calls.iter().find(|c| c.method == "POST").expect("declared");
    assert_eq!(
        post.body["spec"]["source"]["cloneFrom"]["upstreamRef"]["name"],
        "blueprints.web.v1"
    );
}

/// With `--shards`, the replica (alone: all four shards are its share)
/// takes the shards from its second round, the objects of each shard it
/// takes are handed to the controllers (the variant's event came while no
/// shard was held), and at shutdown its Leases are released after the
/// last write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sharded_replica_reconciles_the_shards_it_takes_and_releases_them() {
    let server = one_variant(&[], Duration::ZERO);
    server.lock().unwrap().stateful_leases = true;
    let mut a = args();
    a.shards = 4;
    a.lease_duration = Duration::from_millis(1500);
    a.lease_renew_every = Duration::from_millis(200);
    let calls = run_until(&server, a, &format!("PATCH {PV_PATH}/pv1/status")).await;
    assert_eq!(
        writes(&calls)
            .into_iter()
            .filter(|l| !l.contains("/leases"))
            .collect::<Vec<_>>(),
        one_reconcile()
    );
    let leases = server.lock().unwrap().leases.clone();
    let names: Vec<&String> = leases.keys().collect();
    assert_eq!(
        names,
        [
            "porch-variants-s4-member-test",
            "porch-variants-s4-shard-0",
            "porch-variants-s4-shard-1",
            "porch-variants-s4-shard-2",
            "porch-variants-s4-shard-3",
        ]
    );
    for (name, lease) in &leases {
        assert_eq!(
            lease["spec"]["holderIdentity"],
            serde_json::Value::Null,
            "{name} released"
        );
    }
    let last_write = calls
        .iter()
        .rposition(|c| c.line() == format!("PATCH {PV_PATH}/pv1/status"))
        .unwrap();
    let first_release = calls
        .iter()
        .position(|c| {
            c.method == "PUT"
                && c.uri.contains("/leases/")
                && c.body["spec"]["holderIdentity"].is_null()
        })
        .unwrap();
    assert!(first_release > last_write);
    let denied = ungranted_with(&calls, &["sharded/rbac.yaml"]);
    assert!(denied.is_empty(), "{denied:#?}");
}

/// Lease settings that would let a gate stay open past the point where
/// another replica may take over, and shards without each replica's own
/// identity, are refused before any request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsafe_lease_settings_are_refused_before_any_request() {
    let server = one_variant(&[], Duration::ZERO);
    let mut a = args();
    a.lease_duration = Duration::from_secs(15);
    a.lease_renew_every = Duration::from_secs(8);
    let e = run_fails(&server, a).await;
    assert!(e.contains("--lease-renew-every"), "{e}");
    let mut a = args();
    a.shards = 8;
    a.identity = "porch-variants".into();
    let e = run_fails(&server, a).await;
    assert!(e.contains("--identity"), "{e}");
    assert!(calls(&server).is_empty(), "{:?}", lines(&server));
}

/// `controller --dry-run` reconciles as the controller does and sends no
/// write: no object, no status, and no Lease though election is on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dry_run_reconciles_and_writes_nothing() {
    let server = one_variant(&[], Duration::ZERO);
    let mut args = args();
    args.dry_run = true;
    args.leader_elect = true;
    // The reconcile reads the upstream's resources to make the draft.
    let calls = run_until(&server, args, &format!("GET {PRR_PATH}/blueprints.web.v1")).await;
    assert!(
        calls
            .iter()
            .any(|c| c.line() == format!("GET {PRR_PATH}/blueprints.web.v1")),
        "the variant was not reconciled: {:#?}",
        calls.iter().map(Call::line).collect::<Vec<_>>()
    );
    assert_eq!(writes(&calls), Vec::<String>::new());
    assert!(!calls.iter().any(|c| c.uri.contains("leases")));

    let mut sharded = self::args();
    sharded.dry_run = true;
    sharded.shards = 2;
    sharded.identity = "replica-1".into();
    let e = run_fails(&server, sharded).await;
    assert!(e.contains("--dry-run") && e.contains("--shards"), "{e}");
}

/// A draft annotated by hand with an approval policy is proposed by the
/// running controller: its watch event reaches the approval reconciler.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draft_annotated_by_hand_is_proposed_by_the_controller() {
    let server = one_variant(&[], Duration::ZERO);
    {
        let mut s = server.lock().unwrap();
        s.lists.get_mut("packagerevisions").unwrap().push(json!({
            "apiVersion": "porch.kpt.dev/v1alpha1", "kind": "PackageRevision",
            "metadata": {"name": "blueprints.web.v2", "namespace": "default", "uid": "u-v2", "resourceVersion": "4",
                         "annotations": {"approval.nephio.org/policy": "always"}},
            "spec": {"packageName": "web", "repository": "blueprints", "workspaceName": "v2",
                     "revision": 0, "lifecycle": "Draft"}
        }));
    }
    let propose = format!("PUT {PR_PATH}/blueprints.web.v2");
    let calls = run_until(&server, args(), &propose).await;
    let put = calls
        .iter()
        .find(|c| c.line() == propose)
        .unwrap_or_else(|| panic!("not proposed: {:#?}", writes(&calls)));
    assert_eq!(put.body["spec"]["lifecycle"], "Proposed");
}
