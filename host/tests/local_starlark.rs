//! Local mode renders drafts with the embedded starlark function: a
//! PackageVariant whose pipeline has a starlark mutator gets a draft whose
//! resources the program changed, comments and key order kept, and a
//! second run writes nothing.

use std::path::Path;
use std::process::Command;

const STARLARK_STEP: &str = r#"    - name: annotate
      image: ghcr.io/kptdev/krm-functions-catalog/starlark:v0.5
      configMap:
        source: |
          for r in ctx.resource_list["items"]:
            if r["kind"] == "Deployment":
              r["metadata"].setdefault("annotations", {})["example.com/rendered-by"] = "starlark"
"#;

fn local(dir: &Path, init: bool) -> serde_json::Value {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_porch-variants"));
    cmd.arg("local");
    if init {
        cmd.arg("--init");
    }
    let out = cmd
        .args(["--no-progress", "--output", "json"])
        .arg(dir)
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "local failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON summary")
}

#[test]
fn a_starlark_mutator_of_a_variant_runs_on_its_draft() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("fleet");
    let ok = Command::new("cp")
        .arg("-r")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/fleet"))
        .arg(&dir)
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let team_a = dir.join("team-a.yaml");
    let text = std::fs::read_to_string(&team_a).unwrap();
    let text = text.replace("  injectors:\n", &format!("{STARLARK_STEP}  injectors:\n"));
    std::fs::write(&team_a, text).unwrap();

    let first = local(&dir, true);
    assert_eq!(first["errors"].as_array().map(Vec::len), Some(0), "{first}");
    let repo = git2::Repository::open_bare(dir.join("repos/team-a")).unwrap();
    let draft = repo
        .find_reference("refs/heads/drafts/web/packagevariant-1")
        .expect("the team-a draft");
    let tree = draft.peel_to_tree().unwrap();
    let file = |path: &str| {
        let entry = tree.get_path(Path::new(path)).unwrap();
        let blob = repo.find_blob(entry.id()).unwrap();
        String::from_utf8(blob.content().to_vec()).unwrap()
    };
    let deployment = file("web/deployment.yaml");
    assert!(
        deployment.contains("example.com/rendered-by: starlark"),
        "{deployment}"
    );
    assert!(deployment.contains("namespace: team-a"), "{deployment}");
    assert!(
        deployment.starts_with("# The web front end."),
        "the file's comment is kept: {deployment}"
    );
    assert!(
        deployment.contains("replicas: 2 # scaled per region by variants"),
        "{deployment}"
    );
    let kptfile = file("web/Kptfile");
    assert!(kptfile.contains("reason: RenderSuccess"), "{kptfile}");

    let second = local(&dir, false);
    assert_eq!(
        second["events"].as_array().map(Vec::len),
        Some(0),
        "the second run writes nothing: {second}"
    );
}
