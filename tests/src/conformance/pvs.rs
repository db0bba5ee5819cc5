//! Conformance adapters: pvs groups (Porch's PackageVariantSet controller
//! unit tests: validation, upstream lookup, target unrolling, CEL
//! evaluation, map overlays, spec rendering, and the sync of children).
//!
//! Inputs are YAML renderings of the Go test literals; they are read with
//! the core's YAML layer into JSON and then into the core's typed API, as
//! `sigs.k8s.io/yaml` would (unknown fields dropped).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use pv_core::api::{ObjectMeta, PackageRevision, PackageVariant, PackageVariantSpec, Upstream};
use pv_core::variantset::cel::{CelEnv, CelObject, ObjectInput, Variables};
use pv_core::variantset::render::{overlay_map, render_spec, RepositoryIndex};
use pv_core::variantset::types::{MapExpr, PackageVariantTemplate};
use pv_core::variantset::unroll::{unroll, TargetObjects, UnrolledTarget};
use pv_core::variantset::upstream::find_upstream;
use pv_core::variantset::{sync, validate, Evaluator, PackageVariantSet, Repository};
use serde_json::Value;

use super::{read_opt, read_req, Adapter, CaseResult, Deviation};

/// The groups this module runs.
pub fn adapters() -> Vec<(&'static str, Adapter)> {
    vec![
        ("pvs-validate", validate_case as Adapter),
        ("pvs-get-upstream-pr", get_upstream_case),
        ("pvs-unroll-downstream-targets", unroll_case),
        ("pvs-eval-expr", eval_expr_case),
        ("pvs-copy-and-overlay-map-expr", overlay_case),
        ("pvs-render-spec", render_spec_case),
        ("pvs-ensure-package-variants", ensure_case),
    ]
}

/// Documented deviations of these groups: none. The two cases whose
/// expectation is a cel-go error text (`pvs-eval-expr/bad-expr`,
/// `pvs-eval-expr/bad-variable`) pass byte for byte, as the core renders
/// syntax and undeclared-reference errors in cel-go's format.
pub const DEVIATIONS: &[Deviation] = &[];

fn yaml(dir: &Path, rel: &str) -> Result<Value, String> {
    let text = read_req(dir, rel)?;
    let doc = pv_core::yaml::parse_document(&text).map_err(|e| format!("{rel}: {e}"))?;
    pv_core::yaml::to_json(&doc).map_err(|e| format!("{rel}: {e}"))
}

/// `serde_json::from_value` with the input named in the error.
macro_rules! typed {
    ($value:expr, $what:expr $(,)?) => {
        serde_json::from_value($value).map_err(|e| format!("{}: {e}", $what))
    };
}

fn text(dir: &Path, rel: &str) -> Option<String> {
    read_opt(dir, rel).map(|s| s.strip_suffix('\n').unwrap_or(&s).to_string())
}

