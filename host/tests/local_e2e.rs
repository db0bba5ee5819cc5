//! End to end: the reconcilers on real Git repositories in temporary
//! directories (the native core, so that debug test builds stay fast; the
//! component gives the same answers, see tests/parity.rs).

mod git_support;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use porch_variants::engine_api::{ComponentCore, Core, NativeCore};
use porch_variants::local::cli::publish_files;
use porch_variants::reconcile::{
    run_to_fixed_point, run_to_fixed_point_quiet, Ctx, NoProgress, QuietDigests, ReconcileError,
    RunReport,
};
use porch_variants::store::git::{init_bare, GitRepoConfig, GitRevisions};
use porch_variants::store::memory::MemoryObjects;
use porch_variants::store::{Files, ObjectStore, PackageRevisionStore, PrFilter, StoreError};
use pv_core::api::package_revision::Lifecycle;
use pv_core::api::{PackageContext, PackageRevision, PackageVariant};
use pv_core::variantset::{PackageVariantSet, Repository};
use pv_testkit::faulty::{FaultPlan, Faulty};
use serde_json::json;

const NS: &str = "default";
const KPTFILE: &str = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: web\ninfo:\n  description: web\npipeline:\n  mutators:\n  - image: set-labels:v1\n";
const CONTEXT: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kptfile.kpt.dev\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\ndata:\n  name: web\n";
const DEPLOY: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 2 # per region\n  template:\n    spec:\n      containers:\n      - name: web\n        image: web:1.0\n";
const ENDPOINT: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: endpoints\n  annotations:\n    kpt.dev/config-injection: required\ndata:\n  db: unset\n";

fn blueprint(image: &str) -> Files {
    Files::from([
        ("Kptfile".to_string(), KPTFILE.to_string()),
        ("package-context.yaml".to_string(), CONTEXT.to_string()),
        (
            "deployment.yaml".to_string(),
            DEPLOY.replace("web:1.0", image),
        ),
        ("endpoint.yaml".to_string(), ENDPOINT.to_string()),
    ])
}

/// The reconcilers' context of the tests' runs (no rendering).
fn ctx<'a>(
    revisions: &'a dyn PackageRevisionStore,
    objects: &'a dyn ObjectStore,
    core: &'a dyn Core,
) -> Ctx<'a> {
    Ctx {
        revisions,
        objects,
        core,
        now: "2026-01-01T00:00:00Z".into(),
        renderer: None,
        jobs: 1,
    }
}

struct Fleet {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    repos: Vec<String>,
    objects: MemoryObjects,
}

impl Fleet {
    /// A blueprints repository with `web` v1 published, and `n`
    /// deployment repositories `edge-<i>` (label `tier: edge`).
    fn new(n: usize) -> Fleet {
        Fleet::with_blueprint(n, blueprint("web:1.0"))
    }

    /// [`Fleet::new`] with `files` as the blueprint's v1.
    fn with_blueprint(n: usize, files: Files) -> Fleet {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_path_buf();
        let mut repos = vec!["blueprints".to_string()];
        repos.extend((1..=n).map(|i| format!("edge-{i}")));
        for r in &repos {
            init_bare(&root.join(r), "main").unwrap();
        }
        let fleet = Fleet {
            _tmp: tmp,
            root,
            repos,
            objects: MemoryObjects::new("2026-01-01T00:00:00Z"),
        };
        for r in &fleet.repos {
            let mut repo = Repository::default();
            repo.metadata.name = r.clone();
            repo.metadata.namespace = NS.into();
            if r != "blueprints" {
                repo.metadata.labels.insert("tier".into(), "edge".into());
            }
            fleet.objects.put_repository(repo);
        }
        fleet
            .objects
            .put_object(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "east-endpoints", "namespace": NS}, "data": {"db": "db.east"}}));
        publish_files(&fleet.git(), NS, "blueprints", "web", "v1", files, "init").unwrap();
        fleet
    }

    fn git(&self) -> GitRevisions {
        git_support::open_repos(&self.root, self.repos.iter().map(String::as_str))
    }

    fn run_with(&self, plan: std::sync::Arc<FaultPlan>) -> Result<RunReport, ReconcileError> {
        self.run_with_core(plan, &NativeCore)
    }

    fn run_with_core(
        &self,
        plan: std::sync::Arc<FaultPlan>,
        core: &dyn Core,
    ) -> Result<RunReport, ReconcileError> {
        let git = self.git();
        let revisions = Faulty::new(&git, plan.clone());
        let objects = Faulty::new(&self.objects, plan);
        run_to_fixed_point(&ctx(&revisions, &objects, core), 10, &NoProgress)
    }

    /// A run as a new process of local mode makes it: the repositories
    /// opened afresh with the owner cache, variants whose digest `quiet`
    /// recorded skipped, the digests and the cache kept for the next run,
    /// `jobs` variants at once.
    fn run_quiet(
        &self,
        plan: std::sync::Arc<FaultPlan>,
        core: &dyn Core,
        quiet: &mut QuietDigests,
        jobs: usize,
    ) -> Result<RunReport, ReconcileError> {
        let git = self.git().with_owner_cache(self.root.join("owners.json"));
        let revisions = Faulty::new(&git, plan.clone());
        let objects = Faulty::new(&self.objects, plan);
        let report = run_to_fixed_point_quiet(
            &Ctx {
                jobs,
                ..ctx(&revisions, &objects, core)
            },
            10,
            &NoProgress,
            Some(quiet),
        )?;
        git.save_owner_cache()?;
        Ok(report)
    }

    /// A run that renders drafts (local mode's setting), with `core`.
    fn run_rendering(&self, core: &dyn Core) -> RunReport {
        let git = self.git();
        let renderer = porch_variants::reconcile::DraftRenderer::new(
            pv_core::render::RenderOptions::default(),
            Box::new(pv_core::render::BuiltinsOnly),
        );
        let ctx = Ctx {
            revisions: &git,
            objects: &self.objects,
            core,
            now: "2026-01-01T00:00:00Z".into(),
            renderer: Some(&renderer),
            jobs: 1,
        };
        run_to_fixed_point(&ctx, 10, &NoProgress).unwrap()
    }

    fn run(&self) -> RunReport {
        let r = self.run_with(FaultPlan::counting()).unwrap();
        assert!(r.converged, "{r:#?}");
        assert!(r.errors.is_empty(), "{:#?}", r.errors);
        r
    }

    fn downstream(&self, repo: &str) -> Vec<PackageRevision> {
        self.git()
            .list(NS, &PrFilter::package(repo, "web"))
            .unwrap()
    }

    fn files(&self, name: &str) -> Files {
        self.git()
            .resources(NS, name)
            .unwrap()
            .spec
            .resources
            .unwrap()
    }

    /// Every ref of every repository (a new commit anywhere changes it).
    fn refs(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for r in &self.repos {
            let repo = git2::Repository::open(self.root.join(r)).unwrap();
            for rf in repo.references().unwrap() {
                let rf = rf.unwrap();
                out.insert(
                    format!("{r}:{}", rf.name().unwrap()),
                    rf.target().map(|o| o.to_string()).unwrap_or_default(),
                );
            }
        }
        out
    }

    fn approve_all(&self) {
        let git = self.git();
        for pr in git.list(NS, &PrFilter::default()).unwrap() {
            if pr.spec.lifecycle == Lifecycle::Draft {
                git.update_lifecycle(NS, &pr.metadata.name, Lifecycle::Proposed)
                    .unwrap();
                git.update_lifecycle(NS, &pr.metadata.name, Lifecycle::Published)
                    .unwrap();
            }
        }
    }

    fn publish_upstream_v2(&self) {
        publish_files(
            &self.git(),
            NS,
            "blueprints",
            "web",
            "v2",
            blueprint("web:2.0"),
            "edit",
        )
        .unwrap();
    }

    /// (repo/package/workspace, lifecycle, revision, owners, files) of every revision.
    fn snapshot(&self) -> Vec<(String, Lifecycle, i64, usize, Files)> {
        let git = self.git();
        git.list(NS, &PrFilter::default())
            .unwrap()
            .into_iter()
            .map(|p| {
                let root = self.root.display().to_string();
                let files = git
                    .resources(NS, &p.metadata.name)
                    .unwrap()
                    .spec
                    .resources
                    .unwrap()
                    .into_iter()
                    .map(|(k, v)| (k, normalize(&v.replace(&root, "<root>"))))
                    .collect();
                (
                    p.metadata.name.clone(),
                    p.spec.lifecycle,
                    p.spec.revision,
                    p.metadata.owner_references.len(),
                    files,
                )
            })
            .collect()
    }
}

