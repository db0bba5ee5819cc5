//! The v1alpha2 PackageRevision controller in local mode: the objects are
//! kept by [`LocalApi`] under the directory's state, the content is the
//! directory's Git repositories, and `porch-variants rpkg`'s porchctl verbs
//! (`init`, `clone`, `copy`, `upgrade`, `pull`, `push`, and the lifecycle
//! verbs) write the object as porchctl would and run the reconcile until it
//! settles.

use std::collections::BTreeMap;
use std::path::Path;

use pv_core::api::package_revision::v1alpha2::PackageRevision as PrV2;
use pv_core::api::{Lifecycle, PackageRevision};
use pv_core::prc::reconcile::{Config, Outcome};
use pv_core::prc::{object_name, RENDER_REQUEST_ANNOTATION};
use serde_json::{json, Value};

use super::cli::LocalError;
use crate::clock::now;
use crate::engine_api::Core;
use crate::prc::content::{StagedPush, StagedPushes, StoreContent};
use crate::prc::fetch::GitFetch;
use crate::prc::local_api::LocalApi;
use crate::prc::{CallError, CoreRenderer, Deps, PrApi, RenderSlots};
use crate::reconcile::DraftRenderer;
use crate::store::{PackageRevisionStore, PrFilter};

/// How many passes a reconcile gets to settle (a source, a render and a
/// publish each end a pass with a requeue).
const MAX_PASSES: usize = 10;

/// The label the repository controller puts on the objects it discovers.
pub const REPOSITORY_LABEL: &str = "porch.kpt.dev/repository";

/// The field manager of the objects made from packages found in Git.
pub const DISCOVERY_MANAGER: &str = "repository-controller";

/// Everything a local PackageRevision reconcile works with.
pub struct Session<'a> {
    /// The objects.
    pub api: LocalApi,
    /// The Git repositories.
    pub store: &'a dyn PackageRevisionStore,
    /// The core.
    pub core: &'a dyn Core,
    /// Renders drafts.
    pub renderer: &'a DraftRenderer,
    /// Reads `cloneFrom.git` packages.
    pub fetch: GitFetch,
    slots: RenderSlots,
    no_slots: RenderSlots,
    /// The variants' pushes, waiting for their render.
    staged: StagedPushes,
    /// The repositories discovered (or found unchanged) by this process.
    discovered: std::sync::Mutex<std::collections::BTreeSet<(String, String)>>,
    now: String,
}

fn call_err(e: CallError) -> LocalError {
    LocalError::Usage(e.to_string())
}

impl<'a> Session<'a> {
    /// Opens the objects of `dir` (its Repositories from `repositories`).
    pub fn open(
        dir: &Path,
        repositories: &[Value],
        store: &'a dyn PackageRevisionStore,
        core: &'a dyn Core,
        renderer: &'a DraftRenderer,
    ) -> Result<Self, LocalError> {
        let state = dir.join(".porch-variants");
        let now = now();
        Ok(Session {
            api: LocalApi::load(&state, repositories, &now).map_err(call_err)?,
            store,
            core,
            renderer,
            fetch: GitFetch {
                cache: state.join("git-cache"),
                base: dir.to_path_buf(),
            },
            slots: RenderSlots::new(0),
            no_slots: RenderSlots::none(),
            staged: StagedPushes::default(),
            discovered: Default::default(),
            now,
        })
    }

    /// Writes the objects' table in one file (the end of a command that
    /// wrote; see [`LocalApi::compact`]).
    pub fn compact(&self) -> Result<(), LocalError> {
        self.api.compact().map_err(call_err)
    }

    /// Reconciles one object until it asks for nothing more; the last
    /// outcome.
    pub fn settle(&self, namespace: &str, name: &str) -> Result<Outcome, LocalError> {
        self.settle_with(namespace, name, false)
    }

    /// [`Session::settle`]; with `defer_render`, no render slot is free,
    /// so a render is put off (the object stays not Ready, awaiting it).
    fn settle_with(
        &self,
        namespace: &str,
        name: &str,
        defer_render: bool,
    ) -> Result<Outcome, LocalError> {
        let content = StoreContent::new(self.store)
            .with_objects(&self.api)
            .with_staged(&self.staged);
        let renderer = CoreRenderer {
            core: self.core,
            renderer: self.renderer,
        };
        let deps = Deps {
            core: self.core,
            api: &self.api,
            content: &content,
            renderer: Some(&renderer),
            slots: if defer_render {
                &self.no_slots
            } else {
                &self.slots
            },
            fetcher: &self.fetch,
        };
        let mut outcome = Outcome::default();
        for _ in 0..MAX_PASSES {
            outcome = crate::prc::reconcile(&deps, namespace, name, &self.now, &Config::default())
                .map_err(|e| LocalError::Usage(e.to_string()))?;
            if outcome.error.is_some() || (defer_render && outcome.requeue_after_ms > 0) {
                break;
            }
            if !outcome.requeue && outcome.requeue_after_ms == 0 {
                // A write that changed the spec (the Kptfile's gates and
                // metadata) is a new generation: the API server's watch
                // would wake the controller again.
                let Ok(obj) = self.api.get(namespace, name) else {
                    break;
                };
                let generation = obj["metadata"]["generation"].as_i64().unwrap_or(0);
                let observed = obj["status"]["observedGeneration"].as_i64().unwrap_or(0);
                if generation == observed && obj["metadata"]["deletionTimestamp"].is_null() {
                    break;
                }
            }
        }
        Ok(outcome)
    }

