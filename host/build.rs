//! Builds the guest component that `porch-variants` embeds.
//!
//! 1. `cargo build -p porch-variants-component --target wasm32-unknown-unknown
//!    --profile wasm` into `<target>/guest` (its own target directory, so it
//!    does not wait for the lock of the build that runs this script, and is
//!    shared by every profile of the host: one guest build);
//! 2. drop the core module's custom sections other than the component type
//!    information (names, producers, debug info);
//! 3. wrap it into a component with no imports (`wit_component::ComponentEncoder`)
//!    and drop the component's own custom sections;
//! 4. write `$OUT_DIR/porch-variants.wasm`, which `src/component` embeds with
//!    `include_bytes!`;
//! 5. compile it for this machine with wasmtime (`precompile_component`,
//!    under `src/component/engine_config.rs`'s settings for the default
//!    limits) into `$OUT_DIR/porch-variants.cwasm`, which
//!    `src/component/precompiled.rs` embeds, so that start-up loads machine
//!    code instead of compiling. Skipped (an empty file) when the build is
//!    for another target or `PORCH_VARIANTS_PRECOMPILE=0`.
//!
//! `PORCH_VARIANTS_COMPONENT=<file.wasm>` skips steps 1–3 and embeds that
//! component instead (e.g. one built elsewhere).
//!
//! It also builds the catalog's starlark function as a Go js/wasm module
//! (`cargo build -p porch-variants-kpt-wasm --features starlark`, same
//! target directory and profile, 512 MiB arena) into
//! `$OUT_DIR/starlark.wasm`, which `src/fn_render/starlark.rs` embeds. It is
//! a separate module because the interpreter turns on serde_json's
//! `arbitrary_precision`, which must not reach the component's build.
//! `PORCH_VARIANTS_STARLARK_WASM=<file.wasm>` embeds that module instead.
//! `PORCH_VARIANTS_WASM_OPT=<wasm-opt>` (binaryen, e.g. from npm's
//! `binaryen` package) optimises the core module (`-O3`) before step 2;
//! optional, and off unless set.

use std::env;
use std::error::Error;
use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "src/component/engine_config.rs"]
#[allow(dead_code)]
mod engine_config;

type Result<T, E = Box<dyn Error>> = std::result::Result<T, E>;

const GUEST_PACKAGE: &str = "porch-variants-component";
const GUEST_TARGET: &str = "wasm32-unknown-unknown";
const GUEST_PROFILE: &str = "wasm";
const GUEST_ARTIFACT: &str = "pv_component";
const OUTPUT: &str = "porch-variants.wasm";
const PRECOMPILED_OUTPUT: &str = "porch-variants.cwasm";
/// The starlark function's package, artifact, output and arena size.
const STARLARK_PACKAGE: &str = "porch-variants-kpt-wasm";
const STARLARK_ARTIFACT: &str = "porch_variants_kpt_wasm";
const STARLARK_OUTPUT: &str = "starlark.wasm";
const STARLARK_ARENA_MIB: &str = "512";
/// The guest's code generation flags (`\x1f`-separated, as cargo encodes
/// them): WebAssembly SIMD, which wasmtime, node and every current browser
/// run.
const GUEST_RUSTFLAGS: &str = "-Ctarget-feature=+simd128";

fn main() {
    if let Err(err) = run() {
        // A build script reports failure through its exit status; the
        // message is what cargo shows.
        eprintln!("error: building the porch-variants component: {err}");
        std::process::exit(1);
    }
}

fn run() -> Result<()> {
    let out_dir = PathBuf::from(env::var("OUT_DIR")?);
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR")?);
    let workspace = manifest_dir
        .parent()
        .ok_or("the host crate has no parent directory")?
        .to_path_buf();
    // OUT_DIR is <target>[/<triple>]/<profile>/build/<pkg>-<hash>/out.
    let target_dir = out_dir
        .ancestors()
        .nth(4)
        .ok_or("unexpected OUT_DIR layout")?
        .join("guest");
    embed_component(&workspace, &target_dir, &out_dir)?;
    embed_starlark(&workspace, &target_dir, &out_dir)
}