/// Commits carry timestamps: their ids differ between otherwise equal runs.
fn normalize(text: &str) -> String {
    text.lines()
        .map(|l| match l.split_once("commit: ") {
            Some((indent, sha)) if sha.len() == 40 => format!("{indent}commit: <sha>\n"),
            _ => format!("{l}\n"),
        })
        .collect()
}

fn pv(name: &str, repo: &str) -> PackageVariant {
    serde_json::from_value(json!({
        "apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "PackageVariant",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "upstream": {"repo": "blueprints", "package": "web"},
            "downstream": {"repo": repo, "package": "web"},
            "packageContext": {"data": {"region": "east"}},
            "pipeline": {"mutators": [{"name": "ns", "image": "set-namespace:v1", "configMap": {"namespace": repo}}]},
            "injectors": [{"kind": "ConfigMap", "name": "east-endpoints"}]
        }
    }))
    .unwrap()
}

fn drafts(prs: &[PackageRevision]) -> Vec<&PackageRevision> {
    prs.iter()
        .filter(|p| p.spec.lifecycle == Lifecycle::Draft)
        .collect()
}

#[test]
fn first_run_clones_one_mutated_draft_per_variant_and_a_second_run_changes_nothing() {
    let f = Fleet::new(3);
    for i in 1..=3 {
        f.objects
            .put_package_variant(pv(&format!("pv-{i}"), &format!("edge-{i}")));
    }
    let report = f.run();
    assert_eq!(
        report
            .events
            .iter()
            .filter(|e| e.action == "created clone draft")
            .count(),
        3
    );
    for i in 1..=3 {
        let prs = f.downstream(&format!("edge-{i}"));
        assert_eq!(prs.len(), 1);
        let d = &prs[0];
        assert_eq!(d.spec.lifecycle, Lifecycle::Draft);
        assert_eq!(d.spec.workspace_name, "packagevariant-1");
        assert_eq!(d.metadata.owner_references[0].name, format!("pv-{i}"));
        assert_eq!(
            d.status
                .upstream_lock
                .as_ref()
                .unwrap()
                .git
                .as_ref()
                .unwrap()
                .r#ref,
            "web/v1"
        );
        let files = f.files(&d.metadata.name);
        assert!(files["package-context.yaml"].contains("region: east"));
        assert!(files["Kptfile"].contains(&format!("PackageVariant.pv-{i}.ns.0")));
        assert!(files["Kptfile"].contains("ref: web/v1"));
        assert!(files["endpoint.yaml"].contains("db: db.east"));
        let pvs = f.objects.package_variant(NS, &format!("pv-{i}")).unwrap();
        assert_eq!(pvs.status.downstream_targets[0].name, d.metadata.name);
    }
    let before = f.refs();
    let again = f.run();
    assert!(again.events.is_empty(), "{:#?}", again.events);
    assert_eq!(f.refs(), before, "no new commit");
}

#[test]
fn approving_publishes_v1_and_marks_latest_then_upstream_v2_upgrades_keeping_local_edits() {
    let f = Fleet::new(2);
    for i in 1..=2 {
        f.objects
            .put_package_variant(pv(&format!("pv-{i}"), &format!("edge-{i}")));
    }
    f.run();
    // A local edit downstream, before approval.
    let git = f.git();
    for i in 1..=2 {
        let name = format!("edge-{i}.web.packagevariant-1");
        let mut files = f.files(&name);
        let d = files["deployment.yaml"].replace("replicas: 2", "replicas: 5");
        files.insert("deployment.yaml".into(), d);
        git.update_resources(NS, &name, &files, "").unwrap();
    }
    f.approve_all();
    for i in 1..=2 {
        let prs = f.downstream(&format!("edge-{i}"));
        assert_eq!(prs.len(), 1);
        assert_eq!(prs[0].spec.lifecycle, Lifecycle::Published);
        assert_eq!(prs[0].spec.revision, 1);
        assert_eq!(prs[0].metadata.labels["kpt.dev/latest-revision"], "true");
        let repo = git2::Repository::open(f.root.join(format!("edge-{i}"))).unwrap();
        assert!(repo.find_reference("refs/tags/web/v1").is_ok());
        let main = repo
            .find_reference("refs/heads/main")
            .unwrap()
            .peel_to_tree()
            .unwrap();
        assert!(
            main.get_path(Path::new("web/Kptfile")).is_ok(),
            "merged to main"
        );
    }
    assert!(
        f.run().events.is_empty(),
        "published and up to date: nothing to do"
    );

    f.publish_upstream_v2();
    let ups = f
        .git()
        .list(NS, &PrFilter::package("blueprints", "web"))
        .unwrap();
    let latest: Vec<_> = ups
        .iter()
        .map(|p| {
            (
                p.spec.revision,
                p.metadata.labels["kpt.dev/latest-revision"].clone(),
            )
        })
        .collect();
    assert_eq!(
        latest,
        vec![(1, "false".to_string()), (2, "true".to_string())]
    );

    let report = f.run();
    assert_eq!(
        report
            .events
            .iter()
            .filter(|e| e.action == "created upgrade draft")
            .count(),
        2
    );
    for i in 1..=2 {
        let prs = f.downstream(&format!("edge-{i}"));
        let ds = drafts(&prs);
        assert_eq!(ds.len(), 1, "one upgrade draft");
        assert_eq!(
            ds[0]
                .status
                .upstream_lock
                .as_ref()
                .unwrap()
                .git
                .as_ref()
                .unwrap()
                .r#ref,
            "web/v2"
        );
        let files = f.files(&ds[0].metadata.name);
        let d = &files["deployment.yaml"];
        assert!(d.contains("replicas: 5"), "local edit kept: {d}");
        assert!(d.contains("image: web:2.0"), "upstream change taken: {d}");
        assert!(files["Kptfile"].contains("ref: web/v2"));
        assert!(files["package-context.yaml"].contains("region: east"));
    }
    assert!(f.run().events.is_empty());
}

