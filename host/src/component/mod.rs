//! The package-editing component, run by wasmtime.
//!
//! All package-editing logic of porch-variants is the core (`pv_core`)
//! compiled to one WebAssembly component with no imports
//! (`wit/porch-variants.wit`; built by `build.rs` and embedded in this
//! binary). [`CoreComponent`] is the host side:
//!
//! * one [`wasmtime::Engine`] and one pre-instantiated component
//!   ([`bindings::PorchVariantsPre`]) made at start-up. With the default
//!   limits the component's machine code is the one `build.rs` compiled
//!   ([`precompiled`]), so nothing is compiled at run time; with other
//!   limits, or on a machine the precompiled code does not fit, it is
//!   compiled and kept in wasmtime's on-disk cache, so a later start-up
//!   loads it instead of compiling again;
//! * an instance per call in its own [`Store`]: a fresh one, or one that
//!   finished an earlier call without error (a fresh instance costs about
//!   35 µs before the guest does any work, more than a small call's own
//!   work; a large call's memory costs a fifth of its time to fault in
//!   again). Two are kept: under 16 MiB of linear memory each, or one of
//!   them up to 128 MiB. The exports are pure functions, so a call
//!   sees nothing of the calls before it, and an instance that failed
//!   (a trap, a limit) is dropped: it leaves nothing behind;
//! * per call, a fuel budget that grows with the size of the input, a
//!   linear-memory limit and optionally a wall-clock deadline, from
//!   [`ComponentConfig`]; hitting one stops the guest with a
//!   [`ComponentError`] whose [`reason`](ComponentError::reason) fits a
//!   condition.
//!
//! Every call returns `Result<Answer, ComponentError>`, where `Answer` is
//! the export's own result (for most exports itself a `Result` carrying
//! the guest's domain error).
//!
//! [`native`] computes the same records with the core compiled natively.

pub mod bindings;
pub mod engine_config;
mod error;
pub mod native;
pub mod precompiled;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::wasm_engine::EpochTicker;
use wasmtime::component::types::ComponentItem;
use wasmtime::component::{Component, Linker};
use wasmtime::{Engine, ResourceLimiter, Store, Trap};

pub use bindings::types;
use bindings::{PorchVariants, PorchVariantsPre};
pub use error::ComponentError;

/// The component, as built by `build.rs`.
pub const COMPONENT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/porch-variants.wasm"));

/// Size of the guest's core module before it was stripped and wrapped
/// into the component (0 when a prebuilt component was embedded).
pub const MODULE_SIZE: &str = env!("PV_COMPONENT_MODULE_SIZE");

/// Where compiled code is cached between runs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum CodeCache {
    /// Wasmtime's default cache directory (under the user's cache
    /// directory, e.g. `~/.cache/wasmtime`).
    #[default]
    UserDefault,
    /// This directory (absolute).
    Directory(PathBuf),
    /// No cache: every start-up compiles the component.
    Disabled,
}

/// The fuel (about one unit per WebAssembly instruction executed) of one
/// call: `base + per_input_byte × bytes of input`, so that a small hostile
/// input is stopped fast while a large package or set gets the budget its
/// size needs. The core's work is close to linear in its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fuel {
    /// Fuel of any call.
    pub base: u64,
    /// Added per byte of the call's strings (files, objects).
    pub per_input_byte: u64,
}

impl Fuel {
    /// The budget of a call whose input has `input_bytes` bytes.
    pub fn budget(&self, input_bytes: usize) -> u64 {
        let bytes = u64::try_from(input_bytes).unwrap_or(u64::MAX);
        self.base
            .saturating_add(self.per_input_byte.saturating_mul(bytes))
    }
}

impl Default for Fuel {
    /// 10^9 plus 10,000 per byte: a small input is stopped within about
    /// 0.2 s. A package render costs about 700 per byte with no function
    /// and 1,400 with set-annotations (a result per resource and field:
    /// 2.7 × 10^9 for 3,000 Deployments, 1.9 MB), and each function of a
    /// pipeline adds its share, so 1,000 per byte stopped good packages
    /// over about 2 MB; 10,000 leaves room for a pipeline of several
    /// functions. The 1,000-resource mutation pass (1.1 MB) uses about
    /// 0.8 × 10^9 and the 10,000-target set render about 1.8 × 10^9.
    fn default() -> Self {
        Fuel {
            base: 1_000_000_000,
            per_input_byte: 10_000,
        }
    }
}

/// Limits and start-up options of the component.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComponentConfig {
    /// Fuel of one call; `None` for no limit.
    pub fuel: Option<Fuel>,
    /// Linear memory any call may use, in bytes (an instance kept from
    /// earlier calls starts the call with its memory, at most 128 MiB,
    /// free in the guest's heap); a call with a large input may use more:
    /// see [`ComponentConfig::memory_limit`].
    pub max_memory: usize,
    /// Linear memory a call may use beyond `max_memory` for each byte of
    /// its input.
    pub memory_per_input_byte: usize,
    /// Most linear memory any call may use, whatever its input (an
    /// operator's cap: `PORCH_VARIANTS_MEMORY_CAP_MIB`).
    pub memory_cap: usize,
    /// Wall-clock deadline of one call (epoch interruption, checked every
    /// [`EPOCH_TICK`]); `None` for none. A backstop for when fuel is off:
    /// the checks cost about 0.2× of the guest's run time, so it is off by
    /// default.
    pub timeout: Option<Duration>,
    /// Where compiled code is cached.
    pub cache: CodeCache,
}

