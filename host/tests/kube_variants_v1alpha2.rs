//! The PackageVariant controller with `--porch-api v1alpha2` against the
//! recording API server: a variant declares its draft as a v1alpha2
//! PackageRevision, waits (requeued, writing nothing, declaring nothing
//! again) while the PackageRevision controller runs its source, then
//! pushes its mutations to Git and asks for a render; a no-op reconcile
//! makes no LIST and no write. The PackageRevision controller that makes
//! the draft is the real one, on real Git.

mod git_support;
mod kube_support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use kube::runtime::watcher;
use kube_support::*;
use porch_variants::kube::api::{KubeResource, Repository};
use porch_variants::kube::controller::{self, Context};
use porch_variants::kube::prc::PrcContext;
use porch_variants::local::cli::publish_files;
use porch_variants::store::git::{init_bare, GitRevisions};
use porch_variants::store::{PackageRevisionStore, PrFilter};
use pv_core::api::PackageVariant;
use serde_json::{json, Value};

const NS: &str = "default";
const V2_PATH: &str = "/apis/porch.kpt.dev/v1alpha2/namespaces/default/packagerevisions";
const PV_PATH: &str = "/apis/config.porch.kpt.dev/v1alpha1/namespaces/default/packagevariants";
const DRAFT: &str = "edge-1.web.packagevariant-1";

const KPTFILE: &str = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: web\ninfo:\n  description: web\npipeline:\n  mutators:\n  - image: set-labels:v1\n    configMap:\n      app: web\n";
const CONTEXT: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kptfile.kpt.dev\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\ndata:\n  name: web\n";
const DEPLOY: &str =
    "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 2\n";

fn repository(name: &str) -> Repository {
    let core: pv_core::variantset::Repository = serde_json::from_value(json!({
        "apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "Repository",
        "metadata": {"name": name, "namespace": NS, "uid": format!("uid-{name}")},
        "spec": {"type": "git", "git": {"repo": name, "branch": "main"}},
    }))
    .unwrap();
    Repository::from_core(&core).unwrap()
}

fn variant() -> PackageVariant {
    serde_json::from_value(json!({
        "apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "PackageVariant",
        "metadata": {"name": "pv1", "namespace": NS, "uid": "uid-pv1", "resourceVersion": "3"},
        "spec": {
            "upstream": {"repo": "blueprints", "package": "web"},
            "downstream": {"repo": "edge-1", "package": "web"},
            "packageContext": {"data": {"region": "east"}}
        }
    }))
    .unwrap()
}

struct Cluster {
    server: Shared,
    ctx: Arc<Context>,
    prc: Arc<PrcContext>,
    writers: CacheWriters,
    v2: V2Cache,
    root: tempfile::TempDir,
}

impl Cluster {
    fn new() -> Cluster {
        let server: Shared = Arc::new(Mutex::new(ServerState::default()));
        let client = fake_client(server.clone());
        let root = tempfile::tempdir().unwrap();
        for r in ["blueprints", "edge-1"] {
            init_bare(&root.path().join(r), "main").unwrap();
        }
        let (caches, mut writers) = caches();
        for r in ["blueprints", "edge-1"] {
            writers
                .repositories
                .apply_watcher_event(&watcher::Event::Apply(repository(r)));
        }
        let mut v2 = V2Cache::default();
        let (ctx, prc) = v1alpha2_contexts(client, caches, &v2, root.path());
        // The blueprint, published in Git and discovered as an object.
        let git = git(root.path());
        let files = BTreeMap::from([
            ("Kptfile".to_string(), KPTFILE.to_string()),
            ("package-context.yaml".to_string(), CONTEXT.to_string()),
            ("deployment.yaml".to_string(), DEPLOY.to_string()),
        ]);
        let up = publish_files(&git, NS, "blueprints", "web", "v1", files, "init").unwrap();
        assert!(up.starts_with("blueprints.web.v1"), "{up}");
        let up = git
            .list(NS, &PrFilter::package("blueprints", "web"))
            .unwrap()
            .remove(0);
        v2.put(json!({
            "apiVersion": "porch.kpt.dev/v1alpha2", "kind": "PackageRevision",
            "metadata": {"name": "blueprints.web.v1", "namespace": NS, "resourceVersion": "1",
                         "labels": {"porch.kpt.dev/latest-revision": "true"}},
            "spec": {"packageName": "web", "repository": "blueprints", "workspaceName": "v1",
                     "lifecycle": "Published"},
            "status": {"revision": 1, "selfLock": up.status.self_lock},
        }));
        Cluster {
            server,
            ctx,
            prc,
            writers,
            v2,
            root,
        }
    }

