//! The caches a reconcile reads: reflector stores of each watched kind, and
//! the PackageRevision indexes (by repository and package, by owner UID),
//! so a reconcile finds its revisions without a LIST.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, RwLock};

use kube::api::DynamicObject;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use kube::ResourceExt;

use super::api::{PackageRevision, PackageVariant, PackageVariantSet, Repository};

/// `(namespace, repository, package)`.
pub type PackageKey = (String, String, String);
/// `(namespace, name)`.
type NameKey = (String, String);

#[derive(Debug, Default, Clone)]
struct Entries {
    by_package: HashMap<PackageKey, BTreeSet<String>>,
    by_owner: HashMap<String, BTreeSet<NameKey>>,
    keys: HashMap<NameKey, (PackageKey, Vec<String>)>,
}

impl Entries {
    fn insert(&mut self, pr: &impl Indexed) {
        let (ns, name) = (pr.namespace().unwrap_or_default(), pr.name_any());
        self.remove(&ns, &name);
        let (repository, package) = pr.package();
        let package = (ns.clone(), repository, package);
        let owners: Vec<String> = pr
            .owner_references()
            .iter()
            .map(|o| o.uid.clone())
            .collect();
        self.by_package
            .entry(package.clone())
            .or_default()
            .insert(name.clone());
        for uid in &owners {
            self.by_owner
                .entry(uid.clone())
                .or_default()
                .insert((ns.clone(), name.clone()));
        }
        self.keys.insert((ns, name), (package, owners));
    }

    fn remove(&mut self, ns: &str, name: &str) {
        let key = (ns.to_string(), name.to_string());
        if let Some((package, owners)) = self.keys.remove(&key) {
            if let Some(set) = self.by_package.get_mut(&package) {
                set.remove(name);
                if set.is_empty() {
                    self.by_package.remove(&package);
                }
            }
            for uid in owners {
                if let Some(set) = self.by_owner.get_mut(&uid) {
                    set.remove(&key);
                    if set.is_empty() {
                        self.by_owner.remove(&uid);
                    }
                }
            }
        }
    }
}

/// A PackageRevision as the index reads it: v1alpha1 (typed) or v1alpha2
/// (the watch's dynamic object).
pub trait Indexed: ResourceExt {
    /// `(spec.repository, spec.packageName)`.
    fn package(&self) -> (String, String);
}

impl Indexed for PackageRevision {
    fn package(&self) -> (String, String) {
        (self.spec.repository.clone(), self.spec.package_name.clone())
    }
}

impl Indexed for DynamicObject {
    fn package(&self) -> (String, String) {
        let field = |f: &str| {
            self.data["spec"][f]
                .as_str()
                .unwrap_or_default()
                .to_string()
        };
        (field("repository"), field("packageName"))
    }
}

/// PackageRevision names by repository/package and by owner UID, kept in
/// step with a PackageRevision reflector (v1alpha1 or v1alpha2) by
/// [`RevisionIndex::apply`].
#[derive(Debug, Default)]
pub struct RevisionIndex {
    live: RwLock<Entries>,
    relist: Mutex<Option<Entries>>,
    synced: std::sync::atomic::AtomicBool,
}

impl RevisionIndex {
    /// Applies one watcher event (a relist is swapped in at `InitDone`, as
    /// the reflector store does).
    pub fn apply<K: Indexed>(&self, event: &watcher::Event<K>) {
        match event {
            watcher::Event::Apply(pr) => self.write().insert(pr),
            watcher::Event::Delete(pr) => self
                .write()
                .remove(&pr.namespace().unwrap_or_default(), &pr.name_any()),
            watcher::Event::Init => *self.relist() = Some(Entries::default()),
            watcher::Event::InitApply(pr) => {
                if let Some(e) = self.relist().as_mut() {
                    e.insert(pr);
                }
            }
            watcher::Event::InitDone => {
                if let Some(e) = self.relist().take() {
                    *self.write() = e;
                }
                self.synced
                    .store(true, std::sync::atomic::Ordering::Release);
            }
        }
    }

