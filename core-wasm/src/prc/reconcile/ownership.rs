//! The finalizer, the Repository ownerReference and deletion gating
//! (`PRC/ownership.go`, §7 of the reference).

use serde_json::{json, Map, Value};

use crate::api::meta::OwnerReference;
use crate::api::Lifecycle;
use crate::prc::FINALIZER;

use super::io::{Answer, Call, Io, Suspend};
use super::{update_latest_labels, Ctx, Outcome, Phase, PhaseResult};

/// The Repository's API version in owner references.
pub const REPOSITORY_API_VERSION: &str = "config.porch.kpt.dev/v1alpha1";

fn has_owner(ctx: &Ctx<'_>) -> bool {
    ctx.pr
        .metadata
        .owner_references
        .iter()
        .any(|o| o.kind == "Repository" && o.name == ctx.pr.spec.repository)
}

/// Adds the finalizer and the Repository ownerReference, in one merge
/// patch, when either is missing. A Repository that cannot be read is
/// logged and the finalizer is still added.
pub(super) fn ensure(io: &mut Io<'_>, ctx: &mut Ctx<'_>) -> PhaseResult {
    let mut patch = Map::new();
    if !ctx.pr.metadata.finalizers.iter().any(|f| f == FINALIZER) {
        ctx.pr.metadata.finalizers.push(FINALIZER.to_string());
        patch.insert("finalizers".into(), json!(ctx.pr.metadata.finalizers));
    }
    if !has_owner(ctx) {
        let repo = io.call(Call::GetRepository {
            namespace: ctx.pr.metadata.namespace.clone(),
            name: ctx.pr.spec.repository.clone(),
        })?;
        match repo.into_result() {
            Ok(repo) => {
                ctx.pr.metadata.owner_references.push(OwnerReference {
                    api_version: REPOSITORY_API_VERSION.into(),
                    kind: "Repository".into(),
                    name: ctx.pr.spec.repository.clone(),
                    uid: repo["metadata"]["uid"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    controller: None,
                    block_owner_deletion: None,
                });
                patch.insert(
                    "ownerReferences".into(),
                    json!(ctx.pr.metadata.owner_references),
                );
            }
            Err(e) => io.log(format!(
                "Repository {}/{} for the ownerReference: {e}",
                ctx.pr.metadata.namespace, ctx.pr.spec.repository
            )),
        }
    }
    if patch.is_empty() {
        return Ok(Phase::Continue);
    }
    let answer = io.call(Call::MergePatch {
        namespace: ctx.pr.metadata.namespace.clone(),
        name: ctx.pr.metadata.name.clone(),
        patch: json!({ "metadata": Value::Object(patch) }),
    })?;
    match answer.into_result() {
        Ok(_) => Ok(Phase::Continue),
        Err(e) => Ok(Phase::End(Outcome::error(format!(
            "failed to patch finalizer/ownerReference: {e}"
        )))),
    }
}

/// A PackageRevision being deleted: a published one is kept while its
/// Repository exists (deletion gating); otherwise the revision is deleted
/// from Git, the finalizer removed and the package's latest-revision labels
/// recomputed.
pub(super) fn deletion(io: &mut Io<'_>, ctx: &Ctx<'_>) -> Result<Outcome, Suspend> {
    let pr = &ctx.pr;
    if pr.spec.lifecycle == Lifecycle::Published {
        let repo = io.call(Call::GetRepository {
            namespace: pr.metadata.namespace.clone(),
            name: pr.spec.repository.clone(),
        })?;
        return match repo {
            Answer::Ok { .. } => {
                // Kept while the Repository exists — unless the package
                // is already gone from Git (the Repository controller
                // deletes the object of a package that disappeared):
                // upstream leaves that object Terminating for good
                // (§13.7).
                let content = io.call(Call::GetPackageContent {
                    revision: ctx.revision(),
                    resources: false,
                })?;
                if matches!(content, Answer::NotFound { .. }) {
                    let outcome = remove_finalizer(io, ctx)?;
                    if outcome.error.is_none() {
                        update_latest_labels(io, pr)?;
                    }
                    return Ok(outcome);
                }
                Ok(Outcome::done())
            }
            Answer::NotFound { .. } => {
                let deleted = io.call(Call::DeletePackage {
                    revision: ctx.revision(),
                })?;
                if let Err(e) = deleted.into_result() {
                    io.log(format!("delete package of a removed repository: {e}"));
                }
                remove_finalizer(io, ctx)
            }
            other => Ok(Outcome::error(format!(
                "failed to check owner repository: {}",
                other.into_result().err().unwrap_or_default()
            ))),
        };
    }
    let deleted = io.call(Call::DeletePackage {
        revision: ctx.revision(),
    })?;
    if !deleted.is_not_found() {
        if let Err(e) = deleted.into_result() {
            return Ok(Outcome::error(format!(
                "failed to delete package from git: {e}"
            )));
        }
    }
    let outcome = remove_finalizer(io, ctx)?;
    if outcome.error.is_none() {
        update_latest_labels(io, pr)?;
    }
    Ok(outcome)
}

fn remove_finalizer(io: &mut Io<'_>, ctx: &Ctx<'_>) -> Result<Outcome, Suspend> {
    let pr = &ctx.pr;
    if !pr.metadata.finalizers.iter().any(|f| f == FINALIZER) {
        return Ok(Outcome::done());
    }
    let rest: Vec<&String> = pr
        .metadata
        .finalizers
        .iter()
        .filter(|f| *f != FINALIZER)
        .collect();
    let finalizers = if rest.is_empty() {
        Value::Null
    } else {
        json!(rest)
    };
    let answer = io.call(Call::MergePatch {
        namespace: pr.metadata.namespace.clone(),
        name: pr.metadata.name.clone(),
        patch: json!({"metadata": {"finalizers": finalizers}}),
    })?;
    if answer.is_not_found() {
        return Ok(Outcome::done());
    }
    match answer.into_result() {
        Ok(_) => Ok(Outcome::done()),
        Err(e) => Ok(Outcome::error(format!("failed to remove finalizer: {e}"))),
    }
}
