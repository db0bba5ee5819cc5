//! The catalog's `set-namespace` function
//! (`functions/go/set-namespace/transformer/namespace.go`).
//!
//! The items are read and edited through the kpt function SDK's rules:
//! fields are strings only when tagged `!!str`, a written field gets a new
//! plain string node (keeping the old node's comments), and missing parent
//! mappings are appended at the end of their parent.

use std::collections::{BTreeSet, HashSet};

use crate::yaml::{Kind, Node};

use super::super::annotations::{INDEX, LOCAL_CONFIG, PATH};
use super::super::result::{FileRef, FnResult, ResourceRef};
use super::{FnInput, FnOutput};

/// Group of the typed functionConfig `SetNamespace`.
const FN_CONFIG_GROUP: &str = "fn.kpt.dev";
/// Version of the typed functionConfig.
const FN_CONFIG_VERSION: &str = "v1alpha1";
/// Kind of the typed functionConfig.
const FN_CONFIG_KIND: &str = "SetNamespace";
/// Name of the package-context ConfigMap kpt generates.
const BUILTIN_CONFIG_MAP_NAME: &str = "kptfile.kpt.dev";
/// Annotation listing the object an object depends on.
const DEPENDS_ON: &str = "config.kubernetes.io/depends-on";
/// Annotation kpt keeps the upstream origin of an object in.
const UPSTREAM_IDENTIFIER: &str = "internal.kpt.dev/upstream-identifier";
/// The SDK's namespace of cluster-scoped or unknown-scoped objects.
const UNKNOWN_NAMESPACE: &str = "~C";
/// The namespace an unset namespace stands for.
const DEFAULT_NAMESPACE: &str = "default";

/// Path of a CRD's conversion webhook service namespace.
const CRD_SERVICE_NAMESPACE: [&str; 6] = [
    "spec",
    "conversion",
    "webhook",
    "clientConfig",
    "service",
    "namespace",
];
/// Path of an APIService's service namespace.
const API_SERVICE_NAMESPACE: [&str; 3] = ["spec", "service", "namespace"];

/// Runs `set-namespace` on the items.
///
/// Configuration errors give one `error` result about the functionConfig
/// and leave the items alone; the function still succeeds.
pub fn run(input: FnInput) -> FnOutput {
    let FnInput {
        mut items,
        function_config,
    } = input;
    let config = match Config::parse(function_config.as_ref()) {
        Ok(config) => config,
        Err(message) => {
            return FnOutput {
                items,
                results: vec![config_error(message, function_config.as_ref())],
                ..FnOutput::default()
            }
        }
    };
    if let Some(failure) = unreadable_nested_namespace(&items) {
        return FnOutput {
            items,
            failure: Some(failure),
            ..FnOutput::default()
        };
    }
    let results = transform(&mut items, &config);
    FnOutput {
        items,
        results,
        ..FnOutput::default()
    }
}

/// The function's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Config {
    /// The namespace to set.
    namespace: String,
    /// Only namespaces (or origins) equal to this change, when set.
    matcher: Option<String>,
}

impl Config {
    /// `SetNamespace.Config`: reads a `v1 ConfigMap` or a
    /// `fn.kpt.dev/v1alpha1 SetNamespace`; the error is the result message.
    fn parse(config: Option<&Node>) -> Result<Config, String> {
        let root = config.map(Node::root).filter(|r| r.kind == Kind::Mapping);
        let Some(root) = root.filter(|r| !r.content.is_empty()) else {
            return Err(format!(
                "FunctionConfig is missing. Expect `ConfigMap.v1` or `{FN_CONFIG_KIND}.{FN_CONFIG_VERSION}.{FN_CONFIG_GROUP}`"
            ));
        };
        if is_gvk(root, "", "v1", "ConfigMap") {
            Config::from_config_map(root)
        } else if is_gvk(root, FN_CONFIG_GROUP, FN_CONFIG_VERSION, FN_CONFIG_KIND) {
            Config::from_set_namespace(root)
        } else {
            Err(format!(
                "unknown functionConfig Kind={} ApiVersion={}, expect `ConfigMap.v1` or `{FN_CONFIG_KIND}.{FN_CONFIG_VERSION}.{FN_CONFIG_GROUP}`",
                kind(root),
                api_version(root)
            ))
        }
    }

    /// A `ConfigMap`: `data.namespace`, else `data.name` of the package
    /// context, with `data.namespaceMatcher`.
    fn from_config_map(root: &Node) -> Result<Config, String> {
        if !typed::config_map(root) {
            return Err("failed to parse FunctionConfig as ConfigMap".to_string());
        }
        let data = typed::string_map(root.get("data"));
        let value = |key: &str| data.get(key).cloned().unwrap_or_default();
        let matcher = Some(value("namespaceMatcher")).filter(|m| !m.is_empty());
        let namespace = value("namespace");
        if !namespace.is_empty() {
            return Ok(Config { namespace, matcher });
        }
        let name = value("name");
        let cm_name = typed::string(root.get("metadata").and_then(|m| m.get("name")));
        if !name.is_empty() && cm_name == BUILTIN_CONFIG_MAP_NAME {
            return Ok(Config {
                namespace: name,
                matcher,
            });
        }
        Err("`data.namespace` should not be empty".to_string())
    }

    /// A `SetNamespace`: top-level `namespace` and `namespaceMatcher`.
    fn from_set_namespace(root: &Node) -> Result<Config, String> {
        if !typed::set_namespace(root) {
            return Err(format!(
                "failed to parse FunctionConfig as {FN_CONFIG_GROUP}.{FN_CONFIG_VERSION}.{FN_CONFIG_KIND}"
            ));
        }
        let namespace = typed::string(root.get("namespace"));
        if namespace.is_empty() {
            return Err("`namespace` should not be empty".to_string());
        }
        let matcher = Some(typed::string(root.get("namespaceMatcher"))).filter(|m| !m.is_empty());
        Ok(Config { namespace, matcher })
    }
}

/// `fn.ErrorConfigObjectResult`: the message about the functionConfig.
fn config_error(message: String, config: Option<&Node>) -> FnResult {
    let empty = Node::new_mapping();
    let root = config.map(Node::root).unwrap_or(&empty);
    FnResult {
        resource_ref: Some(ResourceRef {
            api_version: api_version(root).to_string(),
            kind: kind(root).to_string(),
            name: name(root).to_string(),
            namespace: namespace(root).to_string(),
        }),
        file: Some(FileRef {
            path: annotation(root, PATH).unwrap_or("").to_string(),
            index: index_annotation(root),
        }),
        ..FnResult::error(message)
    }
}

/// The SDK's `IndexAnnotation`: -1 when unset, Go's `strconv.Atoi`
/// otherwise (0 when not a number, clamped when out of range).
fn index_annotation(root: &Node) -> i64 {
    let Some(text) = annotation(root, INDEX).filter(|t| !t.is_empty()) else {
        return -1;
    };
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return 0;
    }
    text.parse().unwrap_or(if text.starts_with('-') {
        i64::MIN
    } else {
        i64::MAX
    })
}

