//! The flags of the Repository controller (`REPO/config.go`) and of the
//! PackageRevision controller (`PRC/config.go`) with upstream's defaults.
//! In the binary each flag is `--<reconciler name>.<flag>`
//! (`--repositories.full-sync-frequency`); [`RepositoryControllerConfig::bind_flags`]
//! and [`PackageRevisionControllerConfig::bind_flags`] take that prefix.

use super::flags::{self, FlagError, Kind, Value};
use super::time::Duration;

/// Default workers of the Repository controller.
pub const DEFAULT_MAX_CONCURRENT_RECONCILES: i64 = 100;
/// Default capacity of the full-sync semaphore.
pub const DEFAULT_MAX_CONCURRENT_SYNCS: i64 = 50;
/// What `InitializeSyncLimiter` uses for a non-positive capacity (100, not
/// the flag's 50: upstream's two defaults disagree, §13.14, and the
/// repo-sync-limiter cases pin 100).
pub const SYNC_LIMITER_FALLBACK: i64 = 100;
/// Default period of health checks.
pub const DEFAULT_HEALTH_CHECK_FREQUENCY: Duration = Duration::from_mins(5);
/// Default period of full syncs.
pub const DEFAULT_FULL_SYNC_FREQUENCY: Duration = Duration::from_hours(1);
/// Default age after which a `Reconciling` condition is taken as stale.
pub const DEFAULT_SYNC_STALE_TIMEOUT: Duration = Duration::from_mins(20);
/// Default retries of Git operations.
pub const DEFAULT_REPO_OPERATION_RETRY_ATTEMPTS: i64 = 3;
/// Default cache type.
pub const DEFAULT_CACHE_TYPE: &str = "DB";
/// Default Git cache directory.
pub const DEFAULT_CACHE_DIRECTORY: &str = "/cache";

/// The settings the sync decisions read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncSettings {
    /// Period of health checks of a healthy Repository.
    pub health_check_frequency: Duration,
    /// Period of full syncs without a cron schedule (and for an invalid one).
    pub full_sync_frequency: Duration,
    /// Age of a `Reconciling` condition after which the sync is taken as
    /// dead; zero or negative means 20 minutes.
    pub sync_stale_timeout: Duration,
}

impl Default for SyncSettings {
    fn default() -> Self {
        SyncSettings {
            health_check_frequency: DEFAULT_HEALTH_CHECK_FREQUENCY,
            full_sync_frequency: DEFAULT_FULL_SYNC_FREQUENCY,
            sync_stale_timeout: DEFAULT_SYNC_STALE_TIMEOUT,
        }
    }
}

/// The Repository controller's flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepositoryControllerConfig {
    /// `max-concurrent-reconciles` (100).
    pub max_concurrent_reconciles: i64,
    /// `max-concurrent-syncs` (50).
    pub max_concurrent_syncs: i64,
    /// `cache-type`: `DB` or `CR`, any case (DB).
    pub cache_type: String,
    /// `cache-directory` (`/cache`).
    pub cache_directory: String,
    /// `health-check-frequency` (5m).
    pub health_check_frequency: Duration,
    /// `full-sync-frequency` (1h).
    pub full_sync_frequency: Duration,
    /// `sync-stale-timeout` (20m).
    pub sync_stale_timeout: Duration,
    /// `repo-operation-retry-attempts` (3).
    pub repo_operation_retry_attempts: i64,
    /// `use-user-defined-ca-bundle` (false).
    pub use_user_defined_ca_bundle: bool,
    /// `create-v1alpha2-rpkg` (false): make v1alpha2 PackageRevisions for
    /// Repositories annotated for the migration.
    pub create_v1alpha2_rpkg: bool,
    /// `push-drafts-to-git` (false): the DB cache pushes draft and proposed
    /// branches too.
    pub push_drafts_to_git: bool,
}

