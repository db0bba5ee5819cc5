//! [`GitFetch`]: `cloneFrom.git` packages, read from a Git repository at a
//! ref. A local path is read in place; a URL is fetched with the `git`
//! command into a mirror under the cache directory (one per URL, refreshed
//! on each fetch), so the system's credential helpers and proxies apply.

use std::path::{Path, PathBuf};
use std::process::Command;

use git2::Repository;
use pv_core::api::package_revision::v1alpha2::GitSource;
use pv_core::api::package_revision::GitLock;
use pv_core::prc::reconcile::Fetched;

use super::{CallError, CallResult, GitFetcher};

/// Reads `cloneFrom.git` packages.
#[derive(Debug, Clone)]
pub struct GitFetch {
    /// Where URL mirrors are kept.
    pub cache: PathBuf,
    /// Relative repository paths are resolved against this directory.
    pub base: PathBuf,
}

fn failed(context: &str, e: impl std::fmt::Display) -> CallError {
    CallError::Failed(format!("{context}: {e}"))
}

fn is_url(repo: &str) -> bool {
    repo.contains("://") || (repo.contains('@') && repo.contains(':'))
}

impl GitFetch {
    fn mirror(&self, url: &str) -> CallResult<PathBuf> {
        use sha2::Digest;
        let key = hex(&sha2::Sha256::digest(url.as_bytes())[..8]);
        let path = self.cache.join(key);
        let status = if path.join("HEAD").exists() {
            Command::new("git")
                .arg("--git-dir")
                .arg(&path)
                .args(["fetch", "--prune", "--tags", "--quiet", "origin"])
                .arg("+refs/heads/*:refs/heads/*")
                .status()
        } else {
            std::fs::create_dir_all(&self.cache)
                .map_err(|e| failed(&format!("creating {}", self.cache.display()), e))?;
            Command::new("git")
                .args(["clone", "--mirror", "--quiet", url])
                .arg(&path)
                .status()
        };
        match status {
            Ok(s) if s.success() => Ok(path),
            Ok(s) => Err(CallError::Failed(format!("git fetch {url}: {s}"))),
            Err(e) => Err(failed(&format!("running git for {url}"), e)),
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The commit `r` names in `repo`: a tag, a branch, or a commit id.
fn resolve(repo: &Repository, r: &str) -> Option<git2::Oid> {
    let candidates = [
        format!("refs/tags/{r}"),
        format!("refs/heads/{r}"),
        format!("refs/remotes/origin/{r}"),
        r.to_string(),
    ];
    candidates.iter().find_map(|c| {
        repo.revparse_single(c)
            .ok()
            .and_then(|o| o.peel_to_commit().ok())
            .map(|c| c.id())
    })
}

impl GitFetcher for GitFetch {
    fn fetch(&self, _namespace: &str, git: &GitSource) -> CallResult<Fetched> {
        if git.secret_ref.as_ref().is_some_and(|s| !s.name.is_empty()) {
            return Err(CallError::Failed(format!(
                "spec.source.cloneFrom.git.secretRef: credentials Secrets are not read here; \
                 use a credential helper for {}",
                git.repo
            )));
        }
        let path = if is_url(&git.repo) {
            self.mirror(&git.repo)?
        } else {
            let p = Path::new(&git.repo);
            if p.is_absolute() {
                p.to_path_buf()
            } else {
                self.base.join(p)
            }
        };
        let repo = Repository::open(&path).map_err(|e| failed(&git.repo, e.message()))?;
        let reference = if git.r#ref.is_empty() {
            "main"
        } else {
            git.r#ref.as_str()
        };
        let commit = resolve(&repo, reference).ok_or_else(|| {
            CallError::NotFound(format!("{}: ref {reference:?} not found", git.repo))
        })?;
        let directory = git.directory.trim_matches('/');
        let files = crate::store::git::read_files(&repo, commit, directory)?;
        if files.is_empty() {
            return Err(CallError::NotFound(format!(
                "{}: no package at {directory:?} in {reference}",
                git.repo
            )));
        }
        Ok(Fetched {
            files,
            lock: GitLock {
                repo: git.repo.clone(),
                directory: git.directory.clone(),
                r#ref: reference.to_string(),
                commit: commit.to_string(),
            },
        })
    }
}
