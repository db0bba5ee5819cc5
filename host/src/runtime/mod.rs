//! A runtime for KRM functions compiled to WebAssembly with Go's
//! `GOOS=js GOARCH=wasm` ABI: the modules kpt runs with
//! `--allow-alpha-wasm` (see `shared/reference/kpt-wasm-and-krm-functions.md`
//! section 1).
//!
//! Such a module is a Go program (or anything implementing the same ABI,
//! like this project's `functions/kpt-wasm`) that, started with `run`,
//! sets `globalThis.processResourceList` (and `processResourceListErrors`)
//! to functions through `syscall/js` and then blocks. The host calls
//! `processResourceList(resourceList)` and reads the returned string.
//!
//! [`GoWasmRuntime`] is that host, written in Rust on wasmtime:
//!
//! * `gojs` provides the imports of Go's `wasm_exec.js` (under both
//!   import module names, `gojs` of Go ≥ 1.21 and `go` of older Go and of
//!   kpt's wasmtime runtime) and the `_resume`/`_pendingEvent` protocol;
//! * `js` models the JavaScript values and the globals Go touches:
//!   `Object`, `Array`, `Uint8Array`, `Error`, `Date`, `crypto`, `console`,
//!   `process` (pid and uid -1, `cwd()` `/`), and `fs`, where writes to
//!   fd 1 and 2 are captured as the run's stdout and stderr and every
//!   other operation fails with `ENOSYS`, as in `wasm_exec.js` outside
//!   node;
//! * every run gets a fresh instance in its own store, with the
//!   [`Limits`]: fuel (instructions), a wall-clock deadline (epoch
//!   interruption, and timer waits), linear memory, host-side JavaScript
//!   allocations and output size. A limit stops the run with a
//!   [`WasmFnError`]; the runtime stays usable;
//! * compiled modules are cached, by file (path, size, modification time)
//!   or OCI layer digest;
//! * [`FunctionDirectory`] finds modules by image reference in a local
//!   directory (see [`directory`]).
//!
//! A run: the module is instantiated, argv `["js"]` and an empty
//! environment are written at offset 4096 and `run(argc, argv)` is called.
//! While `processResourceList` is not yet registered and timers are pending
//! (`time.Sleep` in `main`), the earliest timer fires and Go resumes. Then
//! `processResourceList(input)` is called. As in kpt, a result containing
//! `kind: ResourceList` is the output; any other string is a failure whose
//! message is what `processResourceListErrors(input)` returns.
//!
//! ```no_run
//! use porch_variants::runtime::{FunctionDirectory, GoWasmRuntime, Limits};
//!
//! let runtime = GoWasmRuntime::new(Limits::default())?;
//! let functions = FunctionDirectory::new("/var/lib/krm-functions");
//! let run = runtime.run_image(&functions, "ghcr.io/example/set-foo:v1", "kind: ResourceList\nitems: []\n")?;
//! println!("{}", run.output);
//! # Ok::<(), porch_variants::runtime::WasmFnError>(())
//! ```

pub mod directory;
mod error;
mod gojs;
mod js;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use wasmtime::{Config, Engine, InstancePre, Linker, Module};

use crate::component::CodeCache;
use crate::wasm_engine::EpochTicker;
pub use directory::{FunctionDirectory, ImageRef, ModuleSource};
pub use error::WasmFnError;
use gojs::HostState;

/// Interval of the epoch ticker behind [`Limits::timeout`].
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// How the module's clock and timers run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClockMode {
    /// Real time: a timer the program waits for is waited for (within
    /// the deadline).
    #[default]
    Real,
    /// Real time plus every timer wait, which is skipped: `time.Sleep`
    /// returns at once while the program sees the time it asked for pass.
    Virtual,
}

/// Limits of one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Fuel (about one unit per WebAssembly instruction); `None` for no
    /// limit.
    pub fuel: Option<u64>,
    /// Wall-clock deadline of a run (instantiation, start-up, timers and
    /// the call); `None` for none.
    pub timeout: Option<Duration>,
    /// Most linear memory in bytes (a module asking for more sees its
    /// `memory.grow` fail; the run then fails with
    /// [`WasmFnError::MemoryLimit`]).
    pub max_memory: usize,
    /// Most bytes of any string the module hands the host (the output
    /// among them), and of stdout and of stderr each.
    pub max_output: usize,
    /// Most bytes the module may make the host allocate for JavaScript
    /// values over a run (strings, arrays, `Uint8Array`s, objects).
    pub max_host_allocation: usize,
    /// The clock.
    pub clock: ClockMode,
}

impl Default for Limits {
    /// 2 × 10¹⁰ fuel (tens of seconds of Go), 60 s, 1 GiB of memory,
    /// 64 MiB of output, 1 GiB of host allocations, the real clock.
    fn default() -> Self {
        Limits {
            fuel: Some(20_000_000_000),
            timeout: Some(Duration::from_secs(60)),
            max_memory: 1 << 30,
            max_output: 64 << 20,
            max_host_allocation: 1 << 30,
            clock: ClockMode::Real,
        }
    }
}

/// The result of a successful run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FnRun {
    /// What `processResourceList` returned: the output ResourceList.
    pub output: String,
    /// What the module wrote to stdout (fd 1).
    pub stdout: String,
    /// What the module wrote to stderr (fd 2).
    pub stderr: String,
    /// Fuel used (`None` without a fuel limit).
    pub fuel_used: Option<u64>,
    /// Wall-clock time of the run, instantiation included.
    pub elapsed: Duration,
}

/// A compiled, linked module. Cheap to clone.
#[derive(Clone)]
pub struct GoWasmModule {
    inner: Arc<ModuleInner>,
}