fn str_field(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// `validatePackageVariantSet`: the messages, in order.
fn validate_case(dir: &Path) -> CaseResult {
    let pvs: PackageVariantSet = typed!(
        yaml(dir, "input/packagevariantset.yaml")?,
        "packagevariantset",
    )?;
    let expected: Vec<String> = read_req(dir, "expected/errors.txt")?
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    let got = validate::validate(&pvs);
    if got != expected {
        return Err(format!("errors\n got: {got:#?}\nwant: {expected:#?}"));
    }
    Ok(())
}

/// `getUpstreamPR` over a sequence of mutations of the upstream.
fn get_upstream_case(dir: &Path) -> CaseResult {
    let steps = yaml(dir, "input/steps.yaml")?;
    let prs: Vec<PackageRevision> = steps
        .get("prList")
        .and_then(Value::as_array)
        .ok_or("steps.yaml: no prList")?
        .iter()
        .map(|p| {
            let mut pr = PackageRevision::default();
            pr.spec.repository = str_field(p, "repository");
            pr.spec.package_name = str_field(p, "packageName");
            pr.spec.workspace_name = str_field(p, "workspaceName");
            pr.spec.revision = p.get("revision").and_then(Value::as_i64).unwrap_or(0);
            pr
        })
        .collect();
    let mut upstream = Upstream::default();
    for (i, step) in steps
        .get("steps")
        .and_then(Value::as_array)
        .ok_or("steps.yaml: no steps")?
        .iter()
        .enumerate()
    {
        if let Some(set) = step.get("set") {
            if let Some(v) = set.get("repo").and_then(Value::as_str) {
                upstream.repo = v.to_string();
            }
            if let Some(v) = set.get("package").and_then(Value::as_str) {
                upstream.package = v.to_string();
            }
            if let Some(v) = set.get("workspaceName").and_then(Value::as_str) {
                upstream.workspace_name = v.to_string();
            }
            if let Some(v) = set.get("revision").and_then(Value::as_i64) {
                upstream.revision = v;
            }
        }
        let expect_ok = str_field(step, "expect").starts_with("ok");
        let got = find_upstream(&upstream, "", &prs);
        if got.is_ok() != expect_ok {
            return Err(format!(
                "step {i} ({upstream:?}): got {:?}, want {}",
                got.map(|p| &p.spec),
                str_field(step, "expect")
            ));
        }
        if let Err(e) = got {
            let want = format!(
                "could not find upstream package revision '{}/{}' in repo '{}'",
                upstream.package, upstream.revision, upstream.repo
            );
            if e.to_string() != want {
                return Err(format!("step {i}: error {e:?}, want {want:?}"));
            }
        }
    }
    Ok(())
}

/// `unrollDownstreamTargets`: the fake client returns the same objects for
/// any List, so they are supplied as the Repositories the selector reads.
fn unroll_case(dir: &Path) -> CaseResult {
    let pvs: PackageVariantSet = typed!(
        yaml(dir, "input/packagevariantset.yaml")?,
        "packagevariantset",
    )?;
    let list = yaml(dir, "input/list-result.yaml")?;
    let repos: Vec<Repository> = typed!(
        list.get("items").cloned().unwrap_or(Value::Null),
        "list-result items",
    )?;
    let got: Vec<(String, String, Option<String>)> = unroll(&pvs, &repos, &TargetObjects::new())
        .map_err(|e| e.to_string())?
        .into_iter()
        .map(|t| (t.repo_default, t.package_default, t.object.map(|o| o.name)))
        .collect();
    let want: Vec<(String, String, Option<String>)> = yaml(dir, "expected/downstreams.yaml")?
        .as_array()
        .ok_or("downstreams.yaml: not a list")?
        .iter()
        .map(|d| {
            (
                str_field(d, "repoDefault"),
                str_field(d, "packageDefault"),
                d.get("object").and_then(Value::as_str).map(str::to_string),
            )
        })
        .collect();
    if got != want {
        return Err(format!("downstreams\n got: {got:?}\nwant: {want:?}"));
    }
    Ok(())
}

/// A `target` variable from YAML: `{repo, package}` for explicit targets,
/// else a reduced object.
enum TargetInput {
    Defaults(String, String),
    Object(ObjectInput),
}

impl TargetInput {
    fn from_yaml(v: &Value) -> Option<Self> {
        if v.is_null() {
            return None;
        }
        if v.get("repo").is_some() || v.get("package").is_some() {
            return Some(TargetInput::Defaults(
                str_field(v, "repo"),
                str_field(v, "package"),
            ));
        }
        let map = |key: &str| -> BTreeMap<String, String> {
            v.get(key)
                .cloned()
                .and_then(|m| serde_json::from_value(m).ok())
                .unwrap_or_default()
        };
        Some(TargetInput::Object(ObjectInput {
            name: str_field(v, "name"),
            namespace: str_field(v, "namespace"),
            labels: map("labels"),
            annotations: map("annotations"),
        }))
    }

    fn cel(&self) -> CelObject<'_> {
        match self {
            TargetInput::Defaults(repo, package) => CelObject::target_defaults(repo, package),
            TargetInput::Object(o) => CelObject::object(o),
        }
    }
}