/// Takes held files from an instance by path
/// ([`CoreComponent::render_files_held`]).
pub type TakeHeld<'a> = &'a mut dyn FnMut(Vec<String>) -> Result<Vec<types::File>, ComponentError>;

/// Bytes of files [`CoreComponent::render_files`] stages in one call.
const STAGE_BATCH_BYTES: usize = 4 << 20;

/// Interval of the epoch ticker behind [`ComponentConfig::timeout`].
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

impl ComponentConfig {
    /// Default memory limit of one call: 192 MiB (the 10,000-target render
    /// peaks at about 90 MiB, the 1,000-resource mutation pass at about
    /// 22 MiB).
    pub const DEFAULT_MAX_MEMORY: usize = 192 << 20;

    /// Default memory per byte of input: a render holds its files and their
    /// parsed resources (about 3 bytes a byte for small resources on
    /// wasm32), with room to spare.
    pub const DEFAULT_MEMORY_PER_INPUT_BYTE: usize = 6;

    /// Default cap: 4 GiB, all a 32-bit guest can address.
    pub const DEFAULT_MEMORY_CAP: usize = 4 << 30;

    /// The environment variable an operator caps memory with (MiB).
    pub const MEMORY_CAP_ENV: &'static str = "PORCH_VARIANTS_MEMORY_CAP_MIB";

    /// Linear memory a call with `input_bytes` bytes of input may use:
    /// `max_memory` plus `memory_per_input_byte` a byte, at most
    /// `memory_cap` (and never less than `max_memory`).
    pub fn memory_limit(&self, input_bytes: usize) -> usize {
        self.max_memory
            .saturating_add(self.memory_per_input_byte.saturating_mul(input_bytes))
            .min(self.memory_cap.max(self.max_memory))
    }
}

/// The cap from [`ComponentConfig::MEMORY_CAP_ENV`], when set to a number
/// of MiB.
fn memory_cap_from_env() -> Option<usize> {
    let text = std::env::var(ComponentConfig::MEMORY_CAP_ENV).ok()?;
    match text.trim().parse::<usize>() {
        Ok(mib) => Some(mib.saturating_mul(1 << 20)),
        Err(_) => {
            tracing::warn!(
                variable = ComponentConfig::MEMORY_CAP_ENV,
                value = %text,
                "not a number of MiB; using the default cap"
            );
            None
        }
    }
}

impl Default for ComponentConfig {
    fn default() -> Self {
        ComponentConfig {
            fuel: Some(Fuel::default()),
            max_memory: Self::DEFAULT_MAX_MEMORY,
            memory_per_input_byte: Self::DEFAULT_MEMORY_PER_INPUT_BYTE,
            memory_cap: memory_cap_from_env().unwrap_or(Self::DEFAULT_MEMORY_CAP),
            timeout: None,
            cache: CodeCache::UserDefault,
        }
    }
}

/// What a store holds: the memory limit and whether it was hit.
struct State {
    max_memory: usize,
    denied: Option<usize>,
    peak_memory: usize,
}

impl ResourceLimiter for State {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.peak_memory = self.peak_memory.max(desired);
        if desired > self.max_memory {
            self.denied = Some(desired);
            // An error traps at once, instead of letting the allocator
            // abort somewhere later.
            return Err(wasmtime::Error::msg("memory limit reached"));
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 100_000)
    }
}

/// How the component was loaded at start-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Startup {
    /// Loading (the precompiled code, or compiling or reading the code
    /// cache) and pre-instantiating.
    pub load: Duration,
    /// Size of the embedded component in bytes.
    pub component_size: usize,
    /// Where its machine code came from.
    pub code: CodeSource,
    /// Whether that code runs where it lies in this binary, never copied
    /// ([`precompiled::Loading::InPlace`]).
    pub in_place: bool,
}

/// Where the component's machine code came from at start-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeSource {
    /// Compiled at build time and embedded ([`precompiled`]).
    Precompiled,
    /// Compiled at start-up, or read from the code cache.
    Compiled,
}

/// One export of the component.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportInfo {
    /// The export's name (`apply-mutations`).
    pub name: String,
    /// Its parameters' names.
    pub params: Vec<String>,
    /// Whether it returns a value.
    pub returns: bool,
}

/// Instances kept for later calls, at most.
const MAX_IDLE: usize = 2;

/// Largest linear memory of an instance that is kept for later calls: the
/// small calls (plans, validation, a package of a few files) stay far below
/// it.
const MAX_IDLE_MEMORY: usize = 16 << 20;

