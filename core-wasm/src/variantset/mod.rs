//! PackageVariantSet rendering: validation, target unrolling, CEL
//! templates, PackageVariant names and the sync plan.
