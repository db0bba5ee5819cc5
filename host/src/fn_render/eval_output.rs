//! Where `fn eval` reads and writes other than the package in place, as
//! kpt's `fn eval` does: `-o stdout` (a `ResourceList`, each item carrying
//! its file and index in kpt's annotations), `-o unwrap` (the resources as
//! a plain YAML stream), `-o DIR` (a new directory holding the package's
//! files afterwards), and `-` for the package (a `ResourceList`, or a
//! stream of resources, read from stdin; the output goes to stdout).

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use pv_core::render::{self, annotations as ann};
use pv_core::yaml::{self, Kind, Node, Style};

/// kpt's `-o` choices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// Back into the package (no `-o`, and a package directory).
    InPlace,
    /// A `ResourceList` on stdout (`-o stdout`, or reading stdin).
    Stdout,
    /// The resources as a YAML stream on stdout, without kpt's
    /// annotations (`-o unwrap`).
    Unwrap,
    /// The package's files in a new directory (`-o DIR`).
    Dir(PathBuf),
}

impl Output {
    /// The output for `-o VALUE` (`None`: not given), reading stdin or not.
    pub fn parse(value: Option<&str>, from_stdin: bool) -> Output {
        match value {
            None | Some("") if from_stdin => Output::Stdout,
            None | Some("") => Output::InPlace,
            Some("stdout") => Output::Stdout,
            Some("unwrap") => Output::Unwrap,
            Some(dir) => Output::Dir(PathBuf::from(dir)),
        }
    }
}

/// Errors of reading a package from stdin or writing it out.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// The stream on stdin is not YAML.
    #[error("reading the resources from stdin: {0}")]
    Parse(String),
    /// An item names a file outside the package.
    #[error(
        "reading the resources from stdin: item {index} ({what}) has path {path:?}, \
         which is not a relative path inside the package"
    )]
    Path {
        /// Its position in the input.
        index: usize,
        /// Its kind and name.
        what: String,
        /// The path it names.
        path: String,
    },
    /// `-o DIR` names a directory that exists (kpt refuses it too).
    #[error("directory {0:?} already exists, please delete the directory and retry")]
    Exists(PathBuf),
    /// A file of the output could not be written.
    #[error("writing {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The output could not be written as YAML.
    #[error("writing the output: {0}")]
    Emit(String),
}

/// The package a `ResourceList` (or a plain stream of resources) read
/// from stdin stands for: each item goes to the file its path annotation
/// names (kpt's default `[namespace/]kind_name.yaml` without one), in
/// index order, without kpt's annotations.
pub fn files_from_stream(text: &str) -> Result<render::Files, OutputError> {
    let docs = yaml::parse_stream(text).map_err(|e| OutputError::Parse(e.to_string()))?;
    let mut items: Vec<Node> = Vec::new();
    for doc in docs {
        let root = doc.root();
        if root.kind == Kind::Scalar && root.is_null() {
            continue;
        }
        if root.get_str(&["kind"]) == Some("ResourceList") {
            if let Some(list) = root.get("items").filter(|l| l.kind == Kind::Sequence) {
                items.extend(list.content.iter().cloned().map(Node::new_document));
            }
        } else {
            items.push(doc);
        }
    }
    let mut by_path: BTreeMap<String, Vec<(i64, Node)>> = BTreeMap::new();
    for (i, mut item) in items.into_iter().enumerate() {
        let root = item.root();
        let annotation = |key: &str| root.get_str(&["metadata", "annotations", key]);
        let path = annotation(ann::PATH)
            .or_else(|| annotation(ann::LEGACY_PATH))
            .map(str::to_string)
            .unwrap_or_else(|| default_path(root));
        let index = annotation(ann::INDEX)
            .or_else(|| annotation(ann::LEGACY_INDEX))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        if !is_inside(&path) {
            return Err(OutputError::Path {
                index: i,
                what: format!(
                    "{} {}",
                    root.get_str(&["kind"]).unwrap_or_default(),
                    root.get_str(&["metadata", "name"]).unwrap_or_default()
                ),
                path,
            });
        }
        strip_kpt_annotations(item.root_mut());
        by_path.entry(path).or_default().push((index, item));
    }
    let mut files = render::Files::new();
    for (path, mut docs) in by_path {
        docs.sort_by_key(|(index, _)| *index);
        let nodes: Vec<Node> = docs.into_iter().map(|(_, n)| n).collect();
        let text = yaml::emit_stream(&nodes, yaml::Format::Kyaml)
            .map_err(|e| OutputError::Parse(e.to_string()))?;
        files.insert(path, text);
    }
    Ok(files)
}

/// kyaml's default file for a resource without a path annotation.
fn default_path(root: &Node) -> String {
    let kind = root.get_str(&["kind"]).unwrap_or_default();
    let name = root.get_str(&["metadata", "name"]).unwrap_or_default();
    let file = format!("{kind}_{name}.yaml").to_lowercase();
    match root.get_str(&["metadata", "namespace"]) {
        Some(ns) if !ns.is_empty() => format!("{ns}/{file}"),
        _ => file,
    }
}

/// Whether `path` is relative and stays inside the package.
fn is_inside(path: &str) -> bool {
    !path.is_empty()
        && Path::new(path)
            .components()
            .all(|c| matches!(c, Component::Normal(_)))
}

/// Removes kpt's bookkeeping annotations (and an emptied `annotations`).
fn strip_kpt_annotations(root: &mut Node) {
    let Some(meta) = root.get_mut("metadata") else {
        return;
    };
    let Some(annotations) = meta.get_mut("annotations") else {
        return;
    };
    for key in ann::PLACE {
        annotations.remove(key);
    }
    if annotations.kind == Kind::Mapping && annotations.content.is_empty() {
        meta.remove("annotations");
    }
}

