//! Mutation 2: the KRM function pipeline (upstream's `ensureKRMFunctions`).
//!
//! For `mutators` and then `validators` of the Kptfile's `pipeline`:
//! the functions this PackageVariant added before (named
//! `PackageVariant.<pv>.<fn>.<i>`, recognised by
//! [`is_package_variant_func`]) are dropped, and the variant's functions of
//! that list are prepended under those names; the user's functions keep
//! their order, key order and comments. A list left empty is removed, and
//! so is a `pipeline` with neither list. The Kptfile is always rewritten
//! (kyaml style: compact sequences, indent 2), as upstream does.
//!
//! Order of new lists: upstream iterates a Go map, so when a Kptfile gets
//! both lists in one pass (it had neither) their order is random there. Here
//! it is always `mutators` then `validators`, the order in which kpt runs
//! them and in which kpt's own types declare them. A list that already
//! exists keeps its place.
//!
//! Function names: upstream only recognises names of exactly four
//! dot-separated parts, so a variant or function name containing a dot made
//! its functions pile up again on every reconcile; [`is_package_variant_func`]
//! recognises them exactly.

use std::collections::BTreeMap;

use crate::api::{Function, PackageVariant};
use crate::variant::naming::{generate_pv_func_name, is_package_variant_func};
use crate::yaml::{self, Kind, Node};

use super::error::MutationError;
use super::{file_object, PrrRef, KPTFILE};
use crate::krm::objects::emit_object;

/// The two function lists of a pipeline, in the order they are processed.
const LISTS: [&str; 2] = ["mutators", "validators"];

/// Prepends the variant's pipeline functions to the Kptfile in `files`,
/// replacing the ones it added before, and rewrites the Kptfile.
pub fn ensure_krm_functions(
    pv: &PackageVariant,
    prr: PrrRef<'_>,
    files: &mut BTreeMap<String, String>,
) -> Result<(), MutationError> {
    let mut kptfile = file_object(prr, files, KPTFILE, None, None)?;
    let pv_name = pv.metadata.name.as_str();
    let pipeline = upsert_map(&mut kptfile, "pipeline");
    for list in LISTS {
        let wanted: &[Function] = match &pv.spec.pipeline {
            Some(p) if list == "mutators" => &p.mutators,
            Some(p) => &p.validators,
            None => &[],
        };
        let mut items = wanted
            .iter()
            .enumerate()
            .map(|(i, f)| function_node(f, pv_name, i))
            .collect::<Result<Vec<_>, _>>()?;
        items.extend(kept_functions(pipeline, list, pv_name)?);
        if items.is_empty() {
            pipeline.remove(list);
        } else {
            let mut seq = Node::new_sequence();
            seq.content = items;
            pipeline
                .set_keep_formatting(list, seq)
                .map_err(MutationError::yaml(KPTFILE))?;
        }
    }
    if LISTS.iter().all(|list| pipeline.get(list).is_none()) {
        kptfile.remove("pipeline");
    }
    let text = emit_object(&kptfile).map_err(MutationError::yaml(KPTFILE))?;
    files.insert(KPTFILE.to_string(), text);
    Ok(())
}

/// The SDK's `UpsertMap`: the mapping at `key` if it is a non-empty
/// mapping; otherwise the old value (an empty `{}`, a null, any other
/// value) is removed and a new block mapping is appended at the end.
fn upsert_map<'a>(object: &'a mut Node, key: &str) -> &'a mut Node {
    if let Some(i) = object.key_index(key) {
        let value = &object.content[i + 1];
        if value.kind == Kind::Mapping && !value.content.is_empty() {
            return &mut object.content[i + 1];
        }
        object.content.drain(i..i + 2);
    }
    object.content.push(Node::new_string(key));
    object.content.push(Node::new_mapping());
    let last = object.content.len() - 1;
    &mut object.content[last]
}

/// The functions of `pipeline.<list>` that this variant did not add.
fn kept_functions(pipeline: &Node, list: &str, pv_name: &str) -> Result<Vec<Node>, MutationError> {
    let Some(existing) = pipeline.get(list) else {
        return Ok(Vec::new());
    };
    match existing.kind {
        Kind::Scalar if existing.is_null() => return Ok(Vec::new()),
        Kind::Sequence => {}
        _ => {
            return Err(MutationError::FieldType {
                file: KPTFILE.to_string(),
                field: format!("pipeline.{list}"),
                detail: "expected a sequence of functions".to_string(),
            })
        }
    }
    let mut kept = Vec::with_capacity(existing.content.len());
    for (i, f) in existing.content.iter().enumerate() {
        if f.kind != Kind::Mapping {
            return Err(MutationError::FieldType {
                file: KPTFILE.to_string(),
                field: format!("pipeline.{list}[{i}]"),
                detail: "expected a function (a mapping)".to_string(),
            });
        }
        if !is_package_variant_func(f, pv_name) {
            kept.push(f.clone());
        }
    }
    Ok(kept)
}

