//! The v1alpha2 PackageRevision controller in Kubernetes mode against the
//! recording API server, one scenario per section of seed 004: source,
//! render, render slots full, publish, deletion gating with and without
//! the Repository. Each asserts the exact requests and the field manager
//! of each apply; content is a real Git repository.

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
use porch_variants::kube::prc::{api_resource, reconcile, PrcContext};
use porch_variants::prc::RenderSlots;
use porch_variants::store::git::init_bare;
use serde_json::{json, Value};
use tokio::sync::watch;

const PATH: &str = "/apis/porch.kpt.dev/v1alpha2/namespaces/default/packagerevisions";

struct Cluster {
    server: Shared,
    ctx: Arc<PrcContext>,
    prs: Writer<DynamicObject>,
    repos: Writer<Repository>,
    root: tempfile::TempDir,
}

fn repository(name: &str) -> Repository {
    let core: pv_core::variantset::Repository = serde_json::from_value(json!({
        "apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "Repository",
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}")},
        "spec": {"type": "git", "git": {"repo": name, "branch": "main"}},
    }))
    .unwrap();
    Repository::from_core(&core).unwrap()
}

impl Cluster {
    fn new(slots: usize) -> Cluster {
        let server: Shared = Arc::new(std::sync::Mutex::new(ServerState::default()));
        let root = tempfile::tempdir().unwrap();
        init_bare(&root.path().join("blueprints"), "main").unwrap();
        let prs = Writer::<DynamicObject>::new(api_resource());
        let (repo_store, mut repos) = reflector::store::<Repository>();
        repos.apply_watcher_event(&watcher::Event::Apply(repository("blueprints")));
        let (_tx, leader) = watch::channel(true);
        std::mem::forget(_tx);
        let ctx = Arc::new(PrcContext {
            client: fake_client(server.clone()),
            revisions: prs.as_reader(),
            index: Default::default(),
            repositories: repo_store,
            core: Arc::new(NativeCore),
            renderer: Some(Arc::new(
                porch_variants::reconcile::DraftRenderer::porch_server(root.path(), None),
            )),
            slots: Arc::new(RenderSlots::new(slots)),
            config: pv_core::prc::reconcile::Config::default(),
            git_root: root.path().to_path_buf(),
            git_fetch_interval: std::time::Duration::ZERO,
            gates: porch_variants::kube::shard::Gates::single(leader),
        });
        Cluster {
            server,
            ctx,
            prs,
            repos,
            root,
        }
    }

    fn put(&mut self, obj: Value) -> Arc<DynamicObject> {
        let o: DynamicObject = serde_json::from_value(obj).unwrap();
        let event = watcher::Event::Apply(o.clone());
        self.prs.apply_watcher_event(&event);
        self.ctx.index.apply(&event);
        Arc::new(o)
    }

    async fn reconcile(&mut self, obj: Value) -> Action {
        let o = self.put(obj);
        reconcile(o, self.ctx.clone())
            .await
            .unwrap_or_else(|e| panic!("reconciles: {e}"))
    }

    /// `METHOD path?fieldManager` of each request since the last take.
    fn take(&self) -> Vec<(String, Value)> {
        let c = calls(&self.server);
        clear(&self.server);
        c.into_iter()
            .map(|c| {
                let path = c
                    .uri
                    .split('?')
                    .next()
                    .unwrap_or_default()
                    .replace(PATH, "PR");
                let manager = c
                    .uri
                    .split(['?', '&'])
                    .find_map(|p| p.strip_prefix("fieldManager="))
                    .map(|m| format!(" as {m}"))
                    .unwrap_or_default();
                (format!("{} {path}{manager}", c.method), c.body)
            })
            .collect()
    }

    fn refs(&self) -> Vec<String> {
        let repo = git2::Repository::open(self.root.path().join("blueprints")).unwrap();
        let mut out: Vec<String> = repo
            .references()
            .unwrap()
            .filter_map(|r| r.ok()?.name().map(str::to_string))
            .filter(|r| !r.starts_with("refs/porch"))
            .collect();
        out.sort();
        out
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        assert_history_granted(&self.server);
    }
}

