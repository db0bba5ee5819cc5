//! Sharding of every controller across replicas (`--shards N`).
//!
//! Each object belongs to one of N shards by the FNV-1a hash of
//! `namespace/name`, as upstream's sharded controllers assign them. Each
//! shard is a `coordination.k8s.io/v1` Lease (`<lease-name>-s<N>-shard-<k>`),
//! held by at most one replica, taken and renewed exactly as the leader
//! Lease is ([`super::leader::try_acquire`]: optimistic concurrency on the
//! Lease, expiry measured on the taker's own clock). Each replica also
//! renews a member Lease (`<lease-name>-s<N>-member-<identity>`); the live
//! members set every replica's share, `ceil(N / members)` shards, and the
//! shards a replica prefers are ranked by rendezvous hashing of its
//! identity and the shard, so replicas rarely contend for the same one. A
//! shard that no replica has taken for a whole Lease duration (a member
//! that counts but never takes its share) is taken beyond the share.
//!
//! **Fencing.** A replica reconciles an object only while the gate of its
//! shard is open ([`Gates`]), and every write the reconcile makes, to the
//! API server or to Git, checks the gate again. A gate closes when the
//! replica gives the shard up (its share shrank: a replica joined), when
//! the shard rounds end (even by a panic: their senders close every gate
//! when dropped), or when the shard's Lease was last renewed longer ago
//! than the Lease duration less one renewal period, counted from before
//! the renewal was sent. A shard given up is not released: it is left to
//! expire, so another replica takes it only after the Lease duration, by
//! which time this one has stopped writing it for at least one renewal
//! period. A replica that dies has its shards taken over the same way.
//! No replica holds a shard while the leader Lease is held (replicas not
//! sharded are writing) or while a live replica splits the objects into
//! another number of shards (a change of `--shards` rolling out).
//!
//! What is fenced is the reconcile of each object: the objects a
//! reconcile writes on the way (a set's variants, a variant's drafts)
//! may belong to other shards, and are written as two controllers of one
//! process write them, under the API server's optimistic concurrency and
//! field ownership, and Git's leased pushes.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, ListParams};
use kube::{Client, ResourceExt};
use tokio::sync::{mpsc, watch};

use super::leader::{self, LeaseConfig, Observed};

/// FNV-1a, 64 bits.
pub fn fnv1a(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The shard of `namespace/name` among `shards` (0 when `shards` is 0).
pub fn shard_of(namespace: &str, name: &str, shards: u32) -> u32 {
    if shards == 0 {
        return 0;
    }
    let h = fnv1a(&format!("{namespace}/{name}"));
    u32::try_from(h % u64::from(shards)).unwrap_or(0)
}

/// How much `identity` wants `shard` (rendezvous hashing: the replicas
/// rank every shard differently, and a change of members moves only the
/// shards it must).
pub fn weight(identity: &str, shard: u32) -> u64 {
    fnv1a(&format!("{identity}#{shard}"))
}

/// Which objects this replica may write: one gate per shard (one gate for
/// everything without sharding: the leader Lease's).
#[derive(Debug, Clone)]
pub struct Gates {
    gates: Arc<Vec<watch::Receiver<bool>>>,
    sharded: bool,
}

impl Gates {
    /// Everything behind one gate (leader election, or none).
    pub fn single(leader: watch::Receiver<bool>) -> Self {
        Gates {
            gates: Arc::new(vec![leader]),
            sharded: false,
        }
    }

    /// One gate per shard.
    pub fn sharded(gates: Vec<watch::Receiver<bool>>) -> Self {
        Gates {
            gates: Arc::new(gates),
            sharded: true,
        }
    }

    /// Whether objects are split across replicas.
    pub fn is_sharded(&self) -> bool {
        self.sharded
    }

    /// The number of shards (1 without sharding).
    pub fn shards(&self) -> u32 {
        u32::try_from(self.gates.len()).unwrap_or(u32::MAX)
    }

    /// The shard of `namespace/name`.
    pub fn shard_of(&self, namespace: &str, name: &str) -> u32 {
        shard_of(namespace, name, self.shards())
    }

    /// The gate of `namespace/name`'s shard.
    pub fn gate(&self, namespace: &str, name: &str) -> watch::Receiver<bool> {
        let k = usize::try_from(self.shard_of(namespace, name)).unwrap_or(0);
        self.gates
            .get(k)
            .or_else(|| self.gates.first())
            .cloned()
            .unwrap_or_else(|| watch::channel(false).1)
    }

    /// Whether this replica may write `namespace/name` now.
    pub fn open(&self, namespace: &str, name: &str) -> bool {
        self.is_open(&self.gate(namespace, name))
    }

    /// A shard's gate is open while the shard rounds run and say so (the
    /// gates of rounds that stopped, even by a panic, are closed).
    fn is_open(&self, gate: &watch::Receiver<bool>) -> bool {
        *gate.borrow() && (!self.sharded || gate.has_changed().is_ok())
    }

    /// The shards whose gates are open.
    pub fn held(&self) -> BTreeSet<u32> {
        self.gates
            .iter()
            .enumerate()
            .filter(|(_, g)| self.is_open(g))
            .filter_map(|(k, _)| u32::try_from(k).ok())
            .collect()
    }
}

/// What one round decides for this replica's shards.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Held and renewed.
    pub keep: Vec<u32>,
    /// Held and given up (left to expire).
    pub drop: Vec<u32>,
    /// Not held by a live replica: to take.
    pub take: Vec<u32>,
}

