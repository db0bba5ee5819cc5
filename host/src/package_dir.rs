//! Writing a package directory (`fn render`'s write-back, `rpkg pull`):
//! nothing is written outside the package, and a set of changes lands as
//! one.
//!
//! * **Confined.** Every path is relative, without `..`, and each of its
//!   directories is looked at without following links: a path through a
//!   symbolic link is refused, naming the file, its resources and the
//!   link, before anything is written; missing directories are created
//!   one level at a time, never through a link. A link in place of a file
//!   is replaced, not followed.
//! * **As one.** The new files are written beside their targets
//!   (`.<name>.pv-new`), listed first in a journal at the package root
//!   ([`JOURNAL`]) that says `writing`; once all are written the journal
//!   says `switching`, and the files are renamed into place and the
//!   removed ones deleted, the root `Kptfile` last (so its render status
//!   is new only once everything else is). [`recover`], run before any
//!   read or write of the package, rolls a `switching` journal forward and
//!   a `writing` one back, so a process killed anywhere leaves, for the
//!   next one, the old package or the new one.

use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The journal of a write in progress, at the package root. Its name ends
/// in no resource extension, so a render never reads it.
pub const JOURNAL: &str = ".porch-variants-write";

/// Suffix of a new file written beside its target.
const NEW_SUFFIX: &str = ".pv-new";

/// A package directory could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum PackageDirError {
    /// A path would leave the package or go through a link.
    #[error("cannot write {path:?}{resources}: {why}")]
    Refused {
        /// The file, relative to the package.
        path: String,
        /// ` (Kind/name, ...)`: the resources the file holds.
        resources: String,
        /// Why.
        why: String,
    },
    /// The file system failed.
    #[error("{context} {}: {source}", path.display())]
    Io {
        /// What was done.
        context: &'static str,
        /// Where.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The rendered files could not be taken from where they are held.
    #[error("reading the rendered files: {0}")]
    Fetch(String),
    /// The journal of an earlier write does not read.
    #[error("{}: {message} (remove it to keep the package as it is)", path.display())]
    Journal {
        /// The journal.
        path: PathBuf,
        /// Why.
        message: String,
    },
}

