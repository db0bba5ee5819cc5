//! Upstream's PackageRevision-controller cases
//! (`conformance/porch-upstream-prc`, see its README) against
//! `pv_core::prc`: each group has an adapter that reads a case's input,
//! calls our decision, and compares with the case's expectation. Every case
//! of every group present must pass.

use porch_variants_tests::prc_cases::{case_dirs, expect, from, yaml, Tally};
use std::collections::BTreeMap;
use std::path::Path;

use pv_core::api::package_revision::v1alpha2::{PackageRevision, Source};
use pv_core::api::package_revision::{PackageCondition, ReadinessGate};
use pv_core::api::{Condition, Lifecycle};
use pv_core::prc::{labels, mergekey, readiness, render, source};
use serde_json::{json, Value};

/// A PackageRevision from a case's flattened keys (`spec.lifecycle`,
/// `annotations['k']`, `status.conditions`, ...).
fn flat_pr(flat: &Value) -> Result<PackageRevision, String> {
    let mut pr = PackageRevision::default();
    let Some(map) = flat.as_object() else {
        return Ok(pr);
    };
    for (key, v) in map {
        let s = || v.as_str().unwrap_or_default().to_string();
        match key.as_str() {
            "spec.lifecycle" => pr.spec.lifecycle = from(v, key)?,
            "spec.source" => {
                pr.spec.source = if v.is_null() {
                    None
                } else {
                    Some(from::<Source>(v, key)?)
                }
            }
            "status.observedPrrResourceVersion" => pr.status.observed_prr_resource_version = s(),
            "status.renderingPrrResourceVersion" => pr.status.rendering_prr_resource_version = s(),
            "status.creationSource" => pr.status.creation_source = s(),
            "status.conditions" => pr.status.conditions = conditions(v)?,
            k => {
                let Some(name) = k
                    .strip_prefix("annotations['")
                    .and_then(|r| r.strip_suffix("']"))
                else {
                    return Err(format!("unknown case key {k}"));
                };
                if !v.is_null() {
                    pr.metadata.annotations.insert(name.to_string(), s());
                }
            }
        }
    }
    Ok(pr)
}

/// Conditions as cases write them (type and status, the rest optional).
fn conditions(v: &Value) -> Result<Vec<Condition>, String> {
    let mut out = Vec::new();
    for c in v.as_array().into_iter().flatten() {
        out.push(Condition {
            type_: c["type"].as_str().unwrap_or_default().to_string(),
            status: c["status"].as_str().unwrap_or_default().to_string(),
            reason: c["reason"].as_str().unwrap_or_default().to_string(),
            message: c["message"].as_str().unwrap_or_default().to_string(),
            ..Condition::default()
        });
    }
    Ok(out)
}

fn util(case: &Path) -> Result<(), String> {
    let input = yaml(&case.join("input/case.yaml"));
    let want = yaml(&case.join("expected/output.yaml"));
    if let Some(lc) = input.get("lifecycle") {
        let lc: Lifecycle = from(lc, "lifecycle")?;
        return expect(json!({"published": lc.is_published()}), &want);
    }
    if let Some(list) = input.get("cases") {
        let results: Result<Vec<bool>, String> = list
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| flat_pr(c).map(|pr| pr.spec.lifecycle.is_published()))
            .collect();
        return expect(json!({"results": results?}), &want);
    }
    if input.get("spec.source").is_some() {
        let pr = flat_pr(&input)?;
        return expect(
            json!({"packageCreation": readiness::is_package_creation(pr.spec.source.as_ref())}),
            &want,
        );
    }
    let gates: Vec<ReadinessGate> = from_list(&input["readinessGates"], "readinessGates")?;
    let conds: Vec<PackageCondition> = from_list(&input["packageConditions"], "packageConditions")?;
    expect(json!({"ready": readiness::is_ready(&gates, &conds)}), &want)
}

fn from_list<T: serde::de::DeserializeOwned>(v: &Value, what: &str) -> Result<Vec<T>, String> {
    if v.is_null() {
        return Ok(Vec::new());
    }
    serde_json::from_value(v.clone()).map_err(|e| format!("{what}: {e}"))
}

