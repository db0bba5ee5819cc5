//! Which upstream PackageRevision a PackageVariant follows, and which
//! revision a downstream was made from (its `status.upstreamLock`).
//!
//! # Difference from upstream Porch
//!
//! Upstream's PackageVariant controller overwrites `spec.upstream.revision`
//! with `-1` during validation and then resolves the upstream by
//! `workspaceName`, or else by the literal workspace `main` (the branch
//! placeholder, revision -1). So the revision a user asks for is ignored, a
//! variant without `workspaceName` clones the placeholder (which Porch now
//! refuses), and since the placeholder's lock ref `main` always reads as -1,
//! such a variant is never found out of date.
//!
//! Here `spec.upstream` means (see [`UpstreamSelector`]):
//! 1. `workspaceName` set: the revision with that workspace name, any
//!    lifecycle (as upstream);
//! 2. else `revision > 0`: the *published* revision with that number;
//! 3. else: the latest published revision (highest revision number, at
//!    least 1) — a floating upstream, so that a newly published upstream
//!    revision makes the downstream out of date and gets an upgrade draft.
//!    The `main` placeholder (revision -1) is never chosen this way.
//!
//! Not-found errors keep upstream's wording (`could not find upstream package
//! revision ...`) but name the package, repository and selector readably
//! instead of Go's `%#v` dump of the `Upstream` pointer.

use crate::api::package_revision::PackageRevision;
use crate::api::package_variant::Upstream;
pub use crate::api::upstream_lock::{
    is_up_to_date, lock_ref_revision, locked_upstream, revision2int, LockedUpstream,
};

/// How `spec.upstream` selects a revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpstreamSelector<'a> {
    /// The revision with this workspace name (any lifecycle).
    Workspace(&'a str),
    /// The published revision with this number (> 0).
    Revision(i64),
    /// The published revision with the highest number.
    Latest,
}

impl<'a> UpstreamSelector<'a> {
    /// The selector `spec.upstream` stands for: `workspaceName` first, then
    /// a positive `revision`, else the latest published revision (a zero or
    /// negative revision counts as "not given").
    pub fn of(upstream: &'a Upstream) -> Self {
        if !upstream.workspace_name.is_empty() {
            UpstreamSelector::Workspace(&upstream.workspace_name)
        } else if upstream.revision > 0 {
            UpstreamSelector::Revision(upstream.revision)
        } else {
            UpstreamSelector::Latest
        }
    }
}

/// An upstream revision could not be determined.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UpstreamError {
    /// `getPublishedUpstreamByRevision` was asked for revision 0 (a draft).
    #[error("upstream cannot be published with revision number 0")]
    RevisionZero,
    /// No revision of the package matches the workspace name.
    #[error(
        "could not find upstream package revision '{package}' with workspaceName '{workspace}' in repo '{repo}'"
    )]
    WorkspaceNotFound {
        /// Repository.
        repo: String,
        /// Package.
        package: String,
        /// Workspace name asked for.
        workspace: String,
    },
    /// No published revision of the package has this number.
    #[error("could not find upstream package revision '{package}/{revision}' in repo '{repo}'")]
    RevisionNotFound {
        /// Repository.
        repo: String,
        /// Package.
        package: String,
        /// Revision number asked for.
        revision: i64,
    },
    /// The package has no published revision.
    #[error(
        "could not find upstream package revision of package '{package}' in repo '{repo}': no published revision"
    )]
    NoPublishedRevision {
        /// Repository.
        repo: String,
        /// Package.
        package: String,
    },
}

fn same_package(pr: &PackageRevision, upstream: &Upstream) -> bool {
    pr.spec.repository == upstream.repo && pr.spec.package_name == upstream.package
}

