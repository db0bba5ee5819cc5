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
//! * `<dir>/.porch-variants/lock` — held by the command that is writing
//!   (see [`dir_lock`]); a second command waits for it.
//! * `<dir>/.porch-variants/cache/` — what lets a run skip work whose
//!   inputs did not change: `quiet-variants.json`, a digest of what each
//!   PackageVariant's last reconcile that wrote nothing read
//!   ([`crate::reconcile::quiet`]); `owners.json`, the owners each
//!   repository's revisions named, by a fingerprint of its refs. Deleting
//!   the folder costs one full run, nothing else.

pub mod cli;
pub mod dir_lock;
pub mod dry_run;
mod objects;
pub mod repo_cmd;
pub mod rpkg;
pub mod validate;

pub use objects::LocalObjects;
pub use validate::Validation;

use std::path::{Path, PathBuf};

use pv_core::variantset::selector::is_dns1123_subdomain;
use pv_core::yaml;
use serde_json::Value;

use crate::store::git::GitRepoConfig;
use crate::store::rules::ns_or_default;
use crate::store::{StoreError, StoreResult};

/// The state folder under a local directory.
pub const STATE_DIR: &str = ".porch-variants/status";
/// The owner cache of the directory's repositories
/// ([`crate::store::git::GitRevisions::with_owner_cache`]).
pub const OWNER_CACHE: &str = ".porch-variants/cache/owners.json";
/// The digests of the variants' last quiet reconciles.
pub const QUIET_DIGESTS: &str = ".porch-variants/cache/quiet-variants.json";

/// The digests `<dir>` keeps of quiet reconciles (none when the file is
/// missing or does not read: everything is then reconciled).
pub fn read_quiet_digests(dir: &Path) -> crate::reconcile::QuietDigests {
    let path = dir.join(QUIET_DIGESTS);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            tracing::warn!(path = %path.display(), error = %e, "ignoring unreadable digests");
            Default::default()
        }),
        Err(_) => Default::default(),
    }
}

/// Writes the digests of quiet reconciles: a new file renamed over the old
/// one (a process stopped half-way leaves the old digests, which only
/// describe reconciles that wrote nothing).
pub fn write_quiet_digests(
    dir: &Path,
    digests: &crate::reconcile::QuietDigests,
) -> StoreResult<()> {
    let path = dir.join(QUIET_DIGESTS);
    let bytes = serde_json::to_vec(digests).map_err(|e| StoreError::Data {
        context: format!("writing {}", path.display()),
        message: e.to_string(),
    })?;
    crate::store::replace_file(&path, &bytes)
}

/// The objects of a directory's YAML files.
#[derive(Debug, Clone, Default)]
pub struct DirObjects {
    /// Every object, as JSON, in file and document order.
    pub objects: Vec<Value>,
    /// Where each object of `objects` was read (`FILE, document N`), for
    /// errors about it.
    pub sources: Vec<String>,
}

impl DirObjects {
    /// The FunctionConfig objects (`config.porch.kpt.dev/v1alpha1`), each
    /// checked as the CRD would check it; a bad one is an error naming
    /// where it was read, the object and the field.
    pub fn function_configs(
        &self,
    ) -> StoreResult<Vec<pv_core::api::function_config::FunctionConfig>> {
        use pv_core::api::function_config::{FunctionConfig, API_VERSION, KIND};
        let mut out = Vec::new();
        for (object, source) in self.objects.iter().zip(&self.sources) {
            if object["apiVersion"] != API_VERSION || object["kind"] != KIND {
                continue;
            }
            let name = object["metadata"]["name"].as_str().unwrap_or_default();
            let refuse = |message: String| StoreError::Data {
                context: format!("{source} (FunctionConfig {name})"),
                message,
            };
            let config: FunctionConfig =
                serde_json::from_value(object.clone()).map_err(|e| refuse(e.to_string()))?;
            if let Some(why) = config.invalid() {
                return Err(refuse(why));
            }
            out.push(config);
        }
        Ok(out)
    }
}

