//! PackageRevisions on local Git repositories, laid out as Porch lays out a
//! Git repository (libgit2 through `git2`, real commits, no `git` process):
//!
//! | lifecycle | where |
//! |---|---|
//! | Draft | branch `drafts/<package>/<workspace>` |
//! | Proposed | branch `proposed/<package>/<workspace>` |
//! | Published | tag `<package>/v<N>` on a commit merged into the main branch (the package as a directory) |
//! | DeletionProposed | the tag, plus branch `deletionProposed/<package>/<workspace>` |
//!
//! Package paths are under the Repository's `spec.git.directory`. Revision
//! numbers are assigned when a revision is published (highest + 1). Every
//! commit message ends with Porch's `kpt:` annotation
//! (`{"package":…,"workspaceName":…,"revision":…}`), which is how a tag's
//! workspace name is known.
//!
//! **Metadata** (labels, annotations, owner references, the task that made
//! the revision and its upstream lock) is not package content, and Porch
//! keeps it outside Git. Here it lives in the same repository under the ref
//! `refs/porch-variants/metadata`: one JSON file per revision
//! (`<package>/<workspace>.json`), each change a commit (so the history is
//! an audit log). A draft is created by writing its metadata first and its
//! branch second: an interrupted create leaves at most an unused metadata
//! file, which the next create of that workspace overwrites; it never
//! leaves a draft without its owner references (which would make the
//! variant create a second one, kpt#3877).
//!
//! Lifecycle moves are ordered the same way (new ref before old ref is
//! removed; tag before the main branch moves), and listing resolves the
//! leftovers of an interrupted move: the same workspace on a draft and a
//! proposed branch reads as proposed, on a tag and a branch as published.
//! The `kpt.dev/latest-revision` label is computed when listing, so it is
//! true on exactly the highest published revision.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use git2::{ObjectType, Oid, Repository, Signature, Tree};
use pv_core::api::package_revision::{GitLock, Lifecycle, Locator, Task};
use pv_core::api::{ObjectMeta, OwnerReference, PackageRevision, PackageRevisionResources};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::rules::{check_transition, copy_metadata, resources_of};
use super::{
    fingerprint_of, mark_latest, revision_name, Files, NewRevision, PackageRevisionStore, PrFilter,
    StoreError, StoreResult,
};

/// The ref holding revision metadata.
pub const METADATA_REF: &str = "refs/porch-variants/metadata";

/// One repository as a Repository object describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitRepoConfig {
    /// Repository name (`metadata.name`).
    pub name: String,
    /// Namespace of the Repository (and of its PackageRevisions).
    pub namespace: String,
    /// The Git repository on disk.
    pub path: PathBuf,
    /// Main branch (`spec.git.branch`, default `main`).
    pub branch: String,
    /// Directory of the packages in the repository (`spec.git.directory`).
    pub directory: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
struct RevisionMeta {
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
    #[serde(default)]
    owner_references: Vec<OwnerReference>,
    #[serde(default)]
    tasks: Vec<Task>,
    #[serde(default)]
    upstream_lock: Option<Locator>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct KptAnnotation {
    package: String,
    workspace_name: String,
    #[serde(default)]
    revision: String,
}

#[derive(Debug, Clone)]
struct Entry {
    pr: PackageRevision,
    commit: Oid,
}

struct RepoState {
    repo: Repository,
    entries: Option<Vec<Entry>>,
    /// UIDs in the owner references of `entries` (skips a repository when
    /// listing by owner).
    owners: BTreeSet<String>,
    /// The fingerprint of the refs (cached until the next write).
    fingerprint: Option<String>,
}

struct RepoHandle {
    cfg: GitRepoConfig,
    state: Mutex<RepoState>,
}

/// PackageRevisions of a set of local Git repositories.
pub struct GitRevisions {
    repos: BTreeMap<(String, String), RepoHandle>,
    signature: (String, String),
    /// Which repositories hold revisions owned by each UID, so that a list
    /// by owner visits only those ([`OwnerIndex`]).
    owner_index: Mutex<OwnerIndex>,
    /// Repositories whose revisions changed since the index last read
    /// them. A leaf lock: never held while taking another.
    owners_stale: Mutex<BTreeSet<(String, String)>>,
    /// The owners of each repository as of a fingerprint of its refs,
    /// kept between processes ([`GitRevisions::with_owner_cache`]), so
    /// that the index reads only repositories that changed.
    owner_cache: Mutex<OwnerCache>,
}

/// The owner UIDs each repository's revisions named when its refs had a
/// fingerprint: `{"repositories": {"<ns>/<name>": {"fingerprint": …,
/// "owners": […]}}}`. A repository whose refs have another fingerprint
/// now is read again; an unreadable file is ignored (read again, whole).
#[derive(Default, Serialize, Deserialize)]
struct OwnerCache {
    #[serde(skip)]
    path: Option<PathBuf>,
    #[serde(skip)]
    changed: bool,
    repositories: BTreeMap<String, CachedOwners>,
}

#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
struct CachedOwners {
    fingerprint: String,
    owners: BTreeSet<String>,
}

/// Owner UID to the repositories whose revisions name it in their owner
/// references. It may name a repository that no longer holds such a
/// revision (a list checks each repository's own owners), never misses
/// one: a repository is read into it again after each write
/// ([`GitRevisions::forget`]) before the next list by owner.
#[derive(Default)]
struct OwnerIndex {
    by_owner: std::collections::HashMap<String, BTreeSet<(String, String)>>,
}

fn sig(s: &(String, String)) -> StoreResult<Signature<'static>> {
    Signature::now(&s.0, &s.1).map_err(StoreError::git("making the commit signature"))
}

fn not_found(ns: &str, name: &str) -> StoreError {
    StoreError::NotFound {
        kind: "PackageRevision",
        namespace: ns.to_string(),
        name: name.to_string(),
    }
}

/// Creates a bare repository at `path` with an empty first commit on
/// `branch` (what `porch-variants local --init` and the tests start from).
///
/// The repository is built in a hidden sibling directory and renamed into
/// place, so a process killed at any instant leaves either no directory at
/// `path` or a complete repository, never a half-created one that every
/// later run would fail to open. When another process renames its own
/// repository into place first, that one is kept. Leftover build
/// directories of dead processes are removed.
pub fn init_bare(path: &Path, branch: &str) -> StoreResult<()> {
    let (parent, name) = split_repo_path(path)?;
    std::fs::create_dir_all(parent)
        .map_err(StoreError::io(format!("creating {}", parent.display())))?;
    remove_stale_builds(parent, &name);
    let aside = parent.join(format!("{}{}", build_prefix(&name), std::process::id()));
    if aside.exists() {
        std::fs::remove_dir_all(&aside)
            .map_err(StoreError::io(format!("removing {}", aside.display())))?;
    }
    let built = build_bare(&aside, branch);
    if let Err(e) = built {
        let _ = std::fs::remove_dir_all(&aside);
        return Err(e);
    }
    match std::fs::rename(&aside, path) {
        Ok(()) => {
            tracing::debug!(path = %path.display(), "created repository");
            Ok(())
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&aside);
            if Repository::open_bare(path).is_ok() {
                // Another process created it between our check and rename.
                Ok(())
            } else {
                Err(StoreError::io(format!(
                    "moving the new repository {} into place",
                    path.display()
                ))(e))
            }
        }
    }
}

