//! Injection conditions and readiness gates in the Kptfile (upstream's
//! `setInjectionPointConditionsAndGates`).
//!
//! * Every injection point sets the condition of its type
//!   (`meta.SetStatusCondition`: an existing one of that type is updated,
//!   others are kept, never pruned): injected → `True` / `ConfigInjected` /
//!   `injected resource "<name>" from cluster`; otherwise `False` /
//!   `NoResourceSelected` / the point's errors joined with `", "`, or
//!   `no resource matched any injection selector for this injection point`.
//! * Readiness gates are the existing ones plus one per required point,
//!   de-duplicated and sorted.
//! * `info` is written only when there are gates, `status` only when there
//!   are conditions (sorted by type). Both are written as the SDK writes a
//!   typed Go value: built anew from the typed fields (empty ones dropped),
//!   keys that existed keep their place and comments, a condition comes out
//!   as `type, status, message, reason`.
//!
//! Fields of `info` and `status` that kpt's Go types do not know are kept
//! (upstream's typed round trip would drop those its kpt version lacks).

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::api::package_revision::{PackageCondition, ReadinessGate};
use crate::yaml::{self, Node};

use super::error::MutationError;
use super::injection::InjectionPoint;
use super::kptfile_view::{GoString, KptfileView, PackageInfoView};
use super::KPTFILE;
use crate::krm::gofmt::quote;

/// Reason of the condition of an injected point.
pub const REASON_INJECTED: &str = "ConfigInjected";
/// Reason of the condition of a point left without a resource.
pub const REASON_NOT_SELECTED: &str = "NoResourceSelected";
/// Message of a point no injector matched, without other errors.
pub const MESSAGE_NOT_SELECTED: &str =
    "no resource matched any injection selector for this injection point";

/// The condition a point sets.
pub fn injection_condition(point: &InjectionPoint) -> PackageCondition {
    if point.injected {
        PackageCondition {
            type_: point.condition_type.clone(),
            status: "True".into(),
            reason: REASON_INJECTED.into(),
            message: format!(
                "injected resource {} from cluster",
                quote(&point.injected_name)
            ),
        }
    } else {
        PackageCondition {
            type_: point.condition_type.clone(),
            status: "False".into(),
            reason: REASON_NOT_SELECTED.into(),
            message: if point.errors.is_empty() {
                MESSAGE_NOT_SELECTED.into()
            } else {
                point.errors.join(", ")
            },
        }
    }
}

/// `meta.SetStatusCondition` on Kptfile conditions (which carry no
/// timestamps): the first condition of the same type is updated, or the
/// condition is appended.
fn set_condition(conditions: &mut Vec<PackageCondition>, new: PackageCondition) {
    match conditions.iter_mut().find(|c| c.type_ == new.type_) {
        Some(existing) => *existing = new,
        None => conditions.push(new),
    }
}

/// Writes the points' conditions and the readiness gates into `kptfile`
/// (its object node). Returns the conditions and gates the Kptfile holds
/// afterwards.
pub fn set_injection_conditions_and_gates(
    kptfile: &mut Node,
    points: &[InjectionPoint],
) -> Result<(Vec<PackageCondition>, Vec<ReadinessGate>), MutationError> {
    let json = yaml::to_json(kptfile).map_err(MutationError::yaml(KPTFILE))?;
    let view = KptfileView::from_json(&json).map_err(|e| MutationError::FieldType {
        file: KPTFILE.to_string(),
        field: e.field,
        detail: e.detail,
    })?;
    let info = view.info.unwrap_or_default();
    let mut gates: BTreeSet<String> = info
        .readiness_gates
        .iter()
        .map(|g| g.condition_type.0.clone())
        .collect();
    let mut conditions: Vec<PackageCondition> = view
        .status
        .unwrap_or_default()
        .conditions
        .into_iter()
        .map(|c| PackageCondition {
            type_: c.type_.0,
            status: c.status.0,
            reason: c.reason.0,
            message: c.message.0,
        })
        .collect();
    for point in points {
        if point.required {
            gates.insert(point.condition_type.clone());
        }
        set_condition(&mut conditions, injection_condition(point));
    }
    let root = kptfile.root_mut();
    if !gates.is_empty() {
        let value = info_json(&info, json.get("info"), &gates);
        root.set_json("info", &value)
            .map_err(MutationError::yaml(KPTFILE))?;
    }
    if !conditions.is_empty() {
        conditions.sort_by(|a, b| a.type_.cmp(&b.type_));
        let value = status_json(&conditions, json.get("status"));
        root.set_json("status", &value)
            .map_err(MutationError::yaml(KPTFILE))?;
    }
    let gates = gates
        .into_iter()
        .map(|condition_type| ReadinessGate { condition_type })
        .collect();
    Ok((conditions, gates))
}

