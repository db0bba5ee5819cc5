//! Upstream's ContentCache cases (`conformance/porch-upstream-prc/cc-content-cache`,
//! nephio-project/porch @ 74d82d5, `pkg/cache/contentcache/contentcache_test.go`)
//! against [`StoreContent`] over the Git store.
//!
//! Each case builds, in a real Git repository, the state the case's fakes
//! describe (repository present or not, one revision `my-pkg`/`ws-1` of
//! `ns/repo` in the case's lifecycle) and makes the case's call. Errors the
//! fakes inject (`list failed`, `permission denied`, ...) come from a store
//! wrapper ([`Scripted`]) at the store call that plays the faked method.
//!
//! Upstream's mocks of its internal cache calls (`repo.UpdatePackageRevision`,
//! `draft.UpdateLifecycle`, `repo.ClosePackageRevisionDraft`,
//! `pkgRev.UpdateLifecycle`, ...) have no counterpart here: our ContentCache
//! moves a lifecycle with one store call and holds drafts in memory until
//! they are closed. Those cases compare the observable effect instead: the
//! lifecycle read back, the Git refs, the error text reaching the caller.
//! The case list below says which.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Mutex;

use porch_variants::prc::content::StoreContent;
use porch_variants::prc::{CallError, ContentCache};
use porch_variants::store::git::{init_bare, GitRepoConfig, GitRevisions};
use porch_variants::store::{
    revision_name, Files, NewRevision, PackageRevisionStore, PrFilter, StoreError, StoreResult,
};
use porch_variants_tests::prc_cases::Tally;
use pv_core::api::package_revision::Lifecycle;
use pv_core::api::{ObjectMeta, PackageRevision, PackageRevisionResources};
use pv_core::prc::reconcile::{RepoKey, RevisionKey};

const NS: &str = "ns";
const REPO: &str = "repo";
const PKG: &str = "my-pkg";
const WS: &str = "ws-1";

/// Errors a case's fakes inject, by the store call that plays the faked
/// method, and the repository disappearing after some reads.
#[derive(Default, Clone)]
struct Faults {
    /// `repo.ListPackageRevisions` (our `get`).
    get: Option<String>,
    /// `repo.CreatePackageRevisionDraft` (our `create`, at close).
    create: Option<String>,
    /// `repo.UpdatePackageRevision` / the existing draft's push (our
    /// `update_resources`, at close).
    update_resources: Option<String>,
    /// `pkgRev.UpdateLifecycle` or the draft/close cycle (our
    /// `update_lifecycle`).
    update_lifecycle: Option<String>,
    /// `repo.DeletePackageRevision` (our `delete`).
    delete: Option<String>,
    /// The lifecycle the listing reports (upstream's fake returns `Bogus`).
    lifecycle: Option<Lifecycle>,
    /// The repository is gone after this many reads
    /// (`cache.GetRepository` answering the repo, then nil).
    gone_after_gets: Option<usize>,
}

/// The Git store with the case's faults.
struct Scripted {
    git: GitRevisions,
    empty: GitRevisions,
    faults: Mutex<Faults>,
    gets: AtomicUsize,
}

fn fault(msg: &Option<String>) -> StoreResult<()> {
    match msg {
        Some(m) => Err(StoreError::Data {
            context: "fake".into(),
            message: m.clone(),
        }),
        None => Ok(()),
    }
}

impl Scripted {
    fn store(&self) -> &GitRevisions {
        match self.faults.lock().unwrap().gone_after_gets {
            Some(n) if self.gets.load(Relaxed) >= n => &self.empty,
            _ => &self.git,
        }
    }
}

