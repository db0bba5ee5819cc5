//! Kubernetes label selectors (`metav1.LabelSelector`) with the semantics of
//! `metav1.LabelSelectorAsSelector`:
//!
//! * an empty selector (no `matchLabels`, no `matchExpressions`) selects
//!   everything;
//! * `matchLabels` entries and `matchExpressions` are ANDed;
//! * `In` needs the key present with one of the values, `NotIn` matches when
//!   the key is absent or its value is not listed, `Exists` / `DoesNotExist`
//!   test presence only;
//! * an unknown operator, `In`/`NotIn` without values, `Exists` /
//!   `DoesNotExist` with values, and malformed keys or values are errors
//!   (worded as Kubernetes words them).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::api::label_selector::{self, is_qualified_name_part};

/// `metav1.LabelSelector`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct LabelSelector {
    /// Exact `key: value` matches.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub match_labels: BTreeMap<String, String>,
    /// Set-based requirements.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

/// `metav1.LabelSelectorRequirement`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct LabelSelectorRequirement {
    /// Label key.
    #[serde(default)]
    pub key: String,
    /// `In`, `NotIn`, `Exists` or `DoesNotExist`.
    #[serde(default)]
    pub operator: String,
    /// Values for `In` / `NotIn`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
}

/// A selector that cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// The operator is not one of the four.
    #[error("{0:?} is not a valid label selector operator")]
    InvalidOperator(String),
    /// A key, value or value set is malformed.
    #[error("{0}")]
    Invalid(String),
}

/// A parsed requirement operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operator {
    Equals,
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Requirement {
    key: String,
    operator: Operator,
    values: Vec<String>,
}

impl Requirement {
    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = labels.get(&self.key);
        match self.operator {
            Operator::Equals | Operator::In => value.is_some_and(|v| self.values.contains(v)),
            Operator::NotIn => value.is_none_or(|v| !self.values.contains(v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
        }
    }
}

/// A validated selector, ready to match label sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector {
    requirements: Vec<Requirement>,
}

impl Selector {
    /// Whether every requirement holds for `labels` (always, for an empty
    /// selector).
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }

    /// Whether this selector selects everything.
    pub fn is_everything(&self) -> bool {
        self.requirements.is_empty()
    }
}

impl LabelSelector {
    /// `metav1.LabelSelectorAsSelector` (for a present selector).
    pub fn to_selector(&self) -> Result<Selector, SelectorError> {
        let mut requirements =
            Vec::with_capacity(self.match_labels.len() + self.match_expressions.len());
        for (key, value) in &self.match_labels {
            requirements.push(new_requirement(
                key,
                Operator::Equals,
                std::slice::from_ref(value),
            )?);
        }
        for expr in &self.match_expressions {
            let operator = match expr.operator.as_str() {
                "In" => Operator::In,
                "NotIn" => Operator::NotIn,
                "Exists" => Operator::Exists,
                "DoesNotExist" => Operator::DoesNotExist,
                other => return Err(SelectorError::InvalidOperator(other.to_string())),
            };
            requirements.push(new_requirement(&expr.key, operator, &expr.values)?);
        }
        Ok(Selector { requirements })
    }

    /// Builds the selector and matches `labels` in one go.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> Result<bool, SelectorError> {
        Ok(self.to_selector()?.matches(labels))
    }
}

/// `labels.NewRequirement`: validates the key, the value count for the
/// operator, and each value.
fn new_requirement(
    key: &str,
    operator: Operator,
    values: &[String],
) -> Result<Requirement, SelectorError> {
    let mut errors = Vec::new();
    if let Err(msg) = validate_qualified_name(key) {
        errors.push(format!("key: Invalid value: {key:?}: {msg}"));
    }
    match operator {
        Operator::In | Operator::NotIn if values.is_empty() => errors.push(
            "values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty"
                .to_string(),
        ),
        Operator::Equals if values.len() != 1 => errors.push(format!(
            "values: Invalid value: {values:?}: exact-match compatibility requires one single value"
        )),
        Operator::Exists | Operator::DoesNotExist if !values.is_empty() => errors.push(format!(
            "values: Invalid value: {values:?}: values set must be empty for exists and does not exist"
        )),
        _ => {}
    }
    for (i, value) in values.iter().enumerate() {
        if let Err(msg) = validate_label_value(value) {
            errors.push(format!("values[{i}]: Invalid value: {value:?}: {msg}"));
        }
    }
    match errors.len() {
        0 => Ok(Requirement {
            key: key.to_string(),
            operator,
            values: values.to_vec(),
        }),
        1 => Err(SelectorError::Invalid(errors.remove(0))),
        _ => Err(SelectorError::Invalid(format!("[{}]", errors.join(", ")))),
    }
}

const QUALIFIED_NAME_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

/// `validation.IsDNS1123Subdomain`: the rule for object names; the error
/// is apimachinery's message.
pub fn is_dns1123_subdomain(s: &str) -> Result<(), String> {
    if s.len() > 253 {
        return Err("must be no more than 253 characters".to_string());
    }
    if label_selector::is_dns1123_subdomain(s) {
        Ok(())
    } else {
        Err(DNS1123_SUBDOMAIN_MSG.to_string())
    }
}

