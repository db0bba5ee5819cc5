//! `porch-variants fn eval` as a person runs it: one function over a
//! package and its subpackages, selected by `--match-*`, configured by
//! `-- key=value` or `--fn-config`, Kptfiles given to it as kpt gives
//! them, nothing written when the function fails, and the output sent to
//! stdout or a new directory (`-o`) or read from stdin (`-`).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

const KPTFILE: &str = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n";

fn cm(name: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name} # keep me\ndata:\n  k: v\n")
}

fn package(root: &Path) {
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::write(root.join("Kptfile"), KPTFILE).unwrap();
    std::fs::write(root.join("cm.yaml"), cm("a")).unwrap();
    std::fs::write(root.join("sub/Kptfile"), KPTFILE).unwrap();
    std::fs::write(root.join("sub/cm.yaml"), cm("b")).unwrap();
}

fn eval(root: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_porch-variants"))
        .args(["fn", "eval"])
        .arg(root)
        .args(args)
        .output()
        .unwrap()
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap()
}

#[test]
fn a_selected_resource_of_a_subpackage_is_changed_and_nothing_else() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("app");
    package(&root);
    let out = eval(
        &root,
        &[
            "--image",
            "set-namespace:v0.4",
            "--match-kind",
            "ConfigMap",
            "--match-name",
            "b",
            "--",
            "namespace=prod",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("[RUNNING] \"ghcr.io/kptdev/krm-functions-catalog/set-namespace:v0.4\""),
        "{stderr}"
    );
    assert_eq!(
        read(&root.join("sub/cm.yaml")),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b # keep me\n  namespace: prod\ndata:\n  k: v\n"
    );
    assert_eq!(read(&root.join("cm.yaml")), cm("a"));
    assert_eq!(
        read(&root.join("Kptfile")),
        KPTFILE,
        "eval writes no render status"
    );
    assert_eq!(read(&root.join("sub/Kptfile")), KPTFILE);
}

#[test]
fn a_config_file_in_the_package_configures_and_is_input_as_kpt_reads_it() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("app");
    package(&root);
    let config = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: labels\ndata:\n  tier: web\n";
    std::fs::write(root.join("fn-config.yaml"), config).unwrap();
    let out = eval(
        &root,
        &[
            "--image",
            "set-labels:v0.2",
            "--fn-config",
            root.join("fn-config.yaml").to_str().unwrap(),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(read(&root.join("cm.yaml")).contains("labels:\n    tier: web"));
    assert!(read(&root.join("sub/cm.yaml")).contains("labels:\n    tier: web"));
    // kpt gives a config file that lies in the package to the function
    // too (the catalog's starlark/eval-fn-config shows it).
    assert!(read(&root.join("fn-config.yaml")).contains("labels:\n    tier: web"));
    // Meta resources are input, as in kpt since v1.0.
    assert!(read(&root.join("Kptfile")).contains("labels:\n    tier: web"));
    assert!(read(&root.join("sub/Kptfile")).contains("labels:\n    tier: web"));
    // kpt refuses the flag that used to ask for them, and so do we.
    let before = read(&root.join("cm.yaml"));
    let out = eval(
        &root,
        &[
            "--image",
            "set-labels:v0.2",
            "--include-meta-resources",
            "--",
            "owner=me",
        ],
    );
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            "--include-meta-resources is no longer necessary because meta resources are now included by default"
        ),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(read(&root.join("cm.yaml")), before);
}

