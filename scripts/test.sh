#!/usr/bin/env bash
# Runs every test of the project: formatting, lints, the test suites (unit,
# golden, conformance, property tests), with every benchmark run once as a test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --go --containers
# Free disk at each stage, so a machine running short says so in the log.
disk() { df -h . | awk 'NR == 2 { print "   (disk: " $4 " free)" }'; }
echo "== cargo fmt --check"
cargo fmt --all -- --check
disk
echo "== cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
disk
echo "== kpt-ABI wasm modules (the golden tests run them under node)"
scripts/build-kpt-wasm.sh
# The golden tests use these modules instead of rebuilding them.
export PV_KPT_WASM_DIR="$PWD/target/kpt-wasm"
disk
echo "== cargo test (libraries, binaries, tests, benchmarks run once, examples)"
cargo test --workspace --all-targets --locked
disk
echo "== the starlark function (a feature of its own: the interpreter's serde_json features stay out of the workspace build)"
cargo clippy -p porch-variants-kpt-wasm --features starlark --all-targets --locked -- -D warnings
cargo test -p porch-variants-kpt-wasm --features starlark --locked
disk
echo "== doc tests"
cargo test --workspace --doc --locked
disk
echo "== fuzz targets, a bounded run of each (cargo fuzz, nightly)"
scripts/fuzz.sh 10
disk
echo "== playground: unit tests and the end-to-end test in Chromium"
scripts/playground-test.sh --no-cargo
disk
