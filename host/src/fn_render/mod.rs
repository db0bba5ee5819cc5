//! `porch-variants fn render`: kpt's `fn render` on a package directory,
//! in place, with the same exit codes. The render itself is the core's
//! (`pv_core::render`); this module reads and writes the directory and
//! runs the functions that are not builtins (exec programs under
//! `--allow-exec`, wasm modules from a function directory, and the
//! catalog's starlark function, embedded: [`starlark`]).

pub mod container;
pub mod eval;
pub mod eval_output;
pub mod eval_save;
pub mod exec;
pub mod starlark;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use pv_core::render::{self, FunctionRef, FunctionRuntime, RenderOptions, RunOutput, RuntimeError};

use crate::component::CodeCache;
use crate::engine_api::{ComponentCore, Core, NativeCore, RenderedPackage};
use crate::function_runner::{FunctionRunner, RunnerArgs, RunnerError};
use crate::runtime::{FunctionDirectory, GoWasmRuntime, Limits, WasmFnError};

/// Options of `porch-variants fn render`.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = RENDER_HELP)]
pub struct RenderArgs {
    /// The package directory (default: the current directory).
    #[arg(default_value = ".")]
    pub pkg_path: PathBuf,
    /// Allow `exec:` functions to run.
    #[arg(long)]
    pub allow_exec: bool,
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
    /// Directory of wasm KRM functions (Go js/wasm ABI): `<name>.wasm`,
    /// `<name>:<tag>.wasm` or the OCI layout `kpt alpha wasm push` writes.
    #[arg(long, value_name = "DIR", env = "PORCH_VARIANTS_FN_DIR")]
    pub fn_dir: Option<PathBuf>,
    /// Porch's function runner.
    #[command(flatten)]
    pub runner: RunnerArgs,
    /// Containers.
    #[command(flatten)]
    pub container: container::ContainerArgs,
}

