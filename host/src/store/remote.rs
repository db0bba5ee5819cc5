//! PackageRevisions of Repositories whose `spec.git.repo` is a URL (https,
//! http, ssh, git or file), on Porch's Git layout (see [`super::git`]).
//!
//! Each remote repository has a local bare **mirror** (in local mode
//! `DIR/.porch-variants/mirrors/<namespace>/<name>.git`) that a
//! [`GitRevisions`] reads and writes. The remote transport is the system
//! `git` command (the vendored libgit2 has no https or ssh), so the system's
//! proxies, `insteadOf` rules and ssh configuration apply.
//!
//! * **Sync** ([`RemoteRevisions::sync`], and once when opened) fetches
//!   every branch, tag and `refs/porch-variants/*` ref of the remote into
//!   the mirror, forced and pruned: the mirror's refs become the remote's.
//!   These are the refs the store *knows* the remote has.
//! * **Writes** are made on the mirror, then exactly the refs the write
//!   changed (compared with the known refs; deletions included) are pushed
//!   in one `git push --atomic`, each with `--force-with-lease=<ref>:<known
//!   value>` and a `+`-less refspec: a ref another writer changed since the
//!   last fetch is never overwritten, and either every ref of the write
//!   reaches the remote or none does.
//! * **Races**: when the push is rejected because another writer pushed
//!   first, the mirror's refs are put back to the known ones, the remote is
//!   fetched again, and the whole write is made again on what it now holds
//!   (at most [`RemoteOptions::max_attempts`] times, with a growing pause):
//!   neither writer's change is lost. A write that no longer makes sense on
//!   the new state fails as it would locally (a draft that now exists is a
//!   [`StoreError::Conflict`]).
//! * **Failures**: a write that fails on the mirror, or whose push fails
//!   (server gone, connection cut, rejected by a hook), is reported failed
//!   and the mirror's refs are put back to the remote's last known state,
//!   so nothing half written is visible; the next sync recovers. Should
//!   the server have applied the push before the connection broke, the
//!   next sync shows the write.
//! * **Credentials** come from the Repository's `spec.git.secretRef` Secret
//!   (`data.username`/`data.password`, or `data.bearerToken`) and reach
//!   `git` as an `Authorization` header in its environment
//!   (`GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_n`/`GIT_CONFIG_VALUE_n` with
//!   `http.extraHeader`), never on a command line or in a file. Prompts are
//!   off (`GIT_TERMINAL_PROMPT=0`); an authentication failure is an error
//!   naming the Repository and `spec.git.secretRef`, and is not retried.
//!
//! Repositories without a URL are passed to one plain [`GitRevisions`], so
//! a [`RemoteRevisions`] over local repositories only behaves exactly as a
//! [`GitRevisions`].

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, Weak};
use std::time::Duration;

use git2::{Oid, Repository};
use pv_core::api::package_revision::{Lifecycle, RenderStatus};
use pv_core::api::{ObjectMeta, PackageRevision, PackageRevisionResources};
use serde_json::Value;

use super::git::{init_bare, remove_unfinished_repository, GitRepoConfig, GitRevisions};
use super::rules::ns_or_default;
use super::{Files, NewRevision, PackageRevisionStore, PrFilter, StoreError, StoreResult};

/// Where local mode keeps the mirrors, relative to its directory.
pub const LOCAL_MIRRORS_DIR: &str = ".porch-variants/mirrors";

/// The ref namespaces a mirror tracks (and a sync fetches).
const TRACKED: [&str; 3] = ["refs/heads/", "refs/tags/", "refs/porch-variants/"];

/// The fetch refspecs of a sync: the tracked namespaces, forced.
const FETCH_REFSPECS: [&str; 3] = [
    "+refs/heads/*:refs/heads/*",
    "+refs/tags/*:refs/tags/*",
    "+refs/porch-variants/*:refs/porch-variants/*",
];

/// The transports `git` may use for a remote (`GIT_ALLOW_PROTOCOL`): no
/// `ext::` (which runs commands) or other helpers.
const ALLOWED_PROTOCOLS: &str = "file:git:http:https:ssh";

/// The mirror of Repository `namespace/name` under `cache`
/// (`<cache>/<namespace>/<name>.git`).
pub fn mirror_path(cache: &Path, namespace: &str, name: &str) -> PathBuf {
    cache.join(namespace).join(format!("{name}.git"))
}

/// The URL scheme of `repo` (`https` of `https://host/x.git`), lowercase.
fn url_scheme(repo: &str) -> Option<String> {
    let (scheme, _) = repo.split_once("://")?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    (first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
    .then(|| scheme.to_ascii_lowercase())
}

/// Whether `repo` is scp-like ssh syntax: `user@host:path`.
fn is_scp_like(repo: &str) -> bool {
    let Some((before, _)) = repo.split_once(':') else {
        return false;
    };
    match before.split_once('@') {
        Some((user, host)) => {
            !user.is_empty()
                && !host.is_empty()
                && !before.contains('/')
                && !before.starts_with('-')
        }
        None => false,
    }
}

/// Whether `repo` is Git's `<transport>::<address>` syntax (`ext::…`
/// runs a command: never accepted).
fn is_transport_syntax(repo: &str) -> bool {
    repo.split_once("::").is_some_and(|(t, _)| {
        !t.is_empty() && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
    })
}

/// Whether a Repository's `spec.git.repo` names a remote repository (a
/// URL with a scheme, scp-like `user@host:path`, or Git's
/// `<transport>::<address>`, which [`check_url`] refuses) rather than a
/// path.
pub fn is_remote_url(repo: &str) -> bool {
    url_scheme(repo).is_some() || is_scp_like(repo) || is_transport_syntax(repo)
}

/// Checks a remote URL: https, http, ssh (also scp-like), git or file,
/// without whitespace or control characters. The error says why.
pub fn check_url(url: &str) -> Result<(), String> {
    if url.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err("a URL has no whitespace or control characters".into());
    }
    if url.starts_with('-') {
        return Err("a URL does not start with `-`".into());
    }
    if is_transport_syntax(url) && url_scheme(url).is_none() {
        return Err(
            "Git's <transport>::<address> syntax is not supported: https, http, ssh, git and file URLs are"
                .into(),
        );
    }
    match url_scheme(url) {
        Some(s) => match s.as_str() {
            "https" | "http" | "ssh" | "git" | "git+ssh" | "ssh+git" => {
                let rest = url.split_once("://").map(|(_, r)| r).unwrap_or_default();
                if rest.is_empty() || rest.starts_with('/') {
                    Err("the URL names no host".into())
                } else {
                    Ok(())
                }
            }
            "file" => Ok(()),
            other => Err(format!(
                "the scheme {other:?} is not supported: https, http, ssh, git and file are"
            )),
        },
        None if is_scp_like(url) => Ok(()),
        None => Err("not a URL".into()),
    }
}

