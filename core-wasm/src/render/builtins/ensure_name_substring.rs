//! The catalog's `ensure-name-substring` function
//! (`functions/go/ensure-name-substring`): every resource's name gets a
//! prefix or suffix unless it already holds the substring, and the
//! references to renamed resources follow them (kustomize's name-reference
//! table, below), as does a `config.kubernetes.io/depends-on` annotation
//! naming a resource of the package.
//!
//! The config is a ConfigMap with one key (`prepend` or `append`, the
//! substring its value) or an `fn.kpt.dev/v1alpha1 EnsureNameSubstring`
//! (`substring`, `editMode`, `additionalNameFields`, or the deprecated
//! `fieldSpecs`). Namespaces, CRDs, APIServices and Kptfiles keep their
//! names.
//!
//! Unlike the catalog's image at the conformance commit, which dropped
//! kpt's path annotations and so moved every file (the Kptfile included)
//! to `kind_name.yaml`, resources stay in their files, edited in place
//! (the catalog's later fix keeps the annotations too).

use std::collections::{HashMap, HashSet};

use crate::yaml::{Kind, Node};

use super::set_annotations::data_map;
use super::{framework_error, FnInput, FnOutput};

const FN_CONFIG_API_VERSION: &str = "fn.kpt.dev/v1alpha1";
const FN_CONFIG_KIND: &str = "EnsureNameSubstring";
const DEPENDS_ON: &str = "config.kubernetes.io/depends-on";
const NAME_PATH: &str = "metadata/name";

/// A group/version/kind selector; an empty part matches anything
/// (kustomize's `Gvk.IsSelected`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Gvk {
    group: String,
    version: String,
    kind: String,
}

impl Gvk {
    fn of(root: &Node) -> Gvk {
        let api_version = root.get_str(&["apiVersion"]).unwrap_or_default();
        let (group, version) = match api_version.rsplit_once('/') {
            Some((g, v)) => (g.to_string(), v.to_string()),
            None => (String::new(), api_version.to_string()),
        };
        Gvk {
            group,
            version,
            kind: root.get_str(&["kind"]).unwrap_or_default().to_string(),
        }
    }

    fn selected_by(&self, selector: &Gvk) -> bool {
        (selector.group.is_empty() || self.group == selector.group)
            && (selector.version.is_empty() || self.version == selector.version)
            && (selector.kind.is_empty() || self.kind == selector.kind)
    }
}

fn gvk(group: &str, version: &str, kind: &str) -> Gvk {
    Gvk {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
    }
}

