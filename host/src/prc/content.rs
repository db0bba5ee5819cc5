//! [`StoreContent`]: Porch's ContentCache over a
//! [`PackageRevisionStore`] (the Git layout of [`crate::store::git`]):
//! drafts are held in memory until they are closed, then written in one
//! store call, as upstream's drafts are pushed on close.
//!
//! Two things make a variant's new draft cost fewer Git writes where the
//! controller runs in the variant's process:
//! * with the objects ([`StoreContent::with_objects`]), a new revision is
//!   written with its object's owner references, labels and annotations
//!   (the variant's), so the source commit carries them;
//! * with [`StagedPushes`], files pushed to a draft wait for the render
//!   they request: the render reads them, and its result is written over
//!   the revision as read at the push, in one commit.

use std::collections::BTreeMap;
use std::sync::Mutex;

use pv_core::api::package_revision::{Locator, Task};
use pv_core::api::{Lifecycle, PackageRevision};
use pv_core::prc::reconcile::{Content, Files, RevisionKey};

use super::{CallError, CallResult, ContentCache, PrApi};
use crate::store::{revision_name, NewRevision, PackageRevisionStore, StoreError};

#[derive(Debug)]
struct Draft {
    revision: RevisionKey,
    existing: bool,
    files: Option<Files>,
    message: String,
    upstream_lock: Option<Locator>,
}

/// Files pushed to a draft, not yet in Git.
#[derive(Debug, Clone)]
pub struct StagedPush {
    /// The files.
    pub files: Files,
    /// The content version they were made from (the write fails if the
    /// draft moved on since).
    pub read: String,
}

/// Pushes waiting for their render, by namespace and revision name.
#[derive(Debug, Default)]
pub struct StagedPushes(Mutex<BTreeMap<(String, String), StagedPush>>);

impl StagedPushes {
    fn table(&self) -> std::sync::MutexGuard<'_, BTreeMap<(String, String), StagedPush>> {
        // A poisoned table still holds whole entries (each is put or taken
        // in one step).
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Holds `push` for `namespace/name` (replacing an earlier one).
    pub fn stage(&self, namespace: &str, name: &str, push: StagedPush) {
        self.table()
            .insert((namespace.to_string(), name.to_string()), push);
    }

    /// The push held for `namespace/name`, taken out.
    pub fn take(&self, namespace: &str, name: &str) -> Option<StagedPush> {
        self.table()
            .remove(&(namespace.to_string(), name.to_string()))
    }

    fn get(&self, namespace: &str, name: &str) -> Option<StagedPush> {
        self.table()
            .get(&(namespace.to_string(), name.to_string()))
            .cloned()
    }
}

/// The ContentCache of a [`PackageRevisionStore`].
pub struct StoreContent<'a> {
    store: &'a dyn PackageRevisionStore,
    drafts: Mutex<(u64, BTreeMap<String, Draft>)>,
    objects: Option<&'a dyn PrApi>,
    staged: Option<&'a StagedPushes>,
}

fn name(r: &RevisionKey) -> String {
    revision_name(&r.repository.name, &r.package, &r.workspace)
}

fn not_found(r: &RevisionKey) -> CallError {
    CallError::NotFound(format!(
        "package revision {}/{} not found in repository {}/{}",
        r.package, r.workspace, r.repository.namespace, r.repository.name
    ))
}

/// The v1alpha1 task a write records, from what made the content.
fn task(message: &str) -> Task {
    let type_ = match message {
        "init" | "clone" | "upgrade" => message,
        _ => "edit",
    };
    Task {
        type_: type_.to_string(),
        ..Task::default()
    }
}

impl<'a> StoreContent<'a> {
    /// A ContentCache over `store`.
    pub fn new(store: &'a dyn PackageRevisionStore) -> Self {
        StoreContent {
            store,
            drafts: Mutex::new((0, BTreeMap::new())),
            objects: None,
            staged: None,
        }
    }

