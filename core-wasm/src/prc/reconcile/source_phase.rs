//! The source phase (`PRC/source.go`, §4 of the reference): once per
//! revision, make its first content from `spec.source` (init, copyFrom,
//! cloneFrom, upgrade) and write it to Git as a draft.

use crate::api::package_revision::v1alpha2::{PackageRevision, Source};
use crate::api::package_revision::{GitLock, Locator};
use crate::api::Lifecycle;
use crate::prc::render::{READY, RENDERED};
use crate::prc::source::{creation_source, init_package};

use super::io::{Answer, Call, Content, Fetched, Files, Io, RepoKey, RevisionKey, Suspend};
use super::lifecycle::apply;
use super::status::{cond, main_status, render_status};
use super::{Ctx, Outcome, Phase, PhaseResult};

/// Why a source could not run.
#[derive(Clone)]
struct SourceError {
    message: String,
    /// The failure came from a read that may succeed later (returned for
    /// backoff); otherwise the object itself is wrong and only a change
    /// to it helps.
    transient: bool,
}

impl SourceError {
    fn invalid(message: impl Into<String>) -> Self {
        SourceError {
            message: message.into(),
            transient: false,
        }
    }

    fn transient(message: impl Into<String>) -> Self {
        SourceError {
            message: message.into(),
            transient: true,
        }
    }
}

type SourceResult<T> = Result<Result<T, SourceError>, Suspend>;

/// `setSourceFailed`: Ready and Rendered False in one apply.
fn source_failed(io: &mut Io<'_>, ctx: &Ctx<'_>, e: &SourceError) -> PhaseResult {
    let ready = cond(&ctx.pr, READY, "False", "Failed", &e.message, ctx.now);
    let rendered = cond(&ctx.pr, RENDERED, "False", "Failed", &e.message, ctx.now);
    apply(io, main_status(&ctx.pr, &[ready, rendered], None, None))?;
    Ok(Phase::End(if e.transient {
        Outcome::error(e.message.clone())
    } else {
        Outcome::done()
    }))
}

pub(super) fn run(io: &mut Io<'_>, ctx: &Ctx<'_>) -> PhaseResult {
    if !ctx.pr.status.creation_source.is_empty() {
        return Ok(Phase::Continue);
    }
    let Some(source) = ctx.pr.spec.source.as_ref() else {
        return Ok(Phase::Continue);
    };
    let creation = match creation_source(&ctx.pr) {
        Ok(Some(c)) => c,
        Ok(None) => return Ok(Phase::Continue),
        Err(e) => return source_failed(io, ctx, &SourceError::invalid(e)),
    };
    // Replayed, the source's content is computed once (each later step
    // of the phase replays past it).
    let files = match io.memo("source", |io| resources(io, ctx, source))? {
        Ok(f) => f,
        Err(e) => return source_failed(io, ctx, &e),
    };
    let draft = io.call(Call::CreateNewDraft {
        revision: ctx.revision(),
        lifecycle: Lifecycle::Draft,
    })?;
    // A revision already in Git means an earlier pass wrote it and its
    // status was not seen yet: it is not written twice (§13.9).
    if !matches!(draft, Answer::AlreadyExists { .. }) {
        let draft: String = match draft.decode("draft handle") {
            Ok(d) => d,
            Err(e) => {
                return source_failed(
                    io,
                    ctx,
                    &SourceError::transient(format!("create draft: {e}")),
                )
            }
        };
        let updated = io.call(Call::UpdateResources {
            draft: draft.clone(),
            upstream_lock: super::io::upstream_lock_of(&files),
            files,
            message: creation.to_string(),
        })?;
        if let Err(e) = updated.into_result() {
            return source_failed(
                io,
                ctx,
                &SourceError::transient(format!("update resources: {e}")),
            );
        }
        let closed = io.call(Call::CloseDraft { draft, version: 0 })?;
        if let Err(e) = closed.into_result() {
            return source_failed(
                io,
                ctx,
                &SourceError::transient(format!("close draft: {e}")),
            );
        }
    }
    let content = io.call(Call::GetPackageContent {
        revision: ctx.revision(),
        resources: false,
    })?;
    let content: Option<Content> = match content.decode("package content") {
        Ok(c) => Some(c),
        Err(e) => {
            io.log(format!("read back the new revision: {e}"));
            None
        }
    };
    let pending = cond(
        &ctx.pr,
        READY,
        "False",
        "Pending",
        "awaiting render",
        ctx.now,
    );
    apply(
        io,
        main_status(&ctx.pr, &[pending], Some(creation), content.as_ref()),
    )?;
    let rendered = cond(
        &ctx.pr,
        RENDERED,
        "Unknown",
        "Pending",
        "awaiting render",
        ctx.now,
    );
    apply(io, render_status(&ctx.pr, "", "", rendered))?;
    if let Some(patch) = crate::prc::labels::ensure_label(&ctx.pr) {
        let answer = io.call(Call::MergePatch {
            namespace: ctx.pr.metadata.namespace.clone(),
            name: ctx.pr.metadata.name.clone(),
            patch,
        })?;
        if let Err(e) = answer.into_result() {
            io.log(format!("latest-revision label: {e}"));
        }
    }
    Ok(Phase::End(Outcome::requeue()))
}

