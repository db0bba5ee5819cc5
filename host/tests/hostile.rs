//! Hostile inputs are stopped by the component's limits, within a second,
//! with a clear error, and the engine serves the next call.
//!
//! The core has its own limits on template expressions (size, cost); to
//! show that the sandbox holds even if those had a hole, the expression
//! tests lift them (`render-input.limits`), so only fuel and memory remain.

mod common;

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use porch_variants::component::types::{CelLimits, File, MutationInput, RenderError, RenderInput};
use porch_variants::component::{ComponentConfig, ComponentError, CoreComponent, Fuel, InputBytes};
use serde_json::json;

/// The sandbox must stop a hostile call within this.
const DEADLINE: Duration = Duration::from_secs(1);

/// No core limit on expressions.
const NO_CEL_LIMITS: CelLimits = CelLimits {
    max_source_len: u32::MAX,
    max_tokens: u32::MAX,
    max_nesting: u32::MAX,
    max_ast_nodes: u32::MAX,
    max_ast_depth: u32::MAX,
    max_cost: u64::MAX,
    max_result_len: u32::MAX,
    max_render_cost: u64::MAX,
};

/// One component with the default limits for all tests (compiled once).
fn component() -> &'static CoreComponent {
    static COMPONENT: OnceLock<CoreComponent> = OnceLock::new();
    COMPONENT.get_or_init(|| CoreComponent::new().expect("component loads"))
}

/// A set with one target whose label expression is `expr`.
fn render_input(expr: &str, limits: Option<CelLimits>) -> RenderInput {
    let pvs = json!({
        "apiVersion": "config.porch.kpt.dev/v1alpha2",
        "kind": "PackageVariantSet",
        "metadata": {"name": "hostile", "namespace": "ns", "uid": "u-1"},
        "spec": {
            "upstream": {"repo": "blueprints", "package": "basens", "revision": 1},
            "targets": [{
                "repositories": [{"name": "edge-1"}],
                "template": {"labelExprs": [{"key": "x", "valueExpr": expr}]},
            }],
        },
    });
    let upstream = json!({
        "metadata": {"name": "blueprints-basens-v1", "namespace": "ns"},
        "spec": {"repository": "blueprints", "packageName": "basens", "workspaceName": "v1",
                 "revision": 1, "lifecycle": "Published"},
    });
    let repo = json!({"metadata": {"name": "edge-1", "namespace": "ns"}});
    RenderInput {
        package_variant_set: pvs.to_string(),
        upstream_revisions: vec![upstream.to_string()],
        repositories: vec![repo.to_string()],
        target_kinds: Vec::new(),
        target_objects: Vec::new(),
        existing: Vec::new(),
        downstream_revisions: Vec::new(),
        limits,
    }
}

/// `n` comprehensions over a ten-element list, nested: 10^n evaluations.
fn exploding(n: usize) -> String {
    let ten = "[0,1,2,3,4,5,6,7,8,9]";
    let mut body = "repoDefault".to_string();
    for i in 0..n {
        body = format!("{ten}.map(v{i}, {body})");
    }
    format!("string(size({body}))")
}

/// After a stopped call, the same engine still answers.
fn still_serves(component: &CoreComponent) {
    assert!(component
        .version()
        .expect("version")
        .starts_with("porch-variants-core "));
    let out = component
        .render_package_variant_set(&render_input("repoDefault + '-ok'", None))
        .expect("no trap")
        .expect("renders");
    assert_eq!(out.stats.targets, 1);
}

fn assert_stopped(what: &str, result: Result<(), ComponentError>, elapsed: Duration) {
    let err = result.expect_err("the call must be stopped");
    println!(
        "{what}: stopped after {elapsed:?}: {err} (reason {})",
        err.reason()
    );
    assert!(
        matches!(
            err,
            ComponentError::OutOfFuel { .. } | ComponentError::MemoryLimit { .. }
        ),
        "{what}: {err:?}"
    );
    assert!(elapsed < DEADLINE, "{what}: took {elapsed:?}");
    assert!(
        err.to_string()
            .starts_with("the package-editing component "),
        "{err}"
    );
}

#[test]
fn the_core_refuses_an_exploding_template_by_itself() {
    let component = component();
    match component
        .render_package_variant_set(&render_input(&exploding(7), None))
        .expect("no trap")
    {
        Err(RenderError::Stalled(f)) => {
            assert_eq!(f.reason, "UnexpectedError");
            assert!(f.message.contains("too expensive"), "{}", f.message);
        }
        other => panic!("{other:?}"),
    }
}