impl PackageRevisionStore for Scripted {
    fn list(&self, namespace: &str, filter: &PrFilter) -> StoreResult<Vec<PackageRevision>> {
        fault(&self.faults.lock().unwrap().get)?;
        self.store().list(namespace, filter)
    }
    fn get(&self, namespace: &str, name: &str) -> StoreResult<PackageRevision> {
        fault(&self.faults.lock().unwrap().get)?;
        let mut pr = self.store().get(namespace, name)?;
        self.gets.fetch_add(1, Relaxed);
        if let Some(l) = self.faults.lock().unwrap().lifecycle {
            pr.spec.lifecycle = l;
        }
        Ok(pr)
    }
    fn resources(&self, namespace: &str, name: &str) -> StoreResult<PackageRevisionResources> {
        self.store().resources(namespace, name)
    }
    fn update_resources(
        &self,
        ns: &str,
        name: &str,
        files: &Files,
        read: &str,
    ) -> StoreResult<PackageRevision> {
        fault(&self.faults.lock().unwrap().update_resources)?;
        self.store().update_resources(ns, name, files, read)
    }
    fn create(&self, new: NewRevision) -> StoreResult<PackageRevision> {
        fault(&self.faults.lock().unwrap().create)?;
        self.store().create(new)
    }
    fn update_lifecycle(&self, ns: &str, name: &str, l: Lifecycle) -> StoreResult<PackageRevision> {
        fault(&self.faults.lock().unwrap().update_lifecycle)?;
        self.store().update_lifecycle(ns, name, l)
    }
    fn update_metadata(
        &self,
        ns: &str,
        name: &str,
        m: &ObjectMeta,
    ) -> StoreResult<PackageRevision> {
        self.store().update_metadata(ns, name, m)
    }
    fn delete(&self, namespace: &str, name: &str) -> StoreResult<()> {
        fault(&self.faults.lock().unwrap().delete)?;
        self.store().delete(namespace, name)
    }
}

struct World {
    _tmp: tempfile::TempDir,
    path: PathBuf,
    store: Scripted,
}

/// `cache.GetRepositories` answering `ns/repo` (or nothing), and the
/// revision `my-pkg`/`ws-1` in `lifecycle` (none for `None`).
fn world(repo: bool, lifecycle: Option<Lifecycle>) -> World {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let path = tmp.path().join("repo.git");
    init_bare(&path, "main").expect("a bare repository");
    let configs = if repo {
        vec![GitRepoConfig {
            name: REPO.into(),
            namespace: NS.into(),
            path: path.clone(),
            branch: "main".into(),
            directory: String::new(),
        }]
    } else {
        Vec::new()
    };
    let store = Scripted {
        git: GitRevisions::open(configs).expect("the repositories open"),
        empty: GitRevisions::open(Vec::new()).expect("no repositories"),
        faults: Mutex::default(),
        gets: AtomicUsize::new(0),
    };
    if let Some(l) = lifecycle {
        seed(&store, l);
    }
    World {
        _tmp: tmp,
        path,
        store,
    }
}

fn kptfile() -> Files {
    BTreeMap::from([(
        "Kptfile".to_string(),
        format!("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: {PKG}\n"),
    )])
}

fn seed(store: &dyn PackageRevisionStore, lifecycle: Lifecycle) {
    let mut pr = PackageRevision::default();
    pr.metadata.namespace = NS.into();
    pr.spec.package_name = PKG.into();
    pr.spec.repository = REPO.into();
    pr.spec.workspace_name = WS.into();
    pr.spec.lifecycle = Lifecycle::Draft;
    store
        .create(NewRevision {
            revision: pr,
            files: kptfile(),
            upstream_lock: None,
        })
        .expect("the draft is created");
    let name = revision_name(REPO, PKG, WS);
    let path: &[Lifecycle] = match lifecycle {
        Lifecycle::Draft => &[],
        Lifecycle::Proposed => &[Lifecycle::Proposed],
        Lifecycle::Published => &[Lifecycle::Proposed, Lifecycle::Published],
        Lifecycle::DeletionProposed => &[
            Lifecycle::Proposed,
            Lifecycle::Published,
            Lifecycle::DeletionProposed,
        ],
        Lifecycle::Unset => panic!("no revision is stored without a lifecycle"),
    };
    for l in path {
        store
            .update_lifecycle(NS, &name, *l)
            .expect("the lifecycle moves");
    }
}

fn key() -> RevisionKey {
    RevisionKey {
        repository: RepoKey {
            namespace: NS.into(),
            name: REPO.into(),
        },
        package: PKG.into(),
        workspace: WS.into(),
    }
}

fn refs(path: &Path) -> Vec<String> {
    let repo = git2::Repository::open(path).expect("the repository opens");
    let mut out: Vec<String> = repo
        .references()
        .expect("references")
        .filter_map(|r| r.ok().and_then(|r| r.name().map(str::to_string)))
        .collect();
    out.sort();
    out
}

