//! Generated inputs shared by the benchmarks and the host's tests: a
//! realistic Deployment, the 1,000-resource package with a Kptfile, package
//! context and injection points plus its PackageVariant and in-cluster
//! candidates, and a PackageVariantSet with many explicit targets.
//! Included with `#[path]` (benchmarks and tests are separate crates).

#![allow(dead_code, missing_docs)]

use std::collections::BTreeMap;

use pv_core::api::{
    Function, InjectionSelector, ObjectMeta, PackageContext, PackageRevision, PackageVariant,
    Pipeline, Upstream,
};
use pv_core::variantset::types::{
    DownstreamTemplate, InjectionSelectorTemplate, MapExpr, PackageContextTemplate,
    RepositoryTarget,
};
use pv_core::variantset::{PackageVariantSet, PackageVariantTemplate, Repository, Target};
use serde_json::{json, Value};

/// `n` generated Deployments as one multi-document stream (about 1.3 KB each).
pub fn package_text(n: usize) -> String {
    (0..n).map(resource).collect::<Vec<_>>().join("---\n")
}

/// One realistic Deployment (the same as the YAML bench's).
pub fn resource(i: usize) -> String {
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

pub const KPTFILE: &str = r#"apiVersion: kpt.dev/v1
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

/// A Kptfile for [`package`] whose pipeline runs two builtins,
/// set-namespace and set-labels: the render benchmarks' pipeline.
pub const RENDER_KPTFILE: &str = r#"apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: fleet
  annotations:
    config.kubernetes.io/local-config: "true"
info:
  description: A generated fleet package
pipeline:
  mutators:
    - image: ghcr.io/kptdev/krm-functions-catalog/set-namespace:v0.4
      configMap:
        namespace: east
    - image: ghcr.io/kptdev/krm-functions-catalog/set-labels:v0.2
      configMap:
        app: fleet
        tier: web
"#;

pub const PACKAGE_CONTEXT: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: kptfile.kpt.dev
  annotations:
    config.kubernetes.io/local-config: "true"
data:
  name: fleet
"#;

pub fn injection_point(kind: &str, api_version: &str, name: &str, mode: &str) -> String {
    let field = if kind == "ConfigMap" { "data" } else { "spec" };
    format!(
        "apiVersion: {api_version}\nkind: {kind}\nmetadata:\n  name: {name}\n  annotations:\n    kpt.dev/config-injection: {mode}\n    config.kubernetes.io/local-config: \"true\"\n{field}:\n  value: default\n"
    )
}

/// The package's files: 50 files of 20 Deployments, three with an
/// injection point appended, the Kptfile and the package context.
pub fn package() -> BTreeMap<String, String> {
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

pub fn packagevariant() -> PackageVariant {
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
pub fn candidates() -> Vec<Value> {
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

/// Number of targets of the PackageVariantSet benchmarks.
pub const TARGETS: usize = 10_000;

pub fn meta(name: String, labels: &[(&str, String)]) -> ObjectMeta {
    ObjectMeta {
        name,
        namespace: "fleet".into(),
        labels: labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
        ..ObjectMeta::default()
    }
}

/// A set of `targets` explicit targets with a five-expression template, its
/// upstream and repositories.
pub fn pvs_inputs(targets: usize) -> (PackageVariantSet, Vec<PackageRevision>, Vec<Repository>) {
    let mut upstream = PackageRevision {
        metadata: meta(
            "blueprints-basens-v3".into(),
            &[("team", "platform".into())],
        ),
        ..PackageRevision::default()
    };
    upstream.spec.repository = "blueprints".into();
    upstream.spec.package_name = "basens".into();
    upstream.spec.workspace_name = "v3".into();
    upstream.spec.revision = 3;

    let repositories: Vec<Repository> = (0..targets)
        .map(|i| Repository {
            metadata: meta(
                format!("edge-{i:05}"),
                &[
                    ("region", format!("region-{}", i % 7)),
                    ("zone", format!("zone-{}", i % 3)),
                ],
            ),
            ..Repository::default()
        })
        .collect();

    let template = PackageVariantTemplate {
        downstream: Some(DownstreamTemplate {
            package_expr: Some("packageDefault + '-' + repository.labels['zone']".into()),
            ..DownstreamTemplate::default()
        }),
        labels: [("managed-by".to_string(), "fleet".to_string())].into(),
        label_exprs: vec![MapExpr {
            key: Some("region".into()),
            value_expr: Some("repository.labels['region']".into()),
            ..MapExpr::default()
        }],
        annotation_exprs: vec![MapExpr {
            key: Some("fleet.example.com/owner".into()),
            value_expr: Some("upstream.labels['team'] + '/' + target.repo".into()),
            ..MapExpr::default()
        }],
        package_context: Some(PackageContextTemplate {
            data_exprs: vec![MapExpr {
                key: Some("cluster".into()),
                value_expr: Some("repoDefault".into()),
                ..MapExpr::default()
            }],
            ..PackageContextTemplate::default()
        }),
        injectors: vec![InjectionSelectorTemplate {
            name_expr: Some("repository.name + '-endpoints'".into()),
            ..InjectionSelectorTemplate::default()
        }],
        ..PackageVariantTemplate::default()
    };
    let mut pvs = PackageVariantSet {
        metadata: meta("fleet".into(), &[]),
        ..PackageVariantSet::default()
    };
    pvs.metadata.uid = "5f7c6c1e-3b0a-4c1e-9d7e-0a1b2c3d4e5f".into();
    pvs.spec.upstream = Some(Upstream {
        repo: "blueprints".into(),
        package: "basens".into(),
        revision: 3,
        workspace_name: String::new(),
    });
    pvs.spec.targets = vec![Target {
        repositories: Some(
            repositories
                .iter()
                .map(|r| RepositoryTarget {
                    name: r.metadata.name.clone(),
                    package_names: vec![],
                })
                .collect(),
        ),
        template: Some(template),
        ..Target::default()
    }];
    (pvs, vec![upstream], repositories)
}
