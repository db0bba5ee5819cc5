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
  rolloutStrategy:
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
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_path_buf();
        std::fs::write(root.join("repositories.yaml"), repositories()).unwrap();
        std::fs::write(root.join("fleet.yaml"), fleet(1, false)).unwrap();
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

    // Blueprint v2.
    d.ok(&["rpkg", "copy", "blueprints.web.v1", "--workspace", "v2"]);
    let work = d.root.join("work");
    d.ok(&["rpkg", "pull", "blueprints.web.v2", work.to_str().unwrap()]);
    let app = std::fs::read_to_string(work.join("app.yaml")).unwrap();
    std::fs::write(work.join("app.yaml"), app.replace("web:1.0", "web:2.0")).unwrap();
    d.ok(&["rpkg", "push", "blueprints.web.v2", work.to_str().unwrap()]);
    d.ok(&["rpkg", "propose", "blueprints.web.v2"]);
    d.ok(&["rpkg", "approve", "blueprints.web.v2"]);
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
    d.ok(&["rpkg", "copy", "blueprints.web.v1", "--workspace", "v2"]);
    let work = d.root.join("work");
    d.ok(&["rpkg", "pull", "blueprints.web.v2", work.to_str().unwrap()]);
    let app = std::fs::read_to_string(work.join("app.yaml")).unwrap();
    std::fs::write(work.join("app.yaml"), app.replace("web:1.0", "web:2.0")).unwrap();
    d.ok(&["rpkg", "push", "blueprints.web.v2", work.to_str().unwrap()]);
    d.ok(&["rpkg", "propose", "blueprints.web.v2"]);
    d.ok(&["rpkg", "approve", "blueprints.web.v2"]);
    std::fs::remove_dir_all(&work).unwrap();
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
