//! Mutation 1: the package context (upstream's `ensurePackageContext`).
//!
//! `package-context.yaml` must hold the ConfigMap `kptfile.kpt.dev`; every
//! key of `spec.packageContext.data` is set in its `data`, then every key of
//! `spec.packageContext.removeKeys` is deleted. The new `data` is written as
//! the kpt function SDK writes a Go map: keys sorted, with the keys that
//! were there keeping their place and comments, new keys after them.
//! Keys a PackageVariant added earlier are not removed unless listed in
//! `removeKeys`.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::api::PackageVariant;
use crate::yaml::{self, Kind, Node};

use super::error::MutationError;
use super::{file_object, PrrRef};
use crate::krm::objects::{emit_object, scalar_string};

/// The file holding the package context.
pub const PACKAGE_CONTEXT_FILE: &str = "package-context.yaml";
/// Kind of the package context object.
pub const PACKAGE_CONTEXT_KIND: &str = "ConfigMap";
/// Name of the package context ConfigMap.
pub const PACKAGE_CONTEXT_NAME: &str = "kptfile.kpt.dev";

/// Applies `spec.packageContext` to `package-context.yaml` in `files`.
/// Nothing is read or written when the variant has no package context or
/// both its `data` and `removeKeys` are empty. Returns whether the file was
/// rewritten.
pub fn ensure_package_context(
    pv: &PackageVariant,
    prr: PrrRef<'_>,
    files: &mut BTreeMap<String, String>,
) -> Result<bool, MutationError> {
    let Some(ctx) = &pv.spec.package_context else {
        return Ok(false);
    };
    if ctx.data.is_empty() && ctx.remove_keys.is_empty() {
        return Ok(false);
    }
    let mut cm = file_object(
        prr,
        files,
        PACKAGE_CONTEXT_FILE,
        Some(PACKAGE_CONTEXT_KIND),
        Some(PACKAGE_CONTEXT_NAME),
    )?;
    let Some(data_node) = cm.get("data") else {
        return Err(MutationError::NoDataField {
            prr: prr.to_string(),
        });
    };
    let mut data =
        string_map(&cm, data_node).map_err(|detail| MutationError::InvalidDataField {
            prr: prr.to_string(),
            detail,
        })?;
    for (k, v) in &ctx.data {
        data.insert(k.clone(), Value::String(v.clone()));
    }
    for k in &ctx.remove_keys {
        data.remove(k);
    }
    cm.set_json("data", &Value::Object(data))
        .map_err(MutationError::yaml(PACKAGE_CONTEXT_FILE))?;
    let text = emit_object(&cm).map_err(MutationError::yaml(PACKAGE_CONTEXT_FILE))?;
    files.insert(PACKAGE_CONTEXT_FILE.to_string(), text);
    Ok(true)
}

/// Reads a mapping as yaml.v3 decodes it into a Go `map[string]string`:
/// scalars give their text (null gives ""), anything else is an error.
/// `object` is the whole object, where aliases of `node` may point.
fn string_map(object: &Node, node: &Node) -> Result<Map<String, Value>, String> {
    if node.kind != Kind::Mapping {
        return Err(format!("expected a mapping, found {}", describe(node)));
    }
    let has_aliases = node
        .pairs()
        .any(|(k, v)| k.kind == Kind::Alias || v.kind == Kind::Alias || k.tag == "!!merge");
    if has_aliases {
        return string_map_via_json(object);
    }
    let mut out = Map::new();
    for (k, v) in node.pairs() {
        let key = scalar_string(k)
            .ok_or_else(|| format!("a key of data is {}, not a string", describe(k)))?;
        let value = scalar_string(v).ok_or_else(|| {
            format!(
                "the value of data key {key:?} is {}, not a string",
                describe(v)
            )
        })?;
        if out.contains_key(key) {
            return Err(format!("mapping key {key:?} already defined"));
        }
        out.insert(key.to_string(), Value::String(value.to_string()));
    }
    Ok(out)
}

/// [`string_map`] for mappings with aliases or merge keys, expanded first
/// (through the whole object, where the anchors are).
fn string_map_via_json(object: &Node) -> Result<Map<String, Value>, String> {
    let json = yaml::to_json(object).map_err(|e| e.to_string())?;
    let Some(Value::Object(map)) = json.get("data").cloned() else {
        return Err("expected a mapping".to_string());
    };
    map.into_iter()
        .map(|(k, v)| {
            let s = match v {
                Value::String(s) => s,
                Value::Null => String::new(),
                Value::Bool(b) => b.to_string(),
                Value::Number(n) => n.to_string(),
                other => {
                    return Err(format!(
                        "the value of data key {k:?} is {other}, not a string"
                    ))
                }
            };
            Ok((k, Value::String(s)))
        })
        .collect()
}

