//! The Kptfile as Porch's Go code sees it after `ko.As(&kptfilev1.KptFile)`:
//! only the fields of kpt's Go types, read with `encoding/json` rules
//! (unknown fields ignored, `null` means "not set", a value of the wrong
//! JSON type is an error).
//!
//! Two uses: change detection compares these projections (upstream's
//! `kptfilesEqual`: formatting, comments and unknown fields do not count),
//! and config injection refuses a Kptfile whose known fields do not fit
//! their types, as upstream's `As` does.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

/// A Go `string` field: a JSON string, or `null` for the empty string.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct GoString(pub String);

impl<'de> Deserialize<'de> for GoString {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(GoString(
            Option::<String>::deserialize(d)?.unwrap_or_default(),
        ))
    }
}

/// A Go slice, map or struct value field: `null` leaves the zero value.
fn nullable<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

type StringMap = BTreeMap<String, GoString>;

/// kyaml's `ObjectMeta` (name, namespace, labels, annotations).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
struct MetaView {
    #[serde(default)]
    name: GoString,
    #[serde(default)]
    namespace: GoString,
    #[serde(default, deserialize_with = "nullable")]
    labels: StringMap,
    #[serde(default, deserialize_with = "nullable")]
    annotations: StringMap,
}

/// `upstream.git`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
struct GitView {
    #[serde(default)]
    repo: GoString,
    #[serde(default)]
    directory: GoString,
    #[serde(default, rename = "ref")]
    git_ref: GoString,
}

/// `upstream`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
struct UpstreamView {
    #[serde(default, rename = "type")]
    type_: GoString,
    #[serde(default)]
    git: Option<GitView>,
    #[serde(default)]
    update_strategy: GoString,
}

/// `upstreamLock.git`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
struct GitLockView {
    #[serde(default)]
    repo: GoString,
    #[serde(default)]
    directory: GoString,
    #[serde(default, rename = "ref")]
    git_ref: GoString,
    #[serde(default)]
    commit: GoString,
}

/// `upstreamLock`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
struct UpstreamLockView {
    #[serde(default, rename = "type")]
    type_: GoString,
    #[serde(default)]
    git: Option<GitLockView>,
}

/// `info.readinessGates[]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GateView {
    /// The condition type that gates readiness.
    #[serde(default)]
    pub condition_type: GoString,
}

/// `info` (`PackageInfo`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PackageInfoView {
    /// `site`.
    #[serde(default)]
    pub site: GoString,
    /// `emails`.
    #[serde(default, deserialize_with = "nullable")]
    pub emails: Vec<GoString>,
    /// `license`.
    #[serde(default)]
    pub license: GoString,
    /// `licenseFile`.
    #[serde(default)]
    pub license_file: GoString,
    /// `readinessGates`.
    #[serde(default, deserialize_with = "nullable")]
    pub readiness_gates: Vec<GateView>,
    /// `description`.
    #[serde(default)]
    pub description: GoString,
    /// `keywords`.
    #[serde(default, deserialize_with = "nullable")]
    pub keywords: Vec<GoString>,
    /// `man`.
    #[serde(default)]
    pub man: GoString,
}

/// `status.conditions[]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct ConditionView {
    /// `type`.
    #[serde(default, rename = "type")]
    pub type_: GoString,
    /// `status`.
    #[serde(default)]
    pub status: GoString,
    /// `message`.
    #[serde(default)]
    pub message: GoString,
    /// `reason`.
    #[serde(default)]
    pub reason: GoString,
}

/// `status`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct StatusView {
    /// `conditions`.
    #[serde(default, deserialize_with = "nullable")]
    pub conditions: Vec<ConditionView>,
}

/// A function selector.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SelectorView {
    #[serde(default)]
    api_version: GoString,
    #[serde(default)]
    kind: GoString,
    #[serde(default)]
    name: GoString,
    #[serde(default)]
    namespace: GoString,
    #[serde(default, deserialize_with = "nullable")]
    labels: StringMap,
    #[serde(default, deserialize_with = "nullable")]
    annotations: StringMap,
}

/// A pipeline function.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FunctionView {
    #[serde(default)]
    name: GoString,
    #[serde(default)]
    image: GoString,
    #[serde(default)]
    exec: GoString,
    #[serde(default)]
    config_path: GoString,
    #[serde(default, deserialize_with = "nullable")]
    config_map: StringMap,
    #[serde(default)]
    tag: GoString,
    #[serde(default, deserialize_with = "nullable")]
    selectors: Vec<SelectorView>,
    #[serde(default, deserialize_with = "nullable")]
    exclude: Vec<SelectorView>,
    #[serde(default)]
    config_ref: Option<ResourceReferenceView>,
    #[serde(default)]
    when: GoString,
}

