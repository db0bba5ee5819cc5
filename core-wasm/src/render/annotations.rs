//! The annotations kpt and kyaml put on items while rendering
//! (`kioutil`), and helpers to read them.

use crate::yaml::{Kind, Node};

/// File of an item, relative to the package that owns it.
pub const PATH: &str = "internal.config.kubernetes.io/path";
/// Legacy duplicate of [`PATH`].
pub const LEGACY_PATH: &str = "config.kubernetes.io/path";
/// Position of an item among its file's documents.
pub const INDEX: &str = "internal.config.kubernetes.io/index";
/// Legacy duplicate of [`INDEX`].
pub const LEGACY_INDEX: &str = "config.kubernetes.io/index";
/// Item id for copying comments back after a function (`"1".."N"`).
pub const ID: &str = "internal.config.kubernetes.io/id";
/// Legacy duplicate of [`ID`].
pub const LEGACY_ID: &str = "config.k8s.io/id";
/// Sequence indentation of the item's file (`compact` or `wide`).
pub const SEQ_INDENT: &str = "internal.config.kubernetes.io/seqindent";
/// Package directory of the item.
pub const PACKAGE_PATH: &str = "internal.config.kubernetes.io/package-path";
/// Stamp kyaml's pipeline puts on items around a mutator.
pub const MIGRATION_ID: &str = "internal.config.kubernetes.io/annotations-migration-resource-id";
/// Position stamp of items around a mutator with selectors or exclusions
/// (kpt's current spelling; kpt v1.0.0-beta.62.1 wrote
/// `internal.config.k8s.io/kpt-resource-id`).
pub const KPT_RESOURCE_ID: &str = "internal.config.kubernetes.io/kpt-resource-id";
/// Marks an object that is not deployed (function configs, package context).
pub const LOCAL_CONFIG: &str = "config.kubernetes.io/local-config";

/// The annotations by which kpt keeps track of where an item lives (its
/// file, index, id, package and sequence indent), new and legacy names.
pub const PLACE: [&str; 8] = [
    PATH,
    LEGACY_PATH,
    INDEX,
    LEGACY_INDEX,
    ID,
    LEGACY_ID,
    SEQ_INDENT,
    PACKAGE_PATH,
];

/// `metadata.annotations[key]` of an item (a document or a mapping), when
/// it is a scalar.
pub fn get<'a>(item: &'a Node, key: &str) -> Option<&'a str> {
    let value = item.root().get("metadata")?.get("annotations")?.get(key)?;
    (value.kind == Kind::Scalar).then_some(value.value.as_str())
}

/// The file of an item: the path annotation, else its legacy duplicate.
pub fn path(item: &Node) -> Option<&str> {
    get(item, PATH).or_else(|| get(item, LEGACY_PATH))
}

/// The position of an item in its file, when annotated with a number.
pub fn index(item: &Node) -> Option<i64> {
    get(item, INDEX)
        .or_else(|| get(item, LEGACY_INDEX))
        .and_then(|i| i.trim().parse().ok())
}

/// Whether an item is local configuration
/// (`config.kubernetes.io/local-config` set to anything but `""` or
/// `"false"`), which most functions skip.
pub fn is_local_config(item: &Node) -> bool {
    get(item, LOCAL_CONFIG).is_some_and(|v| !v.is_empty() && v != "false")
}
