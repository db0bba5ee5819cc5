//! The three-way resource merge of an upgrade, after kpt's `resource-merge`
//! strategy (kyaml's `merge3`): `base` is the old upstream, `theirs` the new
//! upstream, `ours` the local package.
//!
//! # Rules
//!
//! Resources (every object of the package's KRM files — `*.yaml`, `*.yml`,
//! `*.json`, `Kptfile`) are matched by **API group, kind, namespace and
//! name** (the version is ignored, as kyaml's GVKNN matcher does, so an
//! upstream that moves `v1beta1` → `v1` still matches); the Kptfile, whose
//! name a clone changes, is matched by kind alone. Per resource:
//!
//! | base | theirs | ours | result |
//! |---|---|---|---|
//! | – | yes | – | added upstream: taken (in theirs' file) |
//! | yes | any | – | deleted locally: stays deleted |
//! | yes | – | yes | deleted upstream: deleted (also when edited locally, as kpt) |
//! | – | – | yes | added locally: kept |
//! | any | yes | yes | fields merged (below) |
//!
//! Fields merge recursively; at each field, with `b`, `t`, `o` its value in
//! base, theirs and ours (absent counts as a value):
//! * `t == b` (upstream did not change it): ours;
//! * `o == b` (we did not change it): theirs — an upstream removal is
//!   applied; our comments are kept where the structure allows;
//! * `o == t`: that value;
//! * both changed: maps merge key by key; lists of maps that all carry one
//!   of kyaml's associative keys (`mountPath`, `devicePath`, `ip`, `type`,
//!   `topologyKey`, `name`, `containerPort`, first match wins) merge element
//!   by element, matched by that key (our order, new upstream elements
//!   appended); a field or element we removed comes back only with
//!   upstream's new value; anything else (scalars, other lists) is a
//!   **conflict: ours wins** (kpt's rule: local edits are kept), reported in
//!   [`MergeOutcome::conflicts`].
//!
//! Files that are not KRM or do not parse are merged whole by the same
//! three-way rule on their text. A file none of whose resources changed is
//! kept byte for byte; a changed file is written as kyaml writes it; a file
//! whose resources were all deleted is removed. Comparison ignores
//! formatting and comments.

use std::collections::{BTreeMap, BTreeSet};

use super::{Files, MergeError};
use crate::krm::objects::{emit_objects, is_krm_file, parse_objects};
use crate::yaml::{deep_copy_formatting, Kind, Node};

/// kyaml's associative-list keys, in its order of preference.
pub const ASSOCIATIVE_KEYS: [&str; 7] = [
    "mountPath",
    "devicePath",
    "ip",
    "type",
    "topologyKey",
    "name",
    "containerPort",
];

/// A place where both sides changed the same value differently; ours was
/// kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeConflict {
    /// The file (ours).
    pub file: String,
    /// `kind/name` of the resource, empty for a whole file.
    pub resource: String,
    /// Dotted field path (`spec.replicas`, `spec.containers[name=app].image`).
    pub path: String,
}

/// The merged package.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MergeOutcome {
    /// Every file of the merged package.
    pub files: Files,
    /// Where ours was kept over a different upstream change.
    pub conflicts: Vec<MergeConflict>,
    /// Files that differ from ours (added, removed or changed), in order.
    pub changed_files: Vec<String>,
}

/// Identity of a resource: group, kind, namespace, name (+ occurrence).
type ResId = (String, String, String, String, usize);

struct Resource {
    file: String,
    node: Node,
}

/// The resources of one side, and its opaque files.
struct Side {
    resources: BTreeMap<ResId, Resource>,
    /// Per KRM file, its resource ids in order.
    layout: BTreeMap<String, Vec<ResId>>,
    opaque: BTreeMap<String, String>,
}

fn group_of(api_version: &str) -> &str {
    match api_version.rfind('/') {
        Some(i) => &api_version[..i],
        None => "",
    }
}

