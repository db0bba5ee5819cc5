//! The Repository controller in Kubernetes mode against the recording API
//! server: a new Repository gets its finalizer and a full sync that finds
//! a published package in a real Git repository (a v1alpha2
//! PackageRevision applied under both field managers, status Ready); no
//! sync slot free; a Repository being deleted loses its finalizer. Each
//! asserts the exact requests and the field manager of each write.

mod kube_support;

use std::sync::Arc;
use std::time::Duration;

use kube::api::DynamicObject;
use kube::runtime::controller::Action;
use kube::runtime::reflector::{self, store::Writer};
use kube::runtime::watcher;
use kube_support::*;
use porch_variants::engine_api::NativeCore;
use porch_variants::kube::api::{KubeResource, Repository};
use porch_variants::kube::prc::{api_resource, PrcContext};
use porch_variants::kube::repo::{reconcile, RepoContext};
use porch_variants::prc::RenderSlots;
use porch_variants::store::git::{init_bare, GitRepoConfig, GitRevisions};
use serde_json::{json, Value};
use tokio::sync::watch;

const REPO: &str = "/apis/config.porch.kpt.dev/v1alpha1/namespaces/default/repositories";
const PR: &str = "/apis/porch.kpt.dev/v1alpha2/namespaces/default/packagerevisions";

struct Cluster {
    server: Shared,
    ctx: Arc<RepoContext>,
    repos: Writer<Repository>,
    root: tempfile::TempDir,
}

fn repository(extra: Value) -> Repository {
    let mut v = json!({
        "apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "Repository",
        "metadata": {"name": "blueprints", "namespace": "default", "uid": "uid-blueprints",
            "generation": 1, "resourceVersion": "7",
            "annotations": {"porch.kpt.dev/v1alpha2-migration": "true"}},
        "spec": {"type": "git", "git": {"repo": "blueprints", "branch": "main"}},
    });
    merge(&mut v, extra);
    let core: pv_core::variantset::Repository = serde_json::from_value(v).unwrap();
    Repository::from_core(&core).unwrap()
}

fn merge(dst: &mut Value, src: Value) {
    match (dst, src) {
        (Value::Object(d), Value::Object(s)) => {
            for (k, v) in s {
                merge(d.entry(k).or_insert(Value::Null), v);
            }
        }
        (d, s) => *d = s,
    }
}

const KPTFILE: &str = "apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: app
info:
  description: the app
";

impl Cluster {
    /// A Git repository `blueprints` with `app` v1 published, and `slots`
    /// sync slots.
    fn new(slots: usize) -> Cluster {
        let server: Shared = Arc::new(std::sync::Mutex::new(ServerState::default()));
        let root = tempfile::tempdir().unwrap();
        let path = root.path().join("blueprints");
        init_bare(&path, "main").unwrap();
        let store = GitRevisions::open(vec![GitRepoConfig {
            name: "blueprints".into(),
            namespace: "default".into(),
            path,
            branch: "main".into(),
            directory: String::new(),
        }])
        .unwrap();
        let files = [("Kptfile".to_string(), KPTFILE.to_string())].into();
        porch_variants::local::cli::publish_files(
            &store,
            "default",
            "blueprints",
            "app",
            "v1",
            files,
            "init",
        )
        .unwrap();
        let (repo_store, repos) = reflector::store::<Repository>();
        let (_tx, leader) = watch::channel(true);
        std::mem::forget(_tx);
        let client = fake_client(server.clone());
        let git = Arc::new(PrcContext {
            client: client.clone(),
            revisions: Writer::<DynamicObject>::new(api_resource()).as_reader(),
            index: Default::default(),
            repositories: repo_store.clone(),
            core: Arc::new(NativeCore),
            renderer: None,
            slots: Arc::new(RenderSlots::new(1)),
            config: pv_core::prc::reconcile::Config::default(),
            git_root: root.path().to_path_buf(),
            git_fetch_interval: Duration::ZERO,
            gates: porch_variants::kube::shard::Gates::single(leader.clone()),
        });
        let config = pv_core::repo::reconcile::Config {
            create_v1alpha2: true,
            ..Default::default()
        };
        let ctx = Arc::new(RepoContext::new(
            client, repo_store, git, slots, config, leader,
        ));
        Cluster {
            server,
            ctx,
            repos,
            root,
        }
    }