impl Default for RepositoryControllerConfig {
    /// `InitDefaults`.
    fn default() -> Self {
        RepositoryControllerConfig {
            max_concurrent_reconciles: DEFAULT_MAX_CONCURRENT_RECONCILES,
            max_concurrent_syncs: DEFAULT_MAX_CONCURRENT_SYNCS,
            cache_type: DEFAULT_CACHE_TYPE.to_string(),
            cache_directory: DEFAULT_CACHE_DIRECTORY.to_string(),
            health_check_frequency: DEFAULT_HEALTH_CHECK_FREQUENCY,
            full_sync_frequency: DEFAULT_FULL_SYNC_FREQUENCY,
            sync_stale_timeout: DEFAULT_SYNC_STALE_TIMEOUT,
            repo_operation_retry_attempts: DEFAULT_REPO_OPERATION_RETRY_ATTEMPTS,
            use_user_defined_ca_bundle: false,
            create_v1alpha2_rpkg: false,
            push_drafts_to_git: false,
        }
    }
}

/// The Repository controller's flag names (after the prefix) and types.
const REPOSITORY_FLAGS: &[(&str, Kind)] = &[
    ("max-concurrent-reconciles", Kind::Int),
    ("max-concurrent-syncs", Kind::Int),
    ("cache-type", Kind::String),
    ("cache-directory", Kind::String),
    ("health-check-frequency", Kind::Duration),
    ("full-sync-frequency", Kind::Duration),
    ("sync-stale-timeout", Kind::Duration),
    ("repo-operation-retry-attempts", Kind::Int),
    ("use-user-defined-ca-bundle", Kind::Bool),
    ("create-v1alpha2-rpkg", Kind::Bool),
    ("push-drafts-to-git", Kind::Bool),
];

/// One line the controller logs, with its key/value pairs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    /// The message.
    pub message: String,
    /// Key/value pairs, values as Go prints them.
    pub fields: Vec<(String, String)>,
}

impl RepositoryControllerConfig {
    /// `BindFlags(prefix)` then parse `argv`: defaults, overridden by the
    /// flags given. Values are not validated (see [`Self::validate`]).
    pub fn bind_flags(prefix: &str, argv: &[String]) -> Result<Self, FlagError> {
        let parsed = flags::parse(prefix, REPOSITORY_FLAGS, argv)?;
        let mut c = RepositoryControllerConfig::default();
        for (name, value) in parsed.values {
            match (name.as_str(), value) {
                ("max-concurrent-reconciles", Value::Int(v)) => c.max_concurrent_reconciles = v,
                ("max-concurrent-syncs", Value::Int(v)) => c.max_concurrent_syncs = v,
                ("cache-type", Value::String(v)) => c.cache_type = v,
                ("cache-directory", Value::String(v)) => c.cache_directory = v,
                ("health-check-frequency", Value::Duration(v)) => c.health_check_frequency = v,
                ("full-sync-frequency", Value::Duration(v)) => c.full_sync_frequency = v,
                ("sync-stale-timeout", Value::Duration(v)) => c.sync_stale_timeout = v,
                ("repo-operation-retry-attempts", Value::Int(v)) => {
                    c.repo_operation_retry_attempts = v
                }
                ("use-user-defined-ca-bundle", Value::Bool(v)) => c.use_user_defined_ca_bundle = v,
                ("create-v1alpha2-rpkg", Value::Bool(v)) => c.create_v1alpha2_rpkg = v,
                ("push-drafts-to-git", Value::Bool(v)) => c.push_drafts_to_git = v,
                _ => {}
            }
        }
        Ok(c)
    }

