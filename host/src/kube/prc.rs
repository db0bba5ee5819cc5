//! The v1alpha2 PackageRevision controller in Kubernetes mode: the
//! objects come from a watch cache (with upstream's field indexes: the
//! revisions of one package are found without a List call), writes go to
//! the API server (merge patches, server-side applies under upstream's
//! three field managers), content goes to the Repositories' Git.
//!
//! The reconcile itself is the core's ([`crate::prc::reconcile`]); this
//! module provides the [`PrApi`] over the cluster and the controller's
//! plumbing: the event filter (a new generation or a changed render
//! request), the render slots, and the requeue policy.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Client, ResourceExt};
use pv_core::api::package_revision::v1alpha2::PackageRevision as PrV2;
use pv_core::prc::reconcile::Config;
use serde_json::Value;
use tokio::runtime::Handle;
use tokio::sync::watch;

use super::api::Repository;
use super::shard::Gates;
use crate::engine_api::Core;
use crate::prc::content::StoreContent;
use crate::prc::fetch::GitFetch;
use crate::prc::{CallError, CallResult, CoreRenderer, Deps, PrApi, RenderSlots};
use crate::reconcile::DraftRenderer;
use crate::store::git::GitRepoConfig;
use crate::store::remote::{
    is_remote_url, mirror_path, Credentials, RemoteConfig, RemoteOptions, RemoteRevisions,
};

/// Name of this controller (metrics, logs).
pub const PACKAGE_REVISIONS: &str = "packagerevisions";

/// The v1alpha2 PackageRevision resource.
pub fn api_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("porch.kpt.dev", "v1alpha2", "PackageRevision"),
        "packagerevisions",
    )
}

/// The PackageRevision controller's flags (upstream's names).
#[derive(Debug, Clone, clap::Args)]
pub struct PrcArgs {
    /// Renders running at once; 0: no limit.
    #[arg(long = "packagerevisions.max-concurrent-renders", default_value_t = 20)]
    pub max_concurrent_renders: usize,
    /// Wait before trying again when every render slot is taken.
    #[arg(long = "packagerevisions.render-requeue-delay", default_value = "2s", value_parser = humantime::parse_duration)]
    pub render_requeue_delay: Duration,
    /// Reconciles running at once.
    #[arg(
        long = "packagerevisions.max-concurrent-reconciles",
        default_value_t = 50
    )]
    pub max_concurrent_reconciles: usize,
    /// Where Repositories' `spec.git.repo` paths are found (relative ones
    /// are under it).
    #[arg(
        long = "packagerevisions.git-root",
        default_value = "/var/lib/porch-variants/git"
    )]
    pub git_root: PathBuf,
    /// A Repository's Git mirror (a Repository with a URL) fetched less
    /// than this long ago is read as it is; 0: fetched at every reconcile.
    /// Writes always meet the remote as it is (leased pushes).
    #[arg(
        long = "packagerevisions.git-fetch-interval",
        default_value = "10s",
        value_parser = humantime::parse_duration
    )]
    pub git_fetch_interval: Duration,
}

/// What every reconcile of the controller shares.
pub struct PrcContext {
    /// Writes and uncached reads.
    pub client: Client,
    /// The v1alpha2 PackageRevisions.
    pub revisions: Store<DynamicObject>,
    /// Their names by repository/package and by owner, kept in step with
    /// `revisions` (each watch event is applied to both).
    pub index: Arc<super::cache::RevisionIndex>,
    /// The Repositories.
    pub repositories: Store<Repository>,
    /// Decisions.
    pub core: Arc<dyn Core + Send + Sync>,
    /// Renders drafts (`None`: drafts are not rendered).
    pub renderer: Option<Arc<DraftRenderer>>,
    /// Render slots.
    pub slots: Arc<RenderSlots>,
    /// The reconcile's configuration.
    pub config: Config,
    /// Base of relative repository paths.
    pub git_root: PathBuf,
    /// `--packagerevisions.git-fetch-interval`.
    pub git_fetch_interval: Duration,
    /// Which objects this replica may write.
    pub gates: Gates,
}

