//! End to end, as a new user types it: the v1alpha2 PackageRevision
//! controller through `porch-variants rpkg` on real Git repositories —
//! init, pull, edit, push, propose, approve; clone into another
//! repository; publish v2 upstream; upgrade the clone with each strategy;
//! propose-delete and delete. Each step's Git refs and Kptfile are checked.

use std::path::{Path, PathBuf};
use std::process::Command;

const REPOS: &str = "apiVersion: config.porch.kpt.dev/v1alpha1
kind: Repository
metadata:
  name: blueprints
spec:
  type: git
  git:
    branch: main
---
apiVersion: config.porch.kpt.dev/v1alpha1
kind: Repository
metadata:
  name: edge
spec:
  type: git
  deployment: true
  git:
    branch: main
";

const CM: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: app # the app's settings
data:
  color: blue
";

struct Dir {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

impl Dir {
    fn new() -> Dir {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_path_buf();
        std::fs::write(root.join("repositories.yaml"), REPOS).unwrap();
        let d = Dir { _tmp: tmp, root };
        d.ok(&["local", "--init", "."]);
        d
    }

    fn run(&self, args: &[&str]) -> std::process::Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_porch-variants"));
        cmd.current_dir(&self.root);
        if args[0] == "rpkg" {
            cmd.arg("rpkg").args(["--dir", "."]).args(&args[1..]);
        } else {
            cmd.args(args);
        }
        cmd.output().unwrap()
    }

    /// Runs and requires success; stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "{args:?} failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    }

    /// Runs and requires failure; stderr.
    fn fails(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(!out.status.success(), "{args:?} succeeded");
        String::from_utf8_lossy(&out.stderr).to_string()
    }

    fn git(&self, repo: &str, args: &[&str]) -> String {
        let out = Command::new("git")
            .arg("-C")
            .arg(self.root.join("repos").join(repo))
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}");
        String::from_utf8_lossy(&out.stdout).to_string()
    }

    fn refs(&self, repo: &str) -> Vec<String> {
        self.git(repo, &["for-each-ref", "--format=%(refname)"])
            .lines()
            .filter(|r| !r.starts_with("refs/porch"))
            .map(str::to_string)
            .collect()
    }

    fn pull(&self, name: &str) -> PathBuf {
        let to = self.root.join("work").join(name);
        let _ = std::fs::remove_dir_all(&to);
        self.ok(&["rpkg", "pull", name, to.to_str().unwrap()]);
        to
    }

    /// The object's JSON as `rpkg get -o json` prints it.
    fn object(&self, name: &str) -> serde_json::Value {
        let out = self.ok(&["rpkg", "--output", "json", "get", name]);
        let list: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
        assert_eq!(list.len(), 1, "{out}");
        list.into_iter().next().unwrap()
    }
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap()
}

fn condition<'a>(obj: &'a serde_json::Value, t: &str) -> &'a serde_json::Value {
    obj["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == t))
        .unwrap_or_else(|| panic!("no {t} condition in {obj}"))
}

/// Publishes a draft, checking its tag appears.
/// `rpkg init` of package `z` in blueprints, workspace v1.
fn init_z(d: &Dir) {
    d.ok(&[
        "rpkg",
        "init",
        "z",
        "--repository",
        "blueprints",
        "--workspace",
        "v1",
    ]);
}

fn publish(d: &Dir, repo: &str, name: &str, tag: &str) {
    d.ok(&["rpkg", "propose", name]);
    let ws = name.rsplit('.').next().unwrap();
    let pkg = tag.split('/').next().unwrap();
    assert!(d
        .refs(repo)
        .contains(&format!("refs/heads/proposed/{pkg}/{ws}")));
    let out = d.ok(&["rpkg", "approve", name]);
    assert!(out.contains("approved (revision"), "{out}");
    let refs = d.refs(repo);
    assert!(refs.contains(&format!("refs/tags/{tag}")), "{refs:?}");
    assert!(
        !refs
            .iter()
            .any(|r| r.starts_with("refs/heads/") && r.ends_with(&format!("/{pkg}/{ws}"))),
        "{refs:?}"
    );
}

