//! The component against the native core, on the same inputs, in one run:
//!
//! * the mutation pass of a generated 1,000-resource package
//!   (`apply-mutations`);
//! * the render of a 10,000-target PackageVariantSet against its 10,000
//!   existing children (`render-package-variant-set`);
//! * kpt's render of the same 1,000-resource package with a pipeline of two
//!   builtins, set-namespace and set-labels (`render-package`);
//! * start-up: compiling the component (no cache) and loading it from
//!   wasmtime's code cache;
//! * per call: a fresh instance from the pre-instantiated component (cold
//!   start), and a trivial export (`version`) on a fresh and on a reused
//!   instance.
//!
//! Native runs the same glue (`component::native`), so both sides convert
//! the same records. Before criterion runs, the bench prints the ratios
//! measured interleaved in this process (the machines' run-to-run noise is
//! larger than the effect).

#[path = "../tests/common/mod.rs"]
mod common;

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use porch_variants::component::{native, CodeCache, CodeSource, ComponentConfig, CoreComponent};

/// Mean time of `f` over `iters` runs after one warm-up.
fn time(mut f: impl FnMut(), iters: u32) -> Duration {
    f();
    let start = Instant::now();
    for _ in 0..iters {
        f();
    }
    start.elapsed() / iters
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Interleaved rounds of native and each variant of the component (the
/// default limits, no fuel, a deadline instead of fuel); each variant's
/// ratio to native of the fastest rounds (the least disturbed by other work
/// on the machine) and of the medians.
fn ratio(
    name: &str,
    rounds: u32,
    native: &mut dyn FnMut(),
    variants: &mut [(&str, &mut dyn FnMut())],
) {
    let mut n = Vec::new();
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); variants.len()];
    for _ in 0..rounds {
        n.push(time(&mut *native, 1));
        for ((_, f), t) in variants.iter_mut().zip(times.iter_mut()) {
            t.push(time(&mut **f, 1));
        }
    }
    n.sort();
    for t in &mut times {
        t.sort();
    }
    let mid = n.len() / 2;
    let mut line = format!("{name}: native {:.1} ms", ms(n[0]));
    for ((label, _), t) in variants.iter().zip(&times) {
        line.push_str(&format!(
            "; {label} {:.1} ms = {:.2}x (median {:.2}x)",
            ms(t[0]),
            t[0].as_secs_f64() / n[0].as_secs_f64(),
            t[mid].as_secs_f64() / n[mid].as_secs_f64(),
        ));
    }
    println!("{line}");
}

fn startup_report() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cached = || ComponentConfig {
        cache: CodeCache::Directory(dir.path().to_path_buf()),
        ..ComponentConfig::default()
    };
    let uncached = || ComponentConfig {
        cache: CodeCache::Disabled,
        ..ComponentConfig::default()
    };
    // The embedded component starts from the code compiled at build time;
    // a copy of its bytes is compiled (or read from the cache) as any other
    // component would be.
    let core = CoreComponent::with_config(uncached()).expect("loads");
    assert_eq!(core.startup().code, CodeSource::Precompiled);
    // A process loads the precompiled code once (later loads share it), so
    // each start-up is a fresh process: `porch-variants component info`,
    // which prints its load time.
    let mut precompiled: Vec<Duration> = (0..5).map(|_| process_startup()).collect();
    precompiled.sort();
    let copy = porch_variants::component::COMPONENT.to_vec();
    let compile = CoreComponent::from_bytes(&copy, uncached())
        .expect("loads")
        .startup()
        .load;
    let first = CoreComponent::from_bytes(&copy, cached())
        .expect("loads")
        .startup()
        .load;
    // The cache is written by a background worker; give it a moment.
    std::thread::sleep(Duration::from_millis(500));
    let mut hits: Vec<Duration> = (0..5)
        .map(|_| {
            CoreComponent::from_bytes(&copy, cached())
                .expect("loads")
                .startup()
                .load
        })
        .collect();
    hits.sort();
    println!(
        "start-up: precompiled {:.1} ms (no code cache, median of 5); compile {:.0} ms (no cache), {:.0} ms (cache miss), {:.1} ms (cache hit, median of 5)",
        ms(precompiled[2]),
        ms(compile),
        ms(first),
        ms(hits[2])
    );
}

/// The load time `porch-variants component info` reports in a fresh
/// process (no code cache configured: the default limits never use it).
fn process_startup() -> Duration {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_porch-variants"))
        .args(["component", "info"])
        .output()
        .expect("porch-variants runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let ms: f64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("load:"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no load time in: {stdout}"));
    Duration::from_secs_f64(ms / 1e3)
}