/// Largest linear memory of the one instance kept beyond
/// [`MAX_IDLE_MEMORY`]. A large call on a fresh instance spends a fifth of
/// its time having the kernel fault in and clear its memory (the
/// 10,000-target render: about 90 MiB, 273 ms on a fresh instance, 219 ms
/// on a kept one); kept, the memory stays resident between calls, as the
/// native core's allocator keeps its heap. One such instance at most, so
/// what stays resident is bounded by the largest call, not the number.
const MAX_IDLE_LARGE_MEMORY: usize = 128 << 20;

/// An instance between calls.
struct Idle {
    store: Store<State>,
    bindings: PorchVariants,
}

impl Idle {
    fn memory(&self) -> usize {
        self.store.data().peak_memory
    }
}

/// The package-editing component, compiled and pre-instantiated, with the
/// limits of every call. Cheap to share between threads (`&self` calls).
pub struct CoreComponent {
    engine: Engine,
    component: Component,
    pre: PorchVariantsPre<State>,
    config: ComponentConfig,
    startup: Startup,
    idle: Mutex<Vec<Idle>>,
    fuel_used: AtomicU64,
    _ticker: Option<EpochTicker>,
}

impl std::fmt::Debug for CoreComponent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CoreComponent")
            .field("config", &self.config)
            .field("startup", &self.startup)
            .finish_non_exhaustive()
    }
}

impl CoreComponent {
    /// Loads the embedded component with the default limits.
    pub fn new() -> Result<Self, ComponentError> {
        Self::with_config(ComponentConfig::default())
    }

    /// Loads the embedded component with `config`.
    pub fn with_config(config: ComponentConfig) -> Result<Self, ComponentError> {
        Self::from_bytes(COMPONENT, config)
    }

    /// Loads a component (which must implement the `porch-variants` world)
    /// with `config`. The embedded component ([`COMPONENT`]) is loaded from
    /// its precompiled code when that fits the engine `config` needs.
    pub fn from_bytes(bytes: &[u8], config: ComponentConfig) -> Result<Self, ComponentError> {
        let embedded = bytes.as_ptr() == COMPONENT.as_ptr() && bytes.len() == COMPONENT.len();
        Self::load(bytes, config, embedded, false)
    }

    /// Loads the embedded component from its precompiled code only, with
    /// `config`: an error when that code does not fit the engine `config`
    /// needs (limits other than the default ones, another machine).
    pub fn from_precompiled(config: ComponentConfig) -> Result<Self, ComponentError> {
        Self::load(COMPONENT, config, true, true)
    }

    fn load(
        bytes: &[u8],
        config: ComponentConfig,
        try_precompiled: bool,
        precompiled_only: bool,
    ) -> Result<Self, ComponentError> {
        let setup = |what: &str, e: &dyn std::fmt::Display| {
            ComponentError::Instantiate(format!("{what}: {e}"))
        };
        let started = Instant::now();
        let settings =
            || engine_config::compilation_config(config.fuel.is_some(), config.timeout.is_some());
        let mut loaded = None;
        if try_precompiled {
            match precompiled::load(config.fuel.is_some(), config.timeout.is_some()) {
                Ok((engine, component)) => {
                    loaded = Some((engine, component, CodeSource::Precompiled))
                }
                Err(e) if precompiled_only => {
                    return Err(ComponentError::Instantiate(e.to_string()))
                }
                Err(e) => {
                    let expected = config.fuel.is_some() == engine_config::PRECOMPILED_FUEL
                        && config.timeout.is_some()
                            == engine_config::PRECOMPILED_EPOCH_INTERRUPTION;
                    if expected {
                        tracing::warn!(error = %e, "compiling the component at start-up");
                    } else {
                        tracing::debug!(error = %e, "compiling the component for these limits");
                    }
                }
            }
        }
        let (engine, component, code) = match loaded {
            Some(loaded) => loaded,
            None => {
                let mut wasm_config = settings();
                crate::wasm_engine::use_code_cache(
                    &mut wasm_config,
                    &config.cache,
                    "the component is",
                );
                let engine =
                    Engine::new(&wasm_config).map_err(|e| setup("creating the engine", &e))?;
                let component = Component::new(&engine, bytes)
                    .map_err(|e| setup("compiling the component", &e))?;
                (engine, component, CodeSource::Compiled)
            }
        };
        let linker = Linker::<State>::new(&engine);
        let instance_pre = linker
            .instantiate_pre(&component)
            .map_err(|e| setup("linking the component", &e))?;
        let pre = PorchVariantsPre::new(instance_pre)
            .map_err(|e| setup("checking the component's exports", &e))?;
        let ticker = match config.timeout {
            Some(_) => Some(
                EpochTicker::start(&engine, EPOCH_TICK, "pv-component-epoch")
                    .map_err(|e| setup("starting the epoch ticker", &e))?,
            ),
            None => None,
        };
        let startup = Startup {
            load: started.elapsed(),
            component_size: bytes.len(),
            code,
            in_place: precompiled::runs_in_place(&component),
        };
        tracing::debug!(
            load_ms = startup.load.as_secs_f64() * 1e3,
            size = startup.component_size,
            code = ?startup.code,
            in_place = startup.in_place,
            "package-editing component loaded"
        );
        Ok(CoreComponent {
            engine,
            component,
            pre,
            config,
            startup,
            idle: Mutex::new(Vec::new()),
            fuel_used: AtomicU64::new(0),
            _ticker: ticker,
        })
    }

