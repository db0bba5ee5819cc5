//! Sizes the fixed arena of the wasm build and links the module the way
//! kpt's runtimes need it: memory exported as `mem`, and initial memory
//! equal to maximum memory so it can never grow.

use std::env;
use std::fs;
use std::path::PathBuf;

/// Arena size in MiB unless `PV_KPT_WASM_ARENA_MIB` says otherwise.
const DEFAULT_ARENA_MIB: u64 = 256;
/// Shadow stack of the module.
const STACK_MIB: u64 = 4;
/// Room for the stack, static data and rounding, on top of the arena.
const OVERHEAD_MIB: u64 = 16;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=PV_KPT_WASM_ARENA_MIB");
    let mib = env::var("PV_KPT_WASM_ARENA_MIB")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|&v| (1..=3072).contains(&v))
        .unwrap_or(DEFAULT_ARENA_MIB);
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    fs::write(
        out.join("arena.rs"),
        format!("/// Bytes of the fixed arena.\npub const ARENA_BYTES: usize = {mib} << 20;\n"),
    )
    .expect("OUT_DIR is writable");
    if env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("wasm32") {
        let total = (mib + STACK_MIB + OVERHEAD_MIB) << 20;
        println!("cargo:rustc-link-arg-cdylib=--export-memory=mem");
        println!(
            "cargo:rustc-link-arg-cdylib=-zstack-size={}",
            STACK_MIB << 20
        );
        println!("cargo:rustc-link-arg-cdylib=--initial-memory={total}");
        println!("cargo:rustc-link-arg-cdylib=--max-memory={total}");
    }
}
