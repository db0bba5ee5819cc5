//! Hostile seed packages in local mode (`DIR/packages/<repo>/<package>/`):
//! each is refused with an error naming the file or package, no link is
//! followed, and nothing is published from it.

use std::path::Path;

use porch_variants::local::cli::{open_repositories, read_package_dir, MAX_SEED_FILE};
use porch_variants::store::{PackageRevisionStore, PrFilter};

const REPO: &str =
    "apiVersion: config.porch.kpt.dev/v1alpha1\nkind: Repository\nmetadata:\n  name: blueprints\n";
const KPTFILE: &str = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: web\n";

/// A directory with the `blueprints` Repository and a seed package `pkg`
/// holding a Kptfile.
fn fleet(pkg: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("fleet");
    let seed = root.join("packages/blueprints").join(pkg);
    std::fs::create_dir_all(&seed).unwrap();
    std::fs::write(root.join("repositories.yaml"), REPO).unwrap();
    std::fs::write(seed.join("Kptfile"), KPTFILE).unwrap();
    (tmp, seed)
}

/// `--init` fails with an error containing each of `needles`, and nothing
/// is published.
fn refused(root: &Path, needles: &[&str]) {
    let err = match open_repositories(root, true, porch_variants::local::Validation::Strict) {
        Ok(_) => panic!("the hostile seed package was published"),
        Err(e) => e.to_string(),
    };
    for n in needles {
        assert!(err.contains(n), "{n:?} missing from: {err}");
    }
    let opened = open_repositories(root, false, porch_variants::local::Validation::Strict)
        .expect("the repository itself is fine");
    let prs = opened.store.list("default", &PrFilter::default()).unwrap();
    assert!(prs.is_empty(), "published: {prs:?}");
}

#[cfg(unix)]
#[test]
fn a_symbolic_link_in_a_seed_package_is_refused_not_followed() {
    let (tmp, seed) = fleet("web");
    let secret = tmp.path().join("secret.yaml");
    std::fs::write(&secret, "kind: Secret\n").unwrap();
    std::os::unix::fs::symlink(&secret, seed.join("leak.yaml")).unwrap();
    refused(&tmp.path().join("fleet"), &["leak.yaml", "symbolic link"]);
    // A link to a directory (here: to the whole temporary tree) too.
    std::fs::remove_file(seed.join("leak.yaml")).unwrap();
    std::os::unix::fs::symlink(tmp.path(), seed.join("everything")).unwrap();
    refused(&tmp.path().join("fleet"), &["everything", "symbolic link"]);
}

#[test]
fn a_file_over_the_limit_is_refused_without_reading_it() {
    let (tmp, seed) = fleet("web");
    // Sparse: the limit is judged on the size, before any byte is read.
    let big = std::fs::File::create(seed.join("big.yaml")).unwrap();
    big.set_len(MAX_SEED_FILE + 1).unwrap();
    refused(
        &tmp.path().join("fleet"),
        &["big.yaml", "more than the 64 MiB"],
    );
}

#[test]
fn a_package_name_that_cannot_name_a_revision_is_refused() {
    let (tmp, _seed) = fleet("Web App");
    refused(
        &tmp.path().join("fleet"),
        &["\"Web App\"", "cannot be published"],
    );
}

#[test]
fn a_file_that_is_not_text_is_refused() {
    let (tmp, seed) = fleet("web");
    std::fs::write(seed.join("blob.yaml"), [0xff, 0xfe, 0x00]).unwrap();
    refused(&tmp.path().join("fleet"), &["blob.yaml", "not UTF-8"]);
}

#[test]
fn deep_directories_are_read_without_recursion() {
    let (_tmp, seed) = fleet("web");
    // As deep as paths allow here (each level adds two characters).
    let mut deep = seed.clone();
    for _ in 0..1_500 {
        deep.push("d");
    }
    std::fs::create_dir_all(&deep).unwrap();
    std::fs::write(deep.join("cm.yaml"), "kind: ConfigMap\n").unwrap();
    let files = read_package_dir(&seed).unwrap();
    assert_eq!(files.len(), 2);
    assert!(files.keys().any(|k| k.matches("d/").count() == 1_500));
}

