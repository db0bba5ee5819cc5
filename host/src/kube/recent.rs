//! The objects this controller wrote that its caches have not seen yet
//! (controller-runtime's "expectations"): PackageRevisions and
//! PackageVariants.
//!
//! A reconcile reads from the reflector caches, which lag behind the API
//! server. Right after a reconcile has created a draft, the next one
//! (triggered by the variant's own status write, say) would not find the
//! draft in the cache and create another; a set would create a child
//! variant again. Every write is recorded here
//! and read over the cache until the cache has caught up: an entry holds
//! while the cache still shows the object as it was before the writes (or
//! at an earlier one of them), and is dropped as soon as the cache shows
//! anything else, or after [`RecentWrites::TTL`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kube::ResourceExt;

use super::api::{PackageRevision, PackageVariant};

/// `(namespace, name)`.
type Key = (String, String);

/// One object's writes the cache may not have seen.
#[derive(Debug, Clone)]
struct Written<K> {
    /// The object as last written (`None`: deleted).
    object: Option<K>,
    /// The cache's resourceVersion before the first of these writes
    /// (`None`: not in the cache).
    before: Option<String>,
    /// The resourceVersions the writes returned, in order.
    versions: Vec<String>,
    /// When the last write was recorded.
    at: Instant,
}

impl<K> Written<K> {
    /// Whether the entry is still newer than what the cache shows
    /// (`cached`: the cache's resourceVersion, `None` when it has none).
    fn ahead_of(&self, cached: Option<&str>) -> bool {
        if self.at.elapsed() > TTL {
            return false;
        }
        if cached == self.before.as_deref() {
            return true;
        }
        // (A cache without the object has seen a deletion.)
        cached.is_some_and(|rv| self.shows_an_earlier_write(rv))
    }

    /// Whether `rv` is one of the writes that a later one follows: the
    /// cache showing it is still behind. A deletion has no version of its
    /// own, so every write before it is earlier.
    fn shows_an_earlier_write(&self, rv: &str) -> bool {
        let earlier = match self.object {
            Some(_) => self.versions.len().saturating_sub(1),
            None => self.versions.len(),
        };
        self.versions[..earlier].iter().any(|v| v == rv)
    }
}

/// How long a write is read over the cache at most (a watch that lost an
/// event relists long before).
pub const TTL: Duration = Duration::from_secs(120);

/// What a lookup found.
#[derive(Debug, Clone, PartialEq)]
pub enum Recent<K> {
    /// No write newer than the cache: read the cache.
    Cache,
    /// The object as last written.
    Written(Box<K>),
    /// The object was deleted.
    Deleted,
}

/// The recent writes of one kind, shared by every reconcile of a controller
/// (clones share the same entries).
#[derive(Debug)]
pub struct RecentWrites<K> {
    entries: Arc<Mutex<HashMap<Key, Written<K>>>>,
}

impl<K> Clone for RecentWrites<K> {
    fn clone(&self) -> Self {
        RecentWrites {
            entries: self.entries.clone(),
        }
    }
}

impl<K> Default for RecentWrites<K> {
    fn default() -> Self {
        RecentWrites {
            entries: Arc::default(),
        }
    }
}

/// The recent writes a controller reads over its caches.
#[derive(Debug, Clone, Default)]
pub struct Expectations {
    /// PackageRevisions (drafts created, lifecycles and owners changed).
    pub revisions: RecentWrites<PackageRevision>,
    /// PackageVariants (a set's children, finalizers).
    pub variants: RecentWrites<PackageVariant>,
    /// v1alpha2 PackageRevisions the variants declared or changed
    /// (`--porch-api v1alpha2`).
    pub v1alpha2: RecentWrites<kube::api::DynamicObject>,
}

