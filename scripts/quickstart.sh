#!/usr/bin/env bash
# Builds everything and runs the main job on the examples.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo build --release --workspace
echo "== porch-variants fmt --check examples/"
target/release/porch-variants fmt --check examples/
