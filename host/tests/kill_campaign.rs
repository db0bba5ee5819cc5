//! SIGKILL at points spread over the main job's writing commands, on a fleet
//! of repositories: `local --init`, a reconcile that changes every draft,
//! and every `rpkg` verb with `--all` (propose, reject, propose again,
//! approve, propose-delete, delete). After each kill the same
//! command runs again to completion, and the directory must then hold
//! exactly what an uninterrupted run leaves (every ref and the files it
//! points at), with one draft per variant, `git fsck` clean, no leftover
//! build directory, and a further `local` run that writes nothing.
//!
//! `PV_KILL_REPOS` (default 200) sets the fleet size and `PV_KILL_POINTS`
//! (default 1) the kill points per phase; the long campaign reported in
//! docs/performance.md runs this test with more points.
//! `PV_KILL_BIN` names the binary to run instead of the one cargo built;
//! `PV_KILL_PHASES` (indices, `6,7`) kills in those phases only;
//! The first campaign runs the `local` commands with `--porch-api
//! v1alpha1` (`PV_KILL_PORCH_API` picks another mode); a second, smaller
//! campaign runs them in v1alpha2 mode, `local`'s default.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The binary under test (`PV_KILL_BIN` runs a copy, so that a long
/// campaign is not disturbed by a rebuild).
fn bin() -> String {
    std::env::var("PV_KILL_BIN")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_porch-variants").to_string())
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/fleet")
}

fn cp(from: &Path, to: &Path) {
    let ok = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .expect("cp runs")
        .success();
    assert!(ok, "cp -a {} {}", from.display(), to.display());
}

/// The fleet: examples/fleet's blueprint and endpoints, `n` site
/// repositories labelled `tier: edge`, one PackageVariantSet over them whose
/// template carries the annotation `fleet.example.com/wave: <wave>`.
fn write_fleet(dir: &Path, n: usize) {
    std::fs::create_dir_all(dir).unwrap();
    cp(&examples().join("packages"), &dir.join("packages"));
    cp(
        &examples().join("endpoints.yaml"),
        &dir.join("endpoints.yaml"),
    );
    let regions = ["us-east1", "us-west1", "eu-west1", "asia-east1"];
    let mut repos = String::from(
        "apiVersion: config.porch.kpt.dev/v1alpha1\nkind: Repository\nmetadata:\n  name: blueprints\nspec:\n  type: git\n  content: Package\n  git:\n    branch: main\n",
    );
    for i in 0..n {
        repos.push_str(&format!(
            "---\napiVersion: config.porch.kpt.dev/v1alpha1\nkind: Repository\nmetadata:\n  name: site-{i:04}\n  labels:\n    tier: edge\n    region: {}\nspec:\n  type: git\n  deployment: true\n  git:\n    branch: main\n",
            regions[i % regions.len()]
        ));
    }
    std::fs::write(dir.join("repositories.yaml"), repos).unwrap();
    set_wave(dir, 1);
}

fn set_wave(dir: &Path, wave: u32) {
    let set = format!(
        r#"apiVersion: config.porch.kpt.dev/v1alpha2
kind: PackageVariantSet
metadata:
  name: web-fleet
spec:
  upstream:
    repo: blueprints
    package: web
    revision: 1
  targets:
  - repositorySelector:
      matchLabels:
        tier: edge
    template:
      downstream:
        packageExpr: "'web'"
      annotations:
        fleet.example.com/wave: "{wave}"
      labelExprs:
      - key: fleet.example.com/region
        valueExpr: repository.labels.region
      packageContext:
        dataExprs:
        - key: site
          valueExpr: repository.name
      injectors:
      - kind: ConfigMap
        nameExpr: repository.labels.region + '-endpoints'
"#
    );
    std::fs::write(dir.join("fleet.yaml"), set).unwrap();
}

/// A writing command of the campaign.
#[derive(Clone, Copy, Debug)]
enum Step {
    Init,
    Reconcile,
    Propose,
    Reject,
    Approve,
    ProposeDelete,
    Delete,
}

impl Step {
    fn args(self, dir: &Path, api: Api) -> Vec<String> {
        let d = dir.display().to_string();
        let v: &[&str] = match self {
            Step::Init => &["local", "--init", "--no-progress", "--output", "json", &d],
            Step::Reconcile => &["local", "--no-progress", "--output", "json", &d],
            Step::Propose => &["rpkg", "--dir", &d, "propose", "--all"],
            Step::Reject => &["rpkg", "--dir", &d, "reject", "--all"],
            Step::Approve => &["rpkg", "--dir", &d, "approve", "--all"],
            Step::ProposeDelete => &["rpkg", "--dir", &d, "propose-delete", "--all"],
            Step::Delete => &["rpkg", "--dir", &d, "delete", "--all"],
        };
        let mut args: Vec<String> = v.iter().map(|s| s.to_string()).collect();
        if let (Step::Init | Step::Reconcile, Some(api)) = (self, api) {
            args.insert(1, format!("--porch-api={api}"));
        }
        args
    }
}

