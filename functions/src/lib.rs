//! kpt function front-ends over the porch-variants core: they read a KRM
//! `ResourceList` on stdin and write one on stdout. The functions
//! themselves (`apply-package-variant`, `render-package-variant-set`) are
//! built on the core's PackageVariant and PackageVariantSet logic.