/// `configRef`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResourceReferenceView {
    #[serde(default)]
    api_version: GoString,
    #[serde(default)]
    kind: GoString,
    #[serde(default)]
    name: GoString,
    #[serde(default)]
    namespace: GoString,
}

/// `pipeline`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
struct PipelineView {
    #[serde(default, deserialize_with = "nullable")]
    mutators: Vec<FunctionView>,
    #[serde(default, deserialize_with = "nullable")]
    validators: Vec<FunctionView>,
}

/// `inventory`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
struct InventoryView {
    #[serde(default)]
    namespace: GoString,
    #[serde(default)]
    name: GoString,
    #[serde(default, rename = "inventoryID")]
    inventory_id: GoString,
    #[serde(default, deserialize_with = "nullable")]
    labels: StringMap,
    #[serde(default, deserialize_with = "nullable")]
    annotations: StringMap,
}

/// The typed projection of a Kptfile (`kptfilev1.KptFile`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KptfileView {
    api_version: GoString,
    kind: GoString,
    metadata: MetaView,
    upstream: Option<UpstreamView>,
    upstream_lock: Option<UpstreamLockView>,
    /// `info`, when set.
    pub info: Option<PackageInfoView>,
    /// `status`, when set.
    pub status: Option<StatusView>,
    pipeline: Option<PipelineView>,
    inventory: Option<InventoryView>,
}

/// A field of the Kptfile that does not fit kpt's Go type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewError {
    /// Top-level field (`info`, `pipeline`, …), empty for the whole object.
    pub field: String,
    /// What is wrong, in serde's words.
    pub detail: String,
}

fn field<T: DeserializeOwned + Default>(
    obj: &Map<String, Value>,
    key: &str,
) -> Result<T, ViewError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(T::default()),
        Some(v) => T::deserialize(v).map_err(|e| ViewError {
            field: key.to_string(),
            detail: e.to_string(),
        }),
    }
}

fn pointer<T: DeserializeOwned>(
    obj: &Map<String, Value>,
    key: &str,
) -> Result<Option<T>, ViewError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => T::deserialize(v).map(Some).map_err(|e| ViewError {
            field: key.to_string(),
            detail: e.to_string(),
        }),
    }
}

impl KptfileView {
    /// Reads the projection from the Kptfile as JSON (`yaml::to_json` of
    /// its object).
    pub fn from_json(value: &Value) -> Result<KptfileView, ViewError> {
        let empty = Map::new();
        let obj = match value {
            Value::Object(m) => m,
            Value::Null => &empty,
            other => {
                return Err(ViewError {
                    field: String::new(),
                    detail: format!("expected a mapping, found {other}"),
                })
            }
        };
        Ok(KptfileView {
            api_version: field(obj, "apiVersion")?,
            kind: field(obj, "kind")?,
            metadata: field(obj, "metadata")?,
            upstream: pointer(obj, "upstream")?,
            upstream_lock: pointer(obj, "upstreamLock")?,
            info: pointer(obj, "info")?,
            status: pointer(obj, "status")?,
            pipeline: pointer(obj, "pipeline")?,
            inventory: pointer(obj, "inventory")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn null_and_unknown_fields_are_ignored() {
        let a = KptfileView::from_json(&json!({
            "apiVersion": "kpt.dev/v1", "kind": "Kptfile",
            "metadata": {"name": "x", "uid": "ignored"},
            "info": {"description": null, "other": 1},
            "pipeline": {"mutators": null}
        }))
        .unwrap();
        let b = KptfileView::from_json(&json!({
            "apiVersion": "kpt.dev/v1", "kind": "Kptfile",
            "metadata": {"name": "x"},
            "info": {},
            "pipeline": {}
        }))
        .unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn wrong_types_name_the_field() {
        let err = KptfileView::from_json(&json!({"info": "text"})).unwrap_err();
        assert_eq!(err.field, "info");
        let err = KptfileView::from_json(&json!({"metadata": {"name": 5}})).unwrap_err();
        assert_eq!(err.field, "metadata");
        assert!(KptfileView::from_json(&json!([1])).is_err());
    }

    #[test]
    fn pointers_distinguish_absent_from_empty() {
        let a = KptfileView::from_json(&json!({"info": {}})).unwrap();
        let b = KptfileView::from_json(&json!({})).unwrap();
        assert_ne!(a, b);
    }
}
