//! A wrapper around both stores that counts calls and injects faults.
//!
//! With no fault set it is a call counter (the figures of the fleet demo).
//! [`FaultPlan::failing_at`] refuses every write from the N-th on: the
//! process "killed" between write N-1 and write N. [`FaultPlan::scheduled`]
//! follows a deterministic [`FaultSchedule`] that decides, call by call,
//! what goes wrong:
//!
//! * a write crashes the process before it happens ([`WriteFault::CrashBefore`])
//!   or after it happened ([`WriteFault::CrashAfter`]) — both end the run
//!   with [`StoreError::Stopped`], and every later write of the plan is
//!   refused the same way (the process is gone);
//! * a write fails with a transient error before it happens
//!   ([`WriteFault::ErrorBefore`]), or happens but its answer is lost
//!   ([`WriteFault::ErrorAfter`], a timeout after the server applied it);
//! * a write is refused as a [`StoreError::Conflict`] without happening
//!   ([`WriteFault::Conflict`]: optimistic concurrency, as the API server
//!   answers when the object's resourceVersion changed);
//! * a list call returns the previous answer of the same call
//!   ([`ReadFault::Stale`]: an informer cache lagging behind the writes
//!   made since by others; this process's own writes are read over it, as
//!   the Kubernetes store does), or that answer as it was
//!   ([`ReadFault::StaleRaw`]: lagging behind this process's writes too),
//!   or any read fails with a transient error ([`ReadFault::Error`]).
//!
//! Writes and reads are numbered separately from 1, in call order, across
//! both stores when they share one plan. A schedule names faults for given
//! call numbers, or draws them from a seed ([`SeededFaults`]); the same
//! schedule over the same calls injects the same faults.

use std::any::Any;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use pv_core::api::package_revision::Lifecycle;
use pv_core::api::{ObjectMeta, PackageRevision, PackageRevisionResources, PackageVariant};
use pv_core::variantset::{PackageVariantSet, Repository};
use serde_json::Value;

pub use porch_variants::store::counting::CallCounts;
use porch_variants::store::{
    Files, NewRevision, ObjectStore, PackageRevisionStore, PrFilter, SourceState, StoreError,
    StoreResult,
};

/// What goes wrong with one write call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum WriteFault {
    /// The process dies before the write: nothing is written, the call
    /// returns [`StoreError::Stopped`] and every later write is refused.
    CrashBefore,
    /// The process dies right after the write: it is written, the call
    /// returns [`StoreError::Stopped`] and every later write is refused.
    CrashAfter,
    /// A transient error (the API server unreachable): nothing is written.
    ErrorBefore,
    /// The write happens but its answer is lost: the call returns a
    /// transient error.
    ErrorAfter,
    /// Refused as [`StoreError::Conflict`]: nothing is written.
    Conflict,
}

impl WriteFault {
    /// Every write fault.
    pub const ALL: [WriteFault; 5] = [
        WriteFault::CrashBefore,
        WriteFault::CrashAfter,
        WriteFault::ErrorBefore,
        WriteFault::ErrorAfter,
        WriteFault::Conflict,
    ];

    /// Whether the process stops at this fault.
    pub fn is_crash(self) -> bool {
        matches!(self, WriteFault::CrashBefore | WriteFault::CrashAfter)
    }

    /// Whether the write is carried out despite the fault.
    pub fn writes(self) -> bool {
        matches!(self, WriteFault::CrashAfter | WriteFault::ErrorAfter)
    }
}

/// What goes wrong with one read call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum ReadFault {
    /// A list call returns the answer the same call (same arguments) gave
    /// the previous time, when there was one (other reads are not
    /// affected), with the PackageRevisions and PackageVariants this
    /// process wrote since read over it: the stores' contract is that a
    /// list may lag behind other writers, not behind the process's own
    /// successful writes (the Kubernetes store keeps them in its
    /// expectations until its caches show them).
    Stale,
    /// [`ReadFault::Stale`] without this process's writes read over it: a
    /// cache lagging behind them too, as the Kubernetes store's would once
    /// its expectations expired. Outside the stores' contract: no
    /// reconciler can rule out a duplicate draft under it, but none may
    /// remove a finalizer before its cleanup.
    StaleRaw,
    /// A transient error.
    Error,
}

impl ReadFault {
    /// Every read fault the stores' contract allows.
    pub const ALL: [ReadFault; 2] = [ReadFault::Stale, ReadFault::Error];

