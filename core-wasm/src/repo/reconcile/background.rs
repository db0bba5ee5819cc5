//! The background full sync (`PerformAsyncSync`, `syncRepository`,
//! `syncPackageRevisions`): open, refresh and list the repository,
//! maintain the v1alpha2 PackageRevisions when enabled, then write the
//! status; the sync slot is given back at the end.

use crate::api::package_revision::v1alpha2::PackageRevision;
use crate::api::repository::Repository;
use crate::repo::discovery::{
    owned_apply, plan_sync, seed_spec_apply, seed_status_apply, DiscoveredPackageRevision,
};
use crate::repo::intervals::next_full_sync_time;
use crate::repo::status::State;
use crate::repo::sync::clear_one_time_sync_flag;
use crate::repo::time::Time;
use crate::repo::{FIELD_MANAGER, SEED_FIELD_MANAGER, V1ALPHA2_MIGRATION_ANNOTATION};

use super::io::{Answer, Call, Io, Suspend};
use super::operations::write_status;
use super::{key_of, Config, Outcome};

pub(super) fn run(
    io: &mut Io<'_>,
    repo: &Repository,
    config: &Config,
    now: Time,
) -> Result<Outcome, Suspend> {
    let outcome = sync_and_record(io, repo, config, now)?;
    let released = io.call(Call::ReleaseSyncSlot)?;
    if let Err(e) = released.into_result() {
        io.log(format!("sync semaphore: {e}"));
    }
    Ok(outcome)
}

/// What `syncRepository` found: the package count and the commit hash.
struct Synced {
    package_count: i64,
    commit_hash: String,
}

fn sync_and_record(
    io: &mut Io<'_>,
    repo: &Repository,
    config: &Config,
    now: Time,
) -> Result<Outcome, Suspend> {
    let synced = match sync_repository(io, repo, config)? {
        Ok(s) => s,
        Err(e) => {
            let written = write_status(io, repo, State::Error, &e, now)?;
            if let Err(w) = written.into_result() {
                io.log(format!("status update: {w}"));
            }
            return Ok(Outcome::error(e));
        }
    };
    let mut updated = repo.clone();
    {
        let status = updated.status.get_or_insert_with(Default::default);
        status.last_full_sync_time = Some(now.to_rfc3339());
        status.observed_generation = repo.metadata.generation;
        status.observed_run_once_at = repo.spec.sync.as_ref().and_then(|s| s.run_once_at.clone());
        status.package_count = Some(synced.package_count);
        status.git_commit_hash = synced.commit_hash;
        status.next_full_sync_time =
            next_full_sync_time(repo, &config.settings(), now).map(|t| t.to_rfc3339());
    }
    match write_status(io, &updated, State::Ready, "", now)? {
        Answer::Ok { .. } => {}
        Answer::NotFound { .. } => {
            io.log("the Repository was deleted during the sync");
            return Ok(Outcome::default());
        }
        a => {
            let e = a.into_result().err().unwrap_or_default();
            io.log(format!("status update: {e}"));
        }
    }
    if let Some(patch) = clear_one_time_sync_flag(repo) {
        let cleared = io.call(Call::PatchRepository {
            namespace: repo.metadata.namespace.clone(),
            name: repo.metadata.name.clone(),
            patch,
        })?;
        if let Err(e) = cleared.into_result() {
            io.log(format!("clearing spec.sync.runOnceAt: {e}"));
        }
    }
    Ok(Outcome::default())
}