/// What `fn render --help` says after the options.
const RENDER_HELP: &str = "\
Functions:
  builtins        set-namespace, set-labels, set-annotations, set-image,
                  set-enforcement-action, apply-replacements,
                  apply-setters, create-setters, list-setters,
                  search-replace, upsert-resource and
                  remove-local-config-resources
                  (the catalog's images,
                  any tag) run inside the package-editing component
  starlark        the catalog's starlark function, embedded
  wasm            Go js/wasm modules from --fn-dir (kpt's wasm runtime ABI)
  exec            exec: programs, only with --allow-exec (each in its own
                  process group, killed with the render)
  runner          any other image, in Porch's function runner when
                  --function-runner names one (Porch's FunctionEvaluator
                  gRPC service)
  containers      then, as kpt runs them: docker or podman (or
                  --container-runtime) run --rm -i --network none
                  --user nobody --security-opt=no-new-privileges IMAGE

Exit codes:
  0  rendered
  1  a function failed, or the package could not be read or written
     (of the package, only the root Kptfile's Rendered condition is
     written, unless it asks for kpt.dev/save-on-render-failure)
  2  the command line is wrong";

/// Errors reading or writing the package.
#[derive(Debug, thiserror::Error)]
pub enum PackageIoError {
    /// A file could not be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file could not be written or removed.
    #[error("writing {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A resource file is not UTF-8.
    #[error("{path}: not UTF-8 text")]
    NotText {
        /// The file.
        path: PathBuf,
    },
    /// A resource file, or all of them, is larger than a render reads.
    #[error("{path}: {size} bytes, more than the {} MiB a render reads", .limit >> 20)]
    TooLarge {
        /// The file (the package directory for the total).
        path: PathBuf,
        /// Its size (or the total so far).
        size: u64,
        /// The limit.
        limit: u64,
    },
}

/// Largest resource file a render reads.
pub const MAX_RESOURCE_FILE: u64 = 64 << 20;
/// Largest total of resource files a render reads.
pub const MAX_PACKAGE: u64 = 256 << 20;

/// Reads the files render may read under `dir`: `Kptfile`s, `*.yaml`,
/// `*.yml`, `*.json` and `.krmignore` (other files are never touched).
/// Symbolic links are not followed; `.git` is skipped. A resource file over
/// [`MAX_RESOURCE_FILE`] or a package over [`MAX_PACKAGE`] is refused on its
/// size, before it is read.
pub fn read_package(dir: &Path) -> Result<render::Files, PackageIoError> {
    let mut files = render::Files::new();
    let mut total = 0u64;
    let mut stack = vec![(dir.to_path_buf(), String::new())];
    while let Some((abs, rel)) = stack.pop() {
        let entries = std::fs::read_dir(&abs).map_err(|source| PackageIoError::Read {
            path: abs.clone(),
            source,
        })?;
        for entry in entries {
            let entry = entry.map_err(|source| PackageIoError::Read {
                path: abs.clone(),
                source,
            })?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let ty = entry.file_type().map_err(|source| PackageIoError::Read {
                path: entry.path(),
                source,
            })?;
            let child_rel = render::package::join(&rel, &name);
            if ty.is_dir() {
                if name != ".git" {
                    stack.push((entry.path(), child_rel));
                }
            } else if ty.is_file()
                && (render::package::is_krm_file_name(&name) || name == ".krmignore")
            {
                let size = entry
                    .metadata()
                    .map_err(|source| PackageIoError::Read {
                        path: entry.path(),
                        source,
                    })?
                    .len();
                if size > MAX_RESOURCE_FILE {
                    return Err(PackageIoError::TooLarge {
                        path: entry.path(),
                        size,
                        limit: MAX_RESOURCE_FILE,
                    });
                }
                total += size;
                if total > MAX_PACKAGE {
                    return Err(PackageIoError::TooLarge {
                        path: dir.to_path_buf(),
                        size: total,
                        limit: MAX_PACKAGE,
                    });
                }
                let bytes = std::fs::read(entry.path()).map_err(|source| PackageIoError::Read {
                    path: entry.path(),
                    source,
                })?;
                let text = String::from_utf8(bytes)
                    .map_err(|_| PackageIoError::NotText { path: entry.path() })?;
                files.insert(child_rel, text);
            }
        }
    }
    Ok(files)
}

/// Writes what changed between `before` and `after` under `dir`, confined
/// to the package and as one ([`crate::package_dir::write_changes`]).
pub fn write_changes(
    dir: &Path,
    before: &render::Files,
    after: &render::Files,
) -> Result<(), crate::package_dir::PackageDirError> {
    crate::package_dir::write_changes(dir, before, after)
}

/// Writes what changed under `dir` where `read` are the files read from it
/// before the render (compared on disk, so that the old texts need not be
/// kept: [`crate::package_dir::write_changes_on_disk`]).
pub fn write_changes_on_disk(
    dir: &Path,
    read: &std::collections::BTreeSet<String>,
    after: &render::Files,
) -> Result<(), crate::package_dir::PackageDirError> {
    crate::package_dir::write_changes_on_disk(dir, read, after)
}

/// The flags `fn render` and `fn eval` share about where functions run.
#[derive(Debug, Clone, Copy)]
pub struct RuntimeFlags<'a> {
    /// `--allow-exec`.
    pub allow_exec: bool,
    /// `--exec-timeout`, in seconds.
    pub exec_timeout: u64,
    /// `--image-prefix`.
    pub image_prefix: &'a str,
    /// `--fn-dir`.
    pub fn_dir: Option<&'a Path>,
    /// Porch's function runner.
    pub runner: &'a crate::function_runner::RunnerArgs,
    /// `--container-runtime`.
    pub container: &'a container::ContainerArgs,
}

/// The host's runtime for functions that are not builtins.
pub struct HostRuntime {
    /// Run `exec:` functions.
    pub allow_exec: bool,
    /// Where exec functions run and their relative paths resolve.
    pub dir: PathBuf,
    /// How long an exec function may run.
    pub exec_timeout: Duration,
    /// Wasm functions: the runtime and where modules are found.
    pub wasm: Option<(GoWasmRuntime, FunctionDirectory)>,
    /// The image prefix of the render (`--image-prefix`), under which
    /// `starlark` also names the catalog's starlark function.
    pub image_prefix: String,
    /// The embedded starlark function, for images the function directory
    /// does not provide.
    pub starlark: starlark::EmbeddedStarlark,
    /// Porch's function runner, for images nothing here provides.
    pub runner: Option<FunctionRunner>,
    /// Containers (docker, podman), last.
    pub container: Option<container::ContainerRuntime>,
}

