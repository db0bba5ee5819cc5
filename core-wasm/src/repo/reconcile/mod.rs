//! One reconcile of a Repository (`REPO/repository_controller.go`) as a
//! pure step function, like [`crate::prc::reconcile`]: [`step`] is given
//! the object's key, the time, and the answers to the calls made so far,
//! and returns the next [`Call`] or the reconcile's [`Outcome`].
//!
//! Reconcile: Get (NotFound: done) → deletion ([`deletion`]) → finalizer →
//! [`crate::repo::sync::determine_sync_decision`] → nothing, a health
//! check or a full sync ([`operations`]). A full sync that gets a slot of
//! the sync semaphore hands the host a background job
//! ([`Outcome::sync_job`]), which [`sync_step`] runs the same way
//! ([`background`]: open, refresh, list, v1alpha2 discovery, status).
//!
//! Deviation from upstream (reference §13.2): when nothing is due, a
//! Repository whose `Ready` condition is `Reconciling` or `Error` keeps it
//! (upstream overwrites it with `Ready`, which defeats the in-progress
//! guard and the error-retry timer); only an acknowledged generation is
//! written then, with the condition unchanged.

mod background;
mod deletion;
pub mod io;
mod operations;

use serde::{Deserialize, Serialize};

use crate::api::package_revision::v1alpha2::PackageRevision;
use crate::api::repository::Repository;

use super::config::SyncSettings;
use super::time::{Duration, Time};
pub use io::{Answer, Call, RepoKey};
use io::{Io, Suspend};

/// The controller's settings a reconcile uses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Config {
    /// Whether the cache was set up (upstream errors out without one).
    pub cache_available: bool,
    /// Health-check period, milliseconds (5m).
    pub health_check_frequency_ms: i64,
    /// Full-sync period, milliseconds (1h).
    pub full_sync_frequency_ms: i64,
    /// Age after which a `Reconciling` condition is stale, ms (20m).
    pub sync_stale_timeout_ms: i64,
    /// `--repositories.create-v1alpha2-rpkg`: full syncs also maintain
    /// v1alpha2 PackageRevision objects (for Repositories annotated
    /// `porch.kpt.dev/v1alpha2-migration: "true"`).
    pub create_v1alpha2: bool,
}

impl Default for Config {
    fn default() -> Self {
        let s = SyncSettings::default();
        Config {
            cache_available: true,
            health_check_frequency_ms: s.health_check_frequency.as_nanos() / 1_000_000,
            full_sync_frequency_ms: s.full_sync_frequency.as_nanos() / 1_000_000,
            sync_stale_timeout_ms: s.sync_stale_timeout.as_nanos() / 1_000_000,
            create_v1alpha2: false,
        }
    }
}

impl Config {
    /// The sync settings of [`crate::repo::sync`].
    pub fn settings(&self) -> SyncSettings {
        SyncSettings {
            health_check_frequency: Duration::from_millis(self.health_check_frequency_ms),
            full_sync_frequency: Duration::from_millis(self.full_sync_frequency_ms),
            sync_stale_timeout: Duration::from_millis(self.sync_stale_timeout_ms),
        }
    }
}

/// One step's input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepInput {
    /// Namespace of the Repository.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// The current time (RFC 3339).
    pub now: String,
    /// Settings.
    #[serde(default)]
    pub config: Config,
    /// Whether this controller process has already started a full sync of
    /// the Repository (its in-memory cold-start set, keyed
    /// [`crate::repo::cold_start_key`]).
    #[serde(default)]
    pub synced_since_start: bool,
    /// The answers to the calls made so far, in order.
    #[serde(default)]
    pub answers: Vec<Answer>,
}

/// A background sync's input: the copy of the Repository the reconcile
/// handed over.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SyncInput {
    /// The Repository as the reconcile saw it.
    pub repository: Repository,
    /// The current time (RFC 3339).
    pub now: String,
    /// Settings.
    #[serde(default)]
    pub config: Config,
    /// The answers to the calls made so far, in order.
    #[serde(default)]
    pub answers: Vec<Answer>,
}

/// How a reconcile (or a background sync) ended.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    /// Requeue with the controller's exponential backoff.
    #[serde(default)]
    pub requeue: bool,
    /// Reconcile again after this many milliseconds (0: not).
    #[serde(default)]
    pub requeue_after_ms: i64,
    /// The error returned (a background sync: the sync's failure, already
    /// written to the status).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Errors logged and gone on from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub log: Vec<String>,
    /// A full sync to run in the background ([`sync_step`]) with this copy
    /// of the Repository; a sync slot was taken for it, and the host adds
    /// the Repository to its cold-start set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_job: Option<Repository>,
}

impl Outcome {
    fn error(message: impl Into<String>) -> Self {
        Outcome {
            error: Some(message.into()),
            ..Outcome::default()
        }
    }

    fn after(d: Duration) -> Self {
        Outcome {
            requeue_after_ms: d.as_nanos() / 1_000_000,
            ..Outcome::default()
        }
    }
}

/// The next thing the host does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "camelCase")]
pub enum Step {
    /// Make this call and step again with its answer appended.
    Call {
        /// The call.
        call: Call,
    },
    /// It is over.
    Done {
        /// How it ended.
        outcome: Outcome,
    },
}

