//! A package as files, rebuilt from ResourceList items, and the items of
//! files after an edit.
//!
//! kpt sends every object of a package as an item annotated with its file
//! (`internal.config.kubernetes.io/path`, or the legacy
//! `config.kubernetes.io/path`) and its position in that file (`…/index`).
//! A file's text is its items in index order, each without kpt's own
//! annotations, joined with `---` — what kpt would write to disk. After an
//! edit, a changed file's objects become items again, each carrying back the
//! kpt annotations of the item it replaces (so kpt can match ids, copy
//! comments and write the file where it was); unchanged files keep their
//! original items untouched.

use std::collections::BTreeMap;

use pv_core::api::ResultItem;
use pv_core::krm::objects::parse_objects;
use pv_core::yaml::{self, Node};

use crate::annotations::{self, Removed};
use crate::results;

/// The file of an item that carries no path annotation: `Kptfile` and
/// `package-context.yaml` for those objects, else kyaml's default
/// `<kind>_<name>.yaml`.
pub fn default_path(item: &Node) -> String {
    match (item.object_kind(), item.name()) {
        ("Kptfile", _) => "Kptfile".to_string(),
        ("ConfigMap", "kptfile.kpt.dev") => "package-context.yaml".to_string(),
        (kind, name) => format!("{}_{}.yaml", kind.to_lowercase(), name),
    }
}

/// One item of a file.
#[derive(Debug, Clone)]
struct Slot {
    /// Position of the item in the ResourceList.
    item: usize,
    /// Its position in the file.
    index: usize,
    /// The kpt annotations taken off it.
    removed: Removed,
}

/// The files of a package, rebuilt from items.
#[derive(Debug, Clone, Default)]
pub struct Package {
    /// Every file's text, by path.
    pub files: BTreeMap<String, String>,
    slots: BTreeMap<String, Vec<Slot>>,
    /// The file of each member item, by item position.
    owners: BTreeMap<usize, String>,
}

impl Package {
    /// Rebuilds the files from the items whose positions `members` lists
    /// (all of them objects). Two items claiming the same file and index
    /// are an error.
    pub fn from_items(items: &[Node], members: &[usize]) -> Result<Package, Vec<ResultItem>> {
        let mut slots: BTreeMap<String, Vec<Slot>> = BTreeMap::new();
        let mut owners = BTreeMap::new();
        let mut stripped: BTreeMap<usize, Node> = BTreeMap::new();
        for &i in members {
            let item = &items[i];
            let path = annotations::path(item).map_or_else(|| default_path(item), str::to_string);
            let mut copy = item.clone();
            let removed = annotations::strip(&mut copy, false);
            stripped.insert(i, copy);
            owners.insert(i, path.clone());
            slots.entry(path).or_default().push(Slot {
                item: i,
                index: annotations::index(item),
                removed,
            });
        }
        let mut errors = Vec::new();
        let mut files = BTreeMap::new();
        for (path, file_slots) in &mut slots {
            file_slots.sort_by_key(|s| (s.index, s.item));
            for pair in file_slots.windows(2) {
                if pair[0].index == pair[1].index {
                    errors.push(results::about_item(
                        results::error(format!(
                            "items[{}] and items[{}] are both object {} of file {path}",
                            pair[0].item, pair[1].item, pair[0].index
                        )),
                        &items[pair[1].item],
                    ));
                }
            }
            let mut text = String::new();
            for (n, slot) in file_slots.iter().enumerate() {
                if n > 0 {
                    text.push_str("---\n");
                }
                match yaml::to_string(&stripped[&slot.item]) {
                    Ok(t) => text.push_str(&t),
                    Err(e) => errors.push(results::about_item(
                        results::error(format!("cannot write items[{}] as YAML: {e}", slot.item)),
                        &items[slot.item],
                    )),
                }
            }
            files.insert(path.clone(), text);
        }
        if errors.is_empty() {
            Ok(Package {
                files,
                slots,
                owners,
            })
        } else {
            Err(errors)
        }
    }

    /// The position in the ResourceList of the first item of `path`.
    pub fn first_item(&self, path: &str) -> Option<usize> {
        self.slots.get(path)?.iter().map(|s| s.item).min()
    }

    /// The file an item belongs to.
    pub fn file_of(&self, item: usize) -> Option<&str> {
        self.owners.get(&item).map(String::as_str)
    }

    /// The items of file `path` with new content `text`: each object gets
    /// the kpt annotations of the item at its position, or new path and
    /// index annotations when the file grew.
    pub fn items_of(&self, path: &str, text: &str) -> Result<Vec<Node>, ResultItem> {
        let objects = parse_objects(text).map_err(|e| {
            results::in_file(
                results::error(format!("cannot read the edited {path}: {e}")),
                path,
                0,
            )
        })?;
        let slots = self.slots.get(path).map(Vec::as_slice).unwrap_or_default();
        let mut out = Vec::with_capacity(objects.len());
        for (i, mut object) in objects.into_iter().enumerate() {
            let restored = match slots.get(i) {
                Some(slot) => annotations::restore(&mut object, &slot.removed),
                None => annotations::restore(&mut object, &annotations::location(path, i)),
            };
            restored.map_err(|e| {
                results::in_file(
                    results::error(format!("cannot annotate the edited {path}: {e}")),
                    path,
                    i,
                )
            })?;
            out.push(object);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource_list;

    const RL: &str = "kind: ResourceList\nitems:\n- apiVersion: v1\n  kind: B\n  metadata:\n    name: b\n    annotations:\n      internal.config.kubernetes.io/path: 'r.yaml'\n      internal.config.kubernetes.io/index: '1'\n- apiVersion: v1\n  kind: A\n  metadata:\n    name: a\n    annotations:\n      x: y\n      internal.config.kubernetes.io/path: 'r.yaml'\n      internal.config.kubernetes.io/index: '0'\n- apiVersion: kpt.dev/v1\n  kind: Kptfile\n  metadata:\n    name: k\n";

    #[test]
    fn files_are_rebuilt_in_index_order_without_kpt_annotations() {
        let input = resource_list::read(RL).unwrap();
        let pkg = Package::from_items(&input.items, &[0, 1, 2]).unwrap();
        assert_eq!(
            pkg.files["r.yaml"],
            "apiVersion: v1\nkind: A\nmetadata:\n  name: a\n  annotations:\n    x: y\n---\napiVersion: v1\nkind: B\nmetadata:\n  name: b\n"
        );
        assert_eq!(
            pkg.files["Kptfile"],
            "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: k\n"
        );
        assert_eq!(pkg.first_item("r.yaml"), Some(0));
        assert_eq!(pkg.file_of(1), Some("r.yaml"));
        let items = pkg.items_of("r.yaml", &pkg.files["r.yaml"]).unwrap();
        assert_eq!(
            yaml::to_string(&items[0]).unwrap(),
            yaml::to_string(&input.items[1]).unwrap()
        );
        assert_eq!(
            yaml::to_string(&items[1]).unwrap(),
            yaml::to_string(&input.items[0]).unwrap()
        );
    }

    #[test]
    fn duplicate_positions_are_an_error() {
        let rl = RL.replace("index: '1'", "index: '0'");
        let input = resource_list::read(&rl).unwrap();
        let errs = Package::from_items(&input.items, &[0, 1, 2]).unwrap_err();
        assert_eq!(errs.len(), 1);
        assert!(
            errs[0].message.contains("are both object 0 of file r.yaml"),
            "{}",
            errs[0].message
        );
    }
}