/// Edits the namespaces of the items and reports what changed.
fn transform(items: &mut [Node], config: &Config) -> Vec<FnResult> {
    let targets: Vec<usize> = (0..items.len())
        .filter(|&i| !is_local_config(items[i].root()))
        .collect();
    let depends_on_ids: HashSet<String> = targets
        .iter()
        .filter_map(|&i| depends_on_id(items[i].root()))
        .collect();
    let (namespaced, cluster): (Vec<usize>, Vec<usize>) = targets
        .iter()
        .partition(|&&i| is_namespace_scoped(items[i].root()));

    let mut walk = Walk::new(config);
    for &i in &cluster {
        visit_cluster_scoped(items[i].root_mut(), &mut walk);
    }
    for &i in &namespaced {
        visit_namespaced(items[i].root_mut(), &mut walk);
    }
    let mut results = walk.results;
    results.push(FnResult::info(summary(
        walk.count,
        &config.namespace,
        &walk.old,
        "namespace",
        "all matching namespaces are already {new}. no value changed",
    )));

    let mut annotations = Walk::new(config);
    for &i in &targets {
        update_depends_on(items[i].root_mut(), &depends_on_ids, &mut annotations);
    }
    results.push(FnResult::info(summary(
        annotations.count,
        &config.namespace,
        &annotations.old,
        "`depends-on` annotation namespace",
        "all `depends-on` annotations are up-to-date. no `namespace` changed",
    )));
    results
}

/// The summary result: `<what> [olds] updated to "<new>", <n> value(s)
/// changed`, or `unchanged` (with `{new}` standing for the quoted new
/// namespace) when nothing changed.
fn summary(
    count: usize,
    new_ns: &str,
    old: &BTreeSet<String>,
    what: &str,
    unchanged: &str,
) -> String {
    if count == 0 {
        return unchanged.replace("{new}", &go_quote(new_ns));
    }
    let olds: Vec<&str> = old.iter().map(String::as_str).collect();
    format!(
        "{what} [{}] updated to {}, {count} value(s) changed",
        olds.join(" "),
        go_quote(new_ns)
    )
}

/// The state of one walk over namespace values (the SDK's
/// `WalkAndReplace` visitor, or `UpdateAnnotation`).
struct Walk<'a> {
    /// The namespace to set.
    new_ns: &'a str,
    /// The namespace (or origin) that must match, if any.
    matcher: Option<&'a str>,
    /// Values changed.
    count: usize,
    /// Values replaced, sorted and without duplicates.
    old: BTreeSet<String>,
    /// `has matching origin` results.
    results: Vec<FnResult>,
}

impl<'a> Walk<'a> {
    fn new(config: &'a Config) -> Walk<'a> {
        Walk {
            new_ns: &config.namespace,
            matcher: config.matcher.as_deref(),
            count: 0,
            old: BTreeSet::new(),
            results: Vec::new(),
        }
    }

    /// The visitor: the value to write back for `current`, given the
    /// object's `origin` namespace and its description `id`.
    fn visit(&mut self, origin: &str, current: String, id: Option<&str>) -> String {
        if origin == UNKNOWN_NAMESPACE {
            return current;
        }
        let current = if current.is_empty() {
            DEFAULT_NAMESPACE.to_string()
        } else {
            current
        };
        if current == self.new_ns {
            return current;
        }
        let change = match self.matcher {
            None => true,
            Some(matcher) => {
                if matcher == origin {
                    self.results.push(FnResult::info(format!(
                        "[{}] has matching origin {origin}",
                        id.unwrap_or("")
                    )));
                }
                matcher == current || matcher == origin
            }
        };
        if !change {
            return current;
        }
        self.old.insert(current);
        self.count += 1;
        self.new_ns.to_string()
    }
}

/// `VisitSpecialClusterResource` for one cluster-scoped object.
fn visit_cluster_scoped(root: &mut Node, walk: &mut Walk<'_>) {
    if is_gvk(root, "", "v1", "Namespace") {
        let current = name(root).to_string();
        let origin = match upstream_origin(root) {
            Some(Some(origin)) => origin.name,
            Some(None) => String::new(),
            None => current.clone(),
        };
        let id = short_string(root);
        let value = walk.visit(&origin, current, Some(&id));
        set_field(root, &["metadata"], "name", &value);
    } else if is_gvk(
        root,
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
    ) {
        visit_nested(root, &CRD_SERVICE_NAMESPACE, walk);
    } else if is_gvk(root, "apiregistration.k8s.io", "v1", "APIService") {
        visit_nested(root, &API_SERVICE_NAMESPACE, walk);
    } else if matches!(kind(root), "ClusterRoleBinding" | "RoleBinding") {
        for subject in subjects(root) {
            if subject.key_index("namespace").is_none() {
                continue;
            }
            let current = typed_str(subject.get("namespace")).to_string();
            let value = walk.visit("", current, None);
            // A mapping always accepts a new value.
            let _ = subject.set_keep_formatting("namespace", Node::new_string(value));
        }
    }
}

/// Visits the namespace at `path` of a CRD or APIService, and writes it
/// back, creating the missing mappings on the way.
fn visit_nested(root: &mut Node, path: &[&str], walk: &mut Walk<'_>) {
    let current = nested_string(root, path).unwrap_or_default();
    let value = walk.visit("", current, None);
    if let Some((last, parents)) = path.split_last() {
        set_field(root, parents, last, &value);
    }
}

/// `VisitNamespaceResource` for one namespace-scoped object.
fn visit_namespaced(root: &mut Node, walk: &mut Walk<'_>) {
    let current = namespace(root).to_string();
    let origin = match upstream_origin(root) {
        Some(Some(origin)) => origin.namespace,
        Some(None) => UNKNOWN_NAMESPACE.to_string(),
        None => effective_namespace(root),
    };
    let id = short_string(root);
    let value = walk.visit(&origin, current, Some(&id));
    set_field(root, &["metadata"], "namespace", &value);
}

/// `UpdateAnnotation` for one object: moves a namespaced `depends-on`
/// reference to an object of the package into the new namespace.
fn update_depends_on(root: &mut Node, ids: &HashSet<String>, walk: &mut Walk<'_>) {
    let Some(value) = annotation_map_value(root, DEPENDS_ON) else {
        return;
    };
    let Some(mut segments) = namespaced_reference(&value) else {
        return;
    };
    if !ids.contains(&value) || segments[2] == walk.new_ns {
        return;
    }
    if walk.matcher.is_some_and(|m| m != segments[2]) {
        return;
    }
    walk.old.insert(segments[2].to_string());
    walk.count += 1;
    segments[2] = walk.new_ns;
    let updated = segments.join("/");
    set_field(root, &["metadata", "annotations"], DEPENDS_ON, &updated);
}

/// The segments of `<group>/namespaces/<namespace>/<kind>/<name>` (each
/// of `[-.\w]*`), or `None` for any other form.
fn namespaced_reference(value: &str) -> Option<Vec<&str>> {
    let segments: Vec<&str> = value.split('/').collect();
    let word = |s: &&str| {
        s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
    };
    (segments.len() == 5 && segments[1] == "namespaces" && segments.iter().all(word))
        .then_some(segments)
}

/// The key of an object in the `depends-on` set
/// (`<group>/namespaces/<effective namespace>/<kind>/<name>`), or `None`
/// for cluster-scoped objects.
fn depends_on_id(root: &Node) -> Option<String> {
    let ns = effective_namespace(root);
    (ns != UNKNOWN_NAMESPACE).then(|| {
        let group = api_version(root).split_once('/').map_or("", |(g, _)| g);
        format!("{group}/namespaces/{ns}/{}/{}", kind(root), name(root))
    })
}

/// The SDK's `effectiveNamespace`: the namespace field when present,
/// `default` for a namespaced kind without one, `~C` otherwise.
fn effective_namespace(root: &Node) -> String {
    if has_namespace(root) {
        namespace(root).to_string()
    } else if is_namespace_scoped(root) {
        DEFAULT_NAMESPACE.to_string()
    } else {
        UNKNOWN_NAMESPACE.to_string()
    }
}

/// The origin read from `internal.kpt.dev/upstream-identifier`: `None`
/// without the annotation, `Some(None)` when it does not parse.
fn upstream_origin(root: &Node) -> Option<Option<Origin>> {
    let value = annotation(root, UPSTREAM_IDENTIFIER).filter(|v| !v.is_empty())?;
    Some(Origin::parse(value.trim()))
}

/// The namespace and name of an upstream identifier.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Origin {
    namespace: String,
    name: String,
}

