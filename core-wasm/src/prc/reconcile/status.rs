//! The objects the controller applies (server-side apply), one builder per
//! field manager (§6 of the reference): each carries name, namespace and
//! exactly the fields its manager owns.

use serde_json::{json, Map, Value};

use crate::api::meta::Condition;
use crate::api::package_revision::v1alpha2::PackageRevision;
use crate::api::package_revision::{PackageCondition, ReadinessGate};

use super::io::{Call, Content};
use crate::krm::readiness::{package_conditions, package_metadata, readiness_gates};
use crate::prc::render::{condition, READY, RENDERED};
use crate::prc::RENDER_REQUEST_ANNOTATION;

/// `packagerev-controller`: Ready, creationSource, and what the content
/// says about the published revision.
pub const MAIN_MANAGER: &str = "packagerev-controller";
/// `packagerev-controller-render`: the render versions and `Rendered`.
pub const RENDER_MANAGER: &str = "packagerev-controller-render";
/// `packagerev-controller-kptfile`: what the rendered Kptfile says.
pub const KPTFILE_MANAGER: &str = "packagerev-controller-kptfile";

fn skeleton(pr: &PackageRevision) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("apiVersion".into(), json!("porch.kpt.dev/v1alpha2"));
    m.insert("kind".into(), json!("PackageRevision"));
    m.insert(
        "metadata".into(),
        json!({"name": pr.metadata.name, "namespace": pr.metadata.namespace}),
    );
    m
}

/// A condition as the controller writes it (`observedGeneration` omitted
/// when the object has no generation, as Go's `omitempty` does).
pub fn cond(
    pr: &PackageRevision,
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    now: &str,
) -> Condition {
    let mut c = condition(
        type_,
        pr.metadata.generation.unwrap_or(0),
        status,
        reason,
        message,
        now,
    );
    if c.observed_generation == Some(0) {
        c.observed_generation = None;
    }
    c
}

fn conditions_value(conditions: &[Condition]) -> Value {
    serde_json::to_value(conditions).unwrap_or(Value::Null)
}

/// `updateStatus` under [`MAIN_MANAGER`]. `creation_source` is the source
/// that just ran, else the current one (re-sent so the apply keeps it).
/// With no content, the publish data the object already has is re-sent
/// too: an apply that omitted it would remove it (upstream does omit it,
/// §13.8).
pub fn main_status(
    pr: &PackageRevision,
    conditions: &[Condition],
    creation_source: Option<&str>,
    content: Option<&Content>,
) -> Call {
    let mut status = Map::new();
    if let Some(g) = pr.metadata.generation.filter(|g| *g != 0) {
        status.insert("observedGeneration".into(), json!(g));
    }
    // `omitempty`: no conditions, no key (the manager keeps none).
    if !conditions.is_empty() {
        status.insert("conditions".into(), conditions_value(conditions));
    }
    let source = creation_source.unwrap_or(&pr.status.creation_source);
    if !source.is_empty() {
        status.insert("creationSource".into(), json!(source));
    }
    match content {
        Some(c) => {
            if c.lifecycle.is_published() {
                if c.revision != 0 {
                    status.insert("revision".into(), json!(c.revision));
                }
                if !c.published_by.is_empty() {
                    status.insert("publishedBy".into(), json!(c.published_by));
                }
                if let Some(at) = c.published_at.as_ref().filter(|s| !s.is_empty()) {
                    status.insert("publishedAt".into(), json!(at));
                }
            }
            if c.lock_error.is_none() {
                if let Some(l) = c.self_lock.as_ref().filter(|l| l.git.is_some()) {
                    status.insert("selfLock".into(), json!(l));
                }
                if let Some(l) = c.upstream_lock.as_ref().filter(|l| l.git.is_some()) {
                    status.insert("upstreamLock".into(), json!(l));
                }
            }
        }
        None => {
            let s = &pr.status;
            if s.revision != 0 {
                status.insert("revision".into(), json!(s.revision));
            }
            if !s.published_by.is_empty() {
                status.insert("publishedBy".into(), json!(s.published_by));
            }
            if let Some(at) = &s.published_at {
                status.insert("publishedAt".into(), json!(at));
            }
            if let Some(l) = &s.self_lock {
                status.insert("selfLock".into(), json!(l));
            }
            if let Some(l) = &s.upstream_lock {
                status.insert("upstreamLock".into(), json!(l));
            }
        }
    }
    let mut obj = skeleton(pr);
    obj.insert("status".into(), Value::Object(status));
    Call::ApplyStatus {
        field_manager: MAIN_MANAGER.into(),
        object: Value::Object(obj),
    }
}

