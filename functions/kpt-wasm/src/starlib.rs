//! The starlib modules the catalog's starlark function lets a program
//! `load` that are provided natively here, with starlib's names, arguments
//! and results: `encoding/yaml.star` (`yaml`: `loads`, `dumps`),
//! `encoding/base64.star` (`base64`: `encode`, `decode`), `hash.star`
//! (`hash`: `md5`, `sha1`, `sha256`, as hex), `math.star` (`math`: the
//! float functions and constants starlib lists) and `re.star` (`re`:
//! `search`, `match`, `split`, `findall`, `sub`, on Go's RE2 syntax, which
//! the regex crate shares) and `encoding/csv.star` (`csv`: `read_all`,
//! `write_all`, with Go's `encoding/csv` rules, [`go_csv`]) and
//! `time.star` (`time`: durations, times, zones and Go's layouts,
//! [`time`]).

mod go_csv;
mod go_time;
mod time;

use base64::Engine;
use serde_json::Value as Json;
use starlark::environment::GlobalsBuilder;
use starlark::starlark_module;
use starlark::values::float::UnpackFloat;
use starlark::values::list::AllocList;
use starlark::values::none::NoneOr;
use starlark::values::tuple::AllocTuple;
use starlark::values::{Heap, Value};

/// The modules, each a namespace in the returned globals under the name a
/// program loads (`yaml`, `base64`).
pub fn globals() -> starlark::environment::Globals {
    let mut builder = GlobalsBuilder::new();
    builder.namespace("yaml", yaml_members);
    builder.namespace("base64", base64_members);
    builder.namespace("hash", hash_members);
    builder.namespace("math", math_members);
    builder.namespace("re", re_members);
    builder.namespace("csv", csv_members);
    builder.namespace("time", time::time_members);
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

/// Lower-case hex of a digest, as Go's `%x`.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[starlark_module]
fn hash_members(globals: &mut GlobalsBuilder) {
    /// `hash.md5(s)`: the MD5 digest of the text, in hex.
    fn md5(#[starlark(require = pos)] s: &str) -> anyhow::Result<String> {
        use md5::Digest;
        Ok(hex(&md5::Md5::digest(s.as_bytes())))
    }

    /// `hash.sha1(s)`: the SHA-1 digest of the text, in hex.
    fn sha1(#[starlark(require = pos)] s: &str) -> anyhow::Result<String> {
        use sha1::Digest;
        Ok(hex(&sha1::Sha1::digest(s.as_bytes())))
    }

    /// `hash.sha256(s)`: the SHA-256 digest of the text, in hex.
    fn sha256(#[starlark(require = pos)] s: &str) -> anyhow::Result<String> {
        use sha2::Digest;
        Ok(hex(&sha2::Sha256::digest(s.as_bytes())))
    }
}

#[starlark_module]
fn math_members(globals: &mut GlobalsBuilder) {
    const e: f64 = std::f64::consts::E;
    const pi: f64 = std::f64::consts::PI;
    const tau: f64 = std::f64::consts::TAU;
    const phi: f64 = 1.618_033_988_749_895;
    const inf: f64 = f64::INFINITY;
    const nan: f64 = f64::NAN;

    /// `math.ceil(x)`, a float as starlib returns it.
    fn ceil(x: UnpackFloat) -> anyhow::Result<f64> {
        let x = x.0;
        Ok(x.ceil())
    }
    /// `math.fabs(x)`.
    fn fabs(x: UnpackFloat) -> anyhow::Result<f64> {
        let x = x.0;
        Ok(x.abs())
    }
    /// `math.floor(x)`, a float as starlib returns it.
    fn floor(x: UnpackFloat) -> anyhow::Result<f64> {
        let x = x.0;
        Ok(x.floor())
    }
    /// `math.exp(x)`.
    fn exp(x: UnpackFloat) -> anyhow::Result<f64> {
        let x = x.0;
        Ok(x.exp())
    }
    /// `math.sqrt(x)`.
    fn sqrt(x: UnpackFloat) -> anyhow::Result<f64> {
        let x = x.0;
        Ok(x.sqrt())
    }
    /// `math.acos(x)`.
    fn acos(x: UnpackFloat) -> anyhow::Result<f64> {
        let x = x.0;
        Ok(x.acos())
    }
    /// `math.asin(x)`.
    fn asin(x: UnpackFloat) -> anyhow::Result<f64> {
        let x = x.0;
        Ok(x.asin())
    }
    /// `math.atan(x)`.
    fn atan(x: UnpackFloat) -> anyhow::Result<f64> {
        let x = x.0;
        Ok(x.atan())
    }
    /// `math.atan2(y, x)`.
    fn atan2(x: UnpackFloat, y: UnpackFloat) -> anyhow::Result<f64> {
        // starlib names the parameters x and y and calls Go's Atan2(x, y).
        let (x, y) = (x.0, y.0);
        Ok(x.atan2(y))
    }
    /// `math.cos(x)`.
    fn cos(x: UnpackFloat) -> anyhow::Result<f64> {
        let x = x.0;
        Ok(x.cos())
    }
    /// `math.hypot(x, y)`.
    fn hypot(x: UnpackFloat, y: UnpackFloat) -> anyhow::Result<f64> {
        let (x, y) = (x.0, y.0);
        Ok(x.hypot(y))
    }
    /// `math.sin(x)`.
    fn sin(x: UnpackFloat) -> anyhow::Result<f64> {
        let x = x.0;
        Ok(x.sin())
    }
    /// `math.tan(x)`.
    fn tan(x: UnpackFloat) -> anyhow::Result<f64> {
        let x = x.0;
        Ok(x.tan())
    }
    /// `math.degrees(x)`: radians to degrees.
    fn degrees(x: UnpackFloat) -> anyhow::Result<f64> {
        let x = x.0;
        Ok(x / (std::f64::consts::TAU / 360.0))
    }
    /// `math.radians(x)`: degrees to radians.
    fn radians(x: UnpackFloat) -> anyhow::Result<f64> {
        let x = x.0;
        Ok(x * (std::f64::consts::TAU / 360.0))
    }
    /// `math.acosh(x)`.
    fn acosh(x: UnpackFloat) -> anyhow::Result<f64> {
        let x = x.0;
        Ok(x.acosh())
    }
    /// `math.asinh(x)`.
    fn asinh(x: UnpackFloat) -> anyhow::Result<f64> {
        let x = x.0;
        Ok(x.asinh())
    }
    /// `math.atanh(x)`.
    fn atanh(x: UnpackFloat) -> anyhow::Result<f64> {
        let x = x.0;
        Ok(x.atanh())
    }
    /// `math.cosh(x)`.
    fn cosh(x: UnpackFloat) -> anyhow::Result<f64> {
        let x = x.0;
        Ok(x.cosh())
    }
    /// `math.sinh(x)`.
    fn sinh(x: UnpackFloat) -> anyhow::Result<f64> {
        let x = x.0;
        Ok(x.sinh())
    }
    /// `math.tanh(x)`.
    fn tanh(x: UnpackFloat) -> anyhow::Result<f64> {
        let x = x.0;
        Ok(x.tanh())
    }
}

/// A compiled pattern, or starlib's error (Go's `regexp.Compile` words
/// differ; the pattern is named).
fn regex(pattern: &str) -> anyhow::Result<regex::Regex> {
    regex::Regex::new(pattern).map_err(|e| anyhow::anyhow!("error parsing regexp {pattern:?}: {e}"))
}

#[starlark_module]
fn re_members(globals: &mut GlobalsBuilder) {
    /// `re.search(pattern, string, flags=0)`: `[start, end]` of the first
    /// match, or `None`.
    fn search<'v>(
        pattern: &str,
        string: &str,
        #[starlark(default = 0)] flags: i32,
        heap: Heap<'v>,
    ) -> anyhow::Result<Value<'v>> {
        let _ = flags;
        Ok(match regex(pattern)?.find(string) {
            Some(m) => heap.alloc(AllocList([m.start() as i32, m.end() as i32])),
            None => Value::new_none(),
        })
    }

    /// `re.match(pattern, string, flags=0)`: starlib's `match` is every
    /// match with its groups: a list of tuples (the whole match first).
    fn r#match<'v>(
        pattern: &str,
        string: &str,
        #[starlark(default = 0)] flags: i32,
        heap: Heap<'v>,
    ) -> anyhow::Result<Value<'v>> {
        let _ = flags;
        let re = regex(pattern)?;
        let matches: Vec<Value<'v>> = re
            .captures_iter(string)
            .map(|c| {
                heap.alloc(AllocTuple(
                    c.iter()
                        .map(|g| g.map_or("", |g| g.as_str()).to_string())
                        .collect::<Vec<_>>(),
                ))
            })
            .collect();
        Ok(heap.alloc(AllocList(matches)))
    }

    /// `re.split(pattern, string, maxsplit=0, flags=0)`: the pieces between
    /// matches, a tuple; `maxsplit` > 0 caps the number of pieces (as Go's
    /// `Split`), 0 splits everywhere (Python's meaning; starlib's Go gives
    /// nothing for 0).
    fn split<'v>(
        pattern: &str,
        string: &str,
        #[starlark(default = 0)] maxsplit: i32,
        #[starlark(default = 0)] flags: i32,
        heap: Heap<'v>,
    ) -> anyhow::Result<Value<'v>> {
        let _ = flags;
        let re = regex(pattern)?;
        let pieces: Vec<String> = if maxsplit > 0 {
            re.splitn(string, maxsplit as usize)
                .map(str::to_string)
                .collect()
        } else {
            re.split(string).map(str::to_string).collect()
        };
        Ok(heap.alloc(AllocTuple(pieces)))
    }

    /// `re.findall(pattern, string, flags=0)`: every match's text, a tuple.
    fn findall<'v>(
        pattern: &str,
        string: &str,
        #[starlark(default = 0)] flags: i32,
        heap: Heap<'v>,
    ) -> anyhow::Result<Value<'v>> {
        let _ = flags;
        let found: Vec<String> = regex(pattern)?
            .find_iter(string)
            .map(|m| m.as_str().to_string())
            .collect();
        Ok(heap.alloc(AllocTuple(found)))
    }

    /// `re.sub(pattern, repl, string, count=0, flags=0)`: every match
    /// replaced, `$1`/`${name}` expanding groups (Go's `ReplaceAllString`;
    /// starlib ignores `count`).
    fn sub(
        pattern: &str,
        repl: &str,
        string: &str,
        #[starlark(default = 0)] count: i32,
        #[starlark(default = 0)] flags: i32,
    ) -> anyhow::Result<String> {
        let _ = (count, flags);
        Ok(regex(pattern)?.replace_all(string, repl).into_owned())
    }
}

