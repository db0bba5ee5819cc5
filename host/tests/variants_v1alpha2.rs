//! The variant controllers in both modes (`--porch-api v1alpha1` and
//! `v1alpha2`) on real Git repositories: the same scenarios end with the
//! same packages in Git; in v1alpha2 mode a draft is declared and waited
//! for, and a slow, restarted or failing PackageRevision controller never
//! makes a variant create a second draft.

mod git_support;
use std::path::PathBuf;
use std::sync::Arc;

use porch_variants::engine_api::NativeCore;
use porch_variants::local::cli::publish_files;
use porch_variants::local::rpkg::Session;
use porch_variants::reconcile::{
    package_variant, run_to_fixed_point, Ctx, DraftRenderer, NoProgress, RunReport,
};
use porch_variants::store::git::{init_bare, GitRevisions};
use porch_variants::store::memory::MemoryObjects;
use porch_variants::store::v1alpha2::{PorchApi, PrObjects, V2Revisions};
use porch_variants::store::{Files, ObjectStore, PackageRevisionStore, PrFilter};
use pv_testkit::faulty::{FaultPlan, FaultSchedule, Faulty, WriteFault};

use pv_core::api::package_revision::Lifecycle;
use pv_core::api::PackageVariant;
use pv_core::variantset::Repository;
use serde_json::{json, Value};

const NS: &str = "default";
const NOW: &str = "2026-01-01T00:00:00Z";
const KPTFILE: &str = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: web\ninfo:\n  description: web\npipeline:\n  mutators:\n  - image: set-labels:v1\n    configMap:\n      app: web\n";
const CONTEXT: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kptfile.kpt.dev\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\ndata:\n  name: web\n";
const DEPLOY: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 2 # per region\n  template:\n    spec:\n      containers:\n      - name: web\n        image: web:1.0\n";

fn blueprint(image: &str) -> Files {
    Files::from([
        ("Kptfile".to_string(), KPTFILE.to_string()),
        ("package-context.yaml".to_string(), CONTEXT.to_string()),
        (
            "deployment.yaml".to_string(),
            DEPLOY.replace("web:1.0", image),
        ),
    ])
}

fn pv(name: &str, repo: &str) -> PackageVariant {
    serde_json::from_value(json!({
        "apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "PackageVariant",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "upstream": {"repo": "blueprints", "package": "web"},
            "downstream": {"repo": repo, "package": "web"},
            "packageContext": {"data": {"region": "east"}},
            "labels": {"fleet": "edge"},
            "pipeline": {"mutators": [{"name": "ns", "image": "set-namespace:v1", "configMap": {"namespace": repo}}]},
        }
    }))
    .unwrap()
}

fn renderer() -> DraftRenderer {
    DraftRenderer::new(
        pv_core::render::RenderOptions::default(),
        Box::new(pv_core::render::BuiltinsOnly),
    )
}

/// A blueprints repository with `web` v1 published and `n` deployment
/// repositories, driven in one mode.
struct Fleet {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    repos: Vec<String>,
    objects: MemoryObjects,
    mode: PorchApi,
}

