//! Hostile functions through `porch-variants fn render`: a wasm function
//! that never returns, one that allocates 4 GiB, one that returns 100 MiB,
//! and an exec function that never exits. Each is stopped within its limit
//! with a clear error naming it, the package is left as it was, and the
//! next render of the same package (with a working pipeline) succeeds.
//!
//! The wasm cases need `go` to build the fixture (`fixtures/go-krm-fn`);
//! without it they say so and pass.

#[path = "common/go_node.rs"]
mod go_node;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const DEPLOYMENT: &str =
    "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n";

fn kptfile(mutator: &str) -> String {
    format!("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: pkg\npipeline:\n  mutators:\n{mutator}")
}

const WORKING: &str = "  - image: set-namespace:v0.4\n    configMap:\n      namespace: safe\n";

/// A package whose ConfigMap carries `hostile: <what>` (the fixture's
/// switch) and whose pipeline runs `mutator`.
fn package(dir: &Path, mutator: &str, hostile: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("Kptfile"), kptfile(mutator)).unwrap();
    std::fs::write(dir.join("deployment.yaml"), DEPLOYMENT).unwrap();
    std::fs::write(
        dir.join("switch.yaml"),
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: switch\ndata:\n  hostile: {hostile}\n"),
    )
    .unwrap();
}

struct Rendered {
    code: i32,
    stderr: String,
    took: Duration,
}

fn render(dir: &Path, args: &[&str]) -> Rendered {
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_porch-variants"))
        .args(["fn", "render"])
        .args(args)
        .arg(dir)
        .output()
        .expect("the binary runs");
    Rendered {
        code: out.status.code().unwrap_or(-1),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        took: started.elapsed(),
    }
}

/// Renders the hostile package, checks the failure, then renders the same
/// package with a working pipeline.
fn check(dir: &Path, args: &[&str], within: Duration, expect: &[&str]) {
    let before = std::fs::read_to_string(dir.join("deployment.yaml")).unwrap();
    let r = render(dir, args);
    assert_ne!(r.code, 0, "the hostile render failed: {}", r.stderr);
    assert!(
        r.took < within,
        "stopped after {:?} (limit {within:?})",
        r.took
    );
    for e in expect {
        assert!(r.stderr.contains(e), "{e:?} missing from: {}", r.stderr);
    }
    assert_eq!(
        std::fs::read_to_string(dir.join("deployment.yaml")).unwrap(),
        before,
        "a failed render left the resources as they were"
    );
    std::fs::write(dir.join("Kptfile"), kptfile(WORKING)).unwrap();
    let next = render(dir, args);
    assert_eq!(next.code, 0, "the next render works: {}", next.stderr);
    assert!(std::fs::read_to_string(dir.join("deployment.yaml"))
        .unwrap()
        .contains("namespace: safe"));
}

#[test]
fn an_exec_function_that_never_exits_is_stopped_at_its_timeout() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pkg");
    package(&dir, "  - exec: sleep 1000\n", "none");
    check(
        &dir,
        &["--allow-exec", "--exec-timeout", "2"],
        Duration::from_secs(20),
        &["sleep 1000", "did not finish within 2s"],
    );
}

/// The fixture as the wasm function `example.com/hostile:v1` in a function
/// directory; `None` without `go`.
fn fn_dir(tmp: &Path) -> Option<std::path::PathBuf> {
    let module = go_node::go_fixture()?;
    let dir = tmp.join("functions");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(module, dir.join("hostile.wasm")).unwrap();
    Some(dir)
}

const HOSTILE: &str = "  - image: example.com/hostile:v1\n";

fn wasm_case(hostile: &str, within: Duration, expect: &[&str]) {
    let tmp = tempfile::tempdir().unwrap();
    let Some(functions) = fn_dir(tmp.path()) else {
        return;
    };
    let dir = tmp.path().join("pkg");
    package(&dir, HOSTILE, hostile);
    let functions = functions.display().to_string();
    check(&dir, &["--fn-dir", &functions], within, expect);
}

#[test]
fn a_wasm_function_that_never_returns_is_stopped() {
    wasm_case(
        "loop",
        Duration::from_secs(90),
        &["example.com/hostile:v1", "and was stopped"],
    );
}

#[test]
fn a_wasm_function_that_allocates_4_gib_is_stopped_at_the_memory_limit() {
    wasm_case(
        "alloc",
        Duration::from_secs(30),
        &["example.com/hostile:v1", "linear memory"],
    );
}

#[test]
fn a_wasm_function_that_returns_100_mib_is_stopped_at_the_output_limit() {
    wasm_case(
        "output",
        Duration::from_secs(30),
        &["example.com/hostile:v1", "more than the limit"],
    );
}