fn read_side(files: &Files, krm: &BTreeSet<String>) -> Side {
    let mut side = Side {
        resources: BTreeMap::new(),
        layout: BTreeMap::new(),
        opaque: BTreeMap::new(),
    };
    for (path, text) in files {
        if !krm.contains(path) {
            side.opaque.insert(path.clone(), text.clone());
            continue;
        }
        let objects = parse_objects(text).unwrap_or_default();
        let mut ids = Vec::with_capacity(objects.len());
        for node in objects {
            let group = group_of(node.api_version()).to_string();
            let kind = node.object_kind().to_string();
            // A package has one Kptfile, renamed on clone: matched by kind.
            let name = if kind == "Kptfile" && group == "kpt.dev" {
                String::new()
            } else {
                node.name().to_string()
            };
            let base = (group, kind, node.namespace().to_string(), name);
            let mut n = 0;
            let id = loop {
                let id = (
                    base.0.clone(),
                    base.1.clone(),
                    base.2.clone(),
                    base.3.clone(),
                    n,
                );
                if !side.resources.contains_key(&id) {
                    break id;
                }
                n += 1;
            };
            ids.push(id.clone());
            side.resources.insert(
                id,
                Resource {
                    file: path.clone(),
                    node,
                },
            );
        }
        side.layout.insert(path.clone(), ids);
    }
    side
}

/// Whether two nodes hold the same data (formatting and comments ignored).
pub fn same_value(a: &Node, b: &Node) -> bool {
    let (a, b) = (a.root(), b.root());
    match (a.kind, b.kind) {
        (Kind::Scalar, Kind::Scalar) => scalar_tag(a) == scalar_tag(b) && a.value == b.value,
        (Kind::Alias, Kind::Alias) => a.value == b.value,
        (Kind::Mapping, Kind::Mapping) => {
            a.content.len() == b.content.len()
                && a.pairs().all(|(k, v)| {
                    b.pairs()
                        .find(|(bk, _)| bk.value == k.value)
                        .is_some_and(|(_, bv)| same_value(v, bv))
                })
        }
        (Kind::Sequence, Kind::Sequence) => {
            a.content.len() == b.content.len()
                && a.content
                    .iter()
                    .zip(&b.content)
                    .all(|(x, y)| same_value(x, y))
        }
        _ => false,
    }
}

fn scalar_tag(n: &Node) -> &str {
    if n.tag.is_empty() {
        "!!str"
    } else {
        &n.tag
    }
}

fn opt_same(a: Option<&Node>, b: Option<&Node>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => same_value(a, b),
        _ => false,
    }
}

struct Ctx<'a> {
    file: &'a str,
    resource: String,
    conflicts: &'a mut Vec<MergeConflict>,
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Merges one value (see the module rules).
fn merge_value(
    o: Option<&Node>,
    t: Option<&Node>,
    b: Option<&Node>,
    path: &str,
    ctx: &mut Ctx<'_>,
) -> Option<Node> {
    if opt_same(t, b) {
        return o.cloned();
    }
    if opt_same(o, b) {
        return match (o, t) {
            (Some(o), Some(t)) => {
                let mut taken = t.clone();
                deep_copy_formatting(o, &mut taken);
                Some(taken)
            }
            (_, t) => t.cloned(),
        };
    }
    if opt_same(o, t) {
        return o.cloned();
    }
    match (o, t) {
        (None, t) => t.cloned(),
        (Some(o), None) => Some(o.clone()),
        (Some(o), Some(t)) => {
            let b_kind = b.map(|b| b.kind);
            if o.kind == Kind::Mapping
                && t.kind == Kind::Mapping
                && b_kind.is_none_or(|k| k == Kind::Mapping)
            {
                return Some(merge_map(o, t, b, path, ctx));
            }
            if o.kind == Kind::Sequence
                && t.kind == Kind::Sequence
                && b_kind.is_none_or(|k| k == Kind::Sequence)
            {
                if let Some(key) = associative_key(o, t, b) {
                    return Some(merge_list(o, t, b, key, path, ctx));
                }
            }
            ctx.conflicts.push(MergeConflict {
                file: ctx.file.to_string(),
                resource: ctx.resource.clone(),
                path: path.to_string(),
            });
            Some(o.clone())
        }
    }
}