/// `url` with any password of its user part replaced, for messages.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((user, host)) if user.contains(':') => {
            let name = user.split(':').next().unwrap_or_default();
            format!("{scheme}://{name}:<redacted>@{host}{path}")
        }
        _ => url.to_string(),
    }
}

/// Credentials for a remote, from the Repository's `spec.git.secretRef`.
#[derive(Clone, PartialEq, Eq)]
pub enum Credentials {
    /// HTTP basic authentication (a `kubernetes.io/basic-auth` Secret).
    Basic {
        /// `data.username`.
        username: String,
        /// `data.password`.
        password: String,
    },
    /// A bearer token (`data.bearerToken`).
    Bearer {
        /// The token.
        token: String,
    },
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credentials::Basic { username, .. } => f
                .debug_struct("Basic")
                .field("username", username)
                .field("password", &"<redacted>")
                .finish(),
            Credentials::Bearer { .. } => f
                .debug_struct("Bearer")
                .field("token", &"<redacted>")
                .finish(),
        }
    }
}

impl Credentials {
    /// Reads Porch's Secret format: `data.username` and `data.password`
    /// (base64; a `kubernetes.io/basic-auth` Secret), or `data.bearerToken`
    /// (base64). `stringData` fields, as written in manifests, are read as
    /// plain text and win over `data`, as the API server merges them. The
    /// error says what is missing or malformed (never a secret value).
    pub fn from_secret(secret: &Value) -> Result<Credentials, String> {
        let field = |key: &str| -> Result<Option<String>, String> {
            if let Some(v) = secret["stringData"].get(key) {
                return v
                    .as_str()
                    .map(|s| Some(s.to_string()))
                    .ok_or_else(|| format!("stringData.{key} is not a string"));
            }
            match secret["data"].get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => {
                    let bytes = base64_decode(s)
                        .ok_or_else(|| format!("data.{key} is not valid base64"))?;
                    String::from_utf8(bytes)
                        .map(Some)
                        .map_err(|_| format!("data.{key} is not UTF-8 text"))
                }
                Some(_) => Err(format!("data.{key} is not a string")),
            }
        };
        let kind = secret["type"].as_str().unwrap_or_default();
        if !matches!(kind, "" | "Opaque" | "kubernetes.io/basic-auth") {
            return Err(format!(
                "type {kind:?} is not supported: use kubernetes.io/basic-auth (data.username, data.password) or data.bearerToken"
            ));
        }
        let check = |key: &str, value: &str| -> Result<(), String> {
            if value.is_empty() {
                Err(format!("{key} is empty"))
            } else if value.chars().any(char::is_control) {
                Err(format!("{key} holds control characters"))
            } else {
                Ok(())
            }
        };
        if let Some(token) = field("bearerToken")? {
            check("bearerToken", &token)?;
            return Ok(Credentials::Bearer { token });
        }
        match (field("username")?, field("password")?) {
            (Some(username), Some(password)) => {
                check("username", &username)?;
                check("password", &password)?;
                if username.contains(':') {
                    return Err(
                        "username holds `:`, which basic authentication cannot carry".into(),
                    );
                }
                Ok(Credentials::Basic { username, password })
            }
            (Some(_), None) => Err("data.password is missing".into()),
            (None, Some(_)) => Err("data.username is missing".into()),
            (None, None) => {
                Err("neither data.username and data.password nor data.bearerToken is set".into())
            }
        }
    }

    /// The `Authorization` header value.
    fn header(&self) -> String {
        match self {
            Credentials::Basic { username, password } => format!(
                "Authorization: Basic {}",
                base64_encode(format!("{username}:{password}").as_bytes())
            ),
            Credentials::Bearer { token } => format!("Authorization: Bearer {token}"),
        }
    }
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding.
fn base64_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(B64[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Standard base64 (padding optional, ASCII whitespace ignored); `None`
/// when malformed.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let digits: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    let trimmed = {
        let mut end = digits.len();
        while end > 0 && digits[end - 1] == b'=' {
            end -= 1;
        }
        if digits.len() - end > 2 {
            return None;
        }
        &digits[..end]
    };
    let mut out = Vec::with_capacity(trimmed.len() * 3 / 4);
    let mut acc = 0u32;
    let mut bits = 0;
    for &c in trimmed {
        let v = B64.iter().position(|&d| d == c)?;
        acc = (acc << 6) | v as u32;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push(((acc >> bits) & 0xff) as u8);
        }
    }
    // A lone trailing digit carries fewer than 8 bits: malformed.
    (trimmed.len() % 4 != 1).then_some(out)
}

/// One repository with a URL.
#[derive(Debug, Clone)]
pub struct RemoteConfig {
    /// The repository as the store sees it; `path` is the mirror.
    pub repo: GitRepoConfig,
    /// The remote (`spec.git.repo`).
    pub url: String,
    /// The Secret `spec.git.secretRef` names, for messages.
    pub secret: Option<String>,
    /// The Secret's credentials.
    pub credentials: Option<Credentials>,
}

