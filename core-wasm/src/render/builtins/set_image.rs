//! The catalog's `set-image` function (`functions/go/set-image`, at the
//! catalog commit the conformance cases come from): the image `name`
//! matches (kustomize's `IsImageMatched`, the name read as a regular
//! expression, then an optional tag and digest) gets `newName`, `newTag`
//! or `digest`.
//!
//! * Containers: `spec.containers` of a Pod and
//!   `spec.template.spec.containers` of a Deployment, StatefulSet,
//!   ReplicaSet, DaemonSet or PodTemplate. The catalog reads the init
//!   containers under a misspelt key (`iniContainers`), so they are left as
//!   they are, as the catalog leaves them.
//! * `additionalImageFields` (a `SetImage` config): kustomize field specs
//!   (`group`, `version`, `kind`, `path` with `[]` for each item of a
//!   list), through kustomize's image tag updater.
//! * The config is a ConfigMap (`data`: `name`, `newName`, `newTag`,
//!   `digest`) or a `SetImage` (`image:` with the same fields).
//! * One result: `summary: updated a total of N image(s)`, N counting every
//!   matched image.

use crate::render::result::FnResult;
use crate::yaml::{Kind, Node, Style};

use super::set_annotations::data_map;
use super::set_labels::{group_version_kind, FAILURE_STDERR};
use super::{FnInput, FnOutput, FUNCTION_FAILURE};

/// What the config asks for.
#[derive(Debug, Default)]
struct Image {
    name: String,
    new_name: String,
    new_tag: String,
    digest: String,
    /// [`image_matcher`] of `name`.
    matcher: Option<regex::Regex>,
}

/// A kustomize field spec of `additionalImageFields`.
#[derive(Debug, Default)]
struct FieldSpec {
    group: String,
    version: String,
    kind: String,
    path: String,
}

/// Runs `set-image` on the items.
pub fn run(input: FnInput) -> FnOutput {
    let mut items = input.items;
    let config = input.function_config.as_ref().map(Node::root);
    let (image, fields) = match configure(config) {
        Ok(c) => c,
        Err(e) => {
            return FnOutput {
                items,
                results: vec![
                    FnResult::error(format!("invalid FunctionConfig: {e}")),
                    summary(0),
                ],
                stderr: FAILURE_STDERR.to_string(),
                failure: Some(FUNCTION_FAILURE.to_string()),
            }
        }
    };
    let mut count = 0usize;
    for item in &mut items {
        let root = item.root_mut();
        let kind = root.get_str(&["kind"]).unwrap_or_default().to_string();
        let pod_spec: &[&str] = match kind.as_str() {
            "Pod" => &["spec"],
            "Deployment" | "StatefulSet" | "ReplicaSet" | "DaemonSet" | "PodTemplate" => {
                &["spec", "template", "spec"]
            }
            _ => &[],
        };
        if pod_spec.is_empty() {
            continue;
        }
        let Some(containers) = root
            .get_path_mut(pod_spec)
            .and_then(|spec| spec.get_mut("containers"))
            .filter(|c| c.kind == Kind::Sequence)
        else {
            continue;
        };
        for container in &mut containers.content {
            let Some(node) = container
                .get_mut("image")
                .filter(|n| n.kind == Kind::Scalar)
            else {
                continue;
            };
            if !is_image_matched(&node.value, &image) {
                continue;
            }
            count += 1;
            let new = container_image(&node.value, &image);
            if new != node.value {
                set_string(node, new);
            }
        }
    }
    if !fields.is_empty() {
        for item in &mut items {
            let (group, version, kind) = group_version_kind(item.root());
            if kind == "CustomResourceDefinition" && group == "apiextensions.k8s.io" {
                continue;
            }
            for spec in &fields {
                let selected = (spec.group.is_empty() || spec.group == group)
                    && (spec.version.is_empty() || spec.version == version)
                    && (spec.kind.is_empty() || spec.kind == kind);
                if !selected {
                    continue;
                }
                let path: Vec<&str> = spec.path.split('/').filter(|p| !p.is_empty()).collect();
                update_path(item.root_mut(), &path, &image, &mut count);
            }
        }
    }
    FnOutput {
        items,
        results: vec![summary(count)],
        ..FnOutput::default()
    }
}

fn summary(count: usize) -> FnResult {
    FnResult::info(format!("summary: updated a total of {count} image(s)"))
}

