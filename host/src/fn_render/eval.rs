//! `porch-variants fn eval`: kpt's `fn eval` on a package directory, in
//! place: one function (`--image` or `--exec`) over the package's
//! resources, subpackages and meta resources (the Kptfiles) included, as
//! kpt does since v1.0. The evaluation is the
//! core's ([`pv_core::render::EvalSpec`]), through the same runtimes as
//! `fn render`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use pv_core::api::{Function, Selector};
use pv_core::render::{self, EvalSpec, RenderOptions};

use super::eval_output::{self, Output};
use super::eval_save;
use super::{read_package, render_and_write, HostRuntime};
use crate::engine_api::Core;

/// Options of `porch-variants fn eval`.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = EVAL_HELP)]
pub struct EvalArgs {
    /// The package directory (default: the current directory), or `-` to
    /// read a `ResourceList` (or a stream of resources) from stdin and
    /// write the output to stdout.
    #[arg(default_value = ".")]
    pub pkg_path: PathBuf,
    /// Where the output goes instead of the package: `stdout` (a
    /// `ResourceList`), `unwrap` (the resources as YAML), or a directory
    /// that does not exist yet.
    #[arg(long, short = 'o', value_name = "stdout|unwrap|DIR")]
    pub output: Option<String>,
    /// After a successful run, add the function and its config to the
    /// package's Kptfile pipeline (needs `--type`).
    #[arg(long, short = 's')]
    pub save: bool,
    /// The list `--save` adds the function to.
    #[arg(long, short = 't', value_enum)]
    pub r#type: Option<super::eval_save::FnType>,
    /// The function's image (a builtin, starlark, or a module of
    /// `--fn-dir`).
    #[arg(
        long,
        short = 'i',
        conflicts_with = "exec",
        required_unless_present = "exec"
    )]
    pub image: Option<String>,
    /// A program to run as the function (kpt's `--exec`).
    #[arg(long, short = 'e')]
    pub exec: Option<String>,
    /// A file holding the function config (any KRM object).
    #[arg(long, value_name = "FILE", conflicts_with = "config_data")]
    pub fn_config: Option<PathBuf>,
    /// Refused, as kpt refuses it: meta resources are always input.
    #[arg(long, short = 'm', hide = true)]
    pub include_meta_resources: bool,
    /// Only resources of this apiVersion.
    #[arg(long)]
    pub match_api_version: Option<String>,
    /// Only resources of this kind.
    #[arg(long)]
    pub match_kind: Option<String>,
    /// Only resources of this name.
    #[arg(long)]
    pub match_name: Option<String>,
    /// Only resources of this namespace.
    #[arg(long)]
    pub match_namespace: Option<String>,
    /// Only resources with these labels (`key=value`, repeatable).
    #[arg(long, value_name = "KEY=VALUE")]
    pub match_labels: Vec<String>,
    /// Only resources with these annotations (`key=value`, repeatable).
    #[arg(long, value_name = "KEY=VALUE")]
    pub match_annotations: Vec<String>,
    /// Not resources of this apiVersion.
    #[arg(long)]
    pub exclude_api_version: Option<String>,
    /// Not resources of this kind.
    #[arg(long)]
    pub exclude_kind: Option<String>,
    /// Not resources of this name.
    #[arg(long)]
    pub exclude_name: Option<String>,
    /// Not resources of this namespace.
    #[arg(long)]
    pub exclude_namespace: Option<String>,
    /// Not resources with these labels (`key=value`, repeatable).
    #[arg(long, value_name = "KEY=VALUE")]
    pub exclude_labels: Vec<String>,
    /// Not resources with these annotations (`key=value`, repeatable).
    #[arg(long, value_name = "KEY=VALUE")]
    pub exclude_annotations: Vec<String>,
    /// Write the function results to DIR/results.yaml.
    #[arg(long, value_name = "DIR")]
    pub results_dir: Option<PathBuf>,
    /// Seconds an exec function may run before it is stopped.
    #[arg(long, default_value_t = 300)]
    pub exec_timeout: u64,
    /// Prefix of images named without a registry.
    #[arg(long, env = "KPT_IMAGE_PREFIX", default_value = render::image::DEFAULT_PREFIX)]
    pub image_prefix: String,
    /// Use the core compiled into this binary instead of the embedded
    /// WebAssembly component.
    #[arg(long)]
    pub native_core: bool,
    /// Directory of wasm KRM functions (Go js/wasm ABI).
    #[arg(long, value_name = "DIR", env = "PORCH_VARIANTS_FN_DIR")]
    pub fn_dir: Option<PathBuf>,
    /// Porch's function runner.
    #[command(flatten)]
    pub runner: crate::function_runner::RunnerArgs,
    /// Containers.
    #[command(flatten)]
    pub container: super::container::ContainerArgs,
    /// Give a container function the host's network (kpt's `--network`).
    #[arg(long)]
    pub network: bool,
    /// A mount for a container function, as `docker run --mount` takes it
    /// (`type=bind,src=…,dst=…[,rw=true]`); repeatable.
    #[arg(long, value_name = "MOUNT")]
    pub mount: Vec<String>,
    /// The function config as `key=value` pairs after `--`: a ConfigMap
    /// named `function-input`, as kpt makes it.
    #[arg(last = true, value_name = "KEY=VALUE")]
    pub config_data: Vec<String>,
}