    /// The limits in force.
    pub fn config(&self) -> &ComponentConfig {
        &self.config
    }

    /// How start-up went.
    pub fn startup(&self) -> Startup {
        self.startup
    }

    /// The component's exports, from its type information.
    pub fn exports(&self) -> Vec<ExportInfo> {
        self.component
            .component_type()
            .exports(&self.engine)
            .map(|(name, item)| {
                let (params, returns) = match &item.ty {
                    ComponentItem::ComponentFunc(f) => (
                        f.params().map(|(p, _)| p.to_string()).collect(),
                        f.results().len() > 0,
                    ),
                    _ => (Vec::new(), false),
                };
                ExportInfo {
                    name: name.to_string(),
                    params,
                    returns,
                }
            })
            .collect()
    }

    /// The component's imports (none, by design).
    pub fn imports(&self) -> Vec<String> {
        self.component
            .component_type()
            .imports(&self.engine)
            .map(|(name, _)| name.to_string())
            .collect()
    }

    /// Runs `call` on an idle instance, or on a fresh one when none is
    /// idle; the instance is kept for a later call when `call` succeeded
    /// and the instance stayed below [`MAX_IDLE_MEMORY`] (or below
    /// [`MAX_IDLE_LARGE_MEMORY`], when no other kept instance is above
    /// [`MAX_IDLE_MEMORY`]).
    fn with_instance<R>(
        &self,
        call: impl FnOnce(&mut Instance<'_>) -> Result<R, ComponentError>,
    ) -> Result<R, ComponentError> {
        let idle = self.idle.lock().ok().and_then(|mut idle| idle.pop());
        let mut instance = match idle {
            Some(Idle { store, bindings }) => Instance {
                store,
                bindings,
                config: &self.config,
                budget: 0,
            },
            None => self.instantiate()?,
        };
        let result = call(&mut instance);
        if let Some(fuel) = instance.fuel_used() {
            self.fuel_used.fetch_add(fuel, Ordering::Relaxed);
        }
        let memory = instance.peak_memory();
        if result.is_ok() && memory <= MAX_IDLE_LARGE_MEMORY {
            if let Ok(mut idle) = self.idle.lock() {
                let large = |m: usize| m > MAX_IDLE_MEMORY;
                let room = !large(memory) || !idle.iter().any(|i| large(i.memory()));
                if idle.len() < MAX_IDLE && room {
                    idle.push(Idle {
                        store: instance.store,
                        bindings: instance.bindings,
                    });
                }
            }
        }
        result
    }

    /// Fuel used by all calls of this component so far, failed ones
    /// included (`None` without a fuel limit: nothing is metered).
    pub fn fuel_used(&self) -> Option<u64> {
        self.config.fuel?;
        Some(self.fuel_used.load(Ordering::Relaxed))
    }

    /// How many instances are kept for later calls.
    pub fn idle_instances(&self) -> usize {
        self.idle.lock().map_or(0, |idle| idle.len())
    }

    /// The linear memory of each instance kept for later calls, in bytes.
    pub fn idle_memory(&self) -> Vec<usize> {
        self.idle.lock().map_or_else(
            |_| Vec::new(),
            |idle| idle.iter().map(Idle::memory).collect(),
        )
    }

    /// A fresh instance in a fresh store with this component's limits
    /// (public for benchmarks and tests).
    pub fn instantiate(&self) -> Result<Instance<'_>, ComponentError> {
        let mut store = Store::new(
            &self.engine,
            State {
                max_memory: self.config.max_memory,
                denied: None,
                peak_memory: 0,
            },
        );
        store.limiter(|state| state);
        if self.config.timeout.is_some() {
            store.epoch_deadline_trap();
        }
        // Instantiation runs no guest code (no start function) but gets the
        // same limits as a call.
        let budget = arm(&self.config, &mut store, 0)?;
        let bindings = self
            .pre
            .instantiate(&mut store)
            .map_err(|e| classify(&self.config, budget, e, &store))?;
        Ok(Instance {
            store,
            bindings,
            config: &self.config,
            budget,
        })
    }

    /// `version`: name and version of the core.
    pub fn version(&self) -> Result<String, ComponentError> {
        self.with_instance(|i| i.version())
    }

    /// `validate-package-variant`: upstream's messages, in order.
    pub fn validate_package_variant(
        &self,
        package_variant: &str,
    ) -> Result<Result<Vec<String>, String>, ComponentError> {
        self.with_instance(|i| i.validate_package_variant(package_variant))
    }

    /// `plan-reconcile`: one reconcile of a PackageVariant, as a plan.
    pub fn plan_reconcile(
        &self,
        input: &types::PlanInput,
    ) -> Result<Result<types::ReconcilePlan, String>, ComponentError> {
        self.with_instance(|i| i.plan_reconcile(input))
    }

