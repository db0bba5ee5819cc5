//! PackageVariant naming.