fn build_bare(at: &Path, branch: &str) -> StoreResult<()> {
    // libgit2's own minimal template, not the system's (git's sample
    // hooks): a fleet of repositories is created in one run, and each
    // file is an inode to allocate.
    let mut options = git2::RepositoryInitOptions::new();
    options
        .bare(true)
        .external_template(false)
        .initial_head(branch);
    let repo = Repository::init_opts(at, &options)
        .map_err(StoreError::git(format!("init {}", at.display())))?;
    ensure_branch(
        &repo,
        branch,
        &("porch-variants".into(), "porch-variants@localhost".into()),
    )
}

fn split_repo_path(path: &Path) -> StoreResult<(&Path, String)> {
    let name = path.file_name().and_then(|n| n.to_str());
    match (path.parent(), name) {
        (Some(parent), Some(name)) if !name.is_empty() => Ok((parent, name.to_string())),
        _ => Err(StoreError::Invalid(format!(
            "{} cannot hold a repository (no directory name)",
            path.display()
        ))),
    }
}

/// `.<name>.init-`: the prefix of the directories a repository is built in.
fn build_prefix(name: &str) -> String {
    format!(".{name}.init-")
}

/// Removes the build directories of `name` left by processes that are no
/// longer running (on systems without `/proc`, none are removed).
fn remove_stale_builds(parent: &Path, name: &str) {
    let prefix = build_prefix(name);
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for e in entries.filter_map(Result::ok) {
        let file = e.file_name();
        let Some(pid) = file.to_str().and_then(|f| f.strip_prefix(&prefix)) else {
            continue;
        };
        let alive = Path::new("/proc").join(pid).exists() || !Path::new("/proc/self").exists();
        if !alive && pid.parse::<u32>().is_ok() {
            tracing::info!(path = %e.path().display(), "removing an interrupted repository creation");
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// Whether `path` is what an interrupted `git init` leaves: a directory
/// that does not open as a repository and holds no object and no ref, so
/// nothing in it can be lost by creating the repository again.
pub fn is_unfinished_repository(path: &Path) -> bool {
    if !path.is_dir() || Repository::open(path).is_ok() {
        return false;
    }
    fn holds_files(d: &Path) -> bool {
        let Ok(entries) = std::fs::read_dir(d) else {
            return false;
        };
        entries.filter_map(Result::ok).any(|e| {
            let p = e.path();
            if p.is_dir() {
                holds_files(&p)
            } else {
                true
            }
        })
    }
    !holds_files(&path.join("objects"))
        && !holds_files(&path.join("refs"))
        && !path.join("packed-refs").exists()
}

/// Removes `path` when [`is_unfinished_repository`] says it is the leftover
/// of an interrupted creation; returns whether it did.
pub fn remove_unfinished_repository(path: &Path) -> StoreResult<bool> {
    if !is_unfinished_repository(path) {
        return Ok(false);
    }
    tracing::warn!(path = %path.display(), "removing an unfinished repository (an interrupted --init) to create it again");
    std::fs::remove_dir_all(path).map_err(StoreError::io(format!(
        "removing the unfinished repository {}",
        path.display()
    )))?;
    Ok(true)
}

fn ensure_branch(repo: &Repository, branch: &str, who: &(String, String)) -> StoreResult<()> {
    let refname = format!("refs/heads/{branch}");
    if repo.find_reference(&refname).is_ok() {
        return Ok(());
    }
    let empty = repo
        .treebuilder(None)
        .and_then(|b| b.write())
        .map_err(StoreError::git("writing the empty tree"))?;
    let tree = repo
        .find_tree(empty)
        .map_err(StoreError::git("reading the empty tree"))?;
    let s = sig(who)?;
    repo.commit(Some(&refname), &s, &s, "Initial commit", &tree, &[])
        .map_err(StoreError::git(format!("creating branch {branch}")))?;
    Ok(())
}

/// Opens one repository of [`GitRevisions::open`].
fn open_handle(cfg: GitRepoConfig, signature: &(String, String)) -> StoreResult<RepoHandle> {
    if !cfg.path.exists() {
        return Err(StoreError::Invalid(format!(
            "repository {} at {} does not exist (in local mode, `porch-variants local --init` creates it)",
            cfg.name,
            cfg.path.display()
        )));
    }
    let repo = Repository::open(&cfg.path).map_err(|e| {
        if is_unfinished_repository(&cfg.path) {
            StoreError::Invalid(format!(
                "repository {} at {} is unfinished (an interrupted --init left it); \
                 `porch-variants local --init` creates it again",
                cfg.name,
                cfg.path.display()
            ))
        } else {
            StoreError::git(format!(
                "opening repository {} at {}",
                cfg.name,
                cfg.path.display()
            ))(e)
        }
    })?;
    ensure_branch(&repo, &cfg.branch, signature)?;
    Ok(RepoHandle {
        cfg,
        state: Mutex::new(RepoState {
            repo,
            entries: None,
            owners: Default::default(),
            fingerprint: None,
        }),
    })
}

impl GitRevisions {
    /// Opens the repositories (each must exist; a missing main branch is
    /// created with an empty commit, as Porch's `createBranch`).
    pub fn open(configs: Vec<GitRepoConfig>) -> StoreResult<Self> {
        let signature = (
            "porch-variants".to_string(),
            "porch-variants@localhost".to_string(),
        );
        // Opened on every CPU (thousands of repositories in a fleet); the
        // first failure in the configurations' order is the one reported.
        let opened: Vec<StoreResult<RepoHandle>> = configs
            .into_par_iter()
            .map(|cfg| open_handle(cfg, &signature))
            .collect();
        let mut repos = BTreeMap::new();
        for handle in opened {
            let handle = handle?;
            repos.insert(
                (handle.cfg.namespace.clone(), handle.cfg.name.clone()),
                handle,
            );
        }
        let owners_stale = Mutex::new(repos.keys().cloned().collect());
        Ok(GitRevisions {
            repos,
            signature,
            owner_index: Mutex::default(),
            owners_stale,
            owner_cache: Mutex::default(),
        })
    }

    /// Keeps the owner index's reading of each repository in `path`
    /// between processes (read now if it is there; written by
    /// [`GitRevisions::save_owner_cache`]): a later process reads only the
    /// repositories whose refs changed since, so that what a variant owns
    /// is known without reading every repository of the fleet.
    pub fn with_owner_cache(self, path: PathBuf) -> Self {
        let mut cache = match std::fs::read(&path) {
            Ok(bytes) => match serde_json::from_slice::<OwnerCache>(&bytes) {
                Ok(cache) => cache,
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "ignoring an unreadable owner cache");
                    OwnerCache::default()
                }
            },
            Err(_) => OwnerCache::default(),
        };
        cache.path = Some(path);
        cache.changed = false;
        *self.owner_cache.lock().unwrap_or_else(|e| e.into_inner()) = cache;
        self
    }

    /// Writes the owner cache (see [`GitRevisions::with_owner_cache`]) if
    /// it changed: a new file renamed over the old one, so a process
    /// stopped half-way leaves the old cache, which only costs reads.
    pub fn save_owner_cache(&self) -> StoreResult<()> {
        let mut cache = self.owner_cache.lock().unwrap_or_else(|e| e.into_inner());
        let Some(path) = cache.path.clone().filter(|_| cache.changed) else {
            return Ok(());
        };
        let bytes = serde_json::to_vec(&*cache).map_err(|e| StoreError::Data {
            context: format!("writing {}", path.display()),
            message: e.to_string(),
        })?;
        super::replace_file(&path, &bytes)?;
        cache.changed = false;
        Ok(())
    }

    /// The owners of repository `key`: those of its cached revisions, else
    /// those the owner cache holds for its refs' fingerprint, else read.
    fn owners_of(
        &self,
        key: &(String, String),
        h: &RepoHandle,
        st: &mut RepoState,
    ) -> StoreResult<BTreeSet<String>> {
        let keep = self
            .owner_cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .path
            .is_some();
        if !keep {
            load(h, st)?;
            return Ok(st.owners.clone());
        }
        let fingerprint = repo_fingerprint(h, st)?;
        let name = format!("{}/{}", key.0, key.1);
        if st.entries.is_none() {
            let cache = self.owner_cache.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(c) = cache.repositories.get(&name) {
                if c.fingerprint == fingerprint {
                    return Ok(c.owners.clone());
                }
            }
        }
        load(h, st)?;
        let fresh = CachedOwners {
            fingerprint,
            owners: st.owners.clone(),
        };
        let mut cache = self.owner_cache.lock().unwrap_or_else(|e| e.into_inner());
        if cache.repositories.get(&name) != Some(&fresh) {
            cache.repositories.insert(name, fresh);
            cache.changed = true;
        }
        Ok(st.owners.clone())
    }

    /// Forgets the cached revisions of `h` (before a write), and marks
    /// its owners for the index to read again.
    fn forget(&self, h: &RepoHandle, st: &mut RepoState) {
        st.entries = None;
        st.fingerprint = None;
        self.owners_stale
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert((h.cfg.namespace.clone(), h.cfg.name.clone()));
    }

    /// The repositories of `namespace` that may hold revisions owned by
    /// `uid`, after reading the owners of every repository written since
    /// the last call.
    fn repos_owned_by(&self, namespace: &str, uid: &str) -> StoreResult<Vec<&RepoHandle>> {
        let mut index = self.owner_index.lock().unwrap_or_else(|e| e.into_inner());
        let stale =
            std::mem::take(&mut *self.owners_stale.lock().unwrap_or_else(|e| e.into_inner()));
        // Each repository read on its own (on every CPU: a first list by
        // owner reads every repository of the fleet).
        let read: Vec<_> = stale
            .par_iter()
            .filter_map(|key| {
                let h = self.repos.get(key)?;
                let mut st = lock(h);
                Some((key, self.owners_of(key, h, &mut st)))
            })
            .collect();
        let mut failed = Vec::new();
        for (key, owners) in read {
            match owners {
                Ok(owners) => {
                    for owner in owners {
                        index.by_owner.entry(owner).or_default().insert(key.clone());
                    }
                }
                Err(e) => failed.push((key.clone(), e)),
            }
        }
        if !failed.is_empty() {
            // Read again next time; the first failure (in the
            // repositories' order) is the one reported.
            let mut stale = self.owners_stale.lock().unwrap_or_else(|e| e.into_inner());
            stale.extend(failed.iter().map(|(key, _)| key.clone()));
            if let Some((_, first)) = failed.into_iter().next() {
                return Err(first);
            }
        }
        Ok(index
            .by_owner
            .get(uid)
            .into_iter()
            .flatten()
            .filter(|(ns, _)| ns == namespace)
            .filter_map(|key| self.repos.get(key))
            .collect())
    }

    fn handle(&self, ns: &str, repo: &str) -> StoreResult<&RepoHandle> {
        self.repos
            .get(&(ns.to_string(), repo.to_string()))
            .ok_or_else(|| StoreError::Invalid(format!("no repository {ns}/{repo}")))
    }

    /// Finds the repository of a revision by name (`<repo>.<pkg>.<ws>`):
    /// each prefix of the name up to a dot is looked up as a repository
    /// name (shortest first, the order of the repositories' names), so the
    /// cost does not grow with the number of repositories.
    fn find(&self, ns: &str, name: &str) -> StoreResult<(&RepoHandle, Entry)> {
        let prefixes = name
            .char_indices()
            .filter(|&(_, c)| c == '.')
            .map(|(i, _)| &name[..i]);
        for rname in prefixes {
            let Some(handle) = self.repos.get(&(ns.to_string(), rname.to_string())) else {
                continue;
            };
            let mut st = lock(handle);
            let entries = load(handle, &mut st)?;
            if let Some(e) = entries.iter().find(|e| e.pr.metadata.name == name) {
                return Ok((handle, e.clone()));
            }
        }
        Err(not_found(ns, name))
    }
}

impl GitRevisions {
    /// Finishes the lifecycle moves a killed process left half done, the
    /// way listing already reads them, so no stale ref stays behind: a
    /// draft branch beside the proposed branch of the same workspace is
    /// deleted (the revision reads as proposed); a draft or proposed branch
    /// beside the workspace's tag is deleted (it reads as published); a
    /// deletion mark whose tag is gone is deleted (the revision was); and
    /// a main branch still at the parent of the newest tag's commit moves
    /// to it. Returns what it did, a line each.
    ///
    /// Only while no other process writes to the repositories (local
    /// mode's directory lock): to another process in the middle of a move,
    /// its half-made move looks the same.
    pub fn finish_interrupted_moves(&self) -> StoreResult<Vec<String>> {
        let mut done = Vec::new();
        for handle in self.repos.values() {
            let mut st = lock(handle);
            let fixed = finish_moves(&st.repo, &handle.cfg)?;
            if !fixed.is_empty() {
                self.forget(handle, &mut st);
                for f in &fixed {
                    tracing::info!(repository = %handle.cfg.name, "finished an interrupted move: {f}");
                }
                done.extend(
                    fixed
                        .into_iter()
                        .map(|f| format!("{}: {f}", handle.cfg.name)),
                );
            }
        }
        Ok(done)
    }
}

fn finish_moves(repo: &Repository, cfg: &GitRepoConfig) -> StoreResult<Vec<String>> {
    let mut drafts = Vec::new();
    let mut proposed = Vec::new();
    let mut marks = Vec::new();
    let mut tags: Vec<((String, String), Oid)> = Vec::new();
    for r in repo.references().map_err(StoreError::git("listing refs"))? {
        let r = r.map_err(StoreError::git("reading a ref"))?;
        let Some(name) = r.name().map(str::to_string) else {
            continue;
        };
        let key = |rest: &str| {
            rest.rsplit_once('/')
                .map(|(p, w)| (p.to_string(), w.to_string()))
        };
        if let Some(k) = name.strip_prefix("refs/heads/drafts/").and_then(key) {
            drafts.push(k);
        } else if let Some(k) = name.strip_prefix("refs/heads/proposed/").and_then(key) {
            proposed.push(k);
        } else if let Some(k) = name
            .strip_prefix("refs/heads/deletionProposed/")
            .and_then(key)
        {
            marks.push(k);
        } else if let Some(rest) = name.strip_prefix("refs/tags/") {
            let Ok(commit) = r.peel_to_commit() else {
                continue;
            };
            let Some((pkg, _)) = rest.rsplit_once('/') else {
                continue;
            };
            if let Some(ws) = tag_workspace(&commit, pkg) {
                tags.push(((pkg.to_string(), ws), commit.id()));
            }
        }
    }
    let mut fixed = Vec::new();
    let published = |k: &(String, String)| tags.iter().any(|(t, _)| t == k);
    for k in &drafts {
        if proposed.contains(k) || published(k) {
            delete_ref(repo, &format!("refs/heads/drafts/{}/{}", k.0, k.1))?;
            fixed.push(format!("removed the stale draft branch of {}/{}", k.0, k.1));
        }
    }
    for k in &proposed {
        if published(k) {
            delete_ref(repo, &format!("refs/heads/proposed/{}/{}", k.0, k.1))?;
            fixed.push(format!(
                "removed the stale proposed branch of {}/{}",
                k.0, k.1
            ));
        }
    }
    // A delete stopped after the tag went leaves the deletion mark.
    for k in &marks {
        if !published(k) {
            delete_ref(
                repo,
                &format!("refs/heads/deletionProposed/{}/{}", k.0, k.1),
            )?;
            fixed.push(format!(
                "removed the deletion mark of deleted {}/{}",
                k.0, k.1
            ));
        }
    }
    // A publish tags its merge commit, whose first parent is the main
    // branch as it was, and then moves the branch there.
    let main_ref = format!("refs/heads/{}", cfg.branch);
    if let Ok(main) = repo.refname_to_id(&main_ref) {
        for (k, commit) in &tags {
            let Ok(c) = repo.find_commit(*commit) else {
                continue;
            };
            if *commit != main && c.parent_id(0).ok() == Some(main) {
                repo.reference_matching(&main_ref, *commit, true, main, "finish publish")
                    .map_err(StoreError::git(format!("updating {}", cfg.branch)))?;
                fixed.push(format!(
                    "moved {} to the publish of {}/{}",
                    cfg.branch, k.0, k.1
                ));
                break;
            }
        }
    }
    Ok(fixed)
}

/// The workspace a tag's commit was published from, by the commit
/// message's `kpt:` annotation for `pkg`.
fn tag_workspace(commit: &git2::Commit<'_>, pkg: &str) -> Option<String> {
    commit
        .message()
        .and_then(|m| m.lines().rev().find_map(|l| l.strip_prefix("kpt:")))
        .and_then(|j| serde_json::from_str::<KptAnnotation>(j).ok())
        .filter(|a| a.package == pkg)
        .map(|a| a.workspace_name)
}

fn lock(h: &RepoHandle) -> MutexGuard<'_, RepoState> {
    h.state.lock().unwrap_or_else(|e| e.into_inner())
}