/// This replica's share: `ceil(shards / members)`.
pub fn share(shards: u32, members: usize) -> usize {
    let members = members.max(1);
    let shards = usize::try_from(shards).unwrap_or(usize::MAX);
    shards.div_ceil(members)
}

/// The round's plan: keep the held shards this replica prefers up to its
/// share, give up the rest, and take free shards (in its order of
/// preference) while under its share.
pub fn plan(
    identity: &str,
    shards: u32,
    members: usize,
    held: &BTreeSet<u32>,
    free: &BTreeSet<u32>,
) -> Plan {
    let target = share(shards, members);
    let by_preference = |set: &BTreeSet<u32>| {
        let mut v: Vec<u32> = set.iter().copied().collect();
        v.sort_by_key(|k| std::cmp::Reverse(weight(identity, *k)));
        v
    };
    let mut keep = by_preference(held);
    let drop = keep.split_off(target.min(keep.len()));
    let room = target.saturating_sub(keep.len());
    let take = by_preference(&free.difference(held).copied().collect())
        .into_iter()
        .take(room)
        .collect();
    Plan { keep, drop, take }
}

/// Where the shard Leases are and how long they hold.
#[derive(Debug, Clone)]
pub struct ShardConfig {
    /// The Leases' name prefix, namespace, this replica's identity,
    /// duration and renewal period.
    pub lease: LeaseConfig,
    /// The number of shards.
    pub shards: u32,
}

impl ShardConfig {
    fn named(&self, name: String) -> LeaseConfig {
        LeaseConfig {
            name,
            ..self.lease.clone()
        }
    }

    /// The Leases' names start with the prefix and the number of shards:
    /// replicas split another way never share a Lease, and see each other.
    fn group(&self) -> String {
        format!("{}-s{}", self.lease.name, self.shards)
    }

    /// The Lease of shard `k`.
    pub fn shard_lease(&self, k: u32) -> String {
        format!("{}-shard-{k}", self.group())
    }

    /// This replica's member Lease.
    pub fn member_lease(&self) -> String {
        format!(
            "{}-member-{}",
            self.group(),
            dns_label(&self.lease.identity)
        )
    }
}