fn kptdata(case: &Path) -> Result<(), String> {
    let kptfile = yaml(&case.join("input/kptfile.yaml"));
    let want = yaml(&case.join("expected/output.yaml"));
    let key = want
        .as_object()
        .and_then(|m| m.keys().next().cloned())
        .ok_or("no expected output")?;
    let got = match key.as_str() {
        "packageConditions" => json!(readiness::package_conditions(&kptfile)),
        "readinessGates" => json!(readiness::readiness_gates(&kptfile)),
        "packageMetadata" => json!(readiness::package_metadata(&kptfile)),
        "locator" => json!(readiness::locator(&kptfile["locator"])),
        k => return Err(format!("unknown expectation {k}")),
    };
    // Nil and empty lists differ here: compare the top level exactly.
    if got.is_null() != want[&key].is_null() {
        return Err(format!("got {got}, want {}", want[&key]));
    }
    expect(json!({ key.clone(): got }), &want)
}

fn render_trigger(case: &Path) -> Result<(), String> {
    let input = yaml(&case.join("input/case.yaml"));
    let want = yaml(&case.join("expected/output.yaml"));
    let pr = flat_pr(&input["pr"])?;
    expect(json!(render::render_trigger(&pr)), &want)
}

fn render_helpers(case: &Path) -> Result<(), String> {
    let input = yaml(&case.join("input/case.yaml"));
    let want = yaml(&case.join("expected/output.yaml"));
    let str_of = |k: &str| input[k].as_str().unwrap_or_default().to_string();
    if input.get("currentAnnotation").is_some() {
        let stale = render::is_render_stale(&str_of("currentAnnotation"), &str_of("rendered"));
        return expect(json!({ "stale": stale }), &want);
    }
    if input.get("status.conditions").is_some() {
        let conds = conditions(&input["status.conditions"])?;
        return expect(
            json!({"renderedTrue": render::is_rendered_true(&conds)}),
            &want,
        );
    }
    if input.get("requested").is_some() {
        let annotations: BTreeMap<String, String> = if input["annotations"].is_null() {
            BTreeMap::new()
        } else {
            from(&input["annotations"], "annotations")?
        };
        let observed = render::observed_version_after_render(&str_of("requested"), &annotations);
        return expect(json!({ "observed": observed }), &want);
    }
    let type_ = want["type"].as_str().ok_or("no expected type")?;
    let generation = input["generation"].as_i64().ok_or("no generation")?;
    let c = render::condition(
        type_,
        generation,
        &str_of("status"),
        &str_of("reason"),
        &str_of("message"),
        "<now>",
    );
    let mut got = serde_json::to_value(&c).map_err(|e| e.to_string())?;
    // The message is written even when empty.
    got["message"] = json!(c.message);
    expect(got, &want)
}

fn latest_labels(case: &Path) -> Result<(), String> {
    let pr: PackageRevision = from(
        &yaml(&case.join("input/packagerevision.yaml")),
        "packagerevision",
    )?;
    let want = yaml(&case.join("expected/calls.yaml"));
    let calls = want["calls"].as_array().cloned().unwrap_or_default();
    let list = yaml(&case.join("input/list.yaml"));
    if list.is_null() {
        // ensureLatestRevisionLabel: one merge patch to "false", or none.
        let patch = labels::ensure_label(&pr);
        let patched = calls.iter().any(|c| c["call"] == "client.Patch");
        if patch.is_some() != patched {
            return Err(format!("patch {patch:?}, upstream patches: {patched}"));
        }
        if let Some(body) = patch {
            let derived = yaml(&case.join("expected/patch-body-derived.json"));
            if !derived.is_null() && body != derived {
                return Err(format!("patch body {body}, want {derived}"));
            }
        }
        return Ok(());
    }
    if list.get("error").is_some() {
        // A List error is logged: nothing to decide, nothing patched.
        return if calls.iter().any(|c| c["call"] == "client.Patch") {
            Err("a failed List patches nothing".into())
        } else {
            Ok(())
        };
    }
    let items: Vec<PackageRevision> = from_list(&list["items"], "items")?;
    let got = labels::latest_revision(&items);
    if let Some(n) = want["patchCount"].as_u64() {
        if got.patches.len() as u64 != n {
            return Err(format!("patches {:?}, want {n}", got.patches));
        }
    }
    if let Some(latest) = want["latest"].as_str() {
        if got.latest.as_deref() != Some(latest) {
            return Err(format!("latest {:?}, want {latest}", got.latest));
        }
    }
    // Each patch upstream asserts (`name: labels[...] -> value`, or
    // `object.name == name` with `labels[...] == 'value'`).
    for c in calls.iter().filter(|c| c["call"] == "client.Patch") {
        let asserts: Vec<String> = c["upstreamAsserts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|a| a.as_str().map(str::to_string))
            .collect();
        for a in &asserts {
            if let Some((name, rest)) = a.split_once(": ") {
                let value = rest.rsplit("-> ").next().unwrap_or_default().trim();
                if !got.patches.iter().any(|(n, v)| n == name && *v == value) {
                    return Err(format!("no patch {name} -> {value} in {:?}", got.patches));
                }
            } else if let Some(name) = a.strip_prefix("object.name == ") {
                if !got.patches.iter().any(|(n, _)| n == name) {
                    return Err(format!("no patch of {name} in {:?}", got.patches));
                }
            }
        }
    }
    Ok(())
}

/// A case's `input/files/` as a file map.
fn input_files(case: &Path) -> BTreeMap<String, String> {
    let dir = case.join("input/files");
    let mut files = BTreeMap::new();
    for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        files.insert(name, std::fs::read_to_string(e.path()).unwrap_or_default());
    }
    files
}