impl std::fmt::Debug for HostRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostRuntime")
            .field("allow_exec", &self.allow_exec)
            .field("dir", &self.dir)
            .field("functions", &self.wasm.as_ref().map(|(_, d)| d.root()))
            .field("runner", &self.runner.as_ref().map(FunctionRunner::address))
            .finish()
    }
}

impl FunctionRuntime for HostRuntime {
    fn run(&mut self, function: &FunctionRef, input: &str) -> Result<RunOutput, RuntimeError> {
        if !function.exec.is_empty() {
            if !self.allow_exec {
                return Err(RuntimeError::Failed(
                    "must run with `--allow-exec` option to allow running function binaries".into(),
                ));
            }
            return exec::run(&function.exec, &self.dir, input, self.exec_timeout)
                .map_err(RuntimeError::Failed);
        }
        let from_directory = match &self.wasm {
            None => Err(RuntimeError::NotFound),
            Some((runtime, functions)) => {
                match runtime.run_image(functions, &function.image, input) {
                    Ok(run) => Ok(RunOutput {
                        stdout: run.output,
                        stderr: run.stderr,
                        exit_code: 0,
                    }),
                    Err(WasmFnError::NotFound { .. }) => Err(RuntimeError::NotFound),
                    Err(e) => Err(RuntimeError::Failed(e.to_string())),
                }
            }
        };
        match from_directory {
            Err(RuntimeError::NotFound)
                if starlark::is_starlark(&function.image, &self.image_prefix) =>
            {
                self.starlark.run(input)
            }
            Err(RuntimeError::NotFound) => self.run_elsewhere(function, input),
            other => other,
        }
    }
}

/// Renders `args.pkg_path` in place and prints kpt's progress, summary and
/// error lines; exit code 0 on success, 1 on failure.
pub fn run(args: &RenderArgs) -> anyhow::Result<ExitCode> {
    let dir = args.pkg_path.canonicalize().map_err(|e| {
        anyhow::anyhow!(
            "missing package path {} or package: {e}",
            args.pkg_path.display()
        )
    })?;
    // What a killed write of this package left is finished or undone
    // before the package is read.
    crate::package_dir::recover(&dir)?;
    let before = read_package(&dir)?;
    let opts = RenderOptions {
        allow_exec: args.allow_exec,
        image_prefix: args.image_prefix.clone(),
        root_path: dir.to_string_lossy().into_owned(),
        ..RenderOptions::default()
    };
    let runtime = HostRuntime::for_command(&RuntimeFlags {
        allow_exec: args.allow_exec,
        exec_timeout: args.exec_timeout,
        image_prefix: &args.image_prefix,
        fn_dir: args.fn_dir.as_deref(),
        runner: &args.runner,
        container: &args.container,
    })?;
    let out = render_and_write(&dir, before, &opts, runtime, args.native_core)?;
    report(&dir, args.results_dir.as_deref(), &out)
}

impl HostRuntime {
    /// An image no builtin, wasm module or the embedded starlark function
    /// provides: the function runner, then containers. Found nowhere, the
    /// error says where it was looked for and how to provide it.
    fn run_elsewhere(
        &mut self,
        function: &FunctionRef,
        input: &str,
    ) -> Result<RunOutput, RuntimeError> {
        let image = &function.image;
        let mut tried = vec!["the builtins".to_string()];
        match &self.wasm {
            Some((_, dir)) => tried.push(format!("--fn-dir {}", dir.root().display())),
            None => tried.push("no --fn-dir".to_string()),
        }
        match &self.runner {
            Some(runner) => {
                match runner.evaluate(image, input) {
                    Ok(out) => {
                        return Ok(RunOutput {
                            stdout: out.resource_list,
                            stderr: out.log,
                            exit_code: 0,
                        })
                    }
                    Err(RunnerError::NotFound { .. }) => {}
                    Err(e) => return Err(RuntimeError::Failed(e.to_string())),
                }
                tried.push(format!("the function runner at {}", runner.address()));
            }
            None => tried.push("no --function-runner".to_string()),
        }
        match &self.container {
            Some(c) => return c.run(image, input).map_err(RuntimeError::Failed),
            None => tried.push("no container runtime".to_string()),
        }
        Err(RuntimeError::Failed(format!(
            "function runtime failed to evaluate function {image:?}: function {image:?} not found \
             (looked in: {}; a function is provided by --fn-dir, an exec: path with \
             --allow-exec, --function-runner, or docker or podman on PATH)",
            tried.join(", ")
        )))
    }

