//! Reading a package from memory as kpt reads it from disk: which
//! directories are packages, which files are resources, how files split
//! into documents, and the annotations the reader puts on each.

use std::collections::{BTreeMap, BTreeSet};

use crate::yaml::{self, Kind, Node};

use super::annotations as ann;
use super::krmignore::KrmIgnore;

/// The files of a package tree: path (slash-separated, relative to the
/// root) to content.
pub type Files = BTreeMap<String, String>;

/// FNV-1a (64 bits) of a file's bytes: how a host that holds no copy of a
/// rendered file tells whether the file on disk already has its text.
pub fn content_hash(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// The directory part of a path (`""` at the root).
pub fn dir_of(path: &str) -> &str {
    path.rfind('/').map_or("", |i| &path[..i])
}

/// The last component of a path.
pub fn base_of(path: &str) -> &str {
    path.rfind('/').map_or(path, |i| &path[i + 1..])
}

/// `child` relative to `dir` (`dir` empty for the root), when under it.
pub fn rel_to<'a>(dir: &str, child: &'a str) -> Option<&'a str> {
    if dir.is_empty() {
        Some(child)
    } else {
        child.strip_prefix(dir)?.strip_prefix('/')
    }
}

/// `dir` joined with `rel`.
pub fn join(dir: &str, rel: &str) -> String {
    if dir.is_empty() {
        rel.to_string()
    } else if rel.is_empty() {
        dir.to_string()
    } else {
        format!("{dir}/{rel}")
    }
}

/// The path as kpt prints a package: `.` for the root, `./db` below it.
pub fn display(dir: &str) -> String {
    if dir.is_empty() {
        ".".to_string()
    } else {
        format!("./{dir}")
    }
}

/// Every directory holding a `Kptfile` (`""` is the root), outside `.git`.
pub fn package_dirs(files: &Files) -> BTreeSet<String> {
    files
        .keys()
        .filter(|p| base_of(p) == "Kptfile" && !p.split('/').any(|c| c == ".git"))
        .map(|p| dir_of(p).to_string())
        .collect()
}

/// The packages directly below `parent` (no package in between), sorted
/// by path as kpt sorts them.
pub fn direct_subpackages(dirs: &BTreeSet<String>, parent: &str) -> Vec<String> {
    let mut subs: Vec<String> = dirs
        .iter()
        .filter(|d| d.as_str() != parent)
        .filter(|d| match rel_to(parent, d) {
            Some(rel) => !rel.is_empty() && !has_package_between(dirs, parent, d),
            None => false,
        })
        .cloned()
        .collect();
    subs.sort();
    subs
}

/// Whether a package directory lies strictly between `parent` and `dir`.
fn has_package_between(dirs: &BTreeSet<String>, parent: &str, dir: &str) -> bool {
    let mut cur = dir_of(dir);
    while cur != parent && !cur.is_empty() {
        if dirs.contains(cur) {
            return true;
        }
        cur = dir_of(cur);
    }
    false
}

/// Whether kpt reads `name` as a resource file (`Kptfile`, `*.yaml`,
/// `*.yml`, `*.json`).
pub fn is_krm_file_name(name: &str) -> bool {
    name == "Kptfile"
        || name.ends_with(".yaml")
        || name.ends_with(".yml")
        || name.ends_with(".json")
}

/// Orders paths as a directory walk visits them (component by component),
/// which differs from byte order: `a/b.yaml` comes before `a.yaml`.
pub fn walk_order(a: &str, b: &str) -> std::cmp::Ordering {
    a.split('/').cmp(b.split('/'))
}

/// The resource files of the package at `dir`, with their path relative to
/// it, in walk order: files of nested packages, `.krmignore`d files and
/// non-resource files are left out.
pub fn resource_files<'a>(
    files: &'a Files,
    dirs: &BTreeSet<String>,
    dir: &str,
) -> Vec<(&'a str, &'a str)> {
    let ignore = files
        .get(&join(dir, ".krmignore"))
        .map(|t| KrmIgnore::parse(t))
        .unwrap_or_default();
    let mut out: Vec<(&str, &str)> = files
        .iter()
        .filter_map(|(path, content)| {
            let rel = rel_to(dir, path)?;
            let in_subpackage = {
                let mut cur = dir_of(path);
                let mut found = false;
                while cur != dir && !cur.is_empty() {
                    if dirs.contains(cur) {
                        found = true;
                        break;
                    }
                    cur = dir_of(cur);
                }
                found
            };
            let skip = in_subpackage
                || rel.split('/').any(|c| c == ".git")
                || !is_krm_file_name(base_of(rel))
                || ignore.ignores_file(rel);
            (!skip).then_some((rel, content.as_str()))
        })
        .collect();
    out.sort_by(|a, b| walk_order(a.0, b.0));
    out
}

