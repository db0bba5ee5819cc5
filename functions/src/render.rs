//! `render-package-variant-set`: writes the PackageVariants a
//! PackageVariantSet generates, with `pv_core::variantset::render`.
//!
//! * functionConfig: the PackageVariantSet (`config.porch.kpt.dev/v1alpha2`).
//! * items annotated `porch-variants/cluster-object: "true"` stand in for
//!   the cluster: `porch.kpt.dev/v1alpha1` PackageRevisions (the upstream),
//!   `config.porch.kpt.dev/v1alpha1` Repositories, and any other object as
//!   a candidate for `objectSelector` targets. They are inputs only and are
//!   left out of the output.
//! * output: every other item unchanged, except PackageVariants generated
//!   earlier by the same set (label `config.porch.kpt.dev/packagevariantset`
//!   with the set's uid and an owner reference to it): those no target
//!   wants are dropped, those whose spec changed get the new spec, and new
//!   ones are added as `packagevariants/<name>.yaml`. A child already as
//!   desired is kept byte for byte, so a second run changes nothing.

use std::collections::{BTreeMap, BTreeSet};

use pv_core::api::package_variant::{API_VERSION as PV_API_VERSION, KIND as PV_KIND};
use pv_core::api::{PackageRevision, PackageVariant, ResultItem, Severity};
use pv_core::variantset::naming::OWNER_LABEL;
use pv_core::variantset::sync::{existing_key, spec_key};
use pv_core::variantset::types::{API_VERSION, KIND, REPOSITORY_API_VERSION, REPOSITORY_KIND};
use pv_core::variantset::{
    render, ClusterObject, PackageVariantSet, RenderError, RenderOutcome, Repository,
    TargetObjects, TemplateError, UnrollError,
};
use pv_core::yaml::{from_json, to_json, Kind, Node};
use serde::de::DeserializeOwned;

use crate::config::{self, Expected};
use crate::resource_list::{self, Input};
use crate::{annotations, results, Output};

/// The function's name.
pub const NAME: &str = "render-package-variant-set";

/// Folder of the package the generated PackageVariants are written to.
pub const OUTPUT_DIR: &str = "packagevariants";

const EXPECTED: Expected = Expected {
    function: NAME,
    api_version: API_VERSION,
    kind: KIND,
};

/// The objects of the stand-in cluster.
#[derive(Default)]
struct Cluster {
    revisions: Vec<PackageRevision>,
    repositories: Vec<Repository>,
    objects: Vec<ClusterObject>,
}

/// Runs the function on a ResourceList.
pub fn process(input: &str) -> Output {
    let input = match resource_list::read(input) {
        Ok(input) => input,
        Err(e) => return crate::failure(e.to_string()),
    };
    let mut results = resource_list::non_objects(&input.items);
    let cluster_items: Vec<usize> = (0..input.items.len())
        .filter(|&i| {
            input.items[i].kind == Kind::Mapping && annotations::is_cluster_object(&input.items[i])
        })
        .collect();
    let pvs = match config::read::<PackageVariantSet>(input.function_config.as_ref(), EXPECTED) {
        Ok((pvs, _)) => Some(pvs),
        Err(e) => {
            results.push(e);
            None
        }
    };
    let cluster = read_cluster(&input.items, &cluster_items, &mut results);
    let Some(pvs) = pvs.filter(|_| !results::has_errors(&results)) else {
        return finish(input, &cluster_items, &[], Vec::new(), results);
    };
    let children = children(&input.items, &pvs, &mut results);
    if results::has_errors(&results) {
        return finish(input, &cluster_items, &[], Vec::new(), results);
    }
    let existing: Vec<PackageVariant> = children.iter().map(|(_, pv)| pv.clone()).collect();
    let targets = TargetObjects::from_objects(cluster.objects);
    match render(
        &pvs,
        &cluster.revisions,
        &cluster.repositories,
        &targets,
        &existing,
    ) {
        Ok(outcome) => write_children(input, &cluster_items, &pvs, &children, &outcome, results),
        Err(e) => {
            results.extend(render_errors(&pvs, &e));
            finish(input, &cluster_items, &[], Vec::new(), results)
        }
    }
}

/// The output: every item but the cluster objects and `skip`, in order,
/// then `generated`.
fn finish(
    input: Input,
    cluster: &[usize],
    skip: &[usize],
    generated: Vec<Node>,
    results: Vec<ResultItem>,
) -> Output {
    let mut items: Vec<Node> = input
        .items
        .iter()
        .enumerate()
        .filter(|(i, _)| !cluster.contains(i) && !skip.contains(i))
        .map(|(_, n)| n.clone())
        .collect();
    items.extend(generated);
    Output::new(Some(input), items, results)
}

