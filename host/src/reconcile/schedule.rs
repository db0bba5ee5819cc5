//! Which PackageVariants of a pass may be reconciled at the same time.
//!
//! A variant's reconcile reads its upstream package's, its downstream
//! package's and its own revisions, and writes only in its downstream
//! repository (drafts, owner references) and its own status. Two variants
//! whose reconciles touch no common repository give the same result in
//! either order, or at once; two that do (a shared downstream repository,
//! or one's upstream in the other's downstream repository) are kept in one
//! group, reconciled one after the other in the pass's order, so that a run
//! writes the same whatever the number of workers.
//!
//! A variant may also own revisions outside its downstream package (its
//! downstream was changed, or it is being deleted): where those are is not
//! known before its reconcile lists them, so a pass with such a variant is
//! one group.

use std::collections::BTreeMap;

use pv_core::api::PackageVariant;

use crate::store::revision_name;

/// Groups of indices into `pvs`, each in ascending order, the groups in the
/// order of their first variant: variants of different groups touch no
/// common repository.
pub fn independent_groups(pvs: &[PackageVariant]) -> Vec<Vec<usize>> {
    if pvs.iter().any(may_own_elsewhere) {
        return vec![(0..pvs.len()).collect()];
    }
    let repo = |ns: &str, repo: &str| (ns.to_string(), repo.to_string());
    let written: BTreeMap<(String, String), ()> = pvs
        .iter()
        .filter_map(|pv| {
            let down = pv.spec.downstream.as_ref()?;
            Some((repo(&pv.metadata.namespace, &down.repo), ()))
        })
        .collect();
    // Union-find over the variants and the repositories they touch: the
    // variants are 0..n, repositories n.. in the order they are met.
    let mut ids: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut parent: Vec<usize> = (0..pvs.len()).collect();
    for (i, pv) in pvs.iter().enumerate() {
        let ns = pv.metadata.namespace.as_str();
        let mut touched = Vec::new();
        if let Some(down) = &pv.spec.downstream {
            touched.push(repo(ns, &down.repo));
        }
        if let Some(up) = &pv.spec.upstream {
            let key = repo(ns, &up.repo);
            if written.contains_key(&key) {
                touched.push(key);
            }
        }
        for key in touched {
            let id = *ids.entry(key).or_insert_with(|| {
                parent.push(parent.len());
                parent.len() - 1
            });
            union(&mut parent, i, id);
        }
    }
    let mut groups: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for i in 0..pvs.len() {
        let root = find(&mut parent, i);
        groups.entry(root).or_default().push(i);
    }
    let mut groups: Vec<Vec<usize>> = groups.into_values().collect();
    groups.sort_by_key(|g| g[0]);
    groups
}

/// Whether `pv` may own revisions outside its downstream package: it is
/// being deleted, has no downstream, or its status names a revision of
/// another package.
fn may_own_elsewhere(pv: &PackageVariant) -> bool {
    if pv.metadata.deletion_timestamp.is_some() {
        return true;
    }
    let Some(down) = &pv.spec.downstream else {
        return true;
    };
    let prefix = revision_name(&down.repo, &down.package, "");
    pv.status
        .downstream_targets
        .iter()
        .any(|t| !t.name.starts_with(&prefix))
}

fn find(parent: &mut [usize], mut i: usize) -> usize {
    while parent[i] != i {
        parent[i] = parent[parent[i]];
        i = parent[i];
    }
    i
}

fn union(parent: &mut [usize], a: usize, b: usize) {
    let (ra, rb) = (find(parent, a), find(parent, b));
    if ra != rb {
        // The smaller root stays: a variant's index, never a repository's.
        let (keep, other) = if ra < rb { (ra, rb) } else { (rb, ra) };
        parent[other] = keep;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pv(name: &str, up: &str, down: &str, targets: &[&str]) -> PackageVariant {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "ns", "uid": format!("u-{name}")},
            "spec": {
                "upstream": {"repo": up, "package": "web", "revision": 1},
                "downstream": {"repo": down, "package": "web"},
            },
            "status": {"downstreamTargets": targets.iter().map(|t| json!({"name": t})).collect::<Vec<_>>()},
        }))
        .unwrap()
    }

    #[test]
    fn variants_on_their_own_repositories_are_independent() {
        let pvs = [
            pv(
                "a",
                "blueprints",
                "edge-1",
                &["edge-1.web.packagevariant-1"],
            ),
            pv("b", "blueprints", "edge-2", &[]),
            pv("c", "blueprints", "edge-3", &[]),
        ];
        assert_eq!(independent_groups(&pvs), vec![vec![0], vec![1], vec![2]]);
    }

    #[test]
    fn a_shared_downstream_or_a_chain_keeps_variants_in_order() {
        let pvs = [
            pv("a", "blueprints", "edge-1", &[]),
            pv("b", "blueprints", "edge-2", &[]),
            pv("c", "blueprints", "edge-1", &[]),
            // Its upstream is b's downstream repository.
            pv("d", "edge-2", "edge-4", &[]),
            pv("e", "blueprints", "edge-5", &[]),
        ];
        assert_eq!(
            independent_groups(&pvs),
            vec![vec![0, 2], vec![1, 3], vec![4]]
        );
    }

    #[test]
    fn a_variant_owning_revisions_elsewhere_makes_the_pass_one_group() {
        let pvs = [
            pv("a", "blueprints", "edge-1", &[]),
            pv(
                "b",
                "blueprints",
                "edge-2",
                &["edge-9.web.packagevariant-1"],
            ),
        ];
        assert_eq!(independent_groups(&pvs), vec![vec![0, 1]]);
        let mut deleting = pv("c", "blueprints", "edge-3", &[]);
        deleting.metadata.deletion_timestamp = Some("2026-01-01T00:00:00Z".into());
        assert_eq!(
            independent_groups(&[pv("a", "blueprints", "edge-1", &[]), deleting]),
            vec![vec![0, 1]]
        );
    }
}