    /// `apply-mutations`: the three mutations of a PackageVariant on a
    /// package.
    pub fn apply_mutations(
        &self,
        input: &types::MutationInput,
    ) -> Result<Result<types::MutationOutcome, types::MutationError>, ComponentError> {
        self.with_instance(|i| i.apply_mutations(input))
    }

    /// `validate-package-variant-set`: upstream's messages, in order.
    pub fn validate_package_variant_set(
        &self,
        package_variant_set: &str,
    ) -> Result<Result<Vec<String>, String>, ComponentError> {
        self.with_instance(|i| i.validate_package_variant_set(package_variant_set))
    }

    /// `render-package-variant-set`: the children and the sync plan.
    pub fn render_package_variant_set(
        &self,
        input: &types::RenderInput,
    ) -> Result<Result<types::RenderOutcome, types::RenderError>, ComponentError> {
        self.with_instance(|i| i.render_package_variant_set(input))
    }

    /// `format-files`: YAML rewritten as kpt and Porch write it.
    pub fn format_files(
        &self,
        files: &[types::File],
    ) -> Result<Vec<types::FormattedFile>, ComponentError> {
        self.with_instance(|i| i.format_files(files))
    }

    /// `clone-package`: the content of a clone.
    pub fn clone_package(
        &self,
        input: &types::CloneInput,
    ) -> Result<Result<Vec<types::File>, String>, ComponentError> {
        self.with_instance(|i| i.clone_package(input))
    }

    /// `render-package`: one step of a package render.
    pub fn render_package(
        &self,
        input: &types::PackageRenderInput,
    ) -> Result<types::PackageRenderStep, ComponentError> {
        self.with_instance(|i| i.render_package(input))
    }

    /// A package render with the files staged in one instance a batch at a
    /// time, each batch dropped here once it is in (so that the package is
    /// not held twice): `answer` runs each function the render asks for,
    /// or stops the render with a message (`Ok(Err(..))`).
    pub fn render_files(
        &self,
        files: std::collections::BTreeMap<String, String>,
        options: &types::PackageRenderOptions,
        answer: &mut dyn FnMut(
            types::FunctionRequest,
            usize,
        ) -> Result<types::FunctionAnswer, String>,
    ) -> Result<Result<types::PackageRendered, String>, ComponentError> {
        self.with_instance(|i| {
            let staged = i.stage_all(files)?;
            let mut answers = Vec::new();
            loop {
                match i.render_staged(options, &answers, staged)? {
                    types::PackageRenderStep::Done(done) => return Ok(Ok(done)),
                    types::PackageRenderStep::RunFunction(request) => {
                        match answer(request, answers.len()) {
                            Ok(a) => answers.push(a),
                            Err(message) => {
                                // Nothing stays staged in an instance kept
                                // for later calls.
                                i.stage_files(&[], true, 0)?;
                                return Ok(Err(message));
                            }
                        }
                    }
                }
            }
        })
    }

    /// [`CoreComponent::render_files`] whose rendered files stay in the
    /// instance: `finish` gets the render's record (each file's path, size
    /// and hash) and a function that takes files from the instance by path,
    /// so that the caller holds at most the files it asks for at once.
    pub fn render_files_held<T>(
        &self,
        files: std::collections::BTreeMap<String, String>,
        options: &types::PackageRenderOptions,
        answer: &mut dyn FnMut(
            types::FunctionRequest,
            usize,
        ) -> Result<types::FunctionAnswer, String>,
        finish: &mut dyn FnMut(types::HeldRender, TakeHeld<'_>) -> T,
    ) -> Result<Result<T, String>, ComponentError> {
        self.with_instance(|i| {
            let staged = i.stage_all(files)?;
            let mut answers = Vec::new();
            let held = loop {
                match i.render_held(options, &answers, staged)? {
                    types::HeldRenderStep::Done(held) => break held,
                    types::HeldRenderStep::RunFunction(request) => {
                        match answer(request, answers.len()) {
                            Ok(a) => answers.push(a),
                            Err(message) => {
                                i.stage_files(&[], true, 0)?;
                                return Ok(Err(message));
                            }
                        }
                    }
                }
            };
            let out = finish(held, &mut |paths| i.take_held(&paths, staged));
            // Nothing stays held in an instance kept for later calls.
            i.stage_files(&[], true, 0)?;
            Ok(Ok(out))
        })
    }

    /// `reconcile-package-revision`: one step of a PackageRevision
    /// reconcile (JSON in and out).
    pub fn reconcile_package_revision(&self, input: &str) -> Result<String, ComponentError> {
        self.with_instance(|i| i.reconcile_package_revision(input))
    }

    /// A whole PackageRevision reconcile in one instance, which keeps its
    /// answers between steps (`begin-package-revision-reconcile`, then
    /// `answer-package-revision-call` per call): `next` gets each step
    /// (JSON) and answers a `call` step with the call's answer (JSON), or
    /// `None` to end there. A reconcile ended on a call stays in the
    /// instance until its next `begin`.
    pub fn reconcile_package_revision_held(
        &self,
        input: &str,
        next: &mut dyn FnMut(String) -> Option<String>,
    ) -> Result<(), ComponentError> {
        self.with_instance(|i| {
            let mut held = input.len();
            let mut step = i.begin_package_revision_reconcile(input, held)?;
            while let Some(answer) = next(step) {
                held += answer.len();
                step = i.answer_package_revision_call(answer, held)?;
            }
            Ok(())
        })
    }

    /// `upgrade-package`: the three-way merge of an upgrade.
    pub fn upgrade_package(
        &self,
        input: &types::UpgradeInput,
    ) -> Result<Result<types::UpgradeOutcome, String>, ComponentError> {
        self.with_instance(|i| i.upgrade_package(input))
    }
}

/// One instance of the component in its own store. An instance may serve
/// several calls, each with its own fuel and deadline (they share the
/// memory limit): [`CoreComponent`]'s methods keep small instances for
/// later calls. After a call that failed it must be dropped.
pub struct Instance<'a> {
    store: Store<State>,
    bindings: PorchVariants,
    config: &'a ComponentConfig,
    /// Fuel given to the current call.
    budget: u64,
}