impl Fleet {
    fn new(n: usize, mode: PorchApi) -> Fleet {
        let tmp = tempfile::tempdir().unwrap();
        // The same path in both modes' runs is not possible; locks name
        // the repositories by path, so snapshots replace the root.
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
            objects: MemoryObjects::new(NOW),
            mode,
        };
        for r in &fleet.repos {
            let mut repo = Repository::default();
            repo.metadata.name = r.clone();
            repo.metadata.namespace = NS.into();
            fleet.objects.put_repository(repo);
        }
        publish_files(
            &fleet.git(),
            NS,
            "blueprints",
            "web",
            "v1",
            blueprint("web:1.0"),
            "init",
        )
        .unwrap();
        fleet
    }

    fn git(&self) -> GitRevisions {
        git_support::open_repos(&self.root, self.repos.iter().map(String::as_str))
    }

    fn repository_objects(&self) -> Vec<Value> {
        self.repos
            .iter()
            .map(|r| {
                json!({"apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "Repository",
                "metadata": {"name": r, "namespace": NS}, "spec": {"type": "git"}})
            })
            .collect()
    }

    /// The PackageRevision controller's session over `content` (a fresh
    /// one each time: a restarted controller reads its objects back).
    fn session<'a>(
        &self,
        content: &'a dyn PackageRevisionStore,
        renderer: &'a DraftRenderer,
    ) -> Session<'a> {
        let s = Session::open(
            &self.root,
            &self.repository_objects(),
            content,
            &NativeCore,
            renderer,
        )
        .unwrap();
        s.discover(NS).unwrap();
        s
    }

    /// Runs the variant controllers to a fixed point; in v1alpha2 mode
    /// with the PackageRevision controller woken after each write.
    fn run(&self) -> RunReport {
        let git = self.git();
        let renderer = renderer();
        let report = match self.mode {
            PorchApi::V1alpha1 => run_to_fixed_point(
                &Ctx {
                    revisions: &git,
                    objects: &self.objects,
                    core: &NativeCore,
                    now: NOW.into(),
                    renderer: Some(&renderer),
                    jobs: 1,
                },
                10,
                &NoProgress,
            ),
            PorchApi::V1alpha2 => {
                let session = self.session(&git, &renderer);
                session.retry_unready().unwrap();
                let v2 = V2Revisions::new(&session.api, &git, Some(&session));
                let report = run_to_fixed_point(
                    &Ctx {
                        revisions: &v2,
                        objects: &self.objects,
                        core: &NativeCore,
                        now: NOW.into(),
                        renderer: Some(&renderer),
                        jobs: 1,
                    },
                    10,
                    &NoProgress,
                );
                // As `local` does: the renders left for a push that did
                // not come.
                session.retry_unready().unwrap();
                report
            }
        }
        .unwrap();
        assert!(report.converged, "{report:#?}");
        assert!(report.errors.is_empty(), "{:#?}", report.errors);
        report
    }

    /// Proposes and approves every draft, the way each mode's user does
    /// (porchctl on the aggregated API; the object's spec in v1alpha2).
    fn approve_all(&self) {
        let git = self.git();
        let renderer = renderer();
        let session = self.session(&git, &renderer);
        for pr in git.list(NS, &PrFilter::default()).unwrap() {
            if pr.spec.lifecycle != Lifecycle::Draft {
                continue;
            }
            for lc in [Lifecycle::Proposed, Lifecycle::Published] {
                match self.mode {
                    PorchApi::V1alpha1 => {
                        git.update_lifecycle(NS, &pr.metadata.name, lc).unwrap();
                    }
                    PorchApi::V1alpha2 => {
                        session.set_lifecycle(NS, &pr.metadata.name, lc).unwrap();
                    }
                }
            }
        }
    }

    /// Every revision in Git: name, lifecycle, number, the variant's
    /// metadata and the package's objects. Objects are compared parsed
    /// (comments and key order aside), with what differs by construction
    /// normalized: between two runs, the temporary root and commit ids;
    /// between the two APIs, the render results' messages (v1alpha2
    /// renders a new draft before the variant mutates it, as porch-server
    /// does) and the form of the Kptfile's upstream (kpt's `.git` suffix;
    /// the `updateStrategy` porch-server's clone records).
    fn snapshot(&self) -> Vec<Revision> {
        let git = self.git();
        let root = self.root.display().to_string();
        git.list(NS, &PrFilter::default())
            .unwrap()
            .into_iter()
            .map(|p| {
                let files = git
                    .resources(NS, &p.metadata.name)
                    .unwrap()
                    .spec
                    .resources
                    .unwrap()
                    .into_iter()
                    .map(|(k, v)| {
                        let v = objects_of_file(&k, &normalize(&v.replace(&root, "<root>")));
                        (k, v)
                    })
                    .collect();
                let meta = pv_core::variant::v1alpha2::variant_metadata(&p.metadata);
                let meta = format!(
                    "{:?} {:?} {:?}",
                    meta.labels,
                    meta.annotations,
                    meta.owner_references
                        .iter()
                        .map(|o| (&o.kind, &o.name))
                        .collect::<Vec<_>>()
                );
                Revision {
                    name: p.metadata.name,
                    lifecycle: p.spec.lifecycle,
                    number: p.spec.revision,
                    meta,
                    files,
                }
            })
            .collect()
    }
}