/// The remote repositories of a set of objects: every Repository whose
/// `spec.git.repo` is a URL ([`is_remote_url`]), with its mirror from
/// `configs` (the same namespace and name) and the credentials of the
/// `kind: Secret` object of its namespace that `spec.git.secretRef.name`
/// names. `sources` say where each object was read, for errors, which name
/// the Repository and the field.
pub fn remote_configs(
    objects: &[Value],
    sources: &[String],
    configs: &[GitRepoConfig],
) -> StoreResult<Vec<RemoteConfig>> {
    let mut out = Vec::new();
    for (i, o) in objects.iter().enumerate() {
        if o["kind"] != "Repository" {
            continue;
        }
        let url = o["spec"]["git"]["repo"].as_str().unwrap_or_default();
        if !is_remote_url(url) {
            continue;
        }
        let name = o["metadata"]["name"].as_str().unwrap_or_default();
        let namespace = ns_or_default(o["metadata"]["namespace"].as_str().unwrap_or_default());
        let source = sources.get(i).map(String::as_str).unwrap_or("objects");
        let refuse = |field: &str, message: String| StoreError::Data {
            context: format!("{source} (Repository {namespace}/{name})"),
            message: format!("{field}: {message}"),
        };
        check_url(url).map_err(|why| refuse(&format!("spec.git.repo {url:?}"), why))?;
        let Some(repo) = configs
            .iter()
            .find(|c| c.name == name && c.namespace == namespace)
        else {
            continue;
        };
        let secret = o["spec"]["git"]["secretRef"]["name"]
            .as_str()
            .filter(|s| !s.is_empty());
        let credentials = match secret {
            None => None,
            Some(secret) => {
                let found = objects.iter().find(|s| {
                    s["kind"] == "Secret"
                        && s["metadata"]["name"].as_str() == Some(secret)
                        && ns_or_default(s["metadata"]["namespace"].as_str().unwrap_or_default())
                            == namespace
                });
                let found = found.ok_or_else(|| {
                    refuse(
                        &format!("spec.git.secretRef {secret:?}"),
                        format!("no Secret {secret} in namespace {namespace}"),
                    )
                })?;
                let credentials = Credentials::from_secret(found).map_err(|why| {
                    refuse(
                        &format!("spec.git.secretRef {secret:?}"),
                        format!("Secret {namespace}/{secret}: {why}"),
                    )
                })?;
                if !matches!(url_scheme(url).as_deref(), Some("https" | "http")) {
                    tracing::warn!(
                        repository = %format!("{namespace}/{name}"),
                        "spec.git.secretRef applies to http(s) remotes only; {} uses the system's ssh or git configuration",
                        redact_url(url)
                    );
                }
                Some(credentials)
            }
        };
        out.push(RemoteConfig {
            repo: repo.clone(),
            url: url.to_string(),
            secret: secret.map(str::to_string),
            credentials,
        });
    }
    Ok(out)
}

/// How hard a write tries against other writers.
#[derive(Debug, Clone)]
pub struct RemoteOptions {
    /// Attempts of one write whose push another writer's push rejected
    /// (the first included).
    pub max_attempts: u32,
    /// Pause after the first rejection; doubled after each next one (with
    /// up to as much again at random, so racing writers spread out).
    pub backoff: Duration,
    /// Seconds a transfer may stay below 1 byte/s before `git` gives up
    /// (`GIT_HTTP_LOW_SPEED_TIME`).
    pub stall_seconds: u32,
    /// A mirror that this process fetched from the same URL less than this
    /// long ago is not fetched again when a store opens it (zero: always
    /// fetched). Writes are unaffected: they push with leases, and a write
    /// that meets a newer remote fetches and is made again.
    pub reuse_fetch_for: Duration,
}

impl Default for RemoteOptions {
    fn default() -> Self {
        RemoteOptions {
            max_attempts: 5,
            backoff: Duration::from_millis(50),
            stall_seconds: 60,
            reuse_fetch_for: Duration::ZERO,
        }
    }
}

/// What the remote repositories did so far (for logs and tests).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct RemoteStats {
    /// Fetches (syncs, and refreshes after a rejected push).
    pub fetches: usize,
    /// Pushes that went through.
    pub pushes: usize,
    /// Pushes rejected because another writer pushed first.
    pub rejected_pushes: usize,
    /// Writes made again after such a rejection.
    pub retries: usize,
    /// Pushes that failed otherwise (transport, authentication, hooks).
    pub failed_pushes: usize,
}

#[derive(Default)]
struct Counters {
    fetches: AtomicUsize,
    pushes: AtomicUsize,
    rejected_pushes: AtomicUsize,
    retries: AtomicUsize,
    failed_pushes: AtomicUsize,
}

fn bump(c: &AtomicUsize) {
    c.fetch_add(1, Ordering::Relaxed);
}

type Refs = BTreeMap<String, Oid>;

/// What a store holds of one remote repository.
struct RemoteState {
    store: GitRevisions,
    /// The [`MirrorState::generation`] `store` has read.
    generation: u64,
    /// Why the remote could not be fetched when the store was opened (or
    /// last synced): the mirror is read as last fetched, and nothing is
    /// written to it until a sync succeeds.
    unreachable: Option<String>,
}

/// What the process knows of one mirror, shared by every store that opens
/// it ([`mirror_state`]). Outside a write, the mirror's tracked refs are
/// `known`.
#[derive(Default)]
struct MirrorState {
    /// The refs the remote had when last fetched or pushed to.
    known: Refs,
    /// Counts the changes of the mirror's refs (fetches, pushes, undone
    /// writes): a store that read an older generation reads again.
    generation: u64,
    /// When this process last fetched the mirror, and from which URL.
    fetched: Option<(std::time::Instant, String)>,
}

struct RemoteRepo {
    cfg: RemoteConfig,
    /// The mirror's state and lock, shared by every store of this process
    /// that opens the same mirror ([`mirror_state`]).
    mirror: Arc<Mutex<MirrorState>>,
    state: Mutex<RemoteState>,
}

/// PackageRevisions of local and remote repositories (see the module
/// documentation).
pub struct RemoteRevisions {
    local: GitRevisions,
    local_keys: std::collections::BTreeSet<(String, String)>,
    remotes: BTreeMap<(String, String), RemoteRepo>,
    options: RemoteOptions,
    counters: Counters,
    /// Writes go only while this is open (the reconciled object's shard,
    /// or the leader Lease); `None`: always.
    fence: Option<tokio::sync::watch::Receiver<bool>>,
}

/// The outcome of a push.
enum Pushed {
    Done,
    /// Another writer changed a ref first.
    Raced(String),
    Failed(StoreError),
}

impl RemoteRevisions {
    /// Opens `local` repositories as [`GitRevisions::open`] does, and each
    /// remote one: its mirror is created when missing, then synced.
    pub fn open(local: Vec<GitRepoConfig>, remotes: Vec<RemoteConfig>) -> StoreResult<Self> {
        Self::open_with(local, remotes, RemoteOptions::default())
    }

    /// Keeps the local repositories' owner index between processes
    /// ([`GitRevisions::with_owner_cache`]).
    pub fn with_owner_cache(mut self, path: PathBuf) -> Self {
        self.local = self.local.with_owner_cache(path);
        self
    }

    /// Writes the owner cache ([`GitRevisions::save_owner_cache`]).
    pub fn save_owner_cache(&self) -> StoreResult<()> {
        self.local.save_owner_cache()
    }

