//! Upstream's 444 cases of the v1alpha2 PackageRevision controller, the
//! Repository controller and the ContentCache
//! (`tests/conformance/porch-upstream-prc`, see its `INDEX.md`), in one
//! run: five runners, one per level the cases enter at, and one closing
//! line for all of them.
//!
//! A case passes when it matches upstream's expectation, or when it is one
//! of our listed deviations (a fixed upstream bug): it must then fail
//! upstream's expectation exactly where that fix shows. Skipped cases are
//! only those upstream itself cannot run, each printed with why.

mod content_cache;
mod decisions;
mod reconcile;
mod repo_decisions;
mod repo_reconcile;

use porch_variants_tests::prc_cases::{cases_dir, Tally};

/// Every case of the snapshot: the case directories of every group
/// (`crds/` holds the CRDs, not cases).
fn cases_on_disk() -> usize {
    let groups = std::fs::read_dir(cases_dir()).expect("the cases directory");
    groups
        .filter_map(|g| g.ok().map(|g| g.path()))
        .filter(|g| g.is_dir() && !g.ends_with("crds"))
        .map(|g| {
            std::fs::read_dir(&g)
                .unwrap_or_else(|e| panic!("{}: {e}", g.display()))
                .filter(|c| c.as_ref().is_ok_and(|c| c.path().is_dir()))
                .count()
        })
        .sum()
}

/// One runner: its cases' tally.
type Runner = fn() -> Tally;

#[test]
fn upstream_prc_cases() {
    let runners: [(&str, Runner); 5] = [
        ("PackageRevision decisions", decisions::run),
        ("PackageRevision reconcile", reconcile::run),
        ("Repository decisions", repo_decisions::run),
        (
            "Repository reconcile, apply and integration",
            repo_reconcile::run,
        ),
        ("ContentCache", content_cache::run),
    ];
    let mut total = Tally::default();
    for (name, run) in runners {
        let tally = run();
        println!(
            "{name}: {} cases, {} as upstream expects, {} as deviations, {} skipped, {} failing",
            tally.cases(),
            tally.passed,
            tally.deviations,
            tally.skipped.len(),
            tally.failed.len()
        );
        total.add(tally);
    }
    for f in &total.failed {
        println!("FAILED {f}");
    }
    println!(
        "{} passed, {} failed, {} skipped",
        total.passed + total.deviations,
        total.failed.len(),
        total.skipped.len()
    );
    assert!(
        total.failed.is_empty(),
        "{} cases failed",
        total.failed.len()
    );
    assert_eq!(
        total.cases(),
        cases_on_disk(),
        "every case of the snapshot is run"
    );
}