/// The image and field specs the config gives, or what is wrong with it.
fn configure(config: Option<&Node>) -> Result<(Image, Vec<FieldSpec>), String> {
    let mut image = Image::default();
    let mut fields = Vec::new();
    if let Some(c) = config {
        if c.get_str(&["kind"]) == Some("ConfigMap") {
            for (key, value) in data_map(c) {
                match key.as_str() {
                    "name" => image.name = value,
                    "newName" => image.new_name = value,
                    "newTag" => image.new_tag = value,
                    "digest" => image.digest = value,
                    _ => return Err(format!("ConfigMap has wrong field name {key}")),
                }
            }
        } else {
            let text = |path: &[&str]| c.get_str(path).unwrap_or_default().to_string();
            image = Image {
                name: text(&["image", "name"]),
                new_name: text(&["image", "newName"]),
                new_tag: text(&["image", "newTag"]),
                digest: text(&["image", "digest"]),
                ..Image::default()
            };
            if let Some(list) = c
                .get("additionalImageFields")
                .filter(|l| l.kind == Kind::Sequence)
            {
                for f in &list.content {
                    let text = |k: &str| f.get_str(&[k]).unwrap_or_default().to_string();
                    fields.push(FieldSpec {
                        group: text("group"),
                        version: text("version"),
                        kind: text("kind"),
                        path: text("path"),
                    });
                }
            }
        }
    }
    if image.name.is_empty() {
        return Err("must specify `name`".into());
    }
    if image.new_name.is_empty() && image.new_tag.is_empty() && image.digest.is_empty() {
        return Err("must specify one of `newName`, `newTag`, or `digest`".into());
    }
    // Compiled once: every container and field is matched against it.
    image.matcher = image_matcher(&image.name);
    Ok((image, fields))
}

/// kustomize's `IsImageMatched` pattern: `name` (a regular expression, as
/// kustomize compiles it) followed by an optional tag and digest; `None`
/// when it does not compile (nothing matches).
fn image_matcher(name: &str) -> Option<regex::Regex> {
    regex::Regex::new(&format!(
        "^{name}(:[a-zA-Z0-9_.{{}}-]*)?(@sha256:[a-zA-Z0-9_.{{}}-]*)?$"
    ))
    .ok()
}

/// Whether `value` names the configured image.
fn is_image_matched(value: &str, image: &Image) -> bool {
    image.matcher.as_ref().is_some_and(|re| re.is_match(value))
}

/// kustomize's `image.Split`: name, tag and digest, the tag with its `:`
/// and the digest with its `@` (a `:` before the first `/` is a port).
fn split(image: &str) -> (&str, &str, &str) {
    let slash = image.find('/').filter(|&i| i > 0).unwrap_or(0);
    let search = &image[slash..];
    let at = search.find('@').map(|i| i + slash);
    let colon = search.find(':').map(|i| i + slash);
    match (colon, at) {
        (None, None) => (image, "", ""),
        (c, Some(a)) if c.is_none_or(|c| a < c) => (&image[..a], "", &image[a..]),
        (Some(c), Some(a)) => (&image[..c], &image[c..a], &image[a..]),
        (Some(c), None) => (&image[..c], &image[c..], ""),
        (None, Some(_)) => unreachable!("covered by the digest-only arm"),
    }
}

/// The catalog's `getNewImageName` for containers: a new tag or a digest
/// replaces what follows the name (a digest wins over a tag).
fn container_image(old: &str, image: &Image) -> String {
    let (name, tag, digest) = split(old);
    let name = if image.new_name.is_empty() {
        name
    } else {
        &image.new_name
    };
    let mut tag = tag.to_string();
    if !image.new_tag.is_empty() {
        tag = format!(":{}", image.new_tag);
    }
    if !image.digest.is_empty() {
        tag = format!("@{}", image.digest);
    }
    if tag.is_empty() {
        format!("{name}{digest}")
    } else {
        format!("{name}{tag}")
    }
}

