//! The kpt functions as WebAssembly modules for kpt's `--allow-alpha-wasm`
//! runtimes, which load Go `GOOS=js GOARCH=wasm` programs (not WASI).
//!
//! A build serves one function, chosen by feature
//! (`apply-package-variant`, `render-package-variant-set` or `starlark`,
//! the catalog's starlark function, see [`starlark`]), for
//! `--target wasm32-unknown-unknown`; `scripts/build-kpt-wasm.sh` builds
//! all three into `target/kpt-wasm/`. On other targets this crate only holds the
//! safe request handling, so it can be tested natively.
//!
//! * [`gojs`] (wasm only) — the Go js/wasm ABI by hand: exports `mem`,
//!   `run`, `resume`, `getsp`; registers `processResourceList` and
//!   `processResourceListErrors` as JS globals; and the fixed-arena
//!   allocator. It is the project's only unsafe code.
//! * [`Handler`] — what those two globals do, in safe code.

use std::sync::Mutex;

use porch_variants_functions::{failure, Function, Output};

#[cfg(target_arch = "wasm32")]
pub mod gojs;
#[cfg(feature = "starlark")]
pub mod starlark;
#[cfg(feature = "starlark")]
mod starlib;

include!(concat!(env!("OUT_DIR"), "/arena.rs"));

/// Peak arena use measured on the generated 1,000-resource package (1.5 MB
/// in, `benches/native_vs_wasm.rs`) was about 20 times the input size;
/// requests above 32 times the free arena are refused, so an oversized
/// package gets an error result instead of a trap. With the default
/// 256 MiB arena that is inputs up to about 8 MB.
pub const PEAK_PER_INPUT_BYTE: usize = 32;

/// Callback id of `processResourceList` (the id given to
/// `go._makeFuncWrapper`).
pub const PROCESS_RESOURCE_LIST: u32 = 1;
/// Callback id of `processResourceListErrors`.
pub const PROCESS_RESOURCE_LIST_ERRORS: u32 = 2;
/// Callback id of `processResourceListStderr`: what the last
/// `processResourceList` printed (starlark's `print()`), empty for the
/// other functions. kpt never calls it; porch-variants' runtime appends it
/// to the run's stderr.
pub const PROCESS_RESOURCE_LIST_STDERR: u32 = 3;

/// The function a build serves.
pub const FUNCTION: Option<Function> = if cfg!(feature = "apply-package-variant") {
    Some(Function::ApplyPackageVariant)
} else if cfg!(feature = "render-package-variant-set") {
    Some(Function::RenderPackageVariantSet)
} else {
    None
};

/// The function a build serves, starlark included.
pub const SERVED: Option<Served> = match FUNCTION {
    Some(f) => Some(Served::Krm(f)),
    #[cfg(feature = "starlark")]
    None => Some(Served::Starlark),
    #[cfg(not(feature = "starlark"))]
    None => None,
};

#[cfg(all(
    target_arch = "wasm32",
    not(any(
        feature = "apply-package-variant",
        feature = "render-package-variant-set",
        feature = "starlark"
    ))
))]
compile_error!(
    "choose the function: --features apply-package-variant, render-package-variant-set or starlark"
);

#[cfg(all(
    feature = "apply-package-variant",
    feature = "render-package-variant-set"
))]
compile_error!("a wasm module serves one function: enable only one of the features");

#[cfg(all(
    target_arch = "wasm32",
    feature = "starlark",
    any(
        feature = "apply-package-variant",
        feature = "render-package-variant-set"
    )
))]
compile_error!("a wasm module serves one function: enable only one of the features");

/// A function a module can serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Served {
    /// One of this project's functions.
    Krm(Function),
    /// The catalog's starlark function.
    #[cfg(feature = "starlark")]
    Starlark,
}

impl Served {
    /// The function's name.
    pub fn name(self) -> &'static str {
        match self {
            Served::Krm(f) => f.name(),
            #[cfg(feature = "starlark")]
            Served::Starlark => starlark::NAME,
        }
    }

    /// Runs the function: its output and what it printed.
    fn run(self, input: &str) -> (Output, String) {
        match self {
            Served::Krm(f) => (f.run(input), String::new()),
            #[cfg(feature = "starlark")]
            Served::Starlark => {
                let out = starlark::process(input);
                (out.output, out.stderr)
            }
        }
    }
}