/// `path` as a `file://` URL: absolute (against the working directory;
/// no link is resolved), `/`-separated, with the characters a URL path
/// cannot hold percent-encoded.
pub fn file_url(path: &Path) -> String {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let path = abs.to_string_lossy().replace('\\', "/");
    let mut out = String::from(if path.starts_with('/') {
        "file://"
    } else {
        "file:///"
    });
    for c in path.chars() {
        if c.is_control() || " %#?\"<>`{}^|".contains(c) {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn pkg_path(cfg: &GitRepoConfig, package: &str) -> String {
    let dir = cfg.directory.trim_matches('/');
    if dir.is_empty() {
        package.to_string()
    } else {
        format!("{dir}/{package}")
    }
}

fn meta_path(package: &str, ws: &str) -> String {
    format!("{package}/{ws}.json")
}

fn read_blob_at(repo: &Repository, tree: &Tree<'_>, path: &str) -> Option<Vec<u8>> {
    let entry = tree.get_path(Path::new(path)).ok()?;
    let blob = repo.find_blob(entry.id()).ok()?;
    Some(blob.content().to_vec())
}

fn meta_tree(repo: &Repository) -> StoreResult<Option<(Oid, Oid)>> {
    match repo.find_reference(METADATA_REF) {
        Ok(r) => {
            let commit = r
                .peel_to_commit()
                .map_err(StoreError::git("reading the metadata ref"))?;
            Ok(Some((commit.id(), commit.tree_id())))
        }
        Err(_) => Ok(None),
    }
}

/// The fingerprint of a repository: its configuration and every ref with
/// what it points at (cached until the next write). Everything a revision
/// is made of (commits, trees, the metadata ref's files) is reached from a
/// ref by object IDs, so the same refs read the same revisions.
fn repo_fingerprint(h: &RepoHandle, st: &mut RepoState) -> StoreResult<String> {
    if let Some(f) = &st.fingerprint {
        return Ok(f.clone());
    }
    let mut refs: Vec<String> = Vec::new();
    for r in st
        .repo
        .references()
        .map_err(StoreError::git(format!("listing refs of {}", h.cfg.name)))?
    {
        let r = r.map_err(StoreError::git(format!("reading a ref of {}", h.cfg.name)))?;
        let target = match (r.target(), r.symbolic_target()) {
            (Some(oid), _) => oid.to_string(),
            (None, Some(s)) => format!("-> {s}"),
            (None, None) => String::new(),
        };
        refs.push(format!(
            "{} {target}",
            String::from_utf8_lossy(r.name_bytes())
        ));
    }
    refs.sort();
    let config = format!("{:?}", h.cfg);
    let f =
        fingerprint_of(std::iter::once(config.as_bytes()).chain(refs.iter().map(|r| r.as_bytes())));
    st.fingerprint = Some(f.clone());
    Ok(f)
}

/// Scans refs into revisions (cached until the next write).
fn load<'a>(h: &RepoHandle, st: &'a mut RepoState) -> StoreResult<&'a Vec<Entry>> {
    if st.entries.is_none() {
        let entries = scan(&h.cfg, &st.repo)?;
        st.owners = entries
            .iter()
            .flat_map(|e| e.pr.metadata.owner_references.iter().map(|o| o.uid.clone()))
            .collect();
        st.entries = Some(entries);
    }
    Ok(st.entries.get_or_insert_with(Vec::new))
}

fn scan(cfg: &GitRepoConfig, repo: &Repository) -> StoreResult<Vec<Entry>> {
    let mut drafts: BTreeMap<(String, String), (Lifecycle, Oid, String)> = BTreeMap::new();
    let mut published: BTreeMap<(String, String), (i64, Oid, String)> = BTreeMap::new();
    // Each with the commit it marks: a branch left behind for an older
    // revision of the same workspace does not mark a newer one.
    let mut deletion: Vec<((String, String), Oid)> = Vec::new();
    let refs = repo.references().map_err(StoreError::git("listing refs"))?;
    for r in refs {
        let r = r.map_err(StoreError::git("reading a ref"))?;
        let Some(name) = r.name().map(str::to_string) else {
            continue;
        };
        let Ok(commit) = r.peel_to_commit() else {
            continue;
        };
        let split_ws = |rest: &str| -> Option<(String, String)> {
            let (pkg, ws) = rest.rsplit_once('/')?;
            Some((pkg.to_string(), ws.to_string()))
        };
        if let Some(rest) = name.strip_prefix("refs/heads/drafts/") {
            if let Some(k) = split_ws(rest) {
                drafts
                    .entry(k)
                    .or_insert((Lifecycle::Draft, commit.id(), rest.to_string()));
            }
        } else if let Some(rest) = name.strip_prefix("refs/heads/proposed/") {
            if let Some(k) = split_ws(rest) {
                drafts.insert(
                    k,
                    (Lifecycle::Proposed, commit.id(), format!("proposed/{rest}")),
                );
            }
        } else if let Some(rest) = name.strip_prefix("refs/heads/deletionProposed/") {
            if let Some(k) = split_ws(rest) {
                deletion.push((k, commit.id()));
            }
        } else if let Some(rest) = name.strip_prefix("refs/tags/") {
            let Some((pkg, v)) = rest.rsplit_once('/') else {
                continue;
            };
            let Some(n) = v.strip_prefix('v').and_then(|n| n.parse::<i64>().ok()) else {
                continue;
            };
            let ws = tag_workspace(&commit, pkg).unwrap_or_else(|| v.to_string());
            published.insert((pkg.to_string(), ws), (n, commit.id(), rest.to_string()));
        }
    }
    let meta = meta_tree(repo)?;
    let meta_tree = match meta {
        Some((_, t)) => Some(
            repo.find_tree(t)
                .map_err(StoreError::git("reading metadata"))?,
        ),
        None => None,
    };
    // Metadata that does not read is an error, not an empty record: its
    // owner references are what keeps a variant from cloning a second
    // draft.
    let read_meta = |pkg: &str, ws: &str| -> StoreResult<RevisionMeta> {
        let path = meta_path(pkg, ws);
        match meta_tree
            .as_ref()
            .and_then(|t| read_blob_at(repo, t, &path))
        {
            None => Ok(RevisionMeta::default()),
            Some(bytes) => serde_json::from_slice(&bytes).map_err(|e| StoreError::Data {
                context: format!("{}: metadata {path}", cfg.name),
                message: e.to_string(),
            }),
        }
    };
    // The repository as a URL `git clone` resolves from anywhere: a
    // `file://` URL of its absolute path.
    let lock_url = file_url(&cfg.path);
    let mut out = Vec::new();
    let mut make = |pkg: &str,
                    ws: &str,
                    lifecycle: Lifecycle,
                    revision: i64,
                    commit: Oid,
                    short: &str|
     -> StoreResult<()> {
        let m = read_meta(pkg, ws)?;
        let mut pr = PackageRevision {
            api_version: pv_core::api::package_revision::API_VERSION.to_string(),
            kind: "PackageRevision".to_string(),
            ..Default::default()
        };
        pr.metadata.name = revision_name(&cfg.name, pkg, ws);
        pr.metadata.namespace = cfg.namespace.clone();
        pr.metadata.labels = m.labels;
        pr.metadata.annotations = m.annotations;
        pr.metadata.owner_references = m.owner_references;
        pr.spec.package_name = pkg.to_string();
        pr.spec.repository = cfg.name.clone();
        pr.spec.workspace_name = ws.to_string();
        pr.spec.revision = revision;
        pr.spec.lifecycle = lifecycle;
        pr.spec.tasks = m.tasks;
        pr.status.upstream_lock = m.upstream_lock;
        if revision > 0 {
            // Who published it and when: the publish commit's author.
            if let Ok(c) = repo.find_commit(commit) {
                pr.status.published_by = c.author().name().unwrap_or_default().to_string();
                let secs = u64::try_from(c.author().when().seconds()).unwrap_or(0);
                let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
                pr.status.publish_timestamp =
                    Some(humantime::format_rfc3339_seconds(at).to_string());
            }
        }
        pr.status.self_lock = Some(Locator {
            type_: "git".into(),
            git: Some(GitLock {
                repo: lock_url.clone(),
                directory: pkg_path(cfg, pkg),
                r#ref: short.to_string(),
                commit: commit.to_string(),
            }),
        });
        out.push(Entry { pr, commit });
        Ok(())
    };
    for ((pkg, ws), (n, commit, short)) in &published {
        let lc = if deletion
            .iter()
            .any(|((p, w), c)| p == pkg && w == ws && c == commit)
        {
            Lifecycle::DeletionProposed
        } else {
            Lifecycle::Published
        };
        make(pkg, ws, lc, *n, *commit, short)?;
    }
    for ((pkg, ws), (lc, commit, short)) in &drafts {
        // A leftover of an interrupted publish: the tag wins.
        if published.contains_key(&(pkg.clone(), ws.clone())) {
            continue;
        }
        let short = if *lc == Lifecycle::Draft {
            format!("drafts/{short}")
        } else {
            short.clone()
        };
        make(pkg, ws, *lc, 0, *commit, &short)?;
    }
    out.sort_by(|a, b| a.pr.metadata.name.cmp(&b.pr.metadata.name));
    Ok(out)
}

/// The files of the package at `path` in `commit`'s tree.
pub(crate) fn read_files(repo: &Repository, commit: Oid, path: &str) -> StoreResult<Files> {
    let commit = repo
        .find_commit(commit)
        .map_err(StoreError::git("reading a commit"))?;
    let tree = commit.tree().map_err(StoreError::git("reading a tree"))?;
    let mut files = Files::new();
    let sub = match tree.get_path(Path::new(path)) {
        _ if path.is_empty() => tree,
        Ok(e) => repo
            .find_tree(e.id())
            .map_err(StoreError::git(format!("reading {path}")))?,
        Err(_) => return Ok(files),
    };
    let mut err = None;
    sub.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
        let entry_name = entry.name().unwrap_or_default();
        let name = format!("{dir}{entry_name}");
        // A package holds directories and regular files. A tree written
        // by other tools may hold links, submodules or names that would
        // lead out of the package: refuse them rather than read them as
        // files.
        let mode = entry.filemode();
        let refuse = if matches!(entry_name, "" | "." | ".." | ".git") || entry_name.contains('\\')
        {
            Some("a name that cannot be a package file")
        } else if mode == i32::from(git2::FileMode::Link) {
            Some("a symbolic link; packages hold regular files only")
        } else if mode == i32::from(git2::FileMode::Commit) {
            Some("a submodule; packages hold regular files only")
        } else {
            None
        };
        if let Some(why) = refuse {
            err = Some(StoreError::Data {
                context: format!("{path}/{name}"),
                message: why.to_string(),
            });
            return git2::TreeWalkResult::Abort;
        }
        if entry.kind() == Some(ObjectType::Blob) {
            match repo.find_blob(entry.id()) {
                Ok(b) => match String::from_utf8(b.content().to_vec()) {
                    Ok(s) => {
                        files.insert(name, s);
                    }
                    Err(_) => {
                        err = Some(StoreError::Data {
                            context: format!("{path}/{name}"),
                            message: "not UTF-8".into(),
                        })
                    }
                },
                Err(e) => err = Some(StoreError::git(format!("reading {name}"))(e)),
            }
        }
        git2::TreeWalkResult::Ok
    })
    .or_else(|e| if err.is_some() { Ok(()) } else { Err(e) })
    .map_err(StoreError::git(format!("walking {path}")))?;
    match err {
        Some(e) => Err(e),
        None => Ok(files),
    }
}