/// One revision of a snapshot.
#[derive(Debug, Clone, PartialEq)]
struct Revision {
    name: String,
    lifecycle: Lifecycle,
    number: i64,
    meta: String,
    files: std::collections::BTreeMap<String, Value>,
}

impl Revision {
    fn file(&self, path: &str) -> String {
        serde_json::to_string(&self.files[path]).unwrap()
    }
}

fn normalize(text: &str) -> String {
    text.lines()
        .filter(|l| l.trim() != "updateStrategy: resource-merge")
        .map(|l| match l.split_once("commit: ") {
            Some((indent, sha)) if sha.len() == 40 => format!("{indent}commit: <sha>\n"),
            _ => format!("{}\n", l.replace("/blueprints.git", "/blueprints")),
        })
        .collect()
}

/// A YAML file's objects, without the merge key kpt's updater adds in
/// v1alpha2's upgrade (`internal.kpt.dev/upstream-identifier`; its
/// `kpt-merge` comment is not parsed) and the Kptfile without its render
/// results' messages; any other file as its text.
fn objects_of_file(path: &str, text: &str) -> Value {
    if !(path.ends_with(".yaml") || path == "Kptfile") {
        return json!(text);
    }
    let docs = pv_core::yaml::parse_stream(text).unwrap();
    let mut out: Vec<Value> = docs
        .iter()
        .map(|d| pv_core::yaml::to_json_strict(d).unwrap())
        .collect();
    for o in &mut out {
        if let Some(annotations) = o["metadata"]["annotations"].as_object_mut() {
            annotations.remove("internal.kpt.dev/upstream-identifier");
        }
        let empty = match &o["metadata"]["annotations"] {
            Value::Null => true,
            Value::Object(m) => m.is_empty(),
            _ => false,
        };
        if empty {
            if let Some(meta) = o["metadata"].as_object_mut() {
                meta.remove("annotations");
            }
        }
        if o["kind"] == "Kptfile" {
            if let Some(steps) = o["status"]["renderStatus"]["mutationSteps"].as_array_mut() {
                for step in steps {
                    step.as_object_mut().unwrap().remove("results");
                }
            }
        }
    }
    json!(out)
}

fn count(report: &RunReport, action: &str) -> usize {
    report.events.iter().filter(|e| e.action == action).count()
}

