//! Golden tests of the YAML layer against upstream Porch's own byte-exact
//! expectations: the `expected/resources/*` files of the
//! `pv-ensure-package-context`, `pv-ensure-krm-functions` and
//! `pv-ensure-config-injection` conformance cases are reproduced by the
//! core's mutations (`pv_core::variant::mutate`), which make Porch's edits
//! through this crate's editing API.
//!
//! What is under test is that parsing, editing and writing produce exactly
//! the bytes Porch's kyaml-based code writes (comments, key order, quoting,
//! sequence style).

use std::collections::BTreeMap;
use std::path::Path;

use porch_variants_tests::{conformance_dir, read};
use pv_core::api::PackageVariant;
use pv_core::variant::mutate::{
    ensure_config_injection, ensure_krm_functions, ensure_package_context, PrrRef,
};
use pv_core::yaml::{self, Kind};
use serde_json::Value;

/// The case's input files (`input/resources/*`), by name.
fn resources(dir: &Path, side: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let res = dir.join(side).join("resources");
    if let Ok(entries) = std::fs::read_dir(&res) {
        for e in entries.flatten() {
            out.insert(
                e.file_name().to_string_lossy().into_owned(),
                read(&e.path()),
            );
        }
    }
    out
}

fn packagevariant(dir: &Path) -> PackageVariant {
    let doc =
        yaml::parse_document(&read(&dir.join("input/packagevariant.yaml"))).expect("pv parses");
    serde_json::from_value(yaml::to_json(&doc).expect("pv converts")).expect("pv is typed")
}

const PRR: PrrRef<'static> = PrrRef {
    namespace: "default",
    name: "prr",
};

fn run_group(group: &str, edit: impl Fn(&Path, &PackageVariant, &mut BTreeMap<String, String>)) {
    let root = conformance_dir();
    let dir = root.join("cases").join(group);
    let mut cases: Vec<_> = std::fs::read_dir(&dir)
        .expect("group exists")
        .flatten()
        .map(|e| e.path())
        .collect();
    cases.sort();
    let mut failures = Vec::new();
    for case in &cases {
        let pv = packagevariant(case);
        let mut files = resources(case, "input");
        edit(case, &pv, &mut files);
        for (name, want) in resources(case, "expected") {
            let got = files.get(&name).cloned().unwrap_or_default();
            if got != want {
                failures.push(format!(
                    "{}: {name}\n--- want\n{want}\n--- got\n{got}",
                    case.display()
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(!cases.is_empty());
}

#[test]
fn package_context_edits_match_porch_byte_for_byte() {
    run_group("pv-ensure-package-context", |_, pv, files| {
        ensure_package_context(pv, PRR, files).expect("package context");
    });
}

#[test]
fn pipeline_edits_match_porch_byte_for_byte_and_are_idempotent() {
    run_group("pv-ensure-krm-functions", |_, pv, files| {
        ensure_krm_functions(pv, PRR, files).expect("pipeline");
        let once = files.clone();
        ensure_krm_functions(pv, PRR, files).expect("pipeline");
        assert_eq!(&once, files, "a second pass changes nothing");
    });
}

#[test]
fn config_injection_edits_match_porch_byte_for_byte() {
    run_group("pv-ensure-config-injection", |case, pv, files| {
        let cluster_text = read(&case.join("input/cluster-objects.yaml"));
        let cluster: Vec<Value> = yaml::parse_stream(&cluster_text)
            .expect("cluster objects parse")
            .iter()
            .map(|d| yaml::to_json(d).expect("converts"))
            .filter(|v| v.is_object() && v.get("kind").is_some() && !matches!(v, Value::Null))
            .collect();
        ensure_config_injection(pv, PRR, files, &cluster).expect("injection");
    });
}

#[test]
fn new_fields_are_appended_and_ambiguous_strings_quoted() {
    let mut doc = yaml::parse_document("a: 1 # one\n").expect("parses");
    doc.set_annotation("x", "y").expect("annotates");
    doc.set_annotation("z", "plain").expect("annotates");
    assert_eq!(doc.kind, Kind::Document);
    // `y` is a YAML 1.1 boolean, which yaml.v3 quotes on output.
    assert_eq!(
        yaml::to_string(&doc).expect("emits"),
        "a: 1 # one\nmetadata:\n  annotations:\n    x: \"y\"\n    z: plain\n"
    );
}
