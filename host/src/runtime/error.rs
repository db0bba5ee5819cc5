//! Why a KRM function module produced no ResourceList.

use std::path::PathBuf;
use std::time::Duration;

/// A KRM function module could not be found, loaded or run, or it ran and
/// failed. Every variant names the module (the image reference or the file
/// it was loaded from).
///
/// A failed run leaves nothing behind: every run has its own instance, so
/// the next run of the same module starts afresh.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WasmFnError {
    /// No module for the image in the function directory.
    #[error("wasm function {image} not found; looked for {}", display_paths(.searched))]
    NotFound {
        /// The image reference asked for.
        image: String,
        /// Every file or OCI layout looked at, in order.
        searched: Vec<PathBuf>,
    },
    /// The image reference cannot be mapped to a file name.
    #[error("wasm function {image}: invalid image reference: {reason}")]
    InvalidReference {
        /// The image reference asked for.
        image: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A file could not be read.
    #[error("wasm function {module}: cannot read {}: {reason}", .path.display())]
    Read {
        /// The module.
        module: String,
        /// The file.
        path: PathBuf,
        /// The I/O error.
        reason: String,
    },
    /// An OCI image layout holds no usable wasm module for the image.
    #[error("wasm function {module}: OCI image layout {}: {reason}", .layout.display())]
    InvalidImage {
        /// The module.
        module: String,
        /// The layout directory.
        layout: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The bytes are not a WebAssembly module wasmtime can compile.
    #[error("wasm function {module} could not be compiled: {reason}")]
    Compile {
        /// The module.
        module: String,
        /// Wasmtime's message.
        reason: String,
    },
    /// The module is not a Go `GOOS=js GOARCH=wasm` program: an import the
    /// host does not provide, or a missing export (`mem`, `run`, `resume`,
    /// `getsp`).
    #[error("wasm function {module} does not implement the Go js/wasm ABI: {reason}")]
    NotGoJs {
        /// The module.
        module: String,
        /// What is missing or wrong.
        reason: String,
    },
    /// The module could not be instantiated (for example its initial
    /// memory is above the limit).
    #[error("wasm function {module} could not be instantiated: {reason}")]
    Instantiate {
        /// The module.
        module: String,
        /// Wasmtime's message.
        reason: String,
    },
    /// The run used up its fuel (about one unit per instruction executed).
    #[error("wasm function {module} ran out of fuel ({fuel} units) and was stopped")]
    OutOfFuel {
        /// The module.
        module: String,
        /// The budget of one run.
        fuel: u64,
    },
    /// The run passed its wall-clock deadline.
    #[error("wasm function {module} ran longer than {}ms and was stopped", .after.as_millis())]
    Timeout {
        /// The module.
        module: String,
        /// The deadline of one run.
        after: Duration,
    },
    /// The module asked for more linear memory than a run may use.
    #[error(
        "wasm function {module} asked for {requested} bytes of linear memory, more than the limit of {limit} bytes, and was stopped"
    )]
    MemoryLimit {
        /// The module.
        module: String,
        /// Bytes the module tried to grow its memory to.
        requested: u64,
        /// The limit of one run.
        limit: u64,
    },
    /// The module made the host allocate more for JavaScript values
    /// (strings, arrays, objects) than a run may.
    #[error(
        "wasm function {module} allocated more than {limit} bytes of JavaScript values on the host and was stopped"
    )]
    HostMemoryLimit {
        /// The module.
        module: String,
        /// The limit of one run.
        limit: u64,
    },
    /// The module produced a string or wrote to stdout/stderr more than
    /// the output limit.
    #[error(
        "wasm function {module} produced {size} bytes of {what}, more than the limit of {limit} bytes, and was stopped"
    )]
    OutputTooLarge {
        /// The module.
        module: String,
        /// `a string`, `stdout` or `stderr`.
        what: String,
        /// Bytes produced (at least).
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// The Go program exited (`os.Exit`, a panic, a fatal error such as a
    /// deadlock) instead of answering.
    #[error("wasm function {module} exited with code {code}{}", stderr_suffix(.stderr))]
    Exited {
        /// The module.
        module: String,
        /// The exit code passed to `runtime.wasmExit`.
        code: i32,
        /// What the module wrote to stderr.
        stderr: String,
    },
    /// The module trapped (a WebAssembly fault).
    #[error("wasm function {module} trapped: {message}{}", stderr_suffix(.stderr))]
    Trap {
        /// The module.
        module: String,
        /// Wasmtime's description of the trap.
        message: String,
        /// What the module wrote to stderr.
        stderr: String,
    },
    /// A host call threw a JavaScript exception that nothing caught (in
    /// node the run would have crashed the same way).
    #[error("wasm function {module}: uncaught JavaScript exception: {message}{}", stderr_suffix(.stderr))]
    JsException {
        /// The module.
        module: String,
        /// The exception, as `String(exception)`.
        message: String,
        /// What the module wrote to stderr.
        stderr: String,
    },
    /// `run` returned, and no timer was pending, without the program
    /// having set `globalThis.processResourceList` to a function.
    #[error(
        "wasm function {module} did not register processResourceList (it returned from run without setting the global){}",
        stderr_suffix(.stderr)
    )]
    NotRegistered {
        /// The module.
        module: String,
        /// What the module wrote to stderr.
        stderr: String,
    },
    /// `processResourceList` returned something other than a string.
    #[error("wasm function {module}: processResourceList returned {got}, not a string")]
    BadResult {
        /// The module.
        module: String,
        /// The JavaScript type of the result.
        got: String,
    },
    /// `processResourceList` returned text that is not a ResourceList
    /// (it lacks `kind: ResourceList`), which is how a module reports
    /// failure; the message is what `processResourceListErrors` returned,
    /// or the returned text when that is empty or not registered.
    #[error("wasm function {module} failed: {message}")]
    FunctionFailed {
        /// The module.
        module: String,
        /// The module's error message.
        message: String,
        /// What `processResourceList` returned.
        output: String,
        /// What the module wrote to stderr.
        stderr: String,
    },
    /// The runtime itself could not be set up.
    #[error("the Go js/wasm runtime could not be set up: {0}")]
    Setup(String),
}

