//! The full mutation pass (package context, pipeline, config injection,
//! change detection) on a generated 1,000-resource (about 1 MB) package,
//! against the floor of parsing and writing the same files once.
//!
//! The package: 50 files of 20 Deployments, three of which also hold an
//! injection point, plus a Kptfile with a pipeline and `package-context.yaml`.
//! Before criterion runs, the bench prints both figures and their ratio
//! measured in the same process.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pv_core::variant::mutate::{apply_mutations, PrrRef};
use pv_core::yaml;

mod support;
use support::{candidates, package, packagevariant};

/// Parses and writes every file once: the floor of any edit of the package.
fn parse_emit(files: &BTreeMap<String, String>) -> usize {
    files
        .values()
        .map(|text| yaml::reformat(text).expect("round-trips").len())
        .sum()
}

fn time_per_iter(mut f: impl FnMut(), iters: u32) -> Duration {
    f();
    let start = Instant::now();
    for _ in 0..iters {
        f();
    }
    start.elapsed() / iters
}

fn bench(c: &mut Criterion) {
    let files = package();
    let pv = packagevariant();
    let cluster = candidates();
    let prr = PrrRef {
        namespace: "default",
        name: "fleet-east-draft",
    };
    let bytes: usize = files.values().map(String::len).sum();

    let outcome = apply_mutations(&pv, prr, &files, &cluster).expect("mutates");
    assert!(outcome.changed);
    assert_eq!(outcome.results.iter().filter(|p| p.injected).count(), 3);
    assert_eq!(
        outcome.changed_files,
        [
            "Kptfile",
            "apps/apps-07.yaml",
            "apps/apps-23.yaml",
            "apps/apps-41.yaml",
            "package-context.yaml"
        ]
    );

    let floor = time_per_iter(
        || {
            black_box(parse_emit(&files));
        },
        10,
    );
    let pass = time_per_iter(
        || {
            black_box(apply_mutations(&pv, prr, &files, &cluster).expect("mutates"));
        },
        10,
    );
    println!(
        "mutations on {bytes} bytes: parse+emit {floor:?}, mutation pass {pass:?}, ratio {:.2}",
        pass.as_secs_f64() / floor.as_secs_f64()
    );

    let mut group = c.benchmark_group("mutations-1000-resources");
    group.throughput(Throughput::Bytes(bytes as u64));
    group.sample_size(20);
    group.bench_function("parse+emit", |b| b.iter(|| parse_emit(&files)));
    group.bench_function("mutation-pass", |b| {
        b.iter(|| apply_mutations(&pv, prr, &files, &cluster).expect("mutates"))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
