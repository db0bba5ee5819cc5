//! The KRM functions catalog's `starlark` function
//! (`ghcr.io/kptdev/krm-functions-catalog/starlark`, v0.5.x behaviour) on
//! the `starlark` crate (starlark-rust).
//!
//! * functionConfig: a `fn.kpt.dev/v1alpha1` `StarlarkRun` (`metadata.name`
//!   names the program in error positions, `source` is the program,
//!   `params` anything) or a `v1` `ConfigMap` (`data.source` is the
//!   program, and every data key, `source` included, is also `params`);
//! * the program sees `ctx.resource_list` (a mutable dict
//!   `{apiVersion, kind, items, functionConfig}`) and `ctx.environment`
//!   (the process environment; empty in wasm). `ctx.open_api` is not
//!   provided;
//! * `load()` knows `krmfn.star` (`match_gvk`, `match_name`,
//!   `match_namespace`), `encoding/json.star` (`json.encode`,
//!   `json.decode`), `encoding/yaml.star` (`yaml.loads`, `yaml.dumps`),
//!   `encoding/base64.star` (`base64.encode`, `base64.decode`),
//!   `hash.star`, `math.star`, `re.star`, `encoding/csv.star` and
//!   `time.star` (see
//!   [`crate::starlib`]); the other
//!   catalog modules load as empty structs, so a program that loads them
//!   runs but any use of them fails;
//! * afterwards `ctx.resource_list["items"]` is the output, every mapping's
//!   keys sorted alphabetically (as Go maps come out); `print()` output is
//!   the run's stderr;
//! * any error (syntax, runtime, `fail()`, a limit) is the one error
//!   result of the run, and the items are returned unchanged.
//!
//! [`Limits`] bound a run: starlark ticks (calls and loop iterations),
//! call-stack depth and heap size (checked before every statement).

use std::cell::RefCell;

use porch_variants_functions::{resource_list, results, Output};
use pv_core::yaml::{self, Kind, Node};
use serde_json::{Map, Value};
use starlark::codemap::FileSpanRef;
use starlark::environment::{FrozenModule, Globals, LibraryExtension, Module};
use starlark::eval::{BeforeStmtFunc, BeforeStmtFuncDyn, Evaluator, FileLoader};
use starlark::syntax::{AstModule, Dialect, DialectTypes};
use starlark::values::structs::AllocStruct;
use starlark::{ErrorKind, PrintHandler};

/// The function's name (the catalog image's last path component).
pub const NAME: &str = "starlark";

/// Program name used in error positions when the StarlarkRun has none.
pub const DEFAULT_PROGRAM_NAME: &str = "starlark-function-run";

/// `apiVersion` of a `StarlarkRun`.
pub const STARLARK_RUN_API_VERSION: &str = "fn.kpt.dev/v1alpha1";

/// `krmfn.star`, as the catalog provides it.
const KRMFN_SOURCE: &str = r#"
def _match_gvk(obj, apiVersion, kind):
    return obj.get("apiVersion") == apiVersion and obj.get("kind") == kind

def _metadata(obj):
    m = obj.get("metadata")
    return m if type(m) == "dict" else {}

def _match_name(obj, name):
    return _metadata(obj).get("name") == name

def _match_namespace(obj, namespace):
    return _metadata(obj).get("namespace", "") == namespace

krmfn = struct(
    match_gvk = _match_gvk,
    match_name = _match_name,
    match_namespace = _match_namespace,
)
"#;

/// The starlib modules provided natively ([`crate::starlib`]) and the
/// name each exports.
const NATIVE_MODULES: &[(&str, &str)] = &[
    ("encoding/yaml.star", "yaml"),
    ("encoding/base64.star", "base64"),
    ("hash.star", "hash"),
    ("math.star", "math"),
    ("re.star", "re"),
    ("encoding/csv.star", "csv"),
    ("time.star", "time"),
];

/// The catalog's other `load()` modules and the name each exports. They
/// load as empty structs (see the module documentation).
const STUB_MODULES: &[(&str, &str)] = &[
    ("bsoup.star", "bsoup"),
    ("geo.star", "geo"),
    ("html.star", "html"),
    ("http.star", "http"),
    ("xlsx.star", "xlsx"),
    ("zipfile.star", "ZipFile"),
];

