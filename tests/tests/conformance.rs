//! Runs every upstream conformance case against the core and prints one line
//! per failing case and a closing `N passed, N failed` line.

use porch_variants_tests::conformance::{adapters, cases, deviations};
use porch_variants_tests::conformance_dir;

#[test]
fn upstream_conformance_cases() {
    let root = conformance_dir();
    let mut passed = 0usize;
    let mut failed = 0usize;
    let mut deviated = 0usize;
    let mut unknown_groups = Vec::new();
    let known: Vec<&str> = adapters().iter().map(|(g, _)| *g).collect();
    for entry in std::fs::read_dir(root.join("cases"))
        .expect("cases folder")
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.path().is_dir() && !known.contains(&name.as_str()) {
            unknown_groups.push(name);
        }
    }
    unknown_groups.sort();
    for (group, adapter) in adapters() {
        for case in cases(&root, group) {
            let id = format!(
                "{group}/{}",
                case.file_name().unwrap_or_default().to_string_lossy()
            );
            let result = adapter(&case);
            if let Some(dev) = deviations().find(|d| d.case == id) {
                deviated += 1;
                match result {
                    Ok(()) => println!(
                        "DEVIATION NOT NEEDED {id}: passes upstream's expectation ({})",
                        dev.reason
                    ),
                    Err(_) => println!("deviation {id}: {}", dev.reason),
                }
                continue;
            }
            match result {
                Ok(()) => passed += 1,
                Err(why) => {
                    failed += 1;
                    println!("FAIL {id}: {}", why.replace('\n', "\n    "));
                }
            }
        }
    }
    for g in &unknown_groups {
        println!("not yet covered: group {g}");
    }
    println!(
        "conformance: {deviated} documented deviations, {} groups not yet covered",
        unknown_groups.len()
    );
    println!("{passed} passed, {failed} failed");
    assert_eq!(failed, 0, "{failed} conformance cases failed");
    assert!(
        unknown_groups.is_empty(),
        "case groups without an adapter: {unknown_groups:?}"
    );
}
