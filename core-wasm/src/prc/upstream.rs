//! kpt's `kptops.UpdateKptfileUpstream`, which the v1alpha2
//! PackageRevision controller's `clone` and `upgrade` sources call on the
//! package's files: the Kptfile renamed to the package and pointed at its
//! upstream, re-marshalled from kpt's struct (wide sequences, no comments,
//! struct field order).
//!
//! The v1alpha1 path ([`crate::merge::kptfile::set_upstream`]) edits the
//! Kptfile in place instead and records `updateStrategy`; this one follows
//! kpt exactly.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use crate::api::package_revision::{GitLock, Locator};
use crate::merge::kptfile::{decode_kptfile, marshal_kptfile, KPTFILE};
use crate::merge::Files;

/// `kptfilev1.Git`: where an upstream package lives.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GitRef {
    /// Repository URL.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub repo: String,
    /// Package directory in the repository.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub directory: String,
    /// Branch, tag or commit.
    #[serde(default, rename = "ref", skip_serializing_if = "String::is_empty")]
    pub r#ref: String,
}

/// `kptfilev1.Upstream`: the Kptfile's `upstream`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Upstream {
    /// `git`.
    #[serde(default, rename = "type", skip_serializing_if = "String::is_empty")]
    pub type_: String,
    /// The git location.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<GitRef>,
    /// `resource-merge`, `fast-forward`, … (empty: unset).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub update_strategy: String,
}

impl Upstream {
    /// The upstream a lock implies (`cloneFromGit`): its type, and its
    /// repository, directory and ref.
    pub fn from_lock(lock: &Locator) -> Upstream {
        Upstream {
            type_: lock.type_.clone(),
            git: lock.git.as_ref().map(|g| GitRef {
                repo: g.repo.clone(),
                directory: g.directory.clone(),
                r#ref: g.r#ref.clone(),
            }),
            update_strategy: String::new(),
        }
    }
}

/// `UpdateKptfileUpstream` failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UpstreamError {
    /// The package has no root Kptfile.
    #[error("package {0:?} is missing Kptfile")]
    MissingKptfile(String),
    /// The Kptfile does not decode as kpt's struct (strictly).
    #[error("failed to update package upstream: cannot parse Kptfile: {0}")]
    Parse(String),
    /// The Kptfile could not be written.
    #[error("failed to update package upstream: cannot save Kptfile: {0}")]
    Save(String),
}

/// `normalizeGitFields`: `.git` appended to the repository URL when
/// missing, a leading `/` trimmed from the directory. A `file://` URL (a
/// local directory's repository, which Porch never has) is kept as it is,
/// so that it still names the directory: `git clone` would not find
/// `repos/blueprints` as `repos/blueprints.git`.
fn normalize(repo: &mut String, directory: &mut String) {
    if !repo.ends_with(".git") && !repo.starts_with("file://") {
        repo.push_str(".git");
    }
    if let Some(d) = directory.strip_prefix('/') {
        *directory = d.to_string();
    }
}

/// `kptops.UpdateKptfileUpstream(name, files, upstream, lock)`: `files`
/// with the root Kptfile's `upstream` and `upstreamLock` replaced (git
/// locations normalised), `metadata.name` set to `name` (unless empty),
/// and the Kptfile re-marshalled as kyaml writes kpt's struct.
pub fn update_kptfile_upstream(
    name: &str,
    files: &Files,
    upstream: &Upstream,
    lock: &Locator,
) -> Result<Files, UpstreamError> {
    let text = files
        .get(KPTFILE)
        .ok_or_else(|| UpstreamError::MissingKptfile(name.to_string()))?;
    let mut kf = decode_kptfile(text).map_err(UpstreamError::Parse)?;
    let (mut upstream, mut lock) = (upstream.clone(), lock.clone());
    if let Some(g) = upstream.git.as_mut() {
        normalize(&mut g.repo, &mut g.directory);
    }
    if let Some(g) = lock.git.as_mut() {
        normalize(&mut g.repo, &mut g.directory);
    }
    let obj = kf
        .as_object_mut()
        .ok_or_else(|| UpstreamError::Parse("the Kptfile is not a mapping".to_string()))?;
    obj.insert("upstreamLock".into(), json(&lock)?);
    obj.insert("upstream".into(), json(&upstream)?);
    if !name.is_empty() {
        let meta = obj
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        if !meta.is_object() {
            *meta = Value::Object(Map::new());
        }
        if let Some(meta) = meta.as_object_mut() {
            meta.insert("name".into(), name.into());
        }
    }
    let text = marshal_kptfile(&kf, true).map_err(UpstreamError::Save)?;
    let mut out = files.clone();
    out.insert(KPTFILE.to_string(), text);
    Ok(out)
}

