//! `apply-package-variant`: applies a PackageVariant's three mutations
//! (package context, pipeline, config injection) to the package in the
//! ResourceList, with `pv_core::variant::mutate::apply_mutations`.
//!
//! * functionConfig: the PackageVariant. It is validated as upstream Porch
//!   validates it; an invalid one is an error result per message.
//! * items: the package (Kptfile, `package-context.yaml`, resources) plus
//!   objects annotated `porch-variants/cluster-object: "true"`, which stand
//!   in for the in-cluster objects config injection may use. Those are
//!   candidates only (the core ignores any naming another namespace than
//!   the PackageVariant's) and are left out of the output.
//! * output: every other item; those of files no mutation changed are
//!   untouched, those of changed files are the objects of the new text.

use std::collections::BTreeMap;

use pv_core::api::{PackageVariant, ResultItem, Severity};
use pv_core::variant::mutate::{apply_mutations, MutationError, MutationOutcome, PrrRef};
use pv_core::variant::validate::validate_package_variant;
use pv_core::yaml::{to_json, Node};
use serde_json::Value;

use crate::config::{self, Expected};
use crate::package::Package;
use crate::resource_list::{self, Input};
use crate::{annotations, results, Output};

/// The function's name.
pub const NAME: &str = "apply-package-variant";

const EXPECTED: Expected = Expected {
    function: NAME,
    api_version: pv_core::api::package_variant::API_VERSION,
    kind: pv_core::api::package_variant::KIND,
};

/// Runs the function on a ResourceList.
pub fn process(input: &str) -> Output {
    let input = match resource_list::read(input) {
        Ok(input) => input,
        Err(e) => return crate::failure(e.to_string()),
    };
    let mut results = resource_list::non_objects(&input.items);
    let (cluster, package): (Vec<usize>, Vec<usize>) = (0..input.items.len())
        .filter(|&i| input.items[i].kind == pv_core::yaml::Kind::Mapping)
        .partition(|&i| annotations::is_cluster_object(&input.items[i]));
    let pv = match config::read::<PackageVariant>(input.function_config.as_ref(), EXPECTED) {
        Ok((pv, node)) => {
            let errors = invalid(&pv, &node);
            results.extend(errors);
            Some(pv)
        }
        Err(e) => {
            results.push(e);
            None
        }
    };
    let candidates = candidates(&input.items, &cluster, &mut results);
    let pkg = match Package::from_items(&input.items, &package) {
        Ok(pkg) => Some(pkg),
        Err(errors) => {
            results.extend(errors);
            None
        }
    };
    let (Some(pv), Some(pkg), false) = (pv, pkg, results::has_errors(&results)) else {
        return unchanged(input, &cluster, results);
    };
    let prr = PrrRef {
        namespace: &pv.metadata.namespace,
        name: pv
            .spec
            .downstream
            .as_ref()
            .map_or("", |d| d.package.as_str()),
    };
    match apply_mutations(&pv, prr, &pkg.files, &candidates) {
        Ok(outcome) => {
            results.extend(report(&pv, &outcome, &input.items, &pkg));
            changed(input, &cluster, &pkg, &outcome, results)
        }
        Err(e) => {
            results.extend(mutation_errors(&e, &input.items, &pkg));
            unchanged(input, &cluster, results)
        }
    }
}

/// Upstream's validation messages for `pv`, as error results.
fn invalid(pv: &PackageVariant, node: &Node) -> Vec<ResultItem> {
    validate_package_variant(pv)
        .into_iter()
        .map(|message| {
            let field = results::field_in_message(&message);
            let r = results::about(
                results::error(message),
                node.api_version(),
                node.object_kind(),
                node.name(),
                node.namespace(),
            );
            match field {
                Some(f) => results::at_field(r, f),
                None => r,
            }
        })
        .collect()
}

/// The cluster objects as JSON, without kpt's annotations and the marker.
fn candidates(items: &[Node], cluster: &[usize], results: &mut Vec<ResultItem>) -> Vec<Value> {
    let mut out = Vec::with_capacity(cluster.len());
    for &i in cluster {
        let mut object = items[i].clone();
        annotations::strip(&mut object, true);
        match to_json(&object) {
            Ok(v) => out.push(v),
            Err(e) => results.push(results::about_item(
                results::error(format!("cluster object items[{i}] cannot be read: {e}")),
                &items[i],
            )),
        }
    }
    out
}

/// The items of every file, with cluster objects left out.
fn unchanged(input: Input, cluster: &[usize], results: Vec<ResultItem>) -> Output {
    let items = without(&input.items, cluster);
    Output::new(Some(input), items, results)
}

fn without(items: &[Node], skip: &[usize]) -> Vec<Node> {
    items
        .iter()
        .enumerate()
        .filter(|(i, _)| !skip.contains(i))
        .map(|(_, n)| n.clone())
        .collect()
}