/// The JS-visible behaviour of a module, free of any ABI detail.
#[derive(Debug)]
pub struct Handler {
    served: Served,
    /// The error summary of the last failed `processResourceList`.
    last_errors: Mutex<Option<String>>,
    /// What the last `processResourceList` printed.
    last_stderr: Mutex<String>,
}

impl Handler {
    /// A handler for `function`.
    pub const fn new(function: Function) -> Self {
        Self::serving(Served::Krm(function))
    }

    /// A handler for `served`.
    pub const fn serving(served: Served) -> Self {
        Handler {
            served,
            last_errors: Mutex::new(None),
            last_stderr: Mutex::new(String::new()),
        }
    }

    /// Runs the function, refusing inputs the arena cannot hold.
    fn run(&self, input: &str, arena_free: usize) -> (Output, String) {
        let needed = input.len().saturating_mul(PEAK_PER_INPUT_BYTE);
        if needed > arena_free {
            let out = failure(format!(
                "{}: the input ({} bytes) is too large for the wasm module's fixed memory: it needs about {} MiB and {} MiB are free; run the native binary, or rebuild with PV_KPT_WASM_ARENA_MIB set higher",
                self.served.name(),
                input.len(),
                needed >> 20,
                arena_free >> 20
            ));
            return (out, String::new());
        }
        self.served.run(input)
    }

    /// `processResourceList(rl)`: the output ResourceList on success. On
    /// failure a message that is not a ResourceList (kpt then asks
    /// `processResourceListErrors`); it never contains `kind: ResourceList`.
    /// For starlark that message is the output ResourceList, results
    /// included, as one line of JSON in which `: ` is escaped (`\u003a `).
    pub fn process_resource_list(&self, input: &str, arena_free: usize) -> String {
        let (output, stderr) = self.run(input, arena_free);
        if let Ok(mut last) = self.last_stderr.lock() {
            *last = stderr;
        }
        if output.failed() {
            let summary = output.error_summary();
            let count = output.error_count();
            if let Ok(mut last) = self.last_errors.lock() {
                *last = Some(summary);
            }
            #[cfg(feature = "starlark")]
            if self.served == Served::Starlark {
                if let Some(json) = failure_json(&output.resource_list) {
                    return json;
                }
            }
            format!(
                "unable to process resource list: {} reported {count} error result(s)",
                self.served.name()
            )
        } else {
            if let Ok(mut last) = self.last_errors.lock() {
                *last = None;
            }
            output.resource_list
        }
    }

    /// `processResourceListErrors(rl)`: the error results of the last failed
    /// run (or of running `rl` again), one per line; never empty.
    pub fn process_resource_list_errors(&self, input: &str, arena_free: usize) -> String {
        let cached = self.last_errors.lock().ok().and_then(|mut l| l.take());
        let summary = cached.unwrap_or_else(|| self.run(input, arena_free).0.error_summary());
        if summary.trim().is_empty() {
            format!(
                "[error] {}: processResourceListErrors was called but the function reported no error",
                self.served.name()
            )
        } else {
            summary
        }
    }

    /// Dispatches a callback by id.
    pub fn call(&self, id: u32, input: &str, arena_free: usize) -> String {
        match id {
            PROCESS_RESOURCE_LIST => self.process_resource_list(input, arena_free),
            PROCESS_RESOURCE_LIST_ERRORS => self.process_resource_list_errors(input, arena_free),
            PROCESS_RESOURCE_LIST_STDERR => self
                .last_stderr
                .lock()
                .map(|mut s| std::mem::take(&mut *s))
                .unwrap_or_default(),
            other => format!(
                "[error] {}: unknown callback id {other}",
                self.served.name()
            ),
        }
    }
}