    /// Reconciles every object the controller has something to do for
    /// ([`needs_reconcile`]: a new generation, a render request, a
    /// deletion, or not Ready yet), as a controller retries; a write event
    /// for each object the reconcile changed (rendered, published,
    /// deleted, or a status that moved).
    pub fn retry_unready(&self) -> Result<Vec<crate::reconcile::Event>, LocalError> {
        let mut events = Vec::new();
        for (ns, name) in self.api.keys_where(needs_reconcile) {
            let version = |api: &LocalApi| {
                api.get(&ns, &name)
                    .ok()
                    .map(|o| o["metadata"]["resourceVersion"].clone())
            };
            let before = version(&self.api);
            let outcome = self.settle(&ns, &name)?;
            if version(&self.api) == before {
                continue;
            }
            let detail = match (&outcome.error, self.object(&ns, &name)) {
                (Some(e), _) => format!("error: {e}"),
                (None, Ok(pr)) => describe(&pr),
                (None, Err(_)) => "deleted".to_string(),
            };
            events.push(crate::reconcile::Event::new(
                format!("PackageRevision {ns}/{name}"),
                "reconciled",
                detail,
            ));
        }
        Ok(events)
    }

    /// Objects for the revisions found in Git that have none (the
    /// Repository controller's discovery, §10.5): spec from Git, no
    /// source, and the revision's status seeded. A repository whose refs
    /// are as they were when every revision in it last had an object
    /// ([`LocalApi::discovered`]) is not read.
    pub fn discover(&self, namespace: &str) -> Result<Vec<String>, LocalError> {
        let mut made = Vec::new();
        for repository in self.api.repository_names(namespace) {
            let filter = PrFilter {
                repository: Some(repository.clone()),
                ..PrFilter::default()
            };
            let fingerprint = self.store.fingerprint(namespace, &filter)?;
            if fingerprint.is_some() && fingerprint == self.api.discovered(namespace, &repository) {
                self.note_discovered(namespace, &repository);
                continue;
            }
            for pr in self.store.list(namespace, &filter)? {
                if self.api.get(namespace, &pr.metadata.name).is_ok() {
                    continue;
                }
                self.api.create(&discovered(&pr)).map_err(call_err)?;
                let status = json!({
                    "apiVersion": "porch.kpt.dev/v1alpha2", "kind": "PackageRevision",
                    "metadata": {"name": pr.metadata.name, "namespace": namespace},
                    "status": seeded_status(&pr),
                });
                self.api
                    .apply_status(DISCOVERY_MANAGER, &status)
                    .map_err(call_err)?;
                made.push(pr.metadata.name);
            }
            if let Some(f) = fingerprint {
                self.api.set_discovered(namespace, &repository, &f);
            }
            self.note_discovered(namespace, &repository);
        }
        Ok(made)
    }

    fn note_discovered(&self, namespace: &str, repository: &str) {
        if let Ok(mut d) = self.discovered.lock() {
            d.insert((namespace.to_string(), repository.to_string()));
        }
    }

    /// At the end of a run in which every write to Git went through the
    /// objects (local mode on v1alpha2): the repositories discovered in
    /// it still have an object for every revision, at their new refs.
    pub fn keep_discovered(&self) -> Result<(), LocalError> {
        let repositories = self
            .discovered
            .lock()
            .map(|d| d.clone())
            .unwrap_or_default();
        for (namespace, repository) in repositories {
            let filter = PrFilter {
                repository: Some(repository.clone()),
                ..PrFilter::default()
            };
            if let Some(f) = self.store.fingerprint(&namespace, &filter)? {
                self.api.set_discovered(&namespace, &repository, &f);
            }
        }
        Ok(())
    }

    /// The object named `name`, typed.
    pub fn object(&self, namespace: &str, name: &str) -> Result<PrV2, LocalError> {
        let v = self.api.get(namespace, name).map_err(call_err)?;
        serde_json::from_value(v).map_err(|e| LocalError::Usage(format!("{name}: {e}")))
    }

    /// Creates `object` and reconciles it until it settles; the object
    /// after.
    pub fn create_and_settle(&self, object: Value) -> Result<(PrV2, Outcome), LocalError> {
        let created = self.api.create(&object).map_err(call_err)?;
        let ns = created["metadata"]["namespace"]
            .as_str()
            .unwrap_or("default");
        let name = created["metadata"]["name"].as_str().unwrap_or_default();
        let outcome = self.settle(ns, name)?;
        Ok((self.object(ns, name)?, outcome))
    }