/// Clone, a no-op run, approval, an upstream v2 upgrade keeping a local
/// edit, a package-context change on the published package (edit draft),
/// and the deletion of a variant; the snapshot after each step.
fn scenario(mode: PorchApi) -> Vec<Vec<Revision>> {
    let f = Fleet::new(3, mode);
    let (create, made) = match mode {
        PorchApi::V1alpha1 => ("created clone draft", 0),
        PorchApi::V1alpha2 => ("requested clone draft", 2),
    };
    let mut snaps = Vec::new();
    f.objects.put_package_variant(pv("pv-1", "edge-1"));
    f.objects.put_package_variant(pv("pv-2", "edge-2"));
    let first = f.run();
    assert_eq!(count(&first, create), 2, "{:#?}", first.events);
    assert_eq!(count(&first, "mutated draft"), made, "{:#?}", first.events);
    snaps.push(f.snapshot());
    let again = f.run();
    assert!(again.events.is_empty(), "{:#?}", again.events);

    let git = f.git();
    let name = "edge-1.web.packagevariant-1";
    let mut files = git.resources(NS, name).unwrap().spec.resources.unwrap();
    let d = files["deployment.yaml"].replace("replicas: 2", "replicas: 5");
    files.insert("deployment.yaml".into(), d);
    git.update_resources(NS, name, &files, "").unwrap();
    f.approve_all();
    assert!(f.run().events.is_empty());
    snaps.push(f.snapshot());

    publish_files(
        &git,
        NS,
        "blueprints",
        "web",
        "v2",
        blueprint("web:2.0"),
        "edit",
    )
    .unwrap();
    let up = f.run();
    assert_eq!(up.passes, 2, "{:#?}", up.events);
    snaps.push(f.snapshot());
    f.approve_all();
    f.run();

    let mut p = f.objects.package_variant(NS, "pv-2").unwrap();
    p.spec
        .package_context
        .as_mut()
        .unwrap()
        .data
        .insert("region".into(), "north".into());
    f.objects.update_package_variant(&p).unwrap();
    let edit = f.run();
    assert_eq!(edit.passes, 2, "{:#?}", edit.events);
    snaps.push(f.snapshot());

    f.objects.delete_package_variant(NS, "pv-2").unwrap();
    f.run();
    assert!(f.objects.package_variant(NS, "pv-2").is_none());
    snaps.push(f.snapshot());

    // Adoption: a published revision nobody owns is taken over, not
    // cloned again.
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
    let mut adopter = pv("pv-3", "edge-3");
    adopter.spec.adoption_policy = "adoptExisting".into();
    f.objects.put_package_variant(adopter);
    let adopted = f.run();
    assert_eq!(count(&adopted, create), 0, "{:#?}", adopted.events);
    snaps.push(f.snapshot());
    snaps
}

#[test]
fn both_modes_end_with_the_same_packages_in_git() {
    let v1 = scenario(PorchApi::V1alpha1);
    let v2 = scenario(PorchApi::V1alpha2);
    for (step, (a, b)) in v1.iter().zip(&v2).enumerate() {
        assert_eq!(a.len(), b.len(), "step {step}: revisions");
        for (x, y) in a.iter().zip(b) {
            assert_eq!(x, y, "step {step}");
        }
    }
    // The scenario did what it says.
    let last = &v2[3];
    let upgraded = last
        .iter()
        .find(|r| r.name == "edge-1.web.packagevariant-2")
        .expect("upgrade of edge-1");
    let deployment = upgraded.file("deployment.yaml");
    assert!(deployment.contains("\"replicas\":5"), "{deployment}");
    assert!(upgraded.file("Kptfile").contains("web/v2"), "upgraded");
    assert!(
        deployment.contains("\"namespace\":\"edge-1\""),
        "{deployment}"
    );
    assert!(
        deployment.contains("\"app\":\"web\""),
        "rendered: {deployment}"
    );
    let edited = last
        .iter()
        .filter(|r| r.name.starts_with("edge-2.") && r.lifecycle == Lifecycle::Draft)
        .collect::<Vec<_>>();
    assert_eq!(edited.len(), 1);
    assert!(edited[0].file("package-context.yaml").contains("north"));
    assert!(
        edited[0].meta.contains("PackageVariant"),
        "{}",
        edited[0].meta
    );
    let deleted = &v2[4];
    assert!(deleted
        .iter()
        .filter(|r| r.name.starts_with("edge-2."))
        .all(|r| r.lifecycle == Lifecycle::DeletionProposed));
    let adopted = &v2[5];
    let edge3: Vec<&Revision> = adopted
        .iter()
        .filter(|r| r.name.starts_with("edge-3."))
        .collect();
    assert!(
        edge3.iter().any(|r| r.meta.contains("\"pv-3\"")),
        "{edge3:#?}"
    );
}

