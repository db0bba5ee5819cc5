//! The upstream conformance runner: every case folder of
//! `tests/conformance/porch-upstream/cases/<group>/<case>` is handed to
//! the adapter of its group, which runs the core on `input/` and compares
//! with `expected/` as the case's README says upstream does.

use std::path::{Path, PathBuf};

pub mod pv_decisions;
pub mod pv_mutations;
pub mod pvs;

/// Outcome of one case.
pub type CaseResult = Result<(), String>;

/// An adapter: runs one case folder.
pub type Adapter = fn(&Path) -> CaseResult;

/// Every group the runner knows, with its adapter.
pub fn adapters() -> Vec<(&'static str, Adapter)> {
    let mut groups = pv_decisions::adapters();
    groups.extend(pv_mutations::adapters());
    groups.extend(pvs::adapters());
    groups
}

/// A case whose upstream expectation pins an upstream bug we fix, with why.
pub struct Deviation {
    /// `group/case`.
    pub case: &'static str,
    /// Why our result differs (also in `tests/conformance/DEVIATIONS.md`).
    pub reason: &'static str,
}

/// Cases whose expectation we deliberately do not follow.
pub fn deviations() -> impl Iterator<Item = &'static Deviation> {
    pv_decisions::DEVIATIONS
        .iter()
        .chain(pv_mutations::DEVIATIONS)
        .chain(pvs::DEVIATIONS)
}

/// Case folders of a group, sorted.
pub fn cases(root: &Path, group: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(root.join("cases").join(group))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// Reads `dir/rel` if it exists.
pub fn read_opt(dir: &Path, rel: &str) -> Option<String> {
    std::fs::read_to_string(dir.join(rel)).ok()
}

/// Reads `dir/rel`, as an error naming the file when missing.
pub fn read_req(dir: &Path, rel: &str) -> Result<String, String> {
    std::fs::read_to_string(dir.join(rel)).map_err(|e| format!("{}: {e}", dir.join(rel).display()))
}
