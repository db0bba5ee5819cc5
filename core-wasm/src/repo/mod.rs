//! The Repository controller's decisions (Porch's
//! `controllers/repositories`): pure functions of the Repository, the
//! controller's settings and the current time, which is always an argument
//! (nothing here reads a clock). The host's reconciler reads the objects,
//! asks these what to do, and performs the Git and API calls.
//!
//! * [`sync`] — what a reconcile does: the `determineSyncDecision`
//!   priority table and its predicates (sync in progress, one-time sync,
//!   error retry, full sync, health check), clearing `runOnceAt`;
//! * [`intervals`] — when to come back: requeue intervals, error-text
//!   retry intervals, the next full-sync time, the stale-sync timeout;
//! * [`status`] — the `Ready` condition and the status apply object,
//!   `hasSpecChanged`, the conflict-retry policy of status writes;
//! * [`discovery`] — the v1alpha2 PackageRevisions made from the packages
//!   found in Git, when they are up to date, their labels, seed fields and
//!   the create/update/delete plan;
//! * [`config`] — the flags of the Repository and PackageRevision
//!   controllers with upstream's defaults, parsed as Go's `flag` package
//!   does; [`cache`] — the cache settings (type, DB from the environment,
//!   directory, commit identity);
//! * [`time`] and [`cron`] — Go's instants and durations, robfig's cron
//!   schedules.
//!
//! Behaviour and upstream's surprises: `shared/reference/
//! porch-packagerevision-controller.md` §10, §11, §13; the cases under
//! `tests/conformance/porch-upstream-prc/repo-*` pin it.

pub mod cache;
pub mod config;
pub mod cron;
pub mod discovery;
pub mod flags;
pub mod intervals;
pub mod reconcile;
pub mod status;
pub mod sync;
/// Go's instants and durations, shared with the other controllers
/// ([`crate::time`]); kept here under its old path.
pub use crate::time;

use crate::api::meta::Condition;
use crate::api::repository::Repository;

/// The finalizer the controller puts on every Repository.
pub const FINALIZER: &str = "config.porch.kpt.dev/repository";
/// The label naming a PackageRevision's Repository (the discovery list
/// selects by it).
pub const REPOSITORY_LABEL: &str = "porch.kpt.dev/repository";
/// The annotation (value `"true"`) that opts a Repository into v1alpha2
/// PackageRevision objects.
pub const V1ALPHA2_MIGRATION_ANNOTATION: &str = "porch.kpt.dev/v1alpha2-migration";
/// Field manager of the Repository status and of the owned fields of
/// discovered PackageRevisions (applied with force).
pub const FIELD_MANAGER: &str = "repository-controller";
/// Field manager of the seed fields of new PackageRevisions (no force).
pub const SEED_FIELD_MANAGER: &str = "repository-controller-seed";
/// The one condition type of a Repository.
pub const CONDITION_READY: &str = "Ready";
/// Reason of a healthy Repository.
pub const REASON_READY: &str = "Ready";
/// Reason while a full sync runs.
pub const REASON_RECONCILING: &str = "Reconciling";
/// Reason of a failed health check or sync.
pub const REASON_ERROR: &str = "Error";

/// The Repository's status conditions (none without a status).
pub(crate) fn conditions(repo: &Repository) -> &[Condition] {
    repo.status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default()
}

/// The first `Ready` condition with this status and reason.
pub(crate) fn ready_condition<'a>(
    repo: &'a Repository,
    status: &str,
    reason: &str,
) -> Option<&'a Condition> {
    conditions(repo)
        .iter()
        .find(|c| c.type_ == CONDITION_READY && c.status == status && c.reason == reason)
}

/// The `Ready=False/Error` condition, if the Repository is in error.
pub(crate) fn error_condition(repo: &Repository) -> Option<&Condition> {
    ready_condition(repo, "False", REASON_ERROR)
}

/// The key of the controller's in-memory set of Repositories synced since
/// it started: `<namespace>/<name>`.
pub fn cold_start_key(repo: &Repository) -> String {
    format!("{}/{}", repo.metadata.namespace, repo.metadata.name)
}
