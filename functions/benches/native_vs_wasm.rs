//! `apply-package-variant` on a generated 1,000-resource package (about
//! 1 MB of ResourceList): the native binary against the kpt-ABI wasm module
//! under the node harness (as kpt's nodejs runtime runs it), end to end per
//! process, and the time inside `processResourceList` alone.
//!
//! `cargo bench -p porch-variants-functions --bench native_vs_wasm`
//! (without `--bench`, as under `cargo test --all-targets`, each runs once). Needs node for the wasm
//! side; without it only the native figures are printed.

#[path = "../tests/support/mod.rs"]
mod support;

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Instant;

const FN_CONFIG: &str = "apiVersion: config.porch.kpt.dev/v1alpha1
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

fn input() -> String {
    let mut files = BTreeMap::new();
    files.insert(
        "Kptfile".to_string(),
        "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n".to_string(),
    );
    files.insert(
        "package-context.yaml".to_string(),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kptfile.kpt.dev\ndata:\n  name: app\n"
            .to_string(),
    );
    for i in 0..1000 {
        files.insert(
            format!("deployments/app-{i:04}.yaml"),
            support::bench_resource(i),
        );
    }
    support::source(&files, Some(FN_CONFIG))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --all-targets` does not: a
    // single smoke run then.
    let smoke = !std::env::args().any(|a| a == "--bench");
    let runs = if smoke { 1 } else { 15 };
    let input = input();
    let bin = env!("CARGO_BIN_EXE_apply-package-variant");
    let wasm =
        support::have("node").then(|| support::wasm_dir().join("apply-package-variant.wasm"));
    let (mut native, mut node, mut inside) = (Vec::new(), Vec::new(), Vec::new());
    let mut peak = 0u64;
    // Interleaved, so machine noise hits both sides alike.
    for _ in 0..runs {
        let t = Instant::now();
        let (code, out, _) = support::run(&mut Command::new(bin), &input);
        native.push(t.elapsed().as_secs_f64() * 1e3);
        assert_eq!(code, 0, "native run failed");
        if let Some(wasm) = &wasm {
            let t = Instant::now();
            let (code, wout, stats) = support::run(
                Command::new("node")
                    .arg(support::harness())
                    .arg("--stats")
                    .arg(wasm),
                &input,
            );
            node.push(t.elapsed().as_secs_f64() * 1e3);
            assert_eq!(code, 0, "node harness failed: {stats}");
            assert_eq!(wout, format!("{out}\n"), "wasm output differs from native");
            let stats: serde_json::Value = serde_json::from_str(stats.trim()).expect("stats line");
            assert_eq!(stats["memoryGrew"], false, "wasm memory grew");
            inside.push(stats["processMs"].as_f64().unwrap_or(0.0));
            peak = stats["arenaPeakBytes"].as_u64().unwrap_or(0);
        }
    }
    let n = median(native);
    println!(
        "apply-package-variant, 1,000 resources ({:.2} MB in), median of {runs}:",
        input.len() as f64 / 1e6
    );
    println!("  native binary (process):          {n:8.1} ms");
    if wasm.is_some() {
        let (w, i) = (median(node), median(inside));
        println!(
            "  wasm under node (process):        {w:8.1} ms   ratio {:.2}x",
            w / n
        );
        println!(
            "  wasm processResourceList only:    {i:8.1} ms   ratio {:.2}x",
            i / n
        );
        println!(
            "  wasm arena peak: {:.1} MiB ({:.1}x the input)",
            peak as f64 / (1 << 20) as f64,
            peak as f64 / input.len() as f64
        );
    } else {
        println!("  wasm: SKIPPED (node not found)");
    }
}