/// Writes `files` as a tree.
fn write_files(repo: &Repository, files: &Files) -> StoreResult<Oid> {
    #[derive(Default)]
    struct Dir {
        blobs: BTreeMap<String, Oid>,
        dirs: BTreeMap<String, Dir>,
    }
    fn write(repo: &Repository, d: &Dir) -> StoreResult<Oid> {
        let mut b = repo
            .treebuilder(None)
            .map_err(StoreError::git("building a tree"))?;
        for (name, oid) in &d.blobs {
            b.insert(name, *oid, 0o100644)
                .map_err(StoreError::git(format!("adding {name}")))?;
        }
        for (name, sub) in &d.dirs {
            let oid = write(repo, sub)?;
            b.insert(name, oid, 0o040000)
                .map_err(StoreError::git(format!("adding {name}/")))?;
        }
        b.write().map_err(StoreError::git("writing a tree"))
    }
    let mut root = Dir::default();
    for (path, text) in files {
        let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        if parts.is_empty()
            || parts
                .iter()
                .any(|p| *p == ".." || *p == "." || *p == ".git")
        {
            return Err(StoreError::Invalid(format!("invalid file path {path:?}")));
        }
        let blob = repo
            .blob(text.as_bytes())
            .map_err(StoreError::git(format!("writing {path}")))?;
        let mut d = &mut root;
        for p in &parts[..parts.len() - 1] {
            d = d.dirs.entry((*p).to_string()).or_default();
        }
        d.blobs.insert(parts[parts.len() - 1].to_string(), blob);
    }
    write(repo, &root)
}