/// Builds (or copies) the starlark module into `$OUT_DIR/starlark.wasm`.
fn embed_starlark(workspace: &Path, target_dir: &Path, out_dir: &Path) -> Result<()> {
    let output = out_dir.join(STARLARK_OUTPUT);
    if use_prebuilt("PORCH_VARIANTS_STARLARK_WASM", &output)? {
        return Ok(());
    }
    check_target_installed()?;
    // The wasm target's flags come from .cargo/config.toml.
    cargo_build_wasm(
        workspace,
        target_dir,
        &["--package", STARLARK_PACKAGE, "--features", "starlark"],
        &[("PV_KPT_WASM_ARENA_MIB", STARLARK_ARENA_MIB)],
        None,
    )?;
    let artifact_dir = target_dir.join(GUEST_TARGET).join(GUEST_PROFILE);
    let module_path = artifact_dir.join(format!("{STARLARK_ARTIFACT}.wasm"));
    let module = std::fs::read(&module_path)
        .map_err(|e| format!("reading {}: {e}", module_path.display()))?;
    // Names and producers are of no use at run time (a fifth of the size).
    std::fs::write(&output, strip_module(&module)?)
        .map_err(|e| format!("writing {}: {e}", output.display()))?;
    for path in [
        workspace.join(".cargo/config.toml"),
        workspace.join("functions/kpt-wasm"),
        workspace.join("functions/src"),
        workspace.join("functions/Cargo.toml"),
    ] {
        println!("cargo::rerun-if-changed={}", path.display());
    }
    rerun_on_sources(
        workspace,
        &artifact_dir.join(format!("{STARLARK_ARTIFACT}.d")),
    )
}

/// Builds (or copies) the guest component into `$OUT_DIR/porch-variants.wasm`.
fn embed_component(workspace: &Path, target_dir: &Path, out_dir: &Path) -> Result<()> {
    let output = out_dir.join(OUTPUT);
    if use_prebuilt("PORCH_VARIANTS_COMPONENT", &output)? {
        println!("cargo::rustc-env=PV_COMPONENT_MODULE_SIZE=0");
        let component =
            std::fs::read(&output).map_err(|e| format!("reading {}: {e}", output.display()))?;
        return precompile(&component, out_dir);
    }

    check_target_installed()?;
    build_guest(workspace, target_dir)?;

    let artifact_dir = target_dir.join(GUEST_TARGET).join(GUEST_PROFILE);
    let module_path = artifact_dir.join(format!("{GUEST_ARTIFACT}.wasm"));
    let module = std::fs::read(&module_path)
        .map_err(|e| format!("reading {}: {e}", module_path.display()))?;
    rerun_on_sources(workspace, &artifact_dir.join(format!("{GUEST_ARTIFACT}.d")))?;

    println!("cargo::rerun-if-env-changed=PORCH_VARIANTS_WASM_OPT");
    let module = match env::var_os("PORCH_VARIANTS_WASM_OPT") {
        Some(wasm_opt) => optimize(Path::new(&wasm_opt), &module_path, out_dir)?,
        None => module,
    };
    let stripped = strip_module(&module)?;
    let component = wit_component::ComponentEncoder::default()
        .validate(true)
        .module(&stripped)?
        .encode()?;
    let component = strip_component(&component)?;
    std::fs::write(&output, &component)
        .map_err(|e| format!("writing {}: {e}", output.display()))?;
    println!("cargo::rustc-env=PV_COMPONENT_MODULE_SIZE={}", module.len());
    precompile(&component, out_dir)
}

