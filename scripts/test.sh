#!/usr/bin/env bash
# Runs every test of the project: formatting, lints, the test suites (unit,
# golden, conformance, property tests), with every benchmark run once as a test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== kpt-ABI wasm modules (the golden tests run them under node)"
scripts/build-kpt-wasm.sh
echo "== cargo test (libraries, binaries, tests, benchmarks run once, examples)"
cargo test --workspace --all-targets --locked
echo "== doc tests"
cargo test --workspace --doc --locked
echo "== fuzz targets, a bounded run of each (cargo fuzz, nightly)"
scripts/fuzz.sh 10
echo "== playground: unit tests and the end-to-end test in Chromium"
scripts/playground-test.sh --no-cargo