/// `base` with the entry at `path` replaced by `subtree` (removed when
/// `None`), creating intermediate trees.
fn replace_path(
    repo: &Repository,
    base: Option<&Tree<'_>>,
    path: &[&str],
    subtree: Option<(Oid, i32)>,
) -> StoreResult<Option<Oid>> {
    let mut b = repo
        .treebuilder(base)
        .map_err(StoreError::git("building a tree"))?;
    let (first, rest) = path
        .split_first()
        .ok_or_else(|| StoreError::Invalid("empty path".into()))?;
    if rest.is_empty() {
        match subtree {
            Some((oid, mode)) => {
                b.insert(first, oid, mode)
                    .map_err(StoreError::git(format!("adding {first}")))?;
            }
            None => {
                if b.get(first)
                    .map_err(StoreError::git("reading a tree"))?
                    .is_some()
                {
                    b.remove(first)
                        .map_err(StoreError::git(format!("removing {first}")))?;
                }
            }
        }
    } else {
        let child = match b.get(first).map_err(StoreError::git("reading a tree"))? {
            Some(e) if e.kind() == Some(ObjectType::Tree) => Some(
                repo.find_tree(e.id())
                    .map_err(StoreError::git("reading a tree"))?,
            ),
            _ => None,
        };
        match replace_path(repo, child.as_ref(), rest, subtree)? {
            Some(oid) => {
                b.insert(first, oid, 0o040000)
                    .map_err(StoreError::git(format!("adding {first}")))?;
            }
            None => {
                if b.get(first)
                    .map_err(StoreError::git("reading a tree"))?
                    .is_some()
                {
                    b.remove(first)
                        .map_err(StoreError::git(format!("removing {first}")))?;
                }
            }
        }
    }
    if b.is_empty() {
        return Ok(None);
    }
    b.write()
        .map(Some)
        .map_err(StoreError::git("writing a tree"))
}

