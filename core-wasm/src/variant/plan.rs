//! PackageVariant plan.