#[test]
fn a_package_from_init_to_upgrade_and_deletion() {
    let d = Dir::new();

    // init: a draft branch with kpt's three files, rendered.
    d.ok(&[
        "rpkg",
        "init",
        "app",
        "--repository",
        "blueprints",
        "--workspace",
        "v1",
        "--description",
        "the app",
    ]);
    assert!(d
        .refs("blueprints")
        .contains(&"refs/heads/drafts/app/v1".to_string()));
    let obj = d.object("blueprints.app.v1");
    assert_eq!(obj["status"]["creationSource"], "init");
    assert_eq!(condition(&obj, "Rendered")["status"], "True");
    assert_eq!(condition(&obj, "Ready")["status"], "True");
    assert_eq!(
        obj["metadata"]["labels"]["porch.kpt.dev/latest-revision"],
        "false"
    );

    // pull, edit, push: the draft holds the edit, rendered again.
    let work = d.pull("blueprints.app.v1");
    let mut names: Vec<String> = std::fs::read_dir(&work)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    names.sort();
    assert_eq!(names, ["Kptfile", "README.md", "package-context.yaml"]);
    assert!(read(&work.join("Kptfile")).contains("description: the app"));
    std::fs::write(work.join("cm.yaml"), CM).unwrap();
    d.ok(&["rpkg", "push", "blueprints.app.v1", work.to_str().unwrap()]);
    assert_eq!(
        d.git("blueprints", &["show", "drafts/app/v1:app/cm.yaml"]),
        CM
    );

    // propose, approve: tag app/v1, revision 1, latest.
    publish(&d, "blueprints", "blueprints.app.v1", "app/v1");
    let obj = d.object("blueprints.app.v1");
    assert_eq!(obj["status"]["revision"], 1);
    assert_eq!(
        obj["metadata"]["labels"]["porch.kpt.dev/latest-revision"],
        "true"
    );
    assert_eq!(obj["spec"]["lifecycle"], "Published");

    // clone into the deployment repository: the Kptfile points at the tag.
    d.ok(&[
        "rpkg",
        "clone",
        "blueprints.app.v1",
        "app",
        "--repository",
        "edge",
        "--workspace",
        "w1",
    ]);
    let clone = d.pull("edge.app.w1");
    let kptfile = read(&clone.join("Kptfile"));
    assert!(kptfile.contains("upstream:\n  type: git"), "{kptfile}");
    assert!(kptfile.contains("ref: app/v1"), "{kptfile}");
    let commit = d.git("blueprints", &["rev-parse", "app/v1^{commit}"]);
    assert!(
        kptfile.contains(&format!("commit: {}", commit.trim())),
        "{kptfile}"
    );
    assert_eq!(d.object("edge.app.w1")["status"]["creationSource"], "clone");
    // A local edit, published.
    std::fs::write(clone.join("cm.yaml"), CM.replace("blue", "red")).unwrap();
    d.ok(&["rpkg", "push", "edge.app.w1", clone.to_str().unwrap()]);
    publish(&d, "edge", "edge.app.w1", "app/v1");

    // v2 upstream, by copy.
    d.ok(&["rpkg", "copy", "blueprints.app.v1", "--workspace", "v2"]);
    assert_eq!(
        d.object("blueprints.app.v2")["status"]["creationSource"],
        "copy"
    );
    let v2 = d.pull("blueprints.app.v2");
    std::fs::write(
        v2.join("cm.yaml"),
        CM.replace("color: blue", "color: blue\n  size: large"),
    )
    .unwrap();
    d.ok(&["rpkg", "push", "blueprints.app.v2", v2.to_str().unwrap()]);
    publish(&d, "blueprints", "blueprints.app.v2", "app/v2");
    assert_eq!(
        d.object("blueprints.app.v1")["metadata"]["labels"]["porch.kpt.dev/latest-revision"],
        "false"
    );

    // Upgrade the clone with each strategy.
    let expect = [
        ("resource-merge", Some("color: red\n  size: large")),
        ("copy-merge", Some("color: blue\n  size: large")),
        ("force-delete-replace", Some("color: blue\n  size: large")),
        ("fast-forward", None),
    ];
    for (strategy, want) in expect {
        let ws = format!("up-{strategy}");
        let args = [
            "rpkg",
            "upgrade",
            "edge.app.w1",
            "--workspace",
            &ws,
            "--strategy",
            strategy,
        ];
        let name = format!("edge.app.{ws}");
        match want {
            Some(want) => {
                d.ok(&args);
                assert_eq!(d.object(&name)["status"]["creationSource"], "upgrade");
                let up = d.pull(&name);
                let cm = read(&up.join("cm.yaml"));
                assert!(cm.contains(want), "{strategy}: {cm}");
                assert!(
                    cm.contains("name: app # the app's settings"),
                    "{strategy}: {cm}"
                );
                let k = read(&up.join("Kptfile"));
                assert!(k.contains("ref: app/v2"), "{strategy}: {k}");
            }
            None => {
                // The local edit stops a fast-forward: the error, no draft,
                // and no object left to block running it again.
                let err = d.fails(&args);
                assert!(
                    err.contains("local package files have been modified"),
                    "{err}"
                );
                assert!(!d.ok(&["rpkg", "get"]).contains(&name));
                assert!(!d.refs("edge").iter().any(|r| r.contains(&ws)));
                let again = d.fails(&args);
                assert!(!again.contains("already exists"), "{again}");
            }
        }
    }

    // propose-delete and delete the old blueprint revision: its tag goes.
    d.ok(&["rpkg", "propose-delete", "blueprints.app.v1"]);
    assert!(d
        .refs("blueprints")
        .contains(&"refs/heads/deletionProposed/app/v1".to_string()));
    d.ok(&["rpkg", "delete", "blueprints.app.v1"]);
    let refs = d.refs("blueprints");
    assert!(!refs.contains(&"refs/tags/app/v1".to_string()), "{refs:?}");
    assert!(refs.contains(&"refs/tags/app/v2".to_string()), "{refs:?}");
    assert!(
        !refs.iter().any(|r| r.contains("deletionProposed")),
        "{refs:?}"
    );
    let out = d.ok(&["rpkg", "get"]);
    assert!(!out.contains("blueprints.app.v1 "), "{out}");

    // Git is sound.
    for repo in ["blueprints", "edge"] {
        d.git(repo, &["fsck", "--strict"]);
    }
}