    /// Whether a list answer may be an earlier one.
    pub fn is_stale(self) -> bool {
        matches!(self, ReadFault::Stale | ReadFault::StaleRaw)
    }
}

/// Faults drawn from a seed: each call is faulty with the given rate, the
/// fault chosen among the listed ones. The draw for call `n` depends only
/// on the seed and `n`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SeededFaults {
    /// The seed.
    pub seed: u64,
    /// Faulty writes per 1,000 writes.
    pub write_per_mille: u32,
    /// Faulty reads per 1,000 reads.
    pub read_per_mille: u32,
    /// The write faults to choose from (none: no write fault).
    pub write_faults: Vec<WriteFault>,
    /// The read faults to choose from (none: no read fault).
    pub read_faults: Vec<ReadFault>,
}

/// SplitMix64: a small, well-mixed deterministic hash of `x`.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

impl SeededFaults {
    fn draw<T: Copy>(&self, stream: u64, n: usize, per_mille: u32, faults: &[T]) -> Option<T> {
        if faults.is_empty() || per_mille == 0 {
            return None;
        }
        let h = mix(mix(self.seed ^ stream).wrapping_add(n as u64));
        if (h % 1000) as u32 >= per_mille {
            return None;
        }
        faults
            .get(((h >> 32) % faults.len() as u64) as usize)
            .copied()
    }
}

/// Which calls fail and how: faults at given call numbers (1-based, writes
/// and reads counted separately), plus faults drawn from a seed. A fault
/// named explicitly wins over a drawn one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FaultSchedule {
    /// Write number → fault.
    pub writes: BTreeMap<usize, WriteFault>,
    /// Read number → fault.
    pub reads: BTreeMap<usize, ReadFault>,
    /// Faults drawn from a seed.
    pub seeded: Option<SeededFaults>,
}

impl FaultSchedule {
    /// No fault.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `fault` at write number `n` (1-based).
    pub fn write(mut self, n: usize, fault: WriteFault) -> Self {
        self.writes.insert(n, fault);
        self
    }

    /// Adds `fault` at read number `n` (1-based).
    pub fn read(mut self, n: usize, fault: ReadFault) -> Self {
        self.reads.insert(n, fault);
        self
    }

    /// Draws further faults from `seeded`.
    pub fn with_seeded(mut self, seeded: SeededFaults) -> Self {
        self.seeded = Some(seeded);
        self
    }

    /// The fault of write number `n`, if any.
    pub fn write_fault(&self, n: usize) -> Option<WriteFault> {
        self.writes.get(&n).copied().or_else(|| {
            self.seeded
                .as_ref()
                .and_then(|s| s.draw(1, n, s.write_per_mille, &s.write_faults))
        })
    }

    /// The fault of read number `n`, if any.
    pub fn read_fault(&self, n: usize) -> Option<ReadFault> {
        self.reads.get(&n).copied().or_else(|| {
            self.seeded
                .as_ref()
                .and_then(|s| s.draw(2, n, s.read_per_mille, &s.read_faults))
        })
    }

    /// Whether any read may be stale (list answers are then remembered).
    pub fn may_be_stale(&self) -> bool {
        self.reads.values().any(|f| f.is_stale())
            || self
                .seeded
                .as_ref()
                .is_some_and(|s| s.read_per_mille > 0 && s.read_faults.iter().any(|f| f.is_stale()))
    }

    /// Whether the schedule injects nothing.
    pub fn is_empty(&self) -> bool {
        self.writes.is_empty()
            && self.reads.is_empty()
            && self.seeded.as_ref().is_none_or(|s| {
                (s.write_per_mille == 0 || s.write_faults.is_empty())
                    && (s.read_per_mille == 0 || s.read_faults.is_empty())
            })
    }
}

/// A fault that was injected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Fault {
    /// At a write.
    Write(WriteFault),
    /// At a read.
    Read(ReadFault),
    /// A write refused by [`FaultPlan::failing_at`] (or after a crash).
    Refused,
}

/// One injected fault: where and what.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Injection {
    /// The store method.
    pub operation: &'static str,
    /// The write or read number (1-based).
    pub number: usize,
    /// The fault.
    pub fault: Fault,
}

/// A remembered list answer, with the number of this process's writes
/// that it had seen.
struct Remembered {
    after_writes: usize,
    answer: Box<dyn Any + Send>,
}

