#!/usr/bin/env bash
# Tests of the browser playground: the unit tests of its logic (node's test
# runner), then the end-to-end test in Debian's Chromium (playwright-core),
# which saves screenshots under target/playground-e2e/.
#
#   scripts/playground-test.sh [--no-cargo] [--release]
#
# Arguments go to scripts/playground.sh, which builds the playground first
# (--no-cargo: export the component from the porch-variants binary already
# built). scripts/setup.sh --playground installs Chromium and the npm
# packages first.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh --playground
scripts/playground.sh --build-only "$@"
target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$(pwd)/$target" ;; esac
out="$target/playground-e2e"
cd playground
echo "== playground unit tests"
node --test tests/unit.test.mjs
echo "== playground end-to-end test (Chromium)"
node tests/e2e.mjs --out "$out"
