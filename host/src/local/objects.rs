//! [`LocalObjects`]: the objects of a local directory, with the
//! controller's writes kept under `.porch-variants/status/`.

use std::path::{Path, PathBuf};

use pv_core::api::PackageVariant;
use pv_core::variantset::types::KIND as PVS_KIND;
use pv_core::variantset::{PackageVariantSet, Repository};
use pv_core::yaml;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use super::{parse_yaml_objects, DirObjects, STATE_DIR};
use crate::store::memory::{ns_or_default, MemoryObjects};
use crate::store::{ObjectStore, StoreError, StoreResult};

/// The objects of a directory (read from its YAML files) merged with the
/// controller's state; every controller write is persisted at once (one
/// file, written to a temporary name and renamed).
pub struct LocalObjects {
    mem: MemoryObjects,
    state: PathBuf,
}

fn data_err(context: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Data {
        context: context.to_string(),
        message: e.to_string(),
    }
}

fn typed<T: DeserializeOwned>(v: &Value, what: &str) -> StoreResult<T> {
    serde_json::from_value(v.clone()).map_err(|e| data_err(what, e))
}

fn name_of(v: &Value) -> String {
    format!(
        "{} {}/{}",
        v["kind"].as_str().unwrap_or_default(),
        ns_or_default(v["metadata"]["namespace"].as_str().unwrap_or_default()),
        v["metadata"]["name"].as_str().unwrap_or_default()
    )
}

impl LocalObjects {
    /// Loads `objects` (from `dir`'s files) and the state under `dir`;
    /// deletions are stamped `now`.
    pub fn load(dir: &Path, objects: &DirObjects, now: &str) -> StoreResult<Self> {
        let mem = MemoryObjects::new(now);
        let state = dir.join(STATE_DIR);
        let saved_pvs: Vec<PackageVariant> = read_state(&state, "PackageVariant")?;
        let saved_sets: Vec<PackageVariantSet> = read_state(&state, PVS_KIND)?;
        let mut user_pvs = Vec::new();
        for o in &objects.objects {
            match o["kind"].as_str().unwrap_or_default() {
                "PackageVariant" => user_pvs.push(typed::<PackageVariant>(o, &name_of(o))?),
                "PackageVariantSet" => {
                    let mut set: PackageVariantSet = typed(o, &name_of(o))?;
                    set.metadata.namespace = ns_or_default(&set.metadata.namespace);
                    if let Some(saved) = saved_sets.iter().find(|s| {
                        s.metadata.name == set.metadata.name
                            && s.metadata.namespace == set.metadata.namespace
                    }) {
                        set.status = saved.status.clone();
                        if set.metadata.uid.is_empty() {
                            set.metadata.uid = saved.metadata.uid.clone();
                        }
                    }
                    mem.put_package_variant_set(set);
                }
                "Repository" => mem.put_repository(typed::<Repository>(o, &name_of(o))?),
                _ => mem.put_object(o.clone()),
            }
        }
        for mut pv in user_pvs {
            pv.metadata.namespace = ns_or_default(&pv.metadata.namespace);
            if let Some(saved) = saved_pvs.iter().find(|s| {
                s.metadata.name == pv.metadata.name && s.metadata.namespace == pv.metadata.namespace
            }) {
                if pv.metadata.uid.is_empty() {
                    pv.metadata.uid = saved.metadata.uid.clone();
                }
                pv.metadata.finalizers = saved.metadata.finalizers.clone();
                pv.status = saved.status.clone();
            }
            mem.put_package_variant(pv);
        }
        for saved in saved_pvs {
            let (ns, name) = (
                saved.metadata.namespace.clone(),
                saved.metadata.name.clone(),
            );
            if mem.package_variant(&ns, &name).is_some() {
                continue;
            }
            let generated = saved
                .metadata
                .owner_references
                .iter()
                .any(|o| o.kind == PVS_KIND && o.controller == Some(true));
            let mut pv = saved;
            if !generated && pv.metadata.deletion_timestamp.is_none() {
                // Its file is gone: the user deleted it.
                pv.metadata.deletion_timestamp = Some(now.to_string());
            }
            if pv.metadata.deletion_timestamp.is_some() && pv.metadata.finalizers.is_empty() {
                remove_state(&state, "PackageVariant", &ns, &name)?;
                continue;
            }
            mem.put_package_variant(pv);
        }
        Ok(LocalObjects { mem, state })
    }