/// An item without kpt's annotations and the marker, read as `T`.
fn typed<T: DeserializeOwned>(item: &Node, i: usize) -> Result<T, ResultItem> {
    let mut object = item.clone();
    annotations::strip(&mut object, true);
    let json = to_json(&object).map_err(|e| {
        results::about_item(
            results::error(format!("items[{i}] cannot be read: {e}")),
            item,
        )
    })?;
    serde_json::from_value(json).map_err(|e| {
        results::about_item(
            results::error(format!(
                "items[{i}] is not a valid {}: {e}",
                item.object_kind()
            )),
            item,
        )
    })
}

fn read_cluster(items: &[Node], cluster: &[usize], results: &mut Vec<ResultItem>) -> Cluster {
    let mut out = Cluster::default();
    for &i in cluster {
        let item = &items[i];
        let read = match (item.api_version(), item.object_kind()) {
            (pv_core::api::package_revision::API_VERSION, "PackageRevision") => {
                typed(item, i).map(|pr| out.revisions.push(pr))
            }
            (REPOSITORY_API_VERSION, REPOSITORY_KIND) => {
                typed(item, i).map(|r| out.repositories.push(r))
            }
            _ => typed(item, i).map(|o| out.objects.push(o)),
        };
        if let Err(e) = read {
            results.push(e);
        }
    }
    out
}

/// Whether an item is a PackageVariant generated by `pvs`.
fn is_child(item: &Node, pvs: &PackageVariantSet) -> bool {
    if item.kind != Kind::Mapping
        || annotations::is_cluster_object(item)
        || item.api_version() != PV_API_VERSION
        || item.object_kind() != PV_KIND
        || item.get_str(&["metadata", "labels", OWNER_LABEL]) != Some(pvs.metadata.uid.as_str())
    {
        return false;
    }
    let Some(owners) = item.get_path(&["metadata", "ownerReferences"]) else {
        return false;
    };
    let set_kind = if pvs.kind.is_empty() {
        KIND
    } else {
        pvs.kind.as_str()
    };
    owners.content.iter().any(|o| {
        o.get_str(&["kind"]) == Some(set_kind)
            && o.get_str(&["name"]) == Some(pvs.metadata.name.as_str())
    })
}

/// The set's existing children: item positions and typed objects.
fn children(
    items: &[Node],
    pvs: &PackageVariantSet,
    results: &mut Vec<ResultItem>,
) -> Vec<(usize, PackageVariant)> {
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        if is_child(item, pvs) {
            match typed(item, i) {
                Ok(pv) => out.push((i, pv)),
                Err(e) => results.push(e),
            }
        }
    }
    out
}

fn pv_result(severity: Severity, message: String, pv: &PackageVariant) -> ResultItem {
    results::about(
        results::new(severity, message),
        PV_API_VERSION,
        PV_KIND,
        &pv.metadata.name,
        &pv.metadata.namespace,
    )
}

/// A new child as an item at `packagevariants/<name>.yaml`.
fn new_item(pv: &PackageVariant) -> Result<Node, ResultItem> {
    let json = serde_json::to_value(pv).map_err(|e| {
        results::error(format!(
            "cannot write PackageVariant {}: {e}",
            pv.metadata.name
        ))
    })?;
    let mut node = from_json(&json);
    let path = format!("{OUTPUT_DIR}/{}.yaml", pv.metadata.name);
    annotations::restore(&mut node, &annotations::location(&path, 0)).map_err(|e| {
        results::error(format!(
            "cannot annotate PackageVariant {}: {e}",
            pv.metadata.name
        ))
    })?;
    Ok(node)
}

/// An existing child with its spec replaced, formatting kept.
fn updated_item(item: &Node, pv: &PackageVariant) -> Result<Node, ResultItem> {
    let spec = serde_json::to_value(&pv.spec).map_err(|e| {
        results::error(format!(
            "cannot write PackageVariant {}: {e}",
            pv.metadata.name
        ))
    })?;
    let mut node = item.clone();
    node.set_json("spec", &spec).map_err(|e| {
        results::about_item(
            results::error(format!(
                "cannot update PackageVariant {}: {e}",
                pv.metadata.name
            )),
            item,
        )
    })?;
    Ok(node)
}

fn with_path(r: ResultItem, path: &str) -> ResultItem {
    results::in_file(r, path, 0)
}

