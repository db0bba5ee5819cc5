//! `porch-variants local --dry-run DIR`: the whole reconcile, with nothing
//! written to DIR.
//!
//! The directory is copied aside (into the system's temporary directory)
//! under its lock, and the run is the real one, on the copy: what it prints
//! is what a run on DIR would then do, because it is the same code on the
//! same bytes. The plan is read back from the copy: every write the run
//! made, and each PackageRevision it created, changed or deleted, with a
//! unified diff of its package content against what it came from (the
//! revision before the run, or the package's latest published revision
//! for a new draft). The copy is removed when the command ends.
//!
//! Remote repositories are refused: a run pushes what it writes to them.
//! So is a repository given by an absolute path, which the copy would
//! still share with DIR.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use pv_core::api::package_revision::Lifecycle;
use pv_core::api::PackageRevision;
use serde::Serialize;

use super::cli::{run_local, LocalArgs, LocalError, LocalSummary};
use super::dir_lock::{DirLock, LOCK_FILE};
use crate::store::planned::package_diff;
use crate::store::remote::RemoteRevisions;
use crate::store::{Files, PackageRevisionStore, PrFilter, StoreError};

/// How one PackageRevision would change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RevisionChange {
    /// The revision (`repo.package.workspace`).
    pub name: String,
    /// `created`, `updated` (content or lifecycle) or `deleted`.
    pub change: &'static str,
    /// Its lifecycle after the run (before it, for a deleted one).
    pub lifecycle: String,
    /// What the diff is taken against: the same revision before the run,
    /// the package's latest published revision, or nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    /// Unified diff of the package's files (empty when the content is
    /// unchanged).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub diff: String,
}

/// The plan of a dry run.
#[derive(Debug, Serialize)]
pub struct DryRunPlan {
    /// The run, as it went on the copy.
    #[serde(flatten)]
    pub summary: LocalSummary,
    /// What it would do to the package revisions.
    pub revisions: Vec<RevisionChange>,
}

fn io(context: String) -> impl FnOnce(std::io::Error) -> LocalError {
    move |e| LocalError::Store(StoreError::io(context)(e))
}

/// Copies `from` into `to` (which must not exist), files and directories
/// only; the lock file is left out (the copy's run takes its own).
fn copy_tree(from: &Path, to: &Path, root: &Path) -> Result<(), LocalError> {
    std::fs::create_dir_all(to).map_err(io(format!("creating {}", to.display())))?;
    let entries = std::fs::read_dir(from).map_err(io(format!("reading {}", from.display())))?;
    for entry in entries {
        let entry = entry.map_err(io(format!("reading {}", from.display())))?;
        let path = entry.path();
        if path == root.join(LOCK_FILE) {
            continue;
        }
        let kind = entry
            .file_type()
            .map_err(io(format!("reading {}", path.display())))?;
        let dest = to.join(entry.file_name());
        if kind.is_dir() {
            copy_tree(&path, &dest, root)?;
        } else if kind.is_file() {
            std::fs::copy(&path, &dest).map_err(io(format!("copying {}", path.display())))?;
        } else {
            return Err(LocalError::Usage(format!(
                "--dry-run copies the directory aside and follows no link: {} is not a file or a directory",
                path.display()
            )));
        }
    }
    Ok(())
}

/// Refuses what a copy would not isolate: remote repositories and
/// repositories given by an absolute path.
fn check_isolated(objects: &super::DirObjects) -> Result<(), LocalError> {
    for (o, source) in objects.objects.iter().zip(&objects.sources) {
        if o["kind"] != "Repository" {
            continue;
        }
        let repo = o["spec"]["git"]["repo"].as_str().unwrap_or_default();
        let why = if crate::store::remote::is_remote_url(repo) {
            "is remote, and a run pushes what it writes"
        } else if Path::new(repo).is_absolute() {
            "is an absolute path, which a copy of the directory would still write"
        } else {
            continue;
        };
        return Err(LocalError::Usage(format!(
            "--dry-run works on a copy of the directory: {source} (Repository {}) spec.git.repo {repo:?} {why}",
            o["metadata"]["name"].as_str().unwrap_or_default()
        )));
    }
    Ok(())
}

/// Every revision of the directory's repositories, by name, with its
/// files.
fn revisions(
    dir: &Path,
    validation: super::Validation,
) -> Result<BTreeMap<String, (PackageRevision, Files)>, LocalError> {
    let objects = super::read_objects(dir, validation)?;
    let configs: Vec<_> = super::repo_configs(dir, &objects)?
        .into_iter()
        .filter(|c| c.path.is_dir())
        .collect();
    let mut namespaces: Vec<String> = configs.iter().map(|c| c.namespace.clone()).collect();
    namespaces.sort();
    namespaces.dedup();
    let store = RemoteRevisions::open(configs, Vec::new())?;
    let mut out = BTreeMap::new();
    for ns in &namespaces {
        for pr in store.list(ns, &PrFilter::default())? {
            let files = store
                .resources(ns, &pr.metadata.name)?
                .spec
                .resources
                .unwrap_or_default();
            out.insert(pr.metadata.name.clone(), (pr, files));
        }
    }
    Ok(out)
}

