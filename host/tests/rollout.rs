//! A staged rollout as a platform team runs it: a PackageVariantSet over
//! 42 repositories with three rollout steps, blueprint v2 published with
//! `rpkg`, then `porch-variants local` run after each approval. Each run's
//! drafts are counted per step from `rpkg get -o json`; the set's status
//! file says where the rollout stands.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

/// Targets 1-2 are the canaries, 3-12 the early ones, the rest come last.
const TARGETS: usize = 42;

fn stage(i: usize) -> &'static str {
    match i {
        1..=2 => "canary",
        3..=12 => "early",
        _ => "late",
    }
}

fn repositories() -> String {
    let mut out = String::from(
        "apiVersion: config.porch.kpt.dev/v1alpha1\nkind: Repository\nmetadata:\n  name: blueprints\nspec:\n  type: git\n  git:\n    branch: main\n",
    );
    for i in 1..=TARGETS {
        out.push_str(&format!(
            "---\napiVersion: config.porch.kpt.dev/v1alpha1\nkind: Repository\nmetadata:\n  name: edge-{i:02}\n  labels:\n    tier: edge\n    stage: {}\nspec:\n  type: git\n  deployment: true\n  git:\n    branch: main\n",
            stage(i)
        ));
    }
    out
}

fn fleet(revision: u32, paused: bool) -> String {
    fleet_with(revision, paused, None)
}

/// [`fleet`] whose variants' drafts carry approval policy `policy`.
fn fleet_with(revision: u32, paused: bool, policy: Option<&str>) -> String {
    let annotations = policy
        .map(|p| format!("      annotations:\n        approval.nephio.org/policy: {p}\n"))
        .unwrap_or_default();
    format!(
        "apiVersion: config.porch.kpt.dev/v1alpha2
kind: PackageVariantSet
metadata:
  name: web-fleet
spec:
  upstream:
    repo: blueprints
    package: web
    revision: {revision}
  targets:
  - repositorySelector:
      matchLabels:
        tier: edge
    template:
      labelExprs:
      - key: stage
        valueExpr: repository.labels.stage
{annotations}  rolloutStrategy:
    paused: {paused}
    steps:
    - name: canary
      selector:
        matchLabels:
          stage: canary
    - name: early
      selector:
        matchLabels:
          stage: early
      maxUpdate: 50%
    - name: everyone
      maxUpdate: 15
"
    )
}

const KPTFILE: &str = "apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: web
info:
  description: web
";

const APP: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: web # settings
data:
  image: web:1.0
";

struct Dir {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

impl Dir {
    fn new() -> Dir {
        Dir::with_fleet(&fleet(1, false))
    }

    /// Repositories, the blueprint and `fleet`, after `local --init`.
    fn with_fleet(fleet: &str) -> Dir {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_path_buf();
        std::fs::write(root.join("repositories.yaml"), repositories()).unwrap();
        std::fs::write(root.join("fleet.yaml"), fleet).unwrap();
        let pkg = root.join("packages/blueprints/web");
        std::fs::create_dir_all(&pkg).unwrap();
        std::fs::write(pkg.join("Kptfile"), KPTFILE).unwrap();
        std::fs::write(pkg.join("app.yaml"), APP).unwrap();
        let d = Dir { _tmp: tmp, root };
        d.ok(&["local", "--init", "."]);
        d
    }

