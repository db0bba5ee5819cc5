//! The Kubernetes controller against a fake API server (kube-rs's
//! mock-service pattern): each scenario asserts the exact sequence of
//! requests one reconcile makes. Caches are filled as the watches would
//! fill them; the core runs natively.

mod kube_support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use kube::runtime::controller::Action;
use kube_support::*;
use porch_variants::kube::controller::{self, Context};
use porch_variants::kube::store::KubeStore;
use porch_variants::store::{ObjectStore, PackageRevisionStore, PrFilter};
use pv_core::api::{PackageRevision, PackageVariant};
use pv_core::variantset::PackageVariantSet;
use serde_json::{json, Value};

const NS: &str = "default";
const PR_PATH: &str = "/apis/porch.kpt.dev/v1alpha1/namespaces/default/packagerevisions";
const PRR_PATH: &str = "/apis/porch.kpt.dev/v1alpha1/namespaces/default/packagerevisionresources";
const PV_PATH: &str = "/apis/config.porch.kpt.dev/v1alpha1/namespaces/default/packagevariants";
const PVS_PATH: &str = "/apis/config.porch.kpt.dev/v1alpha2/namespaces/default/packagevariantsets";

const KPTFILE: &str = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: web\ninfo:\n  description: web\npipeline:\n  mutators:\n  - image: set-labels:v1\n";
const CONTEXT: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kptfile.kpt.dev\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\ndata:\n  name: web\n";
const DEPLOY: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 2\n  template:\n    spec:\n      containers:\n      - name: web\n        image: web:1.0\n";

fn blueprint(image: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("Kptfile".to_string(), KPTFILE.to_string()),
        ("package-context.yaml".to_string(), CONTEXT.to_string()),
        (
            "deployment.yaml".to_string(),
            DEPLOY.replace("web:1.0", image),
        ),
    ])
}

/// A PackageRevision as Porch serves it.
fn revision(
    repo: &str,
    package: &str,
    ws: &str,
    revision: i64,
    lifecycle: &str,
    upstream_ref: Option<&str>,
    owner: Option<&str>,
) -> PackageRevision {
    let name = format!("{repo}.{package}.{ws}");
    let self_ref = match lifecycle {
        "Published" | "DeletionProposed" => format!("{package}/v{revision}"),
        _ => format!("drafts/{package}/{ws}"),
    };
    let mut v = json!({
        "apiVersion": "porch.kpt.dev/v1alpha1", "kind": "PackageRevision",
        "metadata": {"name": name, "namespace": NS, "uid": format!("uid-{name}"), "resourceVersion": "7"},
        "spec": {"packageName": package, "repository": repo, "workspaceName": ws,
                 "revision": revision, "lifecycle": lifecycle},
        "status": {"selfLock": {"type": "git", "git": {"repo": repo, "directory": package, "ref": self_ref, "commit": "c0ffee"}}}
    });
    if let Some(r) = upstream_ref {
        v["status"]["upstreamLock"] = json!({"type": "git", "git": {"repo": "blueprints", "directory": "web", "ref": r, "commit": "c0ffee"}});
    }
    if let Some(pv) = owner {
        v["metadata"]["ownerReferences"] = json!([{"apiVersion": "config.porch.kpt.dev/v1alpha1",
            "kind": "PackageVariant", "name": pv, "uid": format!("uid-{pv}"), "controller": true}]);
    }
    serde_json::from_value(v).expect("revision")
}

fn variant(name: &str, region: &str, extra: Value) -> PackageVariant {
    let mut v = json!({
        "apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "PackageVariant",
        "metadata": {"name": name, "namespace": NS, "uid": format!("uid-{name}"), "resourceVersion": "3",
                     "finalizers": ["config.porch.kpt.dev/packagevariants"]},
        "spec": {
            "upstream": {"repo": "blueprints", "package": "web"},
            "downstream": {"repo": "edge-1", "package": "web"},
            "packageContext": {"data": {"region": region}}
        }
    });
    merge(&mut v, extra);
    serde_json::from_value(v).expect("variant")
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

/// A fake cluster: server state, caches and their writers.
struct Cluster {
    server: Shared,
    ctx: Arc<Context>,
    writers: CacheWriters,
}

impl Cluster {
    fn new() -> Cluster {
        let server: Shared = Arc::new(Mutex::new(ServerState::default()));
        let client = fake_client(server.clone());
        let (caches, writers) = caches();
        let ctx = context(client, caches);
        let mut c = Cluster {
            server,
            ctx,
            writers,
        };
        c.add_revision(
            &revision("blueprints", "web", "v1", 1, "Published", None, None),
            blueprint("web:1.0"),
        );
        c
    }

    fn add_revision(&mut self, pr: &PackageRevision, files: BTreeMap<String, String>) {
        put_revision(&self.ctx.caches, &mut self.writers, pr);
        self.server
            .lock()
            .unwrap()
            .files
            .insert(pr.metadata.name.clone(), files);
    }

    fn files(&self, name: &str) -> BTreeMap<String, String> {
        self.server
            .lock()
            .unwrap()
            .files
            .get(name)
            .cloned()
            .unwrap_or_default()
    }

    async fn reconcile(&mut self, pv: &PackageVariant) -> Result<Action, controller::Error> {
        let obj = put_variant(&mut self.writers, pv);
        controller::reconcile_package_variant(obj, self.ctx.clone()).await
    }

    async fn reconcile_set(
        &mut self,
        pvs: &PackageVariantSet,
    ) -> Result<Action, controller::Error> {
        let obj = put_set(&mut self.writers, pvs);
        controller::reconcile_package_variant_set(obj, self.ctx.clone()).await
    }

    fn lines(&self) -> Vec<String> {
        lines(&self.server)
    }

    /// Runs `f` on a store over the cluster's caches and the controller's
    /// recent writes (on a blocking thread, as a reconcile does).
    async fn with_store<T: Send + 'static>(
        &self,
        f: impl FnOnce(&KubeStore) -> T + Send + 'static,
    ) -> T {
        let ctx = &self.ctx;
        let (client, caches, recent) = (ctx.client.clone(), ctx.caches.clone(), ctx.recent.clone());
        let handle = tokio::runtime::Handle::current();
        tokio::task::spawn_blocking(move || f(&KubeStore::sharing(client, caches, handle, recent)))
            .await
            .expect("joins")
    }

    /// The writes made since the last take, as `METHOD path` lines.
    fn take_writes(&self) -> Vec<String> {
        self.take()
            .iter()
            .filter(|c| is_write(c))
            .map(Call::line)
            .collect()
    }

    fn take(&self) -> Vec<Call> {
        let c = calls(&self.server);
        clear(&self.server);
        c
    }
}

/// Every request a scenario made must be one the deployed RBAC allows.
impl Drop for Cluster {
    fn drop(&mut self) {
        assert_history_granted(&self.server);
    }
}

fn is_list(call: &Call) -> bool {
    let path = call.uri.split('?').next().unwrap_or_default();
    call.method == "GET" && [PR_PATH, PRR_PATH, PV_PATH, PVS_PATH].contains(&path)
}