    /// Sets `spec.lifecycle` and reconciles.
    pub fn set_lifecycle(
        &self,
        namespace: &str,
        name: &str,
        lifecycle: Lifecycle,
    ) -> Result<(PrV2, Outcome), LocalError> {
        let obj = self.api.get(namespace, name).map_err(call_err)?;
        let mut spec = obj["spec"].clone();
        spec["lifecycle"] = json!(lifecycle);
        self.api
            .set_spec(namespace, name, &spec)
            .map_err(call_err)?;
        let outcome = self.settle(namespace, name)?;
        Ok((self.object(namespace, name)?, outcome))
    }

    /// Deletes the object (the controller deletes the revision from Git
    /// and lets the object go).
    pub fn delete(&self, namespace: &str, name: &str) -> Result<Outcome, LocalError> {
        self.api.delete(namespace, name).map_err(call_err)?;
        if self.api.get(namespace, name).is_err() {
            return Ok(Outcome::default());
        }
        self.settle(namespace, name)
    }

    /// Records new content of a draft: asks for a render with the
    /// object's resource version, as porch-server does, and reconciles.
    pub fn request_render(&self, namespace: &str, name: &str) -> Result<Outcome, LocalError> {
        let obj = self.api.get(namespace, name).map_err(call_err)?;
        let version = format!(
            "{}-{}",
            obj["metadata"]["resourceVersion"].as_str().unwrap_or("0"),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis())
                .unwrap_or(0)
        );
        self.api
            .merge_patch(
                namespace,
                name,
                &json!({"metadata": {"annotations": {RENDER_REQUEST_ANNOTATION: version}}}),
            )
            .map_err(call_err)?;
        self.settle(namespace, name)
    }
}

impl Session<'_> {
    fn wake_with(
        &self,
        namespace: &str,
        name: &str,
        defer_render: bool,
    ) -> crate::store::StoreResult<()> {
        match self.settle_with(namespace, name, defer_render) {
            Ok(_) => Ok(()),
            Err(LocalError::Store(e)) => Err(e),
            Err(e) => Err(crate::store::StoreError::Data {
                context: format!("reconciling PackageRevision {namespace}/{name}"),
                message: e.to_string(),
            }),
        }
    }
}

impl crate::store::v1alpha2::SourceController for Session<'_> {
    fn wake(&self, namespace: &str, name: &str) -> crate::store::StoreResult<()> {
        self.wake_with(namespace, name, false)
    }

    /// Runs the source now and leaves the render for later, as a
    /// controller whose render slots are all taken does: the variant's
    /// push asks for a render of the mutated draft, and the run's last
    /// sweep ([`Session::retry_unready`]) renders a draft the variant did
    /// not change. One render per new draft instead of two.
    fn declared(&self, namespace: &str, name: &str) -> crate::store::StoreResult<()> {
        self.wake_with(namespace, name, true)
    }

    /// Holds the pushed files for the render the push requested, so the
    /// rendered package is one commit; what the reconcile did not write
    /// (a render that failed, or put off) is written as pushed, as
    /// porch-server stores a push before it renders.
    fn push(
        &self,
        namespace: &str,
        name: &str,
        files: &crate::store::Files,
        read: &str,
    ) -> crate::store::StoreResult<bool> {
        self.staged.stage(
            namespace,
            name,
            StagedPush {
                files: files.clone(),
                read: read.to_string(),
            },
        );
        let settled = self.wake_with(namespace, name, false);
        if let Some(left) = self.staged.take(namespace, name) {
            self.store
                .update_resources(namespace, name, &left.files, &left.read)?;
        }
        settled.map(|()| true)
    }
}

/// The object the repository controller makes for a revision found in
/// Git, with the owner references, labels and annotations recorded with
/// it in Git (a revision a variant made in v1alpha1 mode stays the
/// variant's).
fn discovered(pr: &PackageRevision) -> Value {
    let meta = pv_core::variant::v1alpha2::variant_metadata(&pr.metadata);
    let mut labels = meta.labels.clone();
    labels.insert(REPOSITORY_LABEL.to_string(), pr.spec.repository.clone());
    let mut metadata = json!({
        "name": pr.metadata.name,
        "namespace": pr.metadata.namespace,
        "labels": labels,
    });
    if !meta.annotations.is_empty() {
        metadata["annotations"] = json!(meta.annotations);
    }
    if !meta.owner_references.is_empty() {
        metadata["ownerReferences"] = json!(meta.owner_references);
    }
    json!({
        "apiVersion": "porch.kpt.dev/v1alpha2",
        "kind": "PackageRevision",
        "metadata": metadata,
        "spec": {
            "packageName": pr.spec.package_name,
            "repository": pr.spec.repository,
            "workspaceName": pr.spec.workspace_name,
            "lifecycle": pr.spec.lifecycle,
        },
    })
}

fn seeded_status(pr: &PackageRevision) -> Value {
    let mut s = serde_json::Map::new();
    if pr.spec.lifecycle.is_published() {
        s.insert("revision".into(), json!(pr.spec.revision));
        if !pr.status.published_by.is_empty() {
            s.insert("publishedBy".into(), json!(pr.status.published_by));
        }
        if let Some(at) = &pr.status.publish_timestamp {
            s.insert("publishedAt".into(), json!(at));
        }
    }
    if let Some(l) = &pr.status.self_lock {
        s.insert("selfLock".into(), json!(l));
    }
    if let Some(l) = &pr.status.upstream_lock {
        s.insert("upstreamLock".into(), json!(l));
    }
    Value::Object(s)
}

