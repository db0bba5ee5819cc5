//! Conformance adapters: the PackageVariant decision groups (validation,
//! upstream resolution, downstream discovery and adoption, delete-or-orphan,
//! naming, draft templates).
//!
//! Planned writes are rendered as upstream's fake client prints its calls
//! (`creating object: <name>`, `updating object: <name>`, `deleting object:
//! <name>`), and objects are compared by value after dropping nulls and
//! empty maps (Go's struct marshal writes `status: {publishTimestamp: null}`).

use std::path::Path;

use pv_core::api::package_revision::PackageRevision;
use pv_core::api::package_variant::{DeletionPolicy, PackageVariant, Upstream};
use pv_core::variant::downstream::{delete_or_orphan, discover_downstreams, PrAction};
use pv_core::variant::drafts::{edit_draft, upgrade_draft};
use pv_core::variant::naming::{
    generate_pv_func_name, is_package_variant_func, new_workspace_name,
};
use pv_core::variant::upstream::{published_upstream_by_revision, resolve_upstream};
use pv_core::variant::validate::{
    combine_errors, validate, validate_package_variant, validate_upstream,
};
use pv_core::yaml;
use serde_json::{Map, Value};

use super::{read_opt, read_req, Adapter, CaseResult, Deviation};

/// The groups this module runs.
pub fn adapters() -> Vec<(&'static str, Adapter)> {
    vec![
        ("pv-adoption-policy", downstream_prs as Adapter),
        ("pv-create-drafts", create_drafts),
        ("pv-delete-or-orphan", delete_or_orphan_case),
        ("pv-generate-func-name", generate_func_name),
        ("pv-get-downstream-prs", downstream_prs),
        (
            "pv-get-published-upstream-by-revision",
            published_upstream_sequence,
        ),
        ("pv-get-upstream-pr", upstream_pr_sequence),
        ("pv-is-package-variant-func", package_variant_func),
        ("pv-is-valid-upstream", valid_upstream_sequence),
        ("pv-new-workspace-name", workspace_name),
        ("pv-validate", validate_case),
    ]
}

/// Documented deviations of these groups (also in
/// `tests/conformance/DEVIATIONS.md`).
pub const DEVIATIONS: &[Deviation] = &[
    Deviation {
        case: "pv-get-upstream-pr/sequence",
        reason: "upstream ignores spec.upstream.revision and, without workspaceName, resolves the \
                 `main` branch placeholder; we honour a positive revision and otherwise follow the \
                 latest published revision, never the placeholder (the steps expecting `main` to \
                 be found fail)",
    },
    Deviation {
        case: "pv-is-valid-upstream/sequence",
        reason: "upstream's isValidUpstream forces spec.upstream.revision to -1 so the revision \
                 is never used; our validation leaves it unchanged (the messages match)",
    },
    Deviation {
        case: "pv-is-package-variant-func/additional-dots",
        reason: "upstream only recognises names with exactly four dot-separated parts, so \
                 functions of dotted PackageVariant or function names are duplicated on every \
                 reconcile; `PackageVariant.too.many.dots.0` is what PackageVariant `too` \
                 generates for function `many.dots`, so we recognise it",
    },
];

// ----------------------------------------------------------------- input --

fn yaml_value(text: &str, what: &str) -> Result<Value, String> {
    let doc = yaml::parse_document(text).map_err(|e| format!("{what}: {e}"))?;
    yaml::to_json(&doc).map_err(|e| format!("{what}: {e}"))
}

fn yaml_file(dir: &Path, rel: &str) -> Result<Value, String> {
    yaml_value(&read_req(dir, rel)?, rel)
}

fn yaml_stream(text: &str, what: &str) -> Result<Vec<Value>, String> {
    let docs = yaml::parse_stream(text).map_err(|e| format!("{what}: {e}"))?;
    let mut out = Vec::new();
    for doc in &docs {
        let v = yaml::to_json(doc).map_err(|e| format!("{what}: {e}"))?;
        if !v.is_null() {
            out.push(v);
        }
    }
    Ok(out)
}

