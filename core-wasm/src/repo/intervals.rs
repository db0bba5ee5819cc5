//! When the Repository controller comes back to a Repository (`REPO/sync.go`):
//! requeue intervals, retry intervals by error text, the next full-sync
//! time, the stale-sync timeout, and the two timestamps they start from.

use crate::api::repository::Repository;

use super::config::{SyncSettings, DEFAULT_SYNC_STALE_TIMEOUT};
use super::cron;
use super::time::{Duration, Time};
use super::{conditions, error_condition, CONDITION_READY};

/// Retry interval of network errors (and of errors nobody recognises).
pub const RETRY_NETWORK: Duration = Duration::from_secs(30);
/// Retry interval of authentication errors.
pub const RETRY_AUTH: Duration = Duration::from_mins(10);
/// Retry interval of missing or invalid repositories and branches.
pub const RETRY_NOT_FOUND: Duration = Duration::from_mins(2);
/// Retry interval of timeouts.
pub const RETRY_TIMEOUT: Duration = Duration::from_mins(1);
/// Retry interval of TLS errors and of rate limiting.
pub const RETRY_TLS_OR_RATE_LIMIT: Duration = Duration::from_mins(5);
/// Requeue interval while in Error with an empty message.
pub const RETRY_DEFAULT: Duration = Duration::from_secs(30);
/// Requeue interval while a past `runOnceAt` waits for its sync.
pub const RUN_ONCE_PENDING: Duration = Duration::from_secs(1);

/// `determineRetryInterval`: the retry interval of an error, by the first
/// matching substring of its lower-cased text (`no such host` or
/// `connection refused` 30s; `authentication`, `permission denied`,
/// `failed to resolve credentials`, `resolved credentials are invalid`
/// 10m; `not found`, `invalid`, `branch` 2m; `timeout`, `deadline exceeded`
/// 1m; `certificate`, `tls`, `ssl` 5m; `rate limit`, `too many requests`
/// 5m; anything else 30s).
pub fn retry_interval(error: &str) -> Duration {
    let e = error.to_lowercase();
    let any = |needles: &[&str]| needles.iter().any(|n| e.contains(n));
    if any(&["no such host", "connection refused"]) {
        RETRY_NETWORK
    } else if any(&[
        "authentication",
        "permission denied",
        "failed to resolve credentials",
        "resolved credentials are invalid",
    ]) {
        RETRY_AUTH
    } else if any(&["not found", "invalid", "branch"]) {
        RETRY_NOT_FOUND
    } else if any(&["timeout", "deadline exceeded"]) {
        RETRY_TIMEOUT
    } else if any(&["certificate", "tls", "ssl"]) || any(&["rate limit", "too many requests"]) {
        RETRY_TLS_OR_RATE_LIMIT
    } else {
        RETRY_NETWORK
    }
}

/// `getSyncStaleTimeout`: the configured timeout when positive, else 20m.
pub fn stale_timeout(configured: Duration) -> Duration {
    if configured > Duration::ZERO {
        configured
    } else {
        DEFAULT_SYNC_STALE_TIMEOUT
    }
}

/// `getLastFullSyncTime`: `status.lastFullSyncTime`, or the zero time.
pub fn last_full_sync_time(repo: &Repository) -> Time {
    Time::from_k8s(
        repo.status
            .as_ref()
            .and_then(|s| s.last_full_sync_time.as_deref()),
    )
}

/// `getLastStatusUpdateTime`: the `lastTransitionTime` of the first
/// `Ready` condition (any status), or the zero time. The status writer
/// stamps it on every write, so it is the time of the last status write.
pub fn last_status_update_time(repo: &Repository) -> Time {
    conditions(repo)
        .iter()
        .find(|c| c.type_ == CONDITION_READY)
        .map(|c| Time::from_k8s(Some(&c.last_transition_time)))
        .unwrap_or(Time::ZERO)
}

/// `spec.sync.runOnceAt` (`None` when unset; an unreadable value is the
/// zero time, i.e. long past).
pub fn run_once_at(repo: &Repository) -> Option<Time> {
    let text = repo.spec.sync.as_ref()?.run_once_at.as_deref()?;
    Some(Time::from_k8s(Some(text)))
}

/// `status.observedRunOnceAt` (`None` when unset).
pub fn observed_run_once_at(repo: &Repository) -> Option<Time> {
    let text = repo.status.as_ref()?.observed_run_once_at.as_deref()?;
    Some(Time::from_k8s(Some(text)))
}

/// The Repository's cron schedule, if it has a valid one.
pub fn schedule(repo: &Repository) -> Option<cron::Schedule> {
    let text = repo.spec.sync.as_ref().map(|s| s.schedule.as_str())?;
    if text.is_empty() {
        return None;
    }
    cron::parse_standard(text).ok()
}

/// `getRequeueInterval`: in Error, the retry interval of its message (30s
/// for an empty one); otherwise [`next_sync_interval`].
pub fn requeue_interval(repo: &Repository, settings: &SyncSettings, now: Time) -> Duration {
    match error_condition(repo) {
        Some(c) if !c.message.is_empty() => retry_interval(&c.message),
        Some(_) => RETRY_DEFAULT,
        None => next_sync_interval(repo, settings, now),
    }
}

