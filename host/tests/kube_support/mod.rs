//! A fake Kubernetes API server for the controller tests (kube-rs's
//! mock-service pattern): a `tower_test` mock service answers the client's
//! requests from a small in-memory state and records every request, so a
//! test asserts the exact sequence.

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use kube::client::Body;
use kube::runtime::reflector::{self, store::Writer};
use kube::runtime::watcher;
use kube::Client;
use porch_variants::kube::api::{
    KubeResource, PackageRevision, PackageVariant, PackageVariantSet, Repository,
};
use porch_variants::kube::cache::{Caches, ObjectCaches, RevisionIndex};
use porch_variants::kube::controller::Context;
use porch_variants::kube::metrics::Metrics;
use serde_json::{json, Value};
use tokio::sync::watch;

/// One request the client made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// HTTP method.
    pub method: String,
    /// Path and query.
    pub uri: String,
    /// Request body as JSON (`Null` when empty).
    pub body: Value,
    /// Which client made it ([`fake_client_as`]; empty otherwise).
    pub client: String,
}

impl Call {
    /// `METHOD path` (no query).
    pub fn line(&self) -> String {
        let path = self.uri.split('?').next().unwrap_or_default();
        format!("{} {}", self.method, path)
    }
}

/// What the fake server holds and how it misbehaves.
#[derive(Default)]
pub struct ServerState {
    /// Files of each PackageRevisionResources, by name.
    pub files: BTreeMap<String, BTreeMap<String, String>>,
    /// The resourceVersion of each PackageRevisionResources that was
    /// updated (1 otherwise).
    pub files_versions: BTreeMap<String, u64>,
    /// Requests (`METHOD path`) answered with 500 (a LIST with 403).
    pub fail: BTreeSet<String>,
    /// Requests (`METHOD path`) answered with 409 Conflict, each as many
    /// times as its count says (then as usual).
    pub conflicts: BTreeMap<String, usize>,
    /// Every request, in order (cleared by [`clear`]).
    pub calls: Vec<Call>,
    /// Every request since the server started (never cleared).
    pub history: Vec<Call>,
    /// The render error Porch reports on resource updates (empty: none).
    pub render_error: String,
    /// Objects served by LIST requests, by resource (plural).
    pub lists: BTreeMap<String, Vec<Value>>,
    /// LIST requests of these resources (plural) are answered only after
    /// the delay, as a slow API server would (other requests go on).
    pub list_delays: BTreeMap<String, std::time::Duration>,
    /// Requests (`METHOD path`) answered only after the delay.
    pub call_delays: BTreeMap<String, std::time::Duration>,
    /// Requests (`METHOD path`) answered only once the test removes them
    /// from here (other requests go on).
    pub held: BTreeSet<String>,
    /// Objects a DELETE only marks (they have finalizers), by name: the
    /// answer is the object, as the API server returns it.
    pub marked: BTreeMap<String, Value>,
    /// Objects a GET of their path (no query) returns, as the API
    /// server's current state (what an uncached read sees).
    pub objects: BTreeMap<String, Value>,
    /// Leases are kept as the API server keeps them (create, get, list,
    /// replace with optimistic concurrency) instead of being echoed.
    pub stateful_leases: bool,
    /// The Leases kept, by name.
    pub leases: BTreeMap<String, Value>,
    /// Clients whose requests fail with 500 (a partitioned replica).
    pub cut_off: BTreeSet<String>,
    counter: u64,
}

/// The fake server's shared state.
pub type Shared = Arc<Mutex<ServerState>>;

fn respond(status: StatusCode, body: &Value) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Body::from(serde_json::to_vec(body).unwrap_or_default()))
        .unwrap_or_else(|_| Response::new(Body::from(Vec::new())))
}

fn status(code: u16, reason: &str, message: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
           "code": code, "reason": reason, "message": message})
}