/// `(namespace, name)`.
type Key = (String, String);

/// This process's successful writes of PackageRevisions and
/// PackageVariants, kept only while reads may be stale: each object's
/// last write, numbered, as the call returned it (`None`: deleted).
#[derive(Default)]
struct OwnWrites {
    count: usize,
    revisions: HashMap<Key, (usize, Option<PackageRevision>)>,
    variants: HashMap<Key, (usize, Option<PackageVariant>)>,
}

/// Replaces, in `answer`, the objects written after `after` by their last
/// write; `meta` gives an object's metadata and `keep` says whether it
/// belongs in the answer. The answer stays in namespace and name order, as
/// the stores list.
fn read_over<T: Clone>(
    answer: &mut Vec<T>,
    written: &HashMap<Key, (usize, Option<T>)>,
    after: usize,
    meta: impl Fn(&T) -> &ObjectMeta,
    keep: impl Fn(&T) -> bool,
) {
    let key = |o: &T| (meta(o).namespace.clone(), meta(o).name.clone());
    let newer: HashMap<&Key, &Option<T>> = written
        .iter()
        .filter(|(_, (n, _))| *n > after)
        .map(|(k, (_, o))| (k, o))
        .collect();
    if newer.is_empty() {
        return;
    }
    answer.retain(|o| !newer.contains_key(&key(o)));
    answer.extend(
        newer
            .values()
            .filter_map(|o| o.as_ref())
            .filter(|o| keep(o))
            .cloned(),
    );
    answer.sort_by(|a, b| {
        let (a, b) = (meta(a), meta(b));
        (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name))
    });
}

/// Shared counters, the failure point and the fault schedule.
#[derive(Default)]
pub struct FaultPlan {
    /// Refuse every write numbered this or later (1-based); `None`: never.
    pub fail_at: Option<usize>,
    schedule: FaultSchedule,
    reads: AtomicUsize,
    writes: AtomicUsize,
    attempted: AtomicUsize,
    crashed: AtomicBool,
    injected: Mutex<Vec<Injection>>,
    /// The last fresh answer of each list call (only when reads may be
    /// stale).
    answers: Mutex<HashMap<String, Remembered>>,
    /// This process's writes (only when reads may be stale).
    own: Mutex<OwnWrites>,
}

impl std::fmt::Debug for FaultPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultPlan")
            .field("fail_at", &self.fail_at)
            .field("schedule", &self.schedule)
            .field("counts", &self.counts())
            .field("crashed", &self.crashed.load(Ordering::Relaxed))
            .field("injected", &self.injected())
            .finish()
    }
}