fn to_pv(v: Value, what: &str) -> Result<PackageVariant, String> {
    serde_json::from_value(v).map_err(|e| format!("{what}: not a PackageVariant: {e}"))
}

fn to_pr(v: Value, what: &str) -> Result<PackageRevision, String> {
    serde_json::from_value(v).map_err(|e| format!("{what}: not a PackageRevision: {e}"))
}

fn to_upstream(v: Value, what: &str) -> Result<Upstream, String> {
    serde_json::from_value(v).map_err(|e| format!("{what}: not an Upstream: {e}"))
}

fn pv_file(dir: &Path) -> Result<PackageVariant, String> {
    to_pv(
        yaml_file(dir, "input/packagevariant.yaml")?,
        "packagevariant.yaml",
    )
}

/// `items` of a PackageRevisionList (absent = empty).
fn pr_list(dir: &Path, rel: &str) -> Result<Vec<PackageRevision>, String> {
    let v = yaml_file(dir, rel)?;
    let items = match v.get("items") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items.clone(),
        Some(other) => return Err(format!("{rel}: items is not a list: {other}")),
    };
    items
        .into_iter()
        .enumerate()
        .map(|(i, v)| to_pr(v, &format!("{rel} items[{i}]")))
        .collect()
}

/// A trimmed text file (the expectations have no final newline, but a
/// stray one must not matter).
fn text(dir: &Path, rel: &str) -> Result<String, String> {
    Ok(read_req(dir, rel)?.trim_end_matches('\n').to_string())
}

// --------------------------------------------------------------- compare --

/// Drops nulls, then empty maps and lists, recursively: Go's zero values
/// that its struct marshal writes and our serde skips.
fn normalize(v: &Value) -> Option<Value> {
    match v {
        Value::Null => None,
        Value::Object(m) => {
            let out: Map<String, Value> = m
                .iter()
                .filter_map(|(k, v)| normalize(v).map(|v| (k.clone(), v)))
                .collect();
            (!out.is_empty()).then_some(Value::Object(out))
        }
        Value::Array(a) => {
            let out: Vec<Value> = a
                .iter()
                .map(|v| normalize(v).unwrap_or(Value::Null))
                .collect();
            (!out.is_empty()).then_some(Value::Array(out))
        }
        other => Some(other.clone()),
    }
}

fn same_value(expected: &Value, actual: &Value, what: &str) -> CaseResult {
    let (e, a) = (normalize(expected), normalize(actual));
    if e == a {
        Ok(())
    } else {
        Err(format!(
            "{what} differs\n  expected: {}\n  actual:   {}",
            e.unwrap_or(Value::Null),
            a.unwrap_or(Value::Null)
        ))
    }
}

fn is_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
    }
}

/// Every field of `expected` has that value in `actual` (a field missing
/// from `actual` is its zero value).
fn subset(expected: &Value, actual: Option<&Value>, path: &str) -> CaseResult {
    match (expected, actual) {
        (e, None) if is_zero(e) => Ok(()),
        (e, None) => Err(format!("{path}: expected {e}, missing")),
        (Value::Object(em), Some(Value::Object(am))) => {
            for (k, ev) in em {
                subset(ev, am.get(k), &format!("{path}.{k}"))?;
            }
            Ok(())
        }
        (Value::Array(ea), Some(Value::Array(aa))) => {
            if ea.len() != aa.len() {
                return Err(format!(
                    "{path}: expected {} items, got {}",
                    ea.len(),
                    aa.len()
                ));
            }
            for (i, (e, a)) in ea.iter().zip(aa).enumerate() {
                subset(e, Some(a), &format!("{path}[{i}]"))?;
            }
            Ok(())
        }
        (e, Some(a)) if e == a => Ok(()),
        (e, Some(a)) => Err(format!("{path}: expected {e}, got {a}")),
    }
}