/// The resources of `files` (each file's documents in order, files by
/// path), as kpt's reader sees them: with their path and index
/// annotations when `annotate`.
fn items(files: &render::Files, annotate: bool) -> Result<Vec<Node>, OutputError> {
    let mut out = Vec::new();
    for (path, text) in files {
        if !render::package::is_krm_file_name(path.rsplit('/').next().unwrap_or(path)) {
            continue;
        }
        let docs =
            yaml::parse_stream(text).map_err(|e| OutputError::Emit(format!("{path}: {e}")))?;
        for (index, mut doc) in docs.into_iter().enumerate() {
            if doc.root().kind != Kind::Mapping {
                continue;
            }
            if annotate {
                for (key, value) in [
                    (ann::LEGACY_INDEX, index.to_string()),
                    (ann::LEGACY_PATH, path.clone()),
                    (ann::INDEX, index.to_string()),
                    (ann::PATH, path.clone()),
                ] {
                    doc.set_annotation(key, &value)
                        .map_err(|e| OutputError::Emit(format!("{path}: {e}")))?;
                    // kyaml's annotation setter quotes the values so.
                    if let Some(v) = doc
                        .root_mut()
                        .get_mut("metadata")
                        .and_then(|m| m.get_mut("annotations"))
                        .and_then(|a| a.get_mut(key))
                    {
                        v.style = Style::SINGLE_QUOTED;
                    }
                }
            }
            out.push(doc);
        }
    }
    Ok(out)
}

/// `-o stdout`: a `ResourceList` of the package's resources.
pub fn resource_list(files: &render::Files) -> Result<String, OutputError> {
    let mut list = Node::new_mapping();
    let mut seq = Node::new_sequence();
    for item in items(files, true)? {
        let mut item = item;
        seq.content
            .push(std::mem::replace(item.root_mut(), Node::new_null()));
    }
    let emit = |e: yaml::YamlError| OutputError::Emit(e.to_string());
    list.set_string("apiVersion", "config.kubernetes.io/v1")
        .map_err(emit)?;
    list.set_string("kind", "ResourceList").map_err(emit)?;
    list.set("items", seq).map_err(emit)?;
    yaml::emit_stream(&[Node::new_document(list)], yaml::Format::Kyaml).map_err(emit)
}

/// `-o unwrap`: the package's resources as one YAML stream.
pub fn unwrapped(files: &render::Files) -> Result<String, OutputError> {
    yaml::emit_stream(&items(files, false)?, yaml::Format::Kyaml)
        .map_err(|e| OutputError::Emit(e.to_string()))
}

/// Refuses `-o DIR` when DIR exists, before anything runs.
pub fn check_new_dir(dir: &Path) -> Result<(), OutputError> {
    if dir.symlink_metadata().is_ok() {
        return Err(OutputError::Exists(dir.to_path_buf()));
    }
    Ok(())
}

/// `-o DIR`: the package's files afterwards, in a directory made for them.
pub fn write_dir(dir: &Path, files: &render::Files) -> Result<(), OutputError> {
    check_new_dir(dir)?;
    let write = |path: &Path, text: &str| -> Result<(), OutputError> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|source| OutputError::Write {
                path: parent.to_path_buf(),
                source,
            })?;
        }
        std::fs::write(path, text).map_err(|source| OutputError::Write {
            path: path.to_path_buf(),
            source,
        })
    };
    std::fs::create_dir_all(dir).map_err(|source| OutputError::Write {
        path: dir.to_path_buf(),
        source,
    })?;
    for (path, text) in files {
        if !is_inside(path) {
            continue;
        }
        write(&dir.join(path), text)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resource_list_becomes_files_by_path_and_index_without_kpt_annotations() {
        let files = files_from_stream(
            "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n\
             - apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: b\n    annotations:\n      config.kubernetes.io/index: '1'\n      config.kubernetes.io/path: 'cm.yaml'\n\
             - apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: a\n    annotations:\n      internal.config.kubernetes.io/index: '0'\n      internal.config.kubernetes.io/path: 'cm.yaml'\n      keep: 'me'\n\
             - apiVersion: v1\n  kind: Service\n  metadata:\n    name: s\n    namespace: ns\n",
        )
        .unwrap();
        assert_eq!(
            files.keys().collect::<Vec<_>>(),
            vec!["cm.yaml", "ns/service_s.yaml"]
        );
        assert_eq!(
            files["cm.yaml"],
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations:\n    keep: 'me'\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n"
        );
    }

    #[test]
    fn an_item_whose_path_leaves_the_package_is_refused() {
        for path in ["../x.yaml", "/etc/x.yaml", "a/../../x.yaml"] {
            let text = format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations:\n    config.kubernetes.io/path: '{path}'\n"
            );
            let err = files_from_stream(&text).unwrap_err().to_string();
            assert!(err.contains("ConfigMap a"), "{err}");
        }
    }

    #[test]
    fn wrapped_output_reads_back_as_the_same_files() {
        let files = render::Files::from([
            (
                "a.yaml".to_string(),
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a # note\n".to_string(),
            ),
            (
                "sub/b.yaml".to_string(),
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n".to_string(),
            ),
            (".krmignore".to_string(), "x\n".to_string()),
        ]);
        let list = resource_list(&files).unwrap();
        assert!(
            list.starts_with("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n")
        );
        assert!(
            list.contains("internal.config.kubernetes.io/path: 'sub/b.yaml'"),
            "{list}"
        );
        let back = files_from_stream(&list).unwrap();
        assert_eq!(back["a.yaml"], files["a.yaml"]);
        assert_eq!(back["sub/b.yaml"], files["sub/b.yaml"]);
        assert_eq!(
            unwrapped(&files).unwrap(),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a # note\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n"
        );
    }
}
