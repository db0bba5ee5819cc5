//! The layout's one-way rules, checked on the source: which top-level
//! module of each crate may name which (`crate::<module>` in code, not in
//! comments). A new arrow against a rule fails here with the file that
//! makes it; the arrows not yet removed are listed in `KNOWN`, and one
//! that is gone must be taken off the list, so the list only shrinks.
//!
//! The core (`core-wasm/src`), bottom to top:
//! * `yaml`, then `time` and `api` (the types), then `krm` (KRM objects,
//!   CEL, what a Kptfile says): the shared layers, which name no
//!   controller and neither `render` nor `merge`;
//! * `render` and `merge`, the libraries;
//! * `replay`, the step-function driver, which names no controller;
//! * the controllers' decisions, `prc`, `repo`, `variant`, `variantset` and
//!   `approval`: each names the layers below, never another controller.
//!
//! The host (`host/src`): Kubernetes mode (`kube`) and local mode
//! (`local`) are peers, neither naming the other; the stores, the
//! reconcilers and the PackageRevision controller's driver (`store`,
//! `reconcile`, `prc`) name neither mode.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The modules each core module may name, besides itself.
fn core_allowed(module: &str) -> Option<&'static [&'static str]> {
    const BASE: &[&str] = &["yaml", "time", "api", "krm"];
    Some(match module {
        "yaml" => &[],
        "time" => &["yaml"],
        "api" => &["yaml", "time"],
        "krm" => &["yaml", "time", "api"],
        "render" | "merge" => &["yaml", "time", "api", "krm", "render", "merge"],
        "replay" => BASE,
        "prc" | "repo" | "variant" | "variantset" | "approval" => {
            &["yaml", "time", "api", "krm", "render", "merge", "replay"]
        }
        _ => return None,
    })
}

/// The host modules each listed module must not name.
fn host_forbidden(module: &str) -> &'static [&'static str] {
    match module {
        "kube" => &["local"],
        "local" => &["kube"],
        "store" | "reconcile" | "prc" | "engine_api" | "component" | "runtime" => {
            &["kube", "local"]
        }
        _ => &[],
    }
}

/// Arrows against the rules that are still there: (crate, file, module
/// named).
const KNOWN: &[(&str, &str, &str)] = &[];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("reads the source tree") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level modules a file names through `crate::`, outside comments.
fn named_modules(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let code = line.trim_start();
        if code.starts_with("//") {
            continue;
        }
        let code = code.split(" // ").next().unwrap_or(code);
        let mut rest = code;
        while let Some(i) = rest.find("crate::") {
            let after = &rest[i + "crate::".len()..];
            let name: String = after
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.insert(name);
            }
            rest = after;
        }
    }
    out
}

/// Every arrow of the crate under `src`: (file relative to the
/// repository, its top-level module, the module it names).
fn arrows(root: &Path, src: &str) -> Vec<(String, String, String)> {
    let dir = root.join(src);
    let mut files = Vec::new();
    rust_files(&dir, &mut files);
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let rel = file.strip_prefix(&dir).expect("under src");
        let first = rel.components().next().expect("a component");
        let module = first
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string();
        let text = std::fs::read_to_string(&file).expect("reads a source file");
        let shown = file
            .strip_prefix(root)
            .expect("under the repository")
            .display()
            .to_string();
        for named in named_modules(&text) {
            if named != module {
                out.push((shown.clone(), module.clone(), named));
            }
        }
    }
    out
}

#[test]
fn no_module_names_one_the_layout_puts_above_it_or_beside_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the repository");
    let mut against = BTreeSet::new();
    let mut core_arrows = 0;
    for (file, module, named) in arrows(root, "core-wasm/src") {
        let Some(allowed) = core_allowed(&module) else {
            continue;
        };
        core_arrows += 1;
        let is_core_module = core_allowed(&named).is_some();
        if is_core_module && !allowed.contains(&named.as_str()) {
            against.insert(("core-wasm", file, named));
        }
    }
    assert!(core_arrows > 50, "the core's arrows were not found");
    for (file, module, named) in arrows(root, "host/src") {
        if host_forbidden(&module).contains(&named.as_str()) {
            against.insert(("host", file, named));
        }
    }
    let known: BTreeSet<(&str, String, String)> = KNOWN
        .iter()
        .map(|(c, f, n)| (*c, f.to_string(), n.to_string()))
        .collect();
    let new: Vec<_> = against.difference(&known).collect();
    assert!(
        new.is_empty(),
        "arrows against the layout (see this test's rules): {new:#?}"
    );
    let gone: Vec<_> = known.difference(&against).collect();
    assert!(
        gone.is_empty(),
        "arrows no longer there: take them off KNOWN: {gone:#?}"
    );
}

#[test]
fn the_rules_catch_an_arrow_up_and_one_across() {
    // A file of `krm` naming a controller, and one of `variant` naming
    // another: both against the rules; comments are not code.
    let text = "use crate::api::X;\n// crate::prc in a comment\nlet y = crate::variant::f();";
    let named = named_modules(text);
    assert_eq!(
        named,
        BTreeSet::from(["api".to_string(), "variant".to_string()])
    );
    let krm = core_allowed("krm").unwrap();
    assert!(!krm.contains(&"variant"));
    let variant = core_allowed("variant").unwrap();
    assert!(!variant.contains(&"prc") && !variant.contains(&"variantset"));
    assert!(host_forbidden("kube").contains(&"local"));
}

/// The test doubles stay out of the shipped code: the host names the
/// testkit only as a dev-dependency, and no source of the binary names it.
#[test]
fn the_test_doubles_are_not_in_the_binary() {
    let host = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(host.join("Cargo.toml")).unwrap();
    let mut section = "";
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            section = line;
        } else if line.starts_with("porch-variants-testkit") {
            assert_eq!(
                section, "[dev-dependencies]",
                "the testkit is named in {section}"
            );
        }
    }
    let mut files = Vec::new();
    rust_files(&host.join("src"), &mut files);
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(
            !text.contains("pv_testkit") && !text.contains("FaultPlan"),
            "{} names the test doubles",
            file.display()
        );
    }
}
