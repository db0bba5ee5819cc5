//! kpt's four package updaters as Porch's v1alpha2 PackageRevision
//! controller runs them for an `upgrade` source
//! (`repository.DefaultPackageUpdater`: the three packages in temporary
//! directories, the local one updated in place as a root package), over a
//! package's files:
//!
//! | strategy | kpt updater | effect |
//! |---|---|---|
//! | `resource-merge`, empty or unknown | `ResourceMergeUpdater` | [`merge_packages`]; the root Kptfile by `UpdateKptfile` (upstream fields kept) |
//! | `fast-forward` | `FastForwardUpdater` | fails when local differs from original (Kptfile upstream, lock and render status aside); else replace, then clear the render status |
//! | `force-delete-replace` | `ReplaceUpdater` | each package's own files replaced by upstream's; the root Kptfile by `UpdateKptfile` |
//! | `copy-merge` | `CopyMergeUpdater` | upstream's files over local, files upstream removed since original dropped, local-only files kept; the root Kptfile by `UpdateKptfile` |
//!
//! `UpdateKptfile` ([`update_kptfile`]): a three-way merge of the Kptfiles of
//! which local takes only `annotations`, `labels`, `info`, `pipeline` and
//! `inventory`; with `update_upstream`, upstream's `upstream` and
//! `upstreamLock` when it has them; written as kpt marshals its struct.
//!
//! A subpackage is a directory holding a `Kptfile`; kpt's `Local`
//! subpackages are those whose Kptfile has no `upstream`.

use serde_json::{Map, Value};

use super::kptfile::{decode_kptfile, marshal_kptfile, KPTFILE};
use super::resource::merge_packages;
use super::{Files, MergeError};

/// The default strategy: a three-way merge of every resource.
pub const RESOURCE_MERGE: &str = "resource-merge";
/// Take the new upstream only when there are no local changes.
pub const FAST_FORWARD: &str = "fast-forward";
/// Replace the package with the new upstream.
pub const FORCE_DELETE_REPLACE: &str = "force-delete-replace";
/// Copy the new upstream over the local package.
pub const COPY_MERGE: &str = "copy-merge";

/// The annotation kpt's package diff ignores in resource files.
const CNRM_METRICS_ANNOTATION: &str = "cnrm.cloud.google.com/blueprint";

/// `DefaultPackageUpdater.Update(local, original, upstream, strategy)`:
/// the local package updated from `original` (the old upstream) to
/// `upstream` (the new one) with kpt's updater for `strategy`.
pub fn update_package(
    local: &Files,
    original: &Files,
    upstream: &Files,
    strategy: &str,
) -> Result<Files, MergeError> {
    match strategy {
        FAST_FORWARD => fast_forward(local, original, upstream),
        FORCE_DELETE_REPLACE => replace(local, original, upstream),
        COPY_MERGE => copy_merge(local, original, upstream),
        _ => resource_merge(local, original, upstream),
    }
}

/// Porch's `stripKptfileStatus` (the fast-forward workaround): the
/// Kptfile without `status`, re-marshalled by kyaml (compact sequences);
/// the files unchanged, byte for byte, when there is no Kptfile, it does
/// not decode, or it has no status.
pub fn strip_kptfile_status(files: &Files) -> Files {
    let mut out = files.clone();
    let Some(text) = files.get(KPTFILE) else {
        return out;
    };
    let Ok(mut kf) = decode_kptfile(text) else {
        return out;
    };
    let Some(obj) = kf.as_object_mut() else {
        return out;
    };
    if obj.get("status").is_none_or(Value::is_null) {
        return out;
    }
    obj.remove("status");
    if let Ok(text) = marshal_kptfile(&kf, false) {
        out.insert(KPTFILE.to_string(), text);
    }
    out
}