/// `validation.IsQualifiedName` (label keys).
fn validate_qualified_name(key: &str) -> Result<(), String> {
    let parts: Vec<&str> = key.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                return Err("prefix part must be non-empty".to_string());
            }
            is_dns1123_subdomain(prefix).map_err(|m| format!("prefix part {m}"))?;
            *name
        }
        _ => {
            return Err(String::from(
                "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            ))
        }
    };
    if name.is_empty() {
        return Err("name part must be non-empty".to_string());
    }
    if name.len() > 63 {
        return Err("name part must be no more than 63 characters".to_string());
    }
    if !is_qualified_name_part(name) {
        return Err(QUALIFIED_NAME_MSG.to_string());
    }
    Ok(())
}

/// `validation.IsValidLabelValue`.
fn validate_label_value(value: &str) -> Result<(), String> {
    if value.len() > 63 {
        return Err("must be no more than 63 characters".to_string());
    }
    if !value.is_empty() && !is_qualified_name_part(value) {
        return Err(LABEL_VALUE_MSG.to_string());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn expr(key: &str, op: &str, values: &[&str]) -> LabelSelectorRequirement {
        LabelSelectorRequirement {
            key: key.to_string(),
            operator: op.to_string(),
            values: values.iter().map(|v| v.to_string()).collect(),
        }
    }

    fn sel(exprs: Vec<LabelSelectorRequirement>) -> LabelSelector {
        LabelSelector {
            match_labels: BTreeMap::new(),
            match_expressions: exprs,
        }
    }

    #[test]
    fn empty_selector_selects_everything() {
        let s = LabelSelector::default().to_selector().unwrap();
        assert!(s.is_everything());
        assert!(s.matches(&labels(&[])));
        assert!(s.matches(&labels(&[("a", "b")])));
    }

    #[test]
    fn match_labels_need_every_pair() {
        let s = LabelSelector {
            match_labels: labels(&[("env", "prod"), ("tier", "edge")]),
            match_expressions: vec![],
        };
        assert!(s
            .matches(&labels(&[("env", "prod"), ("tier", "edge"), ("x", "y")]))
            .unwrap());
        assert!(!s.matches(&labels(&[("env", "prod")])).unwrap());
        assert!(!s
            .matches(&labels(&[("env", "dev"), ("tier", "edge")]))
            .unwrap());
        assert!(!s.matches(&labels(&[])).unwrap());
    }

    #[test]
    fn in_needs_the_key_with_a_listed_value() {
        let s = sel(vec![expr("env", "In", &["prod", "stage"])]);
        assert!(s.matches(&labels(&[("env", "prod")])).unwrap());
        assert!(s.matches(&labels(&[("env", "stage")])).unwrap());
        assert!(!s.matches(&labels(&[("env", "dev")])).unwrap());
        assert!(!s.matches(&labels(&[])).unwrap(), "missing key");
    }

    #[test]
    fn not_in_matches_missing_keys_and_other_values() {
        let s = sel(vec![expr("env", "NotIn", &["prod"])]);
        assert!(!s.matches(&labels(&[("env", "prod")])).unwrap());
        assert!(s.matches(&labels(&[("env", "dev")])).unwrap());
        assert!(s.matches(&labels(&[])).unwrap(), "missing key");
    }

    #[test]
    fn exists_and_does_not_exist_test_presence() {
        let exists = sel(vec![expr("env", "Exists", &[])]);
        assert!(exists.matches(&labels(&[("env", "")])).unwrap());
        assert!(!exists.matches(&labels(&[("other", "x")])).unwrap());
        let absent = sel(vec![expr("env", "DoesNotExist", &[])]);
        assert!(!absent.matches(&labels(&[("env", "x")])).unwrap());
        assert!(absent.matches(&labels(&[])).unwrap());
    }

    #[test]
    fn labels_and_expressions_are_anded() {
        let s = LabelSelector {
            match_labels: labels(&[("tier", "edge")]),
            match_expressions: vec![expr("env", "In", &["prod"])],
        };
        assert!(s
            .matches(&labels(&[("tier", "edge"), ("env", "prod")]))
            .unwrap());
        assert!(!s.matches(&labels(&[("tier", "edge")])).unwrap());
        assert!(!s.matches(&labels(&[("env", "prod")])).unwrap());
    }

    #[test]
    fn invalid_operator_is_an_error() {
        let err = sel(vec![expr("env", "Equals", &["x"])])
            .to_selector()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "\"Equals\" is not a valid label selector operator"
        );
    }

    #[test]
    fn malformed_requirements_are_errors() {
        let err = sel(vec![expr("env", "In", &[])]).to_selector().unwrap_err();
        assert!(
            err.to_string().contains("values set can't be empty"),
            "{err}"
        );
        let err = sel(vec![expr("env", "Exists", &["x"])])
            .to_selector()
            .unwrap_err();
        assert!(
            err.to_string().contains("values set must be empty"),
            "{err}"
        );
        let err = sel(vec![expr("bad key!", "Exists", &[])])
            .to_selector()
            .unwrap_err();
        assert!(err.to_string().starts_with("key: Invalid value"), "{err}");
        let err = LabelSelector {
            match_labels: labels(&[("ok", "not ok")]),
            match_expressions: vec![],
        }
        .to_selector()
        .unwrap_err();
        assert!(err.to_string().contains("a valid label"), "{err}");
        assert!(sel(vec![expr("example.com/name", "Exists", &[])])
            .to_selector()
            .is_ok());
        assert!(sel(vec![expr("Example.com/name", "Exists", &[])])
            .to_selector()
            .is_err());
    }
}