    /// Whether a first list has been applied (the PackageRevision store
    /// turns ready a moment before its event reaches the index).
    pub fn is_synced(&self) -> bool {
        self.synced.load(std::sync::atomic::Ordering::Acquire)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Entries> {
        self.live.write().unwrap_or_else(|e| e.into_inner())
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Entries> {
        self.live.read().unwrap_or_else(|e| e.into_inner())
    }

    fn relist(&self) -> std::sync::MutexGuard<'_, Option<Entries>> {
        self.relist.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Names of the revisions of a package.
    pub fn by_package(&self, ns: &str, repository: &str, package: &str) -> Vec<String> {
        self.read()
            .by_package
            .get(&(ns.to_string(), repository.to_string(), package.to_string()))
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// The `(namespace, repository, package)` of each revision owned by
    /// `uid`.
    pub fn packages_owned_by(&self, uid: &str) -> Vec<PackageKey> {
        let entries = self.read();
        entries
            .by_owner
            .get(uid)
            .into_iter()
            .flatten()
            .filter_map(|key| entries.keys.get(key).map(|(package, _)| package.clone()))
            .collect()
    }

    /// The `(namespace, repository, package)` of revision `ns/name`.
    pub fn package_of(&self, ns: &str, name: &str) -> Option<PackageKey> {
        self.read()
            .keys
            .get(&(ns.to_string(), name.to_string()))
            .map(|(package, _)| package.clone())
    }

    /// `(namespace, name)` of the revisions owned by `uid`.
    pub fn by_owner(&self, uid: &str) -> Vec<(String, String)> {
        self.read()
            .by_owner
            .get(uid)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }
}

/// `apiVersion` and `kind` of a watched kind of other objects.
pub type KindKey = (String, String);

/// Caches of other objects (injection sources, objectSelector targets),
/// one reflector store per kind.
#[derive(Debug, Default, Clone)]
pub struct ObjectCaches {
    stores: Arc<RwLock<BTreeMap<KindKey, Store<DynamicObject>>>>,
}

impl ObjectCaches {
    /// Registers the store of one kind.
    pub fn insert(&self, api_version: &str, kind: &str, store: Store<DynamicObject>) {
        self.stores
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert((api_version.to_string(), kind.to_string()), store);
    }

    /// Every cached object of `ns`, as JSON, by kind and name.
    ///
    /// Each object gets the `apiVersion` and `kind` of its store: the API
    /// server leaves them out of the items of a LIST of built-in kinds (a
    /// ConfigMap read at start-up has none, one from a watch event has
    /// them), and injection and `objectSelector` match on them.
    pub fn list(&self, ns: &str) -> Vec<serde_json::Value> {
        let stores = self.stores.read().unwrap_or_else(|e| e.into_inner());
        let mut out = Vec::new();
        for ((api_version, kind), store) in stores.iter() {
            let mut objs: Vec<Arc<DynamicObject>> = store
                .state()
                .into_iter()
                .filter(|o| o.namespace().as_deref() == Some(ns))
                .collect();
            objs.sort_by_key(|o| o.name_any());
            out.extend(objs.iter().filter_map(|o| {
                let mut v = serde_json::to_value(o.as_ref()).ok()?;
                let fields = v.as_object_mut()?;
                fields.insert("apiVersion".into(), api_version.as_str().into());
                fields.insert("kind".into(), kind.as_str().into());
                Some(v)
            }));
        }
        out
    }

    /// The stores with their kinds (to wait for their first sync).
    pub fn stores(&self) -> Vec<(KindKey, Store<DynamicObject>)> {
        self.stores
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(k, s)| (k.clone(), s.clone()))
            .collect()
    }

    /// The kinds cached.
    pub fn kinds(&self) -> Vec<KindKey> {
        self.stores
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .keys()
            .cloned()
            .collect()
    }
}

/// Everything a reconcile reads.
#[derive(Clone)]
pub struct Caches {
    /// PackageVariants.
    pub package_variants: Store<PackageVariant>,
    /// PackageVariantSets.
    pub package_variant_sets: Store<PackageVariantSet>,
    /// PackageRevisions.
    pub revisions: Store<PackageRevision>,
    /// Their indexes.
    pub revision_index: Arc<RevisionIndex>,
    /// Repositories.
    pub repositories: Store<Repository>,
    /// Other objects.
    pub objects: ObjectCaches,
}

impl Caches {
    /// One cached PackageRevision.
    pub fn revision(&self, ns: &str, name: &str) -> Option<Arc<PackageRevision>> {
        self.revisions.get(&ObjectRef::new(name).within(ns))
    }
}

#[cfg(test)]
mod tests {
    use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
    use kube::runtime::{reflector, watcher};

    use super::ObjectCaches;

    /// A ConfigMap as the items of a LIST bring it: no `apiVersion` or
    /// `kind`. It is listed with those of its store, like one from a watch.
    #[test]
    fn listed_objects_carry_the_kind_of_their_store() {
        let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", "ConfigMap"));
        let mut writer = reflector::store::Writer::<DynamicObject>::new(ar.clone());
        let caches = ObjectCaches::default();
        caches.insert("v1", "ConfigMap", writer.as_reader());
        let listed: DynamicObject = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "east-endpoints", "namespace": "east"},
            "data": {"url": "https://east"}
        }))
        .expect("object");
        assert!(listed.types.is_none());
        let mut watched = DynamicObject::new("from-watch", &ar).within("east");
        watched.data = serde_json::json!({"data": {"url": "https://watch"}});
        writer.apply_watcher_event(&watcher::Event::Init);
        writer.apply_watcher_event(&watcher::Event::InitApply(listed));
        writer.apply_watcher_event(&watcher::Event::InitDone);
        writer.apply_watcher_event(&watcher::Event::Apply(watched));
        let objects = caches.list("east");
        let kinds: Vec<(&str, &str, &str)> = objects
            .iter()
            .map(|o| {
                (
                    o["apiVersion"].as_str().unwrap_or_default(),
                    o["kind"].as_str().unwrap_or_default(),
                    o["metadata"]["name"].as_str().unwrap_or_default(),
                )
            })
            .collect();
        assert_eq!(
            kinds,
            vec![
                ("v1", "ConfigMap", "east-endpoints"),
                ("v1", "ConfigMap", "from-watch"),
            ]
        );
        assert_eq!(objects[0]["data"]["url"], "https://east");
        assert!(caches.list("west").is_empty());
    }
}
