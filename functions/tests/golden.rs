//! Golden tests of the kpt functions in kpt's e2e layout
//! (`functions/tests/golden/<function>/<case>/`, see functions/README.md).
//!
//! Each case runs three ways on the same input ResourceList — the native
//! binary, the kpt-ABI wasm module under the node harness (skipped, saying
//! so, without node), and the library in process — and the outputs must be
//! identical. Then kpt's part is emulated (sink the output, `git diff` as
//! kpt's e2e runner does, write `results.yaml`) and compared with
//! `.expected/`; like kpt's runner, a second run on the result must not
//! change anything more. Apply cases are also checked against
//! `pv_core::variant::mutate::apply_mutations` called directly on the
//! files, render cases against `pv_core::variantset::render`.
//!
//! `UPDATE_GOLDEN=1 cargo test -p porch-variants-functions --test golden`
//! rewrites `diff.patch` and `results.yaml` from the code's output (review
//! the diff before committing; never edit them by hand).

mod support;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use porch_variants_functions::{annotations, Function};
use pv_core::api::{PackageRevision, PackageVariant};
use pv_core::variant::mutate::{apply_mutations, PrrRef};
use pv_core::variantset::{ClusterObject, PackageVariantSet, Repository, TargetObjects};
use pv_core::yaml::{self, Node};
use serde_json::Value;

use support::*;

/// `.expected/config.yaml` (the fields this harness reads).
struct Config {
    exit_code: i32,
    exec_path: String,
    fn_config: Option<String>,
}

fn read_config(case: &Path) -> Config {
    let text = fs::read_to_string(case.join(".expected/config.yaml")).expect("config.yaml");
    let json = yaml::to_json(&yaml::parse_document(&text).expect("parses")).expect("json");
    assert_eq!(
        json["testType"],
        "eval",
        "{}: testType must be eval",
        case.display()
    );
    Config {
        exit_code: json["exitCode"].as_i64().unwrap_or(0) as i32,
        exec_path: json["execPath"].as_str().expect("execPath").to_string(),
        fn_config: json["fnConfig"].as_str().map(str::to_string),
    }
}

fn cases() -> Vec<(Function, PathBuf)> {
    let base = root().join("functions/tests/golden");
    let mut out = Vec::new();
    for f in Function::ALL {
        let dir = base.join(f.name());
        let mut names: Vec<_> = fs::read_dir(&dir)
            .expect("golden dir")
            .flatten()
            .map(|e| e.path())
            .collect();
        names.sort();
        out.extend(
            names
                .into_iter()
                .filter(|p| p.join(".expected").is_dir())
                .map(|p| (f, p)),
        );
    }
    out
}

/// The package after kpt writes `output`: non-KRM files kept, KRM files
/// replaced by the sink's.
fn after_sink(files: &BTreeMap<String, String>, output: &str) -> BTreeMap<String, String> {
    let (sunk, _) = sink(output);
    let mut out: BTreeMap<String, String> = files
        .iter()
        .filter(|(p, _)| !is_krm(p))
        .map(|(p, t)| (p.clone(), t.clone()))
        .collect();
    out.extend(sunk);
    out
}

struct Ways {
    wasm: Option<PathBuf>,
}

impl Ways {
    fn new() -> Ways {
        if !have("node") {
            eprintln!(
                "golden: node not found: SKIPPING the wasm way (native and in-process still run)"
            );
            return Ways { wasm: None };
        }
        Ways {
            wasm: Some(wasm_dir()),
        }
    }

    /// Runs `f` three ways; asserts they agree; returns (exit, stdout, stderr).
    fn run(&self, f: Function, input: &str, label: &str) -> (i32, String, String) {
        let lib = f.run(input);
        let bin = match f {
            Function::ApplyPackageVariant => env!("CARGO_BIN_EXE_apply-package-variant"),
            Function::RenderPackageVariantSet => env!("CARGO_BIN_EXE_render-package-variant-set"),
        };
        let (code, stdout, stderr) = support::run(&mut Command::new(bin), input);
        assert_eq!(
            stdout, lib.resource_list,
            "{label}: native stdout differs from the library's"
        );
        assert_eq!(code, lib.exit_code(), "{label}: native exit code");
        assert_eq!(stderr, lib.error_summary(), "{label}: native stderr");
        if let Some(dir) = &self.wasm {
            let wasm = dir.join(format!("{}.wasm", f.name()));
            let (wcode, wout, werr) =
                support::run(Command::new("node").arg(harness()).arg(&wasm), input);
            assert_eq!(wcode, 0, "{label}: node harness failed: {werr}");
            // kpt's glue prints with console.log (one newline more): the
            // ResourceList on success, processResourceListErrors otherwise.
            let want = if code == 0 { &stdout } else { &stderr };
            assert_eq!(
                &wout,
                &format!("{want}\n"),
                "{label}: wasm output differs from native"
            );
        }
        (code, stdout, stderr)
    }
}