/// A function of the variant, renamed `PackageVariant.<pv>.<fn>.<i>` and
/// built as the SDK builds a typed value (keys in kyaml field order:
/// `name, image, …, configMap`).
fn function_node(f: &Function, pv_name: &str, i: usize) -> Result<Node, MutationError> {
    let mut named = f.clone();
    named.name = generate_pv_func_name(&f.name, pv_name, i);
    let json = serde_json::to_value(&named).map_err(|e| MutationError::FieldType {
        file: KPTFILE.to_string(),
        field: format!("spec.pipeline function {i}"),
        detail: e.to_string(),
    })?;
    Ok(yaml::from_json(&json))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Pipeline;

    const PRR: PrrRef<'static> = PrrRef {
        namespace: "ns",
        name: "prr",
    };

    fn pv(name: &str, mutators: &[(&str, &str)], validators: &[(&str, &str)]) -> PackageVariant {
        let f = |(n, img): &(&str, &str)| Function {
            name: n.to_string(),
            image: img.to_string(),
            ..Function::default()
        };
        let mut pv = PackageVariant::default();
        pv.metadata.name = name.to_string();
        pv.spec.pipeline = Some(Pipeline {
            mutators: mutators.iter().map(f).collect(),
            validators: validators.iter().map(f).collect(),
        });
        pv
    }

    fn run(pv: &PackageVariant, kptfile: &str) -> Result<String, MutationError> {
        let mut files = BTreeMap::from([(KPTFILE.to_string(), kptfile.to_string())]);
        ensure_krm_functions(pv, PRR, &mut files)?;
        Ok(files.remove(KPTFILE).unwrap_or_default())
    }

    const BARE: &str = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\n";

    #[test]
    fn new_lists_come_mutators_first() {
        let out = run(&pv("my-pv", &[("m", "img-m")], &[("v", "img-v")]), BARE).unwrap();
        assert_eq!(
            out,
            format!(
                "{BARE}pipeline:\n  mutators:\n  - name: PackageVariant.my-pv.m.0\n    image: img-m\n  validators:\n  - name: PackageVariant.my-pv.v.0\n    image: img-v\n"
            )
        );
    }

    /// Regression: a dotted variant or function name must not make the
    /// functions pile up on a second pass (upstream's 4-part split did).
    #[test]
    fn dotted_names_do_not_duplicate_on_a_second_pass() {
        for (name, f) in [("my.pv", "set-ns"), ("my-pv", "set.ns"), ("a.b", "c.d")] {
            let pv = pv(name, &[(f, "img")], &[]);
            let once = run(&pv, BARE).unwrap();
            let twice = run(&pv, &once).unwrap();
            assert_eq!(once, twice, "{name} / {f}");
            assert_eq!(twice.matches("image: img").count(), 1);
        }
    }

    /// kpt's newer fields are carried into the Kptfile as the variant
    /// gives them, and a change of either is a change of the function.
    #[test]
    fn config_refs_and_conditions_are_carried() {
        let mut p = pv("p", &[("m", "i")], &[]);
        if let Some(pl) = p.spec.pipeline.as_mut() {
            pl.mutators[0].config_ref = Some(crate::api::ResourceReference {
                kind: "ConfigMap".into(),
                name: "labels".into(),
                ..Default::default()
            });
            pl.mutators[0].when = "resources.exists(r, r.kind == 'Deployment')".into();
        }
        let out = run(&p, BARE).unwrap();
        assert_eq!(
            out,
            format!(
                "{BARE}pipeline:\n  mutators:\n  - name: PackageVariant.p.m.0\n    image: i\n    configRef:\n      name: labels\n      kind: ConfigMap\n    when: resources.exists(r, r.kind == 'Deployment')\n"
            )
        );
        assert_eq!(run(&p, &out).unwrap(), out, "stable");
        if let Some(pl) = p.spec.pipeline.as_mut() {
            pl.mutators[0].when = "true".into();
        }
        let changed = run(&p, &out).unwrap();
        assert!(changed.contains("    when: \"true\"\n"), "{changed}");
        assert_eq!(changed.matches("image: i").count(), 1);
    }

    #[test]
    fn empty_lists_and_pipeline_are_removed() {
        let kptfile = format!(
            "{BARE}pipeline:\n  mutators:\n  - name: PackageVariant.my-pv.x.0\n    image: a\n  validators: []\n"
        );
        assert_eq!(run(&pv("my-pv", &[], &[]), &kptfile).unwrap(), BARE);
        assert_eq!(
            run(
                &PackageVariant::default(),
                &format!("{BARE}pipeline: {{}}\n")
            )
            .unwrap(),
            BARE
        );
    }

    #[test]
    fn an_empty_pipeline_is_replaced_at_the_end() {
        let kptfile = "apiVersion: kpt.dev/v1\nkind: Kptfile\npipeline: {}\nmetadata:\n  name: p\n";
        let out = run(&pv("p", &[("m", "i")], &[]), kptfile).unwrap();
        assert_eq!(
            out,
            "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\npipeline:\n  mutators:\n  - name: PackageVariant.p.m.0\n    image: i\n"
        );
    }

    #[test]
    fn malformed_kptfiles_are_errors() {
        let p = pv("p", &[("m", "i")], &[]);
        let mut files = BTreeMap::new();
        assert_eq!(
            ensure_krm_functions(&p, PRR, &mut files)
                .unwrap_err()
                .to_string(),
            "\"Kptfile\" not found in PackageRevisionResources 'ns/prr'"
        );
        assert_eq!(
            run(&p, &format!("{BARE}pipeline:\n  mutators: 5\n"))
                .unwrap_err()
                .to_string(),
            "Kptfile: field pipeline.mutators: expected a sequence of functions"
        );
        assert_eq!(
            run(&p, &format!("{BARE}pipeline:\n  mutators:\n  - x\n"))
                .unwrap_err()
                .to_string(),
            "Kptfile: field pipeline.mutators[0]: expected a function (a mapping)"
        );
        assert!(run(&p, "- a\n").is_err());
        assert!(run(&p, "a: 1\n---\nb: 2\n").is_err());
    }
}