#[test]
fn bad_requests_get_a_condition_or_an_error_naming_what_is_wrong() {
    let d = Dir::new();
    d.ok(&[
        "rpkg",
        "init",
        "app",
        "--repository",
        "blueprints",
        "--workspace",
        "v1",
    ]);

    // A clone of a revision that does not exist.
    let err = d.fails(&[
        "rpkg",
        "clone",
        "/nowhere/at/all",
        "app",
        "--repository",
        "edge",
        "--workspace",
        "w1",
    ]);
    assert!(err.contains("failed to fetch from git"), "{err}");

    // A copy of an unpublished revision.
    let err = d.fails(&["rpkg", "copy", "blueprints.app.v1", "--workspace", "v2"]);
    assert!(err.contains("must be published"), "{err}");

    // A clone of an unpublished upstream.
    let err = d.fails(&[
        "rpkg",
        "clone",
        "blueprints.app.v1",
        "app",
        "--repository",
        "edge",
        "--workspace",
        "w2",
    ]);
    assert!(
        err.contains("upstream package \"blueprints.app.v1\" must be published"),
        "{err}"
    );

    // An unknown repository: the object says so, Git is untouched.
    let err = d.fails(&[
        "rpkg",
        "init",
        "x",
        "--repository",
        "nope",
        "--workspace",
        "v1",
    ]);
    assert!(err.contains("nope"), "{err}");

    // A lifecycle going backwards: Published back to Draft is refused, in
    // porchctl's words, before the object is touched.
    d.ok(&["rpkg", "propose", "blueprints.app.v1"]);
    d.ok(&["rpkg", "approve", "blueprints.app.v1"]);
    let err = d.fails(&["rpkg", "reject", "blueprints.app.v1"]);
    assert!(
        err.contains("cannot change approval from Published to Draft"),
        "{err}"
    );
    assert!(d
        .refs("blueprints")
        .contains(&"refs/tags/app/v1".to_string()));
}

const DECLARED: &str = "apiVersion: porch.kpt.dev/v1alpha2
kind: PackageRevision
metadata:
  name: blueprints.site.v1
spec:
  packageName: site
  repository: blueprints
  workspaceName: v1
  lifecycle: Draft
  source:
    init:
      description: declared in a file
";