fn pr(lifecycle: &str, extra: Value) -> Value {
    let mut v = json!({
        "apiVersion": "porch.kpt.dev/v1alpha2", "kind": "PackageRevision",
        "metadata": {"name": "blueprints.app.v1", "namespace": "default", "generation": 1,
            "resourceVersion": "1"},
        "spec": {"packageName": "app", "repository": "blueprints", "workspaceName": "v1",
            "lifecycle": lifecycle, "source": {"init": {"description": "the app"}}},
    });
    merge(&mut v, extra);
    v
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

fn owned() -> Value {
    json!({"metadata": {"finalizers": ["porch.kpt.dev/packagerevisions"],
        "ownerReferences": [{"apiVersion": "config.porch.kpt.dev/v1alpha1",
            "kind": "Repository", "name": "blueprints", "uid": "uid-blueprints"}]}})
}

fn lines(calls: &[(String, Value)]) -> Vec<&str> {
    calls.iter().map(|(l, _)| l.as_str()).collect()
}

fn condition<'a>(body: &'a Value, t: &str) -> &'a Value {
    body["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == t))
        .unwrap_or_else(|| panic!("no {t} in {body}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn source_then_render_then_ready_each_write_under_its_manager() {
    let mut c = Cluster::new(20);

    // First pass: finalizer and ownerReference in one merge patch, the
    // init source written to Git, status under two managers, the label.
    let action = c.reconcile(pr("Draft", json!({}))).await;
    let calls = c.take();
    assert_eq!(
        lines(&calls),
        [
            "PATCH PR/blueprints.app.v1",
            "PATCH PR/blueprints.app.v1/status as packagerev-controller",
            "PATCH PR/blueprints.app.v1/status as packagerev-controller-render",
            "PATCH PR/blueprints.app.v1",
        ]
    );
    assert_eq!(
        calls[0].1["metadata"]["finalizers"],
        json!(["porch.kpt.dev/packagerevisions"])
    );
    assert_eq!(
        calls[0].1["metadata"]["ownerReferences"][0]["uid"],
        "uid-blueprints"
    );
    assert_eq!(calls[1].1["status"]["creationSource"], "init");
    assert_eq!(condition(&calls[1].1, "Ready")["reason"], "Pending");
    assert_eq!(condition(&calls[2].1, "Rendered")["status"], "Unknown");
    assert_eq!(
        calls[3].1["metadata"]["labels"]["porch.kpt.dev/latest-revision"],
        "false"
    );
    assert!(c.refs().contains(&"refs/heads/drafts/app/v1".to_string()));
    assert_eq!(action, Action::requeue(Duration::from_millis(10)));

    // Second pass (the status arrived): render, write, Kptfile fields,
    // Rendered, then Ready.
    let mut with_status = pr("Draft", owned());
    merge(
        &mut with_status,
        json!({"status": {"creationSource": "init"}}),
    );
    let action = c.reconcile(with_status.clone()).await;
    let calls = c.take();
    assert_eq!(
        lines(&calls),
        [
            "PATCH PR/blueprints.app.v1/status as packagerev-controller-render",
            "PATCH PR/blueprints.app.v1 as packagerev-controller-kptfile",
            "PATCH PR/blueprints.app.v1/status as packagerev-controller-kptfile",
            "PATCH PR/blueprints.app.v1/status as packagerev-controller-render",
            "PATCH PR/blueprints.app.v1/status as packagerev-controller",
        ]
    );
    assert_eq!(
        calls[0].1["status"]["conditions"][0]["message"],
        "rendering"
    );
    assert!(
        calls[1].1["spec"]["packageMetadata"].is_object(),
        "{}",
        calls[1].1
    );
    assert_eq!(
        calls[2].1["status"]["packageConditions"][0]["type"],
        "Rendered"
    );
    assert_eq!(condition(&calls[3].1, "Rendered")["status"], "True");
    assert_eq!(condition(&calls[4].1, "Ready")["status"], "True");
    assert_eq!(action, Action::await_change());
    let repo = git2::Repository::open(c.root.path().join("blueprints")).unwrap();
    let kptfile = repo
        .revparse_single("drafts/app/v1:app/Kptfile")
        .unwrap()
        .peel_to_blob()
        .unwrap();
    let text = String::from_utf8_lossy(kptfile.content()).to_string();
    assert!(text.contains("reason: RenderSuccess"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_render_slot_taken_requeues_after_the_delay_without_rendering() {
    let mut c = Cluster::new(1);
    c.reconcile(pr("Draft", json!({}))).await;
    c.take();
    let before = c.refs();
    let slots = c.ctx.slots.clone();
    let slot = slots.try_take().expect("a slot");
    let mut with_status = pr("Draft", owned());
    merge(
        &mut with_status,
        json!({"status": {"creationSource": "init"}}),
    );
    let action = c.reconcile(with_status).await;
    assert_eq!(action, Action::requeue(Duration::from_secs(2)));
    assert_eq!(
        lines(&c.take()),
        ["PATCH PR/blueprints.app.v1/status as packagerev-controller-render"]
    );
    assert_eq!(c.refs(), before);
    drop(slot);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publishing_tags_the_revision_reports_it_and_requeues() {
    let mut c = Cluster::new(20);
    c.reconcile(pr("Draft", json!({}))).await;
    let mut obj = pr("Published", owned());
    merge(
        &mut obj,
        json!({"status": {"creationSource": "init",
            "conditions": [{"type": "Rendered", "status": "True", "reason": "Rendered",
                "lastTransitionTime": "2026-01-01T00:00:00Z", "message": ""}]}}),
    );
    c.take();
    let action = c.reconcile(obj).await;
    let calls = c.take();
    assert_eq!(
        lines(&calls),
        ["PATCH PR/blueprints.app.v1/status as packagerev-controller"]
    );
    assert_eq!(calls[0].1["status"]["revision"], 1);
    assert!(calls[0].1["status"]["publishedBy"].is_string());
    assert!(
        c.refs().contains(&"refs/tags/app/v1".to_string()),
        "{:?}",
        c.refs()
    );
    assert_eq!(action, Action::requeue(Duration::from_millis(10)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_published_revision_is_deleted_only_once_its_repository_is_gone() {
    let mut c = Cluster::new(20);
    c.reconcile(pr("Draft", json!({}))).await;
    let mut obj = pr("Published", owned());
    merge(
        &mut obj,
        json!({"status": {"creationSource": "init", "conditions": [{"type": "Rendered", "status": "True", "reason": "Rendered", "lastTransitionTime": "2026-01-01T00:00:00Z", "message": ""}]}}),
    );
    c.reconcile(obj.clone()).await;
    c.take();

    // Repository present: blocked, no request, the tag stays.
    merge(
        &mut obj,
        json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}}),
    );
    let action = c.reconcile(obj.clone()).await;
    assert_eq!(action, Action::await_change());
    assert!(c.take().is_empty());
    assert!(c.refs().contains(&"refs/tags/app/v1".to_string()));

    // Repository gone (garbage collection): the finalizer goes, no label
    // recompute.
    c.repos
        .apply_watcher_event(&watcher::Event::Delete(repository("blueprints")));
    c.reconcile(obj).await;
    let calls = c.take();
    assert_eq!(lines(&calls), ["PATCH PR/blueprints.app.v1"]);
    assert_eq!(calls[0].1["metadata"]["finalizers"], Value::Null);
}

/// A draft whose source ran (in Git, status recorded).
async fn with_draft(c: &mut Cluster, extra: Value) -> Value {
    c.reconcile(pr("Draft", json!({}))).await;
    let mut obj = pr("Draft", owned());
    merge(&mut obj, json!({"status": {"creationSource": "init"}}));
    merge(&mut obj, extra);
    c.take();
    obj
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_render_request_that_changed_while_rendering_is_discarded_and_requeued() {
    let mut c = Cluster::new(20);
    let mut obj = with_draft(&mut c, json!({"status": {"conditions": [{"type": "Rendered",
        "status": "True", "reason": "Rendered", "lastTransitionTime": "2026-01-01T00:00:00Z", "message": ""}]},
        "metadata": {"annotations": {"porch.kpt.dev/render-request": "7"}}}))
    .await;
    // The API server already holds a newer request.
    let mut current = obj.clone();
    current["metadata"]["annotations"]["porch.kpt.dev/render-request"] = json!("8");
    c.server
        .lock()
        .unwrap()
        .objects
        .insert(format!("{PATH}/blueprints.app.v1"), current);
    let before = c.refs();
    let head = git2::Repository::open(c.root.path().join("blueprints"))
        .unwrap()
        .refname_to_id("refs/heads/drafts/app/v1")
        .unwrap();
    let action = c.reconcile(obj.clone()).await;
    assert_eq!(action, Action::requeue(Duration::from_millis(10)));
    let calls = c.take();
    assert_eq!(
        lines(&calls),
        [
            "PATCH PR/blueprints.app.v1/status as packagerev-controller-render",
            "GET PR/blueprints.app.v1",
        ]
    );
    assert_eq!(calls[0].1["status"]["renderingPrrResourceVersion"], "7");
    // Nothing written to Git: the output was for the old request.
    assert_eq!(c.refs(), before);
    let after = git2::Repository::open(c.root.path().join("blueprints"))
        .unwrap()
        .refname_to_id("refs/heads/drafts/app/v1")
        .unwrap();
    assert_eq!(head, after);
    // With the request current, it renders and records it as observed.
    obj["metadata"]["annotations"]["porch.kpt.dev/render-request"] = json!("8");
    c.reconcile(obj).await;
    let calls = c.take();
    let observed = calls
        .iter()
        .rev()
        .find(|(l, _)| l.ends_with("as packagerev-controller-render"))
        .unwrap();
    assert_eq!(observed.1["status"]["observedPrrResourceVersion"], "8");
    assert_eq!(condition(&observed.1, "Rendered")["status"], "True");
}

/// Replaces the draft's Kptfile with one whose pipeline fails.
fn failing_pipeline(c: &Cluster) {
    use porch_variants::store::PackageRevisionStore;
    let git = porch_variants::store::git::GitRevisions::open(vec![
        porch_variants::store::git::GitRepoConfig {
            name: "blueprints".into(),
            namespace: "default".into(),
            path: c.root.path().join("blueprints"),
            branch: "main".into(),
            directory: String::new(),
        },
    ])
    .unwrap();
    let mut files = git
        .resources("default", "blueprints.app.v1")
        .unwrap()
        .spec
        .resources
        .unwrap();
    files.insert(
        "Kptfile".into(),
        "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\npipeline:\n  mutators:\n  - image: example.com/no-such-function:v1\n".into(),
    );
    files.insert(
        "cm.yaml".into(),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n".into(),
    );
    git.update_resources("default", "blueprints.app.v1", &files, "")
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_pipeline_is_recorded_and_written_only_when_asked() {
    let mut c = Cluster::new(20);
    let obj = with_draft(
        &mut c,
        json!({"metadata": {"annotations": {"porch.kpt.dev/render-request": "9"}}}),
    )
    .await;
    failing_pipeline(&c);
    let serve = |c: &Cluster, obj: &Value| {
        c.server
            .lock()
            .unwrap()
            .objects
            .insert(format!("{PATH}/blueprints.app.v1"), obj.clone());
    };
    serve(&c, &obj);
    let head = |c: &Cluster| {
        git2::Repository::open(c.root.path().join("blueprints"))
            .unwrap()
            .refname_to_id("refs/heads/drafts/app/v1")
            .unwrap()
    };
    let before = head(&c);
    // Not retried with backoff: the package must change.
    let action = c.reconcile(obj.clone()).await;
    assert_eq!(action, Action::await_change());
    let calls = c.take();
    assert_eq!(
        lines(&calls),
        [
            "PATCH PR/blueprints.app.v1/status as packagerev-controller-render",
            "GET PR/blueprints.app.v1",
            "PATCH PR/blueprints.app.v1/status as packagerev-controller-render",
            "PATCH PR/blueprints.app.v1/status as packagerev-controller",
        ]
    );
    let rendered = condition(&calls[2].1, "Rendered");
    assert_eq!(rendered["reason"], "RenderFailed");
    assert!(
        rendered["message"]
            .as_str()
            .unwrap()
            .contains("no-such-function"),
        "{rendered}"
    );
    assert_eq!(calls[2].1["status"]["observedPrrResourceVersion"], "9");
    assert_eq!(condition(&calls[3].1, "Ready")["reason"], "RenderFailed");
    assert_eq!(head(&c), before, "nothing written");

    // With push-on-render-failure the partial output is written.
    let mut pushing = obj.clone();
    merge(
        &mut pushing,
        json!({"metadata": {"annotations": {
        "porch.kpt.dev/render-request": "10", "porch.kpt.dev/push-on-render-failure": "true"}}}),
    );
    serve(&c, &pushing);
    c.reconcile(pushing).await;
    assert_ne!(head(&c), before, "the partial output is written");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publishing_a_newer_revision_moves_the_latest_label() {
    let mut c = Cluster::new(20);
    let rendered = json!({"status": {"creationSource": "init", "conditions": [{"type": "Rendered",
        "status": "True", "reason": "Rendered", "lastTransitionTime": "2026-01-01T00:00:00Z", "message": ""}]}});
    // v1 published, labelled latest.
    c.reconcile(pr("Draft", json!({}))).await;
    let mut v1 = pr("Published", owned());
    merge(&mut v1, rendered.clone());
    c.reconcile(v1.clone()).await;
    merge(
        &mut v1,
        json!({"metadata": {"labels": {"porch.kpt.dev/latest-revision": "true"}},
        "status": {"revision": 1}}),
    );
    c.put(v1);
    // v2, a copy of v1, published.
    let mut v2 = pr(
        "Draft",
        json!({"metadata": {"name": "blueprints.app.v2"},
        "spec": {"workspaceName": "v2", "source": {"copyFrom": {"name": "blueprints.app.v1"}}}}),
    );
    v2["spec"]["source"] = json!({"copyFrom": {"name": "blueprints.app.v1"}});
    c.reconcile(v2.clone()).await;
    let mut v2p = v2.clone();
    merge(&mut v2p, owned());
    merge(&mut v2p, rendered);
    v2p["spec"]["lifecycle"] = json!("Published");
    c.reconcile(v2p.clone()).await;
    assert!(
        c.refs().contains(&"refs/tags/app/v2".to_string()),
        "{:?}",
        c.refs()
    );
    c.take();
    // The next pass (the status arrived): the labels of the package's
    // revisions, read from the cache, are patched where they differ.
    merge(
        &mut v2p,
        json!({"metadata": {"labels": {"porch.kpt.dev/latest-revision": "false"}},
        "status": {"revision": 2}}),
    );
    c.reconcile(v2p).await;
    let calls = c.take();
    assert_eq!(
        lines(&calls),
        [
            "PATCH PR/blueprints.app.v2/status as packagerev-controller",
            "PATCH PR/blueprints.app.v1",
            "PATCH PR/blueprints.app.v2",
        ]
    );
    assert_eq!(
        calls[1].1,
        json!({"metadata": {"labels": {"porch.kpt.dev/latest-revision": "false"}}})
    );
    assert_eq!(
        calls[2].1,
        json!({"metadata": {"labels": {"porch.kpt.dev/latest-revision": "true"}}})
    );
}