/// kpt's `clearRenderStatus`: drops `status.renderStatus` and the
/// `Rendered` conditions, and `status` when nothing is left.
pub fn clear_render_status(kptfile: &mut Value) {
    let Some(obj) = kptfile.as_object_mut() else {
        return;
    };
    let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut) else {
        return;
    };
    status.remove("renderStatus");
    if let Some(conds) = status.get_mut("conditions").and_then(Value::as_array_mut) {
        conds.retain(|c| c.get("type").and_then(Value::as_str) != Some("Rendered"));
    }
    if status
        .get("conditions")
        .is_some_and(|c| c.as_array().is_none_or(Vec::is_empty))
    {
        status.remove("conditions");
    }
    if status.is_empty() {
        obj.remove("status");
    }
}

/// `kptfileutil.UpdateKptfile(local, updated, origin, update_upstream)`
/// on Kptfile texts (`None`: the package has none, read as the empty
/// struct): the local Kptfile with the three-way merge of `annotations`,
/// `labels`, `info`, `pipeline` and `inventory`, and with
/// `update_upstream` the updated `upstream`/`upstreamLock` when set;
/// written as `kptfileutil.WriteFile` does.
pub fn update_kptfile(
    local: Option<&str>,
    updated: Option<&str>,
    origin: Option<&str>,
    update_upstream: bool,
) -> Result<String, MergeError> {
    let read = |t: Option<&str>| -> Result<Value, MergeError> {
        match t {
            Some(t) => decode_kptfile(t).map_err(|e| MergeError::file(KPTFILE, e)),
            None => Ok(Value::Object(Map::new())),
        }
    };
    let (mut local_kf, updated_kf, origin_kf) = (read(local)?, read(updated)?, read(origin)?);
    let merged = merge_kptfiles(&local_kf, &updated_kf, &origin_kf)?;
    if let Some(obj) = local_kf.as_object_mut() {
        for (section, key) in [
            ("metadata", "annotations"),
            ("metadata", "labels"),
            ("", "info"),
            ("", "pipeline"),
            ("", "inventory"),
        ] {
            let value = if section.is_empty() {
                merged.get(key)
            } else {
                merged.get(section).and_then(|m| m.get(key))
            }
            .cloned();
            let target = if section.is_empty() {
                Some(&mut *obj)
            } else {
                let meta = obj
                    .entry(section)
                    .or_insert_with(|| Value::Object(Map::new()));
                if !meta.is_object() {
                    *meta = Value::Object(Map::new());
                }
                meta.as_object_mut()
            };
            if let Some(target) = target {
                match value {
                    Some(v) if !v.is_null() => {
                        target.insert(key.to_string(), v);
                    }
                    _ => {
                        target.remove(key);
                    }
                }
            }
        }
        if update_upstream {
            for key in ["upstream", "upstreamLock"] {
                if let Some(v) = updated_kf.get(key).filter(|v| !v.is_null()) {
                    obj.insert(key.to_string(), v.clone());
                }
            }
        }
    }
    marshal_kptfile(&local_kf, true).map_err(|e| MergeError::file(KPTFILE, e))
}

/// The prefix of the names kpt gives unnamed functions for the merge.
const SYNTHETIC_NAME_PREFIX: &str = "_kpt-merge_";

/// kyaml's `merge3.MergeStrings(local, origin, updated)` of three Kptfiles
/// (through [`merge_packages`]), with kpt's synthetic function names when
/// no function of any of them is named and none repeats.
fn merge_kptfiles(local: &Value, updated: &Value, origin: &Value) -> Result<Value, MergeError> {
    let mut sides = [local.clone(), updated.clone(), origin.clone()];
    let synthetic = sides.iter().all(functions_unnamed_and_unique);
    let mut texts = Vec::with_capacity(3);
    for side in &mut sides {
        if synthetic {
            set_function_names(side, true);
        }
        // Matched as one resource however the sides name it.
        if let Some(obj) = side.as_object_mut() {
            obj.insert("apiVersion".into(), "kpt.dev/v1".into());
            obj.insert("kind".into(), KPTFILE.into());
        }
        let text = marshal_kptfile(side, false).map_err(|e| MergeError::file(KPTFILE, e))?;
        texts.push(Files::from([(KPTFILE.to_string(), text)]));
    }
    let out = merge_packages(&texts[2], &texts[1], &texts[0])?;
    let Some(text) = out.files.get(KPTFILE) else {
        return Ok(Value::Object(Map::new()));
    };
    let doc = crate::yaml::parse_document(text).map_err(|e| MergeError::file(KPTFILE, e))?;
    let mut merged = crate::yaml::to_json(doc.root()).map_err(|e| MergeError::file(KPTFILE, e))?;
    if synthetic {
        set_function_names(&mut merged, false);
    }
    Ok(merged)
}