/// The objects of the directory's v1alpha2 API.
fn objects(f: &Fleet, git: &GitRevisions) -> Vec<Value> {
    let renderer = renderer();
    let session = f.session(git, &renderer);
    PrObjects::list(&session.api, NS, &PrFilter::default()).unwrap()
}

#[test]
fn a_reconcile_while_the_source_runs_creates_nothing_and_waits() {
    let f = Fleet::new(1, PorchApi::V1alpha2);
    let pv1 = pv("pv-1", "edge-1");
    f.objects.put_package_variant(pv1.clone());
    let git = f.git();
    let renderer = renderer();
    let session = f.session(&git, &renderer);
    // No controller is woken: the PackageRevision controller is slow.
    let plan = FaultPlan::counting();
    let v2 = Faulty::new(V2Revisions::new(&session.api, &git, None), plan.clone());
    let objects = Faulty::new(&f.objects, plan.clone());
    let ctx = Ctx {
        revisions: &v2,
        objects: &objects,
        core: &NativeCore,
        now: NOW.into(),
        renderer: Some(&renderer),
        jobs: 1,
    };
    let reconcile = |events: &mut Vec<_>| {
        let pv = f.objects.package_variant(NS, "pv-1").unwrap();
        package_variant::reconcile(&ctx, &pv, events)
    };
    let mut events = Vec::new();
    // The finalizer, then the declared draft.
    let _ = reconcile(&mut events);
    let waited = reconcile(&mut events).expect_err("waits for the source");
    assert!(
        waited.to_string().contains(
            "waiting for the PackageRevision controller to make edge-1.web.packagevariant-1"
        ),
        "{waited}"
    );
    let declared: Vec<_> = events
        .iter()
        .filter(|e| e.action == "requested clone draft")
        .collect();
    assert_eq!(declared.len(), 1, "{events:#?}");
    assert!(
        git.list(NS, &PrFilter::package("edge-1", "web"))
            .unwrap()
            .is_empty(),
        "no content yet"
    );
    // Again while it still runs: no write at all.
    let writes = plan.counts().writes;
    let again = reconcile(&mut Vec::new()).expect_err("still waiting");
    assert!(matches!(
        again,
        porch_variants::reconcile::ReconcileError::Waiting(_)
    ));
    assert_eq!(
        plan.counts().writes,
        writes,
        "a waiting reconcile writes nothing"
    );
    // The controller catches up; the next reconcile mutates and is done.
    session.settle(NS, "edge-1.web.packagevariant-1").unwrap();
    let mut events = Vec::new();
    reconcile(&mut events).unwrap();
    assert_eq!(
        events
            .iter()
            .filter(|e| e.action == "mutated draft")
            .count(),
        1,
        "{events:#?}"
    );
    let files = git
        .resources(NS, "edge-1.web.packagevariant-1")
        .unwrap()
        .spec
        .resources
        .unwrap();
    assert!(
        files["deployment.yaml"].contains("namespace: edge-1"),
        "{}",
        files["deployment.yaml"]
    );
    // Wake the controller for the render the push requested; then nothing
    // is left to do.
    session.settle(NS, "edge-1.web.packagevariant-1").unwrap();
    let writes = plan.counts().writes;
    reconcile(&mut Vec::new()).unwrap();
    assert_eq!(
        plan.counts().writes,
        writes,
        "{:#?}",
        f.objects.package_variant(NS, "pv-1").unwrap().status
    );
    assert_eq!(objects_of(&f, &git, "edge-1"), 1);
}

fn objects_of(f: &Fleet, git: &GitRevisions, repo: &str) -> usize {
    objects(f, git)
        .iter()
        .filter(|o| o["spec"]["repository"] == repo)
        .count()
}

