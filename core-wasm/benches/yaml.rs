//! Parse + emit of a generated 1,000-resource (about 1 MB) package: the floor
//! every package edit pays.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pv_core::yaml;

/// One realistic Deployment with comments, quoted strings, a literal block,
/// a flow list and nested sequences.
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

fn package(n: usize) -> String {
    (0..n).map(resource).collect::<Vec<_>>().join("---\n")
}

fn bench(c: &mut Criterion) {
    let input = package(1000);
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
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