/// Splits a file into documents as kyaml's `ByteReader` does (on lines
/// that are `---`, optionally followed by a comment), after turning CRLF
/// into LF. Each document keeps its trailing newline.
pub fn split_documents(text: &str) -> Result<Vec<String>, String> {
    let text = text.replace("\r\n", "\n");
    let mut docs = Vec::new();
    let mut current = String::new();
    let mut first = true;
    for line in text.split_inclusive('\n') {
        let bare = line.strip_suffix('\n').unwrap_or(line);
        if !first && line.ends_with('\n') {
            if let Some(rest) = bare.strip_prefix("---") {
                let rest_trim = rest.trim();
                if rest_trim.is_empty() || rest_trim.starts_with('#') {
                    docs.push(std::mem::take(&mut current));
                    continue;
                }
                if rest.starts_with([' ', '\t']) {
                    return Err(format!("invalid document separator: {bare}"));
                }
            }
        }
        first = false;
        current.push_str(line);
    }
    docs.push(current);
    Ok(docs)
}

/// kyaml's sequence indentation guess for a file: `wide` when the first
/// block sequence under a key is indented two more than the key,
/// `compact` otherwise.
pub fn seq_indent_style(text: &str) -> &'static str {
    let lines: Vec<&str> = text.lines().collect();
    for i in 1..lines.len() {
        let line = lines[i];
        let indent = line.len() - line.trim_start_matches(' ').len();
        if !line[indent..].starts_with("- ") && line[indent..].trim_end() != "-" {
            continue;
        }
        let prev = lines[i - 1];
        let prev_trim = prev.trim_end();
        if !prev_trim.ends_with(':') {
            continue;
        }
        let prev_indent = prev.len() - prev.trim_start_matches(' ').len();
        let prev_key = prev_trim[prev_indent..].trim_start_matches("- ");
        let key_indent = prev_indent + (prev_trim.len() - prev_indent - prev_key.len());
        if indent == key_indent {
            return "compact";
        }
        if indent == key_indent + 2 {
            return "wide";
        }
    }
    "compact"
}

/// One file's documents, annotated as the reader annotates them: the
/// legacy and current path and index, the sequence indentation and the
/// package path, set in sorted key order.
pub fn read_file(rel_path: &str, text: &str, package_path: &str) -> Result<Vec<Node>, String> {
    let chunks = split_documents(text).map_err(|e| format!("{rel_path}: {e}"))?;
    let style = seq_indent_style(text);
    let mut out = Vec::new();
    for chunk in chunks {
        let doc =
            yaml::parse_document(&chunk).map_err(|e| format!("failed to read {rel_path}: {e}"))?;
        let root = doc.root();
        if root.is_null() || (root.kind == Kind::Scalar && root.value.is_empty()) {
            continue;
        }
        let mut doc = doc;
        if doc.root().kind != Kind::Mapping {
            return Err(format!(
                "{rel_path}: a document is a {}, not a resource",
                kind_word(doc.root().kind)
            ));
        }
        copy_legacy_annotations(&mut doc);
        let index = out.len().to_string();
        let pairs = [
            (ann::LEGACY_INDEX, index.as_str()),
            (ann::LEGACY_PATH, rel_path),
            (ann::INDEX, index.as_str()),
            (ann::PACKAGE_PATH, package_path),
            (ann::PATH, rel_path),
            (ann::SEQ_INDENT, style),
        ];
        for (k, v) in pairs {
            doc.set_annotation(k, v)
                .map_err(|e| format!("{rel_path}: {e}"))?;
        }
        out.push(doc);
    }
    Ok(out)
}

fn kind_word(kind: Kind) -> &'static str {
    match kind {
        Kind::Sequence => "sequence",
        Kind::Scalar => "scalar",
        Kind::Alias => "alias",
        Kind::Document => "document",
        Kind::Mapping => "mapping",
    }
}

/// kyaml's `CopyLegacyAnnotations`: an item carrying only one of a
/// legacy/current pair gets the other.
pub fn copy_legacy_annotations(doc: &mut Node) {
    for (new, old) in [
        (ann::PATH, ann::LEGACY_PATH),
        (ann::INDEX, ann::LEGACY_INDEX),
        (ann::ID, ann::LEGACY_ID),
    ] {
        let a = ann::get(doc, new).map(str::to_string);
        let b = ann::get(doc, old).map(str::to_string);
        match (a, b) {
            (Some(v), None) => {
                let _ = doc.set_annotation(old, &v);
            }
            (None, Some(v)) => {
                let _ = doc.set_annotation(new, &v);
            }
            _ => {}
        }
    }
}

