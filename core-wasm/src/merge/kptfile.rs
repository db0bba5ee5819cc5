//! What Porch's clone and upgrade tasks write into a package besides the
//! upstream's files: the Kptfile's `upstream` and `upstreamLock` (where the
//! package came from, and exactly which commit), the package's name in the
//! Kptfile, and `name` in `package-context.yaml`.

use super::resource::{merge_packages, MergeOutcome};
use super::{Files, MergeError};
use crate::api::kptfile::fields;
use crate::krm::objects::{emit_object, parse_object};
use serde_json::{Map, Value};

use crate::yaml::{from_json_ordered, string_node, Format, Node};

/// The Kptfile.
pub const KPTFILE: &str = "Kptfile";
/// The package context file.
pub const PACKAGE_CONTEXT: &str = "package-context.yaml";
/// Merge strategy recorded in `upstream.updateStrategy`.
pub const RESOURCE_MERGE: &str = "resource-merge";

/// The upstream revision a package is cloned or upgraded from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpstreamSource {
    /// The upstream repository (URL or path).
    pub repo: String,
    /// The package's directory in that repository.
    pub directory: String,
    /// Its ref (`<package>/v<N>`, or `drafts/<package>/<workspace>`).
    pub r#ref: String,
    /// The commit the ref pointed to.
    pub commit: String,
}

fn map_node(entries: Vec<(&str, Node)>) -> Node {
    let mut m = Node::new_mapping();
    for (k, v) in entries {
        m.content.push(Node::new_string(k));
        m.content.push(v);
    }
    m
}