/// `s` as a DNS label's characters (lower case, `-` for anything else).
fn dns_label(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

/// What the replica knows of the Leases, kept across rounds.
#[derive(Debug, Default)]
struct State {
    observed: HashMap<String, Observed>,
    /// Held shards, with when their last renewal was sent.
    renewed: BTreeMap<u32, Instant>,
    /// Shards no live replica holds, since when.
    free_since: BTreeMap<u32, Instant>,
    rounds: u64,
}

/// Metrics of the shards: held by this replica, and taken or given up.
#[derive(Debug, Clone, Default)]
pub struct ShardMetrics {
    /// Shards this replica holds.
    pub held: prometheus_client::metrics::gauge::Gauge,
    /// Live members seen.
    pub members: prometheus_client::metrics::gauge::Gauge,
    /// Shards taken.
    pub taken: prometheus_client::metrics::counter::Counter,
    /// Shards given up.
    pub given_up: prometheus_client::metrics::counter::Counter,
}

/// The gates' senders; dropped (the rounds ended, by a panic or an abort
/// too), they close every gate first, so no write goes on without them.
struct Senders(Vec<watch::Sender<bool>>);

impl Senders {
    fn close(&self, k: u32) {
        if let Some(g) = usize::try_from(k).ok().and_then(|i| self.0.get(i)) {
            g.send_replace(false);
        }
    }

    fn close_all(&self) {
        for g in &self.0 {
            g.send_replace(false);
        }
    }
}

impl Drop for Senders {
    fn drop(&mut self) {
        self.close_all();
    }
}

/// Why this replica holds no shard this round although it could.
#[derive(Debug, Clone, PartialEq, Eq)]
enum HoldOff {
    /// The leader Lease is held: replicas not sharded are writing.
    Leader(String),
    /// A live replica splits the objects into another number of shards.
    OtherSplit(String),
}

/// What the group's Leases say this round.
#[derive(Debug, Default)]
struct Seen {
    members: usize,
    taken_by_others: BTreeSet<u32>,
    hold_off: Option<HoldOff>,
}

/// Reads the Leases of the namespace: the live members of this split, the
/// shards other live replicas hold, and anything that forbids holding
/// shards at all (the leader Lease held, or another split alive).
fn read_leases(cfg: &ShardConfig, state: &mut State, leases: &[Lease]) -> Seen {
    let now = Instant::now();
    let me = cfg.lease.identity.as_str();
    let member = cfg.member_lease();
    let members_prefix = format!("{}-member-", cfg.group());
    let shard_prefix = format!("{}-shard-", cfg.group());
    let other_split = format!("{}-s", cfg.lease.name);
    let mut seen = Seen {
        members: 1,
        ..Seen::default()
    };
    let names: BTreeSet<String> = leases.iter().map(|l| l.name_any()).collect();
    state.observed.retain(|n, _| names.contains(n));
    for lease in leases {
        let name = lease.name_any();
        let observed = state.observed.entry(name.clone()).or_default();
        let live_other = leader::held_by_other(lease, me, observed, now);
        if !live_other {
            continue;
        }
        if name == cfg.lease.name {
            seen.hold_off = Some(HoldOff::Leader(name));
        } else if let Some(k) = name
            .strip_prefix(&shard_prefix)
            .and_then(|k| k.parse::<u32>().ok())
        {
            seen.taken_by_others.insert(k);
        } else if name.starts_with(&members_prefix) {
            if name != member {
                seen.members += 1;
            }
        } else if name
            .strip_prefix(&other_split)
            .and_then(|rest| rest.split_once("-member-"))
            .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        {
            seen.hold_off = Some(HoldOff::OtherSplit(name));
        }
    }
    seen
}

/// One round: renews the member Lease, reads every Lease of the
/// namespace, and keeps, gives up and takes shards per [`plan`] (the
/// renewals and takes run at once). Gates open for shards held; newly
/// held shards are sent on `gained`.
async fn round(
    client: &Client,
    cfg: &ShardConfig,
    state: &mut State,
    gates: &Senders,
    gained: &mpsc::UnboundedSender<u32>,
    metrics: &ShardMetrics,
) -> Result<(), leader::LeaseError> {
    let member = cfg.member_lease();
    let mut mine = Observed::default();
    leader::try_acquire(client, &cfg.named(member), &mut mine).await?;
    state.rounds += 1;
    let api: Api<Lease> = Api::namespaced(client.clone(), &cfg.lease.namespace);
    let leases = api
        .list(&ListParams::default())
        .await
        .map_err(|source| leader::LeaseError {
            namespace: cfg.lease.namespace.clone(),
            name: format!("{}-*", cfg.group()),
            source,
        })?;
    let seen = read_leases(cfg, state, &leases.items);
    metrics
        .members
        .set(i64::try_from(seen.members).unwrap_or(i64::MAX));
    if let Some(why) = &seen.hold_off {
        if !state.renewed.is_empty() {
            tracing::warn!(
                ?why,
                "another replica may write these objects: every shard given up"
            );
        }
        for k in std::mem::take(&mut state.renewed).into_keys() {
            gates.close(k);
            metrics.given_up.inc();
        }
        return Ok(());
    }
    // The first round only announces this replica: replicas started
    // together see each other before any takes a share.
    if state.rounds == 1 {
        return Ok(());
    }
    let now = Instant::now();
    let held: BTreeSet<u32> = state.renewed.keys().copied().collect();
    let free: BTreeSet<u32> = (0..cfg.shards)
        .filter(|k| !seen.taken_by_others.contains(k) && !held.contains(k))
        .collect();
    state.free_since.retain(|k, _| free.contains(k));
    for k in &free {
        state.free_since.entry(*k).or_insert(now);
    }
    let mut plan = plan(&cfg.lease.identity, cfg.shards, seen.members, &held, &free);
    // A shard nobody has taken for a whole Lease duration (a member that
    // counts but never takes its share: crashing, or stuck) is taken
    // beyond the share; the excess is given up once that member does.
    for (k, since) in &state.free_since {
        if now.duration_since(*since) >= cfg.lease.duration && !plan.take.contains(k) {
            plan.take.push(*k);
        }
    }
    for k in &plan.drop {
        // Stop writing now; the Lease expires on its own.
        gates.close(*k);
        state.renewed.remove(k);
        metrics.given_up.inc();
        tracing::info!(shard = k, members = seen.members, "shard given up");
    }
    let attempts = plan.keep.iter().chain(&plan.take).map(|k| {
        let name = cfg.shard_lease(*k);
        let mut observed = state.observed.get(&name).cloned().unwrap_or_default();
        let lease = cfg.named(name.clone());
        async move {
            // The renewal counts from before the request: the API server
            // stores it after this instant, and every other replica sees
            // it later still, so this replica's deadline comes first.
            let sent = Instant::now();
            let r = leader::try_acquire(client, &lease, &mut observed).await;
            (*k, name, observed, sent, r)
        }
    });
    for (k, name, observed, sent, r) in futures::future::join_all(attempts).await {
        state.observed.insert(name, observed);
        match r {
            Ok(true) => {
                state.renewed.insert(k, sent);
                state.free_since.remove(&k);
                if let Some(g) = usize::try_from(k).ok().and_then(|i| gates.0.get(i)) {
                    if !g.send_replace(true) {
                        metrics.taken.inc();
                        tracing::info!(shard = k, members = seen.members, "shard taken");
                        let _ = gained.send(k);
                    }
                }
            }
            Ok(false) => {
                gates.close(k);
                state.renewed.remove(&k);
            }
            Err(e) => tracing::warn!(shard = k, error = %e, "shard lease round failed"),
        }
    }
    Ok(())
}

/// Closes the gates of shards not renewed within `deadline`.
fn expire(state: &mut State, gates: &Senders, deadline: Duration) {
    let stale: Vec<u32> = state
        .renewed
        .iter()
        .filter(|(_, at)| at.elapsed() >= deadline)
        .map(|(k, _)| *k)
        .collect();
    for k in stale {
        tracing::warn!(shard = k, "shard lease not renewed in time; writes stop");
        gates.close(k);
        state.renewed.remove(&k);
    }
}

/// Runs the shard rounds until `shutdown` flips to true (or its sender
/// goes), then closes every gate and releases the Leases. The caller
/// stops the rounds only once the controllers have stopped writing.
pub async fn run(
    client: Client,
    cfg: ShardConfig,
    gates: Vec<watch::Sender<bool>>,
    gained: mpsc::UnboundedSender<u32>,
    metrics: ShardMetrics,
    mut shutdown: watch::Receiver<bool>,
) {
    let gates = Senders(gates);
    let mut state = State::default();
    // Writes stop one renewal period before another replica may take the
    // shard.
    let deadline = cfg.lease.duration.saturating_sub(cfg.lease.renew_every);
    let mut stopping = false;
    while !stopping {
        let round_started = tokio::time::Instant::now();
        // A round that hangs ends at the first shard's deadline, so that
        // gate closes on time.
        let limit = state
            .renewed
            .values()
            .map(|at| *at + deadline)
            .min()
            .map_or(Instant::now() + deadline, |d| {
                d.min(Instant::now() + deadline)
            });
        let r = tokio::time::timeout_at(
            tokio::time::Instant::from_std(limit),
            round(&client, &cfg, &mut state, &gates, &gained, &metrics),
        );
        match r.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "shard round failed"),
            Err(_) => tracing::warn!(seconds = deadline.as_secs(), "shard round timed out"),
        }
        expire(&mut state, &gates, deadline);
        metrics
            .held
            .set(i64::try_from(state.renewed.len()).unwrap_or(i64::MAX));
        // The next round one period after this one started, or a shard's
        // deadline if that comes first (its gate closes on time).
        let next_round = round_started + cfg.lease.renew_every;
        loop {
            let next_deadline = state
                .renewed
                .values()
                .map(|at| tokio::time::Instant::from_std(*at + deadline))
                .min();
            let wake = next_deadline.map_or(next_round, |d| d.min(next_round));
            tokio::select! {
                _ = tokio::time::sleep_until(wake) => {}
                // Asked to stop, or the one who could ask is gone.
                _ = shutdown.wait_for(|s| *s) => stopping = true,
            }
            expire(&mut state, &gates, deadline);
            if stopping || tokio::time::Instant::now() >= next_round {
                break;
            }
        }
    }
    gates.close_all();
    metrics.held.set(0);
    let mut names: Vec<String> = state.renewed.keys().map(|k| cfg.shard_lease(*k)).collect();
    names.push(cfg.member_lease());
    for name in names {
        let c = cfg.named(name);
        match tokio::time::timeout(cfg.lease.renew_every, leader::release(&client, &c)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "could not release a shard lease"),
            Err(_) => {
                tracing::warn!(lease = %c.name, "releasing timed out; it expires on its own")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_fnv1a() {
        // The published FNV-1a test vectors.
        assert_eq!(fnv1a(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a("a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a("foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn objects_spread_over_the_shards() {
        let mut counts = [0usize; 8];
        for i in 0..8000 {
            counts[shard_of("default", &format!("pv-{i}"), 8) as usize] += 1;
        }
        for c in counts {
            assert!((800..1200).contains(&c), "{counts:?}");
        }
        assert_eq!(shard_of("a", "b", 0), 0);
        assert_eq!(shard_of("ns", "x", 16), shard_of("ns", "x", 16));
    }

    fn all(n: u32) -> BTreeSet<u32> {
        (0..n).collect()
    }

    #[test]
    fn a_share_is_the_ceiling() {
        assert_eq!(share(32, 3), 11);
        assert_eq!(share(32, 0), 32);
        assert_eq!(share(4, 8), 1);
    }

    /// Replicas planning in turn from a cold start end with every shard
    /// held once and each at most its share.
    #[test]
    fn rounds_converge_to_a_partition() {
        let ids = ["r-0", "r-1", "r-2"];
        let mut held: Vec<BTreeSet<u32>> = vec![BTreeSet::new(); 3];
        for _ in 0..4 {
            for (i, id) in ids.iter().enumerate() {
                let others: BTreeSet<u32> = held
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| *j != i)
                    .flat_map(|(_, h)| h.iter().copied())
                    .collect();
                let free = all(32).difference(&others).copied().collect();
                let p = plan(id, 32, 3, &held[i], &free);
                held[i] = p.keep.iter().chain(&p.take).copied().collect();
            }
        }
        let mut union = BTreeSet::new();
        for h in &held {
            assert!(h.len() <= 11, "{held:?}");
            for k in h {
                assert!(union.insert(*k), "shard {k} held twice: {held:?}");
            }
        }
        assert_eq!(union, all(32));
    }

    /// A replica joining shrinks the others' shares: each gives up only
    /// what is over its share, and the shards it keeps are the ones it
    /// prefers.
    #[test]
    fn a_new_member_makes_the_others_give_up_their_excess() {
        let held = all(32);
        let p = plan("r-0", 32, 2, &held, &BTreeSet::new());
        assert_eq!(p.keep.len(), 16);
        assert_eq!(p.drop.len(), 16);
        assert!(p.take.is_empty());
        let min_kept = p.keep.iter().map(|k| weight("r-0", *k)).min().unwrap();
        let max_dropped = p.drop.iter().map(|k| weight("r-0", *k)).max().unwrap();
        assert!(min_kept > max_dropped);
        // The newcomer takes what is free, up to its share.
        let free: BTreeSet<u32> = p.drop.iter().copied().collect();
        let q = plan("r-1", 32, 2, &BTreeSet::new(), &free);
        assert_eq!(q.take.len(), 16);
    }

    #[test]
    fn gates_follow_their_shard() {
        let (tx, rx): (Vec<_>, Vec<_>) = (0..4).map(|_| watch::channel(false)).unzip();
        let gates = Gates::sharded(rx);
        let k = gates.shard_of("default", "pv-1");
        assert!(!gates.open("default", "pv-1"));
        tx[k as usize].send_replace(true);
        assert!(gates.open("default", "pv-1"));
        assert_eq!(gates.held(), BTreeSet::from([k]));
        let single = Gates::single(watch::channel(true).1);
        assert!(single.open("any", "thing"));
        assert!(!single.is_sharded());
    }
}