/// A Lease request, answered from the kept Leases.
fn answer_lease(s: &mut ServerState, call: &Call) -> (StatusCode, Value) {
    s.counter += 1;
    let rv = format!("{}", 1000 + s.counter);
    let path = call.uri.split('?').next().unwrap_or_default();
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let name = parts.get(6).copied().unwrap_or_default().to_string();
    let mut body = call.body.clone();
    match (call.method.as_str(), name.is_empty()) {
        ("GET", true) => {
            let items: Vec<Value> = s.leases.values().cloned().collect();
            (
                StatusCode::OK,
                json!({"apiVersion": "coordination.k8s.io/v1", "kind": "LeaseList",
                       "metadata": {"resourceVersion": rv}, "items": items}),
            )
        }
        ("GET", false) => match s.leases.get(&name) {
            Some(l) => (StatusCode::OK, l.clone()),
            None => (StatusCode::NOT_FOUND, status(404, "NotFound", "not found")),
        },
        ("POST", _) => {
            let name = body["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            if s.leases.contains_key(&name) {
                return (
                    StatusCode::CONFLICT,
                    status(409, "AlreadyExists", "already exists"),
                );
            }
            body["metadata"]["resourceVersion"] = json!(rv);
            s.leases.insert(name, body.clone());
            (StatusCode::CREATED, body)
        }
        ("PUT", false) => {
            let current = s
                .leases
                .get(&name)
                .map(|l| l["metadata"]["resourceVersion"].clone());
            match current {
                None => (StatusCode::NOT_FOUND, status(404, "NotFound", "not found")),
                Some(v) if v != body["metadata"]["resourceVersion"] => (
                    StatusCode::CONFLICT,
                    status(409, "Conflict", "the object has been modified"),
                ),
                Some(_) => {
                    body["metadata"]["resourceVersion"] = json!(rv);
                    s.leases.insert(name, body.clone());
                    (StatusCode::OK, body)
                }
            }
        }
        _ => (StatusCode::NOT_FOUND, status(404, "NotFound", "no route")),
    }
}

/// `None`: hold the request open (a watch that sees no event).
fn answer(state: &Shared, call: &Call) -> Option<(StatusCode, Value)> {
    let query = call.uri.split_once('?').map(|(_, q)| q).unwrap_or_default();
    if call.method == "GET" && query.split('&').any(|p| p == "watch=true") {
        return None;
    }
    {
        let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
        if s.cut_off.contains(&call.client) {
            s.history.push(call.clone());
            return Some((
                StatusCode::INTERNAL_SERVER_ERROR,
                status(500, "InternalError", "injected partition"),
            ));
        }
        if s.stateful_leases && call.uri.contains("/leases") {
            s.calls.push(call.clone());
            s.history.push(call.clone());
            return Some(answer_lease(&mut s, call));
        }
    }
    let path = call.uri.split('?').next().unwrap_or_default();
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    // A LIST: /apis/<g>/<v>/<plural>, /api/v1/<plural>, or namespaced.
    let list_plural = match parts.as_slice() {
        ["apis", _, _, plural] | ["api", _, plural] => Some(plural.to_string()),
        ["apis", _, _, "namespaces", _, plural] | ["api", _, "namespaces", _, plural] => {
            Some(plural.to_string())
        }
        _ => None,
    };
    if call.method == "GET" {
        if let Some(plural) = list_plural {
            let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
            s.calls.push(call.clone());
            s.history.push(call.clone());
            if s.fail.contains(&call.line()) {
                return Some((
                    StatusCode::FORBIDDEN,
                    status(403, "Forbidden", "injected failure"),
                ));
            }
            let items = s.lists.get(&plural).cloned().unwrap_or_default();
            return Some((
                StatusCode::OK,
                json!({"apiVersion": "v1", "kind": "List",
                       "metadata": {"resourceVersion": "100"}, "items": items}),
            ));
        }
    }
    Some(answer_object(state, call))
}