impl Instance<'_> {
    /// Calls an export, mapping a runtime failure to [`ComponentError`].
    fn call<R>(
        &mut self,
        export: &'static str,
        input_bytes: usize,
        f: impl FnOnce(&PorchVariants, &mut Store<State>) -> wasmtime::Result<R>,
    ) -> Result<R, ComponentError> {
        self.budget = arm(self.config, &mut self.store, input_bytes)?;
        let started = Instant::now();
        let result = f(&self.bindings, &mut self.store);
        tracing::debug!(
            export,
            ms = started.elapsed().as_secs_f64() * 1e3,
            fuel_used = self.fuel_used(),
            peak_memory = self.peak_memory(),
            "component call"
        );
        result.map_err(|e| classify(self.config, self.budget, e, &self.store))
    }

    /// `version`.
    pub fn version(&mut self) -> Result<String, ComponentError> {
        self.call("version", 0, |b, s| b.call_version(s))
    }

    /// `validate-package-variant`.
    pub fn validate_package_variant(
        &mut self,
        package_variant: &str,
    ) -> Result<Result<Vec<String>, String>, ComponentError> {
        // `json` is a `String` in the generated signature.
        let package_variant = package_variant.to_owned();
        self.call("validate-package-variant", package_variant.len(), |b, s| {
            b.call_validate_package_variant(s, &package_variant)
        })
    }

    /// `plan-reconcile`.
    pub fn plan_reconcile(
        &mut self,
        input: &types::PlanInput,
    ) -> Result<Result<types::ReconcilePlan, String>, ComponentError> {
        self.call("plan-reconcile", input.input_bytes(), |b, s| {
            b.call_plan_reconcile(s, input)
        })
    }

    /// `apply-mutations`.
    pub fn apply_mutations(
        &mut self,
        input: &types::MutationInput,
    ) -> Result<Result<types::MutationOutcome, types::MutationError>, ComponentError> {
        self.call("apply-mutations", input.input_bytes(), |b, s| {
            b.call_apply_mutations(s, input)
        })
    }

    /// `validate-package-variant-set`.
    pub fn validate_package_variant_set(
        &mut self,
        package_variant_set: &str,
    ) -> Result<Result<Vec<String>, String>, ComponentError> {
        let package_variant_set = package_variant_set.to_owned();
        self.call(
            "validate-package-variant-set",
            package_variant_set.len(),
            |b, s| b.call_validate_package_variant_set(s, &package_variant_set),
        )
    }

    /// `render-package-variant-set`.
    pub fn render_package_variant_set(
        &mut self,
        input: &types::RenderInput,
    ) -> Result<Result<types::RenderOutcome, types::RenderError>, ComponentError> {
        self.call("render-package-variant-set", input.input_bytes(), |b, s| {
            b.call_render_package_variant_set(s, input)
        })
    }

    /// `format-files`.
    pub fn format_files(
        &mut self,
        files: &[types::File],
    ) -> Result<Vec<types::FormattedFile>, ComponentError> {
        self.call("format-files", files.input_bytes(), |b, s| {
            b.call_format_files(s, files)
        })
    }

    /// `clone-package`.
    pub fn clone_package(
        &mut self,
        input: &types::CloneInput,
    ) -> Result<Result<Vec<types::File>, String>, ComponentError> {
        self.call("clone-package", input.input_bytes(), |b, s| {
            b.call_clone_package(s, input)
        })
    }

    /// `render-package`.
    pub fn render_package(
        &mut self,
        input: &types::PackageRenderInput,
    ) -> Result<types::PackageRenderStep, ComponentError> {
        self.call("render-package", input.input_bytes(), |b, s| {
            b.call_render_package(s, input)
        })
    }

    /// `stage-files`; `staged_bytes` is what the instance holds with these
    /// (its memory limit grows with it).
    pub fn stage_files(
        &mut self,
        files: &[types::File],
        fresh: bool,
        staged_bytes: usize,
    ) -> Result<(), ComponentError> {
        self.call("stage-files", staged_bytes, |b, s| {
            b.call_stage_files(s, files, fresh)
        })
    }

    /// Stages `files` in batches of [`STAGE_BATCH_BYTES`], each dropped
    /// once the instance holds it (whatever was staged before is dropped
    /// first); the bytes staged.
    pub fn stage_all(
        &mut self,
        files: std::collections::BTreeMap<String, String>,
    ) -> Result<usize, ComponentError> {
        let mut staged = 0usize;
        let mut batch: Vec<types::File> = Vec::new();
        let mut batch_bytes = 0usize;
        let mut fresh = true;
        let mut files = files.into_iter().peekable();
        while let Some((path, content)) = files.next() {
            batch_bytes += path.len() + content.len();
            batch.push(types::File { path, content });
            if batch_bytes >= STAGE_BATCH_BYTES || files.peek().is_none() {
                staged += batch_bytes;
                self.stage_files(&batch, fresh, staged)?;
                fresh = false;
                batch = Vec::new();
                batch_bytes = 0;
            }
        }
        if fresh {
            self.stage_files(&[], true, 0)?;
        }
        Ok(staged)
    }

    /// `render-held`; `staged_bytes` as for [`Instance::stage_files`].
    pub fn render_held(
        &mut self,
        options: &types::PackageRenderOptions,
        answers: &[types::FunctionAnswer],
        staged_bytes: usize,
    ) -> Result<types::HeldRenderStep, ComponentError> {
        let answer_bytes: usize = answers.iter().map(answer_len).sum();
        self.call("render-held", staged_bytes + answer_bytes, |b, s| {
            b.call_render_held(s, options, answers)
        })
    }

    /// `take-held`; `held_bytes` is what the instance holds.
    pub fn take_held(
        &mut self,
        paths: &[String],
        held_bytes: usize,
    ) -> Result<Vec<types::File>, ComponentError> {
        self.call("take-held", held_bytes, |b, s| b.call_take_held(s, paths))
    }

    /// `render-staged`; `staged_bytes` as for [`Instance::stage_files`].
    pub fn render_staged(
        &mut self,
        options: &types::PackageRenderOptions,
        answers: &[types::FunctionAnswer],
        staged_bytes: usize,
    ) -> Result<types::PackageRenderStep, ComponentError> {
        let answer_bytes: usize = answers.iter().map(answer_len).sum();
        self.call("render-staged", staged_bytes + answer_bytes, |b, s| {
            b.call_render_staged(s, options, answers)
        })
    }

    /// `reconcile-package-revision`.
    pub fn reconcile_package_revision(&mut self, input: &str) -> Result<String, ComponentError> {
        let input = input.to_owned();
        self.call("reconcile-package-revision", input.len(), |b, s| {
            b.call_reconcile_package_revision(s, &input)
        })
    }

    /// `begin-package-revision-reconcile`; `held_bytes` is what the
    /// instance holds with it (its memory limit grows with it).
    pub fn begin_package_revision_reconcile(
        &mut self,
        input: &str,
        held_bytes: usize,
    ) -> Result<String, ComponentError> {
        let input = input.to_owned();
        self.call("begin-package-revision-reconcile", held_bytes, |b, s| {
            b.call_begin_package_revision_reconcile(s, &input)
        })
    }

    /// `answer-package-revision-call`; `held_bytes` as for
    /// [`Instance::begin_package_revision_reconcile`].
    pub fn answer_package_revision_call(
        &mut self,
        answer: String,
        held_bytes: usize,
    ) -> Result<String, ComponentError> {
        self.call("answer-package-revision-call", held_bytes, |b, s| {
            b.call_answer_package_revision_call(s, &answer)
        })
    }

    /// `upgrade-package`.
    pub fn upgrade_package(
        &mut self,
        input: &types::UpgradeInput,
    ) -> Result<Result<types::UpgradeOutcome, String>, ComponentError> {
        self.call("upgrade-package", input.input_bytes(), |b, s| {
            b.call_upgrade_package(s, input)
        })
    }

    /// Fuel the last call used (`None` without a fuel limit).
    pub fn fuel_used(&self) -> Option<u64> {
        self.config.fuel?;
        let left = self.store.get_fuel().ok()?;
        Some(self.budget.saturating_sub(left))
    }

    /// The largest linear memory the guest has grown to, in bytes.
    pub fn peak_memory(&self) -> usize {
        self.store.data().peak_memory
    }
}