fn compare_or_update(path: &Path, actual: &str, label: &str) {
    let update = std::env::var("UPDATE_GOLDEN").is_ok_and(|v| v == "1" || v == "true");
    let actual = actual.trim();
    if update {
        if actual.is_empty() {
            let _ = fs::remove_file(path);
        } else {
            fs::write(path, format!("{actual}\n")).expect("write expectation");
        }
        return;
    }
    let expected = fs::read_to_string(path).unwrap_or_default();
    assert_eq!(
        actual,
        expected.trim(),
        "{label}: {} differs (UPDATE_GOLDEN=1 to regenerate, then review)",
        path.display()
    );
}

/// Objects of the files whose objects are all cluster objects.
fn cluster_objects(files: &BTreeMap<String, String>) -> (Vec<String>, Vec<Node>) {
    let mut paths = Vec::new();
    let mut objects = Vec::new();
    for (path, text) in files.iter().filter(|(p, _)| is_krm(p)) {
        let docs: Vec<Node> = yaml::parse_stream(text)
            .expect("parses")
            .into_iter()
            .map(|d| d.content[0].clone())
            .collect();
        if !docs.is_empty() && docs.iter().all(annotations::is_cluster_object) {
            paths.push(path.clone());
            for mut d in docs {
                annotations::strip(&mut d, true);
                objects.push(d);
            }
        }
    }
    (paths, objects)
}

/// Apply cases: the core on the raw files gives the files kpt wrote.
fn check_apply_against_core(
    files: &BTreeMap<String, String>,
    fn_config: &str,
    after: &BTreeMap<String, String>,
    label: &str,
) {
    let pv: PackageVariant =
        serde_json::from_value(yaml::to_json(&yaml::parse_document(fn_config).unwrap()).unwrap())
            .unwrap();
    let (cluster_paths, cluster) = cluster_objects(files);
    let candidates: Vec<Value> = cluster.iter().map(|n| yaml::to_json(n).unwrap()).collect();
    let package: BTreeMap<String, String> = files
        .iter()
        .filter(|(p, _)| is_krm(p) && !cluster_paths.contains(p))
        .map(|(p, t)| (p.clone(), t.clone()))
        .collect();
    let prr = PrrRef {
        namespace: &pv.metadata.namespace,
        name: pv
            .spec
            .downstream
            .as_ref()
            .map_or("", |d| d.package.as_str()),
    };
    let outcome = apply_mutations(&pv, prr, &package, &candidates).expect("core applies");
    for (path, text) in &package {
        let want = if outcome.changed_files.contains(path) {
            &outcome.files[path]
        } else {
            text
        };
        assert_eq!(
            after.get(path),
            Some(want),
            "{label}: {path} differs from the core's"
        );
    }
}

fn typed<T: serde::de::DeserializeOwned>(n: &Node) -> T {
    serde_json::from_value(yaml::to_json(n).unwrap()).unwrap()
}

