//! Golden tests of the YAML layer against upstream Porch's own byte-exact
//! expectations: the `expected/resources/*` files of the
//! `pv-ensure-package-context`, `pv-ensure-krm-functions` and
//! `pv-ensure-config-injection` conformance cases are reproduced by making
//! the same edits Porch makes, through this crate's editing API.
//!
//! The edits follow Porch's `ensurePackageContext`, `ensureKRMFunctions` and
//! `ensureConfigInjection` step by step; what is under test is that parsing,
//! editing and writing produce exactly the bytes Porch's kyaml-based code
//! writes (comments, key order, quoting, sequence style).

use std::collections::BTreeMap;
use std::path::Path;

use porch_variants_tests::{conformance_dir, read};
use pv_core::yaml::{self, Kind, Node};
use serde_json::{json, Map, Value};

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

fn pv_spec(dir: &Path) -> Value {
    let doc =
        yaml::parse_document(&read(&dir.join("input/packagevariant.yaml"))).expect("pv parses");
    yaml::to_json(&doc).expect("pv converts")["spec"].clone()
}

fn object_string(doc: &Node) -> String {
    yaml::to_string(doc).expect("emits")
}

/// Porch's `ensurePackageContext`.
fn ensure_package_context(spec: &Value, files: &mut BTreeMap<String, String>) {
    let ctx = &spec["packageContext"];
    let data = ctx["data"].as_object().cloned().unwrap_or_default();
    let remove: Vec<String> = ctx["removeKeys"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    if data.is_empty() && remove.is_empty() {
        return;
    }
    let text = files
        .get("package-context.yaml")
        .expect("package-context.yaml present");
    let mut cm = yaml::parse_document(text).expect("package context parses");
    assert_eq!(cm.get_str(&["kind"]), Some("ConfigMap"));
    let current =
        yaml::to_json(cm.get_path(&["data"]).expect("data field")).expect("data converts");
    let mut merged: Map<String, Value> = current.as_object().cloned().unwrap_or_default();
    for (k, v) in data {
        merged.insert(k, v);
    }
    for k in remove {
        merged.remove(&k);
    }
    cm.root_mut()
        .set_json("data", &Value::Object(merged))
        .expect("sets data");
    files.insert("package-context.yaml".into(), object_string(&cm));
}

/// Porch's `isPackageVariantFunc`.
fn is_pv_func(f: &Node, pv: &str) -> bool {
    let Some(name) = f.get_str(&["name"]) else {
        return false;
    };
    let parts: Vec<&str> = name.split('.').collect();
    parts.len() == 4
        && parts[0] == "PackageVariant"
        && parts[1] == pv
        && parts[3].parse::<i64>().is_ok()
}

/// Porch's `ensureKRMFunctions`.
fn ensure_krm_functions(pv_name: &str, spec: &Value, files: &mut BTreeMap<String, String>) {
    let mut kptfile = yaml::parse_document(&files["Kptfile"]).expect("Kptfile parses");
    let root = kptfile.root_mut();
    let pipeline = root.upsert_map("pipeline").expect("pipeline");
    for field in ["validators", "mutators"] {
        let mut items: Vec<Node> = spec["pipeline"][field]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
            .map(|(i, f)| {
                let mut f = f.clone();
                let name = f["name"].as_str().unwrap_or("").to_string();
                f["name"] = json!(format!("PackageVariant.{pv_name}.{name}.{i}"));
                yaml::from_json(&f)
            })
            .collect();
        if let Some(existing) = pipeline.get(field) {
            items.extend(
                existing
                    .content
                    .iter()
                    .filter(|f| !is_pv_func(f, pv_name))
                    .cloned(),
            );
        }
        if items.is_empty() {
            pipeline.remove(field);
        } else {
            let mut seq = Node::new_sequence();
            seq.content = items;
            pipeline.set_keep_formatting(field, seq).expect("sets list");
        }
    }
    if pipeline.get("mutators").is_none() && pipeline.get("validators").is_none() {
        root.remove("pipeline");
    }
    files.insert("Kptfile".into(), object_string(&kptfile));
}

/// Porch's `ensureConfigInjection`, with the fake client's objects.
fn ensure_config_injection(spec: &Value, cluster: &[Value], files: &mut BTreeMap<String, String>) {
    let injectors = spec["injectors"].as_array().cloned().unwrap_or_default();
    let mut conditions: Vec<Value> = Vec::new();
    let mut gates: Vec<String> = Vec::new();
    let names: Vec<String> = files
        .keys()
        .filter(|n| n.ends_with(".yaml") && *n != "Kptfile")
        .cloned()
        .collect();
    for name in names {
        let mut docs = yaml::parse_stream(&files[&name]).expect("resource parses");
        let mut changed = false;
        for doc in &mut docs {
            let Some(mode) = doc.annotation("kpt.dev/config-injection").map(String::from) else {
                continue;
            };
            let kind = doc.object_kind().to_string();
            let api = doc.api_version().to_string();
            let ct = format!("config.injection.{kind}.{}", doc.name());
            if mode == "required" {
                gates.push(ct.clone());
            }
            let (group, version) = api.rsplit_once('/').unwrap_or(("", api.as_str()));
            let candidates: Vec<&Value> = cluster
                .iter()
                .filter(|o| o["apiVersion"] == api.as_str() && o["kind"] == kind.as_str())
                .collect();
            let chosen = injectors.iter().find_map(|inj| {
                let ok = inj["group"].as_str().is_none_or(|g| g == group)
                    && inj["version"].as_str().is_none_or(|v| v == version)
                    && inj["kind"].as_str().is_none_or(|k| k == kind);
                if !ok {
                    return None;
                }
                candidates
                    .iter()
                    .find(|o| o["metadata"]["name"] == inj["name"])
                    .copied()
            });
            let condition = match chosen {
                Some(obj) => {
                    let field = if group.is_empty() && kind == "ConfigMap" {
                        "data"
                    } else {
                        "spec"
                    };
                    doc.root_mut()
                        .set_json(field, &obj[field])
                        .expect("injects");
                    let src = obj["metadata"]["name"].as_str().unwrap_or_default();
                    doc.set_annotation("kpt.dev/injected-resource", src)
                        .expect("annotates");
                    changed = true;
                    json!({"type": ct, "status": "True", "reason": "ConfigInjected",
                           "message": format!("injected resource {src:?} from cluster")})
                }
                None => json!({"type": ct, "status": "False", "reason": "NoResourceSelected",
                               "message": "no resource matched any injection selector for this injection point"}),
            };
            conditions.push(condition);
        }
        if changed {
            let text = docs
                .iter()
                .map(object_string)
                .collect::<Vec<_>>()
                .join("---\n");
            files.insert(name, text);
        }
    }
    let mut kptfile = yaml::parse_document(&files["Kptfile"]).expect("Kptfile parses");
    gates.sort();
    gates.dedup();
    conditions.sort_by(|a, b| a["type"].as_str().cmp(&b["type"].as_str()));
    let root = kptfile.root_mut();
    if !gates.is_empty() {
        let gates: Vec<Value> = gates.iter().map(|g| json!({"conditionType": g})).collect();
        root.upsert_map("info")
            .expect("info")
            .set_json("readinessGates", &Value::Array(gates))
            .expect("gates");
    }
    if !conditions.is_empty() {
        root.upsert_map("status")
            .expect("status")
            .set_json("conditions", &Value::Array(conditions))
            .expect("conds");
    }
    files.insert("Kptfile".into(), object_string(&kptfile));
}

fn run_group(group: &str, edit: impl Fn(&Path, &Value, &mut BTreeMap<String, String>)) {
    let Some(root) = conformance_dir() else {
        eprintln!("skipped: ../shared/conformance/porch-upstream is absent");
        return;
    };
    let dir = root.join("cases").join(group);
    let mut cases: Vec<_> = std::fs::read_dir(&dir)
        .expect("group exists")
        .flatten()
        .map(|e| e.path())
        .collect();
    cases.sort();
    let mut failures = Vec::new();
    for case in &cases {
        let spec = pv_spec(case);
        let mut files = resources(case, "input");
        edit(case, &spec, &mut files);
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
    run_group("pv-ensure-package-context", |_, spec, files| {
        ensure_package_context(spec, files)
    });
}

#[test]
fn pipeline_edits_match_porch_byte_for_byte_and_are_idempotent() {
    run_group("pv-ensure-krm-functions", |_, spec, files| {
        ensure_krm_functions("my-pv", spec, files);
        let once = files.clone();
        ensure_krm_functions("my-pv", spec, files);
        assert_eq!(&once, files, "a second pass changes nothing");
    });
}

#[test]
fn config_injection_edits_match_porch_byte_for_byte() {
    run_group("pv-ensure-config-injection", |case, spec, files| {
        let cluster_text = read(&case.join("input/cluster-objects.yaml"));
        let cluster: Vec<Value> = yaml::parse_stream(&cluster_text)
            .expect("cluster objects parse")
            .iter()
            .map(|d| yaml::to_json(d).expect("converts"))
            .filter(|v| v.is_object() && v.get("kind").is_some() && !matches!(v, Value::Null))
            .collect();
        ensure_config_injection(spec, &cluster, files);
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