/// An instance that served a call is kept for the next one and answers as
/// a fresh one does; an instance a hostile call was stopped in is dropped,
/// never kept.
#[test]
fn a_stopped_instance_is_never_kept_for_the_next_call() {
    // Its own component, so that no other test takes or returns instances.
    let component = CoreComponent::new().expect("component loads");
    let ok = || {
        component
            .render_package_variant_set(&render_input("repoDefault + '-ok'", None))
            .expect("no trap")
            .expect("renders")
    };
    assert_eq!(component.idle_instances(), 0);
    let fresh = ok();
    assert_eq!(component.idle_instances(), 1);
    let reused = ok();
    assert_eq!(component.idle_instances(), 1);
    assert_eq!(format!("{reused:?}"), format!("{fresh:?}"));
    // The hostile call takes the kept instance, and it is stopped in it.
    let input = render_input(&exploding(8), Some(NO_CEL_LIMITS));
    let started = Instant::now();
    let result = component.render_package_variant_set(&input).map(|_| ());
    assert_stopped("10^8 comprehension", result, started.elapsed());
    assert_eq!(component.idle_instances(), 0);
    still_serves(&component);
    assert_eq!(component.idle_instances(), 1);
    assert_eq!(format!("{:?}", ok()), format!("{fresh:?}"));
}

/// The fuel of every call is counted (what the controller's
/// `porch_variants_component_fuel_total` reports), a stopped call's too.
#[test]
fn the_fuel_of_every_call_is_counted() {
    let component = CoreComponent::new().expect("component loads");
    assert_eq!(component.fuel_used(), Some(0));
    component.version().expect("version");
    let after_version = component.fuel_used().expect("metered");
    assert!(after_version > 0);
    let input = render_input(&exploding(8), Some(NO_CEL_LIMITS));
    let budget = Fuel::default().budget(input.input_bytes());
    assert!(component.render_package_variant_set(&input).is_err());
    let after_stop = component.fuel_used().expect("metered");
    assert_eq!(
        after_stop - after_version,
        budget,
        "a stopped call used its whole budget"
    );
    let unmetered = CoreComponent::with_config(ComponentConfig {
        fuel: None,
        ..ComponentConfig::default()
    })
    .expect("component loads");
    unmetered.version().expect("version");
    assert_eq!(unmetered.fuel_used(), None);
}

#[test]
fn an_exploding_template_is_stopped_by_the_sandbox() {
    let component = component();
    let input = render_input(&exploding(8), Some(NO_CEL_LIMITS));
    let started = Instant::now();
    let result = component.render_package_variant_set(&input).map(|_| ());
    assert_stopped("10^8 comprehension", result, started.elapsed());
    still_serves(component);
}

#[test]
fn a_doubling_string_is_stopped_by_the_sandbox() {
    // `s + s` nested 40 deep, written with a comprehension so that the
    // source stays small: the value doubles each step.
    let mut expr = "repoDefault".to_string();
    for _ in 0..40 {
        expr = format!("[{expr}].map(s, s + s)[0]");
    }
    let component = component();
    let input = render_input(&expr, Some(NO_CEL_LIMITS));
    let started = Instant::now();
    let result = component.render_package_variant_set(&input).map(|_| ());
    assert_stopped("doubling string", result, started.elapsed());
    still_serves(component);
}