fn pipeline_lists(kf: &Value) -> impl Iterator<Item = &Vec<Value>> {
    ["mutators", "validators"]
        .into_iter()
        .filter_map(move |l| kf.get("pipeline")?.get(l)?.as_array())
}

/// `shouldAddFnKeyUtil` on both lists of one Kptfile.
fn functions_unnamed_and_unique(kf: &Value) -> bool {
    pipeline_lists(kf).all(|fns| {
        let mut seen = std::collections::BTreeSet::new();
        fns.iter().all(|f| {
            let s = |k: &str| f.get(k).and_then(Value::as_str).unwrap_or("");
            !(!s("name").is_empty() || !seen.insert(function_key(s("exec"), s("image"))))
        })
    })
}

fn function_key(exec: &str, image: &str) -> String {
    if exec.is_empty() {
        image.split(':').next().unwrap_or("").to_string()
    } else {
        exec.to_string()
    }
}

/// `addNameForMerge` (`add`) or `removeFnKey`.
fn set_function_names(kf: &mut Value, add: bool) {
    let Some(pipeline) = kf.get_mut("pipeline").and_then(Value::as_object_mut) else {
        return;
    };
    for list in ["mutators", "validators"] {
        let Some(fns) = pipeline.get_mut(list).and_then(Value::as_array_mut) else {
            continue;
        };
        for f in fns.iter_mut().filter_map(Value::as_object_mut) {
            let s = |k: &str| f.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            let name = s("name");
            if add && name.is_empty() {
                let key = function_key(&s("exec"), &s("image"));
                f.insert(
                    "name".into(),
                    format!("{SYNTHETIC_NAME_PREFIX}{key}").into(),
                );
            } else if !add && name.starts_with(SYNTHETIC_NAME_PREFIX) {
                f.remove("name");
            }
        }
    }
}

/// Which subpackages kpt's `FindSubpackagesForPaths` reports.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Matcher {
    /// Every subpackage.
    All,
    /// Subpackages whose Kptfile has no `upstream`.
    Local,
}

/// The directories (not the root) holding a Kptfile that `matcher`
/// accepts, in any of `packages`, parents before children.
fn subpackages(matcher: Matcher, packages: &[&Files]) -> Vec<String> {
    let mut dirs: Vec<String> = Vec::new();
    for files in packages {
        for (path, text) in files.iter() {
            let Some(dir) = path.strip_suffix("/Kptfile") else {
                continue;
            };
            if dir.is_empty() || dirs.iter().any(|d| d == dir) {
                continue;
            }
            let local = decode_kptfile(text)
                .map(|kf| kf.get("upstream").is_none_or(Value::is_null))
                .unwrap_or(true);
            if matcher == Matcher::All || local {
                dirs.push(dir.to_string());
            }
        }
    }
    dirs.sort_by(|a, b| {
        let depth = |p: &str| p.matches('/').count();
        depth(a).cmp(&depth(b)).then_with(|| a.cmp(b))
    });
    dirs
}

/// `path` under directory `dir` (`""` = the root): the rest, if it is.
fn under<'a>(path: &'a str, dir: &str) -> Option<&'a str> {
    if dir.is_empty() {
        Some(path)
    } else {
        path.strip_prefix(dir)?.strip_prefix('/')
    }
}