    /// [`RemoteRevisions::open`] with `options`.
    pub fn open_with(
        local: Vec<GitRepoConfig>,
        remotes: Vec<RemoteConfig>,
        options: RemoteOptions,
    ) -> StoreResult<Self> {
        let local_keys = local
            .iter()
            .map(|c| (c.namespace.clone(), c.name.clone()))
            .collect();
        let mut out = RemoteRevisions {
            local: GitRevisions::open(local)?,
            local_keys,
            remotes: BTreeMap::new(),
            options,
            counters: Counters::default(),
            fence: None,
        };
        for cfg in remotes {
            let key = (cfg.repo.namespace.clone(), cfg.repo.name.clone());
            let repo = out.open_remote(cfg)?;
            out.remotes.insert(key, repo);
        }
        Ok(out)
    }

    /// Writes (to local repositories and to remotes' mirrors, and each
    /// push) only while `gate` is open: a replica that lost the object's
    /// Lease stops at its next Git write, as at its next API write.
    pub fn fenced(mut self, gate: tokio::sync::watch::Receiver<bool>) -> Self {
        self.fence = Some(gate);
        self
    }

    fn check_fence(&self, what: &str) -> StoreResult<()> {
        match &self.fence {
            Some(gate) if !*gate.borrow() => Err(StoreError::NotLeader {
                what: what.to_string(),
            }),
            _ => Ok(()),
        }
    }

    fn open_remote(&self, cfg: RemoteConfig) -> StoreResult<RemoteRepo> {
        check_url(&cfg.url).map_err(|why| {
            StoreError::Invalid(format!(
                "Repository {}/{}: spec.git.repo {:?}: {why}",
                cfg.repo.namespace, cfg.repo.name, cfg.url
            ))
        })?;
        let path = &cfg.repo.path;
        let mirror = mirror_state(path);
        let mut held = mirror.lock().unwrap_or_else(|e| e.into_inner());
        let opened = Repository::open_bare(path).is_ok();
        let fresh = held.fetched.as_ref().is_some_and(|(at, url)| {
            *url == cfg.url && at.elapsed() < self.options.reuse_fetch_for
        });
        if opened && fresh {
            let store = GitRevisions::open(vec![cfg.repo.clone()])?;
            let generation = held.generation;
            drop(held);
            tracing::debug!(repository = %repo_key(&cfg), "the mirror was fetched moments ago: not fetched again");
            return Ok(RemoteRepo {
                cfg,
                mirror,
                state: Mutex::new(RemoteState {
                    store,
                    generation,
                    unreachable: None,
                }),
            });
        }
        if !opened {
            if path.exists() && !remove_unfinished_repository(path)? {
                return Err(StoreError::Invalid(format!(
                    "Repository {}/{}: the mirror {} is not a bare Git repository; remove it (it is a cache) and run again",
                    cfg.repo.namespace,
                    cfg.repo.name,
                    path.display()
                )));
            }
            init_bare(path, &cfg.repo.branch)?;
            tracing::info!(repository = %repo_key(&cfg), mirror = %path.display(), "created the mirror");
        }
        // A remote that cannot be reached fails only what writes to it:
        // its mirror is read as last fetched (empty if never), and the
        // other repositories go on.
        let unreachable = match self.fetch(&cfg) {
            Ok(known) => {
                held.fetched_now(known, &cfg.url);
                None
            }
            Err(e) if e.is_remote_unreachable() => {
                tracing::warn!(
                    repository = %repo_key(&cfg),
                    "{e}; its revisions are read as last fetched and nothing is written to it this run"
                );
                held.known = snapshot(path)?;
                Some(e.to_string())
            }
            Err(e) => return Err(e),
        };
        let store = GitRevisions::open(vec![cfg.repo.clone()])?;
        let generation = held.generation;
        drop(held);
        Ok(RemoteRepo {
            cfg,
            mirror,
            state: Mutex::new(RemoteState {
                store,
                generation,
                unreachable,
            }),
        })
    }

    /// This store, or the error of the first remote repository that could
    /// not be reached when it was opened: for a caller that is about that
    /// repository itself (the Repository controller's readiness), not the
    /// objects in it.
    pub fn require_reachable(self) -> StoreResult<Self> {
        for r in self.remotes.values() {
            if let Some(why) = lock(r)?.state.unreachable.clone() {
                return Err(StoreError::Remote {
                    context: "the remote could not be reached".into(),
                    message: why,
                });
            }
        }
        Ok(self)
    }

    /// What the remote repositories did so far.
    pub fn stats(&self) -> RemoteStats {
        let c = &self.counters;
        RemoteStats {
            fetches: c.fetches.load(Ordering::Relaxed),
            pushes: c.pushes.load(Ordering::Relaxed),
            rejected_pushes: c.rejected_pushes.load(Ordering::Relaxed),
            retries: c.retries.load(Ordering::Relaxed),
            failed_pushes: c.failed_pushes.load(Ordering::Relaxed),
        }
    }

    /// Whether `namespace/name` is a remote repository of this store.
    pub fn is_remote(&self, namespace: &str, name: &str) -> bool {
        self.remotes
            .contains_key(&(namespace.to_string(), name.to_string()))
    }

    /// Fetches every remote repository into its mirror (forced, pruned):
    /// afterwards the store reads what the remotes hold, and any write left
    /// unpushed on a mirror is gone.
    pub fn sync(&self) -> StoreResult<()> {
        for r in self.remotes.values() {
            self.sync_repo(r)?;
        }
        Ok(())
    }

    /// [`RemoteRevisions::sync`] of one repository.
    pub fn sync_repository(&self, namespace: &str, name: &str) -> StoreResult<()> {
        let r = self
            .remotes
            .get(&(namespace.to_string(), name.to_string()))
            .ok_or_else(|| {
                StoreError::Invalid(format!("no remote repository {namespace}/{name}"))
            })?;
        self.sync_repo(r)
    }

    fn sync_repo(&self, r: &RemoteRepo) -> StoreResult<()> {
        let mut st = lock(r)?;
        let known = self.fetch(&r.cfg)?;
        st.mirror.fetched_now(known, &r.cfg.url);
        st.state.unreachable = None;
        st.reread(r)
    }

    /// The local repositories' [`GitRevisions::finish_interrupted_moves`].
    /// Remote repositories have none to finish: their writes reach the
    /// remote whole or not at all, and a sync drops what did not.
    pub fn finish_interrupted_moves(&self) -> StoreResult<Vec<String>> {
        self.local.finish_interrupted_moves()
    }

