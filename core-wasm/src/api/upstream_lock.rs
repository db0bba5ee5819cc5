//! Which upstream revision a downstream PackageRevision was made from, as
//! its `status.upstreamLock` says, and whether that is a given upstream
//! revision: what the PackageVariant controller's plan and a
//! PackageVariantSet's rollout both ask of a revision.

use crate::api::package_revision::PackageRevision;

/// `repository.Revision2Int`: the revision number of a revision string,
/// `"v3"` → 3, `"3"` → 3; anything `strconv.Atoi` rejects after dropping one
/// leading `v` (`"main"`, `"v3.2.1"`, `""`) → -1.
pub fn revision2int(revision: &str) -> i64 {
    let s = revision.strip_prefix('v').unwrap_or(revision);
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return -1;
    }
    s.parse::<i64>().unwrap_or(-1)
}

/// What a downstream's `status.upstreamLock.git.ref` says about the upstream
/// revision it was made from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockedUpstream<'a> {
    /// No lock, no Git lock, or an empty ref (upstream assumes up to date).
    Unknown,
    /// Made from an upstream draft (`drafts/<pkg>/<workspace>`).
    Draft(&'a str),
    /// Made from `<pkg>/v<N>` (N from [`revision2int`] of the last path
    /// segment; -1 for a branch such as `main`).
    Revision(i64),
}

/// Reads `status.upstreamLock.git.ref` of a downstream.
pub fn locked_upstream(downstream: &PackageRevision) -> LockedUpstream<'_> {
    let Some(git) = downstream
        .status
        .upstream_lock
        .as_ref()
        .and_then(|l| l.git.as_ref())
    else {
        return LockedUpstream::Unknown;
    };
    let r = git.r#ref.as_str();
    if r.is_empty() {
        LockedUpstream::Unknown
    } else if r.starts_with("drafts") {
        LockedUpstream::Draft(r)
    } else {
        LockedUpstream::Revision(lock_ref_revision(r))
    }
}

/// `revisionFromUpstreamLock`: [`revision2int`] of the part after the last
/// `/` of a lock ref.
pub fn lock_ref_revision(lock_ref: &str) -> i64 {
    let last = lock_ref.rsplit('/').next().unwrap_or(lock_ref);
    revision2int(last)
}

/// `isUpToDate`, adapted to how a variant resolves its upstream: a downstream is up to
/// date when its lock ref names the resolved upstream's revision number
/// (`<pkg>/v<N>` with N = `upstream.spec.revision`). A `drafts/...` ref is
/// never up to date; a missing lock or ref counts as up to date (upstream
/// logs a warning and does the same). Only the number is compared, as
/// upstream does: the ref's path is the upstream's directory in its Git
/// repository, which need not equal its package name.
pub fn is_up_to_date(downstream: &PackageRevision, upstream: &PackageRevision) -> bool {
    match locked_upstream(downstream) {
        LockedUpstream::Unknown => true,
        LockedUpstream::Draft(_) => false,
        LockedUpstream::Revision(n) => n == upstream.spec.revision,
    }
}