fn dir_exists(files: &Files, dir: &str) -> bool {
    dir.is_empty() || files.keys().any(|p| under(p, dir).is_some())
}

/// The files of the package at `dir` (`WalkPackage`: nested packages, the
/// directories with a Kptfile, and `.git` excluded), as paths relative to
/// the package.
fn own_files<'a>(files: &'a Files, dir: &str) -> Vec<(&'a str, &'a str)> {
    files
        .iter()
        .filter_map(|(path, text)| {
            let rel = under(path, dir)?;
            let mut parent = rel;
            while let Some((p, _)) = parent.rsplit_once('/') {
                parent = p;
                let full = if dir.is_empty() {
                    format!("{p}/{KPTFILE}")
                } else {
                    format!("{dir}/{p}/{KPTFILE}")
                };
                if files.contains_key(&full) || p.split('/').any(|s| s == ".git") {
                    return None;
                }
            }
            Some((rel, text.as_str()))
        })
        .collect()
}

fn join(dir: &str, rel: &str) -> String {
    if dir.is_empty() {
        rel.to_string()
    } else {
        format!("{dir}/{rel}")
    }
}

/// `RemovePackageContent` then, if upstream has the directory,
/// `CopyPackage(…, pkg.None)`, else `RemoveAll`: the package at `dir`
/// replaced by upstream's (the root keeps its Kptfile).
fn replace_package(out: &mut Files, upstream: &Files, dir: &str) {
    let keep_kptfile = dir.is_empty();
    let own: Vec<String> = own_files(out, dir)
        .into_iter()
        .filter(|(rel, _)| !(keep_kptfile && *rel == KPTFILE))
        .map(|(rel, _)| join(dir, rel))
        .collect();
    for path in own {
        out.remove(&path);
    }
    if !dir_exists(upstream, dir) {
        out.retain(|path, _| under(path, dir).is_none());
        return;
    }
    for (rel, text) in own_files(upstream, dir) {
        let path = join(dir, rel);
        if rel == KPTFILE && out.contains_key(&path) {
            continue;
        }
        out.insert(path, text.to_string());
    }
}

/// The root Kptfile after `UpdateKptfile`.
fn root_kptfile(
    local: &Files,
    original: &Files,
    upstream: &Files,
    update_upstream: bool,
) -> Result<String, MergeError> {
    update_kptfile(
        local.get(KPTFILE).map(String::as_str),
        upstream.get(KPTFILE).map(String::as_str),
        original.get(KPTFILE).map(String::as_str),
        update_upstream,
    )
}

/// `ReplaceUpdater`.
fn replace(local: &Files, original: &Files, upstream: &Files) -> Result<Files, MergeError> {
    let mut out = local.clone();
    out.insert(
        KPTFILE.to_string(),
        root_kptfile(local, original, upstream, true)?,
    );
    let mut dirs = vec![String::new()];
    dirs.extend(subpackages(Matcher::Local, &[&out, upstream]));
    for dir in dirs {
        replace_package(&mut out, upstream, &dir);
    }
    Ok(out)
}

/// `CopyMergeUpdater`.
fn copy_merge(local: &Files, original: &Files, upstream: &Files) -> Result<Files, MergeError> {
    let mut out = local.clone();
    out.insert(
        KPTFILE.to_string(),
        root_kptfile(local, original, upstream, true)?,
    );
    for (path, text) in upstream {
        if path == KPTFILE || path.split('/').any(|s| s == ".git") {
            continue;
        }
        out.insert(path.clone(), text.clone());
    }
    out.retain(|path, _| {
        path == KPTFILE || upstream.contains_key(path) || !original.contains_key(path)
    });
    Ok(out)
}