/// Compiles `component` for this machine into `$OUT_DIR/porch-variants.cwasm`
/// (empty when skipped).
fn precompile(component: &[u8], out_dir: &Path) -> Result<()> {
    let output = out_dir.join(PRECOMPILED_OUTPUT);
    println!("cargo::rerun-if-env-changed=PORCH_VARIANTS_PRECOMPILE");
    println!("cargo::rerun-if-changed=src/component/engine_config.rs");
    let skip = env::var("PORCH_VARIANTS_PRECOMPILE").is_ok_and(|v| v == "0");
    // The machine code is for the machine that runs this script.
    let cross = env::var("TARGET")? != env::var("HOST")?;
    let artifact = if skip || cross {
        Vec::new()
    } else {
        let config = engine_config::compilation_config(
            engine_config::PRECOMPILED_FUEL,
            engine_config::PRECOMPILED_EPOCH_INTERRUPTION,
        );
        let engine =
            wasmtime::Engine::new(&config).map_err(|e| format!("creating the engine: {e:#}"))?;
        engine
            .precompile_component(component)
            .map_err(|e| format!("precompiling the component: {e:#}"))?
    };
    std::fs::write(&output, &artifact).map_err(|e| format!("writing {}: {e}", output.display()))?;
    Ok(())
}

/// Runs binaryen's `wasm-opt -O3` on the core module.
fn optimize(wasm_opt: &Path, module: &Path, out_dir: &Path) -> Result<Vec<u8>> {
    let output = out_dir.join("optimized-core.wasm");
    let status = Command::new(wasm_opt)
        .arg("-O3")
        .args([
            "--enable-bulk-memory",
            "--enable-sign-ext",
            "--enable-nontrapping-float-to-int",
            "--enable-mutable-globals",
            "--enable-multivalue",
            "--enable-reference-types",
            "--enable-simd",
        ])
        .arg(module)
        .arg("-o")
        .arg(&output)
        .status()
        .map_err(|e| format!("running {}: {e}", wasm_opt.display()))?;
    if !status.success() {
        return Err(format!("{} failed", wasm_opt.display()).into());
    }
    Ok(std::fs::read(&output)?)
}

/// Fails with the remedy when the toolchain lacks the wasm target.
fn check_target_installed() -> Result<()> {
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(&rustc)
        .args(["--print", "target-libdir", "--target", GUEST_TARGET])
        .output()
        .map_err(|e| format!("running {rustc}: {e}"))?;
    let libdir = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() || libdir.is_empty() || !Path::new(&libdir).is_dir() {
        return Err(format!(
            "the Rust target {GUEST_TARGET} is not installed; run scripts/setup.sh \
             (rustup target add {GUEST_TARGET})"
        )
        .into());
    }
    Ok(())
}

/// Runs the nested cargo for the guest.
fn build_guest(workspace: &Path, target_dir: &Path) -> Result<()> {
    cargo_build_wasm(
        workspace,
        target_dir,
        &["--package", GUEST_PACKAGE],
        &[],
        Some(GUEST_RUSTFLAGS),
    )
}

/// When the environment variable `var` names a prebuilt module, copies it
/// to `output` and returns true.
fn use_prebuilt(var: &str, output: &Path) -> Result<bool> {
    println!("cargo::rerun-if-env-changed={var}");
    let Some(prebuilt) = env::var_os(var) else {
        return Ok(false);
    };
    let prebuilt = PathBuf::from(prebuilt);
    println!("cargo::rerun-if-changed={}", prebuilt.display());
    std::fs::copy(&prebuilt, output).map_err(|e| format!("copying {}: {e}", prebuilt.display()))?;
    Ok(true)
}