fn answer_object(state: &Shared, call: &Call) -> (StatusCode, Value) {
    let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
    s.calls.push(call.clone());
    s.history.push(call.clone());
    s.counter += 1;
    let rv = format!("{}", 1000 + s.counter);
    if s.fail.contains(&call.line()) {
        return (
            StatusCode::INTERNAL_SERVER_ERROR,
            status(500, "InternalError", "injected failure"),
        );
    }
    if let Some(n) = s.conflicts.get_mut(&call.line()).filter(|n| **n > 0) {
        *n -= 1;
        return (
            StatusCode::CONFLICT,
            status(409, "Conflict", "the object has been modified"),
        );
    }
    let path = call.uri.split('?').next().unwrap_or_default().to_string();
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    // /apis/<group>/<version>/namespaces/<ns>/<plural>[/<name>[/<sub>]]
    let plural = parts.get(5).copied().unwrap_or_default();
    let name = parts.get(6).copied().unwrap_or_default().to_string();
    let ns = parts.get(4).copied().unwrap_or_default().to_string();
    let mut body = call.body.clone();
    if call.method == "GET" {
        if let Some(obj) = s.objects.get(&path) {
            return (StatusCode::OK, obj.clone());
        }
    }
    match (call.method.as_str(), plural) {
        ("GET", "packagerevisionresources") => match s.files.get(&name) {
            Some(files) => (
                StatusCode::OK,
                json!({
                    "apiVersion": "porch.kpt.dev/v1alpha1",
                    "kind": "PackageRevisionResources",
                    "metadata": {"name": name, "namespace": ns,
                                 "resourceVersion": s.files_versions.get(&name).unwrap_or(&1).to_string()},
                    "spec": {"resources": files},
                }),
            ),
            None => (StatusCode::NOT_FOUND, status(404, "NotFound", "not found")),
        },
        ("PUT", "packagerevisionresources") => {
            // Optimistic concurrency, as the API server's.
            let current = *s.files_versions.get(&name).unwrap_or(&1);
            let sent = body["metadata"]["resourceVersion"]
                .as_str()
                .unwrap_or_default();
            if !sent.is_empty() && sent != current.to_string() {
                return (
                    StatusCode::CONFLICT,
                    status(409, "Conflict", "the object has been modified"),
                );
            }
            let files: BTreeMap<String, String> =
                serde_json::from_value(body["spec"]["resources"].clone()).unwrap_or_default();
            s.files.insert(name.clone(), files);
            s.files_versions.insert(name, current + 1);
            body["metadata"]["resourceVersion"] = json!((current + 1).to_string());
            body["status"] = json!({"renderStatus": {
                "result": {"apiVersion": "kpt.dev/v1", "kind": "FunctionResultList",
                           "exitCode": i32::from(!s.render_error.is_empty())},
                "error": s.render_error,
            }});
            (StatusCode::OK, body)
        }
        ("POST", "packagerevisions") => {
            let name = format!(
                "{}.{}.{}",
                body["spec"]["repository"].as_str().unwrap_or_default(),
                body["spec"]["packageName"]
                    .as_str()
                    .unwrap_or_default()
                    .replace('/', "."),
                body["spec"]["workspaceName"].as_str().unwrap_or_default()
            );
            body["metadata"]["name"] = json!(name);
            body["metadata"]["resourceVersion"] = json!(rv);
            body["metadata"]["uid"] = json!(format!("uid-{name}"));
            body["spec"]["lifecycle"] = json!("Draft");
            s.files.entry(name).or_default();
            (StatusCode::CREATED, body)
        }
        ("DELETE", plural) => match s.marked.get(&name) {
            Some(object) => (StatusCode::OK, object.clone()),
            // Porch answers with the revision as it was before.
            None if plural == "packagerevisions" => (
                StatusCode::OK,
                json!({"apiVersion": "porch.kpt.dev/v1alpha1", "kind": "PackageRevision",
                       "metadata": {"name": name, "namespace": ns, "resourceVersion": rv}}),
            ),
            None => (StatusCode::OK, status(200, "", "deleted")),
        },
        ("POST", _) => {
            body["metadata"]["resourceVersion"] = json!(rv);
            body["metadata"]["uid"] = json!(format!("uid-{}", body["metadata"]["name"]));
            (StatusCode::CREATED, body)
        }
        ("PUT", _) | ("PATCH", _) => {
            if body.get("metadata").is_none() {
                body["metadata"] = json!({"name": name, "namespace": ns});
            }
            body["metadata"]["resourceVersion"] = json!(rv);
            (StatusCode::OK, body)
        }
        _ => (StatusCode::NOT_FOUND, status(404, "NotFound", "no route")),
    }
}

