//! [`StoreContent`]: Porch's ContentCache over a
//! [`PackageRevisionStore`] (the Git layout of [`crate::store::git`]):
//! drafts are held in memory until they are closed, then written in one
//! store call, as upstream's drafts are pushed on close.

use std::collections::BTreeMap;
use std::sync::Mutex;

use pv_core::api::package_revision::{Locator, Task};
use pv_core::api::{Lifecycle, PackageRevision};
use pv_core::prc::reconcile::{Content, Files, RevisionKey};

use super::{CallError, CallResult, ContentCache};
use crate::store::{revision_name, NewRevision, PackageRevisionStore, StoreError};

#[derive(Debug)]
struct Draft {
    revision: RevisionKey,
    existing: bool,
    files: Option<Files>,
    message: String,
    upstream_lock: Option<Locator>,
}

/// The ContentCache of a [`PackageRevisionStore`].
pub struct StoreContent<'a> {
    store: &'a dyn PackageRevisionStore,
    drafts: Mutex<(u64, BTreeMap<String, Draft>)>,
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
        }
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
        if resources {
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
            self.store
                .update_resources(&r.repository.namespace, &name(r), &files, "")?;
            return Ok(());
        }
        let mut pr = PackageRevision {
            api_version: pv_core::api::package_revision::API_VERSION.to_string(),
            kind: "PackageRevision".to_string(),
            ..PackageRevision::default()
        };
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
