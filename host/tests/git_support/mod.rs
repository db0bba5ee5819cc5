//! The Git store over test repositories: namespace `default`, branch
//! `main`, one bare repository per name under a root.

#![allow(dead_code)]

use std::path::Path;

use porch_variants::store::git::{GitRepoConfig, GitRevisions};

/// The store over `root/<name>` for each of `names`.
pub fn open_repos<'a>(root: &Path, names: impl IntoIterator<Item = &'a str>) -> GitRevisions {
    GitRevisions::open(
        names
            .into_iter()
            .map(|r| GitRepoConfig {
                name: r.to_string(),
                namespace: "default".into(),
                path: root.join(r),
                branch: "main".into(),
                directory: String::new(),
            })
            .collect(),
    )
    .expect("the repositories open")
}
