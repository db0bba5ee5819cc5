//! The PackageRevision controller killed at every store write: a process
//! that dies just before or just after any write to Git, then runs again,
//! ends with the same revisions as an uninterrupted run — each revision
//! once, no dangling ref, the same content, `git fsck` clean — and a third
//! run has nothing to do.

use std::collections::BTreeMap;
use std::path::Path;

use porch_variants::engine_api::NativeCore;
use porch_variants::local::cli::open_repositories;
use porch_variants::local::rpkg::{reconcile_declared, Session};
use porch_variants::reconcile::DraftRenderer;
use porch_variants::store::{PackageRevisionStore, PrFilter};
use pv_testkit::faulty::{FaultPlan, FaultSchedule, Faulty, WriteFault};
use serde_json::{json, Value};

const REPOS: &str = "apiVersion: config.porch.kpt.dev/v1alpha1
kind: Repository
metadata:
  name: blueprints
spec:
  type: git
  git:
    branch: main
";

fn declared() -> Vec<Value> {
    let pr = |ws: &str, lifecycle: &str, source: Value| {
        json!({"apiVersion": "porch.kpt.dev/v1alpha2", "kind": "PackageRevision",
            "metadata": {"name": format!("blueprints.app.{ws}"), "namespace": "default"},
            "spec": {"packageName": "app", "repository": "blueprints", "workspaceName": ws,
                "lifecycle": lifecycle, "source": source}})
    };
    vec![
        pr(
            "v1",
            "Published",
            json!({"init": {"description": "the app"}}),
        ),
        pr(
            "v2",
            "Proposed",
            json!({"copyFrom": {"name": "blueprints.app.v1"}}),
        ),
    ]
}

/// One `local` pass over the declared objects, with `plan`'s faults on
/// the Git writes; the writes made.
fn run(dir: &Path, plan: std::sync::Arc<FaultPlan>) -> usize {
    let opened =
        open_repositories(dir, false, porch_variants::local::Validation::Strict).expect("opens");
    let store = Faulty::new(&opened.store, plan.clone());
    let core = NativeCore;
    let renderer = DraftRenderer::porch_server(dir, None);
    let repos: Vec<Value> =
        porch_variants::local::read_objects(dir, porch_variants::local::Validation::Strict)
            .unwrap()
            .objects
            .into_iter()
            .filter(|o| o["kind"] == "Repository")
            .collect();
    let session = Session::open(dir, &repos, &store, &core, &renderer).expect("session");
    let _ = reconcile_declared(&session, &declared());
    plan.counts().writes
}

/// What Git holds: every ref outside the metadata ref, and each
/// revision's lifecycle, number and files.
/// A revision: lifecycle, number, files.
type Revision = (String, i64, BTreeMap<String, String>);

fn state(dir: &Path) -> (Vec<String>, BTreeMap<String, Revision>) {
    let repo = git2::Repository::open(dir.join("repos/blueprints")).unwrap();
    let mut refs: Vec<String> = repo
        .references()
        .unwrap()
        .filter_map(|r| r.ok()?.name().map(str::to_string))
        .filter(|r| !r.starts_with("refs/porch"))
        .collect();
    refs.sort();
    let opened = open_repositories(dir, false, porch_variants::local::Validation::Strict).unwrap();
    let mut revs = BTreeMap::new();
    for pr in opened.store.list("default", &PrFilter::default()).unwrap() {
        let files = opened
            .store
            .resources("default", &pr.metadata.name)
            .unwrap()
            .spec
            .resources
            .unwrap_or_default();
        revs.insert(
            pr.metadata.name.clone(),
            (format!("{:?}", pr.spec.lifecycle), pr.spec.revision, files),
        );
    }
    (refs, revs)
}

fn fresh() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("repositories.yaml"), REPOS).unwrap();
    drop(open_repositories(tmp.path(), true, porch_variants::local::Validation::Strict).unwrap());
    tmp
}

#[test]
fn killed_at_any_git_write_a_rerun_converges_to_the_uninterrupted_result() {
    let base = fresh();
    let writes = run(base.path(), FaultPlan::counting());
    assert!(writes >= 5, "the scenario writes to Git ({writes})");
    let want = state(base.path());
    assert!(
        want.0.contains(&"refs/tags/app/v1".to_string()),
        "{:?}",
        want.0
    );
    assert!(
        want.0.contains(&"refs/heads/proposed/app/v2".to_string()),
        "{:?}",
        want.0
    );
    let mut points = 0;
    for n in 1..=writes {
        for fault in [WriteFault::CrashBefore, WriteFault::CrashAfter] {
            let dir = fresh();
            let plan = FaultPlan::scheduled(FaultSchedule::new().write(n, fault));
            run(dir.path(), plan.clone());
            assert!(plan.crashed(), "write {n} {fault:?} was reached");
            // Run again until nothing is left to do (a pass can end at a
            // requeue that the next one picks up).
            let mut last = usize::MAX;
            for _ in 0..4 {
                last = run(dir.path(), FaultPlan::counting());
                if last == 0 {
                    break;
                }
            }
            assert_eq!(last, 0, "write {n} {fault:?}: the runs did not settle");
            let got = state(dir.path());
            assert_eq!(got.0, want.0, "write {n} {fault:?}: refs");
            assert_eq!(got.1, want.1, "write {n} {fault:?}: revisions");
            let fsck = std::process::Command::new("git")
                .args(["fsck", "--strict"])
                .current_dir(dir.path().join("repos/blueprints"))
                .status()
                .unwrap();
            assert!(fsck.success(), "write {n} {fault:?}: git fsck");
            points += 1;
        }
    }
    println!("{points} kill points over {writes} Git writes: every re-run converged");
}
