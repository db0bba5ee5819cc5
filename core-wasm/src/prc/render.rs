//! When the controller renders a draft, and what the render records
//! (`PRC/render.go`): the trigger, staleness, the observed version, and the
//! conditions every status write carries.

use crate::api::meta::Condition;
use crate::api::package_revision::v1alpha2::PackageRevision;
use crate::api::Lifecycle;

use super::RENDER_REQUEST_ANNOTATION;

/// `Ready` and `Rendered`: the condition types the controller writes.
pub const READY: &str = "Ready";
/// The `Rendered` condition type.
pub const RENDERED: &str = "Rendered";

/// Why a draft is rendered (`renderTrigger`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RenderTrigger {
    /// The render-request annotation's value ("" without one).
    pub requested: String,
    /// A render was requested that has not been rendered.
    pub annotation_trigger: bool,
    /// The source ran and the result is not rendered yet.
    pub source_trigger: bool,
}

impl RenderTrigger {
    /// Whether either trigger fires.
    pub fn fires(&self) -> bool {
        self.annotation_trigger || self.source_trigger
    }
}

/// `renderTrigger`: only drafts render. The annotation triggers while its
/// value differs from `status.observedPrrResourceVersion`; the source
/// triggers once it ran (`status.creationSource`) until `Rendered` is True.
pub fn render_trigger(pr: &PackageRevision) -> RenderTrigger {
    if pr.spec.lifecycle != Lifecycle::Draft {
        return RenderTrigger::default();
    }
    let requested = pr
        .metadata
        .annotations
        .get(RENDER_REQUEST_ANNOTATION)
        .cloned()
        .unwrap_or_default();
    let annotation_trigger =
        !requested.is_empty() && requested != pr.status.observed_prr_resource_version;
    let source_trigger =
        !pr.status.creation_source.is_empty() && !is_rendered_true(&pr.status.conditions);
    RenderTrigger {
        requested,
        annotation_trigger,
        source_trigger,
    }
}

/// `isRenderStale`: the request changed while rendering.
pub fn is_render_stale(current_annotation: &str, rendered: &str) -> bool {
    current_annotation != rendered
}

/// `observedVersionAfterRender`: the requested version, or for a
/// source-triggered render the annotation's current value (possibly "").
pub fn observed_version_after_render(
    requested: &str,
    annotations: &std::collections::BTreeMap<String, String>,
) -> String {
    if !requested.is_empty() {
        return requested.to_string();
    }
    annotations
        .get(RENDER_REQUEST_ANNOTATION)
        .cloned()
        .unwrap_or_default()
}

/// `isRenderedTrue`: a `Rendered` condition with status True.
pub fn is_rendered_true(conditions: &[Condition]) -> bool {
    conditions
        .iter()
        .any(|c| c.type_ == RENDERED && c.status == "True")
}

/// A condition as the controller writes it: `observedGeneration` is the
/// object's generation and `lastTransitionTime` is now on every write (no
/// transition tracking, as upstream).
pub fn condition(
    type_: &str,
    generation: i64,
    status: &str,
    reason: &str,
    message: &str,
    now: &str,
) -> Condition {
    Condition {
        type_: type_.to_string(),
        status: status.to_string(),
        observed_generation: Some(generation),
        last_transition_time: now.to_string(),
        reason: reason.to_string(),
        message: message.to_string(),
    }
}
