//! Parse + emit of a generated 1,000-resource (about 1 MB) package: the floor
//! every package edit pays.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pv_core::yaml;

#[path = "reference/mod.rs"]
mod reference;
mod support;

fn bench(c: &mut Criterion) {
    let input = support::package_text(1000);
    let mut group = c.benchmark_group("yaml-1000-resources");
    group.throughput(Throughput::Bytes(input.len() as u64));
    group.sample_size(20);
    group.bench_function("parse", |b| {
        b.iter(|| yaml::parse_stream(&input).expect("parses"))
    });
    let docs = yaml::parse_stream(&input).expect("parses");
    group.bench_function("emit", |b| {
        b.iter(|| yaml::emit_stream(&docs, yaml::Format::Kyaml).expect("emits"))
    });
    group.bench_function("parse+emit", |b| {
        b.iter(|| yaml::reformat(&input).expect("round-trips"))
    });
    // The reference: serde_yaml (libyaml) reading the same stream into
    // values and writing them back, which drops every comment and style.
    group.bench_function("serde_yaml parse+emit (reference)", |b| {
        b.iter(|| reference::serde_yaml_round_trip(&input))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