fn transient(what: String) -> StoreError {
    StoreError::Io {
        context: what,
        source: std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "injected transient error",
        ),
    }
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

    /// Injects the faults of `schedule`.
    pub fn scheduled(schedule: FaultSchedule) -> Arc<Self> {
        Arc::new(FaultPlan {
            schedule,
            ..FaultPlan::default()
        })
    }

    /// The schedule followed.
    pub fn schedule(&self) -> &FaultSchedule {
        &self.schedule
    }

    /// The counts so far.
    pub fn counts(&self) -> CallCounts {
        CallCounts {
            reads: self.reads.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
        }
    }

    /// Whether a write was refused: the `failing_at` point was reached, or
    /// a scheduled crash happened.
    pub fn tripped(&self) -> bool {
        self.crashed()
            || self
                .fail_at
                .is_some_and(|n| self.attempted.load(Ordering::Relaxed) >= n)
    }

    /// Whether a scheduled crash happened.
    pub fn crashed(&self) -> bool {
        self.crashed.load(Ordering::Relaxed)
    }

    /// The faults injected so far, in order.
    pub fn injected(&self) -> Vec<Injection> {
        self.injected
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn note(&self, operation: &'static str, number: usize, fault: Fault) {
        self.injected
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Injection {
                operation,
                number,
                fault,
            });
    }

    /// A read that cannot be stale (a get, or resources).
    fn read<T>(
        &self,
        operation: &'static str,
        f: impl FnOnce() -> StoreResult<T>,
    ) -> StoreResult<T> {
        let n = self.reads.fetch_add(1, Ordering::Relaxed) + 1;
        match self.schedule.read_fault(n) {
            Some(ReadFault::Error) => {
                self.note(operation, n, Fault::Read(ReadFault::Error));
                Err(transient(format!("{operation} (read #{n})")))
            }
            _ => f(),
        }
    }

    /// A list call: may fail, or return the answer the same call (`key`)
    /// gave the previous time; for [`ReadFault::Stale`], `read_over` then
    /// applies the process's writes made after that answer (their number
    /// then given).
    fn list<I: Clone + Send + 'static>(
        &self,
        operation: &'static str,
        key: String,
        read_over: impl FnOnce(&mut Vec<I>, &OwnWrites, usize),
        f: impl FnOnce() -> StoreResult<Vec<I>>,
    ) -> StoreResult<Vec<I>> {
        let n = self.reads.fetch_add(1, Ordering::Relaxed) + 1;
        let fault = self.schedule.read_fault(n);
        if fault == Some(ReadFault::Error) {
            self.note(operation, n, Fault::Read(ReadFault::Error));
            return Err(transient(format!("{operation} (read #{n})")));
        }
        let fresh = f()?;
        if !self.schedule.may_be_stale() {
            return Ok(fresh);
        }
        let own = self.own.lock().unwrap_or_else(|e| e.into_inner());
        let remembered = Remembered {
            after_writes: own.count,
            answer: Box::new(fresh.clone()),
        };
        let previous = self
            .answers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, remembered);
        let Some(fault) = fault.filter(|f| f.is_stale()) else {
            return Ok(fresh);
        };
        let Some((after, mut old)) =
            previous.and_then(|r| Some((r.after_writes, r.answer.downcast::<Vec<I>>().ok()?)))
        else {
            return Ok(fresh);
        };
        self.note(operation, n, Fault::Read(fault));
        if fault == ReadFault::Stale {
            read_over(&mut old, &own, after);
        }
        Ok(*old)
    }

    /// Records this process's write of a PackageRevision (`None`: deleted).
    fn own_revision(&self, key: Key, object: Option<PackageRevision>) {
        self.own_write(|own| &mut own.revisions, key, object);
    }

    /// Records this process's write of a PackageVariant (`None`: deleted).
    fn own_variant(&self, key: Key, object: Option<PackageVariant>) {
        self.own_write(|own| &mut own.variants, key, object);
    }

    /// Numbers and records a write in the map `of` picks (only while reads
    /// may be stale).
    fn own_write<T>(
        &self,
        of: impl FnOnce(&mut OwnWrites) -> &mut HashMap<Key, (usize, Option<T>)>,
        key: Key,
        object: Option<T>,
    ) {
        if self.schedule.may_be_stale() {
            let mut own = self.own.lock().unwrap_or_else(|e| e.into_inner());
            own.count += 1;
            let n = own.count;
            of(&mut own).insert(key, (n, object));
        }
    }

    fn write<T>(
        &self,
        operation: &'static str,
        f: impl FnOnce() -> StoreResult<T>,
    ) -> StoreResult<T> {
        let n = self.attempted.fetch_add(1, Ordering::Relaxed) + 1;
        if self.fail_at.is_some_and(|at| n >= at) || self.crashed() {
            self.note(operation, n, Fault::Refused);
            return Err(StoreError::Stopped(n));
        }
        let fault = self.schedule.write_fault(n);
        if let Some(fault) = fault {
            self.note(operation, n, Fault::Write(fault));
            if fault.is_crash() {
                self.crashed.store(true, Ordering::Relaxed);
            }
            match fault {
                WriteFault::CrashBefore => return Err(StoreError::Stopped(n)),
                WriteFault::ErrorBefore => {
                    return Err(transient(format!("{operation} (write #{n})")))
                }
                WriteFault::Conflict => {
                    return Err(StoreError::Conflict(format!(
                        "{operation} (write #{n}): the object has been modified; \
                         please apply your changes to the latest version and try again"
                    )))
                }
                WriteFault::CrashAfter | WriteFault::ErrorAfter => {}
            }
        }
        let out = f();
        if out.is_ok() {
            self.writes.fetch_add(1, Ordering::Relaxed);
        }
        match fault {
            Some(WriteFault::CrashAfter) => Err(StoreError::Stopped(n)),
            Some(WriteFault::ErrorAfter) => {
                Err(transient(format!("{operation} (write #{n}, answer lost)")))
            }
            _ => out,
        }
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

    /// The plan.
    pub fn plan(&self) -> &Arc<FaultPlan> {
        &self.plan
    }
}

