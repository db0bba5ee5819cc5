//! The PackageVariantSet's upstream lookup (`getUpstreamPR` of the set
//! controller, which differs from the PackageVariant controller's): the
//! first PackageRevision of the same repository and package whose revision
//! number **or** workspace name equals the upstream's. The set only uses it
//! for the CEL variable `upstream`; generated PackageVariants get
//! `spec.upstream` verbatim and resolve it themselves.

use super::scope::in_namespace;
use crate::api::{PackageRevision, Upstream};

/// No PackageRevision matches the set's upstream.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("could not find upstream package revision '{package}/{revision}' in repo '{repo}'")]
pub struct UpstreamNotFound {
    /// `spec.upstream.package`.
    pub package: String,
    /// `spec.upstream.revision`.
    pub revision: i64,
    /// `spec.upstream.repo`.
    pub repo: String,
}

/// Finds the upstream PackageRevision among `revisions` (those of other
/// namespaces than `namespace` are skipped; see [`in_namespace`]).
pub fn find_upstream<'a>(
    upstream: &Upstream,
    namespace: &str,
    revisions: &'a [PackageRevision],
) -> Result<&'a PackageRevision, UpstreamNotFound> {
    revisions
        .iter()
        .find(|pr| {
            in_namespace(&pr.metadata.namespace, namespace)
                && pr.spec.repository == upstream.repo
                && pr.spec.package_name == upstream.package
                && (pr.spec.revision == upstream.revision
                    || pr.spec.workspace_name == upstream.workspace_name)
        })
        .ok_or_else(|| UpstreamNotFound {
            package: upstream.package.clone(),
            revision: upstream.revision,
            repo: upstream.repo.clone(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pr(ns: &str, repo: &str, pkg: &str, ws: &str, rev: i64) -> PackageRevision {
        let mut pr = PackageRevision::default();
        pr.metadata.namespace = ns.into();
        pr.spec.repository = repo.into();
        pr.spec.package_name = pkg.into();
        pr.spec.workspace_name = ws.into();
        pr.spec.revision = rev;
        pr
    }

    fn up(repo: &str, pkg: &str, ws: &str, rev: i64) -> Upstream {
        Upstream {
            repo: repo.into(),
            package: pkg.into(),
            revision: rev,
            workspace_name: ws.into(),
        }
    }

    #[test]
    fn revision_or_workspace_matches() {
        let prs = vec![pr("", "r", "p", "main", -1), pr("", "r", "p", "v2", 2)];
        assert_eq!(
            find_upstream(&up("r", "p", "", 2), "", &prs)
                .unwrap()
                .spec
                .workspace_name,
            "v2"
        );
        assert_eq!(
            find_upstream(&up("r", "p", "main", 0), "", &prs)
                .unwrap()
                .spec
                .revision,
            -1
        );
        let err = find_upstream(&up("r", "p", "x", 3), "", &prs).unwrap_err();
        assert_eq!(
            err.to_string(),
            "could not find upstream package revision 'p/3' in repo 'r'"
        );
    }

    #[test]
    fn other_namespaces_are_skipped() {
        let prs = vec![pr("other", "r", "p", "v2", 2)];
        assert!(find_upstream(&up("r", "p", "", 2), "ns", &prs).is_err());
        assert!(find_upstream(&up("r", "p", "", 2), "other", &prs).is_ok());
    }
}
