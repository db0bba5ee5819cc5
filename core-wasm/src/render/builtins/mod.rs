//! The functions that run in process, on the lossless tree: Porch's three
//! builtins (apply-replacements, set-namespace, starlark), set-labels,
//! set-annotations, apply-setters, create-setters, set-image,
//! set-enforcement-action, upsert-resource, list-setters, search-replace,
//! remove-local-config-resources and ensure-name-substring, each following the krm-functions-catalog's current
//! behaviour (see `docs/render.md` for the version each follows).
//!
//! A builtin gets the items as kpt sends them to a function (documents, with
//! kpt's path, index and id annotations) and its `functionConfig`, and edits
//! the items in place, so comments, key order and styles survive without the
//! id-based copy-back an external function needs.

mod apply_replacements;
mod apply_setters;
mod create_setters;
mod ensure_name_substring;
mod list_setters;
mod remove_local_config_resources;
mod search_replace;
mod set_annotations;
mod set_enforcement_action;
mod set_image;
mod set_labels;
mod set_namespace;
mod upsert_resource;

use crate::yaml::Node;

use super::result::FnResult;

/// What a function gets: kpt's `ResourceList` without the wrapping.
#[derive(Debug, Clone, Default)]
pub struct FnInput {
    /// The items, each a [`crate::yaml::Kind::Document`] node.
    pub items: Vec<Node>,
    /// `functionConfig` (a document node), absent when kpt sends none.
    pub function_config: Option<Node>,
}

/// What a function gives back.
#[derive(Debug, Clone, Default)]
pub struct FnOutput {
    /// The items afterwards (documents).
    pub items: Vec<Node>,
    /// Its results, in order.
    pub results: Vec<FnResult>,
    /// Text the function printed (starlark's `print`).
    pub stderr: String,
    /// Set when the function failed (the SDK's `error: function failure`,
    /// or the error the function returned); the items and results are
    /// still those it wrote.
    pub failure: Option<String>,
}

/// What a kyaml `framework` function answers when its processor returns
/// an error: one error result (`<what>: <error>`), the error on stderr,
/// the items as they were.
pub(crate) fn framework_error(items: Vec<Node>, what: &str, error: String) -> FnOutput {
    FnOutput {
        items,
        results: vec![FnResult::error(format!("{what}: {error}"))],
        stderr: error.clone(),
        failure: Some(error),
    }
}

/// A result about one field of one file, without severity (kyaml's
/// `framework.ResultItem` with `Field` and `File`).
pub(crate) fn field_result(message: String, file: String, field: String) -> FnResult {
    FnResult {
        message,
        field: Some(super::result::Field {
            path: field,
            ..Default::default()
        }),
        file: Some(super::result::FileRef {
            path: file,
            index: 0,
        }),
        ..FnResult::default()
    }
}

/// What the catalog's setter functions do at each node of their walk
/// (their `visitor` interface).
pub(crate) trait Visitor {
    /// A mapping, before its values are walked (`visitMapping`).
    fn mapping(&mut self, object: &mut Node, path: &str) -> Result<(), String>;
    /// A scalar value (`visitScalar`).
    fn scalar(&mut self, object: &mut Node, path: &str) -> Result<(), String>;
}

/// The catalog's `acceptImpl`: a mapping (then each field's value, at
/// `path.key`), each sequence item (at `path[i]`), each scalar; aliases
/// are not followed. A document is walked from its root at path `""`.
pub(crate) fn accept(v: &mut dyn Visitor, node: &mut Node, path: &str) -> Result<(), String> {
    match node.kind {
        crate::yaml::Kind::Document => match node.content.first_mut() {
            Some(root) => accept(v, root, ""),
            None => Ok(()),
        },
        crate::yaml::Kind::Mapping => {
            v.mapping(node, path)?;
            for pair in node.content.chunks_mut(2) {
                if let [key, value] = pair {
                    let field = format!("{path}.{}", key.value);
                    accept(v, value, &field)?;
                }
            }
            Ok(())
        }
        crate::yaml::Kind::Sequence => {
            for (i, item) in node.content.iter_mut().enumerate() {
                accept(v, item, &format!("{path}[{i}]"))?;
            }
            Ok(())
        }
        crate::yaml::Kind::Scalar => v.scalar(node, path),
        crate::yaml::Kind::Alias => Ok(()),
    }
}

/// The SDK's error text when a function's processor returns `false`.
pub const FUNCTION_FAILURE: &str = "error: function failure";

/// A builtin function.
pub type Builtin = fn(FnInput) -> FnOutput;

/// The builtin for a catalog function name (`set-namespace`, ...), without
/// registry prefix or tag.
pub fn lookup(name: &str) -> Option<Builtin> {
    Some(match name {
        "apply-replacements" => apply_replacements::run,
        "apply-setters" => apply_setters::run,
        "create-setters" => create_setters::run,
        "ensure-name-substring" => ensure_name_substring::run,
        "list-setters" => list_setters::run,
        "remove-local-config-resources" => remove_local_config_resources::run,
        "search-replace" => search_replace::run,
        "set-annotations" => set_annotations::run,
        "set-enforcement-action" => set_enforcement_action::run,
        "set-image" => set_image::run,
        "set-labels" => set_labels::run,
        "set-namespace" => set_namespace::run,
        "upsert-resource" => upsert_resource::run,
        _ => return None,
    })
}