/// The reports printed before criterion runs: start-up, and the ratios
/// measured interleaved.
fn report(
    component: &CoreComponent,
    mutation: &porch_variants::component::types::MutationInput,
    render: &porch_variants::component::types::RenderInput,
    package: &porch_variants::component::types::PackageRenderInput,
) {
    startup_report();
    let unmetered = CoreComponent::with_config(ComponentConfig {
        fuel: None,
        ..ComponentConfig::default()
    })
    .expect("component loads");
    let deadline = CoreComponent::with_config(ComponentConfig {
        fuel: None,
        timeout: Some(Duration::from_secs(60)),
        ..ComponentConfig::default()
    })
    .expect("component loads");
    let mutate = |c: &CoreComponent| {
        black_box(
            c.apply_mutations(mutation)
                .expect("no trap")
                .expect("mutates"),
        );
    };
    let render_with = |c: &CoreComponent| {
        black_box(
            c.render_package_variant_set(render)
                .expect("no trap")
                .expect("renders"),
        );
    };
    ratio(
        "apply-mutations, 1,000 resources",
        11,
        &mut || {
            black_box(native::apply_mutations(mutation).expect("mutates"));
        },
        &mut [
            ("component", &mut || mutate(component)),
            ("without fuel", &mut || mutate(&unmetered)),
            ("deadline instead of fuel", &mut || mutate(&deadline)),
        ],
    );
    ratio(
        "render-package-variant-set, 10,000 targets",
        7,
        &mut || {
            black_box(native::render_package_variant_set(render).expect("renders"));
        },
        &mut [
            ("component", &mut || render_with(component)),
            ("without fuel", &mut || render_with(&unmetered)),
            ("deadline instead of fuel", &mut || render_with(&deadline)),
        ],
    );
    let render_package_with = |c: &CoreComponent| {
        black_box(c.render_package(package).expect("no trap"));
    };
    ratio(
        "render-package (set-namespace + set-labels), 1,000 resources",
        11,
        &mut || {
            black_box(native::render_package(package));
        },
        &mut [
            ("component", &mut || render_package_with(component)),
            ("without fuel", &mut || render_package_with(&unmetered)),
            ("deadline instead of fuel", &mut || {
                render_package_with(&deadline)
            }),
        ],
    );
}

/// The mutation bench's package with a Kptfile whose pipeline runs two
/// builtins.
fn package_render_input(
    mutation: &porch_variants::component::types::MutationInput,
) -> porch_variants::component::types::PackageRenderInput {
    use porch_variants::component::types::{File, PackageRenderInput, PackageRenderOptions};
    let mut files: Vec<File> = mutation
        .files
        .iter()
        .filter(|f| f.path != "Kptfile")
        .cloned()
        .collect();
    files.push(File {
        path: "Kptfile".into(),
        content: common::RENDER_KPTFILE.into(),
    });
    PackageRenderInput {
        files,
        options: PackageRenderOptions {
            allow_exec: false,
            image_prefix: pv_core::render::image::DEFAULT_PREFIX.into(),
            root_path: "/".into(),
            eval: None,
            function_configs: None,
        },
        answers: Vec::new(),
    }
}

fn bench(c: &mut Criterion) {
    let component = CoreComponent::new().expect("component loads");
    let mutation = common::mutation_input();
    let render = common::render_input();
    assert_eq!(
        native::apply_mutations(&mutation),
        component.apply_mutations(&mutation).expect("no trap")
    );
    let native_render = native::render_package_variant_set(&render).expect("renders");
    let package = package_render_input(&mutation);
    assert_eq!(
        format!("{:?}", native::render_package(&package)),
        format!("{:?}", component.render_package(&package).expect("no trap")),
        "the component renders as native does"
    );
    assert!(native_render.plan.create.is_empty() && native_render.plan.update.is_empty());

    // `cargo bench -- --test` (CI) runs each benchmark once: skip the
    // reports, which compile the component twice and time many rounds.
    let quick = std::env::args().any(|a| a == "--test");
    if !quick {
        report(&component, &mutation, &render, &package);
    }

    let mut group = c.benchmark_group("component");
    group.sample_size(10);
    group.bench_function("apply_mutations_1k_resources/native", |b| {
        b.iter(|| native::apply_mutations(&mutation).expect("mutates"))
    });
    group.bench_function("apply_mutations_1k_resources/component", |b| {
        b.iter(|| {
            component
                .apply_mutations(&mutation)
                .expect("no trap")
                .expect("mutates")
        })
    });
    group.bench_function("render_pvs_10k_targets/native", |b| {
        b.iter(|| native::render_package_variant_set(&render).expect("renders"))
    });
    group.bench_function("render_pvs_10k_targets/component", |b| {
        b.iter(|| {
            component
                .render_package_variant_set(&render)
                .expect("no trap")
                .expect("renders")
        })
    });
    group.bench_function("render_package_1k_resources/native", |b| {
        b.iter(|| native::render_package(&package))
    });
    group.bench_function("render_package_1k_resources/component", |b| {
        b.iter(|| component.render_package(&package).expect("no trap"))
    });
    group.finish();

    let mut group = c.benchmark_group("component_overhead");
    group.bench_function("instantiate", |b| {
        b.iter(|| component.instantiate().expect("instance"))
    });
    group.bench_function("version_fresh_instance", |b| {
        b.iter(|| component.version().expect("version"))
    });
    // Each call on a reused instance gets its own fuel and deadline.
    let mut instance = component.instantiate().expect("instance");
    group.bench_function("version_reused_instance", |b| {
        b.iter(|| instance.version().expect("version"))
    });
    group.bench_function("version/native", |b| b.iter(native::version));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