/// `evalExpr`: the result string or the error text.
fn eval_expr_case(dir: &Path) -> CaseResult {
    let expr = text(dir, "input/expr.txt").ok_or("no input/expr.txt")?;
    let vars = yaml(dir, "input/variables.yaml")?;
    let target_input = vars.get("target").and_then(TargetInput::from_yaml);
    let target = target_input.as_ref().map(TargetInput::cel);
    let repo_default = str_field(&vars, "repoDefault");
    let package_default = str_field(&vars, "packageDefault");
    let v = Variables {
        repo_default: &repo_default,
        package_default: &package_default,
        upstream: None,
        target: target.as_ref(),
        repository: None,
    };
    let want_err = text(dir, "expected/error.txt").unwrap_or_default();
    let want = text(dir, "expected/result.txt").unwrap_or_default();
    match (
        CelEnv::default().eval_source(&expr, &v),
        want_err.is_empty(),
    ) {
        (Ok(got), true) if got == want => Ok(()),
        (Err(e), false) if e.to_string() == want_err => Ok(()),
        (got, _) => Err(format!(
            "eval {expr:?}\n got: {got:?}\nwant: result {want:?} / error {want_err:?}"
        )),
    }
}

/// `copyAndOverlayMapExpr("f", …)`.
fn overlay_case(dir: &Path) -> CaseResult {
    let base: BTreeMap<String, String> = typed!(yaml(dir, "input/in-map.yaml")?, "in-map")?;
    let exprs: Vec<MapExpr> = typed!(yaml(dir, "input/map-exprs.yaml")?, "map-exprs")?;
    let vars = yaml(dir, "input/variables.yaml")?;
    let repo_default = str_field(&vars, "repoDefault");
    let package_default = str_field(&vars, "packageDefault");
    let v = Variables {
        repo_default: &repo_default,
        package_default: &package_default,
        upstream: None,
        target: None,
        repository: None,
    };
    let got = overlay_map("f", &base, &exprs, &v, &mut Evaluator::default())
        .map_err(|e| e.to_string())?;
    let want: BTreeMap<String, String> = match yaml(dir, "expected/out-map.yaml")? {
        Value::Null => BTreeMap::new(),
        other => typed!(other, "out-map")?,
    };
    if got != want {
        return Err(format!("map\n got: {got:?}\nwant: {want:?}"));
    }
    Ok(())
}

/// `renderPackageVariantSpec` for one unrolled target.
fn render_spec_case(dir: &Path) -> CaseResult {
    let ctx = yaml(dir, "input/context.yaml")?;
    let pvs: PackageVariantSet = typed!(ctx.get("pvs").cloned().unwrap_or_default(), "pvs")?;
    let upstream_meta: ObjectMeta = typed!(
        ctx.pointer("/upstreamPR/metadata")
            .cloned()
            .unwrap_or_default(),
        "upstreamPR.metadata",
    )?;
    let repos: Vec<Repository> = typed!(
        ctx.get("repositories").cloned().unwrap_or_default(),
        "repositories",
    )?;
    let ds = yaml(dir, "input/downstream.yaml")?;
    let template: Option<PackageVariantTemplate> =
        typed!(yaml(dir, "input/template.yaml")?, "template")?;
    let object = ds
        .get("object")
        .filter(|o| !o.is_null())
        .map(|o| -> Result<ObjectInput, String> {
            let meta: ObjectMeta =
                typed!(o.get("metadata").cloned().unwrap_or_default(), "object")?;
            Ok(ObjectInput::from_meta(&meta))
        })
        .transpose()?;
    let target = UnrolledTarget {
        target_index: 0,
        template: template.as_ref(),
        repo_default: str_field(&ds, "repoDefault"),
        package_default: str_field(&ds, "packageDefault"),
        object,
    };
    let upstream_input = CelObject::from_meta(&upstream_meta);
    let mut index = RepositoryIndex::new(&repos, &pvs.metadata.namespace);
    let got = render_spec(
        pvs.spec.upstream.as_ref(),
        &upstream_input,
        &target,
        &mut index,
        &mut Evaluator::default(),
    );
    if let Some(want_err) = text(dir, "expected/error.txt").filter(|e| !e.is_empty()) {
        return match got {
            Err(e) if e.to_string() == want_err => Ok(()),
            other => Err(format!("got {other:?}, want error {want_err:?}")),
        };
    }
    let want: PackageVariantSpec = typed!(
        yaml(dir, "expected/packagevariant-spec.yaml")?,
        "packagevariant-spec",
    )?;
    match got {
        Ok(spec) if spec == want => Ok(()),
        other => Err(format!("spec\n got: {other:#?}\nwant: {want:#?}")),
    }
}

