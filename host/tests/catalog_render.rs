//! The KRM functions catalog's own end-to-end cases for the builtins
//! (`tests/conformance/krm-functions-catalog`), run through
//! `porch-variants fn render` as kpt's test runner runs them: the case is
//! copied into a fresh Git repository, rendered with `--results-dir`, and
//! the exit code, `git diff` and `results.yaml` are compared with
//! `.expected/`.
//!
//! The expectations were produced by a kpt that did not yet write the
//! root Kptfile's status, so the Kptfile is put back as it was when it
//! differs from the original only by `status` (and the empty fields kpt's
//! re-marshalling drops); any other change to it stays in the diff.

use porch_variants_tests::copy_dir;
use std::path::{Path, PathBuf};
use std::process::Command;

use pv_core::yaml;
use serde_json::Value;

/// Cases the suite does not run, with why.
const NOT_RUN: &[(&str, &str)] = &[
    (
        "set-namespace/example-kpt-package-context",
        "runs `kpt pkg init` through exec.sh",
    ),
    ("starlark/openapi", "`ctx.open_api` is not provided"),
    (
        "starlark/preserve-id-annotations",
        "pipes `kpt fn source` through docker in exec.sh",
    ),
];

/// Cases expected to fail, with the reason (docs/render.md lists them).
const DEVIATIONS: &[(&str, &str)] = &[];

/// Cases whose expected diff moves every resource to `kind_name.yaml`
/// (the Kptfile too): the function's image at the copied commit dropped
/// kpt's path annotations, which the catalog fixed later. Here resources
/// stay in their files, so these cases are checked by content: the objects
/// of the package afterwards (parsed, wherever they live) are those the
/// expected diff leaves, and no file is added, removed or renamed.
const IN_PLACE: &[(&str, &str)] = &[(
    "ensure-name-substring/",
    "the image at efee950e dropped kpt's path annotations, moving every file",
)];

fn catalog() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/conformance/krm-functions-catalog")
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.email=t@example.com",
            "-c",
            "user.name=t",
            "-c",
            "core.autocrlf=false",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn yaml_value(text: &str) -> Value {
    let doc = yaml::parse_document(text).expect("YAML parses");
    yaml::to_json(doc.root()).expect("converts")
}

/// Drops empty maps, lists, strings and nulls (what Go's `omitempty`
/// drops when kpt re-marshals the Kptfile).
fn without_empty(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .map(|(k, v)| (k, without_empty(v)))
                .filter(|(_, v)| !is_empty(v))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.into_iter().map(without_empty).collect()),
        v => v,
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

fn normalise_patch(text: &str) -> String {
    text.lines()
        .filter(|l| !l.starts_with("index "))
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_string()
}

fn expected_exit_code(case: &Path) -> i32 {
    let Ok(text) = std::fs::read_to_string(case.join(".expected/config.yaml")) else {
        return 0;
    };
    yaml_value(&text)
        .get("exitCode")
        .and_then(Value::as_i64)
        .map_or(0, |c| c as i32)
}

/// The command kpt's runner runs for a case: `fn render PKG`, or for
/// `testType: eval`, `fn eval PKG --image IMAGE [--fn-config FILE]
/// [-- key=value…]` (`fnConfig` is relative to
/// `.expected/`).
fn command(case: &Path, work: &Path, results: &Path) -> Vec<String> {
    let config = std::fs::read_to_string(case.join(".expected/config.yaml"))
        .map(|t| yaml_value(&t))
        .unwrap_or(Value::Null);
    let work = work.to_string_lossy().into_owned();
    let results = results.to_string_lossy().into_owned();
    if config["testType"] != "eval" {
        return vec![
            "fn".into(),
            "render".into(),
            work,
            "--results-dir".into(),
            results,
        ];
    }
    let mut args = vec![
        "fn".into(),
        "eval".into(),
        work.clone(),
        "--results-dir".into(),
        results,
    ];
    if let Some(image) = config["image"].as_str() {
        args.extend(["--image".into(), image.to_string()]);
    }
    if let Some(fn_config) = config["fnConfig"].as_str() {
        let path = Path::new(&work).join(".expected").join(fn_config);
        args.extend(["--fn-config".into(), path.to_string_lossy().into_owned()]);
    }
    if let Some(kv) = config["args"].as_object() {
        args.push("--".into());
        for (k, v) in kv {
            let v = v.as_str().map_or_else(|| v.to_string(), str::to_string);
            args.push(format!("{k}={v}"));
        }
    }
    args
}