#[test]
fn a_failing_or_restarted_controller_never_makes_a_second_draft() {
    let f = Fleet::new(5, PorchApi::V1alpha2);
    let renderer = renderer();
    // Each round: a new controller session (a restart), its Git writes
    // failing at one write, and the variants' own store crashing at
    // another; then a round with no faults.
    let rounds = [
        (1, WriteFault::ErrorBefore, 2),
        (2, WriteFault::ErrorAfter, 1),
        (3, WriteFault::ErrorAfter, 3),
        (2, WriteFault::ErrorBefore, 2),
        (1, WriteFault::ErrorAfter, 3),
    ];
    let mut injected = 0;
    for (round, (controller_fault, kind, variant_crash)) in rounds.into_iter().enumerate() {
        // One more variant each round, so every round has work to fail.
        let i = round + 1;
        f.objects
            .put_package_variant(pv(&format!("pv-{i}"), &format!("edge-{i}")));
        let controller_plan =
            FaultPlan::scheduled(FaultSchedule::new().write(controller_fault, kind));
        let git = f.git();
        let content = Faulty::new(&git, Arc::clone(&controller_plan));
        let session = f.session(&content, &renderer);
        let _ = session.retry_unready();
        let variant_plan =
            FaultPlan::scheduled(FaultSchedule::new().write(variant_crash, WriteFault::CrashAfter));
        let v2 = Faulty::new(
            V2Revisions::new(&session.api, &git, Some(&session)),
            Arc::clone(&variant_plan),
        );
        let variant_objects = Faulty::new(&f.objects, Arc::clone(&variant_plan));
        let ctx = Ctx {
            revisions: &v2,
            objects: &variant_objects,
            core: &NativeCore,
            now: NOW.into(),
            renderer: Some(&renderer),
            jobs: 1,
        };
        let _ = run_to_fixed_point(&ctx, 3, &NoProgress);
        let met = controller_plan.injected().len() + variant_plan.injected().len();
        assert!(met > 0, "round {round} met no fault");
        injected += met;
        for i in 1..=5 {
            assert!(
                objects_of(&f, &git, &format!("edge-{i}")) <= 1,
                "round {round}: a second draft for edge-{i}"
            );
        }
    }
    assert!(injected >= 5, "the faults were met: {injected}");
    let report = f.run();
    assert!(report.converged);
    let git = f.git();
    for i in 1..=5 {
        let repo = format!("edge-{i}");
        assert_eq!(objects_of(&f, &git, &repo), 1, "{repo}");
        let prs = git.list(NS, &PrFilter::package(&repo, "web")).unwrap();
        assert_eq!(prs.len(), 1, "{repo}: {prs:#?}");
        let files = git
            .resources(NS, &prs[0].metadata.name)
            .unwrap()
            .spec
            .resources
            .unwrap();
        assert!(
            files["deployment.yaml"].contains(&format!("namespace: {repo}")),
            "{repo}: {files:#?}"
        );
        assert_eq!(prs[0].metadata.owner_references.len(), 1, "{repo}");
    }
    assert!(f.run().events.is_empty());
}

#[test]
fn a_fleet_moves_between_the_modes_without_a_write() {
    let f = Fleet::new(2, PorchApi::V1alpha1);
    f.objects.put_package_variant(pv("pv-1", "edge-1"));
    f.objects.put_package_variant(pv("pv-2", "edge-2"));
    f.run();
    f.approve_all();
    let before = f.snapshot();
    // To v1alpha2: the revisions are discovered with their owners.
    let v2 = Fleet {
        mode: PorchApi::V1alpha2,
        ..f
    };
    assert!(v2.run().events.is_empty());
    assert_eq!(v2.snapshot(), before);
    // And back.
    let v1 = Fleet {
        mode: PorchApi::V1alpha1,
        ..v2
    };
    assert!(v1.run().events.is_empty());
    assert_eq!(v1.snapshot(), before);
}

/// Copies `examples/fleet` under `root`.
fn copy_fleet(root: &std::path::Path) -> PathBuf {
    fn copy(from: &std::path::Path, to: &std::path::Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            let target = to.join(e.file_name());
            if e.file_type().unwrap().is_dir() {
                copy(&e.path(), &target);
            } else {
                std::fs::copy(e.path(), target).unwrap();
            }
        }
    }
    let dir = root.join("fleet");
    copy(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/fleet"),
        &dir,
    );
    dir
}

