//! The lifecycle phase (`reconcileLifecycle`, §3.1 of the reference): move
//! the revision in Git to `spec.lifecycle` and report Ready.

use super::io::{Call, Content, Io, Suspend};
use super::status::{cond, main_status};
use super::{update_latest_labels, Ctx, Outcome};
use crate::prc::render::READY;

fn failed(io: &mut Io<'_>, ctx: &Ctx<'_>, message: &str) -> Result<Outcome, Suspend> {
    let c = cond(&ctx.pr, READY, "False", "Failed", message, ctx.now);
    apply(io, main_status(&ctx.pr, &[c], None, None))?;
    Ok(Outcome::done())
}

/// Applies a status and logs a failure (the phase's result stands).
pub(super) fn apply(io: &mut Io<'_>, call: Call) -> Result<(), Suspend> {
    let what = match &call {
        Call::ApplyStatus { field_manager, .. } => format!("status apply as {field_manager}"),
        Call::ApplySpec { field_manager, .. } => format!("spec apply as {field_manager}"),
        _ => "apply".to_string(),
    };
    if let Err(e) = io.call(call)?.into_result() {
        io.log(format!("{what}: {e}"));
    }
    Ok(())
}

pub(super) fn run(io: &mut Io<'_>, ctx: &Ctx<'_>) -> Result<Outcome, Suspend> {
    let desired = ctx.pr.spec.lifecycle;
    let got = io.call(Call::GetPackageContent {
        revision: ctx.revision(),
        resources: false,
    })?;
    let content: Content = match got.decode("package content") {
        Ok(c) => c,
        Err(e) => return failed(io, ctx, &e),
    };
    let ready = cond(&ctx.pr, READY, "True", "Ready", "", ctx.now);
    if content.lifecycle == desired {
        apply(io, main_status(&ctx.pr, &[ready], None, Some(&content)))?;
        if desired.is_published() {
            update_latest_labels(io, &ctx.pr)?;
        }
        return Ok(Outcome::done());
    }
    let updated = io.call(Call::UpdateLifecycle {
        revision: ctx.revision(),
        lifecycle: desired,
    })?;
    let content: Content = match updated.decode("updated package content") {
        Ok(c) => c,
        Err(e) => return failed(io, ctx, &e),
    };
    apply(io, main_status(&ctx.pr, &[ready], None, Some(&content)))?;
    Ok(if desired.is_published() {
        Outcome::requeue()
    } else {
        Outcome::done()
    })
}