    /// `validateConfig`: non-positive frequencies, timeouts and limits
    /// become their defaults.
    pub fn validate(&mut self) {
        if self.health_check_frequency <= Duration::ZERO {
            self.health_check_frequency = DEFAULT_HEALTH_CHECK_FREQUENCY;
        }
        if self.full_sync_frequency <= Duration::ZERO {
            self.full_sync_frequency = DEFAULT_FULL_SYNC_FREQUENCY;
        }
        if self.sync_stale_timeout <= Duration::ZERO {
            self.sync_stale_timeout = DEFAULT_SYNC_STALE_TIMEOUT;
        }
        if self.max_concurrent_reconciles <= 0 {
            self.max_concurrent_reconciles = DEFAULT_MAX_CONCURRENT_RECONCILES;
        }
        if self.max_concurrent_syncs <= 0 {
            self.max_concurrent_syncs = DEFAULT_MAX_CONCURRENT_SYNCS;
        }
        if self.repo_operation_retry_attempts <= 0 {
            self.repo_operation_retry_attempts = DEFAULT_REPO_OPERATION_RETRY_ATTEMPTS;
        }
    }

    /// The settings of the sync decisions.
    pub fn sync_settings(&self) -> SyncSettings {
        SyncSettings {
            health_check_frequency: self.health_check_frequency,
            full_sync_frequency: self.full_sync_frequency,
            sync_stale_timeout: self.sync_stale_timeout,
        }
    }

    /// `LogConfig`: the configuration line, then one line per frequency
    /// below its recommended default.
    pub fn log_config(&self) -> Vec<LogLine> {
        let kv = |k: &str, v: String| (k.to_string(), v);
        let mut lines = vec![LogLine {
            message: "Repository controller configuration".to_string(),
            fields: vec![
                kv(
                    "healthCheckFrequency",
                    self.health_check_frequency.to_string(),
                ),
                kv("fullSyncFrequency", self.full_sync_frequency.to_string()),
                kv(
                    "maxConcurrentReconciles",
                    self.max_concurrent_reconciles.to_string(),
                ),
                kv("maxConcurrentSyncs", self.max_concurrent_syncs.to_string()),
                kv("syncStaleTimeout", self.sync_stale_timeout.to_string()),
                kv(
                    "repoOperationRetryAttempts",
                    self.repo_operation_retry_attempts.to_string(),
                ),
                kv("cacheType", self.cache_type.clone()),
                kv("cacheDirectory", self.cache_directory.clone()),
            ],
        }];
        let low = |message: &str, configured: Duration, recommended: Duration| LogLine {
            message: message.to_string(),
            fields: vec![
                kv("configured", configured.to_string()),
                kv("recommended", recommended.to_string()),
            ],
        };
        if self.health_check_frequency < DEFAULT_HEALTH_CHECK_FREQUENCY {
            lines.push(low(
                "Health check frequency is lower than recommended default",
                self.health_check_frequency,
                DEFAULT_HEALTH_CHECK_FREQUENCY,
            ));
        }
        if self.full_sync_frequency < DEFAULT_FULL_SYNC_FREQUENCY {
            lines.push(low(
                "Full sync frequency is lower than recommended default",
                self.full_sync_frequency,
                DEFAULT_FULL_SYNC_FREQUENCY,
            ));
        }
        lines
    }
}

/// `InitializeSyncLimiter`: the capacity of the full-sync semaphore,
/// [`SYNC_LIMITER_FALLBACK`] when the configured value is not positive.
pub fn sync_limiter_capacity(max_concurrent_syncs: i64) -> i64 {
    if max_concurrent_syncs <= 0 {
        SYNC_LIMITER_FALLBACK
    } else {
        max_concurrent_syncs
    }
}

/// Default workers of the PackageRevision controller.
pub const PR_DEFAULT_MAX_CONCURRENT_RECONCILES: i64 = 50;
/// Default render concurrency (0 = unbounded).
pub const PR_DEFAULT_MAX_CONCURRENT_RENDERS: i64 = 20;
/// Default RequeueAfter when the render semaphore is full.
pub const PR_DEFAULT_RENDER_REQUEUE_DELAY: Duration = Duration::from_secs(2);
/// Default retries of Git operations (clone from Git).
pub const PR_DEFAULT_REPO_OPERATION_RETRY_ATTEMPTS: i64 = 3;
/// Default gRPC message limit of the function runner (6 MiB).
pub const PR_DEFAULT_MAX_GRPC_MESSAGE_SIZE: i64 = 6 * 1024 * 1024;

