//! Kubernetes mode: the operator that drives Porch.
//!
//! * [`api`] — the Porch resources typed for the Kubernetes client;
//! * [`cache`] — reflector caches and the PackageRevision indexes;
//! * [`store`] — the store traits over the caches (reads) and the API
//!   (writes);
//! * [`controller`] — reconcile, error policy and event mapping;
//! * [`prc`] and [`repo`] — the v1alpha2 PackageRevision and the
//!   Repository controllers (reconcilers `packagerevisions`, `repositories`);
//! * [`run`] — `porch-variants controller`: the wiring;
//! * [`leader`] — leader election on a `coordination.k8s.io` Lease;
//! * [`shard`] — the objects split across replicas by shard Leases;
//! * [`metrics`] and [`health`] — `/metrics`, `/healthz`, `/readyz`.

pub mod api;
pub mod cache;
pub mod controller;
pub mod health;
pub mod leader;
pub mod metrics;
pub mod prc;
pub mod recent;
pub mod repo;
pub mod run;
pub mod shard;
pub mod store;
pub mod v1alpha2;

/// The controller's name: its server-side-apply field manager, its Lease
/// name and its metrics prefix.
pub const FIELD_MANAGER: &str = "porch-variants";