/// `cargo build <args> --target wasm32-unknown-unknown --profile wasm` in
/// the guest target directory. The outer build's flags and wrappers are
/// for the host: flags such as `-C target-cpu=native` do not apply to wasm,
/// and clippy's wrapper would give the guest a second set of fingerprints.
/// `rustflags` replaces the wasm target's flags; without it they come from
/// `.cargo/config.toml`.
fn cargo_build_wasm(
    workspace: &Path,
    target_dir: &Path,
    args: &[&str],
    envs: &[(&str, &str)],
    rustflags: Option<&str>,
) -> Result<()> {
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(&cargo);
    cmd.current_dir(workspace)
        .arg("build")
        .args(args)
        .args(["--target", GUEST_TARGET, "--profile", GUEST_PROFILE])
        .arg("--target-dir")
        .arg(target_dir)
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("RUSTFLAGS")
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET")
        .env_remove("CARGO_BUILD_RUSTFLAGS");
    if let Some(flags) = rustflags {
        cmd.env("CARGO_ENCODED_RUSTFLAGS", flags);
    }
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let status = cmd.status().map_err(|e| format!("running {cargo}: {e}"))?;
    if !status.success() {
        return Err(format!(
            "`cargo build {} --target {GUEST_TARGET}` failed",
            args.join(" ")
        )
        .into());
    }
    Ok(())
}

/// Reruns this script when a source of the guest (every file of its
/// dep-info: the core, the component crate, their dependencies), the WIT
/// or the workspace manifest changes.
fn rerun_on_sources(workspace: &Path, dep_info: &Path) -> Result<()> {
    for path in [
        workspace.join("wit"),
        workspace.join("Cargo.toml"),
        workspace.join("Cargo.lock"),
        workspace.join("core-wasm/Cargo.toml"),
        workspace.join("core-wasm/src"),
        workspace.join("core-wasm/component"),
    ] {
        println!("cargo::rerun-if-changed={}", path.display());
    }
    let text = std::fs::read_to_string(dep_info)
        .map_err(|e| format!("reading {}: {e}", dep_info.display()))?;
    // `<output>: <dep> <dep> ...`, spaces in paths escaped as `\ `.
    let deps = text.split_once(": ").map_or("", |(_, deps)| deps);
    let mut current = String::new();
    let mut chars = deps.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&' ') => {
                current.push(' ');
                chars.next();
            }
            ' ' | '\n' => {
                if !current.is_empty() {
                    println!("cargo::rerun-if-changed={current}");
                    current.clear();
                }
            }
            _ => current.push(c),
        }
    }
    if !current.is_empty() {
        println!("cargo::rerun-if-changed={current}");
    }
    Ok(())
}

/// The core module without custom sections, except the `component-type`
/// ones the encoder reads.
fn strip_module(module: &[u8]) -> Result<Vec<u8>> {
    let mut out = wasm_encoder::Module::new();
    for payload in wasmparser::Parser::new(0).parse_all(module) {
        let payload = payload?;
        if let wasmparser::Payload::CustomSection(c) = &payload {
            if !c.name().starts_with("component-type") {
                continue;
            }
        }
        if let Some((id, range)) = payload.as_section() {
            out.section(&wasm_encoder::RawSection {
                id,
                data: slice(module, range)?,
            });
        }
    }
    Ok(out.finish())
}

/// The component without its top-level custom sections (producers,
/// names). Nested modules and components are copied as they are.
fn strip_component(component: &[u8]) -> Result<Vec<u8>> {
    let mut out = wasm_encoder::Component::new();
    let mut depth = 0usize;
    for payload in wasmparser::Parser::new(0).parse_all(component) {
        let payload = payload?;
        match &payload {
            wasmparser::Payload::Version { .. } => {
                depth += 1;
                continue;
            }
            wasmparser::Payload::End(_) => {
                depth -= 1;
                continue;
            }
            _ => {}
        }
        if depth != 1 {
            // Inside a nested module or component: copied with its parent's
            // section below.
            continue;
        }
        if let wasmparser::Payload::CustomSection(_) = payload {
            continue;
        }
        if let Some((id, range)) = payload.as_section() {
            out.section(&wasm_encoder::RawSection {
                id,
                data: slice(component, range)?,
            });
        }
    }
    Ok(out.finish())
}

/// `bytes[range]` for wasmparser's 64-bit ranges.
fn slice(bytes: &[u8], range: std::ops::Range<u64>) -> Result<&[u8]> {
    let start = usize::try_from(range.start)?;
    let end = usize::try_from(range.end)?;
    bytes
        .get(start..end)
        .ok_or_else(|| "section out of bounds".into())
}