impl<S> Faulty<S> {
    /// Records a revision the call returned as this process's write.
    fn revision_written(&self, out: StoreResult<PackageRevision>) -> StoreResult<PackageRevision> {
        if let Ok(pr) = &out {
            let key = (pr.metadata.namespace.clone(), pr.metadata.name.clone());
            self.plan.own_revision(key, Some(pr.clone()));
        }
        out
    }

    /// Records a variant the call returned as this process's write (gone
    /// when it is being deleted and has no finalizer left).
    fn variant_written(&self, out: StoreResult<PackageVariant>) -> StoreResult<PackageVariant> {
        if let Ok(pv) = &out {
            let key = (pv.metadata.namespace.clone(), pv.metadata.name.clone());
            let gone =
                pv.metadata.deletion_timestamp.is_some() && pv.metadata.finalizers.is_empty();
            self.plan.own_variant(key, (!gone).then(|| pv.clone()));
        }
        out
    }
}

/// A list answer without this process's writes to read over it.
fn nothing_over<I>(_: &mut Vec<I>, _: &OwnWrites, _: usize) {}

impl<S: PackageRevisionStore> PackageRevisionStore for Faulty<S> {
    fn list(&self, namespace: &str, filter: &PrFilter) -> StoreResult<Vec<PackageRevision>> {
        let key = format!("PackageRevision {namespace} {filter:?}");
        let over = |answer: &mut Vec<PackageRevision>, own: &OwnWrites, after: usize| {
            read_over(
                answer,
                &own.revisions,
                after,
                |p| &p.metadata,
                |p| p.metadata.namespace == namespace && filter.matches(p),
            );
        };
        self.plan
            .list("list", key, over, || self.inner.list(namespace, filter))
    }
    fn get(&self, namespace: &str, name: &str) -> StoreResult<PackageRevision> {
        self.plan.read("get", || self.inner.get(namespace, name))
    }
    fn annotated_packages(&self, key: &str) -> StoreResult<Vec<(String, String, String)>> {
        // Passed through, neither counted nor faulted: it answers from an
        // index in memory (or nothing), and a seeded schedule's faults
        // stay on the calls they were drawn for.
        self.inner.annotated_packages(key)
    }
    fn fingerprint(&self, namespace: &str, filter: &PrFilter) -> StoreResult<Option<String>> {
        // A list that may lag behind is not what the fingerprint describes.
        if self.plan.schedule.may_be_stale() {
            return Ok(None);
        }
        self.plan
            .read("fingerprint", || self.inner.fingerprint(namespace, filter))
    }
    fn resources(&self, namespace: &str, name: &str) -> StoreResult<PackageRevisionResources> {
        self.plan
            .read("resources", || self.inner.resources(namespace, name))
    }
    fn update_resources(
        &self,
        ns: &str,
        name: &str,
        files: &Files,
        read: &str,
    ) -> StoreResult<PackageRevision> {
        // Not read over stale lists: the Kubernetes store does not record
        // resource updates either (they change no field a list shows).
        self.plan.write("update_resources", || {
            self.inner.update_resources(ns, name, files, read)
        })
    }
    fn create(&self, new: NewRevision) -> StoreResult<PackageRevision> {
        self.revision_written(self.plan.write("create", || self.inner.create(new)))
    }
    fn update_lifecycle(&self, ns: &str, name: &str, l: Lifecycle) -> StoreResult<PackageRevision> {
        self.revision_written(self.plan.write("update_lifecycle", || {
            self.inner.update_lifecycle(ns, name, l)
        }))
    }
    fn update_metadata(
        &self,
        ns: &str,
        name: &str,
        m: &ObjectMeta,
    ) -> StoreResult<PackageRevision> {
        self.revision_written(self.plan.write("update_metadata", || {
            self.inner.update_metadata(ns, name, m)
        }))
    }
    fn delete(&self, namespace: &str, name: &str) -> StoreResult<()> {
        self.plan
            .write("delete", || self.inner.delete(namespace, name))?;
        self.plan
            .own_revision((namespace.to_string(), name.to_string()), None);
        Ok(())
    }
    fn declares_sources(&self) -> bool {
        self.inner.declares_sources()
    }
    fn source_state(&self, namespace: &str, name: &str) -> StoreResult<SourceState> {
        self.plan
            .read("source_state", || self.inner.source_state(namespace, name))
    }
}