fn describe(node: &Node) -> &'static str {
    match node.kind {
        Kind::Mapping => "a mapping",
        Kind::Sequence => "a sequence",
        Kind::Scalar if node.is_null() => "null",
        Kind::Scalar => "a scalar",
        Kind::Alias => "an alias",
        Kind::Document => "a document",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::PackageContext;

    fn pv(data: &[(&str, &str)], remove: &[&str]) -> PackageVariant {
        let mut pv = PackageVariant::default();
        pv.spec.package_context = Some(PackageContext {
            data: data
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            remove_keys: remove.iter().map(|s| s.to_string()).collect(),
        });
        pv
    }

    const PRR: PrrRef<'static> = PrrRef {
        namespace: "ns",
        name: "prr",
    };

    fn run(pv: &PackageVariant, text: Option<&str>) -> Result<String, String> {
        let mut files = BTreeMap::new();
        if let Some(t) = text {
            files.insert(PACKAGE_CONTEXT_FILE.to_string(), t.to_string());
        }
        ensure_package_context(pv, PRR, &mut files).map_err(|e| e.to_string())?;
        Ok(files.remove(PACKAGE_CONTEXT_FILE).unwrap_or_default())
    }

    const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kptfile.kpt.dev\ndata:\n  name: example # the package\n";

    #[test]
    fn sets_and_removes_keys() {
        let out = run(&pv(&[("zone", "a"), ("count", "5")], &["gone"]), Some(CM)).unwrap();
        assert_eq!(
            out,
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kptfile.kpt.dev\ndata:\n  name: example # the package\n  count: \"5\"\n  zone: a\n"
        );
    }

    #[test]
    fn nothing_to_do_reads_nothing() {
        assert_eq!(run(&PackageVariant::default(), None).unwrap(), "");
        assert_eq!(run(&pv(&[], &[]), None).unwrap(), "");
    }

    #[test]
    fn errors_name_the_file_and_the_resources() {
        let p = pv(&[("a", "b")], &[]);
        assert_eq!(
            run(&p, None).unwrap_err(),
            "\"package-context.yaml\" not found in PackageRevisionResources 'ns/prr'"
        );
        assert_eq!(
            run(&p, Some("a: [")).unwrap_err(),
            "failed to parse \"package-context.yaml\" of PackageRevisionResources ns/prr: failed to parse input bytes: yaml: line 1: did not find expected node content"
        );
        assert_eq!(
            run(&p, Some("kind: Secret\nmetadata:\n  name: kptfile.kpt.dev\n")).unwrap_err(),
            "\"package-context.yaml\" does not contain kind \"ConfigMap\" in PackageRevisionResources 'ns/prr'"
        );
        assert_eq!(
            run(&p, Some("kind: ConfigMap\nmetadata:\n  name: other\n")).unwrap_err(),
            "\"package-context.yaml\" does not contain resource named \"kptfile.kpt.dev\" in PackageRevisionResources 'ns/prr'"
        );
        assert_eq!(
            run(
                &p,
                Some("kind: ConfigMap\nmetadata:\n  name: kptfile.kpt.dev\n")
            )
            .unwrap_err(),
            "PackageRevisionResources ns/prr PackageContext no data field found"
        );
        assert!(run(
            &p,
            Some("kind: ConfigMap\nmetadata:\n  name: kptfile.kpt.dev\ndata:\n  a: {b: c}\n")
        )
        .unwrap_err()
        .starts_with("PackageRevisionResources ns/prr PackageContext invalid data field: "));
        assert!(run(
            &p,
            Some("kind: ConfigMap\nmetadata:\n  name: kptfile.kpt.dev\ndata: x\n")
        )
        .unwrap_err()
        .contains("invalid data field"));
    }

    #[test]
    fn non_string_scalars_and_aliases_read_as_text() {
        let text = "kind: ConfigMap\nmetadata:\n  name: kptfile.kpt.dev\ndata:\n  num: 1.50\n  e:\n  t: true\n";
        let out = run(&pv(&[("k", "v")], &[]), Some(text)).unwrap();
        assert!(
            out.ends_with("data:\n  num: \"1.50\"\n  e: \"\"\n  t: \"true\"\n  k: v\n"),
            "{out}"
        );
        let text = "kind: ConfigMap\nmetadata:\n  name: kptfile.kpt.dev\nx: &v 7\ndata:\n  a: *v\n";
        let out = run(&pv(&[("k", "v")], &[]), Some(text)).unwrap();
        assert!(out.ends_with("data:\n  a: \"7\"\n  k: v\n"), "{out}");
    }
}