/// The output after a successful render.
fn write_children(
    input: Input,
    cluster: &[usize],
    pvs: &PackageVariantSet,
    children: &[(usize, PackageVariant)],
    outcome: &RenderOutcome,
    mut results: Vec<ResultItem>,
) -> Output {
    let set = &pvs.metadata.name;
    let plan = &outcome.plan;
    // The existing child each identity key maps to (the last, as the plan).
    let by_key: BTreeMap<String, usize> = children
        .iter()
        .map(|(i, pv)| (existing_key(set, pv), *i))
        .collect();
    let updates: BTreeMap<&str, &PackageVariant> = plan
        .update
        .iter()
        .map(|pv| (pv.metadata.name.as_str(), pv))
        .collect();
    let deleted: BTreeSet<&str> = plan
        .delete
        .iter()
        .map(|pv| pv.metadata.name.as_str())
        .collect();
    let mut consumed: Vec<usize> = Vec::new();
    let mut generated: Vec<Node> = Vec::new();
    let (mut created, mut changed, mut same) = (0, 0, 0);
    for desired in &outcome.package_variants {
        let key = spec_key(set, &desired.spec);
        let existing = by_key.get(&key).map(|&i| (i, &input.items[i]));
        let item = match existing {
            Some((i, item)) => {
                consumed.push(i);
                let name = item.name().to_string();
                let path = annotations::path(item).unwrap_or_default().to_string();
                match updates.get(name.as_str()) {
                    Some(pv) => {
                        changed += 1;
                        results.push(with_path(
                            pv_result(
                                Severity::Info,
                                format!("updated the spec of PackageVariant {name}"),
                                pv,
                            ),
                            &path,
                        ));
                        updated_item(item, pv)
                    }
                    None => {
                        same += 1;
                        results.push(with_path(
                            pv_result(
                                Severity::Info,
                                format!("PackageVariant {name} is up to date"),
                                desired,
                            ),
                            &path,
                        ));
                        Ok(item.clone())
                    }
                }
            }
            None => {
                created += 1;
                let path = format!("{OUTPUT_DIR}/{}.yaml", desired.metadata.name);
                results.push(with_path(
                    pv_result(
                        Severity::Info,
                        format!("created PackageVariant {}", desired.metadata.name),
                        desired,
                    ),
                    &path,
                ));
                new_item(desired)
            }
        };
        match item {
            Ok(node) => generated.push(node),
            Err(e) => {
                results.push(e);
                return finish(input, cluster, &[], Vec::new(), results);
            }
        }
    }
    let mut skip = consumed;
    for (i, pv) in children {
        if deleted.contains(pv.metadata.name.as_str()) {
            skip.push(*i);
            let path = annotations::path(&input.items[*i])
                .unwrap_or_default()
                .to_string();
            results.push(with_path(
                pv_result(
                    Severity::Info,
                    format!(
                        "deleted PackageVariant {}: no target generates it any more",
                        pv.metadata.name
                    ),
                    pv,
                ),
                &path,
            ));
        }
    }
    results.push(results::about(
        results::new(
            Severity::Info,
            format!(
                "{} PackageVariant(s) from {} target(s): {created} created, {changed} updated, {same} unchanged, {} deleted",
                outcome.package_variants.len(),
                outcome.stats.targets,
                plan.delete.len()
            ),
        ),
        API_VERSION,
        KIND,
        set,
        &pvs.metadata.namespace,
    ));
    finish(input, cluster, &skip, generated, results)
}

/// A render failure as error results on the set, tagged with the
/// `Stalled` reason the controller would show.
fn render_errors(pvs: &PackageVariantSet, e: &RenderError) -> Vec<ResultItem> {
    let set = |r: ResultItem| {
        let mut r = results::about(
            r,
            API_VERSION,
            KIND,
            &pvs.metadata.name,
            &pvs.metadata.namespace,
        );
        r.tags.insert("reason".to_string(), e.reason().to_string());
        r
    };
    let messages: Vec<(String, Option<String>)> = match e {
        RenderError::Validation(errs) if !errs.is_empty() => errs
            .iter()
            .map(|m| (m.clone(), results::field_in_message(m)))
            .collect(),
        RenderError::Validation(_) => vec![("the PackageVariantSet is invalid".to_string(), None)],
        RenderError::UpstreamNotFound(_) => {
            vec![(e.to_string(), Some("spec.upstream".to_string()))]
        }
        RenderError::Unroll(UnrollError::Selector { target_index, .. }) => {
            vec![(e.to_string(), Some(format!("spec.targets[{target_index}]")))]
        }
        RenderError::Unroll(_) => vec![(e.to_string(), Some("spec.targets".to_string()))],
        RenderError::Template {
            target_index,
            error,
            ..
        } => {
            let field = match error {
                TemplateError::Expression { field, .. } => {
                    format!("spec.targets[{target_index}].{field}")
                }
                TemplateError::RepositoryNotLoaded(_) => {
                    format!("spec.targets[{target_index}].template.downstream")
                }
            };
            vec![(e.to_string(), Some(field))]
        }
    };
    messages
        .into_iter()
        .map(|(message, field)| {
            let r = set(results::error(message));
            match field {
                Some(f) => results::at_field(r, f),
                None => r,
            }
        })
        .collect()
}
