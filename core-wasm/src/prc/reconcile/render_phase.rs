//! The render phase (`PRC/render.go`, §5 of the reference): render a draft
//! whose source just ran or whose render was requested, and write the
//! result and what its Kptfile says.

use crate::krm::readiness::kptfile_from_resources;
use crate::prc::render::{observed_version_after_render, render_trigger, RENDERED};
use crate::prc::{PUSH_ON_RENDER_FAILURE_ANNOTATION, RENDER_REQUEST_ANNOTATION};

use super::io::{Call, Content, Files, Io, Rendered, Suspend};
use super::lifecycle::apply;
use super::status::{cond, kptfile_applies, render_failed_applies, render_status};
use super::{Ctx, Outcome, Phase, PhaseResult};

/// `setRenderFailed`: Rendered=False with the message (the request is
/// observed, so it does not trigger again), then Ready=False.
fn render_failed(io: &mut Io<'_>, ctx: &Ctx<'_>, message: &str) -> Result<(), Suspend> {
    for call in render_failed_applies(&ctx.pr, message, ctx.now) {
        apply(io, call)?;
    }
    Ok(())
}

/// A render-phase failure: recorded, and returned so the host retries it
/// with backoff (upstream drops it, §13.3).
fn fail(io: &mut Io<'_>, ctx: &Ctx<'_>, message: String) -> PhaseResult {
    fail_with(io, ctx, &message, message.clone())
}

/// As [`fail`], with a status message that differs from the error: a
/// renderer's own error is recorded as it is and returned wrapped
/// (`render failed: …`), as upstream does.
fn fail_with(io: &mut Io<'_>, ctx: &Ctx<'_>, status: &str, error: String) -> PhaseResult {
    render_failed(io, ctx, status)?;
    Ok(Phase::End(Outcome::error(error)))
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
    for call in kptfile_applies(&ctx.pr, &kptfile) {
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
        Err(e) => return fail_with(io, ctx, &e, format!("render failed: {e}")),
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
        // so it is recorded (the pipeline's message, as upstream) and
        // logged, not retried.
        render_failed(io, ctx, &error)?;
        io.log(format!("render pipeline failed: {error}"));
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