/// `calculateNextSyncInterval`: a future `runOnceAt` -> the time until
/// it; no `Ready` condition yet -> the health-check period; a past
/// `runOnceAt` still waiting for its sync -> 1s; otherwise the sooner of
/// the health-check and full-sync remainders (each non-positive remainder
/// replaced by its full period), where a valid cron schedule's next run
/// after the last full sync (or after now, never synced) replaces the
/// full-sync remainder when sooner and positive.
///
/// Fixed upstream bug: upstream returns 1s for any past `runOnceAt` still
/// in the spec, including one already acted on (equal to
/// `status.observedRunOnceAt`, left behind when clearing the flag failed —
/// clearing is "non-critical"). Nothing then ever clears it, and the
/// Repository is requeued, with a status write, every second for good.
/// Here the 1s applies only while that `runOnceAt` is still due.
pub fn next_sync_interval(repo: &Repository, settings: &SyncSettings, now: Time) -> Duration {
    let run_once = run_once_at(repo);
    if let Some(at) = run_once {
        let until = at.since(now);
        if until > Duration::ZERO {
            return until;
        }
    }
    let last_update = last_status_update_time(repo);
    if last_update.is_zero() {
        return settings.health_check_frequency;
    }
    if run_once.is_some() && run_once != observed_run_once_at(repo) {
        return RUN_ONCE_PENDING;
    }
    let mut next_health = settings
        .health_check_frequency
        .saturating_sub(now.since(last_update));
    if next_health <= Duration::ZERO {
        next_health = settings.health_check_frequency;
    }
    let last_full = last_full_sync_time(repo);
    let mut next_full = settings.full_sync_frequency;
    if !last_full.is_zero() {
        next_full = settings
            .full_sync_frequency
            .saturating_sub(now.since(last_full));
        if next_full <= Duration::ZERO {
            next_full = settings.full_sync_frequency;
        }
    }
    if let Some(s) = schedule(repo) {
        let from = if last_full.is_zero() { now } else { last_full };
        // No next run (Go's zero time) is long past: never sooner.
        if let Some(next) = s.next(from) {
            let until = next.since(now);
            if until > Duration::ZERO && until < next_full {
                next_full = until;
            }
        }
    }
    next_health.min(next_full)
}

/// `calculateNextFullSyncTime`: with a valid cron schedule its next run
/// after the last full sync (or after now, never synced; `None` when the
/// schedule has no next run — Go's zero time); otherwise now plus the
/// full-sync period.
pub fn next_full_sync_time(repo: &Repository, settings: &SyncSettings, now: Time) -> Option<Time> {
    if let Some(s) = schedule(repo) {
        let last = last_full_sync_time(repo);
        return s.next(if last.is_zero() { now } else { last });
    }
    Some(now.plus(settings.full_sync_frequency))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::meta::Condition;
    use crate::api::repository::{RepositoryStatus, RepositorySync};

    fn at(s: &str) -> Time {
        Time::parse_rfc3339(s).unwrap()
    }

    fn ready(ltt: &str) -> Condition {
        Condition {
            type_: "Ready".into(),
            status: "True".into(),
            reason: "Ready".into(),
            last_transition_time: ltt.into(),
            ..Condition::default()
        }
    }

    #[test]
    fn the_first_matching_group_of_error_texts_wins() {
        // "resolved credentials are invalid" contains "invalid" too.
        assert_eq!(
            retry_interval("resolved credentials are invalid"),
            RETRY_AUTH
        );
        assert_eq!(retry_interval("branch timeout"), RETRY_NOT_FOUND);
        assert_eq!(
            retry_interval("x509: certificate signed by unknown authority"),
            RETRY_TLS_OR_RATE_LIMIT
        );
        assert_eq!(retry_interval(""), RETRY_NETWORK);
    }

    /// The fixed bug: an already-observed past runOnceAt (its clearing
    /// failed) no longer requeues every second.
    #[test]
    fn an_observed_past_run_once_at_does_not_requeue_every_second() {
        let now = at("2026-04-29T12:00:00Z");
        let mut repo = Repository {
            spec: crate::api::repository::RepositorySpec {
                sync: Some(RepositorySync {
                    run_once_at: Some("2026-04-29T11:00:00Z".into()),
                    ..RepositorySync::default()
                }),
                ..Default::default()
            },
            status: Some(RepositoryStatus {
                conditions: vec![ready("2026-04-29T11:58:00Z")],
                last_full_sync_time: Some("2026-04-29T11:00:05Z".into()),
                observed_run_once_at: Some("2026-04-29T11:00:00Z".into()),
                ..RepositoryStatus::default()
            }),
            ..Repository::default()
        };
        let settings = SyncSettings::default();
        // Health check due in 3m; the full sync in 1h - 59m55s = 5s.
        assert_eq!(
            next_sync_interval(&repo, &settings, now),
            Duration::from_secs(5)
        );
        // Not yet acted on: 1s, as upstream.
        repo.status.as_mut().unwrap().observed_run_once_at = None;
        assert_eq!(next_sync_interval(&repo, &settings, now), RUN_ONCE_PENDING);
    }

    #[test]
    fn an_impossible_cron_schedule_leaves_the_frequency() {
        let now = at("2026-04-29T12:00:00Z");
        let repo = Repository {
            spec: crate::api::repository::RepositorySpec {
                sync: Some(RepositorySync {
                    schedule: "0 0 30 2 *".into(),
                    ..RepositorySync::default()
                }),
                ..Default::default()
            },
            status: Some(RepositoryStatus {
                conditions: vec![ready("2026-04-29T11:59:00Z")],
                last_full_sync_time: Some("2026-04-29T11:30:00Z".into()),
                ..RepositoryStatus::default()
            }),
            ..Repository::default()
        };
        let settings = SyncSettings::default();
        assert_eq!(
            next_sync_interval(&repo, &settings, now),
            Duration::from_mins(4)
        );
        assert_eq!(next_full_sync_time(&repo, &settings, now), None);
    }
}