/// Bounds of one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Starlark ticks (one per function call or loop iteration).
    pub max_ticks: u64,
    /// Deepest starlark call stack.
    pub max_callstack: usize,
    /// Most bytes on the starlark heap, checked before every statement.
    pub max_heap_bytes: usize,
}

impl Default for Limits {
    /// 100 million ticks, 200 frames, 256 MiB of heap (the wasm build's
    /// arena is 512 MiB; the interpreter's own tables live outside the
    /// counted heap).
    fn default() -> Self {
        Limits {
            max_ticks: 100_000_000,
            max_callstack: 200,
            max_heap_bytes: 256 << 20,
        }
    }
}

/// Why the functionConfig cannot be run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// No functionConfig.
    #[error("FunctionConfig is missing. Expect `ConfigMap` or `StarlarkRun`")]
    Missing,
    /// A kind other than ConfigMap or StarlarkRun.
    #[error("`functionConfig` must be either /v1, Kind=ConfigMap or fn.kpt.dev/v1alpha1, Kind=StarlarkRun, but we got: {0}")]
    WrongKind(String),
    /// An empty (or missing) program.
    #[error("`source` must not be empty")]
    EmptySource,
    /// The config is not an object, or `source` is not a string.
    #[error("invalid functionConfig: {0}")]
    Invalid(String),
}

/// A failed run: the message of its one error result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RunError(pub String);

/// A program to run, read from the functionConfig.
#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    /// The name in error positions.
    pub name: String,
    /// The program text.
    pub source: String,
    /// `ctx.resource_list["functionConfig"]`: the config, with `params`.
    pub function_config: Value,
}

/// What one run produced.
#[derive(Debug, Clone, PartialEq)]
pub struct StarlarkOutput {
    /// The output ResourceList and its results.
    pub output: Output,
    /// What the program printed, one line per `print()`.
    pub stderr: String,
}

/// `group/version, Kind=kind` as apimachinery's `GroupVersionKind.String()`.
fn gvk_string(api_version: &str, kind: &str) -> String {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    format!("{group}/{version}, Kind={kind}")
}

/// `v[path[0]][path[1]]…`.
fn field<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |v, k| v.get(k))
}

/// Reads the program from the functionConfig.
pub fn parse_config(config: Option<&Node>) -> Result<Program, ConfigError> {
    let node = config.ok_or(ConfigError::Missing)?;
    let mut value = yaml::to_json(node).map_err(|e| ConfigError::Invalid(e.to_string()))?;
    if value.is_null() {
        return Err(ConfigError::Missing);
    }
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_string();
    let api_version = text(value.get("apiVersion"));
    let kind = text(value.get("kind"));
    let name = text(field(&value, &["metadata", "name"]));
    let obj = value
        .as_object_mut()
        .ok_or_else(|| ConfigError::Invalid("functionConfig is not an object".into()))?;
    let source = match (api_version.as_str(), kind.as_str()) {
        (STARLARK_RUN_API_VERSION, "StarlarkRun") => match obj.get("source") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(_) => return Err(ConfigError::Invalid("`source` must be a string".into())),
        },
        ("v1", "ConfigMap") => {
            let data = match obj.get("data") {
                Some(Value::Object(d)) => d.clone(),
                _ => Map::new(),
            };
            let source = text(data.get("source"));
            obj.insert("params".into(), Value::Object(data));
            source
        }
        _ => return Err(ConfigError::WrongKind(gvk_string(&api_version, &kind))),
    };
    if source.trim().is_empty() {
        return Err(ConfigError::EmptySource);
    }
    Ok(Program {
        name: if name.is_empty() {
            DEFAULT_PROGRAM_NAME.to_string()
        } else {
            name
        },
        source,
        function_config: value,
    })
}