fn annotation(package: &str, ws: &str, revision: i64) -> String {
    let a = KptAnnotation {
        package: package.to_string(),
        workspace_name: ws.to_string(),
        revision: if revision > 0 {
            format!("v{revision}")
        } else {
            String::new()
        },
    };
    format!("kpt:{}", serde_json::to_string(&a).unwrap_or_default())
}

impl GitRevisions {
    #[allow(
        clippy::too_many_arguments,
        reason = "one private helper; a struct would only rename them"
    )]
    fn commit_package(
        &self,
        repo: &Repository,
        cfg: &GitRepoConfig,
        parent: Option<Oid>,
        extra_parent: Option<Oid>,
        package: &str,
        files: Option<&Files>,
        message: &str,
    ) -> StoreResult<Oid> {
        let parent_commit = match parent {
            Some(p) => Some(
                repo.find_commit(p)
                    .map_err(StoreError::git("reading the parent commit"))?,
            ),
            None => None,
        };
        let base_tree = match &parent_commit {
            Some(c) => Some(
                c.tree()
                    .map_err(StoreError::git("reading the parent tree"))?,
            ),
            None => None,
        };
        let sub = match files {
            Some(f) => Some((write_files(repo, f)?, 0o040000)),
            None => None,
        };
        let path = pkg_path(cfg, package);
        let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        let tree_oid = match replace_path(repo, base_tree.as_ref(), &parts, sub)? {
            Some(t) => t,
            None => repo
                .treebuilder(None)
                .and_then(|b| b.write())
                .map_err(StoreError::git("writing the empty tree"))?,
        };
        let tree = repo
            .find_tree(tree_oid)
            .map_err(StoreError::git("reading the new tree"))?;
        let mut parents = Vec::new();
        if let Some(c) = parent_commit {
            parents.push(c);
        }
        if let Some(p) = extra_parent {
            parents.push(
                repo.find_commit(p)
                    .map_err(StoreError::git("reading the merged commit"))?,
            );
        }
        let parent_refs: Vec<&git2::Commit<'_>> = parents.iter().collect();
        let s = sig(&self.signature)?;
        repo.commit(None, &s, &s, message, &tree, &parent_refs)
            .map_err(StoreError::git("committing"))
    }

    fn write_meta(
        &self,
        repo: &Repository,
        package: &str,
        ws: &str,
        meta: Option<&RevisionMeta>,
    ) -> StoreResult<()> {
        let current = meta_tree(repo)?;
        let base_tree = match current {
            Some((_, t)) => Some(
                repo.find_tree(t)
                    .map_err(StoreError::git("reading metadata"))?,
            ),
            None => None,
        };
        let path = meta_path(package, ws);
        let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        let blob = match meta {
            Some(m) => {
                let json = serde_json::to_vec_pretty(m).map_err(|e| StoreError::Data {
                    context: format!("metadata of {package}/{ws}"),
                    message: e.to_string(),
                })?;
                Some((
                    repo.blob(&json)
                        .map_err(StoreError::git("writing metadata"))?,
                    0o100644,
                ))
            }
            None => None,
        };
        if blob.is_none()
            && base_tree
                .as_ref()
                .is_none_or(|t| t.get_path(Path::new(&path)).is_err())
        {
            return Ok(());
        }
        let tree_oid = match replace_path(repo, base_tree.as_ref(), &parts, blob)? {
            Some(t) => t,
            None => repo
                .treebuilder(None)
                .and_then(|b| b.write())
                .map_err(StoreError::git("writing the empty tree"))?,
        };
        if base_tree.as_ref().is_some_and(|t| t.id() == tree_oid) {
            return Ok(());
        }
        let tree = repo
            .find_tree(tree_oid)
            .map_err(StoreError::git("reading metadata"))?;
        let parent = match current {
            Some((c, _)) => Some(
                repo.find_commit(c)
                    .map_err(StoreError::git("reading metadata"))?,
            ),
            None => None,
        };
        let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
        let s = sig(&self.signature)?;
        let verb = if meta.is_some() { "Update" } else { "Remove" };
        let oid = repo
            .commit(
                None,
                &s,
                &s,
                &format!("{verb} metadata of {package}/{ws}"),
                &tree,
                &parents,
            )
            .map_err(StoreError::git("committing metadata"))?;
        match current {
            Some((old, _)) => repo.reference_matching(METADATA_REF, oid, true, old, "metadata"),
            None => repo.reference(METADATA_REF, oid, false, "metadata"),
        }
        .map_err(StoreError::git("updating the metadata ref"))?;
        Ok(())
    }

    fn main_head(&self, repo: &Repository, cfg: &GitRepoConfig) -> StoreResult<Oid> {
        repo.refname_to_id(&format!("refs/heads/{}", cfg.branch))
            .map_err(StoreError::git(format!("reading branch {}", cfg.branch)))
    }

    fn publish(
        &self,
        repo: &Repository,
        cfg: &GitRepoConfig,
        e: &Entry,
        entries: &[Entry],
    ) -> StoreResult<()> {
        let pkg = &e.pr.spec.package_name;
        let ws = &e.pr.spec.workspace_name;
        let next = entries
            .iter()
            .filter(|x| x.pr.spec.package_name == *pkg)
            .map(|x| x.pr.spec.revision)
            .max()
            .unwrap_or(0)
            .max(0)
            + 1;
        let files = read_files(repo, e.commit, &pkg_path(cfg, pkg))?;
        let main = self.main_head(repo, cfg)?;
        let msg = format!("Approve {pkg}/v{next}\n\n{}", annotation(pkg, ws, next));
        let merged = self.commit_package(
            repo,
            cfg,
            Some(main),
            Some(e.commit),
            pkg,
            Some(&files),
            &msg,
        )?;
        // The tag makes the revision published; then main moves; then the
        // proposed branch goes (listing tolerates each leftover).
        repo.reference(
            &format!("refs/tags/{pkg}/v{next}"),
            merged,
            false,
            "publish",
        )
        .map_err(StoreError::git(format!("tagging {pkg}/v{next}")))?;
        repo.reference_matching(
            &format!("refs/heads/{}", cfg.branch),
            merged,
            true,
            main,
            "publish",
        )
        .map_err(StoreError::git(format!("updating {}", cfg.branch)))?;
        delete_ref(repo, &format!("refs/heads/proposed/{pkg}/{ws}"))?;
        delete_ref(repo, &format!("refs/heads/drafts/{pkg}/{ws}"))?;
        Ok(())
    }
}

