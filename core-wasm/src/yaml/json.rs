//! Conversions between [`Node`] trees and `serde_json::Value`, so typed API
//! objects can be read and written with serde.
//!
//! * [`to_json`] reads a node as yaml.v3 unmarshals into `interface{}`:
//!   tags decide types, aliases and merge keys (`<<`) are expanded with a cap.
//! * [`from_json`] builds nodes the way the kpt function SDK does when a typed
//!   value is set on an object (`json.Marshal` → map → yaml.v3 node → kyaml
//!   `FieldOrder` sort): keys sorted by field order, strings that would read
//!   back as another type double-quoted, multi-line strings as literal
//!   blocks, numbers formatted as Go formats a `float64`.

use std::collections::HashMap;

use serde_json::{Map, Number, Value};

use super::error::{Result, YamlError};
use super::node::{Kind, Node, Style};
use super::order::compare_keys;
use super::resolve::{
    resolve, resolve_plain, BOOL_TAG, FLOAT_TAG, INT_TAG, MAP_TAG, MERGE_TAG, NULL_TAG, STR_TAG,
};

/// Most nodes an alias expansion may produce for one conversion: stops
/// "billion laughs" documents while leaving real files untouched.
pub const MAX_EXPANDED_NODES: usize = 1_000_000;

/// Reads `node` (a document or any node) as a JSON value. A key repeated in
/// a mapping keeps its last value (as sigs.k8s.io/yaml reads it); see
/// [`to_json_strict`].
pub fn to_json(node: &Node) -> Result<Value> {
    convert_root(node, false)
}

/// [`to_json`] for objects users write (PackageVariants, function
/// configs): a key repeated in a mapping is an error, `line N: mapping key
/// "k" already defined at line M`, as yaml.v3's decoder reports it.
pub fn to_json_strict(node: &Node) -> Result<Value> {
    convert_root(node, true)
}

fn convert_root(node: &Node, strict: bool) -> Result<Value> {
    let mut anchors = HashMap::new();
    collect_anchors(node, &mut anchors);
    let mut cx = Convert {
        anchors,
        budget: MAX_EXPANDED_NODES,
        strict,
    };
    cx.convert(node.root(), 0)
}

/// State of one conversion.
struct Convert<'a> {
    anchors: HashMap<&'a str, &'a Node>,
    /// Nodes the conversion may still produce.
    budget: usize,
    /// Refuse repeated keys.
    strict: bool,
}

fn collect_anchors<'a>(node: &'a Node, anchors: &mut HashMap<&'a str, &'a Node>) {
    if !node.anchor().is_empty() {
        anchors.insert(node.anchor(), node);
    }
    for child in &node.content {
        collect_anchors(child, anchors);
    }
}