/// The latest published revision of `pr`'s package in `revs`.
fn latest_published<'a>(
    revs: &'a BTreeMap<String, (PackageRevision, Files)>,
    pr: &PackageRevision,
) -> Option<&'a (PackageRevision, Files)> {
    revs.values()
        .filter(|(p, _)| {
            p.spec.repository == pr.spec.repository
                && p.spec.package_name == pr.spec.package_name
                && p.spec.lifecycle == Lifecycle::Published
        })
        .max_by_key(|(p, _)| p.spec.revision)
}

/// What changed between two listings of the same repositories.
pub fn changes(
    before: &BTreeMap<String, (PackageRevision, Files)>,
    after: &BTreeMap<String, (PackageRevision, Files)>,
) -> Vec<RevisionChange> {
    let empty = Files::new();
    let mut out = Vec::new();
    for (name, (pr, files)) in after {
        let lifecycle = format!("{:?}", pr.spec.lifecycle);
        match before.get(name) {
            Some((old, old_files)) => {
                if old.spec.lifecycle != pr.spec.lifecycle || old_files != files {
                    out.push(RevisionChange {
                        name: name.clone(),
                        change: "updated",
                        lifecycle,
                        base: Some(name.clone()),
                        diff: package_diff(old_files, files, name, name),
                    });
                }
            }
            None => {
                let base = latest_published(before, pr);
                let (base_name, base_files) = base
                    .map(|(p, f)| (Some(p.metadata.name.clone()), f))
                    .unwrap_or((None, &empty));
                out.push(RevisionChange {
                    name: name.clone(),
                    change: "created",
                    lifecycle,
                    diff: package_diff(
                        base_files,
                        files,
                        base_name.as_deref().unwrap_or("/dev/null"),
                        name,
                    ),
                    base: base_name,
                });
            }
        }
    }
    for (name, (pr, _)) in before {
        if !after.contains_key(name) {
            out.push(RevisionChange {
                name: name.clone(),
                change: "deleted",
                lifecycle: format!("{:?}", pr.spec.lifecycle),
                base: None,
                diff: String::new(),
            });
        }
    }
    out
}

/// `local --dry-run`: the run on a copy of `args.dir`, and what it would
/// change. DIR is only read (its lock is taken while it is copied, when it
/// has one).
pub fn run_dry(args: &LocalArgs) -> Result<(DryRunPlan, bool), LocalError> {
    let dir = &args.dir;
    if !dir.is_dir() {
        return Err(LocalError::Usage(format!(
            "{} is not a directory",
            dir.display()
        )));
    }
    if args.init {
        return Err(LocalError::Usage(
            "--dry-run plans a reconcile of an initialised directory; run `local --init` first"
                .to_string(),
        ));
    }
    let scratch = tempfile::Builder::new()
        .prefix("porch-variants-dry-run-")
        .tempdir()
        .map_err(io("creating a temporary directory".to_string()))?;
    let copy: PathBuf = scratch.path().join("dir");
    let before = {
        // Taken only when the directory has one: creating it would write.
        let _lock = if dir.join(LOCK_FILE).exists() {
            Some(DirLock::acquire(dir)?)
        } else {
            None
        };
        check_isolated(&super::read_objects(dir, args.validate)?)?;
        copy_tree(dir, &copy, dir)?;
        revisions(dir, args.validate)?
    };
    // The writes are printed as a plan afterwards, not as they happen.
    let inner = LocalArgs {
        dir: copy.clone(),
        output: super::cli::Output::Json,
        dry_run: false,
        ..args.clone()
    };
    let (summary, ok) = run_local(&inner)?;
    let mut after = revisions(&copy, args.validate)?;
    // Content that names the repositories' paths (a clone's upstream URL)
    // names the copy's: it is what the run on DIR writes with DIR's.
    let real = dir
        .canonicalize()
        .map_err(io(format!("reading {}", dir.display())))?;
    let real = real.display().to_string();
    let mut aside = vec![copy.display().to_string()];
    if let Ok(c) = copy.canonicalize() {
        aside.push(c.display().to_string());
    }
    for (_, files) in after.values_mut() {
        for text in files.values_mut() {
            for a in &aside {
                if text.contains(a.as_str()) {
                    *text = text.replace(a.as_str(), &real);
                }
            }
        }
    }
    Ok((
        DryRunPlan {
            summary,
            revisions: changes(&before, &after),
        },
        ok,
    ))
}

/// Prints a plan as text: each write the run would make, each revision it
/// would create, change or delete with its diff, and a summary line.
pub fn print_text(plan: &DryRunPlan, dir: &Path) {
    for e in &plan.summary.report.events {
        if e.detail.is_empty() {
            crate::outln!("would: {}: {}", e.object, e.action);
        } else {
            crate::outln!("would: {}: {}: {}", e.object, e.action, e.detail);
        }
    }
    for c in &plan.revisions {
        let base = c
            .base
            .as_deref()
            .map(|b| format!(" (from {b})"))
            .unwrap_or_default();
        crate::outln!("{} {} [{}]{}", c.change, c.name, c.lifecycle, base);
        if !c.diff.is_empty() {
            crate::outln!("{}", c.diff.trim_end_matches('\n'));
        }
    }
    super::cli::print_text(&plan.summary);
    crate::outln!(
        "dry run: {} write(s) planned, {} revision(s) would change; {} is unchanged",
        plan.summary.report.events.len(),
        plan.revisions.len(),
        dir.display()
    );
}