#[cfg(unix)]
#[test]
fn directories_ten_thousand_deep_are_refused_by_their_depth_and_nothing_is_published() {
    let (tmp, seed) = fleet("web");
    // Made one level at a time relative to the last, as a path this long
    // cannot be named at once.
    let made = std::process::Command::new("python3")
        .arg("-c")
        .arg(concat!(
            "import os\n",
            "fd = os.open('.', os.O_RDONLY)\n",
            "for _ in range(10000):\n",
            "    os.mkdir('d', dir_fd=fd)\n",
            "    fd = os.open('d', os.O_RDONLY, dir_fd=fd)\n",
            "f = os.open('cm.yaml', os.O_WRONLY | os.O_CREAT, dir_fd=fd)\n",
            "os.write(f, b'kind: ConfigMap\\n')\n",
        ))
        .current_dir(&seed)
        .status()
        .unwrap();
    assert!(made.success());
    let root = tmp.path().join("fleet");
    let err = match open_repositories(&root, true, porch_variants::local::Validation::Strict) {
        Ok(_) => panic!("the hostile seed package was published"),
        Err(e) => e.to_string(),
    };
    assert!(
        err.contains("packages/blueprints/web: directories nested")
            && err.contains("deep: the path is longer than the file system allows"),
        "{err}"
    );
    assert!(
        err.len() < 400,
        "the error names the depth, not the path: {} bytes",
        err.len()
    );
    let opened = open_repositories(&root, false, porch_variants::local::Validation::Strict)
        .expect("the repository itself is fine");
    assert!(opened
        .store
        .list("default", &PrFilter::default())
        .unwrap()
        .is_empty());
}

/// A PackageVariant named with the longest name Kubernetes allows (253
/// characters) gets its status like any other: the run converges, the
/// status file holds the object, and a second run writes nothing.
#[test]
fn a_variant_with_a_253_character_name_has_its_status() {
    let (tmp, seed) = fleet("web");
    std::fs::write(
        seed.join("cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n",
    )
    .unwrap();
    let root = tmp.path().join("fleet");
    let label = "a".repeat(63);
    let name = format!("{label}.{label}.{label}.{}", "b".repeat(61));
    assert_eq!(name.len(), 253);
    std::fs::write(
        root.join("variant.yaml"),
        format!(
            "{REPO}---\napiVersion: config.porch.kpt.dev/v1alpha1\nkind: Repository\nmetadata:\n  name: edge\n---\napiVersion: config.porch.kpt.dev/v1alpha1\nkind: PackageVariant\nmetadata:\n  name: {name}\nspec:\n  upstream:\n    repo: blueprints\n    package: web\n  downstream:\n    repo: edge\n    package: web\n"
        ),
    )
    .unwrap();
    std::fs::remove_file(root.join("repositories.yaml")).unwrap();
    let run = |init: bool| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_porch-variants"));
        cmd.arg("local").arg(&root).args(["--output", "json"]);
        if init {
            cmd.arg("--init");
        }
        let out = cmd.output().unwrap();
        let summary: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
        assert!(out.status.success(), "{summary}");
        summary
    };
    let first = run(true);
    assert_eq!(first["errors"], serde_json::json!([]), "{first}");
    assert_eq!(first["converged"], true);
    let dir = root.join(".porch-variants/status/default/PackageVariant");
    let files: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let text = std::fs::read_to_string(&files[0]).unwrap();
    assert!(
        text.contains(&name) && text.contains("type: Ready"),
        "{text}"
    );
    let second = run(false);
    assert_eq!(second["events"], serde_json::json!([]), "{second}");
}