impl<S: ObjectStore> ObjectStore for Faulty<S> {
    fn list_package_variants(&self, namespace: Option<&str>) -> StoreResult<Vec<PackageVariant>> {
        let key = format!("PackageVariant {namespace:?}");
        let over = |answer: &mut Vec<PackageVariant>, own: &OwnWrites, after: usize| {
            read_over(
                answer,
                &own.variants,
                after,
                |p| &p.metadata,
                |p| namespace.is_none_or(|ns| p.metadata.namespace == ns),
            );
        };
        self.plan.list("list_package_variants", key, over, || {
            self.inner.list_package_variants(namespace)
        })
    }
    fn create_package_variant(&self, pv: &PackageVariant) -> StoreResult<PackageVariant> {
        self.variant_written(self.plan.write("create_package_variant", || {
            self.inner.create_package_variant(pv)
        }))
    }
    fn update_package_variant(&self, pv: &PackageVariant) -> StoreResult<PackageVariant> {
        self.variant_written(self.plan.write("update_package_variant", || {
            self.inner.update_package_variant(pv)
        }))
    }
    fn update_package_variant_status(&self, pv: &PackageVariant) -> StoreResult<()> {
        self.plan.write("update_package_variant_status", || {
            self.inner.update_package_variant_status(pv)
        })
    }
    fn delete_package_variant(&self, namespace: &str, name: &str) -> StoreResult<()> {
        self.plan.write("delete_package_variant", || {
            self.inner.delete_package_variant(namespace, name)
        })?;
        if self.plan.schedule.may_be_stale() {
            // A variant with finalizers is only marked for deletion: the
            // call returns it (the Kubernetes API does), else it is gone.
            let marked = self
                .inner
                .list_package_variants(Some(namespace))
                .ok()
                .and_then(|all| all.into_iter().find(|pv| pv.metadata.name == name));
            self.plan
                .own_variant((namespace.to_string(), name.to_string()), marked);
        }
        Ok(())
    }
    fn list_package_variant_sets(
        &self,
        namespace: Option<&str>,
    ) -> StoreResult<Vec<PackageVariantSet>> {
        let key = format!("PackageVariantSet {namespace:?}");
        self.plan
            .list("list_package_variant_sets", key, nothing_over, || {
                self.inner.list_package_variant_sets(namespace)
            })
    }
    fn update_package_variant_set_status(&self, pvs: &PackageVariantSet) -> StoreResult<()> {
        self.plan.write("update_package_variant_set_status", || {
            self.inner.update_package_variant_set_status(pvs)
        })
    }
    fn list_repositories(&self, namespace: &str) -> StoreResult<Vec<Repository>> {
        let key = format!("Repository {namespace}");
        self.plan.list("list_repositories", key, nothing_over, || {
            self.inner.list_repositories(namespace)
        })
    }
    fn list_objects(&self, namespace: &str) -> StoreResult<Vec<Value>> {
        let key = format!("objects {namespace}");
        self.plan.list("list_objects", key, nothing_over, || {
            self.inner.list_objects(namespace)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use porch_variants::store::memory::{MemoryObjects, MemoryRevisions};

    fn draft(ws: &str) -> NewRevision {
        let mut pr = PackageRevision::default();
        pr.metadata.namespace = "ns".into();
        pr.spec.repository = "r".into();
        pr.spec.package_name = "p".into();
        pr.spec.workspace_name = ws.into();
        NewRevision {
            revision: pr,
            files: Files::new(),
            upstream_lock: None,
        }
    }

    fn names(store: &impl PackageRevisionStore) -> Vec<String> {
        store
            .list("ns", &PrFilter::default())
            .unwrap()
            .into_iter()
            .map(|p| p.metadata.name)
            .collect()
    }

    #[test]
    fn failing_at_refuses_from_the_nth_write_on() {
        let mem = MemoryRevisions::new();
        let plan = FaultPlan::failing_at(2);
        let s = Faulty::new(&mem, plan.clone());
        assert!(s.create(draft("a")).is_ok());
        assert!(!plan.tripped());
        assert!(matches!(s.create(draft("b")), Err(StoreError::Stopped(2))));
        assert!(matches!(s.create(draft("c")), Err(StoreError::Stopped(3))));
        assert!(plan.tripped());
        assert_eq!(names(&mem), vec!["r.p.a"]);
        assert_eq!(plan.counts().writes, 1);
    }

    #[test]
    fn each_write_fault_does_what_it_says() {
        for fault in WriteFault::ALL {
            let mem = MemoryRevisions::new();
            let plan = FaultPlan::scheduled(FaultSchedule::new().write(1, fault));
            let s = Faulty::new(&mem, plan.clone());
            let err = s.create(draft("a")).unwrap_err();
            assert_eq!(
                matches!(err, StoreError::Stopped(1)),
                fault.is_crash(),
                "{fault:?}: {err}"
            );
            assert_eq!(
                matches!(err, StoreError::Conflict(_)),
                fault == WriteFault::Conflict
            );
            let written = !names(&mem).is_empty();
            assert_eq!(written, fault.writes(), "{fault:?}");
            assert_eq!(plan.crashed(), fault.is_crash());
            // After a crash the process is gone: no later write succeeds.
            let next = s.create(draft("b"));
            assert_eq!(next.is_err(), fault.is_crash(), "{fault:?}: {next:?}");
            assert_eq!(plan.injected()[0].fault, Fault::Write(fault));
        }
    }

    #[test]
    fn a_raw_stale_list_returns_the_previous_answer_of_the_same_call() {
        let mem = MemoryRevisions::new();
        let plan = FaultPlan::scheduled(
            FaultSchedule::new()
                .read(1, ReadFault::StaleRaw)
                .read(3, ReadFault::StaleRaw)
                .read(4, ReadFault::Error),
        );
        let s = Faulty::new(&mem, plan.clone());
        // No previous answer: fresh.
        assert!(names(&s).is_empty());
        s.create(draft("a")).unwrap();
        // Read 2 is fresh and remembered; read 3 lags behind the write.
        assert_eq!(names(&s), vec!["r.p.a"]);
        s.create(draft("b")).unwrap();
        assert_eq!(names(&s), vec!["r.p.a"]);
        assert!(s.list("ns", &PrFilter::default()).is_err());
        assert_eq!(names(&s), vec!["r.p.a", "r.p.b"]);
        // Another filter is another call.
        let other = PrFilter::package("r", "p");
        assert_eq!(s.list("ns", &other).unwrap().len(), 2);
        assert_eq!(plan.injected().len(), 2);
        assert_eq!(plan.counts().reads, 6);
    }

    #[test]
    fn a_stale_list_lags_behind_others_but_shows_the_process_own_writes() {
        let mem = MemoryRevisions::new();
        let stale = [2, 3, 4, 5];
        let plan = FaultPlan::scheduled(
            stale
                .iter()
                .fold(FaultSchedule::new(), |s, n| s.read(*n, ReadFault::Stale)),
        );
        let s = Faulty::new(&mem, plan.clone());
        mem.create(draft("a")).unwrap();
        mem.create(draft("gone")).unwrap();
        assert_eq!(names(&s), vec!["r.p.a", "r.p.gone"]);
        // Another writer's draft is not seen; this process's are, and its
        // deletion too.
        mem.create(draft("other")).unwrap();
        s.create(draft("mine")).unwrap();
        s.delete("ns", "r.p.gone").unwrap();
        assert_eq!(names(&s), vec!["r.p.a", "r.p.mine"]);
        // Only the objects the call selects are added: another package or
        // namespace is left out.
        let filter = PrFilter::package("r", "p");
        let fresh = s.list("ns", &filter).unwrap();
        assert_eq!(fresh.len(), 3, "read 3, fresh: a, mine, other");
        let mut package = draft("x");
        package.revision.spec.package_name = "q".into();
        s.create(package).unwrap();
        let mut namespace = draft("y");
        namespace.revision.metadata.namespace = "ns2".into();
        s.create(namespace).unwrap();
        assert_eq!(s.list("ns", &filter).unwrap(), fresh, "read 4, stale");
        // Changes of an object are read over too.
        s.update_lifecycle("ns", "r.p.mine", Lifecycle::Proposed)
            .unwrap();
        let listed = s.list("ns", &PrFilter::default()).unwrap();
        let mine = listed.iter().find(|p| p.metadata.name == "r.p.mine");
        assert_eq!(mine.map(|p| p.spec.lifecycle), Some(Lifecycle::Proposed));
        let listed: Vec<&str> = listed.iter().map(|p| p.metadata.name.as_str()).collect();
        assert_eq!(listed, ["r.p.a", "r.p.mine", "r.p.other", "r.q.x"]);
        // Read 3 had no earlier answer to repeat.
        assert_eq!(plan.injected().len(), stale.len() - 1);
    }

    #[test]
    fn a_stale_list_of_variants_shows_the_process_own_creations_and_deletions() {
        let objects = MemoryObjects::new("now");
        let plan = FaultPlan::scheduled(
            [2, 3, 4]
                .iter()
                .fold(FaultSchedule::new(), |s, n| s.read(*n, ReadFault::Stale)),
        );
        let s = Faulty::new(&objects, plan.clone());
        let variant = |name: &str, finalizer: bool| {
            let mut pv = PackageVariant::default();
            pv.metadata.namespace = "ns".into();
            pv.metadata.name = name.into();
            if finalizer {
                pv.metadata.finalizers = vec!["f".into()];
            }
            pv
        };
        let listed = |s: &Faulty<&MemoryObjects>| -> Vec<(String, bool)> {
            s.list_package_variants(None)
                .unwrap()
                .into_iter()
                .map(|p| (p.metadata.name, p.metadata.deletion_timestamp.is_some()))
                .collect()
        };
        let named = |names: &[(&str, bool)]| -> Vec<(String, bool)> {
            names.iter().map(|(n, d)| (n.to_string(), *d)).collect()
        };
        assert!(listed(&s).is_empty());
        objects
            .create_package_variant(&variant("theirs", false))
            .unwrap();
        s.create_package_variant(&variant("mine", true)).unwrap();
        s.create_package_variant(&variant("plain", false)).unwrap();
        assert_eq!(listed(&s), named(&[("mine", false), ("plain", false)]));
        // Deleting one with a finalizer marks it; the other is gone.
        s.delete_package_variant("ns", "mine").unwrap();
        s.delete_package_variant("ns", "plain").unwrap();
        assert_eq!(listed(&s), named(&[("mine", true), ("theirs", false)]));
        // Removing the last finalizer of a marked variant ends it.
        let mut mine = objects.package_variant("ns", "mine").unwrap();
        mine.metadata.finalizers.clear();
        s.update_package_variant(&mine).unwrap();
        assert_eq!(listed(&s), named(&[("theirs", false)]));
        assert_eq!(plan.injected().len(), 3);
    }

    #[test]
    fn seeded_faults_are_deterministic_and_follow_the_rate() {
        let seeded = SeededFaults {
            seed: 42,
            write_per_mille: 250,
            read_per_mille: 0,
            write_faults: WriteFault::ALL.to_vec(),
            read_faults: ReadFault::ALL.to_vec(),
        };
        let a = FaultSchedule::new().with_seeded(seeded.clone());
        let b = FaultSchedule::new().with_seeded(seeded);
        let drawn: Vec<_> = (1..=2000).map(|n| a.write_fault(n)).collect();
        assert_eq!(
            drawn,
            (1..=2000).map(|n| b.write_fault(n)).collect::<Vec<_>>()
        );
        let faulty = drawn.iter().filter(|f| f.is_some()).count();
        assert!((400..600).contains(&faulty), "{faulty}");
        for f in WriteFault::ALL {
            assert!(drawn.contains(&Some(f)), "{f:?} drawn");
        }
        assert!((1..=2000).all(|n| a.read_fault(n).is_none()));
        assert!(!a.may_be_stale());
        assert!(!a.is_empty());
        assert!(FaultSchedule::new().is_empty());
        // Explicit faults win.
        let c = a.clone().write(1, WriteFault::Conflict);
        assert_eq!(c.write_fault(1), Some(WriteFault::Conflict));
    }

    #[test]
    fn object_store_calls_are_wrapped_too() {
        let objects = MemoryObjects::new("now");
        let plan = FaultPlan::scheduled(FaultSchedule::new().write(1, WriteFault::ErrorAfter));
        let s = Faulty::new(&objects, plan.clone());
        let mut pv = PackageVariant::default();
        pv.metadata.name = "x".into();
        assert!(s.create_package_variant(&pv).is_err());
        assert_eq!(s.list_package_variants(None).unwrap().len(), 1, "written");
        assert_eq!(
            plan.counts(),
            CallCounts {
                reads: 1,
                writes: 1
            }
        );
    }
}