    async fn reconcile(&mut self, pv: &PackageVariant) -> Result<(), controller::Error> {
        let obj = put_variant(&mut self.writers, pv);
        controller::reconcile_package_variant(obj, self.ctx.clone())
            .await
            .map(|_| ())
    }

    fn take(&self) -> Vec<Call> {
        let c = calls(&self.server);
        clear(&self.server);
        c
    }

    fn files(&self, name: &str) -> BTreeMap<String, String> {
        git(self.root.path())
            .resources(NS, name)
            .unwrap()
            .spec
            .resources
            .unwrap()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        assert_history_granted(&self.server);
    }
}

fn git(root: &std::path::Path) -> GitRevisions {
    git_support::open_repos(root, ["blueprints", "edge-1"])
}

fn line_list(calls: &[Call]) -> Vec<String> {
    calls.iter().map(Call::line).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_variant_declares_its_draft_waits_for_the_source_then_pushes_and_asks_for_a_render() {
    let mut c = Cluster::new();
    let pv = variant();

    // 1. The finalizer, the declared draft, the status saying it waits.
    let err = c.reconcile(&pv).await.expect_err("waits for the source");
    assert!(err.to_string().contains("waiting"), "{err}");
    assert_eq!(err.metric_label(), "waiting");
    let calls = c.take();
    assert_eq!(
        line_list(&calls),
        vec![
            format!("PUT {PV_PATH}/pv1"),
            format!("POST {V2_PATH}"),
            format!("PATCH {PV_PATH}/pv1/status"),
        ]
    );
    let post = &calls[1].body;
    assert_eq!(post["apiVersion"], "porch.kpt.dev/v1alpha2");
    assert_eq!(post["metadata"]["name"], DRAFT);
    assert_eq!(
        post["spec"]["source"],
        json!({"cloneFrom": {"upstreamRef": {"name": "blueprints.web.v1"}}})
    );
    assert_eq!(post["spec"]["lifecycle"], "Draft");
    assert_eq!(post["metadata"]["ownerReferences"][0]["uid"], "uid-pv1");
    let ready = &calls[2].body["status"]["conditions"];
    assert!(
        ready
            .to_string()
            .contains("waiting for the PackageRevision controller"),
        "{ready}"
    );
    assert!(git(c.root.path())
        .list(NS, &PrFilter::package("edge-1", "web"))
        .unwrap()
        .is_empty());

    // 2. Again before the watch shows the draft, and while its source
    //    runs: nothing declared again, nothing written.
    // The variant as the watch brings it after those writes.
    let mut stored = pv.clone();
    stored.metadata.resource_version = "20".into();
    stored.metadata.finalizers = vec!["config.porch.kpt.dev/packagevariants".into()];
    stored.status = serde_json::from_value(calls[2].body["status"].clone()).unwrap();
    c.reconcile(&stored).await.expect_err("still waiting");
    assert_eq!(line_list(&c.take()), Vec::<String>::new());
    let mut declared = post.clone();
    declared["metadata"]["resourceVersion"] = json!("10");
    let obj = c.v2.put(declared.clone());
    c.reconcile(&stored).await.expect_err("still waiting");
    assert_eq!(line_list(&c.take()), Vec::<String>::new());

    // 3. The PackageRevision controller makes the draft in Git (its status
    //    writes go to the server; the watch then brings them).
    porch_variants::kube::prc::reconcile(obj, c.prc.clone())
        .await
        .expect("source");
    let prc_calls = c.take();
    assert!(
        prc_calls
            .iter()
            .any(|c| c.body["status"]["creationSource"] == "clone"),
        "{:?}",
        line_list(&prc_calls)
    );
    let mut made = declared.clone();
    made["metadata"]["resourceVersion"] = json!("11");
    made["metadata"]["generation"] = json!(1);
    made["status"] = json!({"observedGeneration": 1, "creationSource": "clone",
        "conditions": [{"type": "Ready", "status": "True", "reason": "Ready", "message": "",
                        "lastTransitionTime": "2026-01-01T00:00:00Z"}]});
    c.v2.put(made.clone());
    assert!(!c.files(DRAFT)["package-context.yaml"].contains("region"));

    // 4. The mutations are pushed to Git and a render is asked for.
    c.reconcile(&stored).await.expect("mutates");
    let calls = c.take();
    assert_eq!(
        line_list(&calls),
        vec![
            format!("PATCH {V2_PATH}/{DRAFT}"),
            format!("PATCH {PV_PATH}/pv1/status"),
        ]
    );
    let requested = calls[0].body["metadata"]["annotations"]["porch.kpt.dev/render-request"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(!requested.is_empty(), "{}", calls[0].body);
    let files = c.files(DRAFT);
    assert!(files["package-context.yaml"].contains("region: east"));
    assert!(files["deployment.yaml"].contains("app: web"), "rendered");
    let status = &calls[1].body["status"];
    assert!(
        status["conditions"].to_string().contains("\"True\""),
        "{status}"
    );
    assert_eq!(status["downstreamTargets"][0]["name"], DRAFT);

    // 5. Once the watch shows the request: nothing to do, no LIST, no write.
    made["metadata"]["annotations"] = json!({"porch.kpt.dev/render-request": requested});
    made["metadata"]["resourceVersion"] = json!("12");
    c.v2.put(made);
    stored.status = serde_json::from_value(status.clone()).unwrap();
    c.reconcile(&stored).await.expect("no-op");
    let calls = c.take();
    assert_eq!(line_list(&calls), Vec::<String>::new());
}

/// A published downstream of `pv1` in edge-1 (revision 1, cloned from
/// blueprint v1, its Kptfile asking for `fast-forward` updates), in Git and
/// as the object the Repository controller keeps for it; blueprint v2
/// published too.
fn with_published_downstream(c: &mut Cluster) -> (String, PackageVariant) {
    let git = git(c.root.path());
    let mut files = git
        .resources(NS, "blueprints.web.v1")
        .unwrap()
        .spec
        .resources
        .unwrap();
    let kptfile = files["Kptfile"].clone()
        + "upstream:\n  type: git\n  git:\n    repo: blueprints\n    directory: web\n    ref: web/v1\n  updateStrategy: fast-forward\n";
    files.insert("Kptfile".into(), kptfile);
    publish_files(&git, NS, "edge-1", "web", "v1", files.clone(), "init").unwrap();
    // Git records the variant as its owner, as either mode writes it.
    let mut owned = pv_core::api::ObjectMeta::default();
    owned.owner_references.push(pv_core::api::OwnerReference {
        api_version: "config.porch.kpt.dev/v1alpha1".into(),
        kind: "PackageVariant".into(),
        name: "pv1".into(),
        uid: "uid-pv1".into(),
        controller: Some(true),
        ..Default::default()
    });
    git.update_metadata(NS, "edge-1.web.v1", &owned).unwrap();
    let mut v2 = files.clone();
    v2.insert(
        "deployment.yaml".into(),
        DEPLOY.replace("replicas: 2", "replicas: 3"),
    );
    publish_files(&git, NS, "blueprints", "web", "v2", v2, "edit").unwrap();
    let lock_of = |repo: &str, pkg: &str, n: i64| {
        git.list(NS, &PrFilter::package(repo, pkg))
            .unwrap()
            .into_iter()
            .find(|p| p.spec.revision == n)
            .and_then(|p| p.status.self_lock)
    };
    c.v2.put(json!({
        "apiVersion": "porch.kpt.dev/v1alpha2", "kind": "PackageRevision",
        "metadata": {"name": "blueprints.web.v2", "namespace": NS, "resourceVersion": "2"},
        "spec": {"packageName": "web", "repository": "blueprints", "workspaceName": "v2",
                 "lifecycle": "Published"},
        "status": {"revision": 2, "selfLock": lock_of("blueprints", "web", 2)},
    }));
    let name = "edge-1.web.v1".to_string();
    c.v2.put(json!({
        "apiVersion": "porch.kpt.dev/v1alpha2", "kind": "PackageRevision",
        "metadata": {"name": name, "namespace": NS, "resourceVersion": "3",
            "ownerReferences": [
                {"apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "Repository",
                 "name": "edge-1", "uid": "uid-edge-1"},
                {"apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "PackageVariant",
                 "name": "pv1", "uid": "uid-pv1", "controller": true}]},
        "spec": {"packageName": "web", "repository": "edge-1", "workspaceName": "v1",
                 "lifecycle": "Published"},
        "status": {"revision": 1, "selfLock": lock_of("edge-1", "web", 1),
                   "upstreamLock": {"type": "git", "git": {"repo": "blueprints", "directory": "web",
                                     "ref": "web/v1", "commit": "c0ffee"}}},
    }));
    let mut pv = variant();
    pv.metadata.finalizers = vec!["config.porch.kpt.dev/packagevariants".into()];
    pv.metadata.resource_version = "20".into();
    (name, pv)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_upstream_declares_an_upgrade_with_the_kptfiles_strategy() {
    let mut c = Cluster::new();
    let (downstream, pv) = with_published_downstream(&mut c);
    c.reconcile(&pv).await.expect_err("waits for the upgrade");
    let calls = c.take();
    assert_eq!(
        line_list(&calls),
        vec![
            format!("POST {V2_PATH}"),
            format!("PATCH {PV_PATH}/pv1/status"),
        ]
    );
    assert_eq!(
        calls[0].body["spec"]["source"],
        json!({"upgrade": {"oldUpstream": {"name": "blueprints.web.v1"},
                           "newUpstream": {"name": "blueprints.web.v2"},
                           "currentPackage": {"name": downstream},
                           "strategy": "fast-forward"}})
    );
    assert_eq!(calls[0].body["spec"]["workspaceName"], "packagevariant-1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_the_variant_proposes_deletion_orphans_and_lets_go() {
    let mut c = Cluster::new();
    let (downstream, mut pv) = with_published_downstream(&mut c);
    pv.metadata.deletion_timestamp = Some("2026-01-01T00:00:00Z".into());
    c.reconcile(&pv).await.expect("deleted");
    let calls = c.take();
    assert_eq!(
        line_list(&calls),
        vec![
            format!("PATCH {V2_PATH}/{downstream}"),
            format!("PATCH {V2_PATH}/{downstream}"),
            format!("PUT {PV_PATH}/pv1"),
        ]
    );
    assert_eq!(
        calls[0].body,
        json!({"spec": {"lifecycle": "DeletionProposed"}})
    );
    // Orphaned: the variant's reference goes, the Repository's stays.
    let refs = calls[1].body["metadata"]["ownerReferences"]
        .as_array()
        .expect("references");
    assert_eq!(refs.len(), 1);
    assert_eq!(refs[0]["kind"], "Repository");
    assert_eq!(calls[2].body["metadata"]["finalizers"], Value::Null);
    // Git keeps the revision, with no owner recorded for it.
    let in_git = git(c.root.path()).get(NS, &downstream).unwrap();
    assert!(in_git.metadata.owner_references.is_empty());
}

/// A Repository of the namespace that no reconcile below reads: a remote
/// one whose Secret does not exist, and a local one whose repository is
/// missing. Opened, either would fail the reconcile (and the first would
/// cost a GET of its Secret).
fn unrelated_repositories(c: &mut Cluster) {
    let remote: pv_core::variantset::Repository = serde_json::from_value(json!({
        "apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "Repository",
        "metadata": {"name": "elsewhere", "namespace": NS, "uid": "uid-elsewhere"},
        "spec": {"type": "git", "git": {"repo": "https://git.example.invalid/elsewhere.git",
                 "branch": "main", "secretRef": {"name": "missing"}}},
    }))
    .unwrap();
    for r in [Repository::from_core(&remote).unwrap(), repository("ghost")] {
        c.writers
            .repositories
            .apply_watcher_event(&watcher::Event::Apply(r));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconcile_opens_only_the_repositories_it_reads() {
    let mut c = Cluster::new();
    unrelated_repositories(&mut c);
    let pv = variant();

    // The variant declares its draft: no Secret read, nothing failed.
    c.reconcile(&pv).await.expect_err("waits for the source");
    let calls = c.take();
    assert_eq!(
        line_list(&calls),
        vec![
            format!("PUT {PV_PATH}/pv1"),
            format!("POST {V2_PATH}"),
            format!("PATCH {PV_PATH}/pv1/status"),
        ]
    );
    // The PackageRevision controller clones the blueprint into edge-1.
    let mut declared = calls[1].body.clone();
    declared["metadata"]["resourceVersion"] = json!("10");
    let obj = c.v2.put(declared);
    porch_variants::kube::prc::reconcile(obj, c.prc.clone())
        .await
        .expect("the source runs");
    let prc_calls = c.take();
    assert!(
        prc_calls.iter().all(|call| !call.uri.contains("/secrets/")),
        "{:?}",
        line_list(&prc_calls)
    );
    assert!(c.files(DRAFT)["deployment.yaml"].contains("name: web"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_set_reconcile_opens_no_repository_it_does_not_read() {
    let mut c = Cluster::new();
    unrelated_repositories(&mut c);
    let pvs: pv_core::variantset::PackageVariantSet = serde_json::from_value(json!({
        "apiVersion": "config.porch.kpt.dev/v1alpha2", "kind": "PackageVariantSet",
        "metadata": {"name": "fleet", "namespace": NS, "uid": "uid-fleet", "resourceVersion": "5"},
        "spec": {"upstream": {"repo": "blueprints", "package": "web", "revision": 1},
                 "targets": [{"repositories": [{"name": "edge-1"}]}]}
    }))
    .unwrap();
    let obj = put_set(&mut c.writers, &pvs);
    controller::reconcile_package_variant_set(obj, c.ctx.clone())
        .await
        .expect("the set reconciles");
    let calls = line_list(&c.take());
    assert!(
        calls
            .iter()
            .any(|l| l.starts_with(&format!("POST {PV_PATH}"))),
        "{calls:?}"
    );
    assert!(calls.iter().all(|l| !l.contains("/secrets/")), "{calls:?}");
}

/// A dry run's planned writes, as `object: action`, with the diffs.
type Plan = Arc<Mutex<Vec<porch_variants::store::planned::PlannedWrite>>>;

impl Cluster {
    /// The controller's context as `controller --dry-run` makes it, over
    /// the same caches and Git.
    fn dry_run(&self) -> (Arc<Context>, Plan) {
        let (_tx, leader) = tokio::sync::watch::channel(true);
        let mut ctx = Context::new(
            self.ctx.client.clone(),
            self.ctx.caches.clone(),
            self.ctx.core.clone(),
            Arc::new(porch_variants::kube::metrics::Metrics::default()),
            leader,
        );
        ctx.v1alpha2 = Some(self.prc.clone());
        let plan: Plan = Arc::default();
        let sink = plan.clone();
        ctx.dry_run = Some(controller::DryRun::to(move |_, w| {
            sink.lock().unwrap().push(w.clone());
        }));
        (Arc::new(ctx), plan)
    }

    /// A dry-run reconcile of `pv`: what it planned.
    async fn plan(
        &mut self,
        pv: &PackageVariant,
    ) -> Vec<porch_variants::store::planned::PlannedWrite> {
        let (ctx, plan) = self.dry_run();
        let obj = put_variant(&mut self.writers, pv);
        controller::reconcile_package_variant(obj, ctx)
            .await
            .expect("a dry run ends its plan without an error");
        let planned = plan.lock().unwrap().clone();
        planned
    }
}

fn actions(plan: &[porch_variants::store::planned::PlannedWrite]) -> Vec<String> {
    plan.iter()
        .map(|w| format!("{}: {}", w.object, w.action))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dry_run_on_v1alpha2_declares_nothing_and_pushes_nothing() {
    let mut c = Cluster::new();
    let pv = variant();

    // A new variant: the draft it would declare, nothing sent, no Git.
    let plan = c.plan(&pv).await;
    assert_eq!(
        actions(&plan),
        vec![
            format!("PackageVariant {NS}/pv1: update"),
            format!("PackageRevision {NS}/{DRAFT}: create"),
            format!("PackageVariant {NS}/pv1: update status"),
        ]
    );
    assert!(plan[1].detail.contains("declared"), "{:?}", plan[1]);
    assert!(plan[2].detail.contains("waiting"), "{:?}", plan[2]);
    let calls = c.take();
    assert!(
        calls.iter().all(|c| c.method == "GET"),
        "{:?}",
        line_list(&calls)
    );
    assert!(git(c.root.path())
        .list(NS, &PrFilter::package("edge-1", "web"))
        .unwrap()
        .is_empty());

    // The draft declared and made for real; the dry run then plans the
    // push of the mutations, and the real run pushes what it planned.
    c.reconcile(&pv).await.expect_err("waits for the source");
    let calls = c.take();
    let mut declared = calls[1].body.clone();
    declared["metadata"]["resourceVersion"] = json!("10");
    let obj = c.v2.put(declared.clone());
    porch_variants::kube::prc::reconcile(obj, c.prc.clone())
        .await
        .expect("source");
    c.take();
    let mut made = declared;
    made["metadata"]["resourceVersion"] = json!("11");
    made["metadata"]["generation"] = json!(1);
    made["status"] = json!({"observedGeneration": 1, "creationSource": "clone"});
    c.v2.put(made);
    let mut stored = pv.clone();
    stored.metadata.resource_version = "20".into();
    stored.metadata.finalizers = vec!["config.porch.kpt.dev/packagevariants".into()];
    stored.status = serde_json::from_value(calls[2].body["status"].clone()).unwrap();
    let before = c.files(DRAFT);

    let plan = c.plan(&stored).await;
    assert_eq!(
        actions(&plan)[0],
        format!("PackageRevision {NS}/{DRAFT}: update resources")
    );
    let calls = c.take();
    assert!(
        calls.iter().all(|c| c.method == "GET"),
        "{:?}",
        line_list(&calls)
    );
    assert_eq!(c.files(DRAFT), before, "a dry run pushed to Git");

    c.reconcile(&stored).await.expect("mutates");
    let after = c.files(DRAFT);
    assert_ne!(after, before);
    assert_eq!(
        plan[0].diff,
        porch_variants::store::planned::package_diff(&before, &after, DRAFT, DRAFT)
    );
    assert!(plan[0].diff.contains("+  region: east"), "{}", plan[0].diff);
}