/// `ResourceMergeUpdater` (root package): [`merge_packages`], the root
/// Kptfile from `UpdateKptfile` without upstream fields.
fn resource_merge(local: &Files, original: &Files, upstream: &Files) -> Result<Files, MergeError> {
    for dir in subpackages(Matcher::Local, &[local, upstream, original]) {
        if !dir_exists(original, &dir) && dir_exists(local, &dir) && dir_exists(upstream, &dir) {
            return Err(MergeError::SubpackageAddedInBoth { path: dir });
        }
    }
    let mut out = merge_packages(original, upstream, local)?.files;
    out.insert(
        KPTFILE.to_string(),
        root_kptfile(local, original, upstream, false)?,
    );
    Ok(out)
}

/// `FastForwardUpdater`: the local-change check, `ReplaceUpdater`, then
/// the root Kptfile's render status cleared.
fn fast_forward(local: &Files, original: &Files, upstream: &Files) -> Result<Files, MergeError> {
    let changed = local_changes(local, original)?;
    if !changed.is_empty() {
        return Err(MergeError::LocalChanges { files: changed });
    }
    let mut out = replace(local, original, upstream)?;
    let Some(text) = out.get(KPTFILE) else {
        return Err(MergeError::file(KPTFILE, "no Kptfile after the update"));
    };
    let mut kf = decode_kptfile(text).map_err(|e| MergeError::file(KPTFILE, e))?;
    clear_render_status(&mut kf);
    let text = marshal_kptfile(&kf, true).map_err(|e| MergeError::file(KPTFILE, e))?;
    out.insert(KPTFILE.to_string(), text);
    Ok(out)
}

/// `checkForLocalChanges`: what differs between local and original, per
/// package (paths relative to it), sorted.
fn local_changes(local: &Files, original: &Files) -> Result<Vec<String>, MergeError> {
    let mut diff = std::collections::BTreeSet::new();
    let mut dirs = vec![String::new()];
    dirs.extend(subpackages(Matcher::Local, &[local, original]));
    for dir in &dirs {
        if !dir_exists(local, dir) || !dir_exists(original, dir) {
            // kpt's `aggDiff.Insert("%s (Package)", subPkgPath)` inserts
            // both strings.
            diff.insert("%s (Package)".to_string());
            diff.insert(dir.clone());
            continue;
        }
        let mut d = package_diff(local, original, dir)?;
        if dir.is_empty() && d.remove(KPTFILE) && has_kptfile_diff(local, original)? {
            d.insert(KPTFILE.to_string());
        }
        diff.extend(d);
    }
    Ok(diff.into_iter().collect())
}

/// Every file and directory of a package, relative to it (`.` itself).
fn package_set(files: &Files, dir: &str) -> std::collections::BTreeSet<String> {
    let mut set = std::collections::BTreeSet::from([".".to_string()]);
    for (rel, _) in own_files(files, dir) {
        let mut p = rel;
        set.insert(p.to_string());
        while let Some((parent, _)) = p.rsplit_once('/') {
            set.insert(parent.to_string());
            p = parent;
        }
    }
    set
}

/// `diff.PkgDiff(local, original)` of the package at `dir`.
fn package_diff(
    local: &Files,
    original: &Files,
    dir: &str,
) -> Result<std::collections::BTreeSet<String>, MergeError> {
    let (a, b) = (package_set(local, dir), package_set(original, dir));
    let mut diff: std::collections::BTreeSet<String> =
        a.symmetric_difference(&b).cloned().collect();
    for rel in a.intersection(&b) {
        let path = join(dir, rel);
        let (Some(x), Some(y)) = (local.get(&path), original.get(&path)) else {
            continue; // a directory
        };
        let base = rel.rsplit('/').next().unwrap_or(rel);
        let equal = if base == KPTFILE {
            kptfiles_equal(x, y)?
        } else {
            resource_files_equal(x, y)
        };
        if !equal {
            diff.insert(rel.clone());
        }
    }
    Ok(diff)
}