/// Whether `commit`'s tree holds the directory `path`.
fn package_in(repo: &Repository, commit: Oid, path: &str) -> bool {
    repo.find_commit(commit)
        .and_then(|c| c.tree())
        .is_ok_and(|t| t.get_path(Path::new(path)).is_ok())
}

fn delete_ref(repo: &Repository, name: &str) -> StoreResult<()> {
    match repo.find_reference(name) {
        Ok(mut r) => r
            .delete()
            .map_err(StoreError::git(format!("deleting {name}"))),
        Err(_) => Ok(()),
    }
}

fn meta_of(pr: &PackageRevision) -> RevisionMeta {
    let mut labels = pr.metadata.labels.clone();
    labels.remove(pv_core::api::package_revision::LATEST_REVISION_LABEL);
    RevisionMeta {
        labels,
        annotations: pr.metadata.annotations.clone(),
        owner_references: pr.metadata.owner_references.clone(),
        tasks: pr.spec.tasks.clone(),
        upstream_lock: pr.status.upstream_lock.clone(),
    }
}

impl PackageRevisionStore for GitRevisions {
    fn fingerprint(&self, namespace: &str, filter: &PrFilter) -> StoreResult<Option<String>> {
        // The repositories the list would read (the owner index may name
        // more), each by its refs.
        let keys: Vec<(String, String)> = match (&filter.repository, &filter.owner_uid) {
            (Some(r), _) => vec![(namespace.to_string(), r.clone())],
            (None, Some(uid)) => self
                .repos_owned_by(namespace, uid)?
                .into_iter()
                .map(|h| (h.cfg.namespace.clone(), h.cfg.name.clone()))
                .collect(),
            (None, None) => self
                .repos
                .range((namespace.to_string(), String::new())..)
                .take_while(|((ns, _), _)| ns == namespace)
                .map(|(k, _)| k.clone())
                .collect(),
        };
        let mut parts = vec![format!("{filter:?}")];
        for key in keys {
            match self.repos.get(&key) {
                Some(h) => {
                    let mut st = lock(h);
                    // The index may still name a repository that held such
                    // a revision once: it is not part of the answer.
                    if let Some(uid) = filter
                        .owner_uid
                        .as_ref()
                        .filter(|_| filter.repository.is_none())
                    {
                        if !self.owners_of(&key, h, &mut st)?.contains(uid) {
                            continue;
                        }
                    }
                    parts.push(format!("{} {}", key.1, repo_fingerprint(h, &mut st)?));
                }
                None => parts.push(format!("{} absent", key.1)),
            }
        }
        Ok(Some(fingerprint_of(parts.iter().map(|p| p.as_bytes()))))
    }

    fn list(&self, namespace: &str, filter: &PrFilter) -> StoreResult<Vec<PackageRevision>> {
        let mut out = Vec::new();
        // One repository by key when the filter names it; those the owner
        // index names for a list by owner; else the namespace's range.
        let repos: Vec<&RepoHandle> = match (&filter.repository, &filter.owner_uid) {
            (Some(r), _) => self
                .repos
                .get(&(namespace.to_string(), r.clone()))
                .into_iter()
                .collect(),
            (None, Some(uid)) => self.repos_owned_by(namespace, uid)?,
            (None, None) => self
                .repos
                .range((namespace.to_string(), String::new())..)
                .take_while(|((ns, _), _)| ns == namespace)
                .map(|(_, h)| h)
                .collect(),
        };
        for h in repos {
            let mut st = lock(h);
            load(h, &mut st)?;
            if filter
                .owner_uid
                .as_ref()
                .is_some_and(|u| !st.owners.contains(u))
            {
                continue;
            }
            let entries = load(h, &mut st)?;
            let mut prs: Vec<PackageRevision> = entries
                .iter()
                .filter(|e| {
                    filter
                        .package
                        .as_ref()
                        .is_none_or(|p| *p == e.pr.spec.package_name)
                })
                .map(|e| e.pr.clone())
                .collect();
            mark_latest(&mut prs);
            out.extend(prs.into_iter().filter(|p| filter.matches(p)));
        }
        out.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        Ok(out)
    }

    fn get(&self, namespace: &str, name: &str) -> StoreResult<PackageRevision> {
        let (_, e) = self.find(namespace, name)?;
        let filter = PrFilter::package(&e.pr.spec.repository, &e.pr.spec.package_name);
        self.list(namespace, &filter)?
            .into_iter()
            .find(|p| p.metadata.name == name)
            .ok_or_else(|| not_found(namespace, name))
    }

    fn resources(&self, namespace: &str, name: &str) -> StoreResult<PackageRevisionResources> {
        let (h, e) = self.find(namespace, name)?;
        let st = lock(h);
        let files = read_files(
            &st.repo,
            e.commit,
            &pkg_path(&h.cfg, &e.pr.spec.package_name),
        )?;
        let mut prr = resources_of(&e.pr, files);
        // The version is the commit the files were read from.
        prr.metadata.resource_version = e.commit.to_string();
        Ok(prr)
    }

    fn update_resources(
        &self,
        ns: &str,
        name: &str,
        files: &Files,
        read: &str,
    ) -> StoreResult<PackageRevision> {
        let (h, e) = self.find(ns, name)?;
        if e.pr.spec.lifecycle != Lifecycle::Draft {
            return Err(StoreError::Conflict(format!(
                "cannot update the resources of {name}: it is {:?}, not a draft",
                e.pr.spec.lifecycle
            )));
        }
        // The ref update below also fails if the draft moves on meanwhile.
        if !read.is_empty() && read != e.commit.to_string() {
            return Err(StoreError::Conflict(format!(
                "the resources of {name} changed since they were read (commit {read}, now {})",
                e.commit
            )));
        }
        {
            let mut st = lock(h);
            // Also when the update fails: another process changed the ref.
            self.forget(h, &mut st);
            let pkg = &e.pr.spec.package_name;
            let ws = &e.pr.spec.workspace_name;
            let msg = format!("Update {pkg}/{ws}\n\n{}", annotation(pkg, ws, 0));
            let oid = self.commit_package(
                &st.repo,
                &h.cfg,
                Some(e.commit),
                None,
                pkg,
                Some(files),
                &msg,
            )?;
            st.repo
                .reference_matching(
                    &format!("refs/heads/drafts/{pkg}/{ws}"),
                    oid,
                    true,
                    e.commit,
                    "update",
                )
                .map_err(|source| match source.code() {
                    git2::ErrorCode::Modified | git2::ErrorCode::NotFound => {
                        StoreError::Conflict(format!("{name} changed while it was updated"))
                    }
                    _ => StoreError::Git {
                        context: format!("updating {name}"),
                        error: source,
                    },
                })?;
        }
        self.get(ns, name)
    }

