//! The Git store finds a revision's repository by the prefixes of its name
//! and lists one repository by key: repositories whose names contain dots,
//! or share a prefix, or live in other namespaces, are told apart.

use porch_variants::local::cli::publish_files;
use porch_variants::store::git::{init_bare, GitRepoConfig, GitRevisions};
use porch_variants::store::{NewRevision, PackageRevisionStore, PrFilter};
use pv_core::api::meta::OwnerReference;
use pv_core::api::PackageRevision;

const KPTFILE: &str = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: web\n";

fn open(tmp: &std::path::Path, repos: &[(&str, &str)]) -> GitRevisions {
    let configs: Vec<GitRepoConfig> = repos
        .iter()
        .map(|(ns, name)| {
            let path = tmp.join(ns).join(name);
            init_bare(&path, "main").unwrap();
            GitRepoConfig {
                name: name.to_string(),
                namespace: ns.to_string(),
                path,
                branch: "main".into(),
                directory: String::new(),
            }
        })
        .collect();
    GitRevisions::open(configs).unwrap()
}

fn owned_draft(repo: &str, package: &str, owner: &str) -> NewRevision {
    let mut pr = PackageRevision::default();
    pr.metadata.namespace = "default".into();
    pr.metadata.owner_references = vec![OwnerReference {
        api_version: "config.porch.kpt.dev/v1alpha1".into(),
        kind: "PackageVariant".into(),
        name: owner.into(),
        uid: owner.into(),
        controller: Some(true),
        block_owner_deletion: None,
    }];
    pr.spec.repository = repo.into();
    pr.spec.package_name = package.into();
    pr.spec.workspace_name = "ws".into();
    NewRevision {
        revision: pr,
        files: [("Kptfile".to_string(), KPTFILE.to_string())].into(),
        upstream_lock: None,
    }
}

fn names(prs: Vec<PackageRevision>) -> Vec<String> {
    prs.into_iter().map(|p| p.metadata.name).collect()
}

/// A list by owner visits the repositories the owner index names; a
/// revision written after the index was built is found all the same.
#[test]
fn a_list_by_owner_finds_revisions_written_before_and_after_the_index() {
    let tmp = tempfile::tempdir().unwrap();
    let store = open(
        tmp.path(),
        &[
            ("default", "edge"),
            ("default", "edge.east"),
            ("default", "edge-west"),
        ],
    );
    store.create(owned_draft("edge", "web", "uid-a")).unwrap();
    store
        .create(owned_draft("edge.east", "web", "uid-b"))
        .unwrap();
    let owned = |uid: &str| names(store.list("default", &PrFilter::owned_by(uid)).unwrap());
    assert_eq!(owned("uid-a"), ["edge.web.ws"]);
    assert_eq!(owned("uid-b"), ["edge.east.web.ws"]);
    assert!(owned("uid-c").is_empty());
    assert!(names(store.list("other", &PrFilter::owned_by("uid-a")).unwrap()).is_empty());

    store
        .create(owned_draft("edge-west", "db", "uid-a"))
        .unwrap();
    store
        .create(owned_draft("edge.east", "db", "uid-c"))
        .unwrap();
    assert_eq!(owned("uid-a"), ["edge-west.db.ws", "edge.web.ws"]);
    assert_eq!(owned("uid-c"), ["edge.east.db.ws"]);
    store.delete("default", "edge-west.db.ws").unwrap();
    assert_eq!(owned("uid-a"), ["edge.web.ws"]);
}

#[test]
fn revisions_are_found_in_their_own_repository() {
    let tmp = tempfile::tempdir().unwrap();
    let repos = [
        ("default", "edge"),
        ("default", "edge.east"),
        ("default", "edge-west"),
        ("other", "edge"),
    ];
    let store = open(tmp.path(), &repos);
    for (ns, repo) in repos {
        let files = [("Kptfile".to_string(), KPTFILE.to_string())].into();
        publish_files(&store, ns, repo, "web", "v1", files, "init").unwrap();
    }
    for (ns, repo) in repos {
        let name = format!("{repo}.web.v1");
        let pr = store.get(ns, &name).unwrap();
        assert_eq!(pr.spec.repository, repo, "{ns}/{name}");
        assert_eq!(pr.metadata.namespace, ns, "{ns}/{name}");
        let listed = store.list(ns, &PrFilter::package(repo, "web")).unwrap();
        assert_eq!(listed.len(), 1, "{ns}/{repo}: {listed:?}");
        assert_eq!(listed[0].metadata.name, name);
    }
    assert!(store.get("default", "edge.east.web.v2").is_err());
    assert!(store.get("default", "nowhere.web.v1").is_err());
    let all: Vec<String> = store
        .list("default", &PrFilter::default())
        .unwrap()
        .into_iter()
        .map(|p| p.metadata.name)
        .collect();
    assert_eq!(
        all,
        ["edge-west.web.v1", "edge.east.web.v1", "edge.web.v1"],
        "the namespace's revisions, and only those"
    );
    assert_eq!(store.list("other", &PrFilter::default()).unwrap().len(), 1);
}