    async fn reconcile(&mut self, repo: Repository) -> Action {
        self.repos
            .apply_watcher_event(&watcher::Event::Apply(repo.clone()));
        reconcile(Arc::new(repo), self.ctx.clone())
            .await
            .expect("reconciles")
    }

    /// `METHOD path[ as manager][ force]` of each request since the last
    /// take, with its query and body.
    fn take(&self) -> Vec<(String, String, Value)> {
        let c = calls(&self.server);
        clear(&self.server);
        c.into_iter()
            .map(|c| {
                let (path, query) = c.uri.split_once('?').unwrap_or((&c.uri, ""));
                let path = path.replace(REPO, "REPO").replace(PR, "PR");
                let params: Vec<&str> = query.split('&').collect();
                let manager = params
                    .iter()
                    .find_map(|p| p.strip_prefix("fieldManager="))
                    .map(|m| format!(" as {m}"))
                    .unwrap_or_default();
                let force = if params.contains(&"force=true") {
                    " force"
                } else {
                    ""
                };
                (
                    format!("{} {path}{manager}{force}", c.method),
                    query.to_string(),
                    c.body,
                )
            })
            .collect()
    }

    fn branch_hash(&self) -> String {
        let repo = git2::Repository::open(self.root.path().join("blueprints")).unwrap();
        let commit = repo
            .find_reference("refs/heads/main")
            .unwrap()
            .peel_to_commit()
            .unwrap();
        commit.id().to_string()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        assert_history_granted(&self.server);
    }
}

fn lines(calls: &[(String, String, Value)]) -> Vec<&str> {
    calls.iter().map(|(l, _, _)| l.as_str()).collect()
}

