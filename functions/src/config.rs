//! The `functionConfig`: required, of one kind, read into a typed object.

use pv_core::api::ResultItem;
use pv_core::yaml::{to_json_strict, Kind, Node};
use serde::de::DeserializeOwned;

use crate::{annotations, results};

/// What a function expects as its `functionConfig`.
#[derive(Debug, Clone, Copy)]
pub struct Expected {
    /// The function's name, for messages.
    pub function: &'static str,
    /// The accepted `apiVersion`.
    pub api_version: &'static str,
    /// The accepted `kind`.
    pub kind: &'static str,
}

/// Whether a functionConfig is absent in effect: missing, null, an empty
/// mapping, or the empty `ConfigMap` kpt sends when no config was given
/// (`kpt fn eval` without `--fn-config` or arguments).
fn is_empty(config: Option<&Node>) -> bool {
    let Some(config) = config.map(Node::root) else {
        return true;
    };
    match config.kind {
        Kind::Mapping if config.content.is_empty() => true,
        Kind::Mapping => {
            config.object_kind() == "ConfigMap"
                && config
                    .get("data")
                    .is_none_or(|d| d.is_null() || d.content.is_empty())
        }
        Kind::Scalar => config.is_null() || config.value.is_empty(),
        _ => false,
    }
}

/// Reads the functionConfig as `T`, with kpt's annotations removed (kpt
/// adds index and indentation annotations to it). Returns the object and
/// the config node (for result references), or the error result.
pub fn read<T: DeserializeOwned>(
    config: Option<&Node>,
    expected: Expected,
) -> Result<(T, Node), ResultItem> {
    let Expected {
        function,
        api_version,
        kind,
    } = expected;
    if is_empty(config) {
        return Err(results::at_field(
            results::error(format!(
                "functionConfig is missing or empty: {function} needs a {api_version} {kind} as its functionConfig (kpt fn eval --fn-config FILE)"
            )),
            "functionConfig",
        ));
    }
    let mut node = config
        .map(Node::root)
        .cloned()
        .unwrap_or_else(Node::new_null);
    if node.kind != Kind::Mapping || node.object_kind() != kind || node.api_version() != api_version
    {
        let found = if node.kind == Kind::Mapping {
            format!("{} {}", node.api_version(), node.object_kind())
        } else {
            "not an object".to_string()
        };
        return Err(results::at_field(
            results::error(format!(
                "functionConfig must be a {api_version} {kind}, found {}",
                found.trim()
            )),
            "functionConfig",
        ));
    }
    annotations::strip(&mut node, false);
    let reference = |r: ResultItem| {
        results::about(
            r,
            node.api_version(),
            node.object_kind(),
            node.name(),
            node.namespace(),
        )
    };
    let json = to_json_strict(&node).map_err(|e| {
        reference(results::error(format!(
            "functionConfig cannot be read: {e}"
        )))
    })?;
    let typed = serde_json::from_value(json).map_err(|e| {
        results::at_field(
            reference(results::error(format!(
                "functionConfig is not a valid {kind}: {e}"
            ))),
            "functionConfig",
        )
    })?;
    Ok((typed, node))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pv_core::api::PackageVariant;
    use pv_core::yaml::parse_document;

    const PV: Expected = Expected {
        function: "f",
        api_version: "config.porch.kpt.dev/v1alpha1",
        kind: "PackageVariant",
    };

    fn read_text(text: &str) -> Result<(PackageVariant, Node), ResultItem> {
        let doc = parse_document(text).unwrap();
        read(Some(&doc), PV)
    }

    #[test]
    fn missing_and_empty_configs_are_errors() {
        assert!(read::<PackageVariant>(None, PV)
            .unwrap_err()
            .message
            .contains("missing or empty"));
        for text in [
            "{}",
            "null",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: function-input\ndata: {}\n",
        ] {
            let err = read_text(text).unwrap_err();
            assert!(
                err.message.contains("missing or empty"),
                "{text}: {}",
                err.message
            );
        }
    }

    #[test]
    fn other_kinds_and_bad_fields_are_errors() {
        let err = read_text("apiVersion: v1\nkind: ConfigMap\ndata: {a: b}\n").unwrap_err();
        assert_eq!(err.message, "functionConfig must be a config.porch.kpt.dev/v1alpha1 PackageVariant, found v1 ConfigMap");
        let err = read_text("apiVersion: config.porch.kpt.dev/v1alpha1\nkind: PackageVariant\nmetadata:\n  name: x\nspec: [1]\n").unwrap_err();
        assert!(
            err.message
                .starts_with("functionConfig is not a valid PackageVariant"),
            "{}",
            err.message
        );
        let (pv, _) = read_text("apiVersion: config.porch.kpt.dev/v1alpha1\nkind: PackageVariant\nmetadata:\n  name: x\n  annotations:\n    internal.config.kubernetes.io/index: '0'\n").unwrap();
        assert!(pv.metadata.annotations.is_empty());
    }
}
