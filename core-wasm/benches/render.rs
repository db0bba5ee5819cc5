//! kpt's render of the generated 1,000-resource (about 1 MB) package with a
//! pipeline of two builtins, set-namespace and set-labels, and with each
//! builtin alone, against the floor of parsing and writing the same files
//! once.
//!
//! Before criterion runs, the bench prints both figures and their ratio
//! from interleaved rounds in the same process (the fastest round of each,
//! and the median), so that the machine's drift cancels.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pv_core::render::{render, BuiltinsOnly, RenderOptions};
use pv_core::yaml;

mod support;
use support::{package, RENDER_KPTFILE};

/// Parses and writes every file once: the floor of any edit of the package.
fn parse_emit(files: &BTreeMap<String, String>) -> usize {
    files
        .values()
        .map(|text| yaml::reformat(text).map(|t| t.len()).unwrap_or(text.len()))
        .sum()
}

fn render_once(files: &BTreeMap<String, String>) -> usize {
    let out = render(files, &RenderOptions::default(), &mut BuiltinsOnly);
    assert!(out.failure.is_none(), "{:?}", out.failure);
    out.files.len()
}

/// The builtins measured one at a time, each with a config that makes it
/// walk (and, for most, edit) every resource of the package.
const BUILTINS: &[(&str, &[(&str, &str)])] = &[
    ("set-namespace", &[("namespace", "east")]),
    ("set-labels", &[("tier", "web")]),
    ("set-annotations", &[("team", "a")]),
    (
        "set-image",
        &[("name", "registry.example.com/sidecar"), ("newTag", "v3")],
    ),
    ("apply-setters", &[("replicas", "3")]),
    ("create-setters", &[("mode", "production")]),
    ("list-setters", &[]),
    (
        "search-replace",
        &[("by-path", "spec.replicas"), ("put-value", "5")],
    ),
    ("set-enforcement-action", &[("enforcementAction", "deny")]),
    ("upsert-resource", &[("key", "value")]),
    ("remove-local-config-resources", &[]),
    ("ensure-name-substring", &[("prepend", "prod-")]),
];

/// A Kptfile whose pipeline is `name` with `config` as its configMap.
fn kptfile_of(name: &str, config: &[(&str, &str)]) -> String {
    let mut text = format!(
        "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: bench\npipeline:\n  mutators:\n  - image: {name}:v0\n"
    );
    if !config.is_empty() {
        text.push_str("    configMap:\n");
        for (k, v) in config {
            text.push_str(&format!("      {k}: '{v}'\n"));
        }
    }
    text
}

/// Prints the render of `files` against parsing and writing them, from
/// `rounds` interleaved rounds (the fastest of each, and the median).
fn versus_floor(what: &str, files: &BTreeMap<String, String>, rounds: usize) {
    let (mut floor, mut pass) = (Vec::new(), Vec::new());
    let mut f = || {
        black_box(parse_emit(files));
    };
    let mut r = || {
        black_box(render_once(files));
    };
    f();
    r();
    for _ in 0..rounds {
        floor.push(once(&mut f));
        pass.push(once(&mut r));
    }
    floor.sort();
    pass.sort();
    let mid = floor.len() / 2;
    println!(
        "{what}: parse+emit {:.1} ms, render {:.1} ms, ratio {:.2} (median {:.2})",
        floor[0].as_secs_f64() * 1e3,
        pass[0].as_secs_f64() * 1e3,
        pass[0].as_secs_f64() / floor[0].as_secs_f64(),
        pass[mid].as_secs_f64() / floor[mid].as_secs_f64(),
    );
}

fn once(f: &mut impl FnMut()) -> Duration {
    let start = Instant::now();
    f();
    start.elapsed()
}

fn bench(c: &mut Criterion) {
    let mut files = package();
    files.insert("Kptfile".into(), RENDER_KPTFILE.into());
    let bytes: usize = files.values().map(String::len).sum();

    // The render does what it says: every Deployment gets the namespace and
    // both labels.
    let out = render(&files, &RenderOptions::default(), &mut BuiltinsOnly);
    assert!(out.failure.is_none(), "{:?}", out.failure);
    let apps = &out.files["apps/apps-00.yaml"];
    assert_eq!(apps.matches("namespace: east").count(), 20, "{apps}");
    assert!(apps.contains("tier: web"));

    versus_floor(
        &format!("render (set-namespace + set-labels) on {bytes} bytes"),
        &files,
        15,
    );
    // Each builtin alone against the same floor.
    for (name, config) in BUILTINS {
        let mut one = files.clone();
        one.insert("Kptfile".into(), kptfile_of(name, config));
        let out = render(&one, &RenderOptions::default(), &mut BuiltinsOnly);
        assert!(out.failure.is_none(), "{name}: {:?}", out.failure);
        versus_floor(&format!("render ({name})"), &one, 9);
    }

    let mut group = c.benchmark_group("render-1000-resources");
    group.throughput(Throughput::Bytes(bytes as u64));
    group.sample_size(20);
    group.bench_function("parse+emit", |b| b.iter(|| parse_emit(&files)));
    group.bench_function("render-set-namespace-set-labels", |b| {
        b.iter(|| render_once(&files))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