/// `kptfilesEqual`: the Kptfiles with empty `upstream` and `upstreamLock`,
/// marshalled alike.
fn kptfiles_equal(a: &str, b: &str) -> Result<bool, MergeError> {
    let norm = |t: &str| -> Result<String, MergeError> {
        let mut kf = decode_kptfile(t).map_err(|e| MergeError::file(KPTFILE, e))?;
        if let Some(obj) = kf.as_object_mut() {
            obj.insert("upstream".into(), Value::Object(Map::new()));
            obj.insert("upstreamLock".into(), Value::Object(Map::new()));
        }
        marshal_kptfile(&kf, false).map_err(|e| MergeError::file(KPTFILE, e))
    };
    Ok(norm(a)? == norm(b)?)
}

/// `nonKptfileEquals`: equal as kyaml reformats them without kpt's metrics
/// annotation; byte-equal when either does not parse.
fn resource_files_equal(a: &str, b: &str) -> bool {
    let norm = |t: &str| -> Option<String> {
        let mut docs = crate::yaml::parse_stream(t).ok()?;
        for doc in &mut docs {
            if let Some(ann) = doc
                .root_mut()
                .get_mut("metadata")
                .and_then(|m| m.get_mut("annotations"))
            {
                ann.remove(CNRM_METRICS_ANNOTATION);
            }
        }
        crate::yaml::emit_stream(&docs, crate::yaml::Format::Kyaml).ok()
    };
    match (norm(a), norm(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// `hasKfDiff`: the root Kptfiles differ beyond upstream, upstream lock,
/// render status and name. Without an original Kptfile, kpt compares with
/// a default Kptfile named after its temporary directory, which never
/// matches: a difference.
fn has_kptfile_diff(local: &Files, original: &Files) -> Result<bool, MergeError> {
    let decode = |t: &str| decode_kptfile(t).map_err(|e| MergeError::file(KPTFILE, e));
    let Some(local_text) = local.get(KPTFILE) else {
        return Ok(true);
    };
    let mut local_kf = decode(local_text)?;
    if let Some(obj) = local_kf.as_object_mut() {
        obj.remove("upstream");
        obj.remove("upstreamLock");
    }
    clear_render_status(&mut local_kf);
    let Some(original_text) = original.get(KPTFILE) else {
        return Ok(true);
    };
    let mut original_kf = decode(original_text)?;
    clear_render_status(&mut original_kf);
    let name = local_kf
        .get("metadata")
        .and_then(|m| m.get("name"))
        .cloned()
        .unwrap_or(Value::Null);
    if let Some(obj) = original_kf.as_object_mut() {
        let meta = obj
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        if !meta.is_object() {
            *meta = Value::Object(Map::new());
        }
        if let Some(meta) = meta.as_object_mut() {
            meta.insert("name".into(), name);
        }
    }
    let m = |v: &Value| marshal_kptfile(v, false).map_err(|e| MergeError::file(KPTFILE, e));
    Ok(m(&local_kf)? != m(&original_kf)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kpt(name: &str, extra: &str) -> String {
        format!("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: {name}\n{extra}")
    }

    fn pkg(entries: &[(&str, &str)]) -> Files {
        entries
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    const CM_A: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v1\n";
    const CM_A2: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v2\n";
    const RENDERED: &str = "status:\n  conditions:\n    - type: Rendered\n      status: \"True\"\n      reason: RenderSuccess\n";

    #[test]
    fn unknown_and_empty_strategies_merge_resources() {
        let original = pkg(&[("Kptfile", &kpt("pkg", ""))]);
        let upstream = pkg(&[
            ("Kptfile", &kpt("pkg", "")),
            (
                "new.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: new\n",
            ),
        ]);
        let local = pkg(&[
            ("Kptfile", &kpt("pkg", "")),
            (
                "local.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: local\n",
            ),
        ]);
        for s in ["", "resource-merge", "nonsense"] {
            let out = update_package(&local, &original, &upstream, s).unwrap();
            assert_eq!(
                out.keys().collect::<Vec<_>>(),
                ["Kptfile", "local.yaml", "new.yaml"],
                "{s}"
            );
        }
    }

    #[test]
    fn resource_merge_keeps_the_root_upstream_and_merges_the_pipeline() {
        let up = |r: &str| {
            format!("upstream:\n  type: git\n  git:\n    repo: r\n    directory: d\n    ref: {r}\n")
        };
        let original = pkg(&[(
            "Kptfile",
            &kpt(
                "up",
                &format!(
                    "{}pipeline:\n  mutators:\n    - image: set-labels:v1\n",
                    up("v1")
                ),
            ),
        )]);
        let upstream = pkg(&[(
            "Kptfile",
            &kpt(
                "up",
                &format!(
                    "{}pipeline:\n  mutators:\n    - image: set-labels:v2\n",
                    up("v2")
                ),
            ),
        )]);
        let local = pkg(&[(
            "Kptfile",
            &kpt(
                "mine",
                &format!(
                    "{}pipeline:\n  mutators:\n    - image: set-labels:v1\n    - image: set-namespace:v1\n",
                    up("v1")
                ),
            ),
        )]);
        let out = update_package(&local, &original, &upstream, RESOURCE_MERGE).unwrap();
        assert_eq!(
            out["Kptfile"],
            kpt(
                "mine",
                &format!(
                    "{}pipeline:\n  mutators:\n    - image: set-labels:v2\n    - image: set-namespace:v1\n",
                    up("v1")
                )
            )
        );
    }

    #[test]
    fn fast_forward_takes_upstream_when_only_upstream_fields_and_render_status_differ() {
        let original = pkg(&[("Kptfile", &kpt("up", "")), ("a.yaml", CM_A)]);
        let upstream = pkg(&[
            ("Kptfile", &kpt("up", "info:\n  description: two\n")),
            ("a.yaml", CM_A2),
        ]);
        let local = pkg(&[
            (
                "Kptfile",
                &kpt("mine", &format!("upstream:\n  type: git\n{RENDERED}")),
            ),
            // Formatting is no change.
            (
                "a.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n    name: a\ndata:\n    k: v1\n",
            ),
        ]);
        let out = update_package(&local, &original, &upstream, FAST_FORWARD).unwrap();
        assert_eq!(out["a.yaml"], CM_A2);
        assert_eq!(
            out["Kptfile"],
            kpt(
                "mine",
                "upstream:\n  type: git\ninfo:\n  description: two\n"
            )
        );
    }

    #[test]
    fn fast_forward_refuses_local_changes_naming_them() {
        let original = pkg(&[("Kptfile", &kpt("up", "")), ("a.yaml", CM_A)]);
        let local = pkg(&[
            ("Kptfile", &kpt("mine", "info:\n  description: edited\n")),
            ("a.yaml", CM_A2),
            ("extra/b.txt", "b"),
        ]);
        let err = update_package(&local, &original, &original, FAST_FORWARD).unwrap_err();
        assert_eq!(
            err.to_string(),
            "local package files have been modified: [Kptfile a.yaml extra extra/b.txt].\n  use a different update --strategy."
        );
        // A Rendered condition alone is not a change.
        let rendered = pkg(&[("Kptfile", &kpt("up", RENDERED)), ("a.yaml", CM_A)]);
        assert!(update_package(&rendered, &original, &original, FAST_FORWARD).is_ok());
    }

    #[test]
    fn force_delete_replace_drops_local_files_but_merges_the_kptfile() {
        let original = pkg(&[("Kptfile", &kpt("up", "")), ("a.yaml", CM_A)]);
        let upstream = pkg(&[
            ("Kptfile", &kpt("up", "upstream:\n  type: git\n")),
            ("b.yaml", CM_A2),
            ("sub/Kptfile", &kpt("sub", "")),
            ("sub/c.yaml", CM_A),
        ]);
        let local = pkg(&[
            (
                "Kptfile",
                "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: mine\n  annotations:\n    x: y\n",
            ),
            ("a.yaml", CM_A2),
            ("local.yaml", CM_A),
            ("old/Kptfile", &kpt("old", "")),
            ("old/d.yaml", CM_A),
        ]);
        let out = update_package(&local, &original, &upstream, FORCE_DELETE_REPLACE).unwrap();
        assert_eq!(
            out.keys().collect::<Vec<_>>(),
            ["Kptfile", "b.yaml", "sub/Kptfile", "sub/c.yaml"]
        );
        assert_eq!(
            out["Kptfile"],
            "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: mine\n  annotations:\n    x: \"y\"\nupstream:\n  type: git\n"
        );
    }

    #[test]
    fn copy_merge_copies_upstream_drops_what_it_removed_keeps_local_additions() {
        let original = pkg(&[
            ("Kptfile", &kpt("up", "")),
            ("a.yaml", CM_A),
            ("gone.yaml", CM_A),
        ]);
        let upstream = pkg(&[
            ("Kptfile", &kpt("up", "")),
            ("a.yaml", CM_A2),
            ("n.md", "n"),
        ]);
        let local = pkg(&[
            ("Kptfile", &kpt("mine", "")),
            ("a.yaml", "edited: true\n"),
            ("gone.yaml", "edited: too\n"),
            ("local.yaml", CM_A),
        ]);
        let out = update_package(&local, &original, &upstream, COPY_MERGE).unwrap();
        assert_eq!(
            out,
            pkg(&[
                ("Kptfile", &kpt("mine", "")),
                ("a.yaml", CM_A2),
                ("local.yaml", CM_A),
                ("n.md", "n"),
            ])
        );
    }

    #[test]
    fn a_subpackage_added_on_both_sides_fails_the_resource_merge() {
        let base = pkg(&[("Kptfile", &kpt("p", ""))]);
        let both = pkg(&[("Kptfile", &kpt("p", "")), ("s/Kptfile", &kpt("s", ""))]);
        let err = update_package(&both, &base, &both, RESOURCE_MERGE).unwrap_err();
        assert_eq!(
            err.to_string(),
            "subpackage \"s\" added in both upstream and local"
        );
    }

    #[test]
    fn strip_status_rewrites_only_a_kptfile_with_status() {
        let with = pkg(&[
            (
                "Kptfile",
                &format!(
                    "{}{RENDERED}",
                    kpt("pkg", "pipeline:\n  mutators:\n    - image: a\n")
                ),
            ),
            ("other.yaml", "data"),
        ]);
        let out = strip_kptfile_status(&with);
        assert_eq!(
            out["Kptfile"],
            kpt("pkg", "pipeline:\n  mutators:\n  - image: a\n")
        );
        assert_eq!(out["other.yaml"], "data");
        for files in [
            pkg(&[(
                "Kptfile",
                "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n    name: pkg # odd indent\n",
            )]),
            pkg(&[("Kptfile", "not: valid: yaml: [")]),
            pkg(&[("other.yaml", "data")]),
        ] {
            assert_eq!(strip_kptfile_status(&files), files);
        }
    }

    #[test]
    fn clear_render_status_keeps_other_conditions() {
        let mut kf = serde_json::json!({"status": {
            "conditions": [{"type": "Rendered"}, {"type": "Ready"}],
            "renderStatus": {"errorSummary": "x"}}});
        clear_render_status(&mut kf);
        assert_eq!(
            kf,
            serde_json::json!({"status": {"conditions": [{"type": "Ready"}]}})
        );
        assert_eq!(
            marshal_kptfile(&kf, true).unwrap(),
            "status:\n  conditions:\n    - type: Ready\n"
        );
        let mut kf = serde_json::json!({"status": {"conditions": [
            {"type": "Rendered", "status": "True"}, {"status": "True", "type": "Ready"}]}});
        clear_render_status(&mut kf);
        assert_eq!(
            marshal_kptfile(&kf, false).unwrap(),
            "status:\n  conditions:\n  - type: Ready\n    status: \"True\"\n"
        );
        let mut kf = serde_json::json!({"status": {"conditions": [{"type": "Rendered"}]}});
        clear_render_status(&mut kf);
        assert_eq!(kf, serde_json::json!({}));
    }
}
