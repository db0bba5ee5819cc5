//! The Go js/wasm runtime (`porch_variants::runtime`) against node running
//! the same modules with Go's own `wasm_exec.js`, and against hostile
//! modules.
//!
//! The Go fixture (`fixtures/go-krm-fn`, standard library only) is built
//! with `GOOS=js GOARCH=wasm go build` at the start; without `go` (install
//! Debian's golang-go: `scripts/setup.sh --go`) the tests that need it say
//! so and pass. The comparisons with node also need `node`. The project's
//! own kpt module (`target/kpt-wasm/apply-package-variant.wasm`, or in
//! `$PV_KPT_WASM_DIR`; built by `scripts/build-kpt-wasm.sh`) is compared
//! too when present.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

#[path = "common/go_node.rs"]
mod go_node;
use go_node::{fixtures, go_fixture, run_node};

use porch_variants::runtime::{
    ClockMode, FunctionDirectory, GoWasmModule, GoWasmRuntime, Limits, WasmFnError,
};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

fn input() -> String {
    std::fs::read_to_string(fixtures().join("go-krm-fn/input.yaml")).expect("input.yaml")
}

#[test]
fn runtime_is_shareable_between_threads() {
    fn shareable<T: Send + Sync>() {}
    shareable::<GoWasmRuntime>();
    shareable::<GoWasmModule>();
    shareable::<FunctionDirectory>();
}

/// One runtime for all tests (so modules are compiled once).
fn runtime() -> &'static GoWasmRuntime {
    static RUNTIME: OnceLock<GoWasmRuntime> = OnceLock::new();
    RUNTIME.get_or_init(|| GoWasmRuntime::new(Limits::default()).expect("runtime"))
}

fn fixture_module() -> Option<GoWasmModule> {
    let path = go_fixture()?;
    Some(runtime().load_file(path).expect("fixture loads"))
}

#[test]
fn go_fixture_output_equals_node() {
    let Some(path) = go_fixture() else { return };
    let started = Instant::now();
    let module = fixture_module().expect("fixture");
    let compile = started.elapsed();
    let input = input();
    let run = runtime().run(&module, &input).expect("the fixture runs");
    assert!(
        run.output.contains("fixture.example.com/seen: \"true\""),
        "{}",
        run.output
    );
    assert_eq!(run.output.matches("fixture.example.com/seen").count(), 2);
    assert!(run.output.contains("héllo ✓"), "UTF-8 survives both ways");
    assert_eq!(run.stdout, "go-krm-fn: processing\n");
    assert_eq!(run.stderr, "go-krm-fn: stderr line\n");
    // A second run of the cached module gives the same.
    let again = runtime().run(&module, &input).expect("second run");
    assert_eq!(again.output, run.output);

    let node_started = Instant::now();
    let Some((node_output, node_log)) = run_node(path, &input) else {
        return;
    };
    let node_process = node_started.elapsed();
    assert_eq!(run.output, node_output, "our runtime and node disagree");
    eprintln!(
        "timing: compile {:.1} ms; our run {:.1} ms (instantiate, start-up with the fixture's 20 ms sleep, call); node process {:.1} ms ({})",
        compile.as_secs_f64() * 1e3,
        again.elapsed.as_secs_f64() * 1e3,
        node_process.as_secs_f64() * 1e3,
        node_log.trim()
    );
}

#[test]
fn virtual_clock_skips_timer_waits() {
    let Some(module) = fixture_module() else {
        return;
    };
    let limits = Limits {
        clock: ClockMode::Virtual,
        ..Limits::default()
    };
    let run = runtime()
        .run_with_limits(&module, &input(), &limits)
        .expect("runs");
    let real = runtime().run(&module, &input()).expect("runs");
    assert_eq!(run.output, real.output);
    assert!(
        real.elapsed >= Duration::from_millis(20),
        "the real clock waits for the fixture's 20 ms sleep"
    );
}

