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

/// The embedded starlark function provides starlib's `encoding/yaml.star`,
/// `encoding/base64.star`, `hash.star`, `re.star`, `math.star` and
/// `time.star` (its clock read from the wasm host), as the catalog's
/// function does: a program that uses them on a ConfigMap
/// renders through `fn render`.
#[test]
fn starlark_programs_load_starlib_modules() {
    let tmp = tempfile::tempdir().unwrap();
    let pkg = tmp.path().join("pkg");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(
        pkg.join("Kptfile"),
        r#"apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: pkg
pipeline:
  mutators:
    - image: ghcr.io/kptdev/krm-functions-catalog/starlark:v0.5
      configMap:
        source: |
          load("encoding/yaml.star", "yaml")
          load("encoding/base64.star", "base64")
          load("hash.star", "hash")
          load("re.star", "re")
          load("math.star", "math")
          load("time.star", "time")
          for r in ctx.resource_list["items"]:
            if r["kind"] == "ConfigMap":
              spec = yaml.loads(r["data"]["spec"])
              r["data"]["first-zone"] = spec["zones"][0]
              r["data"]["password"] = base64.decode(r["data"]["encoded"])
              r["data"]["again"] = yaml.dumps({"b": 1, "a": spec["zones"]})
              r["data"]["digest"] = hash.sha256(r["data"]["encoded"])
              r["data"]["regions"] = ",".join(re.findall("[a-z]+", ",".join(spec["zones"])))
              r["data"]["half"] = str(math.floor(5 / 2))
              expires = time.parse_time("2026-01-31T22:00:00Z") + time.parse_duration("48h")
              r["data"]["expires"] = expires.in_location("Asia/Tokyo").format("Mon Jan 2 15:04 MST 2006")
              r["data"]["clock"] = str(time.now() > time.from_timestamp(1600000000))
"#,
    )
    .unwrap();
    std::fs::write(
        pkg.join("cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  spec: |\n    zones:\n    - eu-1\n    - eu-2\n  encoded: c2VjcmV0\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_porch-variants"))
        .args(["fn", "render"])
        .arg(&pkg)
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "render failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let cm = std::fs::read_to_string(pkg.join("cm.yaml")).unwrap();
    assert!(cm.contains("first-zone: eu-1\n"), "{cm}");
    assert!(cm.contains("password: secret\n"), "{cm}");
    // hash.star, re.star and math.star too.
    assert!(
        cm.contains("digest: 1c1185e02ff3e23b3e5a1c5bc86cf15d4126caa3dcde0fdb6e93adc4deec119e\n"),
        "{cm}"
    );
    assert!(cm.contains("regions: eu,eu\n"), "{cm}");
    assert!(cm.contains("half: \"2.0\"\n"), "{cm}");
    assert!(cm.contains("expires: Tue Feb 3 07:00 JST 2026\n"), "{cm}");
    assert!(cm.contains("clock: \"True\"\n"), "{cm}");
    assert!(
        cm.contains("again: |\n    a:\n    - eu-1\n    - eu-2\n    b: 1\n"),
        "{cm}"
    );
}