fn is_write(call: &Call) -> bool {
    call.method != "GET"
}

/// The status the controller applied (the body of its status patch).
fn applied_status(calls: &[Call]) -> Value {
    calls
        .iter()
        .rev()
        .find(|c| c.method == "PATCH" && c.uri.contains("/status"))
        .map(|c| c.body["status"].clone())
        .unwrap_or(Value::Null)
}

fn condition(status: &Value, type_: &str) -> (String, String, String) {
    status["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == type_))
        .map(|c| {
            (
                c["status"].as_str().unwrap_or_default().to_string(),
                c["reason"].as_str().unwrap_or_default().to_string(),
                c["message"].as_str().unwrap_or_default().to_string(),
            )
        })
        .unwrap_or_default()
}

/// Runs the first reconcile of a new variant; returns the created draft as
/// the watch would deliver it, and the variant as stored afterwards.
async fn create_variant(c: &mut Cluster, region: &str) -> (PackageRevision, PackageVariant) {
    let pv = variant("pv1", region, json!({}));
    let action = c.reconcile(&pv).await.expect("reconcile");
    assert_eq!(action, Action::await_change());
    let calls = c.take();
    let post = calls
        .iter()
        .find(|c| c.method == "POST")
        .expect("a create")
        .clone();
    let ws = post.body["spec"]["workspaceName"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let mut draft = revision(
        "edge-1",
        "web",
        &ws,
        0,
        "Draft",
        Some("web/v1"),
        Some("pv1"),
    );
    draft.spec.tasks =
        serde_json::from_value(post.body["spec"]["tasks"].clone()).unwrap_or_default();
    put_revision(&c.ctx.caches, &mut c.writers, &draft);
    let mut stored = pv.clone();
    stored.status = serde_json::from_value(applied_status(&calls)).expect("status");
    (draft, stored)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_variant_adds_finalizer_creates_clone_draft_updates_resources_and_status() {
    let mut c = Cluster::new();
    let mut pv = variant("pv1", "east", json!({}));
    pv.metadata.finalizers.clear();
    let action = c.reconcile(&pv).await.expect("reconcile");
    assert_eq!(action, Action::await_change());
    let calls = c.take();
    let lines: Vec<String> = calls.iter().map(Call::line).collect();
    let draft = "edge-1.web.packagevariant-1";
    assert_eq!(
        lines,
        vec![
            format!("PUT {PV_PATH}/pv1"),
            format!("GET {PRR_PATH}/blueprints.web.v1"),
            format!("POST {PR_PATH}"),
            format!("GET {PRR_PATH}/{draft}"),
            format!("PUT {PRR_PATH}/{draft}"),
            format!("PATCH {PV_PATH}/pv1/status"),
        ]
    );
    // The finalizer is added, the draft is a clone of the upstream owned
    // by the variant, its files carry the mutation, the status is applied
    // by our one field manager.
    assert_eq!(
        calls[0].body["metadata"]["finalizers"],
        json!(["config.porch.kpt.dev/packagevariants"])
    );
    assert_eq!(calls[2].body["spec"]["tasks"][0]["type"], "clone");
    assert_eq!(
        calls[2].body["spec"]["tasks"][0]["clone"]["upstreamRef"]["upstreamRef"]["name"],
        "blueprints.web.v1"
    );
    assert_eq!(
        calls[2].body["metadata"]["ownerReferences"][0]["uid"],
        "uid-pv1"
    );
    assert!(c.files(draft)["package-context.yaml"].contains("region: east"));
    assert!(calls[5].uri.contains("fieldManager=porch-variants"));
    assert!(calls[5].uri.contains("force=true"));
    let status = &calls[5].body["status"];
    assert_eq!(condition(status, "Ready").0, "True");
    assert_eq!(status["downstreamTargets"][0]["name"], draft);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_op_reconcile_after_sync_makes_no_list_and_no_write() {
    let mut c = Cluster::new();
    let (_draft, stored) = create_variant(&mut c, "east").await;
    c.reconcile(&stored).await.expect("reconcile");
    let calls = c.take();
    let lists = calls.iter().filter(|c| is_list(c)).count();
    let writes = calls.iter().filter(|c| is_write(c)).count();
    assert_eq!((lists, writes), (0, 0), "{:?}", c.lines());
    // One uncached read: the draft's resources, to check its mutations.
    assert_eq!(
        calls.iter().map(Call::line).collect::<Vec<_>>(),
        vec![format!("GET {PRR_PATH}/edge-1.web.packagevariant-1")]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_changed_creates_upgrade_draft() {
    let mut c = Cluster::new();
    let (draft, stored) = create_variant(&mut c, "east").await;
    // The draft was approved: published as revision 1.
    let mut published = draft.clone();
    published.spec.lifecycle = pv_core::api::Lifecycle::Published;
    published.spec.revision = 1;
    let files = c.files(&draft.metadata.name);
    c.add_revision(&published, files);
    c.add_revision(
        &revision("blueprints", "web", "v2", 2, "Published", None, None),
        blueprint("web:2.0"),
    );
    c.reconcile(&stored).await.expect("reconcile");
    let calls = c.take();
    let lines: Vec<String> = calls.iter().map(Call::line).collect();
    let new = "edge-1.web.packagevariant-2";
    assert_eq!(
        lines,
        vec![
            format!("GET {PRR_PATH}/blueprints.web.v1"),
            format!("GET {PRR_PATH}/blueprints.web.v2"),
            format!("GET {PRR_PATH}/{}", draft.metadata.name),
            format!("POST {PR_PATH}"),
            format!("GET {PRR_PATH}/{new}"),
            format!("PUT {PRR_PATH}/{new}"),
            format!("PATCH {PV_PATH}/pv1/status"),
        ]
    );
    let task = &calls[3].body["spec"]["tasks"][0];
    assert_eq!(task["type"], "upgrade");
    assert_eq!(
        task["upgrade"]["newUpstreamRef"]["name"],
        "blueprints.web.v2"
    );
    assert!(c.files(new)["deployment.yaml"].contains("web:2.0"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutation_changed_on_published_downstream_creates_edit_draft() {
    let mut c = Cluster::new();
    let (draft, stored) = create_variant(&mut c, "east").await;
    let mut published = draft.clone();
    published.spec.lifecycle = pv_core::api::Lifecycle::Published;
    published.spec.revision = 1;
    let files = c.files(&draft.metadata.name);
    c.add_revision(&published, files);
    let mut pv = stored.clone();
    pv.spec.package_context = serde_json::from_value(json!({"data": {"region": "west"}})).ok();
    c.reconcile(&pv).await.expect("reconcile");
    let calls = c.take();
    let lines: Vec<String> = calls.iter().map(Call::line).collect();
    let new = "edge-1.web.packagevariant-2";
    assert_eq!(
        lines,
        vec![
            format!("GET {PRR_PATH}/{}", draft.metadata.name),
            format!("POST {PR_PATH}"),
            format!("GET {PRR_PATH}/{new}"),
            format!("PUT {PRR_PATH}/{new}"),
            format!("PATCH {PV_PATH}/pv1/status"),
        ]
    );
    assert_eq!(calls[1].body["spec"]["tasks"][0]["type"], "edit");
    assert!(c.files(new)["package-context.yaml"].contains("region: west"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutation_changed_on_draft_updates_it_in_place() {
    let mut c = Cluster::new();
    let (draft, stored) = create_variant(&mut c, "east").await;
    let mut pv = stored.clone();
    pv.spec.package_context = serde_json::from_value(json!({"data": {"region": "west"}})).ok();
    c.reconcile(&pv).await.expect("reconcile");
    let name = draft.metadata.name.clone();
    assert_eq!(
        c.lines(),
        vec![
            format!("GET {PRR_PATH}/{name}"),
            format!("GET {PRR_PATH}/{name}"),
            format!("PUT {PRR_PATH}/{name}"),
        ]
    );
    assert!(c.files(&name)["package-context.yaml"].contains("region: west"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adopt_existing_takes_ownership_of_the_downstream() {
    let mut c = Cluster::new();
    // Mutated content, as a previous variant left it.
    let (draft, _) = create_variant(&mut c, "east").await;
    let files = c.files(&draft.metadata.name);
    let mut c = Cluster::new();
    let existing = revision("edge-1", "web", "v1", 1, "Published", Some("web/v1"), None);
    c.add_revision(&existing, files);
    let pv = variant(
        "pv2",
        "east",
        json!({"spec": {"adoptionPolicy": "adoptExisting", "labels": {"team": "edge"}}}),
    );
    c.reconcile(&pv).await.expect("reconcile");
    let calls = c.take();
    assert_eq!(
        calls.iter().map(Call::line).collect::<Vec<_>>(),
        vec![
            format!("PUT {PR_PATH}/edge-1.web.v1"),
            format!("GET {PRR_PATH}/edge-1.web.v1"),
            format!("PATCH {PV_PATH}/pv2/status"),
        ]
    );
    assert_eq!(
        calls[0].body["metadata"]["ownerReferences"][0]["uid"],
        "uid-pv2"
    );
    assert_eq!(calls[0].body["metadata"]["labels"]["team"], "edge");
}

fn deleting(pv: &PackageVariant, policy: &str) -> PackageVariant {
    let mut pv = pv.clone();
    pv.metadata.deletion_timestamp = Some("2026-01-01T00:00:00Z".into());
    pv.spec.deletion_policy = policy.into();
    pv
}

/// The draft a reconcile created is seen by the next reconcile even before
/// the watch has brought it into the cache (the variant's own status write
/// triggers that reconcile at once): no second draft is created.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draft_not_yet_in_the_cache_is_not_created_again() {
    let mut c = Cluster::new();
    let pv = variant("pv1", "east", json!({}));
    c.reconcile(&pv).await.expect("reconcile");
    let first = c.take();
    assert_eq!(
        first.iter().filter(|c| c.method == "POST").count(),
        1,
        "{first:#?}"
    );
    let mut stored = pv.clone();
    stored.status = serde_json::from_value(applied_status(&first)).expect("status");
    c.reconcile(&stored).await.expect("reconcile");
    let second = c.take();
    assert!(
        second.iter().all(|c| c.method != "POST"),
        "{:#?}",
        second.iter().map(Call::line).collect::<Vec<_>>()
    );
}

/// A reconcile that a revision event triggers before the watch has brought
/// the finalizer the last reconcile added works on the variant as written:
/// it does not add the finalizer again (with a stale resourceVersion, a
/// conflict that would mark the variant not Ready).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_variant_not_yet_updated_in_the_cache_is_read_as_written() {
    let mut c = Cluster::new();
    let mut pv = variant("pv1", "east", json!({}));
    pv.metadata.finalizers.clear();
    c.reconcile(&pv).await.expect("reconcile");
    let first = c.take();
    let finalizer = format!("PUT {PV_PATH}/pv1");
    assert!(first.iter().any(|c| c.line() == finalizer), "{first:#?}");
    c.reconcile(&pv).await.expect("reconcile");
    let second: Vec<String> = c.take().iter().map(Call::line).collect();
    assert!(!second.contains(&finalizer), "{second:#?}");
}

/// A reconcile that outlives this replica's leadership stops at its next
/// write: nothing is written beside the new leader.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconcile_stops_writing_when_leadership_is_lost() {
    let mut c = Cluster::new();
    let (leader_tx, leader_rx) = tokio::sync::watch::channel(true);
    c.ctx = Arc::new(Context::new(
        c.ctx.client.clone(),
        c.ctx.caches.clone(),
        Arc::new(porch_variants::engine_api::NativeCore),
        Arc::new(porch_variants::kube::metrics::Metrics::default()),
        leader_rx,
    ));
    let post = format!("POST {PR_PATH}");
    c.server.lock().unwrap().held.insert(post.clone());
    let obj = put_variant(&mut c.writers, &variant("pv1", "east", json!({})));
    let reconcile = tokio::spawn(controller::reconcile_package_variant(obj, c.ctx.clone()));
    while !c.lines().contains(&post) {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    // The lease is lost while the draft is being created.
    leader_tx.send_replace(false);
    c.server.lock().unwrap().held.remove(&post);
    let e = reconcile
        .await
        .expect("join")
        .expect_err("the next write is refused");
    assert_eq!(e.metric_label(), "not_leader", "{e}");
    let lines = c.lines();
    let after: Vec<&String> = lines
        .iter()
        .skip_while(|l| **l != post)
        .skip(1)
        .filter(|l| !l.starts_with("GET "))
        .collect();
    assert!(
        after.is_empty(),
        "written after the lease was lost: {after:?}"
    );
}

/// A variant with a published revision 1 and a draft (an edit), both owned.
async fn variant_with_two_revisions(c: &mut Cluster) -> (PackageVariant, String, String) {
    let (draft, stored) = create_variant(c, "east").await;
    let mut published = draft.clone();
    published.spec.lifecycle = pv_core::api::Lifecycle::Published;
    published.spec.revision = 1;
    let files = c.files(&draft.metadata.name);
    c.add_revision(&published, files.clone());
    let second = revision(
        "edge-1",
        "web",
        "packagevariant-2",
        0,
        "Draft",
        Some("web/v1"),
        Some("pv1"),
    );
    c.add_revision(&second, files);
    (stored, draft.metadata.name, second.metadata.name)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_policy_deletes_drafts_proposes_deletion_of_published_then_removes_finalizer() {
    let mut c = Cluster::new();
    let (pv, published, draft) = variant_with_two_revisions(&mut c).await;
    c.reconcile(&deleting(&pv, "delete"))
        .await
        .expect("reconcile");
    let calls = c.take();
    let lines: Vec<String> = calls.iter().map(Call::line).collect();
    // Propose deletion of the published revision, then orphan it (so it
    // survives for a human to approve), delete the draft, and only then
    // remove the finalizer.
    assert_eq!(
        lines,
        vec![
            format!("PUT {PR_PATH}/{published}"),
            format!("PUT {PR_PATH}/{published}"),
            format!("DELETE {PR_PATH}/{draft}"),
            format!("PUT {PV_PATH}/pv1"),
        ]
    );
    assert_eq!(calls[0].body["spec"]["lifecycle"], "DeletionProposed");
    assert_eq!(calls[1].body["metadata"]["ownerReferences"], Value::Null);
    // The second write carries the version the first one returned.
    assert_ne!(
        calls[1].body["metadata"]["resourceVersion"],
        calls[0].body["metadata"]["resourceVersion"]
    );
    assert_eq!(calls[3].body["metadata"]["finalizers"], Value::Null);
}

/// A policy that is neither `delete` nor `orphan` deletes and orphans
/// nothing, so the finalizer stays (the revisions are not left owned by a
/// variant that is gone, as upstream leaves them), and the error names the
/// field to fix.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_deletion_policy_keeps_the_finalizer_and_names_the_field() {
    let mut c = Cluster::new();
    let (pv, published, draft) = variant_with_two_revisions(&mut c).await;
    let e = c
        .reconcile(&deleting(&pv, "Orphan"))
        .await
        .expect_err("nothing can be cleaned up");
    let text = format!("{e:#}");
    let mut owned = [published, draft];
    owned.sort();
    assert!(
        text.contains(&format!(
            "deletion not complete: still owns {}; spec.deletionPolicy is \"Orphan\" and can only be \"orphan\" or \"delete\"",
            owned.join(", ")
        )),
        "{text}"
    );
    assert!(c.take().iter().all(|call| call.method == "GET"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn orphan_policy_drops_ownership_then_removes_finalizer() {
    let mut c = Cluster::new();
    let (pv, published, draft) = variant_with_two_revisions(&mut c).await;
    c.reconcile(&deleting(&pv, "orphan"))
        .await
        .expect("reconcile");
    let calls = c.take();
    let lines: Vec<String> = calls.iter().map(Call::line).collect();
    let mut expected = vec![
        format!("PUT {PR_PATH}/{draft}"),
        format!("PUT {PR_PATH}/{published}"),
    ];
    expected.sort();
    expected.push(format!("PUT {PV_PATH}/pv1"));
    let mut got = lines.clone();
    let last = got.pop();
    got.sort();
    got.extend(last);
    assert_eq!(got, expected);
    for call in &calls[..2] {
        assert_eq!(
            call.body["metadata"]["ownerReferences"],
            Value::Null,
            "{call:?}"
        );
    }
    // With its finalizer gone the variant is gone: it is not read as the
    // update's answer until the watch shows the deletion.
    let listed = c
        .with_store(|store| store.list_package_variants(Some(NS)))
        .await
        .expect("lists");
    assert!(listed.is_empty(), "{listed:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draft_whose_content_cannot_be_written_is_deleted() {
    let mut c = Cluster::new();
    let pv = variant("pv1", "east", json!({}));
    let draft = "edge-1.web.packagevariant-1";
    let put = format!("PUT {PRR_PATH}/{draft}");
    c.server.lock().unwrap().fail.insert(put.clone());
    c.reconcile(&pv).await.expect_err("the content write fails");
    let lines = c.lines();
    assert_eq!(
        lines[lines.len() - 3..],
        [
            put,
            format!("DELETE {PR_PATH}/{draft}"),
            format!("PATCH {PV_PATH}/pv1/status"),
        ],
        "{lines:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_cleanup_keeps_the_finalizer_and_retries() {
    let mut c = Cluster::new();
    let (pv, _published, draft) = variant_with_two_revisions(&mut c).await;
    let delete = format!("DELETE {PR_PATH}/{draft}");
    c.server.lock().unwrap().fail.insert(delete.clone());
    let pv = deleting(&pv, "delete");
    let err = c.reconcile(&pv).await.expect_err("cleanup fails");
    let lines = c.lines();
    assert!(lines.contains(&delete));
    assert!(
        !lines.contains(&format!("PUT {PV_PATH}/pv1")),
        "finalizer removed although cleanup failed: {lines:?}"
    );
    // Retried with backoff, growing.
    let obj = put_variant(&mut c.writers, &pv);
    let first = controller::package_variant_error_policy(obj.clone(), &err, c.ctx.clone());
    let second = controller::package_variant_error_policy(obj, &err, c.ctx.clone());
    assert_eq!(first, Action::requeue(controller::BACKOFF_BASE));
    assert_eq!(second, Action::requeue(controller::BACKOFF_BASE * 2));
    // The retry succeeds once the API does.
    c.server.lock().unwrap().fail.clear();
    c.take();
    c.reconcile(&pv).await.expect("retry");
    let lines = c.lines();
    assert!(lines.contains(&delete));
    assert_eq!(lines.last(), Some(&format!("PUT {PV_PATH}/pv1")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validation_error_sets_stalled_and_does_not_requeue() {
    let mut c = Cluster::new();
    let pv = variant(
        "pv1",
        "east",
        json!({"spec": {"downstream": null, "injectors": [{"name": ""}]}}),
    );
    let action = c.reconcile(&pv).await.expect("reconcile");
    assert_eq!(action, Action::await_change());
    let calls = c.take();
    assert_eq!(
        calls.iter().map(Call::line).collect::<Vec<_>>(),
        vec![format!("PATCH {PV_PATH}/pv1/status")]
    );
    let status = &calls[0].body["status"];
    let (s, reason, message) = condition(status, "Stalled");
    assert_eq!((s.as_str(), reason.as_str()), ("True", "ValidationError"));
    assert_eq!(
        message,
        "missing required field spec.downstream; spec.injectors[0].name must not be empty"
    );
    assert_eq!(condition(status, "Ready").0, "False");
}

fn set(targets: Value) -> PackageVariantSet {
    serde_json::from_value(json!({
        "apiVersion": "config.porch.kpt.dev/v1alpha2", "kind": "PackageVariantSet",
        "metadata": {"name": "fleet", "namespace": NS, "uid": "uid-fleet", "resourceVersion": "5"},
        "spec": {"upstream": {"repo": "blueprints", "package": "web", "revision": 1}, "targets": targets}
    }))
    .expect("set")
}

fn child(name: &str, repo: &str) -> PackageVariant {
    serde_json::from_value(json!({
        "apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "PackageVariant",
        "metadata": {"name": name, "namespace": NS, "uid": format!("uid-{name}"), "resourceVersion": "9",
            "labels": {"config.porch.kpt.dev/packagevariantset": "uid-fleet"},
            "finalizers": ["config.porch.kpt.dev/packagevariants"],
            "ownerReferences": [{"apiVersion": "config.porch.kpt.dev/v1alpha2", "kind": "PackageVariantSet",
                "name": "fleet", "uid": "uid-fleet", "controller": true}]},
        "spec": {"upstream": {"repo": "blueprints", "package": "web", "revision": 1},
                 "downstream": {"repo": repo, "package": "web"}, "labels": {"stale": "yes"}}
    }))
    .expect("child")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_creates_updates_and_deletes_children() {
    let mut c = Cluster::new();
    put_variant(&mut c.writers, &child("fleet-edge-1-web", "edge-1"));
    put_variant(&mut c.writers, &child("fleet-edge-3-web", "edge-3"));
    let pvs = set(json!([{"repositories": [{"name": "edge-1"}, {"name": "edge-2"}]}]));
    c.reconcile_set(&pvs).await.expect("reconcile");
    let calls = c.take();
    assert_eq!(
        calls.iter().map(Call::line).collect::<Vec<_>>(),
        vec![
            format!("DELETE {PV_PATH}/fleet-edge-3-web"),
            format!("PUT {PV_PATH}/fleet-edge-1-web"),
            format!("POST {PV_PATH}"),
            format!("PATCH {PVS_PATH}/fleet/status"),
        ]
    );
    assert_eq!(calls[1].body["metadata"]["resourceVersion"], "9");
    assert_eq!(calls[1].body["spec"]["labels"], Value::Null);
    assert_eq!(calls[2].body["metadata"]["name"], "fleet-edge-2-web");
    assert_eq!(calls[2].body["spec"]["downstream"]["repo"], "edge-2");
    assert!(calls[3].uri.contains("fieldManager=porch-variants"));
    assert_eq!(condition(&calls[3].body["status"], "Ready").0, "True");
}

/// A cluster with one draft of pv1, `edge-1.web.packagevariant-1`; its name.
fn with_a_draft() -> (Cluster, String) {
    let mut c = Cluster::new();
    let draft = revision(
        "edge-1",
        "web",
        "packagevariant-1",
        0,
        "Draft",
        None,
        Some("pv1"),
    );
    c.add_revision(&draft, blueprint("web:1.0"));
    (c, draft.metadata.name)
}

/// A draft's files that changed after a reconcile read them (a user's edit)
/// are not overwritten: the update is refused before any write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_changed_since_they_were_read_are_not_overwritten() {
    let (c, name) = with_a_draft();
    let (read, edited, stale) = c
        .with_store(move |store| {
            let read = store.resources(NS, &name).expect("reads");
            let version = read.metadata.resource_version.clone();
            let files = read.spec.resources.clone().unwrap_or_default();
            let edited = store.update_resources(NS, &name, &files, &version);
            let stale = store.update_resources(NS, &name, &BTreeMap::new(), &version);
            (read, edited, stale)
        })
        .await;
    assert_eq!(read.metadata.resource_version, "1");
    edited.expect("the first update, at the version read");
    let err = stale.expect_err("an update at the version read before it");
    assert!(
        err.to_string().contains("changed since they were read"),
        "{err}"
    );
    let puts = c
        .lines()
        .iter()
        .filter(|l| l.starts_with("PUT") && l.contains("packagerevisionresources"))
        .count();
    assert_eq!(puts, 1);
    assert_eq!(c.files("edge-1.web.packagevariant-1"), blueprint("web:1.0"));
}

/// Porch answers a revision's deletion with the revision as it was, not
/// marked: until the watch shows the deletion, the store reads the draft as
/// gone, not as that answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_draft_reads_as_gone() {
    let (c, _) = with_a_draft();
    let (deleted, listed) = c
        .with_store(|store| {
            let deleted = store.delete(NS, "edge-1.web.packagevariant-1");
            (deleted, store.list(NS, &PrFilter::default()))
        })
        .await;
    deleted.expect("deletes");
    let names: Vec<String> = listed
        .expect("lists")
        .into_iter()
        .map(|p| p.metadata.name)
        .collect();
    assert_eq!(names, ["blueprints.web.v1"]);
}

/// A child deleted while it has a finalizer is only marked: until the watch
/// shows it, the store reads it as the API server returned it, terminating,
/// not as gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_child_with_a_finalizer_reads_as_terminating() {
    let mut c = Cluster::new();
    let old = child("fleet-edge-3-web", "edge-3");
    put_variant(&mut c.writers, &old);
    let mut marked = porch_variants::kube::api::PackageVariant::from_core(&old).expect("converts");
    marked.metadata.deletion_timestamp =
        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            "2026-01-01T00:00:00Z".parse().expect("a time"),
        ));
    marked.metadata.resource_version = Some("10".into());
    c.server.lock().unwrap().marked.insert(
        "fleet-edge-3-web".into(),
        serde_json::to_value(&marked).expect("JSON"),
    );
    let pvs = set(json!([{"repositories": [{"name": "edge-1"}]}]));
    c.reconcile_set(&pvs).await.expect("reconcile");
    assert!(c
        .lines()
        .contains(&format!("DELETE {PV_PATH}/fleet-edge-3-web")));
    let listed = c
        .with_store(|store| store.list_package_variants(Some(NS)))
        .await
        .expect("lists");
    let terminating = listed
        .iter()
        .find(|pv| pv.metadata.name == "fleet-edge-3-web")
        .map(|pv| pv.metadata.deletion_timestamp.clone());
    assert_eq!(
        terminating,
        Some(Some("2026-01-01T00:00:00Z".into())),
        "{listed:#?}"
    );
}

/// A child the set created is seen by the set's next reconcile (which its
/// own status write triggers at once) before the watch brings it into the
/// cache: it is not created again, and the set stays Ready.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_not_yet_in_the_cache_is_not_created_again() {
    let mut c = Cluster::new();
    let pvs = set(json!([{"repositories": [{"name": "edge-1"}]}]));
    c.reconcile_set(&pvs).await.expect("reconcile");
    let first = c.take();
    assert_eq!(first[0].line(), format!("POST {PV_PATH}"));
    c.reconcile_set(&pvs).await.expect("reconcile");
    let second: Vec<String> = c.take().iter().map(Call::line).collect();
    assert!(second.iter().all(|l| !l.starts_with("POST")), "{second:#?}");
}

/// A child that cannot be written is reported in the set's status, and the
/// reconcile fails so that the controller tries again with backoff (a
/// transient API error does not leave the set stalled until something else
/// changes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_child_write_is_reported_and_retried() {
    let mut c = Cluster::new();
    c.server
        .lock()
        .unwrap()
        .fail
        .insert(format!("POST {PV_PATH}"));
    let pvs = set(json!([{"repositories": [{"name": "edge-1"}]}]));
    let e = c.reconcile_set(&pvs).await.expect_err("the write fails");
    assert!(format!("{e}").contains("fleet"), "{e}");
    let calls = c.take();
    assert_eq!(
        calls.iter().map(Call::line).collect::<Vec<_>>(),
        vec![
            format!("POST {PV_PATH}"),
            format!("PATCH {PVS_PATH}/fleet/status")
        ]
    );
    let (s, reason, message) = condition(&calls[1].body["status"], "Stalled");
    assert_eq!((s.as_str(), reason.as_str()), ("True", "UnexpectedError"));
    assert!(message.contains("injected failure"), "{message}");
    // Once the API answers again, the retry creates the child.
    c.server.lock().unwrap().fail.clear();
    c.reconcile_set(&pvs).await.expect("reconcile");
    assert_eq!(c.take()[0].line(), format!("POST {PV_PATH}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revision_events_map_to_owner_and_to_variants_of_the_package() {
    let mut c = Cluster::new();
    put_variant(&mut c.writers, &variant("pv1", "east", json!({})));
    put_variant(
        &mut c.writers,
        &variant(
            "other",
            "east",
            json!({"spec": {"upstream": {"repo": "blueprints", "package": "db"},
            "downstream": {"repo": "edge-9", "package": "db"}}}),
        ),
    );
    let owned = revision("edge-7", "web", "ws", 0, "Draft", None, Some("owner-pv"));
    let k = porch_variants::kube::api::PackageRevision::from_core(&owned).expect("pr");
    let names: Vec<String> = controller::package_variants_of_revision(&c.ctx.caches, &k)
        .into_iter()
        .map(|r| r.name)
        .collect();
    assert_eq!(names, vec!["owner-pv"]);
    let upstream = revision("blueprints", "web", "v2", 2, "Published", None, None);
    let k = porch_variants::kube::api::PackageRevision::from_core(&upstream).expect("pr");
    let names: Vec<String> = controller::package_variants_of_revision(&c.ctx.caches, &k)
        .into_iter()
        .map(|r| r.name)
        .collect();
    assert_eq!(names, vec!["pv1"]);
}

use porch_variants::kube::api::KubeResource;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn injection_sources_and_set_targets_map_to_the_objects_that_use_them() {
    let mut c = Cluster::new();
    put_variant(
        &mut c.writers,
        &variant(
            "uses-east",
            "east",
            json!({"spec": {"injectors": [{"kind": "ConfigMap", "name": "east-endpoints"}]}}),
        ),
    );
    put_variant(
        &mut c.writers,
        &variant(
            "uses-team",
            "east",
            json!({"spec": {"injectors": [{"group": "example.com", "name": "east-endpoints"}]}}),
        ),
    );
    put_variant(&mut c.writers, &variant("plain", "east", json!({})));
    let names = |refs: Vec<
        kube::runtime::reflector::ObjectRef<porch_variants::kube::api::PackageVariant>,
    >| { refs.into_iter().map(|r| r.name).collect::<Vec<_>>() };
    assert_eq!(
        names(controller::package_variants_of_source(
            &c.ctx.caches,
            "v1",
            "ConfigMap",
            NS,
            "east-endpoints"
        )),
        vec!["uses-east"]
    );
    assert!(controller::package_variants_of_source(
        &c.ctx.caches,
        "v1",
        "ConfigMap",
        "other-ns",
        "east-endpoints"
    )
    .is_empty());
    put_set(
        &mut c.writers,
        &set(json!([{"repositories": [{"name": "edge-1"}]},
                    {"objectSelector": {"apiVersion": "example.com/v1", "kind": "Team"}}])),
    );
    let sets = |refs: Vec<
        kube::runtime::reflector::ObjectRef<porch_variants::kube::api::PackageVariantSet>,
    >| { refs.into_iter().map(|r| r.name).collect::<Vec<_>>() };
    assert_eq!(
        sets(controller::package_variant_sets_of_target(
            &c.ctx.caches,
            "config.porch.kpt.dev/v1alpha1",
            "Repository",
            NS,
            "edge-1"
        )),
        vec!["fleet"]
    );
    assert!(controller::package_variant_sets_of_target(
        &c.ctx.caches,
        "config.porch.kpt.dev/v1alpha1",
        "Repository",
        NS,
        "edge-2"
    )
    .is_empty());
    assert_eq!(
        sets(controller::package_variant_sets_of_target(
            &c.ctx.caches,
            "example.com/v1",
            "Team",
            NS,
            "any"
        )),
        vec!["fleet"]
    );
}

/// Upstream Porch enqueues every PackageVariant of the namespace on any
/// PackageRevision event; here a downstream's event reaches its owner only,
/// and an upstream's event the variants of that upstream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revision_event_reaches_only_the_variants_it_concerns() {
    let mut c = Cluster::new();
    let n = 200;
    for i in 0..n {
        put_variant(
            &mut c.writers,
            &variant(
                &format!("pv{i}"),
                "east",
                json!({"spec": {"downstream": {"repo": format!("edge-{i}"), "package": "web"}}}),
            ),
        );
    }
    let downstream = revision(
        "edge-17",
        "web",
        "packagevariant-1",
        0,
        "Draft",
        Some("web/v1"),
        Some("pv17"),
    );
    let k = porch_variants::kube::api::PackageRevision::from_core(&downstream).expect("pr");
    let refs = controller::package_variants_of_revision(&c.ctx.caches, &k);
    assert_eq!(
        refs.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(),
        vec!["pv17"]
    );
    let upstream = revision("blueprints", "web", "v2", 2, "Published", None, None);
    let k = porch_variants::kube::api::PackageRevision::from_core(&upstream).expect("pr");
    assert_eq!(
        controller::package_variants_of_revision(&c.ctx.caches, &k).len(),
        n
    );
}

/// Porch's render result of the written resources reaches the variant's
/// status (kpt#3891): the error text, not only a generic condition.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn render_failure_is_reported_in_downstream_targets() {
    let mut c = Cluster::new();
    let error = "pipeline failed: set-labels:v1: exit status 1";
    c.server.lock().unwrap().render_error = error.into();
    let pv = variant("pv1", "east", json!({}));
    c.reconcile(&pv).await.expect("reconcile");
    let status = applied_status(&c.take());
    assert_eq!(
        status["downstreamTargets"][0]["name"],
        "edge-1.web.packagevariant-1"
    );
    assert_eq!(
        status["downstreamTargets"][0]["renderStatus"]["error"],
        error
    );
    assert_eq!(
        status["downstreamTargets"][0]["renderStatus"]["result"]["exitCode"],
        1
    );
}

/// A staged rollout in Kubernetes mode: a set at blueprint v2 over three
/// children made from v1, steps `first` (edge-1) and the rest. Only the
/// first child is updated until its downstream is published from v2; then
/// the others, one at a time (`maxUpdate: 1`); pause holds them, and so
/// does a failing first child until it recovers. The status patch carries
/// each step's counts and the `Rollout` condition.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_staged_set_updates_the_next_step_only_once_the_first_is_published() {
    let mut c = Cluster::new();
    c.add_revision(
        &revision("blueprints", "web", "v2", 2, "Published", None, None),
        blueprint("web:2.0"),
    );
    for i in 1..=3 {
        let name = format!("fleet-edge-{i}-web");
        let mut pv = child(&name, &format!("edge-{i}"));
        pv.spec.labels.clear();
        put_variant(&mut c.writers, &pv);
        c.add_revision(
            &revision(
                &format!("edge-{i}"),
                "web",
                "v1",
                1,
                "Published",
                Some("web/v1"),
                Some(&name),
            ),
            blueprint("web:1.0"),
        );
    }
    let staged = |paused: bool| {
        let mut s = set(
            json!([{"repositories": [{"name": "edge-1"}, {"name": "edge-2"}, {"name": "edge-3"}]}]),
        );
        s.spec.upstream.as_mut().unwrap().revision = 2;
        s.spec.rollout_strategy = serde_json::from_value(json!({"paused": paused, "steps": [
            {"name": "first", "selector": {"matchExpressions": [{"key": "name", "operator": "In", "values": ["edge-1"]}]}},
            {"name": "rest", "maxUpdate": 1}
        ]}))
        .unwrap();
        s
    };
    // Repositories are labelled with their name for the step selector.
    for i in 1..=3 {
        let mut r = pv_core::variantset::Repository::default();
        r.metadata.name = format!("edge-{i}");
        r.metadata.namespace = NS.into();
        r.metadata
            .labels
            .insert("name".into(), r.metadata.name.clone());
        put_repository(&mut c.writers, &r);
    }
    c.reconcile_set(&staged(false)).await.expect("reconcile");
    let calls = c.take();
    let writes: Vec<String> = calls
        .iter()
        .filter(|c| is_write(c))
        .map(Call::line)
        .collect();
    assert_eq!(
        writes,
        vec![
            format!("PUT {PV_PATH}/fleet-edge-1-web"),
            format!("PATCH {PVS_PATH}/fleet/status"),
        ]
    );
    let status = &calls.iter().rev().find(|c| is_write(c)).unwrap().body["status"];
    assert_eq!(status["rollout"]["currentStep"], "first", "{status}");
    assert_eq!(status["rollout"]["steps"][1]["pending"], 2, "{status}");
    assert_eq!(condition(status, "Rollout").1, "Progressing");

    // edge-1 took v2 and its upgrade is published: the rest, one at a time.
    let mut first = child("fleet-edge-1-web", "edge-1");
    first.spec.labels.clear();
    first.spec.upstream.as_mut().unwrap().revision = 2;
    put_variant(&mut c.writers, &first);
    c.add_revision(
        &revision(
            "edge-1",
            "web",
            "v2",
            2,
            "Published",
            Some("web/v2"),
            Some("fleet-edge-1-web"),
        ),
        blueprint("web:2.0"),
    );
    c.reconcile_set(&staged(true)).await.expect("reconcile");
    let writes = c.take_writes();
    assert!(
        !writes.iter().any(|w| w.starts_with("PUT")),
        "paused: {writes:?}"
    );
    // edge-1 failing stops the rollout, named in the status.
    // (Each write the API server takes bumps the resource version.)
    let mut failing = first.clone();
    failing.metadata.resource_version = "10".into();
    failing.status.conditions = vec![pv_core::api::Condition {
        type_: "Ready".into(),
        status: "False".into(),
        reason: "Error".into(),
        ..Default::default()
    }];
    put_variant(&mut c.writers, &failing);
    c.reconcile_set(&staged(false)).await.expect("reconcile");
    let calls = c.take();
    assert!(
        !calls.iter().any(|c| c.method == "PUT"),
        "failing: {calls:?}"
    );
    let status = &calls.iter().rev().find(|c| is_write(c)).unwrap().body["status"];
    assert_eq!(condition(status, "Rollout").1, "Failed", "{status}");
    assert_eq!(
        status["rollout"]["failed"][0], "fleet-edge-1-web",
        "{status}"
    );

    // Recovered: the rollout goes on.
    let mut recovered = first.clone();
    recovered.metadata.resource_version = "11".into();
    put_variant(&mut c.writers, &recovered);
    c.reconcile_set(&staged(false)).await.expect("reconcile");
    let writes = c.take_writes();
    assert_eq!(writes[0], format!("PUT {PV_PATH}/fleet-edge-2-web"));
    assert!(!writes.iter().any(|w| w.contains("edge-3")), "{writes:?}");
}

/// A variant annotated `approval.nephio.org/policy: always` has its draft
/// proposed once it is Ready and the draft's gates are met, then approved
/// through Porch's approval subresource; a draft whose gate is not met
/// waits, and the reconcile comes back for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_policy_proposes_then_approves_the_variants_draft() {
    let mut c = Cluster::new();
    let (mut draft, mut pv) = create_variant(&mut c, "east").await;
    pv.spec
        .annotations
        .insert("approval.nephio.org/policy".into(), "always".into());
    pv.metadata.resource_version = "4".into();
    assert_eq!(
        condition(&serde_json::to_value(&pv.status).unwrap(), "Ready").0,
        "True"
    );

    // The draft as the annotated variant makes it, with a gate not met:
    // nothing written, looked at again.
    draft
        .metadata
        .annotations
        .insert("approval.nephio.org/policy".into(), "always".into());
    draft.spec.readiness_gates = vec![pv_core::api::package_revision::ReadinessGate {
        condition_type: "Specialized".into(),
    }];
    draft.metadata.resource_version = "8".into();
    put_revision(&c.ctx.caches, &mut c.writers, &draft);
    let action = c.reconcile(&pv).await.expect("reconcile");
    assert_eq!(action, Action::requeue(controller::APPROVAL_RETRY));
    assert!(
        !c.take()
            .iter()
            .any(|call| call.uri.starts_with(PR_PATH) && is_write(call)),
        "waits for its gate"
    );

    // Gate met: proposed.
    draft.status.conditions = vec![pv_core::api::package_revision::PackageCondition {
        type_: "Specialized".into(),
        status: "True".into(),
        ..Default::default()
    }];
    draft.metadata.resource_version = "9".into();
    put_revision(&c.ctx.caches, &mut c.writers, &draft);
    c.reconcile(&pv).await.expect("reconcile");
    let name = draft.metadata.name.clone();
    let calls = c.take();
    let put = calls
        .iter()
        .find(|call| call.method == "PUT" && call.uri.starts_with(&format!("{PR_PATH}/{name}")))
        .unwrap_or_else(|| {
            panic!(
                "no proposal: {:?}",
                calls.iter().map(Call::line).collect::<Vec<_>>()
            )
        });
    assert_eq!(put.body["spec"]["lifecycle"], "Proposed");

    // Proposed: approved through the approval subresource.
    draft.spec.lifecycle = pv_core::api::Lifecycle::Proposed;
    draft.metadata.resource_version = "10".into();
    put_revision(&c.ctx.caches, &mut c.writers, &draft);
    c.reconcile(&pv).await.expect("reconcile");
    let lines: Vec<String> = c.take().iter().map(Call::line).collect();
    assert!(
        lines.contains(&format!("PUT {PR_PATH}/{name}/approval")),
        "{lines:?}"
    );
}

/// The planned writes of a dry run, with the reconcile that planned each.
type Plan = Arc<Mutex<Vec<(String, porch_variants::store::planned::PlannedWrite)>>>;

/// A cluster whose controller plans its writes (`controller --dry-run`).
fn dry_run_cluster() -> (Cluster, Plan) {
    let mut c = Cluster::new();
    let plan: Plan = Arc::default();
    let sink = plan.clone();
    Arc::get_mut(&mut c.ctx)
        .expect("the cluster's own context")
        .dry_run = Some(controller::DryRun::to(move |reconcile, w| {
        sink.lock()
            .unwrap()
            .push((reconcile.to_string(), w.clone()));
    }));
    (c, plan)
}

fn planned(plan: &Plan) -> Vec<String> {
    plan.lock()
        .unwrap()
        .iter()
        .map(|(_, w)| format!("{}: {}", w.object, w.action))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dry_run_plans_what_the_reconcile_then_writes_and_writes_nothing() {
    let (mut dry, plan) = dry_run_cluster();
    let mut pv = variant("pv1", "east", json!({}));
    pv.metadata.finalizers.clear();
    let action = dry.reconcile(&pv).await.expect("reconcile");
    assert_eq!(action, Action::await_change());
    let calls = dry.take();
    assert!(
        calls.iter().all(|c| c.method == "GET"),
        "a dry run wrote: {:?}",
        dry.lines()
    );
    let draft = "edge-1.web.packagevariant-1";
    assert_eq!(
        planned(&plan),
        vec![
            format!("PackageVariant {NS}/pv1: update"),
            format!("PackageRevision {NS}/{draft}: create"),
            format!("PackageVariant {NS}/pv1: update status"),
        ]
    );
    let writes = plan.lock().unwrap().clone();
    assert!(writes
        .iter()
        .all(|(r, _)| r == &format!("PackageVariant {NS}/pv1")));
    assert!(
        writes[0]
            .1
            .diff
            .contains("+      \"config.porch.kpt.dev/packagevariants\""),
        "{}",
        writes[0].1.diff
    );
    assert_eq!(writes[1].1.detail, "clone draft");
    assert!(
        writes[2].1.detail.starts_with("Ready=True"),
        "{:?}",
        writes[2]
    );

    // The real run writes the same objects, and the draft's content is
    // what the planned diff adds, line for line.
    let mut real = Cluster::new();
    real.reconcile(&pv).await.expect("reconcile");
    assert_eq!(
        real.take_writes(),
        vec![
            format!("PUT {PV_PATH}/pv1"),
            format!("POST {PR_PATH}"),
            format!("PUT {PRR_PATH}/{draft}"),
            format!("PATCH {PV_PATH}/pv1/status"),
        ]
    );
    let files = real.files(draft);
    let mut added = String::new();
    for (path, text) in &files {
        added.push_str(&format!("+++ {draft}/{path}\n"));
        for line in text.lines() {
            added.push_str(&format!("+{line}\n"));
        }
    }
    let diff = &writes[1].1.diff;
    let plus: String = diff
        .lines()
        .filter(|l| l.starts_with('+'))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(plus, added, "planned:\n{diff}");
    assert!(files["package-context.yaml"].contains("region: east"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dry_run_of_a_set_follows_it_into_the_variants_it_would_create() {
    let (mut dry, plan) = dry_run_cluster();
    put_variant(&mut dry.writers, &child("fleet-edge-1-web", "edge-1"));
    let pvs = set(json!([{"repositories": [{"name": "edge-1"}, {"name": "edge-2"}]}]));
    dry.reconcile_set(&pvs).await.expect("reconcile");
    assert!(
        dry.take().iter().all(|c| c.method == "GET"),
        "a dry run wrote: {:?}",
        dry.lines()
    );
    let by = |reconcile: &str| -> Vec<String> {
        plan.lock()
            .unwrap()
            .iter()
            .filter(|(r, _)| r == reconcile)
            .map(|(_, w)| format!("{}: {}", w.object, w.action))
            .collect()
    };
    // The set's own writes, then what its new and changed children would
    // do once the variant controller reconciles them.
    let all = by(&format!("PackageVariantSet {NS}/fleet"));
    assert_eq!(
        all[..3],
        [
            format!("PackageVariant {NS}/fleet-edge-1-web: update"),
            format!("PackageVariant {NS}/fleet-edge-2-web: create"),
            format!("PackageVariantSet {NS}/fleet: update status"),
        ]
    );
    assert!(
        all.contains(&format!(
            "PackageRevision {NS}/edge-2.web.packagevariant-1: create"
        )),
        "{all:#?}"
    );
    assert!(
        all.contains(&format!(
            "PackageRevision {NS}/edge-1.web.packagevariant-1: create"
        )),
        "{all:#?}"
    );
    // The update drops the child's stale label: the diff says so.
    let update = &plan.lock().unwrap()[0].1;
    assert!(
        update.diff.contains("-      \"stale\": \"yes\""),
        "{}",
        update.diff
    );
}

/// Nephio's approval controller on revisions annotated by hand (no variant
/// asks): a gate not met waits (requeued, nothing written), then the draft
/// is proposed, then approved through the subresource; a revision owned by
/// a variant that asks is left to that variant's reconcile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revision_annotated_by_hand_is_proposed_then_approved() {
    use porch_variants::kube::api::{KubeResource, PackageRevision as KubePr};
    let mut c = Cluster::new();
    let mut draft = revision("blueprints", "web", "v2", 0, "Draft", None, None);
    draft
        .metadata
        .annotations
        .insert("approval.nephio.org/policy".into(), "always".into());
    draft.spec.readiness_gates = vec![pv_core::api::package_revision::ReadinessGate {
        condition_type: "Specialized".into(),
    }];
    let name = draft.metadata.name.clone();
    async fn approve(c: &mut Cluster, pr: &PackageRevision) -> Action {
        c.add_revision(pr, blueprint("web:2.0"));
        let obj = Arc::new(KubePr::from_core(pr).expect("converts"));
        controller::reconcile_approval(obj, c.ctx.clone())
            .await
            .expect("reconcile")
    }

    assert_eq!(
        approve(&mut c, &draft).await,
        Action::requeue(controller::APPROVAL_RETRY)
    );
    assert_eq!(c.take_writes(), Vec::<String>::new(), "waits for its gate");

    draft.status.conditions = vec![pv_core::api::package_revision::PackageCondition {
        type_: "Specialized".into(),
        status: "True".into(),
        ..Default::default()
    }];
    draft.metadata.resource_version = "9".into();
    approve(&mut c, &draft).await;
    let calls = c.take();
    let writes: Vec<&Call> = calls.iter().filter(|c| is_write(c)).collect();
    assert_eq!(
        writes.iter().map(|c| c.line()).collect::<Vec<_>>(),
        vec![format!("PUT {PR_PATH}/{name}")]
    );
    assert_eq!(writes[0].body["spec"]["lifecycle"], "Proposed");

    draft.spec.lifecycle = pv_core::api::Lifecycle::Proposed;
    draft.metadata.resource_version = "10".into();
    approve(&mut c, &draft).await;
    assert_eq!(
        c.take_writes(),
        vec![format!("PUT {PR_PATH}/{name}/approval")]
    );

    // A draft of a variant whose spec asks for the policy: the variant's
    // reconcile approves it, not this one.
    let mut owned = revision(
        "edge-1",
        "web",
        "packagevariant-1",
        0,
        "Draft",
        Some("web/v1"),
        Some("pv1"),
    );
    owned
        .metadata
        .annotations
        .insert("approval.nephio.org/policy".into(), "always".into());
    let mut pv = variant("pv1", "east", json!({}));
    pv.spec
        .annotations
        .insert("approval.nephio.org/policy".into(), "always".into());
    put_variant(&mut c.writers, &pv);
    assert_eq!(approve(&mut c, &owned).await, Action::await_change());
    assert_eq!(c.take_writes(), Vec::<String>::new());
}
