//! One PackageVariantSet with 10,000 explicit targets and a template of five
//! expressions, rendered and planned against its 10,000 existing children
//! (the steady state: nothing to write). Target: under 300 ms natively in
//! release, i.e. under 30 µs per target.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pv_core::api::PackageVariant;
use pv_core::variantset::{render, TargetObjects};

mod support;
use support::TARGETS;

fn bench(c: &mut Criterion) {
    let (pvs, revisions, repositories) = support::pvs_inputs(TARGETS);
    let objects = TargetObjects::new();
    // The existing children: what the first render created, as read back.
    let existing: Vec<PackageVariant> = render(&pvs, &revisions, &repositories, &objects, &[])
        .expect("render")
        .plan
        .create
        .into_iter()
        .map(|mut pv| {
            pv.metadata.resource_version = "1".into();
            pv
        })
        .collect();
    assert_eq!(existing.len(), TARGETS);
    let steady = render(&pvs, &revisions, &repositories, &objects, &existing).expect("render");
    assert!(steady.plan.is_noop());
    assert_eq!(steady.stats.compiled_expressions, 5);
    println!(
        "pvs: {} targets, {} expressions compiled, {} evaluations, estimated cost {} ({} per evaluation)",
        steady.stats.targets,
        steady.stats.compiled_expressions,
        steady.stats.evaluations,
        steady.stats.cost,
        steady.stats.cost / steady.stats.evaluations.max(1) as u64,
    );

    let mut group = c.benchmark_group("pvs");
    group.sample_size(20);
    group.throughput(Throughput::Elements(TARGETS as u64));
    group.bench_function("render_and_plan_10k_targets_against_10k_children", |b| {
        b.iter(|| {
            let out = render(&pvs, &revisions, &repositories, &objects, &existing).expect("render");
            assert!(out.plan.is_noop());
            out
        })
    });
    group.bench_function("render_and_plan_10k_targets_no_children", |b| {
        b.iter(|| render(&pvs, &revisions, &repositories, &objects, &[]).expect("render"))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
