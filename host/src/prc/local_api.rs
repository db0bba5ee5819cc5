//! [`LocalApi`]: v1alpha2 PackageRevision objects kept as an API server
//! keeps them, in one table under the directory's state
//! (`.porch-variants/packagerevisions/`): generations, resource versions,
//! finalizers with Kubernetes' deletion semantics, JSON merge patches, and
//! server-side apply with field managers, so that an apply removes what
//! its manager applied before and no longer sends, and never what another
//! manager owns.
//!
//! The table is read once per process and indexed by package
//! (namespace, repository, package) and by owner, so a list costs what it
//! answers, not what the directory holds. On disk it is two files:
//! * `objects.jsonl` — every object, one JSON line each, as of the end of
//!   the last command that wrote ([`LocalApi::compact`]: a new file
//!   renamed over the old one);
//! * `journal.jsonl` — every change since, one line each (the object as
//!   written, or its deletion), appended as it is made, so a process
//!   killed at any instant leaves each change it answered on disk. A last
//!   line cut short by the kill is dropped when the table is read;
//! * `discovered.json` — each repository's refs fingerprint as of the last
//!   discovery that left every revision in it with an object
//!   ([`LocalApi::discovered`]), written with `objects.jsonl`.
//!
//! Objects kept one file each (`<namespace>/<name>.json`, as earlier
//! versions wrote them) are read when there is no `objects.jsonl`, and
//! removed by the next compaction.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::{CallError, CallResult, PrApi};
use crate::store::PrFilter;

/// The table of every object, as of the last compaction.
const SNAPSHOT: &str = "objects.jsonl";
/// The changes since.
const JOURNAL: &str = "journal.jsonl";
/// The repositories' fingerprints as of their last discovery.
const DISCOVERED: &str = "discovered.json";

/// A stored object and who owns which of its fields.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Stored {
    object: Value,
    /// Field manager → owned paths (`status.revision`,
    /// `status.conditions[Ready]`, `spec.readinessGates`).
    #[serde(default)]
    managed_fields: BTreeMap<String, BTreeSet<String>>,
}

/// One line of the journal.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
enum Change {
    /// The object as written.
    Put(Stored),
    /// The object is gone.
    Delete { namespace: String, name: String },
}

type Key = (String, String);

/// The objects with their indexes.
#[derive(Default)]
struct Table {
    objects: BTreeMap<Key, Stored>,
    /// (namespace, repository, package) → names.
    by_package: BTreeMap<(String, String, String), BTreeSet<String>>,
    /// (namespace, owner UID) → names.
    by_owner: BTreeMap<(String, String), BTreeSet<String>>,
    /// The journal, opened at the first change.
    journal: Option<std::fs::File>,
    /// Bytes of the journal that were read whole (a line cut short after
    /// them is cut off before anything is appended).
    journal_len: u64,
    /// Whether anything was written since the table was read.
    dirty: bool,
    /// `namespace/repository` → its fingerprint when every revision in it
    /// had an object.
    discovered: BTreeMap<String, String>,
}

fn index_keys(stored: &Stored) -> ((String, String), Vec<String>) {
    let o = &stored.object;
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let package = (
        text(&o["spec"]["repository"]),
        text(&o["spec"]["packageName"]),
    );
    let owners = o["metadata"]["ownerReferences"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| text(&r["uid"]))
        .filter(|u| !u.is_empty())
        .collect();
    (package, owners)
}

impl Table {
    fn unindex(&mut self, key: &Key) {
        let Some(old) = self.objects.get(key) else {
            return;
        };
        let ((repo, pkg), owners) = index_keys(old);
        let pk = (key.0.clone(), repo, pkg);
        if let Some(names) = self.by_package.get_mut(&pk) {
            names.remove(&key.1);
            if names.is_empty() {
                self.by_package.remove(&pk);
            }
        }
        for uid in owners {
            let ok = (key.0.clone(), uid);
            if let Some(names) = self.by_owner.get_mut(&ok) {
                names.remove(&key.1);
                if names.is_empty() {
                    self.by_owner.remove(&ok);
                }
            }
        }
    }

    /// Puts `stored` in the table (no disk).
    fn put(&mut self, stored: Stored) {
        let key = key_of(&stored.object);
        self.unindex(&key);
        let ((repo, pkg), owners) = index_keys(&stored);
        self.by_package
            .entry((key.0.clone(), repo, pkg))
            .or_default()
            .insert(key.1.clone());
        for uid in owners {
            self.by_owner
                .entry((key.0.clone(), uid))
                .or_default()
                .insert(key.1.clone());
        }
        self.objects.insert(key, stored);
    }