/// The files the source makes.
fn resources(io: &mut Io<'_>, ctx: &Ctx<'_>, source: &Source) -> SourceResult<Files> {
    let pr = &ctx.pr;
    if let Some(init) = &source.init {
        return Ok(init_package(&pr.spec.package_name, init).map_err(SourceError::invalid));
    }
    if let Some(copy) = &source.copy_from {
        return copy_package(io, pr, &copy.name);
    }
    if let Some(clone) = &source.clone_from {
        let (files, upstream, lock) = if let Some(up) = &clone.upstream_ref {
            let upstream = match published(io, pr, &up.name, "upstream package")? {
                Ok(u) => u,
                Err(e) => return Ok(Err(e)),
            };
            let content = match content_of(io, pr, &upstream)? {
                Ok(c) => c,
                Err(e) => {
                    return Ok(Err(SourceError::transient(format!(
                        "failed to get upstream package content: {e}"
                    ))))
                }
            };
            let files = match content.resources {
                Some(f) if content.resources_error.is_none() => f,
                _ => {
                    return Ok(Err(SourceError::transient(format!(
                        "failed to read upstream resources: {}",
                        content.resources_error.unwrap_or_default()
                    ))))
                }
            };
            let lock = match (content.lock_error, content.self_lock.and_then(|l| l.git)) {
                (None, Some(git)) => git,
                (e, _) => {
                    return Ok(Err(SourceError::transient(format!(
                        "failed to get upstream lock for {:?}: {}",
                        up.name,
                        e.unwrap_or_else(|| "the revision has no Git lock".into())
                    ))))
                }
            };
            (files, lock.clone(), lock)
        } else if let Some(git) = &clone.git {
            let fetched = io.call(Call::FetchGit {
                namespace: pr.metadata.namespace.clone(),
                git: git.clone(),
            })?;
            let fetched: Fetched = match fetched.decode("fetched package") {
                Ok(f) => f,
                Err(e) => {
                    return Ok(Err(SourceError::transient(format!(
                        "failed to fetch from git: {e}"
                    ))))
                }
            };
            (fetched.files, fetched.lock.clone(), fetched.lock)
        } else {
            return Ok(Err(SourceError::invalid(
                "clone source must specify either upstreamRef or git",
            )));
        };
        // The clone's package context names the clone, as kpt's `pkg get`
        // and porch-server's clone task make it (upstream's controller
        // keeps the upstream's name).
        return Ok(
            update_upstream(&pr.spec.package_name, &files, &upstream, &lock).and_then(
                |mut files| {
                    crate::merge::kptfile::name_package_context(&mut files, &pr.spec.package_name)
                        .map_err(|e| SourceError::invalid(e.to_string()))?;
                    Ok(files)
                },
            ),
        );
    }
    if let Some(up) = &source.upgrade {
        return upgrade(io, pr, up);
    }
    Ok(Err(SourceError::invalid("source has no fields set")))
}

fn get_pr(io: &mut Io<'_>, pr: &PackageRevision, name: &str) -> SourceResult<PackageRevision> {
    let got = io.call(Call::GetPackageRevision {
        namespace: pr.metadata.namespace.clone(),
        name: name.to_string(),
    })?;
    let not_found = got.is_not_found();
    Ok(got.decode("PackageRevision").map_err(|e| SourceError {
        message: e,
        transient: !not_found,
    }))
}

/// Gets `name` and requires it published (`what` names it in errors).
fn published(
    io: &mut Io<'_>,
    pr: &PackageRevision,
    name: &str,
    what: &str,
) -> SourceResult<PackageRevision> {
    Ok(match get_pr(io, pr, name)? {
        Err(e) => Err(SourceError {
            message: format!("failed to get {what} {name:?}: {}", e.message),
            ..e
        }),
        Ok(p) if !p.spec.lifecycle.is_published() => Err(SourceError::invalid(format!(
            "{what} {name:?} must be published"
        ))),
        Ok(p) => Ok(p),
    })
}

/// The content of `src` with its files, read in `src`'s repository of the
/// reconciled object's namespace (upstream's `RepositoryKey{pr.Namespace,
/// src.Spec.Repository}`: a referenced revision is always Got from the
/// object's own namespace).
fn content_of(
    io: &mut Io<'_>,
    pr: &PackageRevision,
    src: &PackageRevision,
) -> Result<Result<Content, String>, Suspend> {
    let got = io.call(Call::GetPackageContent {
        revision: RevisionKey {
            repository: RepoKey {
                namespace: pr.metadata.namespace.clone(),
                name: src.spec.repository.clone(),
            },
            package: src.spec.package_name.clone(),
            workspace: src.spec.workspace_name.clone(),
        },
        resources: true,
    })?;
    Ok(got.decode("package content"))
}

