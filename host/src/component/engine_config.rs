//! The compilation settings of the component's engine, shared with
//! `build.rs`, which precompiles the embedded component under them: the
//! engine that loads the precompiled artifact must compile the same way,
//! or wasmtime refuses the artifact.

/// The settings of an engine for the component: fuel metering and epoch
/// interruption as asked, everything else wasmtime's defaults (for the
/// machine it runs on).
pub fn compilation_config(fuel: bool, epoch_interruption: bool) -> wasmtime::Config {
    let mut config = wasmtime::Config::new();
    config
        .consume_fuel(fuel)
        .epoch_interruption(epoch_interruption)
        .generate_address_map(false)
        .native_unwind_info(false);
    config
}

/// The settings `build.rs` precompiles the embedded component under: those
/// of the default limits (fuel on, no wall-clock deadline).
pub const PRECOMPILED_FUEL: bool = true;
/// See [`PRECOMPILED_FUEL`].
pub const PRECOMPILED_EPOCH_INTERRUPTION: bool = false;