    /// Removes `key` from the table (no disk).
    fn remove(&mut self, key: &Key) {
        self.unindex(key);
        self.objects.remove(key);
    }

    fn apply(&mut self, change: Change) {
        match change {
            Change::Put(stored) => self.put(stored),
            Change::Delete { namespace, name } => self.remove(&(namespace, name)),
        }
    }

    /// The names in `namespace` that may pass `filter` (a superset of
    /// those that do), from the narrowest index the filter allows.
    fn candidates(&self, namespace: &str, filter: &PrFilter) -> Vec<String> {
        let ns = namespace.to_string();
        if let (Some(repo), Some(pkg)) = (&filter.repository, &filter.package) {
            return self
                .by_package
                .get(&(ns, repo.clone(), pkg.clone()))
                .map(|n| n.iter().cloned().collect())
                .unwrap_or_default();
        }
        if let Some(uid) = &filter.owner_uid {
            return self
                .by_owner
                .get(&(ns, uid.clone()))
                .map(|n| n.iter().cloned().collect())
                .unwrap_or_default();
        }
        if let Some(repo) = &filter.repository {
            let from = (ns.clone(), repo.clone(), String::new());
            return self
                .by_package
                .range(from..)
                .take_while(|((n, r, _), _)| *n == ns && r == repo)
                .flat_map(|(_, names)| names.iter().cloned())
                .collect();
        }
        self.objects
            .range((ns.clone(), String::new())..)
            .take_while(|((n, _), _)| *n == ns)
            .map(|((_, name), _)| name.clone())
            .collect()
    }
}

/// The PackageRevision objects of a local directory and its Repositories.
pub struct LocalApi {
    root: PathBuf,
    table: Mutex<Table>,
    repositories: BTreeMap<(String, String), Value>,
    now: String,
}

fn failed(context: &str, e: impl std::fmt::Display) -> CallError {
    CallError::Failed(format!("{context}: {e}"))
}

fn key_of(v: &Value) -> (String, String) {
    let ns = v["metadata"]["namespace"].as_str().unwrap_or_default();
    let ns = if ns.is_empty() { "default" } else { ns };
    (
        ns.to_string(),
        v["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    )
}

/// RFC 7386 JSON merge patch.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(t) = target else {
        return;
    };
    for (k, v) in p {
        if v.is_null() {
            t.remove(k);
        } else {
            merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}

/// The paths an applied section owns: one per top-level field, one per
/// condition (keyed by type, as the CRD's list-map is).
fn owned_paths(section: &str, fields: &Map<String, Value>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (k, v) in fields {
        if k == "conditions" || k == "packageConditions" {
            for c in v.as_array().into_iter().flatten() {
                out.insert(format!(
                    "{section}.{k}[{}]",
                    c["type"].as_str().unwrap_or_default()
                ));
            }
        } else {
            out.insert(format!("{section}.{k}"));
        }
    }
    out
}

fn remove_path(obj: &mut Value, path: &str) {
    let Some((section, rest)) = path.split_once('.') else {
        return;
    };
    let Some(Value::Object(sec)) = obj.get_mut(section) else {
        return;
    };
    match rest.split_once('[') {
        Some((list, ty)) => {
            let ty = ty.trim_end_matches(']');
            if let Some(Value::Array(items)) = sec.get_mut(list) {
                items.retain(|c| c["type"].as_str() != Some(ty));
                if items.is_empty() {
                    sec.remove(list);
                }
            }
        }
        None => {
            sec.remove(rest);
        }
    }
}

fn set_path(obj: &mut Value, section: &str, key: &str, value: &Value) {
    if !obj[section].is_object() {
        obj[section] = json!({});
    }
    let sec = &mut obj[section];
    if key == "conditions" || key == "packageConditions" {
        let mut items: Vec<Value> = sec[key].as_array().cloned().unwrap_or_default();
        for c in value.as_array().into_iter().flatten() {
            match items.iter_mut().find(|i| i["type"] == c["type"]) {
                Some(i) => *i = c.clone(),
                None => items.push(c.clone()),
            }
        }
        sec[key] = Value::Array(items);
    } else {
        sec[key] = value.clone();
    }
}

/// The objects of the per-object files earlier versions wrote
/// (`<namespace>/<name>.json`), and those files.
fn read_legacy(root: &Path) -> CallResult<(Vec<Stored>, Vec<PathBuf>)> {
    let mut objects = Vec::new();
    let mut files = Vec::new();
    let Ok(namespaces) = std::fs::read_dir(root) else {
        return Ok((objects, files));
    };
    for ns in namespaces.flatten() {
        if !ns.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(ns.path()) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.extension().and_then(|x| x.to_str()) != Some("json") {
                continue;
            }
            let text =
                std::fs::read_to_string(&p).map_err(|e| failed(&p.display().to_string(), e))?;
            let stored: Stored =
                serde_json::from_str(&text).map_err(|e| failed(&p.display().to_string(), e))?;
            objects.push(stored);
            files.push(p);
        }
    }
    Ok((objects, files))
}

/// The changes of a journal's text, and how many of its bytes they are:
/// a last line cut short (no newline, as a killed append leaves it) is
/// not among them; any other line that does not read is an error.
fn read_journal(path: &Path, text: &str) -> CallResult<(Vec<Change>, u64)> {
    let mut changes = Vec::new();
    let mut whole = 0u64;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        if !line.ends_with('\n') {
            tracing::warn!(path = %path.display(), line = i + 1, "dropping a journal line cut short");
            break;
        }
        let change: Change = serde_json::from_str(line)
            .map_err(|e| failed(&format!("{}, line {}", path.display(), i + 1), e))?;
        changes.push(change);
        whole += line.len() as u64;
    }
    Ok((changes, whole))
}