#[test]
fn a_function_that_fails_writes_nothing_and_exits_1() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("app");
    package(&root);
    let out = eval(&root, &["--image", "example.com/no-such-function:v1"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no-such-function"));
    assert_eq!(read(&root.join("cm.yaml")), cm("a"));
    assert_eq!(read(&root.join("Kptfile")), KPTFILE);
    let out = eval(&root, &["--", "a=b"]);
    assert_eq!(out.status.code(), Some(2), "neither --image nor --exec");
    let out = eval(&root, &["--image", "set-labels:v0.2", "--", "novalue"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("\"novalue\" is not key=value"));
}

#[cfg(unix)]
#[test]
fn an_exec_function_runs_without_allow_exec() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("app");
    package(&root);
    let script = tmp.path().join("upper.sh");
    std::fs::write(&script, "#!/bin/sh\nsed 's/k: v/k: V/'\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = eval(&root, &["--exec", script.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(read(&root.join("cm.yaml")).contains("k: V"));
    assert!(read(&root.join("sub/cm.yaml")).contains("k: V"));
}

/// A relative `exec` path names a program under the working directory,
/// as kpt resolves it, for `fn eval --exec` and for a Kptfile's `exec:`
/// in `fn render`; a program of the same name in the package is not the
/// one run.
#[cfg(unix)]
#[test]
fn a_relative_exec_path_resolves_from_the_working_directory() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("app");
    package(&root);
    for (dir, to) in [(tmp.path().join("bin"), "CWD"), (root.join("bin"), "PKG")] {
        std::fs::create_dir_all(&dir).unwrap();
        let script = dir.join("upper.sh");
        std::fs::write(&script, format!("#!/bin/sh\nsed 's/k: v/k: {to}/'\n")).unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let out = Command::new(env!("CARGO_BIN_EXE_porch-variants"))
        .args(["fn", "eval", "app", "--exec", "./bin/upper.sh"])
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        read(&root.join("cm.yaml")).contains("k: CWD"),
        "{}",
        read(&root.join("cm.yaml"))
    );

    let sub = root.join("sub");
    std::fs::write(
        sub.join("Kptfile"),
        format!("{KPTFILE}pipeline:\n  mutators:\n  - exec: ./bin/upper.sh\n"),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_porch-variants"))
        .args(["fn", "render", "--allow-exec", "app/sub"])
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        read(&sub.join("cm.yaml")).contains("k: CWD"),
        "{}",
        read(&sub.join("cm.yaml"))
    );
}

/// The package's files, by relative path.
fn snapshot(root: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for rel in ["Kptfile", "cm.yaml", "sub/Kptfile", "sub/cm.yaml"] {
        out.push((rel.to_string(), read(&root.join(rel))));
    }
    out
}

/// `fn eval - ARGS` with `input` on stdin.
fn eval_stdin(input: &str, args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_porch-variants"))
        .args(["fn", "eval", "-"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn output_to_stdout_leaves_the_package_alone_and_pipes_into_an_eval_of_stdin() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("app");
    package(&root);
    let before = snapshot(&root);
    let unwrap = eval(
        &root,
        &["-i", "set-labels:v0.2", "-o", "unwrap", "--", "tier=web"],
    );
    assert!(
        unwrap.status.success(),
        "{}",
        String::from_utf8_lossy(&unwrap.stderr)
    );
    let text = String::from_utf8(unwrap.stdout).unwrap();
    assert!(
        text.contains("name: a # keep me\n  labels:\n    tier: web"),
        "{text}"
    );
    assert!(
        text.contains("name: b # keep me\n  labels:\n    tier: web"),
        "{text}"
    );
    assert!(!text.contains("config.kubernetes.io/path"), "{text}");
    assert_eq!(snapshot(&root), before, "-o unwrap writes nothing");

    let wrapped = eval(
        &root,
        &["-i", "set-labels:v0.2", "-o", "stdout", "--", "tier=web"],
    );
    assert!(
        wrapped.status.success(),
        "{}",
        String::from_utf8_lossy(&wrapped.stderr)
    );
    let list = String::from_utf8(wrapped.stdout).unwrap();
    assert!(
        list.starts_with("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\n"),
        "{list}"
    );
    assert!(
        list.contains("config.kubernetes.io/path: 'sub/cm.yaml'"),
        "{list}"
    );
    assert_eq!(snapshot(&root), before, "-o stdout writes nothing");

    // kpt's pipe: the ResourceList goes through a second function.
    let piped = eval_stdin(&list, &["-i", "set-labels:v0.2", "--", "owner=me"]);
    assert!(
        piped.status.success(),
        "{}",
        String::from_utf8_lossy(&piped.stderr)
    );
    let out = String::from_utf8(piped.stdout).unwrap();
    assert!(
        out.starts_with("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\n"),
        "{out}"
    );
    assert!(out.contains("tier: web"), "{out}");
    assert!(out.contains("owner: me"), "{out}");
    assert!(
        out.contains("config.kubernetes.io/path: 'sub/cm.yaml'"),
        "{out}"
    );
}

#[test]
fn output_to_a_new_directory_and_never_over_an_existing_one() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("app");
    package(&root);
    let before = snapshot(&root);
    let out_dir = tmp.path().join("out");
    let out = eval(
        &root,
        &[
            "-i",
            "set-labels:v0.2",
            "-o",
            out_dir.to_str().unwrap(),
            "--",
            "tier=web",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(read(&out_dir.join("sub/cm.yaml")).contains("tier: web"));
    assert!(read(&out_dir.join("Kptfile")).contains("tier: web"));
    assert_eq!(snapshot(&root), before);
    let again = eval(
        &root,
        &[
            "-i",
            "set-labels:v0.2",
            "-o",
            out_dir.to_str().unwrap(),
            "--",
            "tier=db",
        ],
    );
    assert!(!again.status.success());
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(
        err.contains("already exists, please delete the directory and retry"),
        "{err}"
    );
    assert!(read(&out_dir.join("cm.yaml")).contains("tier: web"));
}

#[test]
fn stdin_items_that_name_a_file_outside_the_package_are_refused() {
    let out = eval_stdin(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations:\n    config.kubernetes.io/path: '../../escape.yaml'\n",
        &["-i", "set-labels:v0.2", "-o", "unwrap", "--", "tier=web"],
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("ConfigMap a") && err.contains("../../escape.yaml"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn save_adds_the_function_to_the_kptfile_after_a_successful_run() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("app");
    package(&root);
    let refused = eval(
        &root,
        &["-i", "set-labels:v0.2", "--save", "--", "tier=web"],
    );
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--type must be specified"));
    assert_eq!(
        read(&root.join("cm.yaml")),
        cm("a"),
        "a refused save runs nothing"
    );
    let out = eval(
        &root,
        &[
            "-i",
            "set-labels:v0.2",
            "--save",
            "-t",
            "mutator",
            "--",
            "tier=web",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains(
        "Added \"ghcr.io/kptdev/krm-functions-catalog/set-labels:v0.2\" as mutator in the Kptfile."
    ));
    let kptfile = read(&root.join("Kptfile"));
    assert!(
        kptfile.contains(
            "pipeline:\n  mutators:\n  - image: ghcr.io/kptdev/krm-functions-catalog/set-labels:v0.2\n    configMap:\n      tier: web\n"
        ),
        "{kptfile}"
    );
    // The saved pipeline renders to the same package.
    let cm_after = read(&root.join("cm.yaml"));
    let render = Command::new(env!("CARGO_BIN_EXE_porch-variants"))
        .args(["fn", "render"])
        .arg(&root)
        .output()
        .unwrap();
    assert!(
        render.status.success(),
        "{}",
        String::from_utf8_lossy(&render.stderr)
    );
    assert_eq!(read(&root.join("cm.yaml")), cm_after);
}