#[test]
fn a_resource_file_over_the_limit_is_refused_before_it_is_read() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pkg");
    package(&dir, WORKING, "none");
    // Sparse, 1 GiB: refused on its size.
    let big = std::fs::File::create(dir.join("big.yaml")).unwrap();
    big.set_len(1 << 30).unwrap();
    let r = render(&dir, &[]);
    assert_ne!(r.code, 0);
    assert!(
        r.stderr.contains("big.yaml") && r.stderr.contains("more than the 64 MiB a render reads"),
        "{}",
        r.stderr
    );
    assert!(r.took < Duration::from_secs(20), "{:?}", r.took);
}

#[test]
fn a_hundred_thousand_files_stop_at_a_limit_of_the_component_with_nothing_written() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pkg");
    package(&dir, WORKING, "none");
    for i in 0..100_000 {
        let sub = dir.join(format!("d{:03}", i / 1000));
        if i % 1000 == 0 {
            std::fs::create_dir_all(&sub).unwrap();
        }
        std::fs::write(
            sub.join(format!("cm{i}.yaml")),
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm{i}\n"),
        )
        .unwrap();
    }
    let r = render(&dir, &[]);
    assert_ne!(r.code, 0);
    // Its memory limit grows with the input (9 MB here): the fuel, which
    // grows more slowly, runs out first.
    assert!(
        r.stderr.contains("ran out of fuel")
            || (r.stderr.contains("more than the limit") && r.stderr.contains("memory")),
        "{}",
        r.stderr
    );
    let one = std::fs::read_to_string(dir.join("d050/cm50000.yaml")).unwrap();
    assert!(!one.contains("namespace"), "nothing is written: {one}");
}

#[test]
fn a_function_that_moves_resources_out_of_the_package_is_refused_and_bad_names_stay_content() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pkg");
    let mover = "  - image: ghcr.io/kptdev/krm-functions-catalog/starlark:v0.5\n    configMap:\n      source: |\n        for r in ctx.resource_list[\"items\"]:\n          r[\"metadata\"][\"annotations\"][\"config.kubernetes.io/path\"] = \"../../escaped.yaml\"\n          r[\"metadata\"][\"annotations\"][\"internal.config.kubernetes.io/path\"] = \"../../escaped.yaml\"\n";
    package(&dir, mover, "none");
    // A resource whose name is no Kubernetes name is package content: kpt
    // does not require valid names, and no name becomes a path.
    let bad =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: \"../../not a name\"\ndata:\n  a: b\n";
    std::fs::write(dir.join("bad.yaml"), bad).unwrap();
    let before: Vec<_> = ["deployment.yaml", "switch.yaml", "bad.yaml"]
        .iter()
        .map(|f| std::fs::read_to_string(dir.join(f)).unwrap())
        .collect();
    let out = render(&dir, &[]);
    assert_ne!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("function must not modify resources outside of package: resource has path ../../escaped.yaml"),
        "{}",
        out.stderr
    );
    assert!(!tmp.path().join("escaped.yaml").exists());
    assert!(!tmp.path().parent().unwrap().join("escaped.yaml").exists());
    let after: Vec<_> = ["deployment.yaml", "switch.yaml", "bad.yaml"]
        .iter()
        .map(|f| std::fs::read_to_string(dir.join(f)).unwrap())
        .collect();
    assert_eq!(before, after, "no resource written");
    // Only the Kptfile's render status records the failure, as kpt's.
    let k = std::fs::read_to_string(dir.join("Kptfile")).unwrap();
    assert!(k.contains("reason: RenderFailed"), "{k}");
    // The same package with a working pipeline renders the bad name as
    // content.
    std::fs::write(dir.join("Kptfile"), kptfile(WORKING)).unwrap();
    let out = render(&dir, &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let text = std::fs::read_to_string(dir.join("bad.yaml")).unwrap();
    assert!(
        text.contains("name: \"../../not a name\"") && text.contains("namespace: safe"),
        "{text}"
    );
}

