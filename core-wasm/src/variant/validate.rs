//! PackageVariant validate.