/// What `fn eval --help` says after the options.
const EVAL_HELP: &str = "\
Functions: as for `fn render` (builtins, starlark, --fn-dir modules);
`--exec` runs a program, without --allow-exec.

Output: in place by default; `-o stdout` prints a ResourceList, `-o unwrap`
the resources, `-o DIR` writes a new directory. `fn eval - ...` reads a
ResourceList (or resources) from stdin and prints a ResourceList:
  porch-variants fn eval PKG -i set-labels -o stdout -- tier=web \\
    | porch-variants fn eval - -i set-namespace -o unwrap -- namespace=prod

Exit codes:
  0  the function ran and its output was written
  1  the function failed, or the package could not be read or written
     (nothing is written)
  2  the command line is wrong";

/// `key=value` pairs as a map; the error names the pair.
fn pairs(flag: &str, items: &[String]) -> anyhow::Result<BTreeMap<String, String>> {
    items
        .iter()
        .map(|kv| match kv.split_once('=') {
            Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
            _ => Err(anyhow::anyhow!("{flag}: {kv:?} is not key=value")),
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn selector(
    flag: &str,
    api_version: &Option<String>,
    kind: &Option<String>,
    name: &Option<String>,
    namespace: &Option<String>,
    labels: &[String],
    annotations: &[String],
) -> anyhow::Result<Option<Selector>> {
    let s = Selector {
        api_version: api_version.clone().unwrap_or_default(),
        kind: kind.clone().unwrap_or_default(),
        name: name.clone().unwrap_or_default(),
        namespace: namespace.clone().unwrap_or_default(),
        labels: pairs(&format!("--{flag}-labels"), labels)?,
        annotations: pairs(&format!("--{flag}-annotations"), annotations)?,
    };
    Ok((s != Selector::default()).then_some(s))
}

impl EvalArgs {
    /// The core's request for these arguments, `dir` being the package.
    fn spec(&self) -> anyhow::Result<EvalSpec> {
        let fn_config = match &self.fn_config {
            None => String::new(),
            Some(path) => std::fs::read_to_string(path).map_err(|e| {
                anyhow::anyhow!("reading the function config {}: {e}", path.display())
            })?,
        };
        let function = Function {
            image: self.image.clone().unwrap_or_default(),
            exec: self.exec.clone().unwrap_or_default(),
            config_map: pairs("function config", &self.config_data)?,
            selectors: selector(
                "match",
                &self.match_api_version,
                &self.match_kind,
                &self.match_name,
                &self.match_namespace,
                &self.match_labels,
                &self.match_annotations,
            )?
            .into_iter()
            .collect(),
            exclude: selector(
                "exclude",
                &self.exclude_api_version,
                &self.exclude_kind,
                &self.exclude_name,
                &self.exclude_namespace,
                &self.exclude_labels,
                &self.exclude_annotations,
            )?
            .into_iter()
            .collect(),
            ..Function::default()
        };
        Ok(EvalSpec {
            function,
            fn_config,
        })
    }
}

/// Runs the function over `args.pkg_path` (in place, or to `-o`'s
/// output), printing kpt's progress and error lines; exit code 0 on
/// success, 1 on failure.
pub fn run(args: &EvalArgs) -> anyhow::Result<ExitCode> {
    if args.include_meta_resources {
        anyhow::bail!(
            "--include-meta-resources is no longer necessary because meta resources are now included by default"
        );
    }
    let from_stdin = args.pkg_path.as_os_str() == "-";
    let output = Output::parse(args.output.as_deref(), from_stdin);
    if let Output::Dir(out_dir) = &output {
        eval_output::check_new_dir(out_dir)?;
    }
    let saved_config = match (args.save, from_stdin) {
        (true, false) => {
            let package = args.pkg_path.canonicalize().map_err(|e| {
                anyhow::anyhow!("missing package path {}: {e}", args.pkg_path.display())
            })?;
            Some(eval_save::check(
                args.r#type,
                &package,
                args.fn_config.as_deref(),
            )?)
        }
        _ => None,
    };
    let spec = args.spec()?;
    let (dir, before) = if from_stdin {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
            .map_err(|e| anyhow::anyhow!("reading the resources from stdin: {e}"))?;
        (
            std::env::current_dir()?,
            eval_output::files_from_stream(&text)?,
        )
    } else {
        let dir = args.pkg_path.canonicalize().map_err(|e| {
            anyhow::anyhow!(
                "missing package path {} or package: {e}",
                args.pkg_path.display()
            )
        })?;
        crate::package_dir::recover(&dir)?;
        let before = read_package(&dir)?;
        (dir, before)
    };
    let allow_exec = args.exec.is_some();
    let spec_function = Function {
        image: match &spec.function.image {
            i if i.is_empty() => String::new(),
            // kpt saves a short name with the prefix, its tag as given.
            i if i.contains('/') => i.clone(),
            i => format!("{}/{i}", args.image_prefix.trim_end_matches('/')),
        },
        ..spec.function.clone()
    };
    let opts = RenderOptions {
        allow_exec,
        image_prefix: args.image_prefix.clone(),
        root_path: dir.to_string_lossy().into_owned(),
        eval: Some(spec),
        ..RenderOptions::default()
    };
    let mut runtime = HostRuntime::for_command(&super::RuntimeFlags {
        allow_exec,
        exec_timeout: args.exec_timeout,
        image_prefix: &args.image_prefix,
        fn_dir: args.fn_dir.as_deref(),
        runner: &args.runner,
        container: &args.container,
    })?;
    if let Some(c) = runtime.container.as_mut() {
        c.network = args.network;
        c.mounts = args.mount.clone();
    }
    let out = if output == Output::InPlace {
        render_and_write(&dir, before, &opts, runtime, args.native_core)?
    } else {
        let mut runtime = runtime;
        let out = if args.native_core {
            crate::engine_api::NativeCore.render_package(before, &opts, &mut runtime)?
        } else {
            crate::engine_api::ComponentCore::load()?.render_package(before, &opts, &mut runtime)?
        };
        if out.failure.is_none() {
            match &output {
                Output::Stdout => print!("{}", eval_output::resource_list(&out.files)?),
                Output::Unwrap => print!("{}", eval_output::unwrapped(&out.files)?),
                Output::Dir(out_dir) => eval_output::write_dir(out_dir, &out.files)?,
                Output::InPlace => {}
            }
        }
        out
    };
    for line in &out.log {
        eprintln!("{line}");
    }
    if let Some(rd) = &args.results_dir {
        std::fs::create_dir_all(rd)?;
        let path = rd.join("results.yaml");
        std::fs::write(&path, &out.results_yaml)?;
        eprintln!("For complete results, see {}", path.display());
    }
    if out.failure.is_none() && args.save {
        let mut function = spec_function.clone();
        if let Some(config_path) = saved_config.flatten() {
            function.config_path = config_path;
            function.config_map.clear();
        }
        match (from_stdin, args.r#type) {
            (false, Some(fn_type)) => match eval_save::save(&dir, fn_type, &function) {
                Ok(line) => eprintln!("{line}"),
                // kpt prints why and still succeeds: the evaluation is done.
                Err(e) => eprintln!("{e}"),
            },
            _ => eprintln!("{}", eval_save::SaveError::NoKptfile),
        }
    }
    match &out.failure {
        None => Ok(ExitCode::SUCCESS),
        Some(f) => {
            if !f.handled {
                eprintln!("Error: {} ", f.cause);
            }
            Ok(ExitCode::FAILURE)
        }
    }
}
