//! What a reconcile does after the sync decision: nothing, a health check
//! or the start of a full sync (`REPO/repository_controller.go`,
//! `performHealthCheckSync`, `performFullSync`).

use crate::api::repository::Repository;
use crate::repo::config::SyncSettings;
use crate::repo::intervals::retry_interval;
use crate::repo::status::{status_apply, State};
use crate::repo::sync::{idle_requeue_after, SyncDecision};
use crate::repo::time::{Duration, Time};
use crate::repo::{error_condition, ready_condition, FIELD_MANAGER, REASON_RECONCILING};

use super::io::{Answer, Call, Io, Suspend};
use super::Outcome;

/// The requeue (and error text) when every sync slot is taken.
pub(super) const CAPACITY_RETRY: Duration = Duration::from_secs(30);
/// The status error when every sync slot is taken.
pub(super) const CAPACITY_EXCEEDED: &str = "sync capacity exceeded, retrying after 30s";

pub(super) struct Ctx {
    pub(super) repo: Repository,
    pub(super) settings: SyncSettings,
    pub(super) now: Time,
}

/// One status apply of `state`; the answer.
pub(super) fn write_status(
    io: &mut Io<'_>,
    repo: &Repository,
    state: State,
    message: &str,
    now: Time,
) -> Result<Answer, Suspend> {
    io.call(Call::ApplyRepositoryStatus {
        field_manager: FIELD_MANAGER.to_string(),
        object: status_apply(repo, state, message, now),
    })
}

/// Nothing due. Upstream applies `Ready` whatever the condition was
/// (§13.2); here a `Reconciling` or `Error` condition stays: nothing is
/// written, unless the decision acknowledged a new generation, which is
/// written with the condition as it was.
pub(super) fn not_necessary(
    io: &mut Io<'_>,
    ctx: &Ctx,
    decision: &SyncDecision,
) -> Result<Outcome, Suspend> {
    let repo = &ctx.repo;
    let keep = ready_condition(repo, "False", REASON_RECONCILING)
        .or_else(|| error_condition(repo))
        .cloned();
    let answer = match keep {
        Some(condition) => {
            if decision.observed_generation.is_none() {
                None
            } else {
                let mut object = status_apply(repo, State::Ready, "", ctx.now);
                object
                    .status
                    .get_or_insert_with(Default::default)
                    .conditions = vec![condition];
                Some(io.call(Call::ApplyRepositoryStatus {
                    field_manager: FIELD_MANAGER.to_string(),
                    object,
                })?)
            }
        }
        None => Some(write_status(io, repo, State::Ready, "", ctx.now)?),
    };
    if let Some(Err(e)) = answer.map(Answer::into_result) {
        io.log(format!("status update: {e}"));
    }
    Ok(match idle_requeue_after(decision) {
        None => Outcome {
            requeue: true,
            ..Outcome::default()
        },
        Some(d) => Outcome::after(d),
    })
}

/// `performHealthCheckSync`: a connectivity probe; on failure status
/// Error and back after max(30s, the error's retry interval); on success
/// status Ready, then a full sync if the Repository was in Error, else
/// back after the health-check period.
pub(super) fn health_check(io: &mut Io<'_>, ctx: &Ctx) -> Result<Outcome, Suspend> {
    let checked = io.call(Call::CheckRepositoryConnectivity {
        repository: ctx.repo.clone(),
    })?;
    if let Err(e) = checked.into_result() {
        let written = write_status(io, &ctx.repo, State::Error, &e, ctx.now)?;
        if let Err(w) = written.into_result() {
            io.log(format!("status update: {w}"));
        }
        return Ok(Outcome::after(
            retry_interval(&e).max(Duration::from_secs(30)),
        ));
    }
    let was_error = error_condition(&ctx.repo).is_some();
    let written = write_status(io, &ctx.repo, State::Ready, "", ctx.now)?;
    if let Err(w) = written.into_result() {
        io.log(format!("status update: {w}"));
    }
    if was_error {
        return full_sync(io, ctx);
    }
    Ok(Outcome::after(ctx.settings.health_check_frequency))
}

/// `performFullSync`: status SyncInProgress (its error is returned), then
/// a slot of the sync semaphore: none free -> status Error and back after
/// 30s; else the background job and back after the health-check period.
pub(super) fn full_sync(io: &mut Io<'_>, ctx: &Ctx) -> Result<Outcome, Suspend> {
    let written = write_status(io, &ctx.repo, State::SyncInProgress, "", ctx.now)?;
    if let Err(e) = written.into_result() {
        return Ok(Outcome::error(e));
    }
    let slot = io.call(Call::AcquireSyncSlot)?;
    let taken = match slot.into_result() {
        Ok(v) => v.as_bool().unwrap_or(false),
        Err(e) => {
            io.log(format!("sync semaphore: {e}"));
            false
        }
    };
    if !taken {
        let written = write_status(io, &ctx.repo, State::Error, CAPACITY_EXCEEDED, ctx.now)?;
        if let Err(e) = written.into_result() {
            io.log(format!("status update: {e}"));
        }
        return Ok(Outcome::after(CAPACITY_RETRY));
    }
    Ok(Outcome {
        sync_job: Some(ctx.repo.clone()),
        ..Outcome::after(ctx.settings.health_check_frequency)
    })
}