fn ready(body: &Value) -> &Value {
    body["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "Ready"))
        .unwrap_or_else(|| panic!("no Ready in {body}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_repository_gets_its_finalizer_and_a_full_sync_discovers_the_package() {
    let mut c = Cluster::new(2);
    let action = c.reconcile(repository(json!({}))).await;
    // Back after the health-check period; the sync runs in the background.
    assert_eq!(action, Action::requeue(Duration::from_secs(300)));
    let outcomes = c.ctx.wait_for_syncs().await;
    assert_eq!(outcomes.len(), 1);
    assert_eq!(outcomes[0].error, None, "{outcomes:?}");
    let calls = c.take();
    assert_eq!(
        lines(&calls),
        [
            // Reconcile: the finalizer, then status Reconciling.
            "PATCH REPO/blueprints as repository-controller",
            "PATCH REPO/blueprints/status as repository-controller force",
            // Background sync: the existing objects, the discovered
            // revision applied (owned fields forced, then the seed), then
            // status Ready.
            "GET PR",
            "PATCH PR/blueprints.app.v1 as repository-controller force",
            "PATCH PR/blueprints.app.v1/status as repository-controller force",
            "PATCH PR/blueprints.app.v1 as repository-controller-seed",
            "PATCH PR/blueprints.app.v1/status as repository-controller-seed",
            "PATCH REPO/blueprints/status as repository-controller force",
        ]
    );
    assert_eq!(
        calls[0].2,
        json!({"metadata": {"finalizers": ["config.porch.kpt.dev/repository"]}})
    );
    let reconciling = ready(&calls[1].2);
    assert_eq!(reconciling["status"], "False");
    assert_eq!(reconciling["reason"], "Reconciling");
    assert!(
        calls[2]
            .1
            .contains("labelSelector=porch.kpt.dev%2Frepository%3Dblueprints"),
        "{}",
        calls[2].1
    );

    // The owned fields: identity, the repository label and the owner.
    let owned = &calls[3].2;
    assert_eq!(owned["apiVersion"], "porch.kpt.dev/v1alpha2");
    assert_eq!(owned["kind"], "PackageRevision");
    assert_eq!(
        owned["metadata"]["labels"],
        json!({"porch.kpt.dev/repository": "blueprints"})
    );
    assert_eq!(
        owned["metadata"]["ownerReferences"][0]["uid"],
        "uid-blueprints"
    );
    assert_eq!(
        owned["spec"],
        json!({"packageName": "app", "repository": "blueprints", "workspaceName": "v1"})
    );
    assert!(owned["spec"].get("lifecycle").is_none());
    // The seed: lifecycle from Git, revision and publisher in status.
    assert_eq!(calls[5].2["spec"]["lifecycle"], "Published");
    assert_eq!(calls[6].2["status"]["revision"], 1);
    assert!(calls[6].2["status"]["publishedAt"].is_string());

    // Status Ready with what the sync found.
    let status = &calls[7].2["status"];
    assert_eq!(ready(&calls[7].2)["status"], "True");
    assert_eq!(status["packageCount"], 1);
    assert_eq!(status["gitCommitHash"], c.branch_hash());
    assert_eq!(status["observedGeneration"], 1);
    assert!(status["lastFullSyncTime"].is_string());
    // The slot was given back.
    assert_eq!(c.ctx.syncs.available_permits(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_free_sync_slot_writes_error_and_retries_after_30s() {
    let mut c = Cluster::new(0);
    let repo = repository(json!({"metadata": {"finalizers": ["config.porch.kpt.dev/repository"]}}));
    let action = c.reconcile(repo).await;
    assert_eq!(action, Action::requeue(Duration::from_secs(30)));
    assert!(c.ctx.wait_for_syncs().await.is_empty());
    let calls = c.take();
    assert_eq!(
        lines(&calls),
        [
            "PATCH REPO/blueprints/status as repository-controller force",
            "PATCH REPO/blueprints/status as repository-controller force",
        ]
    );
    let error = ready(&calls[1].2);
    assert_eq!(error["reason"], "Error");
    assert_eq!(
        error["message"],
        "sync capacity exceeded, retrying after 30s"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_repository_loses_its_finalizer_by_update() {
    let mut c = Cluster::new(2);
    // A PackageRevision of the Repository exists: the controller leaves it
    // to garbage collection by its ownerReference (upstream's deletion).
    c.server.lock().unwrap().lists.insert(
        "packagerevisions".into(),
        vec![
            json!({"apiVersion": "porch.kpt.dev/v1alpha2", "kind": "PackageRevision",
            "metadata": {"name": "blueprints.app.v1", "namespace": "default",
                "labels": {"porch.kpt.dev/repository": "blueprints"}}}),
        ],
    );
    let repo = repository(json!({"metadata": {
        "deletionTimestamp": "2026-01-01T00:00:00Z",
        "finalizers": ["config.porch.kpt.dev/repository", "example.com/keep"]}}));
    let action = c.reconcile(repo).await;
    assert_eq!(action, Action::await_change());
    assert!(c.ctx.wait_for_syncs().await.is_empty());
    let calls = c.take();
    assert_eq!(
        lines(&calls),
        ["PUT REPO/blueprints as repository-controller"]
    );
    let body = &calls[0].2;
    assert_eq!(body["metadata"]["finalizers"], json!(["example.com/keep"]));
    assert_eq!(body["metadata"]["resourceVersion"], "7");
    assert_eq!(body["spec"]["git"]["repo"], "blueprints");
}

/// A status apply answered 409 Conflict is tried once more (upstream's
/// `updateStatus`: 25 ms, two attempts); two conflicts in a row fail the
/// reconcile, which backs off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_apply_is_retried_once_on_conflict() {
    let status = format!("PATCH {REPO}/blueprints/status");
    let repo =
        || repository(json!({"metadata": {"finalizers": ["config.porch.kpt.dev/repository"]}}));

    let mut c = Cluster::new(0);
    c.server.lock().unwrap().conflicts.insert(status.clone(), 1);
    let action = c.reconcile(repo()).await;
    assert_eq!(action, Action::requeue(Duration::from_secs(30)));
    assert_eq!(
        lines(&c.take()),
        [
            "PATCH REPO/blueprints/status as repository-controller force",
            "PATCH REPO/blueprints/status as repository-controller force",
            "PATCH REPO/blueprints/status as repository-controller force",
        ],
        "the first apply conflicted and was sent again, then the Error status"
    );

    let mut c = Cluster::new(0);
    c.server.lock().unwrap().conflicts.insert(status, 2);
    c.repos.apply_watcher_event(&watcher::Event::Apply(repo()));
    let err = porch_variants::kube::repo::reconcile(Arc::new(repo()), c.ctx.clone())
        .await
        .expect_err("two conflicts in a row fail the reconcile");
    assert!(err.to_string().contains("timed out"), "{err}");
    assert_eq!(
        lines(&c.take()),
        [
            "PATCH REPO/blueprints/status as repository-controller force",
            "PATCH REPO/blueprints/status as repository-controller force",
        ]
    );
}

/// `porch-variants controller --reconcilers repositories`: the watch
/// cache, the controller and its background sync, wired as deployed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controller_runs_the_repositories_reconciler() {
    use porch_variants::kube::repo::RepoArgs;
    use porch_variants::kube::run::{run_with, ControllerArgs};

    let c = Cluster::new(1);
    c.server.lock().unwrap().lists.insert(
        "repositories".into(),
        vec![serde_json::to_value(repository(json!({}))).unwrap()],
    );
    let args = ControllerArgs {
        reconcilers: vec!["repositories".into()],
        watch_kinds: vec!["v1/ConfigMap".into()],
        listen: "127.0.0.1:0".parse().unwrap(),
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
            git_root: c.root.path().to_path_buf(),
            git_fetch_interval: Duration::from_secs(10),
        },
        repositories: RepoArgs::default(),
        dry_run: false,
    };
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let controller = tokio::spawn(run_with(fake_client(c.server.clone()), args, async move {
        let _ = stop_rx.await;
    }));
    let status = format!("PATCH {REPO}/blueprints/status");
    let mut waited = Duration::ZERO;
    while kube_support::lines(&c.server)
        .iter()
        .filter(|l| **l == status)
        .count()
        < 2
        && waited < Duration::from_secs(20)
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
        waited += Duration::from_millis(20);
    }
    let _ = stop_tx.send(());
    let result = tokio::time::timeout(Duration::from_secs(20), controller)
        .await
        .expect("controller stops on its shutdown signal")
        .expect("join");
    assert!(result.is_ok(), "{result:?}");
    let calls = c.take();
    let writes: Vec<&str> = lines(&calls)
        .into_iter()
        .filter(|l| !l.starts_with("GET "))
        .collect();
    assert_eq!(
        writes,
        [
            "PATCH REPO/blueprints as repository-controller",
            "PATCH REPO/blueprints/status as repository-controller force",
            "PATCH REPO/blueprints/status as repository-controller force",
        ]
    );
    let ready = ready(
        &calls
            .iter()
            .rev()
            .find(|c| c.0.contains("/status"))
            .unwrap()
            .2,
    );
    assert_eq!(ready["status"], "True");
    // Without --repositories.create-v1alpha2-rpkg no PackageRevision is
    // listed or written.
    assert!(!calls.iter().any(|c| c.0.contains("PR")));
}

#[test]
fn repository_flags_have_upstreams_names_and_defaults() {
    use clap::Parser;
    use porch_variants::kube::repo::RepoArgs;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        repositories: RepoArgs,
    }
    let d = Cli::parse_from(["x"]).repositories;
    let def = RepoArgs::default();
    assert_eq!(
        (
            d.max_concurrent_reconciles,
            d.max_concurrent_syncs,
            d.health_check_frequency,
            d.full_sync_frequency,
            d.sync_stale_timeout,
            d.create_v1alpha2_rpkg
        ),
        (
            def.max_concurrent_reconciles,
            def.max_concurrent_syncs,
            def.health_check_frequency,
            def.full_sync_frequency,
            def.sync_stale_timeout,
            def.create_v1alpha2_rpkg
        )
    );
    let a = Cli::parse_from([
        "x",
        "--repositories.max-concurrent-syncs=0",
        "--repositories.health-check-frequency=1m",
        "--repositories.create-v1alpha2-rpkg",
    ])
    .repositories;
    assert_eq!(a.sync_slots(), 100);
    assert_eq!(a.config().health_check_frequency_ms, 60_000);
    assert!(a.config().create_v1alpha2);
    let b = Cli::parse_from(["x", "--repositories.create-v1alpha2-rpkg=false"]).repositories;
    assert!(!b.config().create_v1alpha2);
}

#[test]
fn events_wake_the_controller_on_create_generation_and_deletion_mark() {
    use porch_variants::kube::repo::{seen, wakes};
    let r = repository(json!({}));
    assert!(wakes(None, &r));
    assert!(!wakes(Some(seen(&r)), &r));
    // Status, finalizers, labels: no new generation, no reconcile.
    let status = repository(
        json!({"metadata": {"finalizers": ["config.porch.kpt.dev/repository"]},
        "status": {"packageCount": 3}}),
    );
    assert!(!wakes(Some(seen(&r)), &status));
    assert!(wakes(
        Some(seen(&r)),
        &repository(json!({"metadata": {"generation": 2}}))
    ));
    assert!(wakes(
        Some(seen(&r)),
        &repository(json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}}))
    ));
}