/// The delay set for a request, or for a LIST request's resource, if any.
fn delay_of(state: &Shared, call: &Call) -> Option<std::time::Duration> {
    let s = state.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(delay) = s.call_delays.get(&call.line()) {
        return Some(*delay);
    }
    if call.method != "GET" || call.uri.contains("watch=true") {
        return None;
    }
    let path = call.uri.split('?').next().unwrap_or_default();
    let plural = path
        .trim_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or_default();
    s.list_delays.get(plural).copied()
}

/// A client served by the fake server.
pub fn fake_client(state: Shared) -> Client {
    fake_client_as(state, "")
}

/// A client served by the fake server whose requests are recorded with
/// `client` (one per replica of a test).
pub fn fake_client_as(state: Shared, client: &str) -> Client {
    let client = client.to_string();
    let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Some((request, send)) = handle.next_request().await {
            let method = request.method().to_string();
            let uri = request.uri().to_string();
            let bytes = request
                .into_body()
                .collect()
                .await
                .map(|c| c.to_bytes())
                .unwrap_or_default();
            let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            let call = Call {
                method,
                uri,
                body,
                client: client.clone(),
            };
            let delay = delay_of(&state, &call);
            let gate = state
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .held
                .contains(&call.line())
                .then(|| (state.clone(), call.line()));
            match answer(&state, &call) {
                Some((code, value)) if delay.is_some() || gate.is_some() => {
                    tokio::spawn(async move {
                        if let Some(delay) = delay {
                            tokio::time::sleep(delay).await;
                        }
                        if let Some((state, line)) = gate {
                            while state
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .held
                                .contains(&line)
                            {
                                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                            }
                        }
                        send.send_response(respond(code, &value));
                    });
                }
                Some((code, value)) => send.send_response(respond(code, &value)),
                None => held.push(send),
            }
        }
    });
    Client::new(service, "default")
}

/// Writers of the caches (the test fills them as the watches would).
pub struct CacheWriters {
    /// PackageVariants.
    pub package_variants: Writer<PackageVariant>,
    /// PackageVariantSets.
    pub package_variant_sets: Writer<PackageVariantSet>,
    /// PackageRevisions.
    pub revisions: Writer<PackageRevision>,
    /// Repositories.
    pub repositories: Writer<Repository>,
    /// ConfigMaps (injection sources).
    pub configmaps: Writer<kube::api::DynamicObject>,
}

/// Empty caches and their writers.
pub fn caches() -> (Caches, CacheWriters) {
    let (pv, pv_w) = reflector::store();
    let (pvs, pvs_w) = reflector::store();
    let (pr, pr_w) = reflector::store();
    let (repo, repo_w) = reflector::store();
    let ar =
        kube::api::ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk("", "v1", "ConfigMap"));
    let cm_w = Writer::<kube::api::DynamicObject>::new(ar);
    let objects = ObjectCaches::default();
    objects.insert("v1", "ConfigMap", cm_w.as_reader());
    (
        Caches {
            package_variants: pv,
            package_variant_sets: pvs,
            revisions: pr,
            revision_index: Arc::new(RevisionIndex::default()),
            repositories: repo,
            objects,
        },
        CacheWriters {
            package_variants: pv_w,
            package_variant_sets: pvs_w,
            revisions: pr_w,
            repositories: repo_w,
            configmaps: cm_w,
        },
    )
}

/// Puts a PackageRevision in the cache and its index.
pub fn put_revision(caches: &Caches, w: &mut CacheWriters, pr: &pv_core::api::PackageRevision) {
    let k = PackageRevision::from_core(pr).expect("revision converts");
    let ev = watcher::Event::Apply(k);
    w.revisions.apply_watcher_event(&ev);
    caches.revision_index.apply(&ev);
}