impl<K: kube::Resource + Clone> RecentWrites<K> {
    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Written<K>>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records a write of `ns/name` (`object` `None`: a deletion), with the
    /// cache's resourceVersion of it at the time (`cached`).
    pub fn record(&self, ns: &str, name: &str, object: Option<&K>, cached: Option<&str>) {
        let mut entries = self.entries();
        entries.retain(|_, w| w.at.elapsed() <= TTL);
        let key = (ns.to_string(), name.to_string());
        let version = object.and_then(|o| o.resource_version());
        if version.is_some() && version.as_deref() == cached {
            // The watch was quicker: the cache shows this write already.
            entries.remove(&key);
            return;
        }
        if entries.get(&key).is_some_and(|w| !w.ahead_of(cached)) {
            entries.remove(&key);
        }
        let entry = entries.entry(key).or_insert_with(|| Written {
            object: None,
            before: cached.map(str::to_string),
            versions: Vec::new(),
            at: Instant::now(),
        });
        entry.object = object.cloned();
        if let Some(rv) = object.and_then(|o| o.resource_version()) {
            entry.versions.push(rv);
        }
        entry.at = Instant::now();
    }

    /// A watch event for `ns/name` (`version` `None`: a deletion), called
    /// after the cache applied it: the entry goes unless the event is the
    /// echo of a write that a later one of the entry's writes follows. So
    /// once the cache has shown the last write, or anything else, it is
    /// read again (a create then a deletion by someone else is not hidden).
    pub fn observe(&self, ns: &str, name: &str, version: Option<&str>) {
        let mut entries = self.entries();
        let key = (ns.to_string(), name.to_string());
        let keep = entries
            .get(&key)
            .zip(version)
            .is_some_and(|(w, rv)| w.shows_an_earlier_write(rv));
        if !keep {
            entries.remove(&key);
        }
    }

    /// What to read for `ns/name`, whose cached resourceVersion is
    /// `cached`; an entry the cache has caught up with is dropped.
    pub fn lookup(&self, ns: &str, name: &str, cached: Option<&str>) -> Recent<K> {
        let mut entries = self.entries();
        let key = (ns.to_string(), name.to_string());
        let Some(w) = entries.get(&key) else {
            return Recent::Cache;
        };
        if !w.ahead_of(cached) {
            entries.remove(&key);
            return Recent::Cache;
        }
        match &w.object {
            Some(object) => Recent::Written(Box::new(object.clone())),
            None => Recent::Deleted,
        }
    }

    /// The object to read for `ns/name` given the cache's copy: the last
    /// write while the cache has not caught up with it (`None` after a
    /// deletion), else the cache's.
    pub fn read_over(&self, ns: &str, name: &str, cached: Option<Arc<K>>) -> Option<K> {
        let version = cached.as_ref().and_then(|c| c.resource_version());
        match self.lookup(ns, name, version.as_deref()) {
            Recent::Written(object) => Some(*object),
            Recent::Deleted => None,
            Recent::Cache => cached.map(|c| (*c).clone()),
        }
    }

    /// [`RecentWrites::record`] with the cache's copy of the object.
    pub fn record_over(&self, ns: &str, name: &str, object: Option<&K>, cached: Option<&K>) {
        let version = cached.and_then(|c| c.resource_version());
        self.record(ns, name, object, version.as_deref());
    }

    /// The names of `ns` with a recorded write (candidates for a list; each
    /// still goes through [`RecentWrites::lookup`]).
    pub fn names(&self, ns: &str) -> Vec<String> {
        self.entries()
            .keys()
            .filter(|(n, _)| n == ns)
            .map(|(_, name)| name.clone())
            .collect()
    }