    /// A `git` command on the mirror of `cfg`, with the credentials and
    /// the environment of every remote call.
    fn git(&self, cfg: &RemoteConfig) -> Command {
        let mut cmd = Command::new("git");
        cmd.arg("--git-dir").arg(&cfg.repo.path);
        for var in [
            "GIT_DIR",
            "GIT_WORK_TREE",
            "GIT_NAMESPACE",
            "GIT_INDEX_FILE",
            "GIT_OBJECT_DIRECTORY",
            "GIT_ALTERNATE_OBJECT_DIRECTORIES",
            "GIT_TRACE_CURL",
            "GIT_CURL_VERBOSE",
            "GIT_CONFIG_PARAMETERS",
        ] {
            cmd.env_remove(var);
        }
        cmd.env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_ASKPASS", "")
            .env("GIT_ALLOW_PROTOCOL", ALLOWED_PROTOCOLS)
            .env("GIT_HTTP_LOW_SPEED_LIMIT", "1")
            .env(
                "GIT_HTTP_LOW_SPEED_TIME",
                self.options.stall_seconds.max(1).to_string(),
            )
            .env("LC_ALL", "C")
            .env("LANGUAGE", "C")
            .stdin(Stdio::null());
        let mut config: Vec<(&str, String)> = Vec::new();
        if let Some(c) = &cfg.credentials {
            // Only these credentials: no helper answers for them.
            config.push(("credential.helper", String::new()));
            config.push(("http.extraHeader", c.header()));
        }
        cmd.env("GIT_CONFIG_COUNT", config.len().to_string());
        for (i, (k, v)) in config.into_iter().enumerate() {
            cmd.env(format!("GIT_CONFIG_KEY_{i}"), k);
            cmd.env(format!("GIT_CONFIG_VALUE_{i}"), v);
        }
        cmd
    }

    /// Runs `cmd`; the output, or the error of starting it.
    fn run(&self, cfg: &RemoteConfig, what: &str, mut cmd: Command) -> StoreResult<GitOutput> {
        let out = cmd.output().map_err(StoreError::io(format!(
            "Repository {}: running git {what}",
            repo_key(cfg)
        )))?;
        Ok(GitOutput {
            ok: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        })
    }

    /// Fetches the remote into the mirror; the mirror's tracked refs after.
    fn fetch(&self, cfg: &RemoteConfig) -> StoreResult<Refs> {
        bump(&self.counters.fetches);
        let mut cmd = self.git(cfg);
        cmd.args([
            "fetch",
            "--quiet",
            "--force",
            "--prune",
            "--atomic",
            "--no-tags",
            "--no-write-fetch-head",
            "--end-of-options",
        ])
        .arg(&cfg.url)
        .args(FETCH_REFSPECS);
        let out = self.run(cfg, "fetch", cmd)?;
        if !out.ok {
            return Err(self.remote_error(cfg, "fetch", &out.stderr));
        }
        tracing::debug!(repository = %repo_key(cfg), url = %redact_url(&cfg.url), "fetched");
        snapshot(&cfg.repo.path)
    }

    /// The error of a failed fetch or push: authentication, or transport.
    fn remote_error(&self, cfg: &RemoteConfig, what: &str, stderr: &str) -> StoreError {
        let detail = last_lines(stderr);
        let url = redact_url(&cfg.url);
        let message = if auth_failed(stderr) {
            match &cfg.secret {
                Some(s) => format!(
                    "authentication to {url} failed with the credentials of spec.git.secretRef {s:?} (git {what}: {detail})"
                ),
                None => format!(
                    "authentication to {url} failed, and spec.git.secretRef names no Secret (git {what}: {detail})"
                ),
            }
        } else {
            format!("git {what} {url}: {detail}")
        };
        StoreError::Remote {
            context: format!("Repository {}", repo_key(cfg)),
            message,
        }
    }

    /// Pushes `changes` atomically, each leased on its known value.
    fn push(&self, cfg: &RemoteConfig, changes: &[Change]) -> StoreResult<Pushed> {
        let mut cmd = self.git(cfg);
        cmd.args(["push", "--atomic", "--porcelain", "--no-verify"]);
        for c in changes {
            let lease = c.old.map(|o| o.to_string()).unwrap_or_default();
            cmd.arg(format!("--force-with-lease={}:{lease}", c.name));
        }
        cmd.arg("--end-of-options").arg(&cfg.url);
        let refspecs: Vec<OsString> = changes
            .iter()
            .map(|c| match c.new {
                Some(n) => format!("{n}:{}", c.name).into(),
                None => format!(":{}", c.name).into(),
            })
            .collect();
        cmd.args(refspecs);
        let out = self.run(cfg, "push", cmd)?;
        if out.ok {
            return Ok(Pushed::Done);
        }
        let rejected: Vec<&str> = out
            .stdout
            .lines()
            .filter(|l| l.starts_with('!') && l.contains('\t'))
            .collect();
        // Refused by the client's lease check, or by the server's ref
        // transaction (another push held or changed a ref meanwhile; a
        // transaction failing for another reason also lands here and
        // stops after the bounded attempts).
        const RACES: [&str; 9] = [
            "stale info",
            "fetch first",
            "non-fast-forward",
            "already exists",
            "failed to lock",
            "cannot lock",
            "failed to update ref",
            "incorrect old value",
            "atomic transaction failed",
        ];
        if let Some(line) = rejected
            .iter()
            .find(|l| RACES.iter().any(|r| l.contains(r)))
        {
            return Ok(Pushed::Raced(line.replace('\t', " ")));
        }
        if let Some(line) = rejected
            .iter()
            .find(|l| !l.contains("atomic push failed"))
            .or(rejected.first())
        {
            return Ok(Pushed::Failed(StoreError::Data {
                context: format!("Repository {}", repo_key(cfg)),
                message: format!(
                    "the remote {} refused the push: {}",
                    redact_url(&cfg.url),
                    line.replace('\t', " ")
                ),
            }));
        }
        Ok(Pushed::Failed(self.remote_error(cfg, "push", &out.stderr)))
    }