/// Puts a Repository in the cache.
pub fn put_repository(w: &mut CacheWriters, repo: &pv_core::variantset::Repository) {
    let k = Repository::from_core(repo).expect("repository converts");
    w.repositories
        .apply_watcher_event(&watcher::Event::Apply(k));
}

/// Puts a PackageVariant in the cache; returns the cached object.
pub fn put_variant(w: &mut CacheWriters, pv: &pv_core::api::PackageVariant) -> Arc<PackageVariant> {
    let k = PackageVariant::from_core(pv).expect("variant converts");
    w.package_variants
        .apply_watcher_event(&watcher::Event::Apply(k.clone()));
    Arc::new(k)
}

/// Puts a PackageVariantSet in the cache; returns the cached object.
pub fn put_set(
    w: &mut CacheWriters,
    pvs: &pv_core::variantset::PackageVariantSet,
) -> Arc<PackageVariantSet> {
    let k = PackageVariantSet::from_core(pvs).expect("set converts");
    w.package_variant_sets
        .apply_watcher_event(&watcher::Event::Apply(k.clone()));
    Arc::new(k)
}

/// A reconcile context over the fake server, with the native core; this
/// replica leads.
pub fn context(client: Client, caches: Caches) -> Arc<Context> {
    let (_tx, rx) = watch::channel(true);
    Arc::new(Context::new(
        client,
        caches,
        Arc::new(porch_variants::engine_api::NativeCore),
        Arc::new(Metrics::default()),
        rx,
    ))
}

/// The calls recorded so far, as `METHOD path` lines.
pub fn lines(state: &Shared) -> Vec<String> {
    state
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .calls
        .iter()
        .map(Call::line)
        .collect()
}

/// The calls recorded so far.
pub fn calls(state: &Shared) -> Vec<Call> {
    state
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .calls
        .clone()
}

/// Forgets the recorded calls.
pub fn clear(state: &Shared) {
    state
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .calls
        .clear();
}

/// Every request since the server started.
pub fn history(state: &Shared) -> Vec<Call> {
    state
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .history
        .clone()
}

/// One rule of `deploy/rbac.yaml` (a ClusterRole's or the Role's).
struct Rule {
    groups: Vec<String>,
    resources: Vec<String>,
    verbs: Vec<String>,
    names: Vec<String>,
}

fn rbac_rules(files: &[&str]) -> Vec<Rule> {
    let mut rules = Vec::new();
    for file in std::iter::once("rbac.yaml").chain(files.iter().copied()) {
        rules.extend(rbac_rules_of(file));
    }
    rules
}

/// The rules of `deploy/<file>`.
fn rbac_rules_of(file: &str) -> Vec<Rule> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../deploy")
        .join(file);
    let text = std::fs::read_to_string(&path).expect("an RBAC file of deploy/");
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut rules = Vec::new();
    for doc in pv_core::yaml::parse_stream(&text).expect("the RBAC file parses") {
        let obj = pv_core::yaml::to_json(&doc).expect("the RBAC file converts");
        if obj["kind"] != "ClusterRole" && obj["kind"] != "Role" {
            continue;
        }
        for r in obj["rules"].as_array().expect("rules") {
            rules.push(Rule {
                groups: strings(&r["apiGroups"]),
                resources: strings(&r["resources"]),
                verbs: strings(&r["verbs"]),
                names: strings(&r["resourceNames"]),
            });
        }
    }
    rules
}

