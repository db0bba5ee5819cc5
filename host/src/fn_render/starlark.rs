//! The KRM functions catalog's `starlark` function, embedded: a Go js/wasm
//! module built from `functions/kpt-wasm` with its `starlark` feature
//! (see `host/build.rs`), run by [`GoWasmRuntime`] with its [`Limits`]
//! whenever a pipeline names the catalog's `starlark` image (any tag) and
//! no function directory provides that image.
//!
//! The module's output maps onto what the catalog's container gives kpt:
//! on success the ResourceList and what `print()` wrote (stderr); on
//! failure exit code 1, the ResourceList with its one error result, and
//! the SDK's `failed to evaluate function: error: function failure` on
//! stderr after the printed lines.

use std::sync::OnceLock;

use pv_core::render::image::catalog_name;
use pv_core::render::{RunOutput, RuntimeError};

use crate::component::CodeCache;
use crate::runtime::{GoWasmModule, GoWasmRuntime, Limits, WasmFnError};

/// The module (`$OUT_DIR/starlark.wasm`).
pub static MODULE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/starlark.wasm"));

/// The catalog name the embedded module serves.
pub const CATALOG_NAME: &str = "starlark";

/// What the catalog's Go SDK prints when a function reports an error.
pub const FAILURE_STDERR: &str = "failed to evaluate function: error: function failure";

/// Whether `image` (resolved) names the catalog's starlark function, under
/// a catalog registry or `image_prefix`.
pub fn is_starlark(image: &str, image_prefix: &str) -> bool {
    catalog_name(image, image_prefix) == Some(CATALOG_NAME)
}

/// The embedded module and its runtime, compiled on first use.
#[derive(Default)]
pub struct EmbeddedStarlark {
    loaded: OnceLock<Result<(GoWasmRuntime, GoWasmModule), WasmFnError>>,
}

impl std::fmt::Debug for EmbeddedStarlark {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedStarlark")
            .field("loaded", &self.loaded.get().map(|r| r.is_ok()))
            .finish()
    }
}

impl EmbeddedStarlark {
    fn load(&self) -> Result<&(GoWasmRuntime, GoWasmModule), RuntimeError> {
        self.loaded
            .get_or_init(|| {
                // Compiling the 6 MB module takes seconds: wasmtime's
                // on-disk cache (as for the component) keeps it for the
                // next process.
                let runtime = GoWasmRuntime::with_cache(Limits::default(), CodeCache::UserDefault)?;
                let module = runtime.compile("embedded starlark", MODULE)?;
                Ok((runtime, module))
            })
            .as_ref()
            .map_err(|e| RuntimeError::Failed(e.to_string()))
    }

    /// Runs the function on `input` (a ResourceList).
    pub fn run(&self, input: &str) -> Result<RunOutput, RuntimeError> {
        let (runtime, module) = self.load()?;
        match runtime.run(module, input) {
            Ok(run) => Ok(RunOutput {
                stdout: run.output,
                stderr: run.stderr.trim_end_matches('\n').to_string(),
                exit_code: 0,
            }),
            // A failed run returns its output ResourceList as JSON.
            Err(WasmFnError::FunctionFailed { output, stderr, .. })
                if output.trim_start().starts_with('{') =>
            {
                Ok(RunOutput {
                    stdout: output,
                    stderr: format!("{stderr}{FAILURE_STDERR}"),
                    exit_code: 1,
                })
            }
            Err(e) => Err(RuntimeError::Failed(e.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_images_of_any_tag_are_starlark() {
        let prefix = pv_core::render::image::DEFAULT_PREFIX;
        assert!(is_starlark(
            "ghcr.io/kptdev/krm-functions-catalog/starlark:v0.5.0",
            prefix
        ));
        assert!(is_starlark("gcr.io/kpt-fn/starlark:unstable", prefix));
        assert!(!is_starlark("example.com/me/starlark:v1", prefix));
        assert!(!is_starlark(
            "ghcr.io/kptdev/krm-functions-catalog/set-labels:v0.2",
            prefix
        ));
    }

    #[test]
    fn the_embedded_module_runs_and_fails_with_results() {
        let embedded = EmbeddedStarlark::default();
        let ok = embedded
            .run("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: a\nfunctionConfig:\n  apiVersion: fn.kpt.dev/v1alpha1\n  kind: StarlarkRun\n  metadata:\n    name: p\n  source: |\n    print('hi')\n    ctx.resource_list['items'][0]['metadata']['namespace'] = 'x'\n")
            .expect("runs");
        assert_eq!(ok.exit_code, 0);
        assert_eq!(ok.stderr, "hi");
        assert!(ok.stdout.contains("namespace: x"), "{}", ok.stdout);
        let failed = embedded
            .run("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\nfunctionConfig:\n  apiVersion: fn.kpt.dev/v1alpha1\n  kind: StarlarkRun\n  metadata:\n    name: p\n  source: |\n    print('before')\n    fail('kind: ResourceList is not allowed')\n")
            .expect("runs");
        assert_eq!(failed.exit_code, 1);
        assert_eq!(failed.stderr, format!("before\n{FAILURE_STDERR}"));
        let doc = pv_core::yaml::parse_document(&failed.stdout).expect("output parses");
        let value = pv_core::yaml::to_json(doc.root()).expect("converts");
        assert_eq!(
            value["results"][0]["message"],
            "fail: kind: ResourceList is not allowed"
        );
        assert_eq!(value["results"][0]["severity"], "error");
    }
}