    /// Makes a write on the mirror of `r` and pushes what it changed (see
    /// the module documentation).
    fn write<T>(
        &self,
        r: &RemoteRepo,
        what: &str,
        op: &dyn Fn(&GitRevisions) -> StoreResult<T>,
    ) -> StoreResult<T> {
        let mut st = lock(r)?;
        let key = repo_key(&r.cfg);
        if let Some(why) = &st.state.unreachable {
            return Err(StoreError::Remote {
                context: format!("cannot {what}"),
                message: why.clone(),
            });
        }
        let max = self.options.max_attempts.max(1);
        let mut attempt = 1;
        loop {
            let before = snapshot(&r.cfg.repo.path)?;
            let result = op(&st.store);
            let after = snapshot(&r.cfg.repo.path)?;
            if before == after {
                // Nothing written (a read, a refusal, or a no-op).
                return result;
            }
            let value = match result {
                Ok(v) => v,
                Err(e) => {
                    tracing::warn!(repository = %key, "{what} failed on the mirror, undoing it: {e}");
                    self.restore(r, &mut st)?;
                    return Err(e);
                }
            };
            let changes = diff(&st.mirror.known, &after);
            if changes.is_empty() {
                return Ok(value);
            }
            if let Err(e) = self.check_fence(what) {
                // Not pushed: the mirror goes back to the remote's refs.
                self.restore(r, &mut st)?;
                return Err(e);
            }
            match self.push(&r.cfg, &changes)? {
                Pushed::Done => {
                    bump(&self.counters.pushes);
                    tracing::info!(repository = %key, refs = changes.len(), attempt, "{what}: pushed");
                    // The mirror changed: other stores read it again; this
                    // one made the change and has read it.
                    st.mirror.known = after;
                    st.mirror.generation += 1;
                    st.state.generation = st.mirror.generation;
                    return Ok(value);
                }
                Pushed::Failed(e) => {
                    bump(&self.counters.failed_pushes);
                    tracing::error!(repository = %key, "{what}: push failed, the mirror is put back to the remote's last known state: {e}");
                    self.restore(r, &mut st)?;
                    return Err(e);
                }
                Pushed::Raced(why) => {
                    bump(&self.counters.rejected_pushes);
                    self.restore(r, &mut st)?;
                    if attempt >= max {
                        tracing::error!(repository = %key, attempts = attempt, "{what}: other writers kept changing the remote: {why}");
                        return Err(StoreError::Conflict(format!(
                            "{what}: Repository {key}: another writer changed the remote {} each time; gave up after {attempt} attempts ({why})",
                            redact_url(&r.cfg.url)
                        )));
                    }
                    tracing::warn!(repository = %key, attempt, "{what}: another writer pushed first, fetching and writing again: {why}");
                    std::thread::sleep(self.pause(attempt));
                    let known = self.fetch(&r.cfg)?;
                    st.mirror.fetched_now(known, &r.cfg.url);
                    st.reread(r)?;
                    bump(&self.counters.retries);
                    attempt += 1;
                }
            }
        }
    }

    /// The pause before attempt `attempt + 1`: the backoff doubled per
    /// attempt, plus up to as much again (from the clock's nanoseconds).
    fn pause(&self, attempt: u32) -> Duration {
        let base = self
            .options
            .backoff
            .saturating_mul(1u32 << (attempt - 1).min(10));
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        base + base.mul_f64(f64::from(nanos % 1000) / 1000.0)
    }

    /// Puts the mirror's refs back to the known ones, and reopens the store
    /// (its cache read the undone refs).
    fn restore(&self, r: &RemoteRepo, st: &mut Locked<'_>) -> StoreResult<()> {
        restore_refs(&r.cfg.repo.path, &st.mirror.known)?;
        st.mirror.generation += 1;
        st.reread(r)
    }

    /// The repositories that may hold revision `name` of `ns` (those whose
    /// name is a prefix of it), remote ones first.
    fn targets(&self, ns: &str, name: &str) -> Vec<Option<&RemoteRepo>> {
        // Each prefix of the name up to a dot is looked up as a
        // repository name, so the cost does not grow with the fleet.
        let prefixes: Vec<(String, String)> = name
            .char_indices()
            .filter(|&(_, c)| c == '.')
            .map(|(i, _)| (ns.to_string(), name[..i].to_string()))
            .collect();
        let mut out: Vec<Option<&RemoteRepo>> = prefixes
            .iter()
            .filter_map(|k| self.remotes.get(k).map(Some))
            .collect();
        if prefixes.iter().any(|k| self.local_keys.contains(k)) {
            out.push(None);
        }
        out
    }

    /// Runs `op` on the repository holding `name`: a read, or a write
    /// (pushed when the repository is remote).
    fn by_name<T>(
        &self,
        ns: &str,
        name: &str,
        write: Option<&str>,
        op: &dyn Fn(&GitRevisions) -> StoreResult<T>,
    ) -> StoreResult<(T, Option<&RemoteRepo>)> {
        if let Some(what) = write {
            self.check_fence(what)?;
        }
        for target in self.targets(ns, name) {
            let result = match (target, write) {
                (None, _) => op(&self.local),
                (Some(r), None) => op(&lock(r)?.store),
                (Some(r), Some(what)) => self.write(r, what, op),
            };
            match result {
                Err(e) if e.is_not_found() => continue,
                other => return other.map(|v| (v, target)),
            }
        }
        Err(StoreError::NotFound {
            kind: "PackageRevision",
            namespace: ns.to_string(),
            name: name.to_string(),
        })
    }
}

/// The self lock of a remote repository's revision names its URL, not the
/// mirror.
fn with_url(mut pr: PackageRevision, r: Option<&RemoteRepo>) -> PackageRevision {
    if let Some(r) = r {
        if let Some(g) = pr.status.self_lock.as_mut().and_then(|l| l.git.as_mut()) {
            g.repo = r.cfg.url.clone();
        }
    }
    pr
}

struct GitOutput {
    ok: bool,
    stdout: String,
    stderr: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Change {
    name: String,
    old: Option<Oid>,
    new: Option<Oid>,
}

fn repo_key(cfg: &RemoteConfig) -> String {
    format!("{}/{}", cfg.repo.namespace, cfg.repo.name)
}

/// The state of the mirror at `path`, one per mirror directory in the
/// process: stores opened by concurrent reconciles (each opens its own)
/// share it. Its lock is held for every fetch, write and read of the
/// mirror, so no two happen at once and the before/after comparison of a
/// write sees only its own changes; the refs the remote is known to have
/// are the mirror's, whichever store fetched or pushed last.
fn mirror_state(path: &Path) -> Arc<Mutex<MirrorState>> {
    static LOCKS: LazyLock<Mutex<BTreeMap<PathBuf, Weak<Mutex<MirrorState>>>>> =
        LazyLock::new(Mutex::default);
    let key = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut locks = LOCKS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(lock) = locks.get(&key).and_then(Weak::upgrade) {
        return lock;
    }
    locks.retain(|_, l| l.strong_count() > 0);
    let lock = Arc::new(Mutex::new(MirrorState::default()));
    locks.insert(key, Arc::downgrade(&lock));
    lock
}

impl MirrorState {
    /// A fetch just brought `known` from `url`.
    fn fetched_now(&mut self, known: Refs, url: &str) {
        self.known = known;
        self.generation += 1;
        self.fetched = Some((std::time::Instant::now(), url.to_string()));
    }
}

/// A remote repository's state, with its mirror's lock held.
struct Locked<'a> {
    // Fields drop in order: the state before the mirror's lock.
    state: MutexGuard<'a, RemoteState>,
    mirror: MutexGuard<'a, MirrorState>,
}