fn client_call(action: &PrAction) -> String {
    match action {
        PrAction::Update { object, .. } => format!("updating object: {}", object.metadata.name),
        PrAction::Delete { object } => format!("deleting object: {}", object.metadata.name),
    }
}

fn same_calls(dir: &Path, calls: &[String]) -> CaseResult {
    let expected: Vec<String> = read_req(dir, "expected/client-calls.txt")?
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect();
    if expected == calls {
        Ok(())
    } else {
        Err(format!(
            "client calls differ\n  expected: {expected:?}\n  actual:   {calls:?}"
        ))
    }
}

fn json<T: std::fmt::Debug>(value: &T, to: impl Fn(&T) -> serde_json::Result<Value>) -> Value {
    to(value).unwrap_or_else(|e| Value::String(format!("unserializable {value:?}: {e}")))
}

fn pr_json(pr: &PackageRevision) -> Value {
    json(pr, |p| serde_json::to_value(p))
}

// ------------------------------------------------------------------ cases --

/// `pv-get-downstream-prs`, `pv-adoption-policy`: discovery's result and
/// planned writes.
fn downstream_prs(dir: &Path) -> CaseResult {
    let pv = pv_file(dir)?;
    let prs = pr_list(dir, "input/packagerevisionlist.yaml")?;
    let valid = validate(&pv).map_err(|e| format!("packagevariant.yaml is invalid: {e}"))?;
    let found = discover_downstreams(&valid, &prs).map_err(|e| e.to_string())?;
    let calls: Vec<String> = found.actions.iter().map(client_call).collect();
    same_calls(dir, &calls)?;
    let expected = yaml_stream(
        &read_req(dir, "expected/downstreams.yaml")?,
        "downstreams.yaml",
    )?;
    let actual: Vec<Value> = found.revisions.iter().map(pr_json).collect();
    same_value(
        &Value::Array(expected),
        &Value::Array(actual),
        "downstreams",
    )
}

/// `pv-delete-or-orphan`: the write decided for one owned revision.
fn delete_or_orphan_case(dir: &Path) -> CaseResult {
    let pv = pv_file(dir)?;
    let pr = to_pr(
        yaml_file(dir, "input/packagerevision.yaml")?,
        "packagerevision.yaml",
    )?;
    let policy = DeletionPolicy::from_spec(&pv.spec.deletion_policy)
        .ok_or_else(|| format!("unknown deletionPolicy {:?}", pv.spec.deletion_policy))?;
    let action = delete_or_orphan(&pr, &pv.metadata.uid, policy);
    let calls: Vec<String> = action.iter().map(client_call).collect();
    same_calls(dir, &calls)?;
    match (
        read_opt(dir, "expected/packagerevision.yaml"),
        action.as_ref(),
    ) {
        (Some(text), Some(PrAction::Update { object, .. })) => same_value(
            &yaml_value(&text, "expected/packagerevision.yaml")?,
            &pr_json(object),
            "packagerevision",
        ),
        (Some(_), other) => Err(format!("expected an updated object, planned {other:?}")),
        (None, _) => Ok(()),
    }
}

