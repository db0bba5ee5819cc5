//! Leader election on a `coordination.k8s.io/v1` Lease: every replica
//! watches and caches, only the Lease holder writes. The holder renews the
//! Lease every [`LeaseConfig::renew_every`]; another replica takes it over
//! once it is [`LeaseConfig::duration`] old, and the holder gives it up on
//! shutdown.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, PostParams};
use kube::Client;
use tokio::sync::watch;

/// Where the Lease is and who this replica is.
#[derive(Debug, Clone)]
pub struct LeaseConfig {
    /// Lease name.
    pub name: String,
    /// Lease namespace.
    pub namespace: String,
    /// This replica's identity (its pod name).
    pub identity: String,
    /// How long a Lease holds without renewal.
    pub duration: Duration,
    /// How often the holder renews it (and others retry).
    pub renew_every: Duration,
}

/// Leader election failed at one attempt.
#[derive(Debug, thiserror::Error)]
#[error("lease {namespace}/{name}: {source}")]
pub struct LeaseError {
    /// Lease namespace.
    pub namespace: String,
    /// Lease name.
    pub name: String,
    /// The API error.
    #[source]
    pub source: kube::Error,
}

fn now() -> MicroTime {
    MicroTime(Timestamp::now())
}

/// Whether `lease` is held by someone other than `me` and still valid.
pub fn held_by_other(lease: &Lease, me: &str, at: Timestamp) -> bool {
    let Some(spec) = &lease.spec else {
        return false;
    };
    let holder = spec.holder_identity.as_deref().unwrap_or_default();
    if holder.is_empty() || holder == me {
        return false;
    }
    let duration = i64::from(spec.lease_duration_seconds.unwrap_or(15));
    match &spec.renew_time {
        Some(MicroTime(t)) => t
            .checked_add(SignedDuration::from_secs(duration))
            .map(|expiry| expiry > at)
            .unwrap_or(false),
        None => false,
    }
}

/// One election round: creates, renews or takes over the Lease when
/// allowed; returns whether this replica holds it.
pub async fn try_acquire(client: &Client, cfg: &LeaseConfig) -> Result<bool, LeaseError> {
    let api: Api<Lease> = Api::namespaced(client.clone(), &cfg.namespace);
    let err = |source| LeaseError {
        namespace: cfg.namespace.clone(),
        name: cfg.name.clone(),
        source,
    };
    let secs = i32::try_from(cfg.duration.as_secs()).unwrap_or(i32::MAX);
    match api.get_opt(&cfg.name).await.map_err(err)? {
        None => {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(cfg.name.clone()),
                    namespace: Some(cfg.namespace.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(cfg.identity.clone()),
                    lease_duration_seconds: Some(secs),
                    acquire_time: Some(now()),
                    renew_time: Some(now()),
                    lease_transitions: Some(0),
                    ..LeaseSpec::default()
                }),
            };
            match api.create(&PostParams::default(), &lease).await {
                Ok(_) => Ok(true),
                Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
                Err(e) => Err(err(e)),
            }
        }
        Some(mut lease) => {
            if held_by_other(&lease, &cfg.identity, Timestamp::now()) {
                return Ok(false);
            }
            let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
            if spec.holder_identity.as_deref() != Some(cfg.identity.as_str()) {
                spec.holder_identity = Some(cfg.identity.clone());
                spec.acquire_time = Some(now());
                spec.lease_transitions =
                    Some(spec.lease_transitions.unwrap_or(0).saturating_add(1));
            }
            spec.renew_time = Some(now());
            spec.lease_duration_seconds = Some(secs);
            match api.replace(&cfg.name, &PostParams::default(), &lease).await {
                Ok(_) => Ok(true),
                Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
                Err(e) => Err(err(e)),
            }
        }
    }
}

/// Gives the Lease up if this replica holds it.
pub async fn release(client: &Client, cfg: &LeaseConfig) -> Result<(), LeaseError> {
    let api: Api<Lease> = Api::namespaced(client.clone(), &cfg.namespace);
    let err = |source| LeaseError {
        namespace: cfg.namespace.clone(),
        name: cfg.name.clone(),
        source,
    };
    if let Some(mut lease) = api.get_opt(&cfg.name).await.map_err(err)? {
        if let Some(spec) = lease.spec.as_mut() {
            if spec.holder_identity.as_deref() == Some(cfg.identity.as_str()) {
                spec.holder_identity = None;
                spec.renew_time = None;
                api.replace(&cfg.name, &PostParams::default(), &lease)
                    .await
                    .map_err(err)?;
            }
        }
    }
    Ok(())
}

/// Runs the election until `shutdown` flips to true, publishing whether
/// this replica leads on `leader`; releases the Lease at the end.
pub async fn run(
    client: Client,
    cfg: LeaseConfig,
    leader: watch::Sender<bool>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut last_success = tokio::time::Instant::now();
    loop {
        match try_acquire(&client, &cfg).await {
            Ok(held) => {
                last_success = tokio::time::Instant::now();
                if leader.send_replace(held) != held {
                    tracing::info!(lease = %cfg.name, identity = %cfg.identity, leader = held, "leadership changed");
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "leader election round failed");
                // Stop writing before another replica may take over.
                if last_success.elapsed() >= cfg.duration.saturating_sub(cfg.renew_every) {
                    leader.send_replace(false);
                }
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(cfg.renew_every) => {}
            _ = shutdown.wait_for(|s| *s) => break,
        }
    }
    if *leader.borrow() {
        leader.send_replace(false);
        if let Err(e) = release(&client, &cfg).await {
            tracing::warn!(error = %e, "could not release the lease");
        }
    }
}