impl Origin {
    /// Finds the SDK's (unanchored) pattern
    /// `[a-z0-9-.]*\|[A-Z][a-zA-Z0-9]*\|([a-z0-9-]{1,63}|~C)\|[a-z0-9-]{1,63}`
    /// in `value`, leftmost first.
    fn parse(value: &str) -> Option<Origin> {
        let bytes = value.as_bytes();
        (0..bytes.len())
            .filter(|&i| bytes[i] == b'|')
            .find_map(|bar| Origin::after_group(bytes, bar))
    }

    /// The rest of a match whose group ends at the `|` at `bar`.
    fn after_group(bytes: &[u8], bar: usize) -> Option<Origin> {
        let label = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-';
        let run = |from: usize, class: &dyn Fn(u8) -> bool| {
            bytes
                .get(from..)
                .map_or(0, |rest| rest.iter().take_while(|&&b| class(b)).count())
        };
        let kind_start = bar + 1;
        if !bytes.get(kind_start).is_some_and(u8::is_ascii_uppercase) {
            return None;
        }
        let kind_end = kind_start + 1 + run(kind_start + 1, &|b| b.is_ascii_alphanumeric());
        if bytes.get(kind_end) != Some(&b'|') {
            return None;
        }
        let ns_start = kind_end + 1;
        let ns_len = match run(ns_start, &label) {
            0 if bytes.get(ns_start..ns_start + 2) == Some(&b"~C"[..]) => 2,
            n @ 1..=63 => n,
            _ => return None,
        };
        let ns_end = ns_start + ns_len;
        if bytes.get(ns_end) != Some(&b'|') {
            return None;
        }
        let name_start = ns_end + 1;
        let name_len = run(name_start, &label).min(63);
        if name_len == 0 {
            return None;
        }
        let text = |from: usize, to: usize| {
            bytes
                .get(from..to)
                .map(|b| String::from_utf8_lossy(b).into_owned())
        };
        Some(Origin {
            namespace: text(ns_start, ns_end)?,
            name: text(name_start, name_start + name_len)?,
        })
    }
}

/// Explains why the Go function would crash (its `NestedStringOrDie`
/// panics) on a CRD or APIService whose service namespace cannot be read
/// as a string, or `None`.
fn unreadable_nested_namespace(items: &[Node]) -> Option<String> {
    items
        .iter()
        .map(Node::root)
        .filter(|r| !is_local_config(r) && !is_namespace_scoped(r))
        .filter(|r| !is_gvk(r, "", "v1", "Namespace"))
        .find_map(|root| {
            let path: &[&str] = if is_gvk(
                root,
                "apiextensions.k8s.io",
                "v1",
                "CustomResourceDefinition",
            ) {
                &CRD_SERVICE_NAMESPACE
            } else if is_gvk(root, "apiregistration.k8s.io", "v1", "APIService") {
                &API_SERVICE_NAMESPACE
            } else {
                return None;
            };
            nested_string(root, path).is_none().then(|| {
                format!(
                    "panic: {} of {} is not a string field",
                    path.join("."),
                    short_string(root)
                )
            })
        })
}

/// The SDK's `NestedString` for a field that may be absent: `Some("")`
/// when a mapping on the way or the field is missing, the text when the
/// field is a string, `None` when something on the way is not a mapping or
/// the field is not a string.
fn nested_string(root: &Node, path: &[&str]) -> Option<String> {
    let mut current = root;
    for (i, key) in path.iter().enumerate() {
        if current.kind != Kind::Mapping {
            return None;
        }
        let Some(value) = current.get(key) else {
            return Some(String::new());
        };
        if i + 1 == path.len() {
            return is_string(value).then(|| value.value.clone());
        }
        current = value;
    }
    Some(String::new())
}

/// The SDK's `SetNestedField` of a string: the mappings of `parents` are
/// found or appended, then `key` gets a plain string node that keeps the
/// old value's comments. Nothing changes when a parent is not a mapping.
fn set_field(root: &mut Node, parents: &[&str], key: &str, value: &str) {
    let mut current = root;
    for parent in parents {
        let Some(next) = child_map(current, parent) else {
            return;
        };
        current = next;
    }
    // `current` is a mapping here, which always accepts the value.
    let _ = current.set_keep_formatting(key, Node::new_string(value));
}

/// The SDK's `getMap(key, create)`: the mapping at `key`, appended at the
/// end when missing, `None` when the value is something else.
fn child_map<'n>(node: &'n mut Node, key: &str) -> Option<&'n mut Node> {
    if node.kind != Kind::Mapping {
        return None;
    }
    let index = match node.key_index(key) {
        Some(i) => i + 1,
        None => {
            node.content.push(Node::new_string(key));
            node.content.push(Node::new_mapping());
            node.content.len() - 1
        }
    };
    node.content
        .get_mut(index)
        .filter(|value| value.kind == Kind::Mapping)
}

