//! PackageVariant downstream.