/// Whether `gate` lets this replica write `what`; an error naming it if not.
pub(crate) fn leading(gate: &watch::Receiver<bool>, what: &str) -> CallResult<()> {
    if *gate.borrow() {
        Ok(())
    } else {
        Err(CallError::Failed(format!(
            "{what}: not written, this replica no longer holds the object's Lease"
        )))
    }
}

/// A reconcile failed; the controller backs off and retries.
#[derive(Debug, thiserror::Error)]
pub enum PrcError {
    /// The reconcile returned an error.
    #[error("PackageRevision {object}: {message}")]
    Reconcile {
        /// `namespace/name`.
        object: String,
        /// The error.
        message: String,
    },
}

/// A call's error from an API error: 404 is NotFound, 409 AlreadyExists.
pub(crate) fn api_err(what: &str, e: kube::Error) -> CallError {
    match &e {
        kube::Error::Api(s) if s.code == 404 => {
            CallError::NotFound(format!("{what}: {}", s.message))
        }
        kube::Error::Api(s) if s.code == 409 => {
            CallError::AlreadyExists(format!("{what}: {}", s.message))
        }
        _ => CallError::Failed(format!("{what}: {e}")),
    }
}

/// [`PrApi`] over the cluster, for one reconcile on a blocking thread.
pub struct KubePrApi<'a> {
    ctx: &'a PrcContext,
    handle: Handle,
    gate: watch::Receiver<bool>,
}

impl KubePrApi<'_> {
    fn api(&self, ns: &str) -> Api<DynamicObject> {
        Api::namespaced_with(self.ctx.client.clone(), ns, &api_resource())
    }

    fn leading(&self, what: &str) -> CallResult<()> {
        leading(&self.gate, what)
    }

    fn key(object: &Value) -> (String, String) {
        let m = &object["metadata"];
        (
            m["namespace"].as_str().unwrap_or_default().to_string(),
            m["name"].as_str().unwrap_or_default().to_string(),
        )
    }
}

impl PrApi for KubePrApi<'_> {
    fn get(&self, namespace: &str, name: &str) -> CallResult<Value> {
        let obj = self
            .ctx
            .revisions
            .get(&ObjectRef::new_with(name, api_resource()).within(namespace))
            .ok_or_else(|| {
                CallError::NotFound(format!("PackageRevision {namespace}/{name} not found"))
            })?;
        serde_json::to_value(obj.as_ref()).map_err(|e| CallError::Failed(e.to_string()))
    }

    fn read(&self, namespace: &str, name: &str) -> CallResult<Value> {
        let what = format!("get PackageRevision {namespace}/{name}");
        let obj = self
            .handle
            .block_on(self.api(namespace).get(name))
            .map_err(|e| api_err(&what, e))?;
        serde_json::to_value(obj).map_err(|e| CallError::Failed(e.to_string()))
    }

    fn get_repository(&self, namespace: &str, name: &str) -> CallResult<Value> {
        let repo = self
            .ctx
            .repositories
            .get(&ObjectRef::new(name).within(namespace))
            .ok_or_else(|| {
                CallError::NotFound(format!(
                    "repositories.config.porch.kpt.dev \"{name}\" not found"
                ))
            })?;
        serde_json::to_value(repo.as_ref()).map_err(|e| CallError::Failed(e.to_string()))
    }

    fn merge_patch(&self, namespace: &str, name: &str, patch: &Value) -> CallResult<()> {
        let what = format!("patch PackageRevision {namespace}/{name}");
        self.leading(&what)?;
        self.handle
            .block_on(self.api(namespace).patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(patch),
            ))
            .map(|_| ())
            .map_err(|e| api_err(&what, e))
    }

    fn apply_status(&self, manager: &str, object: &Value) -> CallResult<()> {
        let (ns, name) = Self::key(object);
        let what = format!("apply status of PackageRevision {ns}/{name} as {manager}");
        self.leading(&what)?;
        let params = PatchParams::apply(manager).force();
        self.handle
            .block_on(
                self.api(&ns)
                    .patch_status(&name, &params, &Patch::Apply(object)),
            )
            .map(|_| ())
            .map_err(|e| api_err(&what, e))
    }

    fn apply_spec(&self, manager: &str, object: &Value) -> CallResult<()> {
        let (ns, name) = Self::key(object);
        let what = format!("apply spec of PackageRevision {ns}/{name} as {manager}");
        self.leading(&what)?;
        let params = PatchParams::apply(manager).force();
        self.handle
            .block_on(self.api(&ns).patch(&name, &params, &Patch::Apply(object)))
            .map(|_| ())
            .map_err(|e| api_err(&what, e))
    }

    fn list(&self, namespace: &str, repository: &str, package: &str) -> CallResult<Vec<Value>> {
        // Served by the cache with upstream's field indexes
        // (`spec.repository`, `spec.packageName`), in name order as the
        // API server lists.
        let fields = std::collections::BTreeMap::from([
            ("spec.repository".to_string(), repository.to_string()),
            ("spec.packageName".to_string(), package.to_string()),
        ]);
        // Only the package's objects, found by the index, are copied and
        // typed.
        let mut items: Vec<Value> = self
            .ctx
            .index
            .by_package(namespace, repository, package)
            .into_iter()
            .filter_map(|name| {
                self.ctx
                    .revisions
                    .get(&ObjectRef::new_with(&name, api_resource()).within(namespace))
            })
            .filter_map(|o| serde_json::to_value(o.as_ref()).ok())
            .filter(|v| {
                serde_json::from_value::<PrV2>(v.clone())
                    .is_ok_and(|pr| pv_core::prc::fieldindex::matches_fields(&pr, &fields))
            })
            .collect();
        items.sort_by(|a, b| {
            a["metadata"]["name"]
                .as_str()
                .cmp(&b["metadata"]["name"].as_str())
        });
        Ok(items)
    }
}