struct ModuleInner {
    name: String,
    pre: InstancePre<HostState>,
}

impl GoWasmModule {
    /// The module's name in errors (image reference or file path).
    pub fn name(&self) -> &str {
        &self.inner.name
    }
}

impl std::fmt::Debug for GoWasmModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GoWasmModule")
            .field("name", &self.inner.name)
            .finish_non_exhaustive()
    }
}

/// Runs Go js/wasm KRM function modules (see the module documentation).
/// Share it between threads: runs take `&self` and run in parallel.
pub struct GoWasmRuntime {
    engine: Engine,
    linker: Linker<HostState>,
    limits: Limits,
    modules: Mutex<HashMap<String, GoWasmModule>>,
    _ticker: EpochTicker,
}

impl std::fmt::Debug for GoWasmRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GoWasmRuntime")
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

/// Most compiled modules kept; the cache is emptied when it is full.
const MAX_CACHED_MODULES: usize = 64;

impl GoWasmRuntime {
    /// A runtime whose runs have `limits`, without a code cache on disk.
    pub fn new(limits: Limits) -> Result<Self, WasmFnError> {
        Self::with_cache(limits, CodeCache::Disabled)
    }

    /// A runtime whose runs have `limits`, keeping compiled code in
    /// `cache` between processes.
    pub fn with_cache(limits: Limits, cache: CodeCache) -> Result<Self, WasmFnError> {
        let setup =
            |what: &str, e: &dyn std::fmt::Display| WasmFnError::Setup(format!("{what}: {e}"));
        let mut config = Config::new();
        config.consume_fuel(true).epoch_interruption(true);
        crate::wasm_engine::use_code_cache(&mut config, &cache, "wasm functions are");
        let engine = Engine::new(&config).map_err(|e| setup("creating the engine", &e))?;
        let mut linker = Linker::new(&engine);
        gojs::define_imports(&mut linker).map_err(|e| setup("defining the imports", &e))?;
        let ticker = EpochTicker::start(&engine, EPOCH_TICK, "pv-gojs-epoch")
            .map_err(|e| setup("starting the epoch ticker", &e))?;
        Ok(GoWasmRuntime {
            engine,
            linker,
            limits,
            modules: Mutex::new(HashMap::new()),
            _ticker: ticker,
        })
    }

    /// The limits of [`run`](Self::run).
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Compiles and links `bytes` (not cached); `name` names it in errors.
    pub fn compile(&self, name: &str, bytes: &[u8]) -> Result<GoWasmModule, WasmFnError> {
        let started = Instant::now();
        let module = Module::new(&self.engine, bytes).map_err(|e| WasmFnError::Compile {
            module: name.to_string(),
            reason: format!("{e:#}"),
        })?;
        let pre = self
            .linker
            .instantiate_pre(&module)
            .map_err(|e| WasmFnError::NotGoJs {
                module: name.to_string(),
                reason: format!("{e:#}"),
            })?;
        tracing::debug!(
            module = name,
            bytes = bytes.len(),
            compile_ms = started.elapsed().as_secs_f64() * 1e3,
            "wasm function compiled"
        );
        Ok(GoWasmModule {
            inner: Arc::new(ModuleInner {
                name: name.to_string(),
                pre,
            }),
        })
    }

    /// The module at `source`, compiled once per [`ModuleSource::cache_key`].
    pub fn load(&self, name: &str, source: &ModuleSource) -> Result<GoWasmModule, WasmFnError> {
        let key = source.cache_key();
        if let Some(m) = self.modules.lock().ok().and_then(|m| m.get(&key).cloned()) {
            return Ok(m);
        }
        let bytes = source.read(name)?;
        let module = self.compile(name, &bytes)?;
        if let Ok(mut modules) = self.modules.lock() {
            if modules.len() >= MAX_CACHED_MODULES {
                modules.clear();
            }
            modules.insert(key, module.clone());
        }
        Ok(module)
    }

    /// The module in file `path`, compiled once per path, size and
    /// modification time.
    pub fn load_file(&self, path: &Path) -> Result<GoWasmModule, WasmFnError> {
        self.load(
            &path.display().to_string(),
            &ModuleSource::File(path.to_path_buf()),
        )
    }

    /// The module of `image` in `functions`, compiled once.
    pub fn load_image(
        &self,
        functions: &FunctionDirectory,
        image: &str,
    ) -> Result<GoWasmModule, WasmFnError> {
        let source = functions.locate(image)?;
        self.load(image, &source)
    }

    /// Runs `module` on `resource_list` with the runtime's limits.
    pub fn run(&self, module: &GoWasmModule, resource_list: &str) -> Result<FnRun, WasmFnError> {
        self.run_with_limits(module, resource_list, &self.limits)
    }

    /// Runs `module` (loaded by this runtime) on `resource_list` with
    /// `limits`.
    pub fn run_with_limits(
        &self,
        module: &GoWasmModule,
        resource_list: &str,
        limits: &Limits,
    ) -> Result<FnRun, WasmFnError> {
        if !Engine::same(module.inner.pre.module().engine(), &self.engine) {
            return Err(WasmFnError::Setup(format!(
                "module {} was loaded by another runtime",
                module.inner.name
            )));
        }
        gojs::execute(&module.inner.pre, &module.inner.name, resource_list, limits)
    }

    /// Finds, loads and runs the module of `image`.
    pub fn run_image(
        &self,
        functions: &FunctionDirectory,
        image: &str,
        resource_list: &str,
    ) -> Result<FnRun, WasmFnError> {
        let module = self.load_image(functions, image)?;
        self.run(&module, resource_list)
    }
}