/// The language the catalog's interpreter accepts, as far as
/// starlark-rust has it: top-level `if`/`for`, recursion, global
/// reassignment, `set()`; no `while`.
fn dialect() -> Dialect {
    Dialect {
        enable_top_level_stmt: true,
        enable_keyword_only_arguments: true,
        enable_f_strings: true,
        enable_types: DialectTypes::Disable,
        ..Dialect::Standard
    }
}

fn globals() -> Globals {
    Globals::extended_by(&[
        LibraryExtension::StructType,
        LibraryExtension::Print,
        LibraryExtension::Json,
        LibraryExtension::SetType,
        LibraryExtension::Map,
        LibraryExtension::Filter,
        LibraryExtension::Partial,
    ])
}

/// Collects `print()` lines.
#[derive(Default)]
struct Printed(RefCell<String>);

impl PrintHandler for Printed {
    fn println(&self, text: &str) -> starlark::Result<()> {
        let mut out = self.0.borrow_mut();
        out.push_str(text);
        out.push('\n');
        Ok(())
    }
}

/// Checks the heap before every statement, so that a program growing its
/// data is stopped close to the limit.
struct HeapGuard {
    max_heap_bytes: usize,
}

impl<'e> BeforeStmtFuncDyn<'e> for HeapGuard {
    fn call<'v>(
        &mut self,
        _span: FileSpanRef,
        _continued: bool,
        eval: &mut Evaluator<'v, '_, 'e>,
    ) -> starlark::Result<()> {
        if eval.heap().allocated_bytes() > self.max_heap_bytes {
            return Err(starlark::Error::new_other(LimitError::Heap(
                self.max_heap_bytes,
            )));
        }
        Ok(())
    }
}

/// A limit a run reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
enum LimitError {
    #[error("starlark: memory limit of {0} bytes exceeded")]
    Heap(usize),
}

/// Resolves `load()`: `krmfn.star`, `encoding/json.star` and the stubs.
struct Loader {
    limits: Limits,
}

impl FileLoader for Loader {
    fn load(&self, path: &str) -> starlark::Result<FrozenModule> {
        let globals = globals();
        let source = if path == "krmfn.star" {
            KRMFN_SOURCE.to_string()
        } else if path == "encoding/json.star" {
            let json = globals
                .iter()
                .find(|(n, _)| *n == "json")
                .map(|(_, v)| v)
                .ok_or_else(|| starlark::Error::new_other(anyhow::anyhow!("no json module")))?;
            return Module::with_temp_heap(|module| {
                module.frozen_heap().add_reference(globals.heap());
                module.set("json", json.to_value());
                module
                    .freeze()
                    .map_err(|e| starlark::Error::new_other(anyhow::anyhow!("{e:?}")))
            });
        } else if let Some(name) = NATIVE_MODULES
            .iter()
            .find(|(p, _)| *p == path)
            .map(|(_, n)| *n)
        {
            let native = crate::starlib::globals();
            let value = native
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v)
                .ok_or_else(|| starlark::Error::new_other(anyhow::anyhow!("no {name} module")))?;
            return Module::with_temp_heap(|module| {
                // The module keeps the natives' heap alive.
                module.frozen_heap().add_reference(native.heap());
                module.set(name, value.to_value());
                module
                    .freeze()
                    .map_err(|e| starlark::Error::new_other(anyhow::anyhow!("{e:?}")))
            });
        } else if let Some((_, export)) = STUB_MODULES.iter().find(|(p, _)| *p == path) {
            format!("{export} = struct()\n")
        } else {
            return Err(starlark::Error::new_other(anyhow::anyhow!(
                "cannot load {path}: unknown module"
            )));
        };
        let ast = AstModule::parse(path, source, &dialect())?;
        Module::with_temp_heap(|module| {
            {
                let mut eval = Evaluator::new(&module);
                eval.set_max_tick_count(self.limits.max_ticks)
                    .map_err(starlark::Error::new_other)?;
                eval.eval_module(ast, &globals)?;
            }
            module
                .freeze()
                .map_err(|e| starlark::Error::new_other(anyhow::anyhow!("{e:?}")))
        })
    }
}

