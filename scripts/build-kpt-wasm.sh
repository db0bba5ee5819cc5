#!/usr/bin/env bash
# Builds the kpt-ABI wasm modules of the kpt functions into target/kpt-wasm/:
#   apply-package-variant.wasm, render-package-variant-set.wasm, and
#   starlark.wasm (the catalog's starlark function, 512 MiB arena)
# (wasm32-unknown-unknown, Go js/wasm ABI, fixed arena; see functions/README.md).
#
# Both modules build in one target directory (target/guest, profile `wasm`,
# beside the guest component's wasm32-wasip2 build), so their dependencies are
# compiled once. Unlike the component they use no SIMD: not every runtime
# kpt loads modules with enables it.
# Environment: PV_KPT_WASM_ARENA_MIB sets the arena size (default 256),
# PV_STARLARK_WASM_ARENA_MIB that of starlark.wasm (default 512).
set -euo pipefail
cd "$(dirname "$0")/.."
target_dir="${PV_WASM_TARGET_DIR:-target/guest}"
out_dir="target/kpt-wasm"
mkdir -p "$out_dir"
locked=()
if [ "${CI:-}" = "true" ]; then locked=(--locked); fi
for fn in apply-package-variant render-package-variant-set starlark; do
    arena="${PV_KPT_WASM_ARENA_MIB:-256}"
    if [ "$fn" = starlark ]; then arena="${PV_STARLARK_WASM_ARENA_MIB:-512}"; fi
    # Flags and wrappers of an outer build are for the host, not for wasm
    # (.cargo/config.toml holds the wasm target's own flags).
    env -u RUSTFLAGS -u CARGO_ENCODED_RUSTFLAGS -u RUSTC_WORKSPACE_WRAPPER \
        -u CARGO_BUILD_TARGET -u CARGO_TARGET_DIR PV_KPT_WASM_ARENA_MIB="$arena" \
        cargo build "${locked[@]}" --quiet -p porch-variants-kpt-wasm \
        --target wasm32-unknown-unknown --profile wasm \
        --features "$fn" --target-dir "$target_dir"
    cp "$target_dir/wasm32-unknown-unknown/wasm/porch_variants_kpt_wasm.wasm" "$out_dir/$fn.wasm"
done
ls -l "$out_dir"/*.wasm | awk '{print $5, $9}'
