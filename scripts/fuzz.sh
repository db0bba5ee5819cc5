#!/usr/bin/env bash
# Runs every cargo-fuzz target of fuzz/ for a bounded time each.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# SECONDS defaults to 10 (the bounded run of the test suite); the long runs
# behind docs/performance.md used `scripts/fuzz.sh 3600`, or
# `FUZZ_RUNS=10000000 scripts/fuzz.sh 0` for a fixed number of executions.
# Each target starts from its seed corpus (fuzz/seeds/<target>, readable
# inputs) and keeps what it learns in fuzz/corpus/<target>; a crash leaves
# its input in fuzz/artifacts/<target> and fails the run.
#
# FUZZ_SANITIZER picks cargo fuzz's sanitizer (default address; `none` runs
# two to three times more executions per second, and the code is safe Rust:
# panics, timeouts and memory limits are still caught).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-10}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(yaml_roundtrip resource_list package_variant pvs_render merge)
fi
if ! rustup toolchain list | grep -q '^nightly'; then
  echo "fuzz: the nightly toolchain is missing (rustup toolchain install nightly)" >&2
  exit 1
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "== installing cargo-fuzz"
  cargo install cargo-fuzz --locked --quiet
fi
args=(-max_len=262144 -timeout=20 -rss_limit_mb=4096 -print_final_stats=1)
if [ "${seconds}" != 0 ]; then args+=(-max_total_time="${seconds}"); fi
if [ -n "${FUZZ_RUNS:-}" ]; then args+=(-runs="${FUZZ_RUNS}"); fi
cd fuzz
sanitizer="${FUZZ_SANITIZER:-address}"
cargo +nightly fuzz build --release --sanitizer "${sanitizer}"
log="$(mktemp)"
trap 'rm -f "${log}"' EXIT
for t in "${targets[@]}"; do
  mkdir -p "corpus/${t}"
  echo "== fuzz ${t} (${seconds}s)"
  rc=0
  cargo +nightly fuzz run --release --sanitizer "${sanitizer}" "${t}" "corpus/${t}" "seeds/${t}" -- "${args[@]}" >"${log}" 2>&1 || rc=$?
  grep -E "^(#[0-9]+ +DONE|Done [0-9]+ runs|stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb))" "${log}" || true
  if [ "${rc}" != 0 ]; then
    tail -n 60 "${log}" >&2
    echo "fuzz ${t}: failed (exit ${rc}); crash inputs, if any, in fuzz/artifacts/${t}" >&2
    exit 1
  fi
done