/// `(group, resource[/subresource], verb, name)` of a request, as the API
/// server's authorizer sees it.
fn attributes(call: &Call) -> (String, String, String, String) {
    let (path, query) = call.uri.split_once('?').unwrap_or((&call.uri, ""));
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, rest) = match parts.as_slice() {
        ["api", _, rest @ ..] => ("", rest),
        ["apis", group, _, rest @ ..] => (*group, rest),
        _ => ("?", &parts[..0]),
    };
    let rest = match rest {
        ["namespaces", _, rest @ ..] => rest,
        rest => rest,
    };
    let (plural, name, sub) = (
        rest.first().copied().unwrap_or_default(),
        rest.get(1).copied().unwrap_or_default(),
        rest.get(2).copied(),
    );
    let resource = match sub {
        Some(sub) => format!("{plural}/{sub}"),
        None => plural.to_string(),
    };
    let verb = match (call.method.as_str(), name.is_empty()) {
        ("GET", false) => "get",
        ("GET", true) if query.split('&').any(|p| p == "watch=true") => "watch",
        ("GET", true) => "list",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        ("DELETE", false) => "delete",
        ("DELETE", true) => "deletecollection",
        _ => "?",
    };
    (
        group.to_string(),
        resource,
        verb.to_string(),
        name.to_string(),
    )
}

/// The requests of `calls` that `deploy/rbac.yaml` does not allow, as
/// `METHOD path (group resource verb)` lines.
pub fn ungranted(calls: &[Call]) -> Vec<String> {
    ungranted_with(calls, &[])
}

/// [`ungranted`] with the rules of more files of `deploy/` (an overlay's).
pub fn ungranted_with(calls: &[Call], files: &[&str]) -> Vec<String> {
    let rules = rbac_rules(files);
    calls
        .iter()
        .filter(|call| {
            let (group, resource, verb, name) = attributes(call);
            !rules.iter().any(|r| {
                r.groups.contains(&group)
                    && r.resources.contains(&resource)
                    && r.verbs.contains(&verb)
                    && (r.names.is_empty() || r.names.contains(&name))
            })
        })
        .map(|call| {
            let (group, resource, verb, _) = attributes(call);
            format!("{} ({group:?} {resource} {verb})", call.line())
        })
        .collect()
}

/// At the end of a scenario (not while a failed one unwinds): every request
/// the server received is one `deploy/rbac.yaml` allows.
pub fn assert_history_granted(state: &Shared) {
    assert_history_granted_with(state, &[]);
}

/// [`assert_history_granted`] with an overlay's RBAC files as well.
pub fn assert_history_granted_with(state: &Shared, files: &[&str]) {
    if std::thread::panicking() {
        return;
    }
    let denied = ungranted_with(&history(state), files);
    assert!(
        denied.is_empty(),
        "deploy/rbac.yaml and {files:?} do not allow: {denied:#?}"
    );
}

/// One replica of a sharded test: its shard rounds (real, against the
/// fake server) and its controller context over shared caches.
pub struct ShardReplica {
    /// Its identity (and the recorded client's name).
    pub id: String,
    /// Its shards' gates.
    pub gates: porch_variants::kube::shard::Gates,
    /// Its controllers' context.
    pub ctx: Arc<Context>,
    /// Its metrics.
    pub metrics: Arc<Metrics>,
    /// Stops its shard rounds.
    pub stop: watch::Sender<bool>,
    /// Its shard rounds.
    pub task: tokio::task::JoinHandle<()>,
}

/// Starts a replica `id` splitting the objects into `shards`, with Leases
/// of `duration` renewed every `renew`, reading `caches`.
pub fn start_shard_replica(
    server: &Shared,
    caches: &Caches,
    id: &str,
    shards: u32,
    duration: std::time::Duration,
    renew: std::time::Duration,
) -> ShardReplica {
    use porch_variants::kube::shard;
    let client = fake_client_as(server.clone(), id);
    let (tx, rx): (Vec<_>, Vec<_>) = (0..shards).map(|_| watch::channel(false)).unzip();
    let (gained, _) = tokio::sync::mpsc::unbounded_channel();
    let (stop, stop_rx) = watch::channel(false);
    let cfg = shard::ShardConfig {
        lease: porch_variants::kube::leader::LeaseConfig {
            name: "porch-variants".into(),
            namespace: "default".into(),
            identity: id.into(),
            duration,
            renew_every: renew,
        },
        shards,
    };
    let task = tokio::spawn(shard::run(
        client.clone(),
        cfg,
        tx,
        gained,
        shard::ShardMetrics::default(),
        stop_rx,
    ));
    let gates = shard::Gates::sharded(rx);
    let metrics = Arc::new(Metrics::default());
    let mut ctx = Context::new(
        client,
        caches.clone(),
        Arc::new(porch_variants::engine_api::NativeCore),
        metrics.clone(),
        watch::channel(true).1,
    );
    ctx.gates = gates.clone();
    ShardReplica {
        id: id.into(),
        gates,
        ctx: Arc::new(ctx),
        metrics,
        stop,
        task,
    }
}

