#!/usr/bin/env bash
# Compares builds of the yaml_profile example, interleaved so that a change
# of the machine's speed during the run hits every build alike.
#
#   scripts/yaml-ab.sh MODE ROUNDS BIN... [-- FILE]
#
# Each round runs every BIN once (`BIN MODE 3 FILE`, three iterations); the
# best and the 10th-percentile time per iteration of each BIN are printed.
# Build a version with
#   cargo build --release -p porch-variants-core --example yaml_profile
#   cp target/release/examples/yaml_profile /tmp/yaml_profile-NAME
# and FILE with `cargo run --release -p porch-variants-core --example gen_pkg
# /tmp/pkg.yaml` (the default FILE).
set -euo pipefail
mode="${1:?usage: yaml-ab.sh MODE ROUNDS BIN... [-- FILE]}"
rounds="${2:?usage: yaml-ab.sh MODE ROUNDS BIN... [-- FILE]}"
shift 2
bins=()
file=/tmp/pkg.yaml
while [ $# -gt 0 ]; do
  if [ "$1" = "--" ]; then
    file="$2"
    break
  fi
  bins+=("$1")
  shift
done
for _ in $(seq "$rounds"); do
  for bin in "${bins[@]}"; do
    # yaml_profile prints "MODE: 12.345ms per iteration, N bytes".
    echo "$bin $("$bin" "$mode" 3 "$file" | awk '{print $2}' | sed 's/ms$//')"
  done
done | sort -k1,1 -k2n | awk -v mode="$mode" '
  { times[$1] = times[$1] " " $2; count[$1]++ }
  END {
    for (bin in times) {
      split(times[bin], t, " ")
      printf "%s %s: best %.2f ms, p10 %.2f ms\n", bin, mode, t[1], t[int((count[bin] + 9) / 10)]
    }
  }' | sort