/// A failed run's output ResourceList as compact JSON with every `: `
/// escaped, so that it never contains the `kind: ResourceList` text that
/// marks success. Compact JSON has no spaces outside strings, so only
/// string contents change, and `\u003a` reads back as `:`.
#[cfg(feature = "starlark")]
fn failure_json(resource_list: &str) -> Option<String> {
    let doc = pv_core::yaml::parse_document(resource_list).ok()?;
    let value = pv_core::yaml::to_json(doc.root()).ok()?;
    let text = serde_json::to_string(&value).ok()?;
    Some(text.replace(": ", "\\u003a "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_never_resource_lists_and_errors_never_empty() {
        let h = Handler::new(Function::ApplyPackageVariant);
        let out = h.call(
            PROCESS_RESOURCE_LIST,
            "kind: ResourceList\nitems: []\n",
            ARENA_BYTES,
        );
        assert!(!out.contains("kind: ResourceList"), "{out}");
        let errors = h.call(PROCESS_RESOURCE_LIST_ERRORS, "", ARENA_BYTES);
        assert!(
            errors.starts_with("[error]") && errors.contains("functionConfig"),
            "{errors}"
        );
        // Without a cached failure the errors are computed again.
        assert!(!h
            .call(PROCESS_RESOURCE_LIST_ERRORS, "not: [yaml", ARENA_BYTES)
            .trim()
            .is_empty());
    }

    #[test]
    fn oversized_inputs_get_an_error_result() {
        let h = Handler::new(Function::RenderPackageVariantSet);
        let input = "kind: ResourceList\nitems: []\n";
        assert!(!h
            .call(PROCESS_RESOURCE_LIST, input, 10)
            .contains("kind: ResourceList"));
        let errors = h.call(PROCESS_RESOURCE_LIST_ERRORS, input, 10);
        assert!(errors.contains("too large for the wasm module"), "{errors}");
    }

    #[test]
    fn successes_are_resource_lists() {
        let h = Handler::new(Function::ApplyPackageVariant);
        let input = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- apiVersion: kpt.dev/v1\n  kind: Kptfile\n  metadata:\n    name: app\n    annotations:\n      config.kubernetes.io/path: Kptfile\n  info:\n    description: app\nfunctionConfig:\n  apiVersion: config.porch.kpt.dev/v1alpha1\n  kind: PackageVariant\n  metadata:\n    name: app-east\n  spec:\n    upstream:\n      repo: blueprints\n      package: app\n    downstream:\n      repo: deployments\n      package: app-east\n";
        let out = h.call(PROCESS_RESOURCE_LIST, input, ARENA_BYTES);
        assert!(out.contains("kind: ResourceList"), "{out}");
        assert!(out.contains("kind: Kptfile"), "{out}");
        assert!(!out.contains("severity: error"), "{out}");
    }

    #[cfg(feature = "starlark")]
    #[test]
    fn starlark_failures_are_json_resource_lists_and_prints_are_kept() {
        let h = Handler::serving(Served::Starlark);
        let input = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\nfunctionConfig:\n  apiVersion: fn.kpt.dev/v1alpha1\n  kind: StarlarkRun\n  source: |\n    print('one')\n    fail('kind: ResourceList')\n";
        let out = h.call(PROCESS_RESOURCE_LIST, input, ARENA_BYTES);
        assert!(!out.contains("kind: ResourceList"), "{out}");
        let value: serde_json::Value = serde_json::from_str(&out).expect("JSON");
        assert_eq!(value["results"][0]["message"], "fail: kind: ResourceList");
        assert_eq!(
            h.call(PROCESS_RESOURCE_LIST_STDERR, "", ARENA_BYTES),
            "one\n"
        );
        assert_eq!(h.call(PROCESS_RESOURCE_LIST_STDERR, "", ARENA_BYTES), "");
        let errors = h.call(PROCESS_RESOURCE_LIST_ERRORS, input, ARENA_BYTES);
        assert_eq!(errors.trim_end(), "[error]: fail: kind: ResourceList");
    }

    #[test]
    fn an_unknown_callback_is_an_error() {
        let h = Handler::new(Function::RenderPackageVariantSet);
        assert!(h.call(7, "", ARENA_BYTES).contains("unknown callback"));
    }
}