fn io(context: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> PackageDirError {
    let path = path.to_path_buf();
    move |source| PackageDirError::Io {
        context,
        path,
        source,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum State {
    Writing,
    Switching,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry {
    /// The file, relative to the package.
    path: String,
    /// Removed instead of written.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    delete: bool,
}

#[derive(Debug, Serialize, Deserialize)]
struct Journal {
    state: State,
    /// In the order they are switched (the root Kptfile last).
    entries: Vec<Entry>,
    /// Directories this write created (removed again on a roll back when
    /// empty), parents first.
    #[serde(default)]
    created: Vec<String>,
}

/// The new file beside `target`.
fn new_file(target: &Path) -> PathBuf {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    target.with_file_name(format!(".{name}{NEW_SUFFIX}"))
}

/// `Kind/name` of each resource of a file's text, for errors about it.
fn resources_of(text: Option<&str>) -> String {
    let Some(docs) = text.and_then(|t| pv_core::yaml::parse_stream(t).ok()) else {
        return String::new();
    };
    let names: Vec<String> = docs
        .iter()
        .filter_map(|d| pv_core::yaml::to_json(d).ok())
        .filter_map(|v| {
            let kind = v["kind"].as_str()?.to_string();
            let name = v["metadata"]["name"].as_str().unwrap_or_default();
            Some(format!("{kind}/{name}"))
        })
        .collect();
    if names.is_empty() {
        String::new()
    } else {
        format!(" ({})", names.join(", "))
    }
}

/// The directories of `rel` (its parents) that must be created, checking
/// that the existing ones are directories and not links.
fn check_path(dir: &Path, rel: &str, text: Option<&str>) -> Result<Vec<String>, PackageDirError> {
    let refuse = |why: String| PackageDirError::Refused {
        path: rel.to_string(),
        resources: resources_of(text),
        why,
    };
    let path = Path::new(rel);
    if rel.is_empty()
        || path
            .components()
            .any(|c| !matches!(c, Component::Normal(_)))
    {
        return Err(refuse(
            "a package's files are relative paths inside it, without `..`".into(),
        ));
    }
    let parts: Vec<&str> = rel.split('/').collect();
    let mut missing = Vec::new();
    let mut at = PathBuf::from(dir);
    for (i, part) in parts.iter().enumerate() {
        at.push(part);
        let last = i + 1 == parts.len();
        let prefix = parts[..=i].join("/");
        match std::fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_symlink() && !last => {
                let to = std::fs::read_link(&at)
                    .map(|t| format!(" (to {})", t.display()))
                    .unwrap_or_default();
                return Err(refuse(format!(
                    "{prefix:?} is a symbolic link{to}; a package's files are written only inside it, never through a link"
                )));
            }
            Ok(meta) if !last && !meta.is_dir() => {
                return Err(refuse(format!("{prefix:?} is not a directory")));
            }
            Ok(meta) if last && meta.is_dir() => {
                return Err(refuse(format!("{prefix:?} is a directory")));
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if !last {
                    missing.push(prefix);
                }
            }
            Err(e) => return Err(io("reading", &at)(e)),
        }
    }
    Ok(missing)
}

/// Finishes or undoes what a killed write left in `dir`: a journal that
/// says `switching` is rolled forward, one that says `writing` back.
pub fn recover(dir: &Path) -> Result<(), PackageDirError> {
    let path = dir.join(JOURNAL);
    let text = match std::fs::read(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io("reading", &path)(e)),
    };
    let journal: Journal = serde_json::from_slice(&text).map_err(|e| PackageDirError::Journal {
        path: path.clone(),
        message: e.to_string(),
    })?;
    // Entries were checked before the journal was written; they are
    // checked again, as the directory may have changed since.
    for e in &journal.entries {
        check_path(dir, &e.path, None)?;
    }
    match journal.state {
        State::Switching => {
            tracing::info!(package = %dir.display(), "finishing an interrupted write");
            switch(dir, &journal.entries)?;
        }
        State::Writing => {
            tracing::info!(package = %dir.display(), "undoing an interrupted write");
            for e in journal.entries.iter().filter(|e| !e.delete) {
                let new = new_file(&dir.join(&e.path));
                match std::fs::remove_file(&new) {
                    Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
                        return Err(io("removing", &new)(err))
                    }
                    _ => {}
                }
            }
            for d in journal.created.iter().rev() {
                // Only if empty: a directory that holds anything stays.
                let _ = std::fs::remove_dir(dir.join(d));
            }
        }
    }
    std::fs::remove_file(&path).map_err(io("removing", &path))
}

/// Renames each new file into place and removes the deleted ones, in
/// order; a new file already moved (a roll forward after a kill) is
/// skipped.
fn switch(dir: &Path, entries: &[Entry]) -> Result<(), PackageDirError> {
    for e in entries {
        let target = dir.join(&e.path);
        if e.delete {
            match std::fs::remove_file(&target) {
                Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
                    return Err(io("removing", &target)(err))
                }
                _ => {}
            }
            continue;
        }
        let new = new_file(&target);
        match std::fs::rename(&new, &target) {
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            other => other.map_err(io("writing", &target))?,
        }
    }
    Ok(())
}

fn write_journal(dir: &Path, journal: &Journal) -> Result<(), PackageDirError> {
    let path = dir.join(JOURNAL);
    let tmp = dir.join(format!("{JOURNAL}{NEW_SUFFIX}"));
    let bytes = serde_json::to_vec(journal).map_err(|e| PackageDirError::Journal {
        path: path.clone(),
        message: e.to_string(),
    })?;
    std::fs::write(&tmp, bytes).map_err(io("writing", &tmp))?;
    std::fs::rename(&tmp, &path).map_err(io("writing", &path))
}