#[test]
fn changing_the_package_context_edits_once_or_updates_the_draft_in_place() {
    let f = Fleet::new(1);
    f.objects.put_package_variant(pv("pv-1", "edge-1"));
    f.run();
    // Draft exists: changed in place.
    let mut p = f.objects.package_variant(NS, "pv-1").unwrap();
    p.spec.package_context = Some(PackageContext {
        data: [("region".to_string(), "west".to_string())].into(),
        remove_keys: vec![],
    });
    f.objects.update_package_variant(&p).unwrap();
    let r = f.run();
    assert_eq!(
        r.events
            .iter()
            .filter(|e| e.action == "mutated draft")
            .count(),
        1
    );
    let prs = f.downstream("edge-1");
    assert_eq!(prs.len(), 1);
    assert!(f.files(&prs[0].metadata.name)["package-context.yaml"].contains("region: west"));
    // Published: one edit draft.
    f.approve_all();
    let mut p = f.objects.package_variant(NS, "pv-1").unwrap();
    p.spec
        .package_context
        .as_mut()
        .unwrap()
        .data
        .insert("region".into(), "north".into());
    f.objects.update_package_variant(&p).unwrap();
    let r = f.run();
    assert_eq!(
        r.events
            .iter()
            .filter(|e| e.action == "created edit draft")
            .count(),
        1
    );
    let prs = f.downstream("edge-1");
    let ds = drafts(&prs);
    assert_eq!(ds.len(), 1);
    assert_eq!(ds[0].spec.workspace_name, "packagevariant-2");
    assert!(f.files(&ds[0].metadata.name)["package-context.yaml"].contains("region: north"));
    assert!(f.run().events.is_empty());
}

#[test]
fn deleting_a_variant_follows_its_deletion_policy_and_adoption_works() {
    let f = Fleet::new(3);
    f.objects.put_package_variant(pv("pv-del", "edge-1"));
    let mut orphan = pv("pv-orphan", "edge-2");
    orphan.spec.deletion_policy = "orphan".into();
    f.objects.put_package_variant(orphan);
    f.run();
    f.approve_all();
    // A second draft (edit) for pv-del, so it has a draft and a published revision.
    let mut p = f.objects.package_variant(NS, "pv-del").unwrap();
    p.spec
        .package_context
        .as_mut()
        .unwrap()
        .data
        .insert("x".into(), "y".into());
    f.objects.update_package_variant(&p).unwrap();
    f.run();
    assert_eq!(f.downstream("edge-1").len(), 2);

    f.objects.delete_package_variant(NS, "pv-del").unwrap();
    f.objects.delete_package_variant(NS, "pv-orphan").unwrap();
    f.run();
    assert!(
        f.objects.package_variant(NS, "pv-del").is_none(),
        "finalizer removed"
    );
    assert!(f.objects.package_variant(NS, "pv-orphan").is_none());
    let prs = f.downstream("edge-1");
    assert_eq!(prs.len(), 1, "the draft was deleted");
    assert_eq!(prs[0].spec.lifecycle, Lifecycle::DeletionProposed);
    assert!(prs[0].metadata.owner_references.is_empty());
    // Deletion gating: published revisions cannot be deleted until proposed.
    let prs2 = f.downstream("edge-2");
    assert_eq!(prs2.len(), 1);
    assert_eq!(
        prs2[0].spec.lifecycle,
        Lifecycle::Published,
        "orphan keeps it"
    );
    assert!(prs2[0].metadata.owner_references.is_empty());
    assert!(
        f.git().delete(NS, &prs2[0].metadata.name).is_err(),
        "published: gated"
    );
    f.git().delete(NS, &prs[0].metadata.name).unwrap();
    assert!(f.downstream("edge-1").is_empty());

    // Adoption: an existing, unowned revision is adopted, not cloned again.
    publish_files(
        &f.git(),
        NS,
        "edge-3",
        "web",
        "manual",
        blueprint("web:1.0"),
        "init",
    )
    .unwrap();
    let mut adopter = pv("pv-adopt", "edge-3");
    adopter.spec.adoption_policy = "adoptExisting".into();
    f.objects.put_package_variant(adopter);
    let r = f.run();
    assert!(
        !r.events.iter().any(|e| e.action == "created clone draft"),
        "{:#?}",
        r.events
    );
    let prs = f.downstream("edge-3");
    assert_eq!(prs[0].metadata.owner_references[0].name, "pv-adopt");
}

fn pvs_object(targets: serde_json::Value) -> PackageVariantSet {
    serde_json::from_value(json!({
        "apiVersion": "config.porch.kpt.dev/v1alpha2", "kind": "PackageVariantSet",
        "metadata": {"name": "fleet", "namespace": NS},
        "spec": {"upstream": {"repo": "blueprints", "package": "web", "revision": 1}, "targets": targets}
    }))
    .unwrap()
}

#[test]
fn set_targets_removed_and_repositories_relabelled() {
    let f = Fleet::new(4);
    let template =
        json!({"packageContext": {"dataExprs": [{"key": "site", "valueExpr": "repository.name"}]}});
    f.objects.put_package_variant_set(pvs_object(json!([
        {"repositories": [{"name": "edge-1"}, {"name": "edge-2"}], "template": template},
        {"repositorySelector": {"matchLabels": {"join": "yes"}}, "template": template}
    ])));
    f.run();
    let names = |f: &Fleet| -> Vec<String> {
        f.objects
            .list_package_variants(Some(NS))
            .unwrap()
            .into_iter()
            .map(|p| p.metadata.name)
            .collect()
    };
    assert_eq!(names(&f), vec!["fleet-edge-1-web", "fleet-edge-2-web"]);
    assert!(
        f.files("edge-2.web.packagevariant-1")["package-context.yaml"].contains("site: edge-2")
    );

    // Target removed: its variant is deleted, and with it its draft.
    f.objects.put_package_variant_set(pvs_object(json!([
        {"repositories": [{"name": "edge-1"}], "template": template},
        {"repositorySelector": {"matchLabels": {"join": "yes"}}, "template": template}
    ])));
    f.run();
    assert_eq!(names(&f), vec!["fleet-edge-1-web"]);
    assert!(f.downstream("edge-2").is_empty());

    // A repository relabelled joins the set...
    let mut repo = f
        .objects
        .list_repositories(NS)
        .unwrap()
        .into_iter()
        .find(|r| r.metadata.name == "edge-3")
        .unwrap();
    repo.metadata.labels.insert("join".into(), "yes".into());
    f.objects.put_repository(repo.clone());
    f.run();
    assert_eq!(names(&f), vec!["fleet-edge-1-web", "fleet-edge-3-web"]);
    assert_eq!(drafts(&f.downstream("edge-3")).len(), 1);
    // ... and leaves it.
    repo.metadata.labels.remove("join");
    f.objects.put_repository(repo);
    f.run();
    assert_eq!(names(&f), vec!["fleet-edge-1-web"]);
    assert!(f.downstream("edge-3").is_empty());
    assert!(f.run().events.is_empty());
}

