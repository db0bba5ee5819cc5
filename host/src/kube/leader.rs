//! Leader election on a `coordination.k8s.io/v1` Lease: every replica
//! watches and caches, only the Lease holder writes. The holder renews the
//! Lease every [`LeaseConfig::renew_every`]; another replica takes it over
//! once it has not seen it renewed for [`LeaseConfig::duration`] (on its
//! own clock), and the holder gives it up on shutdown.

use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
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

/// The Lease record another replica holds, as last seen, and when this
/// replica saw it change (client-go's `observedRecord`/`observedTime`).
#[derive(Debug, Default, Clone)]
pub struct Observed {
    record: Option<(String, Option<MicroTime>)>,
    at: Option<Instant>,
}

/// Whether `lease` is held by someone other than `me` and still valid.
///
/// Expiry is measured on this replica's clock, from when it saw the
/// holder or its `renewTime` change (`observed`, kept across rounds), not
/// from the holder's `renewTime` itself: with clocks that disagree, a
/// renewTime read against the local clock could make a live Lease look
/// expired, and two replicas lead. As in client-go, a Lease seen for the
/// first time counts as just renewed.
pub fn held_by_other(lease: &Lease, me: &str, observed: &mut Observed, now: Instant) -> bool {
    let Some(spec) = &lease.spec else {
        return false;
    };
    let holder = spec.holder_identity.as_deref().unwrap_or_default();
    if holder.is_empty() || holder == me {
        return false;
    }
    let record = (holder.to_string(), spec.renew_time.clone());
    if observed.record.as_ref() != Some(&record) {
        observed.record = Some(record);
        observed.at = Some(now);
    }
    let seconds = spec.lease_duration_seconds.unwrap_or(15);
    let duration = Duration::from_secs(u64::try_from(seconds).unwrap_or(0));
    observed
        .at
        .is_some_and(|at| now.saturating_duration_since(at) < duration)
}

/// One election round: creates, renews or takes over the Lease when
/// allowed; returns whether this replica holds it.
pub async fn try_acquire(
    client: &Client,
    cfg: &LeaseConfig,
    observed: &mut Observed,
) -> Result<bool, LeaseError> {
    let api: Api<Lease> = Api::namespaced(client.clone(), &cfg.namespace);
    let err = |source| LeaseError {
        namespace: cfg.namespace.clone(),
        name: cfg.name.clone(),
        source,
    };
    // Whole seconds, rounded up: others wait at least as long as the
    // holder counts on.
    let whole = cfg.duration.as_secs() + u64::from(cfg.duration.subsec_nanos() > 0);
    let secs = i32::try_from(whole).unwrap_or(i32::MAX);
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
            if held_by_other(&lease, &cfg.identity, observed, Instant::now()) {
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
    let mut observed = Observed::default();
    // A round that hangs (the client has no read timeout) must not keep
    // this replica leading past the point where another may take over.
    let deadline = cfg.duration.saturating_sub(cfg.renew_every);
    loop {
        let round = tokio::time::timeout(deadline, try_acquire(&client, &cfg, &mut observed));
        match round.await {
            Ok(Ok(held)) => {
                last_success = tokio::time::Instant::now();
                if leader.send_replace(held) != held {
                    tracing::info!(lease = %cfg.name, identity = %cfg.identity, leader = held, "leadership changed");
                }
            }
            failed => {
                match failed {
                    Ok(Err(e)) => tracing::warn!(error = %e, "leader election round failed"),
                    _ => tracing::warn!(
                        seconds = deadline.as_secs(),
                        "leader election round timed out"
                    ),
                }
                // Stop writing before another replica may take over.
                if last_success.elapsed() >= deadline {
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
        match tokio::time::timeout(cfg.renew_every, release(&client, &cfg)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "could not release the lease"),
            Err(_) => tracing::warn!("releasing the lease timed out; it expires on its own"),
        }
    }
}