fn put_str(out: &mut Map<String, Value>, key: &str, v: &GoString) {
    if !v.0.is_empty() {
        out.insert(key.into(), Value::String(v.0.clone()));
    }
}

fn put_list(out: &mut Map<String, Value>, key: &str, v: &[GoString]) {
    if !v.is_empty() {
        let items = v.iter().map(|s| Value::String(s.0.clone())).collect();
        out.insert(key.into(), Value::Array(items));
    }
}

/// Fields of `old` (an object) that kpt's Go type does not know.
fn unknown_fields(out: &mut Map<String, Value>, old: Option<&Value>, known: &[&str]) {
    if let Some(Value::Object(old)) = old {
        for (k, v) in old {
            if !known.contains(&k.as_str()) && !out.contains_key(k) {
                out.insert(k.clone(), v.clone());
            }
        }
    }
}

/// `info` as the SDK writes `kptfilev1.PackageInfo` with the new gates.
fn info_json(info: &PackageInfoView, old: Option<&Value>, gates: &BTreeSet<String>) -> Value {
    let mut out = Map::new();
    put_str(&mut out, "site", &info.site);
    put_list(&mut out, "emails", &info.emails);
    put_str(&mut out, "license", &info.license);
    put_str(&mut out, "licenseFile", &info.license_file);
    let gates = gates
        .iter()
        .map(|g| {
            let mut m = Map::new();
            m.insert("conditionType".into(), Value::String(g.clone()));
            Value::Object(m)
        })
        .collect();
    out.insert("readinessGates".into(), Value::Array(gates));
    put_str(&mut out, "description", &info.description);
    put_list(&mut out, "keywords", &info.keywords);
    put_str(&mut out, "man", &info.man);
    unknown_fields(&mut out, old, crate::api::kptfile::fields::INFO);
    Value::Object(out)
}

/// `status` as the SDK writes `kptfilev1.Status` with the new conditions.
fn status_json(conditions: &[PackageCondition], old: Option<&Value>) -> Value {
    let mut out = Map::new();
    let items = conditions
        .iter()
        .map(|c| {
            let mut m = Map::new();
            m.insert("type".into(), Value::String(c.type_.clone()));
            m.insert("status".into(), Value::String(c.status.clone()));
            if !c.message.is_empty() {
                m.insert("message".into(), Value::String(c.message.clone()));
            }
            if !c.reason.is_empty() {
                m.insert("reason".into(), Value::String(c.reason.clone()));
            }
            Value::Object(m)
        })
        .collect();
    out.insert("conditions".into(), Value::Array(items));
    unknown_fields(&mut out, old, &["conditions"]);
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::krm::objects::{emit_object, parse_object};

    fn point(ct: &str, required: bool, injected: Option<&str>) -> InjectionPoint {
        InjectionPoint {
            condition_type: ct.into(),
            required,
            injected: injected.is_some(),
            injected_name: injected.unwrap_or_default().into(),
            ..InjectionPoint::default()
        }
    }

    fn run(kptfile: &str, points: &[InjectionPoint]) -> String {
        let mut node = parse_object(kptfile).unwrap();
        set_injection_conditions_and_gates(&mut node, points).unwrap();
        emit_object(&node).unwrap()
    }

    #[test]
    fn keeps_existing_order_unknown_fields_and_conditions() {
        let kptfile = "kind: Kptfile\ninfo:\n  description: d # why\n  x-extra: 1\nstatus:\n  conditions:\n  - type: zzz\n    status: \"True\"\n  renderStatus:\n    errorSummary: e\n";
        let out = run(
            kptfile,
            &[point("a.b", true, Some("src")), point("a.a", false, None)],
        );
        assert_eq!(
            out,
            "kind: Kptfile\ninfo:\n  description: d # why\n  x-extra: 1\n  readinessGates:\n  - conditionType: a.b\nstatus:\n  conditions:\n  - type: a.a\n    status: \"False\"\n    message: no resource matched any injection selector for this injection point\n    reason: NoResourceSelected\n  - type: a.b\n    status: \"True\"\n    message: injected resource \"src\" from cluster\n    reason: ConfigInjected\n  - type: zzz\n    status: \"True\"\n  renderStatus:\n    errorSummary: e\n"
        );
    }

    #[test]
    fn nothing_to_write_leaves_the_kptfile_alone() {
        let kptfile = "kind: Kptfile\ninfo:\n  x-unknown: [1]\n";
        assert_eq!(run(kptfile, &[]), kptfile);
    }

    #[test]
    fn wrong_types_are_errors_naming_the_field() {
        let mut node = parse_object("kind: Kptfile\ninfo: text\n").unwrap();
        let err = set_injection_conditions_and_gates(&mut node, &[]).unwrap_err();
        assert!(
            err.to_string().starts_with("Kptfile: field info: "),
            "{err}"
        );
    }
}
