//! [`LocalApi`]: v1alpha2 PackageRevision objects kept as an API server
//! keeps them, in files under the directory's state
//! (`.porch-variants/packagerevisions/<namespace>/<name>.json`, each
//! written to a temporary name and renamed): generations, resource
//! versions, finalizers with Kubernetes' deletion semantics, JSON merge
//! patches, and server-side apply with field managers, so that an apply
//! removes what its manager applied before and no longer sends, and never
//! what another manager owns.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::{CallError, CallResult, PrApi};

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

/// The PackageRevision objects of a local directory and its Repositories.
pub struct LocalApi {
    root: PathBuf,
    objects: Mutex<BTreeMap<(String, String), Stored>>,
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

impl LocalApi {
    /// Loads the objects under `state/packagerevisions`; `repositories`
    /// are the directory's Repository objects.
    pub fn load(state: &Path, repositories: &[Value], now: &str) -> CallResult<Self> {
        let root = state.join("packagerevisions");
        let mut objects = BTreeMap::new();
        if root.is_dir() {
            let namespaces =
                std::fs::read_dir(&root).map_err(|e| failed(&root.display().to_string(), e))?;
            for ns in namespaces.flatten() {
                let Ok(entries) = std::fs::read_dir(ns.path()) else {
                    continue;
                };
                for e in entries.flatten() {
                    let p = e.path();
                    if p.extension().and_then(|x| x.to_str()) != Some("json") {
                        continue;
                    }
                    let text = std::fs::read_to_string(&p)
                        .map_err(|e| failed(&p.display().to_string(), e))?;
                    let stored: Stored = serde_json::from_str(&text)
                        .map_err(|e| failed(&p.display().to_string(), e))?;
                    objects.insert(key_of(&stored.object), stored);
                }
            }
        }
        Ok(LocalApi {
            root,
            objects: Mutex::new(objects),
            repositories: repositories
                .iter()
                .map(|r| (key_of(r), r.clone()))
                .collect(),
            now: now.to_string(),
        })
    }

    fn path(&self, ns: &str, name: &str) -> PathBuf {
        self.root.join(ns).join(format!("{name}.json"))
    }

    fn save(&self, key: &(String, String), stored: Option<&Stored>) -> CallResult<()> {
        let path = self.path(&key.0, &key.1);
        let Some(stored) = stored else {
            return match std::fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    Err(failed(&path.display().to_string(), e))
                }
                _ => Ok(()),
            };
        };
        let dir = path.parent().unwrap_or(&self.root);
        std::fs::create_dir_all(dir).map_err(|e| failed(&dir.display().to_string(), e))?;
        let tmp = path.with_extension(format!("json.tmp-{}", std::process::id()));
        let text = serde_json::to_string_pretty(stored).map_err(|e| failed("encoding", e))?;
        std::fs::write(&tmp, text).map_err(|e| failed(&tmp.display().to_string(), e))?;
        std::fs::rename(&tmp, &path).map_err(|e| failed(&path.display().to_string(), e))
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
        let mut objects = self
            .objects
            .lock()
            .map_err(|_| CallError::Failed("the object table is unusable".into()))?;
        let key = (ns.to_string(), name.to_string());
        let Some(stored) = objects.get_mut(&key) else {
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
            self.save(&key, None)?;
            objects.remove(&key);
        } else {
            self.save(&key, Some(&next))?;
            *stored = next;
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
        let mut objects = self
            .objects
            .lock()
            .map_err(|_| CallError::Failed("the object table is unusable".into()))?;
        if objects.contains_key(&key) {
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
        let stored = Stored {
            object: object.clone(),
            managed_fields: BTreeMap::new(),
        };
        self.save(&key, Some(&stored))?;
        objects.insert(key, stored);
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

    /// Every object, in namespace and name order.
    pub fn all(&self) -> Vec<Value> {
        self.objects
            .lock()
            .map(|o| o.values().map(|s| s.object.clone()).collect())
            .unwrap_or_default()
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
        self.objects
            .lock()
            .map_err(|_| CallError::Failed("the object table is unusable".into()))?
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
        Ok(self
            .all()
            .into_iter()
            .filter(|o| {
                key_of(o).0 == namespace
                    && o["spec"]["repository"] == repository
                    && o["spec"]["packageName"] == package
            })
            .collect())
    }
}

impl crate::store::v1alpha2::PrObjects for LocalApi {
    fn list(&self, namespace: &str) -> CallResult<Vec<Value>> {
        Ok(self
            .all()
            .into_iter()
            .filter(|o| key_of(o).0 == namespace)
            .collect())
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
}