fn merge_keys(case: &Path) -> Result<(), String> {
    let want = yaml(&case.join("expected/output.yaml"));
    let files = input_files(case);
    if let Some(path) = want.get("path") {
        let docs = mergekey::read_resources(&files)?.0;
        let doc = docs
            .first()
            .and_then(|(_, d)| d.first())
            .ok_or("no resource")?;
        return expect(json!(mergekey::default_path(doc)), path);
    }
    let result = mergekey::add_merge_comments(&files);
    if want["error"].get("any").is_some() {
        return match result {
            Err(_) => Ok(()),
            Ok(_) => Err("no error for a file that does not parse".into()),
        };
    }
    let out = result?;
    check_files(&out, &want)?;
    if want.get("result") == Some(&json!({})) && !out.is_empty() {
        return Err(format!("files {:?} from no input", out.keys()));
    }
    if let Some(n) = want.get("nodeCount").and_then(Value::as_u64) {
        let (resources, other) = mergekey::read_resources(&files)?;
        let count: usize = resources.iter().map(|(_, d)| d.len()).sum();
        if count as u64 != n {
            return Err(format!("{count} resources, want {n}"));
        }
        expect(json!(other), &want["extra"])?;
        // Files other than resources pass through byte for byte.
        for (k, v) in &other {
            if out.get(k) != Some(v) {
                return Err(format!("{k} changed"));
            }
        }
    }
    for e in std::fs::read_dir(case.join("expected/files"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let name = e.file_name().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(e.path()).unwrap_or_default();
        if out.get(&name) != Some(&text) {
            return Err(format!("{name}: got {:?}, want {text:?}", out.get(&name)));
        }
    }
    Ok(())
}

fn kptfile_from_resources(case: &Path) -> Result<(), String> {
    let want = yaml(&case.join("expected/output.yaml"));
    let files: BTreeMap<String, String> =
        from(&yaml(&case.join("input/resources.yaml")), "resources")?;
    let got = readiness::kptfile_from_resources(&files);
    if want["error"].as_bool() == Some(true) {
        return match got {
            Err(_) => Ok(()),
            Ok(_) => Err("no error for a Kptfile that does not parse".into()),
        };
    }
    let kptfile = got?;
    if want["kptfile"] == "zero value" {
        return expect(kptfile, &Value::Null);
    }
    if let Some(name) = want.get("kptfile.metadata.name") {
        expect(kptfile["metadata"]["name"].clone(), name)?;
    }
    if let Some(n) = want.get("len(kptfile.info.readinessGates)") {
        let gates = readiness::readiness_gates(&kptfile).unwrap_or_default();
        expect(json!(gates.len()), n)?;
    }
    Ok(())
}

/// `hasKeys` and `<file> contains` of an expected `resources`.
fn check_files(files: &BTreeMap<String, String>, want: &Value) -> Result<(), String> {
    for k in want["hasKeys"].as_array().into_iter().flatten() {
        let k = k.as_str().unwrap_or_default();
        if !files.contains_key(k) {
            return Err(format!("{k} missing from {:?}", files.keys()));
        }
    }
    for (key, needles) in want.as_object().into_iter().flatten() {
        let Some(file) = key.strip_suffix(" contains") else {
            continue;
        };
        let text = files.get(file).ok_or(format!("{file} missing"))?;
        for n in needles.as_array().into_iter().flatten() {
            let n = n.as_str().unwrap_or_default();
            if !text.contains(n) {
                return Err(format!("{file} lacks {n:?}:\n{text}"));
            }
        }
    }
    Ok(())
}

fn source_init(case: &Path) -> Result<(), String> {
    let want = yaml(&case.join("expected/output.yaml"));
    let call = yaml(&case.join("input/call.yaml"));
    let (files, creation) = if !call.is_null() {
        let init = from(&call["spec"], "spec")?;
        let name = call["pkgName"].as_str().unwrap_or_default();
        (source::init_package(name, &init)?, None)
    } else {
        let pr: PackageRevision = from(
            &yaml(&case.join("input/packagerevision.yaml")),
            "packagerevision",
        )?;
        let creation = source::creation_source(&pr)?;
        let init = pr
            .spec
            .source
            .as_ref()
            .and_then(|s| s.init.clone())
            .ok_or("not an init source")?;
        (
            source::init_package(&pr.spec.package_name, &init)?,
            creation,
        )
    };
    if let Some(c) = want.get("creationSource") {
        expect(json!(creation), c)?;
    }
    check_files(&files, &want["resources"])?;
    if let Some(all) = want.get("derived_full_file_set") {
        expect(json!(files.keys().collect::<Vec<_>>()), all)?;
    }
    Ok(())
}

/// `stripKptfileStatus` and `copyResources` (the returned map is the copy).
fn strip_status(case: &Path) -> Result<(), String> {
    let want = yaml(&case.join("expected/output.yaml"));
    let map = yaml(&case.join("input/map.yaml"));
    if !map.is_null() {
        let src: BTreeMap<String, String> = from(&map, "map")?;
        let mut copy = pv_core::merge::strategy::strip_kptfile_status(&src);
        expect(json!(copy), &want["copy"])?;
        copy.insert("a".to_string(), "changed".to_string());
        copy.insert("c".to_string(), "added".to_string());
        return expect(json!(src), &want["sourceAfterMutatingCopy"]);
    }
    let out = pv_core::merge::strategy::strip_kptfile_status(&input_files(case));
    for (key, v) in want.as_object().into_iter().flatten() {
        if let Some(file) = key.strip_suffix(" notContains") {
            let text = out.get(file).ok_or(format!("{file} missing"))?;
            for n in v.as_array().into_iter().flatten() {
                let n = n.as_str().unwrap_or_default();
                if text.contains(n) {
                    return Err(format!("{file} still has {n:?}:\n{text}"));
                }
            }
        } else if key.ends_with(" contains") {
            continue; // below
        } else if out.get(key).map(String::as_str) != v.as_str() {
            return Err(format!("{key}: got {:?}, want {v}", out.get(key)));
        }
    }
    check_files(&out, &want)?;
    for e in std::fs::read_dir(case.join("expected/files"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let name = e.file_name().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(e.path()).unwrap_or_default();
        if out.get(&name) != Some(&text) {
            return Err(format!("{name}: got {:?}, want {text:?}", out.get(&name)));
        }
    }
    Ok(())
}

type Adapter = fn(&Path) -> Result<(), String>;

const GROUPS: &[(&str, Adapter)] = &[
    ("api-v1alpha2-util", util),
    ("api-v1alpha2-kptdata-conversion", kptdata),
    ("prc-render-trigger", render_trigger),
    ("prc-render-helpers", render_helpers),
    ("prc-labels-latest-revision", latest_labels),
    ("prc-mergekey", merge_keys),
    ("prc-kptfile-from-resources", kptfile_from_resources),
    ("prc-source-init", source_init),
    ("prc-source-strip-kptfile-status", strip_status),
];

/// Runs every case of [`GROUPS`].
pub fn run() -> Tally {
    let (mut passed, mut failed) = (0, Vec::new());
    for (group, adapter) in GROUPS {
        for (name, case) in case_dirs(group) {
            match adapter(&case) {
                Ok(()) => passed += 1,
                Err(e) => failed.push(format!("{name}: {e}")),
            }
        }
    }
    Tally {
        passed,
        failed,
        ..Tally::default()
    }
}