/// A variant that cannot be reconciled (no upstream) is named with why on
/// the lines a person reads, and `local` exits 2: converged, something
/// stalled.
#[test]
fn a_stalled_variant_says_why_and_the_run_exits_2() {
    let (tmp, _seed) = fleet("web");
    let root = tmp.path().join("fleet");
    std::fs::write(
        root.join("variant.yaml"),
        "apiVersion: config.porch.kpt.dev/v1alpha1\nkind: PackageVariant\nmetadata:\n  name: no-upstream\nspec:\n  downstream:\n    repo: blueprints\n    package: copy\n",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_porch-variants"))
        .arg("local")
        .arg(&root)
        .arg("--init")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{stdout}");
    assert!(
        stdout.contains("PackageVariant default/no-upstream: status updated: Ready=False")
            && stdout.contains("; Stalled: ")
            && stdout.contains("spec.upstream"),
        "{stdout}"
    );
    assert!(
        stdout.contains("PackageVariant default/no-upstream: stalled: "),
        "{stdout}"
    );
}

/// A PackageVariant with a misspelt field (`injector:` for
/// `injectors:`), run as a person runs it.
fn misspelt_variant() -> (tempfile::TempDir, std::path::PathBuf) {
    let (tmp, _seed) = fleet("web");
    let root = tmp.path().join("fleet");
    std::fs::write(
        root.join("variant.yaml"),
        "apiVersion: config.porch.kpt.dev/v1alpha1\nkind: PackageVariant\nmetadata:\n  name: typo\nspec:\n  upstream:\n    repo: blueprints\n    package: web\n  downstream:\n    repo: blueprints\n    package: copy\n  injector:\n  - name: east\n",
    )
    .unwrap();
    (tmp, root)
}

fn local(root: &Path, extra: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_porch-variants"))
        .arg("local")
        .arg(root)
        .arg("--init")
        .args(extra)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

/// Objects are read as `kubectl --validate=strict` reads them: a field
/// the schema does not know is an error naming file, object, field and
/// line, and nothing is created; `warn` reports it and goes on, `ignore`
/// says nothing.
#[test]
fn a_misspelt_field_is_refused_by_default_and_reported_with_validate_warn() {
    let (_tmp, root) = misspelt_variant();
    let out = local(&root, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("variant.yaml, document 1 (PackageVariant default/typo)")
            && stderr.contains("strict decoding error: unknown field \"spec.injector\" (line 12)"),
        "{stderr}"
    );
    assert!(
        !root.join("repos").exists(),
        "a refused run created repositories"
    );

    let (_tmp, root) = misspelt_variant();
    let out = local(&root, &["--validate=warn"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("WARN") && stderr.contains("unknown field \"spec.injector\" (line 12)"),
        "{stderr}"
    );
    assert!(String::from_utf8_lossy(&out.stdout)
        .contains("PackageVariant default/typo: status updated: Ready=True"));

    let (_tmp, root) = misspelt_variant();
    let out = local(&root, &["--validate", "ignore"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("unknown field"), "{stderr}");
}

/// A repeated key is refused by default, naming the object and both
/// lines; `rpkg` and `repo` read the directory the same way.
#[test]
fn a_repeated_key_is_refused_naming_both_lines() {
    let (_tmp, root) = misspelt_variant();
    std::fs::write(
        root.join("variant.yaml"),
        "apiVersion: config.porch.kpt.dev/v1alpha1\nkind: PackageVariant\nmetadata:\n  name: twice\nspec:\n  upstream: {repo: blueprints, package: web}\n  downstream: {repo: blueprints, package: a}\n  downstream: {repo: blueprints, package: b}\n",
    )
    .unwrap();
    let out = local(&root, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("(PackageVariant default/twice)")
            && stderr.contains("line 8: mapping key \"downstream\" already defined at line 7"),
        "{stderr}"
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_porch-variants"))
        .args(["repo", "get", "--dir"])
        .arg(&root)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("already defined at line 7"), "{stderr}");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_porch-variants"))
        .args(["repo", "get", "--validate=ignore", "--dir"])
        .arg(&root)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Seed packages are read as render reads them before any is published:
/// a Kptfile with a misspelt field (or a resource that does not parse)
/// stops `--init` naming the file, and the good package next to it is not
/// published either.
#[test]
fn a_seed_package_that_would_not_render_is_refused_before_anything_is_published() {
    let (_tmp, seed) = fleet("web");
    let root = seed
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    let good = root.join("packages/blueprints/a-good");
    std::fs::create_dir_all(&good).unwrap();
    std::fs::write(good.join("Kptfile"), KPTFILE).unwrap();
    std::fs::write(
        seed.join("Kptfile"),
        format!("{KPTFILE}pipeline:\n  mutator:\n  - image: set-namespace:v0.4\n"),
    )
    .unwrap();
    refused(&root, &["web", "Kptfile is invalid", "mutator"]);

    std::fs::write(seed.join("Kptfile"), KPTFILE).unwrap();
    std::fs::write(
        seed.join("deployment.yaml"),
        "kind: Deployment\nmetadata: {name: [\n",
    )
    .unwrap();
    refused(&root, &["web", "deployment.yaml"]);
}