/// `pv-create-drafts`: the upgrade and edit draft templates.
fn create_drafts(dir: &Path) -> CaseResult {
    let source = to_pr(
        yaml_file(dir, "input/source-downstream.yaml")?,
        "source-downstream.yaml",
    )?;
    let pv = match read_opt(dir, "input/packagevariant.yaml") {
        Some(_) => pv_file(dir)?,
        None => PackageVariant::default(),
    };
    let mut prs = vec![source.clone()];
    if let Some(extra) = read_opt(dir, "input/prlist-extra.yaml") {
        match yaml_value(&extra, "prlist-extra.yaml")? {
            Value::Array(items) => {
                for (i, v) in items.into_iter().enumerate() {
                    prs.push(to_pr(v, &format!("prlist-extra.yaml[{i}]"))?);
                }
            }
            other => return Err(format!("prlist-extra.yaml is not a list: {other}")),
        }
    }
    let is_upgrade = dir.file_name().is_some_and(|n| n == "upgrade-draft");
    let draft = if is_upgrade {
        let up = pv
            .spec
            .upstream
            .as_ref()
            .ok_or("packagevariant.yaml has no spec.upstream")?;
        let new_upstream = resolve_upstream(up, &prs).map_err(|e| e.to_string())?;
        upgrade_draft(&source, &pv, new_upstream, &prs).map_err(|e| e.to_string())?
    } else {
        edit_draft(&source, &pv, &prs)
    };
    if read_opt(dir, "expected/client-calls.txt").is_some() {
        same_calls(dir, &[format!("creating object: {}", draft.metadata.name)])?;
    }
    // The placeholder stands for the source's name (empty in the edit case),
    // written as a quoted scalar so that an empty name stays a string.
    let quoted = serde_json::to_string(&source.metadata.name).map_err(|e| e.to_string())?;
    let expected_text =
        read_req(dir, "expected/draft.yaml")?.replace("<source.metadata.name>", &quoted);
    let mut expected = yaml_value(&expected_text, "expected/draft.yaml")?;
    if let Some(m) = expected.as_object_mut() {
        // A note, not a field: labels/annotations come from pv.spec only.
        if m.remove("metadata-labels-and-annotations").is_some()
            && (draft.metadata.labels != pv.spec.labels
                || draft.metadata.annotations != pv.spec.annotations)
        {
            return Err(format!(
                "draft labels/annotations {:?}/{:?} are not pv.spec's {:?}/{:?}",
                draft.metadata.labels,
                draft.metadata.annotations,
                pv.spec.labels,
                pv.spec.annotations
            ));
        }
    }
    subset(&expected, Some(&pr_json(&draft)), "draft")
}

/// `pv-generate-func-name`.
fn generate_func_name(dir: &Path) -> CaseResult {
    let args = yaml_file(dir, "input/args.yaml")?;
    let field = |k: &str| args.get(k).cloned().unwrap_or(Value::Null);
    let func = field("funcName").as_str().unwrap_or_default().to_string();
    let pv = field("pvName").as_str().unwrap_or_default().to_string();
    let pos = field("pos")
        .as_u64()
        .and_then(|p| usize::try_from(p).ok())
        .ok_or("args.yaml: pos is not a non-negative integer")?;
    let got = generate_pv_func_name(&func, &pv, pos);
    let want = text(dir, "expected/name.txt")?;
    (got == want)
        .then_some(())
        .ok_or_else(|| format!("expected {want:?}, got {got:?}"))
}

/// `pv-is-package-variant-func`.
fn package_variant_func(dir: &Path) -> CaseResult {
    let function = yaml::parse_document(&read_req(dir, "input/function.yaml")?)
        .map_err(|e| format!("function.yaml: {e}"))?;
    let pv_name = text(dir, "input/pv-name.txt")?;
    let got = is_package_variant_func(&function, &pv_name);
    let want = text(dir, "expected/result.txt")? == "true";
    (got == want)
        .then_some(())
        .ok_or_else(|| format!("expected {want}, got {got}"))
}

/// `pv-new-workspace-name` (upstream's test passes empty package and repo).
fn workspace_name(dir: &Path) -> CaseResult {
    let prs = pr_list(dir, "input/packagerevisionlist.yaml")?;
    let got = new_workspace_name(&prs, "", "");
    let want = text(dir, "expected/workspace-name.txt")?;
    (got == want)
        .then_some(())
        .ok_or_else(|| format!("expected {want:?}, got {got:?}"))
}

/// `pv-validate`: the joined messages.
fn validate_case(dir: &Path) -> CaseResult {
    let pv = pv_file(dir)?;
    let got = combine_errors(&validate_package_variant(&pv));
    let want = read_req(dir, "expected/error.txt")?;
    let want = want.strip_suffix('\n').unwrap_or(&want);
    (got == want)
        .then_some(())
        .ok_or_else(|| format!("expected {want:?}\n  got      {got:?}"))
}

