//! The render phase (`PRC/render.go`, §5 of the reference): render a draft
//! whose source just ran or whose render was requested, and write the
//! result and what its Kptfile says.

use crate::prc::readiness::{
    kptfile_from_resources, package_conditions, package_metadata, readiness_gates,
};
use crate::prc::render::{observed_version_after_render, render_trigger, READY, RENDERED};
use crate::prc::{PUSH_ON_RENDER_FAILURE_ANNOTATION, RENDER_REQUEST_ANNOTATION};

use super::io::{Call, Content, Files, Io, Rendered, Suspend};
use super::lifecycle::apply;
use super::status::{cond, kptfile_spec, kptfile_status, main_status, render_status};
use super::{Ctx, Outcome, Phase, PhaseResult};

fn annotation(ctx: &Ctx<'_>) -> String {
    ctx.pr
        .metadata
        .annotations
        .get(RENDER_REQUEST_ANNOTATION)
        .cloned()
        .unwrap_or_default()
}

/// `setRenderFailed`: Rendered=False with the message (the request is
/// observed, so it does not trigger again), then Ready=False.
fn render_failed(io: &mut Io<'_>, ctx: &Ctx<'_>, message: &str) -> Result<(), Suspend> {
    let rendered = cond(&ctx.pr, RENDERED, "False", "RenderFailed", message, ctx.now);
    apply(io, render_status(&ctx.pr, "", &annotation(ctx), rendered))?;
    let ready = cond(
        &ctx.pr,
        READY,
        "False",
        "RenderFailed",
        "render failed",
        ctx.now,
    );
    apply(io, main_status(&ctx.pr, &[ready], None, None))
}

/// A render-phase failure: recorded, and returned so the host retries it
/// with backoff (upstream drops it, §13.3).
fn fail(io: &mut Io<'_>, ctx: &Ctx<'_>, message: String) -> PhaseResult {
    render_failed(io, ctx, &message)?;
    Ok(Phase::End(Outcome::error(message)))
}

/// Writes `files` over the revision: draft from existing, update, close.
fn write(io: &mut Io<'_>, ctx: &Ctx<'_>, files: &Files) -> Result<Result<(), String>, Suspend> {
    let draft = io.call(Call::CreateDraftFromExisting {
        revision: ctx.revision(),
    })?;
    let draft: String = match draft.decode("draft handle") {
        Ok(d) => d,
        Err(e) => return Ok(Err(format!("create draft for render: {e}"))),
    };
    let updated = io.call(Call::UpdateResources {
        draft: draft.clone(),
        files: files.clone(),
        message: "rendered".into(),
        upstream_lock: super::io::upstream_lock_of(files),
    })?;
    if let Err(e) = updated.into_result() {
        return Ok(Err(format!("write rendered resources: {e}")));
    }
    let closed = io.call(Call::CloseDraft { draft, version: 0 })?;
    if let Err(e) = closed.into_result() {
        return Ok(Err(format!("close draft after render: {e}")));
    }
    Ok(Ok(()))
}

/// `syncKptfileFields`: gates and metadata into the spec, conditions into
/// the status, each under the Kptfile manager; a Kptfile that does not
/// decode is logged.
fn sync_kptfile(io: &mut Io<'_>, ctx: &Ctx<'_>, files: &Files) -> Result<(), Suspend> {
    let kptfile = match kptfile_from_resources(files) {
        Ok(k) => k,
        Err(e) => {
            io.log(format!("Kptfile of the rendered package: {e}"));
            return Ok(());
        }
    };
    if kptfile.is_null() {
        return Ok(());
    }
    let gates = readiness_gates(&kptfile).unwrap_or_default();
    let metadata = package_metadata(&kptfile).and_then(|m| serde_json::to_value(m).ok());
    let conditions = package_conditions(&kptfile).unwrap_or_default();
    if let Some(call) = kptfile_spec(&ctx.pr, &gates, metadata.as_ref()) {
        apply(io, call)?;
    }
    if let Some(call) = kptfile_status(&ctx.pr, &conditions) {
        apply(io, call)?;
    }
    Ok(())
}

