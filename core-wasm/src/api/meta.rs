//! Kubernetes object metadata and conditions (the parts Porch uses).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// `metav1.ObjectMeta`, reduced to the fields the controllers read or write;
/// any other field is kept in `extra` so nothing is lost on a round trip.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ObjectMeta {
    /// Object name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Server-generated name prefix.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub generate_name: String,
    /// Namespace.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Unique id.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// Optimistic-concurrency token.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
    /// Spec generation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    /// Creation time (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<String>,
    /// Set when deletion was requested (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_timestamp: Option<String>,
    /// Labels.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "null_as_default"
    )]
    #[cfg_attr(feature = "schema", schemars(with = "BTreeMap<String, String>"))]
    pub labels: BTreeMap<String, String>,
    /// Annotations.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "null_as_default"
    )]
    #[cfg_attr(feature = "schema", schemars(with = "BTreeMap<String, String>"))]
    pub annotations: BTreeMap<String, String>,
    /// Owners.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_as_default"
    )]
    #[cfg_attr(feature = "schema", schemars(with = "Vec<OwnerReference>"))]
    pub owner_references: Vec<OwnerReference>,
    /// Finalizers.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_as_default"
    )]
    #[cfg_attr(feature = "schema", schemars(with = "Vec<String>"))]
    pub finalizers: Vec<String>,
    /// Fields not modelled above (managedFields, …), kept verbatim.
    #[serde(flatten)]
    pub extra: BTreeMap<String, serde_json::Value>,
}

/// Reads `null` as the empty value, as Go's JSON decoder reads it into a
/// nil map or slice (`labels: null` in a file is no labels).
pub(crate) fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

impl ObjectMeta {
    /// Whether any owner reference carries `uid`.
    pub fn is_owned_by(&self, uid: &str) -> bool {
        !uid.is_empty() && self.owner_references.iter().any(|o| o.uid == uid)
    }
}

/// `metav1.OwnerReference`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct OwnerReference {
    /// API version of the owner.
    pub api_version: String,
    /// Kind of the owner.
    pub kind: String,
    /// Name of the owner.
    pub name: String,
    /// UID of the owner.
    pub uid: String,
    /// Whether the owner is the managing controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller: Option<bool>,
    /// Whether deletion of the owner waits for this object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_owner_deletion: Option<bool>,
}

/// `metav1.Condition` (status conditions of our CRDs).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// Condition type (`Ready`, `Stalled`).
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// Generation the condition was computed for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Last time the status flipped (RFC 3339).
    #[serde(default)]
    pub last_transition_time: String,
    /// Machine-readable reason.
    pub reason: String,
    /// Human-readable message.
    #[serde(default)]
    pub message: String,
}

impl Condition {
    /// A condition with no generation and no transition time yet (the
    /// writer sets them).
    pub fn new(type_: &str, status: &str, reason: &str, message: &str) -> Condition {
        Condition {
            type_: type_.to_string(),
            status: status.to_string(),
            observed_generation: None,
            last_transition_time: String::new(),
            reason: reason.to_string(),
            message: message.to_string(),
        }
    }
}

/// `meta.SetStatusCondition`: replaces the condition of the same type,
/// keeping its transition time unless the status changed; `now` is used for
/// new or flipped conditions.
pub fn set_status_condition(conditions: &mut Vec<Condition>, mut new: Condition, now: &str) {
    match conditions.iter_mut().find(|c| c.type_ == new.type_) {
        Some(existing) => {
            if existing.status != new.status {
                existing.status = new.status;
                existing.last_transition_time = if new.last_transition_time.is_empty() {
                    now.to_string()
                } else {
                    new.last_transition_time
                };
            }
            existing.reason = new.reason;
            existing.message = new.message;
            existing.observed_generation = new.observed_generation;
        }
        None => {
            if new.last_transition_time.is_empty() {
                new.last_transition_time = now.to_string();
            }
            conditions.push(new);
        }
    }
}