/// Resolves `spec.upstream` over the listed revisions (see the module
/// documentation for the selection rules). Ties go to the first in list
/// order, as upstream's loops do.
pub fn resolve_upstream<'a>(
    upstream: &Upstream,
    prs: &'a [PackageRevision],
) -> Result<&'a PackageRevision, UpstreamError> {
    let mut candidates = prs.iter().filter(|pr| same_package(pr, upstream));
    match UpstreamSelector::of(upstream) {
        UpstreamSelector::Workspace(ws) => candidates
            .find(|pr| pr.spec.workspace_name == ws)
            .ok_or_else(|| UpstreamError::WorkspaceNotFound {
                repo: upstream.repo.clone(),
                package: upstream.package.clone(),
                workspace: ws.to_string(),
            }),
        UpstreamSelector::Revision(n) => candidates
            .find(|pr| pr.spec.revision == n && pr.spec.lifecycle.is_published())
            .ok_or_else(|| UpstreamError::RevisionNotFound {
                repo: upstream.repo.clone(),
                package: upstream.package.clone(),
                revision: n,
            }),
        UpstreamSelector::Latest => {
            let mut best: Option<&PackageRevision> = None;
            for pr in candidates.filter(|pr| pr.spec.lifecycle.is_published()) {
                if pr.spec.revision >= 1 && best.is_none_or(|b| pr.spec.revision > b.spec.revision)
                {
                    best = Some(pr);
                }
            }
            best.ok_or_else(|| UpstreamError::NoPublishedRevision {
                repo: upstream.repo.clone(),
                package: upstream.package.clone(),
            })
        }
    }
}