fn has_ref(w: &World, name: &str) -> bool {
    refs(&w.path).iter().any(|r| r == name)
}

/// The lifecycle the store reads back (faults off).
fn stored(w: &World) -> Option<Lifecycle> {
    *w.store.faults.lock().unwrap() = Faults::default();
    w.store
        .git
        .get(NS, &revision_name(REPO, PKG, WS))
        .ok()
        .map(|p| p.spec.lifecycle)
}

fn case_dir(case: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/conformance/porch-upstream-prc/cc-content-cache")
        .join(case)
}

/// `error.contains` of the case's `expected/output.yaml` (the copy), or
/// the text given when the group is not copied.
fn contains(case: &str, fallback: &str) -> String {
    let Ok(text) = std::fs::read_to_string(case_dir(case).join("expected/output.yaml")) else {
        return fallback.to_string();
    };
    let found = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("contains:"))
        .map(|v| v.trim().trim_matches('\'').trim_matches('"').to_string());
    let found = found.unwrap_or_else(|| panic!("{case}: no error.contains"));
    assert_eq!(found, fallback, "{case}: the copy's expected text");
    found
}

enum Outcome {
    Pass,
    Fail(String),
    /// Our behaviour differs from upstream's expectation on purpose; the
    /// text says how (checked exactly).
    Deviation(String),
}

type R = Result<Outcome, String>;

fn err_contains(case: &str, got: Result<impl std::fmt::Debug, CallError>, want: &str) -> R {
    let want = contains(case, want);
    match got {
        Err(e) if e.to_string().contains(&want) => Ok(Outcome::Pass),
        Err(e) => Err(format!("error {e:?} does not contain {want:?}")),
        Ok(v) => Err(format!(
            "no error (got {v:?}); want one containing {want:?}"
        )),
    }
}

fn check(cond: bool, what: &str) -> Result<(), String> {
    if cond {
        Ok(())
    } else {
        Err(what.to_string())
    }
}

/// Moves the revision and checks the content, the stored lifecycle and
/// the refs (the observable effect of upstream's mocked calls).
fn transition(from: Lifecycle, to: Lifecycle, refs_present: &[&str], refs_gone: &[&str]) -> R {
    let w = world(true, Some(from));
    let cc = StoreContent::new(&w.store);
    let content = cc.update_lifecycle(&key(), to).map_err(|e| e.to_string())?;
    check(content.lifecycle == to, "content lifecycle")?;
    check(stored(&w) == Some(to), "stored lifecycle")?;
    for r in refs_present {
        check(
            has_ref(&w, r),
            &format!("ref {r} missing: {:?}", refs(&w.path)),
        )?;
    }
    for r in refs_gone {
        check(
            !has_ref(&w, r),
            &format!("ref {r} left: {:?}", refs(&w.path)),
        )?;
    }
    Ok(Outcome::Pass)
}

/// A draft-cycle / direct update failing with `msg`: the error reaches the
/// caller and the lifecycle stays.
fn transition_fails(case: &str, from: Lifecycle, to: Lifecycle, msg: &str) -> R {
    let w = world(true, Some(from));
    w.store.faults.lock().unwrap().update_lifecycle = Some(msg.into());
    let cc = StoreContent::new(&w.store);
    let out = err_contains(case, cc.update_lifecycle(&key(), to), msg)?;
    check(stored(&w) == Some(from), "lifecycle unchanged")?;
    Ok(out)
}

const DRAFT_REF: &str = "refs/heads/drafts/my-pkg/ws-1";
const PROPOSED_REF: &str = "refs/heads/proposed/my-pkg/ws-1";
const TAG: &str = "refs/tags/my-pkg/v1";
const DELETION_REF: &str = "refs/heads/deletionProposed/my-pkg/ws-1";

