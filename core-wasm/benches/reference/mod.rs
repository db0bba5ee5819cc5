//! The reference the YAML benchmark compares against: serde_yaml (libyaml)
//! reading a stream into values and writing them back, which drops every
//! comment and style. Included with `#[path]` by the benchmark and the
//! profiling example.

/// Reads every document of `input` into a `serde_yaml::Value` and writes
/// them back as one stream.
#[inline(never)]
pub fn serde_yaml_round_trip(input: &str) -> String {
    use serde::Deserialize;
    let mut out = String::with_capacity(input.len());
    for document in serde_yaml::Deserializer::from_str(input) {
        let value = serde_yaml::Value::deserialize(document).expect("serde_yaml parses");
        if !out.is_empty() {
            out.push_str("---\n");
        }
        out.push_str(&serde_yaml::to_string(&value).expect("serde_yaml emits"));
    }
    out
}
