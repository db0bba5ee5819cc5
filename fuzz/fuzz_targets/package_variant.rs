//! PackageVariant and PackageVariantSet decoding and validation, and the
//! PackageVariant reconcile plan over the PackageRevisions of the stream.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pv_core::api::{PackageRevision, PackageVariant};
use pv_core::variant::{plan, validate};
use pv_core::variantset::{self, PackageVariantSet};

fuzz_target!(|data: &[u8]| {
    let Some(docs) = std::str::from_utf8(data)
        .ok()
        .and_then(porch_variants_fuzz::documents)
    else {
        return;
    };
    let prs: Vec<PackageRevision> = docs
        .iter()
        .filter_map(|d| serde_json::from_value(d.clone()).ok())
        .collect();
    for doc in &docs {
        if let Ok(pv) = serde_json::from_value::<PackageVariant>(doc.clone()) {
            let _ = validate::validate_package_variant(&pv);
            let _ = plan::plan_reconcile(&pv, &prs);
        }
        if let Ok(pvs) = serde_json::from_value::<PackageVariantSet>(doc.clone()) {
            let _ = variantset::validate::validate(&pvs);
        }
    }
});