#[test]
fn failure_reports_process_resource_list_errors() {
    let Some(module) = fixture_module() else {
        return;
    };
    let err = runtime().run(&module, "not a resource list").unwrap_err();
    match &err {
        WasmFnError::FunctionFailed {
            module,
            message,
            output,
            ..
        } => {
            assert!(module.ends_with("go-krm-fn.wasm"), "{module}");
            assert_eq!(message, "input is not a ResourceList");
            assert_eq!(output, "error: input is not a ResourceList");
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(
        err.to_string().contains("input is not a ResourceList"),
        "{err}"
    );
}

/// Runs `hostile: <what>`, checks the error, then checks a normal run
/// still works.
fn hostile(what: &str, limits: &Limits) -> Option<(WasmFnError, Duration)> {
    let module = fixture_module()?;
    let rl =
        format!("kind: ResourceList\nitems: []\nfunctionConfig:\n  data:\n    hostile: {what}\n");
    let started = Instant::now();
    let err = runtime()
        .run_with_limits(&module, &rl, limits)
        .expect_err("the hostile run fails");
    let took = started.elapsed();
    eprintln!("hostile {what}: {err} ({took:?})");
    let ok = runtime()
        .run(&module, &input())
        .expect("the next run works");
    assert!(ok.output.contains("fixture.example.com/seen"));
    Some((err, took))
}

#[test]
fn infinite_loop_runs_out_of_fuel() {
    let limits = Limits {
        fuel: Some(500_000_000),
        ..Limits::default()
    };
    let Some((err, took)) = hostile("loop", &limits) else {
        return;
    };
    assert!(
        matches!(
            err,
            WasmFnError::OutOfFuel {
                fuel: 500_000_000,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.is_limit());
    assert!(took < Duration::from_secs(30), "{took:?}");
}

#[test]
fn infinite_loop_hits_the_deadline() {
    let limits = Limits {
        fuel: None,
        timeout: Some(Duration::from_millis(1500)),
        ..Limits::default()
    };
    let Some((err, took)) = hostile("loop", &limits) else {
        return;
    };
    assert!(matches!(err, WasmFnError::Timeout { .. }), "{err:?}");
    assert!(err.to_string().contains("ran longer than 1500ms"), "{err}");
    assert!(took < Duration::from_secs(10), "{took:?}");
}

#[test]
fn four_gib_allocation_hits_the_memory_limit() {
    let limits = Limits {
        max_memory: 512 << 20,
        ..Limits::default()
    };
    let Some((err, _)) = hostile("alloc", &limits) else {
        return;
    };
    match &err {
        WasmFnError::MemoryLimit {
            limit, requested, ..
        } => {
            assert_eq!(*limit, 512 << 20);
            assert!(*requested > 512 << 20);
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(
        err.to_string().contains("go-krm-fn.wasm asked for"),
        "{err}"
    );
}

#[test]
fn hundred_mib_output_is_refused() {
    let Some((err, _)) = hostile("output", &Limits::default()) else {
        return;
    };
    match &err {
        WasmFnError::OutputTooLarge { size, limit, .. } => {
            assert_eq!(*limit, 64 << 20);
            assert!(*size > 100 << 20);
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn exit_and_panic_are_reported() {
    let Some((err, _)) = hostile("exit", &Limits::default()) else {
        return;
    };
    assert!(
        matches!(err, WasmFnError::Exited { code: 3, .. }),
        "{err:?}"
    );
    let Some((err, _)) = hostile("panic", &Limits::default()) else {
        return;
    };
    match &err {
        WasmFnError::Exited { code, stderr, .. } => {
            assert_eq!(*code, 2);
            assert!(stderr.contains("panic: fixture panic"), "{stderr}");
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn bad_modules_are_errors() {
    let rt = runtime();
    let err = rt.compile("garbage.wasm", b"not wasm").unwrap_err();
    assert!(matches!(err, WasmFnError::Compile { .. }), "{err:?}");
    assert!(err.to_string().contains("garbage.wasm"));

    // (module (type (func)) (import "wasi_snapshot_preview1" "fd_write" (func (type 0))))
    let mut wasi = b"\0asm\x01\0\0\0\x01\x04\x01\x60\x00\x00".to_vec();
    let (m, f) = (b"wasi_snapshot_preview1", b"fd_write");
    let mut imports = vec![1, m.len() as u8];
    imports.extend_from_slice(m);
    imports.push(f.len() as u8);
    imports.extend_from_slice(f);
    imports.extend_from_slice(&[0, 0]);
    wasi.push(2);
    wasi.push(imports.len() as u8);
    wasi.extend_from_slice(&imports);
    let err = rt.compile("wasi.wasm", &wasi).unwrap_err();
    assert!(matches!(err, WasmFnError::NotGoJs { .. }), "{err:?}");

    // An empty module: no `mem`, `run`, `resume`, `getsp`.
    let empty = rt
        .compile("empty.wasm", b"\0asm\x01\0\0\0")
        .expect("compiles");
    let err = rt.run(&empty, "kind: ResourceList\n").unwrap_err();
    assert!(matches!(err, WasmFnError::NotGoJs { .. }), "{err:?}");
    assert!(err.to_string().contains("mem"), "{err}");
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    format!("sha256:{:x}", sha2::Sha256::digest(bytes))
}

/// Writes `bytes` as a blob of `layout`; its digest.
fn blob(layout: &Path, bytes: &[u8]) -> String {
    let digest = sha256(bytes);
    let dir = layout.join("blobs/sha256");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(digest.trim_start_matches("sha256:")), bytes).unwrap();
    digest
}

/// A gzip tar holding one file, as `kpt alpha wasm push` makes.
fn gzip_tar(name: &str, data: &[u8]) -> Vec<u8> {
    let mut header = [0u8; 512];
    header[..name.len()].copy_from_slice(name.as_bytes());
    header[100..108].copy_from_slice(b"0000644\0");
    header[124..136].copy_from_slice(format!("{:011o}\0", data.len()).as_bytes());
    header[156] = b'0';
    header[257..263].copy_from_slice(b"ustar\0");
    header[148..156].copy_from_slice(b"        ");
    let sum: u32 = header.iter().map(|b| u32::from(*b)).sum();
    header[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    let mut tar = header.to_vec();
    tar.extend_from_slice(data);
    tar.resize(tar.len().div_ceil(512) * 512 + 1024, 0);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&tar).unwrap();
    gz.finish().unwrap()
}

/// An OCI layout of what `kpt alpha wasm push fn.wasm <image>:<tag>`
/// pushes: a Docker manifest list with a `js/wasm` entry (beside a
/// container entry), a Docker v2 manifest, one gzip tar layer.
fn oci_layout(layout: &Path, module: &[u8], ref_name: &str) {
    let layer = blob(layout, &gzip_tar("fn.wasm", module));
    let config = blob(layout, b"{}");
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
        "config": {"mediaType": "application/vnd.docker.container.image.v1+json", "digest": config, "size": 2},
        "layers": [{"mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip", "digest": layer, "size": 1}]
    });
    let manifest = blob(layout, manifest.to_string().as_bytes());
    let other = blob(layout, b"{\"schemaVersion\":2,\"layers\":[]}");
    let list = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.docker.distribution.manifest.list.v2+json",
        "manifests": [
            {"mediaType": "application/vnd.docker.distribution.manifest.v2+json", "digest": other, "size": 1,
             "platform": {"architecture": "amd64", "os": "linux"}},
            {"mediaType": "application/vnd.docker.distribution.manifest.v2+json", "digest": manifest, "size": 1,
             "platform": {"architecture": "wasm", "os": "js"}}
        ]
    });
    let list = blob(layout, list.to_string().as_bytes());
    let index = serde_json::json!({
        "schemaVersion": 2,
        "manifests": [{
            "mediaType": "application/vnd.docker.distribution.manifest.list.v2+json",
            "digest": list, "size": 1,
            "annotations": {"org.opencontainers.image.ref.name": ref_name}
        }]
    });
    std::fs::write(
        layout.join("oci-layout"),
        br#"{"imageLayoutVersion":"1.0.0"}"#,
    )
    .unwrap();
    std::fs::write(layout.join("index.json"), index.to_string()).unwrap();
}

#[test]
fn function_directory_finds_files_and_oci_layouts() {
    let Some(path) = go_fixture() else { return };
    let module = std::fs::read(path).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let functions = FunctionDirectory::new(dir.path());
    let image = "ghcr.io/kptdev/krm-functions-catalog/set-foo:v1";

    let err = runtime()
        .run_image(&functions, image, &input())
        .unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, WasmFnError::NotFound { .. }), "{err:?}");
    assert!(message.contains(image), "{message}");
    assert!(
        message.contains("set-foo:v1.wasm") && message.contains("set-foo.wasm"),
        "{message}"
    );

    // An OCI layout per image, tag annotation.
    oci_layout(&dir.path().join("set-foo"), &module, "v1");
    let run = runtime()
        .run_image(&functions, image, &input())
        .expect("from the OCI layout");
    assert!(run.output.contains("fixture.example.com/seen"));
    let err = runtime()
        .run_image(&functions, "set-foo:v2", &input())
        .unwrap_err();
    assert!(matches!(err, WasmFnError::NotFound { .. }), "{err:?}");

    // A file wins over the layout; the short name finds it too.
    std::fs::write(dir.path().join("set-foo:v1.wasm"), b"not wasm").unwrap();
    let err = runtime()
        .run_image(&functions, "set-foo:v1", &input())
        .unwrap_err();
    assert!(matches!(err, WasmFnError::Compile { .. }), "{err:?}");
    assert!(err.to_string().contains("set-foo:v1"), "{err}");
    std::fs::write(dir.path().join("set-bar.wasm"), &module).unwrap();
    runtime()
        .run_image(&functions, "example.com/set-bar:any", &input())
        .expect("an untagged file serves every tag");

    // One layout for the directory, annotated with full references.
    let shared = tempfile::tempdir().unwrap();
    oci_layout(shared.path(), &module, "example.com/fns/set-baz:v3");
    let functions = FunctionDirectory::new(shared.path());
    runtime()
        .run_image(&functions, "example.com/fns/set-baz:v3", &input())
        .expect("from the shared layout");

    // A blob that does not match its digest is refused (layers are
    // cached by digest, so the manifests are tampered with).
    let corrupt = tempfile::tempdir().unwrap();
    oci_layout(&corrupt.path().join("set-qux"), &module, "v1");
    for entry in std::fs::read_dir(corrupt.path().join("set-qux/blobs/sha256")).unwrap() {
        std::fs::write(entry.unwrap().path(), b"tampered").unwrap();
    }
    let err = runtime()
        .run_image(
            &FunctionDirectory::new(corrupt.path()),
            "set-qux:v1",
            &input(),
        )
        .unwrap_err();
    assert!(err.to_string().contains("digest"), "{err}");
}

/// The project's own kpt module (Rust, `go` import module, `stringVal`).
#[test]
fn kpt_wasm_module_output_equals_node() {
    let dir = std::env::var_os("PV_KPT_WASM_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/kpt-wasm"));
    let path = dir.join("apply-package-variant.wasm");
    if !path.is_file() {
        eprintln!(
            "SKIPPED: {} is missing (scripts/build-kpt-wasm.sh builds it)",
            path.display()
        );
        return;
    }
    let input =
        std::fs::read_to_string(fixtures().join("apply-package-variant-input.yaml")).unwrap();
    let module = runtime().load_file(&path).expect("loads");
    let run = runtime().run(&module, &input).expect("runs");
    assert!(run.output.contains("kind: ResourceList"), "{}", run.output);
    assert!(run.output.contains("region: east"), "{}", run.output);
    assert_eq!(run.stdout, "");
    // Without functionConfig the module fails the catalog's way: a text
    // that is not a ResourceList, and the message from
    // processResourceListErrors.
    let bare = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n";
    let bare_output = match runtime().run(&module, bare).unwrap_err() {
        WasmFnError::FunctionFailed {
            message, output, ..
        } => {
            assert!(message.contains("functionConfig is missing"), "{message}");
            output
        }
        other => panic!("unexpected {other:?}"),
    };
    if go_fixture().is_none() {
        return;
    }
    let Some((node_output, _)) = run_node(&path, &input) else {
        return;
    };
    assert_eq!(run.output, node_output, "our runtime and node disagree");
    let Some((node_output, _)) = run_node(&path, bare) else {
        return;
    };
    assert_eq!(bare_output, node_output);
}
