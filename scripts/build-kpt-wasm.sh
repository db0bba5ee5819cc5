#!/usr/bin/env bash
# Builds the kpt-ABI wasm modules of the kpt functions into target/kpt-wasm/:
#   apply-package-variant.wasm, render-package-variant-set.wasm
# (wasm32-unknown-unknown, Go js/wasm ABI, fixed arena; see functions/README.md).
#
# Both modules build in one target directory (target/guest, profile `wasm`,
# beside the guest component's wasm32-wasip2 build), so their dependencies are
# compiled once. Unlike the component they use no SIMD: not every runtime
# kpt loads modules with enables it.
# Environment: PV_KPT_WASM_ARENA_MIB sets the arena size (default 256).
set -euo pipefail
cd "$(dirname "$0")/.."
target_dir="${PV_WASM_TARGET_DIR:-target/guest}"
out_dir="target/kpt-wasm"
mkdir -p "$out_dir"
locked=()
if [ "${CI:-}" = "true" ]; then locked=(--locked); fi
for fn in apply-package-variant render-package-variant-set; do
    # Flags and wrappers of an outer build are for the host, not for wasm.
    env -u RUSTFLAGS -u CARGO_ENCODED_RUSTFLAGS -u RUSTC_WORKSPACE_WRAPPER \
        -u CARGO_BUILD_TARGET -u CARGO_TARGET_DIR \
        cargo build "${locked[@]}" --quiet -p porch-variants-kpt-wasm \
        --target wasm32-unknown-unknown --profile wasm \
        --features "$fn" --target-dir "$target_dir"
    cp "$target_dir/wasm32-unknown-unknown/wasm/porch_variants_kpt_wasm.wasm" "$out_dir/$fn.wasm"
done
ls -l "$out_dir"/*.wasm | awk '{print $5, $9}'