/// The subjects of a (Cluster)RoleBinding, when `subjects` is a sequence of
/// mappings (the SDK's `GetSlice` gives nothing otherwise).
fn subjects(root: &mut Node) -> Vec<&mut Node> {
    match root.get_mut("subjects") {
        Some(seq)
            if seq.kind == Kind::Sequence
                && seq.content.iter().all(|s| s.kind == Kind::Mapping) =>
        {
            seq.content.iter_mut().collect()
        }
        _ => Vec::new(),
    }
}

/// `ShortString` of an object.
fn short_string(root: &Node) -> String {
    format!(
        "Resource(apiVersion={}, kind={}, namespace={}, name={})",
        api_version(root),
        kind(root),
        namespace(root),
        name(root)
    )
}

/// Whether a node is a string scalar (`!!str`), as the SDK reads strings.
fn is_string(node: &Node) -> bool {
    node.kind == Kind::Scalar && node.tag == "!!str"
}

/// The text of a string scalar, `""` for anything else.
fn typed_str(node: Option<&Node>) -> &str {
    node.filter(|n| is_string(n))
        .map_or("", |n| n.value.as_str())
}

/// The string at a path of mapping keys, `""` when absent or not a string.
fn string_at<'n>(root: &'n Node, path: &[&str]) -> &'n str {
    let mut current = Some(root);
    for key in path {
        current = current
            .filter(|n| n.kind == Kind::Mapping)
            .and_then(|n| n.get(key));
    }
    typed_str(current)
}

fn api_version(root: &Node) -> &str {
    string_at(root, &["apiVersion"])
}

fn kind(root: &Node) -> &str {
    string_at(root, &["kind"])
}

fn name(root: &Node) -> &str {
    string_at(root, &["metadata", "name"])
}

fn namespace(root: &Node) -> &str {
    string_at(root, &["metadata", "namespace"])
}

/// `metadata.annotations[key]` when it is a string.
fn annotation<'n>(root: &'n Node, key: &str) -> Option<&'n str> {
    let value = root.get("metadata")?.get("annotations")?.get(key)?;
    is_string(value).then_some(value.value.as_str())
}

/// `GetAnnotations()[key]`: every value of the annotations mapping read as
/// text, the last of duplicate keys winning.
fn annotation_map_value(root: &Node, key: &str) -> Option<String> {
    let annotations = root.get("metadata")?.get("annotations")?;
    annotations
        .pairs()
        .filter(|(k, _)| k.value == key)
        .last()
        .map(|(_, v)| v.value.clone())
        .filter(|v| !v.is_empty())
}

/// `IsLocalConfig`: the annotation is a string other than `""` and
/// `"false"`.
fn is_local_config(root: &Node) -> bool {
    annotation(root, LOCAL_CONFIG).is_some_and(|v| !v.is_empty() && v != "false")
}

/// The SDK's `HasNamespace`: `metadata.namespace` exists (or `metadata`
/// is not a mapping, which the SDK also reports as found).
fn has_namespace(root: &Node) -> bool {
    match root.get("metadata") {
        None => false,
        Some(meta) if meta.kind == Kind::Mapping => meta.key_index("namespace").is_some(),
        Some(_) => true,
    }
}

/// `IsNamespaceScoped`: the known scope of a built-in kind, else whether
/// the object has a namespace field.
fn is_namespace_scoped(root: &Node) -> bool {
    builtin_scope(api_version(root), kind(root)).unwrap_or_else(|| has_namespace(root))
}

/// The SDK's `IsGVK`: compares only the parts that are set on both sides
/// (an unparsable `apiVersion` makes every part unset).
fn is_gvk(root: &Node, group: &str, version: &str, kind_name: &str) -> bool {
    let av = api_version(root);
    let (g, v, k) = match av.matches('/').count() {
        _ if av.is_empty() || av == "/" => ("", "", kind(root)),
        0 => ("", av, kind(root)),
        1 => {
            let (g, v) = av.split_once('/').unwrap_or(("", av));
            (g, v, kind(root))
        }
        _ => ("", "", ""),
    };
    let differs =
        |ours: &str, wanted: &str| !ours.is_empty() && !wanted.is_empty() && ours != wanted;
    !(differs(k, kind_name) || differs(g, group) || differs(v, version))
}

pub(super) use crate::krm::gofmt::quote as go_quote;

/// The scope of the built-in kinds the SDK knows (its copy of kyaml's
/// precomputed table): `Some(true)` for namespaced kinds.
pub(super) fn builtin_scope(api_version: &str, kind: &str) -> Option<bool> {
    let namespaced = match (api_version, kind) {
        (
            "admissionregistration.k8s.io/v1" | "admissionregistration.k8s.io/v1beta1",
            "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration",
        )
        | (
            "apiextensions.k8s.io/v1" | "apiextensions.k8s.io/v1beta1",
            "CustomResourceDefinition",
        )
        | ("apiregistration.k8s.io/v1" | "apiregistration.k8s.io/v1beta1", "APIService")
        | ("certificates.k8s.io/v1" | "certificates.k8s.io/v1beta1", "CertificateSigningRequest")
        | ("flowcontrol.apiserver.k8s.io/v1beta1", "FlowSchema" | "PriorityLevelConfiguration")
        | ("networking.k8s.io/v1" | "networking.k8s.io/v1beta1", "IngressClass")
        | ("node.k8s.io/v1" | "node.k8s.io/v1beta1", "RuntimeClass")
        | ("policy/v1beta1", "PodSecurityPolicy")
        | (
            "rbac.authorization.k8s.io/v1" | "rbac.authorization.k8s.io/v1beta1",
            "ClusterRole" | "ClusterRoleBinding",
        )
        | ("scheduling.k8s.io/v1" | "scheduling.k8s.io/v1beta1", "PriorityClass")
        | (
            "storage.k8s.io/v1" | "storage.k8s.io/v1beta1",
            "CSIDriver" | "CSINode" | "StorageClass" | "VolumeAttachment",
        )
        | (
            "v1",
            "ComponentStatus" | "Namespace" | "Node" | "NodeProxyOptions" | "PersistentVolume",
        ) => false,
        (
            "apps/v1",
            "ControllerRevision" | "DaemonSet" | "Deployment" | "ReplicaSet" | "StatefulSet",
        )
        | ("autoscaling/v1", "HorizontalPodAutoscaler" | "Scale")
        | ("autoscaling/v2beta1" | "autoscaling/v2beta2", "HorizontalPodAutoscaler")
        | ("batch/v1", "CronJob" | "Job")
        | ("batch/v1beta1", "CronJob")
        | ("coordination.k8s.io/v1" | "coordination.k8s.io/v1beta1", "Lease")
        | ("discovery.k8s.io/v1" | "discovery.k8s.io/v1beta1", "EndpointSlice")
        | ("events.k8s.io/v1" | "events.k8s.io/v1beta1", "Event")
        | ("extensions/v1beta1", "Ingress")
        | ("networking.k8s.io/v1", "Ingress" | "NetworkPolicy")
        | ("networking.k8s.io/v1beta1", "Ingress")
        | ("policy/v1" | "policy/v1beta1", "PodDisruptionBudget")
        | (
            "rbac.authorization.k8s.io/v1" | "rbac.authorization.k8s.io/v1beta1",
            "Role" | "RoleBinding",
        )
        | ("storage.k8s.io/v1beta1", "CSIStorageCapacity")
        | (
            "v1",
            "ConfigMap"
            | "Endpoints"
            | "Event"
            | "LimitRange"
            | "PersistentVolumeClaim"
            | "Pod"
            | "PodAttachOptions"
            | "PodExecOptions"
            | "PodPortForwardOptions"
            | "PodProxyOptions"
            | "PodTemplate"
            | "ReplicationController"
            | "ResourceQuota"
            | "Secret"
            | "Service"
            | "ServiceAccount"
            | "ServiceProxyOptions",
        ) => true,
        _ => return None,
    };
    Some(namespaced)
}