    fn create(&self, new: NewRevision) -> StoreResult<PackageRevision> {
        let mut pr = new.revision;
        let ns = pr.metadata.namespace.clone();
        let h = self.handle(&ns, &pr.spec.repository)?;
        let pkg = pr.spec.package_name.clone();
        let ws = pr.spec.workspace_name.clone();
        if pkg.is_empty()
            || ws.is_empty()
            || ws.contains('/')
            || pkg.split('/').any(|p| p.is_empty() || p == "..")
        {
            return Err(StoreError::Invalid(format!(
                "invalid package {pkg:?} or workspace {ws:?}"
            )));
        }
        let name = revision_name(&pr.spec.repository, &pkg, &ws);
        {
            let mut st = lock(h);
            let exists = load(h, &mut st)?
                .iter()
                .any(|e| e.pr.spec.package_name == pkg && e.pr.spec.workspace_name == ws);
            // The cache may be older than the refs: another process may
            // have made the draft since (checked before the metadata, which
            // would otherwise replace the existing revision's owners).
            let on_disk = ["drafts", "proposed"].iter().any(|branch| {
                st.repo
                    .find_reference(&format!("refs/heads/{branch}/{pkg}/{ws}"))
                    .is_ok()
            });
            if exists || on_disk {
                return Err(StoreError::Conflict(format!("{name} already exists")));
            }
            // Forgotten before the first write, so that a write failing
            // half-way never leaves a cache that disagrees with the refs.
            self.forget(h, &mut st);
            pr.status.upstream_lock = new.upstream_lock;
            let repo = &st.repo;
            self.write_meta(repo, &pkg, &ws, Some(&meta_of(&pr)))?;
            let main = self.main_head(repo, &h.cfg)?;
            let msg = format!("Create {pkg}/{ws}\n\n{}", annotation(&pkg, &ws, 0));
            let oid =
                self.commit_package(repo, &h.cfg, Some(main), None, &pkg, Some(&new.files), &msg)?;
            repo.reference(
                &format!("refs/heads/drafts/{pkg}/{ws}"),
                oid,
                false,
                "create draft",
            )
            .map_err(|source| match source.code() {
                git2::ErrorCode::Exists => StoreError::Conflict(format!("{name} already exists")),
                _ => StoreError::Git {
                    context: format!("creating {name}"),
                    error: source,
                },
            })?;
        }
        self.get(&ns, &name)
    }

    fn update_lifecycle(
        &self,
        ns: &str,
        name: &str,
        to: Lifecycle,
    ) -> StoreResult<PackageRevision> {
        let (h, e) = self.find(ns, name)?;
        let from = e.pr.spec.lifecycle;
        check_transition(from, to).map_err(StoreError::Conflict)?;
        if from == to {
            return self.get(ns, name);
        }
        {
            let mut st = lock(h);
            let entries = load(h, &mut st)?.clone();
            self.forget(h, &mut st);
            let repo = &st.repo;
            let pkg = &e.pr.spec.package_name;
            let ws = &e.pr.spec.workspace_name;
            let draft_ref = format!("refs/heads/drafts/{pkg}/{ws}");
            let proposed_ref = format!("refs/heads/proposed/{pkg}/{ws}");
            let deletion_ref = format!("refs/heads/deletionProposed/{pkg}/{ws}");
            let git = |ctx: &str| StoreError::git(format!("{ctx} {name}"));
            match (from, to) {
                (Lifecycle::Draft | Lifecycle::Unset, Lifecycle::Proposed) => {
                    repo.reference(&proposed_ref, e.commit, true, "propose")
                        .map_err(git("proposing"))?;
                    delete_ref(repo, &draft_ref)?;
                }
                (Lifecycle::Proposed, Lifecycle::Draft) => {
                    repo.reference(&draft_ref, e.commit, true, "reject")
                        .map_err(git("rejecting"))?;
                    delete_ref(repo, &proposed_ref)?;
                }
                (Lifecycle::Proposed, Lifecycle::Published) => {
                    self.publish(repo, &h.cfg, &e, &entries)?
                }
                (Lifecycle::Published, Lifecycle::DeletionProposed) => {
                    repo.reference(&deletion_ref, e.commit, true, "propose deletion")
                        .map_err(git("proposing deletion of"))?;
                }
                (Lifecycle::DeletionProposed, Lifecycle::Published) => {
                    delete_ref(repo, &deletion_ref)?
                }
                _ => {}
            }
        }
        self.get(ns, name)
    }

    fn update_metadata(
        &self,
        ns: &str,
        name: &str,
        m: &ObjectMeta,
    ) -> StoreResult<PackageRevision> {
        let (h, e) = self.find(ns, name)?;
        {
            let mut st = lock(h);
            self.forget(h, &mut st);
            let mut pr = e.pr.clone();
            copy_metadata(&mut pr.metadata, m);
            self.write_meta(
                &st.repo,
                &pr.spec.package_name,
                &pr.spec.workspace_name,
                Some(&meta_of(&pr)),
            )?;
        }
        self.get(ns, name)
    }

    fn delete(&self, namespace: &str, name: &str) -> StoreResult<()> {
        let (h, e) = self.find(namespace, name)?;
        let mut st = lock(h);
        let entries = load(h, &mut st)?.clone();
        self.forget(h, &mut st);
        let repo = &st.repo;
        let pkg = &e.pr.spec.package_name;
        let ws = &e.pr.spec.workspace_name;
        match e.pr.spec.lifecycle {
            Lifecycle::Published => {
                return Err(StoreError::Conflict(format!(
                    "cannot delete {name}: it is published; propose its deletion first"
                )))
            }
            Lifecycle::DeletionProposed => {
                // The package leaves main first, then the tag goes, then the
                // deletion mark. Stopped anywhere, the revision still reads
                // as deletion-proposed (and deleting it again finishes), or
                // it is gone and at most its mark is left, which the next
                // command removes (`finish_interrupted_moves`).
                let others = entries.iter().any(|x| {
                    x.pr.spec.package_name == *pkg
                        && x.pr.metadata.name != name
                        && x.pr.spec.lifecycle.is_published()
                });
                let main = self.main_head(repo, &h.cfg)?;
                if !others && package_in(repo, main, &pkg_path(&h.cfg, pkg)) {
                    let msg = format!(
                        "Delete {pkg}\n\n{}",
                        annotation(pkg, ws, e.pr.spec.revision)
                    );
                    let oid =
                        self.commit_package(repo, &h.cfg, Some(main), None, pkg, None, &msg)?;
                    repo.reference_matching(
                        &format!("refs/heads/{}", h.cfg.branch),
                        oid,
                        true,
                        main,
                        "delete package",
                    )
                    .map_err(StoreError::git(format!("updating {}", h.cfg.branch)))?;
                }
                delete_ref(repo, &format!("refs/tags/{pkg}/v{}", e.pr.spec.revision))?;
                delete_ref(repo, &format!("refs/heads/deletionProposed/{pkg}/{ws}"))?;
            }
            _ => {
                delete_ref(repo, &format!("refs/heads/drafts/{pkg}/{ws}"))?;
                delete_ref(repo, &format!("refs/heads/proposed/{pkg}/{ws}"))?;
            }
        }
        self.write_meta(repo, pkg, ws, None)?;
        Ok(())
    }
}