/// Sets up the stage, then kills the process at every write of the next
/// run in turn; re-running must reach the reference end state with at most
/// one open draft per variant.
fn crash_at_every_write(stage: &dyn Fn(&Fleet)) {
    let reference = {
        let f = Fleet::new(2);
        stage(&f);
        let plan = FaultPlan::counting();
        let r = f.run_with(plan.clone()).unwrap();
        assert!(r.converged);
        (f.snapshot(), plan.counts().writes)
    };
    let (want, writes) = reference;
    assert!(writes > 0);
    for n in 1..=writes {
        let f = Fleet::new(2);
        stage(&f);
        let crashed = f.run_with(FaultPlan::failing_at(n));
        assert!(
            matches!(crashed, Err(ref e) if e.is_fatal()),
            "write {n}: {crashed:?}"
        );
        f.run();
        let got = f.snapshot();
        assert_eq!(got, want, "after a crash at write {n}");
        for prs in [f.downstream("edge-1"), f.downstream("edge-2")] {
            assert!(drafts(&prs).len() <= 1, "write {n}: {prs:#?}");
        }
        assert!(f.run().events.is_empty(), "write {n}: fixed point");
    }
}

#[test]
fn killed_between_any_two_writes_converges_without_duplicate_drafts() {
    // First run: clone drafts of a variant and of a set's child.
    crash_at_every_write(&|f: &Fleet| {
        f.objects.put_package_variant(pv("pv-1", "edge-1"));
        f.objects
            .put_package_variant_set(pvs_object(json!([{"repositories": [{"name": "edge-2"}]}])));
    });
    // An upgrade run: published downstreams, upstream v2.
    crash_at_every_write(&|f: &Fleet| {
        f.objects.put_package_variant(pv("pv-1", "edge-1"));
        f.objects.put_package_variant(pv("pv-2", "edge-2"));
        f.run();
        f.approve_all();
        f.publish_upstream_v2();
    });
    // A deletion run.
    crash_at_every_write(&|f: &Fleet| {
        f.objects.put_package_variant(pv("pv-1", "edge-1"));
        f.objects.put_package_variant(pv("pv-2", "edge-2"));
        f.run();
        f.approve_all();
        let mut p = f.objects.package_variant(NS, "pv-1").unwrap();
        p.spec
            .package_context
            .as_mut()
            .unwrap()
            .data
            .insert("x".into(), "y".into());
        f.objects.update_package_variant(&p).unwrap();
        f.run();
        f.objects.delete_package_variant(NS, "pv-1").unwrap();
        f.objects.delete_package_variant(NS, "pv-2").unwrap();
    });
}

/// A core that counts the calls of each kind and the time spent in them,
/// and the threads that made them.
struct Timed<'a> {
    core: &'a dyn Core,
    calls: std::sync::Mutex<BTreeMap<&'static str, (usize, std::time::Duration)>>,
    threads: std::sync::Mutex<std::collections::HashSet<std::thread::ThreadId>>,
}

impl<'a> Timed<'a> {
    fn new(core: &'a dyn Core) -> Self {
        Timed {
            core,
            calls: Default::default(),
            threads: Default::default(),
        }
    }

    /// How many threads called the core.
    fn threads(&self) -> usize {
        self.threads.lock().unwrap().len()
    }

    fn time<T>(&self, op: &'static str, f: impl FnOnce() -> T) -> T {
        self.threads
            .lock()
            .unwrap()
            .insert(std::thread::current().id());
        let started = std::time::Instant::now();
        let out = f();
        let mut calls = self.calls.lock().unwrap();
        let entry = calls.entry(op).or_default();
        entry.0 += 1;
        entry.1 += started.elapsed();
        out
    }

    /// `op: calls, total seconds` for each kind of call, and the total.
    fn summary(&self) -> String {
        let calls = self.calls.lock().unwrap();
        let total: std::time::Duration = calls.values().map(|(_, d)| *d).sum();
        let parts: Vec<String> = calls
            .iter()
            .map(|(op, (n, d))| format!("{op} {n}x {:.2}s", d.as_secs_f64()))
            .collect();
        format!(
            "in the core {:.2}s ({})",
            total.as_secs_f64(),
            parts.join(", ")
        )
    }
}

impl Core for Timed<'_> {
    fn plan(
        &self,
        pv: &PackageVariant,
        prs: &[PackageRevision],
        now: &str,
    ) -> porch_variants::engine_api::CoreResult<porch_variants::engine_api::Plan> {
        self.time("plan", || self.core.plan(pv, prs, now))
    }
    fn apply_mutations(
        &self,
        pv: &PackageVariant,
        namespace: &str,
        name: &str,
        files: &Files,
        candidates: &[serde_json::Value],
    ) -> porch_variants::engine_api::CoreResult<Result<porch_variants::engine_api::Mutated, String>>
    {
        self.time("apply_mutations", || {
            self.core
                .apply_mutations(pv, namespace, name, files, candidates)
        })
    }
    fn render_set(
        &self,
        input: porch_variants::engine_api::SetInput<'_>,
    ) -> porch_variants::engine_api::CoreResult<
        Result<porch_variants::engine_api::SetRender, porch_variants::engine_api::SetFailure>,
    > {
        self.time("render_set", || self.core.render_set(input))
    }
    fn clone_package(
        &self,
        upstream: &Files,
        package: &str,
        source: &pv_core::merge::UpstreamSource,
    ) -> porch_variants::engine_api::CoreResult<Result<Files, String>> {
        self.time("clone_package", || {
            self.core.clone_package(upstream, package, source)
        })
    }
    fn upgrade_package(
        &self,
        old_upstream: &Files,
        new_upstream: &Files,
        local: &Files,
        source: &pv_core::merge::UpstreamSource,
    ) -> porch_variants::engine_api::CoreResult<Result<pv_core::merge::MergeOutcome, String>> {
        self.time("upgrade_package", || {
            self.core
                .upgrade_package(old_upstream, new_upstream, local, source)
        })
    }
    fn render_package(
        &self,
        files: Files,
        options: &pv_core::render::RenderOptions,
        runtime: &mut dyn pv_core::render::FunctionRuntime,
    ) -> porch_variants::engine_api::CoreResult<porch_variants::engine_api::RenderedPackage> {
        self.time("render_package", || {
            self.core.render_package(files, options, runtime)
        })
    }
    fn reconcile_package_revision(
        &self,
        input: &pv_core::prc::reconcile::StepInput,
        host: &mut dyn FnMut(
            &pv_core::prc::reconcile::Call,
        ) -> Option<pv_core::prc::reconcile::Answer>,
    ) -> porch_variants::engine_api::CoreResult<Option<pv_core::prc::reconcile::Outcome>> {
        // The host's calls (Git, objects, renders timed on their own) are
        // not the core's time.
        let mut in_host = std::time::Duration::ZERO;
        let started = std::time::Instant::now();
        let out = self.core.reconcile_package_revision(input, &mut |call| {
            let t = std::time::Instant::now();
            let a = host(call);
            in_host += t.elapsed();
            a
        });
        self.threads
            .lock()
            .unwrap()
            .insert(std::thread::current().id());
        let mut calls = self.calls.lock().unwrap();
        let entry = calls.entry("reconcile_package_revision").or_default();
        entry.0 += 1;
        entry.1 += started.elapsed().saturating_sub(in_host);
        out
    }
    fn name(&self) -> &'static str {
        self.core.name()
    }
}

