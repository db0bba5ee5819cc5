#!/usr/bin/env bash
# Times local mode as a user runs it, as whole processes with the CLI's
# default flags: for each fleet size, `porch-variants local --init DIR` (the
# first run) then `porch-variants local DIR` (a run with nothing to do), in
# the default mode (v1alpha2) and with `--porch-api v1alpha1`, the modes
# taking turns, ROUNDS rounds. Prints every run, then per size and mode the
# median seconds, peak memory and store calls per variant, and the
# v1alpha2/v1alpha1 ratio of the medians.
#
#   scripts/fleet-bench.sh [SIZES] [ROUNDS]     # default: 100,1000 and 3
#
# FLEET_BENCH_MODES picks the modes (default `v1alpha2 v1alpha1`); mode
# `rollout` is the default mode on a fleet whose set has a rollout strategy
# (`scripts/fleet.sh --rollout`), compared with v1alpha2.
#
# Fleets are made by scripts/fleet.sh under $FLEET_BENCH_DIR (default
# target/fleet-bench), each run on a new one; they are all removed at the
# end, not between runs (a file system such as ext4 allocates inodes more
# slowly for a while after many were freed, which would fall on the next
# run). The binary is target/release/porch-variants (`cargo build
# --release` first), or $PORCH_VARIANTS.
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=${1:-100,1000}
rounds=${2:-3}
bin=${PORCH_VARIANTS:-target/release/porch-variants}
work=${FLEET_BENCH_DIR:-target/fleet-bench}
[ -x "$bin" ] || { echo "fleet-bench: $bin is missing (cargo build --release)" >&2; exit 2; }
rm -rf "$work"
mkdir -p "$work"
trap 'rm -rf "$work"/fleet-*' EXIT
results="$work/results.tsv"
: >"$results"

# run LABEL ARGS...: one whole process, its wall seconds, peak RSS and the
# store calls of its JSON summary appended to the results.
run() {
    local label=$1
    shift
    local out="$work/out.json" start end
    start=$(date +%s.%N)
    /usr/bin/time -f '%M' -o "$work/rss" "$bin" "$@" --output json >"$out"
    end=$(date +%s.%N)
    python3 - "$label" "$start" "$end" "$work/rss" "$out" >>"$results" <<'EOF'
import json, sys
label, start, end, rss, out = sys.argv[1:]
s = json.load(open(out))
n = max(s["package_variants"], 1)
c = s["store_calls"]
print(f"{label}\t{float(end) - float(start):.3f}\t{int(open(rss).read().split()[-1]) // 1024}\t"
      f"{c['reads'] / n:.2f}\t{c['writes'] / n:.2f}\t{s['package_variants']}\t{s['converged']}")
EOF
    tail -n 1 "$results"
}

IFS=, read -r -a sizes <<<"$sizes"
for n in "${sizes[@]}"; do
    for ((r = 1; r <= rounds; r++)); do
        for api in ${FLEET_BENCH_MODES:-v1alpha2 v1alpha1}; do
            dir="$work/fleet-$n-$api-$r"
            make=()
            [ "$api" = rollout ] && make=(--rollout)
            scripts/fleet.sh "$n" "$dir" "${make[@]}"
            flag=()
            [ "$api" = v1alpha1 ] && flag=(--porch-api v1alpha1)
            run "$n $api first" local --init "$dir" "${flag[@]}"
            run "$n $api no-op" local "$dir" "${flag[@]}"
        done
    done
done

python3 - "$results" <<'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    label, secs, rss, reads, writes, pvs, ok = line.split("\t")
    rows.setdefault(label, []).append((float(secs), int(rss), reads, writes))
print("\nvariants  mode      run     median s  (min-max)        peak MiB  reads/variant  writes/variant  v1alpha2/v1alpha1")
for label, runs in rows.items():
    n, api, kind = label.split()
    secs = [r[0] for r in runs]
    med = statistics.median(secs)
    ratio = ""
    if api == "v1alpha2" and f"{n} v1alpha1 {kind}" in rows:
        ratio = f"{med / statistics.median(r[0] for r in rows[f'{n} v1alpha1 {kind}']):.2f}x"
    if api == "rollout" and f"{n} v1alpha2 {kind}" in rows:
        ratio = f"{med / statistics.median(r[0] for r in rows[f'{n} v1alpha2 {kind}']):.2f}x of v1alpha2"
    print(f"{n:>8}  {api:<8}  {kind:<6}  {med:8.2f}  ({min(secs):.2f}-{max(secs):.2f})"
          f"  {statistics.median(r[1] for r in runs):8}  {runs[0][2]:>13}  {runs[0][3]:>14}  {ratio}")
EOF