impl Locked<'_> {
    /// Opens the store of `r` again, so that it reads the mirror as it is.
    fn reread(&mut self, r: &RemoteRepo) -> StoreResult<()> {
        self.state.store = GitRevisions::open(vec![r.cfg.repo.clone()])?;
        self.state.generation = self.mirror.generation;
        Ok(())
    }
}

impl std::ops::Deref for Locked<'_> {
    type Target = RemoteState;
    fn deref(&self) -> &RemoteState {
        &self.state
    }
}

impl std::ops::DerefMut for Locked<'_> {
    fn deref_mut(&mut self) -> &mut RemoteState {
        &mut self.state
    }
}

/// Locks the mirror of `r`, then its state; a store that has not read the
/// mirror's latest change (another store's fetch or write) reads it again.
fn lock(r: &RemoteRepo) -> StoreResult<Locked<'_>> {
    let mirror = r.mirror.lock().unwrap_or_else(|e| e.into_inner());
    let mut locked = Locked {
        state: r.state.lock().unwrap_or_else(|e| e.into_inner()),
        mirror,
    };
    if locked.state.generation != locked.mirror.generation {
        locked.reread(r)?;
    }
    Ok(locked)
}

/// The last lines of `git`'s error output, for a message.
fn last_lines(stderr: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let tail = &lines[lines.len().saturating_sub(3)..];
    let text = tail.join("; ");
    if text.is_empty() {
        "git gave no error message".to_string()
    } else {
        text.chars().take(600).collect()
    }
}

/// Whether `git`'s error output says the remote refused the credentials.
fn auth_failed(stderr: &str) -> bool {
    const SIGNS: [&str; 8] = [
        "Authentication failed",
        "could not read Username",
        "could not read Password",
        "terminal prompts disabled",
        "returned error: 401",
        "returned error: 403",
        "Permission denied (publickey",
        "HTTP Basic: Access denied",
    ];
    SIGNS.iter().any(|s| stderr.contains(s))
}

/// The tracked refs of the repository at `path`.
fn snapshot(path: &Path) -> StoreResult<Refs> {
    let repo = Repository::open_bare(path).map_err(StoreError::git(format!(
        "opening the mirror {}",
        path.display()
    )))?;
    let mut out = Refs::new();
    for r in repo
        .references()
        .map_err(StoreError::git("listing the mirror's refs"))?
    {
        let r = r.map_err(StoreError::git("reading a ref of the mirror"))?;
        let (Some(name), Some(target)) = (r.name(), r.target()) else {
            continue;
        };
        if TRACKED.iter().any(|t| name.starts_with(t)) {
            out.insert(name.to_string(), target);
        }
    }
    Ok(out)
}

/// The ref changes from `known` to `now`.
fn diff(known: &Refs, now: &Refs) -> Vec<Change> {
    let mut out = Vec::new();
    for (name, old) in known {
        match now.get(name) {
            Some(new) if new == old => {}
            new => out.push(Change {
                name: name.clone(),
                old: Some(*old),
                new: new.copied(),
            }),
        }
    }
    for (name, new) in now {
        if !known.contains_key(name) {
            out.push(Change {
                name: name.clone(),
                old: None,
                new: Some(*new),
            });
        }
    }
    out
}

/// Sets the tracked refs of the repository at `path` to `known` (deleting
/// the others).
fn restore_refs(path: &Path, known: &Refs) -> StoreResult<()> {
    let now = snapshot(path)?;
    let repo = Repository::open_bare(path).map_err(StoreError::git(format!(
        "opening the mirror {}",
        path.display()
    )))?;
    for name in now.keys().filter(|n| !known.contains_key(*n)) {
        if let Ok(mut r) = repo.find_reference(name) {
            r.delete().map_err(StoreError::git(format!(
                "restoring the mirror: deleting {name}"
            )))?;
        }
    }
    for (name, oid) in known {
        if now.get(name) != Some(oid) {
            repo.reference(name, *oid, true, "restore the remote's state")
                .map_err(StoreError::git(format!("restoring the mirror: {name}")))?;
        }
    }
    Ok(())
}

impl PackageRevisionStore for RemoteRevisions {
    fn fingerprint(&self, namespace: &str, filter: &PrFilter) -> StoreResult<Option<String>> {
        let Some(local) = self.local.fingerprint(namespace, filter)? else {
            return Ok(None);
        };
        let mut parts = vec![local];
        for ((ns, name), r) in &self.remotes {
            if ns != namespace || filter.repository.as_ref().is_some_and(|f| f != name) {
                continue;
            }
            match lock(r)?.store.fingerprint(namespace, filter)? {
                Some(f) => parts.push(format!("{name} {f}")),
                None => return Ok(None),
            }
        }
        Ok(Some(super::fingerprint_of(
            parts.iter().map(|p| p.as_bytes()),
        )))
    }

    fn list(&self, namespace: &str, filter: &PrFilter) -> StoreResult<Vec<PackageRevision>> {
        let mut out = self.local.list(namespace, filter)?;
        for ((ns, name), r) in &self.remotes {
            if ns != namespace || filter.repository.as_ref().is_some_and(|f| f != name) {
                continue;
            }
            let prs = lock(r)?.store.list(namespace, filter)?;
            out.extend(prs.into_iter().map(|p| with_url(p, Some(r))));
        }
        out.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        Ok(out)
    }

    fn get(&self, namespace: &str, name: &str) -> StoreResult<PackageRevision> {
        let (pr, r) = self.by_name(namespace, name, None, &|s| s.get(namespace, name))?;
        Ok(with_url(pr, r))
    }

    fn resources(&self, namespace: &str, name: &str) -> StoreResult<PackageRevisionResources> {
        self.by_name(namespace, name, None, &|s| s.resources(namespace, name))
            .map(|(v, _)| v)
    }