/// Sets the fuel and deadline of a call with `input_bytes` of input;
/// returns the fuel budget (0 without fuel).
fn arm(
    config: &ComponentConfig,
    store: &mut Store<State>,
    input_bytes: usize,
) -> Result<u64, ComponentError> {
    store.data_mut().max_memory = config.memory_limit(input_bytes);
    let mut budget = 0;
    if let Some(fuel) = config.fuel {
        budget = fuel.budget(input_bytes);
        store
            .set_fuel(budget)
            .map_err(|e| ComponentError::Instantiate(format!("setting fuel: {e}")))?;
    }
    if let Some(timeout) = config.timeout {
        let ticks = timeout.as_nanos().div_ceil(EPOCH_TICK.as_nanos()).max(1);
        store.set_epoch_deadline(u64::try_from(ticks).unwrap_or(u64::MAX));
    }
    Ok(budget)
}

/// Bytes of input of a call (the length of all its strings): what its
/// fuel budget grows with.
pub trait InputBytes {
    /// The length of all the strings of the input.
    fn input_bytes(&self) -> usize;
}

fn strings_len(strings: &[String]) -> usize {
    strings.iter().map(String::len).sum()
}

impl InputBytes for [types::File] {
    fn input_bytes(&self) -> usize {
        self.iter().map(|f| f.path.len() + f.content.len()).sum()
    }
}