/// The Git repositories of the Repositories of `namespace` named in `names`
/// (those a reconcile reads: its cost does not grow with the namespace's
/// Repositories, and only their Secrets are read): a path (relative to
/// `root`, or absolute) in `spec.git.repo`, or a URL, read through a
/// mirror under `root/.mirrors` with the credentials of the Secret
/// `spec.git.secretRef` names (read from the API); `spec.git.branch`
/// (default `main`), `spec.git.directory`.
pub fn repo_configs(
    ctx: &PrcContext,
    handle: &Handle,
    namespace: &str,
    names: &BTreeSet<String>,
) -> Result<(Vec<GitRepoConfig>, Vec<RemoteConfig>), String> {
    let repositories: Vec<Arc<Repository>> = names
        .iter()
        .filter_map(|name| {
            ctx.repositories
                .get(&ObjectRef::new(name).within(namespace))
        })
        .collect();
    let (mut local, mut remote) = (Vec::new(), Vec::new());
    for r in &repositories {
        let Ok(v) = serde_json::to_value(r.as_ref()) else {
            continue;
        };
        let git = &v["spec"]["git"];
        let Some(repo) = git["repo"].as_str().filter(|s| !s.is_empty()) else {
            continue;
        };
        let name = r.name_any();
        let mut cfg = GitRepoConfig {
            name: name.clone(),
            namespace: namespace.to_string(),
            path: PathBuf::new(),
            branch: git["branch"]
                .as_str()
                .filter(|b| !b.is_empty())
                .unwrap_or("main")
                .to_string(),
            directory: git["directory"].as_str().unwrap_or_default().to_string(),
        };
        if !is_remote_url(repo) {
            let path = PathBuf::from(repo);
            cfg.path = if path.is_absolute() {
                path
            } else {
                ctx.git_root.join(path)
            };
            local.push(cfg);
            continue;
        }
        cfg.path = mirror_path(&ctx.git_root.join(".mirrors"), namespace, &name);
        let secret = git["secretRef"]["name"].as_str().filter(|s| !s.is_empty());
        let credentials = match secret {
            None => None,
            Some(secret) => {
                let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", "Secret"));
                let api: Api<DynamicObject> =
                    Api::namespaced_with(ctx.client.clone(), namespace, &ar);
                let obj = handle.block_on(api.get(secret)).map_err(|e| {
                    format!("Repository {namespace}/{name}: spec.git.secretRef {secret:?}: {e}")
                })?;
                let value = serde_json::to_value(&obj).map_err(|e| e.to_string())?;
                Some(Credentials::from_secret(&value).map_err(|why| {
                    format!("Repository {namespace}/{name}: spec.git.secretRef {secret:?}: {why}")
                })?)
            }
        };
        remote.push(RemoteConfig {
            repo: cfg,
            url: repo.to_string(),
            secret: secret.map(str::to_string),
            credentials,
        });
    }
    Ok((local, remote))
}