/// The output after a successful mutation: changed files' items replaced
/// in place of their first item, every other item as it came.
fn changed(
    mut input: Input,
    cluster: &[usize],
    pkg: &Package,
    outcome: &MutationOutcome,
    mut results: Vec<ResultItem>,
) -> Output {
    let mut replaced: BTreeMap<usize, Vec<Node>> = BTreeMap::new();
    let mut dropped: Vec<usize> = cluster.to_vec();
    for file in &outcome.changed_files {
        let Some(text) = outcome.files.get(file) else {
            results.push(results::error(format!(
                "the mutation changed {file} but returned no text for it"
            )));
            return unchanged(input, cluster, results);
        };
        match pkg.items_of(file, text) {
            Ok(items) => {
                if let Some(first) = pkg.first_item(file) {
                    replaced.insert(first, items);
                }
            }
            Err(e) => {
                results.push(e);
                return unchanged(input, cluster, results);
            }
        }
    }
    for (i, _) in input.items.iter().enumerate() {
        if let Some(file) = pkg.file_of(i) {
            if outcome.changed_files.iter().any(|f| f == file) && !replaced.contains_key(&i) {
                dropped.push(i);
            }
        }
    }
    let old = std::mem::take(&mut input.items);
    let mut items = Vec::with_capacity(old.len());
    for (i, item) in old.into_iter().enumerate() {
        if let Some(new) = replaced.remove(&i) {
            items.extend(new);
        } else if !dropped.contains(&i) {
            items.push(item);
        }
    }
    Output::new(Some(input), items, results)
}

/// Info and warning results describing what the mutations did.
fn report(
    pv: &PackageVariant,
    outcome: &MutationOutcome,
    items: &[Node],
    pkg: &Package,
) -> Vec<ResultItem> {
    let pv_ref = |r: ResultItem| {
        results::about(
            r,
            EXPECTED.api_version,
            EXPECTED.kind,
            &pv.metadata.name,
            &pv.metadata.namespace,
        )
    };
    let mut out = Vec::new();
    let summary = if outcome.changed_files.is_empty() {
        "the package already has every mutation of this PackageVariant: nothing changed".to_string()
    } else {
        format!("changed {}", outcome.changed_files.join(", "))
    };
    out.push(pv_ref(results::new(Severity::Info, summary)));
    for point in &outcome.results {
        let what = format!("{}/{}", point.kind, point.name);
        let (severity, message) = if point.injected {
            (
                Severity::Info,
                format!(
                    "injected {} {:?} into {what}",
                    point.kind, point.injected_name
                ),
            )
        } else if point.required {
            (
                Severity::Warning,
                format!(
                    "no in-cluster object for required injection point {what}: condition {} is False and blocks approval",
                    point.condition_type
                ),
            )
        } else {
            (
                Severity::Info,
                format!("no in-cluster object for optional injection point {what}: left as it is"),
            )
        };
        let mut r = results::about(
            results::new(severity, message),
            &point.api_version,
            &point.kind,
            &point.name,
            "",
        );
        if let Some(item) = item_at(items, pkg, &point.file, point.index) {
            r = results::about_item(r, item);
        }
        out.push(results::in_file(r, &point.file, point.index));
    }
    out
}

/// The item holding object `index` of `file`.
fn item_at<'a>(items: &'a [Node], pkg: &Package, file: &str, index: usize) -> Option<&'a Node> {
    items
        .iter()
        .enumerate()
        .filter(|(i, _)| pkg.file_of(*i) == Some(file))
        .map(|(_, n)| n)
        .find(|n| annotations::index(n) == index)
}

/// A mutation error as results naming the file it is about.
fn mutation_errors(e: &MutationError, items: &[Node], pkg: &Package) -> Vec<ResultItem> {
    let file = match e {
        MutationError::FileNotFound { file, .. }
        | MutationError::FileParse { file, .. }
        | MutationError::KindMismatch { file, .. }
        | MutationError::NameMismatch { file, .. }
        | MutationError::ResourceParse { file, .. }
        | MutationError::FieldType { file, .. }
        | MutationError::Yaml { file, .. } => Some(file.as_str()),
        MutationError::NoDataField { .. } | MutationError::InvalidDataField { .. } => {
            Some(pv_core::variant::mutate::package_context::PACKAGE_CONTEXT_FILE)
        }
        MutationError::NilResources { .. } | MutationError::InjectionPoints { .. } => None,
    };
    let messages = match e {
        MutationError::InjectionPoints { errors } => errors.clone(),
        other => vec![other.to_string()],
    };
    messages
        .into_iter()
        .map(|message| {
            let prefix = message.split(": ").next().unwrap_or("").to_string();
            let file = file.or_else(|| {
                pkg.files
                    .get_key_value(prefix.as_str())
                    .map(|(k, _)| k.as_str())
            });
            let field = match e {
                MutationError::FieldType { field, .. } => Some(field.clone()),
                MutationError::NoDataField { .. } | MutationError::InvalidDataField { .. } => {
                    Some("data".to_string())
                }
                _ => None,
            };
            let mut r = results::error(message);
            if let Some(file) = file {
                match item_at(items, pkg, file, 0) {
                    Some(item) if pkg.files.contains_key(file) => r = results::about_item(r, item),
                    _ => r = results::in_file(r, file, 0),
                }
            }
            match field {
                Some(f) => results::at_field(r, f),
                None => r,
            }
        })
        .collect()
}