/// The error of a reconcile without a cache.
pub const CACHE_NOT_AVAILABLE: &str = "cache not available - controller not properly initialized";

fn finish(mut io: Io<'_>, r: Result<Outcome, Suspend>) -> Step {
    match r {
        Ok(mut outcome) => {
            if io.unused() > 0 {
                let n = io.unused();
                io.log(format!("{n} answers were given beyond the calls made"));
            }
            outcome.log.append(&mut io.log);
            Step::Done { outcome }
        }
        Err(Suspend) => match io.pending.take() {
            Some(call) => Step::Call { call },
            None => Step::Done {
                outcome: Outcome::error("the reconcile stopped without a call"),
            },
        },
    }
}

fn parse_now(now: &str) -> Result<Time, String> {
    Time::parse_rfc3339(now).map_err(|e| format!("now {now:?}: {e}"))
}

/// The next step of the reconcile of `input.namespace/input.name`.
pub fn step(input: &StepInput) -> Step {
    let mut io = Io::new(&input.answers);
    let r = reconcile(&mut io, input);
    finish(io, r)
}

/// The next step of a background full sync.
pub fn sync_step(input: &SyncInput) -> Step {
    let mut io = Io::new(&input.answers);
    let r = match parse_now(&input.now) {
        Ok(now) => background::run(&mut io, &input.repository, &input.config, now),
        Err(e) => Ok(Outcome::error(e)),
    };
    finish(io, r)
}

/// The next step of applying one PackageRevision the way a background
/// sync applies a discovered one (upstream's `applyPackageRevision`): the
/// owned spec apply, then the owned status apply, stopping at the first
/// failure, which is the outcome's error. Only the repository controller's
/// fields are sent ([`crate::repo::discovery::owned_apply`]), so a status
/// the object carries that it does not own (`revision`, `lifecycle`) is
/// not re-sent.
pub fn apply_step(pr: &PackageRevision, answers: &[Answer]) -> Step {
    let mut io = Io::new(answers);
    let r = background::apply_owned(&mut io, pr).map(|applied| match applied {
        Ok(()) => Outcome::default(),
        Err(e) => Outcome::error(e),
    });
    finish(io, r)
}

fn reconcile(io: &mut Io<'_>, input: &StepInput) -> Result<Outcome, Suspend> {
    if !input.config.cache_available {
        return Ok(Outcome::error(CACHE_NOT_AVAILABLE));
    }
    let now = match parse_now(&input.now) {
        Ok(t) => t,
        Err(e) => return Ok(Outcome::error(e)),
    };
    let got = io.call(Call::GetRepository {
        namespace: input.namespace.clone(),
        name: input.name.clone(),
    })?;
    if matches!(got, Answer::NotFound { .. }) {
        return Ok(Outcome::default());
    }
    let mut repo: Repository = match got.decode("Repository") {
        Ok(r) => r,
        Err(e) => return Ok(Outcome::error(e)),
    };
    if repo.metadata.deletion_timestamp.is_some() {
        return deletion::run(io, &repo);
    }
    if let Err(e) = ensure_finalizer(io, &mut repo)? {
        return Ok(Outcome::error(e));
    }
    let settings = input.config.settings();
    let decision =
        super::sync::determine_sync_decision(&repo, &settings, input.synced_since_start, now);
    if let Some(g) = decision.observed_generation {
        repo.status
            .get_or_insert_with(Default::default)
            .observed_generation = Some(g);
    }
    let ctx = operations::Ctx {
        repo,
        settings,
        now,
    };
    if !decision.sync_necessary {
        return operations::not_necessary(io, &ctx, &decision);
    }
    match decision.operation {
        super::sync::Operation::HealthCheck => operations::health_check(io, &ctx),
        super::sync::Operation::FullSync => operations::full_sync(io, &ctx),
    }
}

/// `ensureFinalizer`: a merge patch adding [`super::FINALIZER`] when it is
/// missing; whether it was added, or the patch's error.
fn ensure_finalizer(
    io: &mut Io<'_>,
    repo: &mut Repository,
) -> Result<Result<bool, String>, Suspend> {
    if repo
        .metadata
        .finalizers
        .iter()
        .any(|f| f == super::FINALIZER)
    {
        return Ok(Ok(false));
    }
    let mut finalizers = repo.metadata.finalizers.clone();
    finalizers.push(super::FINALIZER.to_string());
    let answer = io.call(Call::PatchRepository {
        namespace: repo.metadata.namespace.clone(),
        name: repo.metadata.name.clone(),
        patch: serde_json::json!({"metadata": {"finalizers": finalizers}}),
    })?;
    Ok(match answer.into_result() {
        Ok(_) => {
            repo.metadata.finalizers = finalizers;
            Ok(true)
        }
        Err(e) => Err(e),
    })
}

fn key_of(repo: &Repository) -> RepoKey {
    RepoKey {
        namespace: repo.metadata.namespace.clone(),
        name: repo.metadata.name.clone(),
    }
}

#[cfg(test)]
mod tests;