/// Makes `dir`'s files `files` where they differ from `before`: changed
/// and new files written, files of `before` missing from `files` removed,
/// as one (see the module's description). Every path is checked before
/// anything is written; a refused one writes nothing.
pub fn write_changes(
    dir: &Path,
    before: &std::collections::BTreeMap<String, String>,
    files: &std::collections::BTreeMap<String, String>,
) -> Result<(), PackageDirError> {
    recover(dir)?;
    let entries: Vec<Entry> = files
        .iter()
        .filter(|(p, t)| before.get(*p) != Some(*t))
        .map(|(p, _)| Entry {
            path: p.clone(),
            delete: false,
        })
        .chain(
            before
                .keys()
                .filter(|p| !files.contains_key(*p))
                .map(|p| Entry {
                    path: p.clone(),
                    delete: true,
                }),
        )
        .collect();
    apply(dir, entries, &mut { files })
}

/// [`write_changes`] without the old texts in memory: `read` are the
/// files read from `dir` before (each a regular file reached without a
/// link); each of `files` is compared with the file on disk, one at a
/// time.
pub fn write_changes_on_disk(
    dir: &Path,
    read: &std::collections::BTreeSet<String>,
    files: &std::collections::BTreeMap<String, String>,
) -> Result<(), PackageDirError> {
    recover(dir)?;
    let mut entries = Vec::new();
    for (p, text) in files {
        if !read.contains(p) || !same_on_disk(&dir.join(p), text) {
            entries.push(Entry {
                path: p.clone(),
                delete: false,
            });
        }
    }
    for p in read.iter().filter(|p| !files.contains_key(*p)) {
        entries.push(Entry {
            path: p.clone(),
            delete: true,
        });
    }
    apply(dir, entries, &mut { files })
}

/// Whether the regular file at `path` holds `text` (anything else, or a
/// file that cannot be read, differs).
fn same_on_disk(path: &Path, text: &str) -> bool {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_file() && m.len() == text.len() as u64 => {
            std::fs::read(path).is_ok_and(|bytes| bytes == text.as_bytes())
        }
        _ => false,
    }
}

/// Where the texts of the files to write come from.
trait Texts {
    /// Hands each of `paths` with its text to `write`.
    fn each(
        &mut self,
        paths: &[&str],
        write: &mut dyn FnMut(&str, &str) -> Result<(), PackageDirError>,
    ) -> Result<(), PackageDirError>;
    /// The text of one file (for an error naming its resources).
    fn one(&mut self, path: &str) -> Result<Option<String>, PackageDirError>;
}

impl Texts for &std::collections::BTreeMap<String, String> {
    fn each(
        &mut self,
        paths: &[&str],
        write: &mut dyn FnMut(&str, &str) -> Result<(), PackageDirError>,
    ) -> Result<(), PackageDirError> {
        for p in paths {
            if let Some(text) = self.get(*p) {
                write(p, text)?;
            }
        }
        Ok(())
    }

    fn one(&mut self, path: &str) -> Result<Option<String>, PackageDirError> {
        Ok(self.get(path).cloned())
    }
}

/// A rendered file held elsewhere: its path, length and FNV-1a hash
/// (`pv_core::render::package::content_hash`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldFile {
    /// The file, relative to the package.
    pub path: String,
    /// Its length in bytes.
    pub size: u64,
    /// The hash of its bytes.
    pub hash: u64,
}

/// Takes held files' texts by path.
pub type Fetch<'a> = &'a mut dyn FnMut(Vec<String>) -> Result<Vec<(String, String)>, String>;

/// Texts fetched a batch of [`FETCH_BATCH_BYTES`] at a time.
struct Fetched<'a, 'b> {
    sizes: std::collections::BTreeMap<&'a str, u64>,
    fetch: Fetch<'b>,
}

/// Bytes of held files fetched at once.
const FETCH_BATCH_BYTES: u64 = 4 << 20;