/// The Repositories a reconcile of v1alpha2 PackageRevision `obj` reads:
/// its own, and that of every revision its spec names (the source's
/// upstream, an upgrade's old and new upstream and current package), found
/// in the cache or by the prefixes of the name.
pub fn revision_scope(ctx: &PrcContext, obj: &DynamicObject) -> BTreeSet<String> {
    fn strings<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
        match v {
            Value::String(s) => out.push(s),
            Value::Array(items) => items.iter().for_each(|i| strings(i, out)),
            Value::Object(fields) => fields.values().for_each(|f| strings(f, out)),
            _ => {}
        }
    }
    let ns = obj.namespace().unwrap_or_default();
    let spec = &obj.data["spec"];
    let mut names = BTreeSet::new();
    if let Some(r) = spec["repository"].as_str() {
        names.insert(r.to_string());
    }
    let mut named = Vec::new();
    strings(spec, &mut named);
    for s in named {
        if let Some((_, repository, _)) = ctx.index.package_of(&ns, s) {
            names.insert(repository);
        }
        // As the Git store finds a revision not yet cached: by the
        // prefixes of its name that are Repositories.
        for (i, _) in s.match_indices('.') {
            let prefix = &s[..i];
            if ctx
                .repositories
                .get(&ObjectRef::new(prefix).within(&ns))
                .is_some()
            {
                names.insert(prefix.to_string());
            }
        }
    }
    names
}

/// The usable FunctionConfigs among watched objects, in name order; one
/// the CRD would refuse is logged and left out.
pub fn function_configs(
    objects: &[Arc<DynamicObject>],
) -> Vec<pv_core::api::function_config::FunctionConfig> {
    let mut out: Vec<pv_core::api::function_config::FunctionConfig> = objects
        .iter()
        .filter_map(|o| {
            let key = format!("{}/{}", o.namespace().unwrap_or_default(), o.name_any());
            let config: pv_core::api::function_config::FunctionConfig = match serde_json::to_value(
                o.as_ref(),
            )
            .and_then(serde_json::from_value)
            {
                Ok(c) => c,
                Err(e) => {
                    tracing::warn!(functionconfig = %key, error = %e, "FunctionConfig not used");
                    return None;
                }
            };
            match config.invalid() {
                Some(why) => {
                    tracing::warn!(functionconfig = %key, %why, "FunctionConfig not used");
                    None
                }
                None => Some(config),
            }
        })
        .collect();
    out.sort_by(|a, b| {
        (&a.metadata.namespace, &a.metadata.name).cmp(&(&b.metadata.namespace, &b.metadata.name))
    });
    out
}

/// Whether an update of a PackageRevision should wake the controller:
/// upstream's GenerationChangedPredicate or a changed render-request
/// annotation (absent = "").
pub fn wakes(old: &DynamicObject, new: &DynamicObject) -> bool {
    let ann = |o: &DynamicObject| {
        o.annotations()
            .get(pv_core::prc::RENDER_REQUEST_ANNOTATION)
            .cloned()
            .unwrap_or_default()
    };
    old.metadata.generation != new.metadata.generation || ann(old) != ann(new)
}