/// Whether an item is KRM (`apiVersion`, `kind`, `metadata.name`), with
/// kustomize's exemptions; the error names the missing field.
pub fn check_krm(item: &Node) -> Result<(), String> {
    let root = item.root();
    let path = ann::path(item).unwrap_or_default();
    let name_of = |k: &str| root.get(k).and_then(Node::as_str).unwrap_or("").to_string();
    let api_version = name_of("apiVersion");
    let kind = name_of("kind");
    if api_version.starts_with("kustomize.config.k8s.io")
        || (api_version.is_empty() && kind == "Kustomization")
        || matches!(
            base_of(path),
            "kustomization.yaml" | "kustomization.yml" | "Kustomization"
        )
    {
        return Ok(());
    }
    let missing = if api_version.is_empty() {
        "`apiVersion`"
    } else if kind.is_empty() {
        "`kind`"
    } else if root
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Node::as_str)
        .unwrap_or("")
        .is_empty()
    {
        "`metadata.name`"
    } else {
        return Ok(());
    };
    Err(format!("{path}: resource must have {missing}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(paths: &[&str]) -> Files {
        paths
            .iter()
            .map(|p| (p.to_string(), "a: b\n".to_string()))
            .collect()
    }

    #[test]
    fn subpackages_are_the_nearest_kptfiles_sorted() {
        let f = files(&[
            "Kptfile",
            "db/Kptfile",
            "db/inner/Kptfile",
            "app/x/Kptfile",
            "z.yaml",
        ]);
        let dirs = package_dirs(&f);
        assert_eq!(direct_subpackages(&dirs, ""), vec!["app/x", "db"]);
        assert_eq!(direct_subpackages(&dirs, "db"), vec!["db/inner"]);
    }

    #[test]
    fn resource_files_skip_subpackages_ignored_and_non_krm_files_in_walk_order() {
        let mut f = files(&[
            "Kptfile",
            "a.yaml",
            "a/b.yaml",
            "README.md",
            "db/Kptfile",
            "db/x.yaml",
            ".expected/diff.yaml",
            "c.json",
        ]);
        f.insert(".krmignore".into(), ".expected\n".into());
        let dirs = package_dirs(&f);
        let got: Vec<&str> = resource_files(&f, &dirs, "")
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        assert_eq!(got, vec!["Kptfile", "a/b.yaml", "a.yaml", "c.json"]);
        let got: Vec<&str> = resource_files(&f, &dirs, "db")
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        assert_eq!(got, vec!["Kptfile", "x.yaml"]);
    }

    #[test]
    fn documents_split_on_separators_and_empty_ones_take_no_index() {
        let text = "a: 1\n---\n---\n# only a comment\n--- # c\nkind: K\n";
        let docs = split_documents(text).expect("splits");
        assert_eq!(docs.len(), 4);
        assert!(split_documents("a: 1\n--- x\nb: 2\n").is_err());
        let items = read_file(
            "f.yaml",
            "apiVersion: v1\nkind: A\nmetadata:\n  name: a\n---\n---\napiVersion: v1\nkind: B\nmetadata:\n  name: b\n",
            "/",
        )
        .expect("reads");
        assert_eq!(items.len(), 2);
        assert_eq!(ann::get(&items[1], ann::INDEX), Some("1"));
        assert_eq!(ann::get(&items[1], ann::LEGACY_PATH), Some("f.yaml"));
    }

    #[test]
    fn sequence_indentation_is_guessed_from_the_first_block_sequence() {
        assert_eq!(seq_indent_style("a:\n- x\n"), "compact");
        assert_eq!(seq_indent_style("a:\n  - x\n"), "wide");
        assert_eq!(seq_indent_style("a:\n  b:\n    - x\n"), "wide");
        assert_eq!(seq_indent_style("a: 1\n"), "compact");
    }

    #[test]
    fn krm_check_names_the_missing_field() {
        let item = read_file("x.yaml", "kind: A\nmetadata:\n  name: a\n", "/").expect("reads");
        assert_eq!(
            check_krm(&item[0]),
            Err("x.yaml: resource must have `apiVersion`".to_string())
        );
        let item = read_file("kustomization.yaml", "resources: []\n", "/").expect("reads");
        assert_eq!(check_krm(&item[0]), Ok(()));
    }
}