/// A field to edit in the resources a selector picks (kustomize's
/// `types.FieldSpec`; `path` is slash-separated, `\/` a slash in a key).
#[derive(Debug, Clone, PartialEq, Eq)]
struct FieldSpec {
    gvk: Gvk,
    path: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EditMode {
    Prepend,
    Append,
    /// An `editMode` the function does not know: nothing is edited.
    Other,
}

#[derive(Debug)]
struct Config {
    substring: String,
    mode: EditMode,
    fields: Vec<FieldSpec>,
}

/// Runs `ensure-name-substring` on the items.
pub fn run(input: FnInput) -> FnOutput {
    let mut items = input.items;
    let config = match parse_config(input.function_config.as_ref()) {
        Ok(c) => c,
        Err(e) => {
            return framework_error(items, "failed to load the `functionConfig`", e);
        }
    };
    if let Err(e) = transform(&mut items, &config) {
        return framework_error(items, "failed to transform name substring", e);
    }
    FnOutput {
        items,
        ..FnOutput::default()
    }
}

fn parse_config(config: Option<&Node>) -> Result<Config, String> {
    let mut c = Config {
        substring: String::new(),
        mode: EditMode::Prepend,
        fields: vec![FieldSpec {
            gvk: Gvk::default(),
            path: NAME_PATH.into(),
        }],
    };
    let Some(config) = config else {
        return Err("substring must not be empty".into());
    };
    let root = config.root();
    let api_version = root.get_str(&["apiVersion"]).unwrap_or_default();
    let kind = root.get_str(&["kind"]).unwrap_or_default();
    match (api_version, kind) {
        ("v1", "ConfigMap") => {
            let data = data_map(root);
            if data.len() != 1 {
                return Err(format!(
                    "only 1 entry is allowed in the ConfigMap, but got: {}",
                    data.len()
                ));
            }
            for (k, v) in data {
                c.mode = match k.as_str() {
                    "prepend" => EditMode::Prepend,
                    "append" => EditMode::Append,
                    _ => {
                        return Err(format!(
                            "unknown editMode: {k}, only prepend and append are allowed"
                        ))
                    }
                };
                c.substring = v;
            }
        }
        (FN_CONFIG_API_VERSION, FN_CONFIG_KIND) => {
            c.substring = root.get_str(&["substring"]).unwrap_or_default().into();
            c.mode = match root.get_str(&["editMode"]).unwrap_or_default() {
                "" | "prepend" => EditMode::Prepend,
                "append" => EditMode::Append,
                _ => EditMode::Other,
            };
            let additional = field_specs(root, "additionalNameFields")?;
            let legacy = field_specs(root, "fieldSpecs")?;
            if additional.is_some() && legacy.is_some() {
                return Err(
                    "`fieldSpecs` has been deprecated, please rename it to `additionalNameFields`"
                        .into(),
                );
            }
            c.fields.extend(additional.or(legacy).unwrap_or_default());
        }
        _ => {
            let got = Gvk::of(root);
            return Err(format!(
                "function config must be either /v1, Kind=ConfigMap or \
                 {FN_CONFIG_API_VERSION}, Kind={FN_CONFIG_KIND}, but we got: {}/{}, Kind={}",
                got.group, got.version, got.kind
            ));
        }
    }
    if c.substring.is_empty() {
        return Err("substring must not be empty".into());
    }
    Ok(c)
}

/// A list of field specs at `key`, `None` when absent.
fn field_specs(root: &Node, key: &str) -> Result<Option<Vec<FieldSpec>>, String> {
    let Some(list) = root.get(key) else {
        return Ok(None);
    };
    if list.is_null() {
        return Ok(None);
    }
    if list.kind != Kind::Sequence {
        return Err(format!("`{key}` must be a list of field specs"));
    }
    let mut specs = Vec::with_capacity(list.content.len());
    for (i, item) in list.content.iter().enumerate() {
        if item.kind != Kind::Mapping {
            return Err(format!("`{key}[{i}]` must be a mapping"));
        }
        let field = |k: &str| item.get_str(&[k]).unwrap_or_default();
        specs.push(FieldSpec {
            gvk: gvk(field("group"), field("version"), field("kind")),
            path: field("path").into(),
        });
    }
    Ok(Some(specs))
}

/// Kinds whose names are never changed (the function's skip list).
fn skipped(id: &Gvk) -> bool {
    [
        gvk("", "", "CustomResourceDefinition"),
        gvk("apiregistration.k8s.io", "", "APIService"),
        gvk("", "", "Namespace"),
        gvk("kpt.dev", "", "Kptfile"),
    ]
    .iter()
    .any(|s| id.selected_by(s))
}

/// What name-reference fixing needs to know of one resource.
#[derive(Debug, Clone)]
struct Target {
    gvk: Gvk,
    namespace: String,
    cluster_scoped: bool,
    old_name: String,
    new_name: String,
}

fn transform(items: &mut [Node], config: &Config) -> Result<(), String> {
    // The resources by (group, kind, name) before any change, for the
    // depends-on annotation.
    let present: HashSet<(String, String, String)> = items
        .iter()
        .map(|item| {
            let root = item.root();
            let id = Gvk::of(root);
            (id.group, id.kind, name_of(root).to_string())
        })
        .collect();
    let mut targets = Vec::with_capacity(items.len());
    for item in items.iter_mut() {
        let root = item.root_mut();
        let id = Gvk::of(root);
        let old_name = name_of(root).to_string();
        if !skipped(&id) {
            for fs in &config.fields {
                if !id.selected_by(&fs.gvk) {
                    continue;
                }
                if field_contains(root, &fs.path, &config.substring) {
                    continue;
                }
                let edit = |value: &str| match config.mode {
                    EditMode::Prepend => Some(format!("{}{value}", config.substring)),
                    EditMode::Append => Some(format!("{value}{}", config.substring)),
                    EditMode::Other => None,
                };
                for_each_field(root, &split_path(&fs.path), &mut |node| {
                    if node.kind == Kind::Scalar {
                        if let Some(v) = edit(&node.value) {
                            set_string(node, v);
                        }
                    }
                    Ok(())
                })?;
                update_depends_on(root, config, &present);
            }
        }
        let namespace = root
            .get_str(&["metadata", "namespace"])
            .unwrap_or_default()
            .to_string();
        let api_version = root.get_str(&["apiVersion"]).unwrap_or_default();
        let cluster_scoped =
            super::set_namespace::builtin_scope(api_version, &id.kind) == Some(false);
        targets.push(Target {
            namespace: effective_namespace(&namespace, cluster_scoped),
            cluster_scoped,
            new_name: name_of(root).to_string(),
            old_name,
            gvk: id,
        });
    }
    fix_name_references(items, &targets)
}

fn name_of(root: &Node) -> &str {
    root.get_str(&["metadata", "name"]).unwrap_or_default()
}

/// kustomize's effective namespace: `default` for a namespaced resource
/// without one.
fn effective_namespace(namespace: &str, cluster_scoped: bool) -> String {
    match (cluster_scoped, namespace) {
        (true, _) => String::new(),
        (false, "") => "default".into(),
        (false, ns) => ns.into(),
    }
}

/// Whether the field at `path` already holds `substring` (the function's
/// idempotency check: the name, or the YAML text of another field).
fn field_contains(root: &Node, path: &str, substring: &str) -> bool {
    if path == NAME_PATH {
        return name_of(root).contains(substring);
    }
    let mut node = root;
    for key in split_path(path) {
        match node.get(&key).filter(|_| node.kind == Kind::Mapping) {
            Some(n) => node = n,
            None => return false,
        }
    }
    match node.kind {
        Kind::Scalar => node.value.contains(substring),
        _ => crate::yaml::to_string(node)
            .map(|text| text.contains(substring))
            .unwrap_or(false),
    }
}

/// A field spec's path as keys (`/` separates, `\/` is a slash in a key).
fn split_path(path: &str) -> Vec<String> {
    let mut keys = vec![String::new()];
    let mut chars = path.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'/') => {
                chars.next();
                keys.last_mut().expect("one key").push('/');
            }
            '/' => keys.push(String::new()),
            c => keys.last_mut().expect("one key").push(c),
        }
    }
    keys
}

