//! The committed CRDs (`deploy/crds/`) are exactly what the Rust types
//! generate, and structurally equal to upstream Porch's
//! (`deploy/upstream-crds/`, reference copies).
//!
//! `UPDATE_CRDS=1 cargo test -p porch-variants --test kube_crds` rewrites
//! `deploy/crds/` from the types.

use std::path::PathBuf;

use porch_variants::crd::{self, drift};
use serde_json::Value;

fn deploy_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy")
}

fn read_yaml(path: &std::path::Path) -> Value {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let docs = pv_core::yaml::parse_stream(&text)
        .unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()));
    let objects: Vec<Value> = docs
        .iter()
        .map(|d| pv_core::yaml::to_json(d).expect("yaml to json"))
        .filter(|v| v.get("kind").is_some())
        .collect();
    assert_eq!(objects.len(), 1, "{}: one CRD expected", path.display());
    objects.into_iter().next().unwrap_or_default()
}

/// The variant controllers' CRDs and the PackageRevision controller's.
fn every_crd() -> Vec<(&'static str, Value)> {
    let mut all = crd::all();
    all.extend(crd::package_revision_crds());
    all
}

#[test]
fn committed_crds_equal_generated() {
    for (file, value) in every_crd() {
        let path = deploy_dir().join("crds").join(file);
        let generated = crd::to_yaml(&value).expect("crd to yaml");
        if std::env::var_os("UPDATE_CRDS").is_some() {
            std::fs::write(&path, &generated).expect("writing crd");
        }
        let committed = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        assert_eq!(
            committed, generated,
            "{file} is stale: run UPDATE_CRDS=1 cargo test -p porch-variants --test kube_crds"
        );
    }
}

/// Fields upstream gained after the snapshot in `deploy/upstream-crds`:
/// kpt's `configRef` and `when` on pipeline functions, in PackageVariants
/// and in PackageVariantSet templates (kptdev/porch
/// `config.porch.kpt.dev_packagevariants.yaml` @362d8475).
fn newer_upstream(drift: &str) -> bool {
    drift.contains(".pipeline.mutators[].") || drift.contains(".pipeline.validators[].")
}

const NEWER_FIELDS: [&str; 2] = ["].configRef:field: only ours", "].when:field: only ours"];

#[test]
fn crds_match_upstream_structurally() {
    let mut all = Vec::new();
    for (file, ours) in every_crd() {
        let theirs = read_yaml(&deploy_dir().join("upstream-crds").join(file));
        for d in drift::compare_crds(&ours, &theirs) {
            let newer = newer_upstream(&d) && NEWER_FIELDS.iter().any(|f| d.ends_with(f));
            if !newer {
                all.push(format!("{file}: {d}"));
            }
        }
    }
    assert!(all.is_empty(), "CRD drift:\n{}", all.join("\n"));
}

#[test]
fn drift_check_detects_changes() {
    let (_, ours) = crd::all().remove(0);
    let theirs = read_yaml(
        &deploy_dir()
            .join("upstream-crds")
            .join("config.porch.kpt.dev_packagevariants.yaml"),
    );
    // A field renamed, a required field dropped, a type changed.
    let mut changed = ours.clone();
    let spec = crd::node_at(
        &mut changed["spec"]["versions"][0]["schema"]["openAPIV3Schema"],
        "spec",
    )
    .expect("spec schema");
    let props = spec["properties"].as_object_mut().expect("properties");
    let v = props.remove("adoptionPolicy").expect("adoptionPolicy");
    props.insert("adoptPolicy".into(), v);
    props["deletionPolicy"]["type"] = Value::String("integer".into());
    let diffs = drift::compare_crds(&changed, &theirs);
    assert!(
        diffs
            .iter()
            .any(|d| d.contains("spec.adoptPolicy:field: only ours")),
        "{diffs:?}"
    );
    assert!(
        diffs
            .iter()
            .any(|d| d.contains("spec.adoptionPolicy:field: only upstream")),
        "{diffs:?}"
    );
    assert!(
        diffs.iter().any(|d| d.contains("spec.deletionPolicy:type")),
        "{diffs:?}"
    );
}

#[test]
fn crd_names_and_versions() {
    let pv = crd::package_variant_crd();
    assert_eq!(pv["metadata"]["name"], crd::PACKAGE_VARIANT_CRD);
    let pvs = crd::package_variant_set_crd();
    assert_eq!(pvs["metadata"]["name"], crd::PACKAGE_VARIANT_SET_CRD);
    let versions: Vec<(String, bool, bool)> = pvs["spec"]["versions"]
        .as_array()
        .expect("versions")
        .iter()
        .map(|v| {
            (
                v["name"].as_str().unwrap_or_default().to_string(),
                v["served"].as_bool().unwrap_or_default(),
                v["storage"].as_bool().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        versions,
        vec![
            ("v1alpha1".to_string(), false, false),
            ("v1alpha2".to_string(), true, true)
        ]
    );
}

/// `porch-variants crds` prints what deploy/crds holds; `--for` picks a
/// part.
#[test]
fn the_crds_command_prints_every_crd_of_deploy() {
    let names = |args: &[&str]| -> Vec<String> {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_porch-variants"))
            .arg("crds")
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success());
        let docs = pv_core::yaml::parse_stream(&String::from_utf8(out.stdout).unwrap()).unwrap();
        let mut names: Vec<String> = docs
            .iter()
            .map(|d| {
                pv_core::yaml::to_json(d).unwrap()["metadata"]["name"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        names.sort();
        names
    };
    let mut files: Vec<String> = std::fs::read_dir(deploy_dir().join("crds"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|f| f.ends_with(".yaml"))
        .map(|f| {
            let (group, plural) = f.trim_end_matches(".yaml").split_once('_').unwrap();
            format!("{plural}.{group}")
        })
        .collect();
    files.sort();
    assert_eq!(names(&[]), files);
    assert_eq!(
        names(&["--for", "variants"]),
        [
            "packagevariants.config.porch.kpt.dev",
            "packagevariantsets.config.porch.kpt.dev"
        ]
    );
    assert_eq!(
        names(&["--for", "packagerevisions"]),
        [
            "packagerevisions.porch.kpt.dev",
            "repositories.config.porch.kpt.dev"
        ]
    );
}