    fn update_resources(
        &self,
        ns: &str,
        name: &str,
        files: &Files,
        read: &str,
    ) -> StoreResult<PackageRevision> {
        let what = format!("update the resources of {name}");
        let (pr, r) = self.by_name(ns, name, Some(&what), &|s| {
            s.update_resources(ns, name, files, read)
        })?;
        Ok(with_url(pr, r))
    }

    fn create(&self, new: NewRevision) -> StoreResult<PackageRevision> {
        let key = (
            new.revision.metadata.namespace.clone(),
            new.revision.spec.repository.clone(),
        );
        let what = format!(
            "create {}",
            super::revision_name(
                &key.1,
                &new.revision.spec.package_name,
                &new.revision.spec.workspace_name
            )
        );
        self.check_fence(&what)?;
        match self.remotes.get(&key) {
            None => self.local.create(new),
            Some(r) => self
                .write(r, &what, &|s| s.create(new.clone()))
                .map(|pr| with_url(pr, Some(r))),
        }
    }

    fn update_lifecycle(
        &self,
        ns: &str,
        name: &str,
        lifecycle: Lifecycle,
    ) -> StoreResult<PackageRevision> {
        let what = format!("move {name} to {lifecycle:?}");
        let (pr, r) = self.by_name(ns, name, Some(&what), &|s| {
            s.update_lifecycle(ns, name, lifecycle)
        })?;
        Ok(with_url(pr, r))
    }

    fn update_metadata(
        &self,
        ns: &str,
        name: &str,
        metadata: &ObjectMeta,
    ) -> StoreResult<PackageRevision> {
        let what = format!("update the metadata of {name}");
        let (pr, r) = self.by_name(ns, name, Some(&what), &|s| {
            s.update_metadata(ns, name, metadata)
        })?;
        Ok(with_url(pr, r))
    }

    fn delete(&self, namespace: &str, name: &str) -> StoreResult<()> {
        let what = format!("delete {name}");
        self.by_name(namespace, name, Some(&what), &|s| s.delete(namespace, name))
            .map(|_| ())
    }

    fn render_status(&self, namespace: &str, name: &str) -> Option<RenderStatus> {
        self.by_name(namespace, name, None, &|s| {
            Ok(s.render_status(namespace, name))
        })
        .ok()
        .and_then(|(v, _)| v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_told_from_paths() {
        for url in [
            "https://example.com/org/repo.git",
            "http://127.0.0.1:8080/r.git",
            "ssh://git@example.com/r.git",
            "git@github.com:org/repo.git",
            "git://example.com/r.git",
            "file:///srv/git/r.git",
        ] {
            assert!(is_remote_url(url), "{url}");
            assert_eq!(check_url(url), Ok(()), "{url}");
        }
        for path in ["repos/r", "/abs/r.git", "git/r.git", "./a:b", "a/b@c:d"] {
            assert!(!is_remote_url(path), "{path}");
        }
        assert!(is_remote_url("ext::sh -c x"));
        for bad in [
            "ext::sh -c touch% /tmp/x",
            "fd::3",
            "ftp://example.com/r.git",
            "https://",
            "https:///path",
            "https://host/a b",
            "-oProxyCommand=x@host:r",
        ] {
            assert!(check_url(bad).is_err(), "{bad}");
        }
        assert_eq!(
            redact_url("https://user:secret@host/r.git"),
            "https://user:<redacted>@host/r.git"
        );
    }

    #[test]
    fn base64_round_trips() {
        for s in ["", "a", "ab", "abc", "abcd", "user:pässword", "x:y:z\u{1}"] {
            let e = base64_encode(s.as_bytes());
            assert_eq!(base64_decode(&e).as_deref(), Some(s.as_bytes()), "{s}");
        }
        assert_eq!(base64_encode(b"user:pass"), "dXNlcjpwYXNz");
        assert_eq!(
            base64_decode("dXNlcjpwYXNz\n").as_deref(),
            Some(&b"user:pass"[..])
        );
        assert_eq!(base64_decode("dXNlc"), None);
        assert_eq!(base64_decode("dX*l"), None);
        assert_eq!(base64_decode("dX==="), None);
    }

    #[test]
    fn secrets_in_porch_format() {
        let basic = serde_json::json!({"kind": "Secret", "type": "kubernetes.io/basic-auth",
            "data": {"username": "dXNlcg==", "password": "cGFzcw=="}});
        assert_eq!(
            Credentials::from_secret(&basic),
            Ok(Credentials::Basic {
                username: "user".into(),
                password: "pass".into()
            })
        );
        let bearer = serde_json::json!({"kind": "Secret", "data": {"bearerToken": "dG9r"}});
        assert_eq!(
            Credentials::from_secret(&bearer),
            Ok(Credentials::Bearer {
                token: "tok".into()
            })
        );
        let plain = serde_json::json!({"kind": "Secret",
            "stringData": {"username": "u", "password": "p"}});
        assert!(Credentials::from_secret(&plain).is_ok());
        for (bad, says) in [
            (
                serde_json::json!({"data": {"username": "dXNlcg=="}}),
                "password is missing",
            ),
            (
                serde_json::json!({"data": {"password": "%%%"}}),
                "not valid base64",
            ),
            (serde_json::json!({"data": {}}), "neither"),
            (
                serde_json::json!({"type": "kubernetes.io/ssh-auth", "data": {}}),
                "not supported",
            ),
            (
                serde_json::json!({"stringData": {"bearerToken": "a\nb"}}),
                "control",
            ),
        ] {
            let e = Credentials::from_secret(&bad).expect_err(says);
            assert!(e.contains(says), "{e}");
        }
        let shown = format!(
            "{:?}",
            Credentials::Basic {
                username: "u".into(),
                password: "hunter2".into()
            }
        );
        assert!(!shown.contains("hunter2"), "{shown}");
    }

    #[test]
    fn changes_are_creations_updates_and_deletions() {
        let a = Oid::from_str("1111111111111111111111111111111111111111").expect("oid");
        let b = Oid::from_str("2222222222222222222222222222222222222222").expect("oid");
        let known = Refs::from([("refs/heads/x".into(), a), ("refs/heads/gone".into(), a)]);
        let now = Refs::from([("refs/heads/x".into(), b), ("refs/tags/t".into(), b)]);
        let d = diff(&known, &now);
        assert_eq!(d.len(), 3);
        assert!(d.contains(&Change {
            name: "refs/heads/gone".into(),
            old: Some(a),
            new: None
        }));
        assert!(d.contains(&Change {
            name: "refs/tags/t".into(),
            old: None,
            new: Some(b)
        }));
        assert!(diff(&now, &now).is_empty());
    }
}