/// Calls `f` on each node at `keys` below `node`, going through every item
/// of a list on the way (kustomize's field-spec walk); absent fields are
/// skipped, nothing is created.
fn for_each_field(
    node: &mut Node,
    keys: &[String],
    f: &mut dyn FnMut(&mut Node) -> Result<(), String>,
) -> Result<(), String> {
    match node.kind {
        Kind::Sequence if !keys.is_empty() => {
            for item in node.content.iter_mut() {
                for_each_field(item, keys, f)?;
            }
            Ok(())
        }
        _ => match keys.split_first() {
            None => f(node),
            Some((key, rest)) => {
                if node.kind != Kind::Mapping {
                    return Ok(());
                }
                match node.get_mut(key) {
                    Some(child) => for_each_field(child, rest, f),
                    None => Ok(()),
                }
            }
        },
    }
}

/// Sets a scalar to a string, keeping its comments and quoting style (a
/// plain one is quoted when the text would read back as another type).
fn set_string(node: &mut Node, value: String) {
    if node.value != value {
        node.value = value;
        node.tag = "!!str".into();
    }
}

/// The function's `updateDependsOnAnnotation`: a depends-on annotation
/// naming a resource of the package (`<group>/namespaces/<ns>/<kind>/<name>`
/// or `<group>/<kind>/<name>`) gets the substring added to that name.
fn update_depends_on(
    root: &mut Node,
    config: &Config,
    present: &HashSet<(String, String, String)>,
) {
    let Some(value) = root
        .get_str(&["metadata", "annotations", DEPENDS_ON])
        .map(str::to_string)
    else {
        return;
    };
    let mut segments: Vec<String> = value.split('/').map(str::to_string).collect();
    let word = |s: &String| {
        s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
    };
    let (kind_at, name_at) =
        if segments.len() == 5 && segments[1] == "namespaces" && segments.iter().all(word) {
            (3, 4)
        } else if segments.len() == 3 && segments.iter().all(word) {
            (1, 2)
        } else {
            return;
        };
    let key = (
        segments[0].clone(),
        segments[kind_at].clone(),
        segments[name_at].clone(),
    );
    if !present.contains(&key) {
        return;
    }
    segments[name_at] = match config.mode {
        EditMode::Prepend => format!("{}{}", config.substring, segments[name_at]),
        EditMode::Append => format!("{}{}", segments[name_at], config.substring),
        EditMode::Other => return,
    };
    let new = segments.join("/");
    if let Some(annotations) = root
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
    {
        if let Some(node) = annotations.get_mut(DEPENDS_ON) {
            set_string(node, new);
        }
    }
}

