//! The Repository's status (`REPO/status.go`): the one `Ready` condition
//! for each state, the server-side-apply object that writes it,
//! `hasSpecChanged`, and the conflict-retry policy of that write.
//!
//! Every write stamps `lastTransitionTime = now` (the scheduling relies on
//! it as "time of the last status write"), whatever the previous status.

use std::str::FromStr;

use crate::api::meta::{set_status_condition, Condition, ObjectMeta};
use crate::api::repository::{self, Repository, RepositoryStatus};

use super::time::{Duration, Time};
use super::{CONDITION_READY, REASON_ERROR, REASON_READY, REASON_RECONCILING};

/// Message of the in-progress condition.
pub const MESSAGE_SYNC_IN_PROGRESS: &str = "Repository reconciliation in progress";
/// Message of the ready condition.
pub const MESSAGE_READY: &str = "Repository Ready";
/// Message of an error condition without error text.
pub const MESSAGE_UNKNOWN_ERROR: &str = "unknown error";

/// An unknown repository state.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StatusError {
    /// Not `sync-in-progress`, `ready` or `error`.
    #[error("unknown status type: {0}")]
    UnknownStatus(String),
    /// The status write kept conflicting (`wait.ErrWaitTimeout`).
    #[error("timed out waiting for the condition")]
    Timeout,
    /// The status write failed with another error (its text).
    #[error("{0}")]
    Patch(String),
}

/// `RepositoryStatus`: the state a status write records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// `sync-in-progress`: a full sync runs.
    SyncInProgress,
    /// `ready`: healthy.
    Ready,
    /// `error`: the last health check or sync failed.
    Error,
}

impl FromStr for State {
    type Err = StatusError;

    /// `sync-in-progress`, `ready` or `error`.
    fn from_str(s: &str) -> Result<State, StatusError> {
        match s {
            "sync-in-progress" => Ok(State::SyncInProgress),
            "ready" => Ok(State::Ready),
            "error" => Ok(State::Error),
            other => Err(StatusError::UnknownStatus(other.to_string())),
        }
    }
}

/// `buildRepositoryCondition`: the `Ready` condition of a state —
/// False/`Reconciling`/`Repository reconciliation in progress`,
/// True/`Ready`/`Repository Ready`, False/`Error`/<the error text, or
/// `unknown error`> — for `generation`, written `now`.
pub fn build_condition(generation: i64, state: State, error_message: &str, now: Time) -> Condition {
    let (status, reason, message) = match state {
        State::SyncInProgress => ("False", REASON_RECONCILING, MESSAGE_SYNC_IN_PROGRESS),
        State::Ready => ("True", REASON_READY, MESSAGE_READY),
        State::Error if error_message.is_empty() => ("False", REASON_ERROR, MESSAGE_UNKNOWN_ERROR),
        State::Error => ("False", REASON_ERROR, error_message),
    };
    Condition {
        type_: CONDITION_READY.to_string(),
        status: status.to_string(),
        // Go's omitempty drops a zero generation.
        observed_generation: (generation != 0).then_some(generation),
        last_transition_time: now.to_rfc3339(),
        reason: reason.to_string(),
        message: message.to_string(),
    }
}

/// The object of `updateRepoStatusWithBackoff`'s status apply (field
/// manager [`super::FIELD_MANAGER`], forced): name and namespace, the one
/// condition of `state`, and `lastFullSyncTime`, `observedGeneration`,
/// `observedRunOnceAt`, `packageCount`, `gitCommitHash`,
/// `nextFullSyncTime` copied from the in-memory Repository.
pub fn status_apply(repo: &Repository, state: State, error_message: &str, now: Time) -> Repository {
    let generation = repo.metadata.generation.unwrap_or(0);
    let current = repo.status.clone().unwrap_or_default();
    Repository {
        api_version: repository::API_VERSION.to_string(),
        kind: "Repository".to_string(),
        metadata: ObjectMeta {
            name: repo.metadata.name.clone(),
            namespace: repo.metadata.namespace.clone(),
            ..ObjectMeta::default()
        },
        spec: Default::default(),
        status: Some(RepositoryStatus {
            conditions: vec![build_condition(generation, state, error_message, now)],
            git_commit_hash: current.git_commit_hash,
            last_full_sync_time: current.last_full_sync_time,
            next_full_sync_time: current.next_full_sync_time,
            observed_generation: current.observed_generation.filter(|g| *g != 0),
            observed_run_once_at: current.observed_run_once_at,
            package_count: current.package_count.filter(|c| *c != 0),
        }),
    }
}