/// The PackageRevision controller's flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageRevisionControllerConfig {
    /// `max-concurrent-reconciles` (50).
    pub max_concurrent_reconciles: i64,
    /// `max-concurrent-renders` (20; 0 = unbounded).
    pub max_concurrent_renders: i64,
    /// `render-requeue-delay` (2s).
    pub render_requeue_delay: Duration,
    /// `repo-operation-retry-attempts` (3).
    pub repo_operation_retry_attempts: i64,
    /// `max-grpc-message-size` (6291456).
    pub max_grpc_message_size: i64,
}

impl Default for PackageRevisionControllerConfig {
    /// `InitDefaults`.
    fn default() -> Self {
        PackageRevisionControllerConfig {
            max_concurrent_reconciles: PR_DEFAULT_MAX_CONCURRENT_RECONCILES,
            max_concurrent_renders: PR_DEFAULT_MAX_CONCURRENT_RENDERS,
            render_requeue_delay: PR_DEFAULT_RENDER_REQUEUE_DELAY,
            repo_operation_retry_attempts: PR_DEFAULT_REPO_OPERATION_RETRY_ATTEMPTS,
            max_grpc_message_size: PR_DEFAULT_MAX_GRPC_MESSAGE_SIZE,
        }
    }
}

/// The PackageRevision controller's flag names and types.
const PACKAGE_REVISION_FLAGS: &[(&str, Kind)] = &[
    ("max-concurrent-reconciles", Kind::Int),
    ("max-concurrent-renders", Kind::Int),
    ("render-requeue-delay", Kind::Duration),
    ("repo-operation-retry-attempts", Kind::Int),
    ("max-grpc-message-size", Kind::Int),
];

impl PackageRevisionControllerConfig {
    /// `BindFlags(prefix)` then parse `argv`.
    pub fn bind_flags(prefix: &str, argv: &[String]) -> Result<Self, FlagError> {
        let parsed = flags::parse(prefix, PACKAGE_REVISION_FLAGS, argv)?;
        let mut c = PackageRevisionControllerConfig::default();
        for (name, value) in parsed.values {
            match (name.as_str(), value) {
                ("max-concurrent-reconciles", Value::Int(v)) => c.max_concurrent_reconciles = v,
                ("max-concurrent-renders", Value::Int(v)) => c.max_concurrent_renders = v,
                ("render-requeue-delay", Value::Duration(v)) => c.render_requeue_delay = v,
                ("repo-operation-retry-attempts", Value::Int(v)) => {
                    c.repo_operation_retry_attempts = v
                }
                ("max-grpc-message-size", Value::Int(v)) => c.max_grpc_message_size = v,
                _ => {}
            }
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn repository_flags_override_defaults() {
        let c = RepositoryControllerConfig::bind_flags(
            "repositories.",
            &args(&[
                "--repositories.full-sync-frequency=30m",
                "--repositories.cache-type=cr",
                "--repositories.create-v1alpha2-rpkg",
            ]),
        )
        .unwrap();
        assert_eq!(c.full_sync_frequency, Duration::from_mins(30));
        assert_eq!(c.cache_type, "cr");
        assert!(c.create_v1alpha2_rpkg);
        assert_eq!(c.max_concurrent_syncs, 50);
    }

    #[test]
    fn validation_restores_defaults_for_non_positive_values() {
        let mut c = RepositoryControllerConfig {
            health_check_frequency: Duration::ZERO,
            full_sync_frequency: Duration::from_secs(-1),
            max_concurrent_syncs: 0,
            ..RepositoryControllerConfig::default()
        };
        c.validate();
        assert_eq!(c, RepositoryControllerConfig::default());
    }

    #[test]
    fn log_config_warns_once_per_low_frequency() {
        let c = RepositoryControllerConfig {
            health_check_frequency: Duration::from_mins(1),
            ..RepositoryControllerConfig::default()
        };
        let lines = c.log_config();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].fields[0].1, "1m0s");
        assert_eq!(lines[1].fields[1].1, "5m0s");
    }
}