/// Whether a functionConfig converts to the Go types the function reads
/// it into (`KubeObject.As`: YAML → JSON → `encoding/json`).
mod typed {
    use std::collections::{BTreeMap, HashSet};

    use crate::yaml::{Kind, Node};

    /// The JSON type a YAML node becomes.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Json {
        Null,
        String,
        Number,
        Bool,
        Object,
        Array,
    }

    fn json_type(node: &Node) -> Json {
        match node.kind {
            Kind::Mapping => Json::Object,
            Kind::Sequence => Json::Array,
            Kind::Document => node.content.first().map_or(Json::Null, json_type),
            Kind::Alias => Json::Null,
            Kind::Scalar => match &*node.tag {
                "!!null" => Json::Null,
                "!!bool" => Json::Bool,
                "!!int" | "!!float" => Json::Number,
                _ => Json::String,
            },
        }
    }

    /// Whether the whole tree can be written as JSON: string keys, each
    /// once per mapping, finite numbers.
    fn marshals(node: &Node) -> bool {
        match node.kind {
            Kind::Mapping => {
                let mut seen = HashSet::new();
                node.content.chunks_exact(2).all(|pair| {
                    let key = &pair[0];
                    let string_key =
                        key.kind == Kind::Scalar && matches!(&*key.tag, "!!str" | "!!merge" | "");
                    string_key && seen.insert(key.value.as_str()) && marshals(&pair[1])
                })
            }
            Kind::Sequence | Kind::Document => node.content.iter().all(marshals),
            Kind::Scalar if node.tag == "!!float" => {
                let v = node
                    .value
                    .trim_start_matches(['+', '-'])
                    .to_ascii_lowercase();
                v != ".inf" && v != ".nan"
            }
            _ => true,
        }
    }

    /// A field that must be absent, `null` or of type `want`.
    fn field_is(parent: &Node, key: &str, want: Json) -> bool {
        parent
            .get(key)
            .is_none_or(|v| matches!(json_type(v), Json::Null) || json_type(v) == want)
    }

    /// A field that must be absent, `null` or an object of strings.
    fn string_map_field(parent: &Node, key: &str) -> bool {
        match parent.get(key) {
            None => true,
            Some(v) => match json_type(v) {
                Json::Null => true,
                Json::Object => v
                    .pairs()
                    .all(|(_, item)| matches!(json_type(item), Json::Null | Json::String)),
                _ => false,
            },
        }
    }

    /// A field that must be absent, `null` or an array of strings.
    fn string_list_field(parent: &Node, key: &str) -> bool {
        match parent.get(key) {
            None => true,
            Some(v) => match json_type(v) {
                Json::Null => true,
                Json::Array => v
                    .content
                    .iter()
                    .all(|item| matches!(json_type(item), Json::Null | Json::String)),
                _ => false,
            },
        }
    }

    /// `metadata` as `metav1.ObjectMeta` (the fields the catalog types use).
    fn object_meta(root: &Node, full: bool) -> bool {
        let Some(meta) = root.get("metadata") else {
            return true;
        };
        match json_type(meta) {
            Json::Null => return true,
            Json::Object => {}
            _ => return false,
        }
        let strings = ["name", "namespace"];
        let mut ok = strings.iter().all(|k| field_is(meta, k, Json::String))
            && string_map_field(meta, "labels")
            && string_map_field(meta, "annotations");
        if full {
            ok = ok
                && ["generateName", "selfLink", "uid", "resourceVersion"]
                    .iter()
                    .all(|k| field_is(meta, k, Json::String))
                && ["generation", "deletionGracePeriodSeconds"]
                    .iter()
                    .all(|k| field_is(meta, k, Json::Number))
                && ["creationTimestamp", "deletionTimestamp"]
                    .iter()
                    .all(|k| field_is(meta, k, Json::String))
                && ["ownerReferences", "managedFields"]
                    .iter()
                    .all(|k| field_is(meta, k, Json::Array))
                && string_list_field(meta, "finalizers");
        }
        ok
    }

    /// `apiVersion` and `kind` as strings.
    fn type_meta(root: &Node) -> bool {
        field_is(root, "apiVersion", Json::String) && field_is(root, "kind", Json::String)
    }

    /// Whether the config reads as a `corev1.ConfigMap`.
    pub(super) fn config_map(root: &Node) -> bool {
        marshals(root)
            && type_meta(root)
            && object_meta(root, true)
            && string_map_field(root, "data")
            && string_map_field(root, "binaryData")
            && field_is(root, "immutable", Json::Bool)
    }

    /// Whether the config reads as the function's `SetNamespace` type.
    pub(super) fn set_namespace(root: &Node) -> bool {
        marshals(root)
            && type_meta(root)
            && object_meta(root, false)
            && field_is(root, "namespace", Json::String)
            && field_is(root, "namespaceMatcher", Json::String)
    }

    /// A string field as decoded (`""` for absent or `null`).
    pub(super) fn string(node: Option<&Node>) -> String {
        node.filter(|n| json_type(n) == Json::String)
            .map(|n| n.value.clone())
            .unwrap_or_default()
    }

    /// A `map[string]string` field as decoded.
    pub(super) fn string_map(node: Option<&Node>) -> BTreeMap<String, String> {
        node.filter(|n| n.kind == Kind::Mapping)
            .map(|n| {
                n.pairs()
                    .map(|(k, v)| (k.value.clone(), string(Some(v))))
                    .collect()
            })
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::result::FileRef;
    use crate::yaml::{parse_document, parse_stream, to_string};

    /// Items as kpt sends them: the documents of `text`, each annotated with
    /// its file and position.
    fn items(path: &str, text: &str) -> Vec<Node> {
        let mut docs = parse_stream(text).expect("parses");
        for (i, doc) in docs.iter_mut().enumerate() {
            let index = i.to_string();
            for (key, value) in [
                ("internal.config.kubernetes.io/path", path),
                ("internal.config.kubernetes.io/index", index.as_str()),
                ("config.kubernetes.io/path", path),
                ("config.kubernetes.io/index", index.as_str()),
            ] {
                doc.set_annotation(key, value).expect("annotates");
            }
        }
        docs
    }

    fn config_map(data: &str) -> Option<Node> {
        let text = format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: function-input\ndata:\n{data}"
        );
        Some(parse_document(&text).expect("parses"))
    }

    fn run_on(text: &str, config: Option<Node>) -> FnOutput {
        run(FnInput {
            items: items("resources.yaml", text),
            function_config: config,
        })
    }

    /// The items' text without the annotations the tests add.
    fn text(out: &FnOutput) -> String {
        out.items
            .iter()
            .map(|item| {
                let mut item = item.clone();
                if let Some(annotations) = item.get_path_mut(&["metadata", "annotations"]) {
                    for key in [
                        "internal.config.kubernetes.io/path",
                        "internal.config.kubernetes.io/index",
                        "config.kubernetes.io/path",
                        "config.kubernetes.io/index",
                    ] {
                        annotations.remove(key);
                    }
                }
                if item
                    .get_path(&["metadata", "annotations"])
                    .is_some_and(|a| a.content.is_empty())
                {
                    if let Some(meta) = item.get_path_mut(&["metadata"]) {
                        meta.remove("annotations");
                    }
                }
                to_string(&item).expect("emits")
            })
            .collect::<Vec<_>>()
            .join("---\n")
    }

    fn messages(out: &FnOutput) -> Vec<(String, String)> {
        out.results
            .iter()
            .map(|r| (r.severity.clone().unwrap_or_default(), r.message.clone()))
            .collect()
    }

    fn info(message: &str) -> (String, String) {
        ("info".to_string(), message.to_string())
    }

    const UP_TO_DATE: &str = "all `depends-on` annotations are up-to-date. no `namespace` changed";

    const REPLACE_ALL: &str = r#"apiVersion: v1