/// The fleet demo at scale: `cargo test -p porch-variants --release --test
/// local_e2e -- --ignored --nocapture fleet_timing`; `PV_FLEET_SIZES`
/// (comma-separated, default `20,1000`) sets the fleets, `PV_FLEET_CORES`
/// (`native`, `component`, default both) the cores.
#[test]
#[ignore = "timing run"]
fn fleet_timing() {
    let component = ComponentCore::load().expect("the component loads");
    let wanted = std::env::var("PV_FLEET_CORES").unwrap_or_else(|_| "native,component".into());
    let cores: Vec<&dyn Core> = [&NativeCore as &dyn Core, &component]
        .into_iter()
        .filter(|c| wanted.split(',').any(|w| c.name().contains(w.trim())))
        .collect();
    let sizes: Vec<usize> = std::env::var("PV_FLEET_SIZES")
        .unwrap_or_else(|_| "20,1000".into())
        .split(',')
        .map(|s| s.trim().parse().expect("PV_FLEET_SIZES: numbers"))
        .collect();
    // Variants reconciled at once, local mode's default: one per CPU.
    let jobs: usize = std::env::var("PV_FLEET_JOBS").map_or_else(
        |_| std::thread::available_parallelism().map_or(1, |n| n.get()),
        |j| j.parse().expect("PV_FLEET_JOBS: a number"),
    );
    for (n, core) in sizes
        .into_iter()
        .flat_map(|n| cores.iter().map(move |c| (n, *c)))
    {
        let f = Fleet::new(n);
        f.objects.put_package_variant_set(pvs_object(json!([{
            "repositorySelector": {"matchLabels": {"tier": "edge"}},
            "template": {
                "packageContext": {"dataExprs": [{"key": "site", "valueExpr": "repository.name"}]},
                "injectors": [{"name": "east-endpoints"}]
            }
        }])));
        // As two processes of local mode: the second skips the variants
        // the first left quiet.
        let mut quiet = QuietDigests::default();
        let plan = FaultPlan::counting();
        let timed = Timed::new(core);
        let started = std::time::Instant::now();
        let r = f.run_quiet(plan.clone(), &timed, &mut quiet, jobs).unwrap();
        let first = started.elapsed();
        let first_core = timed.summary();
        let counts = plan.counts();
        let plan2 = FaultPlan::counting();
        let timed = Timed::new(core);
        let started = std::time::Instant::now();
        let r2 = f
            .run_quiet(plan2.clone(), &timed, &mut quiet, jobs)
            .unwrap();
        let second = started.elapsed();
        assert_eq!(
            r2.skipped, r2.package_variants,
            "a no-op run skips every variant"
        );
        println!(
            "{} core, {n} repositories, {jobs} jobs: first run {first_core}; second run {}",
            core.name(),
            timed.summary()
        );
        println!(
            "{} core, {n} repositories ({} variants): first run {:.2}s, {} passes, {} reads, {} writes; second run {:.2}s, {} reads, {} writes, {} events, {} variants skipped",
            core.name(),
            r.package_variants,
            first.as_secs_f64(),
            r.passes,
            counts.reads,
            counts.writes,
            second.as_secs_f64(),
            plan2.counts().reads,
            plan2.counts().writes,
            r2.events.len(),
            r2.skipped
        );
        let per = |calls: usize| calls as f64 / r.package_variants.max(1) as f64;
        println!(
            "{} core, {n} repositories: store calls per variant: first run {:.2} reads, {:.2} writes; second run {:.2} reads, {:.2} writes",
            core.name(),
            per(counts.reads),
            per(counts.writes),
            per(plan2.counts().reads),
            per(plan2.counts().writes),
        );
    }
}

/// A fleet whose variants touch common repositories: two write packages of
/// edge-1, and one reads its upstream from edge-2, which another writes.
fn tangled_fleet() -> Fleet {
    let f = Fleet::new(6);
    publish_files(
        &f.git(),
        NS,
        "edge-2",
        "base",
        "v1",
        blueprint("base:1.0"),
        "init",
    )
    .unwrap();
    for i in 1..=6 {
        f.objects
            .put_package_variant(pv(&format!("pv-{i}"), &format!("edge-{i}")));
    }
    let mut second = pv("pv-1-api", "edge-1");
    second.spec.downstream.as_mut().unwrap().package = "api".into();
    f.objects.put_package_variant(second);
    let mut chained = pv("pv-chained", "edge-3");
    let up = chained.spec.upstream.as_mut().unwrap();
    up.repo = "edge-2".into();
    up.package = "base".into();
    chained.spec.downstream.as_mut().unwrap().package = "site".into();
    f.objects.put_package_variant(chained);
    f
}

#[test]
fn variants_reconciled_at_once_write_what_one_at_a_time_writes() {
    let one = tangled_fleet();
    let many = tangled_fleet();
    let mut quiet_one = QuietDigests::default();
    let mut quiet_many = QuietDigests::default();
    for step in ["first run", "no-op run"] {
        let a = one
            .run_quiet(FaultPlan::counting(), &NativeCore, &mut quiet_one, 1)
            .unwrap();
        let timed = Timed::new(&NativeCore);
        let b = many
            .run_quiet(FaultPlan::counting(), &timed, &mut quiet_many, 4)
            .unwrap();
        assert!(a.converged && b.converged, "{step}");
        assert_eq!(a.events, b.events, "{step}: events, in order");
        assert_eq!(a.errors, b.errors, "{step}: errors");
        assert_eq!(a.passes, b.passes, "{step}: passes");
        assert_eq!(a.skipped, b.skipped, "{step}: skipped");
        assert_eq!(one.snapshot(), many.snapshot(), "{step}: the repositories");
        if step == "first run" {
            assert_eq!(
                a.events
                    .iter()
                    .filter(|e| e.action.ends_with("clone draft"))
                    .count(),
                8
            );
            assert!(timed.threads() > 1, "the variants were reconciled at once");
        }
    }
}

#[test]
fn an_init_stopped_before_a_seed_was_published_publishes_it_next_time() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::write(
        root.join("repositories.yaml"),
        "apiVersion: config.porch.kpt.dev/v1alpha1\nkind: Repository\nmetadata:\n  name: blueprints\nspec:\n  type: git\n",
    )
    .unwrap();
    let seed = root.join("packages/blueprints/web");
    std::fs::create_dir_all(&seed).unwrap();
    std::fs::write(seed.join("Kptfile"), KPTFILE).unwrap();
    // The first `--init` created the repository and the seed's draft, then
    // stopped.
    init_bare(&root.join("repos/blueprints"), "main").unwrap();
    let objects =
        porch_variants::local::read_objects(root, porch_variants::local::Validation::Strict)
            .unwrap();
    let store =
        GitRevisions::open(porch_variants::local::repo_configs(root, &objects).unwrap()).unwrap();
    let mut draft = PackageRevision::default();
    draft.metadata.namespace = NS.to_string();
    draft.spec.repository = "blueprints".to_string();
    draft.spec.package_name = "web".to_string();
    draft.spec.workspace_name = "v1".to_string();
    store
        .create(porch_variants::store::NewRevision {
            revision: draft,
            files: Files::from([("Kptfile".to_string(), KPTFILE.to_string())]),
            upstream_lock: None,
        })
        .unwrap();
    drop(store);

    // The directory lock is released at once (`..` drops it).
    let porch_variants::local::cli::OpenedRepositories { store, seeded, .. } =
        porch_variants::local::cli::open_repositories(
            root,
            true,
            porch_variants::local::Validation::Strict,
        )
        .unwrap();
    assert_eq!(seeded, ["blueprints.web.v1 (revision 1)"]);
    let revisions = store
        .list(NS, &PrFilter::package("blueprints", "web"))
        .unwrap();
    assert_eq!(revisions.len(), 1);
    assert_eq!(revisions[0].spec.lifecycle, Lifecycle::Published);
    assert_eq!(revisions[0].spec.revision, 1);

    // And a third `--init` leaves the published seed alone.
    let seeded = porch_variants::local::cli::open_repositories(
        root,
        true,
        porch_variants::local::Validation::Strict,
    )
    .unwrap()
    .seeded;
    assert!(seeded.is_empty(), "{seeded:?}");
}

