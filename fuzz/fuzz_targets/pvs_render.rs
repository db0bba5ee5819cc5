//! PackageVariantSet rendering (selectors, CEL templates, sync plan) over
//! the objects of the stream: the first document is the set; Repositories,
//! PackageRevisions and PackageVariants are found by kind; every other
//! object is a target candidate.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pv_core::api::{PackageRevision, PackageVariant};
use pv_core::variantset::{
    self, ClusterObject, ObjectKind, PackageVariantSet, Repository, TargetObjects,
};
use serde_json::Value;

fn of_kind<T: serde::de::DeserializeOwned>(docs: &[Value], kind: &str) -> Vec<T> {
    docs.iter()
        .filter(|d| d.get("kind").and_then(Value::as_str) == Some(kind))
        .filter_map(|d| serde_json::from_value(d.clone()).ok())
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let Some(docs) = std::str::from_utf8(data)
        .ok()
        .and_then(porch_variants_fuzz::documents)
    else {
        return;
    };
    let Some(pvs) = docs
        .first()
        .and_then(|d| serde_json::from_value::<PackageVariantSet>(d.clone()).ok())
    else {
        return;
    };
    let repositories: Vec<Repository> = of_kind(&docs, "Repository");
    let revisions: Vec<PackageRevision> = of_kind(&docs, "PackageRevision");
    let existing: Vec<PackageVariant> = of_kind(&docs, "PackageVariant");
    let objects: Vec<ClusterObject> = docs[1..]
        .iter()
        .filter(|d| {
            !matches!(
                d.get("kind").and_then(Value::as_str),
                Some("Repository" | "PackageRevision" | "PackageVariant")
            )
        })
        .filter_map(|d| serde_json::from_value(d.clone()).ok())
        .collect();
    let mut kinds: Vec<ObjectKind> = Vec::new();
    for o in &objects {
        let k = ObjectKind::new(o.api_version.clone(), o.kind.clone());
        if !kinds.contains(&k) {
            kinds.push(k);
        }
    }
    let targets = TargetObjects { kinds, objects };
    let _ = variantset::render(&pvs, &revisions, &repositories, &targets, &existing);
});
