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
        observed_generation: Some(generation),
        last_transition_time: now.to_string(),
        ..Condition::new(type_, status, reason, message)
    }
}

/// `renderRequestChanged`, the event filter the controller ORs with
/// "generation changed": an update triggers a reconcile iff the
/// render-request annotation's value differs between the old and the new
/// object (absent counts as "").
pub fn render_request_changed(
    old: &std::collections::BTreeMap<String, String>,
    new: &std::collections::BTreeMap<String, String>,
) -> bool {
    let value = |m: &std::collections::BTreeMap<String, String>| {
        m.get(RENDER_REQUEST_ANNOTATION)
            .cloned()
            .unwrap_or_default()
    };
    value(old) != value(new)
}

/// The directory of the shallowest `Kptfile` in `files` ("" for the root,
/// which wins; the first path in order among equally shallow ones), or
/// `None` when there is none: the package kpt renders.
pub fn package_root(files: &crate::render::Files) -> Option<String> {
    files
        .keys()
        .filter(|p| *p == "Kptfile" || p.ends_with("/Kptfile"))
        .map(|p| p.strip_suffix("Kptfile").unwrap_or_default())
        .map(|d| d.trim_end_matches('/').to_string())
        .min_by_key(|d| {
            (
                if d.is_empty() {
                    0
                } else {
                    d.matches('/').count() + 1
                },
                d.clone(),
            )
        })
}

/// The package kpt renders inside a revision's files: the files under the
/// shallowest `Kptfile`'s directory, re-rooted there and back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageRoot {
    prefix: String,
}

impl PackageRoot {
    /// The root of `files`' package; `None` without any `Kptfile`.
    pub fn of(files: &crate::render::Files) -> Option<Self> {
        let root = package_root(files)?;
        Some(PackageRoot {
            prefix: if root.is_empty() {
                String::new()
            } else {
                format!("{root}/")
            },
        })
    }

    /// The package's files, with paths relative to its root.
    pub fn inside(&self, files: &crate::render::Files) -> crate::render::Files {
        files
            .iter()
            .filter_map(|(p, c)| {
                p.strip_prefix(&self.prefix)
                    .map(|r| (r.to_string(), c.clone()))
            })
            .collect()
    }

    /// `files` with the package replaced by `rendered` (paths relative to
    /// the root); files outside the package are kept.
    pub fn put_back(
        &self,
        files: &crate::render::Files,
        rendered: crate::render::Files,
    ) -> crate::render::Files {
        let mut out: crate::render::Files = files
            .iter()
            .filter(|(p, _)| !p.starts_with(&self.prefix))
            .map(|(p, c)| (p.clone(), c.clone()))
            .collect();
        out.extend(
            rendered
                .into_iter()
                .map(|(p, c)| (format!("{}{p}", self.prefix), c)),
        );
        out
    }
}

/// Why [`render_package`] could not render (an infrastructure error: the
/// reconcile records it as `render failed: …`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    /// The runtime deferred a function's output; this renderer needs a
    /// runtime that answers at once.
    #[error("the function runtime deferred a function; rendering needs a synchronous runtime")]
    Deferred,
}

/// The controller's kpt renderer (`kptRenderer.Render`): the package whose
/// root is the shallowest `Kptfile` is rendered (paths re-rooted there and
/// back); files outside it are kept. Without any `Kptfile` the files come
/// back unchanged and nothing runs. A pipeline failure is the answer's
/// `pipeline_error` (the failing steps, one per `; `), with the files as
/// far as the render got.
pub fn render_package(
    files: &crate::render::Files,
    opts: &crate::render::RenderOptions,
    runtime: &mut dyn crate::render::FunctionRuntime,
) -> Result<super::reconcile::Rendered, RenderError> {
    let Some(root) = PackageRoot::of(files) else {
        return Ok(super::reconcile::Rendered {
            files: files.clone(),
            ..Default::default()
        });
    };
    let out = crate::render::render_owned(root.inside(files), opts, runtime);
    if out.pending {
        return Err(RenderError::Deferred);
    }
    let rendered = root.put_back(files, out.files);
    Ok(super::reconcile::Rendered {
        busy: false,
        files: rendered,
        pipeline_error: out.failure.map(|f| {
            let text = if f.detail.is_empty() {
                f.message
            } else {
                f.detail
            };
            text.replace('\n', "; ")
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn annotations(v: Option<&str>) -> BTreeMap<String, String> {
        v.map(|v| BTreeMap::from([(RENDER_REQUEST_ANNOTATION.to_string(), v.to_string())]))
            .unwrap_or_default()
    }

    #[test]
    fn only_a_changed_render_request_fires() {
        assert!(render_request_changed(
            &annotations(Some("v1")),
            &annotations(Some("v2"))
        ));
        assert!(render_request_changed(
            &annotations(None),
            &annotations(Some("v1"))
        ));
        assert!(render_request_changed(
            &annotations(Some("v1")),
            &annotations(None)
        ));
        assert!(!render_request_changed(
            &annotations(Some("v1")),
            &annotations(Some("v1"))
        ));
        assert!(!render_request_changed(
            &annotations(None),
            &annotations(Some(""))
        ));
    }

    #[test]
    fn the_shallowest_kptfile_roots_the_render_and_none_passes_through() {
        let files = |paths: &[&str]| -> crate::render::Files {
            paths
                .iter()
                .map(|p| (p.to_string(), String::new()))
                .collect()
        };
        assert_eq!(
            package_root(&files(&["a/b/Kptfile", "x/Kptfile"])).as_deref(),
            Some("x")
        );
        assert_eq!(
            package_root(&files(&["a/Kptfile", "Kptfile"])).as_deref(),
            Some("")
        );
        assert_eq!(package_root(&files(&["cm.yaml"])), None);
        let only = files(&["cm.yaml"]);
        let out = render_package(
            &only,
            &crate::render::RenderOptions::default(),
            &mut crate::render::BuiltinsOnly,
        );
        assert_eq!(out.map(|r| r.files), Ok(only));
    }
}