/// One row of kustomize's name-reference table: resources of `target`'s
/// kind are referred to by name at `path` in resources `referrer` selects.
struct BackReference {
    target: Gvk,
    referrer: Gvk,
    path: String,
}

/// kustomize's default name-reference table (`namereference` of its
/// builtin plugin configs), as the function's copy lists it.
fn name_references() -> Vec<BackReference> {
    let mut rows = Vec::new();
    let mut add = |target: &Gvk, referrer: Gvk, path: &str| {
        rows.push(BackReference {
            target: target.clone(),
            referrer,
            path: path.into(),
        })
    };
    // Where a pod spec lives in each workload kind, and its version.
    let pod_holders: [(&str, &str, &str); 8] = [
        ("Pod", "v1", "spec/"),
        ("PodTemplate", "", "template/spec/"),
        ("Deployment", "", "spec/template/spec/"),
        ("ReplicaSet", "", "spec/template/spec/"),
        ("DaemonSet", "", "spec/template/spec/"),
        ("StatefulSet", "", "spec/template/spec/"),
        ("Job", "", "spec/template/spec/"),
        ("CronJob", "", "spec/jobTemplate/spec/template/spec/"),
    ];
    let workload = |target: &Gvk, paths: &[&str], add: &mut dyn FnMut(&Gvk, Gvk, &str)| {
        for (kind, version, prefix) in pod_holders {
            for p in paths {
                add(target, gvk("", version, kind), &format!("{prefix}{p}"));
            }
        }
    };
    for kind in [
        "Deployment",
        "ReplicationController",
        "ReplicaSet",
        "StatefulSet",
    ] {
        add(
            &gvk("", "", kind),
            gvk("", "", "HorizontalPodAutoscaler"),
            "spec/scaleTargetRef/name",
        );
    }
    let config_map = gvk("", "v1", "ConfigMap");
    workload(
        &config_map,
        &[
            "volumes/configMap/name",
            "containers/env/valueFrom/configMapKeyRef/name",
            "initContainers/env/valueFrom/configMapKeyRef/name",
            "containers/envFrom/configMapRef/name",
            "initContainers/envFrom/configMapRef/name",
            "volumes/projected/sources/configMap/name",
        ],
        &mut add,
    );
    add(
        &config_map,
        gvk("", "", "Node"),
        "spec/configSource/configMap",
    );
    add(&config_map, gvk("", "", "Role"), "rules/resourceNames");
    add(
        &config_map,
        gvk("", "", "ClusterRole"),
        "rules/resourceNames",
    );
    add(
        &config_map,
        gvk("", "", "Ingress"),
        "metadata/annotations/nginx.ingress.kubernetes.io\\/fastcgi-params-configmap",
    );
    let secret = gvk("", "v1", "Secret");
    workload(
        &secret,
        &[
            "volumes/secret/secretName",
            "containers/env/valueFrom/secretKeyRef/name",
            "initContainers/env/valueFrom/secretKeyRef/name",
            "containers/envFrom/secretRef/name",
            "initContainers/envFrom/secretRef/name",
            "imagePullSecrets/name",
            "volumes/projected/sources/secret/name",
        ],
        &mut add,
    );
    for (kind, path) in [
        ("Ingress", "spec/tls/secretName"),
        (
            "Ingress",
            "metadata/annotations/ingress.kubernetes.io\\/auth-secret",
        ),
        (
            "Ingress",
            "metadata/annotations/nginx.ingress.kubernetes.io\\/auth-secret",
        ),
        (
            "Ingress",
            "metadata/annotations/nginx.ingress.kubernetes.io\\/auth-tls-secret",
        ),
        ("ServiceAccount", "imagePullSecrets/name"),
        ("StorageClass", "parameters/secretName"),
        ("StorageClass", "parameters/adminSecretName"),
        ("StorageClass", "parameters/userSecretName"),
        ("StorageClass", "parameters/secretRef"),
        ("Role", "rules/resourceNames"),
        ("ClusterRole", "rules/resourceNames"),
        ("PersistentVolume", "spec/azureFile/secretName"),
    ] {
        add(&secret, gvk("", "", kind), path);
    }
    add(
        &secret,
        gvk("serving.knative.dev", "v1", "Service"),
        "spec/template/spec/containers/env/valueFrom/secretKeyRef/name",
    );
    let service = gvk("", "v1", "Service");
    for (group, kind, path) in [
        ("apps", "StatefulSet", "spec/serviceName"),
        ("", "Ingress", "spec/rules/http/paths/backend/serviceName"),
        ("", "Ingress", "spec/backend/serviceName"),
        ("", "Ingress", "spec/rules/http/paths/backend/service/name"),
        ("", "Ingress", "spec/defaultBackend/service/name"),
        ("apiregistration.k8s.io", "APIService", "spec/service/name"),
        (
            "admissionregistration.k8s.io",
            "ValidatingWebhookConfiguration",
            "webhooks/clientConfig/service",
        ),
        (
            "admissionregistration.k8s.io",
            "MutatingWebhookConfiguration",
            "webhooks/clientConfig/service",
        ),
    ] {
        add(&service, gvk(group, "", kind), path);
    }
    let rbac = "rbac.authorization.k8s.io";
    add(
        &gvk(rbac, "", "Role"),
        gvk(rbac, "", "RoleBinding"),
        "roleRef/name",
    );
    for kind in ["RoleBinding", "ClusterRoleBinding"] {
        add(
            &gvk(rbac, "", "ClusterRole"),
            gvk(rbac, "", kind),
            "roleRef/name",
        );
    }
    let service_account = gvk("", "v1", "ServiceAccount");
    for kind in ["RoleBinding", "ClusterRoleBinding"] {
        add(&service_account, gvk(rbac, "", kind), "subjects");
    }
    let spec_holders: [(&str, &str); 7] = [
        ("Pod", "spec/"),
        ("StatefulSet", "spec/template/spec/"),
        ("Deployment", "spec/template/spec/"),
        ("ReplicationController", "spec/template/spec/"),
        ("CronJob", "spec/jobTemplate/spec/template/spec/"),
        ("Job", "spec/template/spec/"),
        ("DaemonSet", "spec/template/spec/"),
    ];
    for (kind, prefix) in spec_holders {
        add(
            &service_account,
            gvk("", "", kind),
            &format!("{prefix}serviceAccountName"),
        );
    }
    let claim = gvk("", "v1", "PersistentVolumeClaim");
    for (kind, prefix) in spec_holders {
        add(
            &claim,
            gvk("", "", kind),
            &format!("{prefix}volumes/persistentVolumeClaim/claimName"),
        );
    }
    let volume = gvk("", "v1", "PersistentVolume");
    add(
        &volume,
        gvk("", "", "PersistentVolumeClaim"),
        "spec/volumeName",
    );
    add(&volume, gvk("", "", "ClusterRole"), "rules/resourceNames");
    let storage_class = gvk("storage.k8s.io", "v1", "StorageClass");
    for (kind, path) in [
        ("PersistentVolume", "spec/storageClassName"),
        ("PersistentVolumeClaim", "spec/storageClassName"),
        (
            "StatefulSet",
            "spec/volumeClaimTemplates/spec/storageClassName",
        ),
    ] {
        add(&storage_class, gvk("", "", kind), path);
    }
    let priority_class = gvk("scheduling.k8s.io", "v1", "PriorityClass");
    for (kind, prefix) in spec_holders {
        add(
            &priority_class,
            gvk("", "", kind),
            &format!("{prefix}priorityClassName"),
        );
    }
    // kustomize's table writes this group with its version, so it never
    // matches; kept as it is.
    add(
        &gvk("networking.k8s.io/v1", "v1", "IngressClass"),
        gvk("", "", "Ingress"),
        "spec/ingressClassName",
    );
    let admission = "admissionregistration.k8s.io";
    add(
        &gvk(admission, "", "ValidatingAdmissionPolicy"),
        gvk(admission, "", "ValidatingAdmissionPolicyBinding"),
        "spec/policyName",
    );
    rows
}