/// The annotation on objects declared in the directory's YAML files (the
/// file's objects are the object's spec; an object whose declaration is
/// gone is deleted).
pub const DECLARED_ANNOTATION: &str = "porch-variants.dev/declared";

/// The field manager of the specs declared in the directory's files.
pub const FILES_MANAGER: &str = "porch-variants-local";

/// Whether `v` is a v1alpha2 PackageRevision.
pub fn is_v1alpha2(v: &Value) -> bool {
    v["apiVersion"] == "porch.kpt.dev/v1alpha2" && v["kind"] == "PackageRevision"
}

/// Whether the controller has something to do for `obj` (the events
/// upstream's controller is woken by: a new generation, a render request,
/// a deletion), or one that is not Ready and is tried again.
pub fn needs_reconcile(obj: &Value) -> bool {
    let meta = &obj["metadata"];
    let status = &obj["status"];
    if !meta["deletionTimestamp"].is_null() {
        return true;
    }
    if status["observedGeneration"].as_i64().unwrap_or(0)
        != meta["generation"].as_i64().unwrap_or(0)
    {
        return true;
    }
    let requested = meta["annotations"][RENDER_REQUEST_ANNOTATION]
        .as_str()
        .unwrap_or_default();
    if !requested.is_empty() && Some(requested) != status["observedPrrResourceVersion"].as_str() {
        return true;
    }
    let ready = status["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "Ready"));
    // Not Ready: tried again on every run (the controller backs off and
    // retries in a cluster; a run is local mode's retry).
    ready.is_none_or(|r| r["status"] != "True")
}

/// One object after `local`'s pass over the v1alpha2 objects.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PrLine {
    /// `namespace/name`.
    pub object: String,
    /// What happened (`reconciled`, `deleted`, `error: ...`).
    pub detail: String,
    /// Whether it ended well (no error, not failed).
    pub ok: bool,
}

/// `local`'s pass over the v1alpha2 objects: the directory's declared
/// objects are created, updated or deleted to match the files, then every
/// object with something to do is reconciled until it settles.
pub fn reconcile_declared(s: &Session<'_>, declared: &[Value]) -> Result<Vec<PrLine>, LocalError> {
    let mut lines = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for d in declared {
        let ns = d["metadata"]["namespace"]
            .as_str()
            .filter(|n| !n.is_empty())
            .unwrap_or("default");
        let name = d["metadata"]["name"].as_str().unwrap_or_default();
        seen.insert((ns.to_string(), name.to_string()));
        if s.api.get(ns, name).is_err() {
            let mut obj = d.clone();
            obj["metadata"]["namespace"] = json!(ns);
            obj["metadata"]["annotations"][DECLARED_ANNOTATION] = json!("true");
            // A file that leaves the lifecycle out declares a draft, as
            // `rpkg init` makes one, and leaves its lifecycle to others
            // (an approval policy, `rpkg propose`): the file applies only
            // the fields it has.
            if obj["spec"]["lifecycle"].is_null() {
                obj["spec"]["lifecycle"] = json!("Draft");
            }
            s.api.create(&obj).map_err(call_err)?;
        }
        // The file's spec is applied as its own field manager, so the
        // fields the controller owns (readiness gates, package metadata
        // from the Kptfile) stay; labels and annotations are merged.
        let mut applied = d.clone();
        applied["metadata"]["namespace"] = json!(ns);
        s.api
            .apply_spec(FILES_MANAGER, &applied)
            .map_err(call_err)?;
        let mut meta = serde_json::Map::new();
        for key in ["labels", "annotations"] {
            if d["metadata"][key].is_object() {
                meta.insert(key.to_string(), d["metadata"][key].clone());
            }
        }
        meta.entry("annotations").or_insert_with(|| json!({}))[DECLARED_ANNOTATION] = json!("true");
        s.api
            .merge_patch(ns, name, &json!({ "metadata": meta }))
            .map_err(call_err)?;
    }
    let undeclared = s.api.keys_where(|obj| {
        obj["metadata"]["annotations"][DECLARED_ANNOTATION] == "true"
            && obj["metadata"]["deletionTimestamp"].is_null()
    });
    for (ns, name) in undeclared {
        if !seen.contains(&(ns.clone(), name.clone())) {
            s.api.delete(&ns, &name).map_err(call_err)?;
        }
    }
    for (ns, name) in s.api.keys_where(needs_reconcile) {
        let outcome = s.settle(&ns, &name)?;
        let (detail, ok) = match (&outcome.error, s.object(&ns, &name)) {
            (Some(e), _) => (format!("error: {e}"), false),
            (None, Ok(pr)) => (describe(&pr), check(&name, &pr, &outcome).is_ok()),
            (None, Err(_)) => ("deleted".to_string(), true),
        };
        lines.push(PrLine {
            object: format!("PackageRevision {ns}/{name}"),
            detail,
            ok,
        });
    }
    Ok(lines)
}