/// `ensurePackageVariants`: which children are deleted, updated and
/// created. Upstream updates every child that is both desired and existing;
/// the core updates only those whose spec differs and lists the others as
/// unchanged, so upstream's "updated" is compared with updated ∪ unchanged
/// (an unconditional update of an unchanged child writes the same spec).
fn ensure_case(dir: &Path) -> CaseResult {
    let pvs: PackageVariantSet = typed!(
        yaml(dir, "input/packagevariantset.yaml")?,
        "packagevariantset",
    )?;
    let existing: Vec<PackageVariant> = typed!(
        yaml(dir, "input/existing-packagevariants.yaml")?,
        "existing-packagevariants",
    )?;
    let downstreams = yaml(dir, "input/downstreams.yaml")?;
    let targets: Vec<UnrolledTarget<'_>> = downstreams
        .as_array()
        .ok_or("downstreams.yaml: not a list")?
        .iter()
        .map(|d| UnrolledTarget {
            target_index: 0,
            template: None,
            repo_default: str_field(d, "repoDefault"),
            package_default: str_field(d, "packageDefault"),
            object: None,
        })
        .collect();
    let upstream_meta = ObjectMeta::default();
    let upstream_input = CelObject::from_meta(&upstream_meta);
    let mut index = RepositoryIndex::new(&[], "");
    let mut evaluator = Evaluator::default();
    let specs = targets
        .iter()
        .map(|t| {
            render_spec(
                pvs.spec.upstream.as_ref(),
                &upstream_input,
                t,
                &mut index,
                &mut evaluator,
            )
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    let desired = sync::desired_children(&pvs, specs);
    let plan = sync::plan(&pvs, &desired, &existing);

    let calls = yaml(dir, "expected/calls.yaml")?;
    let names = |key: &str| -> BTreeSet<String> {
        calls
            .as_object()
            .and_then(|m| m.iter().find(|(k, _)| k.starts_with(key)))
            .and_then(|(_, v)| v.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    let set = |pvs: &[PackageVariant]| -> BTreeSet<String> {
        pvs.iter().map(|p| p.metadata.name.clone()).collect()
    };
    let got_deleted = set(&plan.delete);
    let got_created = set(&plan.create);
    let mut got_updated = set(&plan.update);
    got_updated.extend(plan.unchanged.iter().cloned());
    let checks = [
        ("deleted", got_deleted, names("deleted")),
        ("updated", got_updated, names("updated")),
        ("created", got_created, names("created")),
    ];
    for (what, got, want) in checks {
        if got != want {
            return Err(format!("{what}\n got: {got:?}\nwant: {want:?}"));
        }
    }
    for name in &plan.unchanged {
        let have = existing.iter().find(|p| &p.metadata.name == name);
        let want = desired.iter().find(|(_, p)| {
            have.is_some_and(|h| {
                sync::existing_key(&pvs.metadata.name, h)
                    == sync::spec_key(&pvs.metadata.name, &p.spec)
            })
        });
        match (have, want) {
            (Some(h), Some((_, w))) if h.spec == w.spec => {}
            _ => return Err(format!("{name} reported unchanged but differs")),
        }
    }
    Ok(())
}