fn steps(dir: &Path) -> Result<Vec<Value>, String> {
    match yaml_file(dir, "input/steps.yaml")?.get("steps") {
        Some(Value::Array(s)) => Ok(s.clone()),
        _ => Err("steps.yaml: no steps list".to_string()),
    }
}

/// Applies `set: {field: value}` to an upstream.
fn set_fields(up: &mut Upstream, set: &Value, what: &str) -> CaseResult {
    let mut v = serde_json::to_value(&*up).map_err(|e| e.to_string())?;
    if let (Some(target), Some(fields)) = (v.as_object_mut(), set.as_object()) {
        for (k, val) in fields {
            target.insert(k.clone(), val.clone());
        }
    }
    *up = to_upstream(v, what)?;
    Ok(())
}

/// A PackageRevision from a step's flat `addPR` map (`name` plus spec
/// fields).
fn step_pr(v: &Value, what: &str) -> Result<PackageRevision, String> {
    let mut spec = v.as_object().cloned().unwrap_or_default();
    let name = spec.remove("name").unwrap_or(Value::Null);
    let mut obj = Map::new();
    if !name.is_null() {
        obj.insert("metadata".into(), serde_json::json!({ "name": name }));
    }
    obj.insert("spec".into(), Value::Object(spec));
    to_pr(Value::Object(obj), what)
}

fn add_prs(step: &Value, prs: &mut Vec<PackageRevision>, i: usize) -> CaseResult {
    if let Some(v) = step.get("prList") {
        prs.clear();
        for (j, p) in v.as_array().into_iter().flatten().enumerate() {
            prs.push(step_pr(p, &format!("step {i} prList[{j}]"))?);
        }
    }
    if let Some(v) = step.get("addPR") {
        prs.push(step_pr(v, &format!("step {i} addPR"))?);
    }
    if let Some(Value::Array(list)) = step.get("addPRs") {
        for (j, p) in list.iter().enumerate() {
            prs.push(step_pr(p, &format!("step {i} addPRs[{j}]"))?);
        }
    }
    Ok(())
}

fn step_upstream(step: &Value, up: &mut Upstream, i: usize) -> CaseResult {
    if let Some(v) = step.get("upstream") {
        *up = to_upstream(v.clone(), &format!("step {i} upstream"))?;
    }
    if let Some(set) = step.get("set") {
        set_fields(up, set, &format!("step {i} set"))?;
    }
    Ok(())
}

/// `pv-get-upstream-pr`: a cumulative sequence of lookups.
fn upstream_pr_sequence(dir: &Path) -> CaseResult {
    let mut up = Upstream::default();
    let mut prs = Vec::new();
    for (i, step) in steps(dir)?.iter().enumerate() {
        step_upstream(step, &mut up, i)?;
        add_prs(step, &mut prs, i)?;
        let expect = step.get("expect").and_then(Value::as_str).unwrap_or("");
        let got = resolve_upstream(&up, &prs);
        match (expect.starts_with("error"), got) {
            (true, Err(e)) => {
                let msg = e.to_string();
                if !msg.starts_with("could not find upstream package revision") {
                    return Err(format!("step {i}: unexpected error text {msg:?}"));
                }
            }
            (false, Ok(_)) => {}
            (true, Ok(pr)) => {
                return Err(format!(
                    "step {i}: expected an error for {up:?}, found {:?}",
                    pr.spec
                ))
            }
            (false, Err(e)) => return Err(format!("step {i}: expected {expect:?}, got {e}")),
        }
    }
    Ok(())
}

