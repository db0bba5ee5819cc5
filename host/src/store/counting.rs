//! A wrapper around either store that counts its calls: the read and
//! write figures `local` reports (`store_calls`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use pv_core::api::package_revision::Lifecycle;
use pv_core::api::{ObjectMeta, PackageRevision, PackageRevisionResources, PackageVariant};
use pv_core::variantset::{PackageVariantSet, Repository};
use serde_json::Value;

use super::{
    Files, NewRevision, ObjectStore, PackageRevisionStore, PrFilter, SourceState, StoreResult,
};

/// Store calls made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct CallCounts {
    /// Read calls.
    pub reads: usize,
    /// Write calls that were carried out.
    pub writes: usize,
}

/// The counters, shared by the stores that count into them.
#[derive(Debug, Default)]
pub struct Counter {
    reads: AtomicUsize,
    writes: AtomicUsize,
}

impl Counter {
    /// New counters at zero.
    pub fn new() -> Arc<Counter> {
        Arc::new(Counter::default())
    }

    /// The calls counted so far.
    pub fn counts(&self) -> CallCounts {
        CallCounts {
            reads: self.reads.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
        }
    }

    fn read<T>(&self, out: StoreResult<T>) -> StoreResult<T> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        out
    }

    fn write<T>(&self, out: StoreResult<T>) -> StoreResult<T> {
        if out.is_ok() {
            self.writes.fetch_add(1, Ordering::Relaxed);
        }
        out
    }
}

/// A store whose calls are counted.
pub struct Counting<S> {
    inner: S,
    counter: Arc<Counter>,
}

impl<S> Counting<S> {
    /// `inner`, counted into `counter` (share one between stores to count
    /// their calls together).
    pub fn new(inner: S, counter: Arc<Counter>) -> Self {
        Counting { inner, counter }
    }
}

impl<S: PackageRevisionStore> PackageRevisionStore for Counting<S> {
    fn list(&self, namespace: &str, filter: &PrFilter) -> StoreResult<Vec<PackageRevision>> {
        self.counter.read(self.inner.list(namespace, filter))
    }
    fn get(&self, namespace: &str, name: &str) -> StoreResult<PackageRevision> {
        self.counter.read(self.inner.get(namespace, name))
    }
    fn annotated_packages(&self, key: &str) -> StoreResult<Vec<(String, String, String)>> {
        // Not counted: it answers from an index in memory.
        self.inner.annotated_packages(key)
    }
    fn fingerprint(&self, namespace: &str, filter: &PrFilter) -> StoreResult<Option<String>> {
        self.counter.read(self.inner.fingerprint(namespace, filter))
    }
    fn resources(&self, namespace: &str, name: &str) -> StoreResult<PackageRevisionResources> {
        self.counter.read(self.inner.resources(namespace, name))
    }
    fn update_resources(
        &self,
        ns: &str,
        name: &str,
        files: &Files,
        read: &str,
    ) -> StoreResult<PackageRevision> {
        self.counter
            .write(self.inner.update_resources(ns, name, files, read))
    }
    fn create(&self, new: NewRevision) -> StoreResult<PackageRevision> {
        self.counter.write(self.inner.create(new))
    }
    fn update_lifecycle(&self, ns: &str, name: &str, l: Lifecycle) -> StoreResult<PackageRevision> {
        self.counter.write(self.inner.update_lifecycle(ns, name, l))
    }
    fn update_metadata(
        &self,
        ns: &str,
        name: &str,
        m: &ObjectMeta,
    ) -> StoreResult<PackageRevision> {
        self.counter.write(self.inner.update_metadata(ns, name, m))
    }
    fn delete(&self, namespace: &str, name: &str) -> StoreResult<()> {
        self.counter.write(self.inner.delete(namespace, name))
    }
    fn declares_sources(&self) -> bool {
        self.inner.declares_sources()
    }
    fn source_state(&self, namespace: &str, name: &str) -> StoreResult<SourceState> {
        self.counter.read(self.inner.source_state(namespace, name))
    }
}

impl<S: ObjectStore> ObjectStore for Counting<S> {
    fn list_package_variants(&self, namespace: Option<&str>) -> StoreResult<Vec<PackageVariant>> {
        self.counter
            .read(self.inner.list_package_variants(namespace))
    }
    fn create_package_variant(&self, pv: &PackageVariant) -> StoreResult<PackageVariant> {
        self.counter.write(self.inner.create_package_variant(pv))
    }
    fn update_package_variant(&self, pv: &PackageVariant) -> StoreResult<PackageVariant> {
        self.counter.write(self.inner.update_package_variant(pv))
    }
    fn update_package_variant_status(&self, pv: &PackageVariant) -> StoreResult<()> {
        self.counter
            .write(self.inner.update_package_variant_status(pv))
    }
    fn delete_package_variant(&self, namespace: &str, name: &str) -> StoreResult<()> {
        self.counter
            .write(self.inner.delete_package_variant(namespace, name))
    }
    fn list_package_variant_sets(
        &self,
        namespace: Option<&str>,
    ) -> StoreResult<Vec<PackageVariantSet>> {
        self.counter
            .read(self.inner.list_package_variant_sets(namespace))
    }
    fn update_package_variant_set_status(&self, pvs: &PackageVariantSet) -> StoreResult<()> {
        self.counter
            .write(self.inner.update_package_variant_set_status(pvs))
    }
    fn list_repositories(&self, namespace: &str) -> StoreResult<Vec<Repository>> {
        self.counter.read(self.inner.list_repositories(namespace))
    }
    fn list_objects(&self, namespace: &str) -> StoreResult<Vec<Value>> {
        self.counter.read(self.inner.list_objects(namespace))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::memory::MemoryObjects;

    #[test]
    fn reads_and_carried_out_writes_are_counted_together() {
        let counter = Counter::new();
        let a = Counting::new(MemoryObjects::default(), counter.clone());
        let b = Counting::new(MemoryObjects::default(), counter.clone());
        a.list_package_variants(None).unwrap();
        b.list_repositories("default").unwrap();
        let mut pv = PackageVariant::default();
        pv.metadata.namespace = "default".into();
        pv.metadata.name = "x".into();
        a.create_package_variant(&pv).unwrap();
        // A refused write is not counted.
        assert!(a.create_package_variant(&pv).is_err());
        assert_eq!(
            counter.counts(),
            CallCounts {
                reads: 2,
                writes: 1
            }
        );
    }
}
