//! The Git store finds a revision's repository by the prefixes of its name
//! and lists one repository by key: repositories whose names contain dots,
//! or share a prefix, or live in other namespaces, are told apart.

use porch_variants::local::cli::publish_files;
use porch_variants::store::git::{init_bare, GitRepoConfig, GitRevisions};
use porch_variants::store::{PackageRevisionStore, PrFilter};

const KPTFILE: &str = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: web\n";

#[test]
fn revisions_are_found_in_their_own_repository() {
    let tmp = tempfile::tempdir().unwrap();
    let repos = [
        ("default", "edge"),
        ("default", "edge.east"),
        ("default", "edge-west"),
        ("other", "edge"),
    ];
    let configs: Vec<GitRepoConfig> = repos
        .iter()
        .map(|(ns, name)| {
            let path = tmp.path().join(ns).join(name);
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
    let store = GitRevisions::open(configs).unwrap();
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
