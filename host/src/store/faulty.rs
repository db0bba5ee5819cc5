//! A wrapper around both stores that counts calls and can refuse writes
//! from the N-th on: the process "killed" between write N-1 and write N.
//! With no failure set it is a call counter (the figures of the fleet
//! demo).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use pv_core::api::package_revision::Lifecycle;
use pv_core::api::{ObjectMeta, PackageRevision, PackageRevisionResources, PackageVariant};
use pv_core::variantset::{PackageVariantSet, Repository};
use serde_json::Value;

use super::{
    Files, NewRevision, ObjectStore, PackageRevisionStore, PrFilter, StoreError, StoreResult,
};

/// Shared counters and the failure point.
#[derive(Debug, Default)]
pub struct FaultPlan {
    /// Refuse every write numbered this or later (1-based); `None`: never.
    pub fail_at: Option<usize>,
    reads: AtomicUsize,
    writes: AtomicUsize,
    attempted: AtomicUsize,
}

/// Call counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct CallCounts {
    /// Read calls.
    pub reads: usize,
    /// Write calls that were carried out.
    pub writes: usize,
}

impl FaultPlan {
    /// Counts only.
    pub fn counting() -> Arc<Self> {
        Arc::new(FaultPlan::default())
    }

    /// Fails write `n` (1-based) and every write after it.
    pub fn failing_at(n: usize) -> Arc<Self> {
        Arc::new(FaultPlan {
            fail_at: Some(n),
            ..FaultPlan::default()
        })
    }

    /// The counts so far.
    pub fn counts(&self) -> CallCounts {
        CallCounts {
            reads: self.reads.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
        }
    }

    /// Whether a write was refused.
    pub fn tripped(&self) -> bool {
        self.fail_at
            .is_some_and(|n| self.attempted.load(Ordering::Relaxed) >= n)
    }

    fn read(&self) {
        self.reads.fetch_add(1, Ordering::Relaxed);
    }

    fn write<T>(&self, f: impl FnOnce() -> StoreResult<T>) -> StoreResult<T> {
        let n = self.attempted.fetch_add(1, Ordering::Relaxed) + 1;
        if self.fail_at.is_some_and(|at| n >= at) {
            return Err(StoreError::Injected(n));
        }
        let out = f();
        if out.is_ok() {
            self.writes.fetch_add(1, Ordering::Relaxed);
        }
        out
    }
}

/// Wraps a store (of either kind) with a [`FaultPlan`].
pub struct Faulty<S> {
    inner: S,
    plan: Arc<FaultPlan>,
}

impl<S> Faulty<S> {
    /// `inner` under `plan` (share one plan between the two stores so that
    /// writes are numbered across both).
    pub fn new(inner: S, plan: Arc<FaultPlan>) -> Self {
        Faulty { inner, plan }
    }
}

impl<S: PackageRevisionStore> PackageRevisionStore for Faulty<S> {
    fn list(&self, namespace: &str, filter: &PrFilter) -> StoreResult<Vec<PackageRevision>> {
        self.plan.read();
        self.inner.list(namespace, filter)
    }
    fn get(&self, namespace: &str, name: &str) -> StoreResult<PackageRevision> {
        self.plan.read();
        self.inner.get(namespace, name)
    }
    fn resources(&self, namespace: &str, name: &str) -> StoreResult<PackageRevisionResources> {
        self.plan.read();
        self.inner.resources(namespace, name)
    }
    fn update_resources(
        &self,
        ns: &str,
        name: &str,
        files: &Files,
    ) -> StoreResult<PackageRevision> {
        self.plan
            .write(|| self.inner.update_resources(ns, name, files))
    }
    fn create(&self, new: NewRevision) -> StoreResult<PackageRevision> {
        self.plan.write(|| self.inner.create(new))
    }
    fn update_lifecycle(&self, ns: &str, name: &str, l: Lifecycle) -> StoreResult<PackageRevision> {
        self.plan.write(|| self.inner.update_lifecycle(ns, name, l))
    }
    fn update_metadata(
        &self,
        ns: &str,
        name: &str,
        m: &ObjectMeta,
    ) -> StoreResult<PackageRevision> {
        self.plan.write(|| self.inner.update_metadata(ns, name, m))
    }
    fn delete(&self, namespace: &str, name: &str) -> StoreResult<()> {
        self.plan.write(|| self.inner.delete(namespace, name))
    }
}

impl<S: ObjectStore> ObjectStore for Faulty<S> {
    fn list_package_variants(&self, namespace: Option<&str>) -> StoreResult<Vec<PackageVariant>> {
        self.plan.read();
        self.inner.list_package_variants(namespace)
    }
    fn create_package_variant(&self, pv: &PackageVariant) -> StoreResult<PackageVariant> {
        self.plan.write(|| self.inner.create_package_variant(pv))
    }
    fn update_package_variant(&self, pv: &PackageVariant) -> StoreResult<PackageVariant> {
        self.plan.write(|| self.inner.update_package_variant(pv))
    }
    fn update_package_variant_status(&self, pv: &PackageVariant) -> StoreResult<()> {
        self.plan
            .write(|| self.inner.update_package_variant_status(pv))
    }
    fn delete_package_variant(&self, namespace: &str, name: &str) -> StoreResult<()> {
        self.plan
            .write(|| self.inner.delete_package_variant(namespace, name))
    }
    fn list_package_variant_sets(
        &self,
        namespace: Option<&str>,
    ) -> StoreResult<Vec<PackageVariantSet>> {
        self.plan.read();
        self.inner.list_package_variant_sets(namespace)
    }
    fn update_package_variant_set_status(&self, pvs: &PackageVariantSet) -> StoreResult<()> {
        self.plan
            .write(|| self.inner.update_package_variant_set_status(pvs))
    }
    fn list_repositories(&self, namespace: &str) -> StoreResult<Vec<Repository>> {
        self.plan.read();
        self.inner.list_repositories(namespace)
    }
    fn list_objects(&self, namespace: &str) -> StoreResult<Vec<Value>> {
        self.plan.read();
        self.inner.list_objects(namespace)
    }
}