#[test]
fn a_100_mb_string_is_stopped_by_the_memory_limit() {
    // The limit grows with the input (192 MiB plus 6 bytes a byte), up to
    // the operator's cap: capped at the floor, a 100 MB input is stopped.
    let capped = CoreComponent::with_config(ComponentConfig {
        memory_cap: ComponentConfig::DEFAULT_MAX_MEMORY,
        ..ComponentConfig::default()
    })
    .expect("component loads");
    let component = &capped;
    let blob = "x".repeat(100 << 20);
    let input = MutationInput {
        package_variant: json!({"metadata": {"name": "pv", "namespace": "ns"}}).to_string(),
        namespace: "ns".into(),
        name: "prr".into(),
        files: vec![
            File {
                path: "Kptfile".into(),
                content: "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\n".into(),
            },
            File {
                path: "package-context.yaml".into(),
                content: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kptfile.kpt.dev\ndata:\n  name: p\n".into(),
            },
            File {
                path: "blob.yaml".into(),
                content: format!("data: {blob}\n"),
            },
        ],
        candidates: Vec::new(),
    };
    let started = Instant::now();
    let result = component.apply_mutations(&input).map(|_| ());
    assert_stopped("100 MB file", result, started.elapsed());
    still_serves(component);

    // The same string as a JSON argument.
    let pv = json!({"metadata": {"name": "pv", "namespace": "ns", "labels": {"blob": blob}}})
        .to_string();
    let started = Instant::now();
    let result = component.validate_package_variant(&pv).map(|_| ());
    assert_stopped("100 MB label", result, started.elapsed());
    still_serves(component);

    // Under the default cap the same file is a package like any other.
    let default = CoreComponent::new().expect("component loads");
    let outcome = default
        .apply_mutations(&input)
        .expect("within the grown limit");
    assert!(outcome.is_ok(), "{outcome:?}");
}

#[test]
fn the_memory_limit_grows_with_the_input_up_to_the_cap() {
    let config = ComponentConfig {
        memory_cap: 1 << 30,
        ..ComponentConfig::default()
    };
    assert_eq!(config.memory_limit(0), ComponentConfig::DEFAULT_MAX_MEMORY);
    assert_eq!(
        config.memory_limit(10 << 20),
        ComponentConfig::DEFAULT_MAX_MEMORY + 60 * (1 << 20)
    );
    assert_eq!(config.memory_limit(1 << 30), 1 << 30);
    let below_floor = ComponentConfig {
        memory_cap: 1 << 20,
        ..ComponentConfig::default()
    };
    assert_eq!(
        below_floor.memory_limit(1 << 30),
        ComponentConfig::DEFAULT_MAX_MEMORY
    );
}

#[test]
fn a_timeout_stops_what_fuel_would_not() {
    // No fuel: only the wall-clock deadline (epoch interruption) stops it.
    let component = CoreComponent::with_config(ComponentConfig {
        fuel: None,
        timeout: Some(Duration::from_millis(200)),
        ..ComponentConfig::default()
    })
    .expect("component loads");
    let input = render_input(&exploding(9), Some(NO_CEL_LIMITS));
    let started = Instant::now();
    let err = component
        .render_package_variant_set(&input)
        .map(|_| ())
        .expect_err("stopped");
    let elapsed = started.elapsed();
    println!("timeout: stopped after {elapsed:?}: {err}");
    assert!(
        matches!(
            err,
            ComponentError::Timeout { .. } | ComponentError::MemoryLimit { .. }
        ),
        "{err:?}"
    );
    assert!(elapsed < DEADLINE, "took {elapsed:?}");
    assert_eq!(
        err.reason(),
        if matches!(err, ComponentError::Timeout { .. }) {
            "ComponentTimeout"
        } else {
            "ComponentMemoryLimit"
        }
    );
    still_serves(&component);
}

#[test]
fn the_benchmark_workloads_fit_the_default_limits() {
    let component = component();
    let fuel = Fuel::default();
    let mutation = common::mutation_input();
    let mut instance = component.instantiate().expect("instance");
    let out = instance
        .apply_mutations(&mutation)
        .expect("within limits")
        .expect("mutates");
    assert!(out.changed);
    println!(
        "1,000-resource mutation: fuel {:?}, peak memory {} bytes",
        instance.fuel_used(),
        instance.peak_memory()
    );
    let used = instance.fuel_used().expect("fuel");
    assert!(used < fuel.budget(mutation.input_bytes()) / 2, "{used}");
    assert!(instance.peak_memory() < ComponentConfig::DEFAULT_MAX_MEMORY / 2);

    let render = common::render_input();
    let mut instance = component.instantiate().expect("instance");
    let out = instance
        .render_package_variant_set(&render)
        .expect("within limits")
        .expect("renders");
    assert_eq!(out.stats.targets, common::TARGETS as u32);
    println!(
        "10,000-target render: fuel {:?}, peak memory {} bytes",
        instance.fuel_used(),
        instance.peak_memory()
    );
    let used = instance.fuel_used().expect("fuel");
    assert!(used < fuel.budget(render.input_bytes()) / 2, "{used}");
    assert!(instance.peak_memory() < ComponentConfig::DEFAULT_MAX_MEMORY / 2);
}