/// Reconciles one v1alpha2 PackageRevision.
#[tracing::instrument(skip_all, fields(packagerevision = %format!("{}/{}", obj.namespace().unwrap_or_default(), obj.name_any()), shard = ctx.gates.shard_of(&obj.namespace().unwrap_or_default(), &obj.name_any())))]
pub async fn reconcile(obj: Arc<DynamicObject>, ctx: Arc<PrcContext>) -> Result<Action, PrcError> {
    let (ns, name) = (obj.namespace().unwrap_or_default(), obj.name_any());
    let object = format!("{ns}/{name}");
    let gate = ctx.gates.gate(&ns, &name);
    if !*gate.borrow() {
        return Ok(if ctx.gates.is_sharded() {
            Action::await_change()
        } else {
            Action::requeue(Duration::from_secs(5))
        });
    }
    let handle = Handle::current();
    let c = ctx.clone();
    let (n, nm) = (ns.clone(), name.clone());
    let scope = revision_scope(&ctx, &obj);
    let outcome = tokio::task::spawn_blocking(move || -> Result<_, String> {
        let (local, remote) = repo_configs(&c, &handle, &n, &scope)?;
        let options = RemoteOptions {
            reuse_fetch_for: c.git_fetch_interval,
            ..RemoteOptions::default()
        };
        let git = RemoteRevisions::open_with(local, remote, options)
            .map_err(|e| e.to_string())?
            .fenced(gate.clone());
        let api = KubePrApi {
            ctx: &c,
            handle,
            gate,
        };
        let content = StoreContent::new(&git).with_objects(&api);
        let renderer = c.renderer.as_ref().map(|r| CoreRenderer {
            core: c.core.as_ref(),
            renderer: r,
        });
        let fetch = GitFetch {
            cache: c.git_root.join(".fetch"),
            base: c.git_root.clone(),
        };
        let deps = Deps {
            core: c.core.as_ref(),
            api: &api,
            content: &content,
            renderer: renderer.as_ref().map(|r| r as &dyn crate::prc::Renderer),
            slots: &c.slots,
            fetcher: &fetch,
        };
        crate::prc::reconcile(&deps, &n, &nm, &crate::clock::now(), &c.config)
            .map_err(|e| e.to_string())
    })
    .await
    .map_err(|e| PrcError::Reconcile {
        object: object.clone(),
        message: e.to_string(),
    })?
    .map_err(|message| PrcError::Reconcile {
        object: object.clone(),
        message,
    })?;
    if let Some(message) = outcome.error {
        return Err(PrcError::Reconcile { object, message });
    }
    Ok(if outcome.requeue_after_ms > 0 {
        Action::requeue(Duration::from_millis(outcome.requeue_after_ms))
    } else if outcome.requeue {
        Action::requeue(Duration::from_millis(10))
    } else {
        Action::await_change()
    })
}

/// The backoff of a failed reconcile.
pub fn error_policy(_obj: Arc<DynamicObject>, e: &PrcError, _ctx: Arc<PrcContext>) -> Action {
    tracing::warn!(error = %e, "packagerevision reconcile failed");
    Action::requeue(Duration::from_secs(5))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(name: &str, spec: Value) -> Arc<DynamicObject> {
        Arc::new(
            serde_json::from_value(serde_json::json!({
                "apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "FunctionConfig",
                "metadata": {"name": name, "namespace": "porch-fn-system"},
                "spec": spec,
            }))
            .expect("object"),
        )
    }

    /// Watched FunctionConfigs in name order; one the CRD would refuse is
    /// left out, not the others.
    #[test]
    fn watched_function_configs_are_read_and_bad_ones_left_out() {
        let objects = vec![
            object(
                "set-namespace",
                serde_json::json!({"image": "set-namespace",
                    "goExecutor": {"tags": ["v0.4.5"]}}),
            ),
            object("broken", serde_json::json!({"image": "broken"})),
            object(
                "apply-setters",
                serde_json::json!({"image": "apply-setters",
                    "podExecutor": {"tags": ["~0.2"], "timeToLive": "30m"}}),
            ),
        ];
        let configs = function_configs(&objects);
        let names: Vec<&str> = configs.iter().map(|c| c.metadata.name.as_str()).collect();
        assert_eq!(names, ["apply-setters", "set-namespace"]);
        assert_eq!(
            configs[0]
                .spec
                .pod_executor
                .as_ref()
                .map(|p| p.tuning["timeToLive"].clone()),
            Some(serde_json::json!("30m"))
        );
    }
}
