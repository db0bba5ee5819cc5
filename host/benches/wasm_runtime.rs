//! The Go js/wasm runtime (`porch_variants::runtime`) against node with Go's
//! own `wasm_exec.js`, on the same module and ResourceList:
//! `apply-package-variant.wasm` (built by `scripts/build-kpt-wasm.sh`, or
//! found in `$PV_KPT_WASM_DIR`) over a generated 1,000-resource package.
//!
//! Printed, from interleaved rounds (medians):
//! * ours: one call as the host makes it (a fresh instance of the module
//!   compiled once per process, start-up, `processResourceList`), and the
//!   compile once;
//! * node: the whole process per call (what kpt's nodejs runtime pays, one
//!   process per function), and the run inside it as the harness times it
//!   (instantiated module, start-up, `processResourceList`).
//!
//! Without the module, node or Go's `wasm_exec.js` it says what is missing
//! and exits.

#[path = "../tests/common/go_node.rs"]
mod go_node;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use porch_variants::runtime::{GoWasmRuntime, Limits};

const FN_CONFIG: &str = "functionConfig:
  apiVersion: config.porch.kpt.dev/v1alpha1
  kind: PackageVariant
  metadata:
    name: app-east
    namespace: prod
  spec:
    upstream: {repo: blueprints, package: app, revision: 1}
    downstream: {repo: deployments, package: app-east}
    packageContext:
      data:
        region: east
    pipeline:
      mutators:
      - image: gcr.io/kpt-fn/set-labels:v0.2
        configMap: {region: east}
";

fn annotations(path: &str) -> String {
    format!(
        "    annotations:\n      config.kubernetes.io/index: '0'\n      config.kubernetes.io/path: '{path}'\n      internal.config.kubernetes.io/path: '{path}'\n"
    )
}

/// A ResourceList of a package with a Kptfile, its package context and
/// `n` Deployments, one file each.
fn input(n: usize) -> String {
    let mut s = String::from("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n");
    s.push_str("- apiVersion: kpt.dev/v1\n  kind: Kptfile\n  metadata:\n    name: app\n");
    s.push_str(&annotations("Kptfile"));
    s.push_str("- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: kptfile.kpt.dev\n");
    s.push_str(&annotations("package-context.yaml"));
    s.push_str("  data:\n    name: app\n");
    for i in 0..n {
        s.push_str(&format!(
            "- apiVersion: apps/v1\n  kind: Deployment\n  metadata: # kpt-merge: app/app-{i:04}\n    name: app-{i:04}\n"
        ));
        s.push_str(&annotations(&format!("deployments/app-{i:04}.yaml")));
        s.push_str(&format!(
            "  spec:\n    replicas: {} # tuned by hand\n    template:\n      spec:\n        containers:\n        - name: app\n          image: registry.example.com/app:1.{i}\n          args: [--port, \"8080\"]\n",
            1 + i % 5
        ));
    }
    s.push_str(FN_CONFIG);
    s
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    let dir = std::env::var_os("PV_KPT_WASM_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/kpt-wasm"));
    let module_path = dir.join("apply-package-variant.wasm");
    if !module_path.is_file() {
        eprintln!(
            "SKIPPED: {} is missing (scripts/build-kpt-wasm.sh builds it)",
            module_path.display()
        );
        return;
    }
    // `cargo bench` passes --bench; under `cargo test --all-targets` one
    // round is enough.
    let rounds = if std::env::args().any(|a| a == "--bench") {
        9
    } else {
        1
    };
    let input = input(1000);
    let runtime = GoWasmRuntime::new(Limits::default()).expect("runtime");
    let started = Instant::now();
    let module = runtime.load_file(&module_path).expect("module loads");
    let compile = started.elapsed();
    let ours = runtime.run(&module, &input).expect("runs");
    assert!(ours.output.contains("region: east"));

    let (mut our_runs, mut node_procs, mut node_inside) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let started = Instant::now();
        let run = runtime.run(&module, &input).expect("runs");
        our_runs.push(started.elapsed());
        assert_eq!(run.output, ours.output);

        let started = Instant::now();
        let Some((node_output, log)) = go_node::run_node(&module_path, &input) else {
            return;
        };
        node_procs.push(started.elapsed());
        assert_eq!(node_output, ours.output, "our runtime and node disagree");
        let inside = log
            .lines()
            .rev()
            .find_map(|l| {
                l.strip_prefix("run-node: ")?
                    .strip_suffix(" ms")?
                    .parse::<f64>()
                    .ok()
            })
            .expect("the harness's timing line");
        node_inside.push(Duration::from_secs_f64(inside / 1e3));
    }
    let (run, proc_, inside) = (median(our_runs), median(node_procs), median(node_inside));
    println!(
        "go js/wasm runtime, apply-package-variant on 1,000 resources ({} bytes): ours {:.1} ms per call (+ {:.0} ms compile once per process); node {:.1} ms per process, {:.1} ms inside; ours / node process = {:.2}, ours incl. compile / node process = {:.2}, ours / node inside = {:.2}",
        input.len(),
        ms(run),
        ms(compile),
        ms(proc_),
        ms(inside),
        run.as_secs_f64() / proc_.as_secs_f64(),
        (run + compile).as_secs_f64() / proc_.as_secs_f64(),
        run.as_secs_f64() / inside.as_secs_f64(),
    );
}