/// A one-character separator argument, as starlib checks it.
fn single_char(value: &str, what: &str) -> anyhow::Result<Option<char>> {
    match value.len() {
        0 => Ok(None),
        1 => Ok(value.chars().next()),
        _ => Err(anyhow::anyhow!(
            "expected {what} param to be a single-character string"
        )),
    }
}

#[starlark_module]
fn csv_members(globals: &mut GlobalsBuilder) {
    /// `csv.read_all(source, comma=",", comment="", lazy_quotes=False,
    /// trim_leading_space=False, fields_per_record=0, skip=0)`: the
    /// records, each a list of strings.
    #[allow(clippy::too_many_arguments)] // starlib's seven arguments
    fn read_all<'v>(
        source: &str,
        #[starlark(default = "")] comma: &str,
        #[starlark(default = "")] comment: &str,
        #[starlark(default = false)] lazy_quotes: bool,
        #[starlark(default = false)] trim_leading_space: bool,
        #[starlark(default = 0)] fields_per_record: i32,
        #[starlark(default = 0)] skip: i32,
        heap: Heap<'v>,
    ) -> anyhow::Result<Value<'v>> {
        let options = go_csv::ReadOptions {
            comma: single_char(comma, "comma")?.unwrap_or(','),
            comment: single_char(comment, "comment")?,
            lazy_quotes,
            trim_leading_space,
            fields_per_record: i64::from(fields_per_record),
            skip: usize::try_from(skip).unwrap_or(0),
        };
        let records = go_csv::read_all(source, &options).map_err(|e| anyhow::anyhow!(e))?;
        let rows: Vec<Value<'v>> = records
            .into_iter()
            .map(|r| heap.alloc(AllocList(r)))
            .collect();
        Ok(heap.alloc(AllocList(rows)))
    }

    /// `csv.write_all(source, comma=",")`: the rows (lists of values, each
    /// printed as Go's `%v`) as CSV text.
    fn write_all(source: Value, #[starlark(default = "")] comma: &str) -> anyhow::Result<String> {
        let comma = single_char(comma, "comma")?.unwrap_or(',');
        let Json::Array(rows) = source.to_json_value()? else {
            return Err(anyhow::anyhow!("expected value to be an array type"));
        };
        let mut records = Vec::with_capacity(rows.len());
        for (i, row) in rows.iter().enumerate() {
            let Json::Array(cells) = row else {
                return Err(anyhow::anyhow!("row {i} is not an array type"));
            };
            records.push(cells.iter().map(go_csv::go_value).collect());
        }
        go_csv::write_all(&records, comma).map_err(|e| anyhow::anyhow!(e))
    }
}