fn run_case(case: &str) -> R {
    use Lifecycle::*;
    match case {
        "get-content" => {
            let w = world(true, Some(Draft));
            let c = StoreContent::new(&w.store)
                .get_package_content(&key(), true)
                .map_err(|e| e.to_string())?;
            check(c.lifecycle == Draft, "lifecycle Draft")?;
            let dir = c.self_lock.and_then(|l| l.git).map(|g| g.directory);
            check(dir.as_deref() == Some(PKG), "lock names my-pkg")?;
            check(c.resources == Some(kptfile()), "resources")?;
            Ok(Outcome::Pass)
        }
        "get-content-repo-not-found" | "get-content-pkg-not-found" => {
            let w = world(case == "get-content-pkg-not-found", None);
            let got = StoreContent::new(&w.store).get_package_content(&key(), false);
            err_contains(case, got, "not found")
        }
        "get-content-list-error" => {
            let w = world(true, Some(Draft));
            w.store.faults.lock().unwrap().get = Some("list failed".into());
            let got = StoreContent::new(&w.store).get_package_content(&key(), false);
            err_contains(case, got, "list failed")
        }
        "update-published-to-deletion-proposed" => {
            transition(Published, DeletionProposed, &[TAG, DELETION_REF], &[])
        }
        "update-deletion-proposed-to-published" => {
            transition(DeletionProposed, Published, &[TAG], &[DELETION_REF])
        }
        "update-draft-to-proposed" => transition(Draft, Proposed, &[PROPOSED_REF], &[DRAFT_REF]),
        "update-proposed-to-draft" => transition(Proposed, Draft, &[DRAFT_REF], &[PROPOSED_REF]),
        // §13.1: on upstream's CR cache this call fails (the git revision's
        // UpdateLifecycle refuses a proposed one); the case itself expects
        // success, which is what we do: revision 1, tagged.
        "update-proposed-to-published" => {
            let out = transition(Proposed, Published, &[TAG], &[PROPOSED_REF, DRAFT_REF])?;
            let w = world(true, Some(Proposed));
            let c = StoreContent::new(&w.store)
                .update_lifecycle(&key(), Published)
                .map_err(|e| e.to_string())?;
            check(c.revision == 1, "revision 1")?;
            Ok(out)
        }
        "update-direct-error" => {
            transition_fails(case, Published, DeletionProposed, "branch protected")
        }
        "update-draft-cycle-update-package-revision-error" => {
            transition_fails(case, Draft, Proposed, "lock conflict")
        }
        "update-draft-cycle-draft-update-lifecycle-error" => {
            transition_fails(case, Draft, Proposed, "invalid transition")
        }
        "update-draft-cycle-close-error" => {
            transition_fails(case, Draft, Proposed, "git push failed")
        }
        "update-invalid-current" => {
            // `Bogus` cannot be a stored lifecycle (it is read from the
            // refs); the unknown value we can hold is the empty one.
            check(
                serde_json::from_str::<Lifecycle>("\"Bogus\"").is_err(),
                "Bogus does not parse",
            )?;
            let w = world(true, Some(Draft));
            w.store.faults.lock().unwrap().lifecycle = Some(Unset);
            let got = StoreContent::new(&w.store).update_lifecycle(&key(), Draft);
            let out = err_contains(case, got, "invalid current lifecycle")?;
            check(stored(&w) == Some(Draft), "lifecycle unchanged")?;
            Ok(out)
        }
        "update-invalid-desired" => {
            check(
                serde_json::from_str::<Lifecycle>("\"Bogus\"").is_err(),
                "Bogus does not parse",
            )?;
            let w = world(true, Some(Draft));
            let got = StoreContent::new(&w.store).update_lifecycle(&key(), Unset);
            let out = err_contains(case, got, "invalid desired lifecycle")?;
            check(stored(&w) == Some(Draft), "lifecycle unchanged")?;
            Ok(out)
        }
        "update-repo-not-found" => {
            let w = world(false, None);
            let got = StoreContent::new(&w.store).update_lifecycle(&key(), Proposed);
            err_contains(case, got, "not found")
        }
        "update-repo-gone-before-draft" => {
            let w = world(true, Some(Draft));
            w.store.faults.lock().unwrap().gone_after_gets = Some(1);
            w.store.gets.store(0, Relaxed);
            let got = StoreContent::new(&w.store).update_lifecycle(&key(), Proposed);
            let out = err_contains(case, got, "not found")?;
            check(stored(&w) == Some(Draft), "lifecycle unchanged")?;
            Ok(out)
        }
        "create-draft-from-existing" => {
            let w = world(true, Some(Draft));
            let cc = StoreContent::new(&w.store);
            let d = cc
                .create_draft_from_existing(&key())
                .map_err(|e| e.to_string())?;
            let mut files = kptfile();
            files.insert("cm.yaml".into(), "kind: ConfigMap\n".into());
            cc.update_resources(&d, &files, "edit", None)
                .map_err(|e| e.to_string())?;
            cc.close_draft(&d).map_err(|e| e.to_string())?;
            let c = cc
                .get_package_content(&key(), true)
                .map_err(|e| e.to_string())?;
            check(c.resources == Some(files), "the draft is my-pkg/ws-1's")?;
            Ok(Outcome::Pass)
        }
        "create-draft-from-existing-repo-not-found" => {
            let w = world(false, None);
            let got = StoreContent::new(&w.store).create_draft_from_existing(&key());
            err_contains(case, got, "not found")
        }
        "create-draft-from-existing-list-error" => {
            let w = world(true, Some(Draft));
            w.store.faults.lock().unwrap().get = Some("list failed".into());
            let got = StoreContent::new(&w.store).create_draft_from_existing(&key());
            err_contains(case, got, "list failed")
        }
        "create-draft-from-existing-update-error" => {
            // Our drafts are written when closed: the existing revision's
            // write (upstream's repo.UpdatePackageRevision) fails there and
            // its error reaches the caller of the draft cycle; nothing is
            // written.
            let w = world(true, Some(Draft));
            w.store.faults.lock().unwrap().update_resources = Some("conflict".into());
            let cc = StoreContent::new(&w.store);
            let got = cc.create_draft_from_existing(&key()).and_then(|d| {
                cc.update_resources(&d, &kptfile(), "edit", None)?;
                cc.close_draft(&d)
            });
            err_contains(case, got, "conflict")
        }
        "create-new-draft" | "close-draft" => {
            let w = world(true, None);
            let cc = StoreContent::new(&w.store);
            let d = cc.create_new_draft(&key()).map_err(|e| e.to_string())?;
            cc.update_resources(&d, &kptfile(), "init", None)
                .map_err(|e| e.to_string())?;
            cc.close_draft(&d).map_err(|e| e.to_string())?;
            let pr = w
                .store
                .git
                .get(NS, &revision_name(REPO, PKG, WS))
                .map_err(|e| e.to_string())?;
            check(pr.spec.package_name == PKG, "packageName")?;
            check(pr.spec.workspace_name == WS, "workspaceName")?;
            check(pr.spec.repository == REPO, "repository")?;
            check(pr.spec.lifecycle == Draft, "lifecycle Draft")?;
            check(has_ref(&w, DRAFT_REF), "draft branch pushed")?;
            Ok(Outcome::Pass)
        }
        "create-new-draft-error" => {
            // The revision exists: our create refuses it ("already exists").
            let w = world(true, Some(Draft));
            let got = StoreContent::new(&w.store).create_new_draft(&key());
            err_contains(case, got, "already exists")
        }
        "create-new-draft-repo-not-found" | "close-draft-repo-not-found" => {
            // Upstream resolves the repository in CreateNewDraft and in
            // CloseDraft. Our store has no repository lookup: a new draft is
            // only a handle until it is closed, and the missing repository
            // is reported then, by the store's own text.
            let w = world(false, None);
            let cc = StoreContent::new(&w.store);
            let want = contains(case, "not found");
            let created = cc.create_new_draft(&key());
            let Ok(d) = created else {
                return Ok(Outcome::Fail(format!("create failed: {created:?}")));
            };
            cc.update_resources(&d, &kptfile(), "init", None)
                .map_err(|e| e.to_string())?;
            let closed = cc.close_draft(&d);
            let ours = "invalid request: no repository ns/repo";
            match closed {
                Err(CallError::Failed(m)) if m == ours && !m.contains(&want) => {
                    Ok(Outcome::Deviation(format!(
                        "CreateNewDraft succeeds without a repository; CloseDraft fails with \
                         {ours:?}, not {want:?}"
                    )))
                }
                other => Ok(Outcome::Fail(format!("close: {other:?}"))),
            }
        }
        "close-draft-wrong-type" => {
            let w = world(true, Some(Draft));
            let got = StoreContent::new(&w.store).close_draft("draft");
            let out = err_contains(case, got, "not a contentCache draft")?;
            let got = StoreContent::new(&w.store).close_draft("draft");
            check(
                matches!(&got, Err(e) if e.to_string() == "draft is not a contentCache draft"),
                "full text",
            )?;
            Ok(out)
        }
        "delete-package" => {
            let w = world(true, Some(Draft));
            StoreContent::new(&w.store)
                .delete_package(&key())
                .map_err(|e| e.to_string())?;
            check(stored(&w).is_none(), "revision gone")?;
            check(!has_ref(&w, DRAFT_REF), "draft branch deleted")?;
            Ok(Outcome::Pass)
        }
        "delete-package-repo-not-found" => {
            let w = world(false, None);
            let got = StoreContent::new(&w.store).delete_package(&key());
            err_contains(case, got, "not found")
        }
        "delete-package-error" => {
            let w = world(true, Some(Draft));
            w.store.faults.lock().unwrap().delete = Some("permission denied".into());
            let got = StoreContent::new(&w.store).delete_package(&key());
            let out = err_contains(case, got, "permission denied")?;
            check(stored(&w) == Some(Draft), "revision kept")?;
            Ok(out)
        }
        "delete-package-list-error" => {
            let w = world(true, Some(Draft));
            w.store.faults.lock().unwrap().get = Some("list failed".into());
            let got = StoreContent::new(&w.store).delete_package(&key());
            err_contains(case, got, "list failed")
        }
        "is-known-lifecycle" => {
            // isKnownLifecycle: a value parses to a Lifecycle other than the
            // empty one.
            let values = [
                "Draft",
                "Proposed",
                "Published",
                "DeletionProposed",
                "",
                "Bogus",
            ];
            let want = [true, true, true, true, false, false];
            for (v, k) in values.iter().zip(want) {
                let known = serde_json::from_value::<Lifecycle>(serde_json::json!(v))
                    .is_ok_and(|l| l != Unset);
                check(known == k, &format!("{v:?} known={known}"))?;
            }
            Ok(Outcome::Pass)
        }
        _ => Err(format!("no case {case}")),
    }
}

