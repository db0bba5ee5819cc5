//! Local mode grows with the fleet, not faster: the CLI with its default
//! flags (v1alpha2, one worker per CPU), as whole processes, on fleets of
//! 100 and 400 variants made by `scripts/fleet.sh` from `examples/fleet`.
//! Store calls per variant are the same at both sizes, in the first run
//! and in a run with nothing to do, and the larger no-op run takes less
//! than 6× the smaller (linear is 4×; a reconcile whose reads grow with
//! the fleet gives about 16×).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_porch-variants")
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A fleet of `n` variants under `dir`.
fn fleet(n: usize, dir: &Path) {
    let out = Command::new("bash")
        .arg(repo_root().join("scripts/fleet.sh"))
        .arg(n.to_string())
        .arg(dir)
        .output()
        .expect("bash runs");
    assert!(out.status.success(), "fleet.sh: {out:?}");
}

/// One run of `local` over `dir` (`--init` on the first): its wall time and
/// JSON summary.
fn local(dir: &Path, init: bool) -> (Duration, serde_json::Value) {
    let mut cmd = Command::new(bin());
    cmd.arg("local").arg(dir).args(["--output", "json"]);
    if init {
        cmd.arg("--init");
    }
    let started = Instant::now();
    let out = cmd.output().expect("the binary runs");
    let took = started.elapsed();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON summary");
    assert_eq!(summary["converged"], true, "{summary}");
    (took, summary)
}

/// Store (reads, writes) per variant of a run.
fn per_variant(summary: &serde_json::Value) -> (f64, f64) {
    let n = summary["package_variants"].as_f64().expect("variants");
    let calls = &summary["store_calls"];
    (
        calls["reads"].as_f64().expect("reads") / n,
        calls["writes"].as_f64().expect("writes") / n,
    )
}

fn assert_equal_per_variant(what: &str, small: (f64, f64), large: (f64, f64)) {
    // The set's own calls are shared by more variants in the larger fleet:
    // a few hundredths of a call per variant apart, not more.
    for (kind, a, b) in [("reads", small.0, large.0), ("writes", small.1, large.1)] {
        assert!(
            (a - b).abs() <= 0.3,
            "{what}: store {kind} per variant {a:.2} at 100 variants, {b:.2} at 400"
        );
    }
}

#[test]
fn local_mode_grows_linearly_with_the_fleet() {
    let tmp = tempfile::tempdir().expect("temporary directory");
    let sizes = [100, 400];
    let dirs: Vec<PathBuf> = sizes
        .iter()
        .map(|n| tmp.path().join(format!("fleet-{n}")))
        .collect();
    let mut first = Vec::new();
    for (n, dir) in sizes.iter().zip(&dirs) {
        fleet(*n, dir);
        let (_, summary) = local(dir, true);
        assert_eq!(summary["package_variants"], *n, "{summary}");
        first.push(per_variant(&summary));
    }
    assert_equal_per_variant("first run", first[0], first[1]);

    // The no-op runs, taking turns; the quickest of each size.
    let mut best = [Duration::MAX; 2];
    let mut noop = Vec::new();
    for round in 0..3 {
        for (i, dir) in dirs.iter().enumerate() {
            let (took, summary) = local(dir, false);
            assert_eq!(
                summary["events"].as_array().map(Vec::len),
                Some(0),
                "{summary}"
            );
            assert_eq!(summary["skipped"], sizes[i], "every variant skipped");
            best[i] = best[i].min(took);
            if round == 0 {
                noop.push(per_variant(&summary));
            }
        }
    }
    assert_equal_per_variant("no-op run", noop[0], noop[1]);
    let ratio = best[1].as_secs_f64() / best[0].as_secs_f64();
    println!(
        "no-op runs: {:.3}s at 100 variants, {:.3}s at 400 ({ratio:.2}x); store calls per variant {:?} and {:?}",
        best[0].as_secs_f64(),
        best[1].as_secs_f64(),
        noop[0],
        noop[1]
    );
    assert!(
        ratio < 6.0,
        "the no-op run at 400 variants takes {ratio:.2}x the one at 100 (linear is 4x)"
    );
}