/// Variant `pv-<i>` of a fleet (namespace `default`): upstream
/// `blueprints/web`, downstream `edge-<i>/web`, its finalizer already
/// added, and one package-context entry `key`: `value`.
pub fn fleet_variant(i: usize, key: &str, value: &str) -> pv_core::api::PackageVariant {
    serde_json::from_value(json!({
        "apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "PackageVariant",
        "metadata": {"name": format!("pv-{i}"), "namespace": "default", "uid": format!("uid-pv-{i}"),
                     "resourceVersion": "3", "finalizers": ["config.porch.kpt.dev/packagevariants"]},
        "spec": {
            "upstream": {"repo": "blueprints", "package": "web"},
            "downstream": {"repo": format!("edge-{i}"), "package": "web"},
            "packageContext": {"data": {key: value}}
        }
    }))
    .expect("variant")
}

/// The v1alpha2 PackageRevision watch cache and its index, filled as the
/// watch would fill them.
pub struct V2Cache {
    /// The cache.
    pub writer: Writer<kube::api::DynamicObject>,
    /// Its index.
    pub index: Arc<RevisionIndex>,
}

impl Default for V2Cache {
    fn default() -> Self {
        V2Cache {
            writer: Writer::new(porch_variants::kube::prc::api_resource()),
            index: Default::default(),
        }
    }
}

impl V2Cache {
    /// Puts `obj` in the cache and its index; returns the cached object.
    pub fn put(&mut self, obj: Value) -> Arc<kube::api::DynamicObject> {
        let o: kube::api::DynamicObject = serde_json::from_value(obj).expect("object");
        let event = watcher::Event::Apply(o.clone());
        self.writer.apply_watcher_event(&event);
        self.index.apply(&event);
        Arc::new(o)
    }
}

/// The variant controllers' context on v1alpha2 PackageRevisions and the
/// PackageRevision controller's, over the fake server, `caches`, `v2` and
/// the Git repositories under `root`: native core, drafts rendered as
/// porch-server renders them, this replica leading.
pub fn v1alpha2_contexts(
    client: Client,
    caches: Caches,
    v2: &V2Cache,
    root: &std::path::Path,
) -> (Arc<Context>, Arc<porch_variants::kube::prc::PrcContext>) {
    let (tx, leader) = watch::channel(true);
    std::mem::forget(tx);
    let prc = Arc::new(porch_variants::kube::prc::PrcContext {
        client: client.clone(),
        revisions: v2.writer.as_reader(),
        index: v2.index.clone(),
        repositories: caches.repositories.clone(),
        core: Arc::new(porch_variants::engine_api::NativeCore),
        renderer: Some(Arc::new(
            porch_variants::reconcile::DraftRenderer::porch_server(root, None),
        )),
        slots: Arc::new(porch_variants::prc::RenderSlots::new(0)),
        config: pv_core::prc::reconcile::Config::default(),
        git_root: root.to_path_buf(),
        git_fetch_interval: std::time::Duration::ZERO,
        gates: porch_variants::kube::shard::Gates::single(leader.clone()),
    });
    let mut context = Context::new(
        client,
        caches,
        Arc::new(porch_variants::engine_api::NativeCore),
        Arc::new(Metrics::default()),
        leader,
    );
    context.v1alpha2 = Some(prc.clone());
    (Arc::new(context), prc)
}
