//! The starlib modules the catalog's starlark function lets a program
//! `load` that are provided natively here: `encoding/yaml.star` (`yaml`:
//! `loads`, `dumps`) and `encoding/base64.star` (`base64`: `encode`,
//! `decode`), with starlib's names, arguments and encodings.

use base64::Engine;
use serde_json::Value as Json;
use starlark::environment::GlobalsBuilder;
use starlark::starlark_module;
use starlark::values::none::NoneOr;
use starlark::values::{Heap, Value};

/// The modules, each a namespace in the returned globals under the name a
/// program loads (`yaml`, `base64`).
pub fn globals() -> starlark::environment::Globals {
    let mut builder = GlobalsBuilder::new();
    builder.namespace("yaml", yaml_members);
    builder.namespace("base64", base64_members);
    builder.build()
}

#[starlark_module]
fn yaml_members(globals: &mut GlobalsBuilder) {
    /// `yaml.loads(source)`: the YAML document as starlark values.
    fn loads<'v>(
        #[starlark(require = pos)] source: &str,
        heap: Heap<'v>,
    ) -> anyhow::Result<Value<'v>> {
        let doc = pv_core::yaml::parse_document(source)
            .map_err(|e| anyhow::anyhow!("yaml.loads: {e}"))?;
        let value = pv_core::yaml::to_json(&doc).map_err(|e| anyhow::anyhow!("yaml.loads: {e}"))?;
        Ok(heap.alloc(value))
    }

    /// `yaml.dumps(obj)`: the value as YAML, mapping keys sorted (as Go's
    /// YAML encoder writes a map).
    fn dumps(#[starlark(require = pos)] obj: Value) -> anyhow::Result<String> {
        let value = sorted(obj.to_json_value()?);
        pv_core::yaml::emit_stream(
            &[pv_core::yaml::from_json_ordered(&value)],
            pv_core::yaml::Format::Kyaml,
        )
        .map_err(|e| anyhow::anyhow!("yaml.dumps: {e}"))
    }
}

/// A JSON value with every object's keys sorted.
fn sorted(value: Json) -> Json {
    match value {
        Json::Object(map) => {
            let mut entries: Vec<(String, Json)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Json::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Json::Array(items) => Json::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// starlib's encodings: `standard` (the default), `standard_raw`, `url`,
/// `url_raw`.
fn engine(encoding: Option<&str>) -> anyhow::Result<base64::engine::GeneralPurpose> {
    use base64::engine::general_purpose as gp;
    Ok(match encoding.unwrap_or("standard") {
        "standard" => gp::STANDARD,
        "standard_raw" => gp::STANDARD_NO_PAD,
        "url" => gp::URL_SAFE,
        "url_raw" => gp::URL_SAFE_NO_PAD,
        other => anyhow::bail!("unsupported encoding format: {other}"),
    })
}

#[starlark_module]
fn base64_members(globals: &mut GlobalsBuilder) {
    /// `base64.encode(data, encoding="standard")`.
    fn encode(
        #[starlark(require = pos)] data: &str,
        #[starlark(default = NoneOr::None)] encoding: NoneOr<&str>,
    ) -> anyhow::Result<String> {
        Ok(engine(encoding.into_option())?.encode(data.as_bytes()))
    }

    /// `base64.decode(data, encoding="standard")`: the decoded text.
    fn decode(
        #[starlark(require = pos)] data: &str,
        #[starlark(default = NoneOr::None)] encoding: NoneOr<&str>,
    ) -> anyhow::Result<String> {
        let bytes = engine(encoding.into_option())?.decode(data.as_bytes())?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }
}