    fn save_pv(&self, ns: &str, name: &str) -> StoreResult<()> {
        match self.mem.package_variant(ns, name) {
            Some(pv) => write_state(&self.state, "PackageVariant", ns, name, &pv),
            None => remove_state(&self.state, "PackageVariant", ns, name),
        }
    }
}

fn state_path(state: &Path, kind: &str, ns: &str, name: &str) -> PathBuf {
    state.join(ns).join(kind).join(format!("{name}.yaml"))
}

fn read_state<T: DeserializeOwned>(state: &Path, kind: &str) -> StoreResult<Vec<T>> {
    let mut out = Vec::new();
    let Ok(namespaces) = std::fs::read_dir(state) else {
        return Ok(out);
    };
    let mut files: Vec<PathBuf> = Vec::new();
    for ns in namespaces.filter_map(Result::ok) {
        if let Ok(entries) = std::fs::read_dir(ns.path().join(kind)) {
            files.extend(entries.filter_map(|e| e.ok().map(|e| e.path())));
        }
    }
    files.sort();
    for f in files
        .into_iter()
        .filter(|f| f.extension().is_some_and(|e| e == "yaml"))
    {
        for v in parse_yaml_objects(&f)? {
            out.push(typed(&v, &f.display().to_string())?);
        }
    }
    Ok(out)
}

fn write_state<T: Serialize>(
    state: &Path,
    kind: &str,
    ns: &str,
    name: &str,
    obj: &T,
) -> StoreResult<()> {
    let path = state_path(state, kind, ns, name);
    let json = serde_json::to_value(obj).map_err(|e| data_err(kind, e))?;
    let text = yaml::to_string(&yaml::from_json(&json)).map_err(|e| data_err(kind, e))?;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(StoreError::io(format!("creating {}", parent.display())))?;
    }
    let tmp = path.with_extension("yaml.tmp");
    std::fs::write(&tmp, text).map_err(StoreError::io(format!("writing {}", tmp.display())))?;
    std::fs::rename(&tmp, &path).map_err(StoreError::io(format!("writing {}", path.display())))
}

fn remove_state(state: &Path, kind: &str, ns: &str, name: &str) -> StoreResult<()> {
    let path = state_path(state, kind, ns, name);
    match std::fs::remove_file(&path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(StoreError::io(format!("removing {}", path.display()))(e))
        }
        _ => Ok(()),
    }
}

impl ObjectStore for LocalObjects {
    fn list_package_variants(&self, namespace: Option<&str>) -> StoreResult<Vec<PackageVariant>> {
        self.mem.list_package_variants(namespace)
    }
    fn create_package_variant(&self, pv: &PackageVariant) -> StoreResult<PackageVariant> {
        let out = self.mem.create_package_variant(pv)?;
        self.save_pv(&out.metadata.namespace, &out.metadata.name)?;
        Ok(out)
    }
    fn update_package_variant(&self, pv: &PackageVariant) -> StoreResult<PackageVariant> {
        let out = self.mem.update_package_variant(pv)?;
        self.save_pv(&out.metadata.namespace, &out.metadata.name)?;
        Ok(out)
    }
    fn update_package_variant_status(&self, pv: &PackageVariant) -> StoreResult<()> {
        self.mem.update_package_variant_status(pv)?;
        self.save_pv(&ns_or_default(&pv.metadata.namespace), &pv.metadata.name)
    }
    fn delete_package_variant(&self, namespace: &str, name: &str) -> StoreResult<()> {
        self.mem.delete_package_variant(namespace, name)?;
        self.save_pv(namespace, name)
    }
    fn list_package_variant_sets(
        &self,
        namespace: Option<&str>,
    ) -> StoreResult<Vec<PackageVariantSet>> {
        self.mem.list_package_variant_sets(namespace)
    }
    fn update_package_variant_set_status(&self, pvs: &PackageVariantSet) -> StoreResult<()> {
        self.mem.update_package_variant_set_status(pvs)?;
        let ns = ns_or_default(&pvs.metadata.namespace);
        write_state(&self.state, PVS_KIND, &ns, &pvs.metadata.name, pvs)
    }
    fn list_repositories(&self, namespace: &str) -> StoreResult<Vec<Repository>> {
        self.mem.list_repositories(namespace)
    }
    fn list_objects(&self, namespace: &str) -> StoreResult<Vec<Value>> {
        self.mem.list_objects(namespace)
    }
}
