//! kpt's `fn render`, in memory: a package's files in, the rendered files,
//! the Kptfile's `Rendered` condition and `renderStatus`, and the results
//! out. Functions that are not builtins run through a [`FunctionRuntime`]
//! the caller provides (the host's wasm and exec runtimes); the component,
//! which has no imports, uses a [`RecordedRuntime`] and asks its host for
//! one function's output at a time.

pub mod annotations;
pub mod builtins;
mod eval;
mod executor;
mod function;
pub mod function_config;
pub mod image;
pub mod kptfile;
pub mod krmignore;
pub mod package;
pub mod result;
mod runtime;
mod select;

#[cfg(test)]
mod bfs_tests;
#[cfg(test)]
mod conditions_tests;

pub use eval::EvalSpec;
pub use executor::{
    render, render_owned, RenderFailure, RenderOptions, RenderOutput, ResultListItem, StepRecord,
};
pub use package::Files;
pub use result::FnResult;
pub use runtime::{
    BuiltinsOnly, FunctionRef, FunctionRuntime, RecordedRuntime, RunOutput, RuntimeError,
};

/// Reads a package as render would, without running a function: every
/// Kptfile decoded strictly and its pipeline validated, every resource
/// file parsed. The error names the file (`sub/Kptfile: …`,
/// `deployment.yaml: …`). A package checked here cannot fail render on
/// its own files, only on what its functions do.
pub fn check_package(files: &Files) -> Result<(), String> {
    let dirs = package::package_dirs(files);
    for dir in &dirs {
        let kptfile = package::join(dir, "Kptfile");
        let text = files.get(&kptfile).map(String::as_str).unwrap_or("");
        let info =
            kptfile::decode(text).map_err(|e| format!("{kptfile}: Kptfile is invalid: {e}"))?;
        kptfile::validate(&info, files, dir).map_err(|e| format!("{kptfile}: {e}"))?;
    }
    let mut roots: Vec<&str> = dirs.iter().map(String::as_str).collect();
    if !dirs.contains("") {
        // Files outside any Kptfile's package are read as the root's.
        roots.push("");
    }
    for dir in roots {
        for (rel, text) in package::resource_files(files, &dirs, dir) {
            if package::base_of(rel) == "Kptfile" {
                continue;
            }
            let path = package::join(dir, rel);
            package::read_file(&path, text, &package::display(dir))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod check_tests {
    use super::*;

    fn files(pairs: &[(&str, &str)]) -> Files {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    const KPTFILE: &str = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\n";

    #[test]
    fn a_package_that_reads_passes() {
        let ok = files(&[
            ("Kptfile", KPTFILE),
            (
                "cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n",
            ),
            ("sub/Kptfile", KPTFILE),
            ("README.md", "# not read: {"),
        ]);
        assert_eq!(check_package(&ok), Ok(()));
    }

    #[test]
    fn a_bad_kptfile_or_resource_is_named() {
        let bad_field = files(&[
            ("Kptfile", KPTFILE),
            (
                "sub/Kptfile",
                "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: s\npipelin: {}\n",
            ),
        ]);
        let e = check_package(&bad_field).unwrap_err();
        assert!(e.starts_with("sub/Kptfile: Kptfile is invalid: "), "{e}");
        assert!(e.contains("pipelin"), "{e}");
        let bad_path = files(&[(
            "Kptfile",
            "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\npipeline:\n  mutators:\n  - image: x\n    configPath: ../out.yaml\n",
        )]);
        let e = check_package(&bad_path).unwrap_err();
        assert!(
            e.starts_with("Kptfile: ") && e.contains("outside the package"),
            "{e}"
        );
        let bad_yaml = files(&[("Kptfile", KPTFILE), ("a/cm.yaml", "a: [\n")]);
        let e = check_package(&bad_yaml).unwrap_err();
        assert!(e.contains("a/cm.yaml"), "{e}");
    }
}
