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
use pv_core::api::{Function, InjectionSelector, PackageContext, PackageVariant, Pipeline};
use pv_core::variant::mutate::{apply_mutations, PrrRef};
use pv_core::yaml;
use serde_json::{json, Value};

/// One realistic Deployment (the same as the YAML bench's).
fn resource(i: usize) -> String {
    format!(
        r#"# Deployment {i} of the generated package.
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app-{i}
  namespace: team-{ns}
  labels:
    app.kubernetes.io/name: app-{i}
    app.kubernetes.io/part-of: fleet # kept by every edit
  annotations:
    config.kubernetes.io/local-config: "false"
    internal.kpt.dev/upstream-identifier: "apps|Deployment|default|app-{i}"
spec:
  replicas: {replicas}
  selector:
    matchLabels:
      app: app-{i}
  template:
    metadata:
      labels:
        app: app-{i}
    spec:
      containers:
        # the main container
        - name: app
          image: "registry.example.com/app:v1.{i}"
          args: [--port, "8080", --verbose]
          ports:
            - containerPort: 8080
              protocol: TCP
          env:
            - name: MODE
              value: "production"
            - name: RETRIES
              value: "3"
          resources:
            limits:
              cpu: 500m
              memory: 256Mi
        - name: sidecar
          image: registry.example.com/sidecar:v2
          command:
            - /bin/sh
            - -c
            - |
              echo starting sidecar {i}
              exec sidecar --listen :9090
      volumes:
        - name: config
          configMap:
            name: app-{i}-config
"#,
        ns = i % 17,
        replicas = 1 + i % 5,
    )
}

const KPTFILE: &str = r#"apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: fleet
  annotations:
    config.kubernetes.io/local-config: "true"
info:
  description: A generated fleet package
pipeline:
  mutators:
    - image: ghcr.io/kptdev/krm-functions-catalog/set-labels:v0.2
      configMap:
        app: fleet
  validators:
    - image: ghcr.io/kptdev/krm-functions-catalog/kubeval:v0.3
"#;

const PACKAGE_CONTEXT: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: kptfile.kpt.dev
  annotations:
    config.kubernetes.io/local-config: "true"
data:
  name: fleet
"#;

fn injection_point(kind: &str, api_version: &str, name: &str, mode: &str) -> String {
    let field = if kind == "ConfigMap" { "data" } else { "spec" };
    format!(
        "apiVersion: {api_version}\nkind: {kind}\nmetadata:\n  name: {name}\n  annotations:\n    kpt.dev/config-injection: {mode}\n    config.kubernetes.io/local-config: \"true\"\n{field}:\n  value: default\n"
    )
}

/// The package's files: 50 files of 20 Deployments, three with an
/// injection point appended, the Kptfile and the package context.
fn package() -> BTreeMap<String, String> {
    let mut files = BTreeMap::new();
    for f in 0..50 {
        let mut docs: Vec<String> = (0..20).map(|j| resource(f * 20 + j)).collect();
        match f {
            7 => docs.push(injection_point("ConfigMap", "v1", "endpoints", "required")),
            23 => docs.push(injection_point(
                "Team",
                "hr.example.com/v1alpha1",
                "team",
                "required",
            )),
            41 => docs.push(injection_point("ConfigMap", "v1", "tuning", "optional")),
            _ => {}
        }
        files.insert(format!("apps/apps-{f:02}.yaml"), docs.join("---\n"));
    }
    files.insert("Kptfile".into(), KPTFILE.into());
    files.insert("package-context.yaml".into(), PACKAGE_CONTEXT.into());
    files.insert("README.md".into(), "# fleet\n".into());
    files
}

fn packagevariant() -> PackageVariant {
    let mut pv = PackageVariant::default();
    pv.metadata.name = "fleet-east".into();
    pv.metadata.namespace = "default".into();
    pv.spec.package_context = Some(PackageContext {
        data: [("region".to_string(), "us-east1".to_string())].into(),
        remove_keys: vec!["stale".into()],
    });
    pv.spec.pipeline = Some(Pipeline {
        mutators: vec![Function {
            name: "set-namespace".into(),
            image: "ghcr.io/kptdev/krm-functions-catalog/set-namespace:v0.4".into(),
            config_map: [("namespace".to_string(), "east".to_string())].into(),
            ..Function::default()
        }],
        validators: Vec::new(),
    });
    pv.spec.injectors = ["us-east1-endpoints", "dev-team", "us-east1-tuning"]
        .iter()
        .map(|n| InjectionSelector {
            name: n.to_string(),
            ..InjectionSelector::default()
        })
        .collect();
    pv
}

/// In-cluster objects of the namespace: 30 ConfigMaps and 10 Teams.
fn candidates() -> Vec<Value> {
    let mut out = Vec::new();
    for region in 0..10 {
        for what in ["endpoints", "tuning", "other"] {
            out.push(json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": format!("us-east{region}-{what}"), "namespace": "default"},
                "data": {"db": format!("db.us-east{region}.example.com"), "replicas": "3"}}));
        }
        out.push(json!({"apiVersion": "hr.example.com/v1alpha1", "kind": "Team",
            "metadata": {"name": if region == 1 { "dev-team".to_string() } else { format!("team-{region}") }},
            "spec": {"chargeCode": format!("cc-{region}"), "members": ["a", "b"]}}));
    }
    out
}

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