impl Fetched<'_, '_> {
    fn fetch(&mut self, paths: Vec<String>) -> Result<Vec<(String, String)>, PackageDirError> {
        (self.fetch)(paths).map_err(PackageDirError::Fetch)
    }
}

impl Texts for Fetched<'_, '_> {
    fn each(
        &mut self,
        paths: &[&str],
        write: &mut dyn FnMut(&str, &str) -> Result<(), PackageDirError>,
    ) -> Result<(), PackageDirError> {
        let mut batch = Vec::new();
        let mut bytes = 0;
        for (i, p) in paths.iter().enumerate() {
            bytes += self.sizes.get(p).copied().unwrap_or(0);
            batch.push((*p).to_string());
            if bytes >= FETCH_BATCH_BYTES || i + 1 == paths.len() {
                let asked = std::mem::take(&mut batch);
                let got = self.fetch(asked.clone())?;
                if let Some(missing) = asked.iter().find(|p| !got.iter().any(|(g, _)| g == *p)) {
                    return Err(PackageDirError::Fetch(format!("{missing} was not given")));
                }
                for (path, text) in got {
                    write(&path, &text)?;
                }
                bytes = 0;
            }
        }
        Ok(())
    }

    fn one(&mut self, path: &str) -> Result<Option<String>, PackageDirError> {
        Ok(self
            .fetch(vec![path.to_string()])?
            .into_iter()
            .next()
            .map(|(_, t)| t))
    }
}

/// [`write_changes_on_disk`] for rendered files held elsewhere (in the
/// component's instance): each is compared with the disk by length and
/// hash, and only the changed ones are fetched, a batch at a time, each
/// batch written beside the old files and dropped.
pub fn write_changes_held(
    dir: &Path,
    read: &std::collections::BTreeSet<String>,
    held: &[HeldFile],
    fetch: Fetch<'_>,
) -> Result<(), PackageDirError> {
    recover(dir)?;
    let held_paths: std::collections::BTreeSet<&str> =
        held.iter().map(|h| h.path.as_str()).collect();
    let mut entries = Vec::new();
    let mut sizes = std::collections::BTreeMap::new();
    for h in held {
        if !read.contains(&h.path) || !same_hash_on_disk(&dir.join(&h.path), h.size, h.hash) {
            entries.push(Entry {
                path: h.path.clone(),
                delete: false,
            });
            sizes.insert(h.path.as_str(), h.size);
        }
    }
    for p in read.iter().filter(|p| !held_paths.contains(p.as_str())) {
        entries.push(Entry {
            path: p.clone(),
            delete: true,
        });
    }
    apply(dir, entries, &mut Fetched { sizes, fetch })
}

/// Whether the regular file at `path` has `size` bytes hashing to `hash`.
fn same_hash_on_disk(path: &Path, size: u64, hash: u64) -> bool {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_file() && m.len() == size => std::fs::read(path)
            .is_ok_and(|bytes| pv_core::render::package::content_hash(&bytes) == hash),
        _ => false,
    }
}