#[test]
fn packagerevisions_declared_in_the_directory_are_reconciled_by_local() {
    let d = Dir::new();
    let file = d.root.join("site.yaml");
    std::fs::write(&file, DECLARED).unwrap();
    let out = d.ok(&["local", "."]);
    assert!(out.contains("PackageRevision default/blueprints.site.v1: blueprints.site.v1 Draft Ready=True Rendered=True"), "{out}");
    assert!(d
        .refs("blueprints")
        .contains(&"refs/heads/drafts/site/v1".to_string()));
    // The objects' table, compacted at the end of the run: one file (and
    // the repositories' fingerprints as discovered), no journal left.
    let table = d.root.join(".porch-variants/packagerevisions");
    let files = || {
        let mut names: Vec<String> = std::fs::read_dir(&table)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    assert_eq!(files(), ["discovered.json", "objects.jsonl"]);
    let state = table.join("objects.jsonl");
    let before = read(&state);
    let discovered = read(&table.join("discovered.json"));
    assert!(
        before.contains("\"name\":\"blueprints.site.v1\""),
        "{before}"
    );
    // A second run has nothing to do and writes nothing.
    let out = d.ok(&["local", "."]);
    assert!(!out.contains("PackageRevision default/"), "{out}");
    assert_eq!(read(&state), before);
    assert_eq!(read(&table.join("discovered.json")), discovered);
    assert_eq!(files(), ["discovered.json", "objects.jsonl"]);

    // The file's lifecycle moves the revision.
    std::fs::write(
        &file,
        DECLARED.replace("lifecycle: Draft", "lifecycle: Published"),
    )
    .unwrap();
    let out = d.ok(&["local", "."]);
    assert!(
        out.contains("blueprints.site.v1 Published Ready=True"),
        "{out}"
    );
    assert!(d
        .refs("blueprints")
        .contains(&"refs/tags/site/v1".to_string()));
    assert_eq!(d.object("blueprints.site.v1")["status"]["revision"], 1);
    assert_eq!(
        d.object("blueprints.site.v1")["metadata"]["labels"]["porch.kpt.dev/latest-revision"],
        "true"
    );

    // A draft declared and then removed from the files is deleted.
    std::fs::write(
        &file,
        format!(
            "{}---\n{}",
            DECLARED.replace("lifecycle: Draft", "lifecycle: Published"),
            DECLARED
                .replace("site.v1", "site.v2")
                .replace("workspaceName: v1", "workspaceName: v2")
        ),
    )
    .unwrap();
    d.ok(&["local", "."]);
    assert!(d
        .refs("blueprints")
        .contains(&"refs/heads/drafts/site/v2".to_string()));
    std::fs::write(
        &file,
        DECLARED.replace("lifecycle: Draft", "lifecycle: Published"),
    )
    .unwrap();
    let out = d.ok(&["local", "."]);
    assert!(
        out.contains("PackageRevision default/blueprints.site.v2: deleted"),
        "{out}"
    );
    assert!(!d.refs("blueprints").iter().any(|r| r.contains("site/v2")));
}

#[test]
fn a_declared_revision_with_two_sources_gets_a_condition_naming_the_field() {
    let d = Dir::new();
    let two = DECLARED.replace(
        "  source:\n    init:\n      description: declared in a file\n",
        "  source:\n    init: {}\n    copyFrom:\n      name: blueprints.site.v0\n",
    );
    std::fs::write(d.root.join("site.yaml"), two).unwrap();
    let out = d.run(&["local", "."]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{stdout}");
    let obj = d.object("blueprints.site.v1");
    let ready = condition(&obj, "Ready");
    assert_eq!(ready["status"], "False");
    assert_eq!(
        ready["message"],
        "spec.source: exactly one of init, cloneFrom, copyFrom, or upgrade must be set, not init and copyFrom"
    );
    assert!(!d.refs("blueprints").iter().any(|r| r.contains("site")));
}

/// Store reads of a `local` run, from its JSON summary.
fn store_reads(d: &Dir) -> u64 {
    let out = d.ok(&["local", ".", "--output", "json"]);
    let summary: serde_json::Value = serde_json::from_str(&out).unwrap();
    summary["store_calls"]["reads"].as_u64().unwrap()
}

/// Discovery reads a repository only when its refs moved since every
/// revision in it last had an object: a revision made in Git without one
/// (a seed published by `--init`) gets its object, and a run after one
/// that left nothing undiscovered lists no repository.
#[test]
fn discovery_reads_only_repositories_whose_refs_moved() {
    let d = Dir::new();
    let seed = d.root.join("packages/blueprints/site");
    std::fs::create_dir_all(&seed).unwrap();
    std::fs::write(
        seed.join("Kptfile"),
        "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: site\n",
    )
    .unwrap();
    std::fs::write(seed.join("cm.yaml"), CM).unwrap();
    d.ok(&["local", "--init", "."]);
    assert_eq!(
        d.object("blueprints.site.v1")["spec"]["lifecycle"],
        "Published"
    );
    let quiet = store_reads(&d);
    // Without the recorded fingerprints every repository is listed again.
    std::fs::remove_file(
        d.root
            .join(".porch-variants/packagerevisions/discovered.json"),
    )
    .unwrap();
    let listing = store_reads(&d);
    assert!(listing > quiet, "{listing} reads, {quiet} without listing");
    assert_eq!(store_reads(&d), quiet);
}

/// A reader that goes away (`| head`) ends the output, not the command:
/// no panic, and the command's own exit status.
#[test]
fn a_closed_stdout_ends_the_output_quietly() {
    let d = Dir::new();
    for args in [&["rpkg", "--dir", ".", "list"][..], &["local", "."][..]] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_porch-variants"))
            .current_dir(&d.root)
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(out.status.success(), "{args:?}: {stderr}");
    }
}

/// Log lines written to a pipe or a file carry no terminal colours.
#[test]
fn logs_into_a_pipe_have_no_colours() {
    let d = Dir::new();
    let out = Command::new(env!("CARGO_BIN_EXE_porch-variants"))
        .current_dir(&d.root)
        .args(["local", "."])
        .env("RUST_LOG", "debug")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("DEBUG"),
        "debug lines are written: {stderr}"
    );
    assert!(!stderr.contains('\u{1b}'), "{stderr}");
}