/// Every revision of a local directory's repositories, normalized as
/// [`Fleet::snapshot`] does.
fn dir_snapshot(dir: &std::path::Path) -> Vec<Revision> {
    let objects =
        porch_variants::local::read_objects(dir, porch_variants::local::Validation::Strict)
            .unwrap();
    let configs = porch_variants::local::repo_configs(dir, &objects).unwrap();
    let repos: Vec<String> = configs.iter().map(|c| c.name.clone()).collect();
    let f = Fleet {
        _tmp: tempfile::tempdir().unwrap(),
        root: dir.join("repos"),
        repos,
        objects: MemoryObjects::new(NOW),
        mode: PorchApi::V1alpha1,
    };
    f.snapshot()
}

/// The fleet demo (a set over 20 repositories and a standalone variant)
/// run with `local --init` in each mode: the same packages in Git, and a
/// second run in v1alpha2 mode writes nothing.
#[test]
fn the_fleet_demo_gives_the_same_packages_in_either_mode() {
    use porch_variants::local::cli::{run_local, LocalArgs, Output};
    let tmp = tempfile::tempdir().unwrap();
    let mut snaps = Vec::new();
    for mode in [PorchApi::V1alpha1, PorchApi::V1alpha2] {
        let dir = copy_fleet(&tmp.path().join(format!("{mode:?}")));
        let mut args = LocalArgs {
            dir: dir.clone(),
            init: true,
            output: Output::Json,
            native_core: true,
            max_passes: 10,
            no_progress: true,
            porch_api: mode,
            reconcile_all: false,
            // More workers than this machine may have CPUs: the parallel path.
            jobs: Some(3),
            validate: Default::default(),
            runner: Default::default(),
            dry_run: false,
        };
        let (summary, ok) = run_local(&args).unwrap();
        assert!(ok, "{mode:?}: {:#?}", summary.report.errors);
        let drafts = summary
            .report
            .events
            .iter()
            .filter(|e| e.action.ends_with("clone draft"))
            .count();
        assert_eq!(drafts, 21, "{mode:?}");
        args.init = false;
        // A run that writes nothing, having skipped `skipped` variants.
        let quiet = |args: &LocalArgs, skipped: usize| {
            let (run, ok) = run_local(args).unwrap();
            assert!(
                ok && run.report.events.is_empty(),
                "{mode:?}: {:#?}",
                run.report.events
            );
            assert_eq!(run.report.skipped, skipped, "{mode:?}");
        };
        quiet(&args, 21);
        // The standalone variant's file is edited: only it is reconciled.
        let file = dir.join("team-a.yaml");
        let text = std::fs::read_to_string(&file).unwrap();
        std::fs::write(
            &file,
            text.replace(
                "team: a\n  pipeline",
                "team: a\n      tier: gold\n  pipeline",
            ),
        )
        .unwrap();
        let (edited, ok) = run_local(&args).unwrap();
        assert!(ok, "{mode:?}: {:#?}", edited.report.errors);
        assert_eq!(edited.report.skipped, 20, "{mode:?}");
        assert!(
            edited
                .report
                .events
                .iter()
                .any(|e| e.object == "PackageVariant default/team-a-web"),
            "{mode:?}: {:#?}",
            edited.report.events
        );
        std::fs::write(&file, text).unwrap();
        let (back, ok) = run_local(&args).unwrap();
        assert!(ok, "{mode:?}: {:#?}", back.report.errors);
        // Every variant reconciled: the edit is undone, nothing else moves.
        args.reconcile_all = true;
        quiet(&args, 0);
        let snap: Vec<Revision> = dir_snapshot(&dir)
            .into_iter()
            .map(|mut r| {
                // The roots differ between the two copies.
                let root = dir.display().to_string();
                for v in r.files.values_mut() {
                    *v = serde_json::from_str(
                        &serde_json::to_string(v).unwrap().replace(&root, "<dir>"),
                    )
                    .unwrap();
                }
                r
            })
            .collect();
        snaps.push(snap);
    }
    assert_eq!(snaps[0].len(), snaps[1].len());
    assert_eq!(snaps[0].len(), 22, "the blueprint and 21 drafts");
    for (a, b) in snaps[0].iter().zip(&snaps[1]) {
        assert_eq!(a, b);
    }
}