/// Writes `entries` (paths of files whose texts `texts` has, or
/// deletions) as one.
fn apply(
    dir: &Path,
    mut entries: Vec<Entry>,
    texts: &mut dyn Texts,
) -> Result<(), PackageDirError> {
    if entries.is_empty() {
        return Ok(());
    }
    // The root Kptfile (its render status) last.
    entries.sort_by_key(|e| e.path == "Kptfile");
    let mut created: Vec<String> = Vec::new();
    for e in &entries {
        let dirs = match check_path(dir, &e.path, None) {
            Err(PackageDirError::Refused { .. }) if !e.delete => {
                // Again with the text, for the resources the error names.
                let text = texts.one(&e.path)?;
                check_path(dir, &e.path, text.as_deref())?
            }
            other => other?,
        };
        for d in dirs {
            if !e.delete && !created.contains(&d) {
                created.push(d);
            }
        }
    }
    let mut journal = Journal {
        state: State::Writing,
        entries,
        created,
    };
    write_journal(dir, &journal)?;
    for d in &journal.created {
        let p = dir.join(d);
        match std::fs::create_dir(&p) {
            Err(err) if err.kind() != std::io::ErrorKind::AlreadyExists => {
                return Err(io("creating", &p)(err))
            }
            _ => {}
        }
        // Made here, or by someone else meanwhile: a directory, not a link.
        check_path(dir, &format!("{d}/x"), None)?;
    }
    let writes: Vec<&str> = journal
        .entries
        .iter()
        .filter(|e| !e.delete)
        .map(|e| e.path.as_str())
        .collect();
    texts.each(&writes, &mut |path, text| {
        let new = new_file(&dir.join(path));
        std::fs::write(&new, text).map_err(io("writing", &new))
    })?;
    journal.state = State::Switching;
    write_journal(dir, &journal)?;
    switch(dir, &journal.entries)?;
    let path = dir.join(JOURNAL);
    std::fs::remove_file(&path).map_err(io("removing", &path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn files(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect()
    }

    #[test]
    fn held_files_are_fetched_only_when_they_changed() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        std::fs::write(dir.join("Kptfile"), "old kptfile").unwrap();
        std::fs::write(dir.join("same.yaml"), "same").unwrap();
        std::fs::write(dir.join("gone.yaml"), "gone").unwrap();
        let read = ["Kptfile", "same.yaml", "gone.yaml"]
            .iter()
            .map(|p| p.to_string())
            .collect();
        let after = files(&[
            ("Kptfile", "new kptfile"),
            ("same.yaml", "same"),
            ("sub/new.yaml", "new"),
        ]);
        let held: Vec<HeldFile> = after
            .iter()
            .map(|(p, t)| HeldFile {
                path: p.clone(),
                size: t.len() as u64,
                hash: pv_core::render::package::content_hash(t.as_bytes()),
            })
            .collect();
        let mut asked = Vec::new();
        let mut fetch = |paths: Vec<String>| {
            asked.extend(paths.iter().cloned());
            Ok(paths
                .into_iter()
                .map(|p| {
                    let t = after[&p].clone();
                    (p, t)
                })
                .collect())
        };
        write_changes_held(dir, &read, &held, &mut fetch).unwrap();
        asked.sort();
        assert_eq!(asked, ["Kptfile", "sub/new.yaml"]);
        assert_eq!(
            std::fs::read_to_string(dir.join("Kptfile")).unwrap(),
            "new kptfile"
        );
        assert_eq!(
            std::fs::read_to_string(dir.join("sub/new.yaml")).unwrap(),
            "new"
        );
        assert!(!dir.join("gone.yaml").exists());
        assert!(!dir.join(JOURNAL).exists());
        // A file the holder does not give is an error before any switch.
        std::fs::write(dir.join("Kptfile"), "older").unwrap();
        let mut none = |_: Vec<String>| Ok(Vec::new());
        let err = write_changes_held(dir, &read, &held, &mut none).unwrap_err();
        assert!(err.to_string().contains("was not given"), "{err}");
        assert_eq!(
            std::fs::read_to_string(dir.join("Kptfile")).unwrap(),
            "older"
        );
    }

    #[test]
    fn changes_land_and_nothing_is_left_beside_them() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        std::fs::write(dir.join("a.yaml"), "old").unwrap();
        std::fs::write(dir.join("gone.yaml"), "x").unwrap();
        let before = files(&[("a.yaml", "old"), ("gone.yaml", "x")]);
        let after = files(&[
            ("a.yaml", "new"),
            ("sub/deep/b.yaml", "b"),
            ("Kptfile", "k"),
        ]);
        write_changes(dir, &before, &after).unwrap();
        assert_eq!(std::fs::read_to_string(dir.join("a.yaml")).unwrap(), "new");
        assert_eq!(
            std::fs::read_to_string(dir.join("sub/deep/b.yaml")).unwrap(),
            "b"
        );
        assert!(!dir.join("gone.yaml").exists());
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["Kptfile", "a.yaml", "sub"]);
    }

    #[cfg(unix)]
    #[test]
    fn a_path_through_a_link_is_refused_and_nothing_is_written() {
        let tmp = tempfile::tempdir().unwrap();
        let pkg = tmp.path().join("pkg");
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(pkg.join("a")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, pkg.join("a/link")).unwrap();
        let after = files(&[
            ("ok.yaml", "fine"),
            (
                "a/link/x.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n",
            ),
        ]);
        let e = write_changes(&pkg, &BTreeMap::new(), &after)
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"a/link/x.yaml\" (ConfigMap/cm)"), "{e}");
        assert!(e.contains("\"a/link\" is a symbolic link"), "{e}");
        assert!(std::fs::read_dir(&outside).unwrap().next().is_none());
        assert!(!pkg.join("ok.yaml").exists(), "nothing written");
        assert!(!pkg.join(JOURNAL).exists());
        // `..` and absolute paths too.
        for bad in ["../x.yaml", "/tmp/x.yaml", "a/../../x.yaml"] {
            let e = write_changes(&pkg, &BTreeMap::new(), &files(&[(bad, "x")]))
                .unwrap_err()
                .to_string();
            assert!(e.contains("without `..`"), "{bad}: {e}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_link_in_place_of_a_file_is_replaced_not_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let pkg = tmp.path().join("pkg");
        std::fs::create_dir_all(&pkg).unwrap();
        let target = tmp.path().join("target.yaml");
        std::fs::write(&target, "outside").unwrap();
        std::os::unix::fs::symlink(&target, pkg.join("f.yaml")).unwrap();
        write_changes(&pkg, &BTreeMap::new(), &files(&[("f.yaml", "inside")])).unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "outside");
        assert!(!std::fs::symlink_metadata(pkg.join("f.yaml"))
            .unwrap()
            .file_type()
            .is_symlink());
    }

    /// A write killed while writing is undone; one killed while switching
    /// is finished.
    #[test]
    fn an_interrupted_write_is_rolled_back_or_forward() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        std::fs::write(dir.join("a.yaml"), "old a").unwrap();
        std::fs::write(dir.join("Kptfile"), "old k").unwrap();
        let entries = vec![
            Entry {
                path: "a.yaml".into(),
                delete: false,
            },
            Entry {
                path: "new/b.yaml".into(),
                delete: false,
            },
            Entry {
                path: "Kptfile".into(),
                delete: false,
            },
        ];
        let stage = |state| {
            std::fs::create_dir_all(dir.join("new")).unwrap();
            std::fs::write(dir.join(".a.yaml.pv-new"), "new a").unwrap();
            std::fs::write(dir.join("new/.b.yaml.pv-new"), "new b").unwrap();
            write_journal(
                dir,
                &Journal {
                    state,
                    entries: entries.clone(),
                    created: vec!["new".into()],
                },
            )
            .unwrap();
        };
        stage(State::Writing);
        recover(dir).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.join("a.yaml")).unwrap(),
            "old a"
        );
        assert!(!dir.join("new").exists() && !dir.join(".a.yaml.pv-new").exists());
        assert!(!dir.join(JOURNAL).exists());
        stage(State::Switching);
        // Killed after the first rename.
        std::fs::rename(dir.join(".a.yaml.pv-new"), dir.join("a.yaml")).unwrap();
        recover(dir).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.join("a.yaml")).unwrap(),
            "new a"
        );
        assert_eq!(
            std::fs::read_to_string(dir.join("new/b.yaml")).unwrap(),
            "new b"
        );
        assert_eq!(
            std::fs::read_to_string(dir.join("Kptfile")).unwrap(),
            "old k"
        );
        assert!(!dir.join(JOURNAL).exists());
    }
}