fn json<T: Serialize>(value: &T) -> Result<Value, UpstreamError> {
    serde_json::to_value(value).map_err(|e| UpstreamError::Save(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lock(repo: &str, dir: &str) -> Locator {
        Locator {
            type_: "git".into(),
            git: Some(GitLock {
                repo: repo.into(),
                directory: dir.into(),
                r#ref: "v1".into(),
                commit: "abc123".into(),
            }),
        }
    }

    #[test]
    fn the_kptfile_is_renamed_pointed_upstream_and_normalised() {
        let files = Files::from([(
            KPTFILE.to_string(),
            "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: upstream-pkg\n".to_string(),
        )]);
        let l = lock("https://example.com/repo", "/upstream-pkg");
        let out = update_kptfile_upstream("my-pkg", &files, &Upstream::from_lock(&l), &l).unwrap();
        assert_eq!(
            out[KPTFILE],
            "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: my-pkg\nupstream:\n  type: git\n  git:\n    repo: https://example.com/repo.git\n    directory: upstream-pkg\n    ref: v1\nupstreamLock:\n  type: git\n  git:\n    repo: https://example.com/repo.git\n    directory: upstream-pkg\n    ref: v1\n    commit: abc123\n"
        );
    }

    #[test]
    fn a_local_directorys_url_is_kept_as_it_names_the_directory() {
        let (mut repo, mut dir) = (
            "file:///tmp/fleet/repos/blueprints".to_string(),
            "/web".to_string(),
        );
        normalize(&mut repo, &mut dir);
        assert_eq!(
            (repo.as_str(), dir.as_str()),
            ("file:///tmp/fleet/repos/blueprints", "web")
        );
        let (mut repo, mut dir) = ("https://example.com/r".to_string(), String::new());
        normalize(&mut repo, &mut dir);
        assert_eq!(repo, "https://example.com/r.git");
    }

    #[test]
    fn comments_and_order_go_as_kpt_marshals_its_struct() {
        let text = "# top\nkind: Kptfile\napiVersion: kpt.dev/v1\ninfo:\n  keywords: [a, b] # kw\n  description: d\nmetadata:\n  annotations: {z: '1', a: '2'}\n  name: p\nupstream:\n  type: git\n  updateStrategy: fast-forward\n";
        let files = Files::from([(KPTFILE.to_string(), text.to_string())]);
        let l = lock("r.git", "d");
        let out = update_kptfile_upstream("", &files, &Upstream::from_lock(&l), &l).unwrap();
        assert_eq!(
            out[KPTFILE],
            "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\n  annotations:\n    a: \"2\"\n    z: \"1\"\nupstream:\n  type: git\n  git:\n    repo: r.git\n    directory: d\n    ref: v1\nupstreamLock:\n  type: git\n  git:\n    repo: r.git\n    directory: d\n    ref: v1\n    commit: abc123\ninfo:\n  description: d\n  keywords:\n    - a\n    - b\n"
        );
    }

    #[test]
    fn a_missing_or_invalid_kptfile_fails_like_kpt() {
        let l = Locator::default();
        let err = update_kptfile_upstream("p", &Files::new(), &Upstream::default(), &l);
        assert_eq!(
            err.unwrap_err().to_string(),
            "package \"p\" is missing Kptfile"
        );
        let files = Files::from([(KPTFILE.to_string(), "not: valid: yaml: [".to_string())]);
        let err = update_kptfile_upstream("p", &files, &Upstream::default(), &l).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("failed to update package upstream: cannot parse Kptfile: "),
            "{err}"
        );
        let files = Files::from([(
            KPTFILE.to_string(),
            "apiVersion: kpt.dev/v1\nkind: Kptfile\nbogus: 1\n".to_string(),
        )]);
        assert!(matches!(
            update_kptfile_upstream("p", &files, &Upstream::default(), &l),
            Err(UpstreamError::Parse(_))
        ));
    }

    #[test]
    fn other_files_are_untouched() {
        let files = Files::from([
            (
                KPTFILE.to_string(),
                "apiVersion: kpt.dev/v1\nkind: Kptfile\n".to_string(),
            ),
            ("a.yaml".to_string(), "x: 1 # c\n".to_string()),
        ]);
        let out = update_kptfile_upstream("p", &files, &Upstream::default(), &Locator::default())
            .unwrap();
        assert_eq!(out["a.yaml"], "x: 1 # c\n");
        assert!(
            out[KPTFILE].ends_with("upstream: {}\nupstreamLock: {}\n"),
            "{}",
            out[KPTFILE]
        );
    }
    /// `prc-source-upgrade/resource-merge-ok` and `prc-source-clone/git-ok`
    /// past the fakes: the merge, then the new upstream's lock.
    #[test]
    fn upgrade_and_git_clone_content_as_upstream_cases_expect() {
        let k = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: pkg\n";
        let cm = |n: &str| format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {n}\n");
        let old = Files::from([(KPTFILE.to_string(), k.to_string())]);
        let new = Files::from([
            (KPTFILE.to_string(), k.to_string()),
            ("new.yaml".to_string(), cm("new")),
        ]);
        let current = Files::from([
            (KPTFILE.to_string(), k.to_string()),
            ("local.yaml".to_string(), cm("local")),
        ]);
        let merged = crate::merge::strategy::update_package(&current, &old, &new, "").unwrap();
        let v2 = Locator {
            type_: "git".into(),
            git: Some(GitLock {
                repo: "https://example.com/upstream.git".into(),
                directory: "/pkg".into(),
                r#ref: "v2".into(),
                commit: "def456".into(),
            }),
        };
        let out = update_kptfile_upstream("pkg", &merged, &Upstream::from_lock(&v2), &v2).unwrap();
        assert_eq!(
            out.keys().collect::<Vec<_>>(),
            ["Kptfile", "local.yaml", "new.yaml"]
        );
        assert!(out[KPTFILE].contains("    ref: v2\n"), "{}", out[KPTFILE]);
        assert!(
            out[KPTFILE].contains("    directory: pkg\n"),
            "{}",
            out[KPTFILE]
        );

        let fetched = Files::from([(KPTFILE.to_string(), k.to_string())]);
        let l = lock("https://example.com/repo.git", "/pkg");
        let out =
            update_kptfile_upstream("my-pkg", &fetched, &Upstream::from_lock(&l), &l).unwrap();
        assert!(out[KPTFILE].contains("name: my-pkg\n"), "{}", out[KPTFILE]);
        assert!(!out[KPTFILE].contains(".git.git"), "{}", out[KPTFILE]);
    }
}
