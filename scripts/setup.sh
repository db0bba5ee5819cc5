#!/usr/bin/env bash
# Installs what a fresh machine needs to build porch-variants: the wasm targets
# of the pinned toolchain. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
rustup target add wasm32-wasip2 wasm32-unknown-unknown >/dev/null
