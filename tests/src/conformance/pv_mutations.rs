//! Conformance adapters: the PackageVariant mutations groups (package
//! context, pipeline functions, config injection and its parts).
//!
//! Each adapter runs the core function that corresponds to the upstream
//! function under test and compares as the case's README says upstream
//! does: resource files byte for byte, error strings exactly, the Kptfile
//! of `pv-set-injection-conditions-and-gates` as typed structs.

use std::collections::BTreeMap;
use std::path::Path;

use pv_core::api::PackageVariant;
use pv_core::variant::mutate::{
    ensure_config_injection, ensure_krm_functions, ensure_package_context, find_injection_points,
    kptfiles_equal, objects, parse_package_files, set_injection_conditions_and_gates,
    validate_injection_points, InjectionPoint, MutationError, PrrRef,
};
use pv_core::yaml;
use serde_json::Value;

use super::{read_opt, read_req, Adapter, CaseResult, Deviation};

/// The groups this module runs.
pub fn adapters() -> Vec<(&'static str, Adapter)> {
    vec![
        ("pv-ensure-package-context", package_context as Adapter),
        ("pv-ensure-krm-functions", krm_functions),
        ("pv-ensure-config-injection", config_injection),
        ("pv-find-injection-points", find_points),
        ("pv-validate-injection-points", validate_points),
        (
            "pv-set-injection-conditions-and-gates",
            conditions_and_gates,
        ),
    ]
}

/// Documented deviations of these groups.
pub const DEVIATIONS: &[Deviation] = &[];

/// A YAML file of the case as JSON.
fn yaml_json(dir: &Path, rel: &str) -> Result<Value, String> {
    let text = read_req(dir, rel)?;
    let doc = yaml::parse_document(&text).map_err(|e| format!("{rel}: {e}"))?;
    yaml::to_json(&doc).map_err(|e| format!("{rel}: {e}"))
}

/// `input/resources/*` or `expected/resources/*`, by file name.
fn resources(dir: &Path, side: &str) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    let res = dir.join(side).join("resources");
    let entries = std::fs::read_dir(&res).map_err(|e| format!("{}: {e}", res.display()))?;
    for e in entries.flatten() {
        let text = std::fs::read_to_string(e.path()).map_err(|err| format!("{err}"))?;
        out.insert(e.file_name().to_string_lossy().into_owned(), text);
    }
    Ok(out)
}

fn packagevariant(dir: &Path) -> Result<PackageVariant, String> {
    serde_json::from_value(yaml_json(dir, "input/packagevariant.yaml")?)
        .map_err(|e| format!("packagevariant.yaml: {e}"))
}