/// `getPublishedUpstreamByRevision`: the first published (Published or
/// DeletionProposed) revision of `upstream.repo`/`upstream.package` whose
/// number is `revision`; `workspaceName` is ignored. Used to find the old
/// upstream of an upgrade.
pub fn published_upstream_by_revision<'a>(
    upstream: &Upstream,
    revision: i64,
    prs: &'a [PackageRevision],
) -> Result<&'a PackageRevision, UpstreamError> {
    if revision == 0 {
        return Err(UpstreamError::RevisionZero);
    }
    prs.iter()
        .find(|pr| {
            same_package(pr, upstream)
                && pr.spec.revision == revision
                && pr.spec.lifecycle.is_published()
        })
        .ok_or_else(|| UpstreamError::RevisionNotFound {
            repo: upstream.repo.clone(),
            package: upstream.package.clone(),
            revision,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::package_revision::{GitLock, Lifecycle, Locator};

    fn pr(name: &str, ws: &str, rev: i64, lc: Lifecycle) -> PackageRevision {
        let mut pr = PackageRevision::default();
        pr.metadata.name = name.into();
        pr.spec.repository = "blueprints".into();
        pr.spec.package_name = "foo".into();
        pr.spec.workspace_name = ws.into();
        pr.spec.revision = rev;
        pr.spec.lifecycle = lc;
        pr
    }

    fn up(rev: i64, ws: &str) -> Upstream {
        Upstream {
            repo: "blueprints".into(),
            package: "foo".into(),
            revision: rev,
            workspace_name: ws.into(),
        }
    }

    fn list() -> Vec<PackageRevision> {
        vec![
            pr("main", "main", -1, Lifecycle::Published),
            pr("v1", "v1", 1, Lifecycle::Published),
            pr("v3", "v3", 3, Lifecycle::DeletionProposed),
            pr("v2", "v2", 2, Lifecycle::Published),
            pr("draft", "ws", 0, Lifecycle::Draft),
        ]
    }

    #[test]
    fn revision2int_matches_go() {
        assert_eq!(revision2int("v3"), 3);
        assert_eq!(revision2int("3"), 3);
        assert_eq!(revision2int("v+3"), 3);
        assert_eq!(revision2int("v-2"), -2);
        assert_eq!(revision2int("main"), -1);
        assert_eq!(revision2int("v3.2.1"), -1);
        assert_eq!(revision2int("vv3"), -1);
        assert_eq!(revision2int(""), -1);
        assert_eq!(revision2int("v"), -1);
        assert_eq!(revision2int("v 3"), -1);
        assert_eq!(revision2int("v99999999999999999999"), -1);
    }

    proptest::proptest! {
        #[test]
        fn revision2int_agrees_with_atoi(n in proptest::num::i64::ANY, v in proptest::bool::ANY) {
            let s = if v { format!("v{n}") } else { n.to_string() };
            proptest::prop_assert_eq!(revision2int(&s), n);
            proptest::prop_assert_eq!(lock_ref_revision(&format!("pkg/sub/{s}")), n);
        }

        #[test]
        fn revision2int_never_panics(s in "\\PC{0,30}") {
            let r = revision2int(&s);
            proptest::prop_assert!(r >= -1 || s.trim_start_matches('v').starts_with('-'));
        }
    }

    #[test]
    fn workspace_selects_any_lifecycle() {
        let prs = list();
        assert_eq!(
            resolve_upstream(&up(0, "ws"), &prs).unwrap().metadata.name,
            "draft"
        );
        // workspaceName wins over revision.
        assert_eq!(
            resolve_upstream(&up(2, "v1"), &prs).unwrap().metadata.name,
            "v1"
        );
        assert_eq!(
            resolve_upstream(&up(0, "nope"), &prs).unwrap_err().to_string(),
            "could not find upstream package revision 'foo' with workspaceName 'nope' in repo 'blueprints'"
        );
    }

    /// Regression: upstream ignores `revision` and clones `main`.
    #[test]
    fn revision_is_honoured() {
        let prs = list();
        assert_eq!(
            resolve_upstream(&up(2, ""), &prs).unwrap().metadata.name,
            "v2"
        );
        assert_eq!(
            resolve_upstream(&up(3, ""), &prs).unwrap().metadata.name,
            "v3"
        );
        let err = resolve_upstream(&up(4, ""), &prs).unwrap_err();
        assert_eq!(
            err.to_string(),
            "could not find upstream package revision 'foo/4' in repo 'blueprints'"
        );
        assert!(err
            .to_string()
            .starts_with("could not find upstream package revision"));
    }

    /// Regression: upstream follows the `main` placeholder; we follow the
    /// latest published revision and never pick the placeholder.
    #[test]
    fn no_selector_follows_latest_published() {
        let prs = list();
        assert_eq!(
            resolve_upstream(&up(0, ""), &prs).unwrap().metadata.name,
            "v3"
        );
        assert_eq!(
            resolve_upstream(&up(-1, ""), &prs).unwrap().metadata.name,
            "v3"
        );
        let only_main = vec![pr("main", "main", -1, Lifecycle::Published)];
        assert_eq!(
            resolve_upstream(&up(0, ""), &only_main).unwrap_err().to_string(),
            "could not find upstream package revision of package 'foo' in repo 'blueprints': no published revision"
        );
        assert!(resolve_upstream(&up(0, ""), &[]).is_err());
    }

    #[test]
    fn other_packages_are_ignored() {
        let mut other = pr("other", "v9", 9, Lifecycle::Published);
        other.spec.package_name = "bar".into();
        let prs = vec![other, pr("v1", "v1", 1, Lifecycle::Published)];
        assert_eq!(
            resolve_upstream(&up(0, ""), &prs).unwrap().metadata.name,
            "v1"
        );
        assert!(resolve_upstream(&up(9, ""), &prs).is_err());
    }

    #[test]
    fn published_by_revision() {
        let prs = list();
        assert_eq!(
            published_upstream_by_revision(&up(0, "x"), 0, &prs),
            Err(UpstreamError::RevisionZero)
        );
        assert_eq!(
            published_upstream_by_revision(&up(0, "x"), 2, &prs)
                .unwrap()
                .metadata
                .name,
            "v2"
        );
        assert_eq!(
            published_upstream_by_revision(&up(0, ""), -1, &prs)
                .unwrap()
                .metadata
                .name,
            "main"
        );
        assert!(published_upstream_by_revision(&up(0, ""), 7, &prs).is_err());
    }

    fn with_lock(r: Option<&str>) -> PackageRevision {
        let mut d = pr("ds", "packagevariant-1", 1, Lifecycle::Published);
        if let Some(r) = r {
            d.status.upstream_lock = Some(Locator {
                type_: "git".into(),
                git: Some(GitLock {
                    r#ref: r.into(),
                    ..Default::default()
                }),
            });
        }
        d
    }

    #[test]
    fn up_to_date_by_lock_ref() {
        let v2 = pr("v2", "v2", 2, Lifecycle::Published);
        assert!(is_up_to_date(&with_lock(None), &v2));
        assert!(is_up_to_date(&with_lock(Some("")), &v2));
        assert!(is_up_to_date(&with_lock(Some("foo/v2")), &v2));
        assert!(is_up_to_date(&with_lock(Some("refs/tags/foo/v2")), &v2));
        assert!(!is_up_to_date(&with_lock(Some("foo/v1")), &v2));
        assert!(!is_up_to_date(&with_lock(Some("drafts/foo/v2")), &v2));
        assert!(!is_up_to_date(&with_lock(Some("main")), &v2));
        let main = pr("main", "main", -1, Lifecycle::Published);
        assert!(is_up_to_date(&with_lock(Some("main")), &main));
        assert_eq!(
            locked_upstream(&with_lock(Some("foo/v7"))),
            LockedUpstream::Revision(7)
        );
        assert_eq!(
            locked_upstream(&with_lock(Some("drafts/foo/ws"))),
            LockedUpstream::Draft("drafts/foo/ws")
        );
    }
}