    /// Every `(namespace, name)` with a recorded write.
    pub fn keys(&self) -> Vec<(String, String)> {
        self.entries().keys().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pr(rv: &str) -> PackageRevision {
        let mut pr: PackageRevision = serde_json::from_value(serde_json::json!({
            "apiVersion": "porch.kpt.dev/v1alpha1", "kind": "PackageRevision",
            "metadata": {"name": "r.p.ws", "namespace": "ns"},
            "spec": {"packageName": "p", "repository": "r", "workspaceName": "ws"}
        }))
        .expect("revision");
        pr.metadata.resource_version = Some(rv.to_string());
        pr
    }

    fn written(recent: &RecentWrites<PackageRevision>, cached: Option<&str>) -> Option<String> {
        match recent.lookup("ns", "r.p.ws", cached) {
            Recent::Cache => None,
            Recent::Written(pr) => pr.resource_version(),
            Recent::Deleted => Some("deleted".into()),
        }
    }

    #[test]
    fn a_create_is_read_until_the_cache_has_the_object() {
        let recent = RecentWrites::<PackageRevision>::default();
        recent.record("ns", "r.p.ws", Some(&pr("5")), None);
        assert_eq!(recent.names("ns"), vec!["r.p.ws"]);
        assert!(recent.names("other").is_empty());
        assert_eq!(written(&recent, None), Some("5".into()));
        // The watch delivered it: the cache is read from now on.
        assert_eq!(written(&recent, Some("5")), None);
        assert_eq!(written(&recent, None), None);
    }

    #[test]
    fn a_write_the_cache_already_shows_is_not_kept() {
        let recent = RecentWrites::<PackageRevision>::default();
        recent.record("ns", "r.p.ws", Some(&pr("6")), Some("6"));
        assert!(recent.names("ns").is_empty());
    }

    #[test]
    fn updates_are_read_until_the_cache_shows_the_last_or_a_newer_version() {
        let recent = RecentWrites::<PackageRevision>::default();
        recent.record("ns", "r.p.ws", Some(&pr("6")), Some("5"));
        recent.record("ns", "r.p.ws", Some(&pr("7")), Some("5"));
        assert_eq!(written(&recent, Some("5")), Some("7".into()));
        assert_eq!(written(&recent, Some("6")), Some("7".into()));
        assert_eq!(written(&recent, Some("7")), None);
        // Someone else's later write wins too.
        recent.record("ns", "r.p.ws", Some(&pr("8")), Some("7"));
        assert_eq!(written(&recent, Some("9")), None);
    }

    #[test]
    fn a_deletion_is_read_until_the_cache_drops_the_object() {
        let recent = RecentWrites::<PackageRevision>::default();
        recent.record("ns", "r.p.ws", None, Some("5"));
        assert_eq!(written(&recent, Some("5")), Some("deleted".into()));
        assert_eq!(written(&recent, None), None);
        // Created and deleted before the cache saw either: the create's
        // event may come first, and the object stays deleted.
        recent.record("ns", "r.p.ws", Some(&pr("6")), None);
        recent.record("ns", "r.p.ws", None, None);
        assert_eq!(written(&recent, None), Some("deleted".into()));
        assert_eq!(written(&recent, Some("6")), Some("deleted".into()));
    }

    #[test]
    fn watch_events_end_an_entry_once_the_cache_has_caught_up() {
        let recent = RecentWrites::<PackageRevision>::default();
        // Created, then deleted by someone else: both events arrive before
        // the next lookup, which must not find the object.
        recent.record("ns", "r.p.ws", Some(&pr("6")), None);
        recent.observe("ns", "r.p.ws", Some("6"));
        recent.observe("ns", "r.p.ws", None);
        assert_eq!(written(&recent, None), None);
        // Two updates: the echo of the first keeps the entry, the second's
        // ends it.
        recent.record("ns", "r.p.ws", Some(&pr("7")), Some("6"));
        recent.record("ns", "r.p.ws", Some(&pr("8")), Some("6"));
        recent.observe("ns", "r.p.ws", Some("7"));
        assert_eq!(written(&recent, Some("7")), Some("8".into()));
        recent.observe("ns", "r.p.ws", Some("8"));
        assert!(recent.names("ns").is_empty());
        // Someone else's write ends it too.
        recent.record("ns", "r.p.ws", Some(&pr("9")), Some("8"));
        recent.observe("ns", "r.p.ws", Some("12"));
        assert!(recent.names("ns").is_empty());
    }
}