#[test]
fn a_repository_an_interrupted_init_left_half_created_is_created_again() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::write(
        root.join("repositories.yaml"),
        "apiVersion: config.porch.kpt.dev/v1alpha1\nkind: Repository\nmetadata:\n  name: site-0087\nspec:\n  type: git\n",
    )
    .unwrap();
    // What `git init` leaves when killed early: no objects, no refs.
    let half = root.join("repos/site-0087");
    std::fs::create_dir_all(half.join("hooks")).unwrap();
    std::fs::write(half.join("description"), "Unnamed repository\n").unwrap();
    // And a build directory of a dead process beside it.
    let aside = root.join("repos/.site-0087.init-4000000");
    std::fs::create_dir_all(aside.join("objects")).unwrap();

    let err = porch_variants::local::cli::open_repositories(
        root,
        false,
        porch_variants::local::Validation::Strict,
    )
    .err()
    .expect("an unfinished repository does not open");
    let msg = err.to_string();
    assert!(
        msg.contains("site-0087") && msg.contains("unfinished") && msg.contains("--init"),
        "{msg}"
    );

    let opened = porch_variants::local::cli::open_repositories(
        root,
        true,
        porch_variants::local::Validation::Strict,
    )
    .unwrap();
    assert!(opened
        .store
        .list(NS, &PrFilter::default())
        .unwrap()
        .is_empty());
    assert!(git2::Repository::open_bare(&half).is_ok());
    assert!(
        !aside.exists(),
        "the dead process's build directory is left"
    );
    drop(opened);

    // A repository with content is never taken for an unfinished one.
    std::fs::remove_file(half.join("HEAD")).unwrap();
    let err = porch_variants::local::cli::open_repositories(
        root,
        true,
        porch_variants::local::Validation::Strict,
    )
    .err()
    .expect("a damaged repository with objects is not replaced");
    assert!(!err.to_string().contains("unfinished"), "{err}");
    assert!(half.join("objects").read_dir().unwrap().next().is_some());
}

/// A fresh repository `r` and its store.
fn one_repository() -> (tempfile::TempDir, PathBuf, GitRevisions) {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("r");
    init_bare(&path, "main").unwrap();
    let store = GitRevisions::open(store_configs(&path)).unwrap();
    (tmp, path, store)
}

/// Creates draft `web`/`ws` in `r` and proposes it; its name.
fn proposed(store: &GitRevisions, ws: &str) -> String {
    let mut pr = PackageRevision::default();
    pr.metadata.namespace = NS.to_string();
    pr.spec.repository = "r".to_string();
    pr.spec.package_name = "web".to_string();
    pr.spec.workspace_name = ws.to_string();
    let created = store
        .create(porch_variants::store::NewRevision {
            revision: pr,
            files: blueprint("web:1.0"),
            upstream_lock: None,
        })
        .unwrap();
    let name = created.metadata.name;
    store
        .update_lifecycle(NS, &name, Lifecycle::Proposed)
        .unwrap();
    name
}

#[test]
fn a_publish_that_fails_after_its_tag_is_read_back_as_published() {
    let (_tmp, path, store) = one_repository();
    let name = proposed(&store, "ws");
    // Main cannot move: the tag is made, then the publish fails.
    let lock = path.join("refs/heads/main.lock");
    std::fs::write(&lock, "").unwrap();
    assert!(store
        .update_lifecycle(NS, &name, Lifecycle::Published)
        .is_err());
    std::fs::remove_file(&lock).unwrap();
    // The store forgot what it had cached before the failed write.
    let pr = store.get(NS, &name).unwrap();
    assert_eq!(pr.spec.lifecycle, Lifecycle::Published);
    assert_eq!(pr.spec.revision, 1);
}

#[test]
fn interrupted_moves_are_finished_and_leave_no_stale_ref() {
    let (_tmp, path, store) = one_repository();
    let git = git2::Repository::open_bare(&path).unwrap();
    // A propose killed after its new branch: the draft branch is still
    // there beside it.
    let name = proposed(&store, "a");
    let commit = git.refname_to_id("refs/heads/proposed/web/a").unwrap();
    git.reference("refs/heads/drafts/web/a", commit, false, "leftover")
        .unwrap();
    // A publish killed after its tag: the proposed branch is there, and
    // main has not moved.
    let other = proposed(&store, "b");
    let lock = path.join("refs/heads/main.lock");
    std::fs::write(&lock, "").unwrap();
    assert!(store
        .update_lifecycle(NS, &other, Lifecycle::Published)
        .is_err());
    std::fs::remove_file(&lock).unwrap();
    let main_before = git.refname_to_id("refs/heads/main").unwrap();
    // A delete killed after the tag went: the deletion mark is left.
    git.reference(
        "refs/heads/deletionProposed/web/c",
        main_before,
        false,
        "leftover",
    )
    .unwrap();

    let done = store.finish_interrupted_moves().unwrap();
    assert_eq!(done.len(), 4, "{done:?}");
    assert!(git
        .find_reference("refs/heads/deletionProposed/web/c")
        .is_err());
    assert!(git.find_reference("refs/heads/drafts/web/a").is_err());
    assert!(git.find_reference("refs/heads/proposed/web/b").is_err());
    let tag = git
        .find_reference("refs/tags/web/v1")
        .unwrap()
        .peel_to_commit()
        .unwrap();
    assert_eq!(git.refname_to_id("refs/heads/main").unwrap(), tag.id());
    assert_ne!(main_before, tag.id());
    // Read as before, and nothing left to do.
    assert_eq!(
        store.get(NS, &name).unwrap().spec.lifecycle,
        Lifecycle::Proposed
    );
    assert_eq!(
        store.get(NS, &other).unwrap().spec.lifecycle,
        Lifecycle::Published
    );
    assert!(store.finish_interrupted_moves().unwrap().is_empty());
}