/// `setCondition`: `meta.SetStatusCondition` of a condition for the
/// Repository's generation (a new or flipped condition is stamped `now`).
pub fn set_condition(
    repo: &mut Repository,
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    now: Time,
) {
    let generation = repo.metadata.generation.unwrap_or(0);
    let condition = Condition {
        type_: type_.to_string(),
        status: status.to_string(),
        observed_generation: (generation != 0).then_some(generation),
        last_transition_time: now.to_rfc3339(),
        reason: reason.to_string(),
        message: message.to_string(),
    };
    let conditions = &mut repo.status.get_or_insert_with(Default::default).conditions;
    set_status_condition(conditions, condition, &now.to_rfc3339());
}

/// `hasSpecChanged`: `metadata.generation` differs from
/// `status.observedGeneration` (absent values are 0; the conditions'
/// observed generations play no part).
pub fn has_spec_changed(repo: &Repository) -> bool {
    let observed = repo
        .status
        .as_ref()
        .and_then(|s| s.observed_generation)
        .unwrap_or(0);
    repo.metadata.generation.unwrap_or(0) != observed
}

/// First wait between status-write attempts (`wait.Backoff.Duration`).
pub const STATUS_RETRY_INITIAL: Duration = Duration::from_millis(25);
/// Growth of the wait per attempt (`Factor` 1.5).
pub const STATUS_RETRY_FACTOR_PERCENT: i64 = 150;
/// Random extra wait, as a fraction of the wait (`Jitter` 0.1): the caller
/// adds up to this share (the core has no randomness).
pub const STATUS_RETRY_JITTER: f64 = 0.1;
/// Attempts in all (`Steps` 2).
pub const STATUS_RETRY_ATTEMPTS: u32 = 2;

/// How a status apply ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatchOutcome {
    /// Applied.
    Ok,
    /// A 409 Conflict: retried.
    Conflict,
    /// Any other error (its text): returned at once. A NotFound here
    /// means the Repository was deleted.
    Failed(String),
}

/// What to do after an attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RetryStep {
    /// Done.
    Done,
    /// Wait this long (plus up to [`STATUS_RETRY_JITTER`] of it), then
    /// try again.
    RetryAfter(Duration),
    /// Give up with this error.
    Fail(StatusError),
}

/// `wait.ExponentialBackoff{25ms, x1.5, jitter 0.1, 2 steps}` around the
/// status apply: the step after attempt `attempt` (1-based) ended with
/// `outcome`. Two conflicts in a row end in [`StatusError::Timeout`].
pub fn status_retry_step(attempt: u32, outcome: PatchOutcome) -> RetryStep {
    match outcome {
        PatchOutcome::Ok => RetryStep::Done,
        PatchOutcome::Failed(e) => RetryStep::Fail(StatusError::Patch(e)),
        PatchOutcome::Conflict if attempt >= STATUS_RETRY_ATTEMPTS => {
            RetryStep::Fail(StatusError::Timeout)
        }
        PatchOutcome::Conflict => {
            let mut wait = STATUS_RETRY_INITIAL.as_nanos();
            for _ in 1..attempt {
                wait = wait.saturating_mul(STATUS_RETRY_FACTOR_PERCENT) / 100;
            }
            RetryStep::RetryAfter(Duration::from_nanos(wait))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conflicts_are_retried_once() {
        assert_eq!(
            status_retry_step(1, PatchOutcome::Conflict),
            RetryStep::RetryAfter(Duration::from_millis(25))
        );
        assert_eq!(
            status_retry_step(2, PatchOutcome::Conflict),
            RetryStep::Fail(StatusError::Timeout)
        );
        assert_eq!(
            status_retry_step(1, PatchOutcome::Failed("boom".into())),
            RetryStep::Fail(StatusError::Patch("boom".into()))
        );
        assert_eq!(status_retry_step(2, PatchOutcome::Ok), RetryStep::Done);
    }

    #[test]
    fn set_condition_keeps_the_transition_time_of_an_unchanged_status() {
        let t0 = Time::parse_rfc3339("2026-04-29T12:00:00Z").unwrap();
        let t1 = Time::parse_rfc3339("2026-04-29T12:05:00Z").unwrap();
        let mut repo = Repository::default();
        repo.metadata.generation = Some(3);
        set_condition(&mut repo, "Ready", "True", "Ready", "a", t0);
        set_condition(&mut repo, "Ready", "True", "Ready", "b", t1);
        let c = &repo.status.as_ref().unwrap().conditions;
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].message, "b");
        assert_eq!(c[0].last_transition_time, "2026-04-29T12:00:00Z");
        assert_eq!(c[0].observed_generation, Some(3));
    }

    #[test]
    fn unknown_states_are_errors() {
        assert_eq!(
            "unknown".parse::<State>().unwrap_err().to_string(),
            "unknown status type: unknown"
        );
    }
}