/// A package holding `link`, a symbolic link to a directory outside it,
/// and a function that moves resources under `target` (through the link):
/// the render fails naming a moved file and the link, nothing outside the
/// package changes and nothing in it is written.
#[cfg(unix)]
fn through_a_link(mutator: &str, hostile: &str, target: &str, args: &[&str]) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pkg");
    package(&dir, mutator, hostile);
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(outside.join("deep")).unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("link")).unwrap();
    let listing = |d: &Path| -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut stack = vec![d.to_path_buf()];
        while let Some(p) = stack.pop() {
            for e in std::fs::read_dir(&p).unwrap() {
                let e = e.unwrap();
                let ty = e.file_type().unwrap();
                let rel = e.path().strip_prefix(d).unwrap().display().to_string();
                if ty.is_dir() {
                    stack.push(e.path());
                    out.push((rel, String::new()));
                } else if ty.is_file() {
                    out.push((rel, std::fs::read_to_string(e.path()).unwrap()));
                } else {
                    out.push((rel, "link".into()));
                }
            }
        }
        out.sort();
        out
    };
    let (outside_before, package_before) = (listing(&outside), listing(&dir));
    let r = render(&dir, args);
    assert_ne!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!("cannot write \"{target}"))
            && r.stderr.contains("\"link\" is a symbolic link"),
        "{}",
        r.stderr
    );
    assert_eq!(listing(&outside), outside_before, "nothing outside changed");
    assert_eq!(listing(&dir), package_before, "nothing inside written");
}

#[cfg(unix)]
#[test]
fn a_builtin_moving_resources_through_a_link_writes_nothing() {
    for target in ["link/x.yaml", "link/deep/x.yaml"] {
        let mover = format!(
            "  - image: set-annotations:v0.1\n    configMap:\n      internal.config.kubernetes.io/path: {target}\n      config.kubernetes.io/path: {target}\n    selectors:\n    - kind: Deployment\n"
        );
        through_a_link(&mover, "none", target, &[]);
    }
}

#[cfg(unix)]
#[test]
fn an_exec_function_moving_resources_through_a_link_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let script = tmp.path().join("mover.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\nsed -E \"s#(config\\.kubernetes\\.io/path): '?([^']*)'?#\\1: '$1\\2'#\"\n",
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    for target in ["link/", "link/deep/"] {
        let mover = format!("  - exec: \"{} {target}\"\n", script.display());
        through_a_link(&mover, "none", target, &["--allow-exec"]);
    }
}

#[cfg(unix)]
#[test]
fn a_wasm_function_moving_resources_through_a_link_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(functions) = fn_dir(tmp.path()) else {
        return;
    };
    let functions = functions.display().to_string();
    through_a_link(HOSTILE, "move", "link/deep/", &["--fn-dir", &functions]);
}

/// `fn render` killed: its exec function does not outlive it.
#[cfg(target_os = "linux")]
#[test]
fn an_exec_function_dies_with_the_render() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pkg");
    let marker = tmp.path().join("alive");
    let script = tmp.path().join("slow.sh");
    std::fs::write(
        &script,
        format!("#!/bin/sh\necho $$ > {}\nexec sleep 60\n", marker.display()),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    package(&dir, &format!("  - exec: {}\n", script.display()), "none");
    let mut child = Command::new(env!("CARGO_BIN_EXE_porch-variants"))
        .args(["fn", "render", "--allow-exec"])
        .arg(&dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let pid = loop {
        if let Ok(text) = std::fs::read_to_string(&marker) {
            if let Ok(pid) = text.trim().parse::<u32>() {
                break pid;
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the function never started"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    child.kill().unwrap();
    child.wait().unwrap();
    let proc = std::path::PathBuf::from(format!("/proc/{pid}"));
    let gone = Instant::now();
    while proc.exists()
        && !std::fs::read_to_string(proc.join("stat")).is_ok_and(|s| s.contains(") Z "))
    {
        assert!(
            gone.elapsed() < Duration::from_secs(10),
            "the function {pid} outlived the killed render"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The limits stop what is hostile, not what is large: 10,000 Deployments
/// (6 MB) with set-annotations, which writes a result per resource and
/// field, render in the component (its fuel grows with the package; at
/// 1,000 units a byte this package ran out).
#[test]
fn a_large_package_with_a_result_per_resource_renders_in_the_component() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pkg");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("Kptfile"),
        kptfile("  - image: set-annotations:v0.1.5\n    configMap:\n      team: platform\n"),
    )
    .unwrap();
    for f in 0..10 {
        let mut text = String::new();
        for i in 0..1000 {
            let name = format!("web-{f}-{i}");
            text.push_str(&format!(
                "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n  labels:\n    app: {name}\nspec:\n  replicas: 2\n  selector:\n    matchLabels:\n      app: {name}\n  template:\n    metadata:\n      labels:\n        app: {name}\n    spec:\n      containers:\n      - name: web\n        image: registry.example.com/web:1.4.2 # pinned\n        ports:\n        - containerPort: 8080\n          name: http\n        resources:\n          limits:\n            cpu: 500m\n            memory: 256Mi\n"
            ));
        }
        std::fs::write(dir.join(format!("many-{f}.yaml")), text).unwrap();
    }
    let r = render(&dir, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let one = std::fs::read_to_string(dir.join("many-9.yaml")).unwrap();
    assert_eq!(one.matches("team: platform").count(), 2000);
}
