//! Porch's FunctionConfig objects in local mode, through the CLI: a
//! FunctionConfig in DIR decides which executor runs the images it names
//! when a draft is rendered, as porch-server's do (a Go executor runs the
//! builtin, a pod executor sends the function to Porch's function runner),
//! and a bad one is refused naming its file, object and field.

use std::path::{Path, PathBuf};

const OBJECTS: &str = "apiVersion: config.porch.kpt.dev/v1alpha1\nkind: Repository\nmetadata:\n  name: blueprints\n---\napiVersion: config.porch.kpt.dev/v1alpha1\nkind: Repository\nmetadata:\n  name: edge\n---\napiVersion: config.porch.kpt.dev/v1alpha1\nkind: PackageVariant\nmetadata:\n  name: edge-web\nspec:\n  upstream:\n    repo: blueprints\n    package: web\n    revision: 1\n  downstream:\n    repo: edge\n    package: web\n";
const KPTFILE: &str = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: web\npipeline:\n  mutators:\n  - image: set-labels:v0.1\n    configMap:\n      app: web\n";
const DEPLOY: &str =
    "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 2\n";

/// A directory with the blueprint, a variant of it and `functions` (the
/// content of `functions.yaml`, if any).
fn fleet(functions: Option<&str>) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("fleet");
    let seed = root.join("packages/blueprints/web");
    std::fs::create_dir_all(&seed).unwrap();
    std::fs::write(root.join("objects.yaml"), OBJECTS).unwrap();
    std::fs::write(seed.join("Kptfile"), KPTFILE).unwrap();
    std::fs::write(seed.join("deployment.yaml"), DEPLOY).unwrap();
    if let Some(f) = functions {
        std::fs::write(root.join("functions.yaml"), f).unwrap();
    }
    (tmp, root)
}

fn local(root: &Path) -> (bool, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_porch-variants"))
        .arg("local")
        .arg(root)
        .arg("--init")
        .arg("--no-progress")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

fn function_config(executor: &str) -> String {
    format!("apiVersion: config.porch.kpt.dev/v1alpha1\nkind: FunctionConfig\nmetadata:\n  name: set-labels\n  namespace: porch-fn-system\nspec:\n  image: set-labels\n  prefixes: [\"\", ghcr.io/kptdev/krm-functions-catalog]\n{executor}")
}

#[test]
fn without_a_function_config_the_builtin_renders_the_draft() {
    let (_tmp, root) = fleet(None);
    let (ok, text) = local(&root);
    assert!(ok, "{text}");
    assert!(text.contains("edge.web.packagevariant-1"), "{text}");
}

#[test]
fn a_go_executor_at_the_tag_runs_the_builtin() {
    let (_tmp, root) = fleet(Some(&function_config(
        "  goExecutor:\n    tags: [\"~0.1\"]\n    id: set-labels\n",
    )));
    let (ok, text) = local(&root);
    assert!(ok, "{text}");
}

#[test]
fn a_pod_executor_sends_the_function_to_porchs_function_runner() {
    let (_tmp, root) = fleet(Some(&function_config(
        "  podExecutor:\n    tags: [\"~0.1\"]\n    timeToLive: 30m\n",
    )));
    let (ok, text) = local(&root);
    // No runner is given (`--function-runner`), so the draft's render
    // cannot run it; the builtin of the same name is not used.
    assert!(!ok, "{text}");
    assert!(
        text.contains("ghcr.io/kptdev/krm-functions-catalog/set-labels:v0.1"),
        "{text}"
    );
    assert!(text.contains("not found"), "{text}");
    assert!(
        text.contains("a FunctionConfig sends it to the pod executor"),
        "{text}"
    );
}

#[test]
fn a_function_config_without_an_executor_is_refused_naming_it() {
    let (_tmp, root) = fleet(Some(&function_config("")));
    let (ok, text) = local(&root);
    assert!(!ok, "{text}");
    assert!(
        text.contains("functions.yaml, document 1 (FunctionConfig set-labels)"),
        "{text}"
    );
    assert!(
        text.contains("spec: At least one configuration must be specified"),
        "{text}"
    );
}