/// `kpt` as a case's `exec.sh` calls it: `kpt fn eval [flags] [-- k=v…]`
/// run as `porch-variants fn eval .` with the same flags, less
/// `--image-pull-policy` (no images are pulled here).
const KPT_SHIM: &str = r#"#!/bin/bash
if [ "$1" != fn ] || [ "$2" != eval ]; then
  echo "kpt (test shim): only 'kpt fn eval' is provided" >&2
  exit 2
fi
shift 2
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --image-pull-policy) shift 2 ;;
    --image-pull-policy=*) shift ;;
    --) break ;;
    *) args+=("$1"); shift ;;
  esac
done
exec "$PV" fn eval . "${args[@]}" --results-dir "$RESULTS" "$@"
"#;

fn make_executable(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    #[cfg(not(unix))]
    let _ = path;
}

/// Every object of the package in `dir` (its `.yaml`/`.yml` files and
/// Kptfiles, `.expected` left out), as JSON text, sorted: what the package
/// holds, whatever file each object lives in.
fn objects(dir: &Path) -> Vec<String> {
    fn walk(dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).expect("read dir") {
            let path = entry.expect("entry").path();
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            if path.is_dir() {
                if name != ".git" && name != ".expected" {
                    walk(&path, out);
                }
                continue;
            }
            if !(name == "Kptfile" || name.ends_with(".yaml") || name.ends_with(".yml")) {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("read file");
            for doc in yaml::parse_stream(&text).expect("YAML parses") {
                let value = yaml::to_json(doc.root()).expect("converts");
                if !value.is_null() {
                    out.push(value.to_string());
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, &mut out);
    out.sort();
    out
}

/// The content check of an [`IN_PLACE`] case: `work` holds the same
/// objects as the case with its expected diff applied, and the run only
/// modified files.
fn same_objects_in_place(case: &Path, work: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    let moved: Vec<String> = git(work, &["diff", "--cached", "--name-status"])
        .lines()
        .filter(|l| !l.starts_with('M'))
        .map(str::to_string)
        .collect();
    if !moved.is_empty() {
        problems.push(format!("files added, removed or renamed: {moved:?}"));
    }
    let expected = work.parent().expect("parent").join("expected-tree");
    let _ = std::fs::remove_dir_all(&expected);
    copy_dir(case, &expected);
    git(&expected, &["init", "-q"]);
    git(&expected, &["apply", ".expected/diff.patch"]);
    let (got, want) = (objects(work), objects(&expected));
    if got != want {
        problems.push(format!("objects differ:\n got: {got:#?}\nwant: {want:#?}"));
    }
    problems
}

/// Runs one case; `Err` says what differed. An `in_place` case is checked
/// by content ([`same_objects_in_place`]) instead of by its diff.
fn run_case(case: &Path, work: &Path, in_place: bool) -> Result<(), String> {
    copy_dir(case, work);
    git(work, &["init", "-q"]);
    git(work, &["add", "-A"]);
    git(work, &["commit", "-qm", "case"]);
    let results = work.parent().expect("parent").join("results");
    let _ = std::fs::remove_dir_all(&results);
    let exec_sh = work.join(".expected/exec.sh");
    let out = if exec_sh.is_file() {
        // The case's own script, with `kpt fn eval` answered by
        // porch-variants (the shim drops `--image-pull-policy`).
        let shim = work.parent().expect("parent").join("bin");
        std::fs::create_dir_all(&shim).expect("shim dir");
        std::fs::write(shim.join("kpt"), KPT_SHIM).expect("shim");
        make_executable(&shim.join("kpt"));
        let path = format!(
            "{}:{}",
            shim.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        Command::new("bash")
            .arg(&exec_sh)
            .current_dir(work)
            .env("PATH", path)
            .env("PV", env!("CARGO_BIN_EXE_porch-variants"))
            .env("RESULTS", &results)
            .output()
            .expect("bash runs")
    } else {
        Command::new(env!("CARGO_BIN_EXE_porch-variants"))
            .args(command(case, work, &results))
            .output()
            .expect("porch-variants runs")
    };
    let mut problems = Vec::new();
    let want = expected_exit_code(case);
    let got = out.status.code().unwrap_or(-1);
    if got != want {
        problems.push(format!("exit code {got}, want {want}"));
    }
    // The render status kpt's pinned version did not write (an eval
    // writes none, and a case may have no Kptfile).
    if work.join("Kptfile").is_file() {
        let original = git(work, &["show", "HEAD:Kptfile"]);
        let now = std::fs::read_to_string(work.join("Kptfile")).unwrap_or_default();
        let mut now_value = yaml_value(&now);
        if let Some(o) = now_value.as_object_mut() {
            o.remove("status");
        }
        if without_empty(now_value) == without_empty(yaml_value(&original)) {
            std::fs::write(work.join("Kptfile"), &original).expect("restore Kptfile");
        }
    }
    // New files are part of the diff (kpt's runner stages before diffing).
    git(work, &["add", "-A"]);
    let diff = normalise_patch(&git(work, &["diff", "--cached"]));
    let want_diff = std::fs::read_to_string(case.join(".expected/diff.patch")).unwrap_or_default();
    if in_place {
        problems.extend(same_objects_in_place(case, work));
    } else if diff != normalise_patch(&want_diff) {
        problems.push(format!("git diff differs:\n{diff}"));
    }
    if let Ok(want_results) = std::fs::read_to_string(case.join(".expected/results.yaml")) {
        let got_results = std::fs::read_to_string(results.join("results.yaml")).unwrap_or_default();
        if yaml_value(&got_results) != yaml_value(&want_results) {
            problems.push(format!("results.yaml differs:\n{got_results}"));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        problems.push(format!("stderr:\n{}", String::from_utf8_lossy(&out.stderr)));
        Err(problems.join("\n"))
    }
}

#[test]
fn catalog_cases_render_as_kpt_renders_them() {
    let root = catalog();
    let mut cases = Vec::new();
    for f in std::fs::read_dir(&root).expect("catalog") {
        let f = f.expect("entry").path();
        if !f.is_dir() {
            continue;
        }
        for c in std::fs::read_dir(&f).expect("function dir") {
            let c = c.expect("entry").path();
            if c.join(".expected").is_dir() {
                cases.push(c);
            }
        }
    }
    cases.sort();
    assert!(cases.len() >= 40, "found {} cases", cases.len());
    let tmp = tempfile::tempdir().expect("tempdir");
    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    let mut failures = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let name = case
            .strip_prefix(&root)
            .expect("under the catalog")
            .to_string_lossy()
            .replace('\\', "/");
        if let Some((_, why)) = NOT_RUN.iter().find(|(n, _)| *n == name) {
            println!("SKIP {name}: {why}");
            skipped += 1;
            continue;
        }
        let deviation = DEVIATIONS.iter().find(|(p, _)| name.starts_with(p));
        let in_place = IN_PLACE.iter().find(|(p, _)| name.starts_with(p));
        let work = tmp.path().join(format!("case-{i}")).join("pkg");
        match (run_case(case, &work, in_place.is_some()), deviation) {
            (Ok(()), None) => {
                match in_place {
                    Some((_, why)) => println!("PASS {name} (by content: {why})"),
                    None => println!("PASS {name}"),
                }
                passed += 1;
            }
            (Err(_), Some((_, why))) => {
                println!("SKIP {name}: deviation: {why}");
                skipped += 1;
            }
            (Ok(()), Some(_)) => {
                failures.push(format!("{name}: passes but is listed as a deviation"));
                failed += 1;
            }
            (Err(e), None) => {
                println!("FAIL {name}");
                failures.push(format!("{name}: {e}"));
                failed += 1;
            }
        }
    }
    println!("{passed} passed, {failed} failed, {skipped} skipped");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
