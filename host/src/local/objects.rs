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
use crate::store::memory::MemoryObjects;
use crate::store::rules::ns_or_default;
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

/// `v` read as `T`; an error names the field (`spec.upstream: invalid
/// type: …`).
fn typed<T: DeserializeOwned>(v: &Value, what: &str) -> StoreResult<T> {
    serde_path_to_error::deserialize(v.clone()).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." {
            data_err(what, inner)
        } else {
            data_err(what, format!("{path}: {inner}"))
        }
    })
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
        for (i, o) in objects.objects.iter().enumerate() {
            let what = || match objects.sources.get(i) {
                Some(source) => format!("{source} ({})", name_of(o)),
                None => name_of(o),
            };
            match o["kind"].as_str().unwrap_or_default() {
                "PackageVariant" => user_pvs.push(typed::<PackageVariant>(o, &what())?),
                "PackageVariantSet" => {
                    let mut set: PackageVariantSet = typed(o, &what())?;
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
                "Repository" => mem.put_repository(typed::<Repository>(o, &what())?),
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

/// Longest object name kept as its state file's name: with `.yaml` and a
/// write's `.tmp` it stays well under the 255 bytes a file name may have.
const MAX_FILE_NAME: usize = 200;

/// The state file of `ns/name`: `<name>.yaml`, or for a name longer than
/// [`MAX_FILE_NAME`] (Kubernetes allows 253) its start and a hash of the
/// whole (`<first 150>.<hash>.yaml`). The file holds the object, name and
/// all, which is what is read back.
fn state_path(state: &Path, kind: &str, ns: &str, name: &str) -> PathBuf {
    let file = if name.len() <= MAX_FILE_NAME {
        format!("{name}.yaml")
    } else {
        let hash = crate::store::fingerprint_of([name.as_bytes()]);
        let start: String = name.chars().take(150).collect();
        format!("{start}.{}.yaml", &hash[..16])
    };
    state.join(ns).join(kind).join(file)
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
    crate::store::replace_file(&path, text.as_bytes())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_that_does_not_read_names_its_file_and_document() {
        let dir = tempfile::tempdir().expect("temporary directory");
        std::fs::write(
            dir.path().join("variants.yaml"),
            "kind: ConfigMap\nmetadata:\n  name: c\n---\napiVersion: config.porch.kpt.dev/v1alpha1\nkind: PackageVariant\nmetadata:\n  name: x\nspec:\n  upstream: 5\n",
        )
        .expect("writes");
        let objects = super::super::read_objects(dir.path(), super::super::Validation::Strict)
            .expect("reads");
        let e = match LocalObjects::load(dir.path(), &objects, "2026-01-01T00:00:00Z") {
            Ok(_) => panic!("loaded"),
            Err(e) => e.to_string(),
        };
        assert!(
            e.contains("variants.yaml, document 2 (PackageVariant default/x)"),
            "{e}"
        );
        assert!(
            e.ends_with("spec.upstream: invalid type: integer `5`, expected struct Upstream"),
            "{e}"
        );
    }
}