/// `pv-get-published-upstream-by-revision`.
fn published_upstream_sequence(dir: &Path) -> CaseResult {
    let mut up = Upstream::default();
    let mut prs = Vec::new();
    for (i, step) in steps(dir)?.iter().enumerate() {
        step_upstream(step, &mut up, i)?;
        add_prs(step, &mut prs, i)?;
        let got = published_upstream_by_revision(&up, up.revision, &prs);
        if let Some(want) = step.get("expectErrorContains").and_then(Value::as_str) {
            match got {
                Err(e) if e.to_string().contains(want) => {}
                other => return Err(format!("step {i}: expected error {want:?}, got {other:?}")),
            }
        } else if let Some(expect) = step.get("expect").and_then(Value::as_str) {
            let want = expect.strip_prefix("returns ").unwrap_or(expect);
            match got {
                Ok(pr) if pr.metadata.name == want => {}
                other => return Err(format!("step {i}: expected {want:?}, got {other:?}")),
            }
        }
    }
    Ok(())
}

/// `pv-is-valid-upstream`.
fn valid_upstream_sequence(dir: &Path) -> CaseResult {
    for (i, step) in steps(dir)?.iter().enumerate() {
        let up = match step.get("upstream") {
            None | Some(Value::Null) => None,
            Some(v) => Some(to_upstream(v.clone(), &format!("step {i} upstream"))?),
        };
        let errs = validate_upstream(up.as_ref());
        if let Some(Value::Array(want)) = step.get("expectErrors") {
            let want: Vec<&str> = want.iter().filter_map(Value::as_str).collect();
            if errs != want {
                return Err(format!("step {i}: expected {want:?}, got {errs:?}"));
            }
        }
        if let Some(n) = step.get("expectErrorCount").and_then(Value::as_u64) {
            if errs.len() as u64 != n {
                return Err(format!("step {i}: expected {n} errors, got {errs:?}"));
            }
        }
        if let Some(first) = step.get("expectFirst").and_then(Value::as_str) {
            if errs.first().map(String::as_str) != Some(first) {
                return Err(format!("step {i}: expected first {first:?}, got {errs:?}"));
            }
        }
        if let Some(want) = step.get("expectRevisionAfter").and_then(Value::as_i64) {
            // Our validation never rewrites the revision.
            let after = up.as_ref().map_or(0, |u| u.revision);
            if after != want {
                return Err(format!(
                    "step {i}: upstream expects revision {want} after validation, ours stays {after}"
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pv_core::api::package_revision::Lifecycle;

    #[test]
    fn normalize_drops_go_zero_noise() {
        let v = serde_json::json!({"a": null, "b": {"c": null}, "d": [1], "e": {}});
        assert_eq!(normalize(&v), Some(serde_json::json!({"d": [1]})));
    }

    #[test]
    fn subset_treats_missing_as_zero() {
        let e = serde_json::json!({"spec": {"revision": 0, "x": "y"}});
        let a = serde_json::json!({"spec": {"x": "y", "extra": 1}});
        assert!(subset(&e, Some(&a), "d").is_ok());
        let e = serde_json::json!({"spec": {"revision": 1}});
        assert!(subset(&e, Some(&a), "d").is_err());
    }

    /// Each deviation fails exactly where the upstream bug shows, not
    /// earlier for another reason.
    #[test]
    fn deviations_fail_for_their_documented_reason() {
        let root = crate::conformance_dir();
        let cases = root.join("cases");
        let run = |case: &str, f: Adapter| f(&cases.join(case)).unwrap_err();
        let e = run("pv-get-upstream-pr/sequence", upstream_pr_sequence);
        assert!(e.starts_with("step 6: expected \"ok\""), "{e}");
        let e = run("pv-is-valid-upstream/sequence", valid_upstream_sequence);
        assert!(
            e.starts_with("step 3: upstream expects revision -1 after validation, ours stays 0"),
            "{e}"
        );
        let e = run(
            "pv-is-package-variant-func/additional-dots",
            package_variant_func,
        );
        assert_eq!(e, "expected false, got true");
    }

    #[test]
    fn lifecycle_names_parse() {
        let pr = step_pr(
            &serde_json::json!({"name": "n", "lifecycle": "Published", "revision": 2}),
            "t",
        )
        .unwrap();
        assert_eq!(pr.spec.lifecycle, Lifecycle::Published);
        assert_eq!(pr.metadata.name, "n");
    }
}
