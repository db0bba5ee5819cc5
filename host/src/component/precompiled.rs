//! The component as machine code, compiled by `build.rs` for the machine
//! that built this binary (wasmtime's `Engine::precompile_component`, under
//! [`super::engine_config`]'s settings for the default limits), so that
//! start-up deserialises it instead of compiling: no code cache needed, and
//! no machine compiles it at run time unless it differs from the one that
//! built it.

// wasmtime's `Component::deserialize` is `unsafe` because it trusts its
// input to be an artifact wasmtime itself produced: machine code is not
// validated again. This module is the only `unsafe` in the crate.
#![allow(unsafe_code)]

use wasmtime::component::Component;
use wasmtime::Engine;

/// The precompiled component (empty when the build made none: a
/// cross-compiled build, or `PORCH_VARIANTS_PRECOMPILE=0`).
pub const PRECOMPILED: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/porch-variants.cwasm"));

/// Why the precompiled component could not be used.
#[derive(Debug, thiserror::Error)]
pub enum PrecompiledError {
    /// The build embedded none.
    #[error("this build embeds no precompiled component (built for another machine, or with PORCH_VARIANTS_PRECOMPILE=0)")]
    Missing,
    /// wasmtime refused it for this engine: another wasmtime version, other
    /// compilation settings (limits other than the default ones), or a
    /// processor that lacks a feature the building machine had.
    #[error("the precompiled component does not fit this engine: {0}")]
    Refused(String),
}

/// The precompiled component, loaded into `engine`.
pub fn load(engine: &Engine) -> Result<Component, PrecompiledError> {
    if PRECOMPILED.is_empty() {
        return Err(PrecompiledError::Missing);
    }
    // SAFETY: `PRECOMPILED` is part of this binary, written by its build
    // script with wasmtime's `Engine::precompile_component` (the same
    // wasmtime version, pinned in Cargo.lock) from the component embedded
    // beside it; nothing outside the build can change it. wasmtime checks
    // the artifact's header, version and settings against `engine` and
    // returns an error, not undefined behaviour, when they differ.
    unsafe { Component::deserialize(engine, PRECOMPILED) }
        .map_err(|e| PrecompiledError::Refused(format!("{e:#}")))
}