/// The message of a starlark error: syntax and name errors as
/// `<program>:<line>:<col>: <message>`, `fail(msg)` as `fail: msg`, other
/// runtime errors as their message.
fn describe(e: &starlark::Error, limits: &Limits) -> String {
    let text = match e.kind() {
        ErrorKind::Fail(m) => return format!("fail: {}", m.to_string().trim_start()),
        ErrorKind::StackOverflow(_) => {
            return format!(
                "starlark: call stack depth limit of {} exceeded",
                limits.max_callstack
            )
        }
        ErrorKind::Parser(m) | ErrorKind::Scope(m) => m.to_string(),
        other => return other.to_string(),
    };
    match e.span() {
        Some(span) => {
            let at = span.resolve_span().begin;
            format!(
                "{}:{}:{}: {text}",
                span.filename(),
                at.line + 1,
                at.column + 1
            )
        }
        None => text,
    }
}

/// `ctx.environment`: the process environment (a wasm module has none,
/// and the standard library's `env::vars` is unsupported there).
fn environment() -> Map<String, Value> {
    if cfg!(target_arch = "wasm32") {
        return Map::new();
    }
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, Value::String(v.into_string().ok()?))))
        .collect()
}

/// Runs `program` over `items`: the items afterwards (or why the run
/// failed) and what it printed (also when it failed).
pub fn run_program(
    program: &Program,
    items: Vec<Value>,
    limits: &Limits,
) -> (Result<Vec<Value>, RunError>, String) {
    let printed = Printed::default();
    let result = evaluate(program, items, limits, &printed);
    (result, printed.0.into_inner())
}

fn evaluate(
    program: &Program,
    items: Vec<Value>,
    limits: &Limits,
    printed: &Printed,
) -> Result<Vec<Value>, RunError> {
    let ast = AstModule::parse(&program.name, program.source.clone(), &dialect())
        .map_err(|e| RunError(describe(&e, limits)))?;
    let globals = globals();
    let loader = Loader { limits: *limits };
    let mut list = Map::new();
    list.insert("apiVersion".into(), resource_list::API_VERSION.into());
    list.insert("kind".into(), resource_list::KIND.into());
    list.insert("items".into(), Value::Array(items));
    list.insert("functionConfig".into(), program.function_config.clone());
    let environment = environment();
    let setup = |e: anyhow::Error| RunError(format!("starlark: {e}"));

    let result = Module::with_temp_heap(|module| {
        let heap = module.heap();
        let rl = heap.alloc(Value::Object(list));
        module.set_extra_value(rl);
        let env = heap.alloc(Value::Object(environment));
        let ctx = heap.alloc(AllocStruct([("resource_list", rl), ("environment", env)]));
        module.set("ctx", ctx);
        {
            let mut eval = Evaluator::new(&module);
            eval.set_print_handler(printed);
            eval.set_loader(&loader);
            eval.set_max_tick_count(limits.max_ticks).map_err(setup)?;
            eval.set_max_callstack_size(limits.max_callstack)
                .map_err(setup)?;
            eval.set_max_heap_size(limits.max_heap_bytes)
                .map_err(setup)?;
            eval.before_stmt_for_dap(BeforeStmtFunc::from_dyn(Box::new(HeapGuard {
                max_heap_bytes: limits.max_heap_bytes,
            })));
            let outcome = eval.eval_module(ast, &globals);
            if eval.get_total_tick_count() >= limits.max_ticks {
                return Err(RunError(format!(
                    "starlark: execution step limit of {} exceeded",
                    limits.max_ticks
                )));
            }
            if eval.heap().peak_allocated_bytes() > limits.max_heap_bytes {
                return Err(RunError(
                    LimitError::Heap(limits.max_heap_bytes).to_string(),
                ));
            }
            if let Err(e) = outcome {
                // The interpreter's own periodic check says "Heap memory
                // limit of N bytes exceeded"; the guard's is a LimitError.
                let builtin_heap = matches!(e.kind(), ErrorKind::Other(_))
                    && e.kind().to_string().starts_with("Heap memory limit");
                if builtin_heap || limit_of(&e).is_some() {
                    return Err(RunError(
                        LimitError::Heap(limits.max_heap_bytes).to_string(),
                    ));
                }
                return Err(RunError(describe(&e, limits)));
            }
        }
        let rl = module
            .extra_value()
            .ok_or_else(|| RunError("starlark: the resource list was lost".into()))?;
        rl.to_json_value().map_err(|e| {
            RunError(format!(
                "ctx.resource_list cannot be converted to YAML: {e}"
            ))
        })
    });
    let value = result?;
    let items = match value.get("items") {
        Some(Value::Array(items)) => items.clone(),
        Some(Value::Null) | None => Vec::new(),
        Some(_) => {
            return Err(RunError(
                "ctx.resource_list[\"items\"] must be a list".into(),
            ))
        }
    };
    Ok(items)
}