impl Convert<'_> {
    fn convert(&mut self, node: &Node, alias_depth: usize) -> Result<Value> {
        self.budget = self.budget.checked_sub(1).ok_or_else(|| {
            YamlError::edit(format!(
                "document expands to more than {MAX_EXPANDED_NODES} nodes through aliases"
            ))
        })?;
        match node.kind {
            Kind::Document => match node.content.first() {
                Some(root) => self.convert(root, alias_depth),
                None => Ok(Value::Null),
            },
            Kind::Alias => {
                if alias_depth > 64 {
                    return Err(YamlError::edit("aliases nested too deeply"));
                }
                let target = *self.anchors.get(node.value.as_str()).ok_or_else(|| {
                    YamlError::edit(format!("unknown anchor '{}' referenced", node.value))
                })?;
                self.convert(target, alias_depth + 1)
            }
            Kind::Scalar => Ok(scalar_value(node)),
            Kind::Sequence => node
                .content
                .iter()
                .map(|c| self.convert(c, alias_depth))
                .collect::<Result<Vec<_>>>()
                .map(Value::Array),
            Kind::Mapping => self.mapping(node, alias_depth),
        }
    }

    fn mapping(&mut self, node: &Node, alias_depth: usize) -> Result<Value> {
        let mut out = Map::new();
        // Keys written in this mapping (merged ones excepted), with their
        // line, when repeated keys are refused.
        let mut written: HashMap<String, u32> = HashMap::new();
        for pair in node.content.chunks(2) {
            let (k, v) = (&pair[0], pair.get(1));
            if k.kind == Kind::Scalar && k.tag == MERGE_TAG {
                if let Some(v) = v {
                    self.merge_into(&mut out, v, alias_depth)?;
                }
                continue;
            }
            let key = match self.convert(k, alias_depth)? {
                Value::String(s) => s,
                Value::Null => "null".to_string(),
                other @ (Value::Bool(_) | Value::Number(_)) => other.to_string(),
                _ => return Err(YamlError::edit("a mapping key must be a scalar")),
            };
            if self.strict {
                if let Some(first) = written.insert(key.clone(), k.line) {
                    return Err(YamlError::edit(format!(
                        "line {}: mapping key {:?} already defined at line {first}",
                        k.line, key
                    )));
                }
            }
            let value = match v {
                Some(v) => self.convert(v, alias_depth)?,
                None => Value::Null,
            };
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }

    /// `<<: *base` or `<<: [*a, *b]`: keys not already set are taken from
    /// the merged maps (earlier maps in a list win).
    fn merge_into(
        &mut self,
        out: &mut Map<String, Value>,
        v: &Node,
        alias_depth: usize,
    ) -> Result<()> {
        let merged = self.convert(v, alias_depth)?;
        let maps = match merged {
            Value::Object(m) => vec![m],
            Value::Array(items) => items
                .into_iter()
                .map(|i| match i {
                    Value::Object(m) => Ok(m),
                    _ => Err(YamlError::edit(
                        "map merge requires map or sequence of maps as the value",
                    )),
                })
                .collect::<Result<Vec<_>>>()?,
            _ => {
                return Err(YamlError::edit(
                    "map merge requires map or sequence of maps as the value",
                ))
            }
        };
        for m in maps {
            for (k, v) in m {
                out.entry(k).or_insert(v);
            }
        }
        Ok(())
    }
}

fn scalar_value(node: &Node) -> Value {
    let resolved;
    let tag: &str = if node.tag.is_empty() {
        resolved = resolve("", &node.value);
        &resolved
    } else {
        &node.tag
    };
    let v = node.value.as_str();
    match tag {
        NULL_TAG => Value::Null,
        BOOL_TAG => match v {
            "true" | "True" | "TRUE" => Value::Bool(true),
            "false" | "False" | "FALSE" => Value::Bool(false),
            _ => Value::String(v.to_string()),
        },
        INT_TAG => parse_int(v).unwrap_or_else(|| Value::String(v.to_string())),
        FLOAT_TAG => {
            let f = v.replace('_', "").parse::<f64>().ok();
            match f.and_then(Number::from_f64) {
                Some(n) => Value::Number(n),
                None => Value::String(v.to_string()),
            }
        }
        _ => Value::String(v.to_string()),
    }
}

fn parse_int(v: &str) -> Option<Value> {
    let plain: String = v.chars().filter(|c| *c != '_').collect();
    let (neg, body) = match plain.as_bytes().first() {
        Some(b'-') => (true, &plain[1..]),
        Some(b'+') => (false, &plain[1..]),
        _ => (false, plain.as_str()),
    };
    let lower = body.to_ascii_lowercase();
    let (digits, radix) = if let Some(r) = lower.strip_prefix("0x") {
        (r, 16)
    } else if let Some(r) = lower.strip_prefix("0o") {
        (r, 8)
    } else if let Some(r) = lower.strip_prefix("0b") {
        (r, 2)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (&lower[1..], 8)
    } else {
        (lower.as_str(), 10)
    };
    let magnitude = u64::from_str_radix(digits, radix).ok()?;
    if neg {
        let n = i64::try_from(magnitude)
            .map(|m| -m)
            .ok()
            .or_else(|| (magnitude == i64::MAX as u64 + 1).then_some(i64::MIN))?;
        Some(Value::Number(n.into()))
    } else {
        Some(Value::Number(magnitude.into()))
    }
}