fn merge_map(o: &Node, t: &Node, b: Option<&Node>, path: &str, ctx: &mut Ctx<'_>) -> Node {
    let mut out = o.clone();
    out.content.clear();
    for pair in o.content.chunks_exact(2) {
        let (k, ov) = (&pair[0], &pair[1]);
        let key = k.value.as_str();
        let merged = merge_value(
            Some(ov),
            t.get(key),
            b.and_then(|b| b.get(key)),
            &join(path, key),
            ctx,
        );
        if let Some(v) = merged {
            out.content.push(k.clone());
            out.content.push(v);
        }
    }
    for pair in t.content.chunks_exact(2) {
        let (k, tv) = (&pair[0], &pair[1]);
        let key = k.value.as_str();
        if o.key_index(key).is_some() {
            continue;
        }
        let merged = merge_value(
            None,
            Some(tv),
            b.and_then(|b| b.get(key)),
            &join(path, key),
            ctx,
        );
        if let Some(v) = merged {
            out.content.push(k.clone());
            out.content.push(v);
        }
    }
    out
}

fn element_key<'a>(n: &'a Node, key: &str) -> Option<&'a str> {
    let v = n.get(key)?;
    (v.kind == Kind::Scalar).then_some(v.value.as_str())
}

fn associative_key(o: &Node, t: &Node, b: Option<&Node>) -> Option<&'static str> {
    let all: Vec<&Node> = o
        .content
        .iter()
        .chain(&t.content)
        .chain(b.map(|b| b.content.iter()).into_iter().flatten())
        .collect();
    if all.is_empty() || all.iter().any(|n| n.kind != Kind::Mapping) {
        return None;
    }
    ASSOCIATIVE_KEYS
        .into_iter()
        .find(|key| all.iter().all(|n| element_key(n, key).is_some()))
}

fn find_element<'a>(list: Option<&'a Node>, key: &str, value: &str) -> Option<&'a Node> {
    list?
        .content
        .iter()
        .find(|n| element_key(n, key) == Some(value))
}

fn merge_list(
    o: &Node,
    t: &Node,
    b: Option<&Node>,
    key: &str,
    path: &str,
    ctx: &mut Ctx<'_>,
) -> Node {
    let mut out = o.clone();
    out.content.clear();
    for oe in &o.content {
        let kv = element_key(oe, key).unwrap_or_default();
        let elem_path = format!("{path}[{key}={kv}]");
        let merged = merge_value(
            Some(oe),
            find_element(Some(t), key, kv),
            find_element(b, key, kv),
            &elem_path,
            ctx,
        );
        out.content.extend(merged);
    }
    for te in &t.content {
        let kv = element_key(te, key).unwrap_or_default();
        if find_element(Some(o), key, kv).is_some() {
            continue;
        }
        let elem_path = format!("{path}[{key}={kv}]");
        let merged = merge_value(None, Some(te), find_element(b, key, kv), &elem_path, ctx);
        out.content.extend(merged);
    }
    out
}