#[test]
fn links_and_submodules_in_a_packages_git_tree_are_refused() {
    let (_tmp, path, store) = one_repository();
    let name = proposed(&store, "ws");
    let git = git2::Repository::open_bare(&path).unwrap();
    let branch = "refs/heads/proposed/web/ws";
    let head = git
        .find_reference(branch)
        .unwrap()
        .peel_to_commit()
        .unwrap();
    let target = git.blob(b"/etc/passwd").unwrap();
    for (entry, mode, why) in [
        ("leak.yaml", git2::FileMode::Link, "symbolic link"),
        ("sub", git2::FileMode::Commit, "submodule"),
    ] {
        // Another tool adds the entry inside the package's directory.
        let root = head.tree().unwrap();
        let web = git.find_tree(root.get_name("web").unwrap().id()).unwrap();
        let mut b = git.treebuilder(Some(&web)).unwrap();
        let id = if mode == git2::FileMode::Commit {
            head.id()
        } else {
            target
        };
        b.insert(entry, id, i32::from(mode)).unwrap();
        let web = b.write().unwrap();
        let mut rb = git.treebuilder(Some(&root)).unwrap();
        rb.insert("web", web, i32::from(git2::FileMode::Tree))
            .unwrap();
        let tree = git.find_tree(rb.write().unwrap()).unwrap();
        let sig = git2::Signature::now("other", "other@example.com").unwrap();
        let commit = git
            .commit(None, &sig, &sig, "add", &tree, &[&head])
            .unwrap();
        git.reference(branch, commit, true, "other tool").unwrap();
        let fresh = GitRevisions::open(store_configs(&path)).unwrap();
        let err = fresh.resources(NS, &name).unwrap_err().to_string();
        assert!(
            err.contains(&format!("web/{entry}")) && err.contains(why),
            "{err}"
        );
    }
}

#[test]
fn a_deletion_mark_left_for_an_older_revision_does_not_mark_a_newer_one() {
    let (_tmp, path, store) = one_repository();
    let name = proposed(&store, "ws");
    store
        .update_lifecycle(NS, &name, Lifecycle::Published)
        .unwrap();
    store
        .update_lifecycle(NS, &name, Lifecycle::DeletionProposed)
        .unwrap();
    // A deletion stopped after the tag went and before the branch did.
    let repo = git2::Repository::open_bare(&path).unwrap();
    repo.find_reference("refs/tags/web/v1")
        .unwrap()
        .delete()
        .unwrap();
    let store = GitRevisions::open(store_configs(&path)).unwrap();
    assert!(store.get(NS, &name).is_err(), "v1 is gone");
    // The workspace name is used again.
    let again = proposed(&store, "ws");
    let published = store
        .update_lifecycle(NS, &again, Lifecycle::Published)
        .unwrap();
    assert_eq!(published.spec.lifecycle, Lifecycle::Published);
    assert_eq!(
        store.get(NS, &again).unwrap().spec.lifecycle,
        Lifecycle::Published
    );
}

#[test]
fn metadata_that_does_not_read_is_an_error_naming_it() {
    let (_tmp, path, store) = one_repository();
    proposed(&store, "ws");
    // Replace the revision's metadata record with bytes that are not JSON.
    let repo = git2::Repository::open_bare(&path).unwrap();
    let meta = repo
        .find_reference(porch_variants::store::git::METADATA_REF)
        .unwrap()
        .peel_to_commit()
        .unwrap();
    let web = meta.tree().unwrap().get_path(Path::new("web")).unwrap();
    let mut sub = repo
        .treebuilder(Some(&repo.find_tree(web.id()).unwrap()))
        .unwrap();
    let blob = repo.blob(b"{not json").unwrap();
    sub.insert("ws.json", blob, 0o100644).unwrap();
    let sub = sub.write().unwrap();
    let mut top = repo.treebuilder(Some(&meta.tree().unwrap())).unwrap();
    top.insert("web", sub, 0o040000).unwrap();
    let tree = repo.find_tree(top.write().unwrap()).unwrap();
    let sig = git2::Signature::now("t", "t@example.com").unwrap();
    repo.commit(
        Some(porch_variants::store::git::METADATA_REF),
        &sig,
        &sig,
        "corrupt",
        &tree,
        &[&meta],
    )
    .unwrap();
    let store = GitRevisions::open(store_configs(&path)).unwrap();
    let e = store
        .list(NS, &PrFilter::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("r: metadata web/ws.json"), "{e}");
}

fn store_configs(path: &Path) -> Vec<GitRepoConfig> {
    vec![GitRepoConfig {
        name: "r".to_string(),
        namespace: NS.to_string(),
        path: path.to_path_buf(),
        branch: "main".to_string(),
        directory: String::new(),
    }]
}

#[test]
fn a_draft_another_process_made_is_not_overwritten() {
    let (_tmp, path, first) = one_repository();
    // The first process has read the repository (and cached it).
    assert!(first.list(NS, &PrFilter::default()).unwrap().is_empty());
    let second = GitRevisions::open(store_configs(&path)).unwrap();
    let new = |owner: &str| {
        let mut pr = PackageRevision::default();
        pr.metadata.namespace = NS.to_string();
        pr.metadata.owner_references = vec![pv_core::api::OwnerReference {
            uid: owner.to_string(),
            ..Default::default()
        }];
        pr.spec.repository = "r".to_string();
        pr.spec.package_name = "web".to_string();
        pr.spec.workspace_name = "ws".to_string();
        porch_variants::store::NewRevision {
            revision: pr,
            files: blueprint("web:1.0"),
            upstream_lock: None,
        }
    };
    let made = second.create(new("second")).unwrap();
    assert!(first.create(new("first")).is_err());
    let read = GitRevisions::open(store_configs(&path))
        .unwrap()
        .get(NS, &made.metadata.name)
        .unwrap();
    let owners: Vec<&str> = read
        .metadata
        .owner_references
        .iter()
        .map(|o| o.uid.as_str())
        .collect();
    assert_eq!(owners, ["second"]);
}

#[test]
fn files_another_process_changed_since_they_were_read_are_not_overwritten() {
    let (_tmp, path, first) = one_repository();
    let name = proposed(&first, "ws");
    first.update_lifecycle(NS, &name, Lifecycle::Draft).unwrap();
    let read = first.resources(NS, &name).unwrap();
    assert!(!read.metadata.resource_version.is_empty());
    // Another process (a user) edits the draft.
    let second = GitRevisions::open(store_configs(&path)).unwrap();
    let edited = blueprint("web:2.0");
    second.update_resources(NS, &name, &edited, "").unwrap();
    let err = first
        .update_resources(
            NS,
            &name,
            &blueprint("web:3.0"),
            &read.metadata.resource_version,
        )
        .unwrap_err();
    assert!(matches!(err, StoreError::Conflict(_)), "{err}");
    let now = GitRevisions::open(store_configs(&path)).unwrap();
    let files = now.resources(NS, &name).unwrap();
    assert_eq!(files.spec.resources, Some(edited));
    // At the version read now, the update goes through.
    first
        .update_resources(
            NS,
            &name,
            &blueprint("web:3.0"),
            &files.metadata.resource_version,
        )
        .unwrap();
    let later = GitRevisions::open(store_configs(&path)).unwrap();
    assert_eq!(
        later.resources(NS, &name).unwrap().spec.resources,
        Some(blueprint("web:3.0"))
    );
}