/// Builds a node from a JSON value as the kpt SDK does for typed values.
pub fn from_json(value: &Value) -> Node {
    build_node(value, true)
}

/// [`from_json`] keeping every object's keys in their order, as yaml.v3
/// marshals a Go struct (field order) when `value` was built in that order.
pub fn from_json_ordered(value: &Value) -> Node {
    build_node(value, false)
}

/// [`from_json_ordered`] taking the value, each part dropped once it is a
/// node.
pub fn from_json_ordered_owned(value: Value) -> Node {
    match value {
        Value::Array(items) => {
            let mut seq = Node::new_sequence();
            seq.content = items.into_iter().map(from_json_ordered_owned).collect();
            seq
        }
        Value::Object(map) => {
            let mut m = Node::new_scalar(MAP_TAG, "");
            m.kind = Kind::Mapping;
            m.content.reserve(map.len() * 2);
            for (k, v) in map {
                m.content.push(string_node(&k));
                m.content.push(from_json_ordered_owned(v));
            }
            m
        }
        other => build_node(&other, false),
    }
}

fn build_node(value: &Value, sort: bool) -> Node {
    match value {
        Value::Null => Node::new_scalar(NULL_TAG, "null"),
        Value::Bool(b) => Node::new_scalar(BOOL_TAG, if *b { "true" } else { "false" }),
        Value::Number(n) => number_node(n),
        Value::String(s) => string_node(s),
        Value::Array(items) => {
            let mut seq = Node::new_sequence();
            seq.content = items.iter().map(|v| build_node(v, sort)).collect();
            seq
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            if sort {
                keys.sort_by(|a, b| compare_keys(a, b));
            }
            let mut m = Node::new_scalar(MAP_TAG, "");
            m.kind = Kind::Mapping;
            for k in keys {
                m.content.push(string_node(k));
                m.content.push(build_node(&map[k], sort));
            }
            m
        }
    }
}

/// A string scalar styled as yaml.v3's `stringv` would write it.
pub fn string_node(s: &str) -> Node {
    let mut n = Node::new_scalar(STR_TAG, s);
    if s.contains('\n') {
        n.style = Style::LITERAL;
    } else if resolve_plain(s) != STR_TAG || is_base60_float(s) || is_old_bool(s) {
        n.style = Style::DOUBLE_QUOTED;
    }
    n
}