    /// New revisions are written with the variant metadata (owner
    /// references, labels, annotations) of their object in `objects`.
    pub fn with_objects(mut self, objects: &'a dyn PrApi) -> Self {
        self.objects = Some(objects);
        self
    }

    /// Content is read from, and written over, the pushes `staged` holds.
    pub fn with_staged(mut self, staged: &'a StagedPushes) -> Self {
        self.staged = Some(staged);
        self
    }

    fn staged(&self, r: &RevisionKey) -> Option<StagedPush> {
        self.staged?.get(&r.repository.namespace, &name(r))
    }

    /// The variant metadata of `r`'s object, where there is one.
    fn object_metadata(&self, r: &RevisionKey) -> Option<pv_core::api::ObjectMeta> {
        let object = self.objects?.get(&r.repository.namespace, &name(r)).ok()?;
        let meta: pv_core::api::ObjectMeta =
            serde_json::from_value(object["metadata"].clone()).ok()?;
        Some(pv_core::variant::v1alpha2::variant_metadata(&meta))
    }

    fn lookup(&self, r: &RevisionKey) -> CallResult<PackageRevision> {
        match self.store.get(&r.repository.namespace, &name(r)) {
            Ok(pr)
                if pr.spec.package_name == r.package && pr.spec.workspace_name == r.workspace =>
            {
                Ok(pr)
            }
            Ok(_) => Err(not_found(r)),
            Err(e) if e.is_not_found() => Err(not_found(r)),
            Err(e) => Err(e.into()),
        }
    }

    fn new_handle(&self, draft: Draft) -> CallResult<String> {
        let mut d = self
            .drafts
            .lock()
            .map_err(|_| CallError::Failed("the draft table is unusable".into()))?;
        d.0 += 1;
        let handle = format!("draft-{}", d.0);
        d.1.insert(handle.clone(), draft);
        Ok(handle)
    }
}

/// What a stored revision says about itself.
pub fn content_of(pr: &PackageRevision) -> Content {
    Content {
        lifecycle: pr.spec.lifecycle,
        revision: pr.spec.revision,
        self_lock: pr.status.self_lock.clone(),
        upstream_lock: pr.status.upstream_lock.clone(),
        published_by: pr.status.published_by.clone(),
        published_at: pr.status.publish_timestamp.clone(),
        ..Content::default()
    }
}