impl LocalApi {
    /// Loads the objects under `state/packagerevisions`; `repositories`
    /// are the directory's Repository objects.
    pub fn load(state: &Path, repositories: &[Value], now: &str) -> CallResult<Self> {
        let root = state.join("packagerevisions");
        let mut table = Table::default();
        let snapshot = root.join(SNAPSHOT);
        match std::fs::read_to_string(&snapshot) {
            Ok(text) => {
                for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.is_empty()) {
                    let stored: Stored = serde_json::from_str(line).map_err(|e| {
                        failed(&format!("{}, line {}", snapshot.display(), i + 1), e)
                    })?;
                    table.put(stored);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                for stored in read_legacy(&root)?.0 {
                    table.put(stored);
                }
            }
            Err(e) => return Err(failed(&snapshot.display().to_string(), e)),
        }
        let discovered = root.join(DISCOVERED);
        match std::fs::read(&discovered) {
            // Only a hint: one that does not read means discovering again.
            Ok(bytes) => table.discovered = serde_json::from_slice(&bytes).unwrap_or_default(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(failed(&discovered.display().to_string(), e)),
        }
        let journal = root.join(JOURNAL);
        match std::fs::read_to_string(&journal) {
            Ok(text) => {
                let (changes, whole) = read_journal(&journal, &text)?;
                for c in changes {
                    table.apply(c);
                }
                table.journal_len = whole;
                table.dirty = !text.is_empty();
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(failed(&journal.display().to_string(), e)),
        }
        Ok(LocalApi {
            root,
            table: Mutex::new(table),
            repositories: repositories
                .iter()
                .map(|r| (key_of(r), r.clone()))
                .collect(),
            now: now.to_string(),
        })
    }

    fn table(&self) -> CallResult<std::sync::MutexGuard<'_, Table>> {
        self.table
            .lock()
            .map_err(|_| CallError::Failed("the object table is unusable".into()))
    }

    /// Appends `change` to the journal (opened, and a line cut short by a
    /// killed process cut off, at the first change).
    fn record(&self, table: &mut Table, change: &Change) -> CallResult<()> {
        let path = self.root.join(JOURNAL);
        let mut line = serde_json::to_vec(change).map_err(|e| failed("encoding", e))?;
        line.push(b'\n');
        let file = match table.journal.take() {
            Some(file) => file,
            None => self.open_journal(&path, table.journal_len)?,
        };
        let file = table.journal.insert(file);
        // One write of the whole line: a kill leaves it whole or cut
        // short, never mixed with the next.
        file.write_all(&line)
            .map_err(|e| failed(&path.display().to_string(), e))?;
        table.journal_len += line.len() as u64;
        table.dirty = true;
        Ok(())
    }

    /// The journal at `path`, opened to append after its first `whole`
    /// bytes (a line cut short after them is cut off).
    fn open_journal(&self, path: &Path, whole: u64) -> CallResult<std::fs::File> {
        let err = |e: std::io::Error| failed(&path.display().to_string(), e);
        std::fs::create_dir_all(&self.root)
            .map_err(|e| failed(&self.root.display().to_string(), e))?;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(err)?;
        if file.metadata().map_err(err)?.len() > whole {
            file.set_len(whole).map_err(err)?;
        }
        Ok(file)
    }

    /// Writes the table as one file and drops the journal, when anything
    /// changed since it was read (the end of a command that wrote). A
    /// process killed half-way leaves the old file and the journal, or
    /// the new file and a journal that changes nothing more.
    pub fn compact(&self) -> CallResult<()> {
        let mut table = self.table()?;
        let (_, legacy) = read_legacy(&self.root)?;
        if !table.dirty && legacy.is_empty() {
            return Ok(());
        }
        let mut bytes = Vec::new();
        for stored in table.objects.values() {
            serde_json::to_writer(&mut bytes, stored).map_err(|e| failed("encoding", e))?;
            bytes.push(b'\n');
        }
        crate::store::replace_file(&self.root.join(SNAPSHOT), &bytes)
            .map_err(|e| CallError::Failed(e.to_string()))?;
        let discovered =
            serde_json::to_vec(&table.discovered).map_err(|e| failed("encoding", e))?;
        crate::store::replace_file(&self.root.join(DISCOVERED), &discovered)
            .map_err(|e| CallError::Failed(e.to_string()))?;
        // The new table supersedes the per-object files, then the
        // journal.
        for f in &legacy {
            std::fs::remove_file(f).map_err(|e| failed(&f.display().to_string(), e))?;
            if let Some(dir) = f.parent() {
                // Gone once empty; a folder still holding files stays.
                let _ = std::fs::remove_dir(dir);
            }
        }
        table.journal = None;
        let journal = self.root.join(JOURNAL);
        match std::fs::remove_file(&journal) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(failed(&journal.display().to_string(), e))
            }
            _ => {}
        }
        table.journal_len = 0;
        table.dirty = false;
        Ok(())
    }

    fn not_found(ns: &str, name: &str) -> CallError {
        CallError::NotFound(format!(
            "packagerevisions.porch.kpt.dev \"{name}\" not found in namespace {ns}"
        ))
    }

    /// Changes one object; `f` returns whether its spec changed (a new
    /// generation). An object with a deletion time and no finalizers left
    /// is removed, as the API server removes it.
    fn update(
        &self,
        ns: &str,
        name: &str,
        f: impl FnOnce(&mut Stored) -> CallResult<bool>,
    ) -> CallResult<()> {
        let mut table = self.table()?;
        let key = (ns.to_string(), name.to_string());
        let Some(stored) = table.objects.get(&key) else {
            return Err(Self::not_found(ns, name));
        };
        let mut next = stored.clone();
        let spec_changed = f(&mut next)?;
        if next.object == stored.object && next.managed_fields == stored.managed_fields {
            // Nothing changed: nothing is written (no new resource version).
            return Ok(());
        }
        let meta = &mut next.object["metadata"];
        let rv = meta["resourceVersion"]
            .as_str()
            .and_then(|s| s.parse::<u64>().ok())
            .unwrap_or(0);
        meta["resourceVersion"] = json!((rv + 1).to_string());
        if spec_changed {
            let g = meta["generation"].as_i64().unwrap_or(0);
            meta["generation"] = json!(g + 1);
        }
        let gone = !meta["deletionTimestamp"].is_null()
            && meta["finalizers"].as_array().is_none_or(|f| f.is_empty());
        if gone {
            self.record(
                &mut table,
                &Change::Delete {
                    namespace: key.0.clone(),
                    name: key.1.clone(),
                },
            )?;
            table.remove(&key);
        } else {
            let change = Change::Put(next);
            self.record(&mut table, &change)?;
            if let Change::Put(next) = change {
                table.put(next);
            }
        }
        Ok(())
    }

    /// Creates an object (Conflict if it exists).
    pub fn create(&self, object: &Value) -> CallResult<Value> {
        let mut object = object.clone();
        let key = key_of(&object);
        if key.1.is_empty() {
            return Err(CallError::Failed("metadata.name: required".into()));
        }
        let mut table = self.table()?;
        if table.objects.contains_key(&key) {
            return Err(CallError::AlreadyExists(format!(
                "packagerevisions.porch.kpt.dev \"{}\" already exists",
                key.1
            )));
        }
        let meta = &mut object["metadata"];
        meta["namespace"] = json!(key.0);
        meta["uid"] = json!(format!("{}/{}", key.0, key.1));
        meta["generation"] = json!(1);
        meta["resourceVersion"] = json!("1");
        meta["creationTimestamp"] = json!(self.now);
        let change = Change::Put(Stored {
            object: object.clone(),
            managed_fields: BTreeMap::new(),
        });
        self.record(&mut table, &change)?;
        table.apply(change);
        Ok(object)
    }

    /// Deletes an object: with finalizers it is only marked.
    pub fn delete(&self, ns: &str, name: &str) -> CallResult<()> {
        let now = self.now.clone();
        self.update(ns, name, |s| {
            if s.object["metadata"]["deletionTimestamp"].is_null() {
                s.object["metadata"]["deletionTimestamp"] = json!(now);
            }
            Ok(false)
        })
    }

    /// Every object, in namespace and name order (a copy of the whole
    /// table: for a command's one pass over it).
    pub fn all(&self) -> Vec<Value> {
        self.table
            .lock()
            .map(|t| t.objects.values().map(|s| s.object.clone()).collect())
            .unwrap_or_default()
    }

    /// The keys (namespace, name) of the objects for which `f` holds, in
    /// order, without copying the objects.
    pub fn keys_where(&self, f: impl Fn(&Value) -> bool) -> Vec<(String, String)> {
        self.table
            .lock()
            .map(|t| {
                t.objects
                    .iter()
                    .filter(|(_, s)| f(&s.object))
                    .map(|(k, _)| k.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The repository `namespace/repository`'s fingerprint as of its last
    /// discovery that left every revision in it with an object.
    pub fn discovered(&self, namespace: &str, repository: &str) -> Option<String> {
        self.table
            .lock()
            .ok()?
            .discovered
            .get(&format!("{namespace}/{repository}"))
            .cloned()
    }

    /// Records that every revision of `namespace/repository` has an object
    /// while its fingerprint is `fingerprint` (kept with the table at the
    /// next [`LocalApi::compact`]).
    pub fn set_discovered(&self, namespace: &str, repository: &str, fingerprint: &str) {
        if let Ok(mut t) = self.table.lock() {
            let key = format!("{namespace}/{repository}");
            if t.discovered.get(&key).map(String::as_str) != Some(fingerprint) {
                t.discovered.insert(key, fingerprint.to_string());
                t.dirty = true;
            }
        }
    }

    /// The Repositories of `namespace`, by name.
    pub fn repository_names(&self, namespace: &str) -> Vec<String> {
        self.repositories
            .keys()
            .filter(|(ns, _)| ns == namespace)
            .map(|(_, name)| name.clone())
            .collect()
    }

    /// The objects of `namespace` that pass `filter`, in name order, read
    /// through the table's indexes.
    pub fn matching(&self, namespace: &str, filter: &PrFilter) -> CallResult<Vec<Value>> {
        let table = self.table()?;
        Ok(table
            .candidates(namespace, filter)
            .into_iter()
            .filter_map(|name| table.objects.get(&(namespace.to_string(), name)))
            .map(|s| &s.object)
            .filter(|o| filter.matches_v1alpha2(o))
            .cloned()
            .collect())
    }

    /// Replaces an object's spec (a user's edit): a new generation when it
    /// differs.
    pub fn set_spec(&self, ns: &str, name: &str, spec: &Value) -> CallResult<()> {
        self.update(ns, name, |s| {
            let changed = s.object["spec"] != *spec;
            s.object["spec"] = spec.clone();
            Ok(changed)
        })
    }

    fn apply(&self, section: &str, manager: &str, object: &Value) -> CallResult<()> {
        let (ns, name) = key_of(object);
        let fields = object[section].as_object().cloned().unwrap_or_default();
        self.update(&ns, &name, |s| {
            let before = s.object[section].clone();
            let new_paths = owned_paths(section, &fields);
            let old_paths = s.managed_fields.remove(manager).unwrap_or_default();
            for p in old_paths.difference(&new_paths) {
                let owned_by_other = s.managed_fields.values().any(|o| o.contains(p));
                if !owned_by_other {
                    remove_path(&mut s.object, p);
                }
            }
            for others in s.managed_fields.values_mut() {
                others.retain(|p| !new_paths.contains(p));
            }
            for (k, v) in &fields {
                set_path(&mut s.object, section, k, v);
            }
            s.managed_fields.insert(manager.to_string(), new_paths);
            s.managed_fields.retain(|_, o| !o.is_empty());
            Ok(section == "spec" && s.object[section] != before)
        })
    }
}

impl PrApi for LocalApi {
    fn get(&self, namespace: &str, name: &str) -> CallResult<Value> {
        self.table()?
            .objects
            .get(&(namespace.to_string(), name.to_string()))
            .map(|s| s.object.clone())
            .ok_or_else(|| Self::not_found(namespace, name))
    }

    fn read(&self, namespace: &str, name: &str) -> CallResult<Value> {
        self.get(namespace, name)
    }

    fn get_repository(&self, namespace: &str, name: &str) -> CallResult<Value> {
        let mut repo = self
            .repositories
            .get(&(namespace.to_string(), name.to_string()))
            .cloned()
            .ok_or_else(|| {
                CallError::NotFound(format!(
                    "repositories.config.porch.kpt.dev \"{name}\" not found in namespace {namespace}"
                ))
            })?;
        if repo["metadata"]["uid"].as_str().is_none_or(str::is_empty) {
            repo["metadata"]["uid"] = json!(format!("repository/{namespace}/{name}"));
        }
        Ok(repo)
    }

    fn merge_patch(&self, namespace: &str, name: &str, patch: &Value) -> CallResult<()> {
        self.update(namespace, name, |s| {
            let before = s.object["spec"].clone();
            merge_patch(&mut s.object, patch);
            Ok(s.object["spec"] != before)
        })
    }

    fn apply_status(&self, manager: &str, object: &Value) -> CallResult<()> {
        self.apply("status", manager, object)
    }

    fn apply_spec(&self, manager: &str, object: &Value) -> CallResult<()> {
        self.apply("spec", manager, object)
    }

    fn list(&self, namespace: &str, repository: &str, package: &str) -> CallResult<Vec<Value>> {
        self.matching(namespace, &PrFilter::package(repository, package))
    }
}

impl crate::store::v1alpha2::PrObjects for LocalApi {
    fn list(&self, namespace: &str, filter: &PrFilter) -> CallResult<Vec<Value>> {
        self.matching(namespace, filter)
    }

    fn get(&self, namespace: &str, name: &str) -> CallResult<Value> {
        PrApi::get(self, namespace, name)
    }

    fn create(&self, object: &Value) -> CallResult<Value> {
        LocalApi::create(self, object)
    }

    fn merge_patch(&self, namespace: &str, name: &str, patch: &Value) -> CallResult<()> {
        PrApi::merge_patch(self, namespace, name, patch)
    }

    fn delete(&self, namespace: &str, name: &str) -> CallResult<()> {
        LocalApi::delete(self, namespace, name)
    }

    fn annotated_packages(&self, key: &str) -> CallResult<Vec<(String, String, String)>> {
        let table = self
            .table
            .lock()
            .map_err(|_| CallError::Failed("the object table's lock is poisoned".into()))?;
        let found: std::collections::BTreeSet<_> = table
            .objects
            .values()
            .filter_map(|s| crate::store::v1alpha2::annotated_package(&s.object, key))
            .collect();
        Ok(found.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(dir: &Path) -> LocalApi {
        let api = LocalApi::load(dir, &[], "2026-01-01T00:00:00Z").unwrap();
        api.create(
            &json!({"metadata": {"name": "r.p.ws", "namespace": "default"},
            "spec": {"lifecycle": "Draft"}}),
        )
        .unwrap();
        api
    }

    #[test]
    fn an_apply_drops_what_its_manager_no_longer_sends_but_not_others_fields() {
        let dir = tempfile::tempdir().unwrap();
        let api = api(dir.path());
        let obj = |status: Value| json!({"metadata": {"name": "r.p.ws", "namespace": "default"}, "status": status});
        api.apply_status(
            "a",
            &obj(json!({"revision": 2, "conditions": [{"type": "Ready", "status": "True"}]})),
        )
        .unwrap();
        api.apply_status(
            "b",
            &obj(json!({"conditions": [{"type": "Rendered", "status": "True"}]})),
        )
        .unwrap();
        api.apply_status(
            "a",
            &obj(json!({"conditions": [{"type": "Ready", "status": "False"}]})),
        )
        .unwrap();
        let got = api.get("default", "r.p.ws").unwrap();
        assert!(got["status"].get("revision").is_none(), "{got}");
        let types: Vec<&str> = got["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["type"].as_str().unwrap())
            .collect();
        assert_eq!(types, ["Ready", "Rendered"]);
        assert_eq!(got["status"]["conditions"][0]["status"], "False");
        // Reloaded from disk, the managers are still known.
        let again = LocalApi::load(dir.path(), &[], "t").unwrap();
        again.apply_status("b", &obj(json!({}))).unwrap();
        let got = again.get("default", "r.p.ws").unwrap();
        assert_eq!(got["status"]["conditions"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn a_deleted_object_with_a_finalizer_stays_until_the_finalizer_goes() {
        let dir = tempfile::tempdir().unwrap();
        let api = api(dir.path());
        api.merge_patch(
            "default",
            "r.p.ws",
            &json!({"metadata": {"finalizers": ["f"]}}),
        )
        .unwrap();
        api.delete("default", "r.p.ws").unwrap();
        assert!(!api.get("default", "r.p.ws").unwrap()["metadata"]["deletionTimestamp"].is_null());
        api.merge_patch(
            "default",
            "r.p.ws",
            &json!({"metadata": {"finalizers": null}}),
        )
        .unwrap();
        assert!(matches!(
            api.get("default", "r.p.ws"),
            Err(CallError::NotFound(_))
        ));
        assert!(LocalApi::load(dir.path(), &[], "t")
            .unwrap()
            .all()
            .is_empty());
    }

    #[test]
    fn a_spec_change_is_a_new_generation_and_a_status_apply_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let api = api(dir.path());
        api.set_spec("default", "r.p.ws", &json!({"lifecycle": "Proposed"}))
            .unwrap();
        api.apply_status("m", &json!({"metadata": {"name": "r.p.ws", "namespace": "default"}, "status": {"revision": 1}}))
            .unwrap();
        let got = api.get("default", "r.p.ws").unwrap();
        assert_eq!(got["metadata"]["generation"], 2);
        assert_eq!(got["metadata"]["resourceVersion"], "3");
    }
    fn named(name: &str, repo: &str, pkg: &str, owner: Option<&str>) -> Value {
        let mut o = json!({"metadata": {"name": name, "namespace": "default"},
            "spec": {"repository": repo, "packageName": pkg, "lifecycle": "Draft"}});
        if let Some(uid) = owner {
            o["metadata"]["ownerReferences"] =
                json!([{"kind": "PackageVariant", "name": "pv", "uid": uid}]);
        }
        o
    }

    fn names(objects: &[Value]) -> Vec<&str> {
        objects
            .iter()
            .map(|o| o["metadata"]["name"].as_str().unwrap())
            .collect()
    }

    #[test]
    fn lists_answer_from_the_indexes_as_the_objects_change() {
        let dir = tempfile::tempdir().unwrap();
        let api = LocalApi::load(dir.path(), &[], "t").unwrap();
        api.create(&named("r.a.1", "r", "a", Some("u1"))).unwrap();
        api.create(&named("r.a.2", "r", "a", None)).unwrap();
        api.create(&named("r.b.1", "r", "b", Some("u1"))).unwrap();
        api.create(&named("s.a.1", "s", "a", Some("u2"))).unwrap();
        let by = |f: PrFilter| api.matching("default", &f).unwrap();
        assert_eq!(names(&by(PrFilter::package("r", "a"))), ["r.a.1", "r.a.2"]);
        assert_eq!(names(&by(PrFilter::owned_by("u1"))), ["r.a.1", "r.b.1"]);
        let in_r = PrFilter {
            repository: Some("r".into()),
            ..PrFilter::default()
        };
        assert_eq!(names(&by(in_r.clone())), ["r.a.1", "r.a.2", "r.b.1"]);
        assert_eq!(by(PrFilter::default()).len(), 4);
        assert!(api
            .matching("other", &PrFilter::default())
            .unwrap()
            .is_empty());
        // An owner reference moves: the owner index follows.
        api.merge_patch(
            "default",
            "r.a.1",
            &json!({"metadata": {"ownerReferences": [{"uid": "u2"}]}}),
        )
        .unwrap();
        assert_eq!(names(&by(PrFilter::owned_by("u1"))), ["r.b.1"]);
        assert_eq!(names(&by(PrFilter::owned_by("u2"))), ["r.a.1", "s.a.1"]);
        // A deleted object leaves every index.
        api.delete("default", "r.a.1").unwrap();
        assert_eq!(names(&by(PrFilter::package("r", "a"))), ["r.a.2"]);
        assert_eq!(names(&by(PrFilter::owned_by("u2"))), ["s.a.1"]);
        assert_eq!(
            names(&PrApi::list(&api, "default", "r", "b").unwrap()),
            ["r.b.1"]
        );
    }

    #[test]
    fn changes_survive_a_process_that_never_compacted() {
        let dir = tempfile::tempdir().unwrap();
        {
            let api = LocalApi::load(dir.path(), &[], "t").unwrap();
            api.create(&named("r.a.1", "r", "a", None)).unwrap();
            api.compact().unwrap();
            api.create(&named("r.a.2", "r", "a", None)).unwrap();
            api.set_spec(
                "default",
                "r.a.1",
                &json!({"lifecycle": "Proposed", "repository": "r", "packageName": "a"}),
            )
            .unwrap();
            // Killed here: no compaction.
        }
        let journal = dir.path().join("packagerevisions").join(JOURNAL);
        assert!(journal.exists());
        let api = LocalApi::load(dir.path(), &[], "t").unwrap();
        assert_eq!(names(&api.all()), ["r.a.1", "r.a.2"]);
        assert_eq!(
            api.get("default", "r.a.1").unwrap()["spec"]["lifecycle"],
            "Proposed"
        );
        api.compact().unwrap();
        assert!(!journal.exists());
        let again = LocalApi::load(dir.path(), &[], "t").unwrap();
        assert_eq!(again.all(), api.all());
    }

    #[test]
    fn a_journal_line_cut_short_is_dropped_and_cut_off_before_the_next() {
        let dir = tempfile::tempdir().unwrap();
        {
            let api = LocalApi::load(dir.path(), &[], "t").unwrap();
            api.create(&named("r.a.1", "r", "a", None)).unwrap();
        }
        let journal = dir.path().join("packagerevisions").join(JOURNAL);
        let whole = std::fs::read(&journal).unwrap();
        // A second change, killed half-way through its line.
        let mut cut = whole.clone();
        cut.extend_from_slice(br#"{"put":{"object":{"metadata":{"name":"r.a.2""#);
        std::fs::write(&journal, &cut).unwrap();
        let api = LocalApi::load(dir.path(), &[], "t").unwrap();
        assert_eq!(names(&api.all()), ["r.a.1"]);
        api.create(&named("r.b.1", "r", "b", None)).unwrap();
        let after = std::fs::read_to_string(&journal).unwrap();
        assert!(after.starts_with(std::str::from_utf8(&whole).unwrap()));
        assert_eq!(after.lines().count(), 2, "{after}");
        assert_eq!(
            names(&LocalApi::load(dir.path(), &[], "t").unwrap().all()),
            ["r.a.1", "r.b.1"]
        );
        // A damaged line in the middle is an error naming the file and line.
        std::fs::write(&journal, format!("not json\n{after}")).unwrap();
        let Err(e) = LocalApi::load(dir.path(), &[], "t") else {
            panic!("a damaged journal loads");
        };
        assert!(e.to_string().contains("journal.jsonl, line 1"), "{e}");
    }

    #[test]
    fn objects_kept_one_file_each_are_read_and_moved_into_the_table() {
        let dir = tempfile::tempdir().unwrap();
        let legacy = dir.path().join("packagerevisions/default");
        std::fs::create_dir_all(&legacy).unwrap();
        let stored = json!({"object": named("r.a.1", "r", "a", Some("u1")),
            "managedFields": {"m": ["status.revision"]}});
        std::fs::write(legacy.join("r.a.1.json"), stored.to_string()).unwrap();
        let api = LocalApi::load(dir.path(), &[], "t").unwrap();
        assert_eq!(
            names(&api.matching("default", &PrFilter::owned_by("u1")).unwrap()),
            ["r.a.1"]
        );
        api.compact().unwrap();
        assert!(!legacy.exists(), "the per-object files are gone");
        let again = LocalApi::load(dir.path(), &[], "t").unwrap();
        assert_eq!(again.all(), api.all());
        // The manager's fields came along.
        again
            .apply_status(
                "m",
                &json!({"metadata": {"name": "r.a.1", "namespace": "default"}, "status": {}}),
            )
            .unwrap();
    }
}