fn git_node(source: &UpstreamSource, with_commit: bool) -> Node {
    let mut entries = vec![
        ("repo", string_node(&source.repo)),
        ("directory", string_node(&source.directory)),
        ("ref", string_node(&source.r#ref)),
    ];
    if with_commit {
        entries.push(("commit", string_node(&source.commit)));
    }
    map_node(entries)
}

/// Sets `upstream` and `upstreamLock` of a Kptfile text (and its
/// `metadata.name` when `name` is given), keeping everything else.
pub fn set_upstream(
    kptfile: &str,
    source: &UpstreamSource,
    name: Option<&str>,
) -> Result<String, MergeError> {
    let mut obj = parse_object(kptfile).map_err(|e| MergeError::file(KPTFILE, e))?;
    let upstream = map_node(vec![
        ("type", string_node("git")),
        ("git", git_node(source, false)),
        ("updateStrategy", string_node(RESOURCE_MERGE)),
    ]);
    let lock = map_node(vec![
        ("type", string_node("git")),
        ("git", git_node(source, true)),
    ]);
    let err = |e: crate::yaml::YamlError| MergeError::file(KPTFILE, e);
    if let Some(name) = name {
        obj.upsert_map("metadata")
            .map_err(err)?
            .set_string("name", name)
            .map_err(err)?;
    }
    obj.set_keep_formatting("upstream", upstream).map_err(err)?;
    obj.set_keep_formatting("upstreamLock", lock).map_err(err)?;
    emit_object(&obj).map_err(err)
}

/// Sets `data.name` of `package-context.yaml` (a ConfigMap named
/// `kptfile.kpt.dev`) to the package name, if the package has one.
fn set_context_name(files: &mut Files, package: &str) -> Result<(), MergeError> {
    let Some(text) = files.get(PACKAGE_CONTEXT) else {
        return Ok(());
    };
    let Ok(mut obj) = parse_object(text) else {
        return Ok(());
    };
    if obj.object_kind() != "ConfigMap" || obj.name() != "kptfile.kpt.dev" {
        return Ok(());
    }
    if obj.get_str(&["data", "name"]) == Some(package) {
        return Ok(());
    }
    let err = |e: crate::yaml::YamlError| MergeError::file(PACKAGE_CONTEXT, e);
    obj.upsert_map("data")
        .map_err(err)?
        .set_string("name", package)
        .map_err(err)?;
    files.insert(PACKAGE_CONTEXT.to_string(), emit_object(&obj).map_err(err)?);
    Ok(())
}

/// Sets `data.name` of an existing `package-context.yaml` to the last
/// path segment of `package` (what a clone does).
pub fn name_package_context(files: &mut Files, package: &str) -> Result<(), MergeError> {
    set_context_name(files, package.rsplit('/').next().unwrap_or(package))
}

/// The clone task: the upstream's files as package `package`, with the
/// Kptfile's name, `upstream` and `upstreamLock` set and the package
/// context's `name` (the last path segment of `package`) set.
pub fn prepare_clone(
    upstream_files: &Files,
    package: &str,
    source: &UpstreamSource,
) -> Result<Files, MergeError> {
    let mut files = upstream_files.clone();
    let short = package.rsplit('/').next().unwrap_or(package);
    if let Some(k) = files.get(KPTFILE) {
        let text = set_upstream(k, source, Some(short))?;
        files.insert(KPTFILE.to_string(), text);
    }
    set_context_name(&mut files, short)?;
    Ok(files)
}

/// The upgrade task with the `resource-merge` strategy: merges
/// (`old_upstream`, `new_upstream`, `local`), then points the Kptfile's
/// `upstream` and `upstreamLock` at the new upstream.
pub fn prepare_upgrade(
    old_upstream: &Files,
    new_upstream: &Files,
    local: &Files,
    source: &UpstreamSource,
) -> Result<MergeOutcome, MergeError> {
    let mut out = merge_packages(old_upstream, new_upstream, local)?;
    if let Some(k) = out.files.get(KPTFILE) {
        let text = set_upstream(k, source, None)?;
        if local.get(KPTFILE) != Some(&text) && !out.changed_files.iter().any(|f| f == KPTFILE) {
            out.changed_files.push(KPTFILE.to_string());
            out.changed_files.sort();
        }
        out.files.insert(KPTFILE.to_string(), text);
    }
    Ok(out)
}

/// kpt's strict Kptfile decoding (`kptfileutil.DecodeKptfile`: version
/// check, unknown fields rejected) into JSON, for the code paths that
/// re-marshal the Kptfile from kpt's Go struct.
pub fn decode_kptfile(text: &str) -> Result<Value, String> {
    crate::render::kptfile::decode(text)?;
    let doc = crate::yaml::parse_document(text).map_err(|e| e.to_string())?;
    let value = crate::yaml::to_json(doc.root()).map_err(|e| e.to_string())?;
    if value.is_object() {
        Ok(value)
    } else {
        Err("the Kptfile is not a mapping".to_string())
    }
}

/// `yaml.Marshal` of kpt's `KptFile` struct (`wide` = kpt's
/// `WideSequenceStyle`, as `kptfileutil.WriteFile` and
/// `kptops.UpdateUpstream` write it): struct field order, `omitempty`,
/// sorted map keys, no comments. A JSON `null` (no Kptfile) is the zero
/// struct.
pub fn marshal_kptfile(value: &Value, wide: bool) -> Result<String, String> {
    let ordered = reorder(value, "").unwrap_or_else(|| Value::Object(Map::new()));
    let format = if wide {
        Format::KyamlWide
    } else {
        Format::Kyaml
    };
    crate::yaml::emit_stream(&[Node::new_document(from_json_ordered(&ordered))], format)
        .map_err(|e| e.to_string())
}

/// The value at `path` as the struct marshals it; `None` when
/// `omitempty` drops it.
fn reorder(value: &Value, path: &str) -> Option<Value> {
    match value {
        Value::Null => None,
        Value::String(s) if s.is_empty() => None,
        Value::Array(items) if items.is_empty() => None,
        Value::Array(items) => Some(Value::Array(
            items
                .iter()
                .map(|v| match v {
                    Value::Object(_) => {
                        reorder(v, &format!("{path}[]")).unwrap_or(Value::Object(Map::new()))
                    }
                    v => v.clone(),
                })
                .collect(),
        )),
        Value::Object(map) => {
            let child = |k: &str| {
                if path.is_empty() {
                    k.to_string()
                } else {
                    format!("{path}.{k}")
                }
            };
            let mut out = Map::new();
            match fields::of(path, fields::Schema::Porch) {
                Some(fields) => {
                    for f in fields {
                        if let Some(v) = map.get(*f).and_then(|v| reorder(v, &child(f))) {
                            out.insert((*f).to_string(), v);
                        }
                    }
                }
                None => {
                    let mut keys: Vec<&String> = map.keys().collect();
                    keys.sort();
                    // A Go map (`labels`, `annotations`, `configMap`):
                    // sorted keys, values as they are.
                    for k in keys {
                        out.insert(k.clone(), map[k].clone());
                    }
                }
            }
            let keep_empty = fields::POINTERS.contains(&path)
                || path.ends_with("[]")
                || path.ends_with(".resourceRef");
            if out.is_empty() && !keep_empty && !path.is_empty() {
                None
            } else {
                Some(Value::Object(out))
            }
        }
        v => Some(v.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KPT: &str = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: blueprint # the blueprint\ninfo:\n  description: d\n";
    const CTX: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kptfile.kpt.dev\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\ndata:\n  name: example\n";

    fn src(r: &str) -> UpstreamSource {
        UpstreamSource {
            repo: "/repos/blueprints".into(),
            directory: "blueprint".into(),
            r#ref: r.into(),
            commit: "abc".into(),
        }
    }

    #[test]
    fn clone_sets_upstream_lock_and_names() {
        let files = Files::from([
            (KPTFILE.to_string(), KPT.to_string()),
            (PACKAGE_CONTEXT.to_string(), CTX.to_string()),
        ]);
        let out = prepare_clone(&files, "apps/edge-1", &src("blueprint/v1")).unwrap();
        assert_eq!(
            out[KPTFILE],
            "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: edge-1 # the blueprint\ninfo:\n  description: d\nupstream:\n  type: git\n  git:\n    repo: /repos/blueprints\n    directory: blueprint\n    ref: blueprint/v1\n  updateStrategy: resource-merge\nupstreamLock:\n  type: git\n  git:\n    repo: /repos/blueprints\n    directory: blueprint\n    ref: blueprint/v1\n    commit: abc\n"
        );
        assert!(out[PACKAGE_CONTEXT].contains("  name: edge-1\n"));
        // Cloning again gives the same bytes.
        assert_eq!(
            prepare_clone(&out, "apps/edge-1", &src("blueprint/v1")).unwrap(),
            out
        );
    }

    #[test]
    fn upgrade_moves_the_lock_and_keeps_the_local_name() {
        let base = Files::from([(KPTFILE.to_string(), KPT.to_string())]);
        let local = prepare_clone(&base, "edge-1", &src("blueprint/v1")).unwrap();
        let theirs = Files::from([(
            KPTFILE.to_string(),
            KPT.replace("description: d", "description: e"),
        )]);
        let out = prepare_upgrade(&base, &theirs, &local, &src("blueprint/v2")).unwrap();
        let k = &out.files[KPTFILE];
        assert!(
            k.contains("name: edge-1") && k.contains("description: e"),
            "{k}"
        );
        assert!(
            k.contains("ref: blueprint/v2") && !k.contains("blueprint/v1"),
            "{k}"
        );
        assert_eq!(out.changed_files, vec![KPTFILE.to_string()]);
    }
}
