//! Prometheus metrics (`/metrics`): reconciles and errors by controller and
//! reason, the objects waiting for a retry (the work queue's depth beyond
//! the watch-driven work), the writes non-leaders skipped, the fuel the
//! package-editing component used, and per shard: reconciles, objects
//! owned, shards held, taken and given up.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// Labels of a controller's metrics.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ControllerLabels {
    /// `packagevariant` or `packagevariantset`.
    pub controller: String,
}

/// Labels of an error count.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ErrorLabels {
    /// `packagevariant` or `packagevariantset`.
    pub controller: String,
    /// The error's kind (`not_found`, `conflict`, `api`, `core`, ...).
    pub reason: String,
}

/// Labels of a per-shard count.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ShardLabels {
    /// The reconciler.
    pub controller: String,
    /// The shard (0 without sharding).
    pub shard: u32,
}

/// The controller's metrics.
#[derive(Debug, Default)]
pub struct Metrics {
    /// Reconciles started.
    pub reconciles: Family<ControllerLabels, Counter>,
    /// Reconciles that failed, by reason.
    pub errors: Family<ErrorLabels, Counter>,
    /// Objects waiting for a retry after an error.
    pub queue_depth: Family<ControllerLabels, Gauge>,
    /// Reconciles skipped because this replica does not hold the Lease.
    pub not_leader: Family<ControllerLabels, Counter>,
    /// Fuel the component used (0 with the native core).
    pub component_fuel: Counter,
    /// Reconciles started, by shard.
    pub shard_reconciles: Family<ShardLabels, Counter>,
    /// Objects waiting for a retry after an error, by shard.
    pub shard_queue_depth: Family<ShardLabels, Gauge>,
    /// Objects of each controller in the shards this replica holds.
    pub owned: Family<ControllerLabels, Gauge>,
    /// The shard Leases' own figures.
    pub shards: super::shard::ShardMetrics,
}

impl Metrics {
    /// The metrics, registered under the `porch_variants` prefix.
    pub fn register(registry: &mut Registry) -> Self {
        let m = Metrics::default();
        let sub = registry.sub_registry_with_prefix(super::FIELD_MANAGER.replace('-', "_"));
        sub.register("reconciles", "Reconciles started", m.reconciles.clone());
        sub.register(
            "reconcile_errors",
            "Reconciles that failed, by reason",
            m.errors.clone(),
        );
        sub.register(
            "queue_depth",
            "Objects waiting for a retry after an error",
            m.queue_depth.clone(),
        );
        sub.register(
            "not_leader_skips",
            "Reconciles skipped because this replica does not hold the Lease",
            m.not_leader.clone(),
        );
        sub.register(
            "component_fuel",
            "Fuel the package-editing component used, about one unit per WebAssembly instruction",
            m.component_fuel.clone(),
        );
        sub.register(
            "shard_reconciles",
            "Reconciles started, by controller and shard",
            m.shard_reconciles.clone(),
        );
        sub.register(
            "shard_queue_depth",
            "Objects waiting for a retry after an error, by controller and shard",
            m.shard_queue_depth.clone(),
        );
        sub.register(
            "owned_objects",
            "Objects of each controller in the shards this replica holds",
            m.owned.clone(),
        );
        sub.register(
            "shards_held",
            "Shards this replica holds",
            m.shards.held.clone(),
        );
        sub.register(
            "shard_members",
            "Live replicas seen in the shard Leases",
            m.shards.members.clone(),
        );
        sub.register(
            "shards_taken",
            "Shards this replica took",
            m.shards.taken.clone(),
        );
        sub.register(
            "shards_given_up",
            "Shards this replica gave up to make room for another",
            m.shards.given_up.clone(),
        );
        m
    }

    /// Counts a reconcile of `controller` in `shard`.
    pub fn shard_reconcile(&self, controller: &str, shard: u32) {
        self.shard_reconciles
            .get_or_create(&ShardLabels {
                controller: controller.to_string(),
                shard,
            })
            .inc();
    }

    /// Brings the fuel counter up to `total`, the core's fuel used so far
    /// (reconciles running at once may report out of order; the counter
    /// only moves up).
    pub fn record_fuel(&self, total: Option<u64>) {
        if let Some(total) = total {
            self.component_fuel
                .inner()
                .fetch_max(total, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// Labels for `controller`.
    pub fn labels(controller: &str) -> ControllerLabels {
        ControllerLabels {
            controller: controller.to_string(),
        }
    }
}

/// The registry in the text exposition format.
pub fn encode(registry: &Registry) -> String {
    let mut out = String::new();
    if prometheus_client::encoding::text::encode(&mut out, registry).is_err() {
        out.clear();
    }
    out
}
