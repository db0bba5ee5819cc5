//! What the runners of the PackageRevision- and Repository-controller
//! cases (`conformance/porch-upstream-prc`) share: where the cases are,
//! reading their YAML, and comparing as Go's JSON does (null and missing
//! alike).

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

/// `tests/conformance/porch-upstream-prc`.
pub fn cases_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("conformance/porch-upstream-prc")
}

/// The case directories of `group`, in name order, each with its name
/// `group/case`; panics when the group has none (a missing group is a
/// broken snapshot, not a pass).
pub fn case_dirs(group: &str) -> Vec<(String, PathBuf)> {
    let dir = cases_dir().join(group);
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    cases.sort();
    assert!(!cases.is_empty(), "{group}: no cases");
    cases
        .into_iter()
        .map(|case| {
            let name = case.file_name().unwrap_or_default().to_string_lossy();
            (format!("{group}/{name}"), case)
        })
        .collect()
}

/// Applies a JSON merge patch (RFC 7386) to `target`.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => {
            for (k, v) in p {
                if v.is_null() {
                    t.remove(k);
                } else {
                    merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
        }
        (t, p) => *t = p.clone(),
    }
}

/// The first non-empty YAML document of a file as JSON (`Value::Null` when
/// the file is missing).
pub fn yaml(path: &Path) -> Value {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Value::Null;
    };
    let docs =
        pv_core::yaml::parse_stream(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    docs.iter()
        .map(|d| pv_core::yaml::to_json(d).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
        .find(|v| !v.is_null())
        .unwrap_or(Value::Null)
}

/// Drops nulls inside objects, at any depth.
pub fn strip(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), strip(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(strip).collect()),
        v => v.clone(),
    }
}

/// Decodes as Go does: `null` is the zero value, at any depth.
pub fn from<T: serde::de::DeserializeOwned>(v: &Value, what: &str) -> Result<T, String> {
    serde_json::from_value(if v.is_null() { json!({}) } else { strip(v) })
        .map_err(|e| format!("{what}: {e}"))
}

/// Equal once nulls are dropped.
pub fn same(got: &Value, want: &Value) -> bool {
    strip(got) == strip(want)
}

/// `Ok` when [`same`], else the difference.
pub fn expect(got: Value, want: &Value) -> Result<(), String> {
    if same(&got, want) {
        Ok(())
    } else {
        Err(format!("got {got}, want {want}"))
    }
}

/// What one runner of the cases found: the cases that pass (as upstream
/// expects, or as one of our listed deviations), those that fail, and those
/// skipped with upstream's reason. The runners print each deviation, skip
/// and failure as they meet it; the suite prints one closing line for all.
#[derive(Debug, Default)]
pub struct Tally {
    /// Cases matching upstream's expectation.
    pub passed: usize,
    /// Cases that fail upstream's expectation exactly where a listed
    /// deviation says, and pass the expectation it adjusts.
    pub deviations: usize,
    /// `case: why` of each failing case.
    pub failed: Vec<String>,
    /// `case: why` of each case upstream itself cannot run.
    pub skipped: Vec<String>,
}

impl Tally {
    /// Every case this tally counted.
    pub fn cases(&self) -> usize {
        self.passed + self.deviations + self.failed.len() + self.skipped.len()
    }

    /// Adds another runner's counts to this one.
    pub fn add(&mut self, other: Tally) {
        self.passed += other.passed;
        self.deviations += other.deviations;
        self.failed.extend(other.failed);
        self.skipped.extend(other.skipped);
    }
}