    /// A runtime whose exec functions run in `dir`.
    pub fn new(
        dir: &Path,
        allow_exec: bool,
        exec_timeout: u64,
        image_prefix: &str,
        fn_dir: Option<&Path>,
    ) -> anyhow::Result<Self> {
        let wasm = match fn_dir {
            Some(d) => Some((
                GoWasmRuntime::with_cache(Limits::default(), CodeCache::UserDefault)?,
                FunctionDirectory::new(d),
            )),
            None => None,
        };
        Ok(HostRuntime {
            allow_exec,
            dir: dir.to_path_buf(),
            exec_timeout: Duration::from_secs(exec_timeout),
            wasm,
            image_prefix: image_prefix.to_string(),
            starlark: starlark::EmbeddedStarlark::default(),
            runner: None,
            container: None,
        })
    }

    /// The runtime a `fn` command's flags ask for: [`HostRuntime::new`],
    /// then the function runner and the container runtime (found on
    /// `PATH`) the flags name. Exec functions run, and their relative
    /// paths resolve, in the process's working directory, as kpt runs
    /// them (not in the package).
    pub fn for_command(flags: &RuntimeFlags<'_>) -> anyhow::Result<Self> {
        let cwd = std::env::current_dir()
            .map_err(|e| anyhow::anyhow!("reading the working directory: {e}"))?;
        let container = container::ContainerRuntime::find(
            flags.container,
            std::env::var_os("PATH").as_deref(),
            Duration::from_secs(flags.exec_timeout),
        )
        .map_err(|e| anyhow::anyhow!(e))?;
        Ok(HostRuntime::new(
            &cwd,
            flags.allow_exec,
            flags.exec_timeout,
            flags.image_prefix,
            flags.fn_dir,
        )?
        .with_runner(flags.runner.runner()?)
        .with_container(container))
    }

    /// The same runtime, sending what nothing here provides to `runner`.
    pub fn with_runner(mut self, runner: Option<FunctionRunner>) -> Self {
        self.runner = runner;
        self
    }

    /// The same runtime, running what nothing else provides as containers.
    pub fn with_container(mut self, container: Option<container::ContainerRuntime>) -> Self {
        self.container = container;
        self
    }
}

/// Renders (or evaluates, as `opts` says) the package read from `dir` as
/// `before`, and writes what changed back to `dir`, as one.
pub fn render_and_write(
    dir: &Path,
    before: render::Files,
    opts: &RenderOptions,
    mut runtime: HostRuntime,
    native_core: bool,
) -> anyhow::Result<RenderedPackage> {
    // The render takes the files, and the result is compared with the
    // disk: the host keeps no copy of the package. The component keeps the
    // rendered files, and only the changed ones are taken from it, a batch
    // at a time, each written beside the old files and dropped.
    let read: std::collections::BTreeSet<String> = before.keys().cloned().collect();
    if native_core {
        let out = NativeCore.render_package(before, opts, &mut runtime)?;
        write_changes_on_disk(dir, &read, &out.files)?;
        Ok(out)
    } else {
        let core = ComponentCore::load()?;
        let (out, written) = core.render_held(before, opts, &mut runtime, &mut |held, fetch| {
            crate::package_dir::write_changes_held(dir, &read, &held, fetch)
        })?;
        written?;
        Ok(out)
    }
}

fn report(
    dir: &Path,
    results_dir: Option<&Path>,
    out: &RenderedPackage,
) -> anyhow::Result<ExitCode> {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    eprintln!("Package {name:?}: ");
    for line in &out.log {
        eprintln!("{line}");
    }
    if !out.summary.is_empty() {
        eprintln!("\n{}", out.summary);
    }
    if let Some(rd) = results_dir {
        std::fs::create_dir_all(rd)?;
        let path = rd.join("results.yaml");
        std::fs::write(&path, &out.results_yaml)?;
        eprintln!("For complete results, see {}", path.display());
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
