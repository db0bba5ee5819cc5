#!/usr/bin/env bash
# Runs every test of the project: formatting, lints, the test suites (unit,
# golden, conformance, property tests) and a short benchmark smoke run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== cargo test"
cargo test --workspace --locked
echo "== benchmarks compile and run once"
cargo bench --workspace --locked -- --test