/// The limit error inside `e`, if it is one.
fn limit_of(e: &starlark::Error) -> Option<LimitError> {
    match e.kind() {
        ErrorKind::Other(a) | ErrorKind::Native(a) => a.downcast_ref::<LimitError>().copied(),
        _ => None,
    }
}

/// A JSON value as a YAML node, mapping keys sorted alphabetically (as a
/// Go map marshals), integers as integers, strings quoted when they would
/// read back as another type.
pub fn sorted_node(value: &Value) -> Node {
    match value {
        Value::Number(n) if n.is_i64() || n.is_u64() => Node::new_scalar("!!int", n.to_string()),
        Value::String(s) => yaml::string_node(s),
        Value::Array(a) => {
            let mut seq = Node::new_sequence();
            seq.content = a.iter().map(sorted_node).collect();
            seq
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let mut map = Node::new_mapping();
            for k in keys {
                map.content.push(yaml::string_node(k));
                map.content.push(sorted_node(&m[k]));
            }
            map
        }
        other => yaml::from_json(other),
    }
}

/// Runs the function on a ResourceList.
pub fn process(input: &str) -> StarlarkOutput {
    process_with(input, &Limits::default())
}

/// [`process`] with `limits`.
pub fn process_with(input: &str, limits: &Limits) -> StarlarkOutput {
    let fail =
        |input: Option<resource_list::Input>, items: Vec<Node>, message: String| StarlarkOutput {
            output: Output::new(input, items, vec![results::error(message)]),
            stderr: String::new(),
        };
    let input = match resource_list::read(input) {
        Ok(i) => i,
        Err(e) => return fail(None, Vec::new(), e.to_string()),
    };
    let items = input.items.clone();
    let program = match parse_config(input.function_config.as_ref()) {
        Ok(p) => p,
        Err(e) => return fail(Some(input), items, e.to_string()),
    };
    let mut values = Vec::with_capacity(items.len());
    for item in &items {
        match yaml::to_json(item) {
            Ok(v) => values.push(v),
            Err(e) => return fail(Some(input), items, format!("cannot read an item: {e}")),
        }
    }
    let (result, stderr) = run_program(&program, values, limits);
    match result {
        Ok(out) => {
            let mut nodes = Vec::with_capacity(out.len());
            for (i, v) in out.iter().enumerate() {
                if !v.is_object() {
                    return StarlarkOutput {
                        stderr,
                        ..fail(
                            Some(input),
                            items,
                            format!("ctx.resource_list[\"items\"][{i}] is not a dict"),
                        )
                    };
                }
                nodes.push(sorted_node(v));
            }
            debug_assert!(nodes.iter().all(|n| n.kind == Kind::Mapping));
            StarlarkOutput {
                output: Output::new(Some(input), nodes, Vec::new()),
                stderr,
            }
        }
        Err(e) => StarlarkOutput {
            stderr,
            ..fail(Some(input), items, e.0)
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rl(config: &str, items: &str) -> String {
        format!(
            "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n{items}functionConfig:\n{config}"
        )
    }

    const ITEM: &str = "- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: a\n  data:\n    mode: \"0755\"\n    n: \"1\"\n  spec:\n    replicas: 3\n    ratio: 1.5\n    on: true\n";

    fn star(source: &str) -> String {
        let mut cfg = String::from("  apiVersion: fn.kpt.dev/v1alpha1\n  kind: StarlarkRun\n  metadata:\n    name: prog\n  source: |\n");
        for line in source.lines() {
            cfg.push_str("    ");
            cfg.push_str(line);
            cfg.push('\n');
        }
        rl(&cfg, ITEM)
    }

    fn small() -> Limits {
        Limits {
            max_ticks: 1_000_000,
            max_callstack: 50,
            max_heap_bytes: 32 << 20,
        }
    }

    fn error_of(out: &StarlarkOutput) -> String {
        assert!(out.output.failed(), "{}", out.output.resource_list);
        assert_eq!(out.output.results.len(), 1);
        out.output.results[0].message.clone()
    }

    #[test]
    fn a_missing_config_is_an_error() {
        let input = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n";
        assert_eq!(
            error_of(&process(input)),
            "FunctionConfig is missing. Expect `ConfigMap` or `StarlarkRun`"
        );
    }

    #[test]
    fn a_wrong_kind_is_named_as_apimachinery_does() {
        let out = process(&rl("  apiVersion: apps/v1\n  kind: Deployment\n", ""));
        assert_eq!(error_of(&out), "`functionConfig` must be either /v1, Kind=ConfigMap or fn.kpt.dev/v1alpha1, Kind=StarlarkRun, but we got: apps/v1, Kind=Deployment");
        let out = process(&rl("  apiVersion: v1\n  kind: Secret\n", ""));
        assert!(error_of(&out).ends_with("but we got: /v1, Kind=Secret"));
    }

    #[test]
    fn an_empty_source_is_an_error() {
        let out = process(&rl(
            "  apiVersion: fn.kpt.dev/v1alpha1\n  kind: StarlarkRun\n  source: \"\"\n",
            "",
        ));
        assert_eq!(error_of(&out), "`source` must not be empty");
    }

    #[test]
    fn fail_gives_its_message() {
        let out = process(&star("def check(r):\n    fail(\"bad: \" + r[\"metadata\"][\"name\"])\ncheck(ctx.resource_list[\"items\"][0])\n"));
        assert_eq!(error_of(&out), "fail: bad: a");
    }

    #[test]
    fn a_syntax_error_has_its_position() {
        let out = process(&star("x = 1\ny = (1 +\n"));
        let message = error_of(&out);
        assert!(message.starts_with("prog:"), "{message}");
        let pos: Vec<&str> = message.splitn(4, ':').collect();
        assert!(
            pos[1].parse::<u32>().is_ok() && pos[2].parse::<u32>().is_ok(),
            "{message}"
        );
    }

    #[test]
    fn a_generator_appends_an_item_with_sorted_keys_and_types_kept() {
        let out = process(&star("items = ctx.resource_list[\"items\"]\nitems.append({\"kind\": \"Service\", \"apiVersion\": \"v1\", \"metadata\": {\"name\": \"b\"}, \"spec\": {\"port\": 80}})\nitems[0][\"spec\"][\"replicas\"] += 1\nprint(\"n\", len(items))\n"));
        assert!(!out.output.failed(), "{}", out.output.resource_list);
        assert_eq!(out.stderr, "n 2\n");
        let text = &out.output.resource_list;
        assert!(text.contains("- apiVersion: v1\n  kind: Service\n  metadata:\n    name: b\n  spec:\n    port: 80\n"), "{text}");
        assert!(text.contains("mode: \"0755\""), "{text}");
        // Keys yaml.v3 would read as booleans are quoted, as it writes them.
        assert!(text.contains("\"n\": \"1\""), "{text}");
        assert!(text.contains("replicas: 4\n"), "{text}");
        assert!(text.contains("ratio: 1.5\n"), "{text}");
        assert!(text.contains("\"on\": true\n"), "{text}");
        assert!(!text.contains("functionConfig"), "{text}");
    }

    #[test]
    fn params_and_krmfn_and_json_are_available() {
        let cfg = "  apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: cm\n  data:\n    ns: prod\n    source: |\n      load(\"krmfn.star\", \"krmfn\")\n      load(\"encoding/json.star\", \"json\")\n      load(\"math.star\", \"math\")\n      ns = ctx.resource_list[\"functionConfig\"][\"params\"][\"ns\"]\n      for r in ctx.resource_list[\"items\"]:\n        if krmfn.match_gvk(r, \"v1\", \"ConfigMap\") and krmfn.match_name(r, \"a\"):\n          r[\"metadata\"][\"namespace\"] = json.decode(json.encode(ns))\n";
        let out = process(&rl(cfg, ITEM));
        assert!(!out.output.failed(), "{}", out.output.resource_list);
        assert!(out.output.resource_list.contains("namespace: prod"));
    }

    #[test]
    fn yaml_and_base64_from_starlib_work() {
        let out = process(&star(concat!(
            "load(\"encoding/yaml.star\", \"yaml\")\n",
            "load(\"encoding/base64.star\", \"base64\")\n",
            "cfg = yaml.loads(\"b: 2\\na:\\n- x\\n- y\\n\")\n",
            "items = ctx.resource_list[\"items\"]\n",
            "items[0][\"metadata\"][\"annotations\"] = {\n",
            "    \"first\": cfg[\"a\"][0],\n",
            "    \"dumped\": yaml.dumps({\"z\": 1, \"a\": [\"p\", \"q\"]}),\n",
            "    \"enc\": base64.encode(\"hi there\"),\n",
            "    \"dec\": base64.decode(\"aGk_dGhlcmU\", \"url_raw\"),\n",
            "}\n",
        )));
        assert!(!out.output.failed(), "{}", out.output.resource_list);
        let text = &out.output.resource_list;
        assert!(text.contains("first: x\n"), "{text}");
        assert!(text.contains("dumped: |\n"), "{text}");
        assert!(
            text.contains("a:\n        - p\n        - q\n        z: 1\n"),
            "{text}"
        );
        assert!(text.contains("enc: aGkgdGhlcmU=\n"), "{text}");
        assert!(
            text.contains("dec: hi?there\n") || text.contains("dec: \"hi?there\"\n"),
            "{text}"
        );
        let out = process(&star(
            "load(\"encoding/base64.star\", \"base64\")\nbase64.decode(\"x\", \"nope\")\n",
        ));
        assert!(
            error_of(&out).contains("unsupported encoding format: nope"),
            "{}",
            error_of(&out)
        );
    }

    #[test]
    fn hash_math_and_re_from_starlib_work() {
        let out = process(&star(concat!(
            "load(\"hash.star\", \"hash\")\n",
            "load(\"math.star\", \"math\")\n",
            "load(\"re.star\", \"re\")\n",
            "items = ctx.resource_list[\"items\"]\n",
            "items[0][\"metadata\"][\"annotations\"] = {\n",
            "    \"md5\": hash.md5(\"abc\"),\n",
            "    \"sha1\": hash.sha1(\"abc\"),\n",
            "    \"sha256\": hash.sha256(\"abc\"),\n",
            "    \"ceil\": str(math.ceil(2.1)),\n",
            "    \"sqrt\": str(math.sqrt(16)),\n",
            "    \"pi\": str(math.pi > 3.14 and math.pi < 3.15),\n",
            "    \"findall\": \",\".join(re.findall(\"[0-9]+\", \"a1b22c333\")),\n",
            "    \"split\": \"|\".join(re.split(\",\\\\s*\", \"x, y,z\")),\n",
            "    \"split2\": \"|\".join(re.split(\",\", \"x,y,z\", 2)),\n",
            "    \"sub\": re.sub(\"(\\\\w+)@(\\\\w+)\", \"$2 at $1\", \"me@host\"),\n",
            "    \"match\": str(re.match(\"(a)(b)?\", \"a ab\")),\n",
            "    \"search\": str(re.search(\"b+\", \"aabbb\")),\n",
            "    \"none\": str(re.search(\"z\", \"aabbb\")),\n",
            "}\n",
        )));
        assert!(!out.output.failed(), "{}", out.output.resource_list);
        let text = &out.output.resource_list;
        for want in [
            "md5: 900150983cd24fb0d6963f7d28e17f72",
            "sha1: a9993e364706816aba3e25717850c26c9cd0d89d",
            "sha256: ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            "ceil: \"3.0\"",
            "sqrt: \"4.0\"",
            "pi: \"True\"",
            "findall: 1,22,333",
            "split: x|y|z",
            "split2: x|y,z",
            "sub: host at me",
            "match: '[(\"a\", \"a\", \"\"), (\"ab\", \"a\", \"b\")]'",
            "search: '[2, 5]'",
            "none: None",
        ] {
            assert!(text.contains(want), "{want} missing in {text}");
        }
        let out = process(&star(
            "load(\"re.star\", \"re\")\nre.findall(\"(\", \"x\")\n",
        ));
        assert!(
            error_of(&out).contains("error parsing regexp"),
            "{}",
            error_of(&out)
        );
    }

    #[test]
    fn csv_from_starlib_reads_and_writes_as_go_does() {
        let out = process(&star(concat!(
            "load(\"encoding/csv.star\", \"csv\")\n",
            "rows = csv.read_all(\"name;size\\n# skipped\\nweb; 2\\n\", comma=\";\", comment=\"#\", trim_leading_space=True, skip=1)\n",
            "items = ctx.resource_list[\"items\"]\n",
            "items[0][\"metadata\"][\"annotations\"] = {\n",
            "    \"read\": str(rows),\n",
            "    \"starlib\": csv.write_all([[1,2,3],[4,5,6],['a','b','c']]),\n",
            "    \"quoted\": csv.write_all([[\"a,b\", 1.5, True]]),\n",
            "}\n",
        )));
        assert!(!out.output.failed(), "{}", out.output.resource_list);
        let text = &out.output.resource_list;
        for want in [
            "read: '[[\"web\", \"2\"]]'",
            "starlib: |\n        1,2,3\n        4,5,6\n        a,b,c\n",
            "quoted: |\n        \"a,b\",1.5,true\n",
        ] {
            assert!(text.contains(want), "{want} missing in {text}");
        }
        let out = process(&star(
            "load(\"encoding/csv.star\", \"csv\")\ncsv.read_all(\"a,b\\nc\\n\")\n",
        ));
        assert_eq!(error_of(&out), "record on line 2: wrong number of fields");
        let out = process(&star(
            "load(\"encoding/csv.star\", \"csv\")\ncsv.write_all([1])\n",
        ));
        assert_eq!(error_of(&out), "row 0 is not an array type");
    }

    #[test]
    fn an_unknown_module_fails() {
        let out = process(&star("load(\"nope.star\", \"x\")\n"));
        assert!(error_of(&out).contains("nope.star"));
    }

    #[test]
    fn an_endless_loop_is_stopped() {
        let out = process_with(&star("for i in range(1 << 30):\n    pass\n"), &small());
        assert_eq!(
            error_of(&out),
            "starlark: execution step limit of 1000000 exceeded"
        );
    }

    #[test]
    fn deep_recursion_is_stopped() {
        let out = process_with(&star("def f(n):\n    return f(n + 1)\nf(0)\n"), &small());
        assert_eq!(
            error_of(&out),
            "starlark: call stack depth limit of 50 exceeded"
        );
    }

    #[test]
    fn a_huge_allocation_is_stopped() {
        let out = process_with(
            &star("s = \"x\"\nfor i in range(40):\n    s = s + s\n"),
            &small(),
        );
        assert_eq!(
            error_of(&out),
            "starlark: memory limit of 33554432 bytes exceeded"
        );
        let out = process_with(
            &star("l = []\nfor i in range(100000000):\n    l.append([i, i])\n"),
            &Limits {
                max_ticks: 1 << 40,
                ..small()
            },
        );
        assert_eq!(
            error_of(&out),
            "starlark: memory limit of 33554432 bytes exceeded"
        );
    }

    #[test]
    fn a_runtime_error_is_reported() {
        let out = process(&star("x = {}\ny = x[\"missing\"]\n"));
        assert!(error_of(&out).contains("missing"));
    }
}