/// The commit messages of `repo`'s draft branch past `main`, newest first.
fn draft_commits(f: &Fleet, repo: &str, package: &str, workspace: &str) -> Vec<String> {
    commits(f, repo, &format!("main..drafts/{package}/{workspace}"))
}

/// The commit messages of `range` in `repo`, newest first.
fn commits(f: &Fleet, repo: &str, range: &str) -> Vec<String> {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(f.root.join(repo))
        .args(["log", "--format=%s", range])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// In local mode the PackageRevision controller leaves a declared draft's
/// render for the variant's push, and the push waits for that render: a
/// new draft is two commits (the source, with the variant's metadata in
/// the same write, then the mutated and rendered package), where a
/// controller elsewhere makes four. A draft the variant's mutations do not
/// change gets its render from the run's last sweep and is Ready like the
/// others.
#[test]
fn a_declared_draft_is_rendered_once() {
    let f = Fleet::new(2, PorchApi::V1alpha2);
    f.objects.put_package_variant(pv("pv-1", "edge-1"));
    let mut bare = pv("pv-2", "edge-2");
    bare.spec.package_context = None;
    bare.spec.labels.clear();
    bare.spec.pipeline = None;
    f.objects.put_package_variant(bare);
    let report = f.run();
    assert_eq!(
        count(&report, "requested clone draft"),
        2,
        "{:#?}",
        report.events
    );
    assert_eq!(count(&report, "mutated draft"), 1, "{:#?}", report.events);
    assert_eq!(
        draft_commits(&f, "edge-1", "web", "packagevariant-1"),
        ["Update web/packagevariant-1", "Create web/packagevariant-1"],
        "source, then push and render"
    );
    // The owners went with the source: one metadata write per draft.
    assert_eq!(
        commits(&f, "edge-1", "refs/porch-variants/metadata").len(),
        1,
        "the draft's metadata, written once"
    );
    // That one commit holds the push rendered: the variant's pipeline ran.
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(f.root.join("edge-1"))
        .args(["show", "drafts/web/packagevariant-1:web/deployment.yaml"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("namespace: edge-1"),
        "{out:?}"
    );
    let git = f.git();
    let renderer = renderer();
    let session = f.session(&git, &renderer);
    for name in ["edge-1.web.packagevariant-1", "edge-2.web.packagevariant-1"] {
        let obj = session.object(NS, name).unwrap();
        let ready = obj.status.conditions.iter().find(|c| c.type_ == "Ready");
        assert_eq!(
            ready.map(|c| c.status.as_str()),
            Some("True"),
            "{name}: {:#?}",
            obj.status
        );
        let rendered = obj.status.conditions.iter().find(|c| c.type_ == "Rendered");
        assert_eq!(
            rendered.map(|c| c.status.as_str()),
            Some("True"),
            "{name}: {:#?}",
            obj.status
        );
    }
    // The rendered package carries the pipeline's label.
    let files = git
        .resources(NS, "edge-2.web.packagevariant-1")
        .unwrap()
        .spec
        .resources
        .unwrap();
    assert!(
        files["deployment.yaml"].contains("app: web"),
        "{}",
        files["deployment.yaml"]
    );
    assert_eq!(
        draft_commits(&f, "edge-2", "web", "packagevariant-1").len(),
        2,
        "source and render"
    );
    assert!(f.run().events.is_empty());
}
