//! The lock a writing command holds on a local directory.
//!
//! Two `porch-variants` processes on one directory would race on the same
//! refs. Each command that opens the repositories first takes an exclusive
//! advisory lock on `<dir>/.porch-variants/lock` (released by the kernel
//! when the process exits, even by SIGKILL); a second process waits for it
//! and says so. While the lock is held, no other `porch-variants` process
//! writes to the directory's repositories, so a Git lock file found in them
//! (`refs/…/x.lock`, `packed-refs.lock`) was left by a process that was
//! killed mid-write, and is removed.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};

use crate::store::StoreError;

/// Where the lock file lives under a local directory.
pub const LOCK_FILE: &str = ".porch-variants/lock";

/// An exclusive lock on a local directory, held until dropped.
#[derive(Debug)]
pub struct DirLock {
    _file: File,
    path: PathBuf,
}

impl DirLock {
    /// Takes the lock on `dir`, waiting (and saying so on the log) while
    /// another process holds it.
    pub fn acquire(dir: &Path) -> Result<DirLock, StoreError> {
        let path = dir.join(LOCK_FILE);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(StoreError::io(format!("creating {}", parent.display())))?;
        }
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .map_err(StoreError::io(format!(
                "opening the lock {}",
                path.display()
            )))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                tracing::warn!(
                    lock = %path.display(),
                    "another porch-variants process is working on this directory; waiting for it to finish"
                );
                file.lock().map_err(StoreError::io(format!(
                    "waiting for the lock {}",
                    path.display()
                )))?;
            }
            Err(TryLockError::Error(e)) => {
                return Err(StoreError::io(format!("locking {}", path.display()))(e));
            }
        }
        Ok(DirLock { _file: file, path })
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Removes the Git lock files a killed process left in the bare repository
/// at `repo` (under `refs/`, and `packed-refs.lock`, `HEAD.lock`,
/// `config.lock`); returns what it removed. Call only while holding the
/// directory's [`DirLock`].
pub fn remove_stale_git_locks(repo: &Path) -> Result<Vec<PathBuf>, StoreError> {
    let mut removed = Vec::new();
    for top in ["packed-refs.lock", "HEAD.lock", "config.lock"] {
        let p = repo.join(top);
        if p.is_file() {
            remove(&p, &mut removed)?;
        }
    }
    fn walk(d: &Path, removed: &mut Vec<PathBuf>) -> Result<(), StoreError> {
        let Ok(entries) = std::fs::read_dir(d) else {
            return Ok(());
        };
        for e in entries.filter_map(Result::ok) {
            let p = e.path();
            let Ok(kind) = e.file_type() else { continue };
            if kind.is_dir() {
                walk(&p, removed)?;
            } else if kind.is_file() && p.extension().is_some_and(|x| x == "lock") {
                remove(&p, removed)?;
            }
        }
        Ok(())
    }
    walk(&repo.join("refs"), &mut removed)?;
    Ok(removed)
}

fn remove(p: &Path, removed: &mut Vec<PathBuf>) -> Result<(), StoreError> {
    tracing::info!(file = %p.display(), "removing a Git lock file left by an interrupted write");
    std::fs::remove_file(p).map_err(StoreError::io(format!("removing {}", p.display())))?;
    removed.push(p.to_path_buf());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_waits_until_the_first_drops_the_lock() {
        let dir = tempfile::tempdir().unwrap();
        let first = DirLock::acquire(dir.path()).unwrap();
        let path = dir.path().to_path_buf();
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = std::thread::spawn(move || {
            let second = DirLock::acquire(&path).unwrap();
            tx.send(()).unwrap();
            drop(second);
        });
        assert!(
            rx.recv_timeout(std::time::Duration::from_millis(200))
                .is_err(),
            "the second lock was granted while the first was held"
        );
        drop(first);
        rx.recv_timeout(std::time::Duration::from_secs(10))
            .expect("the second lock is granted once the first is dropped");
        waiter.join().unwrap();
    }

    #[test]
    fn lock_files_under_refs_are_removed_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path();
        std::fs::create_dir_all(repo.join("refs/heads/drafts/web")).unwrap();
        std::fs::write(repo.join("refs/heads/drafts/web/ws.lock"), "").unwrap();
        std::fs::write(repo.join("refs/heads/drafts/web/ws"), "x").unwrap();
        std::fs::write(repo.join("packed-refs.lock"), "").unwrap();
        std::fs::write(repo.join("packed-refs"), "").unwrap();
        let removed = remove_stale_git_locks(repo).unwrap();
        assert_eq!(removed.len(), 2, "{removed:?}");
        assert!(repo.join("refs/heads/drafts/web/ws").exists());
        assert!(repo.join("packed-refs").exists());
        assert!(!repo.join("packed-refs.lock").exists());
    }
}