/// Whether `dir` has v1alpha2 PackageRevision objects.
pub fn has_objects(dir: &Path) -> bool {
    dir.join(".porch-variants/packagerevisions").is_dir()
}

/// A new object as porchctl makes it.
pub fn new_object(
    namespace: &str,
    repository: &str,
    package: &str,
    workspace: &str,
    source: Value,
) -> Result<Value, LocalError> {
    let name = object_name(repository, package, workspace);
    if name.is_empty() {
        return Err(LocalError::Usage(
            "--repository, the package name and --workspace are required".into(),
        ));
    }
    Ok(json!({
        "apiVersion": "porch.kpt.dev/v1alpha2",
        "kind": "PackageRevision",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "packageName": package,
            "repository": repository,
            "workspaceName": workspace,
            "lifecycle": "Draft",
            "source": source,
        },
    }))
}

/// The `Ready` and `Rendered` conditions, a line for people.
pub fn describe(pr: &PrV2) -> String {
    let cond = |t: &str| {
        pr.status
            .conditions
            .iter()
            .find(|c| c.type_ == t)
            .map(|c| {
                if c.message.is_empty() {
                    format!("{t}={}", c.status)
                } else {
                    format!("{t}={} ({})", c.status, c.message)
                }
            })
            .unwrap_or_else(|| format!("{t}=?"))
    };
    format!(
        "{} {:?} {} {}",
        pr.metadata.name,
        pr.spec.lifecycle,
        cond("Ready"),
        cond("Rendered")
    )
}

/// An outcome that failed, as an error naming the object.
pub fn check(name: &str, pr: &PrV2, outcome: &Outcome) -> Result<(), LocalError> {
    if let Some(e) = &outcome.error {
        return Err(LocalError::Usage(format!("{name}: {e}")));
    }
    let failed = pr
        .status
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready" && c.status == "False" && c.reason != "Pending");
    match failed {
        Some(c) => Err(LocalError::Usage(format!("{name}: {}", c.message))),
        None => Ok(()),
    }
}

/// `rpkg init`.
#[derive(Debug, Clone, clap::Args)]
pub struct InitArgs {
    /// Package name (path in the repository).
    pub package: String,
    /// Repository to create it in.
    #[arg(long)]
    pub repository: String,
    /// Workspace of the new revision.
    #[arg(long)]
    pub workspace: String,
    /// Kptfile `info.description`.
    #[arg(long, default_value = "")]
    pub description: String,
    /// Kptfile `info.keywords`.
    #[arg(long, value_delimiter = ',')]
    pub keywords: Vec<String>,
    /// Kptfile `info.site`.
    #[arg(long, default_value = "")]
    pub site: String,
}

/// `rpkg clone`.
#[derive(Debug, Clone, clap::Args)]
pub struct CloneArgs {
    /// A published revision's name, or a Git repository (path or URL).
    pub source: String,
    /// Package name of the clone.
    pub target: String,
    /// Repository of the clone.
    #[arg(long)]
    pub repository: String,
    /// Workspace of the clone.
    #[arg(long)]
    pub workspace: String,
    /// Directory of the package in a Git source.
    #[arg(long, default_value = "")]
    pub directory: String,
    /// Ref of a Git source (tag, branch or commit).
    #[arg(long = "ref", default_value = "main")]
    pub reference: String,
}

/// `rpkg copy`.
#[derive(Debug, Clone, clap::Args)]
pub struct CopyArgs {
    /// A published revision.
    pub source: String,
    /// Workspace of the new revision.
    #[arg(long)]
    pub workspace: String,
}

/// `rpkg upgrade`.
#[derive(Debug, Clone, clap::Args)]
pub struct UpgradeArgs {
    /// The published downstream revision to upgrade (or `--all`, or
    /// `--selector`).
    pub source: Option<String>,
    /// Upgrade the latest published revision of every cloned package.
    #[arg(long)]
    pub all: bool,
    /// Upgrade the latest published revision of every cloned package whose
    /// labels match (`team=a`, `tier in (edge)`, `!canary`).
    #[arg(long, short = 'l', value_name = "LABELS")]
    pub selector: Option<String>,
    /// Upstream revision to upgrade to (default: the latest).
    #[arg(long)]
    pub revision: Option<i64>,
    /// Workspace of the new revision.
    #[arg(long)]
    pub workspace: String,
    /// `resource-merge` (default), `fast-forward`, `force-delete-replace`
    /// or `copy-merge`.
    #[arg(long, default_value = "resource-merge", value_parser = [
        "resource-merge", "fast-forward", "force-delete-replace", "copy-merge",
    ])]
    pub strategy: String,
}