/// A repository that was never created is named with what creates it, and
/// git's own words appear once.
#[test]
fn a_missing_repository_says_what_creates_it() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("repositories.yaml"), REPOS).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_porch-variants"))
        .args(["local"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("repository blueprints at")
            && stderr.contains("does not exist")
            && stderr.contains("porch-variants local --init"),
        "{stderr}"
    );
    // A repository that is there but broken: git's message once.
    std::fs::create_dir_all(tmp.path().join("repos/blueprints")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_porch-variants"))
        .args(["local"])
        .arg(tmp.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    let first = stderr.lines().next().unwrap_or_default();
    let words: Vec<&str> = first.split(": ").collect();
    let mut unique = words.clone();
    unique.dedup();
    assert_eq!(words, unique, "a message repeated: {first}");
}

/// porchctl's rules: approve only what is proposed, propose only a draft;
/// a revision already where the verb would move it is said so.
#[test]
fn lifecycle_verbs_follow_porchctls_rules() {
    let d = Dir::new();
    init_z(&d);
    let err = d.fails(&["rpkg", "approve", "blueprints.z.v1"]);
    assert!(
        err.contains("blueprints.z.v1 failed (cannot change approval from Draft to Published)"),
        "{err}"
    );
    assert_eq!(d.object("blueprints.z.v1")["spec"]["lifecycle"], "Draft");
    assert!(!d
        .refs("blueprints")
        .iter()
        .any(|r| r.starts_with("refs/tags/z/")));
    d.ok(&["rpkg", "propose", "blueprints.z.v1"]);
    let again = d.run(&["rpkg", "propose", "blueprints.z.v1"]);
    assert!(again.status.success());
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("blueprints.z.v1 is already Proposed"),
        "{again:?}"
    );
    let out = d.ok(&["rpkg", "approve", "blueprints.z.v1"]);
    assert!(
        out.contains("blueprints.z.v1 approved (revision 1)"),
        "{out}"
    );
    let err = d.fails(&["rpkg", "propose", "blueprints.z.v1"]);
    assert!(err.contains("cannot propose Published package"), "{err}");
}

/// The binary with `args`, in `dir`.
fn run_in(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_porch-variants"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn flags_go_after_the_verb_and_del_deletes_as_in_porchctl() {
    let d = Dir::new();
    let elsewhere = tempfile::tempdir().unwrap();
    let dir = d.root.to_str().unwrap();
    // --dir and -n after the verb, from another working directory.
    let out = run_in(
        elsewhere.path(),
        &[
            "rpkg",
            "init",
            "z",
            "--repository",
            "blueprints",
            "--workspace",
            "v1",
            "--dir",
            dir,
            "-n",
            "default",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let out = run_in(
        elsewhere.path(),
        &["rpkg", "get", "--dir", dir, "-o", "json"],
    );
    assert!(out.status.success(), "{out:?}");
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("-o json");
    assert!(listed.to_string().contains("blueprints.z.v1"), "{listed}");
    // porchctl's `del`.
    let out = run_in(
        elsewhere.path(),
        &["rpkg", "del", "blueprints.z.v1", "--dir", dir],
    );
    assert!(out.status.success(), "{out:?}");
    let listed = d.ok(&["rpkg", "list"]);
    assert!(!listed.contains("blueprints.z.v1"), "{listed}");
}

#[test]
fn rpkg_outside_a_project_fails_clearly_and_creates_nothing() {
    let empty = tempfile::tempdir().unwrap();
    for verb in [
        &["rpkg", "list"][..],
        &["rpkg", "get"][..],
        &["rpkg", "del", "x"][..],
    ] {
        let out = run_in(empty.path(), verb);
        assert_eq!(out.status.code(), Some(1), "{verb:?}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("is not a porch-variants directory") && err.contains("local --init"),
            "{err}"
        );
        assert!(out.stdout.is_empty(), "{verb:?} printed a table");
    }
    let left: Vec<_> = std::fs::read_dir(empty.path()).unwrap().collect();
    assert!(left.is_empty(), "created {left:?}");
}

#[test]
fn help_names_the_verbs_functions_and_exit_codes() {
    let here = tempfile::tempdir().unwrap();
    let top = String::from_utf8(run_in(here.path(), &["--help"]).stdout).unwrap();
    for word in ["rpkg", "PackageRevision", "fn", "local", "controller"] {
        assert!(top.contains(word), "--help lacks {word}:\n{top}");
    }
    let render =
        String::from_utf8(run_in(here.path(), &["fn", "render", "--help"]).stdout).unwrap();
    for word in [
        "set-namespace",
        "set-labels",
        "set-annotations",
        "apply-replacements",
        "starlark",
        "--fn-dir",
        "--allow-exec",
        "Exit codes",
    ] {
        assert!(
            render.contains(word),
            "fn render --help lacks {word}:\n{render}"
        );
    }
    let rpkg = String::from_utf8(run_in(here.path(), &["rpkg", "--help"]).stdout).unwrap();
    for verb in [
        "list",
        "get",
        "init",
        "clone",
        "copy",
        "pull",
        "push",
        "propose",
        "approve",
        "reject",
        "propose-delete",
        "delete",
        "upgrade",
    ] {
        assert!(rpkg.contains(verb), "rpkg --help lacks {verb}:\n{rpkg}");
    }
}

#[test]
fn a_package_that_does_not_render_is_not_pushed_proposed_or_approved() {
    let d = Dir::new();
    init_z(&d);
    let work = d.pull("blueprints.z.v1");
    let kptfile = work.join("Kptfile");
    let before = read(&kptfile);
    let failing = format!("{before}pipeline:\n  mutators:\n  - exec: ./not-allowed\n");
    std::fs::write(&kptfile, &failing).unwrap();
    std::fs::write(work.join("cm.yaml"), CM).unwrap();
    let err = d.fails(&["rpkg", "push", "blueprints.z.v1", work.to_str().unwrap()]);
    assert!(
        err.contains("push refused, nothing was saved") && err.contains("--allow-exec"),
        "{err}"
    );
    let again = d.pull("blueprints.z.v1");
    assert_eq!(
        read(&again.join("Kptfile")),
        before,
        "the draft is unchanged"
    );
    assert!(!again.join("cm.yaml").exists());
    std::fs::write(again.join("cm.yaml"), CM).unwrap();

    // Asked to be saved anyway: saved, and its render fails.
    let annotated = failing.replacen(
        "metadata:\n",
        "metadata:\n  annotations:\n    kpt.dev/save-on-render-failure: \"true\"\n",
        1,
    );
    assert_ne!(annotated, failing, "{failing}");
    std::fs::write(&kptfile, annotated).unwrap();
    let _ = d.run(&["rpkg", "push", "blueprints.z.v1", work.to_str().unwrap()]);
    assert_eq!(
        condition(&d.object("blueprints.z.v1"), "Rendered")["status"],
        "False"
    );
    let err = d.fails(&["rpkg", "propose", "blueprints.z.v1"]);
    assert!(
        err.contains("blueprints.z.v1 failed (its render failed") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(d.object("blueprints.z.v1")["spec"]["lifecycle"], "Draft");
    let forced = d.run(&["rpkg", "propose", "blueprints.z.v1", "--force"]);
    assert!(
        String::from_utf8_lossy(&forced.stderr).contains("as --force asks"),
        "{forced:?}"
    );
    assert_eq!(d.object("blueprints.z.v1")["spec"]["lifecycle"], "Proposed");
    let err = d.fails(&["rpkg", "approve", "blueprints.z.v1"]);
    assert!(err.contains("its render failed"), "{err}");
}

#[test]
fn an_upgrade_that_fails_leaves_nothing_and_one_with_nothing_newer_says_so() {
    let d = Dir::new();
    init_z(&d);
    publish(&d, "blueprints", "blueprints.z.v1", "z/v1");
    let clone = |package: &str| {
        d.ok(&[
            "rpkg",
            "clone",
            "blueprints.z.v1",
            package,
            "--repository",
            "edge",
            "--workspace",
            "w1",
        ])
    };
    clone("z");
    publish(&d, "edge", "edge.z.w1", "z/v1");
    // Nothing newer upstream: said, nothing made, and not an error.
    let out = d.run(&["rpkg", "upgrade", "edge.z.w1", "--workspace", "w2"]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("nothing to upgrade"),
        "{out:?}"
    );
    assert!(
        !d.ok(&["rpkg", "get"]).contains("edge.z.w2"),
        "a no-op draft"
    );

    // A newer upstream, and a clone still in draft: upstream's rule
    // refuses the upgrade, and nothing stays behind.
    d.ok(&["rpkg", "copy", "blueprints.z.v1", "--workspace", "v2"]);
    publish(&d, "blueprints", "blueprints.z.v2", "z/v2");
    clone("y");
    let upgrade = ["rpkg", "upgrade", "edge.y.w1", "--workspace", "w2"];
    let err = d.fails(&upgrade);
    assert!(err.contains("must be published"), "{err}");
    assert!(!d.ok(&["rpkg", "get"]).contains("edge.y.w2"), "left behind");
    publish(&d, "edge", "edge.y.w1", "y/v1");
    d.ok(&upgrade);
    assert_eq!(d.object("edge.y.w2")["status"]["creationSource"], "upgrade");

    // The upgraded Kptfile names its upstream as a URL that resolves from
    // anywhere (the directory was given as `.`), at the locked commit.
    let kptfile = read(&d.pull("edge.y.w2").join("Kptfile"));
    let kf = pv_core::yaml::to_json(&pv_core::yaml::parse_document(&kptfile).unwrap()).unwrap();
    let lock = &kf["upstreamLock"]["git"];
    let url = lock["repo"].as_str().unwrap();
    assert!(url.starts_with("file:///"), "{kptfile}");
    assert_eq!(kf["upstream"]["git"]["repo"], url, "{kptfile}");
    let out = Command::new("git")
        .current_dir("/")
        .args(["ls-remote", url, lock["ref"].as_str().unwrap()])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && listed.starts_with(lock["commit"].as_str().unwrap()),
        "{url}: {listed} {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `rpkg get` and `rpkg list` print porchctl's table (the same columns,
/// each as wide as its widest cell and three spaces apart, as kubectl
/// prints porch-server's table), `-o wide` the same, and `-o yaml` the
/// named object, or a `List` of every object.
#[test]
fn get_and_list_print_porchctls_table_and_yaml() {
    let d = Dir::new();
    init_z(&d);
    d.ok(&[
        "rpkg",
        "init",
        "a-much-longer-package-name",
        "--repository",
        "blueprints",
        "--workspace",
        "w",
    ]);
    let header = [
        "NAME",
        "PACKAGE",
        "WORKSPACENAME",
        "REVISION",
        "LATEST",
        "LIFECYCLE",
        "REPOSITORY",
    ];
    for args in [
        &["rpkg", "get"][..],
        &["rpkg", "get", "-o", "wide"][..],
        &["rpkg", "list"][..],
    ] {
        let out = d.ok(args);
        let lines: Vec<&str> = out.lines().filter(|l| !l.is_empty()).collect();
        let words: Vec<&str> = lines[0].split_whitespace().collect();
        assert_eq!(words, header, "{args:?}:\n{out}");
        // Every cell starts where its column's header starts, and the
        // widest cell of a column is followed by exactly three spaces.
        let starts: Vec<usize> = header.iter().map(|h| lines[0].find(h).unwrap()).collect();
        let rows: Vec<&str> = lines[1..].to_vec();
        assert!(
            rows.iter().any(|r| r.starts_with("blueprints.z.v1 ")),
            "{args:?}:\n{out}"
        );
        for row in &rows {
            for (i, &at) in starts.iter().enumerate().skip(1) {
                assert!(
                    row.as_bytes()[at - 1] == b' ' && row.as_bytes()[at] != b' ',
                    "{args:?}: column {} of {row:?} is not at {at}:\n{out}",
                    header[i]
                );
            }
        }
        let widest_name = rows
            .iter()
            .map(|r| r.split_whitespace().next().unwrap().len())
            .max()
            .unwrap();
        assert_eq!(starts[1], widest_name + 3, "{args:?}:\n{out}");
    }
    let one = d.ok(&["rpkg", "get", "blueprints.z.v1", "-o", "yaml"]);
    let v = yaml_value(&one);
    assert_eq!(v["kind"], "PackageRevision", "{one}");
    assert_eq!(v["metadata"]["name"], "blueprints.z.v1", "{one}");
    let all = d.ok(&["rpkg", "get", "-o", "yaml"]);
    let v = yaml_value(&all);
    assert_eq!(v["kind"], "List", "{all}");
    let names: Vec<&str> = v["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"blueprints.z.v1"), "{all}");
    assert!(
        names.contains(&"blueprints.a-much-longer-package-name.w"),
        "{all}"
    );
}

/// The one YAML document `text` holds, as JSON.
fn yaml_value(text: &str) -> serde_json::Value {
    let doc = pv_core::yaml::parse_document(text).unwrap_or_else(|e| panic!("{e}:\n{text}"));
    pv_core::yaml::to_json(&doc).unwrap_or_else(|e| panic!("{e}:\n{text}"))
}

/// `repo reg|get|unreg` as porchctl's: a registered local repository is
/// created by the next `local --init` (porchctl's default directory `/`
/// accepted as the repository's root), a remote one gets its URL, branch,
/// directory, deployment flag and a basic-auth Secret; `get` prints
/// porchctl's columns; `unreg` removes the Repository and its Secret, and
/// both refuse what does not fit.
#[test]
fn repo_reg_get_and_unreg_as_porchctl() {
    let d = Dir::new();
    let out = d.ok(&["repo", "reg", "--name", "extra"]);
    assert!(out.contains("extra registered"), "{out}");
    d.ok(&["local", "--init", "."]);
    assert!(
        d.root.join("repos/extra").is_dir(),
        "local --init creates it"
    );
    d.ok(&[
        "repo",
        "reg",
        "https://example.com/team/catalog.git",
        "--directory",
        "infra",
        "--branch",
        "release",
        "--deployment",
        "--repo-basic-username",
        "u",
        "--repo-basic-password",
        "p",
    ]);
    let file = std::fs::read_to_string(d.root.join("repo-catalog.yaml")).unwrap();
    for want in [
        "kind: Secret",
        "name: catalog-auth",
        "type: kubernetes.io/basic-auth",
        "repo: https://example.com/team/catalog.git",
        "branch: release",
        "directory: infra",
        "deployment: true",
        "secretRef:\n      name: catalog-auth",
    ] {
        assert!(file.contains(want), "{want:?} in:\n{file}");
    }
    let table = d.ok(&["repo", "get"]);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        ["NAME", "TYPE", "CONTENT", "DEPLOYMENT", "READY", "ADDRESS"],
        "{table}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with("catalog ")
            && l.contains(" true ")
            && l.ends_with("https://example.com/team/catalog.git")),
        "{table}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("extra ") && l.ends_with("repos/extra")),
        "{table}"
    );
    let e = d.fails(&["repo", "reg", "--name", "extra"]);
    assert!(e.contains("already registered"), "{e}");
    let e = d.fails(&["repo", "reg", "not a url"]);
    assert!(e.contains("is not a Git URL"), "{e}");
    let e = d.fails(&[
        "repo",
        "reg",
        "https://x.example/a.git",
        "--repo-basic-username",
        "u",
    ]);
    assert!(e.contains("go together"), "{e}");

    d.ok(&["repo", "unreg", "catalog"]);
    assert!(!d.root.join("repo-catalog.yaml").exists(), "file removed");
    // A Repository in a file with others: only its document goes.
    d.ok(&["repo", "unreg", "blueprints"]);
    let repos = std::fs::read_to_string(d.root.join("repositories.yaml")).unwrap();
    assert!(!repos.contains("name: blueprints"), "{repos}");
    assert!(repos.contains("kind: Repository"), "{repos}");
    let names = d.ok(&["repo", "get"]);
    assert!(
        !names.contains("blueprints") && !names.contains("catalog"),
        "{names}"
    );
    let e = d.fails(&["repo", "unreg", "catalog"]);
    assert!(e.contains("not found"), "{e}");
}

/// A draft declared in a file, labelled `team: TEAM`.
fn labelled_draft(package: &str, team: &str) -> String {
    format!(
        "apiVersion: porch.kpt.dev/v1alpha2\nkind: PackageRevision\nmetadata:\n  name: blueprints.{package}.v1\n  labels:\n    team: {team}\nspec:\n  packageName: {package}\n  repository: blueprints\n  workspaceName: v1\n  lifecycle: Draft\n  source:\n    init:\n      description: {package}\n"
    )
}

#[test]
fn bulk_verbs_act_on_the_revisions_a_selector_picks_with_a_summary() {
    let d = Dir::new();
    let drafts = [("a1", "a"), ("a2", "a"), ("b1", "b")]
        .iter()
        .map(|(p, t)| labelled_draft(p, t))
        .collect::<Vec<_>>()
        .join("---\n");
    std::fs::write(d.root.join("drafts.yaml"), drafts).unwrap();
    d.ok(&["local", "."]);
    // The file declared them; from here the verbs move them.
    std::fs::remove_file(d.root.join("drafts.yaml")).unwrap();

    let out = d.ok(&["rpkg", "propose", "--selector", "team=a"]);
    assert!(out.contains("blueprints.a1.v1 proposed"), "{out}");
    assert!(out.contains("blueprints.a2.v1 proposed"), "{out}");
    assert!(!out.contains("blueprints.b1.v1"), "{out}");
    assert!(out.trim_end().ends_with("2 proposed"), "{out}");
    assert_eq!(d.object("blueprints.b1.v1")["spec"]["lifecycle"], "Draft");

    // Only proposed revisions are approved: b1 (a draft) is not picked.
    let out = d.ok(&["rpkg", "approve", "-l", "team in (a,b)"]);
    assert!(
        out.contains("blueprints.a1.v1 approved (revision 1)"),
        "{out}"
    );
    assert!(out.trim_end().ends_with("2 approved"), "{out}");
    assert_eq!(d.object("blueprints.b1.v1")["spec"]["lifecycle"], "Draft");
    assert!(d
        .refs("blueprints")
        .contains(&"refs/tags/a2/v1".to_string()));

    // A bad selector, or names with a selector, are refused.
    let err = d.fails(&["rpkg", "propose", "--selector", "team in (a"]);
    assert!(err.contains("--selector \"team in (a\""), "{err}");
    let err = d.fails(&["rpkg", "propose", "blueprints.b1.v1", "-l", "team=b"]);
    assert!(err.contains("not both"), "{err}");
    assert_eq!(d.object("blueprints.b1.v1")["spec"]["lifecycle"], "Draft");
}

/// A declared revision annotated by hand with Nephio's approval policy:
/// the run proposes and approves it once it is Ready, as Nephio's approval
/// controller would, though no variant asks for it; `initial` then leaves
/// the package's next draft alone, and a bad policy value is an error
/// naming the revision.
#[test]
fn a_revision_annotated_by_hand_with_an_approval_policy_is_approved() {
    let d = Dir::new();
    let file = d.root.join("site.yaml");
    let declared = |ws: &str, policy: &str| {
        DECLARED
            .replace("site.v1", &format!("site.{ws}"))
            .replace("workspaceName: v1", &format!("workspaceName: {ws}"))
            .replace("  lifecycle: Draft\n", "")
            .replace(
                "metadata:\n",
                &format!("metadata:\n  annotations:\n    approval.nephio.org/policy: {policy}\n"),
            )
    };
    std::fs::write(&file, declared("v1", "initial")).unwrap();
    let out = d.ok(&["local", "."]);
    assert!(
        out.contains(
            "PackageRevision default/blueprints.site.v1: proposed: approval policy initial"
        ),
        "{out}"
    );
    assert!(
        out.contains("PackageRevision default/blueprints.site.v1: approved: revision 1 (approval policy initial)"),
        "{out}"
    );
    assert!(d
        .refs("blueprints")
        .contains(&"refs/tags/site/v1".to_string()));

    // `initial`: the package has a published revision, so a second draft
    // waits (written nothing).
    std::fs::write(
        &file,
        format!(
            "{}---\n{}",
            declared("v1", "initial"),
            declared("v2", "initial")
        ),
    )
    .unwrap();
    let out = d.ok(&["local", "."]);
    assert!(!out.contains("site.v2: proposed"), "{out}");
    assert!(d
        .refs("blueprints")
        .contains(&"refs/heads/drafts/site/v2".to_string()));

    // An unknown policy is refused by name; nothing moves.
    std::fs::write(
        &file,
        format!(
            "{}---\n{}",
            declared("v1", "initial"),
            declared("v2", "sometimes")
        ),
    )
    .unwrap();
    let out = d.run(&["local", "."]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("blueprints.site.v2")
            && text
                .contains("invalid \"approval.nephio.org/policy\" annotation value: \"sometimes\""),
        "{text}"
    );
    assert!(d
        .refs("blueprints")
        .contains(&"refs/heads/drafts/site/v2".to_string()));
}