/// Merges three versions of a package (see the module documentation).
pub fn merge_packages(
    base: &Files,
    theirs: &Files,
    ours: &Files,
) -> Result<MergeOutcome, MergeError> {
    // A path is read as resources only if it parses on every side.
    let all_paths: BTreeSet<&String> = base
        .keys()
        .chain(theirs.keys())
        .chain(ours.keys())
        .collect();
    let krm: BTreeSet<String> = all_paths
        .into_iter()
        .filter(|p| is_krm_file(p))
        .filter(|p| {
            [base, theirs, ours]
                .iter()
                .filter_map(|side| side.get(*p))
                .all(|text| parse_objects(text).is_ok())
        })
        .cloned()
        .collect();
    let b = read_side(base, &krm);
    let t = read_side(theirs, &krm);
    let o = read_side(ours, &krm);
    let mut conflicts = Vec::new();
    let mut files = Files::new();

    // Opaque files: whole-text three-way merge.
    let opaque_paths: BTreeSet<&String> = b
        .opaque
        .keys()
        .chain(t.opaque.keys())
        .chain(o.opaque.keys())
        .collect();
    for path in opaque_paths {
        let (bo, to, oo) = (b.opaque.get(path), t.opaque.get(path), o.opaque.get(path));
        let result = if to == bo || oo == to {
            oo
        } else if oo == bo {
            to
        } else {
            if oo.is_some() {
                conflicts.push(MergeConflict {
                    file: path.clone(),
                    resource: String::new(),
                    path: String::new(),
                });
            }
            oo
        };
        if let Some(text) = result {
            files.insert(path.clone(), text.clone());
        }
    }

    // Resources: merge ours in place.
    let mut placed: BTreeSet<ResId> = BTreeSet::new();
    for (path, ids) in &o.layout {
        let mut changed = false;
        let mut out_nodes = Vec::with_capacity(ids.len());
        for id in ids {
            placed.insert(id.clone());
            let ours_node = &o.resources[id].node;
            let theirs_node = t.resources.get(id).map(|r| &r.node);
            let base_node = b.resources.get(id).map(|r| &r.node);
            let merged = match (base_node, theirs_node) {
                (Some(_), None) => None,
                (None, None) => Some(ours_node.clone()),
                (_, Some(tn)) => {
                    let mut ctx = Ctx {
                        file: path,
                        resource: format!("{}/{}", id.1, id.3),
                        conflicts: &mut conflicts,
                    };
                    merge_value(Some(ours_node), Some(tn), base_node, "", &mut ctx)
                }
            };
            match merged {
                Some(n) => {
                    if n != *ours_node {
                        changed = true;
                    }
                    out_nodes.push(n);
                }
                None => changed = true,
            }
        }
        // New upstream resources whose upstream file is this one.
        for (id, r) in &t.resources {
            if r.file == *path && !o.resources.contains_key(id) && !b.resources.contains_key(id) {
                placed.insert(id.clone());
                out_nodes.push(r.node.clone());
                changed = true;
            }
        }
        if !changed {
            files.insert(path.clone(), ours[path].clone());
        } else if !out_nodes.is_empty() {
            let text = emit_objects(&out_nodes).map_err(|e| MergeError::file(path, e))?;
            files.insert(path.clone(), text);
        }
    }
    // New upstream resources in files we do not have.
    let mut new_files: BTreeMap<String, Vec<Node>> = BTreeMap::new();
    for (id, r) in &t.resources {
        if placed.contains(id) || o.resources.contains_key(id) || b.resources.contains_key(id) {
            continue;
        }
        new_files
            .entry(r.file.clone())
            .or_default()
            .push(r.node.clone());
    }
    for (path, nodes) in new_files {
        let all_new = t.layout[&path]
            .iter()
            .all(|id| !b.resources.contains_key(id) && !o.resources.contains_key(id));
        let text = if all_new {
            theirs[&path].clone()
        } else {
            emit_objects(&nodes).map_err(|e| MergeError::file(&path, e))?
        };
        files.insert(path, text);
    }

    let changed_files = files
        .iter()
        .filter(|(p, text)| ours.get(*p) != Some(*text))
        .map(|(p, _)| p.clone())
        .chain(ours.keys().filter(|p| !files.contains_key(*p)).cloned())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    Ok(MergeOutcome {
        files,
        conflicts,
        changed_files,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkg(entries: &[(&str, &str)]) -> Files {
        entries
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    const DEPLOY: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  replicas: 1\n  template:\n    spec:\n      containers:\n      - name: app\n        image: app:v1\n      - name: sidecar\n        image: side:v1\n";

    #[test]
    fn untouched_package_takes_upstream() {
        let base = pkg(&[("d.yaml", DEPLOY)]);
        let theirs = pkg(&[("d.yaml", &DEPLOY.replace("app:v1", "app:v2"))]);
        let out = merge_packages(&base, &theirs, &base).unwrap();
        assert!(out.files["d.yaml"].contains("image: app:v2"));
        assert_eq!(out.changed_files, vec!["d.yaml"]);
        assert!(out.conflicts.is_empty());
    }

    #[test]
    fn local_edit_kept_and_upstream_change_taken() {
        let base = pkg(&[("d.yaml", DEPLOY)]);
        let theirs = pkg(&[("d.yaml", &DEPLOY.replace("app:v1", "app:v2"))]);
        let ours = pkg(&[(
            "d.yaml",
            &DEPLOY.replace("replicas: 1", "replicas: 5 # scaled"),
        )]);
        let out = merge_packages(&base, &theirs, &ours).unwrap();
        let d = &out.files["d.yaml"];
        assert!(d.contains("replicas: 5 # scaled"), "{d}");
        assert!(d.contains("image: app:v2"), "{d}");
        assert!(d.contains("image: side:v1"), "{d}");
    }

    #[test]
    fn conflicting_scalar_keeps_ours() {
        let base = pkg(&[("d.yaml", DEPLOY)]);
        let theirs = pkg(&[("d.yaml", &DEPLOY.replace("replicas: 1", "replicas: 2"))]);
        let ours = pkg(&[("d.yaml", &DEPLOY.replace("replicas: 1", "replicas: 3"))]);
        let out = merge_packages(&base, &theirs, &ours).unwrap();
        assert!(out.files["d.yaml"].contains("replicas: 3"));
        assert_eq!(out.conflicts.len(), 1);
        assert_eq!(out.conflicts[0].path, "spec.replicas");
        assert_eq!(out.conflicts[0].resource, "Deployment/app");
        // Nothing changed in ours: kept byte for byte.
        assert_eq!(out.files["d.yaml"], ours["d.yaml"]);
    }

    #[test]
    fn lists_of_maps_merge_by_name() {
        let base = pkg(&[("d.yaml", DEPLOY)]);
        // Upstream: bumps the sidecar and adds a container.
        let theirs_text = DEPLOY.replace("side:v1", "side:v2")
            + "      - name: metrics\n        image: metrics:v1\n";
        let theirs = pkg(&[("d.yaml", &theirs_text)]);
        // Local: changes the app image, adds its own container first.
        let ours_text = DEPLOY.replace("app:v1", "app:local").replace(
            "      containers:\n",
            "      containers:\n      - name: mine\n        image: mine:v1\n",
        );
        let ours = pkg(&[("d.yaml", &ours_text)]);
        let out = merge_packages(&base, &theirs, &ours).unwrap();
        let d = &out.files["d.yaml"];
        let order: Vec<&str> = d.lines().filter(|l| l.contains("- name:")).collect();
        assert_eq!(
            order,
            [
                "      - name: mine",
                "      - name: app",
                "      - name: sidecar",
                "      - name: metrics"
            ]
        );
        assert!(
            d.contains("app:local") && d.contains("side:v2") && d.contains("metrics:v1"),
            "{d}"
        );
        assert!(out.conflicts.is_empty());
    }

    #[test]
    fn upstream_removal_of_an_element_and_a_field() {
        let base = pkg(&[("d.yaml", DEPLOY)]);
        let theirs_text = DEPLOY
            .replace("      - name: sidecar\n        image: side:v1\n", "")
            .replace("  replicas: 1\n", "");
        let theirs = pkg(&[("d.yaml", &theirs_text)]);
        let out = merge_packages(&base, &theirs, &base).unwrap();
        let d = &out.files["d.yaml"];
        assert!(!d.contains("sidecar") && !d.contains("replicas"), "{d}");
        // A field we changed survives its upstream removal.
        let ours = pkg(&[("d.yaml", &DEPLOY.replace("replicas: 1", "replicas: 4"))]);
        let out = merge_packages(&base, &theirs, &ours).unwrap();
        assert!(out.files["d.yaml"].contains("replicas: 4"));
    }

    #[test]
    fn resources_added_deleted_and_kept() {
        let cm = |name: &str, v: &str| {
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  k: {v}\n")
        };
        let base = pkg(&[
            ("a.yaml", &cm("a", "1")),
            ("b.yaml", &cm("b", "1")),
            ("c.yaml", &cm("c", "1")),
        ]);
        let theirs = pkg(&[
            ("a.yaml", &cm("a", "1")),
            // b deleted upstream, c deleted upstream but edited locally
            ("n.yaml", &cm("n", "1")),
        ]);
        let ours = pkg(&[
            // a deleted locally
            ("b.yaml", &cm("b", "1")),
            ("c.yaml", &cm("c", "2")),
            ("mine.yaml", &cm("mine", "1")),
        ]);
        let out = merge_packages(&base, &theirs, &ours).unwrap();
        assert_eq!(
            out.files.keys().map(String::as_str).collect::<Vec<_>>(),
            ["mine.yaml", "n.yaml"]
        );
        assert_eq!(out.files["n.yaml"], cm("n", "1"));
    }

    #[test]
    fn resources_match_by_group_not_version_and_across_files() {
        let v1 = "apiVersion: example.com/v1beta1\nkind: Thing\nmetadata:\n  name: t\nspec:\n  a: 1\n  b: 1\n";
        let v2 = "apiVersion: example.com/v1\nkind: Thing\nmetadata:\n  name: t\nspec:\n  a: 2\n  b: 1\n";
        let base = pkg(&[("t.yaml", v1)]);
        let theirs = pkg(&[("t.yaml", v2)]);
        let ours = pkg(&[("moved.yaml", &v1.replace("b: 1", "b: 9"))]);
        let out = merge_packages(&base, &theirs, &ours).unwrap();
        assert_eq!(out.files.len(), 1);
        let m = &out.files["moved.yaml"];
        assert!(
            m.contains("apiVersion: example.com/v1\n") && m.contains("a: 2") && m.contains("b: 9"),
            "{m}"
        );
    }

    #[test]
    fn opaque_files_three_way() {
        let base = pkg(&[
            ("README.md", "v1"),
            ("notes.txt", "n1"),
            ("bad.yaml", "a: ["),
        ]);
        let theirs = pkg(&[
            ("README.md", "v2"),
            ("notes.txt", "n2"),
            ("bad.yaml", "a: ["),
        ]);
        let ours = pkg(&[
            ("README.md", "v1"),
            ("notes.txt", "mine"),
            ("bad.yaml", "a: ["),
        ]);
        let out = merge_packages(&base, &theirs, &ours).unwrap();
        assert_eq!(out.files["README.md"], "v2");
        assert_eq!(out.files["notes.txt"], "mine");
        assert_eq!(out.conflicts.len(), 1);
        assert_eq!(out.files["bad.yaml"], "a: [");
    }

    #[test]
    fn merge_is_deterministic_and_idempotent() {
        let base = pkg(&[("d.yaml", DEPLOY)]);
        let theirs = pkg(&[("d.yaml", &DEPLOY.replace("app:v1", "app:v2"))]);
        let ours = pkg(&[("d.yaml", &DEPLOY.replace("replicas: 1", "replicas: 5"))]);
        let once = merge_packages(&base, &theirs, &ours).unwrap();
        assert_eq!(once, merge_packages(&base, &theirs, &ours).unwrap());
        // Merging the result again with the same upstream changes nothing.
        let again = merge_packages(&theirs, &theirs, &once.files).unwrap();
        assert_eq!(again.files, once.files);
        assert!(again.changed_files.is_empty());
    }
}