/// `syncRepository`: open, refresh, list; the v1alpha2 sync; the branch's
/// commit hash (best effort).
fn sync_repository(
    io: &mut Io<'_>,
    repo: &Repository,
    config: &Config,
) -> Result<Result<Synced, String>, Suspend> {
    let key = key_of(repo);
    let opened = io.call(Call::OpenRepository {
        repository: repo.clone(),
    })?;
    if let Err(e) = opened.into_result() {
        return Ok(Err(e));
    }
    let refreshed = io.call(Call::Refresh {
        repository: key.clone(),
    })?;
    if let Err(e) = refreshed.into_result() {
        return Ok(Err(e));
    }
    let listed = io.call(Call::ListPackages {
        repository: key.clone(),
    })?;
    let found: Vec<DiscoveredPackageRevision> = match listed.decode("package revisions") {
        Ok(f) => f,
        Err(e) => return Ok(Err(e)),
    };
    let migrate = repo
        .metadata
        .annotations
        .get(V1ALPHA2_MIGRATION_ANNOTATION)
        .is_some_and(|v| v == "true");
    if config.create_v1alpha2 && migrate {
        sync_package_revisions(io, repo, &found)?;
    }
    let hash = io.call(Call::BranchCommitHash { repository: key })?;
    let commit_hash = match hash.into_result() {
        Ok(v) => v.as_str().unwrap_or_default().to_string(),
        Err(e) => {
            io.log(format!("branch commit hash: {e}"));
            String::new()
        }
    };
    Ok(Ok(Synced {
        package_count: found.len() as i64,
        commit_hash,
    }))
}

/// `syncPackageRevisions` ([`plan_sync`] with its calls); every error is
/// logged, none fails the sync.
pub(super) fn sync_package_revisions(
    io: &mut Io<'_>,
    repo: &Repository,
    found: &[DiscoveredPackageRevision],
) -> Result<(), Suspend> {
    let namespace = repo.metadata.namespace.clone();
    let listed = io.call(Call::ListPackageRevisions {
        namespace: namespace.clone(),
        repository: repo.metadata.name.clone(),
    })?;
    let existing: Vec<PackageRevision> = match listed.decode("PackageRevision list") {
        Ok(l) => l,
        Err(e) => {
            io.log(format!("failed to list existing PackageRevisions: {e}"));
            return Ok(());
        }
    };
    let plan = plan_sync(repo, found, &existing);
    for (pr, new) in &plan.apply {
        let name = &pr.metadata.name;
        if let Err(e) = apply_owned(io, pr)? {
            io.log(format!("apply PackageRevision {name}: {e}"));
            continue;
        }
        let Some(f) = found.iter().find(|f| f.key.object_name() == *name) else {
            continue;
        };
        if *new {
            apply(
                io,
                name,
                Call::ApplyPackageRevision {
                    field_manager: SEED_FIELD_MANAGER.to_string(),
                    force: false,
                    object: seed_spec_apply(pr, f),
                },
            )?;
            apply(
                io,
                name,
                Call::ApplyPackageRevisionStatus {
                    field_manager: SEED_FIELD_MANAGER.to_string(),
                    force: false,
                    object: seed_status_apply(pr, f),
                },
            )?;
        }
    }
    for name in plan.delete {
        let deleted = io.call(Call::DeletePackageRevision {
            namespace: namespace.clone(),
            name: name.clone(),
        })?;
        if let Err(e) = deleted.into_result() {
            io.log(format!("delete PackageRevision {name}: {e}"));
        }
    }
    Ok(())
}

/// `applyPackageRevision`: the owned spec apply, then the owned status
/// apply (both [`FIELD_MANAGER`], forced, [`owned_apply`]); the first
/// failure ends it and is returned.
pub(super) fn apply_owned(
    io: &mut Io<'_>,
    pr: &PackageRevision,
) -> Result<Result<(), String>, Suspend> {
    let calls = [
        Call::ApplyPackageRevision {
            field_manager: FIELD_MANAGER.to_string(),
            force: true,
            object: owned_apply(pr),
        },
        Call::ApplyPackageRevisionStatus {
            field_manager: FIELD_MANAGER.to_string(),
            force: true,
            object: owned_apply(pr),
        },
    ];
    for call in calls {
        if let Err(e) = io.call(call)?.into_result() {
            return Ok(Err(e));
        }
    }
    Ok(Ok(()))
}

/// One apply; whether it succeeded (a failure is logged).
fn apply(io: &mut Io<'_>, name: &str, call: Call) -> Result<bool, Suspend> {
    match io.call(call)?.into_result() {
        Ok(_) => Ok(true),
        Err(e) => {
            io.log(format!("apply PackageRevision {name}: {e}"));
            Ok(false)
        }
    }
}