/// `updateRenderStatus` under [`RENDER_MANAGER`]: `observed` is always
/// sent (the current value when there is no new one).
pub fn render_status(
    pr: &PackageRevision,
    rendering: &str,
    observed: &str,
    rendered: Condition,
) -> Call {
    let mut status = Map::new();
    if !rendering.is_empty() {
        status.insert("renderingPrrResourceVersion".into(), json!(rendering));
    }
    let observed = if observed.is_empty() {
        pr.status.observed_prr_resource_version.as_str()
    } else {
        observed
    };
    if !observed.is_empty() {
        status.insert("observedPrrResourceVersion".into(), json!(observed));
    }
    status.insert("conditions".into(), conditions_value(&[rendered]));
    let mut obj = skeleton(pr);
    obj.insert("status".into(), Value::Object(status));
    Call::ApplyStatus {
        field_manager: RENDER_MANAGER.into(),
        object: Value::Object(obj),
    }
}

/// `updateKptfileFields`: a spec apply with the readiness gates and
/// package metadata, when there are any.
pub fn kptfile_spec(
    pr: &PackageRevision,
    gates: &[ReadinessGate],
    metadata: Option<&Value>,
) -> Option<Call> {
    if gates.is_empty() && metadata.is_none() {
        return None;
    }
    let mut spec = Map::new();
    if !gates.is_empty() {
        spec.insert("readinessGates".into(), json!(gates));
    }
    if let Some(m) = metadata {
        spec.insert("packageMetadata".into(), m.clone());
    }
    let mut obj = skeleton(pr);
    obj.insert("spec".into(), Value::Object(spec));
    Some(Call::ApplySpec {
        field_manager: KPTFILE_MANAGER.into(),
        object: Value::Object(obj),
    })
}

/// `updateKptfileFields`: a status apply with the package conditions, when
/// there are any.
pub fn kptfile_status(pr: &PackageRevision, conditions: &[PackageCondition]) -> Option<Call> {
    if conditions.is_empty() {
        return None;
    }
    let mut obj = skeleton(pr);
    obj.insert("status".into(), json!({ "packageConditions": conditions }));
    Some(Call::ApplyStatus {
        field_manager: KPTFILE_MANAGER.into(),
        object: Value::Object(obj),
    })
}

/// `setRenderFailed`: a render-manager apply of `Rendered=False/RenderFailed`
/// with `message`, observing the current render-request annotation (so the
/// same request does not trigger again; without one the current observed
/// value is re-sent), then a main-manager apply of
/// `Ready=False/RenderFailed "render failed"` (no content).
pub fn render_failed_applies(pr: &PackageRevision, message: &str, now: &str) -> [Call; 2] {
    let requested = pr
        .metadata
        .annotations
        .get(RENDER_REQUEST_ANNOTATION)
        .map(String::as_str)
        .unwrap_or_default();
    let rendered = cond(pr, RENDERED, "False", "RenderFailed", message, now);
    let ready = cond(pr, READY, "False", "RenderFailed", "render failed", now);
    [
        render_status(pr, "", requested, rendered),
        main_status(pr, &[ready], None, None),
    ]
}

/// `updateKptfileFields`: what a rendered Kptfile (as JSON; null when the
/// package has none) contributes, as the Kptfile manager's applies: a spec
/// apply when it has readiness gates or package metadata, a status apply
/// when it has conditions; none when it has neither.
pub fn kptfile_applies(pr: &PackageRevision, kptfile: &Value) -> Vec<Call> {
    if kptfile.is_null() {
        return Vec::new();
    }
    let gates = readiness_gates(kptfile).unwrap_or_default();
    let metadata = package_metadata(kptfile).and_then(|m| serde_json::to_value(m).ok());
    let conditions = package_conditions(kptfile).unwrap_or_default();
    kptfile_spec(pr, &gates, metadata.as_ref())
        .into_iter()
        .chain(kptfile_status(pr, &conditions))
        .collect()
}