kind: Namespace
metadata:
  name: example1
  annotations:
    internal.kpt.dev/upstream-identifier: "|Namespace|~C|example"
---
apiVersion: v1
kind: Service
metadata:
  name: the-service
  namespace: example2
  annotations:
    internal.kpt.dev/upstream-identifier: "|Service|example|the-service"
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: the-crd
  annotations:
    internal.kpt.dev/upstream-identifier: apiextensions.k8s.io|CustomResourceDefinition|~C|the-crd
spec:
  conversion:
    strategy: Webhook
    webhook:
      clientConfig:
        service:
          name: crd-svc
          namespace: example3
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: the-api-service
  annotations:
    internal.kpt.dev/upstream-identifier: apiregistration.k8s.io|APIService|~C|the-api-service
spec:
  service:
    name: api-svc
    namespace: example4
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: crb1
  annotations:
    internal.kpt.dev/upstream-identifier: rbac.authorization.k8s.io|ClusterRoleBinding|~C|crb1
subjects:
- kind: ServiceAccount
  name: default
  namespace: example5
"#;

    #[test]
    fn replace_all_rewrites_every_namespace_field() {
        let out = run_on(REPLACE_ALL, config_map("  namespace: new-ns\n"));
        let expected = REPLACE_ALL
            .replace("name: example1\n", "name: new-ns\n")
            .replace("namespace: example2\n", "namespace: new-ns\n")
            .replace("namespace: example3\n", "namespace: new-ns\n")
            .replace("namespace: example4\n", "namespace: new-ns\n")
            .replace("namespace: example5\n", "namespace: new-ns\n");
        assert_eq!(text(&out), expected);
        assert_eq!(out.failure, None);
        assert_eq!(
            messages(&out),
            vec![
                info(
                    r#"namespace [example1 example2 example3 example4 example5] updated to "new-ns", 5 value(s) changed"#
                ),
                info(UP_TO_DATE),
            ]
        );
        assert!(out
            .results
            .iter()
            .all(|r| r.resource_ref.is_none() && r.file.is_none()));
    }

    #[test]
    fn replace_match_changes_only_the_matching_namespace() {
        let input = REPLACE_ALL.replace("|Service|example|", "|Service|example2|");
        let out = run_on(
            &input,
            config_map("  namespace: new-ns\n  namespaceMatcher: example2\n"),
        );
        assert_eq!(
            text(&out),
            input.replace("namespace: example2\n", "namespace: new-ns\n")
        );
        assert_eq!(
            messages(&out),
            vec![
                info("[Resource(apiVersion=v1, kind=Service, namespace=example2, name=the-service)] has matching origin example2"),
                info(r#"namespace [example2] updated to "new-ns", 1 value(s) changed"#),
                info(UP_TO_DATE),
            ]
        );
    }

    #[test]
    fn matcher_on_the_origin_changes_a_differently_named_namespace() {
        let out = run_on(
            REPLACE_ALL,
            config_map("  namespace: new-ns\n  namespaceMatcher: example\n"),
        );
        let got = text(&out);
        assert!(got.contains("  name: new-ns\n"), "{got}");
        assert!(got.contains("  namespace: new-ns\n  annotations:\n    internal.kpt.dev/upstream-identifier: \"|Service|example|the-service\""), "{got}");
        assert!(got.contains("namespace: example3\n"), "{got}");
        assert_eq!(
            messages(&out),
            vec![
                info("[Resource(apiVersion=v1, kind=Namespace, namespace=, name=example1)] has matching origin example"),
                info("[Resource(apiVersion=v1, kind=Service, namespace=example2, name=the-service)] has matching origin example"),
                info(r#"namespace [example1 example2] updated to "new-ns", 2 value(s) changed"#),
                info(UP_TO_DATE),
            ]
        );
    }

    #[test]
    fn raw_edits_without_origins_are_replaced_too() {
        let input = r#"apiVersion: v1
kind: Namespace
metadata:
  name: example1
---
apiVersion: v1
kind: Service
metadata:
  name: the-service
  namespace: example2
"#;
        let out = run_on(input, config_map("  namespace: new-ns\n"));
        assert_eq!(
            text(&out),
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: new-ns\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: the-service\n  namespace: new-ns\n"
        );
    }

    const DEPENDS_ON_INPUT: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  annotations:
    config.kubernetes.io/depends-on: apps/namespaces/default/StatefulSet/wordpress-mysql
    internal.kpt.dev/upstream-identifier: apps|Deployment|example|wordpress
  labels:
    app: wordpress
  name: wordpress
  namespace: default
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  labels:
    app: wordpress
  name: wordpress-mysql
  namespace: default
---
apiVersion: apps/v1
kind: Deployment
metadata:
  annotations:
    config.kubernetes.io/depends-on: apps/namespaces/default/StatefulSet/outside-resource
    internal.kpt.dev/upstream-identifier: apps|Deployment|example|bar
  labels:
    app: bar
  name: bar
  namespace: default
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  annotations:
    config.kubernetes.io/depends-on: rbac.authorization.k8s.io/ClusterRole/secret-reader
    internal.kpt.dev/upstream-identifier: rbac.authorization.k8s.io|ClusterRoleBinding|~C|read-secrets-global
  name: read-secrets-global
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: secret-reader
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: Group
  name: admin
"#;

    #[test]
    fn depends_on_follows_only_objects_of_the_package() {
        let out = run_on(DEPENDS_ON_INPUT, config_map("  namespace: example-ns\n"));
        let expected = DEPENDS_ON_INPUT
            .replace(
                "depends-on: apps/namespaces/default/StatefulSet/wordpress-mysql",
                "depends-on: apps/namespaces/example-ns/StatefulSet/wordpress-mysql",
            )
            .replace("  namespace: default\n", "  namespace: example-ns\n");
        assert_eq!(text(&out), expected);
        assert_eq!(
            messages(&out),
            vec![
                info(r#"namespace [default] updated to "example-ns", 3 value(s) changed"#),
                info(
                    r#"`depends-on` annotation namespace [default] updated to "example-ns", 1 value(s) changed"#
                ),
            ]
        );
    }

    #[test]
    fn depends_on_with_a_matcher_changes_only_matching_segments() {
        let out = run_on(
            DEPENDS_ON_INPUT,
            config_map("  namespace: example-ns\n  namespaceMatcher: other\n"),
        );
        assert!(text(&out).contains("apps/namespaces/default/StatefulSet/wordpress-mysql"));
        assert_eq!(
            messages(&out),
            vec![
                info(r#"all matching namespaces are already "example-ns". no value changed"#),
                info(UP_TO_DATE),
            ]
        );
    }

    const BLUEPRINT: &str = r#"# Newly added resource-quota.yaml
apiVersion: v1
kind: ResourceQuota
metadata:
  name: istions
  namespace: example # Using "example" as default convention, should be updated to "istio-backend1"
  annotations:
    internal.kpt.dev/upstream-identifier: "|ResourceQuota|example|istions"
spec:
  hard:
    limits.cpu: '10'
    limits.memory: 10G
---
# istio-backend1/namespace.yaml
apiVersion: v1
kind: Namespace
metadata:
  name: istio-backend1
  annotations:
    internal.kpt.dev/upstream-identifier: "|Namespace|~C|example"
  labels:
    privilege: standard
    istio-injection: enabled
---
# istio-backend1/apply-replacements.yaml
apiVersion: fn.kpt.dev/v1alpha1
kind: ApplyReplacements
metadata:
  name: update-rolebinding
  annotations:
    config.kubernetes.io/local-config: 'true'
replacements:
- source:
    kind: ConfigMap
    name: kptfile.kpt.dev
    fieldPath: data.name
"#;

    fn package_context(name: &str) -> Option<Node> {
        let text = format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kptfile.kpt.dev\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\n    internal.config.kubernetes.io/path: 'package-context.yaml'\ndata:\n  name: {name} # customized local package\n"
        );
        Some(parse_document(&text).expect("parses"))
    }

    #[test]
    fn package_context_name_sets_the_namespace_and_keeps_comments() {
        let out = run_on(BLUEPRINT, package_context("istio-backend1"));
        assert_eq!(
            text(&out),
            BLUEPRINT.replace(
                "  namespace: example # Using",
                "  namespace: istio-backend1 # Using"
            )
        );
        assert_eq!(
            messages(&out),
            vec![
                info(r#"namespace [example] updated to "istio-backend1", 1 value(s) changed"#),
                info(UP_TO_DATE),
            ]
        );
    }

    #[test]
    fn package_context_renames_the_blueprint_namespace() {
        let input = r#"# from upstream basens/namespace.yaml
apiVersion: v1
kind: Namespace
metadata:
  name: example
  annotations:
    internal.kpt.dev/upstream-identifier: "|Namespace|~C|example"
---
# from upstream basens/role-binding.yaml
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: app-admin
  namespace: example
  annotations:
    internal.kpt.dev/upstream-identifier: rbac.authorization.k8s.io|RoleBinding|example|app-admin
roleRef:
  kind: ClusterRole
  name: app-admin
  apiGroup: rbac.authorization.k8s.io
subjects:
- kind: Group
  name: example.admin@bigco.com
  apiGroup: rbac.authorization.k8s.io
"#;
        let out = run_on(input, package_context("istio-backend1"));
        assert_eq!(
            text(&out),
            input
                .replace("  name: example\n", "  name: istio-backend1\n")
                .replace("  namespace: example\n", "  namespace: istio-backend1\n")
        );
        assert_eq!(
            messages(&out),
            vec![
                info(r#"namespace [example] updated to "istio-backend1", 2 value(s) changed"#),
                info(UP_TO_DATE),
            ]
        );
    }

    #[test]
    fn data_name_counts_only_in_the_package_context() {
        let out = run_on(BLUEPRINT, config_map("  name: istio-backend1\n"));
        assert_eq!(text(&out), BLUEPRINT);
        assert_eq!(out.results.len(), 1);
        assert_eq!(
            out.results[0].message,
            "`data.namespace` should not be empty"
        );
    }

    #[test]
    fn local_config_items_are_untouched() {
        let input = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  namespace: old\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\n";
        let out = run_on(input, config_map("  namespace: new\n"));
        assert_eq!(text(&out), input);
        assert_eq!(
            messages(&out),
            vec![
                info(r#"all matching namespaces are already "new". no value changed"#),
                info(UP_TO_DATE),
            ]
        );
        let not_local = input.replace("\"true\"", "\"false\"");
        let out = run_on(&not_local, config_map("  namespace: new\n"));
        assert!(text(&out).contains("namespace: new\n"));
    }

    #[test]
    fn missing_config_is_an_error_result_and_the_function_succeeds() {
        let out = run_on(REPLACE_ALL, None);
        assert_eq!(out.failure, None);
        assert_eq!(text(&out), REPLACE_ALL);
        assert_eq!(
            out.results,
            vec![FnResult {
                resource_ref: Some(ResourceRef::default()),
                file: Some(FileRef {
                    path: String::new(),
                    index: -1
                }),
                ..FnResult::error(
                    "FunctionConfig is missing. Expect `ConfigMap.v1` or `SetNamespace.v1alpha1.fn.kpt.dev`"
                )
            }]
        );
        let empty = Some(parse_document("{}\n").expect("parses"));
        let out = run_on(REPLACE_ALL, empty);
        assert_eq!(out.results.len(), 1);
        assert!(out.results[0]
            .message
            .starts_with("FunctionConfig is missing."));
    }

    #[test]
    fn wrong_kind_names_the_config() {
        let config = parse_document(
            "apiVersion: fn.kpt.dev/v1alpha1\nkind: SetLabels\nmetadata:\n  name: my-config\n  namespace: ns\n  annotations:\n    internal.config.kubernetes.io/path: 'fn.yaml'\n    internal.config.kubernetes.io/index: '2'\n",
        )
        .expect("parses");
        let out = run_on(REPLACE_ALL, Some(config));
        assert_eq!(text(&out), REPLACE_ALL);
        assert_eq!(
            out.results,
            vec![FnResult {
                resource_ref: Some(ResourceRef {
                    api_version: "fn.kpt.dev/v1alpha1".into(),
                    kind: "SetLabels".into(),
                    name: "my-config".into(),
                    namespace: "ns".into(),
                }),
                file: Some(FileRef {
                    path: "fn.yaml".into(),
                    index: 2
                }),
                ..FnResult::error(
                    "unknown functionConfig Kind=SetLabels ApiVersion=fn.kpt.dev/v1alpha1, expect `ConfigMap.v1` or `SetNamespace.v1alpha1.fn.kpt.dev`"
                )
            }]
        );
    }

    #[test]
    fn empty_namespace_is_an_error() {
        let out = run_on(REPLACE_ALL, config_map("  namespace: \"\"\n"));
        assert_eq!(out.results.len(), 1);
        assert_eq!(
            out.results[0].message,
            "`data.namespace` should not be empty"
        );
        assert_eq!(out.results[0].severity.as_deref(), Some("error"));
        assert_eq!(
            out.results[0].file,
            Some(FileRef {
                path: String::new(),
                index: -1
            })
        );

        let typed = parse_document(
            "apiVersion: fn.kpt.dev/v1alpha1\nkind: SetNamespace\nmetadata:\n  name: s\n",
        )
        .expect("parses");
        let out = run_on(REPLACE_ALL, Some(typed));
        assert_eq!(out.results[0].message, "`namespace` should not be empty");

        let bad = config_map("  namespace: 5\n");
        let out = run_on(REPLACE_ALL, bad);
        assert_eq!(
            out.results[0].message,
            "failed to parse FunctionConfig as ConfigMap"
        );
        assert_eq!(text(&out), REPLACE_ALL);
    }

    #[test]
    fn typed_config_sets_the_namespace() {
        let typed = parse_document(
            "apiVersion: fn.kpt.dev/v1alpha1\nkind: SetNamespace\nmetadata:\n  name: s\nnamespace: typed-ns\n",
        )
        .expect("parses");
        let out = run_on(
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n",
            Some(typed),
        );
        assert_eq!(
            text(&out),
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n  namespace: typed-ns\n"
        );
        assert_eq!(
            messages(&out)[0],
            info(r#"namespace [default] updated to "typed-ns", 1 value(s) changed"#)
        );
    }

    #[test]
    fn unknown_kinds_need_a_namespace_field() {
        let input = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: example\n---\napiVersion: example.com/v1\nkind: Custom\nmetadata:\n  name: c\n  namespace: old\n---\napiVersion: example.com/v1\nkind: Custom\nmetadata:\n  name: d\n";
        let out = run_on(input, config_map("  namespace: new\n"));
        assert_eq!(
            text(&out),
            input.replace("namespace: old", "namespace: new")
        );
    }

    #[test]
    fn crd_and_api_service_get_the_nested_namespace_created() {
        let input = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: crd\nspec:\n  group: example.com\n---\napiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata:\n  name: api\nspec:\n  service:\n    name: svc\n";
        let out = run_on(input, config_map("  namespace: new\n"));
        assert_eq!(
            text(&out),
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: crd\nspec:\n  group: example.com\n  conversion:\n    webhook:\n      clientConfig:\n        service:\n          namespace: new\n---\napiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata:\n  name: api\nspec:\n  service:\n    name: svc\n    namespace: new\n"
        );
        assert_eq!(
            messages(&out)[0],
            info(r#"namespace [default] updated to "new", 2 value(s) changed"#)
        );
    }

    #[test]
    fn subjects_without_namespace_are_left_alone() {
        let input = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: crb\nsubjects:\n- kind: Group\n  name: admins\n- kind: ServiceAccount\n  name: sa\n  namespace: old # the old one\n";
        let out = run_on(input, config_map("  namespace: new\n"));
        assert_eq!(
            text(&out),
            input.replace(
                "namespace: old # the old one",
                "namespace: new # the old one"
            )
        );
    }

    #[test]
    fn unreadable_crd_namespace_fails_the_function() {
        let input = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: crd\nspec:\n  conversion: none\n";
        let out = run_on(input, config_map("  namespace: new\n"));
        assert!(out.failure.is_some());
        assert!(out.results.is_empty());
        assert_eq!(text(&out), input);
    }

    #[test]
    fn upstream_identifier_parsing() {
        let parse = |s: &str| Origin::parse(s).map(|o| (o.namespace, o.name));
        assert_eq!(
            parse("|Namespace|~C|example"),
            Some(("~C".into(), "example".into()))
        );
        assert_eq!(
            parse("apps|Deployment|ns-1|my.app"),
            Some(("ns-1".into(), "my".into()))
        );
        assert_eq!(parse("x y|Service|ns|n"), Some(("ns".into(), "n".into())));
        assert_eq!(parse("apps|deployment|ns|n"), None);
        assert_eq!(parse("apps|Deployment|NS|n"), None);
        assert_eq!(parse("|Service|ns|"), None);
        assert_eq!(parse("bad||Service|ns|n"), Some(("ns".into(), "n".into())));
    }

    #[test]
    fn unparsable_origin_skips_a_namespaced_object() {
        let input = "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n  namespace: old\n  annotations:\n    internal.kpt.dev/upstream-identifier: garbage\n";
        let out = run_on(input, config_map("  namespace: new\n"));
        assert_eq!(text(&out), input);
    }

    #[test]
    fn quoting_and_go_formats() {
        assert_eq!(go_quote("a\"b\\c\n\u{1}"), r#""a\"b\\c\n\x01""#);
        assert_eq!(go_quote("é"), "\"é\"");
        let meta = parse_document("metadata:\n  annotations:\n    internal.config.kubernetes.io/index: '99999999999999999999'\n").expect("parses");
        assert_eq!(index_annotation(meta.root()), i64::MAX);
        let meta = parse_document(
            "metadata:\n  annotations:\n    internal.config.kubernetes.io/index: 'x'\n",
        )
        .expect("parses");
        assert_eq!(index_annotation(meta.root()), 0);
        assert_eq!(
            namespaced_reference("apps/namespaces/a/B/c"),
            Some(vec!["apps", "namespaces", "a", "B", "c"])
        );
        assert_eq!(namespaced_reference("rbac/ClusterRole/x"), None);
        assert_eq!(namespaced_reference("a/namespaces/b c/K/n"), None);
    }
}