/// kustomize's `FixNameBackReference`: each field that names a renamed
/// resource of the package (same namespace, or a cluster-scoped target, or
/// any target from a cluster-scoped referrer) is set to its new name.
fn fix_name_references(items: &mut [Node], targets: &[Target]) -> Result<(), String> {
    if targets.iter().all(|t| t.old_name == t.new_name) {
        return Ok(());
    }
    // Each row's possible targets by old name, computed once: a referrer
    // then looks up the names its fields hold instead of scanning the
    // package (a package of n resources costs n, not n squared). Rows
    // none of whose targets was renamed are dropped.
    let table = name_references();
    let rows: Vec<(&BackReference, Vec<String>, ByName<'_>)> = table
        .iter()
        .filter_map(|row| {
            let mut by_name: ByName<'_> = HashMap::new();
            let mut renamed = false;
            for t in targets.iter().filter(|t| t.gvk.selected_by(&row.target)) {
                renamed |= t.old_name != t.new_name;
                by_name.entry(t.old_name.as_str()).or_default().push(t);
            }
            renamed.then(|| (row, split_path(&row.path), by_name))
        })
        .collect();
    for (i, item) in items.iter_mut().enumerate() {
        let referrer = &targets[i];
        for (row, keys, by_name) in rows
            .iter()
            .filter(|(r, _, _)| referrer.gvk.selected_by(&r.referrer))
        {
            let subjects = row.path == "subjects";
            let refs = Refs { by_name, referrer };
            for_each_field(item.root_mut(), keys, &mut |node| match node.kind {
                Kind::Scalar => refs.set(node, None),
                Kind::Sequence => {
                    for entry in node.content.iter_mut() {
                        match entry.kind {
                            Kind::Scalar => refs.set(entry, None)?,
                            Kind::Mapping => refs.set_mapping(entry, subjects)?,
                            _ => {}
                        }
                    }
                    Ok(())
                }
                Kind::Mapping => refs.set_mapping(node, subjects),
                _ => Ok(()),
            })?;
        }
    }
    Ok(())
}

/// A row's possible targets by their old name.
type ByName<'t> = HashMap<&'t str, Vec<&'t Target>>;

/// What one referrer's fields may name through one row of the table.
struct Refs<'a, 't> {
    by_name: &'a ByName<'t>,
    referrer: &'a Target,
}

impl Refs<'_, '_> {
    /// Sets a name scalar to the new name of the one target whose old name
    /// it holds, in reach of the referrer (same namespace, a cluster-scoped
    /// target, or any from a cluster-scoped referrer) and in `namespace`
    /// when given.
    fn set(&self, node: &mut Node, namespace: Option<&str>) -> Result<(), String> {
        let Some(found) = self.by_name.get(node.value.as_str()) else {
            return Ok(());
        };
        let referrer = self.referrer;
        let mut names: Vec<&str> = found
            .iter()
            .filter(|t| {
                referrer.cluster_scoped || t.cluster_scoped || t.namespace == referrer.namespace
            })
            .filter(|t| namespace.is_none_or(|ns| t.cluster_scoped || t.namespace == ns))
            .map(|t| t.new_name.as_str())
            .collect();
        names.sort_unstable();
        names.dedup();
        match names.as_slice() {
            [] => Ok(()),
            [name] => {
                set_string(node, name.to_string());
                Ok(())
            }
            _ => Err(format!(
                "found multiple possible referrals for {:?}: {}",
                node.value,
                names.join(", ")
            )),
        }
    }

    /// A reference written as a mapping with `name` (and `namespace`): a
    /// binding's subject (only `kind: ServiceAccount` ones) or a webhook's
    /// service.
    fn set_mapping(&self, node: &mut Node, subjects: bool) -> Result<(), String> {
        if subjects && node.get_str(&["kind"]) != Some("ServiceAccount") {
            return Ok(());
        }
        let namespace = node
            .get_str(&["namespace"])
            .map(|ns| effective_namespace(ns, false))
            .unwrap_or_else(|| self.referrer.namespace.clone());
        match node.get_mut("name") {
            Some(name) if name.kind == Kind::Scalar => self.set(name, Some(&namespace)),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml;

    fn items(text: &str) -> Vec<Node> {
        yaml::parse_stream(text)
            .expect("parses")
            .into_iter()
            .collect()
    }

    fn config(text: &str) -> Option<Node> {
        Some(yaml::parse_document(text).expect("config parses"))
    }

    fn emit(items: &[Node]) -> String {
        yaml::emit_stream(items, yaml::Format::Kyaml).expect("emits")
    }

    const PREPEND: &str =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  prepend: prod-\n";

    #[test]
    fn names_and_references_change_and_skipped_kinds_do_not() {
        let out = run(FnInput {
            items: items(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm # keep\n  namespace: ns\n\
                 ---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\n  namespace: ns\n\
                 spec:\n  template:\n    spec:\n      containers:\n      - name: c\n        envFrom:\n        - configMapRef:\n            name: cm\n\
                 ---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: ns\n\
                 ---\napiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: pkg\n",
            ),
            function_config: config(PREPEND),
        });
        assert!(out.failure.is_none(), "{:?}", out.failure);
        let text = emit(&out.items);
        assert!(text.contains("name: prod-cm # keep"), "{text}");
        assert!(text.contains("name: prod-app"), "{text}");
        assert!(text.contains("            name: prod-cm\n"), "{text}");
        assert!(
            text.contains("kind: Namespace\nmetadata:\n  name: ns\n"),
            "{text}"
        );
        assert!(text.contains("name: pkg"), "{text}");
    }

    #[test]
    fn a_name_holding_the_substring_is_left_alone_and_a_second_run_changes_nothing() {
        let input = "apiVersion: v1\nkind: Service\nmetadata:\n  name: with-prod-svc\n\
                     ---\napiVersion: v1\nkind: Service\nmetadata:\n  name: svc\n";
        let once = run(FnInput {
            items: items(input),
            function_config: config(PREPEND),
        });
        let first = emit(&once.items);
        assert!(first.contains("name: with-prod-svc\n"), "{first}");
        assert!(first.contains("name: prod-svc\n"), "{first}");
        let twice = run(FnInput {
            items: once.items,
            function_config: config(PREPEND),
        });
        assert_eq!(emit(&twice.items), first);
    }

    #[test]
    fn depends_on_follows_a_renamed_resource_of_the_package_only() {
        let out = run(FnInput {
            items: items(
                "apiVersion: v1\nkind: StatefulSet\nmetadata:\n  name: db\n  namespace: default\n\
                 ---\napiVersion: v1\nkind: Deployment\nmetadata:\n  name: a\n  namespace: default\n  annotations:\n    config.kubernetes.io/depends-on: /namespaces/default/StatefulSet/db\n\
                 ---\napiVersion: v1\nkind: Deployment\nmetadata:\n  name: b\n  namespace: default\n  annotations:\n    config.kubernetes.io/depends-on: /namespaces/default/StatefulSet/elsewhere\n",
            ),
            function_config: config(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  append: -x\n",
            ),
        });
        let text = emit(&out.items);
        assert!(text.contains("StatefulSet/db-x\n"), "{text}");
        assert!(text.contains("StatefulSet/elsewhere\n"), "{text}");
    }

    #[test]
    fn a_reference_across_namespaces_is_not_followed_but_a_cluster_role_is() {
        let out = run(FnInput {
            items: items(
                "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  namespace: a\n\
                 ---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: b\nspec:\n  imagePullSecrets:\n  - name: s\n\
                 ---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: r\n\
                 ---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: rb\n  namespace: b\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: r\n",
            ),
            function_config: config(PREPEND),
        });
        let text = emit(&out.items);
        assert!(
            text.contains("  imagePullSecrets:\n  - name: s\n"),
            "{text}"
        );
        assert!(
            text.contains("  kind: ClusterRole\n  name: prod-r\n"),
            "{text}"
        );
    }

    #[test]
    fn service_account_subjects_follow_and_other_subjects_do_not() {
        let out = run(FnInput {
            items: items(
                "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: sa\n  namespace: ns\n\
                 ---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: crb\nsubjects:\n- kind: ServiceAccount\n  name: sa\n  namespace: ns\n- kind: User\n  name: sa\n",
            ),
            function_config: config(PREPEND),
        });
        let text = emit(&out.items);
        assert!(
            text.contains("- kind: ServiceAccount\n  name: prod-sa\n"),
            "{text}"
        );
        assert!(text.contains("- kind: User\n  name: sa\n"), "{text}");
    }

    #[test]
    fn additional_name_fields_are_edited_for_the_kinds_they_select() {
        let out = run(FnInput {
            items: items(
                "apiVersion: dev.example.com/v1\nkind: MyResource\nmetadata:\n  name: cr\nspec:\n  name: foo\n\
                 ---\napiVersion: v1\nkind: Other\nmetadata:\n  name: o\nspec:\n  name: bar\n",
            ),
            function_config: config(
                "apiVersion: fn.kpt.dev/v1alpha1\nkind: EnsureNameSubstring\nmetadata:\n  name: c\n\
                 substring: prod-\nadditionalNameFields:\n- group: dev.example.com\n  version: v1\n  kind: MyResource\n  path: spec/name\n",
            ),
        });
        let text = emit(&out.items);
        assert!(text.contains("  name: prod-foo\n"), "{text}");
        assert!(text.contains("  name: bar\n"), "{text}");
        assert!(text.contains("  name: prod-o\n"), "{text}");
    }

    #[test]
    fn bad_configs_are_refused_with_the_functions_words() {
        for (config_text, want) in [
            (
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  prepend: a\n  append: b\n",
                "only 1 entry is allowed in the ConfigMap, but got: 2",
            ),
            (
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  middle: a\n",
                "unknown editMode: middle, only prepend and append are allowed",
            ),
            (
                "apiVersion: fn.kpt.dev/v1alpha1\nkind: EnsureNameSubstring\nmetadata:\n  name: c\n",
                "substring must not be empty",
            ),
            (
                "apiVersion: fn.kpt.dev/v1alpha1\nkind: EnsureNameSubstring\nmetadata:\n  name: c\nsubstring: x\nfieldSpecs: []\nadditionalNameFields: []\n",
                "`fieldSpecs` has been deprecated",
            ),
            (
                "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: c\n",
                "but we got: apps/v1, Kind=Deployment",
            ),
        ] {
            let out = run(FnInput {
                items: items("apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n"),
                function_config: config(config_text),
            });
            let failure = out.failure.expect("fails");
            assert!(failure.contains(want), "{failure} lacks {want}");
            assert!(emit(&out.items).contains("name: s\n"));
        }
    }
}