pub(super) fn run(io: &mut Io<'_>, ctx: &Ctx<'_>) -> PhaseResult {
    if !ctx.config.render {
        return Ok(Phase::Continue);
    }
    let trigger = render_trigger(&ctx.pr);
    if !trigger.fires() {
        return Ok(Phase::Continue);
    }
    let requested = trigger.requested.as_str();
    let rendering = cond(
        &ctx.pr,
        RENDERED,
        "Unknown",
        "Pending",
        "rendering",
        ctx.now,
    );
    apply(io, render_status(&ctx.pr, requested, "", rendering))?;
    let got = io.call(Call::GetPackageContent {
        revision: ctx.revision(),
        resources: true,
    })?;
    let content: Content = match got.decode("package content") {
        Ok(c) => c,
        Err(e) => return fail(io, ctx, format!("get content for render: {e}")),
    };
    let files = match (content.resources, content.resources_error) {
        (_, Some(e)) => return fail(io, ctx, format!("read resources for render: {e}")),
        (Some(f), None) => f,
        (None, None) => Files::new(),
    };
    let answer = io.call(Call::Render { files })?;
    let rendered: Rendered = match answer.decode("render output") {
        Ok(r) => r,
        Err(e) => return fail(io, ctx, format!("render failed: {e}")),
    };
    if rendered.busy {
        return Ok(Phase::End(Outcome {
            requeue_after_ms: ctx.config.render_requeue_delay_ms,
            ..Outcome::default()
        }));
    }
    if !requested.is_empty() {
        let current = io.call(Call::ReadPackageRevision {
            namespace: ctx.pr.metadata.namespace.clone(),
            name: ctx.pr.metadata.name.clone(),
        })?;
        let current: crate::api::package_revision::v1alpha2::PackageRevision =
            match current.decode("PackageRevision") {
                Ok(pr) => pr,
                Err(e) => {
                    // Upstream leaves Rendered "rendering" and the
                    // rendering version set here (§13.4).
                    let message = format!("re-read PR after render: {e}");
                    let c = cond(
                        &ctx.pr,
                        RENDERED,
                        "False",
                        "RenderFailed",
                        &message,
                        ctx.now,
                    );
                    apply(io, render_status(&ctx.pr, "", "", c))?;
                    return Ok(Phase::End(Outcome::error(message)));
                }
            };
        let now_requested = current
            .metadata
            .annotations
            .get(RENDER_REQUEST_ANNOTATION)
            .map(String::as_str)
            .unwrap_or_default();
        if crate::prc::render::is_render_stale(now_requested, requested) {
            return Ok(Phase::End(Outcome::requeue()));
        }
    }
    if let Some(error) = rendered.pipeline_error {
        let push = ctx
            .pr
            .metadata
            .annotations
            .get(PUSH_ON_RENDER_FAILURE_ANNOTATION)
            .is_some_and(|v| v == "true");
        if push {
            match write(io, ctx, &rendered.files)? {
                Ok(()) => sync_kptfile(io, ctx, &rendered.files)?,
                Err(e) => io.log(format!("push on render failure: {e}")),
            }
        }
        // The pipeline's own failure: the user must change the package,
        // so it is recorded and not retried.
        render_failed(io, ctx, &format!("render pipeline failed: {error}"))?;
        return Ok(Phase::End(Outcome::done()));
    }
    if let Err(e) = write(io, ctx, &rendered.files)? {
        return fail(io, ctx, e);
    }
    sync_kptfile(io, ctx, &rendered.files)?;
    let observed = observed_version_after_render(requested, &ctx.pr.metadata.annotations);
    let ok = cond(&ctx.pr, RENDERED, "True", "Rendered", "", ctx.now);
    apply(io, render_status(&ctx.pr, "", &observed, ok))?;
    Ok(Phase::Continue)
}