fn finish(s: &Session<'_>, pr: &PrV2, outcome: &Outcome, verb: &str) -> Result<(), LocalError> {
    if let Err(e) = check(&pr.metadata.name, pr, outcome) {
        // A revision whose source failed has no content: the object goes
        // too, so that the same command can be run again once fixed. (One
        // whose render failed stays, to be fixed by a push.)
        let source_failed = pr
            .status
            .conditions
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == "False" && c.reason == "Failed");
        if source_failed {
            if let Err(cleanup) = s.delete(&pr.metadata.namespace, &pr.metadata.name) {
                tracing::warn!(name = %pr.metadata.name, error = %cleanup, "removing the failed revision");
            }
        }
        return Err(e);
    }
    crate::outln!("{} {verb}", pr.metadata.name);
    Ok(())
}

/// `rpkg init`.
pub fn init(s: &Session<'_>, ns: &str, a: &InitArgs) -> Result<(), LocalError> {
    let source =
        json!({"init": {"description": a.description, "keywords": a.keywords, "site": a.site}});
    let obj = new_object(ns, &a.repository, &a.package, &a.workspace, source)?;
    let (pr, outcome) = s.create_and_settle(obj)?;
    finish(s, &pr, &outcome, "created")
}

/// `rpkg clone`: by reference when `source` names an object, else from
/// Git.
pub fn clone(s: &Session<'_>, ns: &str, a: &CloneArgs) -> Result<(), LocalError> {
    s.discover(ns)?;
    let source = if s.api.get(ns, &a.source).is_ok() {
        json!({"cloneFrom": {"upstreamRef": {"name": a.source}}})
    } else {
        json!({"cloneFrom": {"type": "git", "git": {
            "repo": a.source, "ref": a.reference, "directory": a.directory}}})
    };
    let obj = new_object(ns, &a.repository, &a.target, &a.workspace, source)?;
    let (pr, outcome) = s.create_and_settle(obj)?;
    finish(s, &pr, &outcome, "created")
}

/// `rpkg copy`.
pub fn copy(s: &Session<'_>, ns: &str, a: &CopyArgs) -> Result<(), LocalError> {
    s.discover(ns)?;
    let src = s.object(ns, &a.source)?;
    let source = json!({"copyFrom": {"name": a.source}});
    let obj = new_object(
        ns,
        &src.spec.repository,
        &src.spec.package_name,
        &a.workspace,
        source,
    )?;
    let (pr, outcome) = s.create_and_settle(obj)?;
    finish(s, &pr, &outcome, "created")
}

/// `rpkg upgrade`: the old upstream is the revision the downstream's
/// upstream lock points at; the new one its package's revision
/// `--revision`, or the latest.
/// What one upgrade did.
enum Upgraded {
    /// The new revision was created.
    Created,
    /// The source is already at the newest published upstream revision.
    UpToDate(String),
}

/// `rpkg upgrade`: one named revision, or (`--all`, `--selector`) the
/// latest published revision of every cloned package, each with one line
/// and a summary line at the end; a revision that cannot be upgraded is
/// named with why and the others go on.
pub fn upgrade(s: &Session<'_>, ns: &str, a: &UpgradeArgs) -> Result<(), LocalError> {
    s.discover(ns)?;
    let selector = match &a.selector {
        Some(text) => Some(
            pv_core::api::label_selector::LabelSelector::parse(text)
                .map_err(|e| LocalError::Usage(format!("--selector {text:?}: {e}")))?,
        ),
        None => None,
    };
    let bulk = a.all || selector.is_some();
    let source = match (&a.source, bulk) {
        (Some(_), true) => {
            return Err(LocalError::Usage(
                "name a revision, or pass --all or --selector, not both".into(),
            ))
        }
        (None, false) => {
            return Err(LocalError::Usage(
                "name the revision to upgrade, or pass --all or --selector".into(),
            ))
        }
        (Some(name), false) => Some(name),
        (None, true) => None,
    };
    let all: Vec<PrV2> = s
        .api
        .all()
        .into_iter()
        .filter_map(|v| serde_json::from_value(v).ok())
        .filter(|p: &PrV2| p.metadata.namespace == ns)
        .collect();
    if let Some(name) = source {
        return match upgrade_one(s, ns, &all, name, a)? {
            Upgraded::Created => Ok(()),
            Upgraded::UpToDate(why) => {
                eprintln!("{why}");
                Ok(())
            }
        };
    }
    // The latest published revision of each cloned package the selector
    // picks.
    let mut latest: BTreeMap<(&str, &str), &PrV2> = BTreeMap::new();
    for p in &all {
        let cloned = p
            .status
            .upstream_lock
            .as_ref()
            .and_then(|l| l.git.as_ref())
            .is_some();
        if !cloned
            || p.spec.lifecycle != Lifecycle::Published
            || selector
                .as_ref()
                .is_some_and(|sel| !sel.matches(&p.metadata.labels))
        {
            continue;
        }
        let key = (p.spec.repository.as_str(), p.spec.package_name.as_str());
        if latest
            .get(&key)
            .is_none_or(|q| q.status.revision < p.status.revision)
        {
            latest.insert(key, p);
        }
    }
    let (mut created, mut current, mut refused) = (0, 0, 0);
    for p in latest.values() {
        match upgrade_one(s, ns, &all, &p.metadata.name, a) {
            Ok(Upgraded::Created) => created += 1,
            Ok(Upgraded::UpToDate(why)) => {
                crate::outln!("{why}");
                current += 1;
            }
            Err(e) => {
                crate::outln!("{}: refused: {e}", p.metadata.name);
                refused += 1;
            }
        }
    }
    crate::outln!("{created} upgraded, {current} already up to date, {refused} refused");
    if refused > 0 {
        return Err(LocalError::Usage(format!(
            "{refused} revision(s) could not be upgraded (named above)"
        )));
    }
    Ok(())
}

