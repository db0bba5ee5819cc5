//! Package files as KRM objects, read and written as the kpt function SDK
//! (`fn.ParseKubeObjects`, `KubeObject.String()`) does for Porch.
//!
//! * Reading: every document of the YAML stream must be a mapping; the
//!   objects are the documents' root mappings. A document that is a scalar
//!   (including the empty document after a trailing `---`), a sequence or an
//!   alias is an error, as in the SDK.
//! * Writing: each object is written on its own (so comments attached to a
//!   document rather than to its root mapping are not kept, as in the SDK),
//!   and the objects of a file are joined with `---\n`.

use crate::yaml::{self, Kind, Node, YamlError};

/// Why a file could not be read as KRM objects (the kpt function SDK's
/// `ParseKubeObjects` / `ParseKubeObject`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ObjectsError {
    /// The text is not YAML.
    #[error("failed to parse input bytes: {0}")]
    Yaml(Box<YamlError>),
    /// A document is not a mapping; the number is yaml.v3's node kind
    /// (2 sequence, 8 scalar, 16 alias), as the SDK reports it.
    #[error("failed to extract objects: unhandled node kind {0}")]
    NotAnObject(u8),
    /// A file that must hold one object holds another number of them.
    #[error("expected exactly one object, got {0}")]
    NotExactlyOne(usize),
}

/// yaml.v3's number of a node kind, as the SDK prints it.
fn go_kind(kind: Kind) -> u8 {
    match kind {
        Kind::Document => 1,
        Kind::Sequence => 2,
        Kind::Mapping => 4,
        Kind::Scalar => 8,
        Kind::Alias => 16,
    }
}

/// Reads every object of a YAML stream (`fn.ParseKubeObjects`).
pub fn parse_objects(text: &str) -> Result<Vec<Node>, ObjectsError> {
    let docs = yaml::parse_stream(text)?;
    let mut objects = Vec::with_capacity(docs.len());
    for doc in docs {
        let root = match doc.kind {
            Kind::Document => doc.content.into_iter().next(),
            _ => Some(doc),
        };
        match root {
            Some(node) if node.kind == Kind::Mapping => objects.push(node),
            Some(node) => return Err(ObjectsError::NotAnObject(go_kind(node.kind))),
            None => {}
        }
    }
    Ok(objects)
}

/// Reads the one object of a file (`fn.ParseKubeObject`).
pub fn parse_object(text: &str) -> Result<Node, ObjectsError> {
    let mut objects = parse_objects(text)?;
    if objects.len() != 1 {
        return Err(ObjectsError::NotExactlyOne(objects.len()));
    }
    Ok(objects.swap_remove(0))
}

/// Writes one object (`KubeObject.String()`).
pub fn emit_object(object: &Node) -> Result<String, YamlError> {
    yaml::to_string(object)
}

/// Writes the objects of a file, joined with `---\n` (upstream's
/// `kubeobjectsToYaml`).
pub fn emit_objects(objects: &[Node]) -> Result<String, YamlError> {
    let mut out = String::new();
    for (i, object) in objects.iter().enumerate() {
        if i > 0 {
            out.push_str("---\n");
        }
        out.push_str(&emit_object(object)?);
    }
    Ok(out)
}

/// Whether a package file is read for KRM objects: its base name matches
/// `*.yaml`, `*.yml`, `*.json` (kyaml's `kio.MatchAll`) or is `Kptfile`.
pub fn is_krm_file(path: &str) -> bool {
    let base = path.rsplit('/').next().unwrap_or(path);
    base == "Kptfile"
        || base.ends_with(".yaml")
        || base.ends_with(".yml")
        || base.ends_with(".json")
}

/// A scalar's value as yaml.v3 decodes it into a Go `string`: its text, or
/// the empty string for a null.
pub fn scalar_string(node: &Node) -> Option<&str> {
    if node.kind != Kind::Scalar {
        return None;
    }
    if node.is_null() {
        Some("")
    } else {
        Some(&node.value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_streams_like_the_sdk() {
        assert_eq!(parse_objects("").unwrap().len(), 0);
        assert_eq!(parse_objects("# only a comment\n").unwrap().len(), 0);
        assert_eq!(parse_objects("a: 1\n---\nb: 2\n").unwrap().len(), 2);
        assert_eq!(
            parse_objects("baddata").unwrap_err().to_string(),
            "failed to extract objects: unhandled node kind 8"
        );
        assert_eq!(
            parse_objects("- a: 1\n").unwrap_err().to_string(),
            "failed to extract objects: unhandled node kind 2"
        );
        assert_eq!(
            parse_objects("a: 1\n---\n").unwrap_err(),
            ObjectsError::NotAnObject(8)
        );
        assert!(parse_objects("a: [\n")
            .unwrap_err()
            .to_string()
            .starts_with("failed to parse input bytes: yaml: "));
        assert_eq!(
            parse_object("a: 1\n---\nb: 2\n").unwrap_err().to_string(),
            "expected exactly one object, got 2"
        );
    }

    #[test]
    fn writes_objects_joined() {
        let objects = parse_objects("# head\n\na: 1\n---\nb: 2 # line\n").unwrap();
        assert_eq!(emit_objects(&objects).unwrap(), "a: 1\n---\nb: 2 # line\n");
    }

    #[test]
    fn krm_files() {
        for yes in [
            "Kptfile",
            "a.yaml",
            "x/y/b.yml",
            "c.json",
            "sub/Kptfile",
            ".yaml",
        ] {
            assert!(is_krm_file(yes), "{yes}");
        }
        for no in [
            "README.md",
            "Kptfile.bak",
            "a.yaml.orig",
            "kptfile",
            "a.YAML",
        ] {
            assert!(!is_krm_file(no), "{no}");
        }
    }
}