const CASES: [&str; 32] = [
    "close-draft",
    "close-draft-repo-not-found",
    "close-draft-wrong-type",
    "create-draft-from-existing",
    "create-draft-from-existing-list-error",
    "create-draft-from-existing-repo-not-found",
    "create-draft-from-existing-update-error",
    "create-new-draft",
    "create-new-draft-error",
    "create-new-draft-repo-not-found",
    "delete-package",
    "delete-package-error",
    "delete-package-list-error",
    "delete-package-repo-not-found",
    "get-content",
    "get-content-list-error",
    "get-content-pkg-not-found",
    "get-content-repo-not-found",
    "is-known-lifecycle",
    "update-deletion-proposed-to-published",
    "update-direct-error",
    "update-draft-cycle-close-error",
    "update-draft-cycle-draft-update-lifecycle-error",
    "update-draft-cycle-update-package-revision-error",
    "update-draft-to-proposed",
    "update-invalid-current",
    "update-invalid-desired",
    "update-proposed-to-draft",
    "update-proposed-to-published",
    "update-published-to-deletion-proposed",
    "update-repo-gone-before-draft",
    "update-repo-not-found",
];

/// Runs every case of [`CASES`], which must be the group's directories.
pub fn run() -> Tally {
    let group = case_dir("");
    if let Ok(entries) = std::fs::read_dir(&group) {
        let mut on_disk: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter(|e| e.path().is_dir())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        on_disk.sort();
        assert_eq!(on_disk, CASES, "the case list is the group's");
    }
    let mut tally = Tally::default();
    for case in CASES {
        match run_case(case) {
            Ok(Outcome::Pass) => tally.passed += 1,
            Ok(Outcome::Deviation(why)) => {
                println!("deviation cc-content-cache/{case}: {why}");
                tally.deviations += 1;
            }
            Ok(Outcome::Fail(why)) | Err(why) => {
                tally.failed.push(format!("cc-content-cache/{case}: {why}"))
            }
        }
    }
    if tally.deviations != 2 {
        tally.failed.push(format!(
            "cc-content-cache: {} deviations, the design has 2",
            tally.deviations
        ));
    }
    tally
}