/// The `--porch-api` of the `local` commands (`None`: `local`'s default).
type Api = Option<&'static str>;

fn run(step: Step, dir: &Path, api: Api) -> String {
    let out = Command::new(bin())
        .args(step.args(dir, api))
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "{step:?} on {} failed: {}\n{}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
            .chars()
            .take(4000)
            .collect::<String>()
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs `step` and SIGKILLs it after `after`; returns whether it was killed
/// (false when it finished first).
fn run_killed(step: Step, dir: &Path, after: Duration, api: Api) -> bool {
    let mut child = Command::new(bin())
        .args(step.args(dir, api))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the binary starts");
    let start = Instant::now();
    loop {
        if child.try_wait().expect("waiting").is_some() {
            return false;
        }
        if start.elapsed() >= after {
            child.kill().expect("SIGKILL");
            child.wait().expect("reaping");
            return true;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Every ref of every repository (the metadata ref aside, whose commits
/// carry times) with the files it points at; upstream commit ids, which
/// carry the blueprint's publication time, are blanked, and the campaign directories' paths
/// (one per run, beside each other) are replaced.
type Snapshot = BTreeMap<String, BTreeMap<String, String>>;

fn snapshot(dir: &Path) -> Snapshot {
    let mut snap = Snapshot::new();
    let parent = format!("{}/", dir.parent().unwrap().display());
    let repos = dir.join("repos");
    let mut names: Vec<_> = std::fs::read_dir(&repos)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for name in names {
        let repo = git2::Repository::open(repos.join(&name))
            .unwrap_or_else(|e| panic!("{name} does not open: {e}"));
        for r in repo.references().unwrap() {
            let r = r.unwrap();
            let refname = r.name().unwrap().to_string();
            if refname.starts_with("refs/porch-variants/") {
                continue;
            }
            let tree = r.peel_to_tree().unwrap();
            let mut files = BTreeMap::new();
            tree.walk(git2::TreeWalkMode::PreOrder, |root, entry| {
                if let Ok(blob) = entry.to_object(&repo).and_then(|o| o.peel_to_blob()) {
                    let text = String::from_utf8_lossy(blob.content())
                        .split(parent.as_str())
                        .enumerate()
                        .map(|(i, part)| match (i, part.find('/')) {
                            (0, _) | (_, None) => part.to_string(),
                            (_, Some(slash)) => format!("<dir>{}", &part[slash..]),
                        })
                        .collect::<String>()
                        .lines()
                        .map(|l| match l.find("commit: ") {
                            Some(i) => format!("{}commit: <commit>", &l[..i]),
                            None => l.to_string(),
                        })
                        .collect::<Vec<_>>()
                        .join("\n");
                    files.insert(format!("{root}{}", entry.name().unwrap_or("?")), text);
                }
                git2::TreeWalkResult::Ok
            })
            .unwrap();
            snap.insert(format!("{name} {refname}"), files);
        }
    }
    snap
}

/// What every directory holds after a command ran to completion: no
/// leftover build directory and `git fsck` clean.
fn check_repositories(dir: &Path, label: &str) {
    let repos = dir.join("repos");
    let leftovers: Vec<_> = std::fs::read_dir(&repos)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|f| f.starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "{label}: leftovers {leftovers:?}");
    for e in std::fs::read_dir(&repos).unwrap() {
        let p = e.unwrap().path();
        let out = Command::new("git")
            .args(["fsck", "--no-progress", "--no-dangling"])
            .current_dir(&p)
            .output()
            .expect("git fsck runs");
        assert!(
            out.status.success(),
            "{label}: git fsck {}: {}",
            p.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// What a fleet whose variants have their revisions holds: one revision
/// of `web` per site repository, never two, and a next run that writes
/// nothing.
fn check_fleet(dir: &Path, n: usize, label: &str, api: Api) {
    // One revision of `web` per site repository, never two.
    let list = Command::new(bin())
        .args(["rpkg", "--dir"])
        .arg(dir)
        .args(["--output", "json", "list"])
        .output()
        .unwrap();
    assert!(list.status.success(), "{label}: rpkg list");
    let prs: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    let mut per_repo: BTreeMap<String, usize> = BTreeMap::new();
    for pr in prs.as_array().unwrap() {
        *per_repo
            .entry(pr["spec"]["repository"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    let sites: Vec<_> = per_repo
        .iter()
        .filter(|(r, _)| r.starts_with("site-"))
        .collect();
    assert_eq!(sites.len(), n, "{label}: repositories with a revision");
    assert!(
        sites.iter().all(|(_, c)| **c == 1),
        "{label}: more than one revision in {:?}",
        sites.iter().filter(|(_, c)| **c != 1).collect::<Vec<_>>()
    );
    // Converged: another reconcile writes nothing.
    let again: serde_json::Value = serde_json::from_str(&run(Step::Reconcile, dir, api)).unwrap();
    assert_eq!(
        again["events"].as_array().map(Vec::len),
        Some(0),
        "{label}: the next run wrote {}",
        again["events"]
    );
}

/// What changes in the directory before a phase runs.
type Prepare = fn(&Path);

#[test]
fn sigkill_anywhere_in_the_main_job_then_a_rerun_converges_to_the_uninterrupted_state() {
    let api = std::env::var("PV_KILL_PORCH_API")
        .ok()
        .map_or("v1alpha1", |a| &*Box::leak(a.into_boxed_str()));
    campaign(Some(api), 200);
}

/// The same campaign with the variants on v1alpha2 PackageRevisions (the
/// PackageRevision controller in the process, its objects under the
/// directory's state), on a smaller fleet: that mode does more work per
/// draft.
#[test]
fn sigkill_anywhere_with_the_variants_on_v1alpha2() {
    if std::env::var("PV_KILL_PORCH_API").is_ok() {
        return; // the campaign above runs in the mode asked for
    }
    campaign(Some("v1alpha2"), 40);
}

fn campaign(api: Api, default_repos: usize) {
    let n = env_usize("PV_KILL_REPOS", default_repos);
    let points = env_usize("PV_KILL_POINTS", 1);
    let tmp = tempfile::tempdir().unwrap();
    let reference = tmp.path().join("reference");
    write_fleet(&reference, n);

    // The uninterrupted run, phase by phase: the state before each phase is
    // kept to start the killed runs from, and the state after to compare.
    // The fleet invariants hold until the revisions' deletion is proposed.
    let phases: [(Step, Prepare, bool); 8] = [
        (Step::Init, |_| {}, true),
        (Step::Reconcile, |d| set_wave(d, 2), true),
        (Step::Propose, |_| {}, true),
        (Step::Reject, |_| {}, true),
        (Step::Propose, |_| {}, true),
        (Step::Approve, |_| {}, true),
        (Step::ProposeDelete, |_| {}, false),
        (Step::Delete, |_| {}, false),
    ];
    let mut before = Vec::new();
    let mut after = Vec::new();
    let mut took = Vec::new();
    for (i, (step, prepare, fleet)) in phases.iter().enumerate() {
        prepare(&reference);
        let start_state = tmp.path().join(format!("before-{i}"));
        cp(&reference, &start_state);
        before.push(start_state);
        let start = Instant::now();
        run(*step, &reference, api);
        took.push(start.elapsed());
        after.push(snapshot(&reference));
        let label = format!("uninterrupted {step:?}");
        check_repositories(&reference, &label);
        if *fleet {
            check_fleet(&reference, n, &label, api);
        }
    }

    let mut killed = 0;
    // `PV_KILL_PHASES=6,7` kills only in those phases.
    let only: Option<Vec<usize>> = std::env::var("PV_KILL_PHASES")
        .ok()
        .map(|v| v.split(',').filter_map(|x| x.trim().parse().ok()).collect());
    for (i, (step, _, fleet)) in phases.iter().enumerate() {
        if only.as_ref().is_some_and(|o| !o.contains(&i)) {
            continue;
        }
        for k in 0..points {
            let dir = tmp.path().join(format!("run-{i}-{k}"));
            cp(&before[i], &dir);
            let at = took[i].mul_f64((k as f64 + 0.5) / points as f64);
            if run_killed(*step, &dir, at, api) {
                killed += 1;
            }
            run(*step, &dir, api);
            let label = format!("{step:?} killed at {at:?}");
            let got = snapshot(&dir);
            let differ: Vec<_> = got
                .keys()
                .chain(after[i].keys())
                .filter(|k| got.get(*k) != after[i].get(*k))
                .take(5)
                .collect();
            if let Some(first) = differ.first() {
                let (a, b) = (&got.get(*first), &after[i].get(*first));
                let repo = first.split(' ').next().unwrap_or_default();
                let refs = Command::new("git")
                    .args(["for-each-ref", "--format=%(refname) %(objectname:short)"])
                    .current_dir(dir.join("repos").join(repo))
                    .output()
                    .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                    .unwrap_or_default();
                panic!("{label}: refs differ: {differ:?}; refs of {repo}:\n{refs}\nfirst:\n{a:#?}\nuninterrupted:\n{b:#?}");
            }
            check_repositories(&dir, &label);
            if *fleet {
                check_fleet(&dir, n, &label, api);
            }
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }
    let phases_run = only.as_ref().map_or(phases.len(), Vec::len);
    eprintln!(
        "{n} repositories, --porch-api {}, {} kill points, {killed} killed before finishing; phases took {took:?}",
        api.unwrap_or("default"),
        phases_run * points
    );
    assert!(killed > 0, "no run was killed before it finished");
}