impl WasmFnError {
    /// A `reason` for a Kubernetes condition (CamelCase, stable).
    pub fn reason(&self) -> &'static str {
        match self {
            WasmFnError::NotFound { .. } => "WasmFunctionNotFound",
            WasmFnError::InvalidReference { .. } => "WasmFunctionInvalidReference",
            WasmFnError::Read { .. } | WasmFnError::InvalidImage { .. } => "WasmFunctionUnreadable",
            WasmFnError::Compile { .. }
            | WasmFnError::NotGoJs { .. }
            | WasmFnError::Instantiate { .. } => "WasmFunctionInvalid",
            WasmFnError::OutOfFuel { .. } => "WasmFunctionOutOfFuel",
            WasmFnError::Timeout { .. } => "WasmFunctionTimeout",
            WasmFnError::MemoryLimit { .. } | WasmFnError::HostMemoryLimit { .. } => {
                "WasmFunctionMemoryLimit"
            }
            WasmFnError::OutputTooLarge { .. } => "WasmFunctionOutputTooLarge",
            WasmFnError::Exited { .. }
            | WasmFnError::Trap { .. }
            | WasmFnError::JsException { .. }
            | WasmFnError::NotRegistered { .. }
            | WasmFnError::BadResult { .. } => "WasmFunctionCrashed",
            WasmFnError::FunctionFailed { .. } => "WasmFunctionFailed",
            WasmFnError::Setup(_) => "WasmRuntimeUnavailable",
        }
    }

    /// Whether this error stopped the module at a resource limit (fuel,
    /// deadline, memory, output).
    pub fn is_limit(&self) -> bool {
        matches!(
            self,
            WasmFnError::OutOfFuel { .. }
                | WasmFnError::Timeout { .. }
                | WasmFnError::MemoryLimit { .. }
                | WasmFnError::HostMemoryLimit { .. }
                | WasmFnError::OutputTooLarge { .. }
        )
    }
}

fn display_paths(paths: &[PathBuf]) -> String {
    if paths.is_empty() {
        return "nothing (no function directory)".to_string();
    }
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// `; stderr: …` with the last 2,000 bytes of stderr, or nothing.
fn stderr_suffix(stderr: &str) -> String {
    let trimmed = stderr.trim_end();
    if trimmed.is_empty() {
        return String::new();
    }
    const KEEP: usize = 2000;
    let mut start = trimmed.len().saturating_sub(KEEP);
    while !trimmed.is_char_boundary(start) {
        start += 1;
    }
    let ellipsis = if start > 0 { "…" } else { "" };
    format!("; stderr: {ellipsis}{}", &trimmed[start..])
}