impl ContentCache for StoreContent<'_> {
    fn get_package_content(&self, r: &RevisionKey, resources: bool) -> CallResult<Content> {
        let pr = self.lookup(r)?;
        let mut content = content_of(&pr);
        if let Some(push) = self.staged(r).filter(|_| resources) {
            content.resources = Some(push.files);
        } else if resources {
            match self
                .store
                .resources(&r.repository.namespace, &pr.metadata.name)
            {
                Ok(res) => content.resources = Some(res.spec.resources.unwrap_or_default()),
                Err(e) => content.resources_error = Some(e.to_string()),
            }
        }
        Ok(content)
    }

    fn create_new_draft(&self, r: &RevisionKey) -> CallResult<String> {
        match self.lookup(r) {
            Ok(_) => {
                return Err(CallError::AlreadyExists(format!(
                    "package revision {}/{} already exists in repository {}/{}",
                    r.package, r.workspace, r.repository.namespace, r.repository.name
                )))
            }
            Err(CallError::NotFound(_)) => {}
            Err(e) => return Err(e),
        }
        self.new_handle(Draft {
            revision: r.clone(),
            existing: false,
            files: None,
            message: String::new(),
            upstream_lock: None,
        })
    }

    fn create_draft_from_existing(&self, r: &RevisionKey) -> CallResult<String> {
        let pr = self.lookup(r)?;
        if !matches!(pr.spec.lifecycle, Lifecycle::Draft | Lifecycle::Proposed) {
            return Err(CallError::Failed(format!(
                "cannot update final package {}/{}",
                r.package, r.workspace
            )));
        }
        self.new_handle(Draft {
            revision: r.clone(),
            existing: true,
            files: None,
            message: String::new(),
            upstream_lock: None,
        })
    }

    fn update_resources(
        &self,
        draft: &str,
        files: &Files,
        message: &str,
        upstream_lock: Option<&Locator>,
    ) -> CallResult<()> {
        let mut d = self
            .drafts
            .lock()
            .map_err(|_| CallError::Failed("the draft table is unusable".into()))?;
        let Some(draft) = d.1.get_mut(draft) else {
            return Err(CallError::Failed(format!(
                "{draft} is not a contentCache draft"
            )));
        };
        if !files.contains_key("Kptfile") {
            return Err(CallError::Failed(
                "package must contain Kptfile at root".into(),
            ));
        }
        draft.files = Some(files.clone());
        draft.message = message.to_string();
        draft.upstream_lock = upstream_lock.cloned();
        Ok(())
    }

    fn close_draft(&self, handle: &str) -> CallResult<()> {
        let draft = self
            .drafts
            .lock()
            .map_err(|_| CallError::Failed("the draft table is unusable".into()))?
            .1
            .remove(handle)
            .ok_or_else(|| CallError::Failed(format!("{handle} is not a contentCache draft")))?;
        let r = &draft.revision;
        let files = draft.files.unwrap_or_default();
        if draft.existing {
            // Over a staged push: the revision as it was when pushed.
            let read = self.staged(r).map(|p| p.read).unwrap_or_default();
            self.store
                .update_resources(&r.repository.namespace, &name(r), &files, &read)?;
            if let Some(staged) = self.staged {
                staged.take(&r.repository.namespace, &name(r));
            }
            return Ok(());
        }
        let mut pr = PackageRevision {
            api_version: pv_core::api::package_revision::API_VERSION.to_string(),
            kind: "PackageRevision".to_string(),
            ..PackageRevision::default()
        };
        if let Some(meta) = self.object_metadata(r) {
            pr.metadata = meta;
        }
        pr.metadata.name = name(r);
        pr.metadata.namespace = r.repository.namespace.clone();
        pr.spec.package_name = r.package.clone();
        pr.spec.repository = r.repository.name.clone();
        pr.spec.workspace_name = r.workspace.clone();
        pr.spec.lifecycle = Lifecycle::Draft;
        pr.spec.tasks = vec![task(&draft.message)];
        match self.store.create(NewRevision {
            revision: pr,
            files,
            upstream_lock: draft.upstream_lock,
        }) {
            Ok(_) => Ok(()),
            Err(StoreError::Conflict(m)) => Err(CallError::AlreadyExists(m)),
            Err(e) => Err(e.into()),
        }
    }

    fn update_lifecycle(&self, r: &RevisionKey, lifecycle: Lifecycle) -> CallResult<Content> {
        let pr = self.lookup(r)?;
        // Porch's isKnownLifecycle: the empty lifecycle is neither a
        // current nor a desired one.
        if pr.spec.lifecycle == Lifecycle::Unset {
            return Err(CallError::Failed(
                "invalid current lifecycle value: \"\"".to_string(),
            ));
        }
        if lifecycle == Lifecycle::Unset {
            return Err(CallError::Failed(
                "invalid desired lifecycle value: \"\"".to_string(),
            ));
        }
        let ns = &r.repository.namespace;
        // Porch publishes a draft directly (its draft is closed as
        // Published); the store goes through Proposed.
        if pr.spec.lifecycle == Lifecycle::Draft && lifecycle == Lifecycle::Published {
            self.store
                .update_lifecycle(ns, &pr.metadata.name, Lifecycle::Proposed)?;
        }
        let updated = self
            .store
            .update_lifecycle(ns, &pr.metadata.name, lifecycle)
            .map_err(|e| match e {
                StoreError::Conflict(m) => CallError::Failed(m),
                e => e.into(),
            })?;
        Ok(content_of(&updated))
    }

    fn delete_package(&self, r: &RevisionKey) -> CallResult<()> {
        let pr = self.lookup(r)?;
        self.store
            .delete(&r.repository.namespace, &pr.metadata.name)
            .map_err(Into::into)
    }
}