/// Upgrades `name` (a published downstream revision of `all`).
fn upgrade_one(
    s: &Session<'_>,
    ns: &str,
    all: &[PrV2],
    name: &str,
    a: &UpgradeArgs,
) -> Result<Upgraded, LocalError> {
    let down = s.object(ns, name)?;
    let lock = down
        .status
        .upstream_lock
        .as_ref()
        .and_then(|l| l.git.clone())
        .ok_or_else(|| {
            LocalError::Usage(format!("{name}: has no upstream lock; it was not cloned"))
        })?;
    let old = all
        .iter()
        .find(|p| {
            p.status
                .self_lock
                .as_ref()
                .and_then(|l| l.git.as_ref())
                .is_some_and(|g| !lock.commit.is_empty() && g.commit == lock.commit)
        })
        .ok_or_else(|| {
            LocalError::Usage(format!(
                "{name}: no revision matches its upstream lock ({} {} at {})",
                lock.repo, lock.r#ref, lock.commit
            ))
        })?;
    let candidates = all.iter().filter(|p| {
        p.spec.repository == old.spec.repository
            && p.spec.package_name == old.spec.package_name
            && p.spec.lifecycle.is_published()
    });
    let new = match a.revision {
        Some(n) => candidates.into_iter().find(|p| p.status.revision == n),
        None => candidates.max_by_key(|p| p.status.revision),
    }
    .ok_or_else(|| {
        LocalError::Usage(format!(
            "{name}: no published revision {} of {}",
            a.revision.map(|n| n.to_string()).unwrap_or_default(),
            old.spec.package_name
        ))
    })?;
    if new.metadata.name == old.metadata.name {
        return Ok(Upgraded::UpToDate(format!(
            "{name}: already at revision {} of {}, the newest published; nothing to upgrade",
            old.status.revision, old.spec.package_name
        )));
    }
    let source = json!({"upgrade": {
        "oldUpstream": {"name": old.metadata.name},
        "newUpstream": {"name": new.metadata.name},
        "currentPackage": {"name": down.metadata.name},
        "strategy": a.strategy,
    }});
    let obj = new_object(
        ns,
        &down.spec.repository,
        &down.spec.package_name,
        &a.workspace,
        source,
    )?;
    let (pr, outcome) = s.create_and_settle(obj)?;
    finish(s, &pr, &outcome, "created")?;
    Ok(Upgraded::Created)
}

/// `rpkg pull NAME DIR`: the revision's files into `dir`.
pub fn pull(s: &Session<'_>, ns: &str, name: &str, dir: &Path) -> Result<(), LocalError> {
    let res = s.store.resources(ns, name)?;
    let files = res.spec.resources.unwrap_or_default();
    std::fs::create_dir_all(dir).map_err(crate::store::StoreError::io(format!(
        "creating {}",
        dir.display()
    )))?;
    crate::package_dir::write_changes(dir, &Default::default(), &files)
        .map_err(|e| LocalError::Usage(format!("{name}: {e}")))?;
    crate::outln!("{name}: {} files written to {}", files.len(), dir.display());
    Ok(())
}

/// `rpkg push NAME DIR`: `dir`'s files become the draft's, then the
/// controller renders them.
pub fn push(s: &Session<'_>, ns: &str, name: &str, dir: &Path) -> Result<(), LocalError> {
    let files = super::cli::read_package_dir(dir)?;
    if !files.contains_key("Kptfile") {
        return Err(LocalError::Usage(format!(
            "{}: package must contain Kptfile at root",
            dir.display()
        )));
    }
    refuse_unrendered(s, name, &files)?;
    s.store.update_resources(ns, name, &files, "")?;
    if s.api.get(ns, name).is_err() {
        s.discover(ns)?;
    }
    let outcome = s.request_render(ns, name)?;
    let pr = s.object(ns, name)?;
    check(name, &pr, &outcome)?;
    crate::outln!("{name} pushed: {}", describe(&pr));
    Ok(())
}

/// Porch's rule for a push: a package whose render fails is not saved
/// (the error is returned) unless its Kptfile asks for
/// `kpt.dev/save-on-render-failure`.
fn refuse_unrendered(
    s: &Session<'_>,
    name: &str,
    files: &crate::store::Files,
) -> Result<(), LocalError> {
    let save_anyway = files
        .get("Kptfile")
        .and_then(|t| pv_core::render::kptfile::decode(t).ok())
        .and_then(|k| k.annotations.get("kpt.dev/save-on-render-failure").cloned())
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    if save_anyway {
        return Ok(());
    }
    let rendered = {
        let mut runtime = s
            .renderer
            .runtime
            .lock()
            .map_err(|_| LocalError::Usage("the function runtime is unusable".into()))?;
        s.core
            .render_package(files.clone(), &s.renderer.options(), &mut **runtime)
            .map_err(|e| LocalError::Usage(format!("{name}: rendering: {e}")))?
    };
    match rendered.failure {
        None => Ok(()),
        Some(f) => Err(LocalError::Usage(format!(
            "{name}: push refused, nothing was saved: the package does not render: {} \
             (a Kptfile annotated kpt.dev/save-on-render-failure: \"true\" is saved anyway)",
            f.detail.trim_end().replace('\n', "; ")
        ))),
    }
}