/// kustomize's image tag updater (`imageTagUpdater.SetImageValue`): a new
/// tag and a new digest may both be set.
fn field_image(old: &str, image: &Image) -> String {
    let (name, tag, digest) = split(old);
    let mut name = if image.new_name.is_empty() {
        name.to_string()
    } else {
        image.new_name.clone()
    };
    let (mut tag, mut digest) = (
        tag.trim_start_matches(':').to_string(),
        digest.trim_start_matches('@').to_string(),
    );
    match (image.new_tag.is_empty(), image.digest.is_empty()) {
        (false, false) => (tag, digest) = (image.new_tag.clone(), image.digest.clone()),
        (false, true) => (tag, digest) = (image.new_tag.clone(), String::new()),
        (true, false) => (tag, digest) = (String::new(), image.digest.clone()),
        (true, true) => {}
    }
    if !tag.is_empty() {
        name.push(':');
        name.push_str(&tag);
    }
    if !digest.is_empty() {
        name.push('@');
        name.push_str(&digest);
    }
    name
}

/// Follows a field spec's path (no field is created) and updates the
/// matching images at its end.
fn update_path(node: &mut Node, path: &[&str], image: &Image, count: &mut usize) {
    let Some((first, rest)) = path.split_first() else {
        if node.kind == Kind::Scalar && is_image_matched(&node.value, image) {
            *count += 1;
            let new = field_image(&node.value, image);
            if new != node.value {
                set_string(node, new);
            }
        }
        return;
    };
    let (key, each) = match first.strip_suffix("[]") {
        Some(k) => (k, true),
        None => (*first, false),
    };
    let Some(next) = node.get_mut(key) else {
        return;
    };
    if each {
        if next.kind == Kind::Sequence {
            for item in &mut next.content {
                update_path(item, rest, image, count);
            }
        }
    } else {
        update_path(next, rest, image, count);
    }
}

/// Sets a scalar to a string, as the SDK's `SetNestedString` writes it
/// (plain unless the text needs quotes), keeping its comments.
fn set_string(node: &mut Node, value: String) {
    node.value = value;
    node.tag = "!!str".into();
    node.style = Style::plain();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_keeps_the_separators_and_a_registry_port() {
        assert_eq!(split("nginx"), ("nginx", "", ""));
        assert_eq!(split("nginx:1.2"), ("nginx", ":1.2", ""));
        assert_eq!(split("nginx@sha256:ab"), ("nginx", "", "@sha256:ab"));
        assert_eq!(
            split("nginx:1.2@sha256:ab"),
            ("nginx", ":1.2", "@sha256:ab")
        );
        assert_eq!(
            split("reg:5000/team/app:v1"),
            ("reg:5000/team/app", ":v1", "")
        );
    }

    #[test]
    fn new_names_tags_and_digests() {
        let img = |n: &str, t: &str, d: &str| Image {
            name: "nginx".into(),
            new_name: n.into(),
            new_tag: t.into(),
            digest: d.into(),
            ..Image::default()
        };
        assert_eq!(
            container_image("nginx:1.2", &img("b/nginx", "", "")),
            "b/nginx:1.2"
        );
        assert_eq!(
            container_image("nginx:1.2", &img("", "1.3", "")),
            "nginx:1.3"
        );
        assert_eq!(
            container_image("nginx:1.2", &img("", "1.3", "sha256:x")),
            "nginx@sha256:x"
        );
        assert_eq!(
            container_image("nginx@sha256:y", &img("a", "", "")),
            "a@sha256:y"
        );
        assert_eq!(
            field_image("nginx:1.2", &img("", "1.3", "sha256:x")),
            "nginx:1.3@sha256:x"
        );
        let nginx = Image {
            matcher: image_matcher("nginx"),
            ..Image::default()
        };
        assert!(is_image_matched("nginx:1.2", &nginx));
        assert!(is_image_matched("nginx@sha256:ab", &nginx));
        assert!(!is_image_matched("bitnami/nginx:1.2", &nginx));
        assert!(!is_image_matched("nginx-x:1.2", &nginx));
    }

    #[test]
    fn a_config_without_name_or_change_is_refused() {
        let out = run(FnInput {
            items: Vec::new(),
            function_config: Some(
                crate::yaml::parse_document("apiVersion: v1\nkind: ConfigMap\ndata:\n  name: x\n")
                    .expect("config"),
            ),
        });
        assert_eq!(out.failure.as_deref(), Some(FUNCTION_FAILURE));
        assert_eq!(
            out.results[0].message,
            "invalid FunctionConfig: must specify one of `newName`, `newTag`, or `digest`"
        );
        assert_eq!(
            out.results[1].message,
            "summary: updated a total of 0 image(s)"
        );
    }
}