#[test]
fn drafts_are_rendered_and_a_failing_function_is_named_in_the_status() {
    // The blueprint's own pipeline labels what it has.
    let mut files = blueprint("web:1.0");
    files.insert(
        "Kptfile".into(),
        KPTFILE.replace(
            "  - image: set-labels:v1\n",
            "  - image: set-labels:v1\n    configMap:\n      tier: edge\n",
        ),
    );
    let f = Fleet::with_blueprint(2, files);
    f.objects.put_package_variant(pv("pv-1", "edge-1"));
    let mut broken = pv("pv-2", "edge-2");
    broken.spec.pipeline = serde_json::from_value(json!({"mutators": [
        {"name": "labels", "image": "set-labels:v0.2", "configMap": {}}
    ]}))
    .unwrap();
    f.objects.put_package_variant(broken);
    let core = porch_variants::engine_api::ComponentCore::load().unwrap();
    let report = f.run_rendering(&core);
    assert!(report.converged, "{report:#?}");
    let prs = f.downstream("edge-1");
    assert_eq!(prs.len(), 1, "{report:#?}");
    let d = &prs[0];
    let files = f.files(&d.metadata.name);
    // The variant's set-namespace mutator ran on every namespaced object.
    assert!(
        files["deployment.yaml"].contains("namespace: edge-1"),
        "{}",
        files["deployment.yaml"]
    );
    assert!(
        files["Kptfile"].contains("reason: RenderSuccess"),
        "{}",
        files["Kptfile"]
    );
    assert!(
        files["Kptfile"].contains("set-namespace:v1"),
        "{}",
        files["Kptfile"]
    );
    // set-labels without labels fails: nothing is written for pv-2 and its
    // error names the function.
    assert!(f.downstream("edge-2").is_empty());
    let failed = f.objects.package_variant(NS, "pv-2").unwrap();
    let ready = failed
        .status
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready")
        .expect("a Ready condition");
    assert_eq!(ready.status, "False");
    assert!(
        ready.message.contains("set-labels:v0.2): exit code 1"),
        "{}",
        ready.message
    );
    // A second run writes nothing.
    let before = f.refs();
    let again = f.run_rendering(&core);
    assert!(
        again.events.iter().all(|e| e.object.contains("pv-2")),
        "{:#?}",
        again.events
    );
    assert_eq!(f.refs(), before, "no new commit");
}

/// The same fleet twice, changed alike: one side runs as local mode does
/// (a new process each run, skipping the variants whose digest it recorded
/// quiet), the other reconciles every variant every run. Whatever either
/// writes, the other must write too.
struct Twin {
    quiet: Fleet,
    all: Fleet,
    digests: QuietDigests,
}

impl Twin {
    fn new(n: usize) -> Twin {
        let twin = Twin {
            quiet: Fleet::new(n),
            all: Fleet::new(n),
            digests: QuietDigests::default(),
        };
        for f in [&twin.quiet, &twin.all] {
            for i in 1..=n {
                f.objects
                    .put_package_variant(pv(&format!("pv-{i}"), &format!("edge-{i}")));
            }
        }
        twin
    }

    fn change(&self, what: impl Fn(&Fleet)) {
        what(&self.quiet);
        what(&self.all);
    }

    /// Runs both; they must write the same; returns how many the quiet
    /// side skipped in its last pass.
    fn run(&mut self, step: &str) -> (RunReport, usize) {
        let quiet = self
            .quiet
            // Several variants at once on this side, one at a time on the
            // other: the same writes in the same order either way.
            .run_quiet(FaultPlan::counting(), &NativeCore, &mut self.digests, 3)
            .unwrap();
        let all = self.all.run_with(FaultPlan::counting()).unwrap();
        assert!(all.converged && quiet.converged, "{step}");
        assert_eq!(quiet.events, all.events, "{step}: events");
        assert_eq!(quiet.errors, all.errors, "{step}: errors");
        assert_eq!(quiet.passes, all.passes, "{step}: passes");
        assert_eq!(all.skipped, 0);
        assert_eq!(
            self.quiet.snapshot(),
            self.all.snapshot(),
            "{step}: the repositories"
        );
        let skipped = quiet.skipped;
        (quiet, skipped)
    }
}

#[test]
fn a_variant_is_skipped_only_while_nothing_it_reads_changes() {
    let mut twin = Twin::new(3);
    let (first, skipped) = twin.run("first run");
    assert_eq!(skipped, 0);
    assert!(!first.events.is_empty());
    let (quiet, skipped) = twin.run("no-op");
    assert!(quiet.events.is_empty());
    assert_eq!(skipped, 3, "nothing changed: every variant skipped");

    // A user edits edge-1's draft: only pv-1 reads it.
    twin.change(|f| {
        let name = "edge-1.web.packagevariant-1";
        let mut files = f.files(name);
        let d = files["deployment.yaml"].replace("replicas: 2", "replicas: 5");
        files.insert("deployment.yaml".into(), d);
        f.git().update_resources(NS, name, &files, "").unwrap();
    });
    assert_eq!(twin.run("a local edit").1, 2);

    twin.change(Fleet::approve_all);
    assert_eq!(twin.run("approved").1, 0, "every downstream changed");

    twin.change(Fleet::publish_upstream_v2);
    let (upgrade, skipped) = twin.run("upstream v2");
    assert_eq!(skipped, 0, "the upstream every variant reads changed");
    assert_eq!(
        upgrade
            .events
            .iter()
            .filter(|e| e.action == "created upgrade draft")
            .count(),
        3
    );
    assert_eq!(twin.run("no-op after the upgrade").1, 3);

    // The injected ConfigMap changes: every variant injects it.
    twin.change(|f| {
        f.objects
            .put_object(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "east-endpoints", "namespace": NS}, "data": {"db": "db2.east"}}));
    });
    let (injected, skipped) = twin.run("injection source changed");
    assert_eq!(skipped, 0);
    assert!(!injected.events.is_empty());

    // A revision owned by pv-1 appears in edge-3, a repository pv-1 does
    // not otherwise read: pv-1 (and pv-3, whose repository it is) must
    // look; pv-2 need not.
    twin.change(|f| {
        let uid = f.objects.package_variant(NS, "pv-1").unwrap().metadata.uid;
        let mut pr = PackageRevision::default();
        pr.metadata.namespace = NS.to_string();
        pr.metadata.owner_references = vec![pv_core::api::OwnerReference {
            api_version: "config.porch.kpt.dev/v1alpha1".into(),
            kind: "PackageVariant".into(),
            name: "pv-1".into(),
            uid,
            controller: Some(true),
            block_owner_deletion: None,
        }];
        pr.spec.repository = "edge-3".to_string();
        pr.spec.package_name = "stray".to_string();
        pr.spec.workspace_name = "ws".to_string();
        f.git()
            .create(porch_variants::store::NewRevision {
                revision: pr,
                files: blueprint("web:1.0"),
                upstream_lock: None,
            })
            .unwrap();
    });
    let (stray, skipped) = twin.run("a revision owned elsewhere");
    assert_eq!(
        stray.events,
        [porch_variants::reconcile::Event::new(
            "PackageRevision edge-3.stray.ws",
            "deleted",
            "by PackageVariant default/pv-1"
        )],
        "pv-1 looked, and deleted what it owns and does not want"
    );
    // In the last pass, pv-1 reads what it read when it was last quiet;
    // pv-3's repository has the stray's metadata commit.
    assert_eq!(skipped, 2);

    // The variant itself changes.
    twin.change(|f| {
        let mut p = pv("pv-2", "edge-2");
        p.spec
            .package_context
            .as_mut()
            .unwrap()
            .data
            .insert("region".into(), "west".into());
        f.objects.put_package_variant(p);
    });
    let (_, skipped) = twin.run("pv-2 edited");
    assert_eq!(skipped, 2);
    assert_eq!(twin.run("final no-op").1, 3);
}