    fn ok(&self, args: &[&str]) -> String {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_porch-variants"));
        cmd.current_dir(&self.root);
        if args[0] == "rpkg" {
            cmd.arg("rpkg").args(["--dir", "."]).args(&args[1..]);
        } else {
            cmd.args(args);
        }
        let out = cmd.output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "{args:?} failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    }

    /// A copy of the directory (`cp -a`), to run from the same state.
    fn copy(&self) -> Dir {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("d");
        let ok = Command::new("cp")
            .arg("-a")
            .arg(&self.root)
            .arg(&root)
            .status()
            .unwrap()
            .success();
        assert!(ok, "cp -a");
        Dir { _tmp: tmp, root }
    }

    /// Every PackageRevision as `rpkg get -o json` prints it.
    fn revisions(&self) -> Vec<serde_json::Value> {
        serde_json::from_str(&self.ok(&["rpkg", "get", "-o", "json"])).unwrap()
    }

    /// Per stage: how many downstream revisions are open (Draft or
    /// Proposed) and how many are published from blueprint v2.
    fn by_stage(&self) -> BTreeMap<String, (usize, usize)> {
        let mut out = BTreeMap::new();
        for pr in self.revisions() {
            let repo = pr["spec"]["repository"].as_str().unwrap().to_string();
            let Some(n) = repo.strip_prefix("edge-") else {
                continue;
            };
            let st = stage(n.parse().unwrap()).to_string();
            let e: &mut (usize, usize) = out.entry(st).or_default();
            match pr["spec"]["lifecycle"].as_str().unwrap() {
                "Published" => {
                    let text = pr.to_string();
                    if text.contains("web/v2") {
                        e.1 += 1;
                    }
                }
                _ => e.0 += 1,
            }
        }
        out
    }

    /// The set's `status` as the controller wrote it.
    fn set_status(&self) -> serde_json::Value {
        let p = self
            .root
            .join(".porch-variants/status/default/PackageVariantSet/web-fleet.yaml");
        let text = std::fs::read_to_string(&p).unwrap();
        let doc = pv_core::yaml::parse_document(&text).unwrap();
        pv_core::yaml::to_json(&doc).unwrap()["status"].clone()
    }

    fn rollout_condition(&self) -> serde_json::Value {
        self.set_status()["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "Rollout")
            .cloned()
            .unwrap()
    }

    /// Publishes blueprint v2 (image web:2.0) with rpkg, as a person does.
    fn publish_blueprint_v2(&self) {
        self.ok(&["rpkg", "copy", "blueprints.web.v1", "--workspace", "v2"]);
        let work = self.root.join("work");
        self.ok(&["rpkg", "pull", "blueprints.web.v2", work.to_str().unwrap()]);
        let app = std::fs::read_to_string(work.join("app.yaml")).unwrap();
        std::fs::write(work.join("app.yaml"), app.replace("web:1.0", "web:2.0")).unwrap();
        self.ok(&["rpkg", "push", "blueprints.web.v2", work.to_str().unwrap()]);
        self.ok(&["rpkg", "propose", "blueprints.web.v2"]);
        self.ok(&["rpkg", "approve", "blueprints.web.v2"]);
        std::fs::remove_dir_all(&work).unwrap();
    }

    /// Proposes and approves the open drafts of `selector`.
    fn publish(&self, selector: &str) {
        self.ok(&["rpkg", "propose", "--selector", selector]);
        self.ok(&["rpkg", "approve", "--selector", selector]);
    }
}

fn counts(d: &Dir) -> Vec<(usize, usize)> {
    let s = d.by_stage();
    ["canary", "early", "late"]
        .iter()
        .map(|k| s.get(*k).copied().unwrap_or_default())
        .collect()
}

#[test]
fn blueprint_v2_goes_out_step_by_step_with_pause_and_resume() {
    let d = Dir::new();
    // New variants are created at once: every target has its first draft.
    assert_eq!(counts(&d), [(2, 0), (10, 0), (30, 0)]);
    d.ok(&["rpkg", "propose", "--all"]);
    d.ok(&["rpkg", "approve", "--all"]);
    d.ok(&["local", "."]);
    assert_eq!(
        d.rollout_condition()["reason"],
        "Complete",
        "{}",
        d.set_status()
    );

    d.publish_blueprint_v2();
    std::fs::write(d.root.join("fleet.yaml"), fleet(2, false)).unwrap();

    // Step 1: only the canaries get their upgrade draft, run after run.
    d.ok(&["local", "."]);
    assert_eq!(counts(&d), [(2, 0), (0, 0), (0, 0)]);
    let st = d.set_status();
    assert_eq!(st["rollout"]["currentStep"], "canary", "{st}");
    assert_eq!(d.rollout_condition()["reason"], "Progressing");
    d.ok(&["local", "."]);
    assert_eq!(counts(&d), [(2, 0), (0, 0), (0, 0)]);

    // Canaries published: half of the early step (5 of 10) starts.
    d.publish("stage=canary");
    d.ok(&["local", "."]);
    assert_eq!(counts(&d), [(0, 2), (5, 0), (0, 0)]);
    assert_eq!(d.set_status()["rollout"]["currentStep"], "early");

    // Paused: publishing the five does not start the other five.
    std::fs::write(d.root.join("fleet.yaml"), fleet(2, true)).unwrap();
    d.publish("stage=early");
    d.ok(&["local", "."]);
    assert_eq!(counts(&d), [(0, 2), (0, 5), (0, 0)]);
    let c = d.rollout_condition();
    assert_eq!(c["reason"], "Paused", "{c}");
    assert!(
        c["message"].as_str().unwrap().contains("step early (2/3)"),
        "{c}"
    );

    // Resumed: the other five, then the last step, 15 at a time.
    std::fs::write(d.root.join("fleet.yaml"), fleet(2, false)).unwrap();
    d.ok(&["local", "."]);
    assert_eq!(counts(&d), [(0, 2), (5, 5), (0, 0)]);
    d.publish("stage=early");
    d.ok(&["local", "."]);
    assert_eq!(counts(&d), [(0, 2), (0, 10), (15, 0)]);
    let steps = &d.set_status()["rollout"]["steps"];
    assert_eq!(steps[2]["updating"], 15, "{steps}");
    assert_eq!(steps[2]["pending"], 15, "{steps}");
    d.publish("stage=late");
    d.ok(&["local", "."]);
    assert_eq!(counts(&d), [(0, 2), (0, 10), (15, 15)]);
    d.publish("stage=late");
    d.ok(&["local", "."]);
    assert_eq!(counts(&d), [(0, 2), (0, 10), (0, 30)]);
    let c = d.rollout_condition();
    assert_eq!(c["reason"], "Complete", "{c}");
    assert_eq!(c["status"], "True");
}

/// Every file under `dir` with its bytes.
fn tree(dir: &std::path::Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(p.clone(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// `local --dry-run` on a staged upgrade: every file of the directory is
/// unchanged (refs, objects, status, cache), and the plan it prints is what
/// the real run then does: the same writes, the same new revisions, whose
/// content has every line the plan's diff adds.
#[test]
fn a_dry_run_writes_nothing_and_plans_what_the_run_then_does() {
    let d = Dir::new();
    d.ok(&["rpkg", "propose", "--all"]);
    d.ok(&["rpkg", "approve", "--all"]);
    d.ok(&["local", "."]);
    d.publish_blueprint_v2();
    std::fs::write(d.root.join("fleet.yaml"), fleet(2, false)).unwrap();

    let before = tree(&d.root);
    let text = d.ok(&["local", "--dry-run", "."]);
    assert!(
        text.contains("would: PackageVariantSet default/web-fleet: updated PackageVariant"),
        "{text}"
    );
    assert!(text.contains("+  image: web:2.0"), "{text}");
    let plan: serde_json::Value =
        serde_json::from_str(&d.ok(&["local", "--dry-run", "--output", "json", "."])).unwrap();
    assert_eq!(tree(&d.root), before, "a dry run writes nothing");

    let real: serde_json::Value =
        serde_json::from_str(&d.ok(&["local", "--output", "json", "."])).unwrap();
    assert_eq!(plan["events"], real["events"], "the same writes");
    let created: Vec<&serde_json::Value> = plan["revisions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["change"] == "created")
        .collect();
    // The two canaries' upgrade drafts, each from its published v1.
    assert_eq!(created.len(), 2, "{plan:#}");
    for r in created {
        let name = r["name"].as_str().unwrap();
        assert!(
            r["base"].is_string(),
            "diffed against its published v1: {r:#}"
        );
        let to = d.root.join("pulled").join(name);
        d.ok(&["rpkg", "pull", name, to.to_str().unwrap()]);
        let pulled: String = tree(&to)
            .values()
            .map(|b| String::from_utf8_lossy(b).to_string())
            .collect();
        let added: Vec<&str> = r["diff"]
            .as_str()
            .unwrap()
            .lines()
            .filter(|l| l.starts_with('+') && !l.starts_with("+++"))
            .collect();
        assert!(!added.is_empty(), "{r:#}");
        for l in added {
            assert!(pulled.contains(&l[1..]), "{name}: {l:?} not in\n{pulled}");
        }
    }
}

/// Nephio's approval policy through the set's template. `initial`
/// publishes every first draft during `local --init` but leaves the
/// upgrade drafts of blueprint v2 alone. With `always`, approval is what
/// moves the rollout from step to step, to the end, in one run.
#[test]
fn the_approval_policy_publishes_drafts_and_moves_the_rollout_forward() {
    for policy in ["initial", "always"] {
        let d = Dir::with_fleet(&fleet_with(1, false, Some(policy)));
        assert_eq!(
            counts(&d),
            [(0, 0), (0, 0), (0, 0)],
            "{policy}: no draft left"
        );
        let published = d
            .revisions()
            .iter()
            .filter(|p| p["spec"]["lifecycle"] == "Published")
            .count();
        assert_eq!(
            published,
            TARGETS + 1,
            "{policy}: every v1, and the blueprint"
        );

        d.publish_blueprint_v2();
        std::fs::write(
            d.root.join("fleet.yaml"),
            fleet_with(2, false, Some(policy)),
        )
        .unwrap();
        // The default --max-passes: its count starts again after each pass
        // in which approval moved a draft on.
        let out = d.ok(&["local", "."]);
        if policy == "initial" {
            assert_eq!(
                counts(&d),
                [(2, 0), (0, 0), (0, 0)],
                "initial: a package with a published revision is not approved"
            );
            assert_eq!(d.rollout_condition()["reason"], "Progressing");
        } else {
            assert!(out.contains("approved"), "{out}");
            assert_eq!(counts(&d), [(0, 2), (0, 10), (0, 30)]);
            let c = d.rollout_condition();
            assert_eq!(c["reason"], "Complete", "{c}");
        }
    }
}

/// Whether no step of `c` (canary, early, late) started before every
/// earlier one had published v2 everywhere.
fn no_step_skipped(c: &[(usize, usize)]) -> bool {
    let sizes = [2, 10, 30];
    (1..c.len()).all(|i| {
        let started = c[i].0 + c[i].1 > 0;
        !started || (0..i).all(|j| c[j].1 == sizes[j])
    })
}

/// SIGKILL at points spread over a rollout that approval drives to the
/// end in one run: right after the kill no step has started before the one
/// before it was published, and the rerun finishes the rollout with one
/// published upgrade per package (nothing repeated, nothing skipped).
#[test]
fn killed_anywhere_in_a_rollout_the_rerun_finishes_it_without_skipping_or_repeating() {
    let d = Dir::with_fleet(&fleet_with(1, false, Some("always")));
    d.publish_blueprint_v2();
    std::fs::write(
        d.root.join("fleet.yaml"),
        fleet_with(2, false, Some("always")),
    )
    .unwrap();
    let run = ["local", ".", "--no-progress"];

    let reference = d.copy();
    let start = std::time::Instant::now();
    reference.ok(&run);
    let took = start.elapsed();
    assert_eq!(counts(&reference), [(0, 2), (0, 10), (0, 30)]);

    let mut killed = 0;
    for k in 0..4 {
        let dir = d.copy();
        let mut child = Command::new(env!("CARGO_BIN_EXE_porch-variants"))
            .args(run)
            .current_dir(&dir.root)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(took.mul_f64((k as f64 + 0.5) / 4.0));
        if child.try_wait().unwrap().is_none() {
            child.kill().unwrap();
            killed += 1;
        }
        child.wait().unwrap();
        let at_kill = counts(&dir);
        eprintln!(
            "killed {k} at {:?}: {at_kill:?}",
            took.mul_f64((k as f64 + 0.5) / 4.0)
        );
        assert!(no_step_skipped(&at_kill), "killed {k}: {at_kill:?}");
        dir.ok(&run);
        assert_eq!(counts(&dir), [(0, 2), (0, 10), (0, 30)], "rerun {k}");
        let c = dir.rollout_condition();
        assert_eq!(c["reason"], "Complete", "rerun {k}: {c}");
        let mut published: BTreeMap<String, usize> = BTreeMap::new();
        for pr in dir.revisions() {
            if pr["spec"]["lifecycle"] == "Published" {
                let repo = pr["spec"]["repository"].as_str().unwrap().to_string();
                *published.entry(repo).or_default() += 1;
            }
        }
        assert!(
            published.iter().all(|(r, n)| r == "blueprints" || *n == 2),
            "rerun {k}: {published:?}"
        );
    }
    assert!(killed > 0, "no run was killed before it finished");
}

/// `rpkg upgrade --selector` and `--all`: the latest published revision of
/// each cloned package picked is upgraded to blueprint v2, one line each
/// and a summary; packages already at v2 say so; the blueprint itself (not
/// a clone) is not picked; a name with `--all` is refused.
#[test]
fn bulk_upgrade_takes_the_packages_a_selector_picks_to_the_newest_upstream() {
    let d = Dir::new();
    d.ok(&["rpkg", "propose", "--all"]);
    d.ok(&["rpkg", "approve", "--all"]);
    d.publish_blueprint_v2();

    let out = d.ok(&[
        "rpkg",
        "upgrade",
        "--selector",
        "stage=canary",
        "--workspace",
        "up",
    ]);
    assert!(
        out.trim_end()
            .ends_with("2 upgraded, 0 already up to date, 0 refused"),
        "{out}"
    );
    assert_eq!(counts(&d), [(2, 0), (0, 0), (0, 0)]);
    // The new drafts carry no labels (as porchctl's): published by name.
    d.ok(&["rpkg", "propose", "--all"]);
    d.ok(&["rpkg", "approve", "--all"]);
    assert_eq!(counts(&d), [(0, 2), (0, 0), (0, 0)]);

    let out = d.ok(&["rpkg", "upgrade", "--all", "--workspace", "up"]);
    assert!(
        out.trim_end()
            .ends_with("40 upgraded, 2 already up to date, 0 refused"),
        "{out}"
    );
    assert!(out.contains("edge-01.web.up: already at revision"), "{out}");
    assert_eq!(counts(&d), [(0, 2), (10, 0), (30, 0)]);

    let mut cmd = Command::new(env!("CARGO_BIN_EXE_porch-variants"));
    let refused = cmd
        .current_dir(&d.root)
        .args([
            "rpkg",
            "--dir",
            ".",
            "upgrade",
            "edge-01.web.up",
            "--all",
            "--workspace",
            "x",
        ])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("not both"));
}