fn copy_package(io: &mut Io<'_>, pr: &PackageRevision, name: &str) -> SourceResult<Files> {
    let src = match get_pr(io, pr, name)? {
        Ok(s) => s,
        Err(e) => {
            return Ok(Err(SourceError {
                message: format!("failed to get source package {name:?}: {}", e.message),
                ..e
            }))
        }
    };
    if src.spec.repository != pr.spec.repository {
        return Ok(Err(SourceError::invalid(format!(
            "source package must be from same repository {:?}, got {:?}",
            pr.spec.repository, src.spec.repository
        ))));
    }
    if src.spec.package_name != pr.spec.package_name {
        return Ok(Err(SourceError::invalid(format!(
            "source package must be same package {:?}, got {:?}",
            pr.spec.package_name, src.spec.package_name
        ))));
    }
    if !src.spec.lifecycle.is_published() {
        return Ok(Err(SourceError::invalid(format!(
            "source package {name:?} must be published"
        ))));
    }
    Ok(match content_of(io, pr, &src)? {
        Ok(Content {
            resources: Some(f),
            resources_error: None,
            ..
        }) => Ok(f),
        Ok(c) => Err(SourceError::transient(format!(
            "failed to get source package content: {}",
            c.resources_error.unwrap_or_default()
        ))),
        Err(e) => Err(SourceError::transient(format!(
            "failed to get source package content: {e}"
        ))),
    })
}

fn upgrade(
    io: &mut Io<'_>,
    pr: &PackageRevision,
    up: &crate::api::package_revision::v1alpha2::Upgrade,
) -> SourceResult<Files> {
    let mut prs = Vec::new();
    for (label, name) in [
        ("old upstream", &up.old_upstream.name),
        ("new upstream", &up.new_upstream.name),
        ("current package", &up.current_package.name),
    ] {
        match published(io, pr, name, "package")? {
            Ok(p) => prs.push(p),
            Err(e) => {
                return Ok(Err(SourceError {
                    message: format!("{label}: {}", e.message),
                    ..e
                }))
            }
        }
    }
    let mut contents = Vec::new();
    for (label, p) in [
        ("old upstream", &prs[0]),
        ("new upstream", &prs[1]),
        ("current package", &prs[2]),
    ] {
        let c = match content_of(io, pr, p)? {
            Ok(c) if c.resources_error.is_none() => c,
            Ok(c) => {
                return Ok(Err(SourceError::transient(format!(
                    "failed to read {label} resources: {}",
                    c.resources_error.unwrap_or_default()
                ))))
            }
            Err(e) => {
                return Ok(Err(SourceError::transient(format!(
                    "failed to read {label} resources: {e}"
                ))))
            }
        };
        contents.push(c);
    }
    let strategy = if up.strategy.is_empty() {
        "resource-merge"
    } else {
        up.strategy.as_str()
    };
    let files = |c: &Content| c.resources.clone().unwrap_or_default();
    let merged = match three_way(
        &files(&contents[2]),
        &files(&contents[0]),
        &files(&contents[1]),
        strategy,
    ) {
        Ok(m) => m,
        Err(e) => {
            return Ok(Err(SourceError::invalid(format!(
                "3-way merge failed: {e}"
            ))))
        }
    };
    let lock = match (&contents[1].lock_error, contents[1].self_lock.as_ref()) {
        (None, Some(Locator { git: Some(git), .. })) => git.clone(),
        (e, _) => {
            return Ok(Err(SourceError::transient(format!(
                "failed to get new upstream lock: {}",
                e.clone()
                    .unwrap_or_else(|| "the revision has no Git lock".into())
            ))))
        }
    };
    let updated = match update_upstream(&pr.spec.package_name, &merged, &lock, &lock) {
        Ok(f) => f,
        Err(e) => return Ok(Err(e)),
    };
    Ok(Ok(
        crate::prc::mergekey::add_merge_comments(&updated).unwrap_or(updated)
    ))
}

/// Porch's `DefaultPackageUpdater.Update`: local = the current package,
/// original = the old upstream, upstream = the new one. For fast-forward
/// the current package's Kptfile status is stripped first (a render's
/// `Rendered` condition is not a local change).
fn three_way(
    local: &Files,
    original: &Files,
    upstream: &Files,
    strategy: &str,
) -> Result<Files, String> {
    use crate::merge::strategy::{strip_kptfile_status, update_package};
    let local = if strategy == "fast-forward" {
        strip_kptfile_status(local)
    } else {
        local.clone()
    };
    update_package(&local, original, upstream, strategy).map_err(|e| e.to_string())
}

/// kpt's `UpdateKptfileUpstream`: the Kptfile named `package` and pointed
/// at `upstream`, locked at `lock`.
fn update_upstream(
    package: &str,
    files: &Files,
    upstream: &GitLock,
    lock: &GitLock,
) -> Result<Files, SourceError> {
    use crate::prc::upstream::{update_kptfile_upstream, Upstream};
    let locator = |g: &GitLock| Locator {
        type_: "git".into(),
        git: Some(g.clone()),
    };
    update_kptfile_upstream(
        package,
        files,
        &Upstream::from_lock(&locator(upstream)),
        &locator(lock),
    )
    .map_err(|e| SourceError::invalid(format!("failed to update Kptfile upstream: {e}")))
}