/// Render cases: the core's desired PackageVariants are those kpt wrote.
fn check_render_against_core(
    files: &BTreeMap<String, String>,
    fn_config: &str,
    after: &BTreeMap<String, String>,
    label: &str,
) {
    let mut pvs_node = yaml::parse_document(fn_config).unwrap();
    annotations::strip(pvs_node.root_mut(), false);
    let pvs: PackageVariantSet = typed(&pvs_node);
    let (_, cluster) = cluster_objects(files);
    let (mut revisions, mut repos, mut objects) = (
        Vec::<PackageRevision>::new(),
        Vec::<Repository>::new(),
        Vec::<ClusterObject>::new(),
    );
    for n in &cluster {
        match n.object_kind() {
            "PackageRevision" => revisions.push(typed(n)),
            "Repository" => repos.push(typed(n)),
            _ => objects.push(typed(n)),
        }
    }
    let children = |files: &BTreeMap<String, String>| -> Vec<PackageVariant> {
        files
            .iter()
            .filter(|(p, _)| is_krm(p))
            .flat_map(|(_, t)| yaml::parse_stream(t).unwrap())
            .map(|d| d.content[0].clone())
            .filter(|n| n.object_kind() == "PackageVariant" && !annotations::is_cluster_object(n))
            .map(|n| typed::<PackageVariant>(&n))
            .filter(|pv| {
                pv.metadata
                    .owner_references
                    .iter()
                    .any(|o| o.name == pvs.metadata.name)
            })
            .collect()
    };
    let existing = children(files);
    let outcome = pv_core::variantset::render(
        &pvs,
        &revisions,
        &repos,
        &TargetObjects::from_objects(objects),
        &existing,
    )
    .expect("core renders");
    let mut want: Vec<String> = outcome
        .package_variants
        .iter()
        .map(|p| serde_json::to_string(&p.spec).unwrap())
        .collect();
    let mut got: Vec<String> = children(after)
        .iter()
        .map(|p| serde_json::to_string(&p.spec).unwrap())
        .collect();
    want.sort();
    got.sort();
    assert_eq!(
        got, want,
        "{label}: generated PackageVariants differ from the core's"
    );
}

#[test]
fn golden_cases_agree_three_ways_and_match_expectations() {
    let ways = Ways::new();
    let git = have("git");
    if !git {
        eprintln!("golden: git not found: SKIPPING the diff.patch comparisons");
    }
    let all = cases();
    assert!(
        all.len() >= 15,
        "expected at least 15 golden cases, found {}",
        all.len()
    );
    let scratch = std::env::temp_dir().join(format!("pv-golden-{}", std::process::id()));
    let mut report = Vec::new();
    for (f, case) in &all {
        let label = format!(
            "{}/{}",
            f.name(),
            case.file_name().unwrap().to_string_lossy()
        );
        let cfg = read_config(case);
        let files = package_files(case);
        let fn_config = cfg
            .fn_config
            .as_ref()
            .map(|p| fs::read_to_string(case.join(".expected").join(p)).expect("fnConfig file"));
        let raw = case.join(".expected/input.yaml");
        let input = if raw.exists() {
            fs::read_to_string(&raw).unwrap()
        } else {
            source(&files, fn_config.as_deref())
        };
        if let Some(dir) = std::env::var_os("PV_GOLDEN_DUMP_INPUTS") {
            // The fuzz targets' seed corpus (fuzz/seeds/resource_list).
            let file = Path::new(&dir).join(format!("{}.yaml", label.replace('/', "--")));
            fs::write(&file, &input).expect("writing the input");
        }
        let (code, stdout, stderr) = ways.run(*f, &input, &label);
        assert_eq!(code, cfg.exit_code, "{label}: exit code (stderr: {stderr})");
        let results = results_file(&cfg.exec_path, code, &stderr, &results_of(&stdout));
        compare_or_update(&case.join(".expected/results.yaml"), &results, &label);
        if code == 0 && git {
            let dir = scratch.join(&label);
            let first = git_package(&dir, &files);
            let after = after_sink(&files, &stdout);
            write_files(&dir, &after);
            let diff = git_diff(&dir, &first);
            compare_or_update(&case.join(".expected/diff.patch"), &diff, &label);
            // kpt's runner evaluates twice: the second run (against the same
            // cluster, whose stand-ins the first run removed from the
            // package) changes nothing.
            let mut second = after.clone();
            for p in cluster_objects(&files).0 {
                second.insert(p.clone(), files[&p].clone());
            }
            let again_input = source(&second, fn_config.as_deref());
            let (code2, stdout2, _) = ways.run(*f, &again_input, &format!("{label} (second run)"));
            assert_eq!(code2, 0, "{label}: second run failed");
            let again = after_sink(&second, &stdout2);
            assert_eq!(again, after, "{label}: a second run changed the package");
            if let Some(cfg_text) = &fn_config {
                match f {
                    Function::ApplyPackageVariant => {
                        check_apply_against_core(&files, cfg_text, &after, &label)
                    }
                    Function::RenderPackageVariantSet => {
                        check_render_against_core(&files, cfg_text, &after, &label)
                    }
                }
            }
        }
        report.push(format!(
            "{label}: exit {code}, native = in-process{}",
            if ways.wasm.is_some() { " = wasm" } else { "" }
        ));
    }
    let _ = fs::remove_dir_all(&scratch);
    eprintln!("{}", report.join("\n"));
}
