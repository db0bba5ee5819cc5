//! Source execution of Porch's PackageRevision controller: the content of a
//! new draft from its task. Clone and upgrade content is computed by the
//! core (Kptfile upstream/upstreamLock, the three-way resource merge); an
//! edit copies its source.

use pv_core::api::package_revision::Locator;
use pv_core::api::PackageRevision;
use pv_core::merge::UpstreamSource;

use super::{Ctx, ReconcileError};
use crate::store::Files;

/// The content of a new draft and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct DraftContent {
    /// The package's files.
    pub files: Files,
    /// `status.upstreamLock` of the draft.
    pub upstream_lock: Option<Locator>,
    /// Fields where the upgrade merge kept the local value over a different
    /// upstream change (`file: kind/name: path`).
    pub conflicts: Vec<String>,
}

fn refused(msg: impl Into<String>) -> ReconcileError {
    ReconcileError::Refused(msg.into())
}

fn source_of(pr: &PackageRevision) -> Result<(UpstreamSource, Locator), ReconcileError> {
    let lock = pr
        .status
        .self_lock
        .clone()
        .ok_or_else(|| refused(format!("{} has no location (selfLock)", pr.metadata.name)))?;
    let git = lock.git.clone().unwrap_or_default();
    Ok((
        UpstreamSource {
            repo: git.repo,
            directory: git.directory,
            r#ref: git.r#ref,
            commit: git.commit,
        },
        lock,
    ))
}

fn files_of(
    ctx: &Ctx<'_>,
    ns: &str,
    name: &str,
) -> Result<(PackageRevision, Files), ReconcileError> {
    let pr = ctx.revisions.get(ns, name)?;
    let files = ctx
        .revisions
        .resources(ns, name)?
        .spec
        .resources
        .unwrap_or_default();
    Ok((pr, files))
}

/// Executes `draft`'s one task (clone, upgrade or edit) into content.
pub fn draft_content(
    ctx: &Ctx<'_>,
    draft: &PackageRevision,
) -> Result<DraftContent, ReconcileError> {
    let ns = draft.metadata.namespace.as_str();
    let task = draft
        .spec
        .tasks
        .first()
        .ok_or_else(|| refused(format!("draft {}: no task", draft.spec.workspace_name)))?;
    if let Some(clone) = &task.clone {
        let name = clone
            .upstream_ref
            .upstream_ref
            .as_ref()
            .map(|r| r.name.clone())
            .unwrap_or_default();
        let (up, files) = files_of(ctx, ns, &name)?;
        let (source, lock) = source_of(&up)?;
        let files = ctx
            .core
            .clone_package(&files, &draft.spec.package_name, &source)?
            .map_err(refused)?;
        return Ok(DraftContent {
            files,
            upstream_lock: Some(lock),
            conflicts: Vec::new(),
        });
    }
    if let Some(up) = &task.upgrade {
        let (_, old) = files_of(ctx, ns, &up.old_upstream_ref.name)?;
        let (new_pr, new) = files_of(ctx, ns, &up.new_upstream_ref.name)?;
        let (_, local) = files_of(ctx, ns, &up.local_package_revision_ref.name)?;
        let (source, lock) = source_of(&new_pr)?;
        let merged = ctx
            .core
            .upgrade_package(&old, &new, &local, &source)?
            .map_err(refused)?;
        return Ok(DraftContent {
            files: merged.files,
            upstream_lock: Some(lock),
            conflicts: merged
                .conflicts
                .iter()
                .map(|c| format!("{}: {}: {}", c.file, c.resource, c.path))
                .collect(),
        });
    }
    if let Some(edit) = &task.edit {
        let (src, files) = files_of(ctx, ns, &edit.source_ref.name)?;
        return Ok(DraftContent {
            files,
            upstream_lock: src.status.upstream_lock,
            conflicts: Vec::new(),
        });
    }
    Err(refused(format!(
        "draft {}: unsupported task {:?}",
        draft.spec.workspace_name, task.type_
    )))
}