/// JSON numbers reach yaml.v3 as Go `float64` (the SDK round-trips typed
/// values through `encoding/json`), so they are written with Go's
/// `strconv.FormatFloat(f, 'g', -1, 64)`.
fn number_node(n: &Number) -> Node {
    let f = n.as_f64().unwrap_or(0.0);
    let text = go_format_float(f);
    let tag = if resolve_plain(&text) == INT_TAG {
        INT_TAG
    } else {
        FLOAT_TAG
    };
    Node::new_scalar(tag, text)
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 64)` for finite values.
pub(crate) fn go_format_float(f: f64) -> String {
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    if !f.is_finite() {
        return if f.is_nan() {
            ".nan".into()
        } else if f > 0.0 {
            ".inf".into()
        } else {
            "-.inf".into()
        };
    }
    // Shortest round-trip digits, via Rust's `{:e}` (also shortest).
    let sci = format!("{f:e}");
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (neg, mant) = match mant.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mant),
    };
    let digits: String = mant.chars().filter(char::is_ascii_digit).collect();
    let sign = if neg { "-" } else { "" };
    // Go: for the shortest representation, %e is used when the exponent is
    // below -4 or at least 6.
    let eprec = 6;
    if exp < -4 || exp >= eprec {
        let mut m = String::new();
        m.push_str(&digits[..1]);
        if digits.len() > 1 {
            m.push('.');
            m.push_str(&digits[1..]);
        }
        let esign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{m}e{esign}{:02}", exp.abs());
    }
    // %f with the shortest digits.
    if exp < 0 {
        let zeros = "0".repeat(usize::try_from(-exp - 1).unwrap_or(0));
        return format!("{sign}0.{zeros}{digits}");
    }
    let point = usize::try_from(exp + 1).unwrap_or(0);
    if digits.len() <= point {
        format!("{sign}{digits}{}", "0".repeat(point - digits.len()))
    } else {
        format!("{sign}{}.{}", &digits[..point], &digits[point..])
    }
}

/// yaml.v3's `isBase60Float`: `^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`.
fn is_base60_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    if i >= b.len() || !b[i].is_ascii_digit() {
        return false;
    }
    i += 1;
    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
        i += 1;
    }
    let mut groups = 0;
    while i < b.len() && b[i] == b':' {
        i += 1;
        let start = i;
        if i < b.len()
            && (b'0'..=b'5').contains(&b[i])
            && i + 1 < b.len()
            && b[i + 1].is_ascii_digit()
        {
            i += 2;
        } else if i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return false;
        }
        groups += 1;
    }
    if groups == 0 {
        return false;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
            i += 1;
        }
    }
    i == b.len()
}

/// yaml.v3's `isOldBool`: YAML 1.1 booleans that yaml.v3 quotes on output.
fn is_old_bool(s: &str) -> bool {
    matches!(
        s,
        "y" | "Y"
            | "yes"
            | "Yes"
            | "YES"
            | "on"
            | "On"
            | "ON"
            | "n"
            | "N"
            | "no"
            | "No"
            | "NO"
            | "off"
            | "Off"
            | "OFF"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_owned_conversion_builds_the_same_nodes() {
        let value: Value = serde_json::from_str(
            r#"{"z": [1, 2.5, "x\ny", {"b": true, "a": null}], "a": {"yes": "no", "n": "1"}, "m": ""}"#,
        )
        .expect("json");
        let format = |n: Node| {
            crate::yaml::emit_stream(&[Node::new_document(n)], crate::yaml::Format::Kyaml)
                .expect("emits")
        };
        let borrowed = format(from_json_ordered(&value));
        assert!(borrowed.starts_with("z:\n"), "{borrowed}");
        assert_eq!(format(from_json_ordered_owned(value)), borrowed);
    }

    #[test]
    fn formats_floats_like_go() {
        let cases = [
            (8080.0, "8080"),
            (1.5, "1.5"),
            (100000.0, "100000"),
            (1_000_000.0, "1e+06"),
            (123_456_789.0, "1.23456789e+08"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-2.5, "-2.5"),
            (1e21, "1e+21"),
        ];
        for (f, want) in cases {
            assert_eq!(go_format_float(f), want, "{f}");
        }
    }

    #[test]
    fn quotes_strings_that_would_change_type() {
        assert_eq!(string_node("true").style, Style::DOUBLE_QUOTED);
        assert_eq!(string_node("yes").style, Style::DOUBLE_QUOTED);
        assert_eq!(string_node("0755").style, Style::DOUBLE_QUOTED);
        assert_eq!(string_node("1:20").style, Style::DOUBLE_QUOTED);
        assert_eq!(string_node("a\nb").style, Style::LITERAL);
        assert_eq!(string_node("nginx").style, Style::plain());
    }

    #[test]
    fn repeated_keys_are_refused_when_strict_but_merged_keys_may_be_overridden() {
        let doc = crate::yaml::parse_document("a: 1\nb: 2\na: 3\n").unwrap();
        assert_eq!(to_json(&doc).unwrap()["a"], 3, "last wins when lenient");
        let err = to_json_strict(&doc).unwrap_err().to_string();
        assert!(
            err.contains("line 3: mapping key \"a\" already defined at line 1"),
            "{err}"
        );
        let doc =
            crate::yaml::parse_document("base: &b {a: 1, b: 2}\nm:\n  <<: *b\n  a: 3\n").unwrap();
        assert_eq!(
            to_json_strict(&doc).unwrap()["m"],
            serde_json::json!({"a": 3, "b": 2})
        );
    }
}