/// Namespace and name of `input/prr.yaml`.
fn prr_names(dir: &Path) -> Result<(String, String), String> {
    let prr = yaml_json(dir, "input/prr.yaml")?;
    let s = |p: &str| {
        prr.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    Ok((s("/metadata/namespace"), s("/metadata/name")))
}

/// `expected/error.txt`, `None` when empty or absent.
fn expected_error(dir: &Path) -> Option<String> {
    read_opt(dir, "expected/error.txt").filter(|e| !e.is_empty())
}

/// Compares an outcome with the expected error, if any.
fn check_error<T>(dir: &Path, result: Result<T, MutationError>) -> Result<Option<T>, String> {
    match (result, expected_error(dir)) {
        (Ok(v), None) => Ok(Some(v)),
        (Ok(_), Some(want)) => Err(format!("expected error {want:?}, got success")),
        (Err(got), None) => Err(format!("unexpected error: {got}")),
        (Err(got), Some(want)) if got.to_string() == want => Ok(None),
        (Err(got), Some(want)) => Err(format!(
            "error\n  want {want:?}\n  got  {got:?}",
            got = got.to_string()
        )),
    }
}

/// Every expected resource file must equal ours byte for byte, and we must
/// have no other file.
fn compare_files(got: &BTreeMap<String, String>, want: &BTreeMap<String, String>) -> CaseResult {
    let mut diffs = Vec::new();
    for (name, w) in want {
        match got.get(name) {
            Some(g) if g == w => {}
            Some(g) => diffs.push(format!("{name}\n--- want\n{w}--- got\n{g}")),
            None => diffs.push(format!("{name}: missing")),
        }
    }
    for name in got.keys().filter(|n| !want.contains_key(*n)) {
        diffs.push(format!("{name}: unexpected file"));
    }
    if diffs.is_empty() {
        Ok(())
    } else {
        Err(diffs.join("\n"))
    }
}

fn package_context(dir: &Path) -> CaseResult {
    let pv = packagevariant(dir)?;
    let (ns, name) = prr_names(dir)?;
    let mut files = resources(dir, "input")?;
    let prr = PrrRef {
        namespace: &ns,
        name: &name,
    };
    if check_error(dir, ensure_package_context(&pv, prr, &mut files))?.is_some() {
        compare_files(&files, &resources(dir, "expected")?)?;
    }
    Ok(())
}

fn krm_functions(dir: &Path) -> CaseResult {
    let pv = packagevariant(dir)?;
    let (ns, name) = prr_names(dir)?;
    let mut files = resources(dir, "input")?;
    let prr = PrrRef {
        namespace: &ns,
        name: &name,
    };
    if check_error(dir, ensure_krm_functions(&pv, prr, &mut files))?.is_some() {
        compare_files(&files, &resources(dir, "expected")?)?;
        // Upstream's test also runs the function again on its own output.
        let once = files.clone();
        ensure_krm_functions(&pv, prr, &mut files).map_err(|e| e.to_string())?;
        if files != once {
            return Err("a second pass changed the Kptfile".into());
        }
    }
    Ok(())
}

fn config_injection(dir: &Path) -> CaseResult {
    let pv = packagevariant(dir)?;
    let (ns, name) = prr_names(dir)?;
    let text = read_req(dir, "input/cluster-objects.yaml")?;
    let candidates = yaml::parse_stream(&text)
        .map_err(|e| e.to_string())?
        .iter()
        .map(yaml::to_json)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    let mut files = resources(dir, "input")?;
    let prr = PrrRef {
        namespace: &ns,
        name: &name,
    };
    if check_error(
        dir,
        ensure_config_injection(&pv, prr, &mut files, &candidates),
    )?
    .is_some()
    {
        compare_files(&files, &resources(dir, "expected")?)?;
    }
    Ok(())
}

/// One entry of an `injection-points.yaml` of the cases.
fn point_from_json(v: &Value) -> InjectionPoint {
    let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    InjectionPoint {
        file: s("file"),
        condition_type: s("conditionType"),
        required: v.get("required").and_then(Value::as_bool).unwrap_or(false),
        errors: v
            .get("errors")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|e| e.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default(),
        injected: v.get("injected").and_then(Value::as_bool).unwrap_or(false),
        injected_name: s("injectedName"),
        ..InjectionPoint::default()
    }
}

fn points_from(dir: &Path, rel: &str) -> Result<Vec<InjectionPoint>, String> {
    match yaml_json(dir, rel)? {
        Value::Array(items) => Ok(items.iter().map(point_from_json).collect()),
        Value::Null => Ok(Vec::new()),
        other => Err(format!("{rel}: expected a list, got {other}")),
    }
}

fn find_points(dir: &Path) -> CaseResult {
    let files = resources(dir, "input")?;
    let Some(parsed) = check_error(dir, parse_package_files(&files))? else {
        return Ok(());
    };
    let mut got = find_injection_points(&parsed);
    got.sort_by(|a, b| a.condition_type.cmp(&b.condition_type));
    let want = points_from(dir, "expected/injection-points.yaml")?;
    let simplify = |p: &InjectionPoint| {
        (
            p.file.clone(),
            p.required,
            p.condition_type.clone(),
            p.errors.clone(),
        )
    };
    let got: Vec<_> = got.iter().map(simplify).collect();
    let want: Vec<_> = want.iter().map(simplify).collect();
    if got == want {
        Ok(())
    } else {
        Err(format!("injection points\n  want {want:?}\n  got  {got:?}"))
    }
}

fn validate_points(dir: &Path) -> CaseResult {
    let points = points_from(dir, "input/injection-points.yaml")?;
    check_error(dir, validate_injection_points(&points)).map(|_| ())
}

fn conditions_and_gates(dir: &Path) -> CaseResult {
    let points = points_from(dir, "input/injection-points.yaml")?;
    let input = read_req(dir, "input/kptfile.yaml")?;
    let want = read_req(dir, "expected/kptfile.yaml")?;
    let mut kptfile = objects::parse_object(&input).map_err(|e| e.to_string())?;
    set_injection_conditions_and_gates(&mut kptfile, &points).map_err(|e| e.to_string())?;
    let got = objects::emit_object(&kptfile).map_err(|e| e.to_string())?;
    if kptfiles_equal(&got, &want) {
        Ok(())
    } else {
        Err(format!("Kptfile differs\n--- want\n{want}--- got\n{got}"))
    }
}
