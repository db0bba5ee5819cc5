//! Go and node on this machine: what the Go js/wasm runtime's tests and
//! benchmark compare against (Go's own `wasm_exec.js` under node).

// Each test and bench that includes this module uses part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Whether `tool` runs (`go version`, `node --version`).
pub fn has(tool: &str) -> bool {
    Command::new(tool)
        .arg(if tool == "go" { "version" } else { "--version" })
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `GOROOT` of the `go` on PATH.
pub fn goroot() -> Option<PathBuf> {
    let out = Command::new("go").args(["env", "GOROOT"]).output().ok()?;
    let path = String::from_utf8(out.stdout).ok()?;
    Some(PathBuf::from(path.trim()))
}

/// Go's own `wasm_exec.js` (`misc/wasm/` before Go 1.24, `lib/wasm/`
/// since).
pub fn wasm_exec_js() -> Option<PathBuf> {
    let goroot = goroot()?;
    ["misc/wasm/wasm_exec.js", "lib/wasm/wasm_exec.js"]
        .iter()
        .map(|p| goroot.join(p))
        .find(|p| p.is_file())
}

/// The host crate's test fixtures.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// `processResourceList(input)` of `module` under node with Go's
/// `wasm_exec.js` (`fixtures/go-krm-fn/run-node.js`): the output and
/// node's stderr, whose last line is the harness's own timing of the run
/// (`run-node: <ms> ms`). `None`, with a message, without node or Go's
/// `wasm_exec.js`.
pub fn run_node(module: &Path, input: &str) -> Option<(String, String)> {
    if !has("node") {
        eprintln!("SKIPPED: `node` is not installed: no comparison with node");
        return None;
    }
    let Some(wasm_exec) = wasm_exec_js() else {
        eprintln!("SKIPPED: Go's wasm_exec.js was not found: no comparison with node");
        return None;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let input_path = dir.path().join("input.yaml");
    let output_path = dir.path().join("output");
    std::fs::write(&input_path, input).expect("write input");
    let out = Command::new("node")
        .arg(fixtures().join("go-krm-fn/run-node.js"))
        .arg(&wasm_exec)
        .arg(module)
        .arg(&input_path)
        .arg(&output_path)
        .output()
        .expect("node runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "node failed: {stderr}");
    Some((
        std::fs::read_to_string(&output_path).expect("node output"),
        stderr,
    ))
}

/// A scratch directory for the Go builds of the tests.
pub fn work_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("gojs-runtime");
    std::fs::create_dir_all(&dir).expect("work dir");
    dir
}

/// The fixture module, built once; `None` (with a message) without `go`.
pub fn go_fixture() -> Option<&'static Path> {
    static BUILT: OnceLock<Option<PathBuf>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            if !has("go") {
                eprintln!(
                    "SKIPPED: `go` is not installed (apt-get install golang-go, or scripts/setup.sh --go): the Go fixture cannot be built"
                );
                return None;
            }
            let out = work_dir().join("go-krm-fn.wasm");
            let mut cmd = Command::new("go");
            cmd.args(["build", "-o"])
                .arg(&out)
                .arg(".")
                .current_dir(fixtures().join("go-krm-fn"))
                .env("GOOS", "js")
                .env("GOARCH", "wasm")
                .env("GOTOOLCHAIN", "local")
                .env("GOFLAGS", "-mod=mod");
            if std::env::var_os("GOCACHE").is_none() && std::env::var_os("HOME").is_none() {
                cmd.env("GOCACHE", work_dir().join("go-cache"));
            }
            if std::env::var_os("GOPATH").is_none() && std::env::var_os("HOME").is_none() {
                cmd.env("GOPATH", work_dir().join("go-path"));
            }
            let status = cmd.status().expect("go build runs");
            assert!(status.success(), "go build of the fixture failed");
            Some(out)
        })
        .as_deref()
}