impl InputBytes for types::PlanInput {
    fn input_bytes(&self) -> usize {
        self.package_variant.len() + strings_len(&self.package_revisions) + self.now.len()
    }
}

impl InputBytes for types::MutationInput {
    fn input_bytes(&self) -> usize {
        self.package_variant.len()
            + self.namespace.len()
            + self.name.len()
            + self.files.input_bytes()
            + strings_len(&self.candidates)
    }
}

impl InputBytes for types::RenderInput {
    fn input_bytes(&self) -> usize {
        self.package_variant_set.len()
            + strings_len(&self.upstream_revisions)
            + strings_len(&self.repositories)
            + strings_len(&self.target_objects)
            + strings_len(&self.existing)
            + self
                .target_kinds
                .iter()
                .map(|k| k.api_version.len() + k.kind.len())
                .sum::<usize>()
    }
}

impl InputBytes for types::UpstreamSource {
    fn input_bytes(&self) -> usize {
        self.repo.len() + self.directory.len() + self.ref_.len() + self.commit.len()
    }
}

impl InputBytes for types::CloneInput {
    fn input_bytes(&self) -> usize {
        self.upstream.input_bytes() + self.package.len() + self.source.input_bytes()
    }
}

impl InputBytes for types::UpgradeInput {
    fn input_bytes(&self) -> usize {
        self.old_upstream.input_bytes()
            + self.new_upstream.input_bytes()
            + self.local.input_bytes()
            + self.source.input_bytes()
    }
}

fn answer_len(answer: &types::FunctionAnswer) -> usize {
    match answer {
        types::FunctionAnswer::Ran(o) => o.stdout.len() + o.stderr.len(),
        types::FunctionAnswer::NotFound => 0,
        types::FunctionAnswer::Failed(m) => m.len(),
    }
}

impl InputBytes for types::PackageRenderInput {
    fn input_bytes(&self) -> usize {
        let answers: usize = self.answers.iter().map(answer_len).sum();
        self.files.input_bytes()
            + self.options.image_prefix.len()
            + self.options.root_path.len()
            + answers
    }
}

/// Maps what stopped the guest to a [`ComponentError`].
fn classify(
    config: &ComponentConfig,
    budget: u64,
    err: wasmtime::Error,
    store: &Store<State>,
) -> ComponentError {
    if let Some(requested) = store.data().denied {
        return ComponentError::MemoryLimit {
            requested,
            limit: store.data().max_memory,
        };
    }
    let classified = match err.downcast_ref::<Trap>() {
        Some(Trap::OutOfFuel) => ComponentError::OutOfFuel { fuel: budget },
        Some(Trap::Interrupt) => ComponentError::Timeout {
            after: config.timeout.unwrap_or_default(),
        },
        Some(trap) => ComponentError::Trap(trap.to_string()),
        None => ComponentError::Trap(err.to_string()),
    };
    tracing::warn!(error = %format!("{err:?}"), reason = classified.reason(), "component call failed");
    classified
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fuel_grows_with_the_input_and_saturates() {
        let fuel = Fuel::default();
        assert_eq!(fuel.budget(0), 1_000_000_000);
        assert_eq!(fuel.budget(1 << 20), 1_000_000_000 + 10_000 * (1 << 20));
        let huge = Fuel {
            base: u64::MAX - 1,
            per_input_byte: u64::MAX,
        };
        assert_eq!(huge.budget(usize::MAX), u64::MAX);
    }

    #[test]
    fn input_bytes_count_every_string() {
        let input = types::MutationInput {
            package_variant: "{}".into(),
            namespace: "ns".into(),
            name: "n".into(),
            files: vec![types::File {
                path: "Kptfile".into(),
                content: "abc".into(),
            }],
            candidates: vec!["[]".into()],
        };
        assert_eq!(input.input_bytes(), 2 + 2 + 1 + 7 + 3 + 2);
    }

    #[test]
    fn every_error_has_its_own_reason() {
        let errors = [
            ComponentError::OutOfFuel { fuel: 1 },
            ComponentError::MemoryLimit {
                requested: 2,
                limit: 1,
            },
            ComponentError::Timeout {
                after: Duration::from_millis(5),
            },
            ComponentError::Trap("unreachable".into()),
            ComponentError::Instantiate("no".into()),
        ];
        let mut reasons: Vec<_> = errors.iter().map(ComponentError::reason).collect();
        reasons.sort();
        reasons.dedup();
        assert_eq!(reasons.len(), errors.len());
        assert!(errors.iter().all(|e| e.reason().starts_with("Component")));
    }
}
