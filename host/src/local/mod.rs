//! Local mode: a directory stands in for a cluster.
//!
//! * `<dir>/*.yaml` — the objects (multi-document YAML): PackageVariants,
//!   PackageVariantSets, Repositories and any other objects (targets of
//!   `objectSelector`s, config-injection sources). Namespace `default`
//!   unless set. These files are only read: comments and layout stay as
//!   the user wrote them.
//! * `<dir>/repos/<name>/` — the Git repository of Repository `<name>`
//!   (a Repository's `spec.git.repo` may instead give a path, relative to
//!   `<dir>` or absolute; `spec.git.branch` defaults to `main`).
//! * `<dir>/packages/<repo>/<package>/` — seed packages: `--init` creates
//!   missing repositories (bare) and publishes each seed package as its
//!   revision v1 if the repository has no revision of it.
//! * `<dir>/.porch-variants/status/<namespace>/<Kind>/<name>.yaml` — what
//!   the controller writes: each PackageVariant and PackageVariantSet as it
//!   sees it (UID, finalizers, generated PackageVariants of sets, and the
//!   **status**: conditions and downstream targets). A PackageVariant whose
//!   file was removed but whose state still holds the finalizer is being
//!   deleted: the next run applies its deletion policy, then removes the
//!   state.

pub mod cli;
mod objects;

pub use objects::LocalObjects;

use std::path::{Path, PathBuf};

use pv_core::yaml;
use serde_json::Value;

use crate::store::git::GitRepoConfig;
use crate::store::memory::ns_or_default;
use crate::store::{StoreError, StoreResult};

/// The state folder under a local directory.
pub const STATE_DIR: &str = ".porch-variants/status";

/// The objects of a directory's YAML files.
#[derive(Debug, Clone, Default)]
pub struct DirObjects {
    /// Every object, as JSON, in file and document order.
    pub objects: Vec<Value>,
}

/// Reads every object of `<dir>/*.yaml` and `<dir>/*.yml`.
pub fn read_objects(dir: &Path) -> StoreResult<DirObjects> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(StoreError::io(format!("reading {}", dir.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    paths.sort();
    let mut out = DirObjects::default();
    for path in paths {
        out.objects.extend(parse_yaml_objects(&path)?);
    }
    Ok(out)
}

/// The objects of one YAML file (documents that are not mappings with a
/// kind are skipped).
pub fn parse_yaml_objects(path: &Path) -> StoreResult<Vec<Value>> {
    let text = std::fs::read_to_string(path)
        .map_err(StoreError::io(format!("reading {}", path.display())))?;
    let docs = yaml::parse_stream(&text).map_err(|e| StoreError::Data {
        context: path.display().to_string(),
        message: e.to_string(),
    })?;
    let mut out = Vec::new();
    for doc in docs {
        let v = yaml::to_json_strict(&doc).map_err(|e| StoreError::Data {
            context: path.display().to_string(),
            message: e.to_string(),
        })?;
        if v.get("kind").and_then(Value::as_str).is_some() {
            out.push(v);
        }
    }
    Ok(out)
}

/// The Git configuration of each Repository object (`type: git`).
pub fn repo_configs(dir: &Path, objects: &DirObjects) -> Vec<GitRepoConfig> {
    objects
        .objects
        .iter()
        .filter(|o| o["kind"] == "Repository")
        .map(|o| {
            let name = o["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let git = &o["spec"]["git"];
            let repo = git["repo"].as_str().unwrap_or_default();
            let path = if repo.is_empty() {
                dir.join("repos").join(&name)
            } else if Path::new(repo).is_absolute() {
                PathBuf::from(repo)
            } else {
                dir.join(repo)
            };
            GitRepoConfig {
                name,
                namespace: ns_or_default(o["metadata"]["namespace"].as_str().unwrap_or_default()),
                path,
                branch: git["branch"]
                    .as_str()
                    .filter(|b| !b.is_empty())
                    .unwrap_or("main")
                    .to_string(),
                directory: git["directory"].as_str().unwrap_or_default().to_string(),
            }
        })
        .collect()
}
