//! PackageVariant upstream.