/// Reads every object of `<dir>/*.yaml` and `<dir>/*.yml`, checked as
/// `validation` says (see [`validate`]).
pub fn read_objects(dir: &Path, validation: Validation) -> StoreResult<DirObjects> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(StoreError::io(format!("reading {}", dir.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    paths.sort();
    let mut out = DirObjects::default();
    for path in paths {
        for (source, object) in read_yaml_objects(&path, Some(validation))? {
            out.sources.push(source);
            out.objects.push(object);
        }
    }
    Ok(out)
}

/// The objects of one YAML file (documents that are not mappings with a
/// kind are skipped).
pub fn parse_yaml_objects(path: &Path) -> StoreResult<Vec<Value>> {
    Ok(read_yaml_objects(path, None)?
        .into_iter()
        .map(|(_, object)| object)
        .collect())
}

/// [`parse_yaml_objects`], each object with where it was read. Every object
/// must have a `metadata` mapping with a valid `name` (and `namespace`,
/// when set): names become file names of the controller's state. With a
/// `validation`, objects of our kinds are checked against their schemas
/// as [`validate`] says; without, only repeated keys are refused.
fn read_yaml_objects(
    path: &Path,
    validation: Option<Validation>,
) -> StoreResult<Vec<(String, Value)>> {
    let text = std::fs::read_to_string(path)
        .map_err(StoreError::io(format!("reading {}", path.display())))?;
    let docs = yaml::parse_stream(&text).map_err(|e| StoreError::Data {
        context: path.display().to_string(),
        message: e.to_string(),
    })?;
    let mut out = Vec::new();
    for (i, doc) in docs.iter().enumerate() {
        let source = format!("{}, document {}", path.display(), i + 1);
        let data_err = |context: String, message: String| StoreError::Data { context, message };
        // A repeated key: the document is read leniently (the last
        // value kept) to name the object, then refused unless the
        // validation is lenient.
        let (v, repeated) = match yaml::to_json_strict(doc) {
            Ok(v) => (v, None),
            Err(e) => (
                yaml::to_json(doc).map_err(|e| data_err(source.clone(), e.to_string()))?,
                Some(e.to_string()),
            ),
        };
        let Some(kind) = v.get("kind").and_then(Value::as_str) else {
            if let (Some(message), None | Some(Validation::Strict)) = (repeated, validation) {
                return Err(data_err(source, message));
            }
            continue;
        };
        let what = || {
            format!(
                "{source} ({kind} {}/{})",
                ns_or_default(v["metadata"]["namespace"].as_str().unwrap_or_default()),
                v["metadata"]["name"].as_str().unwrap_or_default()
            )
        };
        if let (Some(message), None) = (&repeated, validation) {
            return Err(data_err(what(), message.clone()));
        }
        if let Some(validation) = validation.filter(|v| *v != Validation::Ignore) {
            let findings = validate::check(doc, &v, repeated.as_deref())
                .map_err(|message| data_err(what(), message))?;
            for f in findings {
                if validation == Validation::Strict {
                    return Err(data_err(what(), f.message));
                }
                tracing::warn!("{}: {}", what(), f.message);
            }
        }
        check_metadata(&v).map_err(|message| StoreError::Data {
            context: format!("{source} ({kind})"),
            message,
        })?;
        out.push((source, v));
    }
    Ok(out)
}

/// Checks the `metadata` of an object: a mapping, a valid `name`, and a
/// valid `namespace` when set.
fn check_metadata(object: &Value) -> Result<(), String> {
    let Some(metadata) = object.get("metadata").and_then(Value::as_object) else {
        return Err("metadata must be a mapping with a name".to_string());
    };
    let name = match metadata.get("name") {
        Some(Value::String(name)) => name,
        Some(_) => return Err("metadata.name must be a string".to_string()),
        None => return Err("metadata.name is missing".to_string()),
    };
    is_dns1123_subdomain(name).map_err(|e| format!("metadata.name {name:?}: {e}"))?;
    match metadata.get("namespace") {
        None | Some(Value::Null) => Ok(()),
        Some(Value::String(ns)) if ns.len() <= 63 && !ns.contains('.') => {
            is_dns1123_subdomain(ns).map_err(|e| format!("metadata.namespace {ns:?}: {e}"))
        }
        Some(Value::String(ns)) => Err(format!(
            "metadata.namespace {ns:?}: a namespace is a lowercase RFC 1123 label: at most 63 lower case alphanumeric characters or '-', starting and ending with an alphanumeric character"
        )),
        Some(_) => Err("metadata.namespace must be a string".to_string()),
    }
}

/// The Git repositories of the directory's Repository objects: `repos/<name>`,
/// or `spec.git.repo` as a path relative to the directory (or absolute),
/// or, when `spec.git.repo` is a URL (https, http, ssh, git, file), its
/// mirror `.porch-variants/mirrors/<namespace>/<name>.git` (see
/// [`crate::store::remote`]).
/// A repository must lie inside the directory, and `spec.git.directory`
/// must be a relative path without `..`: anything else is refused, naming
/// the object and the field, before any repository is opened.
pub fn repo_configs(dir: &Path, objects: &DirObjects) -> StoreResult<Vec<GitRepoConfig>> {
    let mut out = Vec::new();
    for (o, source) in objects.objects.iter().zip(&objects.sources) {
        if o["kind"] != "Repository" {
            continue;
        }
        let name = o["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let namespace = ns_or_default(o["metadata"]["namespace"].as_str().unwrap_or_default());
        let refuse = |field: &str, value: &str, why: &str| StoreError::Data {
            context: format!("{source} (Repository {namespace}/{name})"),
            message: format!("{field} {value:?}: {why}"),
        };
        let git = &o["spec"]["git"];
        let repo = git["repo"].as_str().unwrap_or_default();
        // A URL is served from its mirror under the directory.
        let remote = crate::store::remote::is_remote_url(repo);
        if remote {
            crate::store::remote::check_url(repo)
                .map_err(|why| refuse("spec.git.repo", repo, &why))?;
        }
        let path = if remote {
            crate::store::remote::mirror_path(
                &dir.join(crate::store::remote::LOCAL_MIRRORS_DIR),
                &namespace,
                &name,
            )
        } else if repo.is_empty() {
            dir.join("repos").join(&name)
        } else {
            dir.join(repo)
        };
        if !remote && !inside(dir, &path) {
            let (field, value) = if repo.is_empty() {
                ("metadata.name", name.as_str())
            } else {
                ("spec.git.repo", repo)
            };
            return Err(refuse(
                field,
                value,
                &format!(
                    "the repository {} is not inside {}; local mode opens no repository outside its directory",
                    path.display(),
                    dir.display()
                ),
            ));
        }
        // A directory inside the Git repository: Porch trims its slashes
        // (porchctl registers `/`, the repository's root).
        let written = git["directory"].as_str().unwrap_or_default();
        let directory = written.trim_matches('/');
        if directory.split('/').any(|part| part == "..") {
            return Err(refuse(
                "spec.git.directory",
                written,
                "must be a path inside the repository, without `..`",
            ));
        }
        out.push(GitRepoConfig {
            name,
            namespace,
            path,
            branch: git["branch"]
                .as_str()
                .filter(|b| !b.is_empty())
                .unwrap_or("main")
                .to_string(),
            directory: directory.to_string(),
        });
    }
    Ok(out)
}

/// Whether `path` lies inside `dir` (strictly below it), judged on the
/// paths with `.` and `..` resolved, and again on the real paths when both
/// exist (so a symbolic link out of the directory is outside).
fn inside(dir: &Path, path: &Path) -> bool {
    fn lexical(p: &Path) -> PathBuf {
        let mut out = PathBuf::new();
        for c in p.components() {
            match c {
                std::path::Component::ParentDir => {
                    out.pop();
                }
                std::path::Component::CurDir => {}
                c => out.push(c),
            }
        }
        out
    }
    let absolute = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let (d, p) = (lexical(&absolute(dir)), lexical(&absolute(path)));
    if p == d || !p.starts_with(&d) {
        return false;
    }
    match (dir.canonicalize(), path.canonicalize()) {
        (Ok(d), Ok(p)) => p != d && p.starts_with(&d),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(files: &[(&str, &str)]) -> StoreResult<DirObjects> {
        let dir = tempfile::tempdir().expect("temporary directory");
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).expect("writes");
        }
        read_objects(dir.path(), Validation::Strict)
    }

    fn error(files: &[(&str, &str)]) -> String {
        match read(files) {
            Ok(objects) => panic!("read {} objects", objects.objects.len()),
            Err(e) => e.to_string(),
        }
    }

    fn configs(dir: &Path, repo_fields: &str) -> StoreResult<Vec<GitRepoConfig>> {
        std::fs::write(
            dir.join("repos.yaml"),
            format!("kind: Repository\nmetadata:\n  name: r\nspec:\n  git:\n{repo_fields}"),
        )
        .expect("writes");
        repo_configs(dir, &read_objects(dir, Validation::Strict)?)
    }

    #[test]
    fn repositories_outside_the_directory_are_refused_naming_the_field() {
        let tmp = tempfile::tempdir().expect("temporary directory");
        let dir = tmp.path().join("fleet");
        std::fs::create_dir_all(dir.join("repos")).expect("mkdir");
        for (fields, field) in [
            ("    repo: ../elsewhere\n", "spec.git.repo \"../elsewhere\""),
            ("    repo: /etc\n", "spec.git.repo \"/etc\""),
            ("    repo: repos/../..\n", "spec.git.repo \"repos/../..\""),
            ("    repo: .\n", "spec.git.repo \".\""),
            ("    directory: ../up\n", "spec.git.directory \"../up\""),
            ("    directory: /../up\n", "spec.git.directory \"/../up\""),
        ] {
            let e = configs(&dir, fields).expect_err(fields).to_string();
            assert!(
                e.contains("(Repository default/r)") && e.contains(field),
                "{e}"
            );
        }
        // A link out of the directory is outside too.
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(tmp.path(), dir.join("repos/r")).expect("symlink");
            let e = configs(&dir, "    branch: main\n")
                .expect_err("symlink")
                .to_string();
            assert!(e.contains("metadata.name \"r\""), "{e}");
            std::fs::remove_file(dir.join("repos/r")).expect("unlink");
        }
        // Inside is fine, relative or absolute.
        let inside = dir.join("git/r.git");
        let ok = configs(&dir, "    repo: git/r.git\n    directory: pkgs/a\n").expect("inside");
        assert_eq!(ok[0].path, inside);
        // The directory is inside the Git repository: slashes trimmed, as
        // Porch trims them (`/` is the root porchctl registers).
        for (written, directory) in [("/", ""), ("/pkgs/a/", "pkgs/a")] {
            let ok = configs(&dir, &format!("    directory: {written}\n")).expect(written);
            assert_eq!(ok[0].directory, directory);
        }
        let abs = format!("    repo: {}\n", inside.display());
        assert_eq!(
            configs(&dir, &abs).expect("absolute inside")[0].path,
            inside
        );
    }

    #[test]
    fn objects_keep_where_they_were_read() {
        let objects = read(&[
            ("a.yaml", "kind: ConfigMap\nmetadata:\n  name: one\n---\njust: text\n---\nkind: ConfigMap\nmetadata:\n  name: two\n  namespace: team-a\n"),
            ("b.yml", "kind: Repository\nmetadata:\n  name: edge-1\n"),
        ])
        .expect("reads");
        assert_eq!(objects.objects.len(), 3);
        let sources: Vec<&str> = objects
            .sources
            .iter()
            .map(|s| s.rsplit('/').next().unwrap_or(s))
            .collect();
        assert_eq!(
            sources,
            [
                "a.yaml, document 1",
                "a.yaml, document 3",
                "b.yml, document 1"
            ]
        );
    }

    #[test]
    fn metadata_that_is_not_a_mapping_is_refused_with_its_file() {
        let e = error(&[(
            "pvs.yaml",
            "kind: ConfigMap\nmetadata:\n  name: ok\n---\nkind: ConfigMap\nmetadata: x\n",
        )]);
        assert!(e.contains("pvs.yaml, document 2 (ConfigMap)"), "{e}");
        assert!(e.contains("metadata must be a mapping"), "{e}");
    }

    #[test]
    fn names_that_are_not_object_names_are_refused() {
        for (meta, field) in [
            ("name: ../../x", "metadata.name \"../../x\""),
            ("name: a/b", "metadata.name \"a/b\""),
            ("name: My_PV", "metadata.name \"My_PV\""),
            ("namespace: default", "metadata.name is missing"),
            ("name: 7", "metadata.name must be a string"),
            (
                "name: ok\n  namespace: ../etc",
                "metadata.namespace \"../etc\"",
            ),
            ("name: ok\n  namespace: a.b", "metadata.namespace \"a.b\""),
        ] {
            let e = error(&[(
                "pv.yaml",
                &format!("kind: PackageVariant\nmetadata:\n  {meta}\n"),
            )]);
            assert!(e.contains("pv.yaml, document 1 (PackageVariant)"), "{e}");
            assert!(e.contains(field), "{meta}: {e}");
        }
    }
}