/// `rpkg get`: the objects, as porchctl prints them.
pub fn get(
    s: &Session<'_>,
    ns: &str,
    names: &[String],
    output: super::cli::RpkgOutput,
) -> Result<(), LocalError> {
    s.discover(ns)?;
    let objs: Vec<Value> = s
        .api
        .all()
        .into_iter()
        .filter(|o| o["metadata"]["namespace"] == ns)
        .filter(|o| {
            names.is_empty()
                || names
                    .iter()
                    .any(|n| o["metadata"]["name"].as_str() == Some(n))
        })
        .collect();
    print_revisions(&objs, output, names.len() == 1, |o| {
        Row::new(
            o,
            o["spec"]["repository"].as_str().unwrap_or_default(),
            o["status"]["revision"].as_i64().unwrap_or(0),
            o["metadata"]["labels"][pv_core::prc::LATEST_REVISION_LABEL]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        )
    })
}

/// One row of porchctl's table of package revisions (porch-server's
/// table: name, package, workspace, revision, latest, lifecycle,
/// repository).
pub struct Row([String; 7]);

impl Row {
    /// The row of `o` with the cells its API version keeps elsewhere.
    pub fn new(o: &Value, repository: &str, revision: i64, latest: String) -> Self {
        let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
        Row([
            s(&o["metadata"]["name"]),
            s(&o["spec"]["packageName"]),
            s(&o["spec"]["workspaceName"]),
            revision.to_string(),
            if latest.is_empty() {
                "false".into()
            } else {
                latest
            },
            s(&o["spec"]["lifecycle"]),
            repository.to_string(),
        ])
    }
}

/// Prints objects for scripts: JSON (an array), or YAML (the object when
/// one was named, else a `List`, as kubectl prints them); nothing for the
/// table formats.
pub fn print_objects(
    objects: &[Value],
    output: super::cli::RpkgOutput,
    one_named: bool,
) -> Result<(), LocalError> {
    use super::cli::RpkgOutput;
    match output {
        RpkgOutput::Json => {
            crate::outln!(
                "{}",
                serde_json::to_string_pretty(objects).unwrap_or_default()
            );
        }
        RpkgOutput::Yaml => {
            let doc = match objects {
                [one] if one_named => one.clone(),
                _ => serde_json::json!({"apiVersion": "v1", "kind": "List", "items": objects}),
            };
            let text = pv_core::yaml::emit_stream(
                &[pv_core::yaml::from_json_ordered(&doc)],
                pv_core::yaml::Format::Kyaml,
            )
            .map_err(|e| LocalError::Usage(format!("printing YAML: {e}")))?;
            crate::outln!("{}", text.trim_end_matches('\n'));
        }
        RpkgOutput::Text | RpkgOutput::Wide => {}
    }
    Ok(())
}

/// Rows laid out as kubectl prints a table: each column as wide as its
/// widest cell, three spaces apart, the last one unpadded.
pub fn table_lines(rows: &[Vec<String>]) -> Vec<String> {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![0usize; columns];
    for r in rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    rows.iter()
        .map(|r| {
            let mut line = String::new();
            for (i, cell) in r.iter().enumerate() {
                if i + 1 == r.len() {
                    line.push_str(cell);
                } else {
                    line.push_str(&format!("{cell:<w$}   ", w = widths[i]));
                }
            }
            line
        })
        .collect()
}

/// Prints package revisions as `output` asks: porchctl's table (columns
/// as wide as their widest cell, three spaces apart, as kubectl prints
/// them), JSON (an array), or YAML (the object when one was named, else a
/// `List`).
pub fn print_revisions(
    objects: &[Value],
    output: super::cli::RpkgOutput,
    one_named: bool,
    row: impl Fn(&Value) -> Row,
) -> Result<(), LocalError> {
    use super::cli::RpkgOutput;
    match output {
        RpkgOutput::Json | RpkgOutput::Yaml => print_objects(objects, output, one_named)?,
        RpkgOutput::Text | RpkgOutput::Wide => {
            let header = [
                "NAME",
                "PACKAGE",
                "WORKSPACENAME",
                "REVISION",
                "LATEST",
                "LIFECYCLE",
                "REPOSITORY",
            ]
            .map(String::from);
            let rows: Vec<Vec<String>> = std::iter::once(header.to_vec())
                .chain(objects.iter().map(|o| row(o).0.to_vec()))
                .collect();
            for line in table_lines(&rows) {
                crate::outln!("{line}");
            }
        }
    }
    Ok(())
}
